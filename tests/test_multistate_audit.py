"""The audit of a Markov multi-state Cox model by subject (issue 47, item 3), through the
registry and the engine alone (``coxinfluence.families.multistate_targets`` registers
the family; its seam is ``MultiStateAudit``).

Oracles: R's coxph refitted without a subject (``tests/r/multistate_reference.R``), R's
robust variance ``fit$var``, literal deletion (fitting again without the subject's rows in
every transition); the engine's generic checks run in ``tests/test_seam_conformance.py``
(case ``multistate``).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.influence_functions.multistate_audit import MultiStateAudit
from coxinfluence.influence_functions.registry import audit_model

FIXTURES = Path(__file__).parent / "fixtures" / "r_multistate"
COVARIATES = {"mgus2": ["age", "male"], "sim": ["x1", "x2"], "sim_shared": ["x1", "x2"]}
#: coefficients shared across transitions (R: 1:2 + 1:3 ~ x1 / common)
SHARED = {"sim_shared": {"x1": ["1:2", "1:3"]}}


def _read(name, ds):
    return pd.read_csv(FIXTURES / f"{name}_{ds}.csv")


def _fit(d, ds="sim"):
    return ci.fit_multistate(d[COVARIATES[ds]], d["tstart"], d["tstop"], d["state"], d["id"],
                             shared=SHARED.get(ds))


@pytest.mark.parametrize("ds", ["mgus2", "sim", "sim_shared"])
def test_exact_refits_and_robust_covariance_equal_r(ds):
    """The engine's exact refits of a few subjects = R's coxph without them (1e-6); the
    seam's robust covariance ``D'D`` (Reid's changes by subject, every transition) = R's
    ``fit$var``."""
    fit = _fit(_read("data", ds), ds)
    seam = audit_model(fit, None)[0]
    assert isinstance(seam, MultiStateAudit)
    ref = _read("refit", ds)
    labels = ref["id"].unique()
    refits = seam.refit(fit.unit_labels.get_indexer(labels))
    assert (refits.status == "ok").all()
    want = ref["coef"].to_numpy().reshape(len(labels), -1)
    np.testing.assert_allclose(refits.theta, want, rtol=0, atol=1e-6)
    np.testing.assert_allclose(seam.covariance(True), _read("var", ds).to_numpy(),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(seam.covariance(False), _read("naive_var", ds).to_numpy(),
                               rtol=0, atol=1e-10)


@pytest.fixture(scope="module")
def sim():
    d = _read("data", "sim")
    return d, _fit(d)


def test_every_method_by_subject(sim):
    """VIF, Reid, Newton, exact and auto: one row per subject (sorted labels); the
    first-order changes are close to the exact ones, and auto's top 10 by likelihood
    displacement is exact's."""
    d, fit = sim
    exact = ci.influence(fit, method="exact")
    assert list(exact.loo_change.index) == sorted(d["id"].unique())
    assert list(exact.loo_change.columns) == list(fit.columns)
    scale = np.abs(exact.loo_change.to_numpy()).max()
    for method in ("vif", "reid", "newton"):
        approx = ci.influence(fit, method=method).loo_change.to_numpy()
        assert np.abs(approx - exact.loo_change.to_numpy()).max() < 0.25 * scale
    auto = ci.influence(fit, method="auto")
    top = exact.likelihood_displacement.sort_values(ascending=False).index[:10]
    assert set(auto.top(10).index) == set(top)
    assert np.isfinite(auto.loo_change.loc[top].to_numpy()).all()


def test_state_probability_target(sim):
    """``ci.targets.StateProbability``: its value is ``predict_state_probabilities`` (R's
    pstate, tests/test_multistate_r.py); its exact change is literal deletion (the model
    fitted again without the subject, baselines included); the VIF's change (chain rule
    plus the exact data effect) is close to it."""
    d, fit = sim
    new = _read("newdata", "sim")
    target = ci.targets.StateProbability(new, [8, 15], state=["1", "2"])
    assert target.columns(fit)[:2] == ["P(1,8|0)", "P(2,8|0)"]
    full = fit.predict_state_probabilities(new, [8, 15])[["1", "2"]].to_numpy().ravel()
    np.testing.assert_allclose(target.value(fit, fit.coef[None, :])[0], full, atol=1e-14)
    exact = ci.influence(fit, target=target, method="exact").loo_change
    for label in exact.index[[0, 7, 42]]:
        rest = d[d["id"] != label]
        p = _fit(rest).predict_state_probabilities(new, [8, 15])[["1", "2"]]
        np.testing.assert_allclose(exact.loc[label], p.to_numpy().ravel() - full, atol=1e-9)
    vif = ci.influence(fit, target=target, method="vif").loo_change
    assert np.abs(vif - exact).to_numpy().max() < 0.1 * np.abs(exact.to_numpy()).max()
    h = 1e-6
    J = target.jacobian(fit)
    step = fit.coef.copy()
    step[3] += h
    np.testing.assert_allclose(J[:, 3], (target.value(fit, step[None, :])[0] - full) / h,
                               atol=1e-5)


def test_a_deletion_that_leaves_a_transition_without_maximum_is_flagged():
    """One ill subject carries every x2 = 1 of the ill -> dead risk sets: without it x2's
    coefficient of that transition is not identifiable (and 1:2's runs off): the subject
    is flagged undefined, its refit has no number there, no other subject is flagged so."""
    d = _read("data", "sim")
    ill = d.loc[d.duplicated("id"), "id"]
    dead = d[d.duplicated("id") & (d["state"] == 2)].sort_values("tstop")
    label = dead["id"].iloc[len(dead) // 2]
    d.loc[d["id"].isin(ill) & (d["id"] != label), "x2"] = 0.0
    d.loc[d["id"] == label, "x2"] = 1.0
    fit = _fit(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ci.influence(fit, method="auto")
    assert list(res.flags.index[res.flags["undefined"]]) == [label]
    assert np.isnan(res.loo_change.loc[label, "x2_2:3"])


def test_groups_are_refused(sim):
    _, fit = sim
    with pytest.raises(ValueError, match="subjects"):
        ci.influence(fit, groups=np.arange(fit.n), method="vif")

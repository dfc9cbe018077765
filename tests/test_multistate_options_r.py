"""Markov multi-state Cox models with case weights, strata and initial states, against R's
survival (issue 47, item 3).

Golden fixtures of ``tests/r/multistate_options_reference.R``
(``tests/fixtures/r_multistate_options/``): a simulated illness-death set (150 subjects,
delayed entry, integer times so ties; a quarter of those who fell ill enter already ill)
fitted by ``coxph(Surv(tstart, tstop, state) ~ x1 + x2, id = id)`` with

- ``weights = w`` (case weights constant within subject) and ``weights = wr`` (varying
  within subject: R takes them);
- ``+ strata(g)``: every transition's baseline hazard by stratum;
- ``istate = istate``: subjects starting in different states;
- all three at once, also with x1's coefficient shared by 1:2 and 1:3;
- ``istate`` with recovery (ill -> healthy, so every state is entered and none is only
  initial; R orders the transitions by target state, then origin: 3:1, 1:2, 3:2, 1:3);

``survfit(fit, newdata)``'s ``pstate`` (every stratum x patient) and ``p0``, and coxph
refitted without single subjects. R refuses a weight that is not positive
(``refused.csv``); so do we.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.influence_functions.registry import audit_model

FIXTURES = Path(__file__).parent / "fixtures" / "r_multistate_options"
#: per data set, fit_multistate's options as columns of the data
OPTIONS = {"weights": {"weights": "w"}, "weights_rows": {"weights": "wr"},
           "strata": {"strata": "g"}, "istate": {"istate": "istate"},
           "all": {"weights": "w", "strata": "g", "istate": "istate"},
           "all_shared": {"weights": "w", "strata": "g", "istate": "istate"},
           "recovery": {"istate": "istate"}}
SETS = list(OPTIONS)
#: coefficients shared across transitions (R: 1:2 + 1:3 ~ x1 / common)
SHARED = {"all_shared": {"x1": ["1:2", "1:3"]}}
#: R's factor of the states (its first level censoring)
LEVELS = {"recovery": ["censor", "ill", "dead", "healthy"]}


def _read(name, ds):
    return pd.read_csv(FIXTURES / f"{name}_{ds}.csv", keep_default_na=False)


def _fit(ds, d=None):
    d = _read("data", ds) if d is None else d
    state = pd.Categorical.from_codes(d["state"], LEVELS.get(ds, ["censor", "ill", "dead"]))
    options = {k: d[col] for k, col in OPTIONS[ds].items()}
    return ci.fit_multistate(d[["x1", "x2"]], d["tstart"], d["tstop"], state, d["id"],
                             shared=SHARED.get(ds), **options)


@pytest.fixture(scope="module", params=SETS)
def case(request):
    return request.param, _fit(request.param)


def test_coefficients_and_standard_errors(case):
    """Coefficients, R's default (robust) and naive SEs and covariances, loglik, states."""
    ds, fit = case
    ref = _read("coef", ds)
    assert fit.states == list(_read("states", ds)["name"])
    assert list(fit.params.index) == list(ref["name"])
    np.testing.assert_allclose(fit.coef, ref["coef"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.se, ref["se"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.naive_se, ref["naive_se"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.cov_params().to_numpy(), _read("var", ds).to_numpy(),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(fit.cov_params(robust=False).to_numpy(),
                               _read("naive_var", ds).to_numpy(), rtol=0, atol=1e-10)
    assert fit.loglik == pytest.approx(_read("loglik", ds)["loglik"].iloc[1], abs=1e-8)


def test_state_probabilities_and_p0(case):
    """``predict_state_probabilities`` = R's ``survfit(fit, newdata)$pstate`` for every
    stratum and patient; ``initial_distribution`` = survfit's ``p0`` (weighted share of
    the states at the stratum's first transition time)."""
    ds, fit = case
    ref = _read("pstate", ds)
    new = _read("newdata", ds)
    p0 = _read("p0", ds).pivot(index="stratum", columns="state", values="p0")[fit.states]
    labels = [""] if fit.strata_labels is None else list(fit.strata_labels)
    np.testing.assert_allclose(fit.initial_distribution()[0], p0.loc[labels].to_numpy(),
                               rtol=0, atol=1e-12)
    times = np.sort(ref["time"].unique())
    for stratum, rows in ref.groupby("stratum"):
        p = fit.predict_state_probabilities(new, times,
                                            strata=None if stratum == "" else stratum)
        want = rows.pivot_table(index=["patient", "time"], columns="state",
                                values="p")[fit.states]
        np.testing.assert_allclose(p.to_numpy(), want.to_numpy(), rtol=0, atol=1e-8)


def test_refits_equal_r(case):
    """Fitting again without a subject = R's coxph without it (1e-8); the audit's exact
    refits (``ci.influence(fit, method="exact")``, by subject) = R's (1e-6); the seam's
    robust covariance ``D'D`` = R's ``fit$var``."""
    ds, fit = case
    data, ref = _read("data", ds), _read("refit", ds)
    labels = ref["id"].unique()
    want = ref["coef"].to_numpy().reshape(len(labels), -1)
    for label, row in zip(labels, want):
        np.testing.assert_allclose(_fit(ds, data[data["id"] != label]).coef, row,
                                   rtol=0, atol=1e-8)
    seam = audit_model(fit, None)[0]
    refits = seam.refit(fit.unit_labels.get_indexer(labels))
    assert (refits.status == "ok").all()
    np.testing.assert_allclose(refits.theta, want, rtol=0, atol=1e-6)
    np.testing.assert_allclose(seam.covariance(True), _read("var", ds).to_numpy(),
                               rtol=0, atol=1e-10)


@pytest.fixture(scope="module")
def everything():
    """Weights, strata and initial states at once, audited by subject."""
    return _read("data", "all"), _fit("all")


def test_the_audit_by_subject(everything):
    """``ci.influence(fit, method="exact")`` by subject = R's coxph without the subject
    (1e-6); the first-order changes (VIF, Reid, one-step Newton) track the exact ones,
    and ``auto``'s top 10 by likelihood displacement is exact's."""
    _, fit = everything
    exact = ci.influence(fit, method="exact")
    assert list(exact.loo_change.index) == list(fit.unit_labels)
    ref = _read("refit", "all")
    labels = ref["id"].unique()
    want = ref["coef"].to_numpy().reshape(len(labels), -1)
    np.testing.assert_allclose(exact.loo_change.loc[labels].to_numpy() + fit.coef, want,
                               rtol=0, atol=1e-6)
    truth = exact.loo_change.to_numpy()
    scale = np.abs(truth).max()
    for method, bound in (("vif", 0.2), ("reid", 0.3), ("newton", 0.05)):
        approx = ci.influence(fit, method=method).loo_change.to_numpy()
        assert np.abs(approx - truth).max() < bound * scale, method
        assert min(np.corrcoef(approx[:, j], truth[:, j])[0, 1]
                   for j in range(truth.shape[1])) > 0.95, method
    auto = ci.influence(fit, method="auto")
    top = exact.likelihood_displacement.sort_values(ascending=False).index[:10]
    assert set(auto.top(10).index) == set(top)


def test_state_probability_target(everything):
    """``ci.targets.StateProbability`` with strata (read from ``X_new``'s stratum column)
    and initial states: its value is R's pstate of the patient's stratum; its exact change
    is literal deletion (the model fitted again without the subject: coefficients,
    baselines and ``p0``), also for a subject entering ill (it moves ``p0``); the VIF's
    change is close to it."""
    d, fit = everything
    new = _read("newdata", "all").assign(g=["b", "a"])
    target = ci.targets.StateProbability(new, [8, 15], state=["ill", "dead"])
    full = np.concatenate([fit.predict_state_probabilities(new.iloc[[k]], [8, 15])
                           [["ill", "dead"]].to_numpy().ravel() for k in range(2)])
    np.testing.assert_allclose(target.value(fit, fit.coef[None, :])[0], full, atol=1e-14)
    ref = _read("pstate", "all")
    want = [ref[(ref["stratum"] == g) & (ref["patient"] == k) & (ref["time"] == t)
                & (ref["state"] == s)]["p"].item()
            for k, g in enumerate(["b", "a"]) for t in (8, 15) for s in ("ill", "dead")]
    np.testing.assert_allclose(full, want, rtol=0, atol=1e-8)
    exact = ci.influence(fit, target=target, method="exact").loo_change
    t0 = d[d["state"] > 0].groupby("g")["tstop"].min()                # p0's time
    at_t0 = (d["tstart"] < d["g"].map(t0)) & (d["tstop"] >= d["g"].map(t0))
    prevalent = d.loc[(d["istate"] == "ill") & ~d["id"].duplicated(keep=False) & at_t0, "id"]
    for label in [exact.index[0], exact.index[7], prevalent.iloc[0]]:
        rest = _fit("all", d[d["id"] != label])
        p = np.concatenate([rest.predict_state_probabilities(new.iloc[[k]], [8, 15])
                            [["ill", "dead"]].to_numpy().ravel() for k in range(2)])
        np.testing.assert_allclose(exact.loc[label], p - full, atol=1e-9)
    moved = _fit("all", d[d["id"] != prevalent.iloc[0]]).initial_distribution()
    assert np.abs(moved - fit.initial_distribution()).max() > 1e-3
    vif = ci.influence(fit, target=target, method="vif").loo_change
    assert np.abs(vif - exact).to_numpy().max() < 0.1 * np.abs(exact.to_numpy()).max()


def test_what_r_refuses_is_refused():
    """A weight that is not positive (R: "Invalid weights, must be >0"); and what has no
    single R reading: istate beside initial_state, a later row's istate that is not the
    state the previous row entered; a stratified fit's new patients without strata."""
    refused = pd.read_csv(FIXTURES / "refused.csv")
    assert set(refused["message"]) == {"Invalid weights, must be >0"}
    d = _read("data", "weights")
    for bad in (0.0, -1.0, np.nan):
        w = d["w"].copy()
        w.iloc[0] = bad
        with pytest.raises(ci.InputError, match="must be >0"):
            ci.fit_multistate(d[["x1", "x2"]], d["tstart"], d["tstop"], d["state"],
                              d["id"], weights=w)
    with pytest.raises(ci.InputError, match="not both"):
        ci.fit_multistate(d[["x1", "x2"]], d["tstart"], d["tstop"], d["state"], d["id"],
                          istate=d["istate"], initial_state="healthy")
    teleport = d["istate"].copy()
    teleport[d["id"].duplicated().to_numpy()] = "healthy"
    with pytest.raises(ci.InputError, match="previous row entered"):
        ci.fit_multistate(d[["x1", "x2"]], d["tstart"], d["tstop"], d["state"], d["id"],
                          istate=teleport)
    fit = _fit("strata")
    with pytest.raises(ci.InputError, match="stratified"):
        fit.predict_state_probabilities(_read("newdata", "strata"), [8])
    with pytest.raises(ci.InputError, match="unknown strata"):
        fit.predict_state_probabilities(_read("newdata", "strata"), [8], strata="c")


def test_weights_of_two_are_duplicated_subjects():
    """Integer case weights = the subjects entered that many times (new ids), with
    Breslow's ties (Efron's correction counts tied events: a weight of 2 is not two tied
    events): the fit and the state probabilities (the baselines and ``p0`` weighted)."""
    d = _read("data", "istate")
    subjects = d["id"].unique()
    w = d["id"].map(dict(zip(subjects, np.where(np.arange(subjects.size) % 3 == 0, 2.0,
                                                1.0))))
    twice = d[w.to_numpy() == 2.0].assign(id=lambda f: f["id"] + 10 ** 6)
    dup = pd.concat([d, twice], ignore_index=True)

    def fit(frame, weights=None):
        state = pd.Categorical.from_codes(frame["state"], ["censor", "ill", "dead"])
        return ci.fit_multistate(frame[["x1", "x2"]], frame["tstart"], frame["tstop"],
                                 state, frame["id"], weights=weights,
                                 istate=frame["istate"], ties="breslow")

    a, b = fit(d, w), fit(dup)
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.initial_distribution(), b.initial_distribution(),
                               atol=1e-14)
    new = _read("newdata", "istate")
    np.testing.assert_allclose(a.predict_state_probabilities(new, [5, 20]).to_numpy(),
                               b.predict_state_probabilities(new, [5, 20]).to_numpy(),
                               rtol=0, atol=1e-10)

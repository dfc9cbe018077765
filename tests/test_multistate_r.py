"""Markov multi-state Cox models against R's survival (issue 47, item 3).

Golden fixtures of ``tests/r/multistate_reference.R`` (``tests/fixtures/r_multistate/``):
``coxph(Surv(tstart, tstop, state) ~ ..., id = id)`` and ``summary(survfit(fit, newdata),
times)$pstate`` on survival's ``mgus2`` in multi-state form (monthly times: ties; the
pcm -> death rows enter late) and a simulated illness-death set (delayed entry into the
first state, integer times; also with x1's coefficient shared by 1:2 and 1:3), and
coxph refitted without single subjects.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

FIXTURES = Path(__file__).parent / "fixtures" / "r_multistate"
COVARIATES = {"mgus2": ["age", "male"], "sim": ["x1", "x2"], "sim_shared": ["x1", "x2"]}
#: coefficients shared across transitions (R: 1:2 + 1:3 ~ x1 / common)
SHARED = {"sim_shared": {"x1": ["1:2", "1:3"]}}


def _read(name, ds):
    return pd.read_csv(FIXTURES / f"{name}_{ds}.csv")


def _fit(ds, frame=None):
    d = _read("data", ds) if frame is None else frame
    return ci.fit_multistate(d[COVARIATES[ds]], d["tstart"], d["tstop"], d["state"], d["id"],
                             shared=SHARED.get(ds))


@pytest.fixture(scope="module", params=["mgus2", "sim", "sim_shared"])
def case(request):
    return request.param, _fit(request.param)


def test_coefficients_and_standard_errors(case):
    """Coefficients (R's names), R's default SEs (robust: fit$var), naive SEs, both
    covariance matrices and the log partial likelihood."""
    ds, fit = case
    ref = _read("coef", ds)
    assert list(fit.params.index) == list(ref["name"])
    np.testing.assert_allclose(fit.coef, ref["coef"], rtol=0, atol=1e-8)
    assert fit.robust_default
    np.testing.assert_allclose(fit.se, ref["se"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.summary()["robust se"], ref["se"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.naive_se, ref["naive_se"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.cov_params().to_numpy(), _read("var", ds).to_numpy(),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(fit.cov_params(robust=False).to_numpy(),
                               _read("naive_var", ds).to_numpy(), rtol=0, atol=1e-10)
    assert fit.loglik == pytest.approx(_read("loglik", ds)["loglik"].iloc[1], abs=1e-8)
    assert fit.nobs == len(_read("data", ds))
    lims = fit.conf_int()
    np.testing.assert_allclose(lims["upper"] - fit.params, 1.959963984540054 * ref["se"].values,
                               atol=1e-8)


def test_state_probabilities(case):
    """``predict_state_probabilities`` = R's ``summary(survfit(fit, newdata), times)$pstate``
    (Aalen-Johansen with matrix exponentials; R's Efron-type hazard)."""
    ds, fit = case
    ref = _read("pstate", ds)
    names = ["(s0)"] + list(_read("states", ds)["name"])
    times = np.sort(ref["time"].unique())
    p = fit.predict_state_probabilities(_read("newdata", ds), times)
    want = ref.pivot_table(index=["patient", "time"], columns="state", values="p")[names]
    np.testing.assert_allclose(p.to_numpy(), want.to_numpy(), rtol=0, atol=1e-8)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)


def test_refits_without_a_subject_equal_r(case):
    """Deleting a subject's rows from every transition and fitting again = R's coxph on the
    data without the subject (the audit's exact refits are checked against these too)."""
    ds, _ = case
    data = _read("data", ds)
    ref = _read("refit", ds)
    for label, rows in ref.groupby("id"):
        fit = _fit(ds, data[data["id"] != label])
        np.testing.assert_allclose(fit.coef, rows["coef"], rtol=0, atol=1e-8)

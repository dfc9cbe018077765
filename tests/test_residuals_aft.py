"""AFT residuals against R's residuals.survreg (golden fixtures of
tests/r/residuals_aft_reference.R and a live run), lifelines AFT fitters in; interval rows'
scale derivatives against central differences of scipy's densities (R 3.5.3 has their
sign wrong, tests/test_aft.py)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from r_residuals import (
    AFT_KINDS,
    as_list,
    check_aft_residuals,
    close,
    fit_aft_case,
    load_aft_cases,
    matrix,
    run_r,
)

import coxinfluence as ci

CASES, DATA, REFS = load_aft_cases()
BY_NAME = {cs["case"]: cs for cs in CASES}
R_NAMES = ["(Intercept)", "age", "sex", "ph.ecog", "Log(scale)"]


@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_kind_equals_r(name):
    cs = BY_NAME[name]
    fit = fit_aft_case(cs, DATA)
    close(fit.coef, REFS[name]["coef"], 1e-9, atol_scale=0)
    check_aft_residuals(fit, REFS[name], cs, DATA)


def test_fixtures_cover_every_kind_of_row_and_the_distributions():
    kinds = np.asarray(REFS["interval_weibull"]["kind"])
    assert all((kinds == k).sum() >= 10 for k in range(4))
    assert {cs["dist"] for cs in CASES} == {"weibull", "exponential", "lognormal",
                                            "loglogistic"}


def _row_loglik(dist, kind, y, y2, eta, s):
    """One row's log-likelihood g(eta, s) with scipy's distributions (R's g: the log
    density of log T for exact rows, without the Jacobian)."""
    from scipy import stats
    W = {"weibull": stats.gumbel_l, "lognormal": stats.norm,
         "loglogistic": stats.logistic}[dist]
    sig = np.exp(s)
    z = (y - eta) / sig
    if kind == 1:
        return W.logpdf(z) - s
    if kind == 0:
        return W.logsf(z)
    if kind == 2:
        return W.logcdf(z)
    return np.log(W.sf(z) - W.sf((y2 - eta) / sig))


@pytest.mark.parametrize("name", ["interval_weibull", "interval_lognormal",
                                  "interval_loglogistic"])
def test_interval_rows_by_central_differences(name):
    """dfbeta and the local influences of interval rows from numerical derivatives of
    each row's log-likelihood in (eta, log sigma)."""
    cs = BY_NAME[name]
    fit = fit_aft_case(cs, DATA)
    data = fit.data
    eta = data.X @ fit.coef[:data.p]
    s = fit.coef[-1]
    V = fit.var
    h = 1e-4
    rows = np.flatnonzero(data.kind == 3)[:12]
    ours = {k: ci.residuals(fit, kind=k).to_numpy()[rows] for k in
            ("dfbeta", "ldcase", "ldresp", "ldshape")}
    for j, i in enumerate(rows):
        def g(e, ls, i=i):
            return _row_loglik(cs["dist"], 3, data.y[i], data.y2[i], e, ls)
        e0 = eta[i]
        ge = (g(e0 + h, s) - g(e0 - h, s)) / (2 * h)
        gs = (g(e0, s + h) - g(e0, s - h)) / (2 * h)
        gee = (g(e0 + h, s) - 2 * g(e0, s) + g(e0 - h, s)) / h ** 2
        gss = (g(e0, s + h) - 2 * g(e0, s) + g(e0, s - h)) / h ** 2
        ges = (g(e0 + h, s + h) - g(e0 + h, s - h) - g(e0 - h, s + h)
               + g(e0 - h, s - h)) / (4 * h * h)
        x = data.X[i]
        score = np.r_[ge * x, gs]
        np.testing.assert_allclose(ours["dfbeta"][j], score @ V, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(ours["ldcase"][j], score @ V @ score, rtol=1e-6)
        resp = np.exp(s) * np.r_[gee * x, ges]
        np.testing.assert_allclose(ours["ldresp"][j], resp @ V @ resp, rtol=1e-5)
        shape = np.r_[ges * x, gss]
        np.testing.assert_allclose(ours["ldshape"][j], shape @ V @ shape, rtol=1e-5)


def test_lifelines_aft_fitters_give_r_numbers():
    from lifelines import WeibullAFTFitter
    d = DATA["lung"]
    df = d[["age", "sex", "ph.ecog", "time", "status"]]
    aft = WeibullAFTFitter().fit(df, "time", "status")
    ref = REFS["lung_weibull"]
    for kind in AFT_KINDS:
        out = ci.residuals(aft, df, kind=kind)
        R = matrix(ref["residuals"][kind])
        ours = out[R_NAMES].to_numpy() if R.shape[1] > 1 else out.to_numpy()[:, None]
        close(ours, R, 1e-7)


def test_kinds_of_other_models_are_refused_naming_the_model():
    fit = fit_aft_case(BY_NAME["lung_weibull"], DATA)
    with pytest.raises(ci.InputError, match="not defined for AFT models; it is a residual "
                                            "of Cox models"):
        ci.residuals(fit, kind="scaledsch")
    with pytest.raises(ci.InputError, match="'response', 'deviance', 'working'"):
        ci.residuals(fit, kind="martingale")
    # a kind no family registers ("pearson" is the test-only logistic family's, once
    # tests/seam_example_family.py has registered it)
    with pytest.raises(ci.InputError, match="unknown residual kind 'no_such_kind'"):
        ci.residuals(fit, kind="no_such_kind")


def test_response_and_deviance_are_refused_with_delayed_entry():
    d = DATA["lung"]
    entry = np.where(np.arange(len(d)) % 4 == 0, d["time"] * 0.3, 0.0)
    fit = ci.fit_aft(d[as_list(BY_NAME["lung_weibull"]["covariates"])], d["time"],
                     d["status"], entry=entry)
    with pytest.raises(ci.InputError, match="delayed entry"):
        ci.residuals(fit, kind="deviance")
    assert np.isfinite(ci.residuals(fit, kind="ldcase")).all()


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_live_against_r(tmp_path):
    run_r(tmp_path, seed=5, script="residuals_aft_reference.R")
    cases, data, refs = load_aft_cases(tmp_path)
    for cs in cases:
        check_aft_residuals(fit_aft_case(cs, data), refs[cs["case"]], cs, data)

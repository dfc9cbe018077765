"""ci.ph_test against R's cox.zph (survival 3.x score test): golden fixtures of
tests/r/residuals_reference.R and a live run; lifelines and statsmodels fits in."""
from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from r_residuals import as_list, check_ph_test, close, fit_case, load_cases, matrix, run_r

import coxinfluence as ci
from coxinfluence.diagnostics.zph import km_transform, natural_spline_basis

CASES, DATA, REFS = load_cases()
BY_NAME = {cs["case"]: cs for cs in CASES}


@pytest.mark.parametrize("name", list(BY_NAME))
def test_table_and_scaled_residuals_equal_r(name):
    cs = BY_NAME[name]
    check_ph_test(fit_case(cs, DATA), REFS[name], cs)


def test_a_function_transform_equals_the_named_one():
    fit = fit_case(BY_NAME["veteran_strata_efron"], DATA)
    z = REFS["veteran_strata_efron"]["zph"]
    close(ci.ph_test(fit, transform=np.log).table.to_numpy(), matrix(z["log"]["table_cols"]),
          atol_scale=0)
    close(ci.ph_test(fit, transform=lambda t: t).table.to_numpy(),
          matrix(z["identity"]["table_cols"]), atol_scale=0)
    assert ci.ph_test(fit, transform=np.log).transform == "log"


def test_km_transform_is_one_minus_the_km_just_before_t():
    time = np.array([1.0, 2, 2, 3, 4, 5])
    event = np.array([1, 1, 0, 1, 0, 1])
    # KM: S(1) = 5/6, S(2) = 5/6 * 4/5 = 2/3, S(3) = 2/3 * 2/3 = 4/9, S(5) = 0
    expect = 1 - np.array([1, 5 / 6, 5 / 6, 2 / 3, 4 / 9, 4 / 9])
    np.testing.assert_allclose(km_transform(time, event), expect, rtol=1e-15)
    # delayed entry: the row entering at 2.5 is not at risk at 1 or 2
    start = np.array([0, 0, 0, 0, 2.5, 0])
    expect = 1 - np.array([1, 4 / 5, 4 / 5, 4 / 5 * 3 / 4, 4 / 5 * 3 / 4 * 2 / 3,
                           4 / 5 * 3 / 4 * 2 / 3])
    np.testing.assert_allclose(km_transform(time, event, start), expect, rtol=1e-15)


def test_lifelines_and_statsmodels_fits_give_r_numbers():
    from lifelines import CoxPHFitter
    d = DATA["lung"]
    cs = BY_NAME["lung_efron"]
    df = d[as_list(cs["covariates"]) + ["time", "status"]]
    cph = CoxPHFitter().fit(df, "time", "status")
    z = REFS["lung_efron"]["zph"]
    for tr in ("km", "rank", "identity", "log"):
        close(ci.ph_test(cph, df, transform=tr).table.to_numpy(), matrix(z[tr]["table_cols"]),
              1e-7, atol_scale=0)
    sm = pytest.importorskip("statsmodels.api")
    res = sm.PHReg(d["time"], d[as_list(cs["covariates"])], status=d["status"],
                   ties="breslow").fit()
    z = REFS["lung_breslow"]["zph"]
    close(ci.ph_test(res, transform="rank").table.to_numpy(), matrix(z["rank"]["table_cols"]),
          1e-7, atol_scale=0)


def test_plot_draws_residuals_smooth_and_band():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fit = fit_case(BY_NAME["lung_efron"], DATA)
    test = ci.ph_test(fit)
    ax = test.plot("ph.ecog")
    assert len(ax.lines) == 4                    # points, smooth, two band lines
    points = ax.lines[0].get_xydata()
    np.testing.assert_array_equal(points[:, 0], test.x)
    np.testing.assert_array_equal(points[:, 1], test.y["ph.ecog"].to_numpy())
    plt.close("all")
    with pytest.raises(ci.InputError, match="no term"):
        test.plot("nope")


def test_the_smooths_basis_spans_natural_cubic_splines():
    """R's ns(x, df = 4, intercept = TRUE): natural cubic splines with knots at the range
    and the 1/3, 2/3 quantiles. Every natural cubic spline through those knots (scipy's,
    an independent construction) lies in the basis' span, and the basis has full rank."""
    from scipy.interpolate import CubicSpline
    x = np.linspace(0, 3, 50) ** 1.5
    B = natural_spline_basis(x, 4)
    assert np.linalg.matrix_rank(B) == 4
    knots = np.quantile(x, [0, 1 / 3, 2 / 3, 1])
    for values in ([1.0, -2.0, 0.5, 3.0], [0.0, 1.0, 0.0, 0.0]):
        target = CubicSpline(knots, values, bc_type="natural")(x)
        coef, *_ = np.linalg.lstsq(B, target, rcond=None)
        np.testing.assert_allclose(B @ coef, target, atol=1e-10)


# ------------------------------------------------------------------ bad input

def test_unknown_transform_is_refused():
    fit = fit_case(BY_NAME["lung_efron"], DATA)
    with pytest.raises(ci.InputError, match="'km', 'rank', 'identity', 'log'"):
        ci.ph_test(fit, transform="sqrt")


def test_terms_must_name_every_covariate_once():
    fit = fit_case(BY_NAME["lung_efron"], DATA)
    with pytest.raises(ci.InputError, match="missing"):
        ci.ph_test(fit, terms={"a": ["age"]})
    with pytest.raises(ci.InputError, match="lacks"):
        ci.ph_test(fit, terms={"a": ["age", "sex", "ph.ecog", "wt.loss", "zzz"]})


def test_an_aft_model_is_refused():
    d = DATA["lung"]
    fit = ci.fit_aft(d[["age", "sex"]], d["time"], d["status"])
    with pytest.raises(TypeError, match="Cox models"):
        ci.ph_test(fit)


def test_no_events_left_after_stratification_is_refused():
    """Every event is alone in its stratum's risk set (the stratum's other row leaves
    before it): the partial likelihood is flat, the score test has no data. fit_cox warns
    (no maximum); lifelines' ridge fits it (coef 0): both are refused with the reason."""
    from lifelines import CoxPHFitter
    rng = np.random.default_rng(0)
    n = 40
    df = pd.DataFrame({"x": rng.normal(size=n), "s": np.repeat(np.arange(n // 2), 2),
                       "t": np.tile([1.0, 2.0], n // 2), "e": np.tile([0.0, 1.0], n // 2)})
    with pytest.warns(ci.ConvergenceWarning):
        fit = ci.fit_cox(df[["x"]], df["t"], df["e"], strata=df["s"])
    with pytest.raises(ci.InputError, match="no events are left to test after stratification"):
        ci.ph_test(fit)
    cph = CoxPHFitter(penalizer=0.1).fit(df, "t", "e", strata=["s"])
    with pytest.raises(ci.InputError, match="risk set holds no other row of its stratum"):
        ci.ph_test(cph, df)


# ------------------------------------------------------------------ live R

@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_live_against_r(tmp_path):
    run_r(tmp_path, seed=11)
    cases, data, refs = load_cases(tmp_path)
    for cs in cases:
        check_ph_test(fit_case(cs, data), refs[cs["case"]], cs)

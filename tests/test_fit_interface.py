"""One interface for every fit (issue 35, items 1 and 5): ``CoxFit``, ``AFTFit`` and
``FineGrayFit`` share ``params``, ``se``, ``cov_params``, ``conf_int``, ``summary`` with
confidence limits, ``loglik``, ``nobs``, ``n_units``, ``n_events``, ``aic``,
``_repr_html_`` and ``influence`` (:mod:`coxinfluence.models.base`); ``entry=`` means
delayed entry in every fitter.

The oracle is R: golden fixtures from ``tests/r/fit_interface_reference.R``
(``tests/fixtures/fit_interface``; R 4.2.2, survival 3.5.3, cmprsk 2.2-11) on R's ``lung``
(with case weights, strata, clusters and a delayed entry) and ``mgus2`` (progression and
death as competing risks): ``confint(coxph)``, ``confint(survreg)`` (levels 0.95 and 0.9;
R uses ``qnorm(1 - alpha/2) * se``), ``AIC(coxph)``, ``AIC(survreg)``,
``summary(coxph)$conf.int`` (exp(coef) ``lower .95``, ``upper .95``) and
``summary(crr)$conf.int`` (``2.5%``, ``97.5%`` with crr's sandwich), the log-likelihoods
and the numbers of events. Measured agreement: 3e-13 relative or better (both sides
converged to rounding level; crr polished by Newton steps, as in
``tests/r/fine_gray_reference.R``); the live test reruns the script on a fresh seed.

R's ``coxph`` makes the variance robust by default when case weights are not integers
(one unit per row), and so does ``ci.fit_cox`` (``tests/test_r_defaults.py``); the
fixtures ask for ``robust = FALSE``, our ``cov_params(robust=False)``, and, in one case,
for the sandwich, our ``cov_params(robust=True)``.
"""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

HERE = Path(__file__).parent
SCRIPT = HERE / "r" / "fit_interface_reference.R"
GOLDEN = HERE / "fixtures" / "fit_interface"
RTOL = 1e-10        # measured: 3e-13 or better (every fit converged to its rounding level)


# ------------------------------------------------------------------ the R fixtures

def load(folder):
    folder = Path(folder)
    cases = pd.read_csv(folder / "cases.csv", keep_default_na=False).set_index("case")
    ref = pd.read_csv(folder / "reference.csv", keep_default_na=False)
    data = {name: pd.read_csv(folder / f"data_{name}.csv") for name in ("lung", "mgus2")}
    return cases, ref, data


def truthy(value):
    return value in (True, "TRUE", "True")


def fit_case(row, data):
    """Our fit of a case, and the ``robust``/``groups`` arguments that match R's vcov."""
    covs = row["covariates"].split("+")
    if row["model"] == "crr":
        d = data["mgus2"]
        return ci.fit_fine_gray(d[covs], d["etime"], d["event"], 1), {}
    d = data["lung"]
    weights = d["w"] if truthy(row["weights"]) else None
    strata = d[[row["strata"]]] if row["strata"] else None
    # R's vcov: the sandwich per cluster, or per row (coxph with robust = TRUE); else the
    # model-based one R was asked for (robust = FALSE)
    robust = ({"robust": True, "groups": d[row["cluster"]] if row["cluster"] else None}
              if truthy(row["robust"]) else {"robust": False})
    if row["model"] == "cox":
        entry = d["entry"] if truthy(row["entry"]) else None
        fit = ci.fit_cox(d[covs], d["time"], d["status"], entry=entry, weights=weights,
                         strata=strata, ties=row["ties"])
    else:
        fit = ci.fit_aft(d[covs], d["time"], d["status"], row["dist"], weights=weights,
                         strata=strata)
    return fit, robust


def r_values(ref, case, quantity):
    sub = ref[(ref["case"] == case) & (ref["quantity"] == quantity)]
    return pd.Series(sub["value"].to_numpy(dtype=float), index=sub["name"].to_list())


def rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def check_case(case, cases, ref, data):
    """Every number R gives for ``case`` against ours; the worst relative error."""
    row = cases.loc[case]
    fit, robust = fit_case(row, data)
    worst = 0.0

    def agree(ours, theirs, what):
        nonlocal worst
        err = rel(ours, theirs)
        worst = max(worst, err)
        assert err < RTOL, f"{case}: {what} differs from R by {err:.3g} (relative)"

    coef = r_values(ref, case, "coef")
    assert list(fit.params.index) == list(coef.index)
    agree(fit.params, coef, "coef")
    # se: R's vcov (robust with a cluster; crr's sandwich)
    V = fit.cov_params(**robust)
    agree(np.sqrt(np.diag(V)), r_values(ref, case, "se"), "se")
    table = fit.summary(**robust)
    se_col = ("robust se" if robust.get("robust") else
              "Std. Error" if row["model"] == "aft" else "se(coef)")
    agree(table[se_col], r_values(ref, case, "se"), "summary se")
    # confint (R's: the coefficients; survreg's without Log(scale))
    for suffix, alpha, level in (("", 0.05, "95%"), ("90", 0.10, "90%")):
        lower = r_values(ref, case, "lower" + suffix)
        upper = r_values(ref, case, "upper" + suffix)
        ci_ = fit.conf_int(alpha=alpha, **robust)
        assert list(ci_.columns) == ["lower", "upper"]
        agree(ci_.loc[lower.index, "lower"], lower, f"conf_int lower {level}")
        agree(ci_.loc[upper.index, "upper"], upper, f"conf_int upper {level}")
        tab = fit.summary(alpha=alpha, **robust)
        agree(tab.loc[lower.index, f"lower {level}"], lower, f"summary lower {level}")
        agree(tab.loc[upper.index, f"upper {level}"], upper, f"summary upper {level}")
    # exp(coef)'s limits: summary.coxph's lower .95 / upper .95, summary.crr's 2.5% / 97.5%
    if row["model"] in ("cox", "crr"):
        agree(table["exp(coef) lower 95%"], r_values(ref, case, "exp_lower"), "exp lower")
        agree(table["exp(coef) upper 95%"], r_values(ref, case, "exp_upper"), "exp upper")
        agree(np.exp(fit.conf_int(**robust)["lower"]), r_values(ref, case, "exp_lower"),
              "exp(conf_int) lower")
        agree(1 / table["exp(coef)"], r_values(ref, case, "exp_minus"), "exp(-coef)")
    else:
        agree(table.loc[lower.index, "exp(Value) lower 95%"],
              np.exp(r_values(ref, case, "lower")), "exp(Value) lower")
    agree(fit.loglik, r_values(ref, case, "loglik").iloc[0], "loglik")
    if row["model"] == "crr":
        assert not hasattr(fit, "aic")
    else:
        agree(fit.aic, r_values(ref, case, "aic").iloc[0], "AIC")
    assert fit.n_events == int(r_values(ref, case, "nevent").iloc[0])
    assert fit.nobs == int(r_values(ref, case, "n").iloc[0])
    return worst


CASES, REF, DATA = load(GOLDEN)


@pytest.mark.parametrize("case", list(CASES.index))
def test_against_r(case):
    check_case(case, CASES, REF, DATA)


def test_the_fixtures_cover_every_family_and_option():
    assert set(CASES["model"]) == {"cox", "aft", "crr"}
    assert CASES["cluster"].ne("").sum() == 2 and CASES["strata"].ne("").sum() == 2
    assert CASES["entry"].map(truthy).any() and (DATA["lung"]["entry"] > 0).sum() > 30


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: live comparison with R skipped "
                           "(install r-base-core r-cran-survival r-cran-cmprsk)")
def test_live_against_r(tmp_path):
    subprocess.run([shutil.which("Rscript"), str(SCRIPT), str(tmp_path), "11"], check=True,
                   capture_output=True, text=True, timeout=600)
    cases, ref, data = load(tmp_path)
    worst = max(check_case(case, cases, ref, data) for case in cases.index)
    assert worst < RTOL


# ------------------------------------------------------------ the interface itself

@pytest.fixture(scope="module")
def fits():
    d, m = DATA["lung"], DATA["mgus2"]
    covs = ["age", "sex", "ph.ecog"]
    return {"cox": ci.fit_cox(d[covs], d["time"], d["status"]),
            "aft": ci.fit_aft(d[covs], d["time"], d["status"], "weibull"),
            "fine_gray": ci.fit_fine_gray(m[["age", "male", "hgb"]], m["etime"],
                                          m["event"], 1)}


@pytest.mark.parametrize("kind", ["cox", "aft", "fine_gray"])
def test_cov_params_is_var_and_robust_covariance(fits, kind):
    fit = fits[kind]
    groups = DATA["mgus2"]["age"] // 10 if kind == "fine_gray" else DATA["lung"]["inst"]
    V = fit.cov_params()
    assert list(V.index) == list(V.columns) == list(fit.columns)
    np.testing.assert_array_equal(V.to_numpy(), fit.var)
    np.testing.assert_array_equal(fit.cov_params(robust=True, groups=groups).to_numpy(),
                                  fit.robust_covariance(groups))
    np.testing.assert_allclose(np.sqrt(np.diag(V)), fit.se, rtol=1e-14)
    assert isinstance(fit.params, pd.Series) and list(fit.params.index) == list(fit.columns)
    np.testing.assert_array_equal(fit.params.to_numpy(), fit.coef)


def test_fine_gray_variance_is_crrs_sandwich_whatever_robust(fits):
    """crr's var is the sandwich: robust=False and robust=True (one subject per cluster)
    both give it; the naive I^{-1} stays ``naive_var``."""
    fit = fits["fine_gray"]
    np.testing.assert_array_equal(fit.cov_params(robust=True).to_numpy(), fit.var)
    assert not np.allclose(fit.naive_var, fit.var, rtol=1e-3)
    table = fit.summary(robust=True)
    np.testing.assert_array_equal(table["robust se"], fit.summary()["se(coef)"])


def test_fine_gray_clustered_sandwich_sums_the_influence_per_cluster(fits):
    """robust_covariance(groups) = sum_g D_g D_g', D_g the sum over the cluster's subjects
    of crr's influence (Reid's IF / n: minus ci.influence(method="reid")'s change)."""
    fit = fits["fine_gray"]
    groups = (DATA["mgus2"]["age"] // 10).to_numpy()
    change = ci.influence(fit, method="reid").loo_change.to_numpy()
    D = pd.DataFrame(change).groupby(groups).sum().to_numpy()
    np.testing.assert_allclose(fit.robust_covariance(groups), D.T @ D, rtol=1e-10)
    np.testing.assert_allclose(change.T @ change, fit.var, rtol=1e-10)


@pytest.mark.parametrize("kind", ["cox", "aft", "fine_gray"])
def test_counts(fits, kind):
    fit = fits[kind]
    d = DATA["mgus2"] if kind == "fine_gray" else DATA["lung"]
    assert fit.nobs == fit.n_units == len(d)
    events = (d["event"] == 1).sum() if kind == "fine_gray" else d["status"].sum()
    assert fit.n_events == events


def test_units_are_subjects_with_id():
    """Each lung patient's follow-up split in two rows (same id): n_units patients, nobs
    rows, events once each; the fit equals the unsplit one (R's survSplit identity)."""
    d = DATA["lung"]
    covs = ["age", "sex", "ph.ecog"]
    cut = d["time"] / 2
    first = d.assign(start=0.0, stop=cut, event=0)
    second = d.assign(start=cut, stop=d["time"], event=d["status"])
    long = pd.concat([first, second], ignore_index=True)
    fit = ci.fit_cox(long[covs], long["stop"], long["event"], start=long["start"],
                     id=long.index % len(d))
    whole = ci.fit_cox(d[covs], d["time"], d["status"])
    assert (fit.nobs, fit.n_units, fit.n_events) == (2 * len(d), len(d), d["status"].sum())
    np.testing.assert_allclose(fit.coef, whole.coef, rtol=1e-10)
    assert fit.aic == pytest.approx(whole.aic, rel=1e-12)
    a = ci.fit_aft(long[covs], long["stop"], long["event"], entry=long["start"],
                   id=long.index % len(d))
    assert (a.nobs, a.n_units, a.n_events) == (2 * len(d), len(d), d["status"].sum())


@pytest.mark.parametrize("kind", ["cox", "aft", "fine_gray"])
def test_influence_shortcut_is_ci_influence(fits, kind):
    fit = fits[kind]
    ours = fit.influence(method="vif")
    theirs = ci.influence(fit, method="vif")
    pd.testing.assert_frame_equal(ours.loo_change, theirs.loo_change)
    pd.testing.assert_series_equal(ours.likelihood_displacement,
                                   theirs.likelihood_displacement)


def test_influence_shortcut_passes_data_and_keywords(fits):
    fit = fits["cox"]
    d = DATA["lung"]
    ours = fit.influence(d[["time", "status"]], method="reid", groups=d["inst"], robust=True)
    theirs = ci.influence(fit, d[["time", "status"]], method="reid", groups=d["inst"],
                          robust=True)
    pd.testing.assert_frame_equal(ours.loo_change, theirs.loo_change)
    pd.testing.assert_frame_equal(ours.dfbetas, theirs.dfbetas)


def test_summary_keeps_its_columns_and_adds_the_limits(fits):
    z = 1.959963984540054
    cox = fits["cox"].summary()
    assert list(cox.columns) == ["coef", "exp(coef)", "se(coef)", "z", "p", "lower 95%",
                                 "upper 95%", "exp(coef) lower 95%", "exp(coef) upper 95%"]
    aft = fits["aft"].summary()
    assert list(aft.columns) == ["Value", "Std. Error", "z", "p", "lower 95%", "upper 95%",
                                 "exp(Value)", "exp(Value) lower 95%",
                                 "exp(Value) upper 95%"]
    np.testing.assert_allclose(aft["exp(Value)"].loc["Log(scale)"], fits["aft"].scale[0],
                               rtol=1e-14)
    fg = fits["fine_gray"].summary()
    assert list(fg.columns) == list(cox.columns)
    for fit, table in zip(fits.values(), (cox, aft, fg)):
        se = table.iloc[:, 2 if "exp(coef)" in table else 1]
        np.testing.assert_allclose(table["upper 95%"], fit.coef + z * se, rtol=1e-14)
    robust = fits["cox"].summary(robust=True, groups=DATA["lung"]["inst"], alpha=0.1)
    assert {"robust se", "lower 90%", "exp(coef) upper 90%"} <= set(robust.columns)


def test_alpha_must_be_a_probability(fits):
    for alpha in (0, 1, -0.1, 1.5):
        with pytest.raises(ValueError, match="alpha must lie strictly between 0 and 1"):
            fits["cox"].conf_int(alpha=alpha)


def test_aic_where_r_defines_one(fits):
    cox, aft = fits["cox"], fits["aft"]
    assert cox.aic == pytest.approx(-2 * cox.loglik + 2 * 3, rel=1e-15)
    assert aft.aic == pytest.approx(-2 * aft.loglik + 2 * 5, rel=1e-15)   # + Log(scale)
    with pytest.raises(AttributeError, match="crr defines none"):
        _ = fits["fine_gray"].aic
    penalised = dataclasses.replace(cox, penalty=object())
    with pytest.raises(AttributeError, match="penalised"):
        _ = penalised.aic


@pytest.mark.parametrize("kind", ["cox", "aft", "fine_gray"])
def test_repr_html_shows_the_table_with_limits(fits, kind):
    html = fits[kind]._repr_html_()
    assert "lower 95%" in html and "upper 95%" in html
    assert f"{fits[kind].se[0]:.4g}" in html


# ------------------------------------------------------------------ item 5: entry=

def test_entry_is_start_in_fit_cox():
    d = DATA["lung"]
    covs = ["age", "sex", "ph.ecog"]
    a = ci.fit_cox(d[covs], d["time"], d["status"], entry=d["entry"], weights=d["w"])
    b = ci.fit_cox(d[covs], d["time"], d["status"], start=d["entry"], weights=d["w"])
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.var, b.var)
    assert a.loglik == b.loglik
    pd.testing.assert_frame_equal(ci.influence(a, method="vif").loo_change,
                                  ci.influence(b, method="vif").loo_change)
    # and it is delayed entry: not the fit from the origin
    assert rel(a.coef, ci.fit_cox(d[covs], d["time"], d["status"], weights=d["w"]).coef) > 1e-3


def test_entry_and_start_together_are_refused():
    d = DATA["lung"]
    with pytest.raises(ValueError, match="not both"):
        ci.fit_cox(d[["age"]], d["time"], d["status"], entry=d["entry"], start=d["entry"])


def test_an_entry_after_the_time_names_entry():
    d = DATA["lung"]
    bad = d["entry"].copy()
    bad.iloc[3] = d["time"].iloc[3] + 1
    with pytest.raises(ValueError, match=r"^entry \(the start of each row's at-risk interval\)"
                                         r": start must be before time"):
        ci.fit_cox(d[["age"]], d["time"], d["status"], entry=bad)


def test_fine_gray_refuses_entry_and_id_by_name():
    m = DATA["mgus2"]
    with pytest.raises(ValueError, match="entry= .* not supported by the Fine-Gray model"):
        ci.fit_fine_gray(m[["age"]], m["etime"], m["event"], entry=m["etime"] / 2)
    with pytest.raises(ValueError, match="id= is not supported by the Fine-Gray model"):
        ci.fit_fine_gray(m[["age"]], m["etime"], m["event"], id=np.arange(len(m)))


def test_one_name_per_concept_in_every_fitter():
    """weights=, strata=, entry= are keywords of all three fitters, id= of all three (the
    Fine-Gray fit refuses it, with a message)."""
    import inspect
    for fitter in (ci.fit_cox, ci.fit_aft, ci.fit_fine_gray):
        params = inspect.signature(fitter).parameters
        for name in ("weights", "strata", "entry", "id"):
            assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, (fitter, name)


def test_the_callers_data_are_not_changed(fits):
    d, m = DATA["lung"].copy(), DATA["mgus2"].copy()
    d0, m0 = d.copy(), m.copy()
    covs = ["age", "sex", "ph.ecog"]
    for fit in (ci.fit_cox(d[covs], d["time"], d["status"], entry=d["entry"], weights=d["w"],
                           strata=d["inst"] % 2),
                ci.fit_aft(d[covs], d["time"], d["status"], entry=d["entry"], weights=d["w"]),
                ci.fit_fine_gray(m[["age", "male"]], m["etime"], m["event"])):
        fit.summary(robust=True, groups=None)
        fit.conf_int(alpha=0.2)
        fit.cov_params(robust=True)
        fit._repr_html_()
    pd.testing.assert_frame_equal(d, d0)
    pd.testing.assert_frame_equal(m, m0)

"""Any lifelines parametric regression (issue 26, item 3), against lifelines itself.

lifelines is the oracle for its own likelihood and its own refits, not for residuals
(DESIGN.md): (a) our objective at lifelines' ``params_`` is lifelines' ``log_likelihood_``;
(b) our exact refits without a row change the parameters as lifelines' own refit without
the row does, both lifelines fits tightened (``fit_options``) and compared as *changes*;
(c) VIF = IF for this decomposable loss, both equal to their literal definitions (deleting
the row; doubling its case weight); (d) ``auto``'s top 10 is the exact top 10.

Measured when this file was written (lifelines 0.30.3, rossi, 432 rows): the objective at
``params_`` equals ``log_likelihood_`` to 2e-13; lifelines' tightened fits are within 5e-7
of our maximum (1e-6 standard errors), with its default options 3e-5 SE (ancillary Weibull)
to 0.16 SE (``PiecewiseExponentialRegressionFitter``, which warns).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

lifelines = pytest.importorskip("lifelines")
anp = pytest.importorskip("autograd.numpy")
from lifelines.datasets import load_rossi  # noqa: E402
from lifelines.fitters import ParametricRegressionFitter  # noqa: E402

from coxinfluence.integrations import resolve  # noqa: E402
from coxinfluence.integrations.lifelines_parametric import (  # noqa: E402
    LifelinesNotConvergedWarning,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::coxinfluence.integrations.lifelines_parametric.LifelinesNotConvergedWarning")

COVS = "age + fin + prio"


class GompertzRegression(ParametricRegressionFitter):
    """A user's own model (lifelines' documented pattern): Gompertz cumulative hazard
    ``H(t) = lambda/c (exp(c t / 50) - 1)``, both parameters log-linear."""

    _fitted_parameter_names = ["lambda_", "c_"]

    def _cumulative_hazard(self, params, T, Xs):
        lam = anp.exp(anp.dot(Xs["lambda_"], params["lambda_"]))
        c = anp.exp(anp.dot(Xs["c_"], params["c_"]))
        return lam / c * (anp.exp(c * T / 50.0) - 1)


def _rossi():
    return load_rossi()


def _small():
    return load_rossi()[["week", "arrest", "age", "fin", "prio"]]


#: name -> (data, fit(df, fit_options) -> fitted model)
MODELS = {
    "weibull_ancillary": (_rossi, lambda df, o: lifelines.WeibullAFTFitter().fit(
        df, "week", "arrest", ancillary=True, fit_options=o)),
    "lognormal_ancillary": (_small, lambda df, o: lifelines.LogNormalAFTFitter().fit(
        df, "week", "arrest", ancillary=True, fit_options=o)),
    "loglogistic_ancillary": (_small, lambda df, o: lifelines.LogLogisticAFTFitter().fit(
        df, "week", "arrest", ancillary=True, fit_options=o)),
    "piecewise_exponential": (_small, lambda df, o: lifelines.PiecewiseExponentialRegressionFitter(
        breakpoints=[20, 40]).fit(df, "week", "arrest", fit_options=o)),
    "generalized_gamma": (_small, lambda df, o: lifelines.GeneralizedGammaRegressionFitter().fit(
        df, "week", "arrest", regressors={"mu_": COVS, "sigma_": "1", "lambda_": "1"},
        fit_options=o)),
    "cox_spline": (_rossi, lambda df, o: _spline().fit(df, "week", "arrest", fit_options=o)),
    "cox_piecewise": (_small, lambda df, o: lifelines.CoxPHFitter(
        baseline_estimation_method="piecewise", breakpoints=[20, 40]).fit(
        df, "week", "arrest", fit_options=o)),
    "user_gompertz": (_small, lambda df, o: GompertzRegression().fit(
        df, "week", "arrest", regressors={"lambda_": COVS, "c_": "1"}, fit_options=o)),
}

#: the spline model's knots, fixed at those of the full data (lifelines places them at
#: percentiles of the event times; a deletion keeps the model's knots)
KNOTS = {}


def _spline():
    """``CoxPHFitter(baseline_estimation_method="spline", n_baseline_knots=3)`` with the
    knots of the first fit (lifelines' constructor refuses ``knots`` beside
    ``n_baseline_knots``, and ``knots`` alone means another number of basis functions)."""
    cph = lifelines.CoxPHFitter(baseline_estimation_method="spline", n_baseline_knots=3)
    cph.knots = KNOTS.get("cox_spline")
    return cph


def _inner(model):
    return model._model if type(model).__name__ == "CoxPHFitter" else model


TIGHT_SLSQP = {"ftol": 1e-14, "maxiter": 5000}


def tight(make, df, model):
    """lifelines refitted on ``df`` with its optimiser tightened: SLSQP ``ftol=1e-14``, or
    BFGS's smallest ``gtol`` of 1e-9 ... 1e-7 at which it reports success (below, its line
    search may stop on precision loss and lifelines raises ``ConvergenceError``)."""
    if _inner(model)._scipy_fit_method == "SLSQP":
        return make(df, TIGHT_SLSQP)
    for gtol in (1e-9, 1e-8, 1e-7):
        try:
            return make(df, {"gtol": gtol})
        except lifelines.exceptions.ConvergenceError:
            continue
    raise AssertionError("lifelines' BFGS did not converge to gtol 1e-7")


@pytest.fixture(scope="module", params=list(MODELS))
def case(request):
    data, make = MODELS[request.param]
    df = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make(df, None)
        if request.param == "cox_spline":
            KNOTS["cox_spline"] = _inner(model).knots
        fitted_tight = tight(make, df, model)
        res = ci.influence(model, df, method="vif")
    return request.param, df, make, model, fitted_tight, res


def test_objective_at_params_is_lifelines_log_likelihood(case):
    name, df, _, model, fitted_tight, res = case
    loss = res.fit.loss
    ones = np.ones(len(df))
    for m in (model, fitted_tight):
        value = -loss.value(m.params_.to_numpy(), ones)
        assert abs(value - m.log_likelihood_) < 1e-8 * max(1.0, abs(m.log_likelihood_))
    # our maximum is at least lifelines' and the tightened lifelines fit is at it
    assert -loss.value(res.fit.coef, ones) >= fitted_tight.log_likelihood_ - 1e-9
    se = np.sqrt(np.diag(np.linalg.inv(res.fit.information)))
    assert (np.abs(fitted_tight.params_.to_numpy() - res.fit.coef) / se).max() < 1e-4


def test_results_are_indexed_like_params(case):
    name, df, _, model, _, res = case
    assert res.theta_change.columns.equals(model.params_.index)
    assert res.loo_change.columns.equals(model.params_.index)
    assert res.theta_change.index.equals(df.index)


def test_vif_equals_if_and_their_literal_definitions(case):
    """VIF (deleting row i) and the case-weight IF (row i's weight doubled; the loss is
    linear in the weights) are the same vector ``H^{-1} grad L_i``: the audit's "vif" and
    "reid" changes equal both literal definitions to 1e-8."""
    name, df, _, model, _, res = case
    fit, loss = res.fit, res.fit.loss
    reid = ci.influence(model, df, method="reid").theta_change.to_numpy()
    vif = res.theta_change.to_numpy()
    scale = np.abs(vif).max()
    assert np.abs(vif - reid).max() <= 1e-8 * scale
    ones = np.ones(len(df))
    g = loss.gradient(fit.coef, ones)
    for i in (0, 7, len(df) - 1):
        deleted, doubled = ones.copy(), ones.copy()
        deleted[i], doubled[i] = 0.0, 2.0
        by_deletion = np.linalg.solve(fit.information, g - loss.gradient(fit.coef, deleted))
        by_weight = np.linalg.solve(fit.information, loss.gradient(fit.coef, doubled) - g)
        assert np.abs(vif[i] - by_deletion).max() <= 1e-8 * scale
        assert np.abs(vif[i] - by_weight).max() <= 1e-8 * scale


def test_newton_is_its_definition(case):
    """One-step Newton: ``-H_{-i}^{-1} grad L_{-i}(theta_hat)``, the deleted Hessian taken
    literally (presence 0), not from the split."""
    name, df, _, model, _, res = case
    fit, loss = res.fit, res.fit.loss
    newton = ci.influence(model, df, method="newton").theta_change.to_numpy()
    for i in (3, 100):
        b = np.ones(len(df))
        b[i] = 0.0
        want = -np.linalg.solve(loss.hessian(fit.coef, b), loss.gradient(fit.coef, b))
        assert np.abs(newton[i] - want).max() <= 1e-7 * np.abs(want).max()


@pytest.mark.slow
def test_exact_refits_equal_lifelines_refits(case):
    """Our refit without a row changes the parameters as lifelines' own (tightened) refit
    without it: changes, to lifelines' tolerance (measured: at most 9e-7 standard errors
    apart on the eight models; its tightened fits are within 5e-7 of our maxima)."""
    name, df, make, model, fitted_tight, res = case
    rows = [int(np.argmax(res.ld_approx.to_numpy())), 5]
    audit = res.model
    refits = audit.refit(np.array(rows))
    assert (refits.status == "ok").all()
    se = np.sqrt(np.diag(np.linalg.inv(res.fit.information)))
    for k, i in enumerate(rows):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = tight(make, df.drop(index=df.index[i]), model)
        ours = refits.theta[k] - res.fit.coef
        lifelines_change = theirs.params_.to_numpy() - fitted_tight.params_.to_numpy()
        assert (np.abs(ours - lifelines_change) / se).max() < 1e-5, name
        # and the refit is a maximum of the deleted likelihood
        b = np.ones(len(df))
        b[i] = 0.0
        assert np.abs(res.fit.loss.gradient(refits.theta[k], b)).max() <= 1e-8


@pytest.mark.slow
@pytest.mark.parametrize("name", ["weibull_ancillary", "user_gompertz", "cox_piecewise"])
def test_auto_top_10_is_the_exact_top_10(name):
    """On the first 200 rows of rossi (every row refitted for the exact top 10). With 16
    parameters for 200 rows, two deletions leave the ancillary Weibull without a maximum
    (the refit runs off, "undefined"; lifelines' own refits raise ConvergenceError)."""
    data, make = MODELS[name]
    df = data().iloc[:200]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make(df, None)
        auto = ci.influence(model, df)
        exact = ci.influence(model, df, method="exact")
    status = pd.Series(exact.refits.status, index=df.index)
    assert status.isin(["ok", "undefined"]).all()
    assert (status == "ok").mean() > 0.98
    top = exact.ld_exact.sort_values(ascending=False).index[:10]
    assert list(auto.top(10).index) == list(top)
    assert auto.verified[top].all()
    assert auto.flags["undefined"].equals(status == "undefined")


def test_delayed_entry_and_weights_are_lifelines_likelihood():
    """``entry_col`` and ``weights_col``: the objective at ``params_`` is lifelines'
    log-likelihood, and integer weights equal duplicated rows (the audit's changes too)."""
    df = _small().copy()
    df["entry"] = np.minimum(df["week"] - 1, np.arange(len(df)) % 5).astype(float)
    df["w"] = 1.0 + (np.arange(len(df)) % 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = lifelines.WeibullAFTFitter().fit(
            df, "week", "arrest", ancillary=True, entry_col="entry", weights_col="w",
            fit_options={"ftol": 1e-14, "maxiter": 5000})
    r = resolve(weighted, df)
    ones = np.ones(len(df))
    assert abs(-r.fit.loss.value(weighted.params_.to_numpy(), ones)
               - weighted.log_likelihood_) < 1e-8 * abs(weighted.log_likelihood_)
    dup = pd.concat([df, df[df["w"] == 2]], ignore_index=True).drop(columns="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        duplicated = lifelines.WeibullAFTFitter().fit(
            dup, "week", "arrest", ancillary=True, entry_col="entry",
            fit_options={"ftol": 1e-14, "maxiter": 5000})
    r2 = resolve(duplicated, dup)
    assert np.abs(r.fit.coef - r2.fit.coef).max() < 1e-8
    assert np.abs(r.fit.information - r2.fit.information).max() < 1e-6


def test_interval_and_left_censoring_are_lifelines_likelihood():
    df = _small().copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        left = lifelines.LogNormalAFTFitter().fit_left_censoring(df, "week", "arrest",
                                                                 ancillary=True)
        res = ci.influence(left, df, method="vif")
    value = -res.fit.loss.value(left.params_.to_numpy(), np.ones(len(df)))
    assert abs(value - left.log_likelihood_) < 1e-8 * abs(left.log_likelihood_)
    df["lower"] = np.where(df["arrest"] == 1, np.maximum(df["week"] - 2.0, 0.0), df["week"])
    df["upper"] = np.where(df["arrest"] == 1, df["week"], np.inf)
    frame = df.drop(columns=["week", "arrest"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lifelines.WeibullAFTFitter().fit_interval_censoring(
            frame, "lower", "upper", ancillary=True)
        res = ci.influence(model, frame, method="vif")
    value = -res.fit.loss.value(model.params_.to_numpy(), np.ones(len(df)))
    assert abs(value - model.log_likelihood_) < 1e-8 * abs(model.log_likelihood_)
    assert res.theta_change.columns.equals(model.params_.index)


def test_caller_frame_is_not_modified_and_refusals():
    df = _small()
    before = df.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lifelines.WeibullAFTFitter().fit(df, "week", "arrest", ancillary=True)
        ci.influence(model, df, method="vif")
    pd.testing.assert_frame_equal(df, before)
    with pytest.raises(ValueError, match="pass the DataFrame"):
        ci.influence(model)
    shuffled = df.assign(age=df["age"].sample(frac=1, random_state=0).to_numpy())
    with pytest.raises(ValueError, match="do not match our refit"):
        ci.influence(model, shuffled)
    with pytest.raises(ValueError, match="lacks the model's column"):
        ci.influence(model, df.drop(columns="arrest"))
    with pytest.raises(ValueError, match=r"missing or infinite values in column\(s\) \['age'\]"):
        ci.influence(model, df.assign(age=df["age"].where(df.index != 3)))
    with pytest.raises(ValueError, match=r"missing or infinite values in column\(s\) \['week'\]"):
        ci.influence(model, df.assign(week=df["week"].where(df.index != 3)))
    with pytest.raises(ValueError, match="not available for this model"):
        ci.influence(model, df, target="tr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pen = lifelines.WeibullAFTFitter(penalizer=0.1).fit(df, "week", "arrest",
                                                             ancillary=True)
    with pytest.raises(ValueError, match="penalizer"):
        ci.influence(pen, df)
    with pytest.raises(ValueError, match="not fitted"):
        ci.influence(lifelines.PiecewiseExponentialRegressionFitter(breakpoints=[20]), df)
    aalen = lifelines.AalenAdditiveFitter().fit(df, "week", "arrest")
    with pytest.raises(TypeError, match="unsupported lifelines model AalenAdditiveFitter"):
        ci.influence(aalen, df)


def test_a_fit_far_from_its_maximum_warns():
    """lifelines' default PiecewiseExponentialRegressionFitter on rossi stops 0.16 standard
    errors from the maximum: the audit says so and audits the maximum."""
    df = _rossi()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lifelines.PiecewiseExponentialRegressionFitter(breakpoints=[20, 40]).fit(
            df, "week", "arrest")
    with pytest.warns(LifelinesNotConvergedWarning, match="standard errors"):
        res = resolve(model, df)
    assert res.fit.converged


def test_clusters_and_robust_errors_are_lifelines():
    """``groups=``: a cluster's exact refit is lifelines' refit without the cluster's rows;
    the robust covariance (the grouped sandwich over rows) gives lifelines' ``robust=True``
    standard errors (Huber's sandwich of its per-row scores)."""
    df = _small()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lifelines.WeibullAFTFitter().fit(df, "week", "arrest", ancillary=True,
                                                 robust=True, fit_options=TIGHT_SLSQP)
        res = ci.influence(model, df, method="vif")
        clustered = ci.influence(model, df, method="vif", groups=df["prio"])
    robust_se = np.sqrt(np.diag(res.model.covariance(True)))
    assert np.abs(robust_se / model.standard_errors_.to_numpy() - 1).max() < 1e-5
    assert res.robust
    assert len(clustered.theta_change) == df["prio"].nunique()
    code = int(np.flatnonzero(clustered.model.unit_labels == 3)[0])
    refit = clustered.model.refit(np.array([code]))
    assert refit.status[0] == "ok"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = lifelines.WeibullAFTFitter().fit(df[df["prio"] != 3], "week", "arrest",
                                                  ancillary=True, fit_options=TIGHT_SLSQP)
    se = np.sqrt(np.diag(np.linalg.inv(res.fit.information)))
    change = refit.theta[0] - res.fit.coef
    assert (np.abs(change - (theirs.params_.to_numpy() - model.params_.to_numpy()))
            / se).max() < 1e-5
    assert (clustered.model.unit_frame(None)["rows"].sum()) == len(df)


def test_report_names_the_model_its_events_and_likelihood():
    """The report's header: the lifelines model, its events and lifelines' (tightened)
    log-likelihood."""
    import html

    from coxinfluence.report import build_report
    df = _small()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lifelines.CoxPHFitter(baseline_estimation_method="piecewise",
                                      breakpoints=[20, 40]).fit(df, "week", "arrest",
                                                                fit_options={"gtol": 1e-8})
        res = ci.influence(model, df, method="vif")
    header = res.model.report_header()
    assert header.name == "lifelines CoxPHFitter (baseline_estimation_method='piecewise')"
    assert header.facts.startswith(f"{int(df['arrest'].sum())} events, 6 parameters")
    assert header.facts.endswith(f"log-likelihood {model.log_likelihood_:.4f}")
    assert html.escape(header.name) in build_report(res)


@pytest.mark.parametrize("fitter", ["WeibullAFTFitter", "LogNormalAFTFitter",
                                    "LogLogisticAFTFitter"])
def test_generic_path_equals_the_survreg_audit(fitter):
    """Without ``ancillary`` the AFT fitters are R's ``survreg`` model, audited by
    ``AFTAudit`` (checked against R to 1e-8, tests/test_aft.py). The generic path on the
    same lifelines model gives the same audit: the changes (lifelines' parameters mapped to
    R's: the same coefficients, ancillary Intercept ``= sign * log(sigma)``), the likelihood
    displacement, the ``unstable`` flags, and the exact refits of three rows."""
    from coxinfluence.influence_functions.decomposable_audit import DecomposableAudit
    from coxinfluence.integrations.lifelines_aft import FITTERS
    from coxinfluence.integrations.lifelines_parametric import resolve_lifelines_parametric
    df = _small()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(lifelines, fitter)().fit(df, "week", "arrest")
        survreg = ci.influence(model, df, method="vif")
        generic = DecomposableAudit(resolve_lifelines_parametric(model, df).fit)
        ours = ci.influence(generic, df, method="vif")
    sign = FITTERS[fitter][1]
    prim, anc = model._primary_parameter_name, model._ancillary_parameter_name
    # both in params_' naming; the survreg audit's own (R's) changes mapped by hand
    assert survreg.theta_change.columns.equals(ours.theta_change.columns)
    scale = np.abs(survreg.theta_change.to_numpy()).max()
    assert np.abs(ours.theta_change.to_numpy() - survreg.theta_change.to_numpy()).max() \
        < 1e-8 * scale
    names = {"(Intercept)": "Intercept"}            # R's name -> lifelines' covariate
    r_change = pd.DataFrame(survreg.model.inner.change("vif"),
                            columns=survreg.fit.base.columns)
    mapped = pd.DataFrame({c: ours.theta_change[(prim, names.get(c, c))]
                           for c in r_change.columns[:-1]})
    mapped["Log(scale)"] = sign * ours.theta_change[(anc, "Intercept")]
    assert r_change.columns[-1] == "Log(scale)"
    assert np.abs(mapped.to_numpy() - r_change.to_numpy()).max() < 1e-8 * scale
    assert np.abs(ours.ld_approx - survreg.ld_approx).max() < 1e-8
    assert ours.flags["unstable"].equals(survreg.flags["unstable"])
    rows = np.argsort(survreg.ld_approx.to_numpy())[-3:]
    theirs = survreg.model.refit(rows)
    mine = generic.refit(rows)
    ld_theirs = 2 * (survreg.model.objective(theirs.theta) - survreg.model.objective(
        survreg.model.coef[None, :]))
    ld_mine = 2 * (generic.objective(mine.theta) - generic.objective(generic.coef[None, :]))
    assert np.abs(ld_mine - ld_theirs).max() < 1e-7


def test_third_derivative_is_the_derivative_of_the_hessian(case):
    """``T`` (the ``unstable`` rule, Halley's refit start) against central differences of
    the autograd Hessian, steps h = 1e-3 and h/2 standard errors, with a step-aware
    tolerance (issue 44): besides 1e-5 of ``T``'s scale, twice the two differences'
    disagreement, which measures what a step cannot resolve (the truncation error,
    O(h^2), and the Hessian's rounding noise over the step, O(noise / h): for the
    generalized gamma about 1e-4 from the incomplete gamma function's derivatives, which
    put one check at 65.8 against a fixed tolerance of 60.6 on another machine). A wrong
    ``T`` differs from both differences alike and still fails."""
    name, df, _, model, _, res = case
    fit, T = res.fit, res.model.third
    ones = np.ones(len(df))
    se = np.sqrt(np.diag(np.linalg.inv(fit.information)))

    def central(k, h):
        e = np.zeros(fit.coef.size)
        e[k] = h
        return (fit.loss.hessian(fit.coef + e, ones)
                - fit.loss.hessian(fit.coef - e, ones)) / (2 * h)

    for k in range(fit.coef.size):
        fd, fd_half = central(k, 1e-3 * se[k]), central(k, 0.5e-3 * se[k])
        tol = 1e-5 * np.abs(T).max() + 2 * np.abs(fd - fd_half)
        assert (np.abs(T[k] - fd_half) <= tol).all(), (name, k)

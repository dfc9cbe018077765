"""``ci.LifelinesSurvival``: the survival function a lifelines parametric regression
predicts, ``model.predict_survival_function(df_new, times)``, as a target of the audit
(issue 26, item 3), in both lifelines paths (the survreg AFT fits read in ``params_``, and
every other parametric regression by its own likelihood).

Oracles: lifelines' own ``predict_survival_function`` (the value at ``params_``) and
lifelines' own refits without a row (the exact change, both lifelines fits tightened and
compared as changes of the prediction), central differences (the autograd Jacobian).

Measured when this file was written (lifelines 0.30.3, rossi): the value equals
``predict_survival_function`` to 2e-16 for nine models; the exact changes equal lifelines'
refits to 1.6e-6 (Weibull AFT), 6.8e-5 (ancillary Weibull), 7.3e-6 (spline Cox) of the
largest change; the VIF's changes correlate with the exact ones at >= 0.9996 (Weibull AFT),
>= 0.9998 (piecewise Cox), and >= 0.980 for the ancillary Weibull (16 parameters on 432
rows: its coefficients' own VIF correlations are 0.94-0.99), whose one-step Newton changes
correlate at >= 0.993.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

# the family's implementation itself (ci.targets.Survival / Quantile dispatch to it;
# the ci.* names of these classes are deprecated aliases)
from coxinfluence.families.lifelines_targets import LifelinesSurvival

lifelines = pytest.importorskip("lifelines")
anp = pytest.importorskip("autograd.numpy")
from lifelines.datasets import load_rossi  # noqa: E402
from test_lifelines_parametric import GompertzRegression  # noqa: E402  (a user's own model)

pytestmark = pytest.mark.filterwarnings(
    "ignore::coxinfluence.integrations.lifelines_parametric.LifelinesNotConvergedWarning")

TIMES = [10.0, 30.0, 52.0]
TIGHT = {"ftol": 1e-14, "maxiter": 1000}


def _small():
    return load_rossi()[["week", "arrest", "age", "fin", "prio"]]


def _spline(df, knots=None, fit_options=None):
    """The spline Cox model; a refit keeps the full data's ``knots`` (lifelines places them
    at percentiles of the event times; the model audited keeps them)."""
    cph = lifelines.CoxPHFitter(baseline_estimation_method="spline", n_baseline_knots=3)
    cph.knots = knots
    return cph.fit(df, "week", "arrest", fit_options=fit_options)


#: name -> (data, fit(df) -> the fitted model, with lifelines' optimiser tightened)
MODELS = {
    "weibull_aft": (load_rossi, lambda df: lifelines.WeibullAFTFitter().fit(
        df, "week", "arrest", fit_options=TIGHT)),
    "lognormal_aft": (load_rossi, lambda df: lifelines.LogNormalAFTFitter().fit(
        df, "week", "arrest", fit_options=TIGHT)),
    "loglogistic_aft": (load_rossi, lambda df: lifelines.LogLogisticAFTFitter().fit(
        df, "week", "arrest", fit_options=TIGHT)),
    "weibull_ancillary": (load_rossi, lambda df: lifelines.WeibullAFTFitter().fit(
        df, "week", "arrest", ancillary=True, fit_options=TIGHT)),
    "generalized_gamma": (_small, lambda df: lifelines.GeneralizedGammaRegressionFitter().fit(
        df, "week", "arrest", regressors={"mu_": "age + fin + prio", "sigma_": "1",
                                          "lambda_": "1"})),
    "cox_spline": (_small, lambda df: _spline(df, fit_options=TIGHT)),
    "cox_piecewise": (_small, lambda df: lifelines.CoxPHFitter(
        baseline_estimation_method="piecewise", breakpoints=[20, 40]).fit(
        df, "week", "arrest", fit_options=TIGHT)),
    "piecewise_exponential": (_small, lambda df: lifelines.PiecewiseExponentialRegressionFitter(
        breakpoints=[20, 40]).fit(df, "week", "arrest")),
    "user_gompertz": (_small, lambda df: GompertzRegression().fit(
        df, "week", "arrest", regressors={"lambda_": "age + fin + prio", "c_": "1"})),
}


def _new_patients(df):
    return df.drop(columns=["week", "arrest"]).iloc[[0, 5, 9]]


def _audit(name, methods=("vif",)):
    """``(df, make, model, target, {method: result})``: the model ``name`` fitted on its
    data and audited by each method, the target ``S`` of three rossi patients."""
    data, make = MODELS[name]
    df = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make(df)
        target = LifelinesSurvival(_new_patients(df), TIMES)
        results = {m: ci.influence(model, df, method=m, target=target) for m in methods}
    return df, make, model, target, results


def _predicted(model, new, times=TIMES):
    """lifelines' ``predict_survival_function``, patients outer and times inner."""
    return model.predict_survival_function(new, times=times).to_numpy().T.reshape(-1)


@pytest.mark.parametrize("name", list(MODELS))
def test_value_is_the_models_own_predict_survival_function(name):
    df, _, model, target, results = _audit(name)
    res, new = results["vif"], target.df_new
    assert "lifelines_survival" in res.model.target_names
    assert list(res.loo_change.columns) == [f"S({t:g}|{i})" for i in new.index for t in TIMES]
    at_params = target.value(res.fit, model.params_.to_numpy()[None, :])[0]
    assert np.abs(at_params - _predicted(model, new)).max() < 1e-10
    # at the audited maximum: lifelines' prediction with its params_ replaced by ours (a
    # CoxPHFitter predicts by its parametric _model)
    fitter = model.__dict__.get("_model", model)
    theirs = fitter.params_.copy()
    fitter.params_ = pd.Series(res.fit.coef, index=theirs.index)
    try:
        at_ours = _predicted(model, new)
    finally:
        fitter.params_ = theirs
    assert np.abs(target.value(res.fit, res.fit.coef[None, :])[0] - at_ours).max() < 1e-10


@pytest.mark.parametrize("name", ["weibull_aft", "weibull_ancillary", "cox_spline"])
def test_jacobian_is_the_derivative_of_the_value(name):
    """Autograd's ``dS/dtheta`` against central differences, steps of 1e-4 standard
    errors."""
    *_, target, results = _audit(name)
    fit = results["vif"].fit
    J = target.jacobian(fit)
    se = np.sqrt(np.diag(np.linalg.inv(fit.information)))
    for k in range(fit.coef.size):
        h = np.zeros_like(fit.coef)
        h[k] = 1e-4 * se[k]
        fd = (target.value(fit, (fit.coef + h)[None, :])[0]
              - target.value(fit, (fit.coef - h)[None, :])[0]) / (2 * h[k])
        assert np.abs(fd - J[:, k]).max() < 1e-6 * max(1.0, np.abs(J[:, k]).max()), k


AUDITED = {}


def audited(name):
    """``(df, make, model, target, {method: result})`` for methods exact, vif, newton
    (computed once per module)."""
    if name not in AUDITED:
        AUDITED[name] = _audit(name, ("exact", "vif", "newton"))
    return AUDITED[name]


#: lifelines' refits' changes of S against ours, relative to the largest change (measured
#: 1.6e-6, 6.8e-5, 7.3e-6: lifelines' tightened optimiser)
REFIT_GAP = {"weibull_aft": 1e-4, "weibull_ancillary": 1e-3, "cox_spline": 1e-4}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(REFIT_GAP))
def test_exact_changes_are_lifelines_own_refits(name):
    """The exact change of ``S`` without a row is lifelines' refit without the row, its
    ``predict_survival_function`` minus the full model's (both tightened): the two most
    displacing rows and an ordinary one."""
    df, make, model, target, results = audited(name)
    exact = results["exact"]
    assert exact.refits.ok.all()
    new = target.df_new
    knots = getattr(getattr(model, "_model", None), "knots", None)
    full = _predicted(model, new)
    for i in list(exact.ld_exact.sort_values().index[-2:]) + [7]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            again = (_spline(df.drop(index=i), knots, TIGHT) if name == "cox_spline"
                     else make(df.drop(index=i)))
        change = _predicted(again, new) - full
        ours = exact.loo_change.loc[i].to_numpy()
        assert np.abs(change - ours).max() < REFIT_GAP[name] * np.abs(change).max(), i
        # a wrong row would be far off: the changes differ between rows
        other = exact.loo_change.loc[i + 1].to_numpy()
        assert np.abs(change - other).max() > 10 * np.abs(change - ours).max()


@pytest.mark.slow
@pytest.mark.parametrize("name, method, floor", [
    ("weibull_aft", "vif", 0.999), ("cox_piecewise", "vif", 0.999),
    ("weibull_ancillary", "newton", 0.99), ("weibull_ancillary", "vif", 0.975)])
def test_first_order_changes_correlate_with_exact(name, method, floor):
    """Per column (patient, time), over the 432 rows of rossi: the first-order changes of
    ``S`` (``J`` times the coefficient change) against exact refits (module docstring)."""
    *_, results = audited(name)
    exact = results["exact"].loo_change.to_numpy()
    approx = results[method].loo_change.to_numpy()
    np.testing.assert_allclose(approx, results[method].theta_change.to_numpy()
                               @ results[method].target.jacobian(results[method].fit).T,
                               rtol=0, atol=1e-14)
    r = [np.corrcoef(exact[:, j], approx[:, j])[0, 1] for j in range(exact.shape[1])]
    assert min(r) > floor, r


def test_refusals_and_inputs_not_modified():
    df = _small()
    model = lifelines.WeibullAFTFitter().fit(df, "week", "arrest")
    new = _new_patients(df)
    keep = new.copy()
    target = LifelinesSurvival(new, TIMES)
    res = ci.influence(model, df, method="vif", target=target)
    pd.testing.assert_frame_equal(new, keep)
    for bad in ([0.0], [-1.0], [np.inf], []):
        with pytest.raises(ValueError, match="times must be finite positive"):
            LifelinesSurvival(new, bad)
    with pytest.raises(ValueError, match="non-empty pandas DataFrame"):
        LifelinesSurvival(new.to_numpy(), TIMES)
    with pytest.raises(ValueError, match="do not have the columns"):
        LifelinesSurvival(new.drop(columns=["age"]), TIMES).value(res.fit, res.fit.coef)
    holes = new.astype(float)
    holes.iloc[1, 0] = np.nan
    with pytest.raises(ValueError, match="missing or infinite"):
        LifelinesSurvival(holes, TIMES).jacobian(res.fit)
    # one patient as a Series
    one = LifelinesSurvival(new.iloc[0], TIMES).value(res.fit, res.fit.coef)
    assert np.array_equal(one[0], target.value(res.fit, res.fit.coef)[0, :len(TIMES)])
    # not a lifelines model: refused by the audit, and by the target itself
    cox = ci.fit_cox(df[["age", "fin", "prio"]], df["week"], df["arrest"])
    aft = ci.fit_aft(df[["age", "fin", "prio"]], df["week"], df["arrest"])
    for fit in (cox, aft):
        with pytest.raises(ValueError, match="'lifelines_survival' is not available"):
            ci.influence(fit, method="vif", target=target)
    with pytest.raises(ValueError, match="survival function of a fitted lifelines"):
        target.value(aft, aft.coef)

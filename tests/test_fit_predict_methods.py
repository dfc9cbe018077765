"""Every fit predicts for new patients through its own methods (issue 35, item 2): each
``fit.predict_*`` is the function of :mod:`coxinfluence.models.predictions` (checked
against R's survfit, predict.survreg and predict.crr in tests/test_predictions.py) and
equals the value its influence target measures at the fit's coefficients; a Cox fit on
untied data predicts lifelines' own survival function."""
import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter
from lifelines.datasets import load_rossi

import coxinfluence as ci
from coxinfluence.models import predictions

ROSSI = load_rossi()
COVS = [c for c in ROSSI.columns if c not in ("week", "arrest")]
NEW = ROSSI[COVS].iloc[[3, 50, 200]]


def test_cox_methods_are_the_predictions_and_the_targets():
    fit = ci.fit_cox(ROSSI[COVS], ROSSI.week, ROSSI.arrest)
    S = fit.predict_survival(NEW, [10.0, 30.0, 52.0])
    pd.testing.assert_frame_equal(S, predictions.predict_survival(fit, NEW, [10, 30, 52]))
    H = fit.predict_cumulative_hazard(NEW, [10.0, 30.0, 52.0])
    np.testing.assert_allclose(np.exp(-H.to_numpy()), S.to_numpy(), rtol=1e-14)
    target = ci.targets.Survival(NEW, [10.0, 30.0, 52.0])
    np.testing.assert_allclose(target.value(fit, fit.coef[None, :])[0],
                               S.to_numpy().ravel(), rtol=1e-13)
    lp = fit.predict_lp(NEW)
    np.testing.assert_allclose(lp.to_numpy(), NEW.to_numpy() @ fit.coef, rtol=1e-13)
    np.testing.assert_allclose(fit.predict_risk(NEW).to_numpy(), np.exp(lp.to_numpy()))
    assert list(S.index) == list(NEW.index)


def test_cox_survival_is_lifelines_on_untied_data():
    rng = np.random.default_rng(2)
    df = ROSSI[COVS + ["arrest"]].copy()
    df["week"] = ROSSI.week + rng.uniform(0, 0.5, len(ROSSI))     # break the ties
    cph = CoxPHFitter().fit(df, "week", "arrest", fit_options={"precision": 1e-12})
    fit = ci.fit_cox(df[COVS], df.week, df.arrest)
    # lifelines interpolates its step function linearly between event times: read at them
    events = np.sort(df.week[df.arrest == 1].to_numpy())
    times = list(events[[5, 40, 80]])
    ours = fit.predict_survival(NEW, times).to_numpy()
    theirs = cph.predict_survival_function(NEW, times=times).to_numpy().T
    np.testing.assert_allclose(ours, theirs, rtol=1e-7)   # lifelines converges to ~3e-9


def test_aft_methods_are_the_predictions():
    fit = ci.fit_aft(ROSSI[COVS], ROSSI.week, ROSSI.arrest, "weibull")
    pd.testing.assert_frame_equal(fit.predict_survival(NEW, [10, 30]),
                                  predictions.predict_survival(fit, NEW, [10, 30]))
    pd.testing.assert_series_equal(fit.predict_quantile(NEW),
                                   predictions.predict_quantile(fit, NEW, 0.5))
    # the median: S(median | x) = 1/2
    med = fit.predict_quantile(NEW).to_numpy()
    assert (med > 52).all()                 # past the follow-up: the model's extrapolation
    with pytest.warns(ci.TargetBeyondFollowUpWarning, match="extrapolated by the parametric"):
        S = [fit.predict_survival(NEW.iloc[[k]], [m]).iloc[0, 0] for k, m in enumerate(med)]
    np.testing.assert_allclose(S, 0.5, rtol=1e-10)
    pd.testing.assert_series_equal(fit.predict_lp(NEW), predictions.predict_lp(fit, NEW))


def test_fine_gray_methods_are_the_predictions_and_the_target():
    rng = np.random.default_rng(8)
    X = pd.DataFrame({"a": rng.normal(size=120), "b": rng.integers(0, 2, 120).astype(float)})
    time, status = rng.exponential(size=120), rng.integers(0, 3, 120)
    fit = ci.fit_fine_gray(X, time, status, 1)
    F = fit.predict_cumulative_incidence(X.iloc[:3], [0.5, 1.0])
    pd.testing.assert_frame_equal(F, predictions.predict_cumulative_incidence(
        fit, X.iloc[:3], [0.5, 1.0]))
    target = ci.targets.CumulativeIncidence(X.iloc[:3], [0.5, 1.0])
    np.testing.assert_allclose(target.value(fit, fit.coef[None, :])[0], F.to_numpy().ravel(),
                               rtol=1e-13)
    assert (F.to_numpy() > 0).all() and (F.to_numpy() < 1).all()


def test_a_prediction_a_family_does_not_have_is_refused():
    fit = ci.fit_aft(ROSSI[COVS], ROSSI.week, ROSSI.arrest, "weibull")
    with pytest.raises(TypeError, match="predict_cumulative_incidence"):
        predictions.predict_cumulative_incidence(fit, NEW, [10.0])

"""One target per quantity, dispatched on the model (issue 35 item 4): ``ci.targets.Survival``
is each model's own survival function (Cox: ``CoxFit``, lifelines ``CoxPHFitter``,
scikit-survival; AFT: ``AFTFit`` and lifelines' AFT fitters; lifelines' other parametric
regressions), ``ci.targets.LinearPredictor`` each model's own linear predictor,
``ci.targets.Quantile`` an AFT model's quantiles; ``import coxinfluence.targets`` works;
the old names warn and give the same numbers.

Oracles: refits done by hand (``ci.fit_aft`` without the row, then ``predict_survival``)
for the exact changes of ``Survival`` on an ``AFTFit``; lifelines' own
``predict_survival_function`` and scikit-survival's own ``predict`` and
``predict_survival_function`` for their models."""
from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.models.predictions import predict_quantile, predict_survival

lifelines = pytest.importorskip("lifelines")
from lifelines.datasets import load_rossi  # noqa: E402

GOLDEN = Path(__file__).parent / "fixtures" / "predictions"
AFT = ["x1", "x2"]
ROSSI_TIMES = [10.0, 30.0, 52.0]


@pytest.fixture(scope="module")
def aft_data():
    return (pd.read_csv(GOLDEN / "aft_data.csv"), pd.read_csv(GOLDEN / "aft_new.csv"),
            pd.read_csv(GOLDEN / "aft_times.csv")["t"].to_numpy())


@pytest.fixture(scope="module")
def rossi():
    df = load_rossi()
    return df, df.drop(columns=["week", "arrest"]).iloc[[0, 5, 9]]


def _value_at(res, theta):
    """The value the result's target measures at parameters ``theta`` (the result's fit's
    parametrisation)."""
    return res.target.value(res.fit, np.asarray(theta, dtype=float)[None, :])[0]


# ------------------------------------------------------------------ the module path

def test_every_target_is_in_ci_targets_and_the_module_path_works():
    module = importlib.import_module("coxinfluence.targets")
    assert ci.targets is module
    from coxinfluence.audit import targets as audit_targets
    from coxinfluence.targets import CumulativeIncidence, Quantile, Survival
    assert Survival is audit_targets.Survival and Quantile is audit_targets.Quantile
    for name in ("Coefficients", "HazardRatios", "TimeRatios", "LinearPredictor",
                 "RelativeRisk", "Survival", "Quantile", "CumulativeIncidence"):
        assert name in module.__all__ and hasattr(ci.targets, name)
    assert CumulativeIncidence is ci.CumulativeIncidence


# ---------------------------------------------------- Survival on an AFTFit: exact

def test_survival_on_an_aft_fit_exact_changes_are_refits_by_hand(aft_data):
    d, new, times = aft_data
    strata = new["g"].tolist()
    fit = ci.fit_aft(d[AFT], d["time"], d["status"], strata=d["g"])
    target = ci.targets.Survival(new[AFT], times, strata=strata)
    with pytest.warns(ci.TargetBeyondFollowUpWarning):       # 40: past the last event
        res = ci.influence(fit, method="exact", target=target)
    assert res.target.name == "aft_survival"
    quant = ci.influence(fit, method="exact", target=ci.targets.Quantile(new[AFT], [0.25, 0.5],
                                                                       strata=strata))
    with pytest.warns(ci.TargetBeyondFollowUpWarning):       # 40, as the target
        full = predict_survival(fit, new[AFT], times, strata=strata).to_numpy().ravel()
    full_q = predict_quantile(fit, new[AFT], [0.25, 0.5], strata=strata).to_numpy().ravel()
    for row in (0, 7, 42, 99, 159):
        keep = d.index != row
        refit = ci.fit_aft(d.loc[keep, AFT], d.loc[keep, "time"], d.loc[keep, "status"],
                           strata=d.loc[keep, "g"])
        with pytest.warns(ci.TargetBeyondFollowUpWarning):
            by_hand = predict_survival(refit, new[AFT], times, strata=strata).to_numpy().ravel()
        np.testing.assert_allclose(res.loo_change.iloc[row].to_numpy(), by_hand - full,
                                   rtol=1e-7, atol=1e-11)
        by_hand_q = predict_quantile(refit, new[AFT], [0.25, 0.5],
                                     strata=strata).to_numpy().ravel()
        np.testing.assert_allclose(quant.loo_change.iloc[row].to_numpy(), by_hand_q - full_q,
                                   rtol=1e-7, atol=1e-11)
    # the first-order changes are those of the AFT implementation (J times the VIF)
    vif = ci.influence(fit, method="vif", target=ci.targets.Survival(new[AFT], [2.0, 5.0],
                                                                     strata=strata))
    exact = res.loo_change.iloc[:, [1, 2]].to_numpy()       # patient 0 at 2 and 5
    assert np.corrcoef(vif.loo_change.iloc[:, 0], exact[:, 0])[0, 1] > 0.99


# ------------------------------------------------------------ dispatch on the model

def test_each_model_gets_its_own_implementation(aft_data, rossi):
    d, new, times = aft_data
    df, df_new = rossi
    cox = ci.fit_cox(d[AFT], d["time"], d["status"])
    aft = ci.fit_aft(d[AFT], d["time"], d["status"])
    T = ci.targets
    for model, data, target, name in [
            (cox, None, T.Survival(new[AFT], [1.0]), "survival"),
            (cox, None, T.LinearPredictor(new[AFT]), "linear_predictor"),
            (aft, None, T.Survival(new[AFT], [1.0]), "aft_survival"),
            (aft, None, T.Quantile(new[AFT]), "survival_quantile"),
            (lifelines.CoxPHFitter().fit(df, "week", "arrest"), df,
             T.Survival(df_new, ROSSI_TIMES), "survival"),
            (lifelines.WeibullAFTFitter().fit(df, "week", "arrest"), df,
             T.Survival(df_new, ROSSI_TIMES), "aft_survival"),
            (lifelines.WeibullAFTFitter().fit(df, "week", "arrest", ancillary=True), df,
             T.Survival(df_new, ROSSI_TIMES), "lifelines_survival")]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = ci.influence(model, data, method="vif", target=target)
        assert res.target.name == name, type(model).__name__
    fg = ci.fit_fine_gray(d[AFT], d["time"], d["status"])
    with pytest.raises(ValueError, match=r"target 'survival' is not available for this model "
                                         r"\(Fine-Gray.*ci.targets.CumulativeIncidence"):
        ci.influence(fg, target=T.Survival(new[AFT], [1.0]))
    with pytest.raises(ValueError, match="target 'survival_quantile' is not available for "
                                         r"this model \(Cox"):
        ci.influence(cox, target=T.Quantile(new[AFT]))
    with pytest.raises(ValueError, match="ctype= is not an option of Survival for this model"):
        ci.influence(aft, target=T.Survival(new[AFT], [1.0], ctype=2))
    with pytest.raises(ValueError, match="strata= is not an option"):
        ci.influence(lifelines.WeibullAFTFitter().fit(df, "week", "arrest", ancillary=True),
                     df, target=T.Survival(df_new, ROSSI_TIMES, strata="a"))


def test_used_directly_a_target_evaluates_as_the_fits_own(aft_data):
    from coxinfluence.families.aft_targets import AFTSurvival, SurvivalQuantile
    d, new, times = aft_data
    fit = ci.fit_aft(d[AFT], d["time"], d["status"], dist="lognormal")
    theta = fit.coef[None, :] * 1.01
    generic = ci.targets.Survival(new[AFT], times)
    own = AFTSurvival(new[AFT], times)
    assert generic.columns(fit) == own.columns(fit)
    np.testing.assert_array_equal(generic.value(fit, theta), own.value(fit, theta))
    np.testing.assert_array_equal(generic.jacobian(fit), own.jacobian(fit))
    np.testing.assert_array_equal(ci.targets.Quantile(new[AFT], 0.3).value(fit, theta),
                                  SurvivalQuantile(new[AFT], 0.3).value(fit, theta))
    fg = ci.fit_fine_gray(d[AFT], d["time"], d["status"])
    with pytest.raises(ValueError, match="'survival' is not available"):
        generic.value(fg, fg.coef[None, :])


def test_a_family_registers_its_implementation(monkeypatch):
    from coxinfluence import targets as T
    from coxinfluence.audit import target_base
    # a copy of the registry, so that the toy family does not outlive the test
    monkeypatch.setattr(target_base, "_IMPLEMENTATIONS", dict(target_base._IMPLEMENTATIONS))

    @T.register_target
    class ToySurvival(T.Target):
        name = "toy_survival"
        quantity = "survival"
        options = ("strata",)

        def __init__(self, X_new, times, strata=None):
            self.X_new, self.times, self.strata = X_new, times, strata

    assert T.implementation_of("survival", ("coef", "toy_survival", "survival")) is ToySurvival
    assert T.implementation_of("survival", ("coef", "survival")) is T.CoxSurvival
    impl = T.resolve_target(ci.targets.Survival([[1.0]], [2.0], strata="s"),
                            ("coef", "toy_survival"), "a toy model")
    assert isinstance(impl, ToySurvival) and impl.strata == "s"
    assert "ci.targets.Survival(X_new, times)" not in T.describe_targets(("coef",))


# ------------------------------------------------ lifelines' and scikit-survival's own

@pytest.mark.parametrize("make", [
    lambda df: lifelines.CoxPHFitter().fit(df, "week", "arrest"),
    lambda df: lifelines.WeibullAFTFitter().fit(df, "week", "arrest"),
    lambda df: lifelines.LogNormalAFTFitter().fit(df, "week", "arrest"),
    lambda df: lifelines.WeibullAFTFitter().fit(df, "week", "arrest", ancillary=True),
    lambda df: lifelines.PiecewiseExponentialRegressionFitter(breakpoints=[20, 40]).fit(
        df, "week", "arrest"),
], ids=["cox", "weibull_aft", "lognormal_aft", "weibull_ancillary", "piecewise_exponential"])
def test_lifelines_models_follow_their_own_survival_function(rossi, make):
    """At lifelines' own parameters the unified target is lifelines'
    ``predict_survival_function`` (rossi has tied event times: the Cox model's baseline is
    lifelines', without Efron's correction)."""
    df, df_new = rossi
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # lifelines' ApproximationWarning (piecewise)
        model = make(df)
        res = ci.influence(model, df, method="vif",
                           target=ci.targets.Survival(df_new, ROSSI_TIMES))
    theta = model.params_.reindex(res.fit.columns).to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = model.predict_survival_function(df_new, times=ROSSI_TIMES).T.to_numpy().ravel()
    np.testing.assert_allclose(_value_at(res, theta), want, rtol=1e-10)


def test_scikit_survival_models_follow_their_own_predictions():
    sksurv = pytest.importorskip("sksurv")  # noqa: F841
    from sksurv.datasets import load_veterans_lung_cancer
    from sksurv.linear_model import CoxnetSurvivalAnalysis, CoxPHSurvivalAnalysis
    from sksurv.preprocessing import OneHotEncoder
    X, y = load_veterans_lung_cancer()
    X = OneHotEncoder().fit_transform(X).astype(float)
    Xn = X.iloc[:3]
    times = [30.0, 100.0]
    est = CoxPHSurvivalAnalysis(tol=1e-15).fit(X, y)
    surv = ci.influence(est, X, y=y, method="vif", target=ci.targets.Survival(Xn, times))
    own = np.array([[f(t) for t in times] for f in est.predict_survival_function(Xn)])
    np.testing.assert_allclose(_value_at(surv, est.coef_), own.ravel(), rtol=1e-10)
    lp = ci.influence(est, X, y=y, method="vif", target=ci.targets.LinearPredictor(Xn))
    np.testing.assert_allclose(_value_at(lp, est.coef_), est.predict(Xn), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = CoxnetSurvivalAnalysis(alphas=[0.05], l1_ratio=0.5, tol=1e-12,
                                     fit_baseline_model=True).fit(X, y)
        score = ci.influence(net, X, y=y, method="vif",
                             target=ci.targets.LinearPredictor(Xn))
    assert score.target.name == "risk_score"              # its predict is centred
    np.testing.assert_allclose(_value_at(score, net.coef_[:, 0]), net.predict(Xn),
                               rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------- the old names

def test_old_names_warn_and_give_the_same_numbers(aft_data, rossi):
    d, new, times = aft_data
    fit = ci.fit_aft(d[AFT], d["time"], d["status"])
    T = ci.targets
    pairs = [(lambda: ci.AFTSurvival(new[AFT], times), T.Survival(new[AFT], times),
              "ci.targets.Survival"),
             (lambda: ci.SurvivalQuantile(new[AFT], [0.1, 0.5]),
              T.Quantile(new[AFT], [0.1, 0.5]), "ci.targets.Quantile")]
    for old, new_target, name in pairs:
        with pytest.warns(DeprecationWarning, match=f"deprecated.*use {name}"):
            old_target = old()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ci.TargetBeyondFollowUpWarning)
            a = ci.influence(fit, method="vif", target=old_target)
            b = ci.influence(fit, method="vif", target=new_target)
        pd.testing.assert_frame_equal(a.loo_change, b.loo_change)
    df, df_new = rossi
    model = lifelines.WeibullAFTFitter().fit(df, "week", "arrest", ancillary=True)
    with pytest.warns(DeprecationWarning, match="ci.targets.Survival"):
        old_target = ci.LifelinesSurvival(df_new, ROSSI_TIMES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = ci.influence(model, df, method="vif", target=old_target)
        b = ci.influence(model, df, method="vif", target=T.Survival(df_new, ROSSI_TIMES))
    pd.testing.assert_frame_equal(a.loo_change, b.loo_change)
    cox = ci.fit_cox(d[AFT], d["time"], d["status"])
    with pytest.warns(DeprecationWarning, match="ci.targets.LinearPredictor"):
        old_target = ci.RiskScore(new[AFT])
    # on a Cox fit (no centre) the risk score is the linear predictor
    np.testing.assert_array_equal(old_target.value(cox, cox.coef[None]),
                                  T.LinearPredictor(new[AFT]).value(cox, cox.coef[None]))

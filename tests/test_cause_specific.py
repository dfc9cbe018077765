"""Cause-specific Cox models (``ci.fit_cause_specific``) against riskRegression's CSC and
its predict (golden fixtures of ``tests/r/cause_specific_reference.R``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

FIXTURES = Path(__file__).parent / "fixtures" / "r_cause_specific"
DATA = pd.read_csv(FIXTURES / "data_pbc.csv")
REF = pd.read_csv(FIXTURES / "reference.csv")
NEW = DATA.iloc[[0, 4, 8, 99]]
TIMES = [500.0, 1000.0, 2000.0, 3000.0]
CASES = ("efron", "breslow", "strata", "entry", "weights", "noties")


def reference(case, quantity):
    rows = REF[(REF["case"] == case) & (REF["quantity"] == quantity)]
    out = np.full((rows["row"].max() + 1, rows["col"].max() + 1), np.nan)
    out[rows["row"], rows["col"]] = rows["value"]
    return out


def fit_case(case, data=DATA):
    X = data[["age", "logbili", "albumin"]]
    kwargs = {}
    causes = {1: ["age", "logbili"], 2: ["age", "logbili"]}
    if case == "breslow":
        kwargs["ties"] = "breslow"
        causes = {1: ["age", "logbili"], 2: ["age", "logbili", "albumin"]}
    elif case == "strata":
        kwargs["strata"] = data["edema"]
    elif case == "entry":
        kwargs["entry"] = data["entry"]
    elif case == "weights":
        kwargs["weights"] = data["w"]
    time = data["tnt"] if case == "noties" else data["time"]
    return ci.fit_cause_specific(X, time, data["status"], causes=causes, **kwargs)


@pytest.mark.parametrize("case", CASES)
def test_coefficients_and_standard_errors_are_csc(case):
    fit = fit_case(case)
    assert fit.causes == [1, 2]
    coef = np.concatenate([reference(case, f"coef_{k}").ravel() for k in (1, 2)])
    se = np.concatenate([reference(case, f"se_{k}").ravel() for k in (1, 2)])
    np.testing.assert_allclose(fit.coef, coef, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fit.se, se, rtol=1e-8)
    np.testing.assert_allclose(fit.params.to_numpy(), coef, rtol=1e-8, atol=1e-10)
    loglik = sum(reference(case, f"loglik_{k}")[0, 0] for k in (1, 2))
    assert fit.loglik == pytest.approx(loglik, rel=1e-10)
    assert fit.aic == pytest.approx(-2 * loglik + 2 * len(coef), rel=1e-10)
    assert fit.params.index[0] == "cause 1: age"
    V = fit.cov_params(robust=False)
    assert V.shape == (len(coef), len(coef))
    d1 = len(fit.models[0].coef)
    assert np.all(V.to_numpy()[:d1, d1:] == 0.0)           # the model-based: block diagonal
    assert fit.robust_default == (case == "weights")        # R's coxph: non-integer weights
    limits = fit.conf_int()
    np.testing.assert_allclose(limits["upper"] - limits["lower"], 2 * 1.959963984540054 * se,
                               rtol=1e-8)
    assert list(fit.summary().index) == fit.columns


@pytest.mark.parametrize("case", ("efron", "breslow", "strata", "entry", "noties"))
@pytest.mark.parametrize("cause", (1, 2))
@pytest.mark.parametrize("product_limit", (True, False))
def test_absolute_risk_is_csc_predict(case, cause, product_limit):
    fit = fit_case(case)
    strata = NEW["edema"] if case == "strata" else None
    if case == "strata" and cause == 1:       # stratum edema = 1 has no cause-1 event
        with pytest.warns(ci.TargetBeyondFollowUpWarning, match="stratum 1.0.*no event"):
            risk = fit.predict_absolute_risk(NEW, TIMES, cause=cause,
                                             product_limit=product_limit, strata=strata)
    else:
        risk = fit.predict_absolute_risk(NEW, TIMES, cause=cause,
                                         product_limit=product_limit, strata=strata)
    expected = reference(case, f"risk_{cause}_pl{int(product_limit)}")
    np.testing.assert_allclose(risk.to_numpy(), expected, rtol=1e-8, atol=1e-12)
    assert list(risk.index) == list(NEW.index)


def test_absolute_risk_refuses_an_unknown_cause_and_a_missing_model():
    fit = fit_case("efron")
    with pytest.raises(ValueError, match="cause must be one of"):
        fit.predict_absolute_risk(NEW, TIMES, cause=3)
    only = ci.fit_cause_specific(DATA[["age"]], DATA["time"], DATA["status"], causes=[2])
    with pytest.raises(ValueError, match="every cause"):
        only.predict_absolute_risk(NEW, TIMES, cause=2)


def test_robust_covariance_blocks_are_each_models():
    fit = fit_case("efron")
    V = fit.robust_covariance()
    np.testing.assert_allclose(V[:2, :2], fit.models[0].robust_covariance(), rtol=1e-12)
    np.testing.assert_allclose(V[2:, 2:], fit.models[1].robust_covariance(), rtol=1e-12)


@pytest.mark.parametrize("cause", (1, 2))
def test_standard_errors_are_absrisk_se_without_ties(cause):
    """R's absRisk.se of the exponential formula (sqrt(sum(iid^2)); data without ties);
    with the product limit R's iid is the exponential formula's derivative (about 1% off
    the product limit's: models/cause_specific_influence.py)."""
    fit = fit_case("noties")
    risk, se = fit.predict_absolute_risk(NEW, TIMES, cause=cause, product_limit=False,
                                         se=True)
    iid = reference("noties", f"iid0_{cause}")
    expected = np.sqrt((iid ** 2).sum(axis=0)).reshape(se.shape)
    np.testing.assert_allclose(se.to_numpy(), expected, rtol=1e-7, atol=1e-12)
    _, se_pl = fit.predict_absolute_risk(NEW, TIMES, cause=cause, se=True)
    r_pl = reference("noties", f"riskse_{cause}")
    assert np.abs(se_pl.to_numpy() - r_pl).max() < 0.05 * r_pl.max()


@pytest.mark.parametrize("kind", ("martingale", "score", "schoenfeld", "dfbeta"))
def test_residuals_are_each_causes_residuals_coxph(kind):
    fit = fit_case("efron")
    res = ci.residuals(fit, kind=kind)
    for k in (1, 2):
        expected = reference("efron", f"res_{kind}_{k}")
        if kind == "schoenfeld":
            got = res.loc[k].to_numpy()
        elif kind == "martingale":
            got = res[f"cause {k}"].to_numpy()[:, None]
        else:
            got = res[[f"cause {k}: age", f"cause {k}: logbili"]].to_numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-10)


def test_dfbeta_is_minus_the_audits_reid_change():
    fit = fit_case("efron")
    reid = ci.influence(fit, method="reid").theta_change.to_numpy()
    np.testing.assert_allclose(ci.residuals(fit, kind="dfbeta").to_numpy(), -reid,
                               rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("cause", (1, 2))
def test_evaluate_is_score_of_the_absolute_risk(cause):
    """ci.evaluate(fit, ..., cause=k): Score(Hist(time, status) ~ 1, cause = k) of the
    absolute risk (product limit): Brier scores, AUCs, IBS and their SEs."""
    train, test = DATA.iloc[:300], DATA.iloc[300:]
    fit = ci.fit_cause_specific(train[["age", "logbili"]], train["time"], train["status"])
    table = ci.evaluate(fit, test[["age", "logbili"]], test["time"], test["status"],
                        [1000, 2000, 3000], cause=cause)
    table = table[table.metric != "ipa"]
    assert table.metric.tolist() == ["brier"] * 3 + ["auc"] * 3 + ["ibs"]
    np.testing.assert_allclose(table.estimate, reference("score", f"estimate_{cause}").ravel(),
                               rtol=0, atol=1e-8)
    np.testing.assert_allclose(table.se, reference("score", f"se_{cause}").ravel(),
                               rtol=0, atol=1e-8)


def test_times_past_the_causes_last_event_are_flagged():
    fit = fit_case("efron")
    last = DATA["time"][DATA["status"] == 1].max()
    with pytest.warns(ci.TargetBeyondFollowUpWarning, match=f"F1.*last event time.*{last:g}"):
        risk = fit.predict_absolute_risk(NEW, [1000.0, last + 100], cause=1)
    np.testing.assert_array_equal(risk.iloc[:, 1],
                                  fit.predict_absolute_risk(NEW, [last], cause=1).iloc[:, 0])
    target = ci.targets.AbsoluteRisk(NEW.iloc[:1], [last + 100], cause=1)
    assert len(target.followup_notes(fit)) == 1

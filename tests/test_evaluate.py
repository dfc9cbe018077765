"""ci.evaluate against R (issue 38): riskRegression::Score's Brier score and AUC (IPCW,
cens.model = "km", influence-function SEs), its IBS, survival::concordance (Harrell,
Uno), on GBSG2 (censoring throughout, tied times) and Rossi (heavy ties, censoring only
at the end), fitted on a training part and evaluated on a test part.

Fixtures: tests/fixtures/r_evaluate/, written by tests/r/evaluate_reference.R (its header
says what each quantity is); *_strata: the same data with a Cox model stratified by a
binary column (GBSG2: menopausal status; Rossi: wexp), whose concordance R counts within
strata; the live test reruns the script on another split.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.evaluation import scores

FIX = Path(__file__).parent / "fixtures" / "r_evaluate"
SCRIPT = Path(__file__).parent / "r" / "evaluate_reference.R"
CASES = ["gbsg2", "rossi"]
STRATA = ["gbsg2_strata", "rossi_strata"]     # a column "stratum": strata(stratum) in R


def load(directory, case):
    """(train, test, covariates, times, reference) of a case."""
    d = pd.read_csv(directory / f"{case}_data.csv")
    times = pd.read_csv(directory / f"{case}_times.csv").t.to_numpy()
    ref = pd.read_csv(directory / f"{case}_reference.csv")
    covs = [c for c in d.columns if c not in ("time", "event", "split", "stratum")]
    train = d[d.split == "train"].reset_index(drop=True)
    test = d[d.split == "test"].reset_index(drop=True)
    return train, test, covs, times, ref


def get(ref, quantity):
    return ref[ref.quantity == quantity].value.to_numpy()


def r_table(ref, prefix=""):
    """R's estimates and SEs in evaluate's row order (brier, auc, ibs, c_harrell, c_uno)."""
    names = ["brier", "auc", "ibs", "c_harrell", "c_uno"]
    if prefix:
        names.remove("ibs")
    est = np.concatenate([get(ref, prefix + q) for q in names])
    se = np.concatenate([get(ref, prefix + q + "_se") for q in names])
    return est, se


@pytest.mark.parametrize("case", CASES)
def test_scores_on_r_risks_equal_score(case):
    """Given R's predicted risks, the formulas give Score's and concordance's numbers."""
    _, test, _, times, ref = load(FIX, case)
    out = scores.TestOutcomes(test.time, test.event)
    risk = ref[ref.quantity == "risk"]
    ics = []
    for k, t in enumerate(times):
        r = risk[risk.time == t].sort_values("row").value.to_numpy()
        b, ic_b = scores.brier(out, 1 - r, t)
        a, ic_a = scores.auc(out, r, t)
        ics.append(ic_b)
        np.testing.assert_allclose(b, get(ref, "brier")[k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(scores.standard_error(ic_b), get(ref, "brier_se")[k],
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(a, get(ref, "auc")[k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(scores.standard_error(ic_a), get(ref, "auc_se")[k],
                                   rtol=0, atol=1e-12)
    w = scores.ibs_weights(times)
    np.testing.assert_allclose(scores.standard_error(w @ np.array(ics)), get(ref, "ibs_se"),
                               rtol=0, atol=1e-12)
    lp = get(ref, "lp")
    for kind in ("harrell", "uno"):
        c, dfbeta = scores.concordance(out, lp, kind)
        np.testing.assert_allclose(c, get(ref, f"c_{kind}"), rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.sqrt((dfbeta ** 2).sum()), get(ref, f"c_{kind}_se"),
                                   rtol=0, atol=1e-12)


def _check_cox(directory, case):
    train, test, covs, times, ref = load(directory, case)
    if "stratum" in train:
        fit = ci.fit_cox(train[covs], train.time, train.event, strata=train.stratum)
        X_test = test[covs + ["stratum"]]
    else:
        fit = ci.fit_cox(train[covs], train.time, train.event)
        X_test = test[covs]
    table = ci.evaluate(fit, X_test, test.time, test.event, times)
    assert table.columns.tolist() == ["metric", "time", "estimate", "se", "lower", "upper"]
    assert table.metric.tolist() == (["brier"] * len(times) + ["auc"] * len(times)
                                     + ["ibs"] + ["ipa"] * len(times)
                                     + ["c_harrell", "c_uno"])
    table = table[table.metric != "ipa"]        # Score's IPA: tests/test_compare.py
    est, se = r_table(ref)
    np.testing.assert_allclose(table.estimate, est, rtol=0, atol=1e-8)
    np.testing.assert_allclose(table.se, se, rtol=0, atol=1e-6)
    np.testing.assert_allclose(table.time.to_numpy()[:2 * len(times)], np.tile(times, 2))
    return fit, train, test, covs, times, ref


@pytest.mark.parametrize("case", CASES + STRATA)
def test_evaluate_cox_equals_r(case):
    fit, *_ = _check_cox(FIX, case)
    assert fit.nobs > 0


@pytest.mark.parametrize("case", CASES + STRATA)
def test_evaluate_aft_equals_r(case):
    """A Weibull AFT model: its own S(t|x); the C-index orders by survreg's lp."""
    train, test, covs, times, ref = load(FIX, case)
    aft = ci.fit_aft(train[covs], train.time, train.event)
    table = ci.evaluate(aft, test[covs], test.time, test.event, times)
    table = table[~table.metric.isin(["ibs", "ipa"])]
    est, se = r_table(ref, "aft_")
    np.testing.assert_allclose(table.estimate, est, rtol=0, atol=1e-8)
    np.testing.assert_allclose(table.se, se, rtol=0, atol=1e-6)


def test_interval_is_clipped_wald():
    train, test, covs, times, ref = load(FIX, "gbsg2")
    fit = ci.fit_cox(train[covs], train.time, train.event)
    table = ci.evaluate(fit, test[covs], test.time, test.event, times, alpha=0.1)
    z = 1.6448536269514722      # qnorm(0.95)
    np.testing.assert_allclose(table.lower, np.clip(table.estimate - z * table.se, 0, 1))
    np.testing.assert_allclose(table.upper, np.clip(table.estimate + z * table.se, 0, 1))


def test_inputs_not_modified_and_matched_on_index():
    train, test, covs, times, ref = load(FIX, "gbsg2")
    fit = ci.fit_cox(train[covs], train.time, train.event)
    X = test[covs].copy()
    t, e = test.time.copy(), test.event.copy()
    table = ci.evaluate(fit, X, t, e, times)
    pd.testing.assert_frame_equal(X, test[covs])
    pd.testing.assert_series_equal(t, test.time)
    # outcomes given in another row order are matched on the index
    perm = np.random.default_rng(1).permutation(len(test))
    again = ci.evaluate(fit, X, t.iloc[perm], e.iloc[perm], times)
    pd.testing.assert_frame_equal(table, again)
    # and the covariates' column order does not matter
    again = ci.evaluate(fit, X[covs[::-1]], t, e, times)
    np.testing.assert_allclose(again.estimate, table.estimate, rtol=0, atol=1e-14)


def test_bad_input_refused_with_reason():
    train, test, covs, times, ref = load(FIX, "gbsg2")
    fit = ci.fit_cox(train[covs], train.time, train.event)
    X, t, e = test[covs], test.time, test.event
    with pytest.raises(ci.InputError, match="beyond the test set's follow-up"):
        ci.evaluate(fit, X, t, e, [365, t.max() + 1])
    with pytest.raises(ci.InputError, match="beyond the test set's follow-up"):
        ci.evaluate(fit, X, t, e, [t.max()])
    first = t[e == 1].min()
    with pytest.raises(ci.InputError, match="before the test set's first event"):
        ci.evaluate(fit, X, t, e, [first - 1, 365])
    with pytest.raises(ci.InputError, match="not in the training data.*'extra'"):
        ci.evaluate(fit, X.assign(extra=1.0), t, e, times)
    with pytest.raises(ci.InputError, match="missing.*'age'"):
        ci.evaluate(fit, X.drop(columns="age"), t, e, times)
    with pytest.raises(ci.InputError, match="no events"):
        ci.evaluate(fit, X, t, np.zeros(len(t)), times)
    with pytest.raises(ci.InputError, match="0 .censored. or 1"):
        ci.evaluate(fit, X, t, np.full(len(t), 2), times)
    with pytest.raises(ci.InputError, match="length"):
        ci.evaluate(fit, X, t.to_numpy()[:-1], e, times)


def test_lifelines_model_is_scored_on_its_own_predictions():
    """A lifelines CoxPHFitter (Breslow ties, its own baseline): the metrics of its own
    predict_survival_function and of its partial hazard order."""
    from lifelines import CoxPHFitter
    train, test, covs, times, ref = load(FIX, "gbsg2")
    cph = CoxPHFitter().fit(train[covs + ["time", "event"]], "time", "event")
    table = ci.evaluate(cph, test[covs], test.time, test.event, times, data=train)
    curves = cph.predict_survival_function(test[covs])         # at the event times
    at = np.searchsorted(curves.index.to_numpy(), times, side="right") - 1
    S = curves.to_numpy()[at].T                                 # right-continuous steps
    out = scores.TestOutcomes(test.time, test.event)
    expect = [scores.brier(out, S[:, k], t)[0] for k, t in enumerate(times)]
    expect += [scores.auc(out, 1 - S[:, k], t)[0] for k, t in enumerate(times)]
    got = table.set_index("metric").estimate
    # to lifelines' convergence (the integration polishes its coefficients: ~1e-8 here);
    # fit_cox's Efron baseline differs from lifelines' by ~1e-4 on these data
    np.testing.assert_allclose(table.estimate[:2 * len(times)], expect, rtol=0, atol=1e-6)
    lp = cph.predict_log_partial_hazard(test[covs]).to_numpy()
    np.testing.assert_allclose(got["c_harrell"], scores.concordance(out, lp)[0], atol=1e-12)


def test_sksurv_second_implementation():
    """scikit-survival where the definitions agree: Harrell's C
    (concordance_index_censored), Uno's C (concordance_index_ipcw with the test set as
    survival_train and no tau), the Brier score and the AUC (brier_score,
    cumulative_dynamic_auc with the test set as survival_train), on GBSG2 with its tied
    times broken: where a censoring ties an event time, scikit-survival's censoring
    Kaplan-Meier differs from R's (events before censorings at a tie, as Score and
    concordance take it), so Uno's C, the Brier score and the AUC differ by ~1e-4 on
    GBSG2's own times (Harrell's C agrees there too). Its integrated_brier_score is the
    trapezoid rule over [t_1, t_K], not Score's left rectangles from 0: not compared."""
    from sksurv.metrics import (
        brier_score,
        concordance_index_censored,
        concordance_index_ipcw,
        cumulative_dynamic_auc,
    )
    from sksurv.util import Surv
    train, test, covs, times, ref = load(FIX, "gbsg2")
    test = test.copy()
    # break ties in time (sksurv and R treat tied event/censoring times differently)
    test["time"] = test.time + np.arange(len(test)) * 1e-4
    fit = ci.fit_cox(train[covs], train.time, train.event)
    table = ci.evaluate(fit, test[covs], test.time, test.event, times).set_index("metric")
    y = Surv.from_arrays(test.event.astype(bool), test.time)
    lp = np.asarray(ci.targets.LinearPredictor(test[covs]).value(fit, fit.coef[None]))[0]
    c = concordance_index_censored(y["event"], y["time"], lp)[0]
    np.testing.assert_allclose(table.loc["c_harrell", "estimate"], c, rtol=0, atol=1e-12)
    c = concordance_index_ipcw(y, y, lp)[0]     # the test set's censoring, no tau
    np.testing.assert_allclose(table.loc["c_uno", "estimate"], c, rtol=0, atol=1e-12)
    S = np.asarray(ci.targets.Survival(test[covs], times).value(fit, fit.coef[None]))
    S = S.reshape(len(test), len(times))
    _, bs = brier_score(y, y, S, times)
    np.testing.assert_allclose(table.loc["brier", "estimate"], bs, rtol=0, atol=1e-12)
    auc, _ = cumulative_dynamic_auc(y, y, 1 - S, times)
    np.testing.assert_allclose(table.loc["auc", "estimate"], auc, rtol=0, atol=1e-12)


@pytest.mark.needs_r
def test_live_r_on_another_split(tmp_path):
    """R run now on a split of GBSG2 the fixtures do not hold."""
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    d = pd.read_csv(FIX / "gbsg2_data.csv")
    d["split"] = np.where(np.arange(len(d)) % 4 == 1, "test", "train")
    d.to_csv(tmp_path / "live_data.csv", index=False)
    pd.DataFrame({"t": [500.0, 1000, 1500, 2000]}).to_csv(tmp_path / "live_times.csv",
                                                           index=False)
    subprocess.run(["Rscript", str(SCRIPT), str(tmp_path), "live", "4"], check=True,
                   capture_output=True)
    _check_cox(tmp_path, "live")


def test_library_models_equal_our_fits_of_the_same_model():
    """lifelines' WeibullAFTFitter = fit_aft (R's survreg, checked above) and
    scikit-survival's CoxPHSurvivalAnalysis (Breslow ties) = fit_cox(ties="breslow"),
    through their own predictions (the C-index of lifelines' AFT by its survival at the
    median test time, the same order as survreg's linear predictor)."""
    from lifelines import WeibullAFTFitter
    from sksurv.linear_model import CoxPHSurvivalAnalysis
    from sksurv.util import Surv
    train, test, covs, times, _ = load(FIX, "gbsg2")
    args = (test[covs], test.time, test.event, times)
    weib = WeibullAFTFitter().fit(train[covs + ["time", "event"]], "time", "event")
    ours = ci.evaluate(ci.fit_aft(train[covs], train.time, train.event), *args)
    theirs = ci.evaluate(weib, *args, data=train)
    np.testing.assert_allclose(theirs.estimate, ours.estimate, rtol=0, atol=1e-10)
    np.testing.assert_allclose(theirs.se, ours.se, rtol=0, atol=1e-10)
    y = Surv.from_arrays(train.event.astype(bool), train.time)
    cox = CoxPHSurvivalAnalysis().fit(train[covs], y)
    ours = ci.evaluate(ci.fit_cox(train[covs], train.time, train.event, ties="breslow"),
                       *args)
    theirs = ci.evaluate(cox, *args, data=train[covs], y=y)
    np.testing.assert_allclose(theirs.estimate, ours.estimate, rtol=0, atol=1e-10)
    np.testing.assert_allclose(theirs.se, ours.se, rtol=0, atol=1e-10)


def test_fine_gray_competing_risks_equal_score():
    """Competing risks (simulated, causes 1 and 2, tied times): the cumulative incidence's
    Brier score, AUC and IBS as Score(Hist(time, status) ~ 1, cause = 1) computes them,
    from R's predict.crr risks (to rounding) and from fit_fine_gray end to end (to crr's
    convergence, ~1e-8 on the coefficients); no concordance rows."""
    d = pd.read_csv(FIX / "fg_data.csv")
    ref = pd.read_csv(FIX / "fg_reference.csv")
    times = pd.read_csv(FIX / "fg_times.csv").t.to_numpy()
    train = d[d.split == "train"].reset_index(drop=True)
    test = d[d.split == "test"].reset_index(drop=True)
    out = scores.TestOutcomes(test.time, test.status, cause=1)
    risk = ref[ref.quantity == "risk"]
    for k, t in enumerate(times):
        r = risk[risk.time == t].sort_values("row").value.to_numpy()
        b, ic_b = scores.brier(out, 1 - r, t)
        a, ic_a = scores.auc(out, r, t)
        np.testing.assert_allclose([b, scores.standard_error(ic_b), a,
                                    scores.standard_error(ic_a)],
                                   [get(ref, q)[k] for q in ("brier", "brier_se", "auc",
                                                             "auc_se")], rtol=0, atol=1e-12)
    fit = ci.fit_fine_gray(train[["x1", "x2"]], train.time, train.status)
    table = ci.evaluate(fit, test[["x1", "x2"]], test.time, test.status, times)
    assert table.metric.tolist() == ["brier"] * 4 + ["auc"] * 4 + ["ibs"] + ["ipa"] * 4
    table = table[table.metric != "ipa"]
    est = np.concatenate([get(ref, q) for q in ("brier", "auc", "ibs")])
    se = np.concatenate([get(ref, q + "_se") for q in ("brier", "auc", "ibs")])
    np.testing.assert_allclose(table.estimate, est, rtol=0, atol=1e-8)
    np.testing.assert_allclose(table.se, se, rtol=0, atol=1e-6)
    with pytest.raises(ci.InputError, match="no events of cause 1"):
        ci.evaluate(fit, test[["x1", "x2"]], test.time, test.status.replace(1, 2), times)

"""Predictions for new patients (issue 35 item 2, :mod:`coxinfluence.models.predictions`)
against R: ``survfit(coxph, newdata)``'s survival and cumulative hazard (Efron and
Breslow ties, strata, weights), ``predict.coxph(type = "lp" / "risk", reference =
"zero")``, ``predict.survreg(type = "lp" / "quantile")`` and the survival function of
``survreg``'s distributions, ``cmprsk::predict.crr``; golden numbers from
``tests/r/predictions_reference.R`` (``tests/fixtures/predictions``), rerun live where R is
installed. Each prediction also equals the value of its influence target
(``ci.targets``) at the fitted parameters."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.models.predictions import (
    predict_cumulative_hazard,
    predict_cumulative_incidence,
    predict_lp,
    predict_quantile,
    predict_risk,
    predict_survival,
)

HERE = Path(__file__).parent
#: the fixtures' last time of each kind is past the follow-up: warned (data/followup.py)
LATE = ci.TargetBeyondFollowUpWarning
GOLDEN = HERE / "fixtures" / "predictions"
SCRIPT = HERE / "r" / "predictions_reference.R"
RTOL = 1e-8        # relative agreement with R (measured: 1e-11 or better)
COX = ["x1", "x2", "x3"]
AFT = ["x1", "x2"]
COX_CASES = [f"cox_{ties}{s}{w}" for ties in ("efron", "breslow")
             for s in ("", "_strata") for w in ("", "_weights")]
AFT_CASES = ["aft_weibull", "aft_exponential", "aft_lognormal", "aft_loglogistic",
             "aft_weibull_strata"]
FG_CASES = ["fg", "fg_cengroup"]


def load(folder):
    """``(frames, reference)``: the data files and the long-format reference of a folder
    written by the R script."""
    frames = {p.stem: pd.read_csv(p) for p in folder.glob("*.csv") if p.stem != "reference"}
    return frames, pd.read_csv(folder / "reference.csv")


def ref_matrix(reference, case, quantity):
    r = reference[(reference["case"] == case) & (reference["quantity"] == quantity)]
    assert len(r), f"no {quantity} for {case}"
    out = np.full((r["row"].max() + 1, r["col"].max() + 1), np.nan)
    out[r["row"].to_numpy(), r["col"].to_numpy()] = r["value"].to_numpy()
    return out


def assert_rel(got, want, rtol=RTOL, atol=0.0):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    err = np.abs(got - want)
    bad = err > rtol * np.abs(want) + atol
    assert not bad.any(), f"largest error {err.max():.3g} at {np.argwhere(bad)[:3].tolist()}"


# ------------------------------------------------------------------------- the fits

def cox_fit(frames, case):
    d = frames["cox_data"]
    ties = "efron" if "efron" in case else "breslow"
    return ci.fit_cox(d[COX], d["time"], d["status"], ties=ties,
                      strata=d["g"] if "strata" in case else None,
                      weights=d["w"] if "weights" in case else None)


def aft_fit(frames, case):
    d = frames["aft_data"]
    dist = case.split("_")[1]
    return ci.fit_aft(d[AFT], d["time"], d["status"], dist=dist,
                      strata=d["g"] if case.endswith("strata") else None)


def fg_fit(frames, case):
    d = frames["fg_data"]
    return ci.fit_fine_gray(d[["x1", "x2"]], d["time"], d["status"],
                            cengroup=d["cg"] if case == "fg_cengroup" else None)


@pytest.fixture(scope="module")
def golden():
    return load(GOLDEN)


# ------------------------------------------------------------------------- against R

def check_cox(frames, reference, case):
    fit = cox_fit(frames, case)
    new, times = frames["cox_new"], frames["cox_times"]["t"].to_numpy()
    assert_rel(fit.coef, ref_matrix(reference, case, "coef")[0], 1e-9)
    # new patients carrying the stratum column: their baseline is their stratum's
    with pytest.warns(LATE, match=r"S\(t\|x\) at times? .*: past the last event time of"):
        surv = predict_survival(fit, new, times)
    assert_rel(surv.to_numpy(), ref_matrix(reference, case, "surv"))
    with pytest.warns(LATE, match=r"Lambda\(t\|x\) at times? .*last plateau carried forward"):
        cumhaz = predict_cumulative_hazard(fit, new, times)
    assert_rel(cumhaz.to_numpy(), ref_matrix(reference, case, "cumhaz"))
    lp = predict_lp(fit, new)
    assert_rel(lp.to_numpy(), ref_matrix(reference, case, "lp_zero")[:, 0])
    assert_rel(predict_risk(fit, new).to_numpy(), ref_matrix(reference, case, "risk_zero")[:, 0])
    if "strata" not in case:
        # R's default lp is centred at the training means: ours differs by one constant
        shift = lp.to_numpy() - ref_matrix(reference, case, "lp_centred")[:, 0]
        np.testing.assert_allclose(shift, shift[0], rtol=0, atol=1e-10)
        assert abs(shift[0]) > 1e-3


def check_aft(frames, reference, case):
    fit = aft_fit(frames, case)
    new, times = frames["aft_new"], frames["aft_times"]["t"].to_numpy()
    strata = new["g"].tolist() if case.endswith("strata") else None
    assert_rel(fit.coef, ref_matrix(reference, case, "coef")[0], 1e-9)
    assert_rel(predict_lp(fit, new).to_numpy(), ref_matrix(reference, case, "lp")[:, 0])
    assert_rel(predict_quantile(fit, new, [0.1, 0.5, 0.9], strata=strata).to_numpy(),
               ref_matrix(reference, case, "quantile"))
    with pytest.warns(LATE, match="time 40: .* extrapolated by the parametric"):
        surv = predict_survival(fit, new, times, strata=strata).to_numpy()
    assert_rel(surv, ref_matrix(reference, case, "survival"))
    # R's 1 - psurvreg: the same to its cancellation, absolute
    assert_rel(surv, ref_matrix(reference, case, "survival_psurvreg"), 0.0, 1e-13)


def check_fg(frames, reference, case):
    fit = fg_fit(frames, case)
    new, times = frames["fg_new"], frames["fg_times"]["t"].to_numpy()
    assert_rel(fit.coef, ref_matrix(reference, case, "coef")[0], 1e-8)
    with pytest.warns(LATE, match=f"F\\(t\\|x\\) at time {times[-1]:g}: past the last "
                      "cause-1 failure time of the data"):
        cif = predict_cumulative_incidence(fit, new, times).to_numpy()
    want = ref_matrix(reference, case, "cif")
    assert (want[:, 0] == 0).all() and (cif[:, 0] == 0).all()    # before the first failure
    assert_rel(cif, want)


@pytest.mark.parametrize("case", COX_CASES)
def test_cox_predictions_are_survfit_and_predict_coxph(golden, case):
    check_cox(*golden, case)


@pytest.mark.parametrize("case", AFT_CASES)
def test_aft_predictions_are_predict_survreg(golden, case):
    check_aft(*golden, case)


@pytest.mark.parametrize("case", FG_CASES)
def test_fine_gray_cumulative_incidence_is_predict_crr(golden, case):
    check_fg(*golden, case)


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: live comparison with R skipped "
                           "(the golden fixtures are compared above)")
def test_live_r(tmp_path):
    """The R script rerun with another seed (new data, new patients), compared live."""
    subprocess.run(["Rscript", str(SCRIPT), str(tmp_path), "7"], check=True,
                   capture_output=True, timeout=300)
    frames, reference = load(tmp_path)
    for case in COX_CASES:
        check_cox(frames, reference, case)
    for case in AFT_CASES:
        check_aft(frames, reference, case)
    for case in FG_CASES:
        check_fg(frames, reference, case)


# --------------------------------------------------------------------- the frames

def test_rows_are_the_patients_and_columns_the_times(golden):
    frames, _ = golden
    fit = cox_fit(frames, "cox_efron_strata")
    new = frames["cox_new"].set_index(pd.Index(["p", "q", "r", "s"], name="patient"))
    times = [1.0, 5.0, 10.0]
    surv = predict_survival(fit, new, times)
    assert list(surv.index) == ["p", "q", "r", "s"] and surv.index.name == "patient"
    assert list(surv.columns) == times and surv.columns.name == "time"
    # the strata: read from the frame's stratum column, or given, or one for all
    given = predict_survival(fit, new[COX], times, strata=new["g"].tolist())
    pd.testing.assert_frame_equal(surv, given)
    one = predict_survival(fit, new[COX], times, strata="b")
    np.testing.assert_array_equal(one.loc["q"].to_numpy(), surv.loc["q"].to_numpy())
    # an array: patients 0..m-1, columns in the fit's order
    arr = predict_survival(fit, new[COX].to_numpy(), times, strata=new["g"].tolist())
    assert list(arr.index) == [0, 1, 2, 3]
    np.testing.assert_array_equal(arr.to_numpy(), surv.to_numpy())
    # a Series for one patient
    lp = predict_lp(fit, new.iloc[1])
    assert list(lp.index) == ["q"] and lp.name == "lp"
    with pytest.raises(ValueError, match="stratified"):
        predict_survival(fit, new[COX], times)
    # AFT: a quantile per patient (one p: a Series), p as columns for several
    aft = aft_fit(frames, "aft_weibull")
    med = predict_quantile(aft, frames["aft_new"])
    assert isinstance(med, pd.Series) and med.name == "Q(0.5)"
    q = predict_quantile(aft, frames["aft_new"], [0.25, 0.5])
    assert list(q.columns) == [0.25, 0.5] and q.columns.name == "p"
    np.testing.assert_array_equal(q[0.5].to_numpy(), med.to_numpy())


def test_refusals(golden):
    frames, _ = golden
    cox = cox_fit(frames, "cox_efron")
    aft = aft_fit(frames, "aft_weibull")
    fg = fg_fit(frames, "fg")
    with pytest.raises(TypeError, match="predict_quantile is defined for an AFTFit"):
        predict_quantile(cox, frames["cox_new"])
    with pytest.raises(TypeError, match="CoxFit"):
        predict_cumulative_hazard(aft, frames["aft_new"], [1.0])
    with pytest.raises(TypeError, match="FineGrayFit"):
        predict_cumulative_incidence(cox, frames["cox_new"], [1.0])
    with pytest.raises(TypeError, match="predict_risk"):
        predict_risk(aft, frames["aft_new"])
    with pytest.raises(TypeError, match="predict_survival is defined for a CoxFit"):
        predict_survival(fg, frames["fg_new"], [1.0])
    with pytest.raises(ValueError, match="ctype"):
        predict_survival(aft, frames["aft_new"], [1.0], ctype=2)
    with pytest.raises(ValueError, match="positive"):
        predict_survival(aft, frames["aft_new"], [0.0])
    with pytest.raises(ValueError, match="lack the model's covariate"):
        predict_survival(cox, frames["cox_new"][["x1"]], [1.0])
    with pytest.raises(ValueError, match="probabilities"):
        predict_quantile(aft, frames["aft_new"], 1.0)


# ------------------------------------------------- predictions = targets at theta_hat

def _target_value(target, fit):
    return target.value(fit, fit.coef[None, :])[0]


@pytest.mark.parametrize("case", ["cox_efron_strata_weights", "cox_breslow"])
def test_cox_predictions_are_the_targets_values(golden, case):
    frames, _ = golden
    fit = cox_fit(frames, case)
    new, times = frames["cox_new"], frames["cox_times"]["t"].to_numpy()
    strata = new["g"].tolist() if "strata" in case else None
    T = ci.targets
    with pytest.warns(LATE):                                # the last time is past them
        surv = predict_survival(fit, new, times)
    np.testing.assert_array_equal(surv.to_numpy().ravel(),
                                  _target_value(T.Survival(new[COX], times, strata=strata),
                                                fit))
    for ctype in (1, 2):
        with pytest.warns(LATE):
            by_ctype = predict_survival(fit, new, times, ctype=ctype)
        np.testing.assert_array_equal(
            by_ctype.to_numpy().ravel(),
            _target_value(T.Survival(new[COX], times, strata=strata, ctype=ctype), fit))
    np.testing.assert_array_equal(predict_lp(fit, new).to_numpy(),
                                  _target_value(T.LinearPredictor(new), fit))
    np.testing.assert_array_equal(predict_risk(fit, new).to_numpy(),
                                  _target_value(T.RelativeRisk(new), fit))
    # the cumulative hazard is minus the log of the survival
    with pytest.warns(LATE):
        cumhaz = predict_cumulative_hazard(fit, new, times)
    np.testing.assert_allclose(cumhaz.to_numpy(), -np.log(surv.to_numpy()),
                               rtol=1e-13, atol=1e-300)
    # and through the audit: the target the result measured
    with pytest.warns(LATE):                                # the last time is past them
        res = ci.influence(fit, method="vif", target=T.Survival(new, times))
    np.testing.assert_array_equal(_target_value(res.target, fit), surv.to_numpy().ravel())


@pytest.mark.parametrize("case", ["aft_weibull_strata", "aft_lognormal"])
def test_aft_predictions_are_the_targets_values(golden, case):
    frames, _ = golden
    fit = aft_fit(frames, case)
    new, times = frames["aft_new"], frames["aft_times"]["t"].to_numpy()
    strata = new["g"].tolist() if case.endswith("strata") else None
    T = ci.targets
    with pytest.warns(LATE):                                # 40: past the follow-up
        surv = predict_survival(fit, new[AFT], times, strata=strata)
    np.testing.assert_array_equal(
        surv.to_numpy().ravel(), _target_value(T.Survival(new[AFT], times, strata=strata), fit))
    np.testing.assert_array_equal(
        predict_quantile(fit, new[AFT], [0.1, 0.5, 0.9], strata=strata).to_numpy().ravel(),
        _target_value(T.Quantile(new[AFT], [0.1, 0.5, 0.9], strata=strata), fit))


def test_fine_gray_prediction_is_the_targets_value(golden):
    frames, _ = golden
    fit = fg_fit(frames, "fg_cengroup")
    new, times = frames["fg_new"], frames["fg_times"]["t"].to_numpy()
    with pytest.warns(LATE):                                # the last time is past them
        cif = predict_cumulative_incidence(fit, new, times)
    np.testing.assert_array_equal(
        cif.to_numpy().ravel(), _target_value(ci.targets.CumulativeIncidence(new, times), fit))
    np.testing.assert_array_equal(predict_risk(fit, new).to_numpy(),
                                  np.exp(predict_lp(fit, new).to_numpy()))


# ---------------------------------------------------------------- against lifelines

def test_cox_and_aft_predictions_are_lifelines_on_untied_data():
    """On untied data the baseline has no tie correction to choose: a ``fit_cox`` fit's
    survival is lifelines' ``predict_survival_function``; an AFT fit's survival and median
    are lifelines' (tightened: lifelines' optimiser stops earlier than ours)."""
    lifelines = pytest.importorskip("lifelines")
    rng = np.random.default_rng(35)
    n = 120
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.binomial(1, 0.4, n).astype(float)})
    df["T"] = rng.exponential(size=n) * np.exp(-0.5 * df["a"] + 0.4 * df["b"]) + 1e-3
    df["E"] = rng.binomial(1, 0.8, n)
    assert df["T"].is_unique
    new = pd.DataFrame({"a": [-1.0, 0.3, 1.1], "b": [1.0, 0.0, 1.0]}, index=["u", "v", "w"])
    # lifelines interpolates its step functions linearly between its times: read at them
    events = np.sort(df.loc[df["E"] == 1, "T"].to_numpy())
    times = events[[5, 40, 80]]
    cph = lifelines.CoxPHFitter().fit(df, "T", "E", fit_options={"precision": 1e-12})
    fit = ci.fit_cox(df[["a", "b"]], df["T"], df["E"])
    want = cph.predict_survival_function(new, times=times).T
    got = predict_survival(fit, new, times)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-8)
    assert list(got.index) == list(want.index)
    tight = {"ftol": 1e-14, "maxiter": 1000}
    aft = lifelines.WeibullAFTFitter().fit(df, "T", "E", fit_options=tight)
    afit = ci.fit_aft(df[["a", "b"]], df["T"], df["E"])
    np.testing.assert_allclose(predict_survival(afit, new, times).to_numpy(),
                               aft.predict_survival_function(new, times=times).T.to_numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(predict_quantile(afit, new).to_numpy(),
                               aft.predict_median(new).to_numpy(), rtol=1e-6)

"""``ci.calibration`` against riskRegression's plotCalibration (issue 46 item 5).

Fixtures: tests/fixtures/r_calibration/CASE_calibration.csv, written by
tests/r/calibration_reference.R (its header) from the data of tests/fixtures/r_evaluate
(Cox on GBSG2 and rossi, Fine-Gray on a simulated competing-risks set): R's risks at the
time, its quantile frames (q = 10, 4) and its nearest-neighbour curve and bandwidth.
"""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.evaluation.calibration import calibration_frames

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "r_calibration"
DATA = HERE / "fixtures" / "r_evaluate"


def load(case, directory=FIX):
    ref = pd.read_csv(directory / f"{case}_calibration.csv")
    d = pd.read_csv(DATA / f"{case}_data.csv")
    return ref, d[d.split == "train"], d[d.split == "test"]


def frame(ref, name):
    return ref[ref.frame == name].value.to_numpy()


def _check(ref, p, test, tol):
    status = test.status if "status" in test else test.event
    t = frame(ref, "time")[0]
    for q in (10, 4):
        table, _, _ = calibration_frames(p, test.time, status, t, q=q)
        np.testing.assert_allclose(table.predicted, frame(ref, f"quantile{q}_pred"),
                                   rtol=0, atol=tol)
        np.testing.assert_allclose(table.observed, frame(ref, f"quantile{q}_obs"),
                                   rtol=0, atol=tol)
        assert table.n.sum() == len(test)
    _, curve, bw = calibration_frames(p, test.time, status, t)
    np.testing.assert_allclose(bw, frame(ref, "nne_bandwidth")[0], rtol=1e-12)
    np.testing.assert_allclose(curve.predicted, frame(ref, "nne_pred"), rtol=0, atol=1e-15)
    np.testing.assert_allclose(curve.observed, frame(ref, "nne_obs"), rtol=0, atol=tol)


@pytest.mark.parametrize("case", ["gbsg2", "rossi", "fg"])
def test_frames_on_r_risks_equal_plot_calibration(case):
    ref, _, test = load(case)
    _check(ref, frame(ref, "risk"), test, 1e-14)


@pytest.mark.parametrize("case", ["gbsg2", "rossi"])
def test_cox_calibration_equals_r(case):
    ref, train, test = load(case)
    covs = [c for c in train.columns if c not in ("time", "event", "split", "stratum")]
    fit = ci.fit_cox(train[covs], train.time, train.event)
    t = frame(ref, "time")[0]
    cal = ci.calibration(fit, test[covs], test.time, test.event, time=t)
    np.testing.assert_allclose(cal.table.predicted, frame(ref, "quantile10_pred"), atol=1e-8)
    np.testing.assert_allclose(cal.table.observed, frame(ref, "quantile10_obs"), atol=1e-12)
    np.testing.assert_allclose(cal.curve.observed, frame(ref, "nne_obs"), atol=1e-12)
    assert cal.bandwidth == pytest.approx(frame(ref, "nne_bandwidth")[0], rel=1e-10)
    fig = cal.plot()
    assert len(fig.axes) == 1 and fig.axes[0].get_xlabel().startswith("predicted risk")


def test_fine_gray_calibration_equals_r():
    ref, train, test = load("fg")
    covs = [c for c in train.columns if c not in ("time", "status", "split")]
    fit = ci.fit_fine_gray(train[covs], train.time, train.status, cause=1)
    t = frame(ref, "time")[0]
    cal = ci.calibration(fit, test[covs], test.time, test.status, time=t)
    np.testing.assert_allclose(cal.table.predicted, frame(ref, "quantile10_pred"), atol=1e-6)
    np.testing.assert_allclose(cal.table.observed, frame(ref, "quantile10_obs"), atol=1e-12)
    assert cal.cause == 1


def test_refusals():
    _, train, test = load("gbsg2")
    covs = [c for c in train.columns if c not in ("time", "event", "split")]
    fit = ci.fit_cox(train[covs], train.time, train.event)
    with pytest.raises(ci.InputError):
        ci.calibration(fit, test[covs], test.time, test.event, time=1e6)
    with pytest.raises(ci.InputError, match="not distinct"):
        calibration_frames(np.r_[np.zeros(50), np.ones(5)], np.arange(55.0) + 1,
                           np.ones(55), 20.0, q=10)


@pytest.mark.needs_r
def test_live_r(tmp_path):
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not found")
    subprocess.run(["Rscript", str(HERE / "r" / "calibration_reference.R"), str(DATA),
                    str(tmp_path), "rossi"], check=True, capture_output=True, cwd=tmp_path)
    ref, _, test = load("rossi", tmp_path)
    _check(ref, frame(ref, "risk"), test, 1e-14)


def test_report_has_calibration_section():
    from coxinfluence.report import build_report
    ref, train, test = load("rossi")
    covs = [c for c in train.columns if c not in ("time", "event", "split")]
    fit = ci.fit_cox(train[covs], train.time, train.event)
    cal = ci.calibration(fit, test[covs], test.time, test.event, time=frame(ref, "time")[0])
    res = ci.influence(fit, method="vif")
    html = build_report(res, checks=False, calibration=cal)
    assert "<h2>Calibration on the test set</h2>" in html
    assert "calibration plot" in html and f"{cal.table.predicted.iloc[-1]:.4f}" in html
    assert "Calibration on the test set" not in build_report(res, checks=False)

"""``coxinfluence audit``'s smaller defects of issue 44 (item 7): the report's "Their data"
for (start, stop] data with ``--id``; string cause labels (``--cause ltx``); an event
column coded 1/2 (R's ``Surv``) named as such, and the CSV's rows named as rows; warnings
printed as one line."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from lifelines.datasets import load_stanford_heart_transplants
from test_cli_audit import report_tables, run

import coxinfluence as ci

HEART_COVS = ["age", "year", "surgery", "transplant"]


# ------------------------------------------------------------ a. "Their data" of subjects

def test_their_data_of_subjects_is_their_first_row(tmp_path, capsys):
    """(start, stop] rows with --id: each patient's covariates at entry (the row with the
    earliest start, wherever it is in the file) and the follow-up span from the first
    start to the last stop."""
    heart = load_stanford_heart_transplants()
    shuffled = heart.sample(frac=1.0, random_state=1)        # a patient's rows apart
    path, out = tmp_path / "heart.csv", tmp_path / "h.html"
    shuffled[["start", "stop", "event", "id"] + HEART_COVS].to_csv(path, index=False)
    code, _, err = run([str(path), "--start", "start", "--time", "stop", "--event", "event",
                        "--id", "id", "--covariates", *HEART_COVS, "--top", "8",
                        "--exact-max-n", "0", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    tables = report_tables(out)
    top, data = tables["Top 8 influential patients"], tables["Their data"]
    assert list(data.columns) == HEART_COVS
    assert list(data.index) == list(top.index)
    first = heart.sort_values("start", kind="stable").groupby("id").head(1).set_index("id")
    ids = data.index.astype(int)
    np.testing.assert_allclose(data.astype(float).to_numpy(),
                               first.loc[ids, HEART_COVS].to_numpy(), rtol=5e-4)
    # a patient with a transplant during follow-up enters without one
    several = heart.groupby("id").size()
    assert (several.loc[ids] > 1).any()
    assert (first.loc[ids[several.loc[ids].to_numpy() > 1], "transplant"] == 0).all()
    span = heart.groupby("id").agg(entry=("start", "min"), exit=("stop", "max"))
    np.testing.assert_allclose(top[["entry", "exit"]].astype(float).to_numpy(),
                               span.loc[ids].to_numpy())
    assert "covariates at entry (their first row); their follow-up from entry to exit" \
        in out.read_text()


# ------------------------------------------------------------ b. string cause labels

def _labelled_competing(n=160, seed=3):
    """Competing risks with R's transplant labels: censored, death, ltx."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.normal(50, 10, n).round(1),
                      "male": rng.integers(0, 2, n).astype(float)})
    t1 = rng.exponential(1 / np.exp(0.03 * (X["age"] - 50) + 0.4 * X["male"]))
    t2, cens = rng.exponential(2.0, n), rng.exponential(3.0, n)
    time = np.minimum.reduce([t1, t2, cens]).round(3) + 0.001
    label = np.select([t1 <= np.minimum(t2, cens), t2 <= cens], ["ltx", "death"], "censored")
    return X.assign(futime=time, event=label)


def test_cause_label_is_matched_in_a_status_column_of_labels(tmp_path, capsys):
    d = _labelled_competing()
    path, out = tmp_path / "transplant.csv", tmp_path / "t.html"
    d.to_csv(path, index=False)
    code, stdout, err = run([str(path), "--time", "futime", "--status", "event", "--cause",
                             "ltx", "--covariates", "age", "male", "--exact-max-n", "0",
                             "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    # labels coded: censored 0 (the default --cencode), the others 1, 2 in sorted order
    assert "censored = 0, death = 1, ltx = 2" in stdout
    status = d["event"].map({"censored": 0, "death": 1, "ltx": 2})
    fit = ci.fit_fine_gray(d[["age", "male"]], d["futime"], status, cause=2)
    model = report_tables(out)["Model"]
    np.testing.assert_allclose(model["coef"].astype(float), fit.coef, rtol=5e-4)
    assert f"{int((status == 2).sum())} failures of cause 2" in stdout


def test_cause_label_not_in_the_column_names_the_labels(tmp_path, capsys):
    d = _labelled_competing()
    path = tmp_path / "transplant.csv"
    d.to_csv(path, index=False)
    code, _, err = run([str(path), "--time", "futime", "--status", "event", "--cause", "lt",
                        "--no-progress", "--out", str(tmp_path / "t.html")], capsys)
    assert code == 2
    assert err.count("\n") == 1 and "usage" not in err, err
    assert ("--cause lt is not a cause in the status column 'event': its labels are "
            "'censored', 'death', 'ltx'") in err
    code, _, err = run([str(path), "--time", "futime", "--status", "event", "--cause", "ltx",
                        "--cencode", "cens", "--no-progress",
                        "--out", str(tmp_path / "t.html")], capsys)
    assert code == 2 and "--cencode cens is not a label of the status column 'event'" in err
    numeric = d.assign(event=d["event"].map({"censored": 0, "death": 1, "ltx": 2}))
    numeric.to_csv(path, index=False)
    code, _, err = run([str(path), "--time", "futime", "--status", "event", "--cause", "ltx",
                        "--no-progress", "--out", str(tmp_path / "t.html")], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "--cause ltx is not a code of the status column 'event': its causes are 1, 2" in err


def test_cause_label_in_the_test_file(tmp_path, capsys):
    """--test with the same labels: the Brier score of the cause, as ci.influence computes
    it with the codes."""
    d = _labelled_competing(200, seed=4)
    train, test = d.iloc[:150], d.iloc[150:]
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    code, stdout, err = run([str(tmp_path / "train.csv"), "--time", "futime", "--status",
                             "event", "--cause", "ltx", "--covariates", "age", "male",
                             "--test", str(tmp_path / "test.csv"), "--target", "brier:0.5",
                             "--method", "vif", "--exact-max-n", "0", "--no-progress",
                             "--out", str(tmp_path / "t.html")], capsys)
    assert code == 0, err
    codes = {"censored": 0, "death": 1, "ltx": 2}
    fit = ci.fit_fine_gray(train[["age", "male"]], train["futime"],
                           train["event"].map(codes), cause=2)
    brier = ci.targets.BrierScore(test[["age", "male"]], test["futime"],
                                  test["event"].map(codes), [0.5], cause=2)
    value = brier.value(fit, fit.coef[None, :])[0, 0]
    assert f"= {value:.4g}" in stdout, stdout


# ------------------------------------------------------------ c. 1/2 coding, CSV rows

def _small_cox(n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    return pd.DataFrame({"pid": [f"p{i}" for i in range(n)], "x": x,
                         "z": rng.normal(size=n),
                         "time": rng.exponential(1 / np.exp(0.5 * x)).round(3) + 0.01,
                         "event": (rng.random(n) < 0.7).astype(int)})


def test_one_two_event_coding_is_named_as_rs(tmp_path, capsys):
    d = _small_cox()
    path = tmp_path / "d.csv"
    d.assign(status=d["event"] + 1).drop(columns="event").to_csv(path, index=False)
    for model in ([], ["--model", "weibull"]):
        code, _, err = run([str(path), "--time", "time", "--event", "status", "--id", "pid",
                            *model, "--no-progress", "--out", str(tmp_path / "r.html")],
                           capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert ("the event column 'status' is coded 1/2 (as R's Surv: 1 = censored, "
                "2 = event?); recode as 0/1") in err
        assert "index label" not in err
    # the library says it too, for Cox and AFT
    for fit in (ci.fit_cox, lambda X, t, e: ci.fit_aft(X, t, e, "weibull")):
        with pytest.raises(ci.InputError, match=r"coded 1/2 \(as R's Surv: 1 = censored, "
                                                r"2 = event\?\); recode as 0/1"):
            fit(d[["x", "z"]], d["time"], d["event"] + 1)


def test_rows_at_fault_are_named_as_rows_of_the_csv(tmp_path, capsys):
    d = _small_cox()
    d.loc[[3, 7], "event"] = 3                       # data rows 4 and 8
    path = tmp_path / "d.csv"
    d.drop(columns="pid").to_csv(path, index=False)
    code, _, err = run([str(path), "--time", "time", "--event", "event", "--no-progress",
                        "--out", str(tmp_path / "r.html")], capsys)
    assert code == 2 and "index label" not in err, err
    assert "event must be 0/1 (1 = event, 0 = censored); other values in 2 row(s) (data " \
        "row(s) 4, 8 of d.csv, counted from 1: the first row below the header)" in err
    d.to_csv(path, index=False)
    code, _, err = run([str(path), "--time", "time", "--event", "event", "--id", "pid",
                        "--no-progress", "--out", str(tmp_path / "r.html")], capsys)
    assert code == 2 and "in 2 row(s) (pid 'p3', 'p7')" in err, err


# ------------------------------------------------------------ d. warnings on one line

def test_warnings_print_as_one_line(tmp_path, capsys):
    """A target time past the last event time is warned as "warning: <message>", without
    Python's file:line: Category: prefix and source line (the command run as a user runs
    it: pytest records warnings in-process); warnings.formatwarning is restored after
    main()."""
    d = _small_cox()
    path = tmp_path / "d.csv"
    d.drop(columns="pid").to_csv(path, index=False)
    proc = subprocess.run([sys.executable, "-m", "coxinfluence", "audit", str(path), "--time",
                           "time", "--event", "event", "--target", "survival:1000",
                           "--method", "vif", "--exact-max-n", "0", "--no-progress",
                           "--out", str(tmp_path / "r.html")],
                          capture_output=True, text=True, cwd=tmp_path)
    err = proc.stderr
    assert proc.returncode == 0, err
    lines = [ln for ln in err.splitlines() if "1000" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: S(t|x) at time 1000: past the "
                                                   "last event time"), err
    assert "Warning:" not in err and ".py:" not in err and "ci.influence(" not in err, err
    before = warnings.formatwarning
    code, _, err = run([str(tmp_path / "missing.csv"), "--time", "t", "--event", "e"], capsys)
    assert code == 2 and "data file not found" in err
    assert warnings.formatwarning is before

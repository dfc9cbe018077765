"""``coxinfluence audit --test TEST.csv --target brier:T1,T2 | ibs:... | auc:T | c[:uno]``
(issue 38, item 2) and ``--checks/--no-checks`` (issue 37, item 3): the CLI's numbers are
``ci.influence(fit, target=ci.targets.BrierScore(...))``'s, and the exact change of the
most influential patient equals a refit without it rescored by ``ci.evaluate`` (the
metric itself checked against R's ``riskRegression::Score`` in the evaluation tests)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from lifelines.datasets import load_gbsg2
from test_cli_audit import report_tables, run

import coxinfluence as ci
from coxinfluence import cli

COVS = ["age", "tsize", "pnodes", "progrec"]
TIMES = [500.0, 1000.0]


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """A small training file (rows 1..n) and a test file from GBSG2."""
    g = load_gbsg2()[COVS + ["time", "cens"]]
    train = g.iloc[:140].reset_index(drop=True)
    test = g.iloc[300:420].reset_index(drop=True)
    d = tmp_path_factory.mktemp("metrics")
    train.to_csv(d / "train.csv", index=False)
    test.to_csv(d / "test.csv", index=False)
    test.drop(columns=["pnodes"]).to_csv(d / "test_bad.csv", index=False)
    return d, train, test


def _args(d, *extra):
    return [str(d / "train.csv"), "--time", "time", "--event", "cens", "--no-progress",
            "--out", str(d / "r.html"), *extra]


def test_brier_target_end_to_end_equals_python_and_a_refit(split, capsys):
    d, train, test = split
    code, out, err = run(_args(d, "--test", str(d / "test.csv"), "--target",
                               "brier:500,1000", "--method", "exact"), capsys)
    assert code == 0, err
    train.index = pd.RangeIndex(1, len(train) + 1)     # the CLI's row labels
    X, Xt = train[COVS].astype(float), test[COVS].astype(float)
    fit = ci.fit_cox(X, train["time"], train["cens"])
    target = ci.targets.BrierScore(Xt, test["time"], test["cens"], TIMES)
    res = ci.influence(fit, target=target, method="exact")
    tables = report_tables(d / "r.html")
    table = tables["Top 10 by the change of the target brier_score"]
    cols = ["brier(500)", "brier(1000)"]
    labels = [int(i) for i in table.index]
    np.testing.assert_allclose(table[cols].apply(pd.to_numeric).to_numpy(),
                               res.loo_change.loc[labels, cols].to_numpy(), rtol=5.01e-4)
    # the summary's value on the full data: ci.evaluate's Brier scores
    ev = ci.evaluate(fit, Xt, test["time"], test["cens"], times=TIMES)
    brier = ev[ev["metric"] == "brier"].set_index("time")["estimate"]
    line = next(s for s in out.splitlines() if s.startswith("Target brier_score"))
    assert line == (f"Target brier_score on the full data: brier(500) = {brier[500]:.4g}, "
                    f"brier(1000) = {brier[1000]:.4g}")
    # the most influential patient's change: refit without it and rescore
    top = labels[0]
    keep = X.index != top
    refit = ci.fit_cox(X[keep], train["time"][keep], train["cens"][keep])
    ev2 = ci.evaluate(refit, Xt, test["time"], test["cens"], times=TIMES)
    brier2 = ev2[ev2["metric"] == "brier"].set_index("time")["estimate"]
    np.testing.assert_allclose(res.loo_change.loc[top, cols].to_numpy(),
                               (brier2 - brier).to_numpy(), rtol=1e-8, atol=1e-13)
    assert "<h2>Model checks</h2>" in (d / "r.html").read_text()


@pytest.mark.parametrize("spec, name, metric, time", [
    ("c:uno", "concordance", "c_uno", None),
    ("auc:1000", "time_dependent_auc", "auc", 1000.0)])
def test_other_metrics_run(split, capsys, spec, name, metric, time):
    """The summary's value on the full data is ``ci.evaluate``'s; ``--no-checks`` leaves the
    report's Model checks out."""
    d, train, test = split
    code, out, err = run(_args(d, "--test", str(d / "test.csv"), "--target", spec,
                               "--method", "vif", "--exact-max-n", "0", "--no-checks"),
                         capsys)
    assert code == 0, err
    fit = ci.fit_cox(train[COVS].astype(float), train["time"], train["cens"])
    ev = ci.evaluate(fit, test[COVS].astype(float), test["time"], test["cens"],
                     times=[1000.0])
    row = ev[ev["metric"] == metric]
    if time is not None:
        row = row[row["time"] == time]
    line = next(s for s in out.splitlines() if s.startswith(f"Target {name} "))
    assert line.endswith(f" = {float(row['estimate'].iloc[0]):.4g}")
    assert "Model checks" not in (d / "r.html").read_text()


@pytest.mark.parametrize("extra, message", [
    (["--target", "brier:500"], "--target brier:500 is a metric of test patients: give "
                                "--test"),
    (["--test", "test_bad.csv", "--target", "brier:500"], "lacks column(s) ['pnodes']"),
    (["--test", "test.csv", "--target", "coef"], "--test applies to the test metrics"),
    (["--test", "test.csv", "--target", "c:foo"], "--target must be"),
    (["--test", "test.csv", "--target", "brier:5000"], "beyond the test set's follow-up"),
])
def test_bad_input_is_refused_in_one_line(split, capsys, extra, message):
    d, _, _ = split
    extra = [str(d / e) if e.endswith(".csv") else e for e in extra]
    code = cli.main(["audit", *_args(d, *extra)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and message in err


def test_fine_gray_has_no_concordance(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame({"x": rng.normal(size=n), "t": rng.exponential(size=n) + 0.01,
                       "s": rng.choice([0, 1, 2], size=n)})
    df.to_csv(tmp_path / "fg.csv", index=False)
    code = cli.main(["audit", str(tmp_path / "fg.csv"), "--time", "t", "--status", "s",
                     "--cause", "1", "--test", str(tmp_path / "fg.csv"), "--target", "c",
                     "--out", str(tmp_path / "r.html"), "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 2 and "not defined for a Fine-Gray model" in err


def test_fine_gray_brier_reads_the_cause(tmp_path, capsys):
    """Fine-Gray: ``--target brier`` is the cause's Brier score (``cause=`` from the
    family's entry), its changes ``ci.influence(fit, target=BrierScore(..., cause=1))``'s."""
    rng = np.random.default_rng(1)
    n = 160
    df = pd.DataFrame({"x": rng.normal(size=n), "z": rng.binomial(1, 0.5, n)})
    df["t"] = (rng.exponential(size=n) * np.exp(-0.5 * df["x"])).round(3) + 0.01
    df["s"] = rng.choice([0, 1, 2], size=n, p=[0.3, 0.4, 0.3])
    train, test = df.iloc[:100].reset_index(drop=True), df.iloc[100:]
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "r.html"
    code, stdout, err = run([str(tmp_path / "train.csv"), "--time", "t", "--status", "s",
                             "--cause", "1", "--test", str(tmp_path / "test.csv"),
                             "--target", "brier:0.3,0.6", "--method", "vif",
                             "--exact-max-n", "0", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    train.index = pd.RangeIndex(1, len(train) + 1)      # the CLI's row labels
    X = train[["x", "z"]].astype(float)
    fit = ci.fit_fine_gray(X, train["t"], train["s"], cause=1)
    target = ci.targets.BrierScore(test[["x", "z"]].astype(float), test["t"], test["s"],
                                   [0.3, 0.6], cause=1)
    res = ci.influence(fit, target=target, method="vif")
    table = report_tables(out)["Top 10 by the change of the target brier_score"]
    cols = ["brier(0.3)", "brier(0.6)"]
    labels = [int(i) for i in table.index]
    np.testing.assert_allclose(table[cols].apply(pd.to_numeric).to_numpy(),
                               res.loo_change.loc[labels, cols].to_numpy(), rtol=5.01e-4)

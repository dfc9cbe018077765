"""``coxinfluence audit --model cause-specific`` and ``--model multistate`` (issue 47, item
4): the command line's fit and audit are those of the Python API on the same data, number
for number (the audits the command runs are captured and compared exactly with
``ci.influence`` of ``ci.fit_cause_specific`` / ``ci.fit_multistate``; the printed summary
is those numbers formatted), and the options that do not apply are refused with one line.

Data: the first 200 rows of R's ``pbc`` as ``tests/r/cause_specific_reference.R`` wrote
them (cause 1 transplant, cause 2 death) and the simulated illness-death set of
``tests/r/multistate_reference.R`` (150 subjects, 217 rows; delayed entry, tied times)."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli_audit import _num, assert_top_table_is, report_tables, run

import coxinfluence as ci

FIXTURES = Path(__file__).parent / "fixtures"
PBC = pd.read_csv(FIXTURES / "r_cause_specific" / "data_pbc.csv").iloc[:200]
SIM = pd.read_csv(FIXTURES / "r_multistate" / "data_sim.csv")


def _labelled(df):
    """``df`` labelled as the command line labels rows without ``--id``: 1, 2, ..."""
    df = df.reset_index(drop=True)
    df.index = pd.RangeIndex(1, len(df) + 1, name="row")
    return df


@pytest.fixture
def captured(monkeypatch):
    """Every ``ci.influence`` result the command computes, in order."""
    results = []
    original = ci.influence

    def influence(*args, **kwargs):
        res = original(*args, **kwargs)
        results.append(res)
        return res

    monkeypatch.setattr(ci, "influence", influence)
    return results


def _assert_same_audit(cli, api):
    """The command's audit is the API's, exactly."""
    np.testing.assert_array_equal(np.asarray(cli.fit.coef), np.asarray(api.fit.coef))
    pd.testing.assert_frame_equal(cli.loo_change, api.loo_change, check_exact=True)
    pd.testing.assert_frame_equal(cli.theta_change, api.theta_change, check_exact=True)
    pd.testing.assert_series_equal(cli.likelihood_displacement, api.likelihood_displacement,
                                   check_exact=True)
    pd.testing.assert_frame_equal(cli.flags, api.flags, check_exact=True)
    assert cli.target.columns(cli.fit) == api.target.columns(api.fit)


def _printed(stdout, start):
    line = next(ln for ln in stdout.splitlines() if ln.startswith(start))
    return line.split(": ", 1)[1]


def _top_line(res, by=None):
    top = res.top(5, by=by)
    column = "likelihood_displacement" if by is None else "target_influence"
    return ", ".join(f"{i} ({v:.4g}{'*' if ok else ''})" for i, v, ok in
                     zip(top.index, top[column], res.verified.loc[top.index]))


# ------------------------------------------------------------------- cause-specific

def test_cause_specific_audit_is_the_python_apis(tmp_path, capsys, captured):
    """``--model cause-specific --status status --cause 2 --target absolute-risk:1000,2000``
    fits ``ci.fit_cause_specific`` and audits ``AbsoluteRisk`` of the covariate means for
    cause 2: the audit, the printed summary and the report's tables are the API's."""
    df = _labelled(PBC[["time", "status", "age", "logbili"]])
    path = tmp_path / "pbc.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "cs.html"
    code, stdout, err = run([str(path), "--time", "time", "--status", "status", "--model",
                             "cause-specific", "--cause", "2", "--target",
                             "absolute-risk:1000,2000", "--exact-max-n", "0", "--no-progress",
                             "--out", str(out)], capsys)
    assert code == 0, err
    X = df[["age", "logbili"]]
    fit = ci.fit_cause_specific(X, df["time"], df["status"])
    mean = X.mean().to_frame("mean").T
    target = ci.targets.AbsoluteRisk(mean, [1000, 2000], cause=2)
    api = ci.influence(fit, df, target=target)
    assert captured[0].method == "auto" and captured[0].fit.cause == 2
    _assert_same_audit(captured[0], api)
    assert list(api.loo_change.columns) == ["F2(1000|mean)", "F2(2000|mean)"]
    risk = fit.predict_absolute_risk(mean, [1000, 2000], cause=2).to_numpy().ravel()
    assert _printed(stdout, "Target absolute_risk on the full data") == \
        f"F2(1000|mean) = {risk[0]:.4g}, F2(2000|mean) = {risk[1]:.4g}"
    assert _printed(stdout, "Most influential patients") == _top_line(api)
    assert _printed(stdout, "Largest changes of absolute_risk") == _top_line(api, "target")
    assert stdout.startswith("cause-specific Cox models for causes [1, 2]: 200 patients")
    tables = report_tables(out)
    assert_top_table_is(tables, api)
    model = _num(tables["Model"])
    want = fit.summary(robust=False)
    np.testing.assert_allclose(model["coef"], want["coef"], rtol=5.01e-4)


def test_cause_specific_labels_strata_weights_entry_and_subjects(tmp_path, capsys, captured):
    """A status column of labels (``--cencode alive``, ``--cause death``), ``--strata``,
    ``--weights``, ``--start`` (delayed entry) and ``--id`` (the audit by subject) reach
    ``ci.fit_cause_specific`` as the API takes them: labels coded 1, 2, ... in sorted order
    (death = 1, transplant = 2); the default target ``coef``."""
    df = PBC[["time", "status", "age", "logbili", "edema", "entry", "w"]].copy()
    df["status"] = df["status"].map({0: "alive", 1: "transplant", 2: "death"})
    df["pid"] = [f"p{k:03d}" for k in range(len(df))]
    path = tmp_path / "pbc.csv"
    df.to_csv(path, index=False)
    code, stdout, err = run([str(path), "--time", "time", "--status", "status", "--model",
                             "cause-specific", "--cencode", "alive", "--cause", "death",
                             "--covariates", "age", "logbili", "--strata", "edema",
                             "--weights", "w", "--start", "entry", "--id", "pid",
                             "--exact-max-n", "0", "--no-progress",
                             "--out", str(tmp_path / "r.html")], capsys)
    assert code == 0, err
    df.index = pd.RangeIndex(1, len(df) + 1, name="row")
    status = df["status"].map({"alive": 0, "death": 1, "transplant": 2})
    fit = ci.fit_cause_specific(df[["age", "logbili"]], df["time"], status,
                                strata=df[["edema"]], weights=df["w"], entry=df["entry"],
                                id=df["pid"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = ci.influence(fit, df)
    cli = captured[0]
    assert cli.fit.cause == 1
    _assert_same_audit(cli, api)
    assert list(cli.loo_change.index[:2]) == ["p000", "p001"]
    assert "Labels of the outcome column as the model's codes: alive = 0, death = 1, " \
           "transplant = 2." in stdout


def test_cause_specific_test_metric_is_the_python_apis(tmp_path, capsys, captured):
    """``--test TEST.csv --target brier:1000,2000``: each training patient's change of the
    test set's Brier score of the absolute risk of ``--cause`` (``ci.targets.BrierScore``
    with ``cause=``), as the API computes it."""
    full = pd.read_csv(FIXTURES / "r_cause_specific" / "data_pbc.csv")
    columns = ["time", "status", "age", "logbili"]
    train, test = _labelled(PBC[columns]), full[columns].iloc[200:]
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    code, stdout, err = run([str(tmp_path / "train.csv"), "--time", "time", "--status",
                             "status", "--model", "cause-specific", "--cause", "2",
                             "--target", "brier:1000,2000", "--test",
                             str(tmp_path / "test.csv"), "--method", "vif", "--exact-max-n",
                             "0", "--no-progress", "--out", str(tmp_path / "r.html")], capsys)
    assert code == 0, err
    X = train[["age", "logbili"]]
    fit = ci.fit_cause_specific(X, train["time"], train["status"])
    test.index = [f"test {k}" for k in range(1, len(test) + 1)]
    target = ci.targets.BrierScore(test[["age", "logbili"]], test["time"].astype(float),
                                   test["status"], [1000, 2000], cause=2)
    # the cause of a cause-specific fit's test metrics: ci.influence's cause= (the fit's)
    api = ci.influence(fit, train, target=target, method="vif", cause=2)
    _assert_same_audit(captured[0], api)
    assert np.abs(api.loo_change.to_numpy()).max() > 0


# ------------------------------------------------------------------- multi-state

def test_multistate_audit_is_the_python_apis(tmp_path, capsys, captured):
    """``--model multistate --start tstart --time tstop --state state --id id --target
    state-probability:5,10 --state-of-interest 2``: ``ci.fit_multistate`` and the audit of
    ``StateProbability`` of the covariate means for state "2", by subject, as the API."""
    path = tmp_path / "sim.csv"
    SIM.to_csv(path, index=False)
    out = tmp_path / "ms.html"
    code, stdout, err = run([str(path), "--model", "multistate", "--start", "tstart",
                             "--time", "tstop", "--state", "state", "--id", "id", "--target",
                             "state-probability:5,10", "--state-of-interest", "2",
                             "--exact-max-n", "0", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    df = _labelled(SIM)
    X = df[["x1", "x2"]]
    fit = ci.fit_multistate(X, df["tstart"], df["tstop"], df["state"], df["id"])
    mean = X.mean().to_frame("mean").T
    api = ci.influence(fit, df, target=ci.targets.StateProbability(mean, [5, 10], state="2"))
    _assert_same_audit(captured[0], api)
    assert list(api.loo_change.columns) == ["P(2,5|mean)", "P(2,10|mean)"]
    p = fit.predict_state_probabilities(mean, [5, 10])["2"].to_numpy()
    assert _printed(stdout, "Target state_probability on the full data") == \
        f"P(2,5|mean) = {p[0]:.4g}, P(2,10|mean) = {p[1]:.4g}"
    assert _printed(stdout, "Most influential patients") == _top_line(api)
    assert stdout.startswith("Markov multi-state Cox model")
    assert "150 patients (217 rows)" in stdout.splitlines()[0]
    assert_top_table_is(report_tables(out), api)


def test_multistate_labels_initial_states_weights_strata_and_every_state(tmp_path, capsys,
                                                                        captured):
    """A state column of labels (censored rows "censored", found without ``--cencode``),
    ``--initial-state istate`` (R's istate: each row's state at its start), ``--weights``
    and ``--strata``, as ``fit_multistate`` takes them; without ``--state-of-interest`` the
    target is every state's probability (R's pstate), of the covariate means once per
    stratum."""
    df = SIM.copy()
    df["state"] = df["state"].map({0: "censored", 1: "ill", 2: "dead"})
    df["istate"] = np.where(df["id"].duplicated(), "ill", "healthy")
    df["w"] = np.where(df["x2"] == 1, 2.0, 1.0)
    df["site"] = np.where(df["id"] % 2 == 0, "A", "B")
    path = tmp_path / "sim.csv"
    df.to_csv(path, index=False)
    code, stdout, err = run([str(path), "--model", "multistate", "--start", "tstart",
                             "--time", "tstop", "--state", "state", "--id", "id",
                             "--initial-state", "istate", "--weights", "w", "--strata", "site",
                             "--target", "state-probability:8", "--method", "vif",
                             "--exact-max-n", "0", "--no-progress",
                             "--out", str(tmp_path / "r.html")], capsys)
    assert code == 0, err
    df = _labelled(df)
    X = df[["x1", "x2"]]
    state = pd.Series(pd.Categorical(df["state"], ["censored", "dead", "ill"]),
                      index=df.index)
    fit = ci.fit_multistate(X, df["tstart"], df["tstop"], state, df["id"], weights=df["w"],
                            strata=df[["site"]], istate=df["istate"])
    assert fit.states == ["healthy", "dead", "ill"]
    means = pd.concat([X.mean().to_frame("mean").T] * 2)
    means.index = ["mean, stratum A", "mean, stratum B"]
    target = ci.targets.StateProbability(means, [8], strata=["A", "B"])
    api = ci.influence(fit, df, target=target, method="vif")
    _assert_same_audit(captured[0], api)
    assert api.loo_change.columns[:3].tolist() == [
        "P(healthy,8|mean, stratum A)", "P(dead,8|mean, stratum A)",
        "P(ill,8|mean, stratum A)"]
    assert "initial_state = istate" in stdout


# ------------------------------------------------------------------- refusals

def _status_data():
    rng = np.random.default_rng(0)
    n = 60
    return pd.DataFrame({"x": rng.normal(size=n), "t": rng.exponential(size=n).round(3) + 0.01,
                         "e": rng.integers(0, 2, n), "s": rng.integers(0, 3, n), "w": 1.0,
                         "g": np.arange(n) % 4})


CS = ["--time", "t", "--model", "cause-specific", "--status", "s"]
MS = ["--model", "multistate", "--start", "tstart", "--time", "tstop", "--state", "state",
      "--id", "id"]


@pytest.mark.parametrize("data, extra, message", [
    ("status", ["--time", "t", "--model", "cause-specific"],
     "--time and --status are required with a data file"),
    ("status", CS + ["--event", "e"],
     "--event (cause-specific models read --status: 0 censored, 1, 2, ... the causes) does "
     "not apply to cause-specific Cox models"),
    ("status", CS + ["--cengroup", "g"], "--cengroup (crr's censoring groups: cause-specific "
                                         "Cox models have no censoring weights) does not apply"),
    ("status", CS + ["--cause", "4"], "--cause 4: no events of that cause in the status "
                                      "column; the causes are [1, 2] (0 = censored)"),
    ("status", CS + ["--target", "state-probability:1"],
     "--target state-probability:1 applies to --model multistate, not to cause-specific "
     "Cox models"),
    ("status", CS + ["--target", "c", "--test", "d.csv"],
     "--target c (the concordance of a survival prediction) is not defined for "
     "cause-specific models"),
    ("status", CS + ["--state", "e"],
     "--state does not apply to cause-specific Cox models (it is read by --model multistate)"),
    ("status", ["--time", "t", "--event", "e", "--state-of-interest", "1"],
     "--state-of-interest does not apply to the cox model (it is read by --model "
     "multistate)"),
    ("status", ["--time", "t", "--model", "weibull", "--event", "e", "--target",
                "absolute-risk:1"],
     "--target absolute-risk:1 applies to --model cause-specific, not to a weibull AFT "
     "model"),
    ("sim", ["--model", "multistate", "--time", "tstop", "--state", "state", "--id", "id"],
     "--model multistate needs --start: rows (--start, --time] of subjects (--id)"),
    ("sim", ["--model", "multistate", "--start", "tstart", "--time", "tstop", "--state",
             "state"], "--model multistate needs --id"),
    ("status", ["--time", "t", "--event", "e", "--initial-state", "s"],
     "--initial-state does not apply to the cox model (it is read by --model multistate)"),
    ("sim", MS + ["--cluster", "x2"], "--cluster (a multi-state model's units are its "
                                      "subjects, --id) does not apply"),
    ("sim", MS + ["--event", "state"], "--event (a multi-state model reads --state"),
    ("sim", MS + ["--status", "state"], "--model multistate and --status conflict"),
    ("sim", MS + ["--state-of-interest", "2"],
     "--state-of-interest applies to --target state-probability:T1,..., not --target coef"),
    ("sim", MS + ["--target", "absolute-risk:5"],
     "--target absolute-risk:5 applies to --model cause-specific, not to a multi-state "
     "model"),
    ("sim", MS + ["--target", "cif:5"],
     "target 'cumulative_incidence' is not available for this model"),
    ("sim", MS + ["--target", "state-probability:5", "--state-of-interest", "nope"],
     "unknown state(s) ['nope']; the fit's states: ['(s0)', '1', '2']"),
    ("sim", MS + ["--cencode", "x"], "--cencode x applies to a state column of labels; "
                                     "'state' holds numbers (0 = censored)"),
])
def test_options_that_do_not_apply_are_refused(tmp_path, capsys, data, extra, message):
    df = _status_data() if data == "status" else SIM
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    covariates = ["x"] if data == "status" else ["x1", "x2"]
    extra = [str(path) if a == "d.csv" else a for a in extra]      # --test: the same file
    code, stdout, err = run([str(path), "--covariates", *covariates, "--no-progress",
                             "--out", str(tmp_path / "r.html"), *extra], capsys)
    assert code == 2, err
    assert message in err, err
    assert err.strip().count("\n") == 0
    assert not (tmp_path / "r.html").exists()


def test_without_model_the_status_still_means_fine_gray():
    """``--status`` with ``--cause`` and no ``--model`` stays the Fine-Gray model; with
    ``--model cause-specific`` the cause-specific models, with or without ``--cause``."""
    from coxinfluence.cli import build_parser
    from coxinfluence.cli.family_registry import choose_family

    def family(*argv):
        return choose_family(build_parser().parse_args(["audit", "d.csv", *argv])).name

    assert family("--status", "s", "--cause", "1") == "fine_gray"
    assert family("--status", "s", "--cause", "1", "--model", "cause-specific") == \
        "cause_specific"
    assert family("--status", "s", "--model", "cause-specific") == "cause_specific"
    assert family("--model", "multistate", "--start", "a", "--id", "i") == "multistate"
    assert family() == "cox"


def test_the_help_names_the_new_families_and_targets(capsys, monkeypatch):
    from coxinfluence import cli
    monkeypatch.setenv("COLUMNS", "2000")           # argparse: no line breaks at hyphens
    with pytest.raises(SystemExit):
        cli.main(["audit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("cause-specific: a Cox model per cause of --status",
                  "multistate: a Markov multi-state Cox model",
                  "absolute-risk:T1,T2,...", "state-probability:T1,T2,...",
                  "--state-of-interest", "--initial-state"):
        assert words in text, words
    assert re.search(r"--state STATE\s", text)

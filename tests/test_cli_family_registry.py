"""The command line reads a table of families (issue 34, item 2): a family registered in
:mod:`coxinfluence.cli.family_registry` by a test, a tiny wrapper around an existing fitter,
is audited by ``coxinfluence audit --model <its name>`` without touching a package file;
its numbers are checked against statsmodels (an independent Cox implementation with
Breslow's ties). The generic CLI modules name no family and probe nothing."""
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli_audit import _num, report_tables, run

import coxinfluence as ci
from coxinfluence.cli import build_parser
from coxinfluence.cli import family_registry as fr

CLI = Path(ci.__file__).parent / "cli"
FIX = Path(__file__).parent / "fixtures" / "integration" / "gbsg2_subset.csv"
COVS = ["age", "tsize", "pnodes"]


def _breslow_cox(data, args):
    """The test's family: a Cox model with Breslow's ties, whatever ``--ties`` says."""
    return ci.fit_cox(data.X, data.time, data.outcome, weights=data.weights, ties="breslow")


@pytest.fixture
def breslow_family():
    family = fr.register_cli_family(fr.CliFamily(
        "test_breslow_cox", _breslow_cox, models=("breslowcox",),
        help="breslowcox: a test's Cox model with Breslow's ties",
        words=lambda args: "the test's Breslow Cox model",
        refused={"ties": "--ties (its ties are Breslow's)", "strata": "--strata"}))
    yield family
    fr.CLI_FAMILIES.pop(family.name)


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    """80 rows of the GBSG2 subset with times rounded to 100 days (many ties, so Breslow's
    and Efron's partial likelihoods differ), labelled 1..n as the CLI labels rows."""
    df = pd.read_csv(FIX).iloc[:80].copy()
    df["time"] = (df["time"] / 100).round() * 100 + 50
    path = tmp_path_factory.mktemp("tied") / "tied.csv"
    df[["time", "cens"] + COVS].to_csv(path, index=False)
    df.index = pd.RangeIndex(1, len(df) + 1)
    return df, path


def _statsmodels_breslow(df):
    """(coef, per-row exact likelihood displacement 2 [l(b) - l(b_{-i})]) by statsmodels'
    PHReg (Breslow ties), refitted without each row."""
    from statsmodels.duration.hazard_regression import PHReg

    def fit(d):
        m = PHReg(d["time"].to_numpy(), d[COVS].to_numpy(float), status=d["cens"].to_numpy(),
                  ties="breslow")
        return m.fit(disp=False, tol=1e-12).params

    full = PHReg(df["time"].to_numpy(), df[COVS].to_numpy(float), status=df["cens"].to_numpy(),
                 ties="breslow")
    beta = fit(df)
    ld = [2 * (full.loglike(beta) - full.loglike(fit(df.drop(index=i)))) for i in df.index]
    return beta, pd.Series(ld, index=df.index)


def test_a_family_registered_by_a_test_is_audited_from_the_command_line(
        breslow_family, tied, tmp_path, capsys):
    df, path = tied
    out = tmp_path / "r.html"
    code, stdout, err = run([str(path), "--model", "breslowcox", "--time", "time", "--event",
                             "cens", "--covariates", *COVS, "--method", "exact",
                             "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    beta, ld = _statsmodels_breslow(df)
    tables = report_tables(out)
    model = _num(tables["Model"])
    assert list(model.index) == COVS
    np.testing.assert_allclose(model["coef"], beta, rtol=5.01e-4)
    top = tables["Top 10 influential patients"]
    want = ld.sort_values(ascending=False).iloc[:10]
    assert list(top.index) == [str(i) for i in want.index]
    np.testing.assert_allclose(_num(top["displacement"]), want, rtol=5.01e-4)
    assert "breslow ties" in stdout.splitlines()[0]
    # the default (Efron) differs on these tied data by far more than the tolerance: the
    # table's entry made the fit
    efron = ci.fit_cox(df[COVS], df["time"], df["cens"])
    assert np.abs(efron.coef / beta - 1).max() > 0.01


def test_the_entry_says_which_options_apply(breslow_family, tied, tmp_path, capsys):
    _, path = tied
    out = tmp_path / "r.html"
    code, _, err = run([str(path), "--model", "breslowcox", "--time", "time", "--event",
                        "cens", "--ties", "efron", "--no-progress", "--out", str(out)], capsys)
    assert code == 2
    assert "--ties (its ties are Breslow's) does not apply to the test's Breslow Cox model" \
        in err
    assert err.strip().count("\n") == 0 and not out.exists()


def test_the_help_lists_the_registered_family(breslow_family, capsys):
    from coxinfluence import cli
    with pytest.raises(SystemExit):
        cli.main(["audit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "breslowcox: a test's Cox model with Breslow's ties" in text
    assert re.search(r"--model \{cox,weibull,exponential,lognormal,loglogistic,"
                     r"cause-specific,multistate,breslowcox\}", text)


def test_a_re_registration_replaces_and_a_model_names_one_family(breslow_family):
    """The package's one registration rule (``coxinfluence.data.dispatch``): the same
    name again replaces the entry (which becomes the latest); a ``--model`` value of
    another family is refused."""
    again = dataclasses.replace(breslow_family, models=("breslowcox", "breslow2"))
    assert fr.register_cli_family(again) is again
    assert fr.CLI_FAMILIES["test_breslow_cox"] is again
    assert list(fr.CLI_FAMILIES)[-1] == "test_breslow_cox"
    assert [f.name for f in fr.CLI_FAMILIES.values()].count("test_breslow_cox") == 1
    args = build_parser().parse_args(["audit", "d.csv", "--model", "breslow2"])
    assert fr.choose_family(args) is again
    with pytest.raises(ValueError, match="--model weibull already fits the 'aft' family"):
        fr.register_cli_family(fr.CliFamily("other", _breslow_cox, models=("weibull",)))
    assert "other" not in fr.CLI_FAMILIES


def test_of_the_families_an_option_chooses_the_latest_wins(breslow_family):
    """Two entries chosen by the same option: the latest registered (a tie of the one
    dispatch rule)."""
    fine_gray = fr.CLI_FAMILIES["fine_gray"]
    mine = dataclasses.replace(fine_gray, name="test_fine_gray_2", add_arguments=None)
    fr.register_cli_family(mine)
    try:
        args = build_parser().parse_args(["audit", "d.csv", "--time", "t", "--status", "s",
                                          "--cause", "1"])
        assert fr.choose_family(args) is mine
    finally:
        fr.CLI_FAMILIES.pop(mine.name)
    assert fr.choose_family(args) is fine_gray


def test_the_generic_cli_names_no_family_and_probes_nothing():
    """Issue 34: outside the modules named *registry*, the CLI has no type branch, no
    ``family ==``, no getattr/hasattr probe and no import of a family's module."""
    generic = [p for p in sorted(CLI.glob("*.py"))
               if "registry" not in p.name and p.name != "__main__.py"]
    assert {p.name for p in generic} >= {"audit_command.py", "audit_inputs.py"}
    pattern = re.compile(r"isinstance\(|type\(.*\)\.__name__|family ==|getattr\(|hasattr\(|"
                         r"from coxinfluence\.(audit|families|models|likelihood)\b|"
                         r"import coxinfluence\.(audit|families|models|likelihood)\b|"
                         r"model_header")
    hits = [f"{p.name}:{k}: {line.strip()}" for p in generic
            for k, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_python_dash_m_reads_the_table(tmp_path):
    """The families' options are the table's: ``--status``/``--cause`` come from the
    Fine-Gray entry, in a fresh interpreter too."""
    proc = subprocess.run([sys.executable, "-m", "coxinfluence.cli", "audit", "--help"],
                          capture_output=True, text=True, check=True)
    assert "--cause CAUSE" in proc.stdout and "competing risks (Fine-Gray" in proc.stdout

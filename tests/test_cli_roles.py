"""``coxinfluence audit``: the columns' roles. The covariates used are listed in the
printed summary and the report; a column that looks like an identifier never silently
becomes a covariate; an outcome column (time, event, status, start) or another role's
column (id, strata, weights, cluster) named in ``--covariates`` is refused with a one-line
message naming the column and its role (issue 39)."""
import re

import numpy as np
import pandas as pd
import pytest

from coxinfluence import cli

N = 60


def _data(**extra):
    """A small Cox / Fine-Gray data set: integer ages with repeats (a covariate, not an
    identifier), a continuous x, times, an event and a status column (causes 1, 2), a
    stratum, a weight and a cluster column, and ``extra`` columns."""
    rng = np.random.default_rng(39)
    x = rng.normal(size=N).round(3)
    age = rng.integers(40, 60, N)
    assert not pd.Series(age).is_unique
    time = (rng.exponential(1 / np.exp(0.5 * x)) + 0.01).round(3)
    status = rng.integers(0, 3, N)
    df = pd.DataFrame({"time": time, "event": (status > 0).astype(int), "status": status,
                       "t0": 0.0, "age": age, "x": x, "g": np.arange(N) % 2,
                       "w": rng.choice([1.0, 2.0], N), "c": np.arange(N) // 4})
    for name, values in extra.items():
        df[name] = values
    return df


def run(tmp_path, capsys, df, *args):
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "r.html"
    code = cli.main(["audit", str(path), *args, "--method", "vif", "--exact-max-n", "0",
                     "--no-progress", "--out", str(out)])
    stdout, err = capsys.readouterr()
    return code, stdout, err, out


def _refused(code, err, out, *words):
    assert code == 2, err
    assert err.strip().count("\n") == 0, err          # one line, no traceback
    for w in words:
        assert w in err, (w, err)
    assert not out.exists()


def _meta(html):
    return re.search(r"<p class='meta'>(.*?)</p>", html, re.S).group(1)


# ------------------------------------------------------------ the covariates are listed

def test_summary_and_report_list_the_covariates_and_the_roles(tmp_path, capsys):
    """Inferred covariates (every column without a role): the summary and the report say
    which they are, and which column has which role."""
    df = _data(id=np.arange(101, 101 + N))[["id", "time", "event", "g", "w", "age", "x"]]
    code, stdout, err, out = run(tmp_path, capsys, df, "--time", "time", "--event", "event",
                                 "--id", "id", "--strata", "g", "--weights", "w")
    assert code == 0, err
    line = "Covariates (2): age, x. Roles: time = time, event = event, strata = g, " \
           "weights = w, id = id."
    assert line in stdout.splitlines()
    assert line in _meta(out.read_text())


def test_fine_gray_and_cluster_roles_are_listed(tmp_path, capsys):
    df = _data()[["time", "status", "age", "x", "w"]]
    code, stdout, err, out = run(tmp_path, capsys, df, "--time", "time", "--status", "status",
                                 "--cause", "1", "--weights", "w")
    assert code == 0, err
    line = "Covariates (2): age, x. Roles: time = time, status = status, weights = w."
    assert line in stdout.splitlines() and line in _meta(out.read_text())
    df = _data()[["time", "event", "c", "age", "x"]]
    code, stdout, err, out = run(tmp_path, capsys, df, "--time", "time", "--event", "event",
                                 "--cluster", "c")
    assert code == 0, err
    assert "Covariates (2): age, x. Roles: time = time, event = event, cluster = c." \
        in stdout.splitlines()


def test_covariates_named_explicitly_may_look_like_identifiers(tmp_path, capsys):
    """--covariates naming an identifier-like column is the user's choice: it is used and
    listed."""
    df = _data(id=np.arange(1, N + 1))[["id", "time", "event", "age", "x"]]
    code, stdout, err, _ = run(tmp_path, capsys, df, "--time", "time", "--event", "event",
                               "--covariates", "id", "age", "x")
    assert code == 0, err
    assert "Covariates (3): id, age, x. Roles: time = time, event = event." \
        in stdout.splitlines()


# ------------------------------------------- identifiers never silently become covariates

@pytest.mark.parametrize("name", ["id", "ID", "patient", "Patient_ID", "subject", "pid",
                                  "subject id", "patientId"])
def test_a_column_named_like_an_identifier_is_refused(name, tmp_path, capsys):
    """Named like an identifier (its values need not be distinct: several rows a
    patient)."""
    df = _data(**{name: np.arange(N) // 2})[[name, "time", "event", "age", "x"]]
    code, _, err, out = run(tmp_path, capsys, df, "--time", "time", "--event", "event")
    _refused(code, err, out, f"column {name!r} looks like an identifier",
             "(named like one)", f"--id {name!r}" if " " in name else f"--id {name}",
             "--covariates")


@pytest.mark.parametrize("values, words", [
    (np.random.default_rng(1).permutation(N) + 1001, "distinct integers, one per row"),
    (np.arange(N) + 1.0, "distinct integers, one per row"),
])
def test_a_column_of_distinct_values_is_refused(values, words, tmp_path, capsys):
    df = _data(record=values)[["time", "record", "event", "age", "x"]]
    code, _, err, out = run(tmp_path, capsys, df, "--time", "time", "--event", "event")
    _refused(code, err, out, "column 'record' looks like an identifier", words,
             "--id record", "--covariates")


def test_every_identifier_like_column_is_named(tmp_path, capsys):
    df = _data(patient=np.arange(N) // 2, record=np.arange(N) * 7)
    df = df[["patient", "record", "time", "event", "age", "x"]]
    code, _, err, out = run(tmp_path, capsys, df, "--time", "time", "--event", "event")
    _refused(code, err, out, "columns 'patient', 'record' look like identifiers ('patient': "
             "named like one; 'record': its values are distinct integers, one per row)",
             "--id patient")


def test_a_column_of_labels_is_non_numeric_and_looks_like_an_identifier(tmp_path, capsys):
    df = _data(name=[f"n{k}" for k in range(N)])[["name", "time", "event", "age", "x"]]
    code, _, err, out = run(tmp_path, capsys, df, "--time", "time", "--event", "event")
    _refused(code, err, out, "non-numeric column(s) ['name']: encode categories as 0/1 "
             "columns first; column 'name' looks like an identifier (its values are distinct "
             "labels, one per row)", "--id name")


def test_the_id_column_given_is_no_covariate_and_others_still_checked(tmp_path, capsys):
    """With --id, the id column is not a covariate; another identifier-like column still
    is refused."""
    df = _data(id=np.arange(N), subject=np.arange(N) // 3)
    df = df[["id", "subject", "time", "event", "age", "x"]]
    code, _, err, out = run(tmp_path, capsys, df, "--time", "time", "--event", "event",
                            "--id", "id")
    _refused(code, err, out, "column 'subject' looks like an identifier", "--covariates")
    assert "--id subject" not in err


# ------------------------------------------------- role columns are never covariates

@pytest.mark.parametrize("extra, covs, words", [
    (["--event", "event"], ["time", "age"],
     "'time' is the outcome column (--time): a column cannot be both the outcome and a "
     "covariate; remove it from --covariates"),
    (["--event", "event"], ["age", "event"],
     "'event' is the outcome column (--event): a column cannot be both the outcome and a "
     "covariate"),
    (["--status", "status", "--cause", "1"], ["age", "status"],
     "'status' is the outcome column (--status): a column cannot be both the outcome and a "
     "covariate"),
    (["--event", "event", "--start", "t0"], ["t0", "age"],
     "'t0' is the outcome column (--start): a column cannot be both the outcome and a "
     "covariate"),
    (["--event", "event", "--id", "id"], ["id", "age"],
     "'id' is the --id column: a column cannot be both the id and a covariate; remove it "
     "from --covariates"),
    (["--event", "event", "--strata", "g"], ["age", "g"],
     "'g' is a --strata column (a baseline hazard per stratum: a covariate constant within "
     "each stratum has no coefficient): a column cannot be both a stratum and a covariate"),
    (["--status", "status", "--cause", "1", "--strata", "g"], ["age", "g"],
     "'g' is a --strata column (a baseline hazard per stratum"),
    (["--event", "event", "--weights", "w"], ["age", "w"],
     "'w' is the --weights column: a column cannot be both the case weights and a "
     "covariate"),
    (["--event", "event", "--cluster", "c"], ["age", "c"],
     "'c' is the --cluster column: a column cannot be both the cluster and a covariate"),
])
def test_a_role_column_named_as_covariate_is_refused(extra, covs, words, tmp_path, capsys):
    df = _data(id=np.arange(N))
    code, _, err, out = run(tmp_path, capsys, df, "--time", "time", *extra,
                            "--covariates", *covs)
    _refused(code, err, out, words)


def test_an_outcome_column_cannot_have_another_role(tmp_path, capsys):
    code, _, err, out = run(tmp_path, capsys, _data(), "--time", "time", "--event", "event",
                            "--strata", "event", "--covariates", "age", "x")
    _refused(code, err, out, "'event' is the outcome column (--event): it cannot also be "
                             "the --strata column")


def test_a_covariate_named_twice_is_refused(tmp_path, capsys):
    code, _, err, out = run(tmp_path, capsys, _data(), "--time", "time", "--event", "event",
                            "--covariates", "age", "x", "age")
    _refused(code, err, out, "--covariates names 'age' twice")


# ------------------------------------------------------------- Fine-Gray and --event

@pytest.mark.parametrize("extra", [["--cause", "1"], ["--cause", "1", "--cengroup", "g"],
                                   ["--cengroup", "g"]])
def test_event_with_cause_names_event(extra, tmp_path, capsys):
    """A Fine-Gray model reads its status column from --status: --event given instead is
    named."""
    code, _, err, out = run(tmp_path, capsys, _data(), "--time", "time", "--event", "status",
                            *extra, "--covariates", "age", "x")
    _refused(code, err, out, "needs both --status S and --cause K",
             "--event does not apply to a Fine-Gray model: give the status column "
             "(0 = censored, 1, 2, ... = the causes) as --status, not --event")


def test_an_aft_stratum_column_may_be_a_covariate(tmp_path, capsys):
    """An AFT model's strata are scales (R's survreg(Surv(t, e) ~ g + strata(g))): the
    column may also be a covariate, and is listed in both roles."""
    code, stdout, err, _ = run(tmp_path, capsys, _data(), "--time", "time", "--event",
                               "event", "--model", "weibull", "--strata", "g",
                               "--covariates", "age", "g")
    assert code == 0, err
    assert "Covariates (2): age, g. Roles: time = time, event = event, strata = g." \
        in stdout.splitlines()

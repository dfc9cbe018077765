"""The ``coxinfluence audit`` subcommand: exit codes, one-line errors naming the problem,
and a report whose numbers are the library's."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence import cli

FIX = Path(__file__).parent / "fixtures" / "integration" / "gbsg2_subset.csv"
COVS = ["age", "tsize", "pnodes", "progrec", "estrec", "horTh"]


def run(argv, capsys):
    code = cli.main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _top_ids(out):
    line = next(l for l in out.splitlines() if l.startswith("Most influential"))
    return re.findall(r"(\S+) \(", line.split(":", 1)[1])


def test_registry_keeps_asymptotics():
    assert {"asymptotics", "audit"} <= set(cli.SUBCOMMANDS)


def test_demo(tmp_path, capsys):
    out = tmp_path / "demo.html"
    code, stdout, err = run(["--demo", "--out", str(out), "--no-progress", "--exact-max-n", "0"],
                            capsys)
    assert code == 0, err
    html = out.read_text()
    assert html.count("data:image/png;base64,") == 2          # index plots, VIF vs Reid
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "<script" not in html.lower()
    from coxinfluence.demo import gbsg2_design
    X, t, e = gbsg2_design()
    res = ci.influence(ci.fit_cox(X, t, e))
    assert _top_ids(stdout) == [str(i) for i in res.top(5).index]
    for pid in res.top(10).index:
        assert f"<th>{pid}</th>" in html


def test_success_exit_code_subprocess(tmp_path):
    out = tmp_path / "r.html"
    proc = subprocess.run([sys.executable, "-m", "coxinfluence.cli", "audit", str(FIX),
                           "--time", "time", "--event", "cens", "--id", "pid", "--covariates",
                           *COVS, "--out", str(out), "--exact-max-n", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and f"wrote {out}" in proc.stdout
    assert "audit" in proc.stderr            # the progress bar (stderr)


def test_csv_with_strata_weights_id_and_exact(tmp_path, capsys):
    df = pd.read_csv(FIX)
    path = tmp_path / "patients.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "r.html"
    code, stdout, err = run([str(path), "--time", "time", "--event", "cens", "--strata", "tgrade",
                             "--weights", "w", "--id", "pid", "--covariates", *COVS, "--exact",
                             "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    d = df.set_index("pid")
    fit = ci.fit_cox(d[COVS], d.time, d.cens, strata=d.tgrade, weights=d.w)
    res = ci.influence(fit)
    assert _top_ids(stdout) == list(res.top(5).index)
    corr = res.correlation(res.exact()).mean()
    assert f"VIF vs exact leave-one-out: mean correlation {corr:.6f}" in stdout
    html = out.read_text()
    assert "against exact leave-one-out refits" in html
    assert html.count("data:image/png;base64,") == 3
    pd.testing.assert_frame_equal(pd.read_csv(path), df)       # input file untouched


def test_survival_target(tmp_path, capsys):
    out = tmp_path / "s.html"
    code, stdout, err = run([str(FIX), "--time", "time", "--event", "cens", "--id", "pid",
                             "--covariates", *COVS, "--target", "survival:1000",
                             "--exact-max-n", "0", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    assert "S(1000|mean)" in out.read_text()


def test_survival_target_per_stratum(tmp_path, capsys):
    """Stratified model: the average patient's S(t) once per stratum, each on its own
    baseline hazard; the report's numbers are ci.influence's."""
    out = tmp_path / "s.html"
    code, stdout, err = run([str(FIX), "--time", "time", "--event", "cens", "--id", "pid",
                             "--strata", "tgrade", "--covariates", *COVS,
                             "--target", "survival:1000", "--exact-max-n", "0",
                             "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    html = out.read_text()
    for lab in ("I", "II", "III"):
        assert f"S(1000|mean, stratum {lab})" in html
    from coxinfluence import targets as T
    d = pd.read_csv(FIX).set_index("pid")
    fit = ci.fit_cox(d[COVS], d.time, d.cens, strata=d.tgrade)
    mean = d[COVS].mean().to_frame().T
    tgt = T.Survival(pd.concat([mean] * 3), [1000.0], strata=["I", "II", "III"])
    res = ci.influence(fit, method="vif", target=tgt)
    assert _top_ids(stdout) == list(res.top(5).index)


def test_newdata_patients_for_survival_in_a_stratified_model(tmp_path, capsys):
    """--newdata: the report attributes S(t|x) of these patients (each in the stratum its
    tgrade column names), the numbers are ci.influence's."""
    newp = pd.DataFrame({"pid": ["N1", "N2"], "age": [45, 70], "tsize": [20, 50],
                         "pnodes": [1, 15], "progrec": [100, 5], "estrec": [80, 200],
                         "horTh": [1, 0], "tgrade": ["III", "I"]})
    newfile, out = tmp_path / "new.csv", tmp_path / "n.html"
    newp.to_csv(newfile, index=False)
    code, stdout, err = run([str(FIX), "--time", "time", "--event", "cens", "--id", "pid",
                             "--strata", "tgrade", "--covariates", *COVS,
                             "--target", "survival:1000", "--newdata", str(newfile),
                             "--exact-max-n", "0", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    html = out.read_text()
    assert "S(1000|N1)" in html and "S(1000|N2)" in html
    from coxinfluence import targets as T
    d = pd.read_csv(FIX).set_index("pid")
    fit = ci.fit_cox(d[COVS], d.time, d.cens, strata=d.tgrade)
    tgt = T.Survival(newp.set_index("pid")[COVS], [1000.0], strata=["III", "I"])
    assert _top_ids(stdout) == list(ci.influence(fit, target=tgt).top(5).index)
    pd.testing.assert_frame_equal(pd.read_csv(newfile), newp)   # input file untouched
    # errors: a coefficient target takes no new patients; a missing column is named
    code, _, err = run([str(FIX), "--time", "time", "--event", "cens", "--covariates", *COVS,
                        "--newdata", str(newfile), "--no-progress", "--out", str(out)], capsys)
    assert code == 2 and "--newdata applies to the lp, rr and survival targets" in err
    newp.drop(columns="pnodes").to_csv(newfile, index=False)
    code, _, err = run([str(FIX), "--time", "time", "--event", "cens", "--covariates", *COVS,
                        "--target", "rr", "--newdata", str(newfile), "--no-progress",
                        "--out", str(out)], capsys)
    assert code == 2 and "lacks column(s) ['pnodes']" in err


def _one_line_error(code, err):
    assert code == 2
    lines = [l for l in err.strip().splitlines() if l]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("mutate, args, pattern", [
    (lambda d: d, ["--covariates", "age", "nodes"], r"missing column\(s\) \['nodes'\]"),
    (lambda d: d.drop(columns="cens"), [], r"missing column\(s\) \['cens'\]"),
    (lambda d: d.assign(tsize=d.tsize.astype(str) + "mm"), [], r"non-numeric column\(s\) \['tsize'\]"),
    (lambda d: d.assign(age=np.where(np.isin(np.arange(len(d)), [4, 9]), np.nan, d.age)), [],
     r"2 row\(s\) with missing values \(NaN\) in columns \['age'\]: pid P0\d\d, P0\d\d"),
    (lambda d: d.assign(cens=2), [], r"event must be 0/1"),
])
def test_bad_input(tmp_path, capsys, mutate, args, pattern):
    df = mutate(pd.read_csv(FIX))
    path = tmp_path / "bad.csv"
    df.to_csv(path, index=False)
    base = [str(path), "--time", "time", "--event", "cens", "--id", "pid",
            "--covariates", *COVS, "--no-progress", "--out", str(tmp_path / "x.html")]
    if args:
        base = base[:base.index("--covariates")] + args + base[base.index("--no-progress"):]
    code, _, err = run(base, capsys)
    assert re.search(pattern, _one_line_error(code, err)), err
    assert not (tmp_path / "x.html").exists()


def test_nan_rows_named(tmp_path, capsys):
    df = pd.read_csv(FIX)
    df.loc[[3, 7, 8], "pnodes"] = np.nan
    path = tmp_path / "nan.csv"
    df.to_csv(path, index=False)
    code, _, err = run([str(path), "--time", "time", "--event", "cens", "--id", "pid",
                        "--covariates", *COVS, "--no-progress"], capsys)
    line = _one_line_error(code, err)
    assert "3 row(s)" in line
    for pid in df.pid[[3, 7, 8]]:
        assert pid in line


def test_empty_and_missing_files(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    line = _one_line_error(*run([str(empty), "--time", "t", "--event", "e"], capsys)[::2])
    assert "is empty" in line
    header = tmp_path / "header.csv"
    header.write_text("time,cens,age\n")
    line = _one_line_error(*run([str(header), "--time", "time", "--event", "cens"], capsys)[::2])
    assert "no data rows" in line
    line = _one_line_error(*run([str(tmp_path / "nope.csv"), "--time", "t", "--event", "e"],
                                capsys)[::2])
    assert "not found" in line
    line = _one_line_error(*run([], capsys)[::2])
    assert "--demo" in line
    line = _one_line_error(*run([str(FIX), "--demo"], capsys)[::2])
    assert "not both" in line
    line = _one_line_error(*run([str(FIX), "--event", "cens"], capsys)[::2])
    assert "--time and --event" in line


def test_bad_input_subprocess_exit_code(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("time,cens,age\n1,1,x\n2,0,y\n3,1,z\n")
    proc = subprocess.run([sys.executable, "-m", "coxinfluence.cli", "audit", str(bad),
                           "--time", "time", "--event", "cens"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0
    assert "non-numeric column(s) ['age']" in proc.stderr

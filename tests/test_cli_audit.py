"""The ``coxinfluence audit`` subcommand: exit codes, one-line errors naming the problem,
and a report whose numbers are read back from the HTML and checked against oracles: R's
coxph (golden fixture tests/fixtures/integration/reference.csv, tests/r/
integration_reference.R), VIF by its definition (row deleted; tests/oracles.py), exact
refits of the deleted data, and ``ci.influence`` for the survival targets."""
import html.parser
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import r_matrix
from oracles import refit_rows, vif_rows

import coxinfluence as ci
from coxinfluence import cli

FIX = Path(__file__).parent / "fixtures" / "integration" / "gbsg2_subset.csv"
COVS = ["age", "tsize", "pnodes", "progrec", "estrec", "horTh"]


def run(argv, capsys):
    code = cli.main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


class _Tables(html.parser.HTMLParser):
    """Every <table> of the report as a DataFrame (strings), keyed by the <h2> or <h3>
    heading above it."""

    def __init__(self):
        super().__init__()
        self.tables, self.heading, self._cell, self._rows, self._in_h2 = {}, None, None, None, False

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3"):
            self._in_h2, self.heading = True, ""
        elif tag == "table":
            self._rows = []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = ""

    def handle_data(self, data):
        if self._in_h2:
            self.heading += data
        elif self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("h2", "h3"):
            self._in_h2 = False
        elif tag in ("td", "th") and self._cell is not None:
            self._rows[-1].append(self._cell.strip())
            self._cell = None
        elif tag == "table":
            header = self._rows[0][1:]
            body = [r for r in self._rows[1:] if any(r[1:])]      # skip the index-name row
            self.tables[self.heading] = pd.DataFrame([r[1:] for r in body], columns=header,
                                                     index=[r[0] for r in body])
            self._rows = None


def report_tables(path):
    p = _Tables()
    p.feed(Path(path).read_text())
    return p.tables


def _num(df):
    return df.apply(pd.to_numeric)


def _top_ids(out):
    line = next(ln for ln in out.splitlines() if ln.startswith("Most influential"))
    return re.findall(r"(\S+) \(", line.split(":", 1)[1])


def assert_top_table_is(tables, res, k=10):
    """The report's top table (4 significant digits) holds ``res.top(k)``'s patients, in
    order, with its likelihood displacements, and the "Changes" table below it their
    changes (3 significant digits)."""
    top = tables[f"Top {k} influential patients"]
    want = res.top(k)
    assert list(top.index) == [str(i) for i in want.index]
    np.testing.assert_allclose(_num(top["displacement"]), want["likelihood_displacement"],
                               rtol=5.01e-4)
    cols = [c[len("change "):] for c in want.columns if c.startswith("change ")]
    changes = tables["Changes"]
    assert cols and list(changes.index) == list(top.index) and list(changes.columns) == cols
    np.testing.assert_allclose(_num(changes), want[[f"change {c}" for c in cols]],
                               rtol=5.01e-3, atol=1e-300)


def test_registry_keeps_asymptotics():
    assert {"asymptotics", "audit"} <= set(cli.SUBCOMMANDS)


def test_demo(tmp_path, capsys):
    out = tmp_path / "demo.html"
    code, stdout, err = run(["--demo", "--out", str(out), "--no-progress", "--exact-max-n", "0",
                             "--method", "vif"], capsys)
    assert code == 0, err
    html = out.read_text()
    # index plots, the Model checks' PH plots (failing at 5%) and deviance residuals,
    # VIF vs Reid
    assert html.count("data:image/png;base64,") == 4
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "<script" not in html.lower()
    # the top table against the VIF definition (deletion) on the demo design
    from coxinfluence.demo import gbsg2_design
    X, t, e = gbsg2_design()
    Xa, t, e = X.to_numpy(), t.to_numpy(), e.to_numpy()
    fit = ci.fit_cox(X, t, e)
    n = len(t)
    delta = -vif_rows(fit.coef, Xa, t, e, range(n)) / n
    ld = np.einsum("ij,jk,ik->i", delta, ci.cox_hessian(fit.coef, Xa, t, e), delta)
    order = np.argsort(-ld, kind="stable")[:10]
    tables = report_tables(out)
    top = tables["Top 10 influential patients"]
    assert list(top.index) == [str(i) for i in X.index[order]]
    assert _top_ids(stdout) == [str(i) for i in X.index[order[:5]]]
    np.testing.assert_allclose(_num(tables["Changes"][list(X.columns)]), delta[order],
                               rtol=5.01e-3, atol=1e-300)
    np.testing.assert_allclose(_num(top["displacement"]), ld[order], rtol=5.01e-4)


def test_demo_default_is_the_verified_audit(tmp_path, capsys):
    """The default audit of GBSG2 ranks by exact displacement where it is read: patient
    115 first with its refitted displacement (5.61; VIF's quadratic form says 2.02), and
    the exact top 5 in the exact order (exact refits of every patient by ci.exact_loo,
    displacement from ci.cox_loss)."""
    out = tmp_path / "demo.html"
    code, stdout, err = run(["--demo", "--out", str(out), "--no-progress", "--exact-max-n", "0"],
                            capsys)
    assert code == 0, err
    from coxinfluence.demo import gbsg2_design
    X, t, e = gbsg2_design()
    fit = ci.fit_cox(X, t, e)
    loo = np.asarray(ci.exact_loo(fit))
    full = ci.cox_loss(fit.coef, X, t, e)
    ld = np.array([2 * (ci.cox_loss(th, X, t, e) - full) for th in loo])
    order = np.argsort(-ld)[:10]
    assert _top_ids(stdout) == [str(i) for i in X.index[order[:5]]]
    shown = re.findall(r"\(([\d.]+)\*\)", stdout.split("\n")[1])
    np.testing.assert_allclose([float(v) for v in shown], ld[order[:5]], rtol=5.01e-4)
    assert X.index[order[0]] == 115 and ld[order[0]] == pytest.approx(5.6065, abs=1e-4)
    assert "top 10 by exact displacement cannot change" in stdout
    tables = report_tables(out)
    top = tables["Top 10 influential patients"]
    assert list(top.index) == [str(i) for i in X.index[order]]
    assert (top["verified"] == "\u2713").all()
    np.testing.assert_allclose(_num(top["exact"]), ld[order], rtol=5.01e-4)
    assert float(top.loc["115", "VIF"]) == pytest.approx(2.017, abs=1e-3)
    assert "What can be trusted" in out.read_text()


@pytest.mark.slow
def test_success_exit_code_subprocess(tmp_path):
    out = tmp_path / "r.html"
    proc = subprocess.run([sys.executable, "-m", "coxinfluence.cli", "audit", str(FIX),
                           "--time", "time", "--event", "cens", "--id", "pid", "--covariates",
                           *COVS, "--out", str(out), "--exact-max-n", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and f"wrote {out}" in proc.stdout
    assert "audit" not in proc.stderr        # no progress bar: stderr is not a terminal


def test_csv_with_strata_weights_id_and_exact(tmp_path, capsys, ref):
    """Weighted, stratified model with --exact: every number of the report against an
    oracle. Model table: R's coxph (coefficients, standard errors, log-likelihood; z and
    p from them). Top table: VIF changes by the definition and the displacement
    Delta' H Delta (H = ci.cox_hessian), the ranking over all patients, the patients'
    own columns. Correlation tables: with R's dfbeta (Reid) and with exact refits."""
    from scipy.stats import norm
    df = pd.read_csv(FIX)
    path = tmp_path / "patients.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "r.html"
    code, stdout, err = run([str(path), "--time", "time", "--event", "cens", "--strata", "tgrade",
                             "--weights", "w", "--id", "pid", "--covariates", *COVS, "--exact",
                             "--method", "vif", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    html = out.read_text()
    # index plots, the Model checks' PH plots and deviance residuals, vs Reid, vs exact
    assert html.count("data:image/png;base64,") == 5
    pd.testing.assert_frame_equal(pd.read_csv(path), df)       # input file untouched
    tables = report_tables(out)
    cfg = "efron_strata_weights"

    # model table (4 significant digits) against R: the weights are not integers, so the
    # table is R's default summary (coxph with id = pid: the robust variance D'D, D R's
    # weighted dfbeta summed per subject; z and p from it), se(coef) the model-based SE
    coef, se = r_matrix(ref, cfg, "coef")[0], r_matrix(ref, cfg, "se")[0]
    D = pd.DataFrame(r_matrix(ref, cfg, "dfbeta")).groupby(df["pid"].to_numpy()).sum()
    robust_se = np.sqrt(np.diag(D.T.to_numpy() @ D.to_numpy()))
    model = _num(tables["Model"])
    assert list(model.index) == COVS
    z = coef / robust_se
    for col, want in (("coef", coef), ("exp(coef)", np.exp(coef)), ("se(coef)", se),
                      ("robust se", robust_se), ("z", z), ("p", 2 * norm.sf(np.abs(z)))):
        np.testing.assert_allclose(model[col], want, rtol=5.01e-4, err_msg=col)
    loglik = float(re.search(r"log partial likelihood (-?[\d.]+)", html).group(1))
    assert loglik == pytest.approx(r_matrix(ref, cfg, "loglik")[0, 0], abs=5.01e-5)

    # top table: the ten largest displacements by the VIF definition
    X, t, e = df[COVS].to_numpy(float), df.time.to_numpy(float), df.cens.to_numpy(float)
    w, s = df.w.to_numpy(float), df.tgrade.to_numpy()
    n = len(df)
    delta = -vif_rows(coef, X, t, e, range(n), w=w, s=s) / n
    H = ci.cox_hessian(coef, X, t, e, weights=w, strata=s)
    ld = np.einsum("ij,jk,ik->i", delta, H, delta)
    order = np.argsort(-ld, kind="stable")[:10]
    top = tables["Top 10 influential patients"]
    assert list(top.index) == list(df.pid.iloc[order])
    assert list(top["rank"].astype(int)) == list(range(1, 11))
    np.testing.assert_allclose(_num(tables["Changes"][COVS]), delta[order],
                               rtol=5.01e-3, atol=1e-12)
    np.testing.assert_allclose(_num(top["displacement"]), ld[order], rtol=5.01e-4)
    data = tables["Their data"]
    np.testing.assert_allclose(_num(top["time"]), df["time"].iloc[order], rtol=5.01e-4)
    for c in COVS + ["w"]:
        np.testing.assert_allclose(_num(data[c]), df[c].iloc[order], rtol=5.01e-4)
    assert list(data["tgrade"]) == list(df.tgrade.iloc[order])
    top_line = [float(v) for v in re.findall(r"\(([\d.]+)\)", stdout.split("\n")[1])]
    np.testing.assert_allclose(top_line, ld[order[:5]], rtol=5.01e-4)   # printed %.4g
    assert _top_ids(stdout) == list(df.pid.iloc[order[:5]])

    # correlations (6 decimals): with R's dfbeta and with exact refits of the deleted data
    def corr(a, b):
        return np.array([np.corrcoef(a[:, j], b[:, j])[0, 1] for j in range(a.shape[1])])

    c_reid = corr(delta, -r_matrix(ref, cfg, "dfbeta"))
    c_exact = corr(delta, refit_rows(X, t, e, range(n), w=w, s=s) - coef)
    for name, want in (("VIF against Reid's influence function", c_reid),
                       ("VIF against exact leave-one-out refits", c_exact)):
        got = _num(tables[name]).loc["correlation", COVS].to_numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=5.01e-7, err_msg=name)
        shown = re.search(re.escape(name.split(" against ")[1]) + r"</h2>\n<p>Pearson "
                          r"correlation per column: mean (\d\.\d+), min (\d\.\d+)", html)
        assert float(shown.group(1)) == pytest.approx(want.mean(), abs=5.01e-7)
        assert float(shown.group(2)) == pytest.approx(want.min(), abs=5.01e-7)
    for label, want in (("Reid", c_reid), ("exact leave-one-out", c_exact)):
        shown = re.search(rf"VIF vs {label}: mean correlation (\d\.\d+)", stdout).group(1)
        assert float(shown) == pytest.approx(want.mean(), abs=5.01e-7)


def test_survival_target(tmp_path, capsys):
    out = tmp_path / "s.html"
    code, stdout, err = run([str(FIX), "--time", "time", "--event", "cens", "--id", "pid",
                             "--covariates", *COVS, "--target", "survival:1000",
                             "--exact-max-n", "0", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    from coxinfluence.audit import targets as T
    d = pd.read_csv(FIX).set_index("pid")
    fit = ci.fit_cox(d[COVS], d.time, d.cens)
    mean = d[COVS].mean().to_frame("mean").T
    res = ci.influence(fit, target=T.Survival(mean, [1000.0]))
    assert list(res.loo_change.columns) == ["S(1000|mean)"]
    assert_top_table_is(report_tables(out), res)


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
    from coxinfluence.audit import targets as T
    d = pd.read_csv(FIX).set_index("pid")
    fit = ci.fit_cox(d[COVS], d.time, d.cens, strata=d.tgrade)
    mean = d[COVS].mean().to_frame().T
    rows = pd.concat([mean] * 3).set_axis([f"mean, stratum {g}" for g in ("I", "II", "III")])
    tgt = T.Survival(rows, [1000.0], strata=["I", "II", "III"])
    res = ci.influence(fit, target=tgt)
    assert _top_ids(stdout) == list(res.top(5).index)
    assert_top_table_is(report_tables(out), res)


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
    from coxinfluence.audit import targets as T
    d = pd.read_csv(FIX).set_index("pid")
    fit = ci.fit_cox(d[COVS], d.time, d.cens, strata=d.tgrade)
    tgt = T.Survival(newp.set_index("pid")[COVS], [1000.0], strata=["III", "I"])
    res = ci.influence(fit, target=tgt)
    assert _top_ids(stdout) == list(res.top(5).index)
    assert_top_table_is(report_tables(out), res)
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
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("mutate, args, pattern", [
    (lambda d: d, ["--covariates", "age", "nodes"], r"missing column\(s\) \['nodes'\]"),
    (lambda d: d.drop(columns="cens"), [], r"missing column\(s\) \['cens'\]"),
    (lambda d: d.assign(tsize=d.tsize.astype(str) + "mm"), [],
     r"non-numeric column\(s\) \['tsize'\]"),
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


def test_a_fit_without_maximum_is_reported_in_red(tmp_path, capsys):
    """Monotone likelihood (x2 = 1 for exactly the 10 earliest events): the audit still
    runs, warns on stderr naming the covariate, and the report says so at its top."""
    rng = np.random.default_rng(0)
    n = 60
    g = (np.arange(n) < 10).astype(float)
    df = pd.DataFrame({"x0": rng.normal(size=n), "x1": rng.normal(size=n), "x2": g,
                       "time": np.where(g == 1, rng.uniform(0, 1, n), rng.uniform(1, 5, n)),
                       "event": 1})
    path, out = tmp_path / "sep.csv", tmp_path / "sep.html"
    df.to_csv(path, index=False)
    code, stdout, err = run([str(path), "--time", "time", "--event", "event", "--no-progress",
                             "--out", str(out)], capsys)
    assert code == 0, err
    assert "did not converge" in err
    assert "WARNING: the Cox fit did not converge" in stdout
    html = out.read_text()
    assert "<p class='bad'><b>Warning: the Cox fit did not converge</b>" in html
    assert "the coefficients of x2 diverge" in html

"""The low-level functions' example (once the README's; now on the site, the section "The
low-level functions" of ``docs/user_guide/cox.md``, executed at build time), the README's
set-up commands and the demo's printed table, checked value by value against
oracles: VIF by its definition (row deleted, gradient difference; tests/oracles.py),
exact leave-one-out by refitting ``ci.fit_cox`` on the data with the row deleted,
Reid's IF by the case-weight derivative, and R's ``coxph`` (live, where Rscript is
installed) for the coefficients and ``resid(fit, "dfbeta")``."""
import re
from pathlib import Path

import numpy as np
import pytest
from oracles import R_SKIP_REASON, r_available, r_coxph, refit_rows, reid_rows, vif_rows

import coxinfluence as ci
from coxinfluence import demo
from coxinfluence.datasets import load_gbsg2

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLE_PAGE = Path(__file__).resolve().parents[1] / "docs" / "user_guide" / "cox.md"


def example_code():
    """The code of the example of the page's section "The low-level functions"."""
    section = EXAMPLE_PAGE.read_text().split("## The low-level functions")[1].split("\n## ")[0]
    return re.search(r"```\{code-cell\} ipython3\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def gbsg_design():
    X, t, e = demo.gbsg2_design()
    return X, X.to_numpy(), t.to_numpy(), e.to_numpy()


@pytest.fixture(scope="module")
def readme_run():
    """Execute the example once; its namespace and what it printed."""
    import contextlib
    import io
    code = example_code()
    namespace, buf = {}, io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, str(EXAMPLE_PAGE), "exec"), namespace)
    return namespace, buf.getvalue()


def displacement(delta, information):
    """Quadratic-form likelihood displacement delta' I delta, per row."""
    return np.einsum("ij,jk,ik->i", delta, information, delta)


def test_readme_example_values(readme_run, gbsg_design):
    ns, printed = readme_run
    X, Xa, t, e = gbsg_design
    fit, change, exact = ns["fit"], ns["change"], ns["exact"]
    n = len(t)
    assert "ci.influence(fit" in example_code()
    assert list(change.index) == list(X.index) and list(change.columns) == list(X.columns)
    # dfbeta_R = -(Reid's change) = IF_n / n, Reid's IF by the case-weight derivative
    rows = [115, 162, 0, 300]
    pos = [X.index.get_loc(r) for r in rows]
    ref_dfbeta = reid_rows(fit.coef, Xa, t, e, pos) / n
    np.testing.assert_allclose(ns["dfbeta_R"].iloc[pos].to_numpy(), ref_dfbeta, rtol=1e-6,
                               atol=1e-9 * np.abs(ref_dfbeta).max())
    # the functions' conventions the page states above the example
    np.testing.assert_allclose(ci.vif(fit).to_numpy(), -n * change.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(ci.reid_influence(fit).to_numpy(),
                               n * ns["dfbeta_R"].to_numpy(), rtol=1e-12)
    # the fit is a stationary point of the partial likelihood
    assert np.abs(ci.cox_gradient(fit.coef, Xa, t, e)).max() < 1e-6
    # change = -VIF/n equals the definition (deletion, gradient difference) on every row
    ref = -vif_rows(fit.coef, Xa, t, e, range(n)) / n
    assert np.abs(change.to_numpy() - ref).max() <= 1e-9 * np.abs(ref).max()
    # exact = theta_{-i} - theta_hat equals refits of the deleted data (the most
    # influential patients of the demo and a few others); exact_loo is the refits
    rows = [115, 162, 41, 497, 144, 0, 300, 685]
    pos = [X.index.get_loc(r) for r in rows]
    refits = refit_rows(Xa, t, e, pos) - fit.coef
    np.testing.assert_allclose(exact.iloc[pos].to_numpy(), refits, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ci.exact_loo(fit, progress=False).to_numpy(),
                               fit.coef + exact.to_numpy(), rtol=0, atol=1e-12)
    # what it prints: the largest |change| per coefficient, and the pnodes correlation
    lines = printed.strip().splitlines()
    shown = dict(re.match(r"^(\w+)\s+(\S+)$", line).groups() for line in lines[:-2])
    for col in X.columns:
        assert float(shown[col]) == pytest.approx(np.abs(ref[:, X.columns.get_loc(col)]).max(),
                                                  abs=5.01e-5)
    corr = np.corrcoef(ref[:, X.columns.get_loc("pnodes")], exact["pnodes"])[0, 1]
    assert float(lines[-1]) == pytest.approx(corr, abs=1e-12)
    assert corr > 0.98            # the example's point; measured 0.98757 (deterministic)


@pytest.mark.needs_r
@pytest.mark.skipif(not r_available(), reason=R_SKIP_REASON)
def test_readme_fit_and_dfbeta_are_r(readme_run, gbsg_design, tmp_path):
    """The example's claim ``dfbeta_R = -ci.influence(fit, method="reid").theta_change`` is R's
    ``resid(fit, "dfbeta")`` on the same GBSG2 design (live R)."""
    ns, _ = readme_run
    X, Xa, t, e = gbsg_design
    coef, se, dfbeta = r_coxph(tmp_path, Xa, t, e)
    np.testing.assert_allclose(ns["fit"].coef, coef, rtol=1e-8)
    np.testing.assert_allclose(ns["fit"].se, se, rtol=1e-8)
    got = np.asarray(ns["dfbeta_R"])
    assert np.abs(got - dfbeta).max() <= 1e-8 * np.abs(dfbeta).max()


def test_readme_set_up_commands_are_what_ci_runs():
    text = README.read_text()
    commands = re.findall(r"^    (pip install .*)$", text, re.M)
    assert len(commands) == 2
    ci_script = (README.parent / ".ci" / "run").read_text()
    assert commands[1] in ci_script


def _demo_table(out):
    """The demo's printed top table: (column names, patient labels, numbers)."""
    table = out.split("Five most influential patients")[1].split("Correlation of")[0]
    header = next(line for line in table.splitlines() if "LD Reid" in line and "event" in line)
    names = re.split(r"\s{2,}", header.strip())
    rows = [line.split() for line in table.splitlines() if re.match(r"^\d+\s", line)]
    return names, [int(r[0]) for r in rows], np.array([[float(v) for v in r[1:]]
                                                       for r in rows])


def test_demo_prints_top_five(capsys, gbsg_design):
    """The printed table's numbers against oracles: the five largest exact likelihood
    displacements 2[logL(theta_hat) - logL(theta_hat_-i)] over all patients (refits by
    ci.exact_loo, logL by ci.cox_loss; the five by refits of the deleted data), VIF's and
    Reid's quadratic forms by VIF's definition (deletion) and the weight derivative;
    covariates, time and event from the raw GBSG2 rows; the closing correlation of VIF's
    quadratic form with the exact displacement over all patients."""
    assert demo.main() == 0
    out = capsys.readouterr().out
    X, Xa, t, e = gbsg_design
    n = len(t)
    fit = ci.fit_cox(X, t, e)
    info = ci.cox_hessian(fit.coef, Xa, t, e)
    full = ci.cox_loss(fit.coef, Xa, t, e)
    loo = np.asarray(ci.exact_loo(fit, progress=False))
    ld_all = np.array([2 * (ci.cox_loss(th, Xa, t, e) - full) for th in loo])
    top = np.argsort(-ld_all, kind="stable")[:5]

    names, labels, got = _demo_table(out)
    assert names == ["LD exact", "LD VIF", "LD Reid", "age", "tsize", "pnodes", "horTh", "time",
                     "event"]
    assert labels == list(X.index[top])
    ld_exact = np.array([2 * (ci.cox_loss(th, Xa, t, e) - full)
                         for th in refit_rows(Xa, t, e, top)])
    ld_vif = displacement(-vif_rows(fit.coef, Xa, t, e, top) / n, info)
    ld_reid = displacement(-reid_rows(fit.coef, Xa, t, e, top) / n, info)
    raw = load_gbsg2().iloc[top]
    expected = np.column_stack([ld_exact, ld_vif, ld_reid, raw["age"], raw["tsize"],
                                raw["pnodes"], (raw["horTh"] == "yes").astype(float),
                                raw["time"], raw["cens"]])
    np.testing.assert_allclose(got, expected, rtol=0, atol=5.01e-5)   # printed to 4 decimals
    # removing the top patient (an outlier in pnodes) moves the fit far more than either
    # linear approximation predicts: measured 5.61 against 2.02 (VIF), 1.91 (Reid)
    assert labels[0] == 115 and ld_exact[0] > 2.5 * ld_vif[0]
    # every column is named in the legend above the table
    for name in ("LD exact", "LD VIF", "LD Reid"):
        assert re.search(rf"^  {name} +\S", out, re.M), name
    assert "2[logL(theta_hat) - logL(theta_hat_-i)]" in out

    ld_vif_all = displacement(-vif_rows(fit.coef, Xa, t, e, range(n)) / n, info)
    corr = float(re.search(r"over all (\d+) patients \(each refitted\): ([\d.]+)", out).group(2))
    assert corr == pytest.approx(np.corrcoef(ld_vif_all, ld_all)[0, 1], abs=5.01e-6)


def test_demo_is_the_audit(tmp_path, capsys, gbsg_design):
    """One definition in both demos (issue 24 item 3): ``python -m coxinfluence.demo``
    prints the patients, in the order and with the numbers, of ``ci.influence`` on the
    same GBSG2 model (its ``top(5)``, ``ld_exact``, ``ld_approx``) and of ``coxinfluence
    audit --demo`` (its printed top five and its report's top table)."""
    from test_cli_audit import report_tables

    from coxinfluence import cli
    assert demo.main() == 0
    _, labels, got = _demo_table(capsys.readouterr().out)
    X, _, t, e = gbsg_design
    fit = ci.fit_cox(X, t, e)
    res = ci.influence(fit, X.assign(time=t, event=e))
    reid = ci.influence(fit, method="reid")
    top = res.top(5)
    assert labels == list(top.index)
    assert res.verified.loc[top.index].all()
    np.testing.assert_allclose(got[:, 0], top["likelihood_displacement"], rtol=0, atol=5.01e-5)
    np.testing.assert_allclose(got[:, 0], res.ld_exact.loc[top.index], rtol=0, atol=5.01e-5)
    np.testing.assert_allclose(got[:, 1], res.ld_approx.loc[top.index], rtol=0, atol=5.01e-5)
    np.testing.assert_allclose(got[:, 2], reid.ld_approx.loc[top.index], rtol=0, atol=5.01e-5)

    out = tmp_path / "demo.html"
    assert cli.main(["audit", "--demo", "--out", str(out), "--no-progress",
                     "--exact-max-n", "0"]) == 0
    printed = capsys.readouterr().out
    line = next(ln for ln in printed.splitlines() if ln.startswith("Most influential"))
    shown = re.findall(r"(\d+) \(([\d.]+)\*\)", line)
    assert [int(i) for i, _ in shown] == labels
    np.testing.assert_allclose([float(v) for _, v in shown], got[:, 0], rtol=5.01e-4)
    report = report_tables(out)["Top 10 influential patients"].iloc[:5]
    assert [int(i) for i in report.index] == labels
    for col, j in (("displacement", 0), ("exact", 0), ("VIF", 1)):
        np.testing.assert_allclose(report[col].astype(float), got[:, j], rtol=5.01e-4,
                                   err_msg=col)


def test_public_namespace():
    """``ci.datasets`` and friends are reachable from the package (issue 3 spells them so),
    and importing the package does not import JAX (the autodiff path is optional)."""
    import subprocess
    import sys
    code = ("import sys, coxinfluence as ci; ci.datasets.load_gbsg2; ci.metrics; ci.vif; "
            "ci.influence; assert callable(ci.vif); print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"

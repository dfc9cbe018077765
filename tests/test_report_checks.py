"""The report's "Model checks" section (issue 37, item 3): the PH test table (R's cox.zph,
through ``ci.ph_test``, itself checked against R in the diagnostics' tests and against the
numbers R prints for rossi), the deviance-residual index plot and the patients standing out
in both, computed here directly from ``ci.residuals`` and the likelihood displacement."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from lifelines.datasets import load_rossi
from test_cli_audit import report_tables

import coxinfluence as ci
from coxinfluence.report import DEVIANCE_BOUND, build_report, model_checks, write_report

COLS = ["fin", "age", "prio"]


@pytest.fixture(scope="module")
def rossi():
    return load_rossi()


@pytest.fixture(scope="module")
def cox_audit(rossi):
    fit = ci.fit_cox(rossi[COLS], rossi["week"], rossi["arrest"])
    res = ci.influence(fit, method="vif")
    return fit, res


def _section(text):
    start = text.index("<h2>Model checks</h2>")
    end = text.find("<h2>", start + 5)
    return text[start:end if end > 0 else len(text)]


def _both_directly(res, dev, k=10):
    top = res.likelihood_displacement.nlargest(k).index
    return [u for u in top if abs(dev.loc[u]) > DEVIANCE_BOUND]


def test_cox_report_has_the_ph_table_and_the_patients_standing_out(cox_audit, tmp_path):
    fit, res = cox_audit
    out = write_report(tmp_path / "r.html", res)
    text = out.read_text()
    section = _section(text)
    tables = report_tables(out)
    head = next(k for k in tables if k.startswith("Proportional hazards"))
    got = tables[head].apply(pd.to_numeric)
    want = ci.ph_test(fit).table
    assert list(got.index) == list(want.index) == COLS + ["GLOBAL"]
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=5.01e-4)
    # R: cox.zph(coxph(Surv(week, arrest) ~ fin + age + prio, rossi)): age p = 0.012
    assert got.loc["age", "p"] == pytest.approx(0.012, abs=5e-4)
    assert "Failing at 5%: age." in section
    assert section.count("<img") == 2       # the PH plot of age, the deviance index plot
    dev = ci.residuals(fit, kind="deviance")
    both = _both_directly(res, dev)
    assert both                             # rossi has some
    named = re.search(r"Standing out in both</b> \([^)]*\): ([^<]*)\.</p>", section)
    assert named.group(1).split(", ") == [str(u) for u in both]
    table = tables["Deviance residuals"].apply(pd.to_numeric)
    np.testing.assert_allclose(table["deviance residual"], dev.loc[both], rtol=5.01e-4)


def test_no_checks_removes_the_section(cox_audit):
    _, res = cox_audit
    assert "Model checks" not in build_report(res, checks=False)


def test_aft_report_has_deviance_residuals_but_no_ph_test(rossi):
    fit = ci.fit_aft(rossi[COLS], rossi["week"], rossi["arrest"], "weibull")
    res = ci.influence(fit, method="vif")
    section = _section(build_report(res))
    assert "Proportional hazards" not in section
    dev = ci.residuals(fit, kind="deviance")
    both = _both_directly(res, dev)
    named = re.search(r"Standing out in both</b> \([^)]*\): ([^<]*)\.</p>", section)
    assert named.group(1).split(", ") == [str(u) for u in both]


def test_fine_gray_report_has_no_checks():
    rng = np.random.default_rng(3)
    n = 120
    X = pd.DataFrame({"x": rng.normal(size=n), "z": rng.binomial(1, 0.5, n).astype(float)})
    time = rng.exponential(size=n).round(3) + 0.01
    status = rng.choice([0, 1, 2], size=n, p=[0.3, 0.4, 0.3])
    fit = ci.fit_fine_gray(X, time, status, cause=1)
    res = ci.influence(fit, method="vif")
    assert "Model checks" not in build_report(res)


def test_cluster_units_collapse_the_deviance_residuals(rossi):
    """Audit per cluster (``groups=``): one deviance residual per cluster, R's
    ``collapse=`` (``ci.residuals(..., collapse=labels)``)."""
    clusters = pd.Series(np.arange(len(rossi)) // 4, index=rossi.index)
    fit = ci.fit_cox(rossi[COLS], rossi["week"], rossi["arrest"])
    res = ci.influence(fit, method="vif", groups=clusters)
    checks = model_checks(res)
    with np.errstate(invalid="ignore"):       # NaN where R gives NaN (several events)
        want = ci.residuals(fit, kind="deviance", collapse=clusters.to_numpy())
    assert want.isna().any()
    assert list(checks["deviance"].index) == list(res.loo_change.index)
    np.testing.assert_allclose(checks["deviance"].to_numpy(),
                               want.loc[res.loo_change.index].to_numpy(), rtol=1e-12)


def test_lifelines_model_gets_its_checks(rossi):
    """A lifelines ``CoxPHFitter``: the report's PH table is ``ci.ph_test(cph, data)``'s."""
    from lifelines import CoxPHFitter
    df = rossi[COLS + ["week", "arrest"]]
    cph = CoxPHFitter().fit(df, "week", "arrest")
    res = ci.influence(cph, df, method="vif")
    checks = model_checks(res)
    want = ci.ph_test(cph, df).table
    np.testing.assert_allclose(checks["ph"].table.to_numpy(), want.to_numpy(), rtol=1e-10)
    assert checks["failing"] == ["age"]
    assert "<h2>Model checks</h2>" in build_report(res)

"""The HTML report (``report.build_report``) of audits of every model behind the seam,
built in Python: its title, header line and Model table come from the seam
(``report_header()``, ``summary_table(robust)``; the base class ``AuditModel``'s
defaults for a seam without its own), checked against the fitted models."""
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from test_cli_audit import _num, report_tables

import coxinfluence as ci
from coxinfluence.influence_functions.aft_audit import AFTAudit
from coxinfluence.influence_functions.seam import AuditModel, ReportHeader, label_text
from coxinfluence.report import build_report


def _tables(html, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(html)
    return report_tables(path)


def _meta(html):
    return re.search(r"<p class='meta'>(.*?)</p>", html, re.S).group(1)


@pytest.fixture(scope="module")
def rossi():
    from lifelines.datasets import load_rossi
    return load_rossi()


def test_lognormal_aft_report(rossi, tmp_path):
    X = rossi[["fin", "age", "prio"]]
    fit = ci.fit_aft(X, rossi.week, rossi.arrest, "lognormal")
    html = build_report(ci.influence(fit, method="vif"), description="rossi.")
    assert "<h1>Log-normal AFT model influence audit</h1>" in html
    meta = _meta(html)
    assert meta.startswith("rossi. Log-normal AFT model (R&#x27;s survreg")
    assert (f"432 patients, {int(rossi.arrest.sum())} events, log-normal distribution, "
            f"scale {fit.scale[0]:.4g}, log-likelihood {fit.loglik:.4f};") in meta
    model = _num(_tables(html, tmp_path)["Model"])
    pd.testing.assert_index_equal(model.index, pd.Index(fit.columns))
    np.testing.assert_allclose(model["Value"], fit.coef, rtol=5.01e-4)
    np.testing.assert_allclose(model["Std. Error"], fit.se, rtol=5.01e-4)


def test_aft_interval_and_left_censored_rows_are_counted(rossi):
    """Rows censored in an interval or on the left are counted apart from the events."""
    t = rossi.week.to_numpy(float)
    lower = t.copy()
    upper = np.where(rossi.arrest == 1, t, np.inf)
    lower[:10], upper[:10] = t[:10] - 0.5, t[:10] + 0.5          # 10 interval-censored
    lower[10:15], upper[10:15] = 0.0, t[10:15]                   # 5 left-censored
    fit = ci.fit_aft(rossi[["fin", "prio"]], lower, upper=upper)
    facts = AFTAudit(fit).report_header().facts
    exact = int(((lower == upper) & (lower > 0)).sum())
    assert facts.startswith(f"{exact} events, 5 left-censored, 10 interval-censored, weibull")


def test_fine_gray_report(tmp_path):
    rng = np.random.default_rng(5)
    n = 120
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 2, n)},
                     index=[f"p{i}" for i in range(n)])
    status = pd.Series(rng.choice([0, 1, 2, 4], n), index=X.index)
    time = pd.Series(rng.exponential(size=n), index=X.index)
    group = pd.Series(rng.choice([1.0, 2.0], n), index=X.index)
    fit = ci.fit_fine_gray(X, time, status, cause=4, cengroup=group)
    html = build_report(ci.influence(fit, method="vif"))
    assert "<h1>Fine-Gray model influence audit</h1>" in html
    k = status.value_counts()
    meta = _meta(html)
    assert meta.strip().startswith(
        f"Fine-Gray model for cause 4; competing causes 1 ({k[1]} failures), 2 ({k[2]} "
        f"failures): {n} patients, {k[4]} failures of cause 4, {k[1] + k[2]} competing "
        f"failures, {k[0]} censored, censoring groups 1 ({int((group == 1).sum())} subjects), "
        f"2 ({int((group == 2).sum())} subjects), Breslow ties, log pseudo-likelihood "
        f"{fit.loglik:.4f};")
    model = _num(_tables(html, tmp_path)["Model"])
    want = fit.summary()
    for col in want.columns:
        np.testing.assert_allclose(model[col], want[col], rtol=5.01e-4, err_msg=col)


def test_fine_gray_without_competing_events_says_so():
    rng = np.random.default_rng(6)
    n = 60
    fit = ci.fit_fine_gray(rng.normal(size=(n, 1)), rng.exponential(size=n),
                           rng.integers(0, 2, n))
    html = build_report(ci.influence(fit, method="vif"))
    assert "Fine-Gray model for cause 1; no competing causes (the model is Cox&#x27;s)" in html


def test_a_fine_gray_fit_without_maximum_is_reported_in_red():
    """The convergence warning names the seam's model, not Cox."""
    rng = np.random.default_rng(0)
    n = 80
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ci.fit_fine_gray(rng.normal(size=(n, 2)), rng.exponential(size=n),
                               rng.integers(0, 3, n), max_iter=1)
        res = ci.influence(fit)
    assert not res.fit_ok
    html = build_report(res)
    assert "<p class='bad'><b>Warning: the Fine-Gray fit did not converge</b>" in html
    assert "Cox" not in html


def test_cox_report_keeps_its_words(tmp_path):
    """The Cox model's header: events, ties, the log partial likelihood; the title; the
    Model table is fit.summary() (robust with clusters, R's coxph(cluster=))."""
    from coxinfluence.demo import gbsg2_design
    X, t, e = gbsg2_design()
    X, t, e = X.iloc[:200], t.iloc[:200], e.iloc[:200]
    fit = ci.fit_cox(X, t, e, ties="breslow")
    groups = np.arange(200) % 40
    html = build_report(ci.influence(fit, method="vif", groups=groups, robust=True))
    assert "<h1>Cox model influence audit</h1>" in html
    assert (f"Cox model: 40 clusters (200 rows), {int(e.sum())} events, breslow ties, "
            f"log partial likelihood {fit.loglik:.4f};") in _meta(html)
    model = _num(_tables(html, tmp_path)["Model"])
    np.testing.assert_allclose(model["robust se"],
                               fit.summary(robust=True, groups=groups)["robust se"],
                               rtol=5.01e-4)


@pytest.mark.slow
def test_a_seam_without_report_members_gets_the_fallback(tmp_path):
    """An autodiff GLM: the title and statement are its model_name, the facts its number
    of parameters and objective, the Model table the Wald table of I^{-1}."""
    pytest.importorskip("jax")
    from coxinfluence.autodiff import AutodiffModel, losses
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = (rng.uniform(size=120) < 1 / (1 + np.exp(-X @ [1.0, -0.5]))).astype(float)
    m = AutodiffModel(losses.glm(X, y), columns=["intercept", "x1", "x2"], name="Logistic")
    assert type(m).report_header is AuditModel.report_header    # the base class's default
    html = build_report(ci.influence(m, method="vif"))
    assert "<h1>Logistic model influence audit</h1>" in html
    loss = float(m.objective(m.coef[None, :])[0])
    assert f"Logistic: 120 objects, 3 parameters, objective (loss) {loss:.4f} at the fit;" \
        in _meta(html)
    model = _num(_tables(html, tmp_path)["Model"])
    se = np.sqrt(np.diag(np.linalg.inv(m.information)))
    np.testing.assert_allclose(model["coef"], m.coef, rtol=5.01e-4)
    np.testing.assert_allclose(model["se(coef)"], se, rtol=5.01e-4)
    from scipy.stats import norm
    np.testing.assert_allclose(model["p"], 2 * norm.sf(np.abs(m.coef / se)), rtol=5.01e-4)


def test_header_title_and_label_text():
    assert ReportHeader("Weibull AFT", "s", "f").title == "Weibull AFT model influence audit"
    assert [label_text(v) for v in (1.0, np.float64(2.0), 3, "a", 1.5, True)] == \
        ["1", "2", "3", "a", "1.5", "True"]


def test_lifelines_weibull_aft_report(rossi, tmp_path):
    """A lifelines WeibullAFTFitter is reported as R's survreg model: the scale is
    lifelines' exp(-rho_); the Model table is in lifelines' params_ (its coef, se(coef), z,
    p, equal to lifelines' summary to its optimiser's tolerance)."""
    from lifelines import WeibullAFTFitter
    m = WeibullAFTFitter().fit(rossi, "week", "arrest")
    html = build_report(ci.influence(m, rossi, method="vif"))
    meta = _meta(html)
    assert "Weibull AFT model" in meta
    scale = float(re.search(r"scale ([\d.]+),", meta).group(1))
    assert scale == pytest.approx(np.exp(-m.params_.loc[("rho_", "Intercept")]), rel=1e-3)
    assert "rho_ Intercept = -log(scale)" in meta
    model = _num(_tables(html, tmp_path)["Model"])
    assert list(model.index) == [f"({p}, {c})" for p, c in m.params_.index]
    for col in ("coef", "se(coef)", "z"):
        np.testing.assert_allclose(model[col], m.summary[col], rtol=1e-3, atol=1e-5)


def test_a_models_own_flags_are_reported_in_its_words():
    """scikit-survival's Coxnet adds the flag selection_changes (the seam's extra_flags):
    the report lists the flagged patients with the seam's flag_descriptions."""
    pytest.importorskip("sksurv")
    from sklearn.preprocessing import StandardScaler
    from sksurv.datasets import load_whas500
    from sksurv.linear_model import CoxnetSurvivalAnalysis
    from sksurv.preprocessing import OneHotEncoder
    X, y = load_whas500()
    X = OneHotEncoder().fit_transform(X)
    X = pd.DataFrame(StandardScaler().fit_transform(X), columns=X.columns, index=X.index)
    net = CoxnetSurvivalAnalysis(l1_ratio=0.8, alphas=[0.02]).fit(X, y)
    res = ci.influence(net, X, y=y)
    html = build_report(res)
    n = int(res.flags["selection_changes"].sum())
    assert n > 0
    assert f"{n} patients selection changes (deleting the patient may change" in html

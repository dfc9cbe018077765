"""The test-only family (``tests/seam_example_family.py``) beyond the audit (issue 45,
item 3): ``ci.residuals`` (its residuals registered by class), the report's Model checks
(turned on by its ``"deviance"`` kind) and ``ci.evaluate`` (its survival prediction and
linear predictor registered as targets), through registration alone.

Oracles: statsmodels' GLM (binomial) for the residuals; the IPCW Brier score (the test
set's censoring Kaplan-Meier, as ``riskRegression::Score``) and Harrell's C (every pair,
as ``survival::concordance``) computed here from their definitions; refits by hand."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from seam_example_family import LogisticFit, LogisticSurvival

import coxinfluence as ci
from coxinfluence.audit.target_base import implementation_of
from coxinfluence.diagnostics.registry import residual_kinds


def _data(seed, n):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n)},
                     index=pd.Index([f"p{seed}_{i}" for i in range(n)], name="patient"))
    eta = 0.3 + 0.8 * X["x1"] - 0.6 * X["x2"]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    time = rng.exponential(1 / np.exp(eta.to_numpy() - 0.3))
    censor = rng.uniform(0, 2.5, size=n)
    return X, y, pd.Series(np.minimum(time, censor), index=X.index), pd.Series(
        (time <= censor).astype(float), index=X.index)


@pytest.fixture(scope="module")
def fitted():
    X, y, _, _ = _data(451, 150)
    w = np.random.default_rng(452).integers(1, 3, size=len(y)).astype(float)
    return X, y, w, LogisticFit(X, y, weights=w)


def test_residuals_are_glms(fitted):
    sm = pytest.importorskip("statsmodels.api")
    X, y, w, fit = fitted
    glm = sm.GLM(y, sm.add_constant(X.to_numpy()), family=sm.families.Binomial(),
                 var_weights=w).fit(tol=1e-13, maxiter=100)
    np.testing.assert_allclose(fit.coef, glm.params, rtol=0, atol=1e-9)
    assert residual_kinds(fit) == ("response", "pearson", "deviance")
    for kind, oracle in [("response", glm.resid_response), ("pearson", glm.resid_pearson),
                         ("deviance", glm.resid_deviance)]:
        got = ci.residuals(fit, kind=kind)
        assert got.index.equals(X.index) and got.name == kind
        np.testing.assert_allclose(got.to_numpy(), oracle, rtol=0, atol=1e-8)
    assert ci.residuals(fit).name == "response"                 # the first kind: default
    with pytest.raises(ci.InputError, match="'martingale' is not defined for logistic "
                                            r"\(tests\) models; it is a residual of Cox"):
        ci.residuals(fit, kind="martingale")
    labels = np.arange(len(y)) % 5
    pd.testing.assert_series_equal(
        ci.residuals(fit, kind="response", collapse=labels),
        ci.residuals(fit, kind="response").groupby(labels).sum().rename_axis("unit"))


def test_the_deviance_kind_turns_the_reports_model_checks_on(fitted, tmp_path):
    from coxinfluence.report import model_checks, write_report
    X, y, w, fit = fitted
    res = ci.influence(fit, method="vif")
    checks = model_checks(res, 10)
    assert checks is not None and checks["ph"] is None           # no PH test: no scaledsch
    pd.testing.assert_series_equal(checks["deviance"],
                                   ci.residuals(fit, kind="deviance").rename(
                                       "deviance residual"), check_names=False)
    text = write_report(tmp_path / "audit.html", res).read_text(encoding="utf-8")
    assert "Model checks" in text


def _km_censoring(time, event):
    """The test set's censoring Kaplan-Meier ``G(t)`` (right-continuous), no ties."""
    order = np.argsort(time)
    t, c = time[order], 1 - event[order]
    at_risk = len(t) - np.arange(len(t))
    surv = np.cumprod(1 - c / at_risk)
    return lambda s: np.concatenate([[1.0], surv])[np.searchsorted(t, s, side="right")]


def test_evaluate_scores_its_predictions(fitted):
    """Brier at each time: ``1/n sum [1(T_i <= t, d_i) S_i^2 / G(T_i-) + 1(T_i > t)
    (1 - S_i)^2 / G(t)]``; Harrell's C over every comparable pair, ranked by the linear
    predictor (the family's registered implementations: the dispatch rule's)."""
    _, _, _, fit = fitted
    Xt, _, tt, et = _data(453, 120)
    times = [0.3, 0.6]
    table = ci.evaluate(fit, Xt, tt, et, times=times)
    assert implementation_of("survival", fit=fit) is LogisticSurvival
    time, event = tt.to_numpy(), et.to_numpy()
    eta = np.column_stack([np.ones(len(Xt)), Xt.to_numpy()]) @ fit.coef
    S = 1 / (1 + np.exp(eta))
    G = _km_censoring(time, event)
    for t in times:
        died = (time <= t) & (event == 1)
        brier = np.mean(np.where(died, S ** 2 / G(time - 1e-12), 0.0)
                        + np.where(time > t, (1 - S) ** 2 / G(t), 0.0))
        got = table.query("metric == 'brier' and time == @t").estimate.item()
        assert got == pytest.approx(brier, rel=1e-12)
    concordant = comparable = 0
    for i in np.flatnonzero(event == 1):
        later = time > time[i]
        comparable += later.sum()
        concordant += (eta[i] > eta[later]).sum()
    c = table.query("metric == 'c_harrell'").estimate.item()
    assert c == pytest.approx(concordant / comparable, rel=1e-12)
    assert (table.se.dropna() > 0).all()


def test_its_targets_are_audited_against_refits(fitted):
    X, y, w, fit = fitted
    new = X.iloc[:2]
    res = ci.influence(fit, target=ci.targets.LinearPredictor(new), method="exact")
    assert list(res.loo_change.columns) == [f"lp[{label}]" for label in new.index]
    for label in X.index[[0, 77]]:
        keep = X.index != label
        refit = LogisticFit(X[keep], y[keep], weights=w[keep])
        D = np.column_stack([np.ones(2), new.to_numpy()])
        np.testing.assert_allclose(res.loo_change.loc[label].to_numpy(),
                                   D @ (refit.coef - fit.coef), rtol=0, atol=1e-8)

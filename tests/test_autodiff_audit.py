"""The audit through the seam for an autodiff loss (issue 23 item 2): ``ci.influence`` on an
:class:`~coxinfluence.autodiff.AutodiffModel` gives the same ``InfluenceResult`` (verified
top, flags, likelihood displacement, LMAX, dfbetas) as for a Cox fit. Oracles: statsmodels'
own refits of the GLM without each row; the closed-form Cox audit (``CoxAudit``) for the
autodiff Cox loss; the classical IF for a decomposable loss (VIF = IF exactly)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

pytest.importorskip("jax")
sm = pytest.importorskip("statsmodels.api")
from coxinfluence.autodiff import AutodiffModel, losses  # noqa: E402


@pytest.fixture(scope="module")
def logistic():
    rng = np.random.default_rng(0)
    n = 120
    X = rng.normal(size=(n, 3))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ [1.0, -0.5, 0.3] + 0.2)))).astype(float)
    model = AutodiffModel(losses.glm(X, y, "logistic"), columns=["b0", "x1", "x2", "x3"])
    return X, y, model


def _statsmodels_change(X, y, i):
    full = sm.Logit(y, sm.add_constant(X)).fit(disp=0, tol=1e-12, maxiter=100).params
    drop = sm.Logit(np.delete(y, i), sm.add_constant(np.delete(X, i, 0))).fit(
        disp=0, tol=1e-12, maxiter=100).params
    return drop - full


@pytest.mark.slow
def test_exact_changes_equal_statsmodels_refits(logistic):
    X, y, model = logistic
    res = ci.influence(model, method="exact")
    assert res.verified.all() and list(res.loo_change.columns) == ["b0", "x1", "x2", "x3"]
    for i in (0, 7, int(res.top(1).index[0])):
        np.testing.assert_allclose(res.loo_change.iloc[i], _statsmodels_change(X, y, i),
                                   atol=1e-8)
    # the displacement is twice the loss's rise at the refit, recomputed here
    i = int(res.top(1).index[0])
    theta = model.coef + res.theta_change.iloc[i].to_numpy()
    ld = 2 * (model.objective(theta[None])[0] - model.objective(model.coef[None])[0])
    assert res.ld_exact.iloc[i] == pytest.approx(ld, rel=1e-12)


@pytest.mark.slow
def test_auto_verifies_its_top_and_equals_exact_there(logistic):
    _, _, model = logistic
    auto, exact = ci.influence(model), ci.influence(model, method="exact")
    v = auto.verified.to_numpy()
    assert v.sum() >= 10 and auto.verification.rule_met
    np.testing.assert_allclose(auto.loo_change.to_numpy()[v], exact.loo_change.to_numpy()[v],
                               rtol=0, atol=1e-12)
    assert list(auto.top(10).index) == list(exact.top(10).index)
    frame = auto.summary_frame()
    assert {"dfbetas x1", "lmax", "unstable", "verified"} <= set(frame.columns)
    assert np.isclose((auto.lmax ** 2).sum(), 1.0)
    assert "120 objects" in auto.units_text and "<table" in auto._repr_html_()


def test_decomposable_loss_vif_equals_the_classical_if(logistic):
    _, _, model = logistic
    vif = ci.influence(model, method="vif").loo_change.to_numpy()
    reid = ci.influence(model, method="reid").loo_change.to_numpy()
    np.testing.assert_allclose(vif, reid, rtol=1e-10, atol=1e-14)


@pytest.mark.slow
def test_autodiff_cox_audit_equals_the_closed_form_audit():
    rng = np.random.default_rng(3)
    n = 80
    X = rng.normal(size=(n, 2))
    t = np.round(rng.exponential(np.exp(-X @ [0.5, -0.4])), 1) + 0.1   # ties
    e = (rng.uniform(size=n) < 0.75).astype(float)
    fit = ci.fit_cox(X, t, e)
    model = AutodiffModel(losses.cox(X, t, e), fit.coef, columns=fit.columns)
    for method, tol in (("vif", 1e-10), ("reid", 1e-10), ("newton", 1e-9), ("exact", 1e-8)):
        ours = ci.influence(model, method=method).loo_change.to_numpy()
        closed = ci.influence(fit, method=method).loo_change.to_numpy()
        np.testing.assert_allclose(ours, closed, rtol=0, atol=tol * np.abs(closed).max())
    assert list(ci.influence(model).top(10).index) == list(ci.influence(fit).top(10).index)


def test_cox_only_requests_are_refused(logistic):
    X, _, model = logistic
    with pytest.raises(ValueError, match="not available for this model"):
        ci.influence(model, target=ci.targets.RelativeRisk(X[:2]))
    with pytest.raises(ValueError, match="groups= and robust= are not available for this model"):
        ci.influence(model, groups=np.arange(len(X)) // 2)
    with pytest.raises(ValueError, match="rows but the model was fitted on"):
        ci.influence(model, pd.DataFrame({"a": [1, 2]}))
    # the caller's frame is matched on the index (the objects' labels), never by position
    shuffled = pd.DataFrame({"a": np.arange(len(X))}).sample(frac=1.0, random_state=0)
    res = ci.influence(model, shuffled, method="vif")
    assert (res.frame["a"].to_numpy() == np.arange(len(X))).all()
    with pytest.raises(ValueError, match="does not match the model's rows"):
        ci.influence(model, shuffled.set_axis(shuffled.index + 1000))

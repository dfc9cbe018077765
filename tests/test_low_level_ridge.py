"""The low-level functions on a ridge-penalised ``CoxFit`` (lifelines' ``penalizer``):
``ci.vif``, ``ci.newton_loo`` and ``ci.exact_loo`` go through the Cox seam as every
family's fits do (issue 34) and take it, where they used to refuse it; its rows are the
units (clusters and subjects: Reid's IF only, as before).

Oracles, by literal deletion of the row: lifelines' penalised objective ``J = L + (n/2)
sum_j c (sigma_j theta_j)^2`` (``sigma`` the columns' sample SDs) recomputed from the data
without the row, its loss's derivatives from ``ci.cox_gradient`` / ``ci.cox_hessian``
there; the refits also against lifelines' own refits; Reid's IF against R's formula
``n H_J^{-1} w_i U_i`` from ``ci.score_residuals``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

lifelines = pytest.importorskip("lifelines")

C = 0.3


@pytest.fixture(scope="module")
def ridge():
    rng = np.random.default_rng(34)
    n = 60
    df = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.integers(0, 2, size=n) * 1.0},
                      index=pd.Index([f"r{i:02d}" for i in range(n)], name="row"))
    df["t"] = np.round(rng.exponential(np.exp(-0.6 * df["x1"])), 1) + 0.1   # ties
    df["e"] = (rng.uniform(size=n) < 0.75).astype(float)
    cph = lifelines.CoxPHFitter(penalizer=C, l1_ratio=0.0).fit(
        df, "t", "e", fit_options={"precision": 1e-13})
    fit = ci.influence(cph, df, method="vif").fit
    assert fit.penalty is not None and fit.converged
    return fit, df, cph


def _deleted(fit, df, i, theta):
    """The penalised gradient and Hessian at ``theta`` of the problem without row ``i``."""
    keep = np.arange(len(df)) != i
    X, t, e = df[["x1", "x2"]].to_numpy()[keep], df["t"].to_numpy()[keep], df["e"].to_numpy()[keep]
    s = keep.sum() * C * X.var(axis=0, ddof=1)
    return (ci.cox_gradient(theta, X, t, e, ties=fit.ties) + s * theta,
            ci.cox_hessian(theta, X, t, e, ties=fit.ties) + np.diag(s))


ROWS = [0, 7, 31, 59]


def test_vif_is_the_penalised_gradient_difference(ridge):
    fit, df, _ = ridge
    vif = ci.vif(fit)
    assert vif.index.equals(df.index) and list(vif.columns) == ["x1", "x2"]
    n = len(df)
    for i in ROWS:
        g_loo, _ = _deleted(fit, df, i, fit.coef)
        expected = -n * np.linalg.solve(fit.information, fit.gradient - g_loo)
        np.testing.assert_allclose(vif.iloc[i], expected, rtol=1e-9, atol=1e-12)


def test_newton_loo_is_one_newton_step_of_the_deleted_problem(ridge):
    fit, df, _ = ridge
    loo = ci.newton_loo(fit)
    for i in ROWS:
        g, H = _deleted(fit, df, i, fit.coef)
        np.testing.assert_allclose(loo.iloc[i], fit.coef - np.linalg.solve(H, g),
                                   rtol=1e-9, atol=1e-12)


def test_exact_loo_solves_the_deleted_problems_and_equals_lifelines(ridge):
    fit, df, _ = ridge
    loo = ci.exact_loo(fit, progress=False)
    assert np.isfinite(loo.to_numpy()).all()
    for i in ROWS:
        g, H = _deleted(fit, df, i, loo.iloc[i].to_numpy())
        assert np.abs(np.linalg.solve(H, g)).max() < 1e-10
        refit = lifelines.CoxPHFitter(penalizer=C, l1_ratio=0.0).fit(
            df.drop(index=df.index[i]), "t", "e", fit_options={"precision": 1e-13})
        np.testing.assert_allclose(loo.iloc[i], refit.params_.to_numpy(), rtol=0, atol=1e-7)
    # its options, as for an unpenalised fit: the same refits in other batches
    np.testing.assert_allclose(ci.exact_loo(fit, batch_size=5, progress=False), loo,
                               rtol=0, atol=1e-12)


def test_reid_influence_is_the_score_residuals_on_the_penalised_information(ridge):
    fit, df, _ = ridge
    n = len(df)
    expected = n * ci.score_residuals(fit).to_numpy() @ np.linalg.inv(fit.information)
    np.testing.assert_allclose(ci.reid_influence(fit), expected, rtol=1e-10, atol=1e-12)


def test_clusters_of_a_penalised_fit_reid_only(ridge):
    """Reid's IF of clusters needs no penalty per unit (R's ``collapse``: the rows' score
    residuals summed); the deletions need the penalty without the cluster, not
    implemented."""
    fit, df, _ = ridge
    groups = np.arange(len(df)) // 2
    U = ci.score_residuals(fit).to_numpy()
    summed = np.array([U[groups == g].sum(axis=0) for g in range(groups.max() + 1)])
    expected = (groups.max() + 1) * summed @ np.linalg.inv(fit.information)
    np.testing.assert_allclose(ci.reid_influence(fit, groups=groups), expected, rtol=1e-10,
                               atol=1e-12)
    for f in (ci.vif, ci.newton_loo, ci.exact_loo):
        with pytest.raises(NotImplementedError, match="penalised"):
            f(fit, groups=groups)

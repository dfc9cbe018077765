"""Property tests (hypothesis) of the AFT audit (issue 26): "VIF = IF exactly; weights of 2 =
duplicated rows", on random small designs (n 20-60 rows, 1-3 covariates, each
distribution, right censoring with some exact, interval- and left-censored rows, random
case weights).

The loss ``L(theta) = sum_i w_i l_i(theta)`` is decomposable (docs/conventions.md):

- the VIF of row i, ``-(H/n)^{-1} (grad L(theta_hat) - grad L_{-i}(theta_hat))``, with
  ``L_{-i}`` the loss of the data with row i literally removed (the inputs without row
  i, validated again by :func:`coxinfluence.models.aft.make_aft_data`), is Reid's IF,
  ``-w_i d theta_hat / d w_i`` times n: ``method="vif"`` and ``"reid"`` give identical
  changes, equal to that definition and to central differences of refits in ``w_i``;
- a case weight of 2 is two copies of the row: the fits agree (coef, log-likelihood,
  variance); deleting the weight-2 row is deleting both copies; deleting one copy is the
  weighted fit with that weight 2 -> 1, and its first-order change is half the weighted
  row's (the change is linear in the removed weight);
- a subject's (``id=``) first-order change is the sum of its rows', and its refit is the
  fit of the data without its rows.
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import coxinfluence as ci
from coxinfluence.influence_functions.aft_audit import AFTAudit
from coxinfluence.likelihood.aft import AFTLikelihood
from coxinfluence.models.aft import make_aft_data

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
DISTS = ("weibull", "exponential", "lognormal", "loglogistic")

designs = st.fixed_dictionaries({
    "seed": st.integers(0, 2 ** 32 - 1),
    "n": st.integers(20, 60),
    "d": st.integers(1, 3),
    "dist": st.sampled_from(DISTS),
    "censored": st.floats(0.0, 0.5),
    "interval": st.floats(0.0, 0.3),
    "left": st.floats(0.0, 0.15),
})


def draw_design(seed, n, d, dist, censored, interval, left):
    """``X, lower, upper``: ``log T = 0.5 + X b + sigma W`` (W of ``dist``), each row
    right-censored (upper inf) with probability ``censored``, else interval-censored
    around T, left-censored at a time after T, or exact (lower == upper)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3, size=d)
    if d > 1 and rng.uniform() < 0.5:
        X[:, -1] = rng.integers(0, 2, size=n)                # a 0/1 covariate
    b = rng.normal(scale=0.5, size=d) / X.std(axis=0)
    sigma = 1.0 if dist == "exponential" else rng.uniform(0.4, 1.5)
    W = {"weibull": lambda: np.log(rng.exponential(size=n)),
         "exponential": lambda: np.log(rng.exponential(size=n)),
         "lognormal": lambda: rng.normal(size=n),
         "loglogistic": lambda: rng.logistic(size=n)}[dist]()
    T = np.exp(0.5 + X @ b + sigma * W)
    lower, upper = T.copy(), T.copy()
    u = rng.uniform(size=n)
    right = u < censored
    lower[right] = T[right] * rng.uniform(0.2, 1.0, size=right.sum())
    upper[right] = np.inf
    inter = ~right & (u < censored + interval)
    lower[inter] = T[inter] * rng.uniform(0.3, 1.0, size=inter.sum())
    upper[inter] = T[inter] * rng.uniform(1.0, 3.0, size=inter.sum()) + 1e-3 * T[inter]
    lft = ~right & ~inter & (u < censored + interval + left)
    lower[lft] = 0.0
    upper[lft] = T[lft] * rng.uniform(1.0, 2.0, size=lft.sum())
    return X, lower, upper


def fit_or_reject(X, lower, upper, dist, weights=None):
    """``ci.fit_aft``, or ``assume(False)`` for a degenerate draw: no event, a constant or
    collinear covariate, as many parameters as rows, or no convergence (a scale going
    to 0, a coefficient to infinity)."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ci.ConvergenceWarning)
            fit = ci.fit_aft(X, lower, dist=dist, upper=upper, weights=weights)
    except (ci.CoxInputError, ci.ConvergenceWarning):
        assume(False)
    assume(np.linalg.cond(fit.information) < 1e10)
    return fit


def deleted_gradient(X, lower, upper, dist, weights, i, theta):
    """``grad L_{-i}(theta)``: the data without row i, validated again, its loss's gradient;
    None where deleting row i leaves no model (no event left, a constant column)."""
    keep = np.arange(len(lower)) != i
    try:
        data = make_aft_data(X[keep], lower[keep], dist=dist, upper=upper[keep],
                             weights=weights[keep])[0]
    except ci.CoxInputError:
        return None
    return AFTLikelihood(data).loss_grad_hess(theta[None], hess=False)[1][0]


@SETTINGS
@given(design=designs)
def test_vif_equals_reid_and_its_deletion_definition(design):
    rng = np.random.default_rng(design["seed"] + 1)
    X, lower, upper = draw_design(**design)
    w = rng.uniform(0.5, 2.0, size=len(lower))
    fit = fit_or_reject(X, lower, upper, design["dist"], w)
    vif = ci.influence(fit, method="vif").theta_change.to_numpy()
    reid = ci.influence(fit, method="reid").theta_change.to_numpy()
    np.testing.assert_array_equal(vif, reid)
    n, H, g = fit.n, fit.information, fit.gradient
    scale = np.abs(np.linalg.solve(H, np.abs(fit.row_scores()).max(axis=0))).max()
    for i in range(n):
        g_del = deleted_gradient(X, lower, upper, design["dist"], w, i, fit.coef)
        if g_del is None:
            continue
        vif_def = -n * np.linalg.solve(H, g - g_del)      # VIF_n(i), on the paper scale
        np.testing.assert_allclose(vif[i], -vif_def / n, rtol=1e-8, atol=1e-10 * scale)
    # Reid's IF: minus the weight times the derivative of the refit in w_i
    i = int(rng.integers(n))
    h = 1e-5 * w[i]
    up, down = w.copy(), w.copy()
    up[i] += h
    down[i] -= h
    dtheta = (ci.fit_aft(X, lower, dist=design["dist"], upper=upper, weights=up).coef
              - ci.fit_aft(X, lower, dist=design["dist"], upper=upper, weights=down).coef)
    np.testing.assert_allclose(-w[i] * dtheta / (2 * h), reid[i], rtol=1e-4,
                               atol=1e-6 * max(np.abs(reid[i]).max(), 1e-3))


@SETTINGS
@given(design=designs)
def test_a_weight_of_two_is_two_copies_of_the_row(design):
    rng = np.random.default_rng(design["seed"] + 2)
    X, lower, upper = draw_design(**design)
    n = len(lower)
    twice = rng.uniform(size=n) < 0.3
    assume(twice.any())
    w = np.where(twice, 2.0, 1.0)
    copy_of = np.concatenate([np.arange(n), np.flatnonzero(twice)])   # dup row -> row
    dist = design["dist"]
    weighted = fit_or_reject(X, lower, upper, dist, w)
    dup = fit_or_reject(X[copy_of], lower[copy_of], upper[copy_of], dist)
    tol = {"rtol": 1e-7, "atol": 1e-9}
    np.testing.assert_allclose(dup.coef, weighted.coef, **tol)
    np.testing.assert_allclose(dup.loglik, weighted.loglik, rtol=1e-10)
    np.testing.assert_allclose(dup.var, weighted.var, rtol=1e-6,
                               atol=1e-8 * np.abs(weighted.var).max())
    by_row, by_copy, one_copy = AFTAudit(weighted), AFTAudit(dup, copy_of), AFTAudit(dup)
    # deleting the weight-2 row is deleting both copies: every method, the robust covariance
    for method in ("vif", "reid", "newton"):
        np.testing.assert_allclose(by_copy.change(method), by_row.change(method), **tol)
    np.testing.assert_allclose(by_copy.covariance(True), weighted.robust_covariance(), rtol=1e-6,
                               atol=1e-9 * np.abs(weighted.robust_covariance()).max())
    # deleting one copy: each copy's change is the same, half of the weighted row's
    # first-order change, and its refit is the weighted fit with that weight 2 -> 1
    i = int(rng.choice(np.flatnonzero(twice)))
    copies = np.flatnonzero(copy_of == i)
    vif = one_copy.change("vif")
    np.testing.assert_allclose(vif[copies[0]], vif[copies[1]], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(vif[copies[0]], by_row.change("vif")[i] / 2, **tol)
    refit = one_copy.refit(copies)
    assume((refit.status == "ok").all())
    np.testing.assert_allclose(refit.theta[0], refit.theta[1], rtol=1e-9, atol=1e-10)
    lighter = w.copy()
    lighter[i] = 1.0
    alone = ci.fit_aft(X, lower, dist=dist, upper=upper, weights=lighter)
    np.testing.assert_allclose(refit.theta[0], alone.coef, **tol)
    both = AFTAudit(weighted).refit([i])
    np.testing.assert_allclose(both.theta[0], by_copy.refit([i]).theta[0], **tol)


@SETTINGS
@given(design=designs, per_subject=st.integers(1, 3))
def test_a_subjects_change_is_its_rows_changes_summed(design, per_subject):
    """Random subjects (``id=``) of about ``per_subject`` rows: the first-order change of a subject
    is the sum of its rows' (the loss is a sum over rows), the subjects are the default
    units, and a subject's refit is ``ci.fit_aft`` without its rows."""
    rng = np.random.default_rng(design["seed"] + 3)
    X, lower, upper = draw_design(**design)
    n = len(lower)
    ids = np.sort(rng.integers(0, max(n // per_subject, 2), size=n)) * 10 + 7
    rng.shuffle(ids)
    dist = design["dist"]
    fit = fit_or_reject(X, lower, upper, dist)
    by_id = ci.fit_aft(X, lower, dist=dist, upper=upper, id=ids)
    labels = np.unique(ids)
    res = ci.influence(by_id, method="vif")
    np.testing.assert_array_equal(res.theta_change.index.to_numpy(), labels)
    rows = AFTAudit(fit).change("vif")
    summed = np.zeros((labels.size, rows.shape[1]))
    np.add.at(summed, np.searchsorted(labels, ids), rows)
    np.testing.assert_allclose(res.theta_change.to_numpy(), summed, rtol=1e-10,
                               atol=1e-13 * np.abs(summed).max())
    k = int(rng.integers(labels.size))
    keep = ids != labels[k]
    try:
        alone = ci.fit_aft(X[keep], lower[keep], dist=dist, upper=upper[keep])
    except ci.CoxInputError:
        assume(False)
    refit = AFTAudit(by_id).refit([k])
    assume(refit.status[0] == "ok" and alone.converged)
    np.testing.assert_allclose(refit.theta[0], alone.coef, rtol=1e-7, atol=1e-9)

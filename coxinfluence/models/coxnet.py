"""scikit-survival's Cox objectives: ``CoxPHSurvivalAnalysis`` (ridge) and
``CoxnetSurvivalAnalysis`` (elastic net), their fits and their deletion refits.

Both are written on our scale (``docs/conventions.md``, "The loss and the information"):
the negative log partial likelihood ``L`` summed over events, plus a penalty; a deletion
refit keeps the estimator's hyperparameters.

``CoxPHSurvivalAnalysis(alpha, ties)`` minimises (``sksurv/linear_model/coxph.py``,
``CoxPHOptimizer.nlog_likelihood``: ``(L + sum_j alpha_j beta_j^2 / 2) / n``)

    J(beta) = L(beta) + (1/2) sum_j alpha_j beta_j^2,

a ridge penalty whose strength does not depend on the data: without row i it is the same
``alpha`` (:func:`sksurv_ridge_penalty`, a :class:`~coxinfluence.models.penalized_cox.RidgePenalty`
with ``strength_loo = alpha``), so the lifelines ridge machinery applies unchanged.

``CoxnetSurvivalAnalysis(l1_ratio, penalty_factor, normalize)`` at one ``alpha`` minimises
(``sksurv/linear_model/coxnet.py`` and its C++ coordinate descent; the KKT conditions
checked here to 5e-9 on WHAS500, Breslow ties whatever the data)

    (1/n) L_breslow(beta) + alpha sum_j pf_j [l1_ratio s_j |beta_j|
                                              + (1 - l1_ratio)/2 s_j^2 beta_j^2],

``pf`` the estimator's ``penalty_factor_`` (rescaled by scikit-survival to sum to d),
``s_j`` the L2 norm of the centred column j when ``normalize=True`` (it fits
``beta*_j = s_j beta_j`` on ``(x_j - mean_j) / s_j``), else 1. Times n, on our scale:

    J(beta) = L(beta) + sum_j lambda_j |beta_j| + (1/2) sum_j r_j beta_j^2,
    lambda_j = n alpha l1_ratio pf_j s_j,     r_j = n alpha (1 - l1_ratio) pf_j s_j^2.

Without row i, ``n -> n - 1`` and ``s_j -> s_{j,-i}``,
``s_{j,-i}^2 = s_j^2 - n/(n-1) (x_ij - mean_j)^2`` (the centred sum of squares without
row i), which :class:`ElasticNetPenalty` holds per row (``l1_loo``, ``ridge_loo``).

The elastic-net fit and refits (:func:`elastic_net_newton`) are proximal Newton: at
``beta`` the smooth part ``L + ridge`` is replaced by its second-order expansion and the
lasso problem so obtained is solved (by one linear solve when it keeps the signs and zeros
of ``beta``, else by feature-sign search, else by coordinate descent; exact zeros), then
the step is halved until ``J`` decreases. Converged when the KKT
conditions hold to ``tol``: ``|g_j + lambda_j sign(beta_j)| <= tol`` where
``beta_j != 0`` and ``|g_j| <= lambda_j + tol`` where ``beta_j = 0`` (``g`` the smooth
gradient), over every covariate.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coxinfluence.data.deletion import Deletion
from coxinfluence.likelihood.objective import cox_objective, gradient_tolerance
from coxinfluence.models.cox import CoxFit
from coxinfluence.models.penalized_cox import RidgePenalty

__all__ = ["ElasticNetPenalty", "SksurvCoxFit", "sksurv_ridge_penalty",
           "elastic_net_penalty", "elastic_net_newton", "kkt_violations", "kkt_residual",
           "fit_coxnet", "coxnet_refits"]


@dataclass(eq=False)
class SksurvCoxFit(CoxFit):
    """A :class:`CoxFit` of a scikit-survival estimator: ``centre`` is what its
    ``predict`` subtracts from the covariates (Coxnet: the training means, which a
    deletion changes; ``CoxPHSurvivalAnalysis``: None, ``predict`` is ``X beta``),
    ``estimator`` the fitted estimator's class name, ``alpha`` Coxnet's alpha."""

    centre: object = None
    estimator: str = ""
    alpha: object = None


def sksurv_ridge_penalty(alpha, n):
    """``CoxPHSurvivalAnalysis``'s penalty ``(1/2) sum_j alpha_j beta_j^2`` as a
    :class:`RidgePenalty` (strength ``alpha``, the same without any row)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    return RidgePenalty(strength=alpha.copy(),
                        strength_loo=np.broadcast_to(alpha, (n, alpha.size)).copy())


@dataclass
class ElasticNetPenalty:
    """``sum_j l1_j |beta_j| + (1/2) sum_j ridge_j beta_j^2`` (module docstring), with the
    strengths without each row (caller's row order) in ``l1_loo``, ``ridge_loo`` (n, d)."""

    l1: np.ndarray
    ridge: np.ndarray
    l1_loo: np.ndarray
    ridge_loo: np.ndarray

    @property
    def strength(self):
        """The ridge part's strength (what ``CoxFit.penalty`` readers call ``strength``)."""
        return self.ridge

    def value(self, theta):
        theta = np.atleast_2d(theta)
        return 0.5 * (self.ridge * theta ** 2).sum(axis=1) + (self.l1 * np.abs(theta)).sum(axis=1)


def column_norms(X):
    """(d,) and (n, d): the L2 norms of the centred columns of ``X`` (n, d) and the same
    without each row, ``s_{-i}^2 = s^2 - n/(n-1) (x_ij - mean_j)^2``; a zero norm is 1,
    as scikit-learn's ``normalize``."""
    n = X.shape[0]
    dev = X - X.mean(axis=0)
    ss = (dev ** 2).sum(axis=0)
    ss_loo = np.maximum(ss[None, :] - n / (n - 1) * dev ** 2, 0.0)
    s, s_loo = np.sqrt(ss), np.sqrt(ss_loo)
    return np.where(s > 0, s, 1.0), np.where(s_loo > 0, s_loo, 1.0)


def elastic_net_penalty(X, alpha, l1_ratio, penalty_factor, normalize):
    """:class:`ElasticNetPenalty` of ``CoxnetSurvivalAnalysis`` at ``alpha`` on the design
    ``X`` (n, d, caller's order): module docstring."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if n < 3:
        raise ValueError("a penalised model needs at least 3 rows")
    pf = np.broadcast_to(np.asarray(penalty_factor, dtype=np.float64), (d,))
    if normalize:
        s, s_loo = column_norms(X)
    else:
        s, s_loo = np.ones(d), np.ones((n, d))
    a1, a2 = alpha * l1_ratio * pf, alpha * (1.0 - l1_ratio) * pf
    return ElasticNetPenalty(l1=n * a1 * s, ridge=n * a2 * s ** 2,
                             l1_loo=(n - 1) * a1 * s_loo, ridge_loo=(n - 1) * a2 * s_loo ** 2)


def kkt_violations(theta, grad, l1):
    """(..., d) the violations of the elastic net's KKT conditions, per coefficient:
    ``|g_j + l1_j sign(theta_j)|`` where ``theta_j != 0``, ``max(|g_j| - l1_j, 0)`` where
    it is 0 (``grad``: the smooth part's gradient; ``l1 = 0``: the gradient itself)."""
    on = theta != 0
    return np.where(on, np.abs(grad + l1 * np.sign(theta)), np.maximum(np.abs(grad) - l1, 0.0))


def kkt_residual(theta, grad, l1):
    """(B,) the largest of :func:`kkt_violations`."""
    return kkt_violations(theta, grad, l1).max(axis=1)


def _lasso_step(theta, grad, H, l1, sweeps=500, rtol=1e-9):
    """(B, d) the minimiser ``z`` of ``g'(z - theta) + (1/2)(z - theta)' H (z - theta)
    + sum_j l1_j |z_j|`` by cyclic coordinate descent (soft thresholding), batched."""
    z = theta.copy()
    r = np.zeros_like(theta)                     # H (z - theta)
    diag = np.einsum("bjj->bj", H)
    for _ in range(sweeps):
        moved = 0.0
        for j in range(theta.shape[1]):
            h = diag[:, j]
            a = grad[:, j] + r[:, j] - h * (z[:, j] - theta[:, j])
            u = h * theta[:, j] - a
            # h = 0 (a covariate constant in the data): flat but for the penalty, so 0
            new = (np.sign(u) * np.maximum(np.abs(u) - l1[:, j], 0.0)
                   / np.where(h > 0, h, np.inf))
            step = new - z[:, j]
            if np.any(step != 0):
                z[:, j] = new
                r += H[:, :, j] * step[:, None]
                moved = max(moved, float(np.max(np.abs(step) / (1.0 + np.abs(new)))))
        if moved <= rtol:
            break
    return z


def _feature_sign(theta, grad, H, l1, max_steps=None):
    """:func:`_lasso_step`'s minimiser for one problem by feature-sign search (Lee, Battle,
    Raina and Ng 2007, "Efficient sparse coding algorithms", Algorithm 1): add the zero
    coordinate that violates its KKT inequality most, with the sign that decreases the
    objective; solve on the nonzero coordinates with their signs fixed; go to the best
    point on the segment where a sign changes (a coordinate set to zero and dropped);
    repeat. The objective decreases at every step; None when it stops decreasing (a
    coordinate just added takes the wrong sign at once) or ``max_steps`` are not enough:
    the caller falls back to coordinate descent."""
    d = theta.size
    max_steps = 10 * d if max_steps is None else max_steps
    pen = l1 > 0

    def value(v):
        dv = v - theta
        return grad @ dv + 0.5 * dv @ H @ dv + l1 @ np.abs(v)

    z, s = theta.copy(), np.sign(theta)
    S = (z != 0) | ~pen
    for _ in range(max_steps):
        c = grad + H @ (z - theta)
        viol = np.where(~S, np.abs(c) - l1, -np.inf)
        j = int(np.argmax(viol))
        if viol[j] > 1e-13 * (1.0 + l1[j]):
            S[j], s[j] = True, -np.sign(c[j])
        elif np.all(np.abs(np.where(S, c + l1 * s, 0.0))
                    <= 1e-11 * (1.0 + np.abs(c) + l1)):
            return z
        idx = np.flatnonzero(S)
        w = np.zeros(d)
        try:
            w[idx] = np.linalg.solve(H[np.ix_(idx, idx)],
                                     H[idx] @ theta - grad[idx] - l1[idx] * s[idx])
        except np.linalg.LinAlgError:
            return None
        flips = idx[pen[idx] & (np.sign(w[idx]) != s[idx])]
        best, best_v = w, value(w)
        for k in flips:
            t = z[k] / (z[k] - w[k]) if z[k] != w[k] else 0.0
            cand = z + t * (w - z)
            cand[k] = 0.0
            v = value(cand)
            if v < best_v:
                best, best_v = cand, v
        if best_v >= value(z):      # no progress (a sign at once wrong): give up
            return None
        z = best
        s = np.where(S, np.sign(z), 0.0)
        S = (z != 0) | ~pen
    return None


def _same_signs_step(theta, grad, H, l1):
    """``(z, ok)``: the minimiser of :func:`_lasso_step`'s problem when it keeps the zeros
    and signs of ``theta`` (one linear solve on the nonzero coordinates, the others
    decoupled), and whether it does (signs kept, the zeros' KKT inequalities hold). Near
    the minimum it does, and coordinate descent is not needed."""
    B, d = theta.shape
    S = (theta != 0) | (l1 == 0)
    M = np.where(S[:, :, None] & S[:, None, :], H, 0.0) + np.where(~S, 1.0, 0.0)[:, :, None] \
        * np.eye(d)[None]
    rhs = np.where(S, grad + l1 * np.sign(theta), 0.0)
    try:
        step = -np.linalg.solve(M, rhs[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        return theta, np.zeros(B, dtype=bool)
    z = theta + step
    slope = grad + np.einsum("bjk,bk->bj", H, step)
    keep = np.where(S & (l1 > 0), np.sign(z) == np.sign(theta), True)
    zeros = np.where(S, True, np.abs(slope) <= l1)
    ok = keep.all(axis=1) & zeros.all(axis=1) & np.isfinite(z).all(axis=1)
    return z, ok


def elastic_net_newton(objective, l1, theta0, tol, max_iter=100):
    """Minimise ``smooth(theta) + sum_j l1_j |theta_j|`` for a batch of problems by proximal
    Newton (module docstring). ``objective(idx, theta) -> (loss, grad, hess)`` is the
    smooth part (:func:`coxinfluence.likelihood.objective.cox_objective` with its ridge);
    ``l1`` (B, d). Returns ``(theta, converged, grad, hess)``, the smooth part's gradient
    and Hessian at ``theta``.

    Not :func:`coxinfluence.numerics.newton.newton` (the package's one solver for smooth
    losses): the L1 term is not differentiable at 0, so a step solves a lasso subproblem
    in the quadratic model (:func:`_same_signs_step`, feature-sign search, coordinate
    sweeps) and convergence is the KKT conditions, not a small gradient."""
    theta = np.array(theta0, dtype=np.float64)
    B = theta.shape[0]
    idx = np.arange(B)
    loss, grad, H = objective(idx, theta)
    F = loss + (l1 * np.abs(theta)).sum(axis=1)
    stuck = np.zeros(B, dtype=bool)
    for _ in range(max_iter):
        todo = np.flatnonzero((kkt_residual(theta, grad, l1) > tol) & ~stuck
                              & np.isfinite(F))
        if todo.size == 0:
            break
        z, easy = _same_signs_step(theta[todo], grad[todo], H[todo], l1[todo])
        for h in np.flatnonzero(~easy):
            b = todo[h]
            found = _feature_sign(theta[b], grad[b], H[b], l1[b])
            z[h] = (found if found is not None else _lasso_step(
                theta[b:b + 1], grad[b:b + 1], H[b:b + 1], l1[b:b + 1], sweeps=100)[0])
        t = np.ones(todo.size)
        pending = np.arange(todo.size)
        for _halving in range(60):
            rows = todo[pending]
            cand = np.where(t[pending, None] == 1.0, z[pending],
                            theta[rows] + t[pending, None] * (z[pending] - theta[rows]))
            lc, gc, Hc = objective(rows, cand)
            Fc = lc + (l1[rows] * np.abs(cand)).sum(axis=1)
            ok = np.isfinite(Fc) & (Fc <= F[rows] + 1e-13 * np.abs(F[rows]))
            acc = rows[ok]
            theta[acc], grad[acc], H[acc], F[acc] = cand[ok], gc[ok], Hc[ok], Fc[ok]
            pending = pending[~ok]
            if pending.size == 0:
                break
            t[pending] *= 0.5
        stuck[todo[pending]] = True
    converged = kkt_residual(theta, grad, l1) <= tol
    return theta, converged, grad, H


def fit_coxnet(data, penalty, init, *, tol=1e-10, max_iter=100, **fields):
    """A :class:`SksurvCoxFit` at the elastic net's minimum on ``data`` (a Breslow
    ``CoxData``), from ``init`` (the estimator's coefficients). ``information`` is the
    smooth part's Hessian (``L`` plus the ridge part); ``converged`` means the KKT
    conditions hold to ``tol`` (:func:`gradient_tolerance`)."""
    fit = SksurvCoxFit(coef=np.zeros(data.d), loglik=np.nan, information=np.eye(data.d),
                       gradient=np.zeros(data.d), converged=False, n_iter=0, data=data,
                       ties="breslow", tol=tol, max_iter=max_iter, penalty=penalty, ctype=1,
                       **fields)
    objective = cox_objective(fit.risk_sets, ridge=penalty.ridge)
    theta, ok, grad, H = elastic_net_newton(objective, penalty.l1[None, :],
                                            np.asarray(init, dtype=np.float64)[None, :],
                                            gradient_tolerance(data, tol), max_iter)
    fit.coef, fit.converged, fit.gradient, fit.information = theta[0], bool(ok[0]), grad[0], H[0]
    fit.loglik = float(-fit.risk_sets.loss_grad_hess(theta, hess=False)[0][0])
    return fit


def coxnet_refits(fit, rows, init=None, batch=64):
    """(m, d) exact refits of the elastic net without each of the caller's ``rows`` (the
    penalty's strengths without the row, ``n -> n - 1``), started at ``init`` (m, d; e.g.
    a first-order prediction) or ``fit.coef``; NaN where a refit does not converge."""
    rows = np.asarray(rows, dtype=int)
    start = (np.repeat(fit.coef[None, :], rows.size, axis=0) if init is None
             else np.asarray(init, dtype=np.float64))
    data, penalty = fit.data, fit.penalty
    out = np.full((rows.size, data.d), np.nan)
    for b0 in range(0, rows.size, batch):
        part = rows[b0:b0 + batch]
        deleted = Deletion.of_rows(data.n, data.inverse_order[part])
        objective = cox_objective(fit.risk_sets, deleted, ridge=penalty.ridge_loo[part])
        theta, ok, _, _ = elastic_net_newton(objective, penalty.l1_loo[part],
                                             start[b0:b0 + part.size],
                                             gradient_tolerance(data, fit.tol), fit.max_iter)
        out[b0:b0 + part.size] = np.where(ok[:, None], theta, np.nan)
    return out

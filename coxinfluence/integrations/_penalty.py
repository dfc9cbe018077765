"""lifelines' ridge penalty (``penalizer > 0, l1_ratio = 0``) in closed form.

lifelines fits on standardised covariates ``x_j / sigma_j`` (``sigma_j`` the sample
standard deviation, ddof 1, of design column j over the n training rows) and minimises

    J(theta) = L(theta) + (n / 2) sum_j c_j (sigma_j theta_j)^2 = L(theta) + P(theta),

with ``L`` the negative log partial likelihood (summed), ``c`` = ``penalizer`` (a scalar or
one value per coefficient) and ``theta`` the coefficients on the original scale
(``params_``). Refitting lifelines without row i changes the penalty too: ``n -> n - 1``
and ``sigma_j -> sigma_{j,-i}`` with

    (n - 2) sigma_{j,-i}^2 = (n - 1) sigma_j^2 - n / (n - 1) (x_ij - mean_j)^2.

So, with ``s = n c sigma^2`` and ``s_{-i} = (n - 1) c sigma_{-i}^2`` (per coefficient),

    grad J - grad J_{-i} = (grad L - grad L_{-i}) + theta_hat * (s - s_{-i}),
    H_J = H_L + diag(s),

and the VIF change is ``theta_{-i} - theta_hat ~ H_J^{-1} (grad J - grad J_{-i})`` (the
``CoxFit`` built here carries ``information = H_J``, so ``ci.vif`` already applies
``H_J^{-1}`` to the partial-likelihood part). Reid's IF is the derivative in row i's
case weight, which the penalty does not involve: ``H_J^{-1} w_i U_i``. One-step Newton and
exact refits minimise ``J_{-i}`` (batched Newton to ``max |grad| <= 1e-10``).
The likelihood displacement uses J: ``2 [J(theta_{-i}) - J(theta_hat)]``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cox import CoxFit, _full_terms, _loss_grad_hess, _presence_terms


@dataclass
class RidgePenalty:
    strength: np.ndarray        # (d,)  s = n c sigma^2
    strength_loo: np.ndarray    # (n, d) s_{-i}, caller's row order

    def value(self, theta):
        theta = np.atleast_2d(theta)
        return 0.5 * (self.strength * theta ** 2).sum(axis=1)


def ridge_penalty(X, penalizer):
    """:class:`RidgePenalty` for design ``X`` (n, d array, caller's order)."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if n < 3:
        raise ValueError("a penalised model needs at least 3 rows")
    c = np.broadcast_to(np.asarray(penalizer, dtype=np.float64), (d,))
    mean = X.mean(axis=0)
    ss = ((X - mean) ** 2).sum(axis=0)
    ss_loo = ss[None, :] - n / (n - 1) * (X - mean) ** 2
    return RidgePenalty(strength=c * ss * n / (n - 1),
                        strength_loo=c * ss_loo * (n - 1) / (n - 2))


def _newton(data, theta, strength, presence=None, tol=1e-10, max_iter=50):
    """Minimise L(-presence) + 0.5 sum strength theta^2 for a batch (rows of theta)."""
    theta = np.array(np.atleast_2d(theta), dtype=np.float64)
    strength = np.broadcast_to(strength, theta.shape)
    terms = _full_terms(data) if presence is None else _presence_terms(data, presence)
    for _ in range(max_iter):
        loss, g, H = _loss_grad_hess(data, theta, terms)
        g = g + strength * theta
        if np.abs(g).max() <= tol:
            return theta, True
        H = H + np.einsum("bi,ij->bij", strength, np.eye(theta.shape[1]))
        step = np.linalg.solve(H, g[:, :, None])[:, :, 0]
        theta = theta - step
        if np.abs(step).max() <= 1e-14 * (1 + np.abs(theta).max()):
            return theta, True
    return theta, False


def penalized_fit(data, init, penalty, ties):
    """A CoxFit at the penalised optimum with ``information = H_J`` (module docstring)."""
    theta, ok = _newton(data, init, penalty.strength)
    if not ok:
        raise ValueError("the penalised Cox fit did not converge")
    theta = theta[0]
    loss, g, H = _loss_grad_hess(data, theta[None, :], _full_terms(data))
    return CoxFit(coef=theta, loglik=float(-loss[0]), information=H[0] + np.diag(penalty.strength),
                  gradient=g[0] + penalty.strength * theta, converged=True, n_iter=0, data=data,
                  ties=ties)


def penalized_theta_change(fit, penalty, method, batch=64):
    """(n, d) ``theta_{-i} - theta_hat`` (caller's order) and the refits (exact) or None."""
    from ..reid import reid_influence
    from ..vif import vif
    data, n, d = fit.data, fit.n, fit.data.d
    if method == "vif":
        extra = fit.coef[None, :] * (penalty.strength[None, :] - penalty.strength_loo)
        return (-np.asarray(vif(fit)) / n
                + np.linalg.solve(fit.information, extra.T).T), None
    if method == "reid":
        return -np.asarray(reid_influence(fit)) / n, None
    inv = data.inverse_order
    out = np.empty((n, d))
    for start in range(0, n, batch):
        rows = np.arange(start, min(start + batch, n))
        P = np.ones((rows.size, n))
        P[np.arange(rows.size), inv[rows]] = 0.0
        s = penalty.strength_loo[rows]
        theta0 = np.repeat(fit.coef[None, :], rows.size, axis=0)
        if method == "newton":
            _, g, H = _loss_grad_hess(data, theta0, _presence_terms(data, P))
            g = g + s * theta0
            H = H + np.einsum("bi,ij->bij", s, np.eye(d))
            out[rows] = theta0 - np.linalg.solve(H, g[:, :, None])[:, :, 0]
        elif method == "exact":
            th, ok = _newton(data, theta0, s, presence=P)
            th[~np.isfinite(th).all(axis=1)] = np.nan
            if not ok:
                raise ValueError("a penalised leave-one-out refit did not converge")
            out[rows] = th
        else:
            raise ValueError(f"unknown method {method!r}")
    return out - fit.coef, (out if method == "exact" else None)


def penalized_loglik(fit, penalty, thetas):
    """``-J(theta)`` on the full data for each row of ``thetas`` (for the displacement)."""
    thetas = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
    loss = _loss_grad_hess(fit.data, thetas, _full_terms(fit.data), hess=False)[0]
    return -(loss + penalty.value(thetas))

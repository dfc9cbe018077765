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

from coxinfluence.likelihood.objective import cox_objective, gradient_tolerance
from coxinfluence.likelihood.risk_sets import RiskSets
from coxinfluence.models.cox import CoxFit
from coxinfluence.numerics.newton import newton


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


def penalized_fit(data, init, penalty, ties):
    """A CoxFit at the penalised optimum: ``information = H_J``, ``penalty`` attached,
    ``loglik`` the unpenalised log partial likelihood (:class:`~coxinfluence.CoxFit`)."""
    risk_sets = RiskSets(data)
    res = newton(cox_objective(risk_sets, ridge=penalty.strength), init,
                 tol=gradient_tolerance(data, 1e-10))
    if not res.converged[0]:
        raise ValueError("the penalised Cox fit did not converge")
    theta = res.theta[0]
    loss = risk_sets.loss_grad_hess(theta[None, :], hess=False)[0][0]
    return CoxFit(coef=theta, loglik=float(-loss), information=res.hess[0],
                  gradient=res.grad[0], converged=True, n_iter=int(res.n_iter[0]), data=data,
                  ties=ties, penalty=penalty)



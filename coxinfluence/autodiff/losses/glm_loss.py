"""Logistic and Poisson GLMs: a decomposable loss written as a non-decomposable one.

Paper Section "Preliminaries: IF-Based Data Attribution for Decomposable Loss",
Eq. weighted-loss ``L(theta, w) = sum_i w_i l(theta; z_i)`` with ``l`` the negative
log-likelihood of a canonical-link GLM, and the remark after Definition
"Non-Decomposable Loss" (``L(theta, b) = sum_{i : b_i = 1} l_i(theta)``).  An
M-estimator: its VIF equals the classical IF of Lemma "IF for M-Estimators" exactly
(Section "Approximation Quality in Special Cases", "M-Estimation").
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._common import Loss, _as_float_matrix, _as_vector


class GLMLoss(Loss):
    """Negative log-likelihood of a canonical-link GLM, a sum over rows:
    logistic ``l_i = log(1 + e^eta_i) - y_i eta_i``; Poisson ``l_i = e^eta_i - y_i eta_i``
    (dropping log y_i!); ``L(theta, b) = sum_i b_i w_i l_i``, ``eta = X theta``
    (plus an intercept first when ``intercept=True``)."""

    def __init__(self, X, y, family="logistic", *, intercept=True, weights=None):
        X = _as_float_matrix(X)
        n = X.shape[0]
        y = _as_vector(y, n, "y")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains non-finite values")
        if family == "logistic":
            if not np.all(np.isin(y, (0.0, 1.0))):
                raise ValueError("logistic family needs y in {0, 1}")
        elif family == "poisson":
            if np.any(y < 0):
                raise ValueError("poisson family needs y >= 0")
        else:
            raise ValueError(f"family must be 'logistic' or 'poisson', got {family!r}")
        w = np.ones(n) if weights is None else _as_vector(weights, n, "weights")
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("weights must be finite and > 0")
        self.design = np.column_stack([np.ones(n), X]) if intercept else X
        self.y, self.w, self.family = y, w, family
        self.n_objects, self.n_terms = n, n
        self._D, self._y, self._w = jnp.asarray(self.design), jnp.asarray(y), jnp.asarray(w)

    @property
    def n_params(self):
        return self.design.shape[1]

    def init_params(self, seed=0):
        return np.zeros(self.n_params)

    def row_losses(self, theta):
        eta = self._D @ theta
        if self.family == "logistic":
            return jnp.logaddexp(0.0, eta) - self._y * eta
        return jnp.exp(eta) - self._y * eta

    def loss(self, theta, presence):
        return jnp.sum(presence * self._w * self.row_losses(theta))

    def sampled_loss(self, theta, presence, idx):
        return jnp.sum((presence * self._w * self.row_losses(theta))[idx])

    _newton_warning = "GLM Newton fit did not converge (separation?)"

    def fit(self, presence=None, theta0=None, *, tol=1e-10, max_iter=100):
        """Newton-Raphson with step halving to ``max|grad| <= tol``."""
        return self._newton_fit(presence, theta0, tol, max_iter)

    def loo(self, theta_hat, objects=None, *, tol=1e-10, max_iter=100, batch=128):
        """Exact leave-one-out refits theta_{-i} (:meth:`fit`'s Newton solver,
        warm-started at theta_hat, vmapped over batches of ``batch`` deletions)."""
        return self._newton_loo(theta_hat, objects, tol, max_iter, batch)


def glm(X, y, family="logistic", intercept=True, weights=None):
    """Logistic or Poisson GLM as a (decomposable) non-decomposable loss."""
    return GLMLoss(X, y, family, intercept=intercept, weights=weights)


"""Cox model with a neural log-risk: one hidden ReLU layer, trained with Adam.

Paper Appendix "Efficient Inverse Hessian Approximation" (Tables "additional-baseline"
and "additional-experiment-runtime"): the Cox loss of Eq. partial-likelihood with the
relative risk ``exp(theta' x)`` replaced by ``exp(eta_theta(x))``, ``eta`` a two-layer
MLP with ReLU activation; trained, as in Appendix "Detailed experiment setup", by Adam
with learning rate 0.01 for 200 epochs (full batch).  Brute-force LOO retraining repeats
that training with one row deleted.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ._common import _presence, adam
from .cox_loss import CoxLoss


class CoxMLPLoss(CoxLoss):
    """Cox loss whose log-risk is ``relu(X W1 + b1) w2`` (no output bias: the partial
    likelihood is invariant to it).  Parameters: ``(p + 2) * hidden``, flat vector.
    Paper Table "additional-experiment-runtime" parameter counts 0.04K/10.3K/41.0K/81.9K
    correspond to hidden = 4/936/3728/7446 with p = 9 (44/10,296/41,008/81,906 parameters)."""

    def __init__(self, X, time, event, *, hidden=16, ties="efron", weights=None, strata=None):
        super().__init__(X, time, event, ties=ties, weights=weights, strata=strata)
        if int(hidden) < 1:
            raise ValueError(f"hidden must be >= 1, got {hidden!r}")
        self.hidden = int(hidden)
        p = self.X.shape[1]
        _, self._unravel = ravel_pytree({"W1": jnp.zeros((p, self.hidden)),
                                         "b1": jnp.zeros(self.hidden),
                                         "w2": jnp.zeros(self.hidden)})

    @property
    def n_params(self):
        return (self.X.shape[1] + 2) * self.hidden

    @property
    def per_object_bytes(self):
        return 8 * 4 * self.n_objects * self.hidden

    def init_params(self, seed=0):
        """He-normal hidden layer, N(0, 1/hidden) output; ``seed``: int or Generator."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        p, h = self.X.shape[1], self.hidden
        params = {"W1": rng.normal(0, np.sqrt(2.0 / p), (p, h)), "b1": np.zeros(h),
                  "w2": rng.normal(0, np.sqrt(1.0 / h), h)}
        return np.asarray(ravel_pytree(jax.tree_util.tree_map(jnp.asarray, params))[0])

    def eta(self, theta, X=None):
        X = self._Xj if X is None else jnp.asarray(X)
        q = self._unravel(theta)
        return jax.nn.relu(X @ q["W1"] + q["b1"]) @ q["w2"]

    def fit(self, presence=None, theta0=None, *, lr=0.01, steps=200, seed=0):
        """Full-batch Adam (paper: Adam, lr 0.01, 200 epochs on METABRIC)."""
        p = _presence(presence, self.n_objects)
        th0 = self.init_params(seed) if theta0 is None else theta0
        return np.asarray(jax.jit(lambda t0, pp: adam(lambda t: self.loss(t, pp), t0,
                                                      lr=lr, steps=steps))(jnp.asarray(th0), p))

    def loo(self, theta_hat, objects=None, *, lr=0.01, steps=200, seed=0, warm_start=False,
            batch=16):
        """Brute-force LOO: retrain with Adam with one row deleted, from the same
        initialization (``seed``) as the full fit, or from ``theta_hat``."""
        objs, P = self._loo_presences(objects)
        th0 = jnp.asarray(theta_hat if warm_start else self.init_params(seed))
        run = jax.jit(jax.vmap(lambda pp: adam(lambda t: self.loss(t, pp), th0, lr=lr,
                                               steps=steps)))
        return np.concatenate([np.asarray(run(jnp.asarray(P[s:s + batch])))
                               for s in range(0, objs.size, batch)], axis=0)


def cox_mlp(X, time, event, hidden=16, ties="efron", weights=None, strata=None):
    """Cox model with a one-hidden-layer ReLU MLP log-risk (paper Appendix "Efficient
    Inverse Hessian Approximation", its two tables)."""
    return CoxMLPLoss(X, time, event, hidden=hidden, ties=ties, weights=weights, strata=strata)


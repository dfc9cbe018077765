"""ListMLE with a linear scorer: listwise learning-to-rank, object = item or query.

Paper Section "Non-Decomposable Loss", Example 3 ("Listwise Learning-to-Rank"),
Eq. listmle::

    L_LTR(theta) = - sum_{i=1}^m sum_{j=1}^k ( f(x_i; theta)_j
                       - log sum_{l in [n] minus {y_i^(1), ..., y_i^(j-1)}} exp(f(x_i; theta)_l) ),

the j-th term scoring the j-th ranked item ``y_i^(j)`` of query ``i``: decomposable over
queries, not over items (deleting an item changes every softmax).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
from jax.flatten_util import ravel_pytree

from ._common import Loss, _as_float_matrix, _presence


def _listmle_query_terms(S, R, b, removal="delete"):
    """-log Plackett-Luce likelihood of each query's top-k list (paper Eq. listmle).

    S: (m, n) scores, R: (m, k) item indices (-1 = padding), b: (n,) item presence.
    Term of position j (if item y_j present): ``-(s_{y_j} - log sum_{l candidate, not
    ranked before j} e^{s_l})``.  ``removal="delete"``: a removed item leaves the
    rankings *and* every candidate set (the sums); ``removal="labels"``: it leaves
    only the rankings (its label is dropped, the list closes up) and stays a
    candidate in every softmax."""
    sm = jax.lax.stop_gradient(jnp.max(S, axis=1, keepdims=True))
    e = jnp.exp(S - sm) if removal == "labels" else b[None, :] * jnp.exp(S - sm)
    tot = e.sum(1)
    valid = R >= 0
    Rc = jnp.where(valid, R, 0)
    by = b[Rc] * valid
    sy = jnp.take_along_axis(S, Rc, axis=1) - sm
    ey = jnp.take_along_axis(e, Rc, axis=1) * (by if removal == "labels" else valid)
    Z = tot[:, None] - (jnp.cumsum(ey, axis=1) - ey)
    logZ = jnp.log(jnp.where(by > 0, Z, 1.0))
    return -jnp.sum(by * (sy - logZ), axis=1)


class ListMLELoss(Loss):
    """ListMLE with a linear scorer ``s(x) = x W + c`` (W: p x n_items), plus
    ``l2/2 ||theta||^2`` (makes the softmax-invariant bias identifiable).

    ``objects="items"`` (paper Example 3): presence over the n items;
    ``objects="queries"``: presence over queries, a decomposable loss written as a
    non-decomposable one (VIF = classical IF exactly).  Terms for LiSSA: queries."""

    def __init__(self, features, rankings, n_items=None, *, objects="items", l2=1.0,
                 removal="delete"):
        F = _as_float_matrix(features, "features")
        R = np.asarray(rankings)
        if R.ndim != 2 or R.shape[0] != F.shape[0] or not np.issubdtype(R.dtype, np.integer):
            raise ValueError("rankings must be an integer (n_queries, k) array, -1 = padding")
        n_items = int(R.max()) + 1 if n_items is None else int(n_items)
        if R.max() >= n_items or R.min() < -1:
            raise ValueError(f"rankings entries must be -1 or in [0, {n_items})")
        for row in R:
            r = row[row >= 0]
            if np.unique(r).size != r.size:
                raise ValueError("an item appears twice in one ranking")
        if objects not in ("items", "queries"):
            raise ValueError(f"objects must be 'items' or 'queries', got {objects!r}")
        if not (np.isfinite(l2) and l2 >= 0):
            raise ValueError("l2 must be >= 0")
        if removal not in ("delete", "labels"):
            raise ValueError(f"removal must be 'delete' or 'labels', got {removal!r}")
        self.removal = removal
        self.F, self.R, self.n_items, self.objects, self.l2 = F, R, n_items, objects, float(l2)
        self.m = F.shape[0]
        self.n_objects = n_items if objects == "items" else self.m
        self.n_terms = self.m
        self._F, self._R = jnp.asarray(F), jnp.asarray(R)
        p = F.shape[1]
        _, self._unravel = ravel_pytree({"W": jnp.zeros((p, n_items)), "c": jnp.zeros(n_items)})

    @property
    def n_params(self):
        return (self.F.shape[1] + 1) * self.n_items

    @property
    def per_object_bytes(self):
        return 8 * 6 * self.m * self.n_items

    def init_params(self, seed=0):
        return np.zeros(self.n_params)

    def scores(self, theta, F=None):
        q = self._unravel(theta)
        return (self._F if F is None else jnp.asarray(F)) @ q["W"] + q["c"]

    def _split(self, presence):
        if self.objects == "items":
            return presence, jnp.ones(self.m)
        return jnp.ones(self.n_items), presence

    def loss(self, theta, presence):
        bi, bq = self._split(presence)
        t = _listmle_query_terms(self.scores(theta), self._R, bi, self.removal)
        return jnp.sum(bq * t) + 0.5 * self.l2 * jnp.sum(theta * theta)

    def sampled_loss(self, theta, presence, idx):
        bi, bq = self._split(presence)
        Fi, Ri = self._F[idx], self._R[idx]
        q = self._unravel(theta)
        t = _listmle_query_terms(Fi @ q["W"] + q["c"], Ri, bi, self.removal)
        frac = idx.shape[0] / self.m
        return jnp.sum(bq[idx] * t) + 0.5 * self.l2 * frac * jnp.sum(theta * theta)

    def query_loss(self, theta, features, rankings):
        """Target of the paper's Section "Experiments": ListMLE loss of each test query
        (all items)."""
        return _listmle_query_terms(self.scores(theta, features), jnp.asarray(rankings),
                                    jnp.ones(self.n_items))

    def _compiled(self):
        if not hasattr(self, "_vg"):
            self._vg = jax.jit(jax.value_and_grad(self.loss))
            self._hcols = jax.jit(jax.vmap(
                lambda th, p, v: jax.jvp(lambda t: jax.grad(self.loss)(t, p), (th,), (v,))[1],
                in_axes=(None, None, 0)))
        return self._vg, self._hcols

    def fit(self, presence=None, theta0=None, *, gtol=1e-9, newton_tol=1e-9):
        """L-BFGS to ``gtol``, then Newton steps (explicit Hessian) to ``newton_tol``
        (``newton_tol=None``: no Newton polish)."""
        p = _presence(presence, self.n_objects)
        vg, hcols = self._compiled()

        def fun(x):
            v, g = vg(jnp.asarray(x), p)
            return float(v), np.asarray(g, dtype=np.float64)

        th0 = self.init_params() if theta0 is None else np.asarray(theta0, dtype=np.float64)
        res = scipy.optimize.minimize(fun, th0, jac=True, method="L-BFGS-B",
                                      options={"gtol": gtol, "ftol": 0.0, "maxiter": 5000,
                                               "maxcor": 30})
        th = res.x
        d = th.size
        # Newton polish with the explicit Hessian (built in chunks of 128 columns)
        for _ in range(0 if newton_tol is None else 5):
            g = np.asarray(vg(jnp.asarray(th), p)[1])
            if np.max(np.abs(g)) <= newton_tol:
                break
            H = np.empty((d, d))
            for s0 in range(0, d, 128):
                E = np.zeros((128, d))
                k = min(128, d - s0)
                E[np.arange(k), s0 + np.arange(k)] = 1.0
                H[s0:s0 + k] = np.asarray(hcols(jnp.asarray(th), p, jnp.asarray(E)))[:k]
            th = th - np.linalg.solve(0.5 * (H + H.T), g)
        return np.asarray(th)

    def loo(self, theta_hat, objects=None, *, tol=1e-9, polish=False, start_noise=0.0,
            seed=0):
        """Brute-force LOO: one refit per object, L-BFGS from ``theta_hat`` (plus
        N(0, start_noise^2) noise drawn with ``seed``, for a "different seed" run) to
        ``max|grad| <= tol``.  The loss is convex in theta (ListMLE is convex in the
        linear scores) plus ``l2/2 ||theta||^2``, hence l2-strongly convex: the refit
        is within ``||grad|| / l2`` of the exact minimizer, so no Newton polish is
        needed (``polish=True`` adds it, with the explicit Hessian: slow).  The
        compiled loss and gradient are shared by all refits."""
        objs, P = self._loo_presences(objects)
        if self.l2 <= 0 and not polish:
            raise ValueError("loo without polish needs l2 > 0 (strong convexity)")
        rng = np.random.default_rng(seed)
        out = np.empty((objs.size, self.n_params))
        th0 = np.asarray(theta_hat, dtype=np.float64)
        for k in range(objs.size):
            start = th0 + start_noise * rng.normal(size=th0.size) if start_noise else th0
            out[k] = self.fit(P[k], start, gtol=tol, newton_tol=tol if polish else None)
        return out


def listmle(features, rankings, n_items=None, objects="items", l2=1.0, removal="delete"):
    """ListMLE loss with a linear scorer (paper Example 3, Eq. listmle).  ``removal``
    (objects = items): "delete" removes the item from every candidate set and ranking
    (the paper's [n] becomes [n] minus the item), "labels" only from the rankings."""
    return ListMLELoss(features, rankings, n_items, objects=objects, l2=l2, removal=removal)

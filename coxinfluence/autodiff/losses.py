"""Non-decomposable loss families ``L(theta, presence)`` with brute-force LOO retrainers.

Each factory returns a :class:`Loss` object: callable as ``loss(theta, presence)``
(JAX-traceable, a *sum* over terms as in the paper), with

* ``n_objects``, ``n_params``, ``init_params(seed)``,
* ``fit(presence=None, theta0=None, ...)``: minimize ``L(., presence)``,
* ``loo(theta_hat, objects=None, ...)``: brute-force leave-one-out retraining, the
  oracle for the VIF (returns ``theta_{-i}`` per object),
* optionally ``weighted(theta, w)`` (case weights, for ``weight_influence``),
  ``n_terms`` and ``sampled_loss(theta, presence, idx)`` (for LiSSA),
  ``per_object_bytes`` (memory hint for the VIF batches).

Families (paper Section "Non-Decomposable Loss", appendices):

1. :func:`cox` - negative log partial likelihood, Breslow or Efron ties, R's weighted
   Efron formula, strata (paper Eq. partial-likelihood; Therneau & Grambsch 2000).
2. :func:`glm` - logistic / Poisson GLM, an M-estimator (paper Lemma IF-M).
3. :func:`cox_mlp` - Cox model with a one-hidden-layer ReLU MLP log-risk
   (paper appendix, Tables 4-5).
4. :func:`contrastive` - DeepWalk skip-gram with a full softmax on a graph, object =
   node (paper Example 2).
5. :func:`listmle` - ListMLE with a linear scorer, object = item or query (paper
   Example 3, Eq. listmle).
"""
from __future__ import annotations

import warnings

import numpy as np
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
import scipy.optimize


__all__ = ["Loss", "cox", "glm", "cox_mlp", "contrastive", "listmle",
           "deepwalk_counts", "expected_deepwalk_counts"]


# --------------------------------------------------------------------------- utils
def _as_float_matrix(X, name="X"):
    A = np.array(X, dtype=np.float64, copy=True)
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got {A.ndim} dimensions")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains non-finite values")
    return A


def _as_vector(x, n, name, dtype=np.float64):
    a = np.array(x, dtype=dtype, copy=True).reshape(-1) if np.ndim(x) else None
    if a is None or a.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array of length {n}")
    return a


def _presence(presence, n):
    if presence is None:
        return jnp.ones(n)
    p = jnp.asarray(presence, dtype=jnp.float64)
    if p.shape != (n,):
        raise ValueError(f"presence must have shape ({n},), got {tuple(p.shape)}")
    return p


def _newton(f, theta0, *, tol=1e-10, max_iter=50, damping=0.0):
    """Damped Newton with step halving for a smooth convex(-ish) scalar f (small d)."""
    vg = jax.jit(jax.value_and_grad(f))
    hess = jax.jit(jax.hessian(f))
    th = jnp.asarray(theta0, dtype=jnp.float64)
    val, g = vg(th)
    for it in range(max_iter):
        if float(jnp.max(jnp.abs(g))) <= tol:
            return np.asarray(th), True, it
        H = np.asarray(hess(th)) + damping * np.eye(th.shape[0])
        try:
            step = np.linalg.solve(H, np.asarray(g))
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(H, np.asarray(g), rcond=None)[0]
        t = 1.0
        while t > 1e-10:
            new = th - t * step
            nv, ng = vg(new)
            if np.isfinite(float(nv)) and float(nv) <= float(val) + 1e-12 * abs(float(val)):
                break
            t *= 0.5
        th, val, g = new, nv, ng
    return np.asarray(th), float(jnp.max(jnp.abs(g))) <= tol, max_iter


def _make_batched_newton(loss, steps):
    """jit(vmap) of ``steps`` full Newton steps from a common start, per presence row."""
    def run(theta0, presence):
        f = lambda th: loss(th, presence)  # noqa: E731
        g, h = jax.grad(f), jax.hessian(f)

        def body(th, _):
            return th - jnp.linalg.solve(h(th), g(th)), None

        th, _ = jax.lax.scan(body, theta0, None, length=steps)
        return th, jnp.max(jnp.abs(g(th)))

    return jax.jit(jax.vmap(run, in_axes=(None, 0)))


def _lbfgs(f, theta0, *, gtol=1e-9, max_iter=5000):
    vg = jax.jit(jax.value_and_grad(f))

    def fun(x):
        v, g = vg(jnp.asarray(x))
        return float(v), np.asarray(g, dtype=np.float64)

    res = scipy.optimize.minimize(fun, np.asarray(theta0, dtype=np.float64), jac=True,
                                  method="L-BFGS-B",
                                  options={"gtol": gtol, "ftol": 0.0, "maxiter": max_iter,
                                           "maxcor": 30})
    return res.x, res


def adam(f, theta0, *, lr=0.01, steps=200, b1=0.9, b2=0.999, eps=1e-8):
    """Full-batch Adam (Kingma & Ba 2015) on ``f`` for ``steps`` steps (lax.scan).

    Pure function of its inputs; vmappable over a batch of objectives via closures."""
    def step(state, t):
        th, m, v = state
        g = jax.grad(f)(th)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mh = m / (1 - b1 ** (t + 1))
        vh = v / (1 - b2 ** (t + 1))
        return (th - lr * mh / (jnp.sqrt(vh) + eps), m, v), None

    th0 = jnp.asarray(theta0, dtype=jnp.float64)
    (th, _, _), _ = jax.lax.scan(step, (th0, jnp.zeros_like(th0), jnp.zeros_like(th0)),
                                 jnp.arange(steps, dtype=jnp.float64))
    return th


class Loss:
    """A non-decomposable loss ``L(theta, presence)`` (paper Definition 1).

    Subclasses define ``loss(theta, presence)``; see the module docstring."""

    n_objects: int
    n_params: int
    n_terms = None

    def __call__(self, theta, presence):
        return self.loss(theta, presence)

    def loss(self, theta, presence):  # pragma: no cover - abstract
        raise NotImplementedError

    def _loo_presences(self, objects):
        n = self.n_objects
        objs = np.arange(n) if objects is None else np.asarray(objects, dtype=np.int64)
        if objs.ndim != 1 or (objs.size and (objs.min() < 0 or objs.max() >= n)):
            raise ValueError(f"objects must be 1-D integer indices in [0, {n})")
        P = np.ones((objs.size, n))
        P[np.arange(objs.size), objs] = 0.0
        return objs, P


# ============================================================================ 1. Cox
class _CoxStructure:
    """Risk-set structure, precomputed once (statsmodels PHReg style).

    Rows are sorted by (stratum, time descending); the risk set of an event time t
    in stratum s is {j : stratum_j = s, time_j >= t}, a contiguous block of that order
    starting at the stratum start, so its sum is a difference of cumulative sums.
    Death positions (sorted order) come with ascending tie-group ids, so the group
    sums are sorted segment sums."""

    def __init__(self, time, event, strata):
        n = time.size
        order = np.lexsort((-time, strata))
        self.order = order
        st_sorted, t_sorted = strata[order], time[order]
        # stratum start position of each sorted row
        new_st = np.r_[True, st_sorted[1:] != st_sorted[:-1]]
        starts = np.maximum.accumulate(np.where(new_st, np.arange(n), 0))
        # last sorted position with the same (stratum, time)
        brk = np.r_[st_sorted[1:] != st_sorted[:-1]] | np.r_[t_sorted[1:] != t_sorted[:-1]]
        last = np.minimum.accumulate(np.where(np.r_[brk, True], np.arange(n), n)[::-1])[::-1]
        ev_sorted = event[order] == 1
        # tie groups: distinct (stratum, time) among events
        uniq, gid, cnt = np.unique(last[ev_sorted], return_inverse=True, return_counts=True)
        self.G = uniq.size
        self.g_end = uniq                              # inclusive end in sorted order
        self.g_start = starts[uniq]                    # risk set = [g_start, g_end]
        self.death_group = gid.astype(np.int64)
        self.death_pos = np.nonzero(ev_sorted)[0]      # sorted positions, groups ascending
        self.multi = np.nonzero(cnt >= 2)[0]           # groups with tied deaths
        in_multi = np.isin(gid, self.multi)
        self.multi_pos = self.death_pos[in_multi]
        # prefix-sum positions: the last death of each group (in death order), and the
        # position before each group's stratum start (risk set = [g_start, g_end])
        self.d_end = np.searchsorted(self.death_group, np.arange(self.G), side="right") - 1
        self.event_s = ev_sorted.astype(np.float64)     # event indicator, sorted order
        self.stratified = bool(np.any(self.g_start > 0))
        self.g_start_prev = np.maximum(self.g_start - 1, 0)
        self.multi_group = np.searchsorted(self.multi, gid[in_multi]).astype(np.int64)
        self.dmax_multi = int(cnt[self.multi].max()) if self.multi.size else 1


_PREFIX_BLOCK = 32


def _prefix_sum(a):
    """Inclusive prefix sum of a 1-D array as two small matrix products: sums within
    blocks of 32 (a triangular 32 x 32 matmul), then the running block totals.

    Same values as ``jnp.cumsum`` (up to rounding).  On XLA:CPU, for a (128, 1218)
    batch of presence-weighted rows, this form's forward pass took about a third of
    ``jnp.cumsum``'s (one-off measurement, not a repo benchmark); on the whole vmapped
    Cox deletion gradient the gain is small (~10%)."""
    m, b = a.shape[0], _PREFIX_BLOCK
    nb = -(-m // b)
    blocks = jnp.pad(a, (0, nb * b - m)).reshape(nb, b)
    within = blocks @ jnp.triu(jnp.ones((b, b), dtype=a.dtype))
    before = within[:, -1] @ jnp.triu(jnp.ones((nb, nb), dtype=a.dtype), 1)
    return (within + before[:, None]).reshape(-1)[:m]


def _cox_denominators(eta_s, b, w, S, ties):
    """The risk-set part of the negative log partial likelihood (R's formula), per
    event-time group, and what the linear part needs.

    For the tie group D at time t (d present deaths), with S0 = sum_{R(t)} b w e^eta,
    S0D = sum_D b w e^eta, meanwt = sum_D b w / d, the group's term is
    ``-sum_D b w eta + A`` with the denominator part::

        Breslow: A = (sum_D b w) log S0
        Efron:   A = meanwt * sum_{r=0}^{d-1} log(S0 - (r/d) S0D)

    ``eta_s`` is the log-risk in the structure's sorted row order; ``b`` is presence
    (it also sets d: deleting a death removes it from the tie count) and ``w`` the
    case weights (they do not change d: R's weighted Efron), both in caller order.
    Risk sets and tie groups are contiguous in the sorted order, so every sum is a
    difference of prefix sums at the group ends (gathers only: no scatter, which is
    slow under vmap on CPU).  Efron differs from Breslow only for groups with two or
    more deaths (``S.multi``): it is computed as Breslow plus a correction over those.

    Returns ``(A per group, shifted eta_s, b w in sorted order)``."""
    eta_s = eta_s - jax.lax.stop_gradient(jnp.max(eta_s))   # the loss is shift invariant
    bw_s = (b * w)[S.order]
    ex = jnp.exp(eta_s)
    cs = _prefix_sum(bw_s * ex)
    S0 = cs[S.g_end]
    if S.stratified:
        S0 = S0 - jnp.where(S.g_start > 0, cs[S.g_start_prev], 0.0)
    sumw = _group_sums(bw_s[S.death_pos], S)           # sum_D b w per group
    logS0 = jnp.log(jnp.where(sumw > 0, S0, 1.0))
    A = sumw * logS0
    if ties == "efron" and S.multi.size:
        m, mp, mg = S.multi, S.multi_pos, S.multi_group
        k = m.size
        seg = lambda x: jax.ops.segment_sum(x, mg, num_segments=k,  # noqa: E731
                                            indices_are_sorted=True)
        S0D = seg(bw_s[mp] * ex[mp])
        dcount = seg(b[S.order][mp])
        S0m, sw = S0[m], sumw[m]
        dsafe = jnp.where(dcount > 0, dcount, 1.0)
        r = jnp.arange(S.dmax_multi, dtype=jnp.float64)
        mask = r[None, :] < dcount[:, None]
        arg = S0m[:, None] - (r[None, :] / dsafe[:, None]) * S0D[:, None]
        logs = jnp.where(mask, jnp.log(jnp.where(mask, arg, 1.0)), 0.0)
        corr = (sw / dsafe) * jnp.sum(logs, axis=1) - sw * logS0[m]
        A = A.at[m].add(corr)
    return A, eta_s, bw_s


def _group_sums(x_deaths, S):
    """Sums over each tie group of a quantity given per death (sorted death order)."""
    return jnp.diff(_prefix_sum(x_deaths)[S.d_end], prepend=0.0)


def _cox_terms(eta_s, b, w, S, ties):
    """Per-event-time-group terms ``-sum_D b w eta + A`` (:func:`_cox_denominators`)."""
    A, eta_s, bw_s = _cox_denominators(eta_s, b, w, S, ties)
    dp = S.death_pos
    return A - _group_sums(bw_s[dp] * eta_s[dp], S)


def _cox_loss(eta_s, b, w, S, ties):
    """The loss, ``sum(_cox_terms)``: the linear part summed directly over the events
    (no per-group sums: cheaper under vmap)."""
    A, eta_s, bw_s = _cox_denominators(eta_s, b, w, S, ties)
    return jnp.sum(A) - jnp.sum(bw_s * S.event_s * eta_s)


class CoxLoss(Loss):
    """Negative log partial likelihood of a Cox model with log-risk ``eta(theta, X)``.

    ``loss(theta, presence)``: objects = rows; deleting row i = presence 0 (for Efron
    it leaves its tie group).  ``weighted(theta, m)``: case weights ``w * m`` with
    R's weighted Efron formula (all rows present), used by ``weight_influence``.
    Terms for LiSSA: the event-time (tie-group) terms."""

    def __init__(self, X, time, event, *, ties="efron", weights=None, strata=None):
        X = _as_float_matrix(X)
        n = X.shape[0]
        time = _as_vector(time, n, "time")
        if not np.all(np.isfinite(time)):
            raise ValueError("time contains non-finite values")
        ev = _as_vector(event, n, "event")
        if not np.all(np.isin(ev, (0.0, 1.0))):
            raise ValueError("event must contain only 0 and 1")
        if ev.sum() == 0:
            raise ValueError("event has no events (all censored): the partial likelihood is empty")
        if ties not in ("efron", "breslow"):
            raise ValueError(f"ties must be 'efron' or 'breslow', got {ties!r}")
        w = np.ones(n) if weights is None else _as_vector(weights, n, "weights")
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("weights must be finite and > 0 (as in R's coxph)")
        if strata is None:
            st = np.zeros(n, dtype=np.int64)
        else:
            s = np.asarray(strata)
            if s.ndim != 1 or s.shape[0] != n:
                raise ValueError(f"strata must be a 1-D array of length {n}")
            st = np.unique(s, return_inverse=True)[1].astype(np.int64)
        self.X, self.time, self.event, self.w, self.strata = X, time, ev, w, st
        self.ties = ties
        self.n_objects = n
        self.S = _CoxStructure(time, ev.astype(np.int64), st)
        self.n_terms = self.S.G
        self._Xj = jnp.asarray(X)
        self._Xs = jnp.asarray(X[self.S.order])          # rows in risk-set order
        self._wj = jnp.asarray(w)

    # log-risk -------------------------------------------------------------
    def eta(self, theta, X=None):
        X = self._Xj if X is None else jnp.asarray(X)
        return X @ theta

    @property
    def n_params(self):
        return self.X.shape[1]

    def init_params(self, seed=0):
        return np.zeros(self.n_params)

    def terms(self, theta, presence):
        return _cox_terms(self.eta(theta, self._Xs), presence, self._wj, self.S, self.ties)

    def loss(self, theta, presence):
        return _cox_loss(self.eta(theta, self._Xs), presence, self._wj, self.S, self.ties)

    def weighted(self, theta, multiplier):
        return _cox_loss(self.eta(theta, self._Xs), jnp.ones(self.n_objects),
                         self._wj * multiplier, self.S, self.ties)

    def sampled_loss(self, theta, presence, idx):
        mult = jax.ops.segment_sum(jnp.ones(idx.shape[0]), idx, num_segments=self.S.G)
        return jnp.sum(mult * self.terms(theta, presence))

    @property
    def per_object_bytes(self):
        return 8 * 8 * (self.n_objects + self.n_params)

    # fitting ----------------------------------------------------------------
    def fit(self, presence=None, theta0=None, *, tol=1e-10, max_iter=50):
        """Newton-Raphson with step halving to ``max|grad| <= tol``."""
        p = _presence(presence, self.n_objects)
        th0 = self.init_params() if theta0 is None else theta0
        th, ok, _ = _newton(lambda t: self.loss(t, p), th0, tol=tol, max_iter=max_iter)
        if not ok:
            warnings.warn("Cox Newton fit did not converge", RuntimeWarning, stacklevel=2)
        return th

    def loo(self, theta_hat, objects=None, *, tol=1e-10, steps=8, batch=128):
        """Exact leave-one-out refits theta_{-i} (Newton warm-started at theta_hat,
        vmapped; any row not at ``max|grad| <= tol`` is refitted with step halving)."""
        objs, P = self._loo_presences(objects)
        run = _make_batched_newton(self.loss, steps)
        out = np.empty((objs.size, self.n_params))
        th0 = jnp.asarray(theta_hat, dtype=jnp.float64)
        for s in range(0, objs.size, batch):
            th, gmax = run(th0, jnp.asarray(P[s:s + batch]))
            th, gmax = np.asarray(th), np.asarray(gmax)
            for k in np.nonzero(~(gmax <= tol))[0]:
                th[k] = self.fit(P[s + k], theta_hat, tol=tol)
            out[s:s + batch] = th
        return out


def cox(X, time, event, ties="efron", weights=None, strata=None):
    """Linear Cox model loss (paper Eq. partial-likelihood, with ties and strata).

    ``L(theta, b) = sum_groups [-sum_D b w x'theta + meanwt sum_r log(S0 - r/d S0D)]``
    (Efron; Breslow drops the r/d term), risk set {time >= t, same stratum}.  See
    :func:`_cox_terms` for the exact formula and how presence and weights enter."""
    return CoxLoss(X, time, event, ties=ties, weights=weights, strata=strata)


# ========================================================================== 3. MLP
class CoxMLPLoss(CoxLoss):
    """Cox loss whose log-risk is ``relu(X W1 + b1) w2`` (no output bias: the partial
    likelihood is invariant to it).  Parameters: ``(p + 2) * hidden``, flat vector.
    Paper appendix (Table 5) parameter counts 0.04K/10.3K/41.0K/81.9K correspond to
    hidden = 4/936/3728/7446 with p = 9 (44/10,296/41,008/81,906 parameters)."""

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
    """Cox model with a one-hidden-layer ReLU MLP log-risk (paper appendix, Tables 4-5)."""
    return CoxMLPLoss(X, time, event, hidden=hidden, ties=ties, weights=weights, strata=strata)


# =========================================================================== 2. GLM
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

    def fit(self, presence=None, theta0=None, *, tol=1e-10, max_iter=100):
        p = _presence(presence, self.n_objects)
        th, ok, _ = _newton(lambda t: self.loss(t, p),
                            self.init_params() if theta0 is None else theta0,
                            tol=tol, max_iter=max_iter)
        if not ok:
            warnings.warn("GLM Newton fit did not converge (separation?)", RuntimeWarning,
                          stacklevel=2)
        return th

    loo = CoxLoss.loo


def glm(X, y, family="logistic", intercept=True, weights=None):
    """Logistic or Poisson GLM as a (decomposable) non-decomposable loss."""
    return GLMLoss(X, y, family, intercept=intercept, weights=weights)


# =================================================================== 4. contrastive
def _graph_arrays(graph):
    try:
        nodes = sorted(graph.nodes())
    except TypeError:
        nodes = list(graph.nodes())
    idx = {u: k for k, u in enumerate(nodes)}
    N = len(nodes)
    A = np.zeros((N, N))
    for u, v in graph.edges():
        if u != v:
            A[idx[u], idx[v]] = A[idx[v], idx[u]] = 1.0
    return nodes, A


def deepwalk_counts(A, presence, *, walks_per_node, walk_length, window, rng):
    """Skip-gram (center, context) pair counts from uniform random walks (DeepWalk,
    Perozzi et al. 2014) on the graph ``A`` restricted to present nodes.

    ``walks_per_node`` walks of ``walk_length`` nodes start at every present node; a
    walk at a node without present neighbours stops.  Every pair of positions at
    distance 1..window counts in both directions.  ``rng``: numpy Generator or seed."""
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    b = np.asarray(presence, dtype=bool)
    Ab = A * b[:, None] * b[None, :]
    N = A.shape[0]
    nbrs = [np.nonzero(Ab[u])[0] for u in range(N)]
    deg = np.array([len(x) for x in nbrs])
    maxdeg = max(int(deg.max()), 1)
    table = np.zeros((N, maxdeg), dtype=np.int64)
    for u in range(N):
        table[u, :deg[u]] = nbrs[u]
    starts = np.repeat(np.nonzero(b)[0], walks_per_node)
    W = np.full((starts.size, walk_length), -1, dtype=np.int64)
    W[:, 0] = starts
    for p in range(1, walk_length):
        cur = W[:, p - 1]
        alive = cur >= 0
        dc = np.where(alive, deg[np.maximum(cur, 0)], 0)
        ok = alive & (dc > 0)
        pick = np.floor(rng.random(cur.size) * np.maximum(dc, 1)).astype(np.int64)
        W[:, p] = np.where(ok, table[np.maximum(cur, 0), pick], -1)
    C = np.zeros((N, N))
    for k in range(1, window + 1):
        a, c = W[:, :-k].ravel(), W[:, k:].ravel()
        m = (a >= 0) & (c >= 0)
        np.add.at(C, (a[m], c[m]), 1.0)
        np.add.at(C, (c[m], a[m]), 1.0)
    return C


def expected_deepwalk_counts(A, presence, *, walks_per_node, walk_length, window):
    """Expectation of :func:`deepwalk_counts` (JAX, differentiable in ``presence``).

    With P = D^{-1} A_b the walk's transition matrix on present nodes (zero rows at
    dead ends) and m_p = walks_per_node * b' P^p the expected visits at step p,
    ``E C = sum_{p, k<=window, p+k<L} diag(m_p) P^k + (diag(m_p) P^k)'``."""
    b = jnp.asarray(presence, dtype=jnp.float64)
    Ab = jnp.asarray(A) * b[:, None] * b[None, :]
    deg = Ab.sum(1)
    P = Ab / jnp.where(deg > 0, deg, 1.0)[:, None]
    m = walks_per_node * b
    ms = []
    for _ in range(walk_length):
        ms.append(m)
        m = m @ P
    Pk = [jnp.eye(A.shape[0])]
    for _ in range(window):
        Pk.append(Pk[-1] @ P)
    C = jnp.zeros(A.shape)
    for p in range(walk_length):
        for k in range(1, window + 1):
            if p + k < walk_length:
                M = ms[p][:, None] * Pk[k]
                C = C + M + M.T
    return C


class ContrastiveLoss(Loss):
    """DeepWalk skip-gram loss with a full (negative log) softmax, object = node.

    Model (paper Sec. 5: "one embedding layer and one linear layer"): logits
    ``Z = E W + c`` (E: N x dim embeddings, W: dim x N, c: N), and

        L(theta, b) = sum_{u,v} C_b[u, v] * (-log softmax_{v' : b_v' = 1}(Z[u])_v)

    where ``C_b`` are the skip-gram pair counts of random walks on the graph with the
    removed nodes deleted (the node leaves the graph: its edges, its walks, and the
    softmax vocabulary).  ``walks="expected"`` uses their expectation (deterministic,
    any presence vector); ``walks="sampled"`` draws walks with ``seed``: counts are
    precomputed for the full graph and each single-node deletion, so ``presence``
    must then have at most one zero.  ``l2`` adds ``l2/2 ||theta||^2``."""

    def __init__(self, graph, *, dim=2, walks_per_node=1000, walk_length=6, window=3,
                 walks="sampled", seed=0, l2=0.0):
        nodes, A = _graph_arrays(graph)
        N = len(nodes)
        if N < 3:
            raise ValueError("graph needs at least 3 nodes")
        if walks not in ("sampled", "expected"):
            raise ValueError(f"walks must be 'sampled' or 'expected', got {walks!r}")
        if int(dim) < 1 or int(walk_length) < 2 or int(window) < 1 or int(walks_per_node) < 1:
            raise ValueError("dim, walks_per_node, window must be >= 1 and walk_length >= 2")
        self.nodes, self.A, self.N = nodes, A, N
        self.dim, self.l2 = int(dim), float(l2)
        self.walk_opts = dict(walks_per_node=int(walks_per_node), walk_length=int(walk_length),
                              window=int(window))
        self.walks, self.seed = walks, seed
        self.n_objects = N
        _, self._unravel = ravel_pytree({"E": jnp.zeros((N, self.dim)),
                                         "W": jnp.zeros((self.dim, N)), "c": jnp.zeros(N)})
        if walks == "sampled":
            rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
            self.C_full = deepwalk_counts(A, np.ones(N), rng=rng, **self.walk_opts)
            self.C_minus = np.stack([deepwalk_counts(A, np.arange(N) != i, rng=rng,
                                                     **self.walk_opts) for i in range(N)])
            self._Cf, self._Cm = jnp.asarray(self.C_full), jnp.asarray(self.C_minus)

    @property
    def n_params(self):
        return 2 * self.N * self.dim + self.N

    def counts(self, presence):
        if self.walks == "expected":
            return expected_deepwalk_counts(self.A, presence, **self.walk_opts)
        allp = jnp.all(presence > 0.5)
        i = jnp.argmin(presence)
        return jnp.where(allp, self._Cf, self._Cm[i])

    def logits(self, theta):
        q = self._unravel(theta)
        return q["E"] @ q["W"] + q["c"]

    def loss(self, theta, presence):
        Z = self.logits(theta)
        C = self.counts(presence)
        keep = presence[None, :] > 0.5
        Zm = jnp.where(keep, Z, -1e30)
        lse = jax.nn.logsumexp(Zm, axis=1)
        nll = jnp.where(keep, lse[:, None] - Zm, 0.0)
        return jnp.sum(C * nll) + 0.5 * self.l2 * jnp.sum(theta * theta)

    def pair_loss(self, theta, pairs):
        """Target of the paper's Sec. 5: ``-log softmax(Z[u])_v`` for (K, 2) pairs,
        full graph vocabulary."""
        pairs = jnp.asarray(pairs)
        Z = self.logits(theta)
        lse = jax.nn.logsumexp(Z, axis=1)
        return lse[pairs[:, 0]] - Z[pairs[:, 0], pairs[:, 1]]

    def init_params(self, seed=0):
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        return rng.normal(0.0, 0.1, self.n_params)

    def _train(self, presence, th0, lr, steps, newton_steps, damping):
        f = lambda t: self.loss(t, presence) / self.walk_opts["walks_per_node"]  # noqa: E731
        th = adam(f, th0, lr=lr, steps=steps)
        g, h = jax.grad(f), jax.hessian(f)

        def lm(th, _):  # Levenberg-Marquardt-damped Newton polish, keep if better
            H = h(th) + damping * jnp.eye(th.shape[0])
            new = th - jnp.linalg.solve(H, g(th))
            better = f(new) <= f(th)
            return jnp.where(better, new, th), None

        th, _ = jax.lax.scan(lm, th, None, length=newton_steps)
        return th

    def fit(self, presence=None, theta0=None, *, seed=0, lr=0.05, steps=3000,
            newton_steps=30, damping=1e-6):
        """Adam from ``init_params(seed)`` (or theta0), then damped Newton polish."""
        p = _presence(presence, self.n_objects)
        th0 = jnp.asarray(self.init_params(seed) if theta0 is None else theta0)
        return np.asarray(jax.jit(lambda pp, t0: self._train(pp, t0, lr, steps, newton_steps,
                                                             damping))(p, th0))

    def loo(self, theta_hat, objects=None, *, seed=0, warm_start=True, lr=0.05, steps=3000,
            newton_steps=30, damping=1e-6):
        """Brute-force LOO: retrain with node i removed (walks on G - i), warm-started
        at theta_hat or from ``init_params(seed)`` (the same start as a full fit)."""
        objs, P = self._loo_presences(objects)
        th0 = jnp.asarray(theta_hat if warm_start else self.init_params(seed))
        if warm_start:
            steps = min(steps, 500)
        run = jax.jit(jax.vmap(lambda pp: self._train(pp, th0, lr, steps, newton_steps,
                                                      damping)))
        return np.asarray(run(jnp.asarray(P)))


def contrastive(graph, dim=2, walks_per_node=1000, walk_length=6, window=3,
                walks="sampled", seed=0, l2=0.0):
    """DeepWalk skip-gram loss on a networkx graph, object = node (paper Example 2;
    experiment settings: 1000 walks per node, length 6, window 3, dim 2)."""
    return ContrastiveLoss(graph, dim=dim, walks_per_node=walks_per_node,
                           walk_length=walk_length, window=window, walks=walks, seed=seed,
                           l2=l2)


# ======================================================================= 5. ListMLE
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
        return jnp.sum(bq[idx] * t) + 0.5 * self.l2 * (idx.shape[0] / self.m) * jnp.sum(theta * theta)

    def query_loss(self, theta, features, rankings):
        """Target of the paper's Sec. 5: ListMLE loss of each test query (all items)."""
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
        for _ in range(0 if newton_tol is None else 5):  # Newton polish with the explicit Hessian (chunks of 128)
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

"""Linear Cox model: the negative log partial likelihood as a non-decomposable loss.

Paper Section "Non-Decomposable Loss", Example 1 ("Cox's Partial Likelihood"),
Eq. partial-likelihood::

    L_Cox(theta) = - sum_{i : Delta_i = 1} ( theta' X_i - log sum_{j in R_i} exp(theta' X_j) ),

object = row (patient); deleting row ``i`` (presence ``b_i = 0``) removes its term and
its place in every risk set ``R_j``.  The risk-set sums are the paper's ``S_n^(0)``
(Appendix "Formal Statement and Proof of Theorem informal-cox", Eq. emp S0).  Beyond the
paper's formula, as in R's ``coxph`` (Therneau & Grambsch 2000): Breslow or Efron ties
(R's weighted Efron formula), case weights and strata.

The risk-set structure (:class:`_CoxStructure`) is precomputed once and every risk-set
or tie-group sum is a difference of prefix sums (:func:`_prefix_sum`).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._common import Loss, _as_float_matrix, _as_vector


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
    _newton_warning = "Cox Newton fit did not converge"

    def fit(self, presence=None, theta0=None, *, tol=1e-10, max_iter=50):
        """Newton-Raphson with step halving to ``max|grad| <= tol``
        (:func:`~coxinfluence.autodiff.losses._common.newton_solve`)."""
        return self._newton_fit(presence, theta0, tol, max_iter)

    def loo(self, theta_hat, objects=None, *, tol=1e-10, max_iter=50, batch=128):
        """Exact leave-one-out refits theta_{-i}: the same Newton solver as :meth:`fit`
        (step halving, ``max|grad| <= tol``), warm-started at theta_hat and vmapped over
        batches of ``batch`` deletions."""
        return self._newton_loo(theta_hat, objects, tol, max_iter, batch)


def cox(X, time, event, ties="efron", weights=None, strata=None):
    """Linear Cox model loss (paper Eq. partial-likelihood, with ties and strata).

    ``L(theta, b) = sum_groups [-sum_D b w x'theta + meanwt sum_r log(S0 - r/d S0D)]``
    (Efron; Breslow drops the r/d term), risk set {time >= t, same stratum}.  See
    ``_cox_terms`` for the exact formula and how presence and weights enter."""
    return CoxLoss(X, time, event, ties=ties, weights=weights, strata=strata)


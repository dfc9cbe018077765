"""The Fine-Gray loss's gradient and Hessian with one subject deleted, for every subject,
in closed form: O(K d) per subject (O(K d^2) with the Hessian), K the failure times.

Deleting subject i (censoring group g, time T_i) removes it from the risk sets and from
its group's Kaplan-Meier estimate of the censoring distribution
(:mod:`coxinfluence.likelihood.fine_gray`). The estimate changes in a way that factors:
with ``Y_g(s)``, ``c_g(s)`` the group's at-risk and censored counts at its distinct times,
the deleted estimate is ``G_{g,-i}(t-) = G_g(t-) F_g(t)`` for ``t <= T_i``, where

    F_g(t) = prod_{s < t} f_g(s),   f_g(s) = (1 - c_g(s) / (Y_g(s) - 1)) / (1 - c_g(s) / Y_g(s))

does not depend on i (every s < t <= T_i loses the one subject i from its risk set and no
censoring), and ``G_{g,-i}(t-) = G_g(t-) R_i`` for ``t > T_i`` with the constant
``R_i = F_g(T_i) (1 - (c_g(T_i) - 1{i censored}) / (Y_g(T_i) - 1)) / (1 - c_g(T_i) /
Y_g(T_i))``. A competing subject j of group g weighs ``e_j G(t_k-) / G(T_j-)`` at a failure
time ``t_k > T_j``; its weight after the deletion follows from the two factors. So, with
the prefix sums over group g's competing subjects (``T_j`` up to a time)

    B_g = sum e_j / G_g(T_j-),     P_g = sum e_j / (G_g(T_j-) F_g(T_j)),

the deleted risk-set sums at each failure time are

    t_k <= T_i:  S0_k - e_i + G_g(t_k-) [F_g(t_k) P_g(< t_k) - B_g(< t_k)]    (= D_g(t_k))
    t_k >  T_i:  S0_k + G_g(t_k-) [R_i P_g^{-i}(<= T_i) - B_g(<= T_i)]         (= beta_i)

(``P^{-i}`` without i's own term; ``B`` with it: i leaves the risk set), the same for
``S1``, ``S2`` with ``e_j x_j``, ``e_j x_j x_j'``; the failure counts lose i at its own
time. The deleted gradient and Hessian are the sums over the failure times of these
ratios: one vectorised pass over (subjects, failure times). Other groups' estimates do not
change.

A subject alone at its time and last in its group (``Y_g(T_i) = 1``) changes the group's
last time, after which crr sets ``G = 0``: those few subjects are deleted literally
(:func:`coxinfluence.likelihood.fine_gray.loss_grad_hess` with the Kaplan-Meier
re-estimated from the remaining subjects).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.likelihood.fine_gray import (
    CAUSE,
    CENSORED,
    COMPETING,
    baseline_jumps,
    censoring_survival,
    loss_grad_hess,
    per_time,
    risk_sums,
    suffix_sums,
    sums_before,
)
from coxinfluence.numerics.rows import matmul_rows
from coxinfluence.numerics.threads import for_row_blocks, n_threads

__all__ = ["DeletionState", "deleted_derivatives", "deleted_baseline_jumps"]

#: floats per block of (subjects x failure times x d) arrays
_BLOCK_FLOATS = 4_000_000


class DeletionState:
    """What every subject's deletion shares at ``theta`` (module docstring): the full
    risk-set sums ``S0, S1, S2`` at the failure times, ``F_g``, the prefix sums ``B_g``,
    ``P_g`` and the per-group changes ``D_g``, computed once."""

    def __init__(self, data, theta, *, hessian=True):
        self.data, self.hessian = data, hessian
        theta = np.asarray(theta, dtype=np.float64)
        self.theta = theta
        n, d, T, C = data.n, data.d, data.n_times, data.n_groups
        ones = np.ones((1, n))
        s = risk_sums(data, theta[None, :], ones)
        _, Y, cens = censoring_survival(data, ones)
        self.e, self.G, self.inv = s.e[0], s.G[0], s.inv[0]
        self.S0, self.S1, self.dk, self.xf = s.S0[0], s.S1[0], s.dk[0], s.xf[0]
        self.Y, self.cens = Y[0], cens[0]
        X, fail = data.X, data.fail
        # f_g(s), F_g(t) = prod_{s < t} f_g(s)
        with np.errstate(divide="ignore", invalid="ignore"):
            num = 1.0 - self.cens / (self.Y - 1.0)
            den = 1.0 - self.cens / self.Y
            f = np.where(self.cens > 0, num / den, 1.0)
        f = np.where(np.isfinite(f), f, 0.0)
        self.f_num, self.f_den = num, den
        self.F = np.ones((C, T))
        np.cumprod(f[:, :-1], axis=1, out=self.F[:, 1:])
        comp = data.kind == COMPETING
        u = self.e * self.inv
        Fown = self.F[data.group, data.tie]
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(comp & (Fown > 0), u / np.where(Fown > 0, Fown, 1.0), 0.0)
        self.u, self.v = u, v
        # matrices packed as their upper triangles (d (d + 1) / 2 entries)
        self.upper = np.triu_indices(d)
        XX = _outer(X, X, self.upper) if hessian else None
        orders = [(1, None), (d, X)] + ([(XX.shape[1], XX)] if hessian else [])
        self.B_le, self.P_le, self.D = [], [], []
        for width, Z in orders:
            B_le = np.zeros((C, T, width))
            P_le = np.zeros((C, T, width))
            D = np.zeros((C, fail.size, width))
            for g in range(C):
                m = comp & (data.group == g)
                if not m.any():
                    continue
                zu = (u * m)[:, None] * (1.0 if Z is None else Z)
                zv = (v * m)[:, None] * (1.0 if Z is None else Z)
                Bt = per_time(data, zu[None])[0]
                Pt = per_time(data, zv[None])[0]
                B_lt, P_lt = sums_before(Bt[None])[0], sums_before(Pt[None])[0]
                B_le[g], P_le[g] = B_lt + Bt, P_lt + Pt
                D[g] = (self.G[g, fail, None]
                        * (self.F[g, fail, None] * P_lt[fail] - B_lt[fail]))
            self.B_le.append(B_le)
            self.P_le.append(P_le)
            self.D.append(D)
        if hessian:
            Et = suffix_sums(per_time(data, (self.e[:, None] * XX)[None]))[0]
            for g in range(C):
                m = comp & (data.group == g)
                if m.any():
                    Et += self.G[g][:, None] * sums_before(
                        per_time(data, ((u * m)[:, None] * XX)[None]))[0]
            self.S2 = Et[fail]                                   # (K, d*d)
            self.S1S1 = _outer(self.S1, self.S1, self.upper)
        self.special = self.Y[data.group, data.tie] <= 1.0

    def full_gradient(self):
        """The gradient of the full data at ``theta``."""
        return (self.dk / self.S0) @ self.S1 - self.xf


def _ratio_factor(st, rows):
    """``R_i`` of the module docstring for the sorted rows ``rows``."""
    data = st.data
    g, tau = data.group[rows], data.tie[rows]
    cens_i = (data.kind[rows] == CENSORED).astype(np.float64)
    Y, c = st.Y[g, tau], st.cens[g, tau]
    with np.errstate(divide="ignore", invalid="ignore"):
        num = 1.0 - (c - cens_i) / (Y - 1.0)
        den = 1.0 - c / Y
        R = np.where(den > 0, st.F[g, tau] * np.where(c - cens_i > 0, num, 1.0) / den, 0.0)
    return np.where(np.isfinite(R), R, 0.0)


def _outer(a, b, upper, symmetric=False):
    """Row-wise outer products ``a_i b_i'`` of (m, d) arrays, packed as their upper
    triangles (``upper``: ``np.triu_indices(d)``) -> (m, d (d + 1) / 2); ``symmetric``:
    of ``a_i b_i' + b_i a_i'``."""
    out = a[:, upper[0]] * b[:, upper[1]]
    if symmetric:
        out += b[:, upper[0]] * a[:, upper[1]]
    return out


def _mm(a, b):
    """``a @ b`` (a (m, K), b (K, p), p small) by blocks of rows of one BLAS thread each
    (:func:`coxinfluence.numerics.rows.matmul_rows`: measured, OpenBLAS's threads on
    these products on a loaded 2-core machine made the deleted Hessians 5x slower)."""
    return matmul_rows(a, b, np.empty((a.shape[0], b.shape[1])))


def _group_sums(st, g):
    """Group g's deleted-Kaplan-Meier risk-set sums for ``t_k <= T_i`` (before removing i
    itself): ``S0 + D0_g``, then ``[S1 + D1_g, 1]`` and ``[S1, G_g]`` side by side (one
    product gives a row's vector and its weights' sum), and for the Hessian ``S2 + D2_g``
    and the outer products of ``S1 + D1_g``; cached on the state."""
    cache = st.__dict__.setdefault("_group_cache", {})
    if g not in cache:
        S0 = st.S0 + st.D[0][g][:, 0]
        S1 = st.S1 + st.D[1][g]
        K = S0.size
        left = np.column_stack([S1, np.ones(K)])
        right = np.column_stack([st.S1, st.G[g, st.data.fail]])
        extra = ((st.S2 + st.D[2][g], _outer(S1, S1, st.upper)) if st.hessian
                 else (None, None))
        cache[g] = (S0, left, right) + extra
    return cache[g]


def _block(st, g, rows):
    """Deleted gradients (m, d) and Hessians (m, d, d) or None for regular rows of group
    ``g`` (consecutive in time): per row and failure time only scalars (the denominators
    and weights), the vectors and matrices entering through products with (K, d) and
    (K, d^2) arrays. The failure times split in three: ``t_k < T_i`` for every row of the
    block, ``t_k > T_i`` for every row, and the band between, the only part masked."""
    data = st.data
    X, fail = data.X, data.fail
    m, d = rows.size, data.d
    tau, kind = data.tie[rows], data.kind[rows]
    e_i, x_i = st.e[rows], X[rows]
    cause = kind == CAUSE
    R = _ratio_factor(st, rows)
    own_v = np.where(kind == COMPETING, st.v[rows], 0.0)
    gs = np.full(m, g)

    def beta(order, z):
        return (R[:, None] * (st.P_le[order][gs, tau] - own_v[:, None] * z)
                - st.B_le[order][gs, tau])

    b0 = beta(0, np.ones((m, 1)))[:, 0]
    b1 = beta(1, x_i)
    S0s, left, right, S2s, S1S1s = _group_sums(st, g)
    lo = np.searchsorted(fail, tau.min(), side="left")        # t_k < T_i for every row
    hi = np.searchsorted(fail, tau.max(), side="right")       # t_k > T_i for every row
    L, B, Rr = slice(0, lo), slice(lo, hi), slice(hi, fail.size)
    # the weights d_k / S0'_k, in place
    wL = np.subtract(S0s[None, L], e_i[:, None])
    wR = np.multiply.outer(b0, right[Rr, d])
    wR += st.S0[None, Rr]
    le = fail[None, B] <= tau[:, None]
    wB = np.where(le, S0s[None, B] - e_i[:, None], st.S0[None, B] + b0[:, None]
                  * right[B, d][None, :])
    dB = np.broadcast_to(st.dk[B], le.shape).copy()
    hit = np.flatnonzero(cause)
    if hit.size:
        dB[hit, np.searchsorted(fail, tau[hit]) - lo] -= 1.0
    den = (wL.copy(), wR.copy(), wB.copy()) if st.hessian else None
    np.divide(st.dk[None, L], wL, out=wL)
    np.divide(st.dk[None, Rr], wR, out=wR)
    np.divide(dB, wB, out=wB)
    wl, wr = wB * le, wB * ~le
    lv = _mm(wL, left[L]) + _mm(wl, left[B])                        # (m, d + 1): S1 part, sum
    rv = _mm(wR, right[Rr]) + _mm(wr, right[B])                     # (m, d + 1): S1 part, G sum
    sum_l, wrG = lv[:, d], rv[:, d]
    grad = lv[:, :d] - (e_i * sum_l)[:, None] * x_i + rv[:, :d] + wrG[:, None] * b1 \
        - st.xf[None, :] + cause[:, None] * x_i
    if not st.hessian:
        return grad, None
    up = st.upper
    xx = _outer(x_i, x_i, up)
    b2 = beta(2, xx)
    part = _mm(wL, S2s[L]) + _mm(wl, S2s[B]) - (e_i * sum_l)[:, None] * xx \
        + _mm(wR, st.S2[Rr]) + _mm(wr, st.S2[B]) + wrG[:, None] * b2
    qL, qR, qB = wL / den[0], wR / den[1], wB / den[2]
    ql, qr = qB * le, qB * ~le
    lq = _mm(qL, left[L]) + _mm(ql, left[B])
    part -= _mm(qL, S1S1s[L]) + _mm(ql, S1S1s[B]) \
        - e_i[:, None] * _outer(x_i, lq[:, :d], up, symmetric=True) \
        + (e_i ** 2 * lq[:, d])[:, None] * xx
    G = right[:, d]
    right1 = _mm(qR * G[Rr], st.S1[Rr]) + _mm(qr * G[B], st.S1[B])
    G2 = (G ** 2)[:, None]
    part -= _mm(qR, st.S1S1[Rr]) + _mm(qr, st.S1S1[B]) \
        + _outer(b1, right1, up, symmetric=True) \
        + (_mm(qR, G2[Rr]) + _mm(qr, G2[B])) * _outer(b1, b1, up)
    hess = np.empty((m, d, d))
    hess[:, up[0], up[1]] = part
    hess[:, up[1], up[0]] = part
    return grad, hess


def deleted_derivatives(state, rows=None):
    """Gradients (m, d) and Hessians (m, d, d) (None unless ``state.hessian``) of the loss
    at ``state.theta`` with each sorted row of ``rows`` (default all) deleted, the
    censoring Kaplan-Meier re-estimated without it (module docstring)."""
    data = state.data
    rows = np.arange(data.n) if rows is None else np.asarray(rows, dtype=np.intp)
    m, d, K = rows.size, data.d, max(data.fail.size, 1)
    grad = np.empty((m, d))
    hess = np.empty((m, d, d)) if state.hessian else None
    special = state.special[rows]
    step = max(1, _BLOCK_FLOATS // (4 * K))
    groups = data.group[rows]
    for grp in range(data.n_groups):
        regular = np.flatnonzero(~special & (groups == grp))

        def work(_, a, b, regular=regular, grp=grp):
            pos = regular[a:b]
            g, h = _block(state, grp, rows[pos])
            grad[pos] = g
            if hess is not None:
                hess[pos] = h

        # blocks of rows write disjoint outputs: the same bits on any number of threads
        for_row_blocks(work, regular.size, step, threads=n_threads(regular.size * K))
    lone = np.flatnonzero(special)
    step = max(1, _BLOCK_FLOATS // (data.n * d))
    for b0 in range(0, lone.size, step):
        pos = lone[b0:b0 + step]
        P = np.ones((pos.size, data.n))
        P[np.arange(pos.size), rows[pos]] = 0.0
        _, g, h = loss_grad_hess(data, np.repeat(state.theta[None, :], pos.size, axis=0), P,
                                 hessian=state.hessian)
        grad[pos] = g
        if hess is not None:
            hess[pos] = h
    return grad, hess


def deleted_baseline_jumps(state, rows=None):
    """(m, K) the jumps ``d_k / S0_k`` of crr's baseline (:func:`coxinfluence.likelihood.
    fine_gray.baseline_jumps`) at ``state.theta`` with each sorted row of ``rows`` (default
    all) deleted and its group's Kaplan-Meier re-estimated, on the full data's scale (the
    same ``log_scale``): the deleted risk-set sums of the module docstring,

        t_k <= T_i:  S0_k - e_i + D_g(t_k),      t_k > T_i:  S0_k + G_g(t_k-) beta_i,

    and ``d_k`` less one at ``T_i`` when row i fails from the cause. O(K) per row; the rows
    alone at their time and last in their group are deleted literally, as in
    :func:`deleted_derivatives`."""
    data = state.data
    rows = np.arange(data.n) if rows is None else np.asarray(rows, dtype=np.intp)
    fail, tau, g = data.fail, data.tie[rows], data.group[rows]
    own_v = np.where(data.kind[rows] == COMPETING, state.v[rows], 0.0)
    beta0 = (_ratio_factor(state, rows) * (state.P_le[0][g, tau, 0] - own_v)
             - state.B_le[0][g, tau, 0])
    before = fail[None, :] <= tau[:, None]                           # t_k <= T_i
    den = np.where(before, state.S0[None, :] + state.D[0][g, :, 0] - state.e[rows, None],
                   state.S0[None, :] + beta0[:, None] * state.G[g][:, fail])
    dk = np.broadcast_to(state.dk, den.shape).copy()
    own = np.flatnonzero(data.kind[rows] == CAUSE)
    dk[own, np.searchsorted(fail, tau[own])] -= 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(dk > 0, dk / np.where(dk > 0, den, 1.0), 0.0)
    lone = np.flatnonzero(state.special[rows])
    if lone.size:
        P = np.ones((lone.size, data.n))
        P[np.arange(lone.size), rows[lone]] = 0.0
        theta = np.repeat(state.theta[None, :], lone.size, axis=0)
        jumps, log_scale, _ = baseline_jumps(data, theta, P)
        full = baseline_jumps(data, state.theta[None, :], np.ones((1, data.n)))[1]
        out[lone] = jumps * np.exp(full - log_scale)[:, None]
    return out

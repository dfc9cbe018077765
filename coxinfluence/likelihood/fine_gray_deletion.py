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

**Case weights.** A subject of weight ``w`` leaves ``w`` of ``Y_g`` (and of ``c_g`` if
censored): ``f_g``, ``F_g``, ``R_i``, ``P_g`` and ``D_g`` above with ``Y - w`` for ``Y - 1``,
so they depend on the deleted weight; :meth:`DeletionState.piece` builds them per (group,
weight), one at a time (one per group with unit weights; with n distinct weights the
closed form costs O(n (n + K) d^2)). The failure counts lose ``w`` at ``T_i``.

**Strata.** A subject's deletion changes only its stratum's failure times: the other
strata's terms of the gradient and Hessian are constants of the stratum
(``outside_grad``, ``outside_hess``).

**Efron's ties.** Each failure time's weight ``d_k / S0'_k`` becomes Efron's sums of the
deleted denominators (:class:`~coxinfluence.likelihood.efron.TieTerms`: ``c``, ``c1``,
``g0..g2`` with the tied failures' ``F0, F1, F2``), and a failing subject leaves its own
tie (its count, weight and ``e x`` out of ``n_k``, ``W_k``, ``F`` at ``T_i``).

A subject alone at its time and last in its group (``Y_g(T_i) = w_i``) changes the
group's last time, after which crr sets ``G = 0``: those few subjects are deleted
literally (:func:`coxinfluence.likelihood.fine_gray.loss_grad_hess` with the Kaplan-Meier
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
    risk_set_sums,
    risk_sums,
    sums_before,
    tie_terms,
)
from coxinfluence.numerics.rows import matmul_rows
from coxinfluence.numerics.threads import for_row_blocks, n_threads

__all__ = ["DeletionState", "deleted_derivatives", "deleted_baseline_jumps", "after_shift"]

#: floats per block of (subjects x failure times x d) arrays
_BLOCK_FLOATS = 4_000_000
#: (group, weight) pieces of the deleted Kaplan-Meier kept by a DeletionState
_PIECES_KEPT = 64


class DeletionState:
    """What every subject's deletion shares at ``theta`` (module docstring): the full
    risk-set sums ``S0, S1, S2`` at the failure times, the Kaplan-Meier counts, and each
    stratum's terms from the failure times of the other strata (a deletion leaves them
    as they are), computed once; the pieces that depend on the deleted subject's group
    and weight (``F_g``, ``P_g``, ``B_g``, ``D_g``) by :meth:`piece`."""

    def __init__(self, data, theta, *, hessian=True):
        self.data, self.hessian = data, hessian
        theta = np.asarray(theta, dtype=np.float64)
        self.theta = theta
        n, d, C = data.n, data.d, data.n_groups
        ones = np.ones((1, n))
        s = risk_sums(data, theta[None, :], ones)
        _, Y, cens = censoring_survival(data, ones)
        self.e, self.G, self.inv = s.e[0], s.G[0], s.inv[0]
        self.S0, self.S1, self.dk, self.xf = s.S0[0], s.S1[0], s.dk[0], s.xf[0]
        self.Y, self.cens = Y[0], cens[0]
        self.nd, self.F0, self.F1 = s.nd[0], s.F0[0], s.F1[0]
        self.efron = data.ties == "efron"
        self.w = data.weight
        self.u = self.e * self.inv
        # matrices packed as their upper triangles (d (d + 1) / 2 entries)
        self.upper = np.triu_indices(d)
        self.XX = _outer(data.X, data.X, self.upper) if hessian else None
        comp = data.kind == COMPETING
        if hessian:
            Et = risk_set_sums(data, per_time(data, (self.e[:, None] * self.XX)[None]))[0]
            for g in range(C):
                m = comp & (data.group == g)
                if m.any():
                    Et += self.G[g][:, None] * sums_before(
                        per_time(data, ((self.u * m)[:, None] * self.XX)[None]))[0]
            self.S2 = Et[data.fail]                                   # (K, d*d)
            self.S1S1 = _outer(self.S1, self.S1, self.upper)
            if self.efron:      # the tied failures' sums and their products
                cause = data.kind == CAUSE
                self.F2 = per_time(data, ((self.e * cause)[:, None] * self.XX)[None])[0][
                    data.fail]
                self.S1F1 = _outer(self.S1, self.F1, self.upper, symmetric=True)
                self.F1F1 = _outer(self.F1, self.F1, self.upper)
        Y_own = self.Y[data.group, data.tie]
        self.special = Y_own - self.w <= 1e-12 * Y_own
        self.k_bounds = data.fail_bounds
        # the full data's per-time weights (Efron's sums; Breslow's d_k / S0_k)
        self.ties = tie_terms(self.S0, self.F0, self.nd, self.dk, loss=False)
        self.outside_grad, self.outside_hess = self._outside_terms()

    def _outside_terms(self):
        """(S, d) and (S, d*d) or None: the gradient's and Hessian's terms of the failure
        times outside each stratum (0 with one stratum)."""
        tt = self.ties
        parts = [tt.c[:, None] * self.S1 - tt.c1[:, None] * self.F1]
        if self.hessian:
            h = tt.c[:, None] * self.S2 - tt.g0[:, None] * self.S1S1
            if self.efron:
                h += (-tt.c1[:, None] * self.F2 + tt.g1[:, None] * self.S1F1
                      - tt.g2[:, None] * self.F1F1)
            parts.append(h)
        kb = self.k_bounds
        out = []
        for part in parts:
            cum = np.vstack([np.zeros((1, part.shape[1])), np.cumsum(part, axis=0)])
            out.append(cum[kb[:-1]] + (cum[-1] - cum[kb[1:]]))
        return out[0], (out[1] if self.hessian else None)

    def piece(self, g, w):
        """:class:`_Piece` of the deletions of weight ``w`` from Kaplan-Meier group ``g``,
        kept for the calls that follow (callers that take the rows in blocks ask for the
        same pieces again); at most :data:`_PIECES_KEPT` at a time, O(T d^2) memory each
        (many distinct weights: built as they come)."""
        key = (int(g), float(w))
        kept = self.__dict__.setdefault("_pieces", {})
        if key not in kept:
            if len(kept) >= _PIECES_KEPT:
                kept.clear()
            kept[key] = _Piece(self, *key)
        return kept[key]

    def full_gradient(self):
        """The gradient of the full data at ``theta``."""
        return self.ties.c @ self.S1 - self.ties.c1 @ self.F1 - self.xf


class _Piece:
    """The deleted Kaplan-Meier's pieces for subjects of weight ``w`` in group ``g``
    (module docstring, with ``Y - w`` for ``Y - 1``): ``F`` (T,), ``v`` (n,) ``u_j /
    F(T_j)`` of the group's competing rows, the prefix sums ``B_le``, ``P_le`` (T, width)
    and the changes ``D`` (K, width) for the orders 1, ``x``, ``x x'``; and the deleted
    risk-set sums of ``t_k <= T_i`` (before removing i itself): ``S0 + D0``, then ``[S1
    + D1, 1]`` and ``[S1, G_g]`` side by side (one product gives a row's vector and its
    weights' sum), and for the Hessian ``S2 + D2`` and the outer products of ``S1 +
    D1``."""

    def __init__(self, st, g, w):
        data = st.data
        self.key = (g, w)
        fail, T = data.fail, data.n_times
        Y, cens = st.Y[g], st.cens[g]
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(cens > 0, (1.0 - cens / (Y - w)) / (1.0 - cens / Y), 1.0)
        f = np.where(np.isfinite(f), f, 0.0)
        self.F = np.ones(T)
        np.cumprod(f[:-1], out=self.F[1:])
        m = (data.kind == COMPETING) & (data.group == g)
        Fown = self.F[data.tie]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.v = np.where(m & (Fown > 0), st.u / np.where(Fown > 0, Fown, 1.0), 0.0)
        orders = [None, data.X] + ([st.XX] if st.hessian else [])
        self.B_le, self.P_le, self.D = [], [], []
        for Z in orders:
            width = 1 if Z is None else Z.shape[1]
            if not m.any():
                zero = np.zeros((T, width))
                self.B_le.append(zero)
                self.P_le.append(zero)
                self.D.append(np.zeros((fail.size, width)))
                continue
            zu = (st.u * m)[:, None] * (1.0 if Z is None else Z)
            zv = self.v[:, None] * (1.0 if Z is None else Z)
            Bt = per_time(data, zu[None])[0]
            Pt = per_time(data, zv[None])[0]
            B_lt, P_lt = sums_before(Bt[None])[0], sums_before(Pt[None])[0]
            self.B_le.append(B_lt + Bt)
            self.P_le.append(P_lt + Pt)
            self.D.append(st.G[g, fail, None] * (self.F[fail, None] * P_lt[fail]
                                                  - B_lt[fail]))
        self.S0s = st.S0 + self.D[0][:, 0]
        S1 = st.S1 + self.D[1]
        K = fail.size
        self.left = np.column_stack([S1, np.ones(K)])
        self.right = np.column_stack([st.S1, st.G[g, fail]])
        if st.hessian:
            self.S2s = st.S2 + self.D[2]
            self.S1S1s = _outer(S1, S1, st.upper)
            if st.efron:
                self.S1F1s = _outer(S1, st.F1, st.upper, symmetric=True)


def _ratio_factor(st, piece, rows):
    """``R_i`` of the module docstring for the sorted rows ``rows`` (of ``piece``'s group
    and weight)."""
    data = st.data
    g, w = piece.key
    tau = data.tie[rows]
    cens_i = w * (data.kind[rows] == CENSORED)
    Y, c = st.Y[g, tau], st.cens[g, tau]
    with np.errstate(divide="ignore", invalid="ignore"):
        num = 1.0 - (c - cens_i) / (Y - w)
        den = 1.0 - c / Y
        R = np.where(den > 0, piece.F[tau] * np.where(c - cens_i > 0, num, 1.0) / den, 0.0)
    return np.where(np.isfinite(R), R, 0.0)


def after_shift(st, piece, rows, order, z, R=None):
    """``beta_i`` of the module docstring for the sorted ``rows`` (of ``piece``'s group and
    weight): ``R_i (P^{-i}(<= T_i)) - B(<= T_i)`` of ``order`` (0: 1, 1: x, 2: x x'
    packed; ``z`` (m, width) the rows' own values of it), by which each deleted risk-set
    sum after ``T_i`` moves per unit of ``G_g(t_k-)``. ``R``: the rows'
    :func:`_ratio_factor`, when already known."""
    tau, kind = st.data.tie[rows], st.data.kind[rows]
    R = _ratio_factor(st, piece, rows) if R is None else R
    own_v = np.where(kind == COMPETING, piece.v[rows], 0.0)
    return (R[:, None] * (piece.P_le[order][tau] - own_v[:, None] * z)
            - piece.B_le[order][tau])


def _outer(a, b, upper, symmetric=False):
    """Row-wise outer products ``a_i b_i'`` of (m, d) arrays, packed as their upper
    triangles (``upper``: ``np.triu_indices(d)``) -> (m, d (d + 1) / 2); ``symmetric``:
    of ``a_i b_i' + b_i a_i'``."""
    # np.take: 7x faster than a[:, upper[0]] (measured: a (4096, 14) gathered to 105 columns)
    out = np.take(a, upper[0], axis=1) * np.take(b, upper[1], axis=1)
    if symmetric:
        out += np.take(b, upper[0], axis=1) * np.take(a, upper[1], axis=1)
    return out


def _mm(a, b):
    """``a @ b`` (a (m, K), b (K, p), p small) by blocks of rows of one BLAS thread each
    (:func:`coxinfluence.numerics.rows.matmul_rows`: measured, OpenBLAS's threads on
    these products on a loaded 2-core machine made the deleted Hessians 5x slower)."""
    return matmul_rows(a, b, np.empty((a.shape[0], b.shape[1])))


def _block(st, piece, rows):
    """Deleted gradients (m, d) and Hessians (m, d, d) or None for regular rows of
    ``piece``'s group and weight (consecutive in time): per row and failure time only
    scalars (the denominators and weights), the vectors and matrices entering through
    products with (K, d) and (K, d^2) arrays. The stratum's failure times split in three:
    ``t_k < T_i`` for every row of the block, ``t_k > T_i`` for every row, and the band
    between, the only part masked; the other strata's terms do not change."""
    data = st.data
    X, fail = data.X, data.fail
    m, d = rows.size, data.d
    _, w = piece.key
    tau, kind = data.tie[rows], data.kind[rows]
    e_i, x_i = st.e[rows], X[rows]
    cause = kind == CAUSE
    R = _ratio_factor(st, piece, rows)

    def beta(order, z):
        return after_shift(st, piece, rows, order, z, R)

    b0 = beta(0, np.ones((m, 1)))[:, 0]
    b1 = beta(1, x_i)
    S0s, left, right = piece.S0s, piece.left, piece.right
    s = data.stratum[rows[0]]
    k0, k1 = st.k_bounds[s], st.k_bounds[s + 1]
    lo = np.searchsorted(fail, tau.min(), side="left")        # t_k < T_i for every row
    hi = np.searchsorted(fail, tau.max(), side="right")       # t_k > T_i for every row
    L, B, Rr = slice(k0, lo), slice(lo, hi), slice(hi, k1)
    # the deleted denominators S0'_k of each (row, failure time)
    wL = np.subtract(S0s[None, L], e_i[:, None])
    wR = np.multiply.outer(b0, right[Rr, d])
    wR += st.S0[None, Rr]
    le = fail[None, B] <= tau[:, None]
    wB = np.where(le, S0s[None, B] - e_i[:, None], st.S0[None, B] + b0[:, None]
                  * right[B, d][None, :])
    # the failures at each time: a failing row leaves its own time's
    dB = np.broadcast_to(st.dk[B], le.shape).copy()
    hit = np.flatnonzero(cause)
    own = np.searchsorted(fail, tau[hit]) - lo
    dB[hit, own] -= w
    if st.efron:
        nB = np.broadcast_to(st.nd[B], le.shape).copy()
        F0B = np.broadcast_to(st.F0[B], le.shape).copy()
        nB[hit, own] -= 1.0
        F0B[hit, own] -= e_i[hit]
        tL = tie_terms(wL, st.F0[L], st.nd[L], st.dk[L], loss=False)
        tR = tie_terms(wR, st.F0[Rr], st.nd[Rr], st.dk[Rr], loss=False)
        tB = tie_terms(wB, F0B, nB, dB, loss=False)
        wL, wR, wB = tL.c, tR.c, tB.c
        qL, qR, qB = tL.g0, tR.g0, tB.g0
    else:           # Breslow's weights d_k / S0'_k and d_k / S0'_k^2, in place
        den = (wL.copy(), wR.copy(), wB.copy()) if st.hessian else None
        np.divide(st.dk[None, L], wL, out=wL)
        np.divide(st.dk[None, Rr], wR, out=wR)
        np.divide(dB, wB, out=wB)
        if st.hessian:
            qL, qR, qB = wL / den[0], wR / den[1], wB / den[2]
    wl, wr = wB * le, wB * ~le
    lv = _mm(wL, left[L]) + _mm(wl, left[B])                        # (m, d + 1): S1 part, sum
    rv = _mm(wR, right[Rr]) + _mm(wr, right[B])                     # (m, d + 1): S1 part, G sum
    sum_l, wrG = lv[:, d], rv[:, d]
    grad = lv[:, :d] - (e_i * sum_l)[:, None] * x_i + rv[:, :d] + wrG[:, None] * b1 \
        - st.xf[None, :] + (w * cause)[:, None] * x_i + st.outside_grad[s][None, :]
    if st.efron:        # - c1 F1', F1' without the row's own e x at its time
        F1 = st.F1
        grad -= _mm(tL.c1, F1[L]) + _mm(tB.c1, F1[B]) + _mm(tR.c1, F1[Rr])
        c1_own = tB.c1[hit, own] * e_i[hit]
        grad[hit] += c1_own[:, None] * x_i[hit]
    if not st.hessian:
        return grad, None
    up = st.upper
    xx = _outer(x_i, x_i, up)
    b2 = beta(2, xx)
    S2s, S1S1s = piece.S2s, piece.S1S1s
    part = _mm(wL, S2s[L]) + _mm(wl, S2s[B]) - (e_i * sum_l)[:, None] * xx \
        + _mm(wR, st.S2[Rr]) + _mm(wr, st.S2[B]) + wrG[:, None] * b2 \
        + st.outside_hess[s][None, :]
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
    if st.efron:
        part += _efron_hessian_terms(st, piece, (L, B, Rr), (tL, tB, tR), le, x_i, e_i, b1,
                                     hit, own, c1_own)
    hess = np.empty((m, d, d))
    hess[:, up[0], up[1]] = part
    hess[:, up[1], up[0]] = part
    return grad, hess


def _efron_hessian_terms(st, piece, slices, terms, le, x_i, e_i, b1, hit, own, c1_own):
    """(m, d*d) Efron's Hessian terms beyond Breslow's form (:class:`~coxinfluence.
    likelihood.fine_gray.TieTerms`): ``- c1 F2' + g1 (S1' F1'' + F1' S1'') - g2 F1' F1''``
    summed over the failure times, with ``S1'`` the deleted risk set's (``S1 + D1_g - e_i
    x_i`` up to ``T_i``, ``S1 + G_g b1_i`` after) and ``F1'``, ``F2'`` without the row's
    own ``e x``, ``e x x'`` at its time (``hit``: the failing rows, ``own``: their time's
    column in the band ``B``; ``c1_own``: ``c1 e_i`` there)."""
    L, B, Rr = slices
    tL, tB, tR = terms
    up, d = st.upper, x_i.shape[1]
    F1, F2, fail = st.F1, st.F2, st.data.fail
    G = st.G[piece.key[0], fail]
    g1l, g1r = tB.g1 * le, tB.g1 * ~le
    lf = _mm(tL.g1, F1[L]) + _mm(g1l, F1[B])                         # sum g1 F1, t_k <= T_i
    rf = _mm(tR.g1 * G[Rr], F1[Rr]) + _mm(g1r * G[B], F1[B])         # sum g1 G F1, after
    out = -(_mm(tL.c1, F2[L]) + _mm(tB.c1, F2[B]) + _mm(tR.c1, F2[Rr]))
    out += _mm(tL.g1, piece.S1F1s[L]) + _mm(g1l, piece.S1F1s[B]) \
        - e_i[:, None] * _outer(x_i, lf, up, symmetric=True) \
        + _mm(tR.g1, st.S1F1[Rr]) + _mm(g1r, st.S1F1[B]) + _outer(b1, rf, up, symmetric=True)
    out -= _mm(tL.g2, st.F1F1[L]) + _mm(tB.g2, st.F1F1[B]) + _mm(tR.g2, st.F1F1[Rr])
    if hit.size:        # the failing rows' own time: F1' = F1 - e x, F2' = F2 - e x x'
        k = B.start + own
        x, e = x_i[hit], e_i[hit]
        S1_own = piece.left[k, :d] - e[:, None] * x
        out[hit] += c1_own[:, None] * _outer(x, x, up) \
            - (tB.g1[hit, own] * e)[:, None] * _outer(S1_own, x, up, symmetric=True) \
            - tB.g2[hit, own][:, None] * (e[:, None] ** 2 * _outer(x, x, up)
                                          - e[:, None] * _outer(x, F1[k], up, symmetric=True))
    return out


def _classes(state, rows):
    """``(g, w, positions)`` of the regular rows among the sorted ``rows``, one per
    Kaplan-Meier group and weight (one per group with unit weights), positions in time
    order."""
    data = state.data
    regular = np.flatnonzero(~state.special[rows])
    groups, weights = data.group[rows[regular]], state.w[rows[regular]]
    keys = np.unique(np.column_stack([groups, weights]), axis=0)
    for g, w in keys:
        yield int(g), float(w), regular[(groups == g) & (weights == w)]


def _literal(state, rows, evaluate):
    """``evaluate(theta, presence)`` of the sorted ``rows`` deleted one at a time,
    literally (the Kaplan-Meier re-estimated from the remaining subjects), in batches."""
    data = state.data
    step = max(1, _BLOCK_FLOATS // (data.n * max(data.d, 1)))
    for b0 in range(0, rows.size, step):
        pos = np.arange(b0, min(b0 + step, rows.size))
        P = np.ones((pos.size, data.n))
        P[np.arange(pos.size), rows[pos]] = 0.0
        yield pos, evaluate(np.repeat(state.theta[None, :], pos.size, axis=0), P)


def deleted_derivatives(state, rows=None):
    """Gradients (m, d) and Hessians (m, d, d) (None unless ``state.hessian``) of the loss
    at ``state.theta`` with each sorted row of ``rows`` (default all) deleted, the
    censoring Kaplan-Meier re-estimated without it (module docstring)."""
    data = state.data
    rows = np.arange(data.n) if rows is None else np.asarray(rows, dtype=np.intp)
    m, d, K = rows.size, data.d, max(data.fail.size, 1)
    grad = np.empty((m, d))
    hess = np.empty((m, d, d)) if state.hessian else None
    step = max(1, _BLOCK_FLOATS // (4 * K))
    for g, w, regular in _classes(state, rows):
        piece = state.piece(g, w)

        def work(_, a, b, regular=regular, piece=piece):
            pos = regular[a:b]
            gb, hb = _block(state, piece, rows[pos])
            grad[pos] = gb
            if hess is not None:
                hess[pos] = hb

        # blocks of rows write disjoint outputs: the same bits on any number of threads
        for_row_blocks(work, regular.size, step, threads=n_threads(regular.size * K))
    lone = np.flatnonzero(state.special[rows])
    for pos, (_, g, h) in _literal(state, rows[lone], lambda theta, P: loss_grad_hess(
            data, theta, P, hessian=state.hessian)):
        grad[lone[pos]] = g
        if hess is not None:
            hess[lone[pos]] = h
    return grad, hess


def deleted_baseline_jumps(state, rows=None):
    """(m, K) the jumps ``d_k / S0_k`` of crr's baseline (:func:`coxinfluence.likelihood.
    fine_gray.baseline_jumps`) at ``state.theta`` with each sorted row of ``rows`` (default
    all) deleted and its group's Kaplan-Meier re-estimated, on the full data's scale (the
    same ``log_scale``): the deleted risk-set sums of the module docstring, in the row's
    stratum,

        t_k <= T_i:  S0_k - e_i + D_g(t_k),      t_k > T_i:  S0_k + G_g(t_k-) beta_i,

    and ``d_k`` less the row's weight at ``T_i`` when row i fails from the cause (the
    other strata's jumps do not change); with Efron's ties the jump is Efron's
    (:func:`~coxinfluence.likelihood.fine_gray.baseline_jumps`) of these sums, the row
    leaving its own tie. O(K) per row; the rows alone at their time and
    last in their group are deleted literally, as in :func:`deleted_derivatives`."""
    data = state.data
    rows = np.arange(data.n) if rows is None else np.asarray(rows, dtype=np.intp)
    fail = data.fail
    den = np.broadcast_to(state.S0, (rows.size, fail.size)).copy()
    dk = np.broadcast_to(state.dk, den.shape).copy()
    nd = np.broadcast_to(state.nd, den.shape).copy()
    F0 = np.broadcast_to(state.F0, den.shape).copy()
    tb = data.time_bounds
    for g, w, pos in _classes(state, rows):
        piece = state.piece(g, w)
        r = rows[pos]
        tau, s = data.tie[r], data.stratum[r]
        beta0 = after_shift(state, piece, r, 0, np.ones((r.size, 1)))[:, 0]
        in_s = (fail[None, :] >= tb[s][:, None]) & (fail[None, :] < tb[s + 1][:, None])
        before = fail[None, :] <= tau[:, None]                       # t_k <= T_i
        den[pos] = np.where(in_s & before, piece.S0s[None, :] - state.e[r, None],
                            np.where(in_s, state.S0[None, :] + beta0[:, None]
                                     * state.G[g][fail][None, :], state.S0[None, :]))
        own = np.flatnonzero(data.kind[r] == CAUSE)
        at = (pos[own], np.searchsorted(fail, tau[own]))
        dk[at] -= w
        if state.efron:
            nd[at] -= 1.0
            F0[at] -= state.e[r[own]]
    if state.efron:
        out = tie_terms(den, F0, nd, dk, loss=False).c
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(dk > 0, dk / np.where(dk > 0, den, 1.0), 0.0)
    lone = np.flatnonzero(state.special[rows])
    if lone.size:
        full = baseline_jumps(data, state.theta[None, :], np.ones((1, data.n)))[1]
        for pos, (jumps, log_scale, _) in _literal(
                state, rows[lone], lambda theta, P: baseline_jumps(data, theta, P)):
            out[lone[pos]] = jumps * np.exp(full - log_scale)[:, None]
    return out

"""The Fine-Gray loss's gradient with one subject deleted, for every subject, by series:
O((n + K) d P + N_direct d) in all instead of the O(n K d) of
:func:`coxinfluence.likelihood.fine_gray_deletion.deleted_derivatives`, exact to rounding.

With the notation of :mod:`coxinfluence.likelihood.fine_gray_deletion` (subject i of
censoring group g, ``k_i`` the failure times ``t_k <= T_i``; ``A_k = S0_k + D0_g(t_k)``
and ``S1s_k = S1_k + D1_g(t_k)`` the risk-set sums with g's Kaplan-Meier re-estimated
before i is removed; ``b0_i``, ``b1_i`` the change of the sums after ``T_i``, ``beta`` of
that module), the deleted gradient

    sum_{t_k <= T_i} d_k (S1s_k - e_i x_i) / (A_k - e_i)
      + sum_{t_k > T_i} d_k (S1_k + G_k b1_i) / (S0_k + G_k b0_i) - xf + 1{i fails} x_i

(``G_k = G_g(t_k-)``; the failure count at ``T_i`` less one when i fails from the cause)
is rewritten, with ``a_k = S1_k / S0_k``, ``as_k = S1s_k / A_k`` and ``q_k = G_k / S0_k``,
as the full gradient plus small corrections, each one sum over the failure times:

    grad L(theta) + sum_{t_k <= T_i} d_k (as_k - a_k)                        (prefix sums)
      - e_i sum_{t_k <= T_i} d_k (x_i - as_k) / (A_k - e_i)                  (left)
      + sum_{t_k > T_i} d_k q_k (b1_i - b0_i a_k) / (1 + b0_i q_k)           (right)
      + 1{i fails} (x_i - as(T_i)) A(T_i) / (A(T_i) - e_i)         (its own failure),

``as_k - a_k = (D1_g - a_k D0_g) / A_k``. The left sum is the Cox VIF's part 1
(:mod:`coxinfluence.influence_functions.vif_series`) with ``m = d``, ``a = as``, ``den =
A``, ``u = e_i``: ``1/(A_k - e_i) = sum_p e_i^p / A_k^{p+1}`` where ``e_i / A_k <= rho``
(at most ``1/rho`` subjects of a risk set exceed it: they are in it). The right sum is the
same form with ``den = S0_k / G_k`` and ``u = -b0_i`` (of either sign; ``x_i`` becomes
``b1_i`` and the vector part is multiplied by ``b0_i``): ``1/(1 + b0 q) = sum_p (-b0
q)^p`` where ``|b0_i| q_k <= rho``. In both, the pairs above ``rho`` are summed directly,
and the series' power sums over the failure times are shared by all subjects of a group:
the engine of :mod:`coxinfluence.numerics.series` (the split, the direct pairs in bounded
blocks, the scaled powers on segments), with ``rho`` and P chosen per sum by its operation
count and P the smallest with ``rho^P <= 2^-53``.

The split is a contiguous cut: the failure times are taken latest first, so a subject's
left range runs to the end of the terms and its right range starts at the first. The
cut is found on a monotone lower envelope of the denominators (``A_k`` is non-increasing
in time, up to rounding; ``S0_k / G_k`` need not be monotone): the running minimum from
the earliest time, so every series term has ratio at most ``rho`` and the truncation
error of a subject's sum is at most ``rho^P`` times the sum of the absolute values of
its terms (``d_k |x_i - as_k| / (A_k - e_i)`` on the left, ``d_k q_k |b1_i - b0_i a_k| /
(1 + b0_i q_k)`` on the right; tested, as for the Cox VIF). The right range ends inside
the terms (at ``T_i``): its series sums are differences of two suffix sums of one
segment (:func:`~coxinfluence.numerics.series.gather_series` with ``to_end=False``), the
part subtracted the earlier terms, of smaller ratios.

Rounding: the corrections are formed directly (never as a difference of two gradients),
so the deleted gradients carry the full gradient's rounding as a common offset, which
the VIF's ``grad L - grad L_{-i}`` does not see (tested against long-double sums at n =
20,000: that difference within 1e-12 of each coefficient's largest value, measured ~1e-14,
and closer than the O(n K d) closed form's, which sums the whole gradient per subject,
measured ~5e-12).

Case weights: ``e_i`` holds the weight, the Kaplan-Meier's change is that of the deleted
weight (the pieces of :meth:`~coxinfluence.likelihood.fine_gray_deletion.DeletionState.
piece` per (group, weight)), and the own failure's term is ``w_i`` times the one above:
one pass per (group, weight) pair.

Restrictions (:func:`series_applies`): Breslow's ties and few distinct weights. Strata are
separate losses summed (:mod:`coxinfluence.likelihood.fine_gray`): a subject's deleted
gradient is its stratum's, by the series on that stratum's data alone, plus the other
strata's full gradients. The subjects alone at their time and last in their group
(``state.special``) are deleted literally, by
:func:`~coxinfluence.likelihood.fine_gray_deletion.deleted_derivatives`, as there.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from coxinfluence.likelihood.fine_gray import CAUSE, build_fine_gray_data
from coxinfluence.likelihood.fine_gray_deletion import (
    DeletionState,
    after_shift,
    deleted_derivatives,
)
from coxinfluence.numerics.series import (
    add_direct_pairs,
    choose_split,
    gather_series,
    prefix_plan,
    prefix_sums_of_columns,
    series_length,
)

__all__ = ["deleted_gradients_series", "series_applies"]

#: (row, failure time) pairs per block of the direct sums
PAIR_BLOCK = 1 << 16
#: (Kaplan-Meier group, weight) pairs at most: one pass of the series each
MAX_CLASSES = 64


def series_applies(data):
    """Whether :func:`deleted_gradients_series` handles ``data``
    (:class:`~coxinfluence.likelihood.fine_gray.FineGrayData`): Breslow's ties (crr's),
    any strata, and case weights of few distinct values: at most :data:`MAX_CLASSES`
    (Kaplan-Meier group, weight) pairs, each a pass of the series (continuous weights
    are left to the closed form)."""
    if data.ties != "breslow":
        return False
    if data.unit_weights:
        return data.n_groups <= MAX_CLASSES
    return len(np.unique(np.column_stack([data.group, data.weight]), axis=0)) <= MAX_CLASSES


def deleted_gradients_series(state, rows=None, *, rho=None, n_terms=None,
                             pair_block=PAIR_BLOCK):
    """(m, d) the gradients of the loss at ``state.theta`` with each sorted row of ``rows``
    (default all) deleted, the censoring Kaplan-Meier re-estimated without it: what
    ``deleted_derivatives(state, rows)[0]`` returns, by series (module docstring).

    ``state``: a :class:`~coxinfluence.likelihood.fine_gray_deletion.DeletionState` (its
    Hessian pieces are not used). ``rho`` and ``n_terms`` (P) fix the split and the
    series' length of both sums (default: chosen per sum, P with ``rho^P <= 2^-53``);
    ``pair_block``: pairs per block of the direct sums."""
    data = state.data
    if not series_applies(data):
        raise ValueError("the series form of the deleted gradients needs Breslow's ties and "
                         f"at most {MAX_CLASSES} (censoring group, case weight) pairs "
                         "(series_applies); use deleted_derivatives")
    rows = np.arange(data.n) if rows is None else np.asarray(rows, dtype=np.intp)
    if data.n_strata > 1:
        return _by_stratum(state, rows, rho=rho, n_terms=n_terms, pair_block=pair_block)
    out = np.empty((rows.size, data.d))
    special = state.special[rows]
    full = state.full_gradient()
    groups, weights = data.group[rows], data.weight[rows]
    if data.unit_weights:               # one class per group: no sort of the pairs
        classes = [(g, 1.0) for g in range(data.n_groups)]
    else:
        classes = np.unique(np.column_stack([groups, weights])[~special], axis=0)
    for g, w in classes:
        pos = np.flatnonzero(~special & (groups == g) & (weights == w))
        if pos.size == 0:
            continue
        out[pos] = full + _group_corrections(state, int(g), float(w), rows[pos], rho,
                                             n_terms, pair_block)
    lone = np.flatnonzero(special)
    if lone.size:
        out[lone] = deleted_derivatives(state, rows[lone])[0]
    return out


def _by_stratum(state, rows, **options):
    """:func:`deleted_gradients_series` of stratified data: each stratum's rows by the
    series on the stratum's own data (a contiguous block of the sorted rows, in the same
    order), plus the other strata's full gradients (module docstring)."""
    data = state.data
    bounds = np.append(data.stratum_start, data.n)
    states = [DeletionState(_stratum_data(data, a, b), state.theta, hessian=False)
              for a, b in zip(bounds[:-1], bounds[1:])]
    fulls = [st.full_gradient() for st in states]
    total = np.sum(fulls, axis=0)
    out = np.empty((rows.size, data.d))
    for a, st, full in zip(bounds[:-1], states, fulls):
        pos = np.flatnonzero(data.stratum[rows] == data.stratum[a])
        if pos.size:
            out[pos] = deleted_gradients_series(st, rows[pos] - a, **options) + (total - full)
    return out


def _stratum_data(data, a, b):
    """The sorted rows ``a:b`` (one stratum) as data of their own, rows in the same order
    (they are sorted by time already; the stable sort keeps them)."""
    group = np.unique(data.group[a:b], return_inverse=True)[1].reshape(-1)
    return build_fine_gray_data(data.X[a:b], data.time[a:b], data.kind[a:b], group,
                                weight=data.weight[a:b])


# ------------------------------------------------------------------ one censoring group

def _km_change(state, g, w=1.0):
    """Group g's re-estimated Kaplan-Meier for deletions of weight ``w``: ``D0`` (K,),
    ``D1`` (K, d) of ``state.piece(g, w)`` (:class:`~coxinfluence.likelihood.
    fine_gray_deletion.DeletionState`) and the piece itself (for
    :func:`~coxinfluence.likelihood.fine_gray_deletion.after_shift`)."""
    pc = state.piece(g, w)
    return SimpleNamespace(D0=pc.D[0][:, 0], D1=pc.D[1], piece=pc)


def _group_corrections(state, g, w, rows, rho, n_terms, pair_block):
    """(m, d) the deleted gradients less the full gradient of the regular sorted ``rows``
    of group ``g`` and case weight ``w`` (module docstring)."""
    data = state.data
    fail, d, K = data.fail, data.d, data.fail.size
    m = rows.size
    if K == 0:
        return np.zeros((m, d))
    km = _km_change(state, g, w)
    tau, kind = data.tie[rows], data.kind[rows]
    e, x = state.e[rows], data.X[rows]
    kt = np.searchsorted(fail, tau, side="right")            # failure times t_k <= T_i
    S0, S1, dk = state.S0, state.S1, state.dk
    A = S0 + km.D0
    a = S1 / S0[:, None]
    a_s = (S1 + km.D1) / A[:, None]
    centre = a[0].copy()                 # the mean of the largest risk set
    # the Kaplan-Meier change's prefix sums: sum_{t_k <= T_i} d_k (as_k - a_k)
    pre = np.zeros((K + 1, d))
    np.cumsum(dk[:, None] * (km.D1 - a * km.D0[:, None]) / A[:, None], axis=0, out=pre[1:])
    out = pre[kt]
    # the left sum: the Cox VIF's part 1, times -e_i
    left = _Terms(den=A, m=dk, a=a_s - centre, u=e, lo=K - kt, hi=np.full(m, K), d=d)
    part1 = np.zeros((m, d))
    _sum_terms(left, rho, n_terms, pair_block, part1, x - centre, to_end=True,
               pair_values=left.left_pairs(x - centre))
    out -= e[:, None] * part1
    # the right sum
    b0 = after_shift(state, km.piece, rows, 0, np.ones((m, 1)))[:, 0]
    b1 = after_shift(state, km.piece, rows, 1, x)
    b1 -= b0[:, None] * centre
    G = state.G[g, fail]
    if G[0] > 0:                         # else G_g is 0 at every failure time
        with np.errstate(divide="ignore"):
            den = np.where(G > 0, S0 / np.where(G > 0, G, 1.0), np.inf)
        right = _Terms(den=den, m=dk, a=a - centre, u=-b0, lo=np.zeros(m, dtype=np.intp),
                       hi=K - kt, d=d, q=G / S0)
        _sum_terms(right, rho, n_terms, pair_block, out, b1, to_end=False,
                   pair_values=right.right_pairs(b0, b1), vec_factor=b0)
    # its own failure: the count at T_i less its weight
    own = np.flatnonzero(kind == CAUSE)
    if own.size:
        k0 = kt[own] - 1
        out[own] += (x[own] - a_s[k0]) * (w * A[k0] / (A[k0] - e[own]))[:, None]
    return out


class _Terms:
    """One sum over a group's failure times, as the engine of
    :mod:`coxinfluence.numerics.series` reads it: the failure times latest first (term
    ``j`` is time ``K - 1 - j``), ``den`` the denominators (``1/q`` on the right), the
    rows' ``u`` and ranges ``[lo_i, hi_i)``, and the monotone lower envelope of ``den``
    (``env``, the running minimum from the earliest time) on which the split is cut
    and the segments are scaled."""

    def __init__(self, den, m, a, u, lo, hi, d, q=None):
        K = den.size
        rev = slice(None, None, -1)
        self.den_true = den[rev]
        self.q = None if q is None else q[rev]
        self.m, self.a = m[rev], a[rev]
        self.den = np.minimum.accumulate(den)[rev]       # the envelope, non-decreasing
        self.key = np.log(self.den)
        self.u, self.lo, self.hi = u, lo, hi
        self.data = SimpleNamespace(n=u.size, d=d)
        self.new_s = np.zeros(K, dtype=bool)
        self.new_s[0] = True
        self.s_first, self.s_last = np.array([0]), np.array([K - 1])

    def split(self, r, rows=None):
        """The first term of each row's range with ``|u_i| / env_j <= r`` (all rows, or
        the rows ``rows``)."""
        rows = slice(None) if rows is None else rows
        lo, hi, u = self.lo[rows], self.hi[rows], np.abs(self.u[rows])
        ks = lo.copy()
        far = np.flatnonzero(lo < hi)
        far = far[u[far] > r * self.den[lo[far]]]
        ks[far] = np.clip(np.searchsorted(self.key, np.log(u[far] / r), side="left"),
                          lo[far], hi[far])
        return ks

    def left_pairs(self, xc):
        """The pairs' values ``m_j (x_i - a_j) / (den_j - u_i)`` of the left sum."""
        def values(r, j):
            w = self.m[j] / (self.den_true[j] - self.u[r])
            return w[:, None] * (xc[r] - self.a[j])
        return values

    def right_pairs(self, b0, b1):
        """The pairs' values ``m_j q_j (b1_i - b0_i a_j) / (1 + b0_i q_j)`` of the right
        sum (``b1`` centred with ``a``)."""
        def values(r, j):
            q = self.q[j]
            w = self.m[j] * q / (1.0 + b0[r] * q)
            return w[:, None] * (b1[r] - b0[r, None] * self.a[j])
        return values

    def sums_by_power(self, seg, P):
        """For p = 0..P-1 the suffix sums (within segments; row ``K - 1 - j`` from term
        j on, zero sentinel row K) of ``[m/den, m a/den] (s/den)^p``, s the segment's
        envelope at its start (so ``s/den <= 1``), (K + 1, d + 1); one array reused."""
        K, d = self.den.size, self.data.d
        plan = prefix_plan((K - seg.start - seg.length)[::-1], seg.length[::-1])
        sums = np.empty((K + 1, d + 1))
        inv = 1.0 / self.den_true if self.q is None else self.q
        for p in range(P):
            def columns(c, p=p):                  # column c holds term K - 1 - c
                j = K - 1 - c
                out = np.empty((d + 1, j.size))
                w = np.multiply(self.m[j], inv[j], out=out[0])
                if p:
                    w *= (seg.scale[seg.of[j]] * inv[j]) ** p
                np.multiply(self.a[j].T, w, out=out[1:])
                return out
            yield prefix_sums_of_columns(columns, plan, sums)


def _sum_terms(terms, rho, n_terms, pair_block, out, vec, *, to_end, pair_values,
               vec_factor=None):
    """Add to ``out`` (m, d), for every row i, ``sum_j m_j (vec_i - c_i a_j) / (den_j -
    u_i)`` over its range (``c_i`` = 1, or ``vec_factor``), direct where the ratio
    exceeds ``rho`` and by the P-term series elsewhere."""
    rho, kstar = choose_split(terms, rho, series_length)
    P = series_length(rho) if n_terms is None else int(n_terms)
    add_direct_pairs(terms, kstar, pair_block, pair_values, out)

    def consume(r, g):
        out[r] += vec[r] * g[:, :1]
        if vec_factor is None:
            out[r] -= g[:, 1:]
        else:
            out[r] -= vec_factor[r, None] * g[:, 1:]
    gather_series(terms, kstar, P, lambda seg: terms.sums_by_power(seg, P), consume,
                  terms.data.d + 1, to_end=to_end)

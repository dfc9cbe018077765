"""The series accelerator of the closed-form VIF: part 1 in O((n + K) P d), exact to rounding.

The series method computes part 1 of the VIF's gradient difference (:mod:`coxinfluence.vif`)
in O((n + K) P d + N_direct d) time and O((n + K) d) memory (K = number of events, P
between 3 and 27 chosen with rho per data set, N_direct <= K / rho, see below), exact to
rounding. For row i, with ``r_ik = u_i / den_k`` (< 1 on the range, since row i is
one of the rows summed in ``den_k``), split the range at ``k*_i``:

    sum_{k in [lo_i, hi_i)} m_k (x_i - a_k) / (den_k - u_i)
      =   sum_{k in [lo_i, k*_i)} m_k (x_i - a_k) / (den_k - u_i)               (direct)
        + sum_{p < P} u_i^p sum_{k in [k*_i, hi_i)} m_k (x_i - a_k) / den_k^{p+1}  (series)
        + E_i,

where the direct terms are those with ``r_ik > rho`` and the series terms have
``r_ik <= rho``. This split is a contiguous cut because, once the Efron terms of each tie
group are listed in reverse rank order (terms are anonymous within a group), ``den_k``
is non-decreasing along a stratum's terms: later terms belong to earlier event times,
and every term of group g exceeds ``S0_g - S0D_g >= S0_{g'}`` of any later-time group g'.
So ``k*_i`` is one binary search, and the inner series sums are suffix sums over
terms, shared by all rows. The truncation error is the geometric tail

    E_i = sum_{k >= k*_i} m_k (x_i - a_k) r_ik^P / (den_k - u_i),
    |E_i| <= rho^P sum_{k >= k*_i} m_k |x_i - a_k| / (den_k - u_i)
          <= rho^P / (1 - rho) sum_{k >= k*_i} m_k |x_i - a_k| / den_k,

i.e. at most ``rho^P`` relative to the sum of absolute values. ``P`` is the smallest
with ``rho^P <= 2^-53`` (below double rounding), and ``rho`` is picked per data set from
``2^-2, 2^-4, 2^-6, 2^-8, 2^-11, 2^-14, 2^-18`` (P = 27, 14, 9, 7, 5, 4, 3) by counting
operations: a smaller ``rho`` means fewer
series terms but more direct pairs (tested: the error *is* ``-E_i`` and obeys the bound
when P is cut short; with the default P the part-1 sums agree with direct summation to
1e-13 of the sum of absolute terms, and the VIF with the O(n K d) reference to 1e-10 of
each coefficient's largest |VIF| on n = 20,000). At most ``1/rho`` rows
of a term's risk set can have ``u_i > rho den_k`` (their ``u`` add up to at most
``den_k``), so there are at most ``K / rho`` direct (row, term) pairs; they are summed
in memory-bounded blocks. Numerics: ``x`` and ``a`` are centred per stratum (at the
risk-set mean of the stratum's largest risk set), so ``x_i F - G`` does not cancel a
common offset; the direct pairs use ``x_i - a_k`` as is; ``den^-(p+1)`` is never formed:
each stratum's terms are cut into segments over which ``den`` grows by at most a factor
``f`` (``f^P <= 1e250``), a segment with smallest denominator ``s`` stores the suffix
sums of ``m (s/den)^p / den`` (all factors <= 1) and a row multiplies them by
``(u_i/s)^p``; the suffix sums are cumulative sums of positive terms (no differences).
What remains is the conditioning of the sum itself: ``x_i F - G`` loses the digits of
``|x_i - centre| F / |result|`` (a few hundred ulps on extreme data), and rows holding
almost all of a risk set (``u_i / den_k -> 1``) lose ``1 / (1 - u_i/den_k)`` in
``den_k - u_i``, as the direct sum does.
"""
from __future__ import annotations

import numpy as np

from .risksets import RiskSets

_RHO_CANDIDATES = tuple(2.0 ** -b for b in (2, 4, 6, 8, 11, 14, 18))
_ROUNDING = 2.0 ** -53       # the series is truncated once rho^P is below this
_LOG_SPAN = 250.0 * np.log(10.0)   # f^P <= 1e250 for the segment growth factor f
_STRATUM_KEY = 1500.0        # |log den| < 745 for any positive double: strata keys never mix


def series_length(rho, tol=_ROUNDING):
    """Smallest P with ``rho^P <= tol`` (P = 14 for rho = 1/16, 27 for 1/4, 3 for 2^-18)."""
    return max(1, int(np.ceil(np.log(tol) / np.log(rho) - 1e-12)))


def _reversed_ranks(data):
    """Permutation of the Efron terms that lists each tie group's terms in reverse rank
    order, making ``den`` non-decreasing along each stratum's terms (module docstring)."""
    tg = data.term_group
    first = np.searchsorted(tg, tg, side="left")
    last = np.searchsorted(tg, tg, side="right")
    return first + last - 1 - np.arange(tg.size)


def prefix_plan(starts, lengths):
    """How to take prefix sums within each segment ``[starts[j], starts[j] + lengths[j])``
    of ``K = sum(lengths)`` columns that partition ``[0, K)``.

    Segments of similar length (within a factor 2) are stacked into one padded 2-D
    gather, so many short segments (many strata) cost a few array operations, not one
    Python call each; a bucket of at most 4 segments is done slice by slice.
    Padding points at the sentinel column K (all zeros).
    """
    plan = []
    if starts.size == 0:
        return plan
    sentinel = int(lengths.sum())
    bucket = np.floor(np.log2(np.maximum(lengths, 1))).astype(int)
    for b in np.unique(bucket):
        sel = np.flatnonzero(bucket == b)
        if sel.size <= 4:
            for j in sel:
                plan.append(("slice", int(starts[j]), int(starts[j] + lengths[j])))
            continue
        width = int(lengths[sel].max())
        offs = np.arange(width)
        mask = offs[None, :] < lengths[sel, None]
        idx = np.where(mask, starts[sel, None] + offs[None, :], sentinel)
        plan.append(("stack", idx, mask, idx[mask]))
    return plan


def segmented_prefix_sums(V, plan, out=None):
    """``out[:, k] = sum of V[:, k']`` over ``k' <= k`` in k's segment; V is (c, K + 1)
    with a zero sentinel column K. Sequential sums of the terms as given: every entry is
    a sum of positive (or same-signed) terms, never a difference of two sums. ``out``: an
    array like V to write into (reused across calls: no fresh pages to fault in)."""
    if out is None:
        out = np.empty_like(V)
    out[:, -1] = 0.0
    for step in plan:
        if step[0] == "slice":
            _, a, b = step
            np.cumsum(V[:, a:b], axis=1, out=out[:, a:b])
        else:
            _, idx, mask, flat = step
            block = V[:, idx]
            np.cumsum(block, axis=2, out=block)
            out[:, flat] = block[:, mask]
    return out


def part1_series(data, state, rho=None, n_terms=None, pair_block=1 << 16):
    """Part 1 of the VIF's gradient difference (module docstring),
    ``sum_{k in [lo_i, hi_i)} m_k (x_i - a_k) / (den_k - u_i)`` for every sorted row
    (n, d), *without* the factor ``u_i``: direct sums where ``u_i / den_k > rho``, the
    P-term series in ``u_i / den_k`` elsewhere.

    ``rho`` defaults to the cheapest of ``2^-2, 2^-4, 2^-6, 2^-8, 2^-11, 2^-14, 2^-18`` by
    an operation count (``_RHO_CANDIDATES``); ``n_terms`` (P) to the smallest P with
    ``rho^P <= 2^-53``.
    The truncation error of row i is at most ``rho^P sum_k m_k |x_i - a_k| / (den_k - u_i)``
    over its series terms.
    """
    if rho is not None and not 0.0 < rho < 1.0:
        raise ValueError(f"rho must lie in (0, 1); got {rho!r}")
    out = np.zeros((data.n, data.d))
    if data.term_group.size == 0:
        return out
    terms = _SortedTerms(data, state)
    rho, kstar = terms.choose_split(rho)
    P = series_length(rho) if n_terms is None else int(n_terms)
    out += terms.direct_pairs(kstar, pair_block)
    out += terms.series(kstar, P)
    return out


class _SortedTerms:
    """The Efron terms of part 1 with each tie group's terms in reverse rank order (``den``
    non-decreasing along a stratum), the covariates centred per stratum, and the
    monotone search key that finds each row's split point ``k*_i`` by binary search."""

    def __init__(self, data, state):
        self.data = data
        self.lo, self.hi = RiskSets(data).deletion_term_ranges
        self.u = state.risk
        perm = _reversed_ranks(data)
        self.den = state.den[perm]
        self.m = state.mean_weight[perm]
        t_stratum = data.group_stratum[data.term_group]        # stratum of each term
        K = t_stratum.size
        self.new_s = np.r_[True, t_stratum[1:] != t_stratum[:-1]]
        self.s_first = np.flatnonzero(self.new_s)
        self.s_last = np.append(self.s_first[1:], K) - 1
        # centre x and a per stratum at the mean of the stratum's largest risk set
        self.centre = np.zeros((int(data.strata.max()) + 1, data.d))
        self.centre[t_stratum[self.s_last]] = state.term_mean[perm[self.s_last]]
        self.a = state.term_mean[perm] - self.centre[t_stratum]
        # monotone search key: stratum blocks, then log den (made exactly non-decreasing)
        self.key = np.maximum.accumulate(t_stratum * _STRATUM_KEY + np.log(self.den))
        with np.errstate(divide="ignore"):
            self.q = data.strata * _STRATUM_KEY + np.log(self.u)
        # largest u_i / den_k of each row's range (den_k is smallest at k = lo_i)
        self.first_ratio = np.zeros(data.n)
        has = self.lo < self.hi
        self.first_ratio[has] = self.u[has] / self.den[self.lo[has]]

    def x_centred(self, rows):
        return self.data.X[rows] - self.centre[self.data.strata[rows]]

    def split(self, r):
        """``k*_i``: the first term of row i's range with ``u_i / den_k <= r``."""
        ks = self.lo.copy()
        rows = np.flatnonzero(self.first_ratio > r)
        ks[rows] = np.clip(np.searchsorted(self.key, self.q[rows] - np.log(r), side="left"),
                           self.lo[rows], self.hi[rows])
        return ks

    def choose_split(self, rho):
        """``(rho, k*)``: the given ``rho``, or the cheapest candidate by an operation
        count (~6 per direct (row, term) pair and column, ~3 per row and ~2 per term and
        column for each of the P series terms)."""
        if rho is not None:
            return rho, self.split(rho)
        n, K = self.data.n, self.den.size
        best = None
        for r in _RHO_CANDIDATES:
            ks = self.split(r)
            cost = 6.0 * (ks - self.lo).sum() + series_length(r) * (3.0 * n + 2.0 * K)
            if best is None or cost < best[0]:
                best = (cost, r, ks)
        return best[1], best[2]

    def direct_pairs(self, kstar, pair_block):
        """Sum over the pairs (row i, term k), k in [lo_i, k*_i), in memory-bounded blocks."""
        out = np.zeros((self.data.n, self.data.d))
        lo, m, den, u, a = self.lo, self.m, self.den, self.u, self.a
        cnt = kstar - lo
        rows = np.flatnonzero(cnt > 0)
        if rows.size == 0:
            return out
        block = (np.cumsum(cnt[rows]) - cnt[rows]) // pair_block   # by first pair
        bounds = np.r_[0, np.flatnonzero(np.diff(block)) + 1, rows.size]
        for b0, b1 in zip(bounds[:-1], bounds[1:]):
            r = rows[b0:b1]
            c = cnt[r]
            first = np.cumsum(c) - c
            pr = np.repeat(r, c)
            k = np.repeat(lo[r] - first, c) + np.arange(pr.size)
            wk = m[k] / (den[k] - u[pr])
            out[r] += np.add.reduceat(wk[:, None] * (self.x_centred(pr) - a[k]), first, axis=0)
        return out

    def series(self, kstar, P):
        """The P-term series over terms [k*_i, hi_i) of every row: suffix sums over terms
        shared by all rows, on segments of each stratum over which ``den`` grows by at
        most ``f`` (``f^P <= 1e250``, so no power of a ratio over- or underflows)."""
        data, K, d = self.data, self.den.size, self.data.d
        n = data.n
        out = np.zeros((n, d))
        live = np.flatnonzero(kstar < self.hi)
        if live.size == 0:
            return out
        if 2 * live.size > n:          # cheaper to carry every row (empty ones gather zeros)
            live = np.arange(n)
        seg = _Segments(self, P)
        kl = kstar[live]
        empty = kl >= self.hi[live]
        kl[empty] = K - 1                                 # any valid term; gathers the sentinel
        sl = seg.of[kl]
        col = np.where(empty, K, K - 1 - kl)
        t = np.where(empty, 0.0, self.u[live] / seg.scale[sl])
        # rows whose stratum has more segments after that of k*_i add whole later segments
        extra = np.where(empty, 0, seg.last[kl] - sl)
        acc = np.zeros((d + 1, live.size))
        tp = np.ones(live.size)
        for p, L in enumerate(seg.prefix_sums_by_power(self.m, self.den, self.a, P)):
            if p:
                tp *= t
            _gather_add(acc, L, col, tp)
            for j in range(1, int(extra.max()) + 1):
                more = np.flatnonzero(extra >= j)
                s = sl[more] + j
                acc[:, more] += ((self.u[live[more]] / seg.scale[s]) ** p
                                 * L[:, K - 1 - seg.start[s]])
        for b0 in range(0, live.size, _GATHER_BLOCK):
            rows = live[b0:b0 + _GATHER_BLOCK]
            out[rows] += (self.x_centred(rows) * acc[0, b0:b0 + _GATHER_BLOCK, None]
                          - acc[1:, b0:b0 + _GATHER_BLOCK].T)
        return out


_GATHER_BLOCK = 1 << 16     # rows per gather of the series sums (bounded memory)


class _Segments:
    """Segments of each stratum's terms over which ``den`` grows by at most ``f``."""

    def __init__(self, terms, P):
        K = terms.den.size
        s_first, s_last = terms.s_first, terms.s_last
        seg_key = (terms.key - np.repeat(terms.key[s_first], s_last - s_first + 1)) \
            / (_LOG_SPAN / P)
        chunk = np.floor(seg_key).astype(np.int64)
        new_seg = terms.new_s | np.r_[True, chunk[1:] != chunk[:-1]]
        self.start = np.flatnonzero(new_seg)
        self.length = np.diff(np.append(self.start, K))
        self.of = np.cumsum(new_seg) - 1
        self.scale = terms.den[self.start]                 # smallest den of each segment
        self.last = np.repeat(self.of[s_last], s_last - s_first + 1)  # last of the stratum

    def prefix_sums_by_power(self, m, den, a, P):
        """For p = 0..P-1: the suffix sums over terms (as prefix sums in reversed term
        order, column K - 1 - k; a zero sentinel column K) of rows [m/den, m a/den] scaled
        by ``(s/den)^p`` (s: the segment's smallest den, all factors <= 1), laid out as
        (d + 1, K + 1) for contiguous cumulative sums."""
        K, d = den.size, a.shape[1]
        plan = prefix_plan((K - self.start - self.length)[::-1], self.length[::-1])
        ratio = (self.scale[self.of] / den)[::-1]          # (s / den_k) <= 1 within a segment
        Vp = np.zeros((d + 1, K + 1))
        Vp[0, :K] = (m / den)[::-1]
        Vp[1:, :K] = Vp[0, :K] * a[::-1].T
        for p in range(P):
            if p:
                Vp[:, :K] *= ratio
            yield segmented_prefix_sums(Vp, plan)


def _gather_add(acc, L, col, tp):
    """``acc += L[:, col] * tp`` in blocks of rows (bounded temporary memory)."""
    gathered = np.empty((L.shape[0], min(_GATHER_BLOCK, col.size)))
    for b0 in range(0, col.size, _GATHER_BLOCK):
        b1 = min(b0 + _GATHER_BLOCK, col.size)
        g = gathered[:, :b1 - b0]
        np.take(L, col[b0:b1], axis=1, out=g)
        g *= tp[b0:b1]
        acc[:, b0:b1] += g


_EFRON_DIRECT_MAX = 32      # tie sizes up to this: sum the Efron fractions one by one
_EFRON_SERIES_X = 0.25      # above: the power series in x up to here, the digamma form beyond
_EFRON_SERIES_Q = 27        # 0.25^27 < 2^-53


def efron_fractions(Ns):
    """The Efron fractions ``c_r = r / N``, ``r = 0..N-1``, of every tie size in ``Ns``,
    concatenated: (pair, c) with ``pair`` the position in ``Ns`` of each fraction."""
    pair = np.repeat(np.arange(Ns.size), Ns)
    return pair, (np.arange(pair.size) - np.repeat(np.cumsum(Ns) - Ns, Ns)) / Ns[pair]


def fraction_moment_series(N, x, Q, power, weight=None):
    """``sum_{q < Q} w_q x^q M_{q+power}(N)`` by Horner's rule, ``M_k(N) = sum_r c_r^k``
    over the Efron fractions of tie size N (:func:`efron_fractions`; one moment table per
    distinct N), ``w_q = weight(q)`` (default 1): the power-series branch of
    :func:`efron_fraction_sum` and of its derivative."""
    Nu, inv = np.unique(N, return_inverse=True)
    pair, c = efron_fractions(Nu)
    M = np.empty((Q, Nu.size))
    cq = c.copy()
    for _ in range(power - 1):
        cq *= c
    for q in range(Q):
        M[q] = np.bincount(pair, weights=cq, minlength=Nu.size)
        if weight is not None:
            M[q] *= weight(q)
        cq *= c
    acc = M[-1, inv].copy()
    for q in range(Q - 2, -1, -1):
        acc = acc * x + M[q, inv]
    return acc


def efron_fraction_sum(N, x):
    """``f(N, x) = sum_{r=0}^{N-1} c_r / (1 - c_r x)`` with ``c_r = r / N``, for integer
    ``N >= 0`` and ``0 <= x <= 1`` (arrays of the same shape), to rounding.

    ``N <= 32``: the sum itself. Otherwise, for ``x <= 1/4`` the power series
    ``f = sum_{q >= 0} x^q M_{q+1}(N)``, ``M_q(N) = sum_r c_r^q <= N``, truncated after 27
    terms (relative error <= 0.25^27 / (1 - 0.25) < 1e-16); for ``x > 1/4`` the
    closed form ``f = (z [psi(z + 1) - psi(z - N + 1)] - N) / x`` with ``z = N / x``
    (``sum_r 1/(1 - c_r x) = z sum_r 1/(z - r)``), which loses at most a few hundred ulps
    there (``psi`` differences of relative size >= ln(4/3) / ln(4N)).
    """
    from scipy.special import digamma
    N = np.asarray(N, dtype=np.int64)
    x = np.asarray(x, dtype=np.float64)
    f = np.zeros(x.shape)
    small = np.flatnonzero((N > 0) & (N <= _EFRON_DIRECT_MAX))
    if small.size:
        pair, c = efron_fractions(N[small])
        f[small] = np.bincount(pair, weights=c / (1.0 - c * x[small][pair]),
                               minlength=small.size)
    big = N > _EFRON_DIRECT_MAX
    series = np.flatnonzero(big & (x <= _EFRON_SERIES_X))
    if series.size:     # M[q] = sum_r c_r^(q + 1)
        f[series] = fraction_moment_series(N[series], x[series], _EFRON_SERIES_Q, 1)
    closed = np.flatnonzero(big & (x > _EFRON_SERIES_X))
    if closed.size:
        Nc, xc = N[closed].astype(np.float64), x[closed]
        z = Nc / xc
        f[closed] = (z * (digamma(z + 1.0) - digamma(z - Nc + 1.0)) - Nc) / xc
    return f

"""The series accelerator of the closed-form VIF: part 1 in O((n + K) P d), exact to rounding.

The series method computes part 1 of the VIF's gradient difference
(:mod:`coxinfluence.influence_functions.vif`)
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

from functools import cached_property

import numpy as np

from coxinfluence.numerics.series import RHO_CANDIDATES, series_length
from coxinfluence.numerics.threads import for_row_blocks, n_threads

_LOG_SPAN = 250.0 * np.log(10.0)   # f^P <= 1e250 for the segment growth factor f
_STRATUM_KEY = 1500.0        # |log den| < 745 for any positive double: strata keys never mix


def _reversed_ranks(data):
    """Permutation of the Efron terms that lists each tie group's terms in reverse rank
    order, making ``den`` non-decreasing along each stratum's terms (module docstring)."""
    tg = data.term_group
    first = np.searchsorted(tg, tg, side="left")
    last = np.searchsorted(tg, tg, side="right")
    return _index_dtype(first + last - 1 - np.arange(tg.size))


def _index_dtype(idx):
    """Non-negative indices as int32 when they fit (half the memory at 10^7 rows)."""
    return idx.astype(np.int32) if idx.max(initial=0) < 2 ** 31 - 1 else idx


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


def prefix_sums_of_columns(columns, plan, out, block=1 << 13):
    """The sums of :func:`segmented_prefix_sums`, written transposed into ``out``
    (K + 1, c) (row K, the sentinel, zero), with the summands made on demand:
    ``columns(j)`` returns the columns ``j`` (indices < K) of the (c, K) summand array.
    A long segment is summed ``block`` columns at a time with its running sum carried
    over, and short ones about ``block`` columns at a time, so no (c, K) array is ever
    formed."""
    out[-1] = 0.0
    for step in plan:
        if step[0] == "slice":
            _, a, b = step

            def block_sums(w, i0, i1, a=a):      # each block's own prefix sums
                part = np.cumsum(columns(np.arange(a + i0, a + i1)), axis=1)
                out[a + i0:a + i1] = part.T
            T = for_row_blocks(block_sums, b - a, block)
            if T == 1:                           # one pass: add the carry in order
                for c0 in range(a + block, b, block):
                    out[c0:min(c0 + block, b)] += out[c0 - 1]
                continue
            # on threads: the carries (each the previous block's last sum plus its own
            # carry: the same additions as above, so the same bits), then add them
            starts = np.arange(a + block, b, block)
            carry = np.zeros((starts.size + 1, out.shape[1]))
            for j, c0 in enumerate(starts):
                carry[j + 1] = out[c0 - 1] + carry[j]

            def add_carry(w, i0, i1, a=a, carry=carry):
                if i0:                           # block i0 // block: its carry
                    out[a + i0:a + i1] += carry[i0 // block]
            for_row_blocks(add_carry, b - a, block, threads=T)
        else:                                 # short segments, stacked: a few at a time
            _, idx, mask, _ = step
            per = max(1, block // idx.shape[1])
            for s0 in range(0, idx.shape[0], per):
                m = mask[s0:s0 + per]
                flat = idx[s0:s0 + per][m]
                sums = np.zeros((out.shape[1],) + m.shape)
                sums[:, m] = columns(flat)
                np.cumsum(sums, axis=2, out=sums)
                out[flat] = sums[:, m].T
    return out


def part1_series(data, state, rho=None, n_terms=None, pair_block=1 << 16, out=None):
    """Part 1 of the VIF's gradient difference (module docstring),
    ``sum_{k in [lo_i, hi_i)} m_k (x_i - a_k) / (den_k - u_i)`` for every sorted row
    (n, d), *without* the factor ``u_i``: direct sums where ``u_i / den_k > rho``, the
    P-term series in ``u_i / den_k`` elsewhere.

    ``rho`` defaults to the cheapest of ``2^-2, 2^-4, 2^-6, 2^-8, 2^-11, 2^-14, 2^-18`` by
    an operation count (``RHO_CANDIDATES``); ``n_terms`` (P) to the smallest P with
    ``rho^P <= 2^-53``.
    The truncation error of row i is at most ``rho^P sum_k m_k |x_i - a_k| / (den_k - u_i)``
    over its series terms. ``out``: an (n, d) array to add the sums into (the caller's
    buffer: no second (n, d) array at 10^7 rows); default zeros.
    """
    if rho is not None and not 0.0 < rho < 1.0:
        raise ValueError(f"rho must lie in (0, 1); got {rho!r}")
    if out is None:
        out = np.zeros((data.n, data.d))
    if data.term_group.size == 0:
        return out
    terms = _SortedTerms(data, state)
    rho, kstar = choose_split(terms, rho, series_length)
    P = series_length(rho) if n_terms is None else int(n_terms)
    add_direct_pairs(terms, kstar, pair_block, terms.pair_values, out)
    terms.series(kstar, P, out)
    return out


class _SortedTerms:
    """The Efron terms of part 1 with each tie group's terms in reverse rank order (``den``
    non-decreasing along a stratum), the covariates centred per stratum, and the
    monotone search key that finds each row's split point ``k*_i`` by binary search."""

    def __init__(self, data, state):
        self.data = data
        self.lo, self.hi = state.risk_sets.deletion_term_ranges
        self.u = state.risk
        self.state = state
        self.perm = perm = _reversed_ranks(data)
        self.den = state.den[perm]
        self.m = state.mean_weight[perm]
        self.t_stratum = t_stratum = _index_dtype(data.group_stratum[data.term_group])
        K = t_stratum.size
        self.new_s = np.r_[True, t_stratum[1:] != t_stratum[:-1]]
        self.s_first = np.flatnonzero(self.new_s)
        self.s_last = np.append(self.s_first[1:], K) - 1
        # centre x and a per stratum at the mean of the stratum's largest risk set
        self.centre = np.zeros((int(data.strata.max()) + 1, data.d))
        self.centre[t_stratum[self.s_last]] = state.term_mean[perm[self.s_last]]
        # monotone search key: stratum blocks, then log den (made exactly non-decreasing)
        self.key = np.maximum.accumulate(t_stratum * _STRATUM_KEY + np.log(self.den))

    def x_centred(self, rows):
        if self.centre.shape[0] == 1:                   # one stratum: no gather of centres
            return self.data.X[rows] - self.centre[0]
        return self.data.X[rows] - self.centre[self.data.strata[rows]]

    def term_means(self, k):
        """``a_k`` of the terms ``k`` (this order), centred per stratum, (len(k), d)."""
        a = self.state.term_mean[self.perm[k]]
        a -= self.centre[0] if self.centre.shape[0] == 1 else self.centre[self.t_stratum[k]]
        return a

    @cached_property
    def a(self):
        """All (K, d) centred term means (not kept by the VIF: it gathers
        :meth:`term_means` by blocks, one (K, d) array less at 10^7 rows)."""
        return self.term_means(np.arange(self.den.size))

    def split(self, r, rows=None):
        """``k*_i``: the first term of row i's range with ``u_i / den_k <= r``, for every
        row or for the sorted rows ``rows``."""
        rows = slice(None) if rows is None else rows
        ks, lo, hi, u = self.lo[rows].copy(), self.lo[rows], self.hi[rows], self.u[rows]
        # rows whose largest ratio u_i / den_k (at k = lo_i, the smallest den) exceeds r
        far = np.flatnonzero(lo < hi)
        far = far[u[far] > r * self.den[lo[far]]]
        with np.errstate(divide="ignore"):
            q = self.data.strata[rows][far] * _STRATUM_KEY + np.log(u[far] / r)
        ks[far] = np.clip(np.searchsorted(self.key, q, side="left"), lo[far], hi[far])
        return ks

    def pair_values(self, rows, k):
        """The VIF's part 1 of the pairs (row, term): ``m_k (x_i - a_k) / (den_k - u_i)``."""
        wk = self.m[k] / (self.den[k] - self.u[rows])
        return wk[:, None] * (self.x_centred(rows) - self.term_means(k))

    def series(self, kstar, P, out):
        """Add to ``out`` the P-term series over terms [k*_i, hi_i) of every row
        (:func:`gather_series` of the suffix sums of ``[m/den, m a/den]``): row i adds
        ``x_i F_i - G_i`` with ``F_i`` (scalar) and ``G_i`` (d,) the sums of its gathered
        suffix sums; ``G`` goes straight into ``out``, so per row only its gather row,
        its ratio and ``F`` are kept (memory: ``out``, one (K + 1, d + 1) array and
        three (n,) vectors)."""
        n = self.data.n
        F = np.zeros(n)

        def consume(rows, g):
            F[rows] += g[:, 0]
            out[rows] -= g[:, 1:]
        gather_series(self, kstar, P, lambda seg: seg.prefix_sums_by_power(self, P), consume,
                      self.data.d + 1)

        def add_x_f(w, a, b):
            out[a:b] += self.x_centred(slice(a, b)) * F[a:b, None]
        for_row_blocks(add_x_f, n, _GATHER_BLOCK)
        return out


# --------------------------------------------------- the series engine: VIF, Hessians

def choose_split(terms, rho, length):
    """``(rho, k*)`` for the sorted terms ``terms`` (:class:`_SortedTerms`): the given
    ``rho``, or the cheapest candidate of ``RHO_CANDIDATES`` by an operation count (~6 per
    direct (row, term) pair, ~3 per row and ~2 per term for each of the ``length(rho)``
    series terms; the counts only pick rho, every rho gives the same sums to rounding).
    Above 2^18 rows the direct pairs are counted on every s-th row (scaled by s)."""
    if rho is not None:
        if not 0.0 < rho < 1.0:
            raise ValueError(f"rho must lie in (0, 1); got {rho!r}")
        return rho, terms.split(rho)
    n, K = terms.data.n, terms.den.size
    stride = max(1, n >> 18)
    sample = None if stride == 1 else np.arange(0, n, stride)
    lo = terms.lo if sample is None else terms.lo[sample]
    best = None
    for r in RHO_CANDIDATES:
        pairs = stride * float((terms.split(r, sample) - lo).sum())
        cost = 6.0 * pairs + length(r) * (3.0 * n + 2.0 * K)
        if best is None or cost < best[0]:
            best = (cost, r)
    return best[1], terms.split(best[1])


def add_direct_pairs(terms, kstar, pair_block, pair_values, out):
    """Add to ``out`` (n, c), for every row i, the sum of ``pair_values(rows, k)`` (one
    row of c values per pair) over the pairs (row i, term k), k in [lo_i, k*_i), formed
    in blocks of about ``pair_block`` pairs (at most ``K / rho`` pairs in all)."""
    lo = terms.lo
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
        out[r] += np.add.reduceat(pair_values(pr, k), first, axis=0)
    return out


def gather_series(terms, kstar, P, sums_by_power, consume, width):
    """The series over terms [k*_i, hi_i) of every row i, power by power: suffix sums over
    terms shared by all rows, on segments of each stratum over which ``den`` grows by at
    most ``f`` (``f^P <= 1e250``, so no power of a ratio over- or underflows).

    ``sums_by_power(seg)`` yields, for p = 0..P-1, the suffix sums (K + 1, width) of the
    p-th power's summands scaled by ``(s/den)^p`` (s: the segment's smallest den; row
    ``K - 1 - k`` holds the sum from term k on, row K is zero). Row i reads its row at
    ``k*_i`` times ``(u_i/s)^p`` (plus whole later segments of its stratum, each scaled
    by its own smallest den) and hands the values to ``consume(rows, values)`` (rows: a
    slice, from threads on disjoint blocks, or an index array)."""
    n, K = terms.data.n, terms.den.size
    seg = _Segments(terms, P)
    empty = kstar >= terms.hi
    k = np.where(empty, K - 1, kstar)         # any valid term; gathers the sentinel
    sl = seg.of[k]
    col = _index_dtype(np.where(empty, K, K - 1 - k))
    t = np.where(empty, 0.0, terms.u / seg.scale[sl])
    # rows whose stratum has more segments after that of k*_i add whole later segments
    extra = np.where(empty, 0, seg.last[k] - sl)
    several = np.flatnonzero(extra > 0)
    extra, sl = extra[several], sl[several]
    del k, empty
    bufs = [np.empty((min(_GATHER_BLOCK, n), width)) for _ in range(n_threads(n))]
    for p, L in enumerate(sums_by_power(seg)):
        def gather(w, a, b, p=p, L=L):           # rows [a, b): disjoint across blocks
            g = np.take(L, col[a:b], axis=0, out=bufs[w][:b - a])
            if p:
                tp = t[a:b].copy()                # t^p by p - 1 products (no (n,) array)
                for _ in range(p - 1):
                    tp *= t[a:b]
                g *= tp[:, None]
            consume(slice(a, b), g)
        for_row_blocks(gather, n, _GATHER_BLOCK, threads=len(bufs))
        for j in range(1, int(extra.max(initial=0)) + 1):
            pick = np.flatnonzero(extra >= j)
            more, s = several[pick], sl[pick] + j
            consume(more, ((terms.u[more] / seg.scale[s]) ** p)[:, None]
                    * L[K - 1 - seg.start[s]])


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

    def prefix_sums_by_power(self, terms, P):
        """For p = 0..P-1: the suffix sums over terms (as prefix sums in reversed term
        order, row K - 1 - k; a zero sentinel row K) of ``[m/den, m a/den]`` scaled by
        ``(s/den)^p`` (s: the segment's smallest den, all factors <= 1), (K + 1, d + 1),
        so that a row's gather reads one contiguous line (about 4x faster than d + 1
        strided gathers). The summands are made by blocks of terms as they are summed
        (:func:`prefix_sums_of_columns`), and one (K + 1, d + 1) array is reused for every
        p: a yielded array is overwritten by the next."""
        K, d = terms.den.size, terms.data.d
        plan = prefix_plan((K - self.start - self.length)[::-1], self.length[::-1])
        sums = np.empty((K + 1, d + 1))
        for p in range(P):
            def columns(j, p=p):                  # column j holds term K - 1 - j
                k = K - 1 - j
                out = np.empty((d + 1, k.size))
                w = np.divide(terms.m[k], terms.den[k], out=out[0])
                if p:
                    w *= (self.scale[self.of[k]] / terms.den[k]) ** p
                np.multiply(terms.term_means(k).T, w, out=out[1:])
                return out
            yield prefix_sums_of_columns(columns, plan, sums)



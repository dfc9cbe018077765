"""Truncated geometric series: how many terms put the tail below rounding, the split
points the series accelerators choose among, and the generic engine they share (the
direct/series split, the direct pairs in bounded blocks, and the segmented, scaled power
sums gathered per row). No formula of the paper: the formulas are the callers'
(:mod:`coxinfluence.influence_functions.vif_series` documents the method for the Cox VIF,
:mod:`coxinfluence.likelihood.fine_gray_series` for Fine-Gray's deleted gradients).

The engine reads a *terms* object: ``terms.data.n`` rows, ``terms.den`` (K,) the terms'
denominators (non-decreasing along each stratum of terms, or a non-decreasing lower
envelope of them), ``terms.u`` (n,) the rows' ratios' numerators, ``terms.lo`` and
``terms.hi`` (n,) each row's range of terms, ``terms.key`` (the monotone search key:
stratum blocks, then log den), ``terms.new_s``, ``terms.s_first``, ``terms.s_last`` (the
strata of terms) and ``terms.split(r, rows)`` (the first term of each row's range with
``|u_i| / den_k <= r``)."""
from __future__ import annotations

import numpy as np

from coxinfluence.numerics.threads import for_row_blocks, n_threads

#: candidate ratios below which a sum is taken by its power series (the cheapest is chosen)
RHO_CANDIDATES = tuple(2.0 ** -b for b in (2, 4, 6, 8, 11, 14, 18))
#: a series is truncated once rho^P is below this
ROUNDING = 2.0 ** -53


def series_length(rho, tol=ROUNDING):
    """Smallest P with ``rho^P <= tol`` (P = 14 for rho = 1/16, 27 for 1/4, 3 for 2^-18)."""
    return max(1, int(np.ceil(np.log(tol) / np.log(rho) - 1e-12)))

#: f^P <= 1e250 for the growth factor f of the denominators within a segment
LOG_SPAN = 250.0 * np.log(10.0)


def index_dtype(idx):
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


def prefix_sums_of_columns(columns, plan, out, block=1 << 13, kept=None):
    """The sums of :func:`segmented_prefix_sums`, written transposed into ``out``
    (K + 1, c) (row K, the sentinel, zero), with the summands made on demand:
    ``columns(j)`` returns the columns ``j`` (indices < K) of the (c, K) summand array.
    A long segment is summed ``block`` columns at a time with its running sum carried
    over, and short ones about ``block`` columns at a time, so no (c, K) array is ever
    formed.

    ``kept`` (a :class:`Kept`): only the sums at its positions are written, position k
    to row ``kept.index[k]`` of ``out`` (``kept.size`` rows; the same bits as the full
    array's rows)."""
    if kept is not None:
        return _kept_prefix_sums(columns, plan, out, block, kept)
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


class Kept:
    """The positions ``0..K`` (K: the zero sentinel) whose prefix sums a gather reads
    (:func:`gather_series` with ``compact=True``): ``mask`` (K + 1,) bool, ``index``
    (K + 1,) the row of each kept position in the compact array (int32 when it fits),
    ``size`` the number of kept positions (the sentinel last)."""

    def __init__(self, mask):
        self.mask = mask
        self.index = np.cumsum(mask, dtype=np.int32 if mask.size < 2 ** 31 - 1
                               else np.int64) - 1
        self.size = int(self.index[-1]) + 1

    def rows_before(self, c):
        """The number of kept positions below ``c`` (the compact row of the first kept
        position at or after ``c``)."""
        return int(self.index[c]) + 1 - int(self.mask[c])


def _kept_prefix_sums(columns, plan, out, block, kept):
    """:func:`prefix_sums_of_columns` at the positions of ``kept`` only: each block's own
    prefix sums are kept at its positions with its last sum aside; the carries (each the
    previous block's last sum plus its own carry, as the threaded full path adds them:
    the same bits) are added to the kept rows afterwards."""
    mask, index = kept.mask, kept.index
    out[-1] = 0.0
    for step in plan:
        if step[0] == "slice":
            _, a, b = step
            nb = -(-(b - a) // block)
            lasts = np.empty((nb, out.shape[1]))

            def block_sums(w, i0, i1, a=a, lasts=lasts):
                part = np.cumsum(columns(np.arange(a + i0, a + i1)), axis=1)
                lasts[i0 // block] = part[:, -1]
                sel = np.flatnonzero(mask[a + i0:a + i1])
                if sel.size:
                    j0 = int(index[a + i0 + sel[0]])
                    out[j0:j0 + sel.size] = part[:, sel].T
            for_row_blocks(block_sums, b - a, block)
            carry = np.zeros(out.shape[1])
            for j in range(1, nb):
                carry = lasts[j - 1] + carry
                j0 = kept.rows_before(a + j * block)
                j1 = kept.rows_before(min(a + (j + 1) * block, b))
                if j1 > j0:
                    out[j0:j1] += carry
        else:                                 # short segments, stacked: a few at a time
            _, idx, mask2, _ = step
            per = max(1, block // idx.shape[1])
            for s0 in range(0, idx.shape[0], per):
                m = mask2[s0:s0 + per]
                flat = idx[s0:s0 + per][m]
                sums = np.zeros((out.shape[1],) + m.shape)
                sums[:, m] = columns(flat)
                np.cumsum(sums, axis=2, out=sums)
                sel = mask[flat]
                out[index[flat[sel]]] = sums[:, m].T[sel]
    return out


def choose_split(terms, rho, length):
    """``(rho, k*)`` for the sorted terms ``terms`` (module docstring): the given
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


def gather_series(terms, kstar, P, sums_by_power, consume, width, *, to_end=True,
                  compact=False):
    """The series over terms [k*_i, hi_i) of every row i, power by power: suffix sums over
    terms shared by all rows, on segments of each stratum over which ``den`` grows by at
    most ``f`` (``f^P <= 1e250``, so no power of a ratio over- or underflows).

    ``sums_by_power(seg)`` yields, for p = 0..P-1, the suffix sums (K + 1, width) of the
    p-th power's summands scaled by ``(s/den)^p`` (s: the segment's smallest den; row
    ``K - 1 - k`` holds the sum from term k to the end of k's segment, row K is zero).
    Row i reads its row at ``k*_i`` times ``(u_i/s)^p`` (plus whole later segments of its
    range, each scaled by its own smallest den) and hands the values to ``consume(rows,
    values)`` (rows: a slice, from threads on disjoint blocks, or an index array).

    ``to_end``: every ``hi_i`` is the end of row i's stratum of terms (the Cox VIF's
    ranges). Otherwise ``hi_i`` may lie inside the stratum: the range's last segment
    contributes its suffix sum at ``k*_i`` (or its total) less its suffix sum at
    ``hi_i`` (the part subtracted should be that of the smaller ratios, the larger
    denominators: its rounding is that of the sums from ``k*_i`` to the segment's end,
    not of the range's own).

    ``compact``: ``sums_by_power`` yields only the rows it is asked for, those of the
    positions ``seg.kept`` (a :class:`Kept`: every row's gather position, each segment's
    start, the sentinel) in ``seg.kept.size`` rows (:func:`prefix_sums_of_columns` with
    ``kept``), the same values: rows gather at most one position each and many share one
    (the first term of their tie group), so 10^7 rows with ties read about a tenth of
    the K + 1 rows (one (K + 1, width) array less at the peak, and fewer cache misses)."""
    n, K = terms.data.n, terms.den.size
    seg = Segments(terms, P)
    empty = kstar >= terms.hi
    k = np.where(empty, K - 1, kstar)         # any valid term; gathers the sentinel
    sl = seg.of[k]
    col = index_dtype(np.where(empty, K, K - 1 - k))
    t = np.where(empty, 0.0, terms.u / seg.scale[sl])
    if to_end:
        last = seg.last[k]
        stop = None
    else:      # the segment of the range's last term, and the suffix at hi_i inside it
        hi = np.minimum(terms.hi, K)
        last = np.where(empty, sl, seg.of[np.maximum(hi - 1, 0)])
        inside = ~empty & (hi < K)
        inside[inside] = seg.of[hi[inside]] == last[inside]
        stop = index_dtype(np.where(inside, K - 1 - hi, K))
        del hi, inside
    # rows whose range has more segments after that of k*_i add whole later segments
    extra = np.where(empty, 0, last - sl)
    several = np.flatnonzero(extra > 0)
    extra, sl = extra[several], sl[several]
    if stop is not None:      # the range's own first segment subtracts only if also last
        stop_first = stop.copy()
        stop_first[several] = K
        stop_last = stop[several]
    del k, empty, last
    seg_row = K - 1 - seg.start            # the row of each segment's whole sum
    if compact:
        mask = np.zeros(K + 1, dtype=bool)
        mask[col] = True
        mask[seg_row] = True
        mask[K] = True
        if stop is not None:
            mask[stop] = True
        seg.kept = kept = Kept(mask)
        col = np.take(kept.index, col)
        seg_row = kept.index[seg_row]
        if stop is not None:
            stop_first, stop_last = kept.index[stop_first], kept.index[stop_last]
        sentinel = kept.size - 1
    else:
        sentinel = K
    bufs = [np.empty((min(GATHER_BLOCK, n), width)) for _ in range(n_threads(n))]
    for p, L in enumerate(sums_by_power(seg)):
        def gather(w, a, b, p=p, L=L):           # rows [a, b): disjoint across blocks
            g = np.take(L, col[a:b], axis=0, out=bufs[w][:b - a])
            if stop is not None:
                g -= L[stop_first[a:b]]
            if p:
                tp = t[a:b].copy()                # t^p by p - 1 products (no (n,) array)
                for _ in range(p - 1):
                    tp *= t[a:b]
                g *= tp[:, None]
            consume(slice(a, b), g)
        for_row_blocks(gather, n, GATHER_BLOCK, threads=len(bufs))
        for j in range(1, int(extra.max(initial=0)) + 1):
            pick = np.flatnonzero(extra >= j)
            more, s = several[pick], sl[pick] + j
            part = L[seg_row[s]]
            if stop is not None:                  # the range's last segment: up to hi_i
                part = part - L[np.where(extra[pick] == j, stop_last[pick], sentinel)]
            consume(more, ((terms.u[more] / seg.scale[s]) ** p)[:, None] * part)


GATHER_BLOCK = 1 << 16     # rows per gather of the series sums (bounded memory)


class Segments:
    """Segments of each stratum's terms over which ``den`` grows by at most ``f``;
    ``kept``: the positions a compact gather reads (:func:`gather_series`), or None."""

    kept = None

    def __init__(self, terms, P):
        K = terms.den.size
        s_first, s_last = terms.s_first, terms.s_last
        seg_key = (terms.key - np.repeat(terms.key[s_first], s_last - s_first + 1)) \
            / (LOG_SPAN / P)
        chunk = np.floor(seg_key).astype(np.int64)
        new_seg = terms.new_s | np.r_[True, chunk[1:] != chunk[:-1]]
        self.start = np.flatnonzero(new_seg)
        self.length = np.diff(np.append(self.start, K))
        self.of = index_dtype(np.cumsum(new_seg) - 1)     # int32: (K,) arrays at 10^7 rows
        self.scale = terms.den[self.start]                 # smallest den of each segment
        self.last = np.repeat(self.of[s_last], s_last - s_first + 1)  # last of the stratum

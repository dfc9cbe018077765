"""Part 1 of the closed-form VIF with delayed entry (``start=``), exact to rounding.

With counting-process rows, row i is at risk on ``(start_i, time_i]``: the Efron terms whose
denominators hold it (other than as an event of its own tie group) are a contiguous range
``[lo_i, hi_i)`` of its stratum's terms, whole tie groups (``RiskSets.deletion_term_ranges``),
but ``den_k`` is no longer monotone along the terms (going back in time rows leave the risk
sets as well as join them), so the split of :mod:`coxinfluence.influence_functions.vif_series` (one
cut into a
direct block and a series block of suffix sums) does not apply. Here row i gets a threshold
``s = 2^j`` with ``u_i <= s / 2``, shared by the rows of a *class* j, and its range splits by
``den``:

    sum_{k in [lo_i, hi_i)} m_k (x_i - a_k) / (den_k - u_i)
      =   sum_{k in range, den_k < s} m_k (x_i - a_k) / (den_k - u_i)                (direct)
        + x_i F_i - G_i,   (F_i, G_i) = sum_{p < P_i} t_i^p [Q_p(lo_i) - Q_p(hi_i)]   (series)
        + E_i,

    t_i = u_i / s,   Q_p(k) = sum_{k' >= k in i's stratum, den_k' >= s} m_k' (s/den_k')^p
                               (1, a_k') / den_k'      (suffix sums of class j).

Truncation: every series term has ``den_k >= max(s, mr_i)``, ``mr_i`` the smallest ``den``
of the range (a sparse-table range minimum over the tie groups), so ``u_i / den_k <= r_i =
u_i / max(s, mr_i) <= 1/2`` and ``|E_i| <= r_i^{P_i} / (1 - r_i) sum m_k |x_i - a_k| /
den_k``; ``P_i`` is the smallest with ``r_i^{P_i} <= 2^-53``, per row (most rows hold a tiny
share of their risk sets and need 3 to 5 terms).

Numerics. A range sum is a difference of two suffix sums, which cancels the terms of the
row's stratum before its entry (``k >= hi_i``; none without delayed entry): the rounding
error of the p-th difference is a few ``eps`` (the cumulative sum's own rounding) times
``(u_i/s)^p Q_p(lo_i)``, and since the suffix sums of class j hold only terms with
``den >= s >= 2 u_i``, every cancelled term has ``u_i / den_k <= 1/2``: over all p together
twice that for p = 0, i.e. relative to the positive sums
``sum_{k >= lo_i, den_k >= s} m_k (1, |a_k|) / den_k`` (a Nelson-Aalen-like sum from the
row's exit back to the stratum's first event time). A single suffix sum over all terms
would hold, for a large ``u_i``, terms with ``den_k < u_i`` outside the range whose powers
``(u_i/den_k)^p`` grow without bound and cancel catastrophically; one sum per den level (the
first sketch) would cost two gathers per level and power for every row, a class costs two per
power. Suffix rather than prefix sums: going back in time risk sets mostly grow, so the
cancelled terms (before entry) are mostly small ones; prefix sums would cancel the large
late-time terms (measured: 1e-10 instead of 2e-13 of a row's sum of absolute terms on a
design whose linear predictor spans e^54). ``den^-(p+1)`` is never formed: the stored factors
``(s/den)^p`` are at most 1 and ``t_i <= 1/2``; a weight ``m_k (s/den_k)^p / den_k`` below
``1e-290`` is set to 0 (no subnormal arithmetic), negligible since ``den_k <= sum_j w_j`` on
the shifted scale (``max u = max w``) makes every nonempty ``F_i >= min m / sum w``.
``x`` and ``a`` are centred per stratum (at the mean of the stratum's largest risk set), so
``x_i F_i - G_i`` does not cancel a common offset; direct pairs use ``x_i - a_k`` as is.

Classes. Row i may use class j when ``u_i <= 2^(j-1)`` (``j >= j_std,i = max(J0,
floor(log2 u_i) + 2)``, ``2^J0 <= min den``): then every term of the class's suffix sums has
``u_i / den_k <= 1/2``. It may also use ``J0`` (all terms, ``t_i`` possibly above 1) when
``u_i <= sm_i / 2``, ``sm_i`` the smallest ``den`` from ``lo_i`` to the end of its stratum
(a second range minimum): the same guarantee, as long as ``t_i^{P_i} <= 2^800`` (no
overflow). This *relaxed* case keeps the few rows with large ``u`` in the one class most
rows use, instead of one class (a pass of suffix sums per power) per octave of ``u``. The
rows with the same candidates and the same ``P`` at the lowest one (a bin), largest bin
first, pick the candidate (their lowest and the next 24 powers of 2) with the smallest
operation count on a sample of their rows: ``P_i`` series terms (two gathers of a
(d + 1)-vector each), the direct pairs (``den_k < s``, counted by binary search in the
sorted list of such terms) and the suffix sums a new class (or more powers of a class)
needs, ``K (d + 1)`` per power. At ``j_std`` a direct pair has ``den_k < s <= 4 u_i``: a
term has at most 4 direct rows (their ``u`` add up to at most ``den_k``), so
``N_direct <= 4 K`` there; the count moves a bin higher only where that is cheaper.

Cost: O(n P d + C K P d + N_direct d + G log G) time, C the number of classes (a handful),
P the mean (first term) and largest (second) series length of a class, G the number of tie
groups; memory O((n + K) d + G log G), the gathers blocked over rows and the direct pairs
over pairs. On 10^6 counting-process rows (d = 10, 2.2e5 events) nearly all rows share one
class with P = 3 to 6.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from coxinfluence.numerics.series import (
    ROUNDING,
    add_direct_pairs,
    prefix_plan,
    segmented_prefix_sums,
)

_CLASS_SPAN = 25            # candidate classes per bin: j_min .. j_min + 24
_SAMPLE = 2048              # rows per bin for the operation count
_BLOCK = 1 << 16            # rows per block of x_i F_i - G_i; pairs per block of direct sums
_GATHER = 1 << 14           # rows per gather block (the gathered (rows, d + 1) stay in cache)
_TINY = 1e-290              # series weights below this are flushed to 0 (no subnormals)
_T_POWER_LOG2 = 800         # relaxed rows: t_i^P_i <= 2^800 (no overflow, see _TINY)
# relative costs per column (measured: ~5 ns, ~8 ns, ~7 ns on 10^6 rows, d = 10)
_COST_SERIES = 5.0          # per row and series term: two gathers, a difference, an FMA
_COST_PAIR = 8.0            # per direct (row, term) pair
_COST_BUILD = 7.0           # per term and series power of a class: scale, sums, transpose


def series_lengths(r):
    """Smallest ``P >= 1`` with ``r^P <= 2^-53``, elementwise for ``0 <= r < 1``."""
    r = np.asarray(r, dtype=np.float64)
    with np.errstate(divide="ignore"):
        P = np.ceil(np.log(ROUNDING) / np.log(r) - 1e-12)
    return np.maximum(1, np.where(r > 0, P, 1)).astype(np.int64)


def range_min(values, lo, hi):
    """``min(values[lo_i:hi_i])`` for nonempty ranges ``lo < hi``, by a sparse table:
    ``T[l, k] = min(values[k:k + 2^l])`` (O(K log K) time and memory), then
    ``min(T[l, lo], T[l, hi - 2^l])`` with ``2^l <= hi - lo < 2^(l+1)`` (O(1) per range)."""
    K = values.size
    if lo.size == 0:
        return np.empty(0)
    level = np.log2(hi - lo).astype(np.int64)       # floor: exact for integers < 2^53
    table = np.empty((int(level.max()) + 1, K))
    table[0] = values
    for lev in range(1, table.shape[0]):
        half = 1 << (lev - 1)
        np.minimum(table[lev - 1, :K - half], table[lev - 1, half:], out=table[lev, :K - half])
    flat = table.ravel()
    return np.minimum(flat[level * K + lo], flat[level * K + hi - (1 << level)])


def part1_entry(data, state, class_offset=None, n_terms=None):
    """Part 1 of the VIF's gradient difference (:mod:`coxinfluence.influence_functions.vif`),
    ``sum_{k in [lo_i, hi_i)} m_k (x_i - a_k) / (den_k - u_i)`` for every sorted row (n, d),
    without the factor ``u_i``, for any risk-set ranges (delayed entry or not): direct sums
    where ``den_k < s_i``, the ``P_i``-term series in ``u_i / den_k`` elsewhere (module
    docstring).

    ``class_offset`` (tests): put every row in class ``j_std,i + class_offset`` instead of
    the cost count's choice. ``n_terms`` (tests): ``P_i = n_terms`` for every row instead of
    the rounding bound (the truncation error is then the geometric tail of the series).
    """
    out = np.zeros((data.n, data.d))
    if data.term_group.size == 0:
        return out
    terms = _RangeTerms(data, state)
    if terms.rows.size == 0:
        return out
    if class_offset is None:
        cls = terms.choose_classes()
    else:
        cls = terms.jstd[terms.rows] + int(class_offset)
    for j in np.unique(cls):            # the classes' rows are disjoint: series rows assigned
        rows = terms.rows[cls == j]
        below = terms.below(j)
        first, cnt = terms.direct_counts(rows, j, below)
        series = cnt < terms.hi[rows] - terms.lo[rows]
        terms.series(rows[series], j, out, n_terms)
        # the direct pairs: positions [first_i, first_i + cnt_i) of ``below`` (disjoint rows)
        start, stop = np.zeros(data.n, dtype=np.int64), np.zeros(data.n, dtype=np.int64)
        start[rows], stop[rows] = first, first + cnt
        add_direct_pairs(SimpleNamespace(lo=start), stop, _BLOCK, terms.pair_values(below), out)
    return out


class _RangeTerms:
    """The Efron terms with each row's range, the covariates centred per stratum, and the
    per-row quantities of the class choice (module docstring)."""

    def __init__(self, data, state):
        self.data = data
        lo, hi = state.risk_sets.deletion_term_ranges
        self.rows = np.flatnonzero(lo < hi)                     # rows with a nonempty range
        self.lo, self.hi = lo, hi
        self.u = state.risk
        self.den, self.m = state.den, state.mean_weight
        t_stratum = data.group_stratum[data.term_group]
        K = t_stratum.size
        starts = np.flatnonzero(np.r_[True, t_stratum[1:] != t_stratum[:-1]])
        lengths = np.diff(np.append(starts, K))
        # suffix sums within strata, as prefix sums over the terms in reverse order
        self.plan = prefix_plan((K - starts - lengths)[::-1], lengths[::-1])
        # centre x and a per stratum at the term mean of the stratum's largest risk set
        by_den = np.lexsort((-self.den, t_stratum))
        big = by_den[np.r_[0, np.flatnonzero(np.diff(t_stratum[by_den])) + 1]]
        self.centre = np.zeros((int(data.strata.max()) + 1, data.d))
        self.centre[t_stratum[big]] = state.term_mean[big]
        self.a = state.term_mean - self.centre[t_stratum]
        # the sum over [lo, hi) is the suffix sum from lo (reversed column K - 1 - lo) less
        # the one from hi (column K - 1 - hi; the zero column K when hi ends the stratum)
        end = np.repeat(starts + lengths, lengths)
        self.lo_col = K - 1 - np.minimum(lo, K - 1)
        self.hi_col = np.where(hi >= end[np.minimum(lo, K - 1)], K, K - 1 - hi)
        self.mr = np.full(data.n, np.inf)
        sm = np.full(data.n, np.inf)
        self.mr[self.rows], sm[self.rows] = self._range_min_den(end)
        self.J0 = int(np.floor(np.log2(self.den.min())))
        with np.errstate(divide="ignore"):
            lu = np.floor(np.log2(self.u[self.rows]))          # -inf where u_i underflowed
        self.jstd = np.full(data.n, self.J0)
        self.jstd[self.rows] = np.maximum(self.J0, lu + 2)
        # class J0 (all terms) is also safe where u_i <= sm_i / 2 (module docstring)
        r = self.rows
        t0 = self.u[r] / 2.0 ** self.J0
        P0 = series_lengths(self.ratio_bound(r, self.J0))
        with np.errstate(divide="ignore"):
            self.relaxed = np.zeros(data.n, dtype=bool)
            self.relaxed[r] = ((self.jstd[r] > self.J0) & (self.u[r] <= 0.5 * sm[r])
                               & (P0 * np.log2(t0) <= _T_POWER_LOG2))
        self.jmin = np.where(self.relaxed, self.J0, self.jstd)

    def candidates(self, row):
        """The classes row ``row`` may use: ``j_std`` and above, and ``J0`` if relaxed."""
        j0 = int(self.jstd[row])
        return ([self.J0] if self.relaxed[row] else []) + list(range(j0, j0 + _CLASS_SPAN))

    def _range_min_den(self, end):
        """``mr_i = min den_k`` over each nonempty range ``[lo_i, hi_i)`` and ``sm_i`` over
        ``[lo_i, end of the stratum)`` (``end``: per term, one past its stratum's last);
        ranges are whole tie groups, so the sparse table is over the groups' smallest terms."""
        tg = self.data.term_group
        new_group = np.r_[True, tg[1:] != tg[:-1]]
        g_min = np.minimum.reduceat(self.den, np.flatnonzero(new_group))
        g_of_term = np.cumsum(new_group) - 1                 # index into g_min
        r = self.rows
        glo = g_of_term[self.lo[r]]
        both = range_min(g_min, np.r_[glo, glo], np.r_[g_of_term[self.hi[r] - 1] + 1,
                                                        g_of_term[end[self.lo[r]] - 1] + 1])
        return both[:r.size], both[r.size:]

    def x_centred(self, rows):
        xs = np.take(self.data.X, rows, axis=0)
        xs -= np.take(self.centre, np.take(self.data.strata, rows), axis=0)
        return xs

    def ratio_bound(self, rows, j):
        """``r_i = u_i / max(2^j, mr_i)``: the largest ``u_i / den_k`` of a series term."""
        return self.u[rows] / np.maximum(2.0 ** j, self.mr[rows])

    def below(self, j):
        """The terms with ``den_k < 2^j``, in term order (the direct terms of class j)."""
        return np.flatnonzero(self.den < 2.0 ** j)

    def direct_counts(self, rows, j, below=None):
        """Per row: the first position in ``below(j)`` of its range's terms there and their
        number (the row's direct terms in class j)."""
        b = self.below(j) if below is None else below
        first = np.searchsorted(b, self.lo[rows])
        return first, np.searchsorted(b, self.hi[rows]) - first

    def choose_classes(self):
        """The class ``j`` of every row of ``self.rows`` (module docstring, "Classes"): per
        bin of rows with the same candidate classes and series length at the lowest one,
        largest bin first, the candidate with the smallest operation count on a sample of
        the bin's rows."""
        rows = self.rows
        jstd, jmin = self.jstd[rows], self.jmin[rows]
        P0 = series_lengths(self.ratio_bound(rows, jmin))
        key = ((jstd - jstd.min()) * 2 + self.relaxed[rows]) * 64 + P0   # P0 <= 53
        full = np.bincount(key)
        keys = np.flatnonzero(full)
        counts = full[keys]
        lookup = np.zeros(full.size, dtype=np.int16 if keys.size < 2**15 else np.int64)
        lookup[keys] = np.arange(keys.size)
        inverse = lookup[key]
        by_bin = np.argsort(inverse, kind="stable")           # radix sort of small keys
        samples, bins = [], []                        # bins: (candidates, sample slice, weight)
        n0 = 0
        for c0, c in zip(np.r_[0, np.cumsum(counts)[:-1]], counts):
            members = rows[by_bin[c0:c0 + c]]
            samples.append(members[::max(1, c // _SAMPLE)])
            bins.append((np.array(self.candidates(members[0])),
                         slice(n0, n0 + samples[-1].size), c / samples[-1].size))
            n0 += samples[-1].size
        sample = np.concatenate(samples)
        js = np.unique(np.concatenate([cands for cands, _, _ in bins]))
        pairs = self._pair_counts(sample, js)                 # (len(js), n_sample)
        built = np.zeros(js.size, dtype=np.int64)   # per class: powers its suffix sums need
        choice = np.empty(len(bins), dtype=np.int64)
        d1, K = self.data.d + 1, self.den.size
        for b in np.argsort(-counts, kind="stable"):
            cands, sl, weight = bins[b]
            at = np.searchsorted(js, cands)
            smp = sample[sl]
            cnt = pairs[at, sl]
            ratio = self.u[smp] / np.maximum(2.0 ** cands[:, None], self.mr[smp])
            P = np.where(cnt < self.hi[smp] - self.lo[smp], series_lengths(ratio), 0)
            Pmax = P.max(axis=1)
            cost = (weight * d1 * (_COST_SERIES * P.sum(axis=1) + _COST_PAIR * cnt.sum(axis=1))
                    + _COST_BUILD * d1 * K * np.maximum(0, Pmax - built[at]))
            best = int(np.argmin(cost))
            choice[b] = cands[best]
            built[at[best]] = max(built[at[best]], Pmax[best])
        return choice[inverse]

    def _pair_counts(self, rows, js):
        """The direct-term counts of ``rows`` in each class of ``js`` (len(js), rows.size)."""
        out = np.zeros((js.size, rows.size), dtype=np.int64)
        top = self.den.max()
        for q, j in enumerate(js):
            if 2.0 ** j > top:                       # every term is direct
                out[q] = self.hi[rows] - self.lo[rows]
            elif np.any(self.mr[rows] < 2.0 ** j):
                out[q] = self.direct_counts(rows, j)[1]
        return out

    def pair_values(self, below):
        """``pair_values(rows, pos)``: ``m_k (x_i - a_k) / (den_k - u_i)`` of the pairs (row
        i, term ``k = below[pos]``), for
        :func:`~coxinfluence.numerics.series.add_direct_pairs`."""
        def values(rows, pos):
            k = below[pos]
            wk = self.m[k] / (self.den[k] - self.u[rows])
            return wk[:, None] * (self.x_centred(rows) - self.a[k])
        return values

    def series(self, rows, j, out, n_terms=None):
        """``out[i] = x_i F_i - G_i`` with ``(F_i, G_i) = sum_{p < P_i} t_i^p [Q_p(lo_i) -
        Q_p(hi_i)]`` for the rows of class j (module docstring), the rows needing more
        powers first, gathered in blocks of rows."""
        if rows.size == 0:
            return
        s = 2.0 ** j
        P = series_lengths(self.ratio_bound(rows, j)) if n_terms is None \
            else np.full(rows.size, int(n_terms))
        order = np.argsort(-P, kind="stable")
        rows, P = rows[order], P[order]
        n_active = np.searchsorted(-P, -np.arange(int(P.max())), side="right")
        t = self.u[rows] / s
        tp = np.ones(rows.size)
        acc = np.zeros((rows.size, self.data.d + 1))
        at_lo, at_hi = self.lo_col[rows], self.hi_col[rows]
        B = min(_GATHER, rows.size)
        g_lo, g_hi = np.empty((B, acc.shape[1])), np.empty((B, acc.shape[1]))
        for p, Q in enumerate(self.suffix_sums(s, int(P.max()))):
            na = int(n_active[p])
            if p:
                tp[:na] *= t[:na]
            for b0 in range(0, na, B):
                b1 = min(b0 + B, na)
                gl, gh = g_lo[:b1 - b0], g_hi[:b1 - b0]
                np.take(Q, at_lo[b0:b1], axis=0, out=gl)
                np.take(Q, at_hi[b0:b1], axis=0, out=gh)
                gl -= gh
                if p:
                    gl *= tp[b0:b1, None]
                acc[b0:b1] += gl
        for b0 in range(0, rows.size, _BLOCK):
            r = rows[b0:b0 + _BLOCK]
            xs = self.x_centred(r)
            xs *= acc[b0:b0 + _BLOCK, :1]
            xs -= acc[b0:b0 + _BLOCK, 1:]
            out[r] = xs

    def suffix_sums(self, s, n_powers):
        """For p = 0..n_powers-1 the suffix sums ``Q_p`` of the class with threshold ``s``
        (module docstring) of ``m (s/den)^p (1, a) / den`` over the terms with
        ``den >= s``, within strata: a (K + 1, d + 1) array, term-major (a gather reads one
        contiguous (d + 1)-vector), row ``K - 1 - k`` holding ``Q_p(k)`` and row K zero.
        The buffer is reused: each array is valid until the next one is produced."""
        d, K = self.data.d, self.den.size
        inside = self.den >= s
        # in reversed term order, suffix sums are prefix sums
        ratio = np.where(inside, s / self.den, 0.0)[::-1]
        wp = np.where(inside, self.m / self.den, 0.0)[::-1].copy()
        a_rev = np.ascontiguousarray(self.a[::-1].T)
        V = np.zeros((d + 1, K + 1))
        S = np.empty_like(V)
        Q = np.empty((K + 1, d + 1))
        for p in range(n_powers):
            if p:
                wp *= ratio
                wp[wp < _TINY] = 0.0                 # no subnormal arithmetic (docstring)
            V[0, :K] = wp
            np.multiply(wp, a_rev, out=V[1:, :K])
            Q[:] = segmented_prefix_sums(V, self.plan, out=S).T
            yield Q

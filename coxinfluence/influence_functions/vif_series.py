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

from coxinfluence.numerics.series import (
    GATHER_BLOCK,
    add_direct_pairs,
    choose_split,
    gather_series,
    index_dtype,
    prefix_plan,
    prefix_sums_of_columns,
    series_length,
)
from coxinfluence.numerics.threads import for_row_blocks

_STRATUM_KEY = 1500.0        # |log den| < 745 for any positive double: strata keys never mix


def _reversed_ranks(data):
    """Permutation of the Efron terms that lists each tie group's terms in reverse rank
    order, making ``den`` non-decreasing along each stratum's terms (module docstring)."""
    tg = data.term_group
    first = np.searchsorted(tg, tg, side="left")
    last = np.searchsorted(tg, tg, side="right")
    return index_dtype(first + last - 1 - np.arange(tg.size))


def part1_series(data, state, rho=None, n_terms=None):
    """Part 1 of the VIF's gradient difference (module docstring),
    ``sum_{k in [lo_i, hi_i)} m_k (x_i - a_k) / (den_k - u_i)`` for every sorted row
    (n, d), *without* the factor ``u_i``: direct sums where ``u_i / den_k > rho``, the
    P-term series in ``u_i / den_k`` elsewhere.

    ``rho`` defaults to the cheapest of ``2^-2, 2^-4, 2^-6, 2^-8, 2^-11, 2^-14, 2^-18`` by
    an operation count (``RHO_CANDIDATES``); ``n_terms`` (P) to the smallest P with
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
    rho, kstar = choose_split(terms, rho, series_length)
    P = series_length(rho) if n_terms is None else int(n_terms)
    add_direct_pairs(terms, kstar, 1 << 16, terms.pair_values, out)
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
        self.t_stratum = t_stratum = index_dtype(data.group_stratum[data.term_group])
        K = t_stratum.size
        self.new_s = np.r_[True, t_stratum[1:] != t_stratum[:-1]]
        self.s_first = np.flatnonzero(self.new_s)
        self.s_last = np.append(self.s_first[1:], K) - 1
        # centre x and a per stratum at the mean of the stratum's largest risk set
        self.centre = np.zeros((int(data.strata.max()) + 1, data.d))
        self.centre[t_stratum[self.s_last]] = state.term_means_of(perm[self.s_last])
        # monotone search key: stratum blocks, then log den (made exactly non-decreasing)
        self.key = np.maximum.accumulate(t_stratum * _STRATUM_KEY + np.log(self.den))

    def x_centred(self, rows):
        if self.centre.shape[0] == 1:                   # one stratum: no gather of centres
            return self.data.X[rows] - self.centre[0]
        return self.data.X[rows] - self.centre[self.data.strata[rows]]

    def term_means(self, k):
        """``a_k`` of the terms ``k`` (this order), centred per stratum, (len(k), d)."""
        a = self.state.term_means_of(self.perm[k])     # no (K, d) array at 10^7 rows
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
        its ratio and ``F`` are kept (memory: ``out``, the suffix sums at the positions
        the rows gather, ``compact=True``: at 10^7 rows with ties about a tenth of the
        (K + 1, d + 1) array, and three (n,) vectors)."""
        n = self.data.n
        F = np.zeros(n)

        def consume(rows, g):
            F[rows] += g[:, 0]
            out[rows] -= g[:, 1:]
        gather_series(self, kstar, P, lambda seg: _cox_sums_by_power(seg, self, P), consume,
                      self.data.d + 1, compact=True)

        def add_x_f(w, a, b):
            out[a:b] += self.x_centred(slice(a, b)) * F[a:b, None]
        for_row_blocks(add_x_f, n, GATHER_BLOCK)
        return out


def _cox_sums_by_power(seg, terms, P):
    """For p = 0..P-1: the suffix sums over terms (as prefix sums in reversed term order,
    row K - 1 - k; a zero sentinel row K) of ``[m/den, m a/den]`` scaled by ``(s/den)^p``
    (s: the segment's smallest den, all factors <= 1) on the segments ``seg``
    (:class:`~coxinfluence.numerics.series.Segments`), (K + 1, d + 1), so that a row's
    gather reads one contiguous line (about 4x faster than d + 1 strided gathers); with
    ``seg.kept`` (:func:`~coxinfluence.numerics.series.gather_series`'s ``compact``) only
    the rows at its positions. The summands are made by blocks of terms as they are summed
    (:func:`~coxinfluence.numerics.series.prefix_sums_of_columns`; the term means too,
    :meth:`~coxinfluence.likelihood.terms.RiskSetState.term_means_of`), and one array is
    reused for every p: a yielded array is overwritten by the next."""
    K, d = terms.den.size, terms.data.d
    plan = prefix_plan((K - seg.start - seg.length)[::-1], seg.length[::-1])
    kept = seg.kept                         # only the rows the gathers read (or None)
    sums = np.empty((K + 1 if kept is None else kept.size, d + 1))
    for p in range(P):
        def columns(j, p=p):                  # column j holds term K - 1 - j
            k = K - 1 - j
            out = np.empty((d + 1, k.size))
            w = np.divide(terms.m[k], terms.den[k], out=out[0])
            if p:
                w *= (seg.scale[seg.of[k]] / terms.den[k]) ** p
            np.multiply(terms.term_means(k).T, w, out=out[1:])
            return out
        yield prefix_sums_of_columns(columns, plan, sums, kept=kept)

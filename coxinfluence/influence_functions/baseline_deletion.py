"""The Cox baseline hazard without each unit, at fixed ``theta_hat``, in a few passes.

The survival targets' data effect (:mod:`coxinfluence.families.cox_targets`) is the
change of the Breslow / Efron baseline cumulative hazard when a unit is deleted and the
coefficients kept at ``theta_hat``:

    Lambda_0(t; D) = sum_{terms k: t_k <= t} m_k / den_k,    den_k = S0 - c_k S0D

(:mod:`coxinfluence.likelihood.baseline_hazard`; ``c_k`` the baseline's tie fractions,
``ctype``). Deleting row i (``u_i = w_i exp(eta_i)`` on the shifted scale) changes it in
two places, exactly as the VIF's gradient (:mod:`coxinfluence.influence_functions.vif`):

1. every term whose risk set holds i other than as an event of its own tie group (the
   range ``[lo_i, hi_i)`` of ``RiskSets.deletion_term_ranges``) loses ``u_i`` from its
   denominator:

       sum_{k in [lo_i, hi_i), t_k <= t} m_k [1/(den_k - u_i) - 1/den_k]
         = u_i sum_{k in [lo_i, hi_i), t_k <= t} m_k / (den_k (den_k - u_i));

2. when i is an event of tie group g (at ``t_g <= t``), the group loses it: its ``d_g``
   terms ``m_g / (S0 - c_r S0D)`` become the ``d_g - 1`` terms

       m'_g / (S0 - u_i - c'_r (S0D - u_i)),  m'_g = (W_g - w_i)/(d_g - 1),
       c'_r = r/(d_g - 1) (``ctype`` 2) or 0 (``ctype`` 1),

   summed directly (O(sum_g d_g^2) in all).

Part 1 is the VIF's part 1 with ``1`` in place of ``x_i - a_k``, an extra ``1/den_k``,
and one column per time (the term's weight masked by ``t_k <= t``); it goes through the
same engine (:mod:`coxinfluence.numerics.series`): direct pairs where ``u_i / den_k >
rho``, the power series ``sum_{p>=0} u_i^p sum_k m_k / den_k^{p+2}`` of suffix sums over
terms elsewhere, exact to rounding (all summands positive: the truncation is below
``2^-53`` of the sum). With delayed entry (``den`` not monotone along the terms) every
pair is summed directly (O(sum_i (hi_i - lo_i) T)).

A unit none of whose risk sets holds two of its rows (rows; a subject's intervals)
changes each term by one row, so its change is the sum of its rows', exactly; a unit
with two rows in one risk set (a cluster, ``Units.shares_risk_sets``) is left to the
caller (``done`` False), which deletes its rows.

Cost: O((n + K) P T + N_direct T + sum_g d_g^2) for all units together, against
O(U (n + K S T)) by deleting each unit (the general risk-set kernel).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.influence_functions.vif_series import (
    _STRATUM_KEY,
    _reversed_ranks,
    _SortedTerms,
)
from coxinfluence.likelihood.baseline_hazard import baseline_ctype, baseline_terms
from coxinfluence.numerics.series import (
    add_direct_pairs,
    choose_split,
    gather_series,
    prefix_plan,
    prefix_sums_of_columns,
    series_length,
)

__all__ = ["baseline_change_of_units"]


class _BaselineTerms:
    """The baseline's terms for the series engine: each tie group's terms in reverse rank
    order (``den`` non-decreasing along a stratum), the rows' ``u`` and ranges, the
    monotone search key, and each term's time mask (K, T)."""

    split = _SortedTerms.split            # the first term of a row's range with u/den <= r

    def __init__(self, data, ranges, u, den, m, mask):
        self.data = data
        self.lo, self.hi = ranges
        self.u = u
        self.perm = perm = _reversed_ranks(data)
        self.den, self.m, self.mask = den[perm], m[perm], mask[perm]
        t_stratum = data.group_stratum[data.term_group]
        K = t_stratum.size
        self.new_s = np.r_[True, t_stratum[1:] != t_stratum[:-1]]
        self.s_first = np.flatnonzero(self.new_s)
        self.s_last = np.append(self.s_first[1:], K) - 1
        self.key = np.maximum.accumulate(t_stratum * _STRATUM_KEY + np.log(self.den))

    def pair_values(self, rows, k):
        """``m_k / (den_k (den_k - u_i))`` masked by ``t_k <= t`` (pairs, T)."""
        w = self.m[k] / (self.den[k] * (self.den[k] - self.u[rows]))
        return w[:, None] * self.mask[k]

    def sums_by_power(self, seg, P):
        """For p = 0..P-1 the suffix sums over terms (rows ``K - 1 - k``, sentinel row K)
        of ``m_k (s/den_k)^p / den_k^2`` masked by time, (K + 1, T)
        (:func:`coxinfluence.numerics.series.gather_series`)."""
        K, T = self.den.size, self.mask.shape[1]
        plan = prefix_plan((K - seg.start - seg.length)[::-1], seg.length[::-1])
        sums = np.empty((K + 1, T))
        for p in range(P):
            def columns(j, p=p):
                k = K - 1 - j
                w = self.m[k] / self.den[k] / self.den[k]
                if p:
                    w = w * (seg.scale[seg.of[k]] / self.den[k]) ** p
                return (self.mask[k] * w[:, None]).T
            yield prefix_sums_of_columns(columns, plan, sums)


def _part1(data, ranges, u, den, m, mask):
    """Part 1 (module docstring) of every sorted row, (n, T), *without* the factor u_i."""
    out = np.zeros((data.n, mask.shape[1]))
    if den.size == 0:
        return out
    terms = _BaselineTerms(data, ranges, u, den, m, mask)
    if data.entry is not None:                 # den not monotone: every pair directly
        return add_direct_pairs(terms, terms.hi, 1 << 16, terms.pair_values, out)
    rho, kstar = choose_split(terms, None, series_length)
    P = series_length(rho)
    add_direct_pairs(terms, kstar, 1 << 16, terms.pair_values, out)

    def consume(rows, g):
        out[rows] += g
    gather_series(terms, kstar, P, lambda seg: terms.sums_by_power(seg, P), consume,
                  mask.shape[1])
    return out


def _own_group(data, u, den, m, ctype, pair_block=1 << 20):
    """Part 2 (module docstring): for each Efron term k (its event row), the change of its
    tie group's share of ``Lambda_0`` when that row is deleted, (K,)."""
    K = den.size
    tg = data.term_group
    d = data.group_n_events[tg].astype(np.int64)                   # (K,) d_g
    first = np.searchsorted(tg, tg, side="left")                   # each group's r = 0 term
    S0 = den[first]                                                # c_0 = 0
    ue = u[data.event_rows]
    W = data.weights[data.event_rows]
    S0D = np.bincount(tg, weights=ue, minlength=data.n_groups)[tg]
    Wg = np.bincount(tg, weights=W, minlength=data.n_groups)[tg]
    share = np.bincount(tg, weights=m / den, minlength=data.n_groups)[tg]  # sum_r m/den_r
    after = np.zeros(K)
    one = d == 1
    if ctype == 1:                      # d' equal terms (W' / d') / (S0 - u)
        with np.errstate(invalid="ignore", divide="ignore"):   # d_g = 1: no term left
            after = np.where(one, 0.0, (Wg - W) / (S0 - ue))
    else:
        dp = d - 1                      # the pairs (term k, rank r < d_k - 1), in blocks
        terms = np.flatnonzero(~one)
        step = max(1, pair_block // max(int(dp.max(initial=1)), 1))
        for b0 in range(0, terms.size, step):
            kk = terms[b0:b0 + step]
            c = dp[kk]
            start = np.cumsum(c) - c
            k = np.repeat(kk, c)
            rank = np.arange(k.size) - np.repeat(start, c)
            vals = ((Wg[k] - W[k]) / dp[k]) / (S0[k] - ue[k] - (rank / dp[k]) * (S0D[k] - ue[k]))
            after[kk] = np.add.reduceat(vals, start)
    return after - share


def baseline_change_of_units(fit, times, units, ctype=None):
    """The change of each stratum's baseline cumulative hazard at ``times`` when each unit
    is deleted, at ``fit.coef`` (module docstring).

    Parameters
    ----------
    fit : CoxFit
        The fitted model.
    times : array_like, shape (T,)
        Times.
    units : Units
        The units of deletion (:class:`coxinfluence.data.units.Units`).
    ctype : {None, 1, 2}, optional
        The baseline (:func:`coxinfluence.likelihood.baseline_hazard.baseline_ctype`).

    Returns
    -------
    delta : numpy.ndarray, shape (U, S, T)
        ``Lambda_0(t; D_{-g}) - Lambda_0(t; D)`` per unit and stratum, on the shifted
        scale of :func:`~coxinfluence.likelihood.baseline_hazard.hazard_increments`
        (zero for units not ``done``).
    done : numpy.ndarray of bool, shape (U,)
        The units computed here: those with at most one row in any risk set.
    """
    data = fit.data
    rs = fit.risk_sets
    c = baseline_ctype(fit, ctype)
    terms = baseline_terms(fit, None, c)
    _, r, _, den = rs.risk(np.asarray(fit.coef, dtype=np.float64)[None, :], terms)
    u, den = r[0], den[0]
    m = np.broadcast_to(terms.mean_weight, den.shape).astype(np.float64)
    t = np.atleast_1d(np.asarray(times, dtype=np.float64))
    t_terms = data.time[data.event_rows]
    mask = (t_terms[:, None] <= t[None, :]).astype(np.float64)            # (K, T)
    D = _part1(data, rs.deletion_term_ranges, u, den, m, mask)
    D *= u[:, None]
    if den.size:
        D[data.event_rows] += _own_group(data, u, den, m, c)[:, None] * mask
    n_strata = int(data.strata.max()) + 1
    U = units.n_units
    done = ~np.asarray(units.shares_risk_sets, dtype=bool)
    keep = done[units.of_row]
    cell = units.of_row[keep] * n_strata + data.strata[keep]
    delta = np.zeros((U * n_strata, t.size))
    np.add.at(delta, cell, D[keep])
    return delta.reshape(U, n_strata, t.size), done

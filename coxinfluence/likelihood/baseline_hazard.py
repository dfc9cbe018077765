"""The Breslow / Efron baseline hazard of a fitted Cox model and its pieces per Efron term
(the survival targets' formula, :mod:`coxinfluence.families.cox_targets`):

    Lambda_0(t; theta, D) = sum_{terms k: t_k <= t} m_k / den_k(theta, D),

with R's ``survfit`` choice of tie fractions (``ctype``): 1, none (Breslow / Nelson-Aalen
type, lifelines' and statsmodels' baseline); 2, Efron's ``r / d_g`` (R's default for
Efron fits). ``fit`` is a ``CoxFit`` (its data, risk sets and ``ctype``).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.likelihood.terms import Terms


def baseline_ctype(fit, ctype=None):
    """The baseline hazard of survival targets (module docstring): ``ctype`` when given,
    else the fit's own (``CoxFit.ctype``), else R's default for the fit's ties (2 for
    Efron, 1 for Breslow)."""
    c = fit.ctype if ctype is None else ctype
    if c is None:
        c = 2 if fit.data.ties == "efron" else 1
    if c not in (1, 2):
        raise ValueError(f"ctype must be 1 (Breslow / Nelson-Aalen type) or 2 (Efron's tie "
                         f"correction), as R's survfit; got {c!r}")
    return int(c)


def baseline_terms(fit, deleted, ctype):
    """The fit's Efron terms (rows of ``deleted`` removed) with the tie fractions of the
    baseline ``ctype``: none for 1, Efron's ``r / d_g`` (``d_g`` the group's events left)
    for 2, whatever the fit's ties."""
    data = fit.data
    terms = fit.risk_sets.terms(deleted)
    if (ctype == 2) == (data.ties == "efron"):
        return terms                       # the fit's own fractions are the baseline's
    if ctype == 1:
        return Terms(terms.weights, np.zeros_like(terms.frac), terms.mean_weight)
    tg, rank = data.term_group, data.term_rank
    if deleted is None:
        return Terms(terms.weights, rank / data.group_n_events[tg], terms.mean_weight)
    P = deleted.presence
    B, G = P.shape[0], data.n_groups
    flat = (np.arange(B)[:, None] * G + tg[None, :]).ravel()
    d_term = np.bincount(flat, weights=P[:, data.event_rows].ravel(),
                         minlength=B * G).reshape(B, G)[:, tg]
    frac = np.where(rank[None, :] < d_term, rank[None, :] / np.maximum(d_term, 1.0), 0.0)
    return Terms(terms.weights, frac, terms.mean_weight)


def hazard_increments(fit, theta, deleted=None, ctype=None):
    """Per-term baseline hazard increments ``m_k / den_k`` on the shifted scale, the shift,
    and (``deleted`` None only) the term means ``a_k``, for the baseline ``ctype``
    (:func:`baseline_ctype`). theta (B, d); ``deleted`` a
    :class:`~coxinfluence.data.deletion.Deletion` of sorted rows or None."""
    rs = fit.risk_sets
    theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    terms = baseline_terms(fit, deleted, baseline_ctype(fit, ctype))
    _, r, shift, den = rs.risk(theta, terms)
    m = np.broadcast_to(terms.mean_weight, den.shape)
    inc = m / den
    # the data's covariates are centred: on the caller's scale eta (hence the shift) is
    # larger by theta' X_center, and the term means by X_center
    centre = fit.data.X_center
    a = rs.term_means(r, den, terms.frac) + centre if deleted is None else None
    return inc, shift + (theta @ centre)[:, None], a


class TermPrefixSums:
    """Per-term values ``values`` (..., K) summed over the event terms of a stratum up to a
    time: :meth:`at` ``(strata, times)`` gives ``sum_k values[..., k]`` over the terms k
    of each point's stratum with ``t_k <= t``.

    Prefix sums over the terms sorted by stratum and time, each stratum's starting from a
    zero of its own, read by ``searchsorted`` on integer keys (stratum, rank of the time):
    O(K) to build, O(log K) a point, with no (points x terms) array. The baseline hazard
    from its increments (:func:`cumulative_sums`) and the terms whose risk set holds a row
    (``at(s_i, stop_i) - at(s_i, start_i)``) read it. ``data``: a ``CoxData``."""

    def __init__(self, data, values):
        ev = data.event_rows
        t_k, s_k = data.time[ev], data.strata[ev]
        order = np.lexsort((t_k, s_k))
        t_k, s_k = t_k[order], s_k[order].astype(np.int64)
        values = np.asarray(values, dtype=np.float64)
        self.times = np.unique(t_k)
        self.span = self.times.size + 1
        self.keys = s_k * self.span + np.searchsorted(self.times, t_k, side="right")
        n_strata = int(data.strata.max()) + 1
        first = np.searchsorted(s_k, np.arange(n_strata + 1), side="left")
        # stratum s: a zero at first[s] + s, then the running sums of its terms
        sums = np.zeros(values.shape[:-1] + (ev.size + n_strata,))
        sums[..., np.arange(ev.size) + s_k + 1] = values[..., order]
        for s in range(n_strata):
            segment = sums[..., first[s] + s:first[s + 1] + s + 1]
            np.cumsum(segment, axis=-1, out=segment)
        self.sums = sums

    def at(self, strata, times):
        """``(..., m)``: the sums at the points ``(strata[j], times[j])`` (m,)."""
        strata = np.asarray(strata, dtype=np.int64)
        rank = np.searchsorted(self.times, np.asarray(times, dtype=np.float64), side="right")
        up_to = np.searchsorted(self.keys, strata * self.span + rank, side="right")
        return self.sums[..., up_to + strata]


def cumulative_sums(fit, values, times):
    """``(..., S, T)``: per stratum s and time t, the sum of ``values[..., k]`` over the
    event terms k of stratum s with ``t_k <= t`` (``values`` (..., K), one entry per
    term): ``Lambda_0`` from its increments, by :class:`TermPrefixSums`, O((K + T) S) per
    leading entry. (A dense (S, T, K) mask of the terms that enter each time, as before,
    asks for 12.8 GiB at 10^6 subjects of a cause-specific fit predicted over every event
    time.)"""
    times = np.asarray(times, dtype=np.float64)
    n_strata = int(fit.data.strata.max()) + 1
    strata = np.repeat(np.arange(n_strata), times.size)
    sums = TermPrefixSums(fit.data, values).at(strata, np.tile(times, n_strata))
    return sums.reshape(sums.shape[:-1] + (n_strata, times.size))

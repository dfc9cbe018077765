"""The closed-form Versatile Influence Function (VIF) for Cox regression.

Paper, Definition "Versatile Influence Function" and appendix "The Proposed VIF":

    VIF_n(i) = -(H/n)^{-1} ( grad L(theta_hat; all rows) - grad L(theta_hat; row i deleted) ).

Deleting row i (deletion, not a zero weight, which differs for Efron: docs/conventions.md) changes
the gradient in two places. Write ``u_i = w_i exp(eta_i)`` and, per Efron term k,
``den_k = S0 - c_k S0D``, ``a_k = (S1 - c_k S1D)/den_k``, ``m_k`` the mean event weight.

1. Every term whose risk set holds i but whose tie group does not have i as an event
   loses ``u_i`` from its denominator and ``u_i x_i`` from its numerator, so

       a_k - a_k^{(-i)} = u_i (x_i - a_k) / (den_k - u_i)

   and the gradient difference gathers ``u_i sum_k m_k (x_i - a_k) / (den_k - u_i)``
   (the paper's ``sum_{j: Y_j < Y_i}`` term, generalised to ties, strata and weights).
2. When i is an event of tie group g, that group loses an event: its ``-w_i x_i`` term,
   one Efron term, and its fractions and mean weight change:

       own_i = -w_i x_i + m_g sum_{r<d_g} a_{g,r} - m'_g sum_{r<d_g-1} a'_{g,r},
       m'_g = (W_g - w_i)/(d_g - 1),   c'_r = r/(d_g - 1),
       a'_{g,r} = (S1 - u_i x_i - c'_r (S1D - u_i x_i)) / (S0 - u_i - c'_r (S0D - u_i)).

Without ties and weights, 1 + 2 is the paper's appendix formula; its definition (by
literal deletion) is checked in the tests to 1e-9 relative for both tie methods.

Part 1: ``part1_direct_sum`` sums every (row, term) pair, O(n K d) (the reference);
:mod:`~coxinfluence.influence_functions.vif_series` (a direct block plus a geometric
series of suffix sums, O((n + K) P d)) and, with delayed entry (risk sets no longer
monotone along the terms), :mod:`~coxinfluence.influence_functions.vif_entry` compute
the same sums exact to rounding. Part 2: ``_own_group_change_fast``, O(K d) (the pairwise
reference is ``tests/oracles.py``'s ``own_group_change``).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.deleted_hessians import _METHODS, by_deletion
from coxinfluence.influence_functions.vif_entry import part1_entry
from coxinfluence.influence_functions.vif_series import part1_series
from coxinfluence.likelihood.efron import efron_fraction_sum
from coxinfluence.numerics.threads import for_row_blocks


def _group_sums(data, state):
    """Per tie group: risk-set sums ``S0``, ``S1``, event sums ``S0D``, ``S1D`` (shifted
    scale) and the group's gradient term ``m_g sum_r a_{g,r}``."""
    u, ev = state.risk, data.event_rows
    G = data.n_groups
    rs = state.risk_sets
    first_term = rs.group_first_term[:G]
    has = data.group_n_events > 0
    S0 = np.zeros(G)
    S1 = np.zeros((G, data.d))
    S0[has] = state.den[first_term[has]]               # the r = 0 term has c = 0
    S1[has] = state.term_means_of(first_term[has]) * S0[has, None]
    S0D = rs.group_event_sums(u[ev][None, :])[0]
    S1D = rs._group_sums_rx(u)[1]                       # no (events, d) temporary
    m = data.group_event_weight / np.maximum(data.group_n_events, 1)
    # the terms' means by blocks of tie groups: no (K, d) array at 10^7 rows
    full = m[:, None] * rs.group_term_sums(
        lambda k0, k1: state.term_means_of(slice(k0, k1)), data.d)
    return S0, S1, S0D, S1D, full


def _own_group_change_fast(data, state, out=None):
    """Part 2 (module docstring) for every event row in O(K d): same value as
    ``tests/oracles.py``'s ``own_group_change`` (which expands all (event, remaining rank)
    pairs, O(sum_g d_g^2 d)).

    With ``A = S1 - u_i x_i``, ``C = S0 - u_i`` (the risk set without i), ``B = S1D - u_i x_i``,
    ``D = S0D - u_i`` (the other events of the group), ``N = d_g - 1``, ``a0 = A / C``:

        sum_{r<N} (A - (r/N) B) / (C - (r/N) D) = N a0 + (D a0 - B) f(N, D/C) / C,

    since each term is ``a0 + c (D a0 - B) / (C - c D)``; ``f`` is
    :func:`coxinfluence.likelihood.efron.efron_fraction_sum`. Breslow (all ``c = 0``)
    is ``N a0``.
    ``out``: an (n, d) array (sorted rows) to add part 2 into (default zeros); the events
    are done 2^16 at a time, so the temporaries stay small at 10^7 rows (blocks on
    threads from 2^20 events: :mod:`coxinfluence.numerics.threads`).
    """
    X, w = data.X, data.weights
    out = np.zeros_like(X) if out is None else out
    ev = data.event_rows
    if ev.size == 0:
        return out
    u = state.risk
    S0, S1, S0D, S1D, full = _group_sums(data, state)
    # remaining = alpha A - beta B with alpha = (N + D f / C) / C, beta = f / C (zero for
    # Breslow and for N = 0), so that, with m' the new mean event weight,
    #   out_i = full_g - m' alpha S1_g + m' beta S1D_g + (m' (alpha - beta) u_i - w_i) x_i:
    # three (events, d) terms instead of forming A, B and a0.
    def events(w_, b0, b1):                      # events [b0, b1): disjoint rows of out
        e = ev[b0:b1]
        g = data.term_group[b0:b1]               # group of each event row (event_rows order)
        N = data.group_n_events[g] - 1
        ui = u[e]
        C = np.where(N > 0, S0[g] - ui, 1.0)     # the risk set without i (any value if N = 0)
        beta = np.zeros(e.size)
        alpha = N / C
        if data.ties == "efron":
            live = np.flatnonzero(N > 0)
            D = S0D[g[live]] - ui[live]
            beta[live] = efron_fraction_sum(N[live], np.clip(D / C[live], 0.0, 1.0)) / C[live]
            alpha[live] += D * beta[live] / C[live]
        m_new = (data.group_event_weight[g] - w[e]) / np.maximum(N, 1)
        part = full[g]
        part -= (m_new * alpha)[:, None] * S1[g]
        if data.ties == "efron":
            part += (m_new * beta)[:, None] * S1D[g]
        part += (m_new * (alpha - beta) * ui - w[e])[:, None] * X[e]
        out[e] += part
    for_row_blocks(events, ev.size, 1 << 16)
    return out


def _vif_delta_direct(data, state, rows=None):
    """``grad L(all) - grad L(-i)`` for every sorted row (or the sorted rows ``rows``,
    (len(rows), d)): part 1 by direct summation (:func:`part1_direct_sum`), part 2 by
    the O(K d) ``_own_group_change_fast``."""
    delta = _own_group_change_fast(data, state)
    if rows is not None:
        delta = delta[np.asarray(rows)]
    return part1_direct_sum(data, state, rows, out=delta)


def part1_direct_sum(data, state, rows=None, out=None):
    """Part 1 of the gradient difference, ``u_i sum_{k in [lo_i, hi_i)} m_k (x_i - a_k) /
    (den_k - u_i)``, by summing every (row, term) pair: O(n K d) time, memory bounded by
    blocks of rows; every sorted row or only ``rows`` (sorted-row indices), in
    O(len(rows) K d). Added into ``out`` when given. The reference of the series (tests)
    and the checks of large data on a subsample (``paper_appendix/bench_subjects.py``)."""
    X = data.X
    K = data.term_group.size
    lo, hi = state.risk_sets.deletion_term_ranges
    u = state.risk
    m, den, a = state.mean_weight, state.den, state.term_mean
    block_rows = max(1, int(2e7 // max(K, 1)))             # 2e7 floats per block
    rows = np.arange(data.n) if rows is None else np.asarray(rows)
    delta = np.zeros((rows.size, data.d)) if out is None else out
    k = np.arange(K)
    for start in range(0, rows.size, block_rows):
        block = slice(start, start + block_rows)
        r = rows[block]
        inside = (k[None, :] >= lo[r, None]) & (k[None, :] < hi[r, None])
        with np.errstate(divide="ignore", invalid="ignore"):   # outside the range only
            wk = np.where(inside, m[None, :] / (den[None, :] - u[r, None]), 0.0)
        delta[block] += u[r, None] * (X[r] * wk.sum(axis=1)[:, None] - wk @ a)
    return delta


def _vif_delta_series(data, state):
    """``grad L(all) - grad L(-i)`` for every sorted row: part 1 by the split direct +
    series sums, exact to rounding (:mod:`~coxinfluence.influence_functions.vif_series`;
    with delayed entry their thresholded form,
    :mod:`~coxinfluence.influence_functions.vif_entry`), part 2 by
    ``_own_group_change_fast`` in O(K d)."""
    delta = (part1_series if data.entry is None else part1_entry)(data, state)
    delta *= state.risk[:, None]
    return _own_group_change_fast(data, state, out=delta)


class InUnitOrder:
    """``n_units`` units as ``CoxFit.paper_scale`` reads them, for its (U, d) array as it
    is: in unit order (the caller's row order for rows), no DataFrame."""

    def __init__(self, n_units):
        self.n_units = n_units

    @staticmethod
    def wrap(values):
        return values


def vif_of_units(fit, method="auto", groups=None, units=None, delta=None, wrap=True):
    """The VIF of every unit of any ``CoxFit`` (``ci.vif``'s closed form, scaled by
    ``fit.paper_scale``); for a penalised fit, the partial-likelihood part only
    (the penalty's part is added by :mod:`coxinfluence.models.penalized_cox`). ``units``:
    already resolved units (:class:`coxinfluence.data.units.Units`) instead of ``groups``;
    ``delta``: their :func:`gradient_differences` when the caller has them (not changed);
    ``wrap=False``: the (U, d) array in unit order (:class:`InUnitOrder`)."""
    units = resolve_units(fit, groups) if units is None else units
    delta = gradient_differences(fit, units, method) if delta is None else delta.copy()
    return fit.paper_scale(delta, units if wrap else InUnitOrder(units.n_units),
                           overwrite=True)


def gradient_differences(fit, units, method="auto"):
    """(U, d) ``grad L - grad L_{-g}`` at ``fit.coef`` of every unit of ``units`` (unit
    order), the loss's (a penalty's part not included): the VIF before its scaling.

    ``method``: "direct" (part 1 by ``part1_direct_sum``, O(n K d)), "series" (the series
    of the module docstring, O((n + K) P d)), "auto" (direct where ``n K <= 2e5``, else
    series). A unit none of whose risk sets holds two of its rows (a subject's intervals
    never overlap) changes each risk-set sum by one row, so its difference is the sum of
    its rows', exactly; a unit with two rows in one risk set (a cluster) is computed by
    deleting its rows (O(n d) per such unit)."""
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
    data, state = fit.data, fit.risk_sets.state(fit.coef)
    if method == "auto":
        method = "direct" if data.n * data.term_group.size <= 200_000 else "series"
    delta = (_vif_delta_direct if method == "direct" else _vif_delta_series)(data, state)
    del state             # large data: its arrays go before the (U, d) copy in unit order
    delta = units.collapse(delta)
    shared = np.flatnonzero(units.shares_risk_sets)
    if shared.size:      # by deleting their rows, the definition (O(n d) per unit)
        g_all = fit.risk_sets.loss_grad_hess(fit.coef[None, :], hess=False)[1][0]
        delta[shared] = g_all - by_deletion(fit, units, shared, batch=64, hess=False)
    return delta

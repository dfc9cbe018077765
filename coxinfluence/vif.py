"""The closed-form Versatile Influence Function (VIF) for Cox regression.

Paper, Definition "Versatile Influence Function" and appendix "The Proposed VIF":

    VIF_n(i) = -(H/n)^{-1} ( grad L(theta_hat; all rows) - grad L(theta_hat; row i deleted) ).

Deleting row i (DESIGN.md: deletion, not a zero weight, which differs for Efron) changes
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

Without ties and weights, 1 + 2 is the paper's appendix formula. Its definition (by
literal deletion) is checked in the tests to 1e-9 relative for both tie methods.

``_vif_delta_direct`` sums part 1 over all terms for every row: O(n K d) time with
memory bounded by ``block_rows``; it is the reference implementation.
"""
from __future__ import annotations

import numpy as np

from ._influence_common import _fit_data, paper_scale
from .cox import _group_event_sums, risk_set_state


def _term_ranges(data):
    """For each sorted row: the half-open range of Efron terms of part 1.

    Terms are ordered by tie group, i.e. by stratum and descending time; row i's risk
    sets are the groups from its own (inclusive, or exclusive when i is an event of it)
    to the last group of its stratum.
    """
    tg = data.term_group
    first = data.group + (data.event > 0)
    lo = np.searchsorted(tg, first, side="left")
    # last group index of each row's stratum
    stratum_last_group = np.searchsorted(data.group_stratum, data.strata, side="right") - 1
    hi = np.searchsorted(tg, stratum_last_group, side="right")
    return lo, hi


def _own_group_change(data, state):
    """Part 2 for every event row (sorted order), (n, d) with zeros for censored rows."""
    X, w = data.X, data.weights
    out = np.zeros_like(X)
    ev = data.event_rows
    if ev.size == 0:
        return out
    tg = data.term_group
    u = state.risk
    G = data.n_groups
    first_term = np.searchsorted(tg, np.arange(G), side="left")
    n_ev = data.group_n_events
    S0 = np.zeros(G)
    S1 = np.zeros((G, data.d))
    has = n_ev > 0
    S0[has] = state.den[first_term[has]]               # the r = 0 term has c = 0
    S1[has] = state.term_mean[first_term[has]] * S0[has, None]
    S0D = _group_event_sums(data, u[ev][None, :])[0]
    S1D = _group_event_sums(data, (u[ev, None] * X[ev])[None, :, :])[0]
    m = data.group_event_weight / np.maximum(n_ev, 1)
    full = m[:, None] * _group_event_sums(data, state.term_mean[None, :, :])[0]

    g = tg                                    # group of each event row (event_rows order)
    d_i = n_ev[g]
    ui, xi = u[ev], X[ev]
    # expanded pairs (event i, remaining rank r' = 0..d_g-2)
    reps = d_i - 1
    pair_event = np.repeat(np.arange(ev.size), reps)
    start = np.cumsum(reps) - reps
    r_prime = np.arange(pair_event.size) - np.repeat(start, reps)
    gp = g[pair_event]
    if data.ties == "efron":
        c = r_prime / np.maximum(d_i[pair_event] - 1, 1)
    else:
        c = np.zeros(pair_event.size)
    up, xp = ui[pair_event], xi[pair_event]
    num = S1[gp] - up[:, None] * xp - c[:, None] * (S1D[gp] - up[:, None] * xp)
    den = S0[gp] - up - c * (S0D[gp] - up)
    a_new = num / den[:, None]
    m_new = (data.group_event_weight[g] - w[ev]) / np.maximum(d_i - 1, 1)
    remaining = np.zeros((ev.size, data.d))
    np.add.at(remaining, pair_event, a_new)
    out[ev] = -w[ev, None] * xi + full[g] - m_new[:, None] * remaining
    return out


def _vif_delta_direct(data, state, block_rows=None):
    """``grad L(all) - grad L(-i)`` for every sorted row by direct summation, O(n K d)."""
    X = data.X
    K = data.term_group.size
    lo, hi = _term_ranges(data)
    u = state.risk
    m, den, a = state.mean_weight, state.den, state.term_mean
    if block_rows is None:
        block_rows = max(1, int(2e7 // max(K, 1)))
    delta = _own_group_change(data, state)
    k = np.arange(K)
    for start in range(0, data.n, block_rows):
        rows = slice(start, min(start + block_rows, data.n))
        inside = (k[None, :] >= lo[rows, None]) & (k[None, :] < hi[rows, None])
        wk = np.where(inside, m[None, :] / (den[None, :] - u[rows, None]), 0.0)
        delta[rows] += u[rows, None] * (X[rows] * wk.sum(axis=1)[:, None] - wk @ a)
    return delta


def vif(fit, *, method="direct"):
    """Closed-form VIF of every row, paper scale: ``-(H/n)^{-1}(grad L - grad L_{-i})``.

    Returns an (n, d) array in the caller's row order (a DataFrame with the caller's
    index for pandas input), approximating ``n (theta_hat - theta_hat_{-i})``; the
    estimated leave-one-out change is ``-VIF_n(i) / n``.

    method : "direct" sums over all event terms for every row (O(n K d), the reference).
    """
    data = _fit_data(fit)
    state = risk_set_state(data, fit.coef)
    if method != "direct":
        raise ValueError(f"method must be 'direct'; got {method!r}")
    return paper_scale(fit, _vif_delta_direct(data, state))

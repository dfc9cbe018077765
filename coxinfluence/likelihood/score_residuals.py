"""Score residuals: the derivative of the weighted score ``U = -grad L`` in each row's case
weight (R's ``resid(fit, "score")``), the ingredient of Reid's IF and of the robust
sandwich. The formula is in :mod:`coxinfluence.influence_functions.reid`."""
from __future__ import annotations

import numpy as np


def score_residuals_sorted(risk_sets, theta):
    """Score residuals U (n, d) in sorted row order at ``theta``; O(n d)."""
    rs, data = risk_sets, risk_sets.data
    state = rs.state(theta)
    X = data.X
    m, den, a, c = state.mean_weight, state.den, state.term_mean, state.frac
    # e_i * sum over its risk sets of m (1 - c[i in D]) (x_i - a_k) / den_k
    coef = rs.sum_over_risk_sets((m / den)[None, :], c)[0]
    vec = rs.sum_over_risk_sets(((m / den)[:, None] * a)[None, :, :], c)[0]
    U = -state.score[:, None] * (X * coef[:, None] - vec)
    # the event's own term: x_i minus the Efron-averaged risk-set mean of its group
    ev = data.event_rows
    abar = rs.group_event_sums(a[None, :, :])[0] / np.maximum(data.group_n_events, 1)[:, None]
    U[ev] += X[ev] - abar[data.term_group]
    return U

"""The first-order change of the absolute risk of cause-specific Cox models.

``F_k(t | x)`` (:func:`coxinfluence.models.cause_specific.absolute_risk`) depends on every
cause's coefficients and baseline hazard. With ``Q_j(u) = exp(x'theta_j) dLambda_0j(u)``
the patient's hazard jump of cause ``j`` at a jump time ``u``, ``h(u) = sum_j Q_j(u)``::

    dF(t) / dQ_j(u) = 1{u <= t} [1{j = k} S(u-) - (F(t) - F(u)) / (1 - h(u))]

(the product limit; for ``exp(-sum_j Lambda_j)`` without the ``1 / (1 - h(u))``), and each
jump's derivatives are those of the Cox baseline (``m_k / den_k`` per Efron term, R's
``survfit`` with the fit's ties, :mod:`coxinfluence.likelihood.baseline_hazard`)::

    dQ / dtheta_j = Q (x - a_k),
    d(m_k / den_k) / dw_i = 1{i in D_g} / (d_g den_k)
                            - (m_k / den_k^2) e_i (1{i in R_g} - c_k 1{i in D_g}),

``a_k`` the term's risk-set mean, ``e_i`` row i's relative risk, ``R_g``, ``D_g``, ``d_g``
the risk set, the events and their number of the term's tie group, ``c_k`` its Efron
fraction. The first gives :func:`absolute_risk_jacobian`; the second, summed over a unit's
rows times minus their case weights, :func:`baseline_influence`; with the coefficients'
Reid change (:func:`coefficient_changes`) their sum is Reid's change of ``F``
(:func:`absolute_risk_changes`), ``-IF/n``: the derivative of the estimator in the unit's
case weights (tests/test_cause_specific_audit.py checks it by central differences).
riskRegression's ``absRisk.iid`` is minus it for the exponential formula on data without
tied event times; with the product limit its iid is the exponential formula's derivative
taken at the product-limit survival (``calcSeCif2_cpp``), and with tied event times its
Cox baseline's iid is not the estimator's derivative either (about 1% of the change on
``pbc``).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from coxinfluence.data.units import resolve_units
from coxinfluence.likelihood.baseline_hazard import (
    TermPrefixSums,
    baseline_ctype,
    baseline_terms,
)
from coxinfluence.likelihood.score_residuals import score_residuals_sorted
from coxinfluence.numerics.rows import sums_by_label

__all__ = ["jump_derivatives", "absolute_risk_jacobian", "baseline_influence",
           "coefficient_changes", "absolute_risk_changes"]


def _baseline_parts(model, theta):
    """Per Efron term of ``model`` at ``theta``: increments ``m/den`` (K,), the shift,
    term means on the caller's scale (K, d), the denominators, the fractions, the mean
    weights, and the shifted scores ``e`` (n,) of the sorted rows."""
    rs = model.risk_sets
    terms = baseline_terms(model, None, baseline_ctype(model))
    _, r, shift, den = rs.risk(np.atleast_2d(theta), terms)
    m = np.broadcast_to(terms.mean_weight, den.shape)[0]
    inc = m / den[0]
    frac = np.broadcast_to(terms.frac, den.shape)[0]
    a = rs.term_means(r, den, terms.frac)[0] + model.data.X_center
    e = r[0] / model.data.weights
    return inc, shift[0, 0] + theta @ model.data.X_center, a, den[0], frac, m, e


def _tie_group_sums(tg, A):
    """(K, q) per Efron term: the sum of the columns of ``A`` (q, K) over its tie group
    (``tg``, each term's group)."""
    groups, sums = sums_by_label(A, tg)                                   # (q, groups)
    return sums[:, np.searchsorted(groups, tg)].T


def _risk_set_sums(data, B, block=65536):
    """(n, q): for each row i the sum of the columns ``B[:, k]`` (q, K) of the Efron
    terms whose risk set holds it: same stratum, ``start_i < t_k <= time_i``, the terms'
    prefix sums (``TermPrefixSums``) read at the row's two ends (a tied ``t_k == time_i``
    is in, ``t_k == start_i`` out): O((n + K) q), in row blocks, with no (n, K) array."""
    out = np.zeros((data.n, B.shape[0]))
    if not data.event_rows.size:
        return out
    sums = TermPrefixSums(data, B)
    for lo in range(0, data.n, block):
        rows = slice(lo, min(lo + block, data.n))
        strata = data.strata[rows]
        inside = sums.at(strata, data.time[rows])
        if data.start is not None:
            inside -= sums.at(strata, data.start[rows])
        out[rows] = inside.T
    return out


def jump_derivatives(fit, parts, times, cause, product_limit):
    """Per cause: ``dF/d(m_k/den_k)`` (P, T, K) of every Efron term of its baseline, and
    the term's pieces (module docstring); ``parts`` as ``absolute_risk`` takes them."""
    times = np.asarray(times, dtype=np.float64)
    grid_times = np.unique(np.concatenate(
        [m.data.time[m.data.event_rows] for m in fit.models]))
    pieces, Q = [], []
    for model, (X, codes) in zip(fit.models, parts):
        inc, shift, a, den, frac, m, e = _baseline_parts(model, model.coef)
        ev = model.data.event_rows
        E = np.exp(X @ model.coef - shift)                                  # (P,)
        same = model.data.strata[ev][None, :] == codes[:, None]             # (P, K)
        at = np.searchsorted(grid_times, model.data.time[ev])               # (K,)
        q = np.zeros((X.shape[0], grid_times.size))
        for p in range(X.shape[0]):
            np.add.at(q[p], at[same[p]], E[p] * inc[same[p]])
        Q.append(q)
        pieces.append(SimpleNamespace(X=X, E=E, same=same, at=at, inc=inc, a=a, den=den,
                                      frac=frac, m=m, e=e))
    h = np.sum(Q, axis=0)                                                   # (P, G)
    if product_limit:
        S = np.cumprod(1.0 - h, axis=1)
    else:
        S = np.exp(-np.cumsum(h, axis=1))
    S_before = np.concatenate([np.ones_like(S[:, :1]), S[:, :-1]], axis=1)
    F = np.cumsum(S_before * Q[fit.causes.index(cause)], axis=1)       # (P, G)
    upto = grid_times[None, :] <= times[:, None]                       # (T, G)
    at_t = np.searchsorted(grid_times, times, side="right") - 1
    F_t = np.where(at_t[None, :] >= 0, F[:, np.maximum(at_t, 0)], 0.0)      # (P, T)
    scale = (1.0 / np.where(h < 1.0, 1.0 - h, np.inf) if product_limit
             else np.ones_like(h))
    out = []
    for j, piece in enumerate(pieces):
        direct = S_before[:, None, :] if fit.causes[j] == cause else 0.0
        dQ = upto[None] * (direct - (F_t[:, :, None] - F[:, None, :])
                           * scale[:, None, :])                            # (P, T, G)
        dinc = dQ[:, :, piece.at] * (piece.E[:, None] * piece.same)[:, None, :]
        out.append((dinc, piece))                                           # (P, T, K)
    return out


def absolute_risk_jacobian(fit, parts, times, cause, product_limit=True):
    """(P T, d) ``dF/dtheta`` at the fitted coefficients of every cause (module docstring),
    rows patient by patient, time by time."""
    blocks = []
    for dinc, piece in jump_derivatives(fit, parts, times, cause, product_limit):
        # d(E m/den)/dtheta = E (m/den) (x - a_k)
        xa = piece.X[:, None, :] - piece.a[None, :, :]                      # (P, K, d)
        J = np.einsum("ptk,pkd->ptd", dinc * piece.inc[None, None, :], xa)
        blocks.append(J.reshape(-1, piece.X.shape[1]))
    return np.hstack(blocks)


def baseline_influence(fit, parts, times, cause, product_limit=True, units=None):
    """(U, P T) the baselines' first-order change by deleting each unit at ``theta_hat``:
    ``-sum_{i in g} w_i dF/dw_i`` (module docstring). ``units``: each cause's units
    (``coxinfluence.data.units.Units``), default each model's own (subjects, else rows)."""
    if units is None:
        units = [resolve_units(m) for m in fit.models]
    total = None
    derivatives = jump_derivatives(fit, parts, times, cause, product_limit)
    for model, unit, (dinc, piece) in zip(fit.models, units, derivatives):
        den, frac, m, e = piece.den, piece.frac, piece.m, piece.e
        data = model.data
        ev, tg = data.event_rows, data.term_group
        P, T, K = dinc.shape
        G = dinc.reshape(P * T, K)
        n_events = data.group_n_events[tg]                                 # (K,)
        # the events' own part, the same for every event row of a tie group g:
        # sum_{k in g} [1 / (d_g den_k) + (m/den^2) c_k e_i] dF/d(m_k/den_k)
        coef = _tie_group_sums(tg, G * (1.0 / (n_events * den))[None, :])  # (K, PT)
        corr = _tie_group_sums(tg, G * (m / den ** 2 * frac)[None, :])
        own = np.zeros((data.n, P * T))
        own[ev] = coef + e[ev, None] * corr
        # the risk sets' part: -(m/den^2) e_i 1{i in R_g}
        risk = _risk_set_sums(data, G * (m / den ** 2)[None, :])
        risk *= e[:, None]
        dw = own - risk                                                     # (n, PT)
        change = unit.collapse(-data.weights[:, None] * dw)
        total = change if total is None else total + change
    return total


def coefficient_changes(fit, units=None):
    """(U, d) Reid's change ``-IF_n(g)/U`` of every cause's coefficients, side by side
    (each cause's ``-dfbeta``, R's ``resid(model, "dfbeta", collapse = id)``). ``units``:
    each cause's units, default each model's own."""
    if units is None:
        units = [resolve_units(m) for m in fit.models]
    blocks = []
    for m, unit in zip(fit.models, units):
        delta = -m.data.weights[:, None] * score_residuals_sorted(m.risk_sets, m.coef)
        IF = np.asarray(m.paper_scale(unit.collapse(delta), unit, overwrite=True))
        blocks.append(-IF / IF.shape[0])
    return np.hstack(blocks)


def absolute_risk_changes(fit, parts, times, cause, product_limit=True, units=None):
    """(U, P T) Reid's change of ``F``: ``coefficient_changes J' + baseline_influence``."""
    J = absolute_risk_jacobian(fit, parts, times, cause, product_limit)
    return (coefficient_changes(fit, units) @ J.T
            + baseline_influence(fit, parts, times, cause, product_limit, units))

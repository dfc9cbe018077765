"""Flags: units whose leave-one-out change is undefined, or whose VIF cannot be trusted.

The VIF's change ``delta_g = -VIF_n(g)/n`` is the first step of the refit without unit g
taken with the *full-data* information ``H``. It is off where the unit holds much of the
information in some direction, or where the change is so large that the score is not
linear over it (GBSG2's top patient: likelihood displacement 2.02 by VIF, 5.61 by
refit). With ``C_g`` the unit's part of the information (``sum_g C_g = H``; Cox:
:mod:`coxinfluence.influence_functions.information_split`) and ``T`` the loss's third
derivative:

- the leverage ``lambda_g``, the largest eigenvalue of ``H^{-1/2} C_g H^{-1/2}``: the
  unit's largest share of the information in any direction;
- the curvature score ``||H^{-1} r_g||_H / ||delta_g||_H``, ``r_g = -C_g delta_g +
  T[delta_g, delta_g]/2``: the refit's predicted second step relative to its first
  (VIF's predicted relative error; ``||D||_H = sqrt(D' H D)``).

``unstable`` (:func:`unstable_from_split`, :func:`unstable_screened`): either above its
threshold, chosen by measurement against exact refits on 41 real data sets
(``paper_appendix/bench_flags.py``, whose ``flag_estimates.py`` holds the research
estimates and the per-unit scores). ``undefined`` (:func:`undefined_units`): the deletion
leaves no event, or a covariate constant or collinear among the rows that carry
information; the exact change does not exist.
"""
from __future__ import annotations

import numpy as np

from coxinfluence.data.rank import is_rank_deficient
from coxinfluence.data.units import resolve_units
from coxinfluence.models.cox import check_fit
from coxinfluence.numerics.rows import matmul_rows

#: ``unstable`` when the curvature score (VIF's predicted relative error in the
#: information norm) exceeds this. Measured by ``paper_appendix/bench_flags.py`` against
#: exact refits of every unit of 41 real data sets (lifelines', R survival's, statsmodels'
#: and the DeepSurv data; 41,335 defined units): of the 189 units whose VIF error exceeds
#: 10% of the exact change (``||vif - exact||_H > 0.1 ||exact||_H``) the rule flags 186
#: (98%; all 173 of those whose exact displacement is above their data set's median),
#: flagging 1.3% of all units (precision 35%); the 3 missed have errors of 10.4-11% (two
#: in a data set of 26 rows). Curvature alone at 0.03 / 0.05 / 0.07 / 0.1: recall 99% /
#: 98% / 97% / 88%, flagged 2.7% / 1.3% / 0.8% / 0.4%. Leverage alone (0.05: recall 90%,
#: 0.1: 77%), one-step Newton's disagreement with VIF (0.05: 93%, at O(U n d^2)) and the
#: unit's largest diagonal share of the information (0.05: 76%) do worse.
UNSTABLE_CURVATURE = 0.05

#: ``unstable`` also when the leverage (the unit's largest share of the information
#: in any direction) exceeds this, whatever the curvature score says: a guard for the
#: expansion behind the score (a unit holding a tenth of a direction's information). On
#: the 41 data sets it adds 5 units to the curvature rule's 528 flags and no recall.
UNSTABLE_LEVERAGE = 0.1


# ------------------------------------------------------------------ derived quantities

def _generalised_eig(H, C):
    """``T_g = L^{-1} C_g L^{-T}`` (``H = L L'``): eigenvalues (U, d) ascending,
    eigenvectors (U, d, d), and ``L``."""
    L = np.linalg.cholesky(np.asarray(H, dtype=np.float64))
    Li = np.linalg.inv(L)
    T = Li[None] @ C @ Li.T[None]
    lam, V = np.linalg.eigh(0.5 * (T + T.transpose(0, 2, 1)))
    return lam, V, L


def _curvature(H, delta, C, T):
    """(U,) the curvature score ``||H^{-1} r_g||_H / ||delta_g||_H`` (module docstring):
    0 where the unit changes nothing, inf where its change is 0 but ``r_g`` is not."""
    d = H.shape[0]
    # r_g = -C_g delta_g + T[delta_g, delta_g]/2, as two matrix products (BLAS)
    dd = (delta[:, :, None] * delta[:, None, :]).reshape(-1, d * d)
    r = 0.5 * (dd @ np.asarray(T).reshape(d, d * d).T) - np.matmul(C, delta[:, :, None])[:, :, 0]
    num = np.sqrt(np.maximum(np.einsum("ui,ui->u", r, np.linalg.solve(H, r.T).T), 0.0))
    den = np.sqrt(np.maximum(np.einsum("ui,ij,uj->u", delta, H, delta), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / den, np.where(num > 0, np.inf, 0.0))


# ------------------------------------------------------------------------------ flags

def undefined_units(fit, units=None):
    """(U,) bool: deleting the unit leaves a model without a maximum by construction:
    no event at all, or a covariate constant or collinear within strata
    (``Units.breaks_rank``) among the rows that still carry information.

    A unit that removes the last event of a stratum (which keeps rows) is not undefined by
    itself: that stratum drops out of the partial likelihood (R's refit agrees;
    ``docs/conventions.md``). Its rows then carry no information, so for such units the
    rank test is repeated on the rows of the strata that keep an event.
    """
    fit = check_fit(fit)
    units = resolve_units(fit) if units is None else units
    data = fit.data
    U = units.n_units
    S = int(data.strata.max()) + 1
    ev = data.event > 0
    cell = units.of_row * S + data.strata
    ev_us = np.bincount(cell[ev], minlength=U * S).reshape(U, S)
    n_us = np.bincount(cell, minlength=U * S).reshape(U, S)
    ev_s, n_s = ev_us.sum(axis=0), n_us.sum(axis=0)
    loses_all = (ev_s[None, :] > 0) & (ev_us == ev_s[None, :]) & (n_us < n_s[None, :])
    no_events = ev_us.sum(axis=1) == ev.sum()
    out = np.asarray(units.breaks_rank, dtype=bool) | no_events
    for g in np.flatnonzero(loses_all.any(axis=1) & ~out):
        keep_strata = np.flatnonzero(ev_s - ev_us[g] > 0)
        rows = (units.of_row != g) & np.isin(data.strata, keep_strata)
        out[g] = is_rank_deficient(data.X[rows], data.strata[rows])
    return out


def unstable_from_split(H, C, T, delta):
    """(U,) bool, the ``unstable`` rule for any model: the curvature score above
    ``UNSTABLE_CURVATURE`` or the leverage above ``UNSTABLE_LEVERAGE``, from the
    information ``H`` (d, d), the units' parts of it ``C`` (U, d, d), the third derivative
    ``T`` (d, d, d) and the first-order changes ``delta`` (U, d). A model without an exact
    split (the autodiff losses) passes ``C_g = H - H_{-g}``, which is the split for a
    decomposable loss."""
    H = np.asarray(H, dtype=np.float64)
    curv = _curvature(H, np.asarray(delta, dtype=np.float64), C, T)
    return (curv > UNSTABLE_CURVATURE) | _leverage_above(H, C, UNSTABLE_LEVERAGE)


#: slack of :func:`unstable_screened`'s bounds against rounding: a unit within this of a
#: threshold is checked in full
SCREEN_SLACK = 1e-9


def unstable_screened(H, traces, T, delta, split_of):
    """(U,) bool, :func:`unstable_from_split`'s answer with ``C_g`` formed only for the
    units that may be flagged: ``traces`` (U,) are ``tr(H^{-1} C_g)`` and ``split_of(codes)``
    returns ``C_g`` (m, d, d) of those units.

    Both parts of the rule are bounded without ``C_g``. The eigenvalues of ``H^{-1/2} C_g
    H^{-1/2}`` are nonnegative, so the leverage (the largest) is at most their sum ``t_g =
    tr(H^{-1} C_g)``. With ``H = L L'``, ``y_g = L' delta_g`` (``|y_g| = ||delta_g||_H``)
    and ``r_g = -C_g delta_g + T[delta_g, delta_g]/2``, the curvature score is

        ||L^{-1} r_g|| / |y_g| <= t_g + ||L^{-1} T[delta_g, delta_g]|| / (2 |y_g|)
                               <= t_g + s |y_g| / 2,

    ``s`` the largest singular value of ``T`` in the whitened coordinates, unfolded to
    ``d x d^2`` (``L^{-1} T[L^{-T} y, L^{-T} y]`` is that matrix times ``y (x) y``). A
    unit whose bounds are both below their thresholds (less ``SCREEN_SLACK``) is not
    unstable; the others are decided by :func:`unstable_from_split`. The answer is the
    rule's for every unit (on SUPPORT ``C_g`` is formed for 4 of 5,678)."""
    H = np.asarray(H, dtype=np.float64)
    delta = np.asarray(delta, dtype=np.float64)
    d = H.shape[0]
    L = np.linalg.cholesky(H)
    Li = np.linalg.inv(L)
    T = np.asarray(T, dtype=np.float64)
    # L^{-1} T[L^{-T} ., L^{-T} .]: one index at a time (d^4 each)
    whitened = T
    for _ in range(3):
        whitened = np.tensordot(whitened, Li, axes=([0], [1]))   # rotates the axes
    whitened = whitened.reshape(d, d * d)
    s = np.linalg.norm(whitened, 2)
    DH = matmul_rows(delta, H, np.empty(delta.shape))          # one BLAS thread per block
    norm = np.sqrt(np.maximum((DH * delta).sum(axis=1), 0.0))            # ||delta||_H
    maybe = ((traces > UNSTABLE_LEVERAGE - SCREEN_SLACK)
             | (traces + 0.5 * s * norm > UNSTABLE_CURVATURE - SCREEN_SLACK))
    out = np.zeros(delta.shape[0], dtype=bool)
    codes = np.flatnonzero(maybe)
    if codes.size:
        out[codes] = unstable_from_split(H, split_of(codes), T, delta[codes])
    return out


def _leverage_above(H, C, level):
    """(U,) ``leverage > level``, the eigenvalue problem solved only where it can be: the
    largest eigenvalue of ``H^{-1/2} C_g H^{-1/2}`` (positive semi-definite) is at most
    its trace ``tr(H^{-1} C_g)``, so units whose trace is at most ``level`` are below it
    (on SUPPORT nearly all: one O(U d^2) pass instead of U eigenvalue problems)."""
    trace = np.einsum("ij,uji->u", np.linalg.inv(H), C)
    out = np.zeros(C.shape[0], dtype=bool)
    check = np.flatnonzero(trace > level)
    if check.size:
        out[check] = _generalised_eig(H, C[check])[0][:, -1] > level
    return out

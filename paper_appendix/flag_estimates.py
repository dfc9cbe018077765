"""Corrected first-order changes measured against exact refits by ``bench_flags.py`` (and
checked by ``tests/test_flags.py``): research estimates beside the package's flags, not
shown to users, so they live here and not in the package.

- :func:`leverage_corrected` ``(H - C_g)^{-1} H delta_g``: VIF with the full information
  replaced by the other units' part;
- :func:`second_order`: the change solving ``(H - C_g) D + T[D, D]/2 = H delta_g``.

``C_g`` is the information split and ``T`` the third derivative of
:mod:`coxinfluence.influence_functions.stability`.
"""
from __future__ import annotations

import numpy as np

from coxinfluence.influence_functions.stability import (
    _delta,
    _generalised_eig,
    _units,
    information_split,
    third_derivative,
)
from coxinfluence.models.cox import check_fit

#: ``H - C_g`` counts as singular when ``1 - lambda_g`` is at most this (the corrected
#: changes are then NaN).
SINGULAR = 1e-8


def _solve_split(fit, C, rhs, eig=None):
    """``(H - C_g)^{-1} rhs_g`` for every unit, NaN where ``1 - lambda_g <= SINGULAR``:
    ``(H - C_g)^{-1} = L^{-T} V diag(1/(1 - lambda)) V' L^{-1}``."""
    lam, V, L = eig if eig is not None else _generalised_eig(fit, C)
    y = np.linalg.solve(L, np.asarray(rhs, dtype=np.float64).T).T          # L^{-1} rhs_g
    gap = 1.0 - lam
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.einsum("uij,uj->ui", V, np.einsum("uji,uj->ui", V, y) / gap)
    out = np.linalg.solve(L.T, z.T).T
    out[gap[:, 0] <= SINGULAR] = np.nan
    return out


def leverage_corrected(fit, units=None, delta_vif=None, C=None):
    """(U, d) ``(H - C_g)^{-1} H delta_g``, ``delta_g`` VIF's change (``delta_vif``,
    default ``-vif(fit)/U`` per unit): VIF with the full information replaced by the other
    units' part. NaN where ``H - C_g`` is singular (``1 - lambda_g <= SINGULAR``)."""
    fit = check_fit(fit)
    units = _units(fit, units)
    delta = _delta(fit, units, delta_vif)
    C = information_split(fit, units) if C is None else C
    H = np.asarray(fit.information, dtype=np.float64)
    return _solve_split(fit, C, delta @ H)


def second_order(fit, units=None, delta_vif=None, C=None, T=None, iters=1):
    """(U, d) the change ``D`` solving ``(H - C_g) D + T[D, D]/2 = H delta_g`` by
    ``iters`` fixed-point steps from :func:`leverage_corrected`: the deleted problem's
    score expanded to second order at ``theta_hat`` (``T``: :func:`third_derivative` of
    the full data, ``T[D, D]_i = sum_ab T_iab D_a D_b``), its Hessian approximated by
    ``H - C_g``. NaN where ``H - C_g`` is singular."""
    fit = check_fit(fit)
    units = _units(fit, units)
    delta = _delta(fit, units, delta_vif)
    C = information_split(fit, units) if C is None else C
    T = third_derivative(fit) if T is None else T
    H = np.asarray(fit.information, dtype=np.float64)
    eig = _generalised_eig(fit, C)
    Hd = delta @ H
    D = _solve_split(fit, C, Hd, eig)
    for _ in range(iters):
        D0 = np.where(np.isfinite(D), D, delta)
        D = _solve_split(fit, C, Hd - 0.5 * np.einsum("iab,ua,ub->ui", T, D0, D0), eig)
    return D

"""Per-unit scores and corrected first-order changes of a Cox fit, measured against exact
refits by ``bench_flags.py`` (and checked by ``tests/test_flags.py``): research estimates
beside the package's flags (:mod:`coxinfluence.influence_functions.stability`, whose
docstring defines them), not shown to users, so they live here and not in the package.

- :func:`leverage` and :func:`curvature_score`, the two scores of the ``unstable`` rule
  (the audit applies the rule itself: ``CoxAudit.unstable``);
- :func:`leverage_corrected` ``(H - C_g)^{-1} H delta_g``: VIF with the full information
  replaced by the other units' part;
- :func:`second_order`: the change solving ``(H - C_g) D + T[D, D]/2 = H delta_g``.

``C_g`` is the information split
(:func:`coxinfluence.influence_functions.information_split.information_split`) and ``T``
the loss's third derivative (:func:`third_derivative`).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.information_split import information_split
from coxinfluence.influence_functions.stability import _curvature, _generalised_eig
from coxinfluence.influence_functions.vif import vif_of_units
from coxinfluence.likelihood.third_derivative import third_derivative as loss_third_derivative
from coxinfluence.models.cox import check_fit

#: ``H - C_g`` counts as singular when ``1 - lambda_g`` is at most this (the corrected
#: changes are then NaN).
SINGULAR = 1e-8


def _units(fit, units):
    return resolve_units(fit) if units is None else units


def _delta(fit, units, delta_vif):
    """VIF's change ``-VIF_n(g)/U`` (U, d) of every unit, or ``delta_vif`` as given."""
    if delta_vif is None:
        delta_vif = -np.asarray(vif_of_units(fit, units=units), dtype=np.float64) / units.n_units
    delta = np.asarray(delta_vif, dtype=np.float64)
    if delta.shape != (units.n_units, fit.data.d):
        raise ValueError(f"delta_vif must be (n_units, d) = ({units.n_units}, {fit.data.d}); "
                         f"got {delta.shape}")
    return delta


def third_derivative(fit):
    """(d, d, d) third derivative of the negative log partial likelihood at ``fit.coef``."""
    fit = check_fit(fit)
    return loss_third_derivative(fit.risk_sets, fit.coef)


def leverage(fit, units=None, C=None):
    """(U,) ``lambda_g``, the largest eigenvalue of ``H^{-1/2} C_g H^{-1/2}``: unit g's
    largest share of the information in any direction (0..1). ``C``: a precomputed
    :func:`information_split`."""
    fit = check_fit(fit)
    units = _units(fit, units)
    C = information_split(fit, units) if C is None else C
    return _generalised_eig(fit.information, C)[0][:, -1]


def curvature_score(fit, units=None, delta_vif=None, C=None, T=None):
    """(U,) VIF's predicted relative error, ``||H^{-1} r_g||_H / ||delta_g||_H``:
    ``r_g = -C_g delta_g + T[delta_g, delta_g]/2`` is the deleted problem's gradient at
    VIF's estimate ``theta_hat + delta_g`` expanded to second order, and ``-H^{-1} r_g``
    the refit's next step. 0 where the unit changes nothing, inf where its VIF is 0 but
    ``r_g`` is not."""
    fit = check_fit(fit)
    units = _units(fit, units)
    delta = _delta(fit, units, delta_vif)
    C = information_split(fit, units) if C is None else C
    T = third_derivative(fit) if T is None else T
    return _curvature(np.asarray(fit.information, dtype=np.float64), delta, C, T)


def _solve_split(fit, C, rhs, eig=None):
    """``(H - C_g)^{-1} rhs_g`` for every unit, NaN where ``1 - lambda_g <= SINGULAR``:
    ``(H - C_g)^{-1} = L^{-T} V diag(1/(1 - lambda)) V' L^{-1}``."""
    lam, V, L = eig if eig is not None else _generalised_eig(fit.information, C)
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
    eig = _generalised_eig(fit.information, C)
    Hd = delta @ H
    D = _solve_split(fit, C, Hd, eig)
    for _ in range(iters):
        D0 = np.where(np.isfinite(D), D, delta)
        D = _solve_split(fit, C, Hd - 0.5 * np.einsum("iab,ua,ub->ui", T, D0, D0), eig)
    return D

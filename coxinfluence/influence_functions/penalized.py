"""Leave-one-out changes of a ridge-penalised fit (lifelines' penalizer): the VIF with the
penalty's own change, Reid's IF, one-step Newton and exact refits of ``J_{-i}``.

The objective ``J`` and its change ``s - s_{-i}`` on deleting row i are derived in
:mod:`coxinfluence.models.penalized_cox`; here ``theta_{-i} - theta_hat`` is estimated
from them: ``H_J^{-1} [(grad L - grad L_{-i}) + theta_hat (s - s_{-i})]`` (VIF),
``H_J^{-1} w_i U_i`` (Reid), and Newton on ``J_{-i}`` (one step, or to convergence).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.data.deletion import Deletion
from coxinfluence.data.units import row_units
from coxinfluence.influence_functions.refits import Refits, warn_undefined
from coxinfluence.influence_functions.reid import reid_influence
from coxinfluence.influence_functions.vif import vif_of_units
from coxinfluence.likelihood.objective import cox_objective, gradient_tolerance
from coxinfluence.numerics.newton import newton, solve_batch


def penalized_theta_change(fit, method, batch=64):
    """(n, d) ``theta_{-i} - theta_hat`` (caller's order) and the refits (exact) or None,
    for a fit with a :class:`RidgePenalty`. A refit that fails is NaN (with the
    leave-one-out warning of :mod:`coxinfluence.influence_functions.refits`)."""
    penalty = fit.penalty
    data, n = fit.data, fit.n
    if method == "vif":
        extra = fit.coef[None, :] * (penalty.strength[None, :] - penalty.strength_loo)
        return (-np.asarray(vif_of_units(fit)) / n
                + np.linalg.solve(fit.information, extra.T).T), None
    if method == "reid":
        return -np.asarray(reid_influence(fit)) / n, None
    if method not in ("newton", "exact"):
        raise ValueError(f"unknown method {method!r}")
    out = _penalized_loo(fit, np.arange(n), method, batch)
    bad = np.flatnonzero(~np.isfinite(out).all(axis=1))
    warn_undefined(row_units(data), bad, f"penalised {method} leave-one-out",
                    failed=bad if method == "exact" else ())
    return out - fit.coef, (out if method == "exact" else None)


def penalized_refits(fit, codes, batch=64):
    """Exact refits of the penalised fit without each row ``codes`` (caller's order) as a
    :class:`coxinfluence.influence_functions.refits.Refits`: a ridge objective always has a
    maximum, so a refit
    that does not converge is ``"refit_failed"`` (NaN)."""
    codes = np.asarray(codes, dtype=int)
    theta = _penalized_loo(fit, codes, "exact", batch)
    ok = np.isfinite(theta).all(axis=1)
    return Refits(codes, theta, np.where(ok, "ok", "refit_failed"))


def _penalized_loo(fit, rows_all, method, batch):
    """(m, d) one-step Newton (``theta_hat - H_{J,-i}^{-1} grad J_{-i}``) or exact refits
    of ``J_{-i}`` for the caller's rows ``rows_all``; NaN where they fail."""
    penalty, data, d = fit.penalty, fit.data, fit.data.d
    inv = data.inverse_order
    out = np.empty((rows_all.size, d))
    for start in range(0, rows_all.size, batch):
        pos = np.arange(start, min(start + batch, rows_all.size))
        rows = rows_all[pos]
        deleted = Deletion.of_rows(data.n, inv[rows])
        objective = cox_objective(fit.risk_sets, deleted, ridge=penalty.strength_loo[rows])
        theta0 = np.repeat(fit.coef[None, :], rows.size, axis=0)
        if method == "newton":
            _, g, H = objective(np.arange(rows.size), theta0)
            step, ok = solve_batch(H, g)
            out[pos] = np.where(ok[:, None], theta0 - step, np.nan)
        else:
            res = newton(objective, theta0, tol=gradient_tolerance(data, fit.tol),
                         max_iter=fit.max_iter)
            out[pos] = np.where(res.converged[:, None], res.theta, np.nan)
    return out

"""Fine-Gray residuals: crr's ``fit$res`` and the subjects' score and dfbeta.

- schoenfeld: crr's ``res`` (its Fortran ``crrsr``), one row per distinct failure time
  of the cause: ``sum_{i fails at t_k} w_i (x_i - xbar_k)``, ``xbar_k = S1_k / S0_k`` the
  risk set's mean with the censoring weights of the competing failures (Breslow's ties;
  with Efron's, the failures' mean of :func:`coxinfluence.likelihood.fine_gray.crr_scores`).
  The rows sum to the score, zero at the fit. With strata, one row per (stratum, time),
  strata in code order.
- score: each subject's ``eta_i + psi_i`` (:func:`~coxinfluence.likelihood.fine_gray.crr_scores`:
  the score residual with the weights held fixed plus the censoring distribution's
  term), per unit of case weight (``weighted=True`` multiplies by it); crr's sandwich is
  ``H^{-1} (sum_i w_i^2 s_i s_i') H^{-1}``.
- dfbeta: ``w_i s_i H^{-1}`` (weighted by default, as coxph's), the first-order change
  ``theta_hat - theta_hat_{-i}``: minus the audit's Reid change (``ci.influence(...,
  method="reid")``), and ``sum_i dfbeta_i dfbeta_i'`` is crr's ``fit$var``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError
from coxinfluence.diagnostics.registry import collapse_rows, register_residuals
from coxinfluence.likelihood.efron import tie_terms
from coxinfluence.likelihood.fine_gray import CAUSE, per_time, risk_sums
from coxinfluence.models.fine_gray import FineGrayFit

__all__ = ["fine_gray_residuals"]

FINE_GRAY_KINDS = ("schoenfeld", "score", "dfbeta")


def crr_res(fit):
    """crr's ``fit$res`` (module docstring): (K, d) in order of the failure times, and
    their times."""
    data = fit.data
    s = risk_sums(data, fit.coef[None, :], np.ones((1, data.n)))
    tt = tie_terms(s.S0, s.F0, s.nd, s.dk)
    c, c1, dk = tt.c[0], tt.c1[0], s.dk[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        xbar = np.where(dk[:, None] > 0, (c[:, None] * s.S1[0] - c1[:, None] * s.F1[0])
                        / np.where(dk > 0, dk, 1.0)[:, None], 0.0)
    fails = (data.weight * (data.kind == CAUSE))[:, None] * data.X
    own = per_time(data, fails[None])[0][data.fail]
    res = own - dk[:, None] * xbar
    times = data.time[data.starts[data.fail]]
    return res, times


def fine_gray_residuals(fit, kind, *, collapse=None, weighted=None):
    """crr's residuals and the subjects' score and dfbeta of a Fine-Gray fit.

    The function ``ci.residuals`` calls for a :class:`~coxinfluence.FineGrayFit`
    (module docstring for the formulas).

    Parameters
    ----------
    fit : FineGrayFit
        The fit.
    kind : str
        One of "schoenfeld", "score", "dfbeta".
    collapse : bool or array_like, optional
        One label per subject (caller's order): sums per label (score, dfbeta).
    weighted : bool, optional
        Multiply by the case weights; default for dfbeta only.

    Returns
    -------
    pandas.Series or pandas.DataFrame
        schoenfeld: one row per failure time of the cause (crr's ``res``);
        score, dfbeta: one row per subject (caller's index).

    Examples
    --------
    >>> from coxinfluence.diagnostics.fine_gray_residuals import fine_gray_residuals
    >>> rng = np.random.default_rng(1)
    >>> n = 200
    >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2)})
    >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"]))
    >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
    >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
    >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
    >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
    >>> D = fine_gray_residuals(fit, "dfbeta")
    >>> bool(np.allclose(D.T @ D, fit.var))
    True
    """
    data = fit.data
    if kind == "schoenfeld":
        if collapse is not None and collapse is not False:
            raise InputError("schoenfeld residuals have one row per failure time: collapse= "
                             "is for the per-subject kinds")
        res, times = crr_res(fit)
        if weighted:
            raise InputError("crr's schoenfeld residuals are sums over each failure time's "
                             "failures, already weighted by the case weights: weighted= "
                             "does not apply")
        return pd.DataFrame(res, index=pd.Index(times, name="time"), columns=list(fit.columns))
    if weighted is None:
        weighted = kind == "dfbeta"
    w = data.to_caller_order(data.weight)
    S = np.asarray(fit.scores) / w[:, None]          # per unit of case weight
    if kind == "dfbeta":
        S = S @ fit.naive_var
    if weighted:
        S = S * w[:, None]
    index = fit.index if fit.index is not None else pd.RangeIndex(data.n)
    out = pd.DataFrame(S, index=index, columns=list(fit.columns))
    if collapse is not None and collapse is not False:
        if collapse is True:
            raise InputError("collapse=True: a Fine-Gray fit has one row per subject; pass "
                             "one label per row to sum over clusters")
        out = collapse_rows(out, collapse, index)
    return out


register_residuals(FineGrayFit, FINE_GRAY_KINDS, fine_gray_residuals, model="Fine-Gray")

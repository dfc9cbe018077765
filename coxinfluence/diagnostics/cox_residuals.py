"""Cox residuals, as R's ``residuals.coxph`` (survival 3.x): signs, scales, order.

From the risk-set state at the fitted coefficients (:mod:`coxinfluence.likelihood.risk_sets`:
Efron's or Breslow's ties, strata, case weights, (start, stop] rows):

- martingale ``M_i = delta_i - e_i sum_{k: i in R_k} m_k (1 - c_k [i in D_k]) / den_k``
  (the expected count with Efron's downweighting of the row's own tied deaths, as R's
  ``coxmart``/``agmart``);
- deviance ``sign(M) sqrt(-2 (M + delta log(delta - M)))``;
- score: the score residuals of :mod:`coxinfluence.likelihood.score_residuals`;
- schoenfeld ``x_i - abar_g`` for each event, ``abar_g`` the mean of the group's Efron
  term means (R's ``coxscho``), one row per event in R's order (stratum, time, row);
- scaledsch ``r var * n_events + beta`` (R's, including its scale: the number of events);
- dfbeta ``U var`` and dfbetas ``U var / se`` (weighted by default), with ``var`` the
  model-based covariance (R uses ``naive.var`` for robust fits too);
- partial ``M_i + (x_i - xbar) beta`` per covariate, ``xbar`` R's ``fit$means``, the
  centring of ``predict(type = "terms")`` (:func:`r_means`).

``weighted=True`` multiplies by the case weights before collapsing (R's ``weighted=``).
For Schoenfeld residuals each event is multiplied by its own weight; survival 3.5.3's
``residuals(fit, "schoenfeld", weighted = TRUE)`` multiplies the events, in its sorted
order, by ``weights[deaths]`` with ``weights`` in the data's order (a misalignment,
shown in ``tests/test_residuals_cox.py``), so on weighted fits the two differ there.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError
from coxinfluence.diagnostics.registry import collapse_rows, register_residuals
from coxinfluence.likelihood.score_residuals import score_residuals_sorted
from coxinfluence.models.cox import CoxFit

__all__ = ["cox_residuals"]

COX_KINDS = ("martingale", "deviance", "score", "schoenfeld", "scaledsch", "dfbeta",
             "dfbetas", "partial")
_PER_EVENT = ("schoenfeld", "scaledsch")


def caller_index(data):
    """The caller's row labels (a RangeIndex for arrays)."""
    return data.index if data.index is not None else pd.RangeIndex(data.n)


def martingale_sorted(fit):
    """Martingale residuals in sorted row order (module docstring), unweighted."""
    rs, data = fit.risk_sets, fit.data
    st = rs.state(fit.coef)
    q = np.where(st.mean_weight > 0, st.mean_weight / st.den, 0.0)
    expected = st.score * rs.sum_over_risk_sets(q[None], st.frac)[0]
    return data.event - expected


def schoenfeld_sorted(fit):
    """Schoenfeld residuals ``x_i - abar_g`` of the events, in ``data.event_rows`` order."""
    rs, data = fit.risk_sets, fit.data
    st = rs.state(fit.coef)
    abar = (rs.group_event_sums(np.asarray(st.term_mean)[None])[0]
            / np.maximum(data.group_n_events, 1)[:, None])
    ev = data.event_rows
    return data.X[ev] - abar[data.term_group]


def event_order(data):
    """Positions in ``data.event_rows`` of the events in R's order: stratum code, time,
    then the caller's row order (``order(strata, time, -status)`` in
    ``residuals.coxph``)."""
    ev = data.event_rows
    return np.lexsort((data.order[ev], data.time[ev], data.strata[ev]))


def r_means(data, X):
    """R's ``fit$means``, the centring of ``predict(type = "terms")``: 0 for a column whose
    values are all -1, 0 or 1 (coxph's ``nocenter``), else the column mean, weighted by
    the case weights for right-censored data (``coxfit6``) and unweighted for (start,
    stop] data (``agreg.fit``'s ``colMeans``)."""
    if data.start is None:
        means = (data.weights @ X) / data.weights.sum()
    else:
        means = X.mean(axis=0)
    nocenter = np.isin(X, (-1.0, 0.0, 1.0)).all(axis=0)
    return np.where(nocenter, 0.0, means)


def _labels(fit, collapse):
    if collapse is True:
        data = fit.data
        if data.ids is None:
            raise InputError("collapse=True sums per subject, but the fit has none: fit with "
                             "fit_cox(..., id=) or pass one label per row, collapse=labels")
        return np.asarray(data.id_labels)[data.to_caller_order(data.ids)]
    return collapse


def cox_residuals(fit, kind, *, collapse=None, weighted=None):
    """R's ``residuals(fit, type = kind, collapse, weighted)`` of a Cox fit.

    The function ``ci.residuals`` calls for a :class:`~coxinfluence.CoxFit` (module
    docstring for the formulas).

    Parameters
    ----------
    fit : CoxFit
        The fit.
    kind : str
        One of "martingale", "deviance", "score", "schoenfeld",
        "scaledsch", "dfbeta", "dfbetas", "partial".
    collapse : bool or array_like, optional
        True: sum per subject (``fit_cox(..., id=)``); or one label per row.
    weighted : bool, optional
        Multiply by the case weights; default R's (dfbeta and dfbetas only).

    Returns
    -------
    pandas.Series or pandas.DataFrame
        Per row (caller's index), per subject when collapsed, per event for the
        Schoenfeld kinds.

    Examples
    --------
    >>> from coxinfluence.diagnostics.cox_residuals import cox_residuals
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> cox_residuals(fit, "deviance").round(3).head(2)
    0    1.771
    1    1.577
    Name: deviance, dtype: float64
    """
    data = fit.data
    if weighted is None:
        weighted = kind in ("dfbeta", "dfbetas")
    if collapse is not None and collapse is not False and kind in _PER_EVENT:
        raise InputError(f"{kind} residuals have one row per event: collapse= is for the "
                         "per-row kinds")
    if kind in _PER_EVENT:
        return _per_event(fit, kind, weighted)
    w = data.to_caller_order(data.weights)
    columns = list(data.columns)
    index = caller_index(data)
    if kind in ("martingale", "deviance", "partial"):
        values = data.to_caller_order(martingale_sorted(fit))
        if weighted:
            values = values * w
        if kind == "partial":
            X = data.X + data.X_center
            values = values[:, None] + data.to_caller_order((X - r_means(data, X)) * fit.coef)
            out = pd.DataFrame(values, index=index, columns=columns)
        else:
            out = pd.Series(values, index=index, name=kind)
    else:
        U = data.to_caller_order(score_residuals_sorted(fit.risk_sets, fit.coef))
        if kind in ("dfbeta", "dfbetas"):
            var = fit.var
            U = U @ var
            if kind == "dfbetas":
                U = U / np.sqrt(np.diag(var))
        if weighted:
            U = U * w[:, None]
        out = pd.DataFrame(U, index=index, columns=columns)
    if collapse is not None and collapse is not False:
        labels = _labels(fit, collapse)
        if kind == "deviance":
            status = collapse_rows(pd.Series(data.to_caller_order(data.event), index=index),
                                   labels, index).to_numpy()
            out = collapse_rows(out, labels, index)
            return _deviance(out, status)
        out = collapse_rows(out, labels, index)
        if isinstance(out, pd.Series):
            out.name = kind
        return out
    if kind == "deviance":
        return _deviance(out, data.to_caller_order(data.event))
    return out


def _deviance(mr, status):
    m = mr.to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        logterm = np.where(status == 0, 0.0, status * np.log(np.where(status == 0, 1.0,
                                                                       status - m)))
    dev = np.sign(m) * np.sqrt(-2.0 * (m + logterm))
    return pd.Series(dev, index=mr.index, name="deviance")


def _per_event(fit, kind, weighted):
    data = fit.data
    r = schoenfeld_sorted(fit)
    order = event_order(data)
    r = r[order]
    ev = data.event_rows[order]
    if weighted:
        r = r * data.weights[ev][:, None]
    if kind == "scaledsch":
        r = r @ fit.var * ev.size + fit.coef
    index = pd.Index(data.time[ev], name="time")
    return pd.DataFrame(r, index=index, columns=list(data.columns))


register_residuals(CoxFit, COX_KINDS, cox_residuals, model="Cox")

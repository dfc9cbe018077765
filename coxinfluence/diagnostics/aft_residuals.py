"""AFT residuals, as R's ``residuals.survreg`` (survival 3.x).

From each row's log-likelihood ``g`` (without the Jacobian of the log time, as R's
``deriv``) and its derivatives in the linear predictor ``eta`` and ``s = log(sigma)``
(:meth:`coxinfluence.likelihood.aft.AFTLikelihood.row_derivatives`):

- response ``exp(center) - exp(eta)``, ``center`` the log time (or, for an interval, the
  centre R's distribution gives it);
- working ``-g_eta / g_eta,eta``; deviance ``sign(working) sqrt(2 (g_sat - g))``, ``g_sat``
  the saturated model's log-likelihood of the row (R's ``dist$deviance``);
- dfbeta ``score V``, dfbetas ``score V / se``, ``score = (g_eta x, g_s e_stratum)``
  per unit of case weight, ``V`` the model-based covariance;
- ldcase ``score' V score``, ldresp ``r' V r`` with ``r = sigma (g_eta,eta x,
  g_eta,s e_stratum)``, ldshape ``q' V q`` with ``q = (g_eta,s x, g_s,s e_stratum)``
  (Escobar and Meeker's local influence of case weights, responses and the scale).

``weighted=True`` multiplies by the case weights (R's default is False for every type).
survival 3.5.3's ``residuals.survreg`` has the sign of an interval-censored row's
derivative in ``log(sigma)`` flipped (``tests/test_aft.py``); ours are the derivatives of
the likelihood that was fitted, so on interval rows dfbeta's scale column and the
local-influence kinds differ from that version's.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError
from coxinfluence.diagnostics.registry import collapse_rows, register_residuals
from coxinfluence.likelihood.aft import DISTRIBUTIONS, EXACT, INTERVAL
from coxinfluence.models.aft import AFTFit

__all__ = ["aft_residuals"]

AFT_KINDS = ("response", "deviance", "working", "dfbeta", "dfbetas", "ldcase", "ldresp",
             "ldshape")


def _saturated(dist, kind, y, y2, sigma):
    """R's ``survreg.distributions[[dist]]$deviance``: each row's centre (log scale) and
    the saturated log-likelihood."""
    family = DISTRIBUTIONS[dist]
    interval = kind == INTERVAL
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        width = np.where(interval, (y2 - y) / sigma, 1.0 if family == "extreme" else 0.0)
        if family == "extreme":
            temp = width / np.expm1(width)
            center = np.where(interval, y - np.log(temp), y)
            best = -temp + np.log(-np.expm1(-np.exp(width)))
            exact = -(1.0 + np.log(sigma))
        elif family == "gaussian":
            from scipy.special import ndtr  # on use: import coxinfluence imports no scipy

            center = np.where(interval, (y + y2) / 2, y)
            best = np.log(2 * ndtr(width / 2) - 1)
            exact = -np.log(np.sqrt(2 * np.pi) * sigma)
        else:
            center = np.where(interval, (y + y2) / 2, y)
            t2 = np.exp(width / 2)
            best = np.log((t2 - 1) / (t2 + 1))
            exact = -np.log(4 * sigma)
    loglik = np.where(kind == EXACT, exact, np.where(interval, best, 0.0))
    return center, loglik


def _row_parts(fit):
    data = fit.data
    der = {k: v[0] for k, v in fit.likelihood.row_derivatives(fit.coef, order=2).items()}
    eta = data.X @ fit.coef[:data.p]
    sigma = fit.scale[data.strata] if not data.fixed_scale else np.ones(data.n)
    g = der["l"] + data.y * (data.kind == EXACT)        # R's g: no Jacobian of log T
    return der, eta, sigma, g


def _by_stratum(values, data):
    out = np.zeros((data.n, data.n_strata))
    out[np.arange(data.n), data.strata] = values
    return out


def _quadratic(vectors, V):
    return np.einsum("ij,jk,ik->i", vectors, V, vectors)


def aft_residuals(fit, kind, *, collapse=None, weighted=None):
    """R's ``residuals(fit, type = kind, collapse, weighted)`` of an AFT fit.

    The function ``ci.residuals`` calls for an :class:`~coxinfluence.AFTFit` (module
    docstring for the formulas).

    Parameters
    ----------
    fit : AFTFit
        The fit.
    kind : str
        One of "response", "deviance", "working", "dfbeta", "dfbetas",
        "ldcase", "ldresp", "ldshape".
    collapse : bool or array_like, optional
        True: sum per subject (``fit_aft(..., id=)``); or one label per row.
    weighted : bool, optional
        Multiply by the case weights (R's default: False).

    Returns
    -------
    pandas.Series or pandas.DataFrame
        Per row (caller's index), one column per parameter for dfbeta and
        dfbetas; per label when collapsed.

    Examples
    --------
    >>> from coxinfluence.diagnostics.aft_residuals import aft_residuals
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_aft(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> aft_residuals(fit, "ldcase").round(4).head(2)
    0    0.0203
    1    0.0197
    Name: ldcase, dtype: float64
    """
    data = fit.data
    der, eta, sigma, g = _row_parts(fit)
    has_entry = data.entry is not None and np.isfinite(data.entry).any()
    if kind in ("response", "deviance") and has_entry:
        raise InputError(f"{kind} residuals are not defined with delayed entry (R's "
                         "survreg has none); the other kinds are")
    index = fit.index if fit.index is not None else pd.RangeIndex(data.n)
    scales = not data.fixed_scale
    V = fit.var
    if kind in ("response", "deviance"):
        center, best = _saturated(data.dist, data.kind, data.y, data.y2, sigma)
        if kind == "response":
            values = np.exp(center) - np.exp(eta)
        else:
            work = -der["e"] / der["ee"]
            values = np.sign(work) * np.sqrt(np.maximum(2 * (best - g), 0.0))
    elif kind == "working":
        values = -der["e"] / der["ee"]
    else:
        X = data.X
        if kind in ("dfbeta", "dfbetas", "ldcase"):
            vec = der["e"][:, None] * X
            extra = der["s"]
        elif kind == "ldresp":
            vec = (der["ee"] * sigma)[:, None] * X
            extra = der["es"] * sigma
        else:                                             # ldshape
            vec = der["es"][:, None] * X
            extra = der["ss"]
        if scales:
            vec = np.hstack([vec, _by_stratum(extra, data)])
        if kind in ("dfbeta", "dfbetas"):
            values = vec @ V
            if kind == "dfbetas":
                values = values / np.sqrt(np.diag(V))
        else:
            values = _quadratic(vec, V)
    if weighted:
        values = values * (data.weights if values.ndim == 1 else data.weights[:, None])
    if values.ndim == 2:
        out = pd.DataFrame(values, index=index, columns=list(fit.columns))
    else:
        out = pd.Series(values, index=index, name=kind)
    if collapse is not None and collapse is not False:
        labels = collapse
        if collapse is True:
            if not fit.has_subjects:
                raise InputError("collapse=True sums per subject, but the fit has none: fit "
                                 "with fit_aft(..., id=) or pass one label per row")
            labels = np.asarray(fit.id_labels)[fit.ids]
        out = collapse_rows(out, labels, index)
        if isinstance(out, pd.Series):
            out.name = kind
    return out


register_residuals(AFTFit, AFT_KINDS, aft_residuals, model="AFT")

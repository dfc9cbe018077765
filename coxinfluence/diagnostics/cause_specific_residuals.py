"""Residuals of cause-specific Cox models (``ci.residuals`` of a ``CauseSpecificFit``).

Each cause's model is a Cox model (:func:`~coxinfluence.fit_cause_specific`), and its
residuals are R's ``residuals.coxph`` of that model (``residuals(csc$models[[k]], type)``),
computed by :func:`coxinfluence.diagnostics.cox_residuals.cox_residuals`. Per row (or per
unit with ``collapse``) the causes' residuals stand side by side: a column per cause
(``"cause k"``) for one number per row (martingale), ``"cause k: covariate"`` for one per
covariate (score, dfbeta, dfbetas, partial); the per-event kinds (schoenfeld) are the
causes' tables one under the other, indexed by (cause, time). The deviance and scaled
Schoenfeld residuals (which switch on the report's Model checks, written for one model)
are each cause's model's: ``ci.residuals(fit.models[k], "deviance")``.
"""
from __future__ import annotations

import pandas as pd

from coxinfluence.diagnostics.cox_residuals import cox_residuals
from coxinfluence.diagnostics.registry import register_residuals
from coxinfluence.models.cause_specific import CauseSpecificFit

__all__ = ["CAUSE_SPECIFIC_KINDS", "cause_specific_residuals"]

#: the kinds, the first the default
CAUSE_SPECIFIC_KINDS = ("martingale", "score", "schoenfeld", "dfbeta", "dfbetas", "partial")


def cause_specific_residuals(fit, kind, *, collapse=None, weighted=None):
    """Every cause's ``residuals.coxph`` side by side (module docstring).

    Parameters
    ----------
    fit : CauseSpecificFit
        The fit.
    kind : str
        One of :data:`CAUSE_SPECIFIC_KINDS`.
    collapse : bool or array_like, optional
        As ``ci.residuals``: sum per subject (``True``: the fit's ``id=``) or per label.
    weighted : bool, optional
        As ``ci.residuals``.

    Returns
    -------
    pandas.DataFrame
        The residuals.

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> time, status = rng.exponential(size=60), rng.integers(0, 3, 60)
    >>> fit = ci.fit_cause_specific(pd.DataFrame({"x": rng.normal(size=60)}), time, status)
    >>> ci.residuals(fit, kind="dfbeta").columns.tolist()
    ['cause 1: x', 'cause 2: x']
    """
    parts = [cox_residuals(m, kind, collapse=collapse, weighted=weighted)
             for m in fit.models]
    if kind == "schoenfeld":
        return pd.concat(parts, keys=fit.causes, names=["cause"])
    named = []
    for k, part in zip(fit.causes, parts):
        if isinstance(part, pd.Series):
            named.append(part.rename(f"cause {k}"))
        else:
            named.append(part.add_prefix(f"cause {k}: "))
    return pd.concat(named, axis=1)


register_residuals(CauseSpecificFit, CAUSE_SPECIFIC_KINDS, cause_specific_residuals,
                   model="cause-specific Cox")

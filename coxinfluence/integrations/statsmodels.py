"""statsmodels ``PHRegResults`` -> the same Cox model as a :class:`coxinfluence.CoxFit`.

Reads the model's ``exog`` (with ``exog_names``), ``endog`` (times), ``status``,
``strata`` and ``ties`` (statsmodels' default is ``"breslow"``; R's and lifelines' is
Efron). statsmodels' Breslow score residuals agree with R; its Efron ones differ slightly
(docs/conventions.md, "Oracles"), so we always compute our own. Row labels come from the
model's data (``model.data.row_labels``: the DataFrame index for formula or pandas input).

Not supported (a clear ``ValueError``): ``offset`` and ``entry`` (delayed entry).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.models.cox import fit_cox

from . import Resolved, attach_columns, check_agreement


def resolve_statsmodels(results, data=None) -> Resolved:
    model = getattr(results, "model", None)
    if model is None or type(model).__name__ != "PHReg":
        raise TypeError(f"unsupported statsmodels object {type(results).__name__}; pass the "
                        "results of statsmodels PHReg(...).fit()")
    if getattr(model, "offset", None) is not None:
        raise ValueError("PHReg models with an offset are not supported")
    names = list(model.exog_names)
    labels = getattr(model.data, "row_labels", None)
    index = pd.Index(labels) if labels is not None else pd.RangeIndex(len(model.endog))
    X = pd.DataFrame(np.asarray(model.exog, dtype=np.float64), index=index, columns=names)
    time = pd.Series(np.asarray(model.endog, dtype=np.float64), index=index, name="time")
    status = pd.Series(np.asarray(model.status, dtype=np.float64), index=index, name="event")
    strata = None if model.strata is None else pd.Series(np.asarray(model.strata), index=index)
    entry = getattr(model, "entry", None)
    start = None
    if entry is not None and np.any(np.asarray(entry) != 0):
        start = pd.Series(np.asarray(entry, dtype=np.float64), index=index, name="entry")
    fit = fit_cox(X, time, status, start=start, strata=strata, ties=model.ties,
                  init=np.asarray(results.params, dtype=np.float64))
    check_agreement(fit, results.params, "statsmodels")
    frame = X.copy()
    if start is not None:
        frame["entry"] = start
    frame["time"] = time
    frame["event"] = status
    if strata is not None:
        frame["strata"] = strata
    if data is not None:
        frame = attach_columns(frame, data, len(frame))
    return Resolved(fit, frame, "statsmodels")

"""statsmodels ``PHRegResults`` -> the same Cox model as a :class:`coxinfluence.CoxFit`.

Reads the model's ``exog`` (with ``exog_names``), ``endog`` (times), ``status``,
``strata``, ``entry`` and ``ties`` (statsmodels' default is ``"breslow"``; R's and
lifelines' is Efron). statsmodels' Breslow score residuals agree with R; its Efron ones
differ slightly (docs/conventions.md, "Oracles"), so we always compute our own. Row labels
come from the model's data (``model.data.row_labels``: the DataFrame index for formula or
pandas input).

Delayed entry (``PHReg(..., entry=...)``) follows statsmodels' own convention, not R's: a
row is at risk on ``[entry, time]``, at its entry time too (statsmodels' source: "In
Stata, this is entry >= time, in R it is >"; R and lifelines use ``(start, stop]``). The
fit is built with ``at_risk_at_entry=True``, so the likelihood, every influence function
and the exact refits are statsmodels' own: a row entering at an event time counts in that
event's risk set (Rossi on the age scale, integer ages: 99 such rows).

Survival targets use statsmodels' baseline hazard increments, ``d_g / S0_g`` at every
event time (R's ``ctype = 1``, also for ``ties="efron"``: the fit's ``ctype``).
statsmodels' ``predict(pred_type="surv")`` steps its cumulative hazard one event time
late (``np.cumsum(h0) - h0`` in ``baseline_cumulative_hazard``), which we do not copy:
our ``S(t | x)`` at ``t`` is its prediction at the first event time after ``t``.

Not supported (a clear ``ValueError``): ``offset``.
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
    params = np.asarray(results.params, dtype=np.float64)
    fit = fit_cox(X, time, status, start=start, strata=strata, ties=model.ties, init=params,
                  at_risk_at_entry=True)
    fit.ctype = 1                  # statsmodels' baseline hazard: d_g / S0_g (module doc)
    check_agreement(fit, params, "statsmodels",
                    diagnose=lambda: _diagnose_mismatch(results, fit, start, time, status,
                                                        strata))
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


def _diagnose_mismatch(results, fit, start, time, status, strata):
    """Why statsmodels' coefficients are not our refit of the model's own data: the causes
    we can check, in one sentence (for :func:`check_agreement`)."""
    model = results.model
    params = np.asarray(results.params, dtype=np.float64)
    found = []
    try:
        score = np.asarray(model.score(params), dtype=np.float64)
        hess = np.asarray(model.hessian(params), dtype=np.float64)
        step = -np.linalg.solve(hess, score)
    except Exception:                               # noqa: BLE001 (a diagnosis only)
        step = None
    from . import agreement_tolerance
    tol = agreement_tolerance(fit)
    if step is not None and np.isfinite(step).all() and (np.abs(step) > tol).any():
        j = int(np.argmax(np.abs(step) / tol))
        found.append(f"statsmodels' fit had not converged on its own likelihood (a Newton "
                     f"step from its coefficients moves {fit.columns[j]!r} by {step[j]:.3g}); "
                     "fit it to convergence (e.g. PHReg(...).fit(maxiter=...))")
    else:
        ll_sm = float(model.loglike(params))
        ll_ours = float(-fit.objective(params[None, :])[0])
        found.append(f"statsmodels' coefficients maximise its own likelihood, and its log "
                     f"likelihood there is {ll_sm:.10g}, ours on the same data {ll_ours:.10g}")
    found.append(f"ties {model.ties!r} were used for both")
    if start is not None:
        s_codes = (np.zeros(len(time), dtype=np.intp) if strata is None
                   else pd.factorize(strata)[0])
        ev = status.to_numpy() > 0
        event_times = set(zip(s_codes[ev], time.to_numpy()[ev]))
        at_event = sum((c, t) in event_times for c, t in zip(s_codes, start.to_numpy()))
        found.append(f"{at_event} row(s) enter at an event time of their stratum, counted at "
                     "risk at it (statsmodels' and Stata's convention, which we follow; R's "
                     "and lifelines' (start, stop] would not count them)")
    if strata is not None:
        found.append(f"{pd.Series(strata).nunique()} strata")
    found.append("no offset (offsets are refused)")
    return "; ".join(found)

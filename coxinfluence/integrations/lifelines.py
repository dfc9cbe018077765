"""lifelines ``CoxPHFitter`` -> the same Cox model as a :class:`coxinfluence.CoxFit`.

lifelines does not keep its training DataFrame, so pass it (``ci.influence(cph, df)``).
We rebuild the design exactly as lifelines does (``cph.regressors.transform_df``, which
covers formulas and all-columns models), with its duration, event, weights and strata
columns, and refit with Efron ties (lifelines' only tie method).

lifelines standardises the covariates internally but reports ``params_`` on the original
scale; our fit works on the original scale throughout, so no rescaling is needed. Its own
``compute_residuals(kind="score" / "delta_beta")`` (0.30.3) mixes the two scales and is
wrong for covariates without unit variance (docs/conventions.md, "Oracles"); we compute our own.

``penalizer > 0`` with ``l1_ratio = 0`` (ridge) is handled in closed form
(:mod:`coxinfluence.models.penalized_cox`: the penalty is on lifelines' standardised
scale and scales with n, so deleting a patient changes it too). Not supported (a clear
``ValueError``):
``l1_ratio > 0`` (lifelines smooths |beta| with a sharpness that grows with its iteration
count, so the fitted objective is not a fixed function), non-semiparametric baselines.

Survival targets follow lifelines' own baseline hazard, ``baseline_cumulative_hazard_``:
the events' weight over the risk-set sum at each event time, without Efron's tie
correction (R's ``survfit(ctype = 1)``; R's default for an Efron fit is ``ctype = 2``), so
``S(t | x)`` and its exact leave-one-out changes are ``predict_survival_function``'s and
lifelines' refits' (the fit's ``ctype = 1``). Two things of lifelines' are not copied:
between training durations ``predict_survival_function`` interpolates the cumulative
hazard linearly (ours is the step function, equal at the durations), and with
``entry_col`` its baseline hazard counts every row with a later duration as at risk,
before its entry too (ours keeps the risk sets of the partial likelihood,
``(entry, duration]``).

Units: ``entry_col`` (delayed entry) becomes ``start=``; a ``cluster_col`` makes the
clusters the units of deletion and the model robust (lifelines then reports sandwich
standard errors); a ``CoxTimeVaryingFitter``'s ``id_col`` names the subjects (its rows are
``(start_col, stop_col]`` intervals). ``groups=`` in :func:`coxinfluence.audit.run`
overrides the units. The audit reports the variance lifelines reports (robust with
``robust=True`` or ``cluster_col``, else model-based, also for non-integer weights); the
``CoxFit`` built (``res.fit``) follows R's defaults on its own (``fit.summary()``: robust
for non-integer weights, :attr:`coxinfluence.CoxFit.robust_default`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError
from coxinfluence.models.cox import fit_cox

from . import Resolved, check_agreement, covariate_frame, lifelines_design


def _as_list(v):
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


def resolve_lifelines(cph, data) -> Resolved:
    if type(cph).__name__ != "CoxPHFitter":
        raise TypeError(f"unsupported lifelines model {type(cph).__name__}: coxinfluence "
                        "audits lifelines' CoxPHFitter, CoxTimeVaryingFitter and parametric "
                        "regressions (ParametricRegressionFitter subclasses: WeibullAFTFitter, "
                        "PiecewiseExponentialRegressionFitter, GeneralizedGammaRegressionFitter, "
                        "...)")
    if not hasattr(cph, "params_"):
        raise InputError("the CoxPHFitter is not fitted: call cph.fit(df, ...) first")
    if data is None:
        raise InputError("lifelines does not keep its training data: pass the DataFrame the "
                         "CoxPHFitter was fitted on, ci.influence(cph, df)")
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"data must be the training pandas DataFrame; got {type(data).__name__}")
    if getattr(cph, "baseline_estimation_method", "breslow") != "breslow":
        raise ValueError("baseline_estimation_method must be 'breslow' (semi-parametric), "
                         "'spline' or 'piecewise' (coxinfluence.integrations."
                         "lifelines_parametric)")
    penalized = bool(np.any(np.asarray(cph.penalizer) != 0))
    if penalized and np.any(np.asarray(cph.l1_ratio) != 0):
        raise ValueError(
            f"l1_ratio={cph.l1_ratio!r} is not supported: lifelines smooths the L1 penalty with "
            "a sharpness that grows with its iteration count, so the fitted objective has no "
            "closed form; use l1_ratio=0 (ridge) or penalizer=0")
    duration, event = cph.duration_col, cph.event_col
    entry = getattr(cph, "entry_col", None)
    cluster = getattr(cph, "cluster_col", None)
    strata = _as_list(cph.strata)
    weights = cph.weights_col
    special = ([duration] + _as_list(event) + _as_list(entry) + strata + _as_list(weights)
               + _as_list(cluster))
    raw = covariate_frame(data, special, cph._n_examples, "CoxPHFitter")

    def transform(frame):
        return lifelines_design(cph, frame, "CoxPHFitter")["beta_"].astype(np.float64)

    X = transform(raw)
    X.index = data.index
    X = X[list(cph.params_.index)]
    time = data[duration].astype(np.float64)
    ev = (data[event].astype(np.float64) if event is not None
          else pd.Series(1.0, index=data.index))
    w = data[weights].astype(np.float64) if weights else None
    st = data[strata] if strata else None
    start = data[entry].astype(np.float64) if entry else None
    init = cph.params_.to_numpy(dtype=np.float64)
    if penalized:
        from coxinfluence.data.cox_data import make_cox_data
        from coxinfluence.models.penalized_cox import penalized_fit, ridge_penalty
        penalty = ridge_penalty(X.to_numpy(), cph.penalizer)
        cox_data = make_cox_data(X, time, ev, start=start, weights=w, strata=st, ties="efron")
        fit = penalized_fit(cox_data, init, penalty, "efron")
    else:
        fit = fit_cox(X, time, ev, start=start, weights=w, strata=st, ties="efron", init=init)
    fit.ctype = 1                       # lifelines' baseline hazard (module docstring)
    check_agreement(fit, cph.params_.to_numpy(), "lifelines")
    frame = X.copy()
    if entry:
        frame[entry] = start
    frame[duration] = time
    frame["event" if event is None else event] = ev
    for c in strata + _as_list(weights) + _as_list(cluster):
        frame[c] = data[c]
    return Resolved(fit, frame, "lifelines", transform=transform,
                    groups=None if cluster is None else data[cluster],
                    robust=bool(getattr(cph, "robust", False)) or cluster is not None)


def resolve_lifelines_time_varying(ctv, data) -> Resolved:
    """A fitted ``CoxTimeVaryingFitter`` and its long-format training DataFrame: rows are
    ``(start_col, stop_col]`` intervals of the subjects named by ``id_col`` (the units)."""
    if not hasattr(ctv, "params_"):
        raise InputError("the CoxTimeVaryingFitter is not fitted: call ctv.fit(df, ...) first")
    if not isinstance(data, pd.DataFrame):
        raise InputError("lifelines does not keep its training data: pass the long-format "
                         "DataFrame the CoxTimeVaryingFitter was fitted on, "
                         "ci.influence(ctv, df)")
    if np.any(np.asarray(ctv.penalizer) != 0):
        raise ValueError("penalised CoxTimeVaryingFitter models are not supported")
    strata = _as_list(ctv.strata)
    weights = ctv.weights_col
    special = ([ctv.id_col, ctv.event_col, ctv.start_col, ctv.stop_col] + strata
               + _as_list(weights))
    missing = [c for c in special if c not in data.columns]
    if missing:
        raise InputError(f"data lacks the model's column(s) {missing}")
    cols = list(ctv.params_.index)
    absent = [c for c in cols if c not in data.columns]
    if absent:
        raise InputError(f"data lacks the model's covariate column(s) {absent}")
    X = data[cols].astype(np.float64)
    start = data[ctv.start_col].astype(np.float64)
    stop = data[ctv.stop_col].astype(np.float64)
    ev = data[ctv.event_col].astype(np.float64)
    w = data[weights].astype(np.float64) if weights else None
    st = data[strata] if strata else None
    fit = fit_cox(X, stop, ev, start=start, id=data[ctv.id_col], weights=w, strata=st,
                  ties="efron", init=ctv.params_.to_numpy(dtype=np.float64))
    fit.ctype = 1                       # lifelines' baseline_cumulative_hazard_: no tie correction
    check_agreement(fit, ctv.params_.to_numpy(), "lifelines")
    frame = X.copy()
    for c in [ctv.start_col, ctv.stop_col, ctv.event_col, ctv.id_col] + strata + _as_list(weights):
        frame[c] = data[c]
    return Resolved(fit, frame, "lifelines", robust=bool(getattr(ctv, "robust", False)))

"""The report's curves of the cause-specific and multi-state families (issue 47, item 4),
registered with :func:`coxinfluence.families.curves.register_curves` when imported
(:mod:`coxinfluence.families` imports this module).

- Cause-specific Cox models (:class:`~coxinfluence.CauseSpecificFit`): the absolute risk
  ``F_k(t | x)`` of the cause ``k`` (the audited ``ci.targets.AbsoluteRisk``'s, else the
  fit's ``cause``, else 1) at every event time of every cause, R's ``predict(CSC, newdata,
  times, cause)``.
- Markov multi-state Cox models (:class:`~coxinfluence.MultiStateFit`): every state's
  occupancy probability ``p_s(t | x)`` at every transition time, R's ``survfit(fit,
  newdata)$pstate`` (from the data's initial distribution, R's ``p0``), a panel per
  state.

The reference patient is the audited target's first patient (``--newdata``'s first row,
or the covariate means the CLI uses by default) when the target is the family's curve,
else the covariate means of the training rows (in the first stratum of a stratified
fit). Each refitted curve is the target's ``refit_values``: the coefficients refitted
without the unit and every baseline hazard re-estimated without it, the exact change the
audit reports for these targets.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.families.cause_specific_targets import AbsoluteRisk
from coxinfluence.families.curves import Curves, register_curves
from coxinfluence.families.multistate_targets import StateProbability
from coxinfluence.models.cause_specific import CauseSpecificFit
from coxinfluence.models.multistate import MultiStateFit, event_grid

__all__ = ["absolute_risk_curves", "state_probability_curves", "reference_patient"]


#: who the reference patient "mean" is
_MEANS = "the covariate means of the training rows"


def reference_patient(result, X_new, strata=None):
    """``(patient (1 row), stratum or None, label)``: the first patient of the audited
    target's ``X_new`` (``strata`` its stratum labels), as a one-row frame or array."""
    if isinstance(X_new, pd.DataFrame):
        patient, label = X_new.iloc[[0]], X_new.index[0]
    else:
        patient = np.atleast_2d(np.asarray(X_new, dtype=np.float64))[:1]
        label = 0
    if strata is None:
        stratum = None
    elif isinstance(strata, (str, bytes, tuple)) or np.ndim(strata) == 0:
        stratum = [strata]                      # one label for every patient
    else:
        stratum = [list(strata)[0]]
    return patient, stratum, str(label)


def _covariate_means(fit):
    """The covariate means of a cause-specific fit's training rows (every cause's
    covariates), one row labelled ``"mean"``, and the first stratum (None unstratified)."""
    means = {}
    for model in fit.models:
        data = model.data
        for j, c in enumerate(model.columns):
            means.setdefault(c, float(np.mean(data.X[:, j] + data.X_center[j])))
    labels = fit.models[0].data.strata_labels
    stratum = [labels[0]] if labels is not None and len(labels) > 1 else None
    return pd.DataFrame(means, index=["mean"]), stratum


def _frame(values, times, panels):
    return pd.DataFrame(np.asarray(values).reshape(len(times), len(panels)),
                        index=pd.Index(times, name="time"), columns=panels)


def absolute_risk_curves(result, theta_loo, codes):
    """The curves part of cause-specific Cox models: ``F_k(t | x)`` of the reference
    patient at 0 and every event time (module docstring).

    Parameters
    ----------
    result : InfluenceResult
        The audit of a :class:`~coxinfluence.CauseSpecificFit`.
    theta_loo : numpy.ndarray, shape (U, d)
        The refitted coefficients (rows ``codes``).
    codes : numpy.ndarray
        The refitted units' positions.

    Returns
    -------
    Curves
        One panel, the cause's absolute risk.
    """
    fit, target = result.fit, result.target
    if isinstance(target, AbsoluteRisk):
        patient, stratum, label = reference_patient(result, target.X_new, target.strata)
        cause, product_limit = target._k(fit), target.product_limit
        note = _MEANS if label.startswith("mean") else ""
    else:
        patient, stratum = _covariate_means(fit)
        label = "mean" if stratum is None else f"mean, stratum {stratum[0]}"
        cause, product_limit = (1 if fit.cause is None else fit.cause), True
        note = _MEANS
    times = np.unique(np.concatenate([[0.0]] + [m.data.time[m.data.event_rows]
                                                for m in fit.models]))
    curve = AbsoluteRisk(patient, times, cause=cause, product_limit=product_limit,
                         strata=stratum)
    panels = [f"F{cause}(t|{label})"]
    full = curve.value(fit, np.asarray(fit.coef)[None, :])[0]
    values = curve.refit_values(fit, theta_loo, result.units)
    labels = result.model.unit_labels
    return Curves(_frame(full, times, panels),
                  {labels[c]: _frame(values[c], times, panels) for c in codes},
                  label, f"the absolute risk of cause {cause} (riskRegression's "
                         f"predict(CSC)) over the event times", ylabel=f"F{cause}(t|x)",
                  patient_note=note)


def state_probability_curves(result, theta_loo, codes):
    """The curves part of multi-state Cox models: every state's ``p_s(t | x)`` of the
    reference patient at 0 and every transition time, a panel per state (module
    docstring).

    Parameters
    ----------
    result : InfluenceResult
        The audit of a :class:`~coxinfluence.MultiStateFit`.
    theta_loo : numpy.ndarray, shape (U, d)
        The refitted coefficients (rows ``codes``).
    codes : numpy.ndarray
        The refitted units' positions.

    Returns
    -------
    Curves
        A panel per state.
    """
    fit, target = result.fit, result.target
    if isinstance(target, StateProbability):
        patient, stratum, label = reference_patient(result, target.X_new, target.strata)
        note = _MEANS if label.startswith("mean") else ""
    else:
        patient = fit.frame[fit.covariates].mean().to_frame("mean").T
        labels = fit.strata_labels
        stratum = [labels[0]] if labels is not None and len(labels) > 1 else None
        label = "mean" if stratum is None else f"mean, stratum {stratum[0]}"
        note = _MEANS
    times = np.unique(np.concatenate([[0.0], event_grid(fit, np.inf)]))
    curve = StateProbability(patient, times, strata=stratum)
    panels = [f"P({s},t|{label})" for s in fit.states]
    full = curve.value(fit, np.asarray(fit.coef)[None, :])[0]
    values = curve.refit_values(fit, theta_loo, result.units)
    labels = result.model.unit_labels
    return Curves(_frame(full, times, panels),
                  {labels[c]: _frame(values[c], times, panels) for c in codes},
                  label, "the probability of being in each state (R's survfit(fit, "
                         "newdata)$pstate, from the data's initial distribution p0) over the "
                         "transition times", ylabel="probability", patient_note=note)


register_curves(CauseSpecificFit, absolute_risk_curves)
register_curves(MultiStateFit, state_probability_curves)

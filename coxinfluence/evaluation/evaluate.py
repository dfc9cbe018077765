"""``ci.evaluate``: a fitted model's performance on a test set, with standard errors."""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.audit.target_base import implementation_of
from coxinfluence.audit.targets import Survival
from coxinfluence.data.followup import warn_beyond_follow_up
from coxinfluence.data.inputs import InputError
from coxinfluence.evaluation import scores
from coxinfluence.evaluation.targets import Concordance
from coxinfluence.evaluation.test_set import (
    check_columns,
    check_times,
    read_test_set,
    test_strata,
)
from coxinfluence.influence_functions.registry import audit_model
from coxinfluence.models.base import normal_quantile

__all__ = ["evaluate"]


def _training_columns(fit):
    """The covariate (and stratum) columns the fit was trained on; None if unknown."""
    data = getattr(fit, "data", None)
    cov = getattr(fit, "covariates", None)
    if cov is None:
        cov = getattr(data, "columns", None)
    if cov is None:
        cov = getattr(fit, "columns", None)
    if cov is None:
        return None
    strata = getattr(data, "strata_names", None) or []
    return [str(c) for c in cov] + [str(c) for c in strata]


def evaluate(model, X_test, time_test, event_test, times, *, data=None, alpha=0.05,
             **options):
    """A fitted model's performance on a test set, with influence-function standard errors.

    The metrics clinical prediction models are judged by, computed from the model's own
    predictions for the test patients (its survival function ``S(t|x)``, its linear
    predictor), as R computes them:

    - ``brier`` at each time: the IPCW Brier score, and ``auc``: the cumulative/dynamic
      AUC of the predicted risk ``1 - S(t|x)``, each weighted by the Kaplan-Meier of the
      test set's censoring; estimates and standard errors equal to
      ``riskRegression::Score(list(risk), Surv(time, event) ~ 1, data = test, times,
      metrics = c("brier", "auc"), cens.model = "km", se.fit = TRUE)``;
    - ``ibs``: the integrated Brier score over ``times`` (Score's ``summary = "ibs"``
      at the last time: left rectangles from 0, divided by the last time; give a fine
      grid), its standard error from the Brier scores' influence functions;
    - ``c_harrell`` and ``c_uno``: ``survival::concordance(fit, newdata = test, timewt =
      "n")`` and ``timewt = "n/G2"`` (risk score: the linear predictor, or for a model
      without one the median survival time, reversed; within strata for a stratified
      Cox model), standard error ``sqrt(var)``.

    A Fine-Gray model (``FineGrayFit``) is scored for competing risks as ``Score(...,
    Hist(time, status) ~ 1, cause = fit's cause)``: the Brier score and the AUC of its
    cumulative incidence ``F(t|x)`` (cases: the cause's events by ``t``; another
    cause's events by ``t`` are controls weighted by ``1 / G(T_i-)``), and the IBS; no
    concordance rows.

    The formulas are in :mod:`coxinfluence.evaluation.scores`. Each metric is also a
    target of the audit (:mod:`coxinfluence.evaluation.targets`): which training
    patients move it.

    Parameters
    ----------
    model : object
        A fitted model with a survival prediction: ``CoxFit``, ``AFTFit``, a lifelines
        Cox or AFT fitter, a scikit-survival Cox estimator (what ``ci.influence``
        accepts).
    X_test : DataFrame or array_like
        The test patients' covariates: the training columns (a DataFrame's are matched by
        name), or for a lifelines formula model the raw frame it takes.
    time_test : array_like
        The test patients' follow-up times (a Series is matched on ``X_test``'s index).
    event_test : array_like
        1 for an event, 0 for a censoring; for a Fine-Gray model the cause (0 censored,
        1, 2, ...).
    times : float or array_like
        The times of the Brier score and the AUC, inside the test set's follow-up (and,
        to score estimates rather than extrapolations, the training data's).
    data : DataFrame, optional
        The training data, for a library model that does not keep it (lifelines), as
        ``ci.influence`` takes it.
    alpha : float, default 0.05
        ``lower`` and ``upper`` are the ``1 - alpha`` Wald interval, clipped to [0, 1]
        (as Score clips it).
    **options
        A family's options (scikit-survival's ``y=``), as ``ci.influence`` takes them.

    Returns
    -------
    pandas.DataFrame
        Columns ``metric``, ``time`` (NaN for the concordances), ``estimate``, ``se``,
        ``lower``, ``upper``; rows ``brier`` at each time, ``auc`` at each time, ``ibs``
        (at the last time), ``c_harrell``, ``c_uno``.

    Raises
    ------
    InputError
        A time at or past the test set's last follow-up time, or before its first event;
        a test set without events; test covariates whose columns are not the training
        ones; outcomes that do not match the test rows.
    TypeError
        A model no family accepts.

    Warns
    -----
    coxinfluence.TargetBeyondFollowUpWarning
        A time past the training follow-up the model rests on (the last event time of
        the training data, of a test patient's stratum; Fine-Gray: the cause's last
        failure time): the scores there are returned, but they score the last plateau
        (Cox, Fine-Gray) or the parametric model's extrapolation (AFT), not an estimate
        from events. The same rule as the predictions and the targets.

    See Also
    --------
    coxinfluence.evaluation.targets.BrierScore : The Brier score as a target of the audit.
    coxinfluence.evaluation.targets.Concordance : The C-index as a target of the audit.

    Examples
    --------
    Train on two thirds of GBSG2, evaluate on the other third:

    >>> from lifelines.datasets import load_gbsg2
    >>> gbsg = load_gbsg2()
    >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
    >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
    >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
    >>> table = ci.evaluate(fit, X[test], gbsg.time[test], gbsg.cens[test],
    ...                     times=[365, 730, 1095])
    >>> table.round(4)
          metric    time  estimate      se   lower   upper
    0      brier   365.0    0.0743  0.0146  0.0458  0.1029
    1      brier   730.0    0.1729  0.0148  0.1439  0.2019
    2      brier  1095.0    0.2054  0.0127  0.1805  0.2303
    3        auc   365.0    0.8029  0.0464  0.7119  0.8938
    4        auc   730.0    0.7473  0.0375  0.6737  0.8208
    5        auc  1095.0    0.7068  0.0395  0.6294  0.7843
    6        ibs  1095.0    0.0824  0.0082  0.0664  0.0984
    7  c_harrell     NaN    0.6849  0.0256  0.6348  0.7351
    8      c_uno     NaN    0.6737  0.0266  0.6217  0.7258
    """
    seam, resolved = audit_model(model, data, **options)
    fit, transform = seam.fit, resolved.transform
    check_columns(X_test, _training_columns(fit) if transform is None else None)
    # a model with a cumulative incidence and no survival (Fine-Gray): competing risks
    incidence = (implementation_of("survival", fit=fit) is None
                 and implementation_of("cumulative_incidence", fit=fit))
    cause = getattr(fit, "cause", 1) if incidence else None
    out = read_test_set(X_test, time_test, event_test, cause=cause)
    t = check_times(times, out)
    coef = np.asarray(fit.coef, dtype=np.float64)[None, :]
    if incidence:
        pred = incidence(X_test, t)
    else:
        pred = Survival(X_test, t)
        if implementation_of("survival", fit=fit) is None:
            raise InputError(f"ci.evaluate needs the model's survival prediction; "
                             f"{type(fit).__name__} has none")
    pred.transform = transform
    values = np.asarray(pred.value(fit, coef), dtype=np.float64).reshape(out.n, t.size)
    notes = [f"ci.evaluate: the Brier score and the AUC at these times (and the IBS) are "
             f"computed from predictions past the training data's follow-up: {note}"
             for note in pred.followup_notes(fit)]
    S = 1.0 - values if incidence else values
    rows = []
    brier_ic = []
    for k, tk in enumerate(t):
        est, ic = scores.brier(out, S[:, k], tk)
        brier_ic.append(ic)
        rows.append(("brier", tk, est, scores.standard_error(ic)))
    for k, tk in enumerate(t):
        est, ic = scores.auc(out, 1.0 - S[:, k], tk)
        rows.append(("auc", tk, est, scores.standard_error(ic)))
    w = scores.ibs_weights(t)
    ibs = float(sum(r[2] * wk for r, wk in zip(rows, w)))
    rows.append(("ibs", t[-1], ibs, scores.standard_error(w @ np.array(brier_ic))))
    for kind in () if incidence else ("harrell", "uno"):
        target = Concordance(X_test, out.time, out.event.astype(int), kind=kind)
        target.transform = transform
        pred, sign = target._with(fit)
        s = target._scores(fit, pred.value(fit, coef), sign)[0]
        est, dfbeta = scores.concordance(out, s, kind, strata=test_strata(fit, X_test))
        rows.append((f"c_{kind}", np.nan, est, float(np.sqrt((dfbeta ** 2).sum()))))
    table = pd.DataFrame(rows, columns=["metric", "time", "estimate", "se"])
    z = normal_quantile(alpha)
    table["lower"] = np.clip(table.estimate - z * table.se, 0.0, 1.0)
    table["upper"] = np.clip(table.estimate + z * table.se, 0.0, 1.0)
    warn_beyond_follow_up(notes)
    return table

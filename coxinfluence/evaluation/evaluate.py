"""``ci.evaluate``: a fitted model's performance on a test set, with standard errors."""
from __future__ import annotations

from typing import NamedTuple

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
    """The covariate and stratum columns the fit was trained on (the fit protocol's
    ``training_columns``, ``models.base.FitProtocol``); None for a
    seam without a fit (``AuditModel.fit`` None)."""
    return None if fit is None else list(fit.training_columns)


def _cause(fit):
    """The cause a competing-risks fit is for (the fit protocol's ``cause``; 1 when the
    fit names none)."""
    return 1 if fit.cause is None else fit.cause


def evaluate(model, X_test, time_test, event_test, times, *, data=None, alpha=0.05,
             tau=None, **options):
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
    - ``ipa`` at each time: the index of prediction accuracy, ``1 - B(t) / B_0(t)`` with
      ``B_0`` the Brier score of Score's null model (the Kaplan-Meier of the test set,
      the same risk for every patient; for competing risks the Aalen-Johansen of the
      cause): Score's ``IPA`` (``summary = "ipa"``). Its ``se``, ``lower`` and ``upper``
      are NaN: Score reports no standard error of the IPA, so there is no reference to
      match (:func:`coxinfluence.compare` gives the difference ``B(t) - B_0(t)`` with
      its standard error, Score's Brier contrast with the null model);
    - ``c_harrell`` and ``c_uno``: ``survival::concordance(fit, newdata = test, timewt =
      "n")`` and ``timewt = "n/G2"`` (risk score: the linear predictor, or for a model
      without one the median survival time, reversed; within strata for a stratified
      Cox model), standard error ``sqrt(var)``; with ``tau``, truncated there:
      ``concordance(..., ymax = tau)``. Counted by sorting (``O(n log n)`` time,
      ``O(n)`` memory), as survival's balanced tree.

    A Fine-Gray model (``FineGrayFit``) is scored for competing risks as ``Score(...,
    Hist(time, status) ~ 1, cause = fit's cause)``: the Brier score and the AUC of its
    cumulative incidence ``F(t|x)`` (cases: the cause's events by ``t``; another
    cause's events by ``t`` are controls weighted by ``1 / G(T_i-)``), and the IBS; no
    concordance rows.

    The formulas are in ``coxinfluence.evaluation.scores``. Each metric is also a
    target of the audit (``coxinfluence.evaluation.targets``): which training
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
    tau : float, optional
        Truncate the concordances at ``tau``: only the pairs whose event time is at most
        ``tau`` count (survival's ``ymax``; Uno's censoring weights still from the
        whole test set); their ``time`` is then ``tau``. The Brier score and the AUC
        are not affected.
    **options
        A family's options (scikit-survival's ``y=``), as ``ci.influence`` takes them.

    Returns
    -------
    pandas.DataFrame
        Columns ``metric``, ``time`` (NaN for the concordances, or ``tau``), ``estimate``,
        ``se``, ``lower``, ``upper``; rows ``brier`` at each time, ``auc`` at each time, ``ibs``
        (at the last time), ``ipa`` at each time (no SE), ``c_harrell``, ``c_uno``.

    Raises
    ------
    InputError
        A time at or past the test set's last follow-up time, or before its first event;
        a test set without events; test covariates whose columns are not the training
        ones; outcomes that do not match the test rows; a ``tau`` that is not a positive
        number, or one before every comparable pair.
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
    coxinfluence.compare : Models compared on one test set (differences with SEs).
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
    0       brier   365.0    0.0743  0.0146  0.0458  0.1029
    1       brier   730.0    0.1729  0.0148  0.1439  0.2019
    2       brier  1095.0    0.2054  0.0127  0.1805  0.2303
    3         auc   365.0    0.8029  0.0464  0.7119  0.8938
    4         auc   730.0    0.7473  0.0375  0.6737  0.8208
    5         auc  1095.0    0.7068  0.0395  0.6294  0.7843
    6         ibs  1095.0    0.0824  0.0082  0.0664  0.0984
    7         ipa   365.0    0.0611     NaN     NaN     NaN
    8         ipa   730.0    0.1343     NaN     NaN     NaN
    9         ipa  1095.0    0.1255     NaN     NaN     NaN
    10  c_harrell     NaN    0.6849  0.0256  0.6348  0.7351
    11      c_uno     NaN    0.6737  0.0266  0.6217  0.7258
    """
    scored = score_model(model, X_test, time_test, event_test, times, data=data,
                         tau=tau, **options)
    rows = [(r.metric, r.time, r.estimate, r.se()) for r in scored.rows]
    # IPA after the IBS: 1 - Brier / the null model's Brier; no SE (Score gives none)
    at = len(scored.times) * 2 + 1
    rows[at:at] = [("ipa", r.time, 1.0 - r.estimate / null.estimate, np.nan)
                   for r, null in zip(scored.rows, scored.null_brier)]
    table = pd.DataFrame(rows, columns=["metric", "time", "estimate", "se"])
    z = normal_quantile(alpha)
    table["lower"] = np.clip(table.estimate - z * table.se, 0.0, 1.0)
    table["upper"] = np.clip(table.estimate + z * table.se, 0.0, 1.0)
    warn_beyond_follow_up(follow_up_warnings("ci.evaluate", scored.notes))
    return table


def follow_up_warnings(caller, notes):
    """The sentences of the warning that scores rest on predictions past the training
    follow-up (:class:`~coxinfluence.TargetBeyondFollowUpWarning`).

    Parameters
    ----------
    caller : str
        Who computed the scores (``"ci.evaluate"``).
    notes : list of str
        The predictions' follow-up notes (:attr:`Scored.notes`).

    Returns
    -------
    list of str
        One sentence per note.
    """
    return [f"{caller}: the Brier score and the AUC at these times (and the IBS) are "
            f"computed from predictions past the training data's follow-up: {note}"
            for note in notes]


class Predicted(NamedTuple):
    """A model's predictions for a test set (:func:`predict_test_set`)."""

    fit: object
    transform: object            # the library's raw frame -> design (None: X_test is it)
    X_test: object               # the test covariates (the model's own columns)
    outcomes: scores.TestOutcomes
    times: np.ndarray
    cause: object                # competing risks: the fit's cause; None otherwise
    survival: np.ndarray         # (n, T): S(t|x), or 1 - F(t|x) for competing risks
    notes: list                  # the predictions' follow-up notes


def predict_test_set(caller, model, X_test, time_test, event_test, times, *, data=None,
                     select=False, **options):
    """The model's own predictions for the test patients at ``times``, after the checks
    every test-set score shares (columns, outcomes, times), for :func:`evaluate`,
    :func:`coxinfluence.compare` and :func:`coxinfluence.calibration` (``caller`` names
    it in the errors). A model with a cumulative incidence and no survival (Fine-Gray) is
    read for competing risks, for its fit's cause; ``select`` takes the model's own
    columns from a ``X_test`` DataFrame with more (models compared on one test set)."""
    seam, resolved = audit_model(model, data, **options)
    fit, transform = seam.fit, resolved.transform
    names = _training_columns(fit) if transform is None else None
    if select and names is not None and isinstance(X_test, pd.DataFrame):
        X_test = X_test[[c for c in X_test.columns if str(c) in set(names)]]
    check_columns(X_test, names)
    # a model with a cumulative incidence and no survival (Fine-Gray): competing risks
    incidence = (implementation_of("survival", fit=fit) is None
                 and implementation_of("cumulative_incidence", fit=fit))
    cause = _cause(fit) if incidence else None
    out = read_test_set(X_test, time_test, event_test, cause=cause)
    t = check_times(times, out)
    if incidence:
        pred = incidence(X_test, t)
    else:
        pred = Survival(X_test, t)
        if implementation_of("survival", fit=fit) is None:
            raise InputError(f"{caller} needs the model's survival prediction; "
                             f"{type(fit).__name__} has none")
    pred.transform = transform
    coef = np.asarray(fit.coef, dtype=np.float64)[None, :]
    values = np.asarray(pred.value(fit, coef), dtype=np.float64).reshape(out.n, t.size)
    return Predicted(fit, transform, X_test, out, t, cause,
                     1.0 - values if incidence else values, list(pred.followup_notes(fit)))


class MetricRow(NamedTuple):
    """One metric of one model on a test set, with its influence function."""

    metric: str
    time: float
    estimate: float
    influence: np.ndarray
    """Per test patient: Score's IF (``se = sd / sqrt(n)``) or, for a concordance,
    survival's dfbeta (``se = sqrt(sum of squares)``)."""

    def se(self, influence=None):
        """The standard error of this metric (or of ``influence`` on its scale, as the
        difference of two models' influence functions)."""
        ic = self.influence if influence is None else influence
        if self.metric.startswith("c_"):
            return float(np.sqrt((ic ** 2).sum()))
        return float(scores.standard_error(ic))


class Scored(NamedTuple):
    """A model's metrics on a test set (:func:`score_model`)."""

    outcomes: scores.TestOutcomes
    times: np.ndarray
    incidence: bool
    rows: list
    null_brier: list
    notes: list


def score_model(model, X_test, time_test, event_test, times, *, data=None, select=False,
                tau=None, **options):
    """A model's metrics on a test set with their influence functions, as
    :func:`evaluate` reports them (and :func:`coxinfluence.compare` contrasts them).

    Parameters
    ----------
    model, X_test, time_test, event_test, times, data, **options
        As :func:`evaluate` takes them.
    select : bool, default False
        Take the model's own columns from a ``X_test`` DataFrame with more (models
        compared on one test set); else other columns are refused.
    tau : float, optional
        The concordances' truncation time, as :func:`evaluate` takes it.

    Returns
    -------
    Scored
        The test outcomes, the times, whether the model is scored for competing risks,
        the rows (:class:`MetricRow`: ``brier`` at each time, ``auc`` at each time,
        ``ibs``, and for survival models ``c_harrell`` and ``c_uno``), the null model's
        Brier score at each time (a :class:`MetricRow`) and the predictions' follow-up
        notes (:func:`follow_up_warnings`).
    """
    if tau is not None and not (np.ndim(tau) == 0 and float(tau) > 0):
        raise InputError(f"tau must be a positive number; got {tau!r}")
    fit, transform, X_test, out, t, cause, S, notes = predict_test_set(
        "ci.evaluate", model, X_test, time_test, event_test, times, data=data,
        select=select, **options)
    incidence = cause is not None
    coef = np.asarray(fit.coef, dtype=np.float64)[None, :]
    rows = [MetricRow("brier", tk, *scores.brier(out, S[:, k], tk))
            for k, tk in enumerate(t)]
    null = [MetricRow("brier", tk, *scores.brier(out, np.full(out.n, 1.0 - scores.null_risk(
        out, tk)), tk)) for tk in t]
    rows += [MetricRow("auc", tk, *scores.auc(out, 1.0 - S[:, k], tk))
             for k, tk in enumerate(t)]
    w = scores.ibs_weights(t)
    rows.append(MetricRow("ibs", t[-1], float(sum(r.estimate * wk for r, wk in zip(rows, w))),
                          w @ np.array([r.influence for r in rows[:t.size]])))
    if not incidence:       # both kinds in one pass over the pairs (pair_counts)
        target = Concordance(X_test, out.time, out.event.astype(int))
        target.transform = transform
        pred, sign = target._with(fit)
        s = target._scores(fit, pred.value(fit, coef), sign)[0]
        kinds = ("harrell", "uno")
        for kind, (est, dfbeta) in zip(kinds, scores.concordance(
                out, s, kinds, strata=test_strata(fit, X_test), tau=tau)):
            rows.append(MetricRow(f"c_{kind}", np.nan if tau is None else float(tau),
                                  est, dfbeta))
    return Scored(out, t, bool(incidence), rows, null, notes)

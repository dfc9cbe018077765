"""``ci.evaluate``: a fitted model's performance on a test set, with standard errors."""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.audit.targets import Survival
from coxinfluence.data.inputs import InputError
from coxinfluence.evaluation import scores
from coxinfluence.evaluation.targets import Concordance
from coxinfluence.evaluation.test_set import check_columns, check_times, read_test_set
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
      without one the median survival time, reversed), standard error ``sqrt(var)``.

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
        1 for an event, 0 for a censoring.
    times : float or array_like
        The times of the Brier score and the AUC, inside the test set's follow-up.
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

    See Also
    --------
    coxinfluence.targets.BrierScore : The Brier score as a target of the audit.
    coxinfluence.targets.Concordance : The C-index as a target of the audit.

    Examples
    --------
    Train on half of Rossi's data, evaluate on the other half:

    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X, train = rossi[["fin", "age", "prio"]], rossi.index % 2 == 0
    >>> fit = ci.fit_cox(X[train], rossi.week[train], rossi.arrest[train])
    >>> test = ~train
    >>> table = ci.evaluate(fit, X[test], rossi.week[test], rossi.arrest[test],
    ...                     times=[20, 40])
    >>> table.round(4)
          metric  time  estimate      se   lower   upper
    0      brier  20.0    0.0954  0.0130  0.0699  0.1209
    1      brier  40.0    0.1787  0.0150  0.1492  0.2081
    2        auc  20.0    0.6774  0.0568  0.5660  0.7888
    3        auc  40.0    0.6566  0.0409  0.5764  0.7368
    4        ibs  40.0    0.0477  0.0065  0.0350  0.0604
    5  c_harrell   NaN    0.6388  0.0268  0.5864  0.6913
    6      c_uno   NaN    0.6325  0.0277  0.5782  0.6868
    """
    seam, resolved = audit_model(model, data, **options)
    fit, transform = seam.fit, resolved.transform
    check_columns(X_test, _training_columns(fit) if transform is None else None)
    out = read_test_set(X_test, time_test, event_test)
    t = check_times(times, out)
    surv = Survival(X_test, t)
    surv.transform = transform
    coef = np.asarray(fit.coef, dtype=np.float64)[None, :]
    try:
        S = np.asarray(surv.value(fit, coef), dtype=np.float64).reshape(out.n, t.size)
    except ValueError as exc:
        raise InputError(f"ci.evaluate needs the model's survival prediction: {exc}") from None
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
    for kind in ("harrell", "uno"):
        target = Concordance(X_test, out.time, out.event.astype(int), kind=kind)
        target.transform = transform
        pred, sign = target._with(fit)
        s = target._scores(fit, pred.value(fit, coef), sign)[0]
        est, dfbeta = scores.concordance(out, s, kind)
        rows.append((f"c_{kind}", np.nan, est, float(np.sqrt((dfbeta ** 2).sum()))))
    table = pd.DataFrame(rows, columns=["metric", "time", "estimate", "se"])
    z = normal_quantile(alpha)
    table["lower"] = np.clip(table.estimate - z * table.se, 0.0, 1.0)
    table["upper"] = np.clip(table.estimate + z * table.se, 0.0, 1.0)
    return table

"""``ci.compare``: models side by side on one test set, their differences with standard
errors (``riskRegression::Score(..., contrasts = TRUE)``, ``survival::concordance(fit1,
fit2)``).

Each model is scored as :func:`coxinfluence.evaluate` scores it
(:func:`coxinfluence.evaluation.evaluate.score_model`); a difference of two models' metric
has as influence function the difference of theirs, so its standard error is the metric's
own standard error (:meth:`~coxinfluence.evaluation.evaluate.MetricRow.se`) of that
difference: Score's ``sd(IF_m - IF_r) / sqrt(n)`` for the Brier score and the AUC,
survival's ``sqrt(sum (dfbeta_m - dfbeta_r)^2)`` (``= v_mm + v_rr - 2 v_mr`` of the joint
variance) for a concordance.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from coxinfluence.data.followup import warn_beyond_follow_up
from coxinfluence.data.inputs import InputError
from coxinfluence.evaluation.evaluate import follow_up_warnings, score_model
from coxinfluence.models.base import normal_quantile

__all__ = ["compare", "NULL_MODEL"]

NULL_MODEL = "Null model"
"""The name of Score's null model (Kaplan-Meier, or Aalen-Johansen with competing risks,
of the test set), the reference of every model's Brier score."""


def compare(models, X_test, time_test, event_test, times, *, data=None, alpha=0.05,
            **options):
    """Compare models on one test set: differences of their metrics with standard errors.

    Every pair of models, the later one (``model``) against the earlier one
    (``reference``) in the order of ``models``, as R orders them:

    - ``brier`` and ``auc`` at each time: ``riskRegression::Score(list(...), ..., times,
      metrics = c("brier", "auc"), cens.model = "km", contrasts = TRUE, null.model =
      TRUE, se.fit = TRUE, conservative = FALSE)``'s ``$Brier$contrasts`` and
      ``$AUC$contrasts``; the Brier rows also compare each model with Score's ``"Null
      model"`` (the Kaplan-Meier of the test set, with competing risks its Aalen-Johansen
      cumulative incidence, the same prediction for every patient; not in the AUC rows,
      as in Score's);
    - ``c_harrell`` and ``c_uno`` (survival models; ``time`` NaN): the difference of
      ``survival::concordance(fit_r, fit_m, newdata = test, timewt = "n")`` (``"n/G2"``)
      with the standard error from their joint variance, ``sqrt(v_mm + v_rr - 2 v_mr)``;
      the interval and ``p`` are Wald's, as Score's.

    ``delta`` is the model's metric minus the reference's (a Brier score lower, an AUC or
    a C higher: better). Each metric is computed as :func:`coxinfluence.evaluate`
    computes it (its rows are those ``delta`` subtracts), the standard error from the
    difference of the two models' influence functions.

    Parameters
    ----------
    models : dict
        Names (the ``model`` and ``reference`` columns) to fitted models, each a model
        :func:`coxinfluence.evaluate` takes: all survival models (Cox, AFT, library
        models), or all Fine-Gray models for the same cause.
    X_test : DataFrame or array_like
        The test patients' covariates. A DataFrame may hold the columns of every model:
        each model takes its own training columns (and stratum columns).
    time_test : array_like
        The test patients' follow-up times (a Series is matched on ``X_test``'s index).
    event_test : array_like
        1 for an event, 0 for a censoring; for Fine-Gray models the cause (0 censored,
        1, 2, ...).
    times : float or array_like
        The times of the Brier score and the AUC (as :func:`coxinfluence.evaluate`).
    data : DataFrame or dict, optional
        The training data of a library model that does not keep it (lifelines): one
        frame for every model, or a dict of names to frames.
    alpha : float, default 0.05
        ``lower`` and ``upper`` are the ``1 - alpha`` Wald interval of ``delta`` (not
        clipped: a difference may be negative).
    **options
        A family's options (scikit-survival's ``y=``), for every model.

    Returns
    -------
    pandas.DataFrame
        Columns ``metric``, ``time``, ``model``, ``reference``, ``delta``, ``se``,
        ``lower``, ``upper``, ``p`` (two-sided, of ``delta = 0``); rows ``brier`` at each
        time (each model against ``"Null model"``, then every pair), ``auc`` at each
        time (every pair), then ``c_harrell`` and ``c_uno`` (every pair).

    Raises
    ------
    InputError
        ``models`` not a dict of at least one model, a model named ``"Null model"``,
        survival and Fine-Gray models together, Fine-Gray models for different causes;
        and every refusal of :func:`coxinfluence.evaluate`.

    Warns
    -----
    coxinfluence.TargetBeyondFollowUpWarning
        A time past the training follow-up a model rests on (as
        :func:`coxinfluence.evaluate`).

    See Also
    --------
    coxinfluence.evaluate : One model's metrics, with the ``ipa`` rows (Score's IPA).

    Examples
    --------
    A Cox model with two covariates against one with five, on a third of GBSG2:

    >>> from lifelines.datasets import load_gbsg2
    >>> gbsg = load_gbsg2()
    >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
    >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
    >>> small = ci.fit_cox(X.loc[train, ["age", "tsize"]], gbsg.time[train],
    ...                    gbsg.cens[train])
    >>> full = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
    >>> table = ci.compare({"small": small, "full": full}, X[test], gbsg.time[test],
    ...                    gbsg.cens[test], times=[365, 1095])
    >>> table.round(4)
          metric    time  model   reference   delta      se   lower   upper       p
    0      brier   365.0  small  Null model -0.0016  0.0017 -0.0049  0.0017  0.3405
    1      brier   365.0   full  Null model -0.0048  0.0026 -0.0098  0.0002  0.0582
    2      brier   365.0   full       small -0.0032  0.0020 -0.0071  0.0006  0.0989
    3      brier  1095.0  small  Null model -0.0011  0.0055 -0.0120  0.0097  0.8361
    4      brier  1095.0   full  Null model -0.0295  0.0085 -0.0462 -0.0128  0.0005
    5      brier  1095.0   full       small -0.0283  0.0072 -0.0424 -0.0143  0.0001
    6        auc   365.0   full       small  0.2078  0.0689  0.0728  0.3429  0.0026
    7        auc  1095.0   full       small  0.1572  0.0401  0.0786  0.2358  0.0001
    8  c_harrell     NaN   full       small  0.1351  0.0314  0.0737  0.1966  0.0000
    9      c_uno     NaN   full       small  0.1311  0.0307  0.0710  0.1912  0.0000
    """
    if not isinstance(models, Mapping) or not models:
        raise InputError("models must be a dict of names to fitted models (at least one)")
    names = [str(k) for k in models]
    if len(set(names)) < len(names):
        raise InputError(f"the models' names must differ as strings; got {names}")
    if NULL_MODEL in names:
        raise InputError(f"{NULL_MODEL!r} is the name of Score's null model, the reference "
                         "of the Brier scores: give the model another name")
    scored = {}
    for name, fit in zip(names, models.values()):
        frame = data.get(name) if isinstance(data, Mapping) else data
        scored[name] = score_model(fit, X_test, time_test, event_test, times, data=frame,
                                   select=True, **options)
    first = scored[names[0]]
    kinds = {name: (s.incidence, s.outcomes.cause if s.incidence else None)
             for name, s in scored.items()}
    if len(set(kinds.values())) > 1:
        show = {name: (f"Fine-Gray (cause {c})" if inc else "survival")
                for name, (inc, c) in kinds.items()}
        raise InputError(f"the models predict different outcomes, so no metric compares "
                         f"them: {show}")
    pairs = [(names[j], names[i]) for i in range(len(names))
             for j in range(i + 1, len(names))]
    rows = []
    by_metric = {name: _index(s.rows) for name, s in scored.items()}

    def add(metric, time, m_name, r_name, reference=None):
        key = (metric, None if np.isnan(time) else time)
        m = by_metric[m_name][key]
        r = reference if reference is not None else by_metric[r_name][key]
        rows.append((metric, time, m_name, r_name, m.estimate - r.estimate,
                     m.se(m.influence - r.influence)))

    for k, t in enumerate(first.times):
        for m_name in names:
            add("brier", t, m_name, NULL_MODEL, reference=first.null_brier[k])
        for m_name, r_name in pairs:
            add("brier", t, m_name, r_name)
    for t in first.times:
        for m_name, r_name in pairs:
            add("auc", t, m_name, r_name)
    for metric in () if first.incidence else ("c_harrell", "c_uno"):
        for m_name, r_name in pairs:
            add(metric, np.nan, m_name, r_name)
    table = pd.DataFrame(rows, columns=["metric", "time", "model", "reference", "delta",
                                        "se"])
    z = normal_quantile(alpha)
    table["lower"] = table.delta - z * table.se
    table["upper"] = table.delta + z * table.se
    from scipy.stats import norm  # scipy.stats on use: 0.5 s to import

    table["p"] = 2.0 * norm.sf(np.abs(table.delta / table.se))
    warn_beyond_follow_up([w for name, s in scored.items() for w in follow_up_warnings(
        f"ci.compare (model {name!r})", s.notes)])
    return table


def _index(rows):
    """A model's rows by (metric, time), the concordances' time None."""
    return {(r.metric, None if r.metric.startswith("c_") else r.time): r for r in rows}

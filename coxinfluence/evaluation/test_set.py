"""A test set as the metrics read it: validated outcomes, times and covariate columns.

Shared by :func:`coxinfluence.evaluate` and the metric targets
(:mod:`coxinfluence.evaluation.targets`); every refusal is an :class:`~coxinfluence.
InputError` naming the reason.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError, aligned_inputs, as_vector, show_labels
from coxinfluence.evaluation.scores import TestOutcomes

__all__ = ["read_test_set", "check_times", "check_columns", "test_strata"]


def read_test_set(X_test, time_test, event_test, cause=None):
    """The test outcomes, matched to ``X_test``'s rows on the index.

    Parameters
    ----------
    X_test : DataFrame or array_like
        The test patients' covariates (one row each).
    time_test : array_like
        Their follow-up times (finite, non-negative).
    event_test : array_like
        1 for an event, 0 for a censoring; with ``cause``, the event's cause (0
        censored, 1, 2, ...).
    cause : int, optional
        Competing risks: the cause of interest (None: events are 0/1).

    Returns
    -------
    TestOutcomes
        The outcomes in ``X_test``'s row order and the censoring Kaplan-Meier.

    Raises
    ------
    InputError
        Lengths or labels that do not match, times that are not finite and non-negative,
        events other than 0/1, or a test set without events.
    """
    index = X_test.index if isinstance(X_test, pd.DataFrame) else None
    _, given = aligned_inputs(index, {"time_test": time_test, "event_test": event_test})
    n = len(X_test) if index is not None else np.atleast_2d(np.asarray(X_test)).shape[0]
    time = as_vector(given["time_test"], n, "time_test")
    event = as_vector(given["event_test"], n, "event_test")
    if not np.isfinite(time).all() or (time < 0).any():
        raise InputError("time_test must be finite and non-negative")
    if cause is None and not np.isin(event, (0.0, 1.0)).all():
        raise InputError("event_test must be 0 (censored) or 1 (event); for competing "
                         "risks give the cause of interest (cause=)")
    if cause is not None and not ((event >= 0) & (event == np.round(event))).all():
        raise InputError("event_test must be 0 (censored) or a cause 1, 2, ...")
    if n < 2:
        raise InputError(f"the test set needs at least 2 patients; got {n}")
    if not (event == (1 if cause is None else cause)).any():
        raise InputError("the test set has no events"
                         + ("" if cause is None else f" of cause {cause}")
                         + ": no metric is defined")
    return TestOutcomes(time, event.astype(int), cause=1 if cause is None else cause)


def check_times(times, outcomes):
    """The evaluation times, each inside the test set's follow-up.

    Parameters
    ----------
    times : float or array_like
        The times.
    outcomes : TestOutcomes
        The test set.

    Returns
    -------
    numpy.ndarray, shape (T,)
        The times, sorted, without duplicates.

    Raises
    ------
    InputError
        A time that is not finite and positive, one at or past the last follow-up time
        of the test set (no patient is still followed after it, so no control), or one
        before the test set's first event (no case).
    """
    t = np.atleast_1d(np.asarray(times, dtype=np.float64))
    if t.ndim != 1 or t.size == 0:
        raise InputError("times must be one or more numbers")
    if not np.isfinite(t).all() or (t <= 0).any():
        raise InputError(f"times must be finite and positive; got {show_labels(t)}")
    t = np.unique(t)
    last = outcomes.time.max()
    late = t[t >= last]
    if late.size:
        raise InputError(f"time(s) {show_labels([f'{v:g}' for v in late])} at or beyond the "
                         f"test set's follow-up (its last time is {last:g}): no test "
                         "patient is followed past them")
    first = outcomes.time[outcomes.status == outcomes.cause].min()
    early = t[t < first]
    if early.size:
        raise InputError(f"time(s) {show_labels([f'{v:g}' for v in early])} before the "
                         f"test set's first event (at {first:g}): no test patient has "
                         "had an event by then")
    return t


def check_columns(X_test, names):
    """Refuse test covariates whose columns are not the training ones.

    Parameters
    ----------
    X_test : DataFrame or array_like
        The test patients; an array is taken in the training column order.
    names : sequence of str or None
        The training covariate columns (and stratum columns); None: not checked (a
        model whose library builds the design from raw columns).

    Raises
    ------
    InputError
        A DataFrame with columns missing or not among the training ones.
    """
    if names is None or not isinstance(X_test, pd.DataFrame):
        return
    have = [str(c) for c in X_test.columns]
    missing = [c for c in names if c not in have]
    extra = [c for c in have if c not in set(names)]
    if missing or extra:
        parts = ([f"missing {show_labels(missing)}"] if missing else []) + (
            [f"not in the training data {show_labels(extra)}"] if extra else [])
        raise InputError(f"the test covariates' columns are not the training ones "
                         f"({'; '.join(parts)}); the model was fitted on "
                         f"{show_labels(list(names))}")


def test_strata(fit, X_test):
    """The test patients' stratum codes under a stratified Cox fit; None otherwise.

    Parameters
    ----------
    fit : object
        The fitted model.
    X_test : DataFrame or array_like
        The test patients (their stratum columns are read).

    Returns
    -------
    numpy.ndarray of int or None
        One code per test patient (:func:`coxinfluence.models.predictions.cox_strata`).
    """
    if not fit.strata_names:               # the fit protocol's (FitProtocol)
        return None
    from coxinfluence.models.predictions import cox_strata
    m = len(X_test) if isinstance(X_test, pd.DataFrame) else np.atleast_2d(X_test).shape[0]
    return np.asarray(cox_strata(fit, X_test, None, m))


test_strata.__test__ = False        # not a pytest test

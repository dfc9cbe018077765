"""Times past the follow-up: one rule for predictions, targets and ``ci.evaluate``.

A value read at a time past the follow-up that its estimate rests on is returned with a
:class:`TargetBeyondFollowUpWarning`, never silently. The follow-up is the last event
time of the training data (of the patient's stratum): for a Cox model the baseline hazard
has no jump after it, for a Fine-Gray model (the cause's last failure time) neither has
the baseline subdistribution hazard, so the value there is the last plateau carried
forward; for a parametric (AFT) model the value there is the model's extrapolation. The
per-fit limits and sentences are formed in one place,
:func:`coxinfluence.models.predictions.follow_up_notes`, which the ``predict_*``
functions, the targets (``Target.followup_notes``, issued by ``ci.influence``) and
``ci.evaluate`` all read; this module holds the warning and the generic sentence
(:func:`followup_notes`), with no model family in it. It sits in the data layer so that
the predictions (models) can warn; :mod:`coxinfluence.audit.target_base` re-exports it.
"""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np

from coxinfluence.data.inputs import show_labels

__all__ = ["TargetBeyondFollowUpWarning", "followup_notes", "last_by_stratum",
           "warn_beyond_follow_up"]

#: the package's folder: warnings point at the first frame outside it (the caller's code)
_PACKAGE = str(Path(__file__).resolve().parent.parent) + os.sep


class TargetBeyondFollowUpWarning(UserWarning):
    """A time is past the follow-up that the value read there rests on.

    One rule for the values of new patients read at times, warned about, never refused
    (the value is well defined, as R's ``summary(survfit, times, extend = TRUE)`` and
    ``predict.crr`` return it, but it is not estimated from events):

    - ``ci.influence`` with a target of new patients (``ci.targets.Survival``,
      ``ci.targets.CumulativeIncidence``, a metric target), one warning per stratum; the
      same sentences are kept on the result, ``InfluenceResult.target_notes``;
    - the predictions ``predict_survival``, ``predict_cumulative_hazard`` (Cox, AFT) and
      ``predict_cumulative_incidence`` (Fine-Gray), one warning per stratum;
    - ``ci.evaluate``: a Brier score, an AUC or an IBS at a time past the training
      follow-up scores such values (a time at or past the test set's last follow-up time
      is refused with ``InputError`` instead: no test patient is followed there).

    The follow-up is the last event time of the training data (of the patient's
    stratum). For Cox and Fine-Gray models (the cause's last failure time) the baseline
    hazard has no more jumps after it: the value there is the last plateau carried
    forward. For a parametric (AFT) model the event times bound the data the model was
    fitted to: the value there is the model's extrapolation (an event time: an observed
    one, or the upper bound of a left- or interval-censored one). The text names the
    times, the limit (and the stratum) and what the value is.

    See Also
    --------
    coxinfluence.InfluenceResult.target_notes : The warnings' sentences, kept.
    coxinfluence.targets.Target.followup_notes : Where each target writes them.

    Examples
    --------
    Rossi's follow-up ends at week 52; week 60 is past it:

    >>> import warnings
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> target = ci.targets.Survival(X.iloc[:1], times=[30, 60])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = ci.influence(fit, target=target, method="vif")
    >>> [w.category is ci.TargetBeyondFollowUpWarning for w in caught]
    [True]
    >>> print(res.target_notes[0])
    S(t|x) at time 60: past the last event time of the data, 52; the baseline does not
    change after it, so the value there is the last plateau carried forward, not an
    estimate from events

    The prediction at week 60 says the same:

    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     S = fit.predict_survival(X.iloc[:1], [52, 60])
    >>> [w.category is ci.TargetBeyondFollowUpWarning for w in caught]
    [True]
    >>> S.round(3)
    time   52.0   60.0
    0     0.754  0.754
    """


def followup_notes(times, last, codes, patients, *, quantity, events="event",
                   stratum_labels=None, consequence=None):
    """One note per stratum whose new patients have times past its last event time.

    The sentences of :class:`TargetBeyondFollowUpWarning`.

    Parameters
    ----------
    times : array_like, shape (T,)
        The times.
    last : numpy.ndarray, shape (S,)
        The last event time of each stratum code (``-inf``: none).
    codes : array_like of int, shape (P,)
        Each new patient's stratum code.
    patients : sequence
        The new patients' labels.
    quantity : str
        What is read at the times (e.g. ``"S(t|x)"``).
    events : str, default "event"
        What the events are called (e.g. ``"cause-1 failure"``).
    stratum_labels : list, optional
        The strata's labels in code order when the model is stratified (None: one
        stratum).
    consequence : str, optional
        What the value beyond is (default: the last plateau carried forward).

    Returns
    -------
    tuple of str
        One sentence per stratum with times past its last event time; empty if none.
    """
    if consequence is None:
        consequence = ("the baseline does not change after it, so the value there is the "
                       "last plateau carried forward, not an estimate from events")
    times = np.asarray(times, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.intp)
    notes = []
    for s in dict.fromkeys(codes.tolist()):
        late = times[times > last[s]]
        if late.size == 0:
            continue
        when = ", ".join(f"{t:g}" for t in late)
        where = "the data"
        if stratum_labels is not None:
            who = [str(patients[k]) for k in np.flatnonzero(codes == s)]
            where = (f"stratum {show_labels([stratum_labels[s]])} (patients "
                     f"{show_labels(who)})")
        if np.isfinite(last[s]):
            past = f"past the last {events} time of {where}, {last[s]:g}"
        else:
            past = f"past the follow-up of {where}, which has no {events}"
        notes.append(f"{quantity} at time{'s' if late.size > 1 else ''} {when}: {past}; "
                     f"{consequence}")
    return tuple(notes)


def last_by_stratum(times, strata, n_strata):
    """The largest of ``times`` in each stratum code.

    Parameters
    ----------
    times : array_like, shape (k,)
        Times.
    strata : array_like of int, shape (k,)
        The stratum code of each time.
    n_strata : int
        The number of strata, S.

    Returns
    -------
    numpy.ndarray, shape (S,)
        The largest time of each stratum (``-inf`` where none).
    """
    out = np.full(int(n_strata), -np.inf)
    if np.size(times):
        np.maximum.at(out, np.asarray(strata, dtype=np.intp), np.asarray(times, dtype=float))
    return out


def warn_beyond_follow_up(notes):
    """Issue each note as a :class:`TargetBeyondFollowUpWarning` at the caller's line.

    The warning points at the first frame outside the package (the user's call of a
    ``predict_*`` method or function, or of ``ci.evaluate``), however deep the call.

    Parameters
    ----------
    notes : iterable of str
        The sentences (:func:`followup_notes`).
    """
    notes = tuple(notes)
    if not notes:
        return
    level, frame = 2, sys._getframe(1)          # stacklevel 2: the caller of this function
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(
            _PACKAGE):
        level, frame = level + 1, frame.f_back
    for note in notes:
        warnings.warn(note, TargetBeyondFollowUpWarning, stacklevel=level)

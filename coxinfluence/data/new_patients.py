"""New patients, validated once for every prediction and every target of new patients
(:mod:`coxinfluence.models.predictions`, :mod:`coxinfluence.families.cox_targets`): their
covariates as a float64 matrix in the fit's column order with their labels, their
strata as the fit's stratum codes, and the times or probabilities read at.

Conventions:

- ``X_new``: a DataFrame with (at least) the fit's covariate columns, matched by name
  (extra columns, e.g. a stratum column, are ignored); a Series for one patient (its
  ``name`` the label); or an array in the fit's column order (labels 0, 1, ...).
- ``strata``: for a stratified fit, each patient's stratum label as in the training data,
  one label for all or one per patient (a tuple for several stratum columns).
"""
from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError, show_labels

__all__ = ["new_patient_matrix", "stratum_codes", "strata_from_frame", "positive_times",
           "nonnegative_times", "probabilities"]


def new_patient_matrix(X_new, columns, transform=None):
    """``(X, index)``: the new patients as an (m, d) float64 array in the order of
    ``columns`` (the fit's covariates) and their labels (a ``pd.Index``: the frame's index,
    a Series' name, or ``0..m-1`` for an array). ``transform``: a raw frame -> design
    frame (lifelines formula models), used when the frame lacks the columns. Raises a
    ``ValueError`` naming what is wrong (missing or non-numeric columns, the shape, NaN)."""
    cols = list(columns)
    if isinstance(X_new, pd.Series):
        X_new = X_new.to_frame().T.infer_objects()     # a mixed row: its columns typed
    if isinstance(X_new, pd.DataFrame):
        index = X_new.index
        have = [str(c) for c in X_new.columns]
        if set(cols) <= set(have):
            frame = X_new.copy()
            frame.columns = have
            frame = frame[cols]
        elif transform is not None:
            frame = transform(X_new)
        else:
            missing = sorted(set(cols) - set(have))
            raise InputError(f"new patients lack the model's covariate column(s) {missing}")
        non_num = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])
                   and not pd.api.types.is_bool_dtype(frame[c])]
        if non_num:
            raise InputError(f"new patients have non-numeric column(s) {non_num}")
        arr = frame.to_numpy(dtype=np.float64)
    else:
        arr = np.atleast_2d(np.asarray(X_new, dtype=np.float64))
        index = pd.RangeIndex(arr.shape[0])
    if arr.ndim != 2 or arr.shape[1] != len(cols):
        raise InputError(f"new patients must have {len(cols)} covariates {cols}; "
                         f"got shape {arr.shape}")
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        labels = [str(v) for v in index]
        raise InputError(f"new patients contain NaN or infinite values in {int(bad.sum())} "
                         f"row(s): {show_labels([labels[k] for k in np.flatnonzero(bad)])}")
    return arr, index


def stratum_codes(labels, strata, m, what="new patients"):
    """(m,) the stratum code of each of ``m`` new patients from their labels ``strata``
    (module docstring); ``labels``: the fit's stratum labels in code order (None or one
    label: an unstratified fit, for which ``strata`` must be None)."""
    if labels is None or (len(labels) == 1 and strata is None):
        if strata is not None:
            raise InputError(f"strata given for {what}, but the model has no strata")
        return np.zeros(m, dtype=np.intp)
    if strata is None:
        raise InputError(f"the model is stratified: give the stratum of the {what} "
                         f"(strata=..., one of {list(labels)})")
    lookup = {lab: code for code, lab in enumerate(labels)}
    if isinstance(strata, tuple) and strata in lookup:       # one label of several columns
        given = [strata]
    elif isinstance(strata, (list, tuple, np.ndarray, pd.Series, pd.Index)):
        given = list(strata)
    else:
        given = [strata]
    if len(given) == 1 and m > 1:
        given = given * m
    if len(given) != m:
        raise InputError(f"strata has {len(given)} entries for {m} {what}")
    unknown = [g for g in given if not isinstance(g, Hashable) or g not in lookup]
    if unknown:
        raise InputError(f"unknown strata {unknown[:5]} for {what}; the model's strata are "
                         f"{list(labels)}")
    return np.array([lookup[g] for g in given], dtype=np.intp)


def strata_from_frame(X_new, strata, names):
    """``strata`` when given; else, when ``X_new`` is a DataFrame carrying the training
    data's stratum column(s) ``names``, each row's label read from them (a tuple for
    several columns); else None."""
    if strata is None and names and isinstance(X_new, pd.DataFrame) \
            and set(names) <= {str(c) for c in X_new.columns}:
        frame = X_new.rename(columns=str)[list(names)]
        rows = frame.itertuples(index=False, name=None)
        strata = [r[0] if len(names) == 1 else tuple(r) for r in rows]
    return strata


def positive_times(times):
    """``times`` as a non-empty 1-D float64 array of finite positive numbers (a copy)."""
    t = np.array(times, dtype=np.float64, ndmin=1)
    if t.ndim != 1 or t.size == 0 or not np.isfinite(t).all() or (t <= 0).any():
        raise InputError(f"times must be finite positive numbers; got {times!r}")
    return t


def nonnegative_times(times):
    """``times`` as a non-empty 1-D float64 array of finite non-negative numbers."""
    t = np.atleast_1d(np.asarray(times, dtype=np.float64))
    if t.ndim != 1 or t.size == 0 or not np.isfinite(t).all() or (t < 0).any():
        raise InputError(f"times must be finite non-negative numbers; got {times!r}")
    return t


def probabilities(p):
    """``p`` as a non-empty 1-D float64 array of probabilities strictly in (0, 1)."""
    q = np.array(p, dtype=np.float64, ndmin=1)
    if q.ndim != 1 or q.size == 0 or not ((q > 0) & (q < 1)).all():
        raise InputError(f"p must be probabilities strictly between 0 and 1; got {p!r}")
    return q

"""Checks and conversions of caller input: float64 matrices and vectors, labels, strata,
and the error that names the problem (:class:`InputError`, ``ci.InputError``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.numerics.rows import all_finite


class InputError(ValueError):
    """Invalid input to any model or function of the package, a ``ValueError`` naming the problem.

    Raised for the data of :func:`~coxinfluence.fit_cox`, :func:`~coxinfluence.fit_aft`
    and :func:`~coxinfluence.fit_fine_gray` (NaN or infinite values, events not 0/1,
    non-positive weights, mismatched lengths or pandas indexes, no events, constant or
    collinear columns, ...), and for a lifelines, statsmodels or scikit-survival model
    given with data that are not its training data. ``except ci.InputError`` catches
    them all; being a ``ValueError``, ``except ValueError`` does too.

    ``ci.CoxInputError`` is its former name (Cox inputs): the same class.

    Messages name the rows at fault as every message of the package does: by the pandas
    index label when the caller gave pandas, else by position counted from 0.

    See Also
    --------
    coxinfluence.ConvergenceWarning : Warned when a fit does not converge.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> try:
    ...     ci.fit_cox(X, rossi["week"], rossi["arrest"].replace(1, 2))
    ... except ci.InputError as exc:
    ...     print(exc)
    event must be 0/1 (1 = event, 0 = censored); other values in 114 row(s) (index
    label(s) 0, 1, 2, 6, 12, 14, 15, 16, 22, 35, ...)
    >>> ci.CoxInputError is ci.InputError
    True
    """


#: the former name (Cox inputs), the same class
CoxInputError = InputError


def as_float_matrix(X, name="X", copy=True):
    """Return (float64 copy of X as 2-D array, column names, index or None); with
    ``copy=False`` a float64 ``X`` is returned as is (a view), for a caller that only
    reads it and makes its own copy (:func:`build_cox_data` gathers the rows into a new
    array)."""
    index = None
    columns = None
    if isinstance(X, pd.DataFrame):
        index = X.index
        if X.columns.has_duplicates:
            dup = list(X.columns[X.columns.duplicated()].unique())
            raise CoxInputError(f"{name} has duplicated column names {dup}")
        columns = [str(c) for c in X.columns]
        non_numeric = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])
                       and not pd.api.types.is_bool_dtype(X[c])]
        if non_numeric:
            raise CoxInputError(f"{name} has non-numeric columns: {non_numeric}; encode them "
                                "(e.g. pandas.get_dummies(..., drop_first=True)) first")
        arr = X.to_numpy(dtype=np.float64, copy=copy)
    elif isinstance(X, pd.Series):
        index = X.index
        columns = [str(X.name) if X.name is not None else "x0"]
        arr = X.to_numpy(dtype=np.float64, copy=copy)[:, None]
    else:
        try:
            arr = np.array(X, dtype=np.float64, copy=copy or None)
        except (TypeError, ValueError) as exc:
            raise CoxInputError(f"{name} must be numeric: {exc}") from None
        if arr.ndim == 1:
            arr = arr[:, None]
    if arr.ndim != 2:
        raise CoxInputError(f"{name} must be 2-D (n rows, d covariates); got shape {arr.shape}")
    if columns is None:
        columns = [f"x{j}" for j in range(arr.shape[1])]
    return arr, columns, index


def aligned(v, index, name):
    """``v`` with its rows in the order of ``index`` when it is a pandas object with the
    same labels in another order (pandas inputs are matched on the index, never paired by
    position); unchanged when it is not pandas or already in that order."""
    if not isinstance(v, (pd.Series, pd.DataFrame)) or v.index.equals(index):
        return v
    if len(v.index) != len(index):
        return v                      # the length check names the problem
    if v.index.has_duplicates or not v.index.isin(index).all():
        missing = show_labels(index[~index.isin(v.index)], limit=5)
        raise CoxInputError(f"{name}'s index does not match X's index (labels of X missing "
                            f"from {name}: {missing}); pandas inputs are matched on the "
                            "index: give them the same labels, or pass arrays")
    return v.reindex(index)


def aligned_inputs(index, inputs):
    """``(index, inputs)``: the index results are keyed by (X's, else the first pandas
    input's, else None) and the inputs (a dict name -> value) matched to it on the index,
    never by position (:func:`aligned`); duplicate labels are an error."""
    if index is None:
        index = next((v.index for v in inputs.values()
                      if isinstance(v, (pd.Series, pd.DataFrame))), None)
    if index is None:
        return None, inputs
    if index.has_duplicates:
        dup = show_labels(index[index.duplicated()].unique())
        raise CoxInputError(f"duplicate index labels {dup}: results are keyed by the "
                            "index, so each row needs its own label (reset_index() first)")
    return index, {k: aligned(v, index, k) for k, v in inputs.items()}


def as_vector(v, n, name, *, dtype=np.float64):
    if isinstance(v, (pd.Series, pd.Index)):
        v = v.to_numpy()
    try:
        arr = np.array(v, dtype=dtype, copy=True)
    except (TypeError, ValueError) as exc:
        raise CoxInputError(f"{name} must be numeric: {exc}") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise CoxInputError(f"{name} must be 1-D; got shape {arr.shape}")
    if arr.shape[0] != n:
        raise CoxInputError(f"{name} has length {arr.shape[0]} but X has {n} rows")
    return arr


def show_labels(values, limit=10):
    """``values`` as a message shows them: plain Python scalars (``3``, ``'a'``; never
    ``np.int64(3)``), at most ``limit``, then "..."."""
    values = list(values)
    shown = [repr(v.item() if isinstance(v, np.generic) else v) for v in values[:limit]]
    return ", ".join(shown) + (", ..." if len(values) > limit else "")


def bad_rows(mask, index=None):
    """The rows ``mask`` (caller's order) as every message of the package names rows: by
    the pandas index label when the caller gave pandas (``index``), else by position
    counted from 0, and said so."""
    rows = np.flatnonzero(mask)
    if index is not None:
        return f"{rows.size} row(s) (index label(s) {show_labels(index[rows])})"
    return f"{rows.size} row(s) (position(s) {show_labels(rows)}, counted from 0)"


def check_event_indicator(e, index=None, censored="censored"):
    """Events must be 0/1 (1 = event, 0 = ``censored``).

    An event column coded 1/2, R's ``Surv`` convention (1 = censored, 2 = event), is named
    as such; other values are named by their rows (:func:`bad_rows`).

    Parameters
    ----------
    e : numpy.ndarray
        The event indicator, one value per row.
    index : pandas.Index, optional
        The caller's row labels (rows are named by position without it).
    censored : str, default "censored"
        The message's word for 0.

    Raises
    ------
    CoxInputError
        If a value is neither 0 nor 1.
    """
    bad = (e != 0) & (e != 1)
    if not bad.any():
        return
    values = np.unique(e)
    if values.size == 2 and values[0] == 1 and values[1] == 2:
        raise CoxInputError("the event column is coded 1/2 (as R's Surv: 1 = censored, "
                            "2 = event?); recode as 0/1 (event - 1)")
    raise CoxInputError(f"event must be 0/1 (1 = event, 0 = {censored}); other values in "
                        f"{bad_rows(bad, index)}")


def check_finite(arr, name, index=None):
    if arr.ndim == 2 and all_finite(arr):
        return
    bad = ~np.isfinite(arr)
    if bad.any():
        if arr.ndim == 2:
            bad = bad.any(axis=1)
        raise CoxInputError(f"{name} contains NaN or infinite values in {bad_rows(bad, index)}")


def check_positive_weights(w, index=None, units="rows"):
    """Case weights must be positive, as in R's ``coxph``: a :class:`CoxInputError`
    naming the ``units`` (rows, subjects) that are not (a unit is removed by dropping it,
    not by a zero weight)."""
    if (w <= 0).any():
        raise CoxInputError(f"weights must be positive (as in R's coxph); non-positive in "
                            f"{bad_rows(w <= 0, index)}. To remove {units}, drop them")


def encode_strata(strata, n, index=None):
    """Stratum codes 0..S-1 (sorted labels), the labels in code order (scalars, or tuples
    for a DataFrame of several stratum columns) and the stratum column names (a DataFrame's
    columns, a named Series' name); ``None`` for what is not known."""
    if strata is None:
        return np.zeros(n, dtype=np.intp), None, None
    if isinstance(strata, pd.DataFrame):
        if strata.isna().any(axis=None):
            raise CoxInputError("strata contain missing values in "
                                + bad_rows(strata.isna().any(axis=1).to_numpy(), index))
        cols = list(strata.columns)
        codes = strata.groupby(cols, sort=True).ngroup().to_numpy()
        if codes.shape[0] != n:
            raise CoxInputError(f"strata has length {codes.shape[0]} but X has {n} rows")
        first = pd.Series(np.arange(n)).groupby(codes).first().to_numpy()
        rows = strata.iloc[first].itertuples(index=False, name=None)
        labels = tuple(r[0] if len(cols) == 1 else tuple(r) for r in rows)
        return codes.astype(np.intp), labels, tuple(str(c) for c in cols)
    values = pd.Series(np.asarray(strata).ravel() if not isinstance(strata, pd.Series)
                       else strata.to_numpy())
    if values.shape[0] != n:
        raise CoxInputError(f"strata has length {values.shape[0]} but X has {n} rows")
    if values.isna().any():
        raise CoxInputError("strata contain missing values in "
                            + bad_rows(values.isna().to_numpy(), index))
    codes, uniques = pd.factorize(values, sort=True)
    name = strata.name if isinstance(strata, pd.Series) and strata.name is not None else None
    return codes.astype(np.intp), tuple(uniques), None if name is None else (str(name),)


def encode_labels(labels, n, name, index=None):
    """Unit codes 0..U-1 (sorted labels) and the sorted labels, from one label per row."""
    values = labels.to_numpy() if isinstance(labels, (pd.Series, pd.Index)) \
        else np.asarray(labels)
    if values.ndim != 1 or values.shape[0] != n:
        raise CoxInputError(f"{name} must have one label per row ({n}); got shape "
                            f"{values.shape}")
    missing = pd.isna(values)
    if missing.any():
        raise CoxInputError(f"{name} has missing labels in {bad_rows(missing, index)}")
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.intp), pd.Index(uniques, name=name)


def label_text(value) -> str:
    """A label (a stratum, a censoring group, a cause) as text: integer-valued numbers
    without a decimal point (a 0/1 column read as floats is "0", "1", not "0.0", "1.0")."""
    import numbers
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, numbers.Real) and not isinstance(value, bool) \
            and float(value).is_integer():
        return str(int(value))
    return str(value)

"""Messages name rows one way (issue 24 item 5): by the caller's pandas index label when the
input is pandas, else by position counted from 0, and say which; labels appear as plain
Python values, never as numpy reprs (``np.int64(3)``)."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    t = rng.exponential(size=n) + 0.1
    e = (rng.uniform(size=n) < 0.7).astype(float)
    return X, t, e


def _message(fn):
    with pytest.raises(ci.CoxInputError) as info:
        fn()
    return str(info.value)


def test_arrays_name_rows_by_position_from_zero():
    X, t, e = _data()
    X[3, 1] = np.nan
    msg = _message(lambda: ci.fit_cox(X, t, e))
    assert "position(s) 3, counted from 0" in msg
    t2 = t.copy()
    t2[[5, 7]] = -1.0
    assert "position(s) 5, 7, counted from 0" in _message(lambda: ci.fit_cox(_data()[0], t2, e))


def test_pandas_names_rows_by_index_label():
    X, t, e = _data()
    index = pd.Index([f"p{i}" for i in range(len(t))])
    Xf = pd.DataFrame(X, index=index, columns=["a", "b"])
    e2 = pd.Series(e.copy(), index=index)
    e2.iloc[6] = 2.0
    msg = _message(lambda: ci.fit_cox(Xf, pd.Series(t, index=index), e2))
    assert "index label(s) 'p6'" in msg and "position" not in msg
    w = pd.Series(1.0, index=index)
    w.iloc[[2, 9]] = 0.0
    msg = _message(lambda: ci.fit_cox(Xf, pd.Series(t, index=index), pd.Series(e, index=index),
                                      weights=w))
    assert "index label(s) 'p2', 'p9'" in msg


def test_no_numpy_reprs_in_messages():
    X, t, e = _data()
    ids = np.arange(len(t)) // 2                     # two rows per subject, both from 0
    msg = _message(lambda: ci.fit_cox(X, t, e, id=ids))
    assert "overlapping intervals" in msg
    assert "np." not in msg and "int64" not in msg
    assert re.search(r"subject\(s\) 0, 1, 2", msg)
    Xf = pd.DataFrame(X, index=np.arange(len(t)) + 100)
    missing = pd.Series(t, index=np.arange(len(t)) + 200)
    msg = _message(lambda: ci.fit_cox(Xf, missing, e))
    assert "np." not in msg and "missing from time: 100, 101" in msg


def test_undefined_units_warning_names_labels_plainly():
    rng = np.random.default_rng(1)
    n = 30
    X = np.column_stack([rng.normal(size=n), np.r_[1.0, np.zeros(n - 1)]])
    t = rng.exponential(size=n) + 0.1
    e = np.ones(n)
    fit = ci.fit_cox(X, t, e)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ci.exact_loo(fit, progress=False)
    text = " ".join(str(w.message) for w in caught if w.category is ci.LeaveOneOutWarning)
    assert "rows 0" in text and "np." not in text


def test_any_model_family_names_its_undefined_units():
    """The leave-one-out warning is the audit's, for every model behind the seam (here an
    AFT model whose only row with a dummy set cannot be deleted)."""
    rng = np.random.default_rng(1)
    n = 40
    X = np.column_stack([rng.normal(size=n), np.r_[1.0, np.zeros(n - 1)]])
    t = rng.exponential(size=n) + 0.1
    fit = ci.fit_aft(X, t, np.ones(n))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ci.influence(fit, method="exact")
    text = " ".join(str(w.message) for w in caught if w.category is ci.LeaveOneOutWarning)
    assert "(rows 0)" in text and res.flags["undefined"].iloc[0]

"""Bad input gets a clear ValueError naming the problem; inputs are never modified;
pandas indexes are kept; undefined leave-one-out refits are marked, not invented."""

import numpy as np
import pandas as pd
import pytest
from conftest import tied_data

import coxinfluence as ci
from coxinfluence import CoxInputError


def good():
    X, t, e, w, s = tied_data(11, n=40)
    return X, t, e, w, s


@pytest.mark.parametrize("mutate,match", [
    (lambda X, t, e, w: X.__setitem__((3, 1), np.nan), "X contains NaN or infinite values"),
    (lambda X, t, e, w: X.__setitem__((5, 0), np.inf), "X contains NaN or infinite"),
    (lambda X, t, e, w: t.__setitem__(2, np.nan), "time contains NaN"),
    (lambda X, t, e, w: t.__setitem__(4, -1.0), "time must be non-negative"),
    (lambda X, t, e, w: e.__setitem__(1, 2.0), "event must be 0/1"),
    (lambda X, t, e, w: w.__setitem__(0, 0.0), "weights must be positive"),
    (lambda X, t, e, w: w.__setitem__(0, np.nan), "weights contains NaN"),
    (lambda X, t, e, w: e.__setitem__(slice(None), 0.0), "no events"),
])
def test_bad_values_raise_naming_the_problem(mutate, match):
    X, t, e, w, s = good()
    mutate(X, t, e, w)
    with pytest.raises(ValueError, match=match):
        ci.fit_cox(X, t, e, weights=w, strata=s)


def test_error_names_offending_rows():
    X, t, e, w, s = good()
    X[7, 0] = np.nan
    with pytest.raises(ci.CoxInputError, match=r"position\(s\) 7, counted from 0"):
        ci.fit_cox(X, t, e)


def test_shape_problems():
    X, t, e, w, s = good()
    with pytest.raises(ValueError, match="time has length 39 but X has 40 rows"):
        ci.fit_cox(X, t[:-1], e)
    with pytest.raises(ValueError, match="weights has length"):
        ci.fit_cox(X, t, e, weights=w[:-2])
    with pytest.raises(ValueError, match="fewer rows"):
        ci.fit_cox(X[:3], t[:3], np.ones(3))
    with pytest.raises(ValueError, match="ties must be one of"):
        ci.fit_cox(X, t, e, ties="exact")
    with pytest.raises(ValueError, match="non-numeric"):
        ci.fit_cox(pd.DataFrame({"a": ["x"] * 40, "b": X[:, 0]}), t, e)


def test_constant_and_collinear_columns():
    X, t, e, w, s = good()
    Xc = np.column_stack([X, np.full(40, 3.0)])
    with pytest.raises(ValueError, match=r"constant column\(s\): \['x3'\]"):
        ci.fit_cox(Xc, t, e)
    Xl = np.column_stack([X, X[:, 0] - 2 * X[:, 1]])
    with pytest.raises(ValueError, match="collinear columns"):
        ci.fit_cox(Xl, t, e)
    # constant within every stratum is also unidentifiable
    Xs = np.column_stack([X, s.astype(float)])
    with pytest.raises(ValueError, match="within every stratum"):
        ci.fit_cox(Xs, t, e, strata=s)


def test_non_convergence_warns_with_gradient_norm():
    X, t, e, w, s = good()
    with pytest.warns(ci.ConvergenceWarning, match=r"max \|gradient\| = "):
        fit = ci.fit_cox(X, t, e, max_iter=1)
    assert not fit.converged


def test_inputs_are_not_modified():
    X, t, e, w, s = good()
    df = pd.DataFrame(X, columns=["a", "b", "c"], index=[f"p{i}" for i in range(40)])
    copies = [a.copy() for a in (X, t, e, w, s)]
    df_copy = df.copy()
    fit = ci.fit_cox(df, pd.Series(t, index=df.index), e, weights=w, strata=s)
    for f in (ci.reid_influence, ci.vif, ci.newton_loo):
        f(fit)
    ci.exact_loo(fit, progress=False)
    for a, b in zip((X, t, e, w, s), copies):
        assert np.array_equal(a, b)
    pd.testing.assert_frame_equal(df, df_copy)


def test_pandas_index_and_row_order_are_kept():
    X, t, e, w, s = good()
    idx = pd.Index([f"patient-{i}" for i in range(40)][::-1], name="id")
    df = pd.DataFrame(X, columns=["age", "size", "grade"], index=idx)
    fit = ci.fit_cox(df, t, e, weights=w, strata=s)
    plain = ci.fit_cox(X, t, e, weights=w, strata=s)
    for f in (ci.reid_influence, ci.vif, ci.newton_loo,
              lambda fit: ci.exact_loo(fit, progress=False)):
        out = f(fit)
        assert isinstance(out, pd.DataFrame)
        assert out.index.equals(idx) and list(out.columns) == ["age", "size", "grade"]
        assert np.allclose(out.to_numpy(), np.asarray(f(plain)), rtol=1e-12, atol=1e-14)
    assert np.asarray(ci.vif(fit)).shape == (40, 3)


def test_float32_and_int_input_are_converted():
    X, t, e, w, s = good()
    f32 = ci.fit_cox(X.astype(np.float32), t.astype(int), e.astype(bool))
    f64 = ci.fit_cox(X.astype(np.float32).astype(np.float64), t, e)
    assert f32.coef.dtype == np.float64
    assert np.allclose(f32.coef, f64.coef, rtol=1e-12)


def test_removal_that_makes_a_dummy_unidentifiable_is_marked_nan():
    """The only patient with dummy = 1: without it that coefficient does not exist."""
    X, t, e, w, s = tied_data(12, n=60, strata=False, weights=False)
    X[:, 2] = 0.0
    X[10, 2] = 1.0
    e[10] = 1.0
    fit = ci.fit_cox(X, t, e)
    with pytest.warns(ci.LeaveOneOutWarning, match=r"1 row\(s\).*rows 10\b"):
        loo = ci.exact_loo(fit, progress=False)
    assert np.isnan(loo[10, 2])
    # the other coefficients are the refit without the column and without the row
    keep = np.arange(60) != 10
    ref = ci.fit_cox(X[keep][:, :2], t[keep], e[keep])
    assert np.allclose(loo[10, :2], ref.coef, atol=1e-9)
    assert np.isfinite(np.delete(loo, 10, axis=0)).all()
    with pytest.warns(ci.LeaveOneOutWarning):
        nl = ci.newton_loo(fit)
    assert np.isnan(nl[10]).all() and np.isfinite(np.delete(nl, 10, axis=0)).all()


def test_removal_that_causes_separation_is_marked_nan():
    """Two patients with dummy = 1: row 0 has the earliest event, row 1 is censored last.
    Together they identify the coefficient; without row 0 the dummy = 1 patient never has
    an event (coefficient -> -inf), without row 1 the only dummy = 1 patient dies first
    (-> +inf). Both refits diverge and must be NaN, not a large finite number."""
    X, t, e, _, _ = tied_data(13, n=50, strata=False, weights=False)
    X[:, 2] = 0.0
    t[0], e[0], X[0, 2] = 0.5 * t.min(), 1.0, 1.0
    t[1], e[1], X[1, 2] = 2 * t.max(), 0.0, 1.0
    fit = ci.fit_cox(X, t, e)
    assert fit.converged
    with pytest.warns(ci.LeaveOneOutWarning, match=r"2 row\(s\).*rows 0, 1\b"):
        loo = ci.exact_loo(fit, progress=False)
    assert np.isnan(loo[[0, 1], 2]).all()
    assert np.isfinite(loo[2:]).all()
    with pytest.warns(ci.ConvergenceWarning):
        ci.fit_cox(X[1:], t[1:], e[1:])


# ----------------------------------------------------------- pandas: matched on the index

def _rossi():
    from lifelines.datasets import load_rossi
    df = load_rossi()
    return df.drop(columns=["week", "arrest"]), df.week, df.arrest


def test_pandas_inputs_are_matched_on_the_index_not_by_position():
    X, week, arrest = _rossi()
    fit = ci.fit_cox(X, week, arrest)
    shuffled = X.sort_values("age")
    fit2 = ci.fit_cox(shuffled, week, arrest)
    np.testing.assert_allclose(fit2.coef, fit.coef, rtol=1e-12)
    v, v2 = ci.vif(fit), ci.vif(fit2)
    np.testing.assert_array_equal(v2.index, shuffled.index)          # caller's order kept
    np.testing.assert_allclose(v2.to_numpy(), v.loc[v2.index].to_numpy(), rtol=1e-9,
                               atol=1e-12)
    w = pd.Series(np.linspace(0.5, 2, len(X)), index=X.index)
    a = ci.fit_cox(X, week, arrest, weights=w)
    b = ci.fit_cox(shuffled, week, arrest, weights=w.sample(frac=1, random_state=0))
    np.testing.assert_allclose(b.coef, a.coef, rtol=1e-12)


def test_mismatched_or_duplicate_index_labels_are_refused():
    X, week, arrest = _rossi()
    with pytest.raises(CoxInputError, match="time's index does not match X's index"):
        ci.fit_cox(X, week.set_axis(week.index + 10_000), arrest)
    with pytest.raises(CoxInputError, match="duplicate index labels"):
        ci.fit_cox(X.set_axis(np.zeros(len(X), dtype=int)), week.to_numpy(), arrest.to_numpy())
    with pytest.raises(CoxInputError, match="duplicated column names"):
        ci.fit_cox(X.iloc[:, [0, 0, 1]], week, arrest)


def test_influence_attaches_data_columns_by_index():
    X, week, arrest = _rossi()
    fit = ci.fit_cox(X, week, arrest)
    extra = pd.DataFrame({"label": [f"patient {i}" for i in X.index]}, index=X.index)
    res = ci.influence(fit, extra.sample(frac=1, random_state=1))
    top = res.top(3)
    assert all(top.loc[i, "label"] == f"patient {i}" for i in top.index)
    with pytest.raises(ValueError, match="does not match the model's rows"):
        ci.influence(fit, extra.set_axis(extra.index + 10_000))
    with pytest.raises(ValueError, match="rows but the model was fitted on"):
        ci.influence(fit, extra.iloc[:-1])


def test_statsmodels_data_of_the_wrong_length_is_refused():
    sm = pytest.importorskip("statsmodels.api")
    X, week, arrest = _rossi()
    model = sm.PHReg(week, X, status=arrest, ties="efron").fit()
    with pytest.raises(ValueError, match="rows but the model was fitted on"):
        ci.influence(model, X.iloc[:-1])


def test_standard_errors_are_nan_on_purpose_where_a_variance_is_negative():
    import warnings

    from coxinfluence.models.cox import standard_errors
    with warnings.catch_warnings():
        warnings.simplefilter("error")                # no "invalid value in sqrt"
        se = standard_errors([4.0, -1e-3, np.nan, 0.0])
    np.testing.assert_array_equal(se, [2.0, np.nan, np.nan, 0.0])


def test_wald_z_is_nan_on_purpose_where_a_standard_error_is_not_positive(monkeypatch):
    """A zero standard error (singular information, a fit without maximum) gives z = NaN
    and p = NaN, not z = inf and p = 0."""
    import warnings

    from coxinfluence.models.cox import CoxFit, wald_z
    with warnings.catch_warnings():
        warnings.simplefilter("error")                # no "divide by zero"
        z = wald_z([1.0, 2.0, 3.0, -4.0], [0.5, 0.0, np.nan, 2.0])
    np.testing.assert_array_equal(z, [2.0, np.nan, np.nan, -2.0])
    X, t, e, _, _ = tied_data(3, n=60, strata=False, weights=False)
    fit = ci.fit_cox(X, t, e)
    ref = fit.summary()
    var = fit.var.copy()
    var[0, 0] = 0.0                                   # the summary's SE: sqrt(diag(var))
    monkeypatch.setattr(CoxFit, "var", property(lambda self: var))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = fit.summary()
    assert np.isnan(table["z"].iloc[0]) and np.isnan(table["p"].iloc[0])
    np.testing.assert_allclose(table["z"].iloc[1:], ref["z"].iloc[1:], rtol=1e-15)

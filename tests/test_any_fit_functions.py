"""The low-level functions take any fit ``ci.influence`` takes (issue 35, item 3), each with
one convention, stated on the function, against ``ci.influence`` (to 1e-12) and against
refits by hand (``fit_aft`` / ``fit_fine_gray`` on the data without the unit, to 1e-7):

    ci.vif(fit)            = -n * ci.influence(fit, method="vif").theta_change
    ci.reid_influence(fit) = -n * ci.influence(fit, method="reid").theta_change
    ci.newton_loo(fit)     = fit.coef + ci.influence(fit, method="newton").theta_change
    ci.exact_loo(fit)      = fit.coef + ci.influence(fit, method="exact").theta_change

with ``n`` the number of units (rows; an AFT fit's subjects with ``id=``; a Fine-Gray
fit's subjects, one row each)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

FUNCTIONS = {"vif": ci.vif, "reid": ci.reid_influence, "newton": ci.newton_loo,
             "exact": ci.exact_loo}
SCALED = ("vif", "reid")          # paper's scale: -n * change; the others: coef + change


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2035)
    n = 80
    X = pd.DataFrame({"age": rng.normal(60, 8, n), "dose": rng.normal(size=n),
                      "sex": (rng.random(n) < 0.5).astype(float)},
                     index=pd.Index([f"p{i:03d}" for i in range(n)], name="patient"))
    lin = 0.03 * (X["age"].to_numpy() - 60) - 0.5 * X["dose"].to_numpy()
    time = rng.weibull(1.4, n) * np.exp(-lin)
    event = (rng.random(n) < 0.75).astype(float)
    status = np.where(event > 0, rng.integers(1, 3, n), 0)
    return X, time, event, status


def _fits(data):
    X, time, event, status = data
    ids = np.repeat(np.arange(len(time) // 2), 2)          # two rows per subject
    # a subject's second row enters where its first ends (one subject, two intervals)
    entry = np.where(np.arange(len(time)) % 2 == 1, 0.5 * time, 0.0)
    return {
        "aft_weibull": (ci.fit_aft(X, time, event), len(time)),
        "aft_lognormal_numpy": (ci.fit_aft(X.to_numpy(), time, event, "lognormal"),
                                len(time)),
        "aft_subjects": (ci.fit_aft(X, time, event, entry=entry, id=ids), len(time) // 2),
        "fine_gray": (ci.fit_fine_gray(X, time, status, cause=1), len(time)),
        "fine_gray_efron_numpy": (ci.fit_fine_gray(X.to_numpy(), np.round(time, 1), status,
                                                   cause=2, ties="efron"), len(time)),
    }


@pytest.fixture(scope="module")
def fits(data):
    return _fits(data)


@pytest.fixture(scope="module")
def audits(fits):
    """``ci.influence(fit, method=m).theta_change`` of every fit and method, once."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.LeaveOneOutWarning)
        return {(name, m): ci.influence(fit, method=m).theta_change
                for name, (fit, _) in fits.items() for m in FUNCTIONS}


@pytest.mark.parametrize("method", list(FUNCTIONS))
@pytest.mark.parametrize("name", ["aft_weibull", "aft_lognormal_numpy", "aft_subjects",
                                  "fine_gray", "fine_gray_efron_numpy"])
def test_each_function_is_its_stated_relation_to_influence(fits, audits, name, method):
    fit, n = fits[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.LeaveOneOutWarning)
        got = FUNCTIONS[method](fit)
    change = audits[name, method]
    assert len(change) == n                                  # n = the number of units
    expected = (-n * change.to_numpy() if method in SCALED
                else np.asarray(fit.coef)[None, :] + change.to_numpy())
    values = np.asarray(got, dtype=np.float64)
    assert values.shape == expected.shape
    assert np.isfinite(values).all()
    scale = np.abs(expected).max()
    assert np.abs(values - expected).max() <= 1e-12 * scale
    # the layout: the units' labels and the parameters' names, as for a CoxFit
    if isinstance(got, pd.DataFrame):
        assert got.index.equals(change.index)
        assert list(got.columns) == list(change.columns)
    else:                                    # rows given as arrays: an ndarray, as Cox's
        assert getattr(fit, "index", None) is None


def test_pandas_rows_keep_the_callers_index(fits, data):
    X = data[0]
    for name in ("aft_weibull", "fine_gray"):
        fit = fits[name][0]
        out = ci.vif(fit)
        assert isinstance(out, pd.DataFrame) and out.index.equals(X.index)
        assert list(out.columns) == list(fit.columns)


def test_aft_subjects_are_the_units(fits):
    fit, n = fits["aft_subjects"]
    out = ci.exact_loo(fit)
    assert list(out.index) == list(range(n))               # sorted subject labels
    assert ci.vif(fit).shape == (n, len(fit.coef))


def test_aft_vif_is_reid_exactly(fits):
    """The AFT loss is a sum over rows: VIF = Reid's IF (DESIGN: say so, and test it)."""
    for name in ("aft_weibull", "aft_subjects"):
        fit = fits[name][0]
        a, b = np.asarray(ci.vif(fit)), np.asarray(ci.reid_influence(fit))
        assert np.abs(a - b).max() <= 1e-12 * np.abs(a).max()


def _refit_by_hand(name, data, drop):
    """The fit of ``name`` on the data without the rows ``drop`` (bool, caller's order)."""
    X, time, event, status = data
    keep = ~drop
    if name == "aft_weibull":
        return ci.fit_aft(X[keep], time[keep], event[keep]).coef
    if name == "aft_lognormal_numpy":
        return ci.fit_aft(X.to_numpy()[keep], time[keep], event[keep], "lognormal").coef
    if name == "aft_subjects":
        ids = np.repeat(np.arange(len(time) // 2), 2)
        entry = np.where(np.arange(len(time)) % 2 == 1, 0.5 * time, 0.0)
        return ci.fit_aft(X[keep], time[keep], event[keep], entry=entry[keep],
                          id=ids[keep]).coef
    if name == "fine_gray":
        return ci.fit_fine_gray(X[keep], time[keep], status[keep], cause=1).coef
    return ci.fit_fine_gray(X.to_numpy()[keep], np.round(time, 1)[keep], status[keep],
                            cause=2, ties="efron").coef


@pytest.mark.parametrize("name", ["aft_weibull", "aft_lognormal_numpy", "aft_subjects",
                                  "fine_gray", "fine_gray_efron_numpy"])
def test_exact_loo_is_the_refit_by_hand(fits, data, name):
    """``ci.exact_loo`` equals the fitter run on the data without the unit, for the most
    influential units (by the VIF) and a few others."""
    fit, n = fits[name]
    loo = np.asarray(ci.exact_loo(fit))
    vif = np.asarray(ci.vif(fit))
    top = list(np.argsort(-np.abs(vif / np.asarray(fit.se)).max(axis=1))[:3])
    codes = sorted(set(top + [0, n // 2, n - 1]))
    per_unit = 2 if name == "aft_subjects" else 1
    for code in codes:
        drop = np.zeros(len(data[1]), dtype=bool)
        drop[code * per_unit:(code + 1) * per_unit] = True
        np.testing.assert_allclose(loo[code], _refit_by_hand(name, data, drop), rtol=0,
                                   atol=1e-7, err_msg=f"{name}: unit {code}")


def test_cox_fits_keep_their_values_and_follow_the_same_relations(data):
    """For a ``CoxFit`` the functions are unchanged (``tests/test_reference_values.py``
    pins them to 1e-12) and satisfy the same four relations."""
    X, time, event, _ = data
    fit = ci.fit_cox(X, time, event)
    n = len(time)
    for method, fn in FUNCTIONS.items():
        change = ci.influence(fit, method=method).theta_change.to_numpy()
        expected = -n * change if method in SCALED else fit.coef[None, :] + change
        got = fn(fit).to_numpy()
        assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max(), method


def test_fine_gray_refuses_groups_and_other_objects_are_named(fits, data):
    fit = fits["fine_gray"][0]
    with pytest.raises(ci.InputError, match="subjects"):
        ci.vif(fit, groups=np.arange(len(data[1])) // 2)
    with pytest.raises(TypeError, match=r"ci.influence\(model, data"):
        ci.vif(object())
    with pytest.raises(ValueError, match="method must be one of"):
        ci.newton_loo(fits["aft_weibull"][0], method="nope")
    with pytest.raises(ci.InputError, match="CoxFit only"):
        ci.exact_loo(fits["aft_weibull"][0], tol=1e-6)


def test_aft_groups_are_clusters(fits, data):
    """``groups=`` deletes whole clusters of an AFT fit, as ``ci.influence(fit, groups=)``."""
    fit = fits["aft_weibull"][0]
    groups = np.arange(len(data[1])) % 7
    change = ci.influence(fit, method="vif", groups=groups).theta_change
    got = ci.vif(fit, groups=groups)
    assert got.index.equals(change.index) and len(got) == 7
    np.testing.assert_allclose(got.to_numpy(), -7 * change.to_numpy(), rtol=1e-12, atol=0)


def test_a_fit_without_maximum(data):
    """An AFT fit that did not converge: the low-level functions refuse
    (ci.NotConvergedError), as for a CoxFit (issue 44: one rule for every family)."""
    X, time, _, _ = data
    x = X.assign(sex=(X["dose"] > 0).astype(float))
    event = (x["sex"] == 0).astype(float).to_numpy()        # no event at sex = 1
    with pytest.warns(ci.ConvergenceWarning):
        fit = ci.fit_aft(x, time, event)
    with pytest.raises(ci.NotConvergedError, match="vif: the .* did not converge"):
        ci.vif(fit)
    with pytest.raises(ci.NotConvergedError, match="exact_loo"):
        ci.exact_loo(fit)


def _without_maximum(case, data):
    """A fit of each family that did not converge."""
    X, time, event, status = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.ConvergenceWarning)
        if case == "cox":
            return ci.fit_cox(X, time, event, max_iter=1)
        if case == "aft":                  # no event at sex = 1: a monotone likelihood
            x = X.assign(sex=(X["dose"] > 0).astype(float))
            return ci.fit_aft(x, time, (x["sex"] == 0).astype(float).to_numpy())
        return ci.fit_fine_gray(X, time, status, max_iter=1)


@pytest.mark.parametrize("case", ["cox", "aft", "fine_gray"])
@pytest.mark.parametrize("f", [ci.vif, ci.reid_influence, ci.newton_loo, ci.exact_loo])
def test_one_rule_for_fits_without_maximum(data, case, f):
    """Issue 44 item 2: every low-level function refuses a fit that did not converge with
    ci.NotConvergedError for every family (a Fine-Gray fit's ci.vif gave a raw
    LinAlgError)."""
    fit = _without_maximum(case, data)
    assert not fit.converged
    with pytest.raises(ci.NotConvergedError, match=f"{f.__name__}: .*did not converge"):
        f(fit)


@pytest.mark.parametrize("case", ["cox", "aft", "fine_gray"])
def test_influence_flags_every_unit_of_a_fit_without_maximum(data, case):
    """... and ``ci.influence`` keeps its result, every unit flagged, with one warning."""
    fit = _without_maximum(case, data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ci.influence(fit)
    conv = [w for w in caught if issubclass(w.category, ci.ConvergenceWarning)]
    assert len(conv) == 1 and "did not converge" in str(conv[0].message)
    assert not res.fit_ok and res.flagged.all()

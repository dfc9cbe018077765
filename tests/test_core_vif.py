"""VIF against its definition, Reid's IF against the weight derivative, and both against
exact leave-one-out refits (the ground truth)."""
import numpy as np
import pytest
from conftest import tied_data, vif_by_definition
from oracles import newton_rows

import coxinfluence as ci

CASES = [(ties, strata, weights) for ties in ("efron", "breslow")
         for strata in (False, True) for weights in (False, True)]


@pytest.mark.parametrize("ties,strata,weights", CASES)
def test_vif_equals_its_definition(ties, strata, weights):
    X, t, e, w, s = tied_data(1, strata=strata, weights=weights)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    ref = vif_by_definition(fit, X, t, e, w, s, ties)
    got = np.asarray(ci.vif(fit))
    assert np.abs(got - ref).max() <= 1e-9 * np.abs(ref).max()


@pytest.mark.parametrize("ties,strata,weights", CASES)
def test_newton_loo_equals_its_definition(ties, strata, weights):
    """newton_loo(i) = theta_hat - H_{-i}(theta_hat)^{-1} grad L_{-i}(theta_hat), with the
    gradient and Hessian of the data with row i literally deleted (tests/oracles.py)."""
    X, t, e, w, s = tied_data(1, strata=strata, weights=weights)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    ref = newton_rows(fit.coef, X, t, e, range(len(t)), w=w, s=s, ties=ties)
    got = np.asarray(ci.newton_loo(fit))
    step = np.abs(ref - fit.coef).max()
    assert step > 1e-3                                   # the oracle is not trivial
    assert np.abs(got - ref).max() <= 1e-9 * step


def test_newton_loo_keeps_the_callers_rows():
    """pandas in, pandas out: the caller's (shuffled, non-integer) index and row order."""
    import pandas as pd
    X, t, e, w, s = tied_data(8, n=60)
    idx = pd.Index([f"p{k}" for k in np.random.default_rng(0).permutation(60)], name="id")
    Xd = pd.DataFrame(X, index=idx, columns=["a", "b", "c"])
    fit = ci.fit_cox(Xd, pd.Series(t, index=idx), pd.Series(e, index=idx),
                     weights=pd.Series(w, index=idx), strata=pd.Series(s, index=idx))
    got = ci.newton_loo(fit)
    assert list(got.index) == list(idx) and list(got.columns) == ["a", "b", "c"]
    ref = newton_rows(fit.coef, X, t, e, range(60), w=w, s=s)
    np.testing.assert_allclose(got.to_numpy(), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_reid_is_the_derivative_in_the_case_weight(ties):
    """docs/conventions.md: IF_n(i) = -(H/n)^{-1} w_i d/dw_i grad L, R's weighting, both
    tie methods."""
    X, t, e, w, s = tied_data(2)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    n, h = len(t), 1e-6
    deriv = []
    for i in range(n):
        wp, wm = w.copy(), w.copy()
        wp[i] += h
        wm[i] -= h
        gp = ci.cox_gradient(fit.coef, X, t, e, weights=wp, strata=s, ties=ties)
        gm = ci.cox_gradient(fit.coef, X, t, e, weights=wm, strata=s, ties=ties)
        deriv.append(w[i] * (gp - gm) / (2 * h))
    ref = -n * np.linalg.solve(fit.information, np.array(deriv).T).T
    got = np.asarray(ci.reid_influence(fit))
    assert np.abs(got - ref).max() <= 1e-6 * np.abs(ref).max()   # central differences


def test_breslow_deletion_equals_zero_weight_but_efron_does_not():
    """docs/conventions.md: for Breslow deleting a row is a zero weight; Efron's tie correction
    counts the deaths, so there it is not."""
    X, t, e, _, _ = tied_data(3, strata=False, weights=False)
    events_at = np.bincount(t.astype(int), weights=e)[t.astype(int)]
    i = int(np.flatnonzero((e == 1) & (events_at > 1))[0])   # an event tied with another
    keep = np.arange(len(t)) != i
    theta = np.array([0.2, -0.1, 0.3])
    w0 = np.ones(len(t))
    w0[i] = 1e-300
    for ties, same in (("breslow", True), ("efron", False)):
        deleted = ci.cox_gradient(theta, X[keep], t[keep], e[keep], ties=ties)
        zero_w = ci.cox_gradient(theta, X, t, e, weights=w0, ties=ties)
        assert np.allclose(deleted, zero_w, rtol=1e-12, atol=1e-12) == same


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_approximations_against_exact_refits(ties, seed):
    """Mean absolute error against exact refits (n = 150, ties, strata, weights), on ten
    data sets: one-step Newton is far closer than VIF, and VIF than Reid's IF.

    Measured over seeds 0..39: err_newton / err_vif at most 0.122 (Efron) and 0.112
    (Breslow), err_vif / err_reid at most 0.449 and 0.421, correlation with exact at least
    0.9943 (VIF) and 0.9837 (Reid), VIF's above Reid's on every seed. The bars sit just
    beyond those extremes. (Row by row the order is not universal: VIF beats Reid on
    95-100% of the rows of a data set, Newton beats VIF on 97-100%.)"""
    X, t, e, w, s = tied_data(seed, n=150)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    n = fit.n
    exact = n * (fit.coef - np.asarray(ci.exact_loo(fit, progress=False)))
    err = {
        "newton": np.abs(n * (fit.coef - np.asarray(ci.newton_loo(fit))) - exact).mean(),
        "vif": np.abs(np.asarray(ci.vif(fit)) - exact).mean(),
        "reid": np.abs(np.asarray(ci.reid_influence(fit)) - exact).mean(),
    }
    assert err["newton"] < 0.15 * err["vif"]
    assert err["vif"] < 0.5 * err["reid"]
    corr = {name: np.corrcoef(np.asarray(method(fit)).ravel(), exact.ravel())[0, 1]
            for name, method in (("vif", ci.vif), ("reid", ci.reid_influence))}
    assert corr["vif"] > 0.99 and corr["reid"] > 0.98
    assert corr["vif"] > corr["reid"]


def test_exact_loo_matches_refits_of_deleted_data():
    X, t, e, w, s = tied_data(5, n=60)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s)
    loo = ci.exact_loo(fit, progress=False)
    for i in (0, 7, 33, 59):
        keep = np.arange(60) != i
        ref = ci.fit_cox(X[keep], t[keep], e[keep], weights=w[keep], strata=s[keep], tol=1e-12)
        assert np.abs(loo[i] - ref.coef).max() < 1e-9


def test_exact_loo_gradient_is_converged():
    X, t, e, w, s = tied_data(6, n=70)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s)
    loo = ci.exact_loo(fit, progress=False)
    for i in (3, 40):
        keep = np.arange(70) != i
        g = ci.cox_gradient(loo[i], X[keep], t[keep], e[keep], weights=w[keep], strata=s[keep])
        assert np.abs(g).max() < 1e-9


def test_exact_loo_through_an_executor_equals_serial():
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
    X, t, e, w, s = tied_data(7, n=90)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s)
    serial = ci.exact_loo(fit, progress=False)
    with ThreadPoolExecutor(2) as ex:
        threaded = ci.exact_loo(fit, executor=ex, progress=False, n_chunks=5)
    # spawn: this pytest process may already run JAX's threads, which fork must not copy
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        processes = ci.exact_loo(fit, executor=ex, progress=False)
    assert np.array_equal(serial, threaded)
    assert np.array_equal(serial, processes)

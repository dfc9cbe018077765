"""VIF against its definition, Reid's IF against the weight derivative, and both against
exact leave-one-out refits (the ground truth)."""
import numpy as np
import pytest

import coxinfluence as ci
from conftest import tied_data, vif_by_definition

CASES = [(ties, strata, weights) for ties in ("efron", "breslow")
         for strata in (False, True) for weights in (False, True)]


@pytest.mark.parametrize("ties,strata,weights", CASES)
def test_vif_equals_its_definition(ties, strata, weights):
    X, t, e, w, s = tied_data(1, strata=strata, weights=weights)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    ref = vif_by_definition(fit, X, t, e, w, s, ties)
    got = np.asarray(ci.vif(fit))
    assert np.abs(got - ref).max() <= 1e-9 * np.abs(ref).max()


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_reid_is_the_derivative_in_the_case_weight(ties):
    """DESIGN.md: IF_n(i) = -(H/n)^{-1} w_i d/dw_i grad L, R's weighting, both tie methods."""
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
    """DESIGN.md: for Breslow deleting a row is a zero weight; Efron's tie correction
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


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_approximations_against_exact_refits(ties):
    """newton_loo is closer to exact LOO than VIF, and VIF is closer than Reid (no ties in
    the deletion for Breslow; on average over rows)."""
    X, t, e, w, s = tied_data(4, n=150)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    n = fit.n
    exact = n * (fit.coef - np.asarray(ci.exact_loo(fit, progress=False)))
    err = {
        "newton": np.abs(n * (fit.coef - np.asarray(ci.newton_loo(fit))) - exact).mean(),
        "vif": np.abs(np.asarray(ci.vif(fit)) - exact).mean(),
        "reid": np.abs(np.asarray(ci.reid_influence(fit)) - exact).mean(),
    }
    assert err["newton"] < err["vif"] < err["reid"]
    assert err["newton"] < 0.5 * err["vif"]
    for method in (ci.vif, ci.reid_influence):
        corr = np.corrcoef(np.asarray(method(fit)).ravel(), exact.ravel())[0, 1]
        assert corr > 0.98


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

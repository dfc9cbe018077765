"""Results of lifelines' survreg AFT fits indexed like their ``params_`` (issue 26, item 3),
by :class:`~coxinfluence.influence_functions.reparametrised.Reparametrised`: the survreg
audit (R-verified, tests/test_aft.py) read in ``theta = A phi``.

Oracles: the map named by hand from DESIGN.md ("Model families beyond Cox PH"; checked
here against lifelines' own fits), the survreg audit's own numbers (which R verifies),
central differences of the objective (the information under a general linear map), the
invariants of the audit (likelihood displacement, LMAX, flags). lifelines' own refits in
``params_`` order: tests/test_aft.py::test_lifelines_aft_exact_changes_equal_lifelines_refits.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.influence_functions.aft_audit import AFTAudit
from coxinfluence.influence_functions.reparametrised import (
    Reparametrised,
    map_rows,
    signed_permutation,
)

lifelines = pytest.importorskip("lifelines")
from lifelines.datasets import load_rossi  # noqa: E402

#: lifelines' fitter -> (ci.fit_aft's dist, primary, ancillary, sign of log(sigma))
FITTERS = {"WeibullAFTFitter": ("weibull", "lambda_", "rho_", -1.0),
           "LogNormalAFTFitter": ("lognormal", "mu_", "sigma_", 1.0),
           "LogLogisticAFTFitter": ("loglogistic", "alpha_", "beta_", -1.0)}
TIGHT = {"ftol": 1e-14, "maxiter": 1000}


@pytest.fixture(scope="module")
def rossi():
    return load_rossi()


def _by_hand(survreg, prim, anc, sign):
    """R's changes (columns "(Intercept)", covariates, "Log(scale)") in lifelines' names,
    mapped by hand as DESIGN.md states."""
    out = {(prim, "Intercept" if c == "(Intercept)" else c): survreg[c]
           for c in survreg.columns[:-1]}
    out[(anc, "Intercept")] = sign * survreg["Log(scale)"]
    return pd.DataFrame(out)


@pytest.mark.parametrize("name", list(FITTERS))
def test_the_map_is_lifelines_own_parametrisation(name, rossi):
    """lifelines' maximum is R's maximum under the map: the coefficients equal, the
    ancillary Intercept ``sign * log(sigma)``, the log-likelihoods equal."""
    dist, prim, anc, sign = FITTERS[name]
    model = getattr(lifelines, name)().fit(rossi, "week", "arrest", fit_options=TIGHT)
    X = rossi.drop(columns=["week", "arrest"])
    fit = ci.fit_aft(X, rossi["week"], rossi["arrest"], dist)
    p = model.params_
    se = fit.se
    # the log-normal's lifelines fit stops 1e-4 short of the maximum, even tightened
    assert abs(p[(prim, "Intercept")] - fit.coef[0]) < 2e-3 * se[0]
    assert np.all(np.abs(p[prim][list(X.columns)].to_numpy() - fit.coef[1:-1]) < 2e-3 * se[1:-1])
    assert abs(p[(anc, "Intercept")] - sign * fit.coef[-1]) < 2e-3 * se[-1]
    assert abs(-p[(anc, "Intercept")] - sign * fit.coef[-1]) > 5 * se[-1]    # the sign
    assert abs(model.log_likelihood_ - fit.loglik) < 1e-6


@pytest.mark.parametrize("name", list(FITTERS))
def test_results_are_indexed_like_params_(name, rossi):
    """Every method's changes, dfbetas and the targets' columns in ``params_``' order, the
    values R's audit's exactly, mapped by hand; the invariants (likelihood displacement,
    LMAX, flags) unchanged; ``ci.fit_aft`` keeps R's names."""
    dist, prim, anc, sign = FITTERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(lifelines, name)().fit(rossi, "week", "arrest", fit_options=TIGHT)
    for method in ("vif", "reid", "newton", "exact"):
        res = ci.influence(model, rossi, method=method)
        fit = res.fit.base                                  # the AFTFit (R's parameters)
        survreg = ci.influence(fit, method=method)
        assert list(survreg.theta_change.columns) == fit.columns
        assert res.theta_change.columns.equals(model.params_.index)
        assert res.loo_change.columns.equals(model.params_.index)
        assert res.dfbetas.columns.equals(model.params_.index)
        hand = _by_hand(survreg.theta_change, prim, anc, sign)[res.theta_change.columns]
        assert np.array_equal(res.theta_change.to_numpy(), hand.to_numpy(), equal_nan=True)
        assert np.array_equal(res.loo_change.to_numpy(), hand.to_numpy(), equal_nan=True)
        hand_dfbetas = _by_hand(survreg.dfbetas, prim, anc, sign)[res.theta_change.columns]
        np.testing.assert_allclose(res.dfbetas.to_numpy(), hand_dfbetas.to_numpy(),
                                   rtol=1e-12, atol=0)
        np.testing.assert_allclose(res.likelihood_displacement, survreg.likelihood_displacement,
                                   rtol=1e-10, atol=1e-14)
        assert res.flags.equals(survreg.flags)
    np.testing.assert_allclose(res.lmax, survreg.lmax, rtol=1e-8, atol=1e-12)
    # the coefficients and their SEs: lifelines' own summary, to its optimiser's tolerance
    np.testing.assert_allclose(res.fit.coef, model.params_.to_numpy(), rtol=0,
                               atol=2e-3 * res.fit.se.max())
    np.testing.assert_allclose(res.fit.se, model.summary["se(coef)"], rtol=2e-3)
    # R's targets read through the map: the same columns and numbers as on the AFTFit
    new = rossi.drop(columns=["week", "arrest"]).iloc[[0, 3]]
    for target in ("tr", ci.targets.Survival(new, [20.0, 52.0]), ci.targets.Quantile(new, 0.5)):
        ours = ci.influence(model, rossi, method="vif", target=target)
        theirs = ci.influence(res.fit.base, method="vif", target=target)
        if target == "tr":    # exp of the primary parameter's covariates: lifelines' exp(coef)
            covs = [c for c in model.params_[prim].index if c != "Intercept"]
            assert list(ours.loo_change.columns) == [f"TR {c}" for c in covs]
            np.testing.assert_allclose(ours.target.value(ours.fit, ours.fit.coef)[0],
                                       model.summary["exp(coef)"][prim][covs], rtol=1e-3)
        assert list(ours.loo_change.columns) == list(theirs.loo_change.columns)
        np.testing.assert_allclose(ours.loo_change, theirs.loo_change, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(ours.target_se, theirs.target_se, rtol=1e-10)


def test_a_general_linear_map(rossi):
    """Any invertible ``A``: the information is the Hessian of the mapped objective
    (central differences), the covariance its inverse, the scores ``-change I~`` (the
    decomposable loss: ``change = H^{-1} s``, score ``-s``), refits mapped, the
    invariants (displacement, LMAX, flags, exact refits' displacement) unchanged."""
    X = rossi[["age", "fin", "prio"]]
    fit = ci.fit_aft(X, rossi["week"], rossi["arrest"], "loglogistic")
    inner = AFTAudit(fit)
    rng = np.random.default_rng(2)
    A = np.eye(5) + 0.3 * rng.normal(size=(5, 5))
    names = [f"t{k}" for k in range(5)]
    model = Reparametrised(inner, A, names)
    theta = model.coef
    assert np.allclose(theta, A @ fit.coef)
    # information: central differences of the objective, steps 1e-4 in theta
    h, H = 1e-4, np.zeros((5, 5))
    for j in range(5):
        for k in range(5):
            e_j, e_k = np.eye(5)[j] * h, np.eye(5)[k] * h
            pts = np.array([theta + e_j + e_k, theta + e_j - e_k, theta - e_j + e_k,
                            theta - e_j - e_k])
            f = model.objective(pts)
            H[j, k] = (f[0] - f[1] - f[2] + f[3]) / (4 * h * h)
    assert np.abs(H - model.information).max() < 1e-5 * np.abs(model.information).max()
    np.testing.assert_allclose(model.covariance(False), np.linalg.inv(model.information),
                               rtol=1e-8, atol=1e-12)
    change = model.change("vif")
    np.testing.assert_allclose(change, inner.change("vif") @ A.T, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(model.unit_scores(), -change @ model.information,
                               rtol=1e-8, atol=1e-10 * np.abs(model.unit_scores()).max())
    codes = np.array([3, 10, 55])
    np.testing.assert_allclose(model.refit(codes).theta, inner.refit(codes).theta @ A.T,
                               rtol=1e-12)
    ours, theirs = ci.influence(model, method="auto"), ci.influence(inner, method="auto")
    assert list(ours.theta_change.columns) == names
    np.testing.assert_allclose(ours.likelihood_displacement, theirs.likelihood_displacement,
                               rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ours.lmax, theirs.lmax, rtol=1e-8, atol=1e-12)
    assert ours.flags.equals(theirs.flags)
    assert ours.verified.equals(theirs.verified)


def test_maps_and_refusals():
    A = signed_permutation([2, 0, 1], [1, -1, 1])
    phi = np.array([[1.0, 2.0, 3.0], [np.nan, 5.0, 6.0]])
    theta = map_rows(phi, A)
    assert np.array_equal(theta[0], [3.0, -1.0, 2.0])
    # a refit's missing parameter stays missing, alone
    assert np.array_equal(theta[1], [6.0, np.nan, 5.0], equal_nan=True)
    assert np.array_equal(map_rows(theta, A.T), phi, equal_nan=True)
    assert np.array_equal(map_rows([[np.inf, 1.0, 2.0]], A), [[2.0, np.nan, 1.0]],
                          equal_nan=True)
    with pytest.raises(ValueError, match="not a signed permutation"):
        signed_permutation([0, 0, 1], [1, 1, 1])
    with pytest.raises(ValueError, match="not a signed permutation"):
        signed_permutation([0, 1, 2], [1, 2, 1])
    X = load_rossi()[["age", "fin"]]
    inner = AFTAudit(ci.fit_aft(X, load_rossi()["week"], load_rossi()["arrest"]))
    with pytest.raises(ValueError, match="A must be 4 x 4"):
        Reparametrised(inner, np.eye(3), list("abc"))
    with pytest.raises(ValueError, match="3 names for 4 parameters"):
        Reparametrised(inner, np.eye(4), list("abc"))


@pytest.mark.parametrize("name", list(FITTERS))
def test_robust_standard_errors_are_lifelines_sandwich(name, rossi):
    """``robust=True`` models: the robust covariance ``A D'D A'`` gives lifelines' own
    sandwich standard errors (measured 1e-7 relative; the log-normal's 9e-5: lifelines
    stops short of the maximum); the model-based ones differ."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(lifelines, name)().fit(rossi, "week", "arrest", robust=True,
                                               fit_options=TIGHT)
    res = ci.influence(model, rossi, method="vif")
    assert res.robust
    np.testing.assert_allclose(res.target_se.to_numpy(), model.summary["se(coef)"], rtol=1e-3)
    plain = ci.influence(model, rossi, method="vif", robust=False)
    assert np.abs(plain.target_se.to_numpy() / res.target_se.to_numpy() - 1).max() > 0.01

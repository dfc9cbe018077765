"""Targets (coxinfluence.audit.targets): values against R's survfit, Jacobians against finite
differences, the baseline hazard's data effect against its definition (a naive loop over
the Breslow/Efron formula with the patient deleted), and chain-rule estimates against exact
leave-one-out refits (R's refits for S(t|x), ci.exact_loo otherwise)."""

import numpy as np
import pandas as pd
import pytest
from conftest import r_matrix, tied_data

import coxinfluence as ci
from coxinfluence import targets as T

COVS = ["age", "tsize", "pnodes", "progrec", "estrec", "horTh"]
NEWP = pd.DataFrame({"age": [45, 60, 70], "tsize": [20, 35, 50], "pnodes": [1, 5, 15],
                     "progrec": [100, 20, 5], "estrec": [80, 10, 200], "horTh": [1, 0, 0]},
                    index=["a", "b", "c"])
TIMES = [365.0, 1000.0, 1800.0]




@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_survival_equals_r_survfit(gbsg, ref, ties):
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens, ties=ties)
    s = T.Survival(NEWP, TIMES).value(fit, fit.coef[None, :])[0]
    np.testing.assert_allclose(s, r_matrix(ref, ties, "surv").ravel(), rtol=1e-10, atol=1e-12)


def test_exact_survival_change_equals_r_refits(gbsg, ref):
    """g(theta_{-i}; D_{-i}): refitted coefficients AND the baseline hazard without row i."""
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens)
    tgt = T.Survival(NEWP, TIMES)
    loo = np.asarray(ci.exact_loo(fit, progress=False))
    exact = T.target_exact(fit, loo, tgt) + tgt.value(fit, fit.coef[None, :])[0]
    np.testing.assert_allclose(exact[:25], r_matrix(ref, "efron", "surv_loo"), rtol=1e-8,
                               atol=1e-10)


def _tied_fit(seed=1, weights=True, n=70):
    X, t, e, w, _ = tied_data(seed, n=n, strata=False, weights=weights)
    return ci.fit_cox(X, t, e, weights=w if weights else None), X


@pytest.mark.parametrize("target_factory", [
    lambda X: T.Coefficients(), lambda X: T.HazardRatios(),
    lambda X: T.LinearPredictor(X[:4] + 0.3), lambda X: T.RelativeRisk(X[:4] - 0.2),
    lambda X: T.Survival(X[:3], [2.0, 5.0, 9.0])])
def test_jacobian_matches_central_differences(target_factory):
    fit, X = _tied_fit()
    tgt = target_factory(X)
    J = tgt.jacobian(fit)
    h = 1e-6
    num = np.empty_like(J)
    for j in range(fit.data.d):
        e = np.zeros(fit.data.d)
        e[j] = h
        num[:, j] = (tgt.value(fit, (fit.coef + e)[None])[0]
                     - tgt.value(fit, (fit.coef - e)[None])[0]) / (2 * h)
    np.testing.assert_allclose(J, num, rtol=1e-6, atol=1e-8)


def _naive_cumhaz(X, t, e, w, theta, tq, ties):
    """Breslow/Efron cumulative baseline hazard by its defining sum (a loop over times)."""
    r = w * np.exp(X @ theta)
    H = 0.0
    for s in np.unique(t[(e == 1) & (t <= tq)]):
        dead = (t == s) & (e == 1)
        d = dead.sum()
        S0, S0D, m = r[t >= s].sum(), r[dead].sum(), w[dead].sum() / d
        c = np.arange(d) / d if ties == "efron" else np.zeros(d)
        H += (m / (S0 - c * S0D)).sum()
    return H


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_data_effect_equals_deletion_definition(ties):
    X, t, e, w, _ = tied_data(4, n=45, strata=False, weights=True)
    fit = ci.fit_cox(X, t, e, weights=w, ties=ties)
    x_new, times = X[:2] * 0.5, [3.0, 6.0]
    eff = T.Survival(x_new, times).data_effect(fit)
    full = np.array([[np.exp(-_naive_cumhaz(X, t, e, w, fit.coef, tq, ties)
                             * np.exp(x @ fit.coef)) for tq in times] for x in x_new]).ravel()
    for i in (0, 5, 17, 44):
        keep = np.arange(len(t)) != i
        s = np.array([[np.exp(-_naive_cumhaz(X[keep], t[keep], e[keep], w[keep], fit.coef, tq,
                                             ties) * np.exp(x @ fit.coef)) for tq in times]
                      for x in x_new]).ravel()
        np.testing.assert_allclose(eff[i], s - full, rtol=1e-9, atol=1e-13)


def test_baseline_hazard_effect_matters_against_exact_refits(gbsg):
    """With the data effect the VIF chain rule tracks exact refits of S(t|x); without it,
    clearly worse (the full METABRIC numbers: paper_appendix/targets_metabric.py)."""
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens)
    tgt = T.Survival(NEWP, [float(np.median(gbsg.time))])
    exact = ci.influence(fit, method="exact", target=tgt).loo_change.to_numpy()
    with_eff = ci.influence(fit, method="vif", target=tgt).loo_change.to_numpy()
    without = ci.influence(fit, method="vif", target=tgt,
                           include_data_effect=False).loo_change.to_numpy()
    def corr(a, b):
        return np.array([np.corrcoef(a[:, k], b[:, k])[0, 1] for k in range(a.shape[1])])
    c_with, c_without = corr(with_eff, exact), corr(without, exact)
    assert c_with.min() > 0.93
    assert (c_with - c_without).min() > 0.02
    assert (c_with - c_without).mean() > 0.1
    # typical error: the data effect removes almost all of it (one outlying patient, P115,
    # dominates the maximum for both)
    def med(a):
        return np.median(np.abs(a - exact), axis=0)
    assert (med(with_eff) < 0.1 * med(without)).all()


def test_relative_risk_chain_rule_tracks_exact_and_plug_in():
    fit, X = _tied_fit(seed=7, n=120)
    x_new = X[:5] * 0.7
    tgt = T.RelativeRisk(x_new)
    exact = ci.influence(fit, method="exact", target=tgt).loo_change.to_numpy()
    loo = np.asarray(ci.exact_loo(fit, progress=False))
    np.testing.assert_allclose(exact, np.exp(loo @ x_new.T) - np.exp(fit.coef @ x_new.T),
                               rtol=1e-12, atol=1e-14)
    for method, bar in (("vif", 0.99), ("newton", 0.999), ("reid", 0.98)):
        est = ci.influence(fit, method=method, target=tgt).loo_change.to_numpy()
        for k in range(x_new.shape[0]):
            assert np.corrcoef(est[:, k], exact[:, k])[0, 1] > bar, method


def test_hazard_ratio_chain_rule():
    fit, _ = _tied_fit(seed=2)
    res = ci.influence(fit, target="hr", method="vif")
    d = res.theta_change.to_numpy()
    np.testing.assert_allclose(res.loo_change.to_numpy(), d * np.exp(fit.coef), rtol=1e-13)
    assert list(res.loo_change.columns) == [f"HR {c}" for c in fit.columns]


def test_target_input_errors(gbsg):
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens)
    with pytest.raises(ValueError, match="lack the model's covariate"):
        T.RelativeRisk(NEWP.drop(columns="age")).jacobian(fit)
    with pytest.raises(ValueError, match="NaN"):
        T.RelativeRisk(NEWP.assign(age=[1.0, np.nan, 2.0])).jacobian(fit)
    with pytest.raises(ValueError, match="times"):
        T.Survival(NEWP, [-1.0])
    with pytest.raises(ValueError, match="unknown target"):
        ci.influence(fit, target="survival")
    strat = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens, strata=gbsg.tgrade)
    with pytest.raises(ValueError, match=r"stratified: give the stratum.*'I', 'II', 'III'"):
        T.Survival(NEWP, [100.0]).jacobian(strat)
    with pytest.raises(ValueError, match=r"unknown strata \['IV'\]"):
        T.Survival(NEWP, [100.0], strata=["I", "IV", "II"]).jacobian(strat)
    with pytest.raises(ValueError, match=r"unknown strata \[\['I'\]\]"):
        T.Survival(NEWP, [100.0], strata=[["I"], "I", "II"]).jacobian(strat)
    with pytest.raises(ValueError, match="2 entries for 3"):
        T.Survival(NEWP, [100.0], strata=["I", "II"]).value(strat, strat.coef[None])
    with pytest.raises(ValueError, match="no strata"):
        T.Survival(NEWP, [100.0], strata="I").jacobian(fit)
    with pytest.raises(ValueError, match="stratified"):
        T.baseline_cumhaz(strat, [100.0])


STRATA = ["III", "I", "II"]     # the new patients' tgrade, as in tests/r/integration_reference.R


def _strat_fit(gbsg):
    return ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens, weights=gbsg.w, strata=gbsg.tgrade)


def test_stratified_survival_equals_r_survfit(gbsg, ref):
    """Each new patient on its own stratum's baseline hazard (weighted Efron, R's survfit)."""
    fit = _strat_fit(gbsg)
    s = T.Survival(NEWP, TIMES, strata=STRATA).value(fit, fit.coef[None, :])[0]
    np.testing.assert_allclose(s, r_matrix(ref, "efron_strata_weights", "surv").ravel(),
                               rtol=1e-10, atol=1e-12)
    # one label for every patient; the baseline hazard of one stratum = -log S at x = 0
    one = T.Survival(NEWP * 0.0, TIMES, strata="II").value(fit, fit.coef[None, :])[0]
    np.testing.assert_allclose(-np.log(one[:3]), T.baseline_cumhaz(fit, TIMES, stratum="II"),
                               rtol=1e-12)


def test_stratified_exact_survival_change_equals_r_refits(gbsg, ref):
    fit = _strat_fit(gbsg)
    tgt = T.Survival(NEWP, TIMES, strata=STRATA)
    loo = np.asarray(ci.exact_loo(fit, progress=False))
    exact = T.target_exact(fit, loo, tgt) + tgt.value(fit, fit.coef[None, :])[0]
    np.testing.assert_allclose(exact[:25], r_matrix(ref, "efron_strata_weights", "surv_loo"),
                               rtol=1e-8, atol=1e-10)
    # the VIF chain rule with the per-stratum data effect tracks the exact refits
    est = ci.influence(fit, method="vif", target=tgt).loo_change.to_numpy()
    ex = ci.influence(fit, method="exact", target=tgt).loo_change.to_numpy()
    np.testing.assert_allclose(ex, exact - tgt.value(fit, fit.coef[None, :])[0], atol=1e-12)
    without = ci.influence(fit, method="vif", target=tgt,
                           include_data_effect=False).loo_change.to_numpy()
    informative = np.flatnonzero(np.abs(ex).max(axis=0) > 1e-6)  # S(365 | I) = 1: no events
    assert informative.size == 8
    corr = lambda a: np.array([np.corrcoef(a[:, k], ex[:, k])[0, 1] for k in informative])  # noqa: E731
    assert corr(est).min() > 0.9                          # observed 0.926 .. 0.996
    assert (corr(est) - corr(without)).mean() > 0.2       # the stratum's own baseline matters


def test_stratified_survival_jacobian_and_data_effect():
    X, t, e, w, st = tied_data(5, n=80, strata=True, weights=True)
    fit = ci.fit_cox(X, t, e, weights=w, strata=st)
    labels = list(fit.data.strata_labels)
    tgt = T.Survival(X[:3] * 0.5, [3.0, 7.0], strata=[labels[-1], labels[0], labels[-1]])
    J = tgt.jacobian(fit)
    h = 1e-6
    for j in range(fit.data.d):
        step = np.zeros(fit.data.d)
        step[j] = h
        num = (tgt.value(fit, (fit.coef + step)[None])[0]
               - tgt.value(fit, (fit.coef - step)[None])[0]) / (2 * h)
        np.testing.assert_allclose(J[:, j], num, rtol=1e-6, atol=1e-8)
    # data effect = deletion by definition: refit-free S(t|x; theta_hat, D_{-i}) - S(...; D)
    eff = tgt.data_effect(fit)
    base = tgt.value(fit, fit.coef[None])[0]
    for i in (0, 11, 79):
        keep = np.arange(len(t)) != i
        sub = ci.fit_cox(X[keep], t[keep], e[keep], weights=w[keep], strata=st[keep])
        direct = tgt.value(sub, fit.coef[None])[0] - base
        np.testing.assert_allclose(eff[i], direct, rtol=1e-9, atol=1e-13)


def test_caller_frames_not_modified(gbsg):
    before, newp = gbsg.copy(), NEWP.copy()
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens)
    ci.influence(fit, gbsg, target=T.Survival(NEWP, TIMES))
    pd.testing.assert_frame_equal(gbsg, before)
    pd.testing.assert_frame_equal(NEWP, newp)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_survival_se_equals_r_survfit(gbsg, ties):
    """dfbetas of S(t|x) divide by R's survfit standard error, which includes the baseline
    hazard's variance (golden fixture of tests/r/survfit_se_reference.R)."""
    from conftest import INTEGRATION_FIXTURES
    ref = pd.read_csv(INTEGRATION_FIXTURES / "survfit_se.csv")
    ref = ref[ref.ties == ties].sort_values(["patient", "time"])
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens, ties=ties)
    res = ci.influence(fit, method="vif", target=T.Survival(NEWP, TIMES))
    np.testing.assert_allclose(T.Survival(NEWP, TIMES).value(fit, fit.coef[None, :])[0],
                               ref.surv, rtol=1e-9)
    np.testing.assert_allclose(res.target_se.to_numpy(), ref.std_err, rtol=1e-7)
    np.testing.assert_allclose(res.dfbetas.to_numpy(),
                               res.loo_change.to_numpy() / ref.std_err.to_numpy(), rtol=1e-7)

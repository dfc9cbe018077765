"""Case weights and strata in the Fine-Gray model (``ci.fit_fine_gray(weights=, strata=)``).

The definitions (:mod:`coxinfluence.likelihood.fine_gray`): a subject of weight ``w``
counts ``w`` times in the risk sets, the failure counts and its group's censoring
Kaplan-Meier, so integer weights are duplicated subjects; strata have their own risk
sets, and the Kaplan-Meier is estimated per censoring group within each stratum, so the
loss is the sum of the strata's losses. Checked here against those definitions literally:
duplicated rows, separate per-stratum likelihoods, and literal deletion (the closed-form
deleted derivatives, baseline jumps and refits). R's ``coxph`` on the expanded data is the
oracle in tests/test_fine_gray_expanded.py.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_fine_gray_properties import fitted

import coxinfluence as ci
from coxinfluence.influence_functions.fine_gray_audit import FineGrayAudit
from coxinfluence.likelihood.fine_gray import (
    FineGrayLikelihood,
    baseline_jumps,
    build_fine_gray_data,
    crr_scores,
    loss_grad_hess,
)
from coxinfluence.likelihood.fine_gray_deletion import (
    DeletionState,
    deleted_baseline_jumps,
    deleted_derivatives,
)
from coxinfluence.models.fine_gray import fit_fine_gray

SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def tied_design(rng, n, d, *, weights="real", n_strata=2):
    """Covariates, heavily tied times, kinds (0 censored, 1 the cause, 2 another cause),
    censoring groups (up to 3), strata and weights: "real" (continuous), "few" (three
    values, shared by many subjects) or "unit"."""
    X = rng.normal(size=(n, d))
    t = rng.integers(1, 7, size=n).astype(float)
    kind = rng.integers(0, 3, size=n)
    kind[:2] = 1
    group = rng.integers(0, 3, size=n)
    stratum = rng.integers(0, n_strata, size=n)
    stratum[:n_strata] = np.arange(n_strata)
    w = {"real": rng.uniform(0.3, 2.5, size=n), "few": rng.choice([0.5, 1.0, 2.0], size=n),
         "unit": np.ones(n)}[weights]
    return X, t, kind, group, stratum, w


def data_of(X, t, kind, group, stratum, w, ties="breslow"):
    group = np.unique(group, return_inverse=True)[1]
    stratum = np.unique(stratum, return_inverse=True)[1]
    return build_fine_gray_data(X, t, kind, group, weight=w, stratum=stratum, ties=ties)


def literal_deleted(D, theta, rows):
    """Gradients and Hessians with each sorted row deleted: the presence mask itself."""
    P = np.ones((len(rows), D.n))
    P[np.arange(len(rows)), rows] = 0.0
    _, g, h = loss_grad_hess(D, np.repeat(theta[None, :], len(rows), axis=0), P)
    return g, h


@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("weights", ["real", "few", "unit"])
@pytest.mark.parametrize("seed", range(8))
def test_closed_form_deletion_is_literal_deletion(seed, weights, ties):
    """Deleted gradients, Hessians and baseline jumps (every subject; Kaplan-Meier
    re-estimated in its (stratum, cengroup) group; with Efron's ties a failing subject
    leaves its own tie) equal the literal deletion."""
    rng = np.random.default_rng(500 + seed)
    D = data_of(*tied_design(rng, int(rng.integers(12, 40)), 2, weights=weights,
                             n_strata=int(rng.integers(1, 4))), ties=ties)
    theta = 0.4 * rng.normal(size=2)
    st_ = DeletionState(D, theta, hessian=True)
    g, h = deleted_derivatives(st_)
    g_lit, h_lit = literal_deleted(D, theta, np.arange(D.n))
    ok = np.isfinite(g_lit).all(axis=1)
    assert ok.sum() >= D.n - 3
    assert rel(g[ok], g_lit[ok]) < 1e-11
    assert rel(h[ok], h_lit[ok]) < 1e-11
    jumps = deleted_baseline_jumps(st_)
    P = np.ones((D.n, D.n)) - np.eye(D.n)
    lit, log_scale, _ = baseline_jumps(D, np.repeat(theta[None, :], D.n, axis=0), P)
    full = baseline_jumps(D, theta[None, :], np.ones((1, D.n)))[1]
    assert rel(jumps, lit * np.exp(full - log_scale)[:, None]) < 1e-11


def test_the_cases_of_the_closed_form_are_reached():
    """The designs above have what the closed form distinguishes: several weights per
    group, subjects alone and last in their group (deleted literally), strata whose
    failure times interleave."""
    rng = np.random.default_rng(503)
    D = data_of(*tied_design(rng, 30, 2, weights="few", n_strata=3))
    st_ = DeletionState(D, np.zeros(2), hessian=False)
    assert st_.special.any() and not st_.special.all()
    assert len({(g, w) for g, w in zip(D.group, D.weight)}) > D.n_groups
    times = [set(D.time[D.stratum == s]) for s in range(D.n_strata)]
    assert times[0] & times[1]


@pytest.mark.parametrize("seed", range(5))
def test_strata_are_separate_likelihoods_summed(seed):
    """Loss, gradient, Hessian = the sums over strata of each stratum's own Fine-Gray
    likelihood (its own censoring groups); a deletion changes only its stratum's term."""
    rng = np.random.default_rng(700 + seed)
    X, t, kind, group, stratum, w = tied_design(rng, 45, 3, n_strata=3)
    D = data_of(X, t, kind, group, stratum, w)
    theta = 0.3 * rng.normal(size=3)
    parts = []
    for s in range(3):
        m = stratum == s
        Ds = build_fine_gray_data(X[m], t[m], kind[m], np.unique(group[m],
                                  return_inverse=True)[1], weight=w[m])
        parts.append((m, Ds, loss_grad_hess(Ds, theta[None, :], np.ones((1, Ds.n)))))
    ours = loss_grad_hess(D, theta[None, :], np.ones((1, D.n)))
    for k in range(3):
        total = sum(p[2][k] for p in parts)
        assert rel(ours[k], total) < 1e-12
    # deleting a subject: its stratum's deleted gradient plus the others' full gradients
    g_del, _ = deleted_derivatives(DeletionState(D, theta, hessian=False))
    g_caller = D.to_caller_order(g_del)
    for s, (m, Ds, _) in enumerate(parts):
        own, _ = deleted_derivatives(DeletionState(Ds, theta, hessian=False))
        others = sum(p[2][1][0] for j, p in enumerate(parts) if j != s)
        expect = Ds.to_caller_order(own) + others
        assert rel(g_caller[m], expect) < 1e-11


def duplicated(X, t, status, w):
    """The rows repeated ``w`` times (integer weights) and each original row's copies."""
    rows = np.repeat(np.arange(len(t)), w.astype(int))
    return X[rows], t[rows], status[rows], rows


def quiet_fit(*args, **kw):
    """The fit, or None where it has no maximum (test_fine_gray_properties.fitted)."""
    return fitted(fit_fine_gray, *args, **kw)


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(20, 45), strata=st.booleans())
def test_integer_weights_are_duplicated_subjects(seed, n, strata):
    """Weights 1..3 = the subjects repeated: the fit, its log pseudo-likelihood and
    information; each subject's score is its copies' scores summed; deleting a subject
    (VIF's deleted gradient, the exact refit) is deleting all its copies."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    t = np.round(rng.exponential(np.exp(-X @ [0.5, -0.3])), 1) + 0.1
    status = np.where(rng.uniform(size=n) < 0.25, 0, rng.integers(1, 3, n))
    w = rng.integers(1, 4, size=n).astype(float)
    S = rng.integers(0, 2, size=n) if strata else None
    assume((status == 1).sum() > 6)
    kw = {"strata": S} if strata else {}
    fit = quiet_fit(X, t, status, weights=w, **kw)
    Xd, td, sd, rows = duplicated(X, t, status, w)
    dup = quiet_fit(Xd, td, sd, **({"strata": S[rows]} if strata else {}))
    assume(fit is not None and dup is not None)
    assert rel(fit.coef, dup.coef) < 1e-8
    assert abs(fit.loglik - dup.loglik) <= 1e-10 * abs(dup.loglik)
    assert rel(fit.information, dup.information) < 1e-8
    summed = np.zeros((n, 2))
    np.add.at(summed, rows, dup.scores)
    assert rel(fit.scores, summed) < 1e-7
    audit = FineGrayAudit(fit)
    i = int(np.argmax(w))
    keep = rows != i
    P = keep[None, :].astype(float)
    g_dup = dup.likelihood.grad(fit.coef[None, :], P)
    # on the scale of a subject's score (a deleted gradient can be 0 to rounding)
    assert np.abs(audit.deleted_gradients([i])[0] - g_dup[0]).max() \
        <= 1e-9 * np.abs(fit.scores).max()
    refit = audit.refit([i])
    if refit.status[0] == "ok":
        again = quiet_fit(Xd[keep], td[keep], sd[keep],
                          **({"strata": S[rows][keep]} if strata else {}))
        if again is not None:
            assert rel(refit.theta[0], again.coef) < 1e-7


def test_weighted_stratified_audit_end_to_end():
    """A weighted, stratified fit audited: the exact refits are literal refits without the
    subject, the VIF and Newton track them, and the report's frame carries the weights
    and strata."""
    rng = np.random.default_rng(11)
    n = 160
    X = rng.normal(size=(n, 3))
    t = np.round(rng.exponential(np.exp(-X @ [0.6, -0.4, 0.2])), 1) + 0.1
    status = np.where(rng.uniform(size=n) < 0.3, 0, rng.integers(1, 3, n))
    w = rng.uniform(0.5, 2.0, size=n)
    S = np.where(rng.uniform(size=n) < 0.5, "a", "b")
    cg = rng.integers(0, 2, size=n)
    fit = fit_fine_gray(X, t, status, weights=w, strata=S, cengroup=cg)
    audit = FineGrayAudit(fit)
    codes = np.arange(0, n, 16)
    refits = audit.refit(codes)
    for c, theta in zip(codes, refits.theta):
        keep = np.arange(n) != c
        lit = fit_fine_gray(X[keep], t[keep], status[keep], weights=w[keep], strata=S[keep],
                            cengroup=cg[keep])
        assert rel(theta, lit.coef) < 1e-8
    exact = refits.theta - fit.coef
    for method, tol in (("vif", 0.5), ("newton", 0.05)):
        assert rel(audit.change(method)[codes], exact) < tol
    res = ci.influence(fit, method="vif")
    frame = fit.training_frame()
    assert {"weight", "strata", "cengroup"} <= set(frame.columns)
    assert rel(res.theta_change.to_numpy(), audit.change("vif")) < 1e-12
    # (IF/n)'(IF/n) is the fit's sandwich variance: the weighted scores' sandwich
    change = audit.change("reid")
    assert rel(change.T @ change, fit.var) < 1e-12
    assert rel(fit.scores, fit.data.to_caller_order(crr_scores(fit.data, fit.coef))) < 1e-15


def test_weights_and_strata_inputs_are_checked_and_aligned():
    import pandas as pd
    rng = np.random.default_rng(5)
    n = 60
    X = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"], index=np.arange(n) + 100)
    t = pd.Series(rng.integers(1, 9, n).astype(float), index=X.index)
    status = pd.Series(rng.integers(0, 3, n), index=X.index)
    status.iloc[:5] = 1
    w = pd.Series(rng.uniform(0.5, 2, n), index=X.index)
    S = pd.Series(rng.integers(0, 2, n), index=X.index)
    base = fit_fine_gray(X, t, status, weights=w, strata=S)
    perm = rng.permutation(n)
    shuffled = fit_fine_gray(X, t, status, weights=w.iloc[perm], strata=S.iloc[perm])
    assert rel(shuffled.coef, base.coef) < 1e-12
    with pytest.raises(ci.CoxInputError, match="weights must be positive"):
        fit_fine_gray(X, t, status, weights=-w)
    with pytest.raises(ci.CoxInputError, match="weights"):
        fit_fine_gray(X, t, status, weights=w.to_numpy()[:-1])
    with pytest.raises(ci.CoxInputError, match="ties must be 'breslow'"):
        fit_fine_gray(X, t, status, ties="exact")
    Xc = X.assign(c=np.where(S == 0, 1.0, 2.0))
    with pytest.raises(ci.CoxInputError, match="constant"):
        fit_fine_gray(Xc, t, status, strata=S)                     # constant within strata
    assert w.equals(pd.Series(w.to_numpy(), index=X.index))       # the caller's untouched
    assert isinstance(FineGrayLikelihood(base.data).loss(base.coef), float)


def test_cumulative_incidence_of_a_stratified_weighted_fit():
    """A new patient's cumulative incidence uses its stratum's baseline: the one of that
    stratum's own likelihood (its weighted risk sets and Kaplan-Meier); the data effect
    of each subject (closed form) is the literal deletion's; a stratified fit needs the
    patients' strata."""
    rng = np.random.default_rng(21)
    n = 120
    X = rng.normal(size=(n, 2))
    t = np.round(rng.exponential(np.exp(-X @ [0.6, -0.4])), 1) + 0.1
    status = np.where(rng.uniform(size=n) < 0.3, 0, rng.integers(1, 3, n))
    w = rng.uniform(0.5, 2.0, size=n)
    S = np.where(np.arange(n) % 3 == 0, "x", "y")
    fit = fit_fine_gray(X, t, status, weights=w, strata=S)
    X_new, times = np.array([[0.2, -0.5], [1.0, 0.3]]), [0.5, 1.5]
    target = ci.CumulativeIncidence(X_new, times, strata=["y", "x"])
    value = target.value(fit, fit.coef)[0].reshape(2, 2)
    for p, s in enumerate(["y", "x"]):
        m = S == s
        Ds = build_fine_gray_data(X[m], t[m], np.where(status[m] == 1, 1, np.where(
            status[m] == 0, 0, 2)), np.zeros(m.sum(), dtype=int), weight=w[m])
        jumps, log_scale, _ = baseline_jumps(Ds, fit.coef[None, :], np.ones((1, Ds.n)))
        t_fail = Ds.time[Ds.starts[Ds.fail]]
        for j, tt in enumerate(times):
            H = np.exp(X_new[p] @ fit.coef - log_scale[0]) * jumps[0][t_fail <= tt].sum()
            assert value[p, j] == pytest.approx(-np.expm1(-H), rel=1e-12)
    effect = target.data_effect(fit)
    P = np.ones((n, n)) - np.eye(n)
    literal = target._cif(fit, np.repeat(fit.coef[None, :], n, axis=0),
                          P[:, fit.data.order]) - target.value(fit, fit.coef)
    assert rel(effect, literal) < 1e-10
    with pytest.raises(ValueError, match="the model is stratified"):
        ci.CumulativeIncidence(X_new, times).value(fit, fit.coef)
    res = ci.influence(fit, method="vif", target=target)
    assert res.loo_change.shape == (n, 4) and np.isfinite(res.loo_change.to_numpy()).all()


@pytest.mark.parametrize("N", [1, 2, 7, 40, 300])
def test_efron_tie_terms_are_their_sums(N):
    """:func:`coxinfluence.likelihood.efron.tie_terms` (closed forms through the fraction
    sums) equals the sums over the ranks of the tie, term by term, from small to large
    ties and from a small to an almost complete share of the risk set."""
    from coxinfluence.likelihood.efron import tie_terms
    rng = np.random.default_rng(N)
    S0 = rng.uniform(1.0, 5.0, size=50)
    F0 = S0 * rng.uniform(0.0, 0.999, size=50)
    W = rng.uniform(0.5, 3.0, size=50) * N
    tt = tie_terms(S0, F0, np.full(50, float(N)), W)
    a = np.arange(N)[:, None] / N
    den = S0[None, :] - a * F0[None, :]
    scale = W / N
    want = {"logs": np.log(den).sum(0), "c": (1 / den).sum(0), "c1": (a / den).sum(0),
            "g0": (1 / den ** 2).sum(0), "g1": (a / den ** 2).sum(0),
            "g2": (a * a / den ** 2).sum(0)}
    for name, value in want.items():
        assert rel(getattr(tt, name), scale * value) < 1e-12, name
    assert not tt.bad.any()


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(15, 40))
def test_efron_without_tied_failures_is_breslow(seed, n):
    """With no two failures of the cause at one time Efron's sums are Breslow's: the same
    fit, scores and deleted derivatives, bit for bit up to rounding."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    t = rng.permutation(n) + 1.0
    t[rng.integers(0, n, 5)] = 3.0                      # ties, among which one failure
    status = np.where(rng.uniform(size=n) < 0.3, 0, rng.integers(1, 3, n))
    status[t == 3.0] = np.where(np.arange((t == 3.0).sum()) == 0, 1, 0)
    assume((status == 1).sum() > 4)
    w = rng.uniform(0.5, 2, n)
    fits = [quiet_fit(X, t, status, weights=w, ties=ties) for ties in ("breslow", "efron")]
    assume(all(f is not None for f in fits))
    b, e = fits
    assert rel(e.coef, b.coef) < 1e-12
    assert rel(e.scores, b.scores) < 1e-11
    assert rel(FineGrayAudit(e).deleted[1], FineGrayAudit(b).deleted[1]) < 1e-11

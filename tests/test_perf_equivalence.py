"""The fast paths of issue 13 against the slow references they replace.

- :class:`coxinfluence.likelihood.risk_sets.DeletionGradients` (the gradient of the exact refits:
  sparse deletions, bucket sums, one-thread BLAS) against the batched definition
  ``RiskSets.loss_grad_hess(theta, Deletion)``, with ties, strata, weights, delayed entry,
  subjects and clusters, risk sets emptied by the deletion, and the first tie group's
  events tied.
- The one-problem ``loss_grad_hess`` (the fit: (n,) vectors, tie-group sums of the Hessian)
  against the batched path of the same problem.
- ``RiskSets.third_derivative`` against central differences of the Hessian.
- ``exact_loo`` / ``CoxAudit.refit`` (Halley start, T-corrected Jacobian, quasi-Newton steps)
  against plain Newton-Raphson refits of the deleted data from ``theta_hat`` (the old
  fallback path, the slow reference): 1e-9, and the refits' gradients, evaluated by the
  batched definition, at most 1e-10.
- The data preparation: the one-sort row order equals ``np.lexsort``; the blocked
  identifiability test raises for the same designs as the full SVD.
"""
import numpy as np
import pandas as pd
import pytest
from conftest import tied_data

import coxinfluence as ci
from coxinfluence import CoxInputError
from coxinfluence.data.cox_data import _sort_order, make_cox_data
from coxinfluence.data.deletion import Deletion
from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.cox_audit import CoxAudit
from coxinfluence.likelihood.deletion_gradients import DeletionGradients
from coxinfluence.likelihood.objective import cox_objective
from coxinfluence.likelihood.risk_sets import RiskSets
from coxinfluence.likelihood.third_derivative import third_derivative
from coxinfluence.numerics.newton import newton
from coxinfluence.numerics.rows import ROW_BLOCK


def counting_process(seed, n_subj=40):
    """Subjects with 1-3 contiguous intervals, delayed entry, ties, strata, weights."""
    rng = np.random.default_rng(seed)
    rows = []
    for sid in range(n_subj):
        t = float(rng.integers(0, 3)) if rng.random() < 0.4 else 0.0
        w, s, x2 = rng.uniform(0.5, 2.0), int(rng.integers(0, 2)), rng.normal()
        for _ in range(int(rng.integers(1, 4))):
            t1 = t + float(rng.integers(1, 5))
            rows.append(dict(start=t, stop=t1, event=float(rng.random() < 0.35),
                             x1=rng.normal(), x2=x2, w=w, s=s, id=f"p{sid:03d}"))
            t = t1
    df = pd.DataFrame(rows)
    df.loc[df.index[0], "event"] = 1.0
    return df


def cases():
    """(label, fit, groups) covering the risk-set structures of the core."""
    out = []
    for ties in ("efron", "breslow"):
        X, t, e, w, s = tied_data(11, n=70)
        out.append((f"strata+weights/{ties}", ci.fit_cox(X, t, e, weights=w, strata=s,
                                                         ties=ties), None))
        X, t, e, _, _ = tied_data(12, n=60, strata=False, weights=False)
        t[:4] = t.max() + 1.0                   # the first tie group: several tied events
        e[:4] = 1.0
        out.append((f"plain+first-group-tied/{ties}", ci.fit_cox(X, t, e, ties=ties), None))
        df = counting_process(13)
        fit = ci.fit_cox(df[["x1", "x2"]], df.stop, df.event, start=df.start, id=df.id,
                         weights=df.w, strata=df.s, ties=ties)
        out.append((f"entry+subjects/{ties}", fit, None))
        X, t, e, w, s = tied_data(14, n=60)
        clusters = np.random.default_rng(14).integers(0, 12, size=60)
        out.append((f"clusters/{ties}", ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties),
                    clusters))
    return out


CASES = cases()
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("label,fit,groups", CASES, ids=IDS)
def test_deletion_gradients_equal_the_batched_definition(label, fit, groups):
    units = resolve_units(fit, groups)
    rs = RiskSets(fit.data)
    codes = np.arange(units.n_units)
    rng = np.random.default_rng(0)
    theta = fit.coef + 0.05 * rng.normal(size=(codes.size, fit.data.d))
    ref = rs.loss_grad_hess(theta, Deletion.of_units(units.of_row, codes), hess=False)[1]
    kernel = DeletionGradients(rs, reference=fit.coef)
    got = kernel(theta, kernel.batch(units.of_row, codes))
    scale = max(1.0, np.abs(ref).max())
    assert np.abs(got - ref).max() <= 1e-12 * scale
    # without the reference point (shift by the maximum) and on a sub-batch
    plain = DeletionGradients(rs)
    live = codes[::3]
    sub = plain.batch(units.of_row, codes).take(live)
    assert np.abs(plain(theta[live], sub) - ref[live]).max() <= 1e-12 * scale


@pytest.mark.parametrize("label,fit,groups", CASES, ids=IDS)
def test_kernel_losses_equal_the_batched_definition(label, fit, groups):
    """DeletionGradients.losses (the objective at a batch of refits) is the full data's
    loss of RiskSets.loss_grad_hess, with and without the reference point's shift bound,
    and CoxFit.objective of a batch takes it."""
    rs = RiskSets(fit.data)
    theta = fit.coef + 0.3 * np.random.default_rng(1).normal(size=(9, fit.data.d))
    ref = rs.loss_grad_hess(theta, hess=False, grad=False)[0]
    scale = np.abs(ref).max()
    for kernel in (DeletionGradients(rs, reference=fit.coef), DeletionGradients(rs)):
        assert np.abs(kernel.losses(theta) - ref).max() <= 1e-13 * scale
    assert np.abs(fit.objective(theta) - ref).max() <= 1e-13 * scale
    one = rs.loss_grad_hess(theta[:1], hess=False, grad=False)[0]
    assert np.abs(fit.objective(theta[:1]) - one).max() == 0.0


def test_deletion_gradients_when_a_deletion_empties_risk_sets():
    # the unit holding every row of the latest times: the first risk sets become empty
    X, t, e, _, _ = tied_data(15, n=50, strata=False, weights=False)
    fit = ci.fit_cox(X, t, e)
    top = np.argsort(-t)[:3]
    groups = np.where(np.isin(np.arange(50), top), 0, 1 + np.arange(50))
    units = resolve_units(fit, groups)
    rs = RiskSets(fit.data)
    codes = np.arange(units.n_units)
    theta = np.repeat(fit.coef[None], codes.size, axis=0)
    ref = rs.loss_grad_hess(theta, Deletion.of_units(units.of_row, codes), hess=False)[1]
    kernel = DeletionGradients(rs, reference=fit.coef)
    got = kernel(theta, kernel.batch(units.of_row, codes))
    assert np.isfinite(got).all()
    assert np.abs(got - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("label,fit,groups", CASES, ids=IDS)
def test_one_problem_path_equals_the_batched_path(label, fit, groups):
    rs = RiskSets(fit.data)
    units = resolve_units(fit, groups)
    theta = fit.coef + 0.3 * np.random.default_rng(1).normal(size=fit.data.d)
    for code in (None, 0, units.n_units - 1):
        one = None if code is None else units.deletion(np.array([code]))
        two = None if code is None else units.deletion(np.array([code, code]))
        a = rs.loss_grad_hess(theta[None], one)
        b = rs.loss_grad_hess(np.repeat(theta[None], 2, axis=0), two)
        for x, y in zip(a, b):
            assert np.abs(x[0] - y[0]).max() <= 1e-12 * max(1.0, np.abs(y[0]).max())


def test_one_problem_path_with_an_emptied_risk_set():
    X, t, e, _, _ = tied_data(16, n=40, strata=False, weights=False)
    fit = ci.fit_cox(X, t, e)
    rs = RiskSets(fit.data)
    first = fit.data.group_end[0]                  # the rows of the latest tie group
    deletion = Deletion((np.arange(fit.n) >= first).astype(float)[None])
    a = rs.loss_grad_hess(fit.coef[None], deletion)
    b = rs.loss_grad_hess(np.repeat(fit.coef[None], 2, axis=0),
                          Deletion(np.repeat(deletion.presence, 2, axis=0)))
    for x, y in zip(a, b):
        assert np.isfinite(x).all()
        assert np.abs(x[0] - y[0]).max() <= 1e-12 * max(1.0, np.abs(y[0]).max())


@pytest.mark.parametrize("label,fit,groups", CASES, ids=IDS)
def test_third_derivative_is_the_derivative_of_the_hessian(label, fit, groups):
    rs = RiskSets(fit.data)
    d = fit.data.d
    T = third_derivative(rs, fit.coef, block=7)
    h = 1e-5
    fd = np.empty((d, d, d))
    for a in range(d):
        step = np.zeros(d)
        step[a] = h
        fd[a] = (rs.loss_grad_hess((fit.coef + step)[None])[2][0]
                 - rs.loss_grad_hess((fit.coef - step)[None])[2][0]) / (2 * h)
    assert np.abs(T - fd).max() <= 1e-6 * max(1.0, np.abs(T).max())
    assert np.allclose(T, T.transpose(1, 0, 2)) and np.allclose(T, T.transpose(2, 1, 0))


def newton_refits(fit, units, codes):
    """The slow reference: Newton-Raphson with step halving on the deleted data, from
    ``theta_hat``, to 1e-12 (the former fallback path of the refits)."""
    objective = cox_objective(RiskSets(fit.data), units.deletion(codes), blas=False)
    res = newton(objective, np.repeat(fit.coef[None], codes.size, axis=0), tol=1e-12,
                 max_iter=100)
    return res.theta, res.converged


def refit_gradients(fit, units, codes, theta):
    return RiskSets(fit.data).loss_grad_hess(theta, units.deletion(codes), hess=False)[1]


@pytest.mark.parametrize("label,fit,groups", CASES, ids=IDS)
def test_exact_refits_equal_newton_refits_of_the_deleted_data(label, fit, groups):
    units = resolve_units(fit, groups)
    codes = np.arange(units.n_units)
    res = CoxAudit(fit, groups).refit(codes)
    ok = res.status == "ok"
    assert ok.mean() > 0.8
    ref, converged = newton_refits(fit, units, codes[ok])
    assert converged.all()
    assert np.abs(res.theta[ok] - ref).max() <= 1e-9
    g = refit_gradients(fit, units, codes[ok], res.theta[ok])
    assert np.abs(g).max() <= 1e-10


def test_exact_loo_on_metabric_equals_newton_refits(shared_data_dir):
    from coxinfluence.datasets import paper_split
    X, t, e = paper_split("metabric", path=shared_data_dir).arrays("train")
    fit = ci.fit_cox(X, t, e)
    units = resolve_units(fit)
    loo = np.asarray(ci.exact_loo(fit, progress=False))
    # the 30 most influential rows (largest VIF) and 30 others
    size = np.abs(np.asarray(ci.vif(fit))).max(axis=1)
    codes = np.unique(np.r_[np.argsort(-size)[:30], np.arange(0, fit.n, fit.n // 30)])
    ref, converged = newton_refits(fit, units, codes)
    assert converged.all()
    assert np.abs(loo[codes] - ref).max() <= 1e-9
    assert np.abs(refit_gradients(fit, units, codes, loo[codes])).max() <= 1e-10


def test_exact_loo_batch_size_changes_no_refit_beyond_rounding():
    X, t, e, w, s = tied_data(17, n=90)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s)
    a = np.asarray(ci.exact_loo(fit, progress=False))
    b = np.asarray(ci.exact_loo(fit, progress=False, batch_size=7))
    assert np.abs(a - b).max() <= 1e-11


def test_blocked_cumulative_sum_of_wide_batches():
    from coxinfluence.likelihood.deletion_gradients import _cumsum_rows
    rng = np.random.default_rng(21)
    for m, B in ((700, 200), (64, 300), (1000, 40), (5, 500)):
        A = rng.random((m, B))
        ref = np.cumsum(A, axis=0)
        assert np.allclose(_cumsum_rows(A.copy()), ref, rtol=1e-14, atol=0)


def test_sort_order_equals_lexsort():
    rng = np.random.default_rng(18)
    for strata in (np.zeros(500, dtype=np.intp), rng.integers(0, 4, size=500)):
        time = rng.integers(0, 30, size=500).astype(float)
        event = (rng.random(500) < 0.6).astype(float)
        assert np.array_equal(_sort_order(time, event, strata),
                              np.lexsort((-event, -time, strata)))


def test_blocked_identifiability_check_matches_the_svd():
    rng = np.random.default_rng(19)
    n = ROW_BLOCK + 5000                        # more than one block of rows
    X = rng.normal(size=(n, 3))
    t = rng.exponential(size=n)
    e = (rng.random(n) < 0.5).astype(float)
    make_cox_data(X, t, e)                       # identifiable
    near = X.copy()
    near[:, 2] = near[:, 0] + near[:, 1] + 1e-6 * rng.normal(size=n)   # cond ~1e6: fine
    make_cox_data(near, t, e)
    dep = X.copy()
    dep[:, 2] = 2 * dep[:, 0] - dep[:, 1] + 1e-14 * rng.normal(size=n)
    with pytest.raises(CoxInputError, match="collinear columns"):
        make_cox_data(dep, t, e)
    const = X.copy()
    const[:, 1] = 3.0
    with pytest.raises(CoxInputError, match="constant column"):
        make_cox_data(const, t, e)
    strata = rng.integers(0, 3, size=n)
    within = X.copy()
    within[:, 1] = strata.astype(float)          # constant within every stratum
    with pytest.raises(CoxInputError, match="constant column"):
        make_cox_data(within, t, e, strata=strata)


def test_fit_never_modifies_the_callers_arrays():
    X, t, e, w, s = tied_data(20, n=60)
    copies = [a.copy() for a in (X, t, e, w, s)]
    ci.fit_cox(X, t, e, weights=w, strata=s)
    ci.fit_cox(pd.DataFrame(X, columns=["a", "b", "c"]), t, e)
    for a, b in zip((X, t, e, w, s), copies):
        assert np.array_equal(a, b)

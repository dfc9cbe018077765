"""Autodiff Cox VIF vs the closed-form core (issue 4, requirement 1) and solvers."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import coxinfluence as ci  # noqa: E402
import coxinfluence.autodiff as ad  # noqa: E402
from coxinfluence.autodiff import losses  # noqa: E402


def _data(seed=0, n=70, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    t = rng.integers(1, 12, size=n).astype(float)          # many ties
    e = (rng.random(n) < 0.7).astype(float)
    st = rng.integers(0, 3, size=n)
    w = rng.uniform(0.5, 2.0, size=n)
    return X, t, e, st, w


CASES = [(ties, sw) for ties in ("breslow", "efron") for sw in (False, True)]


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(np.asarray(b)))


@pytest.mark.parametrize("ties,sw", CASES)
def test_loss_and_deletion_match_core(ties, sw):
    X, t, e, st, w = _data(1)
    kw = dict(weights=w, strata=st) if sw else {}
    L = losses.cox(X, t, e, ties=ties, **kw)
    th = np.array([0.3, -0.2, 0.1])
    n = len(t)
    assert np.isclose(float(L(jnp.asarray(th), jnp.ones(n))),
                      ci.cox_loss(th, X, t, e, ties=ties, **kw), rtol=1e-12)
    # presence 0 = the row deleted from the data (oracle: core on the reduced data)
    for i in (0, int(np.nonzero(e)[0][3]), n - 1):
        keep = np.arange(n) != i
        kwi = dict(weights=w[keep], strata=st[keep]) if sw else {}
        ref = ci.cox_loss(th, X[keep], t[keep], e[keep], ties=ties, **kwi)
        got = float(L(jnp.asarray(th), jnp.ones(n).at[i].set(0.0)))
        assert np.isclose(got, ref, rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("ties,sw", CASES)
def test_vif_and_weight_influence_equal_closed_form(ties, sw):
    X, t, e, st, w = _data(2)
    kw = dict(weights=w, strata=st) if sw else {}
    fit = ci.fit_cox(X, t, e, ties=ties, **kw)
    L = losses.cox(X, t, e, ties=ties, **kw)
    n = len(t)
    v = ad.vif(L, fit.coef, n)
    assert _rel(v, ci.vif(fit)) < 1e-8
    r = ad.weight_influence(L, fit.coef, n)
    assert _rel(r, ci.reid_influence(fit)) < 1e-8
    # own fit agrees with the core's Newton fit
    assert np.max(np.abs(L.fit() - fit.coef)) < 1e-8


def test_efron_deletion_is_not_zero_weight_but_breslow_is():
    X, t, e, _, _ = _data(3)
    n = len(t)
    # a death that shares its time with another death
    tied = [i for i in np.nonzero(e)[0] if np.sum((t == t[i]) & (e == 1)) >= 2][0]
    th = jnp.asarray([0.4, -0.3, 0.2])
    eps = jnp.ones(n).at[tied].set(1e-300)
    gone = jnp.ones(n).at[tied].set(0.0)
    Lb, Le = losses.cox(X, t, e, ties="breslow"), losses.cox(X, t, e, ties="efron")
    assert np.isclose(float(Lb.weighted(th, eps)), float(Lb(th, gone)), rtol=1e-13)
    assert abs(float(Le.weighted(th, eps)) - float(Le(th, gone))) > 1e-3


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_loo_retrainer_matches_core_exact_loo(ties):
    X, t, e, st, w = _data(4, n=50)
    fit = ci.fit_cox(X, t, e, ties=ties, weights=w, strata=st)
    L = losses.cox(X, t, e, ties=ties, weights=w, strata=st)
    loo = L.loo(fit.coef)
    assert np.max(np.abs(loo - np.asarray(ci.exact_loo(fit)))) < 1e-8


def test_second_call_reuses_compiled_functions():
    """The per-loss cache: a second vif / weight_influence call on the same loss and
    shapes (new theta included) compiles nothing, and gives the closed-form values."""
    from coxinfluence.autodiff.core import compiled

    X, t, e, _, _ = _data(9, n=40)
    fit = ci.fit_cox(X, t, e)
    L = losses.cox(X, t, e)
    ad.vif(L, fit.coef, 40, batch_size=16)
    fns = compiled(L)
    sizes = {k: f._cache_size() for k, f in fns.items() if hasattr(f, "_cache_size")}
    assert sizes["deletion_rows"] == 1 and sizes["value_and_grad"] == 1
    v2 = ad.vif(L, fit.coef * 1.0, 40, batch_size=16)           # 40 = 16+16+8: padded
    assert {k: fns[k]._cache_size() for k in sizes} == sizes
    assert _rel(v2, ci.vif(fit)) < 1e-8


@pytest.mark.slow
def test_target_and_objects_subset():
    X, t, e, _, _ = _data(5)
    fit = ci.fit_cox(X, t, e)
    L = losses.cox(X, t, e)
    n = len(t)
    Xt = np.random.default_rng(0).normal(size=(4, 3))
    target = lambda th: jnp.exp(jnp.asarray(Xt) @ th)  # noqa: E731  relative risk
    J = np.exp(Xt @ fit.coef)[:, None] * Xt
    ref = np.asarray(ci.vif(fit)) @ J.T
    assert _rel(ad.vif(L, fit.coef, n, target_fn=target), ref) < 1e-10
    objs = np.array([3, 0, 7])
    assert _rel(ad.vif(L, fit.coef, n, objects=objs), np.asarray(ci.vif(fit))[objs]) < 1e-10
    # scalar target -> (n, 1); more targets than objects uses the other solve order
    s = ad.vif(L, fit.coef, n, target_fn=lambda th: th[0])
    assert s.shape == (n, 1) and _rel(s[:, 0], np.asarray(ci.vif(fit))[:, 0]) < 1e-10
    big = np.random.default_rng(1).normal(size=(n + 5, 3))
    tb = ad.vif(L, fit.coef, n, target_fn=lambda th: jnp.asarray(big) @ th)
    assert _rel(tb, np.asarray(ci.vif(fit)) @ big.T) < 1e-10


@pytest.mark.slow
def test_few_targets_use_forward_mode_and_agree_with_full_vif():
    """K < d targets: VIF_f(i) = -g_i . s_k by forward-mode JVPs (never forming g_i);
    oracle: the full reverse-mode VIF rows contracted with the target Jacobian."""
    X, t, e, _, _ = _data(8, n=60)
    L = losses.cox_mlp(X, t, e, hidden=6)              # d = 30 parameters
    th = L.fit(seed=0, steps=300)
    n, damp = len(t), 0.1
    tgt = lambda p: L.eta(p, X[:3])  # noqa: E731  K = 3 log-risks
    J = np.asarray(jax.jacrev(tgt)(jnp.asarray(th)))
    full = ad.vif(L, th, n, damping=damp)
    assert _rel(ad.vif(L, th, n, target_fn=tgt, damping=damp), full @ J.T) < 1e-10
    objs = np.array([5, 0, 59, 5])
    sub = ad.vif(L, th, n, target_fn=tgt, damping=damp, objects=objs, batch_size=3)
    assert _rel(sub, (full @ J.T)[objs]) < 1e-10
    rev = ad.vif(L, th, n, target_fn=tgt, damping=damp, objects=objs, target_mode="reverse")
    assert _rel(rev, sub) < 1e-10
    # many targets (K > 16): auto takes reverse mode; forward mode gives the same values
    many = lambda p: L.eta(p, X[:20])  # noqa: E731
    J20 = np.asarray(jax.jacrev(many)(jnp.asarray(th)))
    for mode in ("auto", "forward"):
        got = ad.vif(L, th, n, target_fn=many, damping=damp, target_mode=mode)
        assert _rel(got, full @ J20.T) < 1e-10
    with pytest.raises(ValueError, match="target_mode"):
        ad.vif(L, th, n, damping=damp, target_mode="sideways")
    wfull = ad.weight_influence(L, th, n, damping=damp)
    w = ad.weight_influence(L, th, n, target_fn=tgt, damping=damp, objects=objs)
    assert _rel(w, (wfull @ J.T)[objs]) < 1e-10
    # linear Cox, Efron with strata and weights: weight-influence target = Reid's IF . J
    X, t, e, st, wt = _data(9)
    fit = ci.fit_cox(X, t, e, ties="efron", weights=wt, strata=st)
    Lc = losses.cox(X, t, e, ties="efron", weights=wt, strata=st)
    T = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0]])
    got = ad.weight_influence(Lc, fit.coef, len(t), target_fn=lambda p: jnp.asarray(T) @ p)
    assert _rel(got, np.asarray(ci.reid_influence(fit)) @ T.T) < 1e-8


@pytest.mark.slow
def test_hessian_extreme_eigenvalues_lanczos():
    X, t, e, _, _ = _data(10, n=60)
    L = losses.cox_mlp(X, t, e, hidden=5)              # d = 25, indefinite after Adam
    th = L.fit(seed=0, steps=100)
    n = len(t)
    ev = np.linalg.eigvalsh(ad.hessian_matrix(lambda p: L(p, jnp.ones(n)), th)) / n
    lo, hi = ad.hessian_extreme_eigenvalues(L, th, n, iters=L.n_params)
    assert lo == pytest.approx(ev[0], rel=1e-8, abs=1e-10)
    assert hi == pytest.approx(ev[-1], rel=1e-8)
    # fewer steps: Ritz values lie inside the spectrum and approach its ends
    lo8, hi8 = ad.hessian_extreme_eigenvalues(L, th, n, iters=8, seed=3)
    assert ev[0] - 1e-12 <= lo8 <= ev[-1] and ev[0] <= hi8 <= ev[-1] + 1e-12
    assert hi8 == pytest.approx(ev[-1], rel=1e-3)
    with pytest.raises(ValueError, match="iters"):
        ad.hessian_extreme_eigenvalues(L, th, n, iters=0)


@pytest.mark.slow
@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_cg_and_lissa_reproduce_explicit(ties):
    X, t, e, st, w = _data(6, n=120)
    fit = ci.fit_cox(X, t, e, ties=ties, weights=w, strata=st)
    L = losses.cox(X, t, e, ties=ties, weights=w, strata=st)
    n = len(t)
    ref = np.asarray(ci.vif(fit))
    assert _rel(ad.vif(L, fit.coef, n, solver="cg"), ref) < 1e-6
    # LiSSA on three target directions (few right-hand sides keep it fast)
    T = np.array([[1.0, 0, 0], [0, 1.0, 0], [0.3, -0.5, 1.0]])
    tgt = lambda th: jnp.asarray(T) @ th  # noqa: E731
    li = ad.vif(L, fit.coef, n, solver="lissa", target_fn=tgt,
                solver_options=dict(depth=2000, batch_terms=10, seed=0))
    assert np.corrcoef(li.ravel(), (ref @ T.T).ravel())[0, 1] > 0.98
    # the deterministic Neumann series converges to the exact answer
    li_full = ad.vif(L, fit.coef, n, solver="lissa", target_fn=tgt,
                     solver_options=dict(depth=2000))
    assert _rel(li_full, ref @ T.T) < 1e-6


@pytest.mark.slow
def test_cox_mlp_cg_and_lissa_match_explicit():
    X, t, e, _, _ = _data(7, n=100)
    L = losses.cox_mlp(X, t, e, hidden=4)
    th = L.fit(seed=0, steps=300)
    n, damp = len(t), 0.05
    tgt = lambda p: L.eta(p, X[:5])  # noqa: E731  log-risk of 5 rows
    ex = ad.vif(L, th, n, target_fn=tgt, damping=damp)
    cg = ad.vif(L, th, n, target_fn=tgt, damping=damp, solver="cg")
    assert _rel(cg, ex) < 1e-6
    li = ad.vif(L, th, n, target_fn=tgt, damping=damp, solver="lissa",
                solver_options=dict(depth=2000, batch_terms=20, seed=1))
    assert np.corrcoef(li.ravel(), ex.ravel())[0, 1] > 0.95
    assert L.n_params == (3 + 2) * 4


def test_explicit_solver_errors_and_damping():
    A = np.diag([2.0, -1.0, 3.0])
    loss = lambda th, p: 0.5 * th @ jnp.asarray(A) @ th + jnp.sum(p * th[0])  # noqa: E731
    with pytest.raises(ValueError, match=r"not positive definite.*damping > 2\.500e-01") as err:
        ad.vif(loss, np.zeros(3), 4)
    assert isinstance(err.value, ad.NotPositiveDefiniteError)
    assert err.value.min_eigenvalue == pytest.approx(-0.25)       # of H/n = A/4
    lam = 0.7
    v = ad.vif(loss, np.zeros(3), 4, damping=lam)
    # oracle: -(A/n + lam I)^{-1} e_0 for each object (gradient difference = e_0)
    ref = -np.linalg.solve(A / 4 + lam * np.eye(3), np.eye(3)[0])
    assert np.allclose(v, np.tile(ref, (4, 1)), rtol=1e-12)
    with pytest.raises(ad.HessianMemoryError):
        ad.vif(loss, np.zeros(3), 4, damping=lam, solver_options=dict(max_bytes=10))


@pytest.mark.slow
def test_input_validation_and_no_mutation():
    X, t, e, st, w = _data(8)
    copies = [a.copy() for a in (X, t, e, st, w)]
    L = losses.cox(X, t, e, weights=w, strata=st)
    th = L.fit()
    th_copy = th.copy()
    ad.vif(L, th, len(t))
    for a, c in zip((X, t, e, st, w, th), copies + [th_copy]):
        assert np.array_equal(a, c)
    with pytest.raises(ValueError, match="event"):
        losses.cox(X, t, e * 2)
    with pytest.raises(ValueError, match="weights"):
        losses.cox(X, t, e, weights=-w)
    with pytest.raises(ValueError, match="ties"):
        losses.cox(X, t, e, ties="exact")
    with pytest.raises(ValueError, match="length"):
        losses.cox(X, t[:-1], e)
    with pytest.raises(ValueError, match="no events"):
        losses.cox(X, t, 0 * e)
    with pytest.raises(ValueError, match="n_objects"):
        ad.vif(L, th, 0)
    with pytest.raises(ValueError, match="theta_hat"):
        ad.vif(L, th * np.nan, len(t))
    with pytest.raises(ValueError, match="scalar"):
        ad.vif(lambda a, p: a * p.sum(), th, len(t))
    with pytest.raises(ValueError, match="solver"):
        ad.vif(L, th, len(t), solver="newton")
    with pytest.raises(ValueError, match="objects"):
        ad.vif(L, th, len(t), objects=np.array([len(t)]))

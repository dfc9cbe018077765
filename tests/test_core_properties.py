"""Property tests (hypothesis): equivariances the Cox influence functions must satisfy."""
import numpy as np
from conftest import tied_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import coxinfluence as ci

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(0, 10_000)
ties_methods = st.sampled_from(["efron", "breslow"])


def influences(fit):
    import warnings
    warnings.simplefilter("ignore", ci.LeaveOneOutWarning)
    return {"reid": np.asarray(ci.reid_influence(fit)), "vif": np.asarray(ci.vif(fit)),
            "loo": np.asarray(ci.exact_loo(fit, progress=False))}


@SETTINGS
@given(seed=seeds, ties=ties_methods, n=st.integers(25, 70))
def test_row_permutation_permutes_results(seed, ties, n):
    X, t, e, w, s = tied_data(seed, n=n)
    perm = np.random.default_rng(seed + 1).permutation(n)
    a = influences(ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties))
    fit_p = ci.fit_cox(X[perm], t[perm], e[perm], weights=w[perm], strata=s[perm], ties=ties)
    b = influences(fit_p)
    for key in a:
        # undefined refits (separation in a small sample) are NaN in both orders
        assert np.allclose(b[key], a[key][perm], rtol=1e-8, atol=1e-10, equal_nan=True), key


@SETTINGS
@given(seed=seeds, ties=ties_methods, shift=st.floats(-50, 50), scale=st.floats(0.1, 10))
def test_covariate_shift_invariance_and_scale_equivariance(seed, ties, shift, scale):
    X, t, e, w, s = tied_data(seed, n=50)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    X2 = X.copy()
    X2[:, 0] = X2[:, 0] * scale + shift
    fit2 = ci.fit_cox(X2, t, e, weights=w, strata=s, ties=ties)
    factor = np.ones(X.shape[1])
    factor[0] = 1 / scale
    assert np.allclose(fit2.coef, fit.coef * factor, rtol=1e-8, atol=1e-10)
    for method in (ci.reid_influence, ci.vif):
        ref = np.asarray(method(fit)) * factor
        assert np.allclose(np.asarray(method(fit2)), ref, rtol=1e-7,
                           atol=1e-8 * np.abs(ref).max())


@SETTINGS
@given(seed=seeds, n=st.integers(25, 60))
def test_integer_weights_equal_duplicated_rows_breslow(seed, n):
    X, t, e, _, s = tied_data(seed, n=n, weights=False)
    k = np.random.default_rng(seed).integers(1, 4, size=n)
    rep = np.repeat(np.arange(n), k)
    fw = ci.fit_cox(X, t, e, weights=k.astype(float), strata=s, ties="breslow")
    fd = ci.fit_cox(X[rep], t[rep], e[rep], strata=s[rep], ties="breslow")
    assert np.allclose(fw.coef, fd.coef, rtol=1e-9, atol=1e-11)
    assert np.isclose(fw.loglik, fd.loglik, rtol=1e-11)
    assert np.allclose(fw.information, fd.information, rtol=1e-9)
    # dfbeta scale (IF_n / n): a weight-k row moves theta as much as its k copies together
    dfb_w = np.asarray(ci.reid_influence(fw)) / n
    dfb_d = np.asarray(ci.reid_influence(fd)) / rep.size
    summed = np.zeros_like(dfb_w)
    np.add.at(summed, rep, dfb_d)
    assert np.allclose(dfb_w, summed, rtol=1e-8, atol=1e-12)


@SETTINGS
@given(seed=seeds, n=st.integers(25, 60))
def test_integer_weights_equal_duplicated_censored_rows_efron(seed, n):
    """Efron counts the events at a time, so a duplicated event is a tie, not a weight of 2;
    duplicating censored rows is the same as weighting them (R's weighted Efron)."""
    X, t, e, _, s = tied_data(seed, n=n, weights=False)
    k = np.where(e == 0, np.random.default_rng(seed).integers(1, 4, size=n), 1)
    rep = np.repeat(np.arange(n), k)
    fw = ci.fit_cox(X, t, e, weights=k.astype(float), strata=s, ties="efron")
    fd = ci.fit_cox(X[rep], t[rep], e[rep], strata=s[rep], ties="efron")
    assert np.allclose(fw.coef, fd.coef, rtol=1e-9, atol=1e-11)
    assert np.allclose(fw.information, fd.information, rtol=1e-9)


@SETTINGS
@given(seed=seeds, ties=ties_methods)
def test_strata_equal_separate_fits(seed, ties):
    """With stratum-specific coefficients, a stratified fit is the separate fits side by side:
    coefficients, exact leave-one-out and (rescaled by n / n_s) VIF and Reid per block."""
    X, t, e, w, s = tied_data(seed, n=90, d=2)
    n, d = X.shape
    blocks = np.zeros((n, 3 * d))
    for k in range(3):
        blocks[s == k, k * d:(k + 1) * d] = X[s == k]
    fit = ci.fit_cox(blocks, t, e, weights=w, strata=s, ties=ties)
    res = influences(fit)
    for k in range(3):
        m = s == k
        cols = slice(k * d, (k + 1) * d)
        sep = ci.fit_cox(X[m], t[m], e[m], weights=w[m], ties=ties)
        assert np.allclose(fit.coef[cols], sep.coef, rtol=1e-8, atol=1e-10)
        sep_res = influences(sep)
        # a deletion without a maximum (NaN) is one in both
        assert np.allclose(res["loo"][m][:, cols], sep_res["loo"], rtol=1e-7, atol=1e-9,
                           equal_nan=True)
        for key in ("reid", "vif"):
            ours = res[key][m][:, cols] / n
            theirs = sep_res[key] / m.sum()
            assert np.allclose(ours, theirs, rtol=1e-7, atol=1e-9 * np.abs(theirs).max()), key


@SETTINGS
@given(seed=seeds, ties=ties_methods, theta=st.lists(st.floats(-1, 1), min_size=3, max_size=3))
def test_stratified_loss_is_sum_of_stratum_losses(seed, ties, theta):
    X, t, e, w, s = tied_data(seed, n=60)
    kw = dict(weights=w, strata=s, ties=ties)
    total = [ci.cox_loss(theta, X, t, e, **kw), ci.cox_gradient(theta, X, t, e, **kw),
             ci.cox_hessian(theta, X, t, e, **kw)]
    parts = [0.0, 0.0, 0.0]
    for k in np.unique(s):
        m = (s == k)
        if e[m].sum() == 0:
            continue
        args = (theta, X[m], t[m], e[m])
        parts[0] += ci.cox_loss(*args, weights=w[m], ties=ties)
        parts[1] += ci.cox_gradient(*args, weights=w[m], ties=ties)
        parts[2] += ci.cox_hessian(*args, weights=w[m], ties=ties)
    for a, b in zip(total, parts):
        assert np.allclose(a, b, rtol=1e-11, atol=1e-11)

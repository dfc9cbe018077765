"""Flags (coxinfluence.influence_functions.stability): the information split against its definition
and R-free
literal sums, the third derivative against finite differences, the corrected changes
against their defining formulas and exact refits, and the undefined units on designs
built to have them."""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import eigh

import coxinfluence as ci

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paper_appendix"))
import flag_estimates  # noqa: E402  (research estimates measured by bench_flags.py)

from coxinfluence.data.deletion import Deletion
from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions import stability as flags
from coxinfluence.influence_functions.cox_audit import CoxAudit


def design(seed=0, n=70, d=3):
    """Tied times (rounded), a binary column, random censoring."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, -1] = rng.integers(0, 2, n)
    t = np.round(rng.exponential(size=n), 1) + 0.1
    e = (rng.uniform(size=n) < 0.7).astype(float)
    return X, t, e, rng


def counting(seed=1, n_sub=30):
    """Subjects with two non-overlapping intervals (0, t1], (t1, t2]; the event (if any)
    on the second; the covariate changes between the intervals."""
    rng = np.random.default_rng(seed)
    t1 = np.round(rng.uniform(0.2, 1.0, n_sub), 1)
    t2 = t1 + np.round(rng.exponential(size=n_sub), 1) + 0.1
    ev = (rng.uniform(size=n_sub) < 0.7).astype(float)
    x0 = rng.normal(size=n_sub)
    X = np.column_stack([np.r_[x0, x0 + rng.normal(size=n_sub)],
                         np.r_[rng.integers(0, 2, n_sub), rng.integers(0, 2, n_sub)]])
    start = np.r_[np.zeros(n_sub), t1]
    stop = np.r_[t1, t2]
    event = np.r_[np.zeros(n_sub), ev]
    ids = np.r_[np.arange(n_sub), np.arange(n_sub)]
    return X.astype(float), stop, event, start, ids


def cases():
    X, t, e, rng = design()
    w = rng.uniform(0.5, 2.0, len(t))
    s = rng.integers(0, 3, len(t))
    entry = np.maximum(t - np.round(rng.uniform(0.1, 1.5, len(t)), 1), 0) - 0.05
    out = []
    for ties in ("efron", "breslow"):
        out += [(f"{ties}", dict(X=X, time=t, event=e, ties=ties), None),
                (f"{ties}-weights", dict(X=X, time=t, event=e, weights=w, ties=ties), None),
                (f"{ties}-strata", dict(X=X, time=t, event=e, strata=s, ties=ties), None),
                (f"{ties}-entry", dict(X=X, time=t, event=e, start=entry, ties=ties), None),
                (f"{ties}-all", dict(X=X, time=t, event=e, start=entry, weights=w, strata=s,
                                     ties=ties), None)]
        Xc, stop, ev, start, ids = counting()
        out.append((f"{ties}-subjects", dict(X=Xc, time=stop, event=ev, start=start, id=ids,
                                             ties=ties), None))
        out.append((f"{ties}-clusters", dict(X=X, time=t, event=e, ties=ties),
                    np.arange(len(t)) // 3))
    return out


CASES = cases()


def fit_of(kw):
    return ci.fit_cox(kw["X"], kw["time"], kw["event"],
                      **{k: v for k, v in kw.items() if k not in ("X", "time", "event")})


@pytest.mark.parametrize("name,kw,groups", CASES, ids=[c[0] for c in CASES])
def test_split_sums_to_the_information(name, kw, groups):
    fit = fit_of(kw)
    units = resolve_units(fit, groups)
    C = flag_estimates.information_split(fit, units)
    H = fit.information
    assert C.shape == (units.n_units, fit.data.d, fit.data.d)
    assert np.abs(C.sum(axis=0) - H).max() <= 1e-10 * np.abs(H).max()
    # each part is a sum of weighted outer products: symmetric positive semi-definite
    assert np.allclose(C, C.transpose(0, 2, 1), rtol=0, atol=1e-14 * np.abs(H).max())
    assert np.linalg.eigvalsh(C).min() >= -1e-12 * np.abs(H).max()


def literal_split(X, time, event, theta, *, weights=None, strata=None, start=None,
                  ties="efron"):
    """``C_j = sum_k m_k v_jk u_j (x_j - a_k)(x_j - a_k)'/den_k`` by loops over the event
    terms and the rows of their risk sets (caller's row order)."""
    n, d = X.shape
    w = np.ones(n) if weights is None else weights
    s = np.zeros(n) if strata is None else strata
    u = w * np.exp(X @ theta)
    C = np.zeros((n, d, d))
    for st in np.unique(s):
        for tt in np.unique(time[(s == st) & (event == 1)]):
            D = np.flatnonzero((s == st) & (time == tt) & (event == 1))
            R = (s == st) & (time >= tt)
            if start is not None:
                R &= start < tt
            R = np.flatnonzero(R)
            m = w[D].mean()
            for r in range(D.size):
                c = r / D.size if ties == "efron" else 0.0
                v = np.where(np.isin(R, D), 1.0 - c, 1.0)
                den = (v * u[R]).sum()
                a = (v * u[R]) @ X[R] / den
                for j, vj in zip(R, v):
                    C[j] += m * vj * u[j] * np.outer(X[j] - a, X[j] - a) / den
    return C


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_row_parts_equal_the_literal_sum(ties):
    X, t, e, rng = design(seed=3, n=30, d=2)
    w = rng.uniform(0.5, 2.0, 30)
    s = rng.integers(0, 2, 30)
    entry = np.maximum(t - 1.0, 0) - 0.05
    for kw in (dict(), dict(weights=w, strata=s), dict(start=entry, weights=w)):
        fit = ci.fit_cox(X, t, e, ties=ties, **kw)
        C = flag_estimates.information_split(fit)
        ref = literal_split(X, t, e, fit.coef, ties=ties, **kw)
        assert np.abs(C - ref).max() <= 1e-12 * np.abs(ref).max()


def test_third_derivative_is_the_derivative_of_the_hessian():
    for name, kw, _ in CASES[:5] + CASES[7:12]:
        fit = fit_of(kw)
        T = flag_estimates.third_derivative(fit)
        args = {k: v for k, v in kw.items() if k not in ("X", "time", "event", "id")}
        h = 1e-5
        num = np.empty_like(T)
        for a in range(fit.data.d):
            step = np.zeros(fit.data.d)
            step[a] = h
            num[a] = (ci.cox_hessian(fit.coef + step, kw["X"], kw["time"], kw["event"], **args)
                      - ci.cox_hessian(fit.coef - step, kw["X"], kw["time"], kw["event"],
                                       **args)) / (2 * h)
        assert np.abs(T - num).max() <= 1e-7 * np.abs(T).max(), name
        assert np.allclose(T, T.transpose(1, 0, 2)) and np.allclose(T, T.transpose(0, 2, 1))


@pytest.mark.parametrize("name,kw,groups", [CASES[4], CASES[5], CASES[6]],
                         ids=[CASES[4][0], CASES[5][0], CASES[6][0]])
def test_corrections_equal_their_defining_formulas(name, kw, groups):
    fit = fit_of(kw)
    units = resolve_units(fit, groups)
    H = fit.information
    C = flag_estimates.information_split(fit, units)
    delta = -np.asarray(ci.vif(fit, groups=groups), dtype=float) / units.n_units
    # the default delta is VIF's change of the same units
    lc = flag_estimates.leverage_corrected(fit, units)
    ref = np.stack([np.linalg.solve(H - C[g], H @ delta[g]) for g in range(units.n_units)])
    assert np.abs(lc - ref).max() <= 1e-10 * np.abs(ref).max()
    lam = flag_estimates.leverage(fit, units)
    ref = np.array([eigh(C[g], H, eigvals_only=True)[-1] for g in range(units.n_units)])
    assert np.allclose(lam, ref, rtol=1e-10, atol=1e-14)
    # second order: many fixed-point steps solve (H - C_g) D + T[D, D]/2 = H delta_g
    T = flag_estimates.third_derivative(fit)
    D = flag_estimates.second_order(fit, units, delta, iters=60)
    res = (np.einsum("gij,gj->gi", H[None] - C, D) + 0.5 * np.einsum("iab,ga,gb->gi", T, D, D)
           - delta @ H)
    assert np.abs(res).max() <= 1e-10 * np.abs(delta @ H).max()
    # the curvature score is its formula
    r = -np.einsum("gij,gj->gi", C, delta) + 0.5 * np.einsum("iab,ga,gb->gi", T, delta, delta)
    step = np.linalg.solve(H, r.T).T
    moved = np.abs(delta).max(axis=1) > 0            # rows in no risk set change nothing
    ref = np.sqrt(np.einsum("gi,ij,gj->g", step, H, step)[moved]
                  / np.einsum("gi,ij,gj->g", delta, H, delta)[moved])
    score = flag_estimates.curvature_score(fit, units, delta)
    assert np.allclose(score[moved], ref, rtol=1e-9) and (score[~moved] == 0).all()


def hnorm(H, D):
    return np.sqrt(np.einsum("gi,ij,gj->g", D, H, D))


def rare_dummy(seed=5, n=120):
    """A dummy held by 3 rows (all events): deleting one leaves 2, the coefficient is
    weakly identified and VIF is off by far more than 10%."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    rare = np.zeros(n)
    rare[:3] = 1.0
    t = rng.exponential(size=n) * np.exp(-0.5 * x - 1.0 * rare)
    e = (rng.uniform(size=n) < 0.8).astype(float)
    e[:3] = 1.0
    return np.column_stack([x, rare]), t, e


def test_corrections_are_closer_to_exact_than_vif_on_a_rare_dummy():
    X, t, e = rare_dummy()
    fit = ci.fit_cox(X, t, e)
    H = fit.information
    delta = -np.asarray(ci.vif(fit)) / fit.n
    exact = np.asarray(ci.exact_loo(fit)) - fit.coef
    lc = flag_estimates.leverage_corrected(fit, delta_vif=delta)
    so = flag_estimates.second_order(fit, delta_vif=delta)
    scale = hnorm(H, exact)
    err_vif = hnorm(H, delta - exact) / scale
    err_lc = hnorm(H, lc - exact) / scale
    err_so = hnorm(H, so - exact) / scale
    rows = np.arange(3)
    assert (err_vif[rows] > 0.1).all()               # VIF is off on the rare level
    assert (err_lc[rows] < 0.7 * err_vif[rows]).all()
    assert (err_so[rows] < 0.5 * err_vif[rows]).all()
    lev = flag_estimates.leverage(fit)
    assert (lev[rows] > np.quantile(lev, 0.95)).all() and lev[rows].max() > 0.3
    bad = err_vif > 0.1
    unstable = CoxAudit(fit).unstable(delta)         # the audit's rule
    assert unstable[bad].all()                        # every bad row is flagged ...
    assert unstable.mean() < 0.1                      # ... flagging few rows


def test_curvature_score_predicts_the_refits_second_step():
    """The score approximates the size of the exact second chord step: the deleted
    problem's gradient at theta_hat + delta_g, in H^{-1}, relative to delta_g."""
    X, t, e = rare_dummy(seed=6)
    fit = ci.fit_cox(X, t, e)
    H = fit.information
    delta = -np.asarray(ci.vif(fit)) / fit.n
    order = fit.data.order
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    _, g, _ = fit.risk_sets.loss_grad_hess(fit.coef + delta, Deletion.of_rows(fit.n, inv),
                                           hess=False)
    moved = hnorm(H, delta) > 0                      # a row in no risk set changes nothing
    step = np.linalg.solve(H, g[moved].T).T
    literal = hnorm(H, step) / hnorm(H, delta[moved])
    score = flag_estimates.curvature_score(fit, delta_vif=delta)[moved]
    big = literal > 0.1                              # the size that matters (bad: > 10%)
    assert big.sum() >= 3
    assert np.all(np.abs(score[big] / literal[big] - 1) < 0.25)
    assert (score[big] > flags.UNSTABLE_CURVATURE).all()


def test_undefined_units():
    rng = np.random.default_rng(7)
    n = 40
    X = np.column_stack([rng.normal(size=n), np.zeros(n)])
    X[5, 1] = 1.0                                     # row 5: the only '1' of a dummy
    t = rng.exponential(size=n) + 0.01
    e = (rng.uniform(size=n) < 0.6).astype(float)
    e[5] = 1.0
    strata = np.zeros(n, dtype=int)
    strata[30:36] = 1                                 # stratum 1: one event, row 30
    e[30:36] = 0.0
    e[30] = 1.0
    t[30] = t[30:36].min() - 0.001
    strata[36] = 2                                    # stratum 2: a single row, an event
    e[36] = 1.0
    strata[37:] = 3                                   # stratum 3: rows 37-39, events
    e[37:] = 1.0
    fit = ci.fit_cox(X, t, e, strata=strata)
    und = flags.undefined_units(fit)
    expected = np.zeros(n, dtype=bool)
    expected[5] = True                                # the dummy's only '1'
    # row 30 (stratum 1's only event) is not undefined: stratum 1 drops out and the
    # others identify both coefficients; row 36 deletes stratum 2 whole
    assert np.array_equal(und, expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.LeaveOneOutWarning)
        exact = np.asarray(ci.exact_loo(fit))
    assert np.isnan(exact[5, 1])                      # the dummy's coefficient is gone
    assert np.isfinite(exact[30]).all()

    # a covariate that varies only within stratum 1: its only event carries all of its
    # information, so deleting row 30 leaves no maximum
    z = np.zeros(n)
    z[30:36] = [0.1, -1.0, 1.0, -0.5, 0.5, 0.2]      # row 30 inside its risk set's range
    fit = ci.fit_cox(np.column_stack([X[:, 0], z]), t, e, strata=strata)
    und = flags.undefined_units(fit)
    assert und[30] and und.sum() == 1

    # the only event of the data
    x = rng.normal(size=12)
    e1 = np.zeros(12)
    e1[4] = 1.0
    fit = ci.fit_cox(x[:, None], np.arange(1.0, 13.0), e1)
    assert np.array_equal(flags.undefined_units(fit), e1 > 0)

    # subjects: subject 7 holds both '1's of a dummy (on its two rows)
    Xc, stop, ev, start, ids = counting(seed=2, n_sub=20)
    dummy = (ids == 7).astype(float)
    fit = ci.fit_cox(np.column_stack([Xc, dummy]), stop, ev, start=start, id=ids)
    units = resolve_units(fit)
    und = flags.undefined_units(fit, units)
    assert und[7] and np.array_equal(und, np.asarray(units.breaks_rank))
    assert not flags.undefined_units(ci.fit_cox(Xc, stop, ev, start=start, id=ids)).any()

"""The Fine-Gray deleted gradients by series (coxinfluence.likelihood.fine_gray_series)
against the O(n K d) closed form (fine_gray_deletion.deleted_derivatives, itself checked
against literal deletion in test_fine_gray.py): equal to ~1e-10 of each coefficient's
largest |value| on designs with ties, several censoring groups, competing risks, small
late risk sets, extreme covariates and R's data; the truncation error obeys its bound."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
import coxinfluence.likelihood.fine_gray_series as fgs
from coxinfluence.asymptotics.fine_gray_design import FineGrayDesign
from coxinfluence.likelihood.fine_gray import CAUSE, COMPETING, build_fine_gray_data
from coxinfluence.likelihood.fine_gray_deletion import (
    DeletionState,
    _ratio_factor,
    after_shift,
    deleted_derivatives,
)
from coxinfluence.likelihood.fine_gray_series import deleted_gradients_series, series_applies
from coxinfluence.numerics.series import LOG_SPAN, series_length

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "r_fine_gray"
THETA5 = (0.5, -0.5, 0.3, -0.3, 0.2)
TOL = 1e-10


def rel(a, b):
    """Per coefficient max |a - b| over max |b|, the largest over coefficients."""
    return float((np.abs(a - b).max(axis=0) / np.abs(b).max(axis=0)).max())


def state_of(data, theta):
    return DeletionState(data, np.asarray(theta, dtype=np.float64), hessian=False)


def design(n, seed, *, n_groups=1, round_to=None, tau=3.0, censor_rate=0.3, x_scale=1.0):
    """Sorted data from ``FineGrayDesign(theta=THETA5)``: optional ties (times rounded to
    ``round_to``), random censoring groups, no end of follow-up (``tau=None``: the last
    risk sets are small), covariates scaled by ``x_scale``; and its fitted theta (or
    the design's when scaled)."""
    rng = np.random.default_rng(seed)
    X, t, s = FineGrayDesign(theta=THETA5, tau=tau, censor_rate=censor_rate).sample(n, rng)
    if round_to is not None:
        t = np.maximum(np.round(t / round_to), 1.0) * round_to
    group = rng.integers(0, n_groups, size=n)
    data = build_fine_gray_data(x_scale * X, t, s, np.unique(group, return_inverse=True)[1])
    if x_scale != 1.0:
        return data, np.asarray(THETA5)
    fit = ci.fit_fine_gray(X, t, s, 1, cengroup=group if n_groups > 1 else None)
    return data, fit.coef


def tied_design(rng, n, d):
    """Heavy ties (failures, other causes and censorings at the same few times), up to
    three censoring groups, some of one subject: some subjects alone and last in their
    group (deleted literally)."""
    X = rng.normal(size=(n, d))
    t = rng.integers(1, int(rng.integers(3, 12)), size=n).astype(float)
    kind = rng.integers(0, 3, size=n)
    kind[0] = CAUSE
    group = np.unique(rng.integers(0, int(rng.integers(1, 4)), size=n), return_inverse=True)[1]
    return build_fine_gray_data(X, t, kind, group), 0.5 * rng.normal(size=d)


def compare(data, theta, rows=None, **kw):
    st = state_of(data, theta)
    ref = deleted_derivatives(st, rows)[0]
    got = deleted_gradients_series(st, rows, **kw)
    assert got.shape == ref.shape
    assert np.isfinite(got).all()
    return rel(got, ref)


@pytest.mark.parametrize("rho", [None, 0.25, 2.0 ** -6, 2.0 ** -18])
@pytest.mark.parametrize("case", [dict(), dict(round_to=0.05, n_groups=3),
                                  dict(tau=None, censor_rate=1.0),
                                  dict(tau=None, round_to=0.2, n_groups=2)])
def test_equals_the_closed_form_on_simulated_designs(case, rho):
    data, theta = design(1500, 7, **case)
    assert compare(data, theta, rho=rho) < TOL


@pytest.mark.parametrize("seed", range(12))
def test_equals_the_closed_form_on_tiny_tied_designs(seed):
    rng = np.random.default_rng(300 + seed)
    data, theta = tied_design(rng, int(rng.integers(4, 60)), int(rng.integers(1, 4)))
    for rho in (None, 0.25):
        assert compare(data, theta, rho=rho) < TOL


def test_special_rows_are_delegated_and_rows_keep_their_order():
    rng = np.random.default_rng(5)
    for _ in range(50):                 # a tied design with a row alone and last in its group
        data, theta = tied_design(rng, 40, 2)
        st = state_of(data, theta)
        if st.special.any() and not st.special.all():
            break
    assert st.special.any()
    rows = rng.permutation(data.n)[: data.n // 2]
    rows = np.r_[rows, np.flatnonzero(st.special)]
    assert rel(deleted_gradients_series(st, rows), deleted_derivatives(st, rows)[0]) < TOL


def test_small_late_risk_sets_use_direct_pairs(monkeypatch):
    """No end of follow-up and heavy censoring: the last risk sets hold a few subjects,
    so the default split sums some (subject, time) pairs directly, on both sides."""
    data, theta = design(3000, 11, tau=None, censor_rate=1.5, n_groups=2)
    pairs = []
    split = fgs.choose_split

    def spy(terms, rho, length):
        r, k = split(terms, rho, length)
        pairs.append(int((k - terms.lo).sum()))
        return r, k
    monkeypatch.setattr(fgs, "choose_split", spy)
    assert compare(data, theta) < TOL
    assert len(pairs) == 4 and min(pairs) > 0


def test_extreme_covariates_span_several_segments():
    """A covariate falling from 60 to -60 with time (linear predictors over +-30) and the
    other cause only late (early ones would stay in the risk sets): the risk sets' sums
    span ~e^50, more than one segment of the scaled powers at P = 27 (rho = 1/4), so rows
    add whole later segments and the right sums subtract within their last segment."""
    data, theta = design(1200, 3, tau=None, n_groups=2)
    X = data.X + data.X_center
    X[:, 0] = 60.0 - 120.0 * np.arange(data.n) / data.n \
        + np.random.default_rng(0).normal(size=data.n)
    kind = data.kind.copy()
    kind[:int(0.8 * data.n)][kind[:int(0.8 * data.n)] == COMPETING] = CAUSE
    data = build_fine_gray_data(X, data.time, kind, data.group)
    st = state_of(data, theta)
    assert np.log(st.S0.max() / st.S0.min()) > 2 * LOG_SPAN / series_length(0.25)
    for rho in (None, 0.25, 2.0 ** -11):
        assert rel(deleted_gradients_series(st, rho=rho), deleted_derivatives(st)[0]) < TOL


@pytest.mark.parametrize("case", ["pbc_death", "pbc_transplant", "mgus2_progression",
                                  "sim_cengroup", "sim_cause2", "simc"])
def test_equals_the_closed_form_on_r_fixtures(case):
    row = pd.read_csv(FIXTURES / "cases.csv", keep_default_na=False).set_index("case").loc[case]
    d = pd.read_csv(FIXTURES / f"data_{row['dataset']}.csv")
    fit = ci.fit_fine_gray(d[row["covariates"].split("+")].astype(float), d[row["time"]],
                           d[row["status"]], int(row["cause"]),
                           cengroup=d[row["cengroup"]] if row["cengroup"] else None)
    for rho in (None, 0.25, 2.0 ** -18):
        assert compare(fit.data, fit.coef, rho=rho) < TOL


def truncation_bound(st, rows, rho, P):
    """Per row, ``rho^P`` times the sum of the absolute values of the series' terms over
    the whole range (module docstring), a bound on the truncation error of both sums."""
    data = st.data
    fail = data.fail
    out = np.zeros(rows.size)
    for g in range(data.n_groups):
        km = fgs._km_change(st, g)
        A = st.S0 + km.D0
        a_s = (st.S1 + km.D1) / A[:, None]
        a = st.S1 / st.S0[:, None]
        q = st.G[g, fail] / st.S0
        pick = np.flatnonzero(data.group[rows] == g)
        r = rows[pick]
        tau, x, e = data.tie[r], data.X[r], st.e[r]
        b0 = after_shift(st, km.piece, r, 0, np.ones((r.size, 1)))[:, 0]
        b1 = after_shift(st, km.piece, r, 1, x)
        before = fail[None, :] <= tau[:, None]
        left = st.dk * np.abs(x[:, None, :] - a_s[None]).sum(axis=2) / (A[None] - e[:, None])
        right = st.dk * q * np.abs(b1[:, None, :] - b0[:, None, None] * a[None]).sum(axis=2) \
            / (1.0 + b0[:, None] * q[None])
        out[pick] = (e[:, None] * left * before + right * ~before).sum(axis=1)
    return rho ** P * out


@pytest.mark.parametrize("rho,P", [(0.25, 1), (0.25, 3), (2.0 ** -4, 2), (2.0 ** -8, 1)])
def test_truncation_error_obeys_its_bound(rho, P):
    """With P cut short, the error against the closed form is the series' tail: below
    ``rho^P`` times the sum of the absolute terms, and visible (the test can fail)."""
    data, theta = design(800, 13, tau=None, round_to=0.05, n_groups=2)
    st = state_of(data, theta)
    rows = np.flatnonzero(~st.special)
    ref = deleted_derivatives(st, rows)[0]
    err = np.abs(deleted_gradients_series(st, rows, rho=rho, n_terms=P) - ref).sum(axis=1)
    bound = truncation_bound(st, rows, rho, P)
    slack = 1e-11 * np.abs(ref).max()
    assert (err <= bound + slack).all()
    assert err.max() > 1e-3 * bound.max()
    assert err.max() > 1e3 * slack


def long_double_differences(st, rows):
    """(m, d) ``grad L - grad L_{-i}`` of the sorted ``rows``, every sum over the failure
    times in long double (from the state's float64 inputs)."""
    L = np.longdouble
    data, fail = st.data, st.data.fail
    S0, S1, dk = st.S0.astype(L), st.S1.astype(L), st.dk.astype(L)
    full = (dk / S0) @ S1 - st.xf.astype(L)
    out = np.empty((rows.size, data.d), dtype=L)
    for ii, i in enumerate(rows):
        g, tau, kind = data.group[i], data.tie[i], data.kind[i]
        km = fgs._km_change(st, g)
        A, S1s = S0 + km.D0.astype(L), S1 + km.D1.astype(L)
        G = st.G[g, fail].astype(L)
        kt = np.searchsorted(fail, tau, side="right")
        e, x = L(st.e[i]), data.X[i].astype(L)
        pc = km.piece                   # beta_i's parts (after_shift's), summed in long double
        ov = L(pc.v[i] if kind == COMPETING else 0.0)
        R = L(_ratio_factor(st, pc, np.array([i]))[0])
        b0 = R * (L(pc.P_le[0][tau, 0]) - ov) - L(pc.B_le[0][tau, 0])
        b1 = R * (pc.P_le[1][tau].astype(L) - ov * x) - pc.B_le[1][tau].astype(L)
        dl = dk[:kt].copy()
        if kind == CAUSE:
            dl[-1] -= 1
        left = (dl[:, None] * (S1s[:kt] - e * x) / (A[:kt] - e)[:, None]).sum(axis=0)
        right = (dk[kt:, None] * (S1[kt:] + G[kt:, None] * b1)
                 / (S0[kt:] + G[kt:] * b0)[:, None]).sum(axis=0)
        out[ii] = full - (left + right - st.xf.astype(L) + (x if kind == CAUSE else 0.0))
    return out


def test_differences_from_the_full_gradient_are_exact_to_rounding():
    """``grad L - grad L_{-i}`` (what the VIF uses) against long-double sums: the series'
    error stays at rounding (measured ~1e-14 of each coefficient's largest value; the closed
    form ~5e-12)."""
    data, theta = design(20000, 17, n_groups=2)
    st = state_of(data, theta)
    rows = np.r_[0:40, 10000:10040, 19960:20000]
    rows = rows[~st.special[rows]]
    want = long_double_differences(st, rows).astype(np.float64)
    got = st.full_gradient() - deleted_gradients_series(st, rows)
    assert rel(got, want) < 1e-12
    ref = st.full_gradient() - deleted_derivatives(st, rows)[0]
    assert rel(got, want) < rel(ref, want)


def test_series_applies_to_breslow_and_few_weights():
    data, theta = design(200, 1)
    X, t, kind, group = data.X, data.time, data.kind, data.group
    assert series_applies(data)
    few = np.where(np.arange(data.n) % 3 == 0, 2.0, 1.0)
    assert series_applies(build_fine_gray_data(X, t, kind, group, weight=few,
                                               stratum=np.arange(data.n) % 2))
    continuous = np.linspace(0.5, 2.0, data.n) ** 2 + np.arange(data.n) * 1e-3
    for other in (build_fine_gray_data(X, t, kind, group, weight=continuous),
                  build_fine_gray_data(X, t, kind, group, ties="efron")):
        assert not series_applies(other)
        with pytest.raises(ValueError, match="series_applies"):
            deleted_gradients_series(state_of(other, theta))


@pytest.mark.parametrize("seed", range(4))
def test_few_weights_by_a_pass_per_weight(seed):
    """Case weights of a few values (with ties, censoring groups and strata): one pass of
    the series per (group, weight) is the closed form."""
    rng = np.random.default_rng(10 + seed)
    data, theta = design(300, seed, n_groups=1 + seed % 3, round_to=0.05 if seed % 2 else None)
    w = rng.choice([0.5, 1.0, 3.0], data.n)
    strata = rng.integers(0, 2, data.n) if seed >= 2 else None
    D = build_fine_gray_data(data.X, data.time, data.kind, data.group, weight=w,
                             stratum=strata)
    st = state_of(D, theta)
    rows = rng.permutation(D.n)
    got = deleted_gradients_series(st, rows)
    want = deleted_derivatives(st, rows)[0]
    assert rel(got - st.full_gradient(), want - st.full_gradient()) < 1e-10


@pytest.mark.parametrize("seed", range(4))
def test_strata_by_the_series_of_each_stratum(seed):
    """Stratified data (each stratum its own risk sets and censoring groups): the series
    per stratum plus the other strata's full gradients is the closed form, in any row
    order."""
    rng = np.random.default_rng(seed)
    data, theta = design(300, seed, n_groups=1 + seed % 3, round_to=0.05 if seed % 2 else None)
    strata = rng.integers(0, 3, data.n)
    D = build_fine_gray_data(data.X, data.time, data.kind, data.group, stratum=strata)
    st = state_of(D, theta)
    rows = rng.permutation(D.n)
    got = deleted_gradients_series(st, rows)
    want = deleted_derivatives(st, rows)[0]
    assert rel(got - st.full_gradient(), want - st.full_gradient()) < 1e-10

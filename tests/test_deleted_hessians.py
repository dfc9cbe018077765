"""Closed-form leave-one-out Hessians (``coxinfluence.influence_functions.deleted_hessians``, issue
13 item 1)
against their definition: the batched risk-set kernels on the data with the unit's rows
deleted, ``fit.risk_sets.loss_grad_hess(theta, units.deletion(codes))[2]``
(:func:`by_deletion`), and the one-step Newton they give against
``ci.newton_loo``.

Accuracy criterion: ``max |closed form - reference| / max |H|`` (entries of the full-data
Hessian H), at most 1e-10.
"""
import math

import numpy as np
import pandas as pd
import pytest
from oracles import newton_rows
from test_subjects import fit_of, subjects
from test_vif_fast import simulate

import coxinfluence as ci
from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.deleted_hessians import (
    _Moments,
    by_deletion,
    deleted_hessians,
    hessian_series_length,
    part1_direct,
    part1_series,
)
from coxinfluence.influence_functions.engine_cox import CoxEngine
from coxinfluence.likelihood.efron import efron_square_fraction_sum

TOL = 1e-10


def rel_dev(got, ref, fit):
    H = fit.risk_sets.loss_grad_hess(fit.coef[None, :])[2][0]
    return float(np.abs(got - ref).max() / np.abs(H).max())


def check_against_deletion(fit, groups=None, methods=("auto",)):
    units = resolve_units(fit, groups)
    codes = np.arange(units.n_units)
    ref = by_deletion(fit, units, codes)
    for method in methods:
        got = deleted_hessians(fit, units, method=method)
        assert got.shape == (units.n_units, fit.data.d, fit.data.d)
        assert rel_dev(got, ref, fit) < TOL, method
    return units, ref


# ------------------------------------------------------------- rows: random designs

DESIGNS = {
    "efron-strata-weights": dict(ties="efron", n_times=20, strata=3, weights=True),
    "breslow-strata-weights": dict(ties="breslow", n_times=20, strata=3, weights=True),
    "efron-no-ties": dict(ties="efron"),
    "efron-big-tie-groups": dict(ties="efron", n_times=3, weights=True),   # d_g > 32
    "breslow-big-tie-groups": dict(ties="breslow", n_times=3),
    "efron-large-eta": dict(ties="efron", beta_scale=3.0, x_scale=2.0, weights=True),
    "breslow-large-eta": dict(ties="breslow", beta_scale=3.0, x_scale=2.0, strata=2),
}


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("design", list(DESIGNS))
def test_rows_equal_the_deletion_definition(design, seed):
    case = dict(DESIGNS[design])
    ties = case.pop("ties")
    X, t, e, w, s = simulate(400, d=3, seed=seed, **case)
    if "large-eta" in design:         # ties on a log-time grid (risk scores span e^30)
        t = np.exp(np.round(np.log(t) * 4) / 4)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    if "big" in design:
        assert fit.data.group_n_events.max() > 33
    if "large-eta" in design:
        assert np.ptp(fit.data.X @ fit.coef) > 20
    check_against_deletion(fit, methods=("series", "direct", "auto"))


@pytest.mark.parametrize("rho", [None, 0.5, 2.0 ** -2, 2.0 ** -4, 2.0 ** -11])
def test_series_equals_direct_sum_for_every_split(rho):
    """Part 1 by series (direct pairs above rho, series below) equals the O(n K d^2)
    direct sum, elementwise to 1e-13 of its largest entry."""
    X, t, e, w, s = simulate(1500, d=4, seed=7, n_times=80, strata=3, weights=True,
                             beta_scale=1.5)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s)
    mom = _Moments(fit.data, fit.risk_sets.state(fit.coef))
    ref = part1_direct(mom)
    got = part1_series(mom, rho=rho)
    assert np.abs(got - ref).max() <= 1e-13 * np.abs(ref).max()


def test_truncated_series_error_is_within_its_bound():
    """With P cut short, each entry's error is at most ``(P+1) rho^P / (1-rho)^2`` times
    the sum of the absolute values of its series terms (module docstring), and not orders
    of magnitude below it."""
    rho, P = 0.5, 4
    X, t, e, w, s = simulate(300, d=3, seed=4, n_times=30, strata=2, weights=True,
                             beta_scale=1.5)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s)
    mom = _Moments(fit.data, fit.risk_sets.state(fit.coef))
    exact = part1_direct(mom)
    got = part1_series(mom, rho=rho, n_terms=P)
    # sum of absolute values of each row's terms, over the terms with u_i / den_k <= rho
    tm = mom.terms
    k = np.arange(tm.den.size)
    inside = (k[None, :] >= tm.lo[:, None]) & (k[None, :] < tm.hi[:, None])
    ratio = np.where(inside, mom.u[:, None] / tm.den[None, :], 0.0)
    series = inside & (ratio <= rho)
    delta = np.where(series, ratio / (1 - ratio), 0.0)
    diff = mom.xc[:, None, :] - tm.a[None, :, :]
    i, j = np.triu_indices(fit.data.d)
    outer = np.abs(diff[:, :, i] * diff[:, :, j])
    abs_sum = (np.einsum("nk,nkt->nt", tm.m * delta * (1 + delta), outer)
               + np.einsum("nk,kt->nt", tm.m * delta, np.abs(mom.V)))
    bound = (P + 1) * rho ** P / (1 - rho) ** 2 * abs_sum
    err = np.abs(got - exact)
    scale = np.abs(exact).max()
    assert np.all(err <= bound + 1e-13 * scale)
    assert err.max() > 1e-4 * scale                     # the tail is not negligible
    assert (err / np.maximum(bound, 1e-300)).max() > 1e-3


def test_series_length_reaches_rounding():
    def tail(q, rho):
        return (q + 1) * rho ** q / (1 - rho) ** 2

    for rho in (2.0 ** -2, 2.0 ** -4, 2.0 ** -8, 2.0 ** -18, 0.3):
        P = hessian_series_length(rho)
        assert tail(P, rho) <= 2.0 ** -53 < tail(P - 1, rho)


@pytest.mark.parametrize("N", [1, 2, 7, 32, 33, 40, 150, 1000])
def test_efron_square_fraction_sum_against_exact_summation(N):
    for x in (0.0, 0.1, 0.25, 0.49, 0.5, 0.51, 0.75, 0.95, 0.999, 1.0):
        c = [r / N for r in range(N)]
        ref = math.fsum(ci_ ** 2 / (1 - ci_ * x) ** 2 for ci_ in c)
        got = efron_square_fraction_sum(np.array([N]), np.array([x]))[0]
        assert abs(got - ref) <= 1e-13 * max(ref, 1e-300), (N, x)


# ---------------------------------------------------------- units: subjects, clusters

@pytest.mark.parametrize("ties", ["efron", "breslow"])
@pytest.mark.parametrize("seed", [0, 3])
def test_subjects_with_delayed_entry_equal_the_deletion_definition(ties, seed):
    """``fit_cox(..., start=, id=)``: subjects whose intervals never overlap (each risk set
    loses at most one row) by the sum of their rows' changes; delayed entry by the
    direct sum."""
    df = subjects(seed, n_subj=60)
    fit = fit_of(df, ties)
    units, _ = check_against_deletion(fit, methods=("auto", "direct"))
    assert fit.data.entry is not None and not units.shares_risk_sets.any()
    assert np.bincount(units.of_row).max() > 1


def test_rows_with_delayed_entry_equal_the_deletion_definition():
    X, t, e, w, s = simulate(300, d=3, seed=6, n_times=40, strata=2, weights=True)
    start = np.where(np.random.default_rng(6).random(300) < 0.5, 0.4 * t, 0.0)
    fit = ci.fit_cox(X, t, e, start=start, weights=w, strata=s)
    check_against_deletion(fit, methods=("auto", "direct"))


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_clusters_closed_form_and_by_deletion(ties):
    """Clusters with one row per stratum (never two rows in a risk set: closed form, with
    the series) and clusters of rows sharing risk sets (by deletion), in one call."""
    X, t, e, w, s = simulate(900, d=3, seed=8, n_times=60, strata=3, weights=True)
    rng = np.random.default_rng(8)
    groups = np.empty(900, dtype=object)
    for stratum in range(3):                           # cluster j holds row j of each stratum
        rows = np.flatnonzero(s == stratum)
        groups[rows] = [f"c{j:04d}" for j in range(rows.size)]
    overlap = rng.choice(np.flatnonzero(s == 0), 40, replace=False)   # 20 clusters of two
    #                                                   rows of one stratum: shared risk sets
    groups[overlap] = [f"z{j // 2:03d}" for j in range(40)]
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    units, _ = check_against_deletion(fit, groups=groups, methods=("series", "auto"))
    assert units.shares_risk_sets.sum() >= 10 and (~units.shares_risk_sets).sum() > 200
    some = np.array([0, 5, units.n_units - 1])         # a subset of codes
    sub = deleted_hessians(fit, units, some)
    full = deleted_hessians(fit, units)[some]
    assert np.abs(sub - full).max() <= 1e-13 * np.abs(full).max()


def test_rossi_real_data():
    """lifelines' Rossi recidivism data (weekly times: Efron ties)."""
    from lifelines.datasets import load_rossi
    df = load_rossi()
    X = df.drop(columns=["week", "arrest"])
    for ties in ("efron", "breslow"):
        fit = ci.fit_cox(X, df.week, df.arrest, ties=ties)
        assert fit.data.group_n_events.max() > 1
        check_against_deletion(fit, methods=("series", "direct"))


# --------------------------------------------------------------- one-step Newton

def newton_definition(fit):
    """One-step Newton by its definition: each unit's deleted gradient and Hessian at
    ``theta_hat`` from the kernels on the data without the unit's rows. Returns the units,
    their codes, the deleted gradients, ``theta_hat - H_{-g}^{-1} g_{-g}`` and the scale
    the tolerance is relative to."""
    units = resolve_units(fit)
    codes = np.arange(units.n_units)
    theta = np.repeat(fit.coef[None, :], codes.size, axis=0)
    g_ref = fit.risk_sets.loss_grad_hess(theta, units.deletion(codes), hess=False)[1]
    H_ref = by_deletion(fit, units, codes)
    definition = fit.coef - np.linalg.solve(H_ref, g_ref[:, :, None])[:, :, 0]
    return units, codes, g_ref, definition, 1 + np.abs(definition).max()


@pytest.mark.parametrize("case", [
    dict(ties="efron", strata=2, weights=True, n_times=25),
    dict(ties="breslow", strata=None, weights=False, n_times=25),
])
def test_newton_step_equals_newton_loo(case):
    """``theta_hat - H_{-i}^{-1} g_{-i}`` by its definition (the kernels on the data with
    row i deleted; literal deletion, ``tests/oracles.newton_rows``, for a few rows) equals
    ``ci.newton_loo`` and ``CoxEngine.newton_change`` (closed-form Hessians and
    gradients) to 1e-10, and the closed-form gradients equal the deleted data's."""
    case = dict(case)
    ties = case.pop("ties")
    X, t, e, w, s = simulate(500, d=3, seed=12, **case)
    X = pd.DataFrame(X, columns=["a", "b", "c"], index=np.arange(500)[::-1] * 3)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    ref = np.asarray(ci.newton_loo(fit))
    units, codes, g_ref, definition, scale = newton_definition(fit)
    assert np.abs(ref - definition).max() <= TOL * scale
    rows = [0, 17, 499]
    literal = newton_rows(fit.coef, X.to_numpy(), t, e, rows, w=w, s=s, ties=ties)
    assert np.abs(ref[rows] - literal).max() <= TOL * scale
    H = deleted_hessians(fit, units)
    got = fit.coef - np.linalg.solve(H, g_ref[:, :, None])[:, :, 0]
    assert np.abs(got - definition).max() <= TOL * scale
    engine = CoxEngine(fit, units)
    g = engine.deleted_gradients(codes)
    assert np.abs(g - g_ref).max() <= 1e-12 * np.abs(g_ref).max()
    change, ok = engine.newton_change()
    assert ok.all()
    assert np.abs(fit.coef + change - definition).max() <= TOL * scale


def test_newton_step_for_subjects_equals_newton_loo():
    """Subjects (units with several rows): ``ci.newton_loo`` and
    ``CoxEngine.newton_change`` against the definition, the kernels on the data without
    each subject's rows."""
    df = subjects(5, n_subj=60)
    fit = fit_of(df)
    units, _, _, definition, scale = newton_definition(fit)
    ref = ci.newton_loo(fit)
    assert np.abs(ref.to_numpy() - definition).max() <= TOL * scale
    change, ok = CoxEngine(fit, units).newton_change()
    assert ok.all()
    assert np.abs(fit.coef + change - definition).max() <= TOL * scale

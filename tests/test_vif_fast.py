"""The fast VIF (``method="series"``, the default through ``"auto"``) against two oracles:
the O(n K d) direct sum (``method="direct"``) and the literal deletion definition
``-(H/n)^{-1} (grad L(all) - grad L(row i deleted))`` computed with ``ci.cox_gradient``.

Accuracy criterion on the VIF: column-relative, ``max_i |fast - ref| / max_i |ref|`` for
each coefficient (elementwise relative error is meaningless where a VIF is ~0). The
part-1 sums are also checked elementwise against their sum of absolute terms, which is
what the truncation bound is stated against.
"""
import math

import numpy as np
import pytest
from conftest import vif_by_definition as vif_by_deletion
from oracles import own_group_change

import coxinfluence as ci
from coxinfluence.data.cox_data import make_cox_data
from coxinfluence.influence_functions.vif import (
    _own_group_change_fast,
    _vif_delta_series,
    part1_direct_sum,
)
from coxinfluence.influence_functions.vif_series import part1_series
from coxinfluence.likelihood.efron import efron_fraction_sum
from coxinfluence.likelihood.risk_sets import RiskSets
from coxinfluence.numerics.series import (
    Kept,
    prefix_plan,
    prefix_sums_of_columns,
    segmented_prefix_sums,
    series_length,
)


def simulate(n, d=3, seed=0, n_times=None, beta_scale=0.5, strata=None, weights=False,
             x_scale=1.0):
    """Cox data: exponential event and censoring times, optionally rounded to ``n_times``
    distinct values (ties), ``strata`` random strata, uniform(0.2, 3) case weights."""
    rng = np.random.default_rng(seed)
    X = x_scale * rng.standard_normal((n, d))
    beta = beta_scale * rng.uniform(-1, 1, d)
    t = rng.exponential(1 / np.exp(X @ beta))
    c = rng.exponential(1.5 * np.median(t), n)
    time = np.minimum(t, c)
    if n_times:
        time = np.ceil(time / np.quantile(time, 0.99) * n_times)
    event = (t <= c).astype(float)
    w = rng.uniform(0.2, 3.0, n) if weights else None
    s = rng.integers(0, strata, n) if strata else None
    return X, time, event, w, s


def column_rel_err(got, ref):
    return float((np.abs(got - ref).max(axis=0) / np.abs(ref).max(axis=0)).max())


def part1_dense(data, state):
    """Part 1 without the factor u_i, by dense (n, K) arrays (small n only), and the sum of
    absolute values of its terms, and u_i / den_k (0 outside the range)."""
    lo, hi = RiskSets(data).deletion_term_ranges
    k = np.arange(data.term_group.size)
    inside = (k[None, :] >= lo[:, None]) & (k[None, :] < hi[:, None])
    u, den, m, a = state.risk, state.den, state.mean_weight, state.term_mean
    wk = np.where(inside, m[None, :] / np.where(inside, den[None, :] - u[:, None], 1.0), 0.0)
    diff = data.X[:, None, :] - a[None, :, :]
    exact = np.einsum("ik,ikj->ij", wk, diff)
    abs_sum = np.einsum("ik,ikj->ij", wk, np.abs(diff))
    ratio = np.where(inside, u[:, None] / den[None, :], 0.0)
    return exact, abs_sum, ratio, wk, diff


# ------------------------------------------------------------ against the direct sum

LARGE = [
    dict(ties="efron", strata=5, weights=True, n_times=400),
    dict(ties="breslow", strata=None, weights=False, n_times=2000),
    dict(ties="efron", strata=None, weights=True, beta_scale=3.0, x_scale=2.0),   # large eta
    dict(ties="efron", strata=3, weights=True, n_times=25),                       # heavy ties
]


@pytest.mark.slow
@pytest.mark.parametrize("case", LARGE, ids=["efron-strata-weights", "breslow",
                                            "large-eta", "heavy-ties"])
def test_series_matches_direct_reference_on_20000_rows(case):
    case = dict(case)
    ties = case.pop("ties")
    X, t, e, w, s = simulate(20_000, seed=11, **case)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    data = fit.data
    if case.get("beta_scale") == 3.0:
        assert np.ptp(data.X @ fit.coef) > 40          # the linear predictor spans e^40
    if case.get("n_times") == 25:
        assert data.group_n_events.max() > 500          # hundreds of tied events
    ref = ci.vif(fit, method="direct")
    got = ci.vif(fit, method="series")
    assert column_rel_err(got, ref) < 1e-10
    assert np.array_equal(ci.vif(fit), got)             # "auto" picks the series here


GRID = [(ties, strata, weights) for ties in ("efron", "breslow")
        for strata in (None, 4) for weights in (False, True)]


@pytest.mark.parametrize("ties,strata,weights", GRID)
def test_series_matches_direct_reference_grid(ties, strata, weights):
    X, t, e, w, s = simulate(3000, seed=5, n_times=150, strata=strata, weights=weights)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    data, state = fit.data, RiskSets(fit.data).state(fit.coef)
    ref = own_group_change(data, state) + part1_direct_sum(data, state)
    got = _vif_delta_series(data, state)
    assert column_rel_err(got, ref) < 1e-12


@pytest.mark.parametrize("rho", [None, 2.0 ** -2, 2.0 ** -4, 2.0 ** -11])
def test_part1_elementwise_against_its_absolute_sum(rho):
    """Each row's part-1 sum to ~1e-13 of the sum of the absolute values of its terms."""
    X, t, e, w, s = simulate(1500, seed=7, n_times=60, strata=3, weights=True)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s)
    data, state = fit.data, RiskSets(fit.data).state(fit.coef)
    exact, abs_sum, *_ = part1_dense(data, state)
    got = part1_series(data, state, rho=rho)
    assert np.all(np.abs(got - exact) <= 1e-13 * abs_sum + 1e-300)


# ------------------------------------------------------- against the deletion definition

@pytest.mark.parametrize("ties,strata,weights", GRID)
def test_series_equals_the_deletion_definition(ties, strata, weights):
    X, t, e, w, s = simulate(120, seed=3, n_times=8, strata=strata, weights=weights)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties)
    ref = vif_by_deletion(fit, X, t, e, w, s, ties)
    assert column_rel_err(ci.vif(fit, method="series"), ref) < 1e-9


def test_series_equals_deletion_with_large_tie_groups():
    """Tie groups of more than 32 events exercise both closed forms of the Efron part."""
    X, t, e, w, _ = simulate(300, seed=9, n_times=3, weights=True)
    fit = ci.fit_cox(X, t, e, weights=w)
    assert fit.data.group_n_events.max() > 33
    ref = vif_by_deletion(fit, X, t, e, w, None, "efron")
    assert column_rel_err(ci.vif(fit, method="series"), ref) < 1e-9


# ------------------------------------------------------------ the truncation error

@pytest.mark.parametrize("rho,P", [(0.5, 3), (0.25, 2), (0.5, 6)])
def test_truncation_error_is_the_geometric_tail_and_within_the_bound(rho, P):
    """With P series terms the error of row i is exactly the tail
    ``E_i = sum_{k: u_i/den_k <= rho} m_k (x_i - a_k) r_ik^P / (den_k - u_i)``, and
    ``|E_i| <= rho^P sum_k m_k |x_i - a_k| / (den_k - u_i)`` (stated in vif.py)."""
    X, t, e, w, s = simulate(800, seed=2, n_times=40, strata=2, weights=True, beta_scale=1.5)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s)
    data, state = fit.data, RiskSets(fit.data).state(fit.coef)
    exact, abs_sum, ratio, wk, diff = part1_dense(data, state)
    series = (ratio > 0) & (ratio <= rho)
    tail = np.einsum("ik,ikj->ij", np.where(series, wk * ratio ** P, 0.0), diff)
    bound_sum = np.einsum("ik,ikj->ij", np.where(series, wk, 0.0), np.abs(diff))
    got = part1_series(data, state, rho=rho, n_terms=P)
    err = got - exact
    scale = np.abs(exact).max()
    assert np.abs(err + tail).max() <= 1e-12 * scale          # the error is -E_i
    assert np.all(np.abs(err) <= rho ** P * bound_sum + 1e-12 * scale)
    assert np.all(np.abs(err) <= rho ** P * abs_sum + 1e-12 * scale)
    assert np.abs(err).max() > 1e-4 * scale                   # the tail is not negligible
    assert (np.abs(err) / np.maximum(rho ** P * bound_sum, 1e-300)).max() > 0.05   # tight


def test_default_series_length_reaches_rounding():
    for rho in (2.0 ** -2, 2.0 ** -4, 2.0 ** -11, 2.0 ** -18, 0.3):
        P = series_length(rho)
        assert rho ** P <= 2.0 ** -53 < rho ** (P - 1)


# --------------------------------------------------------------- numerics and pieces

def test_many_scale_segments_with_a_huge_linear_predictor_span():
    """den spans e^150: den^-(p+1) would overflow; the segment rescaling must not."""
    X, t, e, w, s = simulate(1500, seed=4, n_times=100, strata=2, weights=True)
    X[:, 0] = -np.log(t) + 0.3 * X[:, 0]          # long survivors have a low risk score
    theta = np.array([150.0 / np.ptp(X[:, 0]), 0.5, -0.3])
    data = make_cox_data(X, t, e, weights=w, strata=s)
    state = RiskSets(data).state(theta)
    assert np.log(state.den.max() / state.den.min()) > 100
    P = series_length(2.0 ** -4)
    assert np.log(state.den.max() / state.den.min()) > 250 * np.log(10) / P   # > 1 segment
    exact, abs_sum, ratio, *_ = part1_dense(data, state)
    # some rows hold > 99.9% of their risk sets: den - u_i cancels, conditioning ~ 1/(1 - r)
    cond = 1.0 / (1.0 - ratio.max(axis=1))
    assert cond.max() > 1000
    for rho in (2.0 ** -4, None):
        got = part1_series(data, state, rho=rho)
        assert np.all(np.isfinite(got))
        assert np.all(np.abs(got - exact) <= 1e-12 * (cond * abs_sum.T).T + 1e-300)


def test_covariate_offset_does_not_cancel():
    """x + 1e4 leaves every x_i - a_k unchanged; centring per stratum keeps x_i F - G from
    cancelling the offset (without it about 4 digits would be lost)."""
    X, t, e, w, s = simulate(2000, seed=8, n_times=100, strata=3, weights=True)
    theta = np.array([0.4, -0.3, 0.2])
    data = make_cox_data(X + 1e4, t, e, weights=w, strata=s)
    state = RiskSets(data).state(theta)
    exact, abs_sum, *_ = part1_dense(data, state)       # forms x_i - a_k term by term
    got = part1_series(data, state)
    assert np.all(np.abs(got - exact) <= 1e-13 * abs_sum)


def test_segmented_prefix_sums_against_cumsum():
    rng = np.random.default_rng(0)
    lengths = np.r_[rng.integers(1, 9, 300), 1000, 3, 1]    # stacked buckets and slices
    starts = np.cumsum(lengths) - lengths
    K = int(lengths.sum())
    V = np.zeros((4, K + 1))
    V[:, :K] = rng.standard_normal((4, K))
    plan = prefix_plan(starts, lengths)
    assert {step[0] for step in plan} == {"stack", "slice"}
    got = segmented_prefix_sums(V, plan)
    ref = np.concatenate([np.cumsum(V[:, a:a + n], axis=1) for a, n in zip(starts, lengths)],
                         axis=1)
    assert np.allclose(got[:, :K], ref, rtol=1e-14, atol=1e-13)
    assert np.all(got[:, K] == 0)
    # the same sums, transposed, from summands made on demand in blocks (carried over)
    calls = []

    def columns(j):
        calls.append(j.size)
        return V[:, j]
    out = np.full((K + 1, 4), np.nan)
    prefix_sums_of_columns(columns, plan, out, block=64)
    assert np.allclose(out[:K], ref.T, rtol=1e-14, atol=1e-13)
    assert np.all(out[K] == 0) and max(calls) <= 64          # never all K columns at once
    # only some positions kept (the VIF's compact gathers): their rows, the same bits
    mask = rng.random(K + 1) < 0.2
    mask[[0, 63, 64, 65, K - 1, K]] = True                   # block edges, the sentinel
    kept = Kept(mask)
    part = np.full((kept.size, 4), np.nan)
    prefix_sums_of_columns(columns, plan, part, block=64, kept=kept)
    assert np.array_equal(part, out[mask])
    assert kept.rows_before(K) == kept.size - 1


def test_term_means_by_blocks_are_the_states_bits():
    """The VIF's term means by blocks (``RiskSetState.term_means_of``) and its tie-group
    sums of them (``RiskSets.group_term_sums``) are the (K, d) array's bits."""
    X, t, e, w, s = simulate(3000, seed=9, n_times=60, strata=2, weights=True)
    theta = np.array([0.3, -0.2, 0.1])
    data = make_cox_data(X, t, e, weights=w, strata=s)
    rs = RiskSets(data)
    state = rs._state(theta)                  # not the cached state: formed when read
    assert "term_mean" not in state.__dict__
    k = np.random.default_rng(0).permutation(data.term_group.size)[:500]
    rows = state.term_means_of(k)
    whole = rs.term_means(state.risk[None], state.den[None], data.term_frac)[0]
    assert np.array_equal(rows, whole[k]) and "term_mean" not in state.__dict__
    assert np.array_equal(state.term_mean, whole)
    sums = rs.group_term_sums(lambda k0, k1: whole[k0:k1], data.d, block=37)
    assert np.array_equal(sums, rs.group_event_sums(whole[None])[0])


def test_efron_fraction_sum_against_exact_summation():
    rng = np.random.default_rng(1)
    N = np.r_[np.repeat([0, 1, 2, 7, 32, 33, 60, 500, 4000], 12), 100, 100, 100, 100]
    x = np.r_[rng.uniform(0, 1, N.size - 4), 0.25, 0.25 + 1e-12, 1.0, 0.0]
    got = efron_fraction_sum(N, x)
    ref = np.array([math.fsum((r / n) / (1 - (r / n) * xx) for r in range(n))
                    for n, xx in zip(N, x)])
    assert np.all(np.abs(got - ref) <= 2e-13 * ref)
    assert np.all(got[N == 0] == 0)


def test_efron_fraction_sum_series_classes_against_exact_summation():
    """Small x (large risk sets) takes the power series with as few terms as its class
    allows (Q = 27 at 1/4 down to 3 below 2^-18): every class, small and large N, to
    rounding against exact rational summation."""
    from fractions import Fraction
    rng = np.random.default_rng(4)
    N = rng.integers(2, 120, 400)
    x = np.r_[10 ** rng.uniform(-22, np.log10(0.25), N.size - 10), 2.0 ** -np.arange(2, 20, 2)[:9],
              0.0]
    got = efron_fraction_sum(N, x)
    ref = np.array([float(sum(Fraction(r, int(n)) / (1 - Fraction(r, int(n)) * Fraction(xx))
                              for r in range(int(n)))) for n, xx in zip(N, x)])
    assert np.all(np.abs(got - ref) <= 2e-15 * ref)      # a few ulps


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_own_group_change_fast_equals_the_pairwise_form(ties):
    X, t, e, w, s = simulate(2500, seed=6, n_times=6, strata=2, weights=True)
    data = ci.fit_cox(X, t, e, weights=w, strata=s, ties=ties).data
    state = RiskSets(data).state(np.array([0.3, -0.2, 0.1]))
    n_other = data.group_n_events[data.term_group] - 1
    u_ev = state.risk[data.event_rows]
    S0 = np.r_[state.den][np.searchsorted(data.term_group, data.term_group)]
    S0D = np.bincount(data.term_group, weights=u_ev)[data.term_group]
    x = (S0D - u_ev) / (S0 - u_ev)
    assert np.any((n_other > 32) & (x <= 0.25)) and np.any((n_other > 32) & (x > 0.25))
    ref = own_group_change(data, state)
    got = _own_group_change_fast(data, state)
    assert column_rel_err(got, ref) < 1e-12


def test_method_choice_and_validation():
    X, t, e, w, s = simulate(60, seed=1, n_times=10)
    small = ci.fit_cox(X, t, e)
    assert np.array_equal(ci.vif(small), ci.vif(small, method="direct"))
    with pytest.raises(ValueError, match="method"):
        ci.vif(small, method="fmm")
    with pytest.raises(ValueError, match="rho"):
        part1_series(small.data, RiskSets(small.data).state(small.coef), rho=1.5)


def test_ci_vif_keeps_no_vif_array_and_has_the_changes_bits():
    """``ci.vif`` (``CoxAudit.paper_vif``) forms the VIF in one new array, keeping none
    beside the cached differences (10^7 rows: one (n, d) array less at the peak), with
    the bits of ``-n * change("vif")``."""
    from coxinfluence.influence_functions.cox_audit import CoxAudit
    X, t, e, w, s = simulate(400, seed=3, n_times=40, weights=True)
    fit = ci.fit_cox(X, t, e, weights=w)
    model = CoxAudit(fit)
    got = model.paper_vif()
    assert "vif" not in model.__dict__ and "_loss_differences" in model.__dict__
    assert np.array_equal(got, -len(t) * model.change("vif"))     # keeps the VIF
    assert np.array_equal(model.paper_vif(), got)
    assert np.array_equal(np.asarray(ci.vif(fit)), got)

"""The closed-form VIF with delayed entry (``coxinfluence.influence_functions.vif_entry``:
``method="series"``
and ``"auto"`` on (start, stop] data) against two oracles: the O(n K d) direct sum
(``_vif_delta_direct``, with the pairwise own-tie-group reference) and the literal deletion
definition ``grad L(all) - grad L(rows deleted)`` computed with ``ci.cox_gradient``.

Accuracy criterion on the VIF: column-relative, ``max_i |fast - ref| / max_i |ref|`` per
coefficient, as in test_vif_fast.py. Part 1 is also checked elementwise against the sum of
the absolute values of its terms (plus, for the cancelled suffix of a range, the positive
sums the module docstring states its rounding against).
"""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from oracles import own_group_change
from test_vif_fast import part1_dense as dense_reference

import coxinfluence as ci
from coxinfluence.data.cox_data import make_cox_data
from coxinfluence.influence_functions.vif import (
    _vif_delta_direct,
    _vif_delta_series,
    part1_direct_sum,
)
from coxinfluence.influence_functions.vif_entry import _RangeTerms, part1_entry, range_min
from coxinfluence.influence_functions.vif_series import part1_series
from coxinfluence.likelihood.risk_sets import RiskSets


def counting(n_subj, d=3, seed=0, ties=True, strata=None, weights=False, max_rows=3,
             x_scale=1.0, late_entry=0.6):
    """Subjects with 1..max_rows contiguous intervals (time-varying covariates), delayed
    entry for a share ``late_entry`` of them, events on a subject's last interval (and a few
    recurrent ones before it), integer times when ``ties`` (many tied events), optional
    strata and per-subject weights. Returns X, start, stop, event, weights, strata, id."""
    rng = np.random.default_rng(seed)
    k = rng.integers(1, max_rows + 1, n_subj)
    sid = np.repeat(np.arange(n_subj), k)
    last = np.r_[sid[1:] != sid[:-1], True]
    if ties:
        entry = np.where(rng.random(n_subj) < late_entry, rng.integers(1, 8, n_subj), 0)
        length = rng.integers(1, 5, sid.size).astype(float)
    else:
        entry = np.where(rng.random(n_subj) < late_entry, rng.exponential(2.0, n_subj), 0.0)
        length = rng.exponential(2.0, sid.size) + 1e-3
    first = np.r_[True, last[:-1]]           # stop = entry + the subject's lengths so far
    csum = np.cumsum(length)
    base = np.repeat(csum[first] - length[first], k)
    stop = entry[sid] + csum - base
    start = np.where(first, entry[sid], np.r_[0.0, stop[:-1]])   # contiguous intervals
    X = x_scale * (rng.standard_normal((n_subj, d))[sid]
                   + 0.5 * rng.standard_normal((sid.size, d)))
    event = np.where(last, rng.random(sid.size) < 0.6, rng.random(sid.size) < 0.1).astype(float)
    event[0] = 1.0
    w = rng.uniform(0.3, 3.0, n_subj)[sid] if weights else None
    s = rng.integers(0, strata, n_subj)[sid] if strata else None
    return X, start, stop, event, w, s, sid


def column_rel_err(got, ref):
    return float((np.abs(got - ref).max(axis=0) / np.abs(ref).max(axis=0)).max())


def data_state(seed, theta_scale=0.5, ties="efron", tied=True, **kw):
    X, start, stop, event, w, s, sid = counting(seed=seed, ties=tied, **kw)
    data = make_cox_data(X, stop, event, start=start, id=sid, weights=w, strata=s, ties=ties)
    theta = theta_scale * np.random.default_rng(seed + 1).uniform(-1, 1, data.d)
    return data, RiskSets(data).state(theta)


def part1_dense(data, state):
    """Part 1 (without the factor u_i) by dense (n, K) arrays (test_vif_fast's reference),
    the sum of the absolute values of its terms, the positive suffix sums its rounding is
    stated against, u_i / den_k (0 outside the range), the term weights and the
    differences x_i - a_k."""
    exact, abs_sum, ratio, wk, diff = dense_reference(data, state)
    lo, _ = RiskSets(data).deletion_term_ranges
    k = np.arange(data.term_group.size)
    den, m, a = state.den, state.mean_weight, state.term_mean
    t_stratum = data.group_stratum[data.term_group]
    same = t_stratum[None, :] == data.strata[:, None]
    suffix = same & (k[None, :] >= lo[:, None])
    cancelled = np.einsum("ik,ikj->ij", np.where(suffix, m / den, 0.0),
                          np.abs(diff) + np.abs(a)[None, :, :])
    return exact, abs_sum, cancelled, ratio, wk, diff


# ------------------------------------------------------------ against the direct sum

GRID = [(ties, strata, weights) for ties in ("efron", "breslow")
        for strata in (None, 3) for weights in (False, True)]


@pytest.mark.parametrize("ties,strata,weights", GRID)
def test_entry_matches_direct_reference_grid(ties, strata, weights):
    X, start, stop, event, w, s, sid = counting(900, seed=5, strata=strata, weights=weights)
    fit = ci.fit_cox(X, stop, event, start=start, id=sid, weights=w, strata=s, ties=ties)
    data, state = fit.data, RiskSets(fit.data).state(fit.coef)
    assert data.group_n_events.max() > 20                       # heavy ties
    ref = own_group_change(data, state) + part1_direct_sum(data, state)
    got = _vif_delta_series(data, state)
    assert column_rel_err(got, ref) < 1e-12


@pytest.mark.parametrize("seed,theta_scale,x_scale,tied,direct_ok", [
    (1, 3.0, 2.0, False, True),    # the linear predictor spans e^35
    (5, 8.0, 2.0, True, True),     # rows hold 99.95% of a risk set (u_i ~ den_k), ties
    (6, 4.0, 3.0, False, True),    # e^84, rows hold 99.9999% of a risk set
    (3, 6.0, 1.5, False, False),   # e^83: here the direct sum itself is off by 3e-9
])
def test_extreme_risk_scores(seed, theta_scale, x_scale, tied, direct_ok):
    """Against the dense oracle (which forms x_i - a_k pair by pair), elementwise within the
    stated rounding (conditioning ``1 / (1 - max_k u_i/den_k)`` of ``den_k - u_i`` times the
    absolute and cancelled sums), and against the direct sum, whose ``x_i F_i - G_i`` with
    uncentred x loses digits of its own on the most extreme design."""
    data, state = data_state(seed, theta_scale, n_subj=500, x_scale=x_scale, tied=tied,
                             strata=2, weights=True)
    assert np.ptp(np.log(state.score)) > 30
    exact, abs_sum, cancelled, ratio, *_ = part1_dense(data, state)
    assert ratio.max() > 0.999                                  # u_i comparable to den_k
    cond = 1.0 / (1.0 - ratio.max(axis=1))
    got = part1_entry(data, state)
    assert np.all(np.abs(got - exact) <= 1e-12 * (cond * (abs_sum + cancelled).T).T + 1e-300)
    delta = _vif_delta_series(data, state)
    truth = own_group_change(data, state) + state.risk[:, None] * exact
    assert column_rel_err(delta, truth) < 1e-11
    ref = _vif_delta_direct(data, state)
    if direct_ok:
        assert column_rel_err(delta, ref) < 1e-10
    else:
        assert column_rel_err(ref, truth) > 1e-9 > 100 * column_rel_err(delta, truth)


def test_den_spanning_e150_needs_no_overflow():
    """den spans e^150: den^-(p+1) would overflow, the class scaling must not."""
    X, start, stop, event, w, s, sid = counting(600, seed=4, ties=False, weights=True)
    X[:, 0] = -np.log(stop) + 0.3 * X[:, 0]            # long survivors have a low risk score
    data = make_cox_data(X, stop, event, start=start, weights=w)
    theta = np.array([150.0 / np.ptp(X[:, 0]), 0.5, -0.3])
    state = RiskSets(data).state(theta)
    assert np.log(state.den.max() / state.den.min()) > 100
    exact, abs_sum, cancelled, ratio, *_ = part1_dense(data, state)
    cond = 1.0 / (1.0 - ratio.max(axis=1))
    for offset in (None, 0, 5):
        got = part1_entry(data, state, class_offset=offset)
        assert np.all(np.isfinite(got))
        assert np.all(np.abs(got - exact) <= 1e-12 * (cond * (abs_sum + cancelled).T).T
                      + 1e-300)


@pytest.mark.parametrize("offset", [None, 0, 1, 3, 8, 40])
def test_every_class_gives_the_same_sums(offset):
    """Any class at or above a row's lower bound is exact: from mostly series (offset 0,
    the lower bound) to all direct (offset 40: no term above the threshold)."""
    data, state = data_state(6, 1.5, n_subj=400, strata=2, weights=True)
    exact, abs_sum, cancelled, *_ = part1_dense(data, state)
    got = part1_entry(data, state, class_offset=offset)
    assert np.all(np.abs(got - exact) <= 1e-13 * (abs_sum + cancelled) + 1e-300)


def test_relaxed_rows_share_the_all_terms_class():
    """Rows with ``u_i > 2^(J0-1)`` (``t_i > 1/2``) whose stratum has no denominator below
    ``2 u_i`` from their exit back to its first event time use the all-terms class J0, and
    stay exact."""
    data, state = data_state(3, 1.0, n_subj=500)
    terms = _RangeTerms(data, state)
    cls = terms.choose_classes()
    rel = terms.relaxed[terms.rows] & (cls == terms.J0)
    assert np.any(state.risk[terms.rows][rel] > 2.0 ** (terms.J0 - 1))
    exact, abs_sum, cancelled, *_ = part1_dense(data, state)
    got = part1_entry(data, state)
    assert np.all(np.abs(got - exact) <= 1e-13 * (abs_sum + cancelled) + 1e-300)


@pytest.mark.parametrize("P,offset", [(1, 0), (2, 1), (3, 0)])
def test_truncation_error_is_the_geometric_tail(P, offset):
    """With P series terms the error of row i is exactly minus the tail
    ``sum_{series terms} m_k (x_i - a_k) r_ik^P / (den_k - u_i)``; the series terms of class
    j are the range's terms with ``den_k >= 2^j``."""
    data, state = data_state(7, 2.5, n_subj=300, strata=2, weights=True)
    exact, abs_sum, cancelled, ratio, wk, diff = part1_dense(data, state)
    s = 2.0 ** (_RangeTerms(data, state).jstd + offset)
    series = (ratio > 0) & (state.den[None, :] >= s[:, None])
    tail = np.einsum("ik,ikj->ij", np.where(series, wk * ratio ** P, 0.0), diff)
    err = part1_entry(data, state, class_offset=offset, n_terms=P) - exact
    scale = np.abs(exact).max()
    assert np.abs(err + tail).max() <= 1e-12 * scale
    assert np.abs(err).max() > 1e-6 * scale                    # the tail is not negligible
    r = np.where(series, ratio, 0.0).max(axis=1)
    assert np.all(np.abs(err) <= (r ** P / (1 - r))[:, None] * abs_sum + 1e-12 * scale)


def test_without_delayed_entry_equals_the_series_method():
    """On (0, time] data every range runs to its stratum's end: the entry path's suffix
    sums need no difference, and both accelerators agree with each other."""
    X, start, stop, event, w, s, _ = counting(700, seed=8, strata=3, weights=True,
                                              max_rows=1, late_entry=0.0)
    data = make_cox_data(X, stop, event, weights=w, strata=s)
    state = RiskSets(data).state(np.array([0.8, -0.5, 0.3]))
    a, b = part1_entry(data, state), part1_series(data, state)
    assert column_rel_err(state.risk[:, None] * a, state.risk[:, None] * b) < 1e-13


def test_covariate_offset_does_not_cancel():
    """x + 1e4 leaves every x_i - a_k (and u, den) unchanged; the per-stratum centring keeps
    x_i F_i - G_i from cancelling the offset (without it about 4 digits would be lost)."""
    X, start, stop, event, w, s, sid = counting(500, seed=9, strata=2, weights=True)
    theta = np.array([0.4, -0.3, 0.2])
    plain = make_cox_data(X, stop, event, start=start, weights=w, strata=s)
    _, abs_sum, cancelled, *_ = part1_dense(plain, RiskSets(plain).state(theta))
    data = make_cox_data(X + 1e4, stop, event, start=start, weights=w, strata=s)
    state = RiskSets(data).state(theta)
    exact = part1_dense(data, state)[0]                 # forms x_i - a_k term by term
    got = part1_entry(data, state)
    assert np.all(np.abs(got - exact) <= 1e-13 * (abs_sum + cancelled) + 1e-300)


# ------------------------------------------------------- against the deletion definition

def subject_vif_by_deletion(fit, X, start, stop, event, w, s, sid):
    """-(H/n)^{-1} (grad L(all) - grad L(subject's rows deleted)), literally."""
    args = dict(ties=fit.ties)
    g_all = ci.cox_gradient(fit.coef, X, stop, event, start=start, weights=w, strata=s, **args)
    labels = np.unique(sid)
    out = []
    for g in labels:
        keep = sid != g
        out.append(g_all - ci.cox_gradient(
            fit.coef, X[keep], stop[keep], event[keep], start=start[keep],
            weights=None if w is None else w[keep], strata=None if s is None else s[keep],
            **args))
    return -labels.size * np.linalg.solve(fit.information, np.array(out).T).T


@pytest.mark.parametrize("ties,strata,weights", GRID)
def test_series_equals_the_deletion_definition(ties, strata, weights):
    X, start, stop, event, w, s, sid = counting(70, seed=3, strata=strata, weights=weights)
    # per subject (several rows each) and per row
    fit = ci.fit_cox(X, stop, event, start=start, id=sid, weights=w, strata=s, ties=ties)
    ref = subject_vif_by_deletion(fit, X, start, stop, event, w, s, sid)
    assert column_rel_err(np.asarray(ci.vif(fit, method="series")), ref) < 1e-9
    rows = np.arange(sid.size)
    fit_rows = ci.fit_cox(X, stop, event, start=start, weights=w, strata=s, ties=ties)
    ref = subject_vif_by_deletion(fit_rows, X, start, stop, event, w, s, rows)
    assert column_rel_err(ci.vif(fit_rows, method="series"), ref) < 1e-9


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), ties=st.sampled_from(["efron", "breslow"]),
       strata=st.sampled_from([None, 2]), weights=st.booleans(), tied=st.booleans(),
       theta_scale=st.sampled_from([0.3, 2.0, 5.0]))
def test_entry_equals_direct_on_random_designs(seed, ties, strata, weights, tied,
                                               theta_scale):
    """Random designs, up to rows holding 99.99% of a risk set: beyond that ``den_k - u_i``
    loses ``log10 1/(1 - u_i/den_k)`` digits in every method (the oracles included), which
    ``test_extreme_risk_scores`` measures elementwise."""
    data, state = data_state(seed, theta_scale, ties=ties, n_subj=60, strata=strata,
                             weights=weights, tied=tied)
    assume(part1_dense(data, state)[3].max() < 1 - 1e-4)
    ref = own_group_change(data, state) + part1_direct_sum(data, state)
    got = _vif_delta_series(data, state)
    assert column_rel_err(got, ref) < 1e-10


# ----------------------------------------------------------------- method and pieces

def test_auto_and_series_use_the_entry_path():
    X, start, stop, event, w, s, sid = counting(400, seed=10, weights=True)
    small = ci.fit_cox(X[:40], stop[:40], event[:40], start=start[:40])
    assert np.array_equal(ci.vif(small), ci.vif(small, method="direct"))
    fit = ci.fit_cox(X, stop, event, start=start, id=sid, weights=w)
    assert fit.data.n * fit.data.term_group.size > 200_000
    auto = ci.vif(fit)
    assert np.array_equal(auto.to_numpy(), ci.vif(fit, method="series").to_numpy())
    assert column_rel_err(auto.to_numpy(), ci.vif(fit, method="direct").to_numpy()) < 1e-12


def test_range_min_against_brute_force():
    rng = np.random.default_rng(0)
    v = rng.random(1000)
    lo = rng.integers(0, 1000, 5000)
    hi = np.minimum(lo + rng.integers(1, 1000, 5000), 1000)
    lo[:3], hi[:3] = [0, 999, 0], [1000, 1000, 1]
    ref = np.array([v[a:b].min() for a, b in zip(lo, hi)])
    assert np.array_equal(range_min(v, lo, hi), ref)

"""``baseline_influence`` of cause-specific Cox models (the baselines' part of Reid's change
of the absolute risk) by prefix sums over the Efron terms against the dense risk-set
indicator it replaced (kept here as the slow reference), on designs with tied times,
strata, delayed entry (entries at event times), subjects of several rows and weights."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_cause_specific import NEW, TIMES, fit_case

import coxinfluence as ci
from coxinfluence.data.units import resolve_units
from coxinfluence.families.cause_specific_targets import cause_units
from coxinfluence.models.cause_specific_influence import (
    _risk_set_sums,
    baseline_influence,
    jump_derivatives,
)


def dense_baseline_influence(fit, parts, times, cause, product_limit=True, units=None):
    """The implementation before the prefix sums: an (rows x terms) risk-set indicator
    per block of rows and a Python loop over the tie groups."""
    if units is None:
        units = [resolve_units(m) for m in fit.models]
    total = None
    derivatives = jump_derivatives(fit, parts, times, cause, product_limit)
    for model, unit, (dinc, piece) in zip(fit.models, units, derivatives):
        den, frac, m, e = piece.den, piece.frac, piece.m, piece.e
        data = model.data
        ev, tg = data.event_rows, data.term_group
        P, T, K = dinc.shape
        G = dinc.reshape(P * T, K)
        n_events = data.group_n_events[tg]
        own = np.zeros((data.n, P * T))
        for g in np.unique(tg):
            in_g = tg == g
            rows = ev[in_g]
            coef = (G[:, in_g] @ (1.0 / (n_events[in_g] * den[in_g])))
            corr = G[:, in_g] @ (m[in_g] / den[in_g] ** 2 * frac[in_g])
            own[rows] = coef[None, :] + e[rows, None] * corr[None, :]
        start = np.full(data.n, -np.inf) if data.start is None else data.start
        t_k, s_k = data.time[ev], data.strata[ev]
        B = G * (m / den ** 2)[None, :]
        risk = np.zeros((data.n, P * T))
        for lo in range(0, data.n, 2048):
            rows = np.arange(lo, min(lo + 2048, data.n))
            R = ((data.time[rows, None] >= t_k[None, :])
                 & (start[rows, None] < t_k[None, :])
                 & (data.strata[rows, None] == s_k[None, :]))
            risk[rows] = (R * e[rows, None]) @ B.T
        dw = own - risk
        change = unit.collapse(-data.weights[:, None] * dw)
        total = change if total is None else total + change
    return total


def _both(fit, target, subjects=False):
    """New and old, with the target's default units (rows) or each model's own
    (``resolve_units``: its subjects with ``id=``)."""
    parts = target._parts(fit)[0]
    k = target._k(fit)
    units = [resolve_units(m) for m in fit.models] if subjects else cause_units(fit, None)
    new = baseline_influence(fit, parts, target.times, k, target.product_limit, units)
    old = dense_baseline_influence(fit, parts, target.times, k, target.product_limit, units)
    return new, old


def _same(new, old):
    assert new.shape == old.shape
    assert np.isfinite(new).all()
    scale = np.abs(old).max(axis=0)               # per patient and time (0: none before it)
    assert scale.max() > 0
    assert (np.abs(new - old) <= 1e-12 * scale).all(), np.max(np.abs(new - old) / scale.max())


def simulated(n, seed, strata=True, entry=True, split=True, weights=True, ties="efron"):
    """Two causes on an integer time grid (many ties), entry times and splits at times that
    are event times of others (``t_k == start_i``), three strata, case weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    t1 = np.ceil(rng.exponential(8.0 * np.exp(-0.5 * X[:, 0]), n))
    t2 = np.ceil(rng.exponential(12.0 * np.exp(0.4 * X[:, 1]), n))
    c = rng.integers(1, 25, n).astype(float)
    t = np.minimum(np.minimum(t1, t2), c)
    status = np.select([t1 == t, t2 == t], [1, 2], 0)
    start = (np.minimum(rng.integers(0, 4, n), t - 1).astype(float) if entry
             else np.zeros(n))
    rows = []
    for i in range(n):
        cut = start[i] + 1 + rng.integers(0, max(int(t[i] - start[i]) - 1, 1))
        if split and cut < t[i] and rng.random() < 0.5:
            rows.append((i, start[i], cut, 0))
            rows.append((i, cut, t[i], status[i]))
        else:
            rows.append((i, start[i], t[i], status[i]))
    ids, a, b, st = map(np.asarray, zip(*rows))
    kwargs = {"ties": ties}
    if entry or split:
        kwargs["entry"] = a
    if split:
        kwargs["id"] = ids
    if strata:
        kwargs["strata"] = rng.integers(0, 3, n)[ids]
    if weights:
        kwargs["weights"] = rng.uniform(0.5, 2.0, n)[ids]
    fit = ci.fit_cause_specific(pd.DataFrame(X[ids], columns=["a", "b"]), b, st, **kwargs)
    return fit, kwargs


@pytest.mark.parametrize("case", ("efron", "breslow", "strata", "entry", "weights", "noties"))
@pytest.mark.parametrize("product_limit", (True, False))
def test_prefix_sums_are_the_dense_indicator_on_pbc(case, product_limit):
    fit = fit_case(case)
    strata = NEW["edema"] if case == "strata" else None
    target = ci.targets.AbsoluteRisk(NEW, TIMES, cause=1, product_limit=product_limit,
                                     strata=strata)
    _same(*_both(fit, target))


@pytest.mark.parametrize("design", [
    dict(),
    dict(ties="breslow"),
    dict(strata=False),
    dict(split=False),
    dict(entry=False, split=False),
    dict(entry=False, split=False, strata=False, weights=False),
])
@pytest.mark.parametrize("cause", (1, 2))
def test_prefix_sums_are_the_dense_indicator_on_simulated_designs(design, cause):
    fit, kwargs = simulated(300, 11, **design)
    new_x = pd.DataFrame({"a": [0.0, 1.0, -0.5], "b": [0.0, -1.0, 0.5]})
    strata = None
    if "strata" in kwargs:
        strata = [0, 1, 2]
    target = ci.targets.AbsoluteRisk(new_x, [2.0, 5.0, 9.0, 30.0], cause=cause,
                                     strata=strata)
    _same(*_both(fit, target))
    new, old = _both(fit, target, subjects=True)
    _same(new, old)
    if "id" in kwargs:
        assert new.shape[0] == 300                     # one row per subject


def test_risk_set_sums_inequalities():
    """Row i sums the terms k of its stratum with ``start_i < t_k <= time_i``: a term at
    the row's stop time is in, one at its entry time out."""
    fit = ci.fit_cause_specific(np.arange(6.0)[:, None] % 2,
                                [2.0, 2.0, 3.0, 3.0, 5.0, 4.0], [1, 1, 1, 0, 1, 1],
                                entry=[0.0, 1.0, 2.0, 0.0, 3.0, 2.0])
    data = fit.models[0].data
    K = data.event_rows.size
    B = np.eye(K)
    got = _risk_set_sums(data, B)
    t_k = data.time[data.event_rows]
    want = ((data.time[:, None] >= t_k[None, :])
            & (data.start[:, None] < t_k[None, :])).astype(float)
    np.testing.assert_array_equal(got, want)

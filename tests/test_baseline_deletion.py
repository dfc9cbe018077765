"""The survival target's data effect in closed form (issue 46 item 6): the baseline hazard
without each unit at ``theta_hat`` (:mod:`coxinfluence.influence_functions.
baseline_deletion`) equals deleting the unit's rows through the general risk-set kernel,
for Efron and Breslow ties, both baselines (``ctype``), case weights, strata, delayed
entry, subjects and clusters."""
import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.data.units import resolve_units, row_units
from coxinfluence.families.cox_targets import CoxSurvival
from coxinfluence.influence_functions.baseline_deletion import baseline_change_of_units


def _design(seed, n=60, ties=True, weights=False, strata=False, entry=False, ids=False):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    time = rng.exponential(np.exp(-0.5 * X.a)) * 10
    time = np.ceil(time) if ties else time + 0.01
    event = (rng.random(n) < 0.7).astype(int)
    kw = {}
    if weights:
        kw["weights"] = rng.uniform(0.3, 3.0, n)
    if strata:
        kw["strata"] = pd.Series(rng.integers(0, 3, n), name="s")
    if entry:
        start = np.floor(time * rng.uniform(0, 0.8, n) * (rng.random(n) < 0.5))
        kw["start"] = np.minimum(start, time - 0.5)
    if ids:             # subjects: two consecutive intervals of one patient
        assert not entry
        half = n // 2
        kw["id"] = np.r_[np.arange(half), np.arange(n - half)]
        stop = time.copy()
        start = np.zeros(n)
        start[half:] = time[: n - half]
        stop[half:] = time[: n - half] + time[half:]
        event[: n - half] = 0
        time, kw["start"] = stop, start
    return X, time, event, kw


def _old(target, fit, units):
    """The definition: each unit's rows deleted, the baseline recomputed."""
    full = target._surv(fit, fit.coef)[0]
    thetas = np.repeat(fit.coef[None, :], units.n_units, axis=0)
    return target._batched(fit, thetas, units, 16) - full


CASES = [dict(), dict(weights=True), dict(strata=True), dict(entry=True),
         dict(weights=True, strata=True, entry=True), dict(ids=True),
         dict(ids=True, weights=True, strata=True), dict(ties=False)]


@pytest.mark.parametrize("ties", ["efron", "breslow"])
@pytest.mark.parametrize("ctype", [1, 2])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_closed_form_equals_deletion(case, ctype, ties):
    X, time, event, kw = _design(case, **CASES[case])
    fit = ci.fit_cox(X, time, event, ties=ties, **kw)
    Xn = X.iloc[:7]
    times = np.quantile(time, [0.1, 0.3, 0.5, 0.9, 1.0]) + [0, 0.5, 0, 0, 5]
    strata = None if "strata" not in kw else kw["strata"].iloc[:7].to_list()
    target = CoxSurvival(Xn, times, ctype=ctype, strata=strata)
    for units in {resolve_units(fit), row_units(fit.data)}:
        new = target.data_effect(fit, units)
        old = _old(target, fit, units)
        np.testing.assert_allclose(new, old, rtol=0, atol=1e-12)
        assert np.abs(old).max() > 1e-4          # the effect is not trivially zero


def test_clusters_fall_back_to_deletion():
    X, time, event, kw = _design(3, weights=True)
    fit = ci.fit_cox(X, time, event, **kw)
    groups = np.arange(len(time)) % 9
    units = resolve_units(fit, groups)
    delta, done = baseline_change_of_units(fit, [5.0], units)
    assert not done.any() and not delta.any()
    target = CoxSurvival(X.iloc[:5], [2.0, 6.0])
    np.testing.assert_allclose(target.data_effect(fit, units), _old(target, fit, units),
                               rtol=0, atol=1e-12)


def test_heavy_ties_and_series_path():
    """Many tied events per time and enough rows that the series (not only direct pairs)
    carries most of each row's sum."""
    rng = np.random.default_rng(7)
    n = 3000
    X = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"])
    time = np.ceil(rng.exponential(np.exp(-0.7 * X.a)) * 4)
    event = (rng.random(n) < 0.8).astype(int)
    w = rng.uniform(0.5, 2.0, n)
    fit = ci.fit_cox(X, time, event, weights=w)
    target = CoxSurvival(X.iloc[:4], np.quantile(time, [0.2, 0.5, 0.8]))
    units = row_units(fit.data)
    np.testing.assert_allclose(target.data_effect(fit, units), _old(target, fit, units),
                               rtol=0, atol=1e-12)

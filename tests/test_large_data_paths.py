"""What runs only from 2^20 rows, exercised on small data: row blocks on threads
(coxinfluence.numerics.threads; the same bits on any number of threads) and fit_cox's Newton
start from a subsample's fit (coxinfluence.models.cox.subsample_start)."""
import numpy as np
import pytest

import coxinfluence as ci
from coxinfluence.data.cox_data import make_cox_data
from coxinfluence.models import cox as cox_mod
from coxinfluence.numerics import threads as _threads
from coxinfluence.numerics.threads import for_row_blocks, n_threads


def _fit_and_vif(threads, monkeypatch, rng_seed=3):
    rng = np.random.default_rng(rng_seed)
    n, d = 200_000, 4                                     # several blocks per pass
    X = rng.standard_normal((n, d))
    time = np.round(rng.exponential(np.exp(-X @ [0.5, -0.3, 0.2, 0.0])), 1)  # ties
    event = (rng.random(n) < 0.7).astype(float)
    strata = rng.integers(0, 2, n)
    monkeypatch.setattr(_threads, "MIN_ROWS", 0)          # threads at any size
    monkeypatch.setenv(_threads.ENV, str(threads))
    fit = ci.fit_cox(X, time, event, strata=strata)
    return fit, np.asarray(ci.vif(fit)), np.asarray(ci.reid_influence(fit))


def test_same_bits_on_one_and_three_threads(monkeypatch):
    calls = []
    real = _threads.ThreadPoolExecutor

    class Spy(real):
        def __init__(self, n, *a, **k):
            calls.append(n)
            super().__init__(n, *a, **k)
    monkeypatch.setattr(_threads, "ThreadPoolExecutor", Spy)
    fit1, vif1, reid1 = _fit_and_vif(1, monkeypatch)
    assert calls == []                                    # one thread: no pool
    fit3, vif3, reid3 = _fit_and_vif(3, monkeypatch)
    assert calls and set(calls) == {3}                    # the threaded passes ran
    np.testing.assert_array_equal(fit1.data.order, fit3.data.order)   # threaded sort
    np.testing.assert_array_equal(fit1.data.X, fit3.data.X)
    np.testing.assert_array_equal(fit1.coef, fit3.coef)
    np.testing.assert_array_equal(fit1.information, fit3.information)
    np.testing.assert_array_equal(vif1, vif3)
    np.testing.assert_array_equal(reid1, reid3)


def test_blocks_cover_rows_once_and_errors_propagate():
    seen = np.zeros(1000, dtype=int)
    workers = set()

    def work(w, a, b):
        seen[a:b] += 1
        workers.add(w)
    assert for_row_blocks(work, 1000, 64, threads=3) == 3
    assert (seen == 1).all() and workers == {0, 1, 2}

    def boom(w, a, b):
        raise RuntimeError("block failed")
    with pytest.raises(RuntimeError, match="block failed"):
        for_row_blocks(boom, 1000, 64, threads=2)


def test_thread_count_setting(monkeypatch):
    monkeypatch.delenv(_threads.ENV, raising=False)
    assert n_threads(_threads.MIN_ROWS - 1) == 1          # small passes: calling thread
    assert 1 <= n_threads(_threads.MIN_ROWS) <= _threads.MAX_THREADS
    monkeypatch.setenv(_threads.ENV, "2")
    assert n_threads(_threads.MIN_ROWS) == 2
    for bad in ("0", "two"):
        monkeypatch.setenv(_threads.ENV, bad)
        with pytest.raises(ValueError, match=_threads.ENV):
            n_threads(_threads.MIN_ROWS)


# ---------------------------------------------------- fit_cox's start from a subsample

def _tied_data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    time = np.round(rng.exponential(np.exp(-X @ [0.8, -0.5, 0.3])), 2)
    event = (rng.random(n) < 0.8).astype(float)
    return X, time, event


def test_subsample_start_is_near_the_fit_and_gives_the_same_fit(monkeypatch):
    X, time, event = _tied_data(20_000, 5)
    cold = ci.fit_cox(X, time, event)                  # below WARM_START_ROWS: zeros
    data = cold.data
    start = cox_mod.subsample_start(data, min_rows=1000, sample=2000)
    assert 0 < np.abs(start - cold.coef).max() < 0.15  # a fit of 2000 of 20,000 rows
    np.testing.assert_array_equal(cox_mod.subsample_start(data), np.zeros(3))
    monkeypatch.setattr(cox_mod, "WARM_START_ROWS", 1000)
    monkeypatch.setattr(cox_mod, "_WARM_START_SAMPLE", 2000)
    warm = ci.fit_cox(X, time, event)
    assert warm.converged and warm.n_iter < cold.n_iter
    np.testing.assert_allclose(warm.coef, cold.coef, rtol=0, atol=1e-12)
    np.testing.assert_allclose(warm.information, cold.information, rtol=1e-12)


def test_subsample_start_falls_back_to_zeros_when_the_subsample_fit_fails():
    # x = 1 on the events, which all come before the censored rows: the likelihood
    # increases without bound in x's coefficient, on the data and on every subsample
    n = 4000
    time = np.arange(1.0, n + 1)
    event = np.r_[np.ones(n // 2), np.zeros(n // 2)]
    X = np.c_[event, np.random.default_rng(0).standard_normal(n)]
    data = make_cox_data(X, time, event, check_identifiable=False)
    with pytest.warns(ci.ConvergenceWarning):
        assert not ci.fit_cox(X, time, event).converged
    np.testing.assert_array_equal(
        cox_mod.subsample_start(data, min_rows=100, sample=500), np.zeros(2))

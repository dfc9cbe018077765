"""paper_appendix machinery: the numpy Adam protocol of table1_correlation.py against the
library's Breslow gradient, and run_all.py on one cheap step. (The whole
``run_all.py --quick`` takes minutes and runs as its own CI command.)"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "paper_appendix"))

from coxinfluence import cox_gradient  # noqa: E402


def data(n=80, d=3, seed=0, ties=True):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    t = rng.exponential(1.0, n)
    if ties:
        t = np.ceil(t * 5) / 5
    e = (rng.random(n) < 0.7).astype(float)
    return X, t, e


def test_breslow_gradient_matches_library_with_deleted_rows():
    from table1_correlation import BreslowLoss
    X, t, e = data()
    loss = BreslowLoss(X, t, e)
    theta = np.random.default_rng(1).normal(size=(4, 3)) * 0.5
    rows = [0, 17, int(np.argmax(t)), 42]          # caller order; one with the largest time
    g = loss.grad(theta, loss.weights(np.argsort(loss.order)[rows]))
    for b, i in enumerate(rows):
        keep = np.arange(len(t)) != i
        ref = cox_gradient(theta[b], X[keep], t[keep], e[keep], ties="breslow") / e[keep].sum()
        np.testing.assert_allclose(g[b], ref, rtol=1e-12, atol=1e-14)


def test_adam_reaches_the_breslow_fit_and_tie_order_is_irrelevant_without_ties():
    from table1_correlation import BreslowLoss, adam_train, adam_train_random_ties, torch_init

    import coxinfluence as ci
    X, t, e = data(ties=False)
    loss = BreslowLoss(X, t, e)
    init = torch_init(3, 0)[None, :]
    a = adam_train(loss, init, None, 3000)
    fit = ci.fit_cox(X, t, e, ties="breslow")
    np.testing.assert_allclose(a[0], fit.coef, atol=1e-4)
    b = adam_train_random_ties(loss, init, None, 3000, [123])
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    c = adam_train_random_ties(loss, init, None, 3000, [123], per_epoch=True)
    np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-13)


def test_random_tie_order_changes_the_result_with_ties():
    from table1_correlation import BreslowLoss, adam_train_random_ties, torch_init
    X, t, e = data(ties=True)
    loss = BreslowLoss(X, t, e)
    init = torch_init(3, 0)[None, :]
    a = adam_train_random_ties(loss, init, None, 200, [1])
    b = adam_train_random_ties(loss, init, None, 200, [2])
    assert np.abs(a - b).max() > 1e-6


def test_tie_order_per_epoch_and_float32():
    """Protocols D and E: a fresh tie order every epoch gives another path than one order
    per run; float32 arithmetic stays within float32 rounding of the float64 path (and is
    not the float64 path)."""
    from table1_correlation import BreslowLoss, adam_train_random_ties, torch_init
    X, t, e = data(ties=True)
    loss = BreslowLoss(X, t, e)
    init = torch_init(3, 0)[None, :]
    run = adam_train_random_ties(loss, init, None, 200, [1])
    epoch = adam_train_random_ties(loss, init, None, 200, [1], per_epoch=True)
    assert np.abs(run - epoch).max() > 1e-6
    f32 = adam_train_random_ties(loss, init, None, 200, [1], per_epoch=True,
                                 dtype=np.float32)
    assert f32.dtype == np.float64                   # returned as float64
    assert 0 < np.abs(f32 - epoch).max() < 1e-4


def test_fixed_tie_order_offsets():
    """Distinct times, the order of distinct times kept, tied rows in the seeded order of
    ``tie_orders`` (lexsort on the seed's uniforms), below the smallest gap."""
    from table1_correlation import fixed_tie_order_offsets
    t = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 1.0, 5.0])
    off = fixed_tie_order_offsets(t, seed=4)
    s = t + off
    assert np.unique(s).size == t.size
    assert np.all(off >= 0) and off.max() < 0.5      # smallest gap 1
    np.testing.assert_array_equal(np.argsort(s), np.lexsort(
        (np.random.default_rng(4).random(t.size), t)))


def _table3_sections(text):
    """{k: (test row label, relative risk, correlation, rows)} parsed from RESULTS.md."""
    out = {}
    pattern = (r"Test sample (\d+) \(row (\d+) of METABRIC; relative risk ([\d.eE+-]+); "
               r"correlation of VIF and exact over all training patients ([\d.]+)\)\n+"
               r"((?:\|.*\|\n?)+)")
    for m in re.finditer(pattern, text):
        lines = m.group(5).strip().splitlines()
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        assert header == ["rank", "training patient", "feature similarity", "observed time",
                          "event", "RR change (VIF)", "RR change (exact)", "rank by exact"]
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
        out[int(m.group(1))] = (int(m.group(2)), float(m.group(3)), float(m.group(4)), rows)
    return out


def test_run_all_one_step(tmp_path, shared_data_dir):
    """run_all.py runs the table3 step and its table holds the numbers of the oracles:
    the fit (a stationary point), the relative risk exp(theta' x), the VIF change by
    its definition (row deleted, gradient difference; chain rule J Delta), the exact
    change by refitting without the patient (ci.fit_cox on the deleted rows), the
    features, times and events of those patients. Skipped, with the reason, where the
    paper's data is absent (tests/conftest.py::shared_data_dir); never downloads."""
    import os

    from oracles import refit_rows, vif_rows

    import coxinfluence as ci
    from coxinfluence.datasets import paper_split

    path = shared_data_dir
    out = tmp_path / "RESULTS.md"
    env = dict(os.environ, COXINFLUENCE_DATA=str(path), COXINFLUENCE_NO_DOWNLOAD="1")
    res = subprocess.run([sys.executable, str(ROOT / "paper_appendix" / "run_all.py"),
                          "--only", "table3", "--results", str(out)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    text = out.read_text()
    assert "Wall time of" in text and "| ok |" in text
    sections = _table3_sections(text)
    assert sorted(sections) == [0, 1]

    split = paper_split("metabric", path=path)
    X, t, e = split.arrays("train")
    n = len(t)
    fit = ci.fit_cox(X, t, e)
    assert np.abs(ci.cox_gradient(fit.coef, X, t, e)).max() < 1e-6
    delta = -vif_rows(fit.coef, X, t, e, range(n)) / n            # definition, all rows
    exact_all = np.asarray(ci.exact_loo(fit, progress=False))
    for k, (label, rr_shown, corr_shown, rows) in sections.items():
        x = split.test[split.covariates].iloc[k]
        assert int(x.name) == label
        x = x.to_numpy()
        rr = np.exp(x @ fit.coef)
        assert rr_shown == pytest.approx(rr, rel=1e-3)              # printed with 4 digits
        vif_change = rr * (delta @ x)                               # chain rule, J Delta
        order = np.argsort(-vif_change, kind="stable")[:5]
        assert [int(r[1]) for r in rows] == list(split.train.index[order])
        exact = np.exp(refit_rows(X, t, e, order) @ x) - rr
        exact_change = np.exp(exact_all @ x) - rr
        np.testing.assert_allclose(np.exp(exact_all[order] @ x) - rr, exact, rtol=1e-7)
        rank_exact = np.argsort(np.argsort(-exact_change, kind="stable")) + 1
        for r, i, exact_i in zip(rows, order, exact):
            cos = X[i] @ x / (np.linalg.norm(X[i]) * np.linalg.norm(x))
            assert float(r[2]) == pytest.approx(cos, abs=5.01e-3)
            assert float(r[3]) == pytest.approx(t[i], abs=5.01e-3)
            assert r[4] == str(bool(e[i]))
            assert float(r[5]) == pytest.approx(vif_change[i], rel=1e-4)   # 5 digits
            assert float(r[6]) == pytest.approx(exact_i, rel=1e-4)
            assert int(r[7]) == rank_exact[i]
        assert corr_shown == pytest.approx(np.corrcoef(vif_change, exact_change)[0, 1],
                                           abs=5.01e-7)


def test_run_all_rejects_unknown_step():
    res = subprocess.run([sys.executable, str(ROOT / "paper_appendix" / "run_all.py"),
                          "--only", "table9"], capture_output=True, text=True)
    assert res.returncode == 2 and "unknown step" in res.stderr


def test_interleaved_median_times_alternates_the_calls_and_times_each():
    """The benchmarks' ratio timings (bench_audit's auto / vif): one warm-up round, then
    every function once per round, in turn; the medians are each function's own."""
    import time

    from bench_audit import interleaved_median_times
    calls = []

    def slow():
        calls.append("slow")
        time.sleep(0.004)

    def fast():
        calls.append("fast")

    t_slow, t_fast = interleaved_median_times([slow, fast], repeats=5)
    assert calls == ["slow", "fast"] * 6
    assert t_slow >= 0.004 > t_fast

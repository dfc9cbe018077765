"""paper_appendix machinery: the numpy Adam protocol of table1_correlation.py against the
library's Breslow gradient, and run_all.py on one cheap step. (The whole
``run_all.py --quick`` takes minutes and runs as its own CI command.)"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "paper_appendix"))

from coxinfluence.cox import cox_gradient  # noqa: E402


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
    import coxinfluence as ci
    from table1_correlation import BreslowLoss, adam_train, adam_train_random_ties, torch_init
    X, t, e = data(ties=False)
    loss = BreslowLoss(X, t, e)
    init = torch_init(3, 0)[None, :]
    a = adam_train(loss, init, None, 3000)
    fit = ci.fit_cox(X, t, e, ties="breslow")
    np.testing.assert_allclose(a[0], fit.coef, atol=1e-4)
    b = adam_train_random_ties(loss, init, None, 3000, [123])
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_random_tie_order_changes_the_result_with_ties():
    from table1_correlation import BreslowLoss, adam_train_random_ties, torch_init
    X, t, e = data(ties=True)
    loss = BreslowLoss(X, t, e)
    init = torch_init(3, 0)[None, :]
    a = adam_train_random_ties(loss, init, None, 200, [1])
    b = adam_train_random_ties(loss, init, None, 200, [2])
    assert np.abs(a - b).max() > 1e-6


def test_run_all_one_step(tmp_path):
    out = tmp_path / "RESULTS.md"
    res = subprocess.run([sys.executable, str(ROOT / "paper_appendix" / "run_all.py"),
                          "--only", "table3", "--results", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    text = out.read_text()
    assert "Wall time of" in text and "| ok |" in text
    assert "Test sample 0" in text and "feature similarity" in text


def test_run_all_rejects_unknown_step():
    res = subprocess.run([sys.executable, str(ROOT / "paper_appendix" / "run_all.py"),
                          "--only", "table9"], capture_output=True, text=True)
    assert res.returncode == 2 and "unknown step" in res.stderr

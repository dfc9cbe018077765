"""Fine-Gray, scikit-survival's elastic net and autodiff losses on the one influence engine
(issue 34, item 1): their refits take ``progress=`` and ``executor=`` with results
bit-identical to the serial run, a refit that runs off (no maximum after the deletion) is
"undefined", and ``Reparametrised`` forwards what it wraps.

Oracles: literal refits (``ci.fit_fine_gray`` without the subject; the loss's own JAX
Newton solver, ``loss.loo``; the elastic net's own refitter ``coxnet_refits``), and the
serial run for the executor's and the progress bar's results.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import coxinfluence as ci
from coxinfluence.influence_functions.fine_gray_audit import FineGrayAudit
from coxinfluence.influence_functions.reparametrised import Reparametrised


def _fine_gray_data(seed=3, n=150):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    t = np.round(rng.exponential(np.exp(-X @ [0.5, -0.3, 0.2])), 2) + 0.01
    status = np.where(rng.uniform(size=n) < 0.25, 0, rng.integers(1, 3, n))
    return X, t, status


def _same(a, b):
    assert np.array_equal(a.codes, b.codes)
    assert list(a.status) == list(b.status)
    np.testing.assert_array_equal(a.theta, b.theta)


def test_fine_gray_refits_with_executor_and_progress_equal_serial_and_literal(capsys):
    X, t, status = _fine_gray_data()
    fit = ci.fit_fine_gray(X, t, status)
    serial = FineGrayAudit(fit).refit()
    with ThreadPoolExecutor(2) as pool:
        spread = FineGrayAudit(fit).refit(executor=pool, progress=True)
    _same(serial, spread)
    assert "exact leave-one-out" in capsys.readouterr().err      # the bar was shown
    assert (serial.status == "ok").all()
    for i in (0, 17, 101):
        keep = np.arange(t.size) != i
        literal = ci.fit_fine_gray(X[keep], t[keep], status[keep], tol=1e-12)
        np.testing.assert_allclose(serial.theta[i], literal.coef, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_fine_gray_refits_on_a_process_pool_and_dask_equal_serial():
    """The kernel pickles (a process pool) and its data are scattered once to a dask
    cluster's workers: the same bits as the serial run."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    X, t, status = _fine_gray_data(n=90)
    fit = ci.fit_fine_gray(X, t, status)
    serial = FineGrayAudit(fit).refit()
    # spawned workers: forking a process that has loaded JAX (other tests) can deadlock
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        _same(serial, FineGrayAudit(fit).refit(executor=pool))
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        _same(serial, FineGrayAudit(fit).refit(executor=client))


def test_fine_gray_refit_that_runs_off_is_undefined():
    """A binary covariate whose level 1 has one failure of the cause: without that subject
    the pseudo-likelihood is monotone in its coefficient (no maximum), which the engine's
    runaway detection calls "undefined"; the other deletions refit as the literal fits."""
    rng = np.random.default_rng(5)
    n = 80
    x = np.zeros(n)
    x[:6] = 1.0
    X = np.column_stack([x, rng.normal(size=n)])
    t = rng.exponential(size=n) + 0.01
    status = rng.integers(1, 3, n)
    status[:6] = [1, 2, 2, 0, 0, 2]                   # the level's only cause-1 failure: 0
    fit = ci.fit_fine_gray(X, t, status)
    audit = FineGrayAudit(fit)
    assert not audit.undefined()[0]                   # not known in advance
    res = audit.refit([0, 10])
    assert list(res.status) == ["undefined", "ok"]
    assert np.isnan(res.theta[0]).all()
    keep = np.arange(n) != 10
    literal = ci.fit_fine_gray(X[keep], t[keep], status[keep], tol=1e-12)
    np.testing.assert_allclose(res.theta[1], literal.coef, rtol=0, atol=1e-9)


def test_reparametrised_forwards_the_wrapped_seam():
    X, t, status = _fine_gray_data(n=80)
    inner = FineGrayAudit(ci.fit_fine_gray(X, t, status))
    A = np.eye(3)[[2, 0, 1]] * np.array([1.0, -1.0, 1.0])[:, None]
    model = Reparametrised(inner, A, ["c", "a", "b"])
    assert model.ratio_name == inner.ratio_name == "subdistribution hazard ratio"
    assert model.report_notes() == inner.report_notes()
    assert model.n_units == inner.n_units
    np.testing.assert_array_equal(model.undefined(), inner.undefined())
    codes = np.array([3, 40, 7])
    with ThreadPoolExecutor(2) as pool:
        res = model.refit(codes, executor=pool, batch_size=2)
    want = inner.refit(codes)
    np.testing.assert_allclose(res.theta, want.theta @ A.T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.change("newton"), inner.change("newton") @ A.T,
                               rtol=0, atol=1e-15)


# ------------------------------------------------------------------------ autodiff

@pytest.fixture(scope="module")
def logistic():
    pytest.importorskip("jax")
    from coxinfluence.autodiff import AutodiffModel, losses
    rng = np.random.default_rng(1)
    n = 70
    X = rng.normal(size=(n, 2))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ [1.0, -0.5])))).astype(float)
    loss = losses.glm(X, y, "logistic")
    return loss, AutodiffModel(loss)


@pytest.mark.slow
def test_autodiff_refits_with_executor_and_progress_equal_serial_and_the_loss_own(
        logistic, capsys):
    loss, model = logistic
    codes = np.arange(0, 70, 3)
    serial = model.refit(codes)
    with ThreadPoolExecutor(2) as pool:
        spread = model.refit(codes, executor=pool, progress=True, batch_size=4)
    assert "exact leave-one-out" in capsys.readouterr().err
    again = model.refit(codes, batch_size=4)
    _same(again, spread)
    assert (serial.status == "ok").all()
    own = np.asarray(loss.loo(model.coef, objects=codes))      # the loss's JAX Newton
    np.testing.assert_allclose(serial.theta, own, rtol=0, atol=1e-9)
    np.testing.assert_allclose(spread.theta, own, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_autodiff_refit_that_runs_off_is_undefined():
    """Logistic regression separated (x > 0: y = 1) but for one row r inside the positive
    side: without r the likelihood has no maximum; the engine stops the refit that runs
    off and calls it "undefined" (a generic loss knows no undefined deletion in
    advance). Deleting another row leaves r: that refit equals the loss's own."""
    pytest.importorskip("jax")
    from coxinfluence.autodiff import AutodiffModel, losses
    rng = np.random.default_rng(2)
    x = np.sort(rng.normal(size=40))
    y = (x > 0).astype(float)
    positive = np.flatnonzero(x > 0)
    r = int(positive[positive.size // 2])
    y[r] = 0.0
    loss = losses.glm(x[:, None], y, "logistic")
    model = AutodiffModel(loss)
    assert model.converged and not model.undefined().any()
    res = model.refit([r, 0])
    assert list(res.status) == ["undefined", "ok"]
    assert np.isnan(res.theta[0]).all()
    np.testing.assert_allclose(res.theta[1], np.asarray(loss.loo(model.coef, objects=[0]))[0],
                               rtol=0, atol=1e-9)


# ---------------------------------------------------------- scikit-survival's Coxnet

def test_coxnet_refits_with_executor_and_progress_equal_serial(capsys):
    pytest.importorskip("sksurv")
    from sksurv.linear_model import CoxnetSurvivalAnalysis
    from sksurv.util import Surv
    rng = np.random.default_rng(4)
    n = 90
    X = rng.normal(size=(n, 4))
    t = rng.exponential(np.exp(-X @ [0.8, -0.5, 0.0, 0.0]))
    e = rng.uniform(size=n) < 0.8
    y = Surv.from_arrays(e, t)
    est = CoxnetSurvivalAnalysis(alphas=[0.05], l1_ratio=0.7, tol=1e-15).fit(X, y)
    res = ci.influence(est, X, y=y, method="vif")
    model = res.model
    codes = np.arange(0, n, 2)
    serial = model.refit(codes)
    with ThreadPoolExecutor(2) as pool:
        spread = model.refit(codes, executor=pool, progress=True, n_chunks=3)
    assert "exact leave-one-out" in capsys.readouterr().err
    _same(serial, spread)
    for i in (0, 6):                                  # scikit-survival's own refits
        keep = np.arange(n) != i
        other = CoxnetSurvivalAnalysis(alphas=[0.05], l1_ratio=0.7, tol=1e-15).fit(
            X[keep], Surv.from_arrays(e[keep], t[keep]))
        np.testing.assert_allclose(serial.theta[codes == i][0], other.coef_[:, 0],
                                   rtol=0, atol=1e-7)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_fine_gray_without_competing_events_is_cox(ties):
    """Without competing failures the censoring weights multiply no subject, and the
    Fine-Gray pseudo-likelihood is Cox's partial likelihood (issue 34, item 3): the
    Fine-Gray engine's VIF, one-step Newton and refits equal the Cox audit's (Cox's own
    risk-set kernels) on the same data."""
    rng = np.random.default_rng(8)
    n = 90
    X = rng.normal(size=(n, 2))
    t = np.round(rng.exponential(np.exp(-X @ [0.6, -0.4])), 1) + 0.1
    status = (rng.uniform(size=n) < 0.7).astype(int)
    fg = FineGrayAudit(ci.fit_fine_gray(X, t, status, ties=ties))
    cox = ci.influence(ci.fit_cox(X, t, status, ties=ties), method="vif").model
    np.testing.assert_allclose(fg.coef, cox.coef, rtol=0, atol=1e-10)
    for method in ("vif", "newton"):
        np.testing.assert_allclose(fg.change(method), cox.change(method), rtol=0, atol=1e-10)
    codes = np.array([0, 11, 50])
    np.testing.assert_allclose(fg.refit(codes).theta, cox.refit(codes).theta, rtol=0,
                               atol=1e-9)

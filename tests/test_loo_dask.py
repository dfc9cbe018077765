"""exact_loo and simulate_gap distributed on a dask.distributed LocalCluster (2 worker
processes): the same results as the serial run, bit for bit, with the data scattered once
to the workers instead of shipped with every task."""
import numpy as np
import pandas as pd
import pytest
from conftest import tied_data

import coxinfluence as ci
from coxinfluence.asymptotics import CoxDesign, simulate_gap
from coxinfluence.asymptotics.designs import QuadraturePopulation
from coxinfluence.data.cox_data import CoxData
from coxinfluence.likelihood.risk_sets import RiskSets

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def tied_fit():
    X, t, e, w, s = tied_data(21, n=90)
    return ci.fit_cox(X, t, e, weights=w, strata=s), (X, t, e, w, s)


def test_exact_loo_on_a_local_cluster_equals_the_serial_run(client, tied_fit):
    fit, (X, t, e, w, s) = tied_fit
    serial = np.asarray(ci.exact_loo(fit, progress=False, batch_size=16))
    executor = client.get_executor()
    with distributed.get_task_stream(client) as stream:
        got = np.asarray(ci.exact_loo(fit, executor=executor, progress=False, batch_size=16,
                                      n_chunks=4))
    workers = set(client.scheduler_info()["workers"])
    # the refits ran on the cluster's workers as 4 chunk tasks, not one task per row
    chunk_tasks = [r for r in stream.data if "_loo_chunk" in str(r["key"])]
    assert len(chunk_tasks) == 4
    assert len(workers) == 2 and {r["worker"] for r in chunk_tasks} <= workers
    assert np.array_equal(got, serial)
    # and they are refits: each row's removal moves the fit (not a copy of fit.coef)
    assert np.all(np.abs(got - fit.coef).max(axis=1) > 0)
    grad = ci.cox_gradient(got[0], np.delete(X, 0, 0), np.delete(t, 0), np.delete(e, 0),
                           weights=np.delete(w, 0), strata=np.delete(s, 0))
    assert np.abs(grad).max() <= 1e-8


def test_a_client_is_an_executor_too_and_gives_the_serial_results_bit_for_bit(client, tied_fit):
    fit, _ = tied_fit
    for groups in (None, np.arange(fit.n) // 3):
        serial = np.asarray(ci.exact_loo(fit, groups=groups, progress=False, batch_size=8))
        on_client = np.asarray(ci.exact_loo(fit, groups=groups, executor=client,
                                            progress=False, batch_size=8))
        assert np.array_equal(on_client, serial)
    kw = dict(sample_sizes=(40, 80), n_reps=2, seed=3, n_boot=50)
    pd.testing.assert_frame_equal(simulate_gap(executor=client, **kw).table,
                                  simulate_gap(**kw).table, check_exact=True)


@pytest.fixture
def submitted(client, monkeypatch):
    """The positional arguments of every task submitted to ``client`` (through it or its
    executor), and the values scattered to it."""
    calls = {"submit": [], "scatter": []}
    submit, scatter = client.submit, client.scatter

    def spy_submit(fn, *args, **kwargs):
        calls["submit"].append((fn.__name__, args))
        return submit(fn, *args, **kwargs)

    def spy_scatter(data, *args, **kwargs):
        calls["scatter"].append((data, kwargs))
        return scatter(data, *args, **kwargs)
    monkeypatch.setattr(client, "submit", spy_submit)
    monkeypatch.setattr(client, "scatter", spy_scatter)
    return calls


@pytest.mark.parametrize("as_executor", [False, True])
def test_the_data_cross_the_network_once_not_with_every_task(client, tied_fit, submitted,
                                                             as_executor):
    fit, _ = tied_fit
    executor = client.get_executor() if as_executor else client
    ci.exact_loo(fit, executor=executor, progress=False, batch_size=8, n_chunks=5)
    tasks = [args for name, args in submitted["submit"] if name == "_loo_chunk"]
    assert len(tasks) == 5
    for args in tasks:
        # a task carries no data, but references to the data and the unit of each row
        # (the same two futures in all tasks) and its own chunk of unit codes
        assert not any(isinstance(a, (CoxData, RiskSets)) for a in args)
        assert all(isinstance(a, distributed.Future) for a in args[:2])
        assert [a.key for a in args[:2]] == [a.key for a in tasks[0][:2]]
        assert 0 < args[4].size < fit.n
    # which were scattered once, to every worker
    (values, kwargs), = submitted["scatter"]
    # the fit's risk-set kernels, which carry the data (and rebuild their caches there)
    assert isinstance(values[0], RiskSets) and isinstance(values[0].data, CoxData)
    assert kwargs["broadcast"] is True


def test_simulate_gap_scatters_the_population_once(client, submitted):
    design = CoxDesign()
    simulate_gap((40, 80), 2, design=design, seed=1, n_boot=50, executor=client)
    tasks = [args for name, args in submitted["submit"] if name == "_one_replicate"]
    assert len(tasks) == 4
    for args in tasks:
        assert not any(isinstance(a, QuadraturePopulation) for a in args)
        assert isinstance(args[0], distributed.Future) and isinstance(args[5],
                                                                     distributed.Future)
    (values, kwargs), = submitted["scatter"]
    assert isinstance(values[1], QuadraturePopulation) and kwargs["broadcast"] is True

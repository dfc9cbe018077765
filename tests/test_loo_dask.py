"""exact_loo distributed on a dask.distributed LocalCluster (2 workers, chunks of rows)
gives the same refits as the serial run."""
import numpy as np
import pytest
from conftest import tied_data

import coxinfluence as ci

distributed = pytest.importorskip("distributed")


def test_exact_loo_on_a_local_cluster_equals_the_serial_run():
    X, t, e, w, s = tied_data(21, n=90)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s)
    serial = np.asarray(ci.exact_loo(fit, progress=False, batch_size=16))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
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

"""Spreading batches of independent work over a ``concurrent.futures.Executor`` or a
``dask.distributed`` cluster: whole-batch chunks (the same bits however the work is
spread) and data scattered once to every worker. No formula of the paper."""
from __future__ import annotations

import numpy as np


def whole_batch_chunks(n, n_chunks, batch_size):
    """Split rows 0..n-1 into about ``n_chunks`` chunks made of whole batches, so every
    refit sees the same batch (hence bit-identical arithmetic) however the work is spread."""
    batches = [np.arange(s, min(s + batch_size, n)) for s in range(0, n, batch_size)]
    groups = np.array_split(np.arange(len(batches)), min(n_chunks, len(batches)))
    return [np.concatenate([batches[b] for b in g]) for g in groups if g.size]


def on_workers(executor, *shared):
    """``(executor, shared)`` ready for ``executor.submit``. On a ``dask.distributed``
    cluster (``executor`` a ``Client`` or its ``get_executor()``; recognised by the type's
    module, without importing dask) each of the ``shared`` values is scattered once to
    every worker and replaced by its future, so a task carries a reference instead of a
    copy, and a ``Client`` is replaced by its executor. Any other executor: unchanged."""
    if not type(executor).__module__.startswith("distributed."):
        return executor, shared
    client = getattr(executor, "_client", executor)
    if executor is client:
        executor = client.get_executor()
    return executor, tuple(client.scatter(list(shared), broadcast=True, hash=False))


def n_workers(executor):
    """Worker count of a pool (``_max_workers``) or of a dask cluster (its threads); None
    when unknown."""
    workers = getattr(executor, "_max_workers", None)
    client = getattr(executor, "_client", None)
    if workers is None and client is not None and hasattr(client, "nthreads"):
        workers = sum(client.nthreads().values())
    return workers

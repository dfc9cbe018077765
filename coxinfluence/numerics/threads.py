"""Blocks of rows on a few threads, for the memory-bound passes over millions of rows.

A gather of 10^7 rows (``np.take``), the VIF's series gathers and the fit's pass over X
wait on memory, not arithmetic, and numpy releases the GIL inside them: on two threads
such a pass runs in about 0.6 of its one-thread time (measured: a gather of 10^7 x 10
rows in random order, 0.90 s on one thread, 0.55 s on two). Each block's work is the
same whatever the number of threads (the blocks are fixed, and a reduction adds the
blocks' parts in block order), so results are the same bits on any number of threads.

Below :data:`MIN_ROWS` rows everything runs on the calling thread: the passes are short,
and leave-one-out refits on dask workers or in many processes are not oversubscribed.
``COXINFLUENCE_NUM_THREADS`` (an integer >= 1) sets the number of threads (1: none);
default: the cores this process may use, at most :data:`MAX_THREADS`.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

MIN_ROWS = 1 << 20
MAX_THREADS = 4
ENV = "COXINFLUENCE_NUM_THREADS"


def n_threads(n_rows):
    """Threads for a pass over ``n_rows`` rows (module docstring)."""
    if n_rows < MIN_ROWS:
        return 1
    cap = os.environ.get(ENV, "").strip()
    if cap:
        try:
            cap = int(cap)
        except ValueError:
            raise ValueError(f"{ENV} must be an integer >= 1; got {cap!r}") from None
        if cap < 1:
            raise ValueError(f"{ENV} must be an integer >= 1; got {cap}")
        return cap
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:                                 # pragma: no cover (not Linux)
        cores = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


def for_row_blocks(work, n, block, threads=None):
    """``work(w, a, b)`` for every block ``[a, b)`` of ``block`` rows of ``[0, n)``, on
    ``threads`` threads (default :func:`n_threads`): thread ``w`` takes blocks ``w``,
    ``w + T``, ``w + 2T``, ... (``w`` indexes per-thread scratch buffers). The blocks
    must write disjoint outputs. Returns the number of threads used."""
    T = n_threads(n) if threads is None else threads
    starts = range(0, n, block)
    if T <= 1 or len(starts) <= 1:
        for a in starts:
            work(0, a, min(a + block, n))
        return 1

    def run(w):
        for a in starts[w::T]:
            work(w, a, min(a + block, n))

    with ThreadPoolExecutor(T) as pool:
        list(pool.map(run, range(T)))       # list(): re-raises a worker's exception
    return T


class _Buffers:
    """Reused work arrays. A fresh large array costs its page faults on first touch, on a
    virtual machine 2-10 us per 4 KiB page (measured: a fresh 1 MB array 20x the time of
    writing it again), as much as the arithmetic on it; so each thread keeps one set of
    work arrays (:func:`thread_buffers`), at most the size of the largest batch it ran
    (about 7 (n, B) arrays)."""

    def __init__(self):
        self._flat = {}

    def get(self, name, shape):
        size = shape[0] * shape[1]
        flat = self._flat.get(name)
        if flat is None or flat.size < size:
            flat = self._flat[name] = np.empty(size)
        return flat[:size].reshape(shape)


_THREAD = threading.local()


def thread_buffers():
    buf = getattr(_THREAD, "buffers", None)
    if buf is None:
        buf = _THREAD.buffers = _Buffers()
    return buf

"""Benchmark of exact leave-one-out refits and ``simulate_gap`` on a dask.distributed
LocalCluster (issue 13, item 4): 1 worker against 2 workers (processes, one thread each),
beside the serial run (no executor), with every result compared to the serial one (they
must be identical: max |difference| 0).

    python paper_appendix/bench_dask.py [--quick] [--repeats 2]

The data: simulated Cox data, n = 50,000 rows (``--quick``: 5,000), d = 6 covariates (one
binary), integer (tied) times, Efron ties, seed 2026. The data are scattered once to every
worker (``coxinfluence.numerics.executors.on_workers``); a task carries its chunk's unit
codes and warm starts. The closed-form warm start (the engine's ``halley_start``,
:mod:`coxinfluence.influence_functions.engine_refits`) runs on the client before any task is
submitted, so it is serial in every run; its time is shown apart. simulate_gap: a
``CoxDesign()`` with exact leave-one-out gaps (``include_loo=True``), one task per replicate.

Both clusters are started once and the runs interleaved (serial, 1 worker, 2 workers, then
again), so that a change in the machine's load falls on all three alike. Writes
paper_appendix/out/bench_dask.md (labelled ``--quick`` in that mode): wall times (medians
of ``--repeats`` rounds; cluster start-up and worker imports not counted), speedups against
1 worker, the CPU seconds the run got (serial: this process; cluster: the worker processes)
and CPU / wall (at most 1 per worker: lower means the workers waited for a CPU), the load
average (1, 5, 15 min) at start and end, and the pickled sizes of what is sent.
"""
from __future__ import annotations

import argparse
import logging
import os
import pickle
import platform
import time
from contextlib import ExitStack

import numpy as np
import pandas as pd
from _common import markdown_table, write_result

import coxinfluence as ci
from coxinfluence.asymptotics import simulate_gap
from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.engine_cox import CoxEngine
from coxinfluence.influence_functions.engine_refits import halley_start

WORKERS = (1, 2)
HEADER = ["run", "wall s (median)", "all rounds s", "speedup vs 1 worker", "CPU s (median)",
          "CPU / wall", "max abs. difference vs serial (all rounds)"]


def simulated(n, d=6, seed=2026):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, -1] = rng.integers(0, 2, size=n)
    time_ = np.ceil(20 * rng.exponential(size=n) * np.exp(-0.3 * X[:, 0] + 0.2 * X[:, 1]))
    event = (rng.uniform(size=n) < 0.7).astype(float)
    return X, time_, event


def max_abs_diff(a, b):
    """max |a - b| over the numeric entries; inf when anything else (NaN pattern, other
    columns) differs."""
    if isinstance(a, pd.DataFrame):
        num = a.select_dtypes("number").columns
        if not a.drop(columns=num).equals(b.drop(columns=num)):
            return float("inf")
        a, b = a[num], b[num]
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return float("inf")
    ok = ~np.isnan(a)
    return float(np.abs(a[ok] - b[ok]).max()) if ok.any() else 0.0


def start_clusters(stack):
    """{workers: (client, start-up s)}: a LocalCluster of worker processes (one thread
    each) per worker count, coxinfluence imported on every worker."""
    from dask.distributed import Client, LocalCluster
    clients = {}
    for w in WORKERS:
        t0 = time.perf_counter()
        # silence_logs: the workers' harmless heartbeat errors while the cluster closes
        cluster = stack.enter_context(LocalCluster(
            n_workers=w, threads_per_worker=1, processes=True, dashboard_address=None,
            silence_logs=logging.CRITICAL))
        client = stack.enter_context(Client(cluster))
        client.run(__import__, "coxinfluence")
        clients[w] = (client, time.perf_counter() - t0)
    return clients


def cpu_seconds(client):
    """CPU seconds used so far: this process (client None), else the cluster's workers."""
    if client is None:
        return time.process_time()
    return sum(client.run(time.process_time).values())


def interleaved(run, clients, repeats):
    """Rounds of ``run(executor)`` serially (None) then on each cluster: {label: (first
    result, [wall s], [CPU s], max abs. difference from the serial result, all rounds)}."""
    out = {}
    for _ in range(repeats):
        for label, client in [("serial", None)] + [(w, c) for w, (c, _) in clients.items()]:
            cpu0, t0 = cpu_seconds(client), time.perf_counter()
            res = run(client)
            wall = time.perf_counter() - t0
            cpu = cpu_seconds(client) - cpu0
            ref = out["serial"][0] if "serial" in out else res
            first, walls, cpus, diff = out.get(label, (res, [], [], 0.0))
            out[label] = (first, walls + [wall], cpus + [cpu], max(diff, max_abs_diff(res, ref)))
    return out


def table(out):
    base = np.median(out[1][1])
    rows = []
    for label, (_, walls, cpus, diff) in out.items():
        name = "serial (no executor)" if label == "serial" else \
            f"{label} worker{'s' if label > 1 else ''}"
        wall, cpu = np.median(walls), np.median(cpus)
        rows.append([name, f"{wall:.2f}", ", ".join(f"{t:.2f}" for t in walls),
                     "" if label == "serial" else f"{base / wall:.2f}", f"{cpu:.1f}",
                     f"{cpu / wall:.2f}", f"{diff:.3g}"])
    return markdown_table(HEADER, rows)


def loads(v):
    return ", ".join(f"{x:.2f}" for x in v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="n = 5,000 and a smaller simulation")
    ap.add_argument("--repeats", type=int, default=2, help="interleaved rounds")
    args = ap.parse_args(argv)
    n = 5_000 if args.quick else 50_000
    sizes, reps = ((200, 400), 4) if args.quick else ((1000, 2000, 4000), 4)
    t_start = time.perf_counter()
    load0 = os.getloadavg()

    X, t, e = simulated(n)
    fit = ci.fit_cox(X, t, e)
    d = fit.data.d
    units = resolve_units(fit)
    t0 = time.perf_counter()
    model = CoxEngine(fit, units)
    halley_start(model, np.arange(n))
    warm_s = time.perf_counter() - t0
    kw = dict(sample_sizes=sizes, n_reps=reps, seed=7, include_loo=True, n_boot=200)
    with ExitStack() as stack:
        clients = start_clusters(stack)
        loo = interleaved(lambda ex: np.asarray(ci.exact_loo(fit, executor=ex, progress=False)),
                          clients, args.repeats)
        load_mid = os.getloadavg()
        gap = interleaved(lambda ex: simulate_gap(executor=ex, **kw).table, clients,
                          args.repeats)
    load1 = os.getloadavg()

    data_mb = len(pickle.dumps((fit.data, units.of_row))) / 1e6
    batch = model.refit_batch_size
    per_unit = 8 * (1 + d + d * d)                          # code, start, inverse Jacobian
    task_mb = {w: per_unit * n / (4 * w) / 1e6 for w in WORKERS}
    startup = ", ".join(f"{w} worker(s) {s:.1f} s" for w, (_, s) in clients.items())
    parts = [
        f"# exact_loo and simulate_gap on a dask LocalCluster{' (--quick)' if args.quick else ''}"
        f"\n\nMachine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs "
        f"(shared with other jobs), coxinfluence {ci.__version__}, Python "
        f"{platform.python_version()}; LocalCluster(processes=True, threads_per_worker=1), "
        f"started once (start-up, not in the times: {startup}); {args.repeats} interleaved "
        f"round(s) of serial, 1 worker, 2 workers.\n",
        f"Load average (1, 5, 15 min): {loads(load0)} at start, {loads(load_mid)} after "
        f"exact_loo, {loads(load1)} at end. CPU s: this process for the serial run, the worker "
        f"processes for a cluster (the client's warm start not included); CPU / wall below 1 "
        f"per worker means the workers waited for a CPU.\n",
        f"## exact_loo: n = {n}, d = {d}, {int(fit.data.event.sum())} events, "
        f"{np.unique(t).size} distinct times (Efron ties)\n",
        f"Every row refitted to max |gradient| <= 1e-10; batches of {batch} refits, 4 chunks "
        f"per worker. The closed-form warm start, computed on the client in every run (serial "
        f"part, in the wall times), took {warm_s:.2f} s once timed alone.\n",
        table(loo),
        f"\nSent (pickled sizes, computed): the data (sorted CoxData and unit of each row) "
        f"{data_mb:.2f} MB once per worker; per task, its unit codes and warm starts, "
        f"{task_mb[1]:.2f} MB (1 worker: 4 tasks) or {task_mb[2]:.2f} MB (2 workers: 8 tasks); "
        f"back: the refitted coefficients and two flags per unit, "
        f"{(8 * d + 2) * n / 1e6:.2f} MB in all.\n",
        f"## simulate_gap: sizes {sizes}, {reps} replicates each, include_loo=True "
        f"({len(sizes) * reps} tasks, one per replicate)\n",
        "The design and its quadrature population are scattered once per worker; a task "
        "carries (n, rep, seed).\n",
        table(gap),
        f"\nTotal wall time: {time.perf_counter() - t_start:.1f} s\n",
    ]
    write_result("bench_dask.md", "\n".join(parts))


if __name__ == "__main__":
    main()

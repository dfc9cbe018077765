"""Scaling benchmark (issues 6 and 13): time against n for our fit_cox, Reid's IF, the VIF,
exact leave-one-out, R's ``coxph`` fit and ``resid(fit, "dfbeta")``, and lifelines'
``compute_residuals(df, "delta_beta")``; every ratio ours / theirs from the same run.

Synthetic data, d = 10: x ~ N(0, I), beta ~ U(-0.5, 0.5), exponential event times with
rate exp(x beta), exponential censoring; times rounded to n/10 grid levels (ties:
tie groups of up to ~100 events at n = 10^6). Influence functions are timed on one fitted
model (our fit for ours, R's and lifelines' own fits for theirs), median of ``--reps``
runs; our fit is timed too (median), R's once inside R. Also: the VIF's max
column-relative error against the O(n K d) direct reference at n = 20,000; issue 13's
scale target, ``fit_cox`` + ``vif`` at ``--target-n`` rows (default 10^7) in a fresh
process, wall time and peak resident memory (``ru_maxrss``, the data included; targets
30 s and 5 GiB), then again on one thread (``COXINFLUENCE_NUM_THREADS=1``); and
SUPPORT (paper split, training rows): ``ci.vif``, R's dfbeta and ``ci.exact_loo``
(serial, and on a 2-worker dask LocalCluster with ``--dask``). The load
average is recorded beside the timings.

Writes ``paper_appendix/out/bench_scale.md`` (medians, ratios, log-log slopes, the target
run) and ``paper_appendix/out/bench_scale.png``; prints the table. Absolute times on a
shared 2-core machine are noisy: quote ratios.

    python paper_appendix/bench_scale.py                       # full run (several minutes)
    python paper_appendix/bench_scale.py --sizes 1000,10000 --target-n 0 --no-support  # quick
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE.parent))

from _common import median_time  # noqa: E402

import coxinfluence as ci  # noqa: E402


def synthetic(n, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    beta = rng.uniform(-0.5, 0.5, d)
    t = rng.exponential(1.0 / np.exp(X @ beta))
    c = rng.exponential(1.5, n)
    y = np.minimum(t, c)
    levels = max(n // 10, 10)
    time_ = np.ceil(y / np.quantile(y, 0.999) * levels) / levels
    return X, time_, (t <= c).astype(float)


R_SCRIPT = r"""
suppressMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1]); reps <- as.integer(args[2])
tf <- system.time(f <- coxph(Surv(time, event) ~ ., data = d, ties = "efron"))[["elapsed"]]
tm <- replicate(reps, system.time(resid(f, type = "dfbeta"))[["elapsed"]])
cat(sprintf("%.6f %.6f\n", median(tm), tf))
"""


def time_r_dfbeta(X, t, e, reps, tmpdir):
    """R's ``resid(fit, "dfbeta")`` (median of ``reps``) and ``coxph`` fit (once), seconds,
    timed inside R."""
    if shutil.which("Rscript") is None:
        return float("nan"), float("nan")
    path = Path(tmpdir) / "data.csv"
    cols = [f"x{j}" for j in range(X.shape[1])]
    header = ",".join(cols + ["time", "event"])
    np.savetxt(path, np.column_stack([X, t, e]), delimiter=",", header=header, comments="",
               fmt="%.17g")
    script = Path(tmpdir) / "dfbeta.R"
    script.write_text(R_SCRIPT)
    res = subprocess.run(["Rscript", str(script), str(path), str(reps)], capture_output=True,
                         text=True, check=True)
    dfb, fit = res.stdout.strip().splitlines()[-1].split()
    return float(dfb), float(fit)


def time_lifelines(X, t, e, reps):
    import pandas as pd
    from lifelines import CoxPHFitter
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    df["time"], df["event"] = t, e
    cph = CoxPHFitter().fit(df, "time", "event")
    return median_time(lambda: cph.compute_residuals(df, "delta_beta"), reps)


RSS_CHILD = r"""
import resource, sys, time, json, os
import numpy as np
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
from bench_scale import synthetic
import coxinfluence as ci
from coxinfluence.numerics.threads import n_threads
X, t, e = synthetic({n})
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
data_mb = status("VmRSS:")
load0 = os.getloadavg()[0]
c0 = time.process_time()
t0 = time.perf_counter(); fit = ci.fit_cox(X, t, e); t_fit = time.perf_counter() - t0
fit_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter(); v = ci.vif(fit); t_vif = time.perf_counter() - t0
cpu = time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(dict(n={n}, fit_s=t_fit, vif_s=t_vif, total_s=t_fit + t_vif, cpu_s=cpu,
                      rss_after_data_mb=data_mb, peak_after_fit_mb=fit_peak, peak_mb=peak,
                      load_before=load0, load_after=os.getloadavg()[0],
                      iterations=fit.n_iter, threads=n_threads({n}))))
"""


def fit_and_vif_in_fresh_process(n, threads=None):
    """``fit_cox`` + ``vif`` on ``synthetic(n)`` in a fresh process: wall seconds and the
    process's peak resident memory (``ru_maxrss``, data generation included); ``threads``
    sets ``COXINFLUENCE_NUM_THREADS`` (default: the package's own choice)."""
    code = RSS_CHILD.format(root=str(HERE.parent), here=str(HERE), n=n)
    env = dict(os.environ)
    if threads is not None:
        env["COXINFLUENCE_NUM_THREADS"] = str(threads)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    return json.loads(res.stdout.strip().splitlines()[-1])


def vif_accuracy(n=20_000):
    X, t, e = synthetic(n, seed=1)
    fit = ci.fit_cox(X, t, e)
    ref = np.asarray(ci.vif(fit, method="direct"))
    got = np.asarray(ci.vif(fit, method="series"))
    return float((np.abs(got - ref).max(axis=0) / np.abs(ref).max(axis=0)).max())


def support(reps, use_dask, tmpdir):
    from coxinfluence.datasets import paper_split
    split = paper_split("support")
    X, t, e = split.arrays("train")
    fit = ci.fit_cox(X, t, e)
    out = {"n": len(t), "vif": median_time(lambda: ci.vif(fit), reps),
           "reid": median_time(lambda: ci.reid_influence(fit), reps),
           "R dfbeta": time_r_dfbeta(X, t, e, reps, tmpdir)[0],
           "load": os.getloadavg()[0]}      # 1-minute load average
    t0 = time.perf_counter()
    loo = np.asarray(ci.exact_loo(fit, progress=False))
    out["exact_loo"] = time.perf_counter() - t0
    out["exact_loo / R dfbeta"] = out["exact_loo"] / out["R dfbeta"]
    out["vif / R dfbeta"] = out["vif"] / out["R dfbeta"]
    out["reps note"] = "exact_loo timed once (cold: first call)"
    if use_dask:
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cl, \
                Client(cl) as client:
            t0 = time.perf_counter()
            loo_d = np.asarray(ci.exact_loo(fit, executor=client.get_executor(),
                                            progress=False))
            out["exact_loo dask(2)"] = time.perf_counter() - t0
            out["dask == serial"] = bool(np.array_equal(loo, loo_d, equal_nan=True))
            out["dask(2) / serial"] = out["exact_loo dask(2)"] / out["exact_loo"]
            out["dask - serial max abs"] = float(np.nanmax(np.abs(loo - loo_d)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,3000,10000,30000,100000,300000,1000000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--loo-max", type=int, default=3_000, help="largest n for exact_loo")
    ap.add_argument("--lifelines-max", type=int, default=30_000)
    ap.add_argument("--r-max", type=int, default=100_000)
    ap.add_argument("--target-n", type=int, default=10_000_000,
                    help="fit_cox + vif in a fresh process at this n (time, peak RSS); 0: skip")
    ap.add_argument("--no-support", action="store_true")
    ap.add_argument("--dask", action="store_true", help="SUPPORT exact_loo on 2 dask workers")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    OUT.mkdir(parents=True, exist_ok=True)
    methods = ["fit_cox", "reid_influence", "vif", "exact_loo", "R coxph", "R dfbeta",
               "lifelines delta_beta"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmpdir:
        for n in sizes:
            X, t, e = synthetic(n)
            fit = ci.fit_cox(X, t, e)
            reps = args.reps if n <= 300_000 else max(1, min(args.reps, 3))
            r = {"n": n, "events": int(e.sum()), "max tie": int(fit.data.group_n_events.max()),
                 "load": os.getloadavg()[0]}      # 1-minute load average
            r["fit_cox"] = median_time(lambda: ci.fit_cox(X, t, e), reps)
            r["reid_influence"] = median_time(lambda: ci.reid_influence(fit), reps)
            r["vif"] = median_time(lambda: ci.vif(fit), reps)
            r["exact_loo"] = (median_time(lambda: ci.exact_loo(fit, progress=False), 1,
                                          warm=False)
                              if n <= args.loo_max else float("nan"))
            r["R dfbeta"], r["R coxph"] = (
                time_r_dfbeta(X, t, e, reps if n < 100_000 else 1, tmpdir)
                if n <= args.r_max else (float("nan"), float("nan")))
            r["lifelines delta_beta"] = (time_lifelines(X, t, e, reps)
                                         if n <= args.lifelines_max else float("nan"))
            rows.append(r)
            print(json.dumps(r), flush=True)
        acc = vif_accuracy()
        target = (fit_and_vif_in_fresh_process(args.target_n) if args.target_n > 0
                  else None)
        one_thread = (fit_and_vif_in_fresh_process(args.target_n, threads=1)
                      if args.target_n > 0 else None)
        sup = None if args.no_support else support(args.reps, args.dask, tmpdir)

    ns = np.array([r["n"] for r in rows], dtype=float)
    slopes = {}
    for m in methods:
        y = np.array([r[m] for r in rows])
        ok = np.isfinite(y) & (ns >= 10_000) if np.sum(np.isfinite(y) & (ns >= 10_000)) >= 2 \
            else np.isfinite(y)
        slopes[m] = (float(np.polyfit(np.log10(ns[ok]), np.log10(y[ok]), 1)[0])
                     if ok.sum() >= 2 else float("nan"))

    def fmt(x):
        return "-" if not np.isfinite(x) else (f"{x:.3g}" if x >= 0.01 else f"{x:.2e}")

    ratios = [("fit_cox", "R coxph"), ("reid_influence", "R dfbeta"), ("vif", "R dfbeta"),
              ("exact_loo", "R dfbeta"), ("reid_influence", "lifelines delta_beta"),
              ("vif", "lifelines delta_beta"), ("exact_loo", "lifelines delta_beta")]
    lines = ["# Scaling: time (s, median) against n, d = 10, synthetic data with ties", "",
             "| n | events | max tie | load | " + " | ".join(methods) + " |",
             "|" + "---|" * (len(methods) + 4)]
    for r in rows:
        lines.append(f"| {r['n']:,} | {r['events']:,} | {r['max tie']} | {r['load']:.2f} | "
                     + " | ".join(fmt(r[m]) for m in methods) + " |")
    lines.append("| slope (log-log; n >= 10^4, or all n when fewer than 2 there) | | | | "
                 + " | ".join(f"{slopes[m]:.2f}" for m in methods) + " |")
    lines += ["", "Ratios, each pair timed in the same run (ours / theirs; below 1: ours "
              "faster):", "",
              "| n | " + " | ".join(f"{a} / {b}" for a, b in ratios) + " |",
              "|" + "---|" * (len(ratios) + 1)]
    for r in rows:
        lines.append(f"| {r['n']:,} | " + " | ".join(fmt(r[a] / r[b]) for a, b in ratios)
                     + " |")
    lines += ["", f"VIF (series) vs O(n K d) direct reference, n = 20,000: max over "
              f"coefficients of max_i |error| / max_i |VIF| = {acc:.2e}"]
    if target:
        ok_t = "met" if target["total_s"] <= 30 else "NOT met"
        ok_m = "met" if target["peak_mb"] <= 5 * 1024 else "NOT met"
        lines.append(f"fit_cox + vif, n = {target['n']:,} x 10 with ties, fresh process: fit "
                     f"{target['fit_s']:.1f} s ({target['iterations']} Newton iterations) + "
                     f"vif {target['vif_s']:.1f} s = {target['total_s']:.1f} s (target 30 s: "
                     f"{ok_t}; {target['threads']} threads for the passes over rows, "
                     f"coxinfluence.numerics.threads; process CPU time {target['cpu_s']:.1f} s "
                     f"over "
                     f"all threads); on one thread (COXINFLUENCE_NUM_THREADS=1, the next "
                     f"fresh process) {one_thread['total_s']:.1f} s (fit "
                     f"{one_thread['fit_s']:.1f} + vif {one_thread['vif_s']:.1f}); peak RSS "
                     f"(ru_maxrss, data included) "
                     f"{target['peak_mb'] / 1024:.2f} GiB (target 5 GiB: {ok_m}), after the fit "
                     f"{target['peak_after_fit_mb'] / 1024:.2f} GiB, data alone "
                     f"{target['rss_after_data_mb'] / 1024:.2f} GiB; load average "
                     f"{target['load_before']:.2f} before, {target['load_after']:.2f} after")
    if sup:
        def unit(k):                # the times; not the ratios, load, differences
            return " s" if k in ("vif", "reid", "R dfbeta", "exact_loo",
                                 "exact_loo dask(2)") else ""
        lines += ["", f"SUPPORT (paper split, {sup['n']} training rows): "
                  + ", ".join(f"{k} {fmt(v) if isinstance(v, float) else v}"
                              + (unit(k) if isinstance(v, float) else "")
                              for k, v in sup.items() if k != "n")]
    table = "\n".join(lines) + "\n"
    (OUT / "bench_scale.md").write_text(table)
    print(table)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for m in methods:
        y = np.array([r[m] for r in rows])
        ok = np.isfinite(y)
        if ok.any():
            ax.loglog(ns[ok], y[ok], "o-", label=f"{m} (slope {slopes[m]:.2f})")
    ax.set_xlabel("n (rows)")
    ax.set_ylabel("time (s, median)")
    ax.set_title("Influence of every row, d = 10, synthetic data with ties")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "bench_scale.png", dpi=130)
    print(f"wrote {OUT / 'bench_scale.md'} and {OUT / 'bench_scale.png'}")


if __name__ == "__main__":
    main()

"""Scaling benchmark (issue 6): time against n for Reid's IF, the VIF, exact leave-one-out,
R's ``resid(fit, "dfbeta")`` and lifelines' ``compute_residuals(df, "delta_beta")``.

Synthetic data, d = 10: x ~ N(0, I), beta ~ U(-0.5, 0.5), exponential event times with
rate exp(x beta), exponential censoring; times rounded to n/10 grid levels (ties:
tie groups of up to ~100 events at n = 10^6). Every method is timed on the same fitted
model (our fit for ours, R's and lifelines' own fits for theirs; fitting is not timed),
median of ``--reps`` runs. Also: the VIF's max column-relative error against the
O(n K d) direct reference at n = 20,000, peak resident memory of ``ci.vif`` at the largest
n (a fresh subprocess, ``resource.getrusage``), and SUPPORT (paper split, training rows):
``ci.vif``, R's dfbeta and ``ci.exact_loo`` (serial, and on a 2-worker dask LocalCluster
with ``--dask``).

Writes ``paper_appendix/out/bench_scale.md`` (table of medians, ratios, log-log slopes)
and ``paper_appendix/out/bench_scale.png``; prints the table. Absolute times on a shared
2-core machine are noisy: quote ratios.

    python paper_appendix/bench_scale.py                       # full run (several minutes)
    python paper_appendix/bench_scale.py --sizes 1000,10000 --no-rss --no-support   # quick
"""
from __future__ import annotations

import argparse
import json
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
f <- coxph(Surv(time, event) ~ ., data = d, ties = "efron")
tm <- replicate(reps, system.time(resid(f, type = "dfbeta"))[["elapsed"]])
cat(sprintf("%.6f\n", median(tm)))
"""


def time_r_dfbeta(X, t, e, reps, tmpdir):
    if shutil.which("Rscript") is None:
        return float("nan")
    path = Path(tmpdir) / "data.csv"
    cols = [f"x{j}" for j in range(X.shape[1])]
    header = ",".join(cols + ["time", "event"])
    np.savetxt(path, np.column_stack([X, t, e]), delimiter=",", header=header, comments="",
               fmt="%.17g")
    script = Path(tmpdir) / "dfbeta.R"
    script.write_text(R_SCRIPT)
    res = subprocess.run(["Rscript", str(script), str(path), str(reps)], capture_output=True,
                         text=True, check=True)
    return float(res.stdout.strip().splitlines()[-1])


def time_lifelines(X, t, e, reps):
    import pandas as pd
    from lifelines import CoxPHFitter
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    df["time"], df["event"] = t, e
    cph = CoxPHFitter().fit(df, "time", "event")
    return median_time(lambda: cph.compute_residuals(df, "delta_beta"), reps)


RSS_CHILD = r"""
import resource, sys, time, json
import numpy as np
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
from bench_scale import synthetic
import coxinfluence as ci
X, t, e = synthetic({n})
fit = ci.fit_cox(X, t, e)
del X, t, e
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
rss_now = status("VmRSS:")
try:   # reset the high-water mark (Linux >= 4.0) so that VmHWM is the peak during ci.vif
    open("/proc/self/clear_refs", "w").write("5")
    reset = True
except OSError:
    reset = False
t0 = time.perf_counter(); v = ci.vif(fit); dt = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(dict(before_mb=before, after_mb=after, vif_s=dt, rss_at_start_mb=rss_now,
                      vif_peak_mb=status("VmHWM:") if reset else float("nan"))))
"""


def peak_rss_of_vif(n):
    """Peak RSS (MB) of a fresh process before and after ``ci.vif`` (data + fit included)."""
    code = RSS_CHILD.format(root=str(HERE.parent), here=str(HERE), n=n)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
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
           "R dfbeta": time_r_dfbeta(X, t, e, reps, tmpdir)}
    t0 = time.perf_counter()
    loo = np.asarray(ci.exact_loo(fit, progress=False))
    out["exact_loo"] = time.perf_counter() - t0
    out["reps note"] = "exact_loo timed once"
    if use_dask:
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cl, \
                Client(cl) as client:
            t0 = time.perf_counter()
            loo_d = np.asarray(ci.exact_loo(fit, executor=client.get_executor(),
                                            progress=False))
            out["exact_loo dask(2)"] = time.perf_counter() - t0
            out["dask == serial"] = bool(np.array_equal(loo, loo_d, equal_nan=True))
            out["dask - serial max abs"] = float(np.nanmax(np.abs(loo - loo_d)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,3000,10000,30000,100000,300000,1000000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--loo-max", type=int, default=3_000, help="largest n for exact_loo")
    ap.add_argument("--lifelines-max", type=int, default=30_000)
    ap.add_argument("--r-max", type=int, default=100_000)
    ap.add_argument("--no-rss", action="store_true")
    ap.add_argument("--no-support", action="store_true")
    ap.add_argument("--dask", action="store_true", help="SUPPORT exact_loo on 2 dask workers")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    OUT.mkdir(parents=True, exist_ok=True)
    methods = ["reid_influence", "vif", "exact_loo", "R dfbeta", "lifelines delta_beta"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmpdir:
        for n in sizes:
            X, t, e = synthetic(n)
            fit = ci.fit_cox(X, t, e)
            reps = args.reps if n <= 300_000 else max(1, min(args.reps, 3))
            r = {"n": n, "events": int(e.sum()), "max tie": int(fit.data.group_n_events.max())}
            r["reid_influence"] = median_time(lambda: ci.reid_influence(fit), reps)
            r["vif"] = median_time(lambda: ci.vif(fit), reps)
            r["exact_loo"] = (median_time(lambda: ci.exact_loo(fit, progress=False), 1,
                                          warm=False)
                              if n <= args.loo_max else float("nan"))
            r["R dfbeta"] = (time_r_dfbeta(X, t, e, reps if n < 100_000 else 1, tmpdir)
                             if n <= args.r_max
                             else float("nan"))
            r["lifelines delta_beta"] = (time_lifelines(X, t, e, reps)
                                         if n <= args.lifelines_max else float("nan"))
            rows.append(r)
            print(json.dumps(r), flush=True)
        acc = vif_accuracy()
        rss = None if args.no_rss else peak_rss_of_vif(max(sizes))
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

    lines = ["# Scaling: time (s, median) against n, d = 10, synthetic data with ties", "",
             "| n | events | max tie | " + " | ".join(methods) + " | vif / reid | R / vif |",
             "|" + "---|" * (len(methods) + 5)]
    for r in rows:
        lines.append(f"| {r['n']:,} | {r['events']:,} | {r['max tie']} | "
                     + " | ".join(fmt(r[m]) for m in methods)
                     + f" | {fmt(r['vif'] / r['reid_influence'])} | "
                     f"{fmt(r['R dfbeta'] / r['vif'])} |")
    lines.append("| slope (log-log; n >= 10^4, or all n when fewer than 2 there) | | | "
                 + " | ".join(f"{slopes[m]:.2f}" for m in methods) + " | | |")
    lines += ["", f"VIF (series) vs O(n K d) direct reference, n = 20,000: max over "
              f"coefficients of max_i |error| / max_i |VIF| = {acc:.2e}"]
    if rss:
        lines.append(f"Peak RSS, fresh process at n = {max(sizes):,}: {rss['before_mb']:.0f} MB "
                     f"after data + fit (ru_maxrss), {rss['after_mb']:.0f} MB after ci.vif; "
                     f"resident when ci.vif starts {rss['rss_at_start_mb']:.0f} MB, peak "
                     f"during ci.vif (VmHWM after reset) {rss['vif_peak_mb']:.0f} MB "
                     f"(ci.vif took {rss['vif_s']:.2f} s there)")
    if sup:
        lines += ["", f"SUPPORT (paper split, {sup['n']} training rows): "
                  + ", ".join(f"{k} {fmt(v) if isinstance(v, float) else v}"
                              + (" s" if isinstance(v, float) else "")
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

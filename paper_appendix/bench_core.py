"""Benchmark of the Cox core (issue 2): our fit_cox, reid_influence, vif, exact_loo and
newton_loo beside R's coxph + resid(fit, "dfbeta") and lifelines' delta_beta, on the
METABRIC and SUPPORT training sets (paper split), all in one run. The closed-form one-step
Newton (issue 13 item 1: ``deleted_hessians`` + ``deleted_gradients`` + the batched
solve, :mod:`coxinfluence.influence_functions.deleted_hessians`) is timed beside the per-row
``newton_loo``
and checked against it.

    python paper_appendix/bench_core.py [--repeats 5] [--skip-newton]

Writes paper_appendix/out/bench_core.md: medians (seconds), every ratio to R's dfbeta and to
lifelines' delta_beta timed in the same run, the load average, and the issue 13 targets
(exact_loo: SUPPORT at most 10x R's dfbeta, METABRIC at most 0.15 s).
Also checks, as a by-product, that our IF_n / n equals R's dfbeta on the same data.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import pandas as pd
from _common import data_path, markdown_table, median_time, r_available, r_dfbeta_time, write_result

import coxinfluence as ci
from coxinfluence.data.units import resolve_units
from coxinfluence.datasets import paper_split
from coxinfluence.influence_functions.engine_cox import CoxEngine
from coxinfluence.metrics import relative_risk_correlation

CLOSED_NEWTON = "newton_loo closed form (CoxEngine.newton_change: deleted Hessians + solve)"

PAPER = {"metabric": {"VIF (paper, autodiff)": 2.43, "brute-force LOO (paper)": 24 * 60},
         "support": {"VIF (paper, autodiff)": 12.3, "brute-force LOO (paper)": 225 * 60}}


def lifelines_delta_beta_time(X, t, e, repeats):
    from lifelines import CoxPHFitter
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    df["T"], df["E"] = t, e
    cph = CoxPHFitter().fit(df, "T", "E")
    return median_time(lambda: cph.compute_residuals(df, "delta_beta"), repeats)


def accuracy(fit, X_test, newton):
    """Each approximation against exact leave-one-out: the paper's metric and the mean and
    max absolute error of n (theta_hat - theta_hat_{-i}), relative to the mean |exact|."""
    n = fit.n
    exact = np.asarray(ci.exact_loo(fit, progress=False))
    est = {"VIF": fit.coef - np.asarray(ci.vif(fit)) / n,
           "Reid": fit.coef - np.asarray(ci.reid_influence(fit)) / n}
    if newton:
        est["one-step Newton"] = np.asarray(ci.newton_loo(fit))
    scale = np.abs(n * (fit.coef - exact)).mean()
    rows = []
    for k, v in est.items():
        err = np.abs(n * (v - exact))
        rows.append([k, f"{relative_risk_correlation(fit.coef, v, exact, X_test):.6f}",
                     f"{err.mean() / scale:.2e}", f"{err.max() / scale:.2e}"])
    return rows


def bench(name, repeats, newton):
    split = paper_split(name, path=data_path())
    X, t, e = split.arrays("train")
    fit = ci.fit_cox(X, t, e)
    times = {
        "fit_cox": median_time(lambda: ci.fit_cox(X, t, e), repeats),
        "reid_influence": median_time(lambda: ci.reid_influence(fit), repeats),
        "vif": median_time(lambda: ci.vif(fit), repeats),
        "exact_loo": median_time(lambda: ci.exact_loo(fit, progress=False), max(1, repeats // 3)),
    }
    units = resolve_units(fit)
    times[CLOSED_NEWTON] = median_time(lambda: CoxEngine(fit, units).newton_change(), repeats)
    checks = []
    if newton:
        times["newton_loo"] = median_time(lambda: ci.newton_loo(fit), 1)
    times["lifelines delta_beta"] = lifelines_delta_beta_time(X, t, e, repeats)
    if r_available():
        r_fit, r_dfb, dfb = r_dfbeta_time(X, t, e, repeats=repeats)
        times["R coxph fit"] = r_fit
        times["R resid dfbeta"] = r_dfb
        err = np.abs(np.asarray(ci.reid_influence(fit)) / fit.n - dfb).max() / np.abs(dfb).max()
        checks.append(f"max |IF_n/n - R dfbeta| / max |R dfbeta| = {err:.2e}")
    return fit, times, "; ".join(checks), accuracy(fit, split.arrays("test")[0], newton)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-newton", action="store_true")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    parts = [f"# Cox core benchmark\n\nMachine: {platform.processor() or platform.machine()}, "
             f"{ci.__name__} {ci.__version__}; medians of {args.repeats} runs (exact_loo: "
             f"{max(1, args.repeats // 3)}); ratios = time / R's resid(fit, 'dfbeta') and / "
             f"lifelines' compute_residuals(df, 'delta_beta'), both timed in this run.\n"]
    if not r_available():
        parts.append("R (Rscript) not installed: R columns missing.\n")
    for name in ("metabric", "support"):
        load0 = os.getloadavg()[0]
        fit, times, check, acc = bench(name, args.repeats, not args.skip_newton)
        load1 = os.getloadavg()[0]
        ref = times.get("R resid dfbeta")
        lif = times.get("lifelines delta_beta")
        rows = []
        for k, v in times.items():
            rows.append([k, f"{v:.4f}", f"{v / ref:.2f}" if ref else "n/a",
                         f"{v / lif:.3f}" if lif else "n/a"])
        for k, v in PAPER[name].items():
            rows.append([k, f"{v:.1f}", f"{v / ref:.0f}" if ref else "n/a",
                         f"{v / lif:.0f}" if lif else "n/a"])
        parts.append(f"## {name} (n = {fit.n}, d = {fit.data.d}, events = "
                     f"{int(fit.data.event.sum())})\n")
        parts.append(f"Load average (1 min) {load0:.2f} before, {load1:.2f} after this "
                     f"dataset ({os.cpu_count()} CPUs); every time below comes from this run.\n")
        parts.append(markdown_table(["method", "median s", "ratio to R dfbeta",
                                     "ratio to lifelines delta_beta"], rows))
        if name == "support" and ref:
            parts.append(f"\nIssue 13 target: exact_loo / R dfbeta = "
                         f"{times['exact_loo'] / ref:.1f} (at most 10)\n")
        if name == "metabric":
            parts.append(f"\nIssue 13 target: exact_loo = {times['exact_loo']:.3f} s (at most "
                         "0.15 s)\n")
        if check:
            parts.append(f"\nAgreement with R on this data: {check}\n")
        parts.append("\nAccuracy against exact leave-one-out refits (paper's metric: mean over "
                     "test patients of the correlation of predicted and refitted relative risk; "
                     "errors of n(theta_hat - theta_hat_-i) relative to its mean size):\n")
        parts.append(markdown_table(["method", "paper's metric", "mean rel. error",
                                     "max rel. error"], acc))
    parts.append(f"\nTotal wall time: {time.perf_counter() - t_start:.1f} s\n")
    write_result("bench_core.md", "\n".join(parts))


if __name__ == "__main__":
    main()

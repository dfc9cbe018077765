"""Paper Table 2 (runtime of VIF and brute-force leave-one-out), Cox rows, on METABRIC and
SUPPORT (paper split), measured in one process run beside the paper's numbers and peers.

    python paper_appendix/table2_runtime.py [--quick] [--repeats 5]

Ours: ``ci.vif`` (closed form, all rows x all coefficients) and ``ci.exact_loo`` (every row
deleted and refitted to max |grad| <= 1e-10), plus ``ci.reid_influence`` and the fit.
Peers (timing helpers of bench_core.py / _common.py): R survival ``coxph`` +
``resid(fit, "dfbeta")`` (timed inside R) and lifelines' ``compute_residuals("delta_beta")``.
Paper (their Table 2, Xeon Gold 6338, autodiff VIF, Adam brute force): METABRIC 2.43 s /
24 min, SUPPORT 12.3 s / 225 min. Medians; quote ratios, absolute times on a shared
machine are noisy. ``--quick``: 2 repeats (exact_loo: 1).

Writes paper_appendix/out/table2_runtime.md.
"""
from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from _common import data_path, markdown_table, median_time, r_available, r_dfbeta_time, write_result
from bench_core import PAPER, lifelines_delta_beta_time

import coxinfluence as ci
from coxinfluence.datasets import paper_split


def fmt_s(s):
    return f"{s / 60:.0f} min" if s >= 600 else (f"{s:.3g} s" if s >= 0.01 else f"{s * 1e3:.2g} ms")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args(argv)
    reps = args.repeats or (2 if args.quick else 5)
    loo_reps = 1 if args.quick else max(1, reps // 2)
    t_start = time.perf_counter()
    rows, detail = [], []
    for name in ("metabric", "support"):
        split = paper_split(name, path=data_path())
        X, t, e = split.arrays("train")
        fit = ci.fit_cox(X, t, e)
        tm = {"fit_cox": median_time(lambda: ci.fit_cox(X, t, e), reps),
              "vif": median_time(lambda: ci.vif(fit), reps),
              "reid_influence": median_time(lambda: ci.reid_influence(fit), reps),
              "exact_loo": median_time(lambda: ci.exact_loo(fit, progress=False), loo_reps),
              "lifelines delta_beta": lifelines_delta_beta_time(X, t, e, reps)}
        check = ""
        if r_available():
            tm["R coxph fit"], tm["R resid dfbeta"], dfb = r_dfbeta_time(X, t, e, repeats=reps)
            err = np.abs(np.asarray(ci.reid_influence(fit)) / fit.n - dfb).max() / np.abs(dfb).max()
            check = f"{err:.1e}"
        p_vif = PAPER[name]["VIF (paper, autodiff)"]
        p_bf = PAPER[name]["brute-force LOO (paper)"]
        r_dfb = tm.get("R resid dfbeta")
        rows.append([name, fit.n, fmt_s(p_bf), fmt_s(p_vif), f"{p_bf / p_vif:.0f}x",
                     fmt_s(tm["exact_loo"]), fmt_s(tm["vif"]),
                     f"{tm['exact_loo'] / tm['vif']:.0f}x",
                     f"{p_vif / tm['vif']:.0f}x", f"{p_bf / tm['exact_loo']:.0f}x",
                     fmt_s(r_dfb) if r_dfb else "R not installed",
                     fmt_s(tm["lifelines delta_beta"])])
        ref = r_dfb or tm["vif"]
        detail.append(f"\n### {name} (n = {fit.n}, d = {fit.data.d}, events = "
                      f"{int(fit.data.event.sum())})\n")
        detail.append(markdown_table(
            ["method", "median s", "ratio to " + ("R dfbeta" if r_dfb else "our vif")],
            [[k, f"{v:.4f}", f"{v / ref:.2f}"] for k, v in tm.items()]))
        if check:
            detail.append(f"\nOur IF_n/n vs R's dfbeta on this data: max rel. difference {check}.")
    text = ["# Table 2, Cox rows: runtime\n",
            f"Machine: {platform.machine()}, 2 shared cores; medians of {reps} runs "
            f"(exact_loo: {loo_reps}). Paper: Intel Xeon Gold 6338, autodiff VIF, Adam "
            "brute-force retraining.\n",
            markdown_table(["dataset", "n", "paper brute force", "paper VIF", "paper ratio",
                            "our exact LOO", "our VIF", "our ratio", "paper VIF / our VIF",
                            "paper BF / our exact LOO", "R resid dfbeta",
                            "lifelines delta_beta"], rows)]
    text += detail
    text.append(f"\nWall time {time.perf_counter() - t_start:.1f} s.\n")
    write_result("table2_runtime.md", "\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

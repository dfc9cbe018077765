"""Issue 46: ``ci.evaluate`` at cohort scale, time and peak memory against R's
``riskRegression::Score`` plus ``survival::concordance``, and scikit-survival's times.

    python paper_appendix/bench_evaluate.py [--quick] [--sizes 10000,100000,1000000]
        [--sksurv-c-max-rows 100000] [--r-timeout 1800]

Simulated Cox data (5 covariates, exponential times and censoring, times rounded to 3
decimals: ties): a Cox model fitted on 5,000 training rows, evaluated on test sets of
each size at the times 0.25, 0.5 and 1 (about the 20%, 35% and 55% quantiles of the test
times). Measured in the same run, each in a process of its own:

- **ours**: ``ci.evaluate(fit, X_test, time_test, event_test, times)``: every metric
  with its standard error (Brier score, AUC, IBS, IPA, Harrell's and Uno's C), the
  model's predictions for the test rows included; median of 3 calls (1 at 10^6 rows)
  after a warm-up call on 2,000 rows. Peak memory: the process's peak resident set
  (``ru_maxrss``: Python, the imports, the data and the fit included).
- **R**: ``Score(list(risk), Surv(time, event) ~ 1, times, metrics = c("brier", "auc"),
  summary = c("ibs", "ipa"), null.model = TRUE, se.fit = TRUE, cens.model = "km",
  conservative = FALSE)`` on the same predicted risks (written by us), plus
  ``concordance(Surv(time, event) ~ lp, reverse = TRUE, timewt = "n")`` and ``"n/G2"``
  on our linear predictor: the same numbers, timed inside R (``proc.time``, reading the
  data not counted), one run. Peak memory: the R process's peak resident set
  (``VmHWM``: R, riskRegression and the data included). A size where R passes
  ``--r-timeout`` seconds is shown as such.
- **agreement**: the largest absolute difference between our estimates and R's, and
  between our standard errors of the Brier scores and the concordances and R's; the
  AUC's standard errors apart (relative difference): riskRegression's are measured
  at 46,340 and 46,341 test rows too, where ``n^2`` passes ``2^31 - 1`` (riskRegression
  2022.11.28's depart from ours there, by 1e-3 relative, and by 7x at 10^5 rows).
- **scikit-survival** (no standard errors): ``concordance_index_censored`` (Harrell),
  ``concordance_index_ipcw`` (Uno; the test set as ``survival_train``),
  ``cumulative_dynamic_auc`` and ``brier_score`` at the same times, on the same risks;
  one call each in this process. Its concordances compare every pair (time ~ n x
  events): run up to ``--sksurv-c-max-rows`` (default 10^5: 28 s each measured there on
  2026-11-29; 10^6 would take about 100 times as long).

Default (what RESULTS.md records): 10^4, 10^5, 10^6 test rows. ``--quick`` (CI): 10^3
and 10^4. Writes ``paper_appendix/out/bench_evaluate.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import markdown_table, r_available, write_result

import coxinfluence as ci

TIMES = [0.25, 0.5, 1.0]
BETA = np.array([0.5, -0.3, 0.2, 0.0, 0.1])
COLS = list("abcde")
GIB = 2.0 ** 30

CHILD = r"""
import json, resource, statistics, sys, time
import numpy as np, pandas as pd
import coxinfluence as ci
d = np.load(sys.argv[1])
repeats = int(sys.argv[2])
cols = list("abcde")
fit = ci.fit_cox(pd.DataFrame(d["Xtr"], columns=cols), d["ttr"], d["etr"])
X = pd.DataFrame(d["X"], columns=cols)
times = [0.25, 0.5, 1.0]
ci.evaluate(fit, X.iloc[:2000], d["t"][:2000], d["e"][:2000], times)     # warm-up
secs = []
for _ in range(repeats):
    t0 = time.perf_counter()
    table = ci.evaluate(fit, X, d["t"], d["e"], times)
    secs.append(time.perf_counter() - t0)
print(json.dumps({"seconds": statistics.median(secs),
                  "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "table": table.to_dict(orient="list")}))
"""

R_SCRIPT = r"""
suppressPackageStartupMessages({library(survival); library(riskRegression)
                                library(data.table)})
args <- commandArgs(trailingOnly = TRUE)
d <- fread(args[1])
times <- c(0.25, 0.5, 1)
risk <- as.matrix(d[, c("r1", "r2", "r3")])
t0 <- proc.time()[["elapsed"]]
sc <- Score(list(cox = risk), formula = Surv(time, event) ~ 1, data = d, times = times,
            metrics = c("brier", "auc"), summary = c("ibs", "ipa"), null.model = TRUE,
            se.fit = TRUE, cens.model = "km", conservative = FALSE)
ch <- concordance(Surv(time, event) ~ lp, data = d, reverse = TRUE, timewt = "n")
cu <- concordance(Surv(time, event) ~ lp, data = d, reverse = TRUE, timewt = "n/G2")
secs <- proc.time()[["elapsed"]] - t0
br <- sc$Brier$score[model == "cox"][order(times)]
au <- sc$AUC$score[model == "cox"][order(times)]
hwm <- grep("^VmHWM", readLines("/proc/self/status"), value = TRUE)
hwm <- if (length(hwm)) as.numeric(gsub("[^0-9]", "", hwm)) * 1024 else NA
out <- list(seconds = secs, peak_bytes = hwm, brier = br$Brier, brier_se = br$se,
            auc = au$AUC, auc_se = au$se, ibs = br$IBS[length(times)], ipa = br$IPA,
            c_harrell = ch$concordance, c_harrell_se = sqrt(ch$var),
            c_uno = cu$concordance, c_uno_se = sqrt(cu$var))
writeLines(paste0("{", paste(sprintf('"%s": [%s]', names(out), sapply(out, function(v)
  paste(sprintf("%.17g", v), collapse = ", "))), collapse = ", "), "}"), args[2])
"""


def draw(rng, n):
    X = rng.normal(size=(n, 5))
    t = rng.exponential(np.exp(-X @ BETA))
    c = rng.exponential(1.5, n)
    return X, np.round(np.minimum(t, c), 3) + 0.001, (t <= c).astype(int)


def ours(path, repeats):
    res = subprocess.run([sys.executable, "-c", CHILD, str(path), str(repeats)],
                         check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_r(csv, folder, timeout):
    out = folder / "r.json"
    script = folder / "score.R"
    script.write_text(R_SCRIPT)
    try:
        subprocess.run(["Rscript", str(script), str(csv), str(out)], check=True,
                       capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.read_text())


def agreement(table, r):
    """max |ours - R| over the estimates, over the standard errors of the Brier scores and
    the concordances, and over the AUC's standard errors (relative)."""
    t = pd.DataFrame(table)
    est, se = [], []
    for metric in ("brier", "auc"):
        rows = t[t.metric == metric]
        est += list(np.abs(rows.estimate.to_numpy() - r[metric]))
    rows = t[t.metric == "brier"]
    se += list(np.abs(rows.se.to_numpy() - r["brier_se"]))
    auc_se = t[t.metric == "auc"].se.to_numpy()
    auc_rel = float(np.max(np.abs(auc_se - r["auc_se"]) / auc_se))
    est.append(abs(t[t.metric == "ibs"].estimate.iloc[0] - r["ibs"][0]))
    est += list(np.abs(t[t.metric == "ipa"].estimate.to_numpy() - r["ipa"]))
    for metric in ("c_harrell", "c_uno"):
        row = t[t.metric == metric].iloc[0]
        est.append(abs(row.estimate - r[metric][0]))
        se.append(abs(row.se - r[metric + "_se"][0]))
    return max(est), max(se), auc_rel


def auc_se_overflow(fit):
    """Our AUC standard errors and Score's at 46,340 and 46,341 test rows (n^2 below and
    above 2^31 - 1): [(n, largest relative difference)]."""
    out = []
    for n in (46_340, 46_341):
        X, t, e = draw(np.random.default_rng(n), n)
        frame = pd.DataFrame(X, columns=COLS)
        risk = 1.0 - np.asarray(ci.targets.Survival(frame, TIMES).value(
            fit, fit.coef[None])).reshape(n, len(TIMES))
        table = ci.evaluate(fit, frame, t, e, TIMES)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            pd.DataFrame({"time": t, "event": e, "r1": risk[:, 0], "r2": risk[:, 1],
                          "r3": risk[:, 2], "lp": X @ fit.coef}).to_csv(
                folder / "d.csv", index=False, float_format="%.17g")
            r = run_r(folder / "d.csv", folder, 600)
        if r is None:
            return None
        out.append((n, agreement(table.to_dict(orient="list"), r)[2]))
    return out


def overflow_note(overflow):
    if not overflow:
        return []
    (n0, d0), (n1, d1) = overflow
    version = subprocess.run(["Rscript", "-e", 'cat(format(packageVersion("riskRegression")))'],
                             capture_output=True, text=True).stdout.strip()
    if d1 < 1e-8:
        return [f"R's AUC standard errors (riskRegression {version}) agree with ours at "
                f"{n0:,} and {n1:,} test rows ({d0:.1e}, {d1:.1e} relative).", ""]
    return [f"R's AUC standard errors are wrong from {n1:,} test rows on (riskRegression "
            f"{version}): relative difference from ours {d0:.1e} at {n0:,} rows, {d1:.1e} "
            f"at {n1:,} (n^2 passes 2^31 - 1 there: an integer overflow in Score's AUC "
            "influence function, by the look of it; its estimates, Brier SEs and survival's "
            "concordance SEs still agree). Below that size ours agree with R's to rounding "
            "(here and in tests/test_evaluate.py).", ""]


def sksurv_times(t, e, risk, lp, with_c):
    """Seconds of scikit-survival's four metrics (None: not run)."""
    try:
        from sksurv.metrics import (
            brier_score,
            concordance_index_censored,
            concordance_index_ipcw,
            cumulative_dynamic_auc,
        )
        from sksurv.util import Surv
    except ImportError:
        return None
    y = Surv.from_arrays(e.astype(bool), t)
    calls = {"auc": lambda: cumulative_dynamic_auc(y, y, risk, TIMES),
             "brier": lambda: brier_score(y, y, 1.0 - risk, TIMES)}
    if with_c:
        calls = {"c_harrell": lambda: concordance_index_censored(y["event"], y["time"], lp),
                 "c_uno": lambda: concordance_index_ipcw(y, y, lp), **calls}
    out = {}
    for name, fn in calls.items():
        t0 = time.perf_counter()
        fn()
        out[name] = time.perf_counter() - t0
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10^3 and 10^4 test rows (CI)")
    ap.add_argument("--sizes", default=None, help="comma-separated test-set sizes")
    ap.add_argument("--sksurv-c-max-rows", type=int, default=100_000)
    ap.add_argument("--r-timeout", type=float, default=1800.0)
    args = ap.parse_args(argv)
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
             else [1000, 10_000] if args.quick else [10_000, 100_000, 1_000_000])
    rng = np.random.default_rng(0)
    Xtr, ttr, etr = draw(rng, 5000)
    fit = ci.fit_cox(pd.DataFrame(Xtr, columns=COLS), ttr, etr)
    have_r = r_available()
    rows, sk_rows = [], []
    for n in sizes:
        X, t, e = draw(np.random.default_rng(n), n)
        frame = pd.DataFrame(X, columns=COLS)
        S = np.asarray(ci.targets.Survival(frame, TIMES).value(fit, fit.coef[None]))
        risk = 1.0 - S.reshape(n, len(TIMES))
        lp = X @ fit.coef
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            np.savez(folder / "d.npz", Xtr=Xtr, ttr=ttr, etr=etr, X=X, t=t, e=e)
            mine = ours(folder / "d.npz", 1 if n >= 1_000_000 else 3)
            r = None
            if have_r:
                pd.DataFrame({"time": t, "event": e, "r1": risk[:, 0], "r2": risk[:, 1],
                              "r3": risk[:, 2], "lp": lp}).to_csv(
                    folder / "d.csv", index=False, float_format="%.17g")
                r = run_r(folder / "d.csv", folder, args.r_timeout)
        sk = sksurv_times(t, e, risk, lp, n <= args.sksurv_c_max_rows)
        ours_s, ours_gib = mine["seconds"], mine["peak_bytes"] / GIB
        if r is None:
            why = "not installed" if not have_r else f"> {args.r_timeout:.0f} s"
            r_cells = [why, "", "", "", ""]
        else:
            r_s, r_gib = r["seconds"][0], r["peak_bytes"][0] / GIB
            d_est, d_se, d_auc = agreement(mine["table"], r)
            r_cells = [f"{r_s:.2f}", f"{r_gib:.2f}", f"{ours_s / r_s:.2f}x",
                       f"{d_est:.1e} / {d_se:.1e}", f"{d_auc:.1e}"]
        rows.append([f"{n:,}", int(e.sum()), f"{ours_s:.2f}", f"{ours_gib:.2f}", *r_cells])
        if sk is None:
            sk_rows.append([f"{n:,}", "scikit-survival not installed", "", "", "", ""])
        else:
            cells = [f"{sk[k]:.2f}" if k in sk else "not run (pairwise)"
                     for k in ("c_harrell", "c_uno", "auc", "brier")]
            sk_rows.append([f"{n:,}", *cells, f"{sum(sk.values()):.2f}"])
        print(f"[bench_evaluate] {n} rows: ours {ours_s:.2f} s {ours_gib:.2f} GiB; R "
              f"{r_cells[0]} s; sksurv {sk}", file=sys.stderr, flush=True)
    overflow = None if args.quick or not have_r else auc_se_overflow(fit)
    big = [r for r in rows if r[0] == f"{max(sizes):,}"][0]
    text = "\n".join([
        "# ci.evaluate at cohort scale (issue 46)",
        "",
        f"Simulated Cox data, model fitted on 5,000 rows, metrics at t = {TIMES}; "
        f"{os.cpu_count()} cores (shared). Ours: `ci.evaluate` (Brier, AUC, IBS, IPA, "
        "Harrell's and Uno's C, each with its SE; predictions included), median of 3 "
        "(1 at 10^6) in its own process; peak memory = the process's peak resident set. "
        "R: `riskRegression::Score` (brier, auc, ibs, ipa, null model, se.fit) + "
        "`survival::concordance` (n, n/G2) on our risks and linear predictor, timed inside "
        "R, one run; peak memory = the R process's peak resident set. Agreement: the "
        "largest absolute difference from R over the estimates / over the SEs.",
        "",
        markdown_table(["test rows", "events", "ours s", "ours peak GiB", "R s",
                        "R peak GiB", "ours / R time",
                        "largest difference from R: estimates / SEs (Brier, C)",
                        "AUC SEs (relative)"], rows),
        "",
        *overflow_note(overflow),
        "",
        "scikit-survival (no standard errors; seconds, one call each, same risks; its "
        "concordances compare every pair):",
        "",
        markdown_table(["test rows", "concordance_index_censored",
                        "concordance_index_ipcw", "cumulative_dynamic_auc",
                        "brier_score", "sum of those run"], sk_rows),
        "",
        f"Targets (issue 46): at most 2x R's time and at most 2 GiB at 10^6 rows. At "
        f"{big[0]} rows: ours {big[2]} s and {big[3]} GiB, R {big[4]} s"
        + (f" and {big[5]} GiB ({big[6]} R's time)." if big[5] else "."),
    ])
    write_result("bench_evaluate.md", text + "\n")


if __name__ == "__main__":
    main()

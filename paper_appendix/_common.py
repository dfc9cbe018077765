"""Shared helpers of the paper_appendix scripts: timing, R via Rscript, markdown tables."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "out"


def timed(fn):
    """``(fn(), seconds it took)``: one timed call, first-call costs (compilation) included."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def median_time(fn, repeats=5, warm=True):
    """Median wall time of ``fn()`` over ``repeats`` runs, after one untimed warm-up run
    (imports, caches, compilation) unless ``warm=False``."""
    if warm:
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def r_available():
    return shutil.which("Rscript") is not None


def r_dfbeta_time(X, time_, event, ties="efron", repeats=5):
    """Median seconds of R's ``coxph`` fit and ``resid(fit, "dfbeta")`` on the same data,
    timed inside R (no process start-up or file I/O counted), and the dfbeta matrix."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = np.column_stack([time_, event, X])
        np.savetxt(tmp / "d.csv", data, delimiter=",")
        script = f"""
suppressPackageStartupMessages(library(survival))
d <- as.matrix(read.csv("{tmp / 'd.csv'}", header = FALSE))
y <- Surv(d[, 1], d[, 2]); x <- d[, -(1:2), drop = FALSE]
fit_t <- c(); dfb_t <- c()
for (k in 1:{repeats + 1}) {{
  t0 <- proc.time()[["elapsed"]]
  fit <- coxph(y ~ x, ties = "{ties}", control = coxph.control(eps = 1e-12, iter.max = 100))
  t1 <- proc.time()[["elapsed"]]
  dfb <- resid(fit, "dfbeta")
  t2 <- proc.time()[["elapsed"]]
  if (k > 1) {{ fit_t <- c(fit_t, t1 - t0); dfb_t <- c(dfb_t, t2 - t1) }}
}}
write.table(matrix(c(median(fit_t), median(dfb_t)), nrow = 1), "{tmp / 't.csv'}",
            sep = ",", row.names = FALSE, col.names = FALSE)
write.table(dfb, "{tmp / 'dfb.csv'}", sep = ",", row.names = FALSE, col.names = FALSE)
"""
        (tmp / "s.R").write_text(script)
        subprocess.run(["Rscript", str(tmp / "s.R")], check=True, capture_output=True)
        fit_t, dfb_t = np.loadtxt(tmp / "t.csv", delimiter=",")
        dfb = np.loadtxt(tmp / "dfb.csv", delimiter=",", ndmin=2)
    return float(fit_t), float(dfb_t), dfb


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


def write_result(name, text):
    OUT.mkdir(exist_ok=True)
    path = OUT / name
    path.write_text(text)
    print(text)
    print(f"\n[written to {path}]")
    return path


def data_path():
    return os.environ.get("COXINFLUENCE_DATA")

"""The R recipe of ``docs/r/fine_gray_weighted.R`` reproduces ``ci.fit_fine_gray(weights=)``.

The recipe (for users who want R's number for a weighted Fine-Gray fit) expands the data
with the *weighted* censoring Kaplan-Meier and fits ``survival::coxph``; ours weights the
Kaplan-Meier too. ``survival::finegray(weights=)`` + ``coxph(weights = fgwt)`` does not
(its Kaplan-Meier ignores the case weights), which the second test shows: it differs from
both on the same data.
"""
from __future__ import annotations

import subprocess
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from oracles import R_SKIP_REASON, r_available

import coxinfluence as ci

RECIPE = Path(__file__).parents[1] / "docs" / "r" / "fine_gray_weighted.R"

pytestmark = [pytest.mark.needs_r, pytest.mark.slow,
              pytest.mark.skipif(not r_available(), reason=R_SKIP_REASON)]


def weighted_design(seed=3, n=150):
    """Two causes and censoring, continuous times (no ties), non-integer weights."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.integers(0, 2, size=n).astype(float)
    t1 = rng.exponential(np.exp(-0.5 * x1))
    t2 = rng.exponential(1.5 * np.exp(0.3 * x2))
    c = rng.uniform(0.2, 3.0, size=n)
    time = np.minimum.reduce([t1, t2, c])
    status = np.select([time == t1, time == t2], [1, 2], 0)
    w = np.round(rng.uniform(0.3, 3.0, size=n), 3)
    return pd.DataFrame({"time": time, "status": status, "x1": x1, "x2": x2, "w": w})


def rscript(*args):
    """Rscript's output (a CSV of term, coef) as a Series."""
    proc = subprocess.run(["Rscript", *map(str, args)], capture_output=True, text=True,
                          check=True)
    return pd.read_csv(StringIO(proc.stdout)).set_index("term")["coef"]


def test_recipe_reproduces_fit_fine_gray_with_weights(tmp_path):
    d = weighted_design()
    d.to_csv(tmp_path / "d.csv", index=False, float_format="%.17g")
    r_coef = rscript(RECIPE, tmp_path / "d.csv", "time", "status", 1, "w", "x1", "x2")
    fit = ci.fit_fine_gray(d[["x1", "x2"]], d["time"], d["status"], 1, weights=d["w"])
    np.testing.assert_allclose(r_coef.loc[["x1", "x2"]].to_numpy(), fit.coef,
                               rtol=1e-7, atol=1e-9)


def test_finegray_with_weights_is_a_different_model(tmp_path):
    """finegray's unweighted censoring Kaplan-Meier gives other coefficients: why the
    recipe exists (the difference is far above the fits' tolerance)."""
    d = weighted_design()
    d.to_csv(tmp_path / "d.csv", index=False, float_format="%.17g")
    code = (
        "suppressPackageStartupMessages(library(survival));"
        "d <- read.csv(commandArgs(TRUE)[1]); d$ev <- factor(d$status, 0:2);"
        "fg <- finegray(Surv(time, ev) ~ x1 + x2, data = d, weights = w, etype = '1');"
        "f <- coxph(Surv(fgstart, fgstop, fgstatus) ~ x1 + x2, data = fg, weights = fgwt,"
        " ties = 'breslow', control = coxph.control(eps = 1e-12));"
        "write.csv(data.frame(term = names(coef(f)), coef = unname(coef(f))), stdout(),"
        " row.names = FALSE)")
    finegray_coef = rscript("-e", code, tmp_path / "d.csv")
    fit = ci.fit_fine_gray(d[["x1", "x2"]], d["time"], d["status"], 1, weights=d["w"])
    assert np.max(np.abs(finegray_coef.loc[["x1", "x2"]].to_numpy() - fit.coef)) > 1e-4

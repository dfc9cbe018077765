"""Read the R survival reference numbers written by ``tests/r/cox_reference.R`` and
compute ours for the same configuration."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

import coxinfluence as ci

SCRIPT = Path(__file__).parent / "r" / "cox_reference.R"
GOLDEN = Path(__file__).parent / "fixtures" / "r_cox"
CONFIGS = [f"{t}_{s}_{w}" for t in ("efron", "breslow") for s in ("nostrata", "strata")
           for w in ("noweights", "weights")]
COVARIATES = ["x1", "x2", "x3"]


def run_r(seed, outdir, n=90):
    """Run the R script (raises if Rscript is missing or fails)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        raise FileNotFoundError("Rscript not found")
    subprocess.run([rscript, str(SCRIPT), str(seed), str(outdir), str(n)], check=True,
                   capture_output=True, text=True, timeout=600)
    return Path(outdir)


def load(folder):
    folder = Path(folder)
    data = pd.read_csv(folder / "data.csv")
    ref = pd.read_csv(folder / "reference.csv")
    return data, ref


def reference(ref, config, quantity):
    sub = ref[(ref["config"] == config) & (ref["quantity"] == quantity)]
    shape = (sub["row"].max() + 1, sub["col"].max() + 1)
    out = np.full(shape, np.nan)
    out[sub["row"].to_numpy(), sub["col"].to_numpy()] = sub["value"].to_numpy()
    return out


def fit_config(data, config):
    ties, strat, wtd = config.split("_")
    return ci.fit_cox(data[COVARIATES].to_numpy(), data["time"].to_numpy(),
                      data["status"].to_numpy(),
                      weights=data["w"].to_numpy() if wtd == "weights" else None,
                      strata=data["s"].to_numpy() if strat == "strata" else None,
                      ties=ties)


def rel_err(ours, theirs):
    """Max abs difference relative to the largest entry of the reference (per array)."""
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())

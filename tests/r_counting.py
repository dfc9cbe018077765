"""Read the R survival reference for counting-process (start, stop] Cox data, written by
``tests/r/counting_process_reference.R`` into ``tests/fixtures/r_counting/``.

Each config has ``data_<config>.csv`` (start, stop, event, covariates, [weight], [stratum],
id, [cluster]) and ``reference_<config>.csv`` (long format: config, quantity, row, col,
value); ``configs.csv`` says which columns the R fit used. See the R script's header for
the exact R calls and the meaning of each quantity.

    from r_counting import CONFIGS, load_data, reference
    d = load_data("efron_wstrata")
    fit = ci.fit_cox(d.X, d.stop, d.event, start=d.start, weights=d.weights,
                     strata=d.strata, ties=d.ties)
    reference("efron_wstrata", "coef")[0]
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

SCRIPT = Path(__file__).parent / "r" / "counting_process_reference.R"
GOLDEN = Path(__file__).parent / "fixtures" / "r_counting"

QUANTITIES = ["coef", "loglik", "loglik_null", "information", "dfbeta_rows", "score_rows",
              "dfbeta_id", "dfbeta_cluster", "robust_var_id", "robust_var_cluster",
              "robust_var_rows", "loso_coef", "loco_coef", "survfit_newdata", "survfit_times",
              "survfit_surv", "survfit_cumhaz"]


@dataclass
class CountingData:
    """One config's data as the R fit saw it (None where the fit did not use the column)."""
    config: str
    ties: str
    covariates: list
    frame: pd.DataFrame
    start: np.ndarray
    stop: np.ndarray
    event: np.ndarray
    X: np.ndarray
    weights: np.ndarray | None
    strata: np.ndarray | None
    id: np.ndarray
    cluster: np.ndarray | None
    survfit_stratum: str | None

    @property
    def ids(self):
        """Sorted unique ids: the row order of dfbeta_id and loso_coef."""
        return np.unique(self.id)

    @property
    def clusters(self):
        """Sorted unique clusters: the row order of dfbeta_cluster and loco_coef."""
        return None if self.cluster is None else np.unique(self.cluster)


def run_r(outdir=GOLDEN):
    """Regenerate the fixtures (raises if Rscript is missing or fails)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        raise FileNotFoundError("Rscript not found")
    subprocess.run([rscript, str(SCRIPT), str(outdir)], check=True, capture_output=True,
                   text=True, timeout=600)
    return Path(outdir)


@lru_cache(maxsize=None)
def configs(folder=GOLDEN) -> pd.DataFrame:
    """configs.csv indexed by config name."""
    return pd.read_csv(Path(folder) / "configs.csv", keep_default_na=False,
                       na_values=["NA"]).set_index("config")


CONFIGS = list(configs().index) if (GOLDEN / "configs.csv").is_file() else []
SIMULATED = [c for c in CONFIGS if c.split("_")[0] in ("efron", "breslow")]
DATASETS = ["heart", "cgd", "lung_age"]


def load_data(config, folder=GOLDEN) -> CountingData:
    meta = configs(folder).loc[config]
    # keep stratum labels as strings (cgd's are e.g. "US:NIH"; simulated ones "a", "b")
    frame = pd.read_csv(Path(folder) / meta["data"], dtype={"stratum": str})
    covariates = meta["covariates"].split(";")
    def use(flag, col):
        return frame[col].to_numpy() if bool(flag) and col in frame else None
    stratum = meta["survfit_stratum"]
    return CountingData(
        config=config, ties=meta["ties"], covariates=covariates, frame=frame,
        start=frame["start"].to_numpy(float), stop=frame["stop"].to_numpy(float),
        event=frame["event"].to_numpy(float), X=frame[covariates].to_numpy(float),
        weights=None if use(meta["weights"], "weight") is None else frame["weight"].to_numpy(float),
        strata=use(meta["strata"], "stratum"), id=frame["id"].to_numpy(),
        cluster=use(meta["clusters"], "cluster"),
        survfit_stratum=None if pd.isna(stratum) else str(stratum))


@lru_cache(maxsize=None)
def _reference_frame(config, folder=GOLDEN) -> pd.DataFrame:
    return pd.read_csv(Path(folder) / f"reference_{config}.csv")


def has_quantity(config, quantity, folder=GOLDEN) -> bool:
    ref = _reference_frame(config, folder)
    return bool((ref["quantity"] == quantity).any())


def reference(config, quantity, folder=GOLDEN) -> np.ndarray:
    """A quantity as a 2-d array (row, col as R wrote them); KeyError when absent
    (cluster quantities for heart, loso_coef where skipped)."""
    ref = _reference_frame(config, folder)
    sub = ref[ref["quantity"] == quantity]
    if sub.empty:
        raise KeyError(f"{quantity!r} not in the R reference for {config!r}")
    out = np.full((sub["row"].max() + 1, sub["col"].max() + 1), np.nan)
    out[sub["row"].to_numpy(), sub["col"].to_numpy()] = sub["value"].to_numpy()
    return out


def rel_err(ours, theirs):
    """Max abs difference relative to the largest entry of the reference."""
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())

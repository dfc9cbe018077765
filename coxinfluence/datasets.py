"""Data sets: lifelines' bundled GBSG2 and the DeepSurv METABRIC / SUPPORT files.

The DeepSurv CSVs (``x0..x{d-1}, duration, event``; DeepSurv's ``train`` then ``test``
rows, i.e. ``pycox.datasets.<name>.read_df()`` order) are looked up, in order, at:
the ``path`` argument (a file or a folder holding ``<name>.csv``), the folder in the
environment variable ``COXINFLUENCE_DATA`` (with or without a ``deepsurv/`` sub-folder),
the cache folder ``~/.cache/coxinfluence`` (or ``$COXINFLUENCE_CACHE``), and the
project's ``../shared/data`` next to a source checkout. Nothing is downloaded here.

``paper_split`` reproduces the paper's preprocessing (its public code, pycox style):
``np.random.seed(seed)``; test = 20% sample; validation = 20% of the rest; the listed
columns standardised with the training set's mean and (population) standard deviation.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

_STANDARDIZE = {
    "metabric": ["x0", "x1", "x2", "x3", "x8"],
    "support": ["x0", "x2", "x3", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13"],
}  # the paper's choices (../shared/data/README.md); other data sets are left unscaled


def _candidate_dirs():
    env = os.environ.get("COXINFLUENCE_DATA")
    if env:
        yield Path(env)
        yield Path(env) / "deepsurv"
    cache = Path(os.environ.get("COXINFLUENCE_CACHE", Path.home() / ".cache" / "coxinfluence"))
    yield cache
    yield cache / "deepsurv"
    here = Path(__file__).resolve().parent.parent
    yield here.parent / "shared" / "data" / "deepsurv"


def find_deepsurv_file(name, path=None) -> Path:
    """Locate ``<name>.csv`` (see module docstring); FileNotFoundError lists where it looked."""
    tried = []
    if path is not None:
        p = Path(path)
        cands = [p] if p.suffix else [p / f"{name}.csv", p / "deepsurv" / f"{name}.csv"]
    else:
        cands = [d / f"{name}.csv" for d in _candidate_dirs()]
    for c in cands:
        tried.append(str(c))
        if c.is_file():
            return c
    raise FileNotFoundError(
        f"DeepSurv data set {name!r} not found; looked at: {', '.join(tried)}. Pass path=..., "
        "or set COXINFLUENCE_DATA to the folder holding the DeepSurv CSV files")


def load_deepsurv(name, path=None) -> pd.DataFrame:
    """The raw DeepSurv data set ``name`` (metabric, support, gbsg, whas) as a DataFrame."""
    df = pd.read_csv(find_deepsurv_file(name, path))
    missing = {"duration", "event"} - set(df.columns)
    if missing:
        raise ValueError(f"{name}.csv lacks columns {sorted(missing)}")
    return df


def load_metabric(path=None) -> pd.DataFrame:
    """METABRIC (1904 rows, x0..x8) from the DeepSurv files."""
    return load_deepsurv("metabric", path)


def load_support(path=None) -> pd.DataFrame:
    """SUPPORT (8873 rows, x0..x13) from the DeepSurv files."""
    return load_deepsurv("support", path)


def load_gbsg2() -> pd.DataFrame:
    """lifelines' bundled GBSG2 breast-cancer data (686 rows; no download)."""
    from lifelines.datasets import load_gbsg2 as _load
    return _load()


@dataclass
class Split:
    """The paper's train / validation / test split of a DeepSurv data set."""

    train: pd.DataFrame
    val: pd.DataFrame
    test: pd.DataFrame
    covariates: list

    def arrays(self, part="train"):
        df = getattr(self, part)
        return (df[self.covariates].to_numpy(), df["duration"].to_numpy(),
                df["event"].to_numpy())


def paper_split(name, path=None, seed=0, standardize=True) -> Split:
    """The paper's split and preprocessing of ``name`` (see module docstring).

    METABRIC gives 1218 training rows, SUPPORT 5678 (as in the paper).
    """
    df = load_deepsurv(name, path)
    np.random.seed(seed)
    test = df.sample(frac=0.2)
    rest = df.drop(test.index)
    val = rest.sample(frac=0.2)
    train = rest.drop(val.index)
    covs = [c for c in df.columns if c not in ("duration", "event")]
    if standardize:
        cols = _STANDARDIZE.get(name, [])
        mean = train[cols].mean()
        std = train[cols].std(ddof=0)
        train, val, test = (part.assign(**((part[cols] - mean) / std)) for part in
                            (train, val, test))
    return Split(train=train, val=val, test=test, covariates=covs)

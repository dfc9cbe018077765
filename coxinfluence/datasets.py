"""Data sets: lifelines' bundled GBSG2 and the DeepSurv METABRIC / SUPPORT files.

The DeepSurv CSVs (``x0..x{d-1}, duration, event``; DeepSurv's ``train`` then ``test``
rows, i.e. ``pycox.datasets.<name>.read_df()`` order) are looked up, in order, at:
the ``path`` argument (a file or a folder holding ``<name>.csv``), the folder in the
environment variable ``COXINFLUENCE_DATA`` (with or without a ``deepsurv/`` sub-folder),
the cache folder ``~/.cache/coxinfluence`` (or ``$COXINFLUENCE_CACHE``), and the
project's ``../shared/data/deepsurv`` next to a source checkout. A DeepSurv HDF5 file
(``<name>.h5``, groups ``train`` and ``test`` with datasets ``x``, ``t``, ``e``) in any of these
places is read too (needs ``h5py``). When the data set is found nowhere and ``download``
is true (the default unless ``COXINFLUENCE_NO_DOWNLOAD`` is set), the HDF5 file is fetched
from the DeepSurv GitHub repository into the cache folder, converted (``h5py``) and the CSV
cached beside it.

``paper_split`` reproduces the paper's preprocessing (its public code, pycox style):
``np.random.seed(seed)`` (here a ``RandomState(seed)``, the same draws without touching
the caller's global random state); test = 20% sample; validation = 20% of the rest; the listed
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


DEEPSURV_URL = "https://raw.githubusercontent.com/jaredleekatzman/DeepSurv/master/experiments/data/"
DEEPSURV_FILES = {
    "metabric": "metabric/metabric_IHC4_clinical_train_test.h5",
    "support": "support/support_train_test.h5",
    "gbsg": "gbsg/gbsg_cancer_train_test.h5",
    "whas": "whas/whas_train_test.h5",
}


def cache_dir() -> Path:
    """``$COXINFLUENCE_CACHE`` or ``~/.cache/coxinfluence``."""
    return Path(os.environ.get("COXINFLUENCE_CACHE", Path.home() / ".cache" / "coxinfluence"))


def _fetch(url, dest):
    """Download ``url`` to ``dest`` (the tests replace this function; they never download)."""
    import urllib.request
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    with urllib.request.urlopen(url, timeout=60) as resp, open(tmp, "wb") as fh:
        fh.write(resp.read())
    tmp.replace(dest)
    return dest


def read_deepsurv_h5(path) -> pd.DataFrame:
    """A DeepSurv HDF5 file as a DataFrame (``x0..``, ``duration``, ``event``; ``train`` rows
    then ``test`` rows, the CSV layout). Needs ``h5py``: a clear ``ImportError`` otherwise."""
    try:
        import h5py
    except ImportError:
        raise ImportError(f"reading the DeepSurv HDF5 file {path} needs h5py: "
                          "pip install h5py (or provide the CSV version)") from None
    parts = []
    with h5py.File(path, "r") as f:
        for group in ("train", "test"):
            if group not in f:
                raise ValueError(f"{path} has no {group!r} group (not a DeepSurv file)")
            g = f[group]
            x = np.asarray(g["x"], dtype=np.float64)
            part = pd.DataFrame(x, columns=[f"x{j}" for j in range(x.shape[1])])
            part["duration"] = np.asarray(g["t"], dtype=np.float64).ravel()
            part["event"] = np.asarray(g["e"]).ravel().astype(int)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _find_h5(name, path=None):
    if path is not None:
        p = Path(path)
        cands = [p] if p.suffix == ".h5" else [p / f"{name}.h5", p / "deepsurv" / f"{name}.h5"]
    else:
        cands = [d / f"{name}.h5" for d in _candidate_dirs()]
    return next((c for c in cands if c.is_file()), None)


def _download(name) -> Path:
    if name not in DEEPSURV_FILES:
        raise FileNotFoundError(f"no download known for data set {name!r}")
    h5 = cache_dir() / f"{name}.h5"
    if not h5.is_file():
        _fetch(DEEPSURV_URL + DEEPSURV_FILES[name], h5)
    df = read_deepsurv_h5(h5)
    csv = cache_dir() / f"{name}.csv"
    df.to_csv(csv, index=False)
    return csv


def load_deepsurv(name, path=None, download=None) -> pd.DataFrame:
    """The raw DeepSurv data set ``name`` (metabric, support, gbsg, whas) as a DataFrame.

    Looks for the CSV, then the HDF5 file (module docstring); if neither is found,
    ``path`` is not given and ``download`` is true (default: unless
    ``$COXINFLUENCE_NO_DOWNLOAD`` is set), fetches it into :func:`cache_dir`."""
    if download is None:
        download = not os.environ.get("COXINFLUENCE_NO_DOWNLOAD")
    try:
        csv = find_deepsurv_file(name, path)
    except FileNotFoundError as missing:
        h5 = _find_h5(name, path)
        if h5 is not None:
            df = read_deepsurv_h5(h5)
        elif download and path is None:
            try:
                csv = _download(name)
            except OSError as exc:
                raise FileNotFoundError(f"{missing}; downloading it from the DeepSurv "
                                        f"repository failed: {exc}") from None
            df = pd.read_csv(csv)
        else:
            raise
    else:
        df = pd.read_csv(csv)
    missing = {"duration", "event"} - set(df.columns)
    if missing:
        raise ValueError(f"{name}.csv lacks columns {sorted(missing)}")
    return df


def load_metabric(path=None, download=None) -> pd.DataFrame:
    """METABRIC (1904 rows, x0..x8) from the DeepSurv files (see :func:`load_deepsurv`)."""
    return load_deepsurv("metabric", path, download)


def load_support(path=None, download=None) -> pd.DataFrame:
    """SUPPORT (8873 rows, x0..x13) from the DeepSurv files (see :func:`load_deepsurv`)."""
    return load_deepsurv("support", path, download)


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

    METABRIC (1904 rows) gives 1218 training rows and SUPPORT (8873) 5678: the counts this
    procedure gives (pandas rounds ``frac * n``). The paper's appendix table says 1217 and
    5677, one fewer each; its text does not say why.
    """
    df = load_deepsurv(name, path)
    # the paper's code seeds NumPy's global generator; a RandomState of the same seed draws
    # the same samples without changing the caller's global random state
    rng = np.random.RandomState(seed)
    test = df.sample(frac=0.2, random_state=rng)
    rest = df.drop(test.index)
    val = rest.sample(frac=0.2, random_state=rng)
    train = rest.drop(val.index)
    covs = [c for c in df.columns if c not in ("duration", "event")]
    if standardize:
        cols = _STANDARDIZE.get(name, [])
        mean = train[cols].mean()
        std = train[cols].std(ddof=0)
        train, val, test = (part.assign(**((part[cols] - mean) / std)) for part in
                            (train, val, test))
    return Split(train=train, val=val, test=test, covariates=covs)

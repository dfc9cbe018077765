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
    """Locate the DeepSurv CSV file ``<name>.csv``.

    Looks, in order, at ``path`` (a file, or a folder holding ``<name>.csv`` or
    ``deepsurv/<name>.csv``); else the folder ``$COXINFLUENCE_DATA`` (with or without a
    ``deepsurv/`` sub-folder), the cache folder (:func:`cache_dir`, with or without
    ``deepsurv/``) and ``../shared/data/deepsurv`` next to a source checkout (module
    docstring). Never downloads.

    Parameters
    ----------
    name : str
        The data set's name: ``"metabric"``, ``"support"``, ``"gbsg"``, ``"whas"``, or
        that of any CSV in the DeepSurv layout.
    path : str or os.PathLike, optional
        A file (taken as it is) or a folder to look in, instead of the default places.

    Returns
    -------
    pathlib.Path
        The first existing file.

    Raises
    ------
    FileNotFoundError
        The file is nowhere; the message lists where it looked.

    See Also
    --------
    load_deepsurv : read the data set (CSV or HDF5, downloading if allowed).

    Examples
    --------
    A toy file in the DeepSurv layout in a temporary folder (the real files are not
    needed):

    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = Path(tmp.name)
    >>> rng = np.random.default_rng(0)
    >>> toy = pd.DataFrame(rng.normal(size=(100, 9)), columns=[f"x{j}" for j in range(9)])
    >>> toy["duration"] = rng.exponential(100.0, size=100)
    >>> toy["event"] = rng.integers(0, 2, size=100)
    >>> toy.to_csv(folder / "metabric.csv", index=False)
    >>> ci.datasets.find_deepsurv_file("metabric", folder).name
    'metabric.csv'
    >>> ci.datasets.find_deepsurv_file("whas", folder)
    Traceback (most recent call last):
    ...
    FileNotFoundError: DeepSurv data set 'whas' not found; looked at: ...
    >>> tmp.cleanup()
    """
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
    """The cache folder of the DeepSurv data sets.

    ``$COXINFLUENCE_CACHE`` when set, else ``~/.cache/coxinfluence``. Downloads go there;
    it is also one of the places :func:`find_deepsurv_file` looks.

    Returns
    -------
    pathlib.Path
        The folder (it may not exist yet).

    See Also
    --------
    load_deepsurv : fetches a data set into this folder when it is found nowhere.

    Examples
    --------
    >>> folder = ci.datasets.cache_dir()
    >>> type(folder).__name__ in ("PosixPath", "WindowsPath")
    True
    """
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
    """Read a DeepSurv HDF5 file into a DataFrame in the CSV layout.

    The file has groups ``train`` and ``test``, each with datasets ``x``, ``t`` and ``e``.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.h5`` file.

    Returns
    -------
    pandas.DataFrame
        Columns ``x0..x{d-1}``, ``duration`` (float) and ``event`` (int); the ``train``
        rows, then the ``test`` rows, with a fresh ``RangeIndex`` (the CSV layout).

    Raises
    ------
    ImportError
        ``h5py`` is not installed (``pip install h5py``, or provide the CSV version).
    ValueError
        The file lacks the ``train`` or the ``test`` group (not a DeepSurv file).

    See Also
    --------
    load_deepsurv : finds the CSV or HDF5 file and reads it.

    Examples
    --------
    A toy file in the DeepSurv HDF5 layout (needs ``h5py``):

    >>> import tempfile
    >>> from pathlib import Path
    >>> import h5py
    >>> tmp = tempfile.TemporaryDirectory()
    >>> file = Path(tmp.name) / "toy.h5"
    >>> rng = np.random.default_rng(0)
    >>> with h5py.File(file, "w") as f:
    ...     for group, n in (("train", 3), ("test", 2)):
    ...         g = f.create_group(group)
    ...         g["x"] = rng.normal(size=(n, 2))
    ...         g["t"] = np.arange(1.0, n + 1)
    ...         g["e"] = np.ones(n)
    >>> df = ci.datasets.read_deepsurv_h5(file)
    >>> df["duration"].tolist(), df["event"].tolist()
    ([1.0, 2.0, 3.0, 1.0, 2.0], [1, 1, 1, 1, 1])
    >>> list(df.columns)
    ['x0', 'x1', 'duration', 'event']
    >>> tmp.cleanup()
    """
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
    """Load the raw DeepSurv data set ``name`` as a DataFrame.

    Looks for ``<name>.csv`` (:func:`find_deepsurv_file`), then for ``<name>.h5`` in the
    same places (read with :func:`read_deepsurv_h5`, needs ``h5py``); if neither is found,
    ``path`` is not given and ``download`` is true, fetches the HDF5 file from the DeepSurv
    GitHub repository into :func:`cache_dir`, converts it and caches the CSV beside it
    (module docstring).

    Parameters
    ----------
    name : str
        ``"metabric"``, ``"support"``, ``"gbsg"`` or ``"whas"`` (the data sets that can be
        downloaded), or the name of any CSV file in the DeepSurv layout.
    path : str or os.PathLike, optional
        A file, or a folder holding the file, instead of the default places; with a
        ``path`` nothing is downloaded.
    download : bool, optional
        Fetch the data set when it is found nowhere. Default: true unless the
        environment variable ``COXINFLUENCE_NO_DOWNLOAD`` is set.

    Returns
    -------
    pandas.DataFrame
        Columns ``x0..x{d-1}``, ``duration``, ``event``; DeepSurv's ``train`` rows then its
        ``test`` rows (``pycox.datasets.<name>.read_df()`` order).

    Raises
    ------
    FileNotFoundError
        The data set is nowhere and was not downloaded (or the download failed; the
        message says where it looked).
    ValueError
        The file lacks the ``duration`` or ``event`` column.

    See Also
    --------
    load_metabric, load_support : the two data sets of the paper.
    paper_split : the paper's train / validation / test split and standardisation.

    Examples
    --------
    A toy file in the DeepSurv layout, in a temporary folder:

    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = Path(tmp.name)
    >>> rng = np.random.default_rng(0)
    >>> toy = pd.DataFrame(rng.normal(size=(100, 9)), columns=[f"x{j}" for j in range(9)])
    >>> toy["duration"] = rng.exponential(100.0, size=100)
    >>> toy["event"] = rng.integers(0, 2, size=100)
    >>> toy.to_csv(folder / "metabric.csv", index=False)
    >>> df = ci.datasets.load_deepsurv("metabric", path=folder)
    >>> df.shape
    (100, 11)
    >>> tmp.cleanup()

    Without ``path`` it reads the paper's data where they are installed (or downloads
    them), so this line is skipped here:

    >>> ci.datasets.load_deepsurv("metabric").shape  # doctest: +SKIP
    (1904, 11)
    """
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
    """METABRIC from the DeepSurv files: 1904 rows, covariates ``x0..x8``.

    ``load_deepsurv("metabric", path, download)``.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A file, or a folder holding the file, instead of the default places; with a
        ``path`` nothing is downloaded.
    download : bool, optional
        Fetch the data set when it is found nowhere. Default: true unless the
        environment variable ``COXINFLUENCE_NO_DOWNLOAD`` is set.

    Returns
    -------
    pandas.DataFrame
        Columns ``x0..x8``, ``duration``, ``event``.

    Raises
    ------
    FileNotFoundError
        The data set is nowhere and was not downloaded.

    See Also
    --------
    load_deepsurv : where the file is looked for.
    paper_split : the paper's split of it.

    Examples
    --------
    The real file is needed (found in the places of :func:`find_deepsurv_file`, or
    downloaded), so the example is skipped here:

    >>> df = ci.datasets.load_metabric()  # doctest: +SKIP
    >>> df.shape  # doctest: +SKIP
    (1904, 11)
    >>> list(df.columns)  # doctest: +SKIP
    ['x0', 'x1', 'x2', 'x3', 'x4', 'x5', 'x6', 'x7', 'x8', 'duration', 'event']

    Where the file is cached when downloaded:

    >>> (ci.datasets.cache_dir() / "metabric.csv").name
    'metabric.csv'
    """
    return load_deepsurv("metabric", path, download)


def load_support(path=None, download=None) -> pd.DataFrame:
    """SUPPORT from the DeepSurv files: 8873 rows, covariates ``x0..x13``.

    ``load_deepsurv("support", path, download)``.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A file, or a folder holding the file, instead of the default places; with a
        ``path`` nothing is downloaded.
    download : bool, optional
        Fetch the data set when it is found nowhere. Default: true unless the
        environment variable ``COXINFLUENCE_NO_DOWNLOAD`` is set.

    Returns
    -------
    pandas.DataFrame
        Columns ``x0..x13``, ``duration``, ``event``.

    Raises
    ------
    FileNotFoundError
        The data set is nowhere and was not downloaded.

    See Also
    --------
    load_deepsurv : where the file is looked for.
    paper_split : the paper's split of it.

    Examples
    --------
    The real file is needed (found in the places of :func:`find_deepsurv_file`, or
    downloaded), so the example is skipped here:

    >>> ci.datasets.load_support().shape  # doctest: +SKIP
    (8873, 16)

    Where the file is cached when downloaded:

    >>> (ci.datasets.cache_dir() / "support.csv").name
    'support.csv'
    """
    return load_deepsurv("support", path, download)


def load_gbsg2() -> pd.DataFrame:
    """lifelines' bundled GBSG2 breast-cancer data (686 rows; no download).

    Returns
    -------
    pandas.DataFrame
        ``lifelines.datasets.load_gbsg2()``: covariates ``horTh``, ``age``, ``menostat``,
        ``tsize``, ``tgrade``, ``pnodes``, ``progrec``, ``estrec``; follow-up ``time``
        (days) and event indicator ``cens``.

    See Also
    --------
    load_deepsurv : the DeepSurv data sets.

    Examples
    --------
    >>> gbsg2 = ci.datasets.load_gbsg2()
    >>> gbsg2.shape
    (686, 10)
    >>> list(gbsg2.columns)
    ['horTh', 'age', 'menostat', 'tsize', 'tgrade', 'pnodes', 'progrec', 'estrec', 'time',
     'cens']
    """
    from lifelines.datasets import load_gbsg2 as _load
    return _load()


@dataclass
class Split:
    """The paper's train / validation / test split of a DeepSurv data set.

    Made by :func:`paper_split`.

    Parameters
    ----------
    train : pandas.DataFrame
        The training rows (the covariates, ``duration``, ``event``), with the original
        row labels.
    val : pandas.DataFrame
        The validation rows.
    test : pandas.DataFrame
        The test rows.
    covariates : list of str
        The covariates' column names.

    See Also
    --------
    paper_split : the split of the paper.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x0": rng.normal(size=10), "duration": np.arange(1.0, 11.0),
    ...                    "event": np.ones(10, dtype=int)})
    >>> split = ci.datasets.Split(train=df[:6], val=df[6:8], test=df[8:], covariates=["x0"])
    >>> X, time, event = split.arrays("test")
    >>> X.shape, time.tolist(), event.tolist()
    ((2, 1), [9.0, 10.0], [1, 1])
    """

    train: pd.DataFrame
    val: pd.DataFrame
    test: pd.DataFrame
    covariates: list

    def arrays(self, part="train"):
        """The covariates, durations and events of one part as arrays.

        Parameters
        ----------
        part : {"train", "val", "test"}, default "train"
            The part of the split.

        Returns
        -------
        X : numpy.ndarray
            ``(n, d)`` covariates, in the order of ``covariates``.
        time : numpy.ndarray
            ``(n,)`` durations.
        event : numpy.ndarray
            ``(n,)`` event indicators.

        Examples
        --------
        >>> df = pd.DataFrame({"x0": [0.5, 1.5, 2.5], "duration": [3.0, 1.0, 2.0],
        ...                    "event": [1, 0, 1]})
        >>> split = ci.datasets.Split(train=df, val=df[:0], test=df[:0], covariates=["x0"])
        >>> X, time, event = split.arrays()
        >>> X.ravel().tolist(), time.tolist(), event.tolist()
        ([0.5, 1.5, 2.5], [3.0, 1.0, 2.0], [1, 0, 1])
        """
        df = getattr(self, part)
        return (df[self.covariates].to_numpy(), df["duration"].to_numpy(),
                df["event"].to_numpy())


def paper_split(name, path=None, seed=0, standardize=True) -> Split:
    """The paper's split and preprocessing of the DeepSurv data set ``name``.

    The paper's public code (pycox style): ``np.random.seed(seed)`` (here a
    ``RandomState(seed)``: the same draws without touching the caller's global random
    state); test = a 20% sample; validation = 20% of the rest; the training set the
    remainder. With ``standardize``, the paper's columns (METABRIC ``x0, x1, x2, x3, x8``;
    SUPPORT ``x0, x2, x3, x6..x13``; other data sets none) are standardised with the
    training set's mean and (population) standard deviation.

    Parameters
    ----------
    name : str
        The data set (:func:`load_deepsurv`): ``"metabric"`` or ``"support"`` for the
        paper's preprocessing.
    path : str or os.PathLike, optional
        Where to read it from, as for :func:`load_deepsurv`.
    seed : int, default 0
        The seed of the paper's sampling.
    standardize : bool, default True
        Standardise the paper's columns with the training set's mean and standard
        deviation (``ddof=0``).

    Returns
    -------
    Split
        ``train``, ``val`` and ``test`` DataFrames (with the data set's row labels) and
        the list of ``covariates``.

    Raises
    ------
    FileNotFoundError
        The data set is nowhere and was not downloaded.

    See Also
    --------
    load_deepsurv : the raw data set.

    Notes
    -----
    METABRIC (1904 rows) gives 1218 training rows and SUPPORT (8873) 5678: the counts this
    procedure gives (pandas rounds ``frac * n``). The paper's appendix table says 1217 and
    5677, one fewer each; its text does not say why.

    Examples
    --------
    A toy data set in METABRIC's layout, in a temporary folder:

    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = Path(tmp.name)
    >>> rng = np.random.default_rng(0)
    >>> toy = pd.DataFrame(rng.normal(size=(100, 9)), columns=[f"x{j}" for j in range(9)])
    >>> toy["duration"] = rng.exponential(100.0, size=100)
    >>> toy["event"] = rng.integers(0, 2, size=100)
    >>> toy.to_csv(folder / "metabric.csv", index=False)
    >>> split = ci.datasets.paper_split("metabric", path=folder)
    >>> len(split.train), len(split.val), len(split.test)
    (64, 16, 20)
    >>> x0 = split.train["x0"]
    >>> bool(np.isclose(x0.mean(), 0)), bool(np.isclose(x0.std(ddof=0), 1))
    (True, True)
    >>> tmp.cleanup()

    The paper's METABRIC needs the real file (found, or downloaded), so it is skipped
    here:

    >>> split = ci.datasets.paper_split("metabric")  # doctest: +SKIP
    >>> len(split.train), len(split.val), len(split.test)  # doctest: +SKIP
    (1218, 305, 381)
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

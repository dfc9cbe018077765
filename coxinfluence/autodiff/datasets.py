"""Data for the autodiff examples: METABRIC paper split, karate club, synthetic
Mediamill-format ranking data.

Nothing here is bundled: METABRIC is read from ``path``, else ``$COXINFLUENCE_DATA``,
else ``../shared/data`` relative to the repository root (file
``deepsurv/metabric.csv`` below that folder).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["metabric_path", "metabric_split", "karate_graph", "synthetic_mediamill"]

_REPO = Path(__file__).resolve().parents[2]


def metabric_path(path=None) -> Path:
    """Locate ``metabric.csv`` (a file, or a folder holding it or ``deepsurv/`` with it)."""
    cands = []
    for base in (path, os.environ.get("COXINFLUENCE_DATA"), _REPO.parent / "shared" / "data"):
        if base is None:
            continue
        b = Path(base)
        cands += [b, b / "metabric.csv", b / "deepsurv" / "metabric.csv"]
    for c in cands:
        if c.is_file():
            return c
    raise FileNotFoundError(
        "metabric.csv not found; pass path= or set COXINFLUENCE_DATA to the folder "
        f"holding deepsurv/metabric.csv (looked at {[str(c) for c in cands]})")


def metabric_split(seed=0, path=None):
    """The paper's METABRIC split (its public code, pycox conventions).

    ``np.random.seed(seed)``; test = ``df.sample(frac=0.2)``; rest = df minus test;
    val = ``rest.sample(frac=0.2)``; train = rest minus val; columns x0, x1, x2, x3, x8
    standardized with the training mean and (population) standard deviation.
    Returns a dict of ``(X, time, event)`` tuples under ``train``, ``val``, ``test``."""
    import pandas as pd

    df = pd.read_csv(metabric_path(path))
    np.random.seed(seed)
    test = df.sample(frac=0.2)
    rest = df.drop(test.index)
    val = rest.sample(frac=0.2)
    train = rest.drop(val.index)
    cols = [f"x{k}" for k in range(9)]
    std_cols = ["x0", "x1", "x2", "x3", "x8"]
    mu, sd = train[std_cols].mean(), train[std_cols].std(ddof=0)
    out = {}
    for name, part in (("train", train), ("val", val), ("test", test)):
        part = part.copy()
        part[std_cols] = (part[std_cols] - mu) / sd
        out[name] = (part[cols].to_numpy(np.float64), part["duration"].to_numpy(np.float64),
                     part["event"].to_numpy(np.float64))
    return out


def karate_graph():
    """Zachary's karate club (networkx), nodes 0..33."""
    import networkx as nx

    return nx.karate_club_graph()


def synthetic_mediamill(n_train=30993, n_test=12914, *, n_features=120, n_labels=101,
                        svd_dim=8, max_k=10, seed=0):
    """Synthetic multi-label data in the Mediamill format (Snoek et al. 2006):
    120 features, 101 labels, the same train/test sizes by default.  NOT the real
    Mediamill data (not available offline here).

    Generative model (seeded): latent z ~ N(0, I_10); features = z A + noise; label
    scores = z B + label popularity (Zipf-like) + Gumbel noise; the positive labels of
    a query are those with score above a per-query threshold (at least 1, at most
    ``max_k``), ranked by score - a top-k list as ListMLE needs.  Features are reduced
    to ``svd_dim`` dimensions by a truncated SVD of the training features (as the
    paper does with TruncatedSVD).  ``seed``: int or numpy Generator.

    Returns dict with ``F_train, R_train, F_test, R_test`` (rankings padded with -1).
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n = n_train + n_test
    q = 10
    z = rng.normal(size=(n, q))
    A = rng.normal(size=(q, n_features)) / np.sqrt(q)
    feats = z @ A + 0.5 * rng.normal(size=(n, n_features))
    B = rng.normal(size=(q, n_labels)) / np.sqrt(q) * 1.5
    pop = -np.log(np.arange(1, n_labels + 1)) * 1.0
    scores = z @ B + pop[rng.permutation(n_labels)] + rng.gumbel(size=(n, n_labels))
    order = np.argsort(-scores, axis=1)
    srt = np.take_along_axis(scores, order, axis=1)
    k = np.clip((srt > 1.0).sum(1), 1, max_k)
    R = np.where(np.arange(max_k)[None, :] < k[:, None], order[:, :max_k], -1)
    Ftr = feats[:n_train]
    _, _, Vt = np.linalg.svd(Ftr, full_matrices=False)
    P = Vt[:svd_dim].T
    F = feats @ P
    F = F / F[:n_train].std(0)
    return {"F_train": F[:n_train], "R_train": R[:n_train].astype(np.int64),
            "F_test": F[n_train:], "R_test": R[n_train:].astype(np.int64)}

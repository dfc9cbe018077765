"""Data for the autodiff examples: karate club, SYNTHETIC Mediamill- and
Delicious-format ranking data, a reader for the real Mediamill / Delicious files, and
the paper's preprocessing (truncated SVD to 8 features, sampled test queries and
items).

METABRIC comes from :func:`coxinfluence.datasets.paper_split` (the paper's split and
standardisation); nothing here is bundled or downloaded.

:func:`load_xc` reads the Extreme Classification Repository / LIBSVM multi-label text
format (Mediamill: 43907 points, 120 features, 101 labels; Delicious: 16105, 500, 983)::

    n_points n_features n_labels          <- header (XC repository files only)
    l1,l2,... f:v f:v ...                 <- one line per point; labels may be empty

:func:`labels_to_rankings` turns the label sets into the padded top-k lists that
:func:`coxinfluence.autodiff.losses.listmle` takes; :func:`truncated_svd` reduces the
features as the paper does (sklearn's ``TruncatedSVD``, written in numpy);
:func:`sample_subset` draws the 500 test queries and (Delicious) the 100 attributed
labels.  Every random function takes a seed or a ``numpy.random.Generator`` and never
touches numpy's global random state.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["karate_graph", "synthetic_mediamill", "synthetic_delicious", "load_xc", "XCData",
           "labels_to_rankings", "write_xc", "truncated_svd", "sample_subset"]


def _as_rng(seed):
    """A ``numpy.random.Generator`` from an int seed or a Generator (used as is).
    ``None`` and numpy's legacy global state are refused: every draw is reproducible."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed))
    raise TypeError(f"seed must be an int or a numpy.random.Generator, got {seed!r}")


def truncated_svd(X, k=8):
    """Top-``k`` right singular vectors of ``X`` (n, f), uncentred, as an (f, k) matrix
    ``V``; the reduced features are ``X @ V`` (= U_k S_k), for any rows projected on the
    components fitted to ``X``.  This is what ``sklearn.decomposition.TruncatedSVD(
    n_components=k)`` computes (the paper: "TruncatedSVD to reduce the feature
    dimension to 8"), exactly (LAPACK's SVD, not sklearn's default randomized one).
    Signs, arbitrary in an SVD, are fixed so that each column's entry of largest
    magnitude is positive."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError("X must be a 2-D array")
    k = int(k)
    if not 1 <= k <= min(X.shape):
        raise ValueError(f"k must be in [1, {min(X.shape)}], got {k}")
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    V = Vt[:k].T.copy()
    sign = np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(k)])
    return V * np.where(sign == 0, 1.0, sign)


def sample_subset(n, k, seed):
    """``k`` distinct indices of ``range(n)`` drawn uniformly without replacement
    (sorted), with ``seed`` (int or Generator): the paper's 500 test queries sampled
    from the test set and the 100 Delicious labels sampled from its 983.  ``k >= n``
    returns all ``n`` indices."""
    n, k = int(n), int(k)
    if n < 0 or k < 0:
        raise ValueError("n and k must be >= 0")
    if k >= n:
        return np.arange(n)
    return np.sort(_as_rng(seed).choice(n, size=k, replace=False))


@dataclass
class XCData:
    """A multi-label data set: dense float64 ``X`` (n, n_features) and ``labels``, a
    list of n int64 arrays (labels of each point, in file order)."""

    X: np.ndarray
    labels: list
    n_labels: int

    @property
    def n_points(self):
        return self.X.shape[0]


def _parse_int(tok, what, where):
    try:
        return int(tok)
    except ValueError:
        raise ValueError(f"{where}: {what} {tok!r} is not an integer") from None


def load_xc(path, *, zero_based="auto", n_features=None, n_labels=None) -> XCData:
    """Read an Extreme Classification Repository or LIBSVM multi-label text file.

    The first line is taken as the XC header ``n_points n_features n_labels`` when it
    consists of exactly three integers (no ``:`` and no ``,``); the file must then
    hold exactly ``n_points`` data lines and the header's sizes bound the indices.
    Without a header (plain LIBSVM) the sizes are ``n_features`` / ``n_labels`` when
    given, else one past the largest index seen.  Blank lines and ``#`` comments
    (whole line or trailing) are skipped; a line whose first token contains ``:`` has
    no labels.

    ``zero_based``: feature indices are 0-based (XC repository files) or 1-based
    (LIBSVM files).  ``"auto"``: 0-based when the file has the XC header (so an index
    equal to the header's ``n_features`` is an error); without a header 0-based only
    if some index is 0, else 1-based (the LIBSVM convention; the rule of
    scikit-learn's ``load_svmlight_file``).  Labels are always 0-based, as in both
    repositories.

    Raises ``ValueError`` naming the line for: a malformed header, a wrong number of
    points, a feature token without ``index:value``, a non-integer index or label, a
    non-numeric or non-finite value, an index or label out of range, a feature or
    label repeated within a line.
    """
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    path = Path(path)
    lines = path.read_text().splitlines()
    rows = []  # (lineno, labels, idx, vals)
    header = None
    first = True
    for lineno, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        toks = line.split()
        if first:
            first = False
            if len(toks) == 3 and all(":" not in t and "," not in t for t in toks):
                h = [_parse_int(t, "header field", f"{path}:{lineno}") for t in toks]
                if min(h) < 1:
                    raise ValueError(f"{path}:{lineno}: header sizes must be >= 1, got {h}")
                header = h
                continue
        where = f"{path}:{lineno}"
        if ":" in toks[0]:
            lab_tok, feats = "", toks
        else:
            lab_tok, feats = toks[0], toks[1:]
        labs = [] if lab_tok == "" else [
            _parse_int(t, "label", where) for t in lab_tok.split(",")]
        if any(lb < 0 for lb in labs):
            raise ValueError(f"{where}: negative label in {lab_tok!r}")
        if len(set(labs)) != len(labs):
            raise ValueError(f"{where}: a label is repeated in {lab_tok!r}")
        idx, vals = [], []
        for t in feats:
            k, sep, v = t.partition(":")
            if not sep or not k or not v:
                raise ValueError(f"{where}: feature token {t!r} is not index:value")
            idx.append(_parse_int(k, "feature index", where))
            try:
                fv = float(v)
            except ValueError:
                raise ValueError(f"{where}: feature value {v!r} is not a number") from None
            if not math.isfinite(fv):
                raise ValueError(f"{where}: feature value {v!r} is not finite")
            vals.append(fv)
        if len(set(idx)) != len(idx):
            raise ValueError(f"{where}: a feature index is repeated")
        rows.append((lineno, labs, idx, vals))
    if not rows:
        raise ValueError(f"{path}: no data lines")
    if header is not None:
        if len(rows) != header[0]:
            raise ValueError(f"{path}: header says {header[0]} points, found {len(rows)} "
                             "data lines")
        if n_features is not None and n_features != header[1] or \
                n_labels is not None and n_labels != header[2]:
            raise ValueError(f"{path}: n_features/n_labels arguments disagree with the "
                             f"header {header}")
        n_features, n_labels = header[1], header[2]
    all_idx = [k for _, _, idx, _ in rows for k in idx]
    lo = min(all_idx) if all_idx else 0
    hi = max(all_idx) if all_idx else 0
    if zero_based == "auto":
        zero_based = header is not None or lo == 0
    off = 0 if zero_based else 1
    if n_features is None:
        n_features = hi - off + 1 if all_idx else 0
    if n_labels is None:
        n_labels = max((max(lb) for _, lb, _, _ in rows if lb), default=-1) + 1
    X = np.zeros((len(rows), int(n_features)), dtype=np.float64)
    labels = []
    for r, (lineno, labs, idx, vals) in enumerate(rows):
        where = f"{path}:{lineno}"
        for k in idx:
            if not 0 <= k - off < n_features:
                raise ValueError(f"{where}: feature index {k} outside [{off}, "
                                 f"{n_features - 1 + off}] ({off}-based indices, "
                                 f"{n_features} features)")
        for lb in labs:
            if lb >= n_labels:
                raise ValueError(f"{where}: label {lb} outside [0, {n_labels - 1}]")
        if idx:
            X[r, np.asarray(idx) - off] = vals
        labels.append(np.asarray(labs, dtype=np.int64))
    return XCData(X=X, labels=labels, n_labels=int(n_labels))


def write_xc(path, X, labels, n_labels, *, header=True, zero_based=True, precision=17):
    """Write ``X`` (dense; zeros are left out) and label sets in the XC / LIBSVM text
    format (the inverse of :func:`load_xc`)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or len(labels) != X.shape[0]:
        raise ValueError("X must be 2-D with one label set per row")
    off = 0 if zero_based else 1
    out = [f"{X.shape[0]} {X.shape[1]} {int(n_labels)}"] if header else []
    for x, lab in zip(X, labels):
        nz = np.nonzero(x)[0]
        feats = " ".join(f"{k + off}:{x[k]:.{precision}g}" for k in nz)
        out.append((",".join(str(int(v)) for v in lab) + " " + feats).rstrip())
    Path(path).write_text("\n".join(out) + "\n")


def labels_to_rankings(labels, max_k=None):
    """Pad label lists into an int64 (n, k) ranking array (-1 = padding) for ListMLE,
    keeping each list's order and its first ``max_k`` labels; ``k`` is the longest
    (truncated) list.  Points without labels get an all -1 row (no ListMLE term)."""
    k = max((len(lb) for lb in labels), default=0)
    if max_k is not None:
        if int(max_k) < 1:
            raise ValueError(f"max_k must be >= 1, got {max_k!r}")
        k = min(k, int(max_k))
    R = np.full((len(labels), max(k, 1)), -1, dtype=np.int64)
    for r, lb in enumerate(labels):
        lb = np.asarray(lb, dtype=np.int64)[:k]
        R[r, :lb.size] = lb
    return R


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
    a query are those with score above 1 (one threshold for all queries; at least 1, at
    most ``max_k``), ranked by score - a top-k list as ListMLE needs (4.2 labels per
    point on average at the defaults; the real set has 4.4).  Features are reduced
    to ``svd_dim`` dimensions by :func:`truncated_svd` of the training features (as the
    paper does with TruncatedSVD) and scaled to unit training standard deviation.
    ``seed``: int or numpy Generator.

    Returns dict with ``F_train, R_train, F_test, R_test`` (rankings padded with -1).
    """
    rng = _as_rng(seed)
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
    return _split_svd(feats, R, n_train, svd_dim)


def _split_svd(feats, R, n_train, svd_dim):
    if svd_dim is not None:
        feats = feats @ truncated_svd(feats[:n_train], svd_dim)
        feats = feats / feats[:n_train].std(0)
    return {"F_train": feats[:n_train], "R_train": R[:n_train].astype(np.int64),
            "F_test": feats[n_train:], "R_test": R[n_train:].astype(np.int64)}


def synthetic_delicious(n_train=12920, n_test=3185, *, n_features=500, n_labels=983,
                        mean_labels=19.0, max_k=None, svd_dim=8, seed=0):
    """SYNTHETIC multi-label data in the Delicious format (Tsoumakas et al. 2008; Mulan /
    XC repository): 500 features, 983 labels, 12920 training and 3185 test points and
    about 19 labels per point by default - the real set's published shape.  NOT the
    real Delicious data (not available offline here; read the real file with
    :func:`load_xc`).

    Generative model (seeded), the one of :func:`synthetic_mediamill` at Delicious's
    shape: latent z ~ N(0, I_10); binary bag-of-words-like features
    ``1[z A + N(0, 0.25) > 1.5]``; label scores = z B + label popularity (Zipf-like, a
    random permutation of -log rank) + Gumbel noise; point i's labels are its top
    ``k_i`` labels by score, ranked by score, ``k_i = 1 + Poisson(mean_labels - 1)``
    clipped to ``[1, max_k]`` (``max_k=None``: ``n_labels``).  Features are reduced to
    ``svd_dim`` dimensions by :func:`truncated_svd` of the training features and scaled
    to unit training standard deviation (``svd_dim=None``: the raw binary features).
    ``seed``: int or numpy Generator.

    Returns dict with ``F_train, R_train, F_test, R_test`` (rankings padded with -1,
    ``R_*.shape[1]`` = the longest list).
    """
    rng = _as_rng(seed)
    if not 1.0 <= mean_labels <= n_labels:
        raise ValueError(f"mean_labels must be in [1, {n_labels}], got {mean_labels}")
    n = n_train + n_test
    q = 10
    z = rng.normal(size=(n, q))
    A = rng.normal(size=(q, n_features)) / np.sqrt(q)
    feats = (z @ A + 0.5 * rng.normal(size=(n, n_features)) > 1.5).astype(np.float64)
    B = rng.normal(size=(q, n_labels)) / np.sqrt(q) * 1.5
    pop = -np.log(np.arange(1, n_labels + 1))
    scores = z @ B + pop[rng.permutation(n_labels)] + rng.gumbel(size=(n, n_labels))
    cap = n_labels if max_k is None else min(int(max_k), n_labels)
    k = np.clip(1 + rng.poisson(mean_labels - 1.0, size=n), 1, cap)
    kmax = int(k.max())
    top = np.argpartition(-scores, kmax - 1, axis=1)[:, :kmax]
    top = np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, axis=1),
                                             axis=1, kind="stable"), axis=1)
    R = np.where(np.arange(kmax)[None, :] < k[:, None], top, -1)
    return _split_svd(feats, R, n_train, svd_dim)

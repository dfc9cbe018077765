"""Identifiability of the Cox model: the rank of the design centred within strata, for the
full data and with units deleted. The one home of every rank test of the package.

The partial likelihood is invariant to adding a per-stratum constant to a covariate, so
the coefficients are identified exactly when X centred within strata has full column rank.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import CoxInputError
from coxinfluence.numerics.rows import ROW_BLOCK, matmul_reduce_rows, matmul_rows
from coxinfluence.numerics.threads import for_row_blocks


def check_design(data):
    """Raise if a column is constant (within every stratum) or columns are collinear.

    The Cox partial likelihood is invariant to adding a per-stratum constant to a
    covariate, so identifiability is the rank of X centred within strata: its singular
    values, scaled by the column norms, must not fall below 1e-10 of the largest. The
    Gram matrix of the centred columns (in blocks of rows: no n x d temporary) settles
    every design whose condition number is below 1e5 (eigenvalue ratio above 1e-10, far
    from the 1e-20 of the test); the others get the singular values of the centred
    design itself, from a QR factorisation by blocks.
    """
    X, strata = data.X, data.strata
    d = data.d
    one = data.stratum_start.size == 1
    # one pass over blocks of rows: the Gram matrix, the column sums (one stratum) and
    # the largest |x| of each column
    means = np.zeros((1, d)) if one else stratum_mean_rows(data)
    # per block of rows: its Gram matrix, column sums and largest |x| (rows d, d + 1),
    # combined in block order below (the same bits on any number of threads)
    parts = np.zeros((-(-data.n // ROW_BLOCK), d + 2, d))

    def block(w, a, b):
        xb, part = X[a:b], parts[a // ROW_BLOCK]
        np.abs(xb).max(axis=0, out=part[d + 1])
        if one:
            part[:d] = matmul_reduce_rows(xb, xb)
            xb.sum(axis=0, out=part[d])
        else:
            xc = xb - np.take(means, strata[a:b], axis=0)
            part[:d] = matmul_reduce_rows(xc, xc)
    for_row_blocks(block, data.n, ROW_BLOCK)
    gram, total, top = np.zeros((d, d)), np.zeros(d), np.zeros(d)
    for part in parts:
        gram += part[:d]
        total += part[d]
        np.maximum(top, part[d + 1], out=top)
    if one:
        # X is centred at its column means (build_cox_data): the stratum mean is 0 up to
        # rounding, and X'X - n m m' loses nothing
        means[0] = total / data.n
        gram -= data.n * np.outer(means[0], means[0])
    scale = np.sqrt(np.maximum(np.diag(gram), 0.0))
    ref = np.maximum(top, 1.0)
    const = scale <= 1e-12 * ref * np.sqrt(data.n)
    if const.any():
        names = [data.columns[j] for j in np.flatnonzero(const)]
        within = " within every stratum" if data.strata.max() > 0 else ""
        raise CoxInputError(f"constant column(s){within}: {names}; the Cox model has no "
                            "intercept, remove them")
    ev = np.linalg.eigvalsh(gram / scale[:, None] / scale[None, :])
    if ev[0] > 1e-10 * ev[-1]:
        return
    R = np.zeros((0, d))
    for a in range(0, data.n, ROW_BLOCK):
        xc = (X[a:a + ROW_BLOCK] - means[strata[a:a + ROW_BLOCK]]) / scale
        R = np.linalg.qr(np.vstack([R, xc]), mode="r")
    _, sv, vt = np.linalg.svd(R)
    if sv[-1] <= 1e-10 * sv[0]:
        combo = np.flatnonzero(np.abs(vt[-1]) > 1e-6)
        names = [data.columns[j] for j in combo]
        raise CoxInputError(f"collinear columns: {names} are linearly dependent "
                            f"(condition number {sv[0] / max(sv[-1], 1e-300):.3g})")


def stratum_mean_rows(data):
    """(S, d) the covariate means of each stratum (rows are sorted by stratum)."""
    bounds = np.append(data.stratum_start, data.n)
    if bounds.size > 64:
        sums = np.add.reduceat(data.X, data.stratum_start, axis=0)
    else:       # X.sum(axis=0) per block: reduceat along rows is 10x slower per element
        sums = np.array([data.X[a:b].sum(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])
    return sums / np.diff(bounds)[:, None]


def stratum_means(data):
    # rows are sorted by stratum, so each stratum is one contiguous block
    return stratum_mean_rows(data)[data.strata]


def rows_whose_deletion_breaks_rank(data):
    """Sorted rows whose removal leaves the stratum-centred design rank deficient.

    With ``C = Xc' Xc`` the stratum-centred Gram matrix and ``v_i = x_i - mean_s(i)``,
    deleting row i gives ``C - n_s/(n_s - 1) v_i v_i'`` (rank-one downdate of a centred
    sum of squares), which is singular exactly when the leverage
    ``n_s/(n_s - 1) v_i' C^{-1} v_i`` reaches 1: for instance the only patient with a
    given level of a dummy covariate. O(n d^2).
    """
    Xc = data.X - stratum_means(data)
    # products over the n rows on one BLAS thread per block (numerics.rows)
    C = matmul_reduce_rows(Xc, Xc)
    counts = np.diff(np.append(data.stratum_start, data.n))[data.strata].astype(float)
    lev = np.einsum("ij,ij->i", Xc, matmul_rows(Xc, np.linalg.inv(C), np.empty(Xc.shape)))
    factor = np.where(counts > 1, counts / np.maximum(counts - 1, 1), 0.0)
    return 1.0 - factor * lev < 1e-9


def units_whose_deletion_breaks_rank(data, of_row, U):
    """For every unit: is ``X`` without its rows, centred within strata, rank deficient?
    From per-(unit, stratum) sums: O(n d^2 + U S d^2), plus O(U d^3) for the U
    eigenvalue problems."""
    X = data.X - stratum_means(data)           # centring does not change the rank test
    S = int(data.strata.max()) + 1
    d = data.d
    n_s = np.bincount(data.strata, minlength=S).astype(float)
    sum_s = np.zeros((S, d))
    np.add.at(sum_s, data.strata, X)
    gram = X.T @ X
    cell = of_row * S + data.strata
    n_us = np.bincount(cell, minlength=U * S).reshape(U, S).astype(float)
    sum_us = np.zeros((U * S, d))
    np.add.at(sum_us, cell, X)
    sum_us = sum_us.reshape(U, S, d)
    gram_u = np.zeros((U, d, d))
    np.add.at(gram_u, of_row, X[:, :, None] * X[:, None, :])
    rest_n = n_s[None, :] - n_us                                  # (U, S)
    rest_sum = sum_s[None, :, :] - sum_us                         # (U, S, d)
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.einsum("usi,usj,us->uij", rest_sum, rest_sum,
                         np.where(rest_n > 0, 1.0 / rest_n, 0.0))
    C = gram[None] - gram_u - corr
    scale = np.sqrt(np.maximum(np.diag(gram), 1e-300))
    Cn = C / scale[None, :, None] / scale[None, None, :]
    ev = np.linalg.eigvalsh(Cn)
    return ev[:, 0] <= 1e-9 * np.maximum(ev[:, -1], 1e-300)


def identifiable_columns(data):
    """Greedy: keep columns that add rank to the stratum-centred design."""
    Xc = data.X - stratum_means(data)
    keep = []
    for j in range(data.d):
        trial = Xc[:, keep + [j]]
        s = np.linalg.svd(trial / np.maximum(np.linalg.norm(trial, axis=0), 1e-300),
                          compute_uv=False)
        if s[-1] > 1e-10 * s[0] and np.linalg.norm(Xc[:, j]) > 1e-12:
            keep.append(j)
    return np.asarray(keep, dtype=int)


def is_rank_deficient(X, strata):
    """Is ``X`` (rows of several strata), centred within strata, of rank below its width?
    (the test of :func:`check_design`)."""
    if X.shape[0] <= X.shape[1]:
        return True
    Xc = X - pd.DataFrame(X).groupby(strata).transform("mean").to_numpy()
    scale = np.sqrt((Xc ** 2).sum(axis=0))
    ref = np.maximum(np.abs(X).max(axis=0), 1.0)
    if (scale <= 1e-12 * ref * np.sqrt(X.shape[0])).any():
        return True
    sv = np.linalg.svd(Xc / scale, compute_uv=False)
    return bool(sv[-1] <= 1e-10 * sv[0])

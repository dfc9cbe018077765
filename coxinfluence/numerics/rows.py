"""Passes over long arrays by blocks of rows: finite checks and matrix products whose bits
do not depend on the BLAS thread count.

No formula of the paper: numerics shared by the data, likelihood and influence layers.
"""
from __future__ import annotations

import numpy as np


def csr_matvecs_kernel():
    """scipy's compiled sparse (CSR) times dense-columns kernel, without the wrapper's
    checks and copies; None where a scipy version lacks it (callers fall back to the
    public API). Imported on first use: ``import scipy.sparse`` takes 0.1 s, which
    ``import coxinfluence`` does not pay."""
    try:
        from scipy.sparse._sparsetools import csr_matvecs
    except ImportError:                                       # pragma: no cover
        return None
    return csr_matvecs


# rows per block of the passes over long arrays (threads, finite checks, Gram passes)
ROW_BLOCK = 1 << 16


def all_finite(arr):
    """No NaN or inf in ``arr``, by blocks of rows (no n x d boolean temporary)."""
    return all(np.isfinite(arr[a:a + ROW_BLOCK]).all()
               for a in range(0, arr.shape[0], ROW_BLOCK))


# OpenBLAS runs a matrix product of at most 4 * 65536 multiply-adds on the calling thread
# (interface/gemm.c: GEMM_MULTITHREAD_THRESHOLD * SMP_THRESHOLD_MIN). Products over many
# rows are split into calls that small: the bits then do not depend on the BLAS thread
# count (a dask worker runs one BLAS thread, the serial run several), and no BLAS helper
# thread waits for a core on a loaded machine (measured there: a (32, 14) x (14, 5678)
# product 16 ms threaded, 0.5 ms on one thread).
SINGLE_THREAD_MADDS = 1 << 18


def matmul_rows(x, b, out):
    """``out = x @ b`` (x (n, k), b (k, m), k small) in blocks of rows of one BLAS thread
    each."""
    step = max(1, SINGLE_THREAD_MADDS // max(b.size, 1))
    for a in range(0, x.shape[0], step):
        np.matmul(x[a:a + step], b, out=out[a:a + step])
    return out


def matmul_reduce_rows(c, x, scale=None):
    """``c.T @ x`` (c (n, m), x (n, d), n long; with ``scale`` (n,): ``(scale c).T @ x``)
    as partial products over blocks of rows of one BLAS thread each, added in order."""
    n, m = c.shape
    step = max(1, SINGLE_THREAD_MADDS // max(m * x.shape[1], 1))
    out = np.zeros((m, x.shape[1]))
    for a in range(0, n, step):
        cb = c[a:a + step]
        if scale is not None:
            cb = cb * scale[a:a + step, None]
        out += cb.T @ x[a:a + step]
    return out


def block_diagonal(blocks):
    """The block-diagonal matrices of ``blocks``, square arrays ``(..., d_k, d_k)`` with
    the same leading shape: ``(..., d, d)``, ``d = sum d_k``, zero between blocks (the
    information of a loss summed over blocks of parameters: causes, transitions)."""
    blocks = [np.asarray(b, dtype=np.float64) for b in blocks]
    d = sum(b.shape[-1] for b in blocks)
    out = np.zeros(blocks[0].shape[:-2] + (d, d))
    k = 0
    for b in blocks:
        out[..., k:k + b.shape[-1], k:k + b.shape[-1]] = b
        k += b.shape[-1]
    return out


def sums_by_label(values, labels):
    """``(keys, sums)``: the columns of ``values`` (..., m) summed over each distinct
    integer label of ``labels`` (m,): ``keys`` the sorted labels, ``sums`` (..., len(keys))
    (each group summed on its own, in its columns' order: a stable sort, then
    ``np.add.reduceat``)."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return labels, np.zeros(np.shape(values)[:-1] + (0,))
    order = np.argsort(labels, kind="stable")
    keys, starts = np.unique(labels[order], return_index=True)
    return keys, np.add.reduceat(np.asarray(values)[..., order], starts, axis=-1)

"""Comparable pairs counted by sorting: the concordance's counts in O(n log n), O(n) memory.

The concordance (:func:`coxinfluence.evaluation.scores.concordance`) and its infinitesimal
jackknife need, for every test patient ``k``, the weighted concordant, discordant and tied
comparable pairs that contain ``k``. Comparing every pair costs ``O(E n)`` time; R's
``survival::concordance`` walks the patients in time order through a balanced binary
tree over the score ranks (``O(n log n)``). This module computes the same sums without a
per-patient loop: every sum "over the patients ``q`` with an earlier time and a lower
score than ``p``" is a dominance count, computed for all ``p`` at once by a merge sort
over the time order whose ``log2 n`` levels are each a few vectorised passes (the
offline form of the tree's walk); the sums over equal times or equal scores are group
sums after one sort.

Pairs: an event ``i`` and a patient ``j`` with ``T_j > T_i``, or ``T_j = T_i`` and ``j``
censored, weighted ``a_i v_j`` (``a_i``: the event's weight, its case weight times its
time weight, 0 for a censoring; ``v_j``: the case weight); concordant when ``s_i > s_j``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["pair_counts", "earlier_below"]


def earlier_below(rank, weights):
    """``sum_{q < p, rank_q < rank_p} w_q`` for every position ``p`` of a sequence.

    A merge sort over the positions, top down: at each level every block of the sequence,
    kept in rank order, is split into its halves, and each element of a right half adds
    the weights of the left half's elements of lower rank (a cumulative sum in rank
    order). Every pair ``q < p`` is counted at exactly one level.

    Parameters
    ----------
    rank : numpy.ndarray of int, shape (n,)
        The rank of each element, in sequence order.
    weights : numpy.ndarray, shape (m, n)
        One or more weight vectors, in sequence order.

    Returns
    -------
    numpy.ndarray, shape (m, n)
        The weighted count of the earlier elements of lower rank.

    Examples
    --------
    >>> from coxinfluence.evaluation.pair_counts import earlier_below
    >>> earlier_below(np.array([2, 0, 1, 1]), np.ones((1, 4)))
    array([[0., 0., 1., 1.]])
    """
    rank = np.asarray(rank)
    W = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    m, n = W.shape
    if n < 2:
        return np.zeros((m, n))
    # one block in (rank, -position) order: at a tied rank a later element comes first,
    # so the left half's elements before a right half's element are those of lower rank
    arr = np.lexsort((-np.arange(n), rank))
    # one 1-d array per weight vector (numpy's 1-d gathers and scatters are the fast ones)
    Wa = [w[arr] for w in W]
    acc = [np.zeros(n) for _ in range(m)]
    idx = np.arange(n)
    cum = np.zeros(n + 1)
    for level in range(int(n - 1).bit_length() - 1, -1, -1):
        # arr: the positions sorted by (block = p >> (level + 1), rank, -p); a block's
        # elements occupy the indices from its first position on (Wa, acc: in that order)
        left = ((arr >> level) & 1) == 0
        start = (idx >> (level + 1)) << (level + 1)
        right = ~left
        for w, c in zip(Wa, acc):
            np.cumsum(w * left, out=cum[1:])
            c += right * (cum[:-1] - cum[start])
        # split each block into its halves, each kept in order
        before_left = np.cumsum(left) - left
        base = before_left[start]
        dest = np.where(left, start + (before_left - base), idx - before_left + base
                        + (1 << level))
        arr = _moved(arr, dest)
        Wa = [_moved(w, dest) for w in Wa]
        acc = [_moved(c, dest) for c in acc]
    out = np.empty((m, n))
    for k in range(m):
        out[k, arr] = acc[k]
    return out


def _moved(x, dest):
    y = np.empty_like(x)
    y[dest] = x
    return y


def _groups(k1, k2, W):
    """Per element: the sums of ``W`` over the elements with the same ``k1`` and a lower
    ``k2``, and over those with the same ``k1`` and ``k2``."""
    m, n = W.shape
    order = np.argsort(k1 * (int(k2.max()) + 1) + k2)
    a, b = k1[order], k2[order]
    idx = np.arange(n)
    new1 = np.r_[True, a[1:] != a[:-1]]
    new2 = new1 | np.r_[True, b[1:] != b[:-1]]
    s1 = np.maximum.accumulate(np.where(new1, idx, 0))
    s2 = np.maximum.accumulate(np.where(new2, idx, 0))
    ends = np.r_[np.flatnonzero(new2)[1:], n]
    e2 = ends[np.cumsum(new2) - 1]
    cum = np.zeros(n + 1)
    lower, same = np.empty((m, n)), np.empty((m, n))
    for k in range(m):
        np.cumsum(W[k][order], out=cum[1:])
        lower[k][order] = cum[s2] - cum[s1]
        same[k][order] = cum[e2] - cum[s2]
    return lower, same


def _by_key(key, W, size):
    """Per element: the sums of ``W`` over the elements of a lower key, and of its key."""
    below, at = np.empty(W.shape), np.empty(W.shape)
    for k, w in enumerate(W):
        tot = np.bincount(key, weights=w, minlength=size)
        below[k] = (np.cumsum(tot) - tot)[key]
        at[k] = tot[key]
    return below, at


def pair_counts(time, event, score, a, v=None):
    """The weighted concordant, discordant and tied comparable pairs containing each
    patient (module docstring), in ``O(n log n)`` time and ``O(n)`` memory.

    Parameters
    ----------
    time : numpy.ndarray, shape (n,)
        Follow-up times.
    event : numpy.ndarray of bool, shape (n,)
        Events (True) or censorings.
    score : numpy.ndarray, shape (n,)
        Risk scores (larger: an earlier event).
    a : numpy.ndarray, shape (n,) or (K, n)
        Each event's pair weight (ignored for a censoring); several vectors at once
        (Harrell's and Uno's weights) share the sorting.
    v : numpy.ndarray, shape (n,), optional
        Each patient's case weight as the later member of a pair (default 1).

    Returns
    -------
    numpy.ndarray, shape (3, n) or (K, 3, n)
        ``c_k, d_k, x_k``: the weighted concordant, discordant and tied (in the score)
        pairs that contain patient ``k``, as the event or as the later patient; one
        block per row of ``a``.

    Examples
    --------
    >>> from coxinfluence.evaluation.pair_counts import pair_counts
    >>> time = np.array([1.0, 2.0, 3.0, 4.0])
    >>> event = np.array([True, True, False, True])
    >>> pair_counts(time, event, np.array([4.0, 3.0, 3.0, 1.0]), np.ones(4))
    array([[3., 2., 1., 2.],
           [0., 0., 0., 0.],
           [0., 1., 1., 0.]])
    """
    time = np.asarray(time, dtype=np.float64)
    event = np.asarray(event, dtype=bool)
    n = time.size
    single = np.ndim(a) == 1
    a = np.where(event, np.atleast_2d(np.asarray(a, dtype=np.float64)), 0.0)
    K = a.shape[0]
    if n == 0:
        return np.zeros((3, 0)) if single else np.zeros((K, 3, 0))
    v = np.ones(n) if v is None else np.asarray(v, dtype=np.float64)
    cens = ~event
    ut, g = np.unique(time, return_inverse=True)
    us, r = np.unique(np.asarray(score, dtype=np.float64), return_inverse=True)
    G, R = ut.size, us.size
    W = np.vstack([v, a, v * cens])                 # rows: v, a_1..a_K, v * censored
    m = K + 1
    # earlier times, lower score: the sequence in time order, at a tied time the higher
    # scores first (so a tied time never counts as earlier)
    seq = np.argsort(g * R + (R - 1 - r))
    lt_early = np.empty((m, n))
    for k, e in enumerate(earlier_below(r[seq], np.stack([w[seq] for w in W[:m]]))):
        lt_early[k][seq] = e
    eq_early, _ = _groups(r, g, W[:m])              # same score, earlier time
    all_early, all_same = _by_key(g, W, G)
    lt_same, eq_same = _groups(g, r, W)             # same time, lower / same score
    lt_tot, eq_tot = _by_key(r, W[:1], R)
    gt_early = all_early[:m] - lt_early - eq_early
    gt_same = all_same - lt_same - eq_same
    # later times (the event's partners), weighted v
    lt_late = lt_tot[0] - lt_early[0] - lt_same[0]
    eq_late = eq_tot[0] - eq_early[0] - eq_same[0]
    gt_late = v.sum() - lt_tot[0] - eq_tot[0] - gt_early[0] - gt_same[0]
    out = np.empty((K, 3, n))
    for k in range(K):
        ak, j = a[k], k + 1
        # as the event: partners later, or at the same time and censored (W[-1]);
        # as the later patient: events earlier, or at the same time when censored
        out[k, 0] = ak * (lt_late + lt_same[-1]) + v * (gt_early[j] + cens * gt_same[j])
        out[k, 1] = ak * (gt_late + gt_same[-1]) + v * (lt_early[j] + cens * lt_same[j])
        out[k, 2] = ak * (eq_late + eq_same[-1]) + v * (eq_early[j] + cens * eq_same[j])
    return out[0] if single else out

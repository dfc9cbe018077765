"""Risk-set sums of the Cox partial likelihood: the one kernel every Cox formula uses.

The loss is the *negative* log partial likelihood, summed over events
(``docs/conventions.md``), with R's weighted Efron (default) or Breslow ties and strata:

    L(theta) = sum_s sum_g [ -sum_{k in D_g} w_k eta_k
                             + m_g sum_{r=0}^{d_g-1} log(S0_g - c_r S0D_g) ],

    eta = X theta,  S0_g = sum_{j in R_g} w_j exp(eta_j),  S0D_g = sum_{k in D_g} w_k exp(eta_k),
    m_g = sum_{k in D_g} w_k / d_g,  c_r = r / d_g (Efron) or 0 (Breslow),

where ``R_g`` is the risk set (same stratum, time >= t_g, and with delayed entry
start < t_g: rows are at risk on (start, time]) and ``D_g`` the events at
``t_g`` (Therneau & Grambsch 2000, eq. 3.6; R survival ``coxfit6.c``; the paper's
Eq. of the partial likelihood, appendix "Cox Regression"). Its derivatives:

    grad L = -sum_events w_k x_k + sum_terms m (S1 - c S1D) / (S0 - c S0D)
    hess L =  sum_terms m [ (S2 - c S2D) / (S0 - c S0D) - a a' ],  a = (S1 - c S1D)/(S0 - c S0D)

:class:`RiskSets` evaluates these for a batch of ``B`` coefficient vectors, each with
its own :class:`~coxinfluence.data.deletion.Deletion` of rows (``deleted``): deleting rows is
the only way any refit, target or influence function of the package changes the data.
Every evaluation is vectorised over the sorted rows: one pass of cumulative sums per
stratum. Sums over terms of ``S1/S0`` and ``S2/S0`` are rewritten as sums over rows,
``sum_j coef_j x_j`` and ``X' diag(coef) X`` (:meth:`RiskSets.row_coefficients`), so
nothing of size K x d x d or B x n x d x d is formed; a batched Hessian (B > 1) uses the
cached row outer products ``CoxData.X_outer``, one (n, d*d) array.

Faster paths compute the same quantities (tests/test_perf_equivalence.py checks each
against the batched definition): one problem without delayed entry (a fit, its step
halvings, the influence functions' state) uses (n,) vectors and tie-group sums, so 10^7
rows never meet an (n, d) or (K, d) temporary; the refits' gradients are
:mod:`coxinfluence.likelihood.deletion_gradients`; the third derivative is
:mod:`coxinfluence.likelihood.third_derivative`. Products with ``X`` over many rows run as
one-thread BLAS calls (:mod:`coxinfluence.numerics.rows`).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from coxinfluence.data.cox_data import CoxData
from coxinfluence.data.deletion import Deletion
from coxinfluence.likelihood.terms import RiskSetState, Terms
from coxinfluence.numerics.rows import (
    ROW_BLOCK,
    csr_matvecs_kernel,
    matmul_reduce_rows,
    matmul_rows,
)
from coxinfluence.numerics.threads import for_row_blocks, n_threads

_PASS_MADDS = 1 << 19      # rows per block of the fit's pass over X: d^2 x rows madds


def guard_denominators(den, live):
    """In place: raise if a risk-set sum of a term with event weight (``live``) is not
    positive (it underflowed: diverging coefficients), and set the others, which carry
    no weight, to 1 so that ``m / den`` is 0 there."""
    if np.any(live & ~(den > 0)):
        raise FloatingPointError(
            "risk-set sum underflowed to 0: the linear predictor spans more than ~700; the "
            "coefficients are diverging (check for separation or extreme covariates)")
    den[~live] = 1.0


def _strata_blocks(starts, total):
    stops = np.append(starts[1:], total)
    return zip(starts, stops)


_STATE_CACHE_ROWS = 1 << 20


class RiskSets:
    """The risk-set structure of one sorted :class:`CoxData` and its kernels (module doc).

    All kernels take a leading batch axis ``B``; ``deleted`` (a :class:`Deletion` over the
    *sorted* rows, or None) removes rows per problem.
    """

    def __init__(self, data: CoxData):
        self.data = data
        self._derived = {}

    def __getstate__(self):
        # sent to a worker: the data only; the worker builds its own cached structures
        return {"data": self.data}

    def __setstate__(self, state):
        self.__init__(state["data"])

    def derived(self, key, build):
        """``build(self)``, computed once per :class:`RiskSets` (one per fit: ``fit.risk_sets``)
        and kept: structures of the data that other kernels derive (the refits' plan)."""
        if key not in self._derived:
            self._derived[key] = build(self)
        return self._derived[key]

    # ------------------------------------------------------------------ deletions
    def terms(self, deleted: Deletion | None = None) -> Terms:
        """Efron terms with the rows of ``deleted`` removed (all rows when None).

        Deleting an event row removes it from its tie group: ``d_g`` drops by one, the
        Efron fractions become ``r / (d_g - 1)``, the mean event weight is recomputed,
        and the group's last term (rank ``d_g - 1``) disappears. Terms are anonymous
        (they depend only on the rank and the group sums), so the ranks can stay fixed.
        Breslow's terms with a deleted row equal a zero weight; Efron's do not.
        """
        data = self.data
        if deleted is None:
            return Terms(data.weights, data.term_frac, data.term_mean_weight)
        P = deleted.presence
        if P.shape[1] != data.n:
            raise ValueError(f"the deletion is over {P.shape[1]} rows; the data has {data.n}")
        w = data.weights * P
        ev = data.event_rows
        tg = data.term_group
        G = data.n_groups
        B = P.shape[0]
        flat = (np.arange(B)[:, None] * G + tg[None, :]).ravel()
        d_b = np.bincount(flat, weights=P[:, ev].ravel(), minlength=B * G).reshape(B, G)
        wd_b = np.bincount(flat, weights=w[:, ev].ravel(), minlength=B * G).reshape(B, G)
        rank = data.term_rank
        d_term = d_b[:, tg]
        active = rank[None, :] < d_term
        safe_d = np.where(d_term > 0, d_term, 1.0)
        mean_weight = np.where(active, wd_b[:, tg] / safe_d, 0.0)
        frac = rank[None, :] / safe_d if data.ties == "efron" else np.zeros_like(mean_weight)
        return Terms(w, np.where(active, frac, 0.0), mean_weight)

    @cached_property
    def group_first_term(self):
        """(G + 1,) the first Efron term of every tie group (terms are ordered by group);
        entry G is K. A group without events has no terms: its entry is the next group's
        first term."""
        return np.searchsorted(self.data.term_group, np.arange(self.data.n_groups + 1),
                               side="left")

    @cached_property
    def deletion_term_ranges(self):
        """``(lo, hi)``: for each sorted row, the half-open range of Efron terms whose
        denominators hold the row other than as an event of the term's own tie group.

        Terms are ordered by tie group, i.e. by stratum and descending time; row i's risk
        sets are the groups from its own (inclusive, or exclusive when i is an event of it)
        to the last group of its stratum. Deleting row i removes ``w_i exp(eta_i)`` from
        exactly these denominators (and changes its own group's terms when it is an event).
        """
        data = self.data
        tg = data.term_group
        # a gather per row from the groups' first terms (a search per row costs 10x more
        # at 10^7 rows)
        term_start = self.group_first_term
        lo = term_start[data.group + (data.event > 0)]
        stratum_last_group = np.searchsorted(data.group_stratum,
                                             np.arange(data.stratum_start.size),
                                             side="right") - 1
        hi = term_start[stratum_last_group[data.strata] + 1]
        if data.entry is not None:      # not at risk at or before its entry time
            hi = np.minimum(hi, np.searchsorted(tg, data.entry.row_exit_group, side="left"))
        hi = np.maximum(hi, lo)
        if tg.size < 2 ** 31 - 1:       # term indices: int32 halves this cache at 10^7 rows
            return lo.astype(np.int32), hi.astype(np.int32)
        return lo, hi

    # -------------------------------------------------------------- cumulative sums
    @cached_property
    def _group_stratum_starts(self):
        gs = self.data.group_stratum
        return np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])

    @cached_property
    def _term_group_starts(self):
        tg = self.data.term_group
        return np.flatnonzero(np.r_[True, tg[1:] != tg[:-1]])

    def cumsum_within_strata(self, a: np.ndarray) -> np.ndarray:
        """Cumulative sum along axis 1 restarting at each stratum (rows are sorted)."""
        out = np.empty_like(a)
        for start, stop in _strata_blocks(self.data.stratum_start, self.data.n):
            np.cumsum(a[:, start:stop], axis=1, out=out[:, start:stop])
        return out

    def risk_set_sums(self, a: np.ndarray) -> np.ndarray:
        """``sum_{j in R_g} a[:, j]`` for every tie group g: (B, n[, d]) -> (B, G[, d]).

        Without delayed entry ``R_g`` is a prefix of the stratum block (time >= t_g);
        with it, the rows that enter at or after ``t_g`` are subtracted
        (:class:`coxinfluence.data.cox_data.EntryStructure`)."""
        data = self.data
        full = self.cumsum_within_strata(a)[:, data.group_end - 1]
        entry = data.entry
        if entry is None:
            return full
        late_cs = self.cumsum_within_strata(a[:, entry.order])
        has = entry.group_late_end > data.stratum_start[data.group_stratum]
        late = np.zeros_like(full)
        late[:, has] = late_cs[:, entry.group_late_end[has] - 1]
        return full - late

    def reverse_cumsum_groups(self, q: np.ndarray) -> np.ndarray:
        """``out[:, g] = sum of q[:, g']`` over groups g' >= g of the same stratum, i.e.
        over the event times at or before ``t_g`` (the risk sets that hold group g's rows)."""
        out = np.empty_like(q)
        for start, stop in _strata_blocks(self._group_stratum_starts, self.data.n_groups):
            out[:, start:stop] = np.cumsum(q[:, start:stop][:, ::-1], axis=1)[:, ::-1]
        return out

    def group_event_sums(self, r_events: np.ndarray) -> np.ndarray:
        """Sum over the events of each tie group: (B, K[, d]) -> (B, G[, d])."""
        data = self.data
        out = np.zeros((r_events.shape[0], data.n_groups) + r_events.shape[2:])
        starts = self._term_group_starts
        if not data.term_group.size:
            return out
        groups = data.term_group[starts]
        csr_matvecs = csr_matvecs_kernel()
        if r_events.ndim == 3 and csr_matvecs is not None:
            # (K, d) per problem: a sparse product runs along the terms (reduceat along a
            # middle axis is ~10x slower per element)
            K, d = r_events.shape[1:]
            indptr = np.append(starts, K).astype(np.int64)
            indices = np.arange(K, dtype=np.int64)
            ones = np.ones(K)
            part = np.zeros((starts.size, d))
            for b in range(r_events.shape[0]):
                part[...] = 0.0
                csr_matvecs(starts.size, K, d, indptr, indices, ones,
                             np.ascontiguousarray(r_events[b]).reshape(-1), part.reshape(-1))
                out[b, groups] = part
            return out
        out[:, groups] = np.add.reduceat(r_events, starts, axis=1)
        return out

    def sum_over_risk_sets(self, per_term, frac, rows=None):
        """For every row j: the sum of ``per_term[k]`` over the terms whose risk set holds
        j, less ``frac[k] * per_term[k]`` over the terms of j's own tie group when j is an
        event (Efron: an event of the group is only ``1 - c`` in the r-th denominator).

        ``per_term`` is (B, K) or (B, K, d); returns (B, n) or (B, n, d) in sorted row
        order, or only the sorted rows ``rows`` (B, len(rows)[, d]) with the same values.
        Row j lies in the risk set of every group at or after its own.
        """
        return self.totals_at_rows(self.risk_set_totals(per_term, frac), rows)

    def risk_set_totals(self, per_term, frac):
        """The first half of :meth:`sum_over_risk_sets`, kept by callers that read its
        sums at rows several times: per tie group g, ``Q[:, g]`` the sum of ``per_term``
        over the groups at or after g, and per group the sum of ``frac * per_term``
        (the Efron correction of its own events)."""
        frac = np.broadcast_to(frac, per_term.shape[:2]).reshape(
            per_term.shape[:2] + (1,) * (per_term.ndim - 2))
        q = self.group_event_sums(per_term)
        qc = self.group_event_sums(frac * per_term)
        return self.reverse_cumsum_groups(q), qc

    def totals_at_rows(self, totals, rows=None):
        """The second half of :meth:`sum_over_risk_sets`: its sums at every sorted row,
        or at the sorted rows ``rows``, from :meth:`risk_set_totals`."""
        data = self.data
        Q, qc = totals
        at = slice(None) if rows is None else np.asarray(rows, dtype=np.intp)
        out = Q[:, data.group[at]]
        if data.entry is not None:      # less the groups at or before the row's entry time
            Qp = np.concatenate([Q, np.zeros_like(Q[:, :1])], axis=1)
            out -= Qp[:, data.entry.row_exit_group[at]]
        if rows is None:
            out[:, data.event_rows] -= qc[:, data.term_group]
            return out
        term = np.full(data.n, -1, dtype=np.intp)       # each event row's term
        term[data.event_rows] = np.arange(data.event_rows.size)
        k = term[at]
        out[:, k >= 0] -= qc[:, data.term_group[k[k >= 0]]]
        return out

    # ------------------------------------------------------------------ the terms
    def risk(self, theta: np.ndarray, terms: Terms, blas=True):
        """Linear predictor, shifted risk scores and the Efron denominators of each term.

        Returns ``eta`` (B, n), ``r = w exp(eta - shift)`` (B, n), ``shift`` (B, 1) and
        ``den`` (B, K) = ``S0 - c S0D`` on the shifted scale (log-sum-exp: the loss is
        invariant to adding a constant to eta, so ``shift = max eta`` costs nothing).
        Raises ``FloatingPointError`` when a risk set's sum underflows to zero.
        """
        data = self.data
        if theta.shape[0] == 1:         # one thread (no multi-threaded gemv on 10^7 rows)
            eta = matmul_rows(data.X, theta.T, np.empty((data.n, 1))).reshape(1, data.n)
        else:
            eta = (matmul_rows(data.X, theta.T, np.empty((data.n, theta.shape[0]))).T
                   if blas else np.einsum("bd,nd->bn", theta, data.X))
        shift = eta.max(axis=1, keepdims=True)
        r = np.broadcast_to(terms.weights, eta.shape) * np.exp(eta - shift)
        S0 = self.risk_set_sums(r)
        S0D = self.group_event_sums(r[:, data.event_rows])
        tg = data.term_group
        den = S0[:, tg] - terms.frac * S0D[:, tg]
        guard_denominators(den, np.broadcast_to(terms.mean_weight, den.shape) > 0)
        return eta, r, shift, den

    def row_coefficients(self, r, den, terms: Terms):
        """``coef_j`` with ``sum_terms m (S1 - c S1D)/den = sum_j coef_j x_j`` (and likewise
        ``X' diag(coef) X`` for S2)."""
        m = np.broadcast_to(terms.mean_weight, den.shape)
        return r * self.sum_over_risk_sets(m / den, terms.frac)

    def term_means(self, r, den, frac):
        """``a_k = (S1 - c S1D) / (S0 - c S0D)`` of every term (B, K, d): the
        Efron-weighted covariate mean of its risk set. One problem without delayed entry
        (a fit, the influence functions' state) goes by :meth:`_term_means_one`, with no
        (n, d) temporary."""
        data = self.data
        if r.shape[0] == 1 and data.entry is None:
            return self._term_means_one(r[0], den.reshape(-1),
                                        np.broadcast_to(frac, den.shape).reshape(-1))[None]
        rx = r[:, :, None] * data.X[None, :, :]
        S1 = self.risk_set_sums(rx)
        S1D = self.group_event_sums(rx[:, data.event_rows])
        tg = data.term_group
        frac = np.broadcast_to(frac, den.shape)
        return (S1[:, tg] - frac[:, :, None] * S1D[:, tg]) / den[:, :, None]

    @cached_property
    def _segments(self):
        """Rows cut into segments, the events and then the censored rows of each tie group
        (events come first within a group): ``(starts, event_seg, censored_seg)``, the
        first row of every segment and each group's two segments (-1 when empty)."""
        data = self.data
        gs, ge, ne = data.group_start, data.group_end, data.group_n_events
        split = gs + ne
        both = (ne > 0) & (split < ge)               # a group with events and censored rows
        starts = np.empty(gs.size + int(both.sum()), dtype=gs.dtype)
        pos = np.arange(gs.size) + np.cumsum(both) - both     # slot of each group's start
        starts[pos] = gs
        starts[pos[both] + 1] = split[both]
        event_seg = np.where(ne > 0, pos, -1)
        censored_seg = np.where(split < ge, pos + both, -1)
        return starts, event_seg, censored_seg

    def _segment_sums_rx(self, r):
        """``sum r_j x_j`` over the rows of every segment (:attr:`_segments`), (S + 1, d)
        with a zero last row (the empty segment -1): one product of the sparse (S, n)
        matrix with ``r`` in row j's column of its segment and ``X`` (no (n, d)
        temporary; scipy's ``csr_matvecs`` runs along the rows of X)."""
        data = self.data
        S = self._segments[0].size
        out = np.zeros((S + 1, data.d))
        indptr, indices = self._segment_index
        csr_matvecs = csr_matvecs_kernel()
        if csr_matvecs is None:                              # pragma: no cover
            from scipy import sparse
            out[:S] = sparse.csr_matrix((r, indices, indptr), shape=(S, data.n)) @ data.X
        else:
            csr_matvecs(S, data.n, data.d, indptr, indices, np.ascontiguousarray(r),
                         data.X.reshape(-1), out[:S].reshape(-1))
        return out

    @cached_property
    def _segment_groups(self):
        """Per segment (:attr:`_segments`): its tie group, its number of rows, and whether
        it holds the group's events."""
        data = self.data
        starts, event_seg, _ = self._segments
        length = np.diff(np.append(starts, data.n))
        group = np.repeat(np.arange(data.n_groups), np.diff(np.append(
            np.searchsorted(starts, data.group_start), starts.size)))
        is_event = np.zeros(starts.size, dtype=bool)
        is_event[event_seg[event_seg >= 0]] = True
        return group, length, is_event

    @cached_property
    def _event_sum(self):
        """``sum_{events} w_j x_j`` (1, d) of the full data."""
        data = self.data
        return matmul_reduce_rows((data.event * data.weights)[:, None], data.X)

    @cached_property
    def _unit_weights(self):
        return bool(np.all(self.data.weights == 1.0))

    @cached_property
    def _segment_index(self):
        """CSR ``(indptr, indices)`` of the (segments x rows) matrix of :attr:`_segments`."""
        data = self.data
        dtype = np.int32 if data.n < 2 ** 31 - 1 else np.int64
        indptr = np.append(self._segments[0], data.n).astype(dtype)
        return indptr, np.arange(data.n, dtype=dtype)

    def _group_sums_rx(self, r):
        """Per tie group, ``sum r_j x_j`` over its rows and over its events, (G, d) each."""
        _, event_seg, censored_seg = self._segments
        seg = self._segment_sums_rx(r)                      # index -1: the zero row
        events = np.take(seg, event_seg, axis=0, mode="wrap")
        total = np.take(seg, censored_seg, axis=0, mode="wrap")
        total += events
        return total, events

    def _term_means_one(self, r, den, frac):
        """:meth:`term_means` of one problem (r (n,), den and frac (K,)) without delayed
        entry: the risk-set sums ``S1`` of the tie groups are cumulative sums over the
        groups of their sums of ``r x`` (:meth:`_group_sums_rx`); (K, d)."""
        return self.term_means_from_sums(self.term_sums(r, frac), den, frac)

    def term_sums(self, r, frac):
        """What the term means of one problem without delayed entry are formed from
        (:meth:`term_means_rows`): per tie group the risk-set sum ``S1`` (cumulative sums
        over the groups of their sums of ``r x``, :meth:`_group_sums_rx`) and the event
        sum ``S1D``, (G, d) each, and whether the Efron correction applies (the fractions
        given: a survival target's baseline may be Efron's on a Breslow fit)."""
        data = self.data
        S1, S1D = self._group_sums_rx(r)
        for start, stop in _strata_blocks(self._group_stratum_starts, data.n_groups):
            np.cumsum(S1[start:stop], axis=0, out=S1[start:stop])
        return S1, S1D, data.ties == "efron" or bool(np.any(frac))

    def term_means_rows(self, sums, den, frac, k, out=None):
        """``a_k = (S1 - c S1D) / den`` of the terms ``k`` (a slice or an index array)
        from :meth:`term_sums` ``sums``, (len(k), d) (into ``out`` when given): the same
        operations, so the same bits, for any set of terms."""
        S1, S1D, corrected = sums
        g = self.data.term_group[k]
        a = np.take(S1, g, axis=0, out=out)
        if corrected:
            a -= frac[k, None] * np.take(S1D, g, axis=0)
        a /= den[k, None]
        return a

    def term_means_from_sums(self, sums, den, frac):
        """All (K, d) term means from :meth:`term_sums` ``sums`` (blocks of terms on
        threads)."""
        data = self.data
        a = np.empty((data.term_group.size, data.d))

        def terms(w, k0, k1):                    # terms [k0, k1): disjoint rows of a
            self.term_means_rows(sums, den, frac, slice(k0, k1), out=a[k0:k1])
        for_row_blocks(terms, a.shape[0], ROW_BLOCK)
        return a

    def group_term_sums(self, term_rows, width, block=ROW_BLOCK):
        """:meth:`group_event_sums` of one problem's (K, width) per-term rows, the rows
        made by blocks of whole tie groups, ``term_rows(k0, k1)`` those of the terms
        ``[k0, k1)``: (G, width), the same bits (each group's terms are added in order,
        from zero), without the (K, width) array."""
        data = self.data
        out = np.zeros((data.n_groups, width))
        K = data.term_group.size
        if not K:
            return out
        starts = self._term_group_starts
        groups = data.term_group[starts]
        first = np.unique(np.searchsorted(starts, np.arange(0, K, block), side="right") - 1)
        bounds = np.append(first, starts.size)
        for i0, i1 in zip(bounds[:-1], bounds[1:]):
            k0 = int(starts[i0])
            k1 = int(starts[i1]) if i1 < starts.size else K
            rows = term_rows(k0, k1)
            local = starts[i0:i1] - k0
            csr_matvecs = csr_matvecs_kernel()
            if csr_matvecs is None:                              # pragma: no cover
                out[groups[i0:i1]] = np.add.reduceat(rows, local, axis=0)
                continue
            part = np.zeros((i1 - i0, width))
            csr_matvecs(i1 - i0, k1 - k0, width, np.append(local, k1 - k0).astype(np.int64),
                         np.arange(k1 - k0, dtype=np.int64), np.ones(k1 - k0),
                         np.ascontiguousarray(rows).reshape(-1), part.reshape(-1))
            out[groups[i0:i1]] = part
        return out

    def _loss_grad_hess_one(self, theta, terms, hess):
        """:meth:`loss_grad_hess` of one problem (theta (1, d)) without delayed entry: the
        same quantities from (n,) vectors and one pass over blocks of rows of ``X``, so
        the largest temporaries are a few (n,) vectors and (G, d) tie-group sums (a fit
        of 10^7 rows holds no (n, d) or (K, d) temporary); products with ``X`` as
        one-thread BLAS calls (bits independent of the BLAS thread count, as
        ``blas=False``).

        The Hessian's ``sum_k m_k a_k a_k'`` is summed per tie group: with
        ``a0 = S1/S0``, ``e = S0D a0 - S1D`` and ``t_k = c_k / den_k``, each of the group's
        terms has ``a_k = a0 + t_k e`` (``(A - cB)/(C - cD) = A/C + c (D A/C - B)/(C - cD)``),
        so the group contributes ``M0 a0 a0' + M1 (a0 e' + e a0') + M2 e e'`` with
        ``Mp = sum_k m_k t_k^p`` over its terms."""
        data = self.data
        X, n, d = data.X, data.n, data.d
        tg = data.term_group
        w = np.asarray(terms.weights).reshape(-1)
        unit = w is data.weights and self._unit_weights
        frac = np.asarray(terms.frac).reshape(-1)
        mw = np.asarray(terms.mean_weight).reshape(-1)
        starts, event_seg, censored_seg = self._segments
        seg_group, seg_len, seg_event = self._segment_groups
        eta = matmul_rows(X, theta.reshape(d, 1), np.empty((n, 1))).reshape(n)
        ew = data.event if unit else data.event * w          # w_j for events, else 0
        loss_events = -float(np.einsum("i,i->", ew, eta))     # one thread, fixed order
        shift = float(eta.max())
        r = eta
        r -= shift
        np.exp(r, out=r)
        if not unit:
            r *= w
        # segment sums of r: S0 (risk sets) and S0D (events) of every tie group
        seg = np.append(np.add.reduceat(r, starts), 0.0)     # index -1: an empty segment
        S0D = np.take(seg, event_seg)
        S0 = S0D + np.take(seg, censored_seg)
        for start, stop in _strata_blocks(self._group_stratum_starts, data.n_groups):
            np.cumsum(S0[start:stop], out=S0[start:stop])
        den = np.take(S0, tg)
        efron = data.ties == "efron"
        if efron:
            den -= frac * np.take(S0D, tg)
        if not den.min(initial=np.inf) > 0:
            guard_denominators(den, mw > 0)
        loss = loss_events + float(np.dot(mw, np.log(den))) + shift * float(mw.sum())
        # coef_j = r_j sum over the terms whose risk set holds j of m/den, less the Efron
        # correction c m/den over the terms of j's own group when j is an event: one value
        # per segment, repeated over its rows
        tstarts = self._term_group_starts
        q = mw / den
        Q = np.zeros(data.n_groups + 1)                      # index -1: rows in no group
        g_ev = tg[tstarts]
        Q[g_ev] = np.add.reduceat(q, tstarts)
        for start, stop in _strata_blocks(self._group_stratum_starts, data.n_groups):
            Q[start:stop] = np.cumsum(Q[start:stop][::-1])[::-1]
        val = np.take(Q, seg_group)
        if efron:
            qc = np.zeros(data.n_groups + 1)
            q *= frac
            qc[g_ev] = np.add.reduceat(q, tstarts)
            val -= np.where(seg_event, np.take(qc, seg_group), 0.0)
        coef = np.repeat(val, seg_len)
        coef *= r
        # gradient: sum_j coef_j x_j - sum_{events} w_j x_j
        event_sum = self._event_sum if unit else matmul_reduce_rows(ew[:, None], X)
        if not hess:
            grad = matmul_reduce_rows(coef[:, None], X) - event_sum
            return np.array([loss]), grad, None
        XcX, coef_x = self._row_pass(coef)      # one pass over X for both
        grad = coef_x[None, :] - event_sum
        S1, S1D = self._group_sums_rx(r)
        for start, stop in _strata_blocks(self._group_stratum_starts, data.n_groups):
            np.cumsum(S1[start:stop], axis=0, out=S1[start:stop])
        # per tie group with events: a0 = S1/S0, e = S0D a0 - S1D, Mp = sum m t^p
        g = g_ev
        starts = tstarts
        a0 = np.take(S1, g, axis=0)
        s0 = S0[g]
        a0 /= np.where(s0 > 0, s0, 1.0)[:, None]   # 0: every row of the risk set deleted
        M0 = np.add.reduceat(mw, starts)
        H = XcX - matmul_reduce_rows(a0, a0, scale=M0)
        if efron:
            t = frac / den
            mt = mw * t
            M1 = np.add.reduceat(mt, starts)
            M2 = np.add.reduceat(mt * t, starts)
            e = S0D[g, None] * a0
            e -= np.take(S1D, g, axis=0)
            cross = matmul_reduce_rows(a0, e, scale=M1)
            H -= cross + cross.T + matmul_reduce_rows(e, e, scale=M2)
        return np.array([loss]), grad, H[None]

    def _row_pass(self, coef):
        """``X' diag(coef) X`` (d, d) and ``X' coef`` (d,) in one pass over blocks of rows
        (one BLAS thread each; the block of ``coef x`` is summed while in cache)."""
        data = self.data
        X, n, d = data.X, data.n, data.d
        block = int(np.clip(_PASS_MADDS // (d * d), 256, ROW_BLOCK))
        starts = range(0, n, block)
        parts = np.empty((len(starts), d + 1, d))     # per block: X'cX and X'c
        tmps = [np.empty((min(block, n), d)) for _ in range(n_threads(n))]

        def one_block(w, a, b):
            xb = X[a:b]
            t = np.multiply(xb, coef[a:b, None], out=tmps[w][:b - a])
            part = parts[a // block]
            np.matmul(t.T, xb, out=part[:d])
            t.sum(axis=0, out=part[d])
        for_row_blocks(one_block, n, block, threads=len(tmps))
        total = np.zeros((d + 1, d))
        for part in parts:                            # added in block order: same bits
            total += part                             # on any number of threads
        return total[:d], total[d]

    # -------------------------------------------------------- loss, gradient, Hessian
    def loss_grad_hess(self, theta, deleted: Deletion | None = None, *, hess=True, blas=True,
                       terms: Terms | None = None, grad=True):
        """Loss (B,), gradient (B, d) and Hessian (B, d, d) of the negative log partial
        likelihood at ``theta`` (B, d), problem b without the rows ``deleted`` removes.

        ``terms`` (from :meth:`terms`) may be passed instead of ``deleted`` when they
        are reused across evaluations. ``grad=False`` (a batch): the loss alone, gradient
        and Hessian None. ``blas=False`` does every reduction over rows with
        einsum's single-threaded loops instead of BLAS, whose multi-threaded reductions
        round differently with the thread count: leave-one-out refits then give the same
        bits on a dask worker (one BLAS thread) as in the serial run.
        """
        data = self.data
        if terms is None:
            terms = self.terms(deleted)
        theta = np.atleast_2d(theta)
        if theta.shape[0] == 1 and data.entry is None:
            return self._loss_grad_hess_one(theta, terms, hess)
        eta, r, shift, den = self.risk(theta, terms, blas)
        m = np.broadcast_to(terms.mean_weight, den.shape)
        w = np.broadcast_to(terms.weights, eta.shape)
        ev = data.event_rows
        loss = (-(w[:, ev] * eta[:, ev]).sum(axis=1)
                + (m * (np.log(den) + shift)).sum(axis=1))
        if not grad:
            return loss, None, None
        coef = self.row_coefficients(r, den, terms)
        if blas:
            grad = coef @ data.X - w[:, ev] @ data.X[ev]
        else:
            grad = (np.einsum("bn,nd->bd", coef, data.X)
                    - np.einsum("bk,kd->bd", w[:, ev], data.X[ev]))
        if not hess:
            return loss, grad, None
        a = self.term_means(r, den, terms.frac)
        # X' diag(coef_b) X - sum_k m_k a_k a_k', as BLAS matrix products
        B, d = coef.shape[0], data.d
        if not blas:
            H = np.einsum("bn,ni,nj->bij", coef, data.X, data.X)
        elif B == 1:
            H = ((data.X.T * coef[0]) @ data.X)[None]
        else:
            H = (coef @ data.X_outer).reshape(B, d, d)
        H -= np.einsum("bki,bkj->bij", m[:, :, None] * a, a)
        return loss, grad, H

    def state(self, theta) -> RiskSetState:
        """:class:`RiskSetState` at one coefficient vector, all rows present. The last
        one is kept (its arrays read-only): the influence functions, flags and refits of
        one audit all read the state at ``theta_hat``. Not above ``_STATE_CACHE_ROWS``
        rows, where the VIF's peak memory comes first (10^7 rows: the kept state would
        add its (K, d) term means to the VIF's peak)."""
        key = np.asarray(theta, dtype=np.float64).tobytes()
        cached = self._derived.get("state")
        if cached is not None and cached[0] == key:
            return cached[1]
        state = self._state(theta)
        if self.data.n > _STATE_CACHE_ROWS:
            return state           # large data: memory first, each caller forms its own
        for a in (state.risk, state.den):       # (the term means are read-only)
            a.flags.writeable = False
        self._derived["state"] = (key, state)
        return state

    def _state(self, theta):
        terms = self.terms()
        theta = np.asarray(theta, dtype=np.float64)[None, :]
        eta, r, shift, den = self.risk(theta, terms)
        frac = np.broadcast_to(terms.frac, den.shape[1:])
        if self.data.entry is None:   # the term means formed when read, or by blocks
            means, sums = None, self.term_sums(r[0], frac)
        else:
            means, sums = self.term_means(r, den, terms.frac)[0], None
        return RiskSetState(risk=r[0], den=den[0], means=means, group_sums=sums,
                            mean_weight=np.broadcast_to(terms.mean_weight, den.shape[1:]),
                            frac=frac, weights=self.data.weights, risk_sets=self)

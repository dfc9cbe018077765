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
its own :class:`~coxinfluence.deletion.Deletion` of rows (``deleted``): deleting rows is
the only way any refit, target or influence function of the package changes the data.
Every evaluation is vectorised over the sorted rows: one pass of cumulative sums per
stratum. Sums over terms of ``S1/S0`` and ``S2/S0`` are rewritten as sums over rows,
``sum_j coef_j x_j`` and ``X' diag(coef) X`` (:meth:`RiskSets.row_coefficients`), so
nothing of size K x d x d or B x n x d x d is formed; a batched Hessian (B > 1) uses the
cached row outer products ``CoxData.X_outer``, one (n, d*d) array.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._data import CoxData
from .deletion import Deletion


@dataclass(frozen=True)
class Terms:
    """Efron terms for a batch: fraction ``c`` and weight ``m`` of each event term.

    ``frac`` and ``mean_weight`` have shape (B, K) or (K,) (broadcast over B);
    ``weights`` are the effective row weights (B, n) or (n,) (zero for deleted rows).
    """

    weights: np.ndarray
    frac: np.ndarray
    mean_weight: np.ndarray

    def take(self, idx):
        """The terms of the problems ``idx`` of a batch."""
        def pick(a):
            return a[idx] if a.ndim == 2 else a     # (K,) or (n,) are shared by the batch
        return Terms(pick(self.weights), pick(self.frac), pick(self.mean_weight))


@dataclass(frozen=True)
class RiskSetState:
    """Risk-set quantities at one ``theta`` (batch axis dropped), shared by the
    influence functions. Scores are on the shifted scale ``exp(eta - shift)``;
    ``den`` and ``term_mean`` are per Efron term (see :meth:`RiskSets.risk`,
    :meth:`RiskSets.term_means`)."""

    score: np.ndarray        # (n,) exp(eta - shift)
    risk: np.ndarray         # (n,) w * score
    den: np.ndarray          # (K,) S0 - c S0D
    term_mean: np.ndarray    # (K, d) a_k
    mean_weight: np.ndarray  # (K,) m_k
    frac: np.ndarray         # (K,) c_k


def _strata_blocks(starts, total):
    stops = np.append(starts[1:], total)
    return zip(starts, stops)


class RiskSets:
    """The risk-set structure of one sorted :class:`CoxData` and its kernels (module doc).

    All kernels take a leading batch axis ``B``; ``deleted`` (a :class:`Deletion` over the
    *sorted* rows, or None) removes rows per problem.
    """

    def __init__(self, data: CoxData):
        self.data = data

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
        first = data.group + (data.event > 0)
        lo = np.searchsorted(tg, first, side="left")
        stratum_last_group = np.searchsorted(data.group_stratum, data.strata, side="right") - 1
        hi = np.searchsorted(tg, stratum_last_group, side="right")
        if data.entry is not None:      # not at risk at or before its entry time
            hi = np.minimum(hi, np.searchsorted(tg, data.entry.row_exit_group, side="left"))
        return lo, np.maximum(hi, lo)

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
        (:class:`coxinfluence._data.EntryStructure`)."""
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
        if data.term_group.size:
            out[:, data.term_group[starts]] = np.add.reduceat(r_events, starts, axis=1)
        return out

    def sum_over_risk_sets(self, per_term, frac):
        """For every row j: the sum of ``per_term[k]`` over the terms whose risk set holds
        j, less ``frac[k] * per_term[k]`` over the terms of j's own tie group when j is an
        event (Efron: an event of the group is only ``1 - c`` in the r-th denominator).

        ``per_term`` is (B, K) or (B, K, d); returns (B, n) or (B, n, d) in sorted row
        order. Row j lies in the risk set of every group at or after its own.
        """
        data = self.data
        frac = np.broadcast_to(frac, per_term.shape[:2]).reshape(
            per_term.shape[:2] + (1,) * (per_term.ndim - 2))
        q = self.group_event_sums(per_term)
        qc = self.group_event_sums(frac * per_term)
        Q = self.reverse_cumsum_groups(q)
        out = Q[:, data.group]
        if data.entry is not None:      # less the groups at or before the row's entry time
            Qp = np.concatenate([Q, np.zeros_like(Q[:, :1])], axis=1)
            out -= Qp[:, data.entry.row_exit_group]
        out[:, data.event_rows] -= qc[:, data.term_group]
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
        eta = theta @ data.X.T if blas else np.einsum("bd,nd->bn", theta, data.X)
        shift = eta.max(axis=1, keepdims=True)
        r = np.broadcast_to(terms.weights, eta.shape) * np.exp(eta - shift)
        S0 = self.risk_set_sums(r)
        S0D = self.group_event_sums(r[:, data.event_rows])
        tg = data.term_group
        den = S0[:, tg] - terms.frac * S0D[:, tg]
        live = np.broadcast_to(terms.mean_weight, den.shape) > 0
        if np.any(live & ~(den > 0)):
            raise FloatingPointError(
                "risk-set sum underflowed to 0: the linear predictor spans more than ~700; "
                "the coefficients are diverging (check for separation or extreme covariates)")
        den = np.where(live, den, 1.0)
        return eta, r, shift, den

    def row_coefficients(self, r, den, terms: Terms):
        """``coef_j`` with ``sum_terms m (S1 - c S1D)/den = sum_j coef_j x_j`` (and likewise
        ``X' diag(coef) X`` for S2)."""
        m = np.broadcast_to(terms.mean_weight, den.shape)
        return r * self.sum_over_risk_sets(m / den, terms.frac)

    def term_means(self, r, den, frac):
        """``a_k = (S1 - c S1D) / (S0 - c S0D)`` of every term (B, K, d): the
        Efron-weighted covariate mean of its risk set."""
        data = self.data
        rx = r[:, :, None] * data.X[None, :, :]
        S1 = self.risk_set_sums(rx)
        S1D = self.group_event_sums(rx[:, data.event_rows])
        tg = data.term_group
        frac = np.broadcast_to(frac, den.shape)
        return (S1[:, tg] - frac[:, :, None] * S1D[:, tg]) / den[:, :, None]

    # -------------------------------------------------------- loss, gradient, Hessian
    def loss_grad_hess(self, theta, deleted: Deletion | None = None, *, hess=True, blas=True,
                       terms: Terms | None = None):
        """Loss (B,), gradient (B, d) and Hessian (B, d, d) of the negative log partial
        likelihood at ``theta`` (B, d), problem b without the rows ``deleted`` removes.

        ``terms`` (from :meth:`terms`) may be passed instead of ``deleted`` when they
        are reused across evaluations. ``blas=False`` does every reduction over rows with
        einsum's single-threaded loops instead of BLAS, whose multi-threaded reductions
        round differently with the thread count: leave-one-out refits then give the same
        bits on a dask worker (one BLAS thread) as in the serial run.
        """
        data = self.data
        if terms is None:
            terms = self.terms(deleted)
        theta = np.atleast_2d(theta)
        eta, r, shift, den = self.risk(theta, terms, blas)
        m = np.broadcast_to(terms.mean_weight, den.shape)
        w = np.broadcast_to(terms.weights, eta.shape)
        ev = data.event_rows
        loss = (-(w[:, ev] * eta[:, ev]).sum(axis=1)
                + (m * (np.log(den) + shift)).sum(axis=1))
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
        """:class:`RiskSetState` at one coefficient vector, all rows present."""
        terms = self.terms()
        theta = np.asarray(theta, dtype=np.float64)[None, :]
        eta, r, shift, den = self.risk(theta, terms)
        a = self.term_means(r, den, terms.frac)
        return RiskSetState(score=np.exp(eta[0] - shift[0]), risk=r[0], den=den[0],
                            term_mean=a[0],
                            mean_weight=np.broadcast_to(terms.mean_weight, den.shape[1:]).copy(),
                            frac=np.broadcast_to(terms.frac, den.shape[1:]).copy())

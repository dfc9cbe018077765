"""The information split: each unit's part ``C_g`` of the Cox information, ``sum_g C_g = H``.

Every term k of the partial likelihood (an Efron term: one per event,
``docs/conventions.md``) is ``m_k log den_k(theta)``, a log-sum-exp over its risk set with
fixed weights, so its Hessian is the weighted covariance of the covariates,

    H_k = m_k sum_{j in R_k} v_jk u_j (x_j - a_k)(x_j - a_k)' / den_k,

with ``u_j = w_j exp(eta_j)``, ``a_k`` the term's (Efron-weighted) mean, ``den_k`` its
denominator ``S0 - c_k S0D``, ``m_k`` its mean event weight and ``v_jk = 1 - c_k`` when j
is an event of the term's own tie group, else 1 (Breslow: always 1). Hence ``H = sum_j
C_j`` exactly, with

    C_j = u_j [A_j x_j x_j' - x_j B_j' - B_j x_j' + M_j]   (positive semi-definite),

``A_j = sum_k v_jk q_k``, ``B_j = sum_k v_jk q_k a_k``, ``M_j = sum_k v_jk q_k a_k a_k'``
over the terms whose risk set holds row j, ``q_k = m_k / den_k``: sums over the risk sets
(:meth:`coxinfluence.likelihood.risk_sets.RiskSets.sum_over_risk_sets`, delayed entry
included). A unit's part ``C_g`` is the sum over its rows. All of them cost O(n d^2).

Its trace in the information metric needs no ``d x d`` matrix per row:

    tr(H^{-1} C_j) = u_j [A_j x_j' P x_j - 2 x_j' P B_j + sum_k v_jk q_k a_k' P a_k],

``P = H^{-1}``, one more sum over the risk sets. It bounds the unit's largest share of the
information (the eigenvalues of ``H^{-1/2} C_g H^{-1/2}`` are nonnegative), which lets the
``unstable`` flag form ``C_g`` only for the few units that may be flagged
(:func:`coxinfluence.influence_functions.stability.unstable_screened`).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.data.units import resolve_units
from coxinfluence.models.cox import check_fit
from coxinfluence.numerics.rows import matmul_rows

#: the risk-set totals of ``M`` (d(d+1)/2 columns per tie group) are kept between calls
#: of :meth:`InformationSplit.of` up to this many floats (64 MB), else formed per call
KEEP_TOTALS_FLOATS = 8_000_000

#: ``C_g`` of at most this many rows is summed over the rows' own terms
#: (:meth:`InformationSplit._m_direct`), of more from the sums over all risk sets
DIRECT_ROWS = 512

#: the columns of ``M`` formed at a time: at most this many floats per chunk
CHUNK_FLOATS = 4_000_000


class InformationSplit:
    """The units' parts ``C_g`` of the information of ``fit`` (module docstring), for the
    units asked: :meth:`of` forms them for some units, :meth:`traces` gives
    ``tr(H^{-1} C_g)`` of every unit without forming them. ``units``: a
    :class:`coxinfluence.data.units.Units` (default: the fit's units)."""

    def __init__(self, fit, units=None):
        self.fit = check_fit(fit)
        self.units = resolve_units(self.fit) if units is None else units
        st = self.fit.risk_sets.state(self.fit.coef)
        self.q = st.term_weight_over_den                                     # m_k/den_k
        self.a, self.u, self.frac = st.term_mean, st.risk, st.frac
        d = self.fit.data.d
        self._i, self._j = np.triu_indices(d)
        self._chunk = max(1, int(CHUNK_FLOATS // max(self.fit.data.n, self.q.size, 1)))
        self._kept = {}                        # chunk start -> risk-set totals of M
        self._first = st.totals_q_qa        # of [q, q a], shared with the third derivative

    def _totals(self, per_term):
        return self.fit.risk_sets.risk_set_totals(per_term[None], self.frac)

    def _at(self, totals, rows):
        return self.fit.risk_sets.totals_at_rows(totals, rows)[0]

    def _m_totals(self, c0):
        """Risk-set totals of the chunk of ``M``'s columns starting at ``c0``."""
        if c0 in self._kept:
            return self._kept[c0]
        i, j = self._i[c0:c0 + self._chunk], self._j[c0:c0 + self._chunk]
        totals = self._totals(self.q[:, None] * self.a[:, i] * self.a[:, j])
        groups = self.fit.data.n_groups + self.q.size
        if groups * self._i.size <= KEEP_TOTALS_FLOATS:
            self._kept[c0] = totals
        return totals

    def of(self, codes=None):
        """(m, d, d) ``C_g`` of the units ``codes`` (positions in ``units.labels``; None:
        every unit, (U, d, d)). ``M_j`` is read from sums over all the risk sets (about 8
        passes over ``d(d+1)/2`` columns, kept for the next call), or, for a few rows (at
        most ``DIRECT_ROWS``) while none are kept, summed over each row's own terms
        (:meth:`_m_direct`, one pass; equal to rounding)."""
        units, data = self.units, self.fit.data
        if codes is None:
            rows, out_of_row, m = None, None, units.n_units
        else:
            codes = np.asarray(codes, dtype=np.intp)
            wanted, inverse = np.unique(codes, return_inverse=True)
            rows = np.flatnonzero(np.isin(units.of_row, wanted))    # ascending: sorted rows
            out_of_row = np.searchsorted(wanted, units.of_row[rows])
            m = wanted.size
        at = slice(None) if rows is None else rows
        S = self._at(self._first, rows)
        A, B = S[:, 0], S[:, 1:]
        X, u = data.X[at], self.u[at]         # X centred (CoxData): keeps the sums small
        d = data.d
        direct = rows is not None and not self._kept and rows.size <= DIRECT_ROWS
        M_rows = self._m_direct(rows)[:, self._i, self._j] if direct else None
        out = np.empty((m, d, d))
        for c0 in range(0, self._i.size, self._chunk):
            i, j = self._i[c0:c0 + self._chunk], self._j[c0:c0 + self._chunk]
            M = M_rows[:, c0:c0 + i.size] if direct else self._at(self._m_totals(c0), rows)
            part = u[:, None] * (A[:, None] * X[:, i] * X[:, j] - X[:, i] * B[:, j]
                                 - B[:, i] * X[:, j] + M)
            if rows is None:
                part = units.collapse(part)
            else:
                summed = np.zeros((m, part.shape[1]))
                np.add.at(summed, out_of_row, part)      # rows in sorted order, as collapse
                part = summed
            out[:, i, j] = part
            out[:, j, i] = part
        return out if codes is None else out[inverse]

    def _m_direct(self, rows):
        """(c, d, d) ``M_j = sum_k v_jk q_k a_k a_k'`` of the sorted rows ``rows``: each row's
        terms are a run ``lo:hi``, from its own tie group's first term to the end of its
        deletion range (:attr:`~coxinfluence.likelihood.risk_sets.RiskSets.
        deletion_term_ranges`), so ``M_j = S(lo) - S(hi)`` with ``S(p) = sum_{k >= p} q_k
        a_k a_k'`` needed only at the runs' ends: the terms are cut there and each piece
        summed once (one pass, ``d^2`` per term), less ``c_k q_k a_k a_k'`` over the row's
        own tie group ``lo:own`` for an event (Efron)."""
        data, rs = self.fit.data, self.fit.risk_sets
        lo = rs.group_first_term[data.group[rows]]
        own = rs.group_first_term[data.group[rows] + 1]
        hi = rs.deletion_term_ranges[1][rows]
        K, d = self.q.size, data.d
        cuts, where = np.unique(np.concatenate([lo, hi, [K]]), return_inverse=True)
        qa = self.q[:, None] * self.a
        pieces = np.zeros((cuts.size, d, d))          # piece b: terms cuts[b]:cuts[b+1]
        for b in range(cuts.size - 1):
            k0, k1 = cuts[b], cuts[b + 1]
            pieces[b] = qa[k0:k1].T @ self.a[k0:k1]
        suffix = np.cumsum(pieces[::-1], axis=0)[::-1]      # S at each cut (0 at K)
        out = suffix[where[:rows.size]] - suffix[where[rows.size:2 * rows.size]]
        frac = np.broadcast_to(self.frac, self.q.shape)
        for r in np.flatnonzero(np.isin(rows, data.event_rows) & (own > lo)):
            k0, k1 = lo[r], own[r]                    # the row's own group's terms
            out[r] -= (qa[k0:k1] * frac[k0:k1, None]).T @ self.a[k0:k1]
        return out

    def traces(self):
        """(U,) ``tr(H^{-1} C_g)`` of every unit (module docstring), O(n d^2) without a
        ``d x d`` matrix per row; ``H`` is ``fit.information``."""
        data = self.fit.data
        P = np.linalg.inv(np.asarray(self.fit.information, dtype=np.float64))
        # (n, d) x (d, d) products on one BLAS thread each (numerics.rows: a threaded
        # product of this size waits for a core on a loaded machine)
        aPa = np.einsum("ki,ki->k", matmul_rows(self.a, P, np.empty(self.a.shape)), self.a)
        S = self._at(self._first, None)
        A, B = S[:, 0], S[:, 1:]
        s = self._at(self._totals((self.q * aPa)[:, None]), None)[:, 0]
        XP = matmul_rows(data.X, P, np.empty((data.n, data.d)))
        per_row = self.u * (A * np.einsum("ni,ni->n", XP, data.X)
                            - 2.0 * np.einsum("ni,ni->n", XP, B) + s)
        return self.units.collapse(per_row[:, None])[:, 0]


def information_split(fit, units=None):
    """(U, d, d) per-unit parts ``C_g`` of the information, ``sum_g C_g = H`` (module doc).

    ``units``: a :class:`coxinfluence.data.units.Units` (default: the fit's units, rows or the
    subjects of ``fit_cox(..., id=)``; clusters: ``resolve_units(fit, groups)``). Units in
    the influence functions' order (rows: the caller's order). ``H`` is the Hessian of the
    negative log partial likelihood at ``fit.coef``: ``fit.information`` for an unpenalised
    fit (a penalised fit's information adds the penalty's Hessian, which belongs to no
    unit). O(n d^2) time; the d(d+1)/2 entries are summed in chunks of bounded memory.
    """
    return InformationSplit(fit, units).of()

"""Gradients of many deletion problems at their own ``theta``: the kernel of the exact
leave-one-out refits. Equal to ``RiskSets.loss_grad_hess(theta, deleted)[1]`` of the
same deletions (tests/test_perf_equivalence.py), with few passes over (n, B) arrays.

Products with X go by one-thread BLAS calls (:func:`coxinfluence.numerics.rows.matmul_rows`):
the bits do not depend on the BLAS thread count, so refits give the same bits on a dask
worker (one BLAS thread) as in the serial run.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coxinfluence.likelihood.risk_sets import RiskSets, guard_denominators
from coxinfluence.numerics.rows import csr_matvecs_kernel, matmul_reduce_rows, matmul_rows
from coxinfluence.numerics.threads import thread_buffers

# ------------------------------------------------ gradients of leave-one-out refits
# Products with X go by one-thread BLAS calls (:func:`coxinfluence.data.cox_data.matmul_rows`):
# the bits do not depend on the BLAS thread count, so refits give the same bits on a dask
# worker (one BLAS thread) as in the serial run.


@dataclass(frozen=True)
class DeletionBatch:
    """B deletion problems for :class:`DeletionGradients`, sparse: problem ``problem[r]``
    deletes the sorted row ``rows[r]``. The Efron terms are the data's (fraction
    ``term_frac``, mean event weight ``term_mean_weight``) except where a problem deletes
    an event of the term's tie group (as :meth:`RiskSets.terms`): term ``patch_term[p]`` of
    problem ``patch_problem[p]`` has ``patch_frac[p]``, ``patch_weight[p]``.
    ``event_sum`` (B, d) is ``sum_{kept events} w_k x_k``."""

    problem: np.ndarray
    rows: np.ndarray
    patch_term: np.ndarray
    patch_problem: np.ndarray
    patch_frac: np.ndarray
    patch_weight: np.ndarray
    event_sum: np.ndarray

    @property
    def size(self):
        return self.event_sum.shape[0]

    def take(self, idx):
        """The problems ``idx`` (distinct) of the batch, renumbered 0..len(idx)-1."""
        idx = np.asarray(idx, dtype=np.intp)
        new = np.full(self.size, -1, dtype=np.intp)
        new[idx] = np.arange(idx.size)
        p = new[self.problem]
        keep = p >= 0
        q = new[self.patch_problem]
        kq = q >= 0
        return DeletionBatch(p[keep], self.rows[keep], self.patch_term[kq], q[kq],
                             self.patch_frac[kq], self.patch_weight[kq], self.event_sum[idx])


class _RefitPlan:
    """The structure :class:`DeletionGradients` sums with, built once per data.

    Rows are summed into *buckets*, one per tie group with events ("event group", in
    sorted order): a row's bucket is the first event group at or after its own tie group
    in its stratum, the first risk set that holds it (rows after their stratum's last
    event group are in no risk set). With delayed entry a row also enters, with minus
    sign, the bucket of the first event group it is no longer at risk for. The risk-set
    sum of event group e is then the cumulative sum of the buckets up to e within the
    stratum. Bucket and event sums are products with sparse 0/±1 matrices (``sums``), the
    sums over terms per event group likewise (``per_group``, rows in reversed order, so
    that a forward cumulative sum gives the suffix sums over the risk sets that hold a
    row)."""

    def __init__(self, risk_sets):
        from scipy import sparse
        data = risk_sets.data
        n, K = data.n, data.event_rows.size
        tg = data.term_group
        eg = np.unique(tg)                          # event groups (tie-group indices)
        E = eg.size
        eg_stratum = data.group_stratum[eg]
        self.E = E
        self.unit_weights = bool(np.all(data.weights == 1.0))

        def bucket(groups, strata):
            """First event group at or after tie group ``groups`` in stratum ``strata``;
            E when none."""
            b = np.searchsorted(eg, groups, side="left")
            ok = b < E
            ok[ok] = eg_stratum[b[ok]] == strata[ok]
            return np.where(ok, b, E)

        rows = np.arange(n)
        b_in = bucket(data.group, data.strata)
        cols, vals, rr = [rows], [np.ones(n)], [b_in]
        b_out = None
        if data.entry is not None:
            exit_group = data.entry.row_exit_group
            within = exit_group < data.n_groups
            b_out = np.full(n, E)
            b_out[within] = bucket(exit_group[within], data.strata[within])
            cols.append(rows)
            vals.append(-np.ones(n))
            rr.append(b_out)
        ev = data.event_rows
        cols.append(ev)
        vals.append(np.ones(ev.size))
        rr.append(E + np.searchsorted(eg, data.group[ev]))
        r_all, c_all, v_all = np.concatenate(rr), np.concatenate(cols), np.concatenate(vals)
        keep = np.ones(r_all.size, dtype=bool)      # drop rows in no risk set (bucket E)
        keep[:rr[0].size] = rr[0] != E
        if b_out is not None:
            keep[n:2 * n] = b_out != E
        self.sums = sparse.csr_matrix((v_all[keep], (r_all[keep], c_all[keep])),
                                      shape=(2 * E, n))
        bounds = np.append(np.flatnonzero(np.r_[True, eg_stratum[1:] != eg_stratum[:-1]]),
                           E) if E else np.zeros(1, dtype=np.intp)
        self.blocks = tuple((int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]))
        self.rev_blocks = tuple((E - b, E - a) for a, b in self.blocks[::-1])
        self.term_group = np.searchsorted(eg, tg)    # (K,) event group of each term
        self.per_group = sparse.csr_matrix((np.ones(K), (E - 1 - self.term_group,
                                                         np.arange(K))), shape=(E, K))
        # reversed index of the bucket (E: the zero row)
        row_in = np.where(b_in < E, E - 1 - b_in, E)
        # an event row gathers its group's row less the Efron correction (rows E+1+e)
        self.row_index = row_in.copy()
        self.row_index[ev] += E + 1
        self.row_out = None if b_out is None else np.where(b_out < E, E - 1 - b_out, E)
        self.log_weights = np.log(data.weights)
        self.X_aug = np.column_stack([data.X, self.log_weights, np.ones(n)])
        self.col_max = np.abs(data.X).max(axis=0)
        self.event_sum = matmul_reduce_rows((data.weights * data.event)[:, None], data.X)[0]
        self.term_of_row = np.full(n, -1, dtype=np.intp)
        self.term_of_row[ev] = np.arange(K)
        self.group_first_term = risk_sets.group_first_term[:-1]
        self.term_frac = data.term_frac[:, None]          # (K, 1): broadcast over problems
        self.term_weight = data.term_mean_weight[:, None]


class DeletionGradients:
    """Gradients of deletion problems (leave-one-out refits) at their own ``theta``: the
    ``RiskSets.loss_grad_hess(theta, deleted)[1]`` of the same deletions, with few passes
    over (n, B) arrays (rows major): the deleted rows' risk scores are zeroed (no presence
    masks); the risk-set and tie-group event sums come from one product with a sparse
    matrix and a cumulative sum over the event groups (:class:`_RefitPlan`), the sums over
    the terms that hold a row likewise; the products with ``X`` run as one-thread BLAS
    calls, so the bits do not depend on the BLAS thread count; work arrays are reused.
    An instance uses its thread's work arrays: one instance per thread."""

    def __init__(self, risk_sets: RiskSets, reference=None):
        self.data = data = risk_sets.data
        plan = risk_sets.derived("refit_plan", _RefitPlan)
        self.plan = plan
        self._buf = thread_buffers()
        self._ref = None
        if reference is not None:          # theta_0 of :meth:`_shift_bound`
            theta0 = np.asarray(reference, dtype=np.float64)
            eta0 = matmul_rows(data.X, theta0[:, None], np.empty((data.n, 1)))[:, 0]
            top = float((eta0 + plan.log_weights).max())
            self._ref = (theta0, top, plan.col_max)

    def batch(self, unit_of_row, units) -> DeletionBatch:
        """The :class:`DeletionBatch` whose problem b deletes every sorted row j with
        ``unit_of_row[j] == units[b]`` (as :meth:`Deletion.of_units`), its Efron terms
        recomputed as :meth:`RiskSets.terms` does, for the tie groups that lose an
        event only."""
        data, plan = self.data, self.plan
        unit_of_row = np.asarray(unit_of_row).reshape(-1)
        units = np.asarray(units).reshape(-1)
        B, K, G = units.size, data.event_rows.size, data.n_groups
        order = np.argsort(units, kind="stable")
        su = units[order]
        lo = np.searchsorted(su, unit_of_row, side="left")
        cnt = np.searchsorted(su, unit_of_row, side="right") - lo
        rows = np.repeat(np.arange(data.n), cnt)
        offset = np.arange(rows.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        problem = order[np.repeat(lo, cnt) + offset]
        event_sum = np.repeat(plan.event_sum[None, :], B, axis=0)
        ev = data.event[rows] > 0
        er, eb = rows[ev], problem[ev]
        k = b = frac = weight = np.zeros(0, dtype=np.intp)
        if er.size:
            w = data.weights
            np.subtract.at(event_sum, eb, w[er, None] * data.X[er])
            # every term of the tie groups that lose an event, for the problems losing it
            key = np.unique(eb * G + data.group[er])
            kb, kg = key // G, key % G
            dg = data.group_n_events[kg]
            rep = np.repeat(np.arange(key.size), dg)
            k = (np.repeat(plan.group_first_term[kg], dg) + np.arange(rep.size)
                 - np.repeat(np.cumsum(dg) - dg, dg))
            b = kb[rep]
            dead = np.isin(b * K + k, eb * K + plan.term_of_row[er])
            keep = (~dead).astype(np.float64)
            d_new = np.bincount(rep, weights=keep, minlength=key.size)[rep]
            w_new = np.bincount(rep, weights=w[data.event_rows[k]] * keep,
                                minlength=key.size)[rep]
            rank = data.term_rank[k]
            active = rank < d_new
            safe = np.where(d_new > 0, d_new, 1.0)
            weight = np.where(active, w_new / safe, 0.0)
            frac = (np.where(active, rank / safe, 0.0) if data.ties == "efron"
                    else np.zeros(k.size))
        return DeletionBatch(problem, rows, k, b, frac, weight, event_sum)

    def __call__(self, theta, batch: DeletionBatch):
        """Gradient (B, d) of problem b of ``batch`` at ``theta[b]``. Raises
        ``FloatingPointError`` as :meth:`RiskSets.risk` when a risk-set sum underflows."""
        theta = np.atleast_2d(theta)
        try:
            return self._gradient(theta, batch, self._shift_bound(theta))
        except FloatingPointError:
            return self._gradient(theta, batch, None)

    def _shift_bound(self, theta):
        """An upper bound of ``max_j (eta_j + log w_j)`` per problem, from the reference
        point: ``max_j (x_j theta_0 + log w_j) + sum_k max_j |x_jk| |theta_k - theta_0k|``
        (none without a reference). Subtracted in the same product as ``X theta``, it
        keeps ``exp`` from overflowing with no pass over the rows for the maximum; it is
        within ``2 sum_k max_j |x_jk| |theta_k - theta_0k|`` of the maximum."""
        if self._ref is None:
            return None
        theta0, top, col_max = self._ref
        return top + np.abs(theta - theta0) @ col_max

    def losses(self, theta):
        """The loss (B,) of the full data (no row deleted) at each ``theta[b]``,
        ``sum_k m_k log den_k(theta_b) - sum_{events} w_i x_i' theta_b``, from the same
        risk-set sums as the gradients: the objective at a batch of refits (their
        likelihood displacements), equal to ``RiskSets.loss_grad_hess(theta)[0]`` to
        rounding. Raises ``FloatingPointError`` as :meth:`__call__`."""
        theta = np.atleast_2d(theta)
        B, p = theta.shape[0], self.plan
        batch = DeletionBatch(*(np.zeros(0, dtype=np.intp),) * 4, np.zeros(0), np.zeros(0),
                              np.repeat(p.event_sum[None, :], B, axis=0))
        try:
            r, shift = self._scores(theta, batch, self._shift_bound(theta))
            den = self._denominators(r, batch)
        except FloatingPointError:
            r, shift = self._scores(theta, batch, None)
            den = self._denominators(r, batch)
        # guarded denominators of weightless terms are 1: their log adds nothing
        return (p.term_weight[:, 0] @ np.log(den) + p.term_weight.sum() * shift
                - theta @ p.event_sum)

    def _gradient(self, theta, batch, shift):
        r, _ = self._scores(theta, batch, shift)
        return self._finish(r, batch)

    def _scores(self, theta, batch, shift):
        """The risk scores ``r`` (n, B), ``w_j exp(eta_bj - shift_b)`` (deleted rows
        zero), and ``shift`` (B,): the given bound, or the largest ``eta + log w``."""
        data, p, buf = self.data, self.plan, self._buf
        B, n = theta.shape[0], data.n
        r = buf.get("r", (n, B))
        if shift is None:
            matmul_rows(data.X, theta.T, r)
            if not p.unit_weights:
                r += p.log_weights[:, None]
            shift = r.max(axis=0)
            r -= shift
        else:
            # [x_j, log w_j, 1] [theta_b, 1, -shift_b]' = eta_bj + log w_j - shift_b
            aug = np.column_stack([theta, np.ones(B), -shift])
            matmul_rows(p.X_aug, aug.T, r)
        np.exp(r, out=r)
        r[batch.rows, batch.problem] = 0.0
        return r, shift

    def _denominators(self, r, batch):
        """The terms' (Efron) denominators ``den`` (K, B), ``S0 - c S0D`` of each problem
        from the risk scores ``r`` (n, B); those of terms without event weight set to 1
        (:func:`guard_denominators`)."""
        data, p, buf = self.data, self.plan, self._buf
        n, B = r.shape
        E, K = p.E, data.event_rows.size
        # (2E, B): rows [0, E) the buckets, then their cumulative sums (the risk-set sums
        # S0 of the event groups); rows [E, 2E) the event groups' event sums S0D
        sums = _sparse_times(p.sums, r, buf.get("sums", (2 * E, B)))
        S0 = sums[:E]
        for a, b in p.blocks:
            _cumsum_rows(S0[a:b])
        den = np.take(S0, p.term_group, axis=0, mode="wrap", out=buf.get("den", (K, B)))
        pk, pb = batch.patch_term, batch.patch_problem
        t = buf.get("t", (K, B))
        if data.ties == "efron":            # den = S0 - c S0D
            np.take(sums, E + p.term_group, axis=0, mode="wrap", out=t)
            patched = t[pk, pb] * batch.patch_frac
            t *= p.term_frac
            t[pk, pb] = patched
            den -= t
        if den.min(initial=np.inf) <= 0:
            m = np.repeat(p.term_weight, B, axis=1)
            m[pk, pb] = batch.patch_weight
            guard_denominators(den, m > 0)
        return den

    def _finish(self, r, batch):
        """The gradient from the risk scores ``r`` (n, B) (deleted rows zero)."""
        data, p, buf = self.data, self.plan, self._buf
        n, B = r.shape
        E = p.E
        den = self._denominators(r, batch)
        pk, pb = batch.patch_term, batch.patch_problem
        t = buf.get("t", (den.shape[0], B))
        patched = batch.patch_weight / den[pk, pb]       # q = m / den
        q = np.divide(p.term_weight, den, out=den)
        q[pk, pb] = patched
        # Q rows [0, E): suffix sums of sum_k m_k / den_k over the reversed event groups;
        # row E: zero (rows in no risk set); rows E+1+e: the same less the Efron
        # correction sum_{k in group} c_k m_k / den_k, gathered by the group's events
        Q = buf.get("Q", (2 * E + 1, B))
        Q[E] = 0.0
        _sparse_times(p.per_group, q, Q[:E])
        for a, b in p.rev_blocks:
            _cumsum_rows(Q[a:b])
        if data.ties == "efron":
            patched = q[pk, pb] * batch.patch_frac
            fq = np.multiply(q, p.term_frac, out=t)
            fq[pk, pb] = patched
            np.subtract(Q[:E], _sparse_times(p.per_group, fq, buf.get("qc", (E, B))),
                        out=Q[E + 1:])
        else:
            Q[E + 1:] = Q[:E]
        coef = np.take(Q, p.row_index, axis=0, mode="wrap", out=buf.get("coef", (n, B)))
        if p.row_out is not None:
            coef -= np.take(Q, p.row_out, axis=0, mode="wrap", out=buf.get("out", (n, B)))
        coef *= r
        return matmul_reduce_rows(coef, data.X) - batch.event_sum


def _cumsum_rows(A, block=16):
    """``np.cumsum(A, axis=0, out=A)`` for a C-contiguous (m, B) block. numpy accumulates
    along axis 0 one column at a time (strided); for wide B adding whole rows, ``block``
    at a time, and then the blocks' running totals, is 1.5-2x faster. Same sums up to
    rounding (each entry is still a sum of the same terms, grouped by blocks)."""
    m = A.shape[0]
    if A.shape[1] < 128 or m < 4 * block:
        return np.cumsum(A, axis=0, out=A)
    full = m // block * block
    V = A[:full].reshape(m // block, block, A.shape[1])
    for i in range(1, block):
        np.add(V[:, i], V[:, i - 1], out=V[:, i])
    totals = np.cumsum(V[:, -1], axis=0)
    V[1:] += totals[:-1, None, :]
    if full < m:
        tail = A[full:]
        np.cumsum(tail, axis=0, out=tail)
        tail += totals[-1]
    return A


def _sparse_times(M, x, out):
    """``out[...] = M @ x`` for a CSR matrix ``M`` and a C-contiguous (k, B) ``x`` into the
    C-contiguous ``out``, without the fresh result array of ``M @ x`` (scipy's
    ``csr_matvecs`` accumulates into ``out``)."""
    out[...] = 0.0
    csr_matvecs = csr_matvecs_kernel()
    if csr_matvecs is None:
        out[...] = M @ x
    else:
        csr_matvecs(M.shape[0], M.shape[1], x.shape[1], M.indptr, M.indices, M.data,
                     x.reshape(-1), out.reshape(-1))
    return out

"""The Fine-Gray partial likelihood of one cause, with the censoring weights of R's
``cmprsk::crr``: loss, gradient and Hessian in closed form, batched over deletions, and
crr's sandwich scores.

**The model** (Fine & Gray 1999). ``status`` 0 is censored, ``1..K`` the causes; the model
is for one ``cause``. A subject who failed from another cause at ``T_j`` stays in the risk
set after ``T_j``, with the weight ``w_j(t) = G_g(t-) / G_g(T_j-)``, ``G_g`` the
Kaplan-Meier estimate of the censoring distribution of its censoring group ``g``
(``cengroup``). With ``e_j = exp(x_j'theta)`` and the distinct failure times ``t_k`` of the
cause (``d_k`` failures, Breslow's ties, as crr), the loss is

    L(theta) = sum_k [ d_k log S0_k ] - sum_{failures i} x_i'theta,
    S0_k = sum_{T_j >= t_k} e_j + sum_g G_g(t_k-) sum_{j in g, another cause, T_j < t_k}
                                                       e_j / G_g(T_j-),

minus crr's log pseudo-likelihood (``fit$loglik = -L(theta_hat)``). ``S1_k``, ``S2_k`` are
the same sums with ``e_j x_j`` and ``e_j x_j x_j'``.

**G as crr evaluates it** (its R code: ``survfit`` of the censorings per group, read by
``approx(..., method = "constant")`` at ``ftime * (1 - 100 eps)``): the left limit
``G_g(t-) = prod_{s < t} (1 - c_g(s) / Y_g(s))`` over the group's distinct times ``s``
(``c_g`` censored, ``Y_g`` at risk: times ``>= s``), and ``G_g(t-) = 0`` for ``t`` after the
group's last time. Times are compared exactly (crr's ``100 eps`` fudges and survfit's
``timefix`` merge times within ~1e-8 relative; such data are not supported).

**Derivatives, no expansion.** Every sum is a cumulative sum over the rows sorted by time:
the ordinary part a suffix sum, the weighted part ``G_g(t_k-) W_g(t_k)`` with ``W_g`` a
prefix sum of ``e_j / G_g(T_j-)`` over the group's competing subjects. The gradient and
Hessian are ``X' r - sum_{failures} x_i`` and ``X' diag(r) X - sum_k (d_k / S0_k^2) S1_k
S1_k'`` with one weight per row,

    r_j = e_j [ sum_{t_k <= T_j} d_k / S0_k
                + 1{j another cause} / G_g(T_j-) sum_{t_k > T_j} G_g(t_k-) d_k / S0_k ],

so one evaluation is O(n d (d + C)) after one sort, C the censoring groups.

**Case weights and strata.** A subject of weight ``w_i`` counts ``w_i`` times: in the
risk sets (``e_j`` is ``w_j exp(x_j'theta)``), in the failure counts ``d_k`` and the
failures' ``sum w_i x_i``, and in its group's Kaplan-Meier estimate (``Y_g``, ``c_g`` sum
weights), so weights of 2 are a duplicated subject (under Breslow's ties: Efron's tie
sums count the failing rows, :class:`~coxinfluence.likelihood.efron.TieTerms`, so there a
weight of 2 is not two rows). Strata have their own risk sets (their
own baseline); the censoring distribution is estimated per censoring group within each
stratum (as ``survival::finegray`` does with ``strata()``), so a Kaplan-Meier group is a
(stratum, ``cengroup``) pair, and the loss is the sum of the strata's losses. Rows are
sorted by stratum, then time; the risk sets' suffix sums run within a stratum
(:func:`risk_set_sums`), and a group's ``G_g`` is 1 before its stratum's times and 0 after
them, so its prefix sums need no segmenting.

**Deletion.** A batch of presence masks (:class:`~coxinfluence.data.deletion.Deletion`,
0 = deleted) removes subjects from the risk sets *and* from the Kaplan-Meier estimates
(the non-decomposable part): ``G`` is re-estimated per problem from the present subjects
(:func:`censoring_survival`). A presence multiplies the subject's weight (2: the subject
duplicated, under Breslow's ties); Efron's tie counts are of the rows present.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from coxinfluence.likelihood.efron import tie_terms
from coxinfluence.numerics.rows import matmul_reduce_rows, matmul_rows

__all__ = ["FineGrayData", "build_fine_gray_data", "censoring_survival", "risk_sums",
           "row_weights", "loss_grad_hess", "crr_scores", "per_time", "suffix_sums",
           "sums_before", "risk_set_sums", "sums_up_to", "FineGrayLikelihood",
           "baseline_jumps", "own_time_weights", "CAUSE", "COMPETING", "CENSORED"]

#: row kinds after choosing the cause (crr's ``fstatus``: 1 the cause, 2 another, 0 censored)
CENSORED, CAUSE, COMPETING = 0, 1, 2


@dataclass(eq=False)
class FineGrayData:
    """Validated Fine-Gray data, rows sorted by stratum, then time (ascending, stable: R's
    ``order``).

    ``X`` holds the covariates centred at their means (the likelihood does not see a
    constant added to a covariate); ``weight`` the case weights (ones without);
    ``stratum`` each row's stratum code and ``stratum_start`` its first row; ``tie`` is
    each row's distinct-time index (a time of one stratum), ``starts`` the first row of
    each distinct time, ``fail`` the distinct times with a failure of the cause;
    ``group`` the censoring group of the Kaplan-Meier estimates, one per (stratum,
    ``cengroup``) pair present (``cengroup`` the caller's censoring-group code);
    ``order[r]`` is the caller's row of sorted row ``r``."""

    X: np.ndarray
    X_center: np.ndarray
    time: np.ndarray
    kind: np.ndarray
    group: np.ndarray
    n_groups: int
    order: np.ndarray
    tie: np.ndarray
    starts: np.ndarray
    fail: np.ndarray
    weight: np.ndarray
    stratum: np.ndarray
    stratum_start: np.ndarray
    cengroup: np.ndarray
    ties: str = "breslow"

    @property
    def n(self):
        return self.X.shape[0]

    @property
    def d(self):
        return self.X.shape[1]

    @property
    def n_times(self):
        return self.starts.size

    @property
    def n_strata(self):
        return self.stratum_start.size

    @property
    def unit_weights(self):
        return bool((self.weight == 1.0).all())

    @property
    def time_bounds(self):
        """(S + 1,) the first distinct-time index of each stratum, then ``n_times``."""
        return np.append(self.tie[self.stratum_start], self.n_times)

    @property
    def fail_bounds(self):
        """(S + 1,) the first failure-time index (into ``fail``) of each stratum, then K."""
        return np.searchsorted(self.fail, self.time_bounds)

    def rank_view(self):
        """The view :mod:`coxinfluence.data.rank` reads: covariates centred within strata
        identify the coefficients (each stratum has its own baseline)."""
        return SimpleNamespace(X=self.X, n=self.n, d=self.d, strata=self.stratum,
                               stratum_start=self.stratum_start)

    def to_caller_order(self, values):
        """Values of the sorted rows (first axis) in the caller's row order."""
        values = np.asarray(values)
        out = np.empty_like(values)
        out[self.order] = values
        return out


def build_fine_gray_data(X, time, kind, group, weight=None, stratum=None, ties="breslow"):
    """:class:`FineGrayData` from validated arrays in the caller's order: ``X`` (n, d)
    float64, ``time`` (n,), ``kind`` (n,) in {CENSORED, CAUSE, COMPETING}, ``group`` (n,)
    censoring-group codes 0..C-1, ``weight`` (n,) positive case weights (default ones),
    ``stratum`` (n,) codes 0..S-1 (default one stratum), ``ties`` "breslow" or "efron".
    The Kaplan-Meier groups are the (stratum, group) pairs present."""
    if ties not in ("breslow", "efron"):
        raise ValueError(f"ties must be 'breslow' or 'efron'; got {ties!r}")
    n = np.asarray(time).shape[0]
    stratum = np.zeros(n, dtype=np.intp) if stratum is None else np.asarray(stratum,
                                                                            dtype=np.intp)
    weight = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    order = np.lexsort((time, stratum))
    t = np.ascontiguousarray(time[order], dtype=np.float64)
    st = stratum[order]
    Xs = np.ascontiguousarray(X[order], dtype=np.float64)
    center = Xs.mean(axis=0) if Xs.shape[0] else np.zeros(Xs.shape[1])
    new = np.ones(t.size, dtype=bool)
    new[1:] = (t[1:] != t[:-1]) | (st[1:] != st[:-1])
    tie = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    first = np.ones(t.size, dtype=bool)
    first[1:] = st[1:] != st[:-1]
    kind = np.asarray(kind, dtype=np.int8)[order]
    has_fail = np.zeros(starts.size, dtype=bool)
    has_fail[tie[kind == CAUSE]] = True
    cengroup = np.asarray(group, dtype=np.intp)[order]
    pairs, km_group = np.unique(np.column_stack([st, cengroup]), axis=0, return_inverse=True)
    return FineGrayData(X=Xs - center, X_center=center, time=t, kind=kind,
                        group=km_group.reshape(-1).astype(np.intp),
                        n_groups=max(len(pairs), 1), order=order, tie=tie, starts=starts,
                        fail=np.flatnonzero(has_fail),
                        weight=np.ascontiguousarray(weight[order]), stratum=st,
                        stratum_start=np.flatnonzero(first), cengroup=cengroup, ties=ties)


def per_time(data, values):
    """Sums of per-row values (B, n, ...) over each distinct time: (B, T, ...)."""
    return np.add.reduceat(values, data.starts, axis=1)


def suffix_sums(a):
    """Sums from each position to the end along axis 1."""
    return np.cumsum(a[:, ::-1], axis=1)[:, ::-1]


def sums_before(a):
    """Sums of the positions strictly before each position along axis 1."""
    out = np.zeros_like(a)
    np.cumsum(a[:, :-1], axis=1, out=out[:, 1:])
    return out


def within_strata(data, cumulate, a):
    """``cumulate`` (a cumulative sum along axis 1) applied to each stratum's distinct
    times apart: the risk sets of one stratum never reach into another."""
    if data.n_strata == 1:
        return cumulate(a)
    out = np.empty_like(a)
    b = data.time_bounds
    for t0, t1 in zip(b[:-1], b[1:]):
        out[:, t0:t1] = cumulate(a[:, t0:t1])
    return out


def risk_set_sums(data, a):
    """Per-time values (B, T, ...) summed over the times at or after each time, within its
    stratum: the risk set's sum."""
    return within_strata(data, suffix_sums, a)


def sums_up_to(data, a):
    """Per-time values (B, T, ...) summed over the times at or before each time, within
    its stratum."""
    return within_strata(data, lambda v: np.cumsum(v, axis=1), a)


def censoring_survival(data, presence):
    """(B, C, T) crr's ``G_g(s-)`` at every distinct time ``s`` for each problem's present
    subjects (module docstring), with the number at risk ``Y`` and censored ``c`` (B, C, T),
    counted in case weights (a group's rows lie in one stratum: its sums need no
    segmenting; before the group's first time ``G`` is 1, after its last 0)."""
    B, T = presence.shape[0], data.n_times
    presence = presence * data.weight
    G = np.empty((B, data.n_groups, T))
    Y = np.empty_like(G)
    cens = np.empty_like(G)
    for g in range(data.n_groups):
        in_g = data.group == g
        at = per_time(data, presence * in_g)
        c = per_time(data, presence * (in_g & (data.kind == CENSORED)))
        y = suffix_sums(at)
        alive = np.maximum.accumulate((at > 0)[:, ::-1], axis=1)[:, ::-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(alive, 1.0 - c / np.where(alive, y, 1.0), 1.0)
        G[:, g, 0] = 1.0
        np.cumprod(factor[:, :-1], axis=1, out=G[:, g, 1:])
        G[:, g][~alive] = 0.0
        Y[:, g], cens[:, g] = y, c
    return G, Y, cens


def _inverse_own(data, G):
    """(B, n) ``1 / G_g(T_j-)`` for the competing rows (0 elsewhere, and where G is 0)."""
    own = G[:, data.group, data.tie]
    comp = data.kind == COMPETING
    with np.errstate(divide="ignore"):
        return np.where(comp[None, :] & (own > 0), 1.0 / np.where(own > 0, own, 1.0), 0.0)


@dataclass
class RiskSums:
    """The risk-set sums of a batch at the failure times (B problems, K times)."""

    e: np.ndarray        # (B, n) presence * weight * exp(x'theta - shift)
    shift: np.ndarray    # (B,) the shift: the largest x'theta of the present rows
    G: np.ndarray        # (B, C, T) censoring survival, left limits
    inv: np.ndarray      # (B, n) 1 / G_g(T_j-) of competing rows
    S0: np.ndarray       # (B, K)
    S1: np.ndarray       # (B, K, d)
    dk: np.ndarray       # (B, K) failures of the cause (present, their weights) at t_k
    xf: np.ndarray       # (B, d) sum of w x over the present failures
    nd: np.ndarray       # (B, K) Efron's tie count: present failing rows (1 for Breslow)
    F0: np.ndarray       # (B, K) sum of e over the failures at t_k (0 for Breslow)
    F1: np.ndarray       # (B, K, d) sum of e x over them


def risk_sums(data, theta, presence):
    """:class:`RiskSums` of the problems ``theta`` (B, d) with ``presence`` (B, n) (module
    docstring: the ordinary part a suffix sum, the competing part ``G_g(t_k-)`` times a
    prefix sum of ``e_j / G_g(T_j-)``)."""
    theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    presence = np.atleast_2d(np.asarray(presence, dtype=np.float64))
    X = data.X
    eta = matmul_rows(X, theta.T, np.empty((X.shape[0], theta.shape[0]))).T
    shift = np.where(presence > 0, eta, -np.inf).max(axis=1)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    mass = presence * data.weight
    with np.errstate(over="ignore"):
        e = mass * np.exp(eta - shift[:, None])
    G, _, _ = censoring_survival(data, presence)
    inv = _inverse_own(data, G)
    S0 = risk_set_sums(data, per_time(data, e))
    S1 = risk_set_sums(data, per_time(data, e[:, :, None] * X))
    u = e * inv
    for g in range(data.n_groups):
        m = data.group == g
        if not (m & (data.kind == COMPETING)).any():
            continue
        ug = u * m
        Gg = G[:, g, :]
        S0 += Gg * sums_before(per_time(data, ug))
        S1 += Gg[:, :, None] * sums_before(per_time(data, ug[:, :, None] * X))
    is_fail = mass * (data.kind == CAUSE)
    dk = per_time(data, is_fail)[:, data.fail]
    B, K = theta.shape[0], data.fail.size
    if data.ties == "efron":
        cause = data.kind == CAUSE
        nd = per_time(data, ((presence > 0) & cause).astype(np.float64))[:, data.fail]
        F0 = per_time(data, e * cause)[:, data.fail]
        F1 = per_time(data, (e * cause)[:, :, None] * X)[:, data.fail]
    else:
        nd = (dk > 0).astype(np.float64)
        F0, F1 = np.zeros((B, K)), np.zeros((B, K, X.shape[1]))
    return RiskSums(e=e, shift=shift, G=G, inv=inv, S0=S0[:, data.fail],
                    S1=S1[:, data.fail], dk=dk, xf=matmul_reduce_rows(is_fail.T, X),
                    nd=nd, F0=F0, F1=F1)


def baseline_jumps(data, theta, presence):
    """crr's baseline cumulative subdistribution hazard of the problems ``theta`` (B, d)
    with ``presence`` (B, n) over the sorted rows: ``(jumps, log_scale, xbar)``.

    crr's ``bfitj`` (its Fortran ``crrfit``, cmprsk 2.2-11; ``predict.crr`` cumulates it)
    is Breslow's estimate with the censoring weights of the risk sets (module docstring),

        Lambda_10(t) = sum_{t_k <= t} d_k / S0_k(theta),

    ``S0_k`` with ``exp(x_j'theta)`` of the *uncentred* covariates (the baseline is at
    ``x = 0``). On the centred, shifted scale of :func:`risk_sums` the jump at ``t_k`` is
    ``jumps[:, k] * exp(-log_scale)``, ``log_scale = shift + X_center'theta`` (a new
    patient's ``exp(x'theta) Lambda_10`` is formed as ``exp(x'theta - log_scale) sum
    jumps``, which does not overflow). ``xbar`` (B, K, d): ``S1_k / S0_k``, the
    weighted risk-set means of the centred covariates (``x - X_center - xbar_k`` is the
    derivative's factor, :class:`coxinfluence.audit.fine_gray_targets.CumulativeIncidence`).
    A failure time with no failure left in a problem has jump 0.

    With Efron's ties the jump is Efron's hazard increment ``c_k = (W_k / n_k) sum_l
    1 / (S0_k - (l / n_k) F0_k)`` (:class:`~coxinfluence.likelihood.efron.TieTerms`; R's
    ``survfit`` of a coxph fit with ``ties = "efron"``) and ``xbar = m_k / c_k`` with
    ``-m_k`` its derivative."""
    theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    s = risk_sums(data, theta, presence)
    tt = tie_terms(s.S0, s.F0, s.nd, s.dk)
    live = tt.c > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        xbar = np.where(live[:, :, None], tt.risk_mean(s.S1, s.F1)
                        / np.where(live, tt.c, 1.0)[:, :, None], 0.0)
    return tt.c, s.shift + theta @ data.X_center, xbar


def row_weights(data, sums, c):
    """(B, n) ``r_j`` of the module docstring for per-time coefficients ``c`` (B, K):
    ``sum_k c_k w_j(t_k) e_j``, row j's total weight in ``sum_k c_k S_k``."""
    B, T = c.shape[0], data.n_times
    cT = np.zeros((B, T))
    cT[:, data.fail] = c
    out = sums_up_to(data, cT)[:, data.tie]
    comp = data.kind == COMPETING
    if comp.any():
        later = np.zeros((B, data.n))
        for g in range(data.n_groups):
            m = comp & (data.group == g)
            if m.any():
                after = suffix_sums(cT * sums.G[:, g, :])       # sum over t_k >= s
                after = np.concatenate([after[:, 1:], np.zeros((B, 1))], axis=1)
                later[:, m] = after[:, data.tie[m]]
        out = out + sums.inv * later
    return sums.e * out


def own_time_weights(data, sums, c1):
    """(B, n) ``e_j c1_k`` for the failing rows ``j`` of the cause at their time ``t_k``
    (Efron's ``- c1 F1`` term; 0 for Breslow and for the other rows)."""
    if data.ties != "efron":
        return np.zeros_like(sums.e)
    cT = np.zeros((c1.shape[0], data.n_times))
    cT[:, data.fail] = c1
    return sums.e * cT[:, data.tie] * (data.kind == CAUSE)


def loss_grad_hess(data, theta, presence, *, hessian=True):
    """Loss, gradient and Hessian (B,), (B, d), (B, d, d) of the problems ``theta`` with
    ``presence``. A risk set that underflows or a loss that is not finite gives that
    problem an infinite loss and NaN derivatives."""
    theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    s = risk_sums(data, theta, presence)
    B, d = theta.shape
    tt = tie_terms(s.S0, s.F0, s.nd, s.dk)
    bad = tt.bad.any(axis=1)
    loss = tt.logs.sum(axis=1) + s.shift * s.dk.sum(axis=1) \
        - np.einsum("bd,bd->b", theta, s.xf)
    r = row_weights(data, s, tt.c) - own_time_weights(data, s, tt.c1)
    # products over the rows in blocks of one BLAS thread (numerics.rows)
    grad = matmul_reduce_rows(r.T, data.X) - s.xf
    hess = None
    if hessian:
        hess = np.stack([matmul_reduce_rows(data.X, data.X, scale=rb) for rb in r])
        hess -= np.einsum("bk,bkp,bkq->bpq", tt.g0, s.S1, s.S1)
        if data.ties == "efron":
            SF = np.einsum("bk,bkp,bkq->bpq", tt.g1, s.S1, s.F1)
            hess += SF + SF.transpose(0, 2, 1)
            hess -= np.einsum("bk,bkp,bkq->bpq", tt.g2, s.F1, s.F1)
    bad |= ~np.isfinite(loss) | ~np.isfinite(grad).all(axis=1)
    if bad.any():
        loss[bad] = np.inf
        grad[bad] = np.nan
        if hess is not None:
            hess[bad] = np.nan
    return loss, grad, hess


class FineGrayLikelihood:
    """The loss of :class:`FineGrayData` (module docstring), batched over deletions.

    ``loss``, ``grad``, ``hess`` take ``theta`` (d,) or (B, d) and ``deleted``: None (the
    full data), a sequence of the caller's rows deleted together, or a
    :class:`~coxinfluence.data.deletion.Deletion` / (B, n) presence array over the
    caller's rows (problem b without the rows its mask zeroes)."""

    def __init__(self, data: FineGrayData):
        self.data = data

    def presence(self, deleted=None, B=1):
        """(B, n) presence over the *sorted* rows for ``deleted`` (class docstring)."""
        n = self.data.n
        if deleted is None:
            return np.ones((B, n))
        P = getattr(deleted, "presence", None)
        if P is None:
            arr = np.asarray(deleted)
            if arr.ndim == 2:
                P = arr
            else:
                P = np.ones((1, n))
                P[0, np.asarray(deleted, dtype=np.intp).reshape(-1)] = 0.0
        P = np.asarray(P, dtype=np.float64)
        if P.shape[1] != n:
            raise ValueError(f"a presence mask has {P.shape[1]} entries; the data have {n}")
        return P[:, self.data.order]

    def evaluate(self, theta, deleted=None, *, hessian=True):
        """(loss, grad, hess): (B,), (B, d), (B, d, d)."""
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        P = self.presence(deleted, theta.shape[0])
        if P.shape[0] == 1 and theta.shape[0] > 1:
            P = np.repeat(P, theta.shape[0], axis=0)
        elif theta.shape[0] == 1 and P.shape[0] > 1:
            theta = np.repeat(theta, P.shape[0], axis=0)
        return loss_grad_hess(self.data, theta, P, hessian=hessian)

    def loss(self, theta, deleted=None):
        out = self.evaluate(theta, deleted, hessian=False)[0]
        return out if np.ndim(theta) == 2 or out.size > 1 else float(out[0])

    def grad(self, theta, deleted=None):
        out = self.evaluate(theta, deleted, hessian=False)[1]
        return out if np.ndim(theta) == 2 or out.shape[0] > 1 else out[0]

    def hess(self, theta, deleted=None):
        out = self.evaluate(theta, deleted)[2]
        return out if np.ndim(theta) == 2 or out.shape[0] > 1 else out[0]

    def objective(self, deleted=None):
        """``objective(idx, theta, hess=True)`` for :func:`coxinfluence.numerics.newton.
        newton` and the influence engine's refits: the problems ``idx`` of a batch of
        deletions (``deleted`` as the class docstring says: a
        :class:`~coxinfluence.data.deletion.Deletion` over the caller's rows; None: the
        full data), ``hess=False``: no Hessian (None)."""
        P = self.presence(deleted)

        def objective(idx, theta, hess=True):
            return loss_grad_hess(self.data, theta, P[idx], hessian=hess)

        return objective


def crr_scores(data, theta, *, censoring_term=True):
    """(n, d) each subject's term ``eta_i + psi_i`` of crr's sandwich variance, sorted rows
    (crr's Fortran ``crrvv``, cmprsk 2.2-11; Fine & Gray 1999, Section 3): ``var = H^{-1}
    (sum_i (eta_i + psi_i)(eta_i + psi_i)') H^{-1}``, on the log-likelihood's sign (the
    score).

    ``eta_i`` is the subject's score residual with its weights held fixed,

        eta_i = 1{i fails} (x_i - xbar(T_i)) - sum_k (d_k / S0_k) w_i(t_k) e_i (x_i - xbar_k),

    and ``psi_i`` the censoring distribution's term, a Nelson-Aalen linearisation of its
    group's Kaplan-Meier estimate (crr's, so it has ``Y^2`` where the derivative of the
    product limit has ``Y (Y - c)``):

        psi_i  = 1{i censored} q_g(T_i) / Y_g(T_i) - sum_{u <= T_i} c_g(u) q_g(u) / Y_g(u)^2,
        q_g(u) = sum_{j1 in g failing at t_k >= u} (1 / S0_k) sum_{j in g another cause,
                     T_j < u} e_j [G_g(t_k-) / G_g(T_j-)] (x_j - xbar_k)

    (``g`` the subject's censoring group, ``Y_g``, ``c_g`` its at-risk and censored counts).
    ``q_g`` sums over the failures *of group g* only, as crr's code does (measured against
    R: the sum over every failure, which the weights' derivative has, differs from crr's
    variance by 4e-4 relative on a two-group design; with one group the two coincide).
    Cumulative sums throughout: O(n d) per group. ``censoring_term=False`` gives ``eta_i``
    alone: the weights held fixed (what ``finegray`` + ``coxph``'s robust variance uses).

    With case weights ``w`` the sums over subjects (``S0``, ``d_k``, ``Y_g``, ``c_g``,
    ``q_g``) count them, the terms above are per unit of a subject's weight (its
    derivative in ``w_i``), and the subject's term is ``w_i (eta_i + psi_i)``: what
    removing it changes to first order (coxph's robust variance sums the squares of
    these, so ``var`` is the sandwich of the weighted terms). Strata: the sums run within
    the subject's stratum.

    Efron's ties (:class:`~coxinfluence.likelihood.efron.TieTerms`): ``eta_i`` is minus the
    derivative of the loss's gradient in ``w_i`` with the censoring weights held fixed
    (R's score residual of the expanded data, summed over the subject's rows), where each
    ``(d_k / S0_k)(x - xbar_k)`` above becomes ``c_k x - m_k``, the failure's mean
    ``xbar`` becomes ``(c_k S1_k - c1_k F1_k) / W_k``, and a tied failure gets ``e_i (c1_k
    x_i - m1_k)`` back at its own time (it is not at full weight in its own tie's
    denominators); ``q_g`` takes the same ``c_k x_j - m_k`` (its derivative in ``G``),
    shared out to group g's failures by their weight. With one failure per time this is
    Breslow's, term by term."""
    n, d, T = data.n, data.d, data.n_times
    P = np.ones((1, n))
    s = risk_sums(data, np.asarray(theta, dtype=np.float64)[None, :], P)
    _, Y, cens = censoring_survival(data, P)
    G, Y, cens = s.G[0], Y[0], cens[0]
    S1, dk, e, inv = s.S1[0], s.dk[0], s.e[0], s.inv[0]
    e_own = e / data.weight             # the subject's own factor: per unit of its weight
    X, tie = data.X, data.tie
    tt = tie_terms(s.S0, s.F0, s.nd, s.dk)
    c, m_risk = tt.c[0], tt.risk_mean(s.S1, s.F1)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        # the failures' mean (c S1 - c1 F1) / W: Breslow's S1 / S0
        xbar = np.where(dk[:, None] > 0, (c[:, None] * S1 - tt.c1[0][:, None] * s.F1[0])
                        / np.where(dk > 0, dk, 1.0)[:, None], 0.0)

    def on_times(a, v):        # per failure time (K,), (K, d) -> (T,), (T, d)
        aT, vT = np.zeros(T), np.zeros((T, d))
        aT[data.fail], vT[data.fail] = a, v
        return aT, vT

    cT, cxT = on_times(c, m_risk)
    _, xbarT = on_times(c, xbar)
    comp = data.kind == COMPETING
    # eta: the failure's own term, minus the compensator over the risk sets it belongs to
    out = (data.kind == CAUSE)[:, None] * (X - xbarT[tie])
    out -= e_own[:, None] * (X * sums_up_to(data, cT[None])[0][tie][:, None]
                             - sums_up_to(data, cxT[None])[0][tie])
    if data.ties == "efron":     # a tied failure's own time: c1 x_i - m1 back
        c1T, m1T = on_times(tt.c1[0], tt.own_mean(s.S1, s.F1)[0])
        cause = data.kind == CAUSE
        out[cause] += e_own[cause, None] * (X[cause] * c1T[tie[cause], None]
                                            - m1T[tie[cause]])
    fails_g = per_time(data, ((data.weight * (data.kind == CAUSE))[:, None]
                              * (data.group[:, None] == np.arange(data.n_groups))
                              )[None])[0][data.fail]                         # (K, C)
    for g in range(data.n_groups):
        in_g = data.group == g
        m = comp & in_g
        q = np.zeros((T, d))
        if m.any():
            mi = np.flatnonzero(m)
            after = np.append(suffix_sums((cT * G[g])[None])[0][1:], 0.0)         # t_k > s
            after_x = np.vstack([suffix_sums((cxT * G[g][:, None])[None])[0][1:],
                                 np.zeros((1, d))])
            out[mi] -= (e_own[mi] * inv[mi])[:, None] * (X[mi] * after[tie[mi], None]
                                                     - after_x[tie[mi]])
            if not censoring_term:
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(dk > 0, fails_g[:, g] / np.where(dk > 0, dk, 1.0), 0.0)
            cgT, cgxT = on_times(share * c, share[:, None] * m_risk)
            own = suffix_sums((cgT * G[g])[None])[0]                              # t_k >= s
            own_x = suffix_sums((cgxT * G[g][:, None])[None])[0]
            u = e * inv * m
            B0 = sums_before(per_time(data, u[None]))[0]
            B1 = sums_before(per_time(data, (u[:, None] * X)[None]))[0]
            q = B1 * own[:, None] - B0[:, None] * own_x
        if not censoring_term:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            jump = np.where(cens[g] > 0, cens[g] / np.where(Y[g] > 0, Y[g], 1.0) ** 2, 0.0)
            at = np.where(Y[g] > 0, 1.0 / np.where(Y[g] > 0, Y[g], 1.0), 0.0)
        rows = np.flatnonzero(in_g)
        out[rows] -= np.cumsum(jump[:, None] * q, axis=0)[tie[rows]]
        cr = rows[data.kind[rows] == CENSORED]
        out[cr] += at[tie[cr], None] * q[tie[cr]]
    return data.weight[:, None] * out

"""Cox partial likelihood in closed form: loss, gradient, Hessian, Newton fitter.

The loss is the *negative* log partial likelihood, summed over events (DESIGN.md),
with R's weighted Efron (default) or Breslow handling of ties and strata:

    L(theta) = sum_s sum_g [ -sum_{k in D_g} w_k eta_k
                             + m_g sum_{r=0}^{d_g-1} log(S0_g - c_r S0D_g) ],

    eta = X theta,  S0_g = sum_{j in R_g} w_j exp(eta_j),  S0D_g = sum_{k in D_g} w_k exp(eta_k),
    m_g = sum_{k in D_g} w_k / d_g,  c_r = r / d_g (Efron) or 0 (Breslow),

where ``R_g`` is the risk set (same stratum, time >= t_g) and ``D_g`` the events at
``t_g`` (Therneau & Grambsch 2000, eq. 3.6; R survival ``coxfit6.c``). Its derivatives:

    grad L = -sum_events w_k x_k + sum_terms m (S1 - c S1D) / (S0 - c S0D)
    hess L =  sum_terms m [ (S2 - c S2D) / (S0 - c S0D) - a a' ],  a = (S1 - c S1D)/(S0 - c S0D)

Every evaluation is vectorised over the sorted rows: one pass of cumulative sums
per stratum. Sums over terms of ``S1/S0`` and ``S2/S0`` are rewritten as sums over
rows, ``sum_j coef_j x_j`` and ``X' diag(coef) X`` (``_row_coefficients``), so nothing
of size n x d x d is ever formed.

All internal functions take a leading batch axis ``B`` (several ``theta`` and,
optionally, several row-presence patterns at once), which the leave-one-out code
uses; the public functions are the ``B = 1`` case.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._data import CoxData, CoxInputError, make_cox_data


class ConvergenceWarning(UserWarning):
    """Newton-Raphson stopped before the gradient reached the tolerance."""


# --------------------------------------------------------------------------- terms

@dataclass(frozen=True)
class _Terms:
    """Efron terms for a batch: fraction ``c`` and weight ``m`` of each event term.

    ``frac`` and ``mean_weight`` have shape (B, K) or (K,) (broadcast over B);
    ``weights`` are the effective row weights (B, n) or (n,).
    """

    weights: np.ndarray
    frac: np.ndarray
    mean_weight: np.ndarray


def _full_terms(data: CoxData) -> _Terms:
    return _Terms(data.weights, data.term_frac, data.term_mean_weight)


def _presence_terms(data: CoxData, presence: np.ndarray) -> _Terms:
    """Terms when rows are deleted: ``presence`` (B, n) of 0/1 in sorted order.

    Deleting an event row removes it from its tie group: ``d_g`` drops by one, the
    Efron fractions become ``r / (d_g - 1)``, the mean event weight is recomputed,
    and the group's last term (rank ``d_g - 1``) disappears. Terms are anonymous
    (they depend only on the rank and the group sums), so the ranks can stay fixed.
    """
    P = np.asarray(presence, dtype=np.float64)
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
    return _Terms(w, np.where(active, frac, 0.0), mean_weight)


# ------------------------------------------------------------- risk-set sums

def _strata_blocks(starts, total):
    stops = np.append(starts[1:], total)
    return zip(starts, stops)


def _cumsum_within_strata(data: CoxData, a: np.ndarray) -> np.ndarray:
    """Cumulative sum along axis 1 restarting at each stratum (rows are sorted)."""
    out = np.empty_like(a)
    for start, stop in _strata_blocks(data.stratum_start, data.n):
        np.cumsum(a[:, start:stop], axis=1, out=out[:, start:stop])
    return out


def _group_stratum_starts(data: CoxData) -> np.ndarray:
    return np.flatnonzero(np.r_[True, data.group_stratum[1:] != data.group_stratum[:-1]])


def _reverse_cumsum_groups(data: CoxData, q: np.ndarray) -> np.ndarray:
    """``out[:, g] = sum of q[:, g']`` over groups g' >= g of the same stratum, i.e. over the
    event times at or before ``t_g`` (the risk sets that contain the rows of group g)."""
    out = np.empty_like(q)
    for start, stop in _strata_blocks(_group_stratum_starts(data), data.n_groups):
        out[:, start:stop] = np.cumsum(q[:, start:stop][:, ::-1], axis=1)[:, ::-1]
    return out


def _group_event_sums(data: CoxData, r_events: np.ndarray) -> np.ndarray:
    """Sum over the events of each tie group: (B, K[, d]) -> (B, G[, d])."""
    out = np.zeros((r_events.shape[0], data.n_groups) + r_events.shape[2:])
    starts = np.flatnonzero(np.r_[True, data.term_group[1:] != data.term_group[:-1]])
    if starts.size:
        out[:, data.term_group[starts]] = np.add.reduceat(r_events, starts, axis=1)
    return out


def _risk(data: CoxData, theta: np.ndarray, terms: _Terms, blas=True):
    """Linear predictor, shifted risk scores and the Efron denominators of each term.

    Returns ``eta`` (B, n), ``r = w exp(eta - shift)`` (B, n), ``shift`` (B, 1) and
    ``den`` (B, K) = ``S0 - c S0D`` on the shifted scale (log-sum-exp: the loss is
    invariant to adding a constant to eta, so ``shift = max eta`` costs nothing).
    """
    eta = theta @ data.X.T if blas else np.einsum("bd,nd->bn", theta, data.X)
    shift = eta.max(axis=1, keepdims=True)
    r = np.broadcast_to(terms.weights, eta.shape) * np.exp(eta - shift)
    S0 = _cumsum_within_strata(data, r)[:, data.group_end - 1]
    S0D = _group_event_sums(data, r[:, data.event_rows])
    tg = data.term_group
    den = S0[:, tg] - terms.frac * S0D[:, tg]
    live = np.broadcast_to(terms.mean_weight, den.shape) > 0
    if np.any(live & ~(den > 0)):
        raise FloatingPointError(
            "risk-set sum underflowed to 0: the linear predictor spans more than ~700; "
            "the coefficients are diverging (check for separation or extreme covariates)")
    den = np.where(live, den, 1.0)
    return eta, r, shift, den


def _sum_over_risk_sets(data: CoxData, per_term, frac):
    """For every row j: the sum of ``per_term[k]`` over the terms whose risk set holds j,
    less ``frac[k] * per_term[k]`` over the terms of j's own tie group when j is an event
    (Efron: an event of the group is only ``1 - c`` in the r-th term's denominator).

    ``per_term`` is (B, K) or (B, K, d); returns (B, n) or (B, n, d) in sorted row order.
    Row j lies in the risk set of every group at or after its own (descending time).
    """
    frac = np.broadcast_to(frac, per_term.shape[:2]).reshape(per_term.shape[:2]
                                                             + (1,) * (per_term.ndim - 2))
    q = _group_event_sums(data, per_term)
    qc = _group_event_sums(data, frac * per_term)
    out = _reverse_cumsum_groups(data, q)[:, data.group]
    out[:, data.event_rows] -= qc[:, data.term_group]
    return out


def _row_coefficients(data: CoxData, r, den, terms: _Terms):
    """``coef_j`` with ``sum_terms m (S1 - c S1D)/den = sum_j coef_j x_j`` (and likewise
    ``X' diag(coef) X`` for S2)."""
    m = np.broadcast_to(terms.mean_weight, den.shape)
    return r * _sum_over_risk_sets(data, m / den, terms.frac)


def _term_means(data: CoxData, r, den, frac):
    """``a_k = (S1 - c S1D) / (S0 - c S0D)`` of every term (B, K, d): the Efron-weighted
    covariate mean of its risk set."""
    rx = r[:, :, None] * data.X[None, :, :]
    S1 = _cumsum_within_strata(data, rx)[:, data.group_end - 1]
    S1D = _group_event_sums(data, rx[:, data.event_rows])
    tg = data.term_group
    frac = np.broadcast_to(frac, den.shape)
    return (S1[:, tg] - frac[:, :, None] * S1D[:, tg]) / den[:, :, None]


def _loss_grad_hess(data: CoxData, theta, terms: _Terms, *, hess=True, blas=True):
    """Loss (B,), gradient (B, d) and Hessian (B, d, d) of the negative log partial likelihood.

    ``blas=False`` does every reduction over rows with einsum's single-threaded loops
    instead of BLAS, whose multi-threaded reductions round differently with the thread
    count: leave-one-out refits then give the same bits on a dask worker (one BLAS
    thread) as in the serial run.
    """
    theta = np.atleast_2d(theta)
    eta, r, shift, den = _risk(data, theta, terms, blas)
    m = np.broadcast_to(terms.mean_weight, den.shape)
    w = np.broadcast_to(terms.weights, eta.shape)
    ev = data.event_rows
    loss = (-(w[:, ev] * eta[:, ev]).sum(axis=1)
            + (m * (np.log(den) + shift)).sum(axis=1))
    coef = _row_coefficients(data, r, den, terms)
    if blas:
        grad = coef @ data.X - w[:, ev] @ data.X[ev]
    else:
        grad = (np.einsum("bn,nd->bd", coef, data.X)
                - np.einsum("bk,kd->bd", w[:, ev], data.X[ev]))
    if not hess:
        return loss, grad, None
    a = _term_means(data, r, den, terms.frac)
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


# ------------------------------------------------------------------ public functions

def _data_for(theta, X, time, event, weights, strata, ties):
    data = make_cox_data(X, time, event, weights=weights, strata=strata, ties=ties,
                         check_identifiable=False)
    theta = np.asarray(theta, dtype=np.float64).reshape(-1)
    if theta.shape[0] != data.d:
        raise CoxInputError(f"theta has {theta.shape[0]} entries but X has {data.d} columns")
    return data, theta


def cox_loss(theta, X, time, event, *, weights=None, strata=None, ties="efron"):
    """Negative log partial likelihood at ``theta`` (summed over events; see module doc)."""
    data, theta = _data_for(theta, X, time, event, weights, strata, ties)
    return float(_loss_grad_hess(data, theta, _full_terms(data), hess=False)[0][0])


def cox_gradient(theta, X, time, event, *, weights=None, strata=None, ties="efron"):
    """Gradient (d,) of the negative log partial likelihood at ``theta`` (= minus R's score)."""
    data, theta = _data_for(theta, X, time, event, weights, strata, ties)
    return _loss_grad_hess(data, theta, _full_terms(data), hess=False)[1][0]


def cox_hessian(theta, X, time, event, *, weights=None, strata=None, ties="efron"):
    """Hessian (d, d) of the negative log partial likelihood (the observed information)."""
    data, theta = _data_for(theta, X, time, event, weights, strata, ties)
    return _loss_grad_hess(data, theta, _full_terms(data))[2][0]


# ------------------------------------------------------------------------- Newton

@dataclass
class _NewtonResult:
    theta: np.ndarray      # (B, d)
    loss: np.ndarray       # (B,)
    grad: np.ndarray       # (B, d)
    hess: np.ndarray       # (B, d, d)
    converged: np.ndarray  # (B,) bool
    n_iter: np.ndarray     # (B,) int
    failed: np.ndarray     # (B,) bool: singular Hessian or diverging coefficients


def _solve_batch(H, g):
    """Newton steps H^{-1} g for a batch; NaN rows where H is not positive definite."""
    steps = np.full_like(g, np.nan)
    ok = np.zeros(g.shape[0], dtype=bool)
    try:
        L = np.linalg.cholesky(H)
        steps = np.linalg.solve(H, g[:, :, None])[:, :, 0]
        ok[:] = np.isfinite(L).all(axis=(1, 2))
        return steps, ok
    except np.linalg.LinAlgError:
        pass
    for b in range(g.shape[0]):
        try:
            np.linalg.cholesky(H[b])
            steps[b] = np.linalg.solve(H[b], g[b])
            ok[b] = True
        except np.linalg.LinAlgError:
            ok[b] = False
    return steps, ok


def _newton_converged(theta, grad, step, tol):
    """Converged: the gradient is below ``tol`` *and* the Newton step is small, or the step
    is at rounding level. The step test matters for monotone likelihoods (separation):
    there the gradient and the information both decay like exp(-|theta|), so the gradient
    passes any tolerance while the Newton step stays near 1 (R's ``toler.inf`` check)."""
    size = 1 + np.abs(theta).max(axis=1)
    step_size = np.abs(step).max(axis=1)
    return (((np.abs(grad).max(axis=1) <= tol) & (step_size <= 1e-6 * size))
            | (step_size <= 1e-13 * size))


def newton_batch(data: CoxData, theta0, *, presence=None, tol=1e-10, max_iter=50,
                 max_halving=30, blas=True) -> _NewtonResult:
    """Newton-Raphson with step halving for B problems sharing one sorted data set.

    Problem b uses the rows with ``presence[b] == 1`` (all rows when None); convergence
    is :func:`_newton_converged`.
    """
    theta = np.array(np.atleast_2d(theta0), dtype=np.float64)
    B = theta.shape[0]
    P = None if presence is None else np.asarray(presence, dtype=np.float64)

    def terms_for(idx):
        return _full_terms(data) if P is None else _presence_terms(data, P[idx])

    def evaluate(idx, th, hess=True):
        try:
            return _loss_grad_hess(data, th, terms_for(idx), hess=hess, blas=blas)
        except FloatingPointError:
            nan = np.full(len(idx), np.inf)
            return nan, np.full(th.shape, np.nan), np.full(th.shape + (th.shape[1],), np.nan)

    loss, grad, hess = evaluate(np.arange(B), theta)
    converged = np.zeros(B, dtype=bool)
    failed = ~np.isfinite(loss)
    n_iter = np.zeros(B, dtype=int)
    for iteration in range(max_iter + 1):   # the last pass only tests convergence
        active = np.flatnonzero(~converged & ~failed)
        if active.size == 0:
            break
        step, ok = _solve_batch(hess[active], grad[active])
        failed[active[~ok]] = True
        active, step = active[ok], step[ok]
        done = _newton_converged(theta[active], grad[active], step, tol)
        converged[active[done]] = True
        active, step = active[~done], step[~done]
        if iteration == max_iter or active.size == 0:
            break
        n_iter[active] += 1
        # step halving: accept the largest step 2^-h that does not increase the loss
        full_step = step.copy()
        todo = np.arange(active.size)
        new_theta = theta[active] - step
        new = [None, None, None]
        new_loss = np.full(active.size, np.inf)
        for _h in range(max_halving):
            l_try, g_try, h_try = evaluate(active[todo], new_theta[todo])
            bound = loss[active[todo]] + 1e-12 * np.abs(loss[active[todo]])
            good = l_try <= bound
            idx = todo[good]
            if new[0] is None:
                new = [np.empty((active.size,) + g_try.shape[1:]),
                       np.empty((active.size,) + h_try.shape[1:]), None]
            new_loss[idx] = l_try[good]
            new[0][idx] = g_try[good]
            new[1][idx] = h_try[good]
            todo = todo[~good]
            if todo.size == 0:
                break
            step[todo] /= 2
            new_theta[todo] = theta[active[todo]] - step[todo]
        # rows where no step decreased the loss: stuck (on a flat, diverging direction of a
        # separated likelihood the gradient is tiny but the Newton step is not)
        if todo.size:
            stuck = active[todo]
            at_optimum = _newton_converged(theta[stuck], grad[stuck], full_step[todo], 1e3 * tol)
            converged[stuck[at_optimum]] = True
            failed[stuck[~at_optimum]] = True
            keep = np.setdiff1d(np.arange(active.size), todo)
            active, new_theta, new_loss = active[keep], new_theta[keep], new_loss[keep]
            new = [new[0][keep], new[1][keep], None]
        theta[active] = new_theta
        loss[active] = new_loss
        grad[active] = new[0]
        hess[active] = new[1]
        failed |= ~np.isfinite(theta).all(axis=1)
    converged &= ~failed
    return _NewtonResult(theta, loss, grad, hess, converged, n_iter, failed)


# -------------------------------------------------------------------------- fit

@dataclass(eq=False)
class CoxFit:
    """A fitted Cox model (``ci.fit_cox``).

    ``coef`` maximises the partial likelihood; ``loglik`` is the log partial
    likelihood there (R's ``fit$loglik[2]``); ``information`` is the Hessian of the
    negative log partial likelihood at ``coef`` (observed information, R's
    ``solve(fit$var)``); ``data`` is the validated, sorted :class:`CoxData`.
    """

    coef: np.ndarray
    loglik: float
    information: np.ndarray
    gradient: np.ndarray
    converged: bool
    n_iter: int
    data: CoxData = field(repr=False)
    ties: str = "efron"
    tol: float = 1e-10
    max_iter: int = 50

    @property
    def n(self):
        return self.data.n

    @property
    def columns(self):
        return list(self.data.columns)

    @property
    def var(self):
        """Inverse information: the model-based covariance of ``coef`` (R's ``fit$var``)."""
        return np.linalg.inv(self.information)

    @property
    def se(self):
        return np.sqrt(np.diag(self.var))

    @property
    def hazard_ratios(self):
        return np.exp(self.coef)

    def summary(self):
        """Coefficient table: coef, exp(coef), se, z, p (Wald), as a DataFrame."""
        from scipy import stats
        z = self.coef / self.se
        return pd.DataFrame({"coef": self.coef, "exp(coef)": self.hazard_ratios,
                             "se(coef)": self.se, "z": z, "p": 2 * stats.norm.sf(np.abs(z))},
                            index=self.columns)

    def __repr__(self):
        coefs = ", ".join(f"{c}={v:.4g}" for c, v in zip(self.columns, self.coef))
        return (f"CoxFit(n={self.n}, events={int(self.data.event.sum())}, ties={self.ties!r}, "
                f"loglik={self.loglik:.6g}, converged={self.converged}, coef: {coefs})")


def fit_cox(X, time, event, *, weights=None, strata=None, ties="efron", tol=1e-10,
            max_iter=50, init=None) -> CoxFit:
    """Fit a Cox proportional hazards model by Newton-Raphson with step halving.

    Parameters
    ----------
    X : (n, d) array or DataFrame of numeric covariates (no intercept).
    time : (n,) non-negative follow-up times.
    event : (n,) 1 for an event, 0 for right-censored.
    weights : (n,) positive case weights (R's ``weights=``); default 1.
    strata : (n,) stratum labels (or a DataFrame of several); each stratum has its own
        baseline hazard and risk sets.
    ties : "efron" (default, as R and lifelines) or "breslow".
    tol : convergence when ``max |gradient| <= tol`` (or the step is at rounding level).
    max_iter : Newton iterations before giving up with a :class:`ConvergenceWarning`.
    init : starting coefficients (default zeros, as R).

    Returns
    -------
    CoxFit
    """
    data = make_cox_data(X, time, event, weights=weights, strata=strata, ties=ties)
    theta0 = np.zeros(data.d) if init is None else np.asarray(init, dtype=np.float64)
    if theta0.shape != (data.d,):
        raise CoxInputError(f"init must have {data.d} entries; got shape {theta0.shape}")
    res = newton_batch(data, theta0[None, :], tol=tol, max_iter=max_iter)
    converged = bool(res.converged[0])
    if not converged:
        gnorm = float(np.abs(res.grad[0]).max())
        reason = ("the Hessian became singular or the coefficients diverged"
                  if res.failed[0] else f"{max_iter} iterations were not enough")
        warnings.warn(f"Cox fit did not converge: {reason}; max |gradient| = {gnorm:.3g} "
                      f"(tol {tol:g}). Coefficients may be infinite (separation) or the "
                      "design nearly singular.", ConvergenceWarning, stacklevel=2)
    return CoxFit(coef=res.theta[0], loglik=float(-res.loss[0]), information=res.hess[0],
                  gradient=res.grad[0], converged=converged, n_iter=int(res.n_iter[0]),
                  data=data, ties=ties, tol=tol, max_iter=max_iter)


# ------------------------------------------------------------------ fitted state

@dataclass(frozen=True)
class RiskSetState:
    """Risk-set quantities at one ``theta`` (batch axis dropped), shared by the
    influence functions. Scores are on the shifted scale ``exp(eta - shift)``;
    ``den`` and ``a`` are per Efron term (see :func:`_risk`, :func:`_term_means`)."""

    score: np.ndarray        # (n,) exp(eta - shift)
    risk: np.ndarray         # (n,) w * score
    den: np.ndarray          # (K,) S0 - c S0D
    term_mean: np.ndarray    # (K, d) a_k
    mean_weight: np.ndarray  # (K,) m_k
    frac: np.ndarray         # (K,) c_k


def risk_set_state(data: CoxData, theta) -> RiskSetState:
    terms = _full_terms(data)
    theta = np.asarray(theta, dtype=np.float64)[None, :]
    eta, r, shift, den = _risk(data, theta, terms)
    a = _term_means(data, r, den, terms.frac)
    return RiskSetState(score=np.exp(eta[0] - shift[0]), risk=r[0], den=den[0], term_mean=a[0],
                        mean_weight=np.broadcast_to(terms.mean_weight, den.shape[1:]).copy(),
                        frac=np.broadcast_to(terms.frac, den.shape[1:]).copy())

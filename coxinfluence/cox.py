"""The Cox model: loss, gradient and Hessian for callers' arrays, and the fitter.

``cox_loss``, ``cox_gradient`` and ``cox_hessian`` evaluate the negative log partial
likelihood (R's weighted Efron or Breslow ties, strata, case weights; the formula is in
:mod:`coxinfluence.risksets`, which holds its one implementation) for the caller's data.
``fit_cox`` minimises it by Newton-Raphson with step halving (:mod:`coxinfluence.newton`)
and returns a :class:`CoxFit`, the object every influence function takes.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from ._data import CoxData, CoxInputError, make_cox_data, wrap_rows
from .newton import cox_objective, newton
from .risksets import RiskSets


class ConvergenceWarning(UserWarning):
    """Newton-Raphson stopped before the gradient reached the tolerance."""


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
    return float(RiskSets(data).loss_grad_hess(theta[None, :], hess=False)[0][0])


def cox_gradient(theta, X, time, event, *, weights=None, strata=None, ties="efron"):
    """Gradient (d,) of the negative log partial likelihood at ``theta`` (= minus R's score)."""
    data, theta = _data_for(theta, X, time, event, weights, strata, ties)
    return RiskSets(data).loss_grad_hess(theta[None, :], hess=False)[1][0]


def cox_hessian(theta, X, time, event, *, weights=None, strata=None, ties="efron"):
    """Hessian (d, d) of the negative log partial likelihood (the observed information)."""
    data, theta = _data_for(theta, X, time, event, weights, strata, ties)
    return RiskSets(data).loss_grad_hess(theta[None, :])[2][0]


# -------------------------------------------------------------------------- fit

@dataclass(eq=False)
class CoxFit:
    """A fitted Cox model (``ci.fit_cox``).

    ``coef`` minimises the objective: the negative log partial likelihood ``L``, plus
    ``penalty`` when there is one (lifelines' ridge, built by the lifelines
    integration). ``loglik`` is the log partial likelihood ``-L(coef)`` without the
    penalty (R's ``fit$loglik[2]``, also for penalised fits); ``information`` is the
    Hessian of the minimised objective at ``coef`` (observed information, R's
    ``solve(fit$var)``; with the penalty's Hessian for penalised fits), so ``var`` and
    the influence functions use the objective that was minimised. ``data`` is the
    validated, sorted :class:`CoxData`.
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
    penalty: object = field(default=None, repr=False)   # has .value(thetas) and .strength

    @property
    def n(self):
        return self.data.n

    @property
    def columns(self):
        return list(self.data.columns)

    @cached_property
    def risk_sets(self) -> RiskSets:
        """The risk-set kernels of the fitted data (:class:`~coxinfluence.risksets.RiskSets`)."""
        return RiskSets(self.data)

    def objective(self, thetas, deleted=None):
        """The minimised objective (negative log partial likelihood plus the penalty, if
        any) at each row of ``thetas`` (B, d), on all rows or without the rows ``deleted``
        removes (a :class:`~coxinfluence.deletion.Deletion` over sorted rows); NaN for rows of
        ``thetas`` that are not finite."""
        thetas = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
        out = np.full(thetas.shape[0], np.nan)
        ok = np.flatnonzero(np.isfinite(thetas).all(axis=1))
        for start in range(0, ok.size, 256):
            rows = ok[start:start + 256]
            part = None if deleted is None else deleted.take(rows)
            out[rows] = self.risk_sets.loss_grad_hess(thetas[rows], part, hess=False)[0]
            if self.penalty is not None:
                out[rows] += self.penalty.value(thetas[rows])
        return out

    def paper_scale(self, delta_sorted):
        """``-(H/n)^{-1} delta`` for per-row gradient differences ``delta`` (n, d, sorted
        row order), in the caller's row order and index: the paper's scale of ``IF_n``
        and ``VIF_n``, approximating ``n (theta_hat - theta_hat_{-i})``
        (``docs/conventions.md``)."""
        data = self.data
        sol = np.linalg.solve(self.information, delta_sorted.T).T
        return wrap_rows(data.to_caller_order(-data.n * sol), data)

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
    res = newton(cox_objective(RiskSets(data)), theta0[None, :], tol=tol, max_iter=max_iter)
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


def check_fit(fit) -> CoxFit:
    """``fit`` itself when it is a :class:`CoxFit`, else a ``TypeError`` naming its type."""
    if not isinstance(fit, CoxFit):
        raise TypeError(f"expected a CoxFit from coxinfluence.fit_cox; got {type(fit).__name__}")
    return fit

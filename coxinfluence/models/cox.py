"""The Cox model: loss, gradient and Hessian for callers' arrays, and the fitter.

``cox_loss``, ``cox_gradient`` and ``cox_hessian`` evaluate the negative log partial
likelihood (R's weighted Efron or Breslow ties, strata, case weights; the formula is in
:mod:`coxinfluence.likelihood.risk_sets`, which holds its one implementation) for the caller's data.
``fit_cox`` minimises it by Newton-Raphson with step halving (:mod:`coxinfluence.numerics.newton`)
and returns a :class:`CoxFit`, the object every influence function takes.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from coxinfluence.data.cox_data import CoxData, make_cox_data
from coxinfluence.data.inputs import CoxInputError
from coxinfluence.data.units import resolve_units
from coxinfluence.likelihood.deletion_gradients import DeletionGradients
from coxinfluence.likelihood.objective import cox_objective, gradient_tolerance
from coxinfluence.likelihood.risk_sets import RiskSets
from coxinfluence.likelihood.score_residuals import score_residuals_sorted
from coxinfluence.models import predictions
from coxinfluence.models.base import FitInterface, standard_errors, wald_z  # noqa: F401 (re-exported)
from coxinfluence.numerics.newton import newton
from coxinfluence.numerics.rows import SINGLE_THREAD_MADDS


class ConvergenceWarning(UserWarning):
    """Newton-Raphson stopped before the gradient reached the tolerance."""


# ------------------------------------------------------------------ public functions

def _data_for(theta, X, time, event, start, weights, strata, ties):
    data = make_cox_data(X, time, event, start=start, weights=weights, strata=strata, ties=ties,
                         check_identifiable=False)
    theta = np.asarray(theta, dtype=np.float64).reshape(-1)
    if theta.shape[0] != data.d:
        raise CoxInputError(f"theta has {theta.shape[0]} entries but X has {data.d} columns")
    return data, theta


def cox_loss(theta, X, time, event, *, start=None, weights=None, strata=None,
             ties="efron"):
    """Negative log partial likelihood at ``theta`` (summed over events; see module doc)."""
    data, theta = _data_for(theta, X, time, event, start, weights, strata, ties)
    return float(RiskSets(data).loss_grad_hess(theta[None, :], hess=False)[0][0])


def cox_gradient(theta, X, time, event, *, start=None, weights=None, strata=None,
                 ties="efron"):
    """Gradient (d,) of the negative log partial likelihood at ``theta`` (= minus R's score)."""
    data, theta = _data_for(theta, X, time, event, start, weights, strata, ties)
    return RiskSets(data).loss_grad_hess(theta[None, :], hess=False)[1][0]


def cox_hessian(theta, X, time, event, *, start=None, weights=None, strata=None,
                ties="efron"):
    """Hessian (d, d) of the negative log partial likelihood (the observed information)."""
    data, theta = _data_for(theta, X, time, event, start, weights, strata, ties)
    return RiskSets(data).loss_grad_hess(theta[None, :])[2][0]


# -------------------------------------------------------------------------- fit

@dataclass(eq=False)
class CoxFit(FitInterface):
    """A fitted Cox model (``ci.fit_cox``).

    The interface every fit shares (:class:`~coxinfluence.models.base.FitInterface`):
    ``params``, ``se``, ``cov_params(robust=False)``, ``conf_int(alpha=0.05,
    robust=False)``, ``summary(robust=False)``, ``loglik``, ``nobs``, ``n_units``,
    ``n_events``, ``aic`` (R's ``AIC(coxph)``: ``-2 loglik + 2 d``; none for a penalised
    fit), ``influence(...)`` (``ci.influence(fit, ...)``).

    ``coef`` minimises the objective: the negative log partial likelihood ``L``, plus
    ``penalty`` when there is one (lifelines' ridge, built by the lifelines
    integration). ``loglik`` is the log partial likelihood ``-L(coef)`` without the
    penalty (R's ``fit$loglik[2]``, also for penalised fits); ``information`` is the
    Hessian of the minimised objective at ``coef`` (observed information, R's
    ``solve(fit$var)``; with the penalty's Hessian for penalised fits), so ``var`` and
    the influence functions use the objective that was minimised. ``data`` is the
    validated, sorted :class:`CoxData`.

    ``ctype`` is the baseline hazard of survival predictions (:mod:`coxinfluence.audit.targets`),
    as R's ``survfit(fit, ctype=)``: 1 = Breslow / Nelson-Aalen type (the events'
    weight over the risk-set sum at each event time), 2 = with Efron's tie correction;
    None (``fit_cox``) = R's default for the fit's ties (2 for Efron, 1 for Breslow).
    The integrations set the library's own: lifelines and statsmodels use 1.
    """

    prediction_family = "cox"

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
    ctype: object = None            # survival baseline: 1, 2 or None (R's default; above)

    @property
    def n(self):
        return self.data.n

    @property
    def columns(self):
        return list(self.data.columns)

    @cached_property
    def risk_sets(self) -> RiskSets:
        """The risk-set kernels of the fitted data
        (:class:`~coxinfluence.likelihood.risk_sets.RiskSets`)."""
        return RiskSets(self.data)

    def objective(self, thetas, deleted=None):
        """The minimised objective (negative log partial likelihood plus the penalty, if
        any) at each row of ``thetas`` (B, d), on all rows or without the rows ``deleted``
        removes (a :class:`~coxinfluence.data.deletion.Deletion` over sorted rows); NaN for rows of
        ``thetas`` that are not finite."""
        thetas = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
        out = np.full(thetas.shape[0], np.nan)
        ok = np.flatnonzero(np.isfinite(thetas).all(axis=1))
        # a batch on all rows (the refits' likelihood displacements): the refits' kernel,
        # (n, B) arrays with no per-problem presence masks
        kernel = (DeletionGradients(self.risk_sets, reference=self.coef)
                  if deleted is None and ok.size > 1 else None)
        for start in range(0, ok.size, 256):
            rows = ok[start:start + 256]
            if kernel is not None:
                out[rows] = kernel.losses(thetas[rows])
            else:
                part = None if deleted is None else deleted.take(rows)
                out[rows] = self.risk_sets.loss_grad_hess(thetas[rows], part, hess=False,
                                                          grad=False)[0]
            if self.penalty is not None:
                out[rows] += self.penalty.value(thetas[rows])
        return out

    def robust_covariance(self, groups=None):
        """The grouped sandwich ``D' D``, ``D`` the per-unit dfbeta (R's
        ``resid(fit, "dfbeta", collapse=...)``): units are ``groups`` when given, else the
        subjects (``id=``), else the rows. Equals R's ``coxph(..., cluster=id)$var``
        (``robust=TRUE`` without an id: one unit per row)."""
        units = resolve_units(self, groups)
        # D = IF_n / n_units, Reid's IF (influence_functions/reid.py): the gradient moves
        # by -w_i U_i when row i's weight drops by w_i
        delta = -self.data.weights[:, None] * score_residuals_sorted(self.risk_sets, self.coef)
        IF = np.asarray(self.paper_scale(units.collapse(delta), units, overwrite=True))
        D = IF / IF.shape[0]                 # one row per unit: IF_n(g) / n_units
        return D.T @ D

    def diverging_columns(self):
        """Covariates along which the partial likelihood is flat at ``coef``: the
        information in units of ``(events) x var(x_j)`` (about what a covariate carries
        at ``coef = 0``; events and variance weighted by the case weights, so one huge
        weight does not make every other direction look flat) has eigenvalues below
        1e-8, and these columns load on those directions (|loading| > 0.3). Empty when
        there are none."""
        H = np.asarray(self.information, dtype=np.float64)
        if not np.isfinite(H).all():
            return list(self.columns)
        data = self.data
        events = float(data.weights @ data.event)
        scale = np.sqrt(np.maximum(events * _weighted_variances(data.X, data.weights), 1e-300))
        vals, vecs = np.linalg.eigh(H / scale[:, None] / scale[None, :])
        flat = vals <= 1e-8
        if not flat.any():
            return []
        load = np.abs(vecs[:, flat]).max(axis=1)
        return [c for c, v in zip(self.columns, load) if v > 0.3]

    def paper_scale(self, delta, units, overwrite=False):
        """``-(H/n)^{-1} delta`` for per-unit gradient differences ``delta`` (U, d, in the
        unit order of ``units``, a :class:`coxinfluence.data.units.Units`), with ``n`` the number
        of units: the paper's scale of ``IF_n`` and ``VIF_n``, approximating
        ``n (theta_hat - theta_hat_{-g})`` (``docs/conventions.md``). Rows come back in the
        caller's order and index; subjects and clusters indexed by their sorted labels.
        Solved by blocks of units with one LU factorisation (LAPACK getrf/getrs, as
        ``np.linalg.solve``), each block small enough for OpenBLAS to solve it on the
        calling thread (:mod:`coxinfluence.numerics.rows`: its helper threads, once woken,
        spin and slow the audit's other passes on a machine with few cores);
        ``overwrite=True`` writes the result into ``delta`` (a float64 array the caller
        owns), so 10^7 rows need no second (U, d) array."""
        from scipy.linalg import lu_factor, lu_solve
        delta = np.asarray(delta, dtype=np.float64)
        out = delta if overwrite and delta.flags.c_contiguous else np.array(delta, order="C")
        lu = lu_factor(self.information)
        scale = -float(units.n_units)
        step = max(256, SINGLE_THREAD_MADDS // max(out.shape[1] ** 2, 1))
        for b0 in range(0, out.shape[0], step):
            block = out[b0:b0 + step]
            # block.T is Fortran-ordered: LAPACK's getrs solves it in place
            x = lu_solve(lu, block.T, overwrite_b=True, check_finite=False)
            if not np.shares_memory(x, block):
                block[...] = x.T
            block *= scale
        return units.wrap(out)

    @property
    def var(self):
        """Inverse information: the model-based covariance of ``coef`` (R's ``fit$var``)."""
        return np.linalg.inv(self.information)

    @property
    def se(self):
        """Standard errors ``sqrt(diag(var))`` (:func:`standard_errors`)."""
        return standard_errors(np.diag(self.var))

    @property
    def hazard_ratios(self):
        return np.exp(self.coef)

    def _summary_head(self, se, robust):
        """summary(): coef, exp(coef), then ``se(coef)`` or R's ``robust se``, as R's
        ``summary.coxph`` (:meth:`FitInterface.summary`; with ``robust=True`` the SE is
        from :meth:`robust_covariance`, ``groups`` as there)."""
        return {"coef": self.coef, "exp(coef)": self.hazard_ratios,
                "robust se" if robust else "se(coef)": se}

    @property
    def n_units(self) -> int:
        """The units of deletion: the subjects (``id=``), else the rows."""
        return len(self.data.id_labels) if self.data.ids is not None else self.n

    @property
    def n_events(self) -> int:
        """The rows with an event (R's ``fit$nevent``; not weighted)."""
        return int(np.count_nonzero(self.data.event))

    @property
    def _aic_parameters(self):
        if self.penalty is not None:
            # R's AIC of a penalised coxph counts effective degrees of freedom
            raise AttributeError("aic: a penalised Cox fit has no AIC here (R's counts the "
                                 "penalty's effective degrees of freedom)")
        return len(self.coef)

    def _html_head(self):
        import html
        return (f"<p><b>Cox model</b>: n = {self.n}, events = {int(self.data.event.sum())}, "
                f"ties = {html.escape(self.ties)}, log-likelihood = {self.loglik:.6g}, "
                f"{'converged' if self.converged else '<b>not converged</b>'}</p>")

    # predictions for new patients: the formulas are in models/predictions.py (each the
    # value its influence target measures at coef)
    def predict_survival(self, X_new, times, strata=None, ctype=None):
        """``S(t | x)`` of new patients at ``times``: R's ``survfit(fit, newdata)$surv``
        (:func:`coxinfluence.models.predictions.predict_survival`)."""
        return predictions.predict_survival(self, X_new, times, strata=strata, ctype=ctype)

    def predict_cumulative_hazard(self, X_new, times, strata=None, ctype=None):
        """``Lambda_0(t) exp(x'beta)`` of new patients at ``times``: R's ``survfit(fit,
        newdata)$cumhaz`` (:func:`coxinfluence.models.predictions.predict_cumulative_hazard`)."""
        return predictions.predict_cumulative_hazard(self, X_new, times, strata=strata,
                                                     ctype=ctype)

    def predict_risk(self, X_new):
        """``exp(x'beta)``, not centred: R's ``predict(fit, newdata, type = "risk",
        reference = "zero")`` (:func:`coxinfluence.models.predictions.predict_risk`)."""
        return predictions.predict_risk(self, X_new)

    def predict_lp(self, X_new):
        """``x'beta``, not centred: R's ``predict(fit, newdata, type = "lp", reference =
        "zero")`` (:func:`coxinfluence.models.predictions.predict_lp`)."""
        return predictions.predict_lp(self, X_new)

    def __repr__(self):
        coefs = ", ".join(f"{c}={v:.4g}" for c, v in zip(self.columns, self.coef))
        return (f"CoxFit(n={self.n}, events={int(self.data.event.sum())}, ties={self.ties!r}, "
                f"loglik={self.loglik:.6g}, converged={self.converged}, coef: {coefs})")


def _weighted_variances(X, w, block=8192):
    """Case-weighted column variances ``sum_i w_i (x_ij - mean_j)^2 / sum_i w_i``, centred
    (no cancellation for columns far from zero) and in cache-sized blocks of rows: no
    (n, d) temporary, ~10x faster than the one-line form at 10^7 rows."""
    sw = w.sum()
    mean = (w @ X) / sw
    acc = np.zeros(X.shape[1])
    buf = np.empty((min(block, X.shape[0]), X.shape[1]))
    for b0 in range(0, X.shape[0], block):
        Z = np.subtract(X[b0:b0 + block], mean, out=buf[:min(block, X.shape[0] - b0)])
        Z *= Z
        acc += w[b0:b0 + block] @ Z
    return acc / sw


WARM_START_ROWS = 1 << 20     # fits of at least this many rows start from a subsample's fit
_WARM_START_SAMPLE = 1 << 16  # about this many rows in that subsample (small: its freed
#                               arrays do not raise malloc's mmap threshold, RSS at 10^7)


def subsample_start(data, min_rows=None, sample=None):
    """Newton's starting point for :func:`fit_cox`: zeros (as R), or, for ``data.n >=
    min_rows``, the fit of every s-th sorted row (``s = n // sample``; a systematic sample
    over time, every stratum kept) to a loose tolerance, when that fit converges (else
    zeros: a subsample can be separated where the full data are not).

    Why: the subsample's estimate is within O(1/sqrt(sample)) of the full one, and from
    there Newton's quadratic convergence needs two iterations on the full data instead of
    four from zero (10^7 rows: 3 evaluations of 1.6 s instead of 5, for 0.1 s of
    subsample). Convergence is still judged on the full data to the same tolerance, so
    the fit is the same maximum (10^7 rows: coefficients equal to 6e-15)."""
    min_rows = WARM_START_ROWS if min_rows is None else min_rows
    sample = _WARM_START_SAMPLE if sample is None else sample
    start = np.zeros(data.d)
    if data.n < min_rows:
        return start
    keep = np.zeros(data.n, dtype=bool)
    keep[::data.n // sample] = True
    sub = data.subset(keep)
    res = newton(cox_objective(RiskSets(sub)), start[None, :], tol=1e-6, max_iter=20)
    ok = bool(res.converged[0]) and bool(np.isfinite(res.theta[0]).all())
    return res.theta[0] if ok else start


def fit_cox(X, time, event, *, start=None, entry=None, id=None, weights=None, strata=None,
            ties="efron", tol=1e-10, max_iter=50, init=None, at_risk_at_entry=False) -> CoxFit:
    """Fit a Cox proportional hazards model by Newton-Raphson with step halving.

    Parameters
    ----------
    X : (n, d) array or DataFrame of numeric covariates (no intercept).
    time : (n,) follow-up times (non-negative when ``start`` is None).
    event : (n,) 1 for an event, 0 for right-censored.
    start : (n,) optional entry times: row i is at risk on ``(start_i, time_i]``, as R's
        ``Surv(start, stop, event)`` (delayed entry, time-varying covariates); None means
        from the origin.
    entry : (n,) optional delayed-entry (left-truncation) times, one row per subject: the
        row is at risk on ``(entry_i, time_i]``. The name every fitter uses
        (``fit_aft(entry=)``); here it is ``start`` under another name, so give one of
        the two (``start`` for several rows per subject, (start, stop] data).
    at_risk_at_entry : with ``start``, a row is also at risk at its entry time, on
        ``[start, time]`` (statsmodels' ``PHReg(entry=...)``, Stata's convention; the
        statsmodels integration sets it). Default False: R's and lifelines' ``(start, time]``.
    id : (n,) optional subject labels: rows of one subject (several intervals) are one
        unit of the influence functions (deleted together; results per subject, indexed
        by the sorted labels). Intervals of one subject must not overlap within a stratum.
    weights : (n,) positive case weights (R's ``weights=``); default 1.
    strata : (n,) stratum labels (or a DataFrame of several); each stratum has its own
        baseline hazard and risk sets.
    ties : "efron" (default, as R and lifelines) or "breslow".
    tol : convergence when ``max |gradient| <= tol`` (or the gradient's rounding floor when
        huge case weights make it larger: :func:`coxinfluence.numerics.newton.gradient_tolerance`)
        and the
        Newton step is at most ``1e-6 (1 + max |coef|)``, or the step is at rounding level
        (:func:`coxinfluence.numerics.newton.converged`).
    max_iter : Newton iterations before giving up with a :class:`ConvergenceWarning`.
    init : starting coefficients (default zeros, as R; from 2^20 rows on, the fit of a
        subsample of about 2^16 rows: :func:`subsample_start`).

    Returns
    -------
    CoxFit
    """
    if entry is not None:
        if start is not None:
            raise CoxInputError("give entry= (delayed entry, one row per subject) or start= "
                                "((start, stop] rows), not both: they are the same argument")
        start = entry
    try:
        data = make_cox_data(X, time, event, start=start, id=id, weights=weights,
                             strata=strata, ties=ties, at_risk_at_entry=at_risk_at_entry)
    except CoxInputError as exc:
        if entry is None or not str(exc).startswith("start"):
            raise
        raise CoxInputError(f"entry (the start of each row's at-risk interval): {exc}") \
            from None
    theta0 = subsample_start(data) if init is None else np.asarray(init, dtype=np.float64)
    if theta0.shape != (data.d,):
        raise CoxInputError(f"init must have {data.d} entries; got shape {theta0.shape}")
    risk_sets = RiskSets(data)
    res = newton(cox_objective(risk_sets), theta0[None, :],
                 tol=gradient_tolerance(data, tol), max_iter=max_iter)
    fit = CoxFit(coef=res.theta[0], loglik=float(-res.loss[0]), information=res.hess[0],
                 gradient=res.grad[0], converged=bool(res.converged[0]),
                 n_iter=int(res.n_iter[0]), data=data, ties=ties, tol=tol, max_iter=max_iter)
    fit.__dict__["risk_sets"] = risk_sets     # the fit's kernels, their caches already made
    gnorm = float(np.abs(res.grad[0]).max())
    if not fit.converged:
        reason = ("the Hessian became singular or the coefficients diverged"
                  if res.failed[0] else f"{max_iter} iterations were not enough")
        warnings.warn(f"Cox fit did not converge: {reason}; max |gradient| = {gnorm:.3g} "
                      f"(tol {tol:g}). Coefficients may be infinite (separation) or the "
                      "design nearly singular.", ConvergenceWarning, stacklevel=2)
        return fit
    flat = fit.diverging_columns()
    if flat:
        # the loss went flat before these coefficients settled (R: "Loglik converged
        # before variable ...; coefficient may be infinite"): not a maximum
        fit.converged = False
        warnings.warn(f"Cox fit: the log likelihood converged before the coefficients of "
                      f"{flat} did (it is flat along them: max |gradient| = {gnorm:.3g}); "
                      "they may be infinite (monotone likelihood).", ConvergenceWarning,
                      stacklevel=2)
    return fit


class NotConvergedError(ValueError):
    """The Cox fit did not converge: its leave-one-out refits have no reference point."""


def check_fit(fit, what=None, *, refuse=False) -> CoxFit:
    """``fit`` itself when it is a :class:`CoxFit`, else a ``TypeError`` naming its type.

    When the fit did not converge, ``what`` (the caller's name) gets a
    :class:`ConvergenceWarning` naming the diverging coefficients, or, with
    ``refuse=True`` or when the information cannot be inverted, a
    :class:`NotConvergedError` (never a raw ``LinAlgError``)."""
    if not isinstance(fit, CoxFit):
        raise TypeError(f"expected a CoxFit from coxinfluence.fit_cox; got {type(fit).__name__}")
    if what is not None and not fit.converged:
        names = fit.diverging_columns()
        which = (f"the coefficients of {names} are not identified: they diverge (monotone "
                 "likelihood, e.g. a covariate that separates the events) or the covariates "
                 "are (nearly) collinear" if names else "it stopped before converging")
        msg = (f"{what}: the Cox fit did not converge: {which}. Influence is measured against "
               "a maximum that does not exist; a ridge penalty (lifelines penalizer) or "
               "removing the covariate gives a model with one")
        if refuse or not _solvable(fit.information):
            # nothing can be computed from a singular information: a clear error, never
            # a raw LinAlgError
            raise NotConvergedError(msg)
        warnings.warn(msg + "; the values returned are not meaningful", ConvergenceWarning,
                      stacklevel=3)
    return fit


def _solvable(H):
    """The information can be inverted (finite, not exactly singular)."""
    try:
        return bool(np.isfinite(np.linalg.inv(H)).all())
    except np.linalg.LinAlgError:
        return False

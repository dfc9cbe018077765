"""Parametric accelerated failure time (AFT) regression, as R's ``survreg``.

``fit_aft`` minimises the negative log-likelihood of
:mod:`coxinfluence.likelihood.aft` (``log T = x'beta + sigma W``; Weibull, exponential,
log-normal, log-logistic; right, left and interval censoring, delayed entry, case
weights, one scale per stratum) by Newton-Raphson with step halving
(:mod:`coxinfluence.numerics.newton`), and returns an :class:`AFTFit`: the parameters in
R's order and with R's names (``(Intercept)``, the covariates, ``Log(scale)`` or
``Log(scale[stratum])``), the log-likelihood on R's time scale, the observed information
and its inverse (R's ``vcov(fit)``).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property
from types import SimpleNamespace

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import (
    CoxInputError,
    aligned_inputs,
    as_float_matrix,
    as_vector,
    bad_rows,
    check_finite,
    check_positive_weights,
    encode_labels,
    encode_strata,
    label_text,
)
from coxinfluence.data.rank import check_design
from coxinfluence.likelihood.aft import (
    DISTRIBUTIONS,
    EXACT,
    INTERVAL,
    LEFT,
    RIGHT,
    AFTData,
    AFTLikelihood,
)
from coxinfluence.models import predictions
from coxinfluence.models.base import FitInterface, standard_errors
from coxinfluence.models.cox import ConvergenceWarning, NotConvergedError
from coxinfluence.numerics.newton import newton
from coxinfluence.numerics.rows import matmul_reduce_rows

__all__ = ["AFTFit", "fit_aft", "aft_gradient_tolerance"]

#: the names R's survreg prints for the distributions
DIST_NAMES = {"weibull": "Weibull", "exponential": "Exponential", "lognormal": "Log-normal",
              "loglogistic": "Log-logistic"}


def aft_gradient_tolerance(data, tol):
    """``tol``, or the gradient's rounding floor when that is larger:
    ``4 eps sum_i w_i max_j |x_ij|`` (the design with its intercept), as
    :func:`coxinfluence.likelihood.objective.gradient_tolerance` for Cox."""
    top = np.abs(data.X).max(axis=1)
    return max(tol, 4 * np.finfo(np.float64).eps * float(data.weights @ top))


@dataclass(eq=False)
class AFTFit(FitInterface):
    """A fitted AFT model (``ci.fit_aft``), R's ``survreg`` fit.

    The interface every fit shares (:class:`~coxinfluence.models.base.FitInterface`):
    ``params``, ``se``, ``cov_params(robust=False)``, ``conf_int(alpha=0.05,
    robust=False)`` (of every parameter, ``Log(scale)`` included; R's ``confint`` gives
    those of the coefficients), ``summary(robust=False)`` (with ``exp(Value)`` and its
    limits: the time ratios of the covariates, the scale ``sigma`` on the ``Log(scale)``
    rows, ``exp(intercept)`` the time scale at ``x = 0``), ``loglik``, ``nobs``,
    ``n_units``, ``n_events``, ``aic`` (R's ``AIC(survreg)``: ``-2 loglik + 2 k``, ``k``
    the coefficients and the log scales), ``influence(...)``.

    ``coef`` is the full parameter vector in R's order (intercept, covariates, then
    ``log(scale)`` per stratum; none for the exponential), named by ``columns``;
    ``loglik`` the log-likelihood at ``coef`` (R's ``fit$loglik[2]``, on the time scale:
    it includes ``-sum w log t`` of the exact times); ``information`` the Hessian of the
    negative log-likelihood at ``coef`` (``var`` its inverse, R's ``vcov(fit)``);
    ``data`` the validated :class:`coxinfluence.likelihood.aft.AFTData` in the caller's
    row order; ``ids``/``id_labels`` the subjects (``id=``): the audit's default units
    and the default clusters of :meth:`robust_covariance`."""

    prediction_family = "aft"

    #: the parameters are named as R names them (``params``' index: "parameter")
    _params_index_name = "parameter"
    _ratio_name = "exp(Value)"

    coef: np.ndarray
    loglik: float
    information: np.ndarray
    gradient: np.ndarray
    converged: bool
    n_iter: int
    data: AFTData = field(repr=False)
    columns: list = field(default_factory=list)
    index: object = field(default=None, repr=False)      # the caller's pandas index or None
    raw: dict = field(default_factory=dict, repr=False)  # time, event, ... as given
    tol: float = 1e-10
    max_iter: int = 50
    #: the subjects (``fit_aft(..., id=)``): each row's subject code (caller's row order)
    #: into ``id_labels``, the sorted labels; None without an id
    ids: np.ndarray = field(default=None, repr=False)
    id_labels: pd.Index = field(default=None, repr=False)

    @property
    def dist(self):
        return self.data.dist

    @property
    def n(self):
        return self.data.n

    @property
    def model_name(self):
        return f"{DIST_NAMES[self.dist]} AFT (survreg)"

    @cached_property
    def likelihood(self) -> AFTLikelihood:
        return AFTLikelihood(self.data)

    @property
    def covariates(self):
        """The covariates' names (without the intercept and the scales)."""
        return list(self.columns[1:self.data.p])

    @property
    def scale(self):
        """``sigma`` per stratum (R's ``fit$scale``); 1 for the exponential."""
        if self.data.fixed_scale:
            return np.ones(1)
        return np.exp(self.coef[self.data.p:])

    @property
    def time_ratios(self) -> pd.Series:
        """``exp(beta_j)`` of the covariates: the factor on survival times per unit of
        ``x_j``."""
        return pd.Series(np.exp(self.coef[1:self.data.p]), index=self.covariates,
                         name="time ratio")

    @property
    def var(self):
        """Inverse information: R's ``vcov(fit)``."""
        return np.linalg.inv(self.information)

    @property
    def se(self):
        return standard_errors(np.diag(self.var))

    def objective(self, thetas, deleted=None):
        """The negative log-likelihood at each row of ``thetas`` (B, d), on all rows or
        on the rows ``deleted`` keeps (a :class:`~coxinfluence.data.deletion.Deletion`
        over the caller's rows, or a (B, n) presence array); NaN for rows of ``thetas``
        that are not finite."""
        thetas = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
        out = np.full(thetas.shape[0], np.nan)
        ok = np.flatnonzero(np.isfinite(thetas).all(axis=1))
        P = None if deleted is None else getattr(deleted, "presence", deleted)
        step = max(1, int(2_000_000 // max(self.n, 1)))
        for b0 in range(0, ok.size, step):
            rows = ok[b0:b0 + step]
            part = None if P is None else np.atleast_2d(P)[rows]
            out[rows] = self.likelihood.loss(thetas[rows], part)
        return out

    def row_scores(self):
        """(n, d) each row's gradient of its loss ``-l_i`` at ``coef`` (no case weight;
        R's score residuals are minus these)."""
        return self.likelihood.row_scores(self.coef)

    def dfbeta(self):
        """(n, d) R's ``residuals(fit, "dfbeta")``: ``-H^{-1} grad(-l_i)`` per row, per
        unit of case weight (``w_i dfbeta_R(i)`` is about ``theta_hat - theta_hat_{-i}``)."""
        return -np.linalg.solve(self.information, self.row_scores().T).T

    def clusters(self, groups=None):
        """``(codes, labels)`` of the units of deletion and of the robust covariance:
        ``groups`` (one label per row, caller's order) when given, else the subjects
        (``id=``); None when both are None (the rows)."""
        if groups is not None:
            return encode_labels(groups, self.n, "groups", self.index)
        if self.ids is not None:
            return self.ids, self.id_labels
        return None

    def robust_covariance(self, groups=None):
        """The grouped sandwich ``D' D``, ``D`` the per-unit sums of ``w_i dfbeta_R(i)``
        (the clusters ``groups``: one label per row; default the subjects ``id=``, else
        the rows): R's ``survreg(..., robust = TRUE, cluster = groups)$var``."""
        D = self.data.weights[:, None] * self.dfbeta()
        units = self.clusters(groups)
        if units is not None:
            codes, labels = units
            D = np.stack([np.bincount(codes, weights=D[:, j], minlength=len(labels))
                          for j in range(D.shape[1])], axis=1)
        return D.T @ D

    def _summary_head(self, se, robust):
        """summary(): R's Value, then ``Std. Error`` or ``robust se`` (``robust=True``,
        ``groups`` as :meth:`robust_covariance`) (:meth:`FitInterface.summary`)."""
        return {"Value": self.coef, "robust se" if robust else "Std. Error": se}

    @property
    def n_units(self) -> int:
        """The units of deletion: the subjects (``id=``), else the rows."""
        return len(self.id_labels) if self.ids is not None else self.n

    @property
    def n_events(self) -> int:
        """The rows with an exact (uncensored) time; left-, right- and
        interval-censored rows are not counted."""
        return int(np.count_nonzero(self.data.kind == EXACT))

    def training_frame(self) -> pd.DataFrame:
        """The covariates and outcome as given (caller's order and index)."""
        index = self.index if self.index is not None else pd.RangeIndex(self.n)
        frame = pd.DataFrame(self.data.X[:, 1:], index=index, columns=self.covariates)
        for key, values in self.raw.items():
            if values is not None:
                frame[key] = values
        return frame

    def _html_head(self):
        import html
        return (f"<p><b>{html.escape(self.model_name)}</b>: n = {self.n}, log-likelihood = "
                f"{self.loglik:.6g}, "
                f"{'converged' if self.converged else '<b>not converged</b>'}</p>")

    # predictions for new patients: the formulas are in models/predictions.py (each the
    # value its influence target measures at coef)
    def predict_survival(self, X_new, times, strata=None):
        """``S(t | x)`` of new patients at ``times``: R's ``1 - psurvreg(t, lp, scale,
        dist)`` (:func:`coxinfluence.models.predictions.predict_survival`)."""
        return predictions.predict_survival(self, X_new, times, strata=strata)

    def predict_quantile(self, X_new, p=0.5, strata=None):
        """The ``p``-quantile of new patients' survival times: R's ``predict(fit, newdata,
        type = "quantile", p = p)`` (:func:`coxinfluence.models.predictions.predict_quantile`)."""
        return predictions.predict_quantile(self, X_new, p, strata=strata)

    def predict_lp(self, X_new):
        """``x'beta`` with the intercept: R's ``predict(fit, newdata, type = "lp")``
        (:func:`coxinfluence.models.predictions.predict_lp`)."""
        return predictions.predict_lp(self, X_new)

    def __repr__(self):
        coefs = ", ".join(f"{c}={v:.4g}" for c, v in zip(self.columns, self.coef))
        return (f"AFTFit(dist={self.dist!r}, n={self.n}, loglik={self.loglik:.6g}, "
                f"converged={self.converged}, coef: {coefs})")


# ------------------------------------------------------------------------ fitting

def _one_per_row(labels, codes):
    """Each row's stratum label (a 1-d object array: tuples of several stratum columns
    stay whole, where ``np.asarray`` would make them a second axis)."""
    out = np.empty(len(labels), dtype=object)
    out[:] = list(labels)
    return out[codes]


def _scale_names(K, labels, names):
    if K == 1:
        return ["Log(scale)"]
    out = []
    for lab in labels:
        if names is not None and len(names) == 1:
            text = f"{names[0]}={label_text(lab)}"
        elif names is not None:
            text = ", ".join(f"{n}={label_text(v)}" for n, v in zip(names, lab))
        else:
            text = label_text(lab)
        out.append(f"Log(scale[{text}])")
    return out


def _outcome(time, event, upper, n, index):
    """Row kinds and log times (:class:`AFTData`) from ``(time, event)`` or, with
    ``upper``, R's ``Surv(time, upper, type = "interval2")``."""
    t = as_vector(time, n, "time")
    if upper is None:
        if event is None:
            raise CoxInputError("event is required (1 = event, 0 = right-censored), or "
                                "upper= for interval-censored data")
        e = as_vector(event, n, "event")
        check_finite(t, "time", index)
        check_finite(e, "event", index)
        bad = (e != 0) & (e != 1)
        if bad.any():
            raise CoxInputError("event must be 0/1 (1 = event, 0 = right-censored); other "
                                f"values in {bad_rows(bad, index)}")
        if (t <= 0).any():
            raise CoxInputError("time must be positive (the AFT model is for log time); not "
                                f"in {bad_rows(t <= 0, index)}")
        kind = np.where(e == 1, EXACT, RIGHT).astype(np.int8)
        return kind, np.log(t), np.full(n, np.nan)
    if event is not None:
        raise CoxInputError("give event or upper, not both: with upper= the rows are "
                            "interval-censored (time = lower bound)")
    u = as_vector(upper, n, "upper")
    lower_missing = np.isnan(t) | (t == 0)
    upper_missing = np.isnan(u) | np.isposinf(u)
    both = lower_missing & upper_missing
    if both.any():
        raise CoxInputError(f"both bounds missing in {bad_rows(both, index)}")
    bad = (~lower_missing & ~np.isfinite(t)) | (t < 0) | (~upper_missing & (u <= 0))
    if bad.any():
        raise CoxInputError(f"bounds must be positive and finite (lower 0 or NaN: "
                            f"left-censored; upper inf or NaN: right-censored); not in "
                            f"{bad_rows(bad, index)}")
    order = ~lower_missing & ~upper_missing & (u < t)
    if order.any():
        raise CoxInputError(f"upper < lower in {bad_rows(order, index)}")
    kind = np.full(n, INTERVAL, dtype=np.int8)
    kind[upper_missing] = RIGHT
    kind[lower_missing] = LEFT
    kind[~lower_missing & ~upper_missing & (u == t)] = EXACT
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(kind == LEFT, np.log(u), np.log(t))
        y2 = np.where(kind == INTERVAL, np.log(u), np.nan)
    return kind, y, y2


def _check_columns(X, columns, index):
    """The AFT model has an intercept: a constant covariate duplicates it; collinear
    covariates (with or without the intercept) are not identified
    (:func:`coxinfluence.data.rank.check_design` on the centred design)."""
    if X.shape[1] == 0:
        return
    spread = X.max(axis=0) - X.min(axis=0)
    const = spread <= 1e-12 * np.maximum(np.abs(X).max(axis=0), 1.0)
    if const.any():
        names = [columns[j] for j in np.flatnonzero(const)]
        raise CoxInputError(f"constant column(s) {names}: the AFT model has an intercept "
                            "already, remove them")
    check_design(design_view(X, columns))


def design_view(X, columns=None):
    """The covariates (no intercept) as :mod:`coxinfluence.data.rank` reads a design:
    centred, one stratum (the rank of ``[1, X]`` is 1 + that of centred ``X``)."""
    n, p = X.shape
    Xc = X - X.mean(axis=0)
    return SimpleNamespace(X=Xc, n=n, d=p, strata=np.zeros(n, dtype=np.intp),
                           stratum_start=np.zeros(1, dtype=np.intp),
                           columns=list(columns) if columns is not None
                           else [f"x{j}" for j in range(p)],
                           to_caller_order=lambda v: v)


def make_aft_data(X, time, event=None, dist="weibull", *, upper=None, entry=None,
                  weights=None, strata=None, id=None):
    """Validate caller input into an :class:`AFTData`, the covariate names, the caller's
    index, the inputs as given and the subjects (``(codes, labels)`` of ``id``, or None)
    (:func:`fit_aft`)."""
    if dist not in DISTRIBUTIONS:
        raise CoxInputError(f"dist must be one of {tuple(DISTRIBUTIONS)}; got {dist!r}")
    Xa, columns, index = as_float_matrix(X)
    n = Xa.shape[0]
    if n == 0:
        raise CoxInputError("no rows: X is empty")
    inputs = {"time": time, "event": event, "upper": upper, "entry": entry,
              "weights": weights, "strata": strata, "id": id}
    index, inputs = aligned_inputs(index, inputs)
    time, event, upper, entry, weights, strata, id = inputs.values()
    subjects = None if id is None else encode_labels(id, n, "id", index)
    check_finite(Xa, "X", index)
    kind, y, y2 = _outcome(time, event, upper, n, index)
    w = np.ones(n) if weights is None else as_vector(weights, n, "weights")
    check_finite(w, "weights", index)
    check_positive_weights(w, index, "rows")
    log_entry = None
    if entry is not None:
        e = as_vector(entry, n, "entry")
        check_finite(e, "entry", index)
        if (e < 0).any():
            raise CoxInputError(f"entry must be non-negative; negative in "
                                f"{bad_rows(e < 0, index)}")
        # y: the log of the exact or censoring time, of the lower bound of an interval,
        # of the upper bound of a left-censored row
        late = (e > 0) & np.where(kind == INTERVAL, e > np.exp(y), e >= np.exp(y))
        if late.any():
            raise CoxInputError(f"entry must be before the (lower) time; not in "
                                f"{bad_rows(late, index)}")
        with np.errstate(divide="ignore"):
            log_entry = np.where(e > 0, np.log(e), -np.inf)
    codes, labels, names = encode_strata(strata, n, index)
    K = int(codes.max()) + 1
    if dist == "exponential" and K > 1:
        raise CoxInputError("strata give each stratum its own scale; the exponential model "
                            "has none (sigma = 1): use dist='weibull' or no strata")
    if not (kind != RIGHT).any():
        raise CoxInputError("no events: every row is right-censored, the likelihood has no "
                            "maximum")
    _check_columns(Xa, columns, index)
    if n <= Xa.shape[1] + 1:
        raise CoxInputError(f"{n} rows for {Xa.shape[1] + 1} location parameters: the model "
                            "needs more rows than parameters")
    design = np.ascontiguousarray(np.column_stack([np.ones(n), Xa]))   # row-major: BLAS
    data = AFTData(design, kind, y, y2, log_entry, w, codes, K, dist)
    names_all = ["(Intercept)"] + columns
    if dist != "exponential":
        names_all += _scale_names(K, labels, names)
    raw = {"time": as_vector(time, n, "time")}
    if upper is not None:
        raw["upper"] = as_vector(upper, n, "upper")
    else:
        raw["event"] = as_vector(event, n, "event")
    if entry is not None:
        raw["entry"] = as_vector(entry, n, "entry")
    if weights is not None:
        raw["weights"] = w
    if strata is not None:
        raw["strata"] = codes if labels is None else _one_per_row(labels, codes)
    if subjects is not None:
        raw["id"] = subjects[1].to_numpy()[subjects[0]]
    return data, names_all, index, raw, subjects


#: sd of W: extreme value, normal, logistic
_SD_W = {"weibull": np.pi / np.sqrt(6), "exponential": np.pi / np.sqrt(6),
         "lognormal": 1.0, "loglogistic": np.pi / np.sqrt(3)}


def least_squares_start(data):
    """A start for Newton: weighted least squares of the log times (interval midpoints)
    on the design, its residual spread as the scale (divided by the sd of ``W``), the
    intercept moved by ``E[W] sigma`` (Euler's gamma for the extreme value)."""
    y = np.where(data.kind == INTERVAL, 0.5 * (data.y + data.y2), data.y)
    # the normal equations by blocks of rows of one BLAS thread (numerics.rows)
    gram = matmul_reduce_rows(data.X, data.X, scale=data.weights)
    rhs = matmul_reduce_rows(data.X, y[:, None], scale=data.weights)[:, 0]
    try:
        beta = np.linalg.solve(gram, rhs)
    except np.linalg.LinAlgError:
        beta = np.linalg.lstsq(gram, rhs, rcond=None)[0]
    resid = y - data.X @ beta
    sd = np.sqrt(max(float(data.weights @ resid ** 2 / data.weights.sum()), 1e-8))
    theta = np.zeros(data.d)
    theta[:data.p] = beta
    if data.dist == "exponential":
        theta[0] += np.euler_gamma
    else:
        sigma = sd / _SD_W[data.dist]
        theta[data.p:] = np.log(sigma)
        if data.dist == "weibull":
            theta[0] += np.euler_gamma * sigma
    return theta


def _levenberg(objective, theta, max_iter=500):
    """Damped Newton (Levenberg-Marquardt: ``(H + mu I)^{-1} g``, ``mu`` raised until the
    step is a descent and the matrix positive definite, lowered after each success) from
    ``theta`` into the basin of the maximum, where plain Newton takes over. A start
    where the Hessian is not positive definite (a scale far from the data's) needs it."""
    loss, g, H = objective(np.arange(1), theta[None])
    loss, g, H = loss[0], g[0], H[0]
    mu = 1e-3 * max(float(np.abs(np.diag(H)).max()), 1.0)
    d = theta.size
    for _ in range(max_iter):
        try:
            np.linalg.cholesky(H)
            if mu < 1e-12:
                return theta
        except np.linalg.LinAlgError:
            pass
        for _ in range(60):
            try:
                L = np.linalg.cholesky(H + mu * np.eye(d))
            except np.linalg.LinAlgError:
                mu *= 10
                continue
            step = np.linalg.solve(L.T, np.linalg.solve(L, g))
            new = theta - step
            l2, g2, H2 = objective(np.arange(1), new[None])
            if np.isfinite(l2[0]) and l2[0] <= loss:
                theta, loss, g, H = new, l2[0], g2[0], H2[0]
                mu /= 10
                break
            mu *= 10
        else:
            return theta
    return theta


def polish(objective, res, tol, steps=3):
    """Plain Newton steps for the problems of ``res`` (a converged
    :class:`~coxinfluence.numerics.newton.NewtonResult`) whose gradient is still above
    ``tol``, each kept only where it lowers ``max |gradient|``. Newton's step test
    (:func:`~coxinfluence.numerics.newton.converged`) stops once the step is at rounding
    level in ``theta``; with covariates in large units (age in years) the gradient can
    then still be 1e-9, which one more step takes to rounding (1e-12)."""
    from coxinfluence.numerics.newton import solve_batch
    for _ in range(steps):
        todo = np.flatnonzero(res.converged & (np.abs(res.grad).max(axis=1) > tol))
        if todo.size == 0:
            break
        step, ok = solve_batch(res.hess[todo], res.grad[todo])
        todo, step = todo[ok], step[ok]
        if todo.size == 0:
            break
        theta = res.theta[todo] - step
        loss, grad, hess = objective(todo, theta)
        better = (np.isfinite(loss) & (np.abs(grad).max(axis=1)
                                       < np.abs(res.grad[todo]).max(axis=1)))
        keep = todo[better]
        res.theta[keep], res.loss[keep] = theta[better], loss[better]
        res.grad[keep], res.hess[keep] = grad[better], hess[better]
        if not better.any():
            break
    return res


def fit_aft(X, time, event=None, dist="weibull", *, upper=None, entry=None, weights=None,
            strata=None, id=None, tol=1e-10, max_iter=50, init=None) -> AFTFit:
    """Fit a parametric AFT model, as R's ``survreg``.

    Parameters
    ----------
    X : (n, p) array or DataFrame of numeric covariates (the intercept is added).
    time : (n,) positive follow-up times; with ``upper``, the lower bounds.
    event : (n,) 1 for an event (exact time), 0 for right-censored.
    dist : "weibull" (default), "exponential", "lognormal" or "loglogistic".
    upper : (n,) upper bounds for interval-censored data, as R's ``Surv(time, upper,
        type = "interval2")`` and lifelines' ``fit_interval_censoring``: ``time == upper``
        an exact time, ``upper`` inf or NaN right-censored at ``time``, ``time`` 0 or NaN
        left-censored at ``upper``, else censored in ``(time, upper]``. ``event`` must be
        None then.
    entry : (n,) optional entry times (delayed entry, left truncation: the row's
        likelihood is divided by ``S(entry)``); 0 means from the origin.
    weights : (n,) positive case weights (R's ``weights=``).
    strata : (n,) labels (or a DataFrame): each stratum has its own scale (R's
        ``strata()`` term); names as R's ``Log(scale[label])``, or
        ``Log(scale[name=label])`` for a named Series.
    id : (n,) optional subject labels (no missing label): a subject's rows (e.g. its
        intervals ``(entry, time]`` with time-varying covariates) are one unit of the
        audit, deleted together, results indexed by the sorted labels; and the default
        clusters of the robust covariance (R's ``survreg(..., cluster = id)``). The fit
        itself does not depend on ``id``: each row is a term of the likelihood.
    tol : convergence when ``max |gradient| <= tol`` (or the gradient's rounding floor,
        :func:`aft_gradient_tolerance`) and the Newton step is small
        (:func:`coxinfluence.numerics.newton.converged`).
    max_iter : Newton iterations before a :class:`ConvergenceWarning`.
    init : starting parameters (default: :func:`least_squares_start`).

    Returns
    -------
    AFTFit
    """
    data, columns, index, raw, subjects = make_aft_data(
        X, time, event, dist, upper=upper, entry=entry, weights=weights, strata=strata,
        id=id)
    lik = AFTLikelihood(data)
    theta0 = least_squares_start(data) if init is None else np.asarray(init, dtype=np.float64)
    if theta0.shape != (data.d,):
        raise CoxInputError(f"init must have {data.d} entries {columns}; got shape "
                            f"{theta0.shape}")
    gtol = aft_gradient_tolerance(data, tol)
    objective = lik.objective()
    res = newton(objective, theta0[None, :], tol=gtol, max_iter=max_iter)
    if not res.converged[0]:
        # a start outside the maximum's basin (Hessian not positive definite there)
        theta1 = _levenberg(objective, theta0)
        res = newton(objective, theta1[None, :], tol=gtol, max_iter=max_iter)
    res = polish(objective, res, gtol)
    fit = AFTFit(coef=res.theta[0], loglik=float(-res.loss[0]), information=res.hess[0],
                 gradient=res.grad[0], converged=bool(res.converged[0]),
                 n_iter=int(res.n_iter[0]), data=data, columns=columns, index=index,
                 raw=raw, tol=tol, max_iter=max_iter,
                 ids=None if subjects is None else subjects[0],
                 id_labels=None if subjects is None else subjects[1])
    fit.likelihood = lik
    if not fit.converged:
        gnorm = float(np.abs(res.grad[0]).max())
        warnings.warn(f"AFT fit did not converge: max |gradient| = {gnorm:.3g} (tol {tol:g}); "
                      "a scale may be going to 0 (as many parameters as events) or a "
                      "coefficient to infinity.", ConvergenceWarning, stacklevel=2)
    return fit


class AFTNotConvergedError(NotConvergedError):
    """The AFT fit did not converge: its refits have no reference point."""

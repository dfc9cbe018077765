"""Cause-specific Cox models: one Cox model per cause, the absolute risk built from all.

``fit_cause_specific`` fits, for each cause ``k`` of ``status`` (0 = censored, 1..K the
causes, as ``fit_fine_gray``), the Cox model of the event ``status == k`` with
:func:`~coxinfluence.fit_cox` (the other causes censor): R's ``riskRegression::CSC``,
each model equal to ``coxph(Surv(time, status == k) ~ ...)``. The absolute risk of cause
``k`` (R's ``predict(CSC, newdata, times, cause)``) uses every cause's model::

    F_k(t | x) = sum_{s <= t} S(s- | x) dLambda_k(s | x),

    S(s- | x) = prod_{u < s} (1 - sum_j dLambda_j(u | x))     (product_limit=True)
              = exp(-sum_j Lambda_j(s- | x))                  (product_limit=False),

``Lambda_j(t | x) = Lambda_0j(t) exp(x'beta_j)`` the cumulative hazard of cause ``j``'s
model with the baseline of its ties (Efron's tie correction for Efron fits, R's
``survfit(ctype = 2)``; Breslow's for Breslow fits: riskRegression's baseline), summed over
the jump times of every cause. The formula is :func:`absolute_risk`, which takes any
coefficients and a deletion per cause (the influence target ``ci.targets.AbsoluteRisk``
measures it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.data.followup import warn_beyond_follow_up
from coxinfluence.data.inputs import CoxInputError
from coxinfluence.data.new_patients import new_patient_matrix, nonnegative_times
from coxinfluence.data.units import resolve_units
from coxinfluence.models.base import FitInterface, standard_errors
from coxinfluence.models.cause_specific_influence import (
    absolute_risk_changes,
    coefficient_changes,
)
from coxinfluence.models.cox import fit_cox
from coxinfluence.models.predictions import cox_cumulative_hazard, cox_strata, follow_up_notes
from coxinfluence.numerics.rows import block_diagonal

__all__ = ["CauseSpecificFit", "fit_cause_specific", "absolute_risk", "cause_parts",
           "absolute_risk_notes", "simulate_competing_risks"]

def cause_parts(fit, X_new, strata=None):
    """Each cause's covariate matrix and stratum codes of new patients.

    Parameters
    ----------
    fit : CauseSpecificFit
        The fit.
    X_new : array_like or pandas.DataFrame
        The new patients (every cause's covariates; a DataFrame matched by name).
    strata : optional
        Their stratum labels (else read from ``X_new``'s stratum columns).

    Returns
    -------
    tuple
        ``(parts, index)``: a list of ``(X_j, codes_j)`` in ``fit.causes`` order, and the
        patients' labels.
    """
    parts, index = [], None
    for model in fit.models:
        X, index = new_patient_matrix(X_new, model.data.columns)
        parts.append((X, cox_strata(model, X_new, strata, X.shape[0])))
    return parts, index


def absolute_risk_notes(fit, parts, times, cause, patients):
    """The notes on ``times`` past cause ``cause``'s last event time in each patient's
    stratum: ``F_k(t|x)`` is flat after it (the rule of
    :func:`coxinfluence.models.predictions.follow_up_notes`, on cause ``k``'s model)."""
    j = fit.causes.index(cause)
    return follow_up_notes(fit.models[j], times, parts[j][1], patients, f"F{cause}(t|x)")


def _grid(fit):
    """The jump times of every cause's baseline hazard, sorted."""
    times = [m.data.time[m.data.event_rows] for m in fit.models]
    return np.unique(np.concatenate(times))


def absolute_risk(fit, thetas, parts, times, cause, product_limit=True, deleted=None):
    """``F_k(t | x)`` for any coefficients of every cause (module docstring).

    Parameters
    ----------
    fit : CauseSpecificFit
        The fit whose data give the baseline hazards.
    thetas : sequence of array_like
        One per cause (``fit.causes`` order), each (B, d_j): the problems' coefficients.
    parts : list
        ``cause_parts(fit, X_new)[0]``: each cause's patients' matrix and stratum codes.
    times : numpy.ndarray, shape (T,)
        Times.
    cause : int
        The cause ``k``.
    product_limit : bool, default True
        The survival ``S(s-)`` by the product limit, else ``exp(-sum_j Lambda_j)``.
    deleted : sequence of Deletion, optional
        Per cause, the rows (sorted as that cause's data) each problem deletes from its
        baseline hazard; None: none.

    Returns
    -------
    numpy.ndarray, shape (B, P, T)
        The absolute risks.
    """
    grid = _grid(fit)
    jumps = []
    for j, (model, (X, codes)) in enumerate(zip(fit.models, parts)):
        d = None if deleted is None else deleted[j]
        H = cox_cumulative_hazard(model, np.atleast_2d(thetas[j]), X, codes, grid, d)
        jumps.append(np.diff(H, axis=2, prepend=0.0))
    total = np.sum(jumps, axis=0)                                          # (B, P, G)
    if product_limit:
        surv = np.cumprod(1.0 - total, axis=2)
    else:
        surv = np.exp(-np.cumsum(total, axis=2))
    before = np.concatenate([np.ones_like(surv[:, :, :1]), surv[:, :, :-1]], axis=2)
    F = np.cumsum(before * jumps[fit.causes.index(cause)], axis=2)
    at = np.searchsorted(grid, np.asarray(times, dtype=np.float64), side="right") - 1
    F = np.concatenate([np.zeros_like(F[:, :, :1]), F], axis=2)
    return F[:, :, at + 1]


@dataclass(repr=False)
class CauseSpecificFit(FitInterface):
    """Cause-specific Cox models, made by :func:`~coxinfluence.fit_cause_specific`.

    One :class:`~coxinfluence.CoxFit` per cause (``models``, in ``causes`` order), R's
    ``riskRegression::CSC``. The interface every fit shares (``params`` named ``"cause
    k: covariate"``, ``se``, ``cov_params()`` block diagonal, ``conf_int()``,
    ``summary()``, ``loglik`` and ``aic`` summed over the causes, ``nobs``) and the
    absolute risk of a cause, :meth:`predict_absolute_risk`.

    Parameters
    ----------
    models : list of CoxFit
        Each cause's Cox model (the event ``status == k``).
    causes : list of int
        The causes, in the order of ``models``.
    status : numpy.ndarray
        The caller's status codes, caller's order.
    cause : int, optional
        The cause whose absolute risk ``ci.evaluate`` scores and ``ci.targets.AbsoluteRisk``
        takes by default (the fit protocol's ``cause``; None: 1). ``ci.evaluate(fit, ...,
        cause=k)`` and ``ci.influence(fit, ..., cause=k)`` set it on a copy.

    See Also
    --------
    coxinfluence.fit_cause_specific : Makes it.
    coxinfluence.FineGrayFit : The subdistribution hazard model of one cause.

    Examples
    --------
    >>> from coxinfluence.models.cause_specific import simulate_competing_risks
    >>> X, time, status = simulate_competing_risks()
    >>> fit = ci.fit_cause_specific(X, time, status)
    >>> fit.causes, fit.nobs, fit.n_events
    ([1, 2], 300, 236)
    >>> fit.params.round(3)
    covariate
    cause 1: age        0.042
    cause 1: treated   -0.334
    cause 2: age       -0.013
    cause 2: treated   -0.152
    Name: coef, dtype: float64
    """

    models: list
    causes: list
    status: np.ndarray = field(repr=False)
    cause: object = None

    @property
    def coef(self):
        """Every cause's coefficients, concatenated in ``causes`` order.

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.coef.round(3)
        array([ 0.042, -0.334, -0.013, -0.152])
        """
        return np.concatenate([m.coef for m in self.models])

    @property
    def columns(self):
        """The parameters' names, ``"cause k: covariate"``.

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.columns
        ['cause 1: age', 'cause 1: treated', 'cause 2: age', 'cause 2: treated']
        """
        return [f"cause {k}: {c}" for k, m in zip(self.causes, self.models)
                for c in m.columns]

    @property
    def covariates(self):
        """The covariates some cause's model reads from ``X`` (in first-use order).

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.covariates
        ['age', 'treated']
        """
        return list(dict.fromkeys(c for m in self.models for c in m.columns))

    @property
    def ratio_positions(self):
        """Every coefficient is a log hazard ratio (``target="hr"`` takes them all).

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.ratio_positions
        [0, 1, 2, 3]
        """
        return list(range(len(self.coef)))

    @property
    def strata_names(self):
        """The stratum columns of ``X`` (shared by the causes' models).

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.strata_names
        ()
        """
        return self.models[0].strata_names

    @property
    def index(self):
        """The training rows' labels in the caller's order, or None for arrays.

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.index[:3].tolist()
        [0, 1, 2]
        """
        return self.models[0].index

    @property
    def has_subjects(self):
        """Whether the rows were grouped into subjects (``id=``).

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.has_subjects
        False
        """
        return self.models[0].has_subjects

    @property
    def n(self):
        """The number of rows fitted (``nobs``).

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.n
        300
        """
        return self.models[0].n

    @property
    def n_units(self):
        """The number of units of deletion: the subjects (``id=``), else the rows.

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.n_units
        300
        """
        return self.models[0].n_units

    @property
    def n_events(self):
        """The number of rows with an event of a modelled cause.

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> [m.n_events for m in fit.models], fit.n_events
        ([157, 79], 236)
        """
        return int(sum(m.n_events for m in self.models))

    @property
    def converged(self):
        """Whether every cause's model converged.

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.converged
        True
        """
        return all(m.converged for m in self.models)

    @property
    def loglik(self):
        """The log partial likelihood, summed over the causes' models.

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> round(fit.loglik, 3) == round(sum(m.loglik for m in fit.models), 3)
        True
        """
        return float(sum(m.loglik for m in self.models))

    @property
    def information(self):
        """The observed information, block diagonal (one block per cause).

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.information.shape
        (4, 4)
        """
        return block_diagonal([m.information for m in self.models])

    @property
    def var(self):
        """The model-based covariance, block diagonal (each cause's ``coxph`` ``var``).

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> bool(fit.var[0, 2] == 0.0)
        True
        """
        return block_diagonal([m.var for m in self.models])

    @property
    def se(self):
        """The standard errors of the default variance (``robust_default``).

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.se.round(3)
        array([0.01 , 0.163, 0.014, 0.228])
        """
        return self._se(None)

    @property
    def robust_default(self):
        """Whether the summaries show the robust variance by default (R's ``coxph``
        rule: a case weight that is not an integer).

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> fit.robust_default
        False
        """
        return self.models[0].robust_default

    def robust_covariance(self, groups=None):
        """The grouped sandwich ``D'D`` of all the coefficients, ``D`` every cause's dfbeta.

        The causes' blocks are each model's ``robust_covariance(groups)``; the blocks
        between causes are the cross products of their dfbetas (same units).

        Parameters
        ----------
        groups : array_like, optional
            One cluster label per row (caller's order). Default: the subjects (``id=``),
            else the rows.

        Returns
        -------
        numpy.ndarray, shape (d, d)
            The robust covariance.

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> V = fit.robust_covariance()
        >>> np.allclose(V[:2, :2], fit.models[0].robust_covariance())
        True
        """
        D = coefficient_changes(self, [resolve_units(m, groups) for m in self.models])
        return D.T @ D

    def _summary_head(self, se, robust):
        head = {"coef": self.coef, "exp(coef)": np.exp(self.coef),
                "se(coef)": standard_errors(np.diag(self.var)) if robust else se}
        if robust:
            head["robust se"] = se
        return head

    def _html_head(self):
        return (f"<p><b>Cause-specific Cox models</b>: n = {self.n}, causes "
                f"{self.causes}, events = {self.n_events}, log-likelihood = "
                f"{self.loglik:.6g}</p>")

    @cached_property
    def _grid(self):
        return _grid(self)

    def predict_absolute_risk(self, X_new, times, cause=1, product_limit=True, strata=None,
                              se=False):
        """The absolute risk (cumulative incidence) of a cause for new patients.

        ``F_k(t | x)`` from every cause's model (module docstring): R's
        ``predict(CSC, newdata, times, cause, product.limit =)$absRisk``.

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame
            The new patients' covariates (every cause's; a DataFrame matched by name).
        times : float or array_like
            Times (non-negative).
        cause : int, default 1
            The cause ``k``.
        product_limit : bool, default True
            The event-free survival by the product limit (R's default), else by
            ``exp(-sum_j Lambda_j)``.
        strata : optional
            Stratum labels of a stratified fit (default: ``X_new``'s stratum columns).
        se : bool, default False
            Also the standard errors, ``sqrt(sum_g change_g^2)`` over the units (the
            subjects of ``id=``, else the rows), ``change_g`` Reid's change of the risk
            (``coxinfluence.models.cause_specific_influence``): R's ``absRisk.se`` for the
            exponential formula on data without tied event times (with the product limit
            R's differs by about 1%: module docstring there).

        Returns
        -------
        pandas.DataFrame or tuple of pandas.DataFrame
            One row per patient (``X_new``'s index), one column per time; with ``se``,
            ``(risk, se)``.

        Raises
        ------
        ValueError
            If ``cause`` is not one of ``causes``.

        Examples
        --------
        >>> from coxinfluence.models.cause_specific import simulate_competing_risks
        >>> X, time, status = simulate_competing_risks()
        >>> fit = ci.fit_cause_specific(X, time, status)
        >>> risk = fit.predict_absolute_risk(X.head(2), [0.5, 1.0], cause=1)
        >>> risk.round(3)
        time    0.5    1.0
        0     0.497  0.685
        1     0.173  0.268
        >>> risk, se = fit.predict_absolute_risk(X.head(2), [0.5, 1.0], se=True)
        >>> se.round(3)
        time    0.5    1.0
        0     0.064  0.062
        1     0.040  0.057
        """
        if cause not in self.causes:
            raise ValueError(f"cause must be one of {self.causes}; got {cause!r}")
        if set(self.causes) != set(np.unique(self.status[self.status > 0]).tolist()):
            raise ValueError("the absolute risk needs a model of every cause in status; "
                             f"the fit has causes {self.causes}")
        t = nonnegative_times(times)
        parts, index = cause_parts(self, X_new, strata)
        labels = range(len(t)) if index is None else index
        warn_beyond_follow_up(absolute_risk_notes(self, parts, t, cause, labels))
        F = absolute_risk(self, [m.coef for m in self.models], parts, t, cause,
                          product_limit)[0]
        columns = pd.Index(t, name="time")
        risk = pd.DataFrame(F, index=index, columns=columns)
        if not se:
            return risk
        change = absolute_risk_changes(self, parts, t, cause, product_limit)
        sd = np.sqrt((change ** 2).sum(axis=0)).reshape(F.shape)
        return risk, pd.DataFrame(sd, index=index, columns=columns)

    def __repr__(self):
        return (f"CauseSpecificFit(n={self.n}, causes={self.causes}, events="
                f"{[m.n_events for m in self.models]}, loglik={self.loglik:.6g}, "
                f"converged={self.converged})")


def fit_cause_specific(X, time, status, causes=None, ties="efron", strata=None,
                       weights=None, entry=None, id=None):
    """Fit a Cox model per cause of a competing-risks outcome (R's ``CSC``).

    Cause ``k``'s model is :func:`~coxinfluence.fit_cox` with the event ``status == k``
    (the other causes and 0 censor): ``coxph(Surv(time, status == k) ~ ...)``, as
    ``riskRegression::CSC(Hist(time, status) ~ ...)`` fits them.

    Parameters
    ----------
    X : pandas.DataFrame or array_like, shape (n, d)
        Numeric covariates (no intercept).
    time : array_like, shape (n,)
        Follow-up times.
    status : array_like, shape (n,)
        0 = censored, 1..K = the cause of the event.
    causes : sequence of int or dict, optional
        The causes to model (default every nonzero code of ``status``, sorted); a dict
        maps each cause to the columns of ``X`` its model uses (default every column).
    ties : {"efron", "breslow"}, default "efron"
        Tie handling of every model.
    strata : array_like or pandas.DataFrame, optional
        Stratum labels (every cause's model is stratified by them).
    weights : array_like, optional
        Positive case weights.
    entry : array_like, optional
        Delayed-entry times: row i is at risk on ``(entry_i, time_i]``.
    id : array_like, optional
        Subject labels (rows of a subject deleted together by the audit).

    Returns
    -------
    CauseSpecificFit
        The fit.

    Raises
    ------
    InputError
        For a status that is not a non-negative integer code, a cause without events, a
        covariate not in ``X``, or invalid data (``fit_cox``'s checks).

    See Also
    --------
    coxinfluence.fit_fine_gray : The Fine-Gray model of one cause.

    Examples
    --------
    >>> from coxinfluence.models.cause_specific import simulate_competing_risks
    >>> X, time, status = simulate_competing_risks()
    >>> fit = ci.fit_cause_specific(X, time, status)
    >>> fit.models[0].params.round(3)
    covariate
    age        0.042
    treated   -0.334
    Name: coef, dtype: float64

    Covariates per cause:

    >>> ci.fit_cause_specific(X, time, status, causes={1: ["age", "treated"],
    ...                                                2: ["age"]}).columns
    ['cause 1: age', 'cause 1: treated', 'cause 2: age']
    """
    code = np.asarray(status, dtype=np.float64).reshape(-1)
    if np.any(~np.isfinite(code)) or np.any(code < 0) or np.any(code != np.round(code)):
        raise CoxInputError("status must hold non-negative integers (0 = censored, 1..K "
                            "the causes)")
    code = code.astype(np.int64)
    if not isinstance(X, pd.DataFrame):
        arr = np.asarray(X, dtype=np.float64)
        arr = arr.reshape(-1, 1) if arr.ndim == 1 else arr
        X = pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])
    present = sorted(np.unique(code[code > 0]).tolist())
    if causes is None:
        causes = present
    chosen = dict(causes) if isinstance(causes, dict) else {k: list(X.columns)
                                                           for k in causes}
    models = []
    for k, cols in chosen.items():
        missing = [c for c in cols if c not in X.columns]
        if missing:
            raise CoxInputError(f"cause {k}: the covariates {missing} are not columns of X")
        if not np.any(code == k):
            raise CoxInputError(f"cause {k} has no events in status")
        models.append(fit_cox(X[list(cols)], time, (code == k).astype(np.float64),
                              entry=entry, id=id, weights=weights, strata=strata, ties=ties))
    return CauseSpecificFit(models=models, causes=[int(k) for k in chosen], status=code)


def simulate_competing_risks(n=300, seed=3):
    """A simulated competing-risks data set (the examples' data): ``(X, time, status)``.

    ``X``: ``age`` ~ N(60, 8) and ``treated`` ~ Bernoulli(1/2); cause 1 at rate
    ``exp(0.03 (age - 60) - 0.5 treated)``, cause 2 at rate 1/2, censoring at rate 1/3;
    times rounded to 2 decimals (ties); ``status`` 0 censored, 1, 2 the causes.

    Parameters
    ----------
    n : int, default 300
        The number of subjects.
    seed : int, default 3
        The seed of ``numpy.random.default_rng``.

    Returns
    -------
    tuple
        ``(X (pandas.DataFrame), time (numpy.ndarray), status (numpy.ndarray))``.

    Examples
    --------
    >>> from coxinfluence.models.cause_specific import simulate_competing_risks
    >>> X, time, status = simulate_competing_risks()
    >>> X.shape, np.bincount(status).tolist()
    ((300, 2), [64, 157, 79])
    """
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.normal(60, 8, n), "treated": rng.integers(0, 2, n)})
    t1 = rng.exponential(np.exp(-0.03 * (X["age"] - 60) + 0.5 * X["treated"]))
    t2 = rng.exponential(2.0, n)
    censor = rng.exponential(3.0, n)
    time = np.round(np.minimum(np.minimum(t1, t2), censor), 2)
    status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
    return X, time, status

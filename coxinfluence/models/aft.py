"""Parametric accelerated failure time (AFT) regression, as R's ``survreg``.

``fit_aft`` minimises the negative log-likelihood of
``coxinfluence.likelihood.aft`` (``log T = x'beta + sigma W``; Weibull, exponential,
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
    check_event_indicator,
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
from coxinfluence.numerics.newton import gradient_tolerance, newton
from coxinfluence.numerics.rows import matmul_reduce_rows

__all__ = ["AFTFit", "fit_aft", "aft_gradient_tolerance", "POLISH_STEPS"]

#: finishing Newton steps of an AFT fit and its refits (``numerics.newton``'s ``polish``):
#: with covariates in large units the step test stops at a gradient of 1e-9, one more
#: step takes it to rounding, as R's ``survreg``
POLISH_STEPS = 3

#: the names R's survreg prints for the distributions
DIST_NAMES = {"weibull": "Weibull", "exponential": "Exponential", "lognormal": "Log-normal",
              "loglogistic": "Log-logistic"}


def aft_gradient_tolerance(data, tol):
    """The gradient tolerance of an AFT fit: the one rule of
    :func:`coxinfluence.numerics.newton.gradient_tolerance` over every row (the design
    with its intercept), ``tol`` or ``4 eps sum_i w_i max_j |x_ij|`` when larger."""
    return gradient_tolerance(tol, data.weights, data.X)


@dataclass(eq=False)
class AFTFit(FitInterface):
    """A fitted parametric AFT model, made by :func:`~coxinfluence.fit_aft`: R's ``survreg``.

    ``log T = x'beta + sigma W``. The interface every fit shares
    (``FitInterface``): ``params``, ``se``,
    ``cov_params(robust=False)``, ``conf_int(alpha=0.05, robust=False)`` (of every
    parameter, ``Log(scale)`` included; R's ``confint`` gives those of the
    coefficients), ``summary(robust=False)`` (with ``exp(Value)`` and its limits: the
    time ratios of the covariates, the scale ``sigma`` on the ``Log(scale)`` rows,
    ``exp(intercept)`` the time scale at ``x = 0``), ``loglik``, ``nobs``, ``n_units``,
    ``n_events``, ``aic`` (R's ``AIC(survreg)``: ``-2 loglik + 2 k``, ``k`` the
    coefficients and the log scales), ``influence(...)``; predictions for new patients
    (``predict_lp``, ``predict_survival``, ``predict_quantile``).

    Parameters
    ----------
    coef : numpy.ndarray, shape (k,)
        The full parameter vector in R's order: intercept, covariates, then
        ``log(scale)`` per stratum (none for the exponential), named by ``columns``.
    loglik : float
        The log-likelihood at ``coef`` (R's ``fit$loglik[2]``), on the time scale: it
        includes ``-sum w log t`` of the exact times.
    information : numpy.ndarray, shape (k, k)
        The Hessian of the negative log-likelihood at ``coef``; ``var`` is its inverse,
        R's ``vcov(fit)``.
    gradient : numpy.ndarray, shape (k,)
        The gradient of the negative log-likelihood at ``coef`` (about 0 when
        converged).
    converged : bool
        Whether Newton-Raphson converged (False after a :class:`ConvergenceWarning`).
    n_iter : int
        The Newton iterations taken.
    data : AFTData
        The validated ``coxinfluence.likelihood.aft.AFTData``, in the caller's row
        order.
    columns : list of str
        The parameters' names, as R names them: ``(Intercept)``, the covariates,
        ``Log(scale)`` or ``Log(scale[stratum])``.
    index : pandas.Index, optional
        The caller's pandas index, or None.
    raw : dict
        The outcome as given (``time``, ``event`` or ``upper``, ``entry``, ``weights``,
        ``strata``, ``id``), caller's order: :meth:`training_frame`.
    tol : float, default 1e-10
        The gradient tolerance of the fit.
    max_iter : int, default 50
        The iteration limit of the fit.
    ids : numpy.ndarray, optional
        The subjects (``fit_aft(..., id=)``): each row's subject code (caller's row
        order) into ``id_labels``; None without an id. The audit's default units and the
        default clusters of :meth:`robust_covariance`.
    id_labels : pandas.Index, optional
        The subjects' sorted labels; None without an id.

    See Also
    --------
    coxinfluence.fit_aft : Makes it.
    coxinfluence.influence : The audit of a fit.

    Notes
    -----
    lifelines' names map as: WeibullAFT ``lambda_`` = R's coefficients, ``rho_``
    Intercept = ``-log(sigma)``; LogNormalAFT ``mu_`` = coefficients, ``sigma_``
    Intercept = ``log(sigma)``; LogLogisticAFT ``alpha_`` = coefficients, ``beta_``
    Intercept = ``-log(sigma)``. The loss is decomposable (a sum over rows), so the VIF
    equals Reid's influence function exactly.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
    >>> fit.params.round(4)
    parameter
    (Intercept)    3.9901
    fin            0.2722
    age            0.0407
    race          -0.2248
    wexp           0.1066
    mar            0.3113
    paro           0.0588
    prio          -0.0658
    Log(scale)    -0.3391
    Name: coef, dtype: float64
    >>> fit.scale.round(4)
    array([0.7124])
    """

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
        """The distribution: "weibull", "exponential", "lognormal" or "loglogistic".

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.dist
        'weibull'
        """
        return self.data.dist

    @property
    def n(self):
        """The number of rows fitted (``nobs``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.n, fit.n_events
        (432, 114)
        """
        return self.data.n

    @property
    def model_name(self):
        """The model's name as the report shows it, e.g. "Weibull AFT (survreg)".

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.model_name
        'Weibull AFT (survreg)'
        """
        return f"{DIST_NAMES[self.dist]} AFT (survreg)"

    @cached_property
    def likelihood(self) -> AFTLikelihood:
        """The fit's ``AFTLikelihood`` (loss, gradient,
        Hessian, per-row scores, with deletions).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.likelihood is fit.likelihood
        True
        """
        return AFTLikelihood(self.data)

    @property
    def covariates(self):
        """The covariates' names (without the intercept and the scales), a list.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.covariates
        ['fin', 'age', 'race', 'wexp', 'mar', 'paro', 'prio']
        >>> fit.columns[0], fit.columns[-1]
        ('(Intercept)', 'Log(scale)')
        """
        return list(self.columns[1:self.data.p])

    @property
    def has_subjects(self):
        """Whether the rows were grouped into subjects (``id=``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> aft = ci.fit_aft(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
        >>> aft.has_subjects
        False
        """
        return self.ids is not None

    @property
    def scale(self):
        """The scale ``sigma`` per stratum (R's ``fit$scale``), an array; 1 for the
        exponential.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.scale.round(4)
        array([0.7124])
        """
        if self.data.fixed_scale:
            return np.ones(1)
        return np.exp(self.coef[self.data.p:])

    @property
    def time_ratios(self) -> pd.Series:
        """The time ratios ``exp(beta_j)`` of the covariates, a Series.

        The factor on survival times (every quantile) per unit of ``x_j``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.time_ratios.round(3).head(3)
        fin     1.313
        age     1.042
        race    0.799
        Name: time ratio, dtype: float64
        """
        return pd.Series(np.exp(self.coef[1:self.data.p]), index=self.covariates,
                         name="time ratio")

    @property
    def var(self):
        """The model-based covariance, the inverse information: R's ``vcov(fit)``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.var.shape
        (9, 9)
        >>> bool(np.allclose(fit.var @ fit.information, np.eye(9)))
        True
        """
        return np.linalg.inv(self.information)

    @property
    def se(self):
        """Standard errors ``sqrt(diag(var))``, an array (R's standard errors).

        The summary's ``Std. Error`` column.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.se.round(3)
        array([0.419, 0.138, 0.016, 0.22 , 0.152, 0.273, 0.14 , 0.021, 0.089])
        """
        return standard_errors(np.diag(self.var))

    def objective(self, thetas, deleted=None):
        """The negative log-likelihood at each row of ``thetas``.

        Parameters
        ----------
        thetas : array_like, shape (B, k) or (k,)
            Parameter vectors in R's order, one per row.
        deleted : Deletion or array_like, optional
            The rows kept: a ``Deletion`` over the
            caller's rows, or a (B, n) presence array; None: all rows.

        Returns
        -------
        numpy.ndarray, shape (B,)
            The loss; NaN for rows of ``thetas`` that are not finite.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.objective(fit.coef).round(4), round(-fit.loglik, 4)
        (array([679.9166]), 679.9166)
        """
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
        """Each row's gradient of its loss ``-l_i`` at ``coef``.

        R's score residuals are minus these.

        Returns
        -------
        numpy.ndarray, shape (n, k)
            One row per data row (caller's order), without the case weight.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> scores = fit.row_scores()
        >>> scores.shape
        (432, 9)
        >>> bool(np.abs(scores.sum(axis=0)).max() < 1e-6)
        True
        """
        return self.likelihood.row_scores(self.coef)

    def dfbeta(self):
        """R's ``residuals(fit, "dfbeta")``: ``-H^{-1} grad(-l_i)`` per row.

        Per unit of case weight, as R's for a weighted ``survreg`` fit: ``w_i
        dfbeta_R(i)`` is about ``theta_hat - theta_hat_{-i}`` (unlike ``coxph``'s).

        Returns
        -------
        numpy.ndarray, shape (n, k)
            One row per data row (caller's order), one column per parameter.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.dfbeta()[:2, :2].round(5)
        array([[ 0.03524,  0.01055],
               [-0.00887,  0.00855]])
        """
        return -np.linalg.solve(self.information, self.row_scores().T).T

    def clusters(self, groups=None):
        """The units of deletion and of the robust covariance.

        Parameters
        ----------
        groups : array_like, optional
            One label per row (caller's order).

        Returns
        -------
        tuple of (numpy.ndarray, pandas.Index) or None
            ``(codes, labels)``: each row's unit code and the sorted labels, of
            ``groups`` when given, else of the subjects (``id=``); None when both are
            None (the units are the rows).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.clusters() is None
        True
        >>> codes, labels = fit.clusters(rossi.index % 40)
        >>> codes[:5], len(labels)
        (array([0, 1, 2, 3, 4]), 40)
        """
        if groups is not None:
            return encode_labels(groups, self.n, "groups", self.index)
        if self.ids is not None:
            return self.ids, self.id_labels
        return None

    def robust_covariance(self, groups=None):
        """The grouped sandwich ``D' D``: R's ``survreg(..., robust = TRUE, cluster =
        groups)$var``.

        ``D`` holds the per-unit sums of ``w_i dfbeta_R(i)``.

        Parameters
        ----------
        groups : array_like, optional
            The clusters, one label per row (caller's order); default the subjects
            (``id=``), else the rows.

        Returns
        -------
        numpy.ndarray, shape (k, k)
            The robust covariance (``cov_params(robust=True)`` names it).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> np.sqrt(np.diag(fit.robust_covariance())).round(3)[:3]
        array([0.463, 0.142, 0.017])
        """
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
        """The number of units of deletion: the subjects (``id=``), else the rows.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.n_units
        432
        """
        return len(self.id_labels) if self.ids is not None else self.n

    @property
    def n_events(self) -> int:
        """The number of rows with an exact (uncensored) time.

        Left-, right- and interval-censored rows are not counted.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.n_events
        114
        """
        return int(np.count_nonzero(self.data.kind == EXACT))

    def training_frame(self) -> pd.DataFrame:
        """The covariates and the outcome as given, caller's order and index.

        Returns
        -------
        pandas.DataFrame
            The covariates, then ``time`` and ``event`` (or ``upper``), and ``entry``,
            ``weights``, ``strata``, ``id`` when given.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.training_frame().head(2)
           fin   age  race  wexp  mar  paro  prio  time  event
        0  0.0  27.0   1.0   0.0  0.0   1.0   3.0  20.0    1.0
        1  0.0  18.0   1.0   0.0  0.0   1.0   8.0  17.0    1.0
        """
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
        """The survival probability ``S(t | x)`` of new patients at ``times``.

        ``S0((log t - x'beta) / sigma)``: R's ``1 - psurvreg(t, lp, scale, dist)``
        (``coxinfluence.models.predictions.predict_survival``).

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, p)
            The new patients' covariates, without the intercept (a DataFrame's columns
            matched by name, extra columns ignored).
        times : float or array_like
            Times (> 0).
        strata : optional
            For a stratified fit each patient's stratum label (one for all, or one per
            patient): its scale.

        Returns
        -------
        pandas.DataFrame
            Rows the patients (``X_new``'s index), columns the times.

        Warns
        -----
        coxinfluence.TargetBeyondFollowUpWarning
            A time past the last event time of the data (of the patient's stratum): the
            value there is the parametric model's extrapolation.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.predict_survival(X.iloc[:3], [10, 26, 52]).round(3)
        time   10.0   26.0   52.0
        0     0.967  0.880  0.714
        1     0.915  0.713  0.409
        2     0.920  0.727  0.431
        """
        return predictions.predict_survival(self, X_new, times, strata=strata)

    def predict_quantile(self, X_new, p=0.5, strata=None):
        """The ``p``-quantile ``exp(x'beta + sigma w_p)`` of new patients' survival times.

        R's ``predict(fit, newdata, type = "quantile", p = p)``
        (``coxinfluence.models.predictions.predict_quantile``).

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, p)
            The new patients' covariates (as in :meth:`predict_survival`).
        p : float or array_like, default 0.5
            Probabilities in (0, 1); 0.5 gives the median.
        strata : optional
            Each patient's stratum in a stratified fit (as in :meth:`predict_survival`).

        Returns
        -------
        pandas.Series or pandas.DataFrame
            One ``p``: a Series indexed by the patients (named ``Q(p)``); several: a
            DataFrame, rows the patients, columns ``p``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.predict_quantile(X.iloc[:3]).round(1)
        0    86.9
        1    43.4
        2    45.3
        Name: Q(0.5), dtype: float64
        >>> fit.predict_quantile(X.iloc[:3], p=[0.25, 0.5]).round(1)
        p  0.25  0.50
        0  46.5  86.9
        1  23.2  43.4
        2  24.2  45.3
        """
        return predictions.predict_quantile(self, X_new, p, strata=strata)

    def predict_lp(self, X_new):
        """The linear predictor ``x'beta`` of new patients, with the intercept.

        R's ``predict(fit, newdata, type = "lp")`` (survreg's lp is not centred;
        ``coxinfluence.models.predictions.predict_lp``).

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, p)
            The new patients' covariates (as in :meth:`predict_survival`).

        Returns
        -------
        pandas.Series
            One value per patient, named ``lp``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> fit.predict_lp(X.iloc[:3]).round(3)
        0    4.726
        1    4.030
        2    4.073
        Name: lp, dtype: float64
        """
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
        check_event_indicator(e, index, censored="right-censored")
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


def fit_aft(X, time, event=None, dist="weibull", *, upper=None, entry=None, weights=None,
            strata=None, id=None, tol=1e-10, max_iter=50, init=None) -> AFTFit:
    """Fit a parametric accelerated failure time (AFT) model, as R's ``survreg``.

    ``log T = x'beta + sigma W``, with ``W`` extreme-value (Weibull, exponential),
    normal (log-normal) or logistic (log-logistic). Minimises the negative
    log-likelihood (``coxinfluence.likelihood.aft``; right, left and interval
    censoring, delayed entry, case weights, one scale per stratum) by Newton-Raphson
    with step halving, from a least-squares start.

    Parameters
    ----------
    X : array_like or pandas.DataFrame, shape (n, p)
        Numeric covariates (the intercept is added).
    time : array_like, shape (n,)
        Positive follow-up times; with ``upper``, the lower bounds.
    event : array_like, shape (n,), optional
        1 for an event (exact time), 0 for right-censored. Required unless ``upper`` is
        given.
    dist : {"weibull", "exponential", "lognormal", "loglogistic"}, default "weibull"
        The distribution of ``T``.
    upper : array_like, shape (n,), optional
        Upper bounds for interval-censored data, as R's ``Surv(time, upper, type =
        "interval2")`` and lifelines' ``fit_interval_censoring``: ``time == upper`` an
        exact time, ``upper`` inf or NaN right-censored at ``time``, ``time`` 0 or NaN
        left-censored at ``upper``, else censored in ``(time, upper]``. ``event`` must
        be None then.
    entry : array_like, shape (n,), optional
        Entry times (delayed entry, left truncation: the row's likelihood is divided by
        ``S(entry)``); 0 means from the origin.
    weights : array_like, shape (n,), optional
        Positive case weights (R's ``weights=``).
    strata : array_like or pandas.DataFrame, optional
        Labels, one per row (or a DataFrame): each stratum has its own scale (R's
        ``strata()`` term); names as R's ``Log(scale[label])``, or
        ``Log(scale[name=label])`` for a named Series.
    id : array_like, shape (n,), optional
        Subject labels (no missing label): a subject's rows (e.g. its intervals
        ``(entry, time]`` with time-varying covariates) are one unit of the audit,
        deleted together, results indexed by the sorted labels; and the default clusters
        of the robust covariance (R's ``survreg(..., cluster = id)``). The fit itself
        does not depend on ``id``: each row is a term of the likelihood.
    tol : float, default 1e-10
        Convergence when ``max |gradient| <= tol`` (or the gradient's rounding floor,
        ``aft_gradient_tolerance``) and the Newton step is small
        (``coxinfluence.numerics.newton.converged``).
    max_iter : int, default 50
        Newton iterations before a :class:`~coxinfluence.ConvergenceWarning`.
    init : array_like, shape (k,), optional
        Starting parameters in R's order (default: ``least_squares_start``).

    Returns
    -------
    AFTFit
        The fit, its parameters in R's order and with R's names.

    Raises
    ------
    InputError
        Naming the problem: an unknown ``dist``; NaN or infinite values; times not
        positive; events not 0/1; both or neither of ``event`` and ``upper``; bounds out
        of order; entry after the time; non-positive weights; no events; constant or
        collinear covariates; no more rows than location parameters; strata with the
        exponential (it has no scale); an ``init`` of the wrong length.

    Warns
    -----
    ConvergenceWarning
        When Newton-Raphson does not converge (a scale may be going to 0, or a
        coefficient to infinity); ``converged`` is then False.

    See Also
    --------
    coxinfluence.AFTFit : The fit and its methods.
    coxinfluence.fit_cox : The Cox model.
    coxinfluence.influence : The audit of the fit.

    Notes
    -----
    The R equivalent is ``survreg(Surv(time, event) ~ X, dist = "weibull")``: the
    parameters in R's order (intercept, covariates, ``log(sigma)`` per stratum; none for
    the exponential), the log-likelihood on R's time scale, the observed information
    and its inverse (R's ``vcov(fit)``).

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
    >>> fit.summary()[["Value", "Std. Error", "p", "exp(Value)"]].round(3)
                 Value  Std. Error      p  exp(Value)
    (Intercept)  3.990       0.419  0.000      54.062
    fin          0.272       0.138  0.049       1.313
    age          0.041       0.016  0.011       1.042
    race        -0.225       0.220  0.307       0.799
    wexp         0.107       0.152  0.482       1.112
    mar          0.311       0.273  0.255       1.365
    paro         0.059       0.140  0.674       1.061
    prio        -0.066       0.021  0.002       0.936
    Log(scale)  -0.339       0.089  0.000       0.712
    >>> round(fit.loglik, 3)
    -679.917

    A log-normal model:

    >>> lognormal = ci.fit_aft(X, rossi["week"], rossi["arrest"], dist="lognormal")
    >>> lognormal.params.round(4).tail(2)
    parameter
    prio         -0.0655
    Log(scale)    0.2582
    Name: coef, dtype: float64
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
    # damping: a start outside the maximum's basin (a scale far from the data's) has a
    # Hessian that is not positive definite; polish: R's finishing steps
    res = newton(objective, theta0[None, :], tol=gtol, max_iter=max_iter, damping=True,
                 polish=POLISH_STEPS)
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

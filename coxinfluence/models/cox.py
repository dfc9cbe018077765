"""The Cox model: loss, gradient and Hessian for callers' arrays, and the fitter.

``cox_loss``, ``cox_gradient`` and ``cox_hessian`` evaluate the negative log partial
likelihood (R's weighted Efron or Breslow ties, strata, case weights; the formula is in
``coxinfluence.likelihood.risk_sets``, which holds its one implementation) for the caller's data.
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
    """Newton-Raphson stopped before the gradient reached the tolerance.

    The base of every convergence warning of the package (``FineGrayConvergenceWarning``
    and the lifelines integration's ``LifelinesNotConvergedWarning`` included), so that
    ``warnings.simplefilter("error", ci.ConvergenceWarning)`` turns them all into
    errors. A fit that warns has ``converged`` False; its coefficients may be infinite
    (separation, a monotone likelihood) or the design nearly singular. The influence
    functions warn with it too when given a fit that did not converge.

    See Also
    --------
    coxinfluence.NotConvergedError : Raised where a non-converged fit cannot be used.

    Examples
    --------
    A covariate that separates the events (every event has ``x = 0``, every later time
    ``x = 1``): the partial likelihood has no maximum.

    >>> import warnings
    >>> x = np.r_[np.zeros(10), np.ones(10)]
    >>> time = np.arange(1.0, 21.0)
    >>> event = np.r_[np.ones(10), np.zeros(10)]
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     fit = ci.fit_cox(x, time, event)
    >>> caught[0].category is ci.ConvergenceWarning, fit.converged
    (True, False)
    >>> print(caught[0].message)
    Cox fit did not converge: ... Coefficients may be infinite (separation) or the design
    nearly singular.
    """


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
    r"""Negative log partial likelihood at ``theta``, summed over events.

    Minus R's ``coxph(...)$loglik`` at these coefficients (``fit$loglik[2]`` at the
    fitted ones).

    Parameters
    ----------
    theta : array_like, shape (d,)
        Coefficients at which to evaluate.
    X : array_like or pandas.DataFrame, shape (n, d)
        Numeric covariates (no intercept).
    time : array_like, shape (n,)
        Follow-up times (non-negative when ``start`` is None).
    event : array_like, shape (n,)
        1 for an event, 0 for right-censored.
    start : array_like, shape (n,), optional
        Entry times: row i is at risk on ``(start_i, time_i]`` (R's ``Surv(start, stop,
        event)``); None: from the origin.
    weights : array_like, shape (n,), optional
        Positive case weights (R's ``weights=``); default 1.
    strata : array_like or pandas.DataFrame, optional
        Stratum labels, one per row (or a DataFrame of several stratum columns): each
        stratum has its own risk sets.
    ties : {"efron", "breslow"}, default "efron"
        Tie handling, R's weighted Efron approximation or Breslow's.

    Returns
    -------
    float
        ``L(theta)``, the negative log partial likelihood (Notes).

    Raises
    ------
    InputError
        For invalid data (NaN or infinite values, events not 0/1, non-positive weights,
        mismatched lengths, no events, ...) or a ``theta`` of the wrong length.

    See Also
    --------
    coxinfluence.cox_gradient : Its gradient.
    coxinfluence.cox_hessian : Its Hessian.
    coxinfluence.fit_cox : Its minimiser.

    Notes
    -----
    The loss is the *negative* log partial likelihood, summed (not averaged) over
    events, with R's weighted Efron (default) or Breslow ties and strata:

    .. math::

        L(\theta) = \sum_s \sum_g \Big[ -\sum_{k \in D_g} w_k \eta_k
            + m_g \sum_{r=0}^{d_g - 1} \log\big(S^0_g - c_r S^{0D}_g\big) \Big],

    with :math:`\eta = X\theta`, :math:`S^0_g = \sum_{j \in R_g} w_j e^{\eta_j}`,
    :math:`S^{0D}_g = \sum_{k \in D_g} w_k e^{\eta_k}`,
    :math:`m_g = \sum_{k \in D_g} w_k / d_g` and :math:`c_r = r / d_g` (Efron) or 0
    (Breslow), where :math:`R_g` is the risk set of tie group :math:`g` (same stratum,
    :math:`t \ge t_g`, and with delayed entry :math:`\mathrm{start} < t_g`) and
    :math:`D_g` its :math:`d_g` events (Therneau & Grambsch 2000,
    eq. 3.6; R survival ``coxfit6.c``). The one implementation is
    ``coxinfluence.likelihood.risk_sets``.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> round(ci.cox_loss(fit.coef, X, rossi["week"], rossi["arrest"]), 4)
    658.7477
    >>> round(-fit.loglik, 4)
    658.7477
    >>> round(ci.cox_loss(np.zeros(7), X, rossi["week"], rossi["arrest"]), 4)
    675.3806
    """
    data, theta = _data_for(theta, X, time, event, start, weights, strata, ties)
    return float(RiskSets(data).loss_grad_hess(theta[None, :], hess=False)[0][0])


def cox_gradient(theta, X, time, event, *, start=None, weights=None, strata=None,
                 ties="efron"):
    """Gradient of the negative log partial likelihood at ``theta`` (minus R's score).

    Parameters
    ----------
    theta : array_like, shape (d,)
        Coefficients at which to evaluate.
    X : array_like or pandas.DataFrame, shape (n, d)
        Numeric covariates (no intercept).
    time : array_like, shape (n,)
        Follow-up times (non-negative when ``start`` is None).
    event : array_like, shape (n,)
        1 for an event, 0 for right-censored.
    start : array_like, shape (n,), optional
        Entry times: row i is at risk on ``(start_i, time_i]`` (R's ``Surv(start, stop,
        event)``); None: from the origin.
    weights : array_like, shape (n,), optional
        Positive case weights (R's ``weights=``); default 1.
    strata : array_like or pandas.DataFrame, optional
        Stratum labels, one per row (or a DataFrame of several stratum columns): each
        stratum has its own risk sets.
    ties : {"efron", "breslow"}, default "efron"
        Tie handling, R's weighted Efron approximation or Breslow's.

    Returns
    -------
    numpy.ndarray, shape (d,)
        ``grad L(theta)``, minus R's score vector: zero at the fitted coefficients.

    Raises
    ------
    InputError
        For invalid data (NaN or infinite values, events not 0/1, non-positive weights,
        mismatched lengths, no events, ...) or a ``theta`` of the wrong length.

    See Also
    --------
    coxinfluence.cox_loss : The loss and its formula.
    coxinfluence.cox_hessian : Its Hessian.

    Notes
    -----
    With the notation of :func:`cox_loss` and ``S1``, ``S1D`` the ``x``-weighted sums::

        grad L = -sum_events w_k x_k + sum_terms m (S1 - c S1D) / (S0 - c S0D)

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> g = ci.cox_gradient(fit.coef, X, rossi["week"], rossi["arrest"])
    >>> bool(np.abs(g).max() < 1e-8)
    True
    >>> ci.cox_gradient(np.zeros(7), X, rossi["week"], rossi["arrest"]).round(3)
    array([  10.439,  233.799,   -2.713,   16.432,    7.198,    2.944, -108.967])
    """
    data, theta = _data_for(theta, X, time, event, start, weights, strata, ties)
    return RiskSets(data).loss_grad_hess(theta[None, :], hess=False)[1][0]


def cox_hessian(theta, X, time, event, *, start=None, weights=None, strata=None,
                ties="efron"):
    """Hessian of the negative log partial likelihood at ``theta``.

    At the fitted coefficients this is the observed information, ``fit.information``
    (R's ``solve(fit$var)``).

    Parameters
    ----------
    theta : array_like, shape (d,)
        Coefficients at which to evaluate.
    X : array_like or pandas.DataFrame, shape (n, d)
        Numeric covariates (no intercept).
    time : array_like, shape (n,)
        Follow-up times (non-negative when ``start`` is None).
    event : array_like, shape (n,)
        1 for an event, 0 for right-censored.
    start : array_like, shape (n,), optional
        Entry times: row i is at risk on ``(start_i, time_i]`` (R's ``Surv(start, stop,
        event)``); None: from the origin.
    weights : array_like, shape (n,), optional
        Positive case weights (R's ``weights=``); default 1.
    strata : array_like or pandas.DataFrame, optional
        Stratum labels, one per row (or a DataFrame of several stratum columns): each
        stratum has its own risk sets.
    ties : {"efron", "breslow"}, default "efron"
        Tie handling, R's weighted Efron approximation or Breslow's.

    Returns
    -------
    numpy.ndarray, shape (d, d)
        ``hess L(theta)``.

    Raises
    ------
    InputError
        For invalid data (NaN or infinite values, events not 0/1, non-positive weights,
        mismatched lengths, no events, ...) or a ``theta`` of the wrong length.

    See Also
    --------
    coxinfluence.cox_loss : The loss and its formula.
    coxinfluence.cox_gradient : Its gradient.

    Notes
    -----
    With the notation of :func:`cox_loss` and ``S2``, ``S2D`` the ``x x'``-weighted
    sums::

        hess L = sum_terms m [ (S2 - c S2D) / (S0 - c S0D) - a a' ],
        a = (S1 - c S1D) / (S0 - c S0D)

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> H = ci.cox_hessian(fit.coef, X, rossi["week"], rossi["arrest"])
    >>> H.shape
    (7, 7)
    >>> bool(np.allclose(H, fit.information))
    True
    """
    data, theta = _data_for(theta, X, time, event, start, weights, strata, ties)
    return RiskSets(data).loss_grad_hess(theta[None, :])[2][0]


# -------------------------------------------------------------------------- fit

@dataclass(eq=False)
class CoxFit(FitInterface):
    """A fitted Cox proportional hazards model, made by :func:`~coxinfluence.fit_cox`.

    The interface every fit shares (``FitInterface``):
    ``params``, ``se``, ``cov_params(robust=None)``, ``conf_int(alpha=0.05,
    robust=None)``, ``summary(robust=None)``, ``loglik``, ``nobs``, ``n_units``,
    ``n_events``, ``aic`` (R's ``AIC(coxph)``: ``-2 loglik + 2 d``; none for a penalised
    fit), ``influence(...)`` (``ci.influence(fit, ...)``); predictions for new patients
    (``predict_lp``, ``predict_risk``, ``predict_cumulative_hazard``,
    ``predict_survival``). Every influence function of the package takes it.

    Parameters
    ----------
    coef : numpy.ndarray, shape (d,)
        The fitted coefficients: they minimise the objective, the negative log partial
        likelihood ``L``, plus ``penalty`` when there is one.
    loglik : float
        The log partial likelihood ``-L(coef)`` without the penalty (R's
        ``fit$loglik[2]``, also for penalised fits).
    information : numpy.ndarray, shape (d, d)
        The Hessian of the minimised objective at ``coef``: the observed information,
        R's ``solve(fit$var)``; with the penalty's Hessian for penalised fits, so that
        ``var`` and the influence functions use the objective that was minimised.
    gradient : numpy.ndarray, shape (d,)
        The objective's gradient at ``coef`` (about 0 when converged).
    converged : bool
        Whether Newton-Raphson converged to a maximum (False after a
        :class:`ConvergenceWarning`).
    n_iter : int
        The Newton iterations taken.
    data : CoxData
        The validated, sorted data.
    ties : {"efron", "breslow"}, default "efron"
        The tie method of the partial likelihood.
    tol : float, default 1e-10
        The gradient tolerance of the fit (:func:`fit_cox`).
    max_iter : int, default 50
        The iteration limit of the fit.
    penalty : object, optional
        A penalty added to the objective (lifelines' ridge, built by the lifelines
        integration): it has ``.value(thetas)`` and ``.strength``. None for
        ``fit_cox``.
    ctype : {None, 1, 2}, optional
        The baseline hazard of survival predictions (``coxinfluence.families.cox_targets``,
        :meth:`predict_survival`), as R's ``survfit(fit, ctype=)``: 1 = Breslow /
        Nelson-Aalen type (the events' weight over the risk-set sum at each event
        time), 2 = with Efron's tie correction; None (``fit_cox``) = R's default for the
        fit's ties (2 for Efron, 1 for Breslow). The integrations set the library's
        own: lifelines and statsmodels use 1.
    robust : bool, optional
        R's ``coxph(robust=)``: whether ``se``, ``cov_params()``, ``conf_int()`` and
        ``summary()`` show the robust (sandwich) variance by default
        (:attr:`robust_default`). None (``fit_cox``'s default): R's rule, the sandwich
        when the case weights are not integers.

    See Also
    --------
    coxinfluence.fit_cox : Makes it.
    coxinfluence.influence : The audit of a fit.

    Notes
    -----
    The R equivalent is ``coxph(Surv(time, event) ~ ., data, ties = "efron")``: the
    coefficients, ``loglik``, ``var`` (the model-based ``fit$naive.var``, which is
    ``fit$var`` unless R's fit is robust), ``robust_covariance`` (``coxph(..., cluster =
    id)$var``) and the summary's columns follow it. As R's ``coxph``, a fit with
    non-integer case weights reports the robust variance ``D'D`` (one unit per row, or
    per subject with ``id=``) by default (:attr:`robust_default`, :attr:`variance`);
    ``summary(robust=False)`` and ``cov_params(robust=False)`` give the model-based one.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> fit
    CoxFit(n=432, events=114, ties='efron', loglik=-658.748, converged=True, coef: fin=-0.3794,
    age=-0.05744, race=0.3139, wexp=-0.1498, mar=-0.4337, paro=-0.08487, prio=0.0915)
    >>> fit.hazard_ratios.round(3)
    array([0.684, 0.944, 1.369, 0.861, 0.648, 0.919, 1.096])
    """

    prediction_family = "cox"
    #: the training means a risk score subtracts (scikit-survival's centred estimators:
    #: ``SksurvCoxFit.centre``); None: not centred
    centre = None

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
    robust: object = None           # R's coxph(robust=): None = R's rule (above)

    @property
    def n(self):
        """The number of rows fitted (``nobs``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> fit.n, fit.nobs
        (432, 432)
        """
        return self.data.n

    @property
    def columns(self):
        """The covariates' names (a DataFrame's columns, else ``x0``, ``x1``, ...).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> fit.columns
        ['fin', 'age', 'prio']
        >>> ci.fit_cox(rossi[["fin", "age"]].to_numpy(), rossi["week"], rossi["arrest"]).columns
        ['x0', 'x1']
        """
        return list(self.data.columns)

    @property
    def index(self):
        """The training rows' labels in the caller's order, or None for arrays.

        A DataFrame's index (the fit protocol's ``index``,
        ``models.base.FitProtocol``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
        >>> fit.index[:3].tolist()
        [0, 1, 2]
        """
        return self.data.index

    @property
    def strata_names(self):
        """The stratum columns of ``X``, a tuple; empty without strata.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"],
        ...                  strata=rossi["race"])
        >>> fit.strata_names
        ('race',)
        """
        return tuple(self.data.strata_names or ())

    @property
    def has_subjects(self):
        """Whether the rows were grouped into subjects (``id=``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"],
        ...                  id=rossi.index)
        >>> fit.has_subjects
        True
        """
        return self.data.ids is not None

    @cached_property
    def risk_sets(self) -> RiskSets:
        """The risk-set kernels of the fitted data.

        A ``RiskSets``: the loss, gradient and
        Hessian with deletions, computed once per fit and reused.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> fit.risk_sets is fit.risk_sets
        True
        """
        return RiskSets(self.data)

    def objective(self, thetas, deleted=None):
        """The minimised objective at each row of ``thetas``.

        The negative log partial likelihood plus the penalty, if any, on all rows or
        without the rows ``deleted`` removes.

        Parameters
        ----------
        thetas : array_like, shape (B, d) or (d,)
            Coefficient vectors, one per row.
        deleted : Deletion, optional
            A ``Deletion`` over the sorted rows, one
            problem per row of ``thetas``; None: all rows.

        Returns
        -------
        numpy.ndarray, shape (B,)
            The objective; NaN for rows of ``thetas`` that are not finite.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.objective(np.vstack([fit.coef, np.zeros(7)])).round(4)
        array([658.7477, 675.3806])
        """
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
        """The grouped sandwich covariance ``D' D``, R's ``coxph(..., cluster = id)$var``.

        ``D`` is the per-unit dfbeta (R's ``resid(fit, "dfbeta", collapse = ...)``,
        ``IF_n(g) / n_units``); ``robust = TRUE`` without an id in R is one unit per row.

        Parameters
        ----------
        groups : array_like, optional
            One cluster label per row (caller's order). Default: the subjects
            (``id=``), else the rows.

        Returns
        -------
        numpy.ndarray, shape (d, d)
            The robust covariance (``cov_params(robust=True)`` names it).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> np.sqrt(np.diag(fit.robust_covariance())).round(3)
        array([0.196, 0.025, 0.292, 0.218, 0.38 , 0.199, 0.029])
        """
        units = resolve_units(self, groups)
        # D = IF_n / n_units, Reid's IF (influence_functions/reid.py): the gradient moves
        # by -w_i U_i when row i's weight drops by w_i
        delta = -self.data.weights[:, None] * score_residuals_sorted(self.risk_sets, self.coef)
        IF = np.asarray(self.paper_scale(units.collapse(delta), units, overwrite=True))
        D = IF / IF.shape[0]                 # one row per unit: IF_n(g) / n_units
        return D.T @ D

    def diverging_columns(self):
        """Covariates along which the partial likelihood is flat at ``coef``.

        The information in units of ``(events) x var(x_j)`` (about what a covariate
        carries at ``coef = 0``; events and variance weighted by the case weights, so
        one huge weight does not make every other direction look flat) has eigenvalues
        below 1e-8, and these columns load on those directions (``|loading| > 0.3``).
        This is R's "Loglik converged before variable ...; coefficient may be infinite".

        Returns
        -------
        list of str
            The names of those columns; empty when there are none (every column when
            the information is not finite).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.diverging_columns()
        []
        """
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
        """``-(H/n)^{-1} delta``: per-unit gradient differences on the paper's scale.

        The paper's scale of ``IF_n`` and ``VIF_n``, approximating ``n (theta_hat -
        theta_hat_{-g})``, with ``n`` the number of units (``docs/conventions.md``).

        Parameters
        ----------
        delta : array_like, shape (U, d)
            Per-unit gradient differences, in the unit order of ``units``.
        units : Units
            The units (a ``coxinfluence.data.units.Units``).
        overwrite : bool, default False
            Write the result into ``delta`` (a float64 array the caller owns), so 10^7
            rows need no second (U, d) array.

        Returns
        -------
        numpy.ndarray or pandas.DataFrame, shape (U, d)
            Rows come back in the caller's order and index; subjects and clusters as a
            DataFrame indexed by their sorted labels.

        Notes
        -----
        Solved by blocks of units with one LU factorisation (LAPACK getrf/getrs, as
        ``np.linalg.solve``), each block small enough for OpenBLAS to solve it on the
        calling thread (``coxinfluence.numerics.rows``: its helper threads, once
        woken, spin and slow the audit's other passes on a machine with few cores).

        Examples
        --------
        Deleting row ``i`` moves the gradient by minus its score residual, so the paper's
        scale of the score residuals (every row its own unit) is Reid's influence
        function:

        >>> from lifelines.datasets import load_rossi
        >>> from coxinfluence.data.units import row_units
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> delta = -ci.score_residuals(fit).to_numpy()
        >>> IF = fit.paper_scale(delta, row_units(fit.data))
        >>> IF.round(3).head(2)
             fin    age   prio
        0 -6.254  0.767 -0.153
        1 -5.199 -0.629  1.069
        >>> bool(np.allclose(IF, ci.reid_influence(fit)))
        True
        """
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
        """The model-based covariance of ``coef``: the inverse information.

        R's ``fit$naive.var`` (``fit$var`` when R's fit is not robust), whatever
        :attr:`robust_default`: ``cov_params()`` is the covariance the summaries show.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> bool(np.allclose(fit.var @ fit.information, np.eye(3)))
        True
        >>> bool(np.allclose(np.sqrt(np.diag(fit.var)), fit.se))
        True
        """
        return np.linalg.inv(self.information)

    @property
    def se(self):
        """Standard errors of the variance the summaries show, an array.

        ``sqrt(diag(cov_params()))``: the model-based ``sqrt(diag(var))``, or the robust
        ones when :attr:`robust_default` (non-integer case weights, as R's
        ``sqrt(diag(vcov(fit)))``); NaN where a variance is negative. :attr:`naive_se`
        is the model-based one always.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.se.round(3)
        array([0.191, 0.022, 0.308, 0.212, 0.382, 0.196, 0.029])

        With non-integer case weights the robust ones, as R:

        >>> w = 0.5 + (np.arange(len(rossi)) % 4) / 2
        >>> weighted = ci.fit_cox(X, rossi["week"], rossi["arrest"], weights=w)
        >>> weighted.se.round(3)
        array([0.212, 0.026, 0.32 , 0.248, 0.398, 0.223, 0.034])
        >>> weighted.naive_se.round(3)
        array([0.172, 0.021, 0.284, 0.193, 0.311, 0.18 , 0.027])
        """
        return self._se(None)

    @property
    def naive_se(self):
        """Model-based standard errors ``sqrt(diag(var))``, an array (R's ``se(coef)``).

        What :attr:`se` is unless the fit reports the robust variance
        (:attr:`robust_default`); the dfbetas divide by it, as R's. NaN where a variance
        is negative.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> bool(np.array_equal(fit.naive_se, fit.se))
        True
        """
        return standard_errors(np.diag(self.var))

    @property
    def robust_default(self) -> bool:
        """Whether the summaries show the robust variance by default, as R's ``coxph``.

        The fit's ``robust`` when given (``fit_cox(robust=)``), else R's rule: True when
        a case weight is not an integer (R's ``any(weights != floor(weights))``), the
        sandwich ``D'D`` of :meth:`robust_covariance` with one unit per row (per subject
        with ``id=``). ``se``, ``cov_params()``, ``conf_int()`` and ``summary()`` follow
        it when their ``robust`` is not given; :attr:`variance` says which it is.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> w = 0.5 + (np.arange(len(rossi)) % 4) / 2
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"], weights=w)
        >>> fit.robust_default, fit.variance
        (True, "robust (sandwich D'D; non-integer case weights, as R's coxph)")
        >>> ci.fit_cox(X, rossi["week"], rossi["arrest"], weights=2 * w).robust_default
        False
        """
        if self.robust is not None:
            return bool(self.robust)
        return self._fractional_weights

    @cached_property
    def _fractional_weights(self):
        w = self.data.weights
        return bool(np.any(w != np.floor(w)))

    def _robust_reason(self):
        if self.robust is not None:
            return "fit_cox(robust=True)"
        return "non-integer case weights, as R's coxph"

    @property
    def hazard_ratios(self):
        """The hazard ratios ``exp(coef)``, an array (the summary's ``exp(coef)``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> fit.hazard_ratios.round(4)
        array([0.7068, 0.9351, 1.1017])
        """
        return np.exp(self.coef)

    def _summary_head(self, se, robust):
        """summary(): coef, exp(coef), ``se(coef)`` (model-based) and, when robust, R's
        ``robust se`` (from :meth:`robust_covariance`, ``groups`` as there), as R's
        ``summary.coxph`` (:meth:`FitInterface.summary`)."""
        head = {"coef": self.coef, "exp(coef)": self.hazard_ratios,
                "se(coef)": self.naive_se if robust else se}
        if robust:
            head["robust se"] = se
        return head

    @property
    def n_units(self) -> int:
        """The number of units of deletion: the subjects (``id=``), else the rows.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> fit.n_units
        432
        """
        return len(self.data.id_labels) if self.data.ids is not None else self.n

    @property
    def n_events(self) -> int:
        """The number of rows with an event (R's ``fit$nevent``; not weighted).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> fit.n_events
        114
        """
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
        """The survival probability ``S(t | x)`` of new patients at ``times``.

        ``exp(-Lambda_0(t) exp(x'beta))``, R's ``survfit(fit, newdata)$surv`` read at
        ``times`` (``coxinfluence.models.predictions.predict_survival``).

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, d)
            The new patients' covariates (a DataFrame's columns matched by name, extra
            columns ignored).
        times : float or array_like
            Times (finite, >= 0).
        strata : optional
            For a stratified fit each patient's stratum label (one for all, or one per
            patient); default read from ``X_new``'s stratum column(s).
        ctype : {None, 1, 2}, optional
            The baseline: 1 Breslow, 2 with Efron's tie correction; None the fit's
            ``ctype`` (R's default for its ties).

        Returns
        -------
        pandas.DataFrame
            Rows the patients (``X_new``'s index), columns the times.

        Warns
        -----
        coxinfluence.TargetBeyondFollowUpWarning
            A time past the last event time of the data (of the patient's stratum): the
            value there is the last plateau carried forward.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.predict_survival(X.iloc[:3], [10, 26, 52]).round(3)
        time   10.0   26.0   52.0
        0     0.964  0.868  0.715
        1     0.908  0.687  0.411
        2     0.913  0.703  0.434
        """
        return predictions.predict_survival(self, X_new, times, strata=strata, ctype=ctype)

    def predict_cumulative_hazard(self, X_new, times, strata=None, ctype=None):
        """The cumulative hazard ``Lambda_0(t) exp(x'beta)`` of new patients at ``times``.

        R's ``survfit(fit, newdata)$cumhaz`` read at ``times``
        (``coxinfluence.models.predictions.predict_cumulative_hazard``).

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, d)
            The new patients' covariates (as in :meth:`predict_survival`).
        times : float or array_like
            Times (finite, >= 0).
        strata : optional
            Each patient's stratum in a stratified fit (as in :meth:`predict_survival`).
        ctype : {None, 1, 2}, optional
            The baseline (as in :meth:`predict_survival`).

        Returns
        -------
        pandas.DataFrame
            Rows the patients, columns the times.

        Warns
        -----
        coxinfluence.TargetBeyondFollowUpWarning
            A time past the last event time of the data (of the patient's stratum), as
            :meth:`predict_survival`.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.predict_cumulative_hazard(X.iloc[:3], [10, 26, 52]).round(3)
        time   10.0   26.0   52.0
        0     0.037  0.142  0.336
        1     0.097  0.376  0.889
        2     0.091  0.352  0.834
        """
        return predictions.predict_cumulative_hazard(self, X_new, times, strata=strata,
                                                     ctype=ctype)

    def predict_risk(self, X_new):
        """The relative risk ``exp(x'beta)`` of new patients, not centred.

        R's ``predict(fit, newdata, type = "risk", reference = "zero")``
        (``coxinfluence.models.predictions.predict_risk``).

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, d)
            The new patients' covariates (as in :meth:`predict_survival`).

        Returns
        -------
        pandas.Series
            One value per patient, named ``risk``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.predict_risk(X.iloc[:3]).round(3)
        0    0.351
        1    0.930
        2    0.872
        Name: risk, dtype: float64
        """
        return predictions.predict_risk(self, X_new)

    def predict_lp(self, X_new):
        """The linear predictor ``x'beta`` of new patients, not centred.

        R's ``predict(fit, newdata, type = "lp", reference = "zero")``
        (``coxinfluence.models.predictions.predict_lp``); subtract ``predict_lp`` of
        the training means to centre it as R's default and lifelines do.

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, d)
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
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.predict_lp(X.iloc[:3]).round(3)
        0   -1.047
        1   -0.073
        2   -0.137
        Name: lp, dtype: float64
        """
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
            ties="efron", tol=1e-10, max_iter=50, init=None, at_risk_at_entry=False,
            robust=None) -> CoxFit:
    """Fit a Cox proportional hazards model by Newton-Raphson with step halving.

    Minimises the negative log partial likelihood (:func:`cox_loss`: R's weighted Efron
    or Breslow ties, strata, case weights, delayed entry) and returns the fit every
    influence function takes. R's equivalent is ``coxph(Surv(time, event) ~ X, ties =
    "efron")`` (``Surv(start, time, event)`` with ``start``; ``+ strata(s)``,
    ``weights = w``, ``cluster = id``).

    Parameters
    ----------
    X : array_like or pandas.DataFrame, shape (n, d)
        Numeric covariates (no intercept). A DataFrame's columns name the coefficients
        and its index the rows of every result.
    time : array_like, shape (n,)
        Follow-up times (non-negative when ``start`` is None).
    event : array_like, shape (n,)
        1 for an event, 0 for right-censored.
    start : array_like, shape (n,), optional
        Entry times: row i is at risk on ``(start_i, time_i]``, as R's ``Surv(start,
        stop, event)`` (delayed entry, time-varying covariates); None means from the
        origin.
    entry : array_like, shape (n,), optional
        Delayed-entry (left-truncation) times, one row per subject: the row is at risk
        on ``(entry_i, time_i]``. The name every fitter uses (``fit_aft(entry=)``); here
        it is ``start`` under another name, so give one of the two (``start`` for
        several rows per subject, (start, stop] data).
    id : array_like, shape (n,), optional
        Subject labels: rows of one subject (several intervals) are one unit of the
        influence functions (deleted together; results per subject, indexed by the
        sorted labels). Intervals of one subject must not overlap within a stratum.
    weights : array_like, shape (n,), optional
        Positive case weights (R's ``weights=``); default 1. When one is not an integer
        the summaries report the robust variance by default, as R's ``coxph``
        (``robust``).
    strata : array_like or pandas.DataFrame, optional
        Stratum labels, one per row (or a DataFrame of several stratum columns); each
        stratum has its own baseline hazard and risk sets.
    ties : {"efron", "breslow"}, default "efron"
        Efron (as R and lifelines) or Breslow.
    tol : float, default 1e-10
        Convergence when ``max |gradient| <= tol`` (or the gradient's rounding floor
        when huge case weights make it larger:
        ``coxinfluence.likelihood.objective.gradient_tolerance``) and the Newton
        step is at most ``1e-6 (1 + max |coef|)``, or the step is at rounding level
        (``coxinfluence.numerics.newton.converged``).
    max_iter : int, default 50
        Newton iterations before giving up with a :class:`ConvergenceWarning`.
    init : array_like, shape (d,), optional
        Starting coefficients (default zeros, as R; from 2^20 rows on, the fit of a
        subsample of about 2^16 rows: ``subsample_start``).
    at_risk_at_entry : bool, default False
        With ``start``, a row is also at risk at its entry time, on ``[start, time]``
        (statsmodels' ``PHReg(entry=...)``, Stata's convention; the statsmodels
        integration sets it). Default False: R's and lifelines' ``(start, time]``.
    robust : bool, optional
        R's ``coxph(robust=)``: whether ``se``, ``cov_params()``, ``conf_int()`` and
        ``summary()`` report the robust (sandwich) variance ``D'D`` by default
        (:attr:`CoxFit.robust_default`; one unit per row, or per subject with ``id=``).
        Default None: R's rule, robust when a case weight is not an integer. Either
        variance stays available per call (``cov_params(robust=False)``, ...).

    Returns
    -------
    CoxFit
        The fit: ``params``, ``summary()``, ``loglik``, ``information``, ... and its data.

    Raises
    ------
    InputError
        Naming the problem, for NaN or infinite values, negative times (without
        ``start``), ``start >= time``, events not 0/1, non-positive weights, mismatched
        lengths or pandas indexes, no events, no more rows than covariates, constant or
        collinear columns, overlapping intervals of one subject, both ``start`` and
        ``entry``, or an ``init`` of the wrong length.

    Warns
    -----
    ConvergenceWarning
        When Newton-Raphson does not converge, or the log likelihood converges before
        some coefficients do (it is flat along them: they may be infinite, R's "Loglik
        converged before variable ..."); ``converged`` is then False.

    See Also
    --------
    coxinfluence.CoxFit : The fit and its methods.
    coxinfluence.influence : The audit of the fit.
    coxinfluence.fit_aft : Parametric (AFT) regression.
    coxinfluence.fit_fine_gray : Competing risks.

    Notes
    -----
    The loss is the negative log partial likelihood, summed over events; ``information``
    is its Hessian at ``coef`` (the observed information). The covariates are centred
    internally, as R's ``coxph`` does: the partial likelihood and every influence
    function are invariant to it. The caller's objects are copied, never modified.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> fit.params.round(4)
    covariate
    fin    -0.3794
    age    -0.0574
    race    0.3139
    wexp   -0.1498
    mar    -0.4337
    paro   -0.0849
    prio    0.0915
    Name: coef, dtype: float64
    >>> round(fit.loglik, 4)
    -658.7477

    Breslow's ties and a stratified fit:

    >>> breslow = ci.fit_cox(X, rossi["week"], rossi["arrest"], ties="breslow")
    >>> breslow.params.round(4).head(2)
    covariate
    fin   -0.3790
    age   -0.0572
    Name: coef, dtype: float64
    >>> by_wexp = ci.fit_cox(X.drop(columns="wexp"), rossi["week"], rossi["arrest"],
    ...                      strata=rossi["wexp"])
    >>> by_wexp.params.round(4).head(2)
    covariate
    fin   -0.3802
    age   -0.0582
    Name: coef, dtype: float64
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
                 n_iter=int(res.n_iter[0]), data=data, ties=ties, tol=tol, max_iter=max_iter,
                 robust=None if robust is None else bool(robust))
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
    """The fit did not converge: its leave-one-out refits have no reference point.

    Raised (a ``ValueError``) by the influence functions and the audit when a fit's
    coefficients are not identified (they diverge: a monotone likelihood, e.g. a
    covariate that separates the events, or (nearly) collinear covariates) and nothing
    can be computed from its information; never a raw ``LinAlgError``. A ridge penalty
    (lifelines' ``penalizer``) or removing the covariate gives a model with a maximum.
    ``AFTNotConvergedError`` is its AFT form.

    See Also
    --------
    coxinfluence.ConvergenceWarning : Warned when the fit stopped before converging.

    Examples
    --------
    >>> import warnings
    >>> x = np.r_[np.zeros(10), np.ones(10)]
    >>> time = np.arange(1.0, 21.0)
    >>> event = np.r_[np.ones(10), np.zeros(10)]
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", ci.ConvergenceWarning)
    ...     fit = ci.fit_cox(x, time, event)
    >>> try:
    ...     ci.vif(fit)
    ... except ci.NotConvergedError as exc:
    ...     print(exc)
    vif: the Cox fit did not converge: the coefficients of ['x0'] are not identified: ...
    """


def check_fit(fit, what=None, *, refuse=False) -> CoxFit:
    """``fit`` itself when it is a :class:`CoxFit`, else a ``TypeError`` naming its type.

    When the fit did not converge, ``what`` (the caller's name) gets, with
    ``refuse=True`` (the low-level functions) or when the information cannot be inverted,
    a :class:`NotConvergedError` naming the diverging coefficients (never a raw
    ``LinAlgError``); otherwise nothing here: ``ci.influence`` warns once, for every
    family (:func:`coxinfluence.audit.run.not_converged_message`)."""
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
    return fit


def _solvable(H):
    """The information can be inverted (finite, not exactly singular)."""
    try:
        return bool(np.isfinite(np.linalg.inv(H)).all())
    except np.linalg.LinAlgError:
        return False

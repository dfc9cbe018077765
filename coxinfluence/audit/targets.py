"""Quantities to attribute: the influence of each training patient on a target g.

Paper, Eq. (VIF-target): for a differentiable target ``g(theta)`` the influence of row i
follows from the parameter influence by the chain rule,

    g(theta_hat_{-i}) - g(theta_hat)  ~  J_g(theta_hat) (theta_hat_{-i} - theta_hat),
    J_g = d g / d theta  (m x d),

for every method's estimate of ``theta_hat_{-i} - theta_hat`` (VIF, Reid, one-step
Newton); the exact change refits without row i and evaluates ``g`` there
(:func:`target_change`, :func:`target_exact`). A target whose value depends on the data
directly (a Cox model's ``S(t|x)``, whose baseline hazard is estimated from the data)
adds its data effect, ``g(theta_hat; D_{-i}) - g(theta_hat; D)``.

This module is generic: it names no model family. Its targets are functions of ``theta``
alone or quantities dispatched on the model:

- :class:`Coefficients`: ``g = theta``, ``J = I``.
- :class:`HazardRatios`: ``g = exp(theta)``, ``J = diag(exp(theta))``.
- :class:`LinearPredictor`, :class:`Survival`, :class:`Quantile`: quantities of new
  patients, :class:`Dispatched` targets, which ``ci.influence`` replaces by the model
  family's own implementation (:func:`resolve_target`: the first of the model's
  ``target_names`` registered for the quantity, :func:`register_target`,
  :func:`implementation_of`) and which, used directly (``value(fit, theta)``), evaluate
  as the implementation for the fit.

The families' implementations live in :mod:`coxinfluence.families` and register
themselves on import: a Cox model's (``coxinfluence.families.cox_targets``: the linear
predictor, the relative risk, ``S(t|x)`` with its data effect), an AFT model's
(:mod:`coxinfluence.families.aft_targets`: ``S(t|x)``, the quantiles, the time ratios of
``target="tr"``), a lifelines parametric regression's
(:mod:`coxinfluence.families.lifelines_targets`), a scikit-survival estimator's
(:mod:`coxinfluence.families.sksurv_targets`), a Fine-Gray model's cumulative incidence
(:mod:`coxinfluence.families.fine_gray_targets`). ``ci.targets``
(:mod:`coxinfluence.targets`) gathers the public ones.

Times beyond follow-up: a target's :meth:`Target.followup_notes` says when its times are
past the last event time of the data, one note per stratum, and ``influence()`` issues
each as a :class:`TargetBeyondFollowUpWarning` and keeps them on the result
(``InfluenceResult.target_notes``).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.audit.target_base import (  # noqa: F401 (re-exported: the shared parts)
    Dispatched,
    Target,
    TargetBeyondFollowUpWarning,
    describe_targets,
    followup_notes,
    implementation_of,
    last_by_stratum,
    register_target,
    target_named,
)
from coxinfluence.data.new_patients import nonnegative_times, probabilities

__all__ = ["Target", "Coefficients", "HazardRatios", "LinearPredictor", "Survival",
           "Quantile", "Dispatched", "register_target", "implementation_of", "target_named",
           "resolve_target", "target_change", "target_exact", "TargetBeyondFollowUpWarning",
           "followup_notes", "describe_targets"]


@register_target
class Coefficients(Target):
    """The model's coefficients: ``g(theta) = theta``, ``J = I``.

    The default target of :func:`coxinfluence.influence` (``target=None`` or
    ``"coef"``): ``loo_change`` is then ``theta_hat_{-i} - theta_hat``, one column per
    parameter (for an AFT model the intercept and the log-scales too).

    See Also
    --------
    HazardRatios : ``exp(theta)``.
    coxinfluence.targets.TimeRatios : An AFT model's ``exp(beta_j)``.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> ci.targets.Coefficients().columns(fit)
    ['fin', 'age', 'prio']
    >>> res = ci.influence(fit, target="coef", method="vif")
    >>> res.loo_change.head(3).round(4)
          fin     age    prio
    0  0.0145 -0.0018  0.0004
    1  0.0121  0.0015 -0.0025
    2  0.0084  0.0006 -0.0036
    """

    name = "coef"
    quantity = "coef"
    aliases = ("coef", "coefficients")
    ask = "'coef'"

    def columns(self, fit):
        """The parameters' names, ``fit.columns``.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        list of str
            One name per parameter.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> target = ci.targets.Coefficients()
        >>> target.columns(fit)
        ['fin', 'age', 'prio']
        """
        return list(fit.columns)

    def value(self, fit, theta):
        """The coefficients themselves.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta : array_like, shape (B, d)
            Coefficient vectors.

        Returns
        -------
        numpy.ndarray, shape (B, d)
            ``theta`` as float64.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> target = ci.targets.Coefficients()
        >>> target.value(fit, fit.coef[None, :]).round(4)
        array([[-0.347 , -0.0671,  0.0969]])
        """
        return np.asarray(theta, dtype=np.float64)

    def jacobian(self, fit):
        """The identity.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        numpy.ndarray, shape (d, d)
            The identity matrix.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> target = ci.targets.Coefficients()
        >>> bool(np.allclose(target.jacobian(fit), np.eye(3)))
        True
        """
        return np.eye(len(fit.coef))


@register_target
class HazardRatios(Target):
    """The hazard ratios: ``g(theta) = exp(theta_j)`` of the covariates' coefficients.

    ``target="hr"`` of :func:`coxinfluence.influence` (Cox and Fine-Gray models; for
    Fine-Gray, the subdistribution hazard ratios). One column per covariate,
    ``"HR <name>"``: the coefficients at the fit's ``ratio_positions`` (the fit protocol,
    ``FitProtocol``; every coefficient of a Cox model, not
    a parametric model's intercept or shape); ``J`` their rows of
    ``diag(exp(theta_hat))``.

    See Also
    --------
    Coefficients : ``theta`` itself.
    coxinfluence.targets.TimeRatios : An AFT model's ratios.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> ci.targets.HazardRatios().columns(fit)
    ['HR fin', 'HR age', 'HR prio']
    >>> res = ci.influence(fit, target="hr", method="vif")
    >>> res.loo_change.head(3).round(4)
       HR fin  HR age  HR prio
    0  0.0102 -0.0017   0.0004
    1  0.0086  0.0014  -0.0027
    2  0.0059  0.0006  -0.0039
    """

    name = "hazard_ratio"
    quantity = "hazard_ratio"
    aliases = ("hr", "hazard_ratio", "hazard_ratios")
    ask = "'hr'"

    def columns(self, fit):
        """``"HR <name>"`` for each covariate's coefficient (``fit.ratio_positions``).

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        list of str
            One name per covariate's coefficient.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> hr = ci.targets.HazardRatios()
        >>> hr.columns(fit)
        ['HR fin', 'HR age', 'HR prio']
        """
        names = list(fit.columns)
        return [f"HR {names[k]}" for k in fit.ratio_positions]

    def value(self, fit, theta):
        """``exp(theta_j)`` of the covariates' coefficients.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta : array_like, shape (B, d)
            Coefficient vectors.

        Returns
        -------
        numpy.ndarray, shape (B, p)
            The hazard ratios at each row of ``theta``, one column per covariate.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> hr = ci.targets.HazardRatios()
        >>> hr.value(fit, fit.coef[None, :]).round(4)
        array([[0.7068, 0.9351, 1.1017]])
        """
        theta = np.asarray(theta, dtype=np.float64)
        return np.exp(theta[:, np.asarray(fit.ratio_positions, dtype=int)])

    def jacobian(self, fit):
        """The covariates' rows of ``diag(exp(theta_hat))``.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        numpy.ndarray, shape (p, d)
            Zero but for the fitted hazard ratio ``exp(theta_j)`` in column ``j``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> hr = ci.targets.HazardRatios()
        >>> bool(np.allclose(hr.jacobian(fit), np.diag(np.exp(fit.coef))))
        True
        """
        coef = np.asarray(fit.coef, dtype=np.float64)
        cols = np.asarray(fit.ratio_positions, dtype=int)
        J = np.zeros((cols.size, coef.size))
        J[np.arange(cols.size), cols] = np.exp(coef[cols])
        return J


class LinearPredictor(Dispatched):
    """The linear predictor of new patients, each model family's own.

    A Cox model's ``x'theta`` (not centred;
    ``CoxLinearPredictor``, the value of
    ``predict_lp``, ``J = X_new``), a scikit-survival estimator's ``predict(X_new)``
    (centred for ``CoxnetSurvivalAnalysis``:
    ``RiskScore``), an AFT model's ``x'beta``
    with the intercept, where the model offers it. One column per patient,
    ``"lp[<label>]"``.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row: a DataFrame with the fit's covariate columns
        (labels: its index), or an array in the fit's column order (labels 0, 1, ...).

    See Also
    --------
    coxinfluence.targets.RelativeRisk : ``exp(x'theta)`` of a Cox model.
    coxinfluence.influence : Audits a model for a target.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> target = ci.targets.LinearPredictor(X.iloc[:2])
    >>> target.columns(fit)
    ['lp[0]', 'lp[1]']
    >>> np.round(target.value(fit, fit.coef[None, :]), 4)
    array([[-1.5212, -0.4328]])
    >>> res = ci.influence(fit, target=target, method="vif")
    >>> res.loo_change.head(3).round(4)
        lp[0]   lp[1]
    0 -0.0469 -0.0291
    1  0.0320  0.0064
    2  0.0056 -0.0176
    """

    name = "linear_predictor"
    ask = "ci.targets.LinearPredictor(X_new)"

    def __init__(self, X_new):
        super().__init__(X_new, {})


class Survival(Dispatched):
    """The survival probability ``S(t | x)`` of new patients, each model's own.

    The model's own survival function: a Cox model's (``CoxFit``, lifelines
    ``CoxPHFitter``, statsmodels, scikit-survival:
    ``CoxSurvival``, the baseline hazard
    ``ctype`` theirs or chosen), an AFT model's (``AFTFit`` and lifelines' AFT fitters:
    ``AFTSurvival``), a lifelines parametric
    regression's ``predict_survival_function``
    (``LifelinesSurvival``; ``X_new`` then
    the raw frame lifelines takes). One column per (patient, time), ``"S(t|label)"``, patient
    outer, time inner.

    For a Cox model the baseline hazard is estimated from the data, so a deleted patient
    changes ``S(t|x)`` directly as well as through ``theta`` (the data effect,
    ``coxinfluence.families.cox_targets``); a parametric model's depends on ``theta`` alone.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row: a DataFrame with the fit's covariate columns
        (labels: its index), or an array in the fit's column order; for a lifelines
        model, the raw frame lifelines takes.
    times : float or array_like
        The times ``t``, finite and non-negative (positive for parametric models).
    strata : label or sequence, optional
        Each patient's stratum in a stratified model (one label for all, or one per
        patient; labels as in the training data). Cox: read from ``X_new``'s stratum
        columns by default.
    ctype : {None, 1, 2}, optional
        A Cox model's baseline hazard, as R's ``survfit(ctype=)``: 1 without, 2 with
        Efron's tie correction; None (default): the fitted model's own.

    Raises
    ------
    ValueError
        If ``ctype`` is not None, 1 or 2, or ``times`` are not finite and non-negative.

    See Also
    --------
    Quantile : Quantiles of the survival time (AFT).
    coxinfluence.targets.CumulativeIncidence : A Fine-Gray model's ``F(t|x)``.
    coxinfluence.TargetBeyondFollowUpWarning : Times past the follow-up.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> target = ci.targets.Survival(X.iloc[:2], times=[20, 40])
    >>> target.columns(fit)
    ['S(20|0)', 'S(40|0)', 'S(20|1)', 'S(40|1)']
    >>> np.round(target.value(fit, fit.coef[None, :]), 4)
    array([[0.9174, 0.8199, 0.774 , 0.5545]])
    >>> res = ci.influence(fit, target=target)
    >>> res.top(3, by="target")[["change S(40|1)", "target_influence", "verified"]].round(4)
         change S(40|1)  target_influence  verified
    100         -0.0100            0.3683      True
    270         -0.0062            0.3143      True
    180         -0.0044            0.3044      True

    The same target on an AFT model is the model's own ``S(t|x)``:

    >>> aft = ci.fit_aft(X, rossi["week"], rossi["arrest"])
    >>> np.round(target.value(aft, aft.coef[None, :]), 4)
    array([[0.9286, 0.8223, 0.8021, 0.5587]])
    """

    name = "survival"
    first = "times"
    ask = "ci.targets.Survival(X_new, times)"

    def __init__(self, X_new, times, strata=None, ctype=None):
        if ctype not in (None, 1, 2):
            raise ValueError(f"ctype must be None (the model's), 1 or 2; got {ctype!r}")
        self.times = nonnegative_times(times)
        super().__init__(X_new, {"strata": strata, "ctype": ctype}, (self.times,))


class Quantile(Dispatched):
    """The ``p``-quantiles of new patients' survival times, the model's own.

    An AFT model's ``exp(x'beta + sigma w_p)``, R's ``predict(fit, newdata, type =
    "quantile", p = p)`` (``SurvivalQuantile``).
    ``p = 0.5``: the median survival time. One column per (patient, p),
    ``"Q(p|label)"``.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row (as :class:`Survival`).
    p : float or array_like, default 0.5
        One probability or several, strictly between 0 and 1.
    strata : label or sequence, optional
        Each patient's stratum in a stratified model, as :class:`Survival`.

    Raises
    ------
    ValueError
        If a ``p`` is not strictly between 0 and 1.

    See Also
    --------
    Survival : ``S(t|x)``.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> aft = ci.fit_aft(X, rossi["week"], rossi["arrest"])  # Weibull, R's survreg
    >>> target = ci.targets.Quantile(X.iloc[:2], p=[0.25, 0.5])
    >>> target.columns(aft)
    ['Q(0.25|0)', 'Q(0.5|0)', 'Q(0.25|1)', 'Q(0.5|1)']
    >>> np.round(target.value(aft, aft.coef[None, :]), 2)
    array([[52.69, 98.73, 24.18, 45.31]])
    >>> res = ci.influence(aft, target=target, method="vif")
    >>> res.loo_change.head(3).round(3)
       Q(0.25|0)  Q(0.5|0)  Q(0.25|1)  Q(0.5|1)
    0      0.827     1.469      0.100     0.150
    1      0.154     0.242      0.534     0.980
    2      0.128     0.548      0.398     0.887
    """

    name = "survival_quantile"
    first = "p"
    ask = "ci.targets.Quantile(X_new, p)"

    def __init__(self, X_new, p=0.5, strata=None):
        self.p = probabilities(p)
        super().__init__(X_new, {"strata": strata}, (self.p,))


def resolve_target(target, names=None, model_name=None):
    """``None``/"coef" -> :class:`Coefficients`; "hr" -> :class:`HazardRatios`; any other
    string a registered target lists in its ``aliases`` (:func:`target_named`; "tr": an
    AFT model's ``TimeRatios``) -> that target; a quantity of ``ci.targets``
    (:class:`Dispatched`: ``Survival``, ``LinearPredictor``, ``Quantile``) -> the
    family's implementation among the model's targets ``names`` (its seam's
    ``target_names``; :func:`implementation_of`), or a ``ValueError`` saying the model has
    none; any other :class:`Target` as is. Targets of new patients must be objects (they
    need ``X_new``). ``names`` also lists the targets for an unknown name (with
    ``model_name``)."""
    if target is None:
        return Coefficients()
    if isinstance(target, Dispatched):
        if names is None:
            return target
        return target.implementation(names, model_name=model_name)
    if isinstance(target, Target):
        return target
    named = target_named(target) if isinstance(target, str) else None
    if named is not None:
        return named()
    if names is None:
        names = ("coef", "hazard_ratio", "relative_risk", "survival")
    model = f" for this model ({model_name})" if model_name else ""
    raise ValueError(f"unknown target {target!r}{model}: its targets are "
                     f"{describe_targets(names)} (ci = coxinfluence)")


def target_change(fit, theta_change, target, units=None, *, include_data_effect=True):
    """Estimated target change ``g_{-g} - g`` (U, m) from coefficient changes (U, d) of the
    units ``units`` (default: rows): ``theta_change J_g' + [data effect]`` (module
    docstring)."""
    dtheta = np.asarray(theta_change, dtype=np.float64)
    J = np.asarray(target.jacobian(fit), dtype=np.float64)
    # the coefficients themselves: a copy, not a product with the identity
    out = (dtheta.copy() if J.shape == (dtheta.shape[1],) * 2
           and np.array_equal(J, np.eye(J.shape[0])) else dtheta @ J.T)
    if include_data_effect:
        eff = target.data_effect(fit, units)
        if eff is not None:
            out = out + eff
    return out


def target_exact(fit, theta_loo, target, units=None):
    """Exact target change ``g(theta_{-g}; D_{-g}) - g(theta_hat; D)`` (U, m) from the
    refitted coefficients ``theta_loo`` (U, d) of the units ``units`` (default: rows,
    caller's order)."""
    base = target.value(fit, fit.coef[None, :])[0]
    return target.refit_values(fit, np.asarray(theta_loo, dtype=np.float64), units) - base

"""Targets of new patients under a parametric AFT fit (``ci.fit_aft``, R's ``survreg``):
the survival probability ``S(t | x)`` and the quantiles of the survival time; and the
model's time ratios ``exp(beta_j)`` (:class:`TimeRatios`, ``target="tr"``).

The model is ``log T = x'beta + sigma W`` (:mod:`coxinfluence.likelihood.aft`), ``x`` with
the intercept, ``sigma = exp(s_k)`` the scale of the patient's stratum k (1 for the
exponential). With ``F0``, ``S0 = 1 - F0`` and ``f0`` the distribution, survival and
density functions of ``W`` (standard minimum extreme value for the Weibull and
exponential, normal for the log-normal, logistic for the log-logistic):

    S(t | x)  = S0(z),   z = (log t - x'beta) / sigma
                (R: ``1 - psurvreg(t, x'beta, sigma, dist)``)
    Q_p(x)    = exp(x'beta + sigma w_p),   F0(w_p) = p
                (R: ``qsurvreg(p, x'beta, sigma, dist)``, ``predict(fit, newdata,
                type = "quantile", p = p)``; ``p = 0.5`` the median survival time)

with ``w_p = log(-log(1 - p))`` (extreme value), ``Phi^{-1}(p)`` (normal), ``log(p / (1 -
p))`` (logistic), R's ``survreg.distributions[[.]]$quantile``. Their derivatives in the
parameters (``s = log sigma`` of the patient's stratum; none for the exponential):

    dS/dbeta = f0(z) x / sigma,     dS/ds = f0(z) z,
    dQ/dbeta = Q x,                 dQ/ds = Q sigma w_p.

Both are functions of the parameters alone (the model is fully parametric: no baseline
estimated from the data besides ``theta``), so a deleted unit changes them only through
``theta``: the exact change is ``g(theta_{-g}) - g(theta_hat)`` and a first-order method's
is ``J (theta_{-g} - theta_hat)``; there is no data effect.

A stratified fit (one scale per stratum) needs each new patient's stratum
(``strata=``: one label for all, or one per patient; labels as in the training data).

Past the last event time of the data (of the patient's stratum) ``S(t|x)`` is no plateau
but the parametric model's extrapolation beyond the data; :meth:`AFTSurvival.
followup_notes` says so (a :class:`~coxinfluence.audit.target_base.TargetBeyondFollowUpWarning`
from ``influence()``). An event time is an observed one, or the upper bound of a left- or
interval-censored one (the event is known to have happened by then).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.audit.target_base import (
    Target,
    register_target,
)
from coxinfluence.data.new_patients import probabilities
from coxinfluence.families.new_patients import covariate_view, new_patients, positive_times
from coxinfluence.models.aft import AFTFit
from coxinfluence.models.predictions import (
    aft_design,
    aft_quantiles,
    aft_survival,
    aft_z,
    follow_up_notes,
    standard_quantile,
)

__all__ = ["AFTSurvival", "SurvivalQuantile", "TimeRatios", "standard_quantile"]


class _AFTNewPatients(Target):
    """New patients of an AFT fit, with their strata.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row: a DataFrame with the fit's covariate columns, or an
        array in their order.
    strata : label or sequence, optional
        Each patient's stratum, for a stratified fit (module docstring).
    """

    options = ("strata",)
    fit_type = AFTFit

    def __init__(self, X_new, strata=None):
        self.X_new = X_new
        self.strata = strata

    def _X(self, fit):
        return new_patients(self.X_new, covariate_view(fit.covariates), self.transform)

    def _design(self, fit):
        """(P, p) the new patients' design with the intercept, (P,) their stratum codes
        and their labels (:func:`coxinfluence.models.predictions.aft_design`)."""
        design, codes, index = aft_design(fit, self.X_new, self.strata, self.transform)
        return design, codes, [str(v) for v in index]

    def refit_values(self, fit, theta_loo, units=None):
        """The target at each unit's refitted parameters.

        The model is fully parametric: there is no data effect (module docstring), so
        this is :meth:`value` at ``theta_loo``.

        Parameters
        ----------
        fit : AFTFit
            The AFT fit.
        theta_loo : array_like, shape (U, d)
            Each unit's refitted parameters (rows of NaN: not refitted).
        units : object, optional
            The units of deletion (not used: the value depends on ``theta`` alone).

        Returns
        -------
        numpy.ndarray, shape (U, m)
            One row per unit; NaN where the refit is.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40]).implementation(fit=fit)
        >>> surv.refit_values(fit, ci.exact_loo(fit).to_numpy()).shape
        (432, 4)
        """
        theta = np.atleast_2d(np.asarray(theta_loo, dtype=np.float64))
        ok = np.isfinite(theta).all(axis=1)
        out = np.full((theta.shape[0], len(self.columns(fit))), np.nan)
        if ok.any():
            out[ok] = self.value(fit, theta[ok])
        return out

    @staticmethod
    def _scale_jacobian(fit, codes, factor):
        """(P, k, d) ``J`` of the scales: ``factor`` (P, k) in the column of each patient's
        ``log sigma`` (none for the exponential)."""
        P, k = factor.shape
        J = np.zeros((P, k, len(fit.coef)))
        if not fit.data.fixed_scale:
            J[np.arange(P), :, fit.data.p + codes] = factor
        return J


@register_target
class AFTSurvival(_AFTNewPatients):
    """An AFT model's survival probability ``S(t | x)`` of new patients.

    ``S(t | x) = S0((log t - x'beta) / sigma)`` at ``times`` under an AFT fit: R's
    ``1 - psurvreg(t, predict(fit, newdata, type = "lp"), fit$scale, dist)``. One column
    per (patient, time), ``"S(t|label)"``. ``ci.targets.Survival`` on an AFT model (the
    deprecated ``ci.AFTSurvival`` is this class). Its derivatives, ``dS/dbeta = f0(z) x /
    sigma`` and ``dS/ds = f0(z) z``, are in :mod:`coxinfluence.families.aft_targets`.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row: a DataFrame with the fit's covariate columns, or
        an array in their order.
    times : float or array_like
        The times ``t``, finite and positive.
    strata : label or sequence, optional
        The patients' strata for a stratified fit (one label for all, or one per patient;
        labels as in the training data).

    Raises
    ------
    ValueError
        If ``times`` are not finite and positive.

    See Also
    --------
    coxinfluence.targets.Survival : The target to use (dispatched on the model).
    SurvivalQuantile : The quantiles of the survival time.
    """

    name = "aft_survival"
    quantity = "survival"

    def __init__(self, X_new, times, strata=None):
        super().__init__(X_new, strata)
        self.times = positive_times(times)

    def columns(self, fit):
        """``"S(t|label)"`` for each (patient, time), patient outer, time inner.

        Parameters
        ----------
        fit : AFTFit
            The AFT fit.

        Returns
        -------
        list of str
            ``P T`` column names.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40]).implementation(fit=fit)
        >>> type(surv).__name__, surv.columns(fit)
        ('AFTSurvival', ['S(20|0)', 'S(40|0)', 'S(20|1)', 'S(40|1)'])
        """
        return [f"S({t:g}|{lab})" for lab in self._X(fit)[1] for t in self.times]

    def followup_notes(self, fit):
        """Notes on times past the last event time of a patient's stratum.

        ``S(t|x)`` is extrapolated by the parametric model there (module docstring); an
        event time is an observed one, or the upper bound of a left- or
        interval-censored one. The rule of the predictions
        (``coxinfluence.models.predictions.follow_up_notes``).

        Parameters
        ----------
        fit : AFTFit
            The AFT fit.

        Returns
        -------
        tuple of str
            One sentence per stratum with times past its last event time.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40]).implementation(fit=fit)
        >>> surv.followup_notes(fit)
        ()
        """
        design, codes, labels = self._design(fit)
        return follow_up_notes(fit, self.times, codes, labels, "S(t|x)")

    def _z(self, fit, theta):
        design, codes, _ = self._design(fit)
        z, s = aft_z(fit, theta, design, codes, self.times)
        return z, design, codes, s

    def value(self, fit, theta):
        """``S(t | x)`` for each row of ``theta``.

        Parameters
        ----------
        fit : AFTFit
            The AFT fit.
        theta : array_like, shape (B, d)
            Parameter vectors in R's order (intercept, covariates, log-scales).

        Returns
        -------
        numpy.ndarray, shape (B, P T)
            In the order of :meth:`columns`.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40]).implementation(fit=fit)
        >>> np.round(surv.value(fit, fit.coef[None, :]), 4)
        array([[0.9286, 0.8223, 0.8021, 0.5587]])
        """
        design, codes, _ = self._design(fit)
        S = aft_survival(fit, theta, design, codes, self.times)
        return S.reshape(S.shape[0], -1)

    def jacobian(self, fit):
        """``dS/dbeta = f0(z) x / sigma``, ``dS/ds = f0(z) z`` at the fitted parameters.

        ``s = log sigma`` of the patient's stratum (none for the exponential).

        Parameters
        ----------
        fit : AFTFit
            The AFT fit.

        Returns
        -------
        numpy.ndarray, shape (P T, d)
            One row per column of the target.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40]).implementation(fit=fit)
        >>> surv.jacobian(fit).shape
        (4, 5)
        """
        z, design, codes, s = self._z(fit, fit.coef)
        z, s = z[0], s[0]                                            # (P, T), (P,)
        f = np.exp(fit.likelihood.family.log_f(z))                  # f0(z)
        J = self._scale_jacobian(fit, codes, f * z)
        J[:, :, :fit.data.p] = (f * np.exp(-s)[:, None])[:, :, None] * design[:, None, :]
        return J.reshape(-1, len(fit.coef))


@register_target
class SurvivalQuantile(_AFTNewPatients):
    """The ``p``-quantiles of new patients' survival times under an AFT fit.

    ``Q_p(x) = exp(x'beta + sigma w_p)`` (``p = 0.5``, the default: the median survival
    time): R's ``predict(fit, newdata, type = "quantile", p = p)``. One column per
    (patient, p), ``"Q(p|label)"``. ``ci.targets.Quantile`` on an AFT model (the
    deprecated ``ci.SurvivalQuantile`` is this class). Its derivatives, ``dQ/dbeta = Q
    x`` and ``dQ/ds = Q sigma w_p``, are in :mod:`coxinfluence.families.aft_targets`.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row, as :class:`AFTSurvival`.
    p : float or array_like, default 0.5
        One probability or several, strictly between 0 and 1.
    strata : label or sequence, optional
        The patients' strata for a stratified fit, as :class:`AFTSurvival`.

    Raises
    ------
    ValueError
        If a ``p`` is not strictly between 0 and 1.

    See Also
    --------
    coxinfluence.targets.Quantile : The target to use (dispatched on the model).
    """

    name = "survival_quantile"
    quantity = "survival_quantile"

    def __init__(self, X_new, p=0.5, strata=None):
        super().__init__(X_new, strata)
        self.p = probabilities(p)

    def columns(self, fit):
        """``"Q(p|label)"`` for each (patient, p), patient outer.

        Parameters
        ----------
        fit : AFTFit
            The AFT fit.

        Returns
        -------
        list of str
            One name per (patient, p).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> q = ci.targets.Quantile(X.iloc[:2], 0.5).implementation(fit=fit)
        >>> type(q).__name__, q.columns(fit)
        ('SurvivalQuantile', ['Q(0.5|0)', 'Q(0.5|1)'])
        """
        return [f"Q({q:g}|{lab})" for lab in self._X(fit)[1] for q in self.p]

    def _quantiles(self, fit, theta):
        design, codes, _ = self._design(fit)
        Q, s, w = aft_quantiles(fit, theta, design, codes, self.p)
        return Q, design, codes, s, w

    def value(self, fit, theta):
        """``Q_p(x)`` for each row of ``theta``.

        Parameters
        ----------
        fit : AFTFit
            The AFT fit.
        theta : array_like, shape (B, d)
            Parameter vectors in R's order (intercept, covariates, log-scales).

        Returns
        -------
        numpy.ndarray, shape (B, m)
            In the order of :meth:`columns`.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> q = ci.targets.Quantile(X.iloc[:2], 0.5).implementation(fit=fit)
        >>> np.round(q.value(fit, fit.coef[None, :]), 3)
        array([[98.728, 45.308]])
        """
        Q = self._quantiles(fit, theta)[0]
        return Q.reshape(Q.shape[0], -1)

    def jacobian(self, fit):
        """``dQ/dbeta = Q x``, ``dQ/ds = Q sigma w_p`` at the fitted parameters.

        ``s = log sigma`` of the patient's stratum (none for the exponential).

        Parameters
        ----------
        fit : AFTFit
            The AFT fit.

        Returns
        -------
        numpy.ndarray, shape (m, d)
            One row per column of the target.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> q = ci.targets.Quantile(X.iloc[:2], 0.5).implementation(fit=fit)
        >>> q.jacobian(fit).shape
        (2, 5)
        """
        Q, design, codes, s, w = self._quantiles(fit, fit.coef)
        Q, s = Q[0], s[0]                                            # (P, k), (P,)
        J = self._scale_jacobian(fit, codes, Q * np.exp(s)[:, None] * w[None, :])
        J[:, :, :fit.data.p] = Q[:, :, None] * design[:, None, :]
        return J.reshape(-1, len(fit.coef))


@register_target
class TimeRatios(Target):
    """An AFT model's time ratios ``g(theta) = exp(beta_j)`` for its covariates.

    Not the intercept, not the scales: the factor on survival times per unit of
    ``x_j``; ``J`` the covariates' rows of ``diag(exp(theta_hat))``. ``target="tr"`` of
    :func:`coxinfluence.influence`; one column per covariate, ``"TR <name>"``.

    See Also
    --------
    coxinfluence.targets.HazardRatios : A Cox model's ratios.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> aft = ci.fit_aft(X, rossi["week"], rossi["arrest"])  # Weibull, R's survreg
    >>> ci.targets.TimeRatios().columns(aft)
    ['TR fin', 'TR age', 'TR prio']
    >>> res = ci.influence(aft, target="tr", method="vif")
    >>> res.loo_change.head(3).round(4)
       TR fin  TR age  TR prio
    0 -0.0140  0.0013  -0.0001
    1 -0.0116 -0.0012   0.0017
    2 -0.0068 -0.0003   0.0022
    """

    name = "time_ratio"
    quantity = "time_ratio"
    aliases = ("tr", "time_ratio", "time_ratios")
    ask = "'tr'"

    @staticmethod
    def _positions(fit):
        return np.arange(1, fit.data.p)

    def columns(self, fit):
        """``"TR <name>"`` for each covariate.

        Parameters
        ----------
        fit : AFTFit
            The fitted AFT model.

        Returns
        -------
        list of str
            One name per covariate (not the intercept, not the scales).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> tr = ci.targets.TimeRatios()
        >>> tr.columns(fit)
        ['TR fin', 'TR age', 'TR prio']
        """
        return [f"TR {c}" for c in fit.covariates]

    def value(self, fit, theta):
        """``exp(beta_j)`` of the covariates for each row of ``theta``.

        Parameters
        ----------
        fit : AFTFit
            The fitted AFT model.
        theta : array_like, shape (B, d)
            Parameter vectors in R's order (intercept, covariates, log-scales).

        Returns
        -------
        numpy.ndarray, shape (B, p - 1)
            One column per covariate.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> tr = ci.targets.TimeRatios()
        >>> tr.value(fit, fit.coef[None, :]).round(4)
        array([[1.2834, 1.0489, 0.9326]])
        """
        return np.exp(np.asarray(theta, dtype=np.float64)[:, self._positions(fit)])

    def jacobian(self, fit):
        """The covariates' rows of ``diag(exp(theta_hat))``.

        Parameters
        ----------
        fit : AFTFit
            The fitted AFT model.

        Returns
        -------
        numpy.ndarray, shape (p - 1, d)
            Zero but for ``exp(beta_j)`` in covariate j's column.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_aft(X, rossi["week"], rossi["arrest"])
        >>> tr = ci.targets.TimeRatios()
        >>> tr.jacobian(fit).shape
        (3, 5)
        """
        cols = self._positions(fit)
        J = np.zeros((cols.size, len(fit.coef)))
        J[np.arange(cols.size), cols] = np.exp(fit.coef[cols])
        return J

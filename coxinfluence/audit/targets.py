"""Quantities to attribute: the influence of each training patient on a target g.

Paper, Eq. (VIF-target): for a differentiable target ``g(theta)`` the influence of row i
follows from the parameter influence by the chain rule,

    g(theta_hat_{-i}) - g(theta_hat)  ~  J_g(theta_hat) (theta_hat_{-i} - theta_hat),
    J_g = d g / d theta  (m x d),

for every method's estimate of ``theta_hat_{-i} - theta_hat`` (VIF, Reid, one-step
Newton); the exact change refits without row i and evaluates ``g`` there.

One target per quantity, dispatched on the model: :class:`Survival`,
:class:`LinearPredictor` and :class:`Quantile` are :class:`Dispatched` targets, which
``ci.influence`` replaces by the model family's own implementation
(:func:`resolve_target`: the first of the model's ``target_names`` registered for the
quantity, :func:`register_target`, :func:`implementation_of`) and which, used directly
(``value(fit, theta)``), evaluate as the implementation for the fit: a Cox model's below
(:class:`CoxSurvival`, :class:`CoxLinearPredictor`), an AFT model's
(:mod:`coxinfluence.audit.aft_targets`), a lifelines parametric regression's
(:mod:`coxinfluence.audit.lifelines_targets`), a scikit-survival estimator's
(:mod:`coxinfluence.audit.sksurv_targets`). The values are the models' predictions
(:mod:`coxinfluence.models.predictions`, where each formula lives) at ``theta``.

Targets (each a :class:`Target`, one column per entry of g):

- :class:`Coefficients`: ``g = theta``, ``J = I``.
- :class:`HazardRatios`: ``g = exp(theta)``, ``J = diag(exp(theta))``.
- :class:`LinearPredictor` of new patients ``x`` (Cox: :class:`CoxLinearPredictor`):
  ``g = theta' x``, not centred, ``J = x'``.
- :class:`RelativeRisk` of new patients: ``g = exp(theta' x)`` (the paper's target),
  ``J = exp(theta' x) x'``.
- :class:`Survival` (Cox: :class:`CoxSurvival`)
  ``S(t | x) = exp(-Lambda_0(t) exp(theta' x))`` at chosen times, with
  the Breslow baseline cumulative hazard, with or without Efron's tie correction as R's
  ``survfit.coxph(ctype=)``: ``ctype = 2`` corrects (R's default for Efron ties),
  ``ctype = 1`` does not (R's default for Breslow ties; lifelines' and statsmodels'
  baseline whatever the ties). The fitted model's own is used (``CoxFit.ctype``, set by the
  integrations; None = R's default), unless ``Survival(..., ctype=)`` chooses:

      Lambda_0(t; theta, D) = sum_{terms k: t_k <= t} m_k / den_k(theta, D),
      den_k = S0_k - c_k S0D_k,

  (``m_k``, ``c_k``, ``den_k`` as in :mod:`coxinfluence.likelihood.risk_sets`, Efron's fractions
  ``c_k = r / d_g`` for ``ctype = 2``; ``ctype = 1``: ``c_k = 0``, so
  ``Lambda_0 = sum_{t_g <= t} (sum of event weights) / S0_g``). ``Lambda_0`` depends on
  the data ``D`` directly, not only through ``theta``, so the leave-one-out change is

      S(t|x; theta_{-i}, D_{-i}) - S(t|x; theta_hat, D)
        ~ [S(t|x; theta_hat, D_{-i}) - S(t|x; theta_hat, D)]        (data effect)
          + dS/dtheta(theta_hat, D) (theta_hat_{-i} - theta_hat),     (chain rule)

      dS/dtheta = -S(t|x) exp(theta'x) sum_{t_k <= t} (m_k / den_k) (x - a_k),

  with ``a_k`` the Efron-weighted risk-set mean. The data effect is computed by deleting
  row i at ``theta_hat`` (a finite difference, exact by definition; O(n d + S T K) per
  deleted row, S strata, T times, in batches of 128 rows, so O(n (n d + S T K)) in all).
  ``include_data_effect=False`` in :func:`target_change` leaves it out, which is
  measurably worse against exact refits (``paper_appendix/targets_metabric.py``).

Stratified models: each stratum s has its own baseline hazard, the sum above over the
terms of stratum s only, and a new patient's curve uses the baseline of the stratum given
for it (``Survival(X_new, times, strata=[...])``, labels as in the training data), as R's
``survfit(fit, newdata)`` does when ``newdata`` carries the strata variable.

Times beyond follow-up: past the last event time of the data (of the patient's stratum)
the baseline hazard has no more jumps, so ``S(t|x)`` is the last plateau carried forward,
not an estimate from events. A target's :meth:`Target.followup_notes` says so, one note
per stratum, and ``influence()`` issues each as a :class:`TargetBeyondFollowUpWarning`
and keeps them on the result (``InfluenceResult.target_notes``).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.audit.target_base import (  # noqa: F401 (re-exported: the shared parts)
    Dispatched,
    Target,
    TargetBeyondFollowUpWarning,
    _new_patients,
    describe_targets,
    followup_notes,
    implementation_of,
    last_by_stratum,
    register_target,
)
from coxinfluence.data.new_patients import nonnegative_times, probabilities, stratum_codes
from coxinfluence.data.units import row_units
from coxinfluence.likelihood.baseline_hazard import (
    baseline_ctype,
    cumulative_mask,
    hazard_increments,
)
from coxinfluence.models.cox import CoxFit
from coxinfluence.models.predictions import cox_cumulative_hazard, cox_strata, linear_predictor

__all__ = ["Target", "Coefficients", "HazardRatios", "TimeRatios", "LinearPredictor",
           "RelativeRisk", "Survival", "Quantile", "Dispatched", "CoxLinearPredictor",
           "CoxSurvival", "register_target", "implementation_of", "resolve_target",
           "target_change", "target_exact", "baseline_cumhaz", "baseline_ctype",
           "TargetBeyondFollowUpWarning", "followup_notes", "describe_targets"]


class Coefficients(Target):
    """The model's coefficients: ``g(theta) = theta``, ``J = I``.

    The default target of :func:`coxinfluence.influence` (``target=None`` or
    ``"coef"``): ``loo_change`` is then ``theta_hat_{-i} - theta_hat``, one column per
    parameter (for an AFT model the intercept and the log-scales too).

    See Also
    --------
    HazardRatios : ``exp(theta)``.
    TimeRatios : An AFT model's ``exp(beta_j)``.

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
        """
        return np.eye(len(fit.coef))


class HazardRatios(Target):
    """The hazard ratios: ``g(theta) = exp(theta)``, ``J = diag(exp(theta_hat))``.

    ``target="hr"`` of :func:`coxinfluence.influence` (Cox and Fine-Gray models; for
    Fine-Gray, the subdistribution hazard ratios). One column per coefficient,
    ``"HR <name>"``.

    See Also
    --------
    Coefficients : ``theta`` itself.
    TimeRatios : An AFT model's ratios.

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

    def columns(self, fit):
        """``"HR <name>"`` for each coefficient.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        list of str
            One name per coefficient.
        """
        return [f"HR {c}" for c in fit.columns]

    def value(self, fit, theta):
        """``exp(theta)``.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta : array_like, shape (B, d)
            Coefficient vectors.

        Returns
        -------
        numpy.ndarray, shape (B, d)
            The hazard ratios at each row of ``theta``.
        """
        return np.exp(np.asarray(theta, dtype=np.float64))

    def jacobian(self, fit):
        """``diag(exp(theta_hat))``.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        numpy.ndarray, shape (d, d)
            The diagonal matrix of the fitted hazard ratios.
        """
        return np.diag(np.exp(fit.coef))


class LinearPredictor(Dispatched):
    """The linear predictor of new patients, each model family's own.

    A Cox model's ``x'theta`` (not centred; :class:`CoxLinearPredictor`, the value of
    ``predict_lp``, ``J = X_new``), a scikit-survival estimator's ``predict(X_new)``
    (centred for ``CoxnetSurvivalAnalysis``:
    :class:`~coxinfluence.audit.sksurv_targets.RiskScore`), an AFT model's ``x'beta``
    with the intercept, where the model offers it. One column per patient,
    ``"lp[<label>]"``.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row: a DataFrame with the fit's covariate columns
        (labels: its index), or an array in the fit's column order (labels 0, 1, ...).

    See Also
    --------
    RelativeRisk : ``exp(x'theta)`` of a Cox model.
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

    def __init__(self, X_new):
        super().__init__(X_new, {})


class Survival(Dispatched):
    """The survival probability ``S(t | x)`` of new patients, each model's own.

    The model's own survival function: a Cox model's (``CoxFit``, lifelines
    ``CoxPHFitter``, statsmodels, scikit-survival: :class:`CoxSurvival`, the baseline
    hazard ``ctype`` theirs or chosen), an AFT model's (``AFTFit`` and lifelines' AFT
    fitters: :class:`~coxinfluence.audit.aft_targets.AFTSurvival`), a lifelines parametric
    regression's ``predict_survival_function``
    (:class:`~coxinfluence.audit.lifelines_targets.LifelinesSurvival`; ``X_new`` then the
    raw frame lifelines takes). One column per (patient, time), ``"S(t|label)"``, patient
    outer, time inner.

    For a Cox model the baseline hazard is estimated from the data, so a deleted patient
    changes ``S(t|x)`` directly as well as through ``theta`` (the data effect,
    :mod:`coxinfluence.audit.targets`); a parametric model's depends on ``theta`` alone.

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
    CumulativeIncidence : A Fine-Gray model's ``F(t|x)``.
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

    def __init__(self, X_new, times, strata=None, ctype=None):
        if ctype not in (None, 1, 2):
            raise ValueError(f"ctype must be None (the model's), 1 or 2; got {ctype!r}")
        self.times = nonnegative_times(times)
        super().__init__(X_new, {"strata": strata, "ctype": ctype})


class Quantile(Dispatched):
    """The ``p``-quantiles of new patients' survival times, the model's own.

    An AFT model's ``exp(x'beta + sigma w_p)``, R's ``predict(fit, newdata, type =
    "quantile", p = p)`` (:class:`~coxinfluence.audit.aft_targets.SurvivalQuantile`).
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

    def __init__(self, X_new, p=0.5, strata=None):
        self.p = probabilities(p)
        super().__init__(X_new, {"strata": strata})


class _NewPatientTarget(Target):
    """A target of a Cox model's new patients ``X_new`` (rows), one column per patient."""

    prefix = "?"

    def __init__(self, X_new):
        self.X_new = X_new

    def _X(self, fit):
        return _new_patients(self.X_new, fit, self.transform)

    def columns(self, fit):
        """``"<prefix>[<label>]"`` for each new patient (e.g. ``"rr[0]"``).

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        list of str
            One name per new patient, labelled by ``X_new``'s index (0, 1, ... for an
            array).
        """
        return [f"{self.prefix}[{lab}]" for lab in self._X(fit)[1]]

    @classmethod
    def evaluates(cls, fit):
        """Whether ``fit`` is a Cox model (a ``CoxFit``).

        Parameters
        ----------
        fit : object
            A fitted model.

        Returns
        -------
        bool
            ``isinstance(fit, CoxFit)``.
        """
        return isinstance(fit, CoxFit)


@register_target
class CoxLinearPredictor(_NewPatientTarget):
    """A Cox model's linear predictor ``g(theta) = X_new theta`` of new patients.

    Not centred (``predict_lp``; R's ``predict(fit, newdata, type = "lp", reference =
    "zero")``); ``J = X_new``. ``ci.targets.LinearPredictor`` on a Cox model.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row.
    """

    name = "linear_predictor"
    quantity = "linear_predictor"
    prefix = "lp"

    def value(self, fit, theta):
        """``X_new theta`` for each row of ``theta``.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta : array_like, shape (B, d)
            Coefficient vectors.

        Returns
        -------
        numpy.ndarray, shape (B, P)
            One column per new patient.
        """
        return linear_predictor(theta, self._X(fit)[0])

    def jacobian(self, fit):
        """``X_new``, in the fit's column order.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        numpy.ndarray, shape (P, d)
            The new patients' covariates (a copy).
        """
        return self._X(fit)[0].copy()


@register_target
class RelativeRisk(_NewPatientTarget):
    """The relative risk ``g(theta) = exp(theta' x)`` of new patients of a Cox model.

    The paper's target (``predict_risk``), not centred;
    ``J = diag(exp(X_new theta_hat)) X_new``. One column per patient, ``"rr[<label>]"``.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row: a DataFrame with the fit's covariate columns
        (labels: its index), or an array in the fit's column order.

    See Also
    --------
    LinearPredictor : ``x'theta``.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> target = ci.targets.RelativeRisk(X.iloc[:2])
    >>> target.columns(fit)
    ['rr[0]', 'rr[1]']
    >>> np.round(target.value(fit, fit.coef[None, :]), 4)
    array([[0.2185, 0.6487]])
    >>> res = ci.influence(fit, target=target, method="vif")
    >>> res.loo_change.head(3).round(4)
        rr[0]   rr[1]
    0 -0.0103 -0.0189
    1  0.0070  0.0042
    2  0.0012 -0.0114
    """

    name = "relative_risk"
    quantity = "relative_risk"
    prefix = "rr"

    def value(self, fit, theta):
        """``exp(X_new theta)`` for each row of ``theta``.

        Parameters
        ----------
        fit : object
            The fitted Cox model.
        theta : array_like, shape (B, d)
            Coefficient vectors.

        Returns
        -------
        numpy.ndarray, shape (B, P)
            One column per new patient.
        """
        return np.exp(linear_predictor(theta, self._X(fit)[0]))

    def jacobian(self, fit):
        """``diag(exp(X_new theta_hat)) X_new``.

        Parameters
        ----------
        fit : object
            The fitted Cox model.

        Returns
        -------
        numpy.ndarray, shape (P, d)
            One row per new patient.
        """
        X = self._X(fit)[0]
        return np.exp(X @ fit.coef)[:, None] * X


# ------------------------------------------------------------------------ survival

def _stratum_codes(fit, strata, m, what="new patients"):
    """Stratum code of each of ``m`` new patients from their labels (module docstring;
    :func:`coxinfluence.data.new_patients.stratum_codes`)."""
    return stratum_codes(fit.data.strata_labels, strata, m, what)


def baseline_cumhaz(fit, times, theta=None, stratum=None, ctype=None):
    """Breslow/Efron baseline cumulative hazard ``Lambda_0(t)`` at ``times`` (covariates 0),
    as R's ``basehaz(fit, centered = FALSE)`` / ``survfit`` (module docstring; ``ctype`` as
    there, default the fit's own); for a stratified model, of the stratum labelled
    ``stratum``."""
    codes = _stratum_codes(fit, None if stratum is None else [stratum], 1, "baseline hazard")
    theta = fit.coef if theta is None else theta
    inc, shift, _ = hazard_increments(fit, theta, ctype=ctype)
    return (cumulative_mask(fit, times)[codes[0]] @ inc[0]) * np.exp(-shift[0, 0])


@register_target
class CoxSurvival(Target):
    """A Cox model's ``S(t | x) = exp(-Lambda_0(t) exp(theta' x))`` for new patients x at
    ``times`` (module docstring; the formula is
    :func:`coxinfluence.models.predictions.cox_cumulative_hazard`, the value of
    ``predict_survival``); one column per (patient, time). ``ci.targets.Survival`` on a
    Cox model.  ``strata``: for a stratified
    model, each new patient's stratum label (one label for all, or one per patient;
    tuples for several stratum columns), choosing its baseline hazard; by default read
    from the stratum column(s) of ``X_new`` when it is a DataFrame that has them (the
    model's strata given as a DataFrame or a named Series, e.g. lifelines' ``strata``).
    ``ctype``: the baseline hazard, 1 (no tie correction) or 2 (Efron's), as R's
    ``survfit(ctype=)``; default the fitted model's own (:func:`baseline_ctype`: lifelines
    and statsmodels models 1, a ``fit_cox`` fit R's default for its ties)."""

    name = "survival"
    quantity = "survival"
    options = ("strata", "ctype")
    ctype = None

    def __init__(self, X_new, times, strata=None, ctype=None):
        self.X_new = X_new
        self.strata = strata
        if ctype not in (None, 1, 2):
            raise ValueError(f"ctype must be None (the model's), 1 or 2; got {ctype!r}")
        self.ctype = ctype
        self.times = nonnegative_times(times)

    @classmethod
    def evaluates(cls, fit):
        return isinstance(fit, CoxFit)

    def _X(self, fit):
        return _new_patients(self.X_new, fit, self.transform)

    def columns(self, fit):
        labels = self._X(fit)[1]
        return [f"S({t:g}|{lab})" for lab in labels for t in self.times]

    def _codes(self, fit, X):
        return cox_strata(fit, self.X_new, self.strata, X.shape[0])

    def _surv(self, fit, theta, deleted=None):
        """(B, m) survival for coefficient rows theta (B, d), optionally without the rows
        ``deleted`` (a :class:`~coxinfluence.data.deletion.Deletion` of sorted rows) removes."""
        X = self._X(fit)[0]
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        H = cox_cumulative_hazard(fit, theta, X, self._codes(fit, X), self.times, deleted,
                                  self.ctype)
        return np.exp(-H).reshape(theta.shape[0], -1)

    def value(self, fit, theta):
        return self._surv(fit, theta)

    def baseline_variance(self, fit):
        """The baseline hazard's own variance term of ``S(t|x)`` (Tsiatis 1981; R's
        ``survfit(fit, newdata)`` standard error): ``S^2 exp(2 x'theta) sum_{k: t_k <= t}
        m_k / den_k^2`` over the (Efron) terms of the patient's stratum, ``m_k`` the
        term's event weight and ``den_k`` its risk-set sum. With ``J V J'`` (the
        coefficients' part) it gives R's ``std.err`` of ``S(t|x)``."""
        X = self._X(fit)[0]
        codes = self._codes(fit, X)
        inc, shift, _ = hazard_increments(fit, fit.coef, ctype=self.ctype)
        m = fit.risk_sets.terms().mean_weight
        per_term = inc[0] ** 2 / np.broadcast_to(m, inc[0].shape)        # m / den^2
        cum = np.einsum("k,stk->st", per_term, cumulative_mask(fit, self.times))[codes]  # (P, T)
        risk2 = np.exp(2 * (X @ fit.coef - shift[0, 0]))
        S = self._surv(fit, fit.coef)[0].reshape(cum.shape)
        return (S ** 2 * risk2[:, None] * cum).reshape(-1)

    def followup_notes(self, fit):
        """Times past the last event time of each patient's stratum (module docstring:
        ``S(t|x)`` is the last plateau there)."""
        X, labels = self._X(fit)
        codes = self._codes(fit, X)
        data = fit.data
        ev = data.event_rows
        last = last_by_stratum(data.time[ev], data.strata[ev], int(data.strata.max()) + 1)
        strata = data.strata_labels
        return followup_notes(self.times, last, codes, labels, quantity="S(t|x)",
                              stratum_labels=(None if strata is None or len(strata) < 2
                                              else list(strata)))

    def jacobian(self, fit):
        X = self._X(fit)[0]
        mask = cumulative_mask(fit, self.times)[self._codes(fit, X)]       # (P, T, K)
        inc, shift, a = hazard_increments(fit, fit.coef, ctype=self.ctype)
        cum = mask @ inc[0]                                          # (P, T)
        cum_a = mask @ (inc[0][:, None] * a[0])                      # (P, T, d)
        e = np.exp(X @ fit.coef - shift[0, 0])                       # (P,)
        H = e[:, None] * cum                                         # (P, T)
        dH = e[:, None, None] * (cum[:, :, None] * X[:, None, :] - cum_a)
        return (-np.exp(-H)[:, :, None] * dH).reshape(-1, fit.data.d)

    def _batched(self, fit, thetas, units, batch):
        """(U, m) survival at coefficients ``thetas`` (U, d), unit g's rows deleted; NaN
        (not evaluated) where ``thetas`` is not finite (units not refitted)."""
        U = units.n_units
        out = np.full((U, len(self.columns(fit))), np.nan)
        th = np.asarray(thetas, dtype=np.float64)
        ok = np.flatnonzero(np.isfinite(th).all(axis=1))
        for start in range(0, ok.size, batch):
            codes = ok[start:start + batch]
            out[codes] = self._surv(fit, th[codes], units.deletion(codes))
        return out

    def data_effect(self, fit, units=None, batch=128):
        """``S(t|x; theta_hat, D_{-g}) - S(t|x; theta_hat, D)`` by deleting each unit
        (rows by default)."""
        units = row_units(fit.data) if units is None else units
        full = self._surv(fit, fit.coef)[0]
        thetas = np.repeat(fit.coef[None, :], units.n_units, axis=0)
        return self._batched(fit, thetas, units, batch) - full

    def refit_values(self, fit, theta_loo, units=None, batch=128):
        """``S(t|x; theta_{-g}, D_{-g})``: the refitted coefficients with the baseline
        hazard recomputed without unit g's rows (rows by default)."""
        units = row_units(fit.data) if units is None else units
        return self._batched(fit, theta_loo, units, batch)


class TimeRatios(Target):
    """An AFT model's time ratios ``g(theta) = exp(beta_j)`` for its covariates.

    Not the intercept, not the scales: the factor on survival times per unit of
    ``x_j``; ``J`` the covariates' rows of ``diag(exp(theta_hat))``. ``target="tr"`` of
    :func:`coxinfluence.influence`; one column per covariate, ``"TR <name>"``.

    See Also
    --------
    HazardRatios : A Cox model's ratios.

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
        """
        cols = self._positions(fit)
        J = np.zeros((cols.size, len(fit.coef)))
        J[np.arange(cols.size), cols] = np.exp(fit.coef[cols])
        return J


_ALIASES = {"coef": Coefficients, "coefficients": Coefficients, "hr": HazardRatios,
            "hazard_ratio": HazardRatios, "hazard_ratios": HazardRatios,
            "tr": TimeRatios, "time_ratio": TimeRatios, "time_ratios": TimeRatios}

def resolve_target(target, names=None, model_name=None):
    """``None``/"coef" -> :class:`Coefficients`; "hr" -> :class:`HazardRatios`; "tr" ->
    :class:`TimeRatios`; a quantity of ``ci.targets`` (:class:`Dispatched`: ``Survival``,
    ``LinearPredictor``, ``Quantile``) -> the family's implementation among the model's
    targets ``names`` (its seam's ``target_names``; :func:`implementation_of`), or a
    ``ValueError`` saying the model has none; any other :class:`Target` as is. Targets
    of new patients must be objects (they need ``X_new``). ``names`` also lists the
    targets for an unknown name (with ``model_name``)."""
    if target is None:
        return Coefficients()
    if isinstance(target, Dispatched):
        if names is None:
            return target
        return target.implementation(names, model_name=model_name)
    if isinstance(target, Target):
        return target
    if isinstance(target, str) and target.lower() in _ALIASES:
        return _ALIASES[target.lower()]()
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

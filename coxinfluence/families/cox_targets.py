"""A Cox model's targets of new patients: the linear predictor, the relative risk and the
survival probability, the Cox family's implementations of the quantities of ``ci.targets``
(registered with :func:`coxinfluence.audit.target_base.register_target` on import).

- :class:`CoxLinearPredictor` (``ci.targets.LinearPredictor`` on a Cox model):
  ``g = theta' x``, not centred, ``J = x'``.
- :class:`RelativeRisk` of new patients: ``g = exp(theta' x)`` (the paper's target),
  ``J = exp(theta' x) x'``.
- :class:`CoxSurvival` (``ci.targets.Survival`` on a Cox model)
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
  ``include_data_effect=False`` in :func:`coxinfluence.audit.targets.target_change` leaves
  it out, which is measurably worse against exact refits
  (``paper_appendix/targets_metabric.py``).

The values are the model's predictions (:mod:`coxinfluence.models.predictions`, where each
formula lives) at ``theta``.

Stratified models: each stratum s has its own baseline hazard, the sum above over the
terms of stratum s only, and a new patient's curve uses the baseline of the stratum given
for it (``Survival(X_new, times, strata=[...])``, labels as in the training data), as R's
``survfit(fit, newdata)`` does when ``newdata`` carries the strata variable.

Times beyond follow-up: past the last event time of the data (of the patient's stratum)
the baseline hazard has no more jumps, so ``S(t|x)`` is the last plateau carried forward,
not an estimate from events. :meth:`CoxSurvival.followup_notes` says so, one note per
stratum, and ``influence()`` issues each as a
:class:`~coxinfluence.audit.target_base.TargetBeyondFollowUpWarning` and keeps them on
the result (``InfluenceResult.target_notes``).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.audit.target_base import (
    Target,
    register_target,
)
from coxinfluence.data.new_patients import nonnegative_times, stratum_codes
from coxinfluence.data.units import row_units
from coxinfluence.families.new_patients import new_patients
from coxinfluence.influence_functions.baseline_deletion import baseline_change_of_units
from coxinfluence.likelihood.baseline_hazard import (
    baseline_ctype,
    cumulative_sums,
    hazard_increments,
)
from coxinfluence.models.cox import CoxFit
from coxinfluence.models.predictions import (
    cox_cumulative_hazard,
    cox_strata,
    follow_up_notes,
    linear_predictor,
)

__all__ = ["CoxLinearPredictor", "RelativeRisk", "CoxSurvival", "baseline_cumhaz",
           "baseline_ctype"]


class _NewPatientTarget(Target):
    """A target of a Cox model's new patients ``X_new`` (rows): by default one column per
    patient, ``"<prefix>[label]"``."""

    prefix = "?"
    fit_type = CoxFit

    def __init__(self, X_new):
        self.X_new = X_new

    def _X(self, fit):
        return new_patients(self.X_new, fit, self.transform)

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

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> rr = ci.targets.RelativeRisk(X.iloc[:2])
        >>> rr.columns(fit)
        ['rr[0]', 'rr[1]']
        """
        return [f"{self.prefix}[{lab}]" for lab in self._X(fit)[1]]



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
    ask = "ci.targets.RelativeRisk(X_new)"
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

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> rr = ci.targets.RelativeRisk(X.iloc[:2])
        >>> rr.value(fit, fit.coef[None, :]).round(4)
        array([[0.2185, 0.6487]])
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

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> rr = ci.targets.RelativeRisk(X.iloc[:2])
        >>> J = rr.jacobian(fit)
        >>> bool(np.allclose(J, rr.value(fit, fit.coef[None, :]).T * X.iloc[:2].to_numpy()))
        True
        """
        X = self._X(fit)[0]
        return np.exp(X @ fit.coef)[:, None] * X


# ------------------------------------------------------------------------ survival

def baseline_cumhaz(fit, times, theta=None, stratum=None, ctype=None):
    """Breslow/Efron baseline cumulative hazard ``Lambda_0(t)`` at ``times`` (covariates 0),
    as R's ``basehaz(fit, centered = FALSE)`` / ``survfit`` (module docstring; ``ctype`` as
    there, default the fit's own); for a stratified model, of the stratum labelled
    ``stratum``."""
    codes = stratum_codes(fit.data.strata_labels, None if stratum is None else [stratum], 1,
                          "baseline hazard")
    theta = fit.coef if theta is None else theta
    inc, shift, _ = hazard_increments(fit, theta, ctype=ctype)
    return cumulative_sums(fit, inc[0], times)[codes[0]] * np.exp(-shift[0, 0])


@register_target
class CoxSurvival(_NewPatientTarget):
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
        cum = cumulative_sums(fit, per_term, self.times)[codes]           # (P, T)
        risk2 = np.exp(2 * (X @ fit.coef - shift[0, 0]))
        S = self._surv(fit, fit.coef)[0].reshape(cum.shape)
        return (S ** 2 * risk2[:, None] * cum).reshape(-1)

    def followup_notes(self, fit):
        """Times past the last event time of each patient's stratum (module docstring:
        ``S(t|x)`` is the last plateau there): the rule of the predictions
        (:func:`coxinfluence.models.predictions.follow_up_notes`)."""
        X, labels = self._X(fit)
        return follow_up_notes(fit, self.times, self._codes(fit, X), labels, "S(t|x)")

    def jacobian(self, fit):
        X = self._X(fit)[0]
        codes = self._codes(fit, X)
        inc, shift, a = hazard_increments(fit, fit.coef, ctype=self.ctype)
        cum = cumulative_sums(fit, inc[0], self.times)[codes]        # (P, T)
        cum_a = np.moveaxis(cumulative_sums(fit, (inc[0][:, None] * a[0]).T, self.times),
                            0, -1)[codes]                            # (P, T, d)
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
        """``S(t|x; theta_hat, D_{-g}) - S(t|x; theta_hat, D)`` of each unit (rows by
        default): the baseline without the unit in closed form, all units in a few passes
        (:func:`~coxinfluence.influence_functions.baseline_deletion.baseline_change_of_units`),
        ``S (exp(-exp(theta'x) dLambda_0) - 1)``; a unit with two rows in one risk set
        (a cluster) by deleting its rows."""
        units = row_units(fit.data) if units is None else units
        X = self._X(fit)[0]
        codes = self._codes(fit, X)
        delta, done = baseline_change_of_units(fit, self.times, units, self.ctype)
        inc, shift, _ = hazard_increments(fit, fit.coef, ctype=self.ctype)
        e = np.exp(X @ fit.coef - shift[0, 0])                              # (P,)
        S = np.exp(-e[:, None] * cumulative_sums(fit, inc[0], self.times)[codes])
        out = np.empty((units.n_units, X.shape[0], len(self.times)))      # (U, P, T)
        if delta.shape[1] == 1:                 # one stratum: no gather
            np.multiply(delta, -e[None, :, None], out=out)
        else:
            np.take(delta, codes, axis=1, out=out)
            out *= -e[None, :, None]
        np.expm1(out, out=out)
        out *= S[None]
        out = out.reshape(units.n_units, -1)
        if not done.all():
            thetas = np.where(done[:, None], np.nan, fit.coef[None, :])
            rest = ~done
            out[rest] = (self._batched(fit, thetas, units, batch)[rest]
                         - self._surv(fit, fit.coef)[0])
        return out

    def refit_values(self, fit, theta_loo, units=None, batch=128):
        """``S(t|x; theta_{-g}, D_{-g})``: the refitted coefficients with the baseline
        hazard recomputed without unit g's rows (rows by default)."""
        units = row_units(fit.data) if units is None else units
        return self._batched(fit, theta_loo, units, batch)

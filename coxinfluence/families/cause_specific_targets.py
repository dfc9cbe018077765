"""The absolute risk of a cause under cause-specific Cox models: ``ci.targets.AbsoluteRisk``.

``F_k(t | x)`` (:func:`coxinfluence.models.cause_specific.absolute_risk`, R's
``predict(CSC, newdata, times, cause)``) depends on every cause's coefficients and on
every cause's baseline hazard. Its Jacobian and the baselines' first-order change by
deleting a unit are ``coxinfluence.models.cause_specific_influence``'s (the formulas);
:meth:`AbsoluteRisk.data_effect` is the literal deletion at ``theta_hat`` (every target's
convention) and :meth:`AbsoluteRisk.refit_values` the refitted models without the unit.
"""
from __future__ import annotations

import numpy as np

from coxinfluence.audit.target_base import Target, register_target
from coxinfluence.data.new_patients import nonnegative_times
from coxinfluence.data.units import row_units
from coxinfluence.models.cause_specific import (
    CauseSpecificFit,
    absolute_risk,
    absolute_risk_notes,
    cause_parts,
)
from coxinfluence.models.cause_specific_influence import (
    absolute_risk_jacobian,
    baseline_influence,
)

__all__ = ["AbsoluteRisk", "cause_units"]


def cause_units(fit, units=None):
    """Each cause's units (a ``coxinfluence.data.units.Units`` per model): ``units``
    when it holds them (``units.per_cause``), else each model's rows."""
    if units is None:
        return [row_units(m.data) for m in fit.models]
    return list(units.per_cause)


@register_target
class AbsoluteRisk(Target):
    r"""The absolute risk :math:`F_k(t \mid x)` of cause :math:`k` for new patients at
    ``times``.

    .. math::

        F_k(t \mid x) = \sum_{s \le t} S(s- \mid x)\, d\Lambda_k(s)\, e^{\beta_k' x},
        \qquad S(s \mid x) = \prod_{u \le s} \Big(1 - \sum_j d\Lambda_j(u)\,
        e^{\beta_j' x}\Big),

    :math:`\Lambda_j` cause :math:`j`'s Breslow baseline cumulative hazard (R's
    ``riskRegression::predict.CauseSpecificCox``).

    Under cause-specific Cox models (:func:`~coxinfluence.fit_cause_specific`), through
    every cause's coefficients and baseline hazard (module docstring): the value of
    ``CauseSpecificFit.predict_absolute_risk``, one column per (patient, time).

    Parameters
    ----------
    X_new : pandas.DataFrame or array_like
        The new patients (every cause's covariates).
    times : float or array_like
        Times.
    cause : int, optional
        The cause ``k`` (default: the fit's ``cause``, which ``ci.evaluate(...,
        cause=k)`` sets, else 1).
    product_limit : bool, default True
        The event-free survival :math:`S` by the product limit (R's default), else
        :math:`\exp(-\sum_j \Lambda_j(s) e^{\beta_j' x})`.
    strata : optional
        Stratum labels of a stratified fit (default: ``X_new``'s stratum columns).

    Examples
    --------
    >>> from coxinfluence.models.cause_specific import simulate_competing_risks
    >>> X, time, status = simulate_competing_risks()
    >>> fit = ci.fit_cause_specific(X, time, status)
    >>> target = ci.targets.AbsoluteRisk(X.head(1), [0.5, 1.0], cause=1)
    >>> target.columns(fit)
    ['F1(0.5|0)', 'F1(1|0)']
    >>> np.round(target.value(fit, fit.coef[None, :]), 3)
    array([[0.497, 0.685]])
    """

    name = "absolute_risk"
    quantity = "cumulative_incidence"
    options = ("cause", "product_limit", "strata")
    ask = "ci.targets.AbsoluteRisk(X_new, times, cause=1)"
    fit_type = CauseSpecificFit

    def __init__(self, X_new, times, cause=None, product_limit=True, strata=None):
        self.X_new, self.cause = X_new, cause
        self.product_limit, self.strata = bool(product_limit), strata
        self.times = nonnegative_times(times)

    def _k(self, fit):
        """The cause: ``cause``, else the fit's (``fit.cause``, as ``ci.evaluate(...,
        cause=)`` sets it), else 1."""
        if self.cause is not None:
            return self.cause
        return 1 if fit.cause is None else fit.cause

    def _parts(self, fit):
        if self._k(fit) not in fit.causes:
            raise ValueError(f"cause must be one of {fit.causes}; got {self._k(fit)!r}")
        return cause_parts(fit, self.X_new, self.strata)

    def _split(self, fit, theta):
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        ends = np.cumsum([len(m.coef) for m in fit.models])[:-1]
        return np.split(theta, ends, axis=1)

    def columns(self, fit):
        """``"Fk(t|label)"`` per patient and time.

        Parameters
        ----------
        fit : CauseSpecificFit
            The fit.

        Returns
        -------
        list of str
            The column names, patient by patient, time by time.

        Examples
        --------
        >>> rng = np.random.default_rng(3)
        >>> time, status = rng.exponential(size=60), rng.integers(0, 3, 60)
        >>> fit = ci.fit_cause_specific(rng.normal(size=(60, 1)), time, status)
        >>> ci.targets.AbsoluteRisk(np.zeros((1, 1)), [0.5], cause=2).columns(fit)
        ['F2(0.5|0)']
        """
        labels = self._parts(fit)[1]
        return [f"F{self._k(fit)}({t:g}|{lab})" for lab in labels for t in self.times]

    def followup_notes(self, fit):
        """Times past the cause's last event time in each patient's stratum (``F_k(t|x)``
        is flat after it): ``influence()`` warns with each.

        Parameters
        ----------
        fit : CauseSpecificFit
            The fit.

        Returns
        -------
        tuple of str
            One sentence per stratum with times past the follow-up; empty if none.

        Examples
        --------
        >>> rng = np.random.default_rng(3)
        >>> time, status = rng.exponential(size=60), rng.integers(0, 3, 60)
        >>> fit = ci.fit_cause_specific(rng.normal(size=(60, 1)), time, status)
        >>> ci.targets.AbsoluteRisk(np.zeros((1, 1)), [0.5], cause=2).followup_notes(fit)
        ()
        """
        parts, labels = self._parts(fit)
        return absolute_risk_notes(fit, parts, self.times, self._k(fit), labels)

    def _risk(self, fit, theta, deleted=None):
        parts = self._parts(fit)[0]
        thetas = self._split(fit, theta)
        F = absolute_risk(fit, thetas, parts, self.times, self._k(fit),
                          self.product_limit, deleted)
        return F.reshape(F.shape[0], -1)

    def value(self, fit, theta):
        """(B, m) the absolute risks at coefficients ``theta`` (B, d).

        Parameters
        ----------
        fit : CauseSpecificFit
            The fit.
        theta : array_like, shape (B, d)
            Every cause's coefficients, one problem per row.

        Returns
        -------
        numpy.ndarray, shape (B, m)
            The absolute risks.

        Examples
        --------
        >>> rng = np.random.default_rng(3)
        >>> time, status = rng.exponential(size=60), rng.integers(0, 3, 60)
        >>> fit = ci.fit_cause_specific(rng.normal(size=(60, 1)), time, status)
        >>> target = ci.targets.AbsoluteRisk(np.zeros((1, 1)), [0.5], cause=2)
        >>> bool(np.allclose(target.value(fit, fit.coef[None, :]),
        ...                  fit.predict_absolute_risk(np.zeros((1, 1)), [0.5], cause=2)))
        True
        """
        return self._risk(fit, theta)

    # ----------------------------------------------------------- derivatives
    def jacobian(self, fit):
        """(m, d) ``dF/dtheta`` at the fitted coefficients of every cause.

        Parameters
        ----------
        fit : CauseSpecificFit
            The fit.

        Returns
        -------
        numpy.ndarray, shape (m, d)
            The Jacobian, through the patients' relative risks and the baselines.

        Examples
        --------
        >>> rng = np.random.default_rng(3)
        >>> time, status = rng.exponential(size=60), rng.integers(0, 3, 60)
        >>> fit = ci.fit_cause_specific(rng.normal(size=(60, 1)), time, status)
        >>> target = ci.targets.AbsoluteRisk(np.zeros((1, 1)), [0.5], cause=2)
        >>> target.jacobian(fit).shape
        (1, 2)
        """
        parts = self._parts(fit)[0]
        return absolute_risk_jacobian(fit, parts, self.times, self._k(fit),
                                      self.product_limit)

    def baseline_influence(self, fit, units=None):
        """(U, m) the baselines' first-order change by deleting each unit at ``theta_hat``.

        ``-sum_{i in g} w_i dF/dw_i`` (module docstring): the infinitesimal counterpart of
        :meth:`data_effect`. With ``J`` times the coefficients' Reid change it is Reid's
        change of ``F`` (``coxinfluence.models.cause_specific_influence``).

        Parameters
        ----------
        fit : CauseSpecificFit
            The fit.
        units : object, optional
            The audit's units (``per_cause``); None: the rows.

        Returns
        -------
        numpy.ndarray, shape (U, m)
            One row per unit.

        Examples
        --------
        >>> rng = np.random.default_rng(3)
        >>> time, status = rng.exponential(size=60), rng.integers(0, 3, 60)
        >>> fit = ci.fit_cause_specific(rng.normal(size=(60, 1)), time, status)
        >>> target = ci.targets.AbsoluteRisk(np.zeros((1, 1)), [0.5], cause=2)
        >>> target.baseline_influence(fit).shape
        (60, 1)
        """
        parts = self._parts(fit)[0]
        return baseline_influence(fit, parts, self.times, self._k(fit), self.product_limit,
                                  cause_units(fit, units))

    def data_effect(self, fit, units=None):
        """``F(theta_hat; D_{-g}) - F(theta_hat; D)``: every cause's baseline without the
        unit, the coefficients kept.

        Parameters
        ----------
        fit : CauseSpecificFit
            The fit.
        units : object, optional
            The audit's units (``per_cause``); None: the rows.

        Returns
        -------
        numpy.ndarray, shape (U, m)
            One row per unit.

        Examples
        --------
        >>> rng = np.random.default_rng(3)
        >>> time, status = rng.exponential(size=60), rng.integers(0, 3, 60)
        >>> fit = ci.fit_cause_specific(rng.normal(size=(60, 1)), time, status)
        >>> target = ci.targets.AbsoluteRisk(np.zeros((1, 1)), [0.5], cause=2)
        >>> target.data_effect(fit).shape
        (60, 1)
        """
        per_cause = cause_units(fit, units)
        U = per_cause[0].n_units
        thetas = np.repeat(fit.coef[None, :], U, axis=0)
        return self.refit_values(fit, thetas, units) - self.value(fit, fit.coef)

    def refit_values(self, fit, theta_loo, units=None, batch=64):
        """``F(theta_{-g}; D_{-g})``: each unit's coefficients with every cause's baseline
        without the unit (NaN rows: not refitted).

        Parameters
        ----------
        fit : CauseSpecificFit
            The fit.
        theta_loo : array_like, shape (U, d)
            Each unit's refitted coefficients.
        units : object, optional
            The audit's units (``per_cause``); None: the rows.
        batch : int, default 64
            Units evaluated together.

        Returns
        -------
        numpy.ndarray, shape (U, m)
            One row per unit.

        Examples
        --------
        >>> rng = np.random.default_rng(3)
        >>> time, status = rng.exponential(size=60), rng.integers(0, 3, 60)
        >>> fit = ci.fit_cause_specific(rng.normal(size=(60, 1)), time, status)
        >>> target = ci.targets.AbsoluteRisk(np.zeros((1, 1)), [0.5], cause=2)
        >>> loo = np.repeat(fit.coef[None, :], 60, axis=0)
        >>> target.refit_values(fit, loo).shape
        (60, 1)
        """
        per_cause = cause_units(fit, units)
        th = np.asarray(theta_loo, dtype=np.float64)
        out = np.full((th.shape[0], len(self.columns(fit))), np.nan)
        ok = np.flatnonzero(np.isfinite(th).all(axis=1))
        for lo in range(0, ok.size, batch):
            codes = ok[lo:lo + batch]
            deleted = [u.deletion(codes) for u in per_cause]
            out[codes] = self._risk(fit, th[codes], deleted)
        return out

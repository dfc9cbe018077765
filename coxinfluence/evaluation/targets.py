"""Test-set metrics as targets of the audit: which training patients move them.

``ci.influence(fit, target=BrierScore(X_test, time_test, event_test, times))`` attributes
the change of the model's test-set Brier score to each training unit: the metric is
computed from the model's predictions for the test patients, which move when a training
unit is deleted and the model refitted. The test outcomes and their censoring weights
(``coxinfluence.evaluation.scores``) do not depend on the training data.

Each target is built on a prediction target of ``ci.targets`` evaluated on the fit (the
model family's own formula, :class:`~coxinfluence.targets.Survival` for the Brier score
and the AUC; :class:`~coxinfluence.targets.LinearPredictor`, or the median survival time
of a model without one, for the concordance):

- value at any ``theta`` and after each refit (``refit_values``: the prediction with the
  refitted coefficients and, for a Cox model, the baseline hazard without the unit), so
  the exact change ``g(theta_{-g}; D_{-g}) - g(theta_hat; D)`` is the metric rescored
  after each refit;
- Brier score and integrated Brier score: differentiable in the predictions, so the
  Jacobian is the chain rule ``sum_i dB/dS_i dS_i/dtheta``, and the data effect (the
  baseline hazard's direct change) the metric at the prediction's own data effect;
- AUC and concordance: step functions of the parameters (they change only when two
  test patients swap order), whose exact derivative is zero almost everywhere. Their
  first-order estimate is a **smooth surrogate**: each indicator ``1[s_i > s_j]`` is
  replaced by ``sigmoid((s_i - s_j) / h)`` with ``h = bandwidth * sd(s)`` (``s`` the
  test patients' scores at the fit) when differentiating, the value itself staying
  exact. The surrogate's first-order change says in which direction and roughly how
  much a unit pushes the metric; the exact change (``method="exact"``, and what
  ``method="auto"`` verifies) is the metric recomputed after the refit.
  ``first_order`` says so on each target.

``ci.influence`` needs these targets accepted for every model with the underlying
prediction (``generic = True``; the audit checks a target's name against the model's
``target_names`` otherwise).
"""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from coxinfluence.audit.target_base import implementation_of
from coxinfluence.audit.targets import LinearPredictor, Quantile, Survival, Target
from coxinfluence.data.inputs import InputError
from coxinfluence.evaluation.scores import (
    TestOutcomes,
    _event_weights,
    comparable,
    concordant_weight,
    ibs_weights,
    pair_matrix,
)
from coxinfluence.evaluation.test_set import check_times, read_test_set, test_strata

__all__ = ["BrierScore", "IntegratedBrierScore", "TimeDependentAUC", "Concordance"]


def _sigmoid_slope(z):
    e = np.exp(-np.abs(z))
    return e / (1.0 + e) ** 2


def _pair_weights(out, kind, strata):
    """The events, each patient's pair weight ``omega`` (n,) as the event of a pair, and
    the weighted number of comparable pairs, in ``O(n log n)``: within strata when
    given, Uno's weights then from each stratum's censoring Kaplan-Meier."""
    omega = np.zeros(out.n)
    npairs = 0.0
    groups = ([np.arange(out.n)] if strata is None
              else [np.flatnonzero(strata == c) for c in np.unique(strata)])
    for rows in groups:
        time, event = out.time[rows], out.event[rows]
        if not event.any():
            continue
        omega[rows] = _event_weights(time, event, (kind,), None, None)[0]
        # each event's comparable patients: a later time, or the same time censored
        ut, g = np.unique(time, return_inverse=True)
        at = np.bincount(g, minlength=ut.size)
        later = rows.size - np.cumsum(at)
        tied = np.bincount(g, weights=~event, minlength=ut.size)
        npairs += float(omega[rows] @ (later + tied)[g])
    if npairs == 0:
        raise InputError("the test set has no comparable pairs (an event before another "
                         "patient's time)")
    return np.flatnonzero(out.event), omega, npairs


def _comparable_blocks(out, strata, events, size=4_000_000):
    """The events in blocks and each block's comparable pairs (block, n), blocks of at
    most ``size`` entries: the pairs' memory stays ``O(n)``."""
    step = max(1, size // max(out.n, 1))
    for k in range(0, events.size, step):
        rows = events[k:k + step]
        comp = comparable(out, rows)
        if strata is not None:
            comp &= strata[rows][:, None] == strata[None, :]
        yield rows, comp


class _TestSetMetric(Target):
    """The shared parts: the test set, the prediction target, the metric of predictions.

    Subclasses set :attr:`name`, build :attr:`_inner` (a prediction target of
    ``ci.targets``) and define ``_metric`` ((B, P, T) predictions -> (B, m)) and
    ``_gradient`` ((P, T) predictions at the fit -> (P, T, m) derivatives).
    """

    #: accepted by the audit for every model with the prediction (see module docstring)
    generic = True
    #: how the first-order change is computed
    first_order = "chain rule"

    def __init__(self, X_test, time_test, event_test, times=None, cause=None):
        self.X_test = X_test
        self.cause = cause
        self.outcomes: TestOutcomes = read_test_set(X_test, time_test, event_test, cause)
        self.times = None if times is None else check_times(times, self.outcomes)
        self._inner = None
        self._incidence = None

    # the prediction target, with the transform of a model whose library builds the
    # design from raw columns (set on this target by ci.influence); for a model with a
    # cumulative incidence F and no survival (Fine-Gray), F, read as S = 1 - F (flip)
    def _pred(self, fit):
        inner, flip = self._inner, False
        if (implementation_of("survival", fit=fit) is None
                and implementation_of("cumulative_incidence", fit=fit) is not None):
            if self._incidence is None or self._incidence[0] is not fit:
                cls = implementation_of("cumulative_incidence", fit=fit)
                self._incidence = (fit, cls(self.X_test, self.times,
                                            **self._cause_option(fit, cls)))
            inner, flip = self._incidence[1], True
        if self.transform is not None and inner.transform is not self.transform:
            inner = copy.copy(inner)
            inner.transform = self.transform
            if not flip:
                self._inner = inner
        return inner, flip

    def _cause_option(self, fit, cls):
        """The prediction's cause where the metric names one (``cause=``): passed to a
        prediction that takes it (the cause-specific absolute risk); a model fitted for
        one cause (Fine-Gray) must be for that cause, else its predictions would be
        scored against another cause's events."""
        if self.cause is None:
            return {}
        if "cause" in cls.options:
            return {"cause": self.cause}
        fitted = 1 if fit.cause is None else fit.cause
        if fitted != self.cause:
            raise ValueError(f"the {self.name} scores cause {self.cause!r} but the model "
                             f"predicts cause {fitted!r}: fit it for cause {self.cause!r}")
        return {}

    def _surv(self, fit, theta):
        pred, flip = self._pred(fit)
        v = np.asarray(pred.value(fit, theta), dtype=np.float64)
        return 1.0 - v if flip else v

    def _shape(self, values):
        values = np.asarray(values, dtype=np.float64)
        return values.reshape(values.shape[0], self.outcomes.n, -1)

    def value(self, fit, theta):
        """The metric at coefficient vectors ``theta``.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta : array_like, shape (B, d)
            Coefficient vectors in the fit's order.

        Returns
        -------
        numpy.ndarray, shape (B, m)
            The metric (one column per entry, :meth:`columns`) from the model's
            predictions for the test patients at each row of ``theta``.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.BrierScore(X[test], *y, times=[365, 730])
        >>> np.round(target.value(fit, fit.coef[None, :]), 4)
        array([[0.0743, 0.1729]])
        """
        return self._metric(self._shape(self._surv(fit, theta)))

    def jacobian(self, fit):
        """The metric's derivative in the coefficients at the fit (chain rule).

        For the AUC and the concordance, the derivative of the smooth surrogate
        (module docstring).

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        numpy.ndarray, shape (m, d)
            ``sum_{i,t} dg/dpred_{it} dpred_{it}/dtheta``.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.BrierScore(X[test], *y, times=[365, 730])
        >>> target.jacobian(fit).shape
        (2, 5)
        """
        pred, flip = self._pred(fit)
        at = self._shape(self._surv(fit, np.asarray(fit.coef)[None, :]))[0]
        J = np.asarray(pred.jacobian(fit), dtype=np.float64) * (-1.0 if flip else 1.0)
        J = J.reshape(self.outcomes.n, at.shape[1], -1)
        return np.einsum("ptm,ptd->md", self._gradient(at), J)

    def data_effect(self, fit, units=None):
        """The metric's change through the predictions' own data effect.

        ``g(pred(theta_hat; D_{-g})) - g(pred(theta_hat; D))``: for a Cox model the
        baseline hazard without the unit; None for predictions of ``theta`` alone.

        Parameters
        ----------
        fit : object
            The fitted model.
        units : object, optional
            The units of deletion; None: the rows.

        Returns
        -------
        numpy.ndarray of shape (U, m), or None
            One row per unit.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.TimeDependentAUC(X[test], *y, times=[365, 730])
        >>> target.data_effect(fit).shape
        (458, 2)
        """
        pred, flip = self._pred(fit)
        eff = pred.data_effect(fit, units)
        if eff is None:
            return None
        eff = -np.asarray(eff, dtype=np.float64) if flip else eff
        at = self._surv(fit, np.asarray(fit.coef)[None, :])
        return self._metric(self._shape(at + eff)) - self._metric(self._shape(at))

    def refit_values(self, fit, theta_loo, units=None):
        """The metric rescored after each unit's refit.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta_loo : array_like, shape (U, d)
            Each unit's refitted coefficients (rows of NaN: not refitted).
        units : object, optional
            The units of deletion; None: the rows.

        Returns
        -------
        numpy.ndarray, shape (U, m)
            The metric from the predictions of each refitted model (NaN where not
            refitted).

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.TimeDependentAUC(X[test], *y, times=[365, 730])
        >>> target.refit_values(fit, ci.exact_loo(fit).to_numpy()).shape
        (458, 2)
        """
        pred, flip = self._pred(fit)
        pred = np.asarray(pred.refit_values(fit, theta_loo, units), dtype=np.float64)
        pred = 1.0 - pred if flip else pred
        out = np.full((pred.shape[0], len(self.columns(fit))), np.nan)
        ok = np.isfinite(pred).all(axis=1)
        if ok.any():
            out[ok] = self._metric(self._shape(pred[ok]))
        return out

    def followup_notes(self, fit):
        """The prediction's notes on times past the training data's follow-up.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        tuple of str
            The sentences of the prediction target (empty if none).

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.BrierScore(X[test], *y, times=[365, 730])
        >>> target.followup_notes(fit)
        ()
        """
        return tuple(self._pred(fit)[0].followup_notes(fit))


class _TimeMetric(_TestSetMetric):
    """A metric of the predicted survival at the times (Brier, AUC)."""

    def __init__(self, X_test, time_test, event_test, times, cause=None):
        if times is None:
            raise ValueError("times are required")
        super().__init__(X_test, time_test, event_test, times, cause)
        self._inner = Survival(X_test, self.times)
        self._roles = [self.outcomes.roles(t) for t in self.times]

    def columns(self, fit):
        """One column per time, ``"<metric>(<t>)"``.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        list of str
            E.g. ``["brier(365)", "brier(730)"]``.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.BrierScore(X[test], *y, times=[365, 730])
        >>> target.columns(fit)
        ['brier(365)', 'brier(730)']
        """
        return [f"{self.label}({t:g})" for t in self.times]


class BrierScore(_TimeMetric):
    """The test set's IPCW Brier score at times, as a target of the audit.

    ``B(t) = (1/n) sum_i [case_i S_i(t)^2 / G(T_i-) + control_i (1 - S_i(t))^2 / G(t)]``
    over the test patients (``riskRegression::Score``'s, ``coxinfluence.evaluation.scores``),
    ``S_i(t)`` the model's predicted survival (``ci.targets.Survival``), ``G``
    the Kaplan-Meier of the test set's censoring. Differentiable in the predictions: the
    first-order change is the chain rule. One column per time, ``"brier(t)"``; lower is
    better.

    Parameters
    ----------
    X_test : DataFrame or array_like
        The test patients' covariates (the training columns).
    time_test, event_test : array_like
        Their follow-up times and events (1) or censorings (0).
    times : float or array_like
        The times, inside the test set's follow-up.
    cause : int, optional
        Competing risks (a Fine-Gray model, scored on its cumulative incidence ``F``
        as ``S = 1 - F``): ``event_test`` holds causes (0 censored, 1, 2, ...) and this is
        the cause of interest, the fit's; None: events are 0/1.

    Raises
    ------
    InputError
        Bad test outcomes or times (:func:`coxinfluence.evaluate`).

    See Also
    --------
    coxinfluence.evaluate : The metrics with standard errors.
    IntegratedBrierScore : Over a range of times.

    Examples
    --------
    >>> from lifelines.datasets import load_gbsg2
    >>> gbsg = load_gbsg2()
    >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
    >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
    >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
    >>> y = (gbsg.time[test], gbsg.cens[test])
    >>> target = ci.targets.BrierScore(X[test], *y, times=[365, 730])
    >>> target.columns(fit)
    ['brier(365)', 'brier(730)']
    >>> np.round(target.value(fit, fit.coef[None, :]), 4)
    array([[0.0743, 0.1729]])
    >>> target.jacobian(fit).shape
    (2, 5)
    """

    name = "brier_score"
    label = "brier"
    #: the most entries (units x test patients x times) of one block of predictions:
    #: the rescoring of refits and the data effect go through the test patients in blocks
    #: (the Brier score is a sum over them), so a large test set fits in memory
    block_entries = 20_000_000

    def _partial(self, S, rows):
        """(B, T): the test patients ``rows``' share of the Brier scores."""
        out = np.empty((S.shape[0], len(self.times)))
        for k, (_, _, a, b, _) in enumerate(self._roles):
            s = S[:, :, k]
            out[:, k] = (a[rows] * s ** 2 + b[rows] * (1.0 - s) ** 2).sum(axis=1)
        return out / self.outcomes.n

    def _partial_change(self, S, eff, rows):
        """(U, T): the change of the test patients ``rows``' share of the Brier scores
        when their predictions ``S`` (P, T) move by ``eff`` (U, P, T), as the expansion
        ``a ((S + e)^2 - S^2) + b ((1 - S - e)^2 - (1 - S)^2) = 2 e (a S - b (1 - S)) +
        (a + b) e^2`` (exact; no difference of two sums): two matrix products over the
        (patient, time) entries (``eff`` is overwritten by its square)."""
        U, P, T = eff.shape
        lin, quad = np.zeros((P, T, T)), np.zeros((P, T, T))
        for k, (_, _, a, b, _) in enumerate(self._roles):
            a, b, s = a[rows], b[rows], S[:, k]
            lin[:, k, k] = 2.0 * (a * s - b * (1.0 - s))
            quad[:, k, k] = a + b
        flat = eff.reshape(U, P * T)
        out = flat @ lin.reshape(P * T, T)
        np.square(flat, out=flat)
        out += flat @ quad.reshape(P * T, T)
        return out / self.outcomes.n

    def _finish(self, brier):
        return brier

    def _metric(self, S):
        return self._finish(self._partial(S, np.arange(self.outcomes.n)))

    def _blocks(self, units):
        n, T = self.outcomes.n, len(self.times)
        per = max(1, int(self.block_entries // max(units * T, 1)))
        return None if per >= n else [np.arange(s, min(s + per, n)) for s in range(0, n, per)]

    def _block_pred(self, fit, rows, flip):
        X = self.X_test
        X = X.iloc[rows] if isinstance(X, pd.DataFrame) else np.asarray(X)[rows]
        pred = (implementation_of("cumulative_incidence", fit=fit)(X, self.times) if flip
                else Survival(X, self.times))
        pred.transform = self.transform
        return pred

    def data_effect(self, fit, units=None):
        """The metric's change through the predictions' own data effect.

        ``g(pred(theta_hat; D_{-g})) - g(pred(theta_hat; D))``, through the test
        patients in blocks (:attr:`block_entries`).

        Parameters
        ----------
        fit : object
            The fitted model.
        units : object, optional
            The units of deletion; None: the rows.

        Returns
        -------
        numpy.ndarray of shape (U, m), or None
            One row per unit; None for predictions of ``theta`` alone.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.BrierScore(X[test], *y, times=[365, 730])
        >>> target.data_effect(fit).shape
        (458, 2)
        """
        n_units = units.n_units if units is not None else fit.nobs
        blocks = self._blocks(int(n_units))
        if blocks is None:
            return super().data_effect(fit, units)
        _, flip = self._pred(fit)
        at_coef = np.asarray(fit.coef)[None, :]
        total = None
        for rows in blocks:
            pred = self._block_pred(fit, rows, flip)
            eff = pred.data_effect(fit, units)
            if eff is None:
                return None
            at = np.asarray(pred.value(fit, at_coef), dtype=np.float64)
            eff = np.array(eff, dtype=np.float64)             # ours: overwritten below
            at, eff = (1.0 - at, -eff) if flip else (at, eff)
            shape = (-1, rows.size, len(self.times))
            part = self._partial_change(at.reshape(shape)[0], eff.reshape(shape), rows)
            total = part if total is None else total + part
        return self._finish(total)

    def refit_values(self, fit, theta_loo, units=None):
        """The metric rescored after each unit's refit, through the test patients in
        blocks (:attr:`block_entries`).

        Parameters
        ----------
        fit : object
            The fitted model.
        theta_loo : array_like, shape (U, d)
            Each unit's refitted coefficients (rows of NaN: not refitted).
        units : object, optional
            The units of deletion; None: the rows.

        Returns
        -------
        numpy.ndarray, shape (U, m)
            The metric of each refitted model (NaN where not refitted).

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.BrierScore(X[test], *y, times=[365, 730])
        >>> values = target.refit_values(fit, ci.exact_loo(fit).to_numpy())
        >>> values.shape
        (458, 2)
        """
        theta_loo = np.asarray(theta_loo, dtype=np.float64)
        blocks = self._blocks(theta_loo.shape[0])
        if blocks is None:
            return super().refit_values(fit, theta_loo, units)
        _, flip = self._pred(fit)
        total = np.zeros((theta_loo.shape[0], len(self.times)))
        for rows in blocks:
            v = np.asarray(self._block_pred(fit, rows, flip).refit_values(fit, theta_loo,
                                                                           units), dtype=np.float64)
            v = 1.0 - v if flip else v
            total += self._partial(v.reshape(-1, rows.size, len(self.times)), rows)
        return self._finish(total)

    def _gradient(self, S):
        n, T = S.shape
        g = np.zeros((n, T, T))
        for k, (_, _, a, b, _) in enumerate(self._roles):
            g[:, k, k] = (2 * a * S[:, k] - 2 * b * (1.0 - S[:, k])) / n
        return g


class IntegratedBrierScore(BrierScore):
    """The test set's integrated Brier score over times, as a target of the audit.

    riskRegression's ``IBS`` at the last of ``times``: ``sum_k w_k B(t_k)``, the Brier
    score (:class:`BrierScore`) integrated by left rectangles from 0 and divided by the
    last time (``coxinfluence.evaluation.scores.ibs_weights``); give a fine grid of
    times. One column, ``"ibs(t_last)"``.

    Parameters
    ----------
    X_test : DataFrame or array_like
        The test patients' covariates.
    time_test, event_test : array_like
        Their follow-up times and events.
    times : array_like
        The grid of times, inside the test set's follow-up.
    cause : int, optional
        Competing risks (a Fine-Gray model, scored on its cumulative incidence ``F``
        as ``S = 1 - F``): ``event_test`` holds causes (0 censored, 1, 2, ...) and this is
        the cause of interest, the fit's; None: events are 0/1.

    See Also
    --------
    BrierScore : At each time.

    Examples
    --------
    >>> from lifelines.datasets import load_gbsg2
    >>> gbsg = load_gbsg2()
    >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
    >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
    >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
    >>> y = (gbsg.time[test], gbsg.cens[test])
    >>> target = ci.targets.IntegratedBrierScore(X[test], *y, times=np.arange(200, 1501, 100))
    >>> target.columns(fit)
    ['ibs(1500)']
    >>> np.round(target.value(fit, fit.coef[None, :]), 4)
    array([[0.1363]])
    """

    name = "integrated_brier_score"
    label = "ibs"

    def __init__(self, X_test, time_test, event_test, times, cause=None):
        super().__init__(X_test, time_test, event_test, times, cause)
        self._w = ibs_weights(self.times)

    def columns(self, fit):
        """One column, ``"ibs(<last time>)"``.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        list of str
            The column name.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.IntegratedBrierScore(X[test], *y, times=np.arange(200, 1501, 100))
        >>> target.columns(fit)
        ['ibs(1500)']
        """
        return [f"ibs({self.times[-1]:g})"]

    def _finish(self, brier):
        return brier @ self._w[:, None]

    def _gradient(self, S):
        return super()._gradient(S) @ self._w[:, None]


class _Surrogate:
    """The smooth surrogate's bandwidth (module docstring)."""

    first_order = ("smooth surrogate: each 1[s_i > s_j] replaced by sigmoid((s_i - s_j) "
                   "/ h), h = bandwidth * sd(s), when differentiating; values exact")
    #: a step function of the coefficients: ``auto`` claims no first-order bound
    smooth = False

    @staticmethod
    def _pair_gradient(si, sj, wi, wj, h):
        """d/ds of ``sum_ij wi_i wj_j sigmoid((si_i - sj_j) / h)``: (for i, for j); the
        pairs in blocks of ``i`` (memory ``O(len(sj))`` per block)."""
        gi, gj = np.empty(si.size), np.zeros(sj.size)
        step = max(1, 4_000_000 // max(sj.size, 1))
        for k in range(0, si.size, step):
            part = slice(k, k + step)
            K = wi[part, None] * wj[None, :] * _sigmoid_slope(
                (si[part, None] - sj[None, :]) / h) / h
            gi[part] = K.sum(axis=1)
            gj -= K.sum(axis=0)
        return gi, gj


class TimeDependentAUC(_Surrogate, _TimeMetric):
    """The test set's cumulative/dynamic AUC at times, as a target of the audit.

    ``AUC(t)``: the IPCW probability that a test patient who died by ``t`` has a higher
    predicted risk ``1 - S(t|x)`` than one still followed after ``t``, ties 1/2
    (``riskRegression::Score``'s, ``coxinfluence.evaluation.scores``). A step function
    of the coefficients: its value (and every exact change) is exact, its first-order
    change that of a smooth surrogate (:attr:`first_order`; module docstring). One
    column per time, ``"auc(t)"``; higher is better.

    Parameters
    ----------
    X_test : DataFrame or array_like
        The test patients' covariates.
    time_test, event_test : array_like
        Their follow-up times and events.
    times : float or array_like
        The times, inside the test set's follow-up.
    bandwidth : float, default 0.05
        The surrogate's ``h`` relative to the standard deviation of the test patients'
        risks at each time.
    cause : int, optional
        Competing risks (a Fine-Gray model, scored on its cumulative incidence ``F``
        as ``S = 1 - F``): ``event_test`` holds causes (0 censored, 1, 2, ...) and this is
        the cause of interest, the fit's; None: events are 0/1.

    See Also
    --------
    Concordance : Over all times.
    coxinfluence.evaluate : The metrics with standard errors.

    Examples
    --------
    >>> from lifelines.datasets import load_gbsg2
    >>> gbsg = load_gbsg2()
    >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
    >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
    >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
    >>> y = (gbsg.time[test], gbsg.cens[test])
    >>> target = ci.targets.TimeDependentAUC(X[test], *y, times=[365, 730])
    >>> np.round(target.value(fit, fit.coef[None, :]), 4)
    array([[0.8029, 0.7473]])
    >>> target.first_order.split(":")[0]
    'smooth surrogate'
    """

    name = "time_dependent_auc"
    label = "auc"

    def __init__(self, X_test, time_test, event_test, times, bandwidth=0.05, cause=None):
        super().__init__(X_test, time_test, event_test, times, cause)
        self.bandwidth = float(bandwidth)
        if not self.bandwidth > 0:
            raise ValueError(f"bandwidth must be positive; got {bandwidth!r}")

    def _metric(self, S):
        out = np.empty((S.shape[0], len(self.times)))
        for k, (case, control, a, b, _) in enumerate(self._roles):
            denom = a.sum() * b.sum()
            for j in range(S.shape[0]):
                r = 1.0 - S[j, :, k]
                out[j, k] = (a[case] * pair_matrix(r[case], (r[control], b[control]))
                             ).sum() / denom
        return out

    def _gradient(self, S):
        n, T = S.shape
        g = np.zeros((n, T, T))
        for k, (case, control, a, b, _) in enumerate(self._roles):
            r = 1.0 - S[:, k]
            h = self.bandwidth * r.std() or 1.0
            gi, gj = self._pair_gradient(r[case], r[control], a[case], b[control], h)
            denom = a.sum() * b.sum()
            g[case, k, k] -= gi / denom          # r = 1 - S
            g[control, k, k] -= gj / denom
        return g


class Concordance(_Surrogate, _TestSetMetric):
    """The test set's concordance index (Harrell's or Uno's), as a target of the audit.

    ``survival::concordance(fit, newdata = test)``'s: over comparable pairs (an event and
    a patient followed longer), the share where the event had the higher risk score,
    ties 1/2; each pair weighted 1 (``kind="harrell"``, ``timewt = "n"``) or ``1 /
    G(T_i-)^2`` (``kind="uno"``, ``"n/G2"``); for a stratified Cox model, pairs within a
    stratum only (``G`` each stratum's), as R's concordance of a stratified coxph. The
    risk score is the linear predictor (``ci.targets.LinearPredictor``: a Cox model's
    ``x'beta``) or, for a model without one (an AFT model), minus the log of the median
    survival time (the same order as minus survreg's linear predictor, which R's
    concordance uses), or for a model with neither (lifelines' parametric fitters) minus
    the survival probability at the median of the test times (the same order for an AFT
    model). A step function of
    the coefficients: value exact, first-order change a smooth surrogate
    (:attr:`first_order`). One column, ``"c_harrell"`` or ``"c_uno"``.

    Parameters
    ----------
    X_test : DataFrame or array_like
        The test patients' covariates.
    time_test, event_test : array_like
        Their follow-up times and events.
    kind : {"harrell", "uno"}, default "harrell"
        The pairs' weights.
    bandwidth : float, default 0.05
        The surrogate's ``h`` relative to the standard deviation of the risk scores.

    See Also
    --------
    TimeDependentAUC : At a time.
    coxinfluence.evaluate : The metrics with standard errors.

    Examples
    --------
    >>> from lifelines.datasets import load_gbsg2
    >>> gbsg = load_gbsg2()
    >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
    >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
    >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
    >>> y = (gbsg.time[test], gbsg.cens[test])
    >>> target = ci.targets.Concordance(X[test], *y, kind="uno")
    >>> target.columns(fit)
    ['c_uno']
    >>> np.round(target.value(fit, fit.coef[None, :]), 4)
    array([[0.6737]])
    """

    name = "concordance"

    def __init__(self, X_test, time_test, event_test, kind="harrell", bandwidth=0.05):
        super().__init__(X_test, time_test, event_test)
        if kind not in ("harrell", "uno"):
            raise ValueError(f"kind must be 'harrell' or 'uno'; got {kind!r}")
        self.kind = kind
        self.bandwidth = float(bandwidth)
        if not self.bandwidth > 0:
            raise ValueError(f"bandwidth must be positive; got {bandwidth!r}")
        self._lp = LinearPredictor(X_test)
        self._strata = None
        self._weights_of = None        # (strata, _pair_weights), when first needed

    def _bind(self, fit):
        """The score's prediction for ``fit``: its linear predictor (sign 1), else its
        median survival time (-1: minus its log), else its survival at the median test
        time (0: minus it)."""
        if self._inner is None or self._inner[0] is not fit:
            strata = test_strata(fit, self.X_test)
            if strata is not None or self._strata is not None:
                self._strata = strata
            tau = float(np.median(self.outcomes.time))
            for pred, sign in ((copy.copy(self._lp), 1), (Quantile(self.X_test, 0.5), -1),
                               (Survival(self.X_test, [tau]), 0)):
                pred.transform = self.transform
                try:
                    pred.implementation(fit=fit)
                except ValueError:
                    continue
                self._inner = (fit, pred, sign)
                break
            else:
                raise ValueError(f"the model ({type(fit).__name__}) has no linear "
                                 "predictor, median or survival prediction to rank by")
        return self._inner

    def _pair_info(self):
        """The events, their pair weights and the weighted number of pairs (within the
        bound fit's strata), computed when first needed."""
        if self._weights_of is None or self._weights_of[0] is not self._strata:
            self._weights_of = (self._strata, _pair_weights(self.outcomes, self.kind,
                                                            self._strata))
        return self._weights_of[1]

    def _pred(self, fit):
        raise AssertionError("the concordance binds its score by _bind")

    def columns(self, fit):
        """One column, ``"c_harrell"`` or ``"c_uno"``.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        list of str
            The column name.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.Concordance(X[test], *y)
        >>> target.columns(fit)
        ['c_harrell']
        """
        return [f"c_{self.kind}"]

    def _scores(self, fit, values, sign):
        v = np.asarray(values, dtype=np.float64)
        return v if sign == 1 else -np.log(v) if sign == -1 else -v

    def _metric_of_scores(self, s):
        out = self.outcomes
        groups = ([np.arange(out.n)] if self._strata is None
                  else [np.flatnonzero(self._strata == c) for c in np.unique(self._strata)])
        _, omega, npairs = self._pair_info()
        conc = sum(concordant_weight(s[:, rows], out.time[rows], out.event[rows],
                                     omega[rows]) for rows in groups)
        return (conc / npairs)[:, None]

    def _chunked(self, s):
        # each score vector's Fenwick tree holds n + 2 floats
        step = max(1, int(2e7 // (self.outcomes.n + 2)))
        return np.concatenate([self._metric_of_scores(s[k:k + step])
                               for k in range(0, s.shape[0], step)])

    def _with(self, fit):
        _, pred, sign = self._bind(fit)
        if self.transform is not None:
            pred.transform = self.transform
        return pred, sign

    def value(self, fit, theta):
        """The concordance at coefficient vectors ``theta``.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta : array_like, shape (B, d)
            Coefficient vectors.

        Returns
        -------
        numpy.ndarray, shape (B, 1)
            The concordance of each row's risk scores.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.Concordance(X[test], *y)
        >>> np.round(target.value(fit, fit.coef[None, :]), 4)
        array([[0.6849]])
        """
        pred, sign = self._with(fit)
        s = self._scores(fit, pred.value(fit, theta), sign)
        return self._chunked(s)

    def jacobian(self, fit):
        """The smooth surrogate's derivative at the fit (module docstring).

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        numpy.ndarray, shape (1, d)
            ``d C_h / dtheta``.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.Concordance(X[test], *y)
        >>> target.jacobian(fit).shape
        (1, 5)
        """
        pred, sign = self._with(fit)
        v = np.asarray(pred.value(fit, np.asarray(fit.coef)[None, :]), dtype=np.float64)[0]
        s = self._scores(fit, v[None], sign)[0]
        J = np.asarray(pred.jacobian(fit), dtype=np.float64)
        Js = J if sign == 1 else -J / v[:, None] if sign == -1 else -J
        h = self.bandwidth * s.std() or 1.0
        g = np.zeros(s.size)
        events, omega, npairs = self._pair_info()
        for rows, comp in _comparable_blocks(self.outcomes, self._strata, events):
            K = comp * (omega[rows][:, None]
                        * _sigmoid_slope((s[rows][:, None] - s[None, :]) / h) / h)
            g -= K.sum(axis=0)
            g[rows] += K.sum(axis=1)
        return (g @ Js / npairs)[None, :]

    def data_effect(self, fit, units=None):
        """The concordance's change through the score's own data effect.

        Parameters
        ----------
        fit : object
            The fitted model.
        units : object, optional
            The units of deletion; None: the rows.

        Returns
        -------
        numpy.ndarray of shape (U, 1), or None
            None for scores of ``theta`` alone (a linear predictor, an AFT median).

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.Concordance(X[test], *y)
        >>> target.data_effect(fit) is None
        True
        """
        pred, sign = self._with(fit)
        eff = pred.data_effect(fit, units)
        if eff is None:
            return None
        at = np.asarray(pred.value(fit, np.asarray(fit.coef)[None, :]), dtype=np.float64)
        return (self._metric_of_scores(self._scores(fit, at + eff, sign))
                - self._metric_of_scores(self._scores(fit, at, sign)))

    def refit_values(self, fit, theta_loo, units=None):
        """The concordance rescored after each unit's refit.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta_loo : array_like, shape (U, d)
            Each unit's refitted coefficients.
        units : object, optional
            The units of deletion; None: the rows.

        Returns
        -------
        numpy.ndarray, shape (U, 1)
            The concordance of each refitted model (NaN where not refitted).

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.Concordance(X[test], *y)
        >>> target.refit_values(fit, ci.exact_loo(fit).to_numpy()).shape
        (458, 1)
        """
        pred, sign = self._with(fit)
        v = np.asarray(pred.refit_values(fit, theta_loo, units), dtype=np.float64)
        out = np.full((v.shape[0], 1), np.nan)
        ok = np.isfinite(v).all(axis=1)
        s = self._scores(fit, v[ok], sign)
        if ok.any():
            out[ok] = self._chunked(s)
        return out

    def followup_notes(self, fit):
        """None: the score has no times.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        tuple
            Empty.

        Examples
        --------
        >>> from lifelines.datasets import load_gbsg2
        >>> gbsg = load_gbsg2()
        >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
        >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
        >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
        >>> y = (gbsg.time[test], gbsg.cens[test])
        >>> target = ci.targets.Concordance(X[test], *y)
        >>> target.followup_notes(fit)
        ()
        """
        return ()

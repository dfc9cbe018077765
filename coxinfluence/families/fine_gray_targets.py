"""The cumulative incidence of new patients under a Fine-Gray fit, as a target of the audit.

For a fit of cause 1 (``ci.fit_fine_gray``, R's ``cmprsk::crr``) the cumulative incidence
of a new patient ``x`` at time ``t`` is (Fine & Gray 1999, Eq. (3); R's ``predict.crr``)

    F_1(t | x) = 1 - exp(-Lambda_10(t) exp(x'theta)),
    Lambda_10(t; theta, D) = sum_{t_k <= t} d_k / S0_k(theta, D),

Breslow's baseline with the censoring-weighted risk sets ``S0_k``
(:func:`coxinfluence.likelihood.fine_gray.baseline_jumps`, crr's ``bfitj``). ``Lambda_10``
depends on the data ``D`` directly, through the risk sets *and* the Kaplan-Meier estimate
of the censoring distribution that weights them, so deleting subject ``i`` changes the
target in two ways:

    F(t|x; theta_{-i}, D_{-i}) - F(t|x; theta_hat, D)
      ~ [F(t|x; theta_hat, D_{-i}) - F(t|x; theta_hat, D)]          (data effect)
        + dF/dtheta(theta_hat, D) (theta_{-i} - theta_hat),          (chain rule)

    dF/dtheta = (1 - F) exp(x'theta) sum_{t_k <= t} (d_k / S0_k) (x - xbar_k),

``xbar_k = S1_k / S0_k`` the weighted risk-set mean. The data effect is the exact change
of ``Lambda_10`` at ``theta_hat`` with the subject deleted and its censoring group's
Kaplan-Meier re-estimated, not a first-order version: the deleted risk-set sums are known
in closed form (``coxinfluence.likelihood.fine_gray_deletion.deleted_baseline_jumps``,
the sums the VIF's deleted gradients use), O(K) per subject (K failure times), so the
exact change costs no more than a linearisation would, and it is what the definition
asks (as the Cox ``Survival`` target's data effect, by deletion at ``theta_hat``). The
exact change (:meth:`CumulativeIncidence.refit_values`) recomputes both, by literal
deletion: the refitted ``theta_{-i}`` and the baseline without the subject.

Past the last failure time of the cause (in the patient's stratum) ``Lambda_10`` has no
more jumps: ``F(t|x)`` there is the last plateau carried forward, which
:meth:`CumulativeIncidence.followup_notes` says (a
:class:`~coxinfluence.targets.TargetBeyondFollowUpWarning` from ``influence()``).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.audit.target_base import (
    Target,
    register_target,
)
from coxinfluence.data.new_patients import nonnegative_times
from coxinfluence.likelihood.fine_gray_deletion import DeletionState, deleted_baseline_jumps
from coxinfluence.models.fine_gray import FineGrayFit
from coxinfluence.models.predictions import (
    cumulative_incidence,
    fine_gray_mask,
    fine_gray_new_patients,
    fine_gray_parts,
    fine_gray_strata,
    follow_up_notes,
)

__all__ = ["CumulativeIncidence"]

#: subjects deleted per batch of the refitted values (literal deletion)
_BATCH = 128
#: floats per block of (subjects x failure times) in the data effect
_BLOCK_FLOATS = 4_000_000


@register_target
class CumulativeIncidence(Target):
    """The cumulative incidence of new patients under a Fine-Gray fit.

    ``F_k(t | x) = 1 - exp(-Lambda_10(t) exp(x'theta))`` at ``times`` under a Fine-Gray
    fit (``ci.fit_fine_gray``) of cause k: R's ``predict.crr(fit, X_new)`` read at
    ``times`` (a step function of the cause's failure times; 0 before the first). One
    column per (patient, time), ``"F(t|label)"``, patient outer, time inner.

    ``Lambda_10`` (Breslow's baseline with the censoring-weighted risk sets) depends on
    the data directly, through the risk sets and the Kaplan-Meier estimate of the
    censoring distribution that weights them, so a deleted subject changes ``F`` through
    ``theta`` (the chain rule) and directly (the data effect, exact, in closed form):
    ``coxinfluence.families.fine_gray_targets`` gives the formula, its derivative and
    the data effect.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row: a DataFrame with the fit's covariate columns
        (labels: its index), or an array in their order.
    times : float or array_like
        The times ``t``, finite and non-negative (at a failure time, ``t = 0`` included,
        its jump is in, as in ``predict.crr``).
    strata : label or sequence, optional
        For a stratified fit, each patient's stratum (one label for all, or one per
        patient; labels as in the training data): its baseline is its stratum's, the sum
        over that stratum's failure times.

    Raises
    ------
    ValueError
        If ``times`` are not finite and non-negative.

    See Also
    --------
    coxinfluence.fit_fine_gray : The Fine-Gray model.
    Survival : ``S(t|x)`` of the other families.

    Notes
    -----
    Fine & Gray (1999), Eq. (3); R's ``cmprsk::predict.crr``. Past the last failure time
    of the cause (in the patient's stratum) ``F(t|x)`` is the last plateau carried
    forward (:class:`~coxinfluence.targets.TargetBeyondFollowUpWarning`).

    Examples
    --------
    Simulated competing risks (status 0 censored, 1 and 2 the causes):

    >>> rng = np.random.default_rng(1)
    >>> n = 200
    >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2),
    ...                   "treated": rng.integers(0, 2, n)})
    >>> time = rng.exponential(1.0, n).round(3)
    >>> status = rng.choice([0, 1, 2], size=n, p=[0.3, 0.4, 0.3])
    >>> fg = ci.fit_fine_gray(X, time, status, cause=1)
    >>> target = ci.targets.CumulativeIncidence(X.iloc[:2], times=[0.5, 1.0])
    >>> target.columns(fg)
    ['F(0.5|0)', 'F(1|0)', 'F(0.5|1)', 'F(1|1)']
    >>> np.round(target.value(fg, fg.coef[None, :]), 4)
    array([[0.2157, 0.295 , 0.1763, 0.2434]])
    >>> res = ci.influence(fg, target=target, method="vif")
    >>> res.loo_change.head(3).round(4)
       F(0.5|0)  F(1|0)  F(0.5|1)  F(1|1)
    0    0.0000  0.0002    0.0017  0.0025
    1    0.0006  0.0009    0.0021  0.0030
    2    0.0003  0.0006    0.0016  0.0023
    """

    name = "cumulative_incidence"
    quantity = "cumulative_incidence"
    ask = "ci.targets.CumulativeIncidence(X_new, times)"
    options = ("strata",)
    fit_type = FineGrayFit

    def __init__(self, X_new, times, strata=None):
        self.X_new = X_new
        self.times = nonnegative_times(times)
        self.strata = strata

    def _X(self, fit):
        X, index = fine_gray_new_patients(fit, self.X_new, self.transform)
        return X, [str(v) for v in index]

    def columns(self, fit):
        """``"F(t|label)"`` for each (patient, time), patient outer, time inner.

        Parameters
        ----------
        fit : FineGrayFit
            The Fine-Gray fit.

        Returns
        -------
        list of str
            ``P T`` column names.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2),
        ...                   "treated": rng.integers(0, 2, n)})
        >>> time = rng.exponential(1.0, n).round(3)
        >>> status = rng.choice([0, 1, 2], size=n, p=[0.3, 0.4, 0.3])
        >>> fg = ci.fit_fine_gray(X, time, status, cause=1)
        >>> target = ci.targets.CumulativeIncidence(X.iloc[:2], times=[0.5, 1.0])
        >>> target.columns(fg)
        ['F(0.5|0)', 'F(1|0)', 'F(0.5|1)', 'F(1|1)']
        """
        return [f"F({t:g}|{lab})" for lab in self._X(fit)[1] for t in self.times]

    def _codes(self, fit):
        """(P,) each patient's stratum code."""
        return fine_gray_strata(fit, self.strata, self._X(fit)[0].shape[0])

    def _mask(self, fit):
        """(P, T, K) ``t_k <= t`` for the failure times of the cause in each patient's
        stratum."""
        return fine_gray_mask(fit, self._codes(fit), self.times)

    def followup_notes(self, fit):
        """Notes on times past the last failure time of the cause in a patient's stratum.

        ``F(t|x)`` is the last plateau there (module docstring). The rule of the
        predictions (``coxinfluence.models.predictions.follow_up_notes``).

        Parameters
        ----------
        fit : FineGrayFit
            The Fine-Gray fit.

        Returns
        -------
        tuple of str
            One sentence per stratum with times past the cause's last failure time there.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2),
        ...                   "treated": rng.integers(0, 2, n)})
        >>> time = rng.exponential(1.0, n).round(3)
        >>> status = rng.choice([0, 1, 2], size=n, p=[0.3, 0.4, 0.3])
        >>> fg = ci.fit_fine_gray(X, time, status, cause=1)
        >>> target = ci.targets.CumulativeIncidence(X.iloc[:2], times=[0.5, 1.0])
        >>> target.followup_notes(fg)
        ()
        >>> late = ci.targets.CumulativeIncidence(X.iloc[:1], times=[6.0])
        >>> late.followup_notes(fg)[0].split(":")[0]
        'F(t|x) at time 6'
        """
        return follow_up_notes(fit, self.times, self._codes(fit), self._X(fit)[1], "F(t|x)")

    def _parts(self, fit, theta, presence):
        """``lin`` (B, P), ``cum`` (B, P, T), the jumps and risk-set means
        (:func:`coxinfluence.models.predictions.fine_gray_parts`)."""
        return fine_gray_parts(fit, theta, self._X(fit)[0], self._mask(fit), presence)

    def _cif(self, fit, theta, presence):
        return cumulative_incidence(*self._parts(fit, theta, presence)[:2])

    def value(self, fit, theta):
        """``F(t|x; theta, D)`` on the full data, for each row of ``theta``.

        Parameters
        ----------
        fit : FineGrayFit
            The Fine-Gray fit.
        theta : array_like, shape (B, d)
            Coefficient vectors (the baseline ``Lambda_10`` is re-estimated at each).

        Returns
        -------
        numpy.ndarray, shape (B, P T)
            In the order of :meth:`columns`.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2),
        ...                   "treated": rng.integers(0, 2, n)})
        >>> time = rng.exponential(1.0, n).round(3)
        >>> status = rng.choice([0, 1, 2], size=n, p=[0.3, 0.4, 0.3])
        >>> fg = ci.fit_fine_gray(X, time, status, cause=1)
        >>> target = ci.targets.CumulativeIncidence(X.iloc[:2], times=[0.5, 1.0])
        >>> np.round(target.value(fg, fg.coef[None, :]), 4)
        array([[0.2157, 0.295 , 0.1763, 0.2434]])
        """
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        return self._cif(fit, theta, np.ones((theta.shape[0], fit.data.n)))

    def jacobian(self, fit):
        """``dF/dtheta = (1 - F) exp(x'theta) sum_{t_k <= t} (d_k / S0_k) (x - xbar_k)``.

        At ``fit.coef``, with the baseline's own dependence on ``theta`` included
        (module docstring).

        Parameters
        ----------
        fit : FineGrayFit
            The Fine-Gray fit.

        Returns
        -------
        numpy.ndarray, shape (P T, d)
            One row per column of the target.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2),
        ...                   "treated": rng.integers(0, 2, n)})
        >>> time = rng.exponential(1.0, n).round(3)
        >>> status = rng.choice([0, 1, 2], size=n, p=[0.3, 0.4, 0.3])
        >>> fg = ci.fit_fine_gray(X, time, status, cause=1)
        >>> target = ci.targets.CumulativeIncidence(X.iloc[:2], times=[0.5, 1.0])
        >>> target.jacobian(fg).shape
        (4, 2)
        """
        lin, cum, jumps, xbar = self._parts(fit, fit.coef[None, :], np.ones((1, fit.data.n)))
        survive = 1.0 - cumulative_incidence(lin, cum)[0].reshape(lin.shape[1], -1)   # (P, T)
        w = self._mask(fit) * jumps[0]                                   # (P, T, K)
        xc = self._X(fit)[0] - fit.data.X_center                         # (P, d)
        # sum_{t_k <= t} (d_k / S0_k) (x - xbar_k), on the shifted scale: (P, T, d)
        inner = w.sum(axis=2)[:, :, None] * xc[:, None, :] - w @ xbar[0]
        dH = np.exp(lin[0])[:, None, None] * inner
        return (survive[:, :, None] * dH).reshape(-1, fit.data.d)

    def data_effect(self, fit, units=None):
        """The exact change of ``F`` by deleting each subject at the fitted coefficients.

        ``F(t|x; theta_hat, D_{-i}) - F(t|x; theta_hat, D)`` per subject: the baseline
        without subject i, its censoring group's Kaplan-Meier re-estimated (module
        docstring), in closed form
        (``coxinfluence.likelihood.fine_gray_deletion.deleted_baseline_jumps``), on
        the full data's scale (the same ``lin``).

        Parameters
        ----------
        fit : FineGrayFit
            The Fine-Gray fit.
        units : None
            Must be None: a Fine-Gray fit's units are its subjects.

        Returns
        -------
        numpy.ndarray, shape (n, m)
            One row per subject, in the caller's order.

        Raises
        ------
        ValueError
            If ``units`` is given.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2),
        ...                   "treated": rng.integers(0, 2, n)})
        >>> time = rng.exponential(1.0, n).round(3)
        >>> status = rng.choice([0, 1, 2], size=n, p=[0.3, 0.4, 0.3])
        >>> fg = ci.fit_fine_gray(X, time, status, cause=1)
        >>> target = ci.targets.CumulativeIncidence(X.iloc[:2], times=[0.5, 1.0])
        >>> target.data_effect(fg).shape
        (200, 4)
        """
        _no_units(units)
        data = fit.data
        lin, cum, _, _ = self._parts(fit, fit.coef[None, :], np.ones((1, data.n)))
        full = cumulative_incidence(lin, cum)[0]
        mask = self._mask(fit)                                           # (P, T, K)
        state = DeletionState(data, fit.coef, hessian=False)
        out = np.empty((data.n, full.size))
        step = max(1, _BLOCK_FLOATS // max(data.fail.size, full.size * data.fail.size, 1))
        for start in range(0, data.n, step):
            rows = np.arange(start, min(start + step, data.n))
            cum_del = np.einsum("mk,ptk->mpt", deleted_baseline_jumps(state, rows), mask)
            lin_del = np.broadcast_to(lin, (rows.size, lin.shape[1]))
            out[rows] = cumulative_incidence(lin_del, cum_del) - full
        return data.to_caller_order(out)

    def refit_values(self, fit, theta_loo, units=None):
        """``F(t|x; theta_{-i}, D_{-i})`` at each subject's refitted coefficients.

        The baseline and the censoring Kaplan-Meier are recomputed without subject i, by
        literal deletion (in batches).

        Parameters
        ----------
        fit : FineGrayFit
            The Fine-Gray fit.
        theta_loo : array_like, shape (n, d)
            Each subject's refitted coefficients (caller's order).
        units : None
            Must be None: a Fine-Gray fit's units are its subjects.

        Returns
        -------
        numpy.ndarray, shape (n, m)
            One row per subject; NaN where ``theta_loo`` is (those subjects are not
            evaluated).

        Raises
        ------
        ValueError
            If ``units`` is given.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2),
        ...                   "treated": rng.integers(0, 2, n)})
        >>> time = rng.exponential(1.0, n).round(3)
        >>> status = rng.choice([0, 1, 2], size=n, p=[0.3, 0.4, 0.3])
        >>> fg = ci.fit_fine_gray(X, time, status, cause=1)
        >>> target = ci.targets.CumulativeIncidence(X.iloc[:2], times=[0.5, 1.0])
        >>> target.refit_values(fg, ci.exact_loo(fg).to_numpy()).shape
        (200, 4)
        """
        _no_units(units)
        data = fit.data
        theta = np.asarray(theta_loo, dtype=np.float64)
        ok = np.flatnonzero(np.isfinite(theta).all(axis=1))
        sorted_row = np.argsort(data.order)                             # caller -> sorted
        out = np.full((data.n, len(self.columns(fit))), np.nan)
        for start in range(0, ok.size, _BATCH):
            codes = ok[start:start + _BATCH]
            P = np.ones((codes.size, data.n))
            P[np.arange(codes.size), sorted_row[codes]] = 0.0
            out[codes] = self._cif(fit, theta[codes], P)
        return out


def _no_units(units):
    if units is not None:
        raise ValueError("a Fine-Gray fit's units are its subjects; units= is not supported")

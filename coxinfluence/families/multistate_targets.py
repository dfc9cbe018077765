"""The multi-state family's registration and its target, the state probabilities
(issue 47, item 3).

``p_s(t | x; theta, D)``, the probability that a new patient ``x`` is in state ``s`` at
time ``t`` (:func:`coxinfluence.models.multistate.state_probabilities`, R's
``survfit(fit, newdata)$pstate``), depends on the data directly through every
transition's baseline hazard and, when subjects start in different states (``istate=``),
through the initial distribution ``p0`` (the weighted share of each state at the first
transition time), so deleting subject g changes it through ``theta`` (the
chain rule, ``J (theta_{-g} - theta_hat)``) and directly (the data effect, exact: the
baselines and ``p0`` re-estimated at ``theta_hat`` without the subject's rows). The exact change
recomputes both at the refitted coefficients. The Jacobian is taken by central
differences (a four-point stencil; the probabilities are smooth in ``theta``).

The family registers here with its target (``register_family`` and ``register_target``,
the tables :func:`coxinfluence.registration.register` forwards to; that module sits
above the layers, so a family module cannot import it): its seam is
:class:`~coxinfluence.influence_functions.multistate_audit.MultiStateAudit`.
"""
from __future__ import annotations

import numpy as np

from coxinfluence.audit.target_base import Target, register_target
from coxinfluence.influence_functions.multistate_audit import build
from coxinfluence.influence_functions.registry import Family, register_family
from coxinfluence.models.multistate import (
    MultiStateFit,
    state_probabilities,
    state_probability_notes,
)

__all__ = ["StateProbability"]

#: problems per batch of the data effect and the refitted values
_BATCH = 256
_STENCIL = np.array([-2.0, -1.0, 1.0, 2.0])
_WEIGHTS = np.array([1.0, -8.0, 8.0, -1.0]) / 12.0


class StateProbability(Target):
    r"""The probability of being in a state at given times, under a multi-state fit.

    :math:`p_s(t \mid x) = \big[p_0 \prod_{u \le t} (I + dA(u \mid x))\big]_s` (the
    Aalen-Johansen product integral, :math:`dA` the transitions' Cox hazard increments)
    for new patients :math:`x` under a :class:`~coxinfluence.MultiStateFit`
    (R's ``survfit(fit, newdata)$pstate`` at ``times``; a patient starts from the data's
    initial distribution in its stratum, R's ``p0``: the initial state when every subject
    starts there). One column per (patient, time, state), ``"P(state,t|label)"``,
    patient outer, then time, then state.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row (the fit's covariate columns, or an array in their
        order).
    times : float or array_like
        The times ``t`` (non-negative).
    state : str or sequence of str, optional
        The state(s) (names as ``fit.states``); default every state.
    strata : optional
        A stratified fit: the patients' strata (one label for all, or one per patient);
        default read from ``X_new``'s stratum column(s).

    Raises
    ------
    ValueError
        If ``times`` are negative or not finite.

    See Also
    --------
    coxinfluence.fit_multistate : The model.

    Examples
    --------
    >>> from coxinfluence.models.multistate import simulate_illness_death
    >>> fit = ci.fit_multistate(*simulate_illness_death(n_subjects=60))
    >>> target = ci.targets.StateProbability([[0.0, 1.0]], times=[5, 10], state="1")
    >>> target.columns(fit)
    ['P(1,5|0)', 'P(1,10|0)']
    >>> res = ci.influence(fit, target=target, method="vif")
    >>> res.loo_change.shape
    (60, 2)
    """

    name = "state_probability"
    quantity = "state_probability"
    ask = "ci.targets.StateProbability(X_new, times, state=None, strata=None)"
    options = ("state", "strata")
    fit_type = MultiStateFit

    def __init__(self, X_new, times, state=None, strata=None):
        self.X_new, self.strata = X_new, strata
        self.times = np.atleast_1d(np.asarray(times, dtype=np.float64))
        if not (np.isfinite(self.times).all() and (self.times >= 0).all()):
            raise ValueError("times must be finite and non-negative")
        self.state = state

    def _states(self, fit):
        if self.state is None:
            return list(range(len(fit.states)))
        wanted = [self.state] if isinstance(self.state, str) else list(self.state)
        missing = [s for s in wanted if str(s) not in fit.states]
        if missing:
            raise ValueError(f"unknown state(s) {missing}; the fit's states: {fit.states}")
        return [fit.states.index(str(s)) for s in wanted]

    def followup_notes(self, fit):
        """Times past the data's last transition (the probabilities are flat after it):
        ``influence()`` warns with each.

        Parameters
        ----------
        fit : MultiStateFit
            The fit.

        Returns
        -------
        tuple of str
            One sentence when some times are past it; empty if none.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death(n_subjects=60))
        >>> ci.targets.StateProbability([[0.0, 1.0]], times=[5]).followup_notes(fit)
        ()
        """
        return state_probability_notes(fit, self.times, fit.new_patients(self.X_new)[1],
                                       fit.new_strata(self.X_new, self.strata))

    def columns(self, fit):
        """``"P(state,t|label)"`` per (patient, time, state).

        Parameters
        ----------
        fit : MultiStateFit
            The fit.

        Returns
        -------
        list of str
            The target's column names.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death(n_subjects=60))
        >>> target = ci.targets.StateProbability([[0.0, 1.0]], times=[5, 10], state="1")
        >>> target.columns(fit)
        ['P(1,5|0)', 'P(1,10|0)']
        >>> ci.targets.StateProbability([[0.0, 1.0]], times=[5]).columns(fit)
        ['P((s0),5|0)', 'P(1,5|0)', 'P(2,5|0)']
        """
        labels = fit.new_patients(self.X_new)[1]
        names = [fit.states[s] for s in self._states(fit)]
        return [f"P({s},{t:g}|{lab})" for lab in labels for t in self.times for s in names]

    def _values(self, fit, theta, drop=None):
        X = fit.new_patients(self.X_new)[0]
        codes = fit.new_strata(self.X_new, self.strata)
        p = state_probabilities(fit, theta, X, self.times, drop, codes)[..., self._states(fit)]
        return p.reshape(p.shape[0], -1)

    def value(self, fit, theta):
        """``p_s(t|x; theta, D)`` on the full data, for each row of ``theta``.

        Parameters
        ----------
        fit : MultiStateFit
            The fit.
        theta : array_like, shape (B, d)
            Coefficients (every baseline re-estimated at each).

        Returns
        -------
        numpy.ndarray, shape (B, m)
            In the order of :meth:`columns`.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death(n_subjects=60))
        >>> target = ci.targets.StateProbability([[0.0, 1.0]], times=[5, 10], state="1")
        >>> np.round(target.value(fit, fit.coef[None, :]), 4)
        array([[0.1643, 0.1654]])
        """
        return self._values(fit, np.atleast_2d(np.asarray(theta, dtype=np.float64)))

    def jacobian(self, fit):
        """``dp/dtheta`` at ``fit.coef`` (baselines included), by central differences.

        Parameters
        ----------
        fit : MultiStateFit
            The fit.

        Returns
        -------
        numpy.ndarray, shape (m, d)
            One row per column of the target.

        Examples
        --------
        P(ill, t) does not depend on the ill -> dead coefficients before the first
        ill -> dead transition:

        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death(n_subjects=60))
        >>> target = ci.targets.StateProbability([[0.0, 1.0]], times=[5, 10], state="1")
        >>> np.round(target.jacobian(fit), 3)
        array([[-0.052,  0.059, -0.018, -0.025,  0.   ,  0.   ],
               [-0.016,  0.055, -0.021, -0.028,  0.064, -0.021]])
        """
        coef = np.asarray(fit.coef, dtype=np.float64)
        h = 1e-4 * np.sqrt(np.diag(fit.var))
        d = coef.size
        steps = np.repeat(coef[None, :], 4 * d, axis=0)
        for j in range(d):
            steps[4 * j:4 * j + 4, j] += _STENCIL * h[j]
        values = self.value(fit, steps).reshape(d, 4, -1)
        return (np.einsum("s,jsm->jm", _WEIGHTS, values) / h[:, None]).T

    def data_effect(self, fit, units=None):
        """The exact change of ``p`` by deleting each subject at the fitted coefficients.

        ``p(t|x; theta_hat, D_{-g}) - p(t|x; theta_hat, D)``: every transition's baseline
        (and the initial distribution ``p0``) without subject g's rows.

        Parameters
        ----------
        fit : MultiStateFit
            The fit.
        units : None
            Ignored: the units are the subjects.

        Returns
        -------
        numpy.ndarray, shape (U, m)
            One row per subject (sorted labels).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death(n_subjects=60))
        >>> target = ci.targets.StateProbability([[0.0, 1.0]], times=[5, 10], state="1")
        >>> effect = target.data_effect(fit)
        >>> effect.shape
        (60, 2)
        >>> round(float(np.abs(effect).max()), 4)
        0.0215
        """
        coef = np.asarray(fit.coef, dtype=np.float64)[None, :]
        full = self.value(fit, coef)
        U = fit.n_units
        out = np.empty((U, full.shape[1]))
        for start in range(0, U, _BATCH):
            codes = np.arange(start, min(start + _BATCH, U))
            out[codes] = self._values(fit, np.repeat(coef, codes.size, axis=0), codes) - full
        return out

    def refit_values(self, fit, theta_loo, units=None):
        """``p(t|x; theta_{-g}, D_{-g})`` at each subject's refitted coefficients.

        Parameters
        ----------
        fit : MultiStateFit
            The fit.
        theta_loo : array_like, shape (U, d)
            Each subject's refitted coefficients (rows of NaN: not evaluated).
        units : None
            Ignored: the units are the subjects.

        Returns
        -------
        numpy.ndarray, shape (U, m)
            NaN where ``theta_loo`` is.

        Examples
        --------
        At the fitted coefficients it is the value without each subject's rows, the data
        effect:

        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death(n_subjects=60))
        >>> target = ci.targets.StateProbability([[0.0, 1.0]], times=[5, 10], state="1")
        >>> theta = np.repeat(fit.coef[None, :], fit.n_units, axis=0)
        >>> full = target.value(fit, fit.coef[None, :])
        >>> bool(np.allclose(target.refit_values(fit, theta) - full, target.data_effect(fit)))
        True
        """
        theta = np.asarray(theta_loo, dtype=np.float64)
        ok = np.flatnonzero(np.isfinite(theta).all(axis=1))
        out = np.full((theta.shape[0], len(self.columns(fit))), np.nan)
        for start in range(0, ok.size, _BATCH):
            codes = ok[start:start + _BATCH]
            out[codes] = self._values(fit, theta[codes], codes)
        return out


FAMILY = Family("multistate", MultiStateFit, build,
                description="a MultiStateFit (ci.fit_multistate)")
register_family(FAMILY)
register_target(StateProbability)

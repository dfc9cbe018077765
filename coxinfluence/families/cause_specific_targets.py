"""The absolute risk of a cause under cause-specific Cox models: ``ci.targets.AbsoluteRisk``.

``F_k(t | x)`` (:func:`coxinfluence.models.cause_specific.absolute_risk`, R's
``predict(CSC, newdata, times, cause)``) depends on every cause's coefficients and on
every cause's baseline hazard. With ``Q_j(u) = exp(x'theta_j) dLambda_0j(u)`` the
patient's hazard jump of cause ``j`` at a jump time ``u``, ``h(u) = sum_j Q_j(u)`` and
``F(t)`` the absolute risk::

    dF(t) / dQ_j(u) = 1{u <= t} [1{j = k} S(u-) - (F(t) - F(u)) / (1 - h(u))]

(the product limit; ``exp(-sum_j Lambda_j)``: without the ``1 / (1 - h(u))``), and each
jump's derivatives are those of the Cox baseline (``m_k / den_k`` per Efron term, R's
``survfit`` with the fit's ties, :mod:`coxinfluence.likelihood.baseline_hazard`):

    dQ / dtheta_j = Q (x - a_k),
    d(m_k / den_k) / dw_i = 1{i in D_g} / (d_g den_k)
                            - (m_k / den_k^2) e_i (1{i in R_g} - c_k 1{i in D_g}),

``a_k`` the term's risk-set mean, ``e_i`` row i's relative risk, ``R_g``, ``D_g``, ``d_g``
the risk set, the events and their number of the term's tie group, ``c_k`` its Efron
fraction. The first gives :meth:`AbsoluteRisk.jacobian`; the second, summed over a
unit's rows times minus their case weights, the baseline's first-order change
(:meth:`AbsoluteRisk.baseline_influence`): with the coefficients' Reid change it is
``-IF/n``, minus riskRegression's ``absRisk.iid``. :meth:`AbsoluteRisk.data_effect` is
the literal deletion at ``theta_hat`` (every target's convention) and
:meth:`AbsoluteRisk.refit_values` the refitted model without the unit.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from coxinfluence.audit.target_base import Target, register_target
from coxinfluence.data.new_patients import nonnegative_times
from coxinfluence.data.units import row_units
from coxinfluence.likelihood.baseline_hazard import baseline_ctype, baseline_terms
from coxinfluence.models.cause_specific import (
    CauseSpecificFit,
    absolute_risk,
    cause_parts,
)

__all__ = ["AbsoluteRisk", "cause_units"]


def cause_units(fit, units=None):
    """Each cause's units (a ``coxinfluence.data.units.Units`` per model): ``units``
    when it holds them (``units.per_cause``), else each model's rows."""
    if units is None:
        return [row_units(m.data) for m in fit.models]
    return list(units.per_cause)


def _baseline_parts(model, theta):
    """Per Efron term of ``model`` at ``theta``: increments ``m/den`` (K,), the shift,
    term means on the caller's scale (K, d), the denominators, the fractions, the mean
    weights, and the shifted scores ``e`` (n,) of the sorted rows."""
    rs = model.risk_sets
    terms = baseline_terms(model, None, baseline_ctype(model))
    _, r, shift, den = rs.risk(np.atleast_2d(theta), terms)
    m = np.broadcast_to(terms.mean_weight, den.shape)[0]
    inc = m / den[0]
    frac = np.broadcast_to(terms.frac, den.shape)[0]
    a = rs.term_means(r, den, terms.frac)[0] + model.data.X_center
    e = r[0] / model.data.weights
    return inc, shift[0, 0] + theta @ model.data.X_center, a, den[0], frac, m, e


@register_target
class AbsoluteRisk(Target):
    """The absolute risk ``F_k(t | x)`` of cause ``k`` for new patients at ``times``.

    Under cause-specific Cox models (:func:`~coxinfluence.fit_cause_specific`), through
    every cause's coefficients and baseline hazard (module docstring): the value of
    ``CauseSpecificFit.predict_absolute_risk``, one column per (patient, time).

    Parameters
    ----------
    X_new : pandas.DataFrame or array_like
        The new patients (every cause's covariates).
    times : float or array_like
        Times.
    cause : int, default 1
        The cause ``k``.
    product_limit : bool, default True
        The event-free survival by the product limit (R's default), else
        ``exp(-sum_j Lambda_j)``.
    strata : optional
        Stratum labels of a stratified fit (default: ``X_new``'s stratum columns).

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> n = 300
    >>> X = pd.DataFrame({"age": rng.normal(60, 8, n), "treated": rng.integers(0, 2, n)})
    >>> t1 = rng.exponential(np.exp(-0.03 * (X["age"] - 60) + 0.5 * X["treated"]))
    >>> t2 = rng.exponential(2.0, n)
    >>> censor = rng.exponential(3.0, n)
    >>> time = np.round(np.minimum(np.minimum(t1, t2), censor), 2)
    >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
    >>> fit = ci.fit_cause_specific(X, time, status)
    >>> target = ci.targets.AbsoluteRisk(X.head(1), [0.5, 1.0], cause=1)
    >>> target.columns(fit)
    ['F1(0.5|0)', 'F1(1|0)']
    >>> np.round(target.value(fit, fit.coef[None, :]), 3)
    array([[0.497, 0.685]])
    """

    name = "absolute_risk"
    quantity = "absolute_risk"
    options = ("cause", "product_limit", "strata")
    ask = "ci.targets.AbsoluteRisk(X_new, times, cause=1)"
    fit_type = CauseSpecificFit

    def __init__(self, X_new, times, cause=1, product_limit=True, strata=None):
        self.X_new, self.cause = X_new, cause
        self.product_limit, self.strata = bool(product_limit), strata
        self.times = nonnegative_times(times)

    def _parts(self, fit):
        if self.cause not in fit.causes:
            raise ValueError(f"cause must be one of {fit.causes}; got {self.cause!r}")
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
        return [f"F{self.cause}({t:g}|{lab})" for lab in labels for t in self.times]

    def _risk(self, fit, theta, deleted=None):
        parts = self._parts(fit)[0]
        thetas = self._split(fit, theta)
        F = absolute_risk(fit, thetas, parts, self.times, self.cause, self.product_limit,
                          deleted)
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
    def _jump_derivatives(self, fit):
        """Per cause: dF/d(m_k/den_k) (P, T, K) of every term, and the term pieces."""
        parts = self._parts(fit)[0]
        grid_times = np.unique(np.concatenate(
            [m.data.time[m.data.event_rows] for m in fit.models]))
        pieces, Q = [], []
        for model, (X, codes) in zip(fit.models, parts):
            inc, shift, a, den, frac, m, e = _baseline_parts(model, model.coef)
            ev = model.data.event_rows
            E = np.exp(X @ model.coef - shift)                                  # (P,)
            same = model.data.strata[ev][None, :] == codes[:, None]             # (P, K)
            at = np.searchsorted(grid_times, model.data.time[ev])               # (K,)
            q = np.zeros((X.shape[0], grid_times.size))
            for p in range(X.shape[0]):
                np.add.at(q[p], at[same[p]], E[p] * inc[same[p]])
            Q.append(q)
            pieces.append(SimpleNamespace(X=X, E=E, same=same, at=at, inc=inc, a=a, den=den,
                                          frac=frac, m=m, e=e))
        h = np.sum(Q, axis=0)                                                   # (P, G)
        if self.product_limit:
            S = np.cumprod(1.0 - h, axis=1)
        else:
            S = np.exp(-np.cumsum(h, axis=1))
        S_before = np.concatenate([np.ones_like(S[:, :1]), S[:, :-1]], axis=1)
        F = np.cumsum(S_before * Q[fit.causes.index(self.cause)], axis=1)       # (P, G)
        upto = grid_times[None, :] <= self.times[:, None]                       # (T, G)
        at_t = np.searchsorted(grid_times, self.times, side="right") - 1
        F_t = np.where(at_t[None, :] >= 0, F[:, np.maximum(at_t, 0)], 0.0)      # (P, T)
        scale = (1.0 / np.where(h < 1.0, 1.0 - h, np.inf) if self.product_limit
                 else np.ones_like(h))
        out = []
        for j, piece in enumerate(pieces):
            direct = S_before[:, None, :] if fit.causes[j] == self.cause else 0.0
            dQ = upto[None] * (direct - (F_t[:, :, None] - F[:, None, :])
                               * scale[:, None, :])                            # (P, T, G)
            dinc = dQ[:, :, piece.at] * (piece.E[:, None] * piece.same)[:, None, :]
            out.append((dinc, piece))                                           # (P, T, K)
        return out

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
        blocks = []
        for dinc, piece in self._jump_derivatives(fit):
            # d(E m/den)/dtheta = E (m/den) (x - a_k)
            xa = piece.X[:, None, :] - piece.a[None, :, :]                      # (P, K, d)
            J = np.einsum("ptk,pkd->ptd", dinc * piece.inc[None, None, :], xa)
            blocks.append(J.reshape(-1, piece.X.shape[1]))
        return np.hstack(blocks)

    def baseline_influence(self, fit, units=None):
        """(U, m) the baselines' first-order change by deleting each unit at ``theta_hat``.

        ``-sum_{i in g} w_i dF/dw_i`` (module docstring): the infinitesimal counterpart of
        :meth:`data_effect`. With ``J`` times the coefficients' Reid change it is Reid's
        change of ``F`` (minus riskRegression's ``absRisk.iid``).

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
        total = None
        for model, unit, (dinc, piece) in zip(fit.models, cause_units(fit, units),
                                              self._jump_derivatives(fit)):
            den, frac, m, e = piece.den, piece.frac, piece.m, piece.e
            data = model.data
            ev, tg = data.event_rows, data.term_group
            P, T, K = dinc.shape
            G = dinc.reshape(P * T, K)
            n_events = data.group_n_events[tg]                                 # (K,)
            # the events' own part: 1{i in D_g} / (d_g den_k) + (m/den^2) e_i c_k
            group_of_row = np.full(data.n, -1)
            group_of_row[ev] = tg
            own = np.zeros((data.n, P * T))
            for g in np.unique(tg):
                in_g = tg == g
                rows = ev[in_g]
                coef = (G[:, in_g] @ (1.0 / (n_events[in_g] * den[in_g])))     # (PT,)
                corr = G[:, in_g] @ (m[in_g] / den[in_g] ** 2 * frac[in_g])      # (PT,)
                own[rows] = coef[None, :] + e[rows, None] * corr[None, :]
            # the risk sets' part: -(m/den^2) e_i 1{i in R_g}
            start = np.full(data.n, -np.inf) if data.start is None else data.start
            t_k, s_k = data.time[ev], data.strata[ev]
            B = G * (m / den ** 2)[None, :]                                      # (PT, K)
            risk = np.zeros((data.n, P * T))
            for lo in range(0, data.n, 2048):
                rows = np.arange(lo, min(lo + 2048, data.n))
                R = ((data.time[rows, None] >= t_k[None, :])
                     & (start[rows, None] < t_k[None, :])
                     & (data.strata[rows, None] == s_k[None, :]))
                risk[rows] = (R * e[rows, None]) @ B.T
            dw = own - risk                                                     # (n, PT)
            change = unit.collapse(-data.weights[:, None] * dw)
            total = change if total is None else total + change
        return total

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

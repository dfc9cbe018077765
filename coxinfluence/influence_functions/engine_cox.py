"""The Cox model's derivatives for the influence engine
(:class:`~coxinfluence.influence_functions.engine.Engine`): the risk-set kernels as the
fast paths of its refits.

:class:`CoxEngine` holds a fit and its units (rows, subjects or clusters) and gives the
engine the deleted problems' gradients at ``theta_hat`` (from the VIF,
``grad L_{-g} = grad L + H VIF_n(g)/U``), their Hessians (the information split when the
flags made it, else exact, :mod:`~coxinfluence.influence_functions.deleted_hessians`),
the third derivative, and :class:`CoxKernel`, the refits' batched gradients
(:class:`~coxinfluence.likelihood.deletion_gradients.DeletionGradients`) and Newton
objective. A ridge-penalised fit (``fit.penalty``, units its rows) adds the penalty
``0.5 sum_j s_{-g,j} theta_j^2`` of each deleted problem
(:mod:`coxinfluence.models.penalized_cox`) to all of them.
:class:`~coxinfluence.influence_functions.cox_audit.CoxAudit` is it with the audit's
closed forms (VIF series, Reid's IF, screened flags); ``ci.vif``, ``ci.newton_loo`` and
``ci.exact_loo`` reach it through the seam as every family's fits do
(:mod:`~coxinfluence.influence_functions.any_fit`).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from coxinfluence.data.deletion import Deletion
from coxinfluence.data.inputs import CoxInputError
from coxinfluence.data.rank import check_design, identifiable_columns
from coxinfluence.influence_functions import vif as _vif
from coxinfluence.influence_functions.deleted_hessians import by_deletion, deleted_hessians
from coxinfluence.influence_functions.engine import Engine
from coxinfluence.influence_functions.engine_refits import DeletionKernel
from coxinfluence.influence_functions.information_split import InformationSplit
from coxinfluence.influence_functions.seam import FitSeam
from coxinfluence.likelihood import third_derivative as _third
from coxinfluence.likelihood.deletion_gradients import DeletionGradients
from coxinfluence.likelihood.objective import cox_objective, gradient_tolerance
from coxinfluence.likelihood.risk_sets import RiskSets
from coxinfluence.models.cox import check_fit
from coxinfluence.numerics.newton import newton, solve_batch

__all__ = ["CoxEngine", "CoxKernel"]


class CoxKernel(DeletionKernel):
    """The Cox refit kernel of the engine: the risk-set kernels ``risk_sets`` (the sorted
    data) without each unit's rows (``of_row``: the unit code of each sorted row). The
    gradients (:class:`~coxinfluence.likelihood.deletion_gradients.DeletionGradients`,
    one instance per chunk of refits, its work arrays set up once) run their products as
    one-thread BLAS calls and Newton-Raphson's objective
    (:func:`~coxinfluence.likelihood.objective.cox_objective`) with ``blas=False``, so the
    bits do not depend on where a chunk runs. ``ridge`` (U, d): a ridge penalty's
    strengths ``s_{-g}`` of the problems without each unit (None: no penalty)."""

    shared_names = ("risk_sets", "of_row")

    def __init__(self, risk_sets, of_row, coef, ridge=None):
        self.risk_sets, self.of_row, self.coef, self.ridge = risk_sets, of_row, coef, ridge

    def objective(self, codes):
        return cox_objective(self.risk_sets, Deletion.of_units(self.of_row, codes),
                             ridge=None if self.ridge is None else self.ridge[codes],
                             blas=False)

    def gradients(self, codes):
        cache = self.__dict__.setdefault("_cache", {})
        if "gradients" not in cache:
            cache["gradients"] = DeletionGradients(self.risk_sets, reference=self.coef)
        gradients = cache["gradients"]
        batch = gradients.batch(self.of_row, codes)
        m = len(codes)
        if self.ridge is None:
            return lambda theta, live: gradients(theta, batch if live.size == m
                                                 else batch.take(live))
        s = self.ridge[codes]
        return lambda theta, live: (gradients(theta, batch if live.size == m
                                              else batch.take(live)) + s[live] * theta)


def _refit_reduced(data, coef, keep, tol, max_iter):
    """Refit on the sorted rows ``keep`` (bool), dropping columns that become
    unidentifiable.

    Returns a (d,) vector with NaN for dropped columns, or all NaN when even the reduced
    model cannot be fitted.
    """
    sub = data.subset(keep)
    out = np.full(data.d, np.nan)
    if sub.event.sum() == 0:
        return out
    cols = np.arange(data.d)
    while True:
        reduced = sub.with_rows_and_columns(np.ones(sub.n, dtype=bool), cols)
        try:
            check_design(reduced)
            break
        except CoxInputError:
            ok_cols = identifiable_columns(reduced)
            if ok_cols.size == cols.size or ok_cols.size == 0:
                return out
            cols = cols[ok_cols]
    res = newton(cox_objective(RiskSets(reduced)), coef[cols][None, :], tol=tol,
                 max_iter=max_iter)
    if res.converged[0]:
        out[cols] = res.theta[0]
    return out


class CoxEngine(FitSeam, Engine):
    """A :class:`~coxinfluence.CoxFit` and its units (a
    :class:`coxinfluence.data.units.Units`) as the engine refits them (module
    docstring). ``algorithm``: the closed forms' algorithm, "auto", "series" or "direct"
    (:func:`~coxinfluence.influence_functions.vif.gradient_differences`,
    :func:`~coxinfluence.influence_functions.deleted_hessians.deleted_hessians`)."""

    def __init__(self, fit, units, algorithm="auto"):
        self.fit, self.units, self.algorithm = fit, units, algorithm

    @property
    def unit_labels(self):
        return self.units.labels

    @property
    def units_are_rows(self):
        return bool(self.units.is_rows)

    def change(self, method):
        """The VIF change ``-VIF_n(g)/U`` (the refits' fallback start); with a ridge, plus
        the penalty's own change ``H^{-1} theta_hat (s - s_{-g})``."""
        if method != "vif":
            raise ValueError(f"unknown method {method!r}")
        change = -self.vif / self.units.n_units
        if self.fit.penalty is not None:
            change = change + np.linalg.solve(self.fit.information, self._ridge_change.T).T
        return change

    @cached_property
    def ridge(self):
        """(U, d) the ridge strengths ``s_{-g}`` of the problems without each unit
        (:mod:`coxinfluence.models.penalized_cox`), or None without a penalty. Every
        quantity of a deletion but Reid's IF needs them: ``NotImplementedError`` for
        subjects and clusters (known for rows only)."""
        penalty = self.fit.penalty
        if penalty is not None and not self.units.is_rows:
            raise NotImplementedError("subjects or clusters of a penalised (ridge) model are "
                                      "not supported: the penalty's change per unit is not "
                                      "implemented")
        return None if penalty is None else np.asarray(penalty.strength_loo, dtype=np.float64)

    @property
    def _ridge_change(self):
        """(U, d) the penalty's part of ``grad J - grad J_{-g}``: ``theta_hat (s -
        s_{-g})``."""
        return self.fit.coef[None, :] * (self.fit.penalty.strength[None, :] - self.ridge)

    @cached_property
    def vif(self):
        """(U, d) ``VIF_n(g)`` of every unit (paper scale), the loss's part of
        :attr:`gradient_differences` scaled."""
        return self._scaled_differences()

    def _scaled_differences(self):
        """A new (U, d) array of :attr:`vif`'s values (a copy of the differences, scaled),
        whether or not :attr:`vif` is kept."""
        return _vif.vif_of_units(self.fit, units=self.units, delta=self._loss_differences,
                                 wrap=False)

    @cached_property
    def third(self):
        """(d, d, d) the loss's third derivative at ``theta_hat``."""
        return _third.third_derivative(self.fit.risk_sets, self.fit.coef)

    @cached_property
    def information_parts(self):
        """The units' parts ``C_g`` of the information (flags; the refits' warm start),
        formed per unit when asked (:meth:`split_of`)."""
        return InformationSplit(self.fit, self.units)

    def split_of(self, codes):
        """(m, d, d) ``C_g`` of the units ``codes``, each formed once per audit."""
        codes = np.asarray(codes, dtype=np.intp)
        kept = self.__dict__.setdefault("_split_kept", {})
        new = np.unique(codes[[c not in kept for c in codes.tolist()]])
        if new.size:
            kept.update(zip(new.tolist(), self.information_parts.of(new)))
        d = self.fit.data.d
        return np.array([kept[c] for c in codes.tolist()]).reshape(codes.size, d, d)

    def split_traces(self):
        """(U,) ``tr(H^{-1} C_g)``: the ``unstable`` rule's screen."""
        return self.information_parts.traces()

    @cached_property
    def refit_tolerance(self):
        """The refits' ``max |gradient|``: ``fit.tol`` per unit case weight
        (:func:`~coxinfluence.likelihood.objective.gradient_tolerance`)."""
        return gradient_tolerance(self.fit.data, self.fit.tol)

    @property
    def refit_batch_size(self):
        """Refits per batch: each batch's largest array (``4 n`` floats per refit) near one
        million floats (larger batches fall out of cache and run slower per row)."""
        return int(np.clip(1_000_000 // max(4 * self.fit.data.n, 1), 1, 256))

    @property
    def full_gradient(self):
        """(d,) ``grad L(theta_hat)``."""
        return self.fit.gradient

    @cached_property
    def _loss_differences(self):
        """(U, d) the loss's ``grad L - grad L_{-g}`` at ``theta_hat``
        (:func:`~coxinfluence.influence_functions.vif.gradient_differences`)."""
        return _vif.gradient_differences(self.fit, self.units, self.algorithm)

    @cached_property
    def gradient_differences(self):
        """(U, d) ``grad L - grad L_{-g}`` at ``theta_hat`` (with a ridge, plus
        :attr:`_ridge_change`); the deleted gradients are ``grad L`` less them."""
        gd = self._loss_differences
        return gd if self.fit.penalty is None else gd + self._ridge_change

    def deleted_hessians(self, codes):
        """(m, d, d) ``H_{-g}(theta_hat)`` of the units ``codes``: ``H - C_g`` where the
        split is at hand (the flags made it), else exact: a few units by deletion, one
        problem at a time (the kernels' one-problem path is faster than their batch:
        measured 3.4x on SUPPORT, equal on GBSG2), more in closed form
        (:mod:`~coxinfluence.influence_functions.deleted_hessians`); a ridge adds its
        ``diag(s_{-g})``."""
        fit, codes = self.fit, np.asarray(codes, dtype=int)
        ridge = fit.penalty is not None
        if "information_parts" in self.__dict__:
            H = fit.information[None] - self.split_of(codes)
            held = fit.penalty.strength if ridge else 0.0   # the information's diag(s)
        elif codes.size <= 64:
            H, held = by_deletion(fit, self.units, codes, batch=1), 0.0
        else:
            H, held = deleted_hessians(fit, self.units, codes), 0.0
        if ridge:
            idx = np.arange(fit.data.d)
            H[:, idx, idx] += self.ridge[codes] - held
        return H

    def newton_change(self, method=None):
        """The one-step Newton changes ``-H_{-g}^{-1} grad L_{-g}(theta_hat)`` of every
        unit: the engine's ``change("newton")`` with the exact closed-form deleted
        Hessians whatever split the flags made, and the closed-form deleted gradients
        (:func:`~coxinfluence.influence_functions.vif.gradient_differences` by
        ``algorithm``; unpenalised fits).

        Parameters
        ----------
        method : {"auto", "series", "direct"}, optional
            The algorithm of the deleted Hessians
            (:func:`~coxinfluence.influence_functions.deleted_hessians.deleted_hessians`;
            default ``algorithm``).

        Returns
        -------
        change : numpy.ndarray
            (U, d) the changes, NaN where ``ok`` is False.
        ok : numpy.ndarray
            (U,) bool: ``H_{-g}`` is positive definite and the deletion keeps the
            design's rank.

        Examples
        --------
        >>> from coxinfluence.data.units import resolve_units
        >>> from coxinfluence.influence_functions.engine_cox import CoxEngine
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 2))
        >>> fit = ci.fit_cox(X, rng.exponential(size=40), np.ones(40))
        >>> change, ok = CoxEngine(fit, resolve_units(fit)).newton_change()
        >>> bool(ok.all()), bool(np.allclose(fit.coef + change, ci.newton_loo(fit)))
        (True, True)
        """
        fit, units = self.fit, self.units
        H = deleted_hessians(fit, units, method=self.algorithm if method is None else method)
        # grad L_{-g} = grad L - (grad L - grad L_{-g}), not through the VIF's scaling
        step, ok = solve_batch(H, fit.gradient - self.gradient_differences)
        ok &= ~units.breaks_rank
        step[~ok] = np.nan
        return -step, ok

    def refit(self, codes=None, *, tol=None, max_iter=None, **options):
        """:meth:`Engine.refit <coxinfluence.influence_functions.engine.Engine.refit>`
        with ``tol`` per unit case weight
        (:func:`~coxinfluence.likelihood.objective.gradient_tolerance`) and ``max_iter``
        kept for the refits without the lost columns too (:meth:`refit_reduced`)."""
        if tol is not None:
            self.refit_tolerance = gradient_tolerance(self.fit.data, tol)
        if max_iter is not None:
            self.max_iter = max_iter
        return super().refit(codes, **options)

    def deletion_kernel(self):
        """The Cox refit kernel (:class:`CoxKernel`)."""
        return CoxKernel(self.fit.risk_sets, self.units.of_row, self.fit.coef, self.ridge)

    def no_maximum(self):
        """(U,) bool: the deletion leaves no event (a ridge objective always has a
        maximum)."""
        if self.fit.penalty is not None:
            return np.zeros(self.units.n_units, dtype=bool)
        return np.asarray(self.units.removes_all_events, dtype=bool)

    def rank_broken(self):
        """(U,) bool: the deletion leaves a covariate constant or collinear (never with a
        ridge)."""
        if self.fit.penalty is not None:
            return np.zeros(self.units.n_units, dtype=bool)
        return np.asarray(self.units.breaks_rank, dtype=bool)

    def refit_reduced(self, code):
        """(d,) the refit without unit ``code``, the columns it leaves unidentifiable
        dropped (NaN); with a ridge, the plain refit (the engine's)."""
        if self.fit.penalty is not None:
            return super().refit_reduced(code)
        return _refit_reduced(self.fit.data, self.fit.coef, self.units.of_row != code,
                              self.refit_tolerance, self.max_iter)

    def check_refit(self):
        """Refuse exact refits of a fit without a maximum."""
        check_fit(self.fit, "influence(method='exact')", refuse=True)


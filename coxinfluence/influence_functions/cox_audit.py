"""The Cox model behind the audit's seam (:mod:`coxinfluence.influence_functions.seam`).

One :class:`CoxAudit` per ``ci.influence`` call holds what every part of the audit shares
and computes each of it once: the units (rows, subjects or clusters), the risk-set state
at ``theta_hat`` (kept by ``fit.risk_sets``), every unit's VIF, the information split and
the third derivative (flags, and the exact refits' warm start), Reid's IF (LMAX).
Ridge-penalised lifelines fits (``fit.penalty``) take their own closed forms and refits
(:mod:`coxinfluence.influence_functions.penalized`).

``CoxAudit`` is the influence engine (:class:`~coxinfluence.influence_functions.engine.
Engine`) with the risk-set kernels as its fast paths: its exact refits are the engine's
one batched loop with the Cox kernel (:class:`~coxinfluence.influence_functions.refits.
CoxKernel`); its VIF (direct and series), Reid's IF, one-step Newton, the screened
``unstable`` rule and the robust covariance keep their closed forms.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.deleted_hessians import (
    deleted_hessians,
    hessians_by_deletion,
)
from coxinfluence.influence_functions.engine import Engine
from coxinfluence.influence_functions.information_split import InformationSplit
from coxinfluence.influence_functions.penalized import penalized_refits, penalized_theta_change
from coxinfluence.influence_functions.refits import (
    CoxKernel,
    _default_batch,
    _refit_reduced,
    newton_loo,
)
from coxinfluence.influence_functions.reid import reid_of_units, unit_score_residuals
from coxinfluence.influence_functions.seam import FitSeam, ReportHeader
from coxinfluence.influence_functions.stability import (
    third_derivative,
    undefined_units,
    unstable_screened,
)
from coxinfluence.influence_functions.vif import vif_of_units
from coxinfluence.likelihood.objective import gradient_tolerance
from coxinfluence.models.cox import check_fit
from coxinfluence.numerics.rows import matmul_rows


class CoxAudit(FitSeam, Engine):
    """A fitted :class:`~coxinfluence.CoxFit` with its units of deletion (``groups``: one
    label per row; default the fit's subjects, else rows), as the audit sees it."""

    #: the targets (``Target.name``) this model's changes can be taken of
    target_names = ("coef", "hazard_ratio", "linear_predictor", "relative_risk",
                    "survival")

    model_name = "Cox proportional hazards"

    def __init__(self, fit, groups=None):
        self.fit = fit
        self.groups = groups
        self.units = resolve_units(fit, groups)
        if fit.penalty is not None and not self.units.is_rows:
            raise NotImplementedError("subjects or clusters of a penalised (ridge) model are "
                                      "not supported: the penalty's change per unit is not "
                                      "implemented")

    @classmethod
    def of_units(cls, fit, units, *, vif=None, third=None, split=None):
        """The audit of ``fit`` with its units already resolved (``units``, a
        :class:`coxinfluence.data.units.Units`), for its exact refits
        (:func:`~coxinfluence.influence_functions.refits.exact_refits`): ``vif`` (U, d)
        and ``third`` (d, d, d) when the caller has them; ``split`` (U, d, d), or a function
        of unit codes returning theirs, the units' ``C_g`` for the refits' start."""
        self = cls.__new__(cls)
        self.fit, self.groups, self.units = fit, None, units
        if vif is not None:
            self.__dict__["vif"] = np.asarray(vif, dtype=np.float64)
        if third is not None:
            self.__dict__["third"] = third
        self._split = split
        return self

    # ---------------------------------------------------------------- the model
    @property
    def unit_labels(self):
        return self.units.labels

    @property
    def units_are_rows(self):
        return bool(self.units.is_rows)

    def objective(self, thetas):
        return self.fit.objective(thetas)

    # ------------------------------------------------------ shared, computed once
    @cached_property
    def vif(self):
        """(U, d) ``VIF_n(g)`` of every unit (paper scale; the partial likelihood's part
        for a penalised fit)."""
        return np.asarray(vif_of_units(self.fit, units=self.units), dtype=np.float64)

    @cached_property
    def reid(self):
        """(U, d) Reid's ``IF_n(g)`` of every unit (paper scale)."""
        check_fit(self.fit, "reid_influence")
        return np.asarray(reid_of_units(self.fit, self.units, self.score_sums),
                          dtype=np.float64)

    @cached_property
    def score_sums(self):
        """(U, d) each unit's weighted score residuals, ``I IF_n(g) / n`` (LMAX; Reid's
        IF is ``n I^{-1}`` times them)."""
        check_fit(self.fit, "reid_influence")
        return np.asarray(unit_score_residuals(self.fit, self.units), dtype=np.float64)

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

    @cached_property
    def third(self):
        """(d, d, d) the loss's third derivative at ``theta_hat`` (flags, refits)."""
        return third_derivative(self.fit)

    # ------------------------------------------------------------ the estimates
    def change(self, method):
        fit, n = self.fit, self.units.n_units
        if fit.penalty is not None:
            return penalized_theta_change(fit, method)[0]
        # the public functions' warning for a fit without maximum, under their names
        check_fit(fit, {"vif": "vif", "reid": "reid_influence", "newton": "newton_loo"}
                  .get(method, method))
        if method == "vif":
            return -self.vif / n
        if method == "reid":
            return -self.reid / n
        if method == "newton":
            return np.asarray(newton_loo(fit, groups=self.groups), dtype=np.float64) - fit.coef
        raise ValueError(f"unknown method {method!r}")

    # ------------------------------------------------------ the engine's refits
    @cached_property
    def refit_tolerance(self):
        """The refits' ``max |gradient|``: ``fit.tol`` per unit case weight
        (:func:`~coxinfluence.likelihood.objective.gradient_tolerance`)."""
        return gradient_tolerance(self.fit.data, self.fit.tol)

    @property
    def refit_batch_size(self):
        """Refits per batch: each batch's largest array near one million floats."""
        return _default_batch(self.fit.data, per_row_floats=4 * self.fit.data.n)

    @property
    def full_gradient(self):
        """(d,) ``grad L(theta_hat)``."""
        return self.fit.gradient

    @cached_property
    def gradient_differences(self):
        """(U, d) ``grad L - grad L_{-g}`` at ``theta_hat``: ``-H VIF_n(g) / U``."""
        U, d = self.units.n_units, self.fit.data.d
        return -matmul_rows(self.vif, self.fit.information / U, np.empty((U, d)))

    def deleted_gradients(self, codes):
        """(m, d) ``grad L_{-g}(theta_hat) = grad L + H VIF_n(g) / U`` of the units
        ``codes``."""
        fit, U = self.fit, self.units.n_units
        vif = self.vif[codes]
        g = matmul_rows(vif, fit.information / U, np.empty((vif.shape[0], fit.data.d)))
        g += fit.gradient
        return g

    def deleted_hessians(self, codes):
        """(m, d, d) ``H_{-g}(theta_hat)`` of the units ``codes``: ``H - C_g`` where the
        split is at hand (the flags made it), else exact: a few units by deletion, one
        problem at a time (the kernels' one-problem path is faster than their batch:
        measured 3.4x on SUPPORT, equal on GBSG2), more in closed form
        (:mod:`~coxinfluence.influence_functions.deleted_hessians`)."""
        fit, codes = self.fit, np.asarray(codes, dtype=int)
        split = self.__dict__.get("_split")
        if split is None and "information_parts" in self.__dict__:
            split = self.split_of
        if split is not None:
            C = split(codes) if callable(split) else np.asarray(split)[codes]
            return fit.information[None] - C
        if codes.size <= 64:
            return hessians_by_deletion(fit, self.units, codes, batch=1)
        return deleted_hessians(fit, self.units, codes)

    def deletion_kernel(self):
        """The Cox refit kernel (:class:`~coxinfluence.influence_functions.refits.
        CoxKernel`)."""
        return CoxKernel(self.fit.risk_sets, self.units.of_row, self.fit.coef)

    def no_maximum(self):
        """(U,) bool: the deletion leaves no event."""
        return np.asarray(self.units.removes_all_events, dtype=bool)

    def rank_broken(self):
        """(U,) bool: the deletion leaves a covariate constant or collinear."""
        return np.asarray(self.units.breaks_rank, dtype=bool)

    def refit_reduced(self, code):
        """(d,) the refit without unit ``code``, the columns it leaves unidentifiable
        dropped (NaN)."""
        return _refit_reduced(self.fit.data, self.fit.coef, self.units.of_row != code,
                              self.refit_tolerance, self.max_iter)

    def check_refit(self):
        """Refuse exact refits of a fit without a maximum."""
        check_fit(self.fit, "influence(method='exact')", refuse=True)

    def refit(self, codes=None, *, progress=None, executor=None, **options):
        """Exact refits (the engine's, :meth:`Engine.refit`; a ridge-penalised fit:
        :func:`~coxinfluence.influence_functions.penalized.penalized_refits`)."""
        self.check_refit()
        if self.fit.penalty is not None:
            codes = (np.arange(self.units.n_units) if codes is None
                     else np.asarray(codes, int))
            return penalized_refits(self.fit, codes)
        return super().refit(codes, progress=progress, executor=executor, **options)

    # ------------------------------------------------------------------ trust
    def undefined(self):
        if self.fit.penalty is not None:       # a ridge objective always has a maximum
            return np.zeros(self.units.n_units, dtype=bool)
        return np.asarray(undefined_units(self.fit, self.units), dtype=bool)

    def unstable(self, delta_vif):
        if self.fit.penalty is not None:       # no measured rule for penalised fits
            return np.zeros(self.units.n_units, dtype=bool)
        # C_g formed only for the units whose trace bound may reach the rule
        return unstable_screened(self.fit.information, self.information_parts.traces(),
                                 self.third, delta_vif, self.split_of)

    def unit_scores(self):
        return self.score_sums

    def covariance(self, robust):
        return self.fit.robust_covariance(self.groups) if robust else self.fit.var

    def unit_frame(self, frame):
        """Rows: ``frame``; subjects and clusters: the number of rows, the follow-up span
        (first entry, last exit) and the number of events, indexed by the unit label."""
        units = self.units
        if units.is_rows:
            return frame
        data, code, U = units.data, units.of_row, units.n_units
        start = np.zeros(data.n) if data.start is None else data.start
        entry = np.full(U, np.inf)
        np.minimum.at(entry, code, start)
        exit_ = np.full(U, -np.inf)
        np.maximum.at(exit_, code, data.time)
        return pd.DataFrame({"rows": np.bincount(code, minlength=U),
                             "entry": entry, "exit": exit_,
                             "events": np.bincount(code, weights=data.event, minlength=U)},
                            index=units.labels)

    # ------------------------------------------------------------ the report
    def report_header(self):
        """The report's and the CLI's words for the model (:class:`~coxinfluence.
        influence_functions.seam.ReportHeader`): events, ties, the log partial
        likelihood; the diverging covariates when the fit did not converge."""
        fit = self.fit
        diverging = () if fit.converged else tuple(map(str, fit.diverging_columns()))
        return ReportHeader(name="Cox", statement="Cox model",
                            facts=f"{int(fit.data.event.sum())} events, {fit.ties} ties, "
                                  f"log partial likelihood {fit.loglik:.4f}",
                            diverging=diverging)

    def summary_table(self, robust):
        """``fit.summary()``: coef, exp(coef), se(coef), z, p; with ``robust`` the grouped
        sandwich SE of this audit's units (R's ``robust se``)."""
        if robust:
            return self.fit.summary(robust=True, groups=self.groups)
        return self.fit.summary()

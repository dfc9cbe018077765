"""The Cox model behind the audit's seam (:mod:`coxinfluence.influence_functions.seam`).

One :class:`CoxAudit` per ``ci.influence`` call: the Cox engine
(:class:`~coxinfluence.influence_functions.engine_cox.CoxEngine`: units, VIF, deleted
derivatives, refits, a ridge penalty's part) with what the audit adds, each computed
once: Reid's IF and the units' score sums (LMAX), the flags (``undefined`` by
:func:`~coxinfluence.influence_functions.stability.undefined_units`, ``unstable``
screened by the information split's traces), the robust covariance, the report's words.
:func:`low_level_seam` is the one the low-level functions (``ci.vif``, ...) build.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.any_fit import SeamUnits, warn_undefined
from coxinfluence.influence_functions.engine import Engine
from coxinfluence.influence_functions.engine_cox import CoxEngine
from coxinfluence.influence_functions.reid import unit_score_residuals
from coxinfluence.influence_functions.seam import ReportHeader
from coxinfluence.influence_functions.stability import undefined_units
from coxinfluence.influence_functions.vif import InUnitOrder
from coxinfluence.models.cox import check_fit


class CoxAudit(CoxEngine):
    """A fitted :class:`~coxinfluence.CoxFit` with its units of deletion (``groups``: one
    label per row; default the fit's subjects, else rows), as the audit sees it;
    ``algorithm`` the closed forms' (:class:`~coxinfluence.influence_functions.engine_cox.
    CoxEngine`)."""

    #: the targets (``Target.name``) this model's changes can be taken of
    target_names = ("coef", "hazard_ratio", "linear_predictor", "relative_risk",
                    "survival")

    model_name = "Cox proportional hazards"

    def __init__(self, fit, groups=None, algorithm="auto"):
        super().__init__(fit, resolve_units(fit, groups), algorithm)
        self.groups = groups

    # ------------------------------------------------------ shared, computed once
    def reid_change(self):
        """(U, d) Reid's change ``-IF_n(g)/U = -H^{-1}`` :attr:`score_sums`
        (:mod:`~coxinfluence.influence_functions.reid`; a penalised fit's information
        included)."""
        return self._reid_change.copy()

    @cached_property
    def _reid_change(self):
        # fit.paper_scale with n = 1: -H^{-1} delta, the change itself
        return self.fit.paper_scale(self.score_sums.copy(), InUnitOrder(1), overwrite=True)

    @cached_property
    def score_sums(self):
        """(U, d) each unit's weighted score residuals, ``I IF_n(g) / n`` (LMAX; Reid's
        IF is ``n I^{-1}`` times them)."""
        check_fit(self.fit, "reid_influence")
        return np.asarray(unit_score_residuals(self.fit, self.units), dtype=np.float64)

    # ------------------------------------------------------------ the estimates
    def change(self, method):
        """The engine's changes, after the check that a fit without maximum has an
        invertible information (else NotConvergedError under the public functions' names;
        Reid's: :attr:`score_sums`'); "newton" of an
        unpenalised fit by :meth:`newton_change`, NaN where undefined, with one
        :class:`~coxinfluence.LeaveOneOutWarning` naming those units."""
        fit = self.fit
        if method == "reid":
            return self.reid_change()
        check_fit(fit, {"vif": "vif", "newton": "newton_loo"}.get(method, method))
        if method == "newton" and fit.penalty is not None:
            out = Engine.change(self, "newton")
            bad = np.flatnonzero(~np.isfinite(out).all(axis=1))
            warn_undefined(SeamUnits(self), bad, "penalised newton leave-one-out")
            return out
        if method == "newton":
            change, ok = self.newton_change()
            warn_undefined(self.units, np.flatnonzero(~ok), "one-step Newton leave-one-out")
            return change
        return super().change(method)          # "vif" (CoxEngine's); another name: ValueError

    def paper_vif(self):
        """``ci.vif``'s array ``-U change("vif")``: when the VIF is not kept yet (an
        unpenalised fit), the same operations in one new array, none kept, so that 10^7
        rows hold two (U, d) arrays (the differences and this) instead of three (also
        the VIF :meth:`change` keeps).

        Returns
        -------
        numpy.ndarray
            (U, d), unit order: the bits of ``-U * change("vif")``.
        """
        if self.fit.penalty is not None or "vif" in self.__dict__:
            return super().paper_vif()
        check_fit(self.fit, "vif")
        U = self.units.n_units
        out = self._scaled_differences()      # the values self.vif would keep
        np.negative(out, out=out)
        out /= U                              # change("vif"): -vif / U
        out *= -U                             # AuditModel.paper_vif: -U change("vif")
        return out

    # ------------------------------------------------------------------ trust
    def undefined(self):
        if self.fit.penalty is not None:       # a ridge objective always has a maximum
            return self.no_maximum()
        return np.asarray(undefined_units(self.fit, self.units), dtype=bool)

    def unstable(self, delta_vif):
        if self.fit.penalty is not None:       # no measured rule for penalised fits
            return np.zeros(self.units.n_units, dtype=bool)
        return super().unstable(delta_vif)      # screened: split_traces

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
        """``fit.summary(robust=False)``: coef, exp(coef), se(coef), z, p; with ``robust``
        also the grouped sandwich SE of this audit's units (R's ``robust se``), on which
        z, p and the limits are based. ``robust`` is the audit's (a bool: the model's
        choice or the caller's), never the fit's default."""
        if robust:
            return self.fit.summary(robust=True, groups=self.groups)
        return self.fit.summary(robust=False)


def low_level_seam(fit, groups, what, *, method=None, refuse=False):
    """The Cox family's seam for the low-level functions (``Family.low_level``): a
    :class:`CoxAudit` of ``fit`` with the closed forms' algorithm ``method``; ``refuse``
    (exact refits): a :class:`~coxinfluence.NotConvergedError` under the caller's name
    ``what`` when the fit did not converge (the approximations warn from
    :meth:`CoxAudit.change`, naming the diverging covariates)."""
    check_fit(fit, what if refuse else None, refuse=refuse)
    return CoxAudit(fit, groups, "auto" if method is None else method)

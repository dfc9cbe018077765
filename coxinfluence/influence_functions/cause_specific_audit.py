"""Cause-specific Cox models behind the seam (issue 47, item 2).

The loss of a :class:`~coxinfluence.CauseSpecificFit` is the sum of its causes' Cox
losses, ``L(theta) = sum_k L_k(theta_k)``, each cause with coefficients of its own. Every
cause's model holds every row, so a unit (a row, a subject of ``id=``, a cluster of
``groups=``) is the same in every cause, and deleting it removes its rows from every
cause's risk sets at once. The causes share no coefficient: every derivative the engine
reads is its causes' Cox seams
(:class:`~coxinfluence.influence_functions.cox_audit.CoxAudit`), block by block:

- ``information`` ``diag(H_k)``, ``third`` ``diag(T_k)``, ``full_gradient`` stacked;
- ``gradient_differences`` and Reid's change: each cause's, side by side (so the robust
  covariance ``D'D`` has the blocks between causes too);
- ``split_of`` ``diag(C_{g,k})``, ``split_traces`` ``sum_k tr(H_k^{-1} C_{g,k})``;
- the refit kernel sums the causes' Cox kernels (``engine_refits.BlockKernel``), so the
  engine's one refit loop refits every cause without the unit together;
- ``undefined``, ``no_maximum``, ``rank_broken``: a deletion that does so in one cause.

The engine derives the VIF, Newton's step, the exact refits, ``auto`` and the flags from
these. The target ``ci.targets.AbsoluteRisk``
(:mod:`coxinfluence.families.cause_specific_targets`) reads the units of every cause
(``units.per_cause``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError
from coxinfluence.influence_functions.cox_audit import CoxAudit
from coxinfluence.influence_functions.engine import Engine
from coxinfluence.influence_functions.engine_refits import BlockKernel
from coxinfluence.influence_functions.registry import (
    Family,
    Resolved,
    attach_columns,
    register_family,
    with_overrides,
)
from coxinfluence.influence_functions.seam import ReportHeader
from coxinfluence.models.cause_specific import CauseSpecificFit
from coxinfluence.numerics.rows import block_diagonal

__all__ = ["CauseSpecificAudit", "CauseUnits", "FAMILY"]


@dataclass(frozen=True)
class CauseUnits:
    """The units of a cause-specific audit: ``per_cause`` (each cause's
    ``coxinfluence.data.units.Units``, the same labels), ``labels``, ``n_units``,
    ``is_rows`` and ``data`` as a ``Units`` has them."""

    per_cause: tuple

    @property
    def labels(self):
        return self.per_cause[0].labels

    @property
    def data(self):
        """The first cause's sorted data (every cause's rows and index are the caller's)."""
        return self.per_cause[0].data

    @property
    def n_units(self):
        return self.per_cause[0].n_units

    @property
    def is_rows(self):
        return self.per_cause[0].is_rows


class CauseSpecificAudit(Engine):
    """A :class:`~coxinfluence.CauseSpecificFit` as the audit sees it (module docstring):
    ``groups`` one label per row (default the subjects of ``id=``, else the rows)."""

    model_name = "cause-specific Cox"
    ratio_name = "cause-specific hazard ratio"
    target_names = ("coef", "hazard_ratio", "absolute_risk")

    def __init__(self, fit, groups=None):
        self.fit, self.groups = fit, groups
        self.parts = [CoxAudit(m, groups) for m in fit.models]
        self.coef = np.asarray(fit.coef, dtype=np.float64)
        self.columns = list(fit.columns)
        ends = np.cumsum([0] + [len(m.coef) for m in fit.models])
        self.slices = [slice(int(a), int(b)) for a, b in zip(ends[:-1], ends[1:])]
        self.units = CauseUnits(tuple(p.units for p in self.parts))

    # ------------------------------------------------------------ the seam
    @property
    def unit_labels(self):
        return self.units.labels

    @property
    def units_are_rows(self):
        return bool(self.units.is_rows)

    @property
    def progress_unit(self):
        return "row" if self.units_are_rows else "subject"

    @property
    def n_rows(self):
        return self.fit.n

    @cached_property
    def information(self):
        return self.fit.information

    @property
    def converged(self):
        return bool(self.fit.converged)

    def objective(self, thetas):
        thetas = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
        return sum(p.objective(thetas[:, sl]) for p, sl in zip(self.parts, self.slices))

    @property
    def full_gradient(self):
        return np.concatenate([p.full_gradient for p in self.parts])

    @cached_property
    def gradient_differences(self):
        return np.hstack([p.gradient_differences for p in self.parts])

    def split_of(self, codes):
        return block_diagonal([p.split_of(codes) for p in self.parts])

    def deleted_hessians(self, codes):
        return block_diagonal([p.deleted_hessians(codes) for p in self.parts])

    def split_traces(self):
        return np.sum([p.split_traces() for p in self.parts], axis=0)

    @cached_property
    def third(self):
        d = len(self.coef)
        T = np.zeros((d, d, d))
        for p, sl in zip(self.parts, self.slices):
            T[sl, sl, sl] = p.third
        return T

    def reid_change(self):
        return np.hstack([p.reid_change() for p in self.parts])

    def change(self, method):
        """Each cause's change side by side (the causes' Cox seams; "newton" of each by
        its closed forms: ``H_{-g}`` is block diagonal)."""
        return np.hstack([p.change(method) for p in self.parts])

    def unit_scores(self):
        return np.hstack([p.unit_scores() for p in self.parts])

    def covariance(self, robust):
        return self.fit.robust_covariance(self.groups) if robust else self.fit.var

    # ------------------------------------------------------------ refits
    @cached_property
    def refit_tolerance(self):
        return float(min(p.refit_tolerance for p in self.parts))

    @property
    def refit_batch_size(self):
        return int(min(p.refit_batch_size for p in self.parts))

    def deletion_kernel(self):
        return BlockKernel([p.deletion_kernel() for p in self.parts], self.slices,
                           len(self.coef))

    def check_refit(self):
        for p in self.parts:
            p.check_refit()

    def undefined(self):
        return np.any([p.undefined() for p in self.parts], axis=0)

    def no_maximum(self):
        return np.any([p.no_maximum() for p in self.parts], axis=0)

    def rank_broken(self):
        return np.any([p.rank_broken() for p in self.parts], axis=0)

    def refit_reduced(self, code):
        return np.concatenate([p.refit_reduced(code) for p in self.parts])

    # ------------------------------------------------------------ the report
    def unit_frame(self, frame):
        return self.parts[0].unit_frame(frame)

    def report_header(self):
        fit = self.fit
        events = ", ".join(f"cause {k}: {m.n_events} events"
                           for k, m in zip(fit.causes, fit.models))
        ties = fit.models[0].ties
        return ReportHeader(
            name="Cause-specific Cox",
            statement=f"cause-specific Cox models for causes {fit.causes}",
            facts=f"{events}, {ties} ties, log partial likelihood {fit.loglik:.4f}")

    def report_notes(self):
        return ("Status codes: 0 = censored; k = an event of cause k. Each cause has its "
                "own Cox model, in which the other causes censor; a unit is deleted from "
                "every cause's model at once.",)

    def summary_table(self, robust):
        return self.fit.summary(robust=bool(robust), groups=self.groups)


def _frame(fit):
    """The training frame: every cause's covariates, time, status; caller's order."""
    data = fit.models[0].data
    index = fit.index if fit.index is not None else pd.RangeIndex(fit.n)
    X = np.empty((fit.n, 0))
    columns = []
    for m in fit.models:
        new = [c for c in m.columns if c not in columns]
        if new:
            pos = [m.columns.index(c) for c in new]
            Xm = data.to_caller_order(m.data.X[:, pos] + m.data.X_center[pos])
            X = np.hstack([X, Xm])
            columns += new
    frame = pd.DataFrame(X, index=index, columns=columns)
    frame["time"] = data.to_caller_order(data.time)
    frame["status"] = fit.status
    return frame


def build(fit, data, *, groups=None, robust=None, cause=None):
    """A ``CauseSpecificFit`` behind the seam and its :class:`Resolved` (the training frame
    with ``data``'s other columns, matched on the index); ``cause``: the fit's cause (what
    ``ci.evaluate`` scores, the targets' default) on a copy of the fit."""
    if cause is not None:
        if cause not in fit.causes:
            raise InputError(f"cause must be one of the fit's causes {fit.causes}; got "
                             f"{cause!r}")
        fit = dataclasses.replace(fit, cause=cause)
    frame = _frame(fit)
    if data is not None:
        frame = attach_columns(frame, data, fit.n)
    resolved = with_overrides(Resolved(fit, frame, "coxinfluence",
                                       robust=bool(fit.robust_default)), groups, robust)
    return CauseSpecificAudit(fit, resolved.groups), resolved


#: the family, registered on import (``import coxinfluence`` imports this module)
FAMILY = register_family(Family("cause_specific", CauseSpecificFit, build,
                                options=("cause",),
                                description="a CauseSpecificFit (ci.fit_cause_specific)"))

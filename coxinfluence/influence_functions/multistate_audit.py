"""A Markov multi-state Cox model behind the seam (issue 47, item 3).

The model's loss is the sum of its transitions' Cox losses, ``L(theta) = sum_k
L_k(theta_k)``, each transition with coefficients of its own
(``coxinfluence.models.multistate``). The unit of deletion is the subject: deleting
subject g removes its rows from every transition's risk sets at once. The transitions
share no coefficient, so every derivative the engine reads is assembled from the
transitions' Cox seams (:class:`~coxinfluence.influence_functions.cox_audit.CoxAudit`,
units their subjects), block by block:

- ``information`` ``H = diag(H_k)``, ``third`` ``diag(T_k)``, ``full_gradient`` the
  transitions' gradients stacked;
- ``gradient_differences`` ``grad L - grad L_{-g}`` = each transition's, stacked (zero in
  a transition where the subject is never at risk); Reid's change likewise (so the
  robust covariance ``D'D`` is R's ``fit$var``, by subject across transitions);
- ``deleted_hessians`` ``H_{-g} = diag(H_{-g,k})`` (closed form); the flags' screen
  ``split_of`` ``diag(C_{g,k})`` and ``split_traces`` ``sum_k tr(H_k^{-1} C_{g,k})``, each
  transition's information split;
- the refit kernel sums the transitions' Cox kernels (``engine_refits.BlockKernel``), so
  the engine's one refit loop refits all transitions without the subject together;
- ``undefined`` / ``rank_broken``: a deletion that leaves one transition without a maximum.

The engine derives the VIF, Newton's step, the exact refits and the flags from these.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from coxinfluence.influence_functions.cox_audit import CoxAudit
from coxinfluence.influence_functions.deleted_hessians import (
    deleted_hessians as _deleted_hessians,
)
from coxinfluence.influence_functions.engine import Engine
from coxinfluence.influence_functions.engine_refits import BlockKernel
from coxinfluence.influence_functions.registry import Resolved, attach_columns
from coxinfluence.influence_functions.seam import ReportHeader
from coxinfluence.models.multistate import MultiStateFit

__all__ = ["MultiStateAudit", "build"]


class MultiStateAudit(Engine):
    """A :class:`~coxinfluence.MultiStateFit` as the audit sees it: its subjects the units,
    derivatives assembled from each transition's Cox seam (module docstring)."""

    model_name = "Markov multi-state Cox"
    units_are_rows = False
    progress_unit = "subject"
    ratio_name = "hazard ratio"
    target_names = ("coef", "hazard_ratio", "state_probability")

    def __init__(self, fit):
        self.fit = fit
        self.parts = [CoxAudit(f) for f in fit.fits]
        self.coef = np.asarray(fit.coef, dtype=np.float64)
        self.columns = list(fit.columns)
        self.unit_labels = fit.unit_labels
        self.slices = fit.slices
        self.local = [np.asarray(p.unit_labels.get_indexer(self.unit_labels))
                      for p in self.parts]

    # ------------------------------------------------------------ the model
    @property
    def information(self):
        return self.fit.information

    @property
    def converged(self):
        return bool(self.fit.converged)

    @property
    def n_rows(self):
        return self.fit.n

    def objective(self, thetas):
        return self.fit.objective(thetas)

    def _stacked(self, per_part):
        """(U, d): each transition's (U_k, d_k) rows placed at its subjects and block."""
        out = np.zeros((len(self.unit_labels), len(self.coef)))
        for values, loc, sl in zip(per_part, self.local, self.slices):
            present = loc >= 0
            out[present, sl] = np.asarray(values, dtype=np.float64)[loc[present]]
        return out

    def _any(self, per_part):
        out = np.zeros(len(self.unit_labels), dtype=bool)
        for values, loc in zip(per_part, self.local):
            present = loc >= 0
            out[present] |= np.asarray(values, dtype=bool)[loc[present]]
        return out

    # ------------------------------------------------------------ derivatives
    @property
    def full_gradient(self):
        return np.concatenate([np.asarray(p.full_gradient, dtype=np.float64)
                               for p in self.parts])

    @cached_property
    def gradient_differences(self):
        return self._stacked([p.gradient_differences for p in self.parts])

    @cached_property
    def _reid(self):
        return self._stacked([p.reid_change() for p in self.parts])

    def reid_change(self):
        """(U, d) Reid's change, each transition's (R's dfbeta of its model, negated)."""
        return self._reid.copy()

    def deleted_hessians(self, codes):
        """(m, d, d) ``H_{-g} = diag(H_{-g,k})``, each transition's in closed form
        (:func:`~coxinfluence.influence_functions.deleted_hessians.deleted_hessians`)."""
        codes = np.asarray(codes, dtype=int)
        out = np.repeat(np.asarray(self.information, dtype=np.float64)[None], codes.size, 0)
        for part, loc, sl in zip(self.parts, self.local, self.slices):
            local = loc[codes]
            present = np.flatnonzero(local >= 0)
            if present.size:
                out[present, sl, sl] = _deleted_hessians(part.fit, part.units, local[present])
        return out

    def split_of(self, codes):
        """(m, d, d) each transition's information split ``C_{g,k}`` (its flags' screen,
        :meth:`CoxEngine.split_of
        <coxinfluence.influence_functions.engine_cox.CoxEngine.split_of>`), block by
        block."""
        codes = np.asarray(codes, dtype=int)
        d = len(self.coef)
        out = np.zeros((codes.size, d, d))
        for part, loc, sl in zip(self.parts, self.local, self.slices):
            local = loc[codes]
            present = np.flatnonzero(local >= 0)
            if present.size:
                out[present, sl, sl] = part.split_of(local[present])
        return out

    def split_traces(self):
        traces = np.zeros(len(self.unit_labels))
        for part, loc in zip(self.parts, self.local):
            present = loc >= 0
            traces[present] += np.asarray(part.split_traces())[loc[present]]
        return traces

    @cached_property
    def third(self):
        d = len(self.coef)
        T = np.zeros((d, d, d))
        for part, sl in zip(self.parts, self.slices):
            T[sl, sl, sl] = part.third
        return T

    # ------------------------------------------------------------------ refits
    @cached_property
    def refit_tolerance(self):
        return min(p.refit_tolerance for p in self.parts)

    @property
    def refit_batch_size(self):
        return min(p.refit_batch_size for p in self.parts)

    def deletion_kernel(self):
        return BlockKernel([p.deletion_kernel() for p in self.parts], self.slices,
                           len(self.coef), local=self.local)

    def undefined(self):
        return self._any([p.undefined() for p in self.parts])

    def rank_broken(self):
        return self._any([p.rank_broken() for p in self.parts])

    def refit_reduced(self, code):
        """The refit without subject ``code``: each transition's own refit, without the
        columns the deletion leaves unidentifiable there (NaN)."""
        out = self.coef.copy()
        for part, loc, sl in zip(self.parts, self.local, self.slices):
            c = int(loc[code])
            if c < 0:
                continue
            if part.rank_broken()[c]:
                out[sl] = part.refit_reduced(c)
            else:
                out[sl] = part.refit([c]).theta[0]
        return out

    # ------------------------------------------------------------------ words
    def unit_frame(self, frame):
        """Per subject: its rows and the transitions it made."""
        import pandas as pd
        fit = self.fit
        codes = fit.unit_labels.get_indexer(fit.ids)
        U = len(self.unit_labels)
        return pd.DataFrame({"rows": np.bincount(codes, minlength=U),
                             "transitions": np.bincount(codes, weights=fit.state_codes >= 0,
                                                        minlength=U).astype(int)},
                            index=self.unit_labels)

    def report_header(self):
        fit = self.fit
        states = ", ".join(f"{k + 1} = {s}" for k, s in enumerate(fit.states))
        return ReportHeader(name="Multi-state Cox",
                            statement=f"Markov multi-state Cox model (states {states}; "
                                      f"transitions {', '.join(fit.transition_names)})",
                            facts=f"{fit.n_events} transitions observed, {fit.ties} ties, "
                                  + ("case weights, " if (fit.weights != 1).any() else "")
                                  + (f"{fit.n_strata} strata, " if fit.n_strata > 1 else "")
                                  + f"log partial likelihood {fit.loglik:.4f}")

    def summary_table(self, robust):
        return self.fit.summary(robust=robust)


def build(fit, data, *, groups=None, robust=None):
    """The registered ``build``: the seam and what the audit knows of the data."""
    if groups is not None:
        raise ValueError("a multi-state fit's units are its subjects: groups= is not "
                         "supported")
    frame = fit.frame if data is None else attach_columns(fit.frame, data, fit.n)
    return MultiStateAudit(fit), Resolved(fit, frame, "coxinfluence",
                                          robust=True if robust is None else bool(robust))


#: the class of the family's models
FIT_CLASS = MultiStateFit

"""The model seam: what the audit (``ci.influence``) needs of a fitted model.

The audit (:mod:`coxinfluence.audit`) is written once against this protocol and never
asks which model it holds. A model family implements it once: the Cox model
(:class:`coxinfluence.influence_functions.cox_audit.CoxAudit`: rows, subjects, clusters,
ridge-penalised lifelines fits) and any autodiff loss
(:class:`coxinfluence.autodiff.audit_model.AutodiffModel`). ``docs/seam.md`` documents
it with both implementations.

Conventions (``docs/conventions.md``): the objective is a loss, summed over its terms;
``information`` is its Hessian at ``coef``; a unit's change is
``theta_hat_{-g} - theta_hat`` (about ``-VIF_n(g)/n``).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

#: the first-order methods a model offers besides exact refits
APPROXIMATIONS = ("vif", "reid", "newton")


@runtime_checkable
class AuditModel(Protocol):
    """A fitted model as the audit sees it. Arrays are float64; unit axes follow
    ``unit_labels``."""

    #: what the report calls the model, e.g. "Cox proportional hazards"
    model_name: str
    #: the object the user fitted (a ``CoxFit``; the model itself otherwise): targets and
    #: the report read it
    fit: object
    coef: np.ndarray            # (d,) the fitted parameters
    columns: list               # d parameter names
    information: np.ndarray     # (d, d) Hessian of the objective at ``coef``
    converged: bool             # whether ``coef`` is a maximum the refits can return to
    unit_labels: pd.Index       # one label per unit of deletion (rows, subjects, clusters)
    units_are_rows: bool        # each unit is one training row
    # optional: ``unit_name`` (what the report calls a unit; default "patients")

    def objective(self, thetas) -> np.ndarray:
        """(m,) the full-data objective at each row of ``thetas`` (m, d): the likelihood
        displacement is ``2 [objective(theta_{-g}) - objective(theta_hat)]``."""

    def change(self, method: str) -> np.ndarray:
        """(U, d) first-order estimates of ``theta_hat_{-g} - theta_hat`` by ``method`` in
        :data:`APPROXIMATIONS` (NaN where the deletion has no estimate)."""

    def refit(self, codes=None, *, progress=None, executor=None):
        """Exact refits without each unit ``codes`` (positions in ``unit_labels``; None:
        every unit): a
        :class:`coxinfluence.influence_functions.refits.Refits` (``theta``, and a status
        per unit: "ok", "undefined" (no maximum without the unit), "refit_failed")."""

    def undefined(self) -> np.ndarray:
        """(U,) bool: deleting the unit leaves a model without a maximum by construction."""

    def unstable(self, delta_vif) -> np.ndarray:
        """(U,) bool: the first-order change ``delta_vif`` (U, d) is predicted to be off
        (:func:`coxinfluence.influence_functions.stability.unstable_from_split`)."""

    def unit_scores(self) -> np.ndarray:
        """(U, d) each unit's score contribution ``I IF_n(g) / n`` (LMAX's ``U``)."""

    def covariance(self, robust: bool) -> np.ndarray:
        """(d, d) the covariance the user sees: model-based ``I^{-1}`` or the robust
        (grouped sandwich) one."""

    def unit_frame(self, frame) -> pd.DataFrame:
        """What ``top(k)`` shows beside each unit, indexed by ``unit_labels``: the
        training frame ``frame`` for rows, a summary of each unit's rows otherwise."""

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

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import label_text  # noqa: F401  (re-exported: report, CLI)
from coxinfluence.models.cox import standard_errors, wald_z

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
    # optional: ``unit_name`` (what the report calls a unit; default "patients");
    # ``report_header()`` and ``summary_table(robust)`` (the report's and the CLI's
    # model-specific parts: :func:`model_header`, :func:`model_summary` give the defaults);
    # ``ratio_name`` (what the report calls exp(coef), default "hazard ratio") and
    # ``report_notes()`` (sentences under the report's Model table)

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


class FitSeam:
    """The members a seam reads straight from the fit it wraps (``self.fit``):
    ``model_name``, ``coef``, ``columns``, ``information``, ``converged``. A family
    overrides what differs (Cox names its model; Coxnet's information is its active
    set's)."""

    @property
    def model_name(self):
        return self.fit.model_name

    @property
    def coef(self):
        return self.fit.coef

    @property
    def columns(self):
        return list(self.fit.columns)

    @property
    def information(self):
        return self.fit.information

    @property
    def converged(self):
        return bool(self.fit.converged)


# ------------------------------------------------------------- the report's parts

@dataclass(frozen=True)
class ReportHeader:
    """What the HTML report and the CLI say about the fitted model (plain text, not HTML):
    the optional seam member ``report_header()`` returns one.

    ``name``: the model in a few words ("Cox", "Weibull AFT", "Fine-Gray"), used in "the
    Cox fit did not converge" and the title "Cox model influence audit"; ``statement``:
    the model in a sentence ("Cox model", "Fine-Gray model for cause 1; competing causes
    2 (45 failures)"); ``facts``: what follows the number of units ("299 events, efron
    ties, log partial likelihood -1234.5678"); ``diverging``: when the fit did not
    converge, the parameters known to diverge (empty when none is known)."""

    name: str
    statement: str
    facts: str
    diverging: tuple = ()

    @property
    def title(self) -> str:
        return f"{self.name} model influence audit"


def model_header(model) -> ReportHeader:
    """``model.report_header()``, or, for a seam without it (an autodiff loss), its
    ``model_name``, its number of parameters and its objective at ``coef``."""
    own = getattr(model, "report_header", None)
    if own is not None:
        return own()
    value = float(np.asarray(model.objective(np.asarray(model.coef)[None, :]))[0])
    return ReportHeader(name=str(model.model_name), statement=str(model.model_name),
                        facts=f"{len(model.columns)} parameters, objective (loss) "
                              f"{value:.4f} at the fit")


def model_summary(model, robust: bool) -> pd.DataFrame:
    """``model.summary_table(robust)`` (the model's own coefficient table, with the robust
    SE when ``robust``), or the Wald table of ``coef`` and ``covariance(robust)``: coef,
    se(coef), z, p."""
    own = getattr(model, "summary_table", None)
    if own is not None:
        return own(robust)
    from scipy import stats
    coef = np.asarray(model.coef, dtype=np.float64)
    se = standard_errors(np.diag(model.covariance(robust)))
    z = wald_z(coef, se)
    return pd.DataFrame({"coef": coef, "robust se" if robust else "se(coef)": se, "z": z,
                         "p": 2 * stats.norm.sf(np.abs(z))}, index=list(model.columns))

"""The model seam: what the audit (``ci.influence``) needs of a fitted model.

The audit (:mod:`coxinfluence.audit`) is written once against this protocol and never
asks which model it holds. Every model family implements it, each through the engine
(``coxinfluence.influence_functions.engine.Engine``, which derives every influence
algorithm from a family's derivatives): Cox (``CoxAudit``: rows, subjects, clusters,
ridge-penalised lifelines fits), scikit-survival's Cox and Coxnet (``SksurvCoxAudit``,
``CoxnetAudit``), any loss summed over rows (``DecomposableAudit``: lifelines' parametric
regressions, a ``DecomposableFit``), AFT as R's ``survreg`` (``AFTAudit``), Fine-Gray
(``FineGrayAudit``), any JAX loss (``AutodiffModel``) and a family defined outside the
package (``tests/seam_example_family.py``). ``docs/seam.md`` lists the members, the two
levels at which a family may state its loss (a sum over rows; a general objective with
presence weights) and the one checklist for a new family.

Conventions (``docs/conventions.md``): the objective is a loss, summed over its terms;
``information`` is its Hessian at ``coef``; a unit's change is
``theta_hat_{-g} - theta_hat`` (about ``-VIF_n(g)/n``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import label_text  # noqa: F401  (re-exported: report, CLI)
from coxinfluence.models.base import standard_errors, wald_z

#: the first-order methods a model offers besides exact refits
APPROXIMATIONS = ("vif", "reid", "newton")


class AuditModel:
    """Base class of every model behind the seam: what the audit (``ci.influence``) reads
    of a fitted model. Arrays are float64; unit axes follow ``unit_labels``.

    A family sets the required members (``model_name``, ``fit``, ``coef``, ``columns``,
    ``information``, ``converged``, ``unit_labels``, ``units_are_rows``) and implements
    ``objective``, ``change``, ``refit``, ``unstable``, ``unit_scores`` and
    ``covariance`` (or inherits them from the engine,
    :class:`coxinfluence.influence_functions.engine.Engine`). Every optional member has
    its default here, so the generic layers read them without probing.
    """

    #: what the report calls the model, e.g. "Cox proportional hazards"
    model_name = "model"
    #: the object the user fitted (targets and the report read it)
    fit = None
    #: what the report calls a unit ("patients"; an autodiff model may say "objects")
    unit_name = None
    #: what the report calls the model's ratios exp(coef) (its ``hazard_ratio`` or
    #: ``time_ratio`` target), e.g. "subdistribution hazard ratio"; None: the target's
    #: own words, and a ``hazard_ratio`` shown only where ``summary_table`` has an
    #: ``exp(coef)`` column (an autodiff loss's exp(theta) need be no hazard ratio)
    ratio_name = None
    #: the targets (``Target.name``) this model's changes can be taken of
    target_names = ("coef",)
    #: the report's sentence for each of the model's own flags (name -> text)
    flag_descriptions: dict = {}
    #: whether ``auto`` refits every flagged unit however many (else a limit applies)
    refit_every_flagged = False
    #: the units of deletion as ``coxinfluence.data.units.Units`` where the family
    #: has them (the Cox targets read them); None otherwise
    units = None

    # ------------------------------------------------------------------ required
    def objective(self, thetas) -> np.ndarray:
        """(m,) the full-data objective at each row of ``thetas`` (m, d): the likelihood
        displacement is ``2 [objective(theta_{-g}) - objective(theta_hat)]``."""
        raise NotImplementedError

    def change(self, method: str) -> np.ndarray:
        """(U, d) first-order estimates of ``theta_hat_{-g} - theta_hat`` by ``method`` in
        :data:`APPROXIMATIONS` (NaN where the deletion has no estimate)."""
        raise NotImplementedError

    def refit(self, codes=None, *, progress=None, executor=None):
        """Exact refits without each unit ``codes`` (positions in ``unit_labels``; None:
        every unit): a :class:`coxinfluence.influence_functions.engine_refits.Refits`."""
        raise NotImplementedError

    def paper_vif(self) -> np.ndarray:
        """``VIF_n(g) = -U change("vif")`` (the paper's scale) as a new array, for a
        caller that reads it once (``ci.vif``); a family may form it without keeping
        what :meth:`change` keeps (the Cox model: one (U, d) array less at 10^7 rows).

        Returns
        -------
        numpy.ndarray
            (U, d), the units in ``unit_labels`` order.
        """
        return -len(self.unit_labels) * self.change("vif")

    def unstable(self, delta_vif) -> np.ndarray:
        """(U,) bool: the first-order change ``delta_vif`` (U, d) is predicted to be off."""
        raise NotImplementedError

    def unit_scores(self) -> np.ndarray:
        """(U, d) each unit's score contribution ``I IF_n(g) / n`` (LMAX's ``U``)."""
        raise NotImplementedError

    def covariance(self, robust: bool) -> np.ndarray:
        """(d, d) model-based ``I^{-1}`` or the robust (grouped sandwich) covariance."""
        raise NotImplementedError

    # ------------------------------------------------------------ with defaults
    @property
    def n_rows(self) -> int:
        """The number of training rows (the report's "103 patients (172 rows)"; default:
        one row per unit, ``len(unit_labels)``)."""
        return len(self.unit_labels)

    def undefined(self) -> np.ndarray:
        """(U,) bool: deleting the unit leaves a model without a maximum by construction
        (default: none known)."""
        return np.zeros(len(self.unit_labels), dtype=bool)

    def unit_frame(self, frame) -> pd.DataFrame:
        """What ``top(k)`` shows beside each unit, indexed by ``unit_labels``: the
        training frame for rows (default), an empty frame otherwise."""
        if self.units_are_rows and frame is not None:
            return frame
        return pd.DataFrame(index=self.unit_labels)

    def extra_flags(self) -> dict:
        """The model's own flags, name -> (U,) bool (default none)."""
        return {}

    def adapt_target(self, target):
        """The target as this model evaluates it (default: as given; a model in another
        parametrisation maps it)."""
        return target

    def report_header(self) -> "ReportHeader":
        """The report's and the CLI's words for the model (default: its name, its number
        of parameters and its objective at ``coef``)."""
        value = float(np.asarray(self.objective(np.asarray(self.coef)[None, :]))[0])
        return ReportHeader(name=str(self.model_name), statement=str(self.model_name),
                            facts=f"{len(self.columns)} parameters, objective (loss) "
                                  f"{value:.4f} at the fit")

    def summary_table(self, robust: bool) -> pd.DataFrame:
        """The coefficient table (default: the Wald table of ``coef`` and
        ``covariance(robust)``: coef, se(coef), z, p)."""
        from scipy import stats
        coef = np.asarray(self.coef, dtype=np.float64)
        se = standard_errors(np.diag(self.covariance(robust)))
        z = wald_z(coef, se)
        return pd.DataFrame({"coef": coef, "robust se" if robust else "se(coef)": se,
                             "z": z, "p": 2 * stats.norm.sf(np.abs(z))},
                            index=list(self.columns))

    def report_notes(self) -> tuple:
        """Sentences under the report's Model table (default none)."""
        return ()


class FitSeam(AuditModel):
    """The members a seam reads straight from the fit it wraps (``self.fit``):
    ``model_name``, ``coef``, ``columns``, ``information``, ``converged``, ``n_rows``
    (``fit.n``), ``objective``. A family overrides what differs (Cox names its model; Coxnet's
    information is its active set's)."""

    @property
    def n_rows(self):
        return self.fit.n

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

    def objective(self, thetas):
        return self.fit.objective(thetas)


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

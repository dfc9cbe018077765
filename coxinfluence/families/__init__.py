"""Family-specific parts above the generic audit: each model family's targets (what
``ci.influence(fit, target=...)`` can attribute), registered with the audit's dispatch
(:func:`coxinfluence.audit.target_base.register_target`) when imported.

Importing this package imports every family's module, in the order of registration: a
quantity used directly on a fit (``ci.targets.Survival(...).value(fit, theta)``) resolves
to the latest registered implementation that evaluates on the fit
(:func:`coxinfluence.audit.target_base.implementation_of`), so the more specific
implementations (lifelines' own survival function for a lifelines parametric model, the
scikit-survival risk score for a scikit-survival Cox model) come after the general ones.
``import coxinfluence`` imports it (through :mod:`coxinfluence.targets`, which re-exports
the public targets). A new family adds its module here.
"""
# isort: off
from . import cox_targets, aft_targets, lifelines_targets, sksurv_targets  # noqa: F401
from . import fine_gray_targets, deprecated_targets  # noqa: F401
# the report's curves parts (coxinfluence.families.curves) of the competing-risks families
from . import competing_risks_curves  # noqa: F401
# isort: on

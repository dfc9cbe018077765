"""Model checks beside influence: residuals and the proportional-hazards test (R's
``residuals.coxph``, ``cox.zph``, ``residuals.survreg``, crr's ``res``).

Importing the package registers every built-in family's residuals
(:mod:`coxinfluence.diagnostics.registry`)."""
from coxinfluence.diagnostics import aft_residuals as _aft  # noqa: F401 (registers)
from coxinfluence.diagnostics import cause_specific_residuals as _cs  # noqa: F401
from coxinfluence.diagnostics import cox_residuals as _cox  # noqa: F401 (registers)
from coxinfluence.diagnostics import fine_gray_residuals as _fine_gray  # noqa: F401
from coxinfluence.diagnostics.registry import register_residuals, residuals
from coxinfluence.diagnostics.zph import PHTest, ph_test

__all__ = ["residuals", "ph_test", "PHTest", "register_residuals"]

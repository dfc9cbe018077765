"""coxinfluence: influence diagnostics for survival models.

Which patients move a fitted model, and by how much: Cox regression (closed-form partial
likelihood with Efron/Breslow ties, strata, case weights, (start, stop] data, subjects and
clusters), parametric AFT models (R's ``survreg``, every lifelines parametric model), the
Fine-Gray competing-risks model (cmprsk's ``crr``), scikit-survival's penalised Cox models
and any autodiff loss. Reid's (1985) empirical influence function, the Versatile Influence
Function (VIF) of "A Versatile Influence Function for Data Attribution with
Non-Decomposable Loss", and exact leave-one-out refits as ground truth, in one verified
audit: ``ci.influence(model, data)``.

Conventions (docs/conventions.md): ``influence(fit, method=m).theta_change`` is the
leave-one-out change ``theta_hat_{-i} - theta_hat``; for any fit (``fit_cox``, ``fit_aft``,
``fit_fine_gray``) ``reid_influence`` and ``vif`` are ``-n`` times it (the paper's scale,
approximating ``n (theta_hat - theta_hat_{-i})``, ``n`` the number of units), and
``exact_loo`` and ``newton_loo`` are ``fit.coef`` plus it (the refitted coefficients);
R's ``resid(fit, "dfbeta") = IF_n / n``. Errors: ``InputError`` (a ``ValueError``) for
every bad input, ``ConvergenceWarning`` the base of every convergence warning.
"""
from coxinfluence.audit.result import InfluenceResult
from coxinfluence.audit.run import TopNotVerifiedWarning, influence
from coxinfluence.audit.target_base import TargetBeyondFollowUpWarning
from coxinfluence.data.cox_data import CoxData
from coxinfluence.data.inputs import CoxInputError, InputError
from coxinfluence.diagnostics import ph_test, residuals
from coxinfluence.evaluation.calibration import calibration
from coxinfluence.evaluation.compare import compare
from coxinfluence.evaluation.evaluate import evaluate

# the old names of targets (ci.targets has every target now): deprecated aliases
from coxinfluence.families.deprecated_targets import (
    AFTSurvival,
    LifelinesSurvival,
    RiskScore,
    SurvivalQuantile,
)
from coxinfluence.families.fine_gray_targets import CumulativeIncidence
from coxinfluence.influence_functions.any_fit import (
    LeaveOneOutWarning,
    exact_loo,
    newton_loo,
    reid_influence,
    vif,
)
from coxinfluence.influence_functions.reid import score_residuals
from coxinfluence.models.aft import AFTFit, fit_aft
from coxinfluence.models.cause_specific import CauseSpecificFit, fit_cause_specific
from coxinfluence.models.cox import (
    ConvergenceWarning,
    CoxFit,
    NotConvergedError,
    cox_gradient,
    cox_hessian,
    cox_loss,
    fit_cox,
)
from coxinfluence.models.fine_gray import FineGrayFit, fit_fine_gray
from coxinfluence.models.multistate import MultiStateFit, fit_multistate

# the families register themselves with the one dispatcher when imported
# (coxinfluence.influence_functions.registry): import them all here
from . import datasets, metrics, targets
from .influence_functions import cause_specific_audit as _cause_specific_family  # noqa: F401
from .influence_functions import fine_gray_audit as _fine_gray_family  # noqa: F401
from .integrations import sksurv as _sksurv_family  # noqa: F401

__version__ = "0.1.0"

__all__ = [
    "CoxData", "CoxFit", "InputError", "CoxInputError", "ConvergenceWarning",
    "LeaveOneOutWarning",
    "NotConvergedError",
    "fit_cox", "cox_loss", "cox_gradient", "cox_hessian", "fit_aft", "AFTFit",
    "fit_fine_gray", "FineGrayFit",
    "fit_cause_specific", "CauseSpecificFit",
    "fit_multistate", "MultiStateFit",
    "residuals", "ph_test",
    "reid_influence", "score_residuals", "vif", "exact_loo", "newton_loo",
    "influence", "InfluenceResult", "targets", "datasets", "metrics",
    "CumulativeIncidence", "AFTSurvival", "SurvivalQuantile",
    "RiskScore", "LifelinesSurvival", "TargetBeyondFollowUpWarning",
    "TopNotVerifiedWarning",
    "evaluate", "compare", "calibration",
]

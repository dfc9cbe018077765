"""Every target of ``ci.influence``, one per quantity: ``ci.targets`` (``import
coxinfluence.targets`` works as well). The generic definitions live in
``coxinfluence.audit.targets`` (the quantities, dispatched on the model) and the
families' implementations in ``coxinfluence.families`` (``cox_targets``,
``aft_targets``, ``fine_gray_targets``, ``lifelines_targets``, ``sksurv_targets``), which
register themselves when imported; this module imports them all and re-exports them.

- ``"coef"``, ``"hr"``, ``"tr"`` (strings, or :class:`Coefficients`, :class:`HazardRatios`,
  :class:`TimeRatios`): the parameters, the hazard ratios, an AFT model's time ratios;
- :class:`Survival` ``(X_new, times)``: the survival probability of new patients, each
  model's own (Cox, AFT, lifelines' parametric models, scikit-survival);
- :class:`LinearPredictor` ``(X_new)``: the linear predictor (a Cox model's ``x'beta``, not
  centred; a scikit-survival estimator's ``predict``);
- :class:`RelativeRisk` ``(X_new)``: ``exp(x'beta)`` of a Cox model (the paper's target);
- :class:`Quantile` ``(X_new, p=0.5)``: the quantiles of the survival time (AFT);
- :class:`CumulativeIncidence` ``(X_new, times)``: a Fine-Gray model's cumulative incidence;
- :class:`AbsoluteRisk` ``(X_new, times, cause=1)``: the absolute risk of a cause under
  cause-specific Cox models (R's ``predict(CSC, newdata, times, cause)``);
- :class:`StateProbability` ``(X_new, times, state=None)``: a multi-state model's state
  occupancy probabilities (Aalen-Johansen, R's ``survfit(fit, newdata)$pstate``);
- :class:`BrierScore`, :class:`IntegratedBrierScore`, :class:`TimeDependentAUC`,
  :class:`Concordance` ``(X_test, time_test, event_test, ...)``: a test set's performance
  (``coxinfluence.evaluation.targets``; ``ci.evaluate`` gives the metrics with their
  standard errors), defined for every model through its own predictions.

A quantity is dispatched on the model (``Dispatched``): ``ci.influence`` evaluates the
model family's own implementation, which a family registers (:func:`register_target`).
Each equals the model's prediction (``coxinfluence.models.predictions``) at the fitted
parameters.

Every target is a :class:`Target`: it names its entries (``columns``), has a value at any
coefficients (``value``) and a Jacobian at the fitted ones (``jacobian``); a first-order
method's change of the target is ``J (theta_hat_{-i} - theta_hat)``, plus the data effect
for a target whose baseline is estimated from the data (a Cox model's ``S(t|x)``, a
Fine-Gray model's ``F(t|x)``). A target time past the last event time of the data is
warned about (:class:`TargetBeyondFollowUpWarning`).

Examples
--------
>>> import coxinfluence as ci
>>> from lifelines.datasets import load_rossi
>>> rossi = load_rossi()
>>> X = rossi[["fin", "age", "prio"]]
>>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
>>> res = ci.influence(fit, target=ci.targets.Survival(X.iloc[:2], [20, 40]), method="vif")
>>> res.loo_change.columns.tolist()
['S(20|0)', 'S(40|0)', 'S(20|1)', 'S(40|1)']
"""
from coxinfluence.audit.targets import (  # noqa: F401 (the engine's helpers, re-exported)
    Coefficients,
    Dispatched,
    HazardRatios,
    LinearPredictor,
    Quantile,
    Survival,
    Target,
    TargetBeyondFollowUpWarning,
    describe_targets,
    followup_notes,
    implementation_of,
    register_target,
    resolve_target,
    target_change,
    target_exact,
    target_named,
)

# the families' implementations, registered when imported (coxinfluence.families)
from coxinfluence.evaluation.targets import (
    BrierScore,
    Concordance,
    IntegratedBrierScore,
    TimeDependentAUC,
)
from coxinfluence.families.aft_targets import AFTSurvival, SurvivalQuantile, TimeRatios  # noqa: F401
from coxinfluence.families.cause_specific_targets import AbsoluteRisk
from coxinfluence.families.cox_targets import (  # noqa: F401
    CoxLinearPredictor,
    CoxSurvival,
    RelativeRisk,
    baseline_ctype,
    baseline_cumhaz,
)
from coxinfluence.families.fine_gray_targets import CumulativeIncidence
from coxinfluence.families.lifelines_targets import LifelinesSurvival  # noqa: F401
from coxinfluence.families.multistate_targets import StateProbability
from coxinfluence.families.sksurv_targets import RiskScore  # noqa: F401

# the public names: the targets and what a family author registers; the engine's helpers
# (resolve_target, target_change, target_exact, baseline_cumhaz, ...) stay importable
# from here but are not the API
__all__ = ["Target", "Coefficients", "HazardRatios", "TimeRatios", "LinearPredictor",
           "RelativeRisk", "Survival", "Quantile", "CumulativeIncidence", "AbsoluteRisk",
           "StateProbability",
           "BrierScore", "IntegratedBrierScore", "TimeDependentAUC", "Concordance",
           "TargetBeyondFollowUpWarning", "register_target"]

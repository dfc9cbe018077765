"""The old names of targets, kept as deprecated aliases for one release: each is its
family's implementation (same arguments, same values) and warns, when constructed, with a
``DeprecationWarning`` naming the target of ``ci.targets`` that replaces it.

- ``ci.AFTSurvival`` -> ``ci.targets.Survival`` (on an AFT model);
- ``ci.LifelinesSurvival`` -> ``ci.targets.Survival`` (on a lifelines parametric model);
- ``ci.SurvivalQuantile`` -> ``ci.targets.Quantile``;
- ``ci.RiskScore`` -> ``ci.targets.LinearPredictor`` (on a scikit-survival model).
"""
from __future__ import annotations

import warnings

from coxinfluence.audit.aft_targets import AFTSurvival as _AFTSurvival
from coxinfluence.audit.aft_targets import SurvivalQuantile as _SurvivalQuantile
from coxinfluence.audit.lifelines_targets import LifelinesSurvival as _LifelinesSurvival
from coxinfluence.audit.sksurv_targets import RiskScore as _RiskScore

__all__ = ["AFTSurvival", "LifelinesSurvival", "SurvivalQuantile", "RiskScore"]


def _deprecated(impl, old, new):
    """A subclass of ``impl`` named ``old`` that warns, when constructed, to use ``new``."""

    def __init__(self, *args, **kwargs):
        warnings.warn(f"ci.{old} is deprecated and will be removed in the next release: use "
                      f"{new} (the same target, dispatched on the model)",
                      DeprecationWarning, stacklevel=2)
        impl.__init__(self, *args, **kwargs)

    return type(old, (impl,), {"__init__": __init__, "__module__": __name__,
                               "__doc__": f"Deprecated: use {new}. {impl.__doc__}"})


AFTSurvival = _deprecated(_AFTSurvival, "AFTSurvival", "ci.targets.Survival(X_new, times)")
LifelinesSurvival = _deprecated(_LifelinesSurvival, "LifelinesSurvival",
                                "ci.targets.Survival(df_new, times)")
SurvivalQuantile = _deprecated(_SurvivalQuantile, "SurvivalQuantile",
                               "ci.targets.Quantile(X_new, p)")
RiskScore = _deprecated(_RiskScore, "RiskScore", "ci.targets.LinearPredictor(X_new)")

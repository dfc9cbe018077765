"""What the new-patient targets of the Fine-Gray and AFT models share: their times checked,
and the view of a fit that the new-patient helpers of :mod:`coxinfluence.audit.targets`
read (covariate columns, stratum labels)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

__all__ = ["positive_times", "covariate_view"]


def positive_times(times):
    """``times`` as a non-empty 1-D float64 array of finite positive numbers (a copy)."""
    t = np.array(times, dtype=np.float64, ndmin=1)
    if t.ndim != 1 or t.size == 0 or not np.isfinite(t).all() or (t <= 0).any():
        raise ValueError(f"times must be finite positive numbers; got {times!r}")
    return t


def covariate_view(columns, strata_labels=None):
    """What the new-patient helpers of :mod:`coxinfluence.audit.targets` read of a fit:
    its covariate ``columns`` and stratum labels."""
    return SimpleNamespace(data=SimpleNamespace(columns=list(columns),
                                                strata_labels=strata_labels))

"""What the new-patient targets of the Fine-Gray and AFT models share: their times checked
(:func:`coxinfluence.data.new_patients.positive_times`), and the view of a fit that the
new-patient helpers of :mod:`coxinfluence.audit.targets` read (covariate columns, stratum
labels)."""
from __future__ import annotations

from types import SimpleNamespace

from coxinfluence.data.new_patients import positive_times

__all__ = ["positive_times", "covariate_view"]


def covariate_view(columns, strata_labels=None):
    """What the new-patient helpers of :mod:`coxinfluence.audit.targets` read of a fit:
    its covariate ``columns`` and stratum labels."""
    return SimpleNamespace(data=SimpleNamespace(columns=list(columns),
                                                strata_labels=strata_labels))

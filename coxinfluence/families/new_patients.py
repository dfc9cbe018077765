"""What the families' targets of new patients share: the new patients as a design matrix
in the fit's column order (:func:`new_patients`), their times checked
(:func:`coxinfluence.data.new_patients.positive_times`), and the view of a fit that
:func:`new_patients` reads (covariate columns, stratum labels)."""
from __future__ import annotations

from types import SimpleNamespace

from coxinfluence.data.new_patients import new_patient_matrix, positive_times

__all__ = ["positive_times", "covariate_view", "new_patients"]


def new_patients(X_new, fit, transform=None):
    """New patients as an (m, d) float64 array in the fit's column order, and their labels
    as text (:func:`coxinfluence.data.new_patients.new_patient_matrix`; ``transform``: the
    raw new-patient frame -> the design, None: ``X_new`` is the design)."""
    arr, index = new_patient_matrix(X_new, fit.data.columns, transform)
    return arr, [str(v) for v in index]


def covariate_view(columns, strata_labels=None):
    """What :func:`new_patients` and the Cox family's new-patient helpers read of a fit:
    its covariate ``columns`` and stratum labels."""
    return SimpleNamespace(data=SimpleNamespace(columns=list(columns),
                                                strata_labels=strata_labels))

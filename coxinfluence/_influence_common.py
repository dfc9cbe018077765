"""Shared plumbing of the influence functions: the fitted model's data and scale."""
from __future__ import annotations

import numpy as np

from ._data import wrap_rows


def _fit_data(fit):
    from .cox import CoxFit
    if not isinstance(fit, CoxFit):
        raise TypeError(f"expected a CoxFit from coxinfluence.fit_cox; got {type(fit).__name__}")
    return fit.data


def paper_scale(fit, delta_sorted):
    """``-(H/n)^{-1} delta`` for per-row gradient differences ``delta`` (sorted order),
    returned in the caller's row order and index (the paper's scale, DESIGN.md)."""
    data = fit.data
    sol = np.linalg.solve(fit.information, delta_sorted.T).T
    return wrap_rows(data.to_caller_order(-data.n * sol), data)

"""The low-level functions for any fit: ``ci.vif``, ``ci.reid_influence``,
``ci.newton_loo``, ``ci.exact_loo``.

Each takes every fit ``ci.influence`` audits by itself and returns one convention, with
``n`` the number of units and ``fit.coef`` the fitted parameters:

    ci.vif(fit)            = -n * ci.influence(fit, method="vif").theta_change
    ci.reid_influence(fit) = -n * ci.influence(fit, method="reid").theta_change
    ci.newton_loo(fit)     = fit.coef + ci.influence(fit, method="newton").theta_change
    ci.exact_loo(fit)      = fit.coef + ci.influence(fit, method="exact").theta_change

``vif`` and ``reid_influence`` are on the paper's scale (``IF_n``, ``VIF_n``, approximating
``n (theta_hat - theta_hat_{-g})``); ``newton_loo`` and ``exact_loo`` are (estimates of)
the refitted coefficients ``theta_hat_{-g}``, not changes.

A ``CoxFit`` takes its own closed forms, unchanged
(:func:`coxinfluence.influence_functions.vif.vif`,
:func:`~coxinfluence.influence_functions.reid.reid_influence`,
:func:`~coxinfluence.influence_functions.refits.newton_loo`,
:func:`~coxinfluence.influence_functions.refits.exact_loo`: units, ``groups=``, the
algorithms' options are documented there). Every other fit goes through the seam
``ci.influence`` uses for it (:mod:`coxinfluence.influence_functions.seam`): an
``AFTFit`` (:class:`~coxinfluence.influence_functions.aft_audit.AFTAudit`: rows, the
subjects of ``fit_aft(..., id=)``, or the clusters ``groups``; a decomposable loss, so the
VIF is Reid's IF exactly), a ``FineGrayFit``
(:class:`~coxinfluence.influence_functions.fine_gray_audit.FineGrayAudit`: the subjects,
one row each; a deletion also re-estimates the censoring Kaplan-Meier), a
``DecomposableFit`` (:class:`~coxinfluence.influence_functions.decomposable_audit.
DecomposableAudit`), or a seam object itself (an autodiff ``AutodiffModel``). A lifelines,
statsmodels or scikit-survival model keeps no training data:
``ci.influence(model, data, method=...)`` audits it.

This module sits above the seams (which use the Cox closed forms' modules), so the
dispatch adds no import cycle.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError
from coxinfluence.influence_functions import refits as _refits
from coxinfluence.influence_functions import reid as _reid
from coxinfluence.influence_functions import vif as _vif
from coxinfluence.influence_functions.aft_audit import AFTAudit
from coxinfluence.influence_functions.decomposable_audit import DecomposableAudit, DecomposableFit
from coxinfluence.influence_functions.fine_gray_audit import FineGrayAudit
from coxinfluence.influence_functions.refits import warn_undefined
from coxinfluence.influence_functions.seam import AuditModel
from coxinfluence.models.aft import AFTFit
from coxinfluence.models.cox import ConvergenceWarning, CoxFit, NotConvergedError
from coxinfluence.models.fine_gray import FineGrayFit

__all__ = ["vif", "reid_influence", "newton_loo", "exact_loo", "family_seam"]

#: the Cox algorithms' names (``method=`` of ``vif`` and ``newton_loo``)
_COX_METHODS = ("auto", "series", "direct")


def vif(fit, *, method="auto", groups=None):
    """The VIF of every unit on the paper's scale, ``VIF_n(g) = -(H/n)^{-1} (grad L -
    grad L_{-g})`` at ``theta_hat``: ``-n * ci.influence(fit, method="vif").theta_change``,
    ``n`` the number of units, approximating ``n (theta_hat - theta_hat_{-g})``.

    fit : a ``CoxFit``, ``AFTFit``, ``FineGrayFit``, ``DecomposableFit`` or a seam object
        (module docstring). groups : clusters deleted whole (one label per row, caller's
        order; not for a Fine-Gray fit, whose units are its subjects). method : the Cox
        algorithm (:func:`coxinfluence.influence_functions.vif.vif`); the other families
        have one closed form, whichever name is given.

    Returns (n_units, d): rows in the caller's order (a DataFrame with the caller's index
    for pandas input, else an ndarray), subjects and clusters as a DataFrame indexed by
    their sorted labels; columns the fit's parameters.
    """
    if isinstance(fit, CoxFit):
        return _vif.vif(fit, method=method, groups=groups)
    model = family_seam(fit, groups, "vif", method=method)
    return _wrap(model, -_n_units(model) * model.change("vif"))


def reid_influence(fit, groups=None):
    """Reid's (1985) empirical influence function ``IF_n(g)`` of every unit on the paper's
    scale: ``-n * ci.influence(fit, method="reid").theta_change``, ``n`` the number of
    units. For a ``CoxFit`` ``IF_n / n`` is R's ``resid(fit, "dfbeta")``; for an
    ``AFTFit`` it is the VIF (a decomposable loss) and ``w_i`` times R's
    ``residuals(survreg, "dfbeta")`` (per unit of case weight); for a ``FineGrayFit``
    crr's influence function, censoring term included (``sum_g (IF_n(g)/n)(IF_n(g)/n)'``
    is crr's sandwich variance). Arguments and layout as :func:`vif`'s."""
    if isinstance(fit, CoxFit):
        return _reid.reid_influence(fit, groups=groups)
    model = family_seam(fit, groups, "reid_influence")
    return _wrap(model, -_n_units(model) * model.change("reid"))


def newton_loo(fit, *, groups=None, method="auto"):
    """One-step Newton estimates of the refitted coefficients, ``theta_hat -
    H_{-g}^{-1} grad L_{-g}(theta_hat)``: ``fit.coef + ci.influence(fit,
    method="newton").theta_change`` (for an ``AFTFit`` ``H_{-g} = H - C_g`` exactly; for a
    ``FineGrayFit`` the deleted gradients and Hessians in closed form, the censoring
    Kaplan-Meier re-estimated). NaN, with a
    :class:`~coxinfluence.influence_functions.refits.LeaveOneOutWarning`, where the
    deleted problem has no estimate. Arguments and layout as :func:`vif`'s."""
    if isinstance(fit, CoxFit):
        return _refits.newton_loo(fit, groups=groups, method=method)
    model = family_seam(fit, groups, "newton_loo", method=method)
    theta = np.asarray(model.coef, dtype=np.float64) + model.change("newton")
    warn_undefined(_SeamUnits(model), np.flatnonzero(~np.isfinite(theta).all(axis=1)),
                   "one-step Newton leave-one-out")
    return _wrap(model, theta)


def exact_loo(fit, *, groups=None, executor=None, progress=None, batch_size=None, tol=None,
              max_iter=50, n_chunks=None):
    """The exact leave-one-out coefficients ``theta_hat_{-g}`` of every unit (refits without
    the unit, to ``max |gradient| <= 1e-10``): ``fit.coef + ci.influence(fit,
    method="exact").theta_change``; ``exact_loo(fit) - fit.coef`` is the exact change.

    A refit that does not exist (the deletion leaves no maximum) or failed is NaN (where a
    covariate loses its rank: those coefficients), with one
    :class:`~coxinfluence.influence_functions.refits.LeaveOneOutWarning` naming the units;
    a fit that did not converge is refused (:class:`~coxinfluence.NotConvergedError`).
    ``progress`` and ``executor`` as ``ci.influence``'s; ``batch_size``, ``tol``,
    ``max_iter``, ``n_chunks`` are the Cox refits' options
    (:func:`coxinfluence.influence_functions.refits.exact_loo`), an error for another fit.
    Arguments and layout otherwise as :func:`vif`'s."""
    if isinstance(fit, CoxFit):
        return _refits.exact_loo(fit, groups=groups, executor=executor, progress=progress,
                                 batch_size=batch_size, tol=tol, max_iter=max_iter,
                                 n_chunks=n_chunks)
    cox_only = {"batch_size": batch_size, "tol": tol, "n_chunks": n_chunks,
                "max_iter": None if max_iter == 50 else max_iter}
    given = [name for name, value in cox_only.items() if value is not None]
    if given:
        raise InputError(f"exact_loo: {', '.join(given)} apply to a CoxFit only; this is a "
                         f"{type(fit).__name__}")
    model = family_seam(fit, groups, "exact_loo", refuse=True)
    res = model.refit(progress=progress, executor=executor)
    warn_undefined(_SeamUnits(model), res.codes[~res.ok], "exact leave-one-out",
                   failed=res.codes[res.status == "refit_failed"])
    return _wrap(model, res.theta)


def family_seam(fit, groups, what, method=None, refuse=False):
    """The seam ``ci.influence(fit)`` uses for a fit of another family than Cox
    (``AFTFit`` -> ``AFTAudit(fit, groups)``, ``FineGrayFit`` -> ``FineGrayAudit``, a
    ``DecomposableFit`` -> ``DecomposableAudit``, a seam object itself). A fit that did not
    converge gets a :class:`~coxinfluence.ConvergenceWarning`, or, with ``refuse=True``
    (exact refits), a :class:`~coxinfluence.NotConvergedError`, as a ``CoxFit`` does
    (:func:`coxinfluence.models.cox.check_fit`). ``what``: the caller's name, for
    messages; ``method``: the Cox algorithm's name, checked."""
    if method is not None and method not in _COX_METHODS:
        raise ValueError(f"method must be one of {_COX_METHODS}; got {method!r}")
    if isinstance(fit, AFTFit):
        model = AFTAudit(fit, groups)
    elif isinstance(fit, DecomposableFit):
        model = DecomposableAudit(fit, groups)
    elif isinstance(fit, (FineGrayFit, AuditModel)):
        if groups is not None:
            raise InputError(f"{what}: groups= is not available for this model: its units "
                             "are fixed by the model (a Fine-Gray fit's: its subjects)")
        model = FineGrayAudit(fit) if isinstance(fit, FineGrayFit) else fit
    else:
        raise TypeError(f"{what}: expected a fit of coxinfluence (CoxFit from ci.fit_cox, "
                        "AFTFit from ci.fit_aft, FineGrayFit from ci.fit_fine_gray) or an "
                        f"audit seam; got {type(fit).__name__}. A lifelines, statsmodels or "
                        "scikit-survival model keeps no training data: use "
                        "ci.influence(model, data, method=...)")
    if not model.converged:
        msg = (f"{what}: the {model.model_name} fit did not converge: influence is measured "
               "against a maximum that does not exist")
        if refuse:
            raise NotConvergedError(msg)
        warnings.warn(msg + "; the values returned are not meaningful", ConvergenceWarning,
                      stacklevel=3)
    return model


def _n_units(model):
    """The seam's number of units: the ``n`` of the paper's scale."""
    return len(model.unit_labels)


def _wrap(model, values):
    """Per-unit values (U, d) of a seam laid out as for a ``CoxFit``: an ndarray for rows
    given as arrays, else a DataFrame indexed by the unit labels (the caller's index for
    rows) with the parameters' names as columns."""
    values = np.asarray(values, dtype=np.float64)
    if model.units_are_rows and getattr(model.fit, "index", None) is None:
        return values
    return pd.DataFrame(values, index=model.unit_labels, columns=list(model.columns))


class _SeamUnits:
    """What :func:`~coxinfluence.influence_functions.refits.warn_undefined` reads of a
    seam's units: their labels and whether they are rows."""

    def __init__(self, model):
        self.labels = model.unit_labels
        self.is_rows = bool(model.units_are_rows)

    def describe(self, codes):
        return list(self.labels[np.asarray(codes, dtype=int)])

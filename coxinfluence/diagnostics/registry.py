"""Residuals for every model ``ci.influence`` takes: one entry point, one table of families.

:func:`residuals` resolves the user's model as the audit does
(:func:`coxinfluence.influence_functions.registry.audit_model`: our fits, lifelines,
statsmodels), then looks the resolved fit's class up in a small table filled by
:func:`register_residuals`: each family (Cox, AFT, Fine-Gray) registers the kinds it
defines and the function that computes them. The generic function never asks which
model it holds; a kind the fit's family lacks is refused naming the valid ones, and, when
another family has it, which.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from coxinfluence.data.dispatch import choose, replace
from coxinfluence.data.inputs import InputError
from coxinfluence.influence_functions.registry import audit_model

__all__ = ["register_residuals", "residuals", "residual_kinds"]


@dataclass(frozen=True)
class ResidualFamily:
    """A registered family: ``fit_class`` (the resolved fit's class), ``model`` (its
    name in messages, e.g. "Cox"), ``kinds`` (the kinds it defines, the first its
    default), ``function(fit, kind, collapse, weighted) -> Series or DataFrame``."""

    fit_class: type
    model: str
    kinds: tuple
    function: Callable


_TABLE: dict = {}


def register_residuals(fit_class, kinds, function, *, model=None):
    """Register the residuals of a family of fits with :func:`residuals`.

    The table is keyed by the fit's class, so ``ci.residuals`` dispatches without asking
    which model it holds, by the package's one dispatch rule
    (:func:`coxinfluence.data.dispatch.choose`): the most specific class of the fit's
    MRO wins. Registering a class again replaces its entry.

    Parameters
    ----------
    fit_class : type
        The class of the fits (``CoxFit``, ``AFTFit``, ``FineGrayFit``, or a user's).
    kinds : sequence of str
        The kinds the family defines; the first is the default.
    function : callable
        ``function(fit, kind, *, collapse, weighted)`` returning a pandas Series or
        DataFrame.
    model : str, optional
        The family's name in messages (default the class name).

    Returns
    -------
    ResidualFamily
        The registered entry (``fit_class``, ``model``, ``kinds``, ``function``).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class MeanFit:
    ...     y: np.ndarray
    >>> def centred(fit, kind, *, collapse=None, weighted=None):
    ...     return pd.Series(fit.y - fit.y.mean(), name=kind)
    >>> entry = ci.diagnostics.register_residuals(MeanFit, ["centred"], centred,
    ...                                           model="Mean")
    >>> ci.residuals(MeanFit(np.array([1.0, 2.0, 6.0]))).tolist()
    [-2.0, -1.0, 3.0]
    """
    entry = ResidualFamily(fit_class, model or fit_class.__name__, tuple(kinds), function)
    return replace(_TABLE, fit_class, entry)


def residual_family(fit) -> ResidualFamily:
    """The registered family of ``fit`` (the most specific class of its MRO in the table:
    :func:`coxinfluence.data.dispatch.choose`)."""
    entry = _entry_of(fit)
    if entry is not None:
        return entry
    known = ", ".join(f"{e.model} ({e.fit_class.__name__})" for e in _TABLE.values())
    raise TypeError(f"no residuals are defined for {type(fit).__name__}; they are for "
                    f"{known}")


def _entry_of(fit):
    return choose(fit, ((e, cls, None) for cls, e in _TABLE.items()))


def resolve_fit(model, data=None, **options):
    """``(fit, groups)``: the fit behind a user's model (our fits are used as they are;
    lifelines, statsmodels and scikit-survival models are resolved as ``ci.influence``
    resolves them, ``options`` such as scikit-survival's ``y=`` passed on) and the
    model's own units where the library names them (lifelines' ``cluster_col``), else
    None."""
    if _entry_of(model) is not None:
        if data is not None:
            raise InputError("data= is for models that do not keep their training data "
                             "(lifelines, statsmodels); a coxinfluence fit keeps its own")
        if options:
            raise InputError(f"{', '.join(f'{k}=' for k in options)} not available for a "
                             "coxinfluence fit")
        return model, None
    _, resolved = audit_model(model, data, **options)
    return resolved.fit, resolved.groups


def _check_kind(entry, kind):
    if not isinstance(kind, str):
        raise InputError(f"kind must be a string; got {type(kind).__name__}")
    if kind in entry.kinds:
        return kind
    owners = [e.model for e in _TABLE.values() if kind in e.kinds]
    valid = ", ".join(repr(k) for k in entry.kinds)
    if owners:
        raise InputError(f"kind={kind!r} is not defined for {entry.model} models; it is a "
                         f"residual of {' and '.join(owners)} models. For {entry.model} "
                         f"models the kinds are {valid}")
    raise InputError(f"unknown residual kind {kind!r}; for {entry.model} models the kinds "
                     f"are {valid}")


def collapse_rows(values, labels, index=None):
    """Sum per-row ``values`` (caller's row order; Series or DataFrame) over ``labels``
    (one per row), as R's ``rowsum``: one row per label, sorted labels."""
    if isinstance(labels, pd.Series) and index is not None and labels.index.equals(index):
        labels = labels.to_numpy()
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.shape[0] != len(values):
        raise InputError(f"collapse must have one label per row ({len(values)}); got shape "
                         f"{lab.shape}")
    if pd.isna(lab).any():
        raise InputError("collapse has missing labels")
    out = values.groupby(lab, sort=True).sum()
    out.index.name = "unit"
    return out


def residuals(model, data=None, kind=None, collapse=None, *, weighted=None, **options):
    """Residuals of a fitted survival model, as R's ``residuals()`` gives them.

    Cox models (``ci.fit_cox``, lifelines' ``CoxPHFitter`` and ``CoxTimeVaryingFitter``,
    statsmodels' ``PHReg``): R's ``residuals.coxph`` types; AFT models (``ci.fit_aft``,
    lifelines' AFT fitters): R's ``residuals.survreg`` types; Fine-Gray fits
    (``ci.fit_fine_gray``): cmprsk's ``crr`` residuals and the subject-level score and
    dfbeta (the influence function the audit uses, with the censoring-weight term).

    Parameters
    ----------
    model : fitted model
        Any model ``ci.influence`` takes.
    data : pandas.DataFrame, optional
        The training data, for models that do not keep it (lifelines, statsmodels).
    kind : str, optional
        Cox: "martingale" (default), "deviance", "score", "schoenfeld", "scaledsch",
        "dfbeta", "dfbetas", "partial". AFT: "response" (default), "deviance",
        "working", "dfbeta", "dfbetas", "ldcase", "ldresp", "ldshape". Fine-Gray:
        "schoenfeld" (default), "score", "dfbeta".
    collapse : bool or array_like, optional
        Sum the per-row residuals per subject, as R's ``collapse=``: True for the fit's
        subjects (``fit_cox(..., id=)``, a lifelines ``CoxTimeVaryingFitter``'s
        ``id_col``, else a lifelines ``cluster_col``), or one label per row (caller's
        order). Not for residuals with one row per event.
    weighted : bool, optional
        Multiply by the case weights, as R's ``weighted=``; default R's (True for
        dfbeta and dfbetas of a Cox model, else False).
    **options
        Options of the model's family, as ``ci.influence`` takes them (scikit-survival's
        ``y=``).

    Returns
    -------
    pandas.Series or pandas.DataFrame
        One value (or one row of covariates) per row, with the caller's index; per
        subject (sorted labels) when collapsed; Schoenfeld-type residuals one row per
        event, indexed by event time in R's order (strata, then time).

    Raises
    ------
    InputError
        An unknown kind (the message names the valid ones for the model), a kind the
        model has no definition for (the message says which model has it), or bad
        ``collapse`` labels.
    TypeError
        A model no registered family accepts.

    See Also
    --------
    coxinfluence.ph_test : The proportional-hazards test (R's ``cox.zph``).

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> ci.residuals(fit, kind="martingale").round(4).head(3)
    0    0.9183
    1    0.8180
    2    0.5060
    Name: martingale, dtype: float64

    R gives the same: ``residuals(coxph(Surv(week, arrest) ~ fin + age + prio, rossi))``.
    Schoenfeld residuals have one row per event, indexed by its time:

    >>> ci.residuals(fit, kind="schoenfeld").round(3).head(3)
            fin     age   prio
    time
    1.0  -0.402  -2.515 -4.266
    2.0  -0.403  21.479 -2.276
    3.0  -0.403   7.492 -1.277
    >>> ci.residuals(fit, kind="dfbeta").shape
    (432, 3)
    """
    fit, groups = resolve_fit(model, data, **options)
    entry = residual_family(fit)
    if collapse is True and groups is not None and not fit.has_subjects:  # FitProtocol
        collapse = np.asarray(groups)          # the library's units: lifelines' cluster_col
    kind = entry.kinds[0] if kind is None else _check_kind(entry, kind)
    return entry.function(fit, kind, collapse=collapse, weighted=weighted)


def residual_kinds(model, data=None, **options) -> tuple:
    """The residual kinds defined for ``model`` (its family's entry in the table), or
    ``()`` for a model no registered family accepts.

    A generic query for code that offers model checks when a model has them (the audit's
    report): it asks the table keyed by the fit's class, never which model it holds.

    Parameters
    ----------
    model : fitted model
        A coxinfluence fit or any model ``ci.influence`` takes.
    data : pandas.DataFrame, optional
        The training data, for models that do not keep it (lifelines, statsmodels).
    **options
        Options of the model's family, as ``ci.influence`` takes them.

    Returns
    -------
    tuple of str
        The kinds (the first the default), empty when the model has no residuals.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.diagnostics.registry import residual_kinds
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> "deviance" in residual_kinds(fit), "scaledsch" in residual_kinds(fit)
    (True, True)
    >>> residual_kinds(object())
    ()
    """
    entry = _entry_of(model)
    if entry is not None:
        return entry.kinds
    try:
        fit, _ = resolve_fit(model, data, **options)
        return residual_family(fit).kinds
    except (TypeError, ValueError):
        return ()

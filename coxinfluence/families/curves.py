"""The report's prediction curves: a family's curves of a reference patient from the full
fit and refitted without each of the most influential units (issue 47, item 4).

A family whose predictions are curves over time (the absolute risk of a cause, the state
occupancy probabilities) registers a *curves part* for the class of its fits,
:func:`register_curves`, and the report (:mod:`coxinfluence.report`) shows them in one
figure with a caption (:func:`curves_of`, :func:`curves_figure`) without naming the family.
The table dispatches by the package's one rule (:func:`coxinfluence.data.dispatch.choose`:
the most specific registered class wins, the latest registration a tie, a
re-registration replaces); a fit without a registered part gets no curves.

A part is ``function(result, theta_loo, codes) -> Curves``: ``result`` the
:class:`~coxinfluence.audit.result.InfluenceResult`, ``theta_loo`` (U, d) the refitted
coefficients of the units ``codes`` (their positions in ``result.model.unit_labels``; the
other rows NaN), exact refits (:func:`refitted_coefficients`: the audit's own where it has
them, else the seam's refit loop), so the part evaluates its curves on each refitted model
(its target's ``refit_values``: the coefficients refitted and every baseline re-estimated
without the unit). Which units: :func:`curve_units`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from coxinfluence.data.dispatch import choose, replace

__all__ = ["Curves", "register_curves", "curves_part", "curves_of", "curve_units",
           "refitted_coefficients", "curves_figure", "caption", "CURVES", "TOP"]

#: fit class -> its curves part; :func:`register_curves` adds one
CURVES: dict[type, Callable] = {}
#: how many of the most influential units the report refits the curves without
TOP = 3


@dataclass(frozen=True)
class Curves:
    """A reference patient's curves from the full fit and refitted without units.

    ``full``: one row per time (index ``time``), one column per panel (a cause's absolute
    risk, a state's probability); ``refitted``: unit label -> a frame like ``full``, the
    curves of the model refitted without that unit; ``patient``: the reference patient's
    label; ``what``: the curves in words (plain text: "the absolute risk of cause 1 ..."),
    the start of the caption (:func:`caption`); ``ylabel``, ``title`` (each panel's title
    is its column's name); ``patient_note``: who the reference patient is, when its label
    does not say it ("the covariate means of the training rows"); ``left_out``: the units
    whose refit did not give a model (undefined or failed), not drawn.
    """

    full: pd.DataFrame
    refitted: dict
    patient: str
    what: str
    ylabel: str = "probability"
    title: str = ""
    patient_note: str = ""
    left_out: tuple = field(default_factory=tuple)

    @property
    def times(self) -> np.ndarray:
        """(T,) the curves' times."""
        return self.full.index.to_numpy(dtype=np.float64)


def register_curves(fit_class: type, function: Callable) -> Callable:
    """Register ``function`` as the curves part of the fits of ``fit_class``.

    Parameters
    ----------
    fit_class : type
        The class of the family's fits (its subclasses too; the most specific wins).
    function : callable
        ``function(result, theta_loo, codes) -> Curves`` (module docstring).

    Returns
    -------
    callable
        ``function``.

    Examples
    --------
    >>> from coxinfluence.families.curves import CURVES, curves_part, register_curves
    >>> class MyFit: ...
    >>> part = register_curves(MyFit, lambda result, theta_loo, codes: None)
    >>> curves_part(MyFit()) is part
    True
    >>> del CURVES[MyFit]
    """
    return replace(CURVES, fit_class, function)


def curves_part(fit) -> Callable | None:
    """The curves part registered for ``fit``'s class (the one dispatch rule), or None.

    Parameters
    ----------
    fit : object
        A fitted model.

    Returns
    -------
    callable or None
        Its part.

    Examples
    --------
    >>> import numpy as np
    >>> import coxinfluence as ci
    >>> from coxinfluence.families.curves import curves_part
    >>> fit = ci.fit_cox(np.array([0.0, 1, 0, 1, 0, 1]), np.arange(1.0, 7.0), [1, 1, 0, 1, 1, 1])
    >>> print(curves_part(fit))                     # a Cox fit: no curves
    None
    """
    return choose(fit, [(f, cls, None) for cls, f in CURVES.items()])


def curve_units(result, k=TOP) -> pd.Index:
    """The units the curves are refitted without: the ``k`` largest by the target's change
    (``result.top(k, by="target")``) when the target is not the coefficients, else by the
    likelihood displacement (``result.top(k)``), as the report's tables rank them; units
    without a number (undefined deletions) left out.

    Parameters
    ----------
    result : InfluenceResult
        The audit.
    k : int, default :data:`TOP`
        How many.

    Returns
    -------
    pandas.Index
        Their labels, largest first.
    """
    k = min(int(k), len(result.loo_change))
    by = None if result.target.name == "coef" else "target"
    top = result.top(k, by=by)
    column = "likelihood_displacement" if by is None else "target_influence"
    return top.index[np.isfinite(top[column].to_numpy(dtype=np.float64))]


def refitted_coefficients(result, labels):
    """Exact refits without each unit of ``labels``: the audit's own refits where it has
    them (``result.refits``), the seam's refit loop for the others.

    Parameters
    ----------
    result : InfluenceResult
        The audit.
    labels : sequence
        Unit labels.

    Returns
    -------
    tuple
        ``(theta_loo (U, d), codes, ok)``: ``theta_loo`` NaN except the rows ``codes``
        (the units' positions in ``result.model.unit_labels``); ``ok`` whether each
        refit gave a model.
    """
    model = result.model
    codes = np.asarray(model.unit_labels.get_indexer(list(labels)), dtype=np.intp)
    theta = np.full((len(model.unit_labels), len(model.coef)), np.nan)
    ok = np.zeros(codes.size, dtype=bool)
    have = {}
    if result.refits is not None:
        refits = result.refits
        have = {int(c): (refits.theta[j], bool(refits.ok[j]))
                for j, c in enumerate(refits.codes)}
    missing = np.array([c for c in codes if int(c) not in have], dtype=np.intp)
    if missing.size:
        refits = model.refit(missing)
        have.update({int(c): (refits.theta[j], bool(refits.ok[j]))
                     for j, c in enumerate(refits.codes)})
    for j, c in enumerate(codes):
        value, good = have[int(c)]
        ok[j] = good and bool(np.all(np.isfinite(value)))
        if ok[j]:
            theta[c] = value
    return theta, codes, ok


def curves_of(result, k=TOP) -> Curves | None:
    """The curves of ``result``'s fit (its registered part), refitted without the top ``k``
    units (:func:`curve_units`, :func:`refitted_coefficients`); None for a fit without a
    curves part, or one that did not converge (no maximum to refit against).

    Parameters
    ----------
    result : InfluenceResult
        The audit.
    k : int, default :data:`TOP`
        How many units.

    Returns
    -------
    Curves or None
        What the report's figure draws.
    """
    part = curves_part(result.fit)
    if part is None or not result.fit_ok:
        return None
    labels = curve_units(result, k)
    theta, codes, ok = refitted_coefficients(result, labels)
    curves = part(result, theta, codes[ok])
    left_out = tuple(labels[~ok])
    if curves is not None and left_out:
        curves = dataclasses.replace(curves, left_out=left_out)
    return curves


def caption(result, curves: Curves) -> str:
    """The figure's caption (plain text): what the curves are (the part's ``what``), the
    units refitted without and how they were chosen, and that the refits are exact.

    Parameters
    ----------
    result : InfluenceResult
        The audit.
    curves : Curves
        Its curves.

    Returns
    -------
    str
        The caption.
    """
    unit = result.unit_name
    one = unit[:-1] if unit.endswith("s") else unit
    labels = ", ".join(str(v) for v in curves.refitted)
    ranking = ("likelihood displacement" if result.target.name == "coef"
               else f"change of the target {result.target.name} (|change| / SE)")
    removal = "" if result.model.units_are_rows else " (all of its rows)"
    note = f" ({curves.patient_note})" if curves.patient_note else ""
    text = (f"{curves.what[0].upper()}{curves.what[1:]} for the reference patient "
            f"{curves.patient}{note}: from the full data (black) and refitted without each of the "
            f"{len(curves.refitted)} {unit} with the largest {ranking} ({labels}). "
            f"Exact refits: the model fitted again without the {one}{removal}, its "
            "coefficients and every baseline hazard re-estimated.")
    if curves.left_out:
        text += (f" Not drawn (no model without them: undefined or failed refit): "
                 f"{', '.join(str(v) for v in curves.left_out)}.")
    return text


def curves_figure(curves: Curves):
    """One figure of ``curves``: a panel per column of ``curves.full``, the full fit's
    curve in black, each refitted one in a colour, as steps (the curves jump at event
    times).

    Parameters
    ----------
    curves : Curves
        The curves.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown).
    """
    from coxinfluence.plotting import pyplot
    plt = pyplot()
    panels = list(curves.full.columns)
    ncols = min(3, len(panels))
    nrows = int(np.ceil(len(panels) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.2 * nrows), squeeze=False,
                             constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    t = curves.times
    for ax, panel in zip(axes.ravel(), panels):
        ax.step(t, curves.full[panel].to_numpy(), where="post", color="black", lw=2.2,
                label="full data")
        for j, (label, frame) in enumerate(curves.refitted.items()):
            ax.step(t, frame[panel].to_numpy(), where="post", lw=1.2,
                    color=colors[j % len(colors)], label=f"without {label}")
        ax.set_title(str(panel), fontsize=10)
        ax.set_xlabel("time")
        ax.set_ylabel(curves.ylabel)
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    axes.ravel()[0].legend(fontsize=8, loc="best")
    if curves.title:
        fig.suptitle(curves.title, fontsize=11)
    return fig

"""The one registration point: objects from users -> models behind the seam.

``ci.influence(model, data, ...)``, ``ci.vif``, ``ci.exact_loo`` and the CLI never ask
which family a model belongs to: they call :func:`audit_model`, which asks each
registered :class:`Family` in turn (``accepts(model)``) and lets the first that accepts
build the seam (:class:`coxinfluence.influence_functions.seam.AuditModel`) and the
:class:`Resolved` description of the training data. A family (our fits, lifelines,
statsmodels, scikit-survival, Fine-Gray, a family defined by a user) registers itself
with :func:`register_family` when its module is imported (``import coxinfluence``
imports every built-in one). A model already behind the seam (an ``AuditModel``, e.g.
an autodiff model) is used as it is.

The low-level functions (``ci.vif``, ``ci.reid_influence``, ``ci.newton_loo``,
``ci.exact_loo``: :mod:`coxinfluence.influence_functions.any_fit`) dispatch the same way
(:func:`family_of`): a family whose fits keep their training data is built with
``data=None``; a family may supply its own implementations of those functions
(``functions``: Cox's batched closed forms with their options), and one whose models keep
no training data (``needs_data``: lifelines, statsmodels, scikit-survival) is refused there.

Options a family needs beyond the generic ones (scikit-survival's training ``y=`` and
``alpha=``) are keyword arguments of ``ci.influence`` passed through to the family's
``build``; a family names the options it takes (``options``), and any other is refused
with the list of those that apply.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

import pandas as pd

from coxinfluence.data.inputs import InputError, show_labels
from coxinfluence.influence_functions.seam import AuditModel

__all__ = ["Family", "Resolved", "register_family", "families", "family_of", "audit_model",
           "as_seam", "with_overrides", "attach_columns"]


@dataclass
class Resolved:
    """What the audit knows of a model's training data besides the seam: ``fit`` (the
    fit the targets evaluate), ``frame`` (covariates, time, event, ...; caller's row
    order and index), ``source`` ("coxinfluence", "lifelines", "statsmodels",
    "scikit-survival", or the model's name), ``transform`` (raw new-patient frames ->
    the design, where the library builds it from raw columns), ``groups`` (the default
    units, e.g. lifelines' ``cluster_col``), ``robust`` (the library reports robust
    SEs) and ``seam`` ((fit, groups) -> the seam, where the integration chooses it)."""

    fit: object
    frame: pd.DataFrame
    source: str
    transform: Optional[Callable] = None
    groups: object = None
    robust: bool = False
    seam: Optional[Callable] = None


@dataclass(frozen=True)
class Family:
    """A registered model family.

    ``name``: what it is called in messages and the CLI ("cox", "aft", "fine_gray",
    "scikit-survival", ...); ``accepts(model) -> bool``: whether a user's object is
    this family's; ``build(model, data, groups, robust, **options) -> (seam,
    Resolved)``: the model behind the seam and its data; ``options``: the keyword
    options ``build`` takes beyond those; ``description``: what it accepts, in words
    (the message for an unsupported model lists them); ``needs_data``: its models keep
    no training data (``ci.influence(model, data)`` only; the low-level functions
    ``ci.vif``, ... refuse them); ``functions``: the family's own implementations of
    the low-level functions by name (``"vif"``, ``"reid_influence"``, ``"newton_loo"``,
    ``"exact_loo"``), called with the caller's arguments instead of the seam's generic
    path (Cox's batched closed forms and their options)."""

    name: str
    accepts: Callable[[object], bool]
    build: Callable[..., tuple]
    options: tuple = ()
    description: str = ""
    needs_data: bool = False
    functions: Mapping = field(default_factory=dict)


_FAMILIES: list = []


def register_family(family: Family) -> Family:
    """Add ``family`` (a :class:`Family`) to the dispatcher; a family registered again
    under the same name replaces the earlier one. Returns ``family``."""
    if not isinstance(family, Family):
        raise TypeError(f"expected a Family; got {type(family).__name__}")
    _FAMILIES[:] = [f for f in _FAMILIES if f.name != family.name]
    _FAMILIES.append(family)
    return family


def families() -> tuple:
    """The registered :class:`Family` objects, in the order they are asked."""
    return tuple(_FAMILIES)


def family_of(model) -> Optional[Family]:
    """The first registered :class:`Family` that accepts ``model``, or None (no family
    does; a model already behind the seam is no family's)."""
    if isinstance(model, AuditModel):
        return None
    return next((f for f in _FAMILIES if f.accepts(model)), None)


def as_seam(model, data, groups, robust):
    """``(model, Resolved)`` for a model already behind the seam: used as it is, its units
    fixed by it (``groups=`` and ``robust=`` refused with an ``InputError``, a
    ``ValueError``), ``data``'s columns matched on its unit labels."""
    if groups is not None or robust:
        raise InputError(f"groups= and robust= are not available for this model "
                         f"({model.model_name}): its units are fixed by the model (its "
                         f"{len(model.unit_labels)} {model.unit_name or 'subjects'})")
    frame = pd.DataFrame(index=model.unit_labels)
    if data is not None:
        frame = attach_columns(frame, data, len(model.unit_labels))
    return model, Resolved(model, frame, str(model.model_name))


def audit_model(model, data=None, *, groups=None, robust=None, **options):
    """``(seam, Resolved)`` for a user's ``model``: the first registered family that
    accepts it builds them (module docstring); ``groups=`` and ``robust=`` override the
    family's default units and standard errors.

    Raises
    ------
    TypeError
        No registered family accepts ``model`` (the message lists what is accepted).
    ValueError
        An option the accepting family does not take.
    """
    family = family_of(model)
    if family is None and not isinstance(model, AuditModel):
        kinds = "; ".join(f.description for f in _FAMILIES if f.description)
        raise TypeError(f"unsupported model type {type(model).__module__}."
                        f"{type(model).__name__}: pass {kinds}, or a model behind the "
                        "seam (coxinfluence.influence_functions.seam.AuditModel)")
    allowed = () if family is None else family.options
    unknown = [k for k in options if k not in allowed]
    if unknown:
        name = "this model" if family is None else f"a {family.name} model"
        owners = sorted({f.name for f in _FAMILIES for k in unknown if k in f.options})
        raise ValueError(f"{', '.join(f'{k}=' for k in unknown)} not available for {name}"
                         + (f" (its options: {', '.join(f'{k}=' for k in allowed)})"
                            if allowed else "")
                         + (f"; an option of {' and '.join(owners)} models" if owners
                            else ""))
    if family is None:
        return as_seam(model, data, groups, robust)
    seam, resolved = family.build(model, data, groups=groups, robust=robust, **options)
    return seam, resolved


def with_overrides(resolved, groups, robust):
    """``resolved`` with the caller's ``groups=`` and ``robust=`` where given."""
    if groups is not None:
        resolved = dataclasses.replace(resolved, groups=groups)
    if robust is not None:
        resolved = dataclasses.replace(resolved, robust=bool(robust))
    return resolved


def attach_columns(frame: pd.DataFrame, data, n) -> pd.DataFrame:
    """``frame`` with ``data``'s other columns matched on the index (never by position):
    ``data`` must have the model's ``n`` rows and the same index labels (any order), or an
    ``InputError`` (a ``ValueError``) says what differs."""
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"data must be a pandas DataFrame; got {type(data).__name__}")
    if len(data) != n:
        raise InputError(f"data has {len(data)} rows but the model was fitted on {n}")
    if data.index.has_duplicates:
        raise InputError("data has duplicate index labels; results are keyed by the index")
    if not data.index.equals(frame.index):
        if not (data.index.isin(frame.index).all() and frame.index.isin(data.index).all()):
            missing = show_labels(frame.index[~frame.index.isin(data.index)], limit=5)
            raise InputError(f"data's index does not match the model's rows (labels missing "
                             f"from data: {missing}); pandas inputs are matched on the index")
        data = data.reindex(frame.index)
    extra = data.drop(columns=[c for c in data.columns if c in frame.columns])
    return pd.concat([frame, extra], axis=1)

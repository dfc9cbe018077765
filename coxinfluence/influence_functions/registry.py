"""The one registration point: objects from users -> models behind the seam.

``ci.influence(model, data, ...)``, ``ci.vif``, ``ci.exact_loo`` and the CLI never ask
which family a model belongs to: they call :func:`audit_model`, which lets the registered
:class:`Family` that accepts the model (by the package's one dispatch rule,
:func:`coxinfluence.data.dispatch.choose`: the most specific registered class, then
the predicates; the latest registration wins a tie, a re-registration replaces) build
the seam (:class:`coxinfluence.influence_functions.seam.AuditModel`) and the
:class:`Resolved` description of the training data. A family (our fits, lifelines,
statsmodels, scikit-survival, Fine-Gray, a family defined by a user) registers itself
with :func:`register_family` when its module is imported (``import coxinfluence``
imports every built-in one). A model already behind the seam (an ``AuditModel``, e.g.
an autodiff model) is used as it is.

The low-level functions (``ci.vif``, ``ci.reid_influence``, ``ci.newton_loo``,
``ci.exact_loo``: :mod:`coxinfluence.influence_functions.any_fit`) dispatch the same way
(:func:`family_of`) and compute through the seam: a family whose fits keep their training
data is built with ``data=None`` (or by its ``low_level``, which passes the closed forms'
algorithm and names the caller in its messages: Cox); one whose models keep no training
data (``needs_data``: lifelines, statsmodels, scikit-survival) is refused there.

Options a family needs beyond the generic ones (scikit-survival's training ``y=`` and
``alpha=``) are keyword arguments of ``ci.influence`` passed through to the family's
``build``; a family names the options it takes (``options``), and any other is refused
with the list of those that apply.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

import pandas as pd

from coxinfluence.data.dispatch import choose
from coxinfluence.data.inputs import InputError, show_labels
from coxinfluence.influence_functions.seam import AuditModel

__all__ = ["Family", "Resolved", "register_family", "families", "family_of", "audit_model",
           "as_seam", "with_overrides", "attach_columns"]


@dataclass
class Resolved:
    """What the audit knows of a model's training data besides the seam.

    A family's ``build`` returns one beside the seam (:func:`audit_model`).

    Parameters
    ----------
    fit : object
        The fit the targets evaluate (a ``CoxFit``, ``AFTFit``, ...).
    frame : pandas.DataFrame
        The training data: covariates, time, event, ...; the caller's row order and index.
    source : str
        Where the model came from: "coxinfluence", "lifelines", "statsmodels",
        "scikit-survival", or the model's name.
    transform : callable, optional
        Raw new-patient frames -> the design, where the library builds it from raw
        columns (formulas, dummies).
    groups : array_like, optional
        The default units of deletion, one label per row (e.g. lifelines'
        ``cluster_col``); None: the model's own.
    robust : bool, default False
        Whether the library reports robust standard errors.
    seam : callable, optional
        ``(fit, groups) ->`` the seam, where the integration chooses it.

    Examples
    --------
    >>> from coxinfluence.influence_functions.registry import audit_model
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> seam, resolved = audit_model(fit)
    >>> resolved.source, list(resolved.frame.columns), resolved.robust
    ('coxinfluence', ['fin', 'age', 'time', 'event'], False)
    """

    fit: object
    frame: pd.DataFrame
    source: str
    transform: Optional[Callable] = None
    groups: object = None
    robust: bool = False
    seam: Optional[Callable] = None


@dataclass(frozen=True)
class Family:
    """A model family, as registered with :func:`register_family`.

    Parameters
    ----------
    name : str
        What it is called in messages and the CLI ("cox", "aft", "fine_gray",
        "scikit-survival", ...); registering a family under a name already taken
        replaces the earlier one.
    accepts : type or callable
        The class of the family's models (its instances, and its subclasses' unless a
        family registered for a subclass takes them: the most specific class wins), or a
        predicate ``accepts(model) -> bool`` for models recognised otherwise (lifelines'
        by their module, without importing lifelines), asked after every class
        (:func:`coxinfluence.data.dispatch.choose`). Given a class, ``accepts`` is
        its ``isinstance`` test and ``fit_class`` the class.
    build : callable
        ``build(model, data, *, groups=None, robust=None, **options) -> (seam,
        Resolved)``: the model behind the seam
        (:class:`~coxinfluence.influence_functions.seam.AuditModel`) and its data
        (:class:`Resolved`).
    options : tuple of str, default ()
        The keyword options of ``ci.influence`` that ``build`` takes beyond those
        (scikit-survival: ``("y", "alpha")``); any other is refused.
    description : str, default ""
        What it accepts, in words: the message for an unsupported model lists them.
    needs_data : bool, default False
        Its models keep no training data (lifelines, statsmodels, scikit-survival):
        ``ci.influence(model, data)`` only; the low-level functions (``ci.vif``,
        ``ci.reid_influence``, ``ci.newton_loo``, ``ci.exact_loo``) refuse them. Otherwise
        those functions build the seam with ``data=None``.
    low_level : callable, optional
        ``low_level(fit, groups, what, *, method=None, refuse=False) -> seam``: the seam of
        one of its fits for the low-level functions, where the family builds it itself:
        with the closed forms' algorithm ``method``, its own check that the fit converged
        under the caller's name ``what`` (raising with ``refuse``, exact refits). Default:
        ``build(fit, None, groups=groups)``'s seam, checked generically.
    refit_options : tuple of str, default ()
        The options of ``ci.exact_loo`` its seam's ``refit`` takes beyond ``progress=``
        and ``executor=`` (Cox: ``("batch_size", "tol", "max_iter", "n_chunks")``); any
        other is refused.
    fit_class : type, optional
        The class the family is registered for (set from ``accepts`` when that is a
        class); with a predicate ``accepts``, the predicate narrows the class.

    See Also
    --------
    register_family : Adds one to the dispatcher.
    audit_model : Dispatches a user's object to the family that accepts it.

    Examples
    --------
    A family for a class of the user's, here a Cox model under another name, audited
    by the Cox seam (``register_family(family)`` would make ``ci.influence`` take it):

    >>> from coxinfluence.influence_functions.cox_audit import CoxAudit
    >>> from coxinfluence.influence_functions.registry import Family, Resolved
    >>> class Wrapped:
    ...     def __init__(self, fit):
    ...         self.inner = fit
    >>> def build(model, data, *, groups=None, robust=None):
    ...     fit = model.inner
    ...     return CoxAudit(fit, groups), Resolved(fit, pd.DataFrame(index=range(fit.n)),
    ...                                            "my library")
    >>> family = Family("wrapped", Wrapped, build, description="a Wrapped Cox fit")
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> family.accepts(Wrapped(fit)), family.accepts(fit), family.fit_class is Wrapped
    (True, False, True)
    >>> seam, resolved = family.build(Wrapped(fit), None)
    >>> resolved.source, len(seam.unit_labels)
    ('my library', 432)
    """

    name: str
    accepts: Callable[[object], bool]
    build: Callable[..., tuple]
    options: tuple = ()
    description: str = ""
    needs_data: bool = False
    low_level: Optional[Callable] = None
    refit_options: tuple = ()
    fit_class: Optional[type] = None

    def __post_init__(self):
        if isinstance(self.accepts, type):
            object.__setattr__(self, "fit_class", self.accepts)
            object.__setattr__(self, "accepts", _InstanceOf(self.accepts))


class _InstanceOf:
    """``isinstance(model, cls)``, the predicate of a family registered for a class."""

    def __init__(self, cls):
        self.cls = cls

    def __call__(self, model):
        return isinstance(model, self.cls)

    def __eq__(self, other):
        return isinstance(other, _InstanceOf) and other.cls is self.cls

    def __hash__(self):
        return hash(self.cls)


#: the registered families in registration order (a re-registration moves to the end)
_FAMILIES: list = []


def register_family(family: Family) -> Family:
    """Add a family to the dispatcher.

    A family registered again under the same name replaces the earlier one (it becomes the
    latest registration). Which family takes a model is the package's one dispatch rule
    (:func:`coxinfluence.data.dispatch.choose`): the family of the most specific
    class of the model's MRO, then the families registered by a predicate; the latest
    registration wins a tie. Built-in families register themselves when their module is
    imported.

    Parameters
    ----------
    family : Family
        The family.

    Returns
    -------
    Family
        ``family`` itself.

    Raises
    ------
    TypeError
        ``family`` is not a :class:`Family`.

    Examples
    --------
    :class:`Family` builds one; ``register_family(family)`` then makes ``ci.influence``
    and the low-level functions take its models. Anything else is refused:

    >>> from coxinfluence.influence_functions.registry import register_family
    >>> register_family("cox")
    Traceback (most recent call last):
    ...
    TypeError: expected a Family; got str
    """
    if not isinstance(family, Family):
        raise TypeError(f"expected a Family; got {type(family).__name__}")
    _FAMILIES[:] = [f for f in _FAMILIES if f.name != family.name]
    _FAMILIES.append(family)
    return family


def families() -> tuple:
    """The registered families.

    Returns
    -------
    tuple of Family
        In registration order (:func:`family_of` ranks them).

    Examples
    --------
    >>> from coxinfluence.influence_functions.registry import families
    >>> {"cox", "aft", "fine_gray", "lifelines"} <= {f.name for f in families()}
    True
    """
    return tuple(_FAMILIES)


def family_of(model) -> Optional[Family]:
    """The registered family a user's object belongs to.

    Parameters
    ----------
    model : object
        A fitted model.

    Returns
    -------
    Family or None
        The registered :class:`Family` that takes ``model`` by the one dispatch rule
        (:func:`coxinfluence.data.dispatch.choose`: the most specific registered
        class, then the predicates, the latest registration winning a tie); None where
        none accepts it, or for a model already behind the seam (an ``AuditModel``: no
        family's).

    Examples
    --------
    >>> from coxinfluence.influence_functions.registry import family_of
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> aft = ci.fit_aft(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> family_of(aft).name, family_of(object())
    ('aft', None)
    """
    if isinstance(model, AuditModel):
        return None
    return choose(model, ((f, f.fit_class, f.accepts) for f in _FAMILIES))


def as_seam(model, data, groups, robust):
    """A model already behind the seam, as :func:`audit_model` returns it.

    The model is used as it is: its units are fixed by it, so ``groups=`` and
    ``robust=`` are refused. A family whose seam fixes its units (Fine-Gray's subjects)
    builds through it too.

    Parameters
    ----------
    model : AuditModel
        The seam.
    data : pandas.DataFrame or None
        Extra columns, matched on the model's unit labels (:func:`attach_columns`).
    groups : array_like or None
        Must be None.
    robust : bool or None
        Must be None or False.

    Returns
    -------
    tuple
        ``(model, Resolved)``: the frame indexed by the unit labels, the source the
        model's name.

    Raises
    ------
    coxinfluence.InputError
        ``groups`` or ``robust`` given.

    Examples
    --------
    >>> from coxinfluence.influence_functions.cox_audit import CoxAudit
    >>> from coxinfluence.influence_functions.registry import as_seam
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi[["fin"]], rossi["week"], rossi["arrest"])
    >>> seam, resolved = as_seam(CoxAudit(fit), rossi[["race"]], None, None)
    >>> resolved.frame.shape
    (432, 1)
    """
    if groups is not None or robust:
        raise InputError(f"groups= and robust= are not available for this model "
                         f"({model.model_name}): its units are fixed by the model (its "
                         f"{len(model.unit_labels)} {model.unit_name or 'subjects'})")
    frame = pd.DataFrame(index=model.unit_labels)
    if data is not None:
        frame = attach_columns(frame, data, len(model.unit_labels))
    return model, Resolved(model, frame, str(model.model_name))


def audit_model(model, data=None, *, groups=None, robust=None, **options):
    """A user's model behind the seam, with its training data: ``ci.influence``'s dispatch.

    The registered family that takes ``model`` (:func:`family_of`) builds both; a
    model already behind the seam is used as it is (:func:`as_seam`).

    Parameters
    ----------
    model : object
        A fitted model of any registered family, or a seam object.
    data : pandas.DataFrame, optional
        The training data (lifelines, scikit-survival) or extra columns.
    groups : array_like, optional
        Overrides the family's default units of deletion (one label per row).
    robust : bool, optional
        Overrides whether the standard errors are robust.
    **options
        The family's own options (``Family.options``).

    Returns
    -------
    tuple
        ``(seam, Resolved)``.

    Raises
    ------
    TypeError
        No registered family accepts ``model`` (the message lists what is accepted).
    ValueError
        An option the accepting family does not take (the message names the families
        that take it).

    Examples
    --------
    >>> from coxinfluence.influence_functions.registry import audit_model
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> seam, resolved = audit_model(fit, groups=rossi["prio"])
    >>> seam.model_name, len(seam.unit_labels)
    ('Cox proportional hazards', 17)
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
    """A family's :class:`Resolved` with the caller's ``groups=`` and ``robust=``.

    Parameters
    ----------
    resolved : Resolved
        The family's description of the data.
    groups : array_like or None
        The caller's units of deletion; None keeps the family's.
    robust : bool or None
        The caller's choice of standard errors; None keeps the family's.

    Returns
    -------
    Resolved
        A copy where given (``resolved`` itself otherwise).

    Examples
    --------
    >>> from coxinfluence.influence_functions.registry import Resolved, with_overrides
    >>> r = with_overrides(Resolved(None, pd.DataFrame(), "x"), None, True)
    >>> r.groups, r.robust
    (None, True)
    """
    if groups is not None:
        resolved = dataclasses.replace(resolved, groups=groups)
    if robust is not None:
        resolved = dataclasses.replace(resolved, robust=bool(robust))
    return resolved


def attach_columns(frame: pd.DataFrame, data, n) -> pd.DataFrame:
    """``frame`` with ``data``'s other columns, matched on the index (never by position).

    Parameters
    ----------
    frame : pandas.DataFrame
        The model's training frame, indexed by its rows' labels.
    data : pandas.DataFrame
        The caller's frame: the model's ``n`` rows with the same index labels (any
        order).
    n : int
        The model's number of rows.

    Returns
    -------
    pandas.DataFrame
        ``frame`` followed by the columns of ``data`` it does not have, in ``frame``'s
        row order.

    Raises
    ------
    coxinfluence.InputError
        ``data`` is not a DataFrame, has another number of rows, duplicate labels or
        other labels.

    Examples
    --------
    >>> from coxinfluence.influence_functions.registry import attach_columns
    >>> frame = pd.DataFrame({"x": [1.0, 2.0]}, index=["a", "b"])
    >>> data = pd.DataFrame({"x": [0, 0], "site": ["B", "A"]}, index=["b", "a"])
    >>> attach_columns(frame, data, 2)
         x site
    a  1.0    A
    b  2.0    B
    """
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

"""What every target of the audit shares (:mod:`coxinfluence.audit.targets` re-exports it):
the base class :class:`Target`, whose every member has a default; the registry of the
families' implementations of the quantities of ``ci.targets`` (:func:`register_target`,
``implementation_of``, the strings a user may ask by, ``target_named``) and the
``Dispatched`` quantities that resolve to them; how a user asks for each target
(``describe_targets``); the notes on target times past the follow-up
(:func:`followup_notes`, :class:`~coxinfluence.targets.TargetBeyondFollowUpWarning`, defined in
:mod:`coxinfluence.data.followup`). It names no model family:
the families register their implementations (:mod:`coxinfluence.families`)."""
from __future__ import annotations

import functools
from operator import methodcaller

from coxinfluence.data.dispatch import choose, replace

# the warning and the sentences of times past the follow-up: the data layer holds them (the
# predictions warn too); re-exported here for the targets
from coxinfluence.data.followup import (
    TargetBeyondFollowUpWarning,
    followup_notes,
    last_by_stratum,
)

__all__ = ["Target", "Dispatched", "register_target", "implementation_of", "target_named",
           "describe_targets", "followup_notes", "last_by_stratum",
           "TargetBeyondFollowUpWarning"]


class Target:
    """A quantity ``g(theta[, data])`` whose leave-one-out change is attributed.

    The base class of every target of :func:`coxinfluence.influence`: a target has
    ``m`` entries (the columns of ``InfluenceResult.loo_change``), a value at any
    coefficients ``theta`` and a Jacobian ``J = dg/dtheta`` at the fitted ones, from which
    a first-order method's change is ``J (theta_hat_{-g} - theta_hat)`` (plus the data
    effect, for targets that depend on the data directly).

    Subclasses define :meth:`columns`, :meth:`value` ((B, d) -> (B, m)) and
    :meth:`jacobian` ((m, d) at ``fit.coef``); data-dependent targets (a survival
    probability, whose baseline hazard is estimated from the data) also override
    :meth:`data_effect` and :meth:`refit_values`. A family's implementation of a quantity
    of ``ci.targets`` (a dispatched target such as :class:`~coxinfluence.targets.Survival`)
    sets ``quantity`` (the quantity's name), ``options`` (the keyword arguments it takes
    beside the patients and the times or probabilities) and ``fit_type`` (or
    :meth:`evaluates`), and is registered (:func:`register_target`).

    Attributes
    ----------
    name : str
        The target's name (what a model's seam lists in its ``target_names``; shown in
        ``InfluenceResult``'s repr).
    transform : callable or None
        Set by the integrations: the raw new-patient frame -> the design matrix (e.g. a
        lifelines formula); None: ``X_new`` is the design.
    quantity : str or None
        The quantity this target computes (the name of a dispatched target of
        ``ci.targets``), None for a target that is not a family's implementation of one.
    options : tuple of str
        The keyword arguments of a dispatched target this implementation takes.
    aliases : tuple of str
        The strings a user may pass as ``target=`` for this target (e.g. ``"hr"``;
        ``target_named``), registered with it (:func:`register_target`); empty for a
        target asked for by an object.
    ask : str or None
        How a user asks for this target, as ``describe_targets`` lists it (e.g.
        ``"'hr'"``, ``"ci.targets.RelativeRisk(X_new)"``); None: as its quantity's
        dispatched target (``ci.targets.Survival(X_new, times)`` for ``"survival"``).
    smooth : bool
        Whether the target is a smooth function of the coefficients (True); False for a
        step function (a test set's AUC or C-index), for which ``method="auto"`` claims
        no first-order bound (``coxinfluence.audit.verification``).

    See Also
    --------
    coxinfluence.influence : Audits a model for a target.
    register_target : Registers a family's implementation of a quantity.

    Examples
    --------
    Every target has the same interface; here the coefficients of a Cox model:

    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> target = ci.targets.HazardRatios()
    >>> issubclass(ci.targets.HazardRatios, ci.targets.Target)
    True
    >>> target.columns(fit)
    ['HR fin', 'HR age', 'HR prio']
    >>> np.round(target.value(fit, fit.coef[None, :]), 3)
    array([[0.707, 0.935, 1.102]])
    >>> target.jacobian(fit).shape
    (3, 3)
    """

    name = "target"
    transform = None   # set by integrations: raw new-patient frame -> design matrix
    #: the quantity this target computes (the name of a ``Dispatched`` target of
    #: ``ci.targets``), None for a target that is not a family's implementation of one
    quantity = None
    #: the keyword arguments of a ``Dispatched`` target this implementation takes
    options = ()
    #: the strings a user may pass as ``target=`` for this target (``target_named``)
    aliases = ()
    #: how a user asks for this target (``describe_targets``); None: as its quantity's
    #: ``Dispatched`` target
    ask = None
    #: whether the target is defined for every model through the model's own predictions
    #: (the test-set metrics of ``coxinfluence.evaluation.targets``), so that
    #: ``influence()`` takes it whatever the model's ``target_names``
    generic = False
    #: whether the target is a smooth function of the coefficients; False for a step
    #: function (a test set's AUC or C-index), for which ``method="auto"`` claims no
    #: first-order bound and refits every unit up to a larger size
    #: (``coxinfluence.audit.verification``)
    smooth = True
    #: the class of the fits this implementation evaluates on (:meth:`evaluates`), e.g.
    #: ``CoxFit``; None: none known (a family may override :meth:`evaluates` instead)
    fit_type = None

    @classmethod
    def evaluates(cls, fit):
        """Whether this implementation evaluates on ``fit``.

        A dispatched target used directly (``Survival(...).value(fit, theta)``) picks
        the implementation by it (``implementation_of``).

        Parameters
        ----------
        fit : object
            A fitted model (``CoxFit``, ``AFTFit``, ``FineGrayFit``, ...).

        Returns
        -------
        bool
            Whether ``fit`` is a ``fit_type``; False where it is None (the base class).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40])
        >>> impl = type(surv.implementation(fit=fit))
        >>> impl
        <class 'coxinfluence.families.cox_targets.CoxSurvival'>
        >>> impl.evaluates(fit)
        True
        >>> impl.evaluates(ci.fit_aft(X, rossi["week"], rossi["arrest"]))
        False
        """
        return cls.fit_type is not None and isinstance(fit, cls.fit_type)

    def columns(self, fit):
        """The names of the target's entries, one per column of the result.

        Parameters
        ----------
        fit : object
            The fitted model (its covariate names and the new patients' labels name the
            columns).

        Returns
        -------
        list of str
            ``m`` column names (e.g. ``"HR age"``, ``"S(20|0)"``).

        Raises
        ------
        NotImplementedError
            In the base class: a subclass defines it.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> hr = ci.targets.HazardRatios()
        >>> hr.columns(fit)
        ['HR fin', 'HR age', 'HR prio']
        """
        raise NotImplementedError

    def value(self, fit, theta):
        """The target ``g`` at coefficient vectors ``theta``.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta : array_like, shape (B, d)
            ``B`` coefficient vectors in the fit's order (``fit.coef[None, :]``: the
            fitted model).

        Returns
        -------
        numpy.ndarray, shape (B, m)
            ``g(theta_b)`` for each row of ``theta``, in the order of :meth:`columns`
            (for a data-dependent target, on the full data).

        Raises
        ------
        NotImplementedError
            In the base class: a subclass defines it.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> hr = ci.targets.HazardRatios()
        >>> hr.value(fit, fit.coef[None, :]).round(4)
        array([[0.7068, 0.9351, 1.1017]])
        """
        raise NotImplementedError

    def jacobian(self, fit):
        """The Jacobian ``J = dg/dtheta`` at the fitted coefficients ``fit.coef``.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        numpy.ndarray, shape (m, d)
            One row per entry of the target (:meth:`columns`), one column per coefficient.

        Raises
        ------
        NotImplementedError
            In the base class: a subclass defines it.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> hr = ci.targets.HazardRatios()
        >>> bool(np.allclose(hr.jacobian(fit), np.diag(np.exp(fit.coef))))
        True
        """
        raise NotImplementedError

    def data_effect(self, fit, units=None):
        """The target's change by deleting each unit at the fitted coefficients.

        ``g(theta_hat; D_{-g}) - g(theta_hat; D)``: the part of the leave-one-out change
        that does not go through ``theta`` (a baseline hazard estimated from the data).

        Parameters
        ----------
        fit : object
            The fitted model.
        units : object, optional
            The units of deletion (``coxinfluence.data.units``); None: the rows.

        Returns
        -------
        numpy.ndarray of shape (U, m), or None
            One row per unit; None (zero) for targets of ``theta`` alone (the default).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40])
        >>> hr = ci.targets.HazardRatios()
        >>> hr.data_effect(fit) is None
        True
        >>> surv.data_effect(fit).shape
        (432, 4)
        """
        return None

    def refit_values(self, fit, theta_loo, units=None):
        """The target at each unit's refitted coefficients, on the data without the unit.

        ``g(theta_{-g}; D_{-g})``: what the exact change is measured from.

        Parameters
        ----------
        fit : object
            The fitted model.
        theta_loo : array_like, shape (U, d)
            The leave-one-out coefficients of each unit (rows of NaN: not refitted).
        units : object, optional
            The units of deletion (``coxinfluence.data.units``); None: the rows.

        Returns
        -------
        numpy.ndarray, shape (U, m)
            One row per unit; by default :meth:`value` at ``theta_loo`` (targets of
            ``theta`` alone).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> hr = ci.targets.HazardRatios()
        >>> theta_loo = ci.exact_loo(fit).to_numpy()
        >>> values = hr.refit_values(fit, theta_loo)
        >>> bool(np.allclose(values, np.exp(theta_loo)))
        True
        """
        return self.value(fit, theta_loo)

    def baseline_variance(self, fit):
        """A variance term of the target beside ``J V J'``.

        The baseline hazard's own variance, for survival targets (R's ``survfit``
        standard error); it is added to the delta-method variance in
        ``InfluenceResult.target_se``.

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        numpy.ndarray of shape (m,), or None
            None for targets of ``theta`` alone (the default).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40])
        >>> ci.targets.HazardRatios().baseline_variance(fit) is None
        True
        >>> surv.baseline_variance(fit).shape
        (4,)
        """
        return None

    def followup_notes(self, fit):
        """Notes on target times past the last event time of the data.

        ``influence()`` issues each as a
        :class:`~coxinfluence.targets.TargetBeyondFollowUpWarning` and keeps them on the
        result (``InfluenceResult.target_notes``).

        Parameters
        ----------
        fit : object
            The fitted model.

        Returns
        -------
        tuple of str
            One sentence per stratum with times past its last event time; empty for
            targets without times (the default).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> ci.targets.Survival(X.iloc[:1], [40]).followup_notes(fit)
        ()
        >>> note, = ci.targets.Survival(X.iloc[:1], [60]).followup_notes(fit)
        >>> note[:60]
        'S(t|x) at time 60: past the last event time of the data, 52;'
        """
        return ()


# ------------------------------------------------ one target per quantity, by family

#: implementation name (``Target.name``, what a seam lists in ``target_names``) -> the
#: family's implementation class, in registration order (a re-registration moves last)
_IMPLEMENTATIONS = {}
#: a string a user may pass as ``target=`` (lower case) -> the registered target class
_ALIASES = {}
#: a quantity (a ``Dispatched`` target's ``name``) -> the dispatched target class
_QUANTITIES = {}


def register_target(cls):
    """Register a family's implementation of a quantity of ``ci.targets``.

    A class decorator. ``cls.name`` is what the family's seam lists in its
    ``target_names``, ``cls.quantity`` the quantity (the name of a dispatched target:
    ``"survival"``, ``"linear_predictor"``, ``"survival_quantile"``, ...),
    ``cls.options`` the keyword arguments it takes, :meth:`Target.evaluates` the fits it
    evaluates on. ``ci.influence`` then resolves the quantity to the first of the model's
    ``target_names`` registered for it, and the quantity used directly resolves by the
    package's one dispatch rule (``coxinfluence.data.dispatch.choose``): the
    implementation whose ``fit_type`` is the most specific class of the fit's MRO, then
    those that define :meth:`Target.evaluates` only; the latest registration wins a tie,
    and registering a name again replaces the earlier class. A new family registers its
    implementations and touches no generic code.

    Its one argument, ``cls``, is a subclass of :class:`Target` with ``name`` and
    ``quantity`` set.

    Returns
    -------
    type
        ``cls``, registered.

    Raises
    ------
    ValueError
        If ``cls`` has no ``quantity`` or its ``name`` is not a string.

    See Also
    --------
    Target : The interface an implementation defines.

    Notes
    -----
    A family's survival function, registered (in the family's own module, which also
    defines ``evaluates``: whether a fit is one of the family's, e.g. by its fit class;
    ``coxinfluence.families.cox_targets`` is one)::

        @ci.targets.register_target
        class ToySurvival(ci.targets.Target):
            name = "toy_survival"          # listed in the seam's target_names
            quantity = "survival"          # what ci.targets.Survival asks for
            options = ("strata",)

            def __init__(self, X_new, times, strata=None):
                ...

    A target a user asks for by a string lists it in ``aliases`` (``aliases = ("hr",)``:
    ``target="hr"``, ``target_named``) and says so in ``ask`` (``"'hr'"``).

    Examples
    --------
    The Cox family's implementation of ``Survival``, registered by this decorator, is
    what the quantity resolves to on a Cox model:

    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> impl = ci.targets.Survival(X.iloc[:2], [20]).implementation(fit=fit)
    >>> impl.name, impl.options       # the Cox family's (an AFT model's is 'aft_survival')
    ('survival', ('strata', 'ctype'))

    A class without a quantity is refused:

    >>> ci.targets.register_target(type("Nameless", (ci.targets.Target,), {}))
    Traceback (most recent call last):
    ...
    ValueError: Nameless needs a name and a quantity to be registered
    """
    if not cls.quantity or not isinstance(cls.name, str):
        raise ValueError(f"{cls.__qualname__} needs a name and a quantity to be registered")
    replace(_IMPLEMENTATIONS, cls.name, cls)
    for alias in cls.aliases:
        _ALIASES[alias.lower()] = cls
    return cls


def target_named(name):
    """The registered target a user asks for by the string ``name``.

    Parameters
    ----------
    name : str
        What the user passed as ``target=`` (case-insensitive), e.g. ``"hr"``: one of the
        ``aliases`` of a registered target (:func:`register_target`).

    Returns
    -------
    type or None
        The target class (constructed without arguments by ``resolve_target``), None if
        no registered target has that alias.
    """
    return _ALIASES.get(name.lower())


def implementation_of(quantity, names=None, fit=None):
    """The registered implementation of ``quantity`` for a model.

    The one place where a quantity of ``ci.targets`` meets a family.

    Parameters
    ----------
    quantity : str
        The quantity (``Target.quantity``, e.g. ``"survival"``).
    names : sequence of str, optional
        The model's target names (its seam's ``target_names``, in the seam's order of
        preference): the first that implements ``quantity`` is taken.
    fit : object, optional
        Without ``names``: the implementation that takes ``fit`` by the one dispatch
        rule (``coxinfluence.data.dispatch.choose``: the most specific
        ``fit_type`` of the fit's MRO, then the implementations that define
        :meth:`Target.evaluates` only; the latest registration wins a tie).

    Returns
    -------
    type or None
        The implementation class, None if there is none.
    """
    if names is not None:
        for name in names:
            cls = _IMPLEMENTATIONS.get(name)
            if cls is not None and cls.quantity == quantity:
                return cls
        return None
    return choose(fit, ((cls, cls.fit_type, cls.evaluates)
                        for cls in _IMPLEMENTATIONS.values() if cls.quantity == quantity))


class Dispatched(Target):
    """A quantity of new patients whose formula is the model family's own.

    The base of ``Survival``, ``LinearPredictor`` and ``Quantile``: ``ci.influence``
    replaces it by the family's registered implementation that the model offers
    (:func:`~coxinfluence.audit.targets.resolve_target`), and used directly
    (``value(fit, theta)``, ``jacobian(fit)``, ...: :class:`Target`'s methods, documented
    there) it evaluates as the implementation for ``fit`` (``implementation_of``).
    Subclasses set ``name`` (the quantity),
    :attr:`first` (the attribute of the times or probabilities, if any) and store the
    arguments as attributes of the same names as the implementations'.

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients (rows).
    options : dict
        The keyword options (name -> value; None: the implementation's default), stored
        as attributes of the same names.
    leading : tuple, optional
        The positional arguments after ``X_new`` that every implementation takes (the
        times, the probabilities: the attribute named by :attr:`first`).
    """

    #: the name of the attribute holding the argument after the new patients (the times,
    #: the probabilities), None if there is none
    first = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _QUANTITIES[cls.name] = cls

    def __init__(self, X_new, options, leading=()):
        self.X_new = X_new
        self._options = dict(options)
        self._leading = tuple(leading)
        for key, value in self._options.items():
            setattr(self, key, value)
        self._bound = None

    @property
    def quantity(self):
        """The quantity this target asks for: its ``name`` (e.g. ``"survival"``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40])
        >>> surv.quantity
        'survival'
        """
        return self.name

    def implementation(self, names=None, fit=None, model_name=None):
        """The family's implementation of this quantity for a model.

        Built from this target's arguments (and its ``transform``).

        Parameters
        ----------
        names : sequence of str, optional
            The targets the model offers (its seam's ``target_names``): the first that
            implements the quantity is taken (``implementation_of``).
        fit : object, optional
            Without ``names``: the implementation that takes ``fit`` by the one
            dispatch rule (``implementation_of``: the most specific ``fit_type``, then
            the predicates; the latest registration wins a tie).
        model_name : str, optional
            The model's name, for the error message.

        Returns
        -------
        Target
            The family's implementation, e.g. ``CoxSurvival`` for ``Survival`` on a Cox
            model.

        Raises
        ------
        ValueError
            When the model has no implementation of the quantity, or an option given
            (not None) is not one of the implementation's.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> surv = ci.targets.Survival(X.iloc[:2], [20, 40])
        >>> type(surv.implementation(fit=fit))
        <class 'coxinfluence.families.cox_targets.CoxSurvival'>
        """
        cls = implementation_of(self.name, names, fit)
        model = f" ({model_name})" if model_name else ""
        if cls is None:
            known = (f"its targets are {describe_targets(names) or 'not known'}"
                     if names is not None else
                     "no model family registered for it evaluates on this fit")
            raise ValueError(f"target {self.name!r} is not available for this model"
                             f"{model}; {known} (ci = coxinfluence)")
        unused = [k for k, v in self._options.items() if v is not None and k not in cls.options]
        if unused:
            raise ValueError(f"{', '.join(f'{k}=' for k in unused)} is not an option of "
                             f"{type(self).__qualname__} for this model{model}")
        impl = cls(self.X_new, *self._leading, **{k: v for k, v in self._options.items()
                                                   if k in cls.options and v is not None})
        if self.transform is not None:
            impl.transform = self.transform
        return impl

    def _for(self, fit):
        if self._bound is None or self._bound[0] is not fit:
            self._bound = (fit, self.implementation(fit=fit))
        return self._bound[1]


def _forwarded(name):
    """``Dispatched.<name>``: the implementation's for ``fit``, with :class:`Target`'s
    signature and docstring (what it computes is the implementation's)."""

    @functools.wraps(vars(Target)[name])
    def method(self, fit, *args, **kwargs):
        return methodcaller(name, fit, *args, **kwargs)(self._for(fit))

    method.__qualname__ = f"Dispatched.{name}"
    return method


for _name in ("columns", "value", "jacobian", "data_effect", "refit_values",
              "baseline_variance", "followup_notes"):
    setattr(Dispatched, _name, _forwarded(_name))


def describe_targets(names):
    """The targets ``names`` as a user asks for them.

    Parameters
    ----------
    names : sequence of str
        A seam's ``target_names``.

    Returns
    -------
    str
        The strings first ('coef', 'hr', 'tr'), then the targets of new patients, one
        per quantity (the implementation ``resolve_target`` would pick), e.g.
        ``"'coef', 'hr', or ci.targets.LinearPredictor(X_new), ..."``.
    """
    seen, asks = set(), []
    for name in dict.fromkeys(names):
        cls = _IMPLEMENTATIONS.get(name)
        quantity = cls.quantity if cls is not None else name
        if quantity in seen:
            continue
        seen.add(quantity)
        ask = cls.ask if cls is not None else None
        if ask is None and quantity in _QUANTITIES:
            ask = _QUANTITIES[quantity].ask
        asks.append(repr(name) if ask is None else ask)
    asks = list(dict.fromkeys(asks))
    strings = [a for a in asks if a.startswith("'")]
    objects = [a for a in asks if not a.startswith("'")]
    text = ", ".join(strings)
    if objects:
        text += (", or " if text else "") + ", ".join(objects)
    return text

"""What every target of the audit shares (:mod:`coxinfluence.audit.targets` re-exports it):
the base class :class:`Target`; the registry of the families' implementations of the
quantities of ``ci.targets`` (:func:`register_target`, :func:`implementation_of`) and the
:class:`Dispatched` quantities that resolve to them; how a user asks for each target
(:func:`describe_targets`); the notes on target times past the follow-up
(:func:`followup_notes`, :class:`TargetBeyondFollowUpWarning`)."""
from __future__ import annotations

import numpy as np

from coxinfluence.data.inputs import show_labels
from coxinfluence.data.new_patients import new_patient_matrix

__all__ = ["Target", "Dispatched", "register_target", "implementation_of",
           "describe_targets", "followup_notes", "last_by_stratum",
           "TargetBeyondFollowUpWarning"]


class TargetBeyondFollowUpWarning(UserWarning):
    """A target time is past the last event time of the data (of the patient's stratum):
    the value there is not estimated from events (for Cox and Fine-Gray the last plateau
    carried forward; for a parametric model its extrapolation). The same text is kept on
    the result, ``InfluenceResult.target_notes``."""


def followup_notes(times, last, codes, patients, *, quantity, events="event",
                   stratum_labels=None, consequence=None):
    """One note per stratum whose new patients have target ``times`` past the stratum's
    last event time (:mod:`coxinfluence.audit.targets`). ``last`` (S,): the last event time of each
    stratum code (``-inf``: none); ``codes`` (P,): each patient's stratum code;
    ``patients``: their labels; ``stratum_labels``: the strata's labels in code order when
    the model is stratified (None: one stratum); ``quantity``: what is read at the times
    (e.g. "S(t|x)"); ``consequence``: what the value beyond is (default: the plateau)."""
    if consequence is None:
        consequence = ("the baseline does not change after it, so the value there is the "
                       "last plateau carried forward, not an estimate from events")
    times = np.asarray(times, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.intp)
    notes = []
    for s in dict.fromkeys(codes.tolist()):
        late = times[times > last[s]]
        if late.size == 0:
            continue
        when = ", ".join(f"{t:g}" for t in late)
        where = "the data"
        if stratum_labels is not None:
            who = [str(patients[k]) for k in np.flatnonzero(codes == s)]
            where = (f"stratum {show_labels([stratum_labels[s]])} (patients "
                     f"{show_labels(who)})")
        if np.isfinite(last[s]):
            past = f"past the last {events} time of {where}, {last[s]:g}"
        else:
            past = f"past the follow-up of {where}, which has no {events}"
        notes.append(f"{quantity} at time{'s' if late.size > 1 else ''} {when}: {past}; "
                     f"{consequence}")
    return tuple(notes)


def last_by_stratum(times, strata, n_strata):
    """(S,) the largest of ``times`` in each stratum code (``-inf`` where none)."""
    out = np.full(int(n_strata), -np.inf)
    if np.size(times):
        np.maximum.at(out, np.asarray(strata, dtype=np.intp), np.asarray(times, dtype=float))
    return out


def _new_patients(X_new, fit, transform=None):
    """New patients as an (m, d) float64 array in the fit's column order, and their labels
    as text (:func:`coxinfluence.data.new_patients.new_patient_matrix`)."""
    arr, index = new_patient_matrix(X_new, fit.data.columns, transform)
    return arr, [str(v) for v in index]


class Target:
    """A quantity ``g(theta[, data])`` whose leave-one-out change we attribute.

    Subclasses define ``columns(fit)``, ``value(fit, theta)`` ((B, d) -> (B, m)) and
    ``jacobian(fit)`` ((m, d) at ``fit.coef``); data-dependent targets also override
    ``data_effect`` and ``refit_values``. A family's implementation of a quantity of
    ``ci.targets`` (:class:`Dispatched`) sets ``quantity`` (the quantity's name),
    ``options`` (the keyword arguments it takes beside the patients and the times or
    probabilities) and :meth:`evaluates`, and is registered (:func:`register_target`).
    """

    name = "target"
    transform = None   # set by integrations: raw new-patient frame -> design matrix
    #: the quantity this target computes (the name of a :class:`Dispatched` target of
    #: ``ci.targets``), None for a target that is not a family's implementation of one
    quantity = None
    #: the keyword arguments of a :class:`Dispatched` target this implementation takes
    options = ()

    @classmethod
    def evaluates(cls, fit):
        """Whether this implementation evaluates on ``fit`` (a dispatched target used
        directly, ``Survival(...).value(fit, theta)``, picks the implementation by it)."""
        return False

    def columns(self, fit):
        raise NotImplementedError

    def value(self, fit, theta):
        raise NotImplementedError

    def jacobian(self, fit):
        raise NotImplementedError

    def data_effect(self, fit, units=None):
        """(U, m) ``g(theta_hat; D_{-g}) - g(theta_hat; D)`` per unit (units of
        :mod:`coxinfluence.data.units`; rows by default): None (zero) for targets of ``theta``
        alone."""
        return None

    def refit_values(self, fit, theta_loo, units=None):
        """(U, m) ``g(theta_{-g}; D_{-g})`` for leave-one-out coefficients (U, d)."""
        return self.value(fit, theta_loo)

    def baseline_variance(self, fit):
        """(m,) a variance term beside ``J V J'`` (the baseline hazard's own, for
        survival targets), or None for targets of ``theta`` alone."""
        return None

    def followup_notes(self, fit):
        """Notes on target times past the last event time of the data (module
        docstring): a tuple of sentences, empty for targets without times."""
        return ()


# ------------------------------------------------ one target per quantity, by family

#: implementation name (``Target.name``, what a seam lists in ``target_names``) -> the
#: family's implementation class, in registration order
_IMPLEMENTATIONS = {}


def register_target(cls):
    """Register a family's implementation of a quantity of ``ci.targets`` (a class
    decorator): ``cls.name`` is what the family's seam lists in its ``target_names``,
    ``cls.quantity`` the quantity (:class:`Dispatched`), ``cls.options`` the keyword
    arguments it takes, :meth:`Target.evaluates` the fits it evaluates on. A new family
    registers its implementations and touches no generic code."""
    if not cls.quantity or not isinstance(cls.name, str):
        raise ValueError(f"{cls.__name__} needs a name and a quantity to be registered")
    _IMPLEMENTATIONS[cls.name] = cls
    return cls


def implementation_of(quantity, names=None, fit=None):
    """The registered implementation of ``quantity`` for a model: the first of the
    model's target names ``names`` (its seam's ``target_names``, in the seam's order of
    preference) that implements it; without ``names``, the latest registered
    implementation that evaluates on ``fit`` (:meth:`Target.evaluates`). None if there is
    none. The one place where a quantity of ``ci.targets`` meets a family."""
    if names is not None:
        for name in names:
            cls = _IMPLEMENTATIONS.get(name)
            if cls is not None and cls.quantity == quantity:
                return cls
        return None
    for cls in reversed(list(_IMPLEMENTATIONS.values())):
        if cls.quantity == quantity and cls.evaluates(fit):
            return cls
    return None


class Dispatched(Target):
    """A quantity of new patients whose formula is the model family's own (``Survival``,
    ``LinearPredictor``, ``Quantile``): ``ci.influence`` replaces it by the family's
    registered implementation that the model offers (:func:`resolve_target`), and used
    directly (``value(fit, theta)``, ``jacobian(fit)``, ...) it evaluates as the
    implementation for ``fit`` (:func:`implementation_of`). Subclasses set ``name`` (the
    quantity), :attr:`first` (the attribute of the times or probabilities, if any) and
    store the arguments as attributes of the same names as the implementations'."""

    #: the new patients' attribute and the keyword options, in the implementations' order
    first = None

    def __init__(self, X_new, options):
        self.X_new = X_new
        self._options = dict(options)
        for key, value in self._options.items():
            setattr(self, key, value)
        self._bound = None

    @property
    def quantity(self):
        return self.name

    def implementation(self, names=None, fit=None, model_name=None):
        """The family's implementation of this quantity for the model offering the
        targets ``names`` (or evaluating on ``fit``), built from this target's arguments;
        a ``ValueError`` when the model has none, or an argument is not the family's."""
        cls = implementation_of(self.name, names, fit)
        model = model_name or (type(fit).__name__ if fit is not None else "this model")
        if cls is None:
            names = names if names is not None else ()
            raise ValueError(f"target {self.name!r} is not available for this model "
                             f"({model}); its targets are "
                             f"{describe_targets(names) or 'not known'} (ci = coxinfluence)")
        unused = [k for k, v in self._options.items() if v is not None and k not in cls.options]
        if unused:
            raise ValueError(f"{', '.join(f'{k}=' for k in unused)} is not an option of "
                             f"{type(self).__name__} for this model ({model})")
        args = (self.X_new,) if self.first is None else (self.X_new, getattr(self, self.first))
        impl = cls(*args, **{k: v for k, v in self._options.items()
                             if k in cls.options and v is not None})
        if self.transform is not None:
            impl.transform = self.transform
        return impl

    def _for(self, fit):
        if self._bound is None or self._bound[0] is not fit:
            self._bound = (fit, self.implementation(fit=fit))
        return self._bound[1]

    def columns(self, fit):
        return self._for(fit).columns(fit)

    def value(self, fit, theta):
        return self._for(fit).value(fit, theta)

    def jacobian(self, fit):
        return self._for(fit).jacobian(fit)

    def data_effect(self, fit, units=None):
        return self._for(fit).data_effect(fit, units)

    def refit_values(self, fit, theta_loo, units=None):
        return self._for(fit).refit_values(fit, theta_loo, units)

    def baseline_variance(self, fit):
        return self._for(fit).baseline_variance(fit)

    def followup_notes(self, fit):
        return self._for(fit).followup_notes(fit)


#: how a user asks for each target (by its ``name``, a seam's ``target_names``): a string,
#: or the object of ``ci.targets`` that needs new patients
_HOW_TO_ASK = {
    "coef": "'coef'", "hazard_ratio": "'hr'", "time_ratio": "'tr'",
    "linear_predictor": "ci.targets.LinearPredictor(X_new)",
    "risk_score": "ci.targets.LinearPredictor(X_new)",
    "relative_risk": "ci.targets.RelativeRisk(X_new)",
    "survival": "ci.targets.Survival(X_new, times)",
    "aft_survival": "ci.targets.Survival(X_new, times)",
    "lifelines_survival": "ci.targets.Survival(df_new, times)",
    "survival_quantile": "ci.targets.Quantile(X_new, p)",
    "cumulative_incidence": "ci.targets.CumulativeIncidence(X_new, times)",
}


def describe_targets(names):
    """The targets ``names`` (a seam's ``target_names``) as a user asks for them: the
    strings first ('coef', 'hr', 'tr'), then the targets of new patients, one per
    quantity (the implementation :func:`resolve_target` would pick)."""
    seen, asks = set(), []
    for name in dict.fromkeys(names):
        cls = _IMPLEMENTATIONS.get(name)
        quantity = cls.quantity if cls is not None else name
        if quantity in seen:
            continue
        seen.add(quantity)
        asks.append(_HOW_TO_ASK.get(name, repr(name)))
    asks = list(dict.fromkeys(asks))
    strings = [a for a in asks if a.startswith("'")]
    objects = [a for a in asks if not a.startswith("'")]
    text = ", ".join(strings)
    if objects:
        text += (", or " if text else "") + ", ".join(objects)
    return text

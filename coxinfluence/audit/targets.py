"""Quantities to attribute: the influence of each training patient on a target g.

Paper, Eq. (VIF-target): for a differentiable target ``g(theta)`` the influence of row i
follows from the parameter influence by the chain rule,

    g(theta_hat_{-i}) - g(theta_hat)  ~  J_g(theta_hat) (theta_hat_{-i} - theta_hat),
    J_g = d g / d theta  (m x d),

for every method's estimate of ``theta_hat_{-i} - theta_hat`` (VIF, Reid, one-step
Newton); the exact change refits without row i and evaluates ``g`` there.

Targets (each a :class:`Target`, one column per entry of g):

- :class:`Coefficients`: ``g = theta``, ``J = I``.
- :class:`HazardRatios`: ``g = exp(theta)``, ``J = diag(exp(theta))``.
- :class:`LinearPredictor` of new patients ``x``: ``g = theta' x``, ``J = x'``.
- :class:`RelativeRisk` of new patients: ``g = exp(theta' x)`` (the paper's target),
  ``J = exp(theta' x) x'``.
- :class:`Survival` ``S(t | x) = exp(-Lambda_0(t) exp(theta' x))`` at chosen times, with
  the Breslow baseline cumulative hazard, with or without Efron's tie correction as R's
  ``survfit.coxph(ctype=)``: ``ctype = 2`` corrects (R's default for Efron ties),
  ``ctype = 1`` does not (R's default for Breslow ties; lifelines' and statsmodels'
  baseline whatever the ties). The fitted model's own is used (``CoxFit.ctype``, set by the
  integrations; None = R's default), unless ``Survival(..., ctype=)`` chooses:

      Lambda_0(t; theta, D) = sum_{terms k: t_k <= t} m_k / den_k(theta, D),
      den_k = S0_k - c_k S0D_k,

  (``m_k``, ``c_k``, ``den_k`` as in :mod:`coxinfluence.likelihood.risk_sets`, Efron's fractions
  ``c_k = r / d_g`` for ``ctype = 2``; ``ctype = 1``: ``c_k = 0``, so
  ``Lambda_0 = sum_{t_g <= t} (sum of event weights) / S0_g``). ``Lambda_0`` depends on
  the data ``D`` directly, not only through ``theta``, so the leave-one-out change is

      S(t|x; theta_{-i}, D_{-i}) - S(t|x; theta_hat, D)
        ~ [S(t|x; theta_hat, D_{-i}) - S(t|x; theta_hat, D)]        (data effect)
          + dS/dtheta(theta_hat, D) (theta_hat_{-i} - theta_hat),     (chain rule)

      dS/dtheta = -S(t|x) exp(theta'x) sum_{t_k <= t} (m_k / den_k) (x - a_k),

  with ``a_k`` the Efron-weighted risk-set mean. The data effect is computed by deleting
  row i at ``theta_hat`` (a finite difference, exact by definition; O(n d + S T K) per
  deleted row, S strata, T times, in batches of 128 rows, so O(n (n d + S T K)) in all).
  ``include_data_effect=False`` in :func:`target_change` leaves it out, which is
  measurably worse against exact refits (``paper_appendix/targets_metabric.py``).

Stratified models: each stratum s has its own baseline hazard, the sum above over the
terms of stratum s only, and a new patient's curve uses the baseline of the stratum given
for it (``Survival(X_new, times, strata=[...])``, labels as in the training data), as R's
``survfit(fit, newdata)`` does when ``newdata`` carries the strata variable.

Times beyond follow-up: past the last event time of the data (of the patient's stratum)
the baseline hazard has no more jumps, so ``S(t|x)`` is the last plateau carried forward,
not an estimate from events. A target's :meth:`Target.followup_notes` says so, one note
per stratum, and ``influence()`` issues each as a :class:`TargetBeyondFollowUpWarning`
and keeps them on the result (``InfluenceResult.target_notes``).
"""
from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import show_labels
from coxinfluence.data.units import row_units
from coxinfluence.likelihood.baseline_hazard import (
    baseline_ctype,
    cumulative_mask,
    hazard_increments,
)

__all__ = ["Target", "Coefficients", "HazardRatios", "TimeRatios", "LinearPredictor",
           "RelativeRisk", "Survival", "resolve_target", "target_change", "target_exact",
           "baseline_cumhaz", "baseline_ctype", "TargetBeyondFollowUpWarning",
           "followup_notes", "describe_targets"]


class TargetBeyondFollowUpWarning(UserWarning):
    """A target time is past the last event time of the data (of the patient's stratum):
    the value there is not estimated from events (for Cox and Fine-Gray the last plateau
    carried forward; for a parametric model its extrapolation). The same text is kept on
    the result, ``InfluenceResult.target_notes``."""


def followup_notes(times, last, codes, patients, *, quantity, events="event",
                   stratum_labels=None, consequence=None):
    """One note per stratum whose new patients have target ``times`` past the stratum's
    last event time (module docstring). ``last`` (S,): the last event time of each
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
    """New patients as an (m, d) float64 array in the fit's column order, and row labels."""
    cols = list(fit.data.columns)
    if isinstance(X_new, pd.Series):
        X_new = X_new.to_frame().T
    if isinstance(X_new, pd.DataFrame):
        labels = [str(v) for v in X_new.index]
        have = [str(c) for c in X_new.columns]
        if set(cols) <= set(have):
            frame = X_new.copy()
            frame.columns = have
            frame = frame[cols]
        elif transform is not None:
            frame = transform(X_new)
        else:
            missing = sorted(set(cols) - set(have))
            raise ValueError(f"new patients lack the model's covariate column(s) {missing}")
        non_num = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])
                   and not pd.api.types.is_bool_dtype(frame[c])]
        if non_num:
            raise ValueError(f"new patients have non-numeric column(s) {non_num}")
        arr = frame.to_numpy(dtype=np.float64)
    else:
        arr = np.atleast_2d(np.asarray(X_new, dtype=np.float64))
        labels = [str(k) for k in range(arr.shape[0])]
    if arr.ndim != 2 or arr.shape[1] != len(cols):
        raise ValueError(f"new patients must have {len(cols)} covariates {cols}; "
                         f"got shape {arr.shape}")
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise ValueError(f"new patients contain NaN or infinite values in {int(bad.sum())} "
                         f"row(s): {show_labels([labels[k] for k in np.flatnonzero(bad)])}")
    return arr, labels


class Target:
    """A quantity ``g(theta[, data])`` whose leave-one-out change we attribute.

    Subclasses define ``columns(fit)``, ``value(fit, theta)`` ((B, d) -> (B, m)) and
    ``jacobian(fit)`` ((m, d) at ``fit.coef``); data-dependent targets also override
    ``data_effect`` and ``refit_values``.
    """

    name = "target"
    transform = None   # set by integrations: raw new-patient frame -> design matrix

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


class Coefficients(Target):
    """``g(theta) = theta``."""

    name = "coef"

    def columns(self, fit):
        return list(fit.columns)

    def value(self, fit, theta):
        return np.asarray(theta, dtype=np.float64)

    def jacobian(self, fit):
        return np.eye(len(fit.coef))


class HazardRatios(Target):
    """``g(theta) = exp(theta)``; ``J = diag(exp(theta_hat))``."""

    name = "hazard_ratio"

    def columns(self, fit):
        return [f"HR {c}" for c in fit.columns]

    def value(self, fit, theta):
        return np.exp(np.asarray(theta, dtype=np.float64))

    def jacobian(self, fit):
        return np.diag(np.exp(fit.coef))


class _NewPatientTarget(Target):
    prefix = "?"

    def __init__(self, X_new):
        self.X_new = X_new

    def _X(self, fit):
        return _new_patients(self.X_new, fit, self.transform)

    def columns(self, fit):
        return [f"{self.prefix}[{lab}]" for lab in self._X(fit)[1]]


class LinearPredictor(_NewPatientTarget):
    """``g(theta) = X_new theta`` for new patients (rows of ``X_new``); ``J = X_new``."""

    name = "linear_predictor"
    prefix = "lp"

    def value(self, fit, theta):
        return np.asarray(theta, dtype=np.float64) @ self._X(fit)[0].T

    def jacobian(self, fit):
        return self._X(fit)[0].copy()


class RelativeRisk(_NewPatientTarget):
    """The paper's target ``g(theta) = exp(theta' x)`` for new patients x;
    ``J = diag(exp(X_new theta_hat)) X_new``."""

    name = "relative_risk"
    prefix = "rr"

    def value(self, fit, theta):
        return np.exp(np.asarray(theta, dtype=np.float64) @ self._X(fit)[0].T)

    def jacobian(self, fit):
        X = self._X(fit)[0]
        return np.exp(X @ fit.coef)[:, None] * X


# ------------------------------------------------------------------------ survival

def _stratum_codes(fit, strata, m, what="new patients"):
    """Stratum code of each of ``m`` new patients from their labels (module docstring)."""
    labels = fit.data.strata_labels
    if labels is None or (len(labels) == 1 and strata is None):
        if strata is not None:
            raise ValueError(f"strata given for {what}, but the model has no strata")
        return np.zeros(m, dtype=np.intp)
    if strata is None:
        raise ValueError(f"the model is stratified: give the stratum of the {what} "
                         f"(strata=..., one of {list(labels)})")
    lookup = {lab: code for code, lab in enumerate(labels)}
    if isinstance(strata, tuple) and strata in lookup:       # one label of several columns
        given = [strata]
    elif isinstance(strata, (list, tuple, np.ndarray, pd.Series, pd.Index)):
        given = list(strata)
    else:
        given = [strata]
    if len(given) == 1 and m > 1:
        given = given * m
    if len(given) != m:
        raise ValueError(f"strata has {len(given)} entries for {m} {what}")
    unknown = [g for g in given if not isinstance(g, Hashable) or g not in lookup]
    if unknown:
        raise ValueError(f"unknown strata {unknown[:5]} for {what}; the model's strata are "
                         f"{list(labels)}")
    return np.array([lookup[g] for g in given], dtype=np.intp)


def baseline_cumhaz(fit, times, theta=None, stratum=None, ctype=None):
    """Breslow/Efron baseline cumulative hazard ``Lambda_0(t)`` at ``times`` (covariates 0),
    as R's ``basehaz(fit, centered = FALSE)`` / ``survfit`` (module docstring; ``ctype`` as
    there, default the fit's own); for a stratified model, of the stratum labelled
    ``stratum``."""
    codes = _stratum_codes(fit, None if stratum is None else [stratum], 1, "baseline hazard")
    theta = fit.coef if theta is None else theta
    inc, shift, _ = hazard_increments(fit, theta, ctype=ctype)
    return (cumulative_mask(fit, times)[codes[0]] @ inc[0]) * np.exp(-shift[0, 0])


class Survival(Target):
    """``S(t | x) = exp(-Lambda_0(t) exp(theta' x))`` for new patients x at ``times``
    (module docstring); one column per (patient, time).  ``strata``: for a stratified
    model, each new patient's stratum label (one label for all, or one per patient;
    tuples for several stratum columns), choosing its baseline hazard; by default read
    from the stratum column(s) of ``X_new`` when it is a DataFrame that has them (the
    model's strata given as a DataFrame or a named Series, e.g. lifelines' ``strata``).
    ``ctype``: the baseline hazard, 1 (no tie correction) or 2 (Efron's), as R's
    ``survfit(ctype=)``; default the fitted model's own (:func:`baseline_ctype`: lifelines
    and statsmodels models 1, a ``fit_cox`` fit R's default for its ties)."""

    name = "survival"
    ctype = None

    def __init__(self, X_new, times, strata=None, ctype=None):
        self.X_new = X_new
        self.strata = strata
        if ctype not in (None, 1, 2):
            raise ValueError(f"ctype must be None (the model's), 1 or 2; got {ctype!r}")
        self.ctype = ctype
        t = np.atleast_1d(np.asarray(times, dtype=np.float64))
        if t.ndim != 1 or t.size == 0 or not np.isfinite(t).all() or (t < 0).any():
            raise ValueError(f"times must be finite non-negative numbers; got {times!r}")
        self.times = t

    def _X(self, fit):
        return _new_patients(self.X_new, fit, self.transform)

    def columns(self, fit):
        labels = self._X(fit)[1]
        return [f"S({t:g}|{lab})" for lab in labels for t in self.times]

    def _codes(self, fit, X):
        strata, names = self.strata, fit.data.strata_names
        if strata is None and names and isinstance(self.X_new, pd.DataFrame) \
                and set(names) <= {str(c) for c in self.X_new.columns}:
            # the new patients' frame carries the stratum column(s) of the training data
            frame = self.X_new.rename(columns=str)[list(names)]
            rows = frame.itertuples(index=False, name=None)
            strata = [r[0] if len(names) == 1 else tuple(r) for r in rows]
        return _stratum_codes(fit, strata, X.shape[0])

    def _surv(self, fit, theta, deleted=None):
        """(B, m) survival for coefficient rows theta (B, d), optionally without the rows
        ``deleted`` (a :class:`~coxinfluence.data.deletion.Deletion` of sorted rows) removes."""
        X = self._X(fit)[0]
        codes = self._codes(fit, X)
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        inc, shift, _ = hazard_increments(fit, theta, deleted, self.ctype)
        cum = np.einsum("bk,stk->bst", inc, cumulative_mask(fit, self.times))[:, codes]  # (B, P, T)
        lin = theta @ X.T - shift                                     # (B, P), shifted
        H = np.exp(lin)[:, :, None] * cum
        return np.exp(-H).reshape(theta.shape[0], -1)

    def value(self, fit, theta):
        return self._surv(fit, theta)

    def baseline_variance(self, fit):
        """The baseline hazard's own variance term of ``S(t|x)`` (Tsiatis 1981; R's
        ``survfit(fit, newdata)`` standard error): ``S^2 exp(2 x'theta) sum_{k: t_k <= t}
        m_k / den_k^2`` over the (Efron) terms of the patient's stratum, ``m_k`` the
        term's event weight and ``den_k`` its risk-set sum. With ``J V J'`` (the
        coefficients' part) it gives R's ``std.err`` of ``S(t|x)``."""
        X = self._X(fit)[0]
        codes = self._codes(fit, X)
        inc, shift, _ = hazard_increments(fit, fit.coef, ctype=self.ctype)
        m = fit.risk_sets.terms().mean_weight
        per_term = inc[0] ** 2 / np.broadcast_to(m, inc[0].shape)        # m / den^2
        cum = np.einsum("k,stk->st", per_term, cumulative_mask(fit, self.times))[codes]  # (P, T)
        risk2 = np.exp(2 * (X @ fit.coef - shift[0, 0]))
        S = self._surv(fit, fit.coef)[0].reshape(cum.shape)
        return (S ** 2 * risk2[:, None] * cum).reshape(-1)

    def followup_notes(self, fit):
        """Times past the last event time of each patient's stratum (module docstring:
        ``S(t|x)`` is the last plateau there)."""
        X, labels = self._X(fit)
        codes = self._codes(fit, X)
        data = fit.data
        ev = data.event_rows
        last = last_by_stratum(data.time[ev], data.strata[ev], int(data.strata.max()) + 1)
        strata = data.strata_labels
        return followup_notes(self.times, last, codes, labels, quantity="S(t|x)",
                              stratum_labels=(None if strata is None or len(strata) < 2
                                              else list(strata)))

    def jacobian(self, fit):
        X = self._X(fit)[0]
        mask = cumulative_mask(fit, self.times)[self._codes(fit, X)]       # (P, T, K)
        inc, shift, a = hazard_increments(fit, fit.coef, ctype=self.ctype)
        cum = mask @ inc[0]                                          # (P, T)
        cum_a = mask @ (inc[0][:, None] * a[0])                      # (P, T, d)
        e = np.exp(X @ fit.coef - shift[0, 0])                       # (P,)
        H = e[:, None] * cum                                         # (P, T)
        dH = e[:, None, None] * (cum[:, :, None] * X[:, None, :] - cum_a)
        return (-np.exp(-H)[:, :, None] * dH).reshape(-1, fit.data.d)

    def _batched(self, fit, thetas, units, batch):
        """(U, m) survival at coefficients ``thetas`` (U, d), unit g's rows deleted; NaN
        (not evaluated) where ``thetas`` is not finite (units not refitted)."""
        U = units.n_units
        out = np.full((U, len(self.columns(fit))), np.nan)
        th = np.asarray(thetas, dtype=np.float64)
        ok = np.flatnonzero(np.isfinite(th).all(axis=1))
        for start in range(0, ok.size, batch):
            codes = ok[start:start + batch]
            out[codes] = self._surv(fit, th[codes], units.deletion(codes))
        return out

    def data_effect(self, fit, units=None, batch=128):
        """``S(t|x; theta_hat, D_{-g}) - S(t|x; theta_hat, D)`` by deleting each unit
        (rows by default)."""
        units = row_units(fit.data) if units is None else units
        full = self._surv(fit, fit.coef)[0]
        thetas = np.repeat(fit.coef[None, :], units.n_units, axis=0)
        return self._batched(fit, thetas, units, batch) - full

    def refit_values(self, fit, theta_loo, units=None, batch=128):
        """``S(t|x; theta_{-g}, D_{-g})``: the refitted coefficients with the baseline
        hazard recomputed without unit g's rows (rows by default)."""
        units = row_units(fit.data) if units is None else units
        return self._batched(fit, theta_loo, units, batch)


class TimeRatios(Target):
    """An AFT model's time ratios ``g(theta) = exp(beta_j)`` for its covariates (not the
    intercept, not the scales): the factor on survival times per unit of ``x_j``;
    ``J`` the covariates' rows of ``diag(exp(theta_hat))``."""

    name = "time_ratio"

    @staticmethod
    def _positions(fit):
        return np.arange(1, fit.data.p)

    def columns(self, fit):
        return [f"TR {c}" for c in fit.covariates]

    def value(self, fit, theta):
        return np.exp(np.asarray(theta, dtype=np.float64)[:, self._positions(fit)])

    def jacobian(self, fit):
        cols = self._positions(fit)
        J = np.zeros((cols.size, len(fit.coef)))
        J[np.arange(cols.size), cols] = np.exp(fit.coef[cols])
        return J


_ALIASES = {"coef": Coefficients, "coefficients": Coefficients, "hr": HazardRatios,
            "hazard_ratio": HazardRatios, "hazard_ratios": HazardRatios,
            "tr": TimeRatios, "time_ratio": TimeRatios, "time_ratios": TimeRatios}

#: how a user asks for each target (by its ``name``, a seam's ``target_names``): a string,
#: or the object of ``ci.targets`` / ``ci`` that needs new patients
_HOW_TO_ASK = {
    "coef": "'coef'", "hazard_ratio": "'hr'", "time_ratio": "'tr'",
    "linear_predictor": "ci.targets.LinearPredictor(X_new)",
    "relative_risk": "ci.targets.RelativeRisk(X_new)",
    "survival": "ci.targets.Survival(X_new, times)",
    "aft_survival": "ci.AFTSurvival(X_new, times)",
    "survival_quantile": "ci.SurvivalQuantile(X_new, p)",
    "cumulative_incidence": "ci.CumulativeIncidence(X_new, times)",
    "lifelines_survival": "ci.LifelinesSurvival(df_new, times)",
    "risk_score": "ci.RiskScore(X_new)",
}


def describe_targets(names):
    """The targets ``names`` (a seam's ``target_names``) as a user asks for them: the
    strings first ('coef', 'hr', 'tr'), then the target objects of new patients."""
    asks = [_HOW_TO_ASK.get(n, repr(n)) for n in dict.fromkeys(names)]
    strings = [a for a in asks if a.startswith("'")]
    objects = [a for a in asks if not a.startswith("'")]
    text = ", ".join(strings)
    if objects:
        text += (", or " if text else "") + ", ".join(objects)
    return text


def resolve_target(target, names=None, model_name=None):
    """``None``/"coef" -> :class:`Coefficients`; "hr" -> :class:`HazardRatios`; "tr" ->
    :class:`TimeRatios`; a :class:`Target` as is. Targets of new patients must be objects
    (they need ``X_new``). ``names``: the targets the model offers (its seam's
    ``target_names``), listed by the message for an unknown name (with ``model_name``)."""
    if target is None:
        return Coefficients()
    if isinstance(target, Target):
        return target
    if isinstance(target, str) and target.lower() in _ALIASES:
        return _ALIASES[target.lower()]()
    if names is None:
        names = ("coef", "hazard_ratio", "relative_risk", "survival")
    model = f" for this model ({model_name})" if model_name else ""
    raise ValueError(f"unknown target {target!r}{model}: its targets are "
                     f"{describe_targets(names)} (ci = coxinfluence)")


def target_change(fit, theta_change, target, units=None, *, include_data_effect=True):
    """Estimated target change ``g_{-g} - g`` (U, m) from coefficient changes (U, d) of the
    units ``units`` (default: rows): ``theta_change J_g' + [data effect]`` (module
    docstring)."""
    dtheta = np.asarray(theta_change, dtype=np.float64)
    J = np.asarray(target.jacobian(fit), dtype=np.float64)
    # the coefficients themselves: a copy, not a product with the identity
    out = (dtheta.copy() if J.shape == (dtheta.shape[1],) * 2
           and np.array_equal(J, np.eye(J.shape[0])) else dtheta @ J.T)
    if include_data_effect:
        eff = target.data_effect(fit, units)
        if eff is not None:
            out = out + eff
    return out


def target_exact(fit, theta_loo, target, units=None):
    """Exact target change ``g(theta_{-g}; D_{-g}) - g(theta_hat; D)`` (U, m) from the
    refitted coefficients ``theta_loo`` (U, d) of the units ``units`` (default: rows,
    caller's order)."""
    base = target.value(fit, fit.coef[None, :])[0]
    return target.refit_values(fit, np.asarray(theta_loo, dtype=np.float64), units) - base

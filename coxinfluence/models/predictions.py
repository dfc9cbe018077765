"""Predictions for new patients from a fitted model: the one place of each formula.

The public functions take a fit of any family that has the quantity and return pandas
objects: **rows are the new patients** (indexed like ``X_new``: its index for a DataFrame,
its ``name`` for a Series, ``0..m-1`` for an array), **columns the times** (a float
index named ``time``) or the probabilities ``p`` (named ``p``); ``predict_lp`` and
``predict_risk`` return a Series (one number per patient), ``predict_quantile`` a Series
for one ``p`` and a DataFrame for several. ``X_new`` is read as
:func:`coxinfluence.data.new_patients.new_patient_matrix` reads it (a DataFrame's columns
matched by name, extra columns ignored); ``strata`` as the targets take them: for a
stratified fit each patient's stratum label, one for all or one per patient, by default
read from the stratum column(s) of ``X_new`` when it has them (Cox).

Cox (``CoxFit``), with R's equivalent:

- ``predict_lp``: ``x'beta``, **not centred**: R's ``predict(fit, newdata, type = "lp",
  reference = "zero")``;
- ``predict_risk``: ``exp(x'beta)``, not centred: R's ``predict(fit, newdata, type =
  "risk", reference = "zero")``;
- ``predict_cumulative_hazard``: ``Lambda_0(t) exp(x'beta)``: R's ``survfit(fit,
  newdata)$cumhaz`` read at ``times``;
- ``predict_survival``: ``exp(-Lambda_0(t) exp(x'beta))``: R's ``survfit(fit,
  newdata)$surv`` read at ``times``.

R's ``predict.coxph(type = "lp")`` and lifelines' ``predict_log_partial_hazard`` centre
the linear predictor at the training means (R: ``(x - mean)'beta``, within each stratum
with ``reference = "strata"``); ours is ``x'beta``, the value of the influence target
``ci.targets.LinearPredictor`` (whose change on deleting a patient does not depend on a
centre that the deletion itself moves); subtract ``predict_lp`` of the means to centre.
``Lambda_0`` is the fit's own baseline cumulative hazard, Breslow's with or without
Efron's tie correction as R's ``survfit.coxph(ctype=)`` (:mod:`coxinfluence.likelihood.
baseline_hazard`): ``ctype`` None (default) takes the fit's (``CoxFit.ctype``; for a
``fit_cox`` fit R's default for its ties: 2 for Efron, 1 for Breslow; lifelines' and
statsmodels' fits 1), so a ``fit_cox`` fit predicts R's ``survfit(fit, newdata)`` and a
lifelines fit lifelines' ``predict_survival_function``. The values are step functions
of time, right-continuous: at an event time the jump is included; before the first
event time ``S = 1``; past the last the last value is carried forward (R's
``summary(survfit, times, extend = TRUE)``).

AFT (``AFTFit``, R's ``survreg``; ``log T = x'beta + sigma W``, ``x`` with the intercept,
``sigma`` the scale of the patient's stratum; :mod:`coxinfluence.likelihood.aft`):

- ``predict_lp``: ``x'beta`` = R's ``predict(fit, newdata, type = "lp")`` (survreg's lp is
  not centred);
- ``predict_survival``: ``S0((log t - x'beta) / sigma)`` = R's ``1 - psurvreg(t, lp,
  sigma, dist)``;
- ``predict_quantile(p)``: ``exp(x'beta + sigma w_p)``, ``F0(w_p) = p``, = R's
  ``predict(fit, newdata, type = "quantile", p = p)`` (``p = 0.5``: the median).

Fine-Gray (``FineGrayFit``, ``cmprsk::crr``): ``predict_cumulative_incidence`` is
``1 - exp(-Lambda_10(t) exp(x'beta))``, Breslow's baseline of the censoring-weighted risk
sets (:func:`coxinfluence.likelihood.fine_gray.baseline_jumps`), = ``predict.crr(fit,
cov1 = X_new)`` read at ``times`` (0 before the first failure of the cause);
``predict_lp`` and ``predict_risk`` the uncentred ``x'beta`` and ``exp(x'beta)``.

Each prediction equals the value its influence target (``ci.targets``) measures at the
fitted parameters: the targets' ``value(fit, theta)`` call the formulas below
(``cox_cumulative_hazard``, ``aft_survival``, ``aft_quantiles``, ``fine_gray_parts`` and
``cumulative_incidence``), which take any parameters ``theta`` (B, d) and, for the
baselines estimated from the data, a deletion.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import logit, ndtri

from coxinfluence.data.new_patients import (
    new_patient_matrix,
    nonnegative_times,
    positive_times,
    probabilities,
    strata_from_frame,
    stratum_codes,
)
from coxinfluence.likelihood.aft import DISTRIBUTIONS
from coxinfluence.likelihood.baseline_hazard import cumulative_mask, hazard_increments
from coxinfluence.likelihood.fine_gray import baseline_jumps

__all__ = ["predict_lp", "predict_risk", "predict_cumulative_hazard", "predict_survival",
           "predict_quantile", "predict_cumulative_incidence",
           "linear_predictor", "cox_cumulative_hazard", "cox_strata",
           "aft_stratum_labels", "aft_design", "aft_location_scale", "aft_z",
           "aft_survival", "standard_quantile", "aft_quantiles",
           "fine_gray_failures", "fine_gray_strata", "fine_gray_mask", "fine_gray_parts",
           "cumulative_incidence"]


# ------------------------------------------------------------------ every family

def linear_predictor(theta, X):
    """(B, P) ``x'theta`` of the patients ``X`` (P, d) at each row of ``theta`` (B, d)."""
    return np.asarray(theta, dtype=np.float64) @ X.T


# --------------------------------------------------------------------------- Cox

def cox_strata(fit, X_new, strata, m):
    """(m,) the stratum codes of a Cox fit's new patients: ``strata`` (labels as in the
    training data), else read from ``X_new``'s stratum column(s) (module docstring)."""
    data = fit.data
    given = strata_from_frame(X_new, strata, data.strata_names)
    return stratum_codes(data.strata_labels, given, m)


def cox_cumulative_hazard(fit, theta, X, codes, times, deleted=None, ctype=None):
    """(B, P, T) ``Lambda_0(t; theta, D) exp(theta'x)`` of the patients ``X`` (P, d) in the
    strata ``codes`` (P,) at ``times`` (T,), for each row of ``theta`` (B, d); the baseline
    ``Lambda_0`` of the fit's data without the rows ``deleted`` (a
    :class:`~coxinfluence.data.deletion.Deletion` of sorted rows, one row of ``theta``
    each; None: all rows) and of the baseline ``ctype`` (module docstring). Computed on
    the fit's shifted scale (the shift cancels between the baseline and ``exp(theta'x)``).
    ``exp(-.)`` of it is the survival ``S(t | x)``."""
    theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    inc, shift, _ = hazard_increments(fit, theta, deleted, ctype)
    cum = np.einsum("bk,stk->bst", inc, cumulative_mask(fit, times))[:, codes]  # (B, P, T)
    lin = linear_predictor(theta, X) - shift                          # (B, P), shifted
    return np.exp(lin)[:, :, None] * cum


def _cox_parts(fit, X_new, times, strata):
    X, index = new_patient_matrix(X_new, fit.data.columns)
    codes = cox_strata(fit, X_new, strata, X.shape[0])
    return X, index, codes, nonnegative_times(times)


def _cox_cumulative_hazard(fit, X_new, times, strata=None, ctype=None):
    X, index, codes, t = _cox_parts(fit, X_new, times, strata)
    if ctype not in (None, 1, 2):
        raise ValueError(f"ctype must be None (the model's), 1 or 2; got {ctype!r}")
    return cox_cumulative_hazard(fit, fit.coef, X, codes, t, ctype=ctype)[0], index, t


# --------------------------------------------------------------------------- AFT

def aft_stratum_labels(fit):
    """An AFT fit's stratum labels in code order (None without strata), from the labels
    of its rows: scalars, or tuples for several stratum columns (as
    :func:`coxinfluence.data.inputs.encode_strata`)."""
    labels = fit.raw.get("strata")
    if labels is None:
        return None
    rows = np.asarray(labels, dtype=object)
    codes = fit.data.strata
    first = [int(np.flatnonzero(codes == k)[0]) for k in range(fit.data.n_strata)]
    return tuple(tuple(_plain(v) for v in lab) if isinstance(lab, np.ndarray) else _plain(lab)
                 for lab in rows[first])


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def aft_design(fit, X_new, strata=None, transform=None):
    """``(design, codes, index)``: an AFT fit's new patients' design (P, p) with the
    intercept, their stratum codes (P,) and their labels."""
    X, index = new_patient_matrix(X_new, fit.covariates, transform)
    codes = stratum_codes(aft_stratum_labels(fit), strata, X.shape[0])
    return np.column_stack([np.ones(X.shape[0]), X]), codes, index


def aft_location_scale(fit, theta, design, codes):
    """(B, P) ``x'beta`` and ``log sigma`` of each patient at each row of ``theta``."""
    theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    p = fit.data.p
    lp = linear_predictor(theta[:, :p], design)
    if fit.data.fixed_scale:
        return lp, np.zeros_like(lp)
    return lp, theta[:, p:][:, codes]


def aft_z(fit, theta, design, codes, times):
    """``(z, s)``: (B, P, T) ``z = (log t - x'beta) / sigma`` and (B, P) ``s = log
    sigma``."""
    lp, s = aft_location_scale(fit, theta, design, codes)
    z = (np.log(times)[None, None, :] - lp[:, :, None]) * np.exp(-s)[:, :, None]
    return z, s


def aft_survival(fit, theta, design, codes, times):
    """(B, P, T) ``S(t | x) = S0(z)`` (module docstring)."""
    z = aft_z(fit, theta, design, codes, times)[0]
    return np.exp(fit.likelihood.family.log_S(z))


def standard_quantile(dist, p):
    """``w_p`` with ``F0(w_p) = p`` for the ``W`` of ``dist`` (R's
    ``survreg.distributions[[.]]$quantile``): ``log(-log(1 - p))`` (extreme value),
    ``Phi^{-1}(p)`` (normal), ``log(p / (1 - p))`` (logistic)."""
    p = np.asarray(p, dtype=np.float64)
    family = DISTRIBUTIONS[dist]
    if family == "extreme":
        return np.log(-np.log1p(-p))
    if family == "gaussian":
        return ndtri(p)
    return logit(p)


def aft_quantiles(fit, theta, design, codes, p):
    """``(Q, s, w)``: (B, P, k) ``Q_p(x) = exp(x'beta + sigma w_p)``, (B, P) ``log
    sigma`` and (k,) ``w_p`` (module docstring)."""
    lp, s = aft_location_scale(fit, theta, design, codes)
    w = standard_quantile(fit.dist, p)
    Q = np.exp(lp[:, :, None] + np.exp(s)[:, :, None] * w[None, None, :])
    return Q, s, w


# ---------------------------------------------------------------------- Fine-Gray

def fine_gray_new_patients(fit, X_new, transform=None):
    """``(X, index)``: a Fine-Gray fit's new patients (C order: the products do not depend
    on the order of the caller's columns) and their labels."""
    X, index = new_patient_matrix(X_new, fit.columns, transform)
    return np.ascontiguousarray(X), index


def fine_gray_strata(fit, strata, m):
    """(m,) the stratum codes of a Fine-Gray fit's new patients."""
    labels = tuple(fit.strata_labels) if fit.data.n_strata > 1 else None
    return stratum_codes(labels, strata, m)


def fine_gray_failures(fit):
    """The distinct failure times of the cause and their stratum codes."""
    data = fit.data
    first = data.starts[data.fail]
    return data.time[first], data.stratum[first]


def fine_gray_mask(fit, codes, times):
    """(P, T, K) ``t_k <= t`` for the failure times of the cause in each patient's
    stratum."""
    t_fail, s_fail = fine_gray_failures(fit)
    upto = t_fail[None, :] <= np.asarray(times, dtype=np.float64)[:, None]   # (T, K)
    return (upto[None, :, :] & (s_fail[None, None, :] == codes[:, None, None])
            ).astype(np.float64)


def fine_gray_parts(fit, theta, X, mask, presence):
    """``lin`` (B, P) ``x'theta - log_scale``, ``cum`` (B, P, T) the baseline's jumps of
    each patient's stratum summed up to each time (``exp(lin) cum = exp(x'theta)
    Lambda_10(t)``), and the jumps and risk-set means
    (:func:`~coxinfluence.likelihood.fine_gray.baseline_jumps`), for the subjects present
    (``presence`` (B, n), sorted order) at each row of ``theta`` (B, d)."""
    jumps, log_scale, xbar = baseline_jumps(fit.data, theta, presence)
    lin = linear_predictor(theta, X) - log_scale[:, None]
    return lin, np.einsum("bk,ptk->bpt", jumps, mask), jumps, xbar


def cumulative_incidence(lin, cum):
    """(B, P T) ``F = 1 - exp(-exp(lin) cum)``, patient-major (``cum`` (B, P, T))."""
    H = np.exp(lin)[:, :, None] * cum
    return -np.expm1(-H).reshape(lin.shape[0], -1)


# ------------------------------------------------------------------ public functions

def _family(fit, what, families):
    """The family name of ``fit`` among ``families`` ("cox", "aft", "fine_gray"), or a
    TypeError saying which fits have ``what``."""
    known = {"cox": "a CoxFit (ci.fit_cox)", "aft": "an AFTFit (ci.fit_aft)",
             "fine_gray": "a FineGrayFit (ci.fit_fine_gray)"}
    # each fit class names its family (FitInterface.prediction_family); a fit module
    # imports this one, so no isinstance on the fit classes here
    family = getattr(type(fit), "prediction_family", None)
    if family in families:
        return family
    fits = " or ".join(known[name] for name in families)
    raise TypeError(f"{what} is defined for {fits}; got {type(fit).__name__}")


def _frame(values, index, columns, name):
    return pd.DataFrame(np.asarray(values, dtype=np.float64), index=index,
                        columns=pd.Index(np.asarray(columns, dtype=np.float64), name=name))


def predict_lp(fit, X_new) -> pd.Series:
    """The linear predictor ``x'beta`` of new patients (module docstring), a Series
    indexed by them. Cox and Fine-Gray: not centred (R: ``predict(coxph, newdata, type =
    "lp", reference = "zero")``), the value of ``ci.targets.LinearPredictor``; AFT: with
    the intercept, R's ``predict(survreg, newdata, type = "lp")``."""
    family = _family(fit, "predict_lp", ("cox", "aft", "fine_gray"))
    if family == "aft":
        X, index = new_patient_matrix(X_new, fit.covariates)    # lp: no stratum needed
        design = np.column_stack([np.ones(X.shape[0]), X])
        lp = linear_predictor(fit.coef[: fit.data.p], design)
    else:
        X, index = new_patient_matrix(X_new, fit.data.columns if family == "cox"
                                      else fit.columns)
        lp = linear_predictor(fit.coef, X)
    return pd.Series(lp, index=index, name="lp")


def predict_risk(fit, X_new) -> pd.Series:
    """``exp(x'beta)`` of new patients, not centred (Cox: R's ``predict(fit, newdata, type
    = "risk", reference = "zero")``; the value of ``ci.targets.RelativeRisk``), a Series
    indexed by them. Cox and Fine-Gray (the subdistribution hazard ratio to ``x = 0``)."""
    _family(fit, "predict_risk", ("cox", "fine_gray"))
    lp = predict_lp(fit, X_new)
    return pd.Series(np.exp(lp.to_numpy()), index=lp.index, name="risk")


def predict_cumulative_hazard(fit, X_new, times, strata=None, ctype=None) -> pd.DataFrame:
    """A Cox fit's cumulative hazard ``Lambda_0(t) exp(x'beta)`` of new patients at
    ``times`` (finite, >= 0): R's ``survfit(fit, newdata)$cumhaz`` read at ``times``
    (module docstring: the baseline, ``ctype``, ``strata``). Rows: the patients; columns:
    the times."""
    _family(fit, "predict_cumulative_hazard", ("cox",))
    H, index, t = _cox_cumulative_hazard(fit, X_new, times, strata, ctype)
    return _frame(H, index, t, "time")


def predict_survival(fit, X_new, times, strata=None, ctype=None) -> pd.DataFrame:
    """The survival probability ``S(t | x)`` of new patients at ``times`` (module
    docstring), rows the patients, columns the times. Cox: ``exp(-Lambda_0(t)
    exp(x'beta))``, R's ``survfit(fit, newdata)$surv`` read at ``times`` (>= 0; the
    fit's own baseline, or ``ctype`` 1 or 2); AFT: ``S0((log t - x'beta) / sigma)``, R's
    ``1 - psurvreg(t, lp, sigma, dist)`` (``times`` > 0; no ``ctype``). ``strata``: each
    patient's stratum in a stratified fit. The value of ``ci.targets.Survival``."""
    family = _family(fit, "predict_survival", ("cox", "aft"))
    if family == "cox":
        H, index, t = _cox_cumulative_hazard(fit, X_new, times, strata, ctype)
        return _frame(np.exp(-H), index, t, "time")
    if ctype is not None:
        raise ValueError("ctype= is the baseline hazard of a Cox model; an AFT model has "
                         "none")
    t = positive_times(times)
    design, codes, index = aft_design(fit, X_new, strata)
    return _frame(aft_survival(fit, fit.coef, design, codes, t)[0], index, t, "time")


def predict_quantile(fit, X_new, p=0.5, strata=None):
    """The ``p``-quantile ``exp(x'beta + sigma w_p)`` of new patients' survival times under
    an AFT fit (``p = 0.5``: the median): R's ``predict(fit, newdata, type = "quantile", p
    = p)``. One ``p``: a Series indexed by the patients; several: a DataFrame, rows the
    patients, columns ``p``. The value of ``ci.targets.Quantile``."""
    _family(fit, "predict_quantile", ("aft",))
    q = probabilities(p)
    design, codes, index = aft_design(fit, X_new, strata)
    Q = aft_quantiles(fit, fit.coef, design, codes, q)[0][0]
    if np.ndim(p) == 0:
        return pd.Series(Q[:, 0], index=index, name=f"Q({q[0]:g})")
    return _frame(Q, index, q, "p")


def predict_cumulative_incidence(fit, X_new, times, strata=None) -> pd.DataFrame:
    """A Fine-Gray fit's cumulative incidence of its cause ``1 - exp(-Lambda_10(t)
    exp(x'beta))`` for new patients at ``times`` (> 0): ``cmprsk::predict.crr(fit, cov1 =
    X_new)`` read at ``times`` (module docstring). Rows: the patients; columns: the
    times. ``strata``: each patient's stratum in a stratified fit. The value of
    ``ci.targets.CumulativeIncidence``."""
    _family(fit, "predict_cumulative_incidence", ("fine_gray",))
    t = positive_times(times)
    X, index = fine_gray_new_patients(fit, X_new)
    codes = fine_gray_strata(fit, strata, X.shape[0])
    theta = fit.coef[None, :]
    lin, cum = fine_gray_parts(fit, theta, X, fine_gray_mask(fit, codes, t),
                               np.ones((1, fit.data.n)))[:2]
    return _frame(cumulative_incidence(lin, cum)[0].reshape(X.shape[0], t.size), index, t,
                  "time")

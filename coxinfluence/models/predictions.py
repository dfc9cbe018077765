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
cov1 = X_new)`` read at ``times`` >= 0 (0 before the first failure of the cause; at a
failure time, ``t = 0`` included, its jump is in); ``predict_lp`` and ``predict_risk`` the
uncentred ``x'beta`` and ``exp(x'beta)``.

Past the follow-up (one rule with the targets and ``ci.evaluate``,
:class:`~coxinfluence.data.followup.TargetBeyondFollowUpWarning`): a time past the last
event time of the training data in the patient's stratum (Fine-Gray: the cause's last
failure time) is predicted, with a warning per stratum naming the times, that limit and
what the value is (Cox, Fine-Gray: the last plateau carried forward; AFT: the parametric
model's extrapolation); :func:`follow_up_notes` writes the sentences.

Each prediction equals the value its influence target (``ci.targets``) measures at the
fitted parameters: the targets' ``value(fit, theta)`` call the formulas below
(``cox_cumulative_hazard``, ``aft_survival``, ``aft_quantiles``, ``fine_gray_parts`` and
``cumulative_incidence``), which take any parameters ``theta`` (B, d) and, for the
baselines estimated from the data, a deletion.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.data.followup import followup_notes, last_by_stratum, warn_beyond_follow_up
from coxinfluence.data.new_patients import (
    new_patient_matrix,
    nonnegative_times,
    positive_times,
    probabilities,
    strata_from_frame,
    stratum_codes,
)
from coxinfluence.likelihood.aft import DISTRIBUTIONS, EXACT, INTERVAL, LEFT
from coxinfluence.likelihood.baseline_hazard import cumulative_sums, hazard_increments
from coxinfluence.likelihood.fine_gray import baseline_jumps
from coxinfluence.models.base import FitProtocol

__all__ = ["predict_lp", "predict_risk", "predict_cumulative_hazard", "predict_survival",
           "predict_quantile", "predict_cumulative_incidence",
           "linear_predictor", "follow_up_notes", "cox_cumulative_hazard", "cox_strata",
           "aft_stratum_labels", "aft_design", "aft_location_scale", "aft_z",
           "aft_survival", "standard_quantile", "aft_quantiles",
           "fine_gray_failures", "fine_gray_strata", "fine_gray_mask", "fine_gray_parts",
           "cumulative_incidence"]


# ------------------------------------------------------------------ every family

def linear_predictor(theta, X):
    """``x'theta`` of the patients ``X`` at each row of ``theta``.

    Parameters
    ----------
    theta : array_like, shape (B, d) or (d,)
        Coefficients.
    X : numpy.ndarray, shape (P, d)
        The patients' covariates.

    Returns
    -------
    numpy.ndarray, shape (B, P) or (P,)
        The linear predictors.
    """
    return np.asarray(theta, dtype=np.float64) @ X.T


def follow_up_notes(fit, times, codes, patients, quantity):
    """The notes on ``times`` past the follow-up of each patient's stratum, for any fit.

    The one rule (:class:`~coxinfluence.data.followup.TargetBeyondFollowUpWarning`),
    read alike by the ``predict_*`` functions, the targets' ``followup_notes`` and
    ``ci.evaluate``: the follow-up is the last event time of the training data in the
    patient's stratum. Cox: the last event time (``S(t|x)`` is the last plateau after
    it); Fine-Gray: the cause's last failure time (``F(t|x)`` likewise); AFT: the last
    event time, an observed one or the upper bound of a left- or interval-censored one
    (``S(t|x)`` is the parametric model's extrapolation after it).

    Parameters
    ----------
    fit : CoxFit, AFTFit or FineGrayFit
        The fit.
    times : array_like, shape (T,)
        The times.
    codes : array_like of int, shape (P,)
        Each patient's stratum code.
    patients : sequence
        The patients' labels.
    quantity : str
        What is read at the times (e.g. ``"S(t|x)"``).

    Returns
    -------
    tuple of str
        One sentence per stratum with times past its follow-up; empty if none.
    """
    family = _family(fit, "follow_up_notes", ("cox", "aft", "fine_gray"))
    data, events, consequence = fit.data, "event", None
    if family == "cox":
        ev = data.event_rows
        last = last_by_stratum(data.time[ev], data.strata[ev], int(data.strata.max()) + 1)
        strata = data.strata_labels
        strata = None if strata is None or len(strata) < 2 else list(strata)
    elif family == "aft":
        log_t = np.where(data.kind == INTERVAL, data.y2, data.y)
        event = np.isin(data.kind, (EXACT, LEFT, INTERVAL))
        last = last_by_stratum(np.exp(log_t[event]), data.strata[event], data.n_strata)
        strata = aft_stratum_labels(fit) if data.n_strata > 1 else None
        consequence = (f"{quantity} there is extrapolated by the parametric ({fit.dist}) "
                       "model beyond the data, not estimated from events")
    else:
        last = last_by_stratum(*fine_gray_failures(fit), data.n_strata)
        strata = list(fit.strata_labels) if data.n_strata > 1 else None
        cause = fit.cause.item() if isinstance(fit.cause, np.generic) else fit.cause
        events = f"cause-{cause} failure"
    return followup_notes(times, last, codes, [str(p) for p in patients], quantity=quantity,
                          events=events, stratum_labels=strata, consequence=consequence)


# --------------------------------------------------------------------------- Cox

def cox_strata(fit, X_new, strata, m):
    """The stratum codes of a Cox fit's new patients.

    Parameters
    ----------
    fit : CoxFit
        The fit.
    X_new : array_like or pandas.DataFrame
        The new patients (their stratum column(s) are read when ``strata`` is None).
    strata : optional
        Labels as in the training data (module docstring).
    m : int
        The number of patients.

    Returns
    -------
    numpy.ndarray, shape (m,)
        The stratum codes.
    """
    data = fit.data
    given = strata_from_frame(X_new, strata, data.strata_names)
    return stratum_codes(data.strata_labels, given, m)


def cox_cumulative_hazard(fit, theta, X, codes, times, deleted=None, ctype=None):
    """``Lambda_0(t; theta, D) exp(theta'x)``: the cumulative hazard for any coefficients.

    Computed on the fit's shifted scale (the shift cancels between the baseline and
    ``exp(theta'x)``). ``exp(-.)`` of it is the survival ``S(t | x)``.

    Parameters
    ----------
    fit : CoxFit
        The fit whose data give the baseline.
    theta : array_like, shape (B, d)
        Coefficients, one problem per row.
    X : numpy.ndarray, shape (P, d)
        The patients' covariates.
    codes : numpy.ndarray, shape (P,)
        The patients' stratum codes.
    times : numpy.ndarray, shape (T,)
        Times.
    deleted : Deletion, optional
        The baseline ``Lambda_0`` of the fit's data without these rows (a
        :class:`~coxinfluence.data.deletion.Deletion` of sorted rows, one row of
        ``theta`` each); None: all rows.
    ctype : {None, 1, 2}, optional
        The baseline (module docstring).

    Returns
    -------
    numpy.ndarray, shape (B, P, T)
        The cumulative hazards.
    """
    theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    inc, shift, _ = hazard_increments(fit, theta, deleted, ctype)
    cum = cumulative_sums(fit, inc, times)[:, codes]                  # (B, P, T)
    lin = linear_predictor(theta, X) - shift                          # (B, P), shifted
    return np.exp(lin)[:, :, None] * cum


def _cox_parts(fit, X_new, times, strata):
    X, index = new_patient_matrix(X_new, fit.data.columns)
    codes = cox_strata(fit, X_new, strata, X.shape[0])
    return X, index, codes, nonnegative_times(times)


def _cox_cumulative_hazard(fit, X_new, times, strata, ctype, quantity):
    """The predicted cumulative hazard, warned past the follow-up (``quantity`` names it)."""
    X, index, codes, t = _cox_parts(fit, X_new, times, strata)
    if ctype not in (None, 1, 2):
        raise ValueError(f"ctype must be None (the model's), 1 or 2; got {ctype!r}")
    H = cox_cumulative_hazard(fit, fit.coef, X, codes, t, ctype=ctype)[0]
    warn_beyond_follow_up(follow_up_notes(fit, t, codes, index, quantity))
    return H, index, t


# --------------------------------------------------------------------------- AFT

def aft_stratum_labels(fit):
    """An AFT fit's stratum labels in code order, from the labels of its rows.

    Parameters
    ----------
    fit : AFTFit
        The fit.

    Returns
    -------
    tuple or None
        Scalars, or tuples for several stratum columns (as
        :func:`coxinfluence.data.inputs.encode_strata`); None without strata.
    """
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
    """An AFT fit's new patients: their design with the intercept, strata and labels.

    Parameters
    ----------
    fit : AFTFit
        The fit.
    X_new : array_like or pandas.DataFrame
        The new patients (module docstring).
    strata : optional
        Their strata (module docstring).
    transform : callable, optional
        A raw frame -> design frame (lifelines formula models), used when the frame
        lacks the columns.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray, pandas.Index)
        ``(design, codes, index)``: the design (P, p) with the intercept, the stratum
        codes (P,) and the patients' labels.
    """
    X, index = new_patient_matrix(X_new, fit.covariates, transform)
    codes = stratum_codes(aft_stratum_labels(fit), strata, X.shape[0])
    return np.column_stack([np.ones(X.shape[0]), X]), codes, index


def aft_location_scale(fit, theta, design, codes):
    """``x'beta`` and ``log sigma`` of each patient at each row of ``theta``.

    Parameters
    ----------
    fit : AFTFit
        The fit.
    theta : array_like, shape (B, k)
        Parameters in R's order, one problem per row.
    design : numpy.ndarray, shape (P, p)
        The patients' design, with the intercept.
    codes : numpy.ndarray, shape (P,)
        Their stratum codes.

    Returns
    -------
    tuple of numpy.ndarray
        ``(lp, log_sigma)``, each (B, P); ``log_sigma`` is 0 for the exponential.
    """
    theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    p = fit.data.p
    lp = linear_predictor(theta[:, :p], design)
    if fit.data.fixed_scale:
        return lp, np.zeros_like(lp)
    return lp, theta[:, p:][:, codes]


def aft_z(fit, theta, design, codes, times):
    """The standardised log times ``z = (log t - x'beta) / sigma`` and ``log sigma``.

    Parameters
    ----------
    fit : AFTFit
        The fit.
    theta : array_like, shape (B, k)
        Parameters in R's order, one problem per row.
    design : numpy.ndarray, shape (P, p)
        The patients' design, with the intercept.
    codes : numpy.ndarray, shape (P,)
        Their stratum codes.
    times : numpy.ndarray, shape (T,)
        Positive times.

    Returns
    -------
    tuple of numpy.ndarray
        ``(z, s)``: ``z`` (B, P, T) and ``s = log sigma`` (B, P).
    """
    lp, s = aft_location_scale(fit, theta, design, codes)
    z = (np.log(times)[None, None, :] - lp[:, :, None]) * np.exp(-s)[:, :, None]
    return z, s


def aft_survival(fit, theta, design, codes, times):
    """The AFT survival ``S(t | x) = S0(z)``, ``z = (log t - x'beta) / sigma``.

    Parameters
    ----------
    fit : AFTFit
        The fit.
    theta : array_like, shape (B, k)
        Parameters in R's order, one problem per row.
    design : numpy.ndarray, shape (P, p)
        The patients' design, with the intercept.
    codes : numpy.ndarray, shape (P,)
        Their stratum codes.
    times : numpy.ndarray, shape (T,)
        Positive times.

    Returns
    -------
    numpy.ndarray, shape (B, P, T)
        The survival probabilities.
    """
    z = aft_z(fit, theta, design, codes, times)[0]
    return np.exp(fit.likelihood.family.log_S(z))


def standard_quantile(dist, p):
    """``w_p`` with ``F0(w_p) = p`` for the ``W`` of ``dist``.

    R's ``survreg.distributions[[.]]$quantile``: ``log(-log(1 - p))`` (extreme value:
    Weibull, exponential), ``Phi^{-1}(p)`` (normal: log-normal), ``log(p / (1 - p))``
    (logistic: log-logistic).

    Parameters
    ----------
    dist : {"weibull", "exponential", "lognormal", "loglogistic"}
        The distribution.
    p : array_like
        Probabilities.

    Returns
    -------
    numpy.ndarray
        ``w_p``, the shape of ``p``.

    Examples
    --------
    >>> from coxinfluence.models.predictions import standard_quantile
    >>> standard_quantile("lognormal", [0.5, 0.975]).round(4)
    array([0.  , 1.96])
    """
    p = np.asarray(p, dtype=np.float64)
    family = DISTRIBUTIONS[dist]
    if family == "extreme":
        return np.log(-np.log1p(-p))
    from scipy.special import logit, ndtri  # on use: import coxinfluence imports no scipy

    if family == "gaussian":
        return ndtri(p)
    return logit(p)


def aft_quantiles(fit, theta, design, codes, p):
    """The AFT quantiles ``Q_p(x) = exp(x'beta + sigma w_p)``.

    Parameters
    ----------
    fit : AFTFit
        The fit.
    theta : array_like, shape (B, k)
        Parameters in R's order, one problem per row.
    design : numpy.ndarray, shape (P, p)
        The patients' design, with the intercept.
    codes : numpy.ndarray, shape (P,)
        Their stratum codes.
    p : numpy.ndarray
        Probabilities.

    Returns
    -------
    tuple of numpy.ndarray
        ``(Q, s, w)``: ``Q`` (B, P, len(p)), ``s = log sigma`` (B, P) and ``w_p``.
    """
    lp, s = aft_location_scale(fit, theta, design, codes)
    w = standard_quantile(fit.dist, p)
    Q = np.exp(lp[:, :, None] + np.exp(s)[:, :, None] * w[None, None, :])
    return Q, s, w


# ---------------------------------------------------------------------- Fine-Gray

def fine_gray_new_patients(fit, X_new, transform=None):
    """A Fine-Gray fit's new patients and their labels.

    Parameters
    ----------
    fit : FineGrayFit
        The fit.
    X_new : array_like or pandas.DataFrame
        The new patients (module docstring).
    transform : callable, optional
        A raw frame -> design frame, used when the frame lacks the columns.

    Returns
    -------
    tuple of (numpy.ndarray, pandas.Index)
        ``(X, index)``: the covariates (C order: the products do not depend on the
        order of the caller's columns) and the labels.
    """
    X, index = new_patient_matrix(X_new, fit.columns, transform)
    return np.ascontiguousarray(X), index


def fine_gray_strata(fit, strata, m):
    """The stratum codes of a Fine-Gray fit's new patients.

    Parameters
    ----------
    fit : FineGrayFit
        The fit.
    strata : optional
        Their strata (module docstring).
    m : int
        The number of patients.

    Returns
    -------
    numpy.ndarray, shape (m,)
        The stratum codes.
    """
    labels = tuple(fit.strata_labels) if fit.data.n_strata > 1 else None
    return stratum_codes(labels, strata, m)


def fine_gray_failures(fit):
    """The distinct failure times of the cause and their stratum codes.

    Parameters
    ----------
    fit : FineGrayFit
        The fit.

    Returns
    -------
    tuple of numpy.ndarray
        ``(times, strata)``, one entry per distinct failure time (per stratum).
    """
    data = fit.data
    first = data.starts[data.fail]
    return data.time[first], data.stratum[first]


def fine_gray_mask(fit, codes, times):
    """``t_k <= t`` for the failure times of the cause in each patient's stratum.

    Parameters
    ----------
    fit : FineGrayFit
        The fit.
    codes : numpy.ndarray, shape (P,)
        The patients' stratum codes.
    times : array_like, shape (T,)
        Times.

    Returns
    -------
    numpy.ndarray, shape (P, T, K)
        1.0 where failure time ``k`` is in the patient's stratum and at most ``t``.
    """
    t_fail, s_fail = fine_gray_failures(fit)
    upto = t_fail[None, :] <= np.asarray(times, dtype=np.float64)[:, None]   # (T, K)
    return (upto[None, :, :] & (s_fail[None, None, :] == codes[:, None, None])
            ).astype(np.float64)


def fine_gray_parts(fit, theta, X, mask, presence):
    """The parts of the Fine-Gray cumulative incidence, for any coefficients and deletions.

    Parameters
    ----------
    fit : FineGrayFit
        The fit.
    theta : array_like, shape (B, d)
        Coefficients, one problem per row.
    X : numpy.ndarray, shape (P, d)
        The patients' covariates.
    mask : numpy.ndarray, shape (P, T, K)
        :func:`fine_gray_mask`.
    presence : numpy.ndarray, shape (B, n)
        The subjects present in each problem (sorted order).

    Returns
    -------
    tuple of numpy.ndarray
        ``(lin, cum, jumps, xbar)``: ``lin`` (B, P) ``x'theta - log_scale``, ``cum``
        (B, P, T) the baseline's jumps of each patient's stratum summed up to each time
        (``exp(lin) cum = exp(x'theta) Lambda_10(t)``), and the jumps and risk-set means
        (:func:`~coxinfluence.likelihood.fine_gray.baseline_jumps`).
    """
    jumps, log_scale, xbar = baseline_jumps(fit.data, theta, presence)
    lin = linear_predictor(theta, X) - log_scale[:, None]
    return lin, np.einsum("bk,ptk->bpt", jumps, mask), jumps, xbar


def cumulative_incidence(lin, cum):
    """The cumulative incidence ``F = 1 - exp(-exp(lin) cum)``, patient-major.

    Parameters
    ----------
    lin : numpy.ndarray, shape (B, P)
        ``x'theta - log_scale`` (:func:`fine_gray_parts`).
    cum : numpy.ndarray, shape (B, P, T)
        The summed baseline jumps (:func:`fine_gray_parts`).

    Returns
    -------
    numpy.ndarray, shape (B, P * T)
        ``F``, patient-major.
    """
    H = np.exp(lin)[:, :, None] * cum
    return -np.expm1(-H).reshape(lin.shape[0], -1)


# ------------------------------------------------------------------ public functions

def _family(fit, what, families):
    """The family name of ``fit`` among ``families`` ("cox", "aft", "fine_gray"), or a
    TypeError saying which fits have ``what``."""
    known = {"cox": "a CoxFit (ci.fit_cox)", "aft": "an AFTFit (ci.fit_aft)",
             "fine_gray": "a FineGrayFit (ci.fit_fine_gray)"}
    # each fit class names its family (FitProtocol.prediction_family); a fit module
    # imports this one, so no isinstance on the fit classes here; ``fit`` is any object
    # a user passes, checked to be a fit first
    family = fit.prediction_family if isinstance(fit, FitProtocol) else None
    if family in families:
        return family
    fits = " or ".join(known[name] for name in families)
    raise TypeError(f"{what} is defined for {fits}; got {type(fit).__name__}")


def _frame(values, index, columns, name):
    return pd.DataFrame(np.asarray(values, dtype=np.float64), index=index,
                        columns=pd.Index(np.asarray(columns, dtype=np.float64), name=name))


def predict_lp(fit, X_new) -> pd.Series:
    """The linear predictor ``x'beta`` of new patients.

    Cox and Fine-Gray: not centred (R: ``predict(coxph, newdata, type = "lp", reference
    = "zero")``), the value of ``ci.targets.LinearPredictor``; AFT: with the intercept,
    R's ``predict(survreg, newdata, type = "lp")``.

    Parameters
    ----------
    fit : CoxFit, AFTFit or FineGrayFit
        The fitted model.
    X_new : array_like, pandas.DataFrame or pandas.Series
        The new patients: a DataFrame with (at least) the fit's covariate columns,
        matched by name (extra columns ignored); a Series for one patient (its ``name``
        the label); or an (m, d) array in the fit's column order (labels 0, 1, ...).

    Returns
    -------
    pandas.Series
        One value per patient, indexed by them, named ``lp``.

    Raises
    ------
    TypeError
        If ``fit`` is not one of the fits above.
    coxinfluence.InputError
        A ``ValueError`` naming what is wrong with ``X_new`` (missing or non-numeric
        columns, the shape, NaN), ``times``, ``strata`` or ``p``.

    See Also
    --------
    predict_risk : ``exp(x'beta)``.

    Notes
    -----
    R's ``predict.coxph(type = "lp")`` and lifelines' ``predict_log_partial_hazard``
    centre the linear predictor at the training means; subtract ``predict_lp`` of the
    means to centre (module docstring).

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.models import predictions
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> predictions.predict_lp(fit, X.iloc[:2]).round(3)
    0   -1.047
    1   -0.073
    Name: lp, dtype: float64

    Centred at the training means, as R's default and lifelines:

    >>> lp = predictions.predict_lp(fit, X.iloc[:2])
    >>> centre = predictions.predict_lp(fit, X.mean().to_frame().T).iloc[0]
    >>> (lp - centre).round(3)
    0    0.198
    1    1.173
    Name: lp, dtype: float64
    """
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
    """The relative risk ``exp(x'beta)`` of new patients, not centred.

    Cox: R's ``predict(fit, newdata, type = "risk", reference = "zero")``, the value of
    ``ci.targets.RelativeRisk``; Fine-Gray: the subdistribution hazard ratio to ``x =
    0``.

    Parameters
    ----------
    fit : CoxFit or FineGrayFit
        The fitted model.
    X_new : array_like, pandas.DataFrame or pandas.Series
        The new patients: a DataFrame with (at least) the fit's covariate columns,
        matched by name (extra columns ignored); a Series for one patient (its ``name``
        the label); or an (m, d) array in the fit's column order (labels 0, 1, ...).

    Returns
    -------
    pandas.Series
        One value per patient, indexed by them, named ``risk``.

    Raises
    ------
    TypeError
        If ``fit`` is not one of the fits above.
    coxinfluence.InputError
        A ``ValueError`` naming what is wrong with ``X_new`` (missing or non-numeric
        columns, the shape, NaN), ``times``, ``strata`` or ``p``.

    See Also
    --------
    predict_lp : ``x'beta``.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.models import predictions
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> predictions.predict_risk(fit, X.iloc[:2]).round(3)
    0    0.351
    1    0.930
    Name: risk, dtype: float64
    """
    _family(fit, "predict_risk", ("cox", "fine_gray"))
    lp = predict_lp(fit, X_new)
    return pd.Series(np.exp(lp.to_numpy()), index=lp.index, name="risk")


def predict_cumulative_hazard(fit, X_new, times, strata=None, ctype=None) -> pd.DataFrame:
    """A Cox fit's cumulative hazard ``Lambda_0(t) exp(x'beta)`` of new patients at ``times``.

    R's ``survfit(fit, newdata)$cumhaz`` read at ``times`` (module docstring: the
    baseline, ``ctype``, ``strata``).

    Parameters
    ----------
    fit : CoxFit
        The fitted model.
    X_new : array_like, pandas.DataFrame or pandas.Series
        The new patients: a DataFrame with (at least) the fit's covariate columns,
        matched by name (extra columns ignored); a Series for one patient (its ``name``
        the label); or an (m, d) array in the fit's column order (labels 0, 1, ...).
    times : float or array_like
        Times (finite, >= 0).
    strata : optional
        For a stratified fit each patient's stratum label as in the training data, one
        label for all or one per patient (a tuple for several stratum columns); Cox:
        by default read from the stratum column(s) of ``X_new`` when it has them.
    ctype : {None, 1, 2}, optional
        The baseline ``Lambda_0``, as R's ``survfit.coxph(ctype=)``: 1 Breslow's, 2 with
        Efron's tie correction; None the fit's (``CoxFit.ctype``; for a ``fit_cox`` fit
        R's default for its ties: 2 for Efron, 1 for Breslow; lifelines' and
        statsmodels' fits 1).

    Returns
    -------
    pandas.DataFrame
        Rows the patients, columns the times (a float index named ``time``).

    Raises
    ------
    TypeError
        If ``fit`` is not a Cox fit.
    coxinfluence.InputError
        A ``ValueError`` naming what is wrong with ``X_new`` (missing or non-numeric
        columns, the shape, NaN), ``times``, ``strata`` or ``p``.

    Warns
    -----
    coxinfluence.TargetBeyondFollowUpWarning
        A time past the follow-up of a patient's stratum (:func:`follow_up_notes`), one
        warning per stratum; the value is returned.

    See Also
    --------
    predict_survival : ``exp(-Lambda_0(t) exp(x'beta))``.

    Notes
    -----
    A step function of time, right-continuous: at an event time the jump is included;
    before the first event time it is 0; past the last the last value is carried
    forward (R's ``summary(survfit, times, extend = TRUE)``).

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.models import predictions
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> predictions.predict_cumulative_hazard(fit, X.iloc[:2], [10, 52]).round(3)
    time   10.0   52.0
    0     0.037  0.336
    1     0.097  0.889
    """
    _family(fit, "predict_cumulative_hazard", ("cox",))
    H, index, t = _cox_cumulative_hazard(fit, X_new, times, strata, ctype, "Lambda(t|x)")
    return _frame(H, index, t, "time")


def predict_survival(fit, X_new, times, strata=None, ctype=None) -> pd.DataFrame:
    """The survival probability ``S(t | x)`` of new patients at ``times``.

    Cox: ``exp(-Lambda_0(t) exp(x'beta))``, R's ``survfit(fit, newdata)$surv`` read at
    ``times``; AFT: ``S0((log t - x'beta) / sigma)``, R's ``1 - psurvreg(t, lp, sigma,
    dist)``. The value of ``ci.targets.Survival``.

    Parameters
    ----------
    fit : CoxFit or AFTFit
        The fitted model.
    X_new : array_like, pandas.DataFrame or pandas.Series
        The new patients: a DataFrame with (at least) the fit's covariate columns,
        matched by name (extra columns ignored); a Series for one patient (its ``name``
        the label); or an (m, d) array in the fit's column order (labels 0, 1, ...).
    times : float or array_like
        Times: finite, >= 0 (Cox) or > 0 (AFT).
    strata : optional
        For a stratified fit each patient's stratum label as in the training data, one
        label for all or one per patient (a tuple for several stratum columns); Cox:
        by default read from the stratum column(s) of ``X_new`` when it has them.
    ctype : {None, 1, 2}, optional
        Cox only: the baseline, as in :func:`predict_cumulative_hazard` (None: the
        fit's own). An AFT fit has none.

    Returns
    -------
    pandas.DataFrame
        Rows the patients, columns the times (a float index named ``time``).

    Raises
    ------
    TypeError
        If ``fit`` is not one of the fits above.
    coxinfluence.InputError
        A ``ValueError`` naming what is wrong with ``X_new`` (missing or non-numeric
        columns, the shape, NaN), ``times``, ``strata`` or ``p``. Also a ``ctype`` for an AFT fit.

    Warns
    -----
    coxinfluence.TargetBeyondFollowUpWarning
        A time past the follow-up of a patient's stratum (:func:`follow_up_notes`), one
        warning per stratum; the value is returned.

    See Also
    --------
    predict_cumulative_hazard : The Cox cumulative hazard.
    predict_quantile : AFT quantiles of the survival time.

    Notes
    -----
    Cox: a step function of time, right-continuous; ``S = 1`` before the first event
    time, the last value carried forward past the last (module docstring).

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.models import predictions
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> predictions.predict_survival(fit, X.iloc[:2], [10, 52]).round(3)
    time   10.0   52.0
    0     0.964  0.715
    1     0.908  0.411
    >>> aft = ci.fit_aft(X, rossi["week"], rossi["arrest"])
    >>> predictions.predict_survival(aft, X.iloc[:2], [10, 52]).round(3)
    time   10.0   52.0
    0     0.967  0.714
    1     0.915  0.409
    """
    family = _family(fit, "predict_survival", ("cox", "aft"))
    if family == "cox":
        H, index, t = _cox_cumulative_hazard(fit, X_new, times, strata, ctype, "S(t|x)")
        return _frame(np.exp(-H), index, t, "time")
    if ctype is not None:
        raise ValueError("ctype= is the baseline hazard of a Cox model; an AFT model has "
                         "none")
    t = positive_times(times)
    design, codes, index = aft_design(fit, X_new, strata)
    S = aft_survival(fit, fit.coef, design, codes, t)[0]
    warn_beyond_follow_up(follow_up_notes(fit, t, codes, index, "S(t|x)"))
    return _frame(S, index, t, "time")


def predict_quantile(fit, X_new, p=0.5, strata=None):
    """The ``p``-quantile ``exp(x'beta + sigma w_p)`` of new patients' survival times.

    Under an AFT fit (``p = 0.5``: the median): R's ``predict(fit, newdata, type =
    "quantile", p = p)``, with ``F0(w_p) = p``. The value of ``ci.targets.Quantile``.

    Parameters
    ----------
    fit : AFTFit
        The fitted model.
    X_new : array_like, pandas.DataFrame or pandas.Series
        The new patients: a DataFrame with (at least) the fit's covariate columns,
        matched by name (extra columns ignored); a Series for one patient (its ``name``
        the label); or an (m, d) array in the fit's column order (labels 0, 1, ...).
    p : float or array_like, default 0.5
        Probabilities strictly between 0 and 1.
    strata : optional
        For a stratified fit each patient's stratum label as in the training data, one
        label for all or one per patient (a tuple for several stratum columns); Cox:
        by default read from the stratum column(s) of ``X_new`` when it has them.

    Returns
    -------
    pandas.Series or pandas.DataFrame
        One ``p``: a Series indexed by the patients, named ``Q(p)``; several: a
        DataFrame, rows the patients, columns ``p``.

    Raises
    ------
    TypeError
        If ``fit`` is not an AFT fit.
    coxinfluence.InputError
        A ``ValueError`` naming what is wrong with ``X_new`` (missing or non-numeric
        columns, the shape, NaN), ``times``, ``strata`` or ``p``.

    See Also
    --------
    predict_survival : ``S(t | x)``.
    standard_quantile : ``w_p``.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.models import predictions
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> aft = ci.fit_aft(X, rossi["week"], rossi["arrest"])
    >>> predictions.predict_quantile(aft, X.iloc[:2], p=[0.25, 0.5]).round(1)
    p  0.25  0.50
    0  46.5  86.9
    1  23.2  43.4
    """
    _family(fit, "predict_quantile", ("aft",))
    q = probabilities(p)
    design, codes, index = aft_design(fit, X_new, strata)
    Q = aft_quantiles(fit, fit.coef, design, codes, q)[0][0]
    if np.ndim(p) == 0:
        return pd.Series(Q[:, 0], index=index, name=f"Q({q[0]:g})")
    return _frame(Q, index, q, "p")


def predict_cumulative_incidence(fit, X_new, times, strata=None) -> pd.DataFrame:
    """A Fine-Gray fit's cumulative incidence of its cause for new patients at ``times``.

    ``F(t | x) = 1 - exp(-Lambda_10(t) exp(x'beta))``, ``Lambda_10`` Breslow's baseline
    of the censoring-weighted risk sets: ``cmprsk::predict.crr(fit, cov1 = X_new)``
    read at ``times`` (0 before the first failure of the cause; at a failure time, ``t =
    0`` included, its jump is in). The value of ``ci.targets.CumulativeIncidence``.

    Parameters
    ----------
    fit : FineGrayFit
        The fitted model.
    X_new : array_like, pandas.DataFrame or pandas.Series
        The new patients: a DataFrame with (at least) the fit's covariate columns,
        matched by name (extra columns ignored); a Series for one patient (its ``name``
        the label); or an (m, d) array in the fit's column order (labels 0, 1, ...).
    times : float or array_like
        Times (finite, >= 0).
    strata : optional
        For a stratified fit each patient's stratum label as in the training data, one
        label for all or one per patient (a tuple for several stratum columns); Cox:
        by default read from the stratum column(s) of ``X_new`` when it has them.

    Returns
    -------
    pandas.DataFrame
        Rows the patients, columns the times (a float index named ``time``).

    Raises
    ------
    TypeError
        If ``fit`` is not a Fine-Gray fit.
    coxinfluence.InputError
        A ``ValueError`` naming what is wrong with ``X_new`` (missing or non-numeric
        columns, the shape, NaN), ``times``, ``strata`` or ``p``.

    Warns
    -----
    coxinfluence.TargetBeyondFollowUpWarning
        A time past the follow-up of a patient's stratum (:func:`follow_up_notes`), one
        warning per stratum; the value is returned.

    Examples
    --------
    >>> from coxinfluence.models import predictions
    >>> rng = np.random.default_rng(1)
    >>> n = 200
    >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
    >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
    >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
    >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
    >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
    >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
    >>> predictions.predict_cumulative_incidence(fit, X.iloc[:2], [0.5, 2]).round(3)
    time    0.5    2.0
    0     0.389  0.696
    1     0.266  0.527
    """
    _family(fit, "predict_cumulative_incidence", ("fine_gray",))
    t = nonnegative_times(times)
    X, index = fine_gray_new_patients(fit, X_new)
    codes = fine_gray_strata(fit, strata, X.shape[0])
    theta = fit.coef[None, :]
    lin, cum = fine_gray_parts(fit, theta, X, fine_gray_mask(fit, codes, t),
                               np.ones((1, fit.data.n)))[:2]
    F = cumulative_incidence(lin, cum)[0].reshape(X.shape[0], t.size)
    warn_beyond_follow_up(follow_up_notes(fit, t, codes, index, "F(t|x)"))
    return _frame(F, index, t, "time")

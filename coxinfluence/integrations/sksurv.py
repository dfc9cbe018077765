"""scikit-survival's Cox models in: ``CoxPHSurvivalAnalysis`` and ``CoxnetSurvivalAnalysis``.

scikit-survival keeps neither its training data nor their size, so the caller passes them:
``X`` (the design it was fitted on; a DataFrame's index labels the results) and ``y`` (its
structured array: event indicator first, time second, as ``sksurv.util.Surv``).

Are these its training data? Two checks. First, they are refused unless the estimator's
coefficients ``b`` are a stationary point of its own objective on them, within the
estimator's own convergence tolerance (:func:`stationarity`). Second, where the estimator
keeps its training data's footprint, they must reproduce it exactly
(:func:`baseline_agreement`, below). With ``g`` and ``H`` the gradient and Hessian of the
objective's smooth part at ``b`` (:mod:`coxinfluence.models.coxnet`, our summed scale), ``A``
the free coefficients (all for CoxPH; Coxnet's nonzero ones) and ``r`` the violations of
stationarity (the gradient; for the elastic net its KKT conditions, ``r_A = g_A + lambda_A
sign(b_A)`` and, off ``A``, the excess of ``|g_j|`` over ``lambda_j``), the statistic is the
Newton step in standard errors,

    v_j = |(H_AA^{-1} r_A)_j| / se_j,   se_j = sqrt((H_AA^{-1})_jj)     (j in A),
    v_j = |r_j| / sqrt(H_jj)                                          (j not in A),

how far each coefficient is from the minimum on these data, in its standard errors (off
``A``: how far the coefficient alone would move). The tolerance is what the estimator's
stopping rule allows:

- ``CoxPHSurvivalAnalysis`` (Newton's method) stops after a full Newton step that lowered
  its objective ``J`` by less than ``tol |J|`` (or after ``n_iter`` steps, with a
  warning): the decrement ``sqrt(g' H^{-1} g)`` at the step's start was at most
  ``sqrt(2 tol |J|)``, and at the point reached it is smaller still. Every ``v_j`` is at
  most the decrement (Cauchy-Schwarz), so the tolerance is ``sqrt(2 tol |J(b)|)``, ``J``
  penalised (WHAS500 at the default ``tol`` 1e-9: 0.0015 standard errors).
- ``CoxnetSurvivalAnalysis`` (coordinate descent) stops when no coordinate moved by more
  than ``m = sqrt(tol D)`` of its standard errors given the others (``wx2_j delta_j^2 <
  tol D``, ``D`` its null deviance; on our scale the null loss ``L(0)``). After a last
  sweep of such moves ``|r_j| / sqrt(H_jj)`` is at most ``b_j = COXNET_SLACK m (1 +
  sum_{k in A, k != j} |R_jk|)`` (``R`` the correlation matrix of ``H``: the moves after
  coordinate j's, felt through its correlations), and the Newton step at most
  ``(|H_AA^{-1}| (sqrt(H_kk) b_k)_k)_j / se_j``: the tolerance (WHAS500 at the default
  ``tol`` 1e-7, alpha 0.02 and 0.01: 0.02 to 0.06 standard errors).

Both have a floor of ``STATIONARITY_FLOOR`` standard errors (rounding; a ``tol`` of 0).
Measured, as the largest ``v_j`` over its tolerance: correctly fitted estimators, at most
4e-5 for CoxPH (scikit-survival's five bundled data sets, WHAS500, GBSG2, veterans, AIDS and
breast cancer, one-hot and standardised; ridge 0, 1, 10, both ties; default ``tol``) and 0.20
for Coxnet (every third alpha of its default path on the same data, l1_ratio 0.1, 0.5, 0.8,
1, normalize or not: 917 fits; 0.13 at the alphas of ``paper_appendix/bench_sksurv.py``, whose
breast cancer fit at alpha 0.0015 is 0.06 standard errors from the minimum; 0.16 for those of
``tests/test_sksurv.py``, ``tol`` 1e-15 included). WHAS500 (one-hot standardised, or its
numeric columns as they are) with 5 event indicators flipped (60 draws): at least 93 for
CoxPH (ridge 0, 1, 10) and 2.9 for Coxnet (alpha 0.02, 0.01, 0.002, l1_ratio 0.8). One time
moved by 500 days, each row in turn: refused by this check alone in 99% of the cases for
CoxPH and 30% for Coxnet, whose own ``tol`` leaves it as far from the minimum as the
others move it (those accepted move Coxnet's minimum by at most 0.054 standard errors).
``tests/test_sksurv_wrong_data.py``.

The footprint: scikit-survival's ``BreslowEstimator``, fitted with the coefficients
(``CoxPHSurvivalAnalysis`` always; ``CoxnetSurvivalAnalysis`` one per alpha, only with
``fit_baseline_model=True``), stores the training data's unique times (events and
censorings), ``unique_times_``, and their cumulative baseline hazard,
``cum_baseline_hazard_.y`` (the cumulative sum of the events at each time over the risk
set's sum of ``exp(lp)``). ``y``'s sorted unique times must equal ``unique_times_``
exactly, and the cumulative baseline hazard that scikit-survival's own ``BreslowEstimator``
computes from ``X``, ``y`` at the estimator's coefficients must equal the stored one to a
relative ``BASELINE_RTOL`` (1e-8), plus the rounding that scikit-survival's risk-set sums
(each the previous one less the rows leaving) allow: ``2 eps sum_{j<=i} dH_j j S_1 / S_j``
at the i-th time (``dH_j`` the increments, ``S_j`` the risk-set sums). The linear
predictor is the one scikit-survival used: CoxPH ``X @ coef_``; Coxnet its centred ``X``
(with ``normalize``, also divided by the columns' norms, times the coefficients already on
``X``'s scale: scikit-survival's own choice, reproduced), rows by decreasing time, times
all of ``coef_``. Measured: on the training data, in their order, identical to the bit
(scikit-survival's five data sets, CoxPH ridge 0, 1, 10, both ties; Coxnet l1_ratio 0.5, 1,
normalize or not, every alpha of the default path); their rows permuted (other rounding),
at most 5e-12 relative (4e-4 of the tolerance), and 3e-10 on 50,000 simulated rows with
``exp(lp)`` spread over e^+-12 (the rounding term then dominating). WHAS500 (one-hot
standardised) with one time moved by +-500 days, each row in turn, or 5 event indicators
flipped (60 draws): all refused, for CoxPH (ridge 0, 10) and Coxnet with its baseline
(l1_ratio 0.8, alpha 0.02, 0.01, 0.002; and 0.02 normalized); the moved times 95% by the
unique times, the rest and the flips with the cumulative baseline hazard at least 2.9e-4
off (more than 10^4 times the tolerance). Where Coxnet keeps no baseline model
(``fit_baseline_model=False``, its default), only the stationarity check applies, with its
limits above: fit it with ``fit_baseline_model=True`` for the exact check.

Accepted, the estimator's objective is refitted on ``X``, ``y`` from its coefficients to
``max |gradient| <= 1e-10`` (the KKT conditions for the elastic net): the audit is of the
minimum, whatever the estimator's ``tol``.

``CoxnetSurvivalAnalysis`` is audited at one alpha: its only one, or ``alpha=`` naming one
of its ``alphas_`` (matched as scikit-survival's ``predict_survival_function`` does, by
``np.isclose``).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from coxinfluence.data.cox_data import make_cox_data
from coxinfluence.data.inputs import InputError
from coxinfluence.influence_functions.registry import Family, Resolved, register_family
from coxinfluence.influence_functions.sksurv_audit import CoxnetAudit, SksurvCoxAudit
from coxinfluence.likelihood.objective import cox_objective
from coxinfluence.likelihood.risk_sets import RiskSets
from coxinfluence.models.cox import CoxFit, fit_cox
from coxinfluence.models.coxnet import (
    SksurvCoxFit,
    elastic_net_penalty,
    fit_coxnet,
    kkt_violations,
    sksurv_ridge_penalty,
)
from coxinfluence.models.penalized_cox import penalized_fit

__all__ = ["is_sksurv_cox", "resolve_sksurv", "stationarity", "baseline_agreement",
           "coxnet_alpha", "COXNET_SLACK", "STATIONARITY_FLOOR", "BASELINE_RTOL"]

ESTIMATORS = ("CoxPHSurvivalAnalysis", "CoxnetSurvivalAnalysis")

#: Coxnet's tolerance over the bound its coordinate descent's stopping rule implies (module
#: docstring); the measured fits stay below a fifth of it
COXNET_SLACK = 1.0
#: the smallest tolerance, in standard errors: far above rounding (about 1e-13 here), far
#: below any difference that matters
STATIONARITY_FLOOR = 1e-6
#: the relative difference allowed between the cumulative baseline hazard the estimator
#: stored and the one recomputed from the data given, beyond the rounding of
#: scikit-survival's risk-set sums (module docstring; measured on the training data: 0)
BASELINE_RTOL = 1e-8


def is_sksurv_cox(model):
    """Whether ``model`` is one of scikit-survival's Cox estimators (by its class, without
    importing scikit-survival)."""
    return (type(model).__module__.startswith("sksurv")
            and type(model).__name__ in ESTIMATORS)


def stationarity(estimator, X, y, alpha=None):
    """``(v, tolerance)``, each (d,): how far the fitted ``estimator``'s coefficients are
    from a stationary point of its objective on ``X``, ``y``, per covariate, in standard
    errors, and what its convergence tolerance allows (module docstring). The audit
    refuses ``X``, ``y`` where some ``v_j > tolerance_j``."""
    Xa, time, event, index, columns = _inputs(estimator, X, y)
    problem = _problem(estimator, pd.DataFrame(Xa, index=index, columns=columns), time,
                       event, alpha)
    return _stationarity(estimator, *problem[:4])


def _stationarity(estimator, data, coef, ridge, l1):
    """:func:`stationarity` of the problem: CoxData ``data``, the estimator's ``coef``, its
    smooth part's ridge strengths and its L1 strengths (zeros for CoxPH)."""
    objective = cox_objective(RiskSets(data), ridge=ridge)
    d = coef.size
    with np.errstate(over="ignore", invalid="ignore"):
        loss, grad, H = (a[0] for a in objective(np.arange(1), coef[None, :]))
    if not (np.isfinite(loss) and np.isfinite(grad).all() and np.isfinite(H).all()):
        return np.full(d, np.inf), np.full(d, STATIONARITY_FLOOR)
    A = (coef != 0) | (l1 == 0)           # the free coefficients: a Newton step moves them
    r = np.where(A, grad + l1 * np.sign(coef), np.sign(grad) * kkt_violations(coef, grad, l1))
    h = np.sqrt(np.maximum(np.diag(H), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(r == 0, 0.0, np.abs(r) / h)    # the step of one coefficient alone
        inv = np.linalg.pinv(H[np.ix_(A, A)]) if A.any() else np.zeros((0, 0))
        se = np.sqrt(np.diag(inv))
    joint = np.zeros(d, dtype=bool)       # the free ones' joint step, where H_AA allows it
    joint[A] = np.isfinite(se) & (se > 0)
    J = joint[A]
    v[joint] = np.abs(inv[J] @ r[A]) / se[J]
    tol = float(estimator.tol)
    if type(estimator).__name__ == "CoxPHSurvivalAnalysis":
        tolerance = np.full(d, np.sqrt(2.0 * tol * abs(loss)))
    else:
        null = objective(np.arange(1), np.zeros((1, d)), hess=False)[0][0]
        with np.errstate(divide="ignore", invalid="ignore"):
            R = np.abs(H) / np.outer(h, h)
        R = np.where(np.isfinite(R) & A[None, :] & ~np.eye(d, dtype=bool), R, 0.0)
        move = COXNET_SLACK * np.sqrt(tol * abs(null))      # each coordinate's last move
        bound = move * (1.0 + R.sum(axis=1))                # |r_j| / h_j, each j
        tolerance = bound.copy()
        tolerance[joint] = (np.abs(inv[J]) @ (h[A] * bound[A])) / se[J]
    return v, np.maximum(tolerance, STATIONARITY_FLOOR)


def coxnet_alpha(estimator, alpha):
    """``(alpha, k)``: the alpha of a fitted ``CoxnetSurvivalAnalysis`` to audit and its
    column of ``coef_``."""
    alphas = np.asarray(estimator.alphas_, dtype=np.float64)
    if alpha is None:
        if alphas.size != 1:
            raise InputError(f"this CoxnetSurvivalAnalysis was fitted at {alphas.size} alphas; "
                             "pass alpha= naming one of its alphas_ (a deletion refit keeps "
                             "that alpha)")
        return float(alphas[0]), 0
    close = np.flatnonzero(np.isclose(float(alpha), alphas))
    if close.size == 0:
        raise InputError(f"alpha={alpha!r} is not one of the estimator's alphas_ (from "
                         f"{alphas.min():.4g} to {alphas.max():.4g}); coefficients between "
                         "them are interpolated by scikit-survival, not fitted")
    return float(alphas[close[0]]), int(close[0])


def _inputs(estimator, X, y):
    """``(X as float64 (n, d), time, event, index, columns)`` after the checks."""
    from sksurv.util import check_array_survival
    if not hasattr(estimator, "coef_"):
        raise InputError(f"the {type(estimator).__name__} is not fitted")
    if X is None or y is None:
        raise InputError(f"a {type(estimator).__name__} keeps no training data: pass them, "
                         "ci.influence(estimator, X, y=y)")
    try:
        event, time = check_array_survival(X, y)
    except ValueError as err:        # y not a survival array, or not of X's length
        raise InputError(f"X, y are not training data of a survival model: {err}") from err
    if isinstance(X, pd.DataFrame):
        names = getattr(estimator, "feature_names_in_", None)
        if names is not None and list(X.columns) != list(names):
            raise InputError("X's columns are not the estimator's feature_names_in_ "
                             f"({list(names)[:5]}...), in that order")
        index, columns = X.index, [str(c) for c in X.columns]
        Xa = X.to_numpy(dtype=np.float64, copy=True)
    else:
        Xa = np.array(X, dtype=np.float64)
        index, columns = pd.RangeIndex(Xa.shape[0]), [f"x{j}" for j in range(Xa.shape[1])]
    if Xa.ndim != 2 or Xa.shape[1] != estimator.n_features_in_:
        raise InputError(f"X must have the estimator's {estimator.n_features_in_} features; "
                         f"got shape {Xa.shape}")
    if index.has_duplicates:
        raise InputError("X has duplicate index labels; results are keyed by the index")
    return Xa, np.asarray(time, dtype=np.float64), np.asarray(event, dtype=np.float64), \
        index, columns


def _frame(Xa, time, event, index, columns):
    frame = pd.DataFrame(Xa, index=index, columns=columns)
    frame["time"], frame["event"] = time, event
    return frame


def resolve_sksurv(estimator, X, y, alpha=None):
    """A :class:`Resolved` for a fitted ``CoxPHSurvivalAnalysis`` or
    ``CoxnetSurvivalAnalysis`` on its training data ``X``, ``y`` (module docstring: an
    ``InputError`` unless its coefficients are a stationary point of its objective on
    them and, where it stored a baseline model, they reproduce its unique times and
    cumulative baseline hazard). Its ``fit`` is a
    :class:`~coxinfluence.models.coxnet.SksurvCoxFit` (``ctype=1``: scikit-survival's
    ``BreslowEstimator``); Coxnet's carries an
    :class:`~coxinfluence.models.coxnet.ElasticNetPenalty`, ``centre`` (the training
    means its ``predict`` subtracts) and ``alpha``."""
    Xa, time, event, index, columns = _inputs(estimator, X, y)
    frame = _frame(Xa, time, event, index, columns)
    design = pd.DataFrame(Xa, index=index, columns=columns)
    name = type(estimator).__name__
    data, coef, ridge, l1, penalty, alpha = _problem(estimator, design, time, event, alpha)
    _check(estimator, data, coef, ridge, l1)
    _check_baseline(estimator, Xa, time, event, alpha)
    if name == "CoxPHSurvivalAnalysis":
        if (ridge > 0).any():
            fit = penalized_fit(data, coef, penalty, estimator.ties)
        else:
            fit = fit_cox(design, time, event, ties=estimator.ties, init=coef)
        fit = _as_sksurv_fit(fit, name)
    else:
        fit = fit_coxnet(data, penalty, coef, centre=Xa.mean(axis=0), estimator=name,
                         alpha=alpha)
    if not fit.converged:
        raise ValueError(f"our refit of the {name}'s objective on the X, y given, started at "
                         "its coefficients, did not converge (max |gradient| "
                         f"{np.abs(fit.gradient).max():.3g})")
    return Resolved(fit, frame, "scikit-survival")


def _problem(estimator, design, time, event, alpha):
    """``(data, coef, ridge, l1, penalty, alpha)``: the estimator's objective on the data
    (a ``CoxData`` with its ties; Coxnet's are Breslow's), its coefficients, the smooth
    part's ridge strengths and the L1 strengths (d,) on our summed scale, the penalty
    object our fit carries and Coxnet's alpha (:func:`coxnet_alpha`; None for CoxPH)."""
    name = type(estimator).__name__
    if name == "CoxPHSurvivalAnalysis":
        coef = np.asarray(estimator.coef_, dtype=np.float64)
        ridge = np.broadcast_to(np.asarray(estimator.alpha, dtype=np.float64),
                                coef.shape).copy()
        data = make_cox_data(design, time, event, ties=estimator.ties,
                             check_identifiable=not (ridge > 0).any())
        return (data, coef, ridge, np.zeros(coef.size), sksurv_ridge_penalty(ridge, data.n),
                None)
    if name == "CoxnetSurvivalAnalysis":
        alpha, k = coxnet_alpha(estimator, alpha)
        coef = np.asarray(estimator.coef_[:, k], dtype=np.float64)
        data = make_cox_data(design, time, event, ties="breslow", check_identifiable=False)
        penalty = elastic_net_penalty(design.to_numpy(), alpha, estimator.l1_ratio,
                                      estimator.penalty_factor_, estimator.normalize)
        return data, coef, penalty.ridge, penalty.l1, penalty, alpha
    raise TypeError(f"unsupported scikit-survival estimator {name}: "
                    f"{' or '.join(ESTIMATORS)}")


def _as_sksurv_fit(fit, name):
    """``fit`` (a CoxFit) as a :class:`SksurvCoxFit` with scikit-survival's baseline
    (``ctype=1``) and no centre (``CoxPHSurvivalAnalysis.predict`` is ``X beta``)."""
    fields = {f.name: getattr(fit, f.name) for f in dataclasses.fields(CoxFit)}
    fields.update(ctype=1, centre=None, estimator=name)
    out = SksurvCoxFit(**fields)
    out.__dict__["risk_sets"] = fit.risk_sets
    return out


def _check(estimator, data, coef, ridge, l1):
    """Raise unless the estimator's coefficients are a stationary point of its objective
    on ``data`` (:func:`_stationarity`), saying how far off, where, and the causes."""
    v, tolerance = _stationarity(estimator, data, coef, ridge, l1)
    ratio = v / tolerance
    if not (ratio > 1).any():
        return
    j = int(np.nanargmax(np.where(np.isnan(ratio), np.inf, ratio)))
    name = type(estimator).__name__
    coxph = name == "CoxPHSurvivalAnalysis"
    what = "gradient" if coxph else "KKT violation"
    rule = f"tol={estimator.tol:g}" + (f", n_iter={estimator.n_iter}" if coxph else
                                      f", max_iter={estimator.max_iter}")
    raise InputError(
        f"the {name}'s coefficients are not a stationary point of its objective on the X, "
        f"y given: the largest {what} is {v[j]:.3g} standard errors, on covariate "
        f"{data.columns[j]!r} (the step of that coefficient alone to its optimum; tolerance "
        f"{tolerance[j]:.3g}, from the estimator's own {rule}). The coefficients do "
        "not match these data: pass exactly the X and y it was fitted on, in the same rows; "
        "or, if these are they, it has not converged (refit it with a smaller tol"
        f"{' or a larger n_iter' if coxph else ' or a larger max_iter'})")


def baseline_agreement(estimator, X, y, alpha=None):
    """How the training data's footprint the fitted ``estimator`` stored (its
    ``BreslowEstimator``) compares with ``X``, ``y``; None where it stored none (a
    ``CoxnetSurvivalAnalysis`` fitted without ``fit_baseline_model``). Otherwise a dict:
    ``times`` (the estimator's unique times), ``y_times`` (``y``'s), ``same_times``
    (equal, exactly), and where they are, ``relative`` (the largest relative difference
    of the cumulative baseline hazard recomputed from ``X``, ``y`` at the estimator's
    coefficients from the stored one), ``at`` (its time), ``excess`` (the largest
    difference over its tolerance: above 1 refused), ``events`` (the first time at which
    one has events and the other none, or None) and ``events_in_y`` (whether ``y`` is the
    one with events there). Module docstring."""
    Xa, time, event, _, _ = _inputs(estimator, X, y)
    if type(estimator).__name__ == "CoxnetSurvivalAnalysis":
        alpha = coxnet_alpha(estimator, alpha)[0]
    return _baseline_agreement(estimator, Xa, time, event, alpha)


def _stored_baseline(estimator, alpha):
    """The fitted ``BreslowEstimator`` the estimator keeps for ``alpha`` (Coxnet's; as its
    ``_get_baseline_model``), or None."""
    if type(estimator).__name__ == "CoxnetSurvivalAnalysis":
        models = getattr(estimator, "_baseline_models", None)
        if not models:
            return None
        model = models[coxnet_alpha(estimator, alpha)[1]]
    else:
        model = getattr(estimator, "_baseline_model", None)
    if not (hasattr(model, "unique_times_") and hasattr(model, "cum_baseline_hazard_")):
        return None
    return model


def _linear_predictor(estimator, Xa, time, event, alpha):
    """``(lp, event, time)`` as scikit-survival passed them to the ``BreslowEstimator``
    when fitting: CoxPH ``X @ coef_``; Coxnet its centred (and, with ``normalize``,
    scaled) ``X``, rows by decreasing time, times all its ``coef_`` (the same products,
    bit for bit), at ``alpha``'s column."""
    if type(estimator).__name__ != "CoxnetSurvivalAnalysis":
        return np.dot(Xa, np.asarray(estimator.coef_, dtype=np.float64)), \
            event.astype(bool), time
    from sklearn.preprocessing import normalize
    Xc = Xa - np.average(Xa, axis=0)
    if estimator.normalize:
        Xc = normalize(Xc, axis=0)
    order = np.argsort(-time, kind="mergesort")
    lp = np.dot(np.asfortranarray(Xc[order]), np.asarray(estimator.coef_, dtype=np.float64))
    return lp[:, coxnet_alpha(estimator, alpha)[1]], event[order].astype(np.uint8), \
        time[order]


def _baseline_agreement(estimator, Xa, time, event, alpha):
    """:func:`baseline_agreement` of the checked inputs."""
    from sksurv.linear_model.coxph import BreslowEstimator
    stored = _stored_baseline(estimator, alpha)
    if stored is None:
        return None
    times = np.asarray(stored.unique_times_, dtype=np.float64)
    y_times = np.unique(time)
    out = dict(times=times, y_times=y_times, same_times=np.array_equal(times, y_times))
    if not out["same_times"]:
        return out
    lp, ev, t = _linear_predictor(estimator, Xa, time, event, alpha)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ours = BreslowEstimator().fit(lp, ev, t).cum_baseline_hazard_.y
        theirs = np.asarray(stored.cum_baseline_hazard_.y, dtype=np.float64)
        # the rounding of scikit-survival's risk-set sums, each the previous one less the
        # rows leaving (each subtraction off by up to eps times the first sum): both
        # arrays may be off by that, through each increment d_j / S_j
        risk = np.exp(lp[np.argsort(t, kind="mergesort")])
        first = np.searchsorted(np.sort(t), times)
        S = np.cumsum(risk[::-1])[::-1][first]
        eps = np.finfo(np.float64).eps
        step = np.diff(ours, prepend=0.0)
        slack = 2 * eps * (np.cumsum(step * (np.arange(times.size) + 1) * S[0] / S)
                           + (np.arange(times.size) + 1) * np.abs(ours))
        diff = np.abs(ours - theirs)
        diff = np.where(ours == theirs, 0.0, np.where(np.isfinite(diff), diff, np.inf))
        excess = diff / (BASELINE_RTOL * np.abs(theirs) + slack)
        excess = np.where(diff == 0, 0.0, np.where(np.isnan(excess), np.inf, excess))
        relative = np.where(diff == 0, 0.0, diff / np.abs(theirs))
    relative = np.where(np.isnan(relative), np.inf, relative)
    i = int(np.argmax(relative))
    # where one has events and the other none (their increments are exactly 0 without)
    ours_events = np.diff(ours, prepend=0.0) != 0
    theirs_events = np.diff(theirs, prepend=0.0) != 0
    differ = np.flatnonzero(ours_events != theirs_events)
    out.update(relative=float(relative[i]), at=float(times[i]), excess=float(excess.max()),
               events=float(times[differ[0]]) if differ.size else None,
               events_in_y=bool(ours_events[differ[0]]) if differ.size else None)
    return out


def _check_baseline(estimator, Xa, time, event, alpha):
    """Raise unless the unique times and the cumulative baseline hazard the estimator
    stored when fitted (its ``BreslowEstimator``, where it keeps one) are those of ``X``,
    ``y`` at its coefficients (:func:`baseline_agreement`), saying what differs."""
    agreement = _baseline_agreement(estimator, Xa, time, event, alpha)
    if agreement is None:
        return
    name = type(estimator).__name__
    if not agreement["same_times"]:
        times, y_times = agreement["times"], agreement["y_times"]
        m = min(times.size, y_times.size)
        at = np.flatnonzero(times[:m] != y_times[:m])
        if at.size:
            a, b = float(times[at[0]]), float(y_times[at[0]])
            where = (f"{b!r} in y, not in its training data" if b < a else
                     f"{a!r} in its training data, not in y")
        elif times.size > m:
            where = f"{float(times[m])!r} in its training data, not in y"
        else:
            where = f"{float(y_times[m])!r} in y, not in its training data"
        what = (f"the {name}'s baseline model (its BreslowEstimator) was fitted on "
                f"{times.size} unique times; y has {y_times.size} (first difference at "
                f"{where})")
    elif agreement["excess"] <= 1:
        return
    else:
        what = (f"the {name}'s cumulative baseline hazard, recomputed from the X, y given at "
                "its coefficients, differs from the one it stored when fitted (largest "
                f"relative difference {agreement['relative']:.3g} at time "
                f"{agreement['at']!r}; tolerance {BASELINE_RTOL:g})")
        if agreement["events"] is not None:
            t = agreement["events"]
            what += (f"; y has events at time {t!r}, where its training data have none"
                     if agreement["events_in_y"] else
                     f"; y has no event at time {t!r}, where its training data have some")
    raise InputError(
        f"{what}. The estimator and these data do not match: pass exactly the X and y it "
        "was fitted on, in the same rows")


def sksurv_seam(estimator, X, *, y=None, alpha=None, groups=None, robust=None):
    """A scikit-survival Cox estimator behind the seam (its registered family's
    ``build``): ``CoxPHSurvivalAnalysis`` -> :class:`SksurvCoxAudit`,
    ``CoxnetSurvivalAnalysis`` -> :class:`CoxnetAudit` (units: the rows; ``groups=``
    and ``robust=`` refused). ``ci.influence(estimator, X, y=y, alpha=alpha)``."""
    _refuse_units(groups, robust)
    resolved = resolve_sksurv(estimator, X, y, alpha)
    survival = (type(estimator).__name__ == "CoxnetSurvivalAnalysis"
                and bool(estimator.fit_baseline_model) and not estimator.normalize)
    return _seam_of_fit(resolved.fit, survival), resolved


def _refuse_units(groups, robust):
    if groups is not None or robust:
        raise ValueError("groups= and robust= are not available for scikit-survival "
                         "estimators: their units are the rows")


def _seam_of_fit(fit, survival=False):
    """The seam of a scikit-survival estimator's :class:`SksurvCoxFit`:
    :class:`CoxnetAudit` (with ``Survival`` targets when ``survival``) for Coxnet, else
    :class:`SksurvCoxAudit`."""
    if fit.estimator == "CoxnetSurvivalAnalysis":
        return CoxnetAudit(fit, survival=survival)
    return SksurvCoxAudit(fit)


def sksurv_fit_seam(fit, data=None, *, groups=None, robust=None):
    """The seam of a :class:`~coxinfluence.models.coxnet.SksurvCoxFit` passed itself
    (``result.fit`` of an audit of the estimator; ``ci.exact_loo(result.fit)``): the seam
    its estimator's audit uses, :class:`CoxnetAudit` (without survival targets: whether
    the estimator kept a baseline model is not in the fit) or :class:`SksurvCoxAudit`.
    Without it the fit is a :class:`~coxinfluence.CoxFit` to the registry, and the Cox
    audit does not know the elastic net's penalty."""
    _refuse_units(groups, robust)
    from coxinfluence.integrations import resolve
    resolved = dataclasses.replace(resolve(fit, data), source="scikit-survival")
    return _seam_of_fit(fit), resolved


register_family(Family("scikit-survival fit", SksurvCoxFit, sksurv_fit_seam,
                       description="the SksurvCoxFit of an audited scikit-survival "
                                   "estimator"))
register_family(Family("scikit-survival", is_sksurv_cox, sksurv_seam, options=("y", "alpha"),
                       needs_data=True,
                       description="a fitted scikit-survival CoxPHSurvivalAnalysis or "
                                   "CoxnetSurvivalAnalysis with its training X and y="))

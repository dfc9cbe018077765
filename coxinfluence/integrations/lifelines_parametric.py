"""Any fitted lifelines ``ParametricRegressionFitter`` -> a
:class:`~coxinfluence.influence_functions.decomposable_audit.DecomposableFit`, audited by
:class:`~coxinfluence.influence_functions.decomposable_audit.DecomposableAudit`.

This is the generic path: ``WeibullAFTFitter``, ``LogNormalAFTFitter`` and
``LogLogisticAFTFitter`` with ``ancillary`` (a regression on the scale; without it they
take :mod:`.lifelines_aft`, R's ``survreg``), ``PiecewiseExponentialRegressionFitter``,
``GeneralizedGammaRegressionFitter``, ``CRCSplineFitter``, ``CoxPHFitter`` with
``baseline_estimation_method="spline"`` or ``"piecewise"`` (lifelines fits these as the
parametric models ``ParametricSplinePHFitter`` and ``ParametricPiecewiseBaselinePHFitter``,
``cph._model``) and a user's own subclass.

**The loss** is lifelines' own log-likelihood, evaluated by the fitter's own methods: its
``_log_likelihood_right_censoring`` (or ``_left_`` / ``_interval_censoring``, as fitted),
which build it from the fitter's ``_cumulative_hazard`` ``H_i`` and ``_log_hazard`` (by
default ``log dH/dt``, autograd's derivative of ``H`` in ``t``):
``ll = sum_i W_i [E_i log h_i - H_i(T_i) + H_i(entry_i)] / sum_i W_i`` for right censoring
(lifelines 0.30, ``fitters/__init__.py``). With a presence ``b`` (1 kept, 0 deleted) we
pass the weights ``W * b`` and undo lifelines' division:

    L(theta, b) = - ll(theta; W * b) * sum_i b_i W_i = - sum_i b_i W_i ll_i(theta),

a weighted sum over rows, so deleting a row removes its term and the VIF equals the IF
(:mod:`~coxinfluence.influence_functions.decomposable_audit`). ``theta`` is lifelines'
``params_`` flattened in its own order (index: (parameter, covariate)); the design
``Xs`` is ``model.regressors.transform_df`` of the data, unstandardised, as lifelines'
own ``score`` and predictions use it with ``params_`` (lifelines fits on covariates divided
by their standard deviations and divides the fitted parameters back).

**The derivatives** are autograd's (lifelines' own dependency; its functions, e.g.
``safe_exp`` and ``autograd_gamma``'s incomplete gamma, have reverse-mode derivatives
only): the gradient and Hessian in ``theta``; the rows' gradients ``W_i grad ll_i`` as the
Jacobian in ``b`` of ``grad_theta L`` (``L`` is linear in ``b``: d reverse passes); the
rows' Hessians, one Jacobian in ``b`` per Hessian row (d^2 passes); the third derivative,
the Hessian of each gradient component.

**The fit.** lifelines' optimiser (BFGS, or SLSQP for the spline model) stops before the
maximum, so we minimise ``L(., 1)`` from ``params_`` to ``max |gradient| <= TOL`` (or the
gradient's rounding floor, :func:`gradient_tolerance`) and audit
that maximum; ``params_`` must be within :data:`AGREEMENT_SE` standard errors of it in the
information metric (a wrong DataFrame is far outside), and a warning says when a parameter
is more than :data:`WARN_SE` of its standard errors away (measured on rossi with lifelines'
default options: 3e-5 SE for the ancillary Weibull AFT, 1e-2 for the ancillary log-logistic
and the spline Cox model, 0.16 for ``PiecewiseExponentialRegressionFitter``, whose
log-likelihood is then 0.03 below the maximum). Knots (``CoxPHFitter(baseline_estimation_method=
"spline")`` places them at percentiles of the event times) and breakpoints are part of the
model: a deletion keeps them (refit lifelines with ``knots=cph.knots`` to compare).

Not supported (a clear ``ValueError``): ``penalizer > 0`` (lifelines' penalty is on its
standardised scale), ``strata`` (lifelines reorders the rows by stratum), an unfitted model.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError
from coxinfluence.influence_functions.decomposable_audit import DecomposableFit, minimise
from coxinfluence.models.cox import ConvergenceWarning
from coxinfluence.numerics.newton import gradient_tolerance as newton_gradient_tolerance

from . import Resolved, check_lifelines_inputs, covariate_frame, lifelines_design

__all__ = ["is_parametric_regression", "resolve_lifelines_parametric",
           "LifelinesLikelihood", "LifelinesNotConvergedWarning", "TOL",
           "AGREEMENT_SE", "PREDICTION_TARGETS", "prediction_fitter", "last_event_time"]

#: the targets of new patients that follow the model's own predictions
#: (``coxinfluence.families.lifelines_targets``), offered beside ``coef``
PREDICTION_TARGETS = ("lifelines_survival",)

#: the gradient tolerance of our fit and of the exact refits (the summed loss)
TOL = 1e-8
#: lifelines' parameters may be this many standard errors from our maximum (information
#: metric); beyond it the data are not the training data
AGREEMENT_SE = 0.5
#: a parameter this many of its standard errors from our maximum gets a warning
WARN_SE = 0.05
#: lifelines' column of events it adds for ``fit_interval_censoring`` without event_col
_ADDED_EVENT = "E_lifelines_added"


def _inner(model):
    """The ``ParametricRegressionFitter`` doing the work: a ``CoxPHFitter``'s ``_model``
    for the spline and piecewise baselines, else the model."""
    if type(model).__name__ == "CoxPHFitter":
        return model.__dict__.get("_model")
    return model


def prediction_fitter(model):
    """The fitter whose ``_cumulative_hazard`` and ``regressors`` give ``model``'s own
    predictions (:func:`_inner`: a ``CoxPHFitter``'s parametric ``_model``), or None when
    ``model`` is not a fitted lifelines parametric regression."""
    if model is None or not is_parametric_regression(model):
        return None
    inner = _inner(model)
    return inner if inner is not None and hasattr(inner, "params_") else None


def last_event_time(fitter):
    """The last event time of a fitted lifelines regression's training data.

    ``durations`` where ``event_observed`` (right censoring), every ``durations`` (left
    censoring: each event happened by then), the finite ``upper_bound`` values (interval
    censoring); read here, with lifelines' objects, for
    ``LifelinesSurvival``'s follow-up note.

    Parameters
    ----------
    fitter : lifelines fitter
        A fitted lifelines regression (:func:`prediction_fitter`).

    Returns
    -------
    float or None
        The last event time, ``-inf`` without events, None when the fitter does not keep
        its training data.

    Examples
    --------
    >>> from lifelines import WeibullAFTFitter
    >>> from lifelines.datasets import load_rossi
    >>> model = WeibullAFTFitter().fit(load_rossi(), "week", "arrest")
    >>> last_event_time(model)
    52.0
    """
    kind = getattr(getattr(fitter, "_censoring_type", None), "value", "right")
    if kind == "interval":
        upper = getattr(fitter, "upper_bound", None)
        if upper is None:
            return None
        upper = np.asarray(upper, dtype=np.float64)
        upper = upper[np.isfinite(upper)]
        return float(upper.max()) if upper.size else -np.inf
    durations = getattr(fitter, "durations", None)
    if durations is None:
        return None
    durations = np.asarray(durations, dtype=np.float64)
    if kind == "right":
        event = getattr(fitter, "event_observed", None)
        if event is None:
            return None
        durations = durations[np.asarray(event, dtype=bool)]
    return float(durations.max()) if durations.size else -np.inf


def is_parametric_regression(model) -> bool:
    """Whether ``model`` is a lifelines ``ParametricRegressionFitter`` (any subclass) or a
    ``CoxPHFitter`` with a parametric baseline ("spline", "piecewise")."""
    try:
        from lifelines.fitters import ParametricRegressionFitter
    except ImportError:                                  # pragma: no cover
        return False
    if type(model).__name__ == "CoxPHFitter":
        return getattr(model, "baseline_estimation_method", "breslow") in ("spline",
                                                                          "piecewise")
    return isinstance(model, ParametricRegressionFitter)


def _censoring(model):
    return str(getattr(model, "_censoring_type", "RIGHT")).split(".")[-1].upper()


class LifelinesLikelihood:
    """``L(theta, b) = -sum_i b_i W_i ll_i(theta)`` of a fitted lifelines parametric
    regression (module docstring) and its derivatives by autograd. ``Ts``, ``E``, ``W``,
    ``entries`` and ``Xs`` are the arguments of lifelines' likelihood functions."""

    def __init__(self, fitter, censoring, Ts, E, W, entries, Xs, names, sizes):
        from lifelines.utils import DataframeSlicer
        self.fitter = fitter
        self.likelihood = {"RIGHT": fitter._log_likelihood_right_censoring,
                           "LEFT": fitter._log_likelihood_left_censoring,
                           "INTERVAL": fitter._log_likelihood_interval_censoring}[censoring]
        self.Ts, self.E, self.W, self.entries = Ts, E, W, entries
        self.Xs = DataframeSlicer(Xs)
        self.names, self.sizes = list(names), list(sizes)
        self.n = len(W)
        self.d = int(sum(sizes))
        self._ones = np.ones(self.n)

    def params(self, theta):
        """``theta`` (d,) -> lifelines' dict ``{parameter: its coefficients}``."""
        out, s = {}, 0
        for name, k in zip(self.names, self.sizes):
            out[name] = theta[s:s + k]
            s += k
        return out

    def loss(self, theta, b):
        """``L(theta, b)`` (autograd-traceable in ``theta`` and ``b``)."""
        import autograd.numpy as anp
        w = self.W * b
        ll = self.likelihood(self.params(theta), self.Ts, self.E, w, self.entries, self.Xs)
        return -ll * anp.sum(w)

    def value(self, theta, presence):
        return float(self.loss(np.asarray(theta, dtype=np.float64), presence))

    def gradient(self, theta, presence):
        from autograd import grad
        return np.asarray(grad(self.loss)(np.asarray(theta, dtype=np.float64), presence))

    def value_and_gradient(self, theta, presence):
        from autograd import value_and_grad
        f, g = value_and_grad(self.loss)(np.asarray(theta, dtype=np.float64), presence)
        return float(f), np.asarray(g)

    def hessian(self, theta, presence):
        from autograd import hessian
        return np.asarray(hessian(self.loss)(np.asarray(theta, dtype=np.float64), presence))

    def row_gradients(self, theta):
        """(n, d) ``W_i grad l_i`` (``l_i = -ll_i``): the Jacobian in ``b`` of
        ``grad_theta L(theta, b)``, which is linear in ``b``."""
        from autograd import grad, jacobian
        theta = np.asarray(theta, dtype=np.float64)
        return np.asarray(jacobian(lambda b: grad(self.loss)(theta, b))(self._ones)).T

    def row_hessians(self, theta):
        """(n, d, d) ``W_i grad^2 l_i``: row k of each is the Jacobian in ``b`` of the
        gradient of ``dL/dtheta_k``."""
        from autograd import grad, jacobian
        theta = np.asarray(theta, dtype=np.float64)
        rows = []
        for k in range(self.d):
            def hess_row(b, k=k):
                return grad(lambda t: grad(self.loss)(t, b)[k])(theta)
            rows.append(np.asarray(jacobian(hess_row)(self._ones)))     # (d, n)
        return np.transpose(np.stack(rows), (2, 0, 1))

    def third(self, theta):
        """(d, d, d) ``T[k, j, l] = d^3 L(theta, 1) / dtheta_k dtheta_j dtheta_l``: the
        Hessian of each gradient component."""
        from autograd import grad, hessian
        theta = np.asarray(theta, dtype=np.float64)
        return np.stack([np.asarray(hessian(lambda t, k=k: grad(self.loss)(t, self._ones)[k])
                                    (theta)) for k in range(self.d)])


def _check_model(model, inner, name, data):
    check_lifelines_inputs(inner is not None and hasattr(inner, "params_"), data, name)
    if data.index.has_duplicates:
        raise InputError("data has duplicate index labels; results are keyed by the index")
    if np.any(np.asarray(getattr(inner, "penalizer", 0.0)) != 0):
        raise ValueError(f"{name}(penalizer > 0) is not supported: lifelines' penalty is on its "
                         "internal standardised scale; fit without a penalizer")
    if getattr(inner, "strata", None) is not None:
        raise ValueError(f"a {name} with strata is not supported (lifelines reorders the rows "
                         "by stratum); fit without strata")


def _outcome(inner, data, censoring):
    """``(special columns, Ts, E)`` as lifelines' ``fit`` / ``fit_left_censoring`` /
    ``fit_interval_censoring`` build them from ``data``."""
    event_col = getattr(inner, "event_col", None)
    if censoring == "INTERVAL":
        lower_col, upper_col = inner.lower_bound_col, inner.upper_bound_col
        special = [lower_col, upper_col]
        if event_col is not None and event_col != _ADDED_EVENT:
            special.append(event_col)
        missing = [c for c in special if c not in data.columns]
        if missing:
            raise InputError(f"data lacks the model's column(s) {missing}")
        lower = data[lower_col].to_numpy(dtype=np.float64)
        upper = data[upper_col].to_numpy(dtype=np.float64)
        return special, (lower, np.clip(upper, 0, 1e25)), lower == upper
    special = [inner.duration_col] + ([event_col] if event_col is not None else [])
    missing = [c for c in special if c not in data.columns]
    if missing:
        raise InputError(f"data lacks the model's column(s) {missing}")
    T = data[inner.duration_col].to_numpy(dtype=np.float64)
    E = (data[event_col].to_numpy().astype(bool) if event_col is not None
         else np.ones(len(data), dtype=bool))
    return special, ((None, T) if censoring == "LEFT" else (T, None)), E


def _check_finite(data, special, Xs, name):
    """Raise, naming the columns, where the model's columns of ``data`` (the outcome,
    weights, entry; an infinite upper bound of an interval is right censoring) or the
    design hold missing or infinite values."""
    outcome = data[special].apply(pd.to_numeric, errors="coerce").astype(np.float64)
    bad = [c for c in special if outcome[c].isna().any()]
    bad += [c for c in special if np.isneginf(outcome[c]).any()]
    design = Xs.to_numpy()
    if not np.all(np.isfinite(design)):
        cols = Xs.columns[~np.isfinite(design).all(axis=0)]
        bad += sorted({c[1] if isinstance(c, tuple) else c for c in cols})
    if bad:
        raise InputError(f"data has missing or infinite values in column(s) "
                         f"{sorted(set(map(str, bad)))}: the {name} was not fitted on this "
                         "DataFrame (lifelines refuses them)")


def lifelines_likelihood(model, data):
    """``(LifelinesLikelihood, params_ as a flat array, params_'s index)`` of a fitted
    lifelines parametric regression and its training DataFrame (not modified)."""
    name = type(model).__name__
    inner = _inner(model)
    _check_model(model, inner, name, data)
    censoring = _censoring(inner)
    special, Ts, E = _outcome(inner, data, censoring)
    weights, entry = inner.weights_col, getattr(inner, "entry_col", None)
    special = special + [c for c in (weights, entry) if c]
    raw = covariate_frame(data, special, inner._n_examples, name)
    Xs = lifelines_design(inner, raw, name).astype(np.float64)
    _check_finite(data, special, Xs, name)
    index = inner.params_.index
    if not Xs.columns.equals(index):
        raise InputError(f"the {name}'s design built from data has columns "
                         f"{list(Xs.columns)}, not those of params_ {list(index)}")
    W = (data[weights].to_numpy(dtype=np.float64) if weights
         else np.ones(len(data)))
    entries = (data[entry].to_numpy(dtype=np.float64) if entry else np.zeros(len(data)))
    names = list(dict.fromkeys(index.get_level_values(0)))
    sizes = [int((index.get_level_values(0) == p).sum()) for p in names]
    lik = LifelinesLikelihood(inner, censoring, Ts, E, W, entries, Xs, names, sizes)
    return lik, inner.params_.to_numpy(dtype=np.float64), index


def _describe(model):
    name = type(model).__name__
    if name == "CoxPHFitter":
        method = model.baseline_estimation_method
        return f"lifelines CoxPHFitter (baseline_estimation_method={method!r})"
    return f"lifelines {name}"


def gradient_tolerance(lik, theta):
    """:data:`TOL`, or the summed gradient's rounding floor when that is larger: the one
    rule of :func:`coxinfluence.numerics.newton.gradient_tolerance` over the rows, each
    term's scale its largest ``|W_i dl_i/dtheta_j|`` at ``theta`` (large data)."""
    terms = np.abs(lik.row_gradients(theta)).max(axis=1)
    return newton_gradient_tolerance(TOL, np.ones(terms.size), scale=terms)


def _facts(lik, coef):
    """"114 events, 8 parameters, log-likelihood -682.9464" (interval-censored rows
    counted apart; weighted sums where there are case weights)."""
    ll = -lik.value(coef, np.ones(lik.n))
    parts = [f"{lik.E.sum():g} events"]
    if lik.Ts[0] is not None and lik.Ts[1] is not None:
        parts = [f"{lik.E.sum():g} exact times", f"{(~lik.E).sum():g} interval-censored"]
    elif lik.Ts[0] is None:
        parts.append(f"{(~lik.E).sum():g} left-censored")
    return ", ".join(parts + [f"{lik.d} parameters", f"log-likelihood {ll:.4f}"])


def resolve_lifelines_parametric(model, data) -> Resolved:
    """A fitted lifelines parametric regression and its training DataFrame ->
    :class:`Resolved` with a :class:`DecomposableFit` at our maximum (module docstring)."""
    lik, params, index = lifelines_likelihood(model, data)
    ones = np.ones(lik.n)
    tol = gradient_tolerance(lik, params)
    with np.errstate(all="ignore"):
        coef, ok = minimise(lik, params, ones, tol=tol)
    fit = DecomposableFit(lik, coef, index, data.index, tol=tol, model_name=_describe(model),
                          facts=_facts(lik, coef), targets=PREDICTION_TARGETS,
                          source_model=model)
    check_parametric_agreement(fit, params, type(model).__name__, ok)
    inner = _inner(model)
    return Resolved(fit, data.copy(), "lifelines",
                    robust=bool(getattr(inner, "robust", False)))


def check_parametric_agreement(fit, params, name, ok):
    """Raise if our fit did not converge, or lifelines' ``params`` are more than
    :data:`AGREEMENT_SE` standard errors from our maximum in the information metric,
    ``sqrt((params - coef)' H (params - coef))`` (a wrong DataFrame is far outside); warn
    (:class:`LifelinesNotConvergedWarning`) when a parameter is more than
    :data:`WARN_SE` of its standard errors away (lifelines' optimiser stopped early: the
    audit is of the maximum)."""
    if not ok or not fit.converged:
        raise InputError(f"the {name}'s parameters do not match our refit of the data given "
                         f"(our refit from params_ reached no maximum: max |gradient| "
                         f"{np.abs(fit.gradient).max():.3g}): the DataFrame passed is not the "
                         "one the model was fitted on, or the model has no maximum")
    gap = np.asarray(params, dtype=np.float64) - fit.coef
    distance = float(np.sqrt(max(gap @ fit.information @ gap, 0.0)))
    se = np.sqrt(np.diag(np.linalg.inv(fit.information)))
    worst = int(np.argmax(np.abs(gap) / se))
    where = (f"parameter {fit.columns[worst]!r}: {params[worst]:.6g} vs "
             f"{fit.coef[worst]:.6g}")
    if distance > AGREEMENT_SE:
        raise InputError(
            f"the {name}'s parameters do not match our refit of the data given "
            f"({distance:.3g} standard errors apart; {where}): the DataFrame passed is not "
            "the one the model was fitted on (pass the exact training DataFrame), or the "
            "model's fit had not converged")
    if np.abs(gap[worst]) / se[worst] > WARN_SE:
        warnings.warn(
            f"the {name}'s params_ are {np.abs(gap[worst]) / se[worst]:.2g} standard errors "
            f"from the maximum of its likelihood ({where}; lifelines' optimiser stopped "
            "early): the audit is of the maximum (tighten lifelines' fit_options to match)",
            LifelinesNotConvergedWarning, stacklevel=4)


class LifelinesNotConvergedWarning(ConvergenceWarning):
    """lifelines' ``params_`` are not at the maximum of the model's likelihood (a
    ``ci.ConvergenceWarning``)."""

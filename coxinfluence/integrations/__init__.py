"""Fitted models from other libraries -> a fit of ours on the same data; the families
``cox``, ``aft``, ``decomposable``, ``lifelines`` and ``statsmodels`` registered with the
one dispatcher (:mod:`coxinfluence.influence_functions.registry`; scikit-survival
registers in :mod:`.sksurv`).

:func:`resolve` accepts a ``CoxFit``, a fitted lifelines ``CoxPHFitter`` (with its training
DataFrame) or a statsmodels ``PHRegResults`` and returns a :class:`Resolved`: our fit of the
same model (refitted to a gradient of 1e-10, started at the library's coefficients, which
must agree with ours: otherwise the data do not match the model and an ``InputError`` says
so), the training frame (covariates, time, event; caller's row order and index) and, where
the library builds the design from raw columns (formulas, dummies), a function mapping raw
new-patient frames to the design. A ``coxinfluence.AFTFit`` (R's ``survreg`` model) and
lifelines' ``WeibullAFTFitter``, ``LogNormalAFTFitter`` and ``LogLogisticAFTFitter``
(:mod:`.lifelines_aft`) resolve to an ``AFTFit`` the same way. Every other lifelines
parametric regression (``ParametricRegressionFitter``: the AFT fitters with
``ancillary``, ``PiecewiseExponentialRegressionFitter``, ``GeneralizedGammaRegressionFitter``,
a user's own subclass; ``CoxPHFitter`` with a spline or piecewise baseline) resolves to a
``DecomposableFit`` of its own likelihood (:mod:`.lifelines_parametric`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.data.dispatch import choose
from coxinfluence.data.inputs import InputError
from coxinfluence.influence_functions.aft_audit import AFTAudit
from coxinfluence.influence_functions.cox_audit import CoxAudit, low_level_seam
from coxinfluence.influence_functions.decomposable_audit import DecomposableAudit, DecomposableFit
from coxinfluence.influence_functions.registry import (  # noqa: F401 (re-exported)
    Family,
    Resolved,
    attach_columns,
    register_family,
    with_overrides,
)
from coxinfluence.models.aft import AFTFit
from coxinfluence.models.cox import CoxFit

__all__ = ["Resolved", "resolve", "check_agreement", "lifelines_design"]


def agreement_tolerance(fit):
    """How far a library's coefficients may be from our refit: 1e-3 standard errors plus
    1e-6 absolute (:func:`check_agreement`)."""
    return 1e-3 * fit.se + 1e-6


def check_lifelines_inputs(fitted, data, name):
    """Raise unless the lifelines model ``name`` is ``fitted`` and ``data`` is a DataFrame
    (lifelines does not keep its training data, so the caller passes it)."""
    if not fitted:
        raise InputError(f"the {name} is not fitted: call model.fit(df, ...) first")
    if data is None:
        raise InputError(f"lifelines does not keep its training data: pass the DataFrame the "
                         f"{name} was fitted on, ci.influence(model, df)")
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"data must be the training pandas DataFrame; got {type(data).__name__}")


def covariate_frame(data, special, n_fitted, what):
    """``data`` without the model's own columns ``special`` (outcome, weights, entry,
    strata, cluster), after checking that ``data`` has them all and the ``n_fitted`` rows
    the lifelines model ``what`` was fitted on."""
    missing = [c for c in special if c not in data.columns]
    if missing:
        raise InputError(f"data lacks the model's column(s) {missing}")
    if len(data) != n_fitted:
        raise InputError(f"data has {len(data)} rows but the {what} was fitted on "
                         f"{n_fitted}")
    return data.drop(columns=special)


def lifelines_covariates(model):
    """The columns of the raw data the lifelines ``model``'s design reads, in their order
    (each parameter's columns, or its formula's variables), without the intercept
    lifelines adds itself."""
    regressors = model.regressors
    intercept = getattr(regressors, "INTERCEPT_COL", "Intercept")
    out = []
    for spec in regressors.mappings.values():
        if isinstance(spec, list):
            cols = [c for c in spec
                    if not (c == intercept and getattr(regressors, "force_intercept", False))]
        else:                                   # a formula: formulaic's ModelSpec
            cols = sorted(getattr(spec, "required_variables", ()))
        out += [c for c in cols if c not in out]
    return out


def lifelines_design(model, frame, name):
    """lifelines' design of ``frame`` for all parameters of a fitted lifelines model.

    ``model.regressors.transform_df(frame)``, with the covariate columns ``frame`` lacks
    named where lifelines fails on them (pandas' ``KeyError``, formulaic's
    ``FactorEvaluationError``).

    Parameters
    ----------
    model : lifelines regression fitter
        A fitted lifelines model (``CoxPHFitter``, a ``ParametricRegressionFitter``, ...).
    frame : pandas.DataFrame
        Raw data: the columns the model's formulas or covariate lists read.
    name : str
        What the messages call the model (e.g. "CoxPHFitter").

    Returns
    -------
    pandas.DataFrame
        The design, one column per (parameter, covariate) pair, as lifelines builds it.

    Raises
    ------
    coxinfluence.InputError
        ``frame`` lacks covariate columns the model reads (named).

    Examples
    --------
    >>> from lifelines import CoxPHFitter
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.integrations import lifelines_design
    >>> rossi = load_rossi()
    >>> cph = CoxPHFitter().fit(rossi, "week", "arrest", formula="fin + age + C(race)")
    >>> lifelines_design(cph, rossi, "CoxPHFitter").columns.tolist()
    [('beta_', 'fin'), ('beta_', 'age'), ('beta_', 'C(race)[T.1]')]
    >>> lifelines_design(cph, rossi.drop(columns=["age"]), "CoxPHFitter")
    Traceback (most recent call last):
    ...
    coxinfluence.data.inputs.InputError: data lacks the CoxPHFitter's covariate column(s) ...
    """
    try:
        return model.regressors.transform_df(frame)
    except Exception as err:
        missing = [c for c in lifelines_covariates(model) if c not in frame.columns]
        if not missing:
            raise
        raise InputError(f"data lacks the {name}'s covariate column(s) {missing}: pass "
                            f"the DataFrame the {name} was fitted on (its covariates: "
                            f"{lifelines_covariates(model)})") from err


def check_agreement(fit, params, source, diagnose=None, *, tol=None, owner=None,
                    noun="coefficient", where=None, why=None):
    """Check a library's coefficients against our refit of the same model.

    Raises if ``params`` differ from ``fit.coef`` by more than ``tol`` (default
    :func:`agreement_tolerance`: 1e-3 standard errors plus 1e-6), or our refit did not
    converge, naming the worst parameter.

    Parameters
    ----------
    fit : fit of coxinfluence
        Our refit (``coef``, ``se``, ``columns``, ``converged``).
    params : array_like
        The library's coefficients, in ``fit.columns``' order.
    source : str
        The library ("lifelines", "statsmodels", ...).
    diagnose : callable, optional
        ``diagnose() -> str``: the cause, where the integration can check it (e.g.
        statsmodels, whose data are read from the model itself).
    tol : float or numpy.ndarray, optional
        The tolerance per coefficient (default :func:`agreement_tolerance`).
    owner : str, optional
        Whose coefficients, in the message (default "``source`` model").
    noun : str, default "coefficient"
        What a parameter is called in the message.
    where : str, optional
        What our refit was of, in the message (default: the data given or read).
    why : str, optional
        The cause, in the message (default ``diagnose()``, else: the DataFrame passed is
        not the one the model was fitted on).

    Raises
    ------
    coxinfluence.InputError
        The coefficients do not agree, or our refit did not converge.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.integrations import check_agreement
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> check_agreement(fit, fit.coef + 1e-9, "lifelines")
    >>> check_agreement(fit, fit.coef + [0.0, 0.1], "lifelines")
    Traceback (most recent call last):
    ...
    coxinfluence.data.inputs.InputError: the lifelines model's coefficients do not match ...
    """
    params = np.asarray(params, dtype=np.float64)
    gap = np.abs(params - fit.coef)
    tol = agreement_tolerance(fit) if tol is None else tol
    if not fit.converged or (gap > tol).any():
        worst = int(np.argmax(gap / tol))
        if where is None:
            where = ("the data read from the model" if diagnose is not None
                     else "the data given")
        if why is None:
            why = (diagnose() if diagnose is not None else
                   "the DataFrame passed is not the one the model was fitted on (pass the "
                   "exact training DataFrame), or the model's fit had not converged")
        raise InputError(
            f"the {owner or source + ' model'}'s {noun}s do not match our refit of {where} "
            f"({noun} {fit.columns[worst]!r}: {params[worst]:.6g} vs {fit.coef[worst]:.6g}"
            f"{'' if fit.converged else '; our refit did not converge'}): {why}")


def _frame_from_fit(fit: CoxFit) -> pd.DataFrame:
    data = fit.data
    index = data.index if data.index is not None else pd.RangeIndex(data.n)
    frame = pd.DataFrame(data.to_caller_order(data.X + data.X_center), index=index,
                         columns=data.columns)
    frame["time"] = data.to_caller_order(data.time)
    frame["event"] = data.to_caller_order(data.event)
    return frame


def resolve(model, data=None) -> Resolved:
    """Our fit of a user's model and its training frame (module docstring).

    Parameters
    ----------
    model : CoxFit, AFTFit, lifelines fitter or statsmodels PHRegResults
        The fitted model.
    data : pandas.DataFrame, optional
        The training DataFrame (required for lifelines, which keeps no data); for our
        fits, extra columns matched on the index.

    Returns
    -------
    Resolved
        Our fit (``CoxFit``, ``AFTFit`` or ``DecomposableFit``), the training frame, the
        source library and, for formula models, the new-patient transform.

    Raises
    ------
    TypeError
        ``model`` is none of the above.
    coxinfluence.InputError
        ``data`` does not match the model (its coefficients disagree with our refit,
        :func:`check_agreement`).

    Examples
    --------
    >>> from lifelines import CoxPHFitter
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.integrations import resolve
    >>> rossi = load_rossi()
    >>> cph = CoxPHFitter().fit(rossi, "week", "arrest")
    >>> r = resolve(cph, rossi)
    >>> r.source, r.frame.shape, bool(np.allclose(r.fit.coef, cph.params_, atol=1e-6))
    ('lifelines', (432, 9), True)
    """
    if isinstance(model, CoxFit):
        frame = _frame_from_fit(model)
        if data is not None:
            frame = attach_columns(frame, data, model.n)
        # the SE the fit reports: R's robust variance for non-integer case weights
        return Resolved(model, frame, "coxinfluence", robust=model.robust_default)
    if isinstance(model, AFTFit):                   # R's survreg model (ci.fit_aft)
        frame = model.training_frame()
        if data is not None:
            frame = attach_columns(frame, data, model.n)
        return Resolved(model, frame, "coxinfluence")
    kind = f"{type(model).__module__}.{type(model).__name__}"
    if any(c.__module__.startswith("lifelines") for c in type(model).__mro__):
        # lifelines' fitters and users' subclasses of them
        from .lifelines import resolve_lifelines, resolve_lifelines_time_varying
        from .lifelines_aft import FITTERS, has_ancillary, resolve_lifelines_aft
        from .lifelines_parametric import is_parametric_regression, resolve_lifelines_parametric
        if type(model).__name__ in FITTERS and not has_ancillary(model):
            return resolve_lifelines_aft(model, data)
        if type(model).__name__ == "CoxTimeVaryingFitter":
            return resolve_lifelines_time_varying(model, data)
        if is_parametric_regression(model):
            return resolve_lifelines_parametric(model, data)
        return resolve_lifelines(model, data)
    if kind.startswith("statsmodels"):
        from .statsmodels import resolve_statsmodels
        return resolve_statsmodels(model, data)
    raise TypeError(f"unsupported model type {kind}: pass a coxinfluence CoxFit or AFTFit, "
                    "a fitted lifelines CoxPHFitter, CoxTimeVaryingFitter or parametric "
                    "regression (WeibullAFTFitter, LogNormalAFTFitter, LogLogisticAFTFitter, "
                    "PiecewiseExponentialRegressionFitter, GeneralizedGammaRegressionFitter, "
                    "any ParametricRegressionFitter), or a statsmodels PHRegResults")


def _seam_of(resolved):
    """The seam of a resolved fit: the integration's own choice (``resolved.seam``: a
    lifelines AFT fit in ``params_`` naming), else by the fit's family."""
    if resolved.seam is not None:
        return resolved.seam(resolved.fit, resolved.groups)
    return choose(resolved.fit, _SEAMS)(resolved.fit, resolved.groups)


#: the seam of each class of fit an integration resolves a model to, chosen by the one
#: dispatch rule (``coxinfluence.data.dispatch.choose``: the most specific class wins)
_SEAMS = ((CoxAudit, CoxFit, None), (AFTAudit, AFTFit, None),
          (DecomposableAudit, DecomposableFit, None))


def _build(model, data, *, groups=None, robust=None):
    resolved = with_overrides(resolve(model, data), groups, robust)
    return _seam_of(resolved), resolved


def _is_lifelines(model):
    return any(c.__module__.startswith("lifelines") for c in type(model).__mro__)


def _is_statsmodels(model):
    return type(model).__module__.startswith("statsmodels")


def _build_decomposable(fit, data, *, groups=None, robust=None):
    """A :class:`DecomposableFit` passed directly: audited by ``DecomposableAudit``
    (its rows, or the clusters ``groups``), ``data``'s columns matched on its index."""
    resolved = Resolved(fit, pd.DataFrame(index=fit.index), "coxinfluence")
    if data is not None:
        resolved = Resolved(fit, attach_columns(resolved.frame, data, fit.n), "coxinfluence")
    resolved = with_overrides(resolved, groups, robust)
    return DecomposableAudit(fit, resolved.groups), resolved


register_family(Family("cox", CoxFit, _build,
                       description="a CoxFit (ci.fit_cox)", low_level=low_level_seam,
                       refit_options=("batch_size", "tol", "max_iter", "n_chunks")))
register_family(Family("aft", AFTFit, _build,
                       description="an AFTFit (ci.fit_aft)"))
register_family(Family("decomposable", DecomposableFit, _build_decomposable,
                       description="a DecomposableFit (any loss summed over rows)"))
register_family(Family("lifelines", _is_lifelines, _build, needs_data=True,
                       description="a fitted lifelines CoxPHFitter, CoxTimeVaryingFitter or "
                                   "parametric regression (WeibullAFTFitter, ..., any "
                                   "ParametricRegressionFitter) with its training DataFrame"))
register_family(Family("statsmodels", _is_statsmodels, _build, needs_data=True,
                       description="a statsmodels PHRegResults"))

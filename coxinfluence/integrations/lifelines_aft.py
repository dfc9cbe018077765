"""lifelines' parametric AFT regressions -> the same model as a
:class:`coxinfluence.AFTFit` (R's ``survreg`` parametrisation).

``WeibullAFTFitter``, ``LogNormalAFTFitter`` and ``LogLogisticAFTFitter`` (without
``ancillary``: one scale for every row) maximise the likelihood of
:mod:`coxinfluence.likelihood.aft`; their parameters map to R's (``docs/conventions.md``,
"Parametric AFT models"):

- Weibull: ``lambda_`` = R's coefficients, ``rho_`` Intercept = ``-log(sigma)``;
- log-normal: ``mu_`` = coefficients, ``sigma_`` Intercept = ``log(sigma)``;
- log-logistic: ``alpha_`` = coefficients, ``beta_`` Intercept = ``-log(sigma)``.

**Results are indexed like the model's ``params_``** (parameter, covariate), in lifelines'
order: the audit is :class:`~coxinfluence.influence_functions.aft_audit.AFTAudit` (R's
parametrisation ``phi``, verified against R) read in lifelines' ``theta = A phi`` by
:class:`~coxinfluence.influence_functions.reparametrised.Reparametrised`, ``A`` the
signed permutation of the map above (:func:`lifelines_map`): a change of ``log(sigma)``
by ``D`` is a change of ``rho_`` (``beta_``) Intercept by ``-D``. ``InfluenceResult.fit``
is then a :class:`~coxinfluence.influence_functions.reparametrised.ReparametrisedFit`
(its ``base`` the ``AFTFit``). Targets: ``coef`` (``params_``), ``time_ratio`` (``exp``
of the primary parameter's covariate coefficients, lifelines' ``exp(coef)`` of
``lambda_``/``mu_``/``alpha_``; columns ``TR name``), ``aft_survival``,
``survival_quantile`` (R's, read through the map) and
``lifelines_survival`` (``ci.LifelinesSurvival``: the model's own
``predict_survival_function``). ``ci.fit_aft`` results keep R's naming.

lifelines does not keep its training data, so pass it (``ci.influence(model, df)``). The
design is lifelines' own (``model.regressors.transform_df``: formulas, all-columns
models), with its duration, event, ``weights_col`` and ``entry_col`` (delayed entry);
``fit_interval_censoring`` models read ``lower_bound_col`` and ``upper_bound_col`` (lifelines'
convention: equal bounds an exact time, an infinite upper bound right-censored, a zero
lower bound left-censored, as ``fit_aft(..., upper=)``). We refit to ``max |gradient| <=
1e-10`` from lifelines' parameters. lifelines' optimiser stops earlier (measured on
rossi: 7e-5 standard errors from the maximum for the Weibull, 4e-4 for the log-normal,
1.2e-2 for the log-logistic, whose log-likelihood is 1e-4 below ours), so agreement is
checked to :data:`AGREEMENT_SE` standard errors: a wrong DataFrame is far outside it.

``ancillary`` models (a regression on the scale) are not R's ``survreg`` model: they take
the generic path, :mod:`.lifelines_parametric`. Not supported (a clear ``ValueError``):
``penalizer > 0``, ``fit_intercept=False``, ``fit_left_censoring``, other lifelines
regression models.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.influence_functions.aft_audit import AFTAudit
from coxinfluence.influence_functions.reparametrised import Reparametrised, signed_permutation
from coxinfluence.models.aft import fit_aft

from . import (
    Resolved,
    check_agreement,
    check_lifelines_inputs,
    covariate_frame,
    lifelines_design,
)
from .lifelines_parametric import PREDICTION_TARGETS

#: lifelines' AFT fitters: the distribution and the sign taking the ancillary
#: parameter's Intercept to ``log(sigma)``
FITTERS = {"WeibullAFTFitter": ("weibull", -1.0), "LogNormalAFTFitter": ("lognormal", 1.0),
           "LogLogisticAFTFitter": ("loglogistic", -1.0)}

#: lifelines' parameters may be this many standard errors from our maximum
AGREEMENT_SE = 0.05


def has_ancillary(model) -> bool:
    """Whether a lifelines AFT model regresses its ancillary (scale) parameter too."""
    ancillary = getattr(model, "model_ancillary", False)
    return ancillary is not False and ancillary is not None


def _censoring(model):
    return str(getattr(model, "_censoring_type", "RIGHT")).split(".")[-1].upper()


def resolve_lifelines_aft(model, data) -> Resolved:
    """A fitted lifelines AFT model and its training DataFrame -> :class:`Resolved` with
    our :class:`~coxinfluence.models.aft.AFTFit` of the same model (module docstring)."""
    name = type(model).__name__
    dist, sign = FITTERS[name]
    check_lifelines_inputs(hasattr(model, "params_"), data, name)
    if has_ancillary(model):
        raise ValueError(f"{name}(ancillary=...) (a regression on the scale) is not R's "
                         "survreg model: ci.influence audits it by the generic path "
                         "(coxinfluence.integrations.lifelines_parametric)")
    if np.any(np.asarray(getattr(model, "penalizer", 0.0)) != 0):
        raise ValueError(f"{name}(penalizer > 0) is not supported: the audit follows the "
                         "unpenalised likelihood of R's survreg")
    if not getattr(model, "fit_intercept", True):
        raise ValueError(f"{name}(fit_intercept=False) is not supported: R's survreg model "
                         "has an intercept")
    censoring = _censoring(model)
    if censoring == "LEFT":
        raise ValueError("lifelines' fit_left_censoring models are not supported; "
                         "fit_interval_censoring with a zero lower bound is")
    prim, anc = model._primary_parameter_name, model._ancillary_parameter_name
    if censoring == "INTERVAL":
        outcome = [model.lower_bound_col, model.upper_bound_col]
    else:
        outcome = [model.duration_col] + ([model.event_col] if model.event_col else [])
    weights, entry = model.weights_col, getattr(model, "entry_col", None)
    special = outcome + [c for c in (weights, entry) if c]
    raw = covariate_frame(data, special, model._n_examples, name)

    def transform(frame):
        design = lifelines_design(model, frame, name)[prim].astype(np.float64)
        return design.drop(columns=["Intercept"])

    X = transform(raw)
    X.index = data.index
    w = data[weights].astype(np.float64) if weights else None
    start = data[entry].astype(np.float64) if entry else None
    coefs = model.params_[prim]
    init = np.concatenate([[coefs["Intercept"]], coefs[list(X.columns)].to_numpy(),
                           [sign * model.params_[anc]["Intercept"]]])
    if censoring == "INTERVAL":
        lower = data[outcome[0]].astype(np.float64)
        fit = fit_aft(X, lower, dist=dist, upper=data[outcome[1]].astype(np.float64),
                      entry=start, weights=w, init=init)
    else:
        event = (data[outcome[1]].astype(np.float64) if len(outcome) > 1
                 else pd.Series(1.0, index=data.index))
        fit = fit_aft(X, data[outcome[0]].astype(np.float64), event, dist, entry=start,
                      weights=w, init=init)
    check_aft_agreement(fit, init, name)
    frame = fit.training_frame()
    return Resolved(fit, frame, "lifelines", transform=transform,
                    robust=bool(getattr(model, "robust", False)),
                    seam=lambda fit, groups: lifelines_aft_seam(model, fit, groups))


def lifelines_map(model, fit):
    """``A`` (d, d), the signed permutation taking R's parameters ``phi`` of ``fit``
    (intercept, covariates in ``fit.covariates`` order, ``log(sigma)``) to lifelines'
    ``theta``, in the order of ``model.params_.index``: the primary parameter's
    ``Intercept`` and covariates are R's, the ancillary ``Intercept`` is ``sign *
    log(sigma)`` (:data:`FITTERS`)."""
    _, sign = FITTERS[type(model).__name__]
    prim, anc = model._primary_parameter_name, model._ancillary_parameter_name
    position = {name: 1 + k for k, name in enumerate(fit.covariates)}
    position["Intercept"] = 0
    source, signs = [], []
    for param, covariate in model.params_.index:
        if param == prim and covariate in position:
            source.append(position[covariate])
            signs.append(1.0)
        elif param == anc and covariate == "Intercept":
            source.append(len(fit.coef) - 1)
            signs.append(sign)
        else:
            raise ValueError(f"the {type(model).__name__}'s parameter {(param, covariate)!r} "
                             "has no counterpart in R's survreg model")
    return signed_permutation(source, signs)


def lifelines_aft_seam(model, fit, groups=None):
    """The audit of ``fit`` (:class:`AFTAudit`, R's parametrisation) in lifelines'
    parametrisation: indexed by ``model.params_.index`` (module docstring)."""
    _, sign = FITTERS[type(model).__name__]
    prim, anc = model._primary_parameter_name, model._ancillary_parameter_name
    note = (f"parameters as lifelines' params_: {prim} = the coefficients, {anc} Intercept "
            f"= {'-' if sign < 0 else ''}log(scale)")
    return Reparametrised(AFTAudit(fit, groups), lifelines_map(model, fit),
                          model.params_.index, own_targets=PREDICTION_TARGETS,
                          source_model=model, note=note)


def check_aft_agreement(fit, params, name):
    """Raise if lifelines' parameters (R's order) are more than :data:`AGREEMENT_SE`
    standard errors (plus 1e-6) from our maximum, or ours did not converge."""
    check_agreement(fit, params, name, tol=AGREEMENT_SE * fit.se + 1e-6, owner=name,
                    noun="parameter")

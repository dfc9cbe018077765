"""lifelines' parametric AFT regressions -> the same model as a
:class:`coxinfluence.AFTFit` (R's ``survreg`` parametrisation).

``WeibullAFTFitter``, ``LogNormalAFTFitter`` and ``LogLogisticAFTFitter`` (without
``ancillary``: one scale for every row) maximise the likelihood of
:mod:`coxinfluence.likelihood.aft`; their parameters map to R's (DESIGN.md, "Model
families beyond Cox PH"):

- Weibull: ``lambda_`` = R's coefficients, ``rho_`` Intercept = ``-log(sigma)``;
- log-normal: ``mu_`` = coefficients, ``sigma_`` Intercept = ``log(sigma)``;
- log-logistic: ``alpha_`` = coefficients, ``beta_`` Intercept = ``-log(sigma)``.

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

from coxinfluence.models.aft import fit_aft

from . import Resolved, check_lifelines_inputs, covariate_frame

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
        design = model.regressors.transform_df(frame)[prim].astype(np.float64)
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
                    robust=bool(getattr(model, "robust", False)))


def check_aft_agreement(fit, params, name):
    """Raise if lifelines' parameters (R's order) are more than :data:`AGREEMENT_SE`
    standard errors (plus 1e-6) from our maximum, or ours did not converge."""
    gap = np.abs(np.asarray(params) - fit.coef)
    tol = AGREEMENT_SE * fit.se + 1e-6
    if not fit.converged or (gap > tol).any():
        worst = int(np.argmax(gap / tol))
        raise ValueError(
            f"the {name}'s parameters do not match our refit of the data given (parameter "
            f"{fit.columns[worst]!r}: {params[worst]:.6g} vs {fit.coef[worst]:.6g}"
            f"{'' if fit.converged else '; our refit did not converge'}): the DataFrame "
            "passed is not the one the model was fitted on (pass the exact training "
            "DataFrame), or the model's fit had not converged")

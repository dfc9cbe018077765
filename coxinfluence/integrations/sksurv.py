"""scikit-survival's Cox models in: ``CoxPHSurvivalAnalysis`` and ``CoxnetSurvivalAnalysis``.

scikit-survival keeps neither its training data nor their size, so the caller passes them:
``X`` (the design it was fitted on; a DataFrame's index labels the results) and ``y`` (its
structured array: event indicator first, time second, as ``sksurv.util.Surv``). We refit
the estimator's own objective (:mod:`coxinfluence.models.coxnet`) on them, from the
estimator's coefficients, to ``max |gradient| <= 1e-10`` (the KKT conditions for the
elastic net), and refuse when the estimator's coefficients differ from that refit by more
than :func:`sksurv_tolerance`: the data are then not its training data (or it had not
converged).

``CoxnetSurvivalAnalysis`` is audited at one alpha: its only one, or ``alpha=`` naming one
of its ``alphas_`` (matched as scikit-survival's ``predict_survival_function`` does, by
``np.isclose``).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from coxinfluence.data.cox_data import make_cox_data
from coxinfluence.integrations import Resolved, check_agreement
from coxinfluence.models.cox import CoxFit, fit_cox
from coxinfluence.models.coxnet import (
    SksurvCoxFit,
    elastic_net_penalty,
    fit_coxnet,
    sksurv_ridge_penalty,
)
from coxinfluence.models.penalized_cox import penalized_fit

__all__ = ["is_sksurv_cox", "resolve_sksurv", "sksurv_tolerance", "coxnet_alpha"]

ESTIMATORS = ("CoxPHSurvivalAnalysis", "CoxnetSurvivalAnalysis")


def is_sksurv_cox(model):
    """Whether ``model`` is one of scikit-survival's Cox estimators (by its class, without
    importing scikit-survival)."""
    return (type(model).__module__.startswith("sksurv")
            and type(model).__name__ in ESTIMATORS)


def sksurv_tolerance(fit):
    """How far the estimator's coefficients may be from our refit: 0.25 standard errors
    (from the smooth part's information) plus 1e-6. scikit-survival stops on loose
    criteria (Coxnet: coordinate updates below ``tol`` = 1e-7; CoxPH: a relative change of
    the loss below 1e-9): on its five bundled data sets at the alphas of
    ``paper_appendix/bench_sksurv.py`` its default ``tol`` left Coxnet up to 0.06 SE from
    the minimum (breast cancer, 82 covariates, alpha 0.0015). So this refuses other data
    (shuffled or different rows), not one row fewer."""
    se = np.sqrt(np.abs(np.diag(np.linalg.pinv(fit.information))))
    return 0.25 * se + 1e-6


def coxnet_alpha(estimator, alpha):
    """``(alpha, k)``: the alpha of a fitted ``CoxnetSurvivalAnalysis`` to audit and its
    column of ``coef_``."""
    alphas = np.asarray(estimator.alphas_, dtype=np.float64)
    if alpha is None:
        if alphas.size != 1:
            raise ValueError(f"this CoxnetSurvivalAnalysis was fitted at {alphas.size} alphas; "
                             "pass alpha= naming one of its alphas_ (a deletion refit keeps "
                             "that alpha)")
        return float(alphas[0]), 0
    close = np.flatnonzero(np.isclose(float(alpha), alphas))
    if close.size == 0:
        raise ValueError(f"alpha={alpha!r} is not one of the estimator's alphas_ (from "
                         f"{alphas.min():.4g} to {alphas.max():.4g}); coefficients between "
                         "them are interpolated by scikit-survival, not fitted")
    return float(alphas[close[0]]), int(close[0])


def _inputs(estimator, X, y):
    """``(X as float64 (n, d), time, event, index, columns)`` after the checks."""
    from sksurv.util import check_array_survival
    if not hasattr(estimator, "coef_"):
        raise ValueError(f"the {type(estimator).__name__} is not fitted")
    if X is None or y is None:
        raise ValueError(f"a {type(estimator).__name__} keeps no training data: pass them, "
                         "ci.influence(estimator, X, y=y)")
    event, time = check_array_survival(X, y)
    if isinstance(X, pd.DataFrame):
        names = getattr(estimator, "feature_names_in_", None)
        if names is not None and list(X.columns) != list(names):
            raise ValueError("X's columns are not the estimator's feature_names_in_ "
                             f"({list(names)[:5]}...), in that order")
        index, columns = X.index, [str(c) for c in X.columns]
        Xa = X.to_numpy(dtype=np.float64, copy=True)
    else:
        Xa = np.array(X, dtype=np.float64)
        index, columns = pd.RangeIndex(Xa.shape[0]), [f"x{j}" for j in range(Xa.shape[1])]
    if Xa.ndim != 2 or Xa.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X must have the estimator's {estimator.n_features_in_} features; "
                         f"got shape {Xa.shape}")
    if index.has_duplicates:
        raise ValueError("X has duplicate index labels; results are keyed by the index")
    return Xa, np.asarray(time, dtype=np.float64), np.asarray(event, dtype=np.float64), \
        index, columns


def _frame(Xa, time, event, index, columns):
    frame = pd.DataFrame(Xa, index=index, columns=columns)
    frame["time"], frame["event"] = time, event
    return frame


def resolve_sksurv(estimator, X, y, alpha=None):
    """A :class:`Resolved` for a fitted ``CoxPHSurvivalAnalysis`` or
    ``CoxnetSurvivalAnalysis`` on its training data ``X``, ``y`` (module docstring). Its
    ``fit`` is a :class:`~coxinfluence.models.coxnet.SksurvCoxFit` (``ctype=1``:
    scikit-survival's ``BreslowEstimator``); Coxnet's carries an
    :class:`~coxinfluence.models.coxnet.ElasticNetPenalty`, ``centre`` (the training
    means its ``predict`` subtracts) and ``alpha``."""
    Xa, time, event, index, columns = _inputs(estimator, X, y)
    frame = _frame(Xa, time, event, index, columns)
    design = pd.DataFrame(Xa, index=index, columns=columns)
    name = type(estimator).__name__
    if name == "CoxPHSurvivalAnalysis":
        fit, coef = _coxph_fit(estimator, design, time, event)
    elif name == "CoxnetSurvivalAnalysis":
        fit, coef = _coxnet_fit(estimator, design, time, event, alpha)
    else:
        raise TypeError(f"unsupported scikit-survival estimator {name}: "
                        f"{' or '.join(ESTIMATORS)}")
    _check(fit, coef, name)
    return Resolved(fit, frame, "scikit-survival")


def _coxph_fit(estimator, design, time, event):
    """``(our fit, the estimator's coefficients)`` of ``CoxPHSurvivalAnalysis``: its ridge
    ``alpha`` (none: the plain Cox fit) and ties."""
    coef = np.asarray(estimator.coef_, dtype=np.float64)
    ridge = np.broadcast_to(np.asarray(estimator.alpha, dtype=np.float64), coef.shape)
    if (ridge > 0).any():
        data = make_cox_data(design, time, event, ties=estimator.ties,
                             check_identifiable=False)
        fit = penalized_fit(data, coef, sksurv_ridge_penalty(ridge, data.n), estimator.ties)
    else:
        fit = fit_cox(design, time, event, ties=estimator.ties, init=coef)
    return _as_sksurv_fit(fit, type(estimator).__name__), coef


def _coxnet_fit(estimator, design, time, event, alpha):
    """``(our fit, the estimator's coefficients)`` of ``CoxnetSurvivalAnalysis`` at
    ``alpha`` (:func:`coxnet_alpha`)."""
    alpha, k = coxnet_alpha(estimator, alpha)
    coef = np.asarray(estimator.coef_[:, k], dtype=np.float64)
    Xa = design.to_numpy()
    data = make_cox_data(design, time, event, ties="breslow", check_identifiable=False)
    penalty = elastic_net_penalty(Xa, alpha, estimator.l1_ratio, estimator.penalty_factor_,
                                  estimator.normalize)
    fit = fit_coxnet(data, penalty, coef, centre=Xa.mean(axis=0),
                     estimator=type(estimator).__name__, alpha=alpha)
    return fit, coef


def _as_sksurv_fit(fit, name):
    """``fit`` (a CoxFit) as a :class:`SksurvCoxFit` with scikit-survival's baseline
    (``ctype=1``) and no centre (``CoxPHSurvivalAnalysis.predict`` is ``X beta``)."""
    fields = {f.name: getattr(fit, f.name) for f in dataclasses.fields(CoxFit)}
    fields.update(ctype=1, centre=None, estimator=name)
    out = SksurvCoxFit(**fields)
    out.__dict__["risk_sets"] = fit.risk_sets
    return out


def _check(fit, coef, name):
    check_agreement(fit, coef, name, tol=sksurv_tolerance(fit), owner=name,
                    where="its objective on the X, y given",
                    why="pass exactly the X and y it was fitted on, in the same rows (or "
                        "refit the estimator with a smaller tol)")

"""A model family defined only in the tests: logistic regression with case weights.

It gets the whole audit (VIF, Reid, Newton, exact refits, flags, ``method="auto"``'s
verified top, likelihood displacement, LMAX, the HTML report) through registration
alone, touching no package file (issue 34, item 5; ``docs/seam.md`` walks through it):

1. the user's fitted object, :class:`LogisticFit` (its own Newton-Raphson fitter), with
   the fit protocol's members (``FitProtocol``: ``index``, ``covariates``, ``n``);
2. its loss with presence weights, :class:`LogisticLoss`: ``L(theta, b) = sum_i b_i w_i
   l_i(theta)``, ``l_i = log(1 + e^eta_i) - y_i eta_i``, batched over problems;
3. the seam, :class:`LogisticAudit`: the derivatives at ``theta_hat`` (``full_gradient``,
   ``gradient_differences``, ``split_of``, ``third``) and the refit kernel; the
   :class:`~coxinfluence.influence_functions.engine.Engine` derives every algorithm;
4. what the layers above the audit read: residuals (``ci.residuals``; its ``"deviance"``
   kind turns the report's Model checks on) and the predictions ``ci.evaluate`` scores,
   which the targets ``ci.targets.LinearPredictor`` and ``ci.targets.Survival`` dispatch
   to;
5. one registration of the family and its parts, at the bottom:
   ``register(Family("logistic (tests)", LogisticFit, ...), targets=..., residuals=...)``
   (``coxinfluence.registration``; by the family's class: the most specific registered
   class takes a model), after which ``ci.influence(LogisticFit(X, y))``,
   ``ci.residuals`` and ``ci.evaluate`` work. The family reads ``y`` as "an event by the
   horizon", so its survival prediction is ``1 - p(x)`` at every time (a model of one
   horizon).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.audit.target_base import Target
from coxinfluence.diagnostics.registry import collapse_rows
from coxinfluence.influence_functions.engine import Engine, MaskKernel
from coxinfluence.influence_functions.registry import Family, Resolved, attach_columns
from coxinfluence.models.base import FitProtocol
from coxinfluence.registration import register


class LogisticLoss:
    """``L(theta, b)`` and its derivatives for a batch of problems (``theta`` (k, d),
    ``presence`` (k, n) or None: every row)."""

    def __init__(self, X, y, w):
        self.X, self.y, self.w = X, y, w

    def loss_grad_hess(self, theta, presence=None, hess=True):
        theta = np.atleast_2d(theta)
        eta = theta @ self.X.T                                  # (k, n)
        p = 1.0 / (1.0 + np.exp(-eta))
        W = self.w[None, :] if presence is None else presence * self.w[None, :]
        loss = (W * (np.logaddexp(0.0, eta) - self.y * eta)).sum(axis=1)
        grad = (W * (p - self.y)) @ self.X
        H = np.einsum("kn,ni,nj->kij", W * p * (1 - p), self.X, self.X) if hess else None
        return loss, grad, H

    def objective(self, deletion):
        """The refit kernel's form (:class:`MaskKernel`): ``evaluate(idx, theta,
        hess=True)`` of the problems ``idx`` of ``deletion`` (rows' presence 0/1)."""
        P = deletion.presence

        def evaluate(idx, theta, hess=True):
            return self.loss_grad_hess(theta, P[np.asarray(idx)], hess=hess)
        return evaluate


class LogisticFit(FitProtocol):
    """A user's fitted logistic regression ``P(y = 1 | x) = 1 / (1 + e^{-(a + x'b)})``:
    ``X`` a DataFrame (its index labels the rows), ``y`` 0/1, ``weights`` case weights.
    The fit protocol (``FitProtocol``): ``coef``, ``columns``, ``n``, and the members that
    differ from its defaults, ``index`` and ``covariates`` (not the intercept)."""

    model_name = "Logistic regression (a test-only family)"
    covariates = property(lambda self: self.columns[1:])      # not the intercept

    def __init__(self, X, y, weights=None, tol=1e-12, max_iter=50):
        X = pd.DataFrame(X)
        self.frame = X.assign(y=np.asarray(y, dtype=np.float64))
        self.columns = ["Intercept"] + [str(c) for c in X.columns]
        self.index, self.n = X.index, len(X)
        self.X = np.column_stack([np.ones(len(X)), X.to_numpy(dtype=np.float64)])
        self.y = np.asarray(y, dtype=np.float64)
        self.w = np.ones(len(X)) if weights is None else np.asarray(weights, dtype=np.float64)
        self.loss = LogisticLoss(self.X, self.y, self.w)
        theta = np.zeros(self.X.shape[1])
        for _ in range(max_iter):                       # Newton-Raphson
            _, g, H = self.loss.loss_grad_hess(theta)
            if np.abs(g).max() <= tol:
                break
            theta = theta - np.linalg.solve(H[0], g[0])
        self.coef = theta


class LogisticAudit(Engine):
    """The seam of a :class:`LogisticFit`, units its rows: derivatives only."""

    units_are_rows = True
    ratio_name = "odds ratio"
    target_names = ("coef", "logistic_linear_predictor", "logistic_survival")

    def __init__(self, fit):
        self.fit, self.model_name = fit, fit.model_name
        self.coef, self.columns = fit.coef, list(fit.columns)
        self.unit_labels = pd.Index(fit.index)

    @cached_property
    def _at_fit(self):
        X, y, w = self.fit.X, self.fit.y, self.fit.w
        p = 1.0 / (1.0 + np.exp(-(X @ self.coef)))
        return X, w * (p - y), w * p * (1 - p), w * p * (1 - p) * (1 - 2 * p)

    @property
    def information(self):
        X, _, v, _ = self._at_fit
        return X.T @ (v[:, None] * X)

    @property
    def converged(self):
        return bool(np.abs(self.full_gradient).max() <= 1e-8)

    def objective(self, thetas):
        return self.fit.loss.loss_grad_hess(thetas, hess=False)[0]

    @property
    def full_gradient(self):
        return self.gradient_differences.sum(axis=0)

    @property
    def gradient_differences(self):
        """``grad L - grad L_{-i} = w_i (p_i - y_i) x_i`` (a sum over rows)."""
        X, r, _, _ = self._at_fit
        return r[:, None] * X

    def split_of(self, codes):
        """``C_i = H - H_{-i} = w_i p_i (1 - p_i) x_i x_i'``."""
        X, _, v, _ = self._at_fit
        Xc = X[np.asarray(codes, dtype=int)]
        return v[np.asarray(codes, dtype=int), None, None] * Xc[:, :, None] * Xc[:, None, :]

    @property
    def third(self):
        X, _, _, t = self._at_fit
        return np.einsum("n,na,nb,nc->abc", t, X, X, X)

    def deletion_kernel(self):
        return MaskKernel(self.fit.loss, np.arange(len(self.unit_labels)))


def _build(fit, data, *, groups=None, robust=None):
    """The registered ``build``: the seam and what the audit knows of the data."""
    if groups is not None:
        raise ValueError("groups= is not available for the test family: its units are rows")
    frame = fit.frame if data is None else attach_columns(fit.frame, data, len(fit.index))
    return LogisticAudit(fit), Resolved(fit, frame, "tests", robust=bool(robust))




# ----------------------------------------- 4. residuals, predictions (ci.residuals, ci.evaluate)

def _residuals(fit, kind, *, collapse=None, weighted=None):
    """R's ``residuals.glm`` of a binomial fit: ``"response"`` ``y - p``, ``"pearson"``
    ``sqrt(w) (y - p) / sqrt(p (1 - p))``, ``"deviance"`` ``sign(y - p) sqrt(2 w l_i)``
    (``weighted`` is R's: the prior weights are in the Pearson and deviance residuals);
    ``collapse`` (labels, one per row) sums them per label."""
    eta = fit.X @ fit.coef
    p = 1.0 / (1.0 + np.exp(-eta))
    r = fit.y - p
    if kind == "response":
        values = r
    elif kind == "pearson":
        values = np.sqrt(fit.w) * r / np.sqrt(p * (1 - p))
    else:
        values = np.sign(r) * np.sqrt(2 * fit.w * (np.logaddexp(0.0, eta) - fit.y * eta))
    out = pd.Series(values, index=fit.index, name=kind)
    if collapse is None or collapse is False or collapse is True:   # the rows are the units
        return out
    return collapse_rows(out, collapse, fit.index)


def _design(fit, X_new):
    """``(labels, D)``: the new patients' rows of the design (intercept first); a DataFrame
    is read by the fit's covariate names."""
    if isinstance(X_new, pd.DataFrame):
        labels, X = X_new.index, X_new[fit.columns[1:]].to_numpy(dtype=np.float64)
    else:
        X = np.atleast_2d(np.asarray(X_new, dtype=np.float64))
        labels = pd.RangeIndex(len(X))
    return labels, np.column_stack([np.ones(len(X)), X])


class LogisticLinearPredictor(Target):
    """``ci.targets.LinearPredictor`` of a :class:`LogisticFit`: ``a + x'b`` (the log-odds;
    its C-index ranks by it)."""

    name = "logistic_linear_predictor"
    quantity = "linear_predictor"
    fit_type = LogisticFit

    def __init__(self, X_new):
        self.X_new = X_new

    def columns(self, fit):
        return [f"lp[{label}]" for label in _design(fit, self.X_new)[0]]

    def value(self, fit, theta):
        return np.atleast_2d(np.asarray(theta, dtype=np.float64)) @ self.jacobian(fit).T

    def jacobian(self, fit):
        return _design(fit, self.X_new)[1]


class LogisticSurvival(Target):
    """``ci.targets.Survival`` of a :class:`LogisticFit`: ``S(t|x) = 1 - p(x)`` at every
    time ``t`` (``y`` read as an event by the horizon), patient outer, time inner."""

    name = "logistic_survival"
    quantity = "survival"
    fit_type = LogisticFit

    def __init__(self, X_new, times):
        self.X_new, self.times = X_new, np.atleast_1d(np.asarray(times, dtype=np.float64))

    def columns(self, fit):
        return [f"S({t:g}|{label})" for label in _design(fit, self.X_new)[0]
                for t in self.times]

    def value(self, fit, theta):
        D = _design(fit, self.X_new)[1]
        S = 1.0 / (1.0 + np.exp(np.atleast_2d(np.asarray(theta, dtype=np.float64)) @ D.T))
        return np.repeat(S, self.times.size, axis=1)

    def jacobian(self, fit):
        D = _design(fit, self.X_new)[1]
        S = 1.0 / (1.0 + np.exp(D @ fit.coef))
        return np.repeat(-(S * (1 - S))[:, None] * D, self.times.size, axis=0)


# ------------------------------------------------------- 5. one registration of every part

FAMILY = register(Family("logistic (tests)", LogisticFit, _build,
                         description="a LogisticFit (tests)"),
                  targets=(LogisticLinearPredictor, LogisticSurvival),
                  residuals=(("response", "pearson", "deviance"), _residuals))

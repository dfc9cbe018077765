"""scikit-survival's risk score as a target: ``estimator.predict(X_new)``.

``CoxPHSurvivalAnalysis.predict`` is ``x' beta`` (the linear predictor);
``CoxnetSurvivalAnalysis.predict`` is ``(x - mean)' beta`` with ``mean`` the training
column means (its ``offset_ = mean' beta``). A deletion changes that mean too,
``mean_{-i} - mean = (mean - x_i) / (n - 1)``, so for Coxnet the leave-one-out change is

    g_{-i} - g = (x - mean)' (beta_{-i} - beta_hat)          (chain rule, J = x - mean)
                 + (x_i - mean)' beta_hat / (n - 1)           (data effect, exact)
                 + O(|beta_{-i} - beta_hat| / n),

and the exact change is ``(x - mean_{-i})' beta_{-i} - (x - mean)' beta_hat``. The centre
is read from the fit (``SksurvCoxFit.centre``; None: no centring).
"""
from __future__ import annotations

import numpy as np

from coxinfluence.audit.targets import CoxLinearPredictor, register_target
from coxinfluence.models.coxnet import SksurvCoxFit

__all__ = ["RiskScore"]


def _centre(fit):
    c = getattr(fit, "centre", None)
    return np.zeros(len(fit.coef)) if c is None else np.asarray(c, dtype=np.float64)


def _training_rows(fit):
    """(n, d) the training design in the caller's row order."""
    data = fit.data
    return data.to_caller_order(data.X) + data.X_center


@register_target
class RiskScore(CoxLinearPredictor):
    """scikit-survival's ``predict(X_new)`` of new patients (module docstring):
    ``ci.targets.LinearPredictor`` on a scikit-survival model."""

    name = "risk_score"
    quantity = "linear_predictor"
    prefix = "risk"

    @classmethod
    def evaluates(cls, fit):
        return isinstance(fit, SksurvCoxFit)

    def value(self, fit, theta):
        return np.asarray(theta, dtype=np.float64) @ (self._X(fit)[0] - _centre(fit)).T

    def jacobian(self, fit):
        return self._X(fit)[0] - _centre(fit)

    def data_effect(self, fit, units=None):
        if getattr(fit, "centre", None) is None:
            return None
        n, m = fit.n, self._X(fit)[0].shape[0]
        shift = (_training_rows(fit) - _centre(fit)) @ fit.coef / (n - 1)
        return np.repeat(shift[:, None], m, axis=1)

    def refit_values(self, fit, theta_loo, units=None):
        theta_loo = np.asarray(theta_loo, dtype=np.float64)
        X = self._X(fit)[0]
        if getattr(fit, "centre", None) is None:
            return theta_loo @ X.T
        n = fit.n
        mean_loo = (n * _centre(fit)[None, :] - _training_rows(fit)) / (n - 1)
        return theta_loo @ X.T - np.einsum("ij,ij->i", mean_loo, theta_loo)[:, None]

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

from coxinfluence.audit.target_base import register_target
from coxinfluence.families.cox_targets import CoxLinearPredictor
from coxinfluence.models.coxnet import SksurvCoxFit

__all__ = ["RiskScore"]


def _centre(fit):
    c = fit.centre                      # SksurvCoxFit's field (None: not centred)
    return np.zeros(len(fit.coef)) if c is None else np.asarray(c, dtype=np.float64)


def _training_rows(fit):
    """(n, d) the training design in the caller's row order."""
    data = fit.data
    return data.to_caller_order(data.X) + data.X_center


@register_target
class RiskScore(CoxLinearPredictor):
    """scikit-survival's risk score ``estimator.predict(X_new)`` of new patients.

    ``CoxPHSurvivalAnalysis.predict`` is ``x'beta``; ``CoxnetSurvivalAnalysis.predict``
    is ``(x - mean)'beta``, centred on the training means, which a deletion also changes
    (the data effect; module docstring). One column per patient, ``"risk[<label>]"``.
    ``ci.targets.LinearPredictor`` on a scikit-survival model (the deprecated
    ``ci.RiskScore`` is this class).

    Parameters
    ----------
    X_new : DataFrame or array_like
        The new patients, one per row, in the estimator's columns.

    See Also
    --------
    coxinfluence.targets.LinearPredictor : The target to use (dispatched on the model).
    """

    name = "risk_score"
    quantity = "linear_predictor"
    prefix = "risk"
    fit_type = SksurvCoxFit

    def value(self, fit, theta):
        """``(x - mean)'theta`` for each row of ``theta`` (``mean`` 0 without centring).

        Parameters
        ----------
        fit : SksurvCoxFit
            The fit of the scikit-survival estimator.
        theta : array_like, shape (B, d)
            Coefficient vectors.

        Returns
        -------
        numpy.ndarray, shape (B, P)
            One column per new patient.

        Examples
        --------
        >>> from sksurv.datasets import load_veterans_lung_cancer
        >>> from sksurv.linear_model import CoxnetSurvivalAnalysis
        >>> X, y = load_veterans_lung_cancer()
        >>> X = X[["Age_in_years", "Karnofsky_score", "Months_from_Diagnosis"]]
        >>> est = CoxnetSurvivalAnalysis(alphas=[0.05]).fit(X, y)
        >>> target = ci.targets.LinearPredictor(X.iloc[:2])
        >>> fit = ci.influence(est, X, y=y, target=target).fit
        >>> risk = target.implementation(fit=fit)
        >>> type(risk).__name__, risk.columns(fit)
        ('RiskScore', ['risk[0]', 'risk[1]'])
        >>> np.round(risk.value(fit, fit.coef[None, :]), 4)
        array([[-0.0695, -0.3942]])
        >>> np.round(est.predict(X.iloc[:2]), 4)
        array([-0.0695, -0.3942])
        """
        return np.asarray(theta, dtype=np.float64) @ (self._X(fit)[0] - _centre(fit)).T

    def jacobian(self, fit):
        """``J = x - mean`` for each new patient.

        Parameters
        ----------
        fit : SksurvCoxFit
            The fit of the scikit-survival estimator.

        Returns
        -------
        numpy.ndarray, shape (P, d)
            One row per new patient.

        Examples
        --------
        >>> from sksurv.datasets import load_veterans_lung_cancer
        >>> from sksurv.linear_model import CoxnetSurvivalAnalysis
        >>> X, y = load_veterans_lung_cancer()
        >>> X = X[["Age_in_years", "Karnofsky_score", "Months_from_Diagnosis"]]
        >>> est = CoxnetSurvivalAnalysis(alphas=[0.05]).fit(X, y)
        >>> target = ci.targets.LinearPredictor(X.iloc[:2])
        >>> fit = ci.influence(est, X, y=y, target=target).fit
        >>> risk = target.implementation(fit=fit)
        >>> risk.jacobian(fit).round(3)
        array([[10.693,  1.431, -1.774],
               [ 5.693, 11.431, -3.774]])
        >>> bool(np.allclose(risk.jacobian(fit), X.iloc[:2] - X.mean()))
        True
        """
        return self._X(fit)[0] - _centre(fit)

    def data_effect(self, fit, units=None):
        """The change of the centre by deleting each row: ``(x_i - mean)'beta / (n - 1)``.

        Exact (module docstring); the same for every new patient.

        Parameters
        ----------
        fit : SksurvCoxFit
            The fit of the scikit-survival estimator.
        units : object, optional
            Not used: the units are the rows.

        Returns
        -------
        numpy.ndarray of shape (n, P), or None
            One row per training row (caller's order); None without centring
            (``CoxPHSurvivalAnalysis``).

        Examples
        --------
        >>> from sksurv.datasets import load_veterans_lung_cancer
        >>> from sksurv.linear_model import CoxnetSurvivalAnalysis
        >>> X, y = load_veterans_lung_cancer()
        >>> X = X[["Age_in_years", "Karnofsky_score", "Months_from_Diagnosis"]]
        >>> est = CoxnetSurvivalAnalysis(alphas=[0.05]).fit(X, y)
        >>> target = ci.targets.LinearPredictor(X.iloc[:2])
        >>> fit = ci.influence(est, X, y=y, target=target).fit
        >>> risk = target.implementation(fit=fit)
        >>> effect = risk.data_effect(fit)
        >>> effect.shape
        (137, 2)
        >>> np.round(effect[:2] * 1e4, 2)
        array([[ -5.11,  -5.11],
               [-28.98, -28.98]])

        The same for both new patients, ``(x_i - mean)'beta / (n - 1)``:

        >>> shift = (X - X.mean()).to_numpy() @ fit.coef / (len(X) - 1)
        >>> bool(np.allclose(effect, shift[:, None]))
        True
        """
        if fit.centre is None:
            return None
        n, m = fit.n, self._X(fit)[0].shape[0]
        shift = (_training_rows(fit) - _centre(fit)) @ fit.coef / (n - 1)
        return np.repeat(shift[:, None], m, axis=1)

    def refit_values(self, fit, theta_loo, units=None):
        """``(x - mean_{-i})'beta_{-i}`` at each row's refitted coefficients.

        ``mean_{-i}`` the training means without row i (``mean`` 0 without centring).

        Parameters
        ----------
        fit : SksurvCoxFit
            The fit of the scikit-survival estimator.
        theta_loo : array_like, shape (n, d)
            Each row's refitted coefficients (caller's order).
        units : object, optional
            Not used: the units are the rows.

        Returns
        -------
        numpy.ndarray, shape (n, P)
            One row per training row.

        Examples
        --------
        >>> from sksurv.datasets import load_veterans_lung_cancer
        >>> from sksurv.linear_model import CoxnetSurvivalAnalysis
        >>> X, y = load_veterans_lung_cancer()
        >>> X = X[["Age_in_years", "Karnofsky_score", "Months_from_Diagnosis"]]
        >>> est = CoxnetSurvivalAnalysis(alphas=[0.05]).fit(X, y)
        >>> target = ci.targets.LinearPredictor(X.iloc[:2])
        >>> res = ci.influence(est, X, y=y, method="exact", target=target)
        >>> risk = target.implementation(fit=res.fit)
        >>> theta_loo = res.fit.coef + res.theta_change.to_numpy()
        >>> refits = risk.refit_values(res.fit, theta_loo)
        >>> refits.shape
        (137, 2)

        The exact leave-one-out change of the risk score is the refit's value less the
        full fit's:

        >>> full = risk.value(res.fit, res.fit.coef[None, :])
        >>> bool(np.allclose(refits - full, res.loo_change))
        True
        """
        theta_loo = np.asarray(theta_loo, dtype=np.float64)
        X = self._X(fit)[0]
        if fit.centre is None:
            return theta_loo @ X.T
        n = fit.n
        mean_loo = (n * _centre(fit)[None, :] - _training_rows(fit)) / (n - 1)
        return theta_loo @ X.T - np.einsum("ij,ij->i", mean_loo, theta_loo)[:, None]

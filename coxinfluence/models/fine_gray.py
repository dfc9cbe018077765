"""The Fine-Gray subdistribution hazard model, R's ``cmprsk::crr``: ``fit_fine_gray``.

The loss is ``coxinfluence.likelihood.fine_gray``'s (minus crr's log
pseudo-likelihood), minimised by Newton-Raphson with step halving from 0
(:mod:`coxinfluence.numerics.newton`), each step O(n d^2) after one sort: no expanded
data. ``var`` is crr's sandwich, which includes the censoring distribution's term
(``coxinfluence.likelihood.fine_gray.crr_scores``); ``naive_var`` the model-based
``I^{-1}`` (crr's ``invinf``).

The fit has the interface every fit shares (:class:`~coxinfluence.models.base.
FitInterface`). Its variance, the one ``se``, ``cov_params()``, ``conf_int()`` and
``summary()`` use, is crr's sandwich ``var`` whatever ``robust``: the model-based
``I^{-1}`` (``naive_var``) treats the censoring weights as known and is not a valid
variance of the estimate, so crr reports the sandwich; ``robust=True`` gives the same
sandwich with the scores summed per cluster (``groups=``; without groups, one subject
per cluster: ``var`` itself). crr defines no AIC (its log pseudo-likelihood is not a
likelihood): ``aic`` raises ``AttributeError``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property
from types import SimpleNamespace

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import (
    CoxInputError,
    aligned,
    as_float_matrix,
    as_vector,
    bad_rows,
    check_finite,
    check_positive_weights,
    encode_labels,
    encode_strata,
)
from coxinfluence.data.rank import check_design
from coxinfluence.likelihood.fine_gray import (
    CAUSE,
    CENSORED,
    COMPETING,
    FineGrayData,
    FineGrayLikelihood,
    build_fine_gray_data,
    crr_scores,
)
from coxinfluence.models import predictions
from coxinfluence.models.base import FitInterface
from coxinfluence.models.cox import ConvergenceWarning
from coxinfluence.numerics.newton import gradient_tolerance, newton

__all__ = ["fit_fine_gray", "FineGrayFit", "FineGrayConvergenceWarning",
           "fine_gray_gradient_tolerance"]


class FineGrayConvergenceWarning(ConvergenceWarning):
    """Newton-Raphson stopped before the Fine-Gray fit converged.

    A :class:`~coxinfluence.ConvergenceWarning`: ``except``/filters on that catch it.
    """


def fine_gray_gradient_tolerance(data, tol):
    """``tol``, or the gradient's rounding floor when that is larger.

    The one rule of :func:`coxinfluence.numerics.newton.gradient_tolerance` over the
    failures, each term's scale the largest ``|x|`` (centred covariates; at least 1): the
    gradient sums one ``xbar_k - x_i`` per failure, and ``xbar_k`` is as large as any
    row's ``x``.

    Parameters
    ----------
    data : FineGrayData
        The validated data.
    tol : float
        The caller's tolerance.

    Returns
    -------
    float
        The tolerance on ``max |gradient|``.
    """
    top = float(np.abs(data.X).max()) if data.X.size else 0.0
    return gradient_tolerance(tol, data.weight * (data.kind == CAUSE), scale=max(top, 1.0))


@dataclass(eq=False)
class FineGrayFit(FitInterface):
    """A fitted Fine-Gray model for one cause, made by :func:`~coxinfluence.fit_fine_gray`.

    R's ``cmprsk::crr`` fit. The interface every fit shares
    (``FitInterface``): ``params``, ``se``,
    ``cov_params(robust=False)``, ``conf_int(alpha=0.05, robust=False)``,
    ``summary(robust=False)``, ``loglik``, ``nobs``, ``n_units`` (the subjects: one row
    each), ``n_events`` (failures of the cause), ``influence(...)``; predictions for new
    patients (``predict_cumulative_incidence``, ``predict_lp``, ``predict_risk``). Every
    variance is crr's sandwich (Notes); no ``aic`` (crr has none).

    Parameters
    ----------
    coef : numpy.ndarray, shape (d,)
        The fitted coefficients (log subdistribution hazard ratios).
    loglik : float
        crr's log pseudo-likelihood at ``coef`` (``fit$loglik``).
    information : numpy.ndarray, shape (d, d)
        The Hessian of the loss at ``coef`` (crr's ``fit$inf``).
    gradient : numpy.ndarray, shape (d,)
        The loss's gradient at ``coef`` (about 0 when converged).
    converged : bool
        Whether Newton-Raphson converged (False after a
        ``FineGrayConvergenceWarning``).
    n_iter : int
        The Newton iterations taken.
    data : FineGrayData
        The validated, sorted data (``coxinfluence.likelihood.fine_gray``).
    cause : int
        The cause modelled (crr's ``failcode``).
    columns : list of str
        The covariates' names.
    index : pandas.Index or None
        The caller's pandas index, or None.
    group_labels : pandas.Index
        The censoring groups, in code order.
    status : numpy.ndarray
        The caller's status codes, caller's order.
    tol : float, default 1e-10
        The gradient tolerance of the fit.
    max_iter : int, default 50
        The iteration limit of the fit.
    strata_labels : pandas.Index, optional
        The strata, in code order (one label without strata).

    See Also
    --------
    coxinfluence.fit_fine_gray : Makes it.
    coxinfluence.influence : The audit of a fit.

    Notes
    -----
    The variance that ``se``, ``cov_params()``, ``conf_int()`` and ``summary()`` use
    is crr's sandwich ``var`` whatever ``robust``: the model-based ``I^{-1}``
    (``naive_var``) treats the censoring weights as known and is not a valid variance
    of the estimate, so crr reports the sandwich; ``robust=True`` gives the same
    sandwich with the scores summed per cluster (``groups=``; without groups, one
    subject per cluster: ``var`` itself). crr defines no AIC (its log
    pseudo-likelihood is not a likelihood): ``aic`` raises ``AttributeError``.

    Examples
    --------
    Simulated competing risks: cause 1 depends on age and treatment, cause 2 on
    neither.

    >>> rng = np.random.default_rng(1)
    >>> n = 200
    >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
    >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
    >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
    >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
    >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
    >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
    >>> fit
    FineGrayFit(Fine-Gray, cause 1: n=200, failures=96, competing=63, loglik=-454.158,
    converged=True)
    >>> fit.summary()[["coef", "exp(coef)", "se(coef)", "p"]].round(3)
              coef  exp(coef)  se(coef)      p
    age      0.203      1.225     0.117  0.083
    treated -0.562      0.570     0.204  0.006
    """

    prediction_family = "fine_gray"

    coef: np.ndarray
    loglik: float               # crr's log pseudo-likelihood at coef (fit$loglik)
    information: np.ndarray     # Hessian of the loss at coef (crr's fit$inf)
    gradient: np.ndarray
    converged: bool
    n_iter: int
    data: FineGrayData
    cause: object = field()     # field(): no default (FitProtocol's cause is None)
    columns: list = field()
    index: object = field()     # the caller's pandas index, or None
    group_labels: pd.Index      # the censoring groups, in code order
    status: np.ndarray          # the caller's status codes, caller order
    tol: float = 1e-10
    max_iter: int = 50
    strata_labels: pd.Index = None   # the strata, in code order (one label without strata)

    @property
    def n(self):
        """The number of subjects (rows) fitted (``nobs``).

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.n, fit.nobs
        (200, 200)
        """
        return self.data.n

    @property
    def model_name(self):
        """The model's name as the report shows it, e.g. "Fine-Gray, cause 1".

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.model_name
        'Fine-Gray, cause 1'
        """
        return f"Fine-Gray, cause {_plain(self.cause)}"

    @property
    def likelihood(self) -> FineGrayLikelihood:
        """The fit's ``FineGrayLikelihood``
        (loss, gradient, Hessian, with deletions).

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> type(fit.likelihood).__name__
        'FineGrayLikelihood'
        """
        return FineGrayLikelihood(self.data)

    @property
    def n_units(self) -> int:
        """The number of units of deletion: the subjects, one row each.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.n_units
        200
        """
        return self.n

    @property
    def n_events(self):
        """The number of failures of the cause modelled.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.n_events, fit.n_competing, fit.nobs
        (96, 63, 200)
        """
        return int((self.data.kind == CAUSE).sum())

    @property
    def n_competing(self):
        """The number of failures of the other causes (competing events).

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.n_events, fit.n_competing
        (96, 63)
        """
        return int((self.data.kind == COMPETING).sum())

    @cached_property
    def scores(self):
        """crr's ``eta_i + psi_i`` per subject, times the subject's case weight.

        The score with the censoring term
        (``crr_scores``), an (n, d) array in the
        caller's order.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.scores.shape
        (200, 2)
        """
        return self.data.to_caller_order(crr_scores(self.data, self.coef))

    @cached_property
    def naive_var(self):
        """``I^{-1}``, the model-based variance (crr's ``invinf``), an array.

        It treats the censoring weights as known, so it is not a valid variance of the
        estimate: ``var`` (the sandwich) is.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> bool(np.allclose(fit.naive_var @ fit.information, np.eye(2)))
        True
        """
        return np.linalg.inv(self.information)

    @cached_property
    def var(self):
        """crr's sandwich ``I^{-1} (sum_i s_i s_i') I^{-1}``: R's ``crr(...)$var``.

        ``s_i = eta_i + psi_i`` (:attr:`scores`). With case weights ``s_i`` is the
        weighted score ``w_i (eta_i + psi_i)`` (coxph's robust convention: not the
        variance of the duplicated data).

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> sandwich = fit.naive_var @ (fit.scores.T @ fit.scores) @ fit.naive_var
        >>> bool(np.allclose(fit.var, sandwich))
        True
        """
        S = self.scores
        return self.naive_var @ (S.T @ S) @ self.naive_var

    @property
    def se(self):
        """crr's standard errors, ``sqrt(diag(var))`` (the sandwich), an array.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.se.round(3)
        array([0.117, 0.204])

        The model-based ones (``naive_var``) treat the censoring weights as known:

        >>> np.sqrt(np.diag(fit.naive_var)).round(3)
        array([0.114, 0.209])
        """
        return np.sqrt(np.diag(self.var))

    def robust_covariance(self, groups=None):
        """crr's sandwich with the scores summed per cluster.

        ``I^{-1} (sum_g S_g S_g') I^{-1}``, ``S_g`` the sum of :attr:`scores` over the
        subjects of cluster ``g``.

        Parameters
        ----------
        groups : array_like, optional
            One cluster label per subject (caller's order). Without ``groups`` each
            subject is its own cluster and this is ``var``, crr's own.

        Returns
        -------
        numpy.ndarray, shape (d, d)
            The covariance (``cov_params(robust=True)`` names it).

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> clinic = np.arange(n) % 20
        >>> np.sqrt(np.diag(fit.robust_covariance(clinic))).round(3)
        array([0.098, 0.194])
        """
        if groups is None:
            return self.var
        codes, labels = encode_labels(groups, self.n, "groups", self.index)
        S = self.scores
        G = np.stack([np.bincount(codes, weights=S[:, j], minlength=len(labels))
                      for j in range(S.shape[1])], axis=1)
        return self.naive_var @ (G.T @ G) @ self.naive_var

    @property
    def aic(self):
        """Not defined: crr has no AIC (its log pseudo-likelihood, with the censoring
        weights estimated, is no likelihood), so this raises ``AttributeError``
        (``hasattr(fit, "aic")`` is False).

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> hasattr(fit, "aic")
        False
        """
        raise AttributeError("aic: the Fine-Gray model has no AIC (R's crr defines none: "
                             "its log pseudo-likelihood is not a likelihood)")

    def objective(self, thetas, deleted=None):
        """The loss (minus crr's log pseudo-likelihood) at each row of ``thetas``.

        Parameters
        ----------
        thetas : array_like, shape (m, d) or (d,)
            Coefficient vectors, one per row.
        deleted : optional
            The subjects deleted, one problem per row of ``thetas``, as
            ``FineGrayLikelihood`` takes them
            (the censoring Kaplan-Meier is re-estimated without them); None: all.

        Returns
        -------
        numpy.ndarray, shape (m,)
            The loss.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> bool(np.isclose(fit.objective(fit.coef)[0], -fit.loglik))
        True
        >>> fit.objective(np.vstack([fit.coef, np.zeros(2)])).round(3)
        array([454.158, 459.875])
        """
        thetas = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
        return self.likelihood.evaluate(thetas, deleted, hessian=False)[0]

    def _summary_head(self, se, robust):
        """summary(): crr's coef, exp(coef) (the subdistribution hazard ratio), then
        ``se(coef)`` (crr's sandwich) or, with ``robust=True``, ``robust se`` (the
        sandwich per cluster ``groups``: :meth:`robust_covariance`)
        (:meth:`FitInterface.summary`)."""
        return {"coef": self.coef, "exp(coef)": np.exp(self.coef),
                "robust se" if robust else "se(coef)": se}

    def training_frame(self) -> pd.DataFrame:
        """The covariates, time and status of each subject, caller's order and index.

        Returns
        -------
        pandas.DataFrame
            The covariates, ``time``, ``status``, and ``cengroup``, ``strata`` and
            ``weight`` when the fit has them.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.training_frame().head(2)
            age  treated   time  status
        0  0.35      0.0  0.899       2
        1  0.82      1.0  0.272       2
        """
        data = self.data
        index = self.index if self.index is not None else pd.RangeIndex(self.n)
        frame = pd.DataFrame(data.to_caller_order(data.X + data.X_center), index=index,
                             columns=self.columns)
        frame["time"] = data.to_caller_order(data.time)
        frame["status"] = self.status
        if len(self.group_labels) > 1:
            frame["cengroup"] = np.asarray(self.group_labels)[
                data.to_caller_order(data.cengroup)]
        if self.strata_labels is not None and len(self.strata_labels) > 1:
            frame["strata"] = np.asarray(self.strata_labels)[
                data.to_caller_order(data.stratum)]
        if not data.unit_weights:
            frame["weight"] = data.to_caller_order(data.weight)
        return frame

    def _html_head(self):
        import html
        return (f"<p><b>{html.escape(self.model_name)}</b>: n = {self.n}, failures = "
                f"{self.n_events}, competing = {self.n_competing}, log pseudo-likelihood = "
                f"{self.loglik:.6g}, "
                f"{'converged' if self.converged else '<b>not converged</b>'}</p>")

    # predictions for new patients: the formulas are in models/predictions.py (each the
    # value its influence target measures at coef)
    def predict_cumulative_incidence(self, X_new, times, strata=None):
        """The cause's cumulative incidence ``F(t | x)`` of new patients at ``times``.

        ``1 - exp(-Lambda_10(t) exp(x'beta))``: ``cmprsk::predict.crr(fit, cov1 =
        X_new)`` read at ``times``
        (``coxinfluence.models.predictions.predict_cumulative_incidence``).

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, d)
            The new patients' covariates (a DataFrame's columns matched by name, extra
            columns ignored).
        times : float or array_like
            Times (>= 0; at a failure time, ``t = 0`` included, its jump is in).
        strata : optional
            Each patient's stratum in a stratified fit (one label for all, or one per
            patient).

        Returns
        -------
        pandas.DataFrame
            Rows the patients, columns the times.

        Warns
        -----
        coxinfluence.TargetBeyondFollowUpWarning
            A time past the cause's last failure time (of the patient's stratum): the
            value there is the last plateau carried forward.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.predict_cumulative_incidence(X.iloc[:3], [0.5, 1, 2]).round(3)
        time    0.5    1.0    2.0
        0     0.389  0.523  0.696
        1     0.266  0.371  0.527
        2     0.388  0.522  0.695
        """
        return predictions.predict_cumulative_incidence(self, X_new, times, strata=strata)

    def predict_lp(self, X_new):
        """The linear predictor ``x'beta`` of new patients, not centred.

        (``coxinfluence.models.predictions.predict_lp``.)

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, d)
            The new patients' covariates.

        Returns
        -------
        pandas.Series
            One value per patient, named ``lp``.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.predict_lp(X.iloc[:3]).round(3)
        0    0.071
        1   -0.396
        2    0.067
        Name: lp, dtype: float64
        """
        return predictions.predict_lp(self, X_new)

    def predict_risk(self, X_new):
        """``exp(x'beta)`` of new patients: the subdistribution hazard ratio to ``x = 0``.

        (``coxinfluence.models.predictions.predict_risk``.)

        Parameters
        ----------
        X_new : array_like or pandas.DataFrame, shape (m, d)
            The new patients' covariates.

        Returns
        -------
        pandas.Series
            One value per patient, named ``risk``.

        Examples
        --------
        >>> rng = np.random.default_rng(1)
        >>> n = 200
        >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
        >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
        >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
        >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
        >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
        >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
        >>> fit.predict_risk(X.iloc[:3]).round(3)
        0    1.074
        1    0.673
        2    1.069
        Name: risk, dtype: float64
        """
        return predictions.predict_risk(self, X_new)

    def __repr__(self):
        return (f"FineGrayFit({self.model_name}: n={self.n}, failures={self.n_events}, "
                f"competing={self.n_competing}, loglik={self.loglik:.6g}, "
                f"converged={self.converged})")


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _status(status, n, index, cause):
    """Caller's status codes (0 censored, 1..K causes) -> crr's kinds for ``cause``."""
    raw = status.to_numpy() if isinstance(status, (pd.Series, pd.Index)) else np.asarray(status)
    if raw.ndim != 1 or raw.shape[0] != n:
        raise CoxInputError(f"status must be 1-D with one entry per row of X ({n}); got "
                            f"shape {raw.shape}")
    s = as_vector(raw, n, "status")
    check_finite(s, "status", index)
    bad = (s != np.round(s)) | (s < 0)
    if bad.any():
        raise CoxInputError(f"status must be 0 (censored) or a cause 1, 2, ...: "
                            f"{bad_rows(bad, index)} are not")
    try:
        c = float(cause)
    except (TypeError, ValueError):
        raise CoxInputError(f"cause must be a status code 1, 2, ...; got {cause!r}") from None
    if c <= 0 or c != round(c):
        raise CoxInputError(f"cause must be a status code 1, 2, ... (0 is censored); got "
                            f"{cause!r}")
    if not (s == c).any():
        present = sorted({int(v) for v in s[s > 0]})
        raise CoxInputError(f"no failures of cause {_plain(cause)}: the causes present are "
                            f"{present}; the model has no events")
    kind = np.where(s == c, CAUSE, np.where(s == 0, CENSORED, COMPETING)).astype(np.int8)
    return s.astype(np.int64), kind


def make_fine_gray_data(X, time, status, cause=1, *, cengroup=None, weights=None,
                        strata=None, ties="breslow"):
    """Validate the caller's input: (FineGrayData, columns, index, group labels, status
    codes, strata labels)."""
    Xa, columns, index = as_float_matrix(X, "X")
    n = Xa.shape[0]
    if n == 0:
        raise CoxInputError("X has no rows")
    check_finite(Xa, "X", index)
    if index is not None:
        time = aligned(time, index, "time")
        status = aligned(status, index, "status")
        if cengroup is not None:
            cengroup = aligned(cengroup, index, "cengroup")
        if weights is not None:
            weights = aligned(weights, index, "weights")
        if strata is not None:
            strata = aligned(strata, index, "strata")
    t = as_vector(time, n, "time")
    check_finite(t, "time", index)
    if (t < 0).any():
        raise CoxInputError(f"time must be non-negative: {bad_rows(t < 0, index)} are not")
    codes, kind = _status(status, n, index, cause)
    if cengroup is None:
        group, labels = np.zeros(n, dtype=np.intp), pd.Index([1], name="cengroup")
    else:
        group, labels = encode_labels(cengroup, n, "cengroup", index)
    w = None
    if weights is not None:
        w = as_vector(weights, n, "weights")
        check_finite(w, "weights", index)
        check_positive_weights(w, index, "subjects")
    stratum, labels_s, _ = encode_strata(strata, n, index)
    strata_labels = pd.Index([1] if labels_s is None else list(labels_s), name="strata",
                             tupleize_cols=False)
    data = build_fine_gray_data(Xa, t, kind, group, weight=w, stratum=stratum, ties=ties)
    check_design(SimpleNamespace(**vars(data.rank_view()), columns=columns))
    return data, columns, index, labels, codes, strata_labels


def fit_fine_gray(X, time, status, cause=1, *, cengroup=None, weights=None, strata=None,
                  ties="breslow", tol=1e-10, max_iter=50, init=None, entry=None,
                  id=None) -> FineGrayFit:
    """Fit the Fine-Gray subdistribution hazard model for ``cause``, as R's ``crr``.

    R's ``cmprsk::crr(time, status, X, failcode = cause, cencode = 0, cengroup =
    cengroup)``. Subjects who failed from another cause stay in the risk sets, weighted
    through the Kaplan-Meier estimate of the censoring distribution (per censoring
    group). The loss (minus crr's log pseudo-likelihood,
    ``coxinfluence.likelihood.fine_gray``) is minimised by Newton-Raphson with step
    halving from 0, each step O(n d^2) after one sort: no expanded data.

    Parameters
    ----------
    X : array_like or pandas.DataFrame, shape (n, d)
        Numeric covariates (no intercept), one row per subject.
    time : array_like, shape (n,)
        Non-negative times of failure or censoring.
    status : array_like, shape (n,)
        0 censored, 1, 2, ... the cause of failure.
    cause : int, default 1
        The cause modelled (crr's ``failcode``); subjects failing from another cause
        stay in the risk sets, weighted by the censoring distribution's Kaplan-Meier
        estimate.
    cengroup : array_like, shape (n,), optional
        Censoring groups: a Kaplan-Meier estimate per group (crr's).
    weights : array_like, shape (n,), optional
        Positive case weights: a subject of weight ``w`` counts ``w`` times in the risk
        sets, the failure counts and its group's censoring Kaplan-Meier (weights of 2 =
        the subject duplicated; ``coxinfluence.likelihood.fine_gray``). ``var`` is
        then the sandwich of the weighted scores (coxph's robust convention).
    strata : array_like or pandas.DataFrame, optional
        Labels, or a DataFrame of stratum columns: separate risk sets (baselines) per
        stratum, and the censoring Kaplan-Meier per censoring group within each stratum
        (as ``survival::finegray`` with ``strata()``); the loss is the sum over strata.
    ties : {"breslow", "efron"}, default "breslow"
        Breslow (crr's) or R's weighted Efron approximation (``coxph`` on the data
        expanded as ``survival::finegray`` does: each of the ``n_k`` tied failures
        carries the mean weight,
        ``TieTerms``), so with Efron integer
        weights are not duplicated subjects.
    tol : float, default 1e-10
        Convergence when ``max |gradient| <= tol`` (or the gradient's rounding floor,
        ``fine_gray_gradient_tolerance``) and the Newton step is small
        (``coxinfluence.numerics.newton.converged``).
    max_iter : int, default 50
        Newton iterations before a ``FineGrayConvergenceWarning``.
    init : array_like, shape (d,), optional
        Starting coefficients (default zeros, as crr).
    entry : None
        Not supported, refused with an error (accepted so that every fitter has the
        same names): crr has no delayed entry (its censoring Kaplan-Meier and risk sets
        start at 0).
    id : None
        Not supported, refused with an error: the model has one row per subject (the
        subjects are the rows, labelled by X's index).

    Returns
    -------
    FineGrayFit
        The fit; its variance is crr's sandwich.

    Raises
    ------
    InputError
        Naming the problem: ``entry`` or ``id`` given; ``ties`` not "breslow" or
        "efron"; NaN or infinite values; negative times; status codes not 0, 1, 2, ...;
        no failures of ``cause``; non-positive weights; constant or collinear
        covariates; an ``init`` of the wrong length.

    Warns
    -----
    FineGrayConvergenceWarning
        When Newton-Raphson does not converge (a :class:`~coxinfluence.ConvergenceWarning`).

    See Also
    --------
    coxinfluence.FineGrayFit : The fit and its methods.
    coxinfluence.fit_cox : The Cox model (cause-specific hazards).
    coxinfluence.influence : The audit of the fit: deleting a subject re-estimates the
        censoring Kaplan-Meier (the non-decomposable part).

    Notes
    -----
    cmprsk's ``crr`` is the oracle for the coefficients, its sandwich variance (which
    includes the censoring term) and ``predict.crr``; survival's ``finegray`` +
    ``coxph`` gives the same coefficients (its robust variance leaves the censoring term
    out).

    Examples
    --------
    Simulated competing risks: cause 1 depends on age and treatment, cause 2 on
    neither.

    >>> rng = np.random.default_rng(1)
    >>> n = 200
    >>> X = pd.DataFrame({"age": rng.normal(size=n).round(2), "treated": rng.integers(0, 2, n)})
    >>> t1 = rng.exponential(1 / np.exp(0.5 * X["age"] - 0.7 * X["treated"]))
    >>> t2, censor = rng.exponential(2.0, n), rng.exponential(3.0, n)
    >>> time = np.minimum.reduce([t1, t2, censor]).round(3)
    >>> status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
    >>> fit = ci.fit_fine_gray(X, time, status, cause=1)
    >>> fit.params.round(3)
    covariate
    age        0.203
    treated   -0.562
    Name: coef, dtype: float64
    >>> round(fit.loglik, 3)
    -454.158
    """
    if entry is not None:
        raise CoxInputError("entry= (delayed entry, left truncation) is not supported by the "
                            "Fine-Gray model here: crr's risk sets and censoring Kaplan-Meier "
                            "start at time 0; fit_cox and fit_aft take entry=")
    if id is not None:
        raise CoxInputError("id= is not supported by the Fine-Gray model: it has one row per "
                            "subject (the subjects are the rows, labelled by X's index); "
                            "several rows per subject are not")
    if ties not in ("breslow", "efron"):
        raise CoxInputError(f"ties must be 'breslow' (crr's) or 'efron'; got {ties!r}")
    data, columns, index, labels, codes, strata_labels = make_fine_gray_data(
        X, time, status, cause, cengroup=cengroup, weights=weights, strata=strata, ties=ties)
    theta0 = np.zeros(data.d) if init is None else np.asarray(init, dtype=np.float64)
    if theta0.shape != (data.d,):
        raise CoxInputError(f"init must have {data.d} entries; got shape {theta0.shape}")
    lik = FineGrayLikelihood(data)
    res = newton(lik.objective(np.ones((1, data.n))), theta0[None, :],
                 tol=fine_gray_gradient_tolerance(data, tol), max_iter=max_iter)
    fit = FineGrayFit(coef=res.theta[0], loglik=float(-res.loss[0]),
                      information=res.hess[0], gradient=res.grad[0],
                      converged=bool(res.converged[0]), n_iter=int(res.n_iter[0]), data=data,
                      cause=_plain(cause), columns=columns, index=index, group_labels=labels,
                      status=codes, tol=tol, max_iter=max_iter, strata_labels=strata_labels)
    if not fit.converged:
        reason = ("the Hessian became singular or the coefficients diverged"
                  if res.failed[0] else f"{max_iter} iterations were not enough")
        warnings.warn(f"Fine-Gray fit did not converge: {reason}; max |gradient| = "
                      f"{float(np.abs(res.grad[0]).max()):.3g} (tol {tol:g})",
                      FineGrayConvergenceWarning, stacklevel=2)
    return fit

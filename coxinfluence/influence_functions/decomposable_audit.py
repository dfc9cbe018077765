"""Any fitted model whose loss is a weighted sum over rows, behind the audit's seam
(:mod:`coxinfluence.influence_functions.seam`), from the loss's derivatives alone.

A :class:`DecomposableFit` carries ``coef`` (a minimum), ``columns`` and a ``loss`` with

- ``value(theta, presence)``, ``gradient(theta, presence)``, ``hessian(theta, presence)``:
  ``L(theta, b) = sum_i b_i w_i l_i(theta)`` (``l_i`` minus row i's log-likelihood,
  ``w_i`` its case weight, ``b_i`` its presence: 1 kept, 0 deleted) and its derivatives;
- ``row_gradients(theta)`` (n, d): ``w_i grad l_i``; ``row_hessians(theta)`` (n, d, d):
  ``w_i grad^2 l_i``; ``third(theta)`` (d, d, d): the third derivative of ``L(., 1)``.

(:mod:`coxinfluence.integrations.lifelines_parametric` builds one for any lifelines
``ParametricRegressionFitter``.) Deleting unit g (its rows) removes its terms, ``L_{-g} = L
- L_g``, so with ``H`` the information at ``theta_hat`` and ``s_g = grad L_g(theta_hat) =
sum_{i in g} w_i grad l_i``:

- **VIF = IF exactly** (the paper's Section 3.5, "M-Estimation"): ``grad L - grad L_{-g} =
  s_g`` at ``theta_hat``, and the case-weight derivative gives the same vector, so
  ``change("vif") = change("reid") = H^{-1} s_g`` (the change ``theta_{-g} - theta_hat``,
  ``= -VIF_n(g)/U``);
- **one-step Newton**: ``-(H - C_g)^{-1} (grad L(theta_hat) - s_g)``, with the exact
  information split ``C_g = sum_{i in g} w_i grad^2 l_i`` (``H - C_g = H_{-g}``);
- **exact refits**: the engine's batched loop
  (:mod:`coxinfluence.influence_functions.engine_refits`) on the loss with the unit's rows
  at presence 0, to ``max |gradient| <= tol``; :func:`minimise` (the one solver with its
  Hessian updates) fits the full model;
- ``unstable``: :func:`~coxinfluence.influence_functions.stability.unstable_from_split`
  with ``C_g`` and ``T``; ``undefined``: none known without refitting;
- ``unit_scores``: ``-s_g``; ``covariance(False)``: ``H^{-1}``; ``covariance(True)``: the
  grouped sandwich ``D' D``, ``D`` the units' changes ``H^{-1} s_g`` (Huber's).
"""
from __future__ import annotations

import warnings
from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.data.deletion import Deletion
from coxinfluence.data.inputs import encode_labels
from coxinfluence.influence_functions.engine import Engine, MaskKernel
from coxinfluence.influence_functions.seam import FitSeam, ReportHeader
from coxinfluence.models.base import FitProtocol
from coxinfluence.numerics.newton import newton

__all__ = ["DecomposableFit", "DecomposableAudit", "minimise"]

#: step halvings before a Newton step is given up
_HALVINGS = 40


class DecomposableFit(FitProtocol):
    """A fitted model with a row-decomposable loss (module docstring): ``loss``,
    ``coef`` (d,), ``columns`` (d names; a ``pd.MultiIndex`` keeps its levels),
    ``index`` (the rows' labels), ``tol`` (the gradient tolerance of the fit and the
    refits), ``model_name``, ``facts`` (what the report says after the number of units,
    e.g. the events and the log-likelihood), ``targets`` (names of the targets beside
    ``coef`` defined for this fit, e.g. ``"lifelines_survival"``) and ``source_model`` (the
    library's fitted model whose parameters ``coef`` are, which such targets evaluate; None
    when there is none). ``converged``: ``max |grad L(coef)| <= tol`` and a positive
    definite Hessian. The other members of the fit protocol have
    ``models.base.FitProtocol``'s defaults."""

    def __init__(self, loss, coef, columns, index, *, tol, model_name, facts=None,
                 targets=(), source_model=None):
        self.loss = loss
        self.targets = tuple(targets)
        self.source_model = source_model
        self.coef = np.asarray(coef, dtype=np.float64).reshape(-1)
        self.columns = columns
        self.index = pd.Index(index)
        self.n = len(self.index)
        self.tol = float(tol)
        self.model_name = model_name
        self.facts = facts
        ones = np.ones(self.n)
        self.gradient = np.asarray(loss.gradient(self.coef, ones), dtype=np.float64)
        self.information = _symmetric(loss.hessian(self.coef, ones))
        pd_ok = bool(np.all(np.isfinite(self.information))) and bool(
            np.all(np.linalg.eigvalsh(self.information) > 0))
        self.converged = bool(np.abs(self.gradient).max() <= self.tol) and pd_ok

    def objective(self, thetas):
        """(m,) ``L(theta, 1)`` at each row of ``thetas``."""
        ones = np.ones(self.n)
        return np.array([float(self.loss.value(t, ones)) for t in np.atleast_2d(thetas)])


def _symmetric(H):
    H = np.asarray(H, dtype=np.float64)
    return (H + H.T) / 2


def _value_gradient(loss, theta, presence):
    """``(L, grad L)`` at ``theta``: one pass where the loss has ``value_and_gradient``."""
    both = getattr(loss, "value_and_gradient", None)
    if both is not None:
        f, g = both(theta, presence)
    else:
        f, g = loss.value(theta, presence), loss.gradient(theta, presence)
    return float(f), np.asarray(g, dtype=np.float64)


def minimise(loss, theta0, presence, *, tol, max_iter=60):
    """``(theta, ok)``: ``L(., presence)`` minimised from ``theta0`` by the one solver,
    :func:`coxinfluence.numerics.newton.newton`, with its Hessian updates (the Hessian
    kept while ``max |grad|`` falls tenfold per step, else BFGS's update, then
    recomputed: a loss's Hessian through autodiff costs several gradients) and
    Levenberg's damping where the Hessian is not positive definite; ``ok``: converged."""
    presence = np.asarray(presence, dtype=np.float64)[None, :]
    objective = _LossObjective(loss).objective(Deletion(presence))
    res = newton(objective, np.asarray(theta0, dtype=np.float64)[None, :], tol=tol,
                 max_iter=max_iter, max_halving=_HALVINGS, damping=True,
                 hessian="updated")
    return res.theta[0], bool(res.converged[0])


class _LossObjective:
    """The loss as the engine's :class:`~coxinfluence.influence_functions.engine.
    MaskKernel` reads it: ``objective(deletion)`` evaluates ``L(., presence)`` and its
    derivatives problem by problem (quietly: a trial step may overflow; its loss is then
    inf)."""

    def __init__(self, loss):
        self.loss = loss

    def objective(self, deletion):
        P = deletion.presence
        loss = self.loss

        def evaluate(idx, theta, hess=True):
            theta = np.atleast_2d(theta)
            k, d = theta.shape
            f, g = np.empty(k), np.empty((k, d))
            H = np.empty((k, d, d)) if hess else None
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                for j, (i, th) in enumerate(zip(np.asarray(idx), theta)):
                    f[j], g[j] = _value_gradient(loss, th, P[i])
                    if hess:
                        H[j] = _symmetric(loss.hessian(th, P[i]))
            f[~np.isfinite(f)] = np.inf
            return f, g, H

        return evaluate


class DecomposableAudit(FitSeam, Engine):
    """A :class:`DecomposableFit` with its units of deletion (``groups``: one label per
    row; default the rows), as the audit sees it (module docstring): the engine
    (:class:`~coxinfluence.influence_functions.engine.Engine`) with the loss's row
    derivatives. A family with its own closed forms of them (the AFT model) overrides
    :meth:`row_gradients`, :meth:`row_hessians`, :attr:`third` and, for its own units,
    :meth:`units_of`."""

    #: the fits it audits, and what the error on another object calls them
    fit_class, fit_words = DecomposableFit, "a DecomposableFit"
    max_iter = 60

    def __init__(self, fit, groups=None):
        if not isinstance(fit, self.fit_class):
            raise TypeError(f"expected {self.fit_words}; got {type(fit).__name__}")
        self.fit = fit
        self.groups = groups
        units = self.units_of(groups)
        self.units_are_rows = units is None
        if units is None:
            units = np.arange(fit.n), (fit.index if fit.index is not None
                                       else pd.RangeIndex(fit.n))
        self.unit_of, self.unit_labels = units

    def units_of(self, groups):
        """``(codes, labels)`` of the units ``groups`` (one label per row), or None: the
        rows."""
        if groups is None:
            return None
        return encode_labels(groups, self.fit.n, "groups", self.fit.index)

    @property
    def columns(self):
        """The fit's ``columns`` as given (a ``pd.MultiIndex`` keeps its levels)."""
        return self.fit.columns

    @property
    def refit_tolerance(self):
        """``max |gradient|`` of the refits: the fit's ``tol``."""
        return self.fit.tol

    @property
    def target_names(self):
        """The targets (``Target.name``) this model's changes can be taken of: ``coef``
        and the fit's ``targets``."""
        return ("coef",) + tuple(t for t in self.fit.targets if t != "coef")

    # ------------------------------------------------------- the row derivatives
    def row_gradients(self):
        """(n, d) ``w_i grad l_i(theta_hat)``."""
        return np.asarray(self.fit.loss.row_gradients(self.coef))

    def row_hessians(self):
        """(n, d, d) ``w_i grad^2 l_i(theta_hat)``."""
        return np.asarray(self.fit.loss.row_hessians(self.coef))

    @cached_property
    def third(self):
        """(d, d, d) the third derivative of ``L(., 1)`` at ``theta_hat``."""
        return np.asarray(self.fit.loss.third(self.coef))

    # ------------------------------------------------------- shared, cached once
    def _by_unit(self, rows):
        """Sum of per-row arrays (n, ...) over each unit's rows -> (U, ...)."""
        if self.units_are_rows:
            return rows
        out = np.zeros((self.n_units,) + rows.shape[1:])
        np.add.at(out, self.unit_of, rows)
        return out

    @property
    def full_gradient(self):
        """(d,) ``grad L(theta_hat)``."""
        return self.fit.gradient

    @cached_property
    def gradient_differences(self):
        """(U, d) ``s_g = grad L_g(theta_hat)``, which is ``grad L - grad L_{-g}`` at
        ``theta_hat`` exactly."""
        return self._by_unit(self.row_gradients())

    @cached_property
    def split(self):
        """(U, d, d) ``C_g = grad^2 L_g(theta_hat)``, the exact information split."""
        return self._by_unit(self.row_hessians())

    def split_of(self, codes):
        """(m, d, d) ``C_g`` of the units ``codes``."""
        return self.split[np.asarray(codes, dtype=int)]

    # ------------------------------------------------------------------ refits
    def deletion_kernel(self):
        """The loss without each unit's rows (presence masks), problem by problem."""
        return MaskKernel(_LossObjective(self.fit.loss), self.unit_of)

    # -------------------------------------------------------------------- trust
    def report_header(self):
        """The report's and the CLI's words for the model: its name, and the fit's
        ``facts`` (else the number of parameters and the log-likelihood ``-L``)."""
        value = float(self.objective(self.coef[None, :])[0])
        facts = self.fit.facts or (f"{self.coef.size} parameters, log-likelihood "
                                   f"{-value:.4f}")
        return ReportHeader(name=self.model_name, statement=self.model_name, facts=facts)

    def unit_frame(self, frame):
        """Rows: ``frame``; groups: their number of rows, indexed by the unit label."""
        if self.units_are_rows:
            return frame
        return pd.DataFrame({"rows": np.bincount(self.unit_of, minlength=self.n_units)},
                            index=self.unit_labels)

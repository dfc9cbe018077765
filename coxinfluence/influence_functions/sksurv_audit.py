"""scikit-survival's Cox models behind the seam (:mod:`coxinfluence.influence_functions.seam`).

``CoxPHSurvivalAnalysis`` is a (ridge-penalised) Cox model: :class:`SksurvCoxAudit` is
:class:`~coxinfluence.influence_functions.cox_audit.CoxAudit` with scikit-survival's risk
score among its targets.

``CoxnetSurvivalAnalysis`` is the elastic net of :mod:`coxinfluence.models.coxnet`:
``J = L + sum_j lambda_j |beta_j| + (1/2) sum_j r_j beta_j^2`` (summed scale), audited by
:class:`CoxnetAudit`. With ``A`` the active set (``beta_hat_j != 0``), ``s = sign(beta_hat)``
and ``G_{-i} = grad L_{-i}(beta_hat) + r_{-i} beta_hat`` the smooth gradient of the deleted
objective ``J_{-i}`` (its strengths ``lambda_{-i}``, ``r_{-i}``), the KKT conditions of
``J_{-i}`` on ``A`` linearised at ``beta_hat`` give, when the deletion keeps the selection,

    VIF:    Delta_A = -H_AA^{-1} (G_{-i,A} + lambda_{-i,A} s_A),   Delta_{not A} = 0,

``H`` the smooth part's Hessian at ``beta_hat`` (the paper's Eq. (VIF), ``-(H/n)^{-1}
(grad J - grad J_{-i})`` restricted to ``A``, since ``grad J_A = 0`` there). One-step
Newton replaces ``H`` by the deleted Hessian ``H_{-i}``; Reid's IF is the derivative in
row i's case weight with the penalty held fixed, ``-H_AA^{-1} U_{i,A}`` (``U_i`` the score
residual). ``L_{-i}``'s gradient at ``beta_hat`` comes from the closed-form VIF
(:func:`coxinfluence.influence_functions.vif.gradient_differences`).

A deletion can change the selection, where no first-order number is defined. Predicted
without refitting (flag ``selection_changes``): with the predicted margin after the
deletion ``m`` and its predicted change ``c`` (``m_before - m``),

- active j: ``m = s_j (beta_hat_j + Delta_j)`` (its distance to zero), ``m_before = |beta_hat_j|``;
- inactive j: ``m = lambda_{-i,j} - |G_{-i,j} + H_{jA} Delta_A|`` (its KKT slack at the
  predicted refit), ``m_before = lambda_j - |G_j|``;

a row is flagged when some ``m <= (SELECTION_SAFETY - 1) |c|``: the predicted move,
``SELECTION_SAFETY`` times larger, would cross; ``Delta`` is the VIF's and, while
``n d^2 <= NEWTON_ENTRIES``, also one-step Newton's (either flags). ``method="auto"``
refits every flagged row.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.cox_audit import CoxAudit
from coxinfluence.influence_functions.deleted_hessians import deleted_hessians
from coxinfluence.influence_functions.engine import Engine, Refits
from coxinfluence.influence_functions.engine_refits import map_chunks
from coxinfluence.influence_functions.seam import FitSeam
from coxinfluence.influence_functions.vif import gradient_differences as loss_gradient_differences
from coxinfluence.likelihood.score_residuals import score_residuals_sorted
from coxinfluence.models.coxnet import coxnet_refits

__all__ = ["SksurvCoxAudit", "CoxnetAudit", "SELECTION_SAFETY", "NEWTON_ENTRIES"]

#: how many times its first-order prediction a selection margin must exceed to be left
#: unflagged. Measured on scikit-survival's five bundled data sets at the alphas of
#: ``paper_appendix/bench_sksurv.py`` (16 fits, 709 selection changes): every change is
#: caught with a factor of 1.29 (breast cancer, 82 covariates; 1.06 elsewhere), by the
#: VIF or Newton (the VIF alone needed 5.3 there)
SELECTION_SAFETY = 2.0
#: while ``n d^2`` is at most this (the closed-form deleted Hessians' memory: 160 MB) the
#: flag also asks one-step Newton, which predicts the selection better where d is large
#: against n (scikit-survival's breast cancer data: 198 rows, 82 covariates)
NEWTON_ENTRIES = 20_000_000


class SksurvCoxAudit(CoxAudit):
    """A ``CoxPHSurvivalAnalysis`` (our :class:`~coxinfluence.CoxFit` of its objective,
    ridge included): the Cox audit, with scikit-survival's risk score as a target."""

    target_names = CoxAudit.target_names + ("risk_score",)
    model_name = "Cox proportional hazards (scikit-survival CoxPHSurvivalAnalysis)"


class CoxnetAudit(Engine, FitSeam):
    """A ``CoxnetSurvivalAnalysis`` at one alpha (``fit``: the
    :class:`~coxinfluence.models.coxnet.SksurvCoxFit` of its elastic net), units the rows
    (module docstring). ``survival``: whether ``Survival`` targets are offered (the
    estimator has a baseline model). On the engine
    (:class:`~coxinfluence.influence_functions.engine.Engine`) with the gradients and
    Hessians on the active set (the VIF and one-step Newton changes are the engine's);
    the refits are the elastic net's own (:func:`~coxinfluence.models.coxnet.coxnet_refits`:
    proximal Newton, a deletion may change the selection)."""

    model_name = "Cox elastic net (scikit-survival CoxnetSurvivalAnalysis)"
    units_are_rows = True

    def __init__(self, fit, survival=False):
        self.fit = fit
        self.target_names = ("coef", "hazard_ratio", "risk_score") + (
            ("survival",) if survival else ())
        self.active = fit.coef != 0

    # ------------------------------------------ the model (coef, columns, converged: FitSeam)
    @cached_property
    def unit_labels(self):
        data = self.fit.data
        return pd.Index(data.index) if data.index is not None else pd.RangeIndex(data.n)

    @cached_property
    def information(self):
        """The smooth part's Hessian on the active set; coefficients at zero decoupled
        (identity): the objective is not differentiable off the active set, and first-order
        changes there are zero."""
        A = self.active
        H = np.eye(self.coef.size)
        H[np.ix_(A, A)] = self.fit.information[np.ix_(A, A)]
        return H

    # ------------------------------------------------------ shared, computed once
    @cached_property
    def deleted_gradient(self):
        """(n, d) ``G_{-i}``: the smooth gradient of ``J_{-i}`` at ``beta_hat``, caller's
        row order. ``grad L - grad L_{-i}`` is the closed-form VIF's gradient difference
        (:func:`~coxinfluence.influence_functions.vif.gradient_differences`: no Hessian
        solved, so a singular one, more covariates than events, does no harm)."""
        fit = self.fit
        dL = loss_gradient_differences(fit, resolve_units(fit))       # grad L - grad L_{-i}
        penalty = fit.penalty
        return fit.gradient - dL + (penalty.ridge_loo - penalty.ridge) * fit.coef

    # ------------------------------------------------ the engine's derivatives
    @property
    def full_gradient(self):
        """(d,) zeros: ``grad J`` on the active set (the KKT conditions; decoupled off
        it)."""
        return np.zeros(self.coef.size)

    @cached_property
    def gradient_differences(self):
        """(n, d) ``grad J - grad J_{-i}`` on the active set: ``-(G_{-i,A} + lambda_{-i,A}
        s_A)`` (``grad J_A = 0``), zero off it."""
        kkt = self.deleted_gradient + self.fit.penalty.l1_loo * np.sign(self.coef)
        return np.where(self.active, -kkt, 0.0)

    def deleted_hessians(self, codes):
        """(m, d, d) the smooth part's Hessian of ``J_{-i}`` at ``beta_hat`` on the active
        set (the identity off it): the loss's in closed form
        (:func:`coxinfluence.influence_functions.deleted_hessians.deleted_hessians`) plus
        the ridge part without the row."""
        fit, A = self.fit, self.active
        codes = np.asarray(codes, dtype=int)
        H = deleted_hessians(fit, resolve_units(fit), codes)
        H = H + fit.penalty.ridge_loo[codes][:, :, None] * np.eye(fit.data.d)[None]
        out = np.repeat(np.eye(fit.data.d)[None], codes.size, axis=0)
        out[:, A[:, None] & A[None, :]] = H[:, A[:, None] & A[None, :]]
        return out

    def reid_change(self):
        """(n, d) ``-H_AA^{-1} U_{i,A}`` (``U_i`` the score residual), zero off ``A``."""
        fit, A = self.fit, self.active
        U = fit.data.to_caller_order(score_residuals_sorted(fit.risk_sets, fit.coef))
        out = np.zeros(U.shape)
        if A.any():
            out[:, A] = -np.linalg.solve(fit.information[np.ix_(A, A)], U[:, A].T).T
        return out

    def refit(self, codes=None, *, progress=None, executor=None, n_chunks=None):
        """The elastic net's own refits (:func:`~coxinfluence.models.coxnet.coxnet_refits`)
        from the one-step Newton (or VIF) change, in batches of 64; ``executor`` (a
        ``concurrent.futures.Executor`` or a dask ``Client``) takes chunks of whole
        batches (results bit-identical to the serial run), ``progress`` a tqdm bar."""
        codes = np.arange(self.fit.n) if codes is None else np.asarray(codes, dtype=int)
        init = self.coef + self.change("newton" if self._with_newton else "vif")[codes]
        theta = np.empty((codes.size, self.coef.size))
        for p, part in map_chunks(coxnet_refits, (self.fit,), lambda p: (codes[p], init[p], 64),
                                  codes.size, 64, executor=executor, n_chunks=n_chunks,
                                  progress=progress):
            theta[p] = part
        ok = np.isfinite(theta).all(axis=1)
        return Refits(codes, theta, np.where(ok, "ok", "refit_failed"))

    def unstable(self, delta_vif):
        """None beyond :meth:`selection_changes` (no measured rule on the active set)."""
        return np.zeros(self.fit.n, dtype=bool)

    @cached_property
    def selection_changes(self):
        """(n,) bool: the deletion is predicted to change the selected covariates by the
        VIF's change or, while ``n d^2 <= NEWTON_ENTRIES``, by one-step Newton's (module
        docstring)."""
        flag = self._crossing(self.change("vif"))
        if self._with_newton:
            flag |= self._crossing(self.change("newton"))
        return flag

    @property
    def _with_newton(self):
        return self.fit.n * self.fit.data.d ** 2 <= NEWTON_ENTRIES

    def _crossing(self, delta):
        """(n,) bool: some margin ``m <= (SELECTION_SAFETY - 1) |c|`` for the predicted
        change ``delta`` (n, d) (module docstring)."""
        fit, A, k = self.fit, self.active, SELECTION_SAFETY
        s = np.sign(fit.coef)
        m_act = s * (fit.coef + delta)
        c_act = np.abs(fit.coef) - m_act
        pred = self.deleted_gradient + delta[:, A] @ fit.information[A, :]
        m_in = fit.penalty.l1_loo - np.abs(pred)
        c_in = (fit.penalty.l1 - np.abs(fit.gradient)) - m_in
        m = np.where(A, m_act, m_in)
        c = np.where(A, c_act, c_in)
        return ((m <= (k - 1.0) * np.abs(c)) & (fit.penalty.l1 > 0)).any(axis=1)

    def extra_flags(self):
        """The flags beside the audit's own: ``selection_changes``."""
        return {"selection_changes": self.selection_changes}

    #: what the report says of each of :meth:`extra_flags`
    flag_descriptions = {"selection_changes": "selection changes (deleting the patient may "
                                              "change the selected covariates, where no "
                                              "first-order number is defined; refitted: "
                                              "\u2713 in the tables)"}

    #: ``method="auto"`` refits every flagged row, beyond its usual cap
    refit_every_flagged = True

    def unit_scores(self):
        """(n, d) the score residuals ``U_i`` on the active set (zero elsewhere)."""
        fit = self.fit
        U = fit.data.to_caller_order(score_residuals_sorted(fit.risk_sets, fit.coef))
        return np.where(self.active, U, 0.0)

    def covariance(self, robust):
        """``H_AA^{-1}`` on the active set, zero for coefficients at zero (no standard error:
        their dfbetas are NaN). ``robust=True`` is refused."""
        if robust:
            raise ValueError("robust standard errors are not available for the elastic net")
        A = self.active
        V = np.zeros((self.coef.size, self.coef.size))
        if A.any():
            V[np.ix_(A, A)] = np.linalg.inv(self.fit.information[np.ix_(A, A)])
        return V

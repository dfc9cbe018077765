"""The parametric AFT model (R's ``survreg``) behind the audit's seam
(:mod:`coxinfluence.influence_functions.seam`): a row-decomposable loss, audited by
:class:`~coxinfluence.influence_functions.decomposable_audit.DecomposableAudit` with the
AFT likelihood's closed-form row derivatives.

The loss is the negative log-likelihood of :mod:`coxinfluence.likelihood.aft`,
``L(theta) = sum_i w_i l_i(theta)``. A unit is a row, a subject (``fit_aft(..., id=)``,
the default when given) or a cluster (``groups=``, which overrides it). The mathematics of
a sum over rows (VIF = IF exactly, the exact information split ``C_g``, one-step Newton,
the refits) is :mod:`~coxinfluence.influence_functions.decomposable_audit`'s. R's
``residuals(fit, "dfbeta")`` of row i is ``-H^{-1} grad l_i`` per unit of case weight, so
``change(i) = -w_i dfbeta_R(i)``. The third derivative is in closed form
(:meth:`coxinfluence.likelihood.aft.AFTLikelihood.third_derivative`); the refits finish
with R's Newton steps (``coxinfluence.models.aft.POLISH_STEPS``); deletions that leave no
maximum or a rank-deficient design keep their own handling (:meth:`AFTAudit.undefined`).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from coxinfluence.data.rank import (
    identifiable_columns,
    rows_whose_deletion_breaks_rank,
    units_whose_deletion_breaks_rank,
)
from coxinfluence.influence_functions.decomposable_audit import DecomposableAudit
from coxinfluence.influence_functions.engine import MaskKernel
from coxinfluence.influence_functions.seam import FitSeam, ReportHeader
from coxinfluence.likelihood.aft import EXACT, INTERVAL, LEFT, RIGHT
from coxinfluence.models.aft import (
    DIST_NAMES,
    POLISH_STEPS,
    AFTFit,
    AFTNotConvergedError,
    aft_gradient_tolerance,
    design_view,
)
from coxinfluence.numerics.newton import newton

__all__ = ["AFTAudit"]

#: presence masks of at most this many floats per batch of refits
_BATCH_FLOATS = 2_000_000


class AFTAudit(DecomposableAudit):
    """A fitted :class:`~coxinfluence.models.aft.AFTFit` with its units of deletion
    (``groups``: one label per row, e.g. a cluster; default the fit's subjects,
    ``fit_aft(..., id=)``, else the rows), as the audit sees it (module docstring): a
    :class:`~coxinfluence.influence_functions.decomposable_audit.DecomposableAudit` with
    the AFT likelihood's closed-form row derivatives."""

    #: the targets (``Target.name``) this model's changes can be taken of
    target_names = ("coef", "time_ratio", "aft_survival", "survival_quantile")
    fit_class, fit_words = AFTFit, "an AFTFit from coxinfluence.fit_aft"
    columns = FitSeam.columns

    def units_of(self, groups):
        """``(codes, labels)`` of ``groups``, else of the fit's subjects (``id=``), or
        None: the rows."""
        return self.fit.clusters(groups)

    # ---------------------------------------------------------------- the model
    def row_gradients(self):
        """(n, d) ``w_i grad l_i`` at ``theta_hat``: the fit's row scores weighted."""
        return self.fit.data.weights[:, None] * self.fit.row_scores()

    def row_hessians(self, rows=None):
        """(n, d, d) ``w_i grad^2 l_i`` at ``theta_hat`` (of ``rows`` only, when given)."""
        return self.fit.likelihood.row_hessians(self.fit.coef, rows, weighted=True)

    @cached_property
    def third(self):
        """(d, d, d) the loss's third derivative at ``theta_hat`` (closed form)."""
        return self.fit.likelihood.third_derivative(self.fit.coef)

    def split_of(self, codes):
        """(m, d, d) ``C_g`` of the units ``codes``: from :attr:`split` when all are asked
        or it is computed, else from their rows only."""
        codes = np.asarray(codes, dtype=int).reshape(-1)
        if codes.size == self.n_units or "split" in self.__dict__:
            return self.split[codes]
        rows = np.flatnonzero(np.isin(self.unit_of, codes))
        parts = self.row_hessians(rows)
        pos = np.searchsorted(np.sort(codes), self.unit_of[rows])
        out = np.zeros((codes.size,) + parts.shape[1:])
        np.add.at(out, pos, parts)
        return out[np.argsort(np.argsort(codes))]

    # ------------------------------------------------------------------ refits
    @property
    def refit_tolerance(self):
        """``max |gradient|`` of the refits: 1e-10 or the gradient's rounding floor."""
        return aft_gradient_tolerance(self.fit.data, self.fit.tol)

    @property
    def max_iter(self):
        """Newton-Raphson iterations of a refit (the fit's)."""
        return self.fit.max_iter

    @property
    def refit_batch_size(self):
        """Refits per batch: presence masks of at most :data:`_BATCH_FLOATS` floats."""
        return max(1, _BATCH_FLOATS // max(self.fit.n, 1))

    def check_refit(self):
        """Refuse exact refits of a fit that did not converge."""
        if not self.fit.converged:
            raise AFTNotConvergedError("the AFT fit did not converge: exact refits have no "
                                       "maximum to be compared with")

    def deletion_kernel(self):
        """The likelihood without each unit's rows (presence masks), with R's finishing
        Newton steps (``POLISH_STEPS``)."""
        return MaskKernel(self.fit.likelihood, self.unit_of,
                          newton_options={"polish": POLISH_STEPS})

    def no_maximum(self):
        """(U,) bool: the deletion leaves no event, or a stratum's scale without an event
        or without rows."""
        return self._why_undefined["no_max"]

    def rank_broken(self):
        """(U,) bool: the deletion leaves the design ``[1, X]`` rank deficient."""
        return self._why_undefined["rank"]

    def refit_reduced(self, code):
        """(d,) the refit without unit ``code`` by Newton-Raphson from ``coef``, the
        covariates it leaves collinear with the intercept or each other dropped (NaN), as
        R's refit aliases them (coefficient NA, the others as if it were 0)."""
        fit, tol = self.fit, self.refit_tolerance
        data = fit.data
        keep_rows = self.unit_of != code
        view = design_view(data.X[keep_rows, 1:], fit.covariates)
        cov = identifiable_columns(view)
        keep = np.concatenate([[0], 1 + cov, np.arange(data.p, data.d)])
        out = np.full(data.d, np.nan)
        presence = keep_rows.astype(np.float64)[None, :]
        full = fit.likelihood.objective(presence)

        def reduced(idx, theta):
            th = np.zeros((theta.shape[0], data.d))
            th[:, keep] = theta
            loss, grad, hess = full(idx, th)
            return loss, grad[:, keep], hess[:, keep][:, :, keep]

        res = newton(reduced, fit.coef[keep][None, :], tol=tol, max_iter=fit.max_iter,
                     polish=POLISH_STEPS)
        if res.converged[0]:
            out[keep] = res.theta[0]
        return out

    # ------------------------------------------------------------------ trust
    @cached_property
    def _why_undefined(self):
        """Per unit: ``no_max`` (no event left, or a stratum's scale without an event or
        rows), ``rank`` (the design loses its rank), ``any``."""
        data, U = self.fit.data, self.n_units
        K = data.n_strata
        informative = (data.kind != RIGHT).astype(np.float64)
        cell = self.unit_of * K + data.strata
        n_us = np.bincount(cell, minlength=U * K).reshape(U, K)
        e_us = np.bincount(cell, weights=informative, minlength=U * K).reshape(U, K)
        rest_n = np.bincount(data.strata, minlength=K)[None, :] - n_us
        rest_e = np.bincount(data.strata, weights=informative, minlength=K)[None, :] - e_us
        # no event left at all; a stratum's scale left without an event (no maximum) or
        # without rows (not identified)
        no_max = rest_e.sum(axis=1) <= 0
        if not data.fixed_scale:
            no_max |= ((rest_n > 0) & (rest_e <= 0)).any(axis=1)
            no_max |= ((rest_n == 0) & (n_us > 0)).any(axis=1)
        rank = np.zeros(U, dtype=bool)
        if data.p > 1:
            view = design_view(data.X[:, 1:], self.fit.covariates)
            rank = (rows_whose_deletion_breaks_rank(view) if self.units_are_rows
                    else units_whose_deletion_breaks_rank(view, self.unit_of, U))
            rank = np.asarray(rank, dtype=bool)
        return {"no_max": no_max, "rank": rank, "any": no_max | rank}

    def undefined(self):
        """(U,) bool: deleting the unit leaves no event, a stratum's scale without an event
        or without rows, or the design ``[1, X]`` rank deficient (a covariate constant or
        collinear among the remaining rows: :mod:`coxinfluence.data.rank` on the centred
        covariates, whose rank is that of ``[1, X]`` minus one)."""
        return self._why_undefined["any"].copy()

    def covariance(self, robust):
        """``I^{-1}`` (the fit's ``var``), or the grouped sandwich ``D' D`` with ``D`` the
        units' changes (R's ``survreg(..., robust = TRUE, cluster = groups)$var``)."""
        return super().covariance(True) if robust else self.fit.var

    def unit_frame(self, frame):
        """Rows: ``frame``; clusters (``groups=``): their number of rows and events
        (exact, left- or interval-censored times); subjects (``id=``): also their
        follow-up span, the first entry (0 without ``entry=``) and the last time (upper
        bound of an interval- or left-censored row); indexed by the unit label."""
        out = super().unit_frame(frame)
        if self.units_are_rows:
            return out
        data, U, code = self.fit.data, self.n_units, self.unit_of
        if self.groups is None:
            entry = np.full(U, np.inf)
            start = np.zeros(data.n) if data.entry is None else np.exp(data.entry)
            np.minimum.at(entry, code, start)
            last = np.where(data.kind == INTERVAL, data.y2, data.y)
            exit_ = np.full(U, -np.inf)
            np.maximum.at(exit_, code, np.exp(last))
            out["entry"], out["exit"] = entry, exit_
        out["events"] = np.bincount(code, weights=(data.kind != RIGHT).astype(float),
                                    minlength=U)
        return out

    # ------------------------------------------------------------ the report
    def report_header(self):
        """The report's and the CLI's words for the model (:class:`~coxinfluence.
        influence_functions.seam.ReportHeader`): the distribution, the events (exact
        times; left- and interval-censored rows counted apart), the scale(s) ``sigma``
        (one per stratum) and the log-likelihood."""
        fit, kind = self.fit, self.fit.data.kind
        parts = [f"{int((kind == EXACT).sum())} events"]
        parts += [f"{int((kind == k).sum())} {what}" for k, what in
                  ((LEFT, "left-censored"), (INTERVAL, "interval-censored"))
                  if (kind == k).any()]
        dist = DIST_NAMES[fit.dist]
        return ReportHeader(name=f"{dist} AFT",
                            statement=f"{dist} AFT model (R's survreg, log T = x'beta + "
                                      "sigma W)",
                            facts=", ".join(parts) + f", {dist.lower()} distribution, "
                                  f"{self._scale_text()}, log-likelihood {fit.loglik:.4f}")

    def _scale_text(self):
        """"scale 0.7124", "scale[1] 0.71, scale[2] 0.85" (a scale per stratum, named as
        R's ``Log(scale[...])`` parameters), or "scale fixed at 1" (exponential)."""
        fit = self.fit
        if fit.data.fixed_scale:
            return "scale fixed at 1"
        names = [c[4:-1] if c.startswith("Log(") and c.endswith(")") else c
                 for c in fit.columns[fit.data.p:]]
        return ", ".join(f"{name} {value:.4g}" for name, value in zip(names, fit.scale))

    def summary_table(self, robust):
        """R's ``summary(survreg)`` table (Value, Std. Error, z, p); with ``robust`` the
        grouped sandwich SE of this audit's units (R's ``robust se``, ``cluster =``)."""
        return self.fit.summary(robust=bool(robust), groups=self.groups)

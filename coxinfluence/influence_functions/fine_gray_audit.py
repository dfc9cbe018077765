"""The Fine-Gray model (R's ``cmprsk::crr``) behind the audit's seam
(:mod:`coxinfluence.influence_functions.seam`), the subject as the unit.

The loss (:mod:`coxinfluence.likelihood.fine_gray`) is non-decomposable twice: through its
risk sets, and through the Kaplan-Meier estimate of the censoring distribution that
weights the subjects who failed from another cause. Deleting subject i removes it from
both: its risk sets and its censoring group's Kaplan-Meier estimate, which changes every
weight after ``T_i``. With ``n`` subjects and ``H`` the information at ``theta_hat``:

- **VIF** (the paper's definition, Eq. (VIF)): ``VIF_n(i) = -(H/n)^{-1} (grad L(theta_hat)
  - grad L_{-i}(theta_hat))``, ``L_{-i}`` the loss without subject i and with the
  Kaplan-Meier re-estimated; the gradients of every deletion in closed form, O(K d) per
  subject (:mod:`coxinfluence.likelihood.fine_gray_deletion`; tests compare them with the
  literal deletion), or, with Breslow's ties and few distinct case weights (any strata), by the
  exact series of :mod:`coxinfluence.likelihood.fine_gray_series`, O((n + K) d) for all
  subjects. Case weights, strata and Efron's ties: :mod:`coxinfluence.likelihood.
  fine_gray` (a failing subject leaves its own tie). The change is ``theta_hat_{-i} -
  theta_hat ~ -VIF_n(i)/n``.
- **Reid's IF** ("reid"): crr's influence function, ``IF_n(i) = n H^{-1} (eta_i + psi_i)``
  (:func:`coxinfluence.likelihood.fine_gray.crr_scores`; ``psi_i`` the censoring
  weights' term), so that ``sum_i (IF_n(i)/n)(IF_n(i)/n)'`` is crr's sandwich variance.
  :meth:`FineGrayAudit.fixed_weight_change` gives, labelled, the IF with the weights held
  fixed (``eta_i`` alone, what ``finegray`` + ``coxph``'s robust variance uses).
- **One-step Newton**: ``-H_{-i}^{-1} grad L_{-i}(theta_hat)``, the deleted Hessians in
  the same closed form.
- **Exact refits**: the engine's batched loop
  (:mod:`~coxinfluence.influence_functions.engine_refits`) on the deleted loss
  (Kaplan-Meier re-estimated: presence masks), to ``max |gradient| <= 1e-10`` (or the
  gradient's rounding floor).
- **Flags**: ``undefined`` (no failure of the cause left, or the design rank deficient
  without the subject), ``unstable`` by
  :func:`~coxinfluence.influence_functions.stability.unstable_from_split` with ``C_i = H -
  H_{-i}`` and the third derivative by central differences of the analytic Hessian.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.data.rank import rows_whose_deletion_breaks_rank
from coxinfluence.influence_functions.engine import Engine, MaskKernel
from coxinfluence.influence_functions.registry import Family, as_seam, register_family
from coxinfluence.influence_functions.seam import FitSeam, ReportHeader, label_text
from coxinfluence.likelihood.fine_gray import CAUSE, crr_scores, loss_grad_hess
from coxinfluence.likelihood.fine_gray_deletion import DeletionState, deleted_derivatives
from coxinfluence.likelihood.fine_gray_series import deleted_gradients_series, series_applies
from coxinfluence.models.fine_gray import FineGrayFit, fine_gray_gradient_tolerance

__all__ = ["FineGrayAudit"]

#: presence masks and row arrays of at most this many floats per batch of refits
_BATCH_FLOATS = 4_000_000


class FineGrayAudit(Engine, FitSeam):
    """A fitted :class:`~coxinfluence.models.fine_gray.FineGrayFit` as the audit sees it:
    one unit per subject, labelled by the caller's index (module docstring); the
    algorithms are the engine's (:class:`~coxinfluence.influence_functions.engine.Engine`),
    from the derivatives here."""

    #: the targets (``Target.name``) this model's changes can be taken of
    target_names = ("coef", "hazard_ratio", "cumulative_incidence")
    #: what the report calls exp(coef) (optional seam member; default "hazard ratio")
    ratio_name = "subdistribution hazard ratio"
    progress_unit = "subject"
    units_are_rows = True

    def __init__(self, fit):
        if not isinstance(fit, FineGrayFit):
            raise TypeError(f"expected a FineGrayFit from coxinfluence.fit_fine_gray; got "
                            f"{type(fit).__name__}")
        self.fit = fit
        self.unit_labels = fit.index if fit.index is not None else pd.RangeIndex(fit.n)
        # caller's row -> sorted row
        self._sorted_row = np.argsort(fit.data.order)
        data = fit.data
        self.refit_tolerance = fine_gray_gradient_tolerance(data, fit.tol)
        self.max_iter = fit.max_iter
        self.refit_batch_size = max(1, _BATCH_FLOATS // max(data.n * (data.d + 2), 1))

    # ---------------------------------------------------------------- the model
    def deletion_kernel(self):
        """The loss without each subject (the censoring Kaplan-Meier re-estimated):
        presence masks, :meth:`~coxinfluence.likelihood.fine_gray.FineGrayLikelihood.
        objective`."""
        return MaskKernel(self.fit.likelihood, np.arange(self.fit.n))

    # ------------------------------------------------------ the derivatives
    @cached_property
    def deletion_state(self):
        """:class:`~coxinfluence.likelihood.fine_gray_deletion.DeletionState` at
        ``theta_hat`` (with the pieces of the deleted Hessians)."""
        return DeletionState(self.fit.data, self.coef, hessian=True)

    @cached_property
    def _gradient_state(self):
        if "deletion_state" in self.__dict__:
            return self.deletion_state
        return DeletionState(self.fit.data, self.coef, hessian=False)

    @cached_property
    def _deleted_gradients(self):
        """(n, d) ``grad L_{-i}(theta_hat)``, caller's order: the exact series where it
        applies, else the closed form."""
        if "deleted" in self.__dict__:
            return self.deleted[0]
        state = self._gradient_state
        if series_applies(self.fit.data):       # the series reads either state
            g = deleted_gradients_series(state)
        else:
            g, _ = deleted_derivatives(state)
        return self.fit.data.to_caller_order(g)

    def deleted_gradients(self, codes):
        """(m, d) ``grad L_{-i}(theta_hat)`` of the subjects ``codes``."""
        return self._deleted_gradients[np.asarray(codes, dtype=np.intp)]

    @cached_property
    def deleted(self):
        """(``grad L_{-i}``, ``H_{-i}``) at ``theta_hat`` for every subject, caller's order."""
        g, h = deleted_derivatives(self.deletion_state)
        to_caller = self.fit.data.to_caller_order
        return to_caller(g), to_caller(h)

    def deleted_hessians(self, codes):
        """(m, d, d) ``H_{-i}(theta_hat)`` of the subjects ``codes`` in closed form (every
        subject's computed once when all are asked)."""
        codes = np.asarray(codes, dtype=np.intp)
        if "deleted" in self.__dict__ or codes.size == self.n_units:
            return self.deleted[1][codes]
        return deleted_derivatives(self.deletion_state, self._sorted_row[codes])[1]

    @cached_property
    def full_gradient(self):
        """``grad L(theta_hat)`` (about 0: the fit's tolerance)."""
        return self._gradient_state.full_gradient()

    @cached_property
    def gradient_differences(self):
        """(n, d) ``grad L(theta_hat) - grad L_{-i}(theta_hat)``."""
        return self.full_gradient[None, :] - self._deleted_gradients

    @cached_property
    def reid(self):
        """(n, d) ``IF_n(i) = n H^{-1} (eta_i + psi_i)``: ``(IF/n)'(IF/n)`` is crr's var."""
        return self.n_units * np.linalg.solve(self.information, self.fit.scores.T).T

    def reid_change(self):
        """(n, d) ``-IF_n(i)/n``, crr's influence function."""
        return -self.reid / self.n_units

    @cached_property
    def split(self):
        """(n, d, d) ``C_i = H - H_{-i}(theta_hat)`` (sums to ``H`` only approximately: the
        loss is not a sum over subjects)."""
        return self.information[None] - self.deleted[1]

    @cached_property
    def third(self):
        """(d, d, d) the loss's third derivative at ``theta_hat``: central differences of
        the analytic Hessian with steps ``1e-4 / sd(x_j)`` (relative error about 1e-8,
        ample for the ``unstable`` flag), symmetrised over its three indices."""
        data, d = self.fit.data, self.fit.data.d
        sd = data.X.std(axis=0)
        h = 1e-4 / np.where(sd > 0, sd, 1.0)
        thetas = np.concatenate([self.coef + np.diag(h), self.coef - np.diag(h)])
        _, _, H = loss_grad_hess(data, thetas, np.ones((2 * d, data.n)))
        T = np.moveaxis((H[:d] - H[d:]) / (2 * h)[:, None, None], 0, 2)
        return (T + T.transpose(0, 2, 1) + T.transpose(1, 0, 2) + T.transpose(1, 2, 0)
                + T.transpose(2, 0, 1) + T.transpose(2, 1, 0)) / 6.0

    def fixed_weight_change(self):
        """(n, d) ``-H^{-1} w_i eta_i``: Reid's IF with the censoring weights held fixed
        (no ``psi_i``; ``w_i`` the case weight), labelled apart from "reid"; its sandwich
        is what ``finegray`` + ``coxph``'s robust variance computes (for crr's weights)."""
        eta = self.fit.data.to_caller_order(crr_scores(self.fit.data, self.coef,
                                                       censoring_term=False))
        return -np.linalg.solve(self.information, eta.T).T

    # ------------------------------------------------------------------ trust
    @cached_property
    def _undefined(self):
        data = self.fit.data
        out = np.zeros(self.n_units, dtype=bool)
        fails = data.kind == CAUSE
        if fails.sum() <= 1:
            out[data.order[fails]] = True
        if data.n > data.d + 1:
            out |= data.to_caller_order(np.asarray(
                rows_whose_deletion_breaks_rank(data.rank_view()), dtype=bool))
        else:
            out[:] = True
        return out

    def undefined(self):
        """(n,) bool: deleting the subject leaves no failure of the cause, or the
        covariates (centred within strata; the partial likelihood has no intercept)
        rank deficient (a dummy covariate's only subject of one level); the engine's
        refits call these "undefined" (NaN)."""
        return self._undefined.copy()

    def unit_scores(self):
        """(n, d) ``I IF_n(i) / n = w_i (eta_i + psi_i)``, crr's per-subject score (times
        the subject's case weight; the fit's, computed once there)."""
        return self.fit.scores

    def covariance(self, robust):
        """crr's sandwich variance (``fit.var``), what crr reports, for either value of
        ``robust``: the subjects are the units and the censoring term is included."""
        return self.fit.var

    def unit_frame(self, frame):
        """The training frame (covariates, time, status, cengroup) with ``frame``'s other
        columns, indexed by the subjects' labels."""
        train = self.fit.training_frame().set_axis(self.unit_labels, axis=0)
        if frame is None or len(frame.columns) == 0:
            return train
        extra = frame.drop(columns=[c for c in frame.columns if c in train.columns])
        return pd.concat([train, extra.set_axis(self.unit_labels, axis=0)], axis=1)

    # ------------------------------------------------------------ the report
    def report_header(self):
        """The report's and the CLI's words for the model (:class:`~coxinfluence.
        influence_functions.seam.ReportHeader`): "Fine-Gray model for cause K; competing
        causes ..." with the failures of each cause present, the censored subjects, the
        censoring groups (when more than one) and crr's log pseudo-likelihood."""
        fit = self.fit
        status = np.asarray(fit.status)
        codes, counts = np.unique(status[status > 0], return_counts=True)
        others = [f"{int(c)} ({int(k)} failures)" for c, k in zip(codes, counts)
                  if c != fit.cause]
        statement = (f"Fine-Gray model for cause {fit.cause}; "
                     + (f"competing causes {', '.join(others)}" if others
                        else "no competing causes (the model is Cox's)"))
        facts = [f"{fit.n_events} failures of cause {fit.cause}",
                 f"{fit.n_competing} competing failures",
                 f"{int((status == 0).sum())} censored"]
        if len(fit.group_labels) > 1:
            sizes = np.bincount(fit.data.cengroup, minlength=len(fit.group_labels))
            facts.append("censoring groups " + ", ".join(
                f"{label_text(g)} ({int(k)} subjects)"
                for g, k in zip(fit.group_labels, sizes)))
        if fit.strata_labels is not None and len(fit.strata_labels) > 1:
            sizes = np.bincount(fit.data.stratum, minlength=len(fit.strata_labels))
            facts.append("strata " + ", ".join(
                f"{label_text(s)} ({int(k)} subjects)"
                for s, k in zip(fit.strata_labels, sizes)))
        if not fit.data.unit_weights:
            facts.append(f"case weights (total {fit.data.weight.sum():.6g})")
        ties = "Efron" if fit.data.ties == "efron" else "Breslow"
        facts.append(f"{ties} ties, log pseudo-likelihood {fit.loglik:.4f}")
        return ReportHeader(name="Fine-Gray", statement=statement, facts=", ".join(facts))

    def report_notes(self):
        """Sentences under the report's Model table (optional seam member): what the
        status codes mean."""
        fit = self.fit
        codes = np.unique(np.asarray(fit.status))
        others = [label_text(c) for c in codes if c > 0 and c != fit.cause]
        cause = label_text(fit.cause)
        return (f"Status codes: 0 = censored; {cause} = failure from cause {cause}, the "
                "cause modelled and audited; "
                + (f"{', '.join(others)} = failure from a competing cause (these subjects "
                   "stay in the risk set, weighted by the censoring Kaplan-Meier estimate)."
                   if others else "no competing cause in the data."),)

    def summary_table(self, robust):
        """crr's table (``fit.summary()``: coef, exp(coef) the subdistribution hazard
        ratio, se(coef) crr's sandwich, z, p), whatever ``robust``: crr's SE is already the
        sandwich."""
        return self.fit.summary()



def _build(fit, data, *, groups=None, robust=None):
    """A ``FineGrayFit`` behind the seam: its subjects are its units (``groups=`` and
    ``robust=`` refused: crr's variance is already the sandwich)."""
    return as_seam(FineGrayAudit(fit), data, groups, robust)


register_family(Family("fine_gray", FineGrayFit, _build,
                       description="a FineGrayFit (ci.fit_fine_gray)"))

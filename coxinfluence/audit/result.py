"""The result of an audit: :class:`InfluenceResult` and the quantities derived from it
(dfbetas, likelihood displacement, LMAX, flags, the top table). Everything is read from
the model's seam (:mod:`coxinfluence.influence_functions.seam`), never from a model family.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coxinfluence.audit.targets import Target
from coxinfluence.audit.verification import Verification
from coxinfluence.influence_functions.refits import Refits
from coxinfluence.integrations import Resolved
from coxinfluence.models.cox import standard_errors
from coxinfluence.numerics.rows import matmul_reduce_rows, matmul_rows


@dataclass(eq=False)
class InfluenceResult:
    """Per-unit leave-one-out changes of a Cox model (:func:`influence`).

    ``loo_change``: DataFrame indexed by unit (the training rows' index, or the sorted
    subject / cluster labels), one column per coefficient or target entry: the change
    ``g_{-i} - g``; exact for the units in ``verified``, an estimate of ``method``
    elsewhere. ``theta_change``: the coefficient changes behind it (same index).
    ``flags``: why a number cannot be trusted (module docstring); ``fit_ok``: whether the
    full fit converged to a maximum (else every number is measured against a maximum
    that does not exist). ``target_notes``: the warnings ``influence()`` issued about the
    target (:class:`~coxinfluence.audit.targets.TargetBeyondFollowUpWarning`: target
    times past the last event time of the data), one sentence each; empty otherwise.
    """

    loo_change: pd.DataFrame
    theta_change: pd.DataFrame
    method: str
    target: Target
    fit: object
    frame: pd.DataFrame = field(repr=False)
    source: str = "coxinfluence"
    _resolved: Resolved = field(default=None, repr=False)
    _exact: "InfluenceResult" = field(default=None, repr=False)
    objective_loo: np.ndarray = field(default=None, repr=False)    # objective at the refits
    # the objective at theta_hat, from the same kernel call as objective_loo
    objective_at_fit: float = field(default=None, repr=False)
    units: object = field(default=None, repr=False)    # the model's units (``model.units``)
    model: object = field(default=None, repr=False)    # the seam (influence_functions/seam.py)
    _rerun: object = field(default=None, repr=False)   # (method, progress) -> the same audit
    include_data_effect: bool = True
    refits: Refits = field(default=None, repr=False)   # the exact refits made (auto, exact)
    verification: Verification = field(default=None, repr=False)   # auto's stopping rule
    approx: "InfluenceResult" = field(default=None, repr=False)     # auto: the VIF result
    fit_ok: bool = True
    _flags: pd.DataFrame = field(default=None, repr=False)
    # what influence() warned about the target (TargetBeyondFollowUpWarning): one sentence
    # each, for the report
    target_notes: tuple = ()

    def __repr__(self):
        n, m = self.loo_change.shape
        extra = (f", verified={int(self.verified.sum())}" if self.method == "auto" else "")
        return (f"InfluenceResult(method={self.method!r}, target={self.target.name!r}, "
                f"{self.unit_name}={n}, columns={m}{extra}, source={self.source!r})")

    def _repr_html_(self):
        """Jupyter: what the result is, the verification sentence (what is exact, what is
        flagged) and the top table."""
        import html
        n_flag = int(self.flagged.sum())
        if self.verification is not None:
            trust = self.verification.describe(self.unit_name)
        elif self.method == "exact":
            trust = f"every {self.unit_name[:-1]} refitted exactly"
        else:
            trust = (f"first-order estimates ({self.method}); none refitted (method='auto' "
                     "verifies the top ones by exact refits)")
        if not self.fit_ok:
            trust = "the fit did not converge to a maximum: no number can be trusted"
        top = self.top(min(10, len(self.loo_change)))
        head = (f"<p><b>Influence of {html.escape(self.units_text)}</b> on "
                f"{html.escape(self.target.name)} (method {html.escape(self.method)}, "
                f"{html.escape(self.source)}): {html.escape(trust)}; {n_flag} flagged.</p>")
        return head + top.to_html(float_format=lambda v: f"{v:.4g}")

    @property
    def unit_name(self) -> str:
        """What a result row is: "patients" (rows or subjects) or "clusters"; a model
        behind the seam may name its own (``unit_name``, e.g. "objects")."""
        own = getattr(self.model, "unit_name", None)
        if own:
            return own
        groups = None if self._resolved is None else self._resolved.groups
        return "patients" if groups is None else "clusters"

    @property
    def units_text(self) -> str:
        """E.g. "103 patients (172 rows)", or "686 patients" when a patient is a row."""
        U, n = len(self.loo_change), self.fit.n
        return f"{U} {self.unit_name}" + ("" if U == n and self.model.units_are_rows
                                          else f" ({n} rows)")

    @property
    def robust(self) -> bool:
        """Whether dfbetas and the report use the robust (sandwich) SE."""
        return self._resolved is not None and self._resolved.robust

    # ------------------------------------------------------------------- trust
    @property
    def verified(self) -> pd.Series:
        """(bool, per unit) whose numbers come from an exact refit that converged to a
        maximum: all units for ``method="exact"`` (but undefined and failed ones), the
        refitted ones for ``"auto"``, none for the approximations."""
        out = np.zeros(len(self.loo_change), dtype=bool)
        if self.refits is not None:
            out[self.refits.codes[self.refits.ok]] = True
        return pd.Series(out, index=self.loo_change.index, name="verified")

    @property
    def flags(self) -> pd.DataFrame:
        """Booleans per unit, one column per reason (module docstring, :data:`FLAGS`):
        ``undefined`` (the exact change does not exist: NaN), ``unstable`` (the
        first-order estimate is predicted to be off:
        :mod:`coxinfluence.influence_functions.stability`),
        ``refit_failed``, ``unverified_top``."""
        if self._flags is None:
            self._flags = _flags(self)
        return self._flags

    @property
    def flagged(self) -> pd.Series:
        """(bool, per unit) any flag."""
        return self.flags.any(axis=1).rename("flagged")

    # ---------------------------------------------------------------- derived tables
    @property
    def target_se(self) -> pd.Series:
        """Delta-method standard error ``sqrt(diag(J V J'))`` of each target column, with
        ``V`` the covariance the user sees: model-based ``I^{-1}``, or the robust
        (grouped sandwich) :meth:`CoxFit.robust_covariance` when the model reports robust
        standard errors (lifelines ``robust=True`` or ``cluster_col``), as R does; for
        ``S(t|x)`` plus the baseline hazard's own variance, as R's ``survfit``
        (:meth:`coxinfluence.audit.targets.Survival.baseline_variance`)."""
        J = self.target.jacobian(self.fit)
        V = self.model.covariance(self.robust)
        var = np.einsum("ij,jk,ik->i", J, V, J)
        baseline = self.target.baseline_variance(self.fit)
        se = standard_errors(var if baseline is None else var + baseline)
        return pd.Series(se, index=self.loo_change.columns, name="se")

    @property
    def dfbetas(self) -> pd.DataFrame:
        """Standardised changes ``loo_change / se`` (``target_se``). Sign: ours is
        ``g_{-i} - g``; R's ``resid(fit, "dfbetas")`` is ``theta_hat - theta_hat_{-i}``,
        so for coefficients with method "reid" this is minus R's."""
        return self.loo_change / self.target_se

    @property
    def ld_approx(self) -> pd.Series:
        """The quadratic form ``Delta_i' I Delta_i`` of the first-order change (VIF for
        ``auto``; the method's own change for "vif", "reid", "newton"; NaN for "exact")."""
        if self.method == "exact":
            ld = np.full(len(self.loo_change), np.nan)
        else:
            src = self.approx if self.approx is not None else self
            D = src.theta_change.to_numpy()
            DI = matmul_rows(np.ascontiguousarray(D, dtype=np.float64),
                             np.asarray(self.model.information, dtype=np.float64),
                             np.empty(D.shape))               # one BLAS thread per block
            ld = (DI * D).sum(axis=1)
        return pd.Series(ld, index=self.loo_change.index, name="ld_approx")

    @property
    def ld_exact(self) -> pd.Series:
        """``2 [logL(theta_hat) - logL(theta_hat_{-i})]`` (full-data log likelihood at the
        refit; minus the penalised objective for penalised fits) where the unit was
        refitted to a maximum, else NaN."""
        ld = np.full(len(self.loo_change), np.nan)
        if self.objective_loo is not None:
            ld = 2.0 * (self.objective_loo - self.objective_at_fit)
        return pd.Series(ld, index=self.loo_change.index, name="ld_exact")

    @property
    def likelihood_displacement(self) -> pd.Series:
        """The displacement the result ranks by: exact (:attr:`ld_exact`) where the unit
        was refitted, NaN where its refit is undefined or failed, else the quadratic form
        (:attr:`ld_approx`)."""
        exact = self.ld_exact.to_numpy()
        refitted = np.zeros(exact.shape[0], dtype=bool)
        if self.refits is not None:
            refitted[self.refits.codes] = True
        ld = np.where(refitted, exact, self.ld_approx.to_numpy())
        return pd.Series(ld, index=self.loo_change.index, name="likelihood_displacement")

    @property
    def lmax(self) -> pd.Series:
        """LMAX (Pettitt and Bin Daud 1989; SAS PHREG ``LMAX=``, Stata ``predict, lmax``):
        ``|l_max|``, the unit's entry of the unit-length eigenvector of the largest
        eigenvalue of ``B = U I^{-1} U'``, the curvature of the likelihood displacement
        under case-weight perturbation; ``U`` (n_units, d) the per-unit score residuals
        (summed over a unit's rows: ``U_g = I IF_n(g) / n``, Reid's IF). The squares
        sum to 1; the sign of an eigenvector is arbitrary, hence the absolute value."""
        return pd.Series(lmax_from_scores(self.model.unit_scores(), self.model.information),
                         index=self.loo_change.index, name="lmax")

    @property
    def target_influence(self) -> pd.Series:
        """The magnitude of each unit's change of the target, ``max_j |loo_change_j| /
        target_se_j`` over the target's columns (the largest ``|dfbetas|``; columns whose
        SE is zero or not finite left out, all columns unscaled if every one is): what
        ``top(by="target")`` ranks by, and whose top 10 ``method="auto"`` verifies for
        every target but the coefficients (:mod:`coxinfluence.audit.verification`). With
        one target column, the order of ``|loo_change|``. NaN where the change is."""
        return pd.Series(target_magnitude(self.loo_change.to_numpy(),
                                          self.target_se.to_numpy()),
                         index=self.loo_change.index, name="target_influence")

    def summary_frame(self) -> pd.DataFrame:
        """One table per unit (as statsmodels' ``summary_frame``): the changes
        (``change <col>``), ``dfbetas <col>``, ``likelihood_displacement`` (exact where
        verified), ``ld_exact``, ``ld_approx``, ``lmax``, the flags, ``flagged`` and
        ``verified``."""
        parts = [self.loo_change.add_prefix("change "), self.dfbetas.add_prefix("dfbetas "),
                 self.likelihood_displacement, self.ld_exact, self.ld_approx, self.lmax,
                 self.flags, self.flagged, self.verified]
        return pd.concat(parts, axis=1)

    def top(self, k=5, by=None) -> pd.DataFrame:
        """The ``k`` most influential units: by likelihood displacement (``by=None``, the
        default; exact where verified), by the target's change (``by="target"``:
        :attr:`target_influence`, a column of the table then) or by ``|loo_change[by]|``
        (a column's name, which wins over "target"); with their changes, displacement,
        ``verified``, ``flagged`` and covariates, time and event (for subjects and
        clusters: rows, follow-up span and events). Undefined units (NaN) come last."""
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer; got {k!r}")
        ld = self.likelihood_displacement
        extra = []
        if by is None:
            score = ld
        elif by in self.loo_change.columns:
            score = self.loo_change[by].abs()
        elif isinstance(by, str) and by == "target":
            score = self.target_influence
            extra = [score]
        else:
            raise ValueError(f"by must be None (likelihood displacement), 'target' or a "
                             f"column of loo_change {list(self.loo_change.columns)}; "
                             f"got {by!r}")
        order = _descending(score.to_numpy())[:k]
        idx = self.loo_change.index[order]
        changes = self.loo_change.iloc[order].add_prefix("change ")
        out = pd.concat([changes, ld.iloc[order].to_frame()]
                        + [e.iloc[order].to_frame() for e in extra]
                        + [self.verified.iloc[order], self.flagged.iloc[order]], axis=1)
        rest = self.frame.iloc[order]
        rest.index = idx
        out = pd.concat([out, rest], axis=1)
        out.insert(0, "rank", np.arange(1, len(order) + 1))
        return out

    def largest_error(self):
        """Among verified units of an ``auto`` result: ``(label, ld_approx, ld_exact)`` of
        the unit whose VIF displacement is furthest from its exact one (relative), or
        None."""
        if self.approx is None:
            return None
        ok = self.verified.to_numpy() & np.isfinite(self.ld_exact.to_numpy())
        if not ok.any():
            return None
        a, e = self.ld_approx.to_numpy()[ok], self.ld_exact.to_numpy()[ok]
        j = int(np.argmax(np.abs(a - e) / np.maximum(np.abs(e), 1e-300)))
        return self.loo_change.index[ok][j], float(a[j]), float(e[j])

    def top_vif_error(self, k=10):
        """How far VIF is off where the ranking is decided: among the top ``k`` units by
        :attr:`likelihood_displacement` (fewer when fewer are defined) that were verified,
        the one whose VIF displacement is furthest from its exact one, in absolute terms.
        Returns ``(label, ld_vif, ld_exact, scale, k_used)`` with ``scale`` the
        ``k_used``-th largest displacement (the scale on which the top ``k`` is decided),
        or None when no result has both (not ``auto``, or none of the top verified).
        Unlike :meth:`largest_error` (relative, over every verified unit) it never picks a
        negligible unit whose displacements are both near zero."""
        if self.approx is None or self.refits is None:
            return None
        ld = self.likelihood_displacement.to_numpy()
        finite = np.flatnonzero(np.isfinite(ld))
        if finite.size == 0:
            return None
        order = finite[np.argsort(-ld[finite], kind="stable")][:k]
        scale = float(ld[order[-1]])
        exact, approx = self.ld_exact.to_numpy(), self.ld_approx.to_numpy()
        ok = order[self.verified.to_numpy()[order] & np.isfinite(exact[order])
                   & np.isfinite(approx[order])]
        if ok.size == 0:
            return None
        j = ok[int(np.argmax(np.abs(approx[ok] - exact[ok])))]
        return (self.loo_change.index[j], float(approx[j]), float(exact[j]), scale,
                int(order.size))

    def correlation(self, other: "InfluenceResult") -> pd.Series:
        """Pearson correlation, per column, of this result's changes with ``other``'s."""
        a, b = self.loo_change, other.loo_change
        ok = np.isfinite(a.to_numpy()).all(axis=1) & np.isfinite(b.to_numpy()).all(axis=1)
        return pd.Series([np.corrcoef(a.iloc[ok, j], b.iloc[ok, j])[0, 1]
                          for j in range(a.shape[1])], index=a.columns, name="correlation")

    def exact(self, progress=None) -> "InfluenceResult":
        """The same target by exact refits of every unit (computed once, then cached)."""
        if self.method == "exact":
            return self
        if self._exact is None:
            self._exact = self._rerun("exact", progress=progress)
        return self._exact

    # ------------------------------------------------------------------------ plots
    def plot_index(self, columns=None, label_top=3, max_tick_labels=30):
        """Index plot: the change of each column against the unit's label
        (:func:`coxinfluence.plotting.index_plot`)."""
        from coxinfluence.plotting import index_plot
        return index_plot(self, columns=columns, label_top=label_top,
                          max_tick_labels=max_tick_labels)

    def plot_vs_exact(self, exact=None, columns=None):
        """Scatter of this method's changes against exact refits, with the correlation."""
        from coxinfluence.plotting import scatter_vs
        return scatter_vs(self, exact if exact is not None else self.exact(), columns=columns)


def lmax_from_scores(U, information):
    """``|l_max|`` (:attr:`InfluenceResult.lmax`) from per-unit score residuals ``U``
    (n_units, d): with ``I = L L'``, the nonzero eigenpairs of ``B = U I^{-1} U'`` are
    ``(lambda, U L^{-T} w / sqrt(lambda))`` for the eigenpairs ``(lambda, w)`` of the d x d
    matrix ``L^{-1} U'U L^{-T}``; the Gram ``U'U`` by one-thread products over blocks of
    units (no tall QR, whose threaded products wait for a core on a loaded machine). An
    information that is not positive definite (a fit without maximum) takes the thin QR
    ``U = Q R``: ``B = Q (R I^{-1} R') Q'``, the top eigenvector ``Q e``."""
    U = np.ascontiguousarray(U, dtype=np.float64)
    information = np.asarray(information, dtype=np.float64)
    try:
        L = np.linalg.cholesky(information)
    except np.linalg.LinAlgError:
        Q, R = np.linalg.qr(U)
        M = R @ np.linalg.solve(information, R.T)
        return np.abs(Q @ np.linalg.eigh(0.5 * (M + M.T))[1][:, -1])
    G = matmul_reduce_rows(U, U)
    Li = np.linalg.inv(L)
    vals, vecs = np.linalg.eigh(Li @ (0.5 * (G + G.T)) @ Li.T)
    if not vals[-1] > 0:                       # every score zero: no direction is the top
        return np.zeros(U.shape[0])
    v = Li.T @ vecs[:, -1] / np.sqrt(vals[-1])
    return np.abs(matmul_rows(U, v[:, None], np.empty((U.shape[0], 1)))[:, 0])


def target_magnitude(change, se):
    """(k,) ``max_j |change_j| / se_j`` of target changes (k, m) (:attr:`InfluenceResult.
    target_influence`): columns whose ``se`` is zero or not finite left out, all columns
    unscaled if every one is; NaN where a change is."""
    change = np.abs(np.asarray(change, dtype=np.float64))
    se = np.asarray(se, dtype=np.float64)
    use = np.isfinite(se) & (se > 0)
    if not use.any():
        return change.max(axis=1)
    return (change[:, use] / se[use]).max(axis=1)


def _descending(score):
    """Indices by decreasing score, NaN last, ties in index order."""
    key = np.where(np.isfinite(score), -score, np.inf)
    return np.argsort(key, kind="stable")


def _flags(result) -> pd.DataFrame:
    """The flags of ``result`` (:attr:`InfluenceResult.flags`), from its model's seam."""
    model = result.model
    index = result.loo_change.index
    if result.approx is not None and result.approx is not result:
        base = result.approx.flags          # auto: the VIF result's, computed once
        undefined = base["undefined"].to_numpy().copy()
        unstable = base["unstable"].to_numpy()
    elif not result.fit_ok:
        # no maximum: every first-order number is unstable; only the structure is known
        undefined = model.undefined().copy()
        unstable = np.ones(len(index), dtype=bool)
    else:
        vif_change = (result.theta_change.to_numpy() if result.method == "vif"
                      else model.change("vif"))
        undefined = model.undefined().copy()
        unstable = np.asarray(model.unstable(vif_change), dtype=bool)
    failed = np.zeros(len(index), dtype=bool)
    if result.refits is not None:
        status = result.refits.status
        undefined[result.refits.codes[status == "undefined"]] = True
        failed[result.refits.codes[status == "refit_failed"]] = True
    top = (result.verification.unverified_top if result.verification is not None
           else np.zeros(len(index), dtype=bool))
    flags = pd.DataFrame({"undefined": undefined, "unstable": unstable,
                          "refit_failed": failed, "unverified_top": top}, index=index)
    # a model's own flags (optional seam member: name -> (U,) bool), e.g. the elastic
    # net's selection_changes
    extra = getattr(model, "extra_flags", None)
    for name, values in ({} if extra is None else extra()).items():
        flags[name] = np.asarray(values, dtype=bool)
    return flags

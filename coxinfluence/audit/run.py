"""One entry point for auditing a fitted Cox model: ``ci.influence(model, data)``.

For every training patient i it estimates the leave-one-out change

    Delta_i = theta_hat_{-i} - theta_hat                    (coefficients), or
    g_{-i} - g = J_g Delta_i [+ data effect]                 (a target g, :mod:`.targets`)

with one of the methods (docs/conventions.md)

    "auto"   VIF for every unit, exact refits of the units the audit is read for: the
             top ones by displacement until the top 10 cannot change, and every flagged
             unit (:mod:`coxinfluence.audit.verification`); ``verified`` says which are exact
    "vif"    Delta_i = -VIF_n(i) / n           closed-form VIF (deletion of row i)
    "reid"   Delta_i = -IF_n(i) / n            Reid's IF; equals -R's resid(fit, "dfbeta")
    "newton" Delta_i = -H_{-i}^{-1} grad L_{-i}(theta_hat)   one-step Newton
    "exact"  Delta_i = theta_hat_{-i} - theta_hat            refit without row i

Beside the changes: standardised changes (dfbetas), ``Delta_i / se`` with
``se = sqrt(diag(J I^{-1} J'))`` (for coefficients with ``method="reid"``: minus R's
``resid(fit, "dfbetas")``, since R reports ``theta_hat - theta_hat_{-i}``), and the
likelihood displacement

    LD_i = 2 [logL(theta_hat) - logL(theta_hat_{-i})]   (exact: full-data logL at the refit)
    LD_i ~ Delta_i' I Delta_i                            (approximate methods; I = information)

(for a penalised lifelines model, logL is minus the penalised objective J and I its
Hessian: ``CoxFit.objective``, :mod:`coxinfluence.models.penalized_cox`), LMAX, and
``flags`` (:mod:`coxinfluence.audit.flags`): units whose exact change does not exist
(``undefined``), where the first-order estimate is predicted to be off (``unstable``),
whose refit failed (``refit_failed``), or that may belong in the top 10 but were not
refitted (``unverified_top``).
"""
from __future__ import annotations

import copy
import dataclasses
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coxinfluence.audit.targets import Target, resolve_target, target_change, target_exact
from coxinfluence.audit.verification import Verification, verify
from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.refits import Refits, exact_refits, warn_undefined
from coxinfluence.integrations import Resolved, resolve
from coxinfluence.models.cox import check_fit, standard_errors

__all__ = ["influence", "InfluenceResult", "METHODS", "FLAGS", "TopNotVerifiedWarning"]

METHODS = ("auto", "vif", "reid", "newton", "exact")
FLAGS = ("undefined", "unstable", "refit_failed", "unverified_top")


def theta_change(fit, method, *, groups=None, progress=None, executor=None):
    """(n_units, d) estimates of ``theta_hat_{-g} - theta_hat`` (unit order of
    :func:`coxinfluence.data.units.resolve_units`) and, for ``method="exact"``, the refitted
    coefficients (else None)."""
    from coxinfluence.influence_functions.refits import exact_loo, newton_loo
    from coxinfluence.influence_functions.reid import reid_influence
    from coxinfluence.influence_functions.vif import vif
    if method not in METHODS[1:]:
        raise ValueError(f"method must be one of {METHODS[1:]}; got {method!r}")
    units = resolve_units(fit, groups)
    if fit.penalty is not None:
        if not units.is_rows:
            raise NotImplementedError("subjects or clusters of a penalised (ridge) model are "
                                      "not supported: the penalty's change per unit is not "
                                      "implemented")
        from coxinfluence.influence_functions.penalized import penalized_theta_change
        return penalized_theta_change(fit, method)
    n = units.n_units
    if method == "vif":
        return -np.asarray(vif(fit, groups=groups), dtype=np.float64) / n, None
    if method == "reid":
        return -np.asarray(reid_influence(fit, groups=groups), dtype=np.float64) / n, None
    if method == "newton":
        return np.asarray(newton_loo(fit, groups=groups), dtype=np.float64) - fit.coef, None
    loo = np.asarray(exact_loo(fit, groups=groups, progress=progress, executor=executor),
                     dtype=np.float64)
    return loo - fit.coef, loo


def refit_units(fit, units, codes=None, *, progress=None, executor=None):
    """Exact refits without the units ``codes`` (default all) as a
    :class:`coxinfluence.influence_functions.refits.Refits`, for plain and ridge-penalised fits."""
    if fit.penalty is not None:
        if not units.is_rows:
            raise NotImplementedError("subjects or clusters of a penalised (ridge) model are "
                                      "not supported: the penalty's change per unit is not "
                                      "implemented")
        from coxinfluence.influence_functions.penalized import penalized_refits
        return penalized_refits(fit, np.arange(units.n_units) if codes is None else codes)
    return exact_refits(fit, units, codes, progress=progress, executor=executor)


def unit_frame(resolved, units) -> pd.DataFrame:
    """What ``top(k)`` shows beside each unit: for rows, the training frame; for subjects
    and clusters, the number of rows, the follow-up span (first entry, last exit) and the
    number of events, indexed by the unit label."""
    if units.is_rows:
        return resolved.frame
    data = units.data
    code = units.of_row
    U = units.n_units
    start = np.zeros(data.n) if data.start is None else data.start
    entry = np.full(U, np.inf)
    np.minimum.at(entry, code, start)
    exit_ = np.full(U, -np.inf)
    np.maximum.at(exit_, code, data.time)
    return pd.DataFrame({"rows": np.bincount(code, minlength=U),
                         "entry": entry, "exit": exit_,
                         "events": np.bincount(code, weights=data.event, minlength=U)},
                        index=units.labels)


@dataclass(eq=False)
class InfluenceResult:
    """Per-unit leave-one-out changes of a Cox model (:func:`influence`).

    ``loo_change``: DataFrame indexed by unit (the training rows' index, or the sorted
    subject / cluster labels), one column per coefficient or target entry: the change
    ``g_{-i} - g``; exact for the units in ``verified``, an estimate of ``method``
    elsewhere. ``theta_change``: the coefficient changes behind it (same index).
    ``flags``: why a number cannot be trusted (module docstring); ``fit_ok``: whether the
    full fit converged to a maximum (else every number is measured against a maximum
    that does not exist).
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
    units: object = field(default=None, repr=False)    # coxinfluence.data.units.Units
    include_data_effect: bool = True
    refits: Refits = field(default=None, repr=False)   # the exact refits made (auto, exact)
    verification: Verification = field(default=None, repr=False)   # auto's stopping rule
    approx: "InfluenceResult" = field(default=None, repr=False)     # auto: the VIF result
    fit_ok: bool = True
    _flags: pd.DataFrame = field(default=None, repr=False)

    def __repr__(self):
        n, m = self.loo_change.shape
        extra = (f", verified={int(self.verified.sum())}" if self.method == "auto" else "")
        return (f"InfluenceResult(method={self.method!r}, target={self.target.name!r}, "
                f"{self.unit_name}={n}, columns={m}{extra}, source={self.source!r})")

    @property
    def unit_name(self) -> str:
        """What a result row is: "patients" (rows or subjects) or "clusters"."""
        groups = None if self._resolved is None else self._resolved.groups
        return "patients" if groups is None else "clusters"

    @property
    def units_text(self) -> str:
        """E.g. "103 patients (172 rows)", or "686 patients" when a patient is a row."""
        U, n = len(self.loo_change), self.fit.n
        return f"{U} {self.unit_name}" + ("" if U == n and self.units.is_rows
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
        first-order estimate is predicted to be off: :mod:`coxinfluence.audit.flags`),
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
        V = (self.fit.robust_covariance(self._resolved.groups)
             if self._resolved is not None and self._resolved.robust else self.fit.var)
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
            ld = np.einsum("ij,jk,ik->i", D, self.fit.information, D)
        return pd.Series(ld, index=self.loo_change.index, name="ld_approx")

    @property
    def ld_exact(self) -> pd.Series:
        """``2 [logL(theta_hat) - logL(theta_hat_{-i})]`` (full-data log likelihood at the
        refit; minus the penalised objective for penalised fits) where the unit was
        refitted to a maximum, else NaN."""
        ld = np.full(len(self.loo_change), np.nan)
        if self.objective_loo is not None:
            ld = 2.0 * (self.objective_loo - self.fit.objective(self.fit.coef)[0])
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
        from coxinfluence.influence_functions.reid import reid_influence
        groups = None if self._resolved is None else self._resolved.groups
        fit = self.fit
        IF = np.asarray(reid_influence(fit, groups=groups), dtype=np.float64)
        return pd.Series(lmax_from_scores(IF @ fit.information / IF.shape[0],
                                          fit.information),
                         index=self.loo_change.index, name="lmax")

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
        """The ``k`` most influential units: by likelihood displacement (default; exact
        where verified) or by ``|loo_change[by]|``; with their changes, displacement,
        ``verified``, ``flagged`` and covariates, time and event (for subjects and
        clusters: rows, follow-up span and events). Undefined units (NaN) come last."""
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer; got {k!r}")
        ld = self.likelihood_displacement
        if by is None:
            score = ld
        elif by in self.loo_change.columns:
            score = self.loo_change[by].abs()
        else:
            raise ValueError(f"by must be None or a column of loo_change "
                             f"{list(self.loo_change.columns)}; got {by!r}")
        order = _descending(score.to_numpy())[:k]
        idx = self.loo_change.index[order]
        changes = self.loo_change.iloc[order].add_prefix("change ")
        out = pd.concat([changes, ld.iloc[order].to_frame(),
                         self.verified.iloc[order], self.flagged.iloc[order]], axis=1)
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
            self._exact = _compute(self._resolved, "exact", self.target, progress=progress,
                                   include_data_effect=True)
        return self._exact

    # ------------------------------------------------------------------------ plots
    def plot_index(self, columns=None, label_top=3):
        """Index plot: the change of each column against the patient's row number."""
        from coxinfluence.plotting import index_plot
        return index_plot(self, columns=columns, label_top=label_top)

    def plot_vs_exact(self, exact=None, columns=None):
        """Scatter of this method's changes against exact refits, with the correlation."""
        from coxinfluence.plotting import scatter_vs
        return scatter_vs(self, exact if exact is not None else self.exact(), columns=columns)


def lmax_from_scores(U, information):
    """``|l_max|`` (:attr:`InfluenceResult.lmax`) from per-unit score residuals ``U``
    (n_units, d): with ``U = Q R`` (thin QR), ``B = Q (R I^{-1} R') Q'``, so the top
    eigenvector of B is ``Q e``, ``e`` that of the d x d matrix ``R I^{-1} R'``."""
    Q, R = np.linalg.qr(U)
    M = R @ np.linalg.solve(information, R.T)
    vals, vecs = np.linalg.eigh(0.5 * (M + M.T))
    return np.abs(Q @ vecs[:, -1])


def _descending(score):
    """Indices by decreasing score, NaN last, ties in index order."""
    key = np.where(np.isfinite(score), -score, np.inf)
    return np.argsort(key, kind="stable")


def _flags(result) -> pd.DataFrame:
    """The flags of ``result`` (:attr:`InfluenceResult.flags`)."""
    from coxinfluence.audit.flags import flag_frame
    fit, units = result.fit, result.units
    index = result.loo_change.index
    if result.approx is not None and result.approx is not result:
        base = result.approx.flags          # auto: the VIF result's, computed once
        undefined = base["undefined"].to_numpy().copy()
        unstable = base["unstable"].to_numpy()
    elif not result.fit_ok:
        # no maximum: every first-order number is unstable; only the structure is known
        from coxinfluence.audit.flags import undefined_units
        undefined = np.asarray(undefined_units(fit, units), dtype=bool).copy()
        unstable = np.ones(len(index), dtype=bool)
    elif fit.penalty is None:
        vif_change = (result.theta_change.to_numpy() if result.method == "vif"
                      else theta_change(fit, "vif", groups=_groups(result))[0])
        base = flag_frame(fit, units, vif_change)
        undefined = base["undefined"].to_numpy().copy()
        unstable = base["unstable"].to_numpy()
    else:       # a ridge objective has a maximum without every unit; no unstable rule
        undefined = np.zeros(len(index), dtype=bool)
        unstable = np.zeros(len(index), dtype=bool)
    failed = np.zeros(len(index), dtype=bool)
    if result.refits is not None:
        status = result.refits.status
        undefined[result.refits.codes[status == "undefined"]] = True
        failed[result.refits.codes[status == "refit_failed"]] = True
    top = (result.verification.unverified_top if result.verification is not None
           else np.zeros(len(index), dtype=bool))
    return pd.DataFrame({"undefined": undefined, "unstable": unstable,
                         "refit_failed": failed, "unverified_top": top}, index=index)


def _groups(result):
    return None if result._resolved is None else result._resolved.groups


def _compute(resolved, method, target, *, progress=None, executor=None,
             include_data_effect=True):
    fit, groups = resolved.fit, resolved.groups
    units = resolve_units(fit, groups)
    frame = unit_frame(resolved, units)
    fit_ok = fit.converged
    if method == "auto":
        return _compute_auto(resolved, target, units, frame, progress=progress,
                             executor=executor, include_data_effect=include_data_effect)
    if method == "exact":
        check_fit(fit, "influence(method='exact')", refuse=True)
        refits = refit_units(fit, units, progress=progress, executor=executor)
        warn_undefined(units, refits.codes[~refits.ok], "exact leave-one-out",
                        failed=refits.codes[refits.status == "refit_failed"])
        loo = refits.theta
        dtheta = loo - fit.coef
        change = target_exact(fit, loo, target, units)
        objective_loo = np.where(refits.ok, fit.objective(loo), np.nan)
    else:
        refits = objective_loo = None
        dtheta, _ = theta_change(fit, method, groups=groups, progress=progress,
                                 executor=executor)
        change = target_change(fit, dtheta, target, units,
                               include_data_effect=include_data_effect)
    return _result(resolved, method, target, units, frame, change, dtheta,
                   objective_loo=objective_loo, refits=refits, fit_ok=fit_ok,
                   include_data_effect=include_data_effect)


def _result(resolved, method, target, units, frame, change, dtheta, **kw):
    fit = resolved.fit
    return InfluenceResult(
        loo_change=pd.DataFrame(change, index=frame.index, columns=target.columns(fit)),
        theta_change=pd.DataFrame(dtheta, index=frame.index, columns=fit.columns),
        method=method, target=target, fit=fit, frame=frame, source=resolved.source,
        _resolved=resolved, units=units, **kw)


def _compute_auto(resolved, target, units, frame, *, progress, executor,
                  include_data_effect):
    """``method="auto"``: the VIF result, with exact refits (:func:`verify`) replacing
    it where the audit is read."""
    fit = resolved.fit
    approx = _compute(resolved, "vif", target, include_data_effect=include_data_effect)
    if not fit.converged:
        # no maximum to refit against: the VIF numbers, flagged by fit_ok (check_fit has
        # warned with the diverging covariates)
        return dataclasses.replace(approx, method="auto", approx=approx, fit_ok=False)
    flags = approx.flags
    ver = verify(fit, units, approx.ld_approx.to_numpy(), flags.any(axis=1).to_numpy(),
                 refit=lambda codes: refit_units(fit, units, codes, progress=progress,
                                                 executor=executor))
    if not ver.rule_met:
        warnings.warn(f"method='auto': {ver.describe(resolved_unit_name(resolved))}",
                      TopNotVerifiedWarning, stacklevel=4)
    refits = ver.refits
    codes = refits.codes
    dtheta = approx.theta_change.to_numpy().copy()
    change = approx.loo_change.to_numpy().copy()
    loo = np.full_like(dtheta, np.nan)
    loo[codes] = refits.theta
    dtheta[codes] = refits.theta - fit.coef
    if codes.size:
        exact_change = target_exact(fit, loo, target, units)
        change[codes] = exact_change[codes]
    objective_loo = np.full(units.n_units, np.nan)
    objective_loo[codes[refits.ok]] = fit.objective(refits.theta[refits.ok])
    return _result(resolved, "auto", target, units, frame, change, dtheta,
                   objective_loo=objective_loo, refits=refits, verification=ver,
                   approx=approx, include_data_effect=include_data_effect)


def resolved_unit_name(resolved):
    return "patients" if resolved.groups is None else "clusters"


class TopNotVerifiedWarning(UserWarning):
    """``method="auto"`` could not verify the top units within its refit limit."""


def influence(model, data=None, *, method="auto", target=None, include_data_effect=True,
              progress=None, executor=None, groups=None, robust=None) -> InfluenceResult:
    """Influence of every training patient on a fitted Cox model (module docstring).

    Parameters
    ----------
    model : a ``CoxFit`` (``ci.fit_cox``), a fitted lifelines ``CoxPHFitter`` (then
        ``data`` is its training DataFrame: formulas, strata, weights are read from the
        fitter) or a statsmodels ``PHRegResults``.
    data : the training DataFrame (required for lifelines; optional extra columns for
        the ``top`` table otherwise).
    method : "auto" (default): VIF for every unit and exact refits where the audit is
        read (the top units until the top 10 cannot change, and every flagged unit;
        :mod:`coxinfluence.audit.verification`), ``verified`` saying which numbers are exact;
        or "vif", "reid", "newton", "exact" for one method throughout.
    target : None / "coef" (coefficients), "hr" (hazard ratios), or a
        :class:`coxinfluence.audit.targets.Target` (``RelativeRisk(X_new)``,
        ``LinearPredictor(X_new)``, ``Survival(X_new, times)``); new patients may be raw
        frames for lifelines formula models (transformed as lifelines does).
    include_data_effect : for survival targets, add the baseline hazard's direct
        dependence on the removed patient (default True; see :mod:`.targets`).
    progress, executor : passed to the exact refits (``method="exact"`` and ``"auto"``).
    groups : the units of deletion, one label per training row (caller's order): a
        cluster (a hospital) is deleted whole. Default: the model's subjects (a
        ``CoxFit`` with ``id=``, a lifelines ``CoxTimeVaryingFitter``'s ``id_col``), or its
        clusters (a lifelines ``cluster_col``), else the rows. Results are then indexed
        by the sorted unit labels, and ``top(k)`` shows each unit's rows, follow-up span
        and events.
    robust : divide dfbetas by the robust (grouped sandwich) SE (True) or the model-based
        SE (False); default: as the model reports its SE (lifelines ``robust=True`` or
        ``cluster_col``: robust; a ``CoxFit``: model-based).

    Returns
    -------
    InfluenceResult
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    resolved = resolve(model, data)
    if groups is not None:
        resolved = dataclasses.replace(resolved, groups=groups)
    if robust is not None:
        resolved = dataclasses.replace(resolved, robust=bool(robust))
    target = copy.copy(resolve_target(target))
    if target.transform is None and resolved.transform is not None:
        target.transform = resolved.transform
    return _compute(resolved, method, target, progress=progress, executor=executor,
                    include_data_effect=include_data_effect)

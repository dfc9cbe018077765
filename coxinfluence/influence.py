"""One entry point for auditing a fitted Cox model: ``ci.influence(model, data)``.

For every training patient i it estimates the leave-one-out change

    Delta_i = theta_hat_{-i} - theta_hat                    (coefficients), or
    g_{-i} - g = J_g Delta_i [+ data effect]                 (a target g, :mod:`.targets`)

with one of the methods (docs/conventions.md)

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
Hessian: ``CoxFit.objective``, :mod:`coxinfluence.integrations._penalty`).
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .integrations import Resolved, resolve
from .targets import Target, resolve_target, target_change, target_exact
from .units import resolve_units

__all__ = ["influence", "InfluenceResult", "METHODS"]

METHODS = ("vif", "reid", "newton", "exact")


def theta_change(fit, method, *, groups=None, progress=None, executor=None):
    """(n_units, d) estimates of ``theta_hat_{-g} - theta_hat`` (unit order of
    :func:`coxinfluence.units.resolve_units`) and, for ``method="exact"``, the refitted
    coefficients (else None)."""
    from .loo import exact_loo, newton_loo
    from .reid import reid_influence
    from .vif import vif
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    units = resolve_units(fit, groups)
    if fit.penalty is not None:
        if not units.is_rows:
            raise NotImplementedError("subjects or clusters of a penalised (ridge) model are "
                                      "not supported: the penalty's change per unit is not "
                                      "implemented")
        from .integrations._penalty import penalized_theta_change
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
    """Per-patient leave-one-out changes of a Cox model (:func:`influence`).

    ``loo_change``: DataFrame indexed like the training data, one column per coefficient
    or target entry, the estimated ``theta_hat_{-i} - theta_hat`` (or target change).
    ``theta_change``: the coefficient changes behind it (same index).
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
    _objective_loo: np.ndarray = field(default=None, repr=False)   # objective at the refits
    units: object = field(default=None, repr=False)    # coxinfluence.units.Units
    include_data_effect: bool = True

    def __repr__(self):
        n, m = self.loo_change.shape
        return (f"InfluenceResult(method={self.method!r}, target={self.target.name!r}, "
                f"patients={n}, columns={m}, source={self.source!r})")

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

    # ---------------------------------------------------------------- derived tables
    @property
    def target_se(self) -> pd.Series:
        """Delta-method standard error ``sqrt(diag(J V J'))`` of each target column, with
        ``V`` the covariance the user sees: model-based ``I^{-1}``, or the robust
        (grouped sandwich) :meth:`CoxFit.robust_covariance` when the model reports robust
        standard errors (lifelines ``robust=True`` or ``cluster_col``), as R does."""
        J = self.target.jacobian(self.fit)
        V = (self.fit.robust_covariance(self._resolved.groups)
             if self._resolved is not None and self._resolved.robust else self.fit.var)
        se = np.sqrt(np.einsum("ij,jk,ik->i", J, V, J))
        return pd.Series(se, index=self.loo_change.columns, name="se")

    @property
    def dfbetas(self) -> pd.DataFrame:
        """Standardised changes ``loo_change / se`` (for coefficients with method "reid":
        minus R's ``resid(fit, "dfbetas")``, R's sign being ``theta_hat - theta_hat_{-i}``)."""
        return self.loo_change / self.target_se

    @property
    def likelihood_displacement(self) -> pd.Series:
        """``2 [logL(theta_hat) - logL(theta_hat_{-i})]``: exact for refits (full-data
        logL at the refit), else the quadratic form ``Delta_i' I Delta_i``."""
        if self._objective_loo is not None:
            ld = 2.0 * (self._objective_loo - self.fit.objective(self.fit.coef)[0])
        else:
            D = self.theta_change.to_numpy()
            ld = np.einsum("ij,jk,ik->i", D, self.fit.information, D)
        return pd.Series(ld, index=self.loo_change.index, name="likelihood_displacement")

    def top(self, k=5, by=None) -> pd.DataFrame:
        """The ``k`` most influential patients: by likelihood displacement (default) or by
        ``|loo_change[by]|``; with their changes, displacement, covariates, time and event."""
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
        order = np.argsort(-score.to_numpy(), kind="stable")[:k]
        idx = self.loo_change.index[order]
        changes = self.loo_change.iloc[order].add_prefix("change ")
        out = pd.concat([changes, ld.iloc[order].to_frame()], axis=1)
        rest = self.frame.iloc[order]
        rest.index = idx
        out = pd.concat([out, rest], axis=1)
        out.insert(0, "rank", np.arange(1, len(order) + 1))
        return out

    def correlation(self, other: "InfluenceResult") -> pd.Series:
        """Pearson correlation, per column, of this result's changes with ``other``'s."""
        a, b = self.loo_change, other.loo_change
        ok = np.isfinite(a.to_numpy()).all(axis=1) & np.isfinite(b.to_numpy()).all(axis=1)
        return pd.Series([np.corrcoef(a.iloc[ok, j], b.iloc[ok, j])[0, 1]
                          for j in range(a.shape[1])], index=a.columns, name="correlation")

    def exact(self, progress=None) -> "InfluenceResult":
        """The same target by exact refits (computed once, then cached)."""
        if self.method == "exact":
            return self
        if self._exact is None:
            self._exact = _compute(self._resolved, "exact", self.target, progress=progress,
                                   include_data_effect=True)
        return self._exact

    # ------------------------------------------------------------------------ plots
    def plot_index(self, columns=None, label_top=3):
        """Index plot: the change of each column against the patient's row number."""
        from .plotting import index_plot
        return index_plot(self, columns=columns, label_top=label_top)

    def plot_vs_exact(self, exact=None, columns=None):
        """Scatter of this method's changes against exact refits, with the correlation."""
        from .plotting import scatter_vs
        return scatter_vs(self, exact if exact is not None else self.exact(), columns=columns)


def _compute(resolved, method, target, *, progress=None, executor=None,
             include_data_effect=True):
    fit, groups = resolved.fit, resolved.groups
    units = resolve_units(fit, groups)
    dtheta, loo = theta_change(fit, method, groups=groups, progress=progress,
                               executor=executor)
    frame = unit_frame(resolved, units)
    index = frame.index
    cols = target.columns(fit)
    objective_loo = None
    if method == "exact":
        change = target_exact(fit, loo, target, units)
        objective_loo = fit.objective(loo)
    else:
        change = target_change(fit, dtheta, target, units,
                               include_data_effect=include_data_effect)
    return InfluenceResult(
        loo_change=pd.DataFrame(change, index=index, columns=cols),
        theta_change=pd.DataFrame(dtheta, index=index, columns=fit.columns),
        method=method, target=target, fit=fit, frame=frame, source=resolved.source,
        _resolved=resolved, _objective_loo=objective_loo, units=units,
        include_data_effect=include_data_effect)


def influence(model, data=None, *, method="vif", target=None, include_data_effect=True,
              progress=None, executor=None, groups=None, robust=None) -> InfluenceResult:
    """Influence of every training patient on a fitted Cox model (module docstring).

    Parameters
    ----------
    model : a ``CoxFit`` (``ci.fit_cox``), a fitted lifelines ``CoxPHFitter`` (then
        ``data`` is its training DataFrame: formulas, strata, weights are read from the
        fitter) or a statsmodels ``PHRegResults``.
    data : the training DataFrame (required for lifelines; optional extra columns for
        the ``top`` table otherwise).
    method : "vif" (default), "reid", "newton" or "exact".
    target : None / "coef" (coefficients), "hr" (hazard ratios), or a
        :class:`coxinfluence.targets.Target` (``RelativeRisk(X_new)``,
        ``LinearPredictor(X_new)``, ``Survival(X_new, times)``); new patients may be raw
        frames for lifelines formula models (transformed as lifelines does).
    include_data_effect : for survival targets, add the baseline hazard's direct
        dependence on the removed patient (default True; see :mod:`.targets`).
    progress, executor : passed to ``exact_loo`` for ``method="exact"``.
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

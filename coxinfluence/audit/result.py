"""The result of an audit: :class:`InfluenceResult` and the quantities derived from it
(dfbetas, likelihood displacement, LMAX, flags, the top table). Everything is read from
the model's seam (``coxinfluence.influence_functions.seam``), never from a model family.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coxinfluence.audit.targets import Target
from coxinfluence.audit.verification import Verification
from coxinfluence.influence_functions.engine_refits import Refits
from coxinfluence.influence_functions.registry import Resolved
from coxinfluence.models.base import standard_errors
from coxinfluence.numerics.rows import matmul_reduce_rows, matmul_rows


@dataclass(eq=False)
class InfluenceResult:
    """Per-unit leave-one-out changes of a fitted model: the result of an audit.

    Returned by :func:`coxinfluence.influence` (not constructed by users), for any model
    it audits (Cox, AFT, Fine-Gray, lifelines, scikit-survival, ...). One row per unit of
    deletion, indexed by the training rows' index or the sorted subject / cluster labels.
    ``loo_change`` is the change ``g_{-i} - g`` of the target; it is exact for the units
    in :attr:`verified` and an estimate of ``method`` elsewhere. The derived tables
    (:attr:`dfbetas`, :attr:`likelihood_displacement`, :attr:`lmax`, :attr:`flags`,
    :meth:`top`, :meth:`summary_frame`) are computed from it and from the model's seam
    (``coxinfluence.influence_functions.seam``), never from a model family.

    Parameters
    ----------
    loo_change : DataFrame
        Indexed by unit, one column per coefficient or target entry: the change
        ``g_{-i} - g``; exact for the units in ``verified``, an estimate of ``method``
        elsewhere.
    theta_change : DataFrame
        The coefficient changes ``theta_hat_{-i} - theta_hat`` behind it (same index, one
        column per parameter).
    method : str
        ``"auto"``, ``"vif"``, ``"reid"``, ``"newton"`` or ``"exact"``.
    target : Target
        The target the changes are of (:mod:`coxinfluence.targets`).
    fit : object
        The fit audited (``CoxFit``, ``AFTFit``, ``FineGrayFit``, ...).
    frame : DataFrame
        The units' covariates, time and event (and the caller's extra columns), for the
        :meth:`top` table.
    source : str, default "coxinfluence"
        Where the model came from (``"lifelines"``, ``"scikit-survival"``, ...).
    _resolved : object, optional
        Internal: the resolved model (its training frame, ``groups``, whether SEs are
        robust).
    _exact : InfluenceResult, optional
        Internal: the cache of :meth:`exact`.
    objective_loo : numpy.ndarray, optional
        The full-data objective (minus the log likelihood) at each unit's refit (NaN where
        not refitted); None without refits.
    objective_at_fit : float, optional
        The objective at ``theta_hat``, from the same kernel call as ``objective_loo``.
    units : object, optional
        The model's units of deletion (``coxinfluence.data.units``).
    model : object, optional
        The model behind the seam (``coxinfluence.influence_functions.seam``).
    _rerun : callable, optional
        Internal: ``(method, progress) ->`` the same audit by another method.
    include_data_effect : bool, default True
        Whether the target's changes include the data effect (``influence()``'s
        argument).
    refits : Refits, optional
        The exact refits made (``"auto"``, ``"exact"``): their units, coefficients and
        status.
    verification : Verification, optional
        ``"auto"``'s stopping rule: what it refitted and whether the top is certain
        (``coxinfluence.audit.verification``).
    approx : InfluenceResult, optional
        ``"auto"``: the VIF result the refits replace where the audit is read.
    fit_ok : bool, default True
        Whether the full fit converged to a maximum (else every number is measured
        against a maximum that does not exist).
    _flags : DataFrame, optional
        Internal: the cache of :attr:`flags`.
    target_notes : tuple of str, default ()
        The warnings ``influence()`` issued about the target
        (:class:`~coxinfluence.targets.TargetBeyondFollowUpWarning`: target times
        past the last event time of the data), one sentence each; empty otherwise.

    See Also
    --------
    coxinfluence.influence : Makes it.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> res = ci.influence(fit)
    >>> res
    InfluenceResult(method='auto', target='coef', patients=432, columns=3, verified=18,
                    source='coxinfluence')
    >>> res.loo_change.head(3).round(4)
          fin     age    prio
    0  0.0145 -0.0018  0.0004
    1  0.0121  0.0015 -0.0025
    2  0.0084  0.0006 -0.0036
    >>> int(res.verified.sum()), int(res.flagged.sum())
    (18, 3)
    >>> res.likelihood_displacement.nlargest(3).round(4)
    100    0.2249
    118    0.1525
    270    0.1381
    Name: likelihood_displacement, dtype: float64
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
        """What a result row is: "patients" (rows or subjects) or "clusters".

        A model behind the seam may name its own (``unit_name``, e.g. "objects").

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> res.unit_name
        'patients'
        >>> ci.influence(fit, method="reid", groups=rossi.index % 40).unit_name
        'clusters'
        """
        return unit_name_of(self.model, self._resolved)

    @property
    def units_text(self) -> str:
        """E.g. "103 patients (172 rows)", or "686 patients" when a patient is a row.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> ci.influence(fit, method="reid", groups=rossi.index % 40).units_text
        '40 clusters (432 rows)'
        """
        U, n = len(self.loo_change), self.model.n_rows
        return f"{U} {self.unit_name}" + ("" if U == n and self.model.units_are_rows
                                          else f" ({n} rows)")

    @property
    def robust(self) -> bool:
        """Whether the SE the model reports, :attr:`target_se` and the report's table, is
        the robust (sandwich) one. dfbetas divide by the model-based SE whatever it is
        (:attr:`dfbetas`; :attr:`dfbetas_robust` by the robust one).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> ci.influence(fit, method="vif").robust
        False
        >>> ci.influence(fit, method="vif", robust=True).robust
        True
        """
        return self._resolved is not None and self._resolved.robust

    # ------------------------------------------------------------------- trust
    @property
    def verified(self) -> pd.Series:
        """(bool, per unit) whose numbers come from an exact refit that converged to a
        maximum: all units for ``method="exact"`` (but undefined and failed ones), the
        refitted ones for ``"auto"``, none for the approximations.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> bool(res.verified.loc[res.top(10).index].all())
        True
        >>> bool(ci.influence(fit, method="vif").verified.any())
        False
        """
        out = np.zeros(len(self.loo_change), dtype=bool)
        if self.refits is not None:
            out[self.refits.codes[self.refits.ok]] = True
        return pd.Series(out, index=self.loo_change.index, name="verified")

    @property
    def flags(self) -> pd.DataFrame:
        """Why a unit's number cannot be trusted: booleans per unit, one column per reason.

        ``undefined`` (the exact change does not exist: deleting the unit leaves the model
        undefined, e.g. a covariate constant; NaN), ``unstable`` (the first-order
        estimate is predicted to be off:
        ``coxinfluence.influence_functions.stability``), ``refit_failed`` (its exact
        refit failed), ``unverified_top`` (``"auto"`` could not refit it, and it may
        belong in the top 10); a model may add its own (e.g. the elastic net's
        ``selection_changes``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> res.flags.columns.tolist()
        ['undefined', 'unstable', 'refit_failed', 'unverified_top']
        >>> res.flags.sum().tolist()
        [0, 3, 0, 0]
        """
        if self._flags is None:
            self._flags = _flags(self)
        return self._flags

    @property
    def flagged(self) -> pd.Series:
        """(bool, per unit) any flag.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> int(res.flagged.sum())
        3
        >>> bool(res.verified[res.flagged].all())
        True
        """
        return self.flags.any(axis=1).rename("flagged")

    # ---------------------------------------------------------------- derived tables
    def _se(self, robust) -> pd.Series:
        """``sqrt(diag(J V J'))`` (+ the baseline's variance) with ``V`` the model-based
        (``robust=False``) or the robust covariance of the audit's units."""
        J = self.target.jacobian(self.fit)
        V = self.model.covariance(robust)
        var = np.einsum("ij,jk,ik->i", J, V, J)
        baseline = self.target.baseline_variance(self.fit)
        se = standard_errors(var if baseline is None else var + baseline)
        return pd.Series(se, index=self.loo_change.columns, name="se")

    @property
    def target_se(self) -> pd.Series:
        r"""Delta-method standard error :math:`\sqrt{\operatorname{diag}(J V J^\top)}` of
        each target column.

        ``V`` is the covariance the model reports (:attr:`robust`): model-based
        ``I^{-1}``, or the robust (grouped sandwich) :meth:`CoxFit.robust_covariance`
        when the model reports robust standard errors (lifelines ``robust=True`` or
        ``cluster_col``, ``influence(robust=True)``, a ``CoxFit`` with non-integer case
        weights, as R's ``coxph``); for ``S(t|x)`` plus the baseline hazard's own variance,
        as R's ``survfit`` (:meth:`coxinfluence.targets.Target.baseline_variance`).
        :attr:`dfbetas` divide by :attr:`dfbetas_se` instead.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit, method="vif")
        >>> bool(np.allclose(res.target_se, fit.se))
        True
        """
        return self._se(self.robust)

    @property
    def dfbetas_se(self) -> pd.Series:
        r"""The standard error :attr:`dfbetas` divide by: the model-based one.

        :math:`\sqrt{\operatorname{diag}(J I^{-1} J^\top)}` (plus the baseline's variance
        for ``S(t|x)``), :math:`I` the information, whether or not the model reports robust
        standard errors: R's ``residuals(fit, "dfbetas")`` divides by
        ``sqrt(diag(fit$naive.var))`` (coxph and survreg alike). Equal to
        :attr:`target_se` when :attr:`robust` is False.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit, method="vif", groups=rossi.index % 40, robust=True)
        >>> bool(np.allclose(res.dfbetas_se, fit.naive_se))
        True
        """
        return self._se(False)

    @property
    def dfbetas(self) -> pd.DataFrame:
        """Standardised changes ``loo_change / se``, ``se`` the model-based SE, as R's.

        ``se`` is :attr:`dfbetas_se`, the model-based standard error, also for a robust
        or clustered model (R's ``residuals(fit, type = "dfbetas")`` divides by
        ``sqrt(diag(fit$naive.var))``); :attr:`dfbetas_robust` divides by the robust one.
        Sign: ours is ``g_{-i} - g``; R's ``resid(fit, "dfbetas")`` is ``theta_hat -
        theta_hat_{-i}``, so for coefficients with method "reid" this is minus R's
        (``collapse = cluster`` for clusters).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit, method="reid", groups=rossi.index % 40, robust=True)
        >>> bool(np.allclose(res.dfbetas, res.loo_change / fit.naive_se))
        True
        """
        return self.loo_change / self.dfbetas_se

    @property
    def dfbetas_robust(self) -> pd.DataFrame:
        """Changes scaled by the robust SE: ``loo_change / sqrt(diag(J D'D J'))``.

        ``D'D`` is the grouped sandwich of the audit's units (R's ``coxph(..., cluster =
        )$var``, :meth:`CoxFit.robust_covariance`): the dfbeta over the robust standard
        error, which R does not report; :attr:`dfbetas` (the model-based SE) is R's.
        A model without a robust covariance (the elastic net) raises ``ValueError``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> groups = rossi.index % 40
        >>> res = ci.influence(fit, method="reid", groups=groups, robust=True)
        >>> robust_se = np.sqrt(np.diag(fit.robust_covariance(groups)))
        >>> bool(np.allclose(res.dfbetas_robust, res.loo_change / robust_se))
        True
        """
        return self.loo_change / self._se(True)

    @property
    def ld_approx(self) -> pd.Series:
        r"""The approximate likelihood displacement :math:`\Delta_g^\top I \Delta_g`.

        The quadratic form of the first-order change (VIF for ``auto``; the method's own
        change for "vif", "reid", "newton"; NaN for "exact"), :math:`I` the information.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> res.ld_approx.nlargest(2).round(4)
        100    0.2102
        118    0.1440
        Name: ld_approx, dtype: float64
        """
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
        r"""The exact likelihood displacement
        :math:`2 [\log L(\hat\theta) - \log L(\hat\theta_{-g})]`.

        The full-data log likelihood at the refit (minus the penalised objective for
        penalised fits), where the unit was refitted to a maximum; else NaN.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> res.ld_exact.nlargest(2).round(4)
        100    0.2249
        118    0.1525
        Name: ld_exact, dtype: float64
        """
        ld = np.full(len(self.loo_change), np.nan)
        if self.objective_loo is not None:
            ld = 2.0 * (self.objective_loo - self.objective_at_fit)
        return pd.Series(ld, index=self.loo_change.index, name="ld_exact")

    @property
    def likelihood_displacement(self) -> pd.Series:
        """The likelihood displacement the result ranks by.

        Exact (:attr:`ld_exact`) where the unit was refitted, NaN where its refit is
        undefined or failed, else the quadratic form (:attr:`ld_approx`).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> ld = res.likelihood_displacement
        >>> bool(np.allclose(ld[res.verified], res.ld_exact[res.verified]))
        True
        >>> bool(np.allclose(ld[~res.verified], res.ld_approx[~res.verified]))
        True
        """
        exact = self.ld_exact.to_numpy()
        refitted = np.zeros(exact.shape[0], dtype=bool)
        if self.refits is not None:
            refitted[self.refits.codes] = True
        ld = np.where(refitted, exact, self.ld_approx.to_numpy())
        return pd.Series(ld, index=self.loo_change.index, name="likelihood_displacement")

    @property
    def lmax(self) -> pd.Series:
        """LMAX, the direction of largest curvature of the likelihood displacement.

        Pettitt and Bin Daud (1989); SAS PHREG ``LMAX=``, Stata ``predict, lmax``:
        ``|l_max|``, the unit's entry of the unit-length eigenvector of the largest
        eigenvalue of ``B = U I^{-1} U'``, the curvature of the likelihood displacement
        under case-weight perturbation; ``U`` (n_units, d) the per-unit score residuals
        (summed over a unit's rows: ``U_g = I IF_n(g) / n``, Reid's IF). The squares
        sum to 1; the sign of an eigenvector is arbitrary, hence the absolute value.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> res.lmax.nlargest(2).round(4)
        100    0.3862
        270    0.3050
        Name: lmax, dtype: float64
        >>> round(float((res.lmax ** 2).sum()), 10)
        1.0
        """
        return pd.Series(lmax_from_scores(self.model.unit_scores(), self.model.information),
                         index=self.loo_change.index, name="lmax")

    @property
    def target_influence(self) -> pd.Series:
        """The magnitude of each unit's change of the target.

        ``max_j |loo_change_j| / dfbetas_se_j`` over the target's columns (the largest
        ``|dfbetas|``; columns whose SE is zero or not finite left out, all columns
        unscaled if every one is): what ``top(by="target")`` ranks by, and whose top 10
        ``method="auto"`` verifies for every target but the coefficients
        (``coxinfluence.audit.verification``). With one target column, the order of
        ``|loo_change|``. NaN where the change is.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> res.target_influence.nlargest(2).round(4)
        100    0.4703
        118    0.3653
        Name: target_influence, dtype: float64
        """
        return pd.Series(target_magnitude(self.loo_change.to_numpy(),
                                          self.dfbetas_se.to_numpy()),
                         index=self.loo_change.index, name="target_influence")

    def summary_frame(self) -> pd.DataFrame:
        """Every per-unit quantity in one table, as statsmodels' ``summary_frame``.

        Returns
        -------
        DataFrame
            One row per unit: the changes (``change <col>``), ``dfbetas <col>``,
            ``likelihood_displacement`` (exact where verified), ``ld_exact``,
            ``ld_approx``, ``lmax``, the flags, ``flagged`` and ``verified``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> table = ci.influence(fit, method="vif").summary_frame()
        >>> table.columns.tolist()[:7]
        ['change fin', 'change age', 'change prio', 'dfbetas fin', 'dfbetas age',
         'dfbetas prio', 'likelihood_displacement']
        """
        parts = [self.loo_change.add_prefix("change "), self.dfbetas.add_prefix("dfbetas "),
                 self.likelihood_displacement, self.ld_exact, self.ld_approx, self.lmax,
                 self.flags, self.flagged, self.verified]
        return pd.concat(parts, axis=1)

    def top(self, k=5, by=None) -> pd.DataFrame:
        """The ``k`` most influential units.

        Parameters
        ----------
        k : int, default 5
            How many units (positive).
        by : None or str, optional
            What to rank by: None (the default), the likelihood displacement (exact where
            verified); ``"target"``, the target's change (:attr:`target_influence`, a
            column of the table then); or a column of ``loo_change``, ``|loo_change[by]|``
            (a column's name wins over ``"target"``).

        Returns
        -------
        DataFrame
            One row per unit, largest first, undefined units (NaN) last: ``rank``, the
            changes (``change <col>``), ``likelihood_displacement``, ``verified``,
            ``flagged`` and the unit's covariates, time and event (for subjects and
            clusters: rows, follow-up span and events).

        Raises
        ------
        ValueError
            If ``k`` is not a positive integer, or ``by`` is none of the above.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> top = res.top(3)
        >>> top[["rank", "change prio", "likelihood_displacement", "verified"]].round(4)
             rank  change prio  likelihood_displacement  verified
        100     1       0.0009                   0.2249      True
        118     2       0.0020                   0.1525      True
        270     3       0.0007                   0.1381      True
        """
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
        """The verified unit whose VIF displacement is furthest from its exact one.

        Among the verified units of an ``auto`` result, relative to the exact
        displacement.

        Returns
        -------
        tuple or None
            ``(label, ld_approx, ld_exact)`` of that unit; None when the result is not
            ``auto`` or no unit was verified.

        See Also
        --------
        top_vif_error : The same in absolute terms, among the top units.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> label, ld_vif, ld_exact = res.largest_error()
        >>> print(f"{label}: VIF {ld_vif:.4f}, exact {ld_exact:.4f}")
        241: VIF 0.0578, exact 0.0694
        >>> ci.influence(fit, method="vif").largest_error() is None
        True
        """
        if self.approx is None:
            return None
        ok = self.verified.to_numpy() & np.isfinite(self.ld_exact.to_numpy())
        if not ok.any():
            return None
        a, e = self.ld_approx.to_numpy()[ok], self.ld_exact.to_numpy()[ok]
        j = int(np.argmax(np.abs(a - e) / np.maximum(np.abs(e), 1e-300)))
        return self.loo_change.index[ok][j], float(a[j]), float(e[j])

    def top_vif_error(self, k=10):
        """How far the VIF is off where the ranking is decided.

        Among the top ``k`` units by :attr:`likelihood_displacement` (fewer when fewer are
        defined) that were verified, the one whose VIF displacement is furthest from its
        exact one, in absolute terms. Unlike :meth:`largest_error` (relative, over every
        verified unit) it never picks a negligible unit whose displacements are both
        near zero.

        Parameters
        ----------
        k : int, default 10
            The size of the top.

        Returns
        -------
        tuple or None
            ``(label, ld_vif, ld_exact, scale, k_used)`` with ``scale`` the
            ``k_used``-th largest displacement (the scale on which the top ``k`` is
            decided); None when no result has both (not ``auto``, or none of the top
            verified).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> label, ld_vif, ld_exact, scale, k = ci.influence(fit).top_vif_error()
        >>> print(f"{label}: VIF {ld_vif:.3f}, exact {ld_exact:.3f}, top {k} from {scale:.3f}")
        100: VIF 0.210, exact 0.225, top 10 from 0.054
        """
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
        """Pearson correlation, per column, of this result's changes with ``other``'s.

        Units whose changes are not finite in either result are left out.

        Parameters
        ----------
        other : InfluenceResult
            A result with the same columns and units (e.g. :meth:`exact`).

        Returns
        -------
        Series
            One correlation per column of ``loo_change``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi[["fin", "age", "prio"]]
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> vif = ci.influence(fit, method="vif")
        >>> vif.correlation(vif.exact()).round(4)
        fin     0.9999
        age     0.9999
        prio    0.9996
        Name: correlation, dtype: float64
        """
        a, b = self.loo_change, other.loo_change
        ok = np.isfinite(a.to_numpy()).all(axis=1) & np.isfinite(b.to_numpy()).all(axis=1)
        return pd.Series([np.corrcoef(a.iloc[ok, j], b.iloc[ok, j])[0, 1]
                          for j in range(a.shape[1])], index=a.columns, name="correlation")

    def exact(self, progress=None) -> "InfluenceResult":
        """The same audit by exact refits of every unit.

        Computed once, then cached; the result itself for ``method="exact"``.

        Parameters
        ----------
        progress : bool, optional
            Show a progress bar of the refits (default: when there are more than 2000
            units).

        Returns
        -------
        InfluenceResult
            The same target, ``method="exact"``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> vif = ci.influence(fit, method="vif")
        >>> ex = vif.exact()
        >>> ex.method, int(ex.verified.sum()), vif.exact() is ex
        ('exact', 432, True)
        """
        if self.method == "exact":
            return self
        if self._exact is None:
            self._exact = self._rerun("exact", progress=progress)
        return self._exact

    # ------------------------------------------------------------------------ plots
    def plot_index(self, columns=None, label_top=3, max_tick_labels=30):
        """Index plot: the change of each column against the unit's label.

        One panel per column (R's ``plot(resid(fit, "dfbeta")[, j])``); verified units
        (exact refits) in orange with a dot, first-order estimates in blue
        (``coxinfluence.plotting.index_plot``).

        Parameters
        ----------
        columns : list of str, optional
            The columns of ``loo_change`` to plot (default: all).
        label_top : int, default 3
            How many of the largest changes of each panel to label.
        max_tick_labels : int, default 30
            With at most this many units, one tick per unit labelled with it.

        Returns
        -------
        matplotlib.figure.Figure
            The figure (not shown).

        Raises
        ------
        ValueError
            If a column is not one of ``loo_change``'s.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> res = ci.influence(fit)
        >>> fig = res.plot_index(columns=["prio"])
        >>> len(fig.axes)
        1
        """
        from coxinfluence.plotting import index_plot
        return index_plot(self, columns=columns, label_top=label_top,
                          max_tick_labels=max_tick_labels)

    def plot_vs_exact(self, exact=None, columns=None):
        """Scatter of this method's changes against exact refits, with the correlation.

        One panel per column, with the identity line and the Pearson correlation
        (``coxinfluence.plotting.scatter_vs``).

        Parameters
        ----------
        exact : InfluenceResult, optional
            The reference (default: :meth:`exact`, refitting every unit).
        columns : list of str, optional
            The columns of ``loo_change`` to plot (default: all).

        Returns
        -------
        matplotlib.figure.Figure
            The figure (not shown).

        Raises
        ------
        ValueError
            If a column is not one of ``loo_change``'s.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
        >>> vif = ci.influence(fit, method="vif")
        >>> fig = vif.plot_vs_exact(columns=["age", "prio"])
        >>> len(fig.axes)
        2
        """
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
    # a model's own flags (seam member: name -> (U,) bool), e.g. the elastic net's
    # selection_changes
    for name, values in model.extra_flags().items():
        flags[name] = np.asarray(values, dtype=bool)
    return flags


def unit_name_of(model, resolved) -> str:
    """What a unit of ``model`` (a seam) is called: its own ``unit_name`` (e.g.
    "objects"), else "clusters" where ``resolved`` (the
    :class:`~coxinfluence.influence_functions.registry.Resolved` data) names groups, else
    its fit's ``unit_name`` (the fit protocol,
    ``models.base.FitProtocol``: "patients", rows or subjects)."""
    if model is not None and model.unit_name:
        return model.unit_name
    if resolved is not None and resolved.groups is not None:
        return "clusters"
    return "patients" if model is None or model.fit is None else model.fit.unit_name

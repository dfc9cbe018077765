"""The interface every fit shares: :class:`FitInterface`.

``CoxFit`` (``ci.fit_cox``), ``AFTFit`` (``ci.fit_aft``) and ``FineGrayFit``
(``ci.fit_fine_gray``) inherit it, and each supplies only what differs: its coefficients
``coef`` and their names ``columns``, its model-based covariance ``var`` and standard
errors ``se`` (arrays), ``robust_covariance(groups)``, ``loglik``, the numbers of rows,
units and events, the first columns of its coefficient table and the name of its ratios
``exp(coef)``. From these the interface gives, alike for every fit (statsmodels'
results objects and R's ``confint``/``AIC`` as the anchors):

- ``params``: the coefficients as a Series named by the parameters;
- ``cov_params(robust=None, groups=None)``: the covariance as a DataFrame with named rows
  and columns, the model-based one or, with ``robust=True``, the grouped sandwich
  ``robust_covariance(groups)``; ``robust=None`` (the default) is the fit's
  ``robust_default``, R's default (``coxph``: the sandwich when the case weights are not
  integers; the other fits: model-based), and ``variance`` says which one that is;
- ``conf_int(alpha=0.05, robust=None, groups=None)``: Wald limits ``params -/+
  z_{1-alpha/2} se`` (R's ``confint``, which uses ``qnorm(1 - alpha/2)``), a DataFrame with
  columns ``lower`` and ``upper``;
- ``summary(robust=None, groups=None, alpha=0.05)``: the family's coefficient table
  (its own first columns, then ``z`` and ``p``), then the limits ``lower 95%`` and ``upper
  95%`` of the coefficients and of their exponentials ``exp(coef)`` (``exp(coef) lower
  95%``, ...: hazard ratios, time ratios; R's ``summary.coxph`` prints them as ``lower
  .95`` and ``upper .95``); ``summary().attrs["variance"]`` names the variance it shows;
- ``nobs`` (rows), ``n_units`` (the units of deletion: the subjects of ``id=``, else the
  rows), ``n_events``;
- ``aic``: ``-2 loglik + 2 k``, ``k`` the number of estimated parameters, as R's ``AIC``
  (``coxph``: the coefficients; ``survreg``: the coefficients and the log scales); a fit
  for which R defines none raises ``AttributeError``;
- ``influence(data=None, **kwargs)``: ``ci.influence(fit, data, **kwargs)``;
- ``_repr_html_``: the fit's line and its table in Jupyter.

``influence`` lives in :mod:`coxinfluence.audit`, a layer above the models: the audit
registers it here when it is imported (:func:`register_audit`; ``import coxinfluence``
does), so the models never import the audit.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["FitProtocol", "FitInterface", "register_audit", "standard_errors", "wald_z",
           "normal_quantile"]

#: ``coxinfluence.audit.influence``, set by :func:`register_audit` when the audit is imported
_AUDIT = None


def register_audit(influence):
    """Make ``fit.influence(...)`` call ``influence(fit, ...)`` (``ci.influence``).

    Called once by :mod:`coxinfluence.audit.run` at import, so that the models never
    import the audit (a layer above them).

    Parameters
    ----------
    influence : callable
        ``coxinfluence.audit.run.influence``, called as ``influence(fit, data, **kwargs)``.
    """
    global _AUDIT
    _AUDIT = influence


def standard_errors(variances):
    """Standard errors ``sqrt(variances)``, NaN where a variance is negative.

    The NaN is on purpose and comes without a RuntimeWarning: a negative variance means
    the information is not positive definite, the fit has no maximum (``converged`` is
    False; the report says so in red).

    Parameters
    ----------
    variances : array_like
        Variances, e.g. the diagonal of a covariance matrix.

    Returns
    -------
    numpy.ndarray
        ``sqrt(variances)`` (float64), NaN where a variance is negative.
    """
    v = np.asarray(variances, dtype=np.float64)
    return np.sqrt(np.where(v >= 0, v, np.nan))


def wald_z(coef, se):
    """Wald statistics ``coef / se``, NaN where ``se`` is not positive.

    The NaN is on purpose and comes without a RuntimeWarning: a zero or NaN standard
    error means the information is not positive definite (see :func:`standard_errors`);
    an infinite z with p = 0 would be wrong.

    Parameters
    ----------
    coef : array_like
        Coefficients.
    se : array_like
        Their standard errors (broadcast against ``coef``).

    Returns
    -------
    numpy.ndarray
        ``coef / se`` (float64), NaN where ``se`` is not positive.
    """
    coef = np.asarray(coef, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    return np.divide(coef, se, out=np.full(np.broadcast(coef, se).shape, np.nan),
                     where=se > 0)


def normal_quantile(alpha):
    """``z_{1-alpha/2}``, the standard normal quantile of two-sided level ``1 - alpha``.

    R's ``qnorm(1 - alpha/2)``; 1.959963984540054 for ``alpha = 0.05``.

    Parameters
    ----------
    alpha : float
        One minus the confidence level, strictly between 0 and 1.

    Returns
    -------
    float
        The quantile ``z_{1-alpha/2}``.

    Raises
    ------
    ValueError
        If ``alpha`` is not strictly between 0 and 1.
    """
    from scipy import stats
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1; got {alpha!r}")
    return float(stats.norm.ppf(1.0 - alpha / 2.0))


def level_text(alpha):
    """``"95%"`` for ``alpha = 0.05``: the confidence level in the summary's column names."""
    return f"{100.0 * (1.0 - float(alpha)):g}%"


class FitProtocol:
    """What generic code reads of every fit, each member with its default here.

    The fit protocol: the audit's targets, ``ci.evaluate``, ``ci.calibration``,
    ``ci.residuals`` and the low-level functions read a fitted model (ours, an
    integration's adapter, a new family's) only through these members and never probe
    it (``getattr``/``hasattr``; ``tests/test_architecture.py`` keeps it so). A fit
    supplies ``coef`` (d,), ``columns`` (d parameter names) and ``n`` (the number of
    rows), and overrides the defaults that differ:

    - ``index``: the training rows' labels in the caller's order (a ``pandas.Index``), or
      None where the rows were given as arrays (default None);
    - ``covariates``: the names of the covariates the model reads from ``X`` (the columns
      a test set must have; default ``list(columns)``, every parameter a covariate's
      coefficient; an AFT fit's leave out the intercept and the log scales);
    - ``strata_names``: the stratum columns of ``X`` (default ``()``);
    - ``training_columns``: the columns a new patients' frame must have,
      ``covariates`` then ``strata_names`` (``ci.evaluate``, ``ci.calibration``);
    - ``ratio_positions``: the positions in ``coef`` of the coefficients a hazard ratio
      (``target="hr"``) applies to, those of ``covariates`` (default: where
      ``columns`` names a covariate);
    - ``cause``: the cause of a competing-risks model, None for other models (default);
    - ``has_subjects``: whether the rows were grouped into subjects (``id=``; default
      False), which ``ci.residuals(..., collapse=True)`` sums over;
    - ``nobs``: the number of rows (``n``);
    - ``unit_name``: what the report calls a unit of deletion (default "patients");
    - ``source_model``: the library's fitted model whose parameters ``coef`` are (a
      lifelines fitter), None for ours (default);
    - ``prediction_family``: which predictions of ``coxinfluence.models.predictions``
      apply, "cox", "aft" or "fine_gray" (default None: none of them).

    See Also
    --------
    FitInterface : The interface of this package's fits (coefficient tables, covariance).

    Examples
    --------
    A new family's fit inherits the defaults and declares its covariates:

    >>> from coxinfluence.models.base import FitProtocol
    >>> class WeibullPHFit(FitProtocol):
    ...     columns = ["Intercept", "age", "prio", "log_shape"]
    ...     covariates = ["age", "prio"]
    ...     n = 432
    >>> fit = WeibullPHFit()
    >>> fit.ratio_positions, fit.training_columns, fit.nobs, fit.unit_name
    ([1, 2], ['age', 'prio'], 432, 'patients')
    """

    #: the training rows' labels (caller's order), None for rows given as arrays
    index = None
    #: the stratum columns of ``X``
    strata_names = ()
    #: the cause of a competing-risks model (None: not one)
    cause = None
    #: what the report calls a unit of deletion
    unit_name = "patients"
    #: the library's fitted model whose parameters ``coef`` are (None: ours)
    source_model = None
    #: the model family, "cox", "aft" or "fine_gray": which predictions of
    #: ``coxinfluence.models.predictions`` apply (set by each fit class)
    prediction_family = None

    @property
    def covariates(self) -> list:
        """The covariates the model reads from ``X`` (default: every parameter's name).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> aft = ci.fit_aft(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
        >>> aft.columns, aft.covariates
        (['(Intercept)', 'fin', 'age', 'Log(scale)'], ['fin', 'age'])
        """
        return list(self.columns)

    @property
    def training_columns(self) -> list:
        """The columns a frame of new patients must have: ``covariates``, ``strata_names``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"],
        ...                  strata=rossi["race"])
        >>> fit.training_columns
        ['fin', 'age', 'race']
        """
        return [str(c) for c in self.covariates] + [str(c) for c in self.strata_names]

    @property
    def ratio_positions(self) -> list:
        """The positions in ``coef`` of the covariates' coefficients (``target="hr"``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> aft = ci.fit_aft(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
        >>> aft.ratio_positions
        [1, 2]
        """
        covariates = set(self.covariates)
        return [k for k, c in enumerate(self.columns) if c in covariates]

    @property
    def has_subjects(self) -> bool:
        """Whether the rows were grouped into subjects (``id=``; default False).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"]).has_subjects
        False
        """
        return False

    @property
    def nobs(self) -> int:
        """The number of rows fitted.

        R's ``nobs(coxph)`` is the number of events instead (here ``n_events``).

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.nobs, fit.n_units, fit.n_events
        (432, 432, 114)
        """
        return int(self.n)


class FitInterface(FitProtocol):
    """The interface every fit shares: coefficients, covariance, limits, table, counts.

    :class:`~coxinfluence.CoxFit` (:func:`~coxinfluence.fit_cox`),
    :class:`~coxinfluence.AFTFit` (:func:`~coxinfluence.fit_aft`) and
    :class:`~coxinfluence.FineGrayFit` (:func:`~coxinfluence.fit_fine_gray`) inherit it:
    ``params``, ``cov_params``, ``conf_int``, ``summary``, ``nobs``, ``aic`` and
    ``influence`` behave alike for every fit, with statsmodels' results objects and R's
    ``confint`` and ``AIC`` as the anchors (module docstring).

    See Also
    --------
    coxinfluence.CoxFit : A fitted Cox model.
    coxinfluence.AFTFit : A fitted AFT model (R's ``survreg``).
    coxinfluence.FineGrayFit : A fitted Fine-Gray model (R's ``crr``).

    Notes
    -----
    A subclass supplies ``coef``, ``columns``, ``var``, ``se``,
    ``robust_covariance(groups)``, ``loglik``, ``n`` (rows), ``n_units``, ``n_events``,
    ``_summary_head`` and ``_html_head``; and may set ``_ratio_name`` and
    ``_model_variance``, and override ``_aic_parameters``, ``robust_default`` and
    ``_robust_reason``. ``se`` is the standard error of the default variance
    (:meth:`cov_params` with ``robust=None``).
    """

    #: the name of the ``params`` index
    _params_index_name = "covariate"
    #: the name of ``exp(coef)`` in the summary (None: no ratio columns)
    _ratio_name = "exp(coef)"
    #: the words for ``var`` in :attr:`variance` and ``summary().attrs["variance"]``
    _model_variance = "model-based (inverse information)"

    # --------------------------------------------------------------- variance
    @property
    def robust_default(self) -> bool:
        """Whether the summaries show the robust variance when ``robust`` is not given.

        What ``cov_params()``, ``conf_int()``, ``summary()`` and ``se`` report with
        ``robust=None``: R's default. False here (the model-based variance ``var``);
        :attr:`CoxFit.robust_default <coxinfluence.CoxFit.robust_default>` is True for
        non-integer case weights, as R's ``coxph``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> ci.fit_aft(X, rossi["week"], rossi["arrest"], "weibull").robust_default
        False
        """
        return False

    def _robust(self, robust):
        """``robust`` as a bool: the fit's :attr:`robust_default` when None."""
        return self.robust_default if robust is None else bool(robust)

    def _robust_reason(self):
        """Why :attr:`robust_default` is True (the words of :attr:`variance`)."""
        return "the fit's default"

    def _variance_words(self, robust):
        """Which variance a call with ``robust`` (True, False or None) reports."""
        if not self._robust(robust):
            return self._model_variance
        reason = self._robust_reason() if robust is None else "robust=True"
        return f"robust (sandwich D'D; {reason})"

    @property
    def variance(self) -> str:
        """Which variance ``se``, ``cov_params()``, ``conf_int()`` and ``summary()`` show.

        Words, also in ``summary().attrs["variance"]`` (for the call's own ``robust``):
        ``"model-based (inverse information)"``, or ``"robust (sandwich D'D; ...)"`` with
        the reason (:attr:`robust_default`). The other one stays available by name:
        ``cov_params(robust=False)`` / ``cov_params(robust=True)``, and so for
        ``conf_int`` and ``summary``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> ci.fit_cox(X, rossi["week"], rossi["arrest"]).variance
        'model-based (inverse information)'
        """
        return self._variance_words(None)

    # ------------------------------------------------------------- parameters
    @property
    def params(self) -> pd.Series:
        """The coefficients as a Series named by their parameters.

        ``coef`` is the bare array; this is lifelines' ``params_`` and statsmodels'
        ``params``. The index is named ``covariate`` (Cox, Fine-Gray) or ``parameter``
        (AFT: the intercept and the log scales too), the Series ``coef``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.params.round(3)
        covariate
        fin    -0.379
        age    -0.057
        race    0.314
        wexp   -0.150
        mar    -0.434
        paro   -0.085
        prio    0.091
        Name: coef, dtype: float64
        """
        return pd.Series(np.asarray(self.coef, dtype=np.float64), index=self._param_index(),
                         name="coef")

    def _param_index(self):
        return pd.Index(list(self.columns), name=self._params_index_name,
                        tupleize_cols=False)

    def cov_params(self, robust=None, groups=None) -> pd.DataFrame:
        """The covariance of the coefficients, rows and columns named by the parameters.

        Parameters
        ----------
        robust : bool, optional
            False: the model-based covariance ``var`` (the inverse information; for a
            Fine-Gray fit crr's sandwich). True: the grouped sandwich
            ``robust_covariance(groups)`` (R's ``coxph(..., cluster = id)$var``).
            Default (None): the fit's :attr:`robust_default`, R's (``vcov(fit)``): the
            sandwich for a Cox fit with non-integer case weights, else ``var``.
        groups : array_like, optional
            One cluster label per row (caller's order), read only with ``robust=True``;
            default the fit's subjects (``id=``), else the rows.

        Returns
        -------
        pandas.DataFrame
            (d, d) covariance, rows and columns named as :attr:`params`.

        See Also
        --------
        conf_int : Wald confidence limits from these variances.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.cov_params().loc[["fin", "age"], ["fin", "age"]].round(5)
        covariate      fin      age
        covariate
        fin        0.03663 -0.00026
        age       -0.00026  0.00048
        """
        V = self.robust_covariance(groups) if self._robust(robust) else self.var
        index = self._param_index()
        return pd.DataFrame(np.array(V, dtype=np.float64), index=index,
                            columns=pd.Index(list(index), name=index.name,
                                             tupleize_cols=False))

    def _se(self, robust=None, groups=None):
        """The standard errors the table shows: the model-based ones (``var``), or the
        robust ones; ``robust=None``: the fit's :attr:`robust_default`."""
        if self._robust(robust):
            return standard_errors(np.diag(self.robust_covariance(groups)))
        return standard_errors(np.diag(self.var))

    def conf_int(self, alpha=0.05, robust=None, groups=None) -> pd.DataFrame:
        """Wald confidence limits of level ``1 - alpha`` for every parameter.

        ``params -/+ z_{1-alpha/2} se``, as R's ``confint`` (which uses ``qnorm(1 -
        alpha/2)``).

        Parameters
        ----------
        alpha : float, default 0.05
            One minus the confidence level (0.05: 95% limits).
        robust : bool, optional
            True: the robust standard errors (the diagonal of ``cov_params(robust=True,
            groups=groups)``); False: the model-based ones. Default (None): the fit's
            :attr:`robust_default` (R's ``confint``).
        groups : array_like, optional
            Clusters of the robust standard errors, as in :meth:`cov_params`.

        Returns
        -------
        pandas.DataFrame
            Columns ``lower`` and ``upper``, one row per parameter. ``np.exp`` of it
            gives the limits of the ratios ``exp(coef)`` (hazard ratios, time ratios).

        See Also
        --------
        summary : The coefficient table with these limits.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.conf_int().round(3).head(3)
                   lower  upper
        covariate
        fin       -0.755 -0.004
        age       -0.101 -0.014
        race      -0.290  0.918

        Hazard ratios with 90% limits:

        >>> np.exp(fit.conf_int(alpha=0.1)).round(3).head(2)
                   lower  upper
        covariate
        fin        0.499  0.937
        age        0.911  0.979
        """
        z = normal_quantile(alpha)
        coef = np.asarray(self.coef, dtype=np.float64)
        se = self._se(robust, groups)
        return pd.DataFrame({"lower": coef - z * se, "upper": coef + z * se},
                            index=self._param_index())

    # ---------------------------------------------------------------- summary
    def _summary_head(self, se, robust):
        """The family's first columns (a dict: coefficient, ratio, standard error, as its
        reference program names them); ``z`` and ``p`` and the limits follow. ``robust``
        is a bool here (resolved)."""
        raise NotImplementedError

    def summary(self, robust=None, groups=None, alpha=0.05) -> pd.DataFrame:
        """The coefficient table, one row per parameter.

        The family's own columns (Cox: ``coef``, ``exp(coef)``, ``se(coef)``; AFT:
        ``Value``, ``Std. Error``; Fine-Gray: ``coef``, ``exp(coef)``, ``se(coef)``), the
        Wald ``z`` and its two-sided ``p``, then the limits of level ``1 - alpha``
        (:meth:`conf_int`): ``lower 95%``, ``upper 95%`` and, for the ratios
        ``exp(coef)``, ``exp(coef) lower 95%``, ``exp(coef) upper 95%`` (the AFT's:
        ``exp(Value)``, ``exp(Value) lower 95%``, ``exp(Value) upper 95%``). R's
        ``summary.coxph`` prints the ratios' limits as ``lower .95`` and ``upper .95``.

        Parameters
        ----------
        robust : bool, optional
            True: the robust standard error (column ``robust se``, R's name; a Cox fit
            keeps the model-based ``se(coef)`` beside it, as R's ``summary.coxph``), with
            ``z``, ``p`` and the limits based on it; False: the model-based one. Default
            (None): the fit's :attr:`robust_default` (R's ``summary``).
        groups : array_like, optional
            Clusters of the robust standard error, as in :meth:`cov_params`.
        alpha : float, default 0.05
            One minus the level of the limits; the column names follow it (``lower
            90%`` for ``alpha=0.1``).

        Returns
        -------
        pandas.DataFrame
            One row per parameter, the columns above; ``attrs["variance"]`` says which
            variance it shows (:attr:`variance`'s words).

        See Also
        --------
        conf_int : The limits alone.
        cov_params : The covariance behind the standard errors.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.summary()[["coef", "exp(coef)", "se(coef)", "z", "p"]].round(3)
               coef  exp(coef)  se(coef)      z      p
        fin  -0.379      0.684     0.191 -1.983  0.047
        age  -0.057      0.944     0.022 -2.611  0.009
        race  0.314      1.369     0.308  1.019  0.308
        wexp -0.150      0.861     0.212 -0.706  0.480
        mar  -0.434      0.648     0.382 -1.136  0.256
        paro -0.085      0.919     0.196 -0.434  0.665
        prio  0.091      1.096     0.029  3.194  0.001
        >>> list(fit.summary().columns[5:])
        ['lower 95%', 'upper 95%', 'exp(coef) lower 95%', 'exp(coef) upper 95%']
        >>> fit.summary(robust=True)[["coef", "robust se", "p"]].round(3).head(2)
              coef  robust se      p
        fin -0.379      0.196  0.052
        age -0.057      0.025  0.023
        >>> fit.summary().attrs["variance"]
        'model-based (inverse information)'
        """
        from scipy import stats
        words = self._variance_words(robust)
        robust = self._robust(robust)
        se = self._se(robust, groups)
        coef = np.asarray(self.coef, dtype=np.float64)
        z = wald_z(coef, se)
        table = dict(self._summary_head(se, robust))
        table["z"] = z
        table["p"] = 2 * stats.norm.sf(np.abs(z))
        q = normal_quantile(alpha)
        level = level_text(alpha)
        lower, upper = coef - q * se, coef + q * se
        table[f"lower {level}"] = lower
        table[f"upper {level}"] = upper
        if self._ratio_name is not None:
            for what, values in (("", coef), (f" lower {level}", lower),
                                 (f" upper {level}", upper)):
                name = f"{self._ratio_name}{what}"
                if what or name not in table:
                    table[name] = np.exp(values)
        out = pd.DataFrame(table, index=list(self.columns))
        out.attrs["variance"] = words
        return out

    # --------------------------------------------------------------------- AIC
    @property
    def _aic_parameters(self) -> int:
        """The number of estimated parameters R's ``AIC`` counts."""
        return len(self.coef)

    @property
    def aic(self) -> float:
        """Akaike's information criterion ``-2 loglik + 2 k``, as R's ``AIC(fit)``.

        ``k`` is the number of estimated parameters R's ``AIC`` counts (``coxph``: the
        coefficients; ``survreg``: the coefficients and the log scales). A fit for which
        R defines none (a penalised Cox fit, Fine-Gray) raises ``AttributeError``.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> round(fit.aic, 2)
        1331.5
        """
        return float(-2.0 * self.loglik + 2.0 * self._aic_parameters)

    # ---------------------------------------------------------------- influence
    def influence(self, data=None, **kwargs):
        """The influence of every training unit on this fit: ``ci.influence(fit, ...)``.

        Parameters
        ----------
        data : optional
            The training data, as :func:`coxinfluence.influence` takes it (not needed for
            fits of this package, which keep their data).
        **kwargs
            Further arguments of :func:`coxinfluence.influence` (``method``, ``target``,
            ``groups``, ...).

        Returns
        -------
        InfluenceResult
            ``ci.influence(fit, data, **kwargs)``.

        Raises
        ------
        RuntimeError
            If the audit was never imported (``import coxinfluence`` imports it).

        See Also
        --------
        coxinfluence.influence : The same, as a function.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> X = rossi.drop(columns=["week", "arrest"])
        >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
        >>> fit.influence()
        InfluenceResult(method='auto', target='coef', patients=432, ...)
        """
        if _AUDIT is None:
            raise RuntimeError("fit.influence needs coxinfluence's audit: import "
                               "coxinfluence (it registers ci.influence), or call "
                               "ci.influence(fit, ...) directly")
        return _AUDIT(self, data, **kwargs)

    # ------------------------------------------------------------------ display
    def _html_head(self) -> str:
        raise NotImplementedError

    def _repr_html_(self):
        """Jupyter: the fit's line, its coefficient table (:meth:`summary`) and the
        variance it shows (:attr:`variance`)."""
        import html
        return (self._html_head() + self.summary().to_html(
            float_format=lambda v: f"{v:.4g}", na_rep="NA")
                + f"<p>variance: {html.escape(self.variance)}</p>")

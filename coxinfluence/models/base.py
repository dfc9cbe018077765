"""The interface every fit shares: :class:`FitInterface`.

``CoxFit`` (``ci.fit_cox``), ``AFTFit`` (``ci.fit_aft``) and ``FineGrayFit``
(``ci.fit_fine_gray``) inherit it, and each supplies only what differs: its coefficients
``coef`` and their names ``columns``, its model-based covariance ``var`` and standard
errors ``se`` (arrays), ``robust_covariance(groups)``, ``loglik``, the numbers of rows,
units and events, the first columns of its coefficient table and the name of its ratios
``exp(coef)``. From these the interface gives, alike for every fit (statsmodels'
results objects and R's ``confint``/``AIC`` as the anchors):

- ``params``: the coefficients as a Series named by the parameters;
- ``cov_params(robust=False, groups=None)``: the covariance as a DataFrame with named rows
  and columns, the model-based one or, with ``robust=True``, the grouped sandwich
  ``robust_covariance(groups)``;
- ``conf_int(alpha=0.05, robust=False, groups=None)``: Wald limits ``params -/+
  z_{1-alpha/2} se`` (R's ``confint``, which uses ``qnorm(1 - alpha/2)``), a DataFrame with
  columns ``lower`` and ``upper``;
- ``summary(robust=False, groups=None, alpha=0.05)``: the family's coefficient table
  (its own first columns, then ``z`` and ``p``), then the limits ``lower 95%`` and ``upper
  95%`` of the coefficients and of their exponentials ``exp(coef)`` (``exp(coef) lower
  95%``, ...: hazard ratios, time ratios; R's ``summary.coxph`` prints them as ``lower
  .95`` and ``upper .95``);
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

__all__ = ["FitInterface", "register_audit", "standard_errors", "wald_z", "normal_quantile"]

#: ``coxinfluence.audit.influence``, set by :func:`register_audit` when the audit is imported
_AUDIT = None


def register_audit(influence):
    """Make ``fit.influence(...)`` call ``influence(fit, ...)`` (``ci.influence``); called
    once by :mod:`coxinfluence.audit.run` at import."""
    global _AUDIT
    _AUDIT = influence


def standard_errors(variances):
    """``sqrt(variances)``, and NaN, on purpose and without a RuntimeWarning, where a
    variance is negative: the information is then not positive definite, the fit has no
    maximum (``converged`` is False; the report says so in red)."""
    v = np.asarray(variances, dtype=np.float64)
    return np.sqrt(np.where(v >= 0, v, np.nan))


def wald_z(coef, se):
    """Wald statistics ``coef / se``; NaN, on purpose and without a RuntimeWarning, where
    ``se`` is not positive (a zero or NaN standard error: the information is not positive
    definite, see :func:`standard_errors`), not an infinite z with p = 0."""
    coef = np.asarray(coef, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    return np.divide(coef, se, out=np.full(np.broadcast(coef, se).shape, np.nan),
                     where=se > 0)


def normal_quantile(alpha):
    """``z_{1-alpha/2}``, the standard normal quantile of two-sided level ``1 - alpha``
    (R's ``qnorm(1 - alpha/2)``; 1.959963984540054 for ``alpha = 0.05``)."""
    from scipy import stats
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1; got {alpha!r}")
    return float(stats.norm.ppf(1.0 - alpha / 2.0))


def level_text(alpha):
    """``"95%"`` for ``alpha = 0.05``: the confidence level in the summary's column names."""
    return f"{100.0 * (1.0 - float(alpha)):g}%"


class FitInterface:
    """What every fit offers (module docstring). A subclass supplies ``coef``,
    ``columns``, ``var``, ``se``, ``robust_covariance(groups)``, ``loglik``, ``n`` (rows),
    ``n_units``, ``n_events``, :meth:`_summary_head` and :meth:`_html_head`; and may set
    :attr:`_ratio_name` and override :attr:`_aic_parameters`."""

    #: the model family, "cox", "aft" or "fine_gray": which predictions of
    #: :mod:`coxinfluence.models.predictions` apply (set by each fit class)
    prediction_family = None
    #: the name of the ``params`` index
    _params_index_name = "covariate"
    #: the name of ``exp(coef)`` in the summary (None: no ratio columns)
    _ratio_name = "exp(coef)"

    # ------------------------------------------------------------- parameters
    @property
    def params(self) -> pd.Series:
        """The coefficients named by their parameters (``coef`` is the bare array), as
        lifelines' ``params_`` and statsmodels' ``params``."""
        return pd.Series(np.asarray(self.coef, dtype=np.float64), index=self._param_index(),
                         name="coef")

    def _param_index(self):
        return pd.Index(list(self.columns), name=self._params_index_name,
                        tupleize_cols=False)

    def cov_params(self, robust=False, groups=None) -> pd.DataFrame:
        """The covariance of the coefficients, rows and columns named by the parameters:
        the model-based ``var`` (default), or, with ``robust=True``, the grouped sandwich
        ``robust_covariance(groups)`` (``groups``: one cluster label per row; default the
        fit's subjects, else the rows; read only with ``robust=True``)."""
        V = self.robust_covariance(groups) if robust else self.var
        index = self._param_index()
        return pd.DataFrame(np.array(V, dtype=np.float64), index=index,
                            columns=pd.Index(list(index), name=index.name,
                                             tupleize_cols=False))

    def _se(self, robust=False, groups=None):
        """The standard errors the table shows: ``se``, or the robust ones."""
        if robust:
            return standard_errors(np.diag(self.robust_covariance(groups)))
        return np.asarray(self.se, dtype=np.float64)

    def conf_int(self, alpha=0.05, robust=False, groups=None) -> pd.DataFrame:
        """Wald confidence limits of level ``1 - alpha`` for every parameter: ``params
        -/+ z_{1-alpha/2} se`` (R's ``confint``), with ``se`` the model-based standard
        errors or, with ``robust=True``, the robust ones (``groups`` as
        :meth:`cov_params`). A DataFrame with columns ``lower`` and ``upper``, one row per
        parameter; ``np.exp`` of it gives the limits of the ratios ``exp(coef)``."""
        z = normal_quantile(alpha)
        coef = np.asarray(self.coef, dtype=np.float64)
        se = self._se(robust, groups)
        return pd.DataFrame({"lower": coef - z * se, "upper": coef + z * se},
                            index=self._param_index())

    # ---------------------------------------------------------------- summary
    def _summary_head(self, se, robust):
        """The family's first columns (a dict: coefficient, ratio, standard error, as its
        reference program names them); ``z`` and ``p`` and the limits follow."""
        raise NotImplementedError

    def summary(self, robust=False, groups=None, alpha=0.05) -> pd.DataFrame:
        """The coefficient table, one row per parameter: the family's own columns (Cox:
        coef, exp(coef), se(coef); AFT: Value, Std. Error; Fine-Gray: coef, exp(coef),
        se(coef)), the Wald ``z`` and its two-sided ``p``, then the limits of level
        ``1 - alpha`` (:meth:`conf_int`): ``lower 95%``, ``upper 95%`` and, for the ratios
        exp(coef), ``exp(coef) lower 95%``, ``exp(coef) upper 95%`` (the AFT's:
        ``exp(Value)``, ``exp(Value) lower 95%``, ``exp(Value) upper 95%``). With
        ``robust=True`` the standard error is the robust one (column ``robust se``, R's
        name) and the limits use it; ``groups`` as :meth:`cov_params`."""
        from scipy import stats
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
        return pd.DataFrame(table, index=list(self.columns))

    # ------------------------------------------------------------------ counts
    @property
    def nobs(self) -> int:
        """The number of rows fitted (R's ``nobs(coxph)`` is the number of events
        instead)."""
        return int(self.n)

    # --------------------------------------------------------------------- AIC
    @property
    def _aic_parameters(self) -> int:
        """The number of estimated parameters R's ``AIC`` counts."""
        return len(self.coef)

    @property
    def aic(self) -> float:
        """Akaike's information criterion ``-2 loglik + 2 k`` as R's ``AIC(fit)``, ``k``
        the number of estimated parameters."""
        return float(-2.0 * self.loglik + 2.0 * self._aic_parameters)

    # ---------------------------------------------------------------- influence
    def influence(self, data=None, **kwargs):
        """``ci.influence(fit, data, **kwargs)``: the influence of every training unit on
        this fit (:func:`coxinfluence.audit.run.influence`; same arguments), an
        :class:`~coxinfluence.audit.result.InfluenceResult`."""
        if _AUDIT is None:
            raise RuntimeError("fit.influence needs coxinfluence's audit: import "
                               "coxinfluence (it registers ci.influence), or call "
                               "ci.influence(fit, ...) directly")
        return _AUDIT(self, data, **kwargs)

    # ------------------------------------------------------------------ display
    def _html_head(self) -> str:
        raise NotImplementedError

    def _repr_html_(self):
        """Jupyter: the fit's line and its coefficient table (:meth:`summary`)."""
        return self._html_head() + self.summary().to_html(
            float_format=lambda v: f"{v:.4g}", na_rep="NA")

"""Targets of new patients that follow a lifelines parametric regression's own predictions.

:class:`LifelinesSurvival` is ``model.predict_survival_function(df_new, times)`` of a
fitted lifelines ``ParametricRegressionFitter`` (the AFT fitters with or without
``ancillary``, ``PiecewiseExponentialRegressionFitter``, ``GeneralizedGammaRegressionFitter``,
``CoxPHFitter`` with a spline or piecewise baseline, a user's subclass), evaluated at any
parameters ``theta`` (lifelines' ``params_`` flattened in its own order):

    S(t | x; theta) = exp(-H(t | x; params(theta)))

with ``H`` the fitter's own ``_cumulative_hazard(params, T, Xs)`` and ``Xs`` its own design
of the new patients, ``model.regressors.transform_df(df_new)`` (formulas, the intercepts of
each parameter): lifelines 0.30's ``predict_cumulative_hazard`` (without
``conditional_after``), whose ``exp(-.)`` is ``predict_survival_function``. ``H`` is
evaluated as the likelihood evaluates it, one time per design row (each patient's row
repeated once per time), which every fitter supports (the piecewise-baseline Cox model's
``_cumulative_hazard`` takes no matrix of times; its own ``predict_cumulative_hazard`` is
the same formula). The model is
fully parametric (knots and breakpoints are fixed parts of the model), so a deleted unit
changes ``S`` only through ``theta``: the exact change is ``S(theta_{-g}) - S(theta_hat)``,
a first-order method's ``J (theta_{-g} - theta_hat)`` with the Jacobian ``J = dS/dtheta``
at ``theta_hat`` by autograd (lifelines' dependency, in which ``_cumulative_hazard`` is
written; reverse mode, one pass per entry of ``S``); there is no data effect.

Offered (``target_names``) for lifelines' parametric models in both paths:
:class:`~coxinfluence.influence_functions.decomposable_audit.DecomposableAudit`
(``integrations/lifelines_parametric.py``) and lifelines' survreg AFT fits read in
``params_`` (``integrations/lifelines_aft.py``); the fit the target reads has ``columns``
(``params_.index``), ``coef`` in that order and ``source_model`` (the lifelines model).

Past the last event time of the training data ``S`` is the parametric model's
extrapolation beyond the data: :meth:`LifelinesSurvival.followup_notes` says so (a
:class:`~coxinfluence.audit.target_base.TargetBeyondFollowUpWarning` from ``influence()``).
The event times are read from the fitter: ``durations`` where ``event_observed``
(right censoring), every ``durations`` (left censoring: each event happened by then),
the finite ``upper_bound`` values (interval censoring).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coxinfluence.audit.target_base import Target, followup_notes, register_target
from coxinfluence.data.inputs import CoxInputError
from coxinfluence.families.new_patients import positive_times
from coxinfluence.integrations.lifelines_parametric import last_event_time, prediction_fitter

__all__ = ["LifelinesSurvival"]


def _fitter(fit):
    """The lifelines fitter behind ``fit`` (its ``source_model``), checked to be named like
    ``fit``'s parameters."""
    fitter = prediction_fitter(fit.source_model)        # FitProtocol.source_model
    if fitter is None:
        raise ValueError("LifelinesSurvival is the survival function of a fitted lifelines "
                         "parametric regression (ci.influence(model, df) of a "
                         "WeibullAFTFitter, ..., ParametricRegressionFitter); this model is "
                         f"a {type(fit).__name__}")
    columns = pd.Index(list(fit.columns))
    if not columns.equals(pd.Index(list(fitter.params_.index))):
        raise ValueError(f"the fit's parameters {list(columns)} are not the lifelines "
                         f"model's params_ {list(fitter.params_.index)}")
    return fitter


def _blocks(fit):
    """``[(parameter name, slice of theta)]`` in ``fit.columns`` order (params_.index)."""
    names = [c[0] for c in fit.columns]
    out, start = [], 0
    for name in dict.fromkeys(names):
        k = names.count(name)
        out.append((name, slice(start, start + k)))
        start += k
    return out


@register_target
class LifelinesSurvival(Target):
    """A lifelines parametric regression's own survival function of new patients.

    ``model.predict_survival_function(df_new, times)`` at parameters ``theta`` (module
    docstring: ``S(t | x; theta) = exp(-H(t | x; params(theta)))`` with the fitter's own
    ``_cumulative_hazard`` and design). One column per (patient, time),
    ``"S(t|label)"``, patients in ``df_new``'s order (labels its index).
    ``ci.targets.Survival`` on a lifelines parametric model (the deprecated
    ``ci.LifelinesSurvival`` is this class).

    Parameters
    ----------
    df_new : DataFrame or Series
        New patients as lifelines takes them (a DataFrame, or a Series for one patient:
        the raw columns the model's formula or covariates read; not modified).
    times : float or array_like
        The times ``t``, finite and positive.

    Raises
    ------
    ValueError
        If ``df_new`` is not a non-empty DataFrame (or a Series), or ``times`` are not
        finite and positive.

    See Also
    --------
    coxinfluence.targets.Survival : The target to use (dispatched on the model).
    """

    name = "lifelines_survival"
    quantity = "survival"
    ask = "ci.targets.Survival(df_new, times)"

    def __init__(self, df_new, times):
        if isinstance(df_new, pd.Series):
            df_new = df_new.to_frame().T.infer_objects()
        if not isinstance(df_new, pd.DataFrame) or len(df_new) == 0:
            raise ValueError("df_new must be a non-empty pandas DataFrame of new patients "
                             "(the columns the lifelines model was fitted with)")
        self.df_new = df_new
        self.times = positive_times(times)

    @classmethod
    def evaluates(cls, fit):
        """Whether ``fit`` stands for a fitted lifelines parametric regression.

        Parameters
        ----------
        fit : object
            A fitted model (the fit of ``ci.influence(model, df)``, whose
            ``source_model`` is the lifelines model).

        Returns
        -------
        bool
            Whether its ``source_model`` is a lifelines model this target predicts with.

        Examples
        --------
        >>> from lifelines import WeibullAFTFitter
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()[["week", "arrest", "fin", "age", "prio"]]
        >>> model = WeibullAFTFitter().fit(rossi, "week", "arrest")
        >>> target = ci.targets.Survival(rossi.iloc[:2], [20, 40])
        >>> fit = ci.influence(model, rossi, target=target).fit
        >>> surv = target.implementation(fit=fit)
        >>> type(surv).__name__, surv.evaluates(fit)
        ('LifelinesSurvival', True)
        >>> cox = ci.fit_cox(rossi[["fin"]], rossi["week"], rossi["arrest"])
        >>> surv.evaluates(cox)
        False
        """
        return prediction_fitter(fit.source_model) is not None

    def columns(self, fit):
        """``"S(t|label)"`` for each (patient, time), patient outer, time inner.

        Parameters
        ----------
        fit : object
            The fit of the lifelines model.

        Returns
        -------
        list of str
            ``P T`` column names, labels from ``df_new``'s index.

        Examples
        --------
        >>> from lifelines import WeibullAFTFitter
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()[["week", "arrest", "fin", "age", "prio"]]
        >>> model = WeibullAFTFitter().fit(rossi, "week", "arrest")
        >>> target = ci.targets.Survival(rossi.iloc[:2], [20, 40])
        >>> fit = ci.influence(model, rossi, target=target).fit
        >>> surv = target.implementation(fit=fit)
        >>> surv.columns(fit)
        ['S(20|0)', 'S(40|0)', 'S(20|1)', 'S(40|1)']
        """
        return [f"S({t:g}|{lab})" for lab in self.df_new.index for t in self.times]

    def followup_notes(self, fit):
        """Notes on times past the last event time of the training data.

        ``S(t|x)`` is the parametric model's extrapolation there (module docstring: the
        event times are read from the fitter).

        Parameters
        ----------
        fit : object
            The fit of the lifelines model.

        Returns
        -------
        tuple of str
            A sentence if some times are past the last event time; empty otherwise, and
            when the fitter does not keep its data.

        Examples
        --------
        >>> from lifelines import WeibullAFTFitter
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()[["week", "arrest", "fin", "age", "prio"]]
        >>> model = WeibullAFTFitter().fit(rossi, "week", "arrest")
        >>> target = ci.targets.Survival(rossi.iloc[:2], [20, 40])
        >>> fit = ci.influence(model, rossi, target=target).fit
        >>> surv = target.implementation(fit=fit)
        >>> surv.followup_notes(fit)
        ()
        >>> later = ci.targets.Survival(rossi.iloc[:1], [60]).implementation(fit=fit)
        >>> later.followup_notes(fit)
        ('S(t|x) at time 60: past the last event time of the data, 52; ...',)
        """
        last = last_event_time(_fitter(fit))
        if last is None:
            return ()
        kind = type(fit.source_model).__name__
        return followup_notes(
            self.times, np.array([last]), np.zeros(len(self.df_new), dtype=np.intp),
            [str(v) for v in self.df_new.index], quantity="S(t|x)",
            consequence=(f"S(t|x) there is extrapolated by the parametric model ({kind}) "
                         "beyond the data, not estimated from events"))

    def _design(self, fitter):
        """lifelines' ``DataframeSlicer`` of the new patients' design (the fitter's own
        ``regressors.transform_df`` of a copy), checked to be finite, each patient's row
        repeated once per time."""
        from lifelines.utils import DataframeSlicer

        from coxinfluence.integrations import lifelines_covariates
        try:
            Xs = fitter.regressors.transform_df(self.df_new.copy())
        except Exception as exc:       # formulaic, pandas' KeyError: the columns it needs
            needed = lifelines_covariates(fitter)
            missing = [c for c in needed if c not in self.df_new.columns]
            why = (f"they lack the model's covariate column(s) {missing} (its covariates: "
                   f"{needed})" if missing else f"{type(exc).__name__}: {exc}")
            raise CoxInputError("the new patients do not have the columns the lifelines "
                                f"model needs: {why}") from exc
        Xs = Xs.astype(np.float64)
        bad = ~np.isfinite(Xs.to_numpy()).all(axis=1)
        if bad.any():
            raise ValueError(f"new patients {list(self.df_new.index[bad])[:5]} have missing "
                             "or infinite covariates")
        return DataframeSlicer(Xs.iloc[np.repeat(np.arange(len(Xs)), self.times.size)])

    def _survival(self, fit):
        """``theta (d,) -> S`` (P T,): patients outer, times inner; autograd-traceable."""
        import autograd.numpy as anp
        fitter = _fitter(fit)
        Xs = self._design(fitter)
        blocks = _blocks(fit)
        at = np.tile(self.times, len(self.df_new))                 # (P T,), times inner

        def survival(theta):
            params = {name: theta[part] for name, part in blocks}
            return anp.exp(-fitter._cumulative_hazard(params, at, Xs))

        return survival

    def value(self, fit, theta):
        """``S(t | x; theta)`` for each row of ``theta``.

        Parameters
        ----------
        fit : object
            The fit of the lifelines model.
        theta : array_like, shape (B, d)
            Parameter vectors, lifelines' ``params_`` flattened in its own order.

        Returns
        -------
        numpy.ndarray, shape (B, P T)
            In the order of :meth:`columns`; NaN rows where ``theta`` is not finite.

        Examples
        --------
        >>> from lifelines import WeibullAFTFitter
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()[["week", "arrest", "fin", "age", "prio"]]
        >>> model = WeibullAFTFitter().fit(rossi, "week", "arrest")
        >>> target = ci.targets.Survival(rossi.iloc[:2], [20, 40])
        >>> fit = ci.influence(model, rossi, target=target).fit
        >>> surv = target.implementation(fit=fit)
        >>> np.round(surv.value(fit, fit.coef[None, :]), 4)
        array([[0.9286, 0.8223, 0.8021, 0.5587]])

        At lifelines' own ``params_`` it is lifelines' prediction:

        >>> theirs = model.predict_survival_function(rossi.iloc[:2], times=[20, 40])
        >>> ours = surv.value(fit, model.params_.to_numpy()[None, :])
        >>> bool(np.allclose(ours[0], theirs.to_numpy().T.ravel()))
        True
        """
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        survival = self._survival(fit)
        out = np.full((theta.shape[0], len(self.df_new) * self.times.size), np.nan)
        for b, row in enumerate(theta):
            if np.isfinite(row).all():
                out[b] = np.asarray(survival(row), dtype=np.float64)
        return out

    def jacobian(self, fit):
        """``dS/dtheta`` at ``fit.coef``, by autograd.

        Reverse mode, one pass per entry of ``S`` (lifelines' ``_cumulative_hazard`` is
        written in autograd).

        Parameters
        ----------
        fit : object
            The fit of the lifelines model.

        Returns
        -------
        numpy.ndarray, shape (P T, d)
            One row per column of the target.

        Examples
        --------
        >>> from lifelines import WeibullAFTFitter
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()[["week", "arrest", "fin", "age", "prio"]]
        >>> model = WeibullAFTFitter().fit(rossi, "week", "arrest")
        >>> target = ci.targets.Survival(rossi.iloc[:2], [20, 40])
        >>> fit = ci.influence(model, rossi, target=target).fit
        >>> surv = target.implementation(fit=fit)
        >>> J = surv.jacobian(fit)
        >>> J.shape
        (4, 5)

        It is the derivative of :meth:`value` (here along the last parameter, Weibull's
        ``rho_`` intercept, by central differences):

        >>> h = 1e-6 * np.eye(5)[4]
        >>> fd = (surv.value(fit, fit.coef + h) - surv.value(fit, fit.coef - h))[0] / 2e-6
        >>> bool(np.allclose(J[:, 4], fd, atol=1e-6))
        True
        """
        from autograd import jacobian
        survival = self._survival(fit)
        return np.asarray(jacobian(survival)(np.asarray(fit.coef, dtype=np.float64)),
                          dtype=np.float64)

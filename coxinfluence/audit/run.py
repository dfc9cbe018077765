"""One entry point for auditing a fitted Cox model: ``ci.influence(model, data)``.

For every training patient i it estimates the leave-one-out change

    Delta_i = theta_hat_{-i} - theta_hat                    (coefficients), or
    g_{-i} - g = J_g Delta_i [+ data effect]                 (a target g, :mod:`.targets`)

with one of the methods (docs/conventions.md)

    "auto"   VIF for every unit, exact refits of the units the audit is read for: the
             top ones by displacement until the top 10 cannot change, and every flagged
             unit; with a target other than the coefficients also the top ones by the
             target's change until its top 10 cannot change
             (``coxinfluence.audit.verification``); ``verified`` says which are exact
    "vif"    Delta_i = -VIF_n(i) / n           closed-form VIF (deletion of row i)
    "reid"   Delta_i = -IF_n(i) / n            Reid's IF; equals -R's resid(fit, "dfbeta")
    "newton" Delta_i = -H_{-i}^{-1} grad L_{-i}(theta_hat)   one-step Newton
    "exact"  Delta_i = theta_hat_{-i} - theta_hat            refit without row i

Beside the changes: standardised changes (dfbetas), ``Delta_i / se`` with
``se = sqrt(diag(J I^{-1} J'))``, the model-based SE also for a robust model, as R's
(for coefficients with ``method="reid"``: minus R's ``resid(fit, "dfbetas")``, since R
reports ``theta_hat - theta_hat_{-i}``), and the
likelihood displacement

    LD_i = 2 [logL(theta_hat) - logL(theta_hat_{-i})]   (exact: full-data logL at the refit)
    LD_i ~ Delta_i' I Delta_i                            (approximate methods; I = information)

(for a penalised lifelines model, logL is minus the penalised objective J and I its
Hessian: ``CoxFit.objective``, :mod:`coxinfluence.models.penalized_cox`), LMAX, and
``flags`` (:mod:`coxinfluence.influence_functions.stability`): units whose exact change does not
exist
(``undefined``), where the first-order estimate is predicted to be off (``unstable``),
whose refit failed (``refit_failed``), or that may belong in the top 10 but were not
refitted (``unverified_top``).

Target times past the last event time of the data (of the patient's stratum) are warned
about (:class:`~coxinfluence.audit.targets.TargetBeyondFollowUpWarning`, the target's
``followup_notes``) and kept on the result (``InfluenceResult.target_notes``).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import warnings

import numpy as np
import pandas as pd

from coxinfluence.audit.result import InfluenceResult, target_magnitude, unit_name_of
from coxinfluence.audit.targets import (
    TargetBeyondFollowUpWarning,
    describe_targets,
    resolve_target,
    target_change,
    target_exact,
)
from coxinfluence.audit.verification import (
    EXHAUSTIVE,
    EXHAUSTIVE_STEP,
    verify,
    verify_target,
)
from coxinfluence.influence_functions.any_fit import (
    LeaveOneOutWarning,
    SeamUnits,
    warn_undefined,
)
from coxinfluence.influence_functions.registry import audit_model as seam_of
from coxinfluence.models.base import register_audit
from coxinfluence.models.cox import ConvergenceWarning

__all__ = ["influence", "InfluenceResult", "METHODS", "FLAGS", "TopNotVerifiedWarning",
           "TargetBeyondFollowUpWarning"]

METHODS = ("auto", "vif", "reid", "newton", "exact")
FLAGS = ("undefined", "unstable", "refit_failed", "unverified_top")


def compute(model, resolved, method, target, *, progress=None, executor=None,
            include_data_effect=True, target_notes=()):
    """The audit of ``model`` (a seam, ``coxinfluence.influence_functions.seam``) by
    ``method``: an :class:`InfluenceResult`. ``resolved`` carries the training frame,
    the source library, the units' ``groups`` and whether SEs are robust;
    ``target_notes`` what ``influence()`` warned about the target (kept on the result)."""
    frame = model.unit_frame(resolved.frame)
    if method == "auto":
        return _compute_auto(model, resolved, target, frame, progress=progress,
                             executor=executor, include_data_effect=include_data_effect,
                             target_notes=target_notes)
    fit, units = model.fit, model.units
    if method == "exact":
        refits = model.refit(progress=progress, executor=executor)
        _warn_undefined(model, refits.codes[~refits.ok], "exact leave-one-out",
                        failed=refits.codes[refits.status == "refit_failed"])
        loo = refits.theta
        dtheta = loo - model.coef
        change = target_exact(fit, loo, target, units)
        # J(theta_hat) in the refits' batch: both terms of each displacement by one kernel
        values = model.objective(np.vstack([model.coef[None, :], loo]))
        objective_at_fit = values[0]
        objective_loo = np.where(refits.ok, values[1:], np.nan)
    else:
        refits = objective_loo = objective_at_fit = None
        dtheta = model.change(method)
        change = target_change(fit, dtheta, target, units,
                               include_data_effect=include_data_effect)
    return _result(model, resolved, method, target, frame, change, dtheta,
                   objective_loo=objective_loo, objective_at_fit=objective_at_fit,
                   refits=refits, fit_ok=model.converged,
                   include_data_effect=include_data_effect, target_notes=target_notes)


def _warn_undefined(model, codes, what, failed=()):
    """The leave-one-out warning naming the units ``codes`` (any seam: by its labels)."""
    warn_undefined(SeamUnits(model), codes, what, failed=failed)


def _result(model, resolved, method, target, frame, change, dtheta, *, target_notes=(),
            **kw):
    fit = model.fit
    notes = tuple(target_notes)
    return InfluenceResult(
        loo_change=pd.DataFrame(change, index=frame.index, columns=target.columns(fit)),
        theta_change=pd.DataFrame(dtheta, index=frame.index, columns=model.columns),
        method=method, target=target, fit=fit, frame=frame, source=resolved.source,
        _resolved=resolved, units=model.units, model=model,
        _rerun=lambda other, progress=None: compute(model, resolved, other, target,
                                                    progress=progress,
                                                    target_notes=notes),
        target_notes=notes, **kw)


def _compute_auto(model, resolved, target, frame, *, progress, executor,
                  include_data_effect, target_notes=()):
    """``method="auto"``: the VIF result, with exact refits (:func:`verify`) replacing
    it where the audit is read; for a target other than the coefficients also where its
    top is read (:func:`verify_target`)."""
    approx = compute(model, resolved, "vif", target, include_data_effect=include_data_effect,
                     target_notes=target_notes)
    if not model.converged:
        # no maximum to refit against: the VIF numbers, flagged by fit_ok (influence()
        # has warned, naming the diverging parameters)
        return dataclasses.replace(approx, method="auto", approx=approx, fit_ok=False)
    flags = approx.flags

    def refit(codes):
        return model.refit(codes, progress=progress, executor=executor)

    ver = verify(model, approx.ld_approx.to_numpy(), flags.to_numpy().any(axis=1),
                 refit=refit)
    unit_name = unit_name_of(model, resolved)
    if not ver.rule_met:
        warnings.warn(f"method='auto': {ver.describe(unit_name)}",
                      TopNotVerifiedWarning, stacklevel=4)
    units = model.units
    dtheta = approx.theta_change.to_numpy().copy()
    change = approx.loo_change.to_numpy().copy()
    if ranks_by_target(target):
        se = approx.dfbetas_se.to_numpy()      # target_influence's scale

        def exact_change(refits):
            loo = np.full_like(dtheta, np.nan)
            loo[refits.codes] = refits.theta
            return target_exact(model.fit, loo, target, units)[refits.codes]

        exhaustive = len(model.unit_labels) <= (EXHAUSTIVE if target.smooth
                                                else EXHAUSTIVE_STEP)
        if not exhaustive:
            # the rule's estimate, shown where no refit replaces it
            change = newton_rescored(model, target)
        ver = verify_target(model, ver, rankings(change, se), exact_change,
                            lambda values: rankings(values, se), refit=refit,
                            exhaustive=exhaustive, bounded=target.smooth)
        if not ver.target.rule_met:
            warnings.warn(f"method='auto': {ver.target.describe(unit_name)}",
                          TopNotVerifiedWarning, stacklevel=4)
        codes = ver.refits.codes
        change[codes] = ver.target.change_exact[codes]
    refits = ver.refits
    codes = refits.codes
    loo = np.full_like(dtheta, np.nan)
    loo[codes] = refits.theta
    dtheta[codes] = refits.theta - model.coef
    if codes.size and not ranks_by_target(target):
        exact_change = target_exact(model.fit, loo, target, units)
        change[codes] = exact_change[codes]
    # the full-data objective at the refits, from the displacements verify() computed
    objective_loo = ver.ld_exact / 2.0 + ver.objective_at_fit
    return _result(model, resolved, "auto", target, frame, change, dtheta,
                   objective_loo=objective_loo, objective_at_fit=ver.objective_at_fit,
                   refits=refits, verification=ver,
                   approx=approx, include_data_effect=include_data_effect,
                   target_notes=target_notes)


def newton_rescored(model, target):
    """(U, m) each unit's target change estimated by rescoring the target exactly at its
    one-step Newton coefficients ``theta_hat - H_{-g}^{-1} grad L_{-g}`` (on the data
    without the unit: ``Target.refit_values``); NaN where the step is undefined (those
    units are flagged and refitted first)."""
    with warnings.catch_warnings():
        # the undefined units are flagged (and refitted first): no second warning
        warnings.simplefilter("ignore", LeaveOneOutWarning)
        theta = model.coef[None, :] + model.change("newton")
    return target_exact(model.fit, theta, target, model.units)


def rankings(change, se):
    """(U, K) the values a reader ranks a target's changes (U, m) by: each column's
    ``|change_j| / se_j`` (``|change_j|`` where ``se_j`` is zero or not finite) and, for
    several columns, the largest standardised change (``target_influence``)."""
    change = np.abs(np.asarray(change, dtype=np.float64))
    se = np.asarray(se, dtype=np.float64)
    scale = np.where(np.isfinite(se) & (se > 0), se, 1.0)
    cols = change / scale
    if change.shape[1] == 1:
        return cols
    return np.column_stack([cols, target_magnitude(change, se)])


def ranks_by_target(target):
    """Whether ``auto`` also verifies the top by ``target``'s own change
    (:func:`~coxinfluence.audit.verification.verify_target`): for every target but the
    coefficients, whose top is the displacement's (hazard and time ratios included:
    their order, by the largest standardised change, need not be the displacement's)."""
    return target.name != "coef"


class TopNotVerifiedWarning(UserWarning):
    """``method="auto"`` could not verify the top units within its refit limit.

    The sentence says how many units were refitted and how many may still belong in the
    top 10; those units are flagged ``unverified_top``.

    See Also
    --------
    coxinfluence.influence : Issues it.

    Examples
    --------
    Make it an error:

    >>> import warnings
    >>> from coxinfluence.audit.run import TopNotVerifiedWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", TopNotVerifiedWarning)
    ...     issubclass(TopNotVerifiedWarning, UserWarning)
    True
    """


def influence(model, data=None, *, method="auto", target=None, include_data_effect=True,
              progress=None, executor=None, groups=None, robust=None,
              **options) -> InfluenceResult:
    r"""Influence of every training patient on a fitted survival model.

    For every unit of deletion g (a patient, a subject, a cluster) it estimates the
    leave-one-out change ``theta_hat_{-g} - theta_hat`` of the parameters, or
    ``g_{-g} - g`` of a target (hazard ratios, a survival probability, ...), with the
    standardised changes (dfbetas), the likelihood displacement, LMAX and flags for
    the numbers that cannot be trusted. By default (``method="auto"``) the numbers the
    audit is read for, the top ones, come from exact refits.

    Parameters
    ----------
    model : fitted model
        One of:

        - a ``CoxFit`` (:func:`~coxinfluence.fit_cox`);
        - a fitted lifelines ``CoxPHFitter`` (then ``data`` is its training DataFrame:
          formulas, strata, weights are read from the fitter), or a lifelines
          ``CoxTimeVaryingFitter``;
        - a statsmodels ``PHRegResults``;
        - a parametric AFT model: an ``AFTFit`` (:func:`~coxinfluence.fit_aft`, R's
          ``survreg``) or a fitted lifelines ``WeibullAFTFitter``,
          ``LogNormalAFTFitter``, ``LogLogisticAFTFitter`` (audited by
          ``coxinfluence.influence_functions.aft_audit.AFTAudit`` in R's
          parametrisation, results indexed like the model's ``params_``:
          ``coxinfluence.influence_functions.reparametrised``);
        - any other lifelines parametric regression (``ancillary`` AFT fits,
          ``PiecewiseExponentialRegressionFitter``, ``GeneralizedGammaRegressionFitter``,
          ``CoxPHFitter`` with a spline or piecewise baseline, a user's
          ``ParametricRegressionFitter``: its own likelihood, audited by
          ``DecomposableAudit``);
        - a ``FineGrayFit`` (:func:`~coxinfluence.fit_fine_gray`; its units are its
          subjects);
        - a fitted scikit-survival ``CoxPHSurvivalAnalysis`` or
          ``CoxnetSurvivalAnalysis`` (with ``y=``);
        - a model behind the seam (``coxinfluence.influence_functions.seam``, e.g. an
          autodiff model), used as it is.

    data : DataFrame, optional
        The training DataFrame: required for lifelines (the frame the model was fitted
        on) and for scikit-survival (its training ``X``); otherwise optional extra
        columns for the ``top`` table.
    method : {"auto", "vif", "reid", "newton", "exact"}, default "auto"
        ``"auto"``: the VIF for every unit and exact refits where the audit is read (the
        top units by likelihood displacement until the top 10 cannot change, every
        flagged unit, and, for a target other than the coefficients, the top units by
        the target's change until its top 10 cannot change either, ``top(k,
        by="target")``; ``coxinfluence.audit.verification``), ``verified`` saying which
        numbers are exact. Or one method throughout: ``"vif"`` (the closed-form VIF,
        deletion of the unit), ``"reid"`` (Reid's IF), ``"newton"`` (one-step Newton),
        ``"exact"`` (refit without each unit); Notes.
    target : None, str or Target, optional
        What to attribute: None or ``"coef"`` (the coefficients), ``"hr"`` (hazard
        ratios; Cox, Fine-Gray), ``"tr"`` (time ratios ``exp(coef)`` of an AFT model's
        covariates), or a target of :mod:`coxinfluence.targets` for new patients
        (``RelativeRisk(X_new)``, ``LinearPredictor(X_new)``, ``Survival(X_new,
        times)``, ``Quantile(X_new, p)``, ``CumulativeIncidence(X_new, times)``), each
        evaluated as the model's own (for a lifelines parametric model ``Survival`` is
        its ``predict_survival_function``). New patients may be raw frames for lifelines
        formula models (transformed as lifelines does).
    include_data_effect : bool, default True
        For survival and cumulative-incidence targets, add the baseline hazard's direct
        dependence on the removed unit (:mod:`~coxinfluence.targets`).
    progress : bool, optional
        Show a progress bar of the exact refits (``method="exact"`` and ``"auto"``);
        default: when there are more than 2000 units to refit.
    executor : concurrent.futures.Executor, optional
        Where the exact refits run (``method="exact"`` and ``"auto"``): a
        ``concurrent.futures.Executor`` (e.g. ``ProcessPoolExecutor``) or a
        ``dask.distributed.Client``; results are identical to the serial run.
    groups : array_like, optional
        The units of deletion, one label per training row (caller's order): a cluster (a
        hospital) is deleted whole. Default: the model's subjects (a ``CoxFit`` or an
        ``AFTFit`` with ``id=``, a lifelines ``CoxTimeVaryingFitter``'s ``id_col``; a
        Fine-Gray fit's rows are its subjects), or its clusters (a lifelines
        ``cluster_col``), else the rows. Results are then indexed by the sorted unit
        labels, and ``top(k)`` shows each unit's rows, follow-up span and events.
    robust : bool, optional
        Whether the SE the result reports (``target_se``, the report's coefficient table)
        is the robust (grouped sandwich) SE of the units (True) or the model-based one
        (False); default: as the model reports its SE (lifelines ``robust=True`` or
        ``cluster_col``: robust; a ``CoxFit``: its ``robust_default``, robust for
        non-integer case weights, as R's ``coxph``). dfbetas divide by the model-based SE
        whatever it is, as R's ``residuals(fit, "dfbetas")`` (``dfbetas_robust``: by the
        robust SE).
    **options
        Options of the model's family (``coxinfluence.influence_functions.registry``);
        for a fitted scikit-survival ``CoxPHSurvivalAnalysis`` or
        ``CoxnetSurvivalAnalysis`` (then ``data`` is its training ``X``): ``y`` its
        training structured array, and for Coxnet ``alpha``, the alpha audited (one of
        its ``alphas_``; default its only one) (``coxinfluence.integrations.sksurv``).

    Returns
    -------
    InfluenceResult
        One row per unit: ``loo_change``, ``theta_change``, ``dfbetas``,
        ``likelihood_displacement``, ``lmax``, ``flags``, ``verified``, ``top(k)``.

    Raises
    ------
    ValueError
        If ``method`` is not one of the five, the target is unknown or not available for
        the model, ``y=``/``alpha=`` are given for a model that is not a scikit-survival
        estimator, or ``groups=``/``robust=`` for a model whose units are fixed.

    Warns
    -----
    TargetBeyondFollowUpWarning
        For each stratum where a target time is past the last event time of the data
        (``S(t|x)``, ``F(t|x)``: the last plateau; a parametric model's ``S(t|x)``: its
        extrapolation); the sentences are kept in ``InfluenceResult.target_notes``.
    TopNotVerifiedWarning
        ``method="auto"`` could not make its top 10 certain within its refit limit.
    LeaveOneOutWarning
        With ``method="exact"``: one warning naming the units whose refit does not exist
        (a covariate left constant, no event left) or failed; their numbers are NaN and
        they are flagged (``undefined``, ``refit_failed``).

    See Also
    --------
    InfluenceResult : What is returned.
    coxinfluence.vif : The VIF alone, on the paper's scale.
    coxinfluence.exact_loo : The exact leave-one-out refits alone.

    Notes
    -----
    The methods, with :math:`\Delta_g = \hat\theta_{-g} - \hat\theta` the change when unit
    :math:`g` is deleted, :math:`n` the number of units and :math:`H` the Hessian of the
    loss :math:`L` (the negative log partial likelihood):

    ============  ================================================  ========================
    ``method``    estimate of :math:`\Delta_g`                      what it is
    ============  ================================================  ========================
    ``"vif"``     :math:`-\mathrm{VIF}_n(g) / n`                    the closed-form VIF
                                                                    (deletion of unit g)
    ``"reid"``    :math:`-\mathrm{IF}_n(g) / n`                     Reid's IF: minus R's
                                                                    ``resid(fit, "dfbeta")``
    ``"newton"``  :math:`-H_{-g}^{-1} \nabla L_{-g}(\hat\theta)`    one-step Newton
    ``"exact"``   :math:`\hat\theta_{-g} - \hat\theta`              refit without unit g
    ============  ================================================  ========================

    A target changes by :math:`J_g \Delta_g` (plus the data effect of a baseline
    estimated from the data). Standardised changes (dfbetas) are :math:`\Delta_g /
    \mathrm{se}` with :math:`\mathrm{se} = \sqrt{\operatorname{diag}(J I^{-1} J^\top)}`,
    the model-based SE whatever ``robust`` (R's ``fit$naive.var``; ``dfbetas_robust``
    divides by the robust SE) (for coefficients with ``method="reid"``: minus R's
    ``resid(fit, "dfbetas")``, since R reports :math:`\hat\theta - \hat\theta_{-g}`). The
    likelihood displacement is

    .. math::

        \mathrm{LD}_g = 2 \left[\log L(\hat\theta) - \log L(\hat\theta_{-g})\right]

    (exact: the full-data log likelihood at the refit),
    :math:`\mathrm{LD}_g \approx \Delta_g^\top I \Delta_g` for the approximate methods
    (:math:`I` the information); for a penalised lifelines model, :math:`\log L` is minus
    the penalised objective and :math:`I` its Hessian.

    The VIF is from "A Versatile Influence Function for Data Attribution with
    Non-Decomposable Loss"; Reid's IF from Reid and Crepeau (1985).

    Examples
    --------
    Audit a lifelines model on its training data:

    >>> from lifelines import CoxPHFitter
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> cph = CoxPHFitter().fit(rossi, duration_col="week", event_col="arrest")
    >>> res = ci.influence(cph, rossi)
    >>> res
    InfluenceResult(method='auto', target='coef', patients=432, columns=7, verified=29,
                    source='lifelines')
    >>> cols = ["change age", "change prio", "likelihood_displacement", "verified"]
    >>> res.top(3)[cols].round(4)
         change age  change prio  likelihood_displacement  verified
    100     -0.0105       0.0008                   0.2461      True
    118     -0.0081       0.0018                   0.1687      True
    180     -0.0085       0.0012                   0.1650      True

    One method throughout, on a model fitted here:

    >>> X = rossi[["fin", "age", "prio"]]
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> ci.influence(fit, method="reid").loo_change.head(3).round(5)
           fin      age     prio
    0  0.01448 -0.00178  0.00036
    1  0.01204  0.00146 -0.00247
    2  0.00829  0.00060 -0.00352
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    audit_model, resolved = seam_of(model, data, groups=groups, robust=robust, **options)
    allowed = tuple(audit_model.target_names)
    target = copy.copy(resolve_target(target, allowed, audit_model.model_name))
    if target.name not in allowed and not target.generic:
        raise ValueError(f"target {target.name!r} is not available for this model "
                         f"({audit_model.model_name}); its targets are "
                         f"{describe_targets(allowed)} (ci = coxinfluence)")
    if target.transform is None and resolved.transform is not None:
        target.transform = resolved.transform
    target = audit_model.adapt_target(target)     # a seam in another parametrisation
    notes = tuple(target.followup_notes(audit_model.fit))
    for note in notes:
        warnings.warn(note, TargetBeyondFollowUpWarning, stacklevel=2)
    quiet = contextlib.nullcontext()
    if not audit_model.converged and method != "exact":   # exact refits refuse (the seam)
        # One rule for every family (the low-level functions raise NotConvergedError): the
        # result is kept, every unit flagged, with one warning; its numbers are not
        # meaningful, so numpy's own warnings about them add nothing
        warnings.warn(not_converged_message(audit_model, resolved), ConvergenceWarning,
                      stacklevel=2)
        quiet = np.errstate(all="ignore")
    with quiet:
        return compute(audit_model, resolved, method, target, progress=progress,
                       executor=executor, include_data_effect=include_data_effect,
                       target_notes=notes)


def not_converged_message(model, resolved):
    """The audit's one warning for a fit that did not converge (any family's seam)."""
    header = model.report_header()
    which = (f": the parameters {list(header.diverging)} diverge (monotone likelihood, e.g. "
             "a covariate that separates the events, or collinear covariates)"
             if header.diverging else "")
    return (f"influence: the {header.name} fit did not converge{which}. Influence is "
            "measured against a maximum that does not exist: every "
            f"{unit_name_of(model, resolved)[:-1]} is flagged 'unstable' and no number "
            "can be trusted; a ridge penalty or removing the covariate gives a model with "
            "a maximum")


register_audit(influence)      # fit.influence(...) is ci.influence(fit, ...) (models/base.py)

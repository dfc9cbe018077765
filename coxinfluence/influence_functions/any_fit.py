"""The low-level influence functions and leave-one-out refits for any fit.

``ci.vif``, ``ci.reid_influence``, ``ci.newton_loo`` and ``ci.exact_loo``: each takes
every fit ``ci.influence`` audits by itself and returns one convention, with ``n`` the
number of units and ``fit.coef`` the fitted parameters::

    ci.vif(fit)            = -n * ci.influence(fit, method="vif").theta_change
    ci.reid_influence(fit) = -n * ci.influence(fit, method="reid").theta_change
    ci.newton_loo(fit)     = fit.coef + ci.influence(fit, method="newton").theta_change
    ci.exact_loo(fit)      = fit.coef + ci.influence(fit, method="exact").theta_change

``vif`` and ``reid_influence`` are on the paper's scale (``IF_n``, ``VIF_n``, approximating
``n (theta_hat - theta_hat_{-g})``); ``newton_loo`` and ``exact_loo`` are (estimates of)
the refitted coefficients ``theta_hat_{-g}``, not changes.

Each fit is dispatched by the registry ``ci.influence`` uses
(:mod:`coxinfluence.influence_functions.registry`) and goes through the seam
``ci.influence`` builds for it (:func:`family_seam`; a ``CoxFit``: ``CoxAudit``, its
batched closed forms with the options documented here). A lifelines, statsmodels or
scikit-survival model keeps no training data (its family's ``needs_data``):
``ci.influence(model, data, method=...)`` audits it.
"""
from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError
from coxinfluence.influence_functions.deleted_hessians import _METHODS as _COX_METHODS
from coxinfluence.influence_functions.registry import audit_model, families, family_of
from coxinfluence.influence_functions.seam import AuditModel
from coxinfluence.models.cox import ConvergenceWarning, NotConvergedError

__all__ = ["vif", "reid_influence", "newton_loo", "exact_loo", "family_seam"]


def vif(fit, *, method="auto", groups=None):
    r"""The VIF of every unit, on the paper's scale.

    .. math::

        \mathrm{VIF}_n(g) = -\left(\frac{H}{n}\right)^{-1}
            \left(\nabla L(\hat\theta) - \nabla L_{-g}(\hat\theta)\right),

    with :math:`n` the number of units, :math:`H` the Hessian of the loss :math:`L` at
    :math:`\hat\theta` and :math:`L_{-g}` the loss with all rows of unit :math:`g` deleted.
    It is ``-n * ci.influence(fit, method="vif").theta_change`` and approximates
    :math:`n (\hat\theta - \hat\theta_{-g})`; the estimated leave-one-out change is
    :math:`-\mathrm{VIF}_n(g) / n`.

    Parameters
    ----------
    fit : CoxFit, AFTFit, FineGrayFit, DecomposableFit or seam object
        A fit of this package (``ci.fit_cox``, ``ci.fit_aft``, ``ci.fit_fine_gray``), a
        ``DecomposableFit``, or a seam object itself (an autodiff ``AutodiffModel``); see
        the module docstring for how each family is handled. A lifelines, statsmodels or
        scikit-survival model keeps no training data: use ``ci.influence(model, data,
        method="vif")``.
    method : {"auto", "series", "direct"}, default "auto"
        The Cox algorithm
        (``coxinfluence.influence_functions.vif.gradient_differences``); the other
        families have one closed form, whichever name is given.
    groups : array-like, optional
        Clusters deleted whole: one label per row, in the caller's order. Default: the
        fit's subjects (``id=``) when it has them, else its rows. Not for a Fine-Gray fit,
        whose units are its subjects.

    Returns
    -------
    numpy.ndarray or pandas.DataFrame
        ``(n_units, d)``, one column per parameter of the fit. Rows in the caller's order
        (a DataFrame with the caller's index for pandas input, else an ndarray); subjects
        and clusters as a DataFrame indexed by their sorted labels.

    Raises
    ------
    TypeError
        ``fit`` is not a fit of this package nor a seam object.
    ValueError
        ``method`` is not one of the names above.
    NotImplementedError
        ``groups`` for a ridge-penalised ``CoxFit`` (its rows only).
    coxinfluence.InputError
        ``groups`` does not have one label per row, or is given for a fit whose units are
        fixed (Fine-Gray, a seam object).
    coxinfluence.NotConvergedError
        The fit did not converge (every family: there is no maximum to measure the
        change against; ``ci.influence`` keeps its result, every unit flagged).

    See Also
    --------
    reid_influence : Reid's empirical influence function, the infinitesimal version.
    newton_loo : one-step Newton estimates of the refitted coefficients.
    exact_loo : the exact leave-one-out refits (the ground truth).
    coxinfluence.influence : the audit, with the same quantities as changes.

    Notes
    -----
    For a Cox fit the closed form equals the definition (the gradient with unit ``g``
    deleted) to rounding error, for Efron and Breslow ties, with strata and weights. For an
    ``AFTFit`` (a decomposable loss) it is Reid's IF exactly. For a ``FineGrayFit`` a
    deletion also re-estimates the censoring Kaplan-Meier.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi.drop(columns=["week", "arrest"]), rossi["week"],
    ...                  rossi["arrest"])
    >>> v = ci.vif(fit)
    >>> v.shape
    (432, 7)
    >>> print(v.iloc[0].round(3).to_string())
    fin     -6.104
    age      1.203
    race     3.030
    wexp   -10.795
    mar     -3.483
    paro     6.387
    prio    -0.406

    The estimated leave-one-out change of the coefficients, ``-VIF_n / n``, is the
    audit's ``theta_change``:

    >>> n = len(rossi)
    >>> bool(np.allclose(-v / n, ci.influence(fit, method="vif").theta_change))
    True

    Clusters deleted whole, here the groups of equal ``prio``:

    >>> ci.vif(fit, groups=rossi["prio"]).shape
    (17, 7)
    """
    model = family_seam(fit, groups, "vif", method=method, refuse=True)
    return _wrap(model, model.paper_vif())


def reid_influence(fit, groups=None):
    r"""Reid's (1985) empirical influence function of every unit, on the paper's scale.

    :math:`\mathrm{IF}_n(g)` is ``-n * ci.influence(fit, method="reid").theta_change``,
    with :math:`n` the number of units: the infinitesimal (case-weight derivative) version
    of the VIF, which approximates :math:`n (\hat\theta - \hat\theta_{-g})`.

    - For a ``CoxFit``, ``IF_n / n`` is R's ``resid(fit, "dfbeta")`` (``collapse=id`` for
      subjects and clusters); the score residuals are
      ``coxinfluence.influence_functions.reid.score_residuals``.
    - For an ``AFTFit`` it is the VIF (a decomposable loss) and ``w_i`` times R's
      ``residuals(survreg, "dfbeta")`` (which is per unit of case weight).
    - For a ``FineGrayFit`` it is crr's influence function, censoring term included
      (:math:`\sum_g (\mathrm{IF}_n(g)/n)(\mathrm{IF}_n(g)/n)^\top` is crr's sandwich
      variance).

    Parameters
    ----------
    fit : CoxFit, AFTFit, FineGrayFit, DecomposableFit or seam object
        A fit of this package, as for :func:`vif`.
    groups : array-like, optional
        Clusters deleted whole: one label per row, in the caller's order. Default: the
        fit's subjects (``id=``) when it has them, else its rows. Not for a Fine-Gray fit.

    Returns
    -------
    numpy.ndarray or pandas.DataFrame
        ``(n_units, d)``, laid out as :func:`vif`'s: rows in the caller's order (a
        DataFrame with the caller's index for pandas input, else an ndarray), subjects and
        clusters as a DataFrame indexed by their sorted labels.

    Raises
    ------
    TypeError
        ``fit`` is not a fit of this package nor a seam object.
    coxinfluence.InputError
        ``groups`` does not have one label per row, or is given for a fit whose units are
        fixed (Fine-Gray, a seam object).
    coxinfluence.NotConvergedError
        The fit did not converge (every family: there is no maximum to measure the
        change against; ``ci.influence`` keeps its result, every unit flagged).

    See Also
    --------
    vif : the influence of deleting the unit (the paper's VIF).
    score_residuals : R's score residuals of a Cox fit.
    coxinfluence.influence : the audit, with the same quantities as changes.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi.drop(columns=["week", "arrest"]), rossi["week"],
    ...                  rossi["arrest"])
    >>> reid = ci.reid_influence(fit)
    >>> print(reid.iloc[0].round(3).to_string())
    fin     -6.103
    age      1.201
    race     3.023
    wexp   -10.778
    mar     -3.474
    paro     6.371
    prio    -0.405

    R's ``resid(fit, "dfbeta")`` is ``IF_n / n``:

    >>> dfbeta = reid / len(rossi)
    >>> print(dfbeta.iloc[0].round(5).to_string())
    fin    -0.01413
    ...

    For a parametric (AFT) model the loss is decomposable and the VIF is Reid's IF:

    >>> aft = ci.fit_aft(rossi.drop(columns=["week", "arrest"]), rossi["week"],
    ...                  rossi["arrest"])
    >>> bool(np.allclose(ci.reid_influence(aft), ci.vif(aft)))
    True
    """
    model = family_seam(fit, groups, "reid_influence", refuse=True)
    return _wrap(model, -_n_units(model) * model.change("reid"))


def newton_loo(fit, *, groups=None, method="auto"):
    """One-step Newton estimates of the refitted coefficients of every unit.

    ``theta_hat - H_{-g}^{-1} grad L_{-g}(theta_hat)``, the first Newton step of the
    refit without unit ``g`` (the leave-one-out Hessian, where the VIF uses the full-data
    one): ``fit.coef + ci.influence(fit, method="newton").theta_change``. For an
    ``AFTFit`` ``H_{-g} = H - C_g`` exactly; for a ``FineGrayFit`` the deleted gradients
    and Hessians are in closed form, the censoring Kaplan-Meier re-estimated.

    Parameters
    ----------
    fit : CoxFit, AFTFit, FineGrayFit, DecomposableFit or seam object
        A fit of this package, as for :func:`vif`.
    groups : array-like, optional
        Clusters deleted whole: one label per row, in the caller's order. Default: the
        fit's subjects (``id=``) when it has them, else its rows. Not for a Fine-Gray fit.
    method : {"auto", "series", "direct"}, default "auto"
        The Cox algorithm for the deleted Hessians
        (``coxinfluence.influence_functions.deleted_hessians.deleted_hessians``) and
        gradients (as :func:`vif`'s); the other families have one closed form, whichever
        name is given.

    Returns
    -------
    numpy.ndarray or pandas.DataFrame
        ``(n_units, d)`` estimates of ``theta_hat_{-g}`` (coefficients, not changes), laid
        out as :func:`vif`'s. NaN where the deleted problem has no estimate (``H_{-g}``
        singular, or the deletion leaves the design rank deficient).

    Raises
    ------
    TypeError
        ``fit`` is not a fit of this package nor a seam object.
    ValueError
        ``method`` is not one of the names above.
    NotImplementedError
        ``groups`` for a ridge-penalised ``CoxFit`` (its rows only).
    coxinfluence.InputError
        ``groups`` does not have one label per row, or is given for a fit whose units are
        fixed (Fine-Gray, a seam object).
    coxinfluence.NotConvergedError
        The fit did not converge (every family: there is no maximum to measure the
        change against; ``ci.influence`` keeps its result, every unit flagged).

    Warns
    -----
    coxinfluence.LeaveOneOutWarning
        One warning naming the units whose estimate is NaN.

    See Also
    --------
    exact_loo : the exact refits, which start from a refinement of this step.
    vif : the same with the full-data Hessian, on the paper's scale.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi.drop(columns=["week", "arrest"]), rossi["week"],
    ...                  rossi["arrest"])
    >>> loo = ci.newton_loo(fit)
    >>> print(loo.iloc[2].round(4).to_string())
    fin    -0.3708
    age    -0.0559
    race    0.3704
    wexp   -0.1819
    mar    -0.4110
    paro   -0.1007
    prio    0.0852
    >>> change = loo - fit.coef  # the estimated leave-one-out change
    >>> bool(np.allclose(change, ci.influence(fit, method="newton").theta_change))
    True
    """
    model = family_seam(fit, groups, "newton_loo", method=method, refuse=True)
    with warnings.catch_warnings():     # a seam's own warning (Cox's): this one instead
        warnings.simplefilter("ignore", LeaveOneOutWarning)
        change = model.change("newton")
    theta = np.asarray(model.coef, dtype=np.float64) + change
    warn_undefined(SeamUnits(model), np.flatnonzero(~np.isfinite(theta).all(axis=1)),
                   "one-step Newton leave-one-out")
    return _wrap(model, theta)


def exact_loo(fit, *, groups=None, executor=None, progress=None, batch_size=None, tol=None,
              max_iter=50, n_chunks=None):
    """The exact leave-one-out coefficients of every unit, by refitting without it.

    ``theta_hat_{-g}`` for every unit ``g``: the model refitted without all rows of the
    unit, to ``max |gradient| <= 1e-10``. It is ``fit.coef + ci.influence(fit,
    method="exact").theta_change``; ``exact_loo(fit) - fit.coef`` is the exact change, the
    ground truth for every approximation (:func:`vif`, :func:`reid_influence`,
    :func:`newton_loo`).

    Parameters
    ----------
    fit : CoxFit, AFTFit, FineGrayFit, DecomposableFit or seam object
        A fit of this package, as for :func:`vif`. It must have converged.
    groups : array-like, optional
        Clusters deleted whole: one label per row, in the caller's order. Default: the
        fit's subjects (``id=``) when it has them, else its rows. Not for a Fine-Gray fit.
    executor : concurrent.futures.Executor or dask.distributed.Client, optional
        Runs the refits in parallel, as ``ci.influence``'s ``executor``.
    progress : bool, optional
        Show a progress bar, as ``ci.influence``'s ``progress`` (default: for a Cox fit,
        when there are more than 2000 units).
    batch_size : int, optional
        Cox only: refits evaluated together as one batch of array operations.
    tol : float, optional
        Cox only: the refits' convergence tolerance on ``max |gradient|`` (default
        ``fit.tol``, 1e-10).
    max_iter : int, default 50
        Cox only: the refits' iterations.
    n_chunks : int, optional
        Cox only: the number of chunks submitted to ``executor``.

    Returns
    -------
    numpy.ndarray or pandas.DataFrame
        ``(n_units, d)`` refitted coefficients ``theta_hat_{-g}`` (not changes), laid out
        as :func:`vif`'s. NaN where a refit does not exist (the deletion leaves no maximum)
        or failed; where a covariate loses its rank, NaN for those coefficients only.

    Raises
    ------
    TypeError
        ``fit`` is not a fit of this package nor a seam object.
    NotImplementedError
        ``groups`` for a ridge-penalised ``CoxFit`` (its rows only).
    coxinfluence.InputError
        ``batch_size``, ``tol``, ``max_iter`` or ``n_chunks`` given for a fit that is not
        a ``CoxFit``; ``groups`` not one label per row, or given for a fit whose units are
        fixed (Fine-Gray, a seam object).
    coxinfluence.NotConvergedError
        The fit did not converge: there is no maximum to measure the refits against.

    Warns
    -----
    coxinfluence.LeaveOneOutWarning
        One warning naming the units whose refit is NaN (undefined, or failed).

    See Also
    --------
    newton_loo : the first Newton step of these refits.
    vif : the closed-form approximation, on the paper's scale.
    coxinfluence.influence : the audit, which refits the most influential units exactly.

    Notes
    -----
    For a ``CoxFit`` the refits are warm-started at the closed-form Halley estimate and
    batched (``coxinfluence.influence_functions.engine_refits``): every unit is refitted
    in the same batch as in the serial run, so results with an executor are bit-for-bit
    those of the serial run; on a dask cluster the data are scattered once to every
    worker.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi.drop(columns=["week", "arrest"]), rossi["week"],
    ...                  rossi["arrest"])
    >>> loo = ci.exact_loo(fit)
    >>> print(loo.iloc[2].round(4).to_string())
    fin    -0.3709
    age    -0.0559
    race    0.3716
    wexp   -0.1818
    mar    -0.4113
    paro   -0.1007
    prio    0.0852

    The exact change against the VIF's estimate ``-VIF_n / n``:

    >>> exact = loo - fit.coef
    >>> approx = -ci.vif(fit) / len(rossi)
    >>> print(round(float(np.corrcoef(exact["race"], approx["race"])[0, 1]), 4))
    0.9997
    """
    options = {"batch_size": batch_size, "tol": tol, "n_chunks": n_chunks,
               "max_iter": None if max_iter == 50 else max_iter}
    options = {name: value for name, value in options.items() if value is not None}
    family = family_of(fit)
    refused = [name for name in options if family is None or name not in family.refit_options]
    if refused:
        takers = " or ".join(f.description.split(" (")[0] for f in families()
                             if set(refused) <= set(f.refit_options))
        raise InputError(f"exact_loo: {', '.join(refused)} apply to {takers} only; this is "
                         f"a {type(fit).__name__}")
    model = family_seam(fit, groups, "exact_loo", refuse=True)
    res = model.refit(progress=progress, executor=executor, **options)
    warn_undefined(SeamUnits(model), res.codes[~res.ok], "exact leave-one-out",
                   failed=res.codes[res.status == "refit_failed"])
    return _wrap(model, res.theta)


def family_seam(fit, groups, what, method=None, refuse=False):
    """The seam ``ci.influence(fit)`` uses for a fit that keeps its training data.

    The registered family that accepts ``fit`` builds it: by its ``low_level`` where it
    has one (a ``CoxFit`` -> ``CoxAudit(fit, groups, method)``, which checks the fit
    itself, naming the diverging covariates), else by
    :func:`coxinfluence.influence_functions.registry.audit_model` with ``data=None``
    (``AFTFit`` -> ``AFTAudit(fit, groups)``, ``FineGrayFit`` -> ``FineGrayAudit``, a
    ``DecomposableFit`` -> ``DecomposableAudit``); a seam object is used itself. A fit
    that did not converge gets a :class:`~coxinfluence.ConvergenceWarning`, or, with
    ``refuse=True`` (exact refits), a :class:`~coxinfluence.NotConvergedError`.

    Parameters
    ----------
    fit : AFTFit, FineGrayFit, DecomposableFit, CoxFit or seam object
        The fit (of any registered family whose fits keep their training data).
    groups : array-like or None
        Clusters deleted whole (one label per row); None for the fit's own units.
    what : str
        The caller's name, for messages.
    method : str, optional
        The closed forms' algorithm, checked (one of "auto", "series", "direct"; the Cox
        family's, the others have one).
    refuse : bool, default False
        Raise instead of warning when the fit did not converge.

    Returns
    -------
    AuditModel
        The seam object.

    Raises
    ------
    TypeError
        No registered family accepts ``fit``, or its family's models keep no training
        data (lifelines, statsmodels, scikit-survival).
    ValueError
        ``method`` is not a known name.
    coxinfluence.InputError
        ``groups`` given for a fit whose units are fixed (Fine-Gray, a seam object).
    coxinfluence.NotConvergedError
        With ``refuse=True``, the fit did not converge.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> from coxinfluence.influence_functions.any_fit import family_seam
    >>> rossi = load_rossi()
    >>> aft = ci.fit_aft(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> model = family_seam(aft, None, "vif")
    >>> model.model_name, len(model.unit_labels)
    ('Weibull AFT (survreg)', 432)
    """
    if method is not None and method not in _COX_METHODS:      # the Cox algorithms' names
        raise ValueError(f"method must be one of {_COX_METHODS}; got {method!r}")
    family = family_of(fit)
    known = family is not None or isinstance(fit, AuditModel)    # a seam: no family's
    if not known or (family is not None and family.needs_data):
        kept = "; ".join(f.description for f in families() if not f.needs_data)
        without = [f.name for f in families() if f.needs_data]
        without = ", ".join(without[:-1]) + (" or " if len(without) > 1 else "") + \
            "".join(without[-1:])
        raise TypeError(f"{what}: expected a fit that keeps its training data ({kept}) or "
                        f"an audit seam; got {type(fit).__name__}. A {without} model keeps "
                        "no training data: use ci.influence(model, data, method=...)")
    if family is not None and family.low_level is not None:
        return family.low_level(fit, groups, what, method=method, refuse=refuse)
    model, _ = audit_model(fit, None, groups=groups)
    if not model.converged:
        msg = (f"{what}: the {model.model_name} fit did not converge: influence is measured "
               "against a maximum that does not exist")
        if refuse:
            raise NotConvergedError(msg)
        warnings.warn(msg + "; the values returned are not meaningful", ConvergenceWarning,
                      stacklevel=3)
    return model


def _n_units(model):
    """The seam's number of units: the ``n`` of the paper's scale."""
    return len(model.unit_labels)


def _wrap(model, values):
    """Per-unit values (U, d) of a seam laid out as for a ``CoxFit``: an ndarray for rows
    given as arrays, else a DataFrame indexed by the unit labels (the caller's index for
    rows; the seam's :class:`~coxinfluence.data.units.Units` where it has them) with the
    parameters' names as columns."""
    values = np.asarray(values, dtype=np.float64)
    units = model.units
    if units is None:
        if model.units_are_rows and model.fit.index is None:    # FitProtocol.index
            return values
        index = model.unit_labels
    elif units.is_rows and units.data.index is None:
        return values
    else:
        index = units.labels
    return pd.DataFrame(values, index=index, columns=_column_index(tuple(model.columns)).copy())


@lru_cache(maxsize=64)
def _column_index(names):
    """The columns' ``pandas.Index`` of the parameters ``names`` (a tuple), built once per
    set of names (the caller gets a copy: the same labels and dtype as ``pd.Index(list(
    names))``, in a fraction of its time)."""
    return pd.Index(list(names))


class LeaveOneOutWarning(UserWarning):
    """Some leave-one-out refits are undefined (unidentifiable model or divergence).

    Issued once per call by :func:`coxinfluence.exact_loo` and
    :func:`coxinfluence.newton_loo` (and the audit), naming the rows or units whose result
    is NaN: their removal leaves a coefficient unidentifiable (for example the only
    patient with a given level of a dummy covariate: the column is then constant), makes
    the fit diverge (separation), or their refit failed to converge. Only the affected
    coefficients are NaN; the others are refitted without the unidentifiable columns when
    possible.

    See Also
    --------
    coxinfluence.exact_loo : exact refits, NaN where undefined.
    coxinfluence.newton_loo : one-step Newton estimates, NaN where undefined.

    Examples
    --------
    Row 0 is the only one with ``x1 = 1``: without it ``x1`` is constant.

    >>> import warnings
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.normal(size=30), np.r_[1.0, np.zeros(29)]])
    >>> fit = ci.fit_cox(X, rng.exponential(size=30), np.ones(30))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     loo = ci.exact_loo(fit)
    >>> caught[0].category is ci.LeaveOneOutWarning
    True
    >>> print(caught[0].message)
    exact leave-one-out: undefined: the removal leaves the model unidentifiable or without
    a maximum for 1 row(s) (rows 0); their affected coefficients are NaN
    >>> print(np.round(loo[0], 4))
    [0.2128    nan]
    """


def warn_undefined(units, codes, what, failed=()):
    """One :class:`LeaveOneOutWarning` naming the units ``codes`` whose result is NaN
    (``failed``: those among them whose refit did not converge, named apart)."""
    if codes.size == 0:
        return
    kind = "row" if units.is_rows else "unit"
    failed = np.intersect1d(codes, failed)
    undefined = np.setdiff1d(codes, failed)
    parts = []
    for which, text in ((undefined, "undefined: the removal leaves the model unidentifiable "
                         "or without a maximum"), (failed, "failed to converge")):
        if which.size:
            labels = units.describe(which)
            shown = ", ".join(str(v) for v in labels[:20]) + (", ..." if len(labels) > 20
                                                              else "")
            parts.append(f"{text} for {len(labels)} {kind}(s) ({kind}s {shown})")
    warnings.warn(f"{what}: " + "; ".join(parts) + "; their affected coefficients are NaN",
                  LeaveOneOutWarning, stacklevel=3)


class SeamUnits:
    """What :func:`warn_undefined` reads of a seam's units (any model behind the seam,
    :mod:`coxinfluence.influence_functions.seam`): their labels and whether they are
    rows."""

    def __init__(self, model):
        self.labels = model.unit_labels
        self.is_rows = bool(model.units_are_rows)

    def describe(self, codes):
        """The labels of the units at positions ``codes``."""
        return list(self.labels[np.asarray(codes, dtype=int)])

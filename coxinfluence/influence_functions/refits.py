"""Leave-one-out refits of the Cox model: exact (ground truth) and one-step Newton.

``exact_loo`` refits the model without each row (or unit) by the influence engine's one
batched loop (:mod:`coxinfluence.influence_functions.engine_refits`) with the Cox kernels
(:class:`~coxinfluence.influence_functions.engine_cox.CoxEngine`); ``newton_loo`` is that
refit's first Newton step, ``theta_hat - H_{-i}(theta_hat)^{-1} grad L_{-i}(theta_hat)``
(the leave-one-out Hessian, where VIF uses the full-data one). Units whose removal leaves
a coefficient unidentifiable or makes the fit diverge get NaN for the affected
coefficients, with one :class:`LeaveOneOutWarning` naming them.
"""
from __future__ import annotations

import warnings

import numpy as np

from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.engine_cox import CoxEngine
from coxinfluence.influence_functions.engine_refits import Refits  # noqa: F401 (re-exported)
from coxinfluence.influence_functions.vif import refuse_penalty
from coxinfluence.likelihood.objective import gradient_tolerance
from coxinfluence.models.cox import check_fit


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


def exact_refits(fit, units, codes=None, *, executor=None, progress=None, batch_size=None,
                 tol=None, max_iter=50, n_chunks=None) -> Refits:
    """Refit ``fit`` without each of the units ``codes`` (unit codes of ``units``, a
    :class:`coxinfluence.data.units.Units`; default all): the engine of :func:`exact_loo`
    (parameters there), returning a :class:`Refits` with a status per unit instead of
    warning. A unit whose refit is undefined or failed is NaN, never an error for the
    batch."""
    model = CoxEngine(fit, units)
    model.refit_tolerance = gradient_tolerance(fit.data, fit.tol if tol is None else tol)
    model.max_iter = max_iter
    return model.refit(codes, executor=executor, progress=progress, batch_size=batch_size,
                       n_chunks=n_chunks)


def exact_loo(fit, *, groups=None, executor=None, progress=None, batch_size=None, tol=None,
              max_iter=50, n_chunks=None):
    """``ci.exact_loo``'s Cox path (parameters, returns and layout there:
    :func:`coxinfluence.influence_functions.any_fit.exact_loo`): the refits of
    :func:`exact_refits`, NaN where undefined or failed, with one
    :class:`LeaveOneOutWarning` naming those units. ``tol``: per unit case weight
    (:func:`coxinfluence.likelihood.objective.gradient_tolerance`)."""
    fit = check_fit(fit, "exact_loo", refuse=True)
    refuse_penalty(fit, "exact_loo")
    units = resolve_units(fit, groups)
    res = exact_refits(fit, units, executor=executor, progress=progress,
                       batch_size=batch_size, tol=tol, max_iter=max_iter, n_chunks=n_chunks)
    warn_undefined(units, np.flatnonzero(~res.ok), "exact leave-one-out",
                    failed=np.flatnonzero(res.status == "refit_failed"))
    return units.wrap(res.theta)


def newton_loo(fit, *, groups=None, method="auto"):
    """``ci.newton_loo``'s Cox path (parameters, returns and layout there:
    :func:`coxinfluence.influence_functions.any_fit.newton_loo`): ``fit.coef`` plus
    :meth:`~coxinfluence.influence_functions.engine_cox.CoxEngine.newton_change`, NaN (with
    one :class:`LeaveOneOutWarning`) where ``H_{-g}`` is singular or the deletion leaves
    the design rank deficient."""
    fit = check_fit(fit, "newton_loo")
    refuse_penalty(fit, "newton_loo")
    units = resolve_units(fit, groups)
    change, ok = CoxEngine(fit, units).newton_change(method)
    theta = fit.coef + change
    warn_undefined(units, np.flatnonzero(~ok), "one-step Newton leave-one-out")
    return units.wrap(theta)

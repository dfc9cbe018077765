"""Leave-one-out refits: exact (ground truth) and one-step Newton.

``exact_loo`` refits the model without each row (or unit) to ``max |gradient| <= tol``
(default 1e-10): warm-started at the closed-form Halley estimate (:func:`_warm_start`:
the deleted-data gradient and Hessian at ``theta_hat`` and the full-data third
derivative), then quasi-Newton steps (:func:`_loo_chunk`) whose gradients come from
:class:`coxinfluence.likelihood.deletion_gradients.DeletionGradients` (the deletions of
``batch_size`` refits
at once, on the already-sorted rows: no refit re-sorts or re-validates, no loop over
rows), then Newton-Raphson for the few that need it. About two gradient evaluations per
refit (the start's and the check after one step): SUPPORT (n = 5678) 2.1, METABRIC 2.5.

``newton_loo`` is the first Newton step of that refit,

    theta_hat - H_{-i}(theta_hat)^{-1} grad L_{-i}(theta_hat),

which uses the leave-one-out Hessian (VIF uses the full-data one).

Rows whose removal leaves a coefficient unidentifiable (for example the only patient
with a given level of a dummy covariate: the column is then constant) or makes the
fit diverge (separation) get NaN for the affected coefficients, with one
:class:`LeaveOneOutWarning` naming the rows; the other coefficients of such a row are
refitted without the unidentifiable columns when possible.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from coxinfluence.data.deletion import Deletion
from coxinfluence.data.inputs import CoxInputError
from coxinfluence.data.rank import check_design, identifiable_columns
from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions.vif import refuse_penalty
from coxinfluence.likelihood.deletion_gradients import DeletionGradients
from coxinfluence.likelihood.objective import cox_objective, gradient_tolerance
from coxinfluence.likelihood.risk_sets import RiskSets, matmul_rows
from coxinfluence.likelihood.third_derivative import third_derivative
from coxinfluence.models.cox import check_fit
from coxinfluence.numerics.executors import n_workers, on_workers, whole_batch_chunks
from coxinfluence.numerics.newton import halley_step, newton, solve_batch


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


def _default_batch(data, per_row_floats=None):
    # keep each batch's largest array (B x n x d for Hessians, B x n for gradients) near
    # one million floats: larger batches fall out of cache and run slower per row
    per_row = per_row_floats or data.n * data.d
    return int(np.clip(1_000_000 // max(per_row, 1), 1, 256))


def _loo_chunk(risk_sets, of_row, coef, hess_chol, codes, theta_start, J_start, tol, max_iter,
               batch_size):
    """Refit without each of the units ``codes`` (``of_row``: unit code of each sorted row)
    from ``theta_start`` (m, d), with ``J_start`` (m, d, d) the first inverse-Jacobian
    estimates (``H_{-g}^{-1}``; None: the full-data ``H^{-1}`` for all); returns (theta (m, d),
    converged (m,), flat (m,): :func:`_flat_at_refit`). The gradients
    (:class:`~coxinfluence.likelihood.deletion_gradients.DeletionGradients`) run their products as
    one-thread
    BLAS calls and the Newton fallback with ``blas=False``, so the bits do not depend on
    where the chunk runs.

    Quasi-Newton iterations first: steps with the start's inverse-Jacobian estimates,
    refined by Broyden updates, and the leave-one-out gradient; no Hessian is evaluated.
    From the Halley start with its T-corrected Jacobian most refits reach ``tol`` after
    one step (two gradient evaluations). Rows that have not reached ``tol`` after
    ``_CHORD_STEPS`` steps continue with full Newton-Raphson with step halving
    (:func:`coxinfluence.numerics.newton.newton`).
    """
    from scipy.linalg import cho_solve
    data = risk_sets.data
    H_inv = cho_solve(hess_chol, np.eye(data.d))
    se = np.sqrt(np.diag(H_inv))
    gradients = DeletionGradients(risk_sets, reference=coef)
    thetas, oks, flats = [], [], []
    for start in range(0, len(codes), batch_size):
        pos = np.arange(start, min(start + batch_size, len(codes)))
        rows = codes[pos]
        batch = gradients.batch(of_row, rows)
        theta = theta_start[pos].copy()
        done = np.zeros(len(rows), dtype=bool)
        J = (np.repeat(H_inv[None], len(rows), axis=0) if J_start is None
             else J_start[pos].copy())                     # inverse-Jacobian estimates
        prev = None
        for _ in range(_CHORD_STEPS):
            live = np.flatnonzero(~done)
            if live.size == 0:
                break
            try:
                g = gradients(theta[live], batch if live.size == len(rows) else batch.take(live))
            except FloatingPointError:
                break
            if prev is not None:
                _broyden_update(J, live, theta[live] - prev[0][live], g - prev[1][live])
            prev = (theta.copy(), np.zeros_like(theta))
            prev[1][live] = g
            small = np.abs(g).max(axis=1) <= tol
            done[live[small]] = True
            live, g = live[~small], g[~small]
            step = np.einsum("bij,bj->bi", J[live], g)
            theta[live] -= step
            tiny = np.abs(step).max(axis=1) <= 1e-13 * (1 + np.abs(theta[live]).max(axis=1))
            done[live[tiny]] = True
        # Rows not converged, converged far from where the closed-form start pointed, or
        # more than one standard error from theta_hat (a diverging, separated refit can
        # reach a tiny gradient) get Newton-Raphson with the leave-one-out Hessian, whose
        # convergence test also checks the step size, and the flat-likelihood check.
        moved = np.abs(theta - theta_start[pos]).max(axis=1)
        predicted = np.abs(theta_start[pos] - coef).max(axis=1)
        far = (np.abs(theta - coef) / se).max(axis=1) > 1.0
        rest = np.flatnonzero(~done | (moved > 1e-2 * (1 + predicted)) | far)
        flat = np.zeros(len(rows), dtype=bool)
        if rest.size:
            objective = cox_objective(risk_sets, Deletion.of_units(of_row, rows[rest]),
                                      blas=False)
            res = newton(objective, theta[rest], tol=tol, max_iter=max_iter)
            theta[rest] = res.theta
            done[rest] = res.converged
            flat[rest] = _flat_at_refit(res.hess, hess_chol)
        thetas.append(theta)
        oks.append(done)
        flats.append(flat)
    return np.concatenate(thetas), np.concatenate(oks), np.concatenate(flats)


FLAT_EIGENVALUE = 1e-6


def _flat_at_refit(H_loo, hess_chol):
    """(B,) bool: the deleted problem has no maximum where its refit stopped: the smallest
    eigenvalue of ``H^{-1} H_{-g}(theta_{-g})`` (the information left relative to the full
    data's) is below ``FLAT_EIGENVALUE``, or the Hessian is not finite. A monotone
    likelihood (separation after the deletion) ends there: its information decays like
    ``exp(-|theta|)`` along the diverging direction, while any refit with a maximum near
    ``theta_hat`` keeps information comparable to the full data's."""
    L = np.tril(hess_chol[0]) if hess_chol[1] else np.triu(hess_chol[0]).T
    out = ~np.isfinite(H_loo).all(axis=(1, 2))
    ok = np.flatnonzero(~out)
    if ok.size:
        Linv = np.linalg.inv(L)
        M = Linv[None] @ H_loo[ok] @ Linv.T[None]
        out[ok] = np.linalg.eigvalsh(0.5 * (M + M.transpose(0, 2, 1)))[:, 0] < FLAT_EIGENVALUE
    return out


def _broyden_update(J, idx, s, y):
    """Broyden's ("good") rank-one update of inverse-Jacobian estimates ``J[idx]`` from
    steps ``s`` and gradient changes ``y``: ``J += (s - J y) s' J / (s' J y)``.
    Starting from the full-data ``H^{-1}`` it learns the leave-one-out Hessian's effect
    along the iterates, turning the chord method's linear convergence superlinear."""
    Jy = np.einsum("bij,bj->bi", J[idx], y)
    sJ = np.einsum("bi,bij->bj", s, J[idx])
    denom = np.einsum("bi,bi->b", s, Jy)
    ok = np.abs(denom) > 1e-300
    upd = (s - Jy)[:, :, None] * sJ[:, None, :] / np.where(ok, denom, 1.0)[:, None, None]
    J[idx[ok]] += upd[ok]


# a row still above tol after 6 steps contracts slowly (GBSG2's top patient, 2 SEs from
# theta_hat: 1.5e-4 after 6); two more gradients of the batch cost less than the Hessian
# evaluations Newton-Raphson would spend (auto on GBSG2: Newton's 2 evaluations -> 1; the
# exact refits of every unit of GBSG2, METABRIC, SUPPORT: as many Newton rows or fewer)
_CHORD_STEPS = 8
_SERIAL_CHUNK = 2048


def _refit_reduced(data, coef, keep, tol, max_iter):
    """Refit on the sorted rows ``keep`` (bool), dropping columns that become
    unidentifiable.

    Returns a (d,) vector with NaN for dropped columns, or all NaN when even the reduced
    model cannot be fitted.
    """
    sub = data.subset(keep)
    out = np.full(data.d, np.nan)
    if sub.event.sum() == 0:
        return out
    cols = np.arange(data.d)
    while True:
        reduced = sub.with_rows_and_columns(np.ones(sub.n, dtype=bool), cols)
        try:
            check_design(reduced)
            break
        except CoxInputError:
            ok_cols = identifiable_columns(reduced)
            if ok_cols.size == cols.size or ok_cols.size == 0:
                return out
            cols = cols[ok_cols]
    res = newton(cox_objective(RiskSets(reduced)), coef[cols][None, :], tol=tol,
                 max_iter=max_iter)
    if res.converged[0]:
        out[cols] = res.theta[0]
    return out


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


STATUSES = ("ok", "undefined", "refit_failed")


@dataclass
class Refits:
    """Exact refits of some units: ``theta`` (m, d) the refitted coefficients, ``status``
    (m,) one of :data:`STATUSES` per unit:

    - ``"ok"``: converged to the tolerance, with a maximum (finite, every coefficient);
    - ``"undefined"``: the deleted problem has no maximum, so the exact change does not
      exist: the deletion leaves a covariate constant or collinear (those coefficients NaN,
      the others refitted without them), leaves no event in the data (all NaN), or the
      refit runs onto a flat likelihood (smallest
      eigenvalue of ``H^{-1} H_{-g}(theta_{-g})`` below ``FLAT_EIGENVALUE``: monotone
      likelihood, all NaN);
    - ``"refit_failed"``: Newton-Raphson did not converge for another reason (all NaN).
    """

    codes: np.ndarray
    theta: np.ndarray
    status: np.ndarray

    @property
    def ok(self):
        return self.status == "ok"


def exact_refits(fit, units, codes=None, *, executor=None, progress=None, batch_size=None,
                 tol=None, max_iter=50, n_chunks=None, vif=None, third=None,
                 split=None) -> Refits:
    """Refit ``fit`` without each of the units ``codes`` (unit codes of ``units``, a
    :class:`coxinfluence.data.units.Units`; default all): the engine of :func:`exact_loo`
    (parameters there), returning a :class:`Refits` with a status per unit instead of
    warning. A unit whose refit is undefined or failed is NaN, never an error for the
    batch. ``vif`` (U, d), every unit's ``VIF_n(g)``, and ``third``, the loss's third
    derivative at ``fit.coef``, are the warm start's inputs when the caller has them
    (an audit computes each once); else they are computed here. ``split`` (U, d, d), or a
    function of unit codes returning theirs (m, d, d), the units' parts ``C_g`` of the
    information (flags), gives the start's deleted Hessians as
    ``H - C_g`` instead of evaluating them (the start is then ``O(|D|/n)`` less accurate; the
    refits converge to the same tolerance)."""
    data = fit.data
    U = units.n_units
    codes = np.arange(U) if codes is None else np.asarray(codes, dtype=int)
    tol = gradient_tolerance(data, fit.tol if tol is None else tol)
    batch_size = batch_size or _default_batch(data, per_row_floats=4 * data.n)
    # default: a bar for long runs, and only on a terminal (never carriage returns in logs)
    show = (None if codes.size > 2000 else False) if progress is None else bool(progress)
    from scipy.linalg import cho_factor
    chol = cho_factor(fit.information)
    theta_start, J_start = _warm_start(fit, units, codes, vif, third, split)
    args = (fit.risk_sets, units.of_row, fit.coef, chol)
    m = codes.size
    theta = np.empty((m, data.d))
    ok = np.empty(m, dtype=bool)
    flat = np.empty(m, dtype=bool)

    def work(pos):
        return (codes[pos], theta_start[pos], None if J_start is None else J_start[pos],
                tol, max_iter, batch_size)

    if executor is None:
        # chunks of ~_SERIAL_CHUNK units: each sets up its kernel's work arrays once
        chunks = whole_batch_chunks(m, -(-m // _SERIAL_CHUNK), batch_size)
        results = map(lambda pos: _loo_chunk(*args, *work(pos)), chunks)
    else:
        # a dask cluster gets the data once per worker; a task carries its chunk's codes and
        # warm starts and a reference to the data
        executor, shared = on_workers(executor, fit.risk_sets, units.of_row)
        args = (*shared, fit.coef, chol)
        chunks = whole_batch_chunks(m, n_chunks or 4 * (n_workers(executor) or 2), batch_size)
        futures = [executor.submit(_loo_chunk, *args, *work(pos)) for pos in chunks]
        results = (f.result() for f in futures)
    bar = _progress(show, m, "exact leave-one-out")
    for pos, (th, good, fl) in zip(chunks, results):
        theta[pos], ok[pos], flat[pos] = th, good, fl
        bar.update(len(pos))
    bar.close()
    status = np.full(m, "ok", dtype=object)
    no_events = units.removes_all_events[codes]
    broken = units.breaks_rank[codes] & ~no_events
    # a refit that ran onto a flat likelihood from its start may have left the basin of a
    # maximum that exists (a far warm start, a wild quasi-Newton step): confirm by a plain
    # Newton-Raphson with step halving from theta_hat before calling it undefined
    for pos in np.flatnonzero(flat & ~no_events & ~broken):
        again = _confirm_flat(fit, units, codes[pos], tol, max_iter, chol)
        if again is not None:
            theta[pos], ok[pos], flat[pos] = again, True, False
    # no maximum: the refit ran onto a flat likelihood, or nothing is left to fit
    status[flat | no_events] = "undefined"
    theta[flat | no_events] = np.nan
    # a refit can converge in the identifiable directions while a coefficient that lost
    # all its information stays where it started: refit those without the lost columns;
    # give the others that did not converge a second, plain Newton-Raphson from theta_hat
    for pos in np.flatnonzero(broken | (~ok & ~flat & ~no_events)):
        theta[pos] = _refit_reduced(data, fit.coef, units.of_row != codes[pos], tol, max_iter)
        if broken[pos]:
            status[pos] = "undefined"
        elif not np.isfinite(theta[pos]).all():
            status[pos] = "refit_failed"
            theta[pos] = np.nan
    return Refits(codes, theta, status.astype(str))


def _confirm_flat(fit, units, code, tol, max_iter, chol):
    """The refit of unit ``code`` by Newton-Raphson with step halving from ``theta_hat``:
    its coefficients when it converges to a point with information (not
    :func:`_flat_at_refit`), else None (the deleted problem has no maximum)."""
    objective = cox_objective(fit.risk_sets, units.deletion(np.array([code])), blas=False)
    res = newton(objective, fit.coef[None, :], tol=tol, max_iter=max_iter)
    if res.converged[0] and not _flat_at_refit(res.hess, chol)[0]:
        return res.theta[0]
    return None


_NEWTON_START_FLOATS = 2e7     # at most ~160 MB per (m, d, d) array of the warm start


def _warm_start(fit, units, codes, vif_units=None, third=None, split=None):
    """Starting points (m, d) and first inverse-Jacobian estimates (m, d, d) or None for
    the refits of the units ``codes``.

    From the closed-form deleted-data gradient ``g = grad L_{-g}(theta_hat)`` and Hessian
    ``H_{-g}`` (:mod:`coxinfluence.influence_functions.deleted_hessians`; a few units: by deletion)
    and the
    full-data third derivative ``T``
    (:func:`coxinfluence.likelihood.third_derivative.third_derivative`):
    the one-step Newton change ``D0 = -H_{-g}^{-1} g``, then Halley's
    ``D = -(H_{-g} + T[D0]/2)^{-1} g`` (:func:`coxinfluence.numerics.newton.halley_step`,
    the start of every model's refits), and the start ``theta_hat + D`` with
    ``(H_{-g} + T[D])^{-1}``, the deleted-data Hessian at the start to O(|D|^2 + |D|/n)
    relative, as first inverse Jacobian. The start is O(|D|^3) from the refit (Newton's:
    O(|D|^2)) and the first quasi-Newton step contracts its error by O(|D|^2) (with
    ``H_{-g}^{-1}``: O(|D|)): on SUPPORT 85% of the refits reach ``max |grad| <= 1e-10``
    after one step (Newton's start with ``H_{-g}^{-1}``: 3%). A unit whose Halley step is
    not finite or differs from ``D0`` by more than half its size keeps the Newton start
    with ``H_{-g}^{-1}``; a singular ``H_{-g}``, or m Hessians too many for memory, the
    VIF start ``theta_hat - VIF_n(g)/n`` with the full-data ``H^{-1}`` (one chord step
    behind)."""
    from coxinfluence.influence_functions.deleted_hessians import (
        deleted_hessians,
        hessians_by_deletion,
    )
    from coxinfluence.influence_functions.vif import vif_of_units
    U, d = units.n_units, fit.data.d
    if vif_units is None:
        vif_units = vif_of_units(fit, units=units)
    vif = np.asarray(vif_units, dtype=np.float64)[codes]
    theta_vif = fit.coef - vif / U
    bad = ~np.isfinite(theta_vif).all(axis=1)
    theta_vif[bad] = fit.coef
    if codes.size * d * d > _NEWTON_START_FLOATS:
        return theta_vif, None
    # grad L_{-g}(theta_hat) = grad L - (grad L - grad L_{-g}) = gradient + H VIF_n(g) / U
    g_loo = matmul_rows(vif, fit.information / U, np.empty((codes.size, d)))
    g_loo += fit.gradient
    # a few units: by deletion, one problem at a time (the kernels' one-problem path is
    # faster than their batch: measured 3.4x on SUPPORT, equal on GBSG2)
    if split is not None:
        C = split(codes) if callable(split) else np.asarray(split)[codes]
        H_loo = fit.information[None] - C
    else:
        H_loo = (hessians_by_deletion(fit, units, codes, batch=1) if codes.size <= 64
                 else deleted_hessians(fit, units, codes))
    ok = ~bad & np.isfinite(H_loo).all(axis=(1, 2))
    step, solved = solve_batch(H_loo[ok], g_loo[ok])
    idx = np.flatnonzero(ok)[solved]
    theta = theta_vif.copy()
    theta[idx] = fit.coef - step[solved]
    J = np.empty_like(H_loo)
    J[:] = np.linalg.inv(fit.information)
    newton_only = idx
    if idx.size:
        T = third_derivative(fit.risk_sets, fit.coef) if third is None else third
        D, M, newton = halley_step(H_loo[idx], g_loo[idx], T, D0=-step[solved])
        good = np.zeros(idx.size, dtype=bool)
        halley = ~newton
        if halley.any():
            inv, good[halley] = _inverse_batch(M[halley])
            use = idx[good]
            theta[use] = fit.coef + D[good]
            J[use] = inv[good[halley]]
        newton_only = idx[~good]
    if newton_only.size:
        J[newton_only] = np.linalg.inv(H_loo[newton_only])
    return theta, J


def _inverse_batch(M):
    """Inverses of a batch of matrices and which are finite (a singular one: not ok)."""
    try:
        inv = np.linalg.inv(M)
    except np.linalg.LinAlgError:
        inv = np.full_like(M, np.nan)
        for b in range(M.shape[0]):
            try:
                inv[b] = np.linalg.inv(M[b])
            except np.linalg.LinAlgError:
                pass
    return inv, np.isfinite(inv).all(axis=(1, 2))


def exact_loo(fit, *, groups=None, executor=None, progress=None, batch_size=None, tol=None,
              max_iter=50, n_chunks=None):
    """Exact leave-one-out coefficients ``theta_hat_{-g}`` for every unit of a ``CoxFit``
    (``ci.exact_loo``'s Cox path; it takes any fit:
    :mod:`coxinfluence.influence_functions.any_fit`): ``fit.coef + ci.influence(fit,
    method="exact").theta_change``.

    Units are rows by default, the subjects of ``fit_cox(..., id=)``, or the clusters
    ``groups`` (one label per row, caller's order). Each refit deletes all rows of unit g
    (for Efron ties this also removes them from their tie groups' event counts) and
    iterates to ``max |grad| <= tol`` (default ``fit.tol``, 1e-10; per unit case weight,
    :func:`coxinfluence.numerics.newton.gradient_tolerance`): from the closed-form Halley
    estimate (one-step Newton with the deleted-data Hessian, corrected by the third
    derivative), quasi-Newton steps with the leave-one-out gradient, then Newton-Raphson
    with step halving for any unit not yet converged (module docstring).

    A refit is NaN where it does not exist or failed (:class:`Refits` lists the cases:
    a covariate left constant, no event left in the data, a deletion that makes the
    likelihood monotone), with one :class:`LeaveOneOutWarning` naming the
    units; :func:`exact_refits` returns the status of each unit instead.

    Parameters
    ----------
    executor : a ``concurrent.futures.Executor`` (e.g. ``ProcessPoolExecutor``), or a
        ``dask.distributed.Client`` or its ``get_executor()``; the units are split into
        ``n_chunks`` chunks of whole batches (default 4 per worker, or 8) submitted to
        it. Every unit is refitted in the same batch as in the serial run, so results are
        bit-for-bit identical to it. On a dask cluster the data are scattered once to
        every worker; each task then carries only its chunk's unit codes and warm starts.
    progress : show a tqdm progress bar (default: when there are more than 2000 units).
    batch_size : refits evaluated together as one batch of array operations.

    Returns
    -------
    (n_units, d) ``theta_hat_{-g}``: rows in the caller's order (a DataFrame with the
    caller's index for pandas input), subjects and clusters as a DataFrame indexed by
    their sorted labels.
    """
    fit = check_fit(fit, "exact_loo", refuse=True)
    refuse_penalty(fit, "exact_loo")
    units = resolve_units(fit, groups)
    res = exact_refits(fit, units, executor=executor, progress=progress,
                       batch_size=batch_size, tol=tol, max_iter=max_iter, n_chunks=n_chunks)
    warn_undefined(units, np.flatnonzero(~res.ok), "exact leave-one-out",
                    failed=np.flatnonzero(res.status == "refit_failed"))
    return units.wrap(res.theta)


def newton_loo(fit, *, groups=None, method="auto"):
    """One-step Newton leave-one-out of a ``CoxFit``: ``theta_hat - H_{-g}^{-1} grad
    L_{-g}(theta_hat)`` (``ci.newton_loo``'s Cox path; it takes any fit:
    :mod:`coxinfluence.influence_functions.any_fit`): ``fit.coef + ci.influence(fit,
    method="newton").theta_change``.

    Both the gradient and the Hessian are those of the data with all rows of unit g
    deleted (units as in :func:`exact_loo`), evaluated at ``fit.coef``, in closed form
    from the risk-set sums (:mod:`coxinfluence.influence_functions.deleted_hessians`: the VIF's
    gradient
    differences and the per-row Hessian changes ``V + delta V - delta(1 + delta)(x - a)
    (x - a)'``, ``delta = u/(den - u)``, summed by the same direct-plus-series split;
    ``method`` as there: "auto", "series" or "direct"). Returns (n_units, d) estimates of
    ``theta_hat_{-g}`` laid out as :func:`exact_loo`'s; NaN (with a warning) where
    ``H_{-g}`` is singular or the deletion leaves the design rank deficient.
    """
    from coxinfluence.influence_functions.deleted_hessians import one_step_newton
    fit = check_fit(fit, "newton_loo")
    refuse_penalty(fit, "newton_loo")
    units = resolve_units(fit, groups)
    theta, ok = one_step_newton(fit, units, method=method)
    ok &= ~units.breaks_rank
    theta[~ok] = np.nan
    warn_undefined(units, np.flatnonzero(~ok), "one-step Newton leave-one-out")
    return units.wrap(theta)


def _progress(show, total, desc):
    """A progress bar: shown (True), not (False), or only when stderr is a terminal
    (None: tqdm's ``disable=None``)."""
    if show is not False:
        from tqdm.auto import tqdm
        return tqdm(total=total, desc=desc, unit="row", disable=None if show is None else False)

    class _Null:
        def update(self, _):
            pass

        def close(self):
            pass
    return _Null()

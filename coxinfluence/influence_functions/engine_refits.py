"""The one batched refit loop of every model family, and its Halley start
(:class:`coxinfluence.influence_functions.engine.Engine` refits here).

- :func:`halley_start`: the one-step Newton change ``D0 = -H_{-g}^{-1} g`` (``g = grad
  L_{-g}(theta_hat)``) corrected by the third derivative, Halley's ``D = -(H_{-g} +
  T[D0]/2)^{-1} g`` (:func:`coxinfluence.numerics.newton.halley_step`), with ``(H_{-g} +
  T[D])^{-1}`` as first inverse Jacobian: O(|D|^3) from the refit, Newton's O(|D|^2) (on
  SUPPORT 85% of the Cox refits reach ``max |grad| <= 1e-10`` after one step). Fallbacks:
  the Newton start with ``H_{-g}^{-1}`` (Halley's step not within half of ``D0``, or no
  ``T``); the VIF start with ``H^{-1}`` (``H_{-g}`` not positive definite, or m Hessians
  too many for memory).
- :func:`refit_units`: chunks of whole batches, so every refit is computed in the same
  batch (the same bits) however ``executor`` (a ``concurrent.futures.Executor`` or a dask
  ``Client``: the kernel's data scattered once per worker) spreads them; per batch the
  one solver, :func:`coxinfluence.numerics.newton.newton`, with its secant start (Broyden
  updates of the start's inverse Jacobians) and the family's options
  (:attr:`DeletionKernel.newton_options`) (:func:`_loo_chunk`), runaway
  (:data:`RUNAWAY_SE`) and flat-likelihood checks; the statuses of :class:`Refits`
  (:func:`_statuses`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from coxinfluence.numerics.executors import n_workers, on_workers, whole_batch_chunks
from coxinfluence.numerics.newton import halley_step, newton, solve_batch

__all__ = ["Refits", "STATUSES", "DeletionKernel", "MaskKernel", "halley_start",
           "refit_units", "map_chunks", "RUNAWAY_SE", "FLAT_EIGENVALUE"]

#: a refit this many standard errors (information metric) from ``theta_hat`` has run off:
#: the deleted likelihood has no maximum near it (monotone likelihood), "undefined"
RUNAWAY_SE = 30.0
#: a refit whose Hessian keeps less than this of the full data's information (smallest
#: eigenvalue of ``H^{-1} H_{-g}``) stopped on a flat likelihood
FLAT_EIGENVALUE = 1e-6
_SERIAL_CHUNK = 2048
_NEWTON_START_FLOATS = 2e7     # at most ~160 MB per (m, d, d) array of the warm start

STATUSES = ("ok", "undefined", "refit_failed")


@dataclass
class Refits:
    """Exact refits of some units: ``theta`` (m, d) the refitted coefficients, ``status``
    (m,) one of :data:`STATUSES` per unit:

    - ``"ok"``: converged to the tolerance, with a maximum (finite, every coefficient);
    - ``"undefined"``: the deleted problem has no maximum, so the exact change does not
      exist: the deletion leaves a covariate constant or collinear (those coefficients NaN,
      the others refitted without them), leaves no event in the data (all NaN), or the
      refit runs off (more than ``RUNAWAY_SE`` standard errors) or onto a flat likelihood
      (smallest eigenvalue of ``H^{-1} H_{-g}(theta_{-g})`` below ``FLAT_EIGENVALUE``:
      monotone likelihood, all NaN);
    - ``"refit_failed"``: Newton-Raphson did not converge for another reason (all NaN).

    Examples
    --------
    >>> from coxinfluence.influence_functions.engine_refits import Refits
    >>> r = Refits(np.array([0, 1]), np.array([[0.5], [np.nan]]),
    ...            np.array(["ok", "undefined"]))
    >>> r.ok
    array([ True, False])
    """

    codes: np.ndarray
    theta: np.ndarray
    status: np.ndarray

    @property
    def ok(self):
        """(m,) bool: status ``"ok"``."""
        return self.status == "ok"


# ------------------------------------------------------------------------ kernels

class DeletionKernel:
    """A family's refit kernel: the problems without each unit, batched.

    A subclass implements :meth:`objective` and, as a fast path, :meth:`gradients`; it
    names in ``shared_names`` its large read-only attributes (the data), which a dask
    cluster receives once per worker instead of with every task. It must pickle (process
    pools, dask).
    """

    #: attributes scattered once to every dask worker (the data); the rest travels with
    #: each task
    shared_names: tuple = ()

    def objective(self, codes):
        """``objective(idx, theta) -> (loss (k,), grad (k, d), hess (k, d, d))`` of the
        problems ``idx`` among those without each unit of ``codes`` (m,), the form
        :func:`coxinfluence.numerics.newton.newton` minimises."""
        raise NotImplementedError

    #: the options of :func:`coxinfluence.numerics.newton.newton` the family's refits
    #: take (e.g. ``{"polish": 3}``: an AFT model's finishing steps)
    newton_options: dict = {}

    def gradients(self, codes):
        """``gradients(theta (k, d), live (k,)) -> (k, d)``: the gradients of the problems
        at positions ``live`` of ``codes`` (default: from :meth:`objective`)."""
        objective = self.objective(codes)
        return lambda theta, live: objective(live, theta)[1]

    def detach(self):
        """``(parts, light)``: the ``shared_names`` attributes and a copy without them."""
        parts = tuple(getattr(self, name) for name in self.shared_names)
        light = copy.copy(self)
        for name in self.shared_names:
            setattr(light, name, None)
        light.__dict__.pop("_cache", None)
        return parts, light

    def attach(self, parts):
        """A fresh copy with the ``shared_names`` attributes set to ``parts`` (no cached
        work arrays carried over)."""
        out = copy.copy(self)
        out.__dict__.pop("_cache", None)
        for name, value in zip(self.shared_names, parts):
            setattr(out, name, value)
        return out


class BlockKernel(DeletionKernel):
    """The refit kernel of a loss summed over blocks of parameters, each block a problem
    of its own (a cause's Cox model, a transition's): ``kernels`` one per block, its
    coefficients at ``slices`` of the ``d``; ``local`` per block each unit's code there
    (-1: the unit has no rows in the block, nothing deleted), None: the same codes in
    every block. The Hessian is block diagonal."""

    shared_names = ("kernels",)

    def __init__(self, kernels, slices, d, local=None):
        self.kernels, self.slices, self.d, self.local = kernels, slices, d, local

    def _codes(self, codes):
        codes = np.asarray(codes, dtype=int)
        if self.local is None:
            return [codes] * len(self.slices)
        return [loc[codes] for loc in self.local]

    def objective(self, codes):
        parts = [k.objective(c) for k, c in zip(self.kernels, self._codes(codes))]

        def evaluate(idx, theta, hess=True):
            theta = np.atleast_2d(theta)
            loss = np.zeros(theta.shape[0])
            grad = np.zeros_like(theta)
            H = np.zeros((theta.shape[0], self.d, self.d)) if hess else None
            for part, sl in zip(parts, self.slices):
                value, g, h = part(idx, theta[:, sl], hess)
                loss = loss + value
                grad[:, sl] = g
                if hess:
                    H[:, sl, sl] = h
            return loss, grad, H
        return evaluate

    def gradients(self, codes):
        parts = [k.gradients(c) for k, c in zip(self.kernels, self._codes(codes))]

        def gradient(theta, live):
            out = np.zeros_like(theta)
            for part, sl in zip(parts, self.slices):
                out[:, sl] = part(theta[:, sl], live)
            return out
        return gradient


class MaskKernel(DeletionKernel):
    """The kernel of a loss that takes presence masks: ``source.objective(deletion)``
    returns ``evaluate(idx, theta, hess=True) -> (loss, grad, hess)`` for a
    :class:`~coxinfluence.data.deletion.Deletion` (the rows' presence 0/1 per problem),
    e.g. :meth:`coxinfluence.likelihood.aft.AFTLikelihood.objective`; ``unit_of`` (n,)
    the unit code of each row; ``newton_options`` the family's options of its refits
    (:attr:`DeletionKernel.newton_options`)."""

    shared_names = ("source", "unit_of")

    def __init__(self, source, unit_of, newton_options=None):
        self.source = source
        self.unit_of = np.asarray(unit_of)
        self.newton_options = dict(newton_options or {})

    def objective(self, codes):
        from coxinfluence.data.deletion import Deletion
        return self.source.objective(Deletion.of_units(self.unit_of, np.asarray(codes)))

    def gradients(self, codes):
        objective = self.objective(codes)
        return lambda theta, live: objective(live, theta, hess=False)[1]


# ------------------------------------------------------------------- the start

def halley_start(model, codes):
    """Starting points (m, d) and first inverse-Jacobian estimates (m, d, d), or None (the
    full-data ``H^{-1}`` for all), of the refits of the units ``codes`` of ``model`` (an
    :class:`~coxinfluence.influence_functions.engine.Engine`), from its
    ``change("vif")``, ``deleted_gradients``, ``deleted_hessians`` and ``third`` (module
    docstring)."""
    coef = np.asarray(model.coef, dtype=np.float64)
    H = np.asarray(model.information, dtype=np.float64)
    d = coef.size
    theta_vif = coef + np.asarray(model.change("vif"), dtype=np.float64)[codes]
    bad = ~np.isfinite(theta_vif).all(axis=1)
    theta_vif[bad] = coef
    if codes.size * d * d > _NEWTON_START_FLOATS:
        return theta_vif, None
    g_loo = np.asarray(model.deleted_gradients(codes), dtype=np.float64)
    H_loo = np.asarray(model.deleted_hessians(codes), dtype=np.float64)
    ok = ~bad & np.isfinite(H_loo).all(axis=(1, 2)) & np.isfinite(g_loo).all(axis=1)
    step, solved = solve_batch(H_loo[ok], g_loo[ok])
    idx = np.flatnonzero(ok)[solved]
    theta = theta_vif.copy()
    theta[idx] = coef - step[solved]
    J = np.empty_like(H_loo)
    J[:] = np.linalg.inv(H)
    newton_only = idx
    T = model.third
    if idx.size and T is not None:
        D, M, newton_kept = halley_step(H_loo[idx], g_loo[idx], T, D0=-step[solved])
        good = np.zeros(idx.size, dtype=bool)
        halley = ~newton_kept
        if halley.any():
            inv, good[halley] = _inverse_batch(M[halley])
            use = idx[good]
            theta[use] = coef + D[good]
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


# -------------------------------------------------------------------- the loop

@dataclass
class _Plan:
    """What every chunk of refits shares besides the kernel: ``coef``, the Cholesky
    factor ``chol`` of the information ``H``, the tolerance, iteration limits, the batch
    size."""

    coef: np.ndarray
    chol: tuple
    H: np.ndarray
    tol: float
    max_iter: int
    batch_size: int
    chord_steps: int

    def runaway(self, theta):
        """(k,) bool: more than :data:`RUNAWAY_SE` standard errors from ``coef`` in the
        information metric, or not finite."""
        delta = np.asarray(theta) - self.coef
        with np.errstate(invalid="ignore", over="ignore"):
            size = np.einsum("bi,ij,bj->b", delta, self.H, delta)
        return ~np.isfinite(size) | (size > RUNAWAY_SE ** 2)


def _loo_chunk(*args):
    """Refit without each of the units ``codes``: ``_loo_chunk(*parts, kernel, plan, codes,
    theta_start, J_start)``, ``parts`` the kernel's shared data (its ``shared_names``),
    ``theta_start`` (m, d) and ``J_start`` (m, d, d) or None the start's points and inverse
    Jacobians; returns (theta (m, d), converged (m,), flat (m,): stopped on a flat
    likelihood or ran off).

    Per batch of ``plan.batch_size``, :func:`coxinfluence.numerics.newton.newton` with its
    secant start (the start's inverse-Jacobian estimates refined by Broyden's updates and
    the deleted problems' gradients, no Hessian, for ``plan.chord_steps`` steps; a refit
    whose gradient is not finite goes back to its start, one that runs off stops), then
    Newton-Raphson with step halving for those the secant steps did not converge; again
    from where they stopped for those converged far from where the start pointed or more
    than one standard error from ``theta_hat`` (a diverging refit can reach a tiny
    gradient), so that every refit Newton took gets the flat-likelihood check."""
    *parts, kernel, plan, codes, theta_start, J_start = args
    from scipy.linalg import cho_solve
    kernel = kernel.attach(parts)
    coef, chol = plan.coef, plan.chol
    H_inv = cho_solve(chol, np.eye(coef.size))
    se = np.sqrt(np.diag(H_inv))
    options = kernel.newton_options
    thetas, oks, flats = [], [], []
    for start in range(0, len(codes), plan.batch_size):
        pos = np.arange(start, min(start + plan.batch_size, len(codes)))
        rows = codes[pos]
        gradients = kernel.gradients(rows)
        objective = _OnFirstUse(kernel, rows)
        J = (np.repeat(H_inv[None], len(rows), axis=0) if J_start is None
             else J_start[pos])
        res = newton(objective, theta_start[pos], tol=plan.tol, max_iter=plan.max_iter,
                     escape=plan.runaway, inverse=J, secant_steps=plan.chord_steps,
                     gradient=_by_position(gradients), **options)
        theta, done = res.theta, res.converged.copy()
        moved = np.abs(theta - theta_start[pos]).max(axis=1)
        predicted = np.abs(theta_start[pos] - coef).max(axis=1)
        far = (np.abs(theta - coef) / se).max(axis=1) > 1.0
        again = np.flatnonzero(res.secant & ((moved > 1e-2 * (1 + predicted)) | far))
        newton_took = ~res.secant & ~res.escaped
        flat = res.escaped.copy()
        flat[newton_took] = _flat_at_refit(res.hess[newton_took], chol)
        if again.size:
            check = newton(kernel.objective(rows[again]), theta[again], tol=plan.tol,
                           max_iter=plan.max_iter, escape=plan.runaway, **options)
            theta[again] = check.theta
            done[again] = check.converged
            flat[again] = _flat_at_refit(check.hess, chol) | check.escaped
        thetas.append(theta)
        oks.append(done)
        flats.append(flat)
    return np.concatenate(thetas), np.concatenate(oks), np.concatenate(flats)


def _by_position(gradients):
    """A kernel's ``gradients(theta, live)`` as the solver's ``gradient(idx, theta)``."""
    return lambda live, theta: gradients(theta, live)


class _OnFirstUse:
    """``kernel.objective`` of the problems ``rows``, built on the first call for the
    problems it asks for (those the secant steps left: building it for the whole batch
    costs what those steps saved); later calls ask for subsets of them."""

    def __init__(self, kernel, rows):
        self.kernel, self.rows, self.first, self.objective = kernel, rows, None, None

    def __call__(self, idx, theta, **kwargs):
        idx = np.asarray(idx)
        if self.objective is None:
            self.first = idx
            self.objective = self.kernel.objective(self.rows[idx])
        return self.objective(np.searchsorted(self.first, idx), theta, **kwargs)


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


def _from_coef(kernel, coef, code, tol, max_iter, escape=None):
    """The Newton-Raphson result (with step halving) of the refit without unit ``code``
    from ``coef``."""
    objective = kernel.objective(np.array([code]))
    return newton(objective, np.asarray(coef, dtype=np.float64)[None, :], tol=tol,
                  max_iter=max_iter, escape=escape, **kernel.newton_options)


def refit_units(model, codes, *, progress=None, executor=None, batch_size=None,
                n_chunks=None, tol=None, max_iter=None, desc="exact leave-one-out"):
    """Exact refits of ``model`` (an
    :class:`~coxinfluence.influence_functions.engine.Engine`) without each of the units
    ``codes`` (module docstring): a :class:`Refits`. ``progress``: a tqdm bar (True), none
    (False), or one for more than 2000 units on a terminal (None); ``executor``: a
    ``concurrent.futures.Executor`` or a dask ``Client`` (or its executor), the units split
    into ``n_chunks`` chunks of whole batches (default 4 per worker); ``batch_size``,
    ``tol``, ``max_iter``: default the model's ``refit_batch_size``,
    ``refit_tolerance``, ``max_iter``."""
    from scipy.linalg import cho_factor
    codes = np.asarray(codes, dtype=int).reshape(-1)
    m = codes.size
    coef = np.asarray(model.coef, dtype=np.float64)
    H = np.asarray(model.information, dtype=np.float64)
    plan = _Plan(coef=coef, chol=cho_factor(H), H=H,
                 tol=float(model.refit_tolerance if tol is None else tol),
                 max_iter=int(model.max_iter if max_iter is None else max_iter),
                 batch_size=int(batch_size or model.refit_batch_size),
                 chord_steps=int(model.chord_steps))
    theta_start, J_start = halley_start(model, codes)
    kernel = model.deletion_kernel()
    parts, light = kernel.detach()
    theta = np.empty((m, coef.size))
    ok = np.empty(m, dtype=bool)
    flat = np.empty(m, dtype=bool)

    def work(pos):
        return (light, plan, codes[pos], theta_start[pos],
                None if J_start is None else J_start[pos])

    for pos, (th, good, fl) in map_chunks(_loo_chunk, parts, work, m, plan.batch_size,
                                          executor=executor, n_chunks=n_chunks,
                                          progress=progress, desc=desc,
                                          unit=model.progress_unit):
        theta[pos], ok[pos], flat[pos] = th, good, fl
    return _statuses(model, kernel, plan, codes, theta, ok, flat)


def _statuses(model, kernel, plan, codes, theta, ok, flat):
    """The :class:`Refits` of the loop's results: deletions without a maximum by
    construction undefined (NaN); a refit that ran off or onto a flat likelihood confirmed
    from ``theta_hat`` (:func:`_from_coef`) or undefined (NaN); a deletion that breaks the
    rank refitted without the lost columns (undefined); the others not converged given a
    second, plain refit from ``theta_hat`` (``model.refit_reduced``) or failed."""
    m = codes.size
    status = np.full(m, "ok", dtype=object)
    no_max = np.asarray(model.no_maximum(), dtype=bool)[codes]
    broken = np.asarray(model.rank_broken(), dtype=bool)[codes] & ~no_max
    # a refit that ran onto a flat likelihood from its start may have left the basin of a
    # maximum that exists (a far warm start, a wild quasi-Newton step): confirm by a plain
    # Newton-Raphson with step halving from theta_hat before calling it undefined
    # (within RUNAWAY_SE, converged to a point with information: not _flat_at_refit)
    for pos in np.flatnonzero(flat & ~no_max & ~broken):
        res = _from_coef(kernel, plan.coef, codes[pos], plan.tol, plan.max_iter, plan.runaway)
        if res.converged[0] and not _flat_at_refit(res.hess, plan.chol)[0]:
            theta[pos], ok[pos], flat[pos] = res.theta[0], True, False
    status[flat | no_max] = "undefined"
    theta[flat | no_max] = np.nan
    # a refit can converge in the identifiable directions while a coefficient that lost
    # all its information stays where it started: refit those without the lost columns;
    # give the others that did not converge a second, plain Newton-Raphson from theta_hat
    for pos in np.flatnonzero(broken | (~ok & ~flat & ~no_max)):
        theta[pos] = model.refit_reduced(codes[pos])
        if broken[pos]:
            status[pos] = "undefined"
        elif not np.isfinite(theta[pos]).all():
            status[pos] = "refit_failed"
            theta[pos] = np.nan
    return Refits(codes, theta, status.astype(str))


def plain_refit(kernel, coef, code, tol, max_iter):
    """(d,) the refit without unit ``code`` from ``coef`` (:func:`_from_coef`; NaN where it
    does not converge): the default second try of a refit."""
    res = _from_coef(kernel, coef, code, tol, max_iter)
    return res.theta[0] if res.converged[0] else np.full(len(coef), np.nan)


def map_chunks(function, shared, work, m, batch_size, *, executor=None, n_chunks=None,
               progress=None, desc="exact leave-one-out", unit="row"):
    """``function(*shared, *work(pos))`` for chunks ``pos`` of whole batches of ``m`` units
    (:func:`~coxinfluence.numerics.executors.whole_batch_chunks`), yielding ``(pos,
    result)`` in order: every unit in the same batch however they run, so the same bits.

    Parameters
    ----------
    function : callable
        A chunk's work: ``function(*shared, *work(pos))``.
    shared : tuple
        The data every chunk reads; with a dask ``Client`` sent once per worker
        (:func:`~coxinfluence.numerics.executors.on_workers`).
    work : callable
        ``work(pos)``: a tuple, the chunk's own arguments (``pos``: its unit positions).
    m, batch_size : int
        The number of units, and of units per batch.
    executor : concurrent.futures.Executor or dask.distributed.Client, optional
        Runs the chunks; serial (None): chunks of about 2048 units.
    n_chunks : int, optional
        The chunks submitted to ``executor`` (default 4 per worker).
    progress : bool, optional
        A tqdm bar (True), none (False), or one for more than 2000 units on a terminal
        (None).
    desc, unit : str
        The bar's words.

    Yields
    ------
    pos : numpy.ndarray
        A chunk's unit positions.
    result : object
        ``function``'s result for them.

    Examples
    --------
    >>> from coxinfluence.influence_functions.engine_refits import map_chunks
    >>> out = map_chunks(lambda scale, x: scale * x, (10,), lambda pos: (pos,), 5, 2,
    ...                  progress=False)
    >>> [r.tolist() for _, r in out]
    [[0, 10, 20, 30, 40]]
    """
    show = (None if m > 2000 else False) if progress is None else bool(progress)
    if executor is None:
        # chunks of ~_SERIAL_CHUNK units: each sets up its kernel's work arrays once
        chunks = whole_batch_chunks(m, -(-m // _SERIAL_CHUNK), batch_size)
        results = map(lambda pos: function(*shared, *work(pos)), chunks)
    else:
        # a dask cluster gets the data once per worker; a task carries its chunk's own
        # arguments and references to the data
        executor, shared = on_workers(executor, *shared)
        chunks = whole_batch_chunks(m, n_chunks or 4 * (n_workers(executor) or 2),
                                    batch_size)
        futures = [executor.submit(function, *shared, *work(pos)) for pos in chunks]
        results = (f.result() for f in futures)
    bar = _progress(show, m, desc, unit)
    for pos, result in zip(chunks, results):
        yield pos, result
        bar.update(len(pos))
    bar.close()


def _progress(show, total, desc, unit="row"):
    """A progress bar: shown (True), not (False), or only when stderr is a terminal
    (None: tqdm's ``disable=None``)."""
    if show is not False:
        from tqdm.auto import tqdm
        return tqdm(total=total, desc=desc, unit=unit, disable=None if show is None else False)

    class _Null:
        def update(self, _):
            pass

        def close(self):
            pass
    return _Null()

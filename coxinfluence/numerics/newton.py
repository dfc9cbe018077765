"""The one Newton-Raphson solver of the numpy core: every Cox fit and refit goes through it.

``fit_cox``, exact leave-one-out refits (one row or a whole unit deleted), refits of a
reduced model and lifelines' ridge-penalised fits all minimise a batch of objectives
with :func:`newton`: Newton-Raphson with step halving (as R's ``coxph`` and
scikit-survival), the step solved by Cholesky, convergence by :func:`converged`.
The objective is a callable ``objective(idx, theta) -> (loss, grad, hess)`` for the
problems ``idx`` of the batch; :func:`coxinfluence.likelihood.objective.cox_objective` builds it
from the risk-set kernels
(:class:`coxinfluence.likelihood.risk_sets.RiskSets`), a
:class:`~coxinfluence.data.deletion.Deletion` and
an optional ridge penalty.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coxinfluence.numerics.rows import matmul_rows


@dataclass
class NewtonResult:
    theta: np.ndarray      # (B, d)
    loss: np.ndarray       # (B,)
    grad: np.ndarray       # (B, d)
    hess: np.ndarray       # (B, d, d)
    converged: np.ndarray  # (B,) bool
    n_iter: np.ndarray     # (B,) int
    failed: np.ndarray     # (B,) bool: singular Hessian or diverging coefficients
    escaped: np.ndarray = None  # (B,) bool: stopped by ``escape`` (None: not asked)


def solve_batch(H, g):
    """Newton steps ``H^{-1} g`` for a batch; NaN rows where H is not positive definite."""
    steps = np.full_like(g, np.nan)
    ok = np.zeros(g.shape[0], dtype=bool)
    try:
        L = np.linalg.cholesky(H)
        steps = np.linalg.solve(H, g[:, :, None])[:, :, 0]
        ok[:] = np.isfinite(L).all(axis=(1, 2))
        return steps, ok
    except np.linalg.LinAlgError:
        pass
    for b in range(g.shape[0]):
        try:
            np.linalg.cholesky(H[b])
            steps[b] = np.linalg.solve(H[b], g[b])
            ok[b] = True
        except np.linalg.LinAlgError:
            ok[b] = False
    return steps, ok


def solve_any(M, g):
    """``M^{-1} g`` for a batch (m, d, d), (m, d), whatever the matrices' sign: NaN rows
    where ``M`` is singular (one solve for the batch; one per matrix only when that fails)."""
    try:
        return np.linalg.solve(M, g[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        out = np.full_like(g, np.nan)
        for b in range(g.shape[0]):
            try:
                out[b] = np.linalg.solve(M[b], g[b])
            except np.linalg.LinAlgError:
                pass
        return out


def halley_step(H, g, T, D0=None):
    """Halley's start of a batch of refits from ``theta_hat``: ``H`` (m, d, d) the deleted
    problems' Hessians at ``theta_hat``, ``g`` (m, d) their gradients there, ``T`` the
    full loss's third derivative (d, d, d) (or (d, d*d)); ``D0`` the Newton changes when
    known.

    The one-step Newton change ``D0 = -H^{-1} g``, corrected by the third derivative,
    Halley's ``D = -(H + T[D0]/2)^{-1} g`` (``T[D]`` the d x d matrix ``sum_c T[:, :, c]
    D_c``): O(|D|^3) from the refit where Newton's is O(|D|^2). Kept where finite and
    within half of ``D0`` (max norms), else ``D0``. Returns ``(D, M, newton)``: the
    changes (NaN where ``H`` is singular), ``M`` the Hessian at ``theta_hat + D`` to
    second order (``H + T[D]`` where Halley's is kept, ``H`` elsewhere), and which kept
    ``D0``. The refits of every model start here (their fallbacks differ)."""
    m, d = g.shape
    T = np.asarray(T, dtype=np.float64).reshape(d, d * d)
    D0 = -solve_any(H, g) if D0 is None else np.asarray(D0, dtype=np.float64)
    D = np.full_like(D0, np.nan)
    ok = np.isfinite(D0).all(axis=1)
    def contract(V):                    # T[V] (k, d, d), products of one BLAS thread
        return matmul_rows(V, T, np.empty((V.shape[0], d * d))).reshape(-1, d, d)

    if ok.any():
        D[ok] = -solve_any(H[ok] + 0.5 * contract(D0[ok]), g[ok])
    newton = ~(np.isfinite(D).all(axis=1)
               & (np.abs(D - D0).max(axis=1) <= 0.5 * np.abs(D0).max(axis=1)))
    D[newton] = D0[newton]
    M = np.array(H, dtype=np.float64)
    M[~newton] += contract(D[~newton])
    return D, M, newton


def converged(theta, grad, step, tol):
    """Converged: the gradient is below ``tol`` *and* the Newton step is small
    (``<= 1e-6 (1 + max |theta|)``), or the step is at rounding level (``1e-13`` relative).
    The step test matters for monotone likelihoods (separation): there the gradient and
    the information both decay like exp(-|theta|), so the gradient passes any tolerance
    while the Newton step stays near 1 (R's ``toler.inf`` check)."""
    size = 1 + np.abs(theta).max(axis=1)
    step_size = np.abs(step).max(axis=1)
    return (((np.abs(grad).max(axis=1) <= tol) & (step_size <= 1e-6 * size))
            | (step_size <= 1e-13 * size))


def newton(objective, theta0, *, tol=1e-10, max_iter=50, max_halving=30,
           escape=None) -> NewtonResult:
    """Newton-Raphson with step halving for a batch of B problems (module docstring).

    Each iteration tries the step ``H^{-1} g`` and its halvings ``2^-h H^{-1} g``,
    ``h < max_halving`` (at most ``max_halving`` tries), until the loss does not increase
    (``1e-12`` relative slack); a problem whose
    Hessian is not positive definite, or where no halved step decreases the loss away
    from an optimum, is marked ``failed``. Convergence is :func:`converged`.
    ``escape(theta) -> (k,) bool``, when given, stops the problems whose new iterate it
    flags (failed, and ``escaped`` in the result): the iterate has left any
    neighbourhood of a maximum (a refit running off along a monotone likelihood).
    """
    theta = np.array(np.atleast_2d(theta0), dtype=np.float64)
    B = theta.shape[0]
    loss, grad, hess = objective(np.arange(B), theta)
    done = np.zeros(B, dtype=bool)
    failed = ~np.isfinite(loss)
    n_iter = np.zeros(B, dtype=int)
    escaped = np.zeros(B, dtype=bool)
    for iteration in range(max_iter + 1):   # the last pass only tests convergence
        active = np.flatnonzero(~done & ~failed)
        if active.size == 0:
            break
        step, ok = solve_batch(hess[active], grad[active])
        failed[active[~ok]] = True
        active, step = active[ok], step[ok]
        small = converged(theta[active], grad[active], step, tol)
        done[active[small]] = True
        active, step = active[~small], step[~small]
        if iteration == max_iter or active.size == 0:
            break
        n_iter[active] += 1
        accepted, new = _halve_until_descent(objective, active, theta, loss, step, max_halving)
        # problems where no step decreased the loss: stuck (on a flat, diverging direction
        # of a separated likelihood the gradient is tiny but the Newton step is not)
        stuck = active[~accepted]
        if stuck.size:
            at_optimum = converged(theta[stuck], grad[stuck], step[~accepted], 1e3 * tol)
            done[stuck[at_optimum]] = True
            failed[stuck[~at_optimum]] = True
        moved = active[accepted]
        theta[moved], loss[moved], grad[moved], hess[moved] = new
        failed |= ~np.isfinite(theta).all(axis=1)
        if escape is not None and moved.size:
            off = moved[np.asarray(escape(theta[moved]), dtype=bool)]
            escaped[off] = True
            failed[off] = True
    done &= ~failed
    return NewtonResult(theta, loss, grad, hess, done, n_iter, failed,
                        None if escape is None else escaped)


def _halve_until_descent(objective, active, theta, loss, step, max_halving):
    """The largest step ``2^-h step`` (h < max_halving) that does not increase the loss,
    per active problem; returns (accepted mask, (theta, loss, grad, hess) of the accepted)."""
    step = step.copy()
    m = active.size
    todo = np.arange(m)
    new_theta = theta[active] - step
    new_loss = np.full(m, np.inf)
    new_grad = np.empty((m, theta.shape[1]))
    new_hess = np.empty((m, theta.shape[1], theta.shape[1]))
    for _ in range(max_halving):
        l_try, g_try, h_try = objective(active[todo], new_theta[todo])
        ref = loss[active[todo]]
        good = l_try <= ref + 1e-12 * np.abs(ref)
        idx = todo[good]
        new_loss[idx], new_grad[idx], new_hess[idx] = l_try[good], g_try[good], h_try[good]
        todo = todo[~good]
        if todo.size == 0:
            break
        step[todo] /= 2
        new_theta[todo] = theta[active[todo]] - step[todo]
    accepted = np.ones(m, dtype=bool)
    accepted[todo] = False
    return accepted, (new_theta[accepted], new_loss[accepted], new_grad[accepted],
                      new_hess[accepted])

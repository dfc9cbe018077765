"""The one Newton solver of the package: every family's fit and every refit minimises
through :func:`newton`.

``fit_cox``, ``fit_aft``, ``fit_fine_gray``, the cause-specific and multi-state fits
(per cause / transition ``fit_cox``), lifelines' and statsmodels' models refitted at their
maximum, ridge-penalised fits, exact leave-one-out refits of every family (one row or a
whole unit deleted, :mod:`coxinfluence.influence_functions.engine_refits`) and refits of a
reduced model all call :func:`newton` on a batch of objectives, each with the options its
problem needs:

- **line search**: step halving until the loss does not increase (as R's ``coxph``,
  ``survreg`` and scikit-survival), always on;
- **Levenberg damping** (``damping=True``): where the Hessian is not positive definite
  (a start far from the maximum, a scale far from the data's) the step is
  ``(H + mu I)^{-1} g``, ``mu = 1e-6 max(1, max|H|) - min(lambda_min(H), 0)``: the
  smallest shift that makes it a descent direction; without it such a problem fails
  (a Cox likelihood is convex: a non positive definite Hessian means no maximum);
- **Hessian updates** (``hessian="updated"``): the Hessian kept while ``max|grad|`` falls
  tenfold per step (a chord method), else updated by BFGS for up to
  :data:`BFGS_STEPS` slow steps and then recomputed; for objectives whose Hessian costs
  much more than their gradient (a lifelines parametric model through autodiff: 2.3x
  fewer seconds there). The result's ``hess`` is the exact Hessian at the end;
- **step bounds**: ``escape(theta)`` stops the problems whose iterate left any
  neighbourhood of a maximum (a refit running off along a monotone likelihood);
- **finishing steps** (``polish=k``): up to ``k`` plain Newton steps after convergence,
  each kept only where it lowers ``max|grad|`` (:func:`_polish`; R's ``survreg`` takes
  them: with covariates in large units the step test stops at a gradient of 1e-9);
- **a secant start** (``inverse=``, ``secant_steps=``, ``gradient=``): quasi-Newton steps
  from inverse-Hessian estimates refined by Broyden's updates, gradients only, no
  Hessian and no line search (:func:`_secant_steps`), before Newton takes the problems
  they did not converge: the engine's refits start there (Halley's start and its
  Jacobian; 85% of SUPPORT's Cox refits converge after one such step).

The objective is a callable ``objective(idx, theta, hess=True) -> (loss, grad, hess)``
for the problems ``idx`` of the batch (``hess=False``: the Hessian is None);
:func:`coxinfluence.likelihood.objective.cox_objective` builds Cox's. Convergence is one
rule, :func:`converged`, with one tolerance rule, :func:`gradient_tolerance`.

Two iterations stay outside, each for its reason: Coxnet's proximal Newton
(:func:`coxinfluence.models.coxnet.elastic_net_newton`: the L1 term is not smooth, so its
step solves a lasso subproblem, and convergence is the KKT conditions), and the autodiff
losses' loops (``coxinfluence.autodiff``: ``jax.lax`` loops traced under ``jit`` and
``vmap``, on the accelerator's arrays: a numpy loop would move every iterate to the host).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coxinfluence.numerics.rows import matmul_rows

__all__ = ["NewtonResult", "newton", "converged", "gradient_tolerance", "solve_batch",
           "solve_any", "halley_step", "BFGS_STEPS"]

#: slow steps (``max|grad|`` not falling tenfold) taken with BFGS's update of the Hessian
#: before it is recomputed (``hessian="updated"``)
BFGS_STEPS = 2
#: a step is accepted when the loss is not above ``loss (1 + SLACK)`` (rounding)
SLACK = 1e-12


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
    #: (B,) bool: converged in the secant start, without a loss, gradient or Hessian
    #: evaluated there (NaN); None without a secant start
    secant: np.ndarray = None


def gradient_tolerance(tol, weights, X=None, scale=None):
    """``tol``, or the summed gradient's rounding floor when that is larger:
    ``4 eps sum_i w_i s_i`` with ``s_i = max_j |X_ij|`` (``X`` given) or ``scale``.

    A gradient that sums one term per row (per event of Cox's partial likelihood, per
    failure of Fine-Gray's, per row of an AFT likelihood), each of size about ``s_i`` and
    scaled by its case weight, cannot be computed closer than that: with one weight of
    1e12 an absolute 1e-10 is below rounding and the refits would never converge. Each
    family passes the rows whose terms its gradient sums (``weights`` zero elsewhere) and
    their scale; with unit weights and covariates of ordinary scale the floor is far below
    1e-10 and this is ``tol``.

    Parameters
    ----------
    tol : float
        The caller's tolerance on ``max |gradient|``.
    weights : array_like, shape (n,)
        Each row's weight in the gradient's sum (0: the row adds no term).
    X : array_like, shape (n, d), optional
        The rows' covariates: ``s_i`` is the largest ``|x_ij|`` of the row (blocks of rows:
        no (n, d) temporary).
    scale : float or array_like, optional
        ``s_i`` when ``X`` is not given.

    Returns
    -------
    float
        The tolerance.

    Examples
    --------
    >>> import numpy as np
    >>> from coxinfluence.numerics.newton import gradient_tolerance
    >>> gradient_tolerance(1e-10, np.ones(3), np.array([[1.0, -2.0], [0.5, 0.0], [1.0, 1.0]]))
    1e-10
    >>> gradient_tolerance(1e-10, np.array([1e12, 1.0]), scale=1.0) > 1e-10
    True
    """
    weights = np.asarray(weights, dtype=np.float64)
    if X is None:
        total = float(np.sum(weights * np.abs(np.asarray(scale, dtype=np.float64))))
    else:
        total = 0.0
        for b0 in range(0, weights.size, 8192):   # cache-sized blocks
            Xb = X[b0:b0 + 8192]
            top = np.abs(Xb[:, 0])
            for j in range(1, Xb.shape[1]):      # row maxima column by column
                np.maximum(top, np.abs(Xb[:, j]), out=top)
            total += float(weights[b0:b0 + 8192] @ top)
    return max(float(tol), 4 * float(np.finfo(np.float64).eps) * total)


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


def damped_steps(H, g):
    """Levenberg's steps ``(H + mu I)^{-1} g`` for a batch whose Hessians are not positive
    definite: ``mu = 1e-6 max(1, max|H|) - min(lambda_min(H), 0)``, the smallest shift
    (up to rounding) that makes the step a descent direction. NaN where not finite."""
    d = g.shape[1]
    out = np.full_like(g, np.nan)
    finite = np.isfinite(H).all(axis=(1, 2)) & np.isfinite(g).all(axis=1)
    if finite.any():
        Hf = H[finite]
        lam = np.linalg.eigvalsh(0.5 * (Hf + Hf.transpose(0, 2, 1)))[:, 0]
        mu = (1e-6 * np.maximum(1.0, np.abs(Hf).max(axis=(1, 2)))
              - np.minimum(lam, 0.0))
        out[finite] = solve_any(Hf + mu[:, None, None] * np.eye(d)[None], g[finite])
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


def newton(objective, theta0, *, tol=1e-10, max_iter=50, max_halving=30, escape=None,
           damping=False, hessian="exact", polish=0, inverse=None, secant_steps=0,
           gradient=None) -> NewtonResult:
    """Newton-Raphson with step halving for a batch of B problems, with the options of
    the module docstring.

    Each iteration tries the step ``H^{-1} g`` and its halvings ``2^-h H^{-1} g``,
    ``h < max_halving``, until the loss does not increase (``SLACK`` relative); a problem
    whose Hessian is not positive definite (without ``damping``), or where no halved step
    decreases the loss away from an optimum, is marked ``failed``. Convergence is
    :func:`converged` (at a positive definite Hessian). ``escape(theta) -> (k,) bool``,
    when given, stops the problems whose new iterate it flags (failed, and ``escaped`` in
    the result).

    Parameters
    ----------
    objective : callable
        ``objective(idx, theta, hess=True) -> (loss (k,), grad (k, d), hess (k, d, d))``.
    theta0 : array_like, shape (B, d) or (d,)
        The starts.
    tol : float
        The gradient tolerance (:func:`gradient_tolerance`).
    max_iter, max_halving : int
        Newton iterations, and step halvings per iteration.
    escape : callable, optional
        ``escape(theta (k, d)) -> (k,) bool``: the iterate has left any neighbourhood of a
        maximum.
    damping : bool
        Levenberg's shift where the Hessian is not positive definite.
    hessian : {"exact", "updated"}
        Evaluate the Hessian at every iterate, or keep and update it (chord and BFGS).
    polish : int
        Finishing Newton steps after convergence where ``max|grad| > tol``.
    inverse : array_like, shape (B, d, d), optional
        Inverse-Hessian estimates at the starts: take up to ``secant_steps`` quasi-Newton
        steps with Broyden's updates first, gradients from ``gradient(idx, theta)``
        (default: the objective's, without Hessian).

    Returns
    -------
    NewtonResult
        ``theta``, ``loss``, ``grad``, ``hess`` (the exact Hessian) at the end, and per
        problem ``converged``, ``n_iter``, ``failed``, ``escaped``, ``secant``.

    Examples
    --------
    >>> import numpy as np
    >>> from coxinfluence.numerics.newton import newton
    >>> def objective(idx, theta, hess=True):   # (theta - 1)^4 / 4 + theta^2 / 2
    ...     t = theta[:, 0]
    ...     H = (3 * (t - 1) ** 2 + 1)[:, None, None] if hess else None
    ...     return (t - 1) ** 4 / 4 + t ** 2 / 2, ((t - 1) ** 3 + t)[:, None], H
    >>> res = newton(objective, np.array([[3.0], [-2.0]]))
    >>> res.converged.tolist(), np.round(res.theta[:, 0], 6).tolist()
    ([True, True], [0.317672, 0.317672])
    """
    if hessian not in ("exact", "updated"):
        raise ValueError(f"hessian must be 'exact' or 'updated'; got {hessian!r}")
    theta = np.array(np.atleast_2d(theta0), dtype=np.float64)
    B, d = theta.shape
    escaped = np.zeros(B, dtype=bool)
    secant = np.zeros(B, dtype=bool)
    if inverse is not None and secant_steps > 0:
        if gradient is None:
            def gradient(idx, th):
                return objective(idx, th, hess=False)[1]
        theta, secant, escaped = _secant_steps(gradient, theta, inverse, tol, secant_steps,
                                               escape)
    loss = np.full(B, np.nan)
    grad = np.full((B, d), np.nan)
    hess = np.full((B, d, d), np.nan)
    first = np.flatnonzero(~secant & ~escaped)
    if first.size:
        loss[first], grad[first], hess[first] = objective(first, theta[first])
    done = secant.copy()
    failed = escaped.copy()
    failed[first] |= ~np.isfinite(loss[first])
    n_iter = np.zeros(B, dtype=int)
    updated = hessian == "updated"
    exact = np.ones(B, dtype=bool)      # hess is the exact Hessian at theta
    slow = np.zeros(B, dtype=int)

    def refresh(idx):                   # the exact Hessian at theta (updated mode)
        if idx.size:
            loss[idx], grad[idx], hess[idx] = objective(idx, theta[idx])
            exact[idx], slow[idx] = True, 0

    for iteration in range(max_iter + 1):   # the last pass only tests convergence
        active = np.flatnonzero(~done & ~failed)
        if active.size == 0:
            break
        step, positive = solve_batch(hess[active], grad[active])
        if damping and not positive.all():
            step[~positive] = damped_steps(hess[active[~positive]], grad[active[~positive]])
        ok = np.isfinite(step).all(axis=1)
        failed[active[~ok]] = True
        active, step, positive = active[ok], step[ok], positive[ok]
        small = converged(theta[active], grad[active], step, tol) & positive
        done[active[small]] = True
        active, step = active[~small], step[~small]
        if iteration == max_iter or active.size == 0:
            break
        n_iter[active] += 1
        accepted, new = _halve_until_descent(objective, active, theta, loss, step,
                                             max_halving, hess=not updated)
        stuck = np.flatnonzero(~accepted)       # positions in active
        if updated and stuck.size:     # an updated Hessian may mislead: recompute it first
            stale = ~exact[active[stuck]]
            refresh(active[stuck[stale]])
            stuck = stuck[~stale]
        if stuck.size:
            # no step decreased the loss: at the optimum to rounding, or stuck (on a flat,
            # diverging direction of a separated likelihood the gradient is tiny but the
            # Newton step is not)
            at_optimum = converged(theta[active[stuck]], grad[active[stuck]], step[stuck],
                                   1e3 * tol)
            done[active[stuck[at_optimum]]] = True
            failed[active[stuck[~at_optimum]]] = True
        moved = active[accepted]
        new_theta, new_loss, new_grad, new_hess = new
        if updated:
            _update_hessians(hess, moved, exact, slow, new_theta - theta[moved],
                             new_grad - grad[moved], grad[moved])
            theta[moved], loss[moved], grad[moved] = new_theta, new_loss, new_grad
            refresh(moved[slow[moved] > BFGS_STEPS])
        else:
            theta[moved], loss[moved], grad[moved], hess[moved] = new
        failed |= ~np.isfinite(theta).all(axis=1)
        if escape is not None and moved.size:
            off = moved[np.asarray(escape(theta[moved]), dtype=bool)]
            escaped[off] = True
            failed[off] = True
    done &= ~failed
    if updated:
        refresh(np.flatnonzero(done & ~exact))
        done[done] &= solve_batch(hess[done], grad[done])[1]
    result = NewtonResult(theta, loss, grad, hess, done, n_iter, failed,
                          None if escape is None else escaped,
                          None if inverse is None else secant)
    return _polish(objective, result, tol, polish) if polish else result


def _update_hessians(hess, moved, exact, slow, s, y, grad_before):
    """``hessian="updated"`` after the accepted steps ``s`` of the problems ``moved``
    changed their gradients by ``y``: keep the Hessian where ``max|grad|`` fell tenfold
    (chord), else count a slow step and update it by BFGS while that is defined and at
    most :data:`BFGS_STEPS` slow steps were taken (beyond: ``slow`` above it asks for the
    exact one)."""
    exact[moved] = False
    after = np.abs(grad_before + y).max(axis=1)
    fast = after <= 0.1 * np.abs(grad_before).max(axis=1)
    slow_rows = np.flatnonzero(~fast)
    slow[moved[slow_rows]] += 1
    sy = np.einsum("bi,bi->b", s, y)
    bfgs = slow_rows[(slow[moved[slow_rows]] <= BFGS_STEPS) & (sy[slow_rows] > 0)]
    slow[moved[np.setdiff1d(slow_rows, bfgs)]] = BFGS_STEPS + 1
    if bfgs.size:
        H = hess[moved[bfgs]]
        Hs = np.einsum("bij,bj->bi", H, s[bfgs])
        hess[moved[bfgs]] = (H + y[bfgs, :, None] * y[bfgs, None, :] / sy[bfgs, None, None]
                             - Hs[:, :, None] * Hs[:, None, :]
                             / np.einsum("bi,bi->b", s[bfgs], Hs)[:, None, None])


def _halve_until_descent(objective, active, theta, loss, step, max_halving, hess=True):
    """The largest step ``2^-h step`` (h < max_halving) that does not increase the loss,
    per active problem; returns (accepted mask, (theta, loss, grad, hess) of the accepted;
    hess None when not asked)."""
    step = step.copy()
    m, d = active.size, theta.shape[1]
    todo = np.arange(m)
    new_theta = theta[active] - step
    new_loss = np.full(m, np.inf)
    new_grad = np.empty((m, d))
    new_hess = np.empty((m, d, d)) if hess else None
    for _ in range(max_halving):
        l_try, g_try, h_try = (objective(active[todo], new_theta[todo]) if hess
                               else objective(active[todo], new_theta[todo], hess=False))
        ref = loss[active[todo]]
        good = l_try <= ref + SLACK * np.abs(ref)
        idx = todo[good]
        new_loss[idx], new_grad[idx] = l_try[good], g_try[good]
        if hess:
            new_hess[idx] = h_try[good]
        todo = todo[~good]
        if todo.size == 0:
            break
        step[todo] /= 2
        new_theta[todo] = theta[active[todo]] - step[todo]
    accepted = np.ones(m, dtype=bool)
    accepted[todo] = False
    return accepted, (new_theta[accepted], new_loss[accepted], new_grad[accepted],
                      new_hess[accepted] if hess else None)


def _polish(objective, res, tol, steps):
    """Plain Newton steps for the converged problems of ``res`` whose gradient is still
    above ``tol``, each kept only where it lowers ``max |gradient|``. Newton's step test
    (:func:`converged`) stops once the step is at rounding level in ``theta``; with
    covariates in large units (age in years) the gradient can then still be 1e-9, which
    one more step takes to rounding (1e-12)."""
    for _ in range(steps):
        todo = np.flatnonzero(res.converged & (np.abs(res.grad).max(axis=1) > tol))
        if todo.size == 0:
            break
        step, ok = solve_batch(res.hess[todo], res.grad[todo])
        todo, step = todo[ok], step[ok]
        if todo.size == 0:
            break
        theta = res.theta[todo] - step
        loss, grad, hess = objective(todo, theta)
        better = (np.isfinite(loss) & (np.abs(grad).max(axis=1)
                                       < np.abs(res.grad[todo]).max(axis=1)))
        keep = todo[better]
        res.theta[keep], res.loss[keep] = theta[better], loss[better]
        res.grad[keep], res.hess[keep] = grad[better], hess[better]
        if not better.any():
            break
    return res


def _secant_steps(gradient, theta, inverse, tol, steps, escape):
    """Up to ``steps`` quasi-Newton steps ``theta -= J g`` per problem, ``J`` the
    inverse-Hessian estimates ``inverse`` refined by Broyden's updates
    (:func:`_broyden_update`), gradients only, no line search. A problem whose gradient
    is not finite goes back to its start and stops here (Newton takes it); one that
    ``escape`` flags stops, and is returned escaped if it is still off at the end.
    Returns ``(theta, converged, escaped)``; converged: ``max|g| <= tol`` or a step at
    rounding level."""
    start = theta
    theta = theta.copy()
    J = np.array(inverse, dtype=np.float64)
    B = theta.shape[0]
    done = np.zeros(B, dtype=bool)
    off = np.zeros(B, dtype=bool)       # no more secant steps
    prev = None
    for _ in range(steps):
        live = np.flatnonzero(~done & ~off)
        if live.size == 0:
            break
        try:
            g = gradient(live, theta[live])
        except FloatingPointError:
            break
        lost = ~np.isfinite(g).all(axis=1)
        if lost.any():                  # left the domain: Newton from the start
            back = live[lost]
            theta[back] = start[back]
            off[back] = True
            live, g = live[~lost], g[~lost]
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
        if escape is not None:
            away = np.asarray(escape(theta[live]), dtype=bool)
            done[live[away]] = False
            off[live[away]] = True
    ran_off = off & (np.asarray(escape(theta), dtype=bool) if escape is not None
                     else np.zeros(B, dtype=bool))
    return theta, done & ~ran_off, ran_off


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

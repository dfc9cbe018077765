"""What every loss family shares: input checks, the :class:`Loss` base, the optimizers.

A :class:`Loss` is the paper's non-decomposable loss ``L(theta, b)`` (Section "The
Versatile Influence Function", Definition "Non-Decomposable Loss"): ``b`` is the presence
vector over the ``n`` objects.  Its brute-force retrainer ``loo`` computes
``theta_hat(1_{-i})``, the minimizer with object ``i`` absent, whose difference with
``theta_hat(1)`` is the leave-one-out effect that the VIF (Definition "Versatile
Influence Function", Eq. VIF) approximates; the paper's experiments compare the two
(Section "Experiments", Table "pearson": "brute-force LOO retraining").

The optimizers are not formulas of the paper: :func:`newton_solve` (the one Newton
solver with step halving, for one problem or vmapped over a batch of presence vectors),
:func:`adam` (full-batch Adam, as the paper trains its Cox models, Appendix "Detailed
experiment setup") and :func:`_lbfgs` (unused by the families today).
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from coxinfluence.data.deletion import Deletion


# --------------------------------------------------------------------- input checks
def _as_float_matrix(X, name="X"):
    A = np.array(X, dtype=np.float64, copy=True)
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got {A.ndim} dimensions")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains non-finite values")
    return A


def _as_vector(x, n, name, dtype=np.float64):
    a = np.array(x, dtype=dtype, copy=True).reshape(-1) if np.ndim(x) else None
    if a is None or a.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array of length {n}")
    return a


def _presence(presence, n):
    if presence is None:
        return jnp.ones(n)
    p = jnp.asarray(presence, dtype=jnp.float64)
    if p.shape != (n,):
        raise ValueError(f"presence must have shape ({n},), got {tuple(p.shape)}")
    return p


# --------------------------------------------------------------------------- Newton
#: Step sizes tried by the halving: 1, 1/2, ..., 2^-(HALVINGS-1) = 2^-33 ~ 1.2e-10.
HALVINGS = 34
#: A step is accepted when ``f(new) <= f(old) + DESCENT_SLACK * |f(old)|`` (rounding).
DESCENT_SLACK = 1e-12
#: Relative ridge of the direction when the Hessian is exactly singular.
SINGULAR_RIDGE = 1e-10


class NewtonState(NamedTuple):
    """Carry of :func:`newton_solve`: the iterate, the Newton steps taken, ``max|grad|``
    at the iterate where the last :func:`newton_step` evaluated it, and whether that
    step moved (the solver runs while it does)."""

    theta: jax.Array
    steps: jax.Array
    gmax: jax.Array
    moved: jax.Array


def newton_init(theta):
    """The solver state at ``theta``, before any evaluation."""
    theta = jnp.asarray(theta, dtype=jnp.float64)
    return NewtonState(theta, jnp.zeros((), jnp.int32), jnp.asarray(jnp.inf, theta.dtype),
                       jnp.ones((), bool))


def _value_grad_hessian(f, theta):
    """``f``, its gradient and Hessian at ``theta`` from one forward-over-reverse pass."""
    def grad_aux(t):
        v, g = jax.value_and_grad(f)(t)
        return g, (v, g)

    H, (v, g) = jax.jacfwd(grad_aux, has_aux=True)(theta)
    return v, g, H


def _singular_solve(H, g):
    """``H^+ g`` for a singular symmetric ``H`` with ``g`` in its range (e.g. duplicated
    columns), as a ridge solve ``(H + mu I)^{-1} g`` with ``mu = SINGULAR_RIDGE max|H|``
    (what ``lstsq`` would give, up to ``mu``; cheaper to compile)."""
    mu = SINGULAR_RIDGE * jnp.max(jnp.abs(H))
    return jnp.linalg.solve(H + mu * jnp.eye(H.shape[0], dtype=H.dtype), g)


def newton_step(f, state, *, tol=1e-10, max_iter=50, damping=0.0, halvings=HALVINGS):
    """One Newton-Raphson step with step halving on a smooth scalar ``f`` (small d).

    At ``theta = state.theta``: value, gradient ``g`` and Hessian ``H``.  If
    ``max|g| <= tol`` or ``max_iter`` steps are taken, stay (``moved`` false).  Else
    direction ``(H + damping I)^{-1} g`` (:func:`_singular_solve` if ``H`` is exactly
    singular) and step size the largest of 1, 1/2, ..., 2^-(halvings-1) at which ``f``
    is finite and not above ``f(theta) (1 + DESCENT_SLACK)`` (a ``lax.while_loop`` over
    the halvings, usually one evaluation); if none, stay (a stall).  JAX-traceable and
    vmappable: the same step serves one problem and a batch of them."""
    th = state.theta
    value, g, H = _value_grad_hessian(f, th)
    gmax = jnp.max(jnp.abs(g))
    wants = ~(gmax <= tol) & (state.steps < max_iter)

    def search():
        Hd = H + damping * jnp.eye(th.shape[0], dtype=H.dtype) if damping else H
        d = jnp.linalg.solve(Hd, g)
        d = jax.lax.cond(jnp.all(jnp.isfinite(d)), lambda: d,
                         lambda: _singular_solve(Hd, g))
        bound = value + DESCENT_SLACK * jnp.abs(value)

        def descends(v):
            return jnp.isfinite(v) & (v <= bound)

        def halve(c):
            return c[0] + 1, f(th - jnp.ldexp(1.0, -(c[0] + 1)) * d)

        k, v = jax.lax.while_loop(lambda c: ~descends(c[1]) & (c[0] < halvings - 1),
                                  halve, (jnp.zeros((), jnp.int32), f(th - d)))
        return th - jnp.ldexp(1.0, -k) * d, descends(v)

    new, ok = jax.lax.cond(wants, search, lambda: (th, jnp.zeros((), bool)))
    moved = wants & ok
    return NewtonState(jnp.where(moved, new, th), state.steps + moved, gmax, moved)


def newton_solve(f, theta0, *, tol=1e-10, max_iter=50, damping=0.0):
    """Newton-Raphson with step halving from ``theta0``: :func:`newton_step` until it
    stays (``max|grad| <= tol``, ``max_iter`` steps taken, or a stall).  A
    ``lax.while_loop``, JAX-traceable (``tol`` and ``max_iter`` may be traced): jit it
    for one problem, vmap it over presence vectors for a batch (each problem then
    stops at its own convergence).  Returns the final :class:`NewtonState`; converged
    iff ``state.gmax <= tol`` (``gmax`` is at the returned ``theta``).

    Not :func:`coxinfluence.numerics.newton.newton` (the numpy core's one solver): this
    loop is traced by JAX, so it runs under ``jit`` and ``vmap`` on the accelerator's
    arrays; the numpy solver would move every iterate to the host and back."""
    return jax.lax.while_loop(
        lambda s: s.moved,
        lambda s: newton_step(f, s, tol=tol, max_iter=max_iter, damping=damping),
        newton_init(theta0))


# ------------------------------------------------------------ other optimizers
def _lbfgs(f, theta0, *, gtol=1e-9, max_iter=5000):
    vg = jax.jit(jax.value_and_grad(f))

    def fun(x):
        v, g = vg(jnp.asarray(x))
        return float(v), np.asarray(g, dtype=np.float64)

    res = scipy.optimize.minimize(fun, np.asarray(theta0, dtype=np.float64), jac=True,
                                  method="L-BFGS-B",
                                  options={"gtol": gtol, "ftol": 0.0, "maxiter": max_iter,
                                           "maxcor": 30})
    return res.x, res


def adam(f, theta0, *, lr=0.01, steps=200, b1=0.9, b2=0.999, eps=1e-8):
    """Full-batch Adam (Kingma & Ba 2015) on ``f`` for ``steps`` steps (lax.scan).

    Pure function of its inputs; vmappable over a batch of objectives via closures."""
    def step(state, t):
        th, m, v = state
        g = jax.grad(f)(th)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mh = m / (1 - b1 ** (t + 1))
        vh = v / (1 - b2 ** (t + 1))
        return (th - lr * mh / (jnp.sqrt(vh) + eps), m, v), None

    th0 = jnp.asarray(theta0, dtype=jnp.float64)
    (th, _, _), _ = jax.lax.scan(step, (th0, jnp.zeros_like(th0), jnp.zeros_like(th0)),
                                 jnp.arange(steps, dtype=jnp.float64))
    return th


# ----------------------------------------------------------------------- the base
class Loss:
    """A non-decomposable loss ``L(theta, presence)`` (paper Definition
    "Non-Decomposable Loss").

    Subclasses define ``loss(theta, presence)``; see the package docstring."""

    n_objects: int
    n_params: int
    n_terms = None
    #: warning of the Newton fits (:meth:`_newton_fit`, :meth:`_newton_loo`)
    _newton_warning = "Newton fit did not converge"

    def __call__(self, theta, presence):
        return self.loss(theta, presence)

    def loss(self, theta, presence):  # pragma: no cover - abstract
        raise NotImplementedError

    def _loo_presences(self, objects):
        """``(objects, presence)``: the objects deleted (all by default) and the
        (B, n) presence matrix, row b without object ``objects[b]``."""
        n = self.n_objects
        objs = np.arange(n) if objects is None else np.asarray(objects, dtype=np.int64)
        if objs.ndim != 1 or (objs.size and (objs.min() < 0 or objs.max() >= n)):
            raise ValueError(f"objects must be 1-D integer indices in [0, {n})")
        return objs, Deletion.of_rows(n, objs).presence

    # Newton fits (losses with few parameters: Cox, GLM) ------------------------
    def _newton_solvers(self):
        """``(one, batch)``: :func:`newton_solve` on ``L(., presence)`` jitted for one
        presence vector and vmapped over a (B, n) batch, compiled once per loss."""
        if "_newton_fns" not in self.__dict__:
            def solve(theta0, presence, tol, max_iter):
                s = newton_solve(lambda t: self.loss(t, presence), theta0, tol=tol,
                                 max_iter=max_iter)
                return s.theta, s.gmax

            self._newton_fns = (jax.jit(solve),
                                jax.jit(jax.vmap(solve, in_axes=(None, 0, None, None))))
        return self._newton_fns

    def _newton_fit(self, presence, theta0, tol, max_iter):
        p = _presence(presence, self.n_objects)
        th0 = jnp.asarray(self.init_params() if theta0 is None else theta0, jnp.float64)
        th, gmax = self._newton_solvers()[0](th0, p, tol, max_iter)
        if not gmax <= tol:
            warnings.warn(self._newton_warning, RuntimeWarning, stacklevel=3)
        return np.asarray(th)

    def _newton_loo(self, theta_hat, objects, tol, max_iter, batch):
        objs, P = self._loo_presences(objects)
        run = self._newton_solvers()[1]
        th0 = jnp.asarray(theta_hat, dtype=jnp.float64)
        out = np.empty((objs.size, self.n_params))
        failed = 0
        for s in range(0, objs.size, batch):
            Pb = P[s:s + batch]
            k = Pb.shape[0]
            if k < batch and objs.size > batch:   # one compiled shape: repeat the last
                Pb = np.concatenate([Pb, np.repeat(Pb[-1:], batch - k, axis=0)])
            th, gmax = run(th0, jnp.asarray(Pb), tol, max_iter)
            out[s:s + k] = np.asarray(th)[:k]
            failed += int(np.sum(~(np.asarray(gmax)[:k] <= tol)))
        if failed:
            warnings.warn(f"{self._newton_warning} ({failed} of {objs.size} deletions)",
                          RuntimeWarning, stacklevel=3)
        return out

"""VIF and the infinitesimal (case-weight) influence function by autodiff.

Paper: "A Versatile Influence Function for Data Attribution with Non-Decomposable
Loss", Definition "Versatile Influence Function" (Eq. VIF) and Eq. VIF-target:

    VIF(i)   = -(H/n)^{-1} grad_theta [ L(theta_hat, 1) - L(theta_hat, 1_{-i}) ]
    VIF_f(i) = grad_theta f(theta_hat) . VIF(i)
    H        = grad^2_theta L(theta_hat, 1),   n = number of objects.

Both approximate ``n * (theta_hat - theta_hat_{-i})`` (paper scale); the predicted
leave-one-out change is ``theta_hat_{-i} - theta_hat ~= -VIF(i) / n``.

``weight_influence`` is the classical infinitesimal IF for case weights,
``IF(i) = -(H/n)^{-1} d/dw_i grad_theta L_w(theta_hat, w) |_{w=1}`` (paper Eq.
IF-decomposable up to the factor n; for Cox with R's weighted partial likelihood it
is Reid's (1985) IF, since R's score residual is ``-d/dw_i grad L``).
"""
from __future__ import annotations

import numpy as np
import jax
import jax.numpy as jnp

from .solvers import make_solver

__all__ = ["vif", "weight_influence"]

_DEFAULT_BATCH_BYTES = 256 * 1024**2


def _check_inputs(loss_fn, theta_hat, n_objects, objects):
    if not callable(loss_fn):
        raise ValueError("loss_fn must be a callable loss_fn(theta, presence)")
    try:
        n = int(n_objects)
    except (TypeError, ValueError):
        raise ValueError(f"n_objects must be a positive integer, got {n_objects!r}") from None
    if n != n_objects or n < 1:
        raise ValueError(f"n_objects must be a positive integer, got {n_objects!r}")
    theta = np.array(theta_hat, dtype=np.float64, copy=True)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(f"theta_hat must be a non-empty 1-D parameter vector, got shape {theta.shape}")
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta_hat contains non-finite values")
    if objects is None:
        objs = np.arange(n)
    else:
        objs = np.asarray(objects)
        if objs.ndim != 1 or not np.issubdtype(objs.dtype, np.integer):
            raise ValueError("objects must be a 1-D array of integer object indices")
        if objs.size and (objs.min() < 0 or objs.max() >= n):
            raise ValueError(f"objects must lie in [0, {n}), got range [{objs.min()}, {objs.max()}]")
    val = jax.jit(loss_fn)(jnp.asarray(theta), jnp.ones(n))
    if jnp.ndim(val) != 0:
        raise ValueError(f"loss_fn(theta, presence) must return a scalar, got shape {jnp.shape(val)}")
    if not np.isfinite(float(val)):
        raise ValueError("loss_fn(theta_hat, all present) is not finite")
    return theta, n, objs.astype(np.int64)


def _batch_size(loss_fn, d, n, batch_size):
    if batch_size is not None:
        b = int(batch_size)
        if b < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
        return b
    per = getattr(loss_fn, "per_object_bytes", None)
    per = int(per) if per else 8 * 4 * (d + n)
    return int(max(1, min(n, 512, _DEFAULT_BATCH_BYTES // max(per, 1))))


def _target_jacobian(target_fn, theta):
    t = jnp.asarray(target_fn(jnp.asarray(theta)))
    if t.ndim > 1:
        raise ValueError(f"target_fn must return a scalar or a 1-D vector, got shape {t.shape}")
    if t.ndim == 0:
        J = jax.grad(lambda th: jnp.asarray(target_fn(th)))(jnp.asarray(theta))[None, :]
    else:
        J = jax.jacrev(target_fn)(jnp.asarray(theta))
    J = np.asarray(J, dtype=np.float64)
    if not np.all(np.isfinite(J)):
        raise ValueError("gradient of target_fn at theta_hat is not finite")
    return J


def _iterate_batches(fn, objs, bsz):
    """Yield (slice, rows) of fn(padded index batch), padding the last batch so the
    jit-compiled function sees one shape only."""
    m = objs.size
    for s in range(0, m, bsz):
        idx = objs[s:s + bsz]
        k = idx.size
        if k < bsz:
            idx = np.concatenate([idx, np.repeat(idx[-1:], bsz - k)])
        yield slice(s, s + k), np.asarray(fn(jnp.asarray(idx)))[:k]


def _apply(loss_fn, theta, n, objs, grad_batch, *, target_fn, solver, damping,
           solver_options, batch_size):
    d = theta.size
    bsz = _batch_size(loss_fn, d, n, batch_size)
    slv = make_solver(solver, loss_fn, jnp.asarray(theta), n, damping=damping,
                      **(solver_options or {}))
    m = objs.size
    if target_fn is None:
        G = np.empty((m, d))
        for sl, rows in _iterate_batches(grad_batch, objs, bsz):
            G[sl] = rows
        return -slv.solve(G)
    J = _target_jacobian(target_fn, theta)
    K = J.shape[0]
    if K <= m:
        # s_k = (H/n)^{-1} grad f_k, then VIF_f(i) = -g_i . s_k (never stores n x d)
        S = slv.solve(J)  # (K, d)
        out = np.empty((m, K))
        for sl, rows in _iterate_batches(grad_batch, objs, bsz):
            out[sl] = -rows @ S.T
        return out
    G = np.empty((m, d))
    for sl, rows in _iterate_batches(grad_batch, objs, bsz):
        G[sl] = rows
    return -slv.solve(G) @ J.T


def vif(loss_fn, theta_hat, n_objects, *, target_fn=None, solver="explicit",
        objects=None, batch_size=None, damping=0.0, solver_options=None):
    """Versatile Influence Function of every object (paper Eq. VIF / VIF-target).

    ``VIF(i) = -(H/n)^{-1} grad_theta [L(theta_hat, 1) - L(theta_hat, 1_{-i})]`` with
    ``H = grad^2 L(theta_hat, 1)`` and ``n = n_objects`` (paper scale: approximates
    ``n * (theta_hat - theta_hat_{-i})``).

    Parameters
    ----------
    loss_fn : callable ``loss_fn(theta, presence) -> scalar``
        JAX-traceable; ``presence`` is a float vector of length ``n_objects`` with 1 for
        present and 0 for removed objects.  The loss is a *sum* over its terms.
    theta_hat : (d,) array, the fitted parameters (flat vector).
    n_objects : int
    target_fn : optional callable ``theta -> scalar or (K,)``; if given, returns
        ``grad target . VIF(i)`` per object, shape (m, K) (K = 1 for a scalar target).
    solver : ``"explicit"`` | ``"cg"`` | ``"lissa"`` | a solver object with ``.solve``.
    objects : optional 1-D integer array, compute only these objects (default all).
    batch_size : objects per vmapped gradient batch (default from a 256 MiB budget,
        using ``loss_fn.per_object_bytes`` when the loss provides it).
    damping : Tikhonov term added to ``H/n`` (default 0).
    solver_options : dict passed to the solver (e.g. ``tol``, ``depth``, ``seed``).

    Returns
    -------
    numpy array, (m, d) without a target, (m, K) with one; m = len(objects).
    """
    theta, n, objs = _check_inputs(loss_fn, theta_hat, n_objects, objects)
    theta_j = jnp.asarray(theta)
    ones = jnp.ones(n)
    grad = jax.grad(loss_fn)
    g_full = jax.jit(grad)(theta_j, ones)

    def one(th, gf, i):  # theta as an argument, not a constant (no XLA constant folding)
        return gf - grad(th, ones.at[i].set(0.0))

    batched = jax.jit(jax.vmap(one, in_axes=(None, None, 0)))
    grad_batch = lambda idx: batched(theta_j, g_full, idx)  # noqa: E731
    return _apply(loss_fn, theta, n, objs, grad_batch, target_fn=target_fn, solver=solver,
                  damping=damping, solver_options=solver_options, batch_size=batch_size)


def weight_influence(loss_fn, theta_hat, n_objects, *, target_fn=None, solver="explicit",
                     objects=None, batch_size=None, damping=0.0, solver_options=None):
    """Infinitesimal (case-weight) influence function, paper scale.

    ``IF(i) = -(H/n)^{-1} d/dw_i grad_theta L_w(theta_hat, w) |_{w = 1}``: the mixed
    partial derivative is one forward-mode Jacobian pass (vmapped JVPs in ``w``).  The
    weighted loss is ``loss_fn.weighted(theta, w)`` when the loss object provides it
    (Cox with Efron ties: case weights with R's formula, which differ from deletion)
    and ``loss_fn(theta, w)`` otherwise (losses where presence enters smoothly, e.g.
    ``sum_i w_i l_i``).  For a decomposable loss this is exactly the classical IF
    ``-n H^{-1} grad l_i`` (paper Lemma IF-M); for Cox it is Reid's (1985) IF.
    Same arguments and return shape as :func:`vif`.
    """
    theta, n, objs = _check_inputs(loss_fn, theta_hat, n_objects, objects)
    lw = getattr(loss_fn, "weighted", None) or loss_fn
    theta_j = jnp.asarray(theta)
    ones = jnp.ones(n)

    def one(th, i):
        gw = lambda w: jax.grad(lw)(th, w)  # noqa: E731
        return jax.jvp(gw, (ones,), (jnp.zeros(n).at[i].set(1.0),))[1]

    batched = jax.jit(jax.vmap(one, in_axes=(None, 0)))
    grad_batch = lambda idx: batched(theta_j, idx)  # noqa: E731
    return _apply(loss_fn, theta, n, objs, grad_batch, target_fn=target_fn, solver=solver,
                  damping=damping, solver_options=solver_options, batch_size=batch_size)

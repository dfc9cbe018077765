"""Inverse-Hessian solvers for the VIF: explicit (Cholesky), conjugate gradient, LiSSA.

All solvers solve, for a batch of right-hand sides ``V`` (k, d), the linear systems::

    A x = v,    A = H / n + damping * I,    H = grad^2_theta L(theta_hat, 1),

i.e. they apply ``(H/n + damping I)^{-1}``, the matrix in the paper's VIF (Eq. VIF)
with an optional Tikhonov damping (Koh & Liang 2017) for Hessians that are not
positive definite (neural networks, embeddings with gauge symmetries).

* ``ExplicitSolver``: materializes ``H`` (Hessian-vector products on basis vectors: all
  d at once when d <= 256, else 64 at a time), Cholesky factorization (scipy).
  Memory O(d^2): refuses with :class:`HessianMemoryError` above ``max_bytes``.
* ``CGSolver``: conjugate gradient on Hessian-vector products (forward-over-reverse),
  never forms ``H``; paper appendix "Efficient Inverse Hessian Approximation".
* ``LiSSASolver``: the stochastic Neumann-series estimator of Agarwal, Bullins & Hazan
  (2017) as used by Koh & Liang (2017):
  ``h_0 = v``, ``h_j = v + (1 - damping/scale) h_{j-1} - (H_j/n) h_{j-1} / scale``,
  ``x = h_J / scale`` averaged over repeats, where ``H_j`` is an unbiased estimate
  of ``H`` from a random batch of the loss's *terms* (paper appendix: non-decomposable
  losses that are sums of simpler terms, e.g. Cox event-time terms, ListMLE queries).
"""
from __future__ import annotations

import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

__all__ = [
    "HessianMemoryError",
    "hessian_matrix",
    "hessian_extreme_eigenvalues",
    "ExplicitSolver",
    "CGSolver",
    "LiSSASolver",
    "make_solver",
    "DEFAULT_MAX_HESSIAN_BYTES",
]

DEFAULT_MAX_HESSIAN_BYTES = 4 * 1024**3


_CACHE = weakref.WeakKeyDictionary()
_CACHE_STRONG = {}


def per_loss_cache(loss_fn) -> dict:
    """The dict of compiled functions kept for ``loss_fn``.

    Weakly keyed on the loss object (by identity, kept alive, for callables that cannot be
    weakly referenced). Compiled functions stored here take ``theta`` and the presence
    vector as arguments, so JAX's jit cache serves every later call with the same shapes.

    Parameters
    ----------
    loss_fn : callable
        The loss.

    Returns
    -------
    dict
        The loss's cache (created empty on first use).
    """
    try:
        d = _CACHE.get(loss_fn)
        if d is None:
            d = _CACHE[loss_fn] = {}
        return d
    except TypeError:
        entry = _CACHE_STRONG.get(id(loss_fn))
        if entry is None:
            entry = _CACHE_STRONG[id(loss_fn)] = (loss_fn, {})
        return entry[1]


def _cached(loss_fn, key, build):
    d = per_loss_cache(loss_fn)
    if key not in d:
        d[key] = build()
    return d[key]


def _loss_hvp_cols(loss_fn):
    """jit(vmap) of (theta, presence, V) -> rows grad^2_theta L(theta, presence) v."""
    def build():
        g = jax.grad(loss_fn)

        def cols(th, pres, V):
            return jax.vmap(lambda v: jax.jvp(lambda t: g(t, pres), (th,), (v,))[1])(V)
        return jax.jit(cols)
    return _cached(loss_fn, "hvp_cols", build)


class NotPositiveDefiniteError(ValueError):
    """``H/n + damping I`` is not positive definite.

    Raised by :class:`ExplicitSolver`: ``theta_hat`` may not be a strict local minimum.
    A damping above ``-min_eigenvalue`` makes the explicit solve possible.

    Parameters
    ----------
    message : str
        The error message.
    min_eigenvalue : float
        The smallest eigenvalue of ``H/n`` (without damping).

    Examples
    --------
    The negative of a convex loss has a negative definite Hessian:

    >>> import jax.numpy as jnp
    >>> from coxinfluence import autodiff
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = X @ np.array([1.0, -0.5]) + rng.normal(size=40)
    >>> def loss(theta, presence):  # least squares: H = X'X
    ...     return 0.5 * jnp.sum(presence * (y - X @ theta) ** 2)
    >>> theta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    >>> try:
    ...     autodiff.ExplicitSolver(lambda th, b: -loss(th, b), theta_hat, 40)
    ... except autodiff.NotPositiveDefiniteError as err:
    ...     print(round(err.min_eigenvalue, 4))
    -1.1151
    """

    def __init__(self, message, min_eigenvalue):
        super().__init__(message)
        self.min_eigenvalue = min_eigenvalue


class HessianMemoryError(MemoryError):
    """The explicit d x d Hessian would exceed the allowed memory (use CG or LiSSA).

    Raised by :func:`hessian_matrix` and :class:`ExplicitSolver` when ``2*d*d*8`` bytes
    (the Hessian and its Cholesky factor, float64) exceed ``max_bytes``; the message states
    the bytes needed.

    See Also
    --------
    CGSolver, LiSSASolver : solvers that never form the Hessian.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from coxinfluence import autodiff
    >>> try:
    ...     autodiff.hessian_matrix(lambda th: jnp.sum(th ** 2), np.zeros(3), max_bytes=10)
    ... except autodiff.HessianMemoryError as err:
    ...     print(err)
    explicit Hessian with d=3 parameters needs 144 bytes ... use solver='cg' or solver='lissa'
    """


def _hvp_fn(f, theta):
    """Return v -> grad^2 f(theta) v (forward-over-reverse, jit-compiled)."""
    g = jax.grad(f)

    def hvp(v):
        return jax.jvp(g, (theta,), (v,))[1]

    return hvp


def hessian_extreme_eigenvalues(loss_fn, theta_hat, n_objects, *, iters=80, seed=0):
    """Estimates of the smallest and largest eigenvalues of ``H/n``.

    ``H = grad^2 L(theta_hat, 1)``, by ``iters`` Lanczos steps on Hessian-vector products
    (full reorthogonalization; never forms H).  The extreme Ritz values converge first
    (Golub & Van Loan 2013, Sec. 10.1); they lie inside the spectrum, so ``lambda_min`` is
    an upper bound on the true smallest eigenvalue: add a margin when choosing a damping
    from it.  Memory: ``iters`` vectors of length d.

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(theta, presence) -> scalar``.
    theta_hat : array-like
        ``(d,)`` the fitted parameters.
    n_objects : int
        The number of objects ``n``.
    iters : int, default 80
        Lanczos steps (at most d are taken; >= 1).
    seed : int, default 0
        Seed of the start vector.

    Returns
    -------
    lambda_min : float
        Estimate of the smallest eigenvalue of ``H/n`` (an upper bound).
    lambda_max : float
        Estimate of the largest eigenvalue (a lower bound).

    Raises
    ------
    ValueError
        ``iters < 1``, or the Hessian-vector products are not finite.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from coxinfluence import autodiff
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = X @ np.array([1.0, -0.5]) + rng.normal(size=40)
    >>> def loss(theta, presence):  # least squares: H = X'X
    ...     return 0.5 * jnp.sum(presence * (y - X @ theta) ** 2)
    >>> theta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    >>> lo, hi = autodiff.hessian_extreme_eigenvalues(loss, theta_hat, 40)
    >>> print(round(lo, 4), round(hi, 4))
    0.771 1.1151
    >>> print(np.round(np.linalg.eigvalsh(X.T @ X / 40), 4))
    [0.771  1.1151]
    """
    theta = jnp.asarray(theta_hat, dtype=jnp.float64)
    d, n = int(theta.shape[0]), float(n_objects)
    k = int(min(iters, d))
    if k < 1:
        raise ValueError(f"iters must be >= 1, got {iters!r}")
    ones = jnp.ones(int(n_objects))
    mv = jax.jit(lambda th, v: _hvp_fn(lambda t: loss_fn(t, ones), th)(v) / n)
    Q = np.zeros((k, d))
    alpha, beta = np.zeros(k), np.zeros(k)
    q = np.random.default_rng(seed).standard_normal(d)
    q /= np.linalg.norm(q)
    for j in range(k):
        Q[j] = q
        w = np.array(mv(theta, jnp.asarray(q)), dtype=np.float64)  # writable copy
        alpha[j] = q @ w
        w -= Q[:j + 1].T @ (Q[:j + 1] @ w)      # full reorthogonalization (twice:
        w -= Q[:j + 1].T @ (Q[:j + 1] @ w)      # "twice is enough", Parlett)
        b = float(np.linalg.norm(w))
        if j + 1 == k or b <= 1e-12 * max(abs(alpha[j]), 1e-300):
            k = j + 1                           # an invariant subspace: exact
            break
        beta[j] = b
        q = w / b
    ritz = scipy.linalg.eigvalsh_tridiagonal(alpha[:k], beta[:k - 1]) if k > 1 else alpha[:1]
    if not np.all(np.isfinite(ritz)):
        raise ValueError("Hessian-vector products at theta_hat are not finite")
    return float(ritz[0]), float(ritz[-1])


def _hessian_need_bytes(d):
    return 2 * d * d * 8


def _check_hessian_memory(d, max_bytes):
    need = _hessian_need_bytes(d)
    if max_bytes is not None and need > max_bytes:
        raise HessianMemoryError(
            f"explicit Hessian with d={d} parameters needs {need} bytes "
            f"({need / 2**30:.2f} GiB: H and its Cholesky factor, float64) > "
            f"max_bytes={int(max_bytes)} ({max_bytes / 2**30:.2f} GiB); "
            "use solver='cg' or solver='lissa'"
        )


def _hessian_from_cols(hvp_rows, d, chunk_size):
    if chunk_size is None:
        chunk_size = d if d <= 256 else 64
    H = np.empty((d, d))
    eye_chunk = np.zeros((chunk_size, d))
    for start in range(0, d, chunk_size):
        stop = min(start + chunk_size, d)
        E = eye_chunk.copy()
        E[np.arange(stop - start), np.arange(start, stop)] = 1.0
        H[start:stop] = np.asarray(hvp_rows(E))[: stop - start]
    return 0.5 * (H + H.T)


def hessian_matrix(f, theta, *, chunk_size=None, max_bytes=DEFAULT_MAX_HESSIAN_BYTES):
    """Dense Hessian of a scalar function ``f`` at ``theta`` as a float64 numpy array.

    Columns are built from Hessian-vector products on basis vectors, ``chunk_size``
    at a time (vmapped), so the intermediate memory is bounded. The result is symmetrized.

    Parameters
    ----------
    f : callable
        ``f(theta) -> scalar``, JAX-traceable.
    theta : array-like
        ``(d,)`` the point.
    chunk_size : int, optional
        Basis vectors per batch (default all d at once when d <= 256, else 64).
    max_bytes : int or None, default 4 GiB
        Memory budget for ``2*d*d*8`` bytes (H and the Cholesky factor that usually
        follows); None: no limit.

    Returns
    -------
    numpy.ndarray
        ``(d, d)`` the Hessian.

    Raises
    ------
    HessianMemoryError
        ``2*d*d*8`` exceeds ``max_bytes`` (the message states the bytes needed).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from coxinfluence import autodiff
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = X @ np.array([1.0, -0.5]) + rng.normal(size=40)
    >>> def loss(theta, presence):  # least squares: H = X'X
    ...     return 0.5 * jnp.sum(presence * (y - X @ theta) ** 2)
    >>> theta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    >>> H = autodiff.hessian_matrix(lambda th: loss(th, np.ones(40)), theta_hat)
    >>> bool(np.allclose(H, X.T @ X))
    True
    """
    theta = jnp.asarray(theta, dtype=jnp.float64)
    d = int(theta.shape[0])
    _check_hessian_memory(d, max_bytes)
    # theta is a jit argument, not a closure constant (avoids XLA constant folding)
    hvp_t = jax.jit(jax.vmap(lambda th, v: _hvp_fn(f, th)(v), in_axes=(None, 0)))
    return _hessian_from_cols(lambda E: hvp_t(theta, E), d, chunk_size)


def _check_rhs(V, d):
    V = jnp.asarray(V, dtype=jnp.float64)
    if V.ndim == 1:
        V = V[None, :]
    if V.ndim != 2 or V.shape[1] != d:
        raise ValueError(f"right-hand sides must have shape (k, {d}), got {tuple(V.shape)}")
    return V


class _Base:
    def __init__(self, loss_fn, theta_hat, n_objects, damping=0.0):
        if not (np.isfinite(damping) and damping >= 0):
            raise ValueError(f"damping must be a finite number >= 0, got {damping!r}")
        self.theta = jnp.asarray(theta_hat, dtype=jnp.float64)
        self.d = int(self.theta.shape[0])
        self.n = int(n_objects)
        self.damping = float(damping)
        ones = jnp.ones(self.n)
        self.loss_fn = loss_fn
        self._f = lambda th: loss_fn(th, ones)


class ExplicitSolver(_Base):
    """Cholesky solve with the explicit Hessian ``A = H/n + damping*I``.

    The Hessian is materialized from Hessian-vector products on basis vectors
    (:func:`hessian_matrix`), then factorized (scipy). Memory O(d^2).

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(theta, presence) -> scalar``.
    theta_hat : array-like
        ``(d,)`` the fitted parameters.
    n_objects : int
        The number of objects ``n``.
    damping : float, default 0.0
        Tikhonov term added to ``H/n`` (finite, >= 0).
    max_bytes : int or None, default 4 GiB
        Memory budget of the Hessian and its Cholesky factor.
    chunk_size : int, optional
        Basis vectors per Hessian-vector batch (as :func:`hessian_matrix`).

    Attributes
    ----------
    A : numpy.ndarray
        ``(d, d)`` the matrix ``H/n + damping I``.

    Raises
    ------
    NotPositiveDefiniteError
        ``A`` is not positive definite (the message names the smallest eigenvalue).
    HessianMemoryError
        ``H`` would not fit in ``max_bytes``.
    ValueError
        A bad ``damping``, or the Hessian has non-finite entries.

    See Also
    --------
    CGSolver, LiSSASolver : solvers that never form ``H``.
    make_solver : builds a solver by name.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from coxinfluence import autodiff
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = X @ np.array([1.0, -0.5]) + rng.normal(size=40)
    >>> def loss(theta, presence):  # least squares: H = X'X
    ...     return 0.5 * jnp.sum(presence * (y - X @ theta) ** 2)
    >>> theta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    >>> solver = autodiff.ExplicitSolver(loss, theta_hat, 40)
    >>> print(np.round(solver.solve([1.0, 0.0]), 4))  # (H/n)^{-1} e_1
    [[ 1.0857 -0.1998]]
    """

    name = "explicit"

    def __init__(self, loss_fn, theta_hat, n_objects, damping=0.0, *,
                 max_bytes=DEFAULT_MAX_HESSIAN_BYTES, chunk_size=None):
        super().__init__(loss_fn, theta_hat, n_objects, damping)
        _check_hessian_memory(self.d, max_bytes)
        cols = _loss_hvp_cols(loss_fn)
        ones = np.ones(self.n)
        H = _hessian_from_cols(lambda E: cols(self.theta, ones, E), self.d, chunk_size)
        if not np.all(np.isfinite(H)):
            raise ValueError("Hessian of the loss at theta_hat has non-finite entries")
        A = H / self.n + self.damping * np.eye(self.d)
        self.A = A
        try:
            self._cf = scipy.linalg.cho_factor(A, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            lam_h = float(np.linalg.eigvalsh(H / self.n)[0])
            raise NotPositiveDefiniteError(
                "Hessian/n + damping*I is not positive definite (smallest eigenvalue of "
                f"Hessian/n {lam_h:.3e}, damping={self.damping:g}); theta_hat may not be a "
                f"strict local minimum: pass damping > {max(-lam_h, 0.0):.3e} or check the fit",
                lam_h) from None

    def solve(self, V):
        """Apply ``A^{-1}`` to a batch of right-hand sides.

        Parameters
        ----------
        V : array-like
            ``(k, d)`` right-hand sides (one vector: ``(d,)``).

        Returns
        -------
        numpy.ndarray
            ``(k, d)`` the solutions ``x = A^{-1} v``, one row per right-hand side.

        Raises
        ------
        ValueError
            ``V`` has not ``d`` columns.
        """
        V = np.asarray(_check_rhs(V, self.d))
        if self.d <= 64:
            # small d: apply A^{-1} (from the Cholesky factor) as one matrix product;
            # LAPACK's triangular solves with many right-hand sides are slower here
            if not hasattr(self, "_Ainv"):
                Ai = scipy.linalg.cho_solve(self._cf, np.eye(self.d), check_finite=False)
                self._Ainv = 0.5 * (Ai + Ai.T)
            return V @ self._Ainv
        X = scipy.linalg.cho_solve(self._cf, V.T, check_finite=False).T
        return np.ascontiguousarray(X)


class CGSolver(_Base):
    """Conjugate gradient on Hessian-vector products, batched over right-hand sides.

    Never forms ``H`` (forward-over-reverse Hessian-vector products; paper appendix
    "Efficient Inverse Hessian Approximation"). Stops a column when
    ``||A x - v|| <= tol * ||v||``; warns if ``max_iter`` is hit.

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(theta, presence) -> scalar``.
    theta_hat : array-like
        ``(d,)`` the fitted parameters.
    n_objects : int
        The number of objects ``n``.
    damping : float, default 0.0
        Tikhonov term added to ``H/n`` (finite, >= 0).
    tol : float, default 1e-10
        Relative residual at which a column stops.
    max_iter : int, optional
        Iterations at most (default ``max(10 d, 100)``).
    rhs_batch : int, default 64
        How many systems are solved at once (memory ~ ``rhs_batch`` HVPs).

    Attributes
    ----------
    last_n_iter : int
        Iterations of the last :meth:`solve`.
    last_max_rel_residual : float
        Its worst relative residual.

    Raises
    ------
    ValueError
        A bad ``damping``.

    See Also
    --------
    ExplicitSolver : Cholesky with the explicit Hessian.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from coxinfluence import autodiff
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = X @ np.array([1.0, -0.5]) + rng.normal(size=40)
    >>> def loss(theta, presence):  # least squares: H = X'X
    ...     return 0.5 * jnp.sum(presence * (y - X @ theta) ** 2)
    >>> theta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    >>> solver = autodiff.CGSolver(loss, theta_hat, 40)
    >>> print(np.round(solver.solve([1.0, 0.0]), 4))
    [[ 1.0857 -0.1998]]
    >>> solver.last_n_iter
    2
    """

    name = "cg"

    def __init__(self, loss_fn, theta_hat, n_objects, damping=0.0, *, tol=1e-10,
                 max_iter=None, rhs_batch=64):
        super().__init__(loss_fn, theta_hat, n_objects, damping)
        self.tol = float(tol)
        self.max_iter = int(max_iter) if max_iter is not None else max(10 * self.d, 100)
        self.rhs_batch = int(rhs_batch)
        f = self._f
        n, lam = float(self.n), self.damping
        tol2, max_iter = self.tol**2, self.max_iter

        def cg(theta, B):
            hvp = _hvp_fn(f, theta)

            def apply_A(P):  # (k, d) -> (k, d)
                return jax.vmap(hvp)(P) / n + lam * P

            X = jnp.zeros_like(B)
            R = B
            P = R
            rs = jnp.sum(R * R, axis=1)
            bn = jnp.maximum(jnp.sum(B * B, axis=1), 1e-300)

            def cond(state):
                X, R, P, rs, it = state
                return jnp.logical_and(it < max_iter, jnp.any(rs > tol2 * bn))

            def body(state):
                X, R, P, rs, it = state
                active = rs > tol2 * bn
                AP = apply_A(P)
                pAp = jnp.sum(P * AP, axis=1)
                alpha = jnp.where(active, rs / jnp.where(pAp != 0, pAp, 1.0), 0.0)
                X = X + alpha[:, None] * P
                R = R - alpha[:, None] * AP
                rs_new = jnp.sum(R * R, axis=1)
                beta = jnp.where(active, rs_new / jnp.where(rs > 0, rs, 1.0), 0.0)
                P = jnp.where(active[:, None], R + beta[:, None] * P, P)
                return X, R, P, jnp.where(active, rs_new, rs), it + 1

            X, R, P, rs, it = jax.lax.while_loop(cond, body, (X, R, P, rs, 0))
            return X, jnp.sqrt(rs / bn), it

        self._cg = jax.jit(cg)
        self.last_n_iter = 0
        self.last_max_rel_residual = 0.0

    def solve(self, V):
        """Apply ``A^{-1}`` to a batch of right-hand sides.

        Parameters
        ----------
        V : array-like
            ``(k, d)`` right-hand sides (one vector: ``(d,)``).

        Returns
        -------
        numpy.ndarray
            ``(k, d)`` the solutions ``x = A^{-1} v``, one row per right-hand side.

        Raises
        ------
        ValueError
            ``V`` has not ``d`` columns.

        Warns
        -----
        RuntimeWarning
            CG did not reach ``tol`` in ``max_iter`` iterations (is ``H/n + damping I``
            positive definite?).
        """
        V = _check_rhs(V, self.d)
        out = []
        worst, iters = 0.0, 0
        for s in range(0, V.shape[0], self.rhs_batch):
            X, rel, it = self._cg(self.theta, V[s:s + self.rhs_batch])
            out.append(np.asarray(X))
            worst = max(worst, float(jnp.max(rel)))
            iters = max(iters, int(it))
        self.last_n_iter, self.last_max_rel_residual = iters, worst
        if not np.isfinite(worst) or worst > max(self.tol, 1e-300) * 1.0001:
            warnings.warn(
                f"CG did not reach tol={self.tol:g} in {self.max_iter} iterations "
                f"(worst relative residual {worst:.3e}); is H/n + damping*I positive "
                "definite?", RuntimeWarning, stacklevel=2)
        return np.concatenate(out, axis=0)


class LiSSASolver(_Base):
    """LiSSA: stochastic Neumann series for ``A^{-1} v`` (Agarwal, Bullins & Hazan 2017).

    Recursion (Koh & Liang 2017, with our scale/damping convention)::

        h_0 = v
        h_j = v + h_{j-1} - (H_j / n + damping I) h_{j-1} / scale
        x   = h_depth / scale,  averaged over ``repeats`` independent chains,

    valid when ``scale`` exceeds the largest eigenvalue of every ``H_j/n + damping I``.
    ``H_j`` is the Hessian of a random batch of ``batch_terms`` loss terms, rescaled to
    be unbiased, when the loss exposes ``n_terms`` and ``sampled_loss(theta, presence,
    idx)`` (= sum of the terms in ``idx`` plus ``len(idx)/n_terms`` of any
    regularizer); otherwise the full Hessian is used (deterministic Neumann series).

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(theta, presence) -> scalar``; with ``n_terms`` and ``sampled_loss`` for
        sampled Hessians.
    theta_hat : array-like
        ``(d,)`` the fitted parameters.
    n_objects : int
        The number of objects ``n``.
    damping : float, default 0.0
        Tikhonov term added to ``H/n`` (finite, >= 0).
    depth : int, default 1000
        Steps of each chain (>= 1).
    repeats : int, default 1
        Independent chains averaged (>= 1).
    batch_terms : int, optional
        Loss terms per sampled Hessian; None: the full Hessian.
    scale : float, optional
        The series' scale; None takes ``scale_factor`` times the largest eigenvalue of
        ``H/n + damping I`` estimated by ``power_iters`` steps of power iteration.
    scale_factor : float, default 1.5
        See ``scale``.
    seed : int or jax.Array, default 0
        Randomness: an int seed or a JAX key.
    rhs_batch : int, default 256
        Right-hand sides solved at once.
    power_iters : int, default 50
        Power-iteration steps for the default ``scale``.

    Raises
    ------
    ValueError
        ``depth`` or ``repeats`` < 1, ``batch_terms`` for a loss without
        ``n_terms``/``sampled_loss``, a scale that is not positive, or a bad ``damping``.

    See Also
    --------
    CGSolver : deterministic, also without forming ``H``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from coxinfluence import autodiff
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = X @ np.array([1.0, -0.5]) + rng.normal(size=40)
    >>> def loss(theta, presence):  # least squares: H = X'X
    ...     return 0.5 * jnp.sum(presence * (y - X @ theta) ** 2)
    >>> theta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    >>> solver = autodiff.LiSSASolver(loss, theta_hat, 40, depth=100, scale=3.0)
    >>> print(np.round(solver.solve([1.0, 0.0]), 4))
    [[ 1.0857 -0.1998]]
    """

    name = "lissa"

    def __init__(self, loss_fn, theta_hat, n_objects, damping=0.0, *, depth=1000,
                 repeats=1, batch_terms=None, scale=None, scale_factor=1.5, seed=0,
                 rhs_batch=256, power_iters=50):
        super().__init__(loss_fn, theta_hat, n_objects, damping)
        if depth < 1 or repeats < 1:
            raise ValueError("LiSSA depth and repeats must be >= 1")
        self.depth, self.repeats = int(depth), int(repeats)
        self.rhs_batch = int(rhs_batch)
        self.key = seed if isinstance(seed, jax.Array) else jax.random.PRNGKey(int(seed))
        n, lam = float(self.n), self.damping
        n_terms = getattr(loss_fn, "n_terms", None)
        self.sampled = n_terms is not None and hasattr(loss_fn, "sampled_loss") \
            and batch_terms is not None
        if batch_terms is not None and not self.sampled:
            raise ValueError("batch_terms given but the loss has no n_terms/sampled_loss")
        if scale is None:
            v = jax.random.normal(jax.random.PRNGKey(12345), (self.d,))
            f = self._f
            mv = jax.jit(lambda th, v: _hvp_fn(f, th)(v) / n + lam * v)
            lam_max = 0.0
            for _ in range(power_iters):
                v = v / jnp.linalg.norm(v)
                w = mv(self.theta, v)
                lam_max = float(jnp.vdot(v, w))
                v = w
            scale = scale_factor * abs(lam_max)
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"LiSSA scale must be a positive number, got {scale!r}")
        self.scale = float(scale)
        depth, scale = self.depth, self.scale
        ones = jnp.ones(self.n)
        f = self._f

        if self.sampled:
            n_terms, bsz = int(n_terms), int(batch_terms)
            factor = n_terms / bsz

            def hvp_batch(theta, idx, P):
                fb = lambda th: loss_fn.sampled_loss(th, ones, idx)  # noqa: E731
                h = _hvp_fn(fb, theta)
                return factor * jax.vmap(h)(P) / n + lam * P

            def draw(key):
                return jax.random.randint(key, (bsz,), 0, n_terms)
        else:
            def hvp_batch(theta, idx, P):
                return jax.vmap(_hvp_fn(f, theta))(P) / n + lam * P

            def draw(key):
                return jnp.zeros((1,), dtype=jnp.int32)

        def chain(theta, key, V):
            keys = jax.random.split(key, depth)

            def step(Hs, k):
                Hs = V + Hs - hvp_batch(theta, draw(k), Hs) / scale
                return Hs, None

            Hs, _ = jax.lax.scan(step, V, keys)
            return Hs / scale

        def run(theta, key, V):
            keys = jax.random.split(key, self.repeats)
            acc = jnp.zeros_like(V)
            for r in range(self.repeats):
                acc = acc + chain(theta, keys[r], V)
            return acc / self.repeats

        self._run = jax.jit(run)

    def solve(self, V):
        """Apply ``A^{-1}`` to a batch of right-hand sides.

        Parameters
        ----------
        V : array-like
            ``(k, d)`` right-hand sides (one vector: ``(d,)``).

        Returns
        -------
        numpy.ndarray
            ``(k, d)`` the solutions ``x = A^{-1} v``, one row per right-hand side.

        Raises
        ------
        ValueError
            ``V`` has not ``d`` columns, or the series diverged (``scale`` too small for
            the sampled Hessians: pass a larger ``scale`` or ``scale_factor``).
        """
        V = _check_rhs(V, self.d)
        out = []
        for s in range(0, V.shape[0], self.rhs_batch):
            self.key, sub = jax.random.split(self.key)
            X = np.asarray(self._run(self.theta, sub, V[s:s + self.rhs_batch]))
            if not np.all(np.isfinite(X)):
                raise ValueError(
                    f"LiSSA diverged (scale={self.scale:.3e} too small for the sampled "
                    "Hessians?): pass a larger scale or scale_factor")
            out.append(X)
        return np.concatenate(out, axis=0)


_SOLVERS = {"explicit": ExplicitSolver, "cg": CGSolver, "lissa": LiSSASolver}


def make_solver(solver, loss_fn, theta_hat, n_objects, *, damping=0.0, **options):
    """Build the named solver, or pass through an already constructed solver object.

    Parameters
    ----------
    solver : {"explicit", "cg", "lissa"} or solver object
        The name (:class:`ExplicitSolver`, :class:`CGSolver`, :class:`LiSSASolver`), or
        anything with ``.solve(V)``, returned as it is.
    loss_fn : callable
        ``loss_fn(theta, presence) -> scalar``.
    theta_hat : array-like
        ``(d,)`` the fitted parameters.
    n_objects : int
        The number of objects ``n``.
    damping : float, default 0.0
        Tikhonov term added to ``H/n``.
    **options
        The solver's keyword options (e.g. ``tol``, ``depth``, ``seed``).

    Returns
    -------
    object
        The solver, with ``.solve(V)`` applying ``(H/n + damping I)^{-1}``.

    Raises
    ------
    ValueError
        An unknown solver name.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from coxinfluence import autodiff
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = X @ np.array([1.0, -0.5]) + rng.normal(size=40)
    >>> def loss(theta, presence):  # least squares: H = X'X
    ...     return 0.5 * jnp.sum(presence * (y - X @ theta) ** 2)
    >>> theta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    >>> solver = autodiff.make_solver("explicit", loss, theta_hat, 40)
    >>> type(solver).__name__
    'ExplicitSolver'
    >>> autodiff.make_solver(solver, loss, theta_hat, 40) is solver
    True
    """
    if hasattr(solver, "solve"):
        return solver
    if solver not in _SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {sorted(_SOLVERS)}")
    return _SOLVERS[solver](loss_fn, theta_hat, n_objects, damping, **options)


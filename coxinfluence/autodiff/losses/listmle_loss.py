"""ListMLE with a linear scorer: listwise learning-to-rank, object = item or query.

Paper Section "Non-Decomposable Loss", Example 3 ("Listwise Learning-to-Rank"),
Eq. listmle::

    L_LTR(theta) = - sum_{i=1}^m sum_{j=1}^k ( f(x_i; theta)_j
                       - log sum_{l in [n] minus {y_i^(1), ..., y_i^(j-1)}} exp(f(x_i; theta)_l) ),

the j-th term scoring the j-th ranked item ``y_i^(j)`` of query ``i``: decomposable over
queries, not over items (deleting an item changes every softmax).

Besides the exact fits (:meth:`ListMLELoss.fit`, :meth:`ListMLELoss.loo`) the class
trains as the paper does (Appendix "Detailed experiment setup": Adam, learning rate
0.001, weight decay 5e-4, batch size 128, 100 epochs): :meth:`ListMLELoss.fit_adam`,
vmapped over a batch of presence vectors so that the brute-force refits share one
compiled scan; and builds the explicit Hessian from its Kronecker structure
(:meth:`ListMLELoss.hessian`, :meth:`ListMLELoss.hessian_solver`), which the generic
Hessian-vector-product columns cannot afford at Delicious's 983 items (8847
parameters).
"""
from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse
from jax.flatten_util import ravel_pytree

from ._common import Loss, _as_float_matrix, _presence


def _listmle_query_terms(S, R, b, removal="delete"):
    """-log Plackett-Luce likelihood of each query's top-k list (paper Eq. listmle).

    S: (m, n) scores, R: (m, k) item indices (-1 = padding), b: (n,) item presence.
    Term of position j (if item y_j present): ``-(s_{y_j} - log sum_{l candidate, not
    ranked before j} e^{s_l})``.  ``removal="delete"``: a removed item leaves the
    rankings *and* every candidate set (the sums); ``removal="labels"``: it leaves
    only the rankings (its label is dropped, the list closes up) and stays a
    candidate in every softmax."""
    sm = jax.lax.stop_gradient(jnp.max(S, axis=1, keepdims=True))
    e = jnp.exp(S - sm) if removal == "labels" else b[None, :] * jnp.exp(S - sm)
    tot = e.sum(1)
    valid = R >= 0
    Rc = jnp.where(valid, R, 0)
    by = b[Rc] * valid
    sy = jnp.take_along_axis(S, Rc, axis=1) - sm
    ey = jnp.take_along_axis(e, Rc, axis=1) * (by if removal == "labels" else valid)
    Z = tot[:, None] - (jnp.cumsum(ey, axis=1) - ey)
    logZ = jnp.log(jnp.where(by > 0, Z, 1.0))
    return -jnp.sum(by * (sy - logZ), axis=1)


class _MatrixSolver:
    """``solve(V)`` = rows of ``V`` times ``A^{-1}`` for a symmetric positive definite
    ``A`` (Cholesky, scipy); the interface :func:`coxinfluence.autodiff.vif` takes."""

    name = "explicit (structured Hessian)"

    def __init__(self, A, scale=1.0, at=None):
        self.A = A
        #: ``A = H / scale + damping I``; ``at``: the parameters H was computed at
        self.scale, self.at = float(scale), at
        self._cf = scipy.linalg.cho_factor(A, lower=True, check_finite=False)

    def solve(self, V):
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
        return np.ascontiguousarray(scipy.linalg.cho_solve(self._cf, V.T,
                                                           check_finite=False).T)


class ListMLELoss(Loss):
    """ListMLE with a linear scorer ``s(x) = x W + c`` (W: p x n_items), plus
    ``l2/2 ||theta||^2`` (makes the softmax-invariant bias identifiable).

    ``objects="items"`` (paper Example 3): presence over the n items;
    ``objects="queries"``: presence over queries, a decomposable loss written as a
    non-decomposable one (VIF = classical IF exactly).  Terms for LiSSA: queries."""

    def __init__(self, features, rankings, n_items=None, *, objects="items", l2=1.0,
                 removal="delete"):
        F = _as_float_matrix(features, "features")
        R = np.asarray(rankings)
        if R.ndim != 2 or R.shape[0] != F.shape[0] or not np.issubdtype(R.dtype, np.integer):
            raise ValueError("rankings must be an integer (n_queries, k) array, -1 = padding")
        n_items = int(R.max()) + 1 if n_items is None else int(n_items)
        if R.max() >= n_items or R.min() < -1:
            raise ValueError(f"rankings entries must be -1 or in [0, {n_items})")
        for row in R:
            r = row[row >= 0]
            if np.unique(r).size != r.size:
                raise ValueError("an item appears twice in one ranking")
        if objects not in ("items", "queries"):
            raise ValueError(f"objects must be 'items' or 'queries', got {objects!r}")
        if not (np.isfinite(l2) and l2 >= 0):
            raise ValueError("l2 must be >= 0")
        if removal not in ("delete", "labels"):
            raise ValueError(f"removal must be 'delete' or 'labels', got {removal!r}")
        self.removal = removal
        self.F, self.R, self.n_items, self.objects, self.l2 = F, R, n_items, objects, float(l2)
        self.m = F.shape[0]
        self.n_objects = n_items if objects == "items" else self.m
        self.n_terms = self.m
        self._F, self._R = jnp.asarray(F), jnp.asarray(R)
        p = F.shape[1]
        _, self._unravel = ravel_pytree({"W": jnp.zeros((p, n_items)), "c": jnp.zeros(n_items)})

    @property
    def n_params(self):
        return (self.F.shape[1] + 1) * self.n_items

    @property
    def per_object_bytes(self):
        return 8 * 6 * self.m * self.n_items

    def init_params(self, seed=0):
        return np.zeros(self.n_params)

    def scores(self, theta, F=None):
        q = self._unravel(theta)
        return (self._F if F is None else jnp.asarray(F)) @ q["W"] + q["c"]

    def _split(self, presence):
        if self.objects == "items":
            return presence, jnp.ones(self.m)
        return jnp.ones(self.n_items), presence

    def loss(self, theta, presence):
        bi, bq = self._split(presence)
        t = _listmle_query_terms(self.scores(theta), self._R, bi, self.removal)
        return jnp.sum(bq * t) + 0.5 * self.l2 * jnp.sum(theta * theta)

    def sampled_loss(self, theta, presence, idx):
        bi, bq = self._split(presence)
        Fi, Ri = self._F[idx], self._R[idx]
        q = self._unravel(theta)
        t = _listmle_query_terms(Fi @ q["W"] + q["c"], Ri, bi, self.removal)
        frac = idx.shape[0] / self.m
        return jnp.sum(bq[idx] * t) + 0.5 * self.l2 * frac * jnp.sum(theta * theta)

    def query_loss(self, theta, features, rankings):
        """Target of the paper's Section "Experiments": ListMLE loss of each test query
        (all items)."""
        return _listmle_query_terms(self.scores(theta, features), jnp.asarray(rankings),
                                    jnp.ones(self.n_items))

    def _compiled(self):
        if not hasattr(self, "_vg"):
            self._vg = jax.jit(jax.value_and_grad(self.loss))
            self._hcols = jax.jit(jax.vmap(
                lambda th, p, v: jax.jvp(lambda t: jax.grad(self.loss)(t, p), (th,), (v,))[1],
                in_axes=(None, None, 0)))
        return self._vg, self._hcols

    def fit(self, presence=None, theta0=None, *, gtol=1e-9, newton_tol=1e-9):
        """L-BFGS to ``gtol``, then Newton steps (explicit Hessian) to ``newton_tol``
        (``newton_tol=None``: no Newton polish)."""
        p = _presence(presence, self.n_objects)
        vg, hcols = self._compiled()

        def fun(x):
            v, g = vg(jnp.asarray(x), p)
            return float(v), np.asarray(g, dtype=np.float64)

        th0 = self.init_params() if theta0 is None else np.asarray(theta0, dtype=np.float64)
        res = scipy.optimize.minimize(fun, th0, jac=True, method="L-BFGS-B",
                                      options={"gtol": gtol, "ftol": 0.0, "maxiter": 5000,
                                               "maxcor": 30})
        th = res.x
        d = th.size
        # Newton polish with the explicit Hessian (built in chunks of 128 columns)
        for _ in range(0 if newton_tol is None else 5):
            g = np.asarray(vg(jnp.asarray(th), p)[1])
            if np.max(np.abs(g)) <= newton_tol:
                break
            H = np.empty((d, d))
            for s0 in range(0, d, 128):
                E = np.zeros((128, d))
                k = min(128, d - s0)
                E[np.arange(k), s0 + np.arange(k)] = 1.0
                H[s0:s0 + k] = np.asarray(hcols(jnp.asarray(th), p, jnp.asarray(E)))[:k]
            th = th - np.linalg.solve(0.5 * (H + H.T), g)
        return np.asarray(th)

    def loo(self, theta_hat, objects=None, *, tol=1e-9, polish=False, start_noise=0.0,
            seed=0):
        """Brute-force LOO: one refit per object, L-BFGS from ``theta_hat`` (plus
        N(0, start_noise^2) noise drawn with ``seed``, for a "different seed" run) to
        ``max|grad| <= tol``.  The loss is convex in theta (ListMLE is convex in the
        linear scores) plus ``l2/2 ||theta||^2``, hence l2-strongly convex: the refit
        is within ``||grad|| / l2`` of the exact minimizer, so no Newton polish is
        needed (``polish=True`` adds it, with the explicit Hessian: slow).  The
        compiled loss and gradient are shared by all refits."""
        objs, P = self._loo_presences(objects)
        if self.l2 <= 0 and not polish:
            raise ValueError("loo without polish needs l2 > 0 (strong convexity)")
        rng = np.random.default_rng(seed)
        out = np.empty((objs.size, self.n_params))
        th0 = np.asarray(theta_hat, dtype=np.float64)
        for k in range(objs.size):
            start = th0 + start_noise * rng.normal(size=th0.size) if start_noise else th0
            out[k] = self.fit(P[k], start, gtol=tol, newton_tol=tol if polish else None)
        return out

    # ------------------------------------------------ the paper's training protocol
    def adam_init(self, seed=0):
        """Initial parameters of ``torch.nn.Linear(p, n_items)`` (PyTorch's default
        initialization: W and c uniform on [-1/sqrt(p), 1/sqrt(p)]), drawn with
        ``seed`` (int or numpy Generator), flat in this loss's layout (W row-major, then
        c)."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        p, n = self.F.shape[1], self.n_items
        bound = 1.0 / np.sqrt(p)
        W = rng.uniform(-bound, bound, size=(p, n))
        c = rng.uniform(-bound, bound, size=n)
        return np.concatenate([W.ravel(), c])

    def _adam_run(self):
        if "_adam_fn" not in self.__dict__:
            F, R, removal = self._F, self._R, self.removal

            def batch_loss(th, b, idx, w):
                q = self._unravel(th)
                t = _listmle_query_terms(F[idx] @ q["W"] + q["c"], R[idx], b, removal)
                return jnp.sum(w * t) / jnp.sum(w)

            grads = jax.vmap(jax.grad(batch_loss), in_axes=(0, 0, None, None))

            def run(th0, P, idx, wts, lr, wd, b1, b2, eps):
                def step(carry, xs):
                    th, m1, m2, t = carry
                    g = grads(th, P, xs[0], xs[1]) + wd * th      # coupled L2, as torch
                    t = t + 1.0
                    m1 = b1 * m1 + (1.0 - b1) * g
                    m2 = b2 * m2 + (1.0 - b2) * g * g
                    th = th - lr * (m1 / (1.0 - b1 ** t)) / (jnp.sqrt(m2 / (1.0 - b2 ** t)) + eps)
                    return (th, m1, m2, t), None

                z = jnp.zeros_like(th0)
                (th, _, _, _), _ = jax.lax.scan(step, (th0, z, z, jnp.zeros(())), (idx, wts))
                return th

            self._adam_fn = jax.jit(run)
        return self._adam_fn

    def minibatches(self, seed=0, *, epochs=100, batch_size=128, shuffle=True):
        """The minibatch schedule of :meth:`fit_adam`: ``(idx, w)``, both (steps,
        batch_size), ``steps = epochs * ceil(m / batch_size)``; each epoch visits every
        query once (a permutation drawn with ``seed`` when ``shuffle``, else file order
        as torch's ``DataLoader(shuffle=False)``), the last batch of an epoch is the
        remainder (``drop_last=False``), padded with weight-0 rows.  ``seed``: int or
        Generator (the one :meth:`fit_adam` draws the initialization from first)."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        m, B = self.m, int(batch_size)
        if B < 1 or int(epochs) < 1:
            raise ValueError("batch_size and epochs must be >= 1")
        nb = -(-m // B)
        idx = np.zeros((int(epochs), nb * B), dtype=np.int32)
        w = np.zeros((int(epochs), nb * B))
        for e in range(int(epochs)):
            idx[e, :m] = rng.permutation(m) if shuffle else np.arange(m)
            w[e, :m] = 1.0
        return idx.reshape(-1, B), w.reshape(-1, B)

    def fit_adam(self, presence=None, *, seed=0, epochs=100, batch_size=128, lr=1e-3,
                 weight_decay=None, shuffle=True, b1=0.9, b2=0.999, eps=1e-8, chunk=None):
        """Minibatch Adam as the paper trains (torch.optim.Adam defaults b1, b2, eps):
        each step ``g = grad mean_{q in batch} l_q(theta; presence) + weight_decay *
        theta`` - torch's ``Adam(weight_decay=...)``, an L2 term added to the gradient
        (coupled, not AdamW's decoupled decay) - then Adam's bias-corrected update.

        The objective Adam descends is ``(1/m) L(theta, presence)`` with this loss's
        ridge ``l2 = weight_decay * m``; ``weight_decay=None`` takes ``self.l2 / m``, so
        that :meth:`fit` minimises exactly the same objective to convergence.

        ``presence``: None or (n_items,) -> one fit, (d,); a (R, n_items) matrix -> R fits
        (brute-force refits), (R, d), all with the same initialization
        (:meth:`adam_init`) and minibatch order (:meth:`minibatches`), drawn from
        ``seed`` (an int; a second "random seed" run passes another int).  The R fits
        run vmapped, ``chunk`` at a time (default: 16 for up to ~100 items, fewer for
        more, where vmapping stops paying), in one compiled ``lax.scan`` over the steps."""
        if self.objects != "items":
            raise ValueError("fit_adam trains with objects='items' presence vectors")
        wd = self.l2 / self.m if weight_decay is None else float(weight_decay)
        P = np.ones(self.n_items) if presence is None else np.asarray(presence, np.float64)
        one = P.ndim == 1
        P = np.atleast_2d(P)
        if P.shape[1] != self.n_items:
            raise ValueError(f"presence must have {self.n_items} columns")
        rng = np.random.default_rng(seed)
        th0 = self.adam_init(rng)
        idx, w = self.minibatches(rng, epochs=epochs, batch_size=batch_size, shuffle=shuffle)
        run = self._adam_run()
        R = P.shape[0]
        if chunk is None:
            chunk = max(1, min(16, 2000 // self.n_items))
        c = max(1, min(int(chunk), R))
        c = -(-R // -(-R // c))                  # equal chunks: the least padding
        out = np.empty((R, self.n_params))
        idx_j, w_j = jnp.asarray(idx), jnp.asarray(w)
        for s0 in range(0, R, c):
            Pc = P[s0:s0 + c]
            k = Pc.shape[0]
            if k < c:                                   # one compiled shape
                Pc = np.concatenate([Pc, np.repeat(Pc[-1:], c - k, axis=0)])
            th = run(jnp.asarray(np.repeat(th0[None], c, axis=0)), jnp.asarray(Pc), idx_j,
                     w_j, lr, wd, b1, b2, eps)
            out[s0:s0 + k] = np.asarray(th)[:k]
        return out[0] if one else out

    # ------------------------------------------------ explicit Hessian (structured)
    def hessian(self, theta, *, max_chunk_bytes=64 * 1024**2):
        """Explicit Hessian of ``L(theta, 1)`` (all objects present), (d, d), built from
        the Kronecker structure of a linear scorer instead of d Hessian-vector products.

        With ``xt = (x, 1)`` and per query the score Hessian ``M_q`` of Eq. listmle,
        ``H = sum_q (xt xt^T) kron M_q + l2 I`` in the layout ``index = a * n + l``.
        For a ranked list with softmax ``p_j = u_j / Z_j`` over the candidates left at
        position j (``u_j = e - r_j``, ``e = exp(s)``, ``r_j`` the ranked-before part),
        ``M_q = diag(sum_j p_j) - sum_j u_j u_j^T / Z_j^2``, and the last sum is
        ``a (e - rho/a)(e - rho/a)^T`` (one symmetric rank-m product for all queries)
        plus a k x k block on the ranked items (``rho`` lives on them).  Cost ~
        (p+1)^2 n^2 m / 2 for the dense part."""
        th = np.asarray(theta, dtype=np.float64)
        p1, n = self.F.shape[1] + 1, self.n_items
        D = p1 * n
        q = self._unravel(jnp.asarray(th))
        W, c = np.asarray(q["W"]), np.asarray(q["c"])
        X = np.column_stack([self.F, np.ones(self.m)])
        H4 = np.zeros((p1, n, p1, n))
        H = H4.reshape(D, D)
        ar = np.arange(n)
        step = max(1, min(self.m, int(max_chunk_bytes // (8 * D))))
        for s0 in range(0, self.m, step):
            Xq, Rq = X[s0:s0 + step], self.R[s0:s0 + step]
            cm = Xq.shape[0]
            S = Xq[:, :-1] @ W + c
            e = np.exp(S - S.max(1, keepdims=True))
            valid = Rq >= 0
            Rc = np.where(valid, Rq, 0)
            ey = np.take_along_axis(e, Rc, axis=1) * valid
            Z = np.where(valid, e.sum(1)[:, None] - (np.cumsum(ey, 1) - ey), 1.0)
            w1, w2 = valid / Z, valid / Z ** 2
            A, a = w1.sum(1), w2.sum(1)
            C = A[:, None] - np.cumsum(w1, 1)            # sum_{j > t} 1 / Z_j
            Dt = a[:, None] - np.cumsum(w2, 1)           # sum_{j > t} 1 / Z_j^2
            qi, ti = np.nonzero(valid)
            yi = Rc[qi, ti]
            # diagonal part: diag(sum_j p_j) = diag(A e - scatter(ey C))
            d = e * A[:, None]
            d[qi, yi] -= ey[qi, ti] * C[qi, ti]
            XX = (Xq[:, :, None] * Xq[:, None, :]).reshape(cm, p1 * p1)
            H4[:, ar, :, ar] += (XX.T @ d).reshape(p1, p1, n).transpose(2, 0, 1)
            # sum_j u_j u_j^T / Z_j^2 = a e e^T - e rho^T - rho e^T + K
            #                         = a (e - rho/a)(e - rho/a)^T + (K - rho rho^T / a),
            # rho = scatter(ey Dt) and K[t,t'] = ey_t ey_t' Dt[max(t,t')] on the ranked
            # items: one dense symmetric rank-m product (dsyrk, lower triangle) ...
            ia = np.where(a > 0, 1.0 / np.where(a > 0, a, 1.0), 0.0)
            rho = ey * Dt
            u = e.copy()
            u[qi, yi] -= rho[qi, ti] * ia[qi]
            U = ((np.sqrt(a)[:, None] * Xq)[:, :, None] * u[:, None, :]).reshape(cm, D)
            H -= scipy.linalg.blas.dsyrk(1.0, U, trans=1, lower=1)
            del U
            # ... and a k x k block per query on its ranked items
            for r0 in range(0, cm, 256):
                v = valid[r0:r0 + 256]
                qq, t1, t2 = np.nonzero(v[:, :, None] & v[:, None, :])
                qq = qq + r0
                kv = (ey[qq, t1] * ey[qq, t2] * Dt[qq, np.maximum(t1, t2)]
                      - rho[qq, t1] * rho[qq, t2] * ia[qq])
                up, inv = np.unique(Rc[qq, t1] * n + Rc[qq, t2], return_inverse=True)
                Y = scipy.sparse.csr_matrix((kv, (inv.ravel(), qq)), shape=(up.size, cm))
                H4[:, up // n, :, up % n] -= np.asarray(Y @ XX).reshape(up.size, p1, p1)
        # dsyrk filled the lower triangle of its term only: copy lower to upper (blocks)
        bs = 512
        for i0 in range(0, D, bs):
            i1 = min(D, i0 + bs)
            blk = H[i0:i1, i0:i1]
            iu = np.triu_indices(i1 - i0, 1)
            blk[iu] = blk.T[iu]
            H[i0:i1, i1:] = H[i1:, i0:i1].T
        H[np.diag_indices(D)] += self.l2
        return H

    def hessian_solver(self, theta, n_objects=None, damping=0.0):
        """A solver for :func:`coxinfluence.autodiff.vif` (``solver=``) that applies
        ``(H/n + damping I)^{-1}`` with the structured :meth:`hessian` and a Cholesky
        factorization - the explicit solver's matrix, built without d Hessian-vector
        products.  ``n_objects`` defaults to this loss's number of objects."""
        n = self.n_objects if n_objects is None else int(n_objects)
        A = self.hessian(theta)
        A /= n
        if damping:
            A[np.diag_indices_from(A)] += float(damping)
        return _MatrixSolver(A, scale=n if not damping else np.nan,
                             at=np.array(theta, dtype=np.float64))

    # ------------------------------------------------ exact fits with that Hessian
    def _batch_value_grad(self):
        if "_vg_batch" not in self.__dict__:
            self._vg_batch = (jax.jit(jax.vmap(jax.value_and_grad(self.loss))),
                              jax.jit(jax.vmap(self.loss)))
        return self._vg_batch

    def _rows(self, fn, TH, P, chunk):
        outs = []
        for s0 in range(0, TH.shape[0], chunk):
            k = min(chunk, TH.shape[0] - s0)
            th, p = TH[s0:s0 + chunk], P[s0:s0 + chunk]
            if k < chunk and TH.shape[0] > chunk:          # one compiled shape
                th = np.concatenate([th, np.repeat(th[-1:], chunk - k, axis=0)])
                p = np.concatenate([p, np.repeat(p[-1:], chunk - k, axis=0)])
            r = fn(jnp.asarray(th), jnp.asarray(p))
            outs.append(jax.tree_util.tree_map(lambda x, k=k: np.asarray(x)[:k], r))
        return jax.tree_util.tree_map(lambda *x: np.concatenate(x), *outs)

    def _lbfgs(self, TH, P, solver, fixed, *, tol, max_iter, memory=20, chunk=8):
        """Batched L-BFGS (two-loop recursion, Armijo step halving, one memory per
        row) whose initial inverse Hessian is ``H^{-1}`` from a fixed factor (``solver``:
        :meth:`hessian_solver`, no damping): a Newton step when the Hessian is exact,
        and the memory corrects the few directions where it is not (the deleted or
        relabelled item's block, whose curvature changes most).  ``fixed[r]``: parameter
        indices held at their current value (a deleted item's block); the initial
        matrix is then the inverse of the Hessian of the other coordinates (Schur
        complement of ``H^{-1}``).  Stops when every ``max|grad| <= tol`` or after
        ``max_iter`` iterations.  Returns ``(TH, gmax)``."""
        vg, val = self._batch_value_grad()
        R, d = TH.shape
        corr = None
        if fixed is not None:
            cols = np.concatenate(fixed)
            E = np.zeros((cols.size, d))
            E[np.arange(cols.size), cols] = 1.0
            Ac = solver.solve(E)                       # rows: A^{-1} e_c
            corr, o = [], 0
            for f in fixed:
                Bi = Ac[o:o + f.size]                  # (|f|, d)
                corr.append((f, Bi, np.linalg.inv(Bi[:, f])))
                o += f.size

        def h0(V):
            out = solver.solve(V) / solver.scale
            if corr is not None:
                for r, (f, Bi, Mi) in enumerate(corr):
                    out[r] -= Bi.T @ (Mi @ out[r, f])
                    out[r, f] = 0.0
            return out

        S, Y = np.zeros((R, memory, d)), np.zeros((R, memory, d))
        rho = np.zeros((R, memory))
        v, G = self._rows(vg, TH, P, chunk)
        gmax = np.max(np.abs(G), axis=1)
        for it in range(int(max_iter)):
            act = gmax > tol
            if not act.any():
                break
            q = G.copy()
            alpha = np.zeros((R, memory))
            order = [(it - 1 - k) % memory for k in range(min(it, memory))]
            for k in order:                            # newest to oldest
                alpha[:, k] = rho[:, k] * np.einsum("rd,rd->r", S[:, k], q)
                q -= alpha[:, k, None] * Y[:, k]
            z = h0(q)
            for k in reversed(order):                  # oldest to newest
                beta = rho[:, k] * np.einsum("rd,rd->r", Y[:, k], z)
                z += S[:, k] * (alpha[:, k] - beta)[:, None]
            z[~act] = 0.0
            slope = -np.einsum("rd,rd->r", G, z)
            t = np.ones(R)
            new = TH - z
            vnew, Gn = v.copy(), G.copy()
            vnew[act], Gn[act] = self._rows(vg, new[act], P[act], chunk)
            for _h in range(40):
                bad = act & ~(vnew <= v + 1e-4 * t * slope + 1e-13 * np.abs(v))
                if not bad.any():
                    break
                t[bad] *= 0.5
                new[bad] = TH[bad] - t[bad, None] * z[bad]
                vnew[bad], Gn[bad] = self._rows(vg, new[bad], P[bad], chunk)
            s_, y_ = new - TH, Gn - G
            sy = np.einsum("rd,rd->r", s_, y_)
            ok = act & (sy > 1e-12 * np.linalg.norm(s_, axis=1) * np.linalg.norm(y_, axis=1))
            k = it % memory
            S[:, k] = np.where(ok[:, None], s_, 0.0)
            Y[:, k] = np.where(ok[:, None], y_, 0.0)
            rho[:, k] = np.where(ok, 1.0 / np.where(ok, sy, 1.0), 0.0)
            TH = np.where(act[:, None], new, TH)
            v = np.where(act, vnew, v)
            G = np.where(act[:, None], Gn, G)
            gmax = np.max(np.abs(G), axis=1)
        return TH, gmax

    def fit_newton(self, theta0=None, *, tol=1e-9, max_hessians=4, max_iter=60, solver=None):
        """Minimise ``L(., 1)`` (all objects present) by L-BFGS whose initial inverse
        Hessian is the structured :meth:`hessian` at the start (``solver``: a
        :meth:`hessian_solver` at ``theta0`` to reuse), a new Hessian at the current
        point after ``max_iter`` iterations without convergence, until ``max|grad| <=
        tol``.  For many parameters (Delicious) where plain L-BFGS is slow.

        Returns ``(theta, solver)``, the solver being :meth:`hessian_solver` at the
        returned theta (what :func:`coxinfluence.autodiff.vif` and :meth:`loo_newton`
        take); warns when not converged.

        Not :func:`coxinfluence.numerics.newton.newton`: with a parameter per item
        (tens of thousands on Delicious) no dense d x d Hessian fits in memory; the
        structured Hessian is applied through :meth:`hessian_solver` as L-BFGS's
        initial inverse, on JAX arrays."""
        p = np.ones((1, self.n_objects))
        th = np.asarray(self.init_params() if theta0 is None else theta0, np.float64)[None]
        slv = self.hessian_solver(th[0]) if solver is None else solver
        gmax = np.inf
        for h in range(int(max_hessians)):
            if h:
                slv = self.hessian_solver(th[0])
            th, g = self._lbfgs(th, p, slv, None, tol=tol, max_iter=max_iter)
            gmax = float(g[0])
            if gmax <= tol:
                break
        if not gmax <= tol:
            warnings.warn(f"fit_newton: max|grad| = {gmax:.2e} > tol = {tol:.1e}",
                          RuntimeWarning, stacklevel=2)
        return th[0], self.hessian_solver(th[0])

    def loo_newton(self, theta_hat, objects=None, *, tol=1e-8, max_iter=200, solver=None,
                   chunk=8):
        """Exact brute-force LOO refits (items as objects) by batched L-BFGS from
        ``theta_hat`` whose initial inverse Hessian is the structured Hessian at
        ``theta_hat`` (``solver``: a :meth:`hessian_solver` at ``theta_hat`` to reuse,
        else built), to ``max|grad L(., 1_{-i})| <= tol``; the loss is ``l2``-strongly
        convex, so a refit is then within ``||grad||_2 / l2`` of the exact minimiser.

        ``removal="delete"``: the item's block (its weights and bias) carries no data
        term without it, so its exact refit value is 0 (the ridge alone); it is set to 0
        and the other coordinates take Newton steps of their own (Schur complement).
        Returns ``(refits (m, d), max|grad| per refit)``."""
        if self.objects != "items":
            raise ValueError("loo_newton refits items; use loo for queries")
        objs, P = self._loo_presences(objects)
        th0 = np.asarray(theta_hat, dtype=np.float64)
        slv = self.hessian_solver(th0) if solver is None else solver
        if not np.isfinite(slv.scale):
            raise ValueError("loo_newton needs an undamped hessian_solver")
        TH = np.repeat(th0[None], objs.size, axis=0)
        fixed = None
        if self.removal == "delete":
            p1 = self.F.shape[1] + 1
            fixed = [np.arange(p1) * self.n_items + i for i in objs]
            for r, f in enumerate(fixed):
                TH[r, f] = 0.0
        TH, gmax = self._lbfgs(TH, np.asarray(P), slv, fixed, tol=tol, max_iter=max_iter,
                               chunk=chunk)
        if np.any(~(gmax <= tol)):
            warnings.warn(f"loo_newton: {int(np.sum(~(gmax <= tol)))} refits with max|grad| "
                          f"> tol = {tol:.1e} (largest {np.max(gmax):.2e})", RuntimeWarning,
                          stacklevel=2)
        return TH, gmax


def listmle(features, rankings, n_items=None, objects="items", l2=1.0, removal="delete"):
    """ListMLE loss with a linear scorer (paper Example 3, Eq. listmle).  ``removal``
    (objects = items): "delete" removes the item from every candidate set and ranking
    (the paper's [n] becomes [n] minus the item), "labels" only from the rankings."""
    return ListMLELoss(features, rankings, n_items, objects=objects, l2=l2, removal=removal)

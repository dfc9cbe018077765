"""DeepWalk node embedding: a contrastive loss whose pairs come from random walks.

Paper Section "Non-Decomposable Loss", Example 2 ("Contrastive Loss"),
Eq. contrastive-loss ``L(theta) = sum_i l(theta; (u_i, v_i, N_i))``, with DeepWalk's
pairs from random walks on the graph, object = node: deleting a node changes the walks
and so the pair set (Remark "Randomness in Losses").  The model and settings of Section
"Experiments" ("Datasets and Models": one embedding layer and one linear layer, negative
log softmax) and Appendix "Detailed experiment setup" (1000 walks per node, length 6,
window 3, dimension 2).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ._common import Loss, _presence, adam


def _graph_arrays(graph):
    try:
        nodes = sorted(graph.nodes())
    except TypeError:
        nodes = list(graph.nodes())
    idx = {u: k for k, u in enumerate(nodes)}
    N = len(nodes)
    A = np.zeros((N, N))
    for u, v in graph.edges():
        if u != v:
            A[idx[u], idx[v]] = A[idx[v], idx[u]] = 1.0
    return nodes, A


def deepwalk_counts(A, presence, *, walks_per_node, walk_length, window, rng):
    """Skip-gram (center, context) pair counts from uniform random walks (DeepWalk,
    Perozzi et al. 2014) on the graph ``A`` restricted to present nodes.

    ``walks_per_node`` walks of ``walk_length`` nodes start at every present node; a
    walk at a node without present neighbours stops.  Every pair of positions at
    distance 1..window counts in both directions.  ``rng``: numpy Generator or seed."""
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    b = np.asarray(presence, dtype=bool)
    Ab = A * b[:, None] * b[None, :]
    N = A.shape[0]
    nbrs = [np.nonzero(Ab[u])[0] for u in range(N)]
    deg = np.array([len(x) for x in nbrs])
    maxdeg = max(int(deg.max()), 1)
    table = np.zeros((N, maxdeg), dtype=np.int64)
    for u in range(N):
        table[u, :deg[u]] = nbrs[u]
    starts = np.repeat(np.nonzero(b)[0], walks_per_node)
    W = np.full((starts.size, walk_length), -1, dtype=np.int64)
    W[:, 0] = starts
    for p in range(1, walk_length):
        cur = W[:, p - 1]
        alive = cur >= 0
        dc = np.where(alive, deg[np.maximum(cur, 0)], 0)
        ok = alive & (dc > 0)
        pick = np.floor(rng.random(cur.size) * np.maximum(dc, 1)).astype(np.int64)
        W[:, p] = np.where(ok, table[np.maximum(cur, 0), pick], -1)
    C = np.zeros((N, N))
    for k in range(1, window + 1):
        a, c = W[:, :-k].ravel(), W[:, k:].ravel()
        m = (a >= 0) & (c >= 0)
        np.add.at(C, (a[m], c[m]), 1.0)
        np.add.at(C, (c[m], a[m]), 1.0)
    return C


def expected_deepwalk_counts(A, presence, *, walks_per_node, walk_length, window):
    """Expectation of :func:`deepwalk_counts` (JAX, differentiable in ``presence``).

    With P = D^{-1} A_b the walk's transition matrix on present nodes (zero rows at
    dead ends) and m_p = walks_per_node * b' P^p the expected visits at step p,
    ``E C = sum_{p, k<=window, p+k<L} diag(m_p) P^k + (diag(m_p) P^k)'``."""
    b = jnp.asarray(presence, dtype=jnp.float64)
    Ab = jnp.asarray(A) * b[:, None] * b[None, :]
    deg = Ab.sum(1)
    P = Ab / jnp.where(deg > 0, deg, 1.0)[:, None]
    m = walks_per_node * b
    ms = []
    for _ in range(walk_length):
        ms.append(m)
        m = m @ P
    Pk = [jnp.eye(A.shape[0])]
    for _ in range(window):
        Pk.append(Pk[-1] @ P)
    C = jnp.zeros(A.shape)
    for p in range(walk_length):
        for k in range(1, window + 1):
            if p + k < walk_length:
                M = ms[p][:, None] * Pk[k]
                C = C + M + M.T
    return C


class ContrastiveLoss(Loss):
    """DeepWalk skip-gram loss with a full (negative log) softmax, object = node.

    Model (paper Section "Experiments": "one embedding layer and one linear layer"):
    logits ``Z = E W + c`` (E: N x dim embeddings, W: dim x N, c: N), and

        L(theta, b) = sum_{u,v} C_b[u, v] * (-log softmax_{v' : b_v' = 1}(Z[u])_v)

    where ``C_b`` are the skip-gram pair counts of random walks on the graph with the
    removed nodes deleted (the node leaves the graph: its edges, its walks, and the
    softmax vocabulary).  ``walks="expected"`` uses their expectation (deterministic,
    any presence vector); ``walks="sampled"`` draws walks with ``seed``: counts are
    precomputed for the full graph and each single-node deletion, so ``presence``
    must then have at most one zero.  ``l2`` adds ``l2/2 ||theta||^2``."""

    def __init__(self, graph, *, dim=2, walks_per_node=1000, walk_length=6, window=3,
                 walks="sampled", seed=0, l2=0.0):
        nodes, A = _graph_arrays(graph)
        N = len(nodes)
        if N < 3:
            raise ValueError("graph needs at least 3 nodes")
        if walks not in ("sampled", "expected"):
            raise ValueError(f"walks must be 'sampled' or 'expected', got {walks!r}")
        if int(dim) < 1 or int(walk_length) < 2 or int(window) < 1 or int(walks_per_node) < 1:
            raise ValueError("dim, walks_per_node, window must be >= 1 and walk_length >= 2")
        self.nodes, self.A, self.N = nodes, A, N
        self.dim, self.l2 = int(dim), float(l2)
        self.walk_opts = dict(walks_per_node=int(walks_per_node), walk_length=int(walk_length),
                              window=int(window))
        self.walks, self.seed = walks, seed
        self.n_objects = N
        _, self._unravel = ravel_pytree({"E": jnp.zeros((N, self.dim)),
                                         "W": jnp.zeros((self.dim, N)), "c": jnp.zeros(N)})
        if walks == "sampled":
            rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
            self.C_full = deepwalk_counts(A, np.ones(N), rng=rng, **self.walk_opts)
            self.C_minus = np.stack([deepwalk_counts(A, np.arange(N) != i, rng=rng,
                                                     **self.walk_opts) for i in range(N)])
            self._Cf, self._Cm = jnp.asarray(self.C_full), jnp.asarray(self.C_minus)

    @property
    def n_params(self):
        return 2 * self.N * self.dim + self.N

    def counts(self, presence):
        if self.walks == "expected":
            return expected_deepwalk_counts(self.A, presence, **self.walk_opts)
        allp = jnp.all(presence > 0.5)
        i = jnp.argmin(presence)
        return jnp.where(allp, self._Cf, self._Cm[i])

    def logits(self, theta):
        q = self._unravel(theta)
        return q["E"] @ q["W"] + q["c"]

    def loss(self, theta, presence):
        Z = self.logits(theta)
        C = self.counts(presence)
        keep = presence[None, :] > 0.5
        Zm = jnp.where(keep, Z, -1e30)
        lse = jax.nn.logsumexp(Zm, axis=1)
        nll = jnp.where(keep, lse[:, None] - Zm, 0.0)
        return jnp.sum(C * nll) + 0.5 * self.l2 * jnp.sum(theta * theta)

    def pair_loss(self, theta, pairs):
        """Target of the paper's Section "Experiments": ``-log softmax(Z[u])_v`` for
        (K, 2) pairs, full graph vocabulary."""
        pairs = jnp.asarray(pairs)
        Z = self.logits(theta)
        lse = jax.nn.logsumexp(Z, axis=1)
        return lse[pairs[:, 0]] - Z[pairs[:, 0], pairs[:, 1]]

    def init_params(self, seed=0):
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        return rng.normal(0.0, 0.1, self.n_params)

    def _train(self, presence, th0, lr, steps, newton_steps, damping):
        f = lambda t: self.loss(t, presence) / self.walk_opts["walks_per_node"]  # noqa: E731
        th = adam(f, th0, lr=lr, steps=steps)
        g, h = jax.grad(f), jax.hessian(f)

        def lm(th, _):  # Levenberg-Marquardt-damped Newton polish, keep if better
            H = h(th) + damping * jnp.eye(th.shape[0])
            new = th - jnp.linalg.solve(H, g(th))
            better = f(new) <= f(th)
            return jnp.where(better, new, th), None

        th, _ = jax.lax.scan(lm, th, None, length=newton_steps)
        return th

    def fit(self, presence=None, theta0=None, *, seed=0, lr=0.05, steps=3000,
            newton_steps=30, damping=1e-6):
        """Adam from ``init_params(seed)`` (or theta0), then damped Newton polish."""
        p = _presence(presence, self.n_objects)
        th0 = jnp.asarray(self.init_params(seed) if theta0 is None else theta0)
        return np.asarray(jax.jit(lambda pp, t0: self._train(pp, t0, lr, steps, newton_steps,
                                                             damping))(p, th0))

    def loo(self, theta_hat, objects=None, *, seed=0, warm_start=True, lr=0.05, steps=3000,
            newton_steps=30, damping=1e-6):
        """Brute-force LOO: retrain with node i removed (walks on G - i), warm-started
        at theta_hat or from ``init_params(seed)`` (the same start as a full fit)."""
        objs, P = self._loo_presences(objects)
        th0 = jnp.asarray(theta_hat if warm_start else self.init_params(seed))
        if warm_start:
            steps = min(steps, 500)
        run = jax.jit(jax.vmap(lambda pp: self._train(pp, th0, lr, steps, newton_steps,
                                                      damping)))
        return np.asarray(run(jnp.asarray(P)))


def contrastive(graph, dim=2, walks_per_node=1000, walk_length=6, window=3,
                walks="sampled", seed=0, l2=0.0):
    """DeepWalk skip-gram loss on a networkx graph, object = node (paper Example 2;
    experiment settings: 1000 walks per node, length 6, window 3, dim 2)."""
    return ContrastiveLoss(graph, dim=dim, walks_per_node=walks_per_node,
                           walk_length=walk_length, window=window, walks=walks, seed=seed,
                           l2=l2)


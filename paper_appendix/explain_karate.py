"""Why Table 1's Karate row differs from the paper (issue 15): our VIF is far below our
brute-force "ceiling" (0.73 vs 0.91) while the paper's is close to it (0.407 vs 0.419),
and our ceiling is twice the paper's.

    python paper_appendix/explain_karate.py [--quick]

Every row of the printed table is one small experiment; "BF vs BF" is the Pearson
correlation of two brute-force leave-one-out (LOO) runs, "VIF vs BF" that of VIF with a
brute-force run, both as in autodiff_karate.py: for each of the 34 x 34 test pairs (u, v),
the correlation over the removed nodes w not in {u, v} of the change of the pair loss
-log softmax(Z[u])_v, averaged over the pairs (the pooled correlation over all pairs and
nodes is printed beside it).

Part A, our protocol (autodiff_karate.py, ``coxinfluence.autodiff.losses.contrastive``):
skip-gram counts of 1000 sampled walks per node (length 6, context distances 1..3),
logits E W + c, full-batch Adam (lr 0.05, 3000 steps) and a damped Newton polish; LOO
retrained from the seed's initialisation; VIF with damping 1e-3 x mean diag(H/n).
The rows separate walk noise from initialisation noise, test warm-started LOO, remove
the walk noise (expected walk counts), vary the damping, and shrink the deletion to a
fractional down-weighting of the node (expected walks, retrained by damped Newton from
theta_hat), which isolates the non-linearity of deleting a node.

Part B, the paper's protocol. The paper's appendix gives only 1000 walks per node, length
6, window 3, dimension 2. The rest follows a public DeepWalk-on-Karate script with exactly
those settings that we found by code search (it imports dattri, the authors' lab's
library; its repository was not identified, so this is our best reading of the paper's
protocol, not a confirmed one): embedding phi (34 x 2) and output phi2 (2 x 34), no bias,
both initialised U(0, 1) (torch.rand) from the seed; ONE pass of online SGD (batch 1,
lr 0.025) over the skip-gram pairs of 1000 rounds of one walk per node in shuffled order;
pairs (path[j], path[k]) for k in j-3 .. j+2 (the centre itself included); a walk at a
node without neighbours repeats it; a removed node leaves the graph and the softmax; LOO
runs use the seed's initialisation; the ground truth of a LOO model is its loss with the
removed node left out of the softmax. VIF at the SGD iterate from freshly sampled walks
(the full graph's and each G - i's, as that script does): the predicted parameter change
H^-1 (grad L(1) - grad L(1_-i)) (minus the VIF, unscaled), H the Hessian of the full
loss there (that script's score step computes these three; its final correlation step
was not found); H is indefinite at an SGD iterate, so
damping 1.5 x |lambda_min| (the convention of Table 5), and, for comparison, the
pseudo-inverse on the positive eigenvalues.

Writes paper_appendix/out/explain_karate.md.
"""
from __future__ import annotations

import argparse
import itertools
import time

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
from _common import markdown_table, write_result

import coxinfluence.autodiff as ad
from coxinfluence.autodiff import datasets, losses
from coxinfluence.autodiff.losses.contrastive_loss import expected_deepwalk_counts

N = 34
PAIRS = np.array([(u, v) for u in range(N) for v in range(N)])


VALID = (np.arange(N)[:, None] != PAIRS[None, :, 0]) & (np.arange(N)[:, None] != PAIRS[None, :, 1])


def pair_corr(a, b):
    """(mean over pairs, pooled) Pearson correlation of two (34 removed nodes, 1156 pairs)
    arrays of loss changes; for pair (u, v) the removed nodes u and v are left out (in
    the pooled correlation too, unlike autodiff_karate.py's pooled column: a model
    without node u or v has no meaningful loss for the pair)."""
    cs = []
    for k in range(len(PAIRS)):
        m = VALID[:, k]
        if np.std(a[m, k]) > 0 and np.std(b[m, k]) > 0:
            cs.append(np.corrcoef(a[m, k], b[m, k])[0, 1])
    return float(np.mean(cs)), float(np.corrcoef(a[VALID], b[VALID])[0, 1])


def fmt(c):
    return f"{c[0]:.3f} ({c[1]:.3f})"


def restricted_loss(logits, keep):
    """Pair losses -log softmax(Z[u])_v over the nodes in ``keep`` (the removed node out
    of the softmax, as the public script's ground truth)."""
    lse = jax.nn.logsumexp(jnp.where(keep[None, :], logits, -1e30), axis=1)
    return lse[PAIRS[:, 0]] - logits[PAIRS[:, 0], PAIRS[:, 1]]


def lm_solve(f, th0, steps):
    """Levenberg-Marquardt-damped Newton on ``f`` from ``th0`` (a step is kept if it
    lowers f; the damping shrinks after a kept step and grows after a rejected one)."""
    g, h = jax.grad(f), jax.hessian(f)

    def step(carry, _):
        th, mu = carry
        new = th - jnp.linalg.solve(h(th) + mu * jnp.eye(th.size), g(th))
        ok = f(new) <= f(th)
        return (jnp.where(ok, new, th), jnp.where(ok, jnp.maximum(mu * 0.3, 1e-12),
                                                  mu * 10.0)), None

    (th, _), _ = jax.lax.scan(step, (th0, jnp.asarray(1e-4)), None, length=steps)
    return th, jnp.max(jnp.abs(g(th)))


# --------------------------------------------------------------------- part A: ours
def ours(rows, notes, K, quick):
    G = datasets.karate_graph()
    L = {w: losses.contrastive(G, walks="sampled", seed=w) for w in (1, 2)}
    pl = lambda Lw, th: np.asarray(Lw.pair_loss(jnp.asarray(th), PAIRS))  # noqa: E731

    def bf(init, walks, warm=False, th=None):
        Lw = L[walks]
        th = Lw.fit(seed=init) if th is None else th
        loo = Lw.loo(th, seed=init, warm_start=warm)
        return th, loo, np.stack([pl(Lw, x) for x in loo]) - pl(Lw, th)

    t0 = time.perf_counter()
    th11, loo11, d11 = bf(1, 1)
    _, _, d22 = bf(2, 2)
    H = np.asarray(ad.hessian_matrix(lambda t: L[1](t, jnp.ones(N)), jnp.asarray(th11)))
    mean_diag = np.trace(H) / N / L[1].n_params

    def vif(damp_factor):
        return -ad.vif(L[1], th11, N, target_fn=lambda t: L[1].pair_loss(t, PAIRS),
                       damping=damp_factor * mean_diag) / N

    v = vif(1e-3)
    K["A1_bf"], K["A1_vif"] = pair_corr(d22, d11)[0], pair_corr(v, d11)[0]
    rows.append(["A1", "ours (Table 1 row): sampled walks, init and walk seeds 1 vs 2, LOO "
                 "from the seed's initialisation", fmt(pair_corr(d22, d11)),
                 fmt(pair_corr(v, d11)), "the Table 1 row (paper: 0.419 / 0.407)"])
    if quick:
        notes.append("--quick: rows A2-A5 skipped.")
        return expected_walks(rows, notes, K)
    th21, loo21, d21 = bf(2, 1)
    K["A2_bf"] = pair_corr(d21, d11)[0]
    fresh = np.stack([pl(L[1], x) for x in loo21]) - pl(L[1], th11)
    rows.append(["A2", "ours, initialisation noise only: walks seed 1, init seeds 1 vs 2",
                 fmt(pair_corr(d21, d11)), "", "training noise (local optima, "
                 "unconverged LOO fits) alone; LOO from a fresh initialisation (seed 2) "
                 f"against the seed-1 full fit: {fmt(pair_corr(fresh, d11))}"])
    _, _, d12 = bf(1, 2)
    rows.append(["A3", "ours, walk noise only: init seed 1, walk seeds 1 vs 2",
                 fmt(pair_corr(d12, d11)), "", "1000 walks per node: small walk noise"])
    _, loow, dw = bf(1, 1, warm=True, th=th11)
    f_loo = lambda th, i: float(L[1](jnp.asarray(th), jnp.ones(N).at[i].set(0.0)))  # noqa: E731
    worse = sum(f_loo(loo11[i], i) > f_loo(loow[i], i) * (1 + 1e-6) for i in range(N))
    gl = max(float(jnp.abs(jax.grad(lambda t: L[1](t, jnp.ones(N).at[i].set(0.0)))(
        jnp.asarray(loo11[i]))).max()) for i in range(N))
    rows.append(["A4", "ours, LOO warm-started at theta_hat (walks 1, init 1) vs from the "
                 "initialisation", fmt(pair_corr(dw, d11)), fmt(pair_corr(v, dw)),
                 f"{worse} of 34 LOO fits from the initialisation end at a higher loss "
                 f"than warm-started; largest max|grad| among those 34 fits {gl:.3g} "
                 "(full fit: see A5)"])
    g_hat = float(jnp.abs(jax.grad(lambda t: L[1](t, jnp.ones(N)))(jnp.asarray(th11))).max())
    ev = np.linalg.eigvalsh(H)
    damp_c = {f: pair_corr(vif(f), d11)[0] for f in (1e-6, 1e-2, 1e-1)}
    K["A5_range"] = (min(list(damp_c.values()) + [K["A1_vif"]]),
                     max(list(damp_c.values()) + [K["A1_vif"]]))
    damp_cells = [f"{f:g}: {c:.3f}" for f, c in damp_c.items()]
    rows.append(["A5", "ours, VIF damping (times mean diag of H/n; Table 1 uses 1e-3)", "",
                 "; ".join(damp_cells), f"at theta_hat max|grad| = {g_hat:.1e}; eigenvalues "
                 f"of H: {int(np.sum(np.abs(ev) < 1e-6 * ev[-1]))} of {ev.size} within "
                 f"1e-6 x lambda_max of 0 (the 7 gauge directions of E W + c among them), "
                 f"lambda_min = {ev[0]:.1e} against lambda_max = {ev[-1]:.1e}: no negative "
                 "curvature beyond rounding"])
    r_d11 = np.stack([np.asarray(restricted_loss(L[1].logits(jnp.asarray(x)),
                                                 jnp.arange(N) != i))
                      for i, x in enumerate(loo11)]) - pl(L[1], th11)
    notes.append(f"ours: ground truth with the removed node left out of the softmax (the "
                 f"public script's) instead of the full vocabulary: VIF vs BF "
                 f"{pair_corr(v, r_d11)[0]:.4f} instead of {pair_corr(v, d11)[0]:.4f}.")
    notes.append(f"part A (sampled walks): {time.perf_counter() - t0:.0f} s")
    expected_walks(rows, notes, K)


def expected_walks(rows, notes, K):
    """Rows A6-A8: expected walk counts (no walk noise), deletions and fractional
    down-weightings refitted by damped Newton from theta_hat."""
    t0 = time.perf_counter()
    Le = losses.contrastive(datasets.karate_graph(), walks="expected")
    the = Le.fit(seed=1)
    He = np.asarray(ad.hessian_matrix(lambda t: Le(t, jnp.ones(N)), jnp.asarray(the)))
    damp = 1e-3 * np.trace(He) / N / Le.n_params
    tgt = lambda t: Le.pair_loss(t, PAIRS)  # noqa: E731
    ve = -ad.vif(Le, the, N, target_fn=tgt, damping=damp) / N
    ife = -ad.weight_influence(Le, the, N, target_fn=tgt, damping=damp) / N
    A, wo = Le.A, Le.walk_opts

    def loss_b(t, b, keep):
        C = expected_deepwalk_counts(A, b, **wo)
        Z = Le.logits(t)
        Zm = jnp.where(keep[None, :], Z, -1e30)
        lse = jax.nn.logsumexp(Zm, axis=1)
        return jnp.sum(C * jnp.where(keep[None, :], lse[:, None] - Zm, 0.0)) / 1000.0

    refit = jax.jit(jax.vmap(lambda b, keep: lm_solve(lambda t: loss_b(t, b, keep),
                                                      jnp.asarray(the), 60)))
    base = np.asarray(tgt(jnp.asarray(the)))
    cells = []
    out = {}
    K["A7"] = {}
    for eps, kept in ((0.01, True), (0.5, True), (0.9, True), (1.0, False)):
        B = np.ones((N, N)) - eps * np.eye(N)
        KM = np.ones((N, N), bool) if kept else ~np.eye(N, dtype=bool)
        T, gm = refit(jnp.asarray(B), jnp.asarray(KM))
        T = np.asarray(T)
        D = np.stack([np.asarray(restricted_loss(Le.logits(jnp.asarray(T[i])),
                                                 jnp.asarray(KM[i]))) for i in range(N)]) - base
        out[eps] = (T, D, float(gm.max()))
        lbl = f"eps={eps:g}" + ("" if kept else " (node deleted)")
        K["A7"][eps] = pair_corr(ife, D)[0]
        cells.append(f"{lbl}: {K['A7'][eps]:.3f}")
    T1, D1, gm1 = out[1.0]
    K["A6_vif"] = pair_corr(ve, D1)[0]
    rows.append(["A6", "ours with expected walk counts (no walk noise), LOO by damped "
                 "Newton from theta_hat", "1 (deterministic)", fmt(pair_corr(ve, D1)),
                 f"refits' max|grad| <= {gm1:.1e}: without any noise VIF still "
                 "reaches only this"])
    rows.append(["A7", "ours, expected walks: node weight 1 - eps (eps < 1: the node stays in "
                 "the graph and the softmax), refit vs the infinitesimal IF",
                 "", "; ".join(cells), "IF vs refit; the agreement falls as the deletion "
                 "grows: the response to a node is not linear in its weight"])
    J = np.asarray(jax.jacrev(tgt)(jnp.asarray(the)))
    lin = (T1 - the) @ J.T
    K["A8"] = pair_corr(lin, D1)[0]
    rows.append(["A8", "ours, expected walks: the exact parameter change theta_-i - "
                 "theta_hat of A6 through the linearised target J (theta_-i - theta_hat)",
                 "", fmt(pair_corr(lin, D1)), "even the exact parameter change, "
                 "linearised, explains no more of the deletion than VIF does"])
    notes.append(f"expected-walk rows A6-A8: {time.perf_counter() - t0:.0f} s")


# ------------------------------------------------------------ part B: paper protocol
OFFSETS = [(j, k) for j in range(6) for k in range(max(0, j - 3), min(j + 3, 6))]


class PaperProtocol:
    """DeepWalk as the public script trains it (see the module docstring)."""

    def __init__(self, rounds, lr):
        self.rounds, self.lr = rounds, lr
        A = nx.to_numpy_array(nx.karate_club_graph(), nodelist=range(N)) > 0
        self.A = A
        self._train = jax.jit(jax.vmap(self._one))

    def walks(self, removed, rng, length=6):
        pres = np.ones(N, bool)
        if removed is not None:
            pres[removed] = False
        nb = [np.flatnonzero(self.A[u] & pres) for u in range(N)]
        deg = np.array([len(x) for x in nb])
        table = np.zeros((N, max(deg.max(), 1)), np.int64)
        for u in range(N):
            table[u, :deg[u]] = nb[u]
        starts = np.concatenate([rng.permutation(np.flatnonzero(pres))
                                 for _ in range(self.rounds)])
        W = np.empty((starts.size, length), np.int64)
        W[:, 0] = starts
        for p in range(1, length):
            cur = W[:, p - 1]
            pick = np.floor(rng.random(cur.size) * np.maximum(deg[cur], 1)).astype(np.int64)
            W[:, p] = np.where(deg[cur] > 0, table[cur, pick], cur)
        return W

    @staticmethod
    def counts(W):
        C = np.zeros((N, N))
        for j, k in OFFSETS:
            np.add.at(C, (W[:, j], W[:, k]), 1.0)
        return C

    def _one(self, W, active, keep, th):
        lr = self.lr

        def walk(carry, x):
            phi, phi2 = carry
            w, a = x
            for j, k in OFFSETS:
                u, v = w[j], w[k]
                h = phi[u]
                p = jax.nn.softmax(jnp.where(keep, h @ phi2, -jnp.inf))
                gout = p.at[v].add(-1.0)
                gh = phi2 @ gout
                phi2 = phi2 - (a * lr) * jnp.outer(h, gout)
                phi = phi.at[u].add(-(a * lr) * gh)
            return (phi, phi2), None

        (phi, phi2), _ = jax.lax.scan(walk, (th[:2 * N].reshape(N, 2),
                                             th[2 * N:].reshape(2, N)), (W, active))
        return jnp.concatenate([phi.ravel(), phi2.ravel()])

    @staticmethod
    def logits(th):
        return th[:2 * N].reshape(N, 2) @ th[2 * N:].reshape(2, N)

    def loss(self, th, C, keep):
        Z = self.logits(th)
        Zm = jnp.where(keep[None, :], Z, -1e30)
        lse = jax.nn.logsumexp(Zm, axis=1)
        return jnp.sum(C * jnp.where(keep[None, :], lse[:, None] - Zm, 0.0))

    def run(self, seed, polish=False):
        """Full model and the 34 LOO models of one seed; returns the brute-force pair-loss
        changes (34, 1156) and the VIF estimates under two Hessian treatments."""
        rng = np.random.default_rng(1000 + seed)
        keeps = np.ones((N + 1, N), bool)
        Ws, acts, Cs = [], [], []
        for r in [None] + list(range(N)):
            W = self.walks(r, rng)
            Wp = np.zeros((N * self.rounds, 6), np.int64)
            Wp[:W.shape[0]] = W
            a = np.zeros(N * self.rounds)
            a[:W.shape[0]] = 1.0
            if r is not None:
                keeps[r + 1, r] = False
            Ws.append(Wp)
            acts.append(a)
            Cs.append(self.counts(W))
        th0 = np.random.default_rng(seed).random(4 * N)        # torch.rand: U(0, 1)
        th = np.asarray(self._train(jnp.asarray(np.stack(Ws)), jnp.asarray(np.stack(acts)),
                                    jnp.asarray(keeps), jnp.asarray(np.tile(th0, (N + 1, 1)))))
        grads = [float(jnp.abs(jax.grad(self.loss)(jnp.asarray(th[r]), jnp.asarray(Cs[r]),
                                                    jnp.asarray(keeps[r]))).max())
                 for r in range(N + 1)]
        if polish:
            pol = jax.jit(jax.vmap(lambda t, C, k: lm_solve(
                lambda q: self.loss(q, C, k) / self.rounds, t, 80)))
            th = np.asarray(pol(jnp.asarray(th), jnp.asarray(np.stack(Cs)),
                                jnp.asarray(keeps))[0])
            grads = [float(jnp.abs(jax.grad(self.loss)(jnp.asarray(th[r]), jnp.asarray(Cs[r]),
                                                        jnp.asarray(keeps[r]))).max())
                     for r in range(N + 1)]
        base = np.asarray(restricted_loss(self.logits(jnp.asarray(th[0])), jnp.ones(N, bool)))
        D = np.stack([np.asarray(restricted_loss(self.logits(jnp.asarray(th[1 + i])),
                                                 jnp.asarray(keeps[1 + i])))
                      for i in range(N)]) - base
        # VIF at the full model, walks sampled afresh (the public script's score step)
        t = jnp.asarray(th[0])
        ones = jnp.ones(N, bool)
        Cf = jnp.asarray(self.counts(self.walks(None, rng)))
        gf = jax.grad(self.loss)(t, Cf, ones)
        H = np.asarray(jax.hessian(self.loss)(t, Cf, ones))
        g = np.stack([np.asarray(gf - jax.grad(self.loss)(
            t, jnp.asarray(self.counts(self.walks(i, rng))), jnp.asarray(keeps[1 + i])))
            for i in range(N)])
        J = np.asarray(jax.jacrev(lambda q: restricted_loss(self.logits(q), ones))(t))
        w, V = np.linalg.eigh(H)
        damp = 1.5 * max(-w[0], 0.0) + 1e-6 * w[-1]
        pos = w > 1e-6 * w[-1]
        est = {"damped": g @ np.linalg.inv(H + damp * np.eye(w.size)) @ J.T,
               "pinv+": g @ ((V[:, pos] / w[pos]) @ V[:, pos].T) @ J.T}
        return D, est, grads, w[0], w[-1]


def paper(rows, notes, K, quick):
    t0 = time.perf_counter()
    settings = [("B1", "paper protocol: 1000 walks per node, SGD lr 0.025, one pass",
                 1000, 0.025, False, 2 if quick else 4)]
    if not quick:
        settings += [
            ("B2", "paper protocol with 100 walks per node", 100, 0.025, False, 2),
            ("B3", "paper protocol with lr 0.0025 (10x less SGD noise)", 1000, 0.0025, False, 2),
            ("B4", "paper protocol, each run then converged (damped Newton on its own "
             "walks)", 1000, 0.025, True, 2)]
    for key, label, rounds, lr, polish, n_seeds in settings:
        t1 = time.perf_counter()
        P = PaperProtocol(rounds if not quick else min(rounds, 300), lr)
        res = [P.run(s, polish=polish) for s in range(n_seeds)]
        bb = [pair_corr(res[a][0], res[b][0])
              for a, b in itertools.combinations(range(n_seeds), 2)]
        vv = {k: [pair_corr(r[1][k], r[0]) for r in res] for k in ("damped", "pinv+")}
        mean = lambda cs: (float(np.mean([c[0] for c in cs])),  # noqa: E731
                           float(np.mean([c[1] for c in cs])))
        gfull = np.median([r[2][0] for r in res])
        gloo = np.median([np.median(r[2][1:]) for r in res])
        lam = ", ".join(f"{r[3]:.3g}" for r in res)
        K[key] = (mean(bb)[0], mean(vv["damped"])[0], mean(bb)[1])
        rows.append([key, label + (f" ({P.rounds} walks per node, --quick)" if quick else "")
                     + f"; seeds 0..{n_seeds - 1}", fmt(mean(bb)),
                     f"{fmt(mean(vv['damped']))}; pinv+ {mean(vv['pinv+'])[0]:.3f}",
                     f"median max|grad| of the full fit {gfull:.3g}, of the LOO fits "
                     f"{gloo:.3g}; lambda_min(H) per seed {lam} (lambda_max "
                     f"{res[0][4]:.3g}); per seed pair BF vs BF "
                     + ", ".join(f"{c[0]:.3f}" for c in bb)
                     + f" ({time.perf_counter() - t1:.0f} s)"])
    notes.append(f"part B: how the paper aggregates its correlation is not stated; under "
                 f"B1 the mean over pairs ({K['B1'][0]:.3f}) is close to its 0.419, the "
                 f"pooled correlation ({K['B1'][2]:.3f}) is not.")
    notes.append(f"part B: {time.perf_counter() - t0:.0f} s")


def conclusion(K):
    """The measured conclusion, in the numbers of this run."""
    b_bf, b_vif = K["B1"][:2]
    near = abs(b_bf - 0.419) <= 0.05 and abs(b_vif - 0.407) <= 0.05
    lines = ["**Measured conclusion.**",
             f"(1) The ceiling is set by the training noise. Under our reading of the paper's "
             f"protocol (part B: one pass of online SGD from U(0, 1)) brute force against "
             f"brute force is {b_bf:.3f} (paper 0.419) and VIF {b_vif:.3f} (paper 0.407)"
             + (": the paper's row is reproduced, VIF as close to this ceiling as the paper "
                "says." if near else
                " (not within 0.05 of the paper's; a --quick run uses fewer walks and "
                "seeds).")]
    if "B4" in K:
        lines.append(f"Less SGD noise raises the ceiling (lr 0.0025: {K['B3'][0]:.3f}; "
                     f"each run converged: {K['B4'][0]:.3f}) faster than VIF "
                     f"({K['B3'][1]:.3f}; {K['B4'][1]:.3f}).")
    if "A2_bf" in K:
        lines.append(
            f"Our protocol converges the full fits and nearly every LOO fit (full-batch "
            f"Adam + Newton on fixed walk counts), so its ceiling ({K['A1_bf']:.3f}) is "
            f"limited only by walk noise and by the few LOO fits from the initialisation "
            f"that end elsewhere (same walks, other initialisation: {K['A2_bf']:.3f}); "
            f"that is why it is twice the paper's.")
    dr = (f"the damping moves it within [{K['A5_range'][0]:.3f}, {K['A5_range'][1]:.3f}]; "
          "theta_hat is a minimum; " if "A5_range" in K else "")
    lines.append(
        f"(2) VIF's gap to our ceiling ({K['A1_vif']:.3f} against {K['A1_bf']:.3f}) is "
        f"the non-linearity of deleting a node, not noise or the solver: without walk "
        f"noise VIF reaches {K['A6_vif']:.3f} against converged refits; {dr}the "
        f"infinitesimal IF matches refits for a small down-weighting of a "
        f"node (eps = 0.01: {K['A7'][0.01]:.3f}) and degrades as the weight change grows "
        f"(eps = 0.5: {K['A7'][0.5]:.3f}, 0.9: {K['A7'][0.9]:.3f}, node deleted: "
        f"{K['A7'][1.0]:.3f}); the exact parameter change through the linearised target "
        f"gives {K['A8']:.3f}. Deleting one of 34 nodes is not a small perturbation. "
        f"Under the paper's protocol the SGD noise hides this gap.")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer experiments and seeds, 300 walks per node in part B")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows, notes, K = [], [], {}
    ours(rows, notes, K, a.quick)
    paper(rows, notes, K, a.quick)
    text = ["# Explanation: Karate, VIF vs the brute-force ceiling\n",
            "Cells: mean over the 1156 test pairs (u, v) of the Pearson correlation over the "
            "removed nodes w not in {u, v} (pooled over pairs and those nodes in "
            "parentheses). Protocols and sources: "
            "the docstring of paper_appendix/explain_karate.py. Paper: Brute-Force 0.419, "
            "VIF 0.407.\n",
            markdown_table(["#", "experiment", "BF vs BF", "VIF vs BF", "measured"], rows),
            "", conclusion(K), "", *[f"- {s}" for s in notes],
            f"\nWall time {time.perf_counter() - t0:.0f} s.\n"]
    write_result("explain_karate.md", "\n".join(text))


if __name__ == "__main__":
    main()

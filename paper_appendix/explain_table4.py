"""Why Table 4's neural Cox row has brute force against brute force near 0 (ours 0.029,
paper 0.219) and VIF at 0.16 (issue 15).

    python paper_appendix/explain_table4.py [--rows 100] [--quick]

The Table 4 protocol (autodiff_table4.py): METABRIC paper split, Cox loss (Efron) with a
one-hidden-layer ReLU MLP log-risk (4 hidden units, 44 parameters,
``coxinfluence.autodiff.losses.cox_mlp``), full-batch Adam (lr 0.01, 200 steps) from a
seeded He-normal initialisation; brute-force LOO = the same training with one row deleted
from the same initialisation; "brute force vs brute force" = that with initialisation
seed 1 against seed 0. VIF targets the log-risk of the test patients, damping
max(0.1, 1.5 x -lambda_min(H/n)). Metric: mean over test patients of the Pearson
correlation over deleted rows of the relative-risk changes (test patients whose risk no
deletion changes are left out).

Each row of the printed table is one experiment on ``--rows`` seeded random training rows
(default 100; the correlations are over those rows): the two initialisations; the
determinism of the trainer; its sensitivity to a 1e-9 perturbation of the initialisation;
the response to an infinitesimal down-weighting of a row (weight 1 - 1e-7: the derivative
of the 200-step training path) against the deletion; longer training with a decaying
learning rate; warm-started LOO; minibatches with a shuffled data order; a smooth
activation (softplus) in place of ReLU.

Writes paper_appendix/out/explain_table4.md.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import data_path, markdown_table, write_result  # noqa: E402

import coxinfluence.autodiff as ad  # noqa: E402
from coxinfluence.autodiff import losses  # noqa: E402
from coxinfluence.autodiff.losses.mlp_cox import CoxMLPLoss  # noqa: E402
from coxinfluence.datasets import paper_split  # noqa: E402
from coxinfluence.metrics import mean_column_correlation  # noqa: E402

CHUNK = 25


class SoftplusCoxMLP(CoxMLPLoss):
    """The Table 4 model with softplus in place of ReLU (a smooth log-risk)."""

    def eta(self, theta, X=None):
        X = self._Xj if X is None else jnp.asarray(X)
        q = self._unravel(theta)
        return jax.nn.softplus(X @ q["W1"] + q["b1"]) @ q["w2"]


def corr(a, b):
    return mean_column_correlation(a, b, skip_constant=True)


def adam_path(f, th0, steps, lr0=0.01, lr1=None, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (torch's update) on ``f(theta, k)`` for ``steps`` steps; the learning rate
    is ``lr0``, or a cosine decay from ``lr0`` to ``lr1``."""
    def step(state, k):
        th, m, v = state
        g = jax.grad(f)(th, k)
        lr = lr0 if lr1 is None else lr1 + 0.5 * (lr0 - lr1) * (1 + jnp.cos(jnp.pi * k / steps))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        kk = k + 1.0
        return (th - lr * (m / (1 - b1 ** kk)) / (jnp.sqrt(v / (1 - b2 ** kk)) + eps), m, v), None

    th0 = jnp.asarray(th0)
    (th, _, _), _ = jax.lax.scan(step, (th0, jnp.zeros_like(th0), jnp.zeros_like(th0)),
                                 jnp.arange(steps, dtype=jnp.float64))
    return th


class Lab:
    def __init__(self, X, t, e, Xt, rows, model):
        self.M, self.Xt, self.rows, self.n = model, Xt, rows, X.shape[0]
        self.tgt = jax.jit(lambda p: model.eta(p, Xt))
        self._cache = {}

    def rr(self, th):
        return np.exp(np.asarray(self.tgt(jnp.asarray(th))))

    def presence(self, delta=1.0):
        P = np.ones((self.rows.size, self.n))
        P[np.arange(self.rows.size), self.rows] = 1.0 - delta
        return P

    def train(self, P, th0, steps=200, lr0=0.01, lr1=None, masks=None):
        """One Adam run per presence row of P (vmapped, CHUNK at a time), all from th0;
        ``masks`` (steps, n): the minibatch of each step (None: full batch)."""
        key = (steps, lr0, lr1, masks is None)
        if key not in self._cache:
            M = self.M

            def one(p, th0, mk):
                f = (lambda q, k: M.loss(q, p)) if mk is None else \
                    (lambda q, k: M.loss(q, p * mk[k.astype(jnp.int32)]))
                return adam_path(f, th0, steps, lr0, lr1)

            self._cache[key] = jax.jit(jax.vmap(one, in_axes=(0, None, None)))
        run = self._cache[key]
        mk = None if masks is None else jnp.asarray(masks)
        return np.concatenate([np.asarray(run(jnp.asarray(P[s:s + CHUNK]), jnp.asarray(th0), mk))
                               for s in range(0, len(P), CHUNK)])

    def changes(self, full, loo):
        return np.stack([self.rr(x) for x in loo]) - self.rr(full)

    def deletion_response(self, th0, **train):
        """The full-data run from ``th0`` and the relative-risk changes of every row's
        deletion run (same start, same ``train`` settings): ``(full, changes)``."""
        full = self.train(np.ones((1, self.n)), th0, **train)[0]
        return full, self.changes(full, self.train(self.presence(1.0), th0, **train))

    def vif(self, th):
        lam_min, _ = ad.hessian_extreme_eigenvalues(self.M, th, self.n,
                                                    iters=min(60, self.M.n_params), seed=0)
        damping = max(0.1, round(1.5 * -lam_min, 4))
        v = ad.vif(self.M, th, self.n, target_fn=self.tgt, objects=self.rows, damping=damping)
        return self.rr(th)[None, :] * (-v / self.n), lam_min

    def gmax(self, th, p=None):
        p = jnp.ones(self.n) if p is None else jnp.asarray(p)
        return float(jnp.abs(jax.grad(lambda q: self.M.loss(q, p))(jnp.asarray(th))).max())


def minibatch_masks(n, epochs, batch, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(epochs):
        perm = rng.permutation(n)
        for s in range(0, n, batch):
            m = np.zeros(n)
            m[perm[s:s + batch]] = 1.0
            out.append(m)
    return np.array(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None,
                    help="seeded random training rows deleted (default 100; --quick 30)")
    ap.add_argument("--quick", action="store_true",
                    help="30 rows; no long-training and minibatch experiments")
    a = ap.parse_args(argv)
    t_start = time.perf_counter()
    sp = paper_split("metabric", data_path(), seed=0)
    X, t, e = sp.arrays("train")
    Xt = sp.arrays("test")[0]
    n = X.shape[0]
    n_rows = a.rows if a.rows is not None else (30 if a.quick else 100)
    rows = np.sort(np.random.default_rng(0).choice(n, size=min(n_rows, n), replace=False))
    lab = Lab(X, t, e, Xt, rows, losses.cox_mlp(X, t, e, hidden=4))
    M = lab.M
    R, notes, K = [], [], {}
    f3 = lambda x: f"{x:.3f}"  # noqa: E731

    # ---- T1: the Table 4 protocol, two initialisations (library fit / loo)
    t0 = time.perf_counter()
    fits, bfs, vifs = {}, {}, {}
    for s in (0, 1):
        fits[s] = M.fit(seed=s)
        bfs[s] = lab.changes(fits[s], M.loo(fits[s], objects=rows, seed=s))
        vifs[s], lam = lab.vif(fits[s])
        K[f"lam{s}"] = lam
    K["T1_bf"] = corr(bfs[1], bfs[0])
    K["T1_vif"] = (corr(vifs[0], bfs[0]), corr(vifs[1], bfs[1]))
    K["vif_vif"] = corr(vifs[0], vifs[1])
    deta = np.median(np.abs(np.log(lab.rr(fits[0])) - np.log(lab.rr(fits[1]))))
    R.append(["T1", "Table 4 protocol: init seeds 1 vs 0, LOO from the seed's initialisation",
              f3(K["T1_bf"]), f"{f3(K['T1_vif'][0])} (seed 0), {f3(K['T1_vif'][1])} (seed 1)",
              f"max|grad| of the full fits {lab.gmax(fits[0]):.3g}, {lab.gmax(fits[1]):.3g} "
              f"(not stationary); lambda_min(H/n) {K['lam0']:.3g}, {K['lam1']:.3g}; the two "
              f"networks differ (median |eta_0(x) - eta_1(x)| over test patients {deta:.3g}); "
              f"VIF of seed 0 vs VIF of seed 1: {f3(K['vif_vif'])}"])
    notes.append(f"T1: {time.perf_counter() - t0:.0f} s")

    # ---- T2: determinism; our trainer against the library's
    t0 = time.perf_counter()
    th0 = M.init_params(0)
    full0, del0 = lab.deletion_response(th0)
    again = lab.changes(fits[0], M.loo(fits[0], objects=rows, seed=0))
    R.append(["T2", "the seed-0 brute force run twice (same init, same data)",
              f3(corr(again, bfs[0])), "",
              f"max abs difference of the two runs {np.abs(again - bfs[0]).max():.1e}: the "
              "trainer has no randomness besides the initialisation (full batch); this "
              f"script's Adam vs the library's: {np.abs(del0 - bfs[0]).max():.1e}"])
    notes.append(f"T2: {time.perf_counter() - t0:.0f} s")

    # ---- T3: sensitivity to the initialisation (no deletion)
    t0 = time.perf_counter()
    eps = np.random.default_rng(5).standard_normal((20, th0.size)) * 1e-9
    runs = np.stack([lab.train(np.ones((1, n)), th0 + d)[0] for d in eps])
    null = np.stack([lab.rr(x) for x in runs]) - lab.rr(full0)
    R.append(["T3", "initialisation perturbed by 1e-9 (20 draws), no row deleted", "", "",
              f"std of the relative-risk change {null.std():.1e}, against {bfs[0].std():.3g} "
              "for the deletions: the 200 steps do not amplify a perturbation of the start"])
    notes.append(f"T3: {time.perf_counter() - t0:.0f} s")

    # ---- T4: infinitesimal down-weighting (the derivative of the training path)
    t0 = time.perf_counter()
    deriv = lab.changes(full0, lab.train(lab.presence(1e-7), th0)) / 1e-7
    dev = np.abs(del0 - deriv).max(axis=1) / np.abs(deriv).max(axis=1)
    K["T4"] = (corr(deriv, del0), corr(vifs[0], deriv))
    R.append(["T4", "row weight 1 - 1e-7 (the derivative of the 200-step training path, "
              "seed 0) against the deletion", "",
              f"VIF vs the derivative {f3(K['T4'][1])}",
              f"derivative vs deletion {f3(K['T4'][0])}; in {int(np.sum(dev > 0.5))} of "
              f"{rows.size} rows the deletion departs from the linear extrapolation by more "
              f"than 50%; std of the changes: deletion {del0.std():.3g}, derivative "
              f"{deriv.std():.3g}, VIF {vifs[0].std():.3g}"])
    notes.append(f"T4: {time.perf_counter() - t0:.0f} s")

    # ---- T5: warm-started LOO
    t0 = time.perf_counter()
    _, warm = lab.deletion_response(fits[0])
    K["T5"] = corr(vifs[0], warm)
    R.append(["T5", "LOO warm-started at theta_hat (200 more Adam steps; baseline: the full "
              "data, 200 more steps from theta_hat)", f"{f3(corr(warm, bfs[0]))} (warm vs "
              "cold)", f3(K["T5"]),
              f"std of the warm changes {warm.std():.3g}, {warm.std() / bfs[0].std():.0f}x the "
              "cold ones: restarting Adam (fresh moments) at a non-stationary point is itself "
              "a large perturbation"])
    notes.append(f"T5: {time.perf_counter() - t0:.0f} s")

    # ---- T6: longer training with a decaying learning rate
    if not a.quick:
        t0 = time.perf_counter()
        lt, lv, lg = {}, {}, []
        for s in (0, 1):
            ths = M.init_params(s)
            fl, lt[s] = lab.deletion_response(ths, steps=2000, lr1=1e-5)
            lv[s], _ = lab.vif(fl)
            lg.append(lab.gmax(fl))
        K["T6"] = (corr(lt[1], lt[0]), corr(lv[0], lt[0]))
        R.append(["T6", "2000 Adam steps, lr cosine-decayed 0.01 -> 1e-5 (full and LOO), "
                  "init seeds 1 vs 0", f3(K["T6"][0]),
                  f"{f3(K['T6'][1])} (seed 0), {f3(corr(lv[1], lt[1]))} (seed 1)",
                  f"max|grad| of the full fits {lg[0]:.3g}, {lg[1]:.3g}: still no stationary "
                  "point; longer training does not help"])
        notes.append(f"T6: {time.perf_counter() - t0:.0f} s")

    # ---- T7: minibatches, data order
    if not a.quick:
        t0 = time.perf_counter()
        mb = {}
        for o in (0, 1):
            mk = minibatch_masks(n, 200, 128, o)
            fl, ch = lab.deletion_response(th0, steps=mk.shape[0], masks=mk)
            mb[o] = (ch, lab.vif(fl)[0], fl)
        deta_o = np.median(np.abs(np.log(lab.rr(mb[0][2])) - np.log(lab.rr(mb[1][2]))))
        K["T7"] = (corr(mb[1][0], mb[0][0]), corr(mb[0][1], mb[0][0]))
        R.append(["T7", "minibatches of 128 rows, 200 epochs (2000 steps), init seed 0, data "
                  "order seeds 1 vs 0 (the order of a LOO run is its seed's)", f3(K["T7"][0]),
                  f"{f3(K['T7'][1])} (order 0), {f3(corr(mb[1][1], mb[1][0]))} (order 1)",
                  f"median |eta_0(x) - eta_1(x)| {deta_o:.3g}: one initialisation, two data "
                  "orders give close networks"])
        notes.append(f"T7: {time.perf_counter() - t0:.0f} s")

    # ---- T8: smooth activation
    t0 = time.perf_counter()
    soft = Lab(X, t, e, Xt, rows, SoftplusCoxMLP(X, t, e, hidden=4))
    sb, sv, sd = {}, {}, {}
    for s in (0, 1):
        ths = soft.M.init_params(s)
        fl = soft.train(np.ones((1, n)), ths)[0]
        sb[s] = soft.changes(fl, soft.train(soft.presence(1.0), ths))
        sv[s], _ = soft.vif(fl)
        if s == 0:
            sd = soft.changes(fl, soft.train(soft.presence(1e-7), ths)) / 1e-7
    K["T8"] = (corr(sb[1], sb[0]), corr(sv[0], sb[0]), corr(sv[1], sb[1]), corr(sd, sb[0]))
    R.append(["T8", "softplus instead of ReLU, Table 4 protocol otherwise, init seeds 1 vs 0",
              f3(K["T8"][0]), f"{f3(K['T8'][1])} (seed 0), {f3(K['T8'][2])} (seed 1)",
              f"derivative (weight 1 - 1e-7) vs deletion {f3(K['T8'][3])}; VIF vs "
              f"derivative {f3(corr(sv[0], sd))}"])
    notes.append(f"T8: {time.perf_counter() - t0:.0f} s")

    lines = ["**Measured conclusion.**",
             f"The brute force of the Table 4 protocol is deterministic (T2) and insensitive "
             f"to a tiny change of its start (T3), but its response to deleting a row is not "
             f"the local, linear effect VIF estimates: the deletion response agrees with the "
             f"derivative of the same training path at only {K['T4'][0]:.3f} (T4), while "
             f"VIF agrees with that derivative at {K['T4'][1]:.3f}. After 200 steps the "
             f"network is not at a stationary point, and a whole-row deletion changes the "
             f"path non-linearly. Two initialisations give different networks whose "
             f"deletion responses do not agree ({K['T1_bf']:.3f}, T1), though their VIFs "
             f"agree at {K['vif_vif']:.3f}. Warm-started LOO does not help (T5)."]
    if "T6" in K:
        lines.append(f"Training longer with a decaying rate does not reach a stationary "
                     f"point (T6: {K['T6'][0]:.3f} / {K['T6'][1]:.3f}); with one "
                     f"initialisation and shuffled minibatches brute force against brute "
                     f"force is {K['T7'][0]:.3f} and VIF {K['T7'][1]:.3f} (T7).")
    lines.append(f"A smooth activation raises both (softplus: brute force {K['T8'][0]:.3f}, "
                 f"VIF {K['T8'][1]:.3f} / {K['T8'][2]:.3f}, T8), but its deletion response "
                 f"is no closer to the path's derivative ({K['T8'][3]:.3f}): the "
                 f"non-linearity is not only ReLU's kinks. What brings the paper's numbers "
                 f"(0.219 / 0.238) above ours is not settled: its appendix gives Adam, lr 0.01, "
                 f"200 epochs and a two-layer ReLU MLP, not the width, the batch size or the "
                 f"initialisation, and the settings measured here span the paper's values.")
    text = ["# Explanation: Table 4 neural Cox, brute force vs brute force\n",
            f"METABRIC paper split, n = {n}; {rows.size} seeded random training rows deleted "
            f"(the correlations are over them), {Xt.shape[0]} test patients. Paper: "
            "Brute-Force 0.219, VIF (explicit) 0.238. Protocol and metric: the docstring of "
            "paper_appendix/explain_table4.py.\n",
            markdown_table(["#", "experiment", "BF vs BF", "VIF vs BF", "measured"], R),
            "", "\n".join(lines), "", *[f"- {s}" for s in notes],
            f"\nWall time {time.perf_counter() - t_start:.0f} s.\n"]
    write_result("explain_table4.md", "\n".join(text))


if __name__ == "__main__":
    main()

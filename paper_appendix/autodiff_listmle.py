"""Paper Table 1, Listwise Learning-to-Rank row.  Default data: SYNTHETIC, in the
Mediamill format (101 labels, 8 SVD features; generator
``coxinfluence.autodiff.datasets.synthetic_mediamill``) - the real Mediamill file is
not available offline.  ``--xc-file PATH`` reads a real Mediamill/Delicious file
(XC repository format, ``load_xc``) instead; its first ``--n-train`` points train,
the next ``--n-test`` are test queries (labels in file order as the ranking).

Objects: the items (labels).  Two removal definitions are run:
* ``delete``: the item leaves every candidate set and every ranking - the paper's
  Eq. listmle with [n] replaced by [n] minus the item (an absent item cannot be a
  candidate: this is Example 3's non-decomposable loss over items);
* ``labels``: the item's label is dropped from the rankings, but it stays a
  candidate in every softmax.
Linear scorer, ridge ``--l2``.  Targets: the ListMLE loss of the test queries.
Brute force: exact refits (warm-started L-BFGS to max|grad| <= 1e-8; the loss is
l2-strongly convex, so each refit is within 1e-8/l2 of the minimizer); run 2 starts
every refit from theta_hat + N(0, 0.05^2) noise (seed 1), the "different seed" run.
Metric: per test query, Pearson over the items, averaged; also pooled.
Writes paper_appendix/out/autodiff_listmle.md.
"""
import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import write_result  # noqa: E402

import coxinfluence.autodiff as ad  # noqa: E402
from coxinfluence.autodiff import datasets, losses  # noqa: E402


def corr(a, b):
    per = [np.corrcoef(a[:, k], b[:, k])[0, 1] for k in range(a.shape[1])
           if np.std(a[:, k]) > 0 and np.std(b[:, k]) > 0]
    return float(np.mean(per)), float(np.corrcoef(a.ravel(), b.ravel())[0, 1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--n-test", type=int, default=300)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--items", type=int, default=None, help="first K items only")
    ap.add_argument("--xc-file", default=None)
    a = ap.parse_args()
    if a.xc_file:
        X = datasets.load_xc(a.xc_file)
        R = datasets.labels_to_rankings(X.labels, max_k=10)
        keep = (R >= 0).any(1)
        F, R = X.X[keep], R[keep]
        D = {"F_train": F[:a.n_train], "R_train": R[:a.n_train],
             "F_test": F[a.n_train:a.n_train + a.n_test],
             "R_test": R[a.n_train:a.n_train + a.n_test]}
        n_items, what = X.n_labels, f"REAL data from {a.xc_file}"
    else:
        D = datasets.synthetic_mediamill(n_train=a.n_train, n_test=a.n_test, seed=a.seed)
        n_items, what = 101, "SYNTHETIC Mediamill-format data (not the real Mediamill)"
    objs = np.arange(n_items if a.items is None else a.items)
    lines = [f"{what}: {len(D['R_train'])} train queries, {len(D['R_test'])} test queries, "
             f"{n_items} items, {D['F_train'].shape[1]} features, l2={a.l2}, seed {a.seed}; "
             f"{objs.size} items attributed\n",
             "| Scenario | Dataset | removal | Method | Pearson (mean over test queries) | "
             "Pearson (pooled) | paper (real Mediamill) |", "|---|---|---|---|---|---|---|"]
    timing = []
    for removal in ("delete", "labels"):
        L = losses.listmle(D["F_train"], D["R_train"], n_items=n_items, l2=a.l2,
                           removal=removal)
        th = L.fit(gtol=1e-10, newton_tol=None)
        tg = lambda t: L.query_loss(t, D["F_test"], D["R_test"])  # noqa: E731
        t0 = time.perf_counter()
        v = ad.vif(L, th, n_items, target_fn=tg, objects=objs)
        t_vif = time.perf_counter() - t0
        base = np.asarray(tg(jnp.asarray(th)))
        runs = []
        for run, noise in ((0, 0.0), (1, 0.05)):
            t0 = time.perf_counter()
            loo = L.loo(th, objects=objs, tol=1e-8, start_noise=noise, seed=run)
            t_bf = time.perf_counter() - t0
            runs.append(np.stack([np.asarray(tg(jnp.asarray(x))) for x in loo]) - base)
            timing.append(f"{removal}: brute force run {run + 1} ({objs.size} refits) "
                          f"{t_bf:.1f} s")
        timing.append(f"{removal}: VIF {t_vif:.1f} s (compilation included)")
        pred = -v / n_items
        c1, c2 = corr(pred, runs[0]), corr(runs[1], runs[0])
        lines.append(f"| Listwise LTR | {'real' if a.xc_file else 'synthetic'} Mediamill format | "
                     f"{removal} | VIF | {c1[0]:.3f} | {c1[1]:.3f} | 0.823 |")
        lines.append(f"| Listwise LTR | {'real' if a.xc_file else 'synthetic'} Mediamill format | "
                     f"{removal} | Brute-Force (2nd start) | {c2[0]:.3f} | {c2[1]:.3f} | 0.999 |")
        print("\n".join(lines[-2:]), flush=True)
    lines += ["", "runtime: " + "; ".join(timing)]

    # decomposable special case: objects = queries
    m = min(500, len(D["R_train"]))
    Lq = losses.listmle(D["F_train"][:m], D["R_train"][:m], n_items=n_items,
                        objects="queries", l2=a.l2)
    thq = jnp.asarray(Lq.fit(gtol=1e-10, newton_tol=None))
    vq = ad.vif(Lq, thq, m)
    G = np.asarray(jax.jacrev(lambda t: losses._listmle_query_terms(
        Lq.scores(t), jnp.asarray(Lq.R), jnp.ones(n_items)))(thq))
    H = ad.hessian_matrix(lambda t: Lq(t, jnp.ones(m)), thq)
    cf = -m * np.linalg.solve(H, G.T).T
    lines.append(f"\nobjects = queries (decomposable, {m} queries): max |VIF - IF| / max |IF| = "
                 f"{np.max(np.abs(vq - cf)) / np.max(np.abs(cf)):.2e}")
    write_result("autodiff_listmle.md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

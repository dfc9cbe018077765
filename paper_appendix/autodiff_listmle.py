"""Paper Table 1 and Table 2, Listwise Learning-to-Rank rows (Mediamill, Delicious).

Data.  Default: SYNTHETIC data in each set's published format (the real files are not
available offline here): ``coxinfluence.autodiff.datasets.synthetic_mediamill`` (101
labels, 120 features, 30993 train / 12914 test points, ~4.2 labels per point) and
``synthetic_delicious`` (983 labels, 500 features, 12920 / 3185, ~19 labels per point),
features reduced to 8 by ``truncated_svd`` (the paper's TruncatedSVD).  ``--xc-file PATH
--format mediamill|delicious`` reads a REAL Mediamill / Delicious file (XC repository
format, ``load_xc``; the first 30993 / 12920 points train unless ``--xc-test PATH`` gives
the test points; labels in file order as the ranking; TruncatedSVD fitted on the training
points).  Every row says SYNTHETIC or REAL.

The paper's protocol (Section "Experiments", Appendix "Detailed experiment setup"):
linear scorer on the 8 SVD features, ListMLE (Eq. listmle), Adam with learning rate
1e-3, weight decay 5e-4, batch size 128, 100 epochs; 500 test queries sampled from the
test set; training objects: Mediamill's 101 labels, 100 labels sampled from Delicious's
983.  We read "weight decay" as torch.optim.Adam(weight_decay=5e-4), an L2 term added to
the gradient of the batch-mean loss (PyTorch's default; the authors' released code does
this, see below), so Adam descends (1/m) [ListMLE sum + (5e-4 m / 2) ||theta||^2].
Initialization: torch.nn.Linear's default; minibatches reshuffled every epoch
(``--no-shuffle``: file order).  Brute force: retrain with the same hyperparameters with
one item removed, same seed; "Brute-Force vs Brute-Force": a second brute force and full
model with seed 1 (initialization and minibatch order).  VIF: coxinfluence.autodiff.vif
at the trained (not converged) parameters, with the explicit Hessian of the same
objective (built from its Kronecker structure: ListMLELoss.hessian_solver).

Sizes.  The paper's sizes do not fit this script's budget (one brute force on Mediamill is
101 x 24300 Adam steps): by default each set trains on a seeded sample of ``--n-train``
queries (100 epochs = 100 ceil(m / 128) Adam steps) and Delicious refits ``--attributed``
of its 100 sampled labels; the output states the sizes, and the headline rows are
recomputed at half the training queries (stability check; Mediamill by default,
``--check-sets``).  At 100 epochs of a scaled set Adam takes far fewer steps than the
paper's (800 against 24300 / 10100), so a second experiment reruns the paper protocol on
the same data with ``--steps-factor`` times the epochs for ``--steps-items`` Mediamill
items: it isolates the Adam budget (non-convergence) from everything else.

Removal of item i (both run, labelled): ``delete`` - the item leaves every candidate set
and every ranking (its parameters then carry no data term); ``labels`` - only its labels
leave the rankings, it stays a candidate in every softmax.  Targets: the ListMLE loss of
each test query with all items ("all items"), and, for ``delete``, the test loss with
the item deleted from the test query's candidates too, test queries that list the item
left out for it ("item deleted", the ground truth of the authors' released code).
Metric: Pearson correlation over the attributed items of the change of a test query's
loss, averaged over the test queries (the released code's corr.py); pooled over all
(item, query) pairs beside it.

Our converged protocol, labelled: the same objective minimised to max|grad| <= 1e-9
(L-BFGS with the structured Hessian), exact refits to max|grad| <= 1e-6 (strongly convex:
a certified distance to the exact refit is printed), VIF at the minimiser; and the
paper-protocol brute force against the exact refits.  (The former "2nd start" row is
dropped: restarting a strongly convex fit reaches the same minimiser, so its 1.000 says
nothing.)

Writes paper_appendix/out/autodiff_listmle.md.  BLAS runs single-threaded unless
OPENBLAS_NUM_THREADS is set (on a shared 2-core machine its threads contend).
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import write_result  # noqa: E402

import coxinfluence.autodiff as ad  # noqa: E402
from coxinfluence.autodiff import datasets, losses  # noqa: E402

SETS = {
    # objects: None = all labels are training objects, else how many are sampled;
    # vif, bf: the paper's Table 1 (VIF, brute force vs brute force)
    "mediamill": dict(name="Mediamill", gen=datasets.synthetic_mediamill, n_items=101,
                      n_train=30993, objects=None, vif=0.823, bf=0.999),
    "delicious": dict(name="Delicious", gen=datasets.synthetic_delicious, n_items=983,
                      n_train=12920, objects=100, vif=0.906, bf=0.999),
}


def corr(pred, truth, mask=None):
    """(mean over test queries of the Pearson correlation over items, pooled Pearson);
    ``pred``, ``truth``: (items, queries); ``mask``: entries to use.  Queries with fewer
    than 3 usable items or a constant column are skipped (as corr.py skips NaNs)."""
    mask = np.ones(pred.shape, bool) if mask is None else mask
    per = []
    for k in range(pred.shape[1]):
        a, b = pred[mask[:, k], k], truth[mask[:, k], k]
        if a.size >= 3 and np.std(a) > 0 and np.std(b) > 0:
            per.append(np.corrcoef(a, b)[0, 1])
    return float(np.mean(per)), float(np.corrcoef(pred[mask], truth[mask])[0, 1])


def load_data(spec, a):
    """(train features, train rankings, test features, test rankings, provenance)."""
    if a.xc_file:
        X = datasets.load_xc(a.xc_file)
        if a.xc_test:
            T = datasets.load_xc(a.xc_test, n_features=X.X.shape[1], n_labels=X.n_labels)
            Xtr, Ltr, Xte, Lte = X.X, X.labels, T.X, T.labels
        else:
            k = spec["n_train"]
            Xtr, Ltr, Xte, Lte = X.X[:k], X.labels[:k], X.X[k:], X.labels[k:]
        V = datasets.truncated_svd(Xtr, 8)
        nl = X.n_labels
        if nl != spec["n_items"]:
            print(f"note: {a.xc_file} has {nl} labels, {spec['name']} {spec['n_items']}")
        spec["n_items"] = nl
        return (Xtr @ V, datasets.labels_to_rankings(Ltr), Xte @ V,
                datasets.labels_to_rankings(Lte), f"REAL {spec['name']} ({a.xc_file})")
    D = spec["gen"](seed=a.seed)
    return (D["F_train"], D["R_train"], D["F_test"], D["R_test"],
            f"SYNTHETIC {spec['name']}-format")


class Targets:
    """Test-query losses: all items (``f_all``), and with item i deleted (``f_del``)."""

    def __init__(self, L, Ft, Rt, objs):
        self.objs, n = objs, L.n_items
        Ftj, Rtj = jnp.asarray(Ft), jnp.asarray(Rt)
        self.f_all = jax.jit(lambda th: L.query_loss(th, Ftj, Rtj))
        self.f_all_rows = jax.jit(jax.vmap(lambda th: L.query_loss(th, Ftj, Rtj)))
        B = np.ones((objs.size, n))
        B[np.arange(objs.size), objs] = 0.0
        self.B = jnp.asarray(B)

        def f_del(th, b):
            return losses._listmle_query_terms(L.scores(th, Ftj), Rtj, b, "delete")

        self.f_del = jax.jit(jax.vmap(f_del))
        self.jvp_del = jax.jit(jax.vmap(lambda th, b, v: jax.jvp(
            lambda t: f_del(t, b), (th,), (v,))))
        self.jac_all = jax.jit(jax.jacrev(lambda th: L.query_loss(th, Ftj, Rtj)))
        # a test query that lists item i has no loss without it (+inf in the released
        # code): left out of item i's correlation
        self.mask_del = ~np.stack([(Rt == i).any(1) for i in objs])
        p1 = L.F.shape[1] + 1
        self.block = [np.arange(p1) * n + i for i in objs]

    def truth(self, th_full, TH):
        base = np.asarray(self.f_all(jnp.asarray(th_full)))
        t_all = np.asarray(self.f_all_rows(jnp.asarray(TH))) - base
        t_del = np.asarray(self.f_del(jnp.asarray(TH), self.B)) - base
        return t_all, t_del

    def predictions(self, th, dth):
        """From predicted parameter changes ``dth`` (items, d): changes of the all-items
        target; of the item-deleted target as the released code scores it (gradient of
        the all-items loss without the item's parameters); and the first-order change of
        the item-deleted target itself (its exact value at theta without the item plus
        its directional derivative); and that exact value alone (no retraining)."""
        J = np.asarray(self.jac_all(jnp.asarray(th)))             # (K, d)
        p_all = dth @ J.T
        p_code = p_all - np.stack([J[:, f] @ dth[r, f] for r, f in enumerate(self.block)])
        T = jnp.asarray(np.repeat(np.asarray(th)[None], len(dth), axis=0))
        val, der = self.jvp_del(T, self.B, jnp.asarray(dth))
        base = np.asarray(self.f_all(jnp.asarray(th)))
        direct = np.asarray(val) - base
        return p_all, p_code, direct + np.asarray(der), direct


def run_set(key, a, m_train, n_attr, checks):
    """All rows of one data set.  Returns (rows, notes, runtime line, headline dict)."""
    spec = dict(SETS[key])
    Ftr, Rtr, Fte, Rte, what = load_data(spec, a)
    n, n_full = spec["n_items"], len(Rtr)
    tr = datasets.sample_subset(n_full, m_train, a.seed + 1)
    te = datasets.sample_subset(len(Rte), a.n_test, a.seed + 2)
    Ftr, Rtr, Fte, Rte = Ftr[tr], Rtr[tr], Fte[te], Rte[te]
    objs = (np.arange(n) if spec["objects"] is None else
            datasets.sample_subset(n, spec["objects"], a.seed + 3))
    n_obj_paper = objs.size
    if n_attr is not None and n_attr < objs.size:
        objs = objs[datasets.sample_subset(objs.size, n_attr, a.seed + 4)]
    m = len(Rtr)
    steps = a.epochs * -(-m // a.batch_size)
    paper_steps = a.epochs * -(-spec["n_train"] // a.batch_size)
    l2 = a.weight_decay * m
    L = {r: losses.listmle(Ftr, Rtr, n_items=n, l2=l2, removal=r) for r in ("delete", "labels")}
    tg = Targets(L["delete"], Fte, Rte, objs)
    P = np.ones((objs.size, n))
    P[np.arange(objs.size), objs] = 0.0
    kw = dict(epochs=a.epochs, batch_size=a.batch_size, lr=a.lr, shuffle=a.shuffle)
    ds = f"{what}"
    notes = [f"**{what}**: {m} training queries (seeded sample of {n_full}"
             f"{'' if m >= n_full else '; SCALED DOWN from the paper'}), "
             f"{Rte.shape[0]} test queries, {n} items, 8 SVD features; {objs.size} items "
             f"attributed (the paper: {n_obj_paper}); {a.epochs} epochs of batch "
             f"{a.batch_size} = {steps} Adam steps (the paper's sizes: {paper_steps}); "
             f"ridge of the objective l2 = weight decay x m = {l2:g}."]
    rows, tm = [], {}

    def row(proto, removal, target, method, c, paper="-"):
        rows.append(f"| {ds} | {proto} | {removal} | {target} | {method} | {c[0]:.3f} | "
                    f"{c[1]:.3f} | {paper} |")
        print(rows[-1], flush=True)

    # --- the paper's protocol ------------------------------------------------------
    t0 = time.perf_counter()
    thA = {s: L["delete"].fit_adam(seed=s, **kw) for s in (0, 1)}
    tm["full"] = time.perf_counter() - t0
    BF = {}
    for r in ("delete", "labels"):
        for s in (0, 1):
            t0 = time.perf_counter()
            BF[r, s] = L[r].fit_adam(P, seed=s, **kw)
            tm["bf", r, s] = time.perf_counter() - t0
    t0 = time.perf_counter()
    slvA = L["delete"].hessian_solver(thA[0])
    tm["hess_A"] = time.perf_counter() - t0
    dA = {}
    for r in ("delete", "labels"):
        t0 = time.perf_counter()
        dA[r] = -ad.vif(L[r], thA[0], n, objects=objs, solver=slvA) / n
        tm["vif", r] = time.perf_counter() - t0
    proto = "paper (Adam)"
    head = {}
    for r in ("delete", "labels"):
        t0a, d0 = tg.truth(thA[0], BF[r, 0])
        t1a, d1 = tg.truth(thA[1], BF[r, 1])
        p_all, p_code, p_dir, direct = tg.predictions(thA[0], dA[r])
        c = corr(p_all, t0a)
        head[r, "all"] = c[0]
        row(proto, r, "all items", "VIF", c, spec["vif"])
        c = corr(t1a, t0a)
        head[r, "all", "bf"] = c[0]
        row(proto, r, "all items", "Brute-Force vs Brute-Force", c, spec["bf"])
        if r == "delete":
            mk = tg.mask_del
            c = corr(p_code, d0, mk)
            head[r, "del"] = c[0]
            row(proto, r, "item deleted", "VIF (released code's contraction)", c, spec["vif"])
            c = corr(direct, d0, mk)
            head[r, "del", "direct"] = c[0]
            row(proto, r, "item deleted", "direct term alone (no retraining)", c)
            c = corr(p_dir, d0, mk)
            head[r, "del", "vif+direct"] = c[0]
            row(proto, r, "item deleted", "VIF + exact direct term", c)
            c = corr(d1, d0, mk)
            head[r, "del", "bf"] = c[0]
            row(proto, r, "item deleted", "Brute-Force vs Brute-Force", c, spec["bf"])

    # --- our converged protocol ----------------------------------------------------
    conv = {}
    if a.converged:
        t0 = time.perf_counter()
        thC, slvC = L["delete"].fit_newton(thA[0], tol=1e-9, solver=slvA, max_iter=200)
        tm["fitC"] = time.perf_counter() - t0
        proto = "converged (exact)"
        gaps = []
        for r in ("delete", "labels"):
            t0 = time.perf_counter()
            EX, gm = L[r].loo_newton(thC, objects=objs, tol=1e-6, solver=slvC)
            tm["exact", r] = time.perf_counter() - t0
            t0 = time.perf_counter()
            dC = -ad.vif(L[r], thC, n, objects=objs, solver=slvC) / n
            tm["vifC", r] = time.perf_counter() - t0
            conv[r] = (thC, EX, dC)
            e_all, e_del = tg.truth(thC, EX)
            t0a, d0 = tg.truth(thA[0], BF[r, 0])
            p_all, p_code, p_dir, direct = tg.predictions(thC, dC)
            c = corr(p_all, e_all)
            head[r, "all", "conv"] = c[0]
            row(proto, r, "all items", "VIF", c)
            c = corr(t0a, e_all)
            head[r, "all", "bf-exact"] = c[0]
            row(proto, r, "all items", "paper-protocol Brute-Force vs exact", c)
            if r == "delete":
                mk = tg.mask_del
                c = corr(p_code, e_del, mk)
                head[r, "del", "conv"] = c[0]
                row(proto, r, "item deleted", "VIF (released code's contraction)", c)
                row(proto, r, "item deleted", "direct term alone (no retraining)",
                    corr(direct, e_del, mk))
                row(proto, r, "item deleted", "VIF + exact direct term",
                    corr(p_dir, e_del, mk))
                c = corr(d0, e_del, mk)
                head[r, "del", "bf-exact"] = c[0]
                row(proto, r, "item deleted", "paper-protocol Brute-Force vs exact", c)
            eff = np.linalg.norm(EX - thC, axis=1)
            bound = np.sqrt(thC.size) * gm / l2
            gaps.append(
                f"{r}: exact LOO effect ||theta_-i - theta*|| median {np.median(eff):.3g}; "
                f"certified refit error <= sqrt(d) max|grad| / l2 = {bound.max():.1e}; "
                f"paper-protocol refits from the exact ones: median "
                f"||theta_A,-i - theta*_-i|| = "
                f"{np.median(np.linalg.norm(BF[r, 0] - EX, axis=1)):.3g}")
        Lf = float(L["delete"](jnp.asarray(thC), jnp.ones(n)))
        LA = float(L["delete"](jnp.asarray(thA[0]), jnp.ones(n)))
        notes.append(
            f"Convergence ({ds}): the Adam model is at ||theta_A - theta*|| / ||theta*|| = "
            f"{np.linalg.norm(thA[0] - thC) / np.linalg.norm(thC):.3f} from the minimiser "
            f"of its own objective (objective {LA / m:.5f} vs {Lf / m:.5f} per query); "
            f"seed 0 vs seed 1 full models ||theta_A0 - theta_A1|| = "
            f"{np.linalg.norm(thA[0] - thA[1]):.3g}; " + "; ".join(gaps) + ".")
    # --- non-convergence isolated: the same runs with more Adam steps --------------
    if a.steps_items and key in a.steps_sets.split(","):
        t0 = time.perf_counter()
        sub = datasets.sample_subset(objs.size, a.steps_items, a.seed + 6)
        tgs = Targets(L["delete"], Fte, Rte, objs[sub])
        kw_long = dict(kw, epochs=a.epochs * a.steps_factor)
        thL = {s: L["delete"].fit_adam(seed=s, **kw_long) for s in (0, 1)}
        slvL = L["delete"].hessian_solver(thL[0])
        cols = {}

        def scores(th, B0, th1, B1, dth):
            t0a, d0 = tgs.truth(th, B0)
            out = {}
            p_all, p_code, _, _ = tgs.predictions(th, dth)
            out["all", "VIF"] = corr(p_all, t0a)[0]
            out["del", "VIF"] = corr(p_code, d0, tgs.mask_del)[0]
            if B1 is not None:
                t1a, d1 = tgs.truth(th1, B1)
                out["all", "BF"] = corr(t1a, t0a)[0]
                out["del", "BF"] = corr(d1, d0, tgs.mask_del)[0]
            return out

        for r in ("delete", "labels"):
            BL = {s: L[r].fit_adam(P[sub], seed=s, **kw_long) for s in (0, 1)}
            dL = -ad.vif(L[r], thL[0], n, objects=objs[sub], solver=slvL) / n
            cols[r, "short"] = scores(thA[0], BF[r, 0][sub], thA[1], BF[r, 1][sub], dA[r][sub])
            cols[r, "long"] = scores(thL[0], BL[0], thL[1], BL[1], dL)
            if r in conv:
                thC, EX, dC = conv[r]
                cols[r, "conv"] = scores(thC, EX[sub], None, None, dC[sub])
        tm["steps"] = time.perf_counter() - t0
        long_steps = a.steps_factor * steps
        stab = [f"**Non-convergence isolated ({ds})**: the paper protocol on the same data "
                f"with {a.steps_factor}x the epochs ({long_steps} Adam steps; the paper's "
                f"sizes: {paper_steps}), on {sub.size} of the attributed items (mean "
                "Pearson over test queries; the column at the default steps is the main "
                "run restricted to these items):", "",
                f"| removal / target | method | {steps} steps | {long_steps} steps | "
                "converged (exact) |", "|---|---|---|---|---|"]
        for r, t, lab in (("labels", "all", "labels / all items"),
                          ("delete", "all", "delete / all items"),
                          ("delete", "del", "delete / item deleted (contraction)")):
            for mth, name in (("VIF", "VIF"), ("BF", "Brute-Force vs Brute-Force")):
                cv = cols.get((r, "conv"), {}).get((t, mth))
                stab.append(f"| {lab} | {name} | {cols[r, 'short'][t, mth]:.3f} | "
                            f"{cols[r, 'long'][t, mth]:.3f} | "
                            f"{'-' if cv is None else f'{cv:.3f}'} |")
        notes += stab + [""]
        head["steps"] = cols, long_steps
    # --- stability: the headline rows at half the training queries ------------------
    if checks:
        t0 = time.perf_counter()
        h = datasets.sample_subset(m, m // 2, a.seed + 5)
        Lh = {r: losses.listmle(Ftr[h], Rtr[h], n_items=n, l2=a.weight_decay * (m // 2),
                                removal=r) for r in ("delete", "labels")}
        th_h = Lh["delete"].fit_adam(seed=0, **kw)
        slv_h = Lh["delete"].hessian_solver(th_h)
        half, moves = [], []
        for r in ("delete", "labels"):
            BFh = Lh[r].fit_adam(P, seed=0, **kw)
            dh = -ad.vif(Lh[r], th_h, n, objects=objs, solver=slv_h) / n
            ta, dd = tg.truth(th_h, BFh)
            p_all, p_code, _, _ = tg.predictions(th_h, dh)
            c = corr(p_all, ta)[0]
            moves.append(abs(c - head[r, "all"]))
            half.append(f"{r}, all items {c:.3f} (at m = {m}: {head[r, 'all']:.3f})")
            if r == "delete":
                c = corr(p_code, dd, tg.mask_del)[0]
                moves.append(abs(c - head[r, "del"]))
                half.append(f"delete, item deleted {c:.3f} (at m = {m}: "
                            f"{head[r, 'del']:.3f})")
        tm["check"] = time.perf_counter() - t0
        notes.append(f"Stability ({ds}, paper protocol, VIF vs brute force, mean Pearson) at "
                     f"m = {m // 2} training queries ({a.epochs * -(-(m // 2) // a.batch_size)}"
                     f" Adam steps): " + "; ".join(half) + (
                         f": stable to {max(moves):.3f}." if max(moves) <= 0.02 else
                         f": NOT stable, changes up to {max(moves):.3f}.  At a fixed number "
                         "of epochs half the queries is half the Adam steps; the run with "
                         "more steps above shows how far this budget is from convergence: "
                         "read the scaled paper-protocol numbers as depending on it."))
    elif a.check:
        notes.append(f"Stability ({ds}): the half-size check is not run for this set by "
                     f"default (budget); `--check-sets {key}` adds it.")
    t_vif = tm["hess_A"] + tm["vif", "delete"]
    rt = (f"runtime {spec['name']}-format (paper protocol, removal delete): brute force "
          f"({objs.size} refits) {tm['bf', 'delete', 0]:.1f} s; VIF {t_vif:.1f} s "
          f"(structured Hessian {tm['hess_A']:.1f} s + {objs.size} gradients and solves; "
          f"compilation included)")
    print(rt, flush=True)
    print("timings:", ", ".join(f"{'/'.join(map(str, k)) if isinstance(k, tuple) else k} "
                                f"{v:.1f} s" for k, v in tm.items()), flush=True)
    return rows, notes, rt, head, spec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="mediamill,delicious")
    ap.add_argument("--n-train", type=int, default=1000,
                    help="training queries per set (the paper: all 30993 / 12920)")
    ap.add_argument("--n-test", type=int, default=500)
    ap.add_argument("--attributed", type=int, default=20,
                    help="Delicious: refit this many of the 100 sampled labels")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--no-shuffle", dest="shuffle", action="store_false")
    ap.add_argument("--no-converged", dest="converged", action="store_false")
    ap.add_argument("--no-check", dest="check", action="store_false",
                    help="skip the half-size stability check")
    ap.add_argument("--check-sets", default="mediamill",
                    help="the sets the half-size check runs on (comma-separated; "
                         "Delicious adds about a minute)")
    ap.add_argument("--steps-items", type=int, default=10,
                    help="items of the more-Adam-steps experiment (0: skip it)")
    ap.add_argument("--steps-factor", type=int, default=5,
                    help="its epochs = this times --epochs")
    ap.add_argument("--steps-sets", default="mediamill",
                    help="the sets it runs on (comma-separated)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--xc-file", default=None)
    ap.add_argument("--xc-test", default=None)
    ap.add_argument("--format", choices=list(SETS), default=None,
                    help="which set an --xc-file is (its protocol)")
    ap.add_argument("--out", default="autodiff_listmle.md",
                    help="file name under paper_appendix/out/")
    ap.add_argument("--quick", action="store_true",
                    help="CI smoke run: 300 training queries, 60 test queries, 25 "
                         "Mediamill and 10 Delicious items refitted, no stability check, "
                         "Delicious without the converged protocol")
    a = ap.parse_args()
    sets = a.sets.split(",")
    if a.xc_file:
        if a.format is None:
            ap.error("--xc-file needs --format mediamill|delicious")
        sets = [a.format]
    if a.quick:
        a.n_train, a.n_test, a.attributed, a.check, a.steps_items = 300, 60, 10, False, 0
    t_start = time.perf_counter()
    table = ["| Data | protocol | removal | target | method | Pearson (mean over test queries) "
             "| Pearson (pooled) | paper |", "|---|---|---|---|---|---|---|---|"]
    notes, runtimes, heads = [], [], {}
    for key in sets:
        conv = a.converged and not (a.quick and key == "delicious")
        a_conv, a.converged = a.converged, conv
        n_attr = a.attributed if key == "delicious" else (25 if a.quick else None)
        rows, nt, rt, head, spec = run_set(key, a, a.n_train, n_attr,
                                           a.check and key in a.check_sets.split(","))
        a.converged = a_conv
        table += rows
        notes += nt
        runtimes.append(rt)
        heads[key] = (head, spec)
    wall = time.perf_counter() - t_start
    lines = [
        "Paper Table 1 (Listwise LTR rows).  'paper' quotes Table 1 for the paper-protocol "
        "rows it has (VIF; 'Brute-Force' = two brute-force runs with different seeds).  "
        "Every data row is SYNTHETIC unless it says REAL.\n",
        "*Paper protocol* (Appendix 'Detailed experiment setup'): linear scorer on 8 "
        "TruncatedSVD features, ListMLE (Eq. listmle), Adam lr 1e-3, weight decay 5e-4 read "
        "as torch.optim.Adam(weight_decay=5e-4) (an L2 term on the gradient of the "
        "batch-mean loss), batch 128, 100 epochs, torch.nn.Linear's initialization, "
        f"minibatches {'reshuffled every epoch' if a.shuffle else 'in file order'}; brute "
        "force: the same hyperparameters and seed with the item removed; 'Brute-Force vs "
        "Brute-Force': full model and brute force retrained with seed 1 (initialization and "
        "minibatch order) against seed 0; VIF: coxinfluence.autodiff.vif at the Adam "
        "parameters with the explicit Hessian of the objective Adam descends.  *Converged "
        "(ours)*: that objective minimised to max|grad| <= 1e-9, exact refits to "
        "max|grad| <= 1e-6, VIF at the minimiser; it has no second-start row (a strongly "
        "convex refit started elsewhere reaches the same minimiser, 1.000 by "
        "construction): instead the paper-protocol brute force is scored against the "
        "exact refits.  *Removal*: 'delete' - the item leaves every candidate set and "
        "ranking; 'labels' - only its labels leave the rankings.  *Target*: the test "
        "query's ListMLE loss over all items, or (delete) with the item deleted from the "
        "test query too, queries listing it left out.  *Metric*: the paper does not say "
        "how it pools; Pearson over the attributed items per test query, averaged over "
        "the test queries (the released corr.py), and pooled over all (item, query) pairs "
        "beside it.\n", *table, "", *notes, ""]
    expl = []
    for h, spec in heads.values():
        nm, pv = spec["name"], spec["vif"]
        cand = {"labels / all items": h["labels", "all"],
                "delete / all items": h["delete", "all"],
                "delete / item deleted (released code's contraction)": h["delete", "del"]}
        best = min(cand, key=lambda c: abs(cand[c] - pv))
        e = [f"*{nm}-format.* Removal (paper protocol, VIF vs brute force, mean Pearson; "
             f"paper {pv}): " + ", ".join(f"{c} {v:.3f}" for c, v in cand.items())
             + f"; closest to the paper: {best}.  The brute-force ceiling (paper "
             f"{spec['bf']}): labels {h['labels', 'all', 'bf']:.3f}, delete "
             f"{h['delete', 'all', 'bf']:.3f} (all items) / {h['delete', 'del', 'bf']:.3f} "
             "(item deleted)."]
        e.append(f"Target: with the item deleted from the test lists, deleting it from the "
                 f"test softmax alone (no retraining) correlates "
                 f"{h['delete', 'del', 'direct']:.3f} with the brute force; the released "
                 f"code's contraction leaves that term out ({h['delete', 'del']:.3f}); VIF "
                 f"plus the exact term: {h['delete', 'del', 'vif+direct']:.3f}.")
        if ("labels", "all", "conv") in h:
            e.append(f"Non-convergence: at the minimiser, with exact refits, VIF gives "
                     f"labels {h['labels', 'all', 'conv']:.3f}, delete / all items "
                     f"{h['delete', 'all', 'conv']:.3f} (the deleted item's own parameters "
                     f"fall to 0, a change no first-order step predicts), delete / item "
                     f"deleted (contraction) {h['delete', 'del', 'conv']:.3f}; the paper-"
                     f"protocol brute force itself correlates "
                     f"{h['labels', 'all', 'bf-exact']:.3f} (labels) and "
                     f"{h['delete', 'del', 'bf-exact']:.3f} (delete, item deleted) with "
                     "the exact leave-one-out effect of the objective it descends.")
            conv_c = {"labels": h["labels", "all", "conv"],
                      "delete / all items": h["delete", "all", "conv"],
                      "delete / item deleted": h["delete", "del", "conv"]}
            e.append("Closest to the paper at the minimiser: "
                     f"{min(conv_c, key=lambda c: abs(conv_c[c] - pv))}.")
        if "steps" in h:
            cols, ls = h["steps"]

            def g(r, t, m, c="long"):
                return cols[r, c].get((t, m), np.nan) if (r, c) in cols else np.nan

            e.append(f"More Adam steps ({ls}, same data, the items of the table above): "
                     f"brute force vs brute force {g('labels', 'all', 'BF'):.3f} (labels), "
                     f"{g('delete', 'all', 'BF'):.3f} / {g('delete', 'del', 'BF'):.3f} "
                     f"(delete; paper {spec['bf']}); VIF labels {g('labels', 'all', 'VIF'):.3f}"
                     f" (converged {g('labels', 'all', 'VIF', 'conv'):.3f}), delete "
                     f"{g('delete', 'all', 'VIF'):.3f} / {g('delete', 'del', 'VIF'):.3f} "
                     f"(converged {g('delete', 'all', 'VIF', 'conv'):.3f} / "
                     f"{g('delete', 'del', 'VIF', 'conv'):.3f}).")
            near = abs(g("labels", "all", "VIF") - g("labels", "all", "VIF", "conv"))
            if near <= 0.05 and g("labels", "all", "BF") >= spec["bf"] - 0.01 and \
                    ("labels", "all", "conv") in h:
                dl = abs(h["labels", "all", "conv"] - pv)
                dd = min(abs(x - pv) for x in (
                    h["delete", "all", "conv"], h["delete", "del", "conv"],
                    g("delete", "all", "VIF"), g("delete", "del", "VIF")))
                e.append(f"So with the Adam budget raised the paper protocol reaches the "
                         f"paper's ceiling and, for 'labels', the converged VIF (within "
                         f"{near:.3f}); over all attributed items the converged VIF is "
                         f"{h['labels', 'all', 'conv']:.3f} for 'labels' against the paper's "
                         f"{pv}, while 'delete' stays off by {dd:.3f} or more at the longer "
                         "budget and at the minimiser"
                         + (": the paper's numbers are consistent with 'labels', not with "
                            "'delete'." if dl <= 0.1 and dd > 0.3 else "."))
        expl.append(" ".join(e))
    lines += [
        "The authors' released code (github.com/TRAIS-Lab/Versatile-Influence-Function, "
        "rank_loss/main.py, score_mediamill.py, gt_mediamill.py, corr.py at commit 519e0cd; "
        "read, not run): torch.optim.Adam(lr=1e-3, weight_decay=5e-4), batch 128, 100 "
        "epochs; an item is removed by dropping its label from the lists and setting its "
        "logit to -inf (our 'delete'); the ground truth is the test loss of the refit with "
        "that logit -inf, test queries listing the item skipped (our 'item deleted'); the "
        "VIF contracts the gradient of the all-items test loss without the item's "
        "parameters (our 'released code's contraction'); the metric is the per-test-query "
        "Pearson over items, averaged (ours).  It also differs from the paper's text: its "
        "README trains with '--loss attn_rank --ce_average' (softmax cross-entropy "
        "averaged over a query's labels, not Eq. listmle), minibatches are not shuffled, "
        "single-label queries are dropped, and Mediamill is cut to its first 5000 "
        "multi-label training points.  We implement the paper's text (Eq. listmle).", ""]
    kind = "REAL data" if a.xc_file else "SYNTHETIC data, so the levels depend on the generator"
    lines += [f"Why the numbers differ from the paper's (measured above; {kind}):", "",
              *expl, ""]
    lines += [
              f"Table 2 (runtime rows; ours on {'REAL' if a.xc_file else 'SYNTHETIC'} data "
              "at the sizes above): "
              + "; ".join(runtimes) + f".  Total wall time {wall:.0f} s.", ""]
    write_result(a.out, "\n".join(lines))


if __name__ == "__main__":
    main()

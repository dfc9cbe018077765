"""Paper appendix Tables 4-5: VIF with explicit / CG / LiSSA inverse-Hessian solvers
on METABRIC, linear Cox and a one-hidden-layer ReLU MLP Cox model.

Prints markdown tables: (a) agreement of CG and LiSSA with the explicit solver
(linear: CG relative error, LiSSA correlation; MLP: same), (b) runtimes for the MLP
with 0.04K / 10.3K / 41.0K / 81.9K parameters (hidden 4 / 936 / 3728 / 7446, p = 9),
with the explicit solver refused (HessianMemoryError, shown as OOM) above the memory
budget ``--max-gb`` (default 4 GB: d = 41,008 needs 26.9 GB for H and its factor).

Targets: log-risk of ``--n-targets`` test patients (Eq. VIF-target), as the paper
attributes test predictions.  MLP: Adam, lr 0.01, 200 full-batch steps (paper), then
VIF with damping ``--damping`` added to H/n (the MLP Hessian is indefinite).
Usage: python paper_appendix/autodiff_solvers_runtime.py [--sizes 4,936,3728,7446]
"""
import argparse
import time

import numpy as np

import coxinfluence.autodiff as ad
from coxinfluence.autodiff import losses
from coxinfluence.datasets import paper_split


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4,936,3728,7446")
    ap.add_argument("--n-targets", type=int, default=10)
    ap.add_argument("--damping", type=float, default=0.01)
    ap.add_argument("--max-gb", type=float, default=4.0)
    ap.add_argument("--cg-iters", type=int, default=100)
    ap.add_argument("--lissa-depth", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=None)
    a = ap.parse_args()
    sp = paper_split("metabric", a.data, seed=a.seed)
    X, t, e = sp.arrays("train")
    Xt = sp.arrays("test")[0][: a.n_targets]
    n = X.shape[0]
    print(f"METABRIC train n={n}, d={X.shape[1]}, {a.n_targets} test targets\n")

    # ---- linear Cox: all objects, all coefficients
    L = losses.cox(X, t, e)
    th = L.fit()
    ex, t_ex = timed(lambda: ad.vif(L, th, n))
    cg, t_cg = timed(lambda: ad.vif(L, th, n, solver="cg", solver_options=dict(tol=1e-10)))
    li, t_li = timed(lambda: ad.vif(L, th, n, solver="lissa", solver_options=dict(
        depth=2000, batch_terms=50, seed=a.seed)))
    rel = lambda u, v: np.max(np.abs(u - v)) / np.max(np.abs(v))  # noqa: E731
    print("## Linear Cox (d=9), VIF of all 1218 rows x 9 coefficients\n")
    print("| solver | time (s) | ratio to explicit | max rel. error vs explicit | Pearson vs explicit |")
    print("|---|---|---|---|---|")
    for name, v, tt in (("explicit", ex, t_ex), ("CG", cg, t_cg), ("LiSSA (50 event terms/step, depth 2000)", li, t_li)):
        print(f"| {name} | {tt:.2f} | {tt / t_ex:.2f} | {rel(v, ex):.2e} | {np.corrcoef(v.ravel(), ex.ravel())[0, 1]:.6f} |")
    print()

    # ---- MLP Cox
    print("## MLP Cox, target = log-risk of test patients, damping "
          f"{a.damping} on H/n\n")
    print("| hidden | #param | fit (s) | VIF explicit (s) | VIF CG (s) | VIF LiSSA (s) | CG rel. err | LiSSA Pearson | CG iters / rel. residual |")
    print("|---|---|---|---|---|---|---|---|---|")
    for h in [int(s) for s in a.sizes.split(",")]:
        M = losses.cox_mlp(X, t, e, hidden=h)
        thm, t_fit = timed(lambda: M.fit(seed=a.seed))
        tgt = lambda p: M.eta(p, Xt)  # noqa: E731
        try:
            exm, t_exm = timed(lambda: ad.vif(M, thm, n, target_fn=tgt, damping=a.damping,
                                               solver_options=dict(max_bytes=a.max_gb * 1e9)))
            s_ex = f"{t_exm:.1f}"
        except ad.HessianMemoryError:
            exm, s_ex = None, f"OOM (needs {2 * M.n_params ** 2 * 8 / 1e9:.1f} GB > {a.max_gb:g} GB)"
        slv = ad.CGSolver(M, thm, n, a.damping, tol=1e-8, max_iter=a.cg_iters)
        cgm, t_cgm = timed(lambda: ad.vif(M, thm, n, target_fn=tgt, solver=slv))
        lim, t_lim = timed(lambda: ad.vif(M, thm, n, target_fn=tgt, damping=a.damping,
                                           solver="lissa", solver_options=dict(
                                               depth=a.lissa_depth, batch_terms=100, seed=a.seed)))
        ref = exm if exm is not None else cgm
        cg_err = f"{rel(cgm, exm):.1e}" if exm is not None else "(ref)"
        li_c = np.corrcoef(lim.ravel(), ref.ravel())[0, 1]
        li_lbl = f"{li_c:.4f}" + ("" if exm is not None else " vs CG")
        print(f"| {h} | {M.n_params} | {t_fit:.1f} | {s_ex} | {t_cgm:.1f} | {t_lim:.1f} | {cg_err} | {li_lbl} | "
              f"{slv.last_n_iter} / {slv.last_max_rel_residual:.1e} |", flush=True)


if __name__ == "__main__":
    main()

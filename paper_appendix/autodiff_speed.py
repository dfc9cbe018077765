"""Issue 4, item 6: speed of the generic autodiff Cox VIF on METABRIC (paper split,
train n=1218, d=9, Efron ties) against the closed form ``ci.vif(fit)``.

    python paper_appendix/autodiff_speed.py [--repeats 7] [--batch-sizes 128,512,1218]

Times, in one process:
* closed form ``ci.vif(fit)``, timed alternately with the compiled autodiff call;
* autodiff ``ad.vif(loss, theta_hat, n)``, first call on a new loss object (tracing
  and XLA compilation of the loss value, gradient, vmapped deletion gradients and
  the Hessian columns included) and later calls on the same loss and shapes
  (compiled functions reused from the per-loss cache; median of ``--repeats``);
* the same split into its two parts (deletion-gradient batches; Hessian + solve).

Each autodiff batch evaluates ``grad L(theta, 1_{-i})`` for ``batch`` objects at once:
its working memory is O(batch * n) floats, never n x n unless batch = n.  Also
checks that the autodiff VIF equals the closed form (max relative difference).
Writes paper_appendix/out/autodiff_speed.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from _common import data_path, markdown_table, median_time, timed, write_result  # noqa: E402

import coxinfluence as ci  # noqa: E402
import coxinfluence.autodiff as ad  # noqa: E402
from coxinfluence.autodiff import losses  # noqa: E402
from coxinfluence.autodiff.core import compiled  # noqa: E402
from coxinfluence.datasets import paper_split  # noqa: E402

PAPER_VIF_S = 2.43   # the paper's Table 2, METABRIC


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--batch-sizes", default="128,32,512")
    ap.add_argument("--ties", default="efron")
    a = ap.parse_args()
    X, t, e = paper_split("metabric", data_path()).arrays("train")
    n, d = X.shape
    fit = ci.fit_cox(X, t, e, ties=a.ties)
    ref = np.asarray(ci.vif(fit))

    rows, parts = [], []
    for bs in [int(b) for b in a.batch_sizes.split(",")]:
        L = losses.cox(X, t, e, ties=a.ties)      # a new loss object: nothing compiled yet
        v1, t_first = timed(lambda: ad.vif(L, fit.coef, n, batch_size=bs))
        # interleaved: both timed under the same machine load (this box is shared)
        t_ad, t_cf = [], []
        for _ in range(a.repeats):
            t_ad.append(timed(lambda: ad.vif(L, fit.coef, n, batch_size=bs))[1])
            t_cf.append(timed(lambda: ci.vif(fit))[1])
        t_second, t_cf = float(np.median(t_ad)), float(np.median(t_cf))
        err = np.max(np.abs(v1 - ref)) / np.max(np.abs(ref))
        mem = bs * n * 8
        rows.append([bs, f"{t_first:.3f}", f"{t_second * 1e3:.1f}", f"{t_cf * 1e3:.2f}",
                     f"{t_second / t_cf:.1f}x", f"{PAPER_VIF_S / t_second:.0f}x",
                     f"{mem / 2**20:.1f}", f"{err:.1e}"])
        # the two parts of a compiled call
        fns = compiled(L)
        th, ones = jnp.asarray(fit.coef), jnp.ones(n)
        gf = fns["value_and_grad"](th, ones)[1]
        pad = -(-n // bs) * bs
        idx = np.concatenate([np.arange(n), np.repeat(n - 1, pad - n)])

        def grads():
            for s in range(0, pad, bs):
                jax.block_until_ready(
                    fns["deletion_rows"](th, gf, ones, jnp.asarray(idx[s:s + bs])))

        t_g = median_time(grads, a.repeats)
        t_h = median_time(lambda: ad.ExplicitSolver(L, fit.coef, n).solve(np.eye(d)), a.repeats)
        parts.append([bs, f"{t_g * 1e3:.1f}", f"{t_h * 1e3:.1f}"])

    head = (f"# Autodiff Cox VIF speed, METABRIC paper split (n={n}, d={d}, ties={a.ties})\n\n"
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared), "
            f"jax {jax.__version__}, x64; medians of {a.repeats} runs.\n\n"
            f"Closed form `ci.vif(fit)` and the compiled autodiff call are timed "
            f"alternately ({a.repeats} pairs per row; the ratio is of the medians).  Paper's "
            f"autodiff VIF: {PAPER_VIF_S} s.\n\n")
    tab = markdown_table(
        ["batch", "autodiff 1st call incl. compile (s)", "autodiff compiled call (ms)",
         "closed form (ms)", "compiled / closed form", "paper 2.43 s / compiled",
         "batch memory B*n*8 (MiB)",
         "max rel. diff vs ci.vif"], rows)
    tab2 = markdown_table(["batch", "deletion gradients, all n (ms)",
                           "Hessian (d HVPs) + Cholesky + solve (ms)"], parts)
    write_result("autodiff_speed.md",
                 head + tab + "\n\nParts of a compiled call:\n\n" + tab2 + "\n")


if __name__ == "__main__":
    main()

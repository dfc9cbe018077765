"""Paper Figure 2 and the appendix heatmaps (node embedding case study) as PNG files.

    python paper_appendix/karate_figures.py [--seed 1]

DeepWalk on Zachary's karate club exactly as in autodiff_karate.py (its ``run``: walks
sampled with the seed, trained, every node deleted and the model retrained from the same
initialisation). Targets: the contrastive loss of the node pairs (12, 10) and (15, 13).
Writes to paper_appendix/out/:

- karate_spring.png: spring layout (networkx, seeded), the test nodes and hubs marked;
- karate_vif_vs_loo_12_10.png, karate_vif_vs_loo_15_13.png: VIF-estimated loss change
  (x) against the brute-force retrained loss change (y) for every removed node, labelled;
- karate_heatmap_12_10.png, karate_heatmap_15_13.png: the graph coloured by VIF and by
  LOO (two colour scales, as in the paper);
- karate_figures.md: the Pearson correlation of each scatter and the top / bottom nodes.
"""
from __future__ import annotations

import argparse
import time

import matplotlib

matplotlib.use("Agg")
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from _common import OUT, markdown_table, write_result  # noqa: E402
from autodiff_karate import run  # noqa: E402

import coxinfluence.autodiff as ad  # noqa: E402
from coxinfluence.autodiff import datasets  # noqa: E402

PAIRS = np.array([(12, 10), (15, 13)])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    L, th, loo = run(args.seed, False, PAIRS)                      # (34, 2) loss changes
    f = lambda t: L(t, jnp.ones(34))  # noqa: E731
    H = ad.hessian_matrix(f, jnp.asarray(th))
    damp = 1e-3 * np.trace(H) / 34 / L.n_params
    v = ad.vif(L, th, 34, target_fn=lambda t: L.pair_loss(t, PAIRS), damping=damp)
    est = -np.asarray(v) / 34                                      # estimated loss change
    G = datasets.karate_graph()
    pos = nx.spring_layout(G, seed=args.seed)

    fig, ax = plt.subplots(figsize=(5, 5))
    colors = ["#64e864" if k in (12, 10, 15, 13) else "#faa0b0" if k in (0, 33) else
              "#cccc00" if k in (3, 30) else "#9ecae1" for k in G.nodes]
    nx.draw_networkx(G, pos, ax=ax, node_color=colors, node_size=260, font_size=8)
    ax.set_title("Karate club, spring layout")
    ax.axis("off")
    fig.savefig(OUT / "karate_spring.png", dpi=120, bbox_inches="tight")
    plt.close(fig)

    rows, md = [], []
    for k, (u, w) in enumerate(PAIRS):
        keep = (np.arange(34) != u) & (np.arange(34) != w)
        x, y = est[keep, k], loo[keep, k]
        nodes = np.arange(34)[keep]
        r = float(np.corrcoef(x, y)[0, 1])
        fig, ax = plt.subplots(figsize=(5, 4.5))
        ax.scatter(x, y, s=18)
        for nd, a, b in zip(nodes, x, y):
            ax.annotate(str(nd), (a, b), fontsize=7, xytext=(2, 2), textcoords="offset points")
        ax.set_xlabel("VIF estimate of the loss change")
        ax.set_ylabel("brute-force LOO loss change")
        ax.set_title(f"pair ({u}, {w}): Pearson {r:.3f}")
        fig.savefig(OUT / f"karate_vif_vs_loo_{u}_{w}.png", dpi=120, bbox_inches="tight")
        plt.close(fig)

        fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
        for ax, vals, name in ((axes[0], est[:, k], "VIF"), (axes[1], loo[:, k], "LOO")):
            c = np.where(keep, vals, np.nan)
            lim = np.nanmax(np.abs(c))
            nx.draw_networkx_edges(G, pos, ax=ax, alpha=0.3)
            sc = nx.draw_networkx_nodes(G, pos, ax=ax, node_color=np.nan_to_num(c),
                                        cmap="coolwarm", vmin=-lim, vmax=lim, node_size=220)
            nx.draw_networkx_nodes(G, pos, nodelist=[int(u), int(w)], ax=ax,
                                   node_color="#64e864", node_size=260)
            nx.draw_networkx_labels(G, pos, ax=ax, font_size=7)
            fig.colorbar(sc, ax=ax, shrink=0.8)
            ax.set_title(f"{name} on ({u},{w})")
            ax.axis("off")
        fig.savefig(OUT / f"karate_heatmap_{u}_{w}.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        top = lambda a: ", ".join(str(nodes[i]) for i in np.argsort(-a)[:3])  # noqa: E731
        bot = lambda a: ", ".join(str(nodes[i]) for i in np.argsort(a)[:3])  # noqa: E731
        rows.append([f"({u}, {w})", f"{r:.3f}", top(x), top(y), bot(x), bot(y),
                     nx.shortest_path(G, int(u), int(w))])
    md.append(f"# Karate figures (seed {args.seed})\n")
    md.append(markdown_table(["pair", "Pearson VIF vs LOO (32 nodes)", "top 3 by VIF",
                              "top 3 by LOO", "bottom 3 by VIF", "bottom 3 by LOO",
                              "a shortest path"], rows))
    md.append("\nPNG: karate_spring.png, karate_vif_vs_loo_{12_10,15_13}.png, "
              "karate_heatmap_{12_10,15_13}.png (paper_appendix/out/).")
    md.append(f"\nWall time {time.perf_counter() - t0:.1f} s.\n")
    write_result("karate_figures.md", "\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

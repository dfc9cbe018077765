"""Issue 3, item 4: the paper's Table 3 (case study 1) on METABRIC.

    python paper_appendix/table3_case_study.py [--tests 0 1]

For two test patients (default: the first two rows of the paper's test split), the five
training patients whose removal increases the test patient's relative risk
``exp(theta' x)`` the most, by VIF (``ci.influence(fit, method="vif",
target=RelativeRisk(x))``), with the paper's columns: cosine similarity of the (preprocessed)
features with the test patient, observed time, event; beside them the exact
leave-one-out change and the rank of the same patient by exact refits.
Writes paper_appendix/out/table3_case_study.md.
"""
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from _common import data_path, markdown_table, write_result

import coxinfluence as ci
from coxinfluence.datasets import paper_split
from coxinfluence.targets import RelativeRisk


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, nargs=2, default=[0, 1],
                    help="positions in the test split (default 0 1)")
    args = ap.parse_args(argv)
    split = paper_split("metabric", path=data_path())
    train = split.train
    X = train[split.covariates]
    fit = ci.fit_cox(X, train["duration"], train["event"])
    tests = split.test.iloc[args.tests][split.covariates]
    target = RelativeRisk(tests)
    vif = ci.influence(fit, method="vif", target=target)
    exact = vif.exact(progress=False)
    corr = vif.correlation(exact)
    out = ["# Table 3 on METABRIC: top-5 training patients by VIF for two test patients\n",
           f"Training n = {fit.n}; target: relative risk exp(theta' x) of the test patient; "
           "ranked by the increase of the relative risk when the training patient is removed "
           "(VIF, chain rule). Exact: refit without the patient.\n"]
    Xa = X.to_numpy()
    for k, (label, x) in enumerate(zip(tests.index, tests.to_numpy())):
        col = vif.loo_change.columns[k]
        v = vif.loo_change[col]
        ex = exact.loo_change[col]
        order = np.argsort(-v.to_numpy(), kind="stable")[:5]
        exact_rank = pd.Series(np.argsort(np.argsort(-ex.to_numpy(), kind="stable")) + 1,
                               index=ex.index)
        cos = Xa @ x / (np.linalg.norm(Xa, axis=1) * np.linalg.norm(x))
        rows = []
        for r, i in enumerate(order, start=1):
            pid = v.index[i]
            rows.append([r, pid, f"{cos[i]:.2f}", f"{train['duration'].iloc[i]:.2f}",
                         bool(train["event"].iloc[i]), f"{v.iloc[i]:.5g}", f"{ex.iloc[i]:.5g}",
                         int(exact_rank[pid])])
        rr = float(np.exp(x @ fit.coef))
        out.append(f"\n## Test sample {k} (row {label} of METABRIC; relative risk {rr:.4g}; "
                   f"correlation of VIF and exact over all training patients {corr[col]:.6f})\n")
        out.append(markdown_table(["rank", "training patient", "feature similarity",
                                   "observed time", "event", "RR change (VIF)",
                                   "RR change (exact)", "rank by exact"], rows))
    write_result("table3_case_study.md", "\n".join(out) + "\n")


if __name__ == "__main__":
    main()

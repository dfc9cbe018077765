"""The one Newton solver against the code before it (issue 45 item 4), side by side.

Every family's fit and refits now go through ``coxinfluence.numerics.newton.newton``
(line search, Levenberg damping, Hessian updates, finishing steps, a secant start). This
script times each family's fit and its exact refits of every unit (``ci.influence(...,
method="exact")``) with two checkouts of the package in the same run: this one and
``--against DIR`` (e.g. a ``git worktree`` of the commit before the change), each case
in a fresh process per checkout, the two interleaved ``--reps`` times (median); and
prints the time ratio this / other and the largest difference between their changes
(relative to the largest change), so "as fast and the same numbers" is measured, not
assumed.

    git worktree add /tmp/before <commit>
    python paper_appendix/bench_solver.py --against /tmp/before [--reps 5]

Not a step of ``run_all.py``: it needs the second checkout. Absolute times on a shared
machine are noisy; the interleaving makes the ratio fair to both.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

#: case name -> code run in a fresh process: builds ``fit``/``run`` and times ``run()``
CASES = {
    "Cox fit + exact (GBSG2, 686 patients)": """
import coxinfluence as ci
X, t, e = gbsg2()
def run():
    fit = ci.fit_cox(X, t, e)
    return ci.influence(fit, method="exact", progress=False).loo_change.to_numpy()
""",
    "AFT Weibull fit + exact (rossi, 432)": """
import coxinfluence as ci
from lifelines.datasets import load_rossi
r = load_rossi()
def run():
    fit = ci.fit_aft(r.drop(columns=["week", "arrest"]), r["week"], r["arrest"])
    return ci.influence(fit, method="exact", progress=False).loo_change.to_numpy()
""",
    "AFT log-normal fit from a far start (rossi)": """
import coxinfluence as ci
from lifelines.datasets import load_rossi
r = load_rossi()
X = r.drop(columns=["week", "arrest"])
def run():
    init = np.zeros(X.shape[1] + 2); init[-1] = 3.0
    return ci.fit_aft(X, r["week"], r["arrest"], dist="lognormal", init=init).coef
""",
    "Fine-Gray fit + exact (simulated, 600)": """
import coxinfluence as ci
X, t, status = competing_risks(3)
def run():
    fit = ci.fit_fine_gray(X, t, status, cause=1)
    return ci.influence(fit, method="exact", progress=False).loo_change.to_numpy()
""",
    "lifelines WeibullAFTFitter: resolve + exact (rossi)": """
import coxinfluence as ci
from lifelines import WeibullAFTFitter
from lifelines.datasets import load_rossi
r = load_rossi()
m = WeibullAFTFitter().fit(r, "week", "arrest")
def run():
    return ci.influence(m, r, method="exact", progress=False).loo_change.to_numpy()
""",
    "lifelines LogLogisticAFTFitter: resolve + VIF (rossi)": """
import coxinfluence as ci
from lifelines import LogLogisticAFTFitter
from lifelines.datasets import load_rossi
r = load_rossi()
m = LogLogisticAFTFitter().fit(r, "week", "arrest")
def run():
    return ci.influence(m, r, method="vif", progress=False).loo_change.to_numpy()
""",
    "scikit-survival CoxPH (ridge) + exact (WHAS500)": """
import coxinfluence as ci
from sksurv.datasets import load_whas500
from sksurv.linear_model import CoxPHSurvivalAnalysis
X, y = load_whas500()
X = X.astype(float)
m = CoxPHSurvivalAnalysis(alpha=0.1).fit(X, y)
def run():
    return ci.influence(m, X, y=y, method="exact", progress=False).loo_change.to_numpy()
""",
    "cause-specific Cox fit + exact (simulated, 600)": """
import coxinfluence as ci
X, t, status = competing_risks(4)
def run():
    fit = ci.fit_cause_specific(X, t, status)
    return ci.influence(fit, method="exact", progress=False).loo_change.to_numpy()
""",
}

PRELUDE = """
import sys, time, json
import numpy as np
import warnings
warnings.simplefilter("ignore")
def gbsg2():
    from lifelines.datasets import load_gbsg2
    d = load_gbsg2()
    X = d[["age", "tsize", "pnodes", "progrec", "estrec"]].astype(float)
    X["horTh"] = (d["horTh"] == "yes").astype(float)
    return X, d["time"].astype(float), d["cens"].astype(float)
def competing_risks(seed, n=600):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    t = np.round(rng.exponential(1 / np.exp(X @ [0.5, -0.3, 0.2])), 2) + 0.01
    status = np.where(rng.uniform(size=n) < 0.3, 0, rng.integers(1, 3, size=n))
    return X, t, status
"""

EPILOGUE = """
run()                                   # warm: imports, first-call costs
t0 = time.perf_counter()
out = run()
elapsed = time.perf_counter() - t0
np.save(sys.argv[1], np.asarray(out, dtype=np.float64))
print(json.dumps({"seconds": elapsed}))
"""


def run_case(code, tree, out_file):
    env = dict(os.environ, PYTHONPATH=str(tree), COXINFLUENCE_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", PRELUDE + code + EPILOGUE, out_file],
                          env=env, capture_output=True, text=True, cwd=str(tree))
    if proc.returncode != 0:
        raise RuntimeError(f"{tree}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"], np.load(out_file)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="another checkout of the package")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=None, help="cases whose name contains this")
    args = ap.parse_args()
    this, other = HERE.parent, Path(args.against).resolve()
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    print(f"this: {this}\nother: {other}\n{args.reps} interleaved runs per checkout, "
          "median; one BLAS/row thread (COXINFLUENCE_NUM_THREADS=1)\n")
    print("| case | this s | other s | this / other | largest difference / largest change |")
    print("|---|---|---|---|---|")
    for name, code in CASES.items():
        if args.only and args.only not in name:
            continue
        times = {"this": [], "other": []}
        outs = {}
        for _ in range(args.reps):
            for label, tree in (("this", this), ("other", other)):
                s, out = run_case(code, tree, str(tmp / f"bench_solver_{label}.npy"))
                times[label].append(s)
                outs[label] = out
        a, b = np.median(times["this"]), np.median(times["other"])
        both = np.isfinite(outs["this"]) & np.isfinite(outs["other"])
        same_nan = bool((np.isnan(outs["this"]) == np.isnan(outs["other"])).all())
        scale = max(float(np.abs(outs["other"][both]).max()), 1e-300) if both.any() else 1.0
        diff = float(np.abs(outs["this"][both] - outs["other"][both]).max()) / scale
        print(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.3f} | {diff:.1e}"
              f"{'' if same_nan else ' (NaN pattern differs)'} |", flush=True)


if __name__ == "__main__":
    main()

"""Issue 38, item 3: data valuation, which training patients make test performance better
or worse, and how fast we know it.

    python paper_appendix/bench_data_valuation.py [--quick] [metabric] [support] [gbsg2]

For each data set (METABRIC and SUPPORT: the paper's train / validation / test split;
GBSG2: a random 60/20/20 split, seed 0) a Cox model is fitted on the training part and
every training patient's effect on the integrated Brier score (IBS, over a grid of 8
times: the 10%..80% quantiles of the validation and test event times) and on Harrell's C
is computed two ways:

- first order: the VIF's coefficient change, the chain rule through the survival
  prediction and the baseline hazard's data effect (IBS); for C the smooth surrogate's
  derivative (coxinfluence.evaluation.targets);
- exact: every training patient deleted, the model refitted (``ci.exact_loo``) and the
  metric rescored.

Reported: the correlation (Pearson and Spearman) of first-order and exact changes per
metric on the test set, also without the units the audit flags, of the one-step Newton
change through the same map, and of what the audit shows (``method="auto"``: exact
where refitted, which with a target is every unit up to 5,000 units (10,000 for the
C-index), else its top ones; the row says how many); the unit of largest exact change and how far
its deletion moves the coefficients; then data valuation: the training patients ranked
by their effect on the *validation* set's metric (first-order or exact), the k most
harmful removed (k = 1%, 5%, 10%: the removals that most lower the validation IBS /
raise the validation C), the model refitted and the *test* metrics measured, against
removing k at random (20 draws, mean and sd) and removing the k largest by |VIF| on the
coefficients (the Euclidean norm of the coefficient change in standard errors). Ranking
on the validation set keeps the test set out of the selection (ranking on the test set
itself would report its own noise as a gain). Times: ours (first order; exact = refits +
rescoring) against R's refit-and-rescore loop (coxph, survfit, riskRegression::Score's
IBS, survival::concordance), timed in R on a sample of training patients and scaled to
all of them.

Last, the first-order and exact changes of the test Brier score on public data (rossi,
GBSG2, and scikit-survival's WHAS500 and veterans when installed), three random 70/30
splits each: how often the first order alone tracks the exact change, and what the
audit's ``method="auto"`` shows.

Default: METABRIC, SUPPORT and GBSG2 (what RESULTS.md records). ``--quick`` (CI): GBSG2
only, k = 5% only, 5 random draws, R's loop timed on 5 patients, one split of the public
data. METABRIC or SUPPORT is
skipped with a note where the DeepSurv files are absent (``coxinfluence.datasets``; never
downloads here), R's loop where Rscript is absent.

Writes paper_appendix/out/bench_data_valuation.md.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import data_path, markdown_table, r_available, write_result
from scipy.stats import spearmanr

import coxinfluence as ci
from coxinfluence.audit.targets import target_change, target_exact
from coxinfluence.datasets import paper_split
from coxinfluence.evaluation.targets import BrierScore, Concordance, IntegratedBrierScore

KS = (0.01, 0.05, 0.10)
RANDOM_DRAWS = 20
R_SAMPLE = 20
QUICK = {"KS": (0.05,), "RANDOM_DRAWS": 5, "R_SAMPLE": 5}


def splits(names, notes):
    for name in names:
        if name in ("metabric", "support"):
            try:
                s = paper_split(name, path=data_path())
            except FileNotFoundError as exc:
                notes.append(f"{name} skipped: its data is absent ({str(exc)[:120]})")
                continue
            parts = {p: getattr(s, p).rename(columns={"duration": "time"})
                     for p in ("train", "val", "test")}
            yield name, parts, list(s.covariates)
        elif name == "gbsg2":
            g = ci.datasets.load_gbsg2()
            X = pd.DataFrame({"horTh": (g.horTh == "yes").astype(float), "age": g.age,
                              "meno": (g.menostat == "Post").astype(float),
                              "tsize": g.tsize, "grade3": (g.tgrade == "III").astype(float),
                              "pnodes": g.pnodes, "progrec": g.progrec, "estrec": g.estrec})
            X = (X - X.mean()) / X.std(ddof=0)
            X["time"], X["event"] = g.time.astype(float), g.cens
            part = np.random.default_rng(0).permutation(len(X)) % 5
            parts = {"train": X[part >= 2], "val": X[part == 0], "test": X[part == 1]}
            yield name, parts, [c for c in X.columns if c not in ("time", "event")]


def grid(parts):
    ev = [p.time[p.event == 1] for p in (parts["val"], parts["test"])]
    lo = max(e.min() for e in ev)
    hi = min(p.time.max() for p in (parts["val"], parts["test"]))
    t = np.quantile(np.concatenate(ev), np.linspace(0.1, 0.8, 8))
    return np.unique(np.clip(t, lo, hi * 0.999))


def metrics_of(part, covs, times):
    args = (part[covs], part.time, part.event)
    return {"IBS": IntegratedBrierScore(*args, times), "C": Concordance(*args)}


def fit_without(train, covs, drop):
    keep = train.drop(index=train.index[drop])
    return ci.fit_cox(keep[covs], keep.time, keep.event)


def test_metrics(fit, test_targets):
    return {k: float(t.value(fit, fit.coef[None, :])[0, 0]) for k, t in test_targets.items()}


def r_loop_seconds(train, test, covs, times, sample):
    """Median seconds per unit of R's refit-and-rescore loop (coxph without the unit,
    survfit on the test set, Score's IBS, concordance), timed inside R."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        train[covs + ["time", "event"]].to_csv(tmp / "train.csv", index=False)
        test[covs + ["time", "event"]].to_csv(tmp / "test.csv", index=False)
        script = f"""
suppressPackageStartupMessages({{library(survival); library(riskRegression)}})
train <- read.csv("{tmp / 'train.csv'}"); test <- read.csv("{tmp / 'test.csv'}")
times <- c({", ".join(f"{t:.10g}" for t in times)})
form <- Surv(time, event) ~ {" + ".join(covs)}
secs <- c()
for (i in c({", ".join(str(int(i) + 1) for i in sample)})) {{
  t0 <- proc.time()[["elapsed"]]
  fit <- coxph(form, data = train[-i, ])
  sf <- summary(survfit(fit, newdata = test), times = times, extend = TRUE)
  risk <- 1 - t(matrix(sf$surv, nrow = length(times)))
  sc <- Score(list(m = risk), formula = Surv(time, event) ~ 1, data = test, times = times,
              metrics = "brier", cens.model = "km", se.fit = FALSE, null.model = FALSE,
              summary = "ibs")
  cc <- concordance(fit, newdata = test)$concordance
  secs <- c(secs, proc.time()[["elapsed"]] - t0)
}}
write(median(secs), "{tmp / 's.txt'}")
"""
        (tmp / "s.R").write_text(script)
        subprocess.run(["Rscript", str(tmp / "s.R")], check=True, capture_output=True)
        return float((tmp / "s.txt").read_text())


def agreement_rows(fit, test_t, first, exact, loo, dtheta, se):
    """Rows of the agreement table: per metric, the first-order estimate (VIF + chain
    rule / surrogate), the one-step Newton change through the same map, and what the
    audit shows (``ci.influence(..., method="auto")``: exact where refitted), each
    against the exact change; and the first order without the
    units the audit flags. Also a note on the unit of largest exact change (``dtheta``:
    the VIF's coefficient changes, ``se``: the coefficients' standard errors)."""
    d_newton = np.asarray(ci.newton_loo(fit)) - fit.coef
    rows, note = [], ""
    for m, tg in test_t.items():
        ex = exact["test", m]
        audit = ci.influence(fit, target=tg, method="auto")
        flagged = audit.flagged.to_numpy()
        shown = audit.loo_change.to_numpy()[:, 0]
        newton = target_change(fit, d_newton, tg)[:, 0]
        label = "VIF + chain rule + data effect" if m == "IBS" else "VIF + smooth surrogate"
        for k, (what, est, keep) in enumerate((
                (f"first order ({label})", first["test", m], slice(None)),
                (f"first order, the {int(flagged.sum())} units the audit flags left out",
                 first["test", m], ~flagged),
                ("one-step Newton through the same map", newton, slice(None)),
                (f"the audit's method=\"auto\" ({int(audit.verified.sum())} of "
                 f"{len(flagged)} units refitted)", shown,
                 slice(None)))):
            rows.append([m if k == 0 else "", what,
                         f"{np.corrcoef(est[keep], ex[keep])[0, 1]:.4f}",
                         f"{spearmanr(est[keep], ex[keep]).correlation:.4f}"])
        if m == "IBS":
            top = int(np.argmax(np.abs(ex)))
            norm = {k: float(np.linalg.norm(d[top] / se)) for k, d in
                    (("exact", loo - fit.coef), ("vif", dtheta),
                     ("newton", d_newton))}
            note = (f"The training patient of largest exact IBS change (row {top}: "
                    f"{ex[top]:+.2e}; the next largest {np.sort(np.abs(ex))[-2]:.2e}) moves "
                    f"the coefficients {norm['exact']:.2f} SE when deleted (norm in "
                    f"standard errors; the VIF says {norm['vif']:.2f}, one-step Newton "
                    f"{norm['newton']:.2f}); "
                    + ("the audit flags it unstable" if audit.flags["unstable"].iloc[top]
                       else "the audit flags it" if flagged[top]
                       else "the audit does not flag it") + ".\n")
    return rows, note


def public_sets():
    """Data shipped with lifelines (rossi, GBSG2) and, when installed, scikit-survival
    (WHAS500, the veterans' lung cancer trial): dummy-coded covariates, time, event."""
    from lifelines.datasets import load_gbsg2, load_rossi

    def prep(X, t, e):
        X = pd.get_dummies(X, drop_first=True).astype(float)
        return X.loc[:, X.std() > 0], np.asarray(t, float), np.asarray(e, int)

    r, g = load_rossi(), load_gbsg2()
    out = {"rossi": prep(r.drop(columns=["week", "arrest"]), r.week, r.arrest),
           "gbsg2": prep(g.drop(columns=["time", "cens"]), g.time, g.cens)}
    try:
        from sksurv.datasets import load_veterans_lung_cancer, load_whas500
    except ImportError:
        return out
    for name, loader in (("whas500", load_whas500), ("veterans", load_veterans_lung_cancer)):
        X, y = loader()
        out[name] = prep(X, y[y.dtype.names[1]], y[y.dtype.names[0]])
    return out


def brier_agreement(seeds):
    """First-order and exact changes of the test Brier score per training patient across
    public data sets and random 70/30 splits: Pearson r at the quartiles of the test
    event times, of the first order (VIF + chain rule + data effect) and of what the
    audit shows (``method="auto"``)."""
    rows = []
    for name, (X, t, e) in public_sets().items():
        for seed in seeds:
            test = np.random.default_rng(seed).random(len(t)) < 0.3
            fit = ci.fit_cox(X[~test], t[~test], e[~test])
            times = np.quantile(t[test][e[test] == 1], [0.25, 0.5, 0.75])
            target = BrierScore(X[test], t[test], e[test], times)
            exact = target_exact(fit, np.asarray(ci.exact_loo(fit)), target)
            first = target_change(fit, -np.asarray(ci.vif(fit)) / fit.n, target)
            audit = ci.influence(fit, target=target, method="auto")
            shown = audit.loo_change.to_numpy()

            def r(est):
                return " / ".join(f"{np.corrcoef(est[:, k], exact[:, k])[0, 1]:.4f}"
                                  for k in range(len(times)))
            rows.append([name, seed, int((~test).sum()), r(first), r(shown),
                         int(audit.flagged.sum())])
    return ("## First order against exact for the test Brier score, public data\n\n"
            "Each data set split at random 70/30 (seed), a Cox model on the 70%; the "
            "Brier score of the 30% at the quartiles of their event times; Pearson r "
            "over training patients with the exact change (refit and rescore), per "
            "quartile:\n\n"
            + markdown_table(["data", "seed", "train n", "first order r (t25 / t50 / t75)",
                              "method=\"auto\" r", "units flagged"], rows) + "\n")


def run(name, parts, covs):
    train = parts["train"].reset_index(drop=True)
    test, val = parts["test"], parts["val"]
    n = len(train)
    times = grid(parts)
    t0 = time.perf_counter()
    fit = ci.fit_cox(train[covs], train.time, train.event)
    t_fit = time.perf_counter() - t0
    test_t, val_t = metrics_of(test, covs, times), metrics_of(val, covs, times)

    t0 = time.perf_counter()
    dtheta = -np.asarray(ci.vif(fit)) / n
    t_vif = time.perf_counter() - t0
    first, t_first = {}, {}
    for key, targets in (("test", test_t), ("val", val_t)):
        for m, tg in targets.items():
            t0 = time.perf_counter()
            first[key, m] = target_change(fit, dtheta, tg)[:, 0]
            t_first[key, m] = time.perf_counter() - t0
    t0 = time.perf_counter()
    loo = np.asarray(ci.exact_loo(fit, progress=False))
    t_refit = time.perf_counter() - t0
    exact, t_exact = {}, {}
    for key, targets in (("test", test_t), ("val", val_t)):
        for m, tg in targets.items():
            t0 = time.perf_counter()
            exact[key, m] = target_exact(fit, loo, tg)[:, 0]
            t_exact[key, m] = time.perf_counter() - t0

    base = test_metrics(fit, test_t)
    se = np.sqrt(np.diag(np.linalg.inv(np.asarray(fit.information))))
    agreement, flag_note = agreement_rows(fit, test_t, first, exact, loo, dtheta, se)
    vif_norm = np.linalg.norm(dtheta / se, axis=1)
    rng = np.random.default_rng(1)
    rows = []
    for k in KS:
        size = max(1, int(round(k * n)))
        picks = {"first order, IBS": np.argsort(first["val", "IBS"])[:size],
                 "exact, IBS": np.argsort(exact["val", "IBS"])[:size],
                 "first order, C": np.argsort(-first["val", "C"])[:size],
                 "exact, C": np.argsort(-exact["val", "C"])[:size],
                 "largest VIF (norm in SEs)": np.argsort(-vif_norm)[:size]}
        for label, drop in picks.items():
            got = test_metrics(fit_without(train, covs, drop), test_t)
            rows.append([f"{k:.0%} ({size})", label, f"{got['IBS'] - base['IBS']:+.5f}",
                         f"{got['C'] - base['C']:+.5f}"])
        draws = [test_metrics(fit_without(train, covs, rng.choice(n, size, replace=False)),
                              test_t) for _ in range(RANDOM_DRAWS)]
        d_ibs = np.array([d["IBS"] for d in draws]) - base["IBS"]
        d_c = np.array([d["C"] for d in draws]) - base["C"]
        rows.append([f"{k:.0%} ({size})", f"random ({RANDOM_DRAWS} draws, mean (sd))",
                     f"{d_ibs.mean():+.5f} ({d_ibs.std(ddof=1):.5f})",
                     f"{d_c.mean():+.5f} ({d_c.std(ddof=1):.5f})"])

    r_secs = None
    if r_available():
        sample = np.linspace(0, n - 1, R_SAMPLE).round().astype(int)
        r_secs = r_loop_seconds(train, test, covs, times, sample)
    ours_first = t_vif + t_first["test", "IBS"] + t_first["test", "C"]
    ours_exact = t_refit + t_exact["test", "IBS"] + t_exact["test", "C"]
    timing = [["ours, first order (VIF + chain rule + data effect; IBS and C)",
               f"{ours_first:.2f}"],
              ["ours, exact (refits + rescoring IBS and C)", f"{ours_exact:.2f}"],
              ["  of which refits (ci.exact_loo)", f"{t_refit:.2f}"]]
    if r_secs is not None:
        timing.append([f"R refit-and-rescore loop (median {r_secs:.3f} s per unit over "
                       f"{R_SAMPLE} units, times {n})", f"{r_secs * n:.1f}"])
    text = (f"## {name}: train n = {n}, validation {len(val)}, test {len(test)}, "
            f"{len(covs)} covariates\n\n"
            f"IBS over {len(times)} times ({', '.join(f'{t:.4g}' for t in times)}); test "
            f"IBS {base['IBS']:.5f}, test C (Harrell) {base['C']:.5f}; Cox fit "
            f"{t_fit:.3f} s.\n\n"
            "Correlation over training patients of the first-order and the exact change "
            "of the test metric:\n\n"
            + markdown_table(["metric", "estimate", "Pearson r with exact",
                              "Spearman r with exact"], agreement)
            + "\n\n" + flag_note
            + "\n\nChange of the test metrics after removing k training patients, ranked "
              "on the validation set (IBS: lower is better; C: higher is better):\n\n"
            + markdown_table(["k", "removed", "test IBS change", "test C change"], rows)
            + "\n\nSeconds (all training patients, one run):\n\n"
            + markdown_table(["step", "seconds"], timing) + "\n")
    print(text, flush=True)
    return text


def main(argv=None):
    global KS, RANDOM_DRAWS, R_SAMPLE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*",
                    help="metabric, support, gbsg2 (default: all three; --quick: gbsg2)")
    ap.add_argument("--quick", action="store_true",
                    help="GBSG2 only, k = 5%%, 5 random draws, R timed on 5 patients")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.names) - {"metabric", "support", "gbsg2"})
    if unknown:
        ap.error(f"unknown data set(s) {unknown}; choose from metabric, support, gbsg2")
    if args.quick:
        KS, RANDOM_DRAWS, R_SAMPLE = QUICK["KS"], QUICK["RANDOM_DRAWS"], QUICK["R_SAMPLE"]
    names = args.names or (["gbsg2"] if args.quick else ["metabric", "support", "gbsg2"])
    os.environ.setdefault("COXINFLUENCE_NO_DOWNLOAD", "1")       # the data here, or a note
    t0 = time.perf_counter()
    notes = [] if r_available() else ["Rscript not found: R's refit-and-rescore loop not "
                                      "timed."]
    body = [run(name, parts, covs) for name, parts, covs in splits(names, notes)]
    body.append(brier_agreement(range(1) if args.quick else range(3)))
    print(body[-1], flush=True)
    cmd = " ".join(["python paper_appendix/bench_data_valuation.py",
                    *(["--quick"] if args.quick else []), *args.names])
    mode = ("QUICK (GBSG2 only, k = 5% only, 5 random draws, R on 5 patients, one split "
            "of the public data): "
            if args.quick else "")
    out = ["# Data valuation: training patients' effect on test IBS and C (issue 38)\n",
           f"{mode}`{cmd}`, {time.perf_counter() - t0:.0f} s in all.\n",
           *[f"Note: {n}\n" for n in notes], *body]
    write_result("bench_data_valuation.md", "\n".join(out))


if __name__ == "__main__":
    main()

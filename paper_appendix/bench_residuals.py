"""Residuals and the proportional-hazards test (issue 37): agreement with R, lifelines'
versions measured against R, and time against R.

    python paper_appendix/bench_residuals.py [--quick] [--sizes 10000,100000,1000000]

1. **Agreement with R** on the survival package's own data (lung, veteran, pbc, heart with
   (start, stop] rows and ids, colon with strata; Efron and Breslow, weights): the R
   scripts of tests/r/ (``residuals_reference.R``: ``residuals.coxph`` of every type and
   ``cox.zph`` with four transforms; ``residuals_aft_reference.R``: ``residuals.survreg``;
   ``residuals_fine_gray_reference.R``: crr's ``res`` and ``var``) run into a temporary
   folder (the committed fixtures without R); per case the largest relative difference
   (``max |ours - R| / max |R|`` per quantity, the largest over quantities).
2. **lifelines against R.** lifelines' ``CoxPHFitter.compute_residuals`` (kinds
   martingale, deviance, score, delta_beta, schoenfeld, scaled_schoenfeld) and
   ``proportional_hazard_test`` (transforms km, rank, identity, log) on lung (Efron, no
   weights) and on pbc (weights), beside ours, each against R's: the largest relative
   difference, and for the PH test the p-values.
3. **Time against R.** Simulated Cox data (5 covariates, times rounded: ties; 3 strata)
   at the given sizes: all eight residual types plus ``cox.zph`` (km), ours in this
   process (median of 3 after a warm-up; the fit not counted) against R's inside R (one
   run, after a warm-up at the smallest size; ``coxph``'s fit not counted; a size where R
   takes more than 15 minutes is shown as such). R runs at sizes up to ``--r-max-rows``
   (default 10^5: R's time grows faster than n, about 60x from 10^4 to 10^5 rows when
   measured on 2026-11-27, so 10^6 rows would pass the 15-minute limit); ``--full`` runs
   R at every size.

Default (what RESULTS.md records): sizes 10^4, 10^5, 10^6, R up to 10^5. ``--full``: the
same with R at 10^6 too (its 15-minute limit). ``--quick``: size 10^4 only, and the
committed fixtures of tests/r/ in place of rerunning R's reference scripts.
Writes ``paper_appendix/out/bench_residuals.md``.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import markdown_table, median_time, r_available, write_result  # noqa: E402

import coxinfluence as ci  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "r_residuals"
KINDS = ("martingale", "deviance", "score", "schoenfeld", "dfbeta", "dfbetas", "scaledsch",
         "partial")
AFT_KINDS = ("response", "deviance", "working", "dfbeta", "dfbetas", "ldcase", "ldresp",
             "ldshape")


def rel(ours, ref):
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    ours = ours.reshape(ref.shape)
    return float(np.nanmax(np.abs(ours - ref)) / max(np.nanmax(np.abs(ref)), 1e-300))


def fixtures(quick=False):
    """The R outputs: run live into a temporary folder when R is there (and not
    ``quick``), else the committed fixtures."""
    if not r_available():
        return FIXTURES, "committed fixtures (R not available)"
    if quick:
        return FIXTURES, "committed fixtures of tests/r/ (--quick: R's scripts not rerun)"
    folder = Path(tempfile.mkdtemp())
    for script in ("residuals_reference.R", "residuals_aft_reference.R",
                   "residuals_fine_gray_reference.R"):
        subprocess.run(["Rscript", str(ROOT / "tests" / "r" / script), str(folder)],
                       check=True, capture_output=True)
    return folder, "R run now"


# ------------------------------------------------------------------ 1. agreement

def agreement(folder):
    import r_residuals as rr
    rows = []
    cases, data, refs = rr.load_cases(folder)
    for cs in cases:
        fit = rr.fit_case(cs, data)
        ref = refs[cs["case"]]
        res = max(rel(ci.residuals(fit, kind=k).to_numpy(), rr.matrix(ref["residuals"][k]))
                  for k in KINDS)
        if cs["id"]:
            res = max(res, *(rel(ci.residuals(fit, kind=k, collapse=True).to_numpy(),
                                 rr.matrix(v)) for k, v in ref["collapsed"].items()))
        zph = max(max(rel(ci.ph_test(fit, transform=t, terms=False).table.to_numpy(),
                          rr.matrix(z["table_cols"])),
                      rel(ci.ph_test(fit, transform=t).y.to_numpy(), rr.matrix(z["y"])))
                  for t, z in ref["zph"].items())
        what = ", ".join(w for w in ("strata", "start", "id") if cs[w])
        rows.append([cs["case"], cs["ties"], "yes" if cs["weights"] else "", what, fit.n,
                     f"{res:.1e}", f"{zph:.1e}"])
    cox = markdown_table(["case (Cox)", "ties", "weights", "design", "rows",
                          "residuals (8 types, collapsed)", "cox.zph (4 transforms)"], rows)
    rows = []
    cases, data, refs = rr.load_aft_cases(folder)
    for cs in cases:
        fit = rr.fit_aft_case(cs, data)
        ref = refs[cs["case"]]
        plain = np.asarray(ref["kind"]) != 3
        errs = []
        for k in AFT_KINDS:
            ours = ci.residuals(fit, kind=k).to_numpy()
            R = rr.matrix(ref["residuals"][k])
            ours = ours.reshape(R.shape)
            if k in rr.SCALE_KINDS:
                ours, R = ours[plain], R[plain]
            errs.append(rel(ours, R))
        rows.append([cs["case"], cs["dist"], f"{max(errs):.1e}",
                     int((~plain).sum())])
    aft = markdown_table(["case (AFT)", "dist", "8 types", "interval rows (scale "
                          "derivatives not compared: R 3.5.3's sign)"], rows)
    fg_cases = json.loads((folder / "fg_cases.json").read_text())
    rows = []
    for cs in fg_cases:
        d = pd.read_csv(folder / f"fg_data_{cs['dataset']}.csv")
        ref = json.loads((folder / f"fg_case_{cs['case']}.json").read_text())
        fit = ci.fit_fine_gray(d[cs["covariates"]], d["time"], d["status"], cause=cs["cause"],
                               cengroup=d[cs["cengroup"]] if cs["cengroup"] else None)
        D = ci.residuals(fit, kind="dfbeta").to_numpy()
        rows.append([cs["case"], f"{rel(ci.residuals(fit, kind='schoenfeld'), ref['res']):.1e}",
                     f"{rel(D.T @ D, ref['var']):.1e}"])
    fg = markdown_table(["case (Fine-Gray)", "crr's res", "crr's var = sum dfbeta dfbeta'"],
                        rows)
    return cox, aft, fg


# ------------------------------------------------------------------ 2. lifelines

LL_KINDS = {"martingale": "martingale", "deviance": "deviance", "score": "score",
            "delta_beta": "dfbeta", "schoenfeld": "schoenfeld",
            "scaled_schoenfeld": "scaledsch"}


def lifelines_vs_r(folder):
    import r_residuals as rr
    from lifelines import CoxPHFitter
    from lifelines.statistics import proportional_hazard_test
    cases, data, refs = rr.load_cases(folder)
    by = {cs["case"]: cs for cs in cases}
    rows, zrows = [], []
    for name in ("lung_efron", "pbc_w_efron"):
        cs, ref = by[name], refs[name]
        d = data[cs["dataset"]]
        cols = rr.as_list(cs["covariates"])
        df = d[cols + ["time", "status"] + (["w"] if cs["weights"] else [])]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cph = CoxPHFitter().fit(df, "time", "status",
                                    weights_col="w" if cs["weights"] else None)
        for kind, ours_kind in LL_KINDS.items():
            R = rr.matrix(ref["residuals"][ours_kind])
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    theirs = cph.compute_residuals(df, kind)
                if ours_kind in ("schoenfeld", "scaledsch"):
                    # lifelines: events only, sorted by time; R: by time, then row
                    theirs = theirs.loc[theirs.index.sort_values()]
                    order = np.lexsort((theirs.index.to_numpy(),
                                        d.loc[theirs.index, "time"].to_numpy()))
                    theirs = theirs.iloc[order][cols].to_numpy()
                else:
                    theirs = theirs.reindex(d.index)
                    theirs = (theirs[cols] if R.shape[1] > 1 else theirs[[kind]]).to_numpy()
                ll = f"{rel(theirs, R):.2g}"
            except Exception as exc:                      # noqa: BLE001
                ll = f"error: {type(exc).__name__}"
            ours = rel(ci.residuals(cph, df, kind=ours_kind).to_numpy(), R)
            rows.append([name, f"{kind} ({ours_kind})", ll, f"{ours:.1e}"])
        for tr in ("km", "rank", "identity", "log"):
            z = ref["zph"][tr]
            Rt = rr.matrix(z["table_cols"])
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = proportional_hazard_test(cph, df, time_transform=tr)
                summ = res.summary.reindex(cols)
                ll_p = summ["p"].to_numpy()
                ll = f"{rel(summ['test_statistic'].to_numpy(), Rt[:-1, 0]):.2g}"
            except Exception as exc:                      # noqa: BLE001
                ll, ll_p = f"error: {type(exc).__name__}", None
            ours = ci.ph_test(cph, df, transform=tr, terms=False).table
            zrows.append([name, tr, ll, f"{rel(ours.to_numpy(), Rt):.1e}",
                          " ".join(f"{p:.3g}" for p in Rt[:-1, 2]),
                          "" if ll_p is None else " ".join(f"{p:.3g}" for p in ll_p)])
    res = markdown_table(["data", "lifelines kind (R type)", "lifelines vs R", "ours vs R"],
                         rows)
    zph = markdown_table(["data", "transform", "lifelines' chisq vs R", "ours vs R (table)",
                          "R's p per covariate", "lifelines' p"], zrows)
    return res, zph


# ------------------------------------------------------------------ 3. time

def simulate(n, seed=0, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    strata = rng.integers(0, 3, size=n)
    t = rng.exponential(np.exp(-(X @ np.linspace(0.5, -0.3, d))))
    c = rng.exponential(1.5, size=n)
    time_ = np.ceil(np.minimum(t, c) * 200) / 200 + 0.005      # rounded: ties
    event = (t <= c).astype(float)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    frame["time"], frame["status"], frame["strata"] = time_, event, strata
    return frame


def ours_time(frame):
    cols = [c for c in frame.columns if c.startswith("x")]
    fit = ci.fit_cox(frame[cols], frame["time"], frame["status"], strata=frame["strata"])

    def run():
        for k in KINDS:
            ci.residuals(fit, kind=k)
        ci.ph_test(fit, transform="km")
    return median_time(run, repeats=3)


R_TIMEOUT = 900


def r_time(frame, warm):
    """Seconds of R's eight residual types and cox.zph (km) on ``frame``, timed inside R
    (the fit not counted; a warm-up run first when ``warm``); NaN when R takes longer
    than ``R_TIMEOUT`` seconds in all."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        frame.to_csv(tmp / "d.csv", index=False)
        script = f"""
suppressPackageStartupMessages(library(survival))
d <- read.csv("{tmp / 'd.csv'}")
fit <- coxph(Surv(time, status) ~ x0 + x1 + x2 + x3 + x4 + strata(strata), data = d)
run <- function() {{
  for (tp in c("martingale", "deviance", "score", "schoenfeld", "dfbeta", "dfbetas",
               "scaledsch", "partial")) r <- residuals(fit, type = tp)
  z <- cox.zph(fit, transform = "km")
}}
if ({'TRUE' if warm else 'FALSE'}) run()
t0 <- proc.time()[["elapsed"]]; run()
writeLines(format(proc.time()[["elapsed"]] - t0, digits = 6), "{tmp / 't.txt'}")
"""
        (tmp / "s.R").write_text(script)
        try:
            subprocess.run(["Rscript", str(tmp / "s.R")], check=True, capture_output=True,
                           timeout=R_TIMEOUT)
        except subprocess.TimeoutExpired:
            return float("nan")
        return float((tmp / "t.txt").read_text())


def timing(sizes, r_max):
    frames = [simulate(n) for n in sizes]
    ours = [ours_time(f) for f in frames]
    theirs = [r_time(f, warm=n == min(sizes)) if r_available() and n <= r_max else None
              for n, f in zip(sizes, frames)]

    def show(r, o):
        if r is None:
            return ("not run" if r_available() else "R not found", "")
        return (f"{r:.3f}", f"{r / o:.1f}") if np.isfinite(r) else (f"> {R_TIMEOUT}", "")
    rows = [[f"{n:,}", int(f["status"].sum()), f"{o:.3f}", *show(r, o)]
            for n, f, o, r in zip(sizes, frames, ours, theirs)]
    return markdown_table(["rows", "events", "ours (s)", "R (s)", "R / ours"], rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="size 10^4 only")
    parser.add_argument("--full", action="store_true", help="R at every size")
    parser.add_argument("--sizes", default=None)
    parser.add_argument("--r-max-rows", type=int, default=100_000,
                        help="R is timed at sizes up to this (default 10^5)")
    args = parser.parse_args()
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes else
             [10_000] if args.quick else [10_000, 100_000, 1_000_000])
    r_max = float("inf") if args.full else args.r_max_rows
    t0 = time.perf_counter()
    folder, source = fixtures(args.quick)
    cox, aft, fg = agreement(folder)
    ll_res, ll_zph = lifelines_vs_r(folder)
    times = timing(sizes, r_max)
    r_version = ""
    if r_available():
        r_version = subprocess.run(
            ["Rscript", "-e", 'cat(paste0(R.version$major, ".", R.version$minor), "survival", '
             'as.character(packageVersion("survival")))'],
            capture_output=True, text=True).stdout.strip()
    import lifelines
    skipped = [n for n in sizes if n > r_max]
    r_note = (f"\nR not run at {', '.join(f'{n:,}' for n in skipped)} rows (default): its "
              "time grows faster than n (the rows above), and extrapolated it passes the "
              f"{R_TIMEOUT // 60}-minute limit; `--full` runs it.\n"
              if skipped and r_available() else "")
    flags = " ".join(sys.argv[1:])
    mode = "QUICK (size 10^4 only): " if args.quick else ""
    text = f"""# Residuals and the proportional-hazards test against R (issue 37)

{mode}`python paper_appendix/bench_residuals.py{' ' + flags if flags else ''}` ({source};
R {r_version}; lifelines {lifelines.__version__}; Python {platform.python_version()};
{time.perf_counter() - t0:.0f} s). Largest relative difference `max |ours - R| / max |R|`
over each case's quantities.

## Cox: residuals.coxph (8 types) and cox.zph (km, rank, identity, log)

{cox}

## AFT: residuals.survreg (8 types)

{aft}

## Fine-Gray: crr

{fg}

## lifelines 0.30 against R (same fits; lifelines' own residuals and PH test)

{ll_res}

{ll_zph}

lifelines' `proportional_hazard_test` is the test of survival 2.x (each covariate's
scaled Schoenfeld residuals regressed on the transformed time, with the information
averaged); R's survival 3.x `cox.zph` and `ci.ph_test` compute the score test of the
time-varying coefficients with the full information.

## Time: all eight residual types plus cox.zph (km), 5 covariates, 3 strata, ties

{times}
{r_note}"""
    write_result("bench_residuals.md", text)


if __name__ == "__main__":
    main()

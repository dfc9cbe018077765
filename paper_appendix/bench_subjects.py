"""Per-subject influence on counting-process data (start, stop] with ``id=``: accuracy against
exact leave-one-subject-out refits on real time-dependent and left-truncated data, speed
against R's ``resid(fit, "dfbeta", collapse=id)``, and scaling to 10^6 rows with delayed entry.

    python paper_appendix/bench_subjects.py [--quick | --scale-only] [--repeats 5]
                                            [--direct-max-rows 200000] [--scale-runs 3]

1. Accuracy (every data set): per-subject VIF (``-vif/n_units``), Reid (``-IF_n/n_units``)
   and one-step Newton (``ci.newton_loo``) against ``ci.exact_loo`` (all of a subject's rows
   deleted, refitted to max |grad| <= 1e-10). Per coefficient j: the Pearson correlation
   over subjects of the estimated and exact change ``theta_hat_{-g} - theta_hat``, and
   ``max_g |est_gj - exact_gj| / max_g |exact_gj|``; the tables give the mean and the
   minimum of the correlation over coefficients and the largest relative error (worst
   coefficient). Times: medians of ``--repeats`` runs after a warm-up (exact LOO: median of
   3 runs); R's dfbeta is timed inside R (no fit, no I/O): the median over 3 blocks of the
   mean time of a loop of calls. The worst data set (lowest minimum VIF correlation) is
   analysed: which subjects carry the error, and how much of the worst coefficient's
   information their deletion removes (the variance of that coefficient without the
   subject, ``[H_{-g}^{-1}]_jj / [H^{-1}]_jj`` at ``theta_hat``, from ``ci.cox_hessian``).
   Data sets (R's are written by Rscript into paper_appendix/out/subjects_data/ at run time):

   - heart: lifelines' Stanford heart transplants (start, stop, event; age + year + surgery +
     transplant; id).
   - cgd: survival::cgd, Surv(tstart, tstop, status) ~ treat(rIFN-g) + sex(female) + age +
     inherit(autosomal) + propylac, strata(hos.cat), id.
   - pbcseq: survival::pbcseq. Per id, visits sorted by ``day``; visits with a missing model
     covariate are dropped first (so the previous complete visit's values carry forward);
     then row k covers (day_k, day_{k+1}] and the last row (day_last, futime], with event = 1
     on the last row when status == 2 (death; transplant (1) and censored (0) are censored).
     Zero-length intervals are dropped (counted). Model log(bili) + albumin + age + edema +
     log(protime).
   - lung (age scale): survival::lung with start = 365.25 age, stop = start + time (days of
     age; left truncation at the age at entry), event = status == 2, one row per subject;
     female + ph.ecog + pat.karno; rows with a missing covariate dropped.
   - bladder2: survival::bladder2 (recurrences, start, stop, event), rx(thiotepa) + number +
     size, id.
   - mgus2 (pcm): survival::mgus2 as in the survival "timedep" vignette: ``tmerge`` with
     death = event(futime, death) and pcm = tdc(ptime) for those with pstat == 1 (plasma-cell
     malignancy as a time-dependent covariate); age + male + hgb + creat + mspike + pcm;
     subjects with a missing covariate dropped.

2. Scale: synthetic counting-process data with delayed entry (``synthetic_counting``), about
   n rows for n = 10^4, 10^5 and 10^6 (each point in a fresh process for its peak RSS,
   ``resource.getrusage``): ``fit_cox`` + per-subject ``ci.vif`` (its delayed-entry path,
   coxinfluence/_vif_entry.py), and ``ci.reid_influence``, with a cProfile breakdown of
   ``ci.vif``; the O(n K d) direct VIF (``method="direct"``) timed up to
   ``--direct-max-rows`` rows and projected beyond (rows x event rows); the agreement of the
   fast path with the direct sum on a subsample of rows (random and largest-risk ones). Each
   point runs ``--scale-runs`` times (default 3) and the fastest run is reported, with every
   run's time and load average (the machine may be shared).

``--quick``: the heart data and the n = 10^4 and 10^6 points (no direct timing).
``--scale-only``: the scale section only (writes bench_subjects_scale.md). Writes
paper_appendix/out/bench_subjects.md and prints it.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from _common import OUT, markdown_table, median_time, r_available, write_result

import coxinfluence as ci

HERE = Path(__file__).resolve().parent
DATA = OUT / "subjects_data"
TARGET_ROWS, TARGET_S = 10**6, 15.0


# ---------------------------------------------------------------------------- data sets

@dataclass
class Dataset:
    name: str
    X: pd.DataFrame
    start: np.ndarray
    stop: np.ndarray
    event: np.ndarray
    id: np.ndarray
    strata: np.ndarray | None = None
    notes: list = field(default_factory=list)

    def fit(self):
        return ci.fit_cox(self.X, self.stop, self.event, start=self.start, id=self.id,
                          strata=self.strata)

    def without(self, subject):
        keep = self.id != subject
        return dict(X=self.X[keep], time=self.stop[keep], event=self.event[keep],
                    start=self.start[keep],
                    strata=None if self.strata is None else self.strata[keep])


R_EXPORT = r"""
suppressMessages(library(survival))
out <- commandArgs(trailingOnly = TRUE)[1]
write.csv(cgd, file.path(out, "cgd.csv"), row.names = FALSE)
write.csv(pbcseq, file.path(out, "pbcseq.csv"), row.names = FALSE)
write.csv(lung, file.path(out, "lung.csv"), row.names = FALSE)
write.csv(bladder2, file.path(out, "bladder2.csv"), row.names = FALSE)
m <- mgus2
m$pcmtime <- ifelse(m$pstat == 1, m$ptime, NA)
mg <- tmerge(m[, c("id", "age", "sex", "hgb", "creat", "mspike")], m, id = id,
             death = event(futime, death), pcm = tdc(pcmtime))
write.csv(mg, file.path(out, "mgus2_tmerge.csv"), row.names = FALSE)
cat(as.character(packageVersion("survival")), "\n")
"""


def export_r_data():
    DATA.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "export.R"
        script.write_text(R_EXPORT)
        res = subprocess.run(["Rscript", str(script), str(DATA)], capture_output=True,
                             text=True, check=True)
    return res.stdout.strip()


def _array(s, dtype=float):
    return np.asarray(s, dtype=dtype)


def load_heart():
    from lifelines.datasets import load_stanford_heart_transplants
    df = load_stanford_heart_transplants()
    cols = ["age", "year", "surgery", "transplant"]
    return Dataset("heart", df[cols].astype(float).reset_index(drop=True), _array(df.start),
                   _array(df.stop), _array(df.event), _array(df.id, int),
                   notes=["lifelines load_stanford_heart_transplants"])


def load_cgd():
    df = pd.read_csv(DATA / "cgd.csv")
    X = pd.DataFrame({"treat_rIFN": (df.treat == "rIFN-g").astype(float),
                      "female": (df.sex == "female").astype(float), "age": df.age.astype(float),
                      "inherit_autosomal": (df.inherit == "autosomal").astype(float),
                      "propylac": df.propylac.astype(float)})
    return Dataset("cgd", X, _array(df.tstart), _array(df.tstop), _array(df.status),
                   _array(df.id, int), strata=df["hos.cat"].to_numpy(),
                   notes=["strata hos.cat (4)"])


def load_pbcseq():
    df = pd.read_csv(DATA / "pbcseq.csv").sort_values(["id", "day"], kind="stable")
    cov = ["bili", "albumin", "age", "edema", "protime"]
    n_visits = len(df)
    df = df.dropna(subset=cov)
    dropped_na = n_visits - len(df)
    nxt = df.groupby("id")["day"].shift(-1)
    last = nxt.isna()
    df = df.assign(start=df.day.astype(float), stop=np.where(last, df.futime, nxt).astype(float),
                   event=(last & (df.status == 2)).astype(float))
    zero = df.stop <= df.start
    df = df[~zero]
    X = pd.DataFrame({"log_bili": np.log(df.bili), "albumin": df.albumin, "age": df.age,
                      "edema": df.edema, "log_protime": np.log(df.protime)}).astype(float)
    notes = [f"{n_visits} visits, {dropped_na} dropped for NA, {int(zero.sum())} zero-length "
             "intervals dropped; event = death (status 2) on the last interval"]
    return Dataset("pbcseq", X.reset_index(drop=True), _array(df.start), _array(df.stop),
                   _array(df.event), _array(df.id, int), notes=notes)


def load_lung_age():
    df = pd.read_csv(DATA / "lung.csv")
    n0 = len(df)
    df = df.assign(id=np.arange(1, n0 + 1)).dropna(subset=["sex", "ph.ecog", "pat.karno", "age"])
    start = 365.25 * df.age.to_numpy(float)
    X = pd.DataFrame({"female": (df.sex == 2).astype(float), "ph_ecog": df["ph.ecog"],
                      "pat_karno": df["pat.karno"]}).astype(float)
    return Dataset("lung (age scale)", X.reset_index(drop=True), start,
                   start + df.time.to_numpy(float), _array(df.status == 2), _array(df.id, int),
                   notes=[f"{n0 - len(df)} of {n0} rows dropped for NA; start = 365.25*age "
                          "(left truncation)"])


def load_bladder2():
    df = pd.read_csv(DATA / "bladder2.csv")
    X = pd.DataFrame({"thiotepa": (df.rx == 2).astype(float), "number": df.number,
                      "size": df["size"]}).astype(float)
    return Dataset("bladder2", X, _array(df.start), _array(df.stop), _array(df.event),
                   _array(df.id, int), notes=["recurrent events, 1-4 rows per subject"])


def load_mgus2():
    df = pd.read_csv(DATA / "mgus2_tmerge.csv")
    n_sub = df.id.nunique()
    bad = df.loc[df[["hgb", "creat", "mspike"]].isna().any(axis=1), "id"].unique()
    df = df[~df.id.isin(bad)]
    X = pd.DataFrame({"age": df.age, "male": (df.sex == "M").astype(float), "hgb": df.hgb,
                      "creat": df.creat, "mspike": df.mspike, "pcm": df.pcm}).astype(float)
    return Dataset("mgus2 (pcm)", X.reset_index(drop=True), _array(df.tstart), _array(df.tstop),
                   _array(df.death), _array(df.id, int),
                   notes=[f"tmerge: pcm = tdc(ptime); {len(bad)} of {n_sub} subjects dropped "
                          "for NA"])


LOADERS = [load_heart, load_cgd, load_pbcseq, load_lung_age, load_bladder2, load_mgus2]


# ------------------------------------------------------------------------------- R side

R_DFBETA = r"""
suppressMessages(library(survival))
for (path in commandArgs(trailingOnly = TRUE)) {
  d <- read.csv(path)
  xs <- setdiff(names(d), c("start", "stop", "event", "id", "stratum"))
  rhs <- paste(xs, collapse = " + ")
  if ("stratum" %in% names(d)) rhs <- paste(rhs, "+ strata(stratum)")
  f <- as.formula(paste("Surv(start, stop, event) ~", rhs))
  fit <- coxph(f, data = d, ties = "efron", control = coxph.control(eps = 1e-12, iter.max = 100))
  dfb <- resid(fit, type = "dfbeta", collapse = d$id)
  one <- system.time(resid(fit, type = "dfbeta", collapse = d$id))[["elapsed"]]
  reps <- as.integer(max(5, min(500, ceiling(0.5 / max(one, 1e-3)))))
  blocks <- replicate(3, system.time(for (k in seq_len(reps))
    resid(fit, type = "dfbeta", collapse = d$id))[["elapsed"]] / reps)
  base <- sub("\\.csv$", "", path)
  write.csv(data.frame(id = rownames(dfb), dfb), paste0(base, "_r_dfbeta.csv"), row.names = FALSE)
  writeLines(c(sprintf("%.9g", median(blocks)), reps, sprintf("%.17g", coef(fit))),
             paste0(base, "_r_time.txt"))
}
"""


def r_dfbeta_all(datasets):
    """R's resid(fit, "dfbeta", collapse=id) on each data set, one Rscript run: per name,
    (median seconds per call, calls per timed block, R's coef, dfbeta DataFrame by id)."""
    DATA.mkdir(parents=True, exist_ok=True)
    paths = {}
    for k, ds in enumerate(datasets):
        frame = pd.DataFrame({"start": ds.start, "stop": ds.stop, "event": ds.event,
                              "id": ds.id})
        if ds.strata is not None:
            frame["stratum"] = ds.strata
        frame = pd.concat([frame, ds.X.reset_index(drop=True)], axis=1)
        paths[ds.name] = DATA / f"model_{k}.csv"
        frame.to_csv(paths[ds.name], index=False, float_format="%.17g")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "dfbeta.R"
        script.write_text(R_DFBETA)
        subprocess.run(["Rscript", str(script), *map(str, paths.values())], capture_output=True,
                       text=True, check=True)
    out = {}
    for name, path in paths.items():
        base = str(path)[:-4]
        lines = Path(base + "_r_time.txt").read_text().split()
        dfb = pd.read_csv(base + "_r_dfbeta.csv").set_index("id")
        out[name] = (float(lines[0]), int(lines[1]), np.array(lines[2:], dtype=float), dfb)
    return out


# ----------------------------------------------------------------------------- accuracy

def _corr(a, b):
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or a[ok].std() == 0 or b[ok].std() == 0:
        return np.nan
    return float(np.corrcoef(a[ok], b[ok])[0, 1])


def compare(est, exact):
    """Per coefficient: correlation over subjects and max |err| / max |exact|."""
    d = exact.shape[1]
    corr = np.array([_corr(est[:, j], exact[:, j]) for j in range(d)])
    err = np.nanmax(np.abs(est - exact), axis=0) / np.abs(exact).max(axis=0)
    return corr, err


def evaluate(ds, repeats):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = ds.fit()
        U = len(np.unique(ds.id))
        vif = np.asarray(ci.vif(fit))
        reid = np.asarray(ci.reid_influence(fit))
        newton = np.asarray(ci.newton_loo(fit))
        t_ex, ex_df = [], None
        for _ in range(3):
            t0 = time.perf_counter()
            ex_df = ci.exact_loo(fit, progress=False)
            t_ex.append(time.perf_counter() - t0)
    exact = np.asarray(ex_df) - fit.coef
    est = {"VIF": -vif / U, "Reid": -reid / U, "one-step Newton": newton - fit.coef}
    acc = {k: compare(v, exact) for k, v in est.items()}
    times = {"fit_cox": median_time(ds.fit, repeats),
             "VIF": median_time(lambda: ci.vif(fit), repeats),
             "Reid": median_time(lambda: ci.reid_influence(fit), repeats),
             "one-step Newton": median_time(lambda: ci.newton_loo(fit), repeats),
             "exact LOO": float(np.median(t_ex))}
    msgs = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    return dict(ds=ds, fit=fit, U=U, ids=np.asarray(ex_df.index), est=est, exact=exact,
                reid=reid, acc=acc, times=times, warnings=msgs,
                newton_nan=int(np.isnan(newton).any(axis=1).sum()))


def variance_ratios(res):
    """(U, d): ``[H_{-g}^{-1}]_kk / [H^{-1}]_kk`` at ``theta_hat`` for every subject g and
    coefficient k, the Hessian of the data without all rows of g (``ci.cox_hessian``): how much
    of coefficient k's information the subject carries (inf where H_{-g} is singular)."""
    ds, fit = res["ds"], res["fit"]
    var = np.diag(fit.var)
    out = np.empty((len(res["ids"]), len(var)))
    for g, sid in enumerate(res["ids"]):
        try:
            out[g] = np.diag(np.linalg.inv(ci.cox_hessian(fit.coef, **ds.without(sid)))) / var
        except np.linalg.LinAlgError:
            out[g] = np.inf
    return out


def worst_analysis(res, top=3):
    """Which subjects carry the VIF's error on the worst coefficient (lowest correlation),
    which coefficient each of them moves most (in standard errors), and how much of that
    coefficient's information their deletion removes."""
    ds, fit = res["ds"], res["fit"]
    corr, _ = res["acc"]["VIF"]
    j = int(np.nanargmin(corr))
    cols = list(ds.X.columns)
    se = fit.se
    ex, vif = res["exact"], res["est"]["VIF"]
    err = vif[:, j] - ex[:, j]
    order = np.argsort(-np.abs(err))
    share1 = err[order[0]] ** 2 / (err ** 2).sum()
    share = (err[order[:top]] ** 2).sum() / (err ** 2).sum()

    def corr_without(k, method="VIF"):
        keep = np.ones(len(err), bool)
        keep[order[:k]] = False
        return _corr(res["est"][method][keep, j], ex[keep, j])
    ratios = variance_ratios(res)
    rows = []
    for g in order[:top]:
        sid = res["ids"][g]
        mask = ds.id == sid
        z = np.abs(ex[g]) / se
        k = int(np.argmax(z))
        x = ds.X[cols[k]].to_numpy()
        xg = np.unique(x[mask])
        zx = ", ".join(f"{v:.3g} ({(v - x.mean()) / x.std():+.1f} SD)" for v in xg)
        rank = int((ratios[:, k] > ratios[g, k]).sum()) + 1
        rows.append([str(sid), int(mask.sum()), int(ds.event[mask].sum()),
                     f"{ex[g, j]:.4g}", f"{vif[g, j]:.4g}", f"{res['est']['Reid'][g, j]:.4g}",
                     f"{res['est']['one-step Newton'][g, j]:.4g}", f"{abs(ex[g, j]) / se[j]:.2f}",
                     cols[k], zx, f"{ex[g, k] / se[k]:+.2f} / {vif[g, k] / se[k]:+.2f}",
                     f"{ratios[g, k]:.3f}", f"{rank} of {len(ratios)}"])
    g0 = order[0]
    r0 = rows[0]
    k0 = r0[8]
    kk = cols.index(k0)
    others = np.delete(ratios[:, kk], g0)
    x = ds.X[k0].to_numpy()
    runner_up = np.sort(np.unique(x))[-2] if x[ds.id == res["ids"][g0]].max() == x.max() \
        else None
    notes = []
    for name, est in res["est"].items():      # which subject gives each method's max rel. err
        rel = np.abs(est - ex) / np.abs(ex).max(axis=0)
        g, k = np.unravel_index(np.nanargmax(rel), rel.shape)
        notes.append(f"{name} {rel[g, k]:.3g} (subject {res['ids'][g]}, `{cols[k]}`)")
    argmax_note = "Largest relative errors on this data set: " + "; ".join(notes)
    text = (f"Worst data set (lowest minimum VIF correlation): **{ds.name}**, coefficient "
            f"`{cols[j]}` (VIF correlation {corr[j]:.4f}). The subject with the largest "
            f"|VIF - exact| on `{cols[j]}`, {r0[0]}, carries {share1:.0%} of its squared error "
            f"(the top {top}: {share:.0%}); without it the VIF correlation on `{cols[j]}` is "
            f"{corr_without(1):.4f} (without the top {top}: {corr_without(top):.4f}; one-step "
            f"Newton {corr_without(1, 'one-step Newton'):.4f}). Subject {r0[0]} has `{k0}` = "
            f"{r0[9]}"
            + (f" (the largest value; next largest {runner_up:.3g})" if runner_up is not None
               else "")
            + f". Deleting it multiplies the variance of `{k0}` by {ratios[g0, kk]:.3f}, i.e. "
            f"removes {1 - 1 / ratios[g0, kk]:.0%} of its precision (rank {r0[12]}; the other "
            f"subjects at most {others.max():.3f}, median {np.median(others):.3f}), and moves "
            f"`{k0}` by {ex[g0, kk] / se[kk]:+.2f} SE, of which the VIF predicts "
            f"{vif[g0, kk] / se[kk]:+.2f} SE (Reid {res['est']['Reid'][g0, kk] / se[kk]:+.2f}, "
            f"one-step Newton {res['est']['one-step Newton'][g0, kk] / se[kk]:+.2f})"
            + ("" if kk == j else
               f"; through the correlation of the estimates `{cols[j]}` moves by "
               f"{ex[g0, j] / se[j]:+.2f} SE (VIF {vif[g0, j] / se[j]:+.2f}, one-step Newton "
               f"{res['est']['one-step Newton'][g0, j] / se[j]:+.2f})")
            + ". VIF and Reid extrapolate "
            f"linearly with the full-data Hessian, {1 - 1 / ratios[g0, kk]:.0%} of whose "
            f"precision on `{k0}` this one subject supplies; the one-step Newton uses the "
            f"Hessian without the subject. {argmax_note}. In the table, each top subject is "
            "ranked by how much its deletion inflates the variance of the coefficient it "
            "moves most (1 = most of all subjects).")
    table = markdown_table(
        ["subject", "rows", "events", f"exact {cols[j]}", "VIF", "Reid", "Newton",
         f"|exact| / SE({cols[j]})", "coef it moves most (SE)", "its values (z)",
         "exact / VIF change (SE)", "var ratio without", "rank"], rows)
    return text, table


# -------------------------------------------------------------------------------- scale

def synthetic_counting(n_rows, d=10, seed=0):
    """About ``n_rows`` rows of counting-process data with delayed entry: each subject enters
    at an integer time in [0, 100) and has 1-4 (uniform) contiguous intervals of integer
    length 5-39; covariates are a subject baseline plus per-interval noise (time-varying,
    x ~ N(0, 1.25 I)); in each interval the event rate is 0.01 exp(x beta),
    beta ~ U(-0.5, 0.5)^d; an event time is rounded up to an integer (ties: about 200
    distinct event times) and ends the subject's follow-up. Subjects are taken in order until
    ``n_rows`` rows (cut at a subject boundary). Returns X, start, stop, event, id."""
    rng = np.random.default_rng(seed)
    S = int(n_rows / 2.5 * 1.6) + 20
    k = rng.integers(1, 5, S)
    entry = rng.integers(0, 100, S).astype(float)
    beta = rng.uniform(-0.5, 0.5, d)
    base = rng.standard_normal((S, d))
    sid = np.repeat(np.arange(S), k)
    first_row = np.repeat(np.cumsum(k) - k, k)
    j = np.arange(sid.size) - first_row
    length = rng.integers(5, 40, sid.size).astype(float)
    cum = np.cumsum(length)
    start = entry[sid] + (cum - length) - np.concatenate([[0.0], cum])[first_row]
    stop = start + length
    X = base[sid] + 0.5 * rng.standard_normal((sid.size, d))
    t_event = start + rng.exponential(1.0 / (0.01 * np.exp(X @ beta)))
    hit = np.flatnonzero(t_event < stop)
    first_hit = np.full(S, np.iinfo(np.int64).max)
    np.minimum.at(first_hit, sid[hit], j[hit])
    event = (j == first_hit[sid]).astype(float)
    stop = np.where(event > 0, np.maximum(np.ceil(t_event), start + 1.0), stop)
    keep = j <= first_hit[sid]
    X, start, stop, event, sid = X[keep], start[keep], stop[keep], event[keep], sid[keep]
    cut = np.searchsorted(sid, sid[min(n_rows, sid.size) - 1], side="right")
    return X[:cut], start[:cut], stop[:cut], event[:cut], sid[:cut]


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


PROFILED = ("_vif_delta_series", "part1_entry", "choose_classes", "series", "direct_pairs",
            "_own_group_change_fast", "state", "deletion_term_ranges", "collapse",
            "shares_risk_sets", "paper_scale", "by_deletion")


def agreement_with_direct(fit, n_random=1000, n_extreme=200, seed=0):
    """Per-row VIF contributions ``-(H/n)^{-1} (grad L - grad L_{-i})`` of the fast path
    (``_vif_delta_series``, what ``ci.vif`` uses here) against the O(n K d) direct sum
    (``_vif_delta_direct(rows=...)``) on a subsample: ``n_random`` random rows and the
    ``n_extreme`` rows with the largest risk ``u_i / min den`` of their range (the hardest).
    Returns (rows checked, max over coefficients of max_i |fast - direct| / max_i |direct|,
    the largest elementwise |fast - direct| / |direct| where |direct| > 1e-3 max)."""
    from coxinfluence.influence_functions.vif import _vif_delta_direct, _vif_delta_series
    from coxinfluence.influence_functions.vif_entry import _RangeTerms
    from coxinfluence.likelihood.risk_sets import RiskSets
    data = fit.data
    state = RiskSets(data).state(fit.coef)
    terms = _RangeTerms(data, state)
    live = terms.rows
    rng = np.random.default_rng(seed)
    share = state.risk[live] / terms.mr[live]          # largest u_i / den_k of the range
    rows = np.unique(np.r_[rng.choice(live, min(n_random, live.size), replace=False),
                           live[np.argsort(-share)[:n_extreme]]])
    fast = _vif_delta_series(data, state)[rows]
    ref = _vif_delta_direct(data, state, rows=rows)
    to_vif = np.linalg.inv(fit.information)
    fast, ref = fast @ to_vif, ref @ to_vif            # H symmetric: rows of delta H^-1
    col = float((np.abs(fast - ref).max(axis=0) / np.abs(ref).max(axis=0)).max())
    big = np.abs(ref) > 1e-3 * np.abs(ref).max(axis=0)
    elem = float((np.abs(fast - ref)[big] / np.abs(ref)[big]).max())
    return int(rows.size), col, elem


def scale_child(n, direct_max_rows, profile_below_s=60.0):
    """One scale point in this (fresh) process; returns a dict (printed as JSON)."""
    Xw, sw, tw, ew, iw = synthetic_counting(2000, seed=1)   # warm-up: imports, caches
    fw = ci.fit_cox(Xw, tw, ew, start=sw, id=iw)
    ci.vif(fw), ci.reid_influence(fw)
    X, start, stop, event, sid = synthetic_counting(n)
    out = {"rows": int(len(stop)), "subjects": int(len(np.unique(sid))),
           "events": int(event.sum()), "event_times": int(len(np.unique(stop[event > 0]))),
           "rss_data_mb": _rss_mb()}
    t0 = time.perf_counter()
    fit = ci.fit_cox(X, stop, event, start=start, id=sid)
    out["fit_s"] = time.perf_counter() - t0
    out["rss_fit_mb"] = _rss_mb()
    t0 = time.perf_counter()
    ci.vif(fit)
    out["vif_s"] = time.perf_counter() - t0
    out["rss_vif_mb"] = _rss_mb()
    if out["vif_s"] < profile_below_s:
        prof = cProfile.Profile()
        prof.enable()
        ci.vif(fit)
        prof.disable()
        st = pstats.Stats(prof).stats
        total = max(v[3] for (f, _, name), v in st.items() if name == "vif")
        parts = {}
        for (f, _, name), v in st.items():
            if name in PROFILED and "coxinfluence" in f:
                parts[name] = parts.get(name, 0.0) + v[3]
        out["vif_profile"] = {"total": total, **parts}
    reps = 3 if n <= 10**5 else 1
    out["reid_s"] = median_time(lambda: ci.reid_influence(fit), reps, warm=n <= 10**5)
    out["rss_end_mb"] = _rss_mb()
    out["load"] = os.getloadavg()[0]
    out["check_rows"], out["check_col"], out["check_elem"] = agreement_with_direct(fit)
    if len(stop) <= direct_max_rows:
        t0 = time.perf_counter()
        ci.vif(fit, method="direct")
        out["direct_s"] = time.perf_counter() - t0
    return out


def run_scale_point(n, direct_max_rows):
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child-scale", str(n),
                          "--direct-max-rows", str(direct_max_rows)], cwd=HERE,
                         capture_output=True, text=True)
    if res.returncode != 0:
        return {"rows": n, "error": f"exit {res.returncode}: "
                + " ".join(res.stderr.strip().splitlines()[-3:])}
    return json.loads(res.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------- main

def fmt_s(x):
    return "n/a" if x is None or not np.isfinite(x) else (f"{x:.2e}" if x < 1e-3 else f"{x:.4f}"
                                                           if x < 10 else f"{x:.1f}")


def accuracy_section(datasets, repeats):
    parts = []
    r_out = {}
    if r_available():
        r_out = r_dfbeta_all(datasets)
    results = [evaluate(ds, repeats) for ds in datasets]
    rows = []
    for r in results:
        ds = r["ds"]
        rows.append([ds.name, len(ds.stop), r["U"], int(ds.event.sum()), ds.X.shape[1],
                     ", ".join(ds.X.columns), "; ".join(ds.notes)])
    parts.append("## Data sets\n")
    parts.append(markdown_table(["data", "rows", "subjects", "events", "d", "covariates",
                                 "notes"], rows))
    rows = []
    for r in results:
        for k, (corr, err) in r["acc"].items():
            rows.append([r["ds"].name, k, f"{np.nanmean(corr):.5f}", f"{np.nanmin(corr):.5f}",
                         r["ds"].X.columns[int(np.nanargmin(corr))], f"{err.max():.3g}",
                         r["ds"].X.columns[int(np.argmax(err))]])
    parts.append("\n## Accuracy per subject against exact leave-one-subject-out\n\n"
                 "Change of each coefficient when all of a subject's rows are deleted: VIF "
                 "`-vif/n_units`, Reid `-IF_n/n_units` (= -R dfbeta), one-step Newton "
                 "(`newton_loo - coef`) against `exact_loo - coef`. corr: Pearson over "
                 "subjects per coefficient, mean and min over coefficients; max rel. err: "
                 "max over coefficients of max_g |est - exact| / max_g |exact|.\n")
    parts.append(markdown_table(["data", "method", "corr mean", "corr min", "min at",
                                 "max rel. err", "at"], rows))
    rows, checks = [], []
    for r in results:
        t = r["times"]
        name = r["ds"].name
        r_t = r_out.get(name, (np.nan,))[0]

        def ratio(x, r_t=r_t):
            return f"{x / r_t:.2f}" if np.isfinite(r_t) else "n/a"
        rows.append([name, fmt_s(t["fit_cox"]), fmt_s(t["VIF"]), fmt_s(t["Reid"]),
                     fmt_s(t["one-step Newton"]), fmt_s(t["exact LOO"]), fmt_s(r_t),
                     ratio(t["VIF"]), ratio(t["Reid"]), ratio(t["one-step Newton"]),
                     ratio(t["exact LOO"])])
        if name in r_out:
            _, reps, r_coef, dfb = r_out[name]
            ours = pd.DataFrame(r["reid"] / r["U"], index=r["ids"])
            dfb = dfb.reindex(ours.index)
            err = np.abs(ours.to_numpy() - dfb.to_numpy()).max() / np.abs(dfb.to_numpy()).max()
            checks.append([name, f"{np.abs(r_coef - r['fit'].coef).max():.2e}", f"{err:.2e}",
                           reps])
    parts.append(f"\n## Time (seconds; ours: median of {repeats} runs after a warm-up, exact "
                 "LOO median of 3; R: resid(fit, 'dfbeta', collapse=id) timed in R, median of "
                 "3 blocks of the mean of a loop of calls, fit excluded)\n")
    parts.append(markdown_table(["data", "fit_cox", "VIF", "Reid", "Newton", "exact LOO",
                                 "R dfbeta", "VIF/R", "Reid/R", "Newton/R", "exact/R"], rows))
    if checks:
        parts.append("\nAgreement with R on the same data (R coxph, Efron, eps 1e-12): max "
                     "|coef - R coef| and max |IF_n/n_units - R dfbeta(collapse=id)| / max "
                     "|R dfbeta|.\n")
        parts.append(markdown_table(["data", "max coef diff", "dfbeta rel. diff",
                                     "R calls per timed block"], checks))
    elif not r_available():
        parts.append("\nRscript not found: no R timings.\n")
    notes = [f"- {r['ds'].name}: {w}" for r in results for w in r["warnings"]]
    notes += [f"- {r['ds'].name}: one-step Newton undefined (NaN) for {r['newton_nan']} "
              "subjects" for r in results if r["newton_nan"]]
    if notes:
        parts.append("\nWarnings raised while fitting and computing influence:\n\n"
                     + "\n".join(notes) + "\n")
    worst = min(results, key=lambda r: np.nanmin(r["acc"]["VIF"][0]))
    text, table = worst_analysis(worst)
    parts.append("\n## Worst data set\n\n" + text + "\n")
    parts.append(table)
    return parts


def best_of_runs(n, direct_max_rows, runs):
    """The scale point n measured ``runs`` times, each in a fresh process (the direct VIF in
    the first only): the run with the smallest fit + VIF time (the least disturbed on a
    shared machine), with every run's fit + VIF time and load average attached."""
    results = []
    for k in range(runs):
        print(f"[bench_subjects] scale point n = {n}, run {k + 1} of {runs}", flush=True)
        results.append(run_scale_point(n, direct_max_rows if k == 0 else 0))
        if "error" in results[-1]:
            return results[-1]
    best = dict(min(results, key=lambda p: p["fit_s"] + p["vif_s"]))
    if "direct_s" in results[0]:
        best["direct_s"] = results[0]["direct_s"]
    best["runs"] = [(p["fit_s"] + p["vif_s"], p["load"]) for p in results]
    return best


def scale_section(sizes, direct_max_rows, runs=1):
    parts = ["\n## Scale: synthetic counting-process data with delayed entry (d = 10)\n\n"
             "Each size in a fresh process, after a warm-up on 2,000 rows. fit_cox and the "
             "first per-subject ci.vif call on the fit timed once (`vif s`; `vif 2nd call` is "
             "the cProfile-d second call); Reid median of 3 (1 at 10^6); peak RSS = ru_maxrss "
             "after fit + VIF. With delayed entry `ci.vif` (method 'auto' = 'series') sums "
             "each row's risk-set range by thresholds on the denominators, direct terms below "
             "and a series in u_i/den_k with suffix sums above (coxinfluence/_vif_entry.py, "
             "O(n P d + C K P d)); `direct vif s` is the O(n K d) reference "
             f"(`method='direct'`), measured up to {direct_max_rows} rows and projected "
             "beyond by rows x event rows from the largest measured size. Agreement: "
             "per-row VIF contributions of the fast path against the direct sum on a "
             "subsample (1,000 random rows and the 200 with the largest u_i / min den of "
             "their range), max over coefficients of max_i |fast - direct| / max_i |direct| "
             "(col.), and the largest elementwise relative difference where |direct| > 1e-3 "
             "of its column's max (elem.).\n"]
    if runs > 1:
        parts.append(f"Each size is run {runs} times (fresh processes); the table shows the "
                     "run with the smallest fit + VIF time, the last column every run's fit + "
                     "VIF seconds and the 1-minute load average at its end (the machine is "
                     "shared).\n")
    points = []
    for n in sizes:
        p = best_of_runs(n, direct_max_rows, runs)
        p["target_rows"] = n
        points.append(p)
    measured = [p for p in points if "direct_s" in p]
    rows = []
    for p in points:
        if "error" in p:
            rows.append([p["target_rows"], "failed: " + p["error"]] + [""] * 14)
            continue
        second = p.get("vif_profile", {}).get("total")
        if "direct_s" in p:
            direct = fmt_s(p["direct_s"])
        elif measured:
            b = measured[-1]
            proj = b["direct_s"] * (p["rows"] * p["events"]) / (b["rows"] * b["events"])
            direct = f"~{fmt_s(proj)} (projected)"
        else:
            direct = "n/a"
        rows.append([p["rows"], p["subjects"], p["events"], p["event_times"],
                     fmt_s(p["fit_s"]), fmt_s(p["vif_s"]), fmt_s(second),
                     fmt_s(p["fit_s"] + p["vif_s"]), direct, fmt_s(p["reid_s"]),
                     fmt_s(p["fit_s"] + p["reid_s"]), f"{p['rss_vif_mb']:.0f}",
                     f"{p['check_col']:.1e}", f"{p['check_elem']:.1e}", p["check_rows"],
                     "; ".join(f"{t:.1f} s (load {ld:.1f})" for t, ld in p["runs"])])
    parts.append(markdown_table(["rows", "subjects", "events", "distinct event times",
                                 "fit_cox s", "vif s", "vif 2nd call s", "fit + vif s",
                                 "direct vif s", "reid s", "fit + reid s", "peak RSS MB",
                                 "agreement col.", "agreement elem.", "rows checked",
                                 "fit + vif, all runs"], rows))
    prof_keys = ("part1_entry", "choose_classes", "series", "direct_pairs",
                 "_own_group_change_fast", "state", "deletion_term_ranges", "collapse",
                 "shares_risk_sets", "paper_scale")
    prof_rows = []
    for p in points:
        prof = p.get("vif_profile")
        if prof:
            tot = prof["total"]
            prof_rows.append([p["rows"], fmt_s(tot)] + [
                f"{prof[k]:.3g} ({prof[k] / tot:.0%})" if k in prof else "-" for k in prof_keys])
    if prof_rows:
        parts.append("\nWhere `ci.vif` spends its time (cProfile cumulative seconds of the "
                     "second call): `part1_entry` is the risk-set-range sum (its pieces: "
                     "`choose_classes` the cost count, `series` the suffix sums and gathers, "
                     "`direct_pairs`), `_own_group_change_fast` the own-tie-group term, "
                     "`state` the risk-set sums at the fit, `deletion_term_ranges` the rows' "
                     "term ranges, `collapse` and `shares_risk_sets` the per-subject "
                     "bookkeeping (coxinfluence/units.py):\n")
        parts.append(markdown_table(["rows", "vif total", *prof_keys], prof_rows))
    big = [p for p in points if p.get("target_rows") == TARGET_ROWS and "fit_s" in p]
    if big:
        tot = big[0]["fit_s"] + big[0]["vif_s"]
        verdict = (f"**{'met' if tot <= TARGET_S else 'not met'}**: fit_cox + per-subject "
                   f"ci.vif at {big[0]['rows']} rows took {tot:.1f} s (measured, "
                   f"{'best of ' + str(runs) + ' runs, ' if runs > 1 else ''}fit "
                   f"{big[0]['fit_s']:.1f} s + VIF {big[0]['vif_s']:.1f} s; fit + Reid "
                   f"{big[0]['fit_s'] + big[0]['reid_s']:.1f} s)")
    else:
        last = [p for p in points if "vif_s" in p]
        verdict = "not measured at 10^6 rows in this run" + (
            f"; fit + VIF at {last[-1]['rows']} rows: "
            f"{last[-1]['fit_s'] + last[-1]['vif_s']:.2f} s" if last else "")
    parts.append(f"\nTarget (10^6 rows, fit_cox + per-subject VIF in at most {TARGET_S:.0f} s): "
                 f"{verdict}. The machine is shared (load average at the end of the run: "
                 f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs).\n")
    return parts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="heart data and n = 10^4, 10^6 only (no direct reference timing)")
    ap.add_argument("--scale-only", action="store_true",
                    help="only the scale section (n = 10^4, 10^5, 10^6)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--direct-max-rows", type=int, default=2 * 10**5,
                    help="time the O(n K d) direct VIF up to this many rows (project beyond)")
    ap.add_argument("--scale-runs", type=int, default=3,
                    help="runs per scale point (fresh processes); the fastest is reported")
    ap.add_argument("--child-scale", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_scale is not None:
        print(json.dumps(scale_child(args.child_scale, args.direct_max_rows)))
        return
    t_start = time.perf_counter()
    r_version = ""
    if args.quick:
        loaders, sizes, args.direct_max_rows = [load_heart], [10**4, 10**6], 0
    else:
        loaders, sizes = LOADERS, [10**4, 10**5, 10**6]
        if args.scale_only:
            loaders = []
        elif r_available():
            r_version = export_r_data()
        else:
            loaders = [load_heart]
    datasets = [f() for f in loaders]
    parts = [f"# Per-subject influence on counting-process data{' (QUICK)' if args.quick else ''}"
             f"\n\nMachine: {platform.processor() or platform.machine()}, {ci.__name__} "
             f"{ci.__version__}{f', R survival {r_version}' if r_version else ''}; "
             "estimated change of a coefficient when all rows of one subject are deleted.\n"]
    if not args.quick and not args.scale_only and not r_available():
        parts.append("Rscript not found: R data sets and R timings skipped.\n")
    if datasets:
        parts += accuracy_section(datasets, args.repeats)
    parts += scale_section(sizes, args.direct_max_rows, args.scale_runs)
    parts.append(f"\nTotal wall time: {time.perf_counter() - t_start:.1f} s\n")
    write_result("bench_subjects_scale.md" if args.scale_only else "bench_subjects.md",
                 "\n".join(parts))


if __name__ == "__main__":
    main()

"""Issue 47: the competing-risks families at cohort scale, fit + VIF against R in the same
run: cause-specific Cox models (riskRegression's ``CSC``) and Markov multi-state Cox models
(survival's ``coxph(Surv(tstart, tstop, state) ~ ., id = id)`` + ``survfit``).

    python paper_appendix/bench_cause_specific.py [--quick] [--sizes 10000,100000,1000000]
        [--r-timeout 600] [--mem-gib 14] [--change-max-n 100000] [--audit-max-n 10000]
        [--tie-free-max-n 10000]

Simulated data, seed = n, 5 covariates, ties through rounded times:

- **cause-specific**: X ~ N(0, 1)^5, cause 1 exponential with rate exp(x'b1), cause 2
  with rate exp(x'b2) / 2, censoring Exp(mean 1.5), times rounded to 3 decimals (about
  1,700 distinct times at 10^4 subjects, 2,800 at 10^5); absolute risk of cause 1 for 3
  new patients at t = 0.25, 0.5, 1.
- **multi-state** (illness-death, as ``coxinfluence.models.multistate.simulate_illness_
  death`` but vectorised and with 5 covariates): healthy -> ill -> dead and healthy ->
  dead, entry at integer times 0..4 (delayed entry), integer transition times (ties),
  censoring 5..30 after entry; one row per subject and state visited (about 1.5 rows per
  subject); state probabilities of 3 new patients at t = 5, 10, 20.

Measured in the same run, each side in a fresh process of its own (peak memory = that
process's peak resident set: ``ru_maxrss`` for ours, ``VmHWM`` for R; imports, data and
every step below included):

- **ours, cause-specific**: ``fit = ci.fit_cause_specific(X, time, status)``,
  ``ci.influence(fit, method="vif")`` (the VIF of every cause's coefficients, a subject
  deleted from every cause at once), ``fit.predict_absolute_risk(X_new, times, cause=1)``
  (medians of 3 after a warm-up on 2,000 subjects; one run at 10^6); then, up to
  ``--change-max-n`` subjects, the first-order (Reid) change of the target
  ``ci.targets.AbsoluteRisk(X_new, times, cause=1)`` by deleting each subject: the
  audit's Reid change of the coefficients (``CauseSpecificAudit(fit).change("reid")``)
  through the target's Jacobian plus its baselines' first-order change
  (``target.baseline_influence(fit)``), as tests/test_cause_specific_audit.py compares
  it with ``absRisk.iid``; and up to ``--audit-max-n`` the audit itself,
  ``ci.influence(fit, method="vif", target=...)`` (the VIF through the Jacobian plus
  each subject's literal deletion from the baselines: n deletions of n rows).
- **R, cause-specific**: ``CSC(Hist(time, status) ~ x1 + ... + x5)``, ``predict(csc,
  newdata, times, cause = 1)`` and ``predict(..., iid = TRUE, se = TRUE)`` (tried at
  every size), timed inside R (``proc.time``; reading the data not counted), one run.
- **ours, multi-state**: ``fit = ci.fit_multistate(X, start, stop, state, id)``,
  ``ci.influence(fit, method="vif")`` (subjects), ``fit.predict_state_probabilities
  (X_new, times)`` (medians as above); up to ``--audit-max-n`` subjects the audit of
  ``ci.targets.StateProbability(X_new, times)`` (``method="vif"``; each subject's literal
  deletion from the baselines).
- **R, multi-state**: ``coxph(Surv(tstart, tstop, state) ~ x1 + ... + x5, id = id)`` and
  ``summary(survfit(fit, newdata), times)$pstate`` (survfit's default ``se.fit = TRUE``:
  its influence-based standard errors included), one run.

Agreement: the largest absolute difference of our coefficients, absolute risks, state
probabilities from R's, and of our Reid change of the absolute risk from
``-absRisk.iid`` (absolute, relative to ``max |absRisk.iid|``, and the smallest
correlation over the patient-time columns). With tied times riskRegression's iid of the
Cox baseline is not the estimator's derivative (``coxinfluence.models.
cause_specific_influence``), so up to ``--tie-free-max-n`` subjects two checks say which
is: on the 3 subjects where they differ most, both against the derivative in the
subject's case weight by central differences of refits; and the whole comparison again
on the same subjects with the times jittered apart (no ties), ours and R rerun.

Every process (ours and R's) runs under an address-space limit of ``--mem-gib`` GiB
(``RLIMIT_AS``; the machine has 24 GiB, shared), R's also under ``--r-timeout`` seconds:
a step that cannot finish within them is reported as not run, with what was measured.
Default (what RESULTS.md records): 10^4, 10^5, 10^6 subjects. ``--quick`` (CI): 10^4
only. Writes ``paper_appendix/out/bench_cause_specific.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import markdown_table, r_available, write_result

import coxinfluence as ci

GIB = 2.0 ** 30
COLS = [f"x{j}" for j in range(1, 6)]
CS_TIMES = [0.25, 0.5, 1.0]
MS_TIMES = [5.0, 10.0, 20.0]
B1 = np.array([0.5, -0.3, 0.2, 0.0, 0.1])
B2 = np.array([-0.2, 0.4, 0.0, 0.3, -0.1])
B12 = np.array([0.5, -0.3, 0.2, 0.0, 0.1])
B13 = np.array([0.0, 0.4, -0.2, 0.3, 0.0])
B23 = np.array([0.3, 0.0, 0.2, -0.4, 0.1])
NEW = np.array([[0.0] * 5, [0.5] * 5, [-0.5, 0.5, -0.5, 0.5, -0.5]])


def simulate_cause_specific(n, seed):
    """``(X (n, 5), time, status)``: two causes, censoring, times rounded (ties)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    t1 = rng.exponential(np.exp(-X @ B1))
    t2 = rng.exponential(2.0 * np.exp(-X @ B2))
    c = rng.exponential(1.5, n)
    t = np.minimum(np.minimum(t1, t2), c)
    status = np.select([t1 == t, t2 == t], [1, 2], 0)
    return X, np.round(t, 3) + 0.001, status


def simulate_multistate(n, seed):
    """``(X, start, stop, state, id)`` of an illness-death process in counting-process form
    (module docstring), rows sorted by subject and start."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 5)), 3)
    entry = rng.integers(0, 5, n).astype(np.float64)
    t12 = entry + np.ceil(rng.exponential(1.0 / (0.06 * np.exp(X @ B12))))
    t13 = entry + np.ceil(rng.exponential(1.0 / (0.03 * np.exp(X @ B13))))
    cens = entry + rng.integers(5, 31, n)
    t23 = t12 + np.ceil(rng.exponential(1.0 / (0.08 * np.exp(X @ B23))))
    ill = (t12 <= t13) & (t12 < cens)
    dead = ~ill & (t13 < cens)
    stop1 = np.where(ill, t12, np.where(dead, t13, cens))
    state1 = np.where(ill, 1, np.where(dead, 2, 0))
    i2 = np.flatnonzero(ill)
    stop2 = np.minimum(t23[i2], cens[i2])
    state2 = np.where(t23[i2] <= cens[i2], 2, 0)
    ids = np.concatenate([np.arange(n), i2])
    start = np.concatenate([entry, t12[i2]])
    order = np.lexsort((start, ids))
    return (np.concatenate([X, X[i2]])[order], start[order],
            np.concatenate([stop1, stop2])[order],
            np.concatenate([state1, state2])[order], ids[order])


# ------------------------------------------------------------------ ours (a child process)
CHILD = r"""
import json, resource, statistics, sys, time, warnings
import numpy as np, pandas as pd
import coxinfluence as ci
from coxinfluence.influence_functions.cause_specific_audit import CauseSpecificAudit
family, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
repeats, change, audit = int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6] == "1"
d = np.load(path)
cols = [f"x{j}" for j in range(1, 6)]
X = pd.DataFrame(d["X"], columns=cols)
new = pd.DataFrame(d["new"], columns=cols)
times = list(d["times"])
if family == "cs":
    def fit_(k=None):
        s = slice(None) if k is None else slice(0, k)
        return ci.fit_cause_specific(X.iloc[s], d["time"][s], d["status"][s])
    def predict(fit):
        return fit.predict_absolute_risk(new, times, cause=1).to_numpy()
    target = ci.targets.AbsoluteRisk(new, times, cause=1)
else:
    def fit_(k=None):
        if k is None:
            return ci.fit_multistate(X, d["start"], d["stop"], d["state"], d["id"])
        keep = d["id"] < k
        return ci.fit_multistate(X[keep], d["start"][keep], d["stop"][keep],
                                 d["state"][keep], d["id"][keep])
    def predict(fit):
        return fit.predict_state_probabilities(new, times).to_numpy()
    target = ci.targets.StateProbability(new, times)

def timed(fn):
    t0 = time.perf_counter()
    v = fn()
    return v, time.perf_counter() - t0

w = fit_(2000)                                               # warm-up
ci.influence(w, method="vif"); predict(w)
fit_s, vif_s, pred_s = [], [], []
for _ in range(repeats):
    fit, s = timed(fit_); fit_s.append(s)
    vif, s = timed(lambda: ci.influence(fit, method="vif")); vif_s.append(s)
peak_fit_vif = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
res = {"peak_fit_vif": peak_fit_vif, "fit_s": statistics.median(fit_s),
       "vif_s": statistics.median(vif_s), "coef": list(map(float, fit.coef)),
       "vif_finite": bool(np.isfinite(vif.loo_change.to_numpy()).all()),
       "units": int(len(vif.loo_change))}
if family == "cs":
    res["events"] = [int(m.n_events) for m in fit.models]
else:
    res["events"] = [int(f.n_events) for f in fit.fits]
    res["rows"] = int(fit.n)

def stage(name, fn):
    # a step past the process's address-space limit: recorded, not fatal
    t0 = time.perf_counter()
    try:
        value = fn()
    except MemoryError as exc:
        res[name + "_error"] = (f"MemoryError after {time.perf_counter() - t0:.1f} s "
                                f"({str(exc)[:80]})")
        return None
    res[name + "_s"] = time.perf_counter() - t0
    return value

def predictions():
    for _ in range(repeats):
        p, s = timed(lambda: predict(fit)); pred_s.append(s)
    return p

p = stage("predict", predictions)
res["peak_predict"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
if p is not None:
    res["predict_s"] = statistics.median(pred_s)
    res["pred"] = p.ravel().tolist()
if change:
    def reid():
        seam = CauseSpecificAudit(fit)
        return seam.change("reid") @ target.jacobian(fit).T + target.baseline_influence(fit)
    ch = stage("change", reid)
    if ch is not None:
        np.save(out + ".change.npy", ch)
if audit:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = stage("audit", lambda: ci.influence(fit, method="vif", target=target))
    if a is not None:
        np.save(out + ".audit.npy", a.loo_change.to_numpy())
res["peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
with open(out, "w") as fh:
    json.dump(res, fh)
"""


def ours(family, npz, folder, repeats, change, audit, mem_gib):
    """Our side in a fresh process under an address-space limit of ``mem_gib`` GiB (as
    R's): a step that passes it is recorded (``<step>_error``), not run."""
    out = str(folder / f"ours_{family}.json")
    limit = int(mem_gib * GIB)

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    subprocess.run([sys.executable, "-c", CHILD, family, str(npz), out, str(repeats),
                    str(int(change)), str(int(audit))], check=True, preexec_fn=cap)
    res = json.loads(Path(out).read_text())
    for key in ("change", "audit"):
        f = Path(f"{out}.{key}.npy")
        res[key] = np.load(f) if f.exists() else None
    return res


# ------------------------------------------------------------------ R (a child process)
R_CS = r"""
suppressPackageStartupMessages({library(survival); library(riskRegression)
                                library(data.table)})
args <- commandArgs(trailingOnly = TRUE)
d <- fread(args[1]); nd <- fread(args[2]); iid <- args[3] == "1"; out <- args[4]
times <- c(0.25, 0.5, 1)
step <- function(name, secs) cat(name, secs, "\n", file = paste0(out, ".steps"), append = TRUE)
t0 <- proc.time()[["elapsed"]]
fit <- CSC(Hist(time, status) ~ x1 + x2 + x3 + x4 + x5, data = d)
t1 <- proc.time()[["elapsed"]]; step("fit", t1 - t0)
p <- predict(fit, newdata = nd, times = times, cause = 1)
t2 <- proc.time()[["elapsed"]]; step("predict", t2 - t1)
coef <- c(coef(fit$models[[1]]), coef(fit$models[[2]]))
risk <- as.vector(t(p$absRisk))           # patient by patient, time by time
peak <- function() {
  hwm <- grep("^VmHWM", readLines("/proc/self/status"), value = TRUE)
  as.numeric(gsub("[^0-9]", "", hwm)) * 1024
}
json <- '{"fit_s": %.6f, "predict_s": %.6f, "peak_bytes": %.0f, "coef": [%s], "pred": [%s]}'
writeLines(sprintf(json, t1 - t0, t2 - t1, peak(), paste(sprintf("%.17g", coef), collapse = ", "),
  paste(sprintf("%.17g", risk), collapse = ", ")), out)
if (iid) {
  q <- predict(fit, newdata = nd, times = times, cause = 1, iid = TRUE, se = TRUE)
  t3 <- proc.time()[["elapsed"]]; step("iid", t3 - t2)
  a <- q$absRisk.iid                      # subjects x times x patients
  flat <- matrix(NA_real_, dim(a)[1], dim(a)[2] * dim(a)[3])
  for (j in seq_len(dim(a)[3])) for (t in seq_len(dim(a)[2]))
    flat[, (j - 1) * dim(a)[2] + t] <- a[, t, j]
  writeBin(as.vector(flat), paste0(out, ".iid.bin"))
  writeLines(sprintf('{"iid_s": %.6f, "peak_bytes": %.0f}', t3 - t2, peak()),
             paste0(out, ".iid.json"))
}
"""

R_MS = r"""
suppressPackageStartupMessages({library(survival); library(data.table)})
args <- commandArgs(trailingOnly = TRUE)
d <- fread(args[1]); nd <- fread(args[2]); out <- args[3]
times <- c(5, 10, 20)
step <- function(name, secs) cat(name, secs, "\n", file = paste0(out, ".steps"), append = TRUE)
d$fstate <- factor(d$state, 0:2, labels = c("censor", "ill", "dead"))
t0 <- proc.time()[["elapsed"]]
fit <- coxph(Surv(tstart, tstop, fstate) ~ x1 + x2 + x3 + x4 + x5, data = d, id = id)
t1 <- proc.time()[["elapsed"]]; step("fit", t1 - t0)
ps <- summary(survfit(fit, newdata = nd), times = times)$pstate     # times x patients x states
t2 <- proc.time()[["elapsed"]]; step("predict", t2 - t1)
flat <- c()
for (j in seq_len(dim(ps)[2])) for (t in seq_len(dim(ps)[1])) flat <- c(flat, ps[t, j, ])
hwm <- grep("^VmHWM", readLines("/proc/self/status"), value = TRUE)
hwm <- as.numeric(gsub("[^0-9]", "", hwm)) * 1024
json <- '{"fit_s": %.6f, "predict_s": %.6f, "peak_bytes": %.0f, "coef": [%s], "pred": [%s]}'
writeLines(sprintf(json, t1 - t0, t2 - t1, hwm, paste(sprintf("%.17g", coef(fit)), collapse = ", "),
  paste(sprintf("%.17g", flat), collapse = ", ")), out)
"""


def r_error(stderr):
    """R's error message (from its first line starting 'Error' to 'Execution halted'),
    on one line."""
    lines = stderr.strip().splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("Error")), None)
    if at is None:
        return (lines or ["?"])[-1][:150]
    text = " ".join(line.strip() for line in lines[at:] if line != "Execution halted")
    return text[:200]


def run_r(script, args, folder, name, timeout, mem_gib):
    """``(result dict or None, why not, steps finished)``: Rscript under ``timeout`` s and
    an address-space limit of ``mem_gib`` GiB."""
    out = folder / f"{name}.json"
    (folder / f"{name}.R").write_text(script)
    limit = int(mem_gib * GIB)

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    t0 = time.perf_counter()
    try:
        proc = subprocess.run(["Rscript", str(folder / f"{name}.R"), *map(str, args), str(out)],
                              capture_output=True, text=True, timeout=timeout, preexec_fn=cap)
    except subprocess.TimeoutExpired:
        why = f"stopped after {timeout:.0f} s (--r-timeout)"
        proc = None
    else:
        why = None if proc.returncode == 0 else (
            f"failed after {time.perf_counter() - t0:.0f} s: " + r_error(proc.stderr))
    steps_file = Path(f"{out}.steps")
    steps = {k: float(v) for k, v in (line.split() for line in
                                      steps_file.read_text().splitlines())} \
        if steps_file.exists() else {}
    if not out.exists():
        return None, why or "no output", steps
    res = json.loads(out.read_text())
    extra = Path(f"{out}.iid.json")
    if extra.exists():                           # the iid step (cause-specific)
        res.update(json.loads(extra.read_text()))
        res["iid"] = np.fromfile(f"{out}.iid.bin", dtype=np.float64)
    return res, why, steps


# ------------------------------------------------------------------ the benchmark
def mx(a, b):
    return float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float))))


def not_run(why, steps):
    done = ", ".join(f"{k} {v:.1f} s" for k, v in steps.items())
    return f"not run: {why}" + (f" (finished: {done})" if done else "")


def r_cause_specific(X, t, s, folder, args, iid):
    frame = pd.DataFrame(X, columns=COLS).assign(time=t, status=s)
    frame.to_csv(folder / "cs.csv", index=False, float_format="%.17g")
    pd.DataFrame(NEW, columns=COLS).to_csv(folder / "new.csv", index=False)
    return run_r(R_CS, [folder / "cs.csv", folder / "new.csv", int(iid)], folder, "r_cs",
                 args.r_timeout, args.mem_gib)


def derivative_check(X, t, s, change, iid, k=3, eps=1e-5):
    """``(max |ours - numeric|, max |-iid - numeric|)`` over the ``k`` subjects where our
    Reid change of F and ``-absRisk.iid`` differ most: ``numeric`` the derivative in the
    subject's case weight, ``-(F(w_i = 1 + eps) - F(w_i = 1 - eps)) / (2 eps)``, by
    refits (what the Reid change is: tests/test_cause_specific_audit.py)."""
    iid = iid.reshape(change.shape[1], -1).T
    rows = np.argsort(-np.abs(change + iid).max(axis=1))[:k]
    frame = pd.DataFrame(X, columns=COLS)
    target = ci.targets.AbsoluteRisk(pd.DataFrame(NEW, columns=COLS), CS_TIMES, cause=1)
    ours_gap, r_gap = 0.0, 0.0
    for i in rows:
        values = []
        for step in (eps, -eps):
            w = np.ones(len(t))
            w[i] += step
            moved = ci.fit_cause_specific(frame, t, s, weights=w)
            values.append(target.value(moved, moved.coef)[0])
        numeric = -(values[0] - values[1]) / (2 * eps)
        ours_gap = max(ours_gap, mx(change[i], numeric))
        r_gap = max(r_gap, mx(-iid[i], numeric))
    return ours_gap, r_gap


def cause_specific(n, args, folder, have_r):
    """One size: ``(n, ours, R, why R stopped, R's finished steps, tie-free check)``; the
    tie-free check (up to ``--tie-free-max-n``) is ``(ours, R)`` on the same subjects
    with the times jittered apart (no ties), where R's iid is the estimator's
    derivative."""
    X, t, s = simulate_cause_specific(n, n)
    change = n <= args.change_max_n
    audit = n <= args.audit_max_n
    np.savez(folder / "cs.npz", X=X, time=t, status=s, new=NEW, times=CS_TIMES)
    mine = ours("cs", folder / "cs.npz", folder, 1 if n >= 10 ** 6 else 3, change, audit,
                args.mem_gib)
    r, why, steps = None, "R not installed", {}
    if have_r:
        r, why, steps = r_cause_specific(X, t, s, folder, args, iid=True)
    tie_free = None
    if (r is not None and r.get("iid") is not None and mine["change"] is not None
            and n <= args.tie_free_max_n):
        mine["derivative"] = derivative_check(X, t, s, mine["change"], r["iid"])
    if have_r and n <= args.tie_free_max_n:
        jitter = t + np.random.default_rng(n + 1).uniform(0.0, 1e-3, n)
        np.savez(folder / "cs.npz", X=X, time=jitter, status=s, new=NEW, times=CS_TIMES)
        m2 = ours("cs", folder / "cs.npz", folder, 1, True, False, args.mem_gib)
        r2 = r_cause_specific(X, jitter, s, folder, args, iid=True)[0]
        tie_free = (m2, r2)
    return n, mine, r, why, steps, tie_free


def multistate(n, args, folder, have_r):
    X, start, stop, state, ids = simulate_multistate(n, n)
    audit = n <= args.audit_max_n
    np.savez(folder / "ms.npz", X=X, start=start, stop=stop, state=state, id=ids, new=NEW,
             times=MS_TIMES)
    mine = ours("ms", folder / "ms.npz", folder, 1 if n >= 10 ** 6 else 3, False, audit,
                args.mem_gib)
    r, why, steps = None, "R not installed", {}
    if have_r:
        frame = pd.DataFrame(X, columns=COLS).assign(tstart=start, tstop=stop, state=state,
                                                     id=ids)
        frame.to_csv(folder / "ms.csv", index=False, float_format="%.17g")
        pd.DataFrame(NEW, columns=COLS).to_csv(folder / "new.csv", index=False)
        r, why, steps = run_r(R_MS, [folder / "ms.csv", folder / "new.csv"], folder, "r_ms",
                              args.r_timeout, args.mem_gib)
    return n, len(state), mine, r, why, steps


def iid_agreement(m, r):
    """``'max |ours + iid| (relative to max |iid|); min r'`` of our Reid change of F and
    ``-absRisk.iid`` (min over the patient-time columns of the Pearson correlation)."""
    if r is None or r.get("iid") is None or m.get("change") is None:
        return "not run"
    ch = m["change"]
    iid = r["iid"].reshape(ch.shape[1], -1).T
    gap = mx(ch, -iid)
    corr = min(np.corrcoef(ch[:, j], -iid[:, j])[0, 1] for j in range(ch.shape[1]))
    return f"{gap:.1e} ({gap / np.abs(iid).max():.1e}); r >= {corr:.6f}"


def step_cell(m, name, fmt, skipped):
    """Our step's time, or why it did not run (past the memory limit, or skipped)."""
    if f"{name}_s" in m:
        return fmt.format(m[f"{name}_s"])
    if f"{name}_error" in m:
        return f"not run: {m[name + '_error']}"
    return skipped


def cs_rows(results, args):
    time_rows, agree_rows = [], []
    for n, m, r, why, steps, tie_free in results:
        ch, pr = m.get("change_s"), m.get("predict_s")
        cells = [f"{n:,}", " / ".join(f"{e:,}" for e in m["events"]),
                 f"{m['fit_s']:.2f}", f"{m['vif_s']:.2f}",
                 step_cell(m, "predict", "{:.3f}", "not run"),
                 step_cell(m, "change", "{:.2f}",
                           f"not run (n > --change-max-n {args.change_max_n:,})"),
                 step_cell(m, "audit", "{:.1f}",
                           f"not run (n > --audit-max-n {args.audit_max_n:,})"),
                 f"{m['peak_fit_vif'] / GIB:.2f} / {m['peak_bytes'] / GIB:.2f}"]
        if r is None:
            cells += [not_run(why, steps), "", "", "", "", ""]
            agree = ["", "", "", "", "", ""]
        else:
            r_core = r["fit_s"] + r["predict_s"]
            iid_s = r.get("iid_s")
            cells += [f"{r['fit_s']:.2f}", f"{r['predict_s']:.3f}",
                      f"{iid_s:.2f}" if iid_s is not None else not_run(why, {}),
                      f"{r['peak_bytes'] / GIB:.2f}"
                      + (" (up to predict; the iid not run)" if iid_s is None else ""),
                      f"{(m['fit_s'] + pr) / r_core:.2f}x" if pr is not None else "n/a",
                      f"{(m['fit_s'] + m['vif_s'] + pr + ch) / (r_core + iid_s):.2f}x"
                      if iid_s is not None and ch is not None and pr is not None
                      else "n/a"]
            agree = [f"{mx(m['coef'], r['coef']):.1e}",
                     f"{mx(m['pred'], r['pred']):.1e}" if "pred" in m else "n/a",
                     iid_agreement(m, r)]
            if m.get("audit") is not None and r.get("iid") is not None:
                iid = r["iid"].reshape(m["audit"].shape[1], -1).T
                g2 = mx(m["audit"], -iid)
                agree.append(f"{g2:.1e} ({g2 / np.abs(iid).max():.1e})")
            else:
                agree.append("not run")
            dc = m.get("derivative")
            agree.append(f"{dc[0]:.1e} / {dc[1]:.1e}" if dc else "not run")
            agree.append(iid_agreement(*tie_free) if tie_free else "not run")
        time_rows.append(cells)
        agree_rows.append([f"{n:,}", *agree])
    return time_rows, agree_rows


def ms_rows(results, args):
    rows = []
    for n, nrows, m, r, why, steps in results:
        pr = m.get("predict_s")
        cells = [f"{n:,}", f"{nrows:,}", " / ".join(f"{e:,}" for e in m["events"]),
                 f"{m['fit_s']:.2f}", f"{m['vif_s']:.2f}",
                 step_cell(m, "predict", "{:.3f}", "not run"),
                 step_cell(m, "audit", "{:.1f}",
                           f"not run (n > --audit-max-n {args.audit_max_n:,})"),
                 f"{m['peak_fit_vif'] / GIB:.2f} / {m['peak_bytes'] / GIB:.2f}"]
        if r is None:
            cells += [not_run(why, steps), "", "", "", "", ""]
        else:
            ratio = (f"{(m['fit_s'] + m['vif_s'] + pr) / (r['fit_s'] + r['predict_s']):.2f}x"
                     if pr is not None else "n/a")
            cells += [f"{r['fit_s']:.2f}", f"{r['predict_s']:.2f}",
                      f"{r['peak_bytes'] / GIB:.2f}", ratio,
                      f"{mx(m['coef'], r['coef']):.1e}",
                      f"{mx(m['pred'], r['pred']):.1e}" if "pred" in m else "n/a"]
        rows.append(cells)
    return rows


def memory_note(cs):
    """A paragraph where our cause-specific prediction of F stopped at the memory limit,
    or grew the peak past 3x the fit + VIF's (measured: the peak after fit + VIF against
    the peak after the prediction)."""
    big = [(n, m) for n, m, *_ in cs
           if "predict_error" in m or m["peak_predict"] > 3 * m["peak_fit_vif"]]
    if not big:
        return []
    sizes = "; ".join(f"at {n:,} subjects {m['peak_fit_vif'] / GIB:.2f} GiB after fit + "
                      f"VIF, {m['peak_predict'] / GIB:.2f} GiB after the prediction of F, "
                      + (f"which took {m['predict_s']:.1f} s" if "predict_s" in m else
                         f"which stopped: {m['predict_error']}") for n, m in big)
    return [f"Ours' cause-specific peak memory: {sizes}. (The prediction holds every "
            "cause's baseline hazard at every jump time of the cohort for each patient; "
            "the peak at the end also holds the Reid change of F, up to "
            "--change-max-n.)", ""]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10^4 subjects only (CI)")
    ap.add_argument("--sizes", default=None, help="comma-separated numbers of subjects")
    ap.add_argument("--r-timeout", type=float, default=600.0,
                    help="seconds per R process")
    ap.add_argument("--mem-gib", type=float, default=14.0,
                    help="address-space limit of each process (ours and R's), GiB")
    ap.add_argument("--change-max-n", type=int, default=1_000_000,
                    help="largest n for our Reid change of the absolute risk (R's "
                         "predict(iid = TRUE) is tried at every n)")
    ap.add_argument("--tie-free-max-n", type=int, default=10_000,
                    help="largest n for the check of the Reid change against "
                         "-absRisk.iid on a tie-free copy of the data")
    ap.add_argument("--audit-max-n", type=int, default=10_000,
                    help="largest n for ci.influence(fit, method='vif', target=...)")
    args = ap.parse_args(argv)
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
             else [10_000] if args.quick else [10_000, 100_000, 1_000_000])
    have_r = r_available()
    t_start = time.perf_counter()
    cs, ms = [], []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            cs.append(cause_specific(n, args, Path(tmp), have_r))
            print(f"[bench_cause_specific] CS n={n}: ours {cs[-1][1]['fit_s']:.2f}+"
                  f"{cs[-1][1]['vif_s']:.2f} s; R {cs[-1][3] or 'ok'}", file=sys.stderr,
                  flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            ms.append(multistate(n, args, Path(tmp), have_r))
            print(f"[bench_cause_specific] MS n={n}: ours {ms[-1][2]['fit_s']:.2f}+"
                  f"{ms[-1][2]['vif_s']:.2f} s; R {ms[-1][4] or 'ok'}", file=sys.stderr,
                  flush=True)
    cs_time, cs_agree = cs_rows(cs, args)
    change_times = ", ".join(f"{m['change_s']:.1f} s at {n:,}" for n, m, *_ in cs
                             if "change_s" in m) or "none run"
    audit_times = ", ".join(
        [f"absolute risk {m['audit_s']:.1f} s at {n:,}" for n, m, *_ in cs if "audit_s" in m]
        + [f"state probabilities {m['audit_s']:.1f} s at {n:,}" for n, _, m, *_ in ms
           if "audit_s" in m]) or "none run"
    versions = ""
    if have_r:
        versions = subprocess.run(
            ["Rscript", "-e", 'cat(R.version$version.string, "; survival",'
             ' format(packageVersion("survival")), "; riskRegression",'
             ' format(packageVersion("riskRegression")))'],
            capture_output=True, text=True).stdout.strip()
    text = [
        "# Cause-specific and multi-state Cox models at cohort scale (issue 47)", "",
        f"{os.cpu_count()} cores (shared); {ci.__name__} {ci.__version__}; {versions}. "
        "Simulated data, seed = n, 5 covariates, ties through rounded times (the script's "
        "docstring has the designs). Each side in a fresh process; peak memory = that "
        "process's peak resident set (imports and data included; ours: after fit + VIF, "
        "and at the end, all of the row's steps; R: at the end). Ours: medians of 3 after "
        "a warm-up (one run at 10^6); R: one run, timed "
        f"inside R. Every process (ours and R's) limited to {args.mem_gib:g} GiB of "
        f"address space (RLIMIT_AS), R's also to {args.r_timeout:.0f} s.", "",
        "## Cause-specific Cox models: ours against riskRegression's CSC", "",
        "Ours: `fit = ci.fit_cause_specific(X, time, status)`, `ci.influence(fit, "
        "method=\"vif\")` (every cause's coefficients, a subject deleted from every cause "
        "at once), `fit.predict_absolute_risk(X_new, times, cause=1)` (3 patients, t = "
        f"{CS_TIMES}); the Reid change of `ci.targets.AbsoluteRisk(X_new, times, cause=1)` "
        "by deleting each subject (the audit's Reid change of the coefficients through the "
        "target's Jacobian plus `target.baseline_influence(fit)`); the audit "
        "`ci.influence(fit, method=\"vif\", target=AbsoluteRisk(...))` (the VIF through the "
        "Jacobian plus each subject's literal deletion from every baseline). R: "
        "`CSC(Hist(time, status) ~ x1 + ... + x5)`, `predict(csc, newdata, times, cause = "
        "1)`, and `predict(..., iid = TRUE, se = TRUE)` (R's counterpart of the Reid "
        "change). Ratios: ours (fit + prediction) / R (CSC + predict); ours (fit + VIF + "
        "prediction + Reid change of F) / R (CSC + predict + predict(iid = TRUE)).", "",
        markdown_table(["subjects", "events cause 1 / 2", "ours fit s", "ours VIF s",
                        "ours F s", "ours Reid change of F s", "ours audit of F (VIF) s",
                        "ours peak GiB: fit + VIF / all", "R CSC s", "R predict s",
                        "R predict(iid = TRUE) s", "R peak GiB",
                        "ours / R: fit + F", "ours / R: with the influence of F"],
                       cs_time), "",
        "Agreement with R: the largest absolute difference (in brackets relative to max "
        "|absRisk.iid|; r: the smallest Pearson correlation over the 9 patient-time "
        "columns). Coefficients and absolute risks agree to rounding. Our Reid change of F "
        "and `-absRisk.iid` are not the same quantity on tied data: with tied event times "
        "riskRegression's iid of the Cox baseline is not the estimator's derivative "
        "(`coxinfluence.models.cause_specific_influence`; ours is the derivative in the "
        "subject's case weight, checked by central differences in "
        "tests/test_cause_specific_audit.py, and here on the 3 subjects where the two "
        "differ most: the largest absolute difference of ours and of `-absRisk.iid` from "
        "the derivative by central differences of refits, step 1e-5), and these data have "
        "many ties (times to 3 "
        "decimals: at 10^5 subjects about 25 events per distinct time). The last column "
        "repeats the comparison on the same subjects with the times jittered apart by "
        "U(0, 0.001) (no ties), where R's iid is the derivative (with the product limit "
        "taken at the product-limit survival: module docstring there). The audit's change "
        "deletes the subject (the VIF, the baselines without the subject), a leave-one-out "
        "change, not an infinitesimal one.", "",
        markdown_table(["subjects", "coefficients", "absolute risk F",
                        "Reid change of F vs -absRisk.iid (tied data)",
                        "audit (VIF) change of F vs -absRisk.iid",
                        "the derivative in a case weight (3 subjects): ours / R's iid",
                        "Reid change of F vs -absRisk.iid, times jittered (no ties)"],
                       cs_agree), "",
        "## Multi-state (illness-death) Cox models: ours against survival's coxph + "
        "survfit", "",
        "Ours: `fit = ci.fit_multistate(X, start, stop, state, id)`, `ci.influence(fit, "
        "method=\"vif\")` (subjects), `fit.predict_state_probabilities(X_new, times)` (3 "
        f"patients, t = {MS_TIMES}); the audit `ci.influence(fit, method=\"vif\", "
        "target=ci.targets.StateProbability(X_new, times))`. R: `coxph(Surv(tstart, "
        "tstop, state) ~ x1 + ... + x5, id = id)` + `summary(survfit(fit, newdata), "
        "times)$pstate` (survfit's default se.fit = TRUE: its influence-based standard "
        "errors). Ratio: ours (fit + VIF + probabilities) / R (coxph + survfit).", "",
        markdown_table(["subjects", "rows", "transitions 1:2 / 1:3 / 2:3", "ours fit s",
                        "ours VIF s", "ours P(state) s", "ours audit of P (VIF) s",
                        "ours peak GiB: fit + VIF / all", "R coxph s", "R survfit s",
                        "R peak GiB",
                        "ours / R time", "max abs diff coefficients",
                        "max abs diff P(state)"], ms_rows(ms, args)), "",
        "Not run, and why: our Reid change of the absolute risk is run up to "
        f"{args.change_max_n:,} subjects (measured: {change_times}; prefix sums over "
        "each cause's event terms, O((n + events) x patients x times)); "
        "R's `predict(iid = TRUE)` is tried at every size, under the limits above. The "
        "audits of a target (`ci.influence(..., target=...)`, method vif) only up to "
        f"{args.audit_max_n:,} subjects (measured: {audit_times}): each subject's literal "
        "deletion from the baselines recomputes them once per subject, O(n^2). A cell "
        "'not run' says what stopped it (and for R what it had finished).", "",
        *memory_note(cs),
        f"Total wall time: {time.perf_counter() - t_start:.1f} s", ""]
    write_result("bench_cause_specific.md", "\n".join(text))


if __name__ == "__main__":
    main()

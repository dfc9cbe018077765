"""When is the VIF off? Flags measured against exact leave-one-out refits on real data.

    python paper_appendix/bench_flags.py [--quick] [--no-newton-above N]

For every data set (below) and every unit (a row, or a subject / cluster where the data
has them) this computes

- the VIF change ``delta_vif = -ci.vif(fit)/U`` and the exact change ``ci.exact_loo(fit) -
  theta_hat`` (the ground truth), one-step Newton (``ci.newton_loo``) where
  ``U n d^2 <= --newton-budget``, and the leverage-corrected change
  ``(H - C_g)^{-1} H delta_vif`` (:mod:`coxinfluence.influence_functions.stability`);
- the candidate predictors of "VIF is off": (i) ``leverage`` ``lambda_g``, the largest
  eigenvalue of ``H^{-1/2} C_g H^{-1/2}``; (ii) ``dis_lc``, ``||lc - vif||_H / ||lc||_H``;
  (iii) ``dis_newton``, ``||newton - vif||_H / ||newton||_H``; (iv) ``share``, the largest
  diagonal share ``max_j [C_g]_jj / H_jj``; (v) ``step2``, the relative size of the second
  chord step of the refit, ``||H^{-1} grad L_{-g}(theta_hat + delta_vif)||_H /
  ||delta_vif||_H`` (one gradient of the deleted problem per unit, O(n d));
- "bad" units: ``||delta_vif - delta_exact||_H > 0.1 ||delta_exact||_H``
  (``||D||_H = sqrt(D' H D)``); "bad2": bad and the exact likelihood displacement above
  the data set's median.

Tables: per data set and pooled precision, recall and share of units flagged for each
candidate at a few thresholds; the chosen rule per data set; the undefined units
(``flags.undefined_units``) against NaN refits; the ratio of exact to VIF (and to
leverage-corrected) likelihood displacement over units not flagged (the safety factor of
``method="auto"``'s stopping rule), and a simulation of ``auto`` with safety factor ``s``
(its own ``coxinfluence.audit.verification.verify``, fed the exact displacements: the
first round refits every flagged unit and the others with ``s * LD >= `` the 10th largest
ranked displacement, at least 10 in all, then doubles until ``s`` times the largest
ranked displacement among the units not refitted is below the 10th exact one, at most
``max(60, 8% of units)``) against the exact top 10.

Exact LD is ``2 [L(theta_{-g}) - L(theta_hat)]`` with ``L = fit.objective`` (the negative
log partial likelihood); the approximate LDs are ``D' H D``.

Data sets: lifelines' bundled data, R's ``survival`` data written by Rscript at run time
into ``paper_appendix/out/flags_data/`` (skipped when Rscript is absent), statsmodels'
heart data, the DeepSurv METABRIC / SUPPORT / GBSG / WHAS files
(``coxinfluence.datasets``; skipped when absent). Factors become dummies with the most
frequent level as reference (rare levels are kept: they are where the VIF fails). Writes
``paper_appendix/out/bench_flags.md`` and prints it. Deterministic (no random numbers).
"""
from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import flag_estimates  # noqa: E402
from _common import OUT, markdown_table, r_available, write_result  # noqa: E402

import coxinfluence as ci  # noqa: E402
from coxinfluence.audit.verification import MIN_REFITS, refit_cap, verify  # noqa: E402
from coxinfluence.data.units import resolve_units  # noqa: E402
from coxinfluence.influence_functions import stability as flags  # noqa: E402
from coxinfluence.influence_functions.cox_audit import CoxAudit  # noqa: E402
from coxinfluence.influence_functions.engine_refits import Refits  # noqa: E402
from coxinfluence.influence_functions.seam import AuditModel  # noqa: E402

DATA = OUT / "flags_data"
BAD = 0.10                       # "bad": VIF error above 10% of the exact change (H-norm)
THRESHOLDS = {
    "leverage": [0.02, 0.05, 0.1, 0.2],
    "dis_lc": [0.02, 0.05, 0.1],
    "dis_newton": [0.02, 0.05, 0.1],
    "share": [0.05, 0.1, 0.2],
    "step2": [0.05, 0.1, 0.2],
    "curv": [0.03, 0.05, 0.07, 0.1],
}
S_GRID = [1.0, 1.25, 1.5, 2.0, 3.0]


# ---------------------------------------------------------------------------- data sets

@dataclass
class Case:
    name: str
    source: str
    X: pd.DataFrame
    time: np.ndarray
    event: np.ndarray
    start: np.ndarray | None = None
    id: np.ndarray | None = None           # subjects (non-overlapping intervals)
    groups: np.ndarray | None = None       # clusters
    strata: np.ndarray | None = None
    notes: list = field(default_factory=list)

    @property
    def unit(self):
        return "subject" if self.id is not None else "cluster" if self.groups is not None \
            else "row"

    def fit(self):
        return ci.fit_cox(self.X, self.time, self.event, start=self.start, id=self.id,
                          strata=self.strata)


def dummies(df, col, prefix=None, min_count=1):
    """Dummies of ``df[col]`` with the most frequent level as reference; levels with
    fewer than ``min_count`` rows are lumped into ``other``."""
    v = df[col].astype(str)
    counts = v.value_counts()
    rare = counts.index[counts < min_count]
    if len(rare):
        v = v.where(~v.isin(rare), "other")
        counts = v.value_counts()
    ref = counts.index[0]
    levels = sorted(c for c in counts.index if c != ref)
    prefix = prefix or col
    return pd.DataFrame({f"{prefix}={lv}": (v == lv).astype(float) for lv in levels},
                        index=df.index)


def frame(df, numeric, factors=(), **kw):
    parts = [df[numeric].astype(float)] + [dummies(df, f, **kw) for f in factors]
    return pd.concat(parts, axis=1)


def lifelines_cases():
    import lifelines.datasets as L
    out = []
    df = L.load_rossi()
    out.append(Case("rossi", "lifelines", frame(df, ["fin", "age", "race", "wexp", "mar",
                                                     "paro", "prio"]),
                    df.week.to_numpy(), df.arrest.to_numpy()))
    df = L.load_larynx()
    out.append(Case("larynx", "lifelines", frame(df, ["age", "Stage_II", "Stage_III",
                                                      "Stage_IV"]),
                    df.time.to_numpy(), df.death.to_numpy()))
    df = L.load_gbsg2()
    X = pd.concat([(df.horTh == "yes").astype(float).rename("horTh"),
                   (df.menostat == "Post").astype(float).rename("post"),
                   df[["age", "tsize", "pnodes", "progrec", "estrec"]].astype(float),
                   dummies(df, "tgrade")], axis=1)
    out.append(Case("gbsg2", "lifelines", X, df.time.to_numpy(), df.cens.to_numpy()))
    df = L.load_kidney_transplant()
    out.append(Case("kidney_transplant", "lifelines",
                    frame(df, ["age", "black_male", "white_male", "black_female"]),
                    df.time.to_numpy(), df.death.to_numpy()))
    df = L.load_lung().dropna(subset=["age", "sex", "ph.ecog", "ph.karno", "pat.karno",
                                      "wt.loss"]).reset_index(drop=True)
    out.append(Case("lung (ecog numeric)", "lifelines",
                    frame(df, ["age", "sex", "ph.ecog", "ph.karno", "pat.karno", "wt.loss"]),
                    df.time.to_numpy(), df.status.to_numpy()))
    df = L.load_stanford_heart_transplants()
    out.append(Case("stanford heart (rows)", "lifelines",
                    frame(df, ["age", "year", "surgery", "transplant"]),
                    df.stop.to_numpy(), df.event.to_numpy(), start=df.start.to_numpy()))
    df = L.load_dd()
    X = pd.concat([dummies(df, "regime"), dummies(df, "un_continent_name", "continent"),
                   df[["start_year"]].astype(float)], axis=1)
    out.append(Case("dd", "lifelines", X, df.duration.to_numpy(), df.observed.to_numpy()))
    df = L.load_leukemia()
    out.append(Case("leukemia", "lifelines", frame(df, ["sex", "logWBC", "Rx"]),
                    df.t.to_numpy(), df.status.to_numpy()))
    df = L.load_recur()
    out.append(Case("recur", "lifelines", frame(df, ["AGE", "TREAT"]), df.TIME1.to_numpy(),
                    df.CENSOR.to_numpy(), start=df.TIME0.to_numpy(), id=df.ID.to_numpy()))
    df = L.load_lupus().dropna().reset_index(drop=True)
    X = df[["is_male", "is_white", "age_at_diagnosis"]].astype(float)
    X["onset_delay"] = df.iloc[:, 4].astype(float)
    out.append(Case("lupus", "lifelines", X, df.iloc[:, 7].to_numpy(dtype=float),
                    df.dead.to_numpy(dtype=float)))
    df = L.load_lcd()
    out.append(Case("lcd", "lifelines", dummies(df, "group"), df["T"].to_numpy(),
                    df.E.to_numpy()))
    df = L.load_waltons()
    out.append(Case("waltons", "lifelines", dummies(df, "group"), df["T"].to_numpy(),
                    df.E.to_numpy()))
    df = L.load_psychiatric_patients()
    out.append(Case("psychiatric", "lifelines", frame(df, ["Age", "sex"]),
                    df["T"].to_numpy(), df.C.to_numpy()))
    df = L.load_regression_dataset()
    out.append(Case("regression_dataset", "lifelines", frame(df, ["var1", "var2", "var3"]),
                    df["T"].to_numpy(), df.E.to_numpy()))
    df = L.load_canadian_senators()
    df = df.assign(year=pd.to_datetime(df.start_date).dt.year)
    X = pd.concat([dummies(df, "Political Affiliation at Appointment", "party", min_count=2),
                   df[["year"]].astype(float)], axis=1)
    out.append(Case("canadian_senators", "lifelines", X, df.diff_days.to_numpy(dtype=float),
                    df.observed.to_numpy(dtype=float)))
    df = L.load_g3()
    X = pd.concat([df[["age"]].astype(float), dummies(df, "sex"), dummies(df, "group")], axis=1)
    out.append(Case("g3", "lifelines", X, df.time.to_numpy(), df.event.to_numpy(dtype=float)))
    return out


R_EXPORT = r"""
suppressMessages(library(survival))
out <- commandArgs(trailingOnly = TRUE)[1]
for (nm in c("pbc", "colon", "cgd", "lung", "veteran", "ovarian", "mgus2", "nwtco",
             "retinopathy", "flchain", "heart", "rotterdam", "myeloid", "transplant",
             "udca1", "aml", "kidney", "rats", "bladder2")) {
  write.csv(get(nm), file.path(out, paste0(nm, ".csv")), row.names = FALSE)
}
cat(as.character(packageVersion("survival")), "\n")
"""


def export_r_data():
    DATA.mkdir(parents=True, exist_ok=True)
    script = DATA / "export.R"
    script.write_text(R_EXPORT)
    res = subprocess.run(["Rscript", str(script), str(DATA)], check=True, capture_output=True,
                         text=True)
    return res.stdout.strip()


def r_cases():
    if not r_available():
        return [], "Rscript not found: R's data sets skipped"
    version = export_r_data()

    def read(nm):
        return pd.read_csv(DATA / f"{nm}.csv")
    out = []
    df = read("pbc").dropna(subset=["age", "edema", "bili", "albumin", "protime", "stage"])
    df = df.reset_index(drop=True)
    X = pd.concat([df[["age", "albumin"]].astype(float),
                   np.log(df.bili).rename("log_bili"), np.log(df.protime).rename("log_protime"),
                   (df.sex == "f").astype(float).rename("female"),
                   dummies(df, "edema"), dummies(df, "stage")], axis=1)
    out.append(Case("pbc", "R", X, df.time.to_numpy(), (df.status == 2).to_numpy(float)))
    df = read("colon")
    df = df[df.etype == 2].dropna(subset=["nodes", "differ"]).reset_index(drop=True)
    X = pd.concat([dummies(df, "rx"), df[["sex", "age", "obstruct", "perfor", "adhere",
                                          "nodes", "surg"]].astype(float),
                   dummies(df, "differ"), dummies(df, "extent")], axis=1)
    out.append(Case("colon (deaths)", "R", X, df.time.to_numpy(), df.status.to_numpy()))
    df = read("cgd")
    X = pd.concat([(df.treat != "placebo").astype(float).rename("treat"),
                   (df.sex == "female").astype(float).rename("female"),
                   df[["age"]].astype(float),
                   (df.inherit == "autosomal").astype(float).rename("autosomal"),
                   (df.steroids == 1).astype(float).rename("steroids"),
                   (df.propylac == 1).astype(float).rename("propylac")], axis=1)
    out.append(Case("cgd (subjects, strata)", "R", X, df.tstop.to_numpy(), df.status.to_numpy(),
                    start=df.tstart.to_numpy(), id=df.id.to_numpy(),
                    strata=df["hos.cat"].to_numpy()))
    lung = read("lung")
    df = lung.dropna(subset=["age", "sex", "ph.ecog", "ph.karno", "pat.karno", "wt.loss"])
    df = df.reset_index(drop=True)
    X = pd.concat([df[["age", "sex", "ph.karno", "pat.karno", "wt.loss"]].astype(float),
                   dummies(df, "ph.ecog", "ecog")], axis=1)
    out.append(Case("lung (ecog factor)", "R", X, df.time.to_numpy(),
                    (df.status == 2).to_numpy(float)))
    df = lung.dropna(subset=["inst", "age", "sex", "ph.ecog"]).reset_index(drop=True)
    out.append(Case("lung (strata inst)", "R", frame(df, ["age", "sex", "ph.ecog"]),
                    df.time.to_numpy(), (df.status == 2).to_numpy(float),
                    strata=df.inst.to_numpy()))
    df = read("veteran")
    X = pd.concat([df[["trt", "karno", "diagtime", "age", "prior"]].astype(float),
                   dummies(df, "celltype")], axis=1)
    out.append(Case("veteran", "R", X, df.time.to_numpy(), df.status.to_numpy()))
    df = read("ovarian")
    out.append(Case("ovarian", "R", frame(df, ["age", "resid.ds", "rx", "ecog.ps"]),
                    df.futime.to_numpy(), df.fustat.to_numpy()))
    df = read("mgus2").dropna(subset=["age", "hgb", "creat", "mspike"]).reset_index(drop=True)
    X = pd.concat([df[["age", "hgb", "creat", "mspike"]].astype(float),
                   (df.sex == "M").astype(float).rename("male")], axis=1)
    out.append(Case("mgus2", "R", X, df.futime.to_numpy(), df.death.to_numpy()))
    df = read("nwtco")
    X = pd.concat([(df.histol == 2).astype(float).rename("unfav"),
                   (df.age / 12).rename("age_years"), (df.study == 4).astype(float)
                   .rename("study4"), dummies(df, "stage")], axis=1)
    out.append(Case("nwtco", "R", X, df.edrel.to_numpy(), df.rel.to_numpy()))
    df = read("retinopathy")
    X = pd.concat([df[["trt", "age", "risk"]].astype(float),
                   (df.type == "adult").astype(float).rename("adult")], axis=1)
    out.append(Case("retinopathy (clusters)", "R", X, df.futime.to_numpy(),
                    df.status.to_numpy(), groups=df.id.to_numpy()))
    df = read("flchain")
    X = pd.concat([df[["age", "kappa", "lambda", "mgus"]].astype(float),
                   (df.sex == "M").astype(float).rename("male")], axis=1)
    out.append(Case("flchain", "R", X, df.futime.to_numpy(dtype=float), df.death.to_numpy()))
    df = read("heart")
    out.append(Case("heart (subjects)", "R", frame(df, ["age", "year", "surgery", "transplant"]),
                    df.stop.to_numpy(), df.event.to_numpy(), start=df.start.to_numpy(),
                    id=df.id.to_numpy()))
    df = read("rotterdam")
    X = pd.concat([df[["age", "meno", "grade", "nodes", "hormon", "chemo"]].astype(float),
                   np.log1p(df.pgr).rename("log_pgr"), np.log1p(df.er).rename("log_er"),
                   dummies(df, "size")], axis=1)
    out.append(Case("rotterdam", "R", X, df.dtime.to_numpy(dtype=float), df.death.to_numpy()))
    df = read("myeloid")
    X = pd.concat([(df.trt == "B").astype(float).rename("trtB"),
                   (df.sex == "m").astype(float).rename("male")]
                  + ([dummies(df, "flt3")] if "flt3" in df else []), axis=1)
    out.append(Case("myeloid", "R", X, df.futime.to_numpy(dtype=float), df.death.to_numpy()))
    df = read("transplant").dropna(subset=["age", "sex", "abo"]).reset_index(drop=True)
    X = pd.concat([df[["age", "year"]].astype(float),
                   (df.sex == "m").astype(float).rename("male"), dummies(df, "abo")], axis=1)
    out.append(Case("transplant", "R", X, df.futime.to_numpy(dtype=float),
                    (df.event == "death").to_numpy(float)))
    df = read("udca1").dropna().reset_index(drop=True)
    X = pd.concat([df[["trt", "stage", "riskscore"]].astype(float),
                   np.log(df.bili).rename("log_bili")], axis=1)
    out.append(Case("udca1", "R", X, df.futime.to_numpy(dtype=float), df.status.to_numpy()))
    df = read("aml")
    out.append(Case("aml", "R", (df.x == "Maintained").astype(float).to_frame("maintained"),
                    df.time.to_numpy(), df.status.to_numpy()))
    df = read("kidney")
    X = pd.concat([df[["age", "sex"]].astype(float), dummies(df, "disease")], axis=1)
    out.append(Case("kidney (clusters)", "R", X, df.time.to_numpy(), df.status.to_numpy(),
                    groups=df.id.to_numpy()))
    df = read("rats")
    X = (df.rx == 1).astype(float).to_frame("rx")
    if df.sex.nunique() > 1:
        X["male"] = (df.sex == "m").astype(float)
    out.append(Case("rats (clusters)", "R", X, df.time.to_numpy(), df.status.to_numpy(),
                    groups=df.litter.to_numpy()))
    df = read("bladder2")
    X = pd.concat([(df.rx == 2).astype(float).rename("thiotepa"),
                   df[["number", "size"]].astype(float)], axis=1)
    out.append(Case("bladder2 (subjects)", "R", X, df.stop.to_numpy(), df.event.to_numpy(),
                    start=df.start.to_numpy(), id=df.id.to_numpy()))
    return out, f"R survival {version}"


def other_cases():
    out = []
    notes = []
    try:
        import statsmodels.api as sm
        h = sm.datasets.heart.load_pandas().data
        out.append(Case("heart", "statsmodels", h[["age"]].astype(float),
                        h.survival.to_numpy(), h.censors.to_numpy()))
    except Exception as exc:                               # noqa: BLE001
        notes.append(f"statsmodels heart skipped: {exc}")
    for name in ("metabric", "support", "gbsg", "whas"):
        try:
            df = ci.datasets.load_deepsurv(name, download=False)
        except Exception as exc:                           # noqa: BLE001
            notes.append(f"DeepSurv {name} skipped: {type(exc).__name__}")
            continue
        X = df.drop(columns=["duration", "event"]).astype(float)
        out.append(Case(f"{name}", "DeepSurv", X, df.duration.to_numpy(),
                        df.event.to_numpy()))
    return out, notes


# ----------------------------------------------------------------------------- analysis

@dataclass
class Result:
    name: str
    source: str
    unit: str
    n: int
    U: int
    d: int
    events: int
    ld_exact: np.ndarray
    ld_vif: np.ndarray
    ld_lc: np.ndarray
    ld_so2: np.ndarray
    err_vif: np.ndarray            # ||vif - exact||_H / ||exact||_H
    err_lc: np.ndarray
    err_so2: np.ndarray
    err_newton: np.ndarray
    scores: dict
    undefined: np.ndarray
    exact_nan: np.ndarray           # any coefficient of the refit NaN
    defined: np.ndarray             # finite refit and not undefined
    times: dict
    unstable: np.ndarray            # CoxAudit.unstable, as the API computes it
    size_exact: np.ndarray          # ||exact change||_H


def _qnorm(H, D):
    return np.sqrt(np.maximum(np.einsum("ui,ij,uj->u", D, H, D), 0.0))


def _rel(H, A, B):
    """||A - B||_H / ||B||_H row-wise (inf where A is not finite; 0 where both vanish)."""
    num = _qnorm(H, np.nan_to_num(A - B))
    den = _qnorm(H, np.nan_to_num(B))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den > 0, num / den, np.where(num > 0, np.inf, 0.0))
    return np.where(np.isfinite(A).all(axis=1), r, np.inf)


def step2(fit, units, delta, batch=64):
    """``||H^{-1} grad L_{-g}(theta_hat + delta_g)||_H / ||delta_g||_H``."""
    H = fit.information
    U = units.n_units
    out = np.empty(U)
    for b0 in range(0, U, batch):
        codes = np.arange(b0, min(b0 + batch, U))
        theta = fit.coef[None, :] + delta[codes]
        _, g, _ = fit.risk_sets.loss_grad_hess(theta, units.deletion(codes), hess=False)
        out[codes] = np.sqrt(np.einsum("bi,bi->b", g, np.linalg.solve(H, g.T).T))
    with np.errstate(divide="ignore", invalid="ignore"):
        return out / _qnorm(H, delta)


def analyse(case, newton_budget):
    times = {}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ci.ConvergenceWarning)
        fit = case.fit()
    units = resolve_units(fit, case.groups)
    U, d = units.n_units, fit.data.d
    H = fit.information
    times["fit"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    dv = -np.asarray(ci.vif(fit, groups=case.groups), dtype=np.float64) / U
    times["vif"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.LeaveOneOutWarning)
        ex = np.asarray(ci.exact_loo(fit, groups=case.groups, progress=False),
                        dtype=np.float64) - fit.coef
    times["exact"] = time.perf_counter() - t0
    nw = np.full_like(dv, np.nan)
    if U * fit.data.n * d <= newton_budget:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ci.LeaveOneOutWarning)
            nw = np.asarray(ci.newton_loo(fit, groups=case.groups), dtype=np.float64) - fit.coef
        times["newton"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    C = flag_estimates.information_split(fit, units)
    lc = flag_estimates.leverage_corrected(fit, units, dv, C=C)
    lev = flag_estimates.leverage(fit, units, C=C)
    undefined = flags.undefined_units(fit, units)
    times["flags"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    T = flag_estimates.third_derivative(fit)
    curv = flag_estimates.curvature_score(fit, units, dv, C=C, T=T)
    so2 = flag_estimates.second_order(fit, units, dv, C=C, T=T)
    times["curv"] = time.perf_counter() - t0
    api = CoxAudit(fit, case.groups).unstable(dv)      # the audit's own rule
    t0 = time.perf_counter()
    s2 = step2(fit, units, dv)
    times["step2"] = time.perf_counter() - t0

    exact_nan = ~np.isfinite(ex).all(axis=1)
    defined = ~exact_nan & ~undefined
    # J(theta_hat) in the refits' batch: both terms of each LD by the same kernel
    values = fit.objective(np.vstack([fit.coef[None, :],
                                      fit.coef + np.where(exact_nan[:, None], 0.0, ex)]))
    ld_exact = 2.0 * (values[1:] - values[0])
    ld_exact[exact_nan] = np.nan
    share = (np.diagonal(C, axis1=1, axis2=2) / np.diag(H)[None, :]).max(axis=1)
    scores = {"leverage": lev, "dis_lc": _rel(H, dv, lc), "dis_newton": _rel(H, dv, nw),
              "share": share, "step2": np.nan_to_num(s2, nan=np.inf),
              "curv": np.nan_to_num(curv, nan=np.inf)}
    if not np.isfinite(nw).any():
        scores["dis_newton"] = np.full(U, np.nan)
    return Result(case.name, case.source, case.unit, fit.data.n, U, d,
                  int(fit.data.event.sum()), ld_exact, _qnorm(H, dv) ** 2,
                  _qnorm(H, np.nan_to_num(lc)) ** 2, _qnorm(H, np.nan_to_num(so2)) ** 2,
                  _rel(H, dv, ex), _rel(H, lc, ex), _rel(H, so2, ex),
                  _rel(H, nw, ex), scores, undefined, exact_nan, defined, times, api,
                  _qnorm(H, np.nan_to_num(ex)))


def moved(r):
    """Units whose exact change is not negligible: ``||exact||_H > 1e-6 max ||exact||_H``
    (a row in no risk set changes nothing; its refit moves by rounding only, and 10% of
    that is no error)."""
    if not r.defined.any():
        return np.zeros(r.U, dtype=bool)
    return r.size_exact > 1e-6 * np.nanmax(r.size_exact[r.defined])


def resolvable(r):
    """Units whose exact LD is above rounding: ``LD > 1e-6 max LD`` (and :func:`moved`).
    LD is a difference of two log likelihoods of size ``|J|``, exact to about
    ``eps |J|`` only: far below the largest its ratio to the VIF's is noise (flchain,
    ``J = 17440``: a unit with ``||exact||_H^2 = 6.37e-11`` has an LD of 8.0e-11 by the
    one-problem kernel and 5.8e-11 by the batch kernel; flchain's "all" maximum was 2.16
    at 11c5482 and 1.26 at 84ca4ea, the latter this unit's)."""
    if not r.defined.any():
        return np.zeros(r.U, dtype=bool)
    return moved(r) & (r.ld_exact > 1e-6 * np.nanmax(r.ld_exact[r.defined]))


def bad_sets(r):
    """``bad``: VIF error above 10% of the exact change (H-norm), among units whose exact
    change is not negligible (:func:`moved`); ``bad2``: also exact LD above the median."""
    bad = r.defined & moved(r) & (r.err_vif > BAD)
    med = np.nanmedian(r.ld_exact[r.defined]) if r.defined.any() else np.inf
    bad2 = bad & (r.ld_exact > med)
    return bad, bad2


def prf(flag, bad, pop):
    f, b = flag[pop], bad[pop]
    tp = int((f & b).sum())
    return tp, int((f & ~b).sum()), int((~f & b).sum()), int(f.sum()), int(pop.sum())


def fmt_pct(num, den):
    return "-" if den == 0 else f"{100 * num / den:.0f}%"


def rule(r, curv=None, lev=None):
    """The rule of :meth:`CoxAudit.unstable` with thresholds ``curv`` and
    ``lev`` (default: the module's constants)."""
    curv = flags.UNSTABLE_CURVATURE if curv is None else curv
    lev = flags.UNSTABLE_LEVERAGE if lev is None else lev
    return (r.scores["curv"] > curv) | (r.scores["leverage"] > lev)


class _KnownDisplacements(AuditModel):
    """What ``verify`` reads of a model (an ``AuditModel``: the seam's defaults), for a
    data set whose exact displacements are known: "refitting" unit ``c`` returns the
    coefficient ``c + 1`` (status ``undefined`` where the exact refit is), and the
    objective there is half its exact displacement (0 at ``coef = 0``), so that ``verify``
    computes ``ld_exact`` back."""

    def __init__(self, ld_exact, defined):
        self.ld_exact, self.defined = ld_exact, defined
        self.unit_labels = np.arange(ld_exact.size)
        self.coef = np.zeros(1)

    def objective(self, thetas):
        code = np.asarray(thetas, dtype=np.float64)[:, 0].round().astype(int) - 1
        return np.where(code < 0, 0.0, self.ld_exact[np.maximum(code, 0)] / 2.0)

    def refit(self, codes):
        ok = self.defined[codes]
        theta = np.where(ok, codes + 1.0, np.nan)[:, None]
        return Refits(codes, theta, np.where(ok, "ok", "undefined"))


def simulate_auto(r, s, rank_by, flagged, k=10):
    """``method="auto"``'s refits, by the audit's own
    :func:`coxinfluence.audit.verification.verify` with safety factor ``s``, ranking by
    ``rank_by`` and fed this data set's exact displacements: returns (refits used,
    top-k set equal, top-k order equal, rule met)."""
    ld_rank = {"vif": r.ld_vif, "lc": r.ld_lc, "so2": r.ld_so2}[rank_by]
    must = np.zeros(r.U, dtype=bool)
    must[flagged] = True
    model = _KnownDisplacements(r.ld_exact, r.defined)
    v = verify(model, ld_rank, must, refit=model.refit, top=k, safety=s)
    pool = r.defined
    ex_all = np.where(pool, r.ld_exact, -np.inf)
    true_top = np.argsort(-ex_all, kind="stable")[:k]
    refit = np.zeros(r.U, dtype=bool)
    refit[v.refits.codes] = True
    got = np.argsort(-np.where(refit & pool, r.ld_exact, -np.inf), kind="stable")[:k]
    kk = min(k, int(pool.sum()))
    return (int(refit.sum()), set(true_top[:kk]) == set(got[:kk]),
            bool(np.array_equal(true_top[:kk], got[:kk])), v.rule_met)


# ------------------------------------------------------------------------------ tables

def candidate_rows(results, which_bad):
    rows = []
    for cand, ths in THRESHOLDS.items():
        for th in ths:
            tp = fp = fn = nf = npop = 0
            min_rec, n_sets = 1.0, 0
            for r in results:
                sc = r.scores[cand]
                if not np.isfinite(np.nan_to_num(sc, nan=np.nan, posinf=0)).any() \
                        and np.isnan(sc).all():
                    continue
                bad = bad_sets(r)[which_bad]
                a, b, c, f, p = prf(sc > th, bad, r.defined)
                tp, fp, fn, nf, npop = tp + a, fp + b, fn + c, nf + f, npop + p
                if a + c:
                    min_rec = min(min_rec, a / (a + c))
                n_sets += 1
            rows.append([cand, th, n_sets, tp + fn, fmt_pct(tp, tp + fn), f"{min_rec:.0%}",
                         fmt_pct(tp, tp + fp), fmt_pct(nf, npop)])
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="lifelines' data only")
    ap.add_argument("--newton-budget", type=float, default=1e8,
                    help="one-step Newton where U n d is at most this (its cost: U Hessians "
                    "of the deleted data)")
    ap.add_argument("--reuse", action="store_true",
                    help="tabulate the per-unit results cached by the last run "
                    "(out/flags_data/results.pkl) instead of recomputing them")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    cache = DATA / ("results_quick.pkl" if args.quick else "results.pkl")
    if args.reuse and cache.is_file():
        with open(cache, "rb") as fh:
            results, notes = pickle.load(fh)
        notes = notes + [f"per-unit results reused from {cache.name}"]
    else:
        results, notes = compute(args)
        DATA.mkdir(parents=True, exist_ok=True)
        with open(cache, "wb") as fh:
            pickle.dump((results, notes), fh)
    report(results, notes, t_start)


def compute(args):
    cases = lifelines_cases()
    notes = []
    if not args.quick:
        rc, note = r_cases()
        cases += rc
        notes.append(note)
        oc, onotes = other_cases()
        cases += oc
        notes += onotes
    results = []
    for case in cases:
        try:
            res = analyse(case, args.newton_budget)
        except Exception as exc:                           # noqa: BLE001
            notes.append(f"{case.name}: skipped ({type(exc).__name__}: {str(exc)[:120]})")
            continue
        results.append(res)
        print(f"  {case.name}: U={res.U} d={res.d} "
              + " ".join(f"{k}={v:.2f}s" for k, v in res.times.items()), file=sys.stderr)
    return results, notes


def report(results, notes, t_start):
    text = ["# When is the VIF off? Flags against exact leave-one-out refits", ""]
    text += [f"- {n}" for n in notes]
    text.append(f"- bad: ||vif - exact||_H > {BAD:.0%} ||exact||_H; bad2: bad and exact LD "
                "above the data set's median. Population: units with a finite refit that "
                "are not undefined, whose exact change is not negligible (||exact||_H above "
                "1e-6 of the data set's largest: a row in no risk set moves by rounding "
                "only).")
    same = all(np.array_equal(r.unstable, rule(r)) for r in results)
    summary = []
    for which, label in ((0, "bad"), (1, "bad2")):
        tp = fn = fp = nf = npop = 0
        for r in results:
            a, b, c, f, p = prf(rule(r), bad_sets(r)[which], r.defined)
            tp, fp, fn, nf, npop = tp + a, fp + b, fn + c, nf + f, npop + p
        summary.append(f"{label}: recall {tp}/{tp + fn} = {fmt_pct(tp, tp + fn)}, precision "
                       f"{fmt_pct(tp, tp + fp)}, flagged {nf}/{npop} = {100 * nf / npop:.1f}%")
    text.append(f"- chosen rule (CoxAudit.unstable: curv > "
                f"{flags.UNSTABLE_CURVATURE} or "
                f"leverage > {flags.UNSTABLE_LEVERAGE}), pooled over {len(results)} data sets: "
                + "; ".join(summary) + (" (the API's flags equal the rule on every data set)"
                                        if same else " (THE API'S FLAGS DIFFER FROM THE RULE)"))
    text.append("")

    # per data set overview
    rows = []
    for r in results:
        bad, bad2 = bad_sets(r)
        fl = rule(r)
        a, b, c, f, p = prf(fl, bad, r.defined)
        a2, _, c2, _, _ = prf(fl, bad2, r.defined)
        pop = r.defined & moved(r)
        ev = r.err_vif[pop]
        el = r.err_lc[pop]
        es = r.err_so2[pop]
        en = r.err_newton[pop]
        missed = r.err_vif[r.defined & moved(r) & ~fl]
        rows.append([r.name, r.source, r.unit, r.U, r.d, r.events, int(r.undefined.sum()),
                     int(bad.sum()), int(bad2.sum()),
                     f"{np.median(ev):.3f}", f"{ev.max():.2f}", f"{np.nanmax(el):.2f}",
                     f"{np.nanmax(es):.2f}",
                     "-" if np.isnan(en).all() or np.isinf(en).all()
                     else f"{np.nanmax(en[np.isfinite(en)]):.2f}",
                     f"{a}/{a + c}", f"{a2}/{a2 + c2}", fmt_pct(f, p),
                     f"{missed.max():.3f}" if missed.size else "-"])
    text.append("## Per data set: VIF error (H-norm, relative to the exact change) and the "
                f"chosen rule (curv > {flags.UNSTABLE_CURVATURE} or leverage > "
                f"{flags.UNSTABLE_LEVERAGE})")
    text.append("")
    text.append(markdown_table(
        ["data", "source", "unit", "U", "d", "events", "undefined", "bad", "bad2",
         "median err VIF", "max err VIF", "max err LC", "max err SO2", "max err Newton",
         "rule recall bad", "rule recall bad2", "flagged", "max err VIF unflagged"], rows))
    text.append("")

    for which, label in ((0, "bad"), (1, "bad2")):
        text.append(f"## Pooled over data sets: candidates against '{label}'")
        text.append("")
        text.append(markdown_table(["candidate", "threshold", "data sets", f"{label} units",
                                    "recall (pooled)", "recall (worst data set)",
                                    "precision", "flagged"],
                                   candidate_rows(results, which)))
        text.append("")

    # combined rules
    rows = []
    for curv_t in THRESHOLDS["curv"]:
        for lev_t in (0.05, 0.1, 0.2, np.inf):
            for which in (0, 1):
                tp = fp = fn = nf = npop = 0
                worst = 1.0
                for r in results:
                    a, b, c, f, p = prf(rule(r, curv_t, lev_t), bad_sets(r)[which], r.defined)
                    tp, fp, fn, nf, npop = tp + a, fp + b, fn + c, nf + f, npop + p
                    if a + c:
                        worst = min(worst, a / (a + c))
                rows.append([curv_t, lev_t, ["bad", "bad2"][which], tp + fn,
                             fmt_pct(tp, tp + fn), f"{worst:.0%}", fmt_pct(tp, tp + fp),
                             fmt_pct(nf, npop)])
    text.append("## Combined rule: curv > a or leverage > b")
    text.append("")
    text.append(markdown_table(["curv >", "leverage >", "against", "bad units",
                                "recall (pooled)", "recall (worst)", "precision", "flagged"],
                               rows))
    text.append("")

    # undefined units
    rows = []
    for r in results:
        u = r.undefined
        rows.append([r.name, int(u.sum()), int((u & r.exact_nan).sum()),
                     int((u & ~r.exact_nan).sum()), int((~u & r.exact_nan).sum())])
    rows = [row for row in rows if row[1] or row[4]]
    text.append("## Undefined units against NaN refits (exact_loo)")
    text.append("")
    text.append(markdown_table(["data", "undefined", "undefined and NaN refit",
                                "undefined but finite refit", "NaN refit, not undefined"],
                               rows) if rows else "No undefined units and no NaN refits.")
    text.append("")

    # safety factor
    rows = []
    approx = {"VIF": "ld_vif", "LC": "ld_lc", "SO2": "ld_so2"}
    pooled = {k: ([], [], []) for k in approx}
    for r in results:
        keep = r.defined & resolvable(r) & ~rule(r) & (r.ld_vif > 0)
        if not keep.any():
            rows.append([r.name, 0] + ["-"] * (3 * len(approx)))
            continue
        ld = r.ld_exact[r.defined]
        masks = (keep, keep & (r.ld_exact > np.nanmedian(ld)),
                 keep & (r.ld_exact >= np.nanquantile(ld, 0.9)))
        row = [r.name, int(keep.sum())]
        for k, attr in approx.items():
            for i, m in enumerate(masks):
                ratio = r.ld_exact[m] / getattr(r, attr)[m]
                pooled[k][i].append(ratio)
                row.append(f"{ratio.max():.3f}" if ratio.size else "-")
        rows.append(row)
    row = ["**pooled: max**", sum(p.size for p in pooled["VIF"][0])]
    row99 = ["**pooled: 99th percentile**", ""]
    for k in approx:
        for i in range(3):
            p = np.concatenate(pooled[k][i])
            row.append(f"{p.max():.3f}")
            row99.append(f"{np.quantile(p, 0.99):.3f}")
    rows += [row, row99]
    text.append("## Safety factor: exact LD / approximate LD over units not flagged, defined, "
                "with an exact LD above rounding (> 1e-6 x the largest); max over all of "
                "them, over those whose exact "
                "LD is above the data set's median, and over its top 10%")
    text.append("")
    header = ["data", "units"]
    for k in approx:
        header += [f"exact/{k} all", f"exact/{k} > median", f"exact/{k} top 10%"]
    text.append(markdown_table(header, rows))
    text.append("")

    # simulation of method="auto"
    rows = []
    big_sets = [r for r in results if r.U >= 500]
    for rank_by, with_flags in (("vif", True), ("lc", True), ("so2", True), ("vif", False)):
        for s in S_GRID:
            ok_set = ok_order = met = 0
            used, used_big = [], []
            fails, unmet = [], []
            for r in results:
                fl = np.flatnonzero(rule(r) | r.undefined) if with_flags else []
                n_used, same, same_order, m = simulate_auto(r, s, rank_by, fl)
                ok_set += same
                ok_order += same_order
                met += m
                used.append(n_used)
                if r.U >= 500:
                    used_big.append(n_used / r.U)
                if not same:
                    fails.append(r.name)
                if not m:
                    unmet.append(r.name)
            rows.append([rank_by, "yes" if with_flags else "no", s,
                         f"{ok_set}/{len(results)}", f"{ok_order}/{len(results)}",
                         f"{met}/{len(results)}", f"{np.median(used):.0f}",
                         f"{100 * np.median(used_big):.1f}%" if used_big else "-",
                         ", ".join(fails) or "-", ", ".join(unmet) or "-"])
    text.append("## method='auto' simulated: the audit's own `verify` with safety factor s, "
                "fed the exact displacements (first round: every flagged and undefined unit "
                "and the others with s * LD >= the 10th largest LD, at least "
                f"{MIN_REFITS} in all; then doubling until s * max LD(not refitted) < 10th "
                f"exact LD; at most max(60, 8% of units), e.g. {refit_cap(1000)} of 1000)")
    text.append("")
    text.append(markdown_table(["rank by", "flags refitted", "s", "top-10 set exact",
                                "top-10 order exact", "rule met", "median refits",
                                f"median share refitted (U >= 500, {len(big_sets)} sets)",
                                "top 10 missed", "rule not met (cap)"], rows))
    text.append("")
    total = time.perf_counter() - t_start
    text.append(f"Total run time {total:.0f} s on {len(results)} data sets.")
    out = "\n".join(text)
    write_result("bench_flags.md", out)


if __name__ == "__main__":
    main()

"""Golden fixtures of R's residuals.coxph and cox.zph (tests/r/residuals_reference.R,
written into tests/fixtures/r_residuals/): loading them and fitting the same models."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

import coxinfluence as ci

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures" / "r_residuals"
SCRIPT = HERE / "r" / "residuals_reference.R"


def run_r(outdir, seed=None, script=SCRIPT.name):
    """Run an R script of tests/r/ into ``outdir`` (live comparison)."""
    cmd = [shutil.which("Rscript"), str(HERE / "r" / script), str(outdir)]
    if seed is not None:
        cmd.append(str(seed))
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)


def load_cases(folder=FIXTURES):
    folder = Path(folder)
    cases = json.loads((folder / "cases.json").read_text())
    data = {p.stem[5:]: pd.read_csv(p) for p in folder.glob("data_*.csv")}
    refs = {}
    for cs in cases:
        with gzip.open(folder / f"case_{cs['case']}.json.gz", "rt") as fh:
            refs[cs["case"]] = json.load(fh)
    return cases, data, refs


def as_list(v):
    return [v] if isinstance(v, str) else list(v)


def case_inputs(cs, data):
    """The keyword arguments of ``ci.fit_cox`` for a case, and its data frame."""
    d = data[cs["dataset"]]
    cov = as_list(cs["covariates"])
    kw = dict(ties=cs["ties"])
    if cs["start"]:
        kw.update(time=d["stop"], event=d["event"], start=d[cs["start"]])
    else:
        kw.update(time=d["time"], event=d["status"])
    if cs["weights"]:
        kw["weights"] = d["w"]
    if cs["strata"]:
        kw["strata"] = d[cs["strata"]]
    if cs["id"]:
        kw["id"] = d[cs["id"]]
    return d[cov], kw, d


def fit_case(cs, data):
    X, kw, _ = case_inputs(cs, data)
    return ci.fit_cox(X, **kw)


def matrix(values):
    """R's JSON (row-major; a vector for one column) as a 2-D float array."""
    a = np.array(values, dtype=np.float64)
    return a[:, None] if a.ndim == 1 else a


def close(ours, ref, rtol=1e-8, atol_scale=1e-8):
    """Agreement to ``rtol`` relative, with an absolute floor of ``atol_scale`` times the
    reference's largest magnitude (for entries that are 0 up to rounding)."""
    ours, ref = np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    scale = max(np.nanmax(np.abs(ref)), 1e-300) if ref.size else 1.0
    np.testing.assert_allclose(ours, ref, rtol=rtol, atol=atol_scale * scale)


KINDS = ("martingale", "deviance", "score", "schoenfeld", "dfbeta", "dfbetas", "scaledsch",
         "partial")


def check_residuals(fit, ref, cs, rtol=1e-8):
    """Every residual type of R's fixture ``ref`` against ``ci.residuals(fit)``."""
    for kind in KINDS:
        ours = ci.residuals(fit, kind=kind).to_numpy()
        R = matrix(ref["residuals"][kind])
        close(ours.reshape(R.shape), R, rtol)
    times = ci.residuals(fit, kind="schoenfeld").index.to_numpy()
    np.testing.assert_array_equal(times, np.asarray(ref["schoenfeld_time"], dtype=float))
    for kind in ("martingale", "score"):
        ours = ci.residuals(fit, kind=kind, weighted=True).to_numpy()
        R = matrix(ref["weighted"][kind])
        close(ours.reshape(R.shape), R, rtol)
    if cs["id"]:
        labels = np.asarray(ref["collapsed_labels"])
        for kind, values in ref["collapsed"].items():
            out = ci.residuals(fit, kind=kind, collapse=True)
            np.testing.assert_array_equal(out.index.to_numpy(), labels)
            R = matrix(values)
            close(out.to_numpy().reshape(R.shape), R, rtol)


def check_ph_test(fit, ref, cs, rtol=1e-8):
    """cox.zph's table (per covariate; per term where the case groups columns), x, time
    and scaled residuals for the four transforms."""
    for tr, z in ref["zph"].items():
        test = ci.ph_test(fit, transform=tr, terms=False)
        close(test.table.to_numpy(), matrix(z["table_cols"]), rtol, atol_scale=0)
        assert list(test.table.index) == list(as_list(cs["covariates"])) + ["GLOBAL"]
        close(test.x, np.asarray(z["x"], dtype=float), rtol)
        np.testing.assert_array_equal(test.time, np.asarray(z["time"], dtype=float))
        close(test.y.to_numpy(), matrix(z["y"]), rtol)
        if len(cs["terms"]) < len(as_list(cs["covariates"])):
            terms = {k: as_list(v) for k, v in cs["terms"].items()}
            grouped = ci.ph_test(fit, transform=tr, terms=terms)
            assert list(grouped.table.index) == z["rows"]
            close(grouped.table.to_numpy(), matrix(z["table"]), rtol, atol_scale=0)


AFT_KINDS = ("response", "deviance", "working", "dfbeta", "dfbetas", "ldcase", "ldresp",
             "ldshape")
#: kinds that use an interval row's derivative in log(sigma), which survival 3.5.3's
#: residuals.survreg has with the wrong sign (tests/test_aft.py)
SCALE_KINDS = ("dfbeta", "dfbetas", "ldcase", "ldresp", "ldshape")


def load_aft_cases(folder=FIXTURES):
    folder = Path(folder)
    cases = json.loads((folder / "aft_cases.json").read_text())
    data = {p.stem[9:]: pd.read_csv(p) for p in folder.glob("aft_data_*.csv")}
    refs = {}
    for cs in cases:
        with gzip.open(folder / f"aft_case_{cs['case']}.json.gz", "rt") as fh:
            refs[cs["case"]] = json.load(fh)
    return cases, data, refs


def fit_aft_case(cs, data):
    d = data[cs["dataset"]]
    X = d[as_list(cs["covariates"])]
    kw = dict(weights=d["w"] if cs["weights"] else None,
              strata=d[cs["strata"]] if cs["strata"] else None)
    if cs["dataset"] == "interval":
        return ci.fit_aft(X, d["lower"], dist=cs["dist"], upper=d["upper"], **kw)
    return ci.fit_aft(X, d["time"], d["status"], cs["dist"], **kw)


def check_aft_residuals(fit, ref, cs, data, rtol=1e-8):
    """Every type of residuals.survreg; on interval rows only the kinds that do not use
    the scale derivative (module constant SCALE_KINDS)."""
    rows = np.asarray(ref["kind"]) != 3
    for kind in AFT_KINDS:
        ours = ci.residuals(fit, kind=kind).to_numpy()
        R = matrix(ref["residuals"][kind])
        ours = ours.reshape(R.shape)
        if kind in SCALE_KINDS:
            ours, R = ours[rows], R[rows]
        close(ours, R, rtol)
    for kind, values in (ref["weighted"] or {}).items():
        R = matrix(values)
        close(ci.residuals(fit, kind=kind, weighted=True).to_numpy().reshape(R.shape), R, rtol)
    if ref["collapsed"]:
        d = data[cs["dataset"]]
        out = ci.residuals(fit, kind="dfbeta", collapse=d["inst"])
        np.testing.assert_array_equal(out.index.to_numpy(), ref["collapsed_labels"])
        close(out.to_numpy(), matrix(ref["collapsed"]["dfbeta"]), rtol)

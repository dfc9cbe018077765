"""Fine-Gray residuals against cmprsk::crr (golden fixtures of
tests/r/residuals_fine_gray_reference.R and a live run): crr's ``fit$res`` and its
sandwich ``fit$var`` (the sum of the dfbeta outer products); dfbeta against exact
leave-one-out refits to first order and against the audit's Reid IF."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from r_residuals import FIXTURES, close, run_r

import coxinfluence as ci


def load(folder=FIXTURES):
    folder = Path(folder)
    cases = json.loads((folder / "fg_cases.json").read_text())
    data = {p.stem[8:]: pd.read_csv(p) for p in folder.glob("fg_data_*.csv")}
    refs = {cs["case"]: json.loads((folder / f"fg_case_{cs['case']}.json").read_text())
            for cs in cases}
    return cases, data, refs


def fit_case(cs, data):
    d = data[cs["dataset"]]
    return ci.fit_fine_gray(d[cs["covariates"]], d["time"], d["status"], cause=cs["cause"],
                            cengroup=d[cs["cengroup"]] if cs["cengroup"] else None)


def check(fit, ref):
    close(fit.coef, ref["coef"], 1e-9, atol_scale=0)
    res = ci.residuals(fit, kind="schoenfeld")
    close(res.to_numpy(), np.asarray(ref["res"], dtype=float))
    np.testing.assert_array_equal(res.index.to_numpy(), np.asarray(ref["uftime"], dtype=float))
    D = ci.residuals(fit, kind="dfbeta").to_numpy()
    close(D.T @ D, np.asarray(ref["var"], dtype=float))


CASES, DATA, REFS = load()


@pytest.mark.parametrize("cs", CASES, ids=[cs["case"] for cs in CASES])
def test_schoenfeld_and_dfbeta_equal_crr(cs):
    check(fit_case(cs, DATA), REFS[cs["case"]])


def test_the_fixtures_have_ties_across_kinds_and_censoring_groups():
    d = DATA["sim"]
    assert d["time"].duplicated().sum() > 50
    assert d.groupby("time")["status"].nunique().max() == 3
    assert d["cg"].nunique() == 2


def test_dfbeta_is_the_audits_reid_change_and_close_to_exact_refits():
    cs = CASES[-1]
    fit = fit_case(cs, DATA)
    D = ci.residuals(fit, kind="dfbeta")
    np.testing.assert_allclose(D.to_numpy(), np.asarray(ci.reid_influence(fit)) / fit.n,
                               rtol=1e-10, atol=1e-14)
    top = np.argsort(-np.abs(D.to_numpy()).sum(axis=1))[:5]
    d = DATA["sim"]
    loo = np.array([ci.fit_fine_gray(d[["x1", "x2"]].drop(index=i), d["time"].drop(index=i),
                                     d["status"].drop(index=i), cause=1,
                                     cengroup=d["cg"].drop(index=i)).coef for i in top])
    change = fit.coef - loo                     # theta_hat - theta_hat_{-i}, refitted
    np.testing.assert_allclose(D.to_numpy()[top], change, rtol=0.15, atol=2e-3)


def test_score_is_per_unit_of_weight_and_weighted_on_request():
    cs = CASES[0]
    d = DATA["pbc"]
    w = np.where(np.arange(len(d)) % 3 == 0, 2.0, 1.0)
    fit = ci.fit_fine_gray(d[cs["covariates"]], d["time"], d["status"], cause=cs["cause"],
                           weights=w)
    score = ci.residuals(fit, kind="score")
    weighted = ci.residuals(fit, kind="score", weighted=True)
    np.testing.assert_allclose(weighted.to_numpy(), score.to_numpy() * w[:, None])
    # the weighted scores sum to the score, zero at the fit; so do crr's res rows
    np.testing.assert_allclose(weighted.sum().to_numpy(), 0, atol=1e-8)
    np.testing.assert_allclose(ci.residuals(fit, kind="schoenfeld").sum().to_numpy(),
                               -fit.gradient, atol=1e-10)


def test_efron_and_strata_residuals_sum_to_the_score():
    d = DATA["sim"]
    fit = ci.fit_fine_gray(d[["x1", "x2"]], d["time"], d["status"], cause=1,
                           strata=d["cg"], ties="efron")
    res = ci.residuals(fit, kind="schoenfeld")
    np.testing.assert_allclose(res.sum().to_numpy(), -fit.gradient, atol=1e-10)
    n_times = sum(d.loc[(d["status"] == 1) & (d["cg"] == g), "time"].nunique()
                  for g in (1, 2))
    assert len(res) == n_times


def test_collapse_and_kinds_refused():
    fit = fit_case(CASES[-1], DATA)
    labels = np.arange(fit.n) % 7
    out = ci.residuals(fit, kind="dfbeta", collapse=labels)
    full = ci.residuals(fit, kind="dfbeta")
    np.testing.assert_allclose(out.to_numpy(), full.groupby(labels).sum().to_numpy())
    with pytest.raises(ci.InputError, match="'schoenfeld', 'score', 'dfbeta'"):
        ci.residuals(fit, kind="martingale")
    with pytest.raises(ci.InputError, match="one row per failure time"):
        ci.residuals(fit, kind="schoenfeld", collapse=labels)


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_live_against_crr(tmp_path):
    run_r(tmp_path, seed=3, script="residuals_fine_gray_reference.R")
    cases, data, refs = load(tmp_path)
    for cs in cases:
        check(fit_case(cs, data), refs[cs["case"]])

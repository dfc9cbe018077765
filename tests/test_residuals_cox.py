"""Cox residuals against R's residuals.coxph (golden fixtures of tests/r/residuals_reference.R
and a live run), lifelines and statsmodels fits of the same data in, R's numbers out."""
from __future__ import annotations

import contextlib
import shutil

import numpy as np
import pandas as pd
import pytest
from r_residuals import (
    as_list,
    case_inputs,
    check_residuals,
    close,
    fit_case,
    load_cases,
    matrix,
    run_r,
)

import coxinfluence as ci

CASES, DATA, REFS = load_cases()
BY_NAME = {cs["case"]: cs for cs in CASES}


@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_kind_equals_r(name):
    cs = BY_NAME[name]
    fit = fit_case(cs, DATA)
    ref = REFS[name]
    close(fit.coef, ref["coef"], 1e-9, atol_scale=0)
    check_residuals(fit, ref, cs)


def test_the_fixtures_cover_ties_strata_weights_and_counting_process_data():
    assert {cs["ties"] for cs in CASES} == {"efron", "breslow"}
    for what in ("strata", "start", "id"):
        assert {cs["ties"] for cs in CASES if cs[what]} == {"efron", "breslow"} or what == "id"
    assert any(cs["weights"] and cs["start"] for cs in CASES)
    assert any(cs["weights"] and cs["strata"] for cs in CASES)
    lung = DATA["lung"]
    assert lung.duplicated(["time"]).sum() > 10           # tied times


def test_weighted_schoenfeld_multiplies_each_event_by_its_own_weight():
    """R 3.5's ``residuals(fit, "schoenfeld", weighted = TRUE)`` multiplies the sorted
    events by ``weights[deaths]``, the *unsorted* weights at the sorted positions (a
    misalignment: the fixture shows it). Ours uses each event's own weight."""
    cs = BY_NAME["lung_w_efron"]
    fit = fit_case(cs, DATA)
    ref = REFS["lung_w_efron"]
    d = DATA["lung"]
    ours = ci.residuals(fit, kind="schoenfeld", weighted=True)
    raw = ci.residuals(fit, kind="schoenfeld")
    order = np.lexsort((np.arange(len(d)), d["time"]))
    ev = order[d["status"].to_numpy()[order] == 1]
    close(ours.to_numpy(), raw.to_numpy() * d["w"].to_numpy()[ev][:, None])
    r_order = np.lexsort((np.arange(len(d)), -d["status"].to_numpy(), d["time"]))
    mask = d["status"].to_numpy()[r_order] == 1      # R's deaths, in its sorted order
    close(matrix(ref["weighted"]["schoenfeld"]),
          matrix(ref["residuals"]["schoenfeld"]) * d["w"].to_numpy()[mask][:, None])


def test_results_keep_the_callers_index_and_order():
    cs = BY_NAME["pbc_w_efron"]
    X, kw, d = case_inputs(cs, DATA)
    rng = np.random.default_rng(3)
    perm = rng.permutation(len(d))
    labels = pd.Index([f"p{i}" for i in range(len(d))])
    shuffled = {k: (v.iloc[perm].set_axis(labels[perm]) if isinstance(v, pd.Series) else v)
                for k, v in kw.items()}
    fit = ci.fit_cox(X.iloc[perm].set_axis(labels[perm]), **shuffled)
    ref = REFS["pbc_w_efron"]
    for kind in ("martingale", "dfbeta", "partial"):
        out = ci.residuals(fit, kind=kind)
        assert out.index.equals(labels[perm])
        R = matrix(ref["residuals"][kind])
        close(out.loc[labels].to_numpy().reshape(R.shape), R)


def test_collapse_by_labels_equals_r_collapse_by_id():
    cs = BY_NAME["heart_efron"]
    X, kw, d = case_inputs(cs, DATA)
    kw.pop("id")
    fit = ci.fit_cox(X, **kw)
    ref = REFS["heart_efron"]
    for kind in ("martingale", "deviance", "dfbeta"):
        out = ci.residuals(fit, kind=kind, collapse=d["id"].to_numpy())
        R = matrix(ref["collapsed"][kind])
        close(out.to_numpy().reshape(R.shape), R)


# ------------------------------------------------------------------ other libraries in

def test_lifelines_coxph_fitter_gives_r_numbers():
    from lifelines import CoxPHFitter
    for name in ("lung_w_efron", "veteran_strata_efron"):
        cs = BY_NAME[name]
        d = DATA[cs["dataset"]]
        cols = as_list(cs["covariates"]) + ["time", "status"]
        kw = {}
        if cs["weights"]:
            cols.append("w")
            kw["weights_col"] = "w"
        if cs["strata"]:
            cols.append(cs["strata"])
            kw["strata"] = [cs["strata"]]
        df = d[cols]
        with pytest.warns(Warning) if cs["weights"] else contextlib.nullcontext():
            cph = CoxPHFitter().fit(df, "time", "status", **kw)
        ref = REFS[name]
        for kind in ("martingale", "deviance", "score", "schoenfeld", "scaledsch", "dfbeta",
                     "dfbetas", "partial"):
            R = matrix(ref["residuals"][kind])
            out = ci.residuals(cph, df, kind=kind).to_numpy()
            close(out.reshape(R.shape), R, 1e-7)


def test_lifelines_time_varying_fitter_gives_r_numbers():
    from lifelines import CoxTimeVaryingFitter
    d = DATA["heart"]
    cs = BY_NAME["heart_efron"]
    df = d[["id", "start", "stop", "event"] + as_list(cs["covariates"])]
    ctv = CoxTimeVaryingFitter().fit(df, id_col="id", event_col="event", start_col="start",
                                     stop_col="stop")
    ref = REFS["heart_efron"]
    for kind in ("martingale", "score", "schoenfeld", "dfbeta"):
        R = matrix(ref["residuals"][kind])
        close(ci.residuals(ctv, df, kind=kind).to_numpy().reshape(R.shape), R, 1e-7)
    R = matrix(ref["collapsed"]["dfbeta"])
    close(ci.residuals(ctv, df, kind="dfbeta", collapse=True).to_numpy(), R, 1e-7)


def test_statsmodels_phreg_gives_r_numbers():
    sm = pytest.importorskip("statsmodels.api")
    for name in ("lung_breslow", "lung_efron"):
        cs = BY_NAME[name]
        d = DATA["lung"]
        X = d[as_list(cs["covariates"])]
        res = sm.PHReg(d["time"], X, status=d["status"], ties=cs["ties"]).fit()
        ref = REFS[name]
        for kind in ("martingale", "score", "schoenfeld", "dfbetas"):
            R = matrix(ref["residuals"][kind])
            close(ci.residuals(res, kind=kind).to_numpy().reshape(R.shape), R, 1e-7)


# ------------------------------------------------------------------ bad input

def _lung_fit():
    return fit_case(BY_NAME["lung_efron"], DATA)


def test_unknown_kind_names_the_valid_ones():
    with pytest.raises(ci.InputError, match="'martingale', 'deviance', 'score'"):
        ci.residuals(_lung_fit(), kind="pearson")


def test_collapse_needs_subjects_or_labels():
    with pytest.raises(ci.InputError, match="id="):
        ci.residuals(_lung_fit(), kind="martingale", collapse=True)
    with pytest.raises(ci.InputError, match="one label per row"):
        ci.residuals(_lung_fit(), kind="martingale", collapse=[1, 2, 3])


def test_schoenfeld_is_not_collapsed():
    with pytest.raises(ci.InputError, match="one row per event"):
        ci.residuals(_lung_fit(), kind="schoenfeld", collapse=np.arange(_lung_fit().n))


def test_data_is_refused_for_our_own_fits():
    with pytest.raises(ci.InputError, match="keeps its own"):
        ci.residuals(_lung_fit(), DATA["lung"], kind="score")


# ------------------------------------------------------------------ live R

@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_live_against_r(tmp_path):
    run_r(tmp_path, seed=11)
    cases, data, refs = load_cases(tmp_path)
    for cs in cases:
        fit = fit_case(cs, data)
        check_residuals(fit, refs[cs["case"]], cs)


def test_collapse_true_uses_a_lifelines_cluster_col():
    from lifelines import CoxPHFitter
    d = DATA["lung"]
    df = d[["age", "sex", "ph.ecog", "wt.loss", "time", "status", "inst"]]
    cph = CoxPHFitter().fit(df, "time", "status", cluster_col="inst")
    by_cluster = ci.residuals(cph, df, kind="dfbeta", collapse=True)
    by_labels = ci.residuals(cph, df, kind="dfbeta", collapse=d["inst"])
    assert list(by_cluster.index) == sorted(d["inst"].unique())
    np.testing.assert_allclose(by_cluster.to_numpy(), by_labels.to_numpy(), rtol=1e-12)
    # per row the lifelines model gives R's numbers (cluster_col changes only the SEs)
    R = matrix(REFS["lung_efron"]["residuals"]["dfbeta"])
    close(ci.residuals(cph, df, kind="dfbeta").to_numpy(), R, 1e-7)


def test_scikit_survival_model_takes_its_y_option():
    sksurv = pytest.importorskip("sksurv.linear_model")
    from sksurv.util import Surv
    cs = BY_NAME["lung_breslow"]
    d = DATA["lung"]
    X = d[as_list(cs["covariates"])]
    y = Surv.from_arrays(d["status"].astype(bool), d["time"])
    est = sksurv.CoxPHSurvivalAnalysis(ties="breslow", tol=1e-12, n_iter=200).fit(X, y)
    R = matrix(REFS["lung_breslow"]["residuals"]["score"])
    close(ci.residuals(est, X, kind="score", y=y).to_numpy(), R, 1e-7)

"""Subjects of an AFT model (``ci.fit_aft(..., id=)``, issue 26): a subject's rows are one
unit of the audit, deleted together.

Oracles:

- R's ``survreg`` (golden fixtures of ``tests/r/aft_subjects_reference.R`` in
  ``tests/fixtures/r_aft_subjects``; R 4.2.2, survival 3.5.3; the live comparison reruns
  the script on a fresh simulated design where Rscript is installed): R's refits without
  every row of a subject, ``residuals(fit, "dfbeta", collapse = id, weighted = TRUE)``
  (minus our per-subject change) and ``vcov(survreg(..., cluster = id))`` (our robust
  covariance, which clusters on ``id`` by default), on R's ``lung`` with artificial
  subjects of 2-3 rows and a random design of subjects with 2-3 rows.
- Literal deletion: ``ci.fit_aft`` of the data without the subject's rows, on designs R's
  ``survreg`` cannot fit (delayed entry ``(entry, time]`` rows, interval censoring).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_aft import reference, rel  # R's long-format fixtures; relative error

import coxinfluence as ci
from coxinfluence.data.deletion import Deletion
from coxinfluence.influence_functions.aft_audit import AFTAudit

HERE = Path(__file__).parent
SCRIPT = HERE / "r" / "aft_subjects_reference.R"
GOLDEN = HERE / "fixtures" / "r_aft_subjects"
DISTS = ("weibull", "exponential", "lognormal", "loglogistic")


def load(folder):
    folder = Path(folder)
    cases = pd.read_csv(folder / "cases.csv").set_index("case")
    ref = pd.read_csv(folder / "reference.csv")
    data = {name: pd.read_csv(folder / f"data_{name}.csv") for name in ("lung", "random")}
    return cases, ref, data


def fit_case(row, data):
    d = data[row["dataset"]]
    weights = d["w"] if bool(row["weights"]) else None
    return ci.fit_aft(d[row["covariates"].split("+")], d["time"], d["status"], row["dist"],
                      weights=weights, id=d["id"])


def check_case(case, cases, ref, data):
    """Our subject audit of one R case: the fit, the robust covariance clustered on id,
    the collapsed dfbeta and R's refits without each of 5 subjects."""
    fit = fit_case(cases.loc[case], data)
    assert fit.converged
    assert rel(fit.coef, reference(ref, case, "coef")[0]) < 1e-8
    assert rel(fit.var, reference(ref, case, "var")) < 1e-8
    reid = ci.influence(fit, method="reid", robust=True)
    labels = reference(ref, case, "id_labels")[:, 0]
    np.testing.assert_array_equal(reid.theta_change.index.to_numpy(), labels)
    assert reid.theta_change.index.name == "id"
    # R's dfbeta collapsed per subject, weighted = TRUE: theta_hat - theta_{-g} to first
    # order, the negative of our change
    assert rel(reid.theta_change, -reference(ref, case, "dfbeta_id_w")) < 1e-8
    robust_var = reference(ref, case, "robust_var")
    if not bool(cases.loc[case, "weights"]):
        assert rel(fit.robust_covariance(), robust_var) < 1e-8
        assert rel(reid.target_se, np.sqrt(np.diag(robust_var))) < 1e-8
    lso = reference(ref, case, "lso_labels")[:, 0]
    exact = ci.influence(fit, method="exact")
    assert rel(exact.theta_change.loc[lso], reference(ref, case, "lso")
               - reference(ref, case, "coef")[0]) < 1e-8
    return fit, reid


CASES, REF, DATA = load(GOLDEN)


@pytest.mark.parametrize("case", list(CASES.index))
def test_golden_subjects_against_survreg(case):
    check_case(case, CASES, REF, DATA)


def test_r_collapsed_dfbeta_and_robust_variance_are_per_unit_of_case_weight():
    """R's ``residuals(fit, "dfbeta", collapse = id)`` sums each row's dfbeta without its
    case weight: with weights it is not the subject's change (``weighted = TRUE`` is);
    with weights 1 both are. survival 3.5.3's ``survreg(..., cluster = id)`` builds its
    robust variance from that unweighted sum, ``crossprod(rowsum(dfbeta, id))``; ours is
    the sandwich of the changes, ``D' D`` with ``D = rowsum(w * dfbeta, id)`` (coxph's
    convention: the weights as sampling weights), which is unchanged when every weight
    is multiplied by a constant, where R's is divided by its square (therneau/survival
    issue 287)."""
    case = "lung_weibull_w"
    fit, reid = check_case(case, CASES, REF, DATA)
    unweighted = reference(REF, case, "dfbeta_id")
    assert rel(reid.theta_change, -unweighted) > 0.1
    labels = pd.Index(reference(REF, case, "id_labels")[:, 0])
    codes = labels.get_indexer(DATA["lung"]["id"])
    per_unit = np.zeros_like(unweighted)
    np.add.at(per_unit, codes, fit.dfbeta())
    assert rel(per_unit, unweighted) < 1e-8
    robust_var = reference(REF, case, "robust_var")
    assert rel(per_unit.T @ per_unit, robust_var) < 1e-8
    assert rel(fit.robust_covariance(), robust_var) > 0.5
    D = reid.theta_change.to_numpy()
    assert rel(fit.robust_covariance(), D.T @ D) < 1e-12
    d = DATA["lung"]
    times5 = ci.fit_aft(d[["age", "sex", "ph.ecog"]], d["time"], d["status"],
                        weights=5 * d["w"], id=d["id"])
    assert rel(times5.robust_covariance(), fit.robust_covariance()) < 1e-8
    plain = "lung_weibull_"
    assert rel(reference(REF, plain, "dfbeta_id"), reference(REF, plain, "dfbeta_id_w")) == 0


def test_golden_subjects_have_several_rows_and_unsorted_labels():
    for d in DATA.values():
        rows = d.groupby("id").size()
        assert rows.min() >= 2 and rows.max() <= 4
        assert not d["id"].is_monotonic_increasing


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: live comparison with R's survreg skipped "
                           "(install r-base-core r-cran-survival)")
def test_live_subjects_against_r(tmp_path):
    subprocess.run([shutil.which("Rscript"), str(SCRIPT), str(tmp_path), "11"], check=True,
                   capture_output=True, text=True, timeout=600)
    cases, ref, data = load(tmp_path)
    assert not data["random"].equals(DATA["random"])
    for case in cases.index:
        check_case(case, cases, ref, data)


# ---------------------------------------------------- designs R cannot fit: deletion

def counting_design(seed=0, S=30, dist="weibull"):
    """Subjects of 1-3 consecutive intervals ``(entry, time]`` (delayed entry after the
    first) with a time-varying covariate, right-censored except the last, and a few
    subjects whose last row is interval-censored: a pandas design indexed by text labels
    in shuffled order."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(S):
        k = rng.integers(1, 4)
        x1 = rng.normal()
        cuts = np.cumsum(rng.uniform(0.3, 1.5, size=k))
        for j in range(k):
            last = j == k - 1
            time = cuts[j]
            upper = time
            if last and rng.uniform() < 0.25:
                upper = time + rng.uniform(0.2, 1.0)        # censored in (time, upper]
            elif not last or rng.uniform() < 0.3:
                upper = np.inf                              # right-censored
            rows.append({"id": f"s{s:02d}", "x1": x1, "x2": rng.normal() + 0.3 * j,
                         "entry": 0.0 if j == 0 else cuts[j - 1], "time": time,
                         "upper": upper})
    frame = pd.DataFrame(rows)
    frame.index = [f"r{i:03d}" for i in range(len(frame))]
    return frame.sample(frac=1.0, random_state=seed)


@pytest.mark.parametrize("dist", DISTS)
def test_subject_changes_are_refits_without_the_subjects_rows(dist):
    """Delayed entry, time-varying covariates and interval censoring: the exact change of a
    subject is ``ci.fit_aft`` of the data without its rows, minus the fit; the VIF is its
    definition with the subject's rows deleted, ``n`` the number of subjects."""
    d = counting_design(1, dist=dist)
    X = d[["x1", "x2"]]
    fit = ci.fit_aft(X, d["time"], dist=dist, upper=d["upper"], entry=d["entry"], id=d["id"])
    exact = ci.influence(fit, method="exact")
    subjects = sorted(d["id"].unique())
    assert list(exact.theta_change.index) == subjects
    assert exact.units_text == f"{len(subjects)} patients ({len(d)} rows)"
    for s in subjects[::5]:
        keep = (d["id"] != s).to_numpy()
        alone = ci.fit_aft(X[keep], d["time"][keep], dist=dist, upper=d["upper"][keep],
                           entry=d["entry"][keep])
        assert rel(exact.theta_change.loc[s], alone.coef - fit.coef) < 1e-8
    audit = AFTAudit(fit)
    codes = np.array([0, 3, 7])
    unit_of = pd.Index(subjects).get_indexer(d["id"])
    deleted = fit.likelihood.loss_grad_hess(np.repeat(fit.coef[None], codes.size, 0),
                                            Deletion.of_units(unit_of, codes), hess=False)[1]
    U = len(subjects)
    vif_def = -U * np.linalg.solve(fit.information, (fit.gradient[None] - deleted).T).T
    assert rel(audit.vif[codes], vif_def) < 1e-9
    vif = ci.influence(fit, method="vif")
    np.testing.assert_array_equal(vif.theta_change.to_numpy(),
                                  ci.influence(fit, method="reid").theta_change.to_numpy())
    assert rel(vif.theta_change.iloc[codes], -vif_def / U) < 1e-9


def test_subjects_are_the_default_units_and_groups_override():
    d = counting_design(2)
    X = d[["x1", "x2"]]
    args = (X, d["time"])
    kw = {"upper": d["upper"], "entry": d["entry"]}
    fit = ci.fit_aft(*args, id=d["id"], **kw)
    plain = ci.fit_aft(*args, **kw)
    np.testing.assert_array_equal(fit.coef, plain.coef)      # id does not change the fit
    res = ci.influence(fit, method="vif")
    by_groups = ci.influence(plain, method="vif", groups=d["id"])
    np.testing.assert_array_equal(res.theta_change.to_numpy(),
                                  by_groups.theta_change.to_numpy())
    # groups= overrides the subjects: here every row its own cluster
    per_row = ci.influence(fit, method="vif", groups=pd.Series(np.arange(len(d)),
                                                               index=d.index))
    rows = ci.influence(plain, method="vif")
    np.testing.assert_array_equal(per_row.theta_change.to_numpy(),
                                  rows.theta_change.to_numpy())
    # the robust covariance clusters on id unless groups are given
    assert rel(fit.robust_covariance(), plain.robust_covariance(d["id"])) == 0
    assert rel(fit.robust_covariance(np.arange(len(d))), plain.robust_covariance()) < 1e-12
    assert rel(fit.summary(robust=True)["robust se"],
               np.sqrt(np.diag(plain.robust_covariance(d["id"])))) == 0


def test_unit_frame_shows_each_subjects_rows_span_and_events():
    d = counting_design(3)
    fit = ci.fit_aft(d[["x1", "x2"]], d["time"], upper=d["upper"], entry=d["entry"],
                     id=d["id"])
    res = ci.influence(fit, method="vif")
    frame = res.frame
    assert list(frame.columns) == ["rows", "entry", "exit", "events"]
    g = d.groupby("id")
    last = np.where(np.isinf(d["upper"]), d["time"], d["upper"])
    expected = pd.DataFrame({"rows": g.size(), "entry": g["entry"].min(),
                             "exit": pd.Series(last, index=d.index).groupby(d["id"]).max(),
                             "events": (~np.isinf(d["upper"])).groupby(d["id"]).sum()})
    np.testing.assert_allclose(frame.to_numpy(float), expected.to_numpy(float), rtol=1e-12)
    assert frame.index.equals(res.theta_change.index)
    top = res.top(3)
    assert {"rows", "entry", "exit", "events"} <= set(top.columns)


def test_pandas_id_is_matched_on_the_index_and_inputs_are_not_modified():
    d = counting_design(4)
    ids = d["id"].copy()
    fit = ci.fit_aft(d[["x1", "x2"]], d["time"], upper=d["upper"], entry=d["entry"],
                     id=ids.sample(frac=1.0, random_state=9))
    same = ci.fit_aft(d[["x1", "x2"]], d["time"], upper=d["upper"], entry=d["entry"],
                      id=ids.to_numpy())
    np.testing.assert_array_equal(fit.ids, same.ids)
    pd.testing.assert_series_equal(ids, d["id"])
    raw = ids.to_numpy().copy()
    ci.fit_aft(d[["x1", "x2"]], d["time"], upper=d["upper"], id=raw)
    np.testing.assert_array_equal(raw, ids.to_numpy())


def test_bad_ids_are_refused_clearly():
    d = counting_design(5)
    X, t = d[["x1", "x2"]].to_numpy(), d["time"].to_numpy()
    up = d["upper"].to_numpy()
    ids = d["id"].to_numpy().copy()
    with pytest.raises(ci.CoxInputError, match=r"id must have one label per row"):
        ci.fit_aft(X, t, upper=up, id=ids[:-1])
    ids[[2, 5]] = None
    missing = r"id has missing labels in 2 row\(s\) \(position\(s\) 2, 5"
    with pytest.raises(ci.CoxInputError, match=missing):
        ci.fit_aft(X, t, upper=up, id=ids)
    with pytest.raises(ci.CoxInputError, match="id has missing labels"):
        ci.fit_aft(X, t, upper=up, id=np.where(np.arange(len(t)) == 3, np.nan, 1.0))


def test_subjects_of_one_row_are_the_rows():
    """``id`` naming each row: the numbers of the per-row audit, indexed by the ids."""
    d = counting_design(6)
    kw = {"upper": d["upper"], "entry": d["entry"]}
    X = d[["x1", "x2"]]
    labels = np.arange(len(d))[::-1] * 3
    fit = ci.fit_aft(X.to_numpy(), d["time"].to_numpy(), id=labels,
                     **{k: v.to_numpy() for k, v in kw.items()})
    rows = ci.influence(ci.fit_aft(X.to_numpy(), d["time"].to_numpy(),
                                   **{k: v.to_numpy() for k, v in kw.items()}),
                        method="newton")
    res = ci.influence(fit, method="newton")
    order = np.argsort(labels)
    assert list(res.theta_change.index) == list(labels[order])
    np.testing.assert_allclose(res.theta_change.to_numpy(),
                               rows.theta_change.to_numpy()[order], rtol=0, atol=1e-14)


def test_auto_and_time_ratios_per_subject():
    d = DATA["lung"]
    fit = ci.fit_aft(d[["age", "sex", "ph.ecog"]], d["time"], d["status"], "lognormal",
                     id=d["id"])
    auto = ci.influence(fit)
    exact = ci.influence(fit, method="exact")
    assert auto.verified.sum() >= 10
    assert list(auto.top(10).index) == list(exact.top(10).index)
    tr = ci.influence(fit, method="exact", target="tr")
    loo = exact.theta_change.to_numpy() + fit.coef
    assert rel(tr.loo_change.to_numpy(), np.exp(loo[:, 1:4]) - np.exp(fit.coef[1:4])) < 1e-12

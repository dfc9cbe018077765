"""The Fine-Gray model (issue 25) against R's ``cmprsk::crr``, the oracle.

Golden fixtures from ``tests/r/fine_gray_reference.R`` (``tests/fixtures/r_fine_gray``;
R 4.2.2, cmprsk 2.2-11, survival 3.5-3): R's ``pbc`` (death with transplant competing,
and transplant with death competing), ``mgus2`` (progression with death competing), a
simulated design with tied times, three causes and two censoring groups, and the same
design in continuous time. Coefficients, crr's log pseudo-likelihood, its information and
its sandwich variance (which includes the censoring distribution's term) agree to 1e-8
(measured: 3e-14 or better); crr's leave-one-subject-out refits, which re-estimate the
censoring Kaplan-Meier, to 1e-7 (measured: 2e-14). ``survival::finegray`` + ``coxph`` gives
crr's coefficients where no failure ties a censoring and there is one censoring group
(the continuous design: 4e-16); its censoring Kaplan-Meier puts a failure tied with a
censoring before it (crr: at risk at the censoring), and its ``strata()`` expands each
group apart, so elsewhere it differs (1e-5 on pbc, 1e-2 with two groups).

Beside R, a literal transcription of crr's Fortran (``crrf``/``crrfsv``/``crrvv``, loops
over subjects and failure times, the Kaplan-Meier by its product) checks the likelihood,
its derivatives, every deletion and crr's per-subject scores.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.likelihood.fine_gray import (
    FineGrayLikelihood,
    crr_scores,
)
from coxinfluence.models.fine_gray import fit_fine_gray

HERE = Path(__file__).parent
SCRIPT = HERE / "r" / "fine_gray_reference.R"
GOLDEN = HERE / "fixtures" / "r_fine_gray"


# ------------------------------------------------------------------ the R fixtures

def load(folder):
    folder = Path(folder)
    cases = pd.read_csv(folder / "cases.csv", keep_default_na=False).set_index("case")
    ref = pd.read_csv(folder / "reference.csv")
    data = {name: pd.read_csv(folder / f"data_{name}.csv")
            for name in cases["dataset"].unique()}
    return cases, ref, data


def reference(ref, case, quantity):
    sub = ref[(ref["case"] == case) & (ref["quantity"] == quantity)]
    out = np.full((sub["row"].max() + 1, sub["col"].max() + 1), np.nan)
    out[sub["row"].to_numpy(), sub["col"].to_numpy()] = sub["value"].to_numpy()
    return out


def case_inputs(row, d):
    X = d[row["covariates"].split("+")]
    cg = d[row["cengroup"]] if row["cengroup"] else None
    return X, d[row["time"]], d[row["status"]], int(row["cause"]), cg


def fit_case(row, d, drop=None):
    if drop is not None:
        d = d.drop(index=d.index[drop])
    X, t, s, cause, cg = case_inputs(row, d)
    return fit_fine_gray(X, t, s, cause, cengroup=cg)


def rel(a, b):
    return float(np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-300))


CASES = list(load(GOLDEN)[0].index)


@pytest.fixture(scope="module")
def golden():
    return load(GOLDEN)


def check_case(cases, ref, data, case):
    row = cases.loc[case]
    fit = fit_case(row, data[row["dataset"]])
    assert fit.converged
    assert rel(fit.coef, reference(ref, case, "coef")[0]) < 1e-8
    assert abs(fit.loglik - reference(ref, case, "loglik")[0, 0]) < 1e-8 * abs(fit.loglik)
    assert rel(fit.information, reference(ref, case, "inf")) < 1e-8
    assert rel(fit.var, reference(ref, case, "var")) < 1e-8
    return fit


@pytest.mark.parametrize("case", CASES)
def test_golden_fit_loglik_information_and_sandwich(golden, case):
    check_case(*golden, case)


@pytest.mark.parametrize("case", CASES)
def test_golden_refits_without_a_subject_are_crrs(golden, case):
    """crr refitted without the subject (its censoring Kaplan-Meier re-estimated) equals
    our fit of the data without it."""
    cases, ref, data = golden
    row = cases.loc[case]
    rows = reference(ref, case, "loo_rows")[0].astype(int)
    loo = reference(ref, case, "loo")
    for r, theta in zip(rows, loo):
        assert np.abs(fit_case(row, data[row["dataset"]], drop=r).coef - theta).max() < 1e-7


def test_finegray_coxph_equals_crr_without_ties(golden):
    cases, ref, data = golden
    fit = fit_case(cases.loc["simc"], data["simc"])
    for quantity in ("fg_breslow", "fg_efron"):
        assert rel(fit.coef, reference(ref, "simc", quantity)[0]) < 1e-8
    # with failures tied to censorings finegray's Kaplan-Meier differs (module docstring)
    pbc = fit_case(cases.loc["pbc_death"], data["pbc"])
    gap = np.abs(pbc.coef - reference(ref, "pbc_death", "fg_breslow")[0]).max()
    assert 1e-7 < gap < 1e-3


def test_golden_data_have_what_the_cases_need(golden):
    _, _, data = golden
    sim = data["sim"]
    assert sim["time"].duplicated().sum() > 50                        # tied times
    tied = sim.groupby("time")["status"].agg(lambda s: (s == 0).any() and (s > 0).any())
    assert tied.sum() > 5                                             # censoring ties failure
    assert set(sim["status"]) == {0, 1, 2, 3} and set(sim["cg"]) == {1, 2}
    assert data["simc"]["time"].duplicated().sum() == 0


# --------------------------------------------------- crr's Fortran, transcribed literally

def crr_censoring(t, censored, group, present):
    """``uuu[g, i]``: crr's ``G_g(t_i-)`` (left limit, 0 after the group's last time) from
    the present subjects, by the product-limit formula."""
    C = group.max() + 1
    W = np.zeros((C, t.size))
    for g in range(C):
        m = (group == g) & present
        if not m.any():
            continue
        times = np.unique(t[m])
        surv, S = [], 1.0
        for s in times:
            S *= 1 - (m & censored & (t == s)).sum() / (m & (t >= s)).sum()
            surv.append(S)
        surv = np.array(surv)
        for i in range(t.size):
            before = times < t[i]
            W[g, i] = 0.0 if t[i] > times.max() else (surv[before][-1] if before.any()
                                                       else 1.0)
    return W


def crr_literal(t, kind, X, b, group, present=None):
    """(loss, gradient, Hessian) of crr's ``crrfsv``: loops over the distinct failure times
    and every subject (sorted by time; ``kind`` 1 cause, 2 other, 0 censored)."""
    n, d = X.shape
    present = np.ones(n, dtype=bool) if present is None else present
    wt = crr_censoring(t, kind == 0, group, present)
    loss, grad, hess = 0.0, np.zeros(d), np.zeros((d, d))
    for tk in np.unique(t[(kind == 1) & present]):
        fails = present & (kind == 1) & (t == tk)
        s0, s1, s2 = 0.0, np.zeros(d), np.zeros((d, d))
        k = np.flatnonzero(t == tk)[0]
        for j in np.flatnonzero(present):
            if t[j] < tk:
                if kind[j] != 2:
                    continue
                w = np.exp(X[j] @ b) * wt[group[j], k] / wt[group[j], j]
            else:
                w = np.exp(X[j] @ b)
            s0 += w
            s1 += w * X[j]
            s2 += w * np.outer(X[j], X[j])
        dk = fails.sum()
        loss += dk * np.log(s0) - X[fails].sum(axis=0) @ b
        grad += dk * s1 / s0 - X[fails].sum(axis=0)
        hess += dk * (s2 / s0 - np.outer(s1, s1) / s0 ** 2)
    return loss, grad, hess


def crr_scores_literal(t, kind, X, b, group):
    """crr's ``eta_i + psi_i`` (cmprsk 2.2-11's ``crrvv``: ``q`` per censoring group, over
    that group's failures), by its loops."""
    n, d = X.shape
    wt = crr_censoring(t, kind == 0, group, np.ones(n, dtype=bool))
    C = wt.shape[0]
    ex = np.exp(X @ b)
    S0, S1 = np.zeros(n), np.zeros((n, d))
    for i in np.flatnonzero(kind == 1):
        for j in range(n):
            if t[j] < t[i] and kind[j] != 2:
                continue
            w = ex[j] * (wt[group[j], i] / wt[group[j], j] if t[j] < t[i] else 1.0)
            S0[i] += w
            S1[i] += w * X[j]
    at_risk = np.bincount(group, minlength=C).astype(float)
    acc, q, out, first = np.zeros((C, d)), np.zeros((C, d)), np.zeros((n, d)), 0
    for i in range(n):
        for j in np.flatnonzero(kind == 1):
            if t[j] <= t[i]:
                w = ex[i]
            elif kind[i] == 2:
                w = ex[i] * wt[group[i], j] / wt[group[i], i]
            else:
                continue
            out[i] -= (X[i] - S1[j] / S0[j]) * w / S0[j]
        if kind[i] == 1:
            out[i] += X[i] - S1[i] / S0[i]
        if i == 0 or t[i] > t[i - 1]:
            ties = np.flatnonzero(t == t[i])
            q = np.zeros((C, d))
            for j1 in np.flatnonzero((kind == 1) & (t >= t[i])):
                g = group[j1]
                for j2 in np.flatnonzero((kind == 2) & (t < t[i]) & (group == g)):
                    w = ex[j2] * wt[g, j1] / wt[g, j2]
                    q[g] += w * (X[j2] - S1[j1] / S0[j1]) / S0[j1]
            for j in ties[kind[ties] == 0]:
                acc[group[j]] -= q[group[j]] / at_risk[group[j]] ** 2
        out[i] += acc[group[i]]
        if kind[i] == 0:
            out[i] += q[group[i]] / at_risk[group[i]]
        if i + 1 < n and t[i + 1] > t[i]:
            for j in range(first, i + 1):
                at_risk[group[j]] -= 1
            first = i + 1
    return out


@pytest.fixture(scope="module")
def sim_fit(golden):
    cases, _, data = golden
    return fit_case(cases.loc["sim_cengroup"], data["sim"])


def sorted_arrays(fit):
    D = fit.data
    return D.time, D.kind.astype(int), D.X + D.X_center, D.group


def test_likelihood_equals_crrs_loops(sim_fit):
    """Loss, gradient and Hessian at a point away from the fit, for the full data and with
    subjects deleted (the censoring Kaplan-Meier re-estimated without them)."""
    t, kind, X, group = sorted_arrays(sim_fit)
    lik = FineGrayLikelihood(sim_fit.data)
    b = sim_fit.coef + np.array([0.3, -0.2, 0.1])
    order = sim_fit.data.order
    rng = np.random.default_rng(1)
    for deleted in [None, *rng.choice(sim_fit.n, size=(4, 1)), rng.choice(sim_fit.n, 7)]:
        present = np.ones(sim_fit.n, dtype=bool)
        if deleted is not None:
            present[np.argsort(order)[deleted]] = False
        lo, g, h = crr_literal(t, kind, X, b, group, present)
        loss, grad, hess = lik.evaluate(b, deleted)
        assert abs(loss[0] - lo) < 1e-12 * abs(lo)
        assert rel(grad[0], g) < 1e-11 and rel(hess[0], h) < 1e-12


def test_crr_scores_equal_crrs_loops(sim_fit):
    t, kind, X, group = sorted_arrays(sim_fit)
    fast = crr_scores(sim_fit.data, sim_fit.coef)
    assert rel(fast, crr_scores_literal(t, kind, X, sim_fit.coef, group)) < 1e-12


def test_no_competing_events_is_the_cox_model(golden):
    """Without competing events every weight is 1: the Fine-Gray fit is the Cox fit with
    Breslow's ties (coefficients, log-likelihood and information, to rounding)."""
    _, _, data = golden
    d = data["sim"]
    status = np.where(d["status"] == 1, 1, 0)
    X = d[["x1", "x2", "x3"]]
    fg = fit_fine_gray(X, d["time"], status, cengroup=d["cg"])
    cox = ci.fit_cox(X, d["time"], status, ties="breslow")
    assert rel(fg.coef, cox.coef) < 1e-12
    assert abs(fg.loglik - cox.loglik) < 1e-12 * abs(cox.loglik)
    assert rel(fg.information, cox.information) < 1e-12


def test_inputs_are_checked_and_aligned(golden):
    _, _, data = golden
    d = data["sim"].copy()
    X = d[["x1", "x2", "x3"]]
    with pytest.raises(ci.CoxInputError, match="no failures of cause 5"):
        fit_fine_gray(X, d["time"], d["status"], cause=5)
    bad = d["status"].astype(float).copy()
    bad.iloc[3] = 1.5
    with pytest.raises(ci.CoxInputError, match=r"status .*position\(s\) 3"):
        fit_fine_gray(X.to_numpy(), d["time"].to_numpy(), bad.to_numpy())
    with pytest.raises(ci.CoxInputError, match="non-negative"):
        fit_fine_gray(X, -d["time"], d["status"])
    Xn = X.copy()
    Xn.iloc[7, 1] = np.nan
    with pytest.raises(ci.CoxInputError, match="NaN"):
        fit_fine_gray(Xn, d["time"], d["status"])
    with pytest.raises(ci.CoxInputError, match="constant"):
        fit_fine_gray(X.assign(x4=1.0), d["time"], d["status"])
    with pytest.raises(NotImplementedError, match="weights"):
        fit_fine_gray(X, d["time"], d["status"], weights=np.ones(len(d)))
    with pytest.raises(NotImplementedError, match="strata"):
        fit_fine_gray(X, d["time"], d["status"], strata=d["cg"])
    # pandas inputs are matched on the index
    base = fit_fine_gray(X, d["time"], d["status"], cengroup=d["cg"])
    perm = np.random.default_rng(0).permutation(len(d))
    shuffled = fit_fine_gray(X.iloc[perm], d["time"], d["status"], cengroup=d["cg"])
    assert rel(shuffled.coef, base.coef) < 1e-13
    assert list(base.params.index) == ["x1", "x2", "x3"]
    assert base.model_name == "Fine-Gray, cause 1"
    table = base.summary()
    assert rel(table["se(coef)"].to_numpy(), np.sqrt(np.diag(base.var))) == 0
    assert base.training_frame().shape == (len(d), 6)


# ------------------------------------------------------------------ live R

@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: live comparison with cmprsk::crr skipped "
                           "(install r-base-core r-cran-cmprsk)")
def test_live_against_crr(tmp_path):
    probe = subprocess.run(["Rscript", "-e", "library(cmprsk)"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("R's cmprsk is not installed (apt-get install -y r-cran-cmprsk)")
    subprocess.run(["Rscript", str(SCRIPT), str(tmp_path), "11", "150"], check=True,
                   capture_output=True)
    cases, ref, data = load(tmp_path)
    for case in cases.index:
        row = cases.loc[case]
        check_case(cases, ref, data, case)
        rows = reference(ref, case, "loo_rows")[0].astype(int)
        for r, theta in zip(rows, reference(ref, case, "loo")):
            assert np.abs(fit_case(row, data[row["dataset"]], drop=r).coef - theta).max() \
                < 1e-7, (case, r)

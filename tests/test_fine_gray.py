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
from coxinfluence.influence_functions.fine_gray_audit import FineGrayAudit
from coxinfluence.likelihood.fine_gray import (
    FineGrayLikelihood,
    build_fine_gray_data,
    crr_scores,
    loss_grad_hess,
)
from coxinfluence.likelihood.fine_gray_deletion import DeletionState, deleted_derivatives
from coxinfluence.models.fine_gray import fit_fine_gray

HERE = Path(__file__).parent
SCRIPT = HERE / "r" / "fine_gray_reference.R"
GOLDEN = HERE / "fixtures" / "r_fine_gray"


# ------------------------------------------------------------------ the R fixtures

def load(folder, precision=None):
    """(cases, reference, data) of an R fixture folder; ``precision="round_trip"`` reads
    the numbers exactly. The crr fixtures keep pandas' default parser (up to 1 ulp off):
    their cumulative-incidence query times sit on failure times, where the last bit
    decides the side of a step (measured: read exactly, two values of ``simc`` move by
    one step)."""
    folder = Path(folder)
    cases = pd.read_csv(folder / "cases.csv", keep_default_na=False).set_index("case")
    ref = pd.read_csv(folder / "reference.csv", float_precision=precision)
    data = {name: pd.read_csv(folder / f"data_{name}.csv", float_precision=precision)
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
    # ties="efron" is finegray + coxph(ties = "efron") (no ties here: Breslow's fit too)
    X, t, s, cause, cg = case_inputs(cases.loc["simc"], data["simc"])
    efron = fit_fine_gray(X, t, s, cause, cengroup=cg, ties="efron")
    assert rel(efron.coef, reference(ref, "simc", "fg_efron")[0]) < 1e-8
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


def tiny_tied_design(rng, n_max, d_max):
    """``(data, theta)``: n in [3, n_max) subjects, d in [1, d_max) covariates, heavy ties
    (failures, other causes and censorings at the same few times), up to three censoring
    groups (some of one subject), the first subject a failure; theta at random."""
    n, d = int(rng.integers(3, n_max)), int(rng.integers(1, d_max))
    X = rng.normal(size=(n, d))
    t = rng.integers(1, int(rng.integers(2, 8)), size=n).astype(float)
    kind = rng.integers(0, 3, size=n)
    kind[0] = 1
    group = np.unique(rng.integers(0, int(rng.integers(1, 4)), size=n), return_inverse=True)[1]
    return build_fine_gray_data(X, t, kind, group), 0.5 * rng.normal(size=d)


@pytest.mark.parametrize("seed", range(20))
def test_crr_scores_equal_crrs_loops_on_small_tied_designs(seed):
    D, theta = tiny_tied_design(np.random.default_rng(100 + seed), 25, 3)
    literal = crr_scores_literal(D.time, D.kind.astype(int), D.X + D.X_center, theta, D.group)
    assert rel(crr_scores(D, theta), literal) < 1e-12


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
    with pytest.raises(ci.CoxInputError, match="weights must be positive"):
        fit_fine_gray(X, d["time"], d["status"], weights=np.r_[0.0, np.ones(len(d) - 1)])
    with pytest.raises(ci.CoxInputError, match="strata contain missing"):
        fit_fine_gray(X, d["time"], d["status"], strata=np.r_[np.nan, np.ones(len(d) - 1)])
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


# ------------------------------------------------------------------ the audit (seam)

AUDIT_CASES = ["pbc_death", "sim_cengroup", "mgus2_progression"]


@pytest.fixture(scope="module")
def audits(golden):
    cases, _, data = golden
    out = {}
    for case in AUDIT_CASES:
        row = cases.loc[case]
        out[case] = FineGrayAudit(fit_case(row, data[row["dataset"]]))
    return out


def deleted_by_definition(fit):
    """Gradient and Hessian of the loss at ``theta_hat`` with each subject deleted, the
    censoring Kaplan-Meier re-estimated from the others: one O(n) evaluation per subject
    (:class:`FineGrayLikelihood` with a presence mask), in the caller's order."""
    n = fit.n
    _, g, H = fit.likelihood.evaluate(fit.coef, 1.0 - np.eye(n))
    return g, H


@pytest.mark.parametrize("case", AUDIT_CASES)
def test_vif_equals_its_definition(audits, case):
    """The closed form (O(K d) per subject) equals the paper's definition: delete the
    subject, re-estimate the Kaplan-Meier, take the gradient difference at theta_hat."""
    audit = audits[case]
    fit = audit.fit
    g, _ = deleted_by_definition(fit)
    full = fit.likelihood.grad(fit.coef)
    vif = -fit.n * np.linalg.solve(fit.information, (full[None, :] - g).T).T
    assert rel(audit.vif, vif) < 1e-10
    assert rel(audit.change("vif"), -vif / fit.n) < 1e-10


def test_deletion_by_definition_is_crrs_loops(audits):
    """The literal deletion used above against crr's loops on the data without the
    subject (a subject of each kind, and the last of each censoring group, whose deletion
    changes the group's last time)."""
    fit = audits["sim_cengroup"].fit
    D = fit.data
    t, kind, X, group = sorted_arrays(fit)
    pick = [int(np.flatnonzero(kind == k)[j]) for k in (0, 1, 2) for j in (0, 9)]
    pick += [int(np.flatnonzero(group == g)[-1]) for g in (0, 1)]
    for r in pick:
        present = np.ones(fit.n, dtype=bool)
        present[r] = False
        _, g, h = crr_literal(t, kind, X, fit.coef, group, present)
        _, grad, hess = fit.likelihood.evaluate(fit.coef, [D.order[r]])
        assert rel(grad[0], g) < 1e-11 and rel(hess[0], h) < 1e-12


@pytest.mark.parametrize("seed", range(40))
def test_deleted_derivatives_equal_the_definition_on_small_tied_designs(seed):
    """Tiny designs with heavy ties (failures, other causes and censorings at the same
    times), up to three censoring groups (some of one subject), at a random theta: the
    closed form equals the literal deletion for every subject."""
    D, theta = tiny_tied_design(np.random.default_rng(seed), 30, 4)
    n = D.n
    state = DeletionState(D, theta)
    g, h = deleted_derivatives(state)
    _, g_lit, h_lit = loss_grad_hess(D, np.repeat(theta[None], n, axis=0), 1.0 - np.eye(n))
    full = state.full_gradient()
    assert rel(full - g, full - g_lit) < 1e-12
    assert rel(h, h_lit) < 1e-10


@pytest.mark.parametrize("case", AUDIT_CASES)
def test_deleted_hessians_and_newton_equal_their_definition(audits, case):
    audit = audits[case]
    g, H = deleted_by_definition(audit.fit)
    assert rel(audit.deleted[1], H) < 1e-11
    assert rel(audit.deleted[0], g) < 1e-11
    newton = -np.linalg.solve(H, g[:, :, None])[:, :, 0]
    assert rel(audit.change("newton"), newton) < 1e-10
    assert rel(audit.split, audit.information[None] - H) < 1e-10


@pytest.mark.parametrize("case", CASES)
def test_exact_refits_are_crrs_refits(golden, case):
    """The audit's refits (batched Newton on the deleted loss, the Kaplan-Meier
    re-estimated) equal crr refitted without the subject."""
    cases, ref, data = golden
    row = cases.loc[case]
    audit = FineGrayAudit(fit_case(row, data[row["dataset"]]))
    rows = reference(ref, case, "loo_rows")[0].astype(int)
    refits = audit.refit(rows[::-1])
    assert (refits.status == "ok").all()
    assert np.abs(refits.theta - reference(ref, case, "loo")[::-1]).max() < 1e-7


def test_refits_are_converged_minima_of_the_deleted_loss(audits):
    audit = audits["sim_cengroup"]
    fit = audit.fit
    codes = np.arange(0, fit.n, 7)
    refits = audit.refit(codes)
    P = np.ones((codes.size, fit.n))
    P[np.arange(codes.size), codes] = 0.0
    _, g, H = fit.likelihood.evaluate(refits.theta, P)
    assert np.abs(g).max() < 1e-9
    assert (np.linalg.eigvalsh(H) > 0).all()


@pytest.mark.parametrize("case", CASES)
def test_reid_sandwich_is_crrs_variance(golden, case):
    """``(IF/n)'(IF/n)`` with crr's influence function (``eta + psi``) is crr's var."""
    cases, ref, data = golden
    row = cases.loc[case]
    audit = FineGrayAudit(fit_case(row, data[row["dataset"]]))
    D = audit.change("reid")
    assert rel(D.T @ D, reference(ref, case, "var")) < 1e-8
    assert rel(audit.unit_scores(), audit.fit.scores) == 0


def test_reid_is_close_to_the_case_weight_derivative(audits):
    """crr's ``psi`` linearises the Kaplan-Meier (``Y^2`` for ``Y (Y - c)``): with one
    censoring group crr's IF is close to the derivative of theta_hat in the subject's case
    weight (central differences of the weighted loss, whose Kaplan-Meier is weighted too):
    measured on pbc 9.2e-4 of the largest change; without its censoring term (weights
    held fixed) five times further, 4.6e-3."""
    audit = audits["pbc_death"]
    fit = audit.fit
    n, h = fit.n, 1e-6
    P = np.ones((2 * n, n))
    P[np.arange(n), np.arange(n)] += h
    P[n + np.arange(n), np.arange(n)] -= h
    _, g, _ = fit.likelihood.evaluate(fit.coef, P, hessian=False)
    dgrad = (g[:n] - g[n:]) / (2 * h)
    # d theta / d w_i = -H^{-1} d grad / d w_i; deleting is w_i: 1 -> 0
    derivative = np.linalg.solve(fit.information, dgrad.T).T
    assert rel(audit.change("reid"), derivative) < 2e-3
    assert rel(audit.fixed_weight_change(), derivative) > 3e-3


def test_no_competing_events_audit_is_coxs(golden):
    """Without competing events the Fine-Gray audit is the Cox audit (Breslow ties):
    VIF, Reid, one-step Newton, exact refits."""
    _, _, data = golden
    d = data["sim"]
    status = np.where(d["status"] == 1, 1, 0)
    X = d[["x1", "x2", "x3"]]
    audit = FineGrayAudit(fit_fine_gray(X, d["time"], status, cengroup=d["cg"]))
    cox = ci.fit_cox(X, d["time"], status, ties="breslow")
    for method in ("vif", "reid", "newton", "exact"):
        ours = (audit.refit().theta - audit.coef if method == "exact"
                else audit.change(method))
        theirs = ci.influence(cox, method=method).theta_change.to_numpy()
        assert rel(ours, theirs) < (1e-8 if method == "exact" else 1e-10), method
    assert rel(audit.fixed_weight_change(), audit.change("reid")) < 1e-12


def test_auto_top_10_is_the_exact_top_10(audits):
    fit = audits["pbc_death"].fit
    auto = ci.influence(fit)
    exact = ci.influence(fit, method="exact")
    top = exact.likelihood_displacement.nlargest(10).index
    assert list(auto.likelihood_displacement.nlargest(10).index) == list(top)
    assert auto.verified[top].all()
    assert rel(auto.theta_change.loc[top].to_numpy(),
               exact.theta_change.loc[top].to_numpy()) < 1e-9
    assert auto.source == "Fine-Gray, cause 2"
    assert {"time", "status", "age"} <= set(auto.top(3).columns)


def test_a_subject_whose_deletion_leaves_no_maximum_is_undefined(golden):
    """A dummy covariate whose level 1 has one subject (a failure in mid follow-up, so
    the fit has a maximum): without that subject the covariate is constant."""
    _, _, data = golden
    d = data["sim"].copy()
    fails = d.index[d["status"] == 1]
    lone = fails[np.argsort(d.loc[fails, "time"].to_numpy())[fails.size // 2]]
    d["rare"] = 0.0
    d.loc[lone, "rare"] = 1.0
    fit = fit_fine_gray(d[["x1", "x2", "rare"]], d["time"], d["status"], cengroup=d["cg"])
    assert fit.converged
    audit = FineGrayAudit(fit)
    assert audit.undefined().sum() == 1 and audit.undefined()[lone]
    refits = audit.refit([lone, 3])
    assert list(refits.status) == ["undefined", "ok"]
    assert np.isnan(refits.theta[0]).all()
    res = ci.influence(fit, method="vif")
    assert res.flags["undefined"].sum() == 1 and res.flags.loc[lone, "undefined"]


def test_third_derivative_is_the_derivative_of_the_hessian(audits):
    audit = audits["mgus2_progression"]
    fit = audit.fit
    rng = np.random.default_rng(3)
    v = rng.normal(size=fit.data.d) / fit.data.X.std(axis=0)
    h = 1e-5
    Hp, Hm = fit.likelihood.hess(np.vstack([fit.coef + h * v, fit.coef - h * v]))
    assert rel(np.einsum("ijk,k->ij", audit.third, v), (Hp - Hm) / (2 * h)) < 1e-5


def test_presence_two_is_a_duplicated_subject(sim_fit):
    """Case weights enter the risk sets and the Kaplan-Meier alike: a presence of 2 is
    the subject twice (here a competing and a censored subject)."""
    D = sim_fit.data
    X = D.X + D.X_center
    for r in (int(np.flatnonzero(D.kind == 2)[3]), int(np.flatnonzero(D.kind == 0)[5])):
        P = np.ones((1, D.n))
        P[0, D.order[r]] = 2.0
        rows = np.append(np.arange(D.n), r)
        dup = FineGrayLikelihood(build_fine_gray_data(X[rows], D.time[rows], D.kind[rows],
                                                      D.group[rows]))
        b = sim_fit.coef + 0.1
        for ours, theirs in zip(sim_fit.likelihood.evaluate(b, P), dup.evaluate(b)):
            assert rel(ours, theirs) < 1e-12


def test_an_auto_audit_computes_each_shared_quantity_once(audits, monkeypatch):
    """``ci.influence(fit)`` (auto), its summary, top table and exact refits: the VIF's
    gradient pass once, the flags' pass (deleted Hessians, reused by the refits' starts)
    once, crr's scores once."""
    import coxinfluence.influence_functions.fine_gray_audit as module
    from coxinfluence.likelihood import fine_gray_deletion
    from coxinfluence.models import fine_gray as model_module
    args, kw = case_inputs_of(audits["sim_cengroup"].fit)
    fit = fit_fine_gray(*args, **kw)
    calls = {"state": 0, "derivatives": 0, "scores": 0}
    init = fine_gray_deletion.DeletionState.__init__

    def counting_init(self, *a, **k):
        calls["state"] += 1
        init(self, *a, **k)

    def counting(name, f):
        def wrapped(*a, **k):
            calls[name] += 1
            return f(*a, **k)
        return wrapped

    monkeypatch.setattr(fine_gray_deletion.DeletionState, "__init__", counting_init)
    monkeypatch.setattr(module, "deleted_derivatives",
                        counting("derivatives", deleted_derivatives))
    monkeypatch.setattr(model_module, "crr_scores", counting("scores", crr_scores))
    monkeypatch.setattr(module, "deleted_gradients_series",
                        counting("series", module.deleted_gradients_series))
    calls["series"] = 0
    res = ci.influence(fit)
    res.summary_frame()
    res.top(5)
    res.exact()
    # the VIF's gradients by the series (unit weights, Breslow), the flags' Hessians once
    assert calls == {"state": 2, "derivatives": 1, "series": 1, "scores": 1}


def case_inputs_of(fit):
    """The caller's inputs of ``fit`` (a fresh fit: nothing cached)."""
    frame = fit.training_frame()
    return (frame[fit.columns], frame["time"], frame["status"], fit.cause), \
        {"cengroup": frame.get("cengroup")}

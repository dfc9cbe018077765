"""The Fine-Gray model with case weights, strata and Efron's ties against an independent
oracle: the data expanded explicitly into counting-process rows (each competing failure
repeated at every later failure time of the cause in its stratum, with the weight
``w_j G_g(t_k-) / G_g(T_j-)``) and fitted by ``survival::coxph``.

Golden fixtures from ``tests/r/fine_gray_expanded_reference.R``
(``tests/fixtures/r_fine_gray_expanded``; R 4.2.2, survival 3.5-3): the simulated design of
``tests/r/fine_gray_reference.R`` (tied times, three causes, two censoring groups; the rows
of ``r_fine_gray/data_sim.csv``) with non-integer weights ``w``, integer weights ``wi`` and
two strata ``st`` added, and R's ``pbc`` (death, transplant competing) under Efron's ties.
The censoring Kaplan-Meier is weighted and estimated per (stratum, censoring group).
Quantities: coefficients (1e-8 relative to ``max(1, |coef|)``), coxph's log-likelihood at
the fit (= ``fit.loglik``, minus our loss; 1e-8 relative), its naive information (= our
Hessian; 1e-7 relative), each subject's score with the censoring weights held fixed
(``eta``: coxph's score residuals of its expanded rows, summed with their ``G`` ratios;
1e-7), and coxph refitted without single subjects on the data re-expanded with the
Kaplan-Meier re-estimated (``FineGrayAudit.refit``; 1e-7).

Checks of the oracle itself (not repeated here): with unit weights, no strata and
Breslow's ties the expansion reproduces ``cmprsk::crr`` on all six ``r_fine_gray`` cases
(coefficients 8e-15 relative, log-likelihood 3e-15, information 1e-14, crr's
leave-one-out refits 3e-12); the script stops unless integer weights under Breslow give
the duplicated data's fit (1e-9); a literal loop over failure times and subjects in
numpy gives coxph's log-likelihood to 1e-15 on every case.

coxph's weighted Efron (the definition here): at a time with ``d`` tied failures of the
cause (``d`` counts subjects, not weights) of total weight ``W``, the loss adds
``(W / d) sum_{r<d} log(S0 - r D / d)`` with ``D`` the tied failures' ``sum w_i e_i``: each
tied failure gets the mean weight. Integer weights are therefore duplicated rows under
Breslow but not under Efron (case ``sim_int_efron`` stores both fits; they differ by 2e-3).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_fine_gray import load, reference, rel  # R's long-format fixtures; relative error

import coxinfluence as ci
from coxinfluence.influence_functions.fine_gray_audit import FineGrayAudit
from coxinfluence.likelihood.fine_gray import crr_scores

HERE = Path(__file__).parent
SCRIPT = HERE / "r" / "fine_gray_expanded_reference.R"
GOLDEN = HERE / "fixtures" / "r_fine_gray_expanded"


def fit_case(row, d, *, weights=True, ties=None):
    """``ci.fit_fine_gray`` on the case's columns (``weights=False``: unit weights)."""
    column = lambda name: d[name] if name else None     # noqa: E731
    return ci.fit_fine_gray(d[row["covariates"].split("+")], d[row["time"]], d[row["status"]],
                            int(row["cause"]), cengroup=column(row["cengroup"]),
                            weights=column(row["weights"]) if weights else None,
                            strata=column(row["strata"]), ties=ties or row["ties"])


def coef_gap(a, b):
    """max |a - b| / max(1, |b|), elementwise."""
    b = np.asarray(b)
    return float((np.abs(np.asarray(a) - b) / np.maximum(1.0, np.abs(b))).max())


CASES = list(load(GOLDEN, "round_trip")[0].index)


@pytest.fixture(scope="module")
def golden():
    return load(GOLDEN, "round_trip")


def check_fit(cases, ref, data, case):
    row = cases.loc[case]
    fit = fit_case(row, data[row["dataset"]])
    assert fit.converged, case
    assert coef_gap(fit.coef, reference(ref, case, "coef")[0]) < 1e-8, case
    loglik = reference(ref, case, "loglik")[0, 0]
    assert abs(fit.loglik - loglik) < 1e-8 * abs(loglik), (case, fit.loglik, loglik)
    assert rel(fit.information, reference(ref, case, "information")) < 1e-7, case
    return fit


def check_eta(fit, ref, case):
    """Each subject's score with the censoring weights held fixed, per unit of its weight
    (``crr_scores(censoring_term=False) / w``), is R's: the score residuals of its
    expanded rows, each times its row's ``G`` ratio, summed."""
    eta = fit.data.to_caller_order(crr_scores(fit.data, fit.coef, censoring_term=False)
                                   / fit.data.weight[:, None])
    assert rel(eta, reference(ref, case, "eta")) < 1e-7, case


def check_refits(fit, ref, case):
    rows = reference(ref, case, "loo_rows")[0].astype(int)
    loo = reference(ref, case, "loo")
    refits = FineGrayAudit(fit).refit(rows)
    assert list(refits.status) == ["ok"] * rows.size, (case, refits.status)
    for r, theta, want in zip(rows, refits.theta, loo):
        assert coef_gap(theta, want) < 1e-7, (case, r)


@pytest.mark.parametrize("case", CASES)
def test_golden_fit_loglik_and_information(golden, case):
    check_fit(*golden, case)


@pytest.mark.parametrize("case", CASES)
def test_golden_scores_with_the_weights_held_fixed(golden, case):
    cases, ref, data = golden
    check_eta(check_fit(cases, ref, data, case), ref, case)


@pytest.mark.parametrize("case", CASES)
def test_golden_refits_without_a_subject(golden, case):
    """coxph on the data re-expanded without the subject (its stratum's censoring
    Kaplan-Meier re-estimated) equals our exact refit."""
    cases, ref, data = golden
    fit = check_fit(cases, ref, data, case)
    check_refits(fit, ref, case)


def duplicated(d, column):
    return d.loc[d.index.repeat(d[column].to_numpy())].reset_index(drop=True)


def test_integer_weights_are_duplicated_rows_under_breslow(golden):
    """Frequency weights: a weight of 2 is the subject twice (risk sets, failure counts
    and the censoring Kaplan-Meier), with strata and censoring groups."""
    cases, ref, data = golden
    row = cases.loc["sim_int_breslow"]
    d = data[row["dataset"]]
    fit = fit_case(row, d)
    dup = fit_case(row, duplicated(d, row["weights"]), weights=False)
    assert coef_gap(fit.coef, dup.coef) < 1e-9
    assert abs(fit.loglik - dup.loglik) < 1e-10 * abs(dup.loglik)
    assert rel(fit.information, dup.information) < 1e-9
    assert coef_gap(fit.coef, reference(ref, "sim_int_breslow", "coef")[0]) < 1e-8


def test_integer_weights_are_not_duplicated_rows_under_efron(golden):
    """coxph's weighted Efron gives each of d tied failures the mean weight (d counts
    subjects), so duplicating a subject is not the same fit; both are coxph's."""
    cases, ref, data = golden
    row = cases.loc["sim_int_efron"]
    d = data[row["dataset"]]
    dup = fit_case(row, duplicated(d, row["weights"]), weights=False)
    assert coef_gap(dup.coef, reference(ref, "sim_int_efron", "coef_duplicated")[0]) < 1e-8
    weighted = reference(ref, "sim_int_efron", "coef")[0]
    assert coef_gap(dup.coef, weighted) > 1e-4
    assert coef_gap(fit_case(row, d).coef, weighted) < 1e-8


def test_golden_data_have_what_the_cases_need(golden):
    cases, _, data = golden
    sim = data["sim"]
    # the simulated subjects of tests/fixtures/r_fine_gray, with w, wi, st added
    old = pd.read_csv(HERE / "fixtures" / "r_fine_gray" / "data_sim.csv",
                      float_precision="round_trip")
    pd.testing.assert_frame_equal(sim[old.columns], old)
    assert set(sim["status"]) == {0, 1, 2, 3} and set(sim["cg"]) == {1, 2}
    assert set(sim["st"]) == {1, 2} and set(sim["wi"]) == {1, 2, 3}
    assert sim["w"].min() >= 0.5 and sim["w"].max() <= 2 and sim["w"].nunique() > 100
    fails = sim[sim["status"] == 1]
    # tied failures of the cause with different weights, in each stratum (Efron's case)
    spread = fails.groupby(["st", "time"])["w"].agg(lambda w: w.size > 1 and w.nunique() > 1)
    assert spread.groupby(level="st").sum().min() >= 5
    # every (stratum, censoring group) has censorings and competing failures
    kinds = sim.groupby(["st", "cg"])["status"].agg(lambda s: {0, 2} <= set(s))
    assert kinds.all() and kinds.size == 4
    assert cases.loc["sim_unit_breslow", "weights"] == ""


@pytest.mark.needs_r
@pytest.mark.slow
def test_live_against_expanded_coxph(tmp_path):
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed")
    probe = subprocess.run(["Rscript", "-e", "library(survival)"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("R's survival is not installed (apt-get install -y r-cran-survival)")
    subprocess.run(["Rscript", str(SCRIPT), str(tmp_path), "11", "150"], check=True,
                   capture_output=True)
    cases, ref, data = load(tmp_path, "round_trip")
    for case in cases.index:
        fit = check_fit(cases, ref, data, case)
        check_eta(fit, ref, case)
        check_refits(fit, ref, case)

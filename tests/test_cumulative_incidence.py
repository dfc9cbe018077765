"""The cumulative incidence of new patients under a Fine-Gray fit (issue 25 item 3),
``ci.CumulativeIncidence(X_new, times)``, against R's ``cmprsk::predict.crr`` and against
leave-one-subject-out refits.

Golden fixtures from ``tests/r/cumulative_incidence_reference.R``
(``tests/fixtures/r_cumulative_incidence``; R 4.2.2, cmprsk 2.2-11) on the Fine-Gray
fixtures' data and cases (``tests/fixtures/r_fine_gray``: pbc, mgus2, a simulated design
with ties and two censoring groups): ``predict.crr``'s curves of four new patients, the
curves read at chosen times, and ``predict.crr`` of crr refitted without each of seven
subjects (crr re-estimates the censoring Kaplan-Meier itself). Measured when written: the
values agree with R to 1.5e-15, the exact changes with R's refits to 4.3e-13.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_fine_gray import GOLDEN as FG_GOLDEN
from test_fine_gray import case_inputs, fit_case, load, reference

import coxinfluence as ci
from coxinfluence.influence_functions.fine_gray_audit import FineGrayAudit
from coxinfluence.likelihood.fine_gray import baseline_jumps
from coxinfluence.likelihood.fine_gray_deletion import DeletionState, deleted_baseline_jumps

HERE = Path(__file__).parent
SCRIPT = HERE / "r" / "cumulative_incidence_reference.R"
GOLDEN = HERE / "fixtures" / "r_cumulative_incidence"

FG_CASES, FG_REF, FG_DATA = load(FG_GOLDEN)
REF = pd.read_csv(GOLDEN / "reference.csv")


def case_fit(case, drop=None):
    row = FG_CASES.loc[case]
    return fit_case(row, FG_DATA[row["dataset"]], drop=drop)


def new_patients(ref, case, fit):
    return pd.DataFrame(reference(ref, case, "new_x"), columns=fit.columns,
                        index=["a", "b", "c", "mean"])


def check_against_r(ref, case, *, exact=True):
    """Values (whole curves and read at times) and, with ``exact``, the exact changes of
    the subjects R refitted without, against R's numbers."""
    fit = case_fit(case)
    X_new = new_patients(ref, case, fit)
    uftime = reference(ref, case, "uftime")[:, 0]
    curves = ci.CumulativeIncidence(X_new, uftime).value(fit, fit.coef[None, :])[0]
    assert np.abs(curves.reshape(4, -1) - reference(ref, case, "cif").T).max() < 1e-8
    times = reference(ref, case, "times")[0]
    target = ci.CumulativeIncidence(X_new, times)
    value = target.value(fit, fit.coef[None, :])[0]
    assert np.abs(value - reference(ref, case, "cif_at").reshape(-1)).max() < 1e-8
    assert value[0] == 0.0                                 # before the first failure time
    if exact:
        rows = reference(ref, case, "loo_rows")[0].astype(int)
        audit = FineGrayAudit(fit)
        refits = audit.refit(rows)
        assert (refits.status == "ok").all()
        loo = np.full((fit.n, fit.data.d), np.nan)
        loo[rows] = refits.theta
        change = ci.targets.target_exact(fit, loo, target)
        assert np.isnan(np.delete(change, rows, axis=0)).all()
        assert np.abs(change[rows] + value - reference(ref, case, "loo_cif")).max() < 1e-8
    return fit, target


@pytest.mark.parametrize("case", list(FG_CASES.index))
def test_values_and_exact_changes_are_predict_crr(case):
    check_against_r(REF, case)


def test_the_fixture_has_every_fine_gray_case():
    assert set(REF["case"]) == set(FG_CASES.index)
    for case in FG_CASES.index:
        d = FG_DATA[FG_CASES.loc[case, "dataset"]]
        covs = FG_CASES.loc[case, "covariates"].split("+")
        rows = reference(REF, case, "new_rows")[0].astype(int)
        assert np.array_equal(reference(REF, case, "new_x")[:3], d[covs].to_numpy()[rows])


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: live comparison with cmprsk::predict.crr "
                           "skipped (install r-base-core r-cran-cmprsk)")
def test_live_against_predict_crr(tmp_path):
    probe = subprocess.run(["Rscript", "-e", "library(cmprsk)"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("R's cmprsk is not installed (apt-get install -y r-cran-cmprsk)")
    # other new patients and other deleted subjects than the golden file's (seed 7)
    subprocess.run(["Rscript", str(SCRIPT), str(FG_GOLDEN), str(tmp_path), "7"], check=True,
                   capture_output=True)
    ref = pd.read_csv(tmp_path / "reference.csv")
    for case in ["pbc_death", "sim_cengroup", "simc"]:
        assert not np.array_equal(reference(ref, case, "new_rows"),
                                  reference(REF, case, "new_rows"))
        check_against_r(ref, case)


# ------------------------------------------------------- leave one subject out

def brute_force(case, target):
    """``F(t|x)`` of ``ci.fit_fine_gray`` refitted on the data without each subject, minus
    the full fit's: every coefficient, risk set and Kaplan-Meier recomputed from scratch."""
    fit = case_fit(case)
    base = target.value(fit, fit.coef[None, :])[0]
    out = []
    for i in range(fit.n):
        f = case_fit(case, drop=i)
        out.append(target.value(f, f.coef[None, :])[0] - base)
    return np.array(out)


@pytest.fixture(scope="module")
def sim_case():
    """The simulated design with ties and two censoring groups, its exact changes and the
    brute-force refits."""
    fit = case_fit("sim_cengroup")
    X_new = new_patients(REF, "sim_cengroup", fit)
    target = ci.CumulativeIncidence(X_new, reference(REF, "sim_cengroup", "times")[0][1:])
    exact = ci.influence(fit, method="exact", target=target)
    return fit, target, exact, brute_force("sim_cengroup", target)


def test_exact_changes_equal_refits_without_each_subject(sim_case):
    fit, target, exact, brute = sim_case
    assert list(exact.loo_change.columns) == target.columns(fit)
    assert exact.loo_change.columns[0] == f"F({target.times[0]:g}|a)"
    assert np.abs(exact.loo_change.to_numpy() - brute).max() < 1e-8
    assert np.abs(brute).max() > 1e-3                        # the changes are not all 0


@pytest.mark.parametrize("case", ["sim_cengroup", "simc"])
def test_data_effect_is_the_baseline_without_the_subject(case):
    """The closed-form data effect at ``theta_hat`` against the target of a fit on the data
    without each subject (a fresh FineGrayData: its own risk sets and Kaplan-Meier), read
    at ``theta_hat``; the subjects alone and last in their censoring group (deleted
    literally) included."""
    fit = case_fit(case)
    target = ci.CumulativeIncidence(new_patients(REF, case, fit),
                                    reference(REF, case, "times")[0][1:])
    assert DeletionState(fit.data, fit.coef, hessian=False).special.any()
    effect = target.data_effect(fit)
    base = target.value(fit, fit.coef[None, :])[0]
    want = np.array([target.value(f, fit.coef[None, :])[0] - base
                     for f in (case_fit(case, drop=i) for i in range(fit.n))])
    assert np.abs(effect - want).max() < 1e-12
    assert np.abs(want).max() > 1e-3


@pytest.mark.parametrize("case", ["sim_cengroup", "pbc_death", "sim_cause2"])
def test_deleted_baseline_jumps_are_literal_deletion(case):
    """The closed form against :func:`baseline_jumps` of each deletion's presence mask
    (risk sets and Kaplan-Meier recomputed from the present subjects), rescaled to the full
    data's ``log_scale``. Measured when written: 8e-16 relative."""
    fit = case_fit(case)
    data = fit.data
    closed = deleted_baseline_jumps(DeletionState(data, fit.coef, hessian=False))
    P = 1.0 - np.eye(data.n)
    jumps, log_scale, _ = baseline_jumps(data, np.repeat(fit.coef[None, :], data.n, 0), P)
    full = baseline_jumps(data, fit.coef[None, :], np.ones((1, data.n)))[1]
    literal = jumps * np.exp(full - log_scale)[:, None]
    assert np.abs(closed - literal).max() < 1e-13 * np.abs(literal).max()


def test_jacobian_is_the_derivative(sim_case):
    fit, target, _, _ = sim_case
    J = target.jacobian(fit)
    h = 1e-6
    num = np.stack([(target.value(fit, (fit.coef + h * e)[None, :])[0]
                     - target.value(fit, (fit.coef - h * e)[None, :])[0]) / (2 * h)
                    for e in np.eye(fit.data.d)], axis=1)
    assert np.abs(J - num).max() < 1e-7 * np.abs(J).max()


@pytest.mark.parametrize("case", ["pbc_death", "mgus2_progression"])
def test_first_order_changes_correlate_with_exact(case):
    """VIF, Reid and one-step Newton (chain rule + the data effect) against the exact
    changes, per column; leaving out the data effect is worse. Measured when written,
    minimum over the columns: pbc_death VIF 0.998, mgus2 0.995."""
    fit = case_fit(case)
    times = reference(REF, case, "times")[0][1:]
    target = ci.CumulativeIncidence(new_patients(REF, case, fit), times)
    exact = ci.influence(fit, method="exact", target=target).loo_change.to_numpy()

    def corr(a):
        return min(np.corrcoef(a[:, j], exact[:, j])[0, 1] for j in range(a.shape[1]))

    for method in ("vif", "reid", "newton"):
        approx = ci.influence(fit, method=method, target=target).loo_change.to_numpy()
        assert corr(approx) > 0.99, method
    no_effect = ci.influence(fit, method="vif", target=target,
                             include_data_effect=False).loo_change.to_numpy()
    assert corr(no_effect) < 0.99


def test_auto_uses_exact_values_where_it_refits():
    fit = case_fit("pbc_death")
    target = ci.CumulativeIncidence(new_patients(REF, "pbc_death", fit), [1000.0, 3000.0])
    auto = ci.influence(fit, target=target)
    exact = ci.influence(fit, method="exact", target=target)
    verified = auto.verified.to_numpy()
    assert verified.sum() >= 10
    assert np.abs(auto.loo_change.to_numpy()[verified]
                  - exact.loo_change.to_numpy()[verified]).max() < 1e-10


# ------------------------------------------------------------------ inputs

def test_inputs_are_checked_and_not_modified():
    fit = case_fit("sim_cengroup")
    X_new = np.array([[0.1, 1.0, 0.5], [-1.0, 0.0, 0.2]])
    times = np.array([2.0, 5.0])
    keep_x, keep_t = X_new.copy(), times.copy()
    target = ci.CumulativeIncidence(X_new, times)
    target.jacobian(fit)
    target.data_effect(fit)
    assert np.array_equal(X_new, keep_x) and np.array_equal(times, keep_t)
    assert target.value(fit, fit.coef[None, :]).dtype == np.float64
    for bad in ([-1.0, 1.0], [-1.0], [np.nan], [], [[1.0, 2.0]]):
        with pytest.raises(ValueError, match="times must be finite non-negative"):
            ci.CumulativeIncidence(X_new, bad)
    # t = 0 is a time (predict.crr's jump at 0 where the cause fails at 0; here none: 0)
    assert (ci.CumulativeIncidence(X_new, [0.0]).value(fit, fit.coef[None, :]) == 0).all()
    with pytest.raises(ValueError, match="must have 3 covariates"):
        ci.CumulativeIncidence(X_new[:, :2], times).value(fit, fit.coef[None, :])
    frame = pd.DataFrame(X_new, columns=["x1", "x2", "x9"])
    with pytest.raises(ValueError, match=r"lack the model's covariate column\(s\) \['x3'\]"):
        ci.CumulativeIncidence(frame, times).columns(fit)
    with pytest.raises(ValueError, match="NaN"):
        ci.CumulativeIncidence([[np.nan, 0.0, 0.0]], times).value(fit, fit.coef[None, :])
    # a frame's columns are matched by name, in any order
    shuffled = pd.DataFrame(X_new, columns=["x1", "x2", "x3"])[["x3", "x1", "x2"]]
    assert np.array_equal(ci.CumulativeIncidence(shuffled, times).value(fit, fit.coef[None]),
                          target.value(fit, fit.coef[None]))


def test_only_fine_gray_fits_take_it():
    fg = case_fit("sim_cengroup")
    target = ci.CumulativeIncidence(np.zeros((1, 3)), [2.0])
    d = FG_DATA["sim"]
    X, t, s, _, _ = case_inputs(FG_CASES.loc["sim_cengroup"], d)
    cox = ci.fit_cox(X, t, (s == 1).astype(float))
    with pytest.raises(ValueError, match="'cumulative_incidence' is not available"):
        ci.influence(cox, target=target, method="vif")
    with pytest.raises(ValueError, match="'survival' is not available"):
        ci.influence(fg, target=ci.targets.Survival(np.zeros((1, 3)), [2.0]), method="vif")
    assert "cumulative_incidence" in FineGrayAudit.target_names

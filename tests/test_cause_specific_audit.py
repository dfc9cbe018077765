"""The audit of cause-specific Cox models (issue 47, item 2): the seam
(``influence_functions/cause_specific_audit.py``) and ``ci.targets.AbsoluteRisk`` against
riskRegression's CSC refitted without a subject and its ``absRisk.iid``
(``tests/r/cause_specific_reference.R``), and against the derivative in a case weight."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from test_cause_specific import DATA, NEW, TIMES, fit_case, reference

import coxinfluence as ci
from coxinfluence.influence_functions.cause_specific_audit import CauseSpecificAudit

LOO = reference("all", "loo_rows").ravel().astype(int)


def _target(case, cause=1, product_limit=True):
    strata = NEW["edema"] if case == "strata" else None
    return ci.targets.AbsoluteRisk(NEW, TIMES, cause=cause, product_limit=product_limit,
                                   strata=strata)


@pytest.mark.parametrize("case", ("efron", "breslow", "strata", "entry"))
def test_exact_refits_are_csc_refitted_without_the_subject(case):
    fit = fit_case(case)
    target = _target(case)
    coef = ci.influence(fit, method="exact")
    loo = coef.theta_change.to_numpy()[LOO] + fit.coef
    np.testing.assert_allclose(loo, reference(case, "loo_coef"), rtol=0, atol=1e-6)
    with warnings.catch_warnings():            # strata: edema = 1 has no cause-1 event
        warnings.simplefilter("ignore", ci.TargetBeyondFollowUpWarning)
        risk = ci.influence(fit, method="exact", target=target)
    expected = reference(case, "loo_risk_1") - target.value(fit, fit.coef)
    np.testing.assert_allclose(risk.loo_change.to_numpy()[LOO], expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("cause", (1, 2))
@pytest.mark.parametrize("product_limit", (False, True))
def test_reid_change_is_minus_absrisk_iid_without_ties(cause, product_limit):
    """Reid's change of F: J times the coefficients' Reid change plus the baselines'
    first-order change. riskRegression's absRisk.iid is its negative for the exponential
    formula; for the product limit its iid is the exponential formula's derivative taken
    at the product-limit survival (calcSeCif2_cpp), not the product limit's derivative,
    and differs from ours by about 1% of the change (ours is the product limit's, see
    test_reid_change_is_the_derivative_in_a_case_weight)."""
    fit = fit_case("noties")
    target = ci.targets.AbsoluteRisk(NEW, TIMES, cause=cause, product_limit=product_limit)
    seam = CauseSpecificAudit(fit)
    change = seam.change("reid") @ target.jacobian(fit).T + target.baseline_influence(fit)
    iid = reference("noties", f"iid{'' if product_limit else '0'}_{cause}")
    if product_limit:
        gap = np.abs(change + iid).max()
        assert 1e-7 < gap < 0.1 * np.abs(iid).max()
        # absRisk.se is the root of the sum of squares of absRisk.iid
        np.testing.assert_allclose(np.sqrt((iid ** 2).sum(axis=0)),
                                   reference("noties", f"riskse_{cause}").ravel(), rtol=1e-10)
    else:
        np.testing.assert_allclose(change, -iid, rtol=0, atol=1e-8)


@pytest.mark.parametrize("product_limit", (True, False))
def test_reid_change_is_the_derivative_in_a_case_weight(product_limit):
    """``-w_i dF/dw_i`` by central differences of refits with row i's weight moved (Efron
    ties, the product limit or not): the infinitesimal change, exactly."""
    X, time, status = DATA[["age", "logbili"]], DATA["time"], DATA["status"]
    fit = ci.fit_cause_specific(X, time, status)
    target = ci.targets.AbsoluteRisk(NEW, TIMES, cause=2, product_limit=product_limit)
    change = (CauseSpecificAudit(fit).change("reid") @ target.jacobian(fit).T
              + target.baseline_influence(fit))
    eps = 1e-5
    for i in (0, 55, 252):
        values = []
        for step in (eps, -eps):
            w = np.ones(len(DATA))
            w[i] += step
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                moved = ci.fit_cause_specific(X, time, status, weights=w)
            values.append(target.value(moved, moved.coef)[0])
        np.testing.assert_allclose(change[i], -(values[0] - values[1]) / (2 * eps),
                                   rtol=0, atol=1e-9)


def test_jacobian_is_the_derivative_in_the_coefficients():
    fit = fit_case("breslow")
    target = _target("breslow", cause=2)
    J = target.jacobian(fit)
    eps = 1e-6
    for k in range(len(fit.coef)):
        step = np.zeros(len(fit.coef))
        step[k] = eps
        numeric = (target.value(fit, fit.coef + step) - target.value(fit, fit.coef - step))
        np.testing.assert_allclose(J[:, k], numeric[0] / (2 * eps), rtol=0, atol=1e-7)


def test_approximations_track_the_refits_and_auto_verifies_the_top():
    fit = fit_case("efron")
    target = _target("efron")
    exact = ci.influence(fit, method="exact", target=target).loo_change.to_numpy()
    scale = np.abs(exact).max()
    for method in ("vif", "reid", "newton"):
        approx = ci.influence(fit, method=method, target=target).loo_change.to_numpy()
        assert np.abs(approx - exact).max() < 0.1 * scale, method
        assert np.corrcoef(approx.ravel(), exact.ravel())[0, 1] > 0.99, method
    auto = ci.influence(fit, target=target)
    top = auto.top(10)
    assert list(top.index) == list(ci.influence(fit, method="exact", target=target)
                                   .top(10).index)


def test_subjects_are_deleted_from_every_cause_at_once():
    """Two rows per subject (the follow-up split at 1000 days): a subject's exact change
    equals refitting without both rows; its units are the subjects."""
    d = DATA.iloc[:120]
    long = []
    for i, row in d.iterrows():
        if row["time"] > 1000:
            long.append(dict(row, start=0.0, stop=1000.0, st=0, id=i))
            long.append(dict(row, start=1000.0, stop=row["time"], st=row["status"], id=i))
        else:
            long.append(dict(row, start=0.0, stop=row["time"], st=row["status"], id=i))
    long = pd.DataFrame(long)
    fit = ci.fit_cause_specific(long[["age", "logbili"]], long["stop"], long["st"],
                                entry=long["start"], id=long["id"])
    result = ci.influence(fit, method="exact")
    assert len(result.theta_change) == 120
    for label in (d.index[0], d.index[7]):
        keep = long["id"] != label
        refit = ci.fit_cause_specific(long.loc[keep, ["age", "logbili"]], long.loc[keep, "stop"],
                                      long.loc[keep, "st"], entry=long.loc[keep, "start"])
        np.testing.assert_allclose(result.theta_change.loc[label].to_numpy() + fit.coef,
                                   refit.coef, rtol=0, atol=1e-8)


def test_a_subject_with_a_causes_only_event_is_flagged_undefined():
    rng = np.random.default_rng(5)
    n = 40
    X = pd.DataFrame({"x": rng.normal(size=n)})
    time = rng.exponential(size=n)
    status = np.where(rng.uniform(size=n) < 0.6, 1, 0)
    status[3] = 2                                   # the only event of cause 2
    fit = ci.fit_cause_specific(X, time, status)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ci.influence(fit, method="vif")
    assert bool(result.flags.loc[3, "undefined"])
    assert int(result.flags["undefined"].sum()) == 1


def test_robust_covariance_is_the_reid_changes_cross_product():
    fit = fit_case("efron")
    seam = CauseSpecificAudit(fit)
    D = seam.change("reid")
    np.testing.assert_allclose(seam.covariance(True), D.T @ D, rtol=1e-10)
    np.testing.assert_allclose(seam.covariance(True), fit.robust_covariance(), rtol=1e-10)


def test_the_report_names_the_model_and_its_causes(tmp_path):
    from coxinfluence.report import write_report
    fit = fit_case("efron")
    target = ci.targets.AbsoluteRisk(NEW.iloc[:1], [1000, 2000], cause=2)
    result = ci.influence(fit, target=target)
    assert result.loo_change.columns.tolist() == ["F2(1000|0)", "F2(2000|0)"]
    path = tmp_path / "report.html"
    write_report(path, result)
    html = path.read_text()
    assert "Cause-specific Cox model influence audit" in html
    assert "cause 1: 25 events, cause 2: 161 events" in html


def test_low_level_functions_take_the_fit():
    """ci.vif, ci.reid_influence, ci.newton_loo, ci.exact_loo through the family's seam:
    exact_loo = the audit's exact refits; reid_influence = n times R's dfbeta."""
    fit = fit_case("efron")
    loo = ci.exact_loo(fit)
    assert list(loo.columns) == fit.columns
    exact = ci.influence(fit, method="exact").theta_change.to_numpy()
    np.testing.assert_allclose(loo.to_numpy() - fit.coef, exact, rtol=0, atol=1e-12)
    reid = ci.reid_influence(fit).to_numpy()
    np.testing.assert_allclose(reid / fit.n, ci.residuals(fit, kind="dfbeta").to_numpy(),
                               rtol=1e-10, atol=1e-14)
    assert ci.vif(fit).shape == ci.newton_loo(fit).shape == (fit.n, 4)


def test_the_user_guide_example():
    """docs/user_guide/cause_specific.md: its numbers."""
    rng = np.random.default_rng(11)
    n = 400
    X = pd.DataFrame({"age": rng.normal(60, 10, n).round(), "treated": rng.integers(0, 2, n)})
    t1 = rng.exponential(8 * np.exp(-0.04 * (X["age"] - 60) + 0.6 * X["treated"]))
    t2 = rng.exponential(12 * np.exp(-0.06 * (X["age"] - 60)))
    censor = rng.uniform(2, 15, n)
    time = np.ceil(np.minimum(np.minimum(t1, t2), censor) * 12) / 12
    status = np.select([t1 <= np.minimum(t2, censor), t2 <= censor], [1, 2], 0)
    fit = ci.fit_cause_specific(X, time, status)
    assert round(float(np.exp(fit.params["cause 1: treated"])), 3) == 0.457
    assert fit.summary()["p"].round(3).tolist()[3] == 0.847
    new = pd.DataFrame({"age": [70], "treated": [1]})
    risk, se = fit.predict_absolute_risk(new, [2, 5], cause=1, se=True)
    assert risk.round(3).to_numpy().tolist() == [[0.148, 0.266]]
    assert se.round(3).to_numpy().tolist() == [[0.025, 0.038]]
    target = ci.targets.AbsoluteRisk(new, [5], cause=1)
    res = ci.influence(fit, target=target)
    top = res.top(5, by="target")
    assert top.index[0] == 303 and round(float(top.iloc[0, 1]), 3) == -0.009
    assert (status[303], round(time[303] * 12), X.loc[303, "treated"]) == (1, 5, 1)
    exact = ci.influence(fit, target=target, method="exact").loo_change.iloc[:, 0]
    np.testing.assert_allclose(res.loo_change.iloc[:, 0], exact, rtol=0, atol=1e-12)
    vif = ci.influence(fit, target=target, method="vif").loo_change.iloc[:, 0]
    assert round(float(np.corrcoef(vif, exact)[0, 1]), 5) == 0.99998


def test_the_audits_reid_change_of_the_risk_uses_the_literal_data_effect():
    """docs/seam.md, 'What the competing-risks families taught': the audit's "reid"
    change of a data-dependent target is J times Reid's change plus the literal deletion
    of the baselines, not the influence function (about 2% of the change on pbc)."""
    from coxinfluence.models.cause_specific import cause_parts
    from coxinfluence.models.cause_specific_influence import absolute_risk_changes
    fit = fit_case("efron")
    target = _target("efron")
    audit = ci.influence(fit, method="reid", target=target).loo_change.to_numpy()
    parts = cause_parts(fit, NEW)[0]
    influence = absolute_risk_changes(fit, parts, np.asarray(TIMES), 1)
    gap = np.abs(audit - influence).max() / np.abs(influence).max()
    assert 0.01 < gap < 0.03
    literal = (CauseSpecificAudit(fit).change("reid") @ target.jacobian(fit).T
               + target.data_effect(fit))
    np.testing.assert_allclose(audit, literal, rtol=0, atol=1e-14)

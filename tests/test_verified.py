"""The verified audit (``method="auto"``, the default of ``ci.influence``): exact numbers
where the audit is read, flags where an approximation cannot be trusted, LMAX and the
per-unit summary table. Oracles: exact refits of every unit (``method="exact"``, itself
checked against R and refits by definition elsewhere), the definitions of LD and LMAX."""
import warnings

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.audit.verification import (
    MIN_REFITS,
    SAFETY,
    TOP,
    Verification,
    refit_cap,
    verify,
)
from coxinfluence.demo import gbsg2_design
from coxinfluence.influence_functions.cox_audit import CoxAudit


@pytest.fixture(scope="module")
def gbsg():
    X, t, e = gbsg2_design()
    fit = ci.fit_cox(X, t, e)
    return fit, ci.influence(fit), ci.influence(fit, method="exact")


def test_auto_top_10_is_the_exact_top_10(gbsg):
    fit, auto, exact = gbsg
    assert auto.method == "auto" and auto.verification.rule_met
    assert list(auto.top(10).index) == list(exact.top(10).index)
    assert auto.top(1).index[0] == 115
    assert auto.likelihood_displacement.loc[115] == pytest.approx(
        exact.likelihood_displacement.loc[115], rel=1e-12)
    assert auto.ld_approx.loc[115] == pytest.approx(2.0167, abs=1e-4)    # VIF's 2.02
    assert auto.top(10)["verified"].all()


def test_verified_numbers_are_the_exact_ones_and_the_rest_vif(gbsg):
    fit, auto, exact = gbsg
    vif = ci.influence(fit, method="vif")
    ver = auto.verified.to_numpy()
    assert TOP * 2 <= ver.sum() <= refit_cap(fit.n)
    np.testing.assert_allclose(auto.loo_change.to_numpy()[ver],
                               exact.loo_change.to_numpy()[ver], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(auto.loo_change.to_numpy()[~ver],
                                  vif.loo_change.to_numpy()[~ver])
    # a difference of two log likelihoods near the maximum: equal to 1e-9 relative
    np.testing.assert_allclose(auto.ld_exact.to_numpy()[ver],
                               exact.ld_exact.to_numpy()[ver], rtol=1e-9)
    assert np.isnan(auto.ld_exact.to_numpy()[~ver]).all()
    # every flagged unit was refitted
    assert (ver | ~auto.flagged.to_numpy()).all()


def test_stopping_rule_is_what_it_says(gbsg):
    """When the rule is met, no unit left unrefitted can enter the exact top 10 unless its
    exact displacement exceeds SAFETY x its VIF one; over GBSG2 none does."""
    fit, auto, exact = gbsg
    v = auto.verification
    assert v.bound < v.threshold
    rest = ~auto.verified.to_numpy()
    assert exact.ld_exact.to_numpy()[rest].max() < v.threshold
    assert f"{auto.verified.sum()} patients refitted exactly" in v.describe("patients")


def test_first_round_is_what_the_rule_predicts_and_suffices(gbsg):
    """The first round refits the flagged units and the unflagged ones with SAFETY * LD_g
    at least the 10th largest LD_g (at least MIN_REFITS units in all, the others by LD):
    on GBSG2 the rule is met after it."""
    fit, auto, _ = gbsg
    ld = auto.ld_approx.to_numpy()
    flagged = auto.approx.flags.to_numpy().any(axis=1)
    level = np.sort(ld)[::-1][TOP - 1]
    unflagged = np.flatnonzero(~flagged)
    by_ld = unflagged[np.argsort(-ld[unflagged], kind="stable")]
    k = max(MIN_REFITS - int(flagged.sum()),
            int(np.count_nonzero(SAFETY * ld[unflagged] >= level)))
    assert flagged.sum() > 0
    expected = set(np.flatnonzero(flagged)) | set(by_ld[:k])
    v = auto.verification
    assert v.rule_met and set(v.refits.codes) == expected


def test_each_round_evaluates_the_objective_once_with_theta_hat_in_the_first(gbsg):
    """The displacements 2 [J(theta_{-g}) - J(theta_hat)]: J(theta_hat) is evaluated in
    the first round's batch (one kernel call per round, both terms by the same kernel),
    and equals the objective at theta_hat to rounding."""
    fit, auto, _ = gbsg
    calls = []

    class Counted(CoxAudit):
        def objective(self, thetas):
            calls.append(np.array(thetas, copy=True))
            return super().objective(thetas)

    ld = auto.ld_approx.to_numpy()
    flagged = auto.approx.flags.to_numpy().any(axis=1)
    v = verify(Counted(fit), ld, flagged)
    assert v.rule_met and len(calls) == 1               # GBSG2: one round
    np.testing.assert_array_equal(calls[0][0], fit.coef)
    assert calls[0].shape[0] == 1 + v.refits.ok.sum()
    assert v.objective_at_fit == pytest.approx(-fit.loglik, rel=1e-13)
    # (a fresh seam starts its refits from exact deleted Hessians: equal to rounding)
    np.testing.assert_allclose(v.ld_exact, auto.verification.ld_exact, rtol=1e-9)


def test_a_result_reads_its_displacements_from_the_refits_kernel_call(gbsg, monkeypatch):
    """ld_exact of an auto or exact result: 2 [J(theta_{-g}) - J(theta_hat)] with both terms
    from the one objective call made with the refits (auto: verify's); reading it (and
    the tables built on it) evaluates no objective again."""
    fit, auto, exact = gbsg
    np.testing.assert_allclose(auto.ld_exact.to_numpy(), auto.verification.ld_exact,
                               rtol=0, atol=8 * np.finfo(float).eps * abs(fit.loglik))
    calls = []
    original = type(fit).objective

    def counted(self, thetas, deleted=None):
        calls.append(np.array(thetas, copy=True))
        return original(self, thetas, deleted)

    monkeypatch.setattr(type(fit), "objective", counted)
    res = ci.influence(fit, method="exact")
    assert len(calls) == 1 and calls[0].shape[0] == 1 + fit.n
    np.testing.assert_array_equal(calls[0][0], fit.coef)
    values = original(fit, calls[0])
    np.testing.assert_array_equal(res.ld_exact.to_numpy(), 2.0 * (values[1:] - values[0]))
    for r in (res, auto):
        r.summary_frame()
        r.top(5)
    assert len(calls) == 1


def test_a_first_round_that_misses_is_followed_by_more(gbsg):
    """Displacements that rank the units badly (here: reversed): the first round's
    exact values miss the rule, and rounds follow until it is met or the cap is reached;
    the stopping rule still decides."""
    fit, auto, exact = gbsg
    ld = auto.ld_approx.to_numpy()
    misleading = np.empty_like(ld)
    misleading[np.argsort(ld)] = np.sort(ld)[::-1]      # the smallest get the largest
    none = np.zeros(fit.n, dtype=bool)
    first = max(MIN_REFITS, int(np.count_nonzero(
        SAFETY * misleading >= np.sort(misleading)[::-1][TOP - 1])))
    v = verify(CoxAudit(fit), misleading, none)
    assert v.refits.codes.size > first
    assert v.rule_met or v.refits.codes.size == v.cap
    if v.rule_met:
        rest = np.setdiff1d(np.arange(fit.n), v.refits.codes)
        assert SAFETY * misleading[rest].max() < v.threshold


def test_a_model_that_refits_every_flagged_unit_keeps_room_for_the_top(gbsg):
    """refit_every_flagged (the elastic net's selection changes): every flagged unit is
    refitted beyond the usual cap, with room for the first round's other units twice
    over, so that the flagged units never use up the top's verification."""
    fit, auto, _ = gbsg
    ld = auto.ld_approx.to_numpy()

    class EveryFlagged(CoxAudit):
        refit_every_flagged = True

    flagged = np.zeros(fit.n, dtype=bool)
    flagged[np.argsort(ld)[:100]] = True          # 100 flagged units of small displacement
    level = np.sort(ld)[::-1][TOP - 1]
    first = max(MIN_REFITS, int(np.count_nonzero((SAFETY * ld >= level) & ~flagged)))
    v = verify(EveryFlagged(fit), ld, flagged)
    assert v.cap == max(refit_cap(fit.n), 100 + 2 * first) > refit_cap(fit.n)
    assert set(np.flatnonzero(flagged)) <= set(v.refits.codes) and v.rule_met


def test_rule_not_met_within_the_cap_says_so_and_flags_contenders(gbsg):
    fit, auto, _ = gbsg
    ld = auto.ld_approx.to_numpy()
    v = verify(CoxAudit(fit), ld, np.zeros(fit.n, dtype=bool), min_refits=5, max_refits=8)
    assert isinstance(v, Verification) and not v.rule_met
    assert v.refits.codes.size == 8 and not np.isfinite(v.threshold)
    order = np.argsort(-ld)
    assert set(v.refits.codes) == set(order[:8])
    assert v.unverified_top.sum() == fit.n - 8          # with no 10th exact value, all may
    assert "is not certain" in v.describe()


def _nearly_separated(seed=0, n=60):
    """x2 = 1 for the 10 earliest events and for row 10, the only x2 = 1 patient who
    fails late: deleting row 10 makes x2's likelihood monotone (no maximum)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    g = (np.arange(n) < 11).astype(float)
    t = np.where(g == 1, rng.uniform(0, 1, n), rng.uniform(1, 5, n))
    t[10] = 4.9
    return np.column_stack([x, g]), t, np.ones(n)


def test_a_deletion_without_maximum_is_undefined_never_a_number():
    X, t, e = _nearly_separated()
    fit = ci.fit_cox(X, t, e)
    assert fit.converged
    vif = ci.influence(fit, method="vif")
    assert np.isfinite(vif.loo_change.iloc[10]).all()        # VIF gives a number (0.83)
    res = CoxAudit(fit).refit()
    assert list(np.flatnonzero(res.status != "ok")) == [10]
    assert res.status[10] == "undefined" and np.isnan(res.theta[10]).all()
    auto = ci.influence(fit)
    assert auto.flags.loc[10, "undefined"] and auto.flagged.loc[10]
    assert np.isnan(auto.loo_change.iloc[10]).all() and not auto.verified.loc[10]
    assert np.isnan(auto.likelihood_displacement.iloc[10])
    assert auto.top(fit.n).index[-1] == 10                    # undefined ranks last
    with pytest.warns(ci.LeaveOneOutWarning, match=r"undefined.*\(rows 10\)"):
        ci.exact_loo(fit)


def test_deleting_the_only_event_is_undefined():
    rng = np.random.default_rng(1)
    t, e, X = rng.uniform(0, 5, 20), np.zeros(20), rng.normal(size=(20, 1))
    e[3], X[3], t[3] = 1, 0.0, 0.01       # every patient at risk: the fit has a maximum
    fit = ci.fit_cox(X, t, e)
    assert fit.converged
    res = CoxAudit(fit).refit()
    assert res.status[3] == "undefined" and np.isnan(res.theta[3]).all()
    assert (res.status[np.arange(20) != 3] == "ok").all()
    auto = ci.influence(fit)
    assert auto.flags.loc[3, "undefined"] and np.isnan(auto.loo_change.iloc[3]).all()


def test_a_rare_dummy_is_undefined_in_its_column_only():
    rng = np.random.default_rng(2)
    n = 80
    X = pd.DataFrame({"a": rng.normal(size=n), "rare": 0.0})
    X.loc[7, "rare"] = 1.0
    t, e = rng.exponential(size=n), (rng.uniform(size=n) < 0.8).astype(float)
    t[7], e[7] = np.median(t), 1.0        # an event with events before it: a maximum
    fit = ci.fit_cox(X, t, e)
    assert fit.converged
    auto = ci.influence(fit)
    assert auto.flags.loc[7, "undefined"] and auto.refits.status[
        list(auto.refits.codes).index(7)] == "undefined"
    assert np.isnan(auto.loo_change.loc[7, "rare"]) and np.isfinite(auto.loo_change.loc[7, "a"])
    others = auto.flags["undefined"].drop(7)
    assert not others.any()


def test_a_fit_that_did_not_converge_is_flagged_not_refitted():
    rng = np.random.default_rng(0)
    n = 60
    x = rng.normal(size=(n, 2))
    g = (np.arange(n) < 10).astype(float)
    t = np.where(g == 1, rng.uniform(0, 1, n), rng.uniform(1, 5, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ci.fit_cox(np.column_stack([x, g]), t, np.ones(n))
    with pytest.warns(ci.ConvergenceWarning, match=r"\['x2'\] diverge"):
        res = ci.influence(fit)
    assert not res.fit_ok and res.refits is None and not res.verified.any()
    assert res.flags["unstable"].all()


def test_lmax_is_the_top_eigenvector_of_the_curvature_matrix():
    """Pettitt and Bin Daud (1989): B = U I^{-1} U' (n x n) from the score residuals
    (weighted), |l_max| its unit top eigenvector; per subject U sums a subject's rows."""
    rng = np.random.default_rng(3)
    n = 50
    X = rng.normal(size=(n, 3))
    t, e = rng.exponential(size=n).round(1) + 0.1, (rng.uniform(size=n) < 0.7).astype(float)
    w = rng.uniform(0.5, 2, n)
    fit = ci.fit_cox(X, t, e, weights=w)
    U = w[:, None] * np.asarray(ci.score_residuals(fit))
    B = U @ np.linalg.solve(fit.information, U.T)
    vals, vecs = np.linalg.eigh(B)
    res = ci.influence(fit, method="vif")
    np.testing.assert_allclose(res.lmax.to_numpy(), np.abs(vecs[:, -1]), atol=1e-10)
    # subjects: each follow-up split at half time into two rows with their own
    # covariates (time-varying); the scores are summed per subject
    half = t / 2
    start = np.concatenate([np.zeros(n), half])
    stop = np.concatenate([half, t])
    ev = np.concatenate([np.zeros(n), e])
    Xs = np.vstack([X, X + rng.normal(scale=0.3, size=X.shape)])
    ws = np.concatenate([w, w])
    ids = np.concatenate([np.arange(n), np.arange(n)])
    fit_s = ci.fit_cox(Xs, stop, ev, start=start, weights=ws, id=ids)
    Us = pd.DataFrame(ws[:, None] * np.asarray(ci.score_residuals(fit_s))).groupby(ids).sum()
    Bs = Us.to_numpy() @ np.linalg.solve(fit_s.information, Us.to_numpy().T)
    top = np.abs(np.linalg.eigh(Bs)[1][:, -1])
    np.testing.assert_allclose(ci.influence(fit_s, method="vif").lmax.to_numpy(), top,
                               atol=1e-10)


def test_summary_frame_joins_everything(gbsg):
    fit, auto, _ = gbsg
    sf = auto.summary_frame()
    assert list(sf.index) == list(auto.loo_change.index)
    for c in fit.columns:
        np.testing.assert_array_equal(sf[f"change {c}"], auto.loo_change[c])
        np.testing.assert_allclose(sf[f"dfbetas {c}"], auto.loo_change[c] / auto.target_se[c])
    for c in ("likelihood_displacement", "ld_exact", "ld_approx", "lmax", "undefined",
              "unstable", "refit_failed", "unverified_top", "flagged", "verified"):
        assert c in sf.columns
    assert sf["verified"].sum() == auto.verified.sum()
    np.testing.assert_allclose((sf["lmax"] ** 2).sum(), 1.0, rtol=1e-12)


def test_penalised_lifelines_model_auto():
    from lifelines import CoxPHFitter
    X, t, e = gbsg2_design()
    df = X.assign(time=t.to_numpy(), cens=e.to_numpy()).iloc[:200]
    cph = CoxPHFitter(penalizer=0.1).fit(df, "time", "cens")
    auto = ci.influence(cph, df)
    exact = ci.influence(cph, df, method="exact")
    assert list(auto.top(10).index) == list(exact.top(10).index)
    ver = auto.verified.to_numpy()
    assert ver.sum() >= 20
    np.testing.assert_allclose(auto.loo_change.to_numpy()[ver],
                               exact.loo_change.to_numpy()[ver], atol=1e-12)


def test_kidney_clusters_refit_as_r():
    """survival::kidney by patient (two rows each, at risk together): every
    leave-one-patient-out refit equals R's (golden fixture, tests/r/kidney_reference.R).
    Patient 21's quasi-Newton refit once ran onto a flat likelihood far away and was
    called undefined; one diverging refit also failed its whole batch (28 of 38 NaN)."""
    from pathlib import Path
    fix = Path(__file__).parent / "fixtures" / "r_kidney"
    d = pd.read_csv(fix / "kidney.csv")
    ref = pd.read_csv(fix / "loo_coef.csv").set_index("id")
    X = pd.DataFrame({"age": d.age, "sex": d.sex.astype(float)})
    for level in ("GN", "AN", "PKD"):             # R: "Other" is the reference level
        X[f"disease{level}"] = (d.disease == level).astype(float)
    fit = ci.fit_cox(X, d.time, d.status)
    np.testing.assert_allclose(fit.coef, pd.read_csv(fix / "coef.csv").to_numpy()[0],
                               rtol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ci.LeaveOneOutWarning)
        loo = ci.exact_loo(fit, groups=d.id)
    assert list(loo.index) == list(ref.index)
    np.testing.assert_allclose(loo.to_numpy(), ref.to_numpy(), rtol=1e-7, atol=1e-9)


def test_lmax_from_scores_paths():
    """lmax_from_scores: the Gram path (positive definite information) and the QR path (an
    information that is not, a fit without maximum) give the dense top eigenvector of
    B = U I^{-1} U'; scores all zero give zeros (no top direction)."""
    from coxinfluence.audit.result import lmax_from_scores
    rng = np.random.default_rng(5)
    U = rng.normal(size=(40, 3))
    A = rng.normal(size=(3, 3))
    for information in (A @ A.T + 3 * np.eye(3), np.diag([2.0, 1.0, -0.5])):
        vals, vecs = np.linalg.eigh(U @ np.linalg.solve(information, U.T))
        np.testing.assert_allclose(lmax_from_scores(U, information), np.abs(vecs[:, -1]),
                                   atol=1e-12)
    assert not lmax_from_scores(np.zeros((5, 2)), np.eye(2)).any()


def test_bench_flags_simulation_of_auto_is_the_audit(gbsg):
    """paper_appendix/bench_flags.py simulates ``auto`` over many data sets by feeding its
    own ``verify`` the exact displacements: on GBSG2 it refits exactly the units the real
    audit refitted, and agrees that the rule is met and the top 10 is the exact one."""
    import sys
    from pathlib import Path
    from types import SimpleNamespace
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paper_appendix"))
    from bench_flags import simulate_auto

    fit, auto, exact = gbsg
    ld_exact = exact.ld_exact.to_numpy()
    r = SimpleNamespace(U=fit.n, ld_vif=auto.ld_approx.to_numpy(), ld_lc=None, ld_so2=None,
                        ld_exact=ld_exact, defined=np.isfinite(ld_exact))
    flagged = np.flatnonzero(auto.approx.flags.to_numpy().any(axis=1))
    used, same_set, same_order, met = simulate_auto(r, SAFETY, "vif", flagged)
    assert used == auto.verification.refits.codes.size and met and same_set and same_order
    # and a smaller safety factor with no flags refitted uses fewer refits
    assert simulate_auto(r, 1.0, "vif", [])[0] < used

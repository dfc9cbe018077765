"""With a target, ``method="auto"`` verifies what the reader ranks (issues 39, 44): beyond
the top 10 by likelihood displacement it refits the top 10 by the target's own change
(each column's, and ``InfluenceResult.target_influence``, the largest standardised change
over the target's columns) until that top cannot change, by the displacement's stopping
rule on the target's scale with one-step Newton estimates rescored
(:func:`coxinfluence.audit.verification.verify_target`), or refits every unit at small
sizes (tests/test_certificates.py); ``top(k, by="target")`` ranks by it. Checked
against exact refits of every unit (``method="exact"``) on bundled data: Fine-Gray (R's
pbc and mgus2, the crr fixtures), Cox (lifelines' rossi and GBSG2) and AFT (rossi)
fits."""
import functools

import numpy as np
import pytest
from lifelines.datasets import load_rossi
from test_fine_gray import GOLDEN as FG_GOLDEN
from test_fine_gray import fit_case, load

import coxinfluence as ci
from coxinfluence import targets as T
from coxinfluence.audit import run, verification

ROSSI = load_rossi()
RCOVS = [c for c in ROSSI.columns if c not in ("week", "arrest")]
FG_CASES, _, FG_DATA = load(FG_GOLDEN)


def _fine_gray(case):
    row = FG_CASES.loc[case]
    d = FG_DATA[row["dataset"]]
    fit = fit_case(row, d)
    return fit, d[fit.columns].mean().to_frame("mean").T, float(np.median(d[row["time"]]))


def _case(name):
    """(fit, target) of the audits checked against exact refits."""
    if name == "fine_gray pbc death F(median)":
        fit, mean, t = _fine_gray("pbc_death")
        return fit, ci.CumulativeIncidence(mean, [t])
    if name == "fine_gray mgus2 F(25%, 75%)":
        fit, mean, _ = _fine_gray("mgus2_progression")
        return fit, ci.CumulativeIncidence(mean, [30.0, 120.0])
    if name == "fine_gray pbc transplant hr":
        return _fine_gray("pbc_transplant")[0], "hr"
    mean = ROSSI[RCOVS].mean().to_frame("mean").T
    if name == "cox rossi S(30)":
        return ci.fit_cox(ROSSI[RCOVS], ROSSI.week, ROSSI.arrest), T.Survival(mean, [30.0])
    if name == "cox rossi rr of 3":
        return (ci.fit_cox(ROSSI[RCOVS], ROSSI.week, ROSSI.arrest),
                T.RelativeRisk(ROSSI[RCOVS].iloc[:3]))
    if name == "aft rossi S(30)":
        return (ci.fit_aft(ROSSI[RCOVS], ROSSI.week, ROSSI.arrest, dist="weibull"),
                ci.targets.Survival(mean, [30.0]))
    raise KeyError(name)


CASES = ["fine_gray pbc death F(median)", "fine_gray mgus2 F(25%, 75%)",
         "fine_gray pbc transplant hr", "cox rossi S(30)", "cox rossi rr of 3",
         "aft rossi S(30)"]


@pytest.fixture(scope="module", params=CASES)
def audits(request):
    """The rule's path (beyond EXHAUSTIVE units, forced: at these sizes the default
    refits every unit, tests/test_certificates.py)."""
    fit, target = _case(request.param)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run, "EXHAUSTIVE", 0)
        auto = ci.influence(fit, target=target)
    return request.param, auto, auto.exact()


def test_the_top_by_the_target_is_exact(audits):
    """auto's top 10 by the target's change is the exact top 10, in order, every one of
    them verified (an exact refit), with the exact numbers; the stopping rule was met."""
    name, auto, exact = audits
    top = auto.top(10, by="target")
    assert list(top.index) == list(exact.top(10, by="target").index), name
    assert top["verified"].all()
    assert auto.verification.target.rule_met
    np.testing.assert_allclose(auto.loo_change.loc[top.index],
                               exact.loo_change.loc[top.index], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(top["target_influence"],
                               exact.target_influence.loc[top.index], rtol=1e-10)
    # the displacement's top is verified as before
    assert list(auto.top(10).index) == list(exact.top(10).index)


def test_the_target_safety_factor_holds(audits):
    """TARGET_SAFETY bounds exact / estimate (the target rescored at the one-step Newton
    coefficients, the rule's estimate beyond EXHAUSTIVE units) of each column over the
    units that are not flagged and whose exact value is at least half the 10th largest
    (measured at most 1.49 on smooth targets; verification.TARGET_SAFETY's docstring)."""
    name, auto, exact = audits
    se = auto.dfbetas_se.to_numpy()
    est = np.abs(run.rankings(run.newton_rescored(auto.model, auto.target), se))
    ex = np.abs(run.rankings(exact.loo_change.to_numpy(), se))
    for j in range(ex.shape[1]):
        tenth = np.sort(ex[:, j][np.isfinite(ex[:, j])])[::-1][9]
        sel = (ex[:, j] >= 0.5 * tenth) & ~auto.flagged.to_numpy()
        assert sel.sum() >= 5
        assert (ex[sel, j] / est[sel, j]).max() < 1.5 < verification.TARGET_SAFETY, name


def test_displacement_alone_misses_the_targets_top():
    """Why: on pbc (death, F at the median time) the units refitted for the displacement
    leave most of the exact top 10 by the target's change to VIF estimates."""
    fit, target = _case("fine_gray pbc death F(median)")
    auto = ci.influence(fit, target=target)
    exact = auto.exact()
    first = auto.refits.codes[:auto.refits.codes.size - auto.verification.target.n_refits]
    by_ld = set(auto.loo_change.index[first])
    top = list(exact.top(10, by="target").index)
    assert len(set(top) - by_ld) >= 5
    assert auto.verification.target.n_refits > 0
    assert "more refitted for the target" in auto.verification.describe()


def test_coefficient_audits_are_unchanged():
    """The coefficients: no target phase (the displacement's top is theirs); None and
    "coef" the same audit; top() ranks by the displacement by default."""
    fit = ci.fit_cox(ROSSI[RCOVS], ROSSI.week, ROSSI.arrest)
    a, b = ci.influence(fit), ci.influence(fit, target="coef")
    assert a.verification.target is None and b.verification.target is None
    np.testing.assert_array_equal(a.loo_change.to_numpy(), b.loo_change.to_numpy())
    np.testing.assert_array_equal(a.refits.codes, b.refits.codes)
    ld = a.likelihood_displacement.sort_values(ascending=False, kind="stable")
    assert list(a.top(10).index) == list(ld.index[:10])
    assert "target_influence" not in a.top(3).columns
    # by="target" for coefficients: the largest |dfbetas|
    want = a.dfbetas.abs().max(axis=1).sort_values(ascending=False, kind="stable")
    assert list(a.top(5, by="target").index) == list(want.index[:5])


def test_target_influence_is_the_largest_standardised_change():
    fit = ci.fit_cox(ROSSI[RCOVS], ROSSI.week, ROSSI.arrest)
    mean = ROSSI[RCOVS].mean().to_frame("mean").T
    res = ci.influence(fit, method="vif", target=T.Survival(mean, [0.5, 20.0, 45.0]))
    se = res.target_se
    assert se.iloc[0] == 0                    # before the first event: S = 1, left out
    want = (res.loo_change.iloc[:, 1:].abs() / se.iloc[1:]).max(axis=1)
    np.testing.assert_allclose(res.target_influence, want, rtol=1e-15)
    # one column: the order of |change|
    one = ci.influence(fit, method="vif", target=T.Survival(mean, [20.0]))
    by_col = one.top(8, by="S(20|mean)")
    assert list(one.top(8, by="target").index) == list(by_col.index)
    with pytest.raises(ValueError, match=r"by must be None \(likelihood displacement\), "
                                         r"'target' or a column of loo_change"):
        one.top(3, by="S(21|mean)")


def test_limit_reached_flags_and_warns(monkeypatch):
    """Within too few refits the target's top is not certain: a TopNotVerifiedWarning
    saying so, and the units that may belong in it get unverified_top (beyond the size
    at which every unit is refitted: forced here)."""
    fit, target = _case("fine_gray pbc death F(median)")
    monkeypatch.setattr(run, "EXHAUSTIVE", 0)
    monkeypatch.setattr(run, "verify_target",
                        functools.partial(verification.verify_target, max_refits=2))
    with pytest.warns(run.TopNotVerifiedWarning,
                      match=r"2 more refitted for the target \(the limit, 2\); its top 10 "
                            r"is not certain: \d+ patients not refitted may belong in it"):
        res = ci.influence(fit, target=target)
    tv = res.verification.target
    assert not tv.rule_met and tv.n_refits == 2
    assert tv.unverified_top.any()
    flags = res.flags["unverified_top"].to_numpy()
    assert (flags >= tv.unverified_top).all()
    assert not (flags & res.verified.to_numpy()).any()
    # the contenders: not refitted, with TARGET_SAFETY x estimate reaching the 10th exact
    est = run.rankings(run.newton_rescored(res.model, res.target),
                       res.dfbetas_se.to_numpy())[:, 0]
    refitted = np.zeros(len(est), dtype=bool)
    refitted[res.refits.codes] = True
    want = ~refitted & (verification.TARGET_SAFETY * est >= tv.threshold[0])
    np.testing.assert_array_equal(tv.unverified_top, want)

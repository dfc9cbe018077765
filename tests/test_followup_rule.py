"""No silent extrapolation (issue 44, items 5 and 7): one rule for predictions, targets and
``ci.evaluate``.

A time past the follow-up the value rests on (the last event time of the training data, of
the patient's stratum; Fine-Gray: the cause's last failure time) is warned about with
``ci.TargetBeyondFollowUpWarning``, the same sentence from ``fit.predict_*`` as from the
target of ``ci.influence`` (:func:`coxinfluence.models.predictions.follow_up_notes`), and
the value is returned; inside the follow-up nothing is warned. ``ci.evaluate`` warns for a
time past the training follow-up and refuses one at or past the test set's last time (as
``riskRegression::Score``, which computes nothing there).

Fine-Gray at ``t = 0``: where the cause fails at time 0, ``predict.crr`` has a jump there,
and ``predict_cumulative_incidence(X_new, 0)`` is it. Golden numbers from
``tests/r/fine_gray_time_zero_reference.R`` (``tests/fixtures/r_fine_gray_time_zero``; R
4.2.2, cmprsk 2.2-11), rerun live where R is installed.
"""
from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.data import followup

HERE = Path(__file__).parent
GBSG = HERE / "fixtures" / "integration" / "gbsg2_subset.csv"
ZERO = HERE / "fixtures" / "r_fine_gray_time_zero"
SCRIPT = HERE / "r" / "fine_gray_time_zero_reference.R"
COVS = ["age", "tsize", "pnodes", "progrec", "estrec", "horTh"]
W = ci.TargetBeyondFollowUpWarning


@pytest.fixture(scope="module")
def gbsg():
    return pd.read_csv(GBSG, index_col="pid")


def _quiet(call, *args, **kwargs):
    """``call(*args, **kwargs)`` with the warning an error: inside the follow-up, none."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", W)
        return call(*args, **kwargs)


def _mean(d, cols):
    return d[cols].mean().to_frame("mean").T


def test_one_warning_class_everywhere():
    assert ci.TargetBeyondFollowUpWarning is followup.TargetBeyondFollowUpWarning
    assert ci.targets.TargetBeyondFollowUpWarning is W
    assert issubclass(W, UserWarning)


# ------------------------------------------------------------------- predictions

def test_cox_predictions_past_the_last_event_warn(gbsg):
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens)
    last = gbsg.time[gbsg.cens == 1].max()                  # 2456; follow-up to 2659
    X = _mean(gbsg, COVS)
    inside = _quiet(fit.predict_survival, X, [1000.0, last])
    _quiet(fit.predict_cumulative_hazard, X, [0.0, last])
    with pytest.warns(W, match=rf"^S\(t\|x\) at times 2500, 5000: past the last event time "
                               rf"of the data, {last:g}; .* last plateau carried forward"):
        S = fit.predict_survival(X, [1000.0, 2500.0, 5000.0])
    # returned: the plateau, S(2500) = S(5000) = S(last)
    assert S.iloc[0, 1] == S.iloc[0, 2] == inside.iloc[0, 1]
    with pytest.warns(W, match=r"^Lambda\(t\|x\) at time 5000: past the last event time"):
        fit.predict_cumulative_hazard(X, [5000.0])
    # the one rule: the prediction's sentence is the influence target's
    with pytest.warns(W) as record:
        fit.predict_survival(X, [1000.0, 2500.0, 5000.0])
    note = ci.targets.Survival(X, [1000.0, 2500.0, 5000.0]).followup_notes(fit)
    assert [str(w.message) for w in record] == list(note)


def test_the_warning_points_at_the_callers_line(gbsg):
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens)
    X = _mean(gbsg, COVS)
    from coxinfluence.models import predictions
    for call in (lambda: fit.predict_survival(X, [9000.0]),
                 lambda: predictions.predict_survival(fit, X, [9000.0])):
        with pytest.warns(W) as record:
            call()
        assert Path(record[0].filename).name == Path(__file__).name


def test_stratified_cox_predictions_name_the_stratum(gbsg):
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens, strata=gbsg.tgrade)
    last = gbsg.time[gbsg.cens == 1].groupby(gbsg.tgrade).max()
    t = float(np.floor(last.min() + 1))
    late = sorted(s for s in last.index if last[s] < t)
    assert 0 < len(late) < 3                                # some strata past, not all
    X = pd.concat([_mean(gbsg, COVS)] * 3)
    X.index = ["p_I", "p_II", "p_III"]
    strata = ["I", "II", "III"]
    _quiet(fit.predict_survival, X, [100.0, last.min()], strata=strata)
    with pytest.warns(W) as record:
        fit.predict_survival(X, [100.0, t], strata=strata)
    msgs = [str(w.message) for w in record]
    assert len(msgs) == len(late)
    for s, msg in zip(late, msgs):
        assert msg.startswith(f"S(t|x) at time {t:g}: past the last event time of stratum "
                              f"'{s}' (patients 'p_{s}'), {last[s]:g}; ")


def test_aft_predictions_past_the_last_event_are_extrapolations():
    from lifelines.datasets import load_rossi
    r = load_rossi()
    covs = ["fin", "age", "prio"]
    fit = ci.fit_aft(r[covs], r.week, r.arrest, dist="weibull")
    last = r.week[r.arrest == 1].max()                      # 52: the end of follow-up
    X = _mean(r, covs)
    _quiet(fit.predict_survival, X, [20.0, last])
    _quiet(fit.predict_quantile, X, 0.5)            # no time: no rule
    with pytest.warns(W, match=rf"^S\(t\|x\) at time 80: past the last event time of the "
                               rf"data, {last:g}; S\(t\|x\) there is extrapolated by the "
                               r"parametric \(weibull\) model"):
        S = fit.predict_survival(X, [20.0, 80.0])
    assert S.iloc[0, 1] < S.iloc[0, 0]                      # not a plateau: the model's


def test_fine_gray_predictions_past_the_last_failure_warn():
    rng = np.random.default_rng(44)
    n = 150
    X = pd.DataFrame({"a": rng.normal(size=n).round(2), "b": rng.integers(0, 2, n)})
    t1, t2, c = rng.exponential(1.0, n), rng.exponential(2.0, n), rng.exponential(3.0, n)
    time = np.minimum.reduce([t1, t2, c]).round(3)
    status = np.select([t1 <= np.minimum(t2, c), t2 <= c], [1, 2], 0)
    fit = ci.fit_fine_gray(X, time, status, cause=1)
    last = time[status == 1].max()
    _quiet(fit.predict_cumulative_incidence, X.iloc[:2], [0.0, last])
    with pytest.warns(W, match=rf"^F\(t\|x\) at time {last + 1:g}: past the last cause-1 "
                               rf"failure time of the data, {last:g}; .* plateau"):
        F = fit.predict_cumulative_incidence(X.iloc[:2], [last, last + 1])
    np.testing.assert_array_equal(F.iloc[:, 0], F.iloc[:, 1])


# ---------------------------------------------------------------------- evaluate

@pytest.fixture(scope="module")
def split():
    from lifelines.datasets import load_gbsg2
    g = load_gbsg2()
    X = g[["age", "tsize", "pnodes", "progrec", "estrec"]]
    train, test = g.index % 3 != 2, g.index % 3 == 2
    fit = ci.fit_cox(X[train], g.time[train], g.cens[train])
    return fit, X[test], g.time[test], g.cens[test], g.time[train][g.cens[train] == 1].max()


def test_multistate_predictions_past_the_last_transition_warn():
    """The same rule for the multi-state family: past the data's last transition no
    hazard jumps, the state probabilities are carried forward, and the prediction and
    the target say so; nothing is said inside the follow-up."""
    from coxinfluence.models.multistate import simulate_illness_death
    fit = ci.fit_multistate(*simulate_illness_death(n_subjects=60))
    last = max(f.data.time[f.data.event_rows].max() for f in fit.fits)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ci.TargetBeyondFollowUpWarning)
        inside = fit.predict_state_probabilities([[0.0, 1.0]], [last])
        assert ci.targets.StateProbability([[0.0, 1.0]], [last]).followup_notes(fit) == ()
    with pytest.warns(ci.TargetBeyondFollowUpWarning,
                      match=rf"time {last + 1:g}: past the last transition time of the "
                            rf"data, {last:g}; no hazard jumps after it"):
        after = fit.predict_state_probabilities([[0.0, 1.0]], [last + 1])
    # carried forward: the value past the last transition is the value at it
    np.testing.assert_allclose(after.to_numpy(), inside.to_numpy(), rtol=0, atol=1e-15)
    target = ci.targets.StateProbability([[0.0, 1.0]], [last + 1], state="1")
    with pytest.warns(ci.TargetBeyondFollowUpWarning, match="past the last transition"):
        res = ci.influence(fit, target=target, method="vif")
    assert res.target_notes == target.followup_notes(fit) != ()


def test_evaluate_past_the_training_follow_up_warns(split):
    fit, X, time, event, last = split
    assert last < 2500 < time.max()                        # 2456 < 2500 < 2659
    table = _quiet(ci.evaluate, fit, X, time, event, times=[365, last])
    with pytest.warns(W, match=rf"^ci\.evaluate: the Brier score and the AUC .* past the "
                               rf"training data's follow-up: S\(t\|x\) at time 2500: past "
                               rf"the last event time of the data, {last:g}; .*plateau"):
        late = ci.evaluate(fit, X, time, event, times=[365, 2500])
    # the numbers are returned (warned, not refused); 365 is unchanged
    brier = late[late.metric == "brier"].set_index("time").estimate
    assert np.isfinite(brier[2500.0])
    assert brier[365.0] == table[table.metric == "brier"].set_index("time").estimate[365.0]
    # at or past the test set's last time: refused (Score computes nothing there)
    with pytest.raises(ci.InputError, match="beyond the test set's follow-up"):
        ci.evaluate(fit, X, time, event, times=[365, time.max()])


# --------------------------------------------------------- Fine-Gray at t = 0 vs crr

def _load(folder):
    d = pd.read_csv(folder / "data.csv")
    new = pd.read_csv(folder / "new.csv")
    ref = pd.read_csv(folder / "reference.csv")
    return d, new, ref


def _ref(ref, case, quantity):
    r = ref[(ref["case"] == case) & (ref["quantity"] == quantity)]
    out = np.full((r["row"].max() + 1, r["col"].max() + 1), np.nan)
    out[r["row"].to_numpy(), r["col"].to_numpy()] = r["value"].to_numpy()
    return out


def check_time_zero(d, new, ref):
    assert ((d.time == 0) & (d.status == 1)).sum() >= 2
    for case in ("plain", "cengroup"):
        fit = ci.fit_fine_gray(d[["x1", "x2"]], d.time, d.status, cause=1,
                               cengroup=d.cg if case == "cengroup" else None)
        np.testing.assert_allclose(fit.coef, _ref(ref, case, "coef")[0], rtol=1e-8)
        times = _ref(ref, case, "times")[0]
        assert times[0] == 0
        F = _quiet(fit.predict_cumulative_incidence, new, times).to_numpy()
        want = _ref(ref, case, "cif_at")
        assert (want[:, 0] > 0).all()                       # crr's jump at 0
        np.testing.assert_allclose(F, want, rtol=1e-8)
        # the whole step function: predict.crr's rows, at its jump times (0 first)
        u = _ref(ref, case, "uftime")[:, 0]
        F = _quiet(fit.predict_cumulative_incidence, new, u).to_numpy().T
        np.testing.assert_allclose(F, _ref(ref, case, "cif"), rtol=1e-8)
        # the target of the audit reads the same at 0
        target = ci.targets.CumulativeIncidence(new, [0.0])
        np.testing.assert_allclose(target.value(fit, fit.coef[None, :])[0], want[:, 0],
                                   rtol=1e-8)


def test_fine_gray_at_time_zero_is_predict_crr():
    check_time_zero(*_load(ZERO))


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: live comparison with cmprsk skipped "
                           "(the golden fixture is compared above)")
def test_live_fine_gray_at_time_zero(tmp_path):
    probe = subprocess.run(["Rscript", "-e", "library(cmprsk)"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("R's cmprsk is not installed (apt-get install -y r-cran-cmprsk)")
    subprocess.run(["Rscript", str(SCRIPT), str(tmp_path), "7"], check=True,
                   capture_output=True, timeout=300)
    check_time_zero(*_load(tmp_path))

"""Targets beyond follow-up (issue 39): a target time past the last event time of the data
(of the patient's stratum) is warned about, ``ci.TargetBeyondFollowUpWarning`` naming
the time, the last event time and the stratum, and the warnings are kept on the result
(``InfluenceResult.target_notes``) for the report: Cox ``Survival`` (the plateau after
the last event), Fine-Gray ``CumulativeIncidence`` (after the cause's last failure), AFT
``AFTSurvival`` and lifelines ``LifelinesSurvival`` (the parametric model's
extrapolation), and the CLI's ``--target survival:T``. Also the message for an unknown
target, which lists the targets of the model at hand."""
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_fine_gray import GOLDEN as FG_GOLDEN
from test_fine_gray import fit_case, load

import coxinfluence as ci
from coxinfluence import cli
from coxinfluence.audit import targets as T

FIX = Path(__file__).parent / "fixtures" / "integration" / "gbsg2_subset.csv"
COVS = ["age", "tsize", "pnodes", "progrec", "estrec", "horTh"]
W = getattr(ci, "TargetBeyondFollowUpWarning", Warning)


@pytest.fixture(scope="module")
def gbsg():
    return pd.read_csv(FIX, index_col="pid")


def _mean(d, cols):
    return d[cols].mean().to_frame("mean").T


def _notes(call):
    """(result, messages of the TargetBeyondFollowUpWarnings ``call()`` issued)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = call()
    return res, [str(w.message) for w in caught if issubclass(w.category, W)]


def test_the_warning_is_exported():
    assert issubclass(W, UserWarning)
    assert ci.TargetBeyondFollowUpWarning is T.TargetBeyondFollowUpWarning
    assert "TargetBeyondFollowUpWarning" in ci.__all__


def test_cox_survival_past_the_last_event(gbsg):
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens)
    last = gbsg.time[gbsg.cens == 1].max()                  # 2456; follow-up to 2659
    assert gbsg.time.max() > last
    inside = T.Survival(_mean(gbsg, COVS), [1000.0, last])
    res, msgs = _notes(lambda: ci.influence(fit, method="vif", target=inside))
    assert msgs == [] and res.target_notes == ()
    target = T.Survival(_mean(gbsg, COVS), [1000.0, 2500.0, 5000.0])
    res, msgs = _notes(lambda: ci.influence(fit, method="vif", target=target))
    assert len(msgs) == 1
    assert res.target_notes == tuple(msgs)
    msg = msgs[0]
    assert "times 2500, 5000" in msg and "1000" not in msg
    assert f"last event time of the data, {last:g}" in msg
    assert "plateau" in msg
    # the values are the plateau indeed: S(2500) = S(5000) = S(last)
    s = T.Survival(_mean(gbsg, COVS), [last, 2500.0, 5000.0]).value(fit, fit.coef[None])[0]
    assert s[0] == s[1] == s[2]
    # the rerun (exact refits) keeps the notes; auto has them too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", W)
        auto = ci.influence(fit, target=target)
    assert auto.target_notes == res.target_notes
    assert auto.exact().target_notes == res.target_notes


def test_the_warning_points_at_the_caller(gbsg):
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens)
    with pytest.warns(W) as record:
        ci.influence(fit, method="vif", target=T.Survival(_mean(gbsg, COVS), [9000.0]))
    assert Path(record[0].filename).name == Path(__file__).name


def test_stratified_cox_names_the_stratum(gbsg):
    fit = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens, strata=gbsg.tgrade)
    last = gbsg.time[gbsg.cens == 1].groupby(gbsg.tgrade).max()
    t = float(np.floor(last.min() + 1))
    late = sorted(s for s in last.index if last[s] < t)
    assert 0 < len(late) < 3                               # some strata past, not all
    X = pd.concat([_mean(gbsg, COVS)] * 3)
    X.index = ["p_I", "p_II", "p_III"]
    target = T.Survival(X, [100.0, t], strata=["I", "II", "III"])
    res, msgs = _notes(lambda: ci.influence(fit, method="vif", target=target))
    assert len(msgs) == len(late)
    for s, msg in zip(late, msgs):
        assert f"time {t:g}:" in msg
        assert f"stratum '{s}' (patients 'p_{s}')" in msg
        assert f"last event time of stratum '{s}' (patients 'p_{s}'), {last[s]:g}" in msg
    assert res.target_notes == tuple(msgs)


def test_fine_gray_cumulative_incidence_past_the_last_failure():
    cases, _, data = load(FG_GOLDEN)
    row = cases.loc["sim_cengroup"]
    d = data[row["dataset"]]
    fit = fit_case(row, d)
    last = d.time[d.status == 1].max()
    assert d.time.max() < 100
    X = d[fit.columns].mean().to_frame("mean").T
    res, msgs = _notes(lambda: ci.influence(fit, method="vif",
                                            target=ci.CumulativeIncidence(X, [1.0, 100.0])))
    assert len(msgs) == 1
    assert msgs[0].startswith(f"F(t|x) at time 100: past the last cause-1 failure time of "
                              f"the data, {last:g}; ")
    assert res.target_notes == tuple(msgs)
    _, msgs = _notes(lambda: ci.influence(fit, method="vif",
                                          target=ci.CumulativeIncidence(X, [last])))
    assert msgs == []


def test_aft_survival_is_an_extrapolation():
    from lifelines.datasets import load_rossi
    r = load_rossi()
    covs = [c for c in r.columns if c not in ("week", "arrest")]
    fit = ci.fit_aft(r[covs], r.week, r.arrest, dist="weibull")
    last = r.week[r.arrest == 1].max()
    X = _mean(r, covs)
    res, msgs = _notes(lambda: ci.influence(fit, method="vif",
                                            target=ci.targets.Survival(X, [20.0, 80.0])))
    assert len(msgs) == 1
    assert f"time 80: past the last event time of the data, {last:g}" in msgs[0]
    assert "extrapolated by the parametric (weibull) model" in msgs[0]
    assert "plateau" not in msgs[0]
    assert res.target_notes == tuple(msgs)
    # quantiles carry no target time: no note
    _, msgs = _notes(lambda: ci.influence(fit, method="vif",
                                          target=ci.targets.Quantile(X, 0.5)))
    assert msgs == []


def test_lifelines_parametric_models():
    import lifelines
    from lifelines.datasets import load_rossi
    df = load_rossi()
    last = df.week[df.arrest == 1].max()
    model = lifelines.WeibullAFTFitter().fit(df, "week", "arrest")
    new = df.drop(columns=["week", "arrest"]).iloc[[0, 5]]
    # the model's own survival function, and R's parametrisation (through the wrapper)
    for target in (ci.targets.Survival(new, [10.0, 60.0]), ci.targets.Survival(new, [60.0])):
        res, msgs = _notes(lambda t=target: ci.influence(model, df, method="vif", target=t))
        assert len(msgs) == 1, target
        assert f"time 60: past the last event time of the data, {last:g}" in msgs[0]
        assert "extrapolated by the parametric" in msgs[0]
        assert res.target_notes == tuple(msgs)
    spline = lifelines.CoxPHFitter(baseline_estimation_method="spline", n_baseline_knots=3)
    spline.fit(df, "week", "arrest")
    _, msgs = _notes(lambda: ci.influence(spline, df, method="vif",
                                          target=ci.targets.Survival(new, [52.0, 70.0])))
    assert len(msgs) == 1 and "time 70:" in msgs[0] and "CoxPHFitter" in msgs[0]


def test_cli_survival_target_past_follow_up(tmp_path, capsys):
    out = tmp_path / "s.html"
    with pytest.warns(W, match=r"S\(t\|x\) at time 5000: past the last event time of the "
                               r"data, 2456"):
        code = cli.main(["audit", str(FIX), "--time", "time", "--event", "cens", "--id",
                         "pid", "--covariates", *COVS, "--target", "survival:5000",
                         "--method", "vif", "--exact-max-n", "0", "--no-progress",
                         "--out", str(out)])
    assert code == 0, capsys.readouterr().err


# ------------------------------------------------------------------ unknown targets

def test_unknown_target_lists_the_models_targets(gbsg):
    from lifelines.datasets import load_rossi
    r = load_rossi()
    covs = [c for c in r.columns if c not in ("week", "arrest")]
    aft = ci.fit_aft(r[covs], r.week, r.arrest)
    with pytest.raises(ValueError) as err:
        ci.influence(aft, target="tr2")
    msg = str(err.value)
    assert msg.startswith("unknown target 'tr2' for this model (Weibull AFT")
    assert "'coef', 'tr'" in msg
    # the targets of ci.targets (issue 35: one per quantity, dispatched on the model)
    assert "ci.targets.Survival(X_new, times)" in msg and "ci.targets.Quantile(X_new, p)" in msg
    assert "'hr'" not in msg and "CumulativeIncidence" not in msg and "AFTSurvival" not in msg
    # a target of another model: the same list
    with pytest.raises(ValueError, match=r"target 'hazard_ratio' is not available for this "
                                         r"model \(Weibull AFT.*'coef', 'tr'"):
        ci.influence(aft, target="hr")
    cox = ci.fit_cox(gbsg[COVS], gbsg.time, gbsg.cens)
    with pytest.raises(ValueError) as err:
        ci.influence(cox, target="survival")
    msg = str(err.value)
    assert re.match(r"unknown target 'survival' for this model \(Cox", msg)
    assert "'coef', 'hr'" in msg and "ci.targets.Survival(X_new, times)" in msg
    assert "'tr'" not in msg

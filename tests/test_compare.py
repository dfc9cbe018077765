"""ci.compare and the IPA rows of ci.evaluate against R (issue 46 items 3, 4, 7):
riskRegression::Score's $AUC$contrasts and $Brier$contrasts (contrasts = TRUE, the "Null
model" included), its IPA (summary = "ipa"), and the difference of two models' C with the
SE from survival::concordance's joint variance (Harrell and Uno).

Fixtures: tests/fixtures/r_compare/, written by tests/r/compare_reference.R (its header says
which models and what each column is) from the data of tests/fixtures/r_evaluate/: GBSG2
and Rossi (two Cox models and a Weibull AFT; *_strata: the larger Cox model stratified),
and simulated competing risks (two Fine-Gray models, Score's Hist(time, status) ~ 1, cause
= 1). Measured agreement: 2e-13 (stratified GBSG2) to 5e-10 (Fine-Gray, crr's convergence)
on delta, se, lower and upper, 2e-8 on p; IPA 7e-13 to 6e-10. The live test reruns the script
on another split.
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

DATA = Path(__file__).parent / "fixtures" / "r_evaluate"
FIX = Path(__file__).parent / "fixtures" / "r_compare"
SCRIPT = Path(__file__).parent / "r" / "compare_reference.R"
columns = {}
CASES = ["gbsg2", "gbsg2_strata", "rossi", "fg"]
COLUMNS = ["metric", "time", "model", "reference", "delta", "se", "lower", "upper", "p"]


def setup(data_dir, case):
    """(models as the R script fits them, X_test, time, event, times) of a case; each
    model's own columns of X_test in ``columns[name]``."""
    d = pd.read_csv(data_dir / f"{case}_data.csv")
    times = pd.read_csv(data_dir / f"{case}_times.csv").t.to_numpy()
    covs = [c for c in d.columns if c not in ("time", "event", "status", "split", "stratum")]
    tr = d[d.split == "train"].reset_index(drop=True)
    columns.clear()
    te = d[d.split == "test"].reset_index(drop=True)
    if "status" in d:
        columns.update(fg_small=covs[:1], fg_full=covs)
        models = {"fg_small": ci.fit_fine_gray(tr[covs[:1]], tr.time, tr.status),
                  "fg_full": ci.fit_fine_gray(tr[covs], tr.time, tr.status)}
        return models, te[covs], te.time, te.status, times
    strata = {"strata": tr.stratum} if "stratum" in d else {}
    columns.update(cox_small=covs[:3], cox_full=covs + (["stratum"] if strata else []),
                   aft=covs)
    models = {"cox_small": ci.fit_cox(tr[covs[:3]], tr.time, tr.event),
              "cox_full": ci.fit_cox(tr[covs], tr.time, tr.event, **strata),
              "aft": ci.fit_aft(tr[covs], tr.time, tr.event)}
    return models, te[covs + (["stratum"] if strata else [])], te.time, te.event, times


def quiet(fn, *args, **kw):
    """Some fixture times lie past a model's training follow-up: warned, not tested here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.TargetBeyondFollowUpWarning)
        return fn(*args, **kw)


def r_in_our_order(ref):
    """R's rows (AUC contrasts, Brier contrasts, C rows) in compare's order: brier, auc,
    c_harrell, c_uno; within a metric by time, Score's order kept."""
    ref = ref.assign(metric=pd.Categorical(ref.metric, ["brier", "auc", "c_harrell",
                                                        "c_uno"]), order=np.arange(len(ref)))
    ref = ref.sort_values(["metric", "time", "order"], na_position="first", kind="stable")
    return ref.drop(columns="order").reset_index(drop=True).assign(
        metric=lambda r: r.metric.astype(str))


def check(data_dir, ref_dir, case):
    models, X, time, event, times = setup(data_dir, case)
    table = quiet(ci.compare, models, X, time, event, times)
    ref = r_in_our_order(pd.read_csv(ref_dir / f"{case}_contrasts.csv"))
    assert table.columns.tolist() == COLUMNS
    pd.testing.assert_frame_equal(table[["metric", "model", "reference"]],
                                  ref[["metric", "model", "reference"]])
    np.testing.assert_array_equal(table.time, ref.time)
    for col in ("delta", "se", "lower", "upper"):
        np.testing.assert_allclose(table[col], ref[col], rtol=0, atol=1e-8, err_msg=col)
    np.testing.assert_allclose(table.p, ref.p, rtol=0, atol=1e-6)
    return table, models, X, time, event, times


@pytest.mark.parametrize("case", CASES)
def test_compare_equals_score_contrasts_and_concordance(case):
    """Two Cox models and a Weibull AFT (a stratified Cox model in *_strata), or two
    Fine-Gray models: every row of Score's contrasts, the Null model's included, and the
    C differences (survival models) with the SE of their joint variance."""
    table, *_ = check(DATA, FIX, case)
    n_times = len(pd.read_csv(DATA / f"{case}_times.csv"))
    k = 2 if case == "fg" else 3
    pairs = k * (k - 1) // 2
    assert (table.metric == "brier").sum() == n_times * (k + pairs)
    assert (table.metric == "auc").sum() == n_times * pairs
    assert (table.metric.str.startswith("c_")).sum() == (0 if case == "fg" else 2 * pairs)


def test_compare_rows_are_evaluate_differences():
    """delta is the difference of ci.evaluate's estimates; the Null model's Brier score is
    the model's Brier score over (1 - its IPA)."""
    models, X, time, event, times = setup(DATA, "gbsg2_strata")
    table = quiet(ci.compare, models, X, time, event, times)
    ev = {name: quiet(ci.evaluate, fit, X[columns[name]], time, event, times)
          for name, fit in models.items()}
    for row in table.itertuples():
        m = ev[row.model].set_index(["metric", "time"])
        if row.reference == "Null model":
            brier = m.loc[("brier", row.time), "estimate"]
            null = brier / (1 - m.loc[("ipa", row.time), "estimate"])
            np.testing.assert_allclose(row.delta, brier - null, rtol=0, atol=1e-14)
            continue
        r = ev[row.reference].set_index(["metric", "time"])
        key = (row.metric, row.time) if np.isfinite(row.time) else row.metric
        got = (m.loc[key, "estimate"] - r.loc[key, "estimate"])
        np.testing.assert_allclose(row.delta, np.ravel(got)[0], rtol=0, atol=1e-14)


@pytest.mark.parametrize("case", CASES)
def test_evaluate_ipa_equals_score(case):
    """ci.evaluate's ipa rows, every model: Score's IPA (summary = "ipa"), at each time;
    Score gives no SE of the IPA, nor do we (NaN)."""
    models, X, time, event, times = setup(DATA, case)
    ref = pd.read_csv(FIX / f"{case}_ipa.csv")
    for name, fit in models.items():
        table = quiet(ci.evaluate, fit, X[columns[name]], time, event, times)
        ipa = table[table.metric == "ipa"]
        r = ref[ref.model == name]
        assert len(ipa) == len(times) >= 2
        np.testing.assert_array_equal(ipa.time, r.time)
        np.testing.assert_allclose(ipa.estimate, r.ipa, rtol=0, atol=1e-8)
        assert ipa[["se", "lower", "upper"]].isna().all().all()
        # the IPA rows come after the IBS, before the concordances
        at = table.metric.tolist().index("ibs") + 1
        assert table.metric.tolist()[at:at + len(times)] == ["ipa"] * len(times)


def test_compare_refusals():
    models, X, time, event, times = setup(DATA, "gbsg2")
    with pytest.raises(ci.InputError, match="dict of names"):
        ci.compare([models["cox_small"]], X, time, event, times)
    with pytest.raises(ci.InputError, match="name of Score's null model"):
        ci.compare({"Null model": models["cox_small"]}, X, time, event, times)
    fg, Xf, tf, ef, times_f = setup(DATA, "fg")
    with pytest.raises(ci.InputError, match="predict different outcomes"):
        ci.compare({"fg": fg["fg_full"], "cox": ci.fit_cox(Xf, tf, ef > 0)}, Xf, tf,
                   (ef == 1).astype(int), times_f)
    with pytest.raises(ci.InputError, match="missing 'stratum'"):
        strat, Xs, *_ = setup(DATA, "gbsg2_strata")
        ci.compare(strat, Xs.drop(columns="stratum"), time, event, times)


def test_compare_one_model_and_alpha():
    """One model: its Brier score against the Null model only; alpha sets the interval."""
    models, X, time, event, times = setup(DATA, "gbsg2")
    one = quiet(ci.compare, {"cox": models["cox_full"]}, X, time, event, times, alpha=0.1)
    assert one.metric.tolist() == ["brier"] * len(times)
    assert (one.reference == "Null model").all()
    z = 1.6448536269514722      # qnorm(0.95)
    np.testing.assert_allclose(one.lower, one.delta - z * one.se, rtol=0, atol=1e-15)


@pytest.mark.needs_r
def test_live_r_on_another_split(tmp_path):
    """R run now on a split of GBSG2 (stratified) the fixtures do not hold."""
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    d = pd.read_csv(DATA / "gbsg2_strata_data.csv")
    d["split"] = np.where(np.arange(len(d)) % 4 == 1, "test", "train")
    d.to_csv(tmp_path / "live_data.csv", index=False)
    pd.DataFrame({"t": [500.0, 1000, 1500]}).to_csv(tmp_path / "live_times.csv",
                                                     index=False)
    subprocess.run(["Rscript", str(SCRIPT), str(tmp_path), str(tmp_path), "live"],
                   check=True, capture_output=True)
    check(tmp_path, tmp_path, "live")

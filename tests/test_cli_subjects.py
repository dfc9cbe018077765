"""``coxinfluence audit`` on counting-process data: --start, --id (repeated ids are one
patient's rows), --subjects, --cluster. The report lists patients (or clusters), not rows,
and its numbers are read back and checked against R (golden fixtures of
tests/r/counting_process_reference.R) and ci.influence."""
import numpy as np
import pandas as pd
import pytest
from r_counting import CONFIGS, load_data, reference
from test_cli_audit import _Tables

import coxinfluence as ci
from coxinfluence import cli

pytestmark = pytest.mark.skipif(not CONFIGS, reason="counting-process fixtures missing")
COVS = ["age", "year", "surgery", "transplant"]


@pytest.fixture
def heart_csv(tmp_path):
    d = load_data("heart")
    path = tmp_path / "heart.csv"
    d.frame[["start", "stop", "event", "id"] + COVS].to_csv(path, index=False)
    return path, d


def tables(path):
    parser = _Tables()
    parser.feed(path.read_text())
    return parser


def test_audit_per_patient_against_r(heart_csv, tmp_path, capsys):
    path, d = heart_csv
    out = tmp_path / "r.html"
    code = cli.main(["audit", str(path), "--start", "start", "--time", "stop", "--event",
                     "event", "--id", "id", "--covariates", *COVS, "--exact", "--top", "5",
                     "--no-progress", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    assert "103 patients (172 rows)" in stdout and "103 patients (172 rows)" in out.read_text()
    parsed = tables(out).tables
    top = parsed["Top 5 influential patients"]
    fit = ci.fit_cox(d.frame[COVS], d.stop, d.event, start=d.start, id=d.id)
    res = ci.influence(fit)                 # the default, verified audit
    want = res.top(5)
    np.testing.assert_array_equal(top.index.astype(int), want.index)
    for c in COVS:
        np.testing.assert_allclose(parsed["Changes"][c].astype(float), want[f"change {c}"],
                                   rtol=5.01e-3)
    np.testing.assert_array_equal(top["rows"].astype(int), want["rows"])
    # the verified subjects' numbers and the exact refits behind the report's
    # correlations are R's leave-one-subject-out fits
    loso = reference("heart", "loso_coef") - reference("heart", "coef")[0]
    ver = res.verified.to_numpy()
    assert ver.sum() >= 20 and ver[np.searchsorted(res.loo_change.index, want.index)].all()
    assert np.abs(res.loo_change.to_numpy()[ver] - loso[ver]).max() < 1e-8 * np.abs(loso).max()
    exact = res.exact()
    assert np.abs(exact.loo_change.to_numpy() - loso).max() < 1e-8 * np.abs(loso).max()


def test_audit_per_cluster(tmp_path, capsys):
    d = load_data("cgd")
    covs = d.covariates
    path = tmp_path / "cgd.csv"
    d.frame[["start", "stop", "event", "id", "cluster", "stratum"] + covs].to_csv(path,
                                                                                 index=False)
    out = tmp_path / "c.html"
    code = cli.main(["audit", str(path), "--start", "start", "--time", "stop", "--event",
                     "event", "--id", "id", "--cluster", "cluster", "--strata", "stratum",
                     "--covariates", *covs, "--no-progress", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    n_cl = len(d.clusters)
    assert f"{n_cl} clusters (203 rows)" in stdout
    model = tables(out).tables["Model"]
    robust_se = np.sqrt(np.diag(reference("cgd", "robust_var_cluster")))
    np.testing.assert_allclose(model["robust se"].astype(float), robust_se, rtol=1e-3)


def test_repeated_ids_need_start_or_subjects(heart_csv, tmp_path, capsys):
    path, _ = heart_csv
    code = cli.main(["audit", str(path), "--time", "stop", "--event", "event", "--id", "id",
                     "--covariates", *COVS, "--no-progress", "--out", str(tmp_path / "x.html")])
    assert code == 2
    assert "duplicated values" in capsys.readouterr().err
    # --subjects without --start: every row at risk from 0, so a patient's rows overlap
    code = cli.main(["audit", str(path), "--time", "stop", "--event", "event", "--id", "id",
                     "--subjects", "--covariates", *COVS, "--no-progress",
                     "--out", str(tmp_path / "x.html")])
    assert code == 2
    assert "overlapping intervals" in capsys.readouterr().err


def test_start_after_stop_is_named(heart_csv, tmp_path, capsys):
    path, d = heart_csv
    frame = pd.read_csv(path)
    frame.loc[5, "start"] = frame.loc[5, "stop"] + 1
    frame.to_csv(path, index=False)
    code = cli.main(["audit", str(path), "--start", "start", "--time", "stop", "--event",
                     "event", "--id", "id", "--covariates", *COVS, "--no-progress",
                     "--out", str(tmp_path / "x.html")])
    assert code == 2
    assert "start >= time" in capsys.readouterr().err

"""``coxinfluence audit`` for the models beyond Cox behind the seam: parametric AFT
(``--model weibull ...``, ``ci.fit_aft``, R's survreg) and Fine-Gray (``--status S --cause K
[--cengroup COL]``, ``ci.fit_fine_gray``, R's crr). The report and the printed summary are
read back and checked against the fits and audits made in Python on the same data (the fits
themselves are checked against R in test_aft.py and test_fine_gray.py); bad combinations of
options exit with status 2 and a one-line message naming them."""
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from test_cli_audit import _num, assert_top_table_is, report_tables, run

import coxinfluence as ci

ROSSI_COVS = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.fixture(scope="module")
def rossi():
    """lifelines' rossi with a weight and a cluster column, labelled by the data row
    number 1..n as the CLI labels rows without --id."""
    from lifelines.datasets import load_rossi
    df = load_rossi()
    rng = np.random.default_rng(3)
    df["w"] = rng.choice([1.0, 2.0, 3.0], len(df))
    df["clinic"] = np.arange(len(df)) // 6
    df.index = pd.RangeIndex(1, len(df) + 1, name="row")
    return df


@pytest.fixture(scope="module")
def competing():
    """A competing-risks data set: causes 1, 2, 3, censoring 0, two censoring groups
    named by strings, tied times (rounded), labelled 1..n."""
    rng = np.random.default_rng(11)
    n = 160
    x1, x2 = rng.normal(size=n), rng.integers(0, 2, n).astype(float)
    t1 = rng.exponential(1 / (0.5 * np.exp(0.6 * x1 - 0.4 * x2)))
    t2 = rng.exponential(1 / 0.4, n)
    t3 = rng.exponential(1 / 0.15, n)
    c = rng.exponential(2.5, n)
    times = np.column_stack([c, t1, t2, t3])
    df = pd.DataFrame({"x1": x1.round(3), "x2": x2,
                       "ftime": times.min(axis=1).round(2) + 0.01,
                       "fstatus": times.argmin(axis=1),
                       "site": rng.choice(["north", "south"], n)},
                      index=pd.RangeIndex(1, n + 1, name="row"))
    assert set(df.fstatus) == {0, 1, 2, 3}
    return df


def _write(df, path):
    df.to_csv(path, index=False)
    return path


def _meta(html):
    return re.search(r"<p class='meta'>(.*?)</p>", html, re.S).group(1)


# ------------------------------------------------------------------------------ AFT

def test_weibull_audit_report_and_summary(rossi, tmp_path, capsys):
    """The report states the distribution, the scale and the log-likelihood of
    ``ci.fit_aft`` on the same data; its Model table is that fit's table, its top table
    the audit's top 10; the printed summary says the same."""
    path = _write(rossi, tmp_path / "rossi.csv")
    out = tmp_path / "weibull.html"
    code, stdout, err = run([str(path), "--time", "week", "--event", "arrest",
                             "--covariates", *ROSSI_COVS, "--model", "weibull", "--no-progress",
                             "--exact-max-n", "0", "--out", str(out)], capsys)
    assert code == 0, err
    X = rossi[ROSSI_COVS].astype(float)
    fit = ci.fit_aft(X, rossi.week, rossi.arrest, "weibull")
    html = out.read_text()
    assert "<title>Weibull AFT model influence audit</title>" in html
    meta = _meta(html)
    assert "Weibull AFT model" in meta and "weibull distribution" in meta
    assert f"432 patients, {int(rossi.arrest.sum())} events" in meta
    assert f"scale {fit.scale[0]:.4g}," in meta
    loglik = float(re.search(r"log-likelihood (-?[\d.]+)", meta).group(1))
    assert loglik == pytest.approx(fit.loglik, abs=5.01e-5)
    assert "partial likelihood" not in html and "Cox" not in html
    tables = report_tables(out)
    model = _num(tables["Model"])
    assert list(model.index) == fit.columns
    want = fit.summary()
    for col in ("Value", "Std. Error", "z", "p"):
        np.testing.assert_allclose(model[col], want[col], rtol=5.01e-4, err_msg=col)
    res = ci.influence(fit, rossi[["week", "arrest"] + ROSSI_COVS])
    assert_top_table_is(tables, res)
    assert stdout.splitlines()[0].startswith("Weibull AFT model (R's survreg")
    assert "Most influential patients" in stdout.splitlines()[1]


def test_aft_strata_weights_and_clusters(rossi, tmp_path, capsys):
    """--strata gives a scale per stratum, --weights case weights, --cluster deletes
    whole clusters with the robust SE: the Model table is ``fit_aft``'s robust table with
    those clusters, the header names both scales, the units are the clusters."""
    path = _write(rossi, tmp_path / "rossi.csv")
    out = tmp_path / "strata.html"
    covs = ["fin", "age", "prio"]
    code, stdout, err = run([str(path), "--time", "week", "--event", "arrest",
                             "--covariates", *covs, "--model", "loglogistic", "--strata",
                             "race", "--weights", "w", "--cluster", "clinic", "--method",
                             "vif", "--exact-max-n", "0", "--no-progress", "--out", str(out)],
                            capsys)
    assert code == 0, err
    fit = ci.fit_aft(rossi[covs].astype(float), rossi.week, rossi.arrest, "loglogistic",
                     weights=rossi.w, strata=rossi[["race"]])
    html = out.read_text()
    meta = _meta(html)
    assert "Log-logistic AFT model" in meta
    assert f"{rossi.clinic.nunique()} clusters (432 rows)" in meta
    s0, s1 = fit.scale
    assert f"scale[race=0] {s0:.4g}, scale[race=1] {s1:.4g}" in meta
    model = _num(report_tables(out)["Model"])
    want = fit.summary(robust=True, groups=rossi.clinic)
    assert list(model.index) == fit.columns
    np.testing.assert_allclose(model["robust se"], want["robust se"], rtol=5.01e-4)
    np.testing.assert_allclose(model["Value"], fit.coef, rtol=5.01e-4)
    res = ci.influence(fit, method="vif", groups=rossi.clinic, robust=True)
    tables = report_tables(out)
    top = tables["Top 10 influential clusters"]
    assert list(top.index) == [str(i) for i in res.top(10).index]


@pytest.mark.parametrize("dist, name, scale", [("exponential", "Exponential", "scale fixed at 1"),
                                               ("lognormal", "Log-normal", None)])
def test_other_distributions(rossi, tmp_path, capsys, dist, name, scale):
    path = _write(rossi, tmp_path / "rossi.csv")
    out = tmp_path / f"{dist}.html"
    code, stdout, err = run([str(path), "--time", "week", "--event", "arrest",
                             "--covariates", *ROSSI_COVS, "--model", dist, "--method", "vif",
                             "--exact-max-n", "0", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    fit = ci.fit_aft(rossi[ROSSI_COVS].astype(float), rossi.week, rossi.arrest, dist)
    meta = _meta(out.read_text())
    assert f"{name} AFT model" in meta
    assert (scale or f"scale {fit.scale[0]:.4g},") in meta
    np.testing.assert_allclose(_num(report_tables(out)["Model"])["Value"], fit.coef,
                               rtol=5.01e-4)


def test_time_ratio_target(rossi, tmp_path, capsys):
    """--target tr: the changes of exp(beta) of the covariates."""
    path = _write(rossi, tmp_path / "rossi.csv")
    out = tmp_path / "tr.html"
    code, stdout, err = run([str(path), "--time", "week", "--event", "arrest",
                             "--covariates", *ROSSI_COVS, "--model", "weibull", "--target",
                             "tr", "--method", "vif", "--exact-max-n", "0", "--no-progress",
                             "--out", str(out)], capsys)
    assert code == 0, err
    assert "target time_ratio" in stdout.splitlines()[0]
    fit = ci.fit_aft(rossi[ROSSI_COVS].astype(float), rossi.week, rossi.arrest, "weibull")
    res = ci.influence(fit, method="vif", target="tr")
    assert_top_table_is(report_tables(out), res)


def test_aft_subjects(rossi, tmp_path, capsys):
    """--id with --subjects for an AFT model: rows sharing an id are one patient's, deleted
    together; the top table is ``ci.influence`` of ``ci.fit_aft(..., id=)``'s per patient."""
    df = rossi.assign(pid=np.arange(len(rossi)) // 3)
    path = _write(df, tmp_path / "rossi_ids.csv")
    out = tmp_path / "subjects.html"
    covs = ["fin", "age", "prio"]
    code, stdout, err = run([str(path), "--time", "week", "--event", "arrest", "--covariates",
                             *covs, "--model", "weibull", "--id", "pid", "--subjects",
                             "--method", "vif", "--exact-max-n", "0", "--no-progress",
                             "--out", str(out)], capsys)
    assert code == 0, err
    fit = ci.fit_aft(df[covs].astype(float), df.week, df.arrest, "weibull", id=df.pid)
    res = ci.influence(fit, method="vif")
    assert len(res.loo_change) == df.pid.nunique()
    assert_top_table_is(report_tables(out), res)


def test_aft_quantile_of_the_average_patient_per_stratum(rossi, tmp_path, capsys):
    """--target quantile in a stratified AFT model: the median survival time of the
    average patient once per stratum (each stratum its own scale), as
    ``ci.SurvivalQuantile`` of those rows."""
    path = _write(rossi, tmp_path / "rossi.csv")
    out = tmp_path / "q.html"
    covs = ["fin", "age", "prio"]
    code, stdout, err = run([str(path), "--time", "week", "--event", "arrest", "--covariates",
                             *covs, "--model", "weibull", "--strata", "race", "--target",
                             "quantile", "--method", "vif", "--exact-max-n", "0",
                             "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    X = rossi[covs].astype(float)
    fit = ci.fit_aft(X, rossi.week, rossi.arrest, "weibull", strata=rossi[["race"]])
    mean = pd.concat([X.mean().to_frame().T] * 2, ignore_index=True)
    mean.index = ["mean, stratum 0", "mean, stratum 1"]
    res = ci.influence(fit, method="vif", target=ci.targets.Quantile(mean, [0.5], strata=[0, 1]))
    assert list(res.loo_change.columns) == ["Q(0.5|mean, stratum 0)", "Q(0.5|mean, stratum 1)"]
    assert_top_table_is(report_tables(out), res)


def test_aft_quantile_with_two_stratum_columns(rossi, tmp_path, capsys):
    """--strata fin wexp for an AFT model: a scale per (fin, wexp) cell; the average
    patient once per cell, labelled by the cell's tuple, as ``ci.SurvivalQuantile``."""
    path = _write(rossi, tmp_path / "rossi.csv")
    out = tmp_path / "q2.html"
    covs = ["age", "prio"]
    code, stdout, err = run([str(path), "--time", "week", "--event", "arrest", "--covariates",
                             *covs, "--model", "weibull", "--strata", "fin", "wexp",
                             "--target", "quantile", "--method", "vif", "--exact-max-n", "0",
                             "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    X = rossi[covs].astype(float)
    fit = ci.fit_aft(X, rossi.week, rossi.arrest, "weibull", strata=rossi[["fin", "wexp"]])
    cells = [(0, 0), (0, 1), (1, 0), (1, 1)]
    mean = pd.concat([X.mean().to_frame().T] * 4, ignore_index=True)
    mean.index = [f"mean, stratum {c}" for c in cells]
    res = ci.influence(fit, method="vif", target=ci.targets.Quantile(mean, [0.5], strata=cells))
    assert_top_table_is(report_tables(out), res)


def test_aft_survival_of_new_patients(rossi, tmp_path, capsys):
    """--target survival:T1,T2 --newdata for a stratified log-normal model: S(t|x) of each
    new patient with the scale of its stratum (``ci.AFTSurvival``)."""
    path = _write(rossi, tmp_path / "rossi.csv")
    new = rossi[ROSSI_COVS].iloc[[0, 5, 9]].reset_index(drop=True)
    new_path = _write(new, tmp_path / "new.csv")
    out = tmp_path / "s.html"
    code, stdout, err = run([str(path), "--time", "week", "--event", "arrest", "--covariates",
                             *[c for c in ROSSI_COVS if c != "race"], "--model", "lognormal",
                             "--strata", "race", "--newdata", str(new_path), "--target",
                             "survival:20,40", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    covs = [c for c in ROSSI_COVS if c != "race"]
    fit = ci.fit_aft(rossi[covs].astype(float), rossi.week, rossi.arrest, "lognormal",
                     strata=rossi[["race"]])
    X_new = new.set_axis([f"new {k}" for k in range(1, 4)])
    res = ci.influence(fit, rossi, target=ci.targets.Survival(X_new, [20, 40],
                                                         strata=list(X_new.race)))
    assert_top_table_is(report_tables(out), res)


@pytest.mark.parametrize("case, extra, se_col", [
    ("lung_weibull_w_sex_", ["--weights", "w", "--strata", "sex"], "Std. Error"),
    ("lung_lognormal___inst", ["--cluster", "inst"], "robust se")])
def test_aft_model_table_is_survregs(tmp_path, capsys, case, extra, se_col):
    """The Model table and log-likelihood of the CLI's AFT audit against R's survreg itself
    (golden fixtures of tests/r/aft_reference.R, R's lung): with weights and a scale per
    stratum (vcov), and with clusters (survreg(robust = TRUE, cluster = inst)$var)."""
    import test_aft
    folder = test_aft.GOLDEN
    row, ref = test_aft.CASES.loc[case], test_aft.REF
    names = row["names"].split("|")
    coef = test_aft.reference(ref, case, "coef")[0]
    var = test_aft.reference(ref, case, "robust_var" if se_col == "robust se" else "var")
    loglik = test_aft.reference(ref, case, "loglik")[0, 0]
    out = tmp_path / "survreg.html"
    code, stdout, err = run([str(folder / "data_lung.csv"), "--time", "time", "--event",
                             "status", "--covariates", *row["covariates"].split("+"),
                             "--model", row["dist"], "--method", "vif", "--exact-max-n", "0",
                             "--no-progress", "--out", str(out), *extra], capsys)
    assert code == 0, err
    model = _num(report_tables(out)["Model"])
    assert list(model.index) == names
    np.testing.assert_allclose(model["Value"], coef, rtol=5.01e-4)
    np.testing.assert_allclose(model[se_col], np.sqrt(np.diag(var)), rtol=5.01e-4)
    got = float(re.search(r"log-likelihood (-?[\d.]+)", out.read_text()).group(1))
    assert got == pytest.approx(loglik, abs=5.01e-5)


# ------------------------------------------------------------------------ Fine-Gray

def test_fine_gray_audit_report_and_summary(competing, tmp_path, capsys):
    """The report says "Fine-Gray model for cause 1; competing causes 2 (k failures), 3
    (k failures)", the censored and the censoring groups; its Model table is
    ``ci.fit_fine_gray``'s on the same data, its top table the audit's top 10."""
    df = competing
    path = _write(df, tmp_path / "cr.csv")
    out = tmp_path / "fg.html"
    code, stdout, err = run([str(path), "--time", "ftime", "--status", "fstatus", "--cause",
                             "1", "--cengroup", "site", "--no-progress", "--out", str(out)],
                            capsys)
    assert code == 0, err
    k = df.fstatus.value_counts()
    fit = ci.fit_fine_gray(df[["x1", "x2"]], df.ftime, df.fstatus, 1, cengroup=df.site)
    html = out.read_text()
    assert "<title>Fine-Gray model influence audit</title>" in html
    meta = _meta(html)
    statement = (f"Fine-Gray model for cause 1; competing causes 2 ({k[2]} failures), "
                 f"3 ({k[3]} failures)")
    assert statement in meta
    assert f"{k[1]} failures of cause 1, {k[2] + k[3]} competing failures, {k[0]} censored" \
        in meta
    n_site = df.site.value_counts()
    assert (f"censoring groups north ({n_site['north']} subjects), south "
            f"({n_site['south']} subjects)") in meta
    loglik = float(re.search(r"log pseudo-likelihood (-?[\d.]+)", meta).group(1))
    assert loglik == pytest.approx(fit.loglik, abs=5.01e-5)
    tables = report_tables(out)
    model = _num(tables["Model"])
    want = fit.summary()
    assert list(model.index) == ["x1", "x2"]
    for col in want.columns:
        np.testing.assert_allclose(model[col], want[col], rtol=5.01e-4, err_msg=col)
    res = ci.influence(fit, df)
    assert_top_table_is(tables, res)
    top = tables["Top 10 influential patients"]
    np.testing.assert_array_equal(_num(top["status"]), df.fstatus.loc[res.top(10).index])
    assert stdout.splitlines()[0].startswith(statement + ": 160 patients")
    assert "Most influential patients" in stdout.splitlines()[1]


def test_fine_gray_weights_and_strata(competing, tmp_path, capsys):
    """``--weights``, ``--strata`` and ``--ties efron`` reach ``ci.fit_fine_gray``: the
    Model table and the top table are those of that fit, and the report names them."""
    df = competing.assign(w=np.linspace(0.5, 2.0, len(competing)),
                          arm=np.arange(len(competing)) % 2)
    path = _write(df, tmp_path / "crw.csv")
    out = tmp_path / "fgw.html"
    code, stdout, err = run([str(path), "--time", "ftime", "--status", "fstatus", "--cause",
                             "1", "--covariates", "x1", "x2", "--weights", "w", "--strata",
                             "arm", "--ties", "efron", "--method", "vif", "--exact-max-n", "0",
                             "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    fit = ci.fit_fine_gray(df[["x1", "x2"]], df.ftime, df.fstatus, 1, weights=df.w,
                           strata=df[["arm"]], ties="efron")
    meta = _meta(out.read_text())
    assert "strata 0 (80 subjects), 1 (80 subjects)" in meta
    assert f"case weights (total {df.w.sum():.6g})" in meta
    assert "Efron ties" in meta
    model = _num(report_tables(out)["Model"])
    np.testing.assert_allclose(model["coef"], fit.coef, rtol=5.01e-4)
    assert_top_table_is(report_tables(out), ci.influence(fit, method="vif"))
    # the average patient's cumulative incidence, once per stratum (its own baseline)
    out = tmp_path / "fgw_cif.html"
    code, stdout, err = run([str(path), "--time", "ftime", "--status", "fstatus", "--cause",
                             "1", "--covariates", "x1", "x2", "--weights", "w", "--strata",
                             "arm", "--ties", "efron", "--target", "cif:2", "--method", "vif",
                             "--exact-max-n", "0", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    mean = pd.concat([df[["x1", "x2"]].mean().to_frame().T] * 2, ignore_index=True)
    mean.index = ["mean, stratum 0", "mean, stratum 1"]
    target = ci.CumulativeIncidence(mean, [2.0], strata=[0, 1])
    res = ci.influence(fit, method="vif", target=target)
    assert res.loo_change.shape[1] == 2
    assert_top_table_is(report_tables(out), res)


def test_fine_gray_other_cause_and_hazard_ratios(competing, tmp_path, capsys):
    df = competing
    path = _write(df[["x1", "x2", "ftime", "fstatus"]], tmp_path / "cr.csv")
    out = tmp_path / "fg2.html"
    code, stdout, err = run([str(path), "--time", "ftime", "--status", "fstatus", "--cause",
                             "2", "--ties", "breslow", "--target", "hr", "--method", "vif",
                             "--exact-max-n", "0", "--no-progress", "--out", str(out)], capsys)
    assert code == 0, err
    k = df.fstatus.value_counts()
    meta = _meta(out.read_text())
    assert (f"Fine-Gray model for cause 2; competing causes 1 ({k[1]} failures), "
            f"3 ({k[3]} failures)") in meta
    assert "censoring groups" not in meta
    fit = ci.fit_fine_gray(df[["x1", "x2"]], df.ftime, df.fstatus, 2)
    res = ci.influence(fit, method="vif", target="hr")
    assert_top_table_is(report_tables(out), res)


def test_fine_gray_cumulative_incidence_of_the_average_patient(competing, tmp_path, capsys):
    """--target cif:T1,T2: the cumulative incidence of the cause for the average patient
    (``ci.CumulativeIncidence``)."""
    df = competing
    path = _write(df[["x1", "x2", "ftime", "fstatus"]], tmp_path / "cr.csv")
    out = tmp_path / "cif.html"
    code, stdout, err = run([str(path), "--time", "ftime", "--status", "fstatus", "--cause",
                             "1", "--target", "cif:0.5,1.5", "--no-progress", "--out",
                             str(out)], capsys)
    assert code == 0, err
    assert "target cumulative_incidence" in stdout.splitlines()[0]
    X = df[["x1", "x2"]]
    fit = ci.fit_fine_gray(X, df.ftime, df.fstatus, 1)
    res = ci.influence(fit, df, target=ci.CumulativeIncidence(X.mean().to_frame("mean").T,
                                                               [0.5, 1.5]))
    assert list(res.loo_change.columns) == ["F(0.5|mean)", "F(1.5|mean)"]
    assert_top_table_is(report_tables(out), res)



@pytest.mark.parametrize("case, extra", [("sim_cengroup", ["--cengroup", "cg"]),
                                         ("mgus2_progression", ["--method", "vif"])])
def test_fine_gray_model_table_is_crrs(tmp_path, capsys, case, extra):
    """The Model table and the log pseudo-likelihood of the CLI's Fine-Gray audit against
    R's crr itself (golden fixtures of tests/r/fine_gray_reference.R): coefficients,
    sandwich SE (crr's var), loglik."""
    import test_fine_gray
    folder = test_fine_gray.GOLDEN
    cases, ref, _ = test_fine_gray.load(folder)
    row = cases.loc[case]
    covs = row["covariates"].split("+")
    coef = test_fine_gray.reference(ref, case, "coef")[0]
    var = test_fine_gray.reference(ref, case, "var")
    loglik = test_fine_gray.reference(ref, case, "loglik")[0, 0]
    path = folder / f"data_{row['dataset']}.csv"
    out = tmp_path / "crr.html"
    code, stdout, err = run([str(path), "--time", row["time"], "--status", row["status"],
                             "--cause", str(row["cause"]), "--covariates", *covs,
                             "--exact-max-n", "0", "--no-progress", "--out", str(out), *extra],
                            capsys)
    assert code == 0, err
    model = _num(report_tables(out)["Model"])
    assert list(model.index) == covs
    np.testing.assert_allclose(model["coef"], coef, rtol=5.01e-4)
    np.testing.assert_allclose(model["se(coef)"], np.sqrt(np.diag(var)), rtol=5.01e-4)
    got = float(re.search(r"log pseudo-likelihood (-?[\d.]+)", out.read_text()).group(1))
    assert got == pytest.approx(loglik, abs=5.01e-5)
    data = pd.read_csv(path)
    k = data[row["status"]].value_counts()
    others = ", ".join(f"{c} ({k[c]} failures)" for c in sorted(k.index)
                       if c not in (0, row["cause"]))
    assert f"Fine-Gray model for cause {row['cause']}; competing causes {others}" \
        in stdout.splitlines()[0]


# --------------------------------------------------------------------- refusals

@pytest.mark.parametrize("extra, message", [
    (["--event", "e", "--model", "weibull", "--status", "s", "--cause", "1"],
     "--model weibull and --cause conflict"),
    (["--model", "cox", "--status", "s", "--cause", "1"], "--model cox and --cause conflict"),
    (["--event", "e", "--cause", "1"], "--cause needs both --status S and --cause K"),
    (["--event", "e", "--cengroup", "g"], "--cengroup needs both --status S and --cause K"),
    (["--status", "s", "--cause", "1", "--event", "e"],
     "--event (a Fine-Gray model reads --status"),
    (["--status", "s", "--cause", "1", "--cluster", "g"],
     "--cluster (the subjects are the units"),
    (["--event", "e", "--model", "weibull", "--ties", "breslow"],
     "--ties (the AFT likelihood has no ties) does not apply to a weibull AFT model"),
    (["--event", "e", "--model", "weibull", "--target", "hr"],
     "target 'hazard_ratio' is not available for this model (Weibull AFT"),
    (["--status", "s", "--cause", "1", "--target", "tr"],
     "target 'time_ratio' is not available for this model (Fine-Gray, cause 1)"),
    (["--event", "e", "--target", "tr"],
     "target 'time_ratio' is not available for this model (Cox proportional hazards)"),
    (["--status", "s", "--cause", "4"], "no failures of cause 4: the causes present are [1, 2]"),
    (["--status", "s", "--cause", "1", "--target", "survival:1"],
     "target 'survival' is not available for this model (Fine-Gray, cause 1)"),
    (["--event", "e", "--target", "quantile"],
     "target 'survival_quantile' is not available for this model (Cox"),
    (["--event", "e", "--model", "weibull", "--target", "cif:1"],
     "target 'cumulative_incidence' is not available for this model (Weibull AFT"),
    (["--event", "e", "--target", "survival:a"], "--target survival:... needs numbers"),
])
def test_bad_combinations_are_refused(tmp_path, capsys, extra, message):
    rng = np.random.default_rng(0)
    n = 40
    df = pd.DataFrame({"x": rng.normal(size=n), "t": rng.exponential(size=n).round(3) + 0.01,
                       "e": rng.integers(0, 2, n), "s": rng.integers(0, 3, n),
                       "w": 1.0, "g": np.arange(n) % 4})
    path = _write(df, tmp_path / "d.csv")
    code, stdout, err = run([str(path), "--time", "t", "--covariates", "x", "--no-progress",
                             "--out", str(tmp_path / "r.html"), *extra], capsys)
    assert code == 2
    assert message in err
    assert err.strip().count("\n") == 0
    assert not (tmp_path / "r.html").exists()


@pytest.mark.slow
def test_python_dash_m_coxinfluence_runs_the_aft_audit(rossi, tmp_path):
    """``python -m coxinfluence`` is the command (exit 0, the report written)."""
    path = _write(rossi, tmp_path / "rossi.csv")
    out = tmp_path / "m.html"
    proc = subprocess.run([sys.executable, "-m", "coxinfluence", "audit", str(path), "--time",
                           "week", "--event", "arrest", "--covariates", *ROSSI_COVS,
                           "--model", "exponential", "--method", "vif", "--exact-max-n", "0",
                           "--no-progress", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Exponential AFT model" in proc.stdout.splitlines()[0]
    assert "<title>Exponential AFT model influence audit</title>" in out.read_text()

"""ci.influence on lifelines and statsmodels models against R's survival (golden fixture
from tests/r/integration_reference.R on 300 GBSG2 patients with unscaled covariates, far
from unit variance) and against exact refits."""

import numpy as np
import pandas as pd
import pytest
from conftest import r_matrix
from oracles import vif_rows

import coxinfluence as ci
from coxinfluence import datasets

lifelines = pytest.importorskip("lifelines")
from lifelines import CoxPHFitter  # noqa: E402

COVS = ["age", "tsize", "pnodes", "progrec", "estrec", "horTh"]




@pytest.fixture(scope="module")
def cph_plain(gbsg):
    df = gbsg[COVS + ["time", "cens"]]
    return CoxPHFitter().fit(df, "time", "cens"), df


def test_lifelines_unscaled_equals_r_dfbeta(cph_plain, ref):
    cph, df = cph_plain
    r_dfbeta = r_matrix(ref, "efron", "dfbeta")
    reid = ci.influence(cph, df, method="reid")
    np.testing.assert_allclose(reid.loo_change.to_numpy(), -r_dfbeta, rtol=0, atol=1e-10)
    # VIF (defined by deletion) is not R's infinitesimal dfbeta, but
    # tracks it closely (they differ at O(1/n^2) per row)
    vif = ci.influence(cph, df, method="vif")
    assert (vif.correlation(reid) > 0.999).all()
    assert list(vif.loo_change.index) == list(df.index)
    assert list(vif.loo_change.columns) == COVS
    # coefficients themselves equal R's
    np.testing.assert_allclose(vif.fit.coef, r_matrix(ref, "efron", "coef")[0], rtol=1e-9)


def test_lifelines_rescaled_covariates_equal_r(gbsg, ref):
    """lifelines fits on internally standardised covariates; no scale may leak into the
    influence. Covariates rescaled by c (age in days, ...) reparametrise theta_j ->
    theta_j / c_j, so the coefficients and their leave-one-out changes must be R's
    (unscaled fit) divided by c."""
    c = np.array([365.25, 0.1, 1.0, 0.01, 1000.0, 1.0])
    df = gbsg[COVS + ["time", "cens"]].copy()
    df[COVS] = df[COVS] * c
    cph = CoxPHFitter().fit(df, "time", "cens")
    res = ci.influence(cph, df, method="reid")
    np.testing.assert_allclose(res.fit.coef * c, r_matrix(ref, "efron", "coef")[0], rtol=1e-9)
    np.testing.assert_allclose(res.loo_change.to_numpy() * c, -r_matrix(ref, "efron", "dfbeta"),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.dfbetas.to_numpy(), -r_matrix(ref, "efron", "dfbetas"),
                               rtol=1e-8, atol=1e-12)          # dfbetas are scale-free


def test_lifelines_strata_weights_equal_r(gbsg, ref):
    df = gbsg[COVS + ["time", "cens", "tgrade", "w"]]
    cph = CoxPHFitter().fit(df, "time", "cens", strata=["tgrade"], weights_col="w", robust=True)
    res = ci.influence(cph, df, method="reid")
    np.testing.assert_allclose(res.loo_change.to_numpy(),
                               -r_matrix(ref, "efron_strata_weights", "dfbeta"), atol=1e-10)


def test_lifelines_stratified_survival_target_equals_r_refits(gbsg, ref):
    """S(t|x) of new patients in their own strata (read from the frame's tgrade column),
    on R's baseline (``ctype=2``, R's default for Efron; lifelines' own is ``ctype=1``,
    test_lifelines_survival_follows_lifelines_own_baseline): exact leave-one-out changes
    equal R's survfit after R's weighted, stratified refits."""
    from coxinfluence.audit.targets import Survival
    df = gbsg[COVS + ["time", "cens", "tgrade", "w"]]
    cph = CoxPHFitter().fit(df, "time", "cens", strata=["tgrade"], weights_col="w", robust=True)
    newp = pd.DataFrame({"age": [45, 60, 70], "tsize": [20, 35, 50], "pnodes": [1, 5, 15],
                         "progrec": [100, 20, 5], "estrec": [80, 10, 200], "horTh": [1, 0, 0],
                         "tgrade": ["III", "I", "II"]})
    tgt = Survival(newp, [365.0, 1000.0, 1800.0], ctype=2)
    res = ci.influence(cph, df, method="exact", target=tgt)
    base = r_matrix(ref, "efron_strata_weights", "surv").ravel()
    np.testing.assert_allclose(res.loo_change.to_numpy()[:25] + base,
                               r_matrix(ref, "efron_strata_weights", "surv_loo"),
                               rtol=1e-8, atol=1e-10)
    # explicit labels give the same; a frame without tgrade and no labels is refused
    same = ci.influence(cph, df, method="exact",
                        target=Survival(newp.drop(columns="tgrade"), [365.0, 1000.0, 1800.0],
                                        strata=["III", "I", "II"], ctype=2))
    np.testing.assert_allclose(same.loo_change.to_numpy(), res.loo_change.to_numpy(), atol=0)
    with pytest.raises(ValueError, match="stratified"):
        ci.influence(cph, df, target=Survival(newp.drop(columns="tgrade"), [365.0]))


def test_statsmodels_breslow_equals_r(gbsg, ref):
    from statsmodels.duration.hazard_regression import PHReg
    res = PHReg.from_formula("time ~ " + " + ".join(COVS), gbsg, status="cens").fit()
    assert res.model.ties == "breslow"
    inf = ci.influence(res, method="reid")
    np.testing.assert_allclose(inf.loo_change.to_numpy(), -r_matrix(ref, "breslow", "dfbeta"),
                               atol=1e-10)
    assert list(inf.loo_change.index) == list(gbsg.index)
    np.testing.assert_allclose(inf.dfbetas.to_numpy(), -r_matrix(ref, "breslow", "dfbetas"),
                               rtol=1e-8, atol=1e-12)
    assert (ci.influence(res, method="vif").correlation(inf) > 0.999).all()


@pytest.mark.parametrize("stratified", [False, True])
def test_statsmodels_efron_equals_r(gbsg, ref, stratified):
    """statsmodels PHReg with ties="efron" (its own Efron score residuals differ from R's,
    so ours are computed from the model): coefficients, model-based standard errors and
    dfbeta against R's coxph, unstratified and with strata(tgrade)."""
    from statsmodels.duration.hazard_regression import PHReg
    kw = {"strata": gbsg.tgrade.to_numpy()} if stratified else {}
    config = "efron_strata" if stratified else "efron"
    res = PHReg.from_formula("time ~ " + " + ".join(COVS), gbsg, status="cens", ties="efron",
                             **kw).fit()
    assert res.model.ties == "efron"
    inf = ci.influence(res, method="reid")
    assert list(inf.loo_change.index) == list(gbsg.index)
    assert list(inf.loo_change.columns) == COVS
    np.testing.assert_allclose(inf.fit.coef, r_matrix(ref, config, "coef")[0], rtol=1e-9)
    np.testing.assert_allclose(inf.fit.loglik, r_matrix(ref, config, "loglik")[0, 0], rtol=1e-12)
    np.testing.assert_allclose(inf.fit.se, r_matrix(ref, config, "se")[0], rtol=1e-8)
    np.testing.assert_allclose(inf.loo_change.to_numpy(), -r_matrix(ref, config, "dfbeta"),
                               rtol=0, atol=1e-10)
    # the default method (VIF) equals its definition on the statsmodels model's data
    X, t, e = gbsg[COVS].to_numpy(float), gbsg.time.to_numpy(float), gbsg.cens.to_numpy(float)
    n = len(t)
    want = -vif_rows(inf.fit.coef, X, t, e, range(n), s=kw.get("strata"), ties="efron") / n
    got = ci.influence(res, method="vif").loo_change.to_numpy()
    assert np.abs(got - want).max() <= 1e-9 * np.abs(want).max()


def test_dfbetas_equal_r(cph_plain, ref):
    cph, df = cph_plain
    res = ci.influence(cph, df, method="reid")
    np.testing.assert_allclose(res.dfbetas.to_numpy(), -r_matrix(ref, "efron", "dfbetas"),
                               rtol=1e-8, atol=1e-12)


def test_row_order_and_index_kept(cph_plain):
    cph, df = cph_plain
    shuffled = df.sample(frac=1.0, random_state=3)
    cph2 = CoxPHFitter().fit(shuffled, "time", "cens")
    a = ci.influence(cph, df).loo_change
    b = ci.influence(cph2, shuffled).loo_change
    assert list(b.index) == list(shuffled.index)
    np.testing.assert_allclose(b.loc[a.index].to_numpy(), a.to_numpy(), atol=1e-12)


def test_lifelines_formula_model_matches_design_fit(gbsg):
    df = gbsg[["time", "cens", "age", "tsize", "horTh", "tgrade"]]
    cph = CoxPHFitter().fit(df, "time", "cens", formula="age + tsize * horTh + C(tgrade)")
    res = ci.influence(cph, df, method="vif")
    design = cph.regressors.transform_df(df)["beta_"]
    fit = ci.fit_cox(design, df.time, df.cens)
    direct = -np.asarray(ci.vif(fit)) / fit.n
    np.testing.assert_allclose(res.loo_change.to_numpy(), direct, atol=1e-12)
    assert list(res.loo_change.columns) == list(cph.params_.index)
    # raw new patients go through lifelines' formula for targets
    newp = df.iloc[:2].drop(columns=["time", "cens"])
    rr = ci.influence(cph, df, target=ci.targets.RelativeRisk(newp), method="vif")
    x = design.iloc[:2].to_numpy()
    np.testing.assert_allclose(rr.loo_change.to_numpy(),
                               direct @ (np.exp(x @ fit.coef)[:, None] * x).T, atol=1e-12)


def test_exact_refits_and_likelihood_displacement(cph_plain):
    cph, df = cph_plain
    vif = ci.influence(cph, df, method="vif")
    exact = vif.exact()
    fit = vif.fit
    loo = np.asarray(ci.exact_loo(fit, progress=False))
    np.testing.assert_allclose(exact.loo_change.to_numpy(), loo - fit.coef, atol=1e-12)
    # exact LD: the full-data log partial likelihood at the refit (independent evaluation)
    for i in (0, 17, 123):
        ll = -ci.cox_loss(loo[i], df[COVS], df.time, df.cens)
        assert exact.likelihood_displacement.iloc[i] == pytest.approx(2 * (fit.loglik - ll),
                                                                      rel=1e-9, abs=1e-12)
    # the quadratic form approximates it
    ld_v, ld_e = vif.likelihood_displacement, exact.likelihood_displacement
    assert np.corrcoef(ld_v, ld_e)[0, 1] > 0.9
    # same five most influential patients, in the same order (P115, an outlier in pnodes,
    # is far ahead: exact 8.3 against 1.7 from the quadratic form)
    assert list(ld_v.sort_values().index[-5:]) == list(ld_e.sort_values().index[-5:])
    assert (vif.correlation(exact) > 0.95).all()


def test_top_table(cph_plain):
    cph, df = cph_plain
    res = ci.influence(cph, df)
    top = res.top(5)
    ld = res.likelihood_displacement
    assert list(top.index) == list(ld.sort_values(ascending=False).index[:5])
    assert list(top["rank"]) == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(top["change pnodes"], res.loo_change.loc[top.index, "pnodes"])
    for c in COVS + ["time", "cens"]:
        np.testing.assert_array_equal(top[c].to_numpy(), df.loc[top.index, c].to_numpy())
    by = res.top(3, by="pnodes")
    assert list(by.index) == list(res.loo_change["pnodes"].abs().sort_values(
        ascending=False).index[:3])
    with pytest.raises(ValueError, match="by must be"):
        res.top(3, by="nope")
    with pytest.raises(ValueError, match="positive integer"):
        res.top(0)


def test_plots(cph_plain):
    import matplotlib
    matplotlib.use("Agg")
    cph, df = cph_plain
    res = ci.influence(cph, df)
    fig = res.plot_index()
    assert sum(ax.get_visible() for ax in fig.axes) == len(COVS)
    fig2 = res.plot_vs_exact()
    corr = res.correlation(res.exact())
    titles = [ax.get_title() for ax in fig2.axes if ax.get_visible()]
    assert titles[2] == f"pnodes: r = {corr['pnodes']:.5f}"


def test_bad_models_and_data(gbsg, cph_plain):
    cph, df = cph_plain
    with pytest.raises(ValueError, match="pass the DataFrame"):
        ci.influence(cph)
    with pytest.raises(ValueError, match="do not match"):
        ci.influence(cph, df.assign(age=df.age[::-1].to_numpy()))
    with pytest.raises(ValueError, match="lacks the model's column"):
        ci.influence(cph, df.drop(columns="cens"))
    with pytest.raises(ValueError, match="not fitted"):
        ci.influence(CoxPHFitter(), df)
    pen = CoxPHFitter(penalizer=0.1, l1_ratio=0.5).fit(df, "time", "cens")
    with pytest.raises(ValueError, match="l1_ratio"):
        ci.influence(pen, df)
    with pytest.raises(ValueError, match="method must be"):
        ci.influence(cph, df, method="jackknife")
    with pytest.raises(TypeError, match="unsupported model"):
        ci.influence(object())
    from statsmodels.duration.hazard_regression import PHReg
    off = PHReg(gbsg.time, gbsg[COVS], status=gbsg.cens, offset=np.zeros(len(gbsg))).fit()
    with pytest.raises(ValueError, match="offset"):
        ci.influence(off)


@pytest.fixture(scope="module")
def cph_ridge(gbsg):
    df = gbsg[COVS + ["time", "cens"]]
    return CoxPHFitter(penalizer=0.05).fit(df, "time", "cens"), df


def test_lifelines_ridge_exact_equals_lifelines_refits(cph_ridge):
    """Exact penalised refits equal lifelines refitted without the row (its coefficients,
    not its residuals, are trustworthy), to lifelines' convergence tolerance."""
    cph, df = cph_ridge
    exact = ci.influence(cph, df, method="exact")
    for i in (0, 42, 114):
        refit = CoxPHFitter(penalizer=0.05).fit(df.drop(df.index[i]), "time", "cens")
        np.testing.assert_allclose(exact.fit.coef + exact.loo_change.iloc[i].to_numpy(),
                                   refit.params_.to_numpy(), rtol=1e-6, atol=1e-7)


def test_lifelines_ridge_vif_equals_its_definition(cph_ridge):
    """-(H_J/n)^{-1} (grad J - grad J_{-i}) with J_{-i} recomputed from scratch: the
    partial likelihood without row i plus lifelines' penalty with n - 1 rows and the
    standard deviations of the remaining rows."""
    cph, df = cph_ridge
    res = ci.influence(cph, df, method="vif")
    fit = res.fit
    X, t, e = df[COVS].to_numpy(), df.time.to_numpy(), df.cens.to_numpy()

    def grad_J(keep):
        Xk = X[keep]
        s = len(Xk) * 0.05 * Xk.std(axis=0, ddof=1) ** 2
        return ci.cox_gradient(fit.coef, Xk, t[keep], e[keep]) + s * fit.coef

    full = grad_J(np.ones(len(df), bool))
    np.testing.assert_allclose(full, 0, atol=1e-8)
    for i in (0, 42, 114, 299):
        keep = np.arange(len(df)) != i
        expected = np.linalg.solve(fit.information, full - grad_J(keep))
        np.testing.assert_allclose(res.loo_change.iloc[i].to_numpy(), expected, rtol=1e-9,
                                   atol=1e-14)
    assert (res.correlation(res.exact()) > 0.95).all()
    assert (ci.influence(cph, df, method="newton").correlation(res.exact()) > 0.999).all()


def test_caller_frame_not_modified(cph_plain):
    cph, df = cph_plain
    before = df.copy()
    ci.influence(cph, df, target="hr").top(3)
    pd.testing.assert_frame_equal(df, before)


# ------------------------------------------------------------------------ datasets

def test_load_gbsg2_and_metabric_shared(shared_data_dir, monkeypatch):
    monkeypatch.setattr(datasets, "_fetch", _no_network)
    assert datasets.load_gbsg2().shape == (686, 10)
    df = datasets.load_metabric(path=shared_data_dir)
    assert df.shape == (1904, 11) and int(df.event.sum()) == 1103
    split = datasets.paper_split("metabric", path=shared_data_dir)
    assert len(split.train) == 1218


def _no_network(url, dest):
    raise AssertionError(f"tests must not download ({url})")


def test_download_path_with_monkeypatched_fetch(tmp_path, monkeypatch):
    h5py = pytest.importorskip("h5py", reason="h5py not installed: HDF5 path not testable")
    rng = np.random.default_rng(0)
    parts = {g: (rng.normal(size=(k, 3)), rng.exponential(size=k), rng.integers(0, 2, k))
             for g, k in (("train", 6), ("test", 4))}
    calls = []

    def fake_fetch(url, dest):
        calls.append(url)
        with h5py.File(dest, "w") as f:
            for g, (x, t, e) in parts.items():
                f.create_dataset(f"{g}/x", data=x)
                f.create_dataset(f"{g}/t", data=t)
                f.create_dataset(f"{g}/e", data=e)
        return dest

    monkeypatch.setattr(datasets, "_fetch", fake_fetch)
    monkeypatch.setenv("COXINFLUENCE_CACHE", str(tmp_path))
    monkeypatch.setenv("COXINFLUENCE_DATA", str(tmp_path / "nowhere"))
    monkeypatch.delenv("COXINFLUENCE_NO_DOWNLOAD", raising=False)
    monkeypatch.setattr(datasets, "_candidate_dirs",
                        lambda: iter([tmp_path / "nowhere", tmp_path]))
    df = datasets.load_support()
    assert calls == [datasets.DEEPSURV_URL + datasets.DEEPSURV_FILES["support"]]
    np.testing.assert_allclose(df[["x0", "x1", "x2"]].to_numpy(),
                               np.vstack([parts["train"][0], parts["test"][0]]))
    np.testing.assert_allclose(df.duration, np.r_[parts["train"][1], parts["test"][1]])
    assert (tmp_path / "support.csv").is_file()
    df2 = datasets.load_support()            # now from the cached CSV: no second fetch
    assert len(calls) == 1
    pd.testing.assert_frame_equal(df, df2, check_dtype=False)
    monkeypatch.setenv("COXINFLUENCE_NO_DOWNLOAD", "1")
    with pytest.raises(FileNotFoundError, match="not found"):
        datasets.load_deepsurv("whas")


def test_hdf5_without_h5py_is_a_clear_error(tmp_path, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_h5py(name, *a, **k):
        if name == "h5py":
            raise ImportError("no h5py")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_h5py)
    (tmp_path / "metabric.h5").write_bytes(b"")
    with pytest.raises(ImportError, match="needs h5py"):
        datasets.load_metabric(path=tmp_path)

"""Parametric AFT regression (issue 26) against R's ``survreg``, the oracle.

Golden fixtures from ``tests/r/aft_reference.R`` (``tests/fixtures/r_aft``; R 4.2.2,
survival 3.5.3): R's ``lung`` (NA rows dropped, status - 1), ``ovarian``, ``veteran``
(celltype dummies) and a simulated interval-censored design, for the four distributions,
with case weights, one scale per stratum (``strata(sex)``) and clusters (``cluster =
inst``, ``robust = TRUE``). Coefficients, log-likelihood, variance, dfbeta and R's
leave-one-out (and leave-one-cluster-out) refits agree to 1e-8; the live comparison
re-runs the script on a fresh simulated design and is skipped where Rscript is absent.

Conventions checked here (docs/conventions.md): our change is ``theta_{-i} - theta_hat``;
R's ``residuals(fit, "dfbeta")`` is per unit of case weight and of the opposite sign, so
``change(i) = -w_i dfbeta_R(i)``; the loss is decomposable, so VIF = IF exactly.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.data.deletion import Deletion
from coxinfluence.influence_functions.aft_audit import AFTAudit
from coxinfluence.likelihood.aft import AFTData, AFTLikelihood

HERE = Path(__file__).parent
SCRIPT = HERE / "r" / "aft_reference.R"
GOLDEN = HERE / "fixtures" / "r_aft"
DISTS = ("weibull", "exponential", "lognormal", "loglogistic")


# ------------------------------------------------------------------ the R fixtures

def load(folder):
    folder = Path(folder)
    cases = pd.read_csv(folder / "cases.csv", keep_default_na=False)
    ref = pd.read_csv(folder / "reference.csv")
    data = {name: pd.read_csv(folder / f"data_{name}.csv")
            for name in ("lung", "ovarian", "veteran", "interval")}
    return cases.set_index("case"), ref, data


def reference(ref, case, quantity):
    sub = ref[(ref["case"] == case) & (ref["quantity"] == quantity)]
    out = np.full((sub["row"].max() + 1, sub["col"].max() + 1), np.nan)
    out[sub["row"].to_numpy(), sub["col"].to_numpy()] = sub["value"].to_numpy()
    return out


def fit_case(row, data):
    d = data[row["dataset"]]
    X = d[row["covariates"].split("+")]
    weights = d["w"] if row["weights"] in (True, "TRUE") else None
    strata = d[row["strata"]] if row["strata"] else None
    if row["dataset"] == "interval":
        return ci.fit_aft(X, d["lower"], dist=row["dist"], upper=d["upper"], weights=weights,
                          strata=strata)
    return ci.fit_aft(X, d["time"], d["status"], row["dist"], weights=weights, strata=strata)


def rel(ours, theirs):
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    return float(np.abs(ours - theirs).max() / max(np.abs(theirs).max(), 1e-300))


def r_dfbeta_corrected(fit, ref, case):
    """R's ``residuals(fit, "dfbeta")`` with its sign error for interval-censored rows
    undone. survival 3.5.3's ``residuals.survreg`` takes the derivative of an interval
    row's log-likelihood ``log(S0(z1) - S0(z2))`` in ``log(sigma)`` as ``(z2 f0(z2) - z1
    f0(z1)) / P``; it is ``(z1 f0(z1) - z2 f0(z2)) / P`` (``d z_j / d log(sigma) = -z_j``),
    as R's own fitting code (C) has it: R's refits agree with ours to 1e-8, and R's raw
    dfbeta of those rows is off by up to half its size
    (:func:`test_r_dfbeta_of_interval_rows_has_the_scale_sign_flipped`). The score behind
    the dfbeta is ``dfbeta V^{-1}``; flipping its scale columns on interval rows undoes the
    error (rows of other kinds are left as R wrote them)."""
    from coxinfluence.likelihood.aft import INTERVAL
    dfbeta = reference(ref, case, "dfbeta")
    data = fit.data
    if data.fixed_scale or not (data.kind == INTERVAL).any():
        return dfbeta
    V = reference(ref, case, "var")
    score = np.linalg.solve(V, dfbeta.T).T
    score[data.kind == INTERVAL, data.p:] *= -1
    return score @ V


CASES, REF, DATA = load(GOLDEN)


def check_case(case, cases, ref, data, loo=True):
    row = cases.loc[case]
    fit = fit_case(row, data)
    assert fit.converged
    assert fit.columns == row["names"].split("|")
    assert rel(fit.coef, reference(ref, case, "coef")[0]) < 1e-8
    assert abs(fit.loglik - reference(ref, case, "loglik")[0, 0]) < 1e-8 * abs(fit.loglik)
    assert rel(fit.var, reference(ref, case, "var")) < 1e-8
    assert np.abs(fit.gradient).max() <= 1e-10
    # R's dfbeta: per unit of case weight, theta_hat - theta_{-i} to first order
    dfbeta = r_dfbeta_corrected(fit, ref, case)
    assert rel(fit.dfbeta(), dfbeta) < 1e-8
    audit = AFTAudit(fit)
    w = fit.data.weights[:, None]
    assert rel(audit.change("reid"), -w * dfbeta) < 1e-8
    if loo:
        rows = reference(ref, case, "loo_rows")[:, 0].astype(int)
        refits = audit.refit(rows)
        assert (refits.status == "ok").all()
        assert rel(refits.theta, reference(ref, case, "loo")) < 1e-8
    return fit, audit


@pytest.mark.parametrize("case", list(CASES.index))
def test_golden_survreg(case):
    check_case(case, CASES, REF, DATA)


@pytest.mark.parametrize("case", [c for c in CASES.index if CASES.loc[c, "cluster"]])
def test_golden_clusters(case):
    row = CASES.loc[case]
    fit = fit_case(row, DATA)
    groups = DATA[row["dataset"]][row["cluster"]]
    assert rel(fit.robust_covariance(groups), reference(REF, case, "robust_var")) < 1e-8
    audit = AFTAudit(fit, groups)
    assert rel(audit.covariance(True), reference(REF, case, "robust_var")) < 1e-8
    # collapsed (weighted) dfbeta: minus our per-cluster change, clusters in label order
    assert rel(audit.change("vif"), -reference(REF, case, "dfbeta_cluster")) < 1e-8
    labels = reference(REF, case, "lco_labels")[:, 0]
    codes = audit.unit_labels.get_indexer(labels)
    refits = audit.refit(codes)
    assert (refits.status == "ok").all()
    assert rel(refits.theta, reference(REF, case, "lco")) < 1e-8


@pytest.mark.parametrize("case", ["interval_weibull___", "interval_lognormal___",
                                  "interval_loglogistic___"])
def test_r_dfbeta_of_interval_rows_has_the_scale_sign_flipped(case):
    """R's raw dfbeta equals ours on exact, right- and left-censored rows; on interval rows
    it does not, and ours (R's with the scale score's sign flipped) is the one that
    predicts R's own leave-one-out refits."""
    from coxinfluence.likelihood.aft import INTERVAL
    row = CASES.loc[case]
    fit = fit_case(row, DATA)
    raw = reference(REF, case, "dfbeta")
    interval = fit.data.kind == INTERVAL
    assert rel(fit.dfbeta()[~interval], raw[~interval]) < 1e-8
    assert rel(fit.dfbeta()[interval], raw[interval]) > 0.1
    rows = reference(REF, case, "loo_rows")[:, 0].astype(int)
    exact = reference(REF, case, "coef")[0] - reference(REF, case, "loo")   # theta - theta_{-i}
    picked = rows[interval[rows]]
    assert picked.size >= 1
    ours_err = np.abs(fit.dfbeta()[picked] - exact[interval[rows]]).max()
    raw_err = np.abs(raw[picked] - exact[interval[rows]]).max()
    assert ours_err < 0.2 * raw_err


def test_golden_data_cover_every_kind_of_row():
    d = DATA["interval"]
    exact = d["lower"] == d["upper"]
    left, right = d["lower"].isna(), d["upper"].isna()
    interval = ~exact & ~left & ~right
    assert min(exact.sum(), left.sum(), right.sum(), interval.sum()) >= 10


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: live comparison with R's survreg skipped "
                           "(install r-base-core r-cran-survival)")
def test_live_against_r(tmp_path):
    subprocess.run([shutil.which("Rscript"), str(SCRIPT), str(tmp_path), "7"], check=True,
                   capture_output=True, text=True, timeout=600)
    cases, ref, data = load(tmp_path)
    for case in cases.index:
        check_case(case, cases, ref, data, loo=case.startswith("interval"))


# ------------------------------------------------------------- the likelihood

def random_data(dist, seed=0, n=60, entry=True, strata=2):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    kind = rng.integers(0, 4, size=n)
    y = rng.normal(size=n)
    y2 = np.where(kind == 3, y + rng.uniform(0.1, 1.5, size=n), np.nan)
    log_entry = (np.where(rng.uniform(size=n) < 0.3, y - rng.uniform(0.2, 2, size=n), -np.inf)
                 if entry else None)
    return AFTData(X, kind, y, y2, log_entry, rng.uniform(0.5, 2, size=n),
                   rng.integers(0, strata, size=n), strata, dist)


def numeric_loss(data, theta):
    """The log-likelihood written out with scipy's distributions, row by row."""
    from scipy import stats
    W = {"weibull": stats.gumbel_l, "exponential": stats.gumbel_l, "lognormal": stats.norm,
         "loglogistic": stats.logistic}[data.dist]
    beta = theta[:data.p]
    total = 0.0
    for i in range(data.n):
        s = 0.0 if data.fixed_scale else theta[data.p + data.strata[i]]
        sig, eta = np.exp(s), data.X[i] @ beta
        z = (data.y[i] - eta) / sig
        k = data.kind[i]
        if k == 1:
            li = W.logpdf(z) - s - data.y[i]
        elif k == 0:
            li = W.logsf(z)
        elif k == 2:
            li = W.logcdf(z)
        else:
            li = np.log(W.sf(z) - W.sf((data.y2[i] - eta) / sig))
        if data.entry is not None and np.isfinite(data.entry[i]):
            li -= W.logsf((data.entry[i] - eta) / sig)
        total += data.weights[i] * li
    return -total


@pytest.mark.parametrize("dist", DISTS)
def test_loss_and_derivatives_are_their_definitions(dist):
    data = random_data(dist)
    lik = AFTLikelihood(data)
    theta = np.random.default_rng(1).normal(size=data.d) * 0.3
    loss, grad, H = lik.loss_grad_hess(theta[None])
    assert abs(loss[0] - numeric_loss(data, theta)) < 1e-10 * abs(loss[0])
    h = 1e-5
    E = np.eye(data.d)
    g_fd = [(lik.loss_grad_hess((theta + h * e)[None], hess=False)[0]
             - lik.loss_grad_hess((theta - h * e)[None], hess=False)[0])[0] / (2 * h) for e in E]
    H_fd = [(lik.loss_grad_hess((theta + h * e)[None])[1]
             - lik.loss_grad_hess((theta - h * e)[None])[1])[0] / (2 * h) for e in E]
    T_fd = [(lik.loss_grad_hess((theta + h * e)[None])[2]
             - lik.loss_grad_hess((theta - h * e)[None])[2])[0] / (2 * h) for e in E]
    assert rel(grad[0], g_fd) < 1e-7
    assert rel(H[0], H_fd) < 1e-7
    assert rel(lik.third_derivative(theta), T_fd) < 1e-7
    # the rows' parts sum to the whole
    w = data.weights
    assert rel(w @ lik.row_scores(theta), grad[0]) < 1e-13
    assert rel(np.einsum("n,nij->ij", w, lik.row_hessians(theta)), H[0]) < 1e-13


def test_presence_deletes_rows():
    data = random_data("weibull")
    lik = AFTLikelihood(data)
    theta = np.array([0.1, 0.2, -0.3, 0.1, -0.2])
    deletion = Deletion.of_rows(data.n, [3, 17])
    loss, grad, H = lik.loss_grad_hess(np.repeat(theta[None], 2, axis=0), deletion)
    for b, i in enumerate([3, 17]):
        keep = np.arange(data.n) != i
        sub = AFTData(data.X[keep], data.kind[keep], data.y[keep], data.y2[keep],
                      data.entry[keep], data.weights[keep], data.strata[keep], 2, "weibull")
        l2, g2, H2 = AFTLikelihood(sub).loss_grad_hess(theta[None])
        assert abs(loss[b] - l2[0]) < 1e-12 * abs(l2[0])
        assert rel(grad[b], g2[0]) < 1e-12
        assert rel(H[b], H2[0]) < 1e-12


def test_extreme_tails_are_finite():
    """Log-survival functions keep far tails finite: z = +-30 (S0 = exp(-e^30) for the
    extreme value) gives finite losses and derivatives."""
    for dist in DISTS:
        n = 4
        X = np.ones((n, 1))
        y = np.array([-30.0, 30.0, -30.0, 30.0])
        data = AFTData(X, np.array([0, 0, 2, 3]), y, np.array([np.nan, np.nan, np.nan, 31.0]),
                       None, np.ones(n), np.zeros(n, dtype=int), 1, dist)
        out = AFTLikelihood(data).row_derivatives(np.zeros((1, data.d)), order=3)
        for key, v in out.items():
            assert np.isfinite(v).all(), (dist, key)


# ------------------------------------------------------------- fits and inputs

def lung_fit(dist="weibull", **kw):
    d = DATA["lung"]
    return ci.fit_aft(d[["age", "sex", "ph.ecog"]], d["time"], d["status"], dist, **kw)


def test_delayed_entry_equals_lifelines():
    """Left truncation: lifelines' WeibullAFTFitter(entry_col=) maximises the same
    likelihood (its lambda_ = our coefficients, rho_ Intercept = -log sigma; lifelines'
    optimiser stops near 1e-6)."""
    lifelines = pytest.importorskip("lifelines")
    rng = np.random.default_rng(3)
    n = 300
    x = rng.normal(size=n)
    T = np.exp(1 + 0.5 * x + 0.7 * np.log(rng.exponential(size=n)))
    entry = rng.uniform(0, 1.0, n)
    df = pd.DataFrame({"x": x, "T": T, "E": (rng.uniform(size=n) < 0.8).astype(int),
                       "entry": entry})[T > entry].reset_index(drop=True)
    wf = lifelines.WeibullAFTFitter().fit(df, "T", "E", entry_col="entry")
    fit = ci.fit_aft(df[["x"]], df["T"], df["E"], "weibull", entry=df["entry"])
    assert abs(fit.coef[0] - wf.params_[("lambda_", "Intercept")]) < 1e-5
    assert abs(fit.coef[1] - wf.params_[("lambda_", "x")]) < 1e-5
    assert abs(-fit.coef[2] - wf.params_[("rho_", "Intercept")]) < 1e-5
    assert abs(fit.loglik - wf.log_likelihood_) < 1e-8 * abs(fit.loglik)
    plain = ci.fit_aft(df[["x"]], df["T"], df["E"], "weibull")
    assert np.abs(plain.coef - fit.coef).max() > 1e-2      # the entry times matter


def test_names_params_summary_and_pandas_index():
    d = DATA["lung"].set_index(DATA["lung"].index + 1000)
    fit = ci.fit_aft(d[["age", "sex", "ph.ecog"]], d["time"], d["status"],
                     strata=d["sex"])
    assert fit.columns == ["(Intercept)", "age", "sex", "ph.ecog", "Log(scale[sex=1])",
                           "Log(scale[sex=2])"]
    assert list(fit.params.index) == fit.columns
    assert list(fit.summary().columns)[:4] == ["Value", "Std. Error", "z", "p"]
    np.testing.assert_allclose(fit.summary()["Std. Error"], np.sqrt(np.diag(fit.var)))
    np.testing.assert_allclose(fit.scale, np.exp(fit.coef[4:]))
    np.testing.assert_allclose(fit.time_ratios, np.exp(fit.coef[1:4]))
    assert fit.training_frame().index.equals(d.index)
    # the objective is minus the log-likelihood, at any parameters, NaN where not finite
    thetas = np.vstack([fit.coef, fit.coef + 0.01, np.full(fit.coef.size, np.nan)])
    obj = fit.objective(thetas)
    assert abs(obj[0] + fit.loglik) < 1e-12 * abs(fit.loglik)
    assert obj[1] > obj[0] and np.isnan(obj[2])
    assert abs(obj[1] - fit.likelihood.loss_grad_hess(thetas[1:2])[0][0]) < 1e-9
    # a Series with its rows in another order is matched on the index
    shuffled = ci.fit_aft(d[["age", "sex", "ph.ecog"]], d["time"].iloc[::-1],
                          d["status"].iloc[::-1], strata=d["sex"])
    np.testing.assert_array_equal(shuffled.coef, fit.coef)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("dist", ("weibull", "lognormal", "loglogistic"))
def test_a_start_far_from_the_maximum_still_converges(dist):
    """Newton from a start where the Hessian is not positive definite fails; the fit then
    takes damped (Levenberg-Marquardt) steps into the maximum's basin, quietly."""
    from coxinfluence.numerics.newton import newton
    ref = lung_fit(dist)
    for init in (np.r_[0, 0, 0, 0, 3.0], np.r_[10, 0, 0, 0, -3.0], np.r_[0, 0.1, 0, 0, 0]):
        assert not newton(ref.likelihood.objective(), init[None], tol=1e-10).converged[0]
        fit = lung_fit(dist, init=init)
        assert fit.converged
        assert np.abs(fit.coef - ref.coef).max() < 1e-12


@pytest.mark.parametrize("kwargs, message", [
    (dict(time=-1.0), "time must be positive"),
    (dict(event=2), "event must be 0/1"),
    (dict(weights=0.0), "weights must be positive"),
    (dict(const=True), "constant column"),
    (dict(collinear=True), "collinear"),
    (dict(dist="gamma"), "dist must be one of"),
    (dict(censored=True), "no events"),
    (dict(dist="exponential", strata=True), "exponential model has none"),
])
def test_input_errors_name_the_problem(kwargs, message):
    d = DATA["lung"].copy()
    X = d[["age", "sex", "ph.ecog"]].copy()
    time, event = d["time"].astype(float).copy(), d["status"].copy()
    weights = None
    if "time" in kwargs:
        time.iloc[3] = kwargs["time"]
    if "event" in kwargs:
        event.iloc[4] = kwargs["event"]
    if "weights" in kwargs:
        weights = np.ones(len(d))
        weights[5] = kwargs["weights"]
    if kwargs.get("const"):
        X["one"] = 2.0
    if kwargs.get("collinear"):
        X["twice"] = 2 * X["age"] - X["sex"]
    if kwargs.get("censored"):
        event[:] = 0
    strata = d["sex"] if kwargs.get("strata") else None
    with pytest.raises(ci.CoxInputError, match=message):
        ci.fit_aft(X, time, event, kwargs.get("dist", "weibull"), weights=weights,
                   strata=strata)


@pytest.mark.parametrize("dist", DISTS)
def test_weights_of_two_equal_duplicated_rows(dist):
    """Integer case weights are repeated rows: the fit, and a row of weight 2 deleted is the
    cluster of its two copies deleted (changes, refits, robust covariance)."""
    rng = np.random.default_rng(11)
    d = DATA["lung"]
    X, t, e = d[["age", "sex", "ph.ecog"]].to_numpy(), d["time"].to_numpy(), d["status"].to_numpy()
    twice = rng.uniform(size=len(d)) < 0.3
    w = np.where(twice, 2.0, 1.0)
    rows = np.concatenate([np.arange(len(d)), np.flatnonzero(twice)])
    weighted = ci.fit_aft(X, t, e, dist, weights=w)
    repeated = ci.fit_aft(X[rows], t[rows], e[rows], dist)
    assert rel(weighted.coef, repeated.coef) < 1e-10
    assert abs(weighted.loglik - repeated.loglik) < 1e-10 * abs(weighted.loglik)
    assert rel(weighted.var, repeated.var) < 1e-9
    by_row = AFTAudit(weighted)
    by_copy = AFTAudit(repeated, groups=rows)
    for method in ("vif", "newton"):
        assert rel(by_row.change(method), by_copy.change(method)) < 1e-9
    codes = np.flatnonzero(twice)[:5]
    assert rel(by_row.refit(codes).theta, by_copy.refit(codes).theta) < 1e-9
    assert rel(weighted.robust_covariance(), by_copy.covariance(True)) < 1e-9


# ------------------------------------------------------------------- the audit

@pytest.mark.parametrize("dist", DISTS)
def test_vif_equals_if_and_their_definitions(dist):
    """The loss is decomposable: the VIF (by its deletion definition) and Reid's IF (the
    derivative in the case weight) are the same vector, and equal the closed form."""
    d = DATA["lung"]
    w = np.random.default_rng(2).uniform(0.5, 2, len(d))
    fit = lung_fit(dist, weights=w)
    audit = AFTAudit(fit)
    n, H = fit.n, fit.information
    np.testing.assert_array_equal(audit.change("vif"), audit.change("reid"))
    rows = np.array([0, 7, 55, 120])
    # VIF's definition: -(H/n)^{-1} (grad L(theta_hat) - grad L_{-i}(theta_hat)), by deletion
    deleted = fit.likelihood.loss_grad_hess(np.repeat(fit.coef[None], rows.size, axis=0),
                                            Deletion.of_rows(n, rows), hess=False)[1]
    vif_def = -n * np.linalg.solve(H, (fit.gradient[None] - deleted).T).T
    assert rel(audit.vif[rows], vif_def) < 1e-9
    # Reid's IF: minus the weight times d theta_hat / d w_i, by central differences of refits
    for i in rows[:2]:
        h = 1e-4
        up, down = w.copy(), w.copy()
        up[i] += h
        down[i] -= h
        dtheta = (lung_fit(dist, weights=up).coef - lung_fit(dist, weights=down).coef) / (2 * h)
        assert rel(-w[i] * dtheta, audit.change("reid")[i]) < 1e-6


@pytest.mark.parametrize("dist", DISTS)
def test_newton_and_refits_equal_their_definitions(dist):
    fit = lung_fit(dist)
    audit = AFTAudit(fit)
    rows = np.array([2, 5, 35, 83])
    loss, grad, hess = fit.likelihood.loss_grad_hess(np.repeat(fit.coef[None], rows.size, 0),
                                                     Deletion.of_rows(fit.n, rows))
    newton_def = -np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
    assert rel(audit.change("newton")[rows], newton_def) < 1e-10
    # the split is exact: H - C_g is the deleted Hessian
    assert rel(fit.information[None] - audit.split[rows], hess) < 1e-12
    assert rel(audit.split.sum(axis=0), fit.information) < 1e-12
    refits = audit.refit(rows)
    g = fit.likelihood.loss_grad_hess(refits.theta, Deletion.of_rows(fit.n, rows),
                                      hess=False)[1]
    assert np.abs(g).max() <= 1e-10
    # refitting the data without the row from scratch gives the same maximum
    d = DATA["lung"]
    for k, i in enumerate(rows):
        keep = np.arange(fit.n) != i
        alone = ci.fit_aft(d[["age", "sex", "ph.ecog"]][keep], d["time"][keep],
                           d["status"][keep], dist)
        assert rel(refits.theta[k], alone.coef) < 1e-9


def test_unit_scores_and_robust_covariance():
    fit = lung_fit("lognormal")
    audit = AFTAudit(fit)
    scores = audit.unit_scores()
    assert rel(scores, -fit.data.weights[:, None] * fit.row_scores()) < 1e-10
    D = fit.data.weights[:, None] * fit.dfbeta()
    assert rel(audit.covariance(True), D.T @ D) < 1e-12
    assert rel(audit.covariance(False), fit.var) < 1e-12


def test_undefined_units():
    """The only row with a level of a dummy: deleting it leaves the column constant (the
    intercept's): undefined, refitted without that column (NaN), the rest equal to the
    fit without row and column. The only event of a stratum: its scale has no maximum."""
    d = DATA["lung"].reset_index(drop=True)
    X = d[["age", "sex", "ph.ecog"]].copy()
    X["rare"] = 0.0
    X.loc[10, "rare"] = 1.0
    fit = ci.fit_aft(X, d["time"], d["status"])
    audit = AFTAudit(fit)
    undefined = audit.undefined()
    assert undefined[10] and undefined.sum() == 1
    refits = audit.refit([10, 11])
    assert list(refits.status) == ["undefined", "ok"]
    assert np.isnan(refits.theta[0, 4]) and np.isfinite(refits.theta[0, [0, 1, 2, 3, 5]]).all()
    keep = d.index != 10
    alone = ci.fit_aft(X.loc[keep, ["age", "sex", "ph.ecog"]], d["time"][keep],
                       d["status"][keep])
    assert rel(refits.theta[0, [0, 1, 2, 3, 5]], alone.coef) < 1e-9
    # a stratum with one event: deleting that row leaves its scale without a maximum
    strata = np.where(np.arange(len(d)) < 6, "small", "big")
    status = d["status"].to_numpy().copy()
    status[:6] = 0
    status[0] = 1
    fit = ci.fit_aft(d[["age", "sex", "ph.ecog"]], d["time"], status, strata=strata)
    audit = AFTAudit(fit)
    assert audit.undefined()[0] and audit.undefined().sum() == 1
    assert audit.refit([0]).status[0] == "undefined"
    result = ci.influence(fit)
    assert result.flags.loc[0, "undefined"]


@pytest.mark.parametrize("dist", DISTS)
def test_auto_top_10_is_the_exact_top_10(dist):
    fit = lung_fit(dist)
    auto = ci.influence(fit)
    exact = ci.influence(fit, method="exact")
    assert auto.verified.sum() >= 10
    assert list(auto.top(10).index) == list(exact.top(10).index)
    top = auto.top(10).index
    assert auto.verified[top].all()
    np.testing.assert_allclose(auto.theta_change.loc[top], exact.theta_change.loc[top],
                               rtol=0, atol=1e-12)
    assert auto.model.model_name.endswith("AFT (survreg)")


def test_influence_methods_and_targets_against_r():
    """``ci.influence`` of an AFTFit: exact changes are R's refits minus R's fit, "reid"
    is minus R's dfbeta, the time-ratio target follows by the chain rule (approximations)
    and by exp of the refits (exact)."""
    case = "lung_weibull_w__"
    fit = fit_case(CASES.loc[case], DATA)
    rows = reference(REF, case, "loo_rows")[:, 0].astype(int)
    exact = ci.influence(fit, method="exact")
    r_change = reference(REF, case, "loo") - reference(REF, case, "coef")[0]
    assert rel(exact.theta_change.to_numpy()[rows], r_change) < 1e-7
    reid = ci.influence(fit, method="reid")
    assert rel(reid.theta_change, -fit.data.weights[:, None] * reference(REF, case, "dfbeta")) \
        < 1e-8
    tr = ci.influence(fit, method="exact", target="tr")
    assert list(tr.loo_change.columns) == ["TR age", "TR sex", "TR ph.ecog"]
    loo = reference(REF, case, "loo")
    expected = np.exp(loo[:, 1:4]) - np.exp(fit.coef[1:4])
    assert rel(tr.loo_change.to_numpy()[rows], expected) < 1e-7
    tr_vif = ci.influence(fit, method="vif", target="tr")
    np.testing.assert_allclose(tr_vif.loo_change.to_numpy(),
                               reid.theta_change.to_numpy()[:, 1:4] * np.exp(fit.coef[1:4]),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="not available for this model"):
        ci.influence(fit, target="hr")


def test_influence_with_clusters_is_r_cluster_deletion():
    case = "lung_weibull___inst"
    fit = fit_case(CASES.loc[case], DATA)
    inst = DATA["lung"]["inst"]
    res = ci.influence(fit, groups=inst, robust=True, method="exact")
    labels = reference(REF, case, "lco_labels")[:, 0]
    r_change = reference(REF, case, "lco") - reference(REF, case, "coef")[0]
    assert rel(res.theta_change.loc[labels].to_numpy(), r_change) < 1e-7
    assert res.robust
    se = np.sqrt(np.diag(reference(REF, case, "robust_var")))
    assert rel(res.target_se.to_numpy(), se) < 1e-8
    assert list(res.frame.columns) == ["rows", "events"]


def test_an_auto_audit_computes_each_shared_quantity_once(monkeypatch):
    """The per-row scores (VIF = IF), the information split (flags, then the refits'
    start) and the third derivative are computed once per audit."""
    calls = {"row_scores": 0, "row_hessians": 0, "third_derivative": 0}
    for name in calls:
        original = getattr(AFTLikelihood, name)

        def counted(self, *args, _name=name, _original=original, **kw):
            calls[_name] += 1
            return _original(self, *args, **kw)

        monkeypatch.setattr(AFTLikelihood, name, counted)
    fit = lung_fit("loglogistic")
    result = ci.influence(fit)
    result.summary_frame()
    result.top(10)
    assert not result.flags["refit_failed"].any()
    assert calls == {"row_scores": 1, "row_hessians": 1, "third_derivative": 1}


# ---------------------------------------------------------------- lifelines' AFT fitters

LIFELINES = {"WeibullAFTFitter": ("weibull", "lambda_", "rho_", -1.0),
             "LogNormalAFTFitter": ("lognormal", "mu_", "sigma_", 1.0),
             "LogLogisticAFTFitter": ("loglogistic", "alpha_", "beta_", -1.0)}
#: lifelines' own refits stop short of the maximum (SLSQP; ftol 1e-14 below): measured gap
#: of their changes to our exact ones, in standard errors, on rossi
LIFELINES_SE = {"WeibullAFTFitter": 1e-5, "LogNormalAFTFitter": 2e-3,
                "LogLogisticAFTFitter": 1e-5}


@pytest.mark.parametrize("name", list(LIFELINES))
def test_lifelines_aft_exact_changes_equal_lifelines_refits(name):
    lifelines = pytest.importorskip("lifelines")
    from lifelines.datasets import load_rossi
    df = load_rossi()
    cls = getattr(lifelines, name)
    tight = {"ftol": 1e-14, "maxiter": 1000}
    model = cls().fit(df, "week", "arrest", fit_options=tight)
    res = ci.influence(model, df)
    fit = res.fit.base                                  # R's parametrisation (an AFTFit)
    assert res.source == "lifelines" and fit.dist == LIFELINES[name][0]
    assert res.theta_change.columns.equals(model.params_.index)
    X = df.drop(columns=["week", "arrest"])[fit.covariates]      # lifelines' column order
    direct = ci.fit_aft(X, df["week"], df["arrest"], fit.dist)
    np.testing.assert_allclose(fit.coef, direct.coef, rtol=0, atol=1e-10)
    assert list(res.top(10).index) == list(ci.influence(direct, method="exact").top(10).index)
    for i in res.top(3).index:
        again = cls().fit(df.drop(index=i), "week", "arrest", fit_options=tight)
        change = (again.params_ - model.params_).to_numpy()     # in params_' own order
        assert res.verified[i]
        gap = np.abs(change - res.theta_change.loc[i].to_numpy()) / res.fit.se
        assert gap.max() < LIFELINES_SE[name], (i, gap.max())


@pytest.mark.filterwarnings("ignore:It appears your weights are not integers")
def test_lifelines_aft_weights_entry_and_interval_censoring():
    lifelines = pytest.importorskip("lifelines")
    from lifelines.datasets import load_rossi
    df = load_rossi().iloc[:200].copy()
    rng = np.random.default_rng(5)
    df["w"] = rng.uniform(0.5, 2, len(df))
    df["entry"] = np.minimum(rng.uniform(0, 5, len(df)), df["week"] - 0.5)
    model = lifelines.WeibullAFTFitter().fit(df, "week", "arrest", weights_col="w",
                                             entry_col="entry",
                                             fit_options={"ftol": 1e-14, "maxiter": 1000})
    res = ci.influence(model, df, method="vif")
    X = df.drop(columns=["week", "arrest", "w", "entry"])[res.fit.base.covariates]
    direct = ci.fit_aft(X, df["week"], df["arrest"], weights=df["w"], entry=df["entry"])
    np.testing.assert_allclose(res.fit.base.coef, direct.coef, rtol=0, atol=1e-10)
    # in lifelines' params_ (theta = A phi: integrations/lifelines_aft.py)
    np.testing.assert_allclose(res.theta_change, AFTAudit(direct).change("vif") @ res.fit.A.T,
                               atol=1e-12)
    # interval censoring: lifelines' bounds (upper inf: right; lower 0: left)
    d = DATA["interval"].copy()
    d["lower"] = d["lower"].fillna(0.0)
    d["upper"] = d["upper"].fillna(np.inf)
    model = lifelines.WeibullAFTFitter().fit_interval_censoring(d[["lower", "upper", "x1",
                                                                   "x2"]], "lower", "upper")
    res = ci.influence(model, d[["lower", "upper", "x1", "x2"]], method="reid")
    case = "interval_weibull___"
    assert rel(res.fit.base.coef, reference(REF, case, "coef")[0]) < 1e-8
    assert rel(res.theta_change.to_numpy() @ res.fit.B.T,
               -r_dfbeta_corrected(res.fit.base, REF, case)) < 1e-8


def test_lifelines_aft_refusals():
    lifelines = pytest.importorskip("lifelines")
    from lifelines.datasets import load_rossi

    from coxinfluence.integrations.lifelines_aft import resolve_lifelines_aft
    df = load_rossi()
    model = lifelines.WeibullAFTFitter().fit(df, "week", "arrest")
    with pytest.raises(ValueError, match="pass the DataFrame"):
        ci.influence(model)
    other = df.copy()
    other["age"] = other["age"].sample(frac=1, random_state=0).to_numpy()
    with pytest.raises(ValueError, match="do not match our refit"):
        ci.influence(model, other)
    anc = lifelines.WeibullAFTFitter().fit(df, "week", "arrest", ancillary=True)
    with pytest.raises(ValueError, match="ancillary"):       # not R's survreg model
        resolve_lifelines_aft(anc, df)
    with pytest.raises(ValueError, match="not available for this model"):
        ci.influence(model, df, target="hr")
    cox = ci.fit_cox(df[["age", "fin"]], df["week"], df["arrest"])
    with pytest.raises(ValueError, match="'time_ratio' is not available for this model"):
        ci.influence(cox, target="tr")


def test_several_stratum_columns_are_audited_like_one_combined_column():
    """Two stratum columns give each (fin, wexp) cell its scale: the same model, audit and
    top table as one column coding the cells; the frame shows the cells as tuples."""
    from lifelines.datasets import load_rossi
    df = load_rossi()
    X = df[["age", "prio"]]
    two = ci.fit_aft(X, df.week, df.arrest, strata=df[["fin", "wexp"]])
    one = ci.fit_aft(X, df.week, df.arrest, strata=2 * df.fin + df.wexp)
    assert np.abs(two.coef - one.coef).max() < 1e-10
    a, b = ci.influence(two), ci.influence(one)
    assert np.abs(a.theta_change.to_numpy() - b.theta_change.to_numpy()).max() < 1e-10
    assert list(a.top(10).index) == list(b.top(10).index)
    assert two.training_frame()["strata"].iloc[0] == (df.fin[0], df.wexp[0])

"""scikit-survival's Cox models audited (issue 27): ``CoxPHSurvivalAnalysis`` (ridge) and
``CoxnetSurvivalAnalysis`` (elastic net), against scikit-survival's own refits on its
bundled data sets (the oracle: the same estimator refitted without the row, to a tight
``tol``)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

sksurv = pytest.importorskip("sksurv")

from sklearn.preprocessing import StandardScaler  # noqa: E402
from sksurv.datasets import load_veterans_lung_cancer, load_whas500  # noqa: E402
from sksurv.linear_model import CoxnetSurvivalAnalysis, CoxPHSurvivalAnalysis  # noqa: E402
from sksurv.preprocessing import OneHotEncoder  # noqa: E402

import coxinfluence as ci  # noqa: E402
from coxinfluence.audit.targets import Survival  # noqa: E402
from coxinfluence.families.sksurv_targets import RiskScore  # noqa: E402

TIGHT = 1e-15     # scikit-survival's tol for the oracle refits


@pytest.fixture(scope="module")
def veterans():
    X, y = load_veterans_lung_cancer()
    return OneHotEncoder().fit_transform(X).astype(float), y


@pytest.fixture(scope="module")
def whas500():
    """WHAS500 one-hot and standardised, as the issue measured it."""
    X, y = load_whas500()
    X = OneHotEncoder().fit_transform(X)
    return pd.DataFrame(StandardScaler().fit_transform(X), columns=X.columns, index=X.index), y


def _without(X, y, i):
    keep = np.ones(len(y), dtype=bool)
    keep[i] = False
    return X[keep], y[keep]


def _quiet(fn, *args):
    """``fn(*args)`` without scikit-survival's warnings (all coefficients zero, early
    termination at a tight tol)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("alpha", [0.0, 5.0])
def test_coxph_exact_refits_risk_score_and_survival_equal_sksurv_refits(veterans, ties, alpha):
    X, y = veterans
    Xn = X.iloc[:3]
    est = CoxPHSurvivalAnalysis(alpha=alpha, ties=ties, tol=TIGHT).fit(X, y)
    res = ci.influence(est, X, y=y, method="exact", target=RiskScore(Xn))
    times = np.array([10.0, 50.0, 100.0, 300.0])
    surv = ci.influence(est, X, y=y, method="exact", target=Survival(Xn, times))
    base = np.array([f(times) for f in est.predict_survival_function(Xn)]).ravel()
    np.testing.assert_allclose(surv.target.value(surv.fit, surv.fit.coef[None])[0], base,
                               atol=1e-9)
    assert np.allclose(res.model.coef, est.coef_, atol=1e-9)
    for i in (0, 7, 50):
        other = CoxPHSurvivalAnalysis(alpha=alpha, ties=ties, tol=TIGHT).fit(*_without(X, y, i))
        np.testing.assert_allclose(res.theta_change.iloc[i] + est.coef_, other.coef_,
                                   atol=1e-9)
        np.testing.assert_allclose(res.loo_change.iloc[i],
                                   other.predict(Xn) - est.predict(Xn), atol=1e-9)
        S = np.array([f(times) for f in other.predict_survival_function(Xn)]).ravel()
        np.testing.assert_allclose(surv.loo_change.iloc[i], S - base, atol=1e-9)


def test_coxph_ridge_vif_is_its_definition(veterans):
    """The VIF of the ridge objective ``L + alpha/2 |b|^2``: ``H_J^{-1} (grad J -
    grad J_{-i})`` at ``beta_hat``, the deleted gradients by literal deletion."""
    X, y = veterans
    alpha = 5.0
    est = CoxPHSurvivalAnalysis(alpha=alpha, ties="efron", tol=TIGHT).fit(X, y)
    res = ci.influence(est, X, y=y, method="vif")
    b = res.model.coef
    t, e = y["Survival_in_days"], y["Status"].astype(float)
    H = ci.cox_hessian(b, X, t, e, ties="efron") + alpha * np.eye(b.size)
    g = ci.cox_gradient(b, X, t, e, ties="efron") + alpha * b
    for i in (0, 3, 90):
        keep = np.arange(len(t)) != i
        g_i = ci.cox_gradient(b, X[keep], t[keep], e[keep], ties="efron") + alpha * b
        np.testing.assert_allclose(res.theta_change.iloc[i], np.linalg.solve(H, g - g_i),
                                   rtol=1e-8, atol=1e-12)


def _coxnet(**kw):
    return CoxnetSurvivalAnalysis(tol=TIGHT, **kw)


@pytest.mark.parametrize("case", ["whas500", "veterans_normalized"])
def test_coxnet_exact_refits_equal_sksurv_refits(whas500, veterans, case):
    """Deletion refits keep alpha, l1_ratio, penalty_factor, normalize and the 1/n
    scaling (n -> n - 1); rows include ones whose deletion changes the selection."""
    if case == "whas500":
        X, y = whas500
        kw = dict(l1_ratio=0.8, alphas=[0.02])
    else:
        X, y = veterans
        kw = dict(l1_ratio=0.5, alphas=[0.002], normalize=True,
                  penalty_factor=np.r_[np.ones(X.shape[1] - 1), 0.5])
    est = _quiet(lambda: _coxnet(**kw).fit(X, y))
    res = ci.influence(est, X, y=y, method="exact")
    model = res.model
    np.testing.assert_allclose(model.coef, est.coef_[:, 0], atol=1e-7)
    loo = res.theta_change.to_numpy() + model.coef
    changed = np.flatnonzero(((loo != 0) != model.active).any(axis=1))
    rows = list(changed[:3]) + [0, 5]
    for i in rows:
        other = _quiet(_coxnet(**kw).fit, *_without(X, y, i))
        np.testing.assert_allclose(loo[i], other.coef_[:, 0], atol=1e-7)
        assert ((loo[i] != 0) == (other.coef_[:, 0] != 0)).all()


def test_coxnet_vif_is_the_kkt_linearisation(veterans):
    """``Delta_A = -H_AA^{-1} [(n - 1) grad f_{-i}(beta_hat)]_A`` with scikit-survival's
    objective ``f`` written out here (1/n-scaled Breslow loss plus the elastic net on the
    normalised scale, its strengths without row i) and the deleted gradient by literal
    deletion; one-step Newton with the deleted Hessian."""
    X, y = veterans
    a, l1r = 0.002, 0.5
    est = _quiet(lambda: _coxnet(l1_ratio=l1r, alphas=[a], normalize=True).fit(X, y))
    res = ci.influence(est, X, y=y, method="vif")
    newton = ci.influence(est, X, y=y, method="newton")
    model = res.model
    b, A = model.coef, model.coef != 0
    t, e = y["Survival_in_days"], y["Status"].astype(float)
    n = len(t)
    Xa = X.to_numpy()

    def norms(Z):
        return np.linalg.norm(Z - Z.mean(axis=0), axis=0)

    s = norms(Xa)
    H = ci.cox_hessian(b, Xa, t, e, ties="breslow") + n * a * (1 - l1r) * np.diag(s ** 2)
    for i in (0, 3, 90):
        keep = np.arange(n) != i
        s_i = norms(Xa[keep])
        g = (ci.cox_gradient(b, Xa[keep], t[keep], e[keep], ties="breslow")
             + (n - 1) * a * ((1 - l1r) * s_i ** 2 * b + l1r * s_i * np.sign(b)))
        want = np.zeros(b.size)
        want[A] = -np.linalg.solve(H[np.ix_(A, A)], g[A])
        np.testing.assert_allclose(res.theta_change.iloc[i], want, rtol=1e-8, atol=1e-12)
        H_i = (ci.cox_hessian(b, Xa[keep], t[keep], e[keep], ties="breslow")
               + (n - 1) * a * (1 - l1r) * np.diag(s_i ** 2))
        want[A] = -np.linalg.solve(H_i[np.ix_(A, A)], g[A])
        np.testing.assert_allclose(newton.theta_change.iloc[i], want, rtol=1e-8, atol=1e-12)


def test_every_selection_change_is_flagged_and_auto_refits_it(whas500):
    """The issue's measurement: WHAS500 (one-hot, standardised, l1_ratio=0.8) at alpha
    0.02, 11 of 500 deletions change the active set. Every one is flagged, and
    ``method="auto"`` refits every flagged row."""
    X, y = whas500
    est = _quiet(lambda: CoxnetSurvivalAnalysis(l1_ratio=0.8, alphas=[0.02]).fit(X, y))
    exact = ci.influence(est, X, y=y, method="exact")
    model = exact.model
    loo = exact.theta_change.to_numpy() + model.coef
    changed = ((loo != 0) != model.active).any(axis=1)
    assert changed.sum() == 11
    flagged = exact.flags["selection_changes"].to_numpy()
    assert flagged[changed].all()
    auto = ci.influence(est, X, y=y)
    verified = auto.verified.to_numpy()
    assert verified[flagged].all()
    np.testing.assert_allclose(auto.theta_change.to_numpy()[verified],
                               exact.theta_change.to_numpy()[verified], atol=1e-9)
    # unflagged rows: the VIF follows the exact refits on the active set
    vif = ci.influence(est, X, y=y, method="vif")
    ok = ~flagged
    for j in np.flatnonzero(model.active):
        r = np.corrcoef(vif.theta_change.to_numpy()[ok, j], loo[ok, j] - model.coef[j])[0, 1]
        assert r > 0.999


def test_coxnet_risk_score_and_survival_equal_sksurv(veterans):
    X, y = veterans
    Xn, times = X.iloc[:3], np.array([10.0, 50.0, 100.0, 300.0])
    kw = dict(l1_ratio=0.5, alphas=[0.05])
    est = _quiet(lambda: _coxnet(fit_baseline_model=True, **kw).fit(X, y))
    risk = ci.influence(est, X, y=y, method="exact", target=RiskScore(Xn))
    surv = ci.influence(est, X, y=y, method="exact", target=Survival(Xn, times))
    base = np.array([f(times) for f in est.predict_survival_function(Xn)]).ravel()
    np.testing.assert_allclose(surv.target.value(surv.fit, surv.fit.coef[None])[0], base,
                               atol=1e-7)
    for i in (0, 7, 50):
        other = _quiet(_coxnet(fit_baseline_model=True, **kw).fit, *_without(X, y, i))
        np.testing.assert_allclose(risk.loo_change.iloc[i],
                                   other.predict(Xn) - est.predict(Xn), atol=1e-7)
        S = np.array([f(times) for f in other.predict_survival_function(Xn)]).ravel()
        np.testing.assert_allclose(surv.loo_change.iloc[i], S - base, atol=1e-7)
    # first order: the chain rule plus the centre's change tracks the refits
    vif = ci.influence(est, X, y=y, method="vif", target=RiskScore(Xn))
    ok = ~vif.flags["selection_changes"].to_numpy()
    for c in vif.loo_change.columns:
        assert np.corrcoef(vif.loo_change[c][ok], risk.loo_change[c][ok])[0, 1] > 0.99


def test_results_keep_the_callers_index_and_inputs(veterans):
    X, y = veterans
    X = X.set_axis([f"p{k}" for k in range(len(X))], axis=0)
    X0, y0 = X.copy(), y.copy()
    est = _quiet(lambda: CoxnetSurvivalAnalysis(l1_ratio=0.9, alphas=[0.05]).fit(X, y))
    res = ci.influence(est, X, y=y, method="vif")
    assert res.loo_change.index.equals(X.index)
    assert list(res.theta_change.columns) == list(X.columns)
    assert "selection_changes" in res.flags.columns
    pd.testing.assert_frame_equal(X, X0)
    assert (y == y0).all()


def test_refusals(veterans):
    X, y = veterans
    est = CoxPHSurvivalAnalysis().fit(X, y)
    with pytest.raises(ValueError, match="do not match"):
        ci.influence(est, X, y=y[np.random.default_rng(0).permutation(len(y))])
    with pytest.raises(ValueError, match="keeps no training data"):
        ci.influence(est, X)
    with pytest.raises(ValueError, match="groups= and robust="):
        ci.influence(est, X, y=y, groups=np.arange(len(y)) // 2)
    path = _quiet(lambda: CoxnetSurvivalAnalysis(l1_ratio=0.8, n_alphas=5).fit(X, y))
    with pytest.raises(ValueError, match="pass alpha="):
        ci.influence(path, X, y=y)
    with pytest.raises(ValueError, match="not one of the estimator's alphas_"):
        ci.influence(path, X, y=y, alpha=0.123456)
    res = ci.influence(path, X, y=y, alpha=path.alphas_[2], method="vif")
    assert np.allclose(res.model.coef, path.coef_[:, 2], atol=1e-4)
    norm = _quiet(lambda: CoxnetSurvivalAnalysis(alphas=[0.01], normalize=True,
                                                 fit_baseline_model=True).fit(X, y))
    with pytest.raises(ValueError, match="not available"):
        ci.influence(norm, X, y=y, target=Survival(X.iloc[:2], [50.0]))
    fit = ci.fit_cox(X, y["Survival_in_days"], y["Status"].astype(float))
    with pytest.raises(ValueError, match="scikit-survival"):
        ci.influence(fit, y=y)


def _glmnet_available():
    import shutil
    import subprocess
    if shutil.which("Rscript") is None:
        return False
    return subprocess.run(["Rscript", "-e", "library(glmnet)"],
                          capture_output=True).returncode == 0


@pytest.mark.needs_r
@pytest.mark.skipif(not _glmnet_available(),
                    reason="R's glmnet not installed (apt-get install -y r-cran-glmnet)")
def test_coxnet_refits_equal_r_glmnet(veterans, tmp_path):
    """Second oracle: R's glmnet (``family="cox"``, ``standardize=FALSE``: its objective
    is scikit-survival's with ``normalize=False``, lambda = alpha, alpha = l1_ratio, the
    penalty factors rescaled the same way) refitted without each of three rows."""
    import subprocess
    X, y = veterans
    pf = np.r_[np.ones(X.shape[1] - 1), 0.5]
    a, l1r, rows = 0.05, 0.8, (0, 7, 50)
    est = _quiet(_coxnet(l1_ratio=l1r, alphas=[a], penalty_factor=pf).fit, X, y)
    res = ci.influence(est, X, y=y, method="exact")
    data = X.copy()
    data["time"], data["status"] = y["Survival_in_days"], y["Status"].astype(int)
    data.to_csv(tmp_path / "d.csv", index=False)
    script = f"""
suppressPackageStartupMessages(library(glmnet))
d <- read.csv("{tmp_path / 'd.csv'}")
x <- as.matrix(d[, 1:(ncol(d) - 2)]); yy <- cbind(time = d$time, status = d$status)
out <- NULL
for (i in c(0, {', '.join(str(r + 1) for r in rows)})) {{
  keep <- if (i == 0) seq_len(nrow(x)) else -i
  f <- glmnet(x[keep, ], yy[keep, ], family = "cox", alpha = {l1r}, lambda = {a},
              standardize = FALSE, thresh = 1e-14, penalty.factor = c({', '.join(map(str, pf))}))
  out <- rbind(out, as.numeric(coef(f)))
}}
write.table(out, "{tmp_path / 'coef.csv'}", sep = ",", row.names = FALSE, col.names = FALSE)
"""
    (tmp_path / "g.R").write_text(script)
    subprocess.run(["Rscript", str(tmp_path / "g.R")], check=True, capture_output=True)
    coef = np.loadtxt(tmp_path / "coef.csv", delimiter=",")
    np.testing.assert_allclose(res.model.coef, coef[0], atol=1e-6)
    for k, i in enumerate(rows):
        np.testing.assert_allclose(res.theta_change.iloc[i] + res.model.coef, coef[k + 1],
                                   atol=1e-6)


def test_lasso_with_many_covariates_and_constant_columns():
    """scikit-survival's breast cancer data cut to 110 rows (33 events, 82 covariates,
    some one-hot columns constant), ``l1_ratio=1``: refits equal scikit-survival's, and
    every selection change is flagged."""
    from sksurv.datasets import load_breast_cancer
    X, y = load_breast_cancer()
    X = OneHotEncoder().fit_transform(X).astype(float).iloc[:110]
    y = y[:110]
    kw = dict(l1_ratio=1.0, alphas=[0.004], normalize=True)
    est = _quiet(_coxnet(**kw).fit, X, y)
    res = ci.influence(est, X, y=y, method="exact")
    model = res.model
    loo = res.theta_change.to_numpy() + model.coef
    changed = ((loo != 0) != model.active).any(axis=1)
    assert res.flags["selection_changes"].to_numpy()[changed].all()
    for i in (0, int(np.flatnonzero(changed)[0])):
        other = _quiet(_coxnet(**kw).fit, *_without(X, y, i))
        np.testing.assert_allclose(loo[i], other.coef_[:, 0], atol=1e-6)

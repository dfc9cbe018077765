"""The one influence engine (issue 34, items 1 and 3): its refit loop, its runaway
detection and its Halley start, for the Cox, AFT and decomposable families.

Oracles: the refits of a deleted problem are checked against the problem's own solution
(statsmodels' logistic regression fitted without the unit; ``fit_aft`` on the data without
it); the Halley start against its formula evaluated from the deleted problem's own
gradient and Hessian (the loss with the unit's presence 0: ``cox_gradient``/``cox_hessian``
on the deleted data, the AFT likelihood with a presence mask, the logistic loss below) and
a finite-difference third derivative; ``progress=`` and ``executor=`` against the serial
run, bit for bit. A ridge-penalised Cox fit (lifelines' ``penalizer``): its Halley start
against the formula from the deleted problem's own derivatives, its penalty recomputed
from the deleted data's standard deviations. ``n_rows``: the number of rows given.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import coxinfluence as ci
from coxinfluence.influence_functions.aft_audit import AFTAudit
from coxinfluence.influence_functions.cox_audit import CoxAudit
from coxinfluence.influence_functions.decomposable_audit import (
    DecomposableAudit,
    DecomposableFit,
    minimise,
)
from coxinfluence.influence_functions.engine import Engine
from coxinfluence.influence_functions.engine_refits import halley_start

# ---------------------------------------------------------------- a logistic loss

class LogisticLoss:
    """``L(theta, b) = sum_i b_i w_i [log(1 + exp(x_i' theta)) - y_i x_i' theta]`` and its
    derivatives (the :class:`DecomposableFit` protocol)."""

    def __init__(self, X, y, w=None):
        self.X, self.y = np.asarray(X, float), np.asarray(y, float)
        self.w = np.ones(len(y)) if w is None else np.asarray(w, float)

    def _p(self, theta):
        return 1 / (1 + np.exp(-(self.X @ theta)))

    def value(self, theta, b):
        eta = self.X @ theta
        return float(np.sum(b * self.w * (np.logaddexp(0, eta) - self.y * eta)))

    def gradient(self, theta, b):
        return self.X.T @ (b * self.w * (self._p(theta) - self.y))

    def hessian(self, theta, b):
        p = self._p(theta)
        return (self.X * (b * self.w * p * (1 - p))[:, None]).T @ self.X

    def row_gradients(self, theta):
        return self.X * (self.w * (self._p(theta) - self.y))[:, None]

    def row_hessians(self, theta):
        p = self._p(theta)
        return np.einsum("i,ij,ik->ijk", self.w * p * (1 - p), self.X, self.X)

    def third(self, theta):
        p = self._p(theta)
        c = self.w * p * (1 - p) * (1 - 2 * p)
        return np.einsum("i,ij,ik,il->jkl", c, self.X, self.X, self.X)


def logistic_fit(X, y, w=None):
    loss = LogisticLoss(X, y, w)
    theta, ok = minimise(loss, np.zeros(X.shape[1]), np.ones(len(y)), tol=1e-12)
    assert ok
    return DecomposableFit(loss, theta, [f"x{j}" for j in range(X.shape[1])],
                           np.arange(len(y)), tol=1e-10, model_name="logistic")


def _logistic_data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ [0.3, 1.0, -0.7]))).astype(float)
    return X, y


def _aft_fit(n=120, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    t = np.exp(0.5 + X @ [0.4, -0.3] + 0.7 * rng.gumbel(size=n))
    e = (rng.uniform(size=n) < 0.75).astype(float)
    return ci.fit_aft(X, t, e, dist="weibull"), (X, t, e)


def _statsmodels_refit(X, y, drop):
    sm = pytest.importorskip("statsmodels.api")
    keep = np.ones(len(y), dtype=bool)
    keep[drop] = False
    res = sm.Logit(y[keep], X[keep]).fit(method="newton", tol=1e-14, maxiter=100, disp=0)
    return np.asarray(res.params)


# ------------------------------------------------------- progress= and executor=

def _ridge_frame(n=50, seed=4):
    import pandas as pd
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * [1.0, 3.0]
    t = np.round(rng.exponential(np.exp(-X @ [0.5, -0.1])), 1) + 0.1
    e = (rng.uniform(size=n) < 0.8).astype(float)
    return pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "t": t, "e": e})


def _ridge_model(c=0.3):
    """A lifelines ``CoxPHFitter(penalizer=c)`` behind the seam (a ridge-penalised
    :class:`CoxAudit`), with its frame."""
    lifelines = pytest.importorskip("lifelines")
    from coxinfluence.influence_functions.registry import audit_model
    df = _ridge_frame()
    cph = lifelines.CoxPHFitter(penalizer=c, l1_ratio=0.0).fit(
        df, "t", "e", fit_options={"precision": 1e-13})
    model, _ = audit_model(cph, df)
    assert isinstance(model, CoxAudit) and model.fit.penalty is not None
    return model, df


def _models(name):
    if name == "cox ridge":
        return _ridge_model()[0]
    X, y = _logistic_data()
    aft, _ = _aft_fit()
    return {"decomposable": lambda: DecomposableAudit(logistic_fit(X, y)),
            "decomposable clusters": lambda: DecomposableAudit(
                logistic_fit(X, y), groups=np.arange(len(y)) // 4),
            "aft": lambda: AFTAudit(aft),
            "aft clusters": lambda: AFTAudit(aft, groups=np.arange(aft.n) // 3)}[name]()


@pytest.mark.parametrize("name", ["decomposable", "decomposable clusters", "aft",
                                  "aft clusters", "cox ridge"])
def test_executor_and_progress_give_the_serial_refits_bit_for_bit(name, capsys):
    model = _models(name)
    assert isinstance(model, Engine)
    serial = model.refit(progress=False, batch_size=7)
    assert (serial.status == "ok").all()
    with ThreadPoolExecutor(max_workers=2) as pool:
        spread = model.refit(executor=pool, n_chunks=3, batch_size=7, progress=True)
    err = capsys.readouterr().err
    assert "exact leave-one-out" in err and f"{model.n_units}/{model.n_units}" in err
    assert np.array_equal(spread.theta, serial.theta)
    assert np.array_equal(spread.status, serial.status)
    model.refit(progress=False, codes=[0, 1])
    assert capsys.readouterr().err == ""


def test_decomposable_refits_are_statsmodels_refits():
    X, y = _logistic_data()
    model = DecomposableAudit(logistic_fit(X, y))
    codes = np.array([0, 5, 17, 42])
    res = model.refit(codes)
    assert res.ok.all()
    for k, code in enumerate(codes):
        want = _statsmodels_refit(X, y, code)
        assert np.abs(res.theta[k] - want).max() < 1e-8


def test_aft_refits_are_fit_aft_on_the_deleted_data():
    fit, (X, t, e) = _aft_fit()
    res = AFTAudit(fit).refit([3, 50])
    for k, i in enumerate([3, 50]):
        keep = np.arange(fit.n) != i
        want = ci.fit_aft(X[keep], t[keep], e[keep], dist="weibull").coef
        assert np.abs(res.theta[k] - np.asarray(want)).max() < 1e-7


# ------------------------------------------------------------------- runaway

def _nearly_separated():
    """Logistic data separated by x except row 0 (x = 2.5, y = 0): without row 0 the
    likelihood has no maximum (complete separation); without any other row it has one."""
    x = np.array([2.5, -3.0, -2.2, -1.5, -1.0, -0.4, 0.3, 0.9, 1.4, 2.0, 2.8, 3.3])
    y = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1], dtype=float)
    return np.column_stack([np.ones_like(x), x]), y


def test_a_deletion_that_separates_the_data_runs_off_and_is_undefined():
    X, y = _nearly_separated()
    model = DecomposableAudit(logistic_fit(X, y))
    res = model.refit()
    assert res.status[0] == "undefined" and np.isnan(res.theta[0]).all()
    assert (res.status[1:] == "ok").all()
    for i in (1, 6, 11):                          # the others: statsmodels' refits
        assert np.abs(res.theta[i] - _statsmodels_refit(X, y, i)).max() < 1e-7


def test_aft_runaway_refit_is_undefined():
    """An exponential AFT whose only event at x = 1 is row 0: without it the coefficient of
    x runs off to +infinity (no maximum), which the engine stops as "undefined"."""
    rng = np.random.default_rng(3)
    n = 40
    x = np.r_[1.0, np.ones(9), np.zeros(n - 10)]
    X = np.column_stack([x, rng.normal(size=n)])
    t = rng.exponential(size=n) + 0.1
    e = np.r_[1.0, np.zeros(9), (rng.uniform(size=n - 10) < 0.8).astype(float)]
    fit = ci.fit_aft(X, t, e, dist="exponential")
    assert fit.converged
    model = AFTAudit(fit)
    assert not model.undefined()[0]               # not known without refitting
    res = model.refit([0, 1, 20])
    assert res.status[0] == "undefined" and np.isnan(res.theta[0]).all()
    assert (res.status[1:] == "ok").all()


# ---------------------------------------------------------------- Halley start

def _fd_third(hessian, theta, h=1e-5):
    d = theta.size
    out = np.empty((d, d, d))
    for c in range(d):
        step = np.zeros(d)
        step[c] = h
        out[:, :, c] = (hessian(theta + step) - hessian(theta - step)) / (2 * h)
    return out


def _halley(H_g, g, T):
    D0 = -np.linalg.solve(H_g, g)
    D = -np.linalg.solve(H_g + 0.5 * np.einsum("ijk,k->ij", T, D0), g)
    M = H_g + np.einsum("ijk,k->ij", T, D)
    return D, np.linalg.inv(M)


def _check_start(model, codes, deleted, full_hessian):
    """``deleted(code) -> (grad, hess)`` of the problem without ``code`` at theta_hat."""
    coef = np.asarray(model.coef, dtype=float)
    T = _fd_third(full_hessian, coef)
    theta, J = halley_start(model, np.asarray(codes))
    for k, code in enumerate(codes):
        g, H_g = deleted(code)
        D, Jk = _halley(H_g, g, T)
        scale = np.abs(D).max()
        assert np.abs(theta[k] - coef - D).max() < 1e-6 * scale + 1e-12
        assert np.abs(J[k] - Jk).max() < 1e-6 * np.abs(Jk).max()


def test_halley_start_of_the_decomposable_family():
    X, y = _logistic_data()
    fit = logistic_fit(X, y)
    loss = fit.loss

    def deleted(i):
        b = np.ones(len(y))
        b[i] = 0
        return loss.gradient(fit.coef, b), loss.hessian(fit.coef, b)
    _check_start(DecomposableAudit(fit), [0, 3, 9],
                 deleted, lambda th: loss.hessian(th, np.ones(len(y))))


def test_halley_start_of_the_aft_family():
    fit, _ = _aft_fit()
    lik = fit.likelihood

    def deleted(i):
        b = np.ones((1, fit.n))
        b[0, i] = 0
        _, g, H = lik.loss_grad_hess(fit.coef[None], b)
        return g[0], H[0]
    _check_start(AFTAudit(fit), [1, 7, 30], deleted,
                 lambda th: lik.loss_grad_hess(th[None])[2][0])


def test_halley_start_of_the_cox_family():
    rng = np.random.default_rng(5)
    n = 60
    X = rng.normal(size=(n, 2))
    t = np.round(rng.exponential(np.exp(-X @ [0.5, -0.4])), 1) + 0.1
    e = (rng.uniform(size=n) < 0.8).astype(float)
    fit = ci.fit_cox(X, t, e)

    def deleted(i):
        keep = np.arange(n) != i
        args = (X[keep], t[keep], e[keep])
        return ci.cox_gradient(fit.coef, *args), ci.cox_hessian(fit.coef, *args)
    model = CoxAudit(fit)
    _check_start(model, [2, 11, 40], deleted, lambda th: ci.cox_hessian(th, X, t, e))


def test_halley_start_of_the_ridge_cox_family():
    """lifelines' ridge ``J = L + (n/2) sum_j c (sigma_j theta_j)^2`` (``sigma`` the
    columns' sample SDs): the deleted problem's penalty recomputed from the data without
    the row, its loss's derivatives from ``cox_gradient``/``cox_hessian`` there."""
    c = 0.3
    model, df = _ridge_model(c)
    X, t, e = df[["x1", "x2"]].to_numpy(), df["t"].to_numpy(), df["e"].to_numpy()
    n = len(df)

    def strength(keep):
        m = keep.sum()
        return m * c * X[keep].var(axis=0, ddof=1)

    def deleted(i):
        keep = np.arange(n) != i
        s = strength(keep)
        args = (X[keep], t[keep], e[keep])
        return (ci.cox_gradient(model.coef, *args) + s * model.coef,
                ci.cox_hessian(model.coef, *args) + np.diag(s))
    everyone = np.ones(n, dtype=bool)
    # the model's information is the penalised Hessian (the oracle's, all rows)
    assert np.allclose(model.information, ci.cox_hessian(model.coef, X, t, e)
                       + np.diag(strength(everyone)), rtol=1e-10)
    _check_start(model, [0, 7, 31], deleted, lambda th: ci.cox_hessian(th, X, t, e))


def test_ridge_refits_solve_the_deleted_penalised_problems():
    """Each exact refit is where the deleted problem's penalised gradient (recomputed from
    the data without the row) vanishes."""
    c = 0.3
    model, df = _ridge_model(c)
    X, t, e = df[["x1", "x2"]].to_numpy(), df["t"].to_numpy(), df["e"].to_numpy()
    codes = np.array([0, 7, 31, 49])
    res = model.refit(codes)
    assert res.ok.all()
    for k, i in enumerate(codes):
        keep = np.arange(len(df)) != i
        s = keep.sum() * c * X[keep].var(axis=0, ddof=1)
        g = ci.cox_gradient(res.theta[k], X[keep], t[keep], e[keep]) + s * res.theta[k]
        H = ci.cox_hessian(res.theta[k], X[keep], t[keep], e[keep]) + np.diag(s)
        assert np.abs(np.linalg.solve(H, g)).max() < 1e-10


# ---------------------------------------------------------------------- n_rows

def test_n_rows_is_the_number_of_rows_given():
    """Every family's ``n_rows`` is the number of training rows, however many units; the
    result's ``units_text`` says both."""
    X, y = _logistic_data()
    aft, (Xa, ta, ea) = _aft_fit()
    rng = np.random.default_rng(2)
    n = 90                                   # 45 subjects, two intervals (0, u], (u, u + v]
    Xc = rng.normal(size=(n, 2))
    u, v = rng.exponential(size=45) + 0.1, rng.exponential(size=45) + 0.1
    start, stop = np.r_[np.zeros(45), u], np.r_[u, u + v]
    ec = np.r_[np.zeros(45), (rng.uniform(size=45) < 0.8).astype(float)]
    ids = np.r_[np.arange(45), np.arange(45)]
    cox = ci.fit_cox(Xc, stop, ec, start=start, id=ids)
    cases = {
        "decomposable rows": (DecomposableAudit(logistic_fit(X, y)), len(y), len(y)),
        "decomposable clusters": (DecomposableAudit(logistic_fit(X, y),
                                                    groups=np.arange(len(y)) // 4),
                                  len(y), 20),
        "aft clusters": (AFTAudit(aft, groups=np.arange(len(ta)) // 3), len(ta), 40),
        "cox subjects": (CoxAudit(cox), n, 45),
        "cox clusters": (CoxAudit(cox, groups=np.arange(n) // 5), n, 18),
    }
    for name, (model, rows, units) in cases.items():
        assert (model.n_rows, len(model.unit_labels)) == (rows, units), name
    res = ci.influence(cox, method="vif")
    assert res.units_text == f"45 patients ({n} rows)"

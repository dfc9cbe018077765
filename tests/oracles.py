"""Oracles for the tests, independent of the quantity they check: deletion written out
literally (rows removed from the arrays, then the public ``ci.cox_gradient`` /
``ci.cox_hessian`` / ``ci.fit_cox`` on what is left), the case-weight derivative by
central differences, and R's ``coxph`` run live through Rscript (``r_coxph``).

Conventions (README): VIF and Reid's IF on the paper's scale ~ n (theta_hat - theta_hat_{-i});
R's ``resid(fit, "dfbeta")`` = IF / n.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

import coxinfluence as ci
from coxinfluence.influence_functions.vif import _group_sums


def _drop(a, i):
    return None if a is None else np.delete(np.asarray(a), i, axis=0)


def deleted(X, t, e, w, s, i):
    """The data with row ``i`` literally removed."""
    return _drop(X, i), _drop(t, i), _drop(e, i), _drop(w, i), _drop(s, i)


def vif_rows(theta, X, t, e, rows, *, w=None, s=None, ties="efron"):
    """VIF_n(i) = -(H/n)^{-1} (grad L(all) - grad L(row i deleted)) at ``theta``, for
    ``rows``; H = Hessian of the full-data loss (ci.cox_hessian)."""
    n = len(t)
    H = ci.cox_hessian(theta, X, t, e, weights=w, strata=s, ties=ties)
    g_all = ci.cox_gradient(theta, X, t, e, weights=w, strata=s, ties=ties)
    diffs = []
    for i in rows:
        Xk, tk, ek, wk, sk = deleted(X, t, e, w, s, i)
        diffs.append(g_all - ci.cox_gradient(theta, Xk, tk, ek, weights=wk, strata=sk,
                                             ties=ties))
    return -n * np.linalg.solve(H, np.array(diffs).T).T


def newton_rows(theta, X, t, e, rows, *, w=None, s=None, ties="efron"):
    """One Newton step of the refit without row i, from ``theta``:
    theta - H_{-i}(theta)^{-1} grad L_{-i}(theta), with the gradient and Hessian of the
    data with row i deleted."""
    out = []
    for i in rows:
        Xk, tk, ek, wk, sk = deleted(X, t, e, w, s, i)
        g = ci.cox_gradient(theta, Xk, tk, ek, weights=wk, strata=sk, ties=ties)
        H = ci.cox_hessian(theta, Xk, tk, ek, weights=wk, strata=sk, ties=ties)
        out.append(theta - np.linalg.solve(H, g))
    return np.array(out)


def refit_rows(X, t, e, rows, *, w=None, s=None, ties="efron"):
    """theta_hat_{-i}: ``ci.fit_cox`` on the data with row i deleted (tol 1e-12)."""
    out = []
    for i in rows:
        Xk, tk, ek, wk, sk = deleted(X, t, e, w, s, i)
        out.append(ci.fit_cox(Xk, tk, ek, weights=wk, strata=sk, ties=ties, tol=1e-12).coef)
    return np.array(out)


def reid_rows(theta, X, t, e, rows, *, w=None, s=None, ties="efron", h=1e-6):
    """Reid's IF_n(i) = -(H/n)^{-1} w_i d/dw_i grad L, the weight derivative by central
    differences (error ~ h^2)."""
    n = len(t)
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    H = ci.cox_hessian(theta, X, t, e, weights=w, strata=s, ties=ties)
    deriv = []
    for i in rows:
        wp, wm = w.copy(), w.copy()
        wp[i] += h
        wm[i] -= h
        gp = ci.cox_gradient(theta, X, t, e, weights=wp, strata=s, ties=ties)
        gm = ci.cox_gradient(theta, X, t, e, weights=wm, strata=s, ties=ties)
        deriv.append(w[i] * (gp - gm) / (2 * h))
    return -n * np.linalg.solve(H, np.array(deriv).T).T


# ------------------------------------------------------------------------ live R
R_SKIP_REASON = ("Rscript with R's survival package not available: live comparison skipped "
                 "(apt-get install -y r-base-core r-cran-survival)")


def r_available():
    if shutil.which("Rscript") is None:
        return False
    proc = subprocess.run(["Rscript", "-e", "library(survival)"], capture_output=True)
    return proc.returncode == 0


_R_SCRIPT = r"""
suppressPackageStartupMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
covs <- setdiff(names(d), c("time", "event", "w", "s"))
rhs <- paste(covs, collapse = " + ")
if ("s" %in% names(d)) rhs <- paste(rhs, "+ strata(s)")
f <- as.formula(paste("Surv(time, event) ~", rhs))
ctl <- coxph.control(eps = 1e-14, toler.chol = 1e-15, iter.max = 200)
if ("w" %in% names(d)) {
  fit <- coxph(f, data = d, weights = w, ties = args[2], control = ctl)
} else {
  fit <- coxph(f, data = d, ties = args[2], control = ctl)
}
write.csv(data.frame(coef = coef(fit), se = sqrt(diag(vcov(fit)))), args[3], row.names = FALSE)
write.csv(resid(fit, "dfbeta"), args[4], row.names = FALSE)
"""


def r_coxph(tmp_path, X, t, e, *, w=None, s=None, ties="efron"):
    """R's coxph on (X, t, e[, w, s]): returns (coef, se, dfbeta (n, d)) as numpy arrays."""
    tmp_path = Path(tmp_path)
    X = np.asarray(X, dtype=float)
    d = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    d["time"], d["event"] = np.asarray(t, float), np.asarray(e, float)
    if w is not None:
        d["w"] = np.asarray(w, float)
    if s is not None:
        d["s"] = np.asarray(s)
    d.to_csv(tmp_path / "r_data.csv", index=False, float_format="%.17g")
    (tmp_path / "r_fit.R").write_text(_R_SCRIPT)
    subprocess.run(["Rscript", str(tmp_path / "r_fit.R"), str(tmp_path / "r_data.csv"), ties,
                    str(tmp_path / "r_coef.csv"), str(tmp_path / "r_dfbeta.csv")],
                   check=True, capture_output=True, text=True, timeout=300)
    cs = pd.read_csv(tmp_path / "r_coef.csv")
    dfb = pd.read_csv(tmp_path / "r_dfbeta.csv").to_numpy()
    return cs["coef"].to_numpy(), cs["se"].to_numpy(), dfb


def own_group_change(data, state):
    """The VIF's part 2 for every event row (sorted order), (n, d) with zeros for censored
    rows, by expanding every (event, remaining rank) pair: the reference of the package's
    O(K d) ``_own_group_change_fast`` (O(sum_g d_g^2 d) time and memory)."""
    X, w = data.X, data.weights
    out = np.zeros_like(X)
    ev = data.event_rows
    if ev.size == 0:
        return out
    u = state.risk
    n_ev = data.group_n_events
    S0, S1, S0D, S1D, full = _group_sums(data, state)

    g = data.term_group                       # group of each event row (event_rows order)
    d_i = n_ev[g]
    ui, xi = u[ev], X[ev]
    # expanded pairs (event i, remaining rank r' = 0..d_g-2)
    reps = d_i - 1
    pair_event = np.repeat(np.arange(ev.size), reps)
    start = np.cumsum(reps) - reps
    r_prime = np.arange(pair_event.size) - np.repeat(start, reps)
    gp = g[pair_event]
    if data.ties == "efron":
        c = r_prime / np.maximum(d_i[pair_event] - 1, 1)
    else:
        c = np.zeros(pair_event.size)
    up, xp = ui[pair_event], xi[pair_event]
    num = S1[gp] - up[:, None] * xp - c[:, None] * (S1D[gp] - up[:, None] * xp)
    den = S0[gp] - up - c * (S0D[gp] - up)
    a_new = num / den[:, None]
    m_new = (data.group_event_weight[g] - w[ev]) / np.maximum(d_i - 1, 1)
    remaining = np.zeros((ev.size, data.d))
    np.add.at(remaining, pair_event, a_new)
    out[ev] = -w[ev, None] * xi + full[g] - m_new[:, None] * remaining
    return out


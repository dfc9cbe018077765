"""Paper Table 1 (Pearson correlation of estimated and brute-force leave-one-out effects),
Cox rows, on METABRIC and SUPPORT (paper split), in three protocols.

    python paper_appendix/table1_correlation.py [--quick] [--adam-rows N] [--tie-rows N]

Metric: for every test patient x, the Pearson correlation over training patients i of the
estimated and the brute-force change of the relative risk ``exp(theta' x)``, averaged over
the test patients. The brute-force change is ``exp(theta_{-i}' x) - exp(theta_hat' x)``
with theta_{-i} refitted. The estimated change, in the headline column, is the paper's
chain rule through the target (its VIF for a target, Eq. VIF-target: gradient of the
target times the coefficient change), ``exp(theta_hat' x) x' (theta_est,-i - theta_hat)``;
beside it, labelled, the plug-in ``exp(theta_est,-i' x) - exp(theta_hat' x)``
(``coxinfluence.metrics.relative_risk_correlation``). Rows comparing two refits (brute
force vs brute force, Adam vs exact) linearise nothing: both columns use the refits'
exact changes and agree.

A. Deterministic, converged fits (our protocol). ``ci.fit_cox`` (Efron ties, Newton to
   max |grad| <= 1e-10); brute force = ``ci.exact_loo`` (every row deleted and refitted to
   the same tolerance). Rows: VIF, Reid's IF, one-step Newton against the exact refits.
   "Brute force vs brute force" is 1.0 by construction: we run ``exact_loo`` twice and
   report the largest difference between the two runs (a determinism check, not a result).

B. The paper's protocol. A linear Cox model trained by full-batch Adam (lr 0.01, betas
   (0.9, 0.999), eps 1e-8, as torch) for 200 (METABRIC) / 100 (SUPPORT) epochs from a
   seeded torch-style initialisation U(-1/sqrt(d), 1/sqrt(d)); loss: the mean over events
   of -(eta_i - log sum_{j: t_j >= t_i} exp(eta_j)), i.e. ties ignored (the Breslow form).
   Brute force = retraining with the same protocol and the same initialisation, one
   training patient deleted at a time (numpy, vectorised over the deleted rows). VIF is
   evaluated at the Adam parameters (closed form, Breslow loss, Hessian there), as the
   paper's autodiff VIF was. The paper's "Brute-Force" row is two brute-force runs from
   two initialisation seeds. With ``--adam-rows N`` (``--quick``: 50) only N seeded random
   training rows are retrained and all correlations of part B are over those rows.

C. As B, but tied times are broken the way a cumulative sum over a sorted batch breaks
   them (risk set = sorted positions >= p), with the order among tied rows drawn afresh for
   every training run (``--tie-rows N`` seeded random rows, default 1000, --quick 50).
   SUPPORT has 1502 distinct times among 5678 rows, METABRIC 1124 among 1218.

D. As C, with a fresh tie order every epoch; E. as D in float32 arithmetic (data,
   parameters, Adam's moments). D and E are the training of the authors' released code
   (github.com/TRAIS-Lab/Versatile-Influence-Function, cox/train_cox.py, score_cox.py,
   gt_cox.py, commit 519e0cd; read, not run): pycox's ``CoxPH`` with a bias-free
   ``nn.Linear`` on float32 data, ``tt.optim.Adam`` lr 0.01, one batch holding every
   training row (batch size 2000 / 6000), 200 / 100 epochs; torchtuples' ``fit`` reshuffles
   the batch every epoch (``shuffle=True``) and pycox's ``cox_ph_loss`` sorts it by time,
   so tied rows meet in a new order every epoch. Its VIF differentiates the loss of the
   unshuffled batch, ties in one fixed order: part D also reports the VIF with one seeded
   fixed tie order (``fixed_tie_order_offsets``) beside the Breslow VIF.

   C, D and E are candidate causes of the paper's SUPPORT numbers (0.943 VIF below 0.955
   brute force against brute force, while METABRIC stays near 1), measured, not
   established: the script prints, for each, whether our VIF is above or below our brute
   force against brute force. In the full run of 2026-11-24 none reproduces the paper's
   ordering on SUPPORT (VIF above brute force in C, D and E), and float32 changes neither
   correlation in the fourth decimal.

Writes paper_appendix/out/table1_correlation.md.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
from _common import data_path, markdown_table, write_result

import coxinfluence as ci
from coxinfluence.datasets import paper_split
from coxinfluence.metrics import mean_column_correlation, relative_risk_correlation
from coxinfluence.models.cox import cox_gradient, cox_hessian

EPOCHS = {"metabric": 200, "support": 100}
PAPER = {"metabric": {"VIF": 0.997, "Brute-Force": 0.997},
         "support": {"VIF": 0.943, "Brute-Force": 0.955}}


# ---------------------------------------------------------------- the paper's protocol

class BreslowLoss:
    """Gradient of the mean over events of the negative log partial likelihood with risk
    sets {j: t_j >= t_i} (ties ignored = Breslow), for a batch of B coefficient vectors,
    each with its own deleted row. Rows are kept sorted by time; risk-set sums are reverse
    cumulative sums read at the first row of each tie group."""

    def __init__(self, X, time_, event):
        order = np.argsort(time_, kind="stable")
        self.order = order
        self.X = np.ascontiguousarray(np.asarray(X, dtype=np.float64)[order])
        self.t = np.asarray(time_, dtype=np.float64)[order]
        self.e = np.asarray(event, dtype=np.float64)[order]
        n = self.t.size
        self.starts = np.r_[0, np.flatnonzero(np.diff(self.t)) + 1]
        self.group = np.repeat(np.arange(self.starts.size), np.diff(np.r_[self.starts, n]))

    def weights(self, drop):
        """0/1 row weights (B, n) for deleted sorted positions ``drop`` (None: no row)."""
        n = self.t.size
        if drop is None:
            return np.ones((1, n))
        w = np.ones((len(drop), n))
        w[np.arange(len(drop)), drop] = 0.0
        return w

    def grad(self, theta, w, we=None, weg=None, nev=None):
        """theta (B, d), w (B, n) -> gradient (B, d) of the mean-over-events loss."""
        if we is None:
            we = w * self.e
            weg = np.add.reduceat(we, self.starts, axis=1)
            nev = we.sum(axis=1)
        r = theta @ self.X.T
        np.exp(r, out=r)
        r *= w
        s0 = np.cumsum(r[:, ::-1], axis=1)[:, ::-1][:, self.starts]   # sum over t_j >= t_g
        s0[s0 <= 0] = 1.0            # only where the deleted row was alone in its risk set
        c = np.cumsum(weg / s0, axis=1)                             # sum over events t_g <= t
        ce = np.take(c, self.group, axis=1)
        ce *= r
        ce -= we                                                    # = nev * d loss / d eta
        g = ce @ self.X
        g /= nev[:, None]
        return g


def adam_train(loss, theta0, drop, epochs, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    """Full-batch Adam (torch's bias-corrected update) for a batch of problems, one per
    deleted sorted position in ``drop`` (None: the full data)."""
    w = loss.weights(drop)
    we = w * loss.e
    weg = np.add.reduceat(we, loss.starts, axis=1)
    nev = we.sum(axis=1)
    theta = np.array(theta0, dtype=np.float64)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    for k in range(1, epochs + 1):
        g = loss.grad(theta, w, we, weg, nev)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        theta = theta - lr * (m / (1 - b1 ** k)) / (np.sqrt(v / (1 - b2 ** k)) + eps)
    return theta


def tie_order(t, rng):
    """Row order by time ``t``, tied rows in a random order drawn from ``rng``."""
    return np.lexsort((rng.random(t.size), t))


def tie_orders(loss, gens):
    """One order of the sorted rows per training run (:func:`tie_order`), from each run's
    generator."""
    return np.stack([tie_order(loss.t, g) for g in gens])


def adam_train_random_ties(loss, theta0, drop, epochs, tie_seeds, per_epoch=False,
                           dtype=np.float64, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    """As ``adam_train``, but ties are broken the way a cumulative sum over a sorted batch
    breaks them: rows sorted by time, tied rows in a random order (seeded per training
    run, ``tie_seeds[b]``), and the risk set of the row at sorted position p is positions
    >= p. Every retraining draws its own order, as a run that reshuffles its data would.
    ``per_epoch``: a fresh order every epoch (a data loader that reshuffles the batch each
    epoch before the loss sorts it), else one order per run. ``dtype``: the arithmetic of
    the data, the parameters and Adam's moments (np.float32: torch's default)."""
    w = loss.weights(drop)
    X = loss.X.astype(dtype)
    gens = [np.random.default_rng(s) for s in tie_seeds]
    theta = np.array(theta0, dtype=dtype)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    g_eta = np.empty(w.shape, dtype=dtype)
    for k in range(1, epochs + 1):
        if k == 1 or per_epoch:
            perm = tie_orders(loss, gens)
            wp = np.take_along_axis(w, perm, axis=1).astype(dtype)
            wep = wp * loss.e[perm].astype(dtype)
            nev = wep.sum(axis=1)
        r = np.take_along_axis(np.exp(theta @ X.T), perm, axis=1) * wp
        s0 = np.cumsum(r[:, ::-1], axis=1)[:, ::-1]
        s0[s0 <= 0] = 1.0
        gp = (r * np.cumsum(wep / s0, axis=1) - wep) / nev[:, None]
        np.put_along_axis(g_eta, perm, gp, axis=1)
        g = g_eta @ X
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        theta = theta - lr * (m / (1 - b1 ** k)) / (np.sqrt(v / (1 - b2 ** k)) + eps)
    assert theta.dtype == dtype
    return theta.astype(np.float64)


def torch_init(d, seed):
    """nn.Linear(d, 1).weight's default initialisation U(-1/sqrt(d), 1/sqrt(d))."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1 / np.sqrt(d), 1 / np.sqrt(d), size=d)


def adam_protocol(loss, init, epochs, rows, block=256, tie_seed=None, **ties):
    """Full model and leave-one-out retrainings (``rows`` in caller order) from ``init``.
    ``tie_seed``: break ties in a random order drawn per training run (seeds tie_seed,
    tie_seed + 1 + k for the k-th retraining; ``ties``: ``per_epoch``, ``dtype`` of
    ``adam_train_random_ties``); None: Breslow risk sets."""
    d = loss.X.shape[1]
    pos = np.argsort(loss.order)[rows]            # sorted positions of the deleted rows
    out = np.empty((len(rows), d))
    if tie_seed is None:
        full = adam_train(loss, init[None, :], None, epochs)[0]
    else:
        full = adam_train_random_ties(loss, init[None, :], None, epochs, [tie_seed],
                                      **ties)[0]
    for s in range(0, len(rows), block):
        p = pos[s:s + block]
        th0 = np.tile(init, (p.size, 1))
        if tie_seed is None:
            out[s:s + block] = adam_train(loss, th0, p, epochs)
        else:
            seeds = [tie_seed + 1 + k for k in range(s, s + p.size)]
            out[s:s + block] = adam_train_random_ties(loss, th0, p, epochs, seeds, **ties)
    return full, out


def fixed_tie_order_offsets(t, seed):
    """Offsets that put tied times in one seeded random order (:func:`tie_order`), each
    below half the smallest gap between distinct times: a loss over the shifted times
    ranks tied rows as one sorted batch does (the earlier in the order, the larger its risk
    set). The offset is the row's rank over all rows times gap / (2n); the Cox loss depends
    only on that order."""
    t = np.asarray(t, dtype=np.float64)
    u = np.unique(t)
    gap = np.diff(u).min() if u.size > 1 else 1.0
    rank = np.empty(t.size)
    rank[tie_order(t, np.random.default_rng(seed))] = np.arange(t.size)
    return rank * (gap / (2.0 * t.size))


def vif_at(theta, X, t, e):
    """Closed-form VIF (Breslow loss) evaluated at arbitrary parameters ``theta`` (the
    paper evaluated its VIF at the Adam parameters, not at the optimum)."""
    fit = ci.fit_cox(X, t, e, ties="breslow")
    fit_at = dataclasses.replace(fit, coef=np.asarray(theta, dtype=np.float64),
                                 information=cox_hessian(theta, X, t, e, ties="breslow"),
                                 gradient=cox_gradient(theta, X, t, e, ties="breslow"))
    return fit, fit_at, np.asarray(ci.vif(fit_at))


def check_vif_definition(fit_at, X, t, e, v, rows):
    """Max relative difference of the closed form from its definition
    -(H/n)^{-1}(grad L(all) - grad L(row i deleted)) at the Adam parameters."""
    th, n = fit_at.coef, fit_at.n
    g = cox_gradient(th, X, t, e, ties="breslow")
    err = 0.0
    for i in rows:
        keep = np.arange(n) != i
        gi = cox_gradient(th, X[keep], t[keep], e[keep], ties="breslow")
        ref = -n * np.linalg.solve(fit_at.information, g - gi)
        err = max(err, np.abs(v[i] - ref).max() / np.abs(ref).max())
    return err


# ---------------------------------------------------------------- the table

def fmt(x, k=4):
    return f"{x:.{k}f}"


def chain_rule_correlation(coef, loo_estimate, loo_exact, X_test):
    """The paper's metric (Eq. VIF-target): the estimated relative-risk change by the
    chain rule, ``exp(coef' x) x' (theta_est,-i - coef)``, against the refitted change
    ``exp(theta_-i' x) - exp(coef' x)``; Pearson over rows, mean over test patients."""
    X_test = np.atleast_2d(np.asarray(X_test, dtype=np.float64))
    base = np.exp(X_test @ coef)
    est = base[None, :] * ((np.asarray(loo_estimate) - coef) @ X_test.T)
    exact = np.exp(np.asarray(loo_exact) @ X_test.T) - base
    return mean_column_correlation(est, exact)


def both(coef, est, exact, X_test, k=4, refits=False):
    """[chain rule, plug-in] cells; two refits: the exact changes, in both cells."""
    plug = fmt(relative_risk_correlation(coef, est, exact, X_test), k)
    return [plug if refits else fmt(chain_rule_correlation(coef, est, exact, X_test), k), plug]


def run_dataset(name, adam_rows, tie_rows, seed, newton):
    split = paper_split(name, path=data_path())
    X, t, e = split.arrays("train")
    Xt = split.test[split.covariates].to_numpy()
    n, d = X.shape
    rows, notes, timing = [], [], {}

    # ---- A. deterministic converged refits
    fit = ci.fit_cox(X, t, e)
    t0 = time.perf_counter()
    exact = np.asarray(ci.exact_loo(fit, progress=False))
    timing["exact_loo"] = time.perf_counter() - t0
    exact2 = np.asarray(ci.exact_loo(fit, progress=False))
    det = float(np.abs(exact - exact2).max())
    est = {"VIF": fit.coef - np.asarray(ci.vif(fit)) / n,
           "Reid's IF": fit.coef - np.asarray(ci.reid_influence(fit)) / n}
    if newton:
        t0 = time.perf_counter()
        est["one-step Newton"] = np.asarray(ci.newton_loo(fit))
        timing["newton_loo"] = time.perf_counter() - t0
    for k, v in est.items():
        rows.append([name, "A: converged (Efron), exact refits", k, n,
                     *both(fit.coef, v, exact, Xt, 6), PAPER[name].get(k, "")])
    bb = fmt(relative_risk_correlation(fit.coef, exact2, exact, Xt), 6)
    rows.append([name, "A: converged (Efron), exact refits",
                 f"Brute-Force vs Brute-Force (two exact_loo runs; max abs difference of the "
                 f"runs: {det:.1e})", n, bb, bb, PAPER[name]["Brute-Force"]])
    if not newton:
        notes.append(f"{name}: one-step Newton row skipped (--no-newton-support in quick "
                     "mode: newton_loo on SUPPORT takes about a minute).")

    # ---- B. the paper's protocol
    epochs = EPOCHS[name]
    loss = BreslowLoss(X, t, e)
    rng = np.random.default_rng(seed)
    sub = np.arange(n) if adam_rows is None or adam_rows >= n else \
        np.sort(rng.choice(n, size=adam_rows, replace=False))
    t0 = time.perf_counter()
    full_a, loo_a = adam_protocol(loss, torch_init(d, seed), epochs, sub)
    timing["adam_loo_seed_a"] = time.perf_counter() - t0
    full_b, loo_b = adam_protocol(loss, torch_init(d, seed + 1), epochs, sub)
    fit_br, fit_at, v_adam = vif_at(full_a, X, t, e)
    vif_def_err = check_vif_definition(fit_at, X, t, e, v_adam, sub[:3])
    vif_adam = full_a - v_adam[sub] / n
    exact_br = np.asarray(ci.exact_loo(fit_br, progress=False))[sub]
    vif_br = fit_br.coef - np.asarray(ci.vif(fit_br))[sub] / n
    gnorm = float(np.abs(cox_gradient(full_a, X, t, e, ties="breslow")).max())
    scope = f"{len(sub)} of {n}" if len(sub) < n else f"{n}"
    lbl = f"B: Adam {epochs} epochs, lr 0.01, ties ignored"
    rows += [
        [name, lbl, "VIF at Adam parameters vs Adam retraining", scope,
         *both(full_a, vif_adam, loo_a, Xt), PAPER[name]["VIF"]],
        [name, lbl, "Brute-Force vs Brute-Force (Adam, init seeds "
         f"{seed}, {seed + 1})", scope, *both(full_a, loo_b, loo_a, Xt, refits=True),
         PAPER[name]["Brute-Force"]],
        [name, lbl, "Adam retraining vs exact Breslow refits", scope,
         *both(fit_br.coef, loo_a, exact_br, Xt, refits=True), ""],
        [name, "B': converged Breslow (the paper's loss), exact refits", "VIF", scope,
         *both(fit_br.coef, vif_br, exact_br, Xt), ""],
    ]
    notes.append(
        f"{name}: after {epochs} Adam epochs max |grad of the summed loss| = {gnorm:.3g} "
        f"(converged fit: 1e-10); ||theta_Adam - theta_Breslow||_inf = "
        f"{np.abs(full_a - fit_br.coef).max():.3g} (||theta_Breslow||_inf = "
        f"{np.abs(fit_br.coef).max():.3g}); ||theta_Adam(seed {seed}) - theta_Adam(seed "
        f"{seed + 1})||_inf = {np.abs(full_a - full_b).max():.3g}; median |theta_Adam,-i - "
        f"theta_Adam| = {np.median(np.abs(loo_a - full_a)):.2e} vs exact median "
        f"|theta_-i - theta_hat| = {np.median(np.abs(exact_br - fit_br.coef)):.2e}; "
        "closed-form VIF at "
        f"the Adam parameters vs its definition (3 rows): max rel. difference "
        f"{vif_def_err:.1e}. Timing: exact_loo {timing['exact_loo']:.2f} s, Adam "
        f"retraining of {len(sub)} rows {timing['adam_loo_seed_a']:.1f} s"
        + (f", newton_loo {timing['newton_loo']:.1f} s" if "newton_loo" in timing else "")
        + ".")
    # ---- C. the paper's protocol with ties broken by a random order per training run
    sub_c = sub if tie_rows is None or tie_rows >= n else \
        np.sort(np.random.default_rng(seed + 7).choice(n, size=tie_rows, replace=False))
    t0 = time.perf_counter()
    full_c, loo_c = adam_protocol(loss, torch_init(d, seed), epochs, sub_c, tie_seed=10_000)
    timing["adam_ties"] = time.perf_counter() - t0
    full_c2, loo_c2 = adam_protocol(loss, torch_init(d, seed + 1), epochs, sub_c,
                                    tie_seed=20_000_000)
    _, _, v_c = vif_at(full_c, X, t, e)
    exact_c = np.asarray(ci.exact_loo(fit_br, progress=False))[sub_c]
    scope_c = f"{len(sub_c)} of {n}" if len(sub_c) < n else f"{n}"
    lbl_c = "C: as B, tied times in a random order per training run"
    c_vif = both(full_c, full_c - v_c[sub_c] / n, loo_c, Xt)
    c_bb = both(full_c, loo_c2, loo_c, Xt, refits=True)
    rows += [
        [name, lbl_c, "VIF (Breslow) at Adam parameters vs Adam retraining", scope_c,
         *c_vif, PAPER[name]["VIF"]],
        [name, lbl_c, f"Brute-Force vs Brute-Force (init seeds {seed}, {seed + 1}, "
         "fresh tie orders)", scope_c, *c_bb, PAPER[name]["Brute-Force"]],
        [name, lbl_c, "Adam retraining vs exact Breslow refits", scope_c,
         *both(fit_br.coef, loo_c, exact_c, Xt, refits=True), ""],
    ]
    measured = {"C": (c_vif[0], c_bb[0])}
    # ---- D, E. the released code's training: a fresh tie order every epoch; in float32
    t0 = time.perf_counter()
    for key, lbl_x, ties in (
            ("D", "D: as C, tied rows in a fresh random order every epoch (the released "
             "code)", dict(per_epoch=True)),
            ("E", "E: as D in float32 (the released code's dtype)",
             dict(per_epoch=True, dtype=np.float32))):
        full_x, loo_x = adam_protocol(loss, torch_init(d, seed), epochs, sub_c,
                                      tie_seed=10_000, **ties)
        _, loo_x2 = adam_protocol(loss, torch_init(d, seed + 1), epochs, sub_c,
                                  tie_seed=20_000_000, **ties)
        _, _, v_x = vif_at(full_x, X, t, e)
        x_vif = both(full_x, full_x - v_x[sub_c] / n, loo_x, Xt)
        x_bb = both(full_x, loo_x2, loo_x, Xt, refits=True)
        measured[key] = (x_vif[0], x_bb[0])
        rows += [[name, lbl_x, "VIF (Breslow) at Adam parameters vs Adam retraining",
                  scope_c, *x_vif, PAPER[name]["VIF"]],
                 [name, lbl_x, f"Brute-Force vs Brute-Force (init seeds {seed}, {seed + 1}, "
                  "fresh tie orders)", scope_c, *x_bb, PAPER[name]["Brute-Force"]]]
        if key == "D":
            # the released code's VIF differentiates the loss of one sorted batch: ties in
            # one fixed order (here a seeded one), not Breslow's tie groups
            _, _, v_f = vif_at(full_x, X, t + fixed_tie_order_offsets(t, seed), e)
            rows.append([name, lbl_x, "VIF (one fixed tie order, as the released code's) at "
                         "Adam parameters vs Adam retraining", scope_c,
                         *both(full_x, full_x - v_f[sub_c] / n, loo_x, Xt),
                         PAPER[name]["VIF"]])
    timing["adam_epoch_ties"] = time.perf_counter() - t0
    paper_order = "below" if PAPER[name]["VIF"] < PAPER[name]["Brute-Force"] else "not below"
    order = {k: "above" if float(a) > float(b) else "not above"
             for k, (a, b) in measured.items()}
    notes.append(f"{name}, protocols C, D, E (candidate causes of the paper's numbers, "
                 "measured): " + "; ".join(
                     f"{k}: VIF {a} (chain rule) is {order[k]} brute force vs brute force {b}"
                     for k, (a, b) in measured.items())
                 + f". The paper's VIF {PAPER[name]['VIF']} is {paper_order} its "
                 f"{PAPER[name]['Brute-Force']}. "
                 + ("None of them reproduces the paper's ordering: tie order per run, per "
                    "epoch and float32 are measured here, not established as the cause."
                    if paper_order == "below" and "not above" not in order.values() else
                    "A random tie order is a hypothesis for the paper's numbers, not an "
                    "established cause."))
    n_tied = int(n - np.unique(t).size)
    notes.append(f"{name}: {np.unique(t).size} distinct times among {n} training rows "
                 f"({n_tied} rows share a time with an earlier row). Part C retraining of "
                 f"{len(sub_c)} rows: {timing['adam_ties']:.1f} s; parts D and E: "
                 f"{timing['adam_epoch_ties']:.1f} s.")
    return rows, notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="Adam retraining of 50 training rows only; no one-step Newton on "
                         "SUPPORT")
    ap.add_argument("--adam-rows", type=int, default=None,
                    help="retrain this many seeded random training rows in part B "
                         "(default: all; --quick: 50)")
    ap.add_argument("--tie-rows", type=int, default=None,
                    help="parts C, D and E retrain this many seeded random rows (default 1000; "
                         "--quick: 50)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    adam_rows = args.adam_rows if args.adam_rows is not None else (50 if args.quick else None)
    tie_rows = args.tie_rows if args.tie_rows is not None else (50 if args.quick else 1000)
    t_start = time.perf_counter()
    rows, notes = [], []
    for name in ("metabric", "support"):
        r, nts = run_dataset(name, adam_rows, tie_rows, args.seed,
                             newton=not (args.quick and name == "support"))
        rows += r
        notes += nts
    text = ["# Table 1, Cox rows: Pearson correlation with brute-force leave-one-out\n",
            "Metric: mean over test patients of the Pearson correlation, over training "
            "patients, of the estimated and the brute-force change of the relative risk "
            "exp(theta' x). Headline column: the paper's metric, the estimated change by the "
            "chain rule through the target (Eq. VIF-target), exp(theta_hat' x) x' (theta_-i "
            "- theta_hat); beside it the plug-in exp(theta_-i' x) - exp(theta_hat' x). Rows "
            "comparing two refits linearise nothing: both columns are the same. Column n: "
            "the training rows the correlation is over.\n"]
    if adam_rows is not None:
        text.append(f"**Part B retrains only {adam_rows} seeded random training rows "
                    f"(--adam-rows {adam_rows}); its correlations are over those rows.**\n")
    text.append(f"Parts C, D and E retrain {tie_rows} seeded random training rows "
                "(--tie-rows; fewer when n is smaller); their correlations are over those "
                "rows.\n")
    text.append(markdown_table(["dataset", "protocol", "method", "n",
                                "Pearson, chain rule (paper's metric)", "Pearson, plug-in",
                                "paper"], rows))
    text.append("\n" + "\n".join(f"- {s}" for s in notes))
    text.append(f"\nWall time {time.perf_counter() - t_start:.1f} s.\n")
    write_result("table1_correlation.md", "\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

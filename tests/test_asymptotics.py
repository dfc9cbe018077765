"""Tests for coxinfluence.asymptotics: the simulation check of VIF_n - IF_n = O_p(1/n).

Oracles: closed forms of the population quantities (theta = 0), an independent Monte
Carlo computation of them, the exact finite-n identity for n * Diff_n(i) from the
proof of the paper's theorem (computed naively, O(n^2)), brute-force refits, and
synthetic power laws for the slope estimator.
"""
from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad

import coxinfluence as ci
from coxinfluence.asymptotics import (
    CoxDesign,
    GeneratorDesign,
    MonteCarloPopulation,
    QuadraturePopulation,
    loglog_slope,
    monte_carlo_population,
    replicate_seed,
    simulate_gap,
)

ROOT = Path(__file__).resolve().parents[1]
SMALL_SIZES = (100, 200, 400, 800, 1600)


@pytest.fixture(scope="module")
def small_run():
    """The suite's small version of the study (about a second)."""
    return simulate_gap(SMALL_SIZES, 8, seed=1)


@pytest.fixture(scope="module")
def population():
    return CoxDesign().population()


# ------------------------------------------------------------------------------ design

@pytest.mark.parametrize("kwargs, word", [
    (dict(theta=()), "theta"),
    (dict(theta=(1.0, float("nan"))), "theta"),
    (dict(theta="ab"), "theta"),
    (dict(x_bound=0.0), "x_bound"),
    (dict(baseline_hazard=-1.0), "baseline_hazard"),
    (dict(censor_rate=-0.1), "censor_rate"),
    (dict(tau=0.0), "tau"),
    (dict(tau=float("inf")), "tau"),
])
def test_design_rejects_bad_parameters(kwargs, word):
    with pytest.raises(ValueError, match=word):
        CoxDesign(**kwargs)


def test_design_sample_matches_population(population):
    """Empirical at-risk and event fractions of a big sample match the quadrature values."""
    design = CoxDesign()
    n = 200_000
    X, time, event = design.sample(n, np.random.default_rng(7))
    assert X.shape == (n, 2) and X.dtype == np.float64
    assert np.all(np.abs(X) <= 1.0) and np.all(time > 0) and np.all(time <= design.tau)
    assert not np.any(event & (time >= design.tau))
    assert np.unique(time[event]).size == event.sum()          # no tied event times
    tau = design.tau
    at_risk = np.mean(time >= tau)
    # P(Y >= tau) = E[exp(-(lam e^{theta'X} + c) tau)], computed independently by 2-D quad
    p_tau = _cube_mean(lambda x1, x2: math.exp(-(math.exp(0.7 * x1 - 0.5 * x2) + 0.2) * tau))
    assert abs(at_risk - p_tau) < 4 * math.sqrt(p_tau * (1 - p_tau) / n)
    g = population.G(tau)
    assert abs(event.mean() - g) < 4 * math.sqrt(g * (1 - g) / n)
    # s0(t) = E[I(Y >= t) e^{theta'X}] at a few t against its sample mean
    e = np.exp(X @ design.theta_star)
    for t in (0.1, 0.5, 0.9):
        emp = np.mean((time >= t) * e)
        se = np.std((time >= t) * e) / math.sqrt(n)
        assert abs(emp - population.s0(t)) < 4 * se


def _cube_mean(f):
    from scipy.integrate import dblquad
    val, _ = dblquad(lambda x2, x1: f(x1, x2), -1, 1, -1, 1, epsabs=1e-12, epsrel=1e-10)
    return val / 4.0


def test_delta0_and_conditions():
    d = CoxDesign()
    assert d.satisfies_theorem
    assert d.delta0 == pytest.approx(math.exp(-(math.exp(1.2) + 0.2) * 1.0), rel=1e-12)
    control = CoxDesign(tau=None)
    assert not control.satisfies_theorem and control.delta0 == 0.0
    with pytest.raises(ValueError, match="tau"):
        control.population()


# ----------------------------------------------------------------- population quantities

def test_population_closed_form_theta_zero():
    """theta = 0, d = 1: s0 = exp(-(lam+c)t), s1 = 0, A and K0 in closed form."""
    lam, c, b, tau = 1.3, 0.5, 2.0, 1.5
    design = CoxDesign(theta=(0.0,), x_bound=b, baseline_hazard=lam, censor_rate=c, tau=tau)
    pop = design.population()
    t = np.linspace(0, tau, 11)
    k = lam + c
    np.testing.assert_allclose(pop.s0(t), np.exp(-k * t), rtol=1e-10)
    np.testing.assert_allclose(pop.s1(t), 0.0, atol=1e-12)
    A = lam * b ** 2 / 3 * (1 - math.exp(-k * tau)) / k
    np.testing.assert_allclose(pop.information, [[A]], rtol=1e-12)
    np.testing.assert_allclose(pop.G(t), lam / k * (1 - np.exp(-k * t)), rtol=1e-9, atol=1e-12)
    K0, K1 = pop.K(t)
    np.testing.assert_allclose(K0, lam / k * (np.exp(k * t) - 1), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(K1, 0.0, atol=1e-9)
    # leading term: L = A^{-1} e [Delta x / s0(y) - e x K0(y)], e = 1
    x = np.array([[-1.5], [0.3], [1.9]])
    y = np.array([0.2, 1.0, 1.5])
    ev = np.array([True, False, True])
    expect = (ev * x[:, 0] / np.exp(-k * y) - x[:, 0] * lam / k * (np.exp(k * y) - 1)) / A
    np.testing.assert_allclose(pop.leading_term(x, y, ev)[:, 0], expect, rtol=1e-9)


def test_population_splines_match_direct_quadrature(population):
    t = np.random.default_rng(3).uniform(0, 1, 50)
    np.testing.assert_allclose(population.s0(t), population.s0_exact(t), rtol=1e-10)
    # K0(y) = lam int_0^y dt / s0(t), by adaptive quadrature on the exact s0
    for y in (0.3, 0.77, 1.0):
        ref, _ = quad(lambda u: 1.0 / population.s0_exact(u)[0], 0, y, epsabs=1e-13)
        assert population.K(y)[0] == pytest.approx(ref, rel=1e-9)


def test_population_quadrature_matches_monte_carlo(population):
    """Two independent computations of s0, A and the leading term agree (to MC error)."""
    mc = monte_carlo_population(CoxDesign(), 400_000, seed=11)
    assert isinstance(mc, MonteCarloPopulation) and isinstance(population, QuadraturePopulation)
    np.testing.assert_allclose(mc.information, population.information, rtol=0.02, atol=2e-3)
    t = np.linspace(0, 0.99, 12)
    np.testing.assert_allclose(mc.s0(t), population.s0(t), rtol=0.01)
    np.testing.assert_allclose(mc.G(t), population.G(t), rtol=0.01, atol=2e-3)
    X, time, event = CoxDesign().sample(500, np.random.default_rng(5))
    Lq = population.leading_term(X, time, event)
    Lm = mc.leading_term(X, time, event)
    assert np.linalg.norm(Lq - Lm) / np.linalg.norm(Lq) < 0.02


def test_leading_term_sup_bounds_sample_values(population):
    sup = population.leading_term_sup(n_x=2500, n_y=33)
    # the maximizer: highest-risk corner, censored at tau
    np.testing.assert_allclose(sup["x"], [1.0, -1.0])
    assert sup["y"] == pytest.approx(1.0) and sup["event"] is False
    X, time, event = CoxDesign().sample(20_000, np.random.default_rng(2))
    L = np.linalg.norm(population.leading_term(X, time, event), axis=1)
    assert L.max() <= sup["sup"] * (1 + 1e-9)
    assert L.max() > 0.5 * sup["sup"]


# ------------------------------------------------------------- exact identity for Diff_n

def _naive_n_diff(X, time, event, coef, information):
    """n * Diff_n(i) by the proof's identity (eq. 'Diff counting'), O(n^2) loops."""
    n = X.shape[0]
    e = np.exp(X @ coef)
    S0 = np.array([e[time >= t].sum() / n for t in time])
    S1 = np.array([(e[time >= t, None] * X[time >= t]).sum(axis=0) / n for t in time])
    R = S1 / S0[:, None]
    Hn = information / n
    out = np.empty_like(X)
    for i in range(n):
        m = (time < time[i]) & event
        inner = event[i] * (X[i] - R[i]) / S0[i]
        terms = (X[i] - R[m]) / (S0[m] * (S0[m] - e[i] / n))[:, None]
        inner = inner - e[i] * terms.sum(axis=0) / n
        out[i] = np.linalg.solve(Hn, e[i] * inner)
    return out


@pytest.mark.parametrize("n", [60, 400])
def test_core_gap_equals_exact_identity(n):
    """n (VIF_n - IF_n) from the core equals the proof's closed form, to rounding."""
    X, time, event = CoxDesign().sample(n, np.random.default_rng(n))
    fit = ci.fit_cox(X, time, event)
    got = n * (ci.vif(fit) - ci.reid_influence(fit))
    expect = _naive_n_diff(X, time, event, np.asarray(fit.coef), np.asarray(fit.information))
    np.testing.assert_allclose(got, expect, rtol=1e-8, atol=1e-9 * np.abs(expect).max())


def test_leading_term_convergence():
    """n * Diff_n(i) approaches the population leading term: relative error falls with n."""
    res = simulate_gap((250, 1000, 4000), 4, seed=3, n_boot=200)
    s = res.summary().set_index("n")
    err = s["lead_relerr"]
    assert err[4000] < 0.6 * err[250]
    assert err[4000] < 0.15
    f = res.fit("lead_relerr")
    assert -0.8 < f.slope < -0.25                                  # about n^{-1/2}


# ---------------------------------------------------------------------------- slopes

def test_small_version_slope_band(small_run):
    """Issue 5, item 4: slope of the mean gap in [-1.1, -0.9], CI covering -1; IF flat."""
    lo, hi = small_run.slope_ci
    assert -1.1 <= small_run.slope <= -0.9
    assert lo <= -1.0 <= hi
    f = small_run.fit("if_mean")
    assert -0.1 <= f.slope <= 0.1
    assert small_run.table["converged"].all()
    assert len(small_run.table) == len(SMALL_SIZES) * 8


def test_max_gap_follows_the_leading_term_at_the_extreme_rows(small_run, population):
    """Why the max over i decays more slowly: it is attained at rows with the largest
    exp(theta'X_i) still at risk at tau, where the (bounded) limit L is largest; the
    sample max of ||L(Z_i)|| itself grows with n toward sup L, so max_i n|Diff_n| grows."""
    t = small_run.table
    big = t[t["n"] >= 800]
    assert big["argmax_risk_q"].mean() > 0.95
    assert (~big["argmax_event"]).mean() > 0.7
    ratio = big["n_gap_max"] / big["lead_at_argmax"]
    assert np.all(np.abs(ratio - 1) < 0.3)
    f_max, f_lead = small_run.fit("gap_max"), small_run.fit("lead_max")
    assert f_max.slope > -0.9
    assert f_lead.slope > 0.1
    assert abs((f_max.slope + 1) - f_lead.slope) < 0.25
    assert t["lead_max"].max() <= population.leading_term_sup(n_x=2500, n_y=33)["sup"]


def test_loglog_slope_recovers_known_power_laws():
    sizes = np.array([100, 300, 1000, 3000, 10000])
    exact = pd.DataFrame({"n": np.repeat(sizes, 3), "v": 2.5 * np.repeat(sizes, 3) ** -0.7})
    f = loglog_slope(exact, "v", n_boot=100, seed=0)
    assert f.slope == pytest.approx(-0.7, abs=1e-12)
    assert f.ci_low == pytest.approx(-0.7, abs=1e-12)
    assert f.ci_high == pytest.approx(-0.7, abs=1e-12)
    assert math.exp(f.intercept) == pytest.approx(2.5, rel=1e-10)
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(40):
        n = np.repeat(sizes, 20)
        noisy = pd.DataFrame({"n": n, "v": 3 * n ** -1.0 * np.exp(rng.normal(0, 0.3, n.size))})
        f = loglog_slope(noisy, "v", n_boot=400, seed=rng)
        covered += f.ci_low <= -1.0 <= f.ci_high
        assert abs(f.slope + 1) < 0.1
    assert covered >= 33                                            # ~95% nominal
    with pytest.raises(ValueError, match="> 0"):
        loglog_slope(exact.assign(v=-exact["v"]), "v")
    with pytest.raises(ValueError, match="two distinct"):
        loglog_slope(exact[exact["n"] == 100], "v")
    with pytest.raises(ValueError, match="column"):
        loglog_slope(exact, "nope")


# ------------------------------------------------------------ seeding and executors

def test_replicates_reproducible_and_independent_of_executor_and_size_list():
    a = simulate_gap((60, 120), 3, seed=9, leading_term=False)
    b = simulate_gap((60, 120), 3, seed=9, leading_term=False)
    pd.testing.assert_frame_equal(a.table, b.table)
    with ThreadPoolExecutor(2) as ex:
        c = simulate_gap((120, 60), 3, seed=9, leading_term=False, executor=ex)
    pd.testing.assert_frame_equal(a.table, c.table)
    d = simulate_gap((120, 240), 3, seed=9, leading_term=False)
    pd.testing.assert_frame_equal(a.table[a.table["n"] == 120].reset_index(drop=True),
                                  d.table[d.table["n"] == 120].reset_index(drop=True))
    e = simulate_gap((60, 120), 3, seed=10, leading_term=False)
    assert not np.allclose(a.table["gap_mean"], e.table["gap_mean"])
    # all (rep, n) streams distinct
    states = {replicate_seed(9, r, n).generate_state(2).tobytes()
              for r in range(3) for n in (60, 120)}
    assert len(states) == 6


def test_dask_local_cluster_gives_the_serial_table():
    distributed = pytest.importorskip("distributed")
    serial = simulate_gap((80, 160, 320), 3, seed=4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        parallel = simulate_gap((80, 160, 320), 3, seed=4, executor=client.get_executor())
    pd.testing.assert_frame_equal(serial.table, parallel.table)
    assert serial.slope == parallel.slope


def test_seed_may_be_a_generator():
    r1 = simulate_gap((50, 100), 2, seed=np.random.default_rng(1), leading_term=False)
    r2 = simulate_gap((50, 100), 2, seed=np.random.default_rng(1), leading_term=False)
    pd.testing.assert_frame_equal(r1.table, r2.table)


# -------------------------------------------------------------------- exact LOO gaps

def test_include_loo_against_brute_force_refits():
    res = simulate_gap((40, 80), 2, seed=6, include_loo=True, leading_term=False)
    assert {"vif_loo_mean", "vif_loo_max", "if_loo_mean", "if_loo_max"} <= set(res.table.columns)
    row = res.table.iloc[0]
    n, rep = int(row["n"]), int(row["rep"])
    X, time, event = CoxDesign().sample(n, np.random.default_rng(replicate_seed(6, rep, n)))
    fit = ci.fit_cox(X, time, event)
    target = np.empty((n, 2))
    for i in range(n):
        keep = np.arange(n) != i
        target[i] = n * (fit.coef - ci.fit_cox(X[keep], time[keep], event[keep], tol=1e-12).coef)
    vif = ci.vif(fit)
    expected = np.linalg.norm(vif - target, axis=1).mean()
    assert row["vif_loo_mean"] == pytest.approx(expected, rel=1e-6)
    # the VIF approximates the refits far better than the size of the influence itself
    assert (res.table["vif_loo_mean"] < 0.25 * res.table["if_mean"]).all()


# ------------------------------------------------------------------ negative control

def test_negative_control_without_truncation():
    """No truncation (condition 3 broken): the max gap no longer decays (late rows with
    S0_n(Y_i) ~ 1/n), and n * mean gap drifts upward (a log n factor)."""
    control = CoxDesign(tau=None)
    res = simulate_gap((200, 400, 800, 1600, 3200), 8, design=control, seed=1, n_boot=500)
    assert "lead_relerr" not in res.table.columns                 # no leading term without tau
    assert res.fit("gap_max").slope > -0.45
    assert res.table.loc[res.table["n"] >= 1600, "argmax_time_q"].mean() > 0.98
    assert res.fit("gap_mean").slope > -0.97
    s = res.summary().set_index("n")
    assert s.loc[3200, "n_gap_mean"] > 1.1 * s.loc[200, "n_gap_mean"]


# ----------------------------------------------------------------- user generators

def _weibull_generator(rng, n):
    X = rng.uniform(-1, 1, size=(n, 1))
    T = (rng.exponential(size=n) / np.exp(0.8 * X[:, 0])) ** 0.5      # Weibull, shape 2
    C = np.minimum(rng.uniform(0, 2, size=n), 1.2)
    return X, np.minimum(T, C), T <= C


def test_user_generator_design_with_monte_carlo_leading_term():
    design = GeneratorDesign(_weibull_generator, theta=(0.8,))
    pop = monte_carlo_population(design, 300_000, seed=2)
    res = simulate_gap((200, 800, 3200), 4, design=design, seed=2, leading_term=pop, n_boot=200)
    assert -1.15 < res.slope < -0.85
    s = res.summary().set_index("n")
    assert s.loc[3200, "lead_relerr"] < s.loc[200, "lead_relerr"]
    # a plain callable works as a design too (no leading term without theta)
    res2 = simulate_gap((50, 100), 2, design=_weibull_generator, seed=2)
    assert "lead_relerr" not in res2.table.columns
    with pytest.raises(ValueError, match="theta"):
        monte_carlo_population(_weibull_generator, 1000)


def test_bad_generator_output_is_named():
    with pytest.raises(ValueError, match="shapes"):
        simulate_gap((20, 40), 2,
                     design=lambda rng, n: (np.zeros((n, 1)), np.ones(n - 1), np.ones(n)))
    with pytest.raises(ValueError, match="event"):
        simulate_gap((20, 40), 2,
                     design=lambda rng, n: (np.zeros((n, 1)), np.ones(n), np.full(n, 2)))


@pytest.mark.parametrize("kwargs, word", [
    (dict(sample_sizes=(100,), n_reps=3), "two distinct"),
    (dict(sample_sizes=(5, 100), n_reps=3), ">= 10"),
    (dict(sample_sizes=(100.5, 200), n_reps=3), "integers"),
    (dict(sample_sizes="ab", n_reps=3), "sample_sizes"),
    (dict(sample_sizes=(100, 200), n_reps=1), "n_reps"),
    (dict(sample_sizes=(100, 200), n_reps=2, seed=-1), "seed"),
    (dict(sample_sizes=(100, 200), n_reps=2, seed=1.5), "seed"),
    (dict(sample_sizes=(100, 200), n_reps=2, executor=object()), "executor"),
    (dict(sample_sizes=(100, 200), n_reps=2, leading_term=3), "leading_term"),
    (dict(sample_sizes=(100, 200), n_reps=2, design=3), "design"),
])
def test_simulate_gap_rejects_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        simulate_gap(**kwargs)


def test_summary_uses_geometric_means_of_norms(small_run):
    s = small_run.summary().set_index("n")
    g = small_run.table[small_run.table["n"] == 400]
    assert s.loc[400, "gap_mean"] == pytest.approx(np.exp(np.log(g["gap_mean"]).mean()), rel=1e-12)
    assert s.loc[400, "lead_at_argmax"] == pytest.approx(np.exp(np.log(g["lead_at_argmax"]).mean()),
                                                         rel=1e-12)
    assert s.loc[400, "argmax_event"] == pytest.approx(g["argmax_event"].mean())
    assert s.loc[400, "reps"] == 8


# ------------------------------------------------------------------ plot and notebook

def test_plot_returns_a_figure(small_run, tmp_path):
    from matplotlib.figure import Figure
    fig = small_run.plot()
    assert isinstance(fig, Figure)
    ax1, ax2 = fig.axes[:2]
    assert ax1.get_xscale() == "log" and ax1.get_yscale() == "log"
    labels = [line.get_label() for line in ax1.get_lines()]
    assert any(f"slope {small_run.slope:.2f}" in lab for lab in labels)
    fig.savefig(tmp_path / "gap.png")
    assert (tmp_path / "gap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = small_run.to_markdown()
    assert "| n |" in md and "gap_mean" in md


def test_notebook_executes_top_to_bottom(tmp_path, monkeypatch):
    """Run the notebook's code cells in order (no Jupyter kernel needed)."""
    import matplotlib
    matplotlib.use("Agg")
    nb = json.loads((ROOT / "notebooks" / "asymptotics.ipynb").read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert cells and all(not c.get("outputs") for c in cells)     # committed without outputs
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COXINFLUENCE_OUT", str(tmp_path))
    ns = {"__name__": "__main__"}
    for cell in cells:
        src = "".join(cell["source"])
        src = "\n".join(line for line in src.splitlines()
                        if not line.lstrip().startswith(("%", "!")))
        exec(compile(src, "notebook", "exec"), ns)
    assert (tmp_path / "asymptotics.png").exists()
    assert -1.1 <= ns["result"].slope <= -0.9

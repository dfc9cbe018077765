"""The Fine-Gray design of coxinfluence.asymptotics and simulate_gap on it.

Oracles: the design's closed-form cumulative incidence (Fine & Gray 1999, Section 5) for
the sampler, the true coefficients for the fit, the public audit (``ci.influence``, exact
refits) for the replicate's gaps, and the known behaviour of the two gaps: the VIF - IF
gap shrinks as 1/n (measured slope -0.99 on 200..3200), the gap of the IF with the
censoring weights held fixed does not (its censoring term is O_p(1)).
"""
from __future__ import annotations

import numpy as np
import pytest

import coxinfluence as ci
from coxinfluence.asymptotics import FineGrayDesign, replicate_seed, simulate_gap
from coxinfluence.asymptotics.fine_gray_design import fine_gray_gap_row


@pytest.mark.parametrize("kwargs, word", [
    (dict(theta=()), "theta"),
    (dict(theta=(1.0, float("nan"))), "theta"),
    (dict(gamma=(1.0,)), "gamma"),
    (dict(p=0.0), "p"),
    (dict(p=1.0), "p"),
    (dict(x_bound=-1.0), "x_bound"),
    (dict(censor_rate=-0.1), "censor_rate"),
    (dict(tau=0.0), "tau"),
])
def test_design_rejects_bad_parameters(kwargs, word):
    with pytest.raises(ValueError, match=word):
        FineGrayDesign(**kwargs)


def test_sample_is_reproducible_and_well_formed():
    design = FineGrayDesign()
    X, t, s = design.sample(500, np.random.default_rng(3))
    X2, t2, s2 = design.sample(500, np.random.default_rng(3))
    assert X.shape == (500, 2) and t.shape == s.shape == (500,)
    assert np.array_equal(X, X2) and np.array_equal(t, t2) and np.array_equal(s, s2)
    assert set(np.unique(s)) == {0, 1, 2}
    assert (t > 0).all() and (t <= design.tau).all()
    assert (np.abs(X) <= design.x_bound).all()


@pytest.mark.parametrize("t", [0.2, 1.0, 3.0])
def test_sample_has_the_closed_form_cumulative_incidence(t):
    """Without censoring, the share of subjects failing from cause 1 by ``t`` estimates
    ``E_X F_1(t | X)`` (Fine & Gray's formula); within 4 binomial standard errors."""
    design = FineGrayDesign(censor_rate=0.0, tau=None)
    n = 40_000
    X, time, status = design.sample(n, np.random.default_rng(11))
    share = np.mean((status == 1) & (time <= t))
    want = design.cumulative_incidence(t, X).mean()
    assert abs(share - want) < 4 * np.sqrt(want * (1 - want) / n)
    # and P(cause 1) = E_X [1 - (1 - p)^exp(x'theta)], the limit t -> inf
    p1 = np.mean(-np.expm1(np.exp(X @ design.theta_star) * np.log1p(-design.p)))
    assert abs(np.mean(status == 1) - p1) < 4 * np.sqrt(p1 * (1 - p1) / n)


def test_fit_recovers_the_true_coefficients():
    design = FineGrayDesign(theta=(0.7, -0.5, 0.3))
    X, time, status = design.sample(20_000, np.random.default_rng(5))
    fit = ci.fit_fine_gray(X, time, status, 1)
    z = (fit.coef - design.theta_star) / fit.se
    assert np.abs(z).max() < 4, z


def test_replicate_row_is_the_public_audit():
    """The row's gaps from ``ci.influence``'s changes (paper scale: ``-n`` times the
    change) and its LOO gaps from ``method="exact"``."""
    design = FineGrayDesign()
    n = 80
    X, time, status = design.sample(n, np.random.default_rng(replicate_seed(0, 0, n)))
    row = fine_gray_gap_row(design, X, time, status, include_loo=True)
    fit = ci.fit_fine_gray(X, time, status, 1)
    VIF, IF, exact = (-n * ci.influence(fit, method=m).loo_change.to_numpy()
                      for m in ("vif", "reid", "exact"))
    FIX = -n * ci.influence_functions.fine_gray_audit.FineGrayAudit(fit).fixed_weight_change()

    def norms(a):
        return np.sqrt((a ** 2).sum(axis=1))

    np.testing.assert_allclose(row["gap_mean"], norms(VIF - IF).mean(), rtol=1e-10)
    np.testing.assert_allclose(row["fixed_gap_max"], norms(VIF - FIX).max(), rtol=1e-10)
    np.testing.assert_allclose(row["weight_term_mean"], norms(IF - FIX).mean(), rtol=1e-10)
    np.testing.assert_allclose(row["vif_loo_mean"], norms(VIF - exact).mean(), rtol=1e-8)
    np.testing.assert_allclose(row["fixed_loo_mean"], norms(FIX - exact).mean(), rtol=1e-8)
    assert row["n_events"] == int((status == 1).sum())
    assert row["n_competing"] == int((status == 2).sum())


@pytest.fixture(scope="module")
def fg_run():
    return simulate_gap((200, 400, 800, 1600), 6, design=FineGrayDesign(), seed=1,
                        n_boot=500)


def test_vif_gap_is_order_one_over_n_and_the_fixed_weight_gap_is_not(fg_run):
    slopes = fg_run.slopes().set_index("column")
    assert -1.15 < slopes.loc["gap_mean", "slope"] < -0.85
    assert abs(slopes.loc["if_mean", "slope"]) < 0.1
    # the censoring weights' term does not vanish: the fixed-weight gap stays O(1)
    assert slopes.loc["fixed_gap_mean", "slope"] > -0.25
    assert abs(slopes.loc["weight_term_mean", "slope"]) < 0.25
    s = fg_run.summary()
    ratio = (s["fixed_gap_mean"] / s["gap_mean"]).to_numpy()
    assert (np.diff(ratio) > 0).all() and ratio[-1] > 10, ratio


def test_fine_gray_run_is_reproducible_and_tabulated(fg_run):
    again = simulate_gap((200, 400), 6, design=FineGrayDesign(), seed=1)
    sub = fg_run.table[fg_run.table["n"] <= 400].reset_index(drop=True)
    cols = ["n", "rep", "gap_mean", "fixed_gap_mean", "theta_err"]
    np.testing.assert_array_equal(again.table[cols].to_numpy(), sub[cols].to_numpy())
    md = fg_run.to_markdown()
    assert "fixed_gap_mean" in md and "weight_term_mean" in md
    assert fg_run.table["converged"].all()


def test_vif_is_closer_to_the_exact_refits_than_the_fixed_weight_if():
    """With exact refits: ``VIF_n`` is nearer ``n (theta_hat - theta_hat_{-i})`` than the
    fixed-weight IF, and its error shrinks with n."""
    res = simulate_gap((60, 240), 3, design=FineGrayDesign(censor_rate=1.0), seed=2,
                       include_loo=True, n_boot=100)
    s = res.summary()
    assert (s["vif_loo_mean"] < s["fixed_loo_mean"]).all()
    assert s["vif_loo_mean"].iloc[1] < s["vif_loo_mean"].iloc[0]


def test_fine_gray_run_is_the_same_on_an_executor_and_plots(fg_run):
    """Replicate seeds do not depend on the executor (seeding.replicate_seed): a thread
    pool gives the serial table bit for bit; the figure draws the gap columns."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        threaded = simulate_gap((200, 400), 6, design=FineGrayDesign(), seed=1, executor=pool)
    serial = fg_run.table[fg_run.table["n"] <= 400].reset_index(drop=True)
    cols = [c for c in serial.columns if c != "converged"]
    np.testing.assert_array_equal(threaded.table[cols].to_numpy(float),
                                  serial[cols].to_numpy(float))
    fig = fg_run.plot()
    labels = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert any("VIF" in s and "slope" in s for s in labels)

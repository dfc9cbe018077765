"""A test-set metric's ``cause=`` is the cause its predictions are for (found while
building the competing-risks CLI): a cause-specific fit predicts that cause's absolute
risk; a Fine-Gray fit of another cause is refused. Before, ``BrierScore(..., cause=2)``
on a cause-specific fit scored cause 1's absolute risk against cause 2's events."""
import numpy as np
import pytest

import coxinfluence as ci


def _data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    t = np.round(rng.exponential(1 / np.exp(X @ [0.5, -0.3])), 2) + 0.01
    status = np.where(rng.uniform(size=n) < 0.3, 0, rng.integers(1, 3, size=n))
    train = np.arange(n) < 200
    return (X[train], t[train], status[train]), (X[~train], t[~train], status[~train])


@pytest.mark.parametrize("cause", [1, 2])
def test_a_cause_specific_metric_scores_its_cause(cause):
    (X, t, s), (Xt, tt, st) = _data()
    fit = ci.fit_cause_specific(X, t, s)
    table = ci.evaluate(fit, Xt, tt, st, times=[0.5, 1.0], cause=cause)
    for metric, target in (
            ("brier", ci.targets.BrierScore(Xt, tt, st, times=[0.5, 1.0], cause=cause)),
            ("auc", ci.targets.TimeDependentAUC(Xt, tt, st, times=[0.5, 1.0], cause=cause))):
        expected = table.loc[table.metric == metric, "estimate"].to_numpy()
        np.testing.assert_allclose(target.value(fit, fit.coef[None, :])[0], expected,
                                   rtol=1e-12)
        res = ci.influence(fit, target=target, method="exact", progress=False)
        assert np.abs(res.loo_change.to_numpy()).max() > 0


def test_the_causes_differ_so_the_test_can_fail():
    (X, t, s), (Xt, tt, st) = _data()
    fit = ci.fit_cause_specific(X, t, s)
    one, two = (ci.targets.BrierScore(Xt, tt, st, times=[1.0], cause=k).value(
        fit, fit.coef[None, :])[0, 0] for k in (1, 2))
    assert abs(one - two) > 1e-3


def test_a_fine_gray_fit_of_another_cause_is_refused():
    (X, t, s), (Xt, tt, st) = _data()
    fg = ci.fit_fine_gray(X, t, s, cause=1)
    target = ci.targets.BrierScore(Xt, tt, st, times=[0.5], cause=2)
    with pytest.raises(ValueError, match="scores cause 2 but the model predicts cause 1"):
        ci.influence(fg, target=target, method="vif")
    same = ci.targets.BrierScore(Xt, tt, st, times=[0.5], cause=1)
    assert np.isfinite(ci.influence(fg, target=same, method="vif").loo_change.to_numpy()).all()

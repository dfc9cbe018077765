"""The paper's metric on METABRIC and SUPPORT (paper split and preprocessing), against
exact leave-one-out refits. Paper: 0.997 (METABRIC) and 0.943 (SUPPORT) for VIF."""
import numpy as np
import pytest

import coxinfluence as ci
from coxinfluence.datasets import paper_split
from coxinfluence.metrics import relative_risk_correlation


def scores(name, path, newton=True):
    split = paper_split(name, path=path)
    X, t, e = split.arrays("train")
    fit = ci.fit_cox(X, t, e)
    exact = np.asarray(ci.exact_loo(fit, progress=False))
    X_test = split.arrays("test")[0]
    n = fit.n
    est = {"vif": fit.coef - np.asarray(ci.vif(fit)) / n,
           "reid": fit.coef - np.asarray(ci.reid_influence(fit)) / n}
    if newton:
        est["newton"] = np.asarray(ci.newton_loo(fit))
    return fit, {k: relative_risk_correlation(fit.coef, v, exact, X_test) for k, v in est.items()}


def test_metabric(shared_data_dir):
    fit, r = scores("metabric", shared_data_dir)
    assert fit.n == 1218 and fit.data.d == 9
    assert r["vif"] >= 0.9997
    assert r["reid"] >= 0.9995
    assert r["newton"] > r["vif"]


@pytest.mark.slow
def test_support(shared_data_dir):
    fit, r = scores("support", shared_data_dir, newton=False)
    assert fit.n == 5678 and fit.data.d == 14
    assert r["vif"] >= 0.9995
    assert r["reid"] < r["vif"]


def test_metric_is_one_for_identical_and_detects_noise():
    rng = np.random.default_rng(0)
    coef = np.array([0.5, -0.2])
    loo = coef + rng.normal(scale=1e-2, size=(100, 2))
    Xt = rng.normal(size=(5, 2))
    assert relative_risk_correlation(coef, loo, loo, Xt) == pytest.approx(1.0, abs=1e-12)
    noisy = loo + rng.normal(scale=1e-2, size=loo.shape)
    assert relative_risk_correlation(coef, noisy, loo, Xt) < 0.9


def test_mean_column_correlation():
    from coxinfluence.metrics import mean_column_correlation
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    b[:, 0] += 3 * a[:, 0]
    ref = np.mean([np.corrcoef(a[:, k], b[:, k])[0, 1] for k in range(3)])
    assert mean_column_correlation(a, b) == pytest.approx(ref, rel=1e-12)
    a2 = a.copy()
    a2[[4, 9]] = np.nan                      # NaN rows are dropped from both arrays
    keep = np.setdiff1d(np.arange(50), [4, 9])
    expected = mean_column_correlation(a[keep], b[keep])
    assert mean_column_correlation(a2, b) == pytest.approx(expected)
    with pytest.raises(ValueError, match="differ in shape"):
        mean_column_correlation(a, b[:, :2])
    with pytest.raises(ValueError, match="constant column"):
        mean_column_correlation(np.ones((5, 2)), b[:5, :2])
    a3 = a.copy()
    a3[:, 1] = 2.0                           # column 1 carries no information
    kept = np.mean([np.corrcoef(a[:, k], b[:, k])[0, 1] for k in (0, 2)])
    assert mean_column_correlation(a3, b, skip_constant=True) == pytest.approx(kept, rel=1e-12)
    with pytest.raises(ValueError, match="every column"):
        mean_column_correlation(np.ones((5, 2)), b[:5, :2], skip_constant=True)


def test_paper_split_leaves_the_global_random_state_alone(shared_data_dir):
    """The split equals the paper's code (np.random.seed then DataFrame.sample) without
    changing the caller's global NumPy random state."""
    from coxinfluence.datasets import load_deepsurv
    df = load_deepsurv("metabric", shared_data_dir)
    np.random.seed(0)                                   # the paper's code, literally
    test = df.sample(frac=0.2)
    val = df.drop(test.index).sample(frac=0.2)
    np.random.seed(123)
    expected_next = np.random.random()
    np.random.seed(123)
    split = paper_split("metabric", path=shared_data_dir)
    assert np.random.random() == expected_next
    assert split.test.index.equals(test.index) and split.val.index.equals(val.index)
    assert len(split.train) == 1218

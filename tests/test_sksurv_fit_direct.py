"""The SksurvCoxFit of an audited scikit-survival estimator, passed itself to the
low-level functions (``ci.exact_loo(result.fit)``), is audited by its estimator's seam:
the same refits as ``ci.influence(estimator, X, y=y, method="exact")``, to the bit. Before,
the registry took it for a plain CoxFit, and the Cox audit, which does not know the
elastic net's penalty, raised AttributeError ('ElasticNetPenalty' ... 'strength_loo')."""
import numpy as np
import pytest

import coxinfluence as ci

sksurv = pytest.importorskip("sksurv")


@pytest.mark.parametrize("kind", ["coxnet", "coxph_ridge"])
def test_exact_loo_of_the_fit_equals_the_estimator_audit(kind):
    from sksurv.datasets import load_veterans_lung_cancer
    from sksurv.linear_model import CoxnetSurvivalAnalysis, CoxPHSurvivalAnalysis
    X, y = load_veterans_lung_cancer()
    X = X[["Age_in_years", "Karnofsky_score", "Months_from_Diagnosis"]].astype(float)
    est = (CoxnetSurvivalAnalysis(alphas=[0.05], l1_ratio=0.5).fit(X, y) if kind == "coxnet"
           else CoxPHSurvivalAnalysis(alpha=0.5).fit(X, y))
    res = ci.influence(est, X, y=y, method="exact", progress=False)
    refits = np.asarray(ci.exact_loo(res.fit), dtype=np.float64)
    np.testing.assert_array_equal(refits - res.fit.coef, res.theta_change.to_numpy())
    assert np.abs(res.theta_change.to_numpy()).max() > 1e-4        # not all zero
    vif = np.asarray(ci.vif(res.fit), dtype=np.float64)
    assert np.isfinite(vif).all()
    with pytest.raises(ValueError, match="units are the rows"):
        ci.exact_loo(res.fit, groups=np.arange(len(X)) // 2)

"""ci.influence per subject and per cluster through lifelines and statsmodels, against R
(golden fixtures of tests/r/counting_process_reference.R): a CoxTimeVaryingFitter on the
Stanford heart transplants (R's ``heart``), CoxPHFitter with entry_col and PHReg with
entry (lung on the age scale: left truncation), CoxPHFitter with cluster_col (units are
the clusters; dfbetas divide by R's naive SE, as R's ``residuals(fit, "dfbetas")``, and
``dfbetas_robust`` by R's robust SE)."""
import warnings

import numpy as np
import pytest
from r_counting import CONFIGS, load_data, reference, rel_err

import coxinfluence as ci

pytestmark = pytest.mark.skipif(not CONFIGS, reason="counting-process fixtures missing")
lifelines = pytest.importorskip("lifelines")


def test_time_varying_fitter_audits_subjects():
    from lifelines import CoxTimeVaryingFitter
    from lifelines.datasets import load_stanford_heart_transplants
    df = load_stanford_heart_transplants()
    ctv = CoxTimeVaryingFitter().fit(df, id_col="id", event_col="event", start_col="start",
                                     stop_col="stop")
    reid = ci.influence(ctv, df, method="reid")
    ids = np.sort(df.id.unique())
    np.testing.assert_array_equal(reid.loo_change.index, ids)
    np.testing.assert_array_equal(ids, load_data("heart").ids)      # the same subjects as R
    # our change is theta_{-g} - theta_hat, R's collapsed dfbeta its negative
    assert rel_err(-reid.loo_change.to_numpy(), reference("heart", "dfbeta_id")) < 1e-8
    exact = ci.influence(ctv, df, method="exact")
    loso = reference("heart", "loso_coef") - reference("heart", "coef")[0]
    assert np.abs(exact.loo_change.to_numpy() - loso).max() < 1e-8 * np.abs(loso).max()
    top = exact.top(3)
    g = top.index[0]
    assert top.loc[g, "rows"] == (df.id == g).sum()
    assert top.loc[g, "exit"] == df.stop[df.id == g].max()


def test_entry_col_is_left_truncation():
    from lifelines import CoxPHFitter
    d = load_data("lung_age")
    frame = d.frame[["start", "stop", "event"] + d.covariates]
    cph = CoxPHFitter().fit(frame, duration_col="stop", event_col="event", entry_col="start")
    res = ci.influence(cph, frame, method="exact")
    loso = reference("lung_age", "loso_coef") - reference("lung_age", "coef")[0]
    assert np.abs(res.loo_change.to_numpy() - loso).max() < 1e-8 * np.abs(loso).max()


def test_statsmodels_entry():
    sm = pytest.importorskip("statsmodels.api")
    d = load_data("lung_age")
    f = d.frame
    model = sm.PHReg(f.stop, f[d.covariates], status=f.event, entry=f.start,
                     ties="efron").fit()
    res = ci.influence(model, method="reid")
    assert rel_err(-res.loo_change.to_numpy(), reference("lung_age", "dfbeta_rows")) < 1e-8


def test_cluster_col_makes_clusters_the_units_and_the_model_robust():
    from lifelines import CoxPHFitter
    d = load_data("rightcens")
    cols = ["stop", "event", "weight", "stratum", "cluster"] + d.covariates
    frame = d.frame[cols]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # lifelines: non-integer weights
        cph = CoxPHFitter().fit(frame, duration_col="stop", event_col="event",
                                weights_col="weight", strata=["stratum"],
                                cluster_col="cluster")
    res = ci.influence(cph, frame, method="reid")
    np.testing.assert_array_equal(res.loo_change.index, d.clusters)
    assert rel_err(-res.loo_change.to_numpy(), reference("rightcens", "dfbeta_cluster")) < 1e-8
    # dfbetas: over R's naive SE (fit$naive.var, the inverse information), as R's
    # residuals(fit, "dfbetas"); dfbetas_robust over R's robust SE
    naive_se = np.sqrt(np.diag(np.linalg.inv(reference("rightcens", "information"))))
    np.testing.assert_allclose(res.dfbetas.to_numpy(), res.loo_change.to_numpy() / naive_se,
                               rtol=1e-8)
    robust_se = np.sqrt(np.diag(reference("rightcens", "robust_var_cluster")))
    np.testing.assert_allclose(res.dfbetas_robust.to_numpy(),
                               res.loo_change.to_numpy() / robust_se, rtol=1e-8)
    assert res.robust
    by_row = ci.influence(cph, frame, method="reid", groups=np.arange(len(frame)))
    assert by_row.loo_change.shape[0] == len(frame)

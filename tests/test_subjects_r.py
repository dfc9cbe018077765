"""Counting-process data, subjects and clusters against R's survival (golden fixtures made
by tests/r/counting_process_reference.R; a live run when Rscript is installed):
coefficients, log-likelihood, information, score residuals, dfbeta per row, collapsed per
subject and per cluster, robust (sandwich) variances, exact leave-one-subject-out and
leave-one-cluster-out refits done in R, and survfit for a new patient."""
import shutil
import warnings

import numpy as np
import pytest
from r_counting import CONFIGS, GOLDEN, has_quantity, load_data, reference, rel_err, run_r

import coxinfluence as ci
from coxinfluence.targets import Survival, baseline_cumhaz

pytestmark = pytest.mark.skipif(not CONFIGS, reason="counting-process fixtures missing")


def fit_for(d, with_id=True):
    return ci.fit_cox(d.X, d.stop, d.event, start=d.start, id=d.id if with_id else None,
                      weights=d.weights, strata=d.strata, ties=d.ties)


@pytest.mark.parametrize("config", CONFIGS)
def test_fit_agrees_with_r(config):
    d = load_data(config)
    fit = fit_for(d)
    assert rel_err(fit.coef, reference(config, "coef")[0]) < 1e-8
    assert abs(fit.loglik - reference(config, "loglik")[0, 0]) < 1e-8 * abs(fit.loglik)
    assert rel_err(fit.information, reference(config, "information")) < 1e-8
    assert rel_err(ci.score_residuals(fit), reference(config, "score_rows")) < 1e-8


@pytest.mark.parametrize("config", CONFIGS)
def test_dfbeta_per_row_subject_and_cluster(config):
    d = load_data(config)
    fit = fit_for(d)
    rows = ci.reid_influence(fit_for(d, with_id=False)) / fit.n
    assert rel_err(rows, reference(config, "dfbeta_rows")) < 1e-8
    per_id = ci.reid_influence(fit)
    np.testing.assert_array_equal(per_id.index, d.ids)
    assert rel_err(per_id / len(d.ids), reference(config, "dfbeta_id")) < 1e-8
    if d.cluster is not None:
        per_cl = ci.reid_influence(fit, groups=d.cluster)
        np.testing.assert_array_equal(per_cl.index, d.clusters)
        assert rel_err(per_cl / len(d.clusters), reference(config, "dfbeta_cluster")) < 1e-8


@pytest.mark.parametrize("config", CONFIGS)
def test_robust_covariance(config):
    d = load_data(config)
    fit = fit_for(d)
    assert rel_err(fit.robust_covariance(), reference(config, "robust_var_id")) < 1e-8
    no_id = fit_for(d, with_id=False)
    assert rel_err(no_id.robust_covariance(), reference(config, "robust_var_rows")) < 1e-8
    if d.cluster is not None:
        assert rel_err(fit.robust_covariance(groups=d.cluster),
                       reference(config, "robust_var_cluster")) < 1e-8


@pytest.mark.parametrize("config", CONFIGS)
def test_exact_leave_one_subject_and_cluster_out_refits(config):
    d = load_data(config)
    fit = fit_for(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.LeaveOneOutWarning)
        loso = ci.exact_loo(fit)
    ref = reference(config, "loso_coef")
    scale = np.abs(ref).max()
    ok = np.isfinite(loso.to_numpy()).all(axis=1)
    assert ok.mean() > 0.95
    assert np.abs(loso.to_numpy()[ok] - ref[ok]).max() < 1e-8 * scale
    if has_quantity(config, "loco_coef"):
        loco = ci.exact_loo(fit, groups=d.cluster)
        ref = reference(config, "loco_coef")
        assert np.abs(loco.to_numpy() - ref).max() < 1e-8 * np.abs(ref).max()


@pytest.mark.parametrize("config", CONFIGS)
def test_survfit_of_a_new_patient(config):
    """S(t|x) with the Breslow/Efron baseline of counting-process data, as R's
    survfit(fit, newdata) (compared on the cumulative hazard: on lung's age scale S is
    1e-7 .. 1e-13)."""
    d = load_data(config)
    fit = fit_for(d)
    x = reference(config, "survfit_newdata")[0]
    times = reference(config, "survfit_times")[0]
    cumhaz = baseline_cumhaz(fit, times, stratum=d.survfit_stratum) * np.exp(x @ fit.coef)
    assert rel_err(cumhaz, reference(config, "survfit_cumhaz")[0]) < 1e-8
    surv = Survival(x[None, :], times, strata=d.survfit_stratum).value(fit, fit.coef[None])
    np.testing.assert_allclose(surv[0], reference(config, "survfit_surv")[0], rtol=1e-6)


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_live_r_regenerates_the_fixtures(tmp_path):
    """The R script run now gives the numbers the golden fixtures hold (R is live)."""
    out = run_r(tmp_path)
    for config in ("efron_wstrata", "cgd"):
        for q in ("coef", "dfbeta_id", "loso_coef"):
            np.testing.assert_allclose(reference(config, q, folder=out),
                                       reference(config, q, folder=GOLDEN), rtol=1e-12)
    d = load_data("breslow_wstrata", folder=out)
    fit = fit_for(d)
    assert rel_err(fit.coef, reference("breslow_wstrata", "coef", folder=out)[0]) < 1e-8

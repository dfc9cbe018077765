"""Agreement with R's survival package (the oracle, docs/conventions.md "Oracles").

Golden fixtures from ``tests/r/cox_reference.R`` (seed 20261122) run everywhere; the live
comparison re-runs R on fresh data and is skipped, with the reason shown, where Rscript
is absent. Tolerances: 1e-8 relative (issue 2) for coefficients, log-likelihood,
information, score residuals and n * dfbeta; 1e-7 for leave-one-out refits.
"""
import shutil

import numpy as np
import pytest
from r_reference import CONFIGS, GOLDEN, fit_config, load, reference, rel_err, run_r

import coxinfluence as ci


def check_against_r(data, ref, config):
    fit = fit_config(data, config)
    n = fit.n
    assert fit.converged
    assert rel_err(fit.coef, reference(ref, config, "coef")[0]) < 1e-8
    assert abs(fit.loglik - reference(ref, config, "loglik")[0, 0]) < 1e-8 * abs(fit.loglik)
    assert rel_err(fit.information, reference(ref, config, "information")) < 1e-8
    assert rel_err(ci.score_residuals(fit), reference(ref, config, "score")) < 1e-8
    # docs/conventions.md: dfbeta_R(i) = IF_n(i) / n
    assert rel_err(ci.reid_influence(fit), n * reference(ref, config, "dfbeta")) < 1e-8
    return fit


@pytest.mark.parametrize("config", CONFIGS)
def test_golden_fit_and_residuals(config):
    data, ref = load(GOLDEN)
    check_against_r(data, ref, config)


@pytest.mark.parametrize("config", CONFIGS)
def test_golden_exact_loo(config):
    data, ref = load(GOLDEN)
    fit = fit_config(data, config)
    loo = ci.exact_loo(fit, progress=False)
    assert np.abs(loo - reference(ref, config, "loo")).max() < 1e-7


def test_golden_data_is_heavily_tied():
    data, _ = load(GOLDEN)
    events = data[data["status"] == 1]
    assert events["time"].duplicated().sum() > 30     # many tied event times
    assert data["x2"].std() > 2                         # a covariate far from unit variance


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: live comparison with R's survival skipped "
                           "(install r-base-core r-cran-survival)")
def test_live_against_r(tmp_path):
    folder = run_r(seed=7, outdir=tmp_path, n=120)
    data, ref = load(folder)
    for config in CONFIGS:
        fit = check_against_r(data, ref, config)
        loo = ci.exact_loo(fit, progress=False)
        assert np.abs(loo - reference(ref, config, "loo")).max() < 1e-7, config


@pytest.mark.parametrize("offset, tol", [(1e4, 1e-8), (1e6, 1e-8), (1e8, 1e-6)])
def test_a_covariate_with_a_large_offset_gives_rs_fit(offset, tol):
    """The partial likelihood does not see a constant added to a covariate, so R's numbers
    for the data without the offset are the oracle. The fit centres covariates (as R does);
    without centring the information cancelled (7e-6 relative at offset/sd = 1e5, no
    convergence at 1e6). At 1e8 the input itself is rounded to ~1e-8 absolute, hence 1e-6."""
    from r_reference import COVARIATES
    data, ref = load(GOLDEN)
    config = "efron_strata_weights"
    X = data[COVARIATES].to_numpy().copy()
    X[:, 0] += offset * X[:, 0].std()
    fit = ci.fit_cox(X, data["time"].to_numpy(), data["status"].to_numpy(),
                     weights=data["w"].to_numpy(), strata=data["s"].to_numpy(), ties="efron")
    assert fit.converged
    assert rel_err(fit.coef, reference(ref, config, "coef")[0]) < tol
    assert rel_err(fit.information, reference(ref, config, "information")) < tol
    assert rel_err(ci.reid_influence(fit), fit.n * reference(ref, config, "dfbeta")) < 10 * tol

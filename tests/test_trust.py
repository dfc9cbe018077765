"""A fit that did not converge (monotone likelihood) is named, never audited silently:
the influence functions warn with the diverging covariate, exact refits refuse with a
clear error (no raw LinAlgError)."""
import warnings

import numpy as np
import pytest

import coxinfluence as ci


def separated(seed=0, n=60):
    """x2 = 1 for exactly the 10 earliest events: its coefficient diverges."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    g = (np.arange(n) < 10).astype(float)
    t = np.where(g == 1, rng.uniform(0, 1, n), rng.uniform(1, 5, n))
    return np.column_stack([x, g]), t, np.ones(n)


def test_diverging_coefficient_is_named():
    X, t, e = separated()
    with pytest.warns(ci.ConvergenceWarning):
        fit = ci.fit_cox(X, t, e)
    assert not fit.converged and fit.diverging_columns() == ["x2"]
    assert ci.fit_cox(X[:, :2], t, e).diverging_columns() == []


@pytest.mark.parametrize("f", [ci.vif, ci.reid_influence, ci.newton_loo])
def test_approximations_warn_with_the_name(f):
    X, t, e = separated()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ci.fit_cox(X, t, e)
    with pytest.warns(ci.ConvergenceWarning, match=r"\['x2'\] diverge"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ci.LeaveOneOutWarning)
            f(fit)


def test_exact_refits_refuse_with_a_clear_error():
    X, t, e = separated()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ci.fit_cox(X, t, e)
    with pytest.raises(ci.NotConvergedError, match=r"\['x2'\] diverge.*ridge penalty"):
        ci.exact_loo(fit)
    with pytest.raises(ci.NotConvergedError):
        ci.influence(fit, method="exact")


def test_a_converged_fit_gets_no_warning():
    X, t, e = separated()
    fit = ci.fit_cox(X[:, :2], t, e)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ci.vif(fit), ci.reid_influence(fit), ci.newton_loo(fit), ci.exact_loo(fit)

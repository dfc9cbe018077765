"""One exception hierarchy (issue 35, item 6): ``ci.InputError`` (a ``ValueError``;
``ci.CoxInputError`` the same class) for a bad input of every family and integration,
``ci.ConvergenceWarning`` the base of every family's convergence warning, and
``ci.NotConvergedError`` the base of the not-converged errors."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(35)
    n = 60
    X = pd.DataFrame(rng.normal(size=(n, 2)), columns=["x1", "x2"])
    time = rng.exponential(size=n) * np.exp(-0.5 * X["x1"].to_numpy())
    event = (rng.random(n) < 0.7).astype(float)
    status = np.where(event > 0, rng.integers(1, 3, n), 0)
    return X, time, event, status


def test_input_error_is_the_one_class():
    assert ci.CoxInputError is ci.InputError
    assert issubclass(ci.InputError, ValueError)
    assert "InputError" in ci.__all__ and "CoxInputError" in ci.__all__


@pytest.mark.parametrize("case", ["cox", "aft", "fine_gray"])
def test_every_fitter_raises_input_error(data, case):
    X, time, event, status = data
    bad_time = -time                                  # negative times: refused by all three
    with pytest.raises(ci.InputError, match="time must be"):
        if case == "cox":
            ci.fit_cox(X, bad_time, event)
        elif case == "aft":
            ci.fit_aft(X, bad_time, event)
        else:
            ci.fit_fine_gray(X, bad_time, status)
    Xnan = X.copy()
    Xnan.iloc[3, 0] = np.nan
    with pytest.raises(ci.InputError, match="NaN"):
        if case == "cox":
            ci.fit_cox(Xnan, time, event)
        elif case == "aft":
            ci.fit_aft(Xnan, time, event)
        else:
            ci.fit_fine_gray(Xnan, time, status)


def test_fitters_option_errors_are_input_errors(data):
    X, time, event, status = data
    with pytest.raises(ci.InputError, match="ties"):
        ci.fit_cox(X, time, event, ties="exact-ish")
    with pytest.raises(ci.InputError, match="dist"):
        ci.fit_aft(X, time, event, dist="gompertz")
    with pytest.raises(ci.InputError, match="cause 7"):
        ci.fit_fine_gray(X, time, status, cause=7)


def test_lifelines_missing_column_is_input_error(data):
    lifelines = pytest.importorskip("lifelines")
    X, time, event, _ = data
    df = X.assign(T=time, E=event)
    cph = lifelines.CoxPHFitter().fit(df, "T", "E")
    with pytest.raises(ci.InputError, match="x2"):
        ci.influence(cph, df.drop(columns=["x2"]), method="vif")
    with pytest.raises(ci.InputError, match="E"):
        ci.influence(cph, df.drop(columns=["E"]), method="vif")
    aft = lifelines.WeibullAFTFitter().fit(df, "T", "E")
    with pytest.raises(ci.InputError, match="x1"):
        ci.influence(aft, df.drop(columns=["x1"]), method="vif")
    with pytest.raises(ci.InputError, match="not fitted"):
        ci.influence(lifelines.CoxPHFitter(), df)


def test_lifelines_wrong_data_is_input_error(data):
    lifelines = pytest.importorskip("lifelines")
    X, time, event, _ = data
    df = X.assign(T=time, E=event)
    cph = lifelines.CoxPHFitter().fit(df, "T", "E")
    other = df.assign(T=df["T"].to_numpy()[::-1])         # not the training data
    with pytest.raises(ci.InputError, match="do not match"):
        ci.influence(cph, other, method="vif")


def test_sksurv_wrong_y_is_input_error(data):
    pytest.importorskip("sksurv")
    from sksurv.linear_model import CoxPHSurvivalAnalysis
    from sksurv.util import Surv
    X, time, event, _ = data
    y = Surv.from_arrays(event.astype(bool), time)
    est = CoxPHSurvivalAnalysis().fit(X, y)
    flipped = Surv.from_arrays(~event.astype(bool), time)
    with pytest.raises(ci.InputError, match="do not match|not match these data"):
        ci.influence(est, X, y=flipped, method="vif")
    with pytest.raises(ci.InputError):
        ci.influence(est, X, y=y[:-1], method="vif")    # y of another length
    # the right data are accepted: the VIF equals ours on the same model
    res = ci.influence(est, X, y=y, method="vif")
    ours = ci.influence(ci.fit_cox(X, time, event, ties="breslow"), method="vif")
    np.testing.assert_allclose(res.theta_change.to_numpy(), ours.theta_change.to_numpy(),
                               rtol=1e-5, atol=1e-8)


def test_every_convergence_warning_is_a_convergence_warning():
    from coxinfluence.integrations.lifelines_parametric import LifelinesNotConvergedWarning
    from coxinfluence.models.fine_gray import FineGrayConvergenceWarning
    for w in (FineGrayConvergenceWarning, LifelinesNotConvergedWarning):
        assert issubclass(w, ci.ConvergenceWarning)
    assert issubclass(ci.ConvergenceWarning, UserWarning)


def separated_aft_data(data):
    """A binary covariate whose one level has no event: the AFT likelihood is monotone
    in its coefficient (no maximum)."""
    X, time, _, _ = data
    x = (X["x1"].to_numpy() > 0).astype(float)
    return X.assign(x1=x), time, (x == 0).astype(float)


@pytest.mark.parametrize("case", ["cox", "aft", "fine_gray"])
def test_fits_without_maximum_warn_convergence_warning(data, case):
    X, time, event, status = data
    with pytest.warns(ci.ConvergenceWarning, match="did not converge"):
        if case == "cox":
            fit = ci.fit_cox(X, time, event, max_iter=1)
        elif case == "aft":
            fit = ci.fit_aft(*separated_aft_data(data))
        else:
            fit = ci.fit_fine_gray(X, time, status, max_iter=1)
    assert not fit.converged


def test_the_cli_silences_the_one_base_only():
    """The CLI filters ``ci.ConvergenceWarning`` (every family's, by the base) and names
    no family's class."""
    import inspect

    from coxinfluence.cli import audit_command
    source = inspect.getsource(audit_command)
    assert "FineGrayConvergenceWarning" not in source
    assert "LifelinesNotConvergedWarning" not in source
    assert 'simplefilter("ignore", ci.ConvergenceWarning)' in source


def test_not_converged_errors_share_a_base(data):
    from coxinfluence.models.aft import AFTNotConvergedError
    assert issubclass(AFTNotConvergedError, ci.NotConvergedError)
    assert issubclass(ci.NotConvergedError, ValueError)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.ConvergenceWarning)
        fit = ci.fit_aft(*separated_aft_data(data))
    assert not fit.converged
    with pytest.raises(ci.NotConvergedError, match="did not converge"):
        ci.influence(fit, method="exact")

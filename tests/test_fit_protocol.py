"""The fit protocol (issue 45 item 2): what generic code reads of every fit, with defaults
on ``models.base.FitProtocol``; the ``"hr"`` target applies to the covariates'
coefficients only (``ratio_positions``), not a parametric family's intercept or shape."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from lifelines.datasets import load_rossi
from seam_example_family import LogisticAudit, LogisticFit

import coxinfluence as ci
from coxinfluence.models.base import FitProtocol


@pytest.fixture(scope="module")
def rossi():
    return load_rossi()


@pytest.fixture(scope="module")
def logistic():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(80, 2)), columns=["a", "b"],
                     index=[f"r{i}" for i in range(80)])
    y = (rng.random(80) < 1 / (1 + np.exp(-(0.3 + X["a"] - X["b"])))).astype(float)
    return LogisticFit(X, y)


def test_hr_of_an_aft_fit_has_only_the_covariates(rossi):
    aft = ci.fit_aft(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
    assert aft.columns == ["(Intercept)", "fin", "age", "prio", "Log(scale)"]
    hr = ci.targets.HazardRatios()
    assert hr.columns(aft) == ["HR fin", "HR age", "HR prio"]
    value = hr.value(aft, aft.coef[None, :])
    np.testing.assert_allclose(value, np.exp(aft.coef[None, 1:4]), rtol=0, atol=0)
    J = hr.jacobian(aft)
    expected = np.zeros((3, 5))
    expected[[0, 1, 2], [1, 2, 3]] = np.exp(aft.coef[1:4])
    np.testing.assert_array_equal(J, expected)
    # the same coefficients as the AFT's own ratios (exp(beta_j)), named alike
    np.testing.assert_array_equal(J, ci.targets.TimeRatios().jacobian(aft))


def test_hr_of_a_cox_fit_is_every_coefficient(rossi):
    fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
    hr = ci.targets.HazardRatios()
    assert hr.columns(fit) == ["HR fin", "HR age", "HR prio"]
    np.testing.assert_array_equal(hr.jacobian(fit), np.diag(np.exp(fit.coef)))


class _LogisticRatios(LogisticAudit):
    """The test-only family offering ``target="hr"`` (its exp(b) are odds ratios; the
    point is the columns: its intercept is no covariate)."""

    target_names = ("coef", "hazard_ratio")


def test_hr_of_an_outside_family_leaves_out_its_intercept(logistic):
    assert logistic.columns == ["Intercept", "a", "b"]
    assert logistic.ratio_positions == [1, 2]
    res = ci.influence(_LogisticRatios(logistic), target="hr", method="vif")
    assert list(res.loo_change.columns) == ["HR a", "HR b"]
    coef = ci.influence(_LogisticRatios(logistic), method="vif").loo_change
    # first order: J delta, J = exp(b_j) in covariate j's column
    np.testing.assert_allclose(res.loo_change.to_numpy(),
                               coef[["a", "b"]].to_numpy() * np.exp(logistic.coef[1:]),
                               rtol=1e-12)


def test_protocol_defaults_of_an_outside_fit(logistic):
    assert isinstance(logistic, FitProtocol)
    assert logistic.covariates == ["a", "b"]
    assert logistic.training_columns == ["a", "b"]
    assert logistic.strata_names == () and logistic.cause is None
    assert not logistic.has_subjects and logistic.source_model is None
    assert logistic.nobs == 80 and logistic.unit_name == "patients"
    assert logistic.prediction_family is None
    assert ci.influence(logistic).unit_name == "patients"


def test_protocol_members_of_our_fits(rossi):
    X = rossi[["fin", "age"]]
    cox = ci.fit_cox(X, rossi["week"], rossi["arrest"], strata=rossi["race"])
    assert cox.index.equals(rossi.index) and cox.strata_names == ("race",)
    assert cox.covariates == ["fin", "age"] and cox.training_columns == ["fin", "age", "race"]
    assert cox.ratio_positions == [0, 1] and cox.cause is None and not cox.has_subjects
    subjects = ci.fit_cox(X, rossi["week"], rossi["arrest"], id=np.arange(len(X)))
    assert subjects.has_subjects
    aft = ci.fit_aft(X, rossi["week"], rossi["arrest"], id=np.arange(len(X)) // 2)
    assert aft.has_subjects and aft.covariates == ["fin", "age"]
    assert aft.training_columns == ["fin", "age"] and aft.ratio_positions == [1, 2]
    status = np.where(rossi["arrest"] == 1, 1 + (rossi["age"] > 25), 0)
    fg = ci.fit_fine_gray(X, rossi["week"], status, cause=2)
    assert fg.cause == 2 and fg.covariates == ["fin", "age"] and fg.index.equals(rossi.index)
    assert fg.nobs == len(rossi) and fg.unit_name == "patients"

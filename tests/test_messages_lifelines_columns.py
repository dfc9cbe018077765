"""A lifelines model given a DataFrame without one of its covariates (issue 39, messages):
an input error naming the missing columns and the model, not pandas' ``KeyError: "['age']
not in index"`` (or formulaic's ``FactorEvaluationError``), for ``CoxPHFitter``, an AFT
fitter and the generic parametric path."""
from __future__ import annotations

import re
import warnings

import pytest

pytest.importorskip("lifelines")

from lifelines import (  # noqa: E402
    CoxPHFitter,
    PiecewiseExponentialRegressionFitter,
    WeibullAFTFitter,
)
from lifelines.datasets import load_rossi  # noqa: E402

import coxinfluence as ci  # noqa: E402


def _fit(model, df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(df, "week", "arrest", **kw)


CASES = {
    "cox": (lambda df: _fit(CoxPHFitter(), df), "CoxPHFitter"),
    "cox_formula": (lambda df: _fit(CoxPHFitter(), df, formula="age + fin + C(race) + prio"),
                    "CoxPHFitter"),
    "weibull_aft": (lambda df: _fit(WeibullAFTFitter(), df), "WeibullAFTFitter"),
    "weibull_aft_formula": (lambda df: _fit(WeibullAFTFitter(), df, formula="age + prio"),
                            "WeibullAFTFitter"),
    "weibull_ancillary": (lambda df: _fit(WeibullAFTFitter(), df, ancillary=True),
                          "WeibullAFTFitter"),
    "piecewise": (lambda df: _fit(PiecewiseExponentialRegressionFitter(breakpoints=[20, 40]),
                                  df), "PiecewiseExponentialRegressionFitter"),
}


@pytest.fixture(scope="module")
def rossi():
    return load_rossi()


@pytest.mark.parametrize("case", list(CASES))
def test_a_missing_covariate_is_named(rossi, case):
    make, name = CASES[case]
    model = make(rossi)
    with pytest.raises(ci.CoxInputError) as err:
        ci.influence(model, rossi.drop(columns=["age"]), method="vif")
    msg = str(err.value)
    assert re.search(r"lacks the .*covariate column\(s\) \['age'\]", msg), msg
    assert name in msg, msg
    # two missing: both named, in one message
    with pytest.raises(ci.CoxInputError, match=r"\['age', 'prio'\]"):
        ci.influence(model, rossi.drop(columns=["prio", "age"]), method="vif")


def test_other_errors_are_not_reworded(rossi):
    """A DataFrame with every column passes the check; a missing outcome column keeps its
    own message."""
    model = CASES["cox"][0](rossi)
    with pytest.raises(ValueError, match=r"lacks the model's column\(s\) \['week'\]"):
        ci.influence(model, rossi.drop(columns=["week"]), method="vif")
    res = ci.influence(model, rossi, method="vif")
    assert res.theta_change.shape == (len(rossi), 7)


def test_new_patients_without_a_covariate_are_named():
    """``LifelinesSurvival`` of new patients lacking a covariate of a piecewise-exponential
    model (the generic parametric path): an input error naming the column, before any
    audit work."""
    rossi = load_rossi()
    model = CASES["piecewise"][0](rossi)
    new = rossi.drop(columns=["week", "arrest", "prio"]).iloc[:2]
    with pytest.raises(ci.CoxInputError, match=re.escape("lack the model's covariate "
                                                         "column(s) ['prio']")):
        ci.influence(model, rossi, method="vif",
                     target=ci.targets.Survival(new, [20.0]))

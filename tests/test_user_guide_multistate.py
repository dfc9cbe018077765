"""The numbers docs/user_guide/multistate.md quotes (issue 47, item 3)."""
from __future__ import annotations

import numpy as np
import pandas as pd

import coxinfluence as ci
from coxinfluence.models.multistate import simulate_illness_death


def test_the_pages_numbers():
    X, start, stop, state, id = simulate_illness_death(n_subjects=300, seed=7)
    state = pd.Series(pd.Categorical.from_codes(state, ["censored", "ill", "dead"]))
    fit = ci.fit_multistate(X, start, stop, state, id, initial_state="healthy")
    assert fit.states == ["healthy", "ill", "dead"]
    assert fit.transition_names == ["1:2", "1:3", "2:3"]
    plain = ci.fit_multistate(*simulate_illness_death(n_subjects=300, seed=7))
    np.testing.assert_array_equal(fit.coef, plain.coef)
    new = pd.DataFrame({"x1": [1.0], "x2": [0.0]})
    target = ci.targets.StateProbability(new, [20], state="dead")
    res = ci.influence(fit, target=target, method="vif")
    exact = res.exact()
    assert res.top(5, by="P(dead,20|0)").index.tolist() == [238, 3, 107, 105, 166]
    assert round(float(res.correlation(exact).iloc[0]), 5) == 0.99992

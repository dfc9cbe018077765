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


def test_the_weights_strata_and_istate_numbers():
    """The section on case weights, strata and initial states (its fit equals R's:
    checked by hand against coxph(..., weights = w, istate = istate) + strata(site) and
    survfit, and in general by tests/test_multistate_options_r.py)."""
    X, start, stop, state, id = simulate_illness_death(n_subjects=300, seed=7)
    state = pd.Series(pd.Categorical.from_codes(state, ["censored", "ill", "dead"]))
    df = X.assign(start=start, stop=stop, state=state, id=id)
    df["istate"] = np.where(df["id"].duplicated(), "ill", "healthy")
    ill = df.loc[df["id"].duplicated(), "id"].to_numpy()[::4]
    later = df["id"].isin(ill) & df["id"].duplicated()
    df.loc[later, "start"] = df.groupby("id")["start"].transform("min")[later]
    df = df[~df["id"].isin(ill) | later].copy()
    df["w"] = np.where(df["x2"] == 1, 2.0, 1.0)
    df["site"] = np.where(df["id"] % 2 == 0, "A", "B")
    fit2 = ci.fit_multistate(df[["x1", "x2"]], df["start"], df["stop"], df["state"],
                             df["id"], weights=df["w"], strata=df["site"],
                             istate=df["istate"])
    assert fit2.states == ["healthy", "ill", "dead"]
    np.testing.assert_array_equal(fit2.initial_distribution()[0].round(3),
                                  [[0.971, 0.029, 0.0], [0.843, 0.157, 0.0]])
    # R: coef(fit) and sqrt(diag(fit$var)), rounded as the page prints them
    np.testing.assert_array_equal(fit2.coef.round(3),
                                  [0.360, 0.205, 0.020, 0.002, 0.393, -0.335])
    np.testing.assert_array_equal(fit2.se.round(3), [0.093, 0.185, 0.113, 0.229, 0.131, 0.221])
    new2 = pd.DataFrame({"x1": [1.0, 1.0], "x2": [0.0, 0.0], "site": ["A", "B"]})
    p = fit2.predict_state_probabilities(new2, [10, 20]).round(3)
    np.testing.assert_array_equal(p.to_numpy(), [[0.382, 0.220, 0.398], [0.156, 0.149, 0.695],
                                                 [0.287, 0.335, 0.378], [0.118, 0.207, 0.675]])
    res2 = ci.influence(fit2, target=ci.targets.StateProbability(new2, [20], state="dead"),
                        method="vif")
    assert res2.correlation(res2.exact()).round(4).tolist() == [0.9998, 0.9999]

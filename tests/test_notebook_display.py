"""What a notebook shows (issue 24 item 4): ``CoxFit`` and ``InfluenceResult`` render as HTML
(the model table; the verification sentence and the top table), and a fit on a DataFrame
has named parameters (``params``)."""
from __future__ import annotations

from html import escape

import numpy as np
import pandas as pd

import coxinfluence as ci
from coxinfluence.demo import gbsg2_design


def _fit():
    X, t, e = gbsg2_design()
    return ci.fit_cox(X, t, e), X


def test_fit_on_a_frame_has_named_parameters():
    fit, X = _fit()
    assert isinstance(fit.params, pd.Series)
    assert list(fit.params.index) == list(X.columns)
    assert np.array_equal(fit.params.to_numpy(), fit.coef)
    assert fit.params["age"] == fit.coef[list(X.columns).index("age")]


def test_fit_renders_its_model_table():
    fit, X = _fit()
    html = fit._repr_html_()
    assert "<table" in html and f"n = {fit.n}" in html
    for name in X.columns:
        assert f"<th>{name}</th>" in html
    assert f"{fit.summary()['se(coef)'].iloc[0]:.4g}" in html


def test_result_renders_its_verification_and_top_table():
    fit, _ = _fit()
    res = ci.influence(fit)
    html = res._repr_html_()
    assert escape(res.verification.describe("patients")) in html
    assert "<table" in html
    top = res.top(10)
    for label in top.index:
        assert f"<th>{label}</th>" in html
    assert f"{top['likelihood_displacement'].iloc[0]:.4g}" in html
    vif_html = ci.influence(fit, method="vif")._repr_html_()
    assert "none refitted" in vif_html and "first-order estimates (vif)" in vif_html

"""The README's quick start (a lifelines ``CoxPHFitter`` audited by ``ci.influence``),
executed as written and checked against oracles: the patients it reports at the top are
the top by exact refits of every patient (``method="exact"``), their changes are
lifelines' own refits without each of them (tightened), and the sentence it prints is
the audit's verification."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

import coxinfluence as ci

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture(scope="module")
def quickstart():
    """The README's first Python block, executed once: its namespace and printed text."""
    section = README.read_text().split("## Quick start")[1].split("\n## ")[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace, buf = {}, io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, str(README), "exec"), namespace)
    return namespace, buf.getvalue()


def test_quick_start_is_short_and_audits_a_lifelines_model(quickstart):
    section = README.read_text().split("## Quick start")[1].split("\n## ")[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 10
    ns, _ = quickstart
    from lifelines import CoxPHFitter
    assert isinstance(ns["cph"], CoxPHFitter)
    assert ns["res"].source == "lifelines" and ns["res"].method == "auto"


def test_top_five_are_the_exact_top_five_and_lifelines_refits(quickstart):
    from lifelines import CoxPHFitter
    ns, printed = quickstart
    res, df = ns["res"], ns["df"]
    top = res.top(5)
    exact = ci.influence(ns["cph"], df, method="exact")
    assert list(top.index) == list(exact.top(5).index)
    assert res.verified.loc[top.index].all()
    # the changes shown are lifelines' own refits without the patient (tightened fits)
    opts = {"precision": 1e-12}
    full = CoxPHFitter().fit(df, duration_col="week", event_col="arrest", fit_options=opts)
    for label in top.index:
        refit = CoxPHFitter().fit(df.drop(index=label), duration_col="week",
                                  event_col="arrest", fit_options=opts)
        lifelines_change = (refit.params_ - full.params_).to_numpy()
        np.testing.assert_allclose(res.loo_change.loc[label].to_numpy(), lifelines_change,
                                   rtol=0, atol=1e-6)
    # what it prints: the verification sentence, then the top table
    first = printed.splitlines()[0]
    assert first == res.verification.describe()
    assert first.startswith(f"{int(res.verified.sum())} units refitted exactly")
    assert str(top.index[0]) in printed.splitlines()[2]

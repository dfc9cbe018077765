"""A ridge-penalised lifelines CoxPHFitter with delayed entry (``entry_col``) is audited
correctly (issue 24 item 9): exact leave-one-out changes equal lifelines refitted without
the row (same penalizer, same entry_col), and the docs do not say it is refused."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

lifelines = pytest.importorskip("lifelines")
ROOT = Path(__file__).resolve().parents[1]
PENALIZER = 0.1


@pytest.fixture(scope="module")
def ridge_entry():
    """Left-truncated data (entry times spread over the follow-up), a few ties."""
    from lifelines import CoxPHFitter
    rng = np.random.default_rng(3)
    n = 80
    X = rng.standard_normal((n, 3)) * [1.0, 2.0, 0.5]
    start = rng.uniform(0.0, 1.0, n)
    stop = np.round(start + rng.exponential(np.exp(-X @ [0.5, -0.3, 0.8])), 2)
    stop = np.maximum(stop, start + 0.01)
    event = (rng.random(n) < 0.75).astype(int)
    df = pd.DataFrame(X, columns=["a", "b", "c"], index=np.arange(100, 100 + n))
    df = df.assign(start=start, stop=stop, event=event)
    cph = CoxPHFitter(penalizer=PENALIZER).fit(df, "stop", "event", entry_col="start")
    return cph, df


def refit(df, **kw):
    from lifelines import CoxPHFitter
    return CoxPHFitter(penalizer=PENALIZER).fit(df, "stop", "event", **kw).params_.to_numpy()


def test_exact_equals_lifelines_refits_with_entry_col(ridge_entry):
    cph, df = ridge_entry
    res = ci.influence(cph, df, method="exact")
    assert list(res.loo_change.index) == list(df.index)
    # the rebuilt fit is lifelines' (to lifelines' convergence tolerance)
    np.testing.assert_allclose(res.fit.coef, cph.params_.to_numpy(), atol=1e-5)
    for i in (0, 7, 42, 79):
        dropped = df.drop(df.index[i])
        expected = refit(dropped, entry_col="start")
        ours = res.fit.coef + res.loo_change.iloc[i].to_numpy()
        np.testing.assert_allclose(ours, expected, atol=1e-5)
        # delayed entry matters here: the refit that ignores it is far away
        assert np.abs(ours - refit(dropped.drop(columns="start"))).max() > 1e-2


def test_other_methods_follow_exact_with_entry_col(ridge_entry):
    cph, df = ridge_entry
    exact = ci.influence(cph, df, method="exact")
    assert (ci.influence(cph, df, method="vif").correlation(exact) > 0.99).all()
    assert (ci.influence(cph, df, method="newton").correlation(exact)
            > 0.999).all()


def _sentences(text):
    """Markdown split into sentences and list items (line breaks inside one joined)."""
    text = re.sub(r"\n(?!\s*[-*] |\s*\n|#)", " ", text)
    return [s for part in text.split("\n") for s in re.split(r"(?<=\.)\s+(?=[A-Z`])", part)]


REFUSAL = re.compile(r"refus|not supported|unsupported|ValueError|NotImplementedError|"
                     r"rejected|cannot", re.I)


@pytest.mark.parametrize("doc", ["docs/conventions.md", "README.md", "ARCHITECTURE.md"])
def test_docs_do_not_say_entry_col_is_refused(doc):
    """No sentence of the docs names entry_col (or delayed entry) beside a refusal; the
    penalised-fits section of docs/conventions.md says entry_col is accepted."""
    text = (ROOT / doc).read_text()
    wrong = [s for s in _sentences(text)
             if re.search(r"entry_col|delayed entry", s, re.I) and REFUSAL.search(s)]
    assert not wrong, f"{doc} says entry_col is refused: {wrong}"
    if doc == "docs/conventions.md":
        section = text.split("## Penalised fits", 1)[1].split("\n## ", 1)[0]
        assert re.search(r"`entry_col`\) is accepted", section)

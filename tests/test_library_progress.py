"""The library's default progress bar (exact refits of more than 2000 units) follows the
terminal as the CLI does (issue 24 item 7): none on a non-terminal stderr (a log), unless
``progress=True``."""
from __future__ import annotations

import numpy as np

import coxinfluence as ci


def _fit(n=2100, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    t = rng.exponential(np.exp(-X @ [0.4, -0.2])) + 0.01
    e = (rng.uniform(size=n) < 0.8).astype(float)
    return ci.fit_cox(X, t, e)


def test_default_bar_is_silent_on_a_non_terminal_stderr(capsys):
    fit = _fit()
    ci.exact_loo(fit)                            # pytest's captured stderr is not a terminal
    assert "\r" not in capsys.readouterr().err
    ci.exact_loo(fit, progress=True)             # asked for: shown anyway
    assert "exact leave-one-out" in capsys.readouterr().err

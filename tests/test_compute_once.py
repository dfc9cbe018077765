"""One audit computes each shared quantity once (issue 23 item 3): ``ci.influence(fit)``
(method "auto") and its ``summary_frame()`` resolve the units once, form the risk-set
state at theta_hat once, its risk-set totals of ``[q, q a]`` once (the third derivative
and the information split), compute every unit's VIF once and the third derivative once,
for rows, subjects and clusters; ``method="exact"`` on the same result reuses them."""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pytest

import coxinfluence as ci
from coxinfluence.data import units as units_mod
from coxinfluence.influence_functions import cox_audit, stability
from coxinfluence.influence_functions import vif as vif_mod
from coxinfluence.likelihood import risk_sets
from coxinfluence.likelihood import terms as terms_mod
from coxinfluence.likelihood import third_derivative as third_mod
from coxinfluence.models import cox as cox_mod


@pytest.fixture
def counts(monkeypatch):
    """Call counters on the shared computations, at every module that holds a name."""
    n = {"units": 0, "state": 0, "vif": 0, "third": 0, "qa_totals": 0}

    def counted(key, fn):
        def wrapper(*args, **kwargs):
            n[key] += 1
            return fn(*args, **kwargs)
        return wrapper

    resolve = counted("units", units_mod.resolve_units)
    for mod in (units_mod, cox_audit, vif_mod, stability, cox_mod):
        monkeypatch.setattr(mod, "resolve_units", resolve)
    monkeypatch.setattr(risk_sets.RiskSets, "_state",
                        counted("state", risk_sets.RiskSets._state))
    # the VIF and the third derivative are read from their modules where they are used:
    # ``vif.vif_of_units`` (the Cox engine) and ``third_derivative.third_derivative`` (the
    # Cox engine's ``third``)
    monkeypatch.setattr(vif_mod, "vif_of_units", counted("vif", vif_mod.vif_of_units))
    monkeypatch.setattr(third_mod, "third_derivative",
                        counted("third", third_mod.third_derivative))
    totals = cached_property(counted("qa_totals", terms_mod.RiskSetState.totals_q_qa.func))
    totals.__set_name__(terms_mod.RiskSetState, "totals_q_qa")
    monkeypatch.setattr(terms_mod.RiskSetState, "totals_q_qa", totals)
    return n


def _data(seed=0, n=150):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    t = np.round(rng.exponential(np.exp(-X @ [0.5, -0.3, 0.2])), 1) + 0.1
    e = (rng.uniform(size=n) < 0.7).astype(float)
    return X, t, e


@pytest.mark.parametrize("unit", ["rows", "subjects", "clusters"])
def test_an_auto_audit_computes_each_shared_quantity_once(counts, unit):
    X, t, e = _data()
    kw, groups = {}, None
    if unit == "subjects":
        start = np.zeros_like(t)
        kw = {"start": start, "id": np.arange(len(t))}
    fit = ci.fit_cox(X, t, e, **kw)
    if unit == "clusters":
        groups = np.arange(len(t)) // 3
    for key in counts:
        counts[key] = 0
    res = ci.influence(fit, groups=groups)
    res.summary_frame()
    res.top(5)
    assert res.verified.sum() >= 10           # the refits ran, from the audit's start
    assert counts == {"units": 1, "state": 1, "vif": 1, "third": 1, "qa_totals": 1}
    # the information split reads the state's totals, not a copy of its own
    state = fit.risk_sets.state(fit.coef)
    assert res.model.information_parts._first is state.totals_q_qa


def test_exact_of_an_audit_reuses_its_model(counts):
    X, t, e = _data(1)
    fit = ci.fit_cox(X, t, e)
    res = ci.influence(fit, method="vif")
    assert not res.flags.to_numpy().all()     # flags computed (the VIF audit's own)
    before = dict(counts)
    exact = res.exact()
    assert exact.verified.all()
    # the exact refits start from the VIF and third derivative the audit already has
    assert counts["vif"] == before["vif"] and counts["units"] == before["units"]
    assert counts["state"] == before["state"]

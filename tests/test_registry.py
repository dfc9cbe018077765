"""The one registration point (``coxinfluence.influence_functions.registry``, issue 34
item 2): ``ci.influence`` and the low-level functions (``ci.vif``, ``ci.exact_loo``, ...)
dispatch a user's object to the family registered for it, and to nothing else.

Oracles: exact leave-one-out changes against refits by hand (``ci.fit_cox`` on the data
without the row; Newton's method written here for a logistic loss); the messages against
the registered families' own names and descriptions.
"""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.influence_functions import registry
from coxinfluence.influence_functions.cox_audit import CoxAudit
from coxinfluence.influence_functions.decomposable_audit import DecomposableFit
from coxinfluence.influence_functions.registry import Family, Resolved, register_family
from coxinfluence.models.cox import CoxFit


@pytest.fixture(autouse=True)
def restore_registry(monkeypatch):
    """Families registered by a test are gone after it (the registry is module state)."""
    monkeypatch.setattr(registry, "_FAMILIES", list(registry._FAMILIES))


@pytest.fixture(scope="module")
def cox_data():
    rng = np.random.default_rng(34)
    n = 40
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)},
                     index=pd.Index([f"u{i:02d}" for i in range(n)], name="unit"))
    time = rng.exponential(np.exp(-0.5 * X["a"].to_numpy()))
    event = (rng.random(n) < 0.8).astype(float)
    return X, time, event


class ToyFit:
    """A user's own fit class, unknown to the package: a Cox model under another name."""

    def __init__(self, X, time, event):
        self.inner = ci.fit_cox(X, time, event)


def _toy_family(name="toy", calls=None, **kw):
    def build(model, data, *, groups=None, robust=None, **options):
        if calls is not None:
            calls.append((name, options))
        fit = model.inner
        resolved = Resolved(fit, pd.DataFrame(index=fit.data.index), "toy library")
        return CoxAudit(fit, groups), registry.with_overrides(resolved, groups, robust)
    return Family(name, lambda m: isinstance(m, ToyFit), build,
                  description=f"a ToyFit ({name})", **kw)


def test_a_registered_family_is_dispatched_to(cox_data):
    X, time, event = cox_data
    toy = ToyFit(X, time, event)
    with pytest.raises(TypeError, match="unsupported model type"):
        ci.influence(toy)
    calls = []
    register_family(_toy_family(calls=calls))
    res = ci.influence(toy, method="exact")
    assert calls == [("toy", {})] and res.source == "toy library"
    # the family's seam gives the changes: exact refits by hand on the data without a row
    for label in ["u00", "u07", "u31"]:
        keep = X.index != label
        by_hand = ci.fit_cox(X[keep], time[keep], event[keep]).coef - toy.inner.coef
        np.testing.assert_allclose(res.theta_change.loc[label].to_numpy(), by_hand,
                                   rtol=0, atol=1e-8)


def test_an_unknown_model_is_refused_listing_every_registered_family(cox_data):
    register_family(_toy_family())
    with pytest.raises(TypeError) as err:
        ci.influence(object())
    message = str(err.value)
    assert "builtins.object" in message
    for family in registry.families():
        assert family.description in message, family.name
    assert "a ToyFit (toy)" in message


def test_an_option_of_another_family_is_refused_naming_it(cox_data):
    X, time, event = cox_data
    fit = ci.fit_cox(X, time, event)
    # scikit-survival's y= given for a CoxFit
    with pytest.raises(ValueError, match=r"y= not available for a cox model; an option of "
                                         r"scikit-survival models"):
        ci.influence(fit, y=np.ones(3))
    # a test family's own option, given to another family's model
    register_family(_toy_family(options=("flavour",)))
    with pytest.raises(ValueError, match=r"flavour= not available for a cox model.*an "
                                         r"option of toy models"):
        ci.influence(fit, flavour="sweet")
    # and its options reach its build; an option it does not take is refused
    calls = []
    register_family(_toy_family(options=("flavour",), calls=calls))
    ci.influence(ToyFit(X, time, event), method="vif", flavour="sweet")
    assert calls == [("toy", {"flavour": "sweet"})]
    with pytest.raises(ValueError, match=r"colour= not available for a toy model \(its "
                                         r"options: flavour=\)"):
        ci.influence(ToyFit(X, time, event), colour="red")


def test_registering_under_the_same_name_replaces(cox_data):
    X, time, event = cox_data
    calls = []
    register_family(_toy_family("toy", calls=calls))
    first = len(registry.families())
    replacement = _toy_family("toy", calls=calls)
    assert register_family(replacement) is replacement
    assert len(registry.families()) == first
    assert [f for f in registry.families() if f.name == "toy"] == [replacement]
    ci.influence(ToyFit(X, time, event), method="vif")
    assert len(calls) == 1
    with pytest.raises(TypeError, match="expected a Family"):
        register_family("toy")


# ------------------------------------------- the one dispatch rule (issue 45, item 1)

class MyCoxFit(CoxFit):
    """A user's subclass of ``CoxFit`` (a fitted Cox model with the class changed)."""


def _my_cox(X, time, event):
    fit = copy.copy(ci.fit_cox(X, time, event))
    fit.__class__ = MyCoxFit
    return fit


def _cox_family(name, fit_class, source, calls=None):
    def build(model, data, *, groups=None, robust=None):
        if calls is not None:
            calls.append(name)
        resolved = Resolved(model, pd.DataFrame(index=model.data.index), source)
        return CoxAudit(model, groups), registry.with_overrides(resolved, groups, robust)
    return Family(name, fit_class, build, description=f"a {source} fit")


def test_a_family_for_a_subclass_of_coxfit_is_reached(cox_data):
    """The most specific registered class wins, whatever the order of registration: a
    family for a subclass of ``CoxFit`` takes its fits, the built-in ``cox`` family the
    others, even after ``cox`` is registered again (and so is the latest)."""
    X, time, event = cox_data
    mine, plain = _my_cox(X, time, event), ci.fit_cox(X, time, event)
    assert registry.family_of(mine).name == "cox"        # before: CoxFit's family
    calls = []
    family = register_family(_cox_family("my cox", MyCoxFit, "my library", calls))
    assert family.fit_class is MyCoxFit and family.accepts(mine)
    register_family(registry.family_of(plain))            # cox again: now the latest
    assert registry.family_of(mine) is family
    assert registry.family_of(plain).name == "cox"
    res = ci.influence(mine, method="exact")
    assert calls == ["my cox"] and res.source == "my library"
    # the family's seam gives the changes: a refit by hand without a row
    keep = X.index != "u05"
    by_hand = ci.fit_cox(X[keep], time[keep], event[keep]).coef - mine.coef
    np.testing.assert_allclose(res.theta_change.loc["u05"].to_numpy(), by_hand,
                               rtol=0, atol=1e-8)
    assert ci.influence(plain, method="vif").source == "coxinfluence"


def test_predicates_rank_after_classes_and_the_latest_registration_wins_a_tie(cox_data):
    X, time, event = cox_data
    fit = ci.fit_cox(X, time, event)
    anything = register_family(Family("anything", lambda m: True, lambda *a, **k: None))
    assert anything.fit_class is None
    assert registry.family_of(fit).name == "cox"           # a class beats any predicate
    assert registry.family_of(object()) is anything
    other = register_family(Family("anything else", lambda m: True, lambda *a, **k: None))
    assert registry.family_of(object()) is other           # two predicates: the latest
    again = register_family(Family("anything", lambda m: True, lambda *a, **k: None))
    assert registry.family_of(object()) is again           # a re-registration replaces
    assert [f.name for f in registry.families()].count("anything") == 1
    # a class entry narrowed by a predicate: both must accept
    narrow = register_family(Family("narrow", lambda m: m.n > 1000, lambda *a, **k: None,
                                    fit_class=MyCoxFit))
    assert registry.family_of(_my_cox(X, time, event)).name == "cox"
    assert narrow.fit_class is MyCoxFit


def test_the_same_rule_picks_residuals_and_targets(cox_data, monkeypatch):
    """Residuals and targets dispatch by the same function
    (:func:`coxinfluence.data.dispatch.choose`): the most specific class wins, a
    re-registration replaces."""
    from coxinfluence.audit import target_base
    from coxinfluence.diagnostics import register_residuals
    from coxinfluence.diagnostics import registry as residual_registry
    monkeypatch.setattr(residual_registry, "_TABLE", dict(residual_registry._TABLE))
    monkeypatch.setattr(target_base, "_IMPLEMENTATIONS", dict(target_base._IMPLEMENTATIONS))
    X, time, event = cox_data
    mine, plain = _my_cox(X, time, event), ci.fit_cox(X, time, event)
    martingale = ci.residuals(plain)
    pd.testing.assert_series_equal(ci.residuals(mine), martingale)
    register_residuals(MyCoxFit, ["twice"], lambda fit, kind, **kw: 2 * martingale,
                       model="mine")
    pd.testing.assert_series_equal(ci.residuals(mine), 2 * martingale)
    pd.testing.assert_series_equal(ci.residuals(plain), martingale)
    register_residuals(MyCoxFit, ["thrice"], lambda fit, kind, **kw: 3 * martingale)
    pd.testing.assert_series_equal(ci.residuals(mine), 3 * martingale)
    assert residual_registry.residual_kinds(mine) == ("thrice",)

    @ci.targets.register_target
    class MyLinearPredictor(ci.targets.Target):
        name = "my_linear_predictor"
        quantity = "linear_predictor"
        fit_type = MyCoxFit

    lp = ci.targets.LinearPredictor(X.iloc[:2])
    assert target_base.implementation_of("linear_predictor", fit=mine) is MyLinearPredictor
    assert target_base.implementation_of("linear_predictor", fit=plain).__name__ != (
        "MyLinearPredictor")
    assert lp.implementation(fit=plain).name == "linear_predictor"


def test_one_registration_declares_every_part(cox_data, monkeypatch):
    """``coxinfluence.registration.register``: the family, its targets, its residuals and
    its command-line entry in one call, each forwarded to its table."""
    from coxinfluence.audit import target_base
    from coxinfluence.cli import family_registry as fr
    from coxinfluence.diagnostics import registry as residual_registry
    from coxinfluence.registration import register
    monkeypatch.setattr(residual_registry, "_TABLE", dict(residual_registry._TABLE))
    monkeypatch.setattr(target_base, "_IMPLEMENTATIONS", dict(target_base._IMPLEMENTATIONS))
    monkeypatch.setattr(fr, "CLI_FAMILIES", dict(fr.CLI_FAMILIES))
    X, time, event = cox_data
    mine = _my_cox(X, time, event)

    class MyLinearPredictor(ci.targets.Target):
        name = "my_linear_predictor"
        quantity = "linear_predictor"
        fit_type = MyCoxFit

    def zero(fit, kind, *, collapse=None, weighted=None):
        return pd.Series(np.zeros(fit.n), index=fit.data.index, name=kind)

    cli = fr.CliFamily("my_cox", lambda data, args: None, models=("mycox",))
    family = _cox_family("my cox", MyCoxFit, "my library")
    assert register(family, targets=(MyLinearPredictor,), residuals=(["zero"], zero),
                    cli=cli) is family
    assert registry.family_of(mine) is family
    assert target_base.implementation_of("linear_predictor", fit=mine) is MyLinearPredictor
    assert residual_registry.residual_kinds(mine) == ("zero",)
    assert (ci.residuals(mine) == 0).all()
    assert fr.CLI_FAMILIES["my_cox"] is cli
    # residuals keyed by a class: a family registered by a predicate names its fits' class
    by_name = Family("by name", lambda m: False, None)
    with pytest.raises(ValueError, match="registered by a predicate"):
        register(by_name, residuals=(["zero"], zero))
    assert by_name not in registry.families()
    register(by_name, residuals=(MyCoxFit, ["none"], zero))
    assert residual_registry.residual_kinds(mine) == ("none",)


def test_low_level_functions_dispatch_through_the_registry(cox_data):
    """``ci.vif`` etc.: through the family's seam, built by its ``low_level`` where it
    registers one; a family whose models keep no training data is refused."""
    X, time, event = cox_data
    toy = ToyFit(X, time, event)
    register_family(_toy_family())
    # the generic path: the family's seam, built without data
    loo = np.asarray(ci.exact_loo(toy))
    for i in [3, 19]:
        keep = np.arange(len(time)) != i
        by_hand = ci.fit_cox(X[keep], time[keep], event[keep]).coef
        np.testing.assert_allclose(loo[i], by_hand, rtol=0, atol=1e-8)
    assert np.shape(ci.vif(toy)) == (len(time), 2)
    # the family's own seam builder, called with the caller's arguments
    seen = []

    def low_level(model, groups, what, **kw):
        seen.append((what, kw))
        return CoxAudit(model.inner, groups, kw["method"])
    register_family(_toy_family(low_level=low_level))
    cox = np.asarray(ci.vif(toy.inner, method="direct"))
    np.testing.assert_array_equal(np.asarray(ci.vif(toy, method="direct")), cox)
    # the low-level functions refuse a fit without a maximum (issue 44): refuse=True
    assert seen == [("vif", {"method": "direct", "refuse": True})]
    # a family whose models keep no training data
    register_family(_toy_family(needs_data=True))
    with pytest.raises(TypeError, match=r"keeps no training data: use "
                                        r"ci.influence\(model, data"):
        ci.vif(toy)
    # an object no family accepts
    with pytest.raises(TypeError, match=r"vif: expected a fit that keeps its training data"):
        ci.vif(object())


# ------------------------------------------------- a DecomposableFit passed directly

class _Logistic:
    """Logistic regression's loss, summed over rows with presence weights ``b``."""

    def __init__(self, X, y):
        self.X, self.y = X, y

    def _p(self, theta):
        return 1.0 / (1.0 + np.exp(-(self.X @ theta)))

    def value(self, theta, b):
        eta = self.X @ theta
        return float(np.sum(b * (np.logaddexp(0.0, eta) - self.y * eta)))

    def gradient(self, theta, b):
        return self.X.T @ (b * (self._p(theta) - self.y))

    def hessian(self, theta, b):
        p = self._p(theta)
        return (self.X * (b * p * (1 - p))[:, None]).T @ self.X

    def row_gradients(self, theta):
        return self.X * (self._p(theta) - self.y)[:, None]

    def row_hessians(self, theta):
        p = self._p(theta)
        return np.einsum("i,ij,ik->ijk", p * (1 - p), self.X, self.X)

    def third(self, theta):
        p = self._p(theta)
        return np.einsum("i,ij,ik,il->jkl", p * (1 - p) * (1 - 2 * p), self.X, self.X,
                         self.X)


def _newton(X, y, steps=50):
    """Logistic regression's maximum likelihood by Newton's method (the oracle)."""
    theta = np.zeros(X.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(X @ theta)))
        step = np.linalg.solve((X * (p * (1 - p))[:, None]).T @ X, X.T @ (y - p))
        theta = theta + step
        if np.abs(step).max() < 1e-14:
            break
    return theta


@pytest.fixture(scope="module")
def logistic():
    rng = np.random.default_rng(341)
    n = 60
    X = np.column_stack([np.ones(n), rng.normal(size=n), rng.normal(size=n)])
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.3 + X[:, 1] - 0.5 * X[:, 2])))).astype(float)
    fit = DecomposableFit(_Logistic(X, y), _newton(X, y), ["const", "x1", "x2"],
                          pd.RangeIndex(n), tol=1e-9, model_name="logistic regression")
    return X, y, fit


def test_a_decomposable_fit_passed_directly_is_a_registered_family(logistic):
    X, y, fit = logistic
    assert registry.family_of(fit).name == "decomposable"
    loo = ci.exact_loo(fit)
    for i in [0, 17, 42]:
        keep = np.arange(len(y)) != i
        np.testing.assert_allclose(loo.loc[i].to_numpy(), _newton(X[keep], y[keep]),
                                   rtol=0, atol=1e-7)
    # decomposable: the VIF is Reid's IF exactly (the paper's Section 3.5)
    np.testing.assert_allclose(ci.vif(fit), ci.reid_influence(fit), rtol=1e-12, atol=0)


def test_a_decomposable_fit_passed_directly_is_audited(logistic):
    X, y, fit = logistic
    groups = np.arange(len(y)) % 12
    res = ci.influence(fit, method="exact", groups=groups)
    assert res.unit_name == "clusters" and len(res.theta_change) == 12
    keep = groups != 5
    np.testing.assert_allclose(res.theta_change.loc[5].to_numpy(),
                               _newton(X[keep], y[keep]) - fit.coef, rtol=0, atol=1e-7)


# ------------------------------------------------------------------ its documentation

#: the registry's public names, and those of the modules around it that
#: tests/test_docstrings.py (coxinfluence.__all__) does not reach
DOCUMENTED = ([f"coxinfluence.influence_functions.registry.{n}" for n in registry.__all__]
              + [f"coxinfluence.integrations.{n}"
                 for n in ("resolve", "check_agreement", "lifelines_design")]
              + [f"coxinfluence.data.dispatch.{n}" for n in ("choose", "rank", "replace")]
              + ["coxinfluence.registration.register"]
              + ["coxinfluence.influence_functions.any_fit.family_seam",
                 "coxinfluence.audit.run.TopNotVerifiedWarning"])


@pytest.mark.parametrize("dotted", DOCUMENTED)
def test_public_names_are_documented_and_their_examples_run(dotted):
    """numpydoc's validator (as tests/test_docstrings.py: no GL08, PR01, PR02, RT01, EX01)
    and the Examples as doctests, which leave the registry as they found it."""
    import doctest
    import importlib

    from numpydoc.validate import validate
    errors = [f"{code}: {msg}" for code, msg in validate(dotted)["errors"]
              if code in {"GL08", "PR01", "PR02", "RT01", "EX01"}]
    assert not errors, errors
    module, name = dotted.rsplit(".", 1)
    before = registry.families()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS
                                   | doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(getattr(importlib.import_module(module), name),
                                             dotted, globs={"ci": ci, "np": np, "pd": pd}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert registry.families() == before

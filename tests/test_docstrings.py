"""The public API documents itself in numpydoc form, and its examples run (issue 36).

The public API: every function and class in ``coxinfluence.__all__``, the public
functions and classes of the modules it names (``ci.targets``, ``ci.datasets``,
``ci.metrics``), and the public methods and properties of those classes.

- Functions and classes: numpydoc's validator reports none of GL08 (no docstring), PR01
  (a parameter not documented), PR02 (a documented parameter that does not exist), RT01
  (no Returns section; functions) and EX01 (no Examples section).
- Methods: none of GL08, PR01, PR02; RT01 for methods that are not properties; and an
  Examples section on each (issue 45; the pending exceptions are listed below).
- Every Examples section runs as a doctest (``ci``, ``np``, ``pd`` imported), its printed
  output compared with ELLIPSIS and NORMALIZE_WHITESPACE.
"""
from __future__ import annotations

import doctest
import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
from numpydoc.validate import validate

import coxinfluence as ci

PACKAGE = "coxinfluence"
OBJECT_CODES = {"GL08", "PR01", "PR02", "RT01", "EX01"}
METHOD_CODES = {"GL08", "PR01", "PR02", "RT01"}


def _ours(obj):
    return (getattr(obj, "__module__", "") or "").startswith(PACKAGE)


def _public_objects():
    """(dotted name, object) of the functions and classes of the public API."""
    out = {}
    for name in ci.__all__:
        obj = getattr(ci, name)
        if inspect.ismodule(obj):
            for sub in getattr(obj, "__all__", [n for n in vars(obj) if not n.startswith("_")]):
                member = getattr(obj, sub)
                if (inspect.isfunction(member) or inspect.isclass(member)) and _ours(member):
                    out.setdefault(f"{obj.__name__}.{sub}", member)
        elif inspect.isfunction(obj) or inspect.isclass(obj):
            out[f"{PACKAGE}.{name}"] = obj
    return out


def _public_methods(objects):
    """(dotted name, kind) of the public methods and properties of the public classes,
    those defined in this package (inherited from pandas, Exception, ... excluded)."""
    out = {}
    for dotted, cls in objects.items():
        if not inspect.isclass(cls) or issubclass(cls, (Warning, Exception)):
            continue
        for attr in dir(cls):
            if attr.startswith("_"):
                continue
            raw = inspect.getattr_static(cls, attr)
            owner = next((k for k in cls.__mro__ if attr in vars(k)), None)
            if owner is None or not _ours(owner):
                continue
            if isinstance(raw, property) or type(raw).__name__ == "cached_property":
                out[f"{dotted}.{attr}"] = "property"
            elif inspect.isfunction(raw) or isinstance(raw, (staticmethod, classmethod)):
                out[f"{dotted}.{attr}"] = "method"
    return out


OBJECTS = _public_objects()
METHODS = _public_methods(OBJECTS)


def _errors(dotted, codes):
    return [f"{code}: {msg}" for code, msg in validate(dotted)["errors"] if code in codes]


@pytest.mark.parametrize("dotted", sorted(OBJECTS))
def test_public_object_is_documented(dotted):
    codes = OBJECT_CODES - ({"RT01"} if inspect.isclass(OBJECTS[dotted]) else set())
    assert _errors(dotted, codes) == []


@pytest.mark.parametrize("dotted", sorted(METHODS))
def test_public_method_is_documented(dotted):
    codes = METHOD_CODES - ({"RT01"} if METHODS[dotted] == "property" else set())
    assert _errors(dotted, codes) == []


def _docstring_holders():
    """Every public object and method, by dotted name, with its docstring's owner."""
    holders = dict(OBJECTS)
    for dotted in METHODS:
        cls_name, attr = dotted.rsplit(".", 1)
        raw = inspect.getattr_static(OBJECTS[cls_name], attr)
        holders[dotted] = raw.fget if isinstance(raw, property) else getattr(
            raw, "func", getattr(raw, "__func__", raw))
    return holders


HOLDERS = _docstring_holders()
WITH_EXAMPLES = sorted(d for d, obj in HOLDERS.items()
                       if ">>>" in (inspect.getdoc(obj) or ""))


@pytest.mark.parametrize("dotted", WITH_EXAMPLES)
def test_examples_run(dotted):
    obj = HOLDERS[dotted]
    globs = {"ci": ci, "np": np, "pd": pd}
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS
                                   | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(obj, dotted, globs=globs)
    assert tests, dotted
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{dotted}: {result.failed} of {result.attempted} failed"


def test_the_scope_is_the_public_api():
    """The checks above cover every name of ``__all__`` that is a function or class, the
    functions of the public modules, and the fits' methods."""
    for name in ("fit_cox", "influence", "InfluenceResult", "CoxFit", "vif"):
        assert f"{PACKAGE}.{name}" in OBJECTS
    assert "coxinfluence.targets.Survival" in OBJECTS
    assert "coxinfluence.CoxFit.conf_int" in METHODS
    assert "coxinfluence.InfluenceResult.top" in METHODS


def _methods_without_examples():
    return sorted(d for d in METHODS if ">>>" not in (inspect.getdoc(HOLDERS[d]) or ""))


# Issue 45: an Examples section on every public method and property (203 had none before
# it), each run by test_examples_run above. The last exceptions, the methods of
# ``ci.targets.StateProbability``, have theirs now. Add none.
EXAMPLES_PENDING = frozenset()


def test_every_public_method_has_examples():
    missing = _methods_without_examples()
    assert [d for d in missing if d not in EXAMPLES_PENDING] == [], (
        "public methods without an Examples section (numpydoc, runnable `>>>` lines)")
    assert EXAMPLES_PENDING <= set(METHODS), "a pending name is no public method now"
    done = sorted(EXAMPLES_PENDING - set(missing))
    if done:
        warnings.warn(f"{done} have an Examples section now: remove them from "
                      "EXAMPLES_PENDING in tests/test_docstrings.py", stacklevel=1)


def test_the_competing_risks_families_are_in_scope():
    """The cause-specific family (its fit function, fit, and target) is public API, so the
    checks above (documentation, Examples, doctests) cover it."""
    for name in ("fit_cause_specific", "CauseSpecificFit", "fit_multistate", "MultiStateFit",
                 "targets.AbsoluteRisk", "targets.StateProbability"):
        assert f"{PACKAGE}.{name}" in OBJECTS, name
    for name in ("CauseSpecificFit.predict_absolute_risk", "CauseSpecificFit.influence",
                 "CauseSpecificFit.summary", "targets.AbsoluteRisk.value",
                 "targets.AbsoluteRisk.jacobian", "targets.AbsoluteRisk.refit_values"):
        assert f"{PACKAGE}.{name}" in METHODS, name
        assert f"{PACKAGE}.{name}" in WITH_EXAMPLES, name

"""The targets' registry after the families' move out of the audit (issue 34, item 2): the
generic target modules import no family, the families register themselves on
``import coxinfluence``, a string target resolves through the registry (``aliases``), and
the list of a model's targets is written from what each target says (``ask``)."""
import ast
import pathlib
import sys

import numpy as np
import pytest
from lifelines.datasets import load_rossi

import coxinfluence as ci
from coxinfluence.audit import target_base
from coxinfluence.audit import targets as generic

ROOT = pathlib.Path(ci.__file__).parent
GENERIC = [ROOT / "audit" / "targets.py", ROOT / "audit" / "target_base.py"]


def _imported(path):
    """Every module a file imports (at any depth: lazy imports in functions too)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


@pytest.mark.parametrize("path", GENERIC, ids=lambda p: p.name)
def test_the_generic_targets_import_no_model_family(path):
    """The generic modules read only the audit's own base and the data layer (the new
    patients' checks): no model, likelihood, integration or family module."""
    pkgs = {m for m in _imported(path) if m.startswith("coxinfluence")}
    assert pkgs and all(m.startswith(("coxinfluence.audit.", "coxinfluence.data."))
                        for m in pkgs), pkgs


@pytest.mark.parametrize("path", GENERIC, ids=lambda p: p.name)
def test_the_generic_targets_have_no_probes_or_type_names(path):
    calls = [n.func.id for n in ast.walk(ast.parse(path.read_text()))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert "getattr" not in calls and "hasattr" not in calls
    assert "__name__" not in path.read_text()


def test_the_old_module_paths_are_gone_and_the_families_are_registered():
    for old in ("aft_targets", "fine_gray_targets", "lifelines_targets", "sksurv_targets",
                "deprecated_targets", "new_patients"):
        assert not (ROOT / "audit" / f"{old}.py").exists()
        assert f"coxinfluence.audit.{old}" not in sys.modules
    where = {name: cls.__module__ for name, cls in target_base._IMPLEMENTATIONS.items()}
    # every name a seam lists for a quantity of new patients, registered by its family
    assert where["survival"] == "coxinfluence.families.cox_targets"
    assert where["relative_risk"] == "coxinfluence.families.cox_targets"
    assert where["aft_survival"] == "coxinfluence.families.aft_targets"
    assert where["time_ratio"] == "coxinfluence.families.aft_targets"
    assert where["lifelines_survival"] == "coxinfluence.families.lifelines_targets"
    assert where["risk_score"] == "coxinfluence.families.sksurv_targets"
    assert where["cumulative_incidence"] == "coxinfluence.families.fine_gray_targets"
    # the public names are the families' classes
    assert ci.targets.RelativeRisk.__module__ == "coxinfluence.families.cox_targets"
    assert ci.targets.TimeRatios.__module__ == "coxinfluence.families.aft_targets"
    assert ci.CumulativeIncidence is ci.targets.CumulativeIncidence
    assert issubclass(ci.AFTSurvival, ci.targets.AFTSurvival)


@pytest.mark.parametrize("name, cls", [
    ("coef", "Coefficients"), ("Coefficients", "Coefficients"), ("hr", "HazardRatios"),
    ("HAZARD_RATIOS", "HazardRatios"), ("tr", "TimeRatios"), ("time_ratio", "TimeRatios")])
def test_string_targets_resolve_through_the_registry(name, cls):
    assert type(generic.resolve_target(name)) is getattr(ci.targets, cls)


def test_an_unknown_string_is_refused_listing_the_models_targets():
    with pytest.raises(ValueError, match=r"unknown target 'survival' for this model \(toy\): "
                                         r"its targets are 'coef', 'tr', or "
                                         r"ci.targets.Quantile\(X_new, p\)"):
        generic.resolve_target("survival", ("coef", "time_ratio", "survival_quantile"), "toy")


def test_a_registered_alias_and_ask_reach_the_audit(monkeypatch):
    """A target registered with an alias is what ``target="<alias>"`` resolves to, and
    its ``ask`` is how the list of targets names it."""
    monkeypatch.setattr(target_base, "_IMPLEMENTATIONS", dict(target_base._IMPLEMENTATIONS))
    monkeypatch.setattr(target_base, "_ALIASES", dict(target_base._ALIASES))

    @ci.targets.register_target
    class Doubled(ci.targets.Target):
        name = "doubled"
        quantity = "doubled"
        aliases = ("2x",)
        ask = "'2x'"

        def columns(self, fit):
            return [f"2 {c}" for c in fit.columns]

        def value(self, fit, theta):
            return 2 * np.asarray(theta, dtype=np.float64)

        def jacobian(self, fit):
            return 2 * np.eye(len(fit.coef))

    assert generic.describe_targets(("coef", "doubled", "relative_risk")) == (
        "'coef', '2x', or ci.targets.RelativeRisk(X_new)")
    assert isinstance(generic.resolve_target("2X"), Doubled)
    with pytest.raises(ValueError, match="unknown target '3x'"):
        generic.resolve_target("3x")


def test_a_dispatched_target_used_on_a_fit_no_family_evaluates():
    rossi = load_rossi()
    X = rossi[["fin", "age", "prio"]]
    fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    with pytest.raises(ValueError, match="target 'survival_quantile' is not available for "
                                         "this model; no model family registered for it "
                                         "evaluates on this fit"):
        ci.targets.Quantile(X.iloc[:1]).value(fit, fit.coef[None, :])


def test_the_one_dispatch_rule_picks_the_implementation(monkeypatch):
    """Issue 45: an implementation for the fit's own class beats one for a base class
    whatever the order of registration; one that defines ``evaluates`` only (a predicate)
    ranks after every class; a name registered again replaces its class."""
    from coxinfluence.models.cox import CoxFit
    monkeypatch.setattr(target_base, "_IMPLEMENTATIONS", dict(target_base._IMPLEMENTATIONS))
    rossi = load_rossi()
    fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])

    def implementation(name, fit_type=None, predicate=None):
        attrs = {"name": name, "quantity": "toy_quantity", "fit_type": fit_type}
        if predicate is not None:
            attrs["evaluates"] = classmethod(lambda cls, f: predicate(f))
        return ci.targets.register_target(type(name, (ci.targets.Target,), attrs))

    anything = implementation("toy_any", predicate=lambda f: True)
    assert target_base.implementation_of("toy_quantity", fit=fit) is anything
    for_cox = implementation("toy_cox", fit_type=CoxFit)
    for_object = implementation("toy_object", fit_type=object)   # registered later
    assert target_base.implementation_of("toy_quantity", fit=fit) is for_cox
    assert target_base.implementation_of("toy_quantity", fit=1.5) is for_object
    del target_base._IMPLEMENTATIONS["toy_object"]
    assert target_base.implementation_of("toy_quantity", fit=1.5) is anything
    again = implementation("toy_cox", fit_type=CoxFit)
    assert target_base.implementation_of("toy_quantity", fit=fit) is again
    assert list(target_base._IMPLEMENTATIONS.values()).count(for_cox) == 0

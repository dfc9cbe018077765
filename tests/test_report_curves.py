"""The report's prediction curves (issue 47, item 4): for cause-specific and multi-state
fits, the reference patient's absolute-risk or state-occupancy curves from the full fit
and refitted without each of the top units, one figure with a caption. The data behind
the figure (``coxinfluence.families.curves.curves_of``) is checked, not its pixels: the
full curves are ``predict_absolute_risk`` / ``predict_state_probabilities`` of the fit,
and each refitted curve is the same prediction of the model fitted again, by the public
fitter, on the data without the unit. The report finds the curves through a table
dispatched on the fit (``register_curves``), never by naming a family."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.families.curves import (
    CURVES,
    Curves,
    curve_units,
    curves_figure,
    curves_of,
    curves_part,
    refitted_coefficients,
    register_curves,
)
from coxinfluence.report import build_report

FIXTURES = Path(__file__).parent / "fixtures"
PBC = pd.read_csv(FIXTURES / "r_cause_specific" / "data_pbc.csv").iloc[:160]
SIM = pd.read_csv(FIXTURES / "r_multistate" / "data_sim.csv")
#: refits converge to a gradient of about 1e-10: predictions agree to far below this
ATOL = 1e-7


def _quiet(function, *args, **kwargs):
    """Predictions past a refit's last event time warn (flat there, as the curves)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.TargetBeyondFollowUpWarning)
        return function(*args, **kwargs)


@pytest.fixture(scope="module")
def cause_specific():
    X = PBC[["age", "logbili"]]
    fit = ci.fit_cause_specific(X, PBC["time"], PBC["status"])
    return X, fit


def _cs_refit(X, drop):
    keep = ~X.index.isin(drop)
    return ci.fit_cause_specific(X[keep], PBC["time"][keep], PBC["status"][keep])


def test_absolute_risk_curves_are_the_predictions_of_the_full_and_refitted_fits(
        cause_specific):
    """Target coef: the curves of cause 1 (the default) at the covariate means over every
    event time, refitted without the top 3 by likelihood displacement."""
    X, fit = cause_specific
    res = ci.influence(fit, method="vif")
    curves = curves_of(res)
    assert isinstance(curves, Curves)
    mean = X.mean().to_frame("mean").T
    times = np.unique(np.concatenate([[0.0], PBC["time"][PBC["status"] > 0]]))
    np.testing.assert_array_equal(curves.times, times)
    assert list(curves.full.columns) == ["F1(t|mean)"]
    want = _quiet(fit.predict_absolute_risk, mean, times, cause=1).to_numpy().ravel()
    np.testing.assert_allclose(curves.full["F1(t|mean)"], want, rtol=0, atol=1e-12)
    top = list(res.top(3).index)
    assert list(curves.refitted) == top
    for label, frame in curves.refitted.items():
        refit = _cs_refit(X, [label])
        want = _quiet(refit.predict_absolute_risk, mean, times, cause=1).to_numpy().ravel()
        np.testing.assert_allclose(frame["F1(t|mean)"], want, rtol=0, atol=ATOL)
        # the deletion moves the curve far beyond the agreement asked
        assert np.abs(frame["F1(t|mean)"] - curves.full["F1(t|mean)"]).max() > 100 * ATOL


def test_the_audited_absolute_risk_chooses_the_patient_cause_and_units(cause_specific):
    """Target AbsoluteRisk(new, cause=2): its first patient, cause 2, the top 3 by the
    target's change; the refits are the audit's own (method auto) where it has them."""
    X, fit = cause_specific
    new = X.iloc[[4, 8]]
    res = ci.influence(fit, target=ci.targets.AbsoluteRisk(new, [1000, 2000], cause=2))
    curves = curves_of(res)
    labels = list(res.top(3, by="target").index)
    assert list(curves.refitted) == labels == list(curve_units(res))
    assert curves.patient == str(new.index[0])
    theta, codes, ok = refitted_coefficients(res, labels)
    assert ok.all()
    own = dict(zip(res.refits.codes.tolist(), res.refits.theta))
    for c in codes:                   # auto refitted every unit for the target (n <= 5000)
        np.testing.assert_array_equal(theta[c], own[int(c)])
    times = curves.times
    column = f"F2(t|{new.index[0]})"
    want = _quiet(fit.predict_absolute_risk, new.iloc[[0]], times, cause=2).to_numpy().ravel()
    np.testing.assert_allclose(curves.full[column], want, rtol=0, atol=1e-12)
    for label, frame in curves.refitted.items():
        refit = _cs_refit(X, [label])
        want = _quiet(refit.predict_absolute_risk, new.iloc[[0]], times,
                      cause=2).to_numpy().ravel()
        np.testing.assert_allclose(frame[column], want, rtol=0, atol=ATOL)


@pytest.fixture(scope="module")
def multistate():
    fit = ci.fit_multistate(SIM[["x1", "x2"]], SIM["tstart"], SIM["tstop"], SIM["state"],
                            SIM["id"])
    return fit


def _ms_refit(drop):
    keep = ~SIM["id"].isin(drop)
    d = SIM[keep]
    return ci.fit_multistate(d[["x1", "x2"]], d["tstart"], d["tstop"], d["state"], d["id"])


def test_state_occupancy_curves_are_the_predictions_of_the_full_and_refitted_fits(
        multistate):
    """A panel per state, at 0 and every transition time; each refitted curve is
    ``predict_state_probabilities`` of ``fit_multistate`` without the subject's rows."""
    fit = multistate
    new = pd.DataFrame({"x1": [0.5], "x2": [1.0]}, index=["p"])
    res = ci.influence(fit, target=ci.targets.StateProbability(new, [5, 10], state="2"),
                       method="vif")
    curves = curves_of(res)
    assert list(curves.full.columns) == ["P((s0),t|p)", "P(1,t|p)", "P(2,t|p)"]
    times = curves.times
    transitions = SIM["tstop"][SIM["state"] > 0]
    np.testing.assert_array_equal(times, np.unique(np.concatenate([[0.0], transitions])))
    want = fit.predict_state_probabilities(new, times).to_numpy()
    np.testing.assert_allclose(curves.full.to_numpy(), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(curves.full.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    labels = list(res.top(3, by="target").index)
    assert list(curves.refitted) == labels
    for label, frame in curves.refitted.items():
        want = _quiet(_ms_refit([label]).predict_state_probabilities, new, times).to_numpy()
        np.testing.assert_allclose(frame.to_numpy(), want, rtol=0, atol=ATOL)


def test_state_curves_with_weights_strata_and_initial_states():
    """Case weights, strata and subjects starting ill (R's istate, p0): the curves of the
    covariate means in the first stratum (A) are the predictions of the full fit and of
    ``fit_multistate`` without the subject (its weights, strata and initial states kept)."""
    df = SIM.copy()
    df["istate"] = np.where(df["id"].duplicated(), "1", "healthy")
    first = ~df["id"].duplicated(keep=False) | df["id"].duplicated()
    df = df[first | (df["id"] % 3 != 0)]          # some subjects recruited already ill
    df["w"] = np.where(df["x2"] == 1, 2.0, 1.0)
    df["site"] = np.where(df["id"] % 2 == 0, "A", "B")

    def fit_without(drop=()):
        d = df[~df["id"].isin(drop)]
        return ci.fit_multistate(d[["x1", "x2"]], d["tstart"], d["tstop"], d["state"],
                                 d["id"], weights=d["w"], strata=d["site"],
                                 istate=d["istate"])

    fit = fit_without()
    res = ci.influence(fit, method="vif")
    curves = curves_of(res)
    assert curves.patient == "mean, stratum A"
    mean = df[["x1", "x2"]].mean().to_frame("mean").T.assign(site="A")
    times = curves.times
    np.testing.assert_allclose(curves.full.to_numpy(),
                               _quiet(fit.predict_state_probabilities, mean, times).to_numpy(),
                               rtol=0, atol=1e-12)
    assert list(curves.refitted) == list(res.top(3).index)
    for label, frame in curves.refitted.items():
        want = _quiet(fit_without([label]).predict_state_probabilities, mean, times)
        np.testing.assert_allclose(frame.to_numpy(), want.to_numpy(), rtol=0, atol=ATOL)


def test_the_report_embeds_the_curves_figure_with_its_caption(multistate):
    """The section: its heading, the caption naming the patient and the units, one PNG;
    the figure has a panel per state with the full curve and one line per unit."""
    res = ci.influence(multistate)              # target coef: the covariate means
    curves = curves_of(res)
    assert curves.patient == "mean"
    html = build_report(res)
    section = html[html.index("<h2>Prediction curves without the most influential "
                              "patients</h2>"):html.index("<h2>Index plots</h2>")]
    labels = ", ".join(str(v) for v in res.top(3).index)
    assert "for the reference patient mean (the covariate means of the training rows)" \
        in section
    assert f"with the largest likelihood displacement ({labels})" in section
    assert len(re.findall(r'<img src="data:image/png;base64,', section)) == 1
    fig = curves_figure(curves)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == list(curves.full.columns)
    assert all(len(ax.get_lines()) == 1 + len(curves.refitted) for ax in axes)
    np.testing.assert_array_equal(axes[2].get_lines()[0].get_ydata(),
                                  curves.full.iloc[:, 2].to_numpy())


def test_models_without_a_curves_part_show_nothing_new():
    from lifelines.datasets import load_rossi
    rossi = load_rossi().iloc[:120]
    fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
    assert curves_part(fit) is None
    res = ci.influence(fit, method="vif")
    assert curves_of(res) is None
    assert "Prediction curves" not in build_report(res)


def test_the_report_reads_the_table_not_the_family():
    """A curves part registered for ``CoxFit`` (as a new family would, for its class:
    ``register_curves`` or ``coxinfluence.registration.register(..., curves=)``) is drawn
    by the report unchanged."""
    from lifelines.datasets import load_rossi

    from coxinfluence.models.cox import CoxFit
    rossi = load_rossi().iloc[:120]
    X = rossi[["fin", "age", "prio"]]
    fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    mean = X.mean().to_frame("mean").T
    times = np.array([10.0, 20.0, 40.0])

    def survival_curves(result, theta_loo, codes):
        target = ci.targets.Survival(mean, times)
        full = target.value(result.fit, result.fit.coef[None, :])[0]
        values = target.refit_values(result.fit, theta_loo, result.units)

        def frame(v):
            return pd.DataFrame({"S(t|mean)": v}, index=pd.Index(times, name="time"))

        return Curves(frame(full), {result.model.unit_labels[c]: frame(values[c])
                                    for c in codes}, "mean", "the survival (a test's part)")

    register_curves(CoxFit, survival_curves)
    try:
        res = ci.influence(fit, method="vif")
        html = build_report(res)
        assert "The survival (a test&#x27;s part) for the reference patient mean" in html
        curves = curves_of(res)
        for label, frame in curves.refitted.items():
            keep = X.index != label
            refit = ci.fit_cox(X[keep], rossi["week"][keep], rossi["arrest"][keep])
            want = refit.predict_survival(mean, times).to_numpy().ravel()
            np.testing.assert_allclose(frame["S(t|mean)"], want, rtol=0, atol=ATOL)
    finally:
        del CURVES[CoxFit]
    assert curves_part(fit) is None


def test_register_takes_a_curves_part():
    from coxinfluence.influence_functions.registry import _FAMILIES, Family
    from coxinfluence.registration import register

    class OwnFit(ci.CoxFit):
        pass

    def part(result, theta_loo, codes):
        return None

    family = register(Family("own (curves test)", OwnFit, None), curves=part)
    try:
        assert CURVES[OwnFit] is part
        assert curves_part(OwnFit.__new__(OwnFit)) is part
    finally:
        _FAMILIES.remove(family)
        del CURVES[OwnFit]
    with pytest.raises(ValueError, match="registered by a predicate"):
        register(Family("by name (curves test)", lambda m: False, None), curves=part)

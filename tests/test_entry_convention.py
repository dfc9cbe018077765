"""Delayed entry under statsmodels' at-risk convention (issue 24, item 1).

statsmodels' ``PHReg(entry=...)`` counts a row entering at ``t`` as at risk at ``t``
(``[entry, time]``, Stata's convention; R and lifelines use ``(start, stop]``). The
statsmodels integration builds its fit with ``at_risk_at_entry=True``; these tests check
that every quantity follows: the coefficients are statsmodels', the exact leave-one-out
changes are statsmodels' own refits, the VIF is its definition written with statsmodels'
own score, and in the core every influence function under the closed convention equals
the same function on (start, stop] data with each entry moved just before its time.
"""
import warnings

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.audit.targets import Survival
from coxinfluence.data.cox_data import CoxInputError, make_cox_data

sm = pytest.importorskip("statsmodels.duration.hazard_regression")
lifelines_datasets = pytest.importorskip("lifelines.datasets")

COVS = ["fin", "wexp", "mar", "paro", "prio"]


@pytest.fixture(scope="module")
def rossi_age():
    """Rossi on the age scale: entry = age (integer years), exit = age + week / 52, so 99
    rows enter at the exact time of some arrest."""
    df = lifelines_datasets.load_rossi()
    entry = df["age"].astype(float)
    return df[COVS].astype(float), entry, entry + df["week"] / 52, df["arrest"].astype(float)


def _phreg(X, entry, exit_, event, ties, keep=None):
    if keep is not None:
        X, entry, exit_, event = X[keep], entry[keep], exit_[keep], event[keep]
    return sm.PHReg(exit_, X, status=event, entry=entry, ties=ties)


def test_rossi_age_scale_has_entries_at_event_times(rossi_age):
    X, entry, exit_, event = rossi_age
    at_event = np.isin(entry.to_numpy(), exit_[event == 1].to_numpy())
    assert at_event.sum() == 99                # the convention matters on these data


@pytest.mark.parametrize("ties,n_rows", [("breslow", 40), ("efron", 12)])
def test_statsmodels_entry_at_event_times_equals_statsmodels_refits(rossi_age, ties, n_rows):
    """Was refused ('coefficients do not match ... pass the exact training DataFrame')."""
    X, entry, exit_, event = rossi_age
    res = _phreg(X, entry, exit_, event, ties).fit()
    exact = ci.influence(res, method="exact")
    np.testing.assert_allclose(exact.fit.coef, res.params, rtol=1e-8)
    assert exact.fit.data.at_risk_at_entry
    n = len(X)
    change = exact.loo_change.to_numpy()
    at_event = np.flatnonzero(np.isin(entry.to_numpy(), exit_[event == 1].to_numpy()))
    top = np.argsort(-np.abs(change).max(axis=1))[:n_rows // 2]
    rows = np.unique(np.r_[top, at_event[:n_rows - top.size]])
    th = np.asarray(res.params)
    refits = []
    for i in rows:
        keep = np.arange(n) != i
        refits.append(_phreg(X, entry, exit_, event, ties, keep).fit(start_params=th).params
                      - th)
    refits = np.array(refits)
    # measured: 1.4e-11 (Breslow and Efron) over all 432 rows, changes up to 0.15
    assert np.abs(change[rows] - refits).max() < 1e-9
    # the VIF is its definition written with statsmodels' own score and Hessian:
    # theta_{-i} - theta ~ H^{-1} (grad L - grad L_{-i}), grad L = -score
    vif = ci.influence(res, method="vif").loo_change.to_numpy()
    H = -res.model.hessian(th)
    g_all = res.model.score(th)
    diffs = np.array([_phreg(X, entry, exit_, event, ties, np.arange(n) != i).score(th)
                      - g_all for i in rows])
    want = np.linalg.solve(H, diffs.T).T
    assert np.abs(vif[rows] - want).max() < 1e-12 * np.abs(want).max() + 1e-14


def test_statsmodels_mismatch_names_the_causes_it_checks(rossi_age):
    """No DataFrame was passed: the message must not ask for one; it says what it found."""
    X, entry, exit_, event = rossi_age
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        early = _phreg(X, entry, exit_, event, "breslow").fit(maxiter=1)
    with pytest.raises(ValueError) as err:
        ci.influence(early, method="vif")
    msg = str(err.value)
    assert "training DataFrame" not in msg
    assert "statsmodels' fit had not converged" in msg
    assert "99 row(s) enter at an event time" in msg
    assert "ties 'breslow'" in msg
    # the model's data changed after the fit: its likelihood is not ours
    res = _phreg(X, entry, exit_, event, "breslow").fit()
    res.model.endog = res.model.endog + 0.3 * (np.arange(len(X)) % 2)
    with pytest.raises(ValueError) as err:
        ci.influence(res, method="vif")
    msg = str(err.value)
    assert "training DataFrame" not in msg
    assert "maximise its own likelihood" in msg and "ours on the same data" in msg


def _integer_entry_data(seed, n=160, strata=True, weights=True):
    """Integer times and entries (many entries equal to event times), the shifted entry
    ``start - 0.5`` giving the closed convention's risk sets under (start, stop]."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    start = rng.integers(0, 6, n).astype(float)
    stop = start + rng.integers(1, 6, n)
    event = (rng.uniform(size=n) < 0.7).astype(float)
    w = rng.uniform(0.5, 2.0, n) if weights else None
    s = rng.integers(0, 2, n) if strata else None
    return X, start, stop, event, w, s


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_closed_entry_equals_open_entry_moved_before_it(ties):
    """Every quantity under ``at_risk_at_entry`` equals the same on (start - 0.5, stop]
    (integer times: the same risk sets): fit, VIF, Reid, one-step Newton, exact refits,
    clusters, survival targets."""
    X, start, stop, event, w, s = _integer_entry_data(3)
    assert np.isin(start, stop[event == 1]).sum() > 40
    kw = dict(weights=w, strata=s, ties=ties)
    closed = ci.fit_cox(X, stop, event, start=start, at_risk_at_entry=True, **kw)
    moved = ci.fit_cox(X, stop, event, start=start - 0.5, **kw)
    open_ = ci.fit_cox(X, stop, event, start=start, **kw)
    np.testing.assert_allclose(closed.coef, moved.coef, rtol=1e-12)
    np.testing.assert_allclose(closed.information, moved.information, rtol=1e-12)
    assert abs(closed.loglik - moved.loglik) < 1e-10 * abs(moved.loglik)
    assert np.abs(closed.coef - open_.coef).max() > 1e-3       # the convention matters

    def same(a, b, rtol=1e-10):
        a, b = np.asarray(a), np.asarray(b)
        assert np.abs(a - b).max() <= rtol * np.abs(b).max()
    same(ci.vif(closed), ci.vif(moved))
    same(ci.vif(closed, method="direct"), ci.vif(moved, method="direct"))
    same(ci.reid_influence(closed), ci.reid_influence(moved))
    same(ci.newton_loo(closed), ci.newton_loo(moved))
    same(ci.exact_loo(closed, progress=False), ci.exact_loo(moved, progress=False), 1e-9)
    groups = np.arange(len(stop)) % 23
    same(ci.vif(closed, groups=groups), ci.vif(moved, groups=groups))
    tgt = Survival(X[:2] * 0.5, [2.0, 5.0, 8.0], strata=[0, 1])
    for method in ("vif", "exact"):
        a = ci.influence(closed, method=method, target=tgt).loo_change
        b = ci.influence(moved, method=method, target=tgt).loo_change
        same(a, b, 1e-9)


def test_closed_entry_allows_entry_at_exit():
    """Under [start, stop] a row with start == stop is at risk at that one time (statsmodels
    allows it); under (start, stop] it is refused."""
    X, start, stop, event, w, s = _integer_entry_data(5, strata=False, weights=False)
    start[:6] = stop[:6]
    closed = ci.fit_cox(X, stop, event, start=start, at_risk_at_entry=True)
    moved = ci.fit_cox(X, stop, event, start=start - 0.5)
    np.testing.assert_allclose(closed.coef, moved.coef, rtol=1e-12)
    np.testing.assert_allclose(ci.vif(closed), ci.vif(moved), rtol=1e-9, atol=1e-12)
    with pytest.raises(CoxInputError, match="start >= time"):
        ci.fit_cox(X, stop, event, start=start)
    with pytest.raises(CoxInputError, match="start > time"):
        ci.fit_cox(X, stop, event, start=start + 10, at_risk_at_entry=True)
    res = sm.PHReg(pd.Series(stop), pd.DataFrame(X), status=event, entry=start,
                   ties="efron").fit()
    np.testing.assert_allclose(ci.influence(res, method="vif").fit.coef, moved.coef,
                               rtol=1e-8)


def test_closed_entry_abutting_intervals_of_a_subject_overlap():
    """One subject on (0, 3], (3, 6] is at risk once at 3 under (start, stop], twice under
    [start, stop]: refused there, as any overlap."""
    X = np.random.default_rng(0).normal(size=(8, 1))
    start = np.array([0, 3, 0, 0, 1, 2, 0, 1], float)
    stop = np.array([3, 6, 3, 4, 5, 6, 2, 7], float)
    event = np.array([0, 1, 1, 1, 0, 1, 1, 0], float)
    sid = np.array([0, 0, 1, 2, 3, 4, 5, 6])
    make_cox_data(X, stop, event, start=start, id=sid)
    with pytest.raises(CoxInputError, match="overlapping"):
        make_cox_data(X, stop, event, start=start, id=sid, at_risk_at_entry=True)

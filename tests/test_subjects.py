"""Counting-process data and units of deletion (subjects, clusters): properties and
definitions. (R's numbers are in test_subjects_r.py.)"""
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import coxinfluence as ci
from coxinfluence import CoxInputError


def subjects(seed, n_subj=40, max_rows=3, ties=True, entry=True, strata=True, weights=True):
    """Subjects with 1..max_rows contiguous intervals, a time-varying x1, optional delayed
    entry, integer times (ties), strata and per-subject weights."""
    rng = np.random.default_rng(seed)
    rows = []
    for sid in range(n_subj):
        t = float(rng.integers(0, 3)) if entry and rng.random() < 0.4 else 0.0
        w = rng.uniform(0.5, 2.0) if weights else 1.0
        s = int(rng.integers(0, 2)) if strata else 0
        x2, x3 = rng.normal(), float(rng.integers(0, 2))
        for _ in range(int(rng.integers(1, max_rows + 1))):
            t1 = t + (float(rng.integers(1, 5)) if ties else rng.exponential(2.0) + 1e-3)
            rows.append(dict(start=t, stop=t1, event=float(rng.random() < 0.35),
                             x1=rng.normal(), x2=x2, x3=x3, w=w, s=s, id=f"p{sid:03d}"))
            t = t1
    df = pd.DataFrame(rows)
    df.loc[df.index[0], "event"] = 1.0
    return df


def fit_of(df, ties="efron", **kw):
    return ci.fit_cox(df[["x1", "x2", "x3"]], df.stop, df.event, start=df.start, id=df.id,
                      weights=df.w, strata=df.s, ties=ties, **kw)


def unit_vif_by_definition(fit, df, unit):
    """-(H/n)^{-1} (grad L(all) - grad L(unit's rows deleted)), literally deleting them."""
    X = df[["x1", "x2", "x3"]].to_numpy()
    args = dict(weights=df.w.to_numpy(), strata=df.s.to_numpy(), ties=fit.ties)
    g_all = ci.cox_gradient(fit.coef, X, df.stop, df.event, start=df.start, **args)
    labels = np.sort(unit.unique())
    out = []
    for g in labels:
        keep = (unit != g).to_numpy()
        g_del = ci.cox_gradient(fit.coef, X[keep], df.stop[keep], df.event[keep],
                                start=df.start[keep], weights=args["weights"][keep],
                                strata=args["strata"][keep], ties=fit.ties)
        out.append(g_all - g_del)
    return -len(labels) * np.linalg.solve(fit.information, np.array(out).T).T, labels


@pytest.mark.parametrize("ties", ["efron", "breslow"])
@pytest.mark.parametrize("seed", [0, 1])
def test_subject_vif_equals_its_definition(ties, seed):
    df = subjects(seed)
    fit = fit_of(df, ties)
    ref, labels = unit_vif_by_definition(fit, df, df.id)
    got = ci.vif(fit)
    assert list(got.index) == list(labels)
    np.testing.assert_allclose(got.to_numpy(), ref, rtol=1e-9, atol=1e-10 * np.abs(ref).max())


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_cluster_vif_equals_its_definition(ties):
    df = subjects(2)
    cluster = pd.Series(df.id.str[1:].astype(int) // 6, index=df.index)
    fit = fit_of(df, ties)
    ref, labels = unit_vif_by_definition(fit, df, cluster)
    got = ci.vif(fit, groups=cluster)
    np.testing.assert_array_equal(got.index, labels)
    np.testing.assert_allclose(got.to_numpy(), ref, rtol=1e-9, atol=1e-10 * np.abs(ref).max())


def test_one_row_per_subject_equals_the_row_results():
    df = subjects(3, max_rows=1, entry=False)
    df["start"] = 0.0
    by_subject = fit_of(df)
    X = df[["x1", "x2", "x3"]]
    by_row = ci.fit_cox(X, df.stop, df.event, weights=df.w, strata=df.s)
    np.testing.assert_allclose(by_subject.coef, by_row.coef, rtol=1e-12)
    order = np.argsort(df.id.to_numpy())             # subjects come back in label order
    for f in (ci.vif, ci.reid_influence, ci.newton_loo, ci.exact_loo):
        a, b = np.asarray(f(by_subject)), np.asarray(f(by_row))[order]
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_exact_unit_refit_deletes_all_its_rows():
    df = subjects(4, n_subj=25)
    fit = fit_of(df)
    loo = ci.exact_loo(fit)
    for g in ["p000", "p007", "p013"]:
        keep = df.id != g
        ref = fit_of(df[keep]).coef
        np.testing.assert_allclose(loo.loc[g].to_numpy(), ref, rtol=1e-8, atol=1e-10)


def test_newton_loo_per_subject_equals_its_definition():
    df = subjects(5, n_subj=25)
    fit = fit_of(df)
    got = ci.newton_loo(fit)
    X = df[["x1", "x2", "x3"]].to_numpy()
    for g in ["p001", "p010", "p020"]:
        k = (df.id != g).to_numpy()
        args = dict(start=df.start[k], weights=df.w[k].to_numpy(), strata=df.s[k].to_numpy())
        grad = ci.cox_gradient(fit.coef, X[k], df.stop[k], df.event[k], **args)
        hess = ci.cox_hessian(fit.coef, X[k], df.stop[k], df.event[k], **args)
        np.testing.assert_allclose(got.loc[g].to_numpy(),
                                   fit.coef - np.linalg.solve(hess, grad), rtol=1e-10)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), frac=st.floats(0.1, 0.9))
def test_splitting_an_interval_at_a_non_event_time_changes_nothing(seed, frac):
    df = subjects(seed, n_subj=40, ties=False, strata=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ci.ConvergenceWarning)
        fit = fit_of(df)
    # a small design can separate (x3 is one 0/1 value per subject): then there is no
    # maximum to compare
    assume(fit.converged)
    event_times = set(df.stop[df.event == 1])
    i = int(np.argmax((df.stop - df.start).to_numpy()))
    row = df.iloc[i]
    cut = row.start + frac * (row.stop - row.start)
    if cut in event_times:
        return
    first, second = row.copy(), row.copy()
    first["stop"], first["event"] = cut, 0.0
    second["start"] = cut
    split = pd.concat([df.drop(index=df.index[i]), first.to_frame().T, second.to_frame().T],
                      ignore_index=True).astype(df.dtypes.to_dict())
    fit2 = fit_of(split)
    np.testing.assert_allclose(fit2.coef, fit.coef, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit2.loglik, fit.loglik, rtol=1e-12)
    for f in (ci.vif, ci.reid_influence):
        np.testing.assert_allclose(f(fit2).to_numpy(), f(fit).to_numpy(), rtol=1e-7,
                                   atol=1e-9)


def test_delayed_entry_is_left_truncation():
    """A row entering at s is not in the risk sets of events at or before s."""
    df = subjects(6, n_subj=30, max_rows=1)
    fit = fit_of(df)
    early = df.copy()
    early["start"] = 0.0
    assert not np.allclose(fit_of(early).coef, fit.coef)
    X = df[["x1", "x2", "x3"]].to_numpy()
    # brute force: the loss as a sum over events of log-sums over explicit risk sets
    theta = fit.coef
    eta = X @ theta
    w = df.w.to_numpy()
    loss = 0.0
    for t in np.unique(df.stop[df.event == 1]):
        for s in np.unique(df.s):
            dead = ((df.stop == t) & (df.event == 1) & (df.s == s)).to_numpy()
            if not dead.any():
                continue
            risk = ((df.start < t) & (df.stop >= t) & (df.s == s)).to_numpy()
            S0, S0D = (w * np.exp(eta))[risk].sum(), (w * np.exp(eta))[dead].sum()
            d, m = dead.sum(), w[dead].mean()
            loss += -(w * eta)[dead].sum() + m * sum(np.log(S0 - r / d * S0D) for r in range(d))
    assert abs(-fit.loglik - loss) < 1e-10 * abs(loss)


def test_robust_covariance_per_row_is_the_dfbeta_sandwich():
    df = subjects(7)
    fit = ci.fit_cox(df[["x1", "x2", "x3"]], df.stop, df.event, start=df.start)
    D = np.asarray(ci.reid_influence(fit)) / fit.n
    np.testing.assert_allclose(fit.robust_covariance(), D.T @ D, rtol=1e-12)
    table = fit.summary(robust=True)
    np.testing.assert_allclose(table["robust se"], np.sqrt(np.diag(D.T @ D)), rtol=1e-12)


@pytest.mark.parametrize("bad, message", [
    (lambda df: df.assign(start=df.stop), "start must be before time"),
    (lambda df: df.assign(start=df.start.where(df.index != 3, np.nan)), "start contains NaN"),
    (lambda df: df.assign(start=df.start.where(df.index != 3, -np.inf)), "start contains NaN"),
])
def test_bad_start_is_named(bad, message):
    df = bad(subjects(8))
    with pytest.raises(CoxInputError, match=message):
        fit_of(df)


def test_overlapping_intervals_of_one_subject_are_refused():
    df = subjects(9)
    i = int(np.flatnonzero(df.id.duplicated(keep=False).to_numpy())[0])
    g = df.id.iloc[i]
    df.loc[df.id == g, "start"] = 0.0
    with pytest.raises(CoxInputError, match=f"{g}.*overlapping"):
        fit_of(df)
    # the same rows as a cluster (groups=) are fine
    fit = ci.fit_cox(df[["x1", "x2", "x3"]], df.stop, df.event, start=df.start)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ci.vif(fit, groups=df.id).shape == (df.id.nunique(), 3)


def test_groups_of_wrong_length_or_missing_labels():
    df = subjects(10)
    fit = fit_of(df)
    with pytest.raises(CoxInputError, match="one label per row"):
        ci.vif(fit, groups=df.id[:-1])
    with pytest.raises(CoxInputError, match="missing labels"):
        ci.reid_influence(fit, groups=df.id.where(df.index != 2, None))


def test_recurrent_events_are_allowed():
    df = subjects(11, max_rows=4)
    df["event"] = 1.0                                  # an event in every interval
    fit = fit_of(df)
    assert fit.converged and fit.data.event.sum() == len(df)


def test_influence_per_subject_with_targets():
    """ci.influence on a CoxFit with id: one row per subject for every method and target;
    the exact survival change refits without all of the subject's rows."""
    from coxinfluence.audit.targets import Survival
    df = subjects(12, n_subj=25)
    fit = fit_of(df)
    labels = np.sort(df.id.unique())
    x_new = np.array([[0.2, -0.1, 1.0]])
    target = Survival(x_new, [2.0, 4.0], strata=[0])
    for method in ("vif", "reid", "newton"):
        res = ci.influence(fit, method=method)
        np.testing.assert_array_equal(res.loo_change.index, labels)
    res = ci.influence(fit, method="exact", target=target)
    top = res.top(3)
    assert {"rows", "entry", "exit", "events"} <= set(top.columns)
    g = top.index[0]
    rows = df[df.id == g]
    assert top.loc[g, "rows"] == len(rows) and top.loc[g, "events"] == rows.event.sum()
    assert top.loc[g, "entry"] == rows.start.min() and top.loc[g, "exit"] == rows.stop.max()
    refit = fit_of(df[df.id != g])
    ref = target.value(refit, refit.coef[None, :])[0] - target.value(fit, fit.coef[None])[0]
    np.testing.assert_allclose(res.loo_change.loc[g].to_numpy(), ref, rtol=1e-7, atol=1e-10)
    approx = ci.influence(fit, method="vif", target=target)
    assert np.corrcoef(approx.loo_change.iloc[:, 0], res.loo_change.iloc[:, 0])[0, 1] > 0.95


def test_influence_with_groups_deletes_clusters():
    df = subjects(13, n_subj=30)
    cluster = df.id.str[1:].astype(int) // 5
    fit = fit_of(df)
    res = ci.influence(fit, method="exact", groups=cluster)
    np.testing.assert_array_equal(res.loo_change.index, np.sort(cluster.unique()))
    for c in (0, 3):
        ref = fit_of(df[cluster != c]).coef - fit.coef
        np.testing.assert_allclose(res.loo_change.loc[c].to_numpy(), ref, rtol=1e-8,
                                   atol=1e-11)

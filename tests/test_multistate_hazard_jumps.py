"""``models.multistate.hazard_jumps`` (every state probability, its Jacobian and the
subjects' deletions go through it) by sums over sorted intervals equals the dense (rows x
grid) definition it replaced, with ties (integer times), continuous times, delayed entry,
case weights, strata, Efron and Breslow, and a subject dropped per problem; and it no
longer builds a (rows x grid times) indicator (continuous times: rows x rows)."""
import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.models.multistate import event_grid, hazard_jumps, simulate_illness_death


def dense(fit, k, theta, grid, drop=None):
    start, stop, event, X, subject, weight, stratum = fit.transition_rows[k]
    lp = np.atleast_2d(theta) @ X.T
    shift = lp.max(axis=1)
    r = np.exp(lp - shift[:, None])
    presence = np.ones_like(r)
    if drop is not None:
        presence = (subject[None, :] != np.asarray(drop)[:, None]).astype(np.float64)
    wr = r * presence * weight[None, :]
    at_risk = ((start[None, :] < grid[:, None])
               & (stop[None, :] >= grid[:, None])).T.astype(np.float64)
    events = ((stop[None, :] == grid[:, None]) & (event[None, :] > 0)).T.astype(np.float64)
    out = np.zeros((wr.shape[0], fit.n_strata, grid.size))
    for c in range(fit.n_strata):
        mine = (stratum == c).astype(np.float64)
        S0, Se = (wr * mine) @ at_risk, (wr * mine) @ events
        d = (presence * mine) @ events
        dw = (presence * (weight * mine)[None, :]) @ events
        den = (S0 - (d - 1.0) / (2.0 * np.maximum(d, 1.0) ** 2) * Se
               if fit.ties == "efron" else S0)
        out[:, c] = np.where(d > 0, dw / np.where(d > 0, den, 1.0), 0.0)
    return out, shift


def designs():
    X, start, stop, state, ids = simulate_illness_death(120, seed=3)
    rng = np.random.default_rng(3)
    subjects = pd.unique(np.asarray(ids))
    w = pd.Series(rng.uniform(0.5, 2.0, subjects.size), index=subjects)[np.asarray(ids)]
    g = pd.Series(rng.integers(0, 2, subjects.size), index=subjects)[np.asarray(ids)]
    jitter = pd.Series(rng.uniform(0, 0.5, subjects.size), index=subjects)[np.asarray(ids)]
    for ties in ("efron", "breslow"):
        yield f"integer times/{ties}", ci.fit_multistate(X, start, stop, state, ids,
                                                        ties=ties)
        yield f"weights+strata/{ties}", ci.fit_multistate(
            X, start, stop, state, ids, ties=ties, weights=w.to_numpy(),
            strata=g.to_numpy())
    # continuous times: shift each subject's whole history (intervals stay contiguous)
    yield "continuous", ci.fit_multistate(X, np.asarray(start) + jitter.to_numpy(),
                                          np.asarray(stop) + jitter.to_numpy(), state, ids)


@pytest.mark.parametrize("label,fit", list(designs()), ids=lambda v: v if
                         isinstance(v, str) else "")
def test_equals_the_dense_definition(label, fit):
    grid = event_grid(fit, np.inf)
    for k in range(len(fit.transition_rows)):
        d_k = fit.transition_rows[k][3].shape[1]
        theta = np.random.default_rng(k).normal(scale=0.3, size=(3, d_k))
        subjects = np.unique(fit.transition_rows[k][4])
        drop = np.array([-1, subjects[0], subjects[-1]])
        for dr in (None, drop):
            fast, s1 = hazard_jumps(fit, k, theta, grid, dr)
            slow, s2 = dense(fit, k, theta, grid, dr)
            np.testing.assert_array_equal(s1, s2)
            np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-15 * slow.max())
            assert slow.max() > 0

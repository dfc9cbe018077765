"""``likelihood.baseline_hazard.cumulative_sums`` (the baseline hazard from its increments
by prefix sums per stratum) equals the dense definition it replaced, ``sum_k 1{s_k = s,
t_k <= t} v_k``, with ties, strata (one without events at the times asked), delayed
entry, times before the first event, on event times and past the last; and a prediction
over every event time of a large cohort no longer needs a (times x events) array."""
import numpy as np
from conftest import tied_data

import coxinfluence as ci
from coxinfluence.likelihood.baseline_hazard import cumulative_sums


def dense(fit, values, times):
    ev = fit.data.event_rows
    t_k, s_k = fit.data.time[ev], fit.data.strata[ev]
    S = int(fit.data.strata.max()) + 1
    mask = ((s_k[None, None, :] == np.arange(S)[:, None, None])
            & (t_k[None, None, :] <= np.asarray(times)[None, :, None])).astype(float)
    return np.einsum("...k,stk->...st", values, mask)


def test_equals_the_dense_definition():
    X, t, e, w, s = tied_data(5, n=120)
    entry = np.where(np.arange(120) % 4 == 0, 0.3 * t, 0.0)
    fit = ci.fit_cox(X, t, e, weights=w, strata=s, entry=entry)
    ev_times = fit.data.time[fit.data.event_rows]
    times = np.concatenate([[0.0, ev_times.min() / 2], np.unique(ev_times)[::3],
                            [ev_times.max() + 1.0]])
    rng = np.random.default_rng(0)
    for values in (rng.uniform(size=fit.data.event_rows.size),
                   rng.uniform(size=(3, fit.data.event_rows.size)),
                   rng.uniform(size=(2, 4, fit.data.event_rows.size))):
        np.testing.assert_allclose(cumulative_sums(fit, values, times),
                                   dense(fit, values, times), rtol=1e-13, atol=1e-15)


def test_every_event_time_of_a_large_cohort():
    rng = np.random.default_rng(1)
    n = 200_000
    X = rng.normal(size=(n, 2))
    t = rng.exponential(size=n)
    fit = ci.fit_cox(X, t, np.ones(n))
    times = np.sort(t)                       # 200,000 times x 200,000 terms: 320 GB dense
    H = fit.predict_cumulative_hazard(X[:2], times).to_numpy()
    assert H.shape == (2, n)
    assert (np.diff(H, axis=1) > 0).all()   # every time an event time: H rises at each
    few = fit.predict_cumulative_hazard(X[:2], times[[0, n // 2, -1]]).to_numpy()
    np.testing.assert_allclose(H[:, [0, n // 2, -1]], few, rtol=1e-12)

"""Properties of the Fine-Gray model on random designs (hypothesis): without competing
events it is Cox's model with Breslow's ties, fit and audit; a subject's presence of 2 is
the subject duplicated (the definition of case weights in the likelihood and in the
censoring Kaplan-Meier)."""
from __future__ import annotations

import warnings

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import coxinfluence as ci
from coxinfluence.influence_functions.fine_gray_audit import FineGrayAudit
from coxinfluence.models.fine_gray import fit_fine_gray

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def design(seed, n, d, ties, competing):
    """Random covariates, times (rounded to make ties when ``ties``), causes 1 and, when
    ``competing``, 2; about a quarter censored."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    t = rng.exponential(np.exp(-X @ np.linspace(0.5, -0.3, d)))
    t = np.round(t, 1) + 0.1 if ties else t + 0.01
    status = np.where(rng.uniform(size=n) < 0.25, 0,
                      rng.integers(1, 3, n) if competing else 1)
    return X, t, status


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def fitted(fit_fn, *args, **kw):
    """The fit, or None where it has no maximum (a separated or collinear draw)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            fit = fit_fn(*args, **kw)
        except Exception:                                              # noqa: BLE001
            return None
    return fit if fit.converged else None


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(25, 60), d=st.integers(1, 3),
       ties=st.booleans())
def test_without_competing_events_it_is_coxs_model_and_audit(seed, n, d, ties):
    X, t, status = design(seed, n, d, ties, competing=False)
    assume((status == 1).sum() > d + 2)
    fg = fitted(fit_fine_gray, X, t, status)
    cox = fitted(ci.fit_cox, X, t, status, ties="breslow")
    assume(fg is not None and cox is not None)
    assert rel(fg.coef, cox.coef) < 1e-9
    assert abs(fg.loglik - cox.loglik) <= 1e-10 * abs(cox.loglik)
    audit = FineGrayAudit(fg)
    for method in ("vif", "reid", "newton"):
        theirs = ci.influence(cox, method=method).theta_change.to_numpy()
        assert rel(audit.change(method), theirs) < 1e-8, method


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(25, 60), d=st.integers(1, 3),
       ties=st.booleans(), pick=st.integers(0, 10_000))
def test_presence_two_is_the_subject_duplicated(seed, n, d, ties, pick):
    X, t, status = design(seed, n, d, ties, competing=True)
    assume((status == 1).sum() > d + 2)
    i = pick % n
    rows = np.r_[np.arange(n), i]                       # subject i twice
    fit = fitted(fit_fine_gray, X, t, status)
    assume(fit is not None)
    dup = fitted(fit_fine_gray, X[rows], t[rows], status[rows])
    assume(dup is not None)
    P = np.ones((1, n))
    P[0, i] = 2.0           # the fit's likelihood takes presence in the caller's row order
    theta = dup.coef
    ours = fit.likelihood.evaluate(theta, P)
    theirs = dup.likelihood.evaluate(theta)
    for a, b in zip(ours, theirs):                      # loss, gradient, Hessian
        assert np.abs(np.asarray(a) - np.asarray(b)).max() <= 1e-9 * max(
            1.0, np.abs(np.asarray(b)).max())

"""Agreement metrics between approximate and exact leave-one-out effects."""
from __future__ import annotations

import numpy as np


def relative_risk_correlation(coef, loo_estimate, loo_exact, X_test):
    """The paper's metric (Section "Performance", Table 1).

    For each test patient x, the Pearson correlation over training rows i between the
    estimated and the exactly refitted relative risk ``exp(theta_{-i}' x)``; returns the
    mean over test patients. ``loo_estimate`` and ``loo_exact`` are (n, d) leave-one-out
    coefficients (for VIF: ``coef - VIF_n / n``). Rows with NaN in either are dropped.
    Subtracting ``exp(coef' x)`` first does not change a correlation; it keeps precision.
    """
    X_test = np.atleast_2d(np.asarray(X_test, dtype=np.float64))
    base = np.exp(X_test @ coef)
    a = np.asarray(loo_estimate, dtype=np.float64)
    b = np.asarray(loo_exact, dtype=np.float64)
    return mean_column_correlation(np.exp(a @ X_test.T) - base, np.exp(b @ X_test.T) - base)


def mean_column_correlation(estimate, exact, *, skip_constant=False):
    """Mean over columns (e.g. test patients) of the Pearson correlation over rows (e.g.
    training patients) of two (n, m) arrays of leave-one-out changes: the paper's metric
    for any target.  Rows with NaN in either array are dropped.  A column constant in
    either array has no correlation: ``ValueError``, or with ``skip_constant=True`` it is
    left out of the mean (e.g. a test patient whose ReLU units are all inactive has a
    log-risk that no deletion changes)."""
    ra = np.array(estimate, dtype=np.float64, ndmin=2)
    rb = np.array(exact, dtype=np.float64, ndmin=2)
    if ra.shape != rb.shape:
        raise ValueError(f"estimate {ra.shape} and exact {rb.shape} differ in shape")
    ok = np.isfinite(ra).all(axis=1) & np.isfinite(rb).all(axis=1)
    ra, rb = ra[ok], rb[ok]
    if ra.shape[0] < 2:
        raise ValueError("fewer than two rows without NaN: no correlation")
    ra -= ra.mean(axis=0)
    rb -= rb.mean(axis=0)
    den = np.sqrt((ra ** 2).sum(axis=0) * (rb ** 2).sum(axis=0))
    live = den > 0
    if not live.all() and not skip_constant:
        raise ValueError(f"constant column(s) {np.flatnonzero(~live)[:5].tolist()}: no "
                         "correlation (skip_constant=True leaves them out)")
    if not live.any():
        raise ValueError("every column is constant: no correlation")
    return float(((ra * rb).sum(axis=0)[live] / den[live]).mean())

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
    a = np.asarray(loo_estimate, dtype=np.float64)
    b = np.asarray(loo_exact, dtype=np.float64)
    ok = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    base = np.exp(X_test @ coef)
    ra = np.exp(a[ok] @ X_test.T) - base
    rb = np.exp(b[ok] @ X_test.T) - base
    ra -= ra.mean(axis=0)
    rb -= rb.mean(axis=0)
    corr = (ra * rb).sum(axis=0) / np.sqrt((ra ** 2).sum(axis=0) * (rb ** 2).sum(axis=0))
    return float(corr.mean())

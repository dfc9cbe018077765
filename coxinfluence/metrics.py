"""Agreement metrics between approximate and exact leave-one-out effects."""
from __future__ import annotations

import numpy as np


def relative_risk_correlation(coef, loo_estimate, loo_exact, X_test):
    """The paper's metric: agreement of estimated and exact leave-one-out relative risks.

    Section "Performance", Table 1 of the paper. For each test patient ``x``, the Pearson
    correlation over training rows ``i`` between the estimated and the exactly refitted
    relative risk ``exp(theta_{-i}' x)``; the mean over test patients.

    Parameters
    ----------
    coef : array-like
        ``(d,)`` the fitted coefficients ``theta_hat``.
    loo_estimate : array-like
        ``(n, d)`` estimated leave-one-out coefficients (for the VIF:
        ``coef - VIF_n / n``).
    loo_exact : array-like
        ``(n, d)`` exactly refitted leave-one-out coefficients (:func:`coxinfluence.exact_loo`).
    X_test : array-like
        ``(m, d)`` covariates of the test patients (one patient: ``(d,)``).

    Returns
    -------
    float
        The mean over test patients of the correlations.

    Raises
    ------
    ValueError
        Fewer than two rows without NaN, or a test patient whose relative risk is the
        same for every deletion (:func:`mean_column_correlation`).

    See Also
    --------
    mean_column_correlation : the same mean for any target.

    Notes
    -----
    Rows with NaN in either ``loo_estimate`` or ``loo_exact`` are dropped. Subtracting
    ``exp(coef' x)`` first does not change a correlation; it keeps precision.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi.drop(columns=["week", "arrest"])
    >>> fit = ci.fit_cox(X, rossi["week"], rossi["arrest"])
    >>> vif_loo = fit.coef - ci.vif(fit) / len(rossi)
    >>> r = ci.metrics.relative_risk_correlation(fit.coef, vif_loo, ci.exact_loo(fit), X[:50])
    >>> print(round(r, 4))
    0.9998
    """
    X_test = np.atleast_2d(np.asarray(X_test, dtype=np.float64))
    base = np.exp(X_test @ coef)
    a = np.asarray(loo_estimate, dtype=np.float64)
    b = np.asarray(loo_exact, dtype=np.float64)
    return mean_column_correlation(np.exp(a @ X_test.T) - base, np.exp(b @ X_test.T) - base)


def mean_column_correlation(estimate, exact, *, skip_constant=False):
    """Mean over columns of the Pearson correlation over rows of two arrays.

    The paper's metric for any target: columns are e.g. test patients, rows e.g. training
    patients, and the two ``(n, m)`` arrays hold estimated and exact leave-one-out
    changes.

    Parameters
    ----------
    estimate : array-like
        ``(n, m)`` estimated changes (a 1-D array is one row).
    exact : array-like
        ``(n, m)`` exact changes, the same shape.
    skip_constant : bool, default False
        Leave a column constant in either array out of the mean (e.g. a test patient whose
        ReLU units are all inactive has a log-risk that no deletion changes) instead of
        raising.

    Returns
    -------
    float
        The mean over columns of the correlations.

    Raises
    ------
    ValueError
        The shapes differ; fewer than two rows without NaN; a column constant in either
        array (without ``skip_constant``); every column constant.

    See Also
    --------
    relative_risk_correlation : the paper's metric on relative risks.

    Notes
    -----
    Rows with NaN in either array are dropped. A column constant in either array has no
    correlation.

    Examples
    --------
    >>> estimate = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 5.0]])
    >>> exact = np.array([[1.1, 2.0], [2.1, 3.0], [2.9, 6.0]])
    >>> print(round(ci.metrics.mean_column_correlation(estimate, exact), 4))
    0.9445

    A 1-D array is one row (one deletion), not one column:

    >>> ci.metrics.mean_column_correlation(estimate[:, 1], exact[:, 1])
    Traceback (most recent call last):
    ...
    ValueError: fewer than two rows without NaN: no correlation

    A constant column is left out of the mean with ``skip_constant=True``:

    >>> const = np.column_stack([exact[:, 0], np.ones(3)])
    >>> print(round(ci.metrics.mean_column_correlation(estimate, const, skip_constant=True), 4))
    0.9979
    """
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

"""Reid's (1985) empirical influence function for Cox regression: score residuals.

Paper, appendix "Analytical Form of Influence Function in Statistics":

    IF_n(i) = -(H/n)^{-1} [ grad l_n(theta_hat; Z_i) + C_i(theta_hat) ]
            =  (H/n)^{-1} w_i U_i,

where ``U_i`` is the score residual (R: ``resid(fit, "score")``), the derivative of the
weighted score ``U = -grad L`` in row i's case weight. With R's weighted Efron ties it
reads, for row i in tie group g(i) and terms k = (g, r):

    U_i = delta_i (x_i - mean_{k in g(i)} a_k)
          - e_i sum_{k: i in R_k} m_k (1 - c_k [i in D_k]) (x_i - a_k) / den_k,

with ``e_i = exp(eta_i)``, ``a_k``, ``den_k``, ``m_k``, ``c_k`` as in
:mod:`coxinfluence.likelihood.risk_sets`.
Breslow is ``c_k = 0``. Without ties or weights this is the paper's formula.
R's ``resid(fit, "dfbeta") = w_i U_i' H^{-1} = IF_n(i) / n``.
"""
from __future__ import annotations

from coxinfluence.data.cox_data import wrap_rows
from coxinfluence.likelihood.score_residuals import score_residuals_sorted
from coxinfluence.models.cox import check_fit


def score_residuals(fit):
    """R's score residuals ``resid(fit, "score")`` of a Cox fit, one row per row of data.

    ``U_i`` is the derivative of the weighted score ``U = -grad L`` in row ``i``'s case
    weight (module docstring: R's weighted Efron formula; Breslow is ``c_k = 0``). The
    residuals are unweighted, as R's: ``sum_i w_i U_i`` is the score, zero at the fitted
    coefficients, and ``n (w_i U_i)' H^{-1}`` is Reid's ``IF_n(i)``.

    Parameters
    ----------
    fit : CoxFit
        A fit of ``ci.fit_cox``.

    Returns
    -------
    numpy.ndarray or pandas.DataFrame
        ``(n, d)`` in the caller's row order: a DataFrame with the caller's index (and the
        covariates' names as columns) when the fit was given pandas input, else an
        ndarray.

    Raises
    ------
    TypeError
        ``fit`` is not a ``CoxFit``.

    See Also
    --------
    reid_influence : Reid's IF, the score residuals times ``n H^{-1}``.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi.drop(columns=["week", "arrest"]), rossi["week"],
    ...                  rossi["arrest"])
    >>> u = ci.score_residuals(fit)
    >>> print(u.iloc[0].round(4).to_string())
    fin    -0.3747
    age     3.8612
    race    0.0980
    wexp   -0.4136
    mar    -0.0634
    paro    0.3597
    prio   -0.7540
    >>> bool(np.allclose(u.sum(), 0))  # the score at the fitted coefficients
    True
    >>> n = len(rossi)
    >>> bool(np.allclose(n * u @ np.linalg.inv(fit.information), ci.reid_influence(fit)))
    True
    """
    fit = check_fit(fit)
    return wrap_rows(fit.data.to_caller_order(score_residuals_sorted(fit.risk_sets, fit.coef)),
    fit.data)


def unit_score_residuals(fit, units):
    """(U, d) ``sum_{i in g} w_i U_i``, each unit's weighted score residuals (R's
    ``resid(fit, "score")`` times the weights, summed with ``collapse``): the unit's
    contribution to the score, ``I IF_n(g) / n`` (LMAX's ``U``). Reid's ``IF_n(g) =
    (H/n)^{-1}`` times them, ``n`` the number of units (``ci.reid_influence``, through
    :class:`~coxinfluence.influence_functions.cox_audit.CoxAudit`): without the unit the
    loss's gradient moves by ``-sum_{i in g} w_i U_i``; ``IF_n / n`` is R's ``resid(fit,
    "dfbeta")`` (``collapse=id`` for units)."""
    scores = fit.data.weights[:, None] * score_residuals_sorted(fit.risk_sets, fit.coef)
    return units.collapse(scores)

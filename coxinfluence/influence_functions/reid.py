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
from coxinfluence.data.units import resolve_units
from coxinfluence.likelihood.score_residuals import score_residuals_sorted
from coxinfluence.models.cox import check_fit


def score_residuals(fit):
    """R's score residuals ``resid(fit, "score")`` (unweighted), caller's row order."""
    fit = check_fit(fit)
    return wrap_rows(fit.data.to_caller_order(score_residuals_sorted(fit.risk_sets, fit.coef)),
    fit.data)


def reid_influence(fit, groups=None):
    """Reid (1985) empirical influence function ``IF_n(g)`` of every unit of a ``CoxFit``,
    paper scale (``ci.reid_influence``'s Cox path; it takes any fit:
    :mod:`coxinfluence.influence_functions.any_fit`): ``-n * ci.influence(fit,
    method="reid").theta_change``.

    ``IF_n(g) = (H/n)^{-1} sum_{i in g} w_i U_i`` (see module docstring) with ``n`` the
    number of units: rows by default, the subjects of ``fit_cox(..., id=)``, or the
    clusters ``groups`` (one label per row, caller's order). Returns (n_units, d): rows in
    the caller's order (a DataFrame with the caller's index for pandas input), subjects
    and clusters as a DataFrame indexed by their sorted labels. It approximates
    ``n (theta_hat - theta_hat_{-g})``; ``IF_n / n`` equals R's ``resid(fit, "dfbeta")``
    (``collapse=id`` for units). After sorting: O(n d) for the score residuals, then
    O(n d^2 + d^3) to apply ``(H/n)^{-1}``.
    """
    fit = check_fit(fit, "reid_influence")
    return reid_of_units(fit, resolve_units(fit, groups))


def reid_of_units(fit, units, unit_scores=None):
    """:func:`reid_influence` for already resolved units (a
    :class:`coxinfluence.data.units.Units`); a penalised fit's information included.
    ``unit_scores``: :func:`unit_score_residuals`, when the caller has them."""
    if unit_scores is None:
        unit_scores = unit_score_residuals(fit, units)
    # the gradient of the loss moves by -sum_{i in g} w_i U_i without the unit
    return fit.paper_scale(-unit_scores, units, overwrite=True)


def unit_score_residuals(fit, units):
    """(U, d) ``sum_{i in g} w_i U_i``, each unit's weighted score residuals (R's
    ``resid(fit, "score")`` times the weights, summed with ``collapse``): the unit's
    contribution to the score, ``I IF_n(g) / n`` (LMAX's ``U``)."""
    scores = fit.data.weights[:, None] * score_residuals_sorted(fit.risk_sets, fit.coef)
    return units.collapse(scores)

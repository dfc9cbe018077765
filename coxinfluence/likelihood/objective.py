"""The objective Newton minimises: the Cox loss of a batch of deletions (plus an optional
ridge penalty), and the gradient tolerance that means "converged" for a data set."""
from __future__ import annotations

import numpy as np

from coxinfluence.numerics.newton import gradient_tolerance as newton_gradient_tolerance


def gradient_tolerance(data, tol):
    """The gradient tolerance for Cox data: the one rule of
    :func:`coxinfluence.numerics.newton.gradient_tolerance` over the events, ``tol`` or
    ``4 eps sum_{events} w_i max_j |x_ij|`` (centred covariates) when that is larger: the
    gradient sums one term per event, each scaled by its case weight."""
    if data.event_rows.size == 0:
        return tol
    return newton_gradient_tolerance(tol, data.weights * data.event, data.X)


def cox_objective(risk_sets, deleted=None, *, ridge=None, blas=True):
    """``objective(idx, theta)`` for :func:`newton`: the negative log partial likelihood of
    problem b without the rows ``deleted`` removes, plus ``0.5 sum_j s_bj theta_j^2`` when
    ``ridge`` (``s``: (d,) for every problem, or (B, d)) is given. A risk-set sum that
    underflows (diverging coefficients) gives that problem an infinite loss and NaN
    derivatives; the other problems of the batch are evaluated one by one then, so one
    diverging refit never fails its batch."""
    terms = risk_sets.terms(deleted)
    ridge = None if ridge is None else np.asarray(ridge, dtype=np.float64)

    def evaluate(idx, theta, hess=True):
        try:
            loss, grad, H = risk_sets.loss_grad_hess(theta, terms=terms.take(idx), hess=hess,
                                                     blas=blas)
        except FloatingPointError:
            if len(idx) > 1:        # isolate the diverging problems: the others go on
                parts = [evaluate(idx[b:b + 1], theta[b:b + 1], hess) for b in range(len(idx))]
                return (np.concatenate([p[0] for p in parts]),
                        np.concatenate([p[1] for p in parts]),
                        np.concatenate([p[2] for p in parts]) if hess else None)
            nan = np.full(theta.shape, np.nan)
            return (np.full(len(idx), np.inf), nan,
                    np.full(theta.shape + (theta.shape[1],), np.nan) if hess else None)
        if ridge is not None:
            s = ridge[idx] if ridge.ndim == 2 else np.broadcast_to(ridge, theta.shape)
            loss = loss + 0.5 * (s * theta ** 2).sum(axis=1)
            grad = grad + s * theta
            if hess:
                H = H + s[:, :, None] * np.eye(theta.shape[1])[None]
        return loss, grad, H

    return evaluate

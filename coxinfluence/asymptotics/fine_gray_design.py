"""A Fine-Gray design for the simulation of the gap, and one replicate's gaps.

**The design** (Fine & Gray 1999, JASA 94:496-509, Section 5's simulation, with ``d``
covariates): ``X ~ Uniform[-x_bound, x_bound]^d``; the cause of interest (status 1)
happens with probability ``P(cause 1 | x) = 1 - (1 - p)^{exp(x'theta)}`` and then at the
time drawn from::

    F_1(t | x) = 1 - [1 - p (1 - e^{-t})]^{exp(x'theta)},

so that its subdistribution hazard is ``lambda_1(t | x) = exp(x'theta) lambda_10(t)``,
``lambda_10(t) = p e^{-t} / (1 - p (1 - e^{-t}))``: the Fine-Gray model holds with the
true coefficients ``theta``. Otherwise the competing cause (status 2) happens at an
exponential time of rate ``exp(x'gamma)``. Censoring ``C ~ Exponential(censor_rate)``
is independent of everything, and follow-up ends at ``tau``: ``time = min(T, C, tau)``,
status 0 when ``min(C, tau) < T``. A subject alive at ``tau`` stays in the risk sets to
the end (crr's weights ``G(t-)/G(T_j-)`` keep the competing subjects in with a positive
weight), the analogue of the Cox theorem's condition 3.

**One replicate** (:func:`fine_gray_gap_row`): ``ci.fit_fine_gray``, then on the paper's
scale (``n (theta_hat - theta_hat_{-i})``,
:mod:`coxinfluence.influence_functions.fine_gray_audit`): ``VIF_n(i)`` (subject deleted,
censoring Kaplan-Meier re-estimated),
crr's influence function ``IF_n(i) = n H^{-1} (eta_i + psi_i)`` (Reid's, with the
censoring weights' term ``psi_i``) and the weights-held-fixed ``IF^fix_n(i) = n H^{-1}
eta_i``. The paper's Cox theorem gives ``VIF_n - IF_n = O_p(1/n)``; no theorem covers
Fine-Gray, and the simulation measures the slope. ``VIF_n - IF^fix_n`` keeps the
censoring term ``n H^{-1} psi_i = O_p(1)``: it should not vanish.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coxinfluence.influence_functions.fine_gray_audit import FineGrayAudit
from coxinfluence.models.fine_gray import fit_fine_gray

from .designs import (
    _check_follow_up,
    _check_n,
    _check_positive,
    _end_of_follow_up,
    _norms,
    _TrueCoefficients,
)
from .seeding import _as_generator

__all__ = ["FineGrayDesign", "fine_gray_gap_row"]


def _vector(value, name):
    try:
        v = np.asarray(value, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of numbers; got {value!r}") from None
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be a non-empty vector of finite numbers; got {value!r}")
    return tuple(float(t) for t in v)


@dataclass(frozen=True)
class FineGrayDesign(_TrueCoefficients):
    """Competing risks with a true Fine-Gray model for cause 1.

    The design of Fine & Gray (1999), Section 5, with ``d`` covariates (module docstring):
    cause 1 has the subdistribution hazard ``exp(x'theta) lambda_10(t)``, the competing
    cause (status 2) an exponential time of rate ``exp(x'gamma)``.

    Parameters
    ----------
    theta : tuple of float, default (0.7, -0.5)
        The subdistribution hazard's coefficients of cause 1 (theta*).
    gamma : tuple of float, optional
        The log-rate coefficients of the competing cause's exponential time (default
        ``-theta``; one per covariate).
    p : float, default 0.5
        ``P(cause 1)`` at ``x = 0``, in (0, 1).
    x_bound : float, default 1.0
        Half-width of the covariate cube (> 0).
    censor_rate : float, default 0.3
        Rate of the exponential censoring (>= 0; 0: none).
    tau : float or None, default 3.0
        End of follow-up (> 0; None: none).

    Raises
    ------
    ValueError
        A parameter out of its range, or ``gamma`` of another length than ``theta``.

    See Also
    --------
    CoxDesign : the Cox design of the paper's theorem.
    simulate_gap : with this design, also records the weights-held-fixed gap.

    Examples
    --------
    >>> from coxinfluence.asymptotics import FineGrayDesign
    >>> design = FineGrayDesign()
    >>> X, time, status = design.sample(200, 0)
    >>> np.bincount(status).tolist()  # censored, cause 1, competing cause
    [45, 71, 84]
    >>> print(np.round(design.cumulative_incidence([0.5, 1.0, 3.0], [0.0, 0.0]), 4))
    [0.1967 0.3161 0.4751]
    """

    theta: tuple = (0.7, -0.5)
    gamma: tuple | None = None
    p: float = 0.5
    x_bound: float = 1.0
    censor_rate: float = 0.3
    tau: float | None = 3.0

    def __post_init__(self):
        object.__setattr__(self, "theta", _vector(self.theta, "theta"))
        gamma = tuple(-t for t in self.theta) if self.gamma is None else _vector(self.gamma,
                                                                                  "gamma")
        if len(gamma) != len(self.theta):
            raise ValueError(f"gamma must have {len(self.theta)} entries (one per covariate); "
                             f"got {len(gamma)}")
        object.__setattr__(self, "gamma", gamma)
        p = _check_positive(self.p, "p")
        if p >= 1:
            raise ValueError(f"p must lie in (0, 1); got {self.p!r}")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "x_bound", _check_positive(self.x_bound, "x_bound"))
        _check_follow_up(self)

    def cumulative_incidence(self, t, X):
        """The true cumulative incidence of cause 1, ``F_1(t | x)``.

        ``F_1(t | x) = 1 - [1 - p (1 - e^{-t})]^{exp(x'theta)}`` for the rows of ``X``.

        Parameters
        ----------
        t : float or array-like
            Times (broadcast against the rows of ``X``).
        X : array-like
            ``(m, d)`` covariates, or one row ``(d,)``.

        Returns
        -------
        numpy.ndarray
            ``F_1(t | x)``, broadcast over ``t`` and the rows of ``X``.

        Examples
        --------
        >>> from coxinfluence.asymptotics import FineGrayDesign
        >>> F = FineGrayDesign().cumulative_incidence(1.0, [[0.0, 0.0], [1.0, -1.0]])
        >>> print(np.round(F, 4))
        [0.3161 0.7167]
        """
        e = np.exp(np.atleast_2d(np.asarray(X, dtype=np.float64)) @ self.theta_star)
        return 1.0 - (1.0 - self.p * -np.expm1(-np.asarray(t, dtype=np.float64))) ** e

    def sample(self, n: int, rng: np.random.Generator):
        """Draw ``n`` independent subjects.

        Parameters
        ----------
        n : int
            Sample size (>= 2).
        rng : numpy.random.Generator, numpy.random.SeedSequence or int
            The random stream (or a seed for one).

        Returns
        -------
        X : numpy.ndarray
            ``(n, d)`` covariates.
        time : numpy.ndarray
            ``(n,)`` times ``min(T, C, tau)``.
        status : numpy.ndarray
            ``(n,)`` int64: 0 censored, 1 the cause of the model, 2 the competing cause.

        Raises
        ------
        ValueError
            ``n`` is not an integer >= 2, or ``rng`` is not a generator or seed.
        """
        n = _check_n(n)
        rng = _as_generator(rng)
        X = rng.uniform(-self.x_bound, self.x_bound, size=(n, self.d))
        e1 = np.exp(X @ self.theta_star)
        p1 = -np.expm1(e1 * np.log1p(-self.p))             # 1 - (1 - p)^e1
        cause1 = rng.uniform(size=n) < p1
        # F_1(T | x) = v, v ~ Uniform(0, p1): the inverse of the module docstring's F_1
        v = rng.uniform(size=n) * p1
        t1 = -np.log1p(np.expm1(np.log1p(-v) / e1) / self.p)
        t2 = rng.exponential(size=n) / np.exp(X @ np.asarray(self.gamma))
        T = np.where(cause1, t1, t2)
        end = _end_of_follow_up(self, n, rng)
        failed = T <= end
        status = np.where(failed, np.where(cause1, 1, 2), 0).astype(np.int64)
        return X, np.where(failed, T, end), status


def fine_gray_gap_row(design, X, time, status, include_loo=False):
    """One replicate's row of the simulation table for a Fine-Gray sample.

    A row of :class:`~coxinfluence.asymptotics.GapResult`'s table: fits
    ``ci.fit_fine_gray`` (cause 1) and records the norms over subjects of
    ``VIF_n - IF_n`` (``gap_*``), of ``VIF_n - IF^fix_n`` (``fixed_gap_*``), of
    ``IF_n - IF^fix_n`` (``weight_term_*``, ``n H^{-1} psi_i``) and of ``IF_n`` (``if_*``)
    (module docstring).

    Parameters
    ----------
    design : FineGrayDesign
        The design (its ``theta_star`` gives ``theta_err``).
    X : numpy.ndarray
        ``(n, d)`` covariates.
    time : numpy.ndarray
        ``(n,)`` times.
    status : numpy.ndarray
        ``(n,)`` status: 0 censored, 1 the cause of the model, 2 the competing cause.
    include_loo : bool, default False
        Also the gaps of ``VIF_n``, ``IF_n`` and ``IF^fix_n`` to
        ``n (theta_hat - theta_hat_{-i})`` by exact refits (``vif_loo_*``, ``if_loo_*``,
        ``fixed_loo_*``).

    Returns
    -------
    dict
        The row: ``n_events``, ``n_competing``, ``converged``, ``gap_mean``, ``gap_max``,
        ``n_gap_mean``, ``n_gap_max``, ``fixed_gap_mean``, ``fixed_gap_max``,
        ``weight_term_mean``, ``if_mean``, ``if_max``, ``argmax_time_q``, ``theta_err``
        (and the ``*_loo_*`` columns).

    Examples
    --------
    >>> from coxinfluence.asymptotics import FineGrayDesign
    >>> from coxinfluence.asymptotics.fine_gray_design import fine_gray_gap_row
    >>> design = FineGrayDesign()
    >>> row = fine_gray_gap_row(design, *design.sample(200, 0))
    >>> row["n_events"], row["n_competing"], round(row["gap_mean"], 3)
    (71, 84, 0.035)
    """
    n = X.shape[0]
    fit = fit_fine_gray(X, time, status, 1)
    audit = FineGrayAudit(fit)
    VIF, IF = audit.vif, audit.reid
    FIX = -n * audit.fixed_weight_change()
    gap, fixed, term = _norms(VIF - IF), _norms(VIF - FIX), _norms(IF - FIX)
    row = {"n_events": fit.n_events, "n_competing": fit.n_competing,
           "converged": bool(fit.converged),
           "gap_mean": float(gap.mean()), "gap_max": float(gap.max()),
           "n_gap_mean": float(n * gap.mean()), "n_gap_max": float(n * gap.max()),
           "fixed_gap_mean": float(fixed.mean()), "fixed_gap_max": float(fixed.max()),
           "weight_term_mean": float(term.mean()),
           "if_mean": float(_norms(IF).mean()), "if_max": float(_norms(IF).max()),
           "argmax_time_q": float(np.mean(time < time[int(np.argmax(gap))])),
           "theta_err": float(np.linalg.norm(fit.coef - design.theta_star))}
    if include_loo:
        refits = audit.refit()
        target = n * (fit.coef[None, :] - refits.theta)
        ok = np.isfinite(target).all(axis=1)
        for name, est in (("vif", VIF), ("if", IF), ("fixed", FIX)):
            g = _norms(est[ok] - target[ok])
            row[f"{name}_loo_mean"], row[f"{name}_loo_max"] = float(g.mean()), float(g.max())
    return row

"""Data-generating designs for the simulation check of the paper's Cox theorem.

The paper's Theorem "Approximation Error Bound under Cox Model" (appendix section
"Formal Statement and Proof" of the informal theorem "Approximation Error under Cox
Regression") assumes i.i.d. rows ``Z_i = (X_i, Y_i, Delta_i)`` with no tied events and

1. theta* interior to a compact set;
2. covariates with a density bounded below on a compact support;
3. a truncation time ``tau < inf`` with ``P(Y > tau | X) >= delta_0 > 0`` (the risk set
   never empties before ``tau``);
4. a non-singular information matrix ``A``;

and non-informative censoring. :class:`CoxDesign` meets these conditions (uniform
covariates on a cube, constant baseline hazard, independent exponential censoring,
follow-up ending at ``tau``); with ``tau=None`` it breaks condition 3 and serves as
the negative control. :class:`GeneratorDesign` wraps any user generator
``f(rng, n) -> (X, time, event)``. A design is anything with ``.sample(n, rng)``
returning ``(X (n, d), time (n,), event (n,) bool)``; :func:`_as_design` turns the
``design`` argument of the public functions into one.

**Population quantities** of a design and the leading term of ``n * Diff_n(i)``.

The end of the proof of the paper's Theorem "Approximation Error Bound under Cox
Model" (appendix section "Formal Statement and Proof" of the informal theorem
"Approximation Error under Cox Regression"; no tied events) gives the leading term of
``n * Diff_n(i)``, ``Diff_n(i) := VIF_n(i) - IF_n(i)``, explicitly:

    n * Diff_n(i) -> A^{-1} e_i [ Delta_i (X_i - r(Y_i)) / s0(Y_i)
                                  - e_i * int_0^{Y_i} (X_i - r(t)) / s0(t)^2 dG(t) ]

with ``e_i = exp(theta*' X_i)``, ``r = s1 / s0``, the population risk-set moments
``s0(t) = E[I(Y >= t) exp(theta*' X)]``, ``s1(t) = E[I(Y >= t) exp(theta*' X) X]``,
``s2(t) = E[I(Y >= t) exp(theta*' X) X X']``, ``G(t) = E[I(Y <= t, Delta = 1)]`` and
``A = int_0^tau (s2/s0 - r r') dG``. (The
first term of the paper's last display is ``-A^{-1} e_i^2 / n * int J dG`` with
``J(t) = I(t <= Y_i) (X_i - r(t)) / s0(t)^2`` once the ``exp(theta' X_i)/n``
correction in ``J`` has vanished.) Its finite-n counterpart is an *exact* identity,

    n * Diff_n(i) = (H/n)^{-1} e_i [ Delta_i (X_i - R_n(Y_i)) / S0_n(Y_i)
                    - e_i (1/n) sum_{j: Y_j < Y_i} Delta_j (X_i - R_n(Y_j))
                                         / (S0_n(Y_j) (S0_n(Y_j) - e_i/n)) ]

(the proof's equation ``Diff counting``, with the ``j = i`` term of its sum over
``Y_j <= Y_i`` merged into its ``Delta_i`` term), which the tests use as an oracle for
the Cox core. Here ``H`` is the Hessian of the negative log partial likelihood at
``theta_hat``, ``S0_n, S1_n`` the empirical risk-set sums and ``R_n = S1_n / S0_n``.

Two ways to get ``s0, s1, G, A`` and the leading term:

* :class:`QuadraturePopulation` (``CoxDesign.population()``): Gauss-Legendre
  quadrature, for a :class:`~coxinfluence.asymptotics.CoxDesign` with finite ``tau``;
* :func:`monte_carlo_population` / :class:`MonteCarloPopulation`: the empirical
  versions at theta* on one very large sample, for any design with a known theta*.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .seeding import _as_generator

__all__ = ["CoxDesign", "GeneratorDesign", "QuadraturePopulation", "MonteCarloPopulation",
           "monte_carlo_population"]


def _check_positive(value, name, *, allow_zero=False):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number; got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}; got {value!r}")
    return v


def _check_follow_up(design):
    """Validate ``censor_rate`` (>= 0) and ``tau`` (> 0 or None) of a frozen design."""
    object.__setattr__(design, "censor_rate",
                       _check_positive(design.censor_rate, "censor_rate", allow_zero=True))
    if design.tau is not None:
        object.__setattr__(design, "tau", _check_positive(design.tau, "tau"))


def _end_of_follow_up(design, n, rng):
    """``min(C, tau)`` per row: ``C ~ Exponential(censor_rate)`` (infinite when the rate is
    0), ``tau`` the end of follow-up (none when None)."""
    C = (rng.exponential(1.0, size=n) / design.censor_rate if design.censor_rate > 0
         else np.full(n, np.inf))
    return C if design.tau is None else np.minimum(C, design.tau)


class _TrueCoefficients:
    """``d`` and ``theta_star`` of a design whose ``theta`` is a tuple of floats."""

    theta: tuple

    @property
    def d(self) -> int:
        """Number of covariates."""
        return len(self.theta)

    @property
    def theta_star(self) -> np.ndarray:
        """The true coefficient vector theta* (float64 copy)."""
        return np.array(self.theta, dtype=np.float64)


def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"sample size n must be an integer; got {n!r}")
    if n < 2:
        raise ValueError(f"sample size n must be >= 2; got {n}")
    return int(n)


@dataclass(frozen=True)
class CoxDesign(_TrueCoefficients):
    """Cox proportional-hazards design satisfying the conditions of the paper's theorem.

    ``X ~ Uniform[-x_bound, x_bound]^d`` (condition 2: density ``(2 x_bound)^{-d}``
    on a compact cube); ``T | X`` exponential with hazard
    ``baseline_hazard * exp(theta' X)``; ``C ~ Exponential(censor_rate)``
    independent of ``(T, X)`` (non-informative); follow-up ends at ``tau``:
    ``Y = min(T, C, tau)``, ``Delta = I(T <= min(C, tau))``.

    Parameters
    ----------
    theta : tuple of float, default (0.7, -0.5)
        The true coefficients theta* (a non-empty vector of finite numbers; ``d`` is its
        length).
    x_bound : float, default 1.0
        Half-width of the covariate cube (> 0).
    baseline_hazard : float, default 1.0
        The constant baseline hazard ``lambda0`` (> 0).
    censor_rate : float, default 0.2
        Rate of the exponential censoring (>= 0; 0: no censoring before ``tau``).
    tau : float or None, default 1.0
        End of follow-up (> 0); None removes the truncation (the negative control).

    Raises
    ------
    ValueError
        A parameter out of its range.

    See Also
    --------
    GeneratorDesign : any user generator as a design.
    FineGrayDesign : competing risks with a true Fine-Gray model.
    simulate_gap : the simulation that samples from a design.

    Notes
    -----
    Condition (3) of the theorem asks that the risk set keeps positive probability at
    the truncation time. The paper writes ``P(Y > tau | X) >= delta_0``; with follow-up
    ending at ``tau`` (so ``Y <= tau``) this reads ``P(Y >= tau | X) =
    P(min(T, C) >= tau | X) = exp(-(baseline_hazard e^{theta'X} + censor_rate) tau)
    >= delta0`` (see :attr:`delta0`), as in Andersen & Gill (1982), where counting
    processes are observed on ``[0, tau]``. Rows still at risk at ``tau`` are censored
    there; they share the time ``tau`` but are never events, so there are no tied
    *events* (the theorem's assumption; event times are continuous).

    ``tau=None`` removes the truncation (``Y = min(T, C)``): risk sets then empty out
    in the tail, which breaks condition (3). Use it as the negative control.

    Examples
    --------
    >>> from coxinfluence.asymptotics import CoxDesign
    >>> design = CoxDesign()
    >>> design.d, design.satisfies_theorem, round(design.delta0, 4)
    (2, True, 0.0296)
    >>> X, time, event = design.sample(5, np.random.default_rng(0))
    >>> X.shape, bool(time.max() <= design.tau), event.dtype
    ((5, 2), True, dtype('bool'))
    >>> CoxDesign(tau=None).satisfies_theorem  # the negative control
    False
    """

    theta: tuple = (0.7, -0.5)
    x_bound: float = 1.0
    baseline_hazard: float = 1.0
    censor_rate: float = 0.2
    tau: float | None = 1.0

    def __post_init__(self):
        try:
            theta = np.asarray(self.theta, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise ValueError(f"theta must be a sequence of numbers; got {self.theta!r}") from None
        if theta.size == 0 or not np.all(np.isfinite(theta)):
            raise ValueError("theta must be a non-empty vector of finite numbers; "
                             f"got {self.theta!r}")
        object.__setattr__(self, "theta", tuple(float(t) for t in theta))
        object.__setattr__(self, "x_bound", _check_positive(self.x_bound, "x_bound"))
        object.__setattr__(self, "baseline_hazard",
                           _check_positive(self.baseline_hazard, "baseline_hazard"))
        _check_follow_up(self)

    @property
    def delta0(self) -> float:
        """``inf_x P(Y >= tau | X = x)``; 0 without truncation (condition 3 fails)."""
        if self.tau is None:
            return 0.0
        eta_max = self.x_bound * float(np.abs(self.theta_star).sum())
        return math.exp(-(self.baseline_hazard * math.exp(eta_max) + self.censor_rate) * self.tau)

    @property
    def satisfies_theorem(self) -> bool:
        """Whether the design meets the theorem's conditions (here: a truncation time)."""
        return self.tau is not None and self.delta0 > 0

    def sample(self, n: int, rng: np.random.Generator):
        """Draw ``n`` independent rows of the design.

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
            ``(n,)`` follow-up times ``Y = min(T, C, tau)``.
        event : numpy.ndarray
            ``(n,)`` bool event indicators ``Delta``.

        Raises
        ------
        ValueError
            ``n`` is not an integer >= 2, or ``rng`` is not a generator or seed.

        Examples
        --------
        >>> from coxinfluence.asymptotics import CoxDesign
        >>> X, time, event = CoxDesign().sample(200, 0)
        >>> X.shape, bool(np.all(np.abs(X) <= 1)), bool(np.all(time <= 1.0))
        ((200, 2), True, True)
        """
        n = _check_n(n)
        rng = _as_generator(rng)
        theta = self.theta_star
        X = rng.uniform(-self.x_bound, self.x_bound, size=(n, self.d))
        rate = self.baseline_hazard * np.exp(X @ theta)
        T = rng.exponential(1.0, size=n) / rate
        end = _end_of_follow_up(self, n, rng)
        event = T <= end
        time = np.where(event, T, end)
        return X, time, event

    def population(self, **kwargs) -> QuadraturePopulation:
        """Population quantities of this design by quadrature (needs a finite ``tau``).

        Parameters
        ----------
        **kwargs
            ``n_quad`` and ``n_grid`` of :class:`QuadraturePopulation`.

        Returns
        -------
        QuadraturePopulation
            ``QuadraturePopulation(self, **kwargs)``.

        Raises
        ------
        ValueError
            ``tau`` is None, or the options are out of range.

        Examples
        --------
        >>> from coxinfluence.asymptotics import CoxDesign
        >>> pop = CoxDesign().population()
        >>> print(np.round(pop.s0([0.0, 0.5, 1.0]), 4))
        [1.1294 0.528  0.2679]
        """
        return QuadraturePopulation(self, **kwargs)


@dataclass(frozen=True)
class GeneratorDesign:
    """Any user generator ``generator(rng, n) -> (X, time, event)`` as a design.

    Parameters
    ----------
    generator : callable
        ``generator(rng, n)``, with ``rng`` a ``numpy.random.Generator``, returning
        ``(X (n, d) or (n,), time (n,), event (n,) 0/1 or bool)``. For process-based
        executors it must be picklable (a module-level function, not a lambda).
    theta : tuple of float, optional
        The true coefficient vector; needed only for the leading term
        (:func:`~coxinfluence.asymptotics.monte_carlo_population`) and ``theta_err``.
    name : str, default "user generator"
        A label.

    Raises
    ------
    ValueError
        ``generator`` is not callable, or ``theta`` is not a vector of finite numbers.

    See Also
    --------
    CoxDesign : the design that meets the theorem's conditions.

    Examples
    --------
    >>> from coxinfluence.asymptotics import GeneratorDesign
    >>> def weibull(rng, n):
    ...     x = rng.normal(size=n)
    ...     t = rng.weibull(1.5, size=n) * np.exp(-0.5 * x / 1.5)
    ...     return x, np.minimum(t, 2.0), t <= 2.0
    >>> design = GeneratorDesign(weibull, theta=(0.5,))
    >>> X, time, event = design.sample(100, 0)
    >>> X.shape, design.theta_star
    ((100, 1), array([0.5]))
    """

    generator: Callable
    theta: tuple | None = None
    name: str = "user generator"

    def __post_init__(self):
        if not callable(self.generator):
            raise ValueError("generator must be callable as generator(rng, n); "
                             f"got {self.generator!r}")
        if self.theta is not None:
            theta = np.asarray(self.theta, dtype=np.float64).ravel()
            if theta.size == 0 or not np.all(np.isfinite(theta)):
                raise ValueError("theta must be a non-empty vector of finite numbers; "
                                 f"got {self.theta!r}")
            object.__setattr__(self, "theta", tuple(float(t) for t in theta))

    @property
    def theta_star(self):
        """The true coefficient vector theta* (float64 copy), or None when not given.

        """
        return None if self.theta is None else np.array(self.theta, dtype=np.float64)

    def sample(self, n: int, rng: np.random.Generator):
        """Draw ``n`` rows from the generator, checked and converted.

        Parameters
        ----------
        n : int
            Sample size (>= 2).
        rng : numpy.random.Generator, numpy.random.SeedSequence or int
            The random stream (or a seed for one), passed to the generator as a Generator.

        Returns
        -------
        X : numpy.ndarray
            ``(n, d)`` float64 covariates (a 1-D ``X`` becomes one column).
        time : numpy.ndarray
            ``(n,)`` float64 times.
        event : numpy.ndarray
            ``(n,)`` bool event indicators.

        Raises
        ------
        ValueError
            ``n`` is not an integer >= 2, the generator does not return a tuple
            ``(X, time, event)`` of ``n`` rows, or the event indicator is not 0/1.
        """
        n = _check_n(n)
        out = self.generator(_as_generator(rng), n)
        try:
            X, time, event = out
        except (TypeError, ValueError):
            raise ValueError("the generator must return a tuple (X, time, event)") from None
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        time = np.asarray(time, dtype=np.float64).ravel()
        event = np.asarray(event).ravel()
        if X.ndim != 2 or X.shape[0] != n or time.shape[0] != n or event.shape[0] != n:
            raise ValueError(f"the generator returned shapes X {X.shape}, time {time.shape}, "
                             f"event {event.shape}; expected ({n}, d), ({n},), ({n},)")
        if not np.all(np.isin(event, (0, 1))):
            raise ValueError("the generator's event indicator must be 0/1 or boolean")
        return X, time, event.astype(bool)


def _as_design(design):
    if design is None:
        return CoxDesign()
    if hasattr(design, "sample") and callable(design.sample):
        return design
    if callable(design):
        return GeneratorDesign(design)
    raise ValueError("design must be a CoxDesign, an object with .sample(n, rng), or a "
                     f"callable generator(rng, n) -> (X, time, event); got {design!r}")


# ------------------------------------------------ population quantities of a design
def _norms(a):
    """Euclidean norm of each row of a 2-D array."""
    return np.sqrt(np.einsum("ij,ij->i", a, a))


class _Population:
    """Common leading-term formula; subclasses provide s0, s1, K0, K1 and A."""

    theta: np.ndarray
    information: np.ndarray

    def leading_term(self, X, time, event) -> np.ndarray:
        """Population limit of ``n * Diff_n(i)`` at the rows ``(X_i, Y_i, Delta_i)``.

        The last display of the proof of the paper's Theorem "Approximation Error
        Bound under Cox Model"::

            L(Z_i) = A^{-1} e_i [ Delta_i (X_i - r(Y_i)) / s0(Y_i)
                                  - e_i int_0^{Y_i} (X_i - r(t)) / s0(t)^2 dG(t) ],

        ``e_i = exp(theta*' X_i)``, ``r = s1/s0``.

        Parameters
        ----------
        X : array-like
            ``(n, d)`` covariates (1-D: one covariate).
        time : array-like
            ``(n,)`` times ``Y_i``.
        event : array-like
            ``(n,)`` event indicators ``Delta_i``.

        Returns
        -------
        numpy.ndarray
            ``(n, d)`` the leading term ``L(Z_i)`` of each row.

        Raises
        ------
        ValueError
            The shapes do not match each other or the population's ``d``.

        Examples
        --------
        >>> from coxinfluence.asymptotics import CoxDesign
        >>> design = CoxDesign()
        >>> X, time, event = design.sample(3, 0)
        >>> print(np.round(design.population().leading_term(X, time, event), 3))
        [[ 1.708 -3.087]
         [-6.98  -8.014]
         [-0.012 -0.031]]
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        time = np.asarray(time, dtype=np.float64).ravel()
        event = np.asarray(event).astype(bool).ravel()
        if X.shape[1] != self.theta.size or X.shape[0] != time.size or time.size != event.size:
            raise ValueError(f"X {X.shape}, time {time.shape}, event {event.shape} do not match "
                             f"the population's d={self.theta.size}")
        e = np.exp(X @ self.theta)
        s0 = self.s0(time)
        r = self.s1(time) / s0[:, None]
        K0, K1 = self.K(time)
        inner = (event / s0)[:, None] * (X - r) - e[:, None] * (X * K0[:, None] - K1)
        return np.linalg.solve(self.information, (e[:, None] * inner).T).T


class QuadraturePopulation(_Population):
    """Population ``s0, s1, s2, G, A`` of a :class:`CoxDesign` by quadrature.

    ``E_X[...]`` is a tensor Gauss-Legendre rule on the covariate cube (``n_quad``
    nodes per axis). In time, since the model has hazard ``lambda0 e^{theta'X}`` and
    censoring is non-informative, ``dG(t) = lambda0 s0(t) dt`` on ``[0, tau)``, and
    ``P(Y >= t | X) = exp(-(lambda0 e^{theta'X} + c) t)``. Thus::

        s_k(t) = E_X[ e^{theta'X} X^{(k)} exp(-(lambda0 e^{theta'X} + c) t) ],
        A = lambda0 int_0^tau (s2 - s1 s1'/s0) dt,
        K0(y) = int_0^y dG/s0^2 = lambda0 int_0^y dt/s0,
        K1(y) = int_0^y r dG/s0^2 = lambda0 int_0^y s1/s0^2 dt.

    Parameters
    ----------
    design : CoxDesign
        The design; its ``tau`` must be finite.
    n_quad : int, optional
        Gauss-Legendre nodes per covariate axis; by default ``round(40000 ** (1/d))``
        clipped to ``[6, 40]``. ``n_quad ** d`` may not exceed 2,000,000.
    n_grid : int, default 2049
        Points of ``[0, tau]`` for the splines (at least 16).

    Attributes
    ----------
    theta : numpy.ndarray
        theta*.
    information : numpy.ndarray
        ``(d, d)`` the population information ``A``.
    tau : float
        The end of follow-up.

    Raises
    ------
    ValueError
        ``design`` is not a :class:`CoxDesign`, its ``tau`` is None (condition 3 fails
        and ``int dG/s0^2`` diverges), ``d`` is too large for tensor quadrature (use
        :func:`monte_carlo_population`), or ``n_grid < 16``.

    See Also
    --------
    monte_carlo_population : the same quantities for any design, from a large sample.

    Notes
    -----
    ``s0, s1`` and the integrands of ``K0, K1`` are cubic splines on ``n_grid`` points of
    ``[0, tau]``. For the default ``CoxDesign()`` their relative error is about 1e-14 (the
    tests require 1e-10 for ``s0`` and 1e-9 for ``K0``); it grows when the highest-risk
    rows leave the risk set fast, so that ``s0`` bends sharply near 0 (about 1e-6 near
    ``t = 0`` for ``theta=(2, -1.5), x_bound=1.5, tau=2``, 3e-10 there with
    ``n_grid=8193``): raise ``n_grid`` for such designs. ``A`` uses a 64-point
    Gauss-Legendre rule in time.

    Examples
    --------
    >>> from coxinfluence.asymptotics import CoxDesign, QuadraturePopulation
    >>> pop = QuadraturePopulation(CoxDesign())
    >>> print(np.round(pop.G([0.5, 1.0]), 4))
    [0.3925 0.583 ]
    >>> pop.information.shape
    (2, 2)
    """

    def __init__(self, design: CoxDesign, *, n_quad: int | None = None, n_grid: int = 2049):
        from scipy.interpolate import CubicSpline

        if not isinstance(design, CoxDesign):
            raise ValueError("QuadraturePopulation needs a CoxDesign; use monte_carlo_population "
                             "for other designs")
        if design.tau is None:
            raise ValueError("the leading term needs a truncation time: design.tau is None "
                             "(the theorem's condition 3 fails and int dG/s0^2 diverges)")
        d = design.d
        if n_quad is None:
            n_quad = max(6, min(40, int(round(40000 ** (1.0 / d)))))
        if n_quad ** d > 2_000_000:
            raise ValueError(f"d={d} is too large for tensor quadrature; "
                             "use monte_carlo_population")
        if n_grid < 16:
            raise ValueError(f"n_grid must be >= 16; got {n_grid}")
        self.design = design
        self.theta = design.theta_star
        self.tau = float(design.tau)
        lam, c, b = design.baseline_hazard, design.censor_rate, design.x_bound
        u, w = np.polynomial.legendre.leggauss(n_quad)
        grids = np.meshgrid(*([u * b] * d), indexing="ij")
        self._x = np.stack([g.ravel() for g in grids], axis=1)                # (Q, d)
        wq = np.ones(1)
        for _ in range(d):
            wq = np.multiply.outer(wq, w * 0.5).ravel()                       # density 1/(2b)^d
        ee = np.exp(self._x @ self.theta)
        self._w = wq * ee                                                    # weight * e^{theta'x}
        self._rate = lam * ee + c
        self._lam = lam

        t = np.linspace(0.0, self.tau, n_grid)
        s0, s1, _ = self._moments(t, second=False)
        self._s0 = CubicSpline(t, s0)
        self._s1 = CubicSpline(t, s1)
        self._K0 = CubicSpline(t, lam / s0).antiderivative()
        self._K1 = CubicSpline(t, lam * s1 / (s0 ** 2)[:, None]).antiderivative()

        ug, wg = np.polynomial.legendre.leggauss(64)
        tg = 0.5 * self.tau * (ug + 1.0)
        g0, g1, g2 = self._moments(tg, second=True)
        integrand = g2 - np.einsum("ta,tb->tab", g1, g1) / g0[:, None, None]
        self.information = lam * 0.5 * self.tau * np.einsum("t,tab->ab", wg, integrand)

    def _moments(self, t, *, second):
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        out0 = np.empty(t.size)
        out1 = np.empty((t.size, self.theta.size))
        out2 = np.empty((t.size, self.theta.size, self.theta.size)) if second else None
        for start in range(0, t.size, 256):
            sl = slice(start, start + 256)
            k = self._w * np.exp(-np.outer(t[sl], self._rate))                # (m, Q)
            out0[sl] = k.sum(axis=1)
            out1[sl] = k @ self._x
            if second:
                out2[sl] = np.einsum("mq,qa,qb->mab", k, self._x, self._x)
        return out0, out1, out2

    def _check_t(self, t):
        t = np.asarray(t, dtype=np.float64)
        if np.any(t < 0) or np.any(t > self.tau * (1 + 1e-12)):
            raise ValueError(f"times must lie in [0, tau={self.tau}]")
        return np.clip(t, 0.0, self.tau)

    def s0(self, t):
        """``s0(t) = E[I(Y >= t) exp(theta*' X)]`` for ``0 <= t <= tau``.

        Parameters
        ----------
        t : float or array-like
            Times in ``[0, tau]``.

        Returns
        -------
        numpy.ndarray
            ``s0(t)``, the shape of ``t``.

        Raises
        ------
        ValueError
            A time outside ``[0, tau]``.
        """
        return self._s0(self._check_t(t))

    def s1(self, t):
        """``s1(t) = E[I(Y >= t) exp(theta*' X) X]`` for ``0 <= t <= tau``.

        Parameters
        ----------
        t : float or array-like
            Times in ``[0, tau]``.

        Returns
        -------
        numpy.ndarray
            ``s1(t)``, shape ``t.shape + (d,)``.

        Raises
        ------
        ValueError
            A time outside ``[0, tau]``.
        """
        return self._s1(self._check_t(t))

    def s0_exact(self, t):
        """``s0`` by direct quadrature (no spline); for checks.

        Parameters
        ----------
        t : float or array-like
            Times in ``[0, tau]``.

        Returns
        -------
        numpy.ndarray
            ``s0(t)``, one value per time (1-D).

        Raises
        ------
        ValueError
            A time outside ``[0, tau]``.
        """
        return self._moments(self._check_t(t), second=False)[0]

    def G(self, t):
        """``G(t) = P(Y <= t, Delta = 1) = lambda0 int_0^t s0(u) du``.

        Parameters
        ----------
        t : float or array-like
            Times in ``[0, tau]``.

        Returns
        -------
        numpy.ndarray
            ``G(t)``, the shape of ``t``.

        Raises
        ------
        ValueError
            A time outside ``[0, tau]``.
        """
        t = self._check_t(t)
        return self._lam * self._s0.antiderivative()(t)

    def K(self, y):
        """``(int_0^y dG/s0^2, int_0^y r dG/s0^2)`` for the leading term.

        Parameters
        ----------
        y : float or array-like
            Times in ``[0, tau]``.

        Returns
        -------
        K0 : numpy.ndarray
            ``int_0^y dG/s0^2``, the shape of ``y``.
        K1 : numpy.ndarray
            ``int_0^y r dG/s0^2``, shape ``y.shape + (d,)``.

        Raises
        ------
        ValueError
            A time outside ``[0, tau]``.
        """
        y = self._check_t(y)
        return self._K0(y), self._K1(y)

    def leading_term_sup(self, *, n_x: int = 100_000, n_y: int = 129) -> dict:
        """``sup ||L(z)||`` over the support, by grid search.

        ``X`` on a regular grid of about ``n_x`` points of the cube (``round(n_x ** (1/d))``,
        at least 3, per axis), ``Y`` on ``n_y`` equispaced points of ``[0, tau]``, ``Delta``
        in {0, 1}.

        Parameters
        ----------
        n_x : int, default 100000
            Approximate number of covariate grid points.
        n_y : int, default 129
            Number of time points.

        Returns
        -------
        dict
            ``sup`` (the value) and where it is attained: ``x``, ``y``, ``event``.

        Notes
        -----
        ``L`` is bounded here (the theorem's conditions), so the max over ``n`` rows of
        ``||n Diff_n(i)||`` tends to this finite value; how slowly the sample reaches the
        maximizing corner explains the slower slope of the max gap.

        Examples
        --------
        >>> from coxinfluence.asymptotics import CoxDesign
        >>> best = CoxDesign().population().leading_term_sup(n_x=400, n_y=17)
        >>> round(best["sup"], 2), best["x"].tolist(), best["y"], best["event"]
        (168.82, [1.0, -1.0], 1.0, False)
        """
        d, b = self.theta.size, self.design.x_bound
        m = max(3, int(round(n_x ** (1.0 / d))))
        axes = np.meshgrid(*([np.linspace(-b, b, m)] * d), indexing="ij")
        X = np.stack([a.ravel() for a in axes], axis=1)
        best = {"sup": -np.inf}
        for y in np.linspace(0.0, self.tau, n_y):
            for delta in (False, True):
                L = _norms(self.leading_term(X, np.full(X.shape[0], y), np.full(X.shape[0], delta)))
                k = int(np.argmax(L))
                if L[k] > best["sup"]:
                    best = {"sup": float(L[k]), "x": X[k].copy(), "y": float(y), "event": delta}
        return best


class MonteCarloPopulation(_Population):
    """Population quantities from a very large sample ``(X, Y, Delta)`` at a known theta*.

    The empirical versions at ``theta*`` with ``N`` rows: ``s0(t) = N^{-1}
    sum_k I(Y_k >= t) e_k``, ``s1`` likewise, ``dG = N^{-1} sum_j Delta_j
    delta_{Y_j}``, ``A = N^{-1} sum_j Delta_j (s2/s0 - r r')(Y_j)``; they converge to
    the population values at rate ``N^{-1/2}``. Build it with
    :func:`monte_carlo_population`.

    Parameters
    ----------
    X : array-like
        ``(N, d)`` covariates (1-D: one covariate).
    time : array-like
        ``(N,)`` times.
    event : array-like
        ``(N,)`` event indicators.
    theta : array-like
        ``(d,)`` the true coefficients theta*.

    Attributes
    ----------
    theta : numpy.ndarray
        theta*.
    information : numpy.ndarray
        ``(d, d)`` the information ``A``.
    n_mc : int
        ``N``.

    Raises
    ------
    ValueError
        ``theta`` and ``X`` differ in ``d``.

    See Also
    --------
    monte_carlo_population : draws the sample from a design.
    QuadraturePopulation : the same by quadrature, for a :class:`CoxDesign`.

    Examples
    --------
    >>> from coxinfluence.asymptotics import CoxDesign, MonteCarloPopulation
    >>> design = CoxDesign()
    >>> X, time, event = design.sample(20_000, 1)
    >>> pop = MonteCarloPopulation(X, time, event, design.theta_star)
    >>> pop.n_mc, pop.information.shape
    (20000, (2, 2))
    """

    def __init__(self, X, time, event, theta):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        theta = np.asarray(theta, dtype=np.float64).ravel()
        time = np.asarray(time, dtype=np.float64).ravel()
        event = np.asarray(event).astype(bool).ravel()
        if X.shape[1] != theta.size:
            raise ValueError(f"theta has {theta.size} entries but X has {X.shape[1]} columns")
        N = X.shape[0]
        self.theta = theta
        order = np.argsort(time, kind="stable")
        ts, Xs, ev = time[order], X[order], event[order]
        e = np.exp(Xs @ theta)
        # risk-set sums over {k : Y_k >= Y_(m)} = suffix sums (ties: first index of the time)
        S0 = np.cumsum(e[::-1])[::-1] / N
        S1 = np.cumsum((e[:, None] * Xs)[::-1], axis=0)[::-1] / N
        first = np.searchsorted(ts, ts, side="left")
        S0, S1 = S0[first], S1[first]
        self._times = ts
        self._S0 = np.append(S0, 0.0)
        self._S1 = np.vstack([S1, np.zeros((1, theta.size))])
        r = S1[ev] / S0[ev][:, None]
        self._event_times = ts[ev]
        self._K0 = np.concatenate([[0.0], np.cumsum(1.0 / S0[ev] ** 2) / N])
        self._K1 = np.vstack([np.zeros((1, theta.size)),
                              np.cumsum(r / (S0[ev] ** 2)[:, None], axis=0) / N])
        S2 = np.cumsum(np.einsum("k,ka,kb->kab", e, Xs, Xs)[::-1], axis=0)[::-1] / N
        S2 = S2[first][ev]
        V = S2 / S0[ev][:, None, None] - np.einsum("ka,kb->kab", r, r)
        self.information = V.sum(axis=0) / N
        self.n_mc = N

    def s0(self, t):
        """The empirical ``s0(t) = N^{-1} sum_k I(Y_k >= t) e_k``.

        Parameters
        ----------
        t : float or array-like
            Times.

        Returns
        -------
        numpy.ndarray
            ``s0(t)``, the shape of ``t``.
        """
        idx = np.searchsorted(self._times, np.asarray(t, dtype=np.float64), side="left")
        return self._S0[idx]

    def s1(self, t):
        """The empirical ``s1(t) = N^{-1} sum_k I(Y_k >= t) e_k X_k``.

        Parameters
        ----------
        t : float or array-like
            Times.

        Returns
        -------
        numpy.ndarray
            ``s1(t)``, shape ``t.shape + (d,)``.
        """
        idx = np.searchsorted(self._times, np.asarray(t, dtype=np.float64), side="left")
        return self._S1[idx]

    def G(self, t):
        """The empirical ``G(t) = N^{-1} sum_j Delta_j I(Y_j <= t)``.

        Parameters
        ----------
        t : float or array-like
            Times.

        Returns
        -------
        numpy.ndarray
            ``G(t)``, the shape of ``t``.
        """
        return np.searchsorted(self._event_times, np.asarray(t, dtype=np.float64),
                               side="right") / self.n_mc

    def K(self, y):
        """``(int_0^y dG/s0^2, int_0^y r dG/s0^2)``: sums over the events strictly before ``y``.

        As the sum over ``j: Y_j < Y_i`` of the finite-n identity.

        Parameters
        ----------
        y : float or array-like
            Times.

        Returns
        -------
        K0 : numpy.ndarray
            ``int_0^y dG/s0^2``, the shape of ``y``.
        K1 : numpy.ndarray
            ``int_0^y r dG/s0^2``, shape ``y.shape + (d,)``.
        """
        # integral over [0, y): events strictly before y, as the sum over j: Y_j < Y_i
        idx = np.searchsorted(self._event_times, np.asarray(y, dtype=np.float64), side="left")
        return self._K0[idx], self._K1[idx]


def monte_carlo_population(design, n_mc: int = 1_000_000, *, seed=12345,
                           theta=None) -> MonteCarloPopulation:
    """Population quantities of any design from one very large sample (``n_mc`` rows).

    Parameters
    ----------
    design : CoxDesign, GeneratorDesign, object with ``.sample(n, rng)``, or callable
        The design (a callable is a generator ``f(rng, n) -> (X, time, event)``).
    n_mc : int, default 1000000
        Rows of the sample.
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, default 12345
        The sample's random stream.
    theta : array-like, optional
        The true coefficients; default ``design.theta_star``. A user generator needs it
        given.

    Returns
    -------
    MonteCarloPopulation
        The empirical ``s0, s1, G, A`` and the leading term.

    Raises
    ------
    ValueError
        No true ``theta`` (pass ``theta=...``), or a bad ``design`` or ``n_mc``.

    See Also
    --------
    QuadraturePopulation : the same by quadrature, for a :class:`CoxDesign`.

    Examples
    --------
    >>> from coxinfluence.asymptotics import CoxDesign, monte_carlo_population
    >>> pop = monte_carlo_population(CoxDesign(), 20_000, seed=1)
    >>> print(np.round(pop.s0([0.0, 0.5, 1.0]), 3))
    [1.124 0.531 0.266]
    """
    design = _as_design(design)
    if theta is None:
        theta = getattr(design, "theta_star", None)
    if theta is None:
        raise ValueError("monte_carlo_population needs the true theta (pass theta=...)")
    X, time, event = design.sample(_check_n(n_mc), _as_generator(seed))
    return MonteCarloPopulation(X, time, event, theta)

"""Simulation check of the gap between the VIF and Reid's influence function.

The paper's appendix ("Approximation Error Bound under Cox Model", Theorem and proof in
Appendix ``appendix:Cox-formula``) proves, for the Cox model with no tied events,

    Diff_n(i) := VIF_n(i) - IF_n(i) = O_p(1/n),      while  IF_n(i) = Omega_p(1),

under four conditions: (1) theta* interior to a compact set; (2) covariates with a
density bounded below on a compact support; (3) a truncation time tau < inf with
P(Y > tau | X) >= delta_0 > 0 (the risk set never empties before tau); (4) a
non-singular information matrix A; and non-informative censoring.

The end of the proof gives the leading term of ``n * Diff_n(i)`` explicitly:

    n * Diff_n(i) -> A^{-1} e_i [ Delta_i (X_i - r(Y_i)) / s0(Y_i)
                                  - e_i * int_0^{Y_i} (X_i - r(t)) / s0(t)^2 dG(t) ]

with ``e_i = exp(theta*' X_i)``, ``r = s1 / s0``, the population risk-set moments
``s0(t) = E[I(Y >= t) exp(theta*' X)]``, ``s1(t) = E[I(Y >= t) exp(theta*' X) X]``,
``G(t) = E[I(Y <= t, Delta = 1)]`` and ``A = int_0^tau (s2/s0 - r r') dG``. (The
first term of the paper's last display is ``-A^{-1} e_i^2 / n * int J dG`` with
``J(t) = I(t <= Y_i) (X_i - r(t)) / s0(t)^2`` once the ``exp(theta' X_i)/n``
correction in ``J`` has vanished.) Its finite-n counterpart is an *exact* identity,

    n * Diff_n(i) = (H/n)^{-1} e_i [ Delta_i (X_i - R_n(Y_i)) / S0_n(Y_i)
                    - e_i (1/n) sum_{j: Y_j < Y_i} Delta_j (X_i - R_n(Y_j))
                                         / (S0_n(Y_j) (S0_n(Y_j) - e_i/n)) ]

(the third display of the proof, eq. ``Diff counting``), which the tests use as an
oracle for the Cox core.

This module provides

* :class:`CoxDesign`, a data-generating design that satisfies the theorem's conditions
  (uniform covariates on a cube, constant baseline hazard, independent exponential
  censoring, follow-up ending at ``tau``) and, with ``tau=None``, a negative control
  that breaks condition (3); :class:`GeneratorDesign` wraps any user generator
  ``f(rng, n) -> (X, time, event)``;
* :class:`QuadraturePopulation` / :func:`monte_carlo_population`: the population
  quantities ``s0, s1, G, A`` and the leading term above, by Gauss-Legendre
  quadrature (for :class:`CoxDesign`) or from a very large Monte Carlo sample (any
  design with a known theta*);
* :func:`simulate_gap`: replicates over sample sizes, reproducible from ``seed``
  whatever the ``concurrent.futures.Executor`` runs them, returning a
  :class:`GapResult` with a tidy table, log-log slopes with bootstrap intervals and a
  ``plot()``.
"""
from __future__ import annotations

import math
import numbers
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "CoxDesign",
    "GeneratorDesign",
    "QuadraturePopulation",
    "MonteCarloPopulation",
    "monte_carlo_population",
    "SlopeFit",
    "loglog_slope",
    "GapResult",
    "simulate_gap",
    "replicate_seed",
]


# ----------------------------------------------------------------------------- designs

def _check_positive(value, name, *, allow_zero=False):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number; got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}; got {value!r}")
    return v


@dataclass(frozen=True)
class CoxDesign:
    """Cox proportional-hazards design satisfying the conditions of the paper's theorem.

    ``X ~ Uniform[-x_bound, x_bound]^d`` (condition 2: density ``(2 x_bound)^{-d}``
    on a compact cube); ``T | X`` exponential with hazard
    ``baseline_hazard * exp(theta' X)``; ``C ~ Exponential(censor_rate)``
    independent of ``(T, X)`` (non-informative); follow-up ends at ``tau``:
    ``Y = min(T, C, tau)``, ``Delta = I(T <= min(C, tau))``.

    Condition (3) of the theorem asks that the risk set keeps positive probability at
    the truncation time: ``P(Y >= tau | X) = exp(-(baseline_hazard e^{theta'X} +
    censor_rate) tau) >= delta0`` (see :attr:`delta0`), as in Andersen & Gill (1982),
    where counting processes are observed on ``[0, tau]``. Rows still at risk at
    ``tau`` are censored there; they share the time ``tau`` but are never events, so
    there are no tied *events* (the theorem's assumption; event times are continuous).

    ``tau=None`` removes the truncation (``Y = min(T, C)``): risk sets then empty out
    in the tail, which breaks condition (3). Use it as the negative control.
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
            raise ValueError(f"theta must be a non-empty vector of finite numbers; got {self.theta!r}")
        object.__setattr__(self, "theta", tuple(float(t) for t in theta))
        object.__setattr__(self, "x_bound", _check_positive(self.x_bound, "x_bound"))
        object.__setattr__(self, "baseline_hazard",
                           _check_positive(self.baseline_hazard, "baseline_hazard"))
        object.__setattr__(self, "censor_rate",
                           _check_positive(self.censor_rate, "censor_rate", allow_zero=True))
        if self.tau is not None:
            object.__setattr__(self, "tau", _check_positive(self.tau, "tau"))

    @property
    def d(self) -> int:
        """Number of covariates."""
        return len(self.theta)

    @property
    def theta_star(self) -> np.ndarray:
        """The true coefficient vector theta* (float64 copy)."""
        return np.array(self.theta, dtype=np.float64)

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
        """Draw ``n`` i.i.d. rows; returns ``(X (n, d), time (n,), event (n,) bool)``."""
        n = _check_n(n)
        rng = _as_generator(rng)
        theta = self.theta_star
        X = rng.uniform(-self.x_bound, self.x_bound, size=(n, self.d))
        rate = self.baseline_hazard * np.exp(X @ theta)
        T = rng.exponential(1.0, size=n) / rate
        C = (rng.exponential(1.0, size=n) / self.censor_rate if self.censor_rate > 0
             else np.full(n, np.inf))
        end = C if self.tau is None else np.minimum(C, self.tau)
        event = T <= end
        time = np.where(event, T, end)
        return X, time, event

    def population(self, **kwargs) -> "QuadraturePopulation":
        """Population quantities of this design by quadrature (needs a finite ``tau``)."""
        return QuadraturePopulation(self, **kwargs)


@dataclass(frozen=True)
class GeneratorDesign:
    """Any user generator ``generator(rng, n) -> (X, time, event)`` as a design.

    ``theta`` (optional) is the true coefficient vector; it is needed only for the
    leading term (:func:`monte_carlo_population`). For process-based executors the
    generator must be picklable (a module-level function, not a lambda).
    """

    generator: Callable
    theta: tuple | None = None
    name: str = "user generator"

    def __post_init__(self):
        if not callable(self.generator):
            raise ValueError(f"generator must be callable as generator(rng, n); got {self.generator!r}")
        if self.theta is not None:
            theta = np.asarray(self.theta, dtype=np.float64).ravel()
            if theta.size == 0 or not np.all(np.isfinite(theta)):
                raise ValueError(f"theta must be a non-empty vector of finite numbers; got {self.theta!r}")
            object.__setattr__(self, "theta", tuple(float(t) for t in theta))

    @property
    def theta_star(self):
        return None if self.theta is None else np.array(self.theta, dtype=np.float64)

    def sample(self, n: int, rng: np.random.Generator):
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


def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"sample size n must be an integer; got {n!r}")
    if n < 2:
        raise ValueError(f"sample size n must be >= 2; got {n}")
    return int(n)


def _as_generator(rng):
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (numbers.Integral, np.random.SeedSequence)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise ValueError(f"rng must be a numpy Generator, SeedSequence or int seed; got {rng!r}")


def _as_design(design):
    if design is None:
        return CoxDesign()
    if hasattr(design, "sample") and callable(design.sample):
        return design
    if callable(design):
        return GeneratorDesign(design)
    raise ValueError("design must be a CoxDesign, an object with .sample(n, rng), or a "
                     f"callable generator(rng, n) -> (X, time, event); got {design!r}")


# ------------------------------------------------------------------ population quantities

class _Population:
    """Common leading-term formula; subclasses provide s0, s1, K0, K1 and A."""

    theta: np.ndarray
    information: np.ndarray

    def leading_term(self, X, time, event) -> np.ndarray:
        """Population limit of ``n * Diff_n(i)`` at the rows ``(X_i, Y_i, Delta_i)``.

        The last display of the proof of the paper's theorem (appendix
        ``appendix:Cox-formula``)::

            L(Z_i) = A^{-1} e_i [ Delta_i (X_i - r(Y_i)) / s0(Y_i)
                                  - e_i int_0^{Y_i} (X_i - r(t)) / s0(t)^2 dG(t) ],

        ``e_i = exp(theta*' X_i)``, ``r = s1/s0``. Returns an ``(n, d)`` array.
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
    nodes per axis); in time, since the model has hazard ``lambda0 e^{theta'X}`` and
    censoring is non-informative, ``dG(t) = lambda0 s0(t) dt`` on ``[0, tau)``, and
    ``P(Y >= t | X) = exp(-(lambda0 e^{theta'X} + c) t)``. Thus

        s_k(t) = E_X[ e^{theta'X} X^{(k)} exp(-(lambda0 e^{theta'X} + c) t) ],
        A = lambda0 int_0^tau (s2 - s1 s1'/s0) dt,
        K0(y) = int_0^y dG/s0^2 = lambda0 int_0^y dt/s0,
        K1(y) = int_0^y r dG/s0^2 = lambda0 int_0^y s1/s0^2 dt.

    ``s0, s1`` and the integrands of ``K0, K1`` are cubic splines on ``n_grid``
    points of ``[0, tau]`` (relative error well below 1e-9, checked in the tests);
    ``A`` uses a 64-point Gauss-Legendre rule in time.
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
            raise ValueError(f"d={d} is too large for tensor quadrature; use monte_carlo_population")
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
        """``s0(t) = E[I(Y >= t) exp(theta*' X)]`` for ``0 <= t <= tau``."""
        return self._s0(self._check_t(t))

    def s1(self, t):
        """``s1(t) = E[I(Y >= t) exp(theta*' X) X]``, shape ``t.shape + (d,)``."""
        return self._s1(self._check_t(t))

    def s0_exact(self, t):
        """``s0`` by direct quadrature (no spline); for checks."""
        return self._moments(self._check_t(t), second=False)[0]

    def G(self, t):
        """``G(t) = P(Y <= t, Delta = 1) = lambda0 int_0^t s0(u) du``."""
        t = self._check_t(t)
        return self._lam * self._s0.antiderivative()(t)

    def K(self, y):
        """``(int_0^y dG/s0^2, int_0^y r dG/s0^2)`` for the leading term."""
        y = self._check_t(y)
        return self._K0(y), self._K1(y)

    def leading_term_sup(self, *, n_x: int = 100_000, n_y: int = 129) -> dict:
        """``sup ||L(z)||`` over the support (grid search): ``X`` in the cube, ``Y`` in
        ``[0, tau]``, ``Delta`` in {0, 1}. Returns the value and where it is attained.

        ``L`` is bounded here (the theorem's conditions), so the max over ``n`` rows of
        ``||n Diff_n(i)||`` tends to this finite value; how slowly the sample reaches
        the maximizing corner explains the slower slope of the max gap.
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
        idx = np.searchsorted(self._times, np.asarray(t, dtype=np.float64), side="left")
        return self._S0[idx]

    def s1(self, t):
        idx = np.searchsorted(self._times, np.asarray(t, dtype=np.float64), side="left")
        return self._S1[idx]

    def G(self, t):
        return np.searchsorted(self._event_times, np.asarray(t, dtype=np.float64),
                               side="right") / self.n_mc

    def K(self, y):
        # integral over [0, y): events strictly before y, as the sum over j: Y_j < Y_i
        idx = np.searchsorted(self._event_times, np.asarray(y, dtype=np.float64), side="left")
        return self._K0[idx], self._K1[idx]


def monte_carlo_population(design, n_mc: int = 1_000_000, *, seed=12345,
                           theta=None) -> MonteCarloPopulation:
    """Population quantities of any design from one very large sample (``n_mc`` rows).

    ``theta`` defaults to ``design.theta_star``; a user generator needs it given.
    """
    design = _as_design(design)
    if theta is None:
        theta = getattr(design, "theta_star", None)
    if theta is None:
        raise ValueError("monte_carlo_population needs the true theta (pass theta=...)")
    X, time, event = design.sample(_check_n(n_mc), _as_generator(seed))
    return MonteCarloPopulation(X, time, event, theta)


# ------------------------------------------------------------------------------- slopes

@dataclass(frozen=True)
class SlopeFit:
    """Least-squares slope of ``log(value)`` on ``log(n)`` with a bootstrap interval."""

    column: str
    slope: float
    ci_low: float
    ci_high: float
    intercept: float
    level: float
    n_boot: int

    @property
    def ci(self):
        return (self.ci_low, self.ci_high)


def loglog_slope(table: pd.DataFrame, column: str, *, n_boot: int = 2000, level: float = 0.95,
                 seed=0) -> SlopeFit:
    """Slope of ``log(table[column])`` against ``log(table['n'])``.

    The point estimate is the least-squares line through the per-``n`` means of
    ``log(value)`` (the geometric means over replicates; with equal replicate counts
    this is also the least-squares line through all rows). The interval is a
    percentile bootstrap over replicates, resampled within each ``n`` (replicates
    are independent across and within sizes).
    """
    if column not in table.columns:
        raise ValueError(f"column {column!r} is not in the table")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1; got {n_boot}")
    vals = table[column].to_numpy(dtype=np.float64)
    if np.any(~np.isfinite(vals)) or np.any(vals <= 0):
        raise ValueError(f"column {column!r} must be finite and > 0 to take logs")
    sizes = np.sort(table["n"].unique())
    if sizes.size < 2:
        raise ValueError("a slope needs at least two distinct sample sizes")
    groups = [np.log(vals[table["n"].to_numpy() == n]) for n in sizes]
    x = np.log(sizes.astype(np.float64))
    xc = x - x.mean()

    def fit(y):
        return (xc @ (y - y.mean(axis=-1, keepdims=True)).T) / (xc @ xc)

    y = np.array([g.mean() for g in groups])
    slope = float(fit(y[None, :])[0])
    intercept = float(y.mean() - slope * x.mean())
    rng = _as_generator(seed)
    yb = np.empty((n_boot, sizes.size))
    for k, g in enumerate(groups):
        yb[:, k] = g[rng.integers(0, g.size, size=(n_boot, g.size))].mean(axis=1)
    boot = fit(yb)
    a = (1 - level) / 2
    lo, hi = np.quantile(boot, [a, 1 - a])
    return SlopeFit(column, slope, float(lo), float(hi), intercept, level, n_boot)


# --------------------------------------------------------------------------- simulation

def replicate_seed(seed, rep: int, n: int) -> np.random.SeedSequence:
    """Seed of replicate ``rep`` at sample size ``n``.

    ``SeedSequence(seed).spawn(n_reps)[rep]`` spawned once more by ``n`` (spawn key
    ``(rep, n)``): independent streams, the same whatever executor runs the replicate
    and whichever other sizes are in the run.
    """
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (int(rep), int(n)))


def _norms(a):
    return np.sqrt(np.einsum("ij,ij->i", a, a))


def _quantile_rank(values, i):
    return float((np.sum(values < values[i]) + 0.5 * (np.sum(values == values[i]) - 1))
                 / max(values.size - 1, 1))


def _one_replicate(design, n, rep, seed_seq, include_loo, population):
    """One replicate: fit, IF_n, VIF_n (and exact LOO); returns one table row."""
    import coxinfluence as ci

    rng = np.random.default_rng(seed_seq)
    X, time, event = design.sample(n, rng)
    fit = ci.fit_cox(X, time, event)
    IF = np.asarray(ci.reid_influence(fit), dtype=np.float64)
    VIF = np.asarray(ci.vif(fit), dtype=np.float64)
    diff = VIF - IF
    gap = _norms(diff)
    imax = int(np.argmax(gap))
    risk = np.exp(X @ np.asarray(fit.coef, dtype=np.float64))
    row = {
        "n": n, "rep": rep, "n_events": int(np.sum(event)), "converged": bool(fit.converged),
        "gap_mean": float(gap.mean()), "gap_max": float(gap[imax]),
        "n_gap_mean": float(n * gap.mean()), "n_gap_max": float(n * gap[imax]),
        "if_mean": float(_norms(IF).mean()), "if_max": float(_norms(IF).max()),
        "argmax_risk_q": _quantile_rank(risk, imax),
        "argmax_time_q": _quantile_rank(time, imax),
        "argmax_event": bool(event[imax]),
    }
    theta_star = getattr(design, "theta_star", None)
    if theta_star is not None:
        row["theta_err"] = float(np.linalg.norm(np.asarray(fit.coef) - theta_star))
    if population is not None:
        lead = population.leading_term(X, time, event)
        lead_norm = _norms(lead)
        row["lead_relerr"] = float(np.linalg.norm(n * diff - lead) / np.linalg.norm(lead))
        row["lead_mean"] = float(lead_norm.mean())
        row["lead_max"] = float(lead_norm.max())
        row["lead_at_argmax"] = float(lead_norm[imax])
    if include_loo:
        loo = np.asarray(ci.exact_loo(fit), dtype=np.float64)
        target = n * (np.asarray(fit.coef, dtype=np.float64)[None, :] - loo)
        g_v, g_i = _norms(VIF - target), _norms(IF - target)
        row.update(vif_loo_mean=float(g_v.mean()), vif_loo_max=float(g_v.max()),
                   if_loo_mean=float(g_i.mean()), if_loo_max=float(g_i.max()))
    return row


_SLOPE_COLUMNS = ("gap_mean", "gap_max", "if_mean", "if_max", "lead_relerr", "lead_max",
                  "vif_loo_mean", "if_loo_mean")


@dataclass
class GapResult:
    """Outcome of :func:`simulate_gap`.

    ``table`` has one row per ``(n, rep)``: ``gap_mean``/``gap_max`` are the mean and
    max over ``i`` of ``||VIF_n(i) - IF_n(i)||`` (Euclidean norm over coefficients),
    ``n_gap_*`` the same times ``n``, ``if_mean``/``if_max`` the size of ``IF_n``;
    ``argmax_*`` locate the row attaining ``gap_max`` (quantile ranks of
    ``exp(theta_hat' X_i)`` and ``Y_i`` among the sample, its event indicator); with
    a population, ``lead_relerr = ||n Diff_n - L||_F / ||L||_F`` over all rows
    (``L`` the theorem's leading term) and ``lead_mean``/``lead_max`` the mean and
    max over rows of ``||L(Z_i)||``; with ``include_loo``, ``vif_loo_*``/``if_loo_*``
    the gaps to ``n (theta_hat - theta_hat_{-i})``.
    """

    table: pd.DataFrame
    n_boot: int = 2000
    level: float = 0.95
    seed: object = 0
    design: object = None
    _fits: dict = field(default_factory=dict, repr=False)

    def fit(self, column: str = "gap_mean") -> SlopeFit:
        """Log-log slope of a column against ``n`` (cached; bootstrap seeded by ``seed``)."""
        if column not in self._fits:
            boot_seed = replicate_seed(self.seed, 0, 0).spawn(1)[0]
            self._fits[column] = loglog_slope(self.table, column, n_boot=self.n_boot,
                                              level=self.level, seed=boot_seed)
        return self._fits[column]

    @property
    def slope(self) -> float:
        """Slope of ``log mean_i |VIF_n(i) - IF_n(i)|`` against ``log n`` (theory: -1)."""
        return self.fit("gap_mean").slope

    @property
    def slope_ci(self) -> tuple:
        return self.fit("gap_mean").ci

    def slopes(self, columns=_SLOPE_COLUMNS) -> pd.DataFrame:
        """Slopes and intervals for each of ``columns`` present (default: every
        slope-worthy column)."""
        rows = []
        for col in columns:
            if col in self.table.columns:
                f = self.fit(col)
                rows.append({"column": col, "slope": f.slope, "ci_low": f.ci_low,
                             "ci_high": f.ci_high})
        return pd.DataFrame(rows)

    def summary(self) -> pd.DataFrame:
        """Per-``n`` summary: geometric means over replicates of the norm columns
        (``gap*``, ``n_gap*``, ``if_*``, ``vif_*``, ``lead_*``), means of the rest."""
        cols = [c for c in self.table.columns if c not in ("n", "rep")]
        out = []
        for n, g in self.table.groupby("n", sort=True):
            row = {"n": int(n), "reps": len(g)}
            for c in cols:
                v = g[c].to_numpy(dtype=np.float64)
                if c.startswith(("gap", "n_gap", "if_", "vif_", "lead_")):
                    row[c] = float(np.exp(np.mean(np.log(v)))) if np.all(v > 0) else float(v.mean())
                else:
                    row[c] = float(v.mean())
            out.append(row)
        return pd.DataFrame(out)

    def plot(self):
        """Log-log figure of the gaps and the size of ``IF_n`` against ``n``; a Figure."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(11, 4.2), layout="constrained")
        ax1, ax2 = fig.subplots(1, 2)
        t = self.table
        styles = [("gap_mean", "mean$_i$ |VIF$_n$ - IF$_n$|", "C0"),
                  ("gap_max", "max$_i$ |VIF$_n$ - IF$_n$|", "C1"),
                  ("if_mean", "mean$_i$ |IF$_n$|", "C2")]
        for col, label, color in styles:
            if col not in t.columns:
                continue
            f = self.fit(col)
            ax1.scatter(t["n"], t[col], s=6, alpha=0.25, color=color)
            sizes = np.sort(t["n"].unique())
            ax1.plot(sizes, np.exp(f.intercept) * sizes ** f.slope, color=color,
                     label=f"{label}: slope {f.slope:.2f} [{f.ci_low:.2f}, {f.ci_high:.2f}]")
        sizes = np.sort(t["n"].unique()).astype(float)
        if "gap_mean" in t.columns:
            g0 = self.summary()["gap_mean"].to_numpy()[0]
            ax1.plot(sizes, g0 * sizes[0] / sizes, "k:", lw=1, label="slope -1 reference")
        ax1.set(xscale="log", yscale="log", xlabel="n", ylabel="norm",
                title="VIF vs Reid IF: gap and IF size")
        ax1.legend(fontsize=7)
        s = self.summary()
        for col, label, color in [("n_gap_mean", "n * mean gap", "C0"),
                                  ("n_gap_max", "n * max gap", "C1"),
                                  ("lead_max", "max$_i$ |leading term L(Z$_i$)|", "C3"),
                                  ("lead_relerr", "rel. error of n Diff$_n$ vs L", "C4")]:
            if col in s.columns:
                ax2.plot(s["n"], s[col], "o-", color=color, label=label)
        ax2.set(xscale="log", yscale="log", xlabel="n",
                title="n x gap (flat if O(1/n)) and leading term")
        ax2.legend(fontsize=7)
        return fig

    def to_markdown(self) -> str:
        """Per-n summary and slopes as a markdown table."""
        s = self.summary()
        keep = [c for c in ("n", "reps", "gap_mean", "gap_max", "n_gap_mean", "n_gap_max",
                            "if_mean", "lead_relerr", "lead_max", "vif_loo_mean", "if_loo_mean")
                if c in s.columns]
        lines = [_md_table(s[keep]), "", _md_table(self.slopes())]
        return "\n".join(lines)


def _md_table(df: pd.DataFrame) -> str:
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return f"{v:.4g}"
        return str(v)
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep] + body)


def simulate_gap(sample_sizes: Sequence[int], n_reps: int, *, design=None, seed=0,
                 executor: Executor | None = None, include_loo: bool = False,
                 progress: bool = False, leading_term=None, n_boot: int = 2000,
                 level: float = 0.95) -> GapResult:
    """Simulate ``|VIF_n(i) - IF_n(i)|`` over sample sizes and replicates.

    Checks the paper's theorem (appendix, "Approximation Error Bound under Cox
    Model"): ``VIF_n(i) - IF_n(i) = O_p(1/n)`` and ``IF_n(i) = Omega_p(1)``, so the
    log-log slope of the mean gap should be -1 and that of the size of ``IF_n`` 0.

    Parameters
    ----------
    sample_sizes : sizes ``n`` (integers >= 10; at least two distinct).
    n_reps : replicates per size (>= 2, for the bootstrap).
    design : a :class:`CoxDesign` (default ``CoxDesign()``), any object with
        ``.sample(n, rng)``, or a callable ``generator(rng, n) -> (X, time, event)``.
    seed : int, ``SeedSequence`` or ``Generator``; replicate ``rep`` at size ``n`` uses
        :func:`replicate_seed` ``(seed, rep, n)``, so the table is identical whatever
        the executor.
    executor : any ``concurrent.futures.Executor`` (threads, processes,
        ``dask.distributed.Client.get_executor()``); ``None`` runs serially.
    include_loo : also refit without each row (``coxinfluence.exact_loo``) and record
        the gaps of VIF and IF to ``n (theta_hat - theta_hat_{-i})`` (slow; small n).
    progress : show a tqdm progress bar.
    leading_term : ``None`` (use ``design.population()`` when the design has one and
        satisfies the theorem), ``False`` (skip) or a population object
        (:class:`QuadraturePopulation`, :class:`MonteCarloPopulation`).
    n_boot, level : bootstrap resamples and interval level for the slopes.
    """
    design = _as_design(design)
    try:
        sizes = [int(s) for s in sample_sizes]
    except (TypeError, ValueError):
        raise ValueError(f"sample_sizes must be a sequence of integers; got {sample_sizes!r}") from None
    if any(float(s) != int(s) for s in sample_sizes):
        raise ValueError(f"sample_sizes must be integers; got {list(sample_sizes)!r}")
    if len(set(sizes)) < 2:
        raise ValueError(f"sample_sizes needs at least two distinct sizes; got {sizes}")
    if min(sizes) < 10:
        raise ValueError(f"sample_sizes must all be >= 10; got {sorted(sizes)}")
    sizes = sorted(set(sizes))
    if isinstance(n_reps, bool) or not isinstance(n_reps, numbers.Integral) or n_reps < 2:
        raise ValueError(f"n_reps must be an integer >= 2 (bootstrap over replicates); got {n_reps!r}")
    if executor is not None and not hasattr(executor, "submit"):
        raise ValueError(f"executor must be a concurrent.futures.Executor; got {executor!r}")
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(0, 2 ** 63 - 1))
    elif not isinstance(seed, np.random.SeedSequence):
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, SeedSequence or Generator; got {seed!r}")
        seed = int(seed)

    population = None
    if leading_term is None:
        if isinstance(design, CoxDesign) and design.satisfies_theorem:
            population = design.population()
    elif leading_term is not False:
        if not hasattr(leading_term, "leading_term"):
            raise ValueError("leading_term must be None, False or a population object with "
                             ".leading_term(X, time, event)")
        population = leading_term

    tasks = [(n, rep) for n in sizes for rep in range(int(n_reps))]
    rows = [None] * len(tasks)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(tasks), desc="simulate_gap", unit="rep")
    try:
        if executor is None:
            for k, (n, rep) in enumerate(tasks):
                rows[k] = _one_replicate(design, n, rep, replicate_seed(seed, rep, n),
                                         include_loo, population)
                if bar is not None:
                    bar.update()
        else:
            futures = {executor.submit(_one_replicate, design, n, rep,
                                       replicate_seed(seed, rep, n), include_loo, population): k
                       for k, (n, rep) in enumerate(tasks)}
            for fut in as_completed(futures):
                rows[futures[fut]] = fut.result()
                if bar is not None:
                    bar.update()
    finally:
        if bar is not None:
            bar.close()
    table = pd.DataFrame(rows)
    return GapResult(table=table, n_boot=n_boot, level=level, seed=seed, design=design)

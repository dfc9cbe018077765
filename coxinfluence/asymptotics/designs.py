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
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from .seeding import _as_generator

if TYPE_CHECKING:
    from .population import QuadraturePopulation

__all__ = ["CoxDesign", "GeneratorDesign"]


def _check_positive(value, name, *, allow_zero=False):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number; got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}; got {value!r}")
    return v


def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"sample size n must be an integer; got {n!r}")
    if n < 2:
        raise ValueError(f"sample size n must be >= 2; got {n}")
    return int(n)


@dataclass(frozen=True)
class CoxDesign:
    """Cox proportional-hazards design satisfying the conditions of the paper's theorem.

    ``X ~ Uniform[-x_bound, x_bound]^d`` (condition 2: density ``(2 x_bound)^{-d}``
    on a compact cube); ``T | X`` exponential with hazard
    ``baseline_hazard * exp(theta' X)``; ``C ~ Exponential(censor_rate)``
    independent of ``(T, X)`` (non-informative); follow-up ends at ``tau``:
    ``Y = min(T, C, tau)``, ``Delta = I(T <= min(C, tau))``.

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

    def population(self, **kwargs) -> QuadraturePopulation:
        """Population quantities of this design by quadrature (needs a finite ``tau``)."""
        from .population import QuadraturePopulation

        return QuadraturePopulation(self, **kwargs)


@dataclass(frozen=True)
class GeneratorDesign:
    """Any user generator ``generator(rng, n) -> (X, time, event)`` as a design.

    ``theta`` (optional) is the true coefficient vector; it is needed only for the
    leading term (:func:`~coxinfluence.asymptotics.monte_carlo_population`). For
    process-based executors the generator must be picklable (a module-level function,
    not a lambda).
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


def _as_design(design):
    if design is None:
        return CoxDesign()
    if hasattr(design, "sample") and callable(design.sample):
        return design
    if callable(design):
        return GeneratorDesign(design)
    raise ValueError("design must be a CoxDesign, an object with .sample(n, rng), or a "
                     f"callable generator(rng, n) -> (X, time, event); got {design!r}")

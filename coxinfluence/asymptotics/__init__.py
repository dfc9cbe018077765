"""Simulation check of the gap between the VIF and Reid's influence function.

The paper's Theorem "Approximation Error Bound under Cox Model" (appendix section
"Formal Statement and Proof" of the informal theorem "Approximation Error under Cox
Regression", section "Approximation Quality in Special Cases") proves, for the Cox
model with no tied events::

    Diff_n(i) := VIF_n(i) - IF_n(i) = O_p(1/n),      while  IF_n(i) = Omega_p(1),

under four conditions: (1) theta* interior to a compact set; (2) covariates with a
density bounded below on a compact support; (3) a truncation time tau < inf with
P(Y > tau | X) >= delta_0 > 0 (the risk set never empties before tau); (4) a
non-singular information matrix A; and non-informative censoring. ``VIF_n`` and
``IF_n`` are on the paper's scale, approximating ``n (theta_hat - theta_hat_{-i})``
(docs/conventions.md).

Modules:

* ``designs``: :class:`CoxDesign`, a data-generating design that satisfies the
  theorem's conditions (uniform covariates on a cube, constant baseline hazard,
  independent exponential censoring, follow-up ending at ``tau``) and, with
  ``tau=None``, a negative control that breaks condition (3); :class:`GeneratorDesign`
  wraps any user generator ``f(rng, n) -> (X, time, event)``;
* ``fine_gray_design``: :class:`FineGrayDesign`, competing risks with a true
  Fine-Gray model (Fine & Gray 1999's simulation design); :func:`simulate_gap` then
  records also the gap of the influence function with the censoring weights held fixed;
* ``designs`` (also): :class:`QuadraturePopulation` /
  :func:`monte_carlo_population`: the population quantities ``s0, s1, G, A`` and the
  leading term of ``n * Diff_n(i)`` from the end of the proof, by Gauss-Legendre quadrature (for
  :class:`CoxDesign`) or from a very large Monte Carlo sample (any design with a
  known theta*); its docstring states the leading term and the exact finite-n
  identity the tests use as an oracle;
* ``simulation``: :func:`simulate_gap`, replicates over sample sizes,
  reproducible from ``seed`` (``seeding``, :func:`replicate_seed`) whatever the
  ``concurrent.futures.Executor`` runs them;
* ``result``: :class:`GapResult`, with a tidy table, log-log slopes with
  bootstrap intervals (:func:`loglog_slope`, :class:`SlopeFit`), a per-``n`` summary,
  markdown tables and a ``plot()``.
"""
from __future__ import annotations

from .designs import (
    CoxDesign,
    GeneratorDesign,
    MonteCarloPopulation,
    QuadraturePopulation,
    monte_carlo_population,
)
from .fine_gray_design import FineGrayDesign
from .result import GapResult, SlopeFit, loglog_slope
from .result import _md_table as _md_table  # used by paper_appendix/asymptotics.py
from .seeding import replicate_seed
from .simulation import simulate_gap

__all__ = [
    "CoxDesign",
    "GeneratorDesign",
    "FineGrayDesign",
    "QuadraturePopulation",
    "MonteCarloPopulation",
    "monte_carlo_population",
    "SlopeFit",
    "loglog_slope",
    "GapResult",
    "simulate_gap",
    "replicate_seed",
]

"""The simulation: replicates of ``VIF_n - IF_n`` over sample sizes.

:func:`simulate_gap` checks the paper's Theorem "Approximation Error Bound under Cox
Model" (appendix section "Formal Statement and Proof" of the informal theorem
"Approximation Error under Cox Regression"): ``Diff_n(i) := VIF_n(i) - IF_n(i) =
O_p(1/n)`` while ``IF_n(i) = Omega_p(1)``. Each replicate draws a sample from the
design, fits the Cox model and records the gaps, their leading term and optionally
the exact leave-one-out gaps (:func:`_one_replicate`); replicate ``rep`` at size ``n``
draws from :func:`~coxinfluence.asymptotics.replicate_seed` ``(seed, rep, n)``, so the
table is reproducible from ``seed`` whatever ``concurrent.futures.Executor`` runs the
replicates. ``VIF_n`` and ``IF_n`` are on the paper's scale, approximating
``n (theta_hat - theta_hat_{-i})`` (docs/conventions.md).
"""
from __future__ import annotations

import numbers
import warnings
from concurrent.futures import Executor, as_completed
from typing import Sequence

import numpy as np
import pandas as pd

from coxinfluence.influence_functions.any_fit import exact_loo
from coxinfluence.influence_functions.cox_audit import CoxAudit
from coxinfluence.models.cox import ConvergenceWarning, fit_cox
from coxinfluence.numerics.executors import on_workers

from .designs import CoxDesign, _as_design, _norms
from .fine_gray_design import FineGrayDesign, fine_gray_gap_row
from .result import GapResult
from .seeding import replicate_seed

__all__ = ["simulate_gap"]


def _quantile_rank(values, i):
    """Mid-rank of ``values[i]`` among ``values``, scaled to ``[0, 1]``."""
    return float((np.sum(values < values[i]) + 0.5 * (np.sum(values == values[i]) - 1))
                 / max(values.size - 1, 1))


def _one_replicate(design, n, rep, seed_seq, include_loo, population):
    """One replicate: fit, IF_n, VIF_n (and exact LOO); returns one table row."""
    rng = np.random.default_rng(seed_seq)
    X, time, event = design.sample(n, rng)
    if isinstance(design, FineGrayDesign):
        return {"n": n, "rep": rep, **fine_gray_gap_row(design, X, time, event, include_loo)}
    fit = fit_cox(X, time, event)
    # the seam, not ci.vif / ci.reid_influence (which refuse a fit that did not converge):
    # a replicate without a maximum (rare, at small n) stays in the table, marked by its
    # ``converged`` column, as the Fine-Gray row does
    model = CoxAudit(fit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        IF = -n * model.change("reid")
        VIF = -n * model.change("vif")
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
    if include_loo and fit.converged:
        loo = np.asarray(exact_loo(fit), dtype=np.float64)
        target = n * (np.asarray(fit.coef, dtype=np.float64)[None, :] - loo)
        g_v, g_i = _norms(VIF - target), _norms(IF - target)
        row.update(vif_loo_mean=float(g_v.mean()), vif_loo_max=float(g_v.max()),
                   if_loo_mean=float(g_i.mean()), if_loo_max=float(g_i.max()))
    return row


def simulate_gap(sample_sizes: Sequence[int], n_reps: int, *, design=None, seed=0,
                 executor: Executor | None = None, include_loo: bool = False,
                 progress: bool = False, leading_term=None, n_boot: int = 2000,
                 level: float = 0.95) -> GapResult:
    """Simulate ``|VIF_n(i) - IF_n(i)|`` over sample sizes and replicates.

    Checks the paper's Theorem "Approximation Error Bound under Cox Model" (its
    appendix): ``VIF_n(i) - IF_n(i) = O_p(1/n)`` and ``IF_n(i) = Omega_p(1)``, so the
    log-log slope of the mean gap should be -1 and that of the size of ``IF_n`` 0.
    Each replicate draws a sample from the design, fits the model and records the gaps
    (one row of :class:`~coxinfluence.asymptotics.GapResult`'s table).

    Parameters
    ----------
    sample_sizes : sequence of int
        Sizes ``n`` (integers >= 10; at least two distinct).
    n_reps : int
        Replicates per size (>= 2, for the bootstrap).
    design : CoxDesign, FineGrayDesign, object with ``.sample(n, rng)``, or callable, optional
        A :class:`~coxinfluence.asymptotics.CoxDesign` (default ``CoxDesign()``), any
        object with ``.sample(n, rng)``, or a callable
        ``generator(rng, n) -> (X, time, event)``; a
        :class:`~coxinfluence.asymptotics.FineGrayDesign` fits ``ci.fit_fine_gray`` and
        records also the gap of the weights-held-fixed IF
        (``fine_gray_gap_row``).
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        A non-negative int, a ``SeedSequence``, or a ``Generator`` (one integer is drawn
        from it and used as the seed); replicate ``rep`` at size ``n`` uses
        :func:`~coxinfluence.asymptotics.replicate_seed` ``(seed, rep, n)``, so the table
        is identical whatever the executor.
    executor : concurrent.futures.Executor or dask.distributed.Client, optional
        Any ``concurrent.futures.Executor`` (threads, processes), or a
        ``dask.distributed.Client`` or its ``get_executor()`` (the design and the
        population are then scattered once to every worker); None runs serially.
    include_loo : bool, default False
        Also refit without each row (``coxinfluence.exact_loo``; a Fine-Gray design:
        ``FineGrayAudit.refit``, the Kaplan-Meier re-estimated) and record the gaps of VIF
        and IF to ``n (theta_hat - theta_hat_{-i})`` (slow; small n).
    progress : bool, default False
        Show a tqdm progress bar.
    leading_term : None, False or population object, optional
        None: use ``design.population()`` when the design is a ``CoxDesign`` with
        ``satisfies_theorem`` (a finite ``tau``), no leading term otherwise; False: skip;
        or a population object
        (:class:`~coxinfluence.asymptotics.QuadraturePopulation`,
        :class:`~coxinfluence.asymptotics.MonteCarloPopulation`).
    n_boot : int, default 2000
        Bootstrap resamples for the slopes.
    level : float, default 0.95
        The slopes' interval level.

    Returns
    -------
    GapResult
        The table (one row per ``(n, rep)``), slopes, summary, figure.

    Raises
    ------
    ValueError
        ``sample_sizes`` not integers >= 10 with two distinct values, ``n_reps`` not an
        integer >= 2, a bad ``seed``, ``executor`` or ``leading_term``.

    See Also
    --------
    CoxDesign : the default design.
    GapResult : the result.

    Notes
    -----
    ``VIF_n`` and ``IF_n`` are on the paper's scale, approximating
    ``n (theta_hat - theta_hat_{-i})``.

    Examples
    --------
    >>> from coxinfluence.asymptotics import simulate_gap
    >>> result = simulate_gap([50, 100, 200], 3, n_boot=200)
    >>> round(result.slope, 2)  # the theorem: -1
    -1.03
    >>> print(f"{result.fit('if_mean').slope:.3f}")  # IF_n = Omega_p(1): 0
    -0.004
    """
    design = _as_design(design)
    try:
        sizes = [int(s) for s in sample_sizes]
    except (TypeError, ValueError):
        raise ValueError("sample_sizes must be a sequence of integers; "
                         f"got {sample_sizes!r}") from None
    if any(float(s) != int(s) for s in sample_sizes):
        raise ValueError(f"sample_sizes must be integers; got {list(sample_sizes)!r}")
    if len(set(sizes)) < 2:
        raise ValueError(f"sample_sizes needs at least two distinct sizes; got {sizes}")
    if min(sizes) < 10:
        raise ValueError(f"sample_sizes must all be >= 10; got {sorted(sizes)}")
    sizes = sorted(set(sizes))
    if isinstance(n_reps, bool) or not isinstance(n_reps, numbers.Integral) or n_reps < 2:
        raise ValueError("n_reps must be an integer >= 2 (bootstrap over replicates); "
                         f"got {n_reps!r}")
    if executor is not None and not hasattr(executor, "submit"):
        raise ValueError(f"executor must be a concurrent.futures.Executor; got {executor!r}")
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(0, 2 ** 63 - 1))
    elif not isinstance(seed, np.random.SeedSequence):
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError("seed must be a non-negative int, SeedSequence or Generator; "
                             f"got {seed!r}")
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
            # a dask cluster gets the design and the population (a quadrature grid, or a
            # Monte Carlo sample: MBs) once per worker; a task carries its (n, rep, seed)
            executor, (design_arg, population_arg) = on_workers(executor, design, population)
            futures = {executor.submit(_one_replicate, design_arg, n, rep,
                                       replicate_seed(seed, rep, n), include_loo,
                                       population_arg): k
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

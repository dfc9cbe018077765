"""Random streams of the simulation study: one independent stream per replicate.

:func:`replicate_seed` gives replicate ``rep`` at sample size ``n`` its own
``SeedSequence`` (spawn key ``(rep, n)``), so a run's table does not depend on which
``concurrent.futures.Executor`` runs the replicates, in which order, or which other
sample sizes are in the run. :class:`~coxinfluence.asymptotics.GapResult` seeds its
bootstrap from the same root.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["replicate_seed"]


def replicate_seed(seed, rep: int, n: int) -> np.random.SeedSequence:
    """Seed of replicate ``rep`` at sample size ``n``.

    ``SeedSequence(seed).spawn(n_reps)[rep]`` spawned once more by ``n`` (spawn key
    ``(rep, n)``): independent streams, the same whatever executor runs the replicate
    and whichever other sizes are in the run.

    Parameters
    ----------
    seed : int or numpy.random.SeedSequence
        The run's root seed.
    rep : int
        The replicate.
    n : int
        The sample size.

    Returns
    -------
    numpy.random.SeedSequence
        The replicate's seed (entropy of ``seed``, spawn key extended by ``(rep, n)``).

    See Also
    --------
    simulate_gap : draws replicate ``rep`` at size ``n`` from this seed.

    Examples
    --------
    >>> from coxinfluence.asymptotics import replicate_seed
    >>> ss = replicate_seed(0, 1, 100)
    >>> ss.entropy, ss.spawn_key
    (0, (1, 100))
    >>> np.random.default_rng(ss).integers(0, 100, 3).tolist()
    [75, 24, 46]
    """
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return np.random.SeedSequence(root.entropy,
                                  spawn_key=tuple(root.spawn_key) + (int(rep), int(n)))


def _as_generator(rng):
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (numbers.Integral, np.random.SeedSequence)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise ValueError(f"rng must be a numpy Generator, SeedSequence or int seed; got {rng!r}")

"""Which units are deleted: the one description of a deletion used by every refit.

The paper's leave-one-out quantities (VIF's definition, exact and one-step Newton refits,
a target recomputed without a patient) all evaluate a loss with some objects removed.
Everywhere in the package that removal is a :class:`Deletion`: a batch of ``B`` 0/1
presence masks over ``n`` objects, ``presence[b, j] = 0`` when object ``j`` is deleted in
problem ``b``. An object is a row of the data (a Cox row, a GLM observation) or whatever
a loss counts (a node of a graph, an item of a ranking).

Deleting a unit of several objects (a subject's rows, a hospital's patients) is the same
mask with several zeros: :meth:`Deletion.of_units`.
"""
from __future__ import annotations

import numpy as np


class Deletion:
    """A batch of deletions: ``presence`` (B, n) of 0/1 floats (1 = kept).

    Build one with :meth:`of_rows` (problem b deletes object ``rows[b]``) or
    :meth:`of_units` (problem b deletes every object of unit ``units[b]``).
    """

    __slots__ = ("presence",)

    def __init__(self, presence):
        self.presence = presence

    @classmethod
    def of_rows(cls, n, rows):
        """Problem ``b`` deletes object ``rows[b]`` (positions 0..n-1)."""
        rows = np.asarray(rows, dtype=np.intp).reshape(-1)
        if rows.size and (rows.min() < 0 or rows.max() >= n):
            raise ValueError(f"rows to delete must lie in 0..{n - 1}")
        P = np.ones((rows.size, n))
        P[np.arange(rows.size), rows] = 0.0
        return cls(P)

    @classmethod
    def of_units(cls, unit_of, units):
        """Problem ``b`` deletes every object ``j`` with ``unit_of[j] == units[b]``.

        ``unit_of`` (n,) gives each object's unit code (any integers); with
        ``unit_of = arange(n)`` this is :meth:`of_rows`.
        """
        unit_of = np.asarray(unit_of).reshape(-1)
        units = np.asarray(units).reshape(-1)
        return cls((unit_of[None, :] != units[:, None]).astype(np.float64))

    @property
    def batch(self):
        return self.presence.shape[0]

    @property
    def n(self):
        return self.presence.shape[1]

    def take(self, idx):
        """The sub-batch of problems ``idx``."""
        return Deletion(self.presence[np.asarray(idx)].reshape(-1, self.n))

    def __repr__(self):
        return f"Deletion(batch={self.batch}, n={self.n})"

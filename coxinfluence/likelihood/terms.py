"""The Efron terms of a (deleted) data set and the risk-set state at one ``theta``: the
values the kernels of :mod:`coxinfluence.likelihood.risk_sets` pass around."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Terms:
    """Efron terms for a batch: fraction ``c`` and weight ``m`` of each event term.

    ``frac`` and ``mean_weight`` have shape (B, K) or (K,) (broadcast over B);
    ``weights`` are the effective row weights (B, n) or (n,) (zero for deleted rows).
    """

    weights: np.ndarray
    frac: np.ndarray
    mean_weight: np.ndarray

    def take(self, idx):
        """The terms of the problems ``idx`` of a batch."""
        def pick(a):
            return a[idx] if a.ndim == 2 else a     # (K,) or (n,) are shared by the batch
        return Terms(pick(self.weights), pick(self.frac), pick(self.mean_weight))


@dataclass(frozen=True)
class RiskSetState:
    """Risk-set quantities at one ``theta`` (batch axis dropped), shared by the
    influence functions. Scores are on the shifted scale ``exp(eta - shift)``;
    ``den`` and ``term_mean`` are per Efron term (see :meth:`RiskSets.risk`,
    :meth:`RiskSets.term_means`).

    The (K, d) term means are given (``means``) or formed when first read from the tie
    groups' sums ``group_sums`` (:meth:`RiskSets.term_sums`; without delayed entry):
    :meth:`term_means_of` forms the rows of some terms only, with the same bits, so the
    VIF of 10^7 rows reads them by blocks and never holds the (K, d) array."""

    risk: np.ndarray         # (n,) w * score
    den: np.ndarray          # (K,) S0 - c S0D
    mean_weight: np.ndarray  # (K,) m_k
    frac: np.ndarray         # (K,) c_k (the data's own array: read only)
    weights: np.ndarray      # (n,) w (the data's own array: read only)
    risk_sets: object = None   # the RiskSets it came from (their cached structures)
    means: np.ndarray = None   # (K, d) a_k, or None: formed from group_sums
    group_sums: tuple = None   # (S1, S1D, corrected) of RiskSets.term_sums

    @cached_property
    def term_mean(self):
        """(K, d) ``a_k``, read-only."""
        a = self.means
        if a is None:
            a = self.risk_sets.term_means_from_sums(self.group_sums, self.den, self.frac)
        a.flags.writeable = False
        return a

    def term_means_of(self, k):
        """``a_k`` of the terms ``k`` (an index array or a slice), a new (len(k), d)
        array: the rows of :attr:`term_mean`, without forming it when not yet formed."""
        if self.means is not None or "term_mean" in self.__dict__:
            return self.term_mean[k]
        return self.risk_sets.term_means_rows(self.group_sums, self.den, self.frac, k)

    @property
    def score(self):
        """(n,) ``exp(eta - shift)``, as ``risk / w`` (within an ulp; not stored: one
        (n,) array less for the VIF at 10^7 rows)."""
        return self.risk / self.weights

    @cached_property
    def term_weight_over_den(self):
        """(K,) ``q_k = m_k / den_k`` (0 for terms without event weight)."""
        return np.where(self.mean_weight > 0, self.mean_weight / self.den, 0.0)

    @cached_property
    def totals_q_qa(self):
        """The risk-set totals (:meth:`RiskSets.risk_set_totals`) of ``[q_k, q_k a_k]``:
        read at the rows (:meth:`RiskSets.totals_at_rows`) they are, per row j, the sums
        over the terms whose risk set holds j of ``q`` and ``q a`` (less Efron's own-group
        share), the row coefficients of the risk-set sums. Formed once per state: the
        third derivative and the information split both read them."""
        q = self.term_weight_over_den
        per_term = np.concatenate([q[:, None], q[:, None] * self.term_mean], axis=1)
        return self.risk_sets.risk_set_totals(per_term[None], self.frac)

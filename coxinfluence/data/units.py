"""Units of deletion: rows, subjects (``id=``) or clusters (``groups=``).

A patient with several rows (time-varying covariates, recurrent events, delayed entry
into a second interval) is deleted whole; so is a cluster (a hospital, a family) when the
caller names one with ``groups=``. A unit's leave-one-out quantities are the paper's with
all of its rows deleted at once (a :class:`~coxinfluence.data.deletion.Deletion` with several
zeros). On the paper's scale ``n`` is the number of units, so ``IF_n(g)`` and
``VIF_n(g)`` approximate ``n_units (theta_hat - theta_hat_{-g})`` and R's
``resid(fit, "dfbeta", collapse=id)`` equals ``IF_n(g) / n_units``
(``docs/conventions.md``). Results have one row per unit, indexed by the unit's label in
sorted order (as R's ``collapse`` and pandas' ``groupby``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.data.cox_data import CoxData, units_with_overlap, wrap_rows
from coxinfluence.data.deletion import Deletion
from coxinfluence.data.inputs import encode_labels
from coxinfluence.data.rank import (
    rows_whose_deletion_breaks_rank,
    units_whose_deletion_breaks_rank,
)


@dataclass(frozen=True, eq=False)
class Units:
    """The units of a fit's data: ``of_row[k]`` is the unit code (0..U-1) of sorted row k,
    ``labels[u]`` the label of unit u (sorted). For rows, unit u is the caller's row u."""

    data: CoxData
    of_row: np.ndarray
    labels: pd.Index
    is_rows: bool

    @property
    def n_units(self):
        return len(self.labels)

    def deletion(self, codes) -> Deletion:
        """Problem b deletes every row of unit ``codes[b]`` (over the sorted rows)."""
        return Deletion.of_units(self.of_row, codes)

    def collapse(self, values_sorted):
        """Per-row values (n, d), sorted order -> per-unit sums (U, d), unit order."""
        if self.is_rows:
            return self.data.to_caller_order(values_sorted)
        out = np.zeros((self.n_units,) + values_sorted.shape[1:])
        np.add.at(out, self.of_row, values_sorted)
        return out

    def wrap(self, values, columns=None):
        """Per-unit results (U, d) as the caller expects: rows keep the caller's layout
        (:func:`coxinfluence.data.cox_data.wrap_rows`); subjects and clusters are a DataFrame
        indexed by the unit label."""
        if self.is_rows:
            return wrap_rows(values, self.data, columns)
        return pd.DataFrame(values, index=self.labels, columns=columns or self.data.columns)

    def describe(self, codes):
        """Labels of the units ``codes`` (for messages)."""
        return list(self.labels[np.asarray(codes, dtype=int)])      # Python scalars

    @cached_property
    def shares_risk_sets(self):
        """(U,) bool: the unit has two rows whose at-risk intervals ``(start, time]``
        overlap within a stratum, so some risk set may hold both. For the others, deleting
        the unit changes every risk-set sum by at most one row, and its gradient change is
        exactly the sum of its rows' changes (the closed-form unit VIF)."""
        if self.is_rows:
            return np.zeros(self.n_units, dtype=bool)
        return units_with_overlap(self.data, self.of_row, self.n_units)

    @cached_property
    def removes_all_events(self):
        """(U,) bool: deleting the unit leaves no event in the data (nothing to fit).
        A unit holding the last events of one stratum only is not among them: that
        stratum then drops out of the partial likelihood, which keeps its maximum (R's
        refit agrees)."""
        w = self.data.event.astype(np.float64)
        per_unit = np.bincount(self.of_row, weights=w, minlength=self.n_units)
        return (per_unit > 0) & (per_unit >= w.sum())

    @cached_property
    def breaks_rank(self):
        """(U,) bool: deleting the unit leaves the stratum-centred design rank deficient
        (e.g. it holds every patient with some level of a dummy covariate)."""
        data = self.data
        if self.is_rows:
            return self.data.to_caller_order(rows_whose_deletion_breaks_rank(data))
        return units_whose_deletion_breaks_rank(data, self.of_row, self.n_units)


def row_units(data) -> Units:
    """Every row its own unit (unit u = the caller's row u)."""
    labels = data.index if data.index is not None else pd.RangeIndex(data.n)
    of_row = data.order.view()            # a read-only view, not a copy (10^7 rows: 76 MB)
    of_row.flags.writeable = False
    return Units(data, of_row, labels, True)


def resolve_units(fit, groups=None) -> Units:
    """The units of ``fit``: ``groups`` (one label per row, caller's order) when given,
    else the fit's subjects (``fit_cox(..., id=)``), else its rows."""
    data = fit.data
    if groups is None and data.ids is None:
        return row_units(data)
    if groups is None:
        return Units(data, data.ids, data.id_labels, False)
    codes, labels = encode_labels(groups, data.n, "groups")
    return Units(data, codes[data.order], labels, False)

"""Truncated geometric series: how many terms put the tail below rounding, and the split
points the series accelerators choose among. No formula of the paper."""
from __future__ import annotations

import numpy as np

#: candidate ratios below which a sum is taken by its power series (the cheapest is chosen)
RHO_CANDIDATES = tuple(2.0 ** -b for b in (2, 4, 6, 8, 11, 14, 18))
#: a series is truncated once rho^P is below this
ROUNDING = 2.0 ** -53


def series_length(rho, tol=ROUNDING):
    """Smallest P with ``rho^P <= tol`` (P = 14 for rho = 1/16, 27 for 1/4, 3 for 2^-18)."""
    return max(1, int(np.ceil(np.log(tol) / np.log(rho) - 1e-12)))

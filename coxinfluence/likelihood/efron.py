"""Sums over Efron's tie fractions ``c_r = r / N``, ``r = 0..N-1``: the closed forms the VIF
and the deleted Hessians need when a row leaves a tie group's risk set,
``f(N, x) = sum_r c_r / (1 - c_r x)`` and its derivative ``h(N, x) = sum_r c_r^2 /
(1 - c_r x)^2``, to rounding for any tie size (Efron 1977; R's ``coxfit6.c`` weights)."""
from __future__ import annotations

import numpy as np

from coxinfluence.numerics.series import RHO_CANDIDATES, series_length

_EFRON_DIRECT_MAX = 32      # x > 1/4 and tie sizes up to this: sum the fractions one by one


_EFRON_SERIES_X = 0.25      # the power series in x up to here (RHO_CANDIDATES[0])


def efron_fractions(Ns):
    """The Efron fractions ``c_r = r / N``, ``r = 0..N-1``, of every tie size in ``Ns``,
    concatenated: (pair, c) with ``pair`` the position in ``Ns`` of each fraction."""
    pair = np.repeat(np.arange(Ns.size), Ns)
    return pair, (np.arange(pair.size) - np.repeat(np.cumsum(Ns) - Ns, Ns)) / Ns[pair]


def fraction_moment_series(N, x, Q, power, weight=None):
    """``sum_{q < Q} w_q x^q M_{q+power}(N)`` by Horner's rule, ``M_k(N) = sum_r c_r^k``
    over the Efron fractions of tie size N (:func:`efron_fractions`; one moment table per
    distinct N), ``w_q = weight(q)`` (default 1): the power-series branch of
    :func:`efron_fraction_sum` and of its derivative."""
    Nu, inv = np.unique(N, return_inverse=True)
    pair, c = efron_fractions(Nu)
    M = np.empty((Q, Nu.size))
    cq = c.copy()
    for _ in range(power - 1):
        cq *= c
    for q in range(Q):
        M[q] = np.bincount(pair, weights=cq, minlength=Nu.size)
        if weight is not None:
            M[q] *= weight(q)
        cq *= c
    acc = M[-1, inv].copy()
    for q in range(Q - 2, -1, -1):
        acc = acc * x + M[q, inv]
    return acc


def efron_fraction_sum(N, x):
    """``f(N, x) = sum_{r=0}^{N-1} c_r / (1 - c_r x)`` with ``c_r = r / N``, for integer
    ``N >= 0`` and ``0 <= x <= 1`` (arrays of the same shape), to rounding.

    For ``x <= 1/4`` the power series ``f = sum_{q >= 0} x^q M_{q+1}(N)``,
    ``M_q(N) = sum_r c_r^q`` (positive terms, ``M_{q+1} <= M_1 <= f``), truncated after
    the smallest Q with ``x_max^Q <= 2^-53`` over a class of x (Q = 27 up to 1/4, 5 up to
    2^-11, 3 up to 2^-18: large risk sets give small x, and few terms), relative error
    <= ``x^Q / (1 - x)``. For ``x > 1/4``: ``N <= 32``, the sum itself; otherwise the
    closed form ``f = (z [psi(z + 1) - psi(z - N + 1)] - N) / x`` with ``z = N / x``
    (``sum_r 1/(1 - c_r x) = z sum_r 1/(z - r)``), which loses at most a few hundred ulps
    there (``psi`` differences of relative size >= ln(4/3) / ln(4N)).
    """
    from scipy.special import digamma
    N = np.asarray(N, dtype=np.int64)
    x = np.asarray(x, dtype=np.float64)
    f = np.zeros(x.shape)
    live = N > 1                                    # f(0, x) = f(1, x) = 0
    upper = _EFRON_SERIES_X
    for rho in RHO_CANDIDATES[1:] + (-1.0,):       # classes (rho, upper] of x, then [0, ..]
        cls = np.flatnonzero(live & (x <= upper) & (x > rho))
        if cls.size:                                # M[q] = sum_r c_r^(q + 1)
            f[cls] = fraction_moment_series(N[cls], x[cls], series_length(upper), 1)
        upper = rho
    small = np.flatnonzero(live & (N <= _EFRON_DIRECT_MAX) & (x > _EFRON_SERIES_X))
    if small.size:
        pair, c = efron_fractions(N[small])
        f[small] = np.bincount(pair, weights=c / (1.0 - c * x[small][pair]),
                               minlength=small.size)
    closed = np.flatnonzero(live & (N > _EFRON_DIRECT_MAX) & (x > _EFRON_SERIES_X))
    if closed.size:
        Nc, xc = N[closed].astype(np.float64), x[closed]
        z = Nc / xc
        f[closed] = (z * (digamma(z + 1.0) - digamma(z - Nc + 1.0)) - Nc) / xc
    return f


_SQ_DIRECT_MAX = 32        # tie sizes up to this: sum the squared fractions one by one


_SQ_SERIES_X = 0.5         # above: the power series up to here, the trigamma form beyond


_SQ_SERIES_Q = 64          # 65 * 0.5^64 / 0.25 < 2^-53


def efron_square_fraction_sum(N, x):
    """``h(N, x) = sum_{r=0}^{N-1} c_r^2 / (1 - c_r x)^2`` with ``c_r = r / N`` (the
    derivative in x of :func:`coxinfluence.influence_functions.vif_series.efron_fraction_sum`), for
    integer
    ``N >= 0`` and ``0 <= x <= 1``.

    ``N <= 32``: the sum itself. Otherwise, for ``x <= 1/2`` the power series
    ``h = sum_{q >= 0} (q+1) x^q M_{q+2}(N)``, ``M_q(N) = sum_r c_r^q``, truncated after 64
    terms (relative error below ``65 * 2^-64 / (1/4) < 2^-53``); for ``x > 1/2``, with
    ``y_r = 1 / (1 - c_r x)``, ``z = N / x``, ``h = (sum y^2 - 2 sum y + N) / x^2`` where
    ``sum y = z [psi(z+1) - psi(z-N+1)]`` and ``sum y^2 = z^2 [psi'(z-N+1) - psi'(z+1)]``
    (a few hundred ulps at most there).
    """
    from scipy.special import digamma, polygamma
    N = np.asarray(N, dtype=np.int64)
    x = np.asarray(x, dtype=np.float64)
    h = np.zeros(x.shape)
    small = np.flatnonzero((N > 0) & (N <= _SQ_DIRECT_MAX))
    if small.size:
        pair, c = efron_fractions(N[small])
        h[small] = np.bincount(pair, weights=(c / (1.0 - c * x[small][pair])) ** 2,
                               minlength=small.size)
    big = N > _SQ_DIRECT_MAX
    series = np.flatnonzero(big & (x <= _SQ_SERIES_X))
    if series.size:     # M[q] = (q + 1) sum_r c_r^(q + 2)
        h[series] = fraction_moment_series(N[series], x[series], _SQ_SERIES_Q, 2,
                                           weight=lambda q: q + 1)
    closed = np.flatnonzero(big & (x > _SQ_SERIES_X))
    if closed.size:
        Nc, xc = N[closed].astype(np.float64), x[closed]
        z = Nc / xc
        sy = z * (digamma(z + 1.0) - digamma(z - Nc + 1.0))
        sy2 = z * z * (polygamma(1, z - Nc + 1.0) - polygamma(1, z + 1.0))
        h[closed] = (sy2 - 2.0 * sy + Nc) / xc ** 2
    return h

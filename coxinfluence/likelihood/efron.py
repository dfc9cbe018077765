"""Sums over Efron's tie fractions ``c_r = r / N``, ``r = 0..N-1``: the closed forms the VIF
and the deleted Hessians need when a row leaves a tie group's risk set,
``f(N, x) = sum_r c_r / (1 - c_r x)`` and its derivative ``h(N, x) = sum_r c_r^2 /
(1 - c_r x)^2``, to rounding for any tie size (Efron 1977; R's ``coxfit6.c`` weights)."""
from __future__ import annotations

from dataclasses import dataclass

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


@dataclass
class TieTerms:
    """Efron's sums over the tied failures of each failure time (any shape), each times
    the mean weight ``W_k / n_k`` of the ``n_k`` failing rows (``W_k`` their weights; R's
    weighted Efron), with ``den_l = S0_k - a_l F0_k``, ``a_l = l / n_k``, ``l < n_k``:

        logs = sum_l log den_l,      c = sum_l 1 / den_l,      c1 = sum_l a_l / den_l,
        g0, g1, g2 = sum_l a_l^m / den_l^2   (m = 0, 1, 2).

    Breslow's are the same with ``n_k = 1`` (``F0 = 0``): ``c = d_k / S0_k``,
    ``g0 = d_k / S0_k^2``, the others 0. A Fine-Gray loss's term at ``t_k`` is ``logs``,
    its gradient's ``c S1 - c1 F1`` and its Hessian's ``c S2 - c1 F2 - (g0 S1 S1' - g1
    (S1 F1' + F1 S1') + g2 F1 F1')`` (:mod:`coxinfluence.likelihood.fine_gray`). ``bad``:
    a denominator that is not positive."""

    logs: np.ndarray
    c: np.ndarray
    c1: np.ndarray
    g0: np.ndarray
    g1: np.ndarray
    g2: np.ndarray
    bad: np.ndarray

    def risk_mean(self, S1, F1):
        """``m = g0 S1 - g1 F1`` (..., d): the derivative of ``c`` is ``-m``; with ``c``
        it is the hazard jump's weighted mean ``xbar = m / c`` (Breslow's ``S1 / S0``)."""
        return self.g0[..., None] * S1 - self.g1[..., None] * F1

    def own_mean(self, S1, F1):
        """``m1 = g1 S1 - g2 F1``: the derivative of ``c1``, the failures' own term."""
        return self.g1[..., None] * S1 - self.g2[..., None] * F1


def tie_terms(S0, F0, nd, W, *, loss=True):
    """:class:`TieTerms` of the denominators ``S0``, tied sums ``F0``, row counts ``nd``
    and weights ``W`` (broadcast together). With ``x = F0 / S0`` and ``f``, ``h`` the
    fraction sums of :func:`efron_fraction_sum`, :func:`efron_square_fraction_sum` (to
    rounding for any tie size), since ``1 / (1 - a x) = 1 + a x / (1 - a x)``:

        c S0 = N + x f,   c1 S0 = f,   g0 S0^2 = N + 2 x f + x^2 h,   g1 S0^2 = f + x h,
        g2 S0^2 = h       (each times W / N).

    ``logs`` (only with ``loss``) sums the logarithms rank by rank."""
    S0, F0, nd, W = (np.asarray(a, dtype=np.float64) for a in np.broadcast_arrays(S0, F0,
                                                                                 nd, W))
    live = (W > 0) & (nd > 0)
    N = np.where(live, nd, 0.0)
    smallest = S0 - np.where(live, (N - 1.0) / np.where(live, N, 1.0), 0.0) * F0
    bad = live & ~((S0 > 0) & (smallest > 0))
    live &= ~bad
    S = np.where(live, S0, 1.0)
    x = np.clip(np.where(live, F0 / S, 0.0), 0.0, 1.0)
    Ni = np.where(live, N, 0.0).astype(np.int64)
    f = efron_fraction_sum(Ni.ravel(), x.ravel()).reshape(x.shape)
    h = efron_square_fraction_sum(Ni.ravel(), x.ravel()).reshape(x.shape)
    scale = np.where(live, W / np.where(live, N, 1.0), 0.0)
    s1, s2 = scale / S, scale / (S * S)
    logs = np.zeros(S0.shape)
    if loss:
        for rank in range(int(Ni.max()) if Ni.size else 0):
            at = live & (rank < Ni)
            den = np.where(at, S0 - rank / np.where(at, N, 1.0) * F0, 1.0)
            logs += np.log(den)
        logs *= scale
    return TieTerms(logs=logs, c=s1 * (N + x * f), c1=s1 * f,
                    g0=s2 * (N + 2.0 * x * f + x * x * h), g1=s2 * (f + x * h), g2=s2 * h,
                    bad=bad)

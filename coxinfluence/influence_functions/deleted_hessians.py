"""Closed-form leave-one-out Hessians ``H_{-g}(theta_hat)`` of the Cox loss (issue 13, item 1).

One-step Newton leave-one-out (:meth:`coxinfluence.influence_functions.engine_cox.CoxEngine.
newton_change`, behind ``ci.newton_loo``) needs, for every unit
g, the Hessian of the loss of the data with all rows of g *deleted* (a
:class:`~coxinfluence.data.deletion.Deletion`; for Efron ties this also removes an event from
its tie group's count, ``docs/conventions.md``), at ``theta_hat``. Evaluating each by the
risk-set kernels costs O(n d^2) per unit. Here every ``H - H_{-i}`` comes from the
full-data risk-set sums, the way :mod:`coxinfluence.influence_functions.vif` gets the gradient
differences.

The loss Hessian is ``H = sum_k m_k V_k`` over the Efron terms k (one per event), with
(:mod:`coxinfluence.likelihood.risk_sets`) ``den_k = S0 - c_k S0D``, ``a_k = (S1 - c_k S1D) /
den_k``,
``V_k = (S2 - c_k S2D) / den_k - a_k a_k'`` and ``m_k`` the mean event weight of the term's
tie group. Write ``u_i = w_i exp(eta_i)`` and ``x_i`` for row i.

**Part 1, terms that lose row i from their risk set only** (``k`` in ``[lo_i, hi_i)`` of
:attr:`RiskSets.deletion_term_ranges`: every term whose risk set holds i, except the
terms of i's own tie group when i is one of its events). Deleting i takes ``u_i``,
``u_i x_i``, ``u_i x_i x_i'`` out of the numerators and ``u_i`` out of ``den_k``. With
``delta = u_i / (den_k - u_i)``, ``E_k = V_k + a_k a_k'``:

    a_k^{(-i)} = (den_k a_k - u_i x_i) / (den_k - u_i) = a_k - delta (x_i - a_k),
    E_k^{(-i)} = (den_k E_k - u_i x_i x_i') / (den_k - u_i) = E_k + delta (E_k - x_i x_i'),
    V_k^{(-i)} = E_k^{(-i)} - a_k^{(-i)} a_k^{(-i)}'
               = V_k + delta V_k - delta (1 + delta) (x_i - a_k)(x_i - a_k)',

(expand and collect: the ``a_k a_k'`` and cross terms combine into ``-(x_i - a_k)(x_i -
a_k)'`` times ``delta + delta^2``), so row i's part-1 change is

    P1_i = sum_{k in [lo_i, hi_i)} m_k [ delta_ik (1 + delta_ik) (x_i - a_k)(x_i - a_k)'
                                         - delta_ik V_k ].

With ``r = u_i / den_k < 1``, ``delta = u_i sum_{p>=0} u_i^p / den_k^{p+1}`` and
``delta (1 + delta) = u_i den_k / (den_k - u_i)^2 = u_i sum_{p>=0} (p+1) u_i^p / den_k^{p+1}``.
So, as for the VIF's part 1 (:mod:`coxinfluence.influence_functions.vif_series`), the terms of row
i's range
split at ``k*_i`` into *direct pairs* (``r > rho``, at most ``K / rho`` of them, summed
one by one) and a *series* whose inner sums over terms,

    sum_{k >= k*_i} m_k [1, a_k, a_k a_k', V_k] / den_k^{p+1},   p = 0..P-1,

are suffix sums shared by all rows (the same reversed-rank term order, segment scaling
against over/underflow, and per-stratum centring of ``x`` and ``a``). The row's series
value is

    u_i sum_p u_i^p [ (p+1) (x_i x_i' F_p - x_i G_p' - G_p x_i' + Q_p) - W_p ]

with ``F, G, Q, W`` the suffix sums of ``m / den^{p+1}`` times ``1, a, a a', V`` (summed
as the one column block ``(p+1) a a' - V``, so each row gathers ``1 + d + T`` columns per
power, ``T = d (d+1) / 2``). Its truncation error is at most
``sum_{p>=P} (p+1) rho^p <= (P+1) rho^P / (1-rho)^2`` relative to the sum of absolute
terms; ``P`` (:func:`hessian_series_length`) puts that below ``2^-53``. Cost
O((n + K) P d^2 + (K / rho) d^2) time, O((n + K) d^2) memory. The direct method
(:func:`part1_direct`) sums all (row, term) pairs, O(n K d^2) as BLAS products in blocks
of rows; it is the reference, and the method for delayed entry (risk sets there
also shrink along the terms; the series needs them only to grow).

**Part 2, i an event of tie group g.** The group loses an event: its ``N = d_g - 1``
remaining terms have ``c'_r = r / N`` (Efron; 0 for Breslow) and mean weight
``m'_g = (W_g - w_i) / N``. With the group's sums less row i, ``C = S0 - u_i``,
``A1 = S1 - u_i x_i``, ``A2 = S2 - u_i x_i x_i'`` (risk set), ``D = S0D - u_i``,
``B1 = S1D - u_i x_i``, ``B2 = S2D - u_i x_i x_i'`` (the other events), ``a0 = A1 / C``,
``V0 = A2 / C - a0 a0'`` and ``t_r = c'_r / (C - c'_r D)``, each new term is

    a'_r = a0 + t_r e,            e = D a0 - B1,
    V'_r = V0 + t_r F - t_r^2 e e',   F = D A2 / C - B2 - a0 e' - e a0',

(from ``(A - c B) / (C - c D) = A / C + t (D A / C - B)``), so the group's new Hessian
is ``m'_g (N V0 + T1 F - T2 e e')`` with ``T1 = sum_r t_r = f(N, D/C) / C`` and
``T2 = sum_r t_r^2 = h(N, D/C) / C^2``: ``f`` is
:func:`coxinfluence.likelihood.efron.efron_fraction_sum`, ``h`` its derivative in x,
:func:`efron_square_fraction_sum`. Breslow: ``T1 = T2 = 0``. Row i's part-2 change is
``m_g sum_{r<d_g} V_{g,r} - m'_g (N V0 + T1 F - T2 e e')``, O(d^2) per event.

``H_{-i} = H - P1_i - P2_i``. A unit none of whose risk sets holds two of its rows
(:attr:`coxinfluence.data.units.Units.shares_risk_sets` false: rows, and subjects whose
intervals never overlap) changes each risk-set sum by at most one row, so its change is
the sum of its rows' changes, exactly. Units with two rows in one risk set (clusters,
subjects at risk from the origin in one stratum) are evaluated by deleting their rows
(:func:`by_deletion`, O(n d^2) per unit), which is also the tests' oracle.

Matrices are carried as their upper triangles (``d (d+1) / 2`` columns). Numerics: as the
VIF's series; rows holding almost all of a risk set (``u_i / den_k -> 1``) lose
``1 / (1 - u_i / den_k)`` in ``den_k - u_i``. Tests (``tests/test_deleted_hessians.py``):
against :func:`by_deletion` (1e-10 of max |H|; seen: 3e-15), series against the
direct sum for every split, the truncation bound, ``h`` against exact summation, and
``theta_hat - H_{-g}^{-1} grad L_{-g}`` against ``ci.newton_loo``.
"""
from __future__ import annotations

import numpy as np

from coxinfluence.influence_functions.vif_series import _SortedTerms
from coxinfluence.likelihood.efron import efron_fraction_sum, efron_square_fraction_sum
from coxinfluence.numerics.series import (
    GATHER_BLOCK,
    ROUNDING,
    add_direct_pairs,
    choose_split,
    gather_series,
    prefix_plan,
    segmented_prefix_sums,
)

#: the Cox algorithms' names (``method=`` of the deleted Hessians, the VIF, ci.newton_loo)
_METHODS = ("auto", "series", "direct")


# ------------------------------------------------------------------ public entry points

def deleted_hessians(fit, units, codes=None, *, method="auto"):
    """Hessians ``H_{-g}(fit.coef)`` of the loss without all rows of each unit g in
    ``codes`` (default: every unit), (m, d, d), in closed form (module docstring).

    ``units`` is a :class:`coxinfluence.data.units.Units` (``resolve_units(fit, groups)``);
    ``codes`` are its unit codes. Units with two rows in one risk set are evaluated by
    deleting their rows. ``method``: "series" (O((n + K) P d^2)), "direct" (O(n K d^2),
    the reference), "auto" (series, except direct on small data, ``n K <= 2e5``, and with
    delayed entry). The loss only: a ridge penalty of the fit is not included.
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
    data = fit.data
    if method == "series" and data.entry is not None:
        raise ValueError("method='series' needs risk sets that only grow back in time; with "
                         "delayed entry (start=) use method='direct' or 'auto'")
    if method == "auto":
        small = data.n * data.term_group.size <= 200_000
        method = "direct" if small or data.entry is not None else "series"
    codes = np.arange(units.n_units) if codes is None else np.asarray(codes, dtype=np.intp)
    out = np.empty((codes.size, data.d, data.d))
    shared = units.shares_risk_sets[codes]
    if (~shared).any():
        changes = np.zeros((data.n, data.d * (data.d + 1) // 2))    # H - H_{-i}, triangles
        if data.term_group.size:
            mom = _Moments(data, fit.risk_sets.state(fit.coef))
            part1 = part1_direct if method == "direct" else part1_series
            changes = part1(mom) + own_group_change(mom)
        hess = fit.risk_sets.loss_grad_hess(fit.coef[None, :])[2][0]
        i, j = np.triu_indices(data.d)
        per_unit = units.collapse(changes)[codes[~shared]]
        out[np.flatnonzero(~shared)[:, None], i, j] = hess[i, j] - per_unit
        out[np.flatnonzero(~shared)[:, None], j, i] = hess[j, i] - per_unit
    if shared.any():
        out[shared] = by_deletion(fit, units, codes[shared])
    return out


def by_deletion(fit, units, codes, batch=None, hess=True):
    """The loss's Hessians ``H_{-g}(fit.coef)`` (m, d, d), or with ``hess=False`` its
    gradients ``grad L_{-g}(fit.coef)`` (m, d), of the units ``codes`` by deleting their
    rows and evaluating the batched risk-set kernels (O(n d^2) per unit): the definition."""
    data = fit.data
    codes = np.asarray(codes, dtype=np.intp).reshape(-1)
    batch = batch or int(np.clip(1_000_000 // max(data.n * data.d, 1), 1, 256))
    out = np.empty((codes.size, data.d) + ((data.d,) if hess else ()))
    for b0 in range(0, codes.size, batch):
        part = codes[b0:b0 + batch]
        theta = np.repeat(fit.coef[None, :], part.size, axis=0)
        out[b0:b0 + batch] = fit.risk_sets.loss_grad_hess(theta, units.deletion(part),
                                                          hess=hess)[2 if hess else 1]
    return out


# ------------------------------------------------------------------ the moments

class _Moments:
    """Risk-set moments at one ``theta`` on the VIF series' sorted terms
    (:class:`coxinfluence.influence_functions.vif_series._SortedTerms`: each tie group's terms in
    reverse rank
    order, ``x`` and ``a`` centred per stratum), plus what the Hessian needs: per-term
    covariances ``V_k`` (K, T) in that order and the per-group sums of part 2."""

    def __init__(self, data, state):
        self.data, self.state = data, state
        self.terms = terms = _SortedTerms(data, state)
        d = data.d
        self.tri = np.triu_indices(d)
        self.u = state.risk
        self.xc = terms.x_centred(np.arange(data.n))
        self.xx = _outer_tri(self.xc, self.xc, self.tri)                       # (n, T)
        # S0, S1, S2 over each tie group's risk set, S0D, S1D, S2D over its events, centred
        rs, ev = state.risk_sets, data.event_rows
        u, ux, uxx = self.u, self.u[:, None] * self.xc, self.u[:, None] * self.xx
        self.S0, self.S1, self.S2 = (rs.risk_set_sums(v[None])[0] for v in (u, ux, uxx))
        self.S0D, self.S1D, self.S2D = (rs.group_event_sums(v[ev][None])[0]
                                        for v in (u, ux, uxx))
        tg = data.term_group
        a = state.term_mean - terms.centre[data.group_stratum[tg]]            # original order
        frac = state.frac[:, None]
        V = ((self.S2[tg] - frac * self.S2D[tg]) / state.den[:, None]
             - _outer_tri(a, a, self.tri))
        self.group_hessian = rs.group_event_sums((state.mean_weight[:, None] * V)[None])[0]
        self.V = V[terms.perm]                                                # sorted terms
        self.aa = _outer_tri(terms.a, terms.a, self.tri)


def _outer_tri(a, b, tri):
    """Upper triangles of the outer products ``a_k b_k'`` (rows k), (K, T), in
    ``np.triu_indices(d)`` order (``tri``)."""
    d = a.shape[1]
    full = np.einsum("ki,kj->kij", a, b).reshape(a.shape[0], d * d)
    return np.take(full, tri[0] * d + tri[1], axis=1)


def _sym_outer_tri(a, b, tri):
    """Upper triangles of ``a_k b_k' + b_k a_k'``."""
    d = a.shape[1]
    full = np.einsum("ki,kj->kij", a, b).reshape(a.shape[0], d * d)
    out = np.take(full, tri[0] * d + tri[1], axis=1)
    out += np.take(full, tri[1] * d + tri[0], axis=1)
    return out


def _pair_terms(mom, rows, k, xc):
    """``m (delta (1 + delta) (x_i - a_k)(x_i - a_k)' - delta V_k)`` for pairs (row, term)."""
    t = mom.terms
    den = t.den[k]
    u = mom.u[rows]
    rest = den - u
    w1 = t.m[k] * u / rest                     # m delta
    w2 = w1 * den / rest                       # m delta (1 + delta)
    diff = xc - t.a[k]
    return w2[:, None] * _outer_tri(diff, diff, mom.tri) - w1[:, None] * mom.V[k]


# ------------------------------------------------------------------ part 1

def hessian_series_length(rho, tol=ROUNDING):
    """Smallest P with ``(P + 1) rho^P / (1 - rho)^2 <= tol``: the tail of
    ``sum_p (p+1) r^p`` for ``r <= rho`` below double rounding (relative to its sum >= 1)."""
    P = 1
    while (P + 1) * rho ** P / (1.0 - rho) ** 2 > tol:
        P += 1
    return P


def part1_series(mom, rho=None, n_terms=None):
    """Part 1 (module docstring) for every sorted row, (n, T): direct pairs where
    ``u_i / den_k > rho``, the P-term series elsewhere, by the VIF's series engine
    (:func:`coxinfluence.numerics.series.choose_split`,
    :func:`~coxinfluence.numerics.series.add_direct_pairs`,
    :func:`~coxinfluence.numerics.series.gather_series`) with this
    module's summands and series length."""
    rho, kstar = choose_split(mom.terms, rho, hessian_series_length)
    P = hessian_series_length(rho) if n_terms is None else int(n_terms)
    out = np.zeros((mom.data.n, mom.xx.shape[1]))
    add_direct_pairs(mom.terms, kstar, 1 << 15,
                     lambda rows, k: _pair_terms(mom, rows, k, mom.xc[rows]), out)
    return out + _series(mom, kstar, P)


def _suffix_sums_by_power(seg, mom, P):
    """For p = 0..P-1: suffix sums over each segment's terms (as prefix sums in reversed
    term order, column K - 1 - k; a zero sentinel column K) of
    ``m [(p+1), (p+1) a, (p+1) a a' - V] / den`` scaled by ``(s/den)^p`` (s: the segment's smallest
    den), laid out as (1 + d + T, K + 1) for contiguous cumulative sums. Combining the
    ``a a'`` and ``V`` columns before summing halves the columns gathered per row."""
    t = mom.terms
    K, d, T = t.den.size, mom.data.d, mom.aa.shape[1]
    plan = prefix_plan((K - seg.start - seg.length)[::-1], seg.length[::-1])
    ratio = (seg.scale[seg.of] / t.den)[::-1]
    w = (t.m / t.den)[::-1]
    base = np.empty((1 + d + 2 * T, K))
    base[0] = w
    base[1:1 + d] = w * t.a[::-1].T
    base[1 + d:1 + d + T] = w * mom.aa[::-1].T
    base[1 + d + T:] = w * mom.V[::-1].T
    Vp = np.zeros((1 + d + T, K + 1))
    for p in range(P):
        if p:
            base *= ratio
        np.multiply(base[:1 + d + T], p + 1.0, out=Vp[:, :K])
        Vp[1 + d:, :K] -= base[1 + d + T:]
        yield segmented_prefix_sums(Vp, plan)


def _series(mom, kstar, P):
    """The P-term series over terms [k*_i, hi_i) of every row (module docstring): each
    row's gathered sums ``F, G, R`` of ``m [(p+1), (p+1) a, (p+1) a a' - V] / den^{p+1}``
    (:func:`coxinfluence.numerics.series.gather_series`), then
    ``u_i (x_i x_i' F - x_i G' - G x_i' + R)``."""
    data = mom.data
    n, d = data.n, data.d
    out = np.zeros((n, mom.xx.shape[1]))
    if not (kstar < mom.terms.hi).any():
        return out
    acc = np.zeros((n, 1 + d + mom.xx.shape[1]))

    def consume(rows, g):
        acc[rows] += g

    def sums_by_power(seg):                   # row gathers: (K + 1, c) contiguous
        return (np.ascontiguousarray(L.T) for L in _suffix_sums_by_power(seg, mom, P))
    gather_series(mom.terms, kstar, P, sums_by_power, consume, acc.shape[1])
    for b0 in range(0, n, GATHER_BLOCK):
        rows = slice(b0, b0 + GATHER_BLOCK)
        F, G, R = acc[rows, 0], acc[rows, 1:1 + d], acc[rows, 1 + d:]
        val = mom.xx[rows] * F[:, None] - _sym_outer_tri(mom.xc[rows], G, mom.tri) + R
        out[rows] = mom.u[rows, None] * val
    return out


def part1_direct(mom):
    """Part 1 for every sorted row by summing all its terms (O(n K d^2), BLAS products in
    blocks of rows): the reference, and the method with delayed entry."""
    t, data = mom.terms, mom.data
    K = t.den.size
    T = mom.xx.shape[1]
    out = np.zeros((data.n, T))
    block_rows = max(1, int(4e6 // max(K, 1)))              # 4e6 floats per block
    k = np.arange(K)
    for b0 in range(0, data.n, block_rows):
        rows = slice(b0, min(b0 + block_rows, data.n))
        inside = (k[None, :] >= t.lo[rows, None]) & (k[None, :] < t.hi[rows, None])
        u = mom.u[rows, None]
        rest = np.where(inside, t.den[None, :] - u, 1.0)
        w1 = np.where(inside, t.m[None, :] * u / rest, 0.0)      # m delta
        w2 = w1 * t.den[None, :] / rest                            # m delta (1 + delta)
        x = mom.xc[rows]
        G = w2 @ t.a
        out[rows] = (mom.xx[rows] * w2.sum(axis=1)[:, None] - _sym_outer_tri(x, G, mom.tri)
                     + w2 @ mom.aa - w1 @ mom.V)
    return out


# ------------------------------------------------------------------ part 2

def own_group_change(mom):
    """Part 2 (module docstring) for every event row, (n, T) with zeros for censored rows:
    ``m_g sum_r V_{g,r} - m'_g (N V0 + T1 F - T2 e e')``."""
    data, tri = mom.data, mom.tri
    out = np.zeros((data.n, mom.xx.shape[1]))
    ev = data.event_rows
    if ev.size == 0:
        return out
    g = data.term_group                      # group of each event row (event_rows order)
    N = data.group_n_events[g] - 1
    new = np.zeros((ev.size, out.shape[1]))
    e = np.flatnonzero(N > 0)
    if e.size:
        ge, re = g[e], ev[e]
        u, x, xx = mom.u[re], mom.xc[re], mom.xx[re]
        C = mom.S0[ge] - u
        A1 = mom.S1[ge] - u[:, None] * x
        A2 = mom.S2[ge] - u[:, None] * xx
        a0 = A1 / C[:, None]
        new[e] = N[e, None] * (A2 / C[:, None] - _outer_tri(a0, a0, tri))
        if data.ties == "efron":
            D = mom.S0D[ge] - u
            B1 = mom.S1D[ge] - u[:, None] * x
            B2 = mom.S2D[ge] - u[:, None] * xx
            err = D[:, None] * a0 - B1
            F = D[:, None] * A2 / C[:, None] - B2 - _sym_outer_tri(a0, err, tri)
            ratio = np.clip(D / C, 0.0, 1.0)
            T1 = efron_fraction_sum(N[e], ratio) / C
            T2 = efron_square_fraction_sum(N[e], ratio) / C ** 2
            new[e] += T1[:, None] * F - T2[:, None] * _outer_tri(err, err, tri)
    m_new = (data.group_event_weight[g] - data.weights[ev]) / np.maximum(N, 1)
    out[ev] = mom.group_hessian[g] - m_new[:, None] * new
    return out



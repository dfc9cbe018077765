"""The closed-form Versatile Influence Function (VIF) for Cox regression.

Paper, Definition "Versatile Influence Function" and appendix "The Proposed VIF":

    VIF_n(i) = -(H/n)^{-1} ( grad L(theta_hat; all rows) - grad L(theta_hat; row i deleted) ).

Deleting row i (DESIGN.md: deletion, not a zero weight, which differs for Efron) changes
the gradient in two places. Write ``u_i = w_i exp(eta_i)`` and, per Efron term k,
``den_k = S0 - c_k S0D``, ``a_k = (S1 - c_k S1D)/den_k``, ``m_k`` the mean event weight.

1. Every term whose risk set holds i but whose tie group does not have i as an event
   loses ``u_i`` from its denominator and ``u_i x_i`` from its numerator, so

       a_k - a_k^{(-i)} = u_i (x_i - a_k) / (den_k - u_i)

   and the gradient difference gathers ``u_i sum_k m_k (x_i - a_k) / (den_k - u_i)``
   (the paper's ``sum_{j: Y_j < Y_i}`` term, generalised to ties, strata and weights).
2. When i is an event of tie group g, that group loses an event: its ``-w_i x_i`` term,
   one Efron term, and its fractions and mean weight change:

       own_i = -w_i x_i + m_g sum_{r<d_g} a_{g,r} - m'_g sum_{r<d_g-1} a'_{g,r},
       m'_g = (W_g - w_i)/(d_g - 1),   c'_r = r/(d_g - 1),
       a'_{g,r} = (S1 - u_i x_i - c'_r (S1D - u_i x_i)) / (S0 - u_i - c'_r (S0D - u_i)).

Without ties and weights, 1 + 2 is the paper's appendix formula. Its definition (by
literal deletion) is checked in the tests to 1e-9 relative for both tie methods.

``_vif_delta_direct`` sums part 1 over all terms for every row: O(n K d) time with
memory bounded by ``block_rows``; it is the reference implementation.

``_vif_delta_series`` computes part 1 in O((n + K) P d + N_direct d) time and O((n + K) d)
memory (K = number of events, P = 14 by default, N_direct <= K / rho, see below), exact
to rounding. For row i, with ``r_ik = u_i / den_k`` (< 1 on the range, since row i is
one of the rows summed in ``den_k``), split the range at ``k*_i``:

    sum_{k in [lo_i, hi_i)} m_k (x_i - a_k) / (den_k - u_i)
      =   sum_{k in [lo_i, k*_i)} m_k (x_i - a_k) / (den_k - u_i)               (direct)
        + sum_{p < P} u_i^p sum_{k in [k*_i, hi_i)} m_k (x_i - a_k) / den_k^{p+1}  (series)
        + E_i,

where the direct terms are those with ``r_ik > rho`` and the series terms have
``r_ik <= rho``. This split is a contiguous cut because, once the Efron terms of each tie
group are listed in reverse rank order (terms are anonymous within a group), ``den_k``
is non-decreasing along a stratum's terms: later terms belong to earlier event times,
and every term of group g exceeds ``S0_g - S0D_g >= S0_{g'}`` of any later-time group g'.
So ``k*_i`` is one binary search, and the inner series sums are suffix sums over
terms, shared by all rows. The truncation error is the geometric tail

    E_i = sum_{k >= k*_i} m_k (x_i - a_k) r_ik^P / (den_k - u_i),
    |E_i| <= rho^P sum_{k >= k*_i} m_k |x_i - a_k| / (den_k - u_i)
          <= rho^P / (1 - rho) sum_{k >= k*_i} m_k |x_i - a_k| / den_k,

i.e. at most ``rho^P`` relative to the sum of absolute values. ``P`` is the smallest
with ``rho^P <= 2^-53`` (below double rounding), and ``rho`` is picked per data set from
``2^-2 ... 2^-18`` (P = 27 ... 3) by counting operations: a smaller ``rho`` means fewer
series terms but more direct pairs (tested: the error *is* ``-E_i`` and obeys the bound
when P is cut short; with the default P the part-1 sums agree with direct summation to
1e-13 of the sum of absolute terms, and the VIF with the O(n K d) reference to 1e-10 of
each coefficient's largest |VIF| on n = 20,000). At most ``1/rho`` rows
of a term's risk set can have ``u_i > rho den_k`` (their ``u`` add up to at most
``den_k``), so there are at most ``K / rho`` direct (row, term) pairs; they are summed
in memory-bounded blocks. Numerics: ``x`` and ``a`` are centred per stratum (at the
risk-set mean of the stratum's largest risk set), so ``x_i F - G`` does not cancel a
common offset; the direct pairs use ``x_i - a_k`` as is; ``den^-(p+1)`` is never formed:
each stratum's terms are cut into segments over which ``den`` grows by at most a factor
``f`` (``f^P <= 1e250``), a segment with smallest denominator ``s`` stores the suffix
sums of ``m (s/den)^p / den`` (all factors <= 1) and a row multiplies them by
``(u_i/s)^p``; the suffix sums are cumulative sums of positive terms (no differences).
What remains is the conditioning of the sum itself: ``x_i F - G`` loses the digits of
``|x_i - centre| F / |result|`` (a few hundred ulps on extreme data), and rows holding
almost all of a risk set (``u_i / den_k -> 1``) lose ``1 / (1 - u_i/den_k)`` in
``den_k - u_i``, as the direct sum does.

Part 2 has an O(K d) form, ``_own_group_change_fast``, used by the series method; the
pairwise ``_own_group_change`` (O(sum_g d_g^2 d) time and memory) stays as its reference.
"""
from __future__ import annotations

import numpy as np

from ._influence_common import _fit_data, paper_scale
from .cox import _group_event_sums, risk_set_state


def _term_ranges(data):
    """For each sorted row: the half-open range of Efron terms of part 1.

    Terms are ordered by tie group, i.e. by stratum and descending time; row i's risk
    sets are the groups from its own (inclusive, or exclusive when i is an event of it)
    to the last group of its stratum.
    """
    tg = data.term_group
    first = data.group + (data.event > 0)
    lo = np.searchsorted(tg, first, side="left")
    # last group index of each row's stratum
    stratum_last_group = np.searchsorted(data.group_stratum, data.strata, side="right") - 1
    hi = np.searchsorted(tg, stratum_last_group, side="right")
    return lo, hi


def _group_sums(data, state):
    """Per tie group: risk-set sums ``S0``, ``S1``, event sums ``S0D``, ``S1D`` (shifted
    scale) and the group's gradient term ``m_g sum_r a_{g,r}``."""
    X, u, ev = data.X, state.risk, data.event_rows
    G = data.n_groups
    first_term = np.searchsorted(data.term_group, np.arange(G), side="left")
    has = data.group_n_events > 0
    S0 = np.zeros(G)
    S1 = np.zeros((G, data.d))
    S0[has] = state.den[first_term[has]]               # the r = 0 term has c = 0
    S1[has] = state.term_mean[first_term[has]] * S0[has, None]
    S0D = _group_event_sums(data, u[ev][None, :])[0]
    S1D = _group_event_sums(data, (u[ev, None] * X[ev])[None, :, :])[0]
    m = data.group_event_weight / np.maximum(data.group_n_events, 1)
    full = m[:, None] * _group_event_sums(data, state.term_mean[None, :, :])[0]
    return S0, S1, S0D, S1D, full


def _own_group_change(data, state):
    """Part 2 for every event row (sorted order), (n, d) with zeros for censored rows."""
    X, w = data.X, data.weights
    out = np.zeros_like(X)
    ev = data.event_rows
    if ev.size == 0:
        return out
    u = state.risk
    n_ev = data.group_n_events
    S0, S1, S0D, S1D, full = _group_sums(data, state)

    g = data.term_group                       # group of each event row (event_rows order)
    d_i = n_ev[g]
    ui, xi = u[ev], X[ev]
    # expanded pairs (event i, remaining rank r' = 0..d_g-2)
    reps = d_i - 1
    pair_event = np.repeat(np.arange(ev.size), reps)
    start = np.cumsum(reps) - reps
    r_prime = np.arange(pair_event.size) - np.repeat(start, reps)
    gp = g[pair_event]
    if data.ties == "efron":
        c = r_prime / np.maximum(d_i[pair_event] - 1, 1)
    else:
        c = np.zeros(pair_event.size)
    up, xp = ui[pair_event], xi[pair_event]
    num = S1[gp] - up[:, None] * xp - c[:, None] * (S1D[gp] - up[:, None] * xp)
    den = S0[gp] - up - c * (S0D[gp] - up)
    a_new = num / den[:, None]
    m_new = (data.group_event_weight[g] - w[ev]) / np.maximum(d_i - 1, 1)
    remaining = np.zeros((ev.size, data.d))
    np.add.at(remaining, pair_event, a_new)
    out[ev] = -w[ev, None] * xi + full[g] - m_new[:, None] * remaining
    return out


_EFRON_DIRECT_MAX = 32      # tie sizes up to this: sum the Efron fractions one by one
_EFRON_SERIES_X = 0.25      # above: the power series in x up to here, the digamma form beyond
_EFRON_SERIES_Q = 27        # 0.25^27 < 2^-53


def _efron_fraction_sum(N, x):
    """``f(N, x) = sum_{r=0}^{N-1} c_r / (1 - c_r x)`` with ``c_r = r / N``, for integer
    ``N >= 0`` and ``0 <= x <= 1`` (arrays of the same shape), to rounding.

    ``N <= 32``: the sum itself. Otherwise, for ``x <= 1/4`` the power series
    ``f = sum_{q >= 0} x^q M_{q+1}(N)``, ``M_q(N) = sum_r c_r^q <= N``, truncated after 27
    terms (relative error <= 0.25^27 / (1 - 0.25) < 1e-16); for ``x > 1/4`` the
    closed form ``f = (z [psi(z + 1) - psi(z - N + 1)] - N) / x`` with ``z = N / x``
    (``sum_r 1/(1 - c_r x) = z sum_r 1/(z - r)``), which loses at most a few hundred ulps
    there (``psi`` differences of relative size >= ln(4/3) / ln(4N)).
    """
    from scipy.special import digamma
    N = np.asarray(N, dtype=np.int64)
    x = np.asarray(x, dtype=np.float64)
    f = np.zeros(x.shape)
    small = (N > 0) & (N <= _EFRON_DIRECT_MAX)
    if small.any():
        idx = np.flatnonzero(small)
        Ns = N[idx]
        pair = np.repeat(np.arange(idx.size), Ns)
        r = np.arange(pair.size) - np.repeat(np.cumsum(Ns) - Ns, Ns)
        c = r / Ns[pair]
        f[idx] = np.bincount(pair, weights=c / (1.0 - c * x[idx][pair]), minlength=idx.size)
    big = N > _EFRON_DIRECT_MAX
    series = np.flatnonzero(big & (x <= _EFRON_SERIES_X))
    if series.size:
        Nu, inv = np.unique(N[series], return_inverse=True)
        pair = np.repeat(np.arange(Nu.size), Nu)
        c = (np.arange(pair.size) - np.repeat(np.cumsum(Nu) - Nu, Nu)) / Nu[pair]
        M = np.empty((_EFRON_SERIES_Q, Nu.size))       # M[q] = sum_r c_r^(q + 1)
        cq = c.copy()
        for q in range(_EFRON_SERIES_Q):
            M[q] = np.bincount(pair, weights=cq, minlength=Nu.size)
            cq *= c
        xs = x[series]
        acc = M[-1, inv].copy()
        for q in range(_EFRON_SERIES_Q - 2, -1, -1):
            acc = acc * xs + M[q, inv]
        f[series] = acc
    closed = np.flatnonzero(big & (x > _EFRON_SERIES_X))
    if closed.size:
        Nc, xc = N[closed].astype(np.float64), x[closed]
        z = Nc / xc
        f[closed] = (z * (digamma(z + 1.0) - digamma(z - Nc + 1.0)) - Nc) / xc
    return f


def _own_group_change_fast(data, state):
    """Part 2 (module docstring) for every event row in O(K d): same value as
    ``_own_group_change`` (which expands all (event, remaining rank) pairs, O(sum_g d_g^2 d)).

    With ``A = S1 - u_i x_i``, ``C = S0 - u_i`` (the risk set without i), ``B = S1D - u_i x_i``,
    ``D = S0D - u_i`` (the other events of the group), ``N = d_g - 1``, ``a0 = A / C``:

        sum_{r<N} (A - (r/N) B) / (C - (r/N) D) = N a0 + (D a0 - B) f(N, D/C) / C,

    since each term is ``a0 + c (D a0 - B) / (C - c D)``; ``f`` is
    :func:`_efron_fraction_sum`. Breslow (all ``c = 0``) is ``N a0``.
    """
    X, w = data.X, data.weights
    out = np.zeros_like(X)
    ev = data.event_rows
    if ev.size == 0:
        return out
    u = state.risk
    n_ev = data.group_n_events
    S0, S1, S0D, S1D, full = _group_sums(data, state)
    g = data.term_group
    N = n_ev[g] - 1
    ui, xi = u[ev], X[ev]
    C = S0[g] - ui
    live = N > 0
    remaining = np.zeros((ev.size, data.d))
    if live.any():
        e = np.flatnonzero(live)
        a0 = (S1[g[e]] - ui[e, None] * xi[e]) / C[e, None]
        remaining[e] = N[e, None] * a0
        if data.ties == "efron":
            D = S0D[g[e]] - ui[e]
            B = S1D[g[e]] - ui[e, None] * xi[e]
            x = np.clip(D / C[e], 0.0, 1.0)
            f = _efron_fraction_sum(N[e], x)
            remaining[e] += (D[:, None] * a0 - B) * (f / C[e])[:, None]
    m_new = (data.group_event_weight[g] - w[ev]) / np.maximum(N, 1)
    out[ev] = -w[ev, None] * xi + full[g] - m_new[:, None] * remaining
    return out


def _vif_delta_direct(data, state, block_rows=None):
    """``grad L(all) - grad L(-i)`` for every sorted row by direct summation, O(n K d)."""
    X = data.X
    K = data.term_group.size
    lo, hi = _term_ranges(data)
    u = state.risk
    m, den, a = state.mean_weight, state.den, state.term_mean
    if block_rows is None:
        block_rows = max(1, int(2e7 // max(K, 1)))
    delta = _own_group_change(data, state)
    k = np.arange(K)
    for start in range(0, data.n, block_rows):
        rows = slice(start, min(start + block_rows, data.n))
        inside = (k[None, :] >= lo[rows, None]) & (k[None, :] < hi[rows, None])
        with np.errstate(divide="ignore", invalid="ignore"):   # outside the range only
            wk = np.where(inside, m[None, :] / (den[None, :] - u[rows, None]), 0.0)
        delta[rows] += u[rows, None] * (X[rows] * wk.sum(axis=1)[:, None] - wk @ a)
    return delta


# ------------------------------------------------------------------ the series method

_RHO_CANDIDATES = tuple(2.0 ** -b for b in (2, 4, 6, 8, 11, 14, 18))
_ROUNDING = 2.0 ** -53       # the series is truncated once rho^P is below this
_LOG_SPAN = 250.0 * np.log(10.0)   # f^P <= 1e250 for the segment growth factor f
_STRATUM_KEY = 1500.0        # |log den| < 745 for any positive double: strata keys never mix


def _series_length(rho, tol=_ROUNDING):
    """Smallest P with ``rho^P <= tol`` (P = 14 for rho = 1/16)."""
    return max(1, int(np.ceil(np.log(tol) / np.log(rho) - 1e-12)))


def _reversed_ranks(data):
    """Permutation of the Efron terms that lists each tie group's terms in reverse rank
    order, making ``den`` non-decreasing along each stratum's terms (module docstring)."""
    tg = data.term_group
    first = np.searchsorted(tg, tg, side="left")
    last = np.searchsorted(tg, tg, side="right")
    return first + last - 1 - np.arange(tg.size)


def _prefix_plan(starts, lengths):
    """How to take prefix sums within each segment ``[starts[j], starts[j] + lengths[j])``
    of ``K = sum(lengths)`` columns that partition ``[0, K)``.

    Segments of similar length (within a factor 2) are stacked into one padded 2-D
    gather, so many short segments (many strata) cost a few array operations, not one
    Python call each; a bucket of at most 4 segments is done slice by slice.
    Padding points at the sentinel column K (all zeros).
    """
    plan = []
    if starts.size == 0:
        return plan
    sentinel = int(lengths.sum())
    bucket = np.floor(np.log2(np.maximum(lengths, 1))).astype(int)
    for b in np.unique(bucket):
        sel = np.flatnonzero(bucket == b)
        if sel.size <= 4:
            for j in sel:
                plan.append(("slice", int(starts[j]), int(starts[j] + lengths[j])))
            continue
        width = int(lengths[sel].max())
        offs = np.arange(width)
        mask = offs[None, :] < lengths[sel, None]
        idx = np.where(mask, starts[sel, None] + offs[None, :], sentinel)
        plan.append(("stack", idx, mask, idx[mask]))
    return plan


def _segmented_prefix_sums(V, plan):
    """``out[:, k] = sum of V[:, k']`` over ``k' <= k`` in k's segment; V is (c, K + 1)
    with a zero sentinel column K. Sequential sums of the terms as given: every entry is
    a sum of positive (or same-signed) terms, never a difference of two sums."""
    out = np.empty_like(V)
    out[:, -1] = 0.0
    for step in plan:
        if step[0] == "slice":
            _, a, b = step
            np.cumsum(V[:, a:b], axis=1, out=out[:, a:b])
        else:
            _, idx, mask, flat = step
            block = V[:, idx]
            np.cumsum(block, axis=2, out=block)
            out[:, flat] = block[:, mask]
    return out


def _part1_series(data, state, rho=None, n_terms=None, pair_block=1 << 16):
    """Part 1 of the module docstring, ``sum_{k in [lo_i, hi_i)} m_k (x_i - a_k) /
    (den_k - u_i)`` for every sorted row (n, d), *without* the factor ``u_i``: direct sums
    where ``u_i / den_k > rho``, the P-term series in ``u_i / den_k`` elsewhere.

    ``rho`` defaults to the cheapest of ``2^-2, 2^-4, ..., 2^-18`` by an operation count
    (``_RHO_CANDIDATES``); ``n_terms`` (P) to the smallest P with ``rho^P <= 2^-53``.
    The truncation error of row i is at most ``rho^P sum_k m_k |x_i - a_k| / (den_k - u_i)``
    over its series terms.
    """
    if rho is not None and not 0.0 < rho < 1.0:
        raise ValueError(f"rho must lie in (0, 1); got {rho!r}")
    n, d = data.n, data.d
    K = data.term_group.size
    out = np.zeros((n, d))
    if K == 0:
        return out
    lo, hi = _term_ranges(data)
    u = state.risk
    perm = _reversed_ranks(data)
    den = state.den[perm]
    m = state.mean_weight[perm]
    t_stratum = data.group_stratum[data.term_group]        # stratum of each term

    # centre x and a per stratum at the mean of the stratum's largest risk set
    new_s = np.r_[True, t_stratum[1:] != t_stratum[:-1]]
    s_first = np.flatnonzero(new_s)
    s_last = np.append(s_first[1:], K) - 1
    centre = np.zeros((int(data.strata.max()) + 1, d))
    centre[t_stratum[s_last]] = state.term_mean[perm[s_last]]
    a = state.term_mean[perm] - centre[t_stratum]

    def x_centred(rows):
        return data.X[rows] - centre[data.strata[rows]]

    # monotone search key: stratum blocks, then log den (made exactly non-decreasing)
    logden = np.log(den)
    key = np.maximum.accumulate(t_stratum * _STRATUM_KEY + logden)
    with np.errstate(divide="ignore"):
        q = data.strata * _STRATUM_KEY + np.log(u)

    # largest u_i / den_k of each row's range (den_k is smallest at k = lo_i)
    first_ratio = np.zeros(n)
    has = lo < hi
    first_ratio[has] = u[has] / den[lo[has]]

    def split(r):
        ks = lo.copy()
        rows = np.flatnonzero(first_ratio > r)
        ks[rows] = np.clip(np.searchsorted(key, q[rows] - np.log(r), side="left"),
                           lo[rows], hi[rows])
        return ks

    if rho is None:
        # operation count: ~6 per direct (row, term) pair and column, ~3 per row and
        # ~2 per term and column for each of the P series terms
        best = None
        for r in _RHO_CANDIDATES:
            ks = split(r)
            cost = 6.0 * (ks - lo).sum() + _series_length(r) * (3.0 * n + 2.0 * K)
            if best is None or cost < best[0]:
                best = (cost, r, ks)
        _, rho, kstar = best
    else:
        kstar = split(rho)
    P = _series_length(rho) if n_terms is None else int(n_terms)

    # ---- direct pairs (row i, term k), k in [lo_i, k*_i)
    cnt = kstar - lo
    rows = np.flatnonzero(cnt > 0)
    if rows.size:
        block = (np.cumsum(cnt[rows]) - cnt[rows]) // pair_block   # by first pair
        bounds = np.r_[0, np.flatnonzero(np.diff(block)) + 1, rows.size]
        for b0, b1 in zip(bounds[:-1], bounds[1:]):
            r = rows[b0:b1]
            c = cnt[r]
            first = np.cumsum(c) - c
            pr = np.repeat(r, c)
            k = np.repeat(lo[r] - first, c) + np.arange(pr.size)
            wk = m[k] / (den[k] - u[pr])
            out[r] += np.add.reduceat(wk[:, None] * (x_centred(pr) - a[k]), first, axis=0)

    # ---- series part: segments of each stratum with den growing by <= f
    seg_key = (key - np.repeat(key[s_first], s_last - s_first + 1)) / (_LOG_SPAN / P)
    chunk = np.floor(seg_key).astype(np.int64)
    new_seg = new_s | np.r_[True, chunk[1:] != chunk[:-1]]
    seg_start = np.flatnonzero(new_seg)
    seg_len = np.diff(np.append(seg_start, K))
    seg_of = np.cumsum(new_seg) - 1
    scale = den[seg_start]                             # smallest den of each segment
    seg_last = np.repeat(seg_of[s_last], s_last - s_first + 1)   # last segment of the stratum

    live = np.flatnonzero(kstar < hi)
    if live.size == 0:
        return out
    if 2 * live.size > n:          # cheaper to carry every row (empty ones gather zeros)
        live = np.arange(n)
    # Suffix sums over terms are prefix sums in reversed term order (column K - 1 - k),
    # laid out as (d + 1, K + 1) rows [m/den, m a/den] for contiguous cumulative sums.
    plan = _prefix_plan((K - seg_start - seg_len)[::-1], seg_len[::-1])
    kl = kstar[live]
    empty = kl >= hi[live]
    kl[empty] = K - 1                                 # any valid term; gathers the sentinel
    sl = seg_of[kl]
    col = np.where(empty, K, K - 1 - kl)
    t = np.where(empty, 0.0, u[live] / scale[sl])
    ratio = (scale[seg_of] / den)[::-1]                # (s / den_k) <= 1 within a segment
    Vp = np.zeros((d + 1, K + 1))
    Vp[0, :K] = (m / den)[::-1]
    Vp[1:, :K] = Vp[0, :K] * a[::-1].T
    # rows whose stratum has more segments after that of k*_i add whole later segments
    extra = np.where(empty, 0, seg_last[kl] - sl)
    n_extra = int(extra.max())
    acc = np.zeros((d + 1, live.size))
    block = 1 << 16                                    # rows per gather (bounded memory)
    gathered = np.empty((d + 1, min(block, live.size)))
    tp = np.ones(live.size)
    for p in range(P):
        if p:
            Vp[:, :K] *= ratio
            tp *= t
        L = _segmented_prefix_sums(Vp, plan)
        for b0 in range(0, live.size, block):
            b1 = min(b0 + block, live.size)
            g = gathered[:, :b1 - b0]
            np.take(L, col[b0:b1], axis=1, out=g)
            g *= tp[b0:b1]
            acc[:, b0:b1] += g
        for j in range(1, n_extra + 1):
            more = np.flatnonzero(extra >= j)
            seg = sl[more] + j
            acc[:, more] += (u[live[more]] / scale[seg]) ** p * L[:, K - 1 - seg_start[seg]]
    for b0 in range(0, live.size, block):
        rows = live[b0:b0 + block]
        out[rows] += x_centred(rows) * acc[0, b0:b0 + block, None] - acc[1:, b0:b0 + block].T
    return out


def _vif_delta_series(data, state, rho=None, n_terms=None):
    """``grad L(all) - grad L(-i)`` for every sorted row: part 1 by the split
    direct + series sum of the module docstring (exact to rounding with the default
    ``rho``, ``n_terms``), part 2 by ``_own_group_change_fast`` in O(K d)."""
    part1 = _part1_series(data, state, rho=rho, n_terms=n_terms)
    return _own_group_change_fast(data, state) + state.risk[:, None] * part1


_METHODS = ("auto", "series", "direct")


def vif(fit, *, method="auto"):
    """Closed-form VIF of every row, paper scale: ``-(H/n)^{-1}(grad L - grad L_{-i})``.

    Returns an (n, d) array in the caller's row order (a DataFrame with the caller's
    index for pandas input), approximating ``n (theta_hat - theta_hat_{-i})``; the
    estimated leave-one-out change is ``-VIF_n(i) / n``.

    method : "auto" (default) uses "series" except on data so small that the direct
        sum costs less (``n K <= 2e5``). "series" is the direct-plus-series split of
        the module docstring: O((n + K) P d) time, O((n + K) d) memory, exact to
        rounding (truncation below ``2^-56`` relative to the sum of absolute terms).
        "direct" sums over all event terms for every row (O(n K d), the reference).
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
    data = _fit_data(fit)
    state = risk_set_state(data, fit.coef)
    if method == "auto":
        method = "direct" if data.n * data.term_group.size <= 200_000 else "series"
    if method == "direct":
        delta = _vif_delta_direct(data, state)
    else:
        delta = _vif_delta_series(data, state)
    return paper_scale(fit, delta)

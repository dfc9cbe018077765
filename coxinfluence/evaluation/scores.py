"""The test-set metrics and their influence functions, from predictions and outcomes.

Each function takes the test set's outcomes (:class:`TestOutcomes`) and a prediction per
test patient and returns the estimate and its influence function (IF), one value per
test patient; the standard error is R's ``sd(IF) / sqrt(n)`` (:func:`standard_error`).

**IPCW with the Kaplan-Meier of the test set's censoring** (``riskRegression::Score``,
``cens.model = "km"``). ``G`` is the Kaplan-Meier estimate of the censoring distribution
of the test set (censorings are the events; at a time with both, the events come first,
so the censorings' risk set there leaves out the patients who died then).
At a time ``t`` a *case* died by ``t`` (``T_i <= t``, an event; weight ``1 / G(T_i-)``),
a *control* is still followed after ``t`` (``T_i > t``; weight ``1 / G(t)``); a patient
censored by ``t`` has weight 0. With competing risks (Score's ``Hist(time, status)``,
``cause``) the cases are the events of the cause and an event of another cause by ``t``
is a control of weight ``1 / G(T_i-)``, the predictions are the cumulative incidences
``F_i(t)`` of the cause, and ``S = 1 - F`` below.

- Brier score: ``B(t) = (1/n) sum_i r_i``, ``r_i = case_i S_i(t)^2 / G(T_i-) + control_i
  (1 - S_i(t))^2 / G(t)``, ``S_i(t)`` the predicted survival (risk ``1 - S``).
- Cumulative/dynamic AUC: ``AUC(t) = nu / mu``, ``nu = (1/n^2) sum_{ij} a_i b_j h_ij``,
  ``mu = (1/n^2) sum_i a_i sum_j b_j``, ``a_i = case_i / G(T_i-)``, ``b_j = control_j /
  G(t)``, ``h_ij = 1[r_i > r_j] + 1/2 1[r_i = r_j]`` with the risks ``r = 1 - S(t)``: the
  trapezoidal area under Score's ROC curve.

The IF of each is the von Mises expansion with the censoring Kaplan-Meier's own IF
(Gerds and Schumacher 2006; Score's ``conservative = FALSE``): with the empirical at-risk
count ``Y(u)``, censoring count ``C(u)`` at the unique times ``u`` and ``H(u) =
sum_{v <= u} C(v) n / Y(v)^2``, the IF of ``1 / G(s)`` at patient ``k``, relative to
``1 / G(s)``, is

    f_k(s) = 1[k censored, T_k in the range of s] n / Y(T_k) - H(min(T_k, s)),

the range being ``u < T_i`` for ``s = T_i-`` and ``u <= t`` for ``s = t``. A term
``(1/n) sum_i c_i / G(s_i)`` has IF ``c_k / G(s_k) - mean + (1/n) sum_i (c_i / G(s_i))
f_k(s_i)`` (:meth:`TestOutcomes.censoring_term`), and the AUC's IF is ``(IF_nu - AUC
IF_mu) / mu``.

**Concordance** (``survival::concordance``): comparable pairs are an event ``i`` and a
patient ``j`` with ``T_j > T_i``, or ``T_j = T_i`` and ``j`` censored; the pair is
concordant when ``i``'s risk score is the larger, tied scores count 1/2; each pair of
event time ``T_i`` has weight 1 (Harrell, ``timewt = "n"``) or ``1 / G(T_i-)^2`` (Uno,
``timewt = "n/G2"``). The variance is survival's infinitesimal jackknife, the weights
held fixed: ``dfbeta_k = ((c_k - d_k) - D (c_k + d_k + x_k)) / N``, ``D`` Somers' d, ``N``
the weighted number of pairs, ``c_k, d_k, x_k`` the weighted concordant, discordant and
tied pairs that contain ``k``; ``var = sum_k dfbeta_k^2 / 4``.
"""
from __future__ import annotations

import numpy as np

from coxinfluence.data.inputs import InputError
from coxinfluence.evaluation.pair_counts import pair_counts

__all__ = ["TestOutcomes", "brier", "auc", "concordance", "concordant_weight",
           "standard_error", "ibs_weights", "pair_matrix", "null_risk"]


def standard_error(ic):
    """R's standard error from an influence function: ``sd(IF) / sqrt(n)``.

    Parameters
    ----------
    ic : array_like, shape (..., n)
        Influence-function values, the patients on the last axis.

    Returns
    -------
    numpy.ndarray or float
        ``sd(IF) / sqrt(n)``, ``sd`` with ``n - 1`` in the denominator, as R's ``sd``.
    """
    ic = np.asarray(ic, dtype=np.float64)
    n = ic.shape[-1]
    return np.std(ic, axis=-1, ddof=1) / np.sqrt(n)


def ibs_weights(times):
    """The integrated Brier score's weights on the Brier scores at ``times``.

    riskRegression's ``IBS`` at the last time: the Brier score as a step function from 0
    (0 there), integrated by left rectangles to the last time and divided by it, so
    ``IBS = sum_k w_k B(t_k)`` with ``w_k = (t_{k+1} - t_k) / t_K`` (``w_K = 0``).

    Parameters
    ----------
    times : array_like, shape (T,)
        Increasing positive times.

    Returns
    -------
    numpy.ndarray, shape (T,)
        The weights.
    """
    t = np.asarray(times, dtype=np.float64)
    return np.append(np.diff(t), 0.0) / t[-1]


class TestOutcomes:
    """The test set's outcomes and the Kaplan-Meier estimate of its censoring.

    Computed once per test set; every metric reads it.

    Parameters
    ----------
    time : array_like, shape (n,)
        Follow-up times, finite and non-negative.
    event : array_like, shape (n,)
        1 for an event, 0 for a censoring; with competing risks the cause (1, 2, ...).
    cause : int, default 1
        The event of interest: the *cases*; other causes' events before a time are
        controls weighted by ``1 / G(T_i-)`` (Score's ``Hist(time, status)``, ``cause``).
    """

    __test__ = False        # not a pytest class

    def __init__(self, time, event, cause=1):
        self.time = np.array(time, dtype=np.float64)
        ev = np.asarray(event)
        if not (np.isfinite(ev.astype(float)).all() and (ev >= 0).all()
                and (ev == np.round(ev)).all()):
            raise InputError("event_test must be 0 (censored) or an event code 1, 2, ...")
        self.status = ev.astype(int)
        self.cause = int(cause)
        self.event = self.status != 0
        n = self.n = self.time.size
        self.utimes, self.idx = np.unique(self.time, return_inverse=True)
        counts = np.bincount(self.idx, minlength=self.utimes.size)
        self.at_risk = n - np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(float)
        self.censored = np.bincount(self.idx, weights=~self.event,
                                    minlength=self.utimes.size)
        self.H = np.cumsum(self.censored * n / self.at_risk ** 2)
        # G(u) after the jump; at a time with events and censorings the events come
        # first, so the censorings' risk set leaves the events out (as prodlim's reverse
        # Kaplan-Meier, which Score uses, and survival's for timewt = "n/G2")
        deaths = np.bincount(self.idx, weights=self.event, minlength=self.utimes.size)
        left = self.at_risk - deaths
        hazard = np.divide(self.censored, left, out=np.zeros_like(left), where=left > 0)
        self._G = np.cumprod(1.0 - hazard)

    def G(self, t):
        """``G(t)``: the censoring Kaplan-Meier at ``t`` (censorings at ``t`` included).

        Parameters
        ----------
        t : float or array_like
            Times.

        Returns
        -------
        numpy.ndarray or float
            ``prod_{u <= t} (1 - C(u) / Y(u))``.
        """
        m = self.last_index(t)
        return np.where(m >= 0, self._G[np.maximum(m, 0)], 1.0)

    def G_before(self):
        """``G(T_i-)`` of each test patient (censorings at ``T_i`` not included).

        Returns
        -------
        numpy.ndarray, shape (n,)
            The censoring survival just before each patient's time.
        """
        return np.where(self.idx > 0, self._G[np.maximum(self.idx - 1, 0)], 1.0)

    def last_index(self, t):
        """The index of the last unique time ``<= t`` (-1 if none).

        Parameters
        ----------
        t : float or array_like
            Times.

        Returns
        -------
        numpy.ndarray or int
            Indices into the unique times.
        """
        return np.searchsorted(self.utimes, t, side="right") - 1

    def roles(self, t):
        """The cases, the controls and each one's IPCW weight at time ``t``.

        Parameters
        ----------
        t : float
            The time.

        Returns
        -------
        tuple of numpy.ndarray
            ``(case, control, a, b, m)``: the masks (controls: followed past ``t``, or
            another cause's event by ``t``), the weights ``case / G(T-)`` and the
            controls' ``1 / G(t)`` (``1 / G(T-)`` for another cause's), and the last
            unique-time index of each patient's weight's range (``T_i-`` for an event by
            ``t``, ``t`` for the others).
        """
        before = (self.time <= t) & self.event
        case = before & (self.status == self.cause)
        other = before & ~case
        control = (self.time > t) | other
        a = np.where(case, 1.0 / self.G_before(), 0.0)
        b = np.where(other, 1.0 / self.G_before(), np.where(control, 1.0 / self.G(t), 0.0))
        m = np.where(before, self.idx - 1, self.last_index(t))
        return case, control, a, b, m

    def censoring_term(self, r, m):
        """``(1/n) sum_i r_i f_k(s_i)`` for every patient ``k`` (module docstring).

        Parameters
        ----------
        r : array_like, shape (n,)
            The terms ``c_i / G(s_i)``.
        m : array_like of int, shape (n,)
            The last unique-time index of each term's range (-1: none).

        Returns
        -------
        numpy.ndarray, shape (n,)
            The censoring part of the influence function of ``(1/n) sum_i r_i``.
        """
        U, n = self.utimes.size, self.n
        q = np.asarray(m) + 1                                   # 0..U
        H_ext = np.concatenate([[0.0], self.H])
        R = np.bincount(q, weights=r, minlength=U + 1)
        RH = R * H_ext
        ge = np.cumsum(R[::-1])[::-1]                           # sum over q' >= q
        below = np.concatenate([[0.0], np.cumsum(RH)])          # sum over q' < q
        a = self.idx + 1
        A = np.where(self.event, 0.0, n / self.at_risk[self.idx]) * ge[a]
        B = below[a] + H_ext[a] * ge[a]
        return (A - B) / n


def null_risk(out, t):
    """The risk at ``t`` of Score's "Null model", the same for every test patient.

    The Kaplan-Meier estimate of the test set's event time, ``1 - S(t)``; with competing
    risks the Aalen-Johansen cumulative incidence of ``out.cause``, ``F(t) = sum_{u <= t}
    S(u-) d_cause(u) / Y(u)`` (``S`` the Kaplan-Meier of any event): riskRegression's
    ``null.model = TRUE``, ``prodlim(Hist(time, status) ~ 1)`` on the test data. Score
    scores it as given predictions (its own variability is not in the influence
    functions).

    Parameters
    ----------
    out : TestOutcomes
        The test set.
    t : float
        The time.

    Returns
    -------
    float
        The null model's risk at ``t``.
    """
    deaths = np.bincount(out.idx, weights=out.event, minlength=out.utimes.size)
    cases = np.bincount(out.idx, weights=out.status == out.cause,
                        minlength=out.utimes.size)
    S = np.cumprod(1.0 - deaths / out.at_risk)
    before = np.concatenate([[1.0], S[:-1]])
    F = np.cumsum(before * cases / out.at_risk)
    m = int(out.last_index(t))
    return float(F[m]) if m >= 0 else 0.0


def pair_matrix(x, y):
    """``1[x_i > y_j] + 1/2 1[x_i = y_j]`` row sums by sorting: for each ``x_i``, the
    weighted count of the ``y`` below it.

    Parameters
    ----------
    x : numpy.ndarray, shape (p,)
        Scores compared.
    y : tuple of numpy.ndarray
        ``(scores, weights)`` of the others.

    Returns
    -------
    numpy.ndarray, shape (p,)
        ``sum_j w_j (1[x_i > y_j] + 1/2 1[x_i = y_j])``.
    """
    ys, w = y
    order = np.argsort(ys, kind="stable")
    ys, w = ys[order], w[order]
    cw = np.concatenate([[0.0], np.cumsum(w)])
    xo = np.argsort(x)                  # sorted queries: numpy's search is faster on them
    xs = np.asarray(x)[xo]
    lo = np.searchsorted(ys, xs, side="left")
    hi = np.searchsorted(ys, xs, side="right")
    out = np.empty(xs.size)
    out[xo] = cw[lo] + 0.5 * (cw[hi] - cw[lo])
    return out


def brier(out, surv, t):
    """The IPCW Brier score at ``t`` and its influence function.

    Parameters
    ----------
    out : TestOutcomes
        The test set.
    surv : array_like, shape (n,)
        The predicted survival ``S_i(t)`` of each test patient.
    t : float
        The time.

    Returns
    -------
    tuple
        ``(estimate, IF)``: a float and an array of shape (n,).
    """
    S = np.asarray(surv, dtype=np.float64)
    case, control, a, b, m = out.roles(t)
    r = a * S ** 2 + b * (1.0 - S) ** 2
    est = r.mean()
    return est, r - est + out.censoring_term(r, m)


def auc(out, risk, t):
    """The cumulative/dynamic IPCW AUC at ``t`` and its influence function.

    Parameters
    ----------
    out : TestOutcomes
        The test set.
    risk : array_like, shape (n,)
        Each test patient's risk score at ``t`` (Score's: ``1 - S_i(t)``).
    t : float
        The time.

    Returns
    -------
    tuple
        ``(estimate, IF)``: a float and an array of shape (n,).
    """
    r = np.asarray(risk, dtype=np.float64)
    n = out.n
    case, control, a, b, m = out.roles(t)
    p = np.zeros(n)
    q = np.zeros(n)
    p[case] = pair_matrix(r[case], (r[control], b[control])) / n
    # controls: the cases above them, ties 1/2 (1 - the cases' "below" count)
    q[control] = (a[case].sum() - pair_matrix(r[control], (r[case], a[case]))) / n
    nu = (a * p).sum() / n
    A, B = a.mean(), b.mean()
    mu = A * B
    est = nu / mu
    ic_nu = a * p + b * q - 2 * nu + out.censoring_term(a * p + b * q, m)
    ic_mu = a * B + b * A - 2 * mu + out.censoring_term(a * B + b * A, m)
    return est, (ic_nu - est * ic_mu) / mu


def censoring_before(time, event, weights=None):
    """``G(T_i-)``: the (weighted) Kaplan-Meier of the censoring just before each time.

    At a time with events and censorings the events come first (the censorings' risk set
    leaves out the patients who died then), as :class:`TestOutcomes` and survival's
    ``timewt = "n/G2"`` take it.

    Parameters
    ----------
    time : numpy.ndarray, shape (n,)
        Follow-up times.
    event : numpy.ndarray of bool, shape (n,)
        Events (True) or censorings.
    weights : numpy.ndarray, shape (n,), optional
        Case weights (default 1).

    Returns
    -------
    numpy.ndarray, shape (n,)
        ``prod_{u < T_i} (1 - C(u) / (Y(u) - D(u)))``, with weighted counts.
    """
    w = np.ones(time.size) if weights is None else np.asarray(weights, dtype=np.float64)
    ut, idx = np.unique(time, return_inverse=True)
    tot = np.bincount(idx, weights=w, minlength=ut.size)
    deaths = np.bincount(idx, weights=w * event, minlength=ut.size)
    cens = tot - deaths
    at_risk = w.sum() - np.concatenate([[0.0], np.cumsum(tot)[:-1]])
    left = at_risk - deaths
    hazard = np.divide(cens, left, out=np.zeros_like(left), where=left > 0)
    G = np.concatenate([[1.0], np.cumprod(1.0 - hazard)])
    return G[idx]


def _event_weights(time, event, kinds, tau, weights):
    """(K, n): each event's pair weight for each kind (survival's ``timewt``): its case
    weight times 1 (``"harrell"``) or ``1 / G(T_i-)^2`` (``"uno"``; ``"n"`` when fewer
    than two events, as survival), 0 past ``tau`` (``ymax``)."""
    w = np.ones(time.size) if weights is None else weights
    rows = []
    for kind in kinds:
        if kind == "harrell" or (kind == "uno" and event.sum() < 2):
            rows.append(w.copy())
        elif kind == "uno":
            rows.append(w / censoring_before(time, event, weights) ** 2)
        else:
            raise InputError(f"kind must be 'harrell' or 'uno'; got {kind!r}")
    a = np.stack(rows) * event
    if tau is not None:
        a[:, time > tau] = 0.0
    return a


def comparable(out, rows):
    """The comparable pairs of the events ``rows`` (one row each) with every patient.

    Parameters
    ----------
    out : TestOutcomes
        The test set.
    rows : numpy.ndarray of int
        Indices of events.

    Returns
    -------
    numpy.ndarray of bool, shape (len(rows), n)
        ``T_j > T_i``, or ``T_j = T_i`` with ``j`` censored.
    """
    ti = out.time[rows][:, None]
    return (out.time[None, :] > ti) | ((out.time[None, :] == ti) & ~out.event[None, :])


def concordant_weight(scores, time, event, omega):
    """Each row's weighted concordant pairs, ``sum_i omega_i sum_{j in C_i} (1[s_i > s_j]
    + 1/2 1[s_i = s_j])`` over the events ``i`` and their comparable patients ``C_i``
    (``T_j > T_i``, or ``T_j = T_i`` with ``j`` censored), for many score vectors at once.

    A Fenwick tree over each row's score ranks (``O(U n log n)``, not the ``O(U E n)`` of
    comparing every pair): the patients enter in decreasing time (at a tied time the
    censored first, then the events are counted, then they enter), and each event counts
    the patients already in below and at its score.

    Parameters
    ----------
    scores : numpy.ndarray, shape (U, n)
        Risk scores, one vector per row (larger: an earlier event).
    time : numpy.ndarray, shape (n,)
        Follow-up times.
    event : numpy.ndarray of bool, shape (n,)
        Events (True) or censorings.
    omega : numpy.ndarray, shape (n,)
        The weight of each event's pairs (1: Harrell; ``1 / G(T_i-)^2``: Uno).

    Returns
    -------
    numpy.ndarray, shape (U,)
        The weighted concordant pairs of each row, ties counted 1/2.

    Examples
    --------
    >>> from coxinfluence.evaluation.scores import concordant_weight
    >>> time = np.array([1.0, 2.0, 3.0, 4.0])
    >>> event = np.array([True, True, False, True])
    >>> concordant_weight([[4.0, 3.0, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0]], time, event,
    ...                   np.ones(4))
    array([5. , 2.5])
    """
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    U, n = s.shape
    # per row, how many scores lie below each score (lo) and at or below it (hi)
    from scipy.stats import rankdata  # scipy.stats on use: 0.5 s to import

    lo = rankdata(s, method="min", axis=1).astype(np.intp) - 1
    hi = rankdata(s, method="max", axis=1).astype(np.intp)
    # Fenwick tree over ranks, stored rank-major and flat (entry rank * U + row); rank
    # n + 1 is a sink for the updates past the end, rank 0 stays 0
    tree = np.zeros((n + 2) * U)
    rows = np.arange(U)
    total = np.zeros(U)

    def add(key):
        idx = key + 1
        while True:
            tree[idx * U + rows] += 1.0
            if (idx > n).all():
                return
            idx = np.minimum(idx + (idx & -idx), n + 1)

    def below(key):                           # entered patients with rank below ``key``
        idx, out = key.copy(), np.zeros(key.shape)
        while idx.any():
            out += tree[idx * U + rows[:, None]]
            idx -= idx & -idx
        return out

    order = np.lexsort((event, -time))        # time descending, censored first at ties
    t_sorted = time[order]
    starts = np.flatnonzero(np.r_[True, t_sorted[1:] != t_sorted[:-1]])
    for a, b in zip(starts, np.r_[starts[1:], n]):
        group = order[a:b]
        for j in group[~event[group]]:
            add(lo[:, j])
        cases = group[event[group] & (omega[group] != 0)]
        if cases.size:                        # (2, U, cases): below and at each score
            counts = below(np.stack([lo[:, cases], hi[:, cases]]))
            total += 0.5 * counts.sum(axis=0) @ omega[cases]
        for i in group[event[group]]:
            add(lo[:, i])
    return total


def concordance(out, score, kind="harrell", strata=None, tau=None, weights=None):
    """The concordance of risk scores with the test outcomes, and its variance.

    The pairs are counted by sorting (:func:`coxinfluence.evaluation.pair_counts.
    pair_counts`: ``O(n log n)`` time, ``O(n)`` memory), as survival's balanced tree.

    Parameters
    ----------
    out : TestOutcomes
        The test set.
    score : array_like, shape (n,)
        Risk scores: larger means an earlier event.
    kind : {"harrell", "uno"} or sequence of them
        The weight of the pairs (module docstring); several at once share the sorting.
    strata : array_like, shape (n,), optional
        Stratum codes: pairs only within a stratum, Uno's weights from each stratum's
        censoring Kaplan-Meier (R's ``concordance`` of a stratified ``coxph``).
    tau : float, optional
        Truncation: only the pairs whose event time is at most ``tau`` (survival's
        ``ymax``; scikit-survival's ``tau``); the censoring weights are not truncated.
    weights : array_like, shape (n,), optional
        Case weights: a pair weighs the product of its patients' weights (and the time
        weight), Uno's ``G`` is the weighted Kaplan-Meier (survival's ``concordance``
        with ``weights``).

    Returns
    -------
    tuple or list of tuple
        ``(estimate, dfbeta)``: the concordance and survival's ``dfbeta`` of it (one per
        patient, ``var = sum(dfbeta^2)``); a list of them for a sequence of kinds.

    Raises
    ------
    InputError
        No comparable pair (before ``tau``), or an unknown kind.

    Examples
    --------
    >>> from coxinfluence.evaluation.scores import TestOutcomes, concordance
    >>> out = TestOutcomes([1.0, 2.0, 3.0, 4.0], [1, 1, 0, 1])
    >>> est, dfbeta = concordance(out, [4.0, 3.0, 3.0, 1.0])
    >>> round(float(est), 4), round(float(np.sqrt((dfbeta ** 2).sum())), 4)
    (0.9, 0.102)
    """
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    s = np.asarray(score, dtype=np.float64)
    v = None if weights is None else np.asarray(weights, dtype=np.float64)
    groups = ([np.arange(out.n)] if strata is None
              else [np.flatnonzero(np.asarray(strata) == c) for c in np.unique(strata)])
    ic = np.zeros((len(kinds), 3, out.n))
    for rows in groups:
        time, event = out.time[rows], out.event[rows]
        if not event.any():
            continue
        vr = None if v is None else v[rows]
        a = _event_weights(time, event, kinds, tau, vr)
        ic[:, :, rows] = pair_counts(time, event, s[rows], a, vr)
    results = []
    for part in ic:
        counts = part.sum(axis=1) / 2
        npair = counts.sum()
        if npair == 0:
            raise InputError("the test set has no comparable pairs (an event before "
                             "another patient's time" + ("" if tau is None else
                                                         f", by tau = {tau:g}") + ")")
        somer = (counts[0] - counts[1]) / npair
        dfbeta = ((part[0] - part[1]) - somer * part.sum(axis=0)) / npair
        results.append(((somer + 1) / 2, dfbeta / 2))
    return results[0] if isinstance(kind, str) else results

"""``ci.calibration``: predicted against observed risk at a time, as
``riskRegression::plotCalibration(Score(..., plots = "calibration"))``.

Two frames, both R's (``plotCalibration(..., plot = FALSE)$plotFrames``, its default
``cens.method = "local"``):

- ``method = "quantile"``: the test patients cut into ``q`` risk groups at the quantiles
  of their predicted risk ``p`` (R's ``quantile`` type 7, ``cut(p, breaks,
  include.lowest = TRUE)``); per group the mean predicted risk and the observed risk at
  the time: ``1 -`` the group's Kaplan-Meier, or for competing risks the group's
  Aalen-Johansen cumulative incidence of the cause (``prodlim``'s, ``type = "cuminc"``).
- ``method = "nne"`` (the smooth curve): the risks rounded to 2 decimals; for each
  distinct value the Kaplan-Meier (Aalen-Johansen) of its nearest neighbours
  (``prodlim``'s ``neighborhood``: the patients whose cumulative rank count lies within
  ``floor(bandwidth n)`` of the value's), the bandwidth by ``KernSmooth::dpik`` (direct
  plug-in, box kernel, on the cumulative rank counts over n) unless given.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from coxinfluence.data.followup import warn_beyond_follow_up
from coxinfluence.data.inputs import InputError
from coxinfluence.evaluation.evaluate import predict_test_set

__all__ = ["calibration", "Calibration", "observed_risk", "calibration_frames"]


def observed_risk(time, status, t, cause=1):
    """The observed risk at ``t``: ``1 -`` Kaplan-Meier, or the Aalen-Johansen cumulative
    incidence of ``cause`` (events at a time before censorings, as ``prodlim``).

    Parameters
    ----------
    time : array_like
        Follow-up times.
    status : array_like
        0 censored, else the cause (1 for an event without competing risks).
    t : float
        The time.
    cause : int, default 1
        The cause of interest.

    Returns
    -------
    float
        ``P(T <= t, cause)`` estimated.

    Examples
    --------
    >>> from coxinfluence.evaluation.calibration import observed_risk
    >>> observed_risk([1, 2, 3, 4], [1, 0, 1, 1], 3.5)
    0.625
    """
    time = np.asarray(time, dtype=np.float64)
    status = np.asarray(status)
    surv, risk = 1.0, 0.0
    for s in np.unique(time[(status > 0) & (time <= t)]):
        at_risk = np.count_nonzero(time >= s)
        here = time == s
        d_all = np.count_nonzero(here & (status > 0))
        risk += surv * np.count_nonzero(here & (status == cause)) / at_risk
        surv *= 1.0 - d_all / at_risk
    return float(risk)


def _dpik_box(x):
    """``KernSmooth::dpik(x, kernel = "box")``: the direct plug-in bandwidth (level 2,
    scale ``min(IQR / 1.349, sd)``, 401 grid points, linear binning that drops the
    points at the grid's top, as its Fortran with ``truncate = TRUE``)."""
    x = np.asarray(x, dtype=np.float64)
    n, M = x.size, 401
    q1, q3 = np.quantile(x, [0.25, 0.75])
    scale = min((q3 - q1) / 1.349, float(np.std(x, ddof=1)))
    if scale == 0:
        raise InputError("the predicted risks have no spread: no smooth calibration curve")
    sx = (x - x.mean()) / scale
    a, b = (x.min() - x.mean()) / scale, (x.max() - x.mean()) / scale
    delta = (b - a) / (M - 1)
    lxi = (sx - a) / delta + 1.0
    li = np.floor(lxi).astype(int)
    rem = lxi - li
    ok = (li >= 1) & (li < M)
    g = np.zeros(M + 1)
    np.add.at(g, li[ok], 1.0 - rem[ok])
    np.add.at(g, li[ok] + 1, rem[ok])
    g = g[1:]

    def bkfe(drv, h):
        L = min(int(np.floor((4 + drv) * h / delta)), M)
        arg = np.arange(L + 1) * delta / h
        kappa = np.exp(-arg ** 2 / 2) / np.sqrt(2 * np.pi) / h ** (drv + 1)
        h0, h1, hn = np.ones_like(arg), arg, np.ones_like(arg)
        for i in range(2, drv + 1):
            hn = arg * h1 - (i - 1) * h0
            h0, h1 = h1, hn
        kappa = hn * kappa
        conv = np.convolve(g, np.r_[kappa[:0:-1], kappa])[L:L + M]
        return float(g @ conv) / g.sum() ** 2

    psi6 = bkfe(6, (2 * np.sqrt(2) ** 9 / (7 * n)) ** (1 / 9))
    psi4 = bkfe(4, (-3 * np.sqrt(2 / np.pi) / (psi6 * n)) ** (1 / 7))
    return scale * (9 / 2) ** (1 / 5) * (1 / (psi4 * n)) ** (1 / 5)


def calibration_frames(p, time, status, t, cause=1, q=10, bandwidth=None):
    """The quantile table and the smooth curve of predicted risks ``p`` at ``t`` (module
    docstring): the numbers of :func:`calibration` for any risks.

    Parameters
    ----------
    p : array_like
        The test patients' predicted risks at ``t``.
    time, status : array_like
        Their follow-up times and status (0 censored, else the cause).
    t : float
        The time.
    cause : int, default 1
        The cause of interest.
    q : int, default 10
        The number of risk groups.
    bandwidth : float, optional
        The curve's neighbourhood as a share of the patients; default ``dpik``'s.

    Returns
    -------
    table : pandas.DataFrame
        Columns ``group``, ``lower``, ``upper``, ``predicted``, ``observed``, ``n``,
        ``events``.
    curve : pandas.DataFrame
        Columns ``predicted``, ``observed``.
    bandwidth : float
        The curve's bandwidth.

    Examples
    --------
    >>> from coxinfluence.evaluation.calibration import calibration_frames
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.1, 0.6, 200)
    >>> time = rng.exponential(1 / p)
    >>> table, curve, bw = calibration_frames(p, time, np.ones(200), 1.0, q=4)
    >>> table[["group", "n"]].values.tolist()
    [[1, 50], [2, 50], [3, 50], [4, 50]]
    """
    p = np.asarray(p, dtype=np.float64)
    time = np.asarray(time, dtype=np.float64)
    status = np.asarray(status)
    breaks = np.quantile(p, np.linspace(0.0, 1.0, int(q) + 1))
    if np.any(np.diff(breaks) <= 0):
        raise InputError(f"the {q} risk groups' breaks are not distinct (many equal "
                         "predicted risks): choose fewer groups (q=)")
    group = np.clip(np.searchsorted(breaks, p, side="left"), 1, q)    # (lo, hi], first [lo
    rows = []
    for k in range(1, int(q) + 1):
        g = group == k
        rows.append((k, breaks[k - 1], breaks[k], p[g].mean() if g.any() else np.nan,
                     observed_risk(time[g], status[g], t, cause) if g.any() else np.nan,
                     int(g.sum()), int(((status == cause) & (time <= t) & g).sum())))
    table = pd.DataFrame(rows, columns=["group", "lower", "upper", "predicted", "observed",
                                        "n", "events"])
    pr = np.round(p, 2)
    values, inverse, counts = np.unique(pr, return_inverse=True, return_counts=True)
    cum = np.cumsum(counts)
    n = p.size
    if bandwidth is None:
        bandwidth = 1.0 if values.size == 1 else _dpik_box(cum[inverse] / n)
    if bandwidth >= 1:
        curve = pd.DataFrame({"predicted": [pr.mean()],
                              "observed": [observed_risk(time, status, t, cause)]})
        return table, curve, float(bandwidth)
    radius = np.floor(bandwidth * n)
    obs = np.empty(values.size)
    for j in range(values.size):
        near = np.abs(cum[inverse] - cum[j]) <= radius
        obs[j] = observed_risk(time[near], status[near], t, cause)
    return table, pd.DataFrame({"predicted": values, "observed": obs}), float(bandwidth)


@dataclass
class Calibration:
    """Predicted against observed risk at a time (:func:`calibration`).

    Attributes
    ----------
    table : pandas.DataFrame
        The risk groups: ``group``, ``lower``, ``upper`` (the quantile breaks),
        ``predicted`` (mean predicted risk), ``observed`` (Kaplan-Meier or
        Aalen-Johansen risk), ``n``, ``events`` (of the cause, by the time).
    curve : pandas.DataFrame
        The smooth curve: ``predicted`` (risk rounded to 2 decimals), ``observed``.
    time : float
        The time.
    bandwidth : float
        The curve's nearest-neighbour bandwidth (share of the patients).
    cause : int or None
        The cause (competing risks), None for a survival model.
    """

    table: pd.DataFrame
    curve: pd.DataFrame
    time: float
    bandwidth: float
    cause: int | None = None

    def plot(self, ax=None):
        """The calibration plot: the groups (dots) and the smooth curve against the
        diagonal.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            The axes to draw in; default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            The figure (not shown).
        """
        from coxinfluence.plotting import pyplot
        if ax is None:
            fig, ax = pyplot().subplots(figsize=(4.2, 4.0), constrained_layout=True)
        else:
            fig = ax.figure
        hi = float(np.nanmax([1e-9, self.table.predicted.max(), self.table.observed.max(),
                              self.curve.observed.max(), self.curve.predicted.max()]))
        hi = min(1.0, 1.05 * hi)
        ax.plot([0, hi], [0, hi], color="0.6", lw=1, ls="--", label="ideal")
        ax.plot(self.curve.predicted, self.curve.observed, color="C0", lw=1.5,
                label="nearest-neighbour curve")
        ax.plot(self.table.predicted, self.table.observed, "o", color="C1",
                label=f"{len(self.table)} risk groups")
        ax.set_xlim(0, hi)
        ax.set_ylim(0, hi)
        what = "risk" if self.cause is None else f"cumulative incidence (cause {self.cause})"
        ax.set_xlabel(f"predicted {what} at t = {self.time:g}")
        ax.set_ylabel("observed (" + ("Kaplan-Meier" if self.cause is None
                                      else "Aalen-Johansen") + ")")
        ax.legend(loc="upper left", fontsize="small")
        return fig


def calibration(model, X_test, time_test, event_test, time, *, q=10, bandwidth=None,
                data=None, **options):
    """Calibration at a time: the model's predicted risk against the observed risk.

    As ``riskRegression::plotCalibration(Score(list(risk), Surv(time, event) ~ 1, data =
    test, times = time, plots = "calibration"), plot = FALSE)`` with ``method =
    "quantile"`` (``Calibration.table``) and ``method = "nne"``
    (``Calibration.curve``); the formulas in ``coxinfluence.evaluation.calibration``.
    The predicted risk is ``1 - S(t|x)``, or for a Fine-Gray model its cumulative
    incidence ``F(t|x)`` of the fit's cause, the observed risk then Aalen-Johansen's
    (Score's ``Hist(time, status)`` with ``cause``).

    Parameters
    ----------
    model : object
        A fitted model with a survival (or cumulative incidence) prediction, as
        :func:`coxinfluence.evaluate` takes.
    X_test : DataFrame or array_like
        The test patients' covariates.
    time_test : array_like
        Their follow-up times.
    event_test : array_like
        1 event, 0 censored; for a Fine-Gray model the cause (0 censored, 1, 2, ...).
    time : float
        The time, inside the test set's follow-up.
    q : int, default 10
        The number of risk groups.
    bandwidth : float, optional
        The smooth curve's bandwidth; default R's (``KernSmooth::dpik``).
    data : DataFrame, optional
        The training data, for a library model that does not keep it.
    **options
        A family's options, as :func:`coxinfluence.influence` takes them.

    Returns
    -------
    Calibration
        ``table``, ``curve``, ``plot()``.

    Raises
    ------
    InputError
        A time outside the test set's follow-up, bad test outcomes, or risk groups
        whose breaks coincide.

    Warns
    -----
    coxinfluence.TargetBeyondFollowUpWarning
        A time past the training data's follow-up.

    See Also
    --------
    coxinfluence.evaluate : Brier score, AUC, C-index.

    Examples
    --------
    >>> from lifelines.datasets import load_gbsg2
    >>> gbsg = load_gbsg2()
    >>> X = gbsg[["age", "tsize", "pnodes", "progrec", "estrec"]]
    >>> train, test = gbsg.index % 3 != 2, gbsg.index % 3 == 2
    >>> fit = ci.fit_cox(X[train], gbsg.time[train], gbsg.cens[train])
    >>> cal = ci.calibration(fit, X[test], gbsg.time[test], gbsg.cens[test], time=1095,
    ...                      q=4)
    >>> cal.table[["group", "predicted", "observed", "n"]].round(3)
       group  predicted  observed   n
    0      1      0.196     0.189  57
    1      2      0.309     0.296  57
    2      3      0.362     0.369  57
    3      4      0.523     0.632  57
    """
    pred = predict_test_set("ci.calibration", model, X_test, time_test, event_test, time,
                            data=data, **options)
    out, t, cause = pred.outcomes, pred.times, pred.cause
    if t.size != 1:
        raise InputError("calibration takes one time")
    notes = [f"ci.calibration: the predicted risks at this time are past the training "
             f"data's follow-up: {note}" for note in pred.notes]
    risk = 1.0 - pred.survival[:, 0]
    status = np.asarray(out.status)
    table, curve, bw = calibration_frames(risk, out.time, status, float(t[0]),
                                          cause=cause or 1, q=q, bandwidth=bandwidth)
    warn_beyond_follow_up(notes)
    return Calibration(table, curve, float(t[0]), bw, cause)

"""The proportional-hazards test of a Cox fit: R's ``cox.zph`` (survival 3.x score test).

The test adds ``x g(t)`` for each covariate (``g`` the transformed event time, centred at
its mean over the events) and computes the score test of its coefficients at ``(beta_hat,
0)``: with the Schoenfeld residuals ``r_i`` and the Efron terms ``k`` of the fit,

    u = sum_events w_i g_i r_i,
    I = [[sum_k m_k V_k,      sum_k m_k g_k V_k],
         [sum_k m_k g_k V_k,  sum_k m_k g_k^2 V_k]],

``V_k = (S2 - c S2D)/den - a_k a_k'`` the Efron-weighted risk-set covariance (as R's
``zph1.c``/``zph2.c``: strata, case weights, (start, stop] risk sets). Each term's statistic
is ``(0, u_j)' I_jj^{-1} (0, u_j)`` over the rows and columns of beta and of the term;
GLOBAL uses all of them. The scaled Schoenfeld residuals (``.y``) are R's: the residuals
times the inverse of the information per event (per stratum where a covariate is
constant in some stratum), plus ``beta``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from coxinfluence.data.inputs import InputError
from coxinfluence.diagnostics.cox_residuals import schoenfeld_sorted
from coxinfluence.diagnostics.registry import resolve_fit
from coxinfluence.models.cox import CoxFit

__all__ = ["ph_test", "PHTest"]


def km_transform(time, event, start=None):
    """``1 - S(t-)`` at each row's time, ``S`` the unweighted Kaplan-Meier estimate of all
    rows pooled (strata ignored; (start, stop] risk sets), as ``cox.zph``'s "km"."""
    time = np.asarray(time, dtype=np.float64)
    event = np.asarray(event) > 0
    ut = np.unique(time[event])
    d = np.searchsorted(np.sort(time[event]), ut, side="right") - \
        np.searchsorted(np.sort(time[event]), ut, side="left")
    at_risk = len(time) - np.searchsorted(np.sort(time), ut, side="left")
    if start is not None:           # less the rows that enter at or after t
        at_risk = at_risk - (len(time) - np.searchsorted(np.sort(np.asarray(start, float)),
                                                         ut, side="left"))
    surv = np.cumprod(1.0 - d / at_risk)
    before = np.searchsorted(ut, time, side="left")        # event times < t
    return 1.0 - np.r_[1.0, surv][before]


def _transform(transform, time, event, start):
    if callable(transform):
        out = np.asarray(transform(time.copy()), dtype=np.float64)
        if out.shape != time.shape:
            raise InputError(f"transform returned shape {out.shape}; it must return one value "
                             f"per row ({time.shape[0]})")
        return out, getattr(transform, "__name__", "user")
    if transform == "identity":
        return time.copy(), transform
    if transform == "rank":
        from scipy.stats import rankdata  # scipy.stats on use: 0.5 s to import

        return rankdata(time), transform
    if transform == "log":
        if (time <= 0).any():
            raise InputError("transform='log' needs positive times")
        return np.log(time), transform
    if transform == "km":
        return km_transform(time, event, start), transform
    raise InputError(f"unknown transform {transform!r}: use 'km', 'rank', 'identity', 'log' "
                     "or a function of the times")


def _terms(terms, columns):
    if terms is True or terms is False or terms is None:
        return {c: [j] for j, c in enumerate(columns)}
    if not isinstance(terms, dict):
        raise InputError("terms must be True, False or a dict of term name -> columns")
    out, seen = {}, []
    for name, cols in terms.items():
        cols = [cols] if isinstance(cols, str) else list(cols)
        bad = [c for c in cols if c not in columns]
        if bad:
            raise InputError(f"terms[{name!r}] names columns the model lacks: {bad}")
        out[str(name)] = [columns.index(c) for c in cols]
        seen += cols
    missing = [c for c in columns if c not in seen]
    if missing or len(seen) != len(set(seen)):
        raise InputError(f"terms must name every covariate exactly once (missing: {missing})")
    return out


def _information(fit, g_term):
    """The 2d x 2d information of (beta, beta_t) at (beta_hat, 0): sum_k m_k g_k^p V_k."""
    rs, data = fit.risk_sets, fit.data
    st = rs.state(fit.coef)
    q = np.where(st.mean_weight > 0, st.mean_weight / st.den, 0.0)
    a = np.asarray(st.term_mean)
    X = data.X
    blocks = []
    for p in range(3):
        qp = q * g_term ** p
        coef = st.risk * rs.sum_over_risk_sets(qp[None], st.frac)[0]
        blocks.append((X.T * coef) @ X - (a.T * (st.mean_weight * g_term ** p)) @ a)
    d = data.d
    imat = np.empty((2 * d, 2 * d))
    imat[:d, :d], imat[:d, d:], imat[d:, :d], imat[d:, d:] = (blocks[0], blocks[1],
                                                              blocks[1], blocks[2])
    if fit.penalty is not None:            # the penalty's Hessian in both blocks, as R's
        pen = np.asarray(fit.information) - blocks[0]
        imat[:d, :d] += pen
        imat[d:, d:] += pen
    return imat


def _used(data, n_events_stratum):
    """R's ``used``: per stratum and covariate, the stratum's events when the covariate
    varies in the stratum, else 0."""
    S = n_events_stratum.size
    used = np.zeros((S, data.d))
    for s in range(S):
        rows = data.strata == s
        Xs = data.X[rows]
        varies = (Xs != Xs[:1]).any(axis=0)
        used[s] = np.where(varies, n_events_stratum[s], 0)
    return used


@dataclass
class PHTest:
    """The result of :func:`ph_test`, as R's ``cox.zph`` object.

    Parameters
    ----------
    table : pandas.DataFrame
        ``chisq``, ``df``, ``p`` per term (or covariate) and ``GLOBAL``.
    x : numpy.ndarray
        The transformed time of each event (R's ``$x``), in the order of ``y``.
    time : numpy.ndarray
        The event times (R's ``$time``).
    y : pandas.DataFrame
        The scaled Schoenfeld residuals, one row per event, one column per term (R's
        ``$y``).
    var : numpy.ndarray
        R's ``$var``, the variance used by the plot's band.
    transform : str
        The transform's name.

    See Also
    --------
    coxinfluence.ph_test : Makes it.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
    >>> test = ci.ph_test(fit, transform="rank")
    >>> test.y.shape, test.transform
    ((114, 2), 'rank')
    """

    table: pd.DataFrame
    x: np.ndarray
    time: np.ndarray
    y: pd.DataFrame
    var: np.ndarray
    transform: str

    def __repr__(self):
        return f"PHTest(transform={self.transform!r})\n{self.table.to_string()}"

    def plot(self, covariate=None, *, ax=None, df=4, nsmo=40, resid=True, se=True):
        """Scaled Schoenfeld residuals against transformed time, as ``plot.cox.zph``.

        A natural cubic spline smooth (``df`` degrees of freedom, with intercept) and its
        pointwise band of two standard errors.

        Parameters
        ----------
        covariate : str, optional
            The term to plot; default the first.
        ax : matplotlib.axes.Axes, optional
            Where to draw; default a new figure.
        df : int, default 4
            The spline's degrees of freedom (R's default).
        nsmo : int, default 40
            Points of the smooth.
        resid : bool, default True
            Draw the residuals.
        se : bool, default True
            Draw the band.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.

        Examples
        --------
        >>> from lifelines.datasets import load_rossi
        >>> rossi = load_rossi()
        >>> fit = ci.fit_cox(rossi[["fin", "age"]], rossi["week"], rossi["arrest"])
        >>> ax = ci.ph_test(fit).plot("age")
        >>> ax.get_ylabel()
        'Beta(t) for age'
        """
        import matplotlib.pyplot as plt
        name = self.y.columns[0] if covariate is None else covariate
        if name not in self.y.columns:
            raise InputError(f"no term {name!r}; the terms are {list(self.y.columns)}")
        i = list(self.y.columns).index(name)
        yy = self.y[name].to_numpy()
        ok = np.isfinite(yy)
        xx, yy = self.x[ok], yy[ok]
        pred_x = np.linspace(xx.min(), xx.max(), nsmo)
        basis = natural_spline_basis(np.r_[pred_x, xx], df)
        P, Xm = basis[:nsmo], basis[nsmo:]
        coef, *_ = np.linalg.lstsq(Xm, yy, rcond=None)
        yhat = P @ coef
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.6))
        if resid:
            ax.plot(xx, yy, "o", ms=3, alpha=0.5, color="0.4")
        ax.plot(pred_x, yhat, color="C0")
        if se:
            xtx = np.linalg.pinv(Xm.T @ Xm)
            band = 2 * np.sqrt(self.var[i, i] * np.einsum("ij,jk,ik->i", P, xtx, P))
            ax.plot(pred_x, yhat - band, "--", color="C0", lw=0.8)
            ax.plot(pred_x, yhat + band, "--", color="C0", lw=0.8)
        ax.set_xlabel(f"Time ({self.transform} transform)")
        ax.set_ylabel(f"Beta(t) for {name}")
        p = self.table.loc[name, "p"]
        ax.set_title(f"{name}: p = {p:.3g}", fontsize=9)
        return ax


def natural_spline_basis(x, df):
    """A basis of natural cubic splines with ``df - 2`` interior knots at quantiles of
    ``x`` and boundary knots at its range, intercept included (the space of R's ``ns(x,
    df, intercept = TRUE)``; Hastie, Tibshirani & Friedman, eq. 5.4-5.5)."""
    x = np.asarray(x, dtype=np.float64)
    inner = np.quantile(x, np.linspace(0, 1, df)[1:-1]) if df > 2 else np.array([])
    knots = np.r_[x.min(), inner, x.max()]
    K = knots.size

    def dk(k):
        return ((np.maximum(x - knots[k], 0) ** 3 - np.maximum(x - knots[-1], 0) ** 3)
                / (knots[-1] - knots[k]))
    cols = [np.ones_like(x), x] + [dk(k) - dk(K - 2) for k in range(K - 2)]
    return np.column_stack(cols[:df])


def ph_test(model, data=None, transform="km", terms=True, **options):
    """Test proportional hazards, as R's ``cox.zph`` (survival 3.x).

    The score test of time-varying coefficients ``beta + theta g(t)`` at ``theta = 0``,
    per covariate (or term) and globally, with ``g`` the transformed time; strata, case
    weights, Efron's or Breslow's ties and (start, stop] data as R handles them.

    Parameters
    ----------
    model : fitted Cox model
        ``ci.fit_cox``, lifelines' ``CoxPHFitter`` / ``CoxTimeVaryingFitter``,
        statsmodels' ``PHReg``: any Cox model ``ci.influence`` takes.
    data : pandas.DataFrame, optional
        The training data, for models that do not keep it (lifelines, statsmodels).
    transform : {"km", "rank", "identity", "log"} or callable, default "km"
        The time scale ``g``: one minus the pooled Kaplan-Meier estimate just before
        ``t``, the rank of ``t`` among all times, ``t``, ``log t``, or a function of the
        time vector.
    terms : bool or dict, default True
        True or False: one test per covariate; a dict ``{term: [columns]}`` groups
        columns into terms of several degrees of freedom (a factor's dummies), as R's
        terms.
    **options
        Options of the model's family, as ``ci.influence`` takes them (scikit-survival's
        ``y=``).

    Returns
    -------
    PHTest
        ``.table`` (chisq, df, p per term and GLOBAL), ``.x``, ``.y`` (scaled
        Schoenfeld residuals), ``.plot(covariate)``.

    Raises
    ------
    InputError
        An unknown transform, bad terms, or no events left to test (every event's risk
        set holds no other row of its stratum).
    TypeError
        A model that is not a Cox model.

    See Also
    --------
    coxinfluence.residuals : Residuals, Schoenfeld's among them.

    Examples
    --------
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> fit = ci.fit_cox(rossi[["fin", "age", "prio"]], rossi["week"], rossi["arrest"])
    >>> ci.ph_test(fit).table.round(3)
            chisq   df      p
    fin     0.064  1.0  0.801
    age     6.325  1.0  0.012
    prio    0.519  1.0  0.471
    GLOBAL  7.137  3.0  0.068

    R's ``cox.zph(coxph(Surv(week, arrest) ~ fin + age + prio, rossi))`` gives the same
    table. A covariate's scaled Schoenfeld residuals against time, with a smooth:

    >>> ax = ci.ph_test(fit).plot("age")
    """
    fit, _ = resolve_fit(model, data, **options)
    if not isinstance(fit, CoxFit):
        raise TypeError(f"ph_test is the proportional-hazards test of Cox models; got a "
                        f"{type(fit).__name__}")
    data_ = fit.data
    columns = list(data_.columns)
    groups = _terms(terms, columns)
    ev = data_.event_rows
    # events whose risk set (in their stratum) holds another row: the test's information
    rs = fit.risk_sets
    size = rs.risk_set_sums(np.ones((1, data_.n)))[0][data_.term_group]
    if not (size > 1).any():
        raise InputError("no events are left to test after stratification: every event's "
                         "risk set holds no other row of its stratum, so the score test has "
                         "no information")
    time = data_.time
    start = data_.start
    ttimes, tname = _transform(transform, time, data_.event, start)
    if not np.isfinite(ttimes).all():
        raise InputError(f"transform {tname!r} gave non-finite values")
    gtime = ttimes - ttimes[ev].mean()
    g_term = gtime[ev]
    schoen = schoenfeld_sorted(fit)
    u = (data_.weights[ev] * g_term) @ schoen
    imat = _information(fit, g_term)
    d = data_.d
    u_full = np.r_[np.zeros(d), u]
    rows, chisq, dfs = [], [], []
    for name, jj in groups.items():
        kk = np.r_[np.arange(d), d + np.asarray(jj)]
        chisq.append(float(u_full[kk] @ np.linalg.solve(imat[np.ix_(kk, kk)], u_full[kk])))
        dfs.append(len(jj))
        rows.append(name)
    chisq.append(float(u_full @ np.linalg.solve(imat, u_full)))
    dfs.append(d)
    rows.append("GLOBAL")
    from scipy.stats import chi2  # scipy.stats on use: 0.5 s to import

    table = pd.DataFrame({"chisq": chisq, "df": np.asarray(dfs, dtype=np.float64),
                          "p": chi2.sf(chisq, dfs)}, index=pd.Index(rows))
    # the scaled residuals, in R's order of the events
    pos = data_.order[ev]
    tie = -pos if start is not None else pos
    order = np.lexsort((tie, time[ev], data_.strata[ev]))
    y, var = _scaled(fit, schoen[order], data_.strata[ev][order], imat[:d, :d], groups)
    return PHTest(table=table, x=ttimes[ev][order], time=time[ev][order],
                  y=pd.DataFrame(y, index=pd.Index(time[ev][order], name="time"),
                                 columns=list(groups)),
                  var=var, transform=tname)


def _scaled(fit, sresid, strata_ev, info, groups):
    """R's ``$y`` and ``$var`` of ``cox.zph`` (the scaling per stratum, terms of several
    columns combined with their coefficients)."""
    data = fit.data
    n_ev = np.bincount(strata_ev, minlength=int(data.strata.max()) + 1)
    used = _used(data, n_ev)
    for jj in groups.values():
        if len(jj) > 1 and (used[:, jj] == 0).any():
            used[:, jj] = used[:, jj].max(axis=1, keepdims=True)
    wtmat = sum(np.minimum.outer(u_s, u_s) for u_s in used)
    vmean = info / np.where(wtmat == 0, 1.0, wtmat)
    coef = fit.coef
    if any(len(jj) > 1 for jj in groups.values()):
        temp = np.zeros((data.d, len(groups)))
        for i, jj in enumerate(groups.values()):
            temp[jj, i] = 1.0 if len(jj) == 1 else coef[jj]
        sresid = sresid @ temp
        vmean = temp.T @ vmean @ temp
        used = used[:, [jj[0] for jj in groups.values()]]
    sresid = np.array(sresid, dtype=np.float64)
    counts = used.max(axis=1).astype(int)
    sgrp = np.repeat(np.arange(used.shape[0]), counts)
    for s in range(used.shape[0]):
        k = np.flatnonzero(used[s] > 0)
        if k.size:
            j = np.flatnonzero(sgrp == s)
            sresid[np.ix_(j, k)] = np.linalg.solve(vmean[np.ix_(k, k)],
                                                   sresid[np.ix_(j, k)].T).T
            rest = np.setdiff1d(np.arange(sresid.shape[1]), k)
            sresid[np.ix_(j, rest)] = np.nan
    for i, jj in enumerate(groups.values()):
        sresid[:, i] += coef[jj[0]] if len(jj) == 1 else 1.0
    return sresid, np.linalg.inv(vmean)

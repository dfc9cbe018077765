"""Result of the simulation study: the tidy table, log-log slopes and reports.

:func:`loglog_slope` fits the slope of ``log(value)`` on ``log(n)`` with a percentile
bootstrap interval (:class:`SlopeFit`). :class:`GapResult`, returned by
:func:`~coxinfluence.asymptotics.simulate_gap`, holds one row per ``(n, rep)`` and
gives the slopes the paper's Theorem "Approximation Error Bound under Cox Model"
predicts: -1 for the gap ``||VIF_n(i) - IF_n(i)||`` (``O_p(1/n)``) and 0 for the size
of ``IF_n`` (``Omega_p(1)``), a per-``n`` summary, a figure and markdown tables.
``VIF_n`` and ``IF_n`` are on the paper's scale, approximating
``n (theta_hat - theta_hat_{-i})`` (docs/conventions.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .seeding import _as_generator, replicate_seed

__all__ = ["SlopeFit", "loglog_slope", "GapResult"]


@dataclass(frozen=True)
class SlopeFit:
    """Least-squares slope of ``log(value)`` on ``log(n)`` with a bootstrap interval.

    Made by :func:`loglog_slope`.

    Parameters
    ----------
    column : str
        The table's column.
    slope : float
        The least-squares slope through the per-``n`` means of ``log(value)``.
    ci_low : float
        Lower end of the percentile bootstrap interval.
    ci_high : float
        Upper end of the interval.
    intercept : float
        The line's intercept (``log(value) = intercept + slope log(n)``).
    level : float
        The interval's level.
    n_boot : int
        Bootstrap resamples.

    See Also
    --------
    loglog_slope : computes it.

    Examples
    --------
    >>> from coxinfluence.asymptotics import SlopeFit
    >>> fit = SlopeFit("gap_mean", -1.02, -1.05, -0.98, 1.18, 0.95, 500)
    >>> fit.ci
    (-1.05, -0.98)
    """

    column: str
    slope: float
    ci_low: float
    ci_high: float
    intercept: float
    level: float
    n_boot: int

    @property
    def ci(self):
        """The interval ``(ci_low, ci_high)``.

        """
        return (self.ci_low, self.ci_high)


def loglog_slope(table: pd.DataFrame, column: str, *, n_boot: int = 2000, level: float = 0.95,
                 seed=0) -> SlopeFit:
    """Slope of ``log(table[column])`` against ``log(table['n'])``.

    The point estimate is the least-squares line through the per-``n`` means of
    ``log(value)`` (the geometric means over replicates; with equal replicate counts
    this is also the least-squares line through all rows). The interval is a
    percentile bootstrap over replicates, resampled within each ``n`` (replicates
    are independent across and within sizes).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per replicate, with a column ``n`` and the column to fit.
    column : str
        The column; its values must be finite and > 0.
    n_boot : int, default 2000
        Bootstrap resamples (>= 1).
    level : float, default 0.95
        The interval's level, in (0, 1).
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        The bootstrap's random stream.

    Returns
    -------
    SlopeFit
        Slope, interval and intercept.

    Raises
    ------
    ValueError
        ``column`` missing or not finite and positive, ``level`` or ``n_boot`` out of
        range, or fewer than two distinct sample sizes.

    See Also
    --------
    GapResult.fit : the slope of a simulation's column.

    Examples
    --------
    >>> from coxinfluence.asymptotics import loglog_slope
    >>> rng = np.random.default_rng(0)
    >>> n = np.repeat([100, 200, 400, 800], 5)
    >>> table = pd.DataFrame({"n": n, "gap": 3.0 / n * np.exp(rng.normal(0, 0.1, n.size))})
    >>> fit = loglog_slope(table, "gap", n_boot=500)
    >>> round(fit.slope, 3), np.round(fit.ci, 3).tolist()
    (-1.017, [-1.051, -0.983])
    """
    if column not in table.columns:
        raise ValueError(f"column {column!r} is not in the table")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1; got {n_boot}")
    vals = table[column].to_numpy(dtype=np.float64)
    if np.any(~np.isfinite(vals)) or np.any(vals <= 0):
        raise ValueError(f"column {column!r} must be finite and > 0 to take logs")
    sizes = np.sort(table["n"].unique())
    if sizes.size < 2:
        raise ValueError("a slope needs at least two distinct sample sizes")
    groups = [np.log(vals[table["n"].to_numpy() == n]) for n in sizes]
    x = np.log(sizes.astype(np.float64))
    xc = x - x.mean()

    def fit(y):
        return (xc @ (y - y.mean(axis=-1, keepdims=True)).T) / (xc @ xc)

    y = np.array([g.mean() for g in groups])
    slope = float(fit(y[None, :])[0])
    intercept = float(y.mean() - slope * x.mean())
    rng = _as_generator(seed)
    yb = np.empty((n_boot, sizes.size))
    for k, g in enumerate(groups):
        yb[:, k] = g[rng.integers(0, g.size, size=(n_boot, g.size))].mean(axis=1)
    boot = fit(yb)
    a = (1 - level) / 2
    lo, hi = np.quantile(boot, [a, 1 - a])
    return SlopeFit(column, slope, float(lo), float(hi), intercept, level, n_boot)


_SLOPE_COLUMNS = ("gap_mean", "gap_max", "if_mean", "if_max", "lead_relerr", "lead_max",
                  "vif_loo_mean", "if_loo_mean", "fixed_gap_mean", "fixed_gap_max",
                  "weight_term_mean", "fixed_loo_mean")
#: columns summarised by geometric means over replicates (norms)
_NORM_PREFIXES = ("gap", "n_gap", "if_", "vif_", "lead_", "fixed_", "weight_term")


@dataclass
class GapResult:
    """Outcome of :func:`~coxinfluence.asymptotics.simulate_gap`.

    Holds the tidy table and gives the log-log slopes (:meth:`fit`, :meth:`slopes`), a
    per-``n`` summary, a figure and markdown tables.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per ``(n, rep)`` (the columns are listed below).
    n_boot : int, default 2000
        Bootstrap resamples for the slopes' intervals.
    level : float, default 0.95
        The intervals' level.
    seed : object, default 0
        The simulation's seed (int or ``SeedSequence``); the bootstrap is seeded from the
        same root.
    design : object, optional
        The design simulated.
    _fits : dict, optional
        Cache of the :class:`SlopeFit` of each column (internal; leave it out).

    See Also
    --------
    simulate_gap : makes it.

    Notes
    -----
    ``table`` has one row per ``(n, rep)``: ``n_events`` and ``converged`` (of the
    fit); ``gap_mean``/``gap_max`` are the mean and max over ``i`` of
    ``||VIF_n(i) - IF_n(i)||`` (Euclidean norm over coefficients), ``n_gap_*`` the
    same times ``n``, ``if_mean``/``if_max`` the size of ``IF_n``; ``argmax_*`` locate
    the row attaining ``gap_max`` (quantile ranks of ``exp(theta_hat' X_i)`` and
    ``Y_i`` among the sample, its event indicator); when the design knows theta*,
    ``theta_err = ||theta_hat - theta*||``; with a population, ``lead_relerr =
    ||n Diff_n - L||_F / ||L||_F`` over all rows (``L`` the theorem's leading term),
    ``lead_mean``/``lead_max`` the mean and max over rows of ``||L(Z_i)||`` and
    ``lead_at_argmax`` its value at the row attaining ``gap_max``; with
    ``include_loo``, ``vif_loo_*``/``if_loo_*`` the mean and max over rows of the
    gaps to ``n (theta_hat - theta_hat_{-i})``. A
    :class:`~coxinfluence.asymptotics.FineGrayDesign` adds ``fixed_gap_mean``/``_max``
    (``||VIF_n(i) - IF^fix_n(i)||``, the censoring weights held fixed),
    ``weight_term_mean`` (``||IF_n(i) - IF^fix_n(i)||``) and, with ``include_loo``,
    ``fixed_loo_*`` (``fine_gray_gap_row``).

    Examples
    --------
    >>> from coxinfluence.asymptotics import simulate_gap
    >>> result = simulate_gap([50, 100, 200], 3, n_boot=200)
    >>> result.table.shape
    (9, 18)
    >>> round(result.slope, 2), np.round(result.slope_ci, 2).tolist()
    (-1.03, [-1.13, -0.95])
    """

    table: pd.DataFrame
    n_boot: int = 2000
    level: float = 0.95
    seed: object = 0
    design: object = None
    _fits: dict = field(default_factory=dict, repr=False)

    def fit(self, column: str = "gap_mean") -> SlopeFit:
        """Log-log slope of a column against ``n``.

        Cached; the bootstrap is seeded from ``seed`` (spawned from replicate ``(0, 0)``'s
        seed).

        Parameters
        ----------
        column : str, default "gap_mean"
            A column of ``table``.

        Returns
        -------
        SlopeFit
            The slope and its bootstrap interval.

        Examples
        --------
        >>> from coxinfluence.asymptotics import simulate_gap
        >>> result = simulate_gap([50, 100, 200], 3, n_boot=200)
        >>> print(f"{result.fit('if_mean').slope:.3f}")  # IF_n = Omega_p(1): slope 0
        -0.004
        """
        if column not in self._fits:
            boot_seed = replicate_seed(self.seed, 0, 0).spawn(1)[0]
            self._fits[column] = loglog_slope(self.table, column, n_boot=self.n_boot,
                                              level=self.level, seed=boot_seed)
        return self._fits[column]

    @property
    def slope(self) -> float:
        """Slope of ``log mean_i |VIF_n(i) - IF_n(i)|`` against ``log n`` (theory: -1).

        """
        return self.fit("gap_mean").slope

    @property
    def slope_ci(self) -> tuple:
        """The bootstrap interval of :attr:`slope`, ``(ci_low, ci_high)``.

        """
        return self.fit("gap_mean").ci

    def slopes(self, columns=_SLOPE_COLUMNS) -> pd.DataFrame:
        """Slopes and intervals for each of ``columns`` present in the table.

        Parameters
        ----------
        columns : sequence of str, optional
            Default: every slope-worthy column (``gap_mean``, ``gap_max``, ``if_mean``,
            ``if_max``, ``lead_relerr``, ``lead_max``, ``vif_loo_mean``, ``if_loo_mean``,
            ``fixed_gap_mean``, ``fixed_gap_max``, ``weight_term_mean``, ``fixed_loo_mean``).

        Returns
        -------
        pandas.DataFrame
            Columns ``column``, ``slope``, ``ci_low``, ``ci_high``; one row per column present.

        Examples
        --------
        >>> from coxinfluence.asymptotics import simulate_gap
        >>> result = simulate_gap([50, 100, 200], 3, n_boot=200)
        >>> print(result.slopes(["gap_mean", "gap_max"]).round(2).to_string())
             column  slope  ci_low  ci_high
        0  gap_mean  -1.03   -1.13    -0.95
        1   gap_max  -0.91   -1.18    -0.60
        """
        rows = []
        for col in columns:
            if col in self.table.columns:
                f = self.fit(col)
                rows.append({"column": col, "slope": f.slope, "ci_low": f.ci_low,
                             "ci_high": f.ci_high})
        return pd.DataFrame(rows)

    def summary(self) -> pd.DataFrame:
        """Per-``n`` summary of the table.

        Geometric means over replicates of the norm columns (``gap*``, ``n_gap*``, ``if_*``,
        ``vif_*``, ``lead_*``, ``fixed_*``, ``weight_term*``; the arithmetic mean where a value
        is <= 0), arithmetic means of the rest.

        Returns
        -------
        pandas.DataFrame
            One row per ``n``: ``n``, ``reps`` and the summarised columns.

        Examples
        --------
        >>> from coxinfluence.asymptotics import simulate_gap
        >>> result = simulate_gap([50, 100, 200], 3, n_boot=200)
        >>> cols = ["n", "reps", "gap_mean", "n_gap_mean", "if_mean"]
        >>> print(result.summary()[cols].round(3).to_string())
             n  reps  gap_mean  n_gap_mean  if_mean
        0   50     3     0.115       5.752    2.756
        1  100     3     0.053       5.310    2.708
        2  200     3     0.027       5.481    2.740
        """
        cols = [c for c in self.table.columns if c not in ("n", "rep")]
        out = []
        for n, g in self.table.groupby("n", sort=True):
            row = {"n": int(n), "reps": len(g)}
            for c in cols:
                v = g[c].to_numpy(dtype=np.float64)
                if c.startswith(_NORM_PREFIXES):
                    row[c] = float(np.exp(np.mean(np.log(v)))) if np.all(v > 0) else float(v.mean())
                else:
                    row[c] = float(v.mean())
            out.append(row)
        return pd.DataFrame(out)

    def plot(self):
        """Log-log figure of the gaps and the size of ``IF_n`` against ``n``.

        Left: each replicate's ``gap_mean``, ``gap_max`` and ``if_mean`` with their fitted
        lines and a slope -1 reference; right: ``n`` times the gaps and the leading term.

        Returns
        -------
        matplotlib.figure.Figure
            The figure (two axes).

        Examples
        --------
        >>> from coxinfluence.asymptotics import simulate_gap
        >>> fig = simulate_gap([50, 100], 2, n_boot=100).plot()
        >>> len(fig.axes)
        2
        """
        from matplotlib.figure import Figure

        fig = Figure(figsize=(11, 4.2), layout="constrained")
        ax1, ax2 = fig.subplots(1, 2)
        t = self.table
        styles = [("gap_mean", "mean$_i$ |VIF$_n$ - IF$_n$|", "C0"),
                  ("gap_max", "max$_i$ |VIF$_n$ - IF$_n$|", "C1"),
                  ("if_mean", "mean$_i$ |IF$_n$|", "C2")]
        for col, label, color in styles:
            if col not in t.columns:
                continue
            f = self.fit(col)
            ax1.scatter(t["n"], t[col], s=6, alpha=0.25, color=color)
            sizes = np.sort(t["n"].unique())
            ax1.plot(sizes, np.exp(f.intercept) * sizes ** f.slope, color=color,
                     label=f"{label}: slope {f.slope:.2f} [{f.ci_low:.2f}, {f.ci_high:.2f}]")
        sizes = np.sort(t["n"].unique()).astype(float)
        if "gap_mean" in t.columns:
            g0 = self.summary()["gap_mean"].to_numpy()[0]
            ax1.plot(sizes, g0 * sizes[0] / sizes, "k:", lw=1, label="slope -1 reference")
        ax1.set(xscale="log", yscale="log", xlabel="n", ylabel="norm",
                title="VIF vs Reid IF: gap and IF size")
        ax1.legend(fontsize=7)
        s = self.summary()
        for col, label, color in [("n_gap_mean", "n * mean gap", "C0"),
                                  ("n_gap_max", "n * max gap", "C1"),
                                  ("lead_max", "max$_i$ |leading term L(Z$_i$)|", "C3"),
                                  ("lead_relerr", "rel. error of n Diff$_n$ vs L", "C4")]:
            if col in s.columns:
                ax2.plot(s["n"], s[col], "o-", color=color, label=label)
        ax2.set(xscale="log", yscale="log", xlabel="n",
                title="n x gap (flat if O(1/n)) and leading term")
        ax2.legend(fontsize=7)
        return fig

    def to_markdown(self) -> str:
        """Per-``n`` summary and slopes as markdown tables.

        Returns
        -------
        str
            The summary table, a blank line, the slopes table.

        Examples
        --------
        >>> from coxinfluence.asymptotics import simulate_gap
        >>> result = simulate_gap([50, 100, 200], 3, n_boot=200, leading_term=False)
        >>> print(result.to_markdown())
        | n | reps | gap_mean | gap_max | n_gap_mean | n_gap_max | if_mean |
        |---|---|---|---|---|---|---|
        | 50 | 3 | 0.115 | 0.9381 | 5.752 | 46.9 | 2.756 |
        | 100 | 3 | 0.0531 | 0.4335 | 5.31 | 43.35 | 2.708 |
        | 200 | 3 | 0.0274 | 0.2664 | 5.481 | 53.28 | 2.74 |
        <BLANKLINE>
        | column | slope | ci_low | ci_high |
        |---|---|---|---|
        | gap_mean | -1.035 | -1.131 | -0.9521 |
        | gap_max | -0.9081 | -1.179 | -0.5994 |
        | if_mean | -0.004222 | -0.1017 | 0.06304 |
        | if_max | 0.05943 | -0.07285 | 0.2148 |
        """
        s = self.summary()
        keep = [c for c in ("n", "reps", "gap_mean", "gap_max", "n_gap_mean", "n_gap_max",
                            "fixed_gap_mean", "weight_term_mean", "if_mean", "lead_relerr",
                            "lead_max", "vif_loo_mean", "if_loo_mean", "fixed_loo_mean")
                if c in s.columns]
        lines = [_md_table(s[keep]), "", _md_table(self.slopes())]
        return "\n".join(lines)


def _md_table(df: pd.DataFrame) -> str:
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return f"{v:.4g}"
        return str(v)
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep] + body)

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
    """Least-squares slope of ``log(value)`` on ``log(n)`` with a bootstrap interval."""

    column: str
    slope: float
    ci_low: float
    ci_high: float
    intercept: float
    level: float
    n_boot: int

    @property
    def ci(self):
        return (self.ci_low, self.ci_high)


def loglog_slope(table: pd.DataFrame, column: str, *, n_boot: int = 2000, level: float = 0.95,
                 seed=0) -> SlopeFit:
    """Slope of ``log(table[column])`` against ``log(table['n'])``.

    The point estimate is the least-squares line through the per-``n`` means of
    ``log(value)`` (the geometric means over replicates; with equal replicate counts
    this is also the least-squares line through all rows). The interval is a
    percentile bootstrap over replicates, resampled within each ``n`` (replicates
    are independent across and within sizes).
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
    ``fixed_loo_*`` (:func:`~coxinfluence.asymptotics.fine_gray_design.fine_gray_gap_row`).
    """

    table: pd.DataFrame
    n_boot: int = 2000
    level: float = 0.95
    seed: object = 0
    design: object = None
    _fits: dict = field(default_factory=dict, repr=False)

    def fit(self, column: str = "gap_mean") -> SlopeFit:
        """Log-log slope of a column against ``n`` (cached; bootstrap seeded by ``seed``)."""
        if column not in self._fits:
            boot_seed = replicate_seed(self.seed, 0, 0).spawn(1)[0]
            self._fits[column] = loglog_slope(self.table, column, n_boot=self.n_boot,
                                              level=self.level, seed=boot_seed)
        return self._fits[column]

    @property
    def slope(self) -> float:
        """Slope of ``log mean_i |VIF_n(i) - IF_n(i)|`` against ``log n`` (theory: -1)."""
        return self.fit("gap_mean").slope

    @property
    def slope_ci(self) -> tuple:
        return self.fit("gap_mean").ci

    def slopes(self, columns=_SLOPE_COLUMNS) -> pd.DataFrame:
        """Slopes and intervals for each of ``columns`` present (default: every
        slope-worthy column)."""
        rows = []
        for col in columns:
            if col in self.table.columns:
                f = self.fit(col)
                rows.append({"column": col, "slope": f.slope, "ci_low": f.ci_low,
                             "ci_high": f.ci_high})
        return pd.DataFrame(rows)

    def summary(self) -> pd.DataFrame:
        """Per-``n`` summary: geometric means over replicates of the norm columns
        (``gap*``, ``n_gap*``, ``if_*``, ``vif_*``, ``lead_*``; the arithmetic mean
        where a value is <= 0), arithmetic means of the rest."""
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
        """Log-log figure of the gaps and the size of ``IF_n`` against ``n``; a Figure."""
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
        """Per-n summary and slopes as a markdown table."""
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

"""Plots of leave-one-out influence (matplotlib; figures are returned, never shown).

- :func:`index_plot`: one panel per column, the change ``g_{-i} - g`` of every patient
  against its label (R's ``plot(resid(fit, "dfbeta")[, j])``), the largest labelled
  inside the axes, clear of each other. The values are the result's own: exact refits
  where the unit was verified (``result.verified``: method "auto"'s refitted units, every
  unit of method "exact"), drawn in orange with a dot and labelled "exact refit" in the
  legend, the first-order estimate elsewhere ("VIF estimate"), so the plot shows the
  numbers of the report's tables (:func:`index_plot_data`).
- :func:`scatter_vs`: one panel per column, an approximation against a reference (exact
  refits, or Reid's IF), with the identity line and the Pearson correlation.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def pyplot():
    """matplotlib's ``pyplot``, imported on first use (``import coxinfluence`` loads no
    matplotlib), with the non-interactive Agg backend unless the user (or Jupyter's inline
    backend) chose one: figures are returned, never shown."""
    import matplotlib
    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        try:
            matplotlib.use("Agg")
        except Exception:  # pragma: no cover - backend already fixed by the user
            pass
    import matplotlib.pyplot as plt
    return plt


def _grid(m, width=3.6, height=2.8, max_cols=3):
    plt = pyplot()
    ncols = min(max_cols, m)
    nrows = int(np.ceil(m / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             squeeze=False, constrained_layout=True)
    for ax in axes.ravel()[m:]:
        ax.set_visible(False)
    return fig, axes.ravel()[:m]


def _columns(result, columns):
    cols = list(result.loo_change.columns) if columns is None else list(columns)
    bad = [c for c in cols if c not in result.loo_change.columns]
    if bad:
        raise ValueError(f"unknown column(s) {bad}; available: {list(result.loo_change.columns)}")
    return cols


#: what a first-order estimate of each method is called in a legend
ESTIMATE_NAMES = {"vif": "VIF estimate", "reid": "Reid IF estimate",
                  "newton": "one-step Newton estimate"}
EXACT_NAME = "exact refit"
_ESTIMATE_COLOR, _EXACT_COLOR = "#4a6fa5", "#d35400"


def estimate_name(result) -> str:
    """The legend's word for ``result``'s numbers that are not exact refits: its
    first-order method's ("VIF estimate" for method "auto")."""
    approx = result.approx if result.approx is not None else result
    return ESTIMATE_NAMES.get(approx.method, f"{approx.method} estimate")


def index_plot_data(result, column) -> pd.DataFrame:
    """What :func:`index_plot` draws in the panel of ``column``: one row per unit (the
    result's index) with ``change`` (``result.loo_change[column]``: the exact refit's
    change for a verified unit, the first-order estimate elsewhere; NaN where undefined)
    and ``exact`` (``result.verified``: the value is an exact refit)."""
    (col,) = _columns(result, [column])
    change = result.loo_change[col].to_numpy(dtype=np.float64)
    exact = result.verified.to_numpy(dtype=bool)
    return pd.DataFrame({"change": change, "exact": exact}, index=result.loo_change.index)


def index_plot(result, columns=None, label_top=3, max_tick_labels=30):
    """Index plot of ``result.loo_change`` (see module docstring); returns the Figure.

    The x axis is the unit's label: with at most ``max_tick_labels`` units, one tick per
    unit labelled with it; else, when the labels are increasing integers (the CLI's row
    numbers, a RangeIndex), the labels themselves; else the unit's position (1 to n).
    Verified units (exact refits) are drawn in orange with a dot, the others (first-order
    estimates) in blue; the legend says which is which. The ``label_top`` largest changes
    of each panel are labelled inside the axes, clear of each other."""
    from matplotlib.lines import Line2D
    cols = _columns(result, columns)
    fig, axes = _grid(len(cols))
    index = result.loo_change.index
    labels = [str(v) for v in index]
    x, xlabel, few = _unit_axis(index, result.unit_name[:-1], max_tick_labels)
    lw = 0.6 if x.size > 100 else 1.2
    placed = []
    any_exact = any_estimate = False
    for ax, c in zip(axes, cols):
        data = index_plot_data(result, c)
        y, exact = data["change"].to_numpy(), data["exact"].to_numpy()
        any_exact |= bool(exact.any())
        any_estimate |= bool((~exact).any())
        ax.vlines(x[~exact], 0, y[~exact], lw=lw, color=_ESTIMATE_COLOR)
        if exact.any():
            ax.vlines(x[exact], 0, y[exact], lw=max(lw, 1.0), color=_EXACT_COLOR, zorder=3)
            ax.plot(x[exact], y[exact], "o", ms=3.5 if x.size > 100 else 4.5,
                    color=_EXACT_COLOR, zorder=4, clip_on=True)
        ax.axhline(0, color="0.4", lw=0.6)
        ax.margins(x=0.03, y=0.12)
        anns = []
        for k in np.argsort(-np.nan_to_num(np.abs(y)), kind="stable")[:label_top]:
            if not np.isfinite(y[k]) or y[k] == 0:
                continue
            ann = ax.annotate(labels[k], (x[k], y[k]), xytext=(3, 0), textcoords="offset points",
                              ha="left", va="center", fontsize=7, color="#b03a2e",
                              clip_on=True, annotation_clip=True)
            ann.set_in_layout(False)
            anns.append(ann)
        placed.append((ax, anns))
        ax.set_title(str(c), fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel("change", fontsize=8)
        ax.tick_params(labelsize=7)
        _small_scale_ticks(ax.yaxis)
        if few:
            ax.set_xticks(x, labels, rotation=90 if max(map(len, labels)) > 2 else 0)
            ax.tick_params(axis="x", labelsize=6 if len(labels) > 20 else 7)
        else:
            _unit_ticks(ax.xaxis)
    handles = []
    if any_exact:
        handles.append(Line2D([], [], color=_EXACT_COLOR, lw=1.2, marker="o", ms=4.5,
                              label=EXACT_NAME))
    if any_estimate:
        handles.append(Line2D([], [], color=_ESTIMATE_COLOR, lw=1.2,
                              label=estimate_name(result)))
    fig.suptitle(f"Leave-one-out change per {result.unit_name[:-1]}", fontsize=10)
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8,
               frameon=False)
    renderer = _freeze_layout(fig)
    for ax, anns in placed:
        _place_labels(ax, anns, renderer)
    return fig


def _unit_axis(index, unit, max_tick_labels):
    """(x positions, axis label, whether every unit gets a labelled tick)."""
    n = len(index)
    if n <= max_tick_labels:
        return np.arange(n, dtype=np.float64), unit, True
    values = np.asarray(index)
    if np.issubdtype(values.dtype, np.number) and not np.issubdtype(values.dtype, np.bool_):
        v = values.astype(np.float64)
        if np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.diff(v) > 0):
            name = index.name if index.name not in (None, unit) else None
            return v, unit if name is None else f"{unit} ({name})", False
    return (np.arange(1, n + 1, dtype=np.float64),
            f"{unit}: position 1 to {n} (largest labelled)", False)


def _small_scale_ticks(axis, nbins=5):
    """At most ``nbins`` ticks, numbers below 0.01 or above 1000 as a multiple of a power
    of ten written once at the axis' end (x10^-4), so tick labels stay short."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter
    fmt = ScalarFormatter(useMathText=True)
    fmt.set_powerlimits((-2, 3))
    axis.set_major_formatter(fmt)
    axis.set_major_locator(MaxNLocator(nbins=nbins))
    axis.get_offset_text().set_fontsize(7)


def _unit_ticks(axis):
    """Integer ticks written in full (unit labels and positions are never scaled)."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter
    fmt = ScalarFormatter(useOffset=False)
    fmt.set_scientific(False)
    axis.set_major_formatter(fmt)
    axis.set_major_locator(MaxNLocator(nbins=5, integer=True, steps=[1, 2, 2.5, 5, 10]))


def _freeze_layout(fig):
    """Run the figure's layout once and keep it, so that positions measured now (the
    labels' placement) hold when the figure is saved; returns the renderer."""
    fig.canvas.draw()
    fig.set_layout_engine("none")
    get = getattr(fig.canvas, "get_renderer", None)
    return get() if get is not None else fig._get_renderer()


def _place_labels(ax, anns, renderer, pad=1.5):
    """Move each annotation (largest first) to the first spot beside its point whose
    text lies inside the axes and clear of the labels already placed: right, then left
    of the point, then shifted up and down by whole text heights."""
    from matplotlib.transforms import Bbox
    frame = ax.get_window_extent(renderer)
    inner = Bbox.from_extents(frame.x0 + pad, frame.y0 + pad, frame.x1 - pad, frame.y1 - pad)
    step = 8.0                                   # points: a 7-point label and a gap
    shifts = [0.0] + [s * k * step for k in range(1, 13) for s in (-1.0, 1.0)]
    taken = []

    def overlap(a, b):
        w = min(a.x1, b.x1) - max(a.x0, b.x0) + pad
        h = min(a.y1, b.y1) - max(a.y0, b.y0) + pad
        return max(w, 0.0) * max(h, 0.0)

    for ann in anns:
        best = None
        for dy in shifts:
            for dx, ha in ((3.0, "left"), (-3.0, "right")):
                ann.set_position((dx, dy))
                ann.set_horizontalalignment(ha)
                box = ann.get_window_extent(renderer)
                outside = (max(inner.x0 - box.x0, 0) + max(box.x1 - inner.x1, 0)
                           + max(inner.y0 - box.y0, 0) + max(box.y1 - inner.y1, 0))
                cost = (outside * 1e6 + sum(overlap(box, t) for t in taken), abs(dy))
                if best is None or cost < best[0]:
                    best = (cost, dx, dy, ha, box)
                if cost[0] == 0:
                    break
            if best[0][0] == 0:
                break
        _, dx, dy, ha, box = best
        ann.set_position((dx, dy))
        ann.set_horizontalalignment(ha)
        taken.append(box)


def scatter_vs(result, reference, columns=None):
    """``result`` against ``reference`` (both InfluenceResults, same columns)."""
    cols = _columns(result, columns)
    corr = result.correlation(reference)
    fig, axes = _grid(len(cols))
    for ax, c in zip(axes, cols):
        x = reference.loo_change[c].to_numpy()
        y = result.loo_change[c].to_numpy()
        ok = np.isfinite(x) & np.isfinite(y)
        ax.scatter(x[ok], y[ok], s=6, alpha=0.6, color="#4a6fa5", lw=0)
        if ok.any():
            lo, hi = min(x[ok].min(), y[ok].min()), max(x[ok].max(), y[ok].max())
            ax.plot([lo, hi], [lo, hi], color="0.3", lw=0.7, ls="--")
        ax.set_title(f"{c}: r = {corr[c]:.5f}", fontsize=9)
        ax.set_xlabel(reference.method, fontsize=8)
        ax.set_ylabel(result.method, fontsize=8)
        ax.tick_params(labelsize=7)
        _small_scale_ticks(ax.xaxis, nbins=4)
        _small_scale_ticks(ax.yaxis)
    fig.suptitle(f"{result.method} against {reference.method}", fontsize=10)
    return fig


def residual_index_plot(values: pd.Series, label_top=5, unit="patients", bound=2.0):
    """Index plot of one residual per unit (a deviance residual), the ``label_top``
    largest in absolute value labelled and the lines at +-``bound``; returns the figure."""
    fig, (ax,) = _grid(1, width=7.2, height=3.0)
    v = values.to_numpy(dtype=np.float64)
    x = np.arange(v.size)
    ax.plot(x, v, "o", ms=2.5, color="C0", alpha=0.7)
    for b in (-bound, bound):
        ax.axhline(b, color="0.5", lw=0.8, ls="--")
    ax.axhline(0.0, color="0.7", lw=0.6)
    finite = np.flatnonzero(np.isfinite(v))
    top = finite[np.argsort(-np.abs(v[finite]), kind="stable")[:label_top]]
    for k in top:
        ax.annotate(str(values.index[k]), (x[k], v[k]), fontsize=7, xytext=(3, 2),
                    textcoords="offset points", color="C3")
    ax.set_xlabel(f"{unit} (in the data's order)")
    ax.set_ylabel(str(values.name or "residual"))
    return fig


def ph_test_plots(test, names):
    """One panel per term of ``names``: ``test.plot(name, ax=...)`` (a
    :class:`~coxinfluence.diagnostics.PHTest`: scaled Schoenfeld residuals against
    transformed time, smooth and band); returns the figure."""
    fig, axes = _grid(len(names), width=4.2, height=3.2, max_cols=2)
    for ax, name in zip(axes, names):
        test.plot(name, ax=ax)
    return fig

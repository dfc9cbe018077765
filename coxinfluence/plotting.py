"""Plots of leave-one-out influence (matplotlib; figures are returned, never shown).

- :func:`index_plot`: one panel per column, the change ``g_{-i} - g`` of every patient
  against its row number (R's ``plot(resid(fit, "dfbeta")[, j])``), the largest labelled.
- :func:`scatter_vs`: one panel per column, an approximation against a reference (exact
  refits, or Reid's IF), with the identity line and the Pearson correlation.
"""
from __future__ import annotations

import numpy as np


def _plt():
    import matplotlib
    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        try:
            matplotlib.use("Agg")
        except Exception:  # pragma: no cover - backend already fixed by the user
            pass
    import matplotlib.pyplot as plt
    return plt


def _grid(m, width=3.6, height=2.8, max_cols=3):
    plt = _plt()
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


def index_plot(result, columns=None, label_top=3):
    """Index plot of ``result.loo_change`` (see module docstring); returns the Figure."""
    cols = _columns(result, columns)
    fig, axes = _grid(len(cols))
    labels = result.loo_change.index.astype(str)
    for ax, c in zip(axes, cols):
        y = result.loo_change[c].to_numpy()
        x = np.arange(y.size)
        ax.vlines(x, 0, y, lw=0.6, color="#4a6fa5")
        ax.axhline(0, color="0.4", lw=0.6)
        for k in np.argsort(-np.nan_to_num(np.abs(y)))[:label_top]:
            ax.annotate(labels[k], (x[k], y[k]), fontsize=7, color="#b03a2e",
                        xytext=(2, 2), textcoords="offset points")
        ax.set_title(str(c), fontsize=9)
        ax.set_xlabel("patient (row)", fontsize=8)
        ax.set_ylabel(f"change ({result.method})", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle("Leave-one-out change per patient", fontsize=10)
    return fig


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
    fig.suptitle(f"{result.method} against {reference.method}", fontsize=10)
    return fig

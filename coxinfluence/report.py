"""Self-contained HTML audit report: one file, PNG figures embedded as base64 data URIs,
inline CSS, no scripts and no external resources (it opens offline, e.g. attached to an
e-mail).

Sections: model summary (coefficients, hazard ratios, standard errors), the top
influential patients (likelihood displacement, with covariates, time and event), index
plots of the VIF changes, VIF against Reid's IF and, when exact refits were computed,
VIF against exact leave-one-out, each with its per-column Pearson correlation.
"""
from __future__ import annotations

import base64
import html
import io
from datetime import datetime, timezone

import numpy as np
import pandas as pd

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;
color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.5em;border-bottom:2px solid #4a6fa5;padding-bottom:.2em}
h2{font-size:1.15em;margin-top:1.6em;color:#2c4a75}
table{border-collapse:collapse;font-size:.82em;margin:.5em 0}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#eef2f8}
img{max-width:100%;border:1px solid #ddd;margin:.4em 0}
.meta{color:#666;font-size:.85em}
"""


def figure_to_data_uri(fig, dpi=100) -> str:
    """PNG of a matplotlib figure as a ``data:image/png;base64,...`` URI (figure closed)."""
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _table(df: pd.DataFrame, digits=4) -> str:
    return df.to_html(float_format=lambda v: f"{v:.{digits}g}", border=0, na_rep="NA")


def _img(uri, alt):
    return f'<img src="{uri}" alt="{html.escape(alt)}">'


def build_report(result, *, reid=None, exact=None, title="Cox model influence audit",
                 description="", top_k=10) -> str:
    """The report (HTML text) for an :class:`~coxinfluence.influence.InfluenceResult`
    ``result`` (normally VIF), with optional Reid and exact results of the same target."""
    fit = result.fit
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts.append(f"<p class='meta'>{html.escape(description)} {result.units_text}, "
                 f"{int(fit.data.event.sum())} events, {fit.ties} ties, log partial likelihood "
                 f"{fit.loglik:.4f}; generated {stamp} by coxinfluence.</p>")
    summary = (fit.summary(robust=True, groups=result._resolved.groups) if result.robust
               else fit.summary())
    parts.append("<h2>Model</h2>" + _table(summary))
    unit = result.unit_name
    removal = "" if result.units.is_rows else ", all of its rows"
    parts.append(f"<h2>Top {top_k} influential {unit}</h2><p>Ranked by the likelihood "
                 "displacement 2[logL(&theta;&#770;) &minus; "
                 "logL(&theta;&#770;<sub>&minus;i</sub>)] "
                 f"({html.escape(result.method)}); the changes are "
                 "&theta;&#770;<sub>&minus;i</sub> &minus; &theta;&#770; "
                 f"(removing the {unit[:-1]}{removal}).</p>")
    parts.append("<div style='overflow-x:auto'>" + _table(result.top(top_k)) + "</div>")
    parts.append("<h2>Index plots</h2>" + _img(figure_to_data_uri(result.plot_index()),
                                                "index plots"))
    for other, name in ((reid, "Reid's influence function"), (exact, "exact leave-one-out refits")):
        if other is None:
            continue
        corr = result.correlation(other)
        parts.append(f"<h2>{html.escape(result.method.upper())} against {name}</h2>")
        parts.append(f"<p>Pearson correlation per column: mean {np.nanmean(corr):.6f}, "
                     f"min {np.nanmin(corr):.6f}.</p>")
        parts.append(_table(corr.to_frame().T, digits=6))
        from .plotting import scatter_vs
        parts.append(_img(figure_to_data_uri(scatter_vs(result, other)), f"against {name}"))
    if exact is None:
        parts.append("<p class='meta'>Exact leave-one-out refits were not computed "
                     "(use --exact).</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(path, result, **kwargs):
    """Write :func:`build_report` to ``path`` (UTF-8); returns the path."""
    from pathlib import Path
    path = Path(path)
    path.write_text(build_report(result, **kwargs), encoding="utf-8")
    return path

"""Self-contained HTML audit report: one file, PNG figures embedded as base64 data URIs,
inline CSS, no scripts and no external resources (it opens offline, e.g. attached to an
e-mail). Written once against the model seam (:mod:`coxinfluence.influence_functions.seam`):
the model's words (title, header line, the convergence warning) and its coefficient table
come from the seam's optional ``report_header()`` and ``summary_table(robust)``
(:func:`~coxinfluence.influence_functions.seam.model_header`,
:func:`~coxinfluence.influence_functions.seam.model_summary`), so a Cox, AFT, Fine-Gray or
autodiff audit is the same report.

Sections: the fit's status in red when it did not converge; "what can be trusted"
(what was verified by exact refits, the largest VIF error among them, every flag); the
model summary; the top influential units ranked by the verified likelihood displacement,
exact and VIF side by side, then their changes, dfbetas and data; index plots of the VIF
changes; VIF against Reid's IF and, when every unit was refitted, against exact
leave-one-out, each with its per-column Pearson correlation.
"""
from __future__ import annotations

import base64
import html
import io
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from coxinfluence.influence_functions.seam import model_header, model_summary

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
.bad{color:#b00020}
.warn{color:#8a5a00}
h3{font-size:1em;margin:.8em 0 .2em}
"""


def figure_to_data_uri(fig, dpi=100) -> str:
    """PNG of a matplotlib figure as a ``data:image/png;base64,...`` URI (figure closed)."""
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _table(df: pd.DataFrame, digits=4) -> str:
    """``df`` as an HTML table: numbers to ``digits`` significant digits, a float column
    whose values are all whole numbers (0/1 indicators, strata, days) as integers, NaN as
    NA."""
    def number(v):
        return "NA" if pd.isna(v) else f"{v:.{digits}g}"

    def whole(v):
        return "NA" if pd.isna(v) else str(int(v))

    def other(v):
        return "NA" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)

    def formatter(col):
        if _whole_numbers(col):
            return whole
        return number if pd.api.types.is_float_dtype(col) else other

    formatters = [formatter(df.iloc[:, j]) for j in range(df.shape[1])]
    return df.to_html(formatters=formatters, border=0, na_rep="NA")


def _whole_numbers(col: pd.Series) -> bool:
    """A float column whose finite values are all integers below 2^53 (and not all NaN)."""
    if not pd.api.types.is_float_dtype(col):
        return False
    v = col.to_numpy(dtype=np.float64)
    v = v[~np.isnan(v)]
    return v.size > 0 and bool(np.all(np.isfinite(v)) and np.all(v == np.round(v))
                               and np.all(np.abs(v) < 2.0 ** 53))


def _img(uri, alt):
    return f'<img src="{uri}" alt="{html.escape(alt)}">'


def _target_wording(result):
    """What the changes are, in words, for the report."""
    unit = result.unit_name[:-1]
    removal = "" if result.model.units_are_rows else " (all of its rows)"
    name = result.target.name
    if name == "coef":
        what = "&theta;&#770;<sub>&minus;i</sub> &minus; &theta;&#770;: the coefficients"
    else:
        what = (f"g<sub>&minus;i</sub> &minus; g for the target <b>{html.escape(name)}</b> "
                f"(columns {html.escape(', '.join(map(str, result.loo_change.columns[:6])))}"
                f"{', ...' if result.loo_change.shape[1] > 6 else ''})")
        if name == "survival":
            what += (", with the baseline hazard recomputed without the "
                     f"{unit}" if result.include_data_effect else
                     ", the baseline hazard held at the full data's")
    return f"The changes are {what}, refitted without the {unit}{removal}."


def _trust_section(result, header):
    """"What can be trusted": the fit's status (``header.diverging`` names the diverging
    parameters), what was verified, the flags."""
    out = ["<h2>What can be trusted</h2><ul>"]
    approx = result.approx if result.approx is not None else result
    if not result.fit_ok:
        names = header.diverging
        out.append("<li class='bad'><b>The model did not converge</b>"
                   + (f": the coefficients of {html.escape(', '.join(names))} diverge "
                      "(monotone likelihood)" if names else "")
                   + f". Every influence number is a first-order estimate "
                   f"({html.escape(approx.method.upper())}) measured against a maximum that "
                   "does not exist, and none was refitted (there is no maximum to refit "
                   "against); refit with a ridge penalty or without those covariates.</li>")
    elif result.verification is not None:
        out.append(f"<li>{html.escape(result.verification.describe(result.unit_name))}."
                   " Verified numbers (&#10003;) are exact refits; the others are VIF "
                   "estimates.</li>")
        err = result.largest_error()
        if err is not None:
            out.append(f"<li>Largest VIF error among the verified {result.unit_name}: "
                       f"{html.escape(str(err[0]))}, displacement {err[1]:.4g} by VIF against "
                       f"{err[2]:.4g} exact.</li>")
    elif result.method == "exact":
        out.append("<li>Every number is an exact refit.</li>")
    else:
        out.append(f"<li>Every number is a first-order estimate "
                   f"({html.escape(result.method.upper())}); none was verified by a refit."
                   "</li>")
    flags = result.flags
    counts = flags.sum()
    if not result.fit_ok:
        unstable = "unstable (every first-order estimate: the fit has no maximum)"
    elif result.refits is not None:
        unstable = ("unstable (the first-order estimate is predicted to be off by more "
                    "than about 10%; refitted: \u2713 in the tables)")
    else:
        unstable = ("unstable (the first-order estimate is predicted to be off by more "
                    f"than about 10%; method {html.escape(result.method)} does not refit "
                    "them, the default method auto does)")
    text = {"undefined": "undefined (removing it leaves a covariate constant or collinear, "
                         "or a stratum or the data without events: the exact change does "
                         "not exist, shown as NA)",
            "unstable": unstable,
            "refit_failed": "refit failed (NA)",
            "unverified_top": "may belong in the top 10 but was not refitted"}
    # a model's own flags (the seam's optional extra_flags) come with their words
    text.update(getattr(result.model, "flag_descriptions", {}))
    for col in flags.columns:
        if counts[col]:
            labels = list(flags.index[flags[col].to_numpy()])
            shown = ", ".join(map(str, labels[:20])) + (", ..." if len(labels) > 20 else "")
            out.append(f"<li class='{'bad' if col != 'unstable' else 'warn'}'>"
                       f"{int(counts[col])} {result.unit_name} "
                       f"{html.escape(text.get(col, col.replace('_', ' ')))}: "
                       f"{html.escape(shown)}</li>")
    if not counts.any():
        out.append(f"<li>No {result.unit_name} flagged.</li>")
    out.append("</ul>")
    return "".join(out)


def _top_tables(result, top_k):
    """The top table (rank, displacements exact and VIF side by side, verified, flags,
    the unit's rows / time / event), then its changes and dfbetas, narrow enough to read
    without scrolling."""
    top = result.top(top_k)
    idx = top.index
    flags = result.flags.loc[idx]
    reasons = [", ".join(c for c in flags.columns if flags.loc[i, c]) for i in idx]
    main = pd.DataFrame({"rank": top["rank"],
                         "displacement": top["likelihood_displacement"],
                         "exact": result.ld_exact.loc[idx],
                         "VIF": result.ld_approx.loc[idx],
                         "verified": np.where(result.verified.loc[idx], "\u2713", ""),
                         "flags": reasons}, index=idx)
    if result.method == "exact":
        main = main.drop(columns=["VIF"])
    elif result.refits is None:
        main = main.drop(columns=["exact", "verified"])
    info, rest = _data_columns(result)
    main = pd.concat([main, result.frame.loc[idx, info]], axis=1)
    changes = result.loo_change.loc[idx]
    dfbetas = result.dfbetas.loc[idx]
    covs = result.frame.loc[idx, rest]
    return [_table(main), "<h3>Changes</h3>", _wrap(_table(changes, 3)),
            f"<h3>dfbetas (change / {'robust ' if result.robust else ''}SE; minus R's "
            "sign)</h3>", _wrap(_table(dfbetas, 3)),
            "<h3>Their data</h3>", _wrap(_table(covs, 4))]


def _data_columns(result):
    """The frame's columns for the top table (the unit's rows, follow-up, time, event)
    and for "Their data" (the rest), each once: a column that is not a covariate of the
    model and holds the same values as one of the first (the data's own event column
    "cens" beside the fit's "event", or its time column under another name) is left out."""
    frame = result.frame
    info = [c for c in ("rows", "entry", "exit", "events", "time", "event", "cens", "status")
            if c in frame.columns]
    covariates = set(map(str, result.model.columns))
    kept = []
    for c in info + [c for c in frame.columns if c not in info]:
        if str(c) in covariates or not any(_same_values(frame[c], frame[k])
                                            for k in kept if k in info):
            kept.append(c)
    return [c for c in info if c in kept], [c for c in kept if c not in info]


def _same_values(a: pd.Series, b: pd.Series) -> bool:
    """Numeric columns holding the same numbers in every row."""
    numeric = pd.api.types.is_numeric_dtype
    if not (numeric(a) and numeric(b)):
        return False
    return bool(np.array_equal(a.to_numpy(dtype=np.float64), b.to_numpy(dtype=np.float64)))


def _wrap(table):
    return "<div style='overflow-x:auto'>" + table + "</div>"


def build_report(result, *, reid=None, exact=None, title=None, description="",
                 top_k=10) -> str:
    """The report (HTML text) for an :class:`~coxinfluence.audit.run.InfluenceResult`
    ``result`` (normally ``method="auto"``) of any model behind the seam, with optional
    Reid and exact results of the same target for the comparisons. ``title`` defaults to
    the model's ("Cox model influence audit", "Weibull AFT model influence audit",
    "Fine-Gray model influence audit")."""
    header = model_header(result.model)
    title = header.title if title is None else title
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts.append(f"<p class='meta'>{html.escape(description)} "
                 f"{html.escape(header.statement)}: {html.escape(result.units_text)}, "
                 f"{html.escape(header.facts)}; generated {stamp} by coxinfluence.</p>")
    if not result.fit_ok:
        parts.append(f"<p class='bad'><b>Warning: the {html.escape(header.name)} fit did not "
                     "converge</b> (see &ldquo;What can be trusted&rdquo;).</p>")
    parts.append(_trust_section(result, header))
    parts.append("<h2>Model</h2>" + _table(model_summary(result.model, result.robust)))
    unit = result.unit_name
    approx = result.approx if result.approx is not None else result
    parts.append(f"<h2>Top {top_k} influential {unit}</h2><p>Ranked by the likelihood "
                 "displacement 2[logL(&theta;&#770;) &minus; "
                 "logL(&theta;&#770;<sub>&minus;i</sub>)]: exact (by refit) where verified "
                 "(&#10003;), else its quadratic-form estimate from "
                 f"{html.escape(approx.method.upper())}. {_target_wording(result)}</p>")
    parts.extend(_top_tables(result, top_k))
    parts.append("<h2>Index plots</h2>" + _img(figure_to_data_uri(approx.plot_index()),
                                                "index plots"))
    for other, name in ((reid, "Reid's influence function"), (exact, "exact leave-one-out refits")):
        if other is None or other is approx:
            continue
        corr = approx.correlation(other)
        parts.append(f"<h2>{html.escape(approx.method.upper())} against {name}</h2>")
        parts.append(f"<p>Pearson correlation per column: mean {np.nanmean(corr):.6f}, "
                     f"min {np.nanmin(corr):.6f}.</p>")
        parts.append(_table(corr.to_frame().T, digits=6))
        from .plotting import scatter_vs
        parts.append(_img(figure_to_data_uri(scatter_vs(approx, other)), f"against {name}"))
    if exact is None:
        parts.append("<p class='meta'>Exact refits of every unit were not computed "
                     "(use --exact).</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(path, result, **kwargs):
    """Write :func:`build_report` to ``path`` (UTF-8); returns the path."""
    from pathlib import Path
    path = Path(path)
    path.write_text(build_report(result, **kwargs), encoding="utf-8")
    return path

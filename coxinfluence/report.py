"""Self-contained HTML audit report: one file, PNG figures embedded as base64 data URIs,
inline CSS, no scripts and no external resources (it opens offline, e.g. attached to an
e-mail). Written once against the model seam (:mod:`coxinfluence.influence_functions.seam`):
the model's words (title, header line, the convergence warning) and its coefficient table
come from the seam's ``report_header()`` and ``summary_table(robust)`` (members with
defaults on :class:`~coxinfluence.influence_functions.seam.AuditModel`), so a Cox, AFT,
Fine-Gray or autodiff audit is the same report.

Sections: the fit's status in red when it did not converge; the target's warnings
(``result.target_notes``, e.g. a target time past the follow-up) in a box; "what can be
trusted" (what was verified by exact refits, the VIF error in the top 10 measured against
the 10th largest displacement, every flag); the model summary with 95% confidence
intervals and, where the model has them, its ratios exp(coef) (hazard ratios, time ratios,
the seam's ``ratio_name``: "subdistribution hazard ratio" for Fine-Gray) and the
seam's ``report_notes()`` (what the status codes mean); the top influential units
ranked by the verified likelihood displacement, exact and VIF side by side, then their
changes, dfbetas and data; where the model's fit has a curves part
(:mod:`coxinfluence.families.curves`: cause-specific and multi-state fits), the reference
patient's prediction curves from the full fit and refitted without each of the top units;
index plots of the result's own changes (exact refits marked where verified, as in the
tables); "Model checks" where the model has them (asked of the
residuals' table, :func:`coxinfluence.diagnostics.registry.residual_kinds`, by the fit's
class: Cox and AFT fits, lifelines' and statsmodels' Cox models): the PH test table (R's
``cox.zph``) with plots of the terms failing at 5% (a model with scaled Schoenfeld
residuals), the deviance-residual index plot, the units standing out in both (|deviance|
> 2 among the top by displacement), :func:`model_checks`; VIF against Reid's IF and,
when every unit was refitted, against exact leave-one-out, each with its per-column
Pearson correlation.
Column names are the result's (``result.loo_change.columns``), never re-labelled.
"""
from __future__ import annotations

import base64
import html
import io
import re
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from coxinfluence.plotting import estimate_name

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
.notes{border:2px solid #d9a400;background:#fff6d6;padding:.3em 1em;margin:1em 0}
.notes b{color:#8a5a00}
.note{font-size:.85em;color:#444;margin:.2em 0}
"""

#: the normal quantile of two-sided 95% confidence intervals
Z95 = 1.959963984540054


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
        return "NA" if pd.isna(v) is True else str(v)     # a scalar missing value

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
    text = f"The changes are {what}, refitted without the {unit}{removal}."
    if any(_MEANS.search(str(c)) for c in result.loo_change.columns):
        text += (" <b>mean</b> in a column name is no patient: the target is taken at the "
                 "covariate means of the data (a 0/1 covariate at its proportion); in "
                 "Python the same columns come from the row <code>X.mean().rename('mean')"
                 "</code>.")
    return text


# a new-patient label "mean" (the CLI's default: the covariate means), as in
# "F(2|mean)", "S(10|mean, stratum 1)", "rr[mean]"
_MEANS = re.compile(r"[|\[]mean(, stratum [^)\]]*)?[)\]]")


def _vif_error_sentence(result, k=10):
    err = result.top_vif_error(k)
    if err is None:
        return None
    label, a, e, scale, used = err
    unit = result.unit_name
    off = abs(a - e)
    rel = off / scale if scale > 0 else np.inf
    rel_text = (f"{100 * rel:.2g}% of" if rel < 1 else f"{rel:.3g} times")
    return (f"VIF error in the top {used} {unit} (measured against the {_ordinal(used)} "
            f"largest displacement, {scale:.4g}, the scale on which the top {used} is "
            f"decided): largest for {html.escape(str(label))}, displacement {a:.4g} by VIF "
            f"against {e:.4g} exact, off by {off:.3g}, {rel_text} the {_ordinal(used)} "
            "displacement.")


def _ordinal(k):
    if 10 <= k % 100 <= 20:
        return f"{k}th"
    return f"{k}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th') }"


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
        sentence = _vif_error_sentence(result)
        if sentence is not None:
            out.append(f"<li>{sentence}</li>")
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
                    "than about 10%; refitted: \u2713 in the tables, where the number "
                    "shown is exact)")
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
    # a model's own flags (the seam's extra_flags) come with their words
    text.update(result.model.flag_descriptions)
    for col in flags.columns:
        if counts[col]:
            labels = list(flags.index[flags[col].to_numpy()])
            shown = ", ".join(map(str, labels[:20])) + (", ..." if len(labels) > 20 else "")
            out.append(f"<li class='{'bad' if col != 'unstable' else 'warn'}'>"
                       f"{int(counts[col])} {_units(result.unit_name, counts[col])} "
                       f"{html.escape(text.get(col, col.replace('_', ' ')))}: "
                       f"{html.escape(shown)}</li>")
    if not counts.any():
        out.append(f"<li>No {result.unit_name} flagged.</li>")
    out.append("</ul>")
    return "".join(out)


def _top_tables(result, top_k, unit_data=None):
    """The top table (rank, displacements exact and VIF side by side, verified, flags,
    the unit's rows / time / event), then its changes and dfbetas, narrow enough to read
    without scrolling, then their data: the frame's other columns, or ``unit_data``'s rows
    of the top units (a subject's covariates at entry, its first row)."""
    top = result.top(top_k)
    idx = top.index
    main = pd.DataFrame({"rank": top["rank"],
                         "displacement": top["likelihood_displacement"],
                         "exact": result.ld_exact.loc[idx],
                         "VIF": result.ld_approx.loc[idx],
                         "verified": np.where(result.verified.loc[idx], "\u2713", ""),
                         "flags": _flag_cells(result, idx)}, index=idx)
    if result.method == "exact":
        main = main.drop(columns=["VIF"])
    elif result.refits is None:
        main = main.drop(columns=["exact", "verified"])
    info, rest = _data_columns(result)
    main = pd.concat([main, result.frame.loc[idx, info]], axis=1)
    changes = result.loo_change.loc[idx]
    dfbetas = result.dfbetas.loc[idx]
    covs, their = result.frame.loc[idx, rest], "<h3>Their data</h3>"
    if unit_data is not None:
        covs = unit_data.reindex(idx)
        span = (" from entry to exit in the table above" if {"entry", "exit"} <= set(info)
                else "")
        their += (f"<p>The {html.escape(result.unit_name)}' covariates at entry (their "
                  f"first row); their follow-up{span}.</p>")
    return [_table(main), "<h3>Changes</h3>", _wrap(_table(changes, 3)),
            "<h3>dfbetas (change / model-based SE, as R's; minus R's sign)</h3>",
            _wrap(_table(dfbetas, 3)),
            their, _wrap(_table(covs, 4))]


def _units(name, count):
    """``name`` ("patients", "clusters") in the singular for a count of one."""
    return name[:-1] if count == 1 and name.endswith("s") else name


def _target_top_table(result, top_k):
    """With a target other than the coefficients, the top ``top_k`` units by the target's
    own change (``result.top(k, by="target")``: the largest |change| / SE over the
    target's columns), which ``auto`` verifies as it does the top by displacement."""
    if result.target.name == "coef":
        return []
    top = result.top(top_k, by="target")
    idx = top.index
    table = pd.concat([pd.DataFrame({"rank": top["rank"],
                                     "largest |change| / SE": top["target_influence"],
                                     "verified": np.where(result.verified.loc[idx],
                                                          "\u2713", ""),
                                     "flags": _flag_cells(result, idx)}, index=idx),
                       result.loo_change.loc[idx]], axis=1)
    return [f"<h3>Top {top_k} by the change of the target "
            f"{html.escape(result.target.name)}</h3><p>Ranked by each "
            f"{html.escape(_units(result.unit_name, 1))}"
            "'s largest standardised change over the target's columns (|change| / "
            "model-based SE, the largest |dfbetas|): exact where verified (&#10003;).</p>",
            _wrap(_table(table, 4))]


def _flag_cells(result, idx):
    """The flags column of a top table: each unit's flags, as :func:`_flag_cell` words
    them, joined."""
    flags, verified = result.flags.loc[idx], result.verified.loc[idx]
    return [", ".join(_flag_cell(c, bool(verified.loc[i]))
                      for c in flags.columns if flags.loc[i, c]) for i in idx]


def _flag_cell(flag, verified):
    """A flag as the top table writes it: ``unstable`` on a verified unit says that only
    the first-order estimate was unstable, and the number shown is the exact refit's."""
    if flag == "unstable" and verified:
        return "unstable first-order estimate; exact value shown"
    return flag


def model_tables(result):
    """The report's Model section as data: ``(table, ratios, notes)``. ``table``: the
    seam's coefficient table (``summary_table(robust)``) with 95% confidence intervals
    ``lower 95%`` and ``upper 95%`` (coef +- 1.96 SE, the SE the table shows: the robust
    one when it has it), unless the table has its own; ``ratios``: None, or ``(name,
    frame)`` with the model's ratios exp(coef) (a hazard ratio, a time ratio, the seam's
    ``ratio_name``) and their intervals (the exponentiated coefficient intervals), one
    row per parameter that has one, named as in ``table``; ``notes``: sentences (HTML)
    for under the tables."""
    table = result.model.summary_table(result.robust).copy()
    coef_col = table.columns[0]
    se_col = next((c for c in ("robust se", "se(coef)", "Std. Error", "se")
                   if c in table.columns), None)
    notes = []
    own = any("lower" in str(c).lower() for c in table.columns)
    # a fit's summary() has them already (models/base.py: coef -/+ z se of the SE shown)
    fits_own = own and {"lower 95%", "upper 95%"} <= set(table.columns)
    if se_col is not None and (fits_own or not own):
        if not own:
            coef = table[coef_col].to_numpy(dtype=np.float64)
            se = table[se_col].to_numpy(dtype=np.float64)
            table["lower 95%"] = coef - Z95 * se
            table["upper 95%"] = coef + Z95 * se
        notes.append(f"95% confidence intervals: {html.escape(str(coef_col))} &plusmn; 1.96 "
                     f"&times; {html.escape(str(se_col))}.")
    ratios = _ratios(result, table, coef_col, se_col)
    if ratios is not None:
        name, _ = ratios
        notes.append(f"{html.escape(name[0].upper() + name[1:])}: "
                     f"exp({html.escape(str(coef_col))}), "
                     f"{_RATIO_MEANING.get(name, 'per unit increase of the covariate')}; its "
                     "95% interval is the exponentiated interval of the coefficient.")
    notes.extend(html.escape(line) for line in result.model.report_notes())
    return table, ratios, notes


_RATIO_MEANING = {
    "hazard ratio": "the factor on the hazard per unit increase of the covariate",
    "time ratio": "the factor on survival times (the acceleration factor) per unit "
                  "increase of the covariate; none for the intercept and the scale",
    "subdistribution hazard ratio": "the factor on the subdistribution hazard of the "
                                    "cause modelled (Fine-Gray) per unit increase of the "
                                    "covariate",
}

#: the model's ratios exp(coef): its target (``target_names``), what it is called
_RATIO_TARGETS = (("time_ratio", "time ratio"), ("hazard_ratio", "hazard ratio"))


def _ratios(result, table, coef_col, se_col):
    """``(name, frame)`` of the model's ratios (:func:`model_tables`), or None: read off
    the model's own ratio target (``hazard_ratio`` or ``time_ratio`` in its
    ``target_names``), each of whose entries is exp(+-theta_k) of one parameter. A model
    whose table has no ``exp(coef)`` and that names no ``ratio_name`` (an autodiff loss:
    exp(theta) of a logistic regression is no hazard ratio) gets none."""
    from coxinfluence.audit.targets import resolve_target
    model = result.model
    names = tuple(model.target_names)
    found = [(t, word) for t, word in _RATIO_TARGETS if t in names]
    own = model.ratio_name
    if not found or se_col is None:
        return None
    tname, word = found[0]
    if tname == "hazard_ratio" and own is None and "exp(coef)" not in table.columns:
        return None
    coef = np.asarray(model.coef, dtype=np.float64)
    if len(table) != coef.size:
        return None
    target = resolve_target(tname)
    transform = None if result._resolved is None else result._resolved.transform
    if target.transform is None and transform is not None:
        target.transform = transform
    target = model.adapt_target(target)
    try:
        J = np.asarray(target.jacobian(model.fit), dtype=np.float64)
        value = np.asarray(target.value(model.fit, coef[None, :]), dtype=np.float64)[0]
    except Exception:       # a target the model offers but cannot evaluate here
        return None
    se = table[se_col].to_numpy(dtype=np.float64)
    rows, values, lower, upper = [], [], [], []
    for j in range(J.shape[0]):
        nz = np.flatnonzero(J[j])
        if nz.size != 1:
            return None
        k = int(nz[0])
        sign = np.sign(J[j, k])
        ends = np.exp(sign * (coef[k] + np.array([-Z95, Z95]) * se[k]))
        rows.append(table.index[k])
        values.append(value[j])
        lower.append(ends.min())
        upper.append(ends.max())
    name = own or word
    frame = pd.DataFrame({name: values, "lower 95%": lower, "upper 95%": upper},
                         index=pd.Index(rows, name=table.index.name,
                                         tupleize_cols=False))
    return name, frame


def _model_section(result):
    table, ratios, notes = model_tables(result)
    out = ["<h2>Model</h2>", _table(table)]
    if ratios is not None:
        name, frame = ratios
        out.append(f"<h3>{html.escape(name[0].upper() + name[1:])}s with 95% confidence "
                   "intervals</h3>")
        out.append(_table(frame))
    out.extend(f"<p class='note'>{line}</p>" for line in notes)
    return "".join(out)


def _notes_box(result):
    """The target's warnings (``result.target_notes``: a target time past the last event
    time, ...) in a box near the top, or ""."""
    notes = result.target_notes
    if not notes:
        return ""
    items = "".join(f"<li>{html.escape(str(n))}</li>" for n in notes)
    return (f"<div class='notes'><b>Warning about the target "
            f"{html.escape(result.target.name)}:</b><ul>{items}</ul></div>")


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


def _calibration_section(calibration):
    """The test set's calibration (a :class:`coxinfluence.evaluation.calibration.
    Calibration`): the risk groups' table and the plot."""
    cal = calibration
    return ("<h2>Calibration on the test set</h2><p>Predicted against observed risk at "
            f"t = {cal.time:g} (riskRegression's plotCalibration: {len(cal.table)} groups "
            "at the quantiles of the predicted risk, observed by Kaplan-Meier or "
            "Aalen-Johansen within each; the curve by nearest neighbours, bandwidth "
            f"{cal.bandwidth:.3g}).</p>" + _table(cal.table)
            + _img(figure_to_data_uri(cal.plot()), "calibration plot"))


def build_report(result, *, reid=None, exact=None, title=None, description="",
                 top_k=10, checks=True, unit_data=None, calibration=None) -> str:
    """The report (HTML text) for an :class:`~coxinfluence.audit.run.InfluenceResult`
    ``result`` (normally ``method="auto"``) of any model behind the seam, with optional
    Reid and exact results of the same target for the comparisons. ``title`` defaults to
    the model's ("Cox model influence audit", "Weibull AFT model influence audit",
    "Fine-Gray model influence audit"). ``checks``: the "Model checks" section (the PH
    test, deviance residuals) where the model has them. ``unit_data``: a DataFrame indexed
    by unit label, the "Their data" table of units with several rows (the CLI gives each
    subject's covariates at entry, its first row); default: the result's frame's columns
    (the training rows' for rows; none for subjects and clusters). ``calibration``: a
    :func:`coxinfluence.calibration` of the test set, shown with its table and plot."""
    header = result.model.report_header()
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
    notes = _notes_box(result)
    if notes:
        parts.append(notes)
    parts.append(_trust_section(result, header))
    parts.append(_model_section(result))
    unit = result.unit_name
    approx = result.approx if result.approx is not None else result
    parts.append(f"<h2>Top {top_k} influential {unit}</h2><p>Ranked by the likelihood "
                 "displacement 2[logL(&theta;&#770;) &minus; "
                 "logL(&theta;&#770;<sub>&minus;i</sub>)]: exact (by refit) where verified "
                 "(&#10003;), else its quadratic-form estimate from "
                 f"{html.escape(approx.method.upper())}. {_target_wording(result)}</p>")
    parts.extend(_top_tables(result, top_k, unit_data))
    parts.extend(_target_top_table(result, top_k))
    parts.append(_curves_section(result))
    parts.append("<h2>Index plots</h2>" + _index_caption(result)
                 + _img(figure_to_data_uri(result.plot_index()), "index plots"))
    if checks:
        parts.append(_checks_section(result, top_k))
    if calibration is not None:
        parts.append(_calibration_section(calibration))
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


#: a deviance residual beyond this (in absolute value) stands out (about 5% of a normal)
DEVIANCE_BOUND = 2.0
#: the PH test's level: the covariates whose p-value is below it are plotted
PH_LEVEL = 0.05


def model_checks(result, top_k=10):
    """The report's "Model checks" as data, for a model that has them (asked of the
    diagnostics' table by the fit's class, never by its family), else None: a dict with
    ``ph`` (``ci.ph_test`` of the fit, or None where the model has no PH test),
    ``ph_error`` (why it could not be computed, or None), ``failing`` (its terms with p <
    :data:`PH_LEVEL`), ``deviance`` (the deviance residual of each unit, indexed as
    ``result.loo_change``; None where the model has none or they do not match the units)
    and ``both`` (the units with |deviance residual| > :data:`DEVIANCE_BOUND` and a
    likelihood displacement among the ``top_k`` largest, largest displacement first)."""
    from coxinfluence.diagnostics import ph_test, residuals
    from coxinfluence.diagnostics.registry import residual_kinds
    fit = result.fit
    kinds = residual_kinds(fit)
    if "deviance" not in kinds and "scaledsch" not in kinds:
        return None
    out = {"ph": None, "ph_error": None, "failing": [], "deviance": None, "both": []}
    if "scaledsch" in kinds:            # the PH test is a test on the scaled Schoenfeld
        try:
            out["ph"] = ph_test(fit)
            p = out["ph"].table["p"].drop("GLOBAL")
            out["failing"] = [str(k) for k in p.index[p.to_numpy() < PH_LEVEL]]
        except (ValueError, TypeError, np.linalg.LinAlgError) as exc:
            out["ph_error"] = str(exc)
    if "deviance" in kinds:
        out["deviance"] = _unit_deviance(result, residuals)
    dev = out["deviance"]
    if dev is not None:
        ld = result.likelihood_displacement
        top = ld.dropna().nlargest(top_k).index
        out["both"] = [u for u in top if abs(dev.loc[u]) > DEVIANCE_BOUND]
    return out


def _unit_deviance(result, residuals):
    """Each unit's deviance residual (per row for rows, collapsed over a unit's rows as
    R's ``collapse=``), indexed as ``result.loo_change``, or None."""
    labels = result.loo_change.index
    try:
        with np.errstate(invalid="ignore"):     # R's NaN (collapsed over several events)
            if result.model.units_are_rows:
                dev = residuals(result.fit, kind="deviance")
            else:
                groups = None if result._resolved is None else result._resolved.groups
                dev = residuals(result.fit, kind="deviance",
                                collapse=True if groups is None else np.asarray(groups))
    except (ValueError, TypeError):
        return None
    dev = pd.Series(np.asarray(dev, dtype=np.float64).ravel(), index=dev.index,
                    name="deviance residual")
    if len(dev) != len(labels):
        return None
    if dev.index.equals(labels) or set(dev.index) == set(labels):
        return dev.reindex(labels)
    return None       # labels that do not match the units: never paired by position


def _checks_section(result, top_k):
    """The "Model checks" section (HTML), or "" for a model without checks."""
    checks = model_checks(result, top_k)
    if checks is None:
        return ""
    from .plotting import ph_test_plots, residual_index_plot
    unit = result.unit_name
    out = ["<h2>Model checks</h2>"]
    ph = checks["ph"]
    if ph is not None:
        out.append("<h3>Proportional hazards (R's cox.zph: score test, "
                   f"{html.escape(str(ph.transform))} transform of time)</h3>")
        out.append(_table(ph.table, digits=4))
        failing = checks["failing"]
        if failing:
            out.append(f"<p>Failing at {PH_LEVEL:.0%}: {html.escape(', '.join(failing))}. "
                       "Scaled Schoenfeld residuals against time, with a smooth and its "
                       "band of two standard errors (a flat line: a constant effect):</p>")
            out.append(_img(figure_to_data_uri(ph_test_plots(ph, failing)),
                            "proportional-hazards plots"))
        else:
            out.append(f"<p>No covariate fails at {PH_LEVEL:.0%}.</p>")
    elif checks["ph_error"] is not None:
        out.append("<p class='warn'>The proportional-hazards test could not be computed: "
                   f"{html.escape(checks['ph_error'])}</p>")
    dev = checks["deviance"]
    if dev is not None:
        out.append(f"<h3>Deviance residuals</h3><p>One per {html.escape(_units(unit, 1))}"
                   f" (R's residuals(fit, type = \"deviance\")), the 5 largest in absolute "
                   f"value labelled; dashed lines at &plusmn;{DEVIANCE_BOUND:g}.</p>")
        missing = int(dev.isna().sum())
        if missing:
            out.append(f"<p class='note'>{missing} {html.escape(_units(unit, missing))} "
                       "without a deviance residual (NA, as in R: the formula has no value "
                       "for a sum over several events).</p>")
        out.append(_img(figure_to_data_uri(residual_index_plot(dev, unit=unit)),
                        "deviance residuals"))
        both = checks["both"]
        words = (f"{unit} with |deviance residual| &gt; {DEVIANCE_BOUND:g} and a likelihood "
                 f"displacement among the {top_k} largest")
        if both:
            table = pd.DataFrame({"displacement": result.likelihood_displacement.loc[both],
                                  "deviance residual": dev.loc[both]})
            out.append(f"<p><b>Standing out in both</b> ({words}): "
                       f"{html.escape(', '.join(map(str, both)))}.</p>")
            out.append(_table(table))
        else:
            out.append(f"<p>No {words}.</p>")
    return "".join(out)


def _curves_section(result):
    """The prediction curves of a model that has them (a curves part registered for its
    fit's class, :mod:`coxinfluence.families.curves`: the absolute risk of a cause, the
    state occupancy probabilities) of the reference patient, from the full fit and
    refitted without each of the top units, in one figure with its caption; "" for the
    other models."""
    from coxinfluence.families.curves import caption, curves_figure, curves_of
    curves = curves_of(result)
    if curves is None:
        return ""
    text = caption(result, curves)
    return (f"<h2>Prediction curves without the most influential {html.escape(result.unit_name)}"
            f"</h2><p>{html.escape(text)}</p>"
            + _img(figure_to_data_uri(curves_figure(curves)), "prediction curves"))


def _index_caption(result):
    """What the index plots show: the changes of the tables, exact refits marked."""
    n_exact = int(result.verified.sum())
    estimate = estimate_name(result)
    if n_exact == 0:
        return f"<p>Every change shown is a {html.escape(estimate)}.</p>"
    if n_exact == len(result.loo_change):
        return "<p>Every change shown is an exact refit.</p>"
    return (f"<p>The changes of the tables: the {n_exact} verified {result.unit_name} "
            "(orange, with a dot: <b>exact refit</b>), the others blue "
            f"(<b>{html.escape(estimate)}</b>).</p>")


def write_report(path, result, **kwargs):
    """Write :func:`build_report` to ``path`` (UTF-8); returns the path."""
    from pathlib import Path
    path = Path(path)
    path.write_text(build_report(result, **kwargs), encoding="utf-8")
    return path

"""The ``coxinfluence audit`` subcommand's inputs, read and checked with one-line errors
naming the file, the column and the rows: the data file (:func:`read_audit_csv`), the new
patients of ``--newdata`` (:func:`read_newdata`) and the target of ``--target``
(:func:`audit_target`, :func:`per_stratum`)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from coxinfluence.influence_functions.seam import label_text

__all__ = ["AuditData", "read_audit_csv", "read_csv", "read_newdata", "audit_target",
           "per_stratum", "rows_text"]


@dataclass
class AuditData:
    """The columns of the data file the audit uses, indexed by the patients' labels (the
    id column's values when ids are one row each, else the data row number 1, 2, ...).

    ``frame``: every used column (the top table's data); ``X``: the covariates as floats;
    ``outcome``: the ``--event`` column (Cox, AFT) or the ``--status`` column (Fine-Gray);
    the others the column of their option, or None."""

    frame: pd.DataFrame
    X: pd.DataFrame
    time: pd.Series
    outcome: pd.Series
    strata: pd.DataFrame | None = None
    weights: pd.Series | None = None
    start: pd.Series | None = None
    ids: pd.Series | None = None
    clusters: pd.Series | None = None
    cengroup: pd.Series | None = None


def rows_text(labels):
    """At most ten labels, comma-separated ("..." when there are more)."""
    shown = ", ".join(str(v) for v in labels[:10])
    return shown + (", ..." if len(labels) > 10 else "")


def _optional(value):
    return [value] if value else []


def read_audit_csv(args, *, outcome="event", subjects=False) -> AuditData:
    """The data file ``args.data`` read with the columns the options name. ``outcome``:
    the option naming the outcome column ("event", or "status" for Fine-Gray);
    ``subjects``: rows sharing an ``--id`` are one patient's (Cox intervals), so ids may
    repeat and the rows are labelled by their number."""
    path = args.data
    df = read_csv(path, "data file", "")
    out_col = getattr(args, outcome)
    if not args.time or not out_col:
        raise ValueError(f"--time and --{outcome} are required with a data file")
    if args.subjects and not args.id:
        raise ValueError("--subjects needs --id (the column naming each row's patient)")
    cengroup = getattr(args, "cengroup", None)
    extra = [c for c in (args.start, args.cluster, cengroup) if c]
    special = [args.time, out_col] + extra + (args.strata or []) + _optional(args.weights) \
        + _optional(args.id)
    covs = args.covariates or [c for c in df.columns if c not in special]
    if not covs:
        raise ValueError("no covariate columns left: pass --covariates")
    used = list(dict.fromkeys(special + covs))
    missing = [c for c in used if c not in df.columns]
    if missing:
        raise ValueError(f"missing column(s) {missing} in {path}; it has {list(df.columns)}")
    df = _labelled(df, args.id, subjects)
    numeric = [args.time, out_col] + covs + _optional(args.weights) + _optional(args.start)
    bad = non_numeric(df, numeric)
    if bad:
        raise ValueError(f"non-numeric column(s) {bad}: encode categories as 0/1 columns first")
    cols = list(dict.fromkeys(numeric + (args.strata or []) + _optional(args.cluster)
                              + _optional(cengroup) + (_optional(args.id) if subjects else [])))
    _refuse_missing_values(df, cols, args.id if args.id and not subjects else None)

    def column(name):
        return df[name] if name else None

    return AuditData(frame=df[cols].copy(), X=df[covs].astype(float), time=df[args.time],
                     outcome=df[out_col], strata=df[args.strata] if args.strata else None,
                     weights=column(args.weights), start=column(args.start),
                     ids=column(args.id) if subjects else None, clusters=column(args.cluster),
                     cengroup=column(cengroup))


def _labelled(df, id_col, subjects):
    """``df`` indexed by the id column when each id is one row, else by the data row
    number (1 = the first row below the header), the id column kept."""
    if id_col and df[id_col].isna().any():
        raise ValueError(f"id column {id_col!r} has missing values in data row(s) "
                         f"{rows_text(list(df.index[df[id_col].isna()] + 1))}")
    if id_col and not subjects:
        if df[id_col].duplicated().any():
            raise ValueError(f"id column {id_col!r} has duplicated values; if a patient has "
                             "several rows, add --start (intervals) or --subjects")
        return df.set_index(id_col)
    df = df.copy()
    df.index = pd.RangeIndex(1, len(df) + 1, name="row")
    return df


def _refuse_missing_values(df, cols, id_col):
    na = df[cols].isna().any(axis=1)
    if na.any():
        na_cols = [c for c in cols if df[c].isna().any()]
        label = f"{id_col} " if id_col else "data row(s) "
        raise ValueError(f"{int(na.sum())} row(s) with missing values (NaN) in columns "
                         f"{na_cols}: {label}{rows_text(list(df.index[na]))}; drop or "
                         "impute them")


def read_csv(path, what, prefix):
    """A CSV file with at least one data row, or a one-line ValueError naming the file
    (``what``: "data file" / "--newdata file"; ``prefix`` starts the other messages)."""
    if not path.is_file():
        raise ValueError(f"{what} not found: {path}")
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{prefix}{path} is empty (no header, no rows)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{prefix}{path} is not a readable CSV file: "
                         f"{str(exc).splitlines()[0]}") from None
    if len(df) == 0:
        raise ValueError(f"{prefix}{path} has a header but no data rows")
    return df


def non_numeric(df, cols):
    """The columns of ``cols`` that are neither numeric nor boolean."""
    return [c for c in cols if not (pd.api.types.is_numeric_dtype(df[c])
                                    or pd.api.types.is_bool_dtype(df[c]))]


def read_newdata(path, covariates, strata, id_col):
    """New patients for the lp / rr / survival targets: the model's covariate columns
    (and its stratum columns, for survival in a stratified model), rows labelled by the
    id column when the file has it."""
    df = read_csv(path, "--newdata file", "--newdata ")
    need = list(covariates) + [c for c in (strata or []) if c not in covariates]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"--newdata {path} lacks column(s) {missing}")
    bad = non_numeric(df, covariates)
    if bad:
        raise ValueError(f"--newdata {path}: non-numeric covariate column(s) {bad}")
    na = df[need].isna().any(axis=1)
    if na.any():
        raise ValueError(f"--newdata {path}: missing values in row(s) "
                         f"{rows_text([int(k) + 1 for k in df.index[na]])}")
    if id_col and id_col in df.columns:
        df = df.set_index(id_col)
    else:
        df.index = [f"new {k}" for k in range(1, len(df) + 1)]
    return df[need]


#: --target values that need no new patients: coefficients, hazard ratios, time ratios
PARAMETER_TARGETS = ("coef", "hr", "tr")
TARGET_HELP = ("coef, hr, tr, lp, rr, survival:T1,T2,..., quantile[:P1,P2,...] or "
               "cif:T1,T2,...")


def audit_target(spec, X, newdata=None, *, family="cox", strata=None):
    """The target of ``--target spec`` for a model of ``family`` ("cox", "aft",
    "fine_gray"): coef, hr, tr (the model's parameters); lp, rr (Cox), survival:T1,T2,...
    (Cox's ``Survival``, an AFT model's ``AFTSurvival``), quantile[:P1,...] (an AFT model's
    survival quantiles, default the median) and cif:T1,T2,... (a Fine-Gray model's
    cumulative incidence) of the patients of ``newdata``, by default of the average patient
    (the covariate means; once per stratum of a stratified AFT or Fine-Gray model,
    ``strata`` its stratum column). Whether the model offers the target is the seam's to
    say (``ci.influence`` refuses a target not in its ``target_names``)."""
    from coxinfluence.audit import targets as T
    from coxinfluence.audit.aft_targets import AFTSurvival, SurvivalQuantile
    from coxinfluence.audit.fine_gray_targets import CumulativeIncidence
    patients = X.mean().to_frame("mean").T if newdata is None else newdata
    spec = spec.strip().lower()
    if spec in PARAMETER_TARGETS:
        if newdata is not None:
            raise ValueError("--newdata applies to the lp, rr and survival targets, quantile "
                             f"and cif, not --target {spec}")
        return T.resolve_target(spec)
    kind, colon, values = spec.partition(":")
    if kind in ("lp", "rr") and not colon:
        return (T.LinearPredictor if kind == "lp" else T.RelativeRisk)(patients)
    if kind == "survival" and values and family == "aft":
        X_new, labels = stratified_patients(patients, newdata, strata)
        return AFTSurvival(X_new, _numbers(spec), strata=labels)
    if kind == "survival" and values:
        return T.Survival(patients, _numbers(spec))
    if kind == "quantile":
        X_new, labels = stratified_patients(patients, newdata, strata)
        return SurvivalQuantile(X_new, _numbers(spec) if values else [0.5], strata=labels)
    if kind == "cif" and values:
        X_new, labels = stratified_patients(patients, newdata, strata)
        return CumulativeIncidence(X_new, _numbers(spec), strata=labels)
    raise ValueError(f"--target must be {TARGET_HELP}; got {spec!r}")


def _numbers(spec):
    """The numbers after the colon of ``spec`` ("survival:10,20" -> [10.0, 20.0])."""
    kind, _, values = spec.partition(":")
    try:
        return [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--target {kind}:... needs numbers separated by commas; got "
                         f"{spec!r}") from None


def stratified_patients(patients, newdata, strata):
    """``(X_new, strata)`` for an AFT or Fine-Gray model's new-patient target: without
    strata the patients as they are; the patients of ``newdata`` with their stratum
    column's labels;
    the average patient once per stratum (labels as in the training data, sorted; a
    tuple per row for several stratum columns, as ``fit_aft`` and ``fit_fine_gray`` label
    them)."""
    if strata is None:
        return patients, None
    if newdata is not None:
        return newdata, _stratum_labels(newdata, strata.columns)
    labels = sorted(set(_stratum_labels(strata, strata.columns)))
    rows = pd.concat([patients] * len(labels), ignore_index=True)
    rows.index = [f"mean, stratum {label_text(lab)}" for lab in labels]
    return rows, labels


def _stratum_labels(frame, columns):
    """Each row's stratum: its value of the one stratum column, or the tuple of several."""
    if len(columns) == 1:
        return list(frame[columns[0]])
    return list(frame[list(columns)].itertuples(index=False, name=None))


def per_stratum(target, fit):
    """A survival target of the average patient becomes one curve per stratum (each
    stratum of a stratified Cox model has its own baseline hazard)."""
    from coxinfluence.audit import targets as T
    labels = fit.data.strata_labels
    if not isinstance(target, T.Survival) or labels is None or len(labels) < 2:
        return target
    mean = target.X_new
    rows = pd.concat([mean] * len(labels), ignore_index=True)
    rows.index = [f"mean, stratum {label_text(lab)}" for lab in labels]
    return T.Survival(rows, target.times, strata=list(labels))

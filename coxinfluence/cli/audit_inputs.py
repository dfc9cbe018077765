"""The ``coxinfluence audit`` subcommand's inputs, read and checked with one-line errors
naming the file, the column and the rows: the data file (:func:`read_audit_csv`), the new
patients of ``--newdata`` (:func:`read_newdata`) and the target of ``--target``
(:func:`audit_target`, :func:`per_stratum`). Each column has one role: an outcome column
(time, event / status, start) or an id, strata, weights or cluster column is never a
covariate, and without ``--covariates`` a column that looks like an identifier
(:func:`identifier_reason`) is refused rather than silently used as one; the covariates
and the roles are said in one sentence (:func:`columns_text`) in the summary and the
report. What differs between model families (the outcome column's option, the family's own
role columns, how a target is built) is read from the command line's table of families
(:mod:`coxinfluence.cli.family_registry`), never decided here."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coxinfluence.cli.family_registry import (
    PARAMETER_TARGETS,
    TargetRequest,
    cli_family,
    kind_owners,
    target_help,
    target_kind,
)

__all__ = ["AuditData", "TestSet", "read_audit_csv", "read_csv", "read_newdata",
           "read_test", "audit_target", "TargetPlan", "target_plan", "rows_text",
           "columns_text", "identifier_reason", "csv_rows", "entry_rows"]


@dataclass
class AuditData:
    """The columns of the data file the audit uses, indexed by the patients' labels (the
    id column's values when ids are one row each, else the data row number 1, 2, ...).

    ``frame``: every used column (the top table's data); ``X``: the covariates as floats;
    ``outcome``: the column of the family's outcome option (``--event``; Fine-Gray's
    ``--status``); ``family_columns``: the family's own role columns (option -> column,
    e.g. Fine-Gray's ``cengroup``), those given; the others the column of their option, or
    None; ``roles``: (role, column) for each column given a role other than covariate
    ("time", the outcome's option, "start", "strata", "weights", "id", "cluster", the
    family's own), as :func:`columns_text` lists them; ``outcome_codes``: an outcome
    column of labels coded by the family (label -> code), else None. ``frame`` keeps the
    outcome column as the file has it."""

    frame: pd.DataFrame
    X: pd.DataFrame
    time: pd.Series
    outcome: pd.Series
    strata: pd.DataFrame | None = None
    weights: pd.Series | None = None
    start: pd.Series | None = None
    ids: pd.Series | None = None
    clusters: pd.Series | None = None
    family_columns: dict = field(default_factory=dict)
    roles: list = field(default_factory=list)
    #: an outcome column of labels: label -> the code the fit reads (the family's
    #: ``encode_outcome``: Fine-Gray's status labels); None for a numeric column
    outcome_codes: dict | None = None


def columns_text(data: AuditData) -> str:
    """The covariates and the other columns' roles, in one sentence for the summary and the
    report: "Covariates (2): age, x. Roles: time = time, event = status, id = pid." """
    covs = list(data.X.columns)
    text = f"Covariates ({len(covs)}): {', '.join(str(c) for c in covs)}."
    roles: dict[str, list] = {}
    for role, col in data.roles:
        roles.setdefault(role, []).append(str(col))
    if roles:
        text += " Roles: " + ", ".join(f"{r} = {', '.join(c)}" for r, c in roles.items()) + "."
    if data.outcome_codes:
        text += (" Labels of the outcome column as the model's codes: "
                 + ", ".join(f"{k} = {v}" for k, v in data.outcome_codes.items()) + ".")
    return text


def rows_text(labels):
    """At most ten labels, comma-separated ("..." when there are more)."""
    shown = ", ".join(str(v) for v in labels[:10])
    return shown + (", ..." if len(labels) > 10 else "")


def entry_rows(data: AuditData) -> pd.DataFrame | None:
    """Each subject's covariates at entry, for the report's "Their data" table.

    With subjects (rows sharing an ``--id``, :func:`read_audit_csv`'s ``subjects``) and no
    ``--cluster``: the subject's first row (the earliest ``--start``, else the first in the
    file), its covariates, strata and weights (the columns without an outcome, id or
    cluster role), indexed by the id, sorted as the audit's units.

    Parameters
    ----------
    data : AuditData
        The data file's columns.

    Returns
    -------
    DataFrame or None
        One row per subject; None when the units are rows or clusters.

    Examples
    --------
    >>> frame = pd.DataFrame({"id": [7, 7, 3], "start": [2.0, 0.0, 0.0],
    ...                       "stop": [5.0, 2.0, 4.0], "event": [1, 0, 0],
    ...                       "x": [1.0, 0.0, 9.0]})
    >>> data = AuditData(frame, frame[["x"]], frame["stop"], frame["event"],
    ...                  start=frame["start"], ids=frame["id"],
    ...                  roles=[("time", "stop"), ("event", "event"), ("start", "start"),
    ...                         ("id", "id")])
    >>> entry_rows(data)
          x
    id
    3   9.0
    7   0.0
    """
    if data.ids is None or data.clusters is not None:
        return None
    covariates = set(data.X.columns)
    role_columns = {col for role, col in data.roles
                    if role not in ("strata", "weights") and col not in covariates}
    keep = [c for c in data.frame.columns if c not in role_columns]
    order = (np.arange(len(data.frame)) if data.start is None
             else np.argsort(data.start.to_numpy(), kind="stable"))
    rows = data.frame.iloc[order]
    ids = data.ids.iloc[order].to_numpy()
    first = ~pd.Series(ids).duplicated().to_numpy()
    out = rows.loc[first, keep].set_axis(pd.Index(ids[first], name=data.ids.name))
    return out.sort_index()


def _refuse_one_two_coding(values: pd.Series, column, prefix):
    """An event column (``--event``: 1 = event, 0 = censored) holding exactly the values
    1 and 2 is R's ``Surv`` coding (1 = censored, 2 = event): a one-line error naming the
    column (``prefix`` names the file when it is not the data file)."""
    v = pd.unique(values.dropna())
    if len(v) == 2 and set(v.tolist()) == {1, 2}:
        raise ValueError(f"{prefix}the event column {column!r} is coded 1/2 (as R's Surv: "
                         "1 = censored, 2 = event?); recode as 0/1 (1 = event, 0 = "
                         "censored)")


def csv_rows(message: str, data: AuditData, path) -> str:
    """A library error ``message`` with the rows it names said as rows of the CSV file.

    The library names rows by their index labels ("3 row(s) (index label(s) 4, 8, 9)"):
    the command line's labels are the data row numbers (counted from 1, the first row
    below the header) or the ``--id`` column's values (:func:`read_audit_csv`), so they
    become "data row(s) 4, 8, 9 of data.csv (...)" or "id 'p3', 'p7'".

    Parameters
    ----------
    message : str
        The library's message.
    data : AuditData
        The data the message is about (its frame's index says what labels the rows).
    path : pathlib.Path
        The data file.

    Returns
    -------
    str
        The message with each "(index label(s) ...)" replaced.

    Examples
    --------
    >>> from pathlib import Path
    >>> frame = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.RangeIndex(1, 3, name="row"))
    >>> data = AuditData(frame, frame, frame["x"], frame["x"])
    >>> csv_rows("negative in 1 row(s) (index label(s) 2)", data, Path("d.csv"))
    'negative in 1 row(s) (data row(s) 2 of d.csv, counted from 1: the first row below the header)'
    """
    name = data.frame.index.name

    def rows(m):
        if name == "row":
            return (f"(data row(s) {m.group(1)} of {path.name}, counted from 1: the first row "
                    "below the header)")
        return f"({name} {m.group(1)})"

    return re.sub(r"\(index label\(s\) ([^()]*)\)", rows, message)


def _optional(value):
    return [value] if value else []


def read_audit_csv(args, *, outcome="event", subjects=False, stratum_covariates=False,
                   columns=(), covariate_columns=(), outcome_labels=False) -> AuditData:
    """The data file ``args.data`` read with the columns the options name. ``outcome``:
    the option naming the outcome column (a family's ``outcome``: "event", Fine-Gray's
    "status"); ``subjects``: rows sharing an ``--id`` are one patient's (Cox intervals), so
    ids may repeat and the rows are labelled by their number; ``stratum_covariates``:
    whether a ``--strata`` column may also be a covariate (an AFT model's strata are
    scales; a Cox or Fine-Gray model's are baseline hazards, in which a covariate constant
    within each stratum has no coefficient); ``columns``: the options naming the family's
    own role columns (Fine-Gray's "cengroup"), ``covariate_columns`` those that may also be
    covariates; ``outcome_labels``: whether the outcome column may hold labels (the
    family codes them: its ``encode_outcome``)."""
    path = args.data
    df = read_csv(path, "data file", "")
    options = vars(args)
    out_col = options[outcome]
    if not args.time or not out_col:
        raise ValueError(f"--time and --{outcome} are required with a data file")
    if args.subjects and not args.id:
        raise ValueError("--subjects needs --id (the column naming each row's patient)")
    own = {name: options[name] for name in columns if options[name]}
    roles = [(role, col) for role, col in
             [("time", args.time), (outcome, out_col), ("start", args.start)]
             + [("strata", c) for c in (args.strata or [])]
             + [("weights", args.weights), ("id", args.id), ("cluster", args.cluster)]
             + list(own.items()) if col]
    outcome_roles = ("time", outcome, "start")
    _refuse_outcome_in_other_roles(roles, outcome_roles)
    special = [col for _, col in roles]
    if args.covariates:
        covs = list(args.covariates)
        may_be_covariates = set(covariate_columns) | ({"strata"} if stratum_covariates
                                                     else set())
        _refuse_role_covariates(covs, [(r, c) for r, c in roles
                                       if r not in may_be_covariates], outcome_roles)
    else:
        covs = [c for c in df.columns if c not in special]
    if not covs:
        raise ValueError("no covariate columns left: pass --covariates")
    used = list(dict.fromkeys(special + covs))
    missing = [c for c in used if c not in df.columns]
    if missing:
        raise ValueError(f"missing column(s) {missing} in {path}; it has {list(df.columns)}")
    inferred = not args.covariates
    if inferred:
        numeric_covs = [c for c in covs if not non_numeric(df, [c])]
        identifiers = _identifiers_text(df, numeric_covs, args.id)
        if identifiers:
            raise ValueError(identifiers)
    df = _labelled(df, args.id, subjects)
    numeric = ([args.time] + ([] if outcome_labels else [out_col]) + covs
               + _optional(args.weights) + _optional(args.start))
    bad = non_numeric(df, numeric)
    if bad:
        identifiers = _identifiers_text(df, [c for c in bad if c in covs], args.id) \
            if inferred else None
        raise ValueError(f"non-numeric column(s) {bad}: encode categories as 0/1 columns first"
                         + (f"; {identifiers}" if identifiers else ""))
    if outcome == "event":
        _refuse_one_two_coding(df[out_col], out_col, "")
    cols = list(dict.fromkeys([args.time, out_col] + numeric + (args.strata or [])
                              + _optional(args.cluster)
                              + list(own.values()) + (_optional(args.id) if subjects else [])))
    _refuse_missing_values(df, cols, args.id if args.id and not subjects else None)

    def column(name):
        return df[name] if name else None

    return AuditData(frame=df[cols].copy(), X=df[covs].astype(float), time=df[args.time],
                     outcome=df[out_col], strata=df[args.strata] if args.strata else None,
                     weights=column(args.weights), start=column(args.start),
                     ids=column(args.id) if subjects else None, clusters=column(args.cluster),
                     family_columns={k: df[c] for k, c in own.items()}, roles=roles)


#: how a message names a role's column, and what a column cannot be both of
_ROLE_WORDS = {"strata": ("a --strata column (a baseline hazard per stratum: a covariate "
                          "constant within each stratum has no coefficient)", "a stratum"),
               "weights": ("the --weights column", "the case weights"),
               "id": ("the --id column", "the id"),
               "cluster": ("the --cluster column", "the cluster")}


def _refuse_outcome_in_other_roles(roles, outcome_roles):
    """An outcome column (``outcome_roles``: time, event / status, start) has no other
    role."""
    for k, (role, col) in enumerate(roles):
        if role not in outcome_roles:
            continue
        for other, col2 in roles[k + 1:]:
            if col2 == col:
                raise ValueError(f"{col!r} is the outcome column (--{role}): it cannot also be "
                                 f"the --{other} column")


def _refuse_role_covariates(covs, roles, outcome_roles):
    """``--covariates`` names no column twice and no column of ``roles`` (outcome, id,
    strata, weights, cluster, a family's own role columns: those that may be covariates,
    as a censoring-group column in crr, are not in ``roles``)."""
    twice = [c for c in dict.fromkeys(covs) if covs.count(c) > 1]
    if twice:
        raise ValueError(f"--covariates names {twice[0]!r} twice")
    for role, col in roles:
        if col not in covs:
            continue
        if role in outcome_roles:
            what, both = f"the outcome column (--{role})", "the outcome"
        else:
            what, both = _ROLE_WORDS.get(role, (f"the --{role} column", f"the {role}"))
        raise ValueError(f"{col!r} is {what}: a column cannot be both {both} and a covariate; "
                         "remove it from --covariates")


#: column names of identifiers (lower case, without spaces, '_', '-', '.')
ID_NAMES = frozenset({
    "id", "ids", "pid", "ptid", "patient", "patientid", "patientno", "patientnr",
    "patientnumber", "subject", "subjectid", "subjid", "subj", "subjectno", "participant",
    "participantid", "caseid", "recordid", "rowid", "studyid", "mrn", "identifier"})


def _id_like_name(name) -> bool:
    """Whether a column's name says it identifies patients: one of :data:`ID_NAMES`, or
    ending in a separate "id" ("visit_id", "study id", "patientId", "caseID")."""
    name = str(name)
    squashed = re.sub(r"[\s_.\-]", "", name).lower()
    return (squashed in ID_NAMES or re.search(r"[\s_.\-]id$", name, re.I) is not None
            or re.search(r"[a-z]I[Dd]$", name) is not None)


def identifier_reason(name, values: pd.Series) -> str | None:
    """Why the column ``name`` with ``values`` looks like an identifier rather than a
    covariate ("named like one", "its values are distinct integers, one per row", "... distinct
    labels, one per row"), or None."""
    if _id_like_name(name):
        return "named like one"
    if len(values) < 3 or values.isna().any() or not values.is_unique:
        return None
    if pd.api.types.is_bool_dtype(values):
        return None
    if pd.api.types.is_numeric_dtype(values):
        v = values.to_numpy(dtype=float)
        if np.all(np.isfinite(v)) and np.all(v == np.round(v)):
            return "its values are distinct integers, one per row"
        return None
    return "its values are distinct labels, one per row"


def _identifiers_text(df, covs, id_col):
    """Covariates inferred (no ``--covariates``): the refusal of those of ``covs`` that
    look like identifiers, naming each and why, and what to pass (``--id``, unless
    ``id_col`` is given; ``--covariates``); None when none does."""
    found = [(c, r) for c in covs if (r := identifier_reason(c, df[c])) is not None]
    if not found:
        return None
    names = ", ".join(repr(c) for c, _ in found)
    why = "; ".join(f"{c!r}: {r}" for c, r in found) if len(found) > 1 else found[0][1]
    subject = f"columns {names} look like identifiers" if len(found) > 1 else \
        f"column {names} looks like an identifier"
    first = found[0][0]
    first = first if " " not in str(first) else repr(first)
    todo = ("pass --covariates naming the covariates (a column named there is used as given)"
            " or remove the column from the file" if id_col else
            f"pass --id {first} if it labels the patients, or --covariates naming the "
            "covariates (a column named there is used as given)")
    return (f"{subject} ({why}); without --covariates every column without a role would be "
            f"a covariate: {todo}")


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


@dataclass(frozen=True)
class TestSet:
    """The test patients of ``--test``: covariates ``X`` (the training covariate columns,
    and the stratum columns of a stratified model), follow-up ``time`` and ``outcome``
    (the column of the family's outcome option: events, or Fine-Gray's causes).

    Examples
    --------
    >>> from coxinfluence.cli.audit_inputs import TestSet
    >>> t = TestSet(pd.DataFrame({"age": [50.0]}), pd.Series([3.0]), pd.Series([1]))
    >>> list(t.X.columns)
    ['age']
    """

    X: pd.DataFrame
    time: pd.Series
    outcome: pd.Series


TestSet.__test__ = False        # not a pytest test


def read_test(path, data: AuditData, outcome) -> TestSet:
    """The test patients of ``--test`` (a CSV file with the training file's covariate,
    stratum, time and outcome columns; ``outcome``: the family's outcome option), rows
    labelled by the ``id`` column's values when the file has it, else "test 1", ...; a
    one-line ValueError naming the file and the columns otherwise."""
    df = read_csv(path, "--test file", "--test ")
    roles = dict(data.roles)
    time_col, out_col = roles["time"], roles[outcome]
    covs = [str(c) for c in data.X.columns]
    strata = [] if data.strata is None else [c for c in data.strata.columns if c not in covs]
    need = covs + strata + [time_col, out_col]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"--test {path} lacks column(s) {missing}; it needs the training "
                         f"file's covariate, time and {outcome} columns {need}")
    codes = data.outcome_codes
    bad = non_numeric(df, covs + [time_col] + ([] if codes else [out_col]))
    if bad:
        raise ValueError(f"--test {path}: non-numeric column(s) {bad}")
    na = df[need].isna().any(axis=1)
    if na.any():
        raise ValueError(f"--test {path}: missing values in data row(s) "
                         f"{rows_text([int(k) + 1 for k in df.index[na]])}")
    if outcome == "event":
        _refuse_one_two_coding(df[out_col], out_col, f"--test {path}: ")
    id_col = roles.get("id")
    if id_col is not None and id_col in df.columns and df[id_col].is_unique:
        df = df.set_index(id_col)
    else:
        df.index = [f"test {k}" for k in range(1, len(df) + 1)]
    X = df[covs].astype(float)
    if strata:
        X = pd.concat([X, df[strata]], axis=1)
    outcome_values = df[out_col]
    if codes:
        # the data file's labels, coded as the model reads them
        labels = outcome_values.astype(str)
        unknown = sorted(set(labels) - set(codes))
        if unknown:
            raise ValueError(f"--test {path}: the {outcome} column {out_col!r} holds labels "
                             f"the data file's has not: {unknown}; its labels are "
                             f"{list(codes)}")
        outcome_values = labels.map(codes).astype(int)
    return TestSet(X, df[time_col].astype(float), outcome_values)


@dataclass(frozen=True)
class TargetPlan:
    """The target of ``--target``, and what becomes of it once the model is fitted.

    ``target``: the target as built from the options; ``kind``: its
    :class:`~coxinfluence.cli.family_registry.TargetKind` (None for the parameters' targets
    coef, hr, tr); ``request``: what was asked for."""

    target: object
    kind: object = None
    request: TargetRequest | None = None

    def finish(self, fit):
        """The target for the fitted model ``fit`` (the kind's ``after_fit``, if any: a
        stratified Cox model's survival at the covariate means once per stratum)."""
        if self.kind is None or self.kind.after_fit is None:
            return self.target
        return self.kind.after_fit(self.target, fit, self.request)


def target_plan(spec, X, newdata=None, *, family="cox", strata=None, test=None,
                options=None, target_options=None, model_words=None) -> TargetPlan:
    """The :class:`TargetPlan` of ``--target spec`` for a model of the family named
    ``family`` (a name of the table, :mod:`~coxinfluence.cli.family_registry`): coef, hr,
    tr (the model's parameters); lp, rr, survival:T1,T2,..., quantile[:P1,...] (default the
    median), cif:T1,T2,... of the patients of ``newdata``, by default at the covariate means,
    built as the family's table entry says (``strata``: the data's stratum columns). Whether
    the model offers the target is the seam's to say (``ci.influence`` refuses a target not
    in its ``target_names``). The test metrics brier:T1,..., ibs:T1,..., auc:T1,...,
    c[:harrell|uno] are of the patients of ``test`` (a :class:`TestSet`, ``--test``), with
    the family's ``options`` (Fine-Gray's cause). ``target_options``: the family's options
    of its own target kinds (``CliFamily.target_options``: a cause, states of interest);
    ``model_words``: the model in words for the refusal of another family's own target kind
    (default "the <family> model")."""
    entry = cli_family(family)
    patients = X.mean().to_frame("mean").T if newdata is None else newdata
    spec = spec.strip().lower()
    if spec in PARAMETER_TARGETS:
        if test is not None:
            raise ValueError(f"--test applies to the test metrics (brier, ibs, auc, c), not "
                             f"--target {spec}")
        if newdata is not None:
            raise ValueError("--newdata applies to the lp, rr and survival targets, quantile "
                             f"and cif, not --target {spec}")
        return TargetPlan(PARAMETER_TARGETS[spec]())
    kind, colon, values = spec.partition(":")
    how = target_kind(entry, kind)
    owners = kind_owners(kind) if how is None else []
    if owners:
        words = model_words or f"the {family} model"
        raise ValueError(f"--target {spec} applies to {' or '.join(owners)}, not to {words}")
    if (how is None or (colon and how.values == "none")
            or (not values and how.values == "required")
            or (values and how.words and values not in how.words)):
        raise ValueError(f"--target must be {target_help()}; got {spec!r}")
    if how.needs_test and test is None:
        raise ValueError(f"--target {spec} is a metric of test patients: give --test "
                         "TEST.csv (the training file's covariate, time and outcome columns)")
    if how.needs_test and newdata is not None:
        raise ValueError(f"--newdata does not apply to --target {spec}: its patients are "
                         "those of --test")
    if not how.needs_test and test is not None:
        raise ValueError(f"--test applies to the test metrics (brier, ibs, auc, c), not "
                         f"--target {spec}")
    word = values if how.words else None
    numbers = _numbers(spec) if values and not how.words else None
    request = TargetRequest(kind, numbers, patients, newdata, strata, test=test, word=word,
                            options=dict(options or {}),
                            target_options=dict(target_options or {}))
    return TargetPlan(how.build(request), how, request)


def audit_target(spec, X, newdata=None, *, family="cox", strata=None):
    """The target of ``--target spec`` for a model of the family named ``family``, as built
    before the fit (:func:`target_plan`'s ``target``)."""
    return target_plan(spec, X, newdata, family=family, strata=strata).target


def _numbers(spec):
    """The numbers after the colon of ``spec`` ("survival:10,20" -> [10.0, 20.0])."""
    kind, _, values = spec.partition(":")
    try:
        return [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--target {kind}:... needs numbers separated by commas; got "
                         f"{spec!r}") from None

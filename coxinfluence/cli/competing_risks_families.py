"""The command line's entries of the cause-specific Cox models and the Markov multi-state
Cox model (issue 47, item 4): ``coxinfluence audit --model cause-specific`` and
``coxinfluence audit --model multistate``, two entries of the table of
:mod:`coxinfluence.cli.family_registry` (which imports this module, so they register when
the command line is loaded). Nothing else of the command line knows them.

``--model cause-specific`` (:func:`coxinfluence.fit_cause_specific`, R's
``riskRegression::CSC``): ``--status S`` as Fine-Gray reads it (0 = censored, 1, 2, ... the
causes, or labels with ``--cencode``); ``--cause K`` is optional, the cause of ``--target
absolute-risk:T1,T2,...`` and of the report's absolute-risk curves (default 1, the first
cause; the fit carries it as its ``cause``); ``--strata``, ``--weights``, ``--start``
(delayed entry, R's ``Surv(start, stop, status)``), ``--id`` (with ``--start`` or
``--subjects``: a subject's rows, deleted together), ``--cluster`` and ``--ties`` as for a
Cox model; ``--event`` and ``--cengroup`` (crr's censoring groups) are refused. The test
metrics (``--test``: brier, ibs, auc) score the absolute risk of ``--cause`` (default 1);
``--target c`` is refused.

``--model multistate`` (:func:`coxinfluence.fit_multistate`, R's ``coxph(Surv(tstart,
tstop, state) ~ ., id = id)``): ``--start`` and ``--time`` the interval, ``--state`` the
state entered at its end (0 = none: censored or a change of covariates; a column of labels
names its censored rows with ``--cencode``, default ``0`` or ``censored``), ``--id`` the
subject (required: the units of the audit), ``--initial-state COL`` the column of each
row's state at its start (R's ``istate``: a subject's first row says where it starts;
without it every subject starts in R's ``(s0)``), ``--weights`` case weights and
``--strata`` a baseline hazard per stratum for every transition (R's ``+ strata(g)``), as
``fit_multistate`` takes them. ``--target state-probability:T1,T2,...`` is
``ci.targets.StateProbability`` of the reference patient(s) at those times (the
``--newdata`` patients, else the covariate means, once per stratum of a stratified
model): by default every state's probability (R's ``pstate``; they sum to one), or the
states named by ``--state-of-interest NAME[,NAME...]`` (the names as ``fit.states`` has
them: the states named only as initial states, then the states entered, sorted).
``--cluster`` (the units are the subjects) and ``--event`` are refused.
"""
from __future__ import annotations

import dataclasses

import pandas as pd

import coxinfluence as ci
from coxinfluence.cli.family_registry import (
    CliFamily,
    TargetKind,
    encode_status,
    register_cli_family,
)

__all__ = ["CAUSE_SPECIFIC", "MULTISTATE"]


# ------------------------------------------------------------------- cause-specific

def _check_cause_specific(args):
    if args.demo:
        raise ValueError("--demo (GBSG2) has no competing causes; give a DATA.csv file with "
                         "--status")


def _fit_cause_specific(data, args):
    """``ci.fit_cause_specific`` of the file's columns; ``--cause`` becomes the fit's
    ``cause`` (the absolute risk's and the report's curves')."""
    fit = ci.fit_cause_specific(data.X, data.time, data.outcome, ties=args.ties or "efron",
                                strata=data.strata, weights=data.weights, entry=data.start,
                                id=data.ids)
    if args.cause is None:
        return fit
    if args.cause not in fit.causes:
        label = vars(args).get("cause_label", args.cause)
        raise ValueError(f"--cause {label}: no events of that cause in the status column; "
                         f"the causes are {fit.causes} (0 = censored)")
    return dataclasses.replace(fit, cause=args.cause)


def _cause_specific_subjects(args):
    """As Cox: rows sharing an ``--id`` are one patient's with ``--start`` or
    ``--subjects``."""
    return args.start is not None or bool(args.subjects)


def _absolute_risk(r):
    """``ci.targets.AbsoluteRisk`` of the reference patients (``--newdata``, else the
    covariate means, once per stratum of a stratified fit) for ``--cause`` (None: the
    fit's, else 1)."""
    X_new, labels = r.stratified()
    return ci.targets.AbsoluteRisk(X_new, r.numbers, cause=r.target_options.get("cause"),
                                   strata=labels)


def _cause_options(args):
    """The cause of the absolute risk and the test metrics: ``--cause`` (its code), else
    None for the target (the fit's cause, else 1)."""
    return {} if args.cause is None else {"cause": args.cause}


def _no_concordance(r):
    raise ValueError("--target c (the concordance of a survival prediction) is not defined "
                     "for cause-specific models; their test metrics are brier, ibs and auc of "
                     "the absolute risk of --cause (default 1)")


def _metric_options(args):
    """The test metrics score the absolute risk of ``--cause``, else of cause 1."""
    return {"cause": 1 if args.cause is None else args.cause}


CAUSE_SPECIFIC = register_cli_family(CliFamily(
    "cause_specific", _fit_cause_specific, models=("cause-specific",),
    help="cause-specific: a Cox model per cause of --status (R's riskRegression::CSC; "
         "--cause K optional, the cause of absolute-risk)",
    words=lambda args: "cause-specific Cox models",
    outcome="status", reads=("status", "cause", "cencode", "cengroup"),
    refused={"event": "--event (cause-specific models read --status: 0 censored, 1, 2, ... "
                      "the causes)",
             "cengroup": "--cengroup (crr's censoring groups: cause-specific Cox models have "
                         "no censoring weights)"},
    check=_check_cause_specific, subjects=_cause_specific_subjects,
    encode_outcome=encode_status, metric_options=_metric_options,
    target_options=_cause_options,
    targets={"absolute-risk": TargetKind(_absolute_risk, values="required"),
             "c": TargetKind(_no_concordance, values="optional", needs_test=True,
                             words=("harrell", "uno"))}))


# ------------------------------------------------------------------- multi-state

def _multistate_arguments(p):
    g = p.add_argument_group("multi-state (Markov, as R's coxph(Surv(tstart, tstop, state) "
                             "~ ., id = id); with --model multistate)")
    g.add_argument("--state", default=None,
                   help="state column: the state entered at --time (the row's stop), 0 = "
                        "none (censored, or a change of covariates), or labels (see "
                        "--cencode); each subject's rows run (--start, --time]")
    g.add_argument("--initial-state", default=None,
                   help="column of each row's state at its start (R's istate): a subject's "
                        "first row says where it starts (default: every subject starts in "
                        "R's '(s0)')")
    g.add_argument("--state-of-interest", default=None,
                   help="state name(s), comma-separated, of --target state-probability "
                        "(default: every state)")


def _check_multistate(args):
    if args.demo:
        raise ValueError("--demo (GBSG2) has no states; give a DATA.csv file with --start, "
                         "--time, --state and --id")
    missing = [f"--{o}" for o in ("start", "id") if vars(args)[o] is None]
    if missing:
        raise ValueError(f"--model multistate needs {' and '.join(missing)}: rows (--start, "
                         "--time] of subjects (--id), --state the state entered at --time")
    if args.state_of_interest is not None and not str(args.target).lower().startswith(
            "state-probability"):
        raise ValueError("--state-of-interest applies to --target state-probability:T1,..., "
                         f"not --target {args.target}")


def _multistate_outcome(data, args):
    """The state column as :func:`coxinfluence.fit_multistate` reads it: numbers as they
    are (0 = censored); labels as R's factor, the censored rows' label (``--cencode``,
    default ``0`` or ``censored`` where the column has it) its first level."""
    state, column = data.outcome, dict(data.roles)["state"]
    if pd.api.types.is_numeric_dtype(state) or pd.api.types.is_bool_dtype(state):
        if args.cencode not in (None, "0"):
            raise ValueError(f"--cencode {args.cencode} applies to a state column of labels; "
                             f"{column!r} holds numbers (0 = censored)")
        return data
    labels = sorted(str(v) for v in pd.unique(state))
    present = ", ".join(repr(v) for v in labels)
    cencode = args.cencode
    if cencode is None:
        cencode = next((v for v in ("0", "censored") if v in labels), None)
        if cencode is None:
            raise ValueError(f"the state column {column!r} holds the labels {present}: "
                             "name the censored rows' label with --cencode LABEL")
    elif cencode not in labels:
        raise ValueError(f"--cencode {cencode} is not a label of the state column "
                         f"{column!r}: its labels are {present}")
    levels = [cencode] + [v for v in labels if v != cencode]
    coded = pd.Series(pd.Categorical(state.astype(str), categories=levels), index=state.index)
    return dataclasses.replace(data, outcome=coded)


def _fit_multistate(data, args):
    return ci.fit_multistate(data.X, data.start, data.time, data.outcome, data.ids,
                             ties=args.ties or "efron", weights=data.weights,
                             strata=data.strata,
                             istate=data.family_columns.get("initial_state"))


def _state_probability(r):
    """``ci.targets.StateProbability`` of the reference patients (``--newdata``, else the
    covariate means, once per stratum of a stratified fit) at the times, for
    ``--state-of-interest`` (default every state)."""
    X_new, labels = r.stratified()
    return ci.targets.StateProbability(X_new, r.numbers, state=r.target_options.get("state"),
                                       strata=labels)


def _state_options(args):
    if args.state_of_interest is None:
        return {}
    return {"state": [s.strip() for s in args.state_of_interest.split(",") if s.strip()]}


MULTISTATE = register_cli_family(CliFamily(
    "multistate", _fit_multistate, models=("multistate",),
    help="multistate: a Markov multi-state Cox model, a Cox model per transition (R's "
         "survival; --start, --time, --state, --id [--initial-state])",
    words=lambda args: "a multi-state model",
    outcome="state", reads=("cencode",), columns=("initial_state",),
    refused={"event": "--event (a multi-state model reads --state: the state entered at "
                      "--time, 0 = censored)",
             "cluster": "--cluster (a multi-state model's units are its subjects, --id)"},
    check=_check_multistate, subjects=lambda args: True,
    add_arguments=_multistate_arguments, encode_outcome=_multistate_outcome,
    target_options=_state_options,
    targets={"state-probability": TargetKind(_state_probability, values="required")}))

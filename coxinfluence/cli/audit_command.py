"""``coxinfluence audit``: fit a model to a CSV file, audit every patient's influence
(``ci.influence``: by default the VIF, verified by exact refits where the audit is read),
print a summary and write one self-contained HTML report (:mod:`coxinfluence.report`).

The model: Cox (the default, ``ci.fit_cox``); a parametric AFT model with ``--model
weibull|exponential|lognormal|loglogistic`` (``ci.fit_aft``, R's ``survreg``); the
Fine-Gray model for one cause with ``--status S --cause K [--cengroup COL]``
(``ci.fit_fine_gray``, R's ``cmprsk::crr``); cause-specific Cox models with ``--model
cause-specific --status S [--cause K]`` (``ci.fit_cause_specific``, R's ``CSC``); a Markov
multi-state Cox model with ``--model multistate --start A --time B --state S --id ID``
(``ci.fit_multistate``, R's survival). Options that do not apply to the model chosen
(``--model weibull --cause 1``, ``--event`` or ``--cluster`` for Fine-Gray, ``--ties``
for an AFT model) are refused with a one-line error naming them (exit status 2). What is
said about the model (report and summary) comes from the model's seam, never from here.
``--test TEST.csv --target brier:T1,... | ibs:T1,... | auc:T1,... | c[:uno]`` audits each
training patient's change of a test-set metric (issue 38); ``--no-checks`` leaves the
report's Model checks (PH test, deviance residuals) out.

The families are a table (:mod:`coxinfluence.cli.family_registry`): which options choose
and apply to a family, its fit, its outcome column and how its targets are built are read
from the family's entry; this module names no family (adding one to the command line is
one table entry).
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from coxinfluence.cli.audit_inputs import (
    AuditData,
    columns_text,
    csv_rows,
    entry_rows,
    read_audit_csv,
    read_newdata,
    read_test,
    target_plan,
)
from coxinfluence.cli.family_registry import CLI_FAMILIES, choose_family
from coxinfluence.cli.registry import Subcommand, add_progress_argument, register, show_progress


def _audit_arguments(p: argparse.ArgumentParser) -> None:
    families = list(CLI_FAMILIES.values())
    p.add_argument("data", nargs="?", type=Path, help="CSV file, one row per patient")
    p.add_argument("--demo", action="store_true",
                   help="audit lifelines' bundled GBSG2 data (embedded, no download)")
    p.add_argument("--model", choices=[m for f in families for m in f.models], default=None,
                   help="; ".join(f.help for f in families if f.help))
    p.add_argument("--start", default=None,
                   help="entry-time column: each row is at risk on (start, time] (R's "
                        "Surv(start, stop, event)); Cox: delayed entry, time-varying "
                        "covariates; AFT and cause-specific: delayed entry (left "
                        "truncation); multistate (required): each row's interval")
    p.add_argument("--time", help="follow-up (stop) time column")
    p.add_argument("--event", help="event indicator column (1 = event, 0 = censored)")
    for family in families:               # the families' own options
        if family.add_arguments is not None:
            family.add_arguments(p)
    p.add_argument("--strata", nargs="+", default=None,
                   help="stratum column(s) (Cox, cause-specific, multistate: a baseline "
                        "hazard per stratum; AFT: a scale per stratum)")
    p.add_argument("--weights", default=None, help="case-weight column")
    p.add_argument("--id", default=None,
                   help="patient id column: patients are labelled by its values (default, "
                        "without --id: by their data row number in the CSV, counted from 1 "
                        "= the first row below the header); Cox and cause-specific with "
                        "--start, or Cox, AFT and cause-specific with --subjects, and "
                        "multistate (required) always: repeated ids are one patient's rows "
                        "and the audit is per patient")
    p.add_argument("--subjects", action="store_true",
                   help="rows sharing an --id are one patient (Cox, AFT, cause-specific; "
                        "implied by --start for Cox and cause-specific, always for "
                        "multistate)")
    p.add_argument("--cluster", default=None,
                   help="cluster column (a hospital, a family): the audit deletes whole "
                        "clusters and the model's SE are robust (grouped sandwich); Cox, AFT "
                        "and cause-specific")
    p.add_argument("--covariates", nargs="+", default=None,
                   help="covariate columns (default: every column without a role, refused "
                        "when one looks like an identifier: named id, patient, subject, ... "
                        "or distinct integers or labels, one per row); never an outcome, "
                        "--id, --weights or --cluster column, nor a Cox or Fine-Gray --strata "
                        "column; the summary and the report list them")
    p.add_argument("--ties", choices=["efron", "breslow"], default=None,
                   help="Cox, cause-specific, multistate: efron (default) or breslow; "
                        "Fine-Gray: breslow (default, crr's) or efron")
    p.add_argument("--target", default="coef",
                   help="coef (default); hr (hazard ratios: Cox, Fine-Gray); tr (time "
                        "ratios: AFT); of new patients: lp, rr (Cox), survival:T1,T2,... "
                        "(Cox, AFT), quantile[:P1,P2,...] (AFT survival quantiles, default "
                        "the median), cif:T1,T2,... (Fine-Gray cumulative incidence), "
                        "absolute-risk:T1,T2,... (cause-specific: the absolute risk of "
                        "--cause, default 1), state-probability:T1,T2,... (multistate: the "
                        "probability of each state, or of --state-of-interest), for "
                        "the patients of --newdata, else at the covariate means (a row "
                        "labelled 'mean': in Python X.mean().rename('mean'); once per stratum for "
                        "survival in a stratified Cox model and "
                        "for survival and quantiles in a stratified AFT model); metrics of "
                        "the --test patients: brier:T1,T2,..., ibs:T1,T2,..., auc:T1,..., "
                        "c[:harrell|uno] (Fine-Gray: brier, ibs, auc of the cause)")
    p.add_argument("--newdata", type=Path, default=None,
                   help="CSV of new patients for the targets of new patients: the "
                        "covariate columns (and the --strata columns in a stratified model), "
                        "rows labelled by the --id column when present")
    p.add_argument("--test", type=Path, default=None,
                   help="CSV of test patients for the test metrics (--target brier:T1,T2,..."
                        " the IPCW Brier score at times; ibs:T1,T2,... integrated over the "
                        "grid; auc:T1,... time-dependent AUC; c or c:uno Harrell's or Uno's "
                        "C; Fine-Gray: brier, ibs, auc of the cause): the training file's "
                        "covariate, time and event (or status) columns; the audit gives each "
                        "training patient's change of the metric")
    p.add_argument("--checks", action=argparse.BooleanOptionalAction, default=True,
                   help="the report's Model checks section where the model has them: the "
                        "proportional-hazards test (R's cox.zph) and its plots, deviance "
                        "residuals, the patients standing out in both (default: on)")
    p.add_argument("--method", choices=["auto", "vif", "reid", "newton", "exact"],
                   default="auto",
                   help="auto (default): VIF for every patient and exact refits for the top "
                        "ones (until the top 10 cannot change) and every flagged one; or one "
                        "method throughout")
    p.add_argument("--exact", action="store_true",
                   help="also refit without each patient (exact leave-one-out)")
    p.add_argument("--exact-max-n", type=int, default=1000,
                   help="without --exact, still refit when n is at most this (default 1000)")
    p.add_argument("--top", type=int, default=10, help="patients in the top table (default 10)")
    p.add_argument("--out", type=Path, default=Path("influence_report.html"),
                   help="HTML report path (default influence_report.html)")
    add_progress_argument(p)


# ------------------------------------------------------------------- the model

def _fit(family, args, data):
    """The fitted model of ``family`` (its table entry's ``fit``) on ``data``; convergence
    warnings go to stderr (the report shows a fit that did not converge at its top, in
    red)."""
    import coxinfluence as ci
    with warnings.catch_warnings(record=True) as caught:
        # every family's convergence warning is a ci.ConvergenceWarning
        warnings.simplefilter("always", ci.ConvergenceWarning)
        try:
            fit = family.fit(data, args)
        except ci.InputError as exc:
            if args.data is None:
                raise
            # the library names rows by index labels: here the CSV file's rows or ids
            raise ValueError(csv_rows(str(exc), data, args.data)) from None
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    return fit


def _demo_data():
    from coxinfluence.demo import gbsg2_design
    X, time, event = gbsg2_design()
    frame = X.assign(time=time.to_numpy(), event=event.to_numpy())
    return AuditData(frame=frame, X=X, time=time, outcome=event,
                     roles=[("time", "time"), ("event", "event")])


# ------------------------------------------------------------------- the audit

def _audit_run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    import coxinfluence as ci
    from coxinfluence.report import write_report

    if args.top < 1:
        raise ValueError(f"--top must be >= 1; got {args.top}")
    family = choose_family(args)
    data, description = _read(args, family)
    newdata = None
    if args.newdata is not None:
        newdata = read_newdata(args.newdata, list(data.X.columns),
                               None if args.demo else args.strata, args.id)
    test = None if args.test is None else read_test(args.test, data, family.outcome)
    plan = target_plan(args.target, data.X, newdata, family=family.name, strata=data.strata,
                       test=test, options=family.metric_options(args),
                       target_options=family.target_options(args),
                       model_words=family.describe(args))
    show = show_progress(args.progress)
    steps = tqdm(total=4, desc="audit", unit="step", disable=not show)
    steps.set_postfix_str("fitting")
    fit = _fit(family, args, data)
    steps.update()
    target = plan.finish(fit)
    steps.set_postfix_str(args.method)
    # R: cluster= makes the SE robust; a Fine-Gray model's units and SE are crr's
    robust = True if data.clusters is not None else None
    common = dict(target=target, groups=data.clusters, robust=robust)
    with warnings.catch_warnings():
        # the report shows a fit that did not converge at its top, in red
        warnings.simplefilter("ignore", ci.ConvergenceWarning)     # every family's
        res = ci.influence(fit, data.frame, method=args.method, progress=show, **common)
        steps.update()
        steps.set_postfix_str("Reid")
        # the target's notes (a time past follow-up) were warned once, and are on res
        warnings.simplefilter("ignore", ci.TargetBeyondFollowUpWarning)
        reid_res = (res if args.method == "reid"
                    else ci.influence(fit, data.frame, method="reid", **common))
    steps.update()
    exact_res = None
    if res.fit_ok and (args.exact or len(res.loo_change) <= args.exact_max_n):
        steps.set_postfix_str("exact refits")
        exact_res = res.exact(progress=show)
    steps.update()
    steps.close()
    out = Path(args.out)
    if out.parent and not out.parent.exists():
        raise ValueError(f"output folder does not exist: {out.parent}")
    columns = columns_text(data)
    write_report(out, res, reid=reid_res, exact=exact_res,
                 description=f"{description} {columns}", top_k=args.top,
                 checks=args.checks, unit_data=entry_rows(data),
                 calibration=None if test is None else _test_calibration(fit, test))
    print_summary(res, reid_res, exact_res, res.target, columns=columns)
    print(f"wrote {out}")
    return 0


def _test_calibration(fit, test):
    """``ci.calibration`` of the ``--test`` patients at their median event time; None
    where it is not defined there (the reason is warned)."""
    import numpy as np

    import coxinfluence as ci
    t = float(np.median(test.time[test.outcome.to_numpy() > 0]))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ci.TargetBeyondFollowUpWarning)
            return ci.calibration(fit, test.X, test.time, test.outcome, time=t)
    except ci.InputError as exc:
        warnings.warn(f"no calibration section in the report: {exc}", stacklevel=2)
        return None


def _read(args, family):
    """(the data, the report's description of it)."""
    if args.demo:
        if args.data is not None:
            raise ValueError("give either DATA.csv or --demo, not both")
        return _demo_data(), "lifelines' bundled GBSG2 breast-cancer data (demo)."
    if args.data is None:
        raise ValueError("give a DATA.csv file or --demo")
    data = read_audit_csv(args, outcome=family.outcome,
                          subjects=bool(args.id) and family.subjects(args),
                          stratum_covariates=family.stratum_covariates,
                          columns=family.columns, covariate_columns=family.covariate_columns,
                          outcome_labels=family.encode_outcome is not None)
    if family.encode_outcome is not None:
        data = family.encode_outcome(data, args)      # labels -> codes (Fine-Gray's causes)
    return data, f"Data: {args.data.name}."


def print_summary(res, reid_res, exact_res, target, *, columns=None):
    """The audit's summary on stdout: the model (its seam's words), the top units (exact
    displacement marked with *), what was verified, the flags, the approximation's
    agreement, ``target`` by its name (the one audited: ``res.target``), and ``columns``
    (the covariates and the columns' roles, as
    :func:`~coxinfluence.cli.audit_inputs.columns_text` says them)."""
    header = res.model.report_header()
    top = res.top(min(5, len(res.loo_change)))
    print(f"{header.statement}: {res.units_text}, {header.facts}; target {target.name}")
    if not res.fit_ok:
        print(f"WARNING: the {header.name} fit did not converge; the numbers below are not "
              "meaningful")
    approx = res.approx if res.approx is not None else res
    kind = ("* = exact refit" if res.refits is not None
            else f"{approx.method.upper()} quadratic-form estimate")
    print(f"Most influential {res.unit_name} (likelihood displacement, {kind}): "
          + ", ".join(f"{i} ({v:.4g}{'*' if ok else ''})" for i, v, ok in
                      zip(top.index, top["likelihood_displacement"], top["verified"])))
    if target.name != "coef":
        _print_target(res, target)
    if res.verification is not None:
        print(res.verification.describe(res.unit_name))
        err = res.top_vif_error()
        if err is not None:
            label, a, e, scale, used = err
            print(f"Largest VIF error in the top {used}: {label} (displacement {a:.4g} by "
                  f"VIF, {e:.4g} exact; off by {abs(a - e) / scale:.3g} x the displacement "
                  f"ranked {used}, {scale:.4g})")
    counts = res.flags.sum()
    if counts.any():
        print("Flagged: " + ", ".join(f"{int(v)} {k}" for k, v in counts.items() if v))
    if reid_res is not approx:
        print(f"{approx.method.upper()} vs Reid: mean correlation "
              f"{approx.correlation(reid_res).mean():.6f}")
    if exact_res is not None and exact_res is not approx:
        print(f"{approx.method.upper()} vs exact leave-one-out: mean correlation "
              f"{approx.correlation(exact_res).mean():.6f}")
    if columns:
        print(columns)


def _print_target(res, target):
    """The target's value on the full fit and its largest changes (|change| / SE, exact
    where refitted: *), as the report's table by the target ranks them."""
    import numpy as np
    value = np.asarray(target.value(res.fit, np.asarray(res.model.coef)[None, :]))[0]
    cols = list(res.loo_change.columns)
    shown = ", ".join(f"{c} = {v:.4g}" for c, v in zip(cols[:6], value[:6]))
    print(f"Target {target.name} on the full data: {shown}{', ...' if len(cols) > 6 else ''}")
    top = res.top(min(5, len(res.loo_change)), by="target")
    print(f"Largest changes of {target.name} (|change| / SE, * = exact refit): "
          + ", ".join(f"{i} ({v:.4g}{'*' if ok else ''})" for i, v, ok in
                      zip(top.index, top["target_influence"], res.verified.loc[top.index])))


register(Subcommand(
    "audit",
    "audit a survival model's influential patients: Cox, AFT, Fine-Gray, cause-specific or "
    "multi-state (HTML report)",
    add_arguments=_audit_arguments, run=_audit_run,
    description="Fit a model to DATA.csv (or --demo: lifelines' bundled GBSG2): Cox (default), "
                "a parametric AFT model (--model weibull, exponential, lognormal, "
                "loglogistic; as R's survreg), the Fine-Gray model for one cause (--status S "
                "--cause K [--cengroup COL]; as R's cmprsk::crr), cause-specific Cox models "
                "(--model cause-specific --status S [--cause K]; as R's riskRegression::CSC) "
                "or a Markov multi-state Cox model (--model multistate --start A --time B "
                "--state S --id ID; as R's survival). Compute every patient's "
                "leave-one-out influence (by default VIF, verified by exact refits where the "
                "audit is read), Reid's IF and (with --exact or for small n) exact refits of "
                "every patient, and write one self-contained HTML report (cause-specific and "
                "multi-state: with the reference patient's absolute-risk or state-occupancy "
                "curves refitted without the most influential patients). "
                "Patient labels (report and printed summary): the --id column's values; "
                "without --id, the data row number in the CSV counted from 1 (the first row "
                "below the header is 1); with --cluster, the cluster column's values; with "
                "--demo, GBSG2's row position counted from 0 (0 to 685, as python -m "
                "coxinfluence.demo prints them)."))

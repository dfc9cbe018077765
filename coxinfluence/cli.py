"""Command-line interface: ``coxinfluence <subcommand> ...``.

Subcommands live in a registry (:data:`SUBCOMMANDS`); each is a :class:`Subcommand`
with a name, a one-line help, a function adding its arguments to an
``argparse.ArgumentParser`` and a function running it from the parsed namespace and
returning an exit code. Add one with :func:`register`::

    register(Subcommand("audit", "...", add_arguments=_audit_args, run=_audit_run))

``main(argv)`` returns 0 on success, 2 on invalid input (a ``ValueError`` from the
subcommand, or no subcommand; the message, naming the problem, goes to stderr); arguments
argparse cannot parse make it exit with status 2 (``SystemExit``), argparse's convention.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

__all__ = ["Subcommand", "SUBCOMMANDS", "register", "build_parser", "main"]


@dataclass(frozen=True)
class Subcommand:
    """One ``coxinfluence`` subcommand."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None


SUBCOMMANDS: dict[str, Subcommand] = {}


def register(command: Subcommand) -> Subcommand:
    """Add ``command`` to the registry (a name may be registered once)."""
    if command.name in SUBCOMMANDS:
        raise ValueError(f"subcommand {command.name!r} is already registered")
    SUBCOMMANDS[command.name] = command
    return command


def build_parser(registry: dict[str, Subcommand] | None = None) -> argparse.ArgumentParser:
    """The top-level parser with one subparser per registered subcommand."""
    registry = SUBCOMMANDS if registry is None else registry
    parser = argparse.ArgumentParser(
        prog="coxinfluence",
        description="Influence diagnostics for Cox regression (Reid's IF, the VIF, exact LOO).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in registry.values():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.description or cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run)
    return parser


def add_progress_argument(p: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress``, the same on every subcommand: show the progress
    bars on stderr always or never; by default only when stderr is a terminal (a log file
    or a pipe gets no carriage-return lines)."""
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show progress bars on stderr (--progress) or never (--no-progress); "
                        "default: only when stderr is a terminal, so logs and pipes get none")


def show_progress(flag: bool | None) -> bool:
    """Whether to show progress bars: ``flag`` when given, else whether stderr is a
    terminal."""
    if flag is not None:
        return bool(flag)
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):        # closed or replaced by an object without it
        return False


def main(argv: list[str] | None = None, *, registry: dict[str, Subcommand] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = build_parser(registry)
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args._run(args))
    except ValueError as exc:
        print(f"coxinfluence {args.command}: error: {exc}", file=sys.stderr)
        return 2


# ------------------------------------------------------------------------ asymptotics

def _asymptotics_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", type=int, nargs="+",
                   default=[200, 500, 1000, 2000, 5000, 10000, 20000],
                   help="sample sizes n (default: 200 500 1000 2000 5000 10000 20000)")
    p.add_argument("--reps", type=int, default=20, help="replicates per size (default 20)")
    p.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    p.add_argument("--out", type=Path, default=Path("asymptotics_out"),
                   help="output folder for the CSV table and the PNG plot")
    p.add_argument("--prefix", default="asymptotics", help="file-name prefix (default asymptotics)")
    p.add_argument("--workers", type=int, default=1,
                   help="worker processes (default 1 = serial; results do not depend on it)")
    p.add_argument("--include-loo", action="store_true",
                   help="also refit without each row (exact LOO); slow, use small sizes")
    p.add_argument("--no-leading-term", action="store_true",
                   help="skip the population leading term of n * Diff_n(i)")
    design = p.add_argument_group("design (CoxDesign)")
    design.add_argument("--theta", type=float, nargs="+", default=[0.7, -0.5],
                        help="true coefficients (default 0.7 -0.5)")
    design.add_argument("--x-bound", type=float, default=1.0,
                        help="covariates uniform on [-x_bound, x_bound]^d (default 1)")
    design.add_argument("--baseline-hazard", type=float, default=1.0)
    design.add_argument("--censor-rate", type=float, default=0.2)
    design.add_argument("--tau", type=float, default=1.0, help="truncation time (default 1)")
    design.add_argument("--no-truncation", action="store_true",
                        help="drop the truncation time (negative control: breaks condition 3)")
    add_progress_argument(p)


def _asymptotics_run(args: argparse.Namespace) -> int:
    from coxinfluence.asymptotics import CoxDesign, simulate_gap

    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1; got {args.workers}")
    design = CoxDesign(theta=tuple(args.theta), x_bound=args.x_bound,
                       baseline_hazard=args.baseline_hazard, censor_rate=args.censor_rate,
                       tau=None if args.no_truncation else args.tau)
    kwargs = dict(design=design, seed=args.seed, include_loo=args.include_loo,
                  progress=show_progress(args.progress),
                  leading_term=False if args.no_leading_term else None)
    if args.workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        # spawn, not fork: forking a process that has started threads (BLAS, or JAX
        # when the caller imported it) can deadlock the children
        with ProcessPoolExecutor(args.workers,
                                 mp_context=multiprocessing.get_context("spawn")) as ex:
            result = simulate_gap(args.sizes, args.reps, executor=ex, **kwargs)
    else:
        result = simulate_gap(args.sizes, args.reps, **kwargs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    csv = out / f"{args.prefix}_table.csv"
    png = out / f"{args.prefix}.png"
    result.table.to_csv(csv, index=False)
    result.plot().savefig(png, dpi=120)
    lo, hi = result.slope_ci
    print(f"slope of log mean_i |VIF_n(i) - IF_n(i)| on log n: {result.slope:.3f} "
          f"[{lo:.3f}, {hi:.3f}] (theory: -1)")
    f = result.fit("if_mean")
    print(f"slope of the size of IF_n: {f.slope:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}] (theory: 0)")
    f = result.fit("gap_max")
    print(f"slope of max_i |VIF_n(i) - IF_n(i)|: {f.slope:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}]")
    print(f"wrote {csv} and {png}")
    return 0


register(Subcommand(
    "asymptotics",
    "simulate the O_p(1/n) gap between the VIF and Reid's IF (CSV table + PNG plot)",
    add_arguments=_asymptotics_arguments, run=_asymptotics_run,
    description="Simulate |VIF_n(i) - IF_n(i)| over sample sizes for a Cox design satisfying "
                "the paper's theorem (or the no-truncation negative control), write the tidy "
                "table (CSV) and the log-log plot (PNG), and print the slopes."))



# ------------------------------------------------------------------------------ audit

def _audit_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", nargs="?", type=Path, help="CSV file, one row per patient")
    p.add_argument("--demo", action="store_true",
                   help="audit lifelines' bundled GBSG2 data (embedded, no download)")
    p.add_argument("--start", default=None,
                   help="entry-time column: each row is at risk on (start, time] (R's "
                        "Surv(start, stop, event)); delayed entry, time-varying covariates")
    p.add_argument("--time", help="follow-up (stop) time column")
    p.add_argument("--event", help="event indicator column (1 = event, 0 = censored)")
    p.add_argument("--strata", nargs="+", default=None, help="stratum column(s)")
    p.add_argument("--weights", default=None, help="case-weight column")
    p.add_argument("--id", default=None,
                   help="patient id column: patients are labelled by its values (default, "
                        "without --id: by their data row number in the CSV, counted from 1 "
                        "= the first row below the header); with --start or --subjects, "
                        "repeated ids are one patient's rows and the audit is per patient")
    p.add_argument("--subjects", action="store_true",
                   help="rows sharing an --id are one patient (implied by --start)")
    p.add_argument("--cluster", default=None,
                   help="cluster column (a hospital, a family): the audit deletes whole "
                        "clusters and the model's SE are robust (grouped sandwich)")
    p.add_argument("--covariates", nargs="+", default=None,
                   help="covariate columns (default: every other column)")
    p.add_argument("--ties", choices=["efron", "breslow"], default="efron")
    p.add_argument("--target", default="coef",
                   help="coef (default), hr, lp, rr, or survival:T1,T2,... ; lp, rr and "
                        "survival are for the patients of --newdata, else for the average "
                        "patient (covariate means; survival once per stratum in a "
                        "stratified model)")
    p.add_argument("--newdata", type=Path, default=None,
                   help="CSV of new patients for the lp / rr / survival targets: the "
                        "covariate columns (and the --strata columns for survival), rows "
                        "labelled by the --id column when present")
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


def _rows_text(labels):
    shown = ", ".join(str(v) for v in labels[:10])
    return shown + (", ..." if len(labels) > 10 else "")


def _read_audit_csv(args):
    """(frame of used columns, covariates, time, event, strata, weights, start, ids,
    clusters): indexed by the id column when ids are one row each, else by the data row
    number (1, 2, ...), with the id column kept."""
    import pandas as pd
    path = args.data
    df = _read_csv(path, "data file", "")
    if not args.time or not args.event:
        raise ValueError("--time and --event are required with a data file")
    subjects = bool(args.id) and (args.subjects or args.start is not None)
    if args.subjects and not args.id:
        raise ValueError("--subjects needs --id (the column naming each row's patient)")
    extra = [c for c in (args.start, args.cluster) if c]
    special = [args.time, args.event] + extra + (args.strata or []) + \
        ([args.weights] if args.weights else []) + ([args.id] if args.id else [])
    covs = args.covariates or [c for c in df.columns if c not in special]
    if not covs:
        raise ValueError("no covariate columns left: pass --covariates")
    used = list(dict.fromkeys(special + covs))
    missing = [c for c in used if c not in df.columns]
    if missing:
        raise ValueError(f"missing column(s) {missing} in {path}; it has {list(df.columns)}")
    if args.id and df[args.id].isna().any():
        raise ValueError(f"id column {args.id!r} has missing values in data row(s) "
                         f"{_rows_text(list(df.index[df[args.id].isna()] + 1))}")
    if args.id and not subjects:
        if df[args.id].duplicated().any():
            raise ValueError(f"id column {args.id!r} has duplicated values; if a patient has "
                             "several rows, add --start (intervals) or --subjects")
        df = df.set_index(args.id)
    else:
        df.index = pd.RangeIndex(1, len(df) + 1, name="row")
    numeric = [args.time, args.event] + covs + ([args.weights] if args.weights else []) \
        + ([args.start] if args.start else [])
    bad = _non_numeric(df, numeric)
    if bad:
        raise ValueError(f"non-numeric column(s) {bad}: encode categories as 0/1 columns first")
    cols = list(dict.fromkeys(numeric + (args.strata or []) + ([args.cluster] if args.cluster
                                                                 else [])
                              + ([args.id] if subjects else [])))
    na = df[cols].isna().any(axis=1)
    if na.any():
        which = list(df.index[na])
        na_cols = [c for c in cols if df[c].isna().any()]
        label = f"{args.id} " if args.id and not subjects else "data row(s) "
        raise ValueError(f"{int(na.sum())} row(s) with missing values (NaN) in columns {na_cols}: "
                         f"{label}{_rows_text(which)}; drop or impute them")
    frame = df[cols].copy()
    strata = df[args.strata] if args.strata else None
    weights = df[args.weights] if args.weights else None
    start = df[args.start] if args.start else None
    ids = df[args.id] if subjects else None
    clusters = df[args.cluster] if args.cluster else None
    return (frame, df[covs].astype(float), df[args.time], df[args.event], strata, weights,
            start, ids, clusters)


def _read_csv(path, what, prefix):
    """A CSV file with at least one data row, or a one-line ValueError naming the file
    (``what``: "data file" / "--newdata file"; ``prefix`` starts the other messages)."""
    import pandas as pd
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


def _non_numeric(df, cols):
    import pandas as pd
    return [c for c in cols if not (pd.api.types.is_numeric_dtype(df[c])
                                    or pd.api.types.is_bool_dtype(df[c]))]


def _read_newdata(path, covariates, strata, id_col):
    """New patients for the lp / rr / survival targets: the model's covariate columns
    (and its stratum columns, for survival in a stratified model), rows labelled by the
    id column when the file has it."""
    df = _read_csv(path, "--newdata file", "--newdata ")
    need = list(covariates) + [c for c in (strata or []) if c not in covariates]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"--newdata {path} lacks column(s) {missing}")
    bad = _non_numeric(df, covariates)
    if bad:
        raise ValueError(f"--newdata {path}: non-numeric covariate column(s) {bad}")
    na = df[need].isna().any(axis=1)
    if na.any():
        raise ValueError(f"--newdata {path}: missing values in row(s) "
                         f"{_rows_text([int(k) + 1 for k in df.index[na]])}")
    if id_col and id_col in df.columns:
        df = df.set_index(id_col)
    else:
        df.index = [f"new {k}" for k in range(1, len(df) + 1)]
    return df[need]


def _audit_target(spec, X, newdata=None):
    from coxinfluence.audit import targets as T
    patients = X.mean().to_frame("mean").T if newdata is None else newdata
    spec = spec.strip().lower()
    if spec in ("coef", "hr"):
        if newdata is not None:
            raise ValueError("--newdata applies to the lp, rr and survival targets, "
                             f"not --target {spec}")
        return T.resolve_target(spec)
    if spec == "lp":
        return T.LinearPredictor(patients)
    if spec == "rr":
        return T.RelativeRisk(patients)
    if spec.startswith("survival:"):
        try:
            times = [float(v) for v in spec.split(":", 1)[1].split(",") if v.strip()]
        except ValueError:
            raise ValueError(f"--target survival:T1,T2,... needs numeric times; got {spec!r}") \
                from None
        return T.Survival(patients, times)
    raise ValueError(f"--target must be coef, hr, lp, rr or survival:T1,T2,...; got {spec!r}")


def _per_stratum(target, fit):
    """A survival target of the average patient becomes one curve per stratum (each
    stratum has its own baseline hazard) when the model is stratified."""
    import pandas as pd

    from coxinfluence.audit import targets as T
    labels = fit.data.strata_labels
    if not isinstance(target, T.Survival) or labels is None or len(labels) < 2:
        return target
    mean = target.X_new
    rows = pd.concat([mean] * len(labels), ignore_index=True)
    rows.index = [f"mean, stratum {_label_text(lab)}" for lab in labels]
    return T.Survival(rows, target.times, strata=list(labels))


def _label_text(value) -> str:
    """A stratum label as text: integer-valued numbers as integers (a 0/1 column read as
    floats is "0", "1", not "0.0", "1.0")."""
    import numbers
    if isinstance(value, numbers.Real) and not isinstance(value, bool) \
            and float(value).is_integer():
        return str(int(value))
    return str(value)


def _audit_run(args: argparse.Namespace) -> int:
    import warnings

    from tqdm.auto import tqdm

    import coxinfluence as ci
    from coxinfluence.report import write_report

    if args.top < 1:
        raise ValueError(f"--top must be >= 1; got {args.top}")
    if args.demo:
        if args.data is not None:
            raise ValueError("give either DATA.csv or --demo, not both")
        from coxinfluence.demo import gbsg2_design
        X, time, event = gbsg2_design()
        frame = X.assign(time=time.to_numpy(), event=event.to_numpy())
        strata = weights = start = ids = clusters = None
        description = "lifelines' bundled GBSG2 breast-cancer data (demo)."
    else:
        if args.data is None:
            raise ValueError("give a DATA.csv file or --demo")
        frame, X, time, event, strata, weights, start, ids, clusters = _read_audit_csv(args)
        description = f"Data: {args.data.name}."
    newdata = None
    if args.newdata is not None:
        newdata = _read_newdata(args.newdata, list(X.columns),
                                None if args.demo else args.strata, args.id)
    target = _audit_target(args.target, X, newdata)
    show = show_progress(args.progress)
    steps = tqdm(total=4, desc="audit", unit="step", disable=not show)
    steps.set_postfix_str("fitting")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ci.ConvergenceWarning)
        fit = ci.fit_cox(X, time, event, start=start, id=ids, strata=strata,
                         weights=weights, ties=args.ties)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    steps.update()
    if newdata is None:
        target = _per_stratum(target, fit)
    steps.set_postfix_str(args.method)
    robust = True if clusters is not None else None      # R: cluster= makes the SE robust
    common = dict(target=target, groups=clusters, robust=robust)
    with warnings.catch_warnings():
        # the report shows a fit that did not converge at its top, in red
        warnings.simplefilter("ignore", ci.ConvergenceWarning)
        res = ci.influence(fit, frame, method=args.method, progress=show, **common)
        steps.update()
        steps.set_postfix_str("Reid")
        reid_res = (res if args.method == "reid"
                    else ci.influence(fit, frame, method="reid", **common))
    steps.update()
    exact_res = None
    small = len(res.loo_change) <= args.exact_max_n
    if res.fit_ok and (args.exact or small):
        steps.set_postfix_str("exact refits")
        exact_res = res.exact(progress=show)
    steps.update()
    steps.close()
    out = Path(args.out)
    if out.parent and not out.parent.exists():
        raise ValueError(f"output folder does not exist: {out.parent}")
    write_report(out, res, reid=reid_res, exact=exact_res, description=description,
                 top_k=args.top)
    _print_summary(res, reid_res, exact_res, target)
    print(f"wrote {out}")
    return 0


def _print_summary(res, reid_res, exact_res, target):
    """The audit's summary on stdout: the top units (exact displacement marked with *),
    what was verified, the flags, and the approximation's agreement."""
    fit = res.fit
    top = res.top(min(5, len(res.loo_change)))
    print(f"Cox model: {res.units_text}, events = {int(fit.data.event.sum())}; "
          f"target {target.name}")
    if not res.fit_ok:
        print("WARNING: the Cox fit did not converge; the numbers below are not meaningful")
    approx = res.approx if res.approx is not None else res
    kind = ("* = exact refit" if res.refits is not None
            else f"{approx.method.upper()} quadratic-form estimate")
    print(f"Most influential {res.unit_name} (likelihood displacement, {kind}): "
          + ", ".join(f"{i} ({v:.4g}{'*' if ok else ''})" for i, v, ok in
                      zip(top.index, top["likelihood_displacement"], top["verified"])))
    if res.verification is not None:
        print(res.verification.describe(res.unit_name))
        err = res.largest_error()
        if err is not None:
            print(f"Largest VIF error among the verified: {err[0]} "
                  f"(displacement {err[1]:.4g} by VIF, {err[2]:.4g} exact)")
    counts = res.flags.sum()
    if counts.any():
        print("Flagged: " + ", ".join(f"{int(v)} {k}" for k, v in counts.items() if v))
    if reid_res is not approx:
        print(f"{approx.method.upper()} vs Reid: mean correlation "
              f"{approx.correlation(reid_res).mean():.6f}")
    if exact_res is not None and exact_res is not approx:
        print(f"{approx.method.upper()} vs exact leave-one-out: mean correlation "
              f"{approx.correlation(exact_res).mean():.6f}")


register(Subcommand(
    "audit",
    "audit a Cox model's influential patients (self-contained HTML report)",
    add_arguments=_audit_arguments, run=_audit_run,
    description="Fit a Cox model to DATA.csv (or --demo: lifelines' bundled GBSG2), compute "
                "every patient's leave-one-out influence (by default VIF, verified by exact "
                "refits where the audit is read), Reid's IF and (with --exact or for small n) "
                "exact refits of every patient, and write one self-contained HTML report. "
                "Patient labels (report and printed summary): the --id column's values; "
                "without --id, the data row number in the CSV counted from 1 (the first row "
                "below the header is 1); with --cluster, the cluster column's values; with "
                "--demo, GBSG2's row position counted from 0 (0 to 685, as python -m "
                "coxinfluence.demo prints them)."))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

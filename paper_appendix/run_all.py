"""Regenerate every table and figure of the paper on our implementation, and write
paper_appendix/RESULTS.md.

    python paper_appendix/run_all.py [--quick] [--only table1,table2,...] [--results PATH]
    python paper_appendix/run_all.py --only table4 --update     # one step, in place

One script per result, each run in its own process (``sys.executable``, working directory
paper_appendix/, ``MPLBACKEND=Agg``); its log goes to paper_appendix/out/logs/<step>.log
and its markdown (the file it writes under out/, or its standard output) into RESULTS.md,
with the step's wall time. PNG and CSV files stay in paper_appendix/out/ (git-ignored).
``--quick`` (CI): smaller runs of the same scripts, each labelled in RESULTS.md. A failing
step is reported in RESULTS.md with the tail of its log, the other steps still run, and
the exit status is 1.

Each step's section of RESULTS.md opens with a line
``<!-- step: KEY script: SCRIPT commit: HASH -->`` and says "Ran at commit HASH"; the
summary table has the same commit per step. HASH is ``git rev-parse --short HEAD`` when
the run starts, with " + uncommitted changes" when the step's sources (its script, the
paper_appendix/ modules it imports, the package, pyproject.toml) differ from it.
``--update`` (with ``--only``) runs only those steps and replaces their sections, their
summary rows and their Table 2 rows in the existing RESULTS.md, keeping every other
section; the header lists the steps regenerated this way. tests/test_results_fresh.py
fails when a step's script, or a paper_appendix/ module it imports, changed in a commit
after its section's commit (run_all.py itself and the package do not count: rerun the
step with ``--update``).
"""
from __future__ import annotations

import argparse
import ast
import datetime
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"

# key, title, script, full args, quick args, markdown source (out/ file or None = stdout)
STEPS = [
    ("table1", "Table 1 (Cox rows): Pearson correlation with brute-force LOO",
     "table1_correlation.py", [], ["--quick"], "table1_correlation.md"),
    ("table1_karate", "Table 1 (Node Embedding row): DeepWalk on Karate",
     "autodiff_karate.py", [], [], None),
    ("explain_karate", "Explanation: Karate, VIF vs the brute-force ceiling",
     "explain_karate.py", [], ["--quick"], "explain_karate.md"),
    ("table1_listmle", "Table 1 (Listwise LTR rows): ListMLE, Mediamill and Delicious formats",
     "autodiff_listmle.py", [], ["--quick"], "autodiff_listmle.md"),
    ("table2", "Table 2 (Cox rows): runtime", "table2_runtime.py", [], ["--quick"],
     "table2_runtime.md"),
    ("table3", "Table 3: case study (METABRIC)", "table3_case_study.py", [], [],
     "table3_case_study.md"),
    ("table4", "Table 4: VIF (explicit, CG, LiSSA) vs brute force, linear and neural Cox",
     "autodiff_table4.py", [], ["--rows", "100"], "autodiff_table4.md"),
    ("explain_table4", "Explanation: Table 4 neural Cox, brute force vs brute force",
     "explain_table4.py", [], ["--quick"], "explain_table4.md"),
    ("table45", "Table 5 (runtime by model size) and solver agreement: CG, LiSSA, neural Cox",
     "autodiff_solvers_runtime.py", [], ["--sizes", "4,936", "--n-targets", "3",
                                         "--max-explicit-s", "30"], "autodiff_solvers_runtime.md"),
    ("autodiff_speed", "Autodiff Cox VIF speed against the closed form (METABRIC)",
     "autodiff_speed.py", [], ["--repeats", "3", "--batch-sizes", "128"], "autodiff_speed.md"),
    ("karate_figures", "Figure 2 and the appendix heatmaps (Karate)", "karate_figures.py",
     [], [], "karate_figures.md"),
    ("asymptotics", "The asymptotic check (VIF - IF = O_p(1/n))", "asymptotics.py", [],
     ["--quick"], "asymptotics.md"),
    ("targets", "Beyond the paper: other targets on METABRIC (S(t|x), chain rule)",
     "targets_metabric.py", [], [], "targets_metabric.md"),
    ("subjects", "Beyond the paper: per-subject influence on (start, stop] data with id "
     "(accuracy, R dfbeta, 10^6 rows)", "bench_subjects.py", [], ["--quick"],
     "bench_subjects.md"),
    ("flags", "Beyond the paper: when is the VIF off? Flags against exact refits on real data",
     "bench_flags.py", [], ["--quick"], "bench_flags.md"),
    ("audit", "Beyond the paper: the verified audit (method='auto') against exact refits",
     "bench_audit.py", [], ["--quick"], "bench_audit.md"),
    ("certificates", "Beyond the paper: the audit's certificates with a target (C, AUC, "
     "Brier, survival, cumulative incidence) against exact refits of every unit",
     "bench_certificates.py", [], ["--quick"], "bench_certificates.md"),
    ("aft", "Beyond the paper: parametric AFT regression audited (R's survreg as the oracle)",
     "bench_aft.py", [], ["--quick"], "bench_aft.md"),
    ("fine_gray", "Beyond the paper: the Fine-Gray model audited (exact refits; R's crr)",
     "bench_fine_gray.py", [], ["--quick"], "bench_fine_gray.md"),
    ("sksurv", "Beyond the paper: scikit-survival's elastic-net Cox model audited (its own "
     "refits as the oracle)", "bench_sksurv.py", [], ["--quick"], "bench_sksurv.md"),
    ("residuals", "Beyond the paper: residuals and the PH test against R (residuals.coxph, "
     "cox.zph, survreg, crr; lifelines' versions; time at 10^4..10^6 rows)",
     "bench_residuals.py", [], ["--quick"], "bench_residuals.md"),
    ("data_valuation", "Beyond the paper: data valuation, which training patients move test "
     "IBS and C (METABRIC, SUPPORT, GBSG2; exact refits; R's refit-and-rescore)",
     "bench_data_valuation.py", [], ["--quick"], "bench_data_valuation.md"),
    ("evaluate", "Performance: ci.evaluate (every metric with its SE) against R's Score + "
     "concordance and scikit-survival, 10^4..10^6 test rows", "bench_evaluate.py", [],
     ["--quick"], "bench_evaluate.md"),
    ("cause_specific", "Performance: cause-specific and multi-state Cox models, fit + VIF "
     "against R's CSC + predict(iid) (riskRegression) and coxph + survfit (survival), "
     "10^4..10^6 subjects", "bench_cause_specific.py", [], ["--quick"],
     "bench_cause_specific.md"),
    ("core", "Performance: the Cox core against R and lifelines (METABRIC, SUPPORT)",
     "bench_core.py", [], ["--repeats", "1", "--skip-newton"], "bench_core.md"),
    ("scale", "Performance: time against n, and fit + VIF at 10^7 rows",
     "bench_scale.py", [], ["--sizes", "1000,10000", "--reps", "1", "--target-n", "0",
                            "--no-support"], "bench_scale.md"),
    ("dask", "Performance: exact refits on 1 and 2 dask workers (n = 50,000)",
     "bench_dask.py", ["--repeats", "1"], ["--quick", "--repeats", "1"], "bench_dask.md"),
]
# Table 2's autodiff rows: the paper's numbers and where our run prints its times
# (a regex with named groups vif and bf, searched in the step's standard output; the
# dataset label may use the regex's other named groups); a list for several rows
PAPER_T2 = {
    "table1_karate": ("Node embedding", "Karate", "204 min", "109 min", "1.87x",
                      r"runtime: VIF (?P<vif>[\d.]+) s, brute force[^\d]*(?P<bf>[\d.]+) s"),
    # the paper-protocol brute force (Adam, 100 epochs) with removal "delete" (the item
    # leaves every candidate set and ranking), at autodiff_listmle.py's scaled sizes
    "table1_listmle": [
        ("Listwise LTR", "Mediamill (ours: SYNTHETIC, same format, scaled; removal delete; "
         "{n} refits)", "52 min", "2.6 min", "20x",
         r"runtime Mediamill-format \(paper protocol, removal delete\): brute force "
         r"\((?P<n>\d+) refits\) (?P<bf>[\d.]+) s; VIF (?P<vif>[\d.]+) s"),
        ("Listwise LTR", "Delicious (ours: SYNTHETIC, same format, scaled; removal delete; "
         "{n} of the 100 labels refitted)", "660 min", "2.8 min", "236x",
         r"runtime Delicious-format \(paper protocol, removal delete\): brute force "
         r"\((?P<n>\d+) refits\) (?P<bf>[\d.]+) s; VIF (?P<vif>[\d.]+) s"),
    ],
}


def run_step(key, script, args):
    log = OUT / "logs" / f"{key}.log"
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.run([sys.executable, script, *args], cwd=HERE, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        fh.write(proc.stdout)
    return proc.returncode, time.perf_counter() - t0, proc.stdout


def strip_md(text):
    """Drop the '[written to ...]' trailer and shift headings one level down."""
    text = re.sub(r"\n\[written to .*\]\s*$", "\n", text.strip() + "\n")
    return re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", text, flags=re.M)


MARKER = re.compile(r"^<!-- step: (?P<key>\S+) script: (?P<script>\S+) "
                    r"commit: (?P<commit>[^ ]+)(?P<dirty> \+ uncommitted changes)? -->$",
                    re.M)
UPDATED = "Regenerated alone since (`run_all.py --only STEP --update`): "


def local_imports(script):
    """The script and the paper_appendix/ modules it imports, directly or through one
    another (file names, the script first): the sources of its step."""
    seen, todo = [], [script]
    while todo:
        name = todo.pop(0)
        if name in seen or not (HERE / name).is_file():
            continue
        seen.append(name)
        for node in ast.walk(ast.parse((HERE / name).read_text(), name)):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                mods = [node.module]
            else:
                continue
            todo += [m.split(".")[0] + ".py" for m in mods]
    return seen


def git(*a):
    return subprocess.run(["git", *a], cwd=HERE, capture_output=True,
                          text=True).stdout.strip()


def source_commit(paths=None):
    """The commit the scripts run from (``git rev-parse --short HEAD``), with
    ' + uncommitted changes' when tracked files (of ``paths``, else all but RESULTS.md)
    differ from it."""
    try:
        commit = git("rev-parse", "--short", "HEAD") or "?"
        dirty = [line for line in git("status", "--porcelain", "--untracked-files=no",
                                      *(["--", *map(str, paths)] if paths else []))
                 .splitlines() if not line.endswith("RESULTS.md")]
    except OSError:
        return "?"
    return commit + (" + uncommitted changes" if dirty and commit != "?" else "")


def step_commit(script):
    """source_commit of a step: its script, the modules it imports, the package."""
    return source_commit([HERE / f for f in local_imports(script)]
                         + [ROOT / "coxinfluence", ROOT / "pyproject.toml"])


def t2_prefix(row):
    """The start of a Table 2 row of PAPER_T2 (scenario and dataset up to its first
    field), which names the row whatever the run printed."""
    sc, ds = row[:2]
    return f"| {sc} | {ds.split('{')[0]}"


def run_one(step, quick, commit, today):
    """Run one step: (summary row, section, Table 2 rows, ok)."""
    key, title, script, full_args, quick_args, md_file = step
    a = quick_args if quick else full_args
    if md_file:
        (OUT / md_file).unlink(missing_ok=True)
    print(f"[run_all] {key}: python {script} {' '.join(a)}", flush=True)
    rc, wall, stdout = run_step(key, script, a)
    cmd = f"`python paper_appendix/{script} {' '.join(a)}`".replace(" `", "`")
    status = "ok" if rc == 0 else f"FAILED (exit {rc})"
    print(f"[run_all] {key}: {status}, {wall:.1f} s, commit {commit}", flush=True)
    row = f"| {title} | {cmd} | {status} | {wall:.1f} | {commit} |"
    if rc != 0:
        tail = "\n".join(stdout.strip().splitlines()[-25:])
        body = (f"**FAILED** (exit {rc}); last lines of out/logs/{key}.log:\n\n"
                f"```\n{tail}\n```\n")
    elif md_file and (OUT / md_file).exists():
        body = strip_md((OUT / md_file).read_text())
    else:
        body = strip_md(stdout)
    t2_rows = []
    t2 = PAPER_T2.get(key, [])
    for sc, ds, pbf, pvif, pr, pattern in (t2 if isinstance(t2, list) else [t2]):
        m = re.search(pattern, stdout) if rc == 0 else None
        if m:
            vif_s, bf_s = float(m.group("vif")), float(m.group("bf"))
            t2_rows.append(f"| {sc} | {ds.format(**m.groupdict())} | {pbf} | {pvif} | "
                           f"{pr} | {bf_s:.1f} s | {vif_s:.1f} s | {bf_s / vif_s:.1f}x |")
    section = (f"<!-- step: {key} script: {script} commit: {commit} -->\n## {title}\n\n"
               f"Ran at commit {commit} on {today}: {cmd}, {wall:.1f} s\n\n{body}\n")
    return row, section, t2_rows, rc == 0


def parse_results(text):
    """RESULTS.md as (header, {step key: section}); a section runs from its marker line
    to the next marker."""
    marks = list(MARKER.finditer(text))
    if not marks:
        return text, {}
    sections = {m["key"]: text[m.start():nxt.start() if nxt else len(text)]
                for m, nxt in zip(marks, [*marks[1:], None])}
    return text[:marks[0].start()], sections


def update_results(text, runs, updated):
    """Replace the sections, summary rows and Table 2 rows of the steps in ``runs``
    ({key: (row, section, t2_rows, ok)}) in the text of RESULTS.md; ``updated``: one
    '`key` at commit on date' entry per step, for the header's list."""
    header, sections = parse_results(text)
    if not sections:
        raise SystemExit("run_all: --update needs a RESULTS.md with step markers "
                         "('<!-- step: ... -->'); run without --update first")
    keys = [s[0] for s in STEPS]
    lines = header.rstrip("\n").split("\n")
    titles = {s[0]: s[1] for s in STEPS}
    # the summary table: one row per step, in STEPS order
    rows = [i for i, line in enumerate(lines) if line.startswith("| ")
            and not line.startswith("| result |") and any(
                line.startswith(f"| {t} |") for t in titles.values())]
    if not rows:
        raise SystemExit("run_all: no summary table in the RESULTS.md to update")
    old = {k: next((lines[i] for i in rows if lines[i].startswith(f"| {titles[k]} |")),
                   None) for k in keys}
    new_rows = [runs[k][0] if k in runs else old[k] for k in keys]
    lines[rows[0]:rows[-1] + 1] = [r for r in new_rows if r]
    # Table 2's autodiff rows of the updated steps
    for key, (_, _, t2_rows, _) in runs.items():
        t2 = PAPER_T2.get(key, [])
        for spec in (t2 if isinstance(t2, list) else [t2]):
            at = [i for i, line in enumerate(lines) if line.startswith(t2_prefix(spec))]
            fresh = [r for r in t2_rows if r.startswith(t2_prefix(spec))]
            if at:                                  # a failed run leaves no row
                lines[at[0]:at[0] + 1] = fresh
            elif fresh:
                table = [i for i, line in enumerate(lines)
                         if line.startswith("| scenario | dataset |")]
                if table:                           # after the table's last row
                    end = table[0] + 2
                    while end < len(lines) and lines[end].startswith("| "):
                        end += 1
                    lines[end:end] = fresh
                else:
                    print(f"[run_all] {key}: no Table 2 in the file; its row is not "
                          "written", flush=True)
    # the list of steps regenerated alone
    entries = {}
    at = next((i for i, line in enumerate(lines) if line.startswith(UPDATED)), None)
    if at is not None:
        for entry in lines[at][len(UPDATED):].rstrip(".").split("; "):
            entries[entry.split("`")[1]] = entry
    entries.update(updated)
    listed = UPDATED + "; ".join(entries[k] for k in keys if k in entries) + "."
    if at is not None:
        lines[at] = listed
    elif entries:
        gen = next(i for i, line in enumerate(lines) if line.startswith("Generated "))
        lines[gen + 1:gen + 1] = ["", listed]
    sections.update({k: r[1] for k, r in runs.items()})
    # as full_results writes them: each section ends with a blank line, one more between
    return "\n".join(lines) + "\n\n" + "\n".join(
        sections[k].rstrip("\n") + "\n\n" for k in keys if k in sections)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small runs, for CI")
    ap.add_argument("--only", default=None, help="comma-separated step keys")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--note", default=None, help="a line to print at the top of RESULTS.md")
    ap.add_argument("--update", action="store_true",
                    help="with --only: replace only those steps' sections (and summary "
                         "rows) of the existing RESULTS.md")
    args = ap.parse_args(argv)
    keys = [s[0] for s in STEPS]
    only = args.only.split(",") if args.only else keys
    unknown = set(only) - set(keys)
    if unknown:
        ap.error(f"unknown step(s) {sorted(unknown)}; choose from {keys}")
    if args.update:
        if not args.only:
            ap.error("--update needs --only STEP[,STEP...]")
        if args.note:
            ap.error("--note writes a new header; it does not go with --update")
        if not Path(args.results).is_file():
            ap.error(f"--update: {args.results} does not exist")
        text = Path(args.results).read_text()
        update_results(text, {}, {})     # fails now, before any run, if it cannot update
        mode = re.search(r"\*\*Mode: (\w+)", text)
        if mode and (mode.group(1) == "QUICK") != args.quick:
            ap.error(f"--update: {args.results} is a {mode.group(1)} run; "
                     f"{'add' if not args.quick else 'drop'} --quick to update it")
    (OUT / "logs").mkdir(parents=True, exist_ok=True)
    # read at the start: a commit made during the run is not the one that ran
    commit = source_commit()
    commits = {s[0]: step_commit(s[2]) for s in STEPS if s[0] in only}
    now = datetime.datetime.now().isoformat(timespec="seconds")
    t_start, t_epoch = time.perf_counter(), time.time()
    runs, failed = {}, []
    for step in STEPS:
        if step[0] in only:
            runs[step[0]] = run_one(step, args.quick, commits[step[0]], now[:10])
            if not runs[step[0]][3]:
                failed.append(step[0])
    wall = time.perf_counter() - t_start
    if args.update:
        updated = {k: f"`{k}` at {commits[k]} on {now[:10]}" for k in runs}
        text = update_results(Path(args.results).read_text(), runs, updated)
    else:
        text = full_results(runs, args, wall, commit, now, t_epoch)
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text(text)
    print(f"[run_all] wrote {args.results}; total {wall:.1f} s; failed: {failed or 'none'}")
    return 1 if failed else 0


def full_results(runs, args, wall, commit, now, t_epoch):
    """The text of a new RESULTS.md holding the steps of ``runs``."""
    mode = "QUICK (CI smoke run: smaller sizes, see each command)" if args.quick else "FULL"
    t2_rows = [r for run in runs.values() for r in run[2]]
    head = ["# Paper results on coxinfluence\n",
            f"**Mode: {mode}. Wall time of `python paper_appendix/run_all.py"
            f"{' --quick' if args.quick else ''}`: {wall:.0f} s ({wall / 60:.1f} min).**\n",
            *([f"**{args.note}**\n"] if args.note else []),
            f"Generated {now} on "
            f"{platform.machine()} ({os.cpu_count()} cores, shared), Python "
            f"{platform.python_version()}, commit {commit}. Every number below is printed by "
            "the script named in its section (logs in paper_appendix/out/logs/, figures and "
            "CSVs in paper_appendix/out/, not committed); the 'paper' columns quote the paper.\n",
            "| result | command | status | wall s | commit |", "|---|---|---|---|---|",
            *(run[0] for run in runs.values()), ""]
    if t2_rows:
        head += ["## Table 2 (autodiff rows): runtimes from the Table 1 runs above\n",
                 "| scenario | dataset | paper brute force | paper VIF | paper ratio | "
                 "our brute force | our VIF | our ratio |", "|---|---|---|---|---|---|---|---|",
                 *t2_rows, ""]
    pngs = sorted(p.name for p in OUT.glob("*.png") if p.stat().st_mtime >= t_epoch)
    head += ["Figures written to paper_appendix/out/: " + (", ".join(pngs) or "none") + ".\n"]
    return "\n".join(head) + "\n" + "\n".join(run[1] for run in runs.values())


if __name__ == "__main__":
    raise SystemExit(main())

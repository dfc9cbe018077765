"""Regenerate every table and figure of the paper on our implementation, and write
paper_appendix/RESULTS.md.

    python paper_appendix/run_all.py [--quick] [--only table1,table2,...] [--results PATH]

One script per result, each run in its own process (``sys.executable``, working directory
paper_appendix/, ``MPLBACKEND=Agg``); its log goes to paper_appendix/out/logs/<step>.log
and its markdown (the file it writes under out/, or its standard output) into RESULTS.md,
with the step's wall time. PNG and CSV files stay in paper_appendix/out/ (git-ignored).
``--quick`` (CI): smaller runs of the same scripts, each labelled in RESULTS.md. A failing
step is reported in RESULTS.md with the tail of its log, the other steps still run, and
the exit status is 1.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
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


def source_commit():
    """The commit the scripts run from (``git rev-parse --short HEAD``), with
    ' + uncommitted changes' when tracked files other than RESULTS.md differ from it."""
    def git(*a):
        return subprocess.run(["git", *a], cwd=HERE, capture_output=True,
                              text=True).stdout.strip()
    try:
        commit = git("rev-parse", "--short", "HEAD") or "?"
        dirty = [line for line in git("status", "--porcelain", "--untracked-files=no")
                 .splitlines() if not line.endswith("RESULTS.md")]
    except OSError:
        return "?"
    return commit + (" + uncommitted changes" if dirty else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small runs, for CI")
    ap.add_argument("--only", default=None, help="comma-separated step keys")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--note", default=None, help="a line to print at the top of RESULTS.md")
    args = ap.parse_args(argv)
    keys = [s[0] for s in STEPS]
    only = args.only.split(",") if args.only else keys
    unknown = set(only) - set(keys)
    if unknown:
        ap.error(f"unknown step(s) {sorted(unknown)}; choose from {keys}")
    (OUT / "logs").mkdir(parents=True, exist_ok=True)
    commit = source_commit()       # at the start: a commit made during the run is not it
    t_start, t_epoch = time.perf_counter(), time.time()
    summary, sections, failed, t2_rows = [], [], [], []
    for key, title, script, full_args, quick_args, md_file in STEPS:
        if key not in only:
            continue
        a = quick_args if args.quick else full_args
        if md_file:
            (OUT / md_file).unlink(missing_ok=True)
        print(f"[run_all] {key}: python {script} {' '.join(a)}", flush=True)
        rc, wall, stdout = run_step(key, script, a)
        cmd = f"`python paper_appendix/{script} {' '.join(a)}`".replace(" `", "`")
        status = "ok" if rc == 0 else f"FAILED (exit {rc})"
        print(f"[run_all] {key}: {status}, {wall:.1f} s", flush=True)
        summary.append(f"| {title} | {cmd} | {status} | {wall:.1f} |")
        body = ""
        if rc != 0:
            failed.append(key)
            tail = "\n".join(stdout.strip().splitlines()[-25:])
            body = (f"**FAILED** (exit {rc}); last lines of out/logs/{key}.log:\n\n"
                    f"```\n{tail}\n```\n")
        elif md_file and (OUT / md_file).exists():
            body = strip_md((OUT / md_file).read_text())
        else:
            body = strip_md(stdout)
        t2 = PAPER_T2.get(key, [])
        for sc, ds, pbf, pvif, pr, pattern in (t2 if isinstance(t2, list) else [t2]):
            m = re.search(pattern, stdout) if rc == 0 else None
            if m:
                vif_s, bf_s = float(m.group("vif")), float(m.group("bf"))
                t2_rows.append(f"| {sc} | {ds.format(**m.groupdict())} | {pbf} | {pvif} | "
                               f"{pr} | {bf_s:.1f} s | {vif_s:.1f} s | {bf_s / vif_s:.1f}x |")
        sections.append(f"## {title}\n\n{cmd}, {wall:.1f} s\n\n{body}\n")
    wall = time.perf_counter() - t_start
    mode = "QUICK (CI smoke run: smaller sizes, see each command)" if args.quick else "FULL"
    head = ["# Paper results on coxinfluence\n",
            f"**Mode: {mode}. Wall time of `python paper_appendix/run_all.py"
            f"{' --quick' if args.quick else ''}`: {wall:.0f} s ({wall / 60:.1f} min).**\n",
            *([f"**{args.note}**\n"] if args.note else []),
            f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} on "
            f"{platform.machine()} ({os.cpu_count()} cores, shared), Python "
            f"{platform.python_version()}, commit {commit}. Every number below is printed by "
            "the script named in its section (logs in paper_appendix/out/logs/, figures and "
            "CSVs in paper_appendix/out/, not committed); the 'paper' columns quote the paper.\n",
            "| result | command | status | wall s |", "|---|---|---|---|", *summary, ""]
    if t2_rows:
        head += ["## Table 2 (autodiff rows): runtimes from the Table 1 runs above\n",
                 "| scenario | dataset | paper brute force | paper VIF | paper ratio | "
                 "our brute force | our VIF | our ratio |", "|---|---|---|---|---|---|---|---|",
                 *t2_rows, ""]
    pngs = sorted(p.name for p in OUT.glob("*.png") if p.stat().st_mtime >= t_epoch)
    head += ["Figures written to paper_appendix/out/: " + (", ".join(pngs) or "none") + ".\n"]
    text = "\n".join(head) + "\n" + "\n".join(sections)
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text(text)
    print(f"[run_all] wrote {args.results}; total {wall:.1f} s; failed: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

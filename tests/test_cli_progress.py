"""One progress behaviour and one flag pair on every subcommand (issue 24 item 7): bars
on stderr by default only when stderr is a terminal, ``--progress`` / ``--no-progress``
to force them on or off, said in ``--help``; and ``audit --help`` says how patients are
labelled by default (item 5), which the report then does."""
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence import cli

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures" / "integration" / "gbsg2_subset.csv"
COVS = ["age", "tsize", "pnodes", "progrec", "estrec", "horTh"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"])
    assert exc.value.code == 0
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command, required", [("audit", ["--demo"]),
                                               ("asymptotics", [])])
def test_both_subcommands_take_the_same_flag_pair(command, required, capsys):
    parser = cli.build_parser()
    for extra, want in (([], None), (["--progress"], True), (["--no-progress"], False)):
        args = parser.parse_args([command, *required, *extra])
        assert args.progress is want, (command, extra)
        assert not hasattr(args, "no_progress")
    text = _help(command, capsys)
    assert "--progress, --no-progress" in text
    assert "default: only when stderr is a terminal" in text


def test_show_progress_follows_the_terminal_unless_told(monkeypatch):
    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

        def write(self, s):
            return len(s)

        def flush(self):
            pass

    for tty in (True, False):
        monkeypatch.setattr(sys, "stderr", Stream(tty))
        assert cli.show_progress(None) is tty
        assert cli.show_progress(True) is True and cli.show_progress(False) is False
    monkeypatch.setattr(sys, "stderr", object())          # no isatty at all
    assert cli.show_progress(None) is False


AUDIT = [sys.executable, "-m", "coxinfluence.cli", "audit", str(FIX), "--time", "time",
         "--event", "cens", "--id", "pid", "--covariates", *COVS, "--exact"]
ASYMPTOTICS = [sys.executable, "-m", "coxinfluence.cli", "asymptotics", "--sizes", "50", "100",
               "--reps", "2"]


def _run(argv, tmp_path, *extra):
    """Run with stderr a pipe; (exit code, stderr as written: bytes decoded, carriage
    returns kept)."""
    out = ["--out", str(tmp_path / ("r.html" if "audit" in argv else "asy"))]
    proc = subprocess.run([*argv, *out, *extra], capture_output=True, cwd=tmp_path, env=ENV,
                          timeout=300)
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.parametrize("argv, bar", [(AUDIT, "audit"), (ASYMPTOTICS, "simulate_gap")])
def test_no_progress_lines_on_a_non_terminal_stderr_by_default(argv, bar, tmp_path):
    """stderr is a pipe (a log): nothing with a carriage return, no bar; --progress
    forces the bars, --no-progress is accepted and silent."""
    code, err = _run(argv, tmp_path)
    assert code == 0, err
    assert "\r" not in err and bar not in err, err[-2000:]
    code, err = _run(argv, tmp_path, "--no-progress")
    assert code == 0 and "\r" not in err and bar not in err, err[-2000:]
    code, err = _run(argv, tmp_path, "--progress")
    assert code == 0, err
    assert "\r" in err and bar in err


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminal on this system")
def test_progress_bars_on_a_terminal_stderr_by_default(tmp_path):
    """stderr a (pseudo-)terminal: the audit's bars are drawn without being asked."""
    import fcntl
    import struct
    import termios
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))   # 100 columns
    chunks = []

    def read():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc = subprocess.run([*AUDIT, "--out", str(tmp_path / "r.html")], stdout=subprocess.PIPE,
                              stderr=slave, text=True, cwd=tmp_path, env=ENV, timeout=300)
    finally:
        os.close(slave)
    reader.join(timeout=30)
    os.close(master)
    err = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, err[-2000:]
    assert "audit" in err and "exact leave-one-out" in err and "\r" in err


def test_audit_help_says_how_patients_are_labelled(tmp_path, capsys):
    """Without --id, patients are the CSV's data rows counted from 1 (the help says so,
    and the printed top patients are those row numbers)."""
    text = _help("audit", capsys)
    assert ("without --id: by their data row number in the CSV, counted from 1 = the first "
            "row below the header") in text
    assert "with --demo, GBSG2's row position counted from 0" in text
    assert "with --cluster, the cluster column's values" in text
    out = tmp_path / "r.html"
    code = cli.main(["audit", str(FIX), "--time", "time", "--event", "cens", "--covariates",
                     *COVS, "--exact-max-n", "0", "--no-progress", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    d = pd.read_csv(FIX)
    d.index = pd.RangeIndex(1, len(d) + 1)
    want = ci.influence(ci.fit_cox(d[COVS], d.time, d.cens)).top(5).index
    line = next(ln for ln in stdout.splitlines() if ln.startswith("Most influential"))
    assert re.findall(r"(\S+) \(", line.split(":", 1)[1]) == [str(i) for i in want]
    assert str(d.pid.loc[want[0]]) == "P115"          # the data row holding patient P115

"""Tests for the ``coxinfluence asymptotics`` subcommand and the CLI's subcommand registry."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coxinfluence import cli
from coxinfluence.asymptotics import CoxDesign, simulate_gap

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(tmp_path, *extra):
    return cli.main(["asymptotics", "--sizes", "100", "200", "400", "--reps", "3",
                     "--seed", "5", "--out", str(tmp_path), *extra])


def test_writes_the_library_table_and_a_png(tmp_path, capsys):
    assert _run(tmp_path) == 0
    table = pd.read_csv(tmp_path / "asymptotics_table.csv")
    expect = simulate_gap((100, 200, 400), 3, seed=5).table
    assert list(table.columns) == list(expect.columns)
    pd.testing.assert_frame_equal(table, expect, check_exact=False, rtol=1e-12, atol=0)
    assert (tmp_path / "asymptotics.png").read_bytes()[:8] == PNG_MAGIC
    out = capsys.readouterr().out
    slope = simulate_gap((100, 200, 400), 3, seed=5).slope
    assert f"{slope:.3f}" in out and "theory: -1" in out


@pytest.mark.slow
def test_worker_processes_give_the_serial_table(tmp_path):
    assert _run(tmp_path / "serial") == 0
    assert _run(tmp_path / "par", "--workers", "2") == 0
    a = pd.read_csv(tmp_path / "serial" / "asymptotics_table.csv")
    b = pd.read_csv(tmp_path / "par" / "asymptotics_table.csv")
    pd.testing.assert_frame_equal(a, b)


def test_design_options_reach_the_simulation(tmp_path):
    assert cli.main(["asymptotics", "--sizes", "60", "120", "--reps", "2", "--out", str(tmp_path),
                     "--no-truncation", "--theta", "0.3", "--censor-rate", "0",
                     "--prefix", "ctl"]) == 0
    table = pd.read_csv(tmp_path / "ctl_table.csv")
    expect = simulate_gap((60, 120), 2, seed=0,
                          design=CoxDesign(theta=(0.3,), censor_rate=0.0, tau=None)).table
    pd.testing.assert_frame_equal(table, expect, check_exact=False, rtol=1e-12, atol=0)
    assert "lead_relerr" not in table.columns
    assert (table["n_events"] == table["n"]).all()          # no censoring, no truncation


@pytest.mark.parametrize("args, word", [
    (["--sizes", "5", "--reps", "3"], "sizes"),
    (["--sizes", "100", "200", "--reps", "1"], "n_reps"),
    (["--sizes", "100", "200", "--reps", "2", "--tau", "-1"], "tau"),
    (["--sizes", "100", "200", "--reps", "2", "--workers", "0"], "workers"),
    (["--sizes", "100", "200", "--reps", "2", "--x-bound", "0"], "x_bound"),
])
def test_bad_input_exits_2_naming_the_problem(tmp_path, capsys, args, word):
    assert cli.main(["asymptotics", *args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "error" in err and word in err
    assert not (tmp_path / "asymptotics_table.csv").exists()


def test_argparse_errors_and_missing_subcommand(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["asymptotics", "--reps", "many"])
    assert exc.value.code == 2
    assert cli.main([]) == 2
    assert "asymptotics" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["no-such-command"])
    assert exc.value.code == 2


def test_registry_accepts_new_subcommands_and_rejects_duplicates(capsys):
    assert "asymptotics" in cli.SUBCOMMANDS
    seen = {}

    def add(p):
        p.add_argument("--x", type=int, default=1)

    def run(args):
        seen["x"] = args.x
        return 7

    registry = dict(cli.SUBCOMMANDS)
    registry["hello"] = cli.Subcommand("hello", "say hello", add_arguments=add, run=run)
    assert cli.main(["hello", "--x", "3"], registry=registry) == 7 and seen == {"x": 3}
    assert "hello" not in cli.SUBCOMMANDS                     # the global registry is untouched
    with pytest.raises(ValueError, match="already registered"):
        cli.register(cli.SUBCOMMANDS["asymptotics"])


def test_module_entry_point(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "coxinfluence.cli", "asymptotics", "--sizes", "50", "100",
         "--reps", "2", "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert "slope of log mean_i" in proc.stdout
    assert np.isfinite(pd.read_csv(tmp_path / "asymptotics_table.csv")["gap_mean"]).all()

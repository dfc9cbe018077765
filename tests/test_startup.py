"""Start-up (issue 45 item 6): ``import coxinfluence`` and ``coxinfluence audit --help``
import no heavy library. lifelines, matplotlib, scipy.stats, statsmodels, scikit-survival,
JAX, the report and the command line's family table are imported on use, by the call that
needs them; the families still register themselves on ``import coxinfluence`` (their
registration imports none of these: tests/test_registry.py checks the dispatch).

Each check runs in a fresh interpreter (a subprocess) and reads ``sys.modules``: what is
imported, not how long it takes.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("lifelines", "matplotlib", "scipy.stats", "statsmodels", "sksurv", "jax")
ON_USE = ("coxinfluence.report", "coxinfluence.plotting", "coxinfluence.autodiff")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_import_coxinfluence_imports_no_heavy_library():
    out = _run("import coxinfluence, sys; print(sorted(m for m in "
               f"{HEAVY + ON_USE + ('coxinfluence.cli',)!r} if m in sys.modules))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_import_coxinfluence_registers_the_families():
    # registration is cheap, not skipped: a bare import dispatches a CoxFit
    out = _run("import sys, numpy as np, coxinfluence as ci\n"
               "from coxinfluence.influence_functions.registry import families, family_of\n"
               "fit = ci.fit_cox(np.arange(8.0)[:, None] % 3, np.arange(1.0, 9.0), "
               "np.ones(8, bool))\n"
               "print(family_of(fit).name, sorted(f.name for f in families()))")
    assert out.returncode == 0, out.stderr
    name, registered = out.stdout.split(" ", 1)
    assert name == "cox"
    for family in ("aft", "cox", "fine_gray", "lifelines", "scikit-survival", "statsmodels"):
        assert repr(family) in registered


def _cli(argv) -> dict:
    code = ("import contextlib, io, json, sys\n"
            "from coxinfluence.cli import main\n"
            "out, err = io.StringIO(), io.StringIO()\n"
            "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
            "    try:\n"
            f"        status = main({list(argv)!r})\n"
            "    except SystemExit as stop:\n"
            "        status = stop.code\n"
            "print(json.dumps({'status': status, 'out': out.getvalue(), "
            "'err': err.getvalue(), 'heavy': sorted(m for m in "
            f"{HEAVY + ON_USE!r} if m in sys.modules)}}))")
    run = _run(code)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_audit_help_works_and_imports_no_heavy_library():
    got = _cli(["audit", "--help"])
    assert got["status"] == 0
    assert got["out"].startswith("usage: coxinfluence audit")
    assert "--model" in got["out"] and "--target" in got["out"]
    assert got["heavy"] == []


def test_audit_argument_error_imports_no_heavy_library():
    got = _cli(["audit", "--no-such-option"])
    assert got["status"] == 2
    assert "--no-such-option" in got["err"]
    assert got["heavy"] == []


def test_the_console_command_prints_the_help():
    run = subprocess.run([sys.executable, "-m", "coxinfluence", "audit", "--help"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "usage:" in run.stdout

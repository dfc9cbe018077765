"""What a new user's first commands leave behind (issue 24 item 8): the README's main
job writes its report into the checkout, and git must not offer it for a commit."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_audit_outputs():
    """The ``--out`` paths of the README's ``coxinfluence audit`` commands (the main
    job, ``--demo``, first)."""
    text = (ROOT / "README.md").read_text()
    return re.findall(r"coxinfluence audit\b[^`]*?--out\s+([^\s`]+)", text)


def test_readme_audit_reports_are_git_ignored():
    outs = readme_audit_outputs()
    text = (ROOT / "README.md").read_text()
    assert re.search(r"coxinfluence audit --demo\b[^`]*?--out", text), \
        "README.md has no `coxinfluence audit --demo ... --out PATH` command"
    if shutil.which("git") is None or subprocess.run(
            ["git", "rev-parse", "--git-dir"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout: nothing to ignore the report for")
    for out in outs:
        # the README's command runs in the repository root (after `pip install -e .`)
        res = subprocess.run(["git", "check-ignore", "--no-index", "-q", out], cwd=ROOT)
        assert res.returncode == 0, (f"the README's audit command writes {out} into "
                                     "the checkout and .gitignore does not ignore it")

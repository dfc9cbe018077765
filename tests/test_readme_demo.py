"""The README's example runs, and the demo prints the five most influential patients with
VIF, Reid and exact leave-one-out side by side."""
import re
from pathlib import Path

import numpy as np

from coxinfluence import demo

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    change, exact = namespace["change"], namespace["exact"]
    assert change.shape == exact.shape == (686, 9)
    assert np.corrcoef(change["pnodes"], exact["pnodes"])[0, 1] > 0.95


def test_readme_set_up_commands_are_what_ci_runs():
    text = README.read_text()
    commands = re.findall(r"^    (pip install .*)$", text, re.M)
    assert len(commands) == 2
    ci_script = (README.parent / ".ci" / "run").read_text()
    assert commands[1] in ci_script


def test_demo_prints_top_five(capsys):
    assert demo.main() == 0
    out = capsys.readouterr().out
    table = out.split("Five most influential patients")[1]
    rows = [line for line in table.splitlines() if re.match(r"^\d+\s", line)]
    assert len(rows) == 5
    assert "VIF" in table and "Reid" in table and "exact LOO" in table


def test_public_namespace():
    """``ci.datasets`` and friends are reachable from the package (issue 3 spells them so),
    and importing the package does not import JAX (the autodiff path is optional)."""
    import subprocess
    import sys
    code = ("import sys, coxinfluence as ci; ci.datasets.load_gbsg2; ci.metrics; ci.vif; "
            "ci.influence; assert callable(ci.vif); print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"

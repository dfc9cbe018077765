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

"""Behaviour preserved (issue 23 item 6): every case of ``tests/reference_cases.py`` (rows,
subjects, clusters, delayed entry, penalised and stratified models, every method and
target of ``ci.influence``, lifelines and statsmodels models) recomputed with the package
as it is now equals the values saved from the reference commit in
``tests/fixtures/reference_values.npz`` (``tests/make_reference_values.py``): floats to
``rtol=1e-12`` plus ``1e-12`` times the largest absolute reference value of each array,
NaN in the same places, integers, booleans, strings (labels, flags, warnings, error
messages) equal; a gradient at the optimum on the scale of its fit's information, and a
fit that did not converge by its refusals and flags only (issue 44: the rule is in
``tests/reference_cases.py``'s docstring)."""
from functools import lru_cache
from pathlib import Path

import pytest
import reference_cases as rc

FIXTURE = Path(__file__).parent / "fixtures" / "reference_values.npz"


@lru_cache(maxsize=1)
def reference():
    return rc.load(FIXTURE)


def test_the_file_has_every_case():
    """A case added or renamed without regenerating the file fails here, not silently."""
    arrays, meta = reference()
    assert meta["cases"] == list(rc.CASES)
    names = {key.split(rc.SEP, 1)[0] for key in arrays}
    assert names == set(rc.CASES)


@pytest.mark.parametrize("name", list(rc.CASES))
def test_same_values_as_the_reference_commit(name):
    for module in rc.CASES[name].requires:
        pytest.importorskip(module, reason=f"case {name} needs the optional {module}")
    arrays, meta = reference()
    prefix = f"{name}{rc.SEP}"
    ref = {k: v for k, v in arrays.items() if k.startswith(prefix)}
    assert ref, f"no reference values for case {name} in {FIXTURE}"
    new = rc.compute_case(name)
    problems = [f"{k}: missing now" for k in sorted(ref.keys() - new.keys())]
    problems += [f"{k}: new output, not in the reference" for k in sorted(new.keys() - ref.keys())]
    for key in sorted(ref.keys() & new.keys()):
        msg = rc.compare(key, ref[key], new[key], rc.information_of(key, ref))
        if msg is not None:
            problems.append(msg)
    assert not problems, (
        f"case {name} differs from the values of commit {meta['commit_short']} "
        f"({len(problems)} outputs; if the change is intended, regenerate the file from the "
        f"new commit as tests/make_reference_values.py says):\n" + "\n".join(problems[:25]))

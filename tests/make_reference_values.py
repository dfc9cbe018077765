"""Save the reference values of the cases in ``tests/reference_cases.py`` for the
``coxinfluence`` found on the import path, into ``tests/fixtures/reference_values.npz``
(issue 23 item 6: results equal the previous commit's to 1e-12;
``tests/test_reference_values.py`` compares).

Generate them from a clean checkout of the commit to preserve, never from a tree being
edited, e.g.::

    git worktree add /tmp/ref_head <commit>
    PYTHONPATH=/tmp/ref_head python tests/make_reference_values.py --expect-root /tmp/ref_head
    git worktree remove /tmp/ref_head --force

The cases come from this script's folder, the package from the import path; the script
refuses to run when the package is not under ``--expect-root``, when its checkout has
uncommitted changes in ``coxinfluence/``, or when lifelines or statsmodels is missing
(every case must have reference values). The commit of the package's checkout is saved
in the file.
"""
from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _version(module):
    try:
        return __import__(module).__version__
    except ImportError:
        return "absent"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--expect-root", required=True,
                        help="the checkout the package must be imported from")
    parser.add_argument("--out", default=str(HERE / "fixtures" / "reference_values.npz"))
    parser.add_argument("--allow-dirty", action="store_true",
                        help="save even if coxinfluence/ has uncommitted changes")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(HERE))
    import reference_cases as rc

    import coxinfluence

    root = Path(args.expect_root).resolve()
    package_file = Path(coxinfluence.__file__).resolve()
    assert str(package_file).startswith(str(root) + "/"), (
        f"coxinfluence is imported from {package_file}, not from {root}: "
        f"run with PYTHONPATH={root}")
    assert Path(rc.__file__).resolve().parent == HERE
    commit = _git(root, "rev-parse", "HEAD")
    dirty = _git(root, "status", "--porcelain", "--", "coxinfluence")
    if dirty and not args.allow_dirty:
        raise SystemExit(f"{root} has uncommitted changes in coxinfluence/:\n{dirty}")
    for module in ("lifelines", "statsmodels"):
        __import__(module)          # every case needs its reference values

    arrays, times = {}, {}
    t0 = time.perf_counter()
    for name in rc.CASES:
        t = time.perf_counter()
        arrays.update(rc.compute_case(name))
        times[name] = time.perf_counter() - t
        print(f"{name:50s} {times[name]:6.2f} s", flush=True)
    total = time.perf_counter() - t0
    meta = {
        "commit": commit, "commit_short": commit[:7], "package_file": str(package_file),
        "dirty": bool(dirty), "cases": list(rc.CASES), "rtol": rc.RTOL,
        "atol_scale": rc.ATOL_SCALE, "python": platform.python_version(),
        "machine": platform.machine(),
        "versions": {m: _version(m) for m in ("numpy", "scipy", "pandas", "lifelines",
                                              "statsmodels")},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rc.save(out, arrays, meta)
    # the file reads back to the same values
    back, back_meta = rc.load(out)
    assert back.keys() == arrays.keys() and back_meta == meta
    for key, value in arrays.items():
        assert rc.compare(key, rc._array(value), back[key]) is None, key
    print(f"{len(rc.CASES)} cases, {len(arrays)} arrays, {total:.1f} s; commit {commit}; "
          f"{out} ({out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

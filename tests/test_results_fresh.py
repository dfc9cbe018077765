"""paper_appendix/RESULTS.md stays true to the scripts (issue 24 item 10): every step of
run_all.py has a section that names the commit its script ran at, and no commit after it
changed the script or a paper_appendix/ module the script imports (run_all.local_imports).
A stale section is rerun alone with ``python paper_appendix/run_all.py --only STEP
--update``. Not counted: run_all.py itself (it formats, it computes nothing) and the
package (its behaviour is checked by the rest of the suite; counting it would make every
section stale at every commit). Skipped outside a git checkout, or where a section's
commit is not in the history (a shallow clone)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "paper_appendix"))

import run_all  # noqa: E402

RESULTS = ROOT / "paper_appendix" / "RESULTS.md"


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def sections():
    """[(key, script, commit)] of RESULTS.md's step markers, in file order."""
    return [(m["key"], m["script"], m["commit"])
            for m in run_all.MARKER.finditer(RESULTS.read_text())]


def stale_sections(found):
    """{key: [(commit, file), ...]}: the commits after a section's that changed its script
    or the modules it imports; raises pytest.skip where a commit is not in the history."""
    stale = {}
    for key, script, commit in found:
        if git("cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
            pytest.skip(f"commit {commit} of RESULTS.md's section {key!r} is not in this "
                        "checkout's history (a shallow clone?)")
        files = [f"paper_appendix/{f}" for f in run_all.local_imports(script)]
        changed = []
        for f in files:
            log = git("log", "--format=%h", f"{commit}..HEAD", "--", f)
            assert log.returncode == 0, log.stderr
            hashes = log.stdout.split()
            changed += [f"{f} ({', '.join(hashes)})"] if hashes else []
        if changed:
            stale[key] = (commit, changed)
    return stale


@pytest.fixture(scope="module")
def checkout():
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout: RESULTS.md's commits cannot be compared")


def test_every_step_has_a_section_with_its_commit():
    """Each step of run_all.STEPS has one marked section (in STEPS' order) with its
    script, a visible 'Ran at commit' line and the same commit in the summary table."""
    found = sections()
    keys = [k for k, _, _ in found]
    scripts = {s[0]: s[2] for s in run_all.STEPS}
    titles = {s[0]: s[1] for s in run_all.STEPS}
    missing = [k for k in scripts if k not in keys]
    assert not missing, (f"RESULTS.md has no section for step(s) {missing}: run python "
                         f"paper_appendix/run_all.py --only {','.join(missing)} --update")
    assert keys == list(scripts), f"sections not one per step in run_all's order: {keys}"
    wrong = [(k, s) for k, s, _ in found if s != scripts[k]]
    assert not wrong, f"sections whose script is not run_all.STEPS' for their step: {wrong}"
    text = RESULTS.read_text()
    lines = text.splitlines()
    for key, _, _ in found:
        section = text[text.index(f"<!-- step: {key} "):]
        stamp = run_all.MARKER.match(section)
        stamp = stamp["commit"] + (stamp["dirty"] or "")
        assert section.split("\n\n")[1].startswith(f"Ran at commit {stamp} on "), key
        row = [line for line in lines if line.startswith(f"| {titles[key]} |")]
        assert len(row) == 1 and row[0].rstrip().endswith(f"| {stamp} |"), (key, row)


def test_no_script_changed_after_its_section(checkout):
    stale = stale_sections(sections())
    assert not stale, "RESULTS.md sections older than their scripts:\n" + "\n".join(
        f"  {key} (ran at {commit}): changed since in {', '.join(files)}; rerun "
        f"python paper_appendix/run_all.py --only {key} --update"
        for key, (commit, files) in stale.items())


def test_staleness_is_detected(checkout):
    """The check itself: a section stamped with the parent of the last commit that
    touched its script is stale; stamped with that commit, it is not."""
    last = git("log", "-1", "--format=%h", "--", "paper_appendix/table3_case_study.py")
    last = last.stdout.strip()
    if not last or git("cat-file", "-e", f"{last}^^{{commit}}").returncode != 0:
        pytest.skip("table3_case_study.py's last commit or its parent is not in the history")
    parent = git("rev-parse", "--short", f"{last}^").stdout.strip()
    assert "table3" in stale_sections([("table3", "table3_case_study.py", parent)])
    assert stale_sections([("table3", "table3_case_study.py", last)]) == {}
    # a change to an imported module makes the section stale too
    common = git("log", "-1", "--format=%h", "--", "paper_appendix/_common.py").stdout.strip()
    if common and git("cat-file", "-e", f"{common}^^{{commit}}").returncode == 0:
        before = git("rev-parse", "--short", f"{common}^").stdout.strip()
        stale = stale_sections([("table3", "table3_case_study.py", before)])
        assert any(f.startswith("paper_appendix/_common.py") for f in stale["table3"][1])


def _fake_run(key, commit="abc1234"):
    title = dict((s[0], s[1]) for s in run_all.STEPS)[key]
    script = dict((s[0], s[2]) for s in run_all.STEPS)[key]
    row = f"| {title} | `python paper_appendix/{script}` | ok | 1.0 | {commit} |"
    section = (f"<!-- step: {key} script: {script} commit: {commit} -->\n## {title}\n\n"
               f"Ran at commit {commit} on 2030-01-01: `python paper_appendix/{script}`, "
               f"1.0 s\n\nNEW BODY of {key}\n")
    return row, section


def test_update_replaces_only_the_steps_section_row_and_table2_row():
    """run_all.update_results on the committed RESULTS.md: the updated steps' sections,
    summary rows and Table 2 rows change; every other line stays."""
    text = RESULTS.read_text()
    assert run_all.update_results(text, {}, {}) == text           # a no-op round trip
    row3, sec3 = _fake_run("table3")
    rowk, seck = _fake_run("table1_karate")
    t2 = "| Node embedding | Karate | 204 min | 109 min | 1.87x | 1.0 s | 1.0 s | 1.0x |"
    runs = {"table3": (row3, sec3, [], True), "table1_karate": (rowk, seck, [t2], True)}
    new = run_all.update_results(text, runs, {"table3": "`table3` at abc1234 on 2030-01-01"})
    header, secs = run_all.parse_results(new)
    old_header, old_secs = run_all.parse_results(text)
    assert list(secs) == list(old_secs)
    for key in secs:
        if key in runs:
            assert secs[key].rstrip("\n") == runs[key][1].rstrip("\n")
        else:
            assert secs[key] == old_secs[key], key
    def lines(h):
        return [line for line in h.splitlines() if not line.startswith(run_all.UPDATED)]

    removed = [line for line in lines(old_header) if line not in lines(header)]
    added = [line for line in lines(header) if line not in lines(old_header)]
    assert sorted(added) == sorted([row3, rowk, t2])
    assert len(removed) == 3 and all(line.startswith(("| Table 3:", "| Table 1 (Node",
                                                      "| Node embedding | Karate |"))
                                     for line in removed)
    assert "`table3` at abc1234 on 2030-01-01" in updated_list(header)
    # a second update of another step keeps the first in the header's list
    again = run_all.update_results(new, {}, {"table4": "`table4` at def5678 on 2030-01-02"})
    listed = updated_list(run_all.parse_results(again)[0])
    assert "`table3` at abc1234 on 2030-01-01" in listed
    assert "`table4` at def5678 on 2030-01-02" in listed
    assert listed.index("`table3`") < listed.index("`table4`")       # in STEPS' order
    for entry in updated_list(old_header).split("; ") if updated_list(old_header) else []:
        if not entry.startswith(("`table3`", "`table4`")):
            assert entry in listed                                  # earlier entries kept


def updated_list(header):
    """The header's list of steps regenerated alone ('' when there is none)."""
    line = [x for x in header.splitlines() if x.startswith(run_all.UPDATED)]
    assert len(line) <= 1
    return line[0][len(run_all.UPDATED):].rstrip(".") if line else ""


def test_update_one_step_in_place(tmp_path, shared_data_dir):
    """``run_all.py --only table3 --update`` runs only table3 and rewrites only its
    section and summary row (and the header's list) of a copy of RESULTS.md, stamped
    with the current commit."""
    import os
    out = tmp_path / "RESULTS.md"
    out.write_text(RESULTS.read_text())
    env = dict(os.environ, COXINFLUENCE_DATA=str(shared_data_dir),
               COXINFLUENCE_NO_DOWNLOAD="1")
    res = subprocess.run([sys.executable, str(ROOT / "paper_appendix" / "run_all.py"),
                          "--only", "table3", "--update", "--results", str(out)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[run_all] table3:" in res.stdout and "table1:" not in res.stdout
    new, old = run_all.parse_results(out.read_text()), run_all.parse_results(
        RESULTS.read_text())
    assert {k for k in old[1] if new[1][k] != old[1][k]} <= {"table3"}
    stamp = run_all.MARKER.match(new[1]["table3"])
    head = git("rev-parse", "--short", "HEAD").stdout.strip()
    if head:
        assert stamp["commit"] == head
    assert "Test sample 0 (row" in new[1]["table3"]
    assert f"`table3` at {stamp['commit']}" in updated_list(new[0])


def test_update_refusals(tmp_path):
    script = str(ROOT / "paper_appendix" / "run_all.py")
    res = subprocess.run([sys.executable, script, "--update"], capture_output=True, text=True)
    assert res.returncode == 2 and "--update needs --only" in res.stderr
    res = subprocess.run([sys.executable, script, "--only", "table3", "--update", "--quick",
                          "--results", str(RESULTS)], capture_output=True, text=True)
    assert res.returncode == 2 and "is a FULL run" in res.stderr
    plain = tmp_path / "R.md"
    plain.write_text("# no markers\n")
    res = subprocess.run([sys.executable, script, "--only", "table3", "--update",
                          "--results", str(plain)], capture_output=True, text=True)
    assert res.returncode != 0 and "step markers" in res.stderr

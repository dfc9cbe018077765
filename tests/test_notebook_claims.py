"""The walkthrough's prose states numbers (issue 44 item 6): each is checked here against the
numbers the notebook computes when it runs on the full data (as the documentation site runs
it: no ``COXINFLUENCE_QUICK``), to the precision the text prints them. Each accuracy figure
is of the method it names: the VIF's is ``method="vif"`` against exact refits, the audit's
(``method="auto"``, whose top patients are refits) is stated as the audit's."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WALKTHROUGH = ROOT / "notebooks" / "biostatistician_walkthrough.ipynb"

#: run after the notebook, in its kernel: the numbers its prose states, as JSON
CLAIMS_CELL = r'''
import json as _json

def _accuracy(approx, exact):
    err = (approx.loo_change - exact.loo_change).abs()
    corr = approx.correlation(exact)
    col = err.max().idxmax()
    unit = err[col].idxmax()
    return {"corr_min": corr.min(), "corr_min_col": corr.idxmin(), "corr_max": corr.max(),
            "corr_max_col": corr.idxmax(), "err": err[col].max(), "err_col": col,
            "err_unit": str(unit), "err_value": approx.loo_change.loc[unit, col],
            "err_exact": exact.loo_change.loc[unit, col],
            "err_unit_verified": bool(approx.verified.loc[unit]),
            "max_exact": exact.loo_change.abs().to_numpy().max()}

print("CLAIMS " + _json.dumps({
    "n": len(df), "top1": str(res.top(1).index[0]), "verified": int(res.verified.sum()),
    "vif": _accuracy(vif, ex), "audit": _accuracy(res, ex),
    "brier_n": len(train), "brier_vif": _accuracy(brier_vif, brier_exact),
    "heart_vif": _accuracy(vif_pp, exact_pp)}, default=float))
'''


def _same(stated: str, computed: float) -> bool:
    """``stated`` is ``computed`` printed to the stated number of decimals."""
    decimals = len(stated.split(".")[1]) if "." in stated else 0
    return f"{computed:.{decimals}f}" == stated


def _accuracy_checks(m, acc, corr_at, err_at):
    """(what, stated, computed) for a sentence "correlates A (`c1`) to B (`c2`) ... largest
    error E (`c3`)" (group positions ``corr_at``, ``err_at``)."""
    lo, lo_col, hi, hi_col = (m.group(corr_at + k) for k in range(4))
    return [("lowest correlation", lo, acc["corr_min"]),
            ("highest correlation", hi, acc["corr_max"]),
            ("largest error", m.group(err_at), acc["err"]),
            ("column of the lowest correlation", lo_col, acc["corr_min_col"]),
            ("column of the highest correlation", hi_col, acc["corr_max_col"]),
            ("column of the largest error", m.group(err_at + 1), acc["err_col"])]


#: (name, pattern over the prose with whitespace collapsed, checks(match, claims) ->
#: [(what, stated text, computed value)])
CLAIMS = [
    ("patients", r"On all (\d+) patients \(the table below",
     lambda m, c: [("patients", m.group(1), c["n"])]),
    ("VIF against exact refits",
     r"\*\*the VIF\*\* correlates (0\.\d+) \(`(\w+)`\) to (0\.\d+) \(`(\w+)`\) with the exact "
     r"changes; its largest error is (0\.\d+), on `(\w+)` for patient (\w+), the most "
     r"influential \(VIF (-?0\.\d+), exact (-?0\.\d+)\)",
     lambda m, c: _accuracy_checks(m, c["vif"], 1, 5) + [
         ("patient of the largest error", m.group(7), c["vif"]["err_unit"]),
         ("the most influential patient", m.group(7), c["top1"]),
         ("its VIF change", m.group(8), c["vif"]["err_value"]),
         ("its exact change", m.group(9), c["vif"]["err_exact"])]),
    ("the audit against exact refits",
     r"\*\*the audit\*\*, with (\d+) patients refitted, correlates (\d\.\d+) to (\d\.\d+); its "
     r"largest error is (0\.\d+) \(`(\w+)`\), on a patient outside the verified top",
     lambda m, c: [("patients refitted", m.group(1), c["verified"]),
                   ("lowest correlation", m.group(2), c["audit"]["corr_min"]),
                   ("highest correlation", m.group(3), c["audit"]["corr_max"]),
                   ("largest error", m.group(4), c["audit"]["err"]),
                   ("column of the largest error", m.group(5), c["audit"]["err_col"]),
                   ("that patient is not verified", "False",
                    str(c["audit"]["err_unit_verified"]))]),
    ("Brier score, VIF against exact refits",
     r"On the (\d+) training patients of the full data the VIF's changes correlate (0\.\d+) "
     r"with the exact ones \(largest error (0\.\d+), for changes up to (0\.\d+)\)",
     lambda m, c: [("training patients", m.group(1), c["brier_n"]),
                   ("correlation", m.group(2), c["brier_vif"]["corr_min"]),
                   ("largest error", m.group(3), c["brier_vif"]["err"]),
                   ("largest exact change", m.group(4), c["brier_vif"]["max_exact"])]),
    ("Stanford, VIF against exact refits",
     r"the VIF per patient \(`method=\"vif\"`\) correlates (0\.\d+) \(`(\w+)`\) to (0\.\d+) "
     r"\(`(\w+)`\), largest error (0\.\d+) \(`(\w+)`\)",
     lambda m, c: _accuracy_checks(m, c["heart_vif"], 1, 5)),
]


def mismatches(prose: str, claims: dict) -> list[str]:
    """The claims of :data:`CLAIMS` that ``prose`` does not state, or states with a number
    (a column, a label) other than the computed one."""
    text = " ".join(prose.split())
    out = []
    for name, pattern, checks in CLAIMS:
        m = re.search(pattern, text)
        if m is None:
            out.append(f"{name}: the sentence is not in the prose (pattern {pattern!r})")
            continue
        for what, stated, computed in checks(m, claims):
            ok = (_same(stated, computed) if isinstance(computed, float)
                  else stated == str(computed))
            if not ok:
                out.append(f"{name}: {what} stated {stated}, computed {computed!r}")
    return out


def _prose(nb) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_the_checker_fails_on_a_wrong_number():
    """A claim stated with another number, a wrong column or not at all is reported."""
    prose = ("On all 686 patients (the table below; the VIF per patient (`method=\"vif\"`) "
             "correlates 0.9989 (`transplant`) to 0.9998 (`surgery`), largest error 0.0189 "
             "(`transplant`).")
    acc = {"corr_min": 0.99893, "corr_min_col": "transplant", "corr_max": 0.99978,
           "corr_max_col": "surgery", "err": 0.018900, "err_col": "transplant"}
    claims = {"n": 686, "heart_vif": acc}
    found = mismatches(prose, claims)
    assert [f.split(":")[0] for f in found] == [
        "VIF against exact refits", "the audit against exact refits",
        "Brier score, VIF against exact refits"], found      # only the sentences left out
    assert mismatches(prose, {**claims, "n": 300})[0].startswith(
        "patients: patients stated 686, computed 300")
    wrong = dict(acc, corr_min=0.9979)
    assert any("lowest correlation stated 0.9989, computed 0.9979" in f
               for f in mismatches(prose, {**claims, "heart_vif": wrong}))
    wrong = dict(acc, err_col="age")
    assert any("column of the largest error stated transplant" in f
               for f in mismatches(prose, {**claims, "heart_vif": wrong}))


@pytest.mark.slow
def test_walkthrough_states_what_it_computes(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="the test extra needs nbformat")
    nbclient = pytest.importorskip("nbclient", reason="the test extra needs nbclient")
    pytest.importorskip("ipykernel", reason="the test extra needs ipykernel")
    pytest.importorskip("sksurv", reason="the walkthrough's last sections need scikit-survival")
    monkeypatch.delenv("COXINFLUENCE_QUICK", raising=False)     # the full data, as the docs
    monkeypatch.setenv("COXINFLUENCE_OUT", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "agg")
    nb = nbformat.read(WALKTHROUGH, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(CLAIMS_CELL))
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    line = next(s for s in printed.splitlines() if s.startswith("CLAIMS "))
    claims = json.loads(line[len("CLAIMS "):])
    found = mismatches(_prose(nb), claims)
    assert not found, "\n".join(found)
    # the accuracy the prose gives the VIF is the VIF's, not the audit's (whose top rows are
    # exact refits): the two differ, and the audit is the closer to the refits
    assert claims["vif"]["err"] > 10 * claims["audit"]["err"]
    assert claims["verified"] > 0

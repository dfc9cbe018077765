"""Every notebook under notebooks/ executes top to bottom (nbclient, small scale via
COXINFLUENCE_QUICK=1) without raising, and the PNG figures it writes to COXINFLUENCE_OUT
are real images (decode, reasonable size, not a single flat colour)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

nbformat = pytest.importorskip("nbformat", reason="the test extra needs nbformat")
nbclient = pytest.importorskip("nbclient", reason="the test extra needs nbclient")
pytest.importorskip("ipykernel", reason="the test extra needs ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# figures each notebook must write (file names under COXINFLUENCE_OUT)
EXPECTED_PNG = {
    "asymptotics.ipynb": ["asymptotics.png"],
    "biostatistician_walkthrough.ipynb": ["walkthrough_vif_vs_exact.png",
                                          "walkthrough_index_plot.png",
                                          "walkthrough_survival_target.png"],
    "autodiff_vif.ipynb": ["autodiff_cox_vs_closed_form.png"],
}


def test_notebooks_found():
    names = {p.name for p in NOTEBOOKS}
    assert set(EXPECTED_PNG) <= names, f"missing notebooks: {set(EXPECTED_PNG) - names}"


def check_png(path):
    import matplotlib.image as mpimg
    assert path.exists(), f"{path.name} was not written"
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] >= 100 and img.shape[1] >= 100, img.shape
    flat = img.reshape(-1, img.shape[-1])
    assert not (flat == flat[0]).all(), f"{path.name}: all pixels identical"
    # a figure has ink: a visible share of pixels differ from the background colour
    bg = np.median(flat, axis=0)
    assert (np.abs(flat - bg).max(axis=1) > 0.1).mean() > 0.005, f"{path.name}: nearly blank"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    monkeypatch.setenv("COXINFLUENCE_QUICK", "1")
    monkeypatch.setenv("COXINFLUENCE_OUT", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        f"{path.name} is committed with outputs; clear them"
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()          # raises CellExecutionError when a cell raises
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    for name in EXPECTED_PNG.get(path.name, []):
        check_png(tmp_path / name)
    written = list(tmp_path.glob("*.png"))
    assert written, f"{path.name} wrote no PNG to COXINFLUENCE_OUT"
    for png in written:
        check_png(png)

"""crr and ``ci.fit_fine_gray`` with a censoring and a competing failure tied at time 0
(docs/validation.md, docs/r/crr_time_zero.R): crr reads the censoring Kaplan-Meier at time
0 after the censorings there (``approx`` at ``0 * (1 - 100 eps) = 0``, the knot), G(0) =
1 - 1/n instead of G(0-) = 1, and differs from us by about 1e-5; crr made to read the left
limit at 0 equals us."""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "r" / "crr_time_zero.R"


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: the comparison with cmprsk::crr is skipped "
                           "(install r-base-core r-cran-cmprsk)")
def test_crr_reads_the_censoring_distribution_after_the_censorings_at_time_zero(tmp_path):
    probe = subprocess.run(["Rscript", "-e", "library(cmprsk)"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("R's cmprsk is not installed (apt-get install -y r-cran-cmprsk)")
    subprocess.run(["Rscript", str(SCRIPT), str(tmp_path)], check=True, capture_output=True)
    d = pd.read_csv(tmp_path / "data.csv")
    ref = pd.read_csv(tmp_path / "crr.csv").set_index("what")
    at0 = d.loc[d["ft"] == 0, "fs"].value_counts().to_dict()
    assert at0 == {0: 1, 1: 3, 2: 1}         # tied at 0: a censoring, both causes' failures
    n = len(d)
    assert n == 800 and ref.loc["crr", "G_read_at_0"] == 1 - 1 / n == 0.99875
    fit = ci.fit_fine_gray(d[["x1", "x2"]], d["ft"], d["fs"], cause=1)
    crr = ref.loc["crr", ["x1", "x2"]].to_numpy(dtype=float)
    left = ref.loc["crr_left_limit_at_0", ["x1", "x2"]].to_numpy(dtype=float)
    assert np.abs(fit.coef - left).max() < 1e-10
    # the numbers docs/validation.md states
    diff = np.abs(fit.coef - crr)
    assert [f"{v:.1e}" for v in diff] == ["8.3e-07", "4.8e-06"], diff
    assert f"{(diff / fit.se).max():.0e}" == "5e-05"

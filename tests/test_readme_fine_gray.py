"""The competing-risks example (once the README's; now on the site, the page
``docs/user_guide/competing_risks.md``, which executes it at build time), checked against
oracles: the design's closed-form
cumulative incidence (the truth it quotes), R's ``cmprsk::crr`` + ``predict.crr`` (live,
where Rscript and cmprsk are installed) for the fitted value, and literal refits (the fit
redone on the data without each subject, ``F_1(1 | x)`` recomputed from it) for the
subjects that move the prediction and the correlation it prints."""
from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import coxinfluence as ci

PAGE = Path(__file__).resolve().parents[1] / "docs" / "user_guide" / "competing_risks.md"


def flat(text):
    """The page's prose with its line breaks and runs of spaces as single spaces."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def run():
    """Execute the page's Fine-Gray example once: its namespace and printed lines."""
    section = PAGE.read_text().split("## An example with a known truth")[1].split("\n## ")[0]
    code = re.search(r"```\{code-cell\} ipython3\n(.*?)```", section, re.S).group(1)
    namespace, buf = {}, io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, str(PAGE), "exec"), namespace)
    return namespace, buf.getvalue().strip().splitlines(), section


@pytest.fixture(scope="module")
def literal(run):
    """``F_1(1 | x)`` of the fit without each subject minus the full fit's."""
    ns = run[0]
    X, time, status, cif, fit = ns["X"], ns["time"], ns["status"], ns["cif"], ns["fit"]
    full = cif.value(fit, fit.coef)[0, 0]
    out = np.empty(len(time))
    for i in range(len(time)):
        keep = np.arange(len(time)) != i
        fit_i = ci.fit_fine_gray(X[keep], time[keep], status[keep], cause=1)
        out[i] = cif.value(fit_i, fit_i.coef)[0, 0] - full
    return out


def test_value_and_truth_are_what_the_page_says(run):
    ns, printed, _ = run
    value = ns["cif"].value(ns["fit"], ns["fit"].coef)[0, 0]
    assert printed[0] == f"[[{value:.3f}]]" == "[[0.586]]"
    # the design's F_1(t | x) = 1 - [1 - p (1 - e^{-t})]^{exp(x'theta)} (Fine & Gray 1999)
    x, p = np.array([0.8, -0.8]), 0.5
    truth = 1 - (1 - p * (1 - np.exp(-1.0))) ** np.exp(x @ np.array([0.7, -0.5]))
    assert f"{truth:.3f}" == "0.629"
    assert "# [[0.586]]; the design's truth: 0.629" in run[2]


def test_top_five_and_correlation_are_the_literal_refits(run, literal):
    ns, printed, section = run
    status = ns["status"]
    top = np.argsort(-np.abs(literal), kind="stable")[:5].tolist()
    assert printed[1] == str(top) == "[110, 162, 142, 206, 34]"
    assert "[110, 162, 142, 206, 34] by the VIF and by exact refits alike" in flat(section)
    assert int((status[top] == 0).sum()) == 3            # "three of them censored"
    # res.exact() is the literal refits; the printed correlation is VIF's with them
    np.testing.assert_allclose(ns["exact"].loo_change.to_numpy()[:, 0], literal, rtol=0,
                               atol=1e-9)
    corr = np.corrcoef(ns["res"].loo_change.to_numpy()[:, 0], literal)[0, 1]
    assert printed[2] == f"[{corr:.5f}]" == "[0.99998]"
    assert "correlate 0.99998 with the exact ones" in flat(section)
    auto = ci.influence(ns["fit"], target=ns["cif"])
    # every subject refitted with a target at this size (issue 44): the top is exact
    assert int(auto.verified.sum()) == 300 and "all 300 here" in flat(section)
    assert auto.verification.target.how == "every unit"
    assert list(auto.top(5, by="target").index) == top


@pytest.mark.needs_r
@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="Rscript not installed: live comparison with cmprsk skipped")
def test_value_is_predict_crr(run, tmp_path):
    probe = subprocess.run(["Rscript", "-e", "library(cmprsk)"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("R's cmprsk is not installed (apt-get install -y r-cran-cmprsk)")
    ns = run[0]
    np.savetxt(tmp_path / "d.csv", np.column_stack([ns["time"], ns["status"], ns["X"]]),
               delimiter=",")
    script = f"""
suppressPackageStartupMessages(library(cmprsk))
d <- as.matrix(read.csv("{tmp_path / 'd.csv'}", header = FALSE))
fit <- crr(d[, 1], d[, 2], d[, 3:4], failcode = 1, cencode = 0, gtol = 1e-12)
p <- predict(fit, cov1 = matrix(c(0.8, -0.8), nrow = 1))
v <- p[max(which(p[, 1] <= 1)), 2]
write.table(matrix(c(fit$coef, v), nrow = 1), "{tmp_path / 'r.csv'}", sep = ",",
            row.names = FALSE, col.names = FALSE)
"""
    (tmp_path / "s.R").write_text(script)
    subprocess.run(["Rscript", str(tmp_path / "s.R")], check=True, capture_output=True)
    r = np.loadtxt(tmp_path / "r.csv", delimiter=",")
    np.testing.assert_allclose(ns["fit"].coef, r[:2], rtol=1e-8)
    np.testing.assert_allclose(ns["cif"].value(ns["fit"], ns["fit"].coef)[0, 0], r[2],
                               rtol=1e-8)

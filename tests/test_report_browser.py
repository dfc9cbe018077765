"""The HTML report opens in a real headless browser (Debian's chromium) without errors.

Three chromium runs on the report of a small audit (fixture data, with exact refits):
the console log must hold no error (a negative control page with a script error shows the
detector works), a copy of the report with an appended checker script must show every
embedded PNG decoded (naturalWidth > 0) with no external request possible (all host names
resolve to nothing), and a screenshot is kept in tests/artifacts/report.png (git-ignored).
Skipped, with the reason shown, where chromium is not installed
(``apt-get install -y chromium``).
"""
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import coxinfluence as ci
from coxinfluence.report import write_report

ARTIFACTS = Path(__file__).parent / "artifacts"
FIX = Path(__file__).parent / "fixtures" / "integration" / "gbsg2_subset.csv"
COVS = ["age", "tsize", "pnodes", "progrec", "estrec", "horTh"]

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed "
                                "(apt-get install -y chromium): browser check not run")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--virtual-time-budget=5000"]


def chromium(tmp_path, *args, timeout=90):
    profile = tmp_path / f"profile{len(list(tmp_path.glob('profile*')))}"
    proc = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=timeout)
    return proc


def console_errors(stderr):
    """Console messages and page errors in chromium's log (level >= warning or uncaught)."""
    lines = [line for line in stderr.splitlines()
             if "CONSOLE" in line or "Uncaught" in line
             or "Failed to load resource" in line or "ERR_NAME_NOT_RESOLVED" in line]
    return lines


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = pd.read_csv(FIX, index_col="pid")
    fit = ci.fit_cox(d[COVS], d.time, d.cens)
    vif = ci.influence(fit, d)
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_report(path, vif, reid=ci.influence(fit, d, method="reid"), exact=vif.exact(),
                 description="GBSG2 subset (test fixture).")
    return path


def test_negative_control_detects_script_errors(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><p>x</p><script>undefined_fn();</script>"
                   "</body></html>")
    proc = chromium(tmp_path, "--dump-dom", bad.as_uri())
    assert any("undefined_fn" in line for line in console_errors(proc.stderr)), \
        proc.stderr[-2000:]


def test_report_opens_without_errors_and_screenshot(report, tmp_path):
    proc = chromium(tmp_path, "--dump-dom", report.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert console_errors(proc.stderr) == []
    dom = proc.stdout
    assert "Top 10 influential patients" in dom
    assert "against exact leave-one-out refits" in dom
    assert "P115" in dom                                   # the most influential patient
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    if shot.exists():
        shot.unlink()
    proc = chromium(tmp_path, "--window-size=1200,3000", f"--screenshot={shot}", report.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_embedded_images_decode_offline(report, tmp_path):
    checker = ("<script>window.addEventListener('load', function () {"
               "var w = Array.from(document.images).map(function (i) { return i.naturalWidth; });"
               "document.body.setAttribute('data-widths', w.join(','));});</script>")
    page = tmp_path / "check.html"
    page.write_text(report.read_text().replace("</body>", checker + "</body>"))
    proc = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert console_errors(proc.stderr) == []
    m = re.search(r'data-widths="([^"]*)"', proc.stdout)
    assert m, proc.stdout[-500:]
    widths = [int(v) for v in m.group(1).split(",")]
    # index plots, the Model checks' PH plot and deviance residuals, vs Reid, vs exact
    assert len(widths) == 5 and min(widths) > 100

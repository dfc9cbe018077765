"""``coxinfluence audit``'s summary and target names (issue 39): the VIF error it prints is
measured where the ranking is decided (the top 10, against the 10th displacement), a
target past follow-up is warned once (not again by the Reid comparison), and the CLI's
target columns at the covariate means are the ones Python gives for
``X.mean().rename('mean')``."""
import re
import warnings

import numpy as np
import pandas as pd

import coxinfluence as ci
from coxinfluence import cli
from coxinfluence.cli.audit_inputs import audit_target
from coxinfluence.demo import gbsg2_design


def _demo(tmp_path, capsys, *args):
    out = tmp_path / "r.html"
    code = cli.main(["audit", "--demo", "--no-progress", "--exact-max-n", "0", *args,
                     "--out", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    return stdout, err


def test_vif_error_line_is_the_top_10s(tmp_path, capsys):
    """GBSG2: the line names the unit of the top 10 whose VIF displacement is furthest
    from its exact one (recomputed here from the audit's own tables), and its distance in
    units of the 10th displacement."""
    stdout, _ = _demo(tmp_path, capsys)
    line = next(s for s in stdout.splitlines() if s.startswith("Largest VIF error"))
    X, time, event = gbsg2_design()
    res = ci.influence(ci.fit_cox(X, time, event), method="auto")
    ld = res.likelihood_displacement.sort_values(ascending=False)
    top = ld.index[:10]
    verified = [u for u in top if res.verified[u]]
    off = (res.ld_approx[verified] - res.ld_exact[verified]).abs()
    worst = off.idxmax()
    assert line.startswith(f"Largest VIF error in the top 10: {worst} ")
    ratio = float(re.search(r"off by ([\d.]+) x the displacement ranked 10", line).group(1))
    np.testing.assert_allclose(ratio, off[worst] / ld.iloc[9], rtol=2e-3)


def test_target_past_follow_up_is_warned_once(tmp_path, capsys):
    """GBSG2's last event is at 2456 days: survival at 5000 is warned on stderr, once,
    although the CLI runs the audit and the Reid comparison."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _demo(tmp_path, capsys, "--target", "survival:1000,5000")
    ours = [str(w.message) for w in caught
            if issubclass(w.category, ci.TargetBeyondFollowUpWarning)]
    assert len(ours) == 1, ours
    assert "time 5000" in ours[0] and "2456" in ours[0] and "1000" not in ours[0]


def test_cli_mean_row_has_the_python_names():
    """A Fine-Gray cif target at the covariate means: the CLI's columns equal those of
    ``ci.CumulativeIncidence(X.mean().rename('mean'), times)`` (what the report tells the
    reader to write)."""
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"a": rng.normal(size=80), "b": rng.integers(0, 2, 80).astype(float)})
    time = rng.exponential(size=80)
    status = rng.integers(0, 3, 80)
    fit = ci.fit_fine_gray(X, time, status, 1)
    cli_target = audit_target("cif:0.5,1", X, family="fine_gray")
    python_target = ci.CumulativeIncidence(X.mean().rename("mean"), [0.5, 1])
    assert list(cli_target.columns(fit)) == list(python_target.columns(fit))
    assert list(cli_target.columns(fit)) == ["F(0.5|mean)", "F(1|mean)"]

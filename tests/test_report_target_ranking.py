"""The report ranks by the target too (issue 39): with a target other than the
coefficients it shows, after the top by likelihood displacement, the top 10 by the
target's own change (``result.top(10, by="target")``), which ``auto`` verified."""
import re

import numpy as np
from lifelines.datasets import load_rossi

import coxinfluence as ci
from coxinfluence.audit import targets as T
from coxinfluence.report import build_report

ROSSI = load_rossi()
COVS = [c for c in ROSSI.columns if c not in ("week", "arrest")]


def _section(html):
    start = html.index("Top 10 by the change of the target")
    return html[start:html.index("<h2>", start)]


def test_report_has_the_top_by_the_target_in_its_order_and_verified():
    fit = ci.fit_cox(ROSSI[COVS], ROSSI.week, ROSSI.arrest)
    mean = ROSSI[COVS].mean().rename("mean")
    res = ci.influence(fit, target=T.Survival(mean, [30.0]))
    section = _section(build_report(res))
    labels = [int(v) for v in re.findall(r"<tr>\s*<th>(\d+)</th>", section)]
    expected = res.top(10, by="target").index.tolist()
    assert labels == expected
    # each of them verified (auto's target rule met on rossi), and ranked by the
    # largest |change| / SE, equal to the largest |dfbetas| over the target's columns
    assert res.verified[expected].all()
    score = res.dfbetas.abs().max(axis=1)
    assert np.allclose(res.top(10, by="target")["target_influence"], score[expected])
    assert list(score.sort_values(ascending=False, kind="stable").index[:10]) == expected


def test_coefficient_audit_has_no_target_ranking_and_singular_counts():
    fit = ci.fit_cox(ROSSI[COVS], ROSSI.week, ROSSI.arrest)
    res = ci.influence(fit)
    html = build_report(res)
    assert "by the change of the target" not in html
    counts = res.flags.sum()
    for flag, count in counts.items():
        if count == 1:
            assert re.search(rf"1 patient {flag}", html), flag
        elif count > 1:
            assert re.search(rf"{count} patients {flag}", html), flag

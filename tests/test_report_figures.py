"""What the audit report shows, checked on the built objects (issue 24 item 6): the index
plot's labels lie inside their axes and clear of each other (bounding boxes from the
renderer), its x axis is the unit's label, small-scale tick labels are short and clear of
each other; the report's top table holds the event column once, integer-valued strata are
written as integers, and a fit without maximum gets one account of what was (not)
verified."""
import re
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Annotation
from test_cli_audit import report_tables

import coxinfluence as ci
from coxinfluence import cli
from coxinfluence.demo import gbsg2_design
from coxinfluence.plotting import scatter_vs
from coxinfluence.report import build_report

FIX = Path(__file__).parent / "fixtures" / "integration" / "gbsg2_subset.csv"
COVS = ["age", "tsize", "pnodes", "progrec", "estrec", "horTh"]


@pytest.fixture(scope="module")
def fixture_data():
    return pd.read_csv(FIX)


def _vif(X, t, e):
    return ci.influence(ci.fit_cox(X, t, e), method="vif")


@pytest.fixture(scope="module")
def gbsg_vif():
    """VIF on GBSG2 (686 patients, RangeIndex 0..685): labels that crowd (post: patients
    450 and 471; grade2: 522 and 533) and spikes at the top of their panels."""
    X, t, e = gbsg2_design()
    return _vif(X, t, e)


@pytest.fixture(scope="module")
def rows_vif(fixture_data):
    """The CLI's labelling without --id: data rows counted from 1."""
    d = fixture_data.set_index(pd.RangeIndex(1, len(fixture_data) + 1, name="row"))
    return _vif(d[COVS], d.time, d.cens)


@pytest.fixture(scope="module")
def pid_vif(fixture_data):
    """300 patients labelled by a string id."""
    d = fixture_data.set_index("pid")
    return _vif(d[COVS], d.time, d.cens)


def _drawn(fig):
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def _annotations(ax):
    return [t for t in ax.texts if isinstance(t, Annotation)]


def _overlap(a, b):
    return min(a.x1, b.x1) > max(a.x0, b.x0) and min(a.y1, b.y1) > max(a.y0, b.y0)


@pytest.mark.parametrize("name", ["gbsg_vif", "rows_vif", "pid_vif"])
def test_index_plot_labels_inside_the_axes_and_apart(request, name):
    res = request.getfixturevalue(name)
    fig = res.plot_index()
    renderer = _drawn(fig)
    n_labels = 0
    for ax in _panels(fig):
        anns = _annotations(ax)
        assert len(anns) == 3, ax.get_title()
        boxes = [a.get_window_extent(renderer) for a in anns]
        (xlo, xhi), (ylo, yhi) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        for a, box in zip(anns, boxes):
            corners = ax.transData.inverted().transform([[box.x0, box.y0], [box.x1, box.y1]])
            (x0, y0), (x1, y1) = corners
            assert xlo <= x0 < x1 <= xhi and ylo <= y0 < y1 <= yhi, \
                (ax.get_title(), a.get_text(), corners, (xlo, xhi, ylo, yhi))
        for (a, ba), (b, bb) in combinations(zip(anns, boxes), 2):
            assert not _overlap(ba, bb), (ax.get_title(), a.get_text(), b.get_text())
        n_labels += len(anns)
    assert n_labels == 3 * len(res.loo_change.columns)


def test_index_plot_x_axis_is_the_unit_label(rows_vif, pid_vif, fixture_data):
    # integer labels (the CLI's rows 1..n): the spike of row r stands at x = r
    fig = rows_vif.plot_index()
    for ax, c in zip(_panels(fig), rows_vif.loo_change.columns):
        assert ax.get_xlabel() == "patient (row)"
        for a in _annotations(ax):
            r = int(a.get_text())
            assert a.xy[0] == r and a.xy[1] == rows_vif.loo_change.loc[r, c]
    # string labels, many patients: positions 1..n, said on the axis; the labels name
    # the spikes at their positions
    fig = pid_vif.plot_index()
    labels = list(pid_vif.loo_change.index)
    for ax in _panels(fig):
        assert "position 1 to 300" in ax.get_xlabel()
        for a in _annotations(ax):
            assert a.xy[0] == labels.index(a.get_text()) + 1
    # few patients: one tick per patient, labelled with its label
    d = fixture_data.iloc[:25].set_index("pid")
    few = _vif(d[COVS], d.time, d.cens)
    fig = few.plot_index()
    renderer = _drawn(fig)
    for ax in _panels(fig):
        assert [t.get_text() for t in ax.get_xticklabels()] == list(d.index)
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
        assert not any(_overlap(a, b) for a, b in zip(boxes, boxes[1:]))


def _plain(text):
    """Mathtext as it reads: '$\\mathdefault{\u22122.5}$' is '\u22122.5'."""
    return re.sub(r"\$|\\mathdefault|\\times|[{}]", "", text)


def _tick_texts(axis):
    return [_plain(t.get_text()) for t in axis.get_ticklabels()
            if t.get_visible() and t.get_text()]


def test_small_scale_tick_labels_are_short_and_apart(pid_vif):
    """progrec and estrec change by about 1e-4: the ticks read 2.5, 0.0, ... with the
    power of ten once beside the axis, never -0.00025 side by side."""
    exact = pid_vif.exact()
    for fig in (pid_vif.plot_index(), scatter_vs(pid_vif, exact)):
        renderer = _drawn(fig)
        for ax, c in zip(_panels(fig), pid_vif.loo_change.columns):
            axes = [ax.yaxis] if fig._suptitle.get_text().startswith("Leave") \
                else [ax.xaxis, ax.yaxis]
            for axis in axes:
                texts = _tick_texts(axis)
                assert 2 <= len(texts) <= 7, (c, texts)
                assert max(map(len, texts)) <= 5, (c, texts)
                boxes = [t.get_window_extent(renderer) for t in axis.get_ticklabels()
                         if t.get_visible() and t.get_text()]
                assert not any(_overlap(a, b) for a, b in combinations(boxes, 2)), (c, texts)
                if c in ("progrec", "estrec"):
                    offset = _plain(axis.get_offset_text().get_text())
                    assert offset in ("10^\u22123", "10^\u22124"), offset


def test_top_table_holds_the_event_column_once(tmp_path, capsys):
    out = tmp_path / "r.html"
    code = cli.main(["audit", str(FIX), "--time", "time", "--event", "cens", "--id", "pid",
                     "--strata", "tgrade", "--weights", "w", "--covariates", *COVS,
                     "--exact-max-n", "0", "--no-progress", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    tables = report_tables(out)
    top = tables["Top 10 influential patients"]
    assert list(top.columns) == ["rank", "displacement", "exact", "VIF", "verified", "flags",
                                 "time", "event"]
    data = tables["Their data"]
    assert list(data.columns) == COVS + ["w", "tgrade"]
    d = pd.read_csv(FIX).set_index("pid")
    assert list(top["event"]) == [str(v) for v in d.loc[top.index, "cens"]]


def test_integer_valued_strata_are_integers(tmp_path, capsys, fixture_data):
    """A 0/1 stratum column read as floats: the survival columns say "stratum 0", the
    data table "0"/"1"; whole-number times (days) are written in full."""
    d = fixture_data.assign(hor=fixture_data.horTh.astype(float),
                            time=fixture_data.time + 10000.0)
    path, out = tmp_path / "f.csv", tmp_path / "f.html"
    d.to_csv(path, index=False)
    assert pd.read_csv(path)["hor"].dtype == np.float64
    code = cli.main(["audit", str(path), "--time", "time", "--event", "cens", "--id", "pid",
                     "--strata", "hor", "--covariates", "age", "tsize", "pnodes", "progrec",
                     "--target", "survival:11000", "--exact-max-n", "0", "--no-progress",
                     "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    html = out.read_text()
    assert "stratum 0.0" not in html and "stratum 1.0" not in html
    tables = report_tables(out)
    assert list(tables["Changes"].columns) == ["S(11000|mean, stratum 0)",
                                               "S(11000|mean, stratum 1)"]
    top = tables["Top 10 influential patients"]
    data = tables["Their data"]
    assert set(data["hor"]) <= {"0", "1"}
    assert list(data["hor"]) == [str(int(v)) for v in d.set_index("pid").loc[data.index, "hor"]]
    assert list(top["time"]) == [f"{v:.0f}" for v in d.set_index("pid").loc[top.index, "time"]]


def _separated():
    rng = np.random.default_rng(0)
    n = 60
    g = (np.arange(n) < 10).astype(float)
    X = pd.DataFrame({"x0": rng.normal(size=n), "x1": rng.normal(size=n), "x2": g})
    t = np.where(g == 1, rng.uniform(0, 1, n), rng.uniform(1, 5, n))
    return X, t, np.ones(n)


@pytest.mark.parametrize("method", ["auto", "vif"])
def test_a_fit_without_maximum_gets_one_account(method):
    """Monotone likelihood (x2 separates the earliest events): one sentence says the
    numbers are first-order estimates none of which was refitted; nothing says a refit
    was or would be made."""
    import warnings
    X, t, e = _separated()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ci.fit_cox(X, t, e)
        res = ci.influence(fit, method=method)
        assert not res.fit_ok
        html = build_report(res)
    trust = re.sub(r"<[^>]+>", "", html.split("<h2>What can be trusted</h2>")[1]
                   .split("<h2>")[0])
    assert trust.count("none was refitted") == 1, trust
    assert "first-order estimate (VIF)" in trust
    assert "none was verified" not in trust
    assert "refitted by" not in trust and "refits them" not in trust, trust
    assert "60 patients unstable (every first-order estimate: the fit has no maximum)" in trust
    top = html.split("<h2>Top 10")[1]
    assert "quadratic-form estimate from VIF." in top and "(auto)" not in top


def test_unstable_wording_follows_the_method(pid_vif):
    """A converged fit: with method vif the unstable patients are said not to be
    refitted (the default method does); with auto, refitted."""
    text = build_report(pid_vif)
    assert pid_vif.flags["unstable"].any()
    assert "method vif does not refit them, the default method auto does" in text
    assert "none was verified by a refit" in text
    auto = ci.influence(pid_vif.fit)
    text = build_report(auto)
    assert "refitted: \u2713 in the tables" in text and "does not refit" not in text

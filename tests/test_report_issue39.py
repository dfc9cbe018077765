"""The report items of issue 39, checked on the generated HTML and on the data the index
plots draw: the plots show the tables' numbers (exact refits where verified, marked as
such), a verified unstable unit says its number is exact, the VIF error is measured
where the ranking is decided (the top 10, against the 10th largest displacement), the
Model section has 95% confidence intervals and the model's ratios (hazard, time,
subdistribution hazard) with what Fine-Gray's status codes mean, a target "at the
covariate means" is said to be no patient under the result's own column names, and the
target's warnings (``target_notes``) stand in a box near the top."""
import re

import numpy as np
import pandas as pd
import pytest
from test_cli_audit import _num, report_tables

import coxinfluence as ci
from coxinfluence.demo import gbsg2_design
from coxinfluence.report import build_report

Z95 = 1.959963984540054


def _tables(html, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(html)
    return report_tables(path)


def _text(html):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


@pytest.fixture(scope="module")
def gbsg_auto():
    """GBSG2's audit (auto): patient 115's horTh change is -0.043 by refit, -0.024 by
    VIF; 15 patients unstable, all refitted."""
    X, t, e = gbsg2_design()
    return ci.influence(ci.fit_cox(X, t, e))


@pytest.fixture(scope="module")
def gbsg_html(gbsg_auto):
    return build_report(gbsg_auto)


@pytest.fixture(scope="module")
def competing():
    """Causes 1, 2, 3 and censoring 0 (the CLI test's data set)."""
    rng = np.random.default_rng(11)
    n = 160
    x1, x2 = rng.normal(size=n), rng.integers(0, 2, n).astype(float)
    t1 = rng.exponential(1 / (0.5 * np.exp(0.6 * x1 - 0.4 * x2)))
    times = np.column_stack([rng.exponential(2.5, n), t1, rng.exponential(1 / 0.4, n),
                             rng.exponential(1 / 0.15, n)])
    return pd.DataFrame({"x1": x1.round(3), "x2": x2,
                         "ftime": times.min(axis=1).round(2) + 0.01,
                         "fstatus": times.argmin(axis=1)})


# ------------------------------------------------------------------- index plots

def test_index_plot_draws_the_exact_values_of_the_verified(gbsg_auto):
    """The panel's data are the result's own changes (exact for the verified units, not
    the VIF's), marked exact where verified; the orange dots sit on the exact values; the
    legend names both kinds."""
    from coxinfluence.plotting import index_plot_data
    res = gbsg_auto
    verified = res.verified.to_numpy()
    assert 10 <= verified.sum() < len(verified)
    for col in res.loo_change.columns:
        data = index_plot_data(res, col)
        np.testing.assert_array_equal(data["change"], res.loo_change[col])
        np.testing.assert_array_equal(data["exact"], verified)
    data = index_plot_data(res, "horTh")
    exact_115 = res.exact().loo_change.loc[115, "horTh"]
    assert data.loc[115, "change"] == pytest.approx(exact_115, rel=1e-8)
    assert data.loc[115, "change"] < 1.5 * res.approx.loo_change.loc[115, "horTh"]  # VIF is off
    fig = res.plot_index(columns=["horTh"])
    ax = fig.axes[0]
    dots = [ln for ln in ax.lines if ln.get_marker() == "o"]
    assert len(dots) == 1
    np.testing.assert_array_equal(np.sort(dots[0].get_ydata()),
                                  np.sort(res.loo_change["horTh"].to_numpy()[verified]))
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert labels == ["exact refit", "VIF estimate"]
    # a VIF result has no exact value: one kind in its legend
    fig = res.approx.plot_index(columns=["horTh"])
    assert [t.get_text() for leg in fig.legends for t in leg.get_texts()] == ["VIF estimate"]


def test_the_report_plots_the_audited_result(gbsg_auto, monkeypatch):
    """The report's index plots are the auto result's (the tables' numbers), not its
    VIF's, and the caption says what the marks mean."""
    import coxinfluence.plotting as plotting
    seen = []
    original = plotting.index_plot

    def spy(result, **kwargs):
        seen.append(result)
        return original(result, **kwargs)

    monkeypatch.setattr(plotting, "index_plot", spy)
    html = build_report(gbsg_auto)
    assert seen == [gbsg_auto]
    n = int(gbsg_auto.verified.sum())
    assert (f"the {n} verified patients (orange, with a dot: exact refit), the others blue "
            "(VIF estimate)") in _text(html)


# ---------------------------------------------------------------- trust section

def test_a_verified_unstable_row_says_its_number_is_exact(gbsg_auto, gbsg_html, tmp_path):
    top = _tables(gbsg_html, tmp_path)["Top 10 influential patients"]
    flags = gbsg_auto.flags.loc[[int(i) for i in top.index]]
    unstable = flags["unstable"].to_numpy()
    assert unstable.sum() >= 3 and (top["verified"] == "\u2713").all()
    assert list(top["flags"][unstable]) == \
        ["unstable first-order estimate; exact value shown"] * int(unstable.sum())
    assert "unstable" not in set(top["flags"])
    assert "refitted: \u2713 in the tables, where the number shown is exact" in gbsg_html


def _expected_error(res, k=10):
    ld = res.likelihood_displacement
    top = ld.sort_values(ascending=False, kind="stable").index[:k]
    scale = ld.loc[top[-1]]
    err = (res.ld_approx - res.ld_exact).abs().loc[top][res.verified.loc[top]]
    label = err.idxmax()
    return label, res.ld_approx.loc[label], res.ld_exact.loc[label], scale


def test_vif_error_is_measured_in_the_top_10_against_the_10th_displacement(gbsg_auto,
                                                                           gbsg_html):
    label, a, e, scale = _expected_error(gbsg_auto)
    assert label == 115
    text = _text(gbsg_html)
    assert (f"VIF error in the top 10 patients (measured against the 10th largest "
            f"displacement, {scale:.4g}, the scale on which the top 10 is decided): largest "
            f"for 115, displacement {a:.4g} by VIF against {e:.4g} exact, off by "
            f"{abs(a - e):.3g}, {abs(a - e) / scale:.3g} times the 10th displacement.") \
        in text
    assert "Largest VIF error among the verified" not in text


def test_fine_gray_vif_error_ignores_negligible_patients(competing):
    """Fine-Gray: the unit reported is among the top 10 and its error is given as a
    percentage of the 10th displacement; a verified unit outside the top 10 (there are
    some) is never the one named."""
    df = competing
    fit = ci.fit_fine_gray(df[["x1", "x2"]], df.ftime, df.fstatus, 1)
    res = ci.influence(fit)
    ld = res.likelihood_displacement.sort_values(ascending=False, kind="stable")
    assert res.verified.loc[ld.index[10:]].any()
    label, a, e, scale = _expected_error(res)
    assert label in ld.index[:10]
    text = _text(build_report(res))
    assert (f"largest for {label}, displacement {a:.4g} by VIF against {e:.4g} exact, off "
            f"by {abs(a - e):.3g}, {100 * abs(a - e) / scale:.2g}% of the 10th "
            "displacement.") in text


# ------------------------------------------------------------------- Model table

def test_cox_model_table_has_confidence_intervals_and_hazard_ratios(gbsg_auto, gbsg_html,
                                                                    tmp_path):
    fit = gbsg_auto.fit
    tables = _tables(gbsg_html, tmp_path)
    model = _num(tables["Model"])
    lower, upper = fit.coef - Z95 * fit.se, fit.coef + Z95 * fit.se
    np.testing.assert_allclose(model["lower 95%"], lower, rtol=5.01e-4)
    np.testing.assert_allclose(model["upper 95%"], upper, rtol=5.01e-4)
    hr = _num(tables["Hazard ratios with 95% confidence intervals"])
    assert list(hr.columns) == ["hazard ratio", "lower 95%", "upper 95%"]
    assert list(hr.index) == list(fit.columns)
    np.testing.assert_allclose(hr["hazard ratio"], np.exp(fit.coef), rtol=5.01e-4)
    np.testing.assert_allclose(hr["lower 95%"], np.exp(lower), rtol=5.01e-4)
    np.testing.assert_allclose(hr["upper 95%"], np.exp(upper), rtol=5.01e-4)
    assert "95% confidence intervals: coef &plusmn; 1.96 &times; se(coef)." in gbsg_html


def test_robust_intervals_use_the_robust_se(tmp_path):
    X, t, e = gbsg2_design()
    X, t, e = X.iloc[:200], t.iloc[:200], e.iloc[:200]
    fit = ci.fit_cox(X, t, e)
    groups = np.arange(200) % 40
    html = build_report(ci.influence(fit, method="vif", groups=groups, robust=True))
    se = fit.summary(robust=True, groups=groups)["robust se"].to_numpy()
    model = _num(_tables(html, tmp_path)["Model"])
    np.testing.assert_allclose(model["lower 95%"], fit.coef - Z95 * se, rtol=5.01e-4)
    assert "1.96 &times; robust se." in html


def test_aft_time_ratios(tmp_path):
    """Weibull AFT (R's survreg): time ratios exp(Value) of the covariates only (not the
    intercept, not Log(scale)), with exponentiated intervals."""
    from lifelines.datasets import load_rossi
    r = load_rossi()
    fit = ci.fit_aft(r[["fin", "age", "prio"]], r.week, r.arrest, "weibull")
    html = build_report(ci.influence(fit, method="vif"))
    tables = _tables(html, tmp_path)
    model = _num(tables["Model"])
    np.testing.assert_allclose(model["lower 95%"], fit.coef - Z95 * fit.se, rtol=5.01e-4)
    tr = _num(tables["Time ratios with 95% confidence intervals"])
    assert list(tr.index) == ["fin", "age", "prio"]
    np.testing.assert_allclose(tr["time ratio"], np.exp(fit.coef[1:4]), rtol=5.01e-4)
    np.testing.assert_allclose(tr["lower 95%"], np.exp(fit.coef[1:4] - Z95 * fit.se[1:4]),
                               rtol=5.01e-4)
    np.testing.assert_allclose(tr["upper 95%"], np.exp(fit.coef[1:4] + Z95 * fit.se[1:4]),
                               rtol=5.01e-4)
    assert "Time ratio: exp(Value), the factor on survival times" in html
    assert "Hazard ratio" not in html


def test_lifelines_aft_time_ratios_follow_its_parameters(tmp_path):
    """lifelines' WeibullAFTFitter: the ratios are exp of its lambda_ covariates, named as
    in its table."""
    from lifelines import WeibullAFTFitter
    from lifelines.datasets import load_rossi
    r = load_rossi()[["week", "arrest", "fin", "age", "prio"]]
    m = WeibullAFTFitter().fit(r, "week", "arrest")
    html = build_report(ci.influence(m, r, method="vif"))
    tr = _num(_tables(html, tmp_path)["Time ratios with 95% confidence intervals"])
    want = m.summary.loc["lambda_"].drop(index="Intercept")
    assert list(tr.index) == [f"(lambda_, {c})" for c in want.index]
    np.testing.assert_allclose(tr["time ratio"], want["exp(coef)"], rtol=1e-3)
    np.testing.assert_allclose(tr["lower 95%"], want["exp(coef) lower 95%"], rtol=1e-3)
    np.testing.assert_allclose(tr["upper 95%"], want["exp(coef) upper 95%"], rtol=1e-3)


def test_fine_gray_subdistribution_hazard_ratios_and_status_codes(competing, tmp_path):
    df = competing
    fit = ci.fit_fine_gray(df[["x1", "x2"]], df.ftime, df.fstatus, 1)
    html = build_report(ci.influence(fit, method="vif"))
    tables = _tables(html, tmp_path)
    shr = _num(tables["Subdistribution hazard ratios with 95% confidence intervals"])
    assert list(shr.columns) == ["subdistribution hazard ratio", "lower 95%", "upper 95%"]
    np.testing.assert_allclose(shr["subdistribution hazard ratio"], np.exp(fit.coef),
                               rtol=5.01e-4)
    np.testing.assert_allclose(shr["lower 95%"], np.exp(fit.coef - Z95 * fit.se),
                               rtol=5.01e-4)
    text = _text(html)
    assert ("Status codes: 0 = censored; 1 = failure from cause 1, the cause modelled and "
            "audited; 2, 3 = failure from a competing cause") in text
    assert "Hazard ratios with" not in html


@pytest.mark.slow
def test_no_hazard_ratio_for_a_loss_that_has_none(tmp_path):
    """An autodiff logistic regression: exp(theta) is no hazard ratio, so no ratio
    table; its Wald table still gets intervals."""
    pytest.importorskip("jax")
    from coxinfluence.autodiff import AutodiffModel, losses
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = (rng.uniform(size=120) < 1 / (1 + np.exp(-X @ [1.0, -0.5]))).astype(float)
    m = AutodiffModel(losses.glm(X, y), columns=["intercept", "x1", "x2"], name="Logistic")
    html = build_report(ci.influence(m, method="vif"))
    assert "ratio" not in _text(html).lower()
    model = _num(_tables(html, tmp_path)["Model"])
    se = np.sqrt(np.diag(np.linalg.inv(m.information)))
    np.testing.assert_allclose(model["upper 95%"], m.coef + Z95 * se, rtol=5.01e-4)


# -------------------------------------------------- targets: names and warnings

def test_covariate_means_are_said_to_be_no_patient_under_the_results_names(competing,
                                                                            tmp_path):
    """The CLI's default new patient is the covariate means, labelled "mean": the report
    says so (never "average patient") and its columns are the result's own."""
    df = competing
    X = df[["x1", "x2"]]
    fit = ci.fit_fine_gray(X, df.ftime, df.fstatus, 1)
    res = ci.influence(fit, method="vif",
                       target=ci.CumulativeIncidence(X.mean().to_frame("mean").T, [0.5, 2]))
    html = build_report(res)
    text = _text(html)
    assert "the target is taken at the covariate means of the data (a 0/1 covariate at " \
           "its proportion)" in text
    assert "average" not in text
    tables = _tables(html, tmp_path)
    assert list(tables["Changes"].columns) == list(res.loo_change.columns) == \
        ["F(0.5|mean)", "F(2|mean)"]
    # a named patient is not "mean": no such sentence
    named = ci.influence(fit, method="vif",
                         target=ci.CumulativeIncidence(X.iloc[:1], [0.5]))
    assert "covariate means" not in build_report(named)


def test_target_notes_stand_in_a_box_near_the_top(gbsg_auto):
    res = ci.influence(gbsg_auto.fit, method="vif")
    note = "time 10000 is past the last event time (2659) of the data: S is extrapolated"
    res.target_notes = (note,)
    html = build_report(res)
    box = html.index("<div class='notes'>")
    assert box < html.index("<h2>What can be trusted</h2>")
    assert note in html[box:html.index("</div>", box)]
    res.target_notes = ()
    assert "<div class='notes'>" not in build_report(res)

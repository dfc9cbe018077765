"""The reference set of calls for the behaviour-preservation test (issue 23 item 6).

Every case is a function of no arguments that calls the package through its public API
only (``import coxinfluence as ci``, ``ci.targets``, ``ci.datasets``, ``ci.asymptotics``,
``ci.metrics``, the lifelines and statsmodels models it accepts) and returns a dict of
outputs: numbers, DataFrames, Series, strings. :func:`compute_case` runs one case and
flattens its outputs into named numpy arrays (with the package's own warnings, as text);
``tests/make_reference_values.py`` saves them for a commit into
``tests/fixtures/reference_values.npz`` and ``tests/test_reference_values.py`` recomputes
each case with the package as it is now and compares (:func:`compare`): floats to
``rtol=1e-12`` plus ``1e-12`` times the largest absolute reference value of the array,
NaN and infinite entries in the same places, integers, booleans and strings equal.

Each tolerance follows the conditioning of its quantity, never the last bits of one
machine (issue 44: a fresh environment on another machine failed 14 cases):

- a gradient at a fitted optimum (``fit.gradient``) is rounding noise, not a value: it is
  compared on the scale of the fit's information, to ``1e-10 * max(1, max |I|)`` (the
  fits' own convergence tolerance; :data:`GRADIENT_ATOL`), not relatively;
- a fit that did not converge has no coefficients, log-likelihood, information, variance
  or influence values to compare: its outputs are whether it converged, its diverging
  covariates, the refusals of the functions that need a maximum (their messages) and the
  audit's flags (:func:`fit_outputs`, the ``*_not_converged`` cases);
- everything else is a well-conditioned function of the data (the fits converge to
  ``|gradient| <= 1e-10`` and are compared far inside that).

The data are small so that the whole set runs in seconds: every 4th row of lifelines'
GBSG2 (138 rows), every 3rd row of lifelines' rossi (144 rows), and synthetic data with
tied integer times drawn from a 64-bit linear congruential generator in integer
arithmetic (:class:`Stream`), so that they do not depend on NumPy's random generators.
A case lists the optional packages it needs in ``requires`` (GBSG2 and rossi come with
lifelines); the test skips it, saying why, where one is absent.
"""
from __future__ import annotations

import json
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

import coxinfluence as ci

RTOL = 1e-12            # relative tolerance of every float entry
ATOL_SCALE = 1e-12      # absolute tolerance, times the array's largest |reference value|
GRADIENT_ATOL = 1e-10   # a gradient at the optimum: absolute, times max(1, max |information|)
SEP = "/"               # the npz keys are "<case>/<output>"

METHODS = ("auto", "vif", "reid", "newton", "exact")


# ----------------------------------------------------------------------------- data
class Stream:
    """Uniforms in [0, 1) from Knuth's 64-bit MMIX linear congruential generator, top 53
    bits, in Python integer arithmetic: the same numbers on every platform and NumPy."""

    A, C, M = 6364136223846793005, 1442695040888963407, 1 << 64

    def __init__(self, seed):
        self.state = (seed * self.A + self.C) % self.M

    def uniform(self, size):
        out = np.empty(size)
        for k in range(size):
            self.state = (self.state * self.A + self.C) % self.M
            out[k] = (self.state >> 11) / float(1 << 53)
        return out

    def normalish(self, size):
        """Irwin-Hall sums of four uniforms, centred and scaled to about unit variance
        (no transcendental functions: the same bits everywhere)."""
        u = self.uniform(4 * size).reshape(size, 4)
        return (u.sum(axis=1) - 2.0) * 1.7


def tied_frame(seed=1, n=120):
    """Tied integer times, a binary covariate, three strata, non-integer case weights;
    pandas, indexed by string labels."""
    r = Stream(seed)
    x0, x1 = r.normalish(n), r.normalish(n)
    x2 = (r.uniform(n) < 0.4).astype(float)
    risk = 0.6 * x0 - 0.4 * x1 + 0.5 * x2
    time = 1.0 + np.floor(12.0 * r.uniform(n) / (1.0 + 0.25 * np.clip(risk + 2.0, 0.0, 4.0)))
    event = (r.uniform(n) < 0.7).astype(float)
    weights = 0.5 + 1.5 * r.uniform(n)
    strata = np.floor(3.0 * r.uniform(n)).astype(int)
    index = pd.Index([f"p{k:03d}" for k in range(n)], name="patient")
    return pd.DataFrame({"x0": x0, "x1": x1, "x2": x2, "time": time, "event": event,
                         "w": weights, "stratum": strata}, index=index)


COVS = ["x0", "x1", "x2"]


def new_patients():
    """Three new patients for the lp, rr and survival targets (one per stratum)."""
    return pd.DataFrame({"x0": [-0.5, 0.2, 1.1], "x1": [0.3, -0.8, 0.0], "x2": [0.0, 1.0, 1.0],
                         "stratum": [0, 1, 2]},
                        index=pd.Index(["new_a", "new_b", "new_c"], name="new"))


def counting_frame(seed=2, n_sub=50):
    """Subjects with 1 to 3 contiguous (start, stop] intervals on an integer time grid,
    some with delayed entry; x0 and x2 fixed per subject, x1 changes between intervals;
    an event (if any) on the last interval."""
    r = Stream(seed)
    rows = []
    for s in range(n_sub):
        n_int = 1 + int(3.0 * r.uniform(1)[0])
        u = r.uniform(4 + 2 * n_int)
        t = float(np.floor(3.0 * u[0])) if u[1] < 0.3 else 0.0
        x0 = (u[2] - 0.5) * 3.0
        x2 = float(u[3] < 0.5)
        for k in range(n_int):
            stop = t + 1.0 + float(np.floor(4.0 * u[4 + 2 * k]))
            last = k == n_int - 1
            rows.append({"id": f"s{s:02d}", "start": t, "stop": stop,
                         "event": float(last and u[5 + 2 * k] < 0.65),
                         "x0": x0, "x1": (u[5 + 2 * k] - 0.5) * 2.0 + 0.3 * k, "x2": x2})
            t = stop
    frame = pd.DataFrame(rows)
    frame.index = pd.RangeIndex(1000, 1000 + len(frame), name="row")
    return frame


def delayed_frame(seed=3, n=100):
    """One row per patient, delayed entry (left truncation) for about half of them."""
    r = Stream(seed)
    x0, x1 = r.normalish(n), r.normalish(n)
    start = np.floor(4.0 * r.uniform(n)) * (r.uniform(n) < 0.5)
    time = start + 1.0 + np.floor(10.0 * r.uniform(n) / (1.0 + 0.2 * np.clip(x0 + 2.0, 0, 4)))
    event = (r.uniform(n) < 0.7).astype(float)
    return pd.DataFrame({"x0": x0, "x1": x1, "start": start, "time": time, "event": event})


def clusters_of(n):
    """Cluster labels (13 'hospitals'), interleaved over the rows."""
    return np.array([f"h{(7 * k) % 13:02d}" for k in range(n)])


def undefined_design():
    """Row 5 holds the only '1' of a dummy (deleting it leaves a constant column); stratum
    1 has one event (row 30), stratum 2 a single row, stratum 3 only events."""
    r = Stream(4)
    n = 40
    X = np.column_stack([r.normalish(n), np.zeros(n)])
    X[5, 1] = 1.0
    t = np.floor(20.0 * r.uniform(n)) / 4.0 + 0.25
    e = (r.uniform(n) < 0.6).astype(float)
    e[5] = 1.0
    strata = np.zeros(n, dtype=int)
    strata[30:36] = 1
    e[30:36] = 0.0
    e[30] = 1.0
    t[30] = t[30:36].min() - 0.125
    strata[36] = 2
    e[36] = 1.0
    strata[37:] = 3
    e[37:] = 1.0
    return X, t, e, strata


def separated_design():
    """x1 = 1 exactly for the 10 earliest times, all events: a monotone likelihood (the
    fit does not converge)."""
    r = Stream(5)
    n = 30
    t = np.arange(1.0, n + 1.0)
    e = (r.uniform(n) < 0.7).astype(float)
    e[:10] = 1.0
    X = np.column_stack([r.normalish(n), (t <= 10).astype(float)])
    return X, t, e


def gbsg_frame():
    """Every 5th row of lifelines' bundled GBSG2 (138 rows), numeric design, the tumour
    grade (text) as a stratum, weights, a cluster label and an entry time."""
    df = ci.datasets.load_gbsg2().iloc[::5].copy()
    k = np.arange(len(df))
    out = pd.DataFrame({
        "horTh": (df["horTh"] == "yes").astype(float).to_numpy(),
        "age": df["age"].astype(float).to_numpy(),
        "tsize": df["tsize"].astype(float).to_numpy(),
        "pnodes": df["pnodes"].astype(float).to_numpy(),
        "progrec": df["progrec"].astype(float).to_numpy(),
        "time": df["time"].astype(float).to_numpy(),
        "cens": df["cens"].astype(float).to_numpy(),
        "tgrade": df["tgrade"].astype(str).to_numpy(),
        "w": 1.0 + (k % 3) / 2.0,
        "hosp": np.array([f"c{(5 * j) % 15:02d}" for j in k]),
    }, index=df.index)
    out["entry"] = np.floor(out["time"] / 5.0) + 0.5
    return out


GBSG_COVS = ["horTh", "age", "tsize", "pnodes", "progrec"]


def gbsg_new():
    return pd.DataFrame({"horTh": [0.0, 1.0], "age": [45.0, 62.0], "tsize": [20.0, 35.0],
                         "pnodes": [1.0, 6.0], "progrec": [50.0, 10.0],
                         "tgrade": ["II", "III"]},
                        index=pd.Index(["g_new1", "g_new2"]))


def rossi_frame():
    from lifelines.datasets import load_rossi
    return load_rossi().iloc[::3].astype(float)


# ------------------------------------------------------------------------- outputs
def error_of(fn):
    """Run ``fn`` expecting an exception: its type name and message (or "no error")."""
    try:
        fn()
    except Exception as exc:     # any exception is the recorded behaviour
        return f"{type(exc).__name__}: {exc}"
    return "no error"


#: the columns of a fit's summary() at the reference commit (issue 35 added the confidence
#: limits after them; tests/test_fit_interface.py checks those against R)
SUMMARY_COLUMNS = 5


def fit_outputs(fit, robust_groups=None):
    """A fit's outputs; for a fit that did not converge only what is defined (its
    coefficients and everything computed from them are not: module docstring)."""
    if not fit.converged:
        return {"converged": fit.converged, "n": fit.n, "columns": list(fit.columns),
                "ties": fit.ties, "diverging_columns": list(fit.diverging_columns())}
    out = {"coef": fit.coef, "loglik": fit.loglik, "information": fit.information,
           "gradient": fit.gradient, "converged": fit.converged, "n_iter": fit.n_iter,
           "n": fit.n, "columns": list(fit.columns), "ties": fit.ties, "var": fit.var,
           "se": fit.se, "hazard_ratios": fit.hazard_ratios,
           "summary": fit.summary().iloc[:, :SUMMARY_COLUMNS],
           "repr": repr(fit), "objective": fit.objective(np.vstack([fit.coef, 0.5 * fit.coef])),
           "diverging_columns": list(fit.diverging_columns())}
    if fit.converged:
        out["robust_covariance"] = fit.robust_covariance(robust_groups)
        out["summary_robust"] = fit.summary(robust=True,
                                            groups=robust_groups).iloc[:, :SUMMARY_COLUMNS]
    return out


def result_outputs(res, *, extras=True):
    """An InfluenceResult's public numbers, each attribute on its own (identical arrays are
    stored once: :func:`save`), and whether ``summary_frame()`` is exactly their
    concatenation (``summary_frame_consistent``)."""
    sf = res.summary_frame()
    attrs = {"loo_change": res.loo_change,
             "likelihood_displacement": res.likelihood_displacement,
             "ld_exact": res.ld_exact, "ld_approx": res.ld_approx, "lmax": res.lmax,
             "flags": res.flags, "flagged": res.flagged, "verified": res.verified}
    joined = pd.concat([res.loo_change.add_prefix("change "), res.dfbetas.add_prefix("dfbetas "),
                        *[attrs[k] for k in ("likelihood_displacement", "ld_exact",
                                             "ld_approx", "lmax")],
                        res.flags, res.flagged, res.verified], axis=1)
    consistent = (list(sf.columns) == list(joined.columns) and sf.index.equals(joined.index)
                  and all(np.array_equal(sf[c].to_numpy(), joined[c].to_numpy(),
                                         equal_nan=sf[c].dtype.kind == "f")
                          for c in sf.columns))
    # dfbetas are stored as their relation to two stored arrays (to keep the file small):
    # loo_change / dfbetas_se (the model-based SE, as R's; issue 44) to rounding, with the
    # same labels
    dfb, ratio = res.dfbetas, res.loo_change / res.dfbetas_se
    out = dict(attrs)
    out.update({"theta_change": res.theta_change, "target_se": res.target_se,
                "dfbetas_se": res.dfbetas_se,
                "dfbetas_is_change_over_se": bool(
                    dfb.index.equals(ratio.index) and list(dfb.columns) == list(ratio.columns)
                    and np.allclose(dfb.to_numpy(), ratio.to_numpy(), rtol=1e-14, atol=0,
                                    equal_nan=True)),
                "summary_frame_columns": list(sf.columns),
                "summary_frame_consistent": bool(consistent),
                "method": res.method, "source": res.source, "target_name": res.target.name,
                "unit_name": res.unit_name, "units_text": res.units_text,
                "robust": res.robust, "fit_ok": res.fit_ok, "repr": repr(res)})
    if extras:
        out["top5"] = res.top(5)
        if res.method == "auto":
            out["top3_by_first"] = res.top(3, by=res.loo_change.columns[0])
        largest = res.largest_error()
        out["largest_error"] = "None" if largest is None else \
            [str(largest[0]), repr(largest[1]), repr(largest[2])]
    return out


@dataclass(frozen=True)
class Case:
    name: str
    fn: object
    requires: tuple = ()


CASES: dict[str, Case] = {}


def case(name, requires=()):
    def register(fn):
        if name in CASES:
            raise ValueError(f"duplicate case {name!r}")
        CASES[name] = Case(name, fn, tuple(requires))
        return fn
    return register


# ----------------------------------------------------------------- the core functions
def _tied_fit(ties, pandas=True, strata=True, weights=True):
    df = tied_frame()
    X = df[COVS] if pandas else df[COVS].to_numpy()
    time = df["time"] if pandas else df["time"].to_numpy()
    event = df["event"] if pandas else df["event"].to_numpy()
    kw = {}
    if strata:
        kw["strata"] = df["stratum"] if pandas else df["stratum"].to_numpy()
    if weights:
        kw["weights"] = df["w"] if pandas else df["w"].to_numpy()
    return ci.fit_cox(X, time, event, ties=ties, **kw), df, kw


def _core_outputs(fit, *, vif_methods=("auto", "series", "direct"),
                  newton_methods=("auto", "series", "direct"), groups=None):
    out = {"fit": fit_outputs(fit, groups)}
    for m in vif_methods:
        out[f"vif_{m}"] = ci.vif(fit, method=m, groups=groups)
    out["reid_influence"] = ci.reid_influence(fit, groups=groups)
    out["score_residuals"] = ci.score_residuals(fit)
    for m in newton_methods:
        out[f"newton_loo_{m}"] = ci.newton_loo(fit, groups=groups, method=m)
    out["exact_loo"] = ci.exact_loo(fit, groups=groups, progress=False)
    return out


for _ties in ("efron", "breslow"):
    @case(f"core_rows_{_ties}")
    def _core_rows(ties=_ties):
        fit, df, kw = _tied_fit(ties)
        out = _core_outputs(fit)
        theta = np.array([0.3, -0.2, 0.1])
        args = (theta, df[COVS].to_numpy(), df["time"].to_numpy(), df["event"].to_numpy())
        kw_np = dict(weights=df["w"].to_numpy(), strata=df["stratum"].to_numpy(), ties=ties)
        out["cox_loss"] = ci.cox_loss(*args, **kw_np)
        out["cox_gradient"] = ci.cox_gradient(*args, **kw_np)
        out["cox_hessian"] = ci.cox_hessian(*args, **kw_np)
        for stratum in (0, 2):
            out[f"baseline_cumhaz_{stratum}"] = ci.targets.baseline_cumhaz(
                fit, [1.0, 3.0, 6.0, 12.0], stratum=stratum)
        return out

    @case(f"core_rows_numpy_{_ties}")
    def _core_numpy(ties=_ties):
        fit, _, _ = _tied_fit(ties, pandas=False, strata=False, weights=False)
        return _core_outputs(fit, vif_methods=("auto",), newton_methods=("auto",))

    @case(f"core_delayed_entry_{_ties}")
    def _core_delayed(ties=_ties):
        df = delayed_frame()
        fit = ci.fit_cox(df[["x0", "x1"]], df["time"], df["event"], start=df["start"],
                         ties=ties)
        out = _core_outputs(fit, newton_methods=("auto", "direct"))
        out["newton_series_error"] = error_of(
            lambda: ci.newton_loo(fit, method="series"))
        out["cox_loss"] = ci.cox_loss(fit.coef * 0.5, df[["x0", "x1"]].to_numpy(),
                                      df["time"].to_numpy(), df["event"].to_numpy(),
                                      start=df["start"].to_numpy(), ties=ties)
        return out

    @case(f"core_subjects_{_ties}")
    def _core_subjects(ties=_ties):
        df = counting_frame()
        fit = ci.fit_cox(df[COVS], df["stop"], df["event"], start=df["start"], id=df["id"],
                         ties=ties)
        return _core_outputs(fit, newton_methods=("auto", "direct"))

    @case(f"core_clusters_{_ties}")
    def _core_clusters(ties=_ties):
        fit, df, _ = _tied_fit(ties, strata=False)
        return _core_outputs(fit, groups=clusters_of(fit.n))


@case("core_exact_loo_executor")
def _core_executor():
    fit, _, _ = _tied_fit("efron")
    with ThreadPoolExecutor(2) as pool:
        loo = ci.exact_loo(fit, executor=pool, progress=False, n_chunks=3)
    return {"exact_loo": loo}


@case("core_undefined_units")
def _core_undefined():
    X, t, e, strata = undefined_design()
    fit = ci.fit_cox(X, t, e, strata=strata)
    return {"fit": fit_outputs(fit), "vif": ci.vif(fit), "reid": ci.reid_influence(fit),
            "newton_loo": ci.newton_loo(fit), "exact_loo": ci.exact_loo(fit, progress=False)}


@case("core_not_converged")
def _core_not_converged():
    X, t, e = separated_design()
    fit = ci.fit_cox(X, t, e)
    return {"fit": fit_outputs(fit), "vif_error": error_of(lambda: ci.vif(fit)),
            "reid_error": error_of(lambda: ci.reid_influence(fit)),
            "exact_loo_error": error_of(lambda: ci.exact_loo(fit, progress=False))}


@case("core_input_errors")
def _core_errors():
    df = tied_frame()
    X, t, e = df[COVS].to_numpy(), df["time"].to_numpy(), df["event"].to_numpy()
    bad = X.copy()
    bad[3, 1] = np.nan
    const = X.copy()
    const[:, 2] = 1.0
    return {"nan": error_of(lambda: ci.fit_cox(bad, t, e)),
            "negative_time": error_of(lambda: ci.fit_cox(X, t - 5.0, e)),
            "constant_column": error_of(lambda: ci.fit_cox(const, t, e)),
            "bad_event": error_of(lambda: ci.fit_cox(X, t, e * 2.0)),
            "zero_weight": error_of(lambda: ci.fit_cox(X, t, e, weights=np.zeros(len(t)))),
            "bad_ties": error_of(lambda: ci.fit_cox(X, t, e, ties="exact")),
            "bad_method": error_of(lambda: ci.influence(ci.fit_cox(X, t, e), method="x")),
            "bad_target": error_of(lambda: ci.influence(ci.fit_cox(X, t, e), target="x"))}


@case("readme_example", requires=("lifelines",))
def _readme_example():
    from coxinfluence.demo import gbsg2_design
    X, time, event = gbsg2_design()
    fit = ci.fit_cox(X, time, event)
    change = -ci.vif(fit) / fit.n
    exact = ci.exact_loo(fit, progress=False) - fit.coef
    dfbeta_r = ci.reid_influence(fit) / fit.n
    return {"fit": fit_outputs(fit), "change_abs_max": change.abs().max(),
            "corr_pnodes": np.corrcoef(change["pnodes"], exact["pnodes"])[0, 1],
            "change": change.iloc[::7], "exact": exact.iloc[::7], "dfbeta_R": dfbeta_r.iloc[::7]}


# ------------------------------------------------------------------ ci.influence: CoxFit
def _targets(kind, X_new, times=(2.0, 6.0), strata=None):
    if kind in ("coef", "hr"):
        return kind
    if kind == "lp":
        return ci.targets.LinearPredictor(X_new)
    if kind == "rr":
        return ci.targets.RelativeRisk(X_new)
    if kind == "survival":
        return ci.targets.Survival(X_new, list(times), strata=strata)
    raise ValueError(kind)


TARGETS = ("coef", "hr", "lp", "rr", "survival")

for _method in METHODS:
    for _target in TARGETS:
        @case(f"influence_rows_{_method}_{_target}")
        def _influence_rows(method=_method, target=_target):
            fit, df, _ = _tied_fit("efron")
            new = new_patients()
            tgt = _targets(target, new[COVS], strata=new["stratum"].tolist())
            res = ci.influence(fit, df[["w"]], method=method, target=tgt)
            return result_outputs(res)

    @case(f"influence_rows_breslow_{_method}")
    def _influence_breslow(method=_method):
        fit, df, _ = _tied_fit("breslow")
        new = new_patients()
        res = ci.influence(fit, method=method,
                           target=_targets("survival", new[COVS], times=(3.0, 7.0),
                                           strata=[0, 2, 1]))
        return result_outputs(res, extras=False)

    @case(f"influence_subjects_{_method}")
    def _influence_subjects(method=_method):
        df = counting_frame()
        fit = ci.fit_cox(df[COVS], df["stop"], df["event"], start=df["start"], id=df["id"])
        out = result_outputs(ci.influence(fit, df[["id"]], method=method))
        if method in ("auto", "vif"):
            new = new_patients()[COVS]
            out["survival"] = result_outputs(
                ci.influence(fit, method=method, target=_targets("survival", new,
                                                                 times=(2.0, 6.0))),
                extras=False)
        return out

    @case(f"influence_clusters_{_method}")
    def _influence_clusters(method=_method):
        fit, df, _ = _tied_fit("efron", strata=False)
        groups = clusters_of(fit.n)
        out = result_outputs(ci.influence(fit, method=method, groups=groups, robust=True))
        if method in ("auto", "reid"):
            out["hr_model_se"] = result_outputs(
                ci.influence(fit, method=method, groups=groups, target="hr"), extras=False)
        return out

    @case(f"influence_delayed_entry_{_method}")
    def _influence_delayed(method=_method):
        df = delayed_frame()
        fit = ci.fit_cox(df[["x0", "x1"]], df["time"], df["event"], start=df["start"])
        new = pd.DataFrame({"x0": [0.0, 1.0], "x1": [0.5, -0.5]})
        return result_outputs(ci.influence(fit, method=method,
                                           target=_targets("survival", new, times=(2, 6))))

    @case(f"influence_undefined_{_method}")
    def _influence_undefined(method=_method):
        X, t, e, strata = undefined_design()
        fit = ci.fit_cox(X, t, e, strata=strata)
        return result_outputs(ci.influence(fit, method=method))


@case("influence_survival_without_data_effect")
def _influence_no_data_effect():
    fit, df, _ = _tied_fit("efron")
    new = new_patients()
    out = {}
    for method in ("vif", "newton"):
        res = ci.influence(fit, method=method, include_data_effect=False,
                           target=_targets("survival", new[COVS], strata=[0, 1, 2]))
        out[method] = result_outputs(res, extras=False)
    return out


@case("influence_result_methods")
def _influence_result_methods():
    fit, df, _ = _tied_fit("efron")
    vif = ci.influence(fit, method="vif")
    auto = ci.influence(fit)
    exact = vif.exact()
    return {"exact": result_outputs(exact, extras=False),
            "vif_vs_exact": vif.correlation(exact), "auto_vs_exact": auto.correlation(exact),
            "auto_largest_error": [str(v) for v in auto.largest_error()],
            "auto_exact_is_cached": vif.exact() is exact,
            "top_7": auto.top(7)}


@case("influence_not_converged")
def _influence_not_converged():
    X, t, e = separated_design()
    fit = ci.fit_cox(X, t, e)
    # no numbers are defined without a maximum: the flags and what is refused
    auto, vif = ci.influence(fit), ci.influence(fit, method="vif")
    return {"auto": {"flags": auto.flags, "verified": auto.verified, "fit_ok": auto.fit_ok},
            "vif": {"flags": vif.flags, "fit_ok": vif.fit_ok},
            "exact_error": error_of(lambda: ci.influence(fit, method="exact"))}


@case("metrics")
def _metrics():
    fit, _, _ = _tied_fit("efron")
    exact = np.asarray(ci.exact_loo(fit, progress=False))
    est = fit.coef - np.asarray(ci.vif(fit)) / fit.n
    X_test = new_patients()[COVS].to_numpy()
    return {"relative_risk_correlation":
            ci.metrics.relative_risk_correlation(fit.coef, est, exact, X_test),
            "mean_column_correlation": ci.metrics.mean_column_correlation(est, exact)}


@case("asymptotics_simulate_gap")
def _asymptotics():
    from coxinfluence.asymptotics import simulate_gap
    res = simulate_gap((30, 60), 2, seed=3, include_loo=True, leading_term=False, n_boot=50)
    return {"table": res.table}


# ------------------------------------------------------------------ lifelines, statsmodels
def _cph(**kw):
    from lifelines import CoxPHFitter
    fit_kw = {k: kw.pop(k) for k in list(kw) if k in ("strata", "weights_col", "entry_col",
                                                       "cluster_col", "robust", "formula")}
    return CoxPHFitter(**kw), fit_kw


def _lifelines(df, **kw):
    cph, fit_kw = _cph(**kw)
    return cph.fit(df, "time", "cens", **fit_kw)


for _method in METHODS:
    @case(f"lifelines_gbsg_{_method}", requires=("lifelines",))
    def _lifelines_gbsg(method=_method):
        df = gbsg_frame()[GBSG_COVS + ["time", "cens"]]
        cph = _lifelines(df)
        new = gbsg_new()[GBSG_COVS]
        out = {"coef": result_outputs(ci.influence(cph, df, method=method))}
        if method in ("auto", "exact"):
            out["hr"] = result_outputs(ci.influence(cph, df, method=method, target="hr"),
                                       extras=False)
        out["survival"] = result_outputs(ci.influence(
            cph, df, method=method, target=_targets("survival", new, times=(500, 1500))),
            extras=False)
        return out

    @case(f"lifelines_penalized_{_method}", requires=("lifelines",))
    def _lifelines_penalized(method=_method):
        df = gbsg_frame()[GBSG_COVS + ["time", "cens"]]
        cph = _lifelines(df, penalizer=0.1)
        out = {"coef": result_outputs(ci.influence(cph, df, method=method))}
        if method in ("auto", "vif", "exact"):
            new = gbsg_new()[GBSG_COVS]
            out["rr"] = result_outputs(ci.influence(
                cph, df, method=method, target=_targets("rr", new)), extras=False)
        if method == "auto":
            out["vif_error"] = error_of(lambda: ci.vif(ci.influence(cph, df, method="vif").fit))
        return out

    @case(f"lifelines_strata_weights_robust_{_method}", requires=("lifelines",))
    def _lifelines_strata(method=_method):
        df = gbsg_frame()[GBSG_COVS + ["time", "cens", "tgrade", "w"]]
        cph = _lifelines(df, strata=["tgrade"], weights_col="w", robust=True)
        out = {"coef": result_outputs(ci.influence(cph, df, method=method))}
        if method in ("auto", "reid"):
            out["survival"] = result_outputs(ci.influence(
                cph, df, method=method, target=_targets("survival", gbsg_new(),
                                                        times=(400, 1200))), extras=False)
        return out

    @case(f"lifelines_time_varying_{_method}", requires=("lifelines",))
    def _lifelines_ctv(method=_method):
        from lifelines import CoxTimeVaryingFitter
        df = counting_frame()
        ctv = CoxTimeVaryingFitter().fit(df, id_col="id", event_col="event",
                                         start_col="start", stop_col="stop")
        return result_outputs(ci.influence(ctv, df, method=method))


for _method in ("auto", "vif", "reid", "exact"):
    @case(f"lifelines_entry_col_{_method}", requires=("lifelines",))
    def _lifelines_entry(method=_method):
        df = gbsg_frame()[GBSG_COVS + ["entry", "time", "cens"]]
        cph = _lifelines(df, entry_col="entry")
        return result_outputs(ci.influence(cph, df, method=method))

    @case(f"lifelines_cluster_col_{_method}", requires=("lifelines",))
    def _lifelines_cluster(method=_method):
        df = gbsg_frame()[GBSG_COVS + ["time", "cens", "hosp"]]
        cph = _lifelines(df, cluster_col="hosp")
        return result_outputs(ci.influence(cph, df, method=method))


for _method in ("auto", "reid", "exact"):
    @case(f"lifelines_formula_{_method}", requires=("lifelines",))
    def _lifelines_formula(method=_method):
        df = gbsg_frame()[GBSG_COVS + ["time", "cens", "tgrade"]]
        cph = _lifelines(df, formula="age + tsize * horTh + pnodes + C(tgrade)")
        new = gbsg_new()
        out = {"coef": result_outputs(ci.influence(cph, df, method=method))}
        out["rr_raw_new"] = result_outputs(ci.influence(
            cph, df, method=method, target=_targets("rr", new)), extras=False)
        return out

    @case(f"lifelines_rossi_{_method}", requires=("lifelines",))
    def _lifelines_rossi(method=_method):
        from lifelines import CoxPHFitter
        df = rossi_frame()
        cph = CoxPHFitter().fit(df, "week", "arrest")
        return result_outputs(ci.influence(cph, df, method=method, target="hr"))


@case("lifelines_refused", requires=("lifelines",))
def _lifelines_refused():
    df = gbsg_frame()[GBSG_COVS + ["time", "cens"]]
    l1 = _lifelines(df, penalizer=0.1, l1_ratio=0.5)
    return {"l1_ratio": error_of(lambda: ci.influence(l1, df)),
            "no_data": error_of(lambda: ci.influence(_lifelines(df))),
            "wrong_rows": error_of(lambda: ci.influence(_lifelines(df), df.iloc[:-1]))}


def _phreg(df, covs, **kw):
    from statsmodels.duration.hazard_regression import PHReg
    return PHReg(df["time"], df[covs], status=df["cens"], **kw).fit()


for _method in METHODS:
    @case(f"statsmodels_breslow_{_method}", requires=("statsmodels", "lifelines"))
    def _statsmodels_breslow(method=_method):
        df = gbsg_frame()
        res = _phreg(df, GBSG_COVS)
        out = {"coef": result_outputs(ci.influence(res, method=method))}
        if method in ("auto", "vif"):
            out["survival"] = result_outputs(ci.influence(
                res, method=method, target=_targets("survival", gbsg_new()[GBSG_COVS],
                                                    times=(700,))), extras=False)
        return out


for _method in ("auto", "reid", "exact"):
    @case(f"statsmodels_efron_strata_{_method}", requires=("statsmodels", "lifelines"))
    def _statsmodels_efron(method=_method):
        df = gbsg_frame()
        res = _phreg(df, GBSG_COVS, ties="efron", strata=df["tgrade"].to_numpy())
        return result_outputs(ci.influence(res, df[["tgrade"]], method=method))

    @case(f"statsmodels_entry_{_method}", requires=("statsmodels", "lifelines"))
    def _statsmodels_entry(method=_method):
        df = gbsg_frame()
        res = _phreg(df, GBSG_COVS, ties="efron", entry=df["entry"].to_numpy())
        return result_outputs(ci.influence(res, method=method))


# -------------------------------------------------------------------- flatten, compare
def _labels(index):
    return np.array([str(v) for v in index], dtype=str)


def _kind(values):
    values = np.asarray(values)
    if values.dtype.kind in "fc":
        return "float"
    if values.dtype.kind == "b":
        return "bool"
    if values.dtype.kind in "iu":
        return "int"
    return "str"


def _array(values):
    values = np.asarray(values)
    kind = _kind(values)
    if kind == "float":
        return values.astype(np.float64)
    if kind == "int":
        return values.astype(np.int64)
    if kind == "bool":
        return values.astype(bool)
    return np.vectorize(str, otypes=[str])(values) if values.size else values.astype(str)


def flatten(outputs, prefix=""):
    """Named numpy arrays (float64, int64, bool, str) from a case's outputs."""
    out = {}

    def put(key, value):
        if key in out:
            raise ValueError(f"duplicate output {key!r}")
        out[key] = value

    def walk(key, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(f"{key}.{k}" if key else str(k), v)
        elif isinstance(obj, pd.DataFrame):
            put(f"{key}.index", _labels(obj.index))
            put(f"{key}.index_name", np.array(str(obj.index.name)))
            put(f"{key}.columns", _labels(obj.columns))
            kinds = [_kind(obj[c].to_numpy()) if obj[c].dtype != object
                     else "str" for c in obj.columns]
            put(f"{key}.kinds", np.array(kinds, dtype=str))
            for kind in ("float", "int", "bool", "str"):
                cols = [j for j, k in enumerate(kinds) if k == kind]
                if cols:
                    block = np.column_stack([obj.iloc[:, j].to_numpy() for j in cols]) \
                        if len(obj) else np.empty((0, len(cols)))
                    put(f"{key}.{kind}", _array(block))
        elif isinstance(obj, pd.Series):
            put(f"{key}.index", _labels(obj.index))
            put(f"{key}.name", np.array(str(obj.name)))
            put(f"{key}.values", _array(obj.to_numpy()))
        elif obj is None:
            put(key, np.array("None"))
        elif isinstance(obj, str):
            put(key, np.array(obj))
        else:
            put(key, _array(obj))

    walk(prefix, outputs)
    return out


def compute_case(name):
    """Run case ``name``: its flattened outputs, keyed "<name>/<output>", with the
    package's own warnings (category and message, in order) under "<name>/warnings"."""
    c = CASES[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs = c.fn()
    ours = [f"{w.category.__name__}: {w.message}" for w in caught
            if w.category.__module__.split(".")[0] == "coxinfluence"]
    outputs = dict(outputs)
    outputs["warnings"] = np.array(ours, dtype=str)
    return {f"{name}{SEP}{k}": v for k, v in flatten(outputs).items()}


def information_of(key, arrays):
    """For a fit's gradient at the optimum (``....fit.gradient``-like keys), the same
    fit's information among ``arrays``; else None."""
    if not key.endswith(".gradient"):
        return None
    return arrays.get(key[:-len("gradient")] + "information")


def _same_number(a, b):
    """Two texts of one float (a tuple's entry stored as text) within 1e-12 relative."""
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return abs(x - y) <= 1e-12 * max(abs(x), abs(y))


def compare(key, ref, new, information=None):
    """A description of how ``new`` differs from ``ref`` (the tolerances of the module
    docstring), or None when they agree. ``information``: for a gradient at the optimum,
    the same fit's reference information (its scale sets the tolerance)."""
    ref, new = np.asarray(ref), np.asarray(new)
    if key.endswith(f"{SEP}warnings"):
        # the distinct warnings, not their count: an audit that computes a quantity once
        # warns once where the reference commit recomputed it (and warned) several times
        old, now = set(ref.tolist()), set(new.tolist())
        missing, extra = old - now, now - old
        if missing or extra:
            return f"{key}: warnings missing {sorted(missing)}, new {sorted(extra)}"
        return None
    if ref.shape != new.shape:
        return f"{key}: shape {new.shape}, reference {ref.shape}"
    kr, kn = _kind(ref), _kind(new)
    if kr != kn:
        return f"{key}: {kn} values, reference {kr}"
    if kr != "float":
        if not np.array_equal(ref, new):
            bad = np.flatnonzero(np.asarray(ref != new).ravel())
            bad = np.array([j for j in bad if not _same_number(ref.ravel()[j], new.ravel()[j])],
                           dtype=int)
            if not bad.size:
                return None
            j = bad[0] if bad.size else 0
            return (f"{key}: {bad.size} entries differ, first at flat index {j}: "
                    f"{new.ravel()[j]!r}, reference {ref.ravel()[j]!r}")
        return None
    r, v = ref.ravel(), new.ravel()
    for what, test in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        if not np.array_equal(test(r), test(v)):
            j = np.flatnonzero(test(r) != test(v))[0]
            return f"{key}: {what} positions differ (first at flat index {j}: {v[j]!r}, " \
                   f"reference {r[j]!r})"
    ok = np.isfinite(r)
    if not ok.any():
        return None
    scale = np.abs(r[ok]).max()
    err = np.abs(v[ok] - r[ok])
    tol = RTOL * np.abs(r[ok]) + ATOL_SCALE * scale
    if information is not None:          # rounding noise: on the information's scale
        tol = np.maximum(tol, GRADIENT_ATOL * max(1.0, float(np.abs(information).max())))
    if (err > tol).any():
        j = int(np.argmax(err / np.maximum(tol, 1e-300)))
        return (f"{key}: {int((err > tol).sum())} of {ok.sum()} entries beyond rtol {RTOL:g} "
                f"+ {ATOL_SCALE:g} x {scale:.3g}; worst {v[ok][j]!r} vs reference "
                f"{r[ok][j]!r} (difference {err[j]:.3g})")
    return None


# ------------------------------------------------------------------------ the file
_KINDS = ("float", "int", "bool", "str")


def _blob(obj):
    return np.frombuffer(json.dumps(obj).encode("utf-8"), dtype=np.uint8)


def _unblob(arr):
    return json.loads(arr.tobytes().decode("utf-8"))


def save(path, arrays, meta):
    """One compressed npz holding every array of ``arrays`` (keys "<case>/<output>") and
    ``meta`` (JSON values), packed to keep the file small: the entries of each kind
    (float64, int64, bool, str) concatenated into one array per kind ("float", "int",
    "bool"; "str" as a JSON list), "keys" a JSON list of ``[key, kind, shape, offset]``
    (an array equal to one stored before it points at the same entries), "meta" JSON."""
    buffers = {k: [] for k in _KINDS}
    sizes = dict.fromkeys(_KINDS, 0)
    seen, keys = {}, []
    for key, value in arrays.items():
        value = np.asarray(value)
        kind = _kind(value)
        value = _array(value)
        sig = (kind, value.shape, value.tobytes())
        if sig not in seen:
            flat = value.ravel()
            seen[sig] = sizes[kind]
            buffers[kind].append(flat.tolist() if kind == "str" else flat)
            sizes[kind] += flat.size
        keys.append([key, kind, list(value.shape), seen[sig]])
    store = {"keys": _blob(keys), "meta": _blob(meta),
             "str": _blob([v for part in buffers["str"] for v in part])}
    for kind, dtype in (("float", np.float64), ("int", np.int64), ("bool", bool)):
        store[kind] = (np.concatenate(buffers[kind]) if buffers[kind]
                       else np.empty(0, dtype=dtype)).astype(dtype)
    np.savez_compressed(path, **store)


def load(path):
    """``(arrays, meta)`` as given to :func:`save`."""
    with np.load(path, allow_pickle=False) as z:
        keys, meta = _unblob(z["keys"]), _unblob(z["meta"])
        flat = {"float": z["float"], "int": z["int"], "bool": z["bool"],
                "str": np.array(_unblob(z["str"]), dtype=str)}
    arrays = {}
    for key, kind, shape, offset in keys:
        size = int(np.prod(shape, dtype=np.int64))
        arrays[key] = flat[kind][offset:offset + size].reshape(shape)
    return arrays, meta

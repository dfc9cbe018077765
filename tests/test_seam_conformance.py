"""One conformance suite for every model family behind the seam (issue 34, item 4).

Each case is a user's model fitted on small data and audited through ``ci.influence``'s own
dispatch (:func:`coxinfluence.influence_functions.registry.audit_model`): a newly
registered family joins the suite with one entry in :data:`CASES`. Every property is
checked against an independent computation:

- **VIF** against literal deletion: ``change("vif") = H^{-1} (grad L - grad L_{-g})`` at
  ``theta_hat`` (``-VIF_n(g)/n``), ``L_{-g}`` the objective of the family's own model
  fitted on the data without the unit's rows (its seam's ``objective``; for the autodiff
  loss ``loss(theta, presence)``), its gradient by central differences;
- **one-step Newton** against ``-H_{-g}^{-1} grad L_{-g}(theta_hat)`` (the same deleted
  objective, ``H_{-g}`` by differences);
- **exact refits** against the family's own refitter on the data without the unit
  (``ci.fit_*`` on the subset, lifelines' fitter, scikit-survival's estimator, statsmodels'
  ``Logit`` for the autodiff GLM, scipy for the test-only family), within 1e-6 SE;
- ``method="auto"``'s top 10 by likelihood displacement is ``method="exact"``'s top 10;
- doubling a unit's integer case weights equals entering it twice (families with case
  weights: Cox, AFT, Fine-Gray, lifelines' ``weights_col``, cause-specific and multi-state
  Cox, the test-only family);
- the robust covariance is ``D' D`` with ``D`` the units' changes where the family defines
  it so (``Case.robust`` names the method giving ``D``; None: refused, a ValueError): Reid's
  change for Cox (rows, subjects, clusters, lifelines' ridge, scikit-survival's CoxPH: R's
  ``coxph(cluster=)$var``), Fine-Gray (crr's sandwich, its IF including the censoring
  term), the engine's decomposable families (lifelines' ancillary fit, the autodiff GLM,
  the test-only family); the VIF change (equal to Reid's) for AFT (R's ``survreg(robust =
  TRUE)``); refused for Coxnet;
- results are indexed by the caller's index (rows) or the sorted unit labels;
- ``executor=`` gives the serial results, ``progress=True`` writes a tqdm bar to stderr;
- the caller's data are unchanged.

A deletion is "literal" here: the unit's rows are removed from the caller's DataFrame and
the model is fitted again by the same code that fitted it.
"""
from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pandas as pd
import pytest
import seam_example_family  # noqa: F401  (registers the test-only family)

import coxinfluence as ci
from coxinfluence.influence_functions.registry import audit_model, families

# ----------------------------------------------------------------------------- data

N = 80


def _rows(seed=1, n=N):
    """Survival rows: two covariates, case weights 1 or 2, a shuffled integer index (the
    caller's labels, not 0..n-1)."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = (rng.uniform(size=n) < 0.5).astype(float)
    t = rng.exponential(np.exp(-(0.5 * x1 - 0.4 * x2))) * 10 + 0.1
    e = (rng.uniform(size=n) < 0.75).astype(float)
    w = rng.choice([1.0, 2.0], size=n, p=[0.7, 0.3])            # case weights
    index = pd.Index(1000 + rng.permutation(n) * 7, name="patient")
    return pd.DataFrame({"x1": x1, "x2": x2, "t": np.round(t, 2), "e": e, "w": w},
                        index=index)


def _subjects(seed=2, n_subjects=40):
    """(start, stop] rows of subjects with a time-varying covariate; ids are strings."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(n_subjects):
        x2 = float(rng.uniform() < 0.5)
        cuts = np.sort(rng.uniform(0.5, 9.5, size=rng.integers(0, 3)))
        stop = rng.exponential(8.0) + 0.3
        bounds = np.r_[0.0, cuts[cuts < stop], stop]
        event = float(rng.uniform() < 0.7)
        for k in range(len(bounds) - 1):
            out.append({"id": f"s{s:02d}", "start": bounds[k], "stop": bounds[k + 1],
                        "x1": rng.normal(), "x2": x2, "w": 1.0 + (s % 3 == 0),
                        "e": event if k == len(bounds) - 2 else 0.0})
    df = pd.DataFrame(out)
    df.index = pd.Index([f"row{i}" for i in range(len(df))][::-1])
    return df


def _competing(seed=3, n=N):
    rng = np.random.default_rng(seed)
    df = _rows(seed, n)
    df["status"] = rng.choice([0, 1, 2], size=n, p=[0.3, 0.45, 0.25])
    df["stratum"] = np.where(rng.uniform(size=n) < 0.5, "a", "b")
    return df


# ------------------------------------------------------------------------ the cases

@dataclass
class Case:
    """One family and unit kind.

    ``family``: the registered family (:class:`~coxinfluence.influence_functions.registry.Family`
    name) that accepts the model (None: a model already behind the seam);
    ``make(df) -> (model, data, options)``: the user's model fitted on ``df`` (the caller's
    frame or a subset of its rows) with what ``ci.influence`` takes beside it;
    ``own_coef(model) -> (d,)``: the fitter's own coefficients in the seam's order;
    ``unit``: the column of ``df`` naming the unit of deletion (None: the rows);
    ``weights``: the case-weight column (None: the family has none);
    ``robust``: the method whose changes ``D`` give the robust covariance ``D' D`` (None:
    ``covariance(True)`` is refused); ``weighted_unit(df)``: the unit whose weights the
    weight-2 test doubles (with Efron's ties a censored one: Efron's correction counts
    tied events, so an event of weight 2 is not two tied events)."""

    name: str
    df: pd.DataFrame
    family: Optional[str]
    make: Callable
    own_coef: Callable = lambda model: np.asarray(model.coef, dtype=np.float64)
    unit: Optional[str] = None
    weights: Optional[str] = None
    robust: Optional[str] = None
    weighted_unit: Callable = lambda df: df.index[4]
    deleted_objective: Optional[Callable] = None
    oracle_refit: Optional[Callable] = None
    step_cap: Optional[Callable] = None
    refit_se: float = 1e-6
    no_weights: str = "the family has no case weights"
    extra: dict = field(default_factory=dict)


def _cox_rows():
    df = _rows()
    return Case("cox_rows", df, "cox", lambda d: (ci.fit_cox(d[["x1", "x2"]], d["t"], d["e"],
                                                      weights=d["w"]), None, {}),
                weights="w", robust="reid", weighted_unit=_censored)


def _cox_subjects():
    df = _subjects()
    return Case("cox_subjects", df, "cox",
                lambda d: (ci.fit_cox(d[["x1", "x2"]], d["stop"], d["e"], start=d["start"],
                                      id=d["id"], weights=d["w"]), None, {}),
                unit="id", weights="w", robust="reid", weighted_unit=_censored_subject)


def _cox_clusters():
    df = _rows(seed=4)
    df["hospital"] = np.repeat([f"h{k:02d}" for k in range(16)], N // 16)[
        np.random.default_rng(5).permutation(N)]
    return Case("cox_clusters", df, "cox",
                lambda d: (ci.fit_cox(d[["x1", "x2"]], d["t"], d["e"], ties="breslow",
                                      weights=d["w"]), None, {"groups": d["hospital"]}),
                unit="hospital", weights="w", robust="reid",
                weighted_unit=lambda d: d["hospital"].iloc[0])


def _censored(df):
    return df.index[np.flatnonzero(df["e"].to_numpy() == 0)[0]]


def _censored_subject(df):
    events = df.groupby("id")["e"].sum()
    return events.index[np.flatnonzero(events.to_numpy() == 0)[0]]


def _lifelines_fit(fitter, d, cols, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fitter.fit(d[cols], "t", "e", **kw)


def _cox_ridge():
    from lifelines import CoxPHFitter
    df = _rows(seed=6)
    cols = ["x1", "x2", "t", "e"]

    def make(d):
        cph = _lifelines_fit(CoxPHFitter(penalizer=0.3, l1_ratio=0.0), d, cols,
                             fit_options={"precision": 1e-13})
        return cph, d[cols], {}
    return Case("cox_ridge", df, "lifelines", make, own_coef=lambda m: m.params_.to_numpy(),
                robust="reid",
                no_weights="lifelines' penalised CoxPHFitter: a weight of 2 is not the row "
                           "entered twice in lifelines itself (its covariates' scaling is "
                           "unweighted; measured 4e-3 apart in coef)")


def _aft():
    df = _rows(seed=7)
    return Case("aft", df, "aft", lambda d: (ci.fit_aft(d[["x1", "x2"]], d["t"], d["e"],
                                                 weights=d["w"]), None, {}),
                weights="w", robust="vif", weighted_unit=lambda d: d.index[3])


#: lifelines' optimiser tightened (SLSQP's ftol for the AFT fitters, BFGS's gtol otherwise);
#: measured: its maxima then lie within 5e-7 SE of ours (n = 80), 3e-5 SE with its defaults
_TIGHT = {"ftol": 1e-14, "maxiter": 5000, "gtol": 1e-9}
#: lifelines' own refits as oracle: within this many SE (its optimiser's precision)
_LIFELINES_SE = 5e-6


def _lifelines_weibull():
    from lifelines import WeibullAFTFitter
    df = _rows(seed=8)
    cols = ["x1", "x2", "t", "e", "w"]

    def make(d):
        m = _lifelines_fit(WeibullAFTFitter(), d, cols, weights_col="w",
                           fit_options=_TIGHT)
        return m, d[cols], {}
    return Case("lifelines_weibull_aft", df, "lifelines",
                make, own_coef=lambda m: m.params_.to_numpy(),
                weights="w", robust="vif", weighted_unit=lambda d: d.index[5],
                refit_se=_LIFELINES_SE)


def _lifelines_ancillary():
    from lifelines import WeibullAFTFitter
    df = _rows(seed=9)
    cols = ["x1", "x2", "t", "e", "w"]

    def make(d):
        m = _lifelines_fit(WeibullAFTFitter(), d, cols, weights_col="w", ancillary=True,
                           fit_options=_TIGHT)
        return m, d[cols], {}
    return Case("lifelines_ancillary", df, "lifelines",
                make, own_coef=lambda m: m.params_.to_numpy(),
                weights="w", robust="reid", weighted_unit=lambda d: d.index[5],
                refit_se=_LIFELINES_SE)


def _fine_gray():
    df = _competing()
    return Case("fine_gray", df, "fine_gray",
                lambda d: (ci.fit_fine_gray(d[["x1", "x2"]], d["t"], d["status"], cause=1,
                                            weights=d["w"], strata=d["stratum"]), None, {}),
                weights="w", robust="reid", weighted_unit=lambda d: d.index[2])


def _statsmodels_phreg():
    hr = pytest.importorskip("statsmodels.duration.hazard_regression")
    df = _rows(seed=16)
    df["stratum"] = np.where(df["x1"] > 0.5, "a", "b")

    def make(d):
        res = hr.PHReg(d["t"], d[["x1", "x2"]], status=d["e"], ties="efron",
                       strata=d["stratum"]).fit()
        return res, None, {}
    return Case("statsmodels_phreg", df, "statsmodels",
                make, own_coef=lambda m: np.asarray(m.params),
                robust="reid",
                no_weights="statsmodels' PHReg takes no case weights")


def _sksurv_y(d):
    from sksurv.util import Surv
    return Surv.from_arrays(d["e"].to_numpy() == 1, d["t"].to_numpy())


def _sksurv_coxph():
    sk = pytest.importorskip("sksurv.linear_model", reason="scikit-survival not installed")
    df = _rows(seed=10)

    def make(d):
        y = _sksurv_y(d)
        est = sk.CoxPHSurvivalAnalysis(alpha=2.0, ties="efron", tol=1e-15).fit(
            d[["x1", "x2"]], y)
        return est, d[["x1", "x2"]], {"y": y}
    return Case("sksurv_coxph", df, "scikit-survival",
                make, own_coef=lambda m: m.coef_, robust="reid",
                no_weights="scikit-survival's Cox estimators take no case weights")


def _sksurv_coxnet():
    sk = pytest.importorskip("sksurv.linear_model", reason="scikit-survival not installed")
    df = _rows(seed=11)
    df["x3"] = np.random.default_rng(12).normal(size=len(df))       # noise: dropped by L1
    cols = ["x1", "x2", "x3"]

    def make(d):
        y = _sksurv_y(d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = sk.CoxnetSurvivalAnalysis(l1_ratio=0.9, alphas=[0.04], tol=1e-15).fit(
                d[cols], y)
        return est, d[cols], {"y": y}
    return Case("sksurv_coxnet", df, "scikit-survival", make, own_coef=lambda m: m.coef_[:, 0],
                no_weights="scikit-survival's Cox estimators take no case weights",
                step_cap=lambda coef: np.where(coef != 0, np.abs(coef) / 4, np.inf))


def _binary(seed, n=N):
    rng = np.random.default_rng(seed)
    df = _rows(seed, n)[["x1", "x2", "w"]]
    df["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-(0.3 + 0.8 * df["x1"] - 0.6 * df["x2"])))
               ).astype(float)
    return df


def _logit_oracle(df):
    """statsmodels' GLM (binomial, its IRLS to 1e-13) on ``df``: the oracle of both
    logistic families' refits."""
    sm = pytest.importorskip("statsmodels.api")
    X = sm.add_constant(df[["x1", "x2"]].to_numpy())
    glm = sm.GLM(df["y"].to_numpy(), X, family=sm.families.Binomial(),
                 freq_weights=df["w"].to_numpy())
    return glm.fit(tol=1e-13, maxiter=100).params


def _example_family():
    from seam_example_family import LogisticFit
    df = _binary(13)
    return Case("example_family", df, "logistic (tests)",
                lambda d: (LogisticFit(d[["x1", "x2"]], d["y"], weights=d["w"]), None, {}),
                weights="w", robust="reid", weighted_unit=lambda d: d.index[4],
                oracle_refit=lambda case, label: _logit_oracle(_without(case, label)))


def _autodiff_glm():
    pytest.importorskip("jax", reason="jax not installed")
    from coxinfluence.autodiff import AutodiffModel, losses
    df = _binary(14, n=60)

    def make(d):
        loss = losses.glm(d[["x1", "x2"]].to_numpy(), d["y"].to_numpy(),
                          weights=d["w"].to_numpy())
        return AutodiffModel(loss, columns=["Intercept", "x1", "x2"], labels=d.index), None, {}

    def deleted(seam, label):
        import jax
        import jax.numpy as jnp
        presence = jnp.asarray((seam.unit_labels != label).astype(float))
        f = jax.jit(jax.vmap(lambda t: seam.loss.loss(t, presence)))
        return lambda thetas: np.asarray(f(jnp.asarray(thetas)))
    return Case("autodiff_glm", df, None, make, deleted_objective=deleted, robust="reid",
                no_weights="not run for the autodiff GLM: two more losses would compile for "
                           "seconds each (the test-only family checks a weighted "
                           "decomposable loss)",
                oracle_refit=lambda case, label: _logit_oracle(_without(case, label)))


def _multistate():
    from coxinfluence.models.multistate import simulate_illness_death
    X, start, stop, state, ids = simulate_illness_death(n_subjects=60, seed=3)
    df = X.assign(start=start, stop=stop, state=state, id=[f"p{i:02d}" for i in ids])
    df.index = pd.Index([f"row{i}" for i in range(len(df))][::-1])
    return Case("multistate", df, "multistate",
                lambda d: (ci.fit_multistate(d[["x1", "x2"]], d["start"], d["stop"],
                                             d["state"], d["id"]), None, {}),
                unit="id", robust="reid",
                no_weights="unweighted here; case multistate_options has case weights")


def _multistate_shared():
    """Shared coefficients: one stratified Cox fit of every transition's rows."""
    case = _multistate()
    case.name = "multistate_shared"
    case.make = lambda d: (ci.fit_multistate(d[["x1", "x2"]], d["start"], d["stop"],
                                             d["state"], d["id"],
                                             shared={"x2": ["1:2", "1:3", "2:3"]}), None, {})
    return case


def _multistate_options():
    """Case weights (1 or 2 per subject), strata and subjects starting in different states
    (istate: a quarter of those who fell ill enter ill)."""
    from coxinfluence.models.multistate import simulate_illness_death
    X, start, stop, state, ids = simulate_illness_death(n_subjects=60, seed=5)
    df = X.assign(start=start, stop=stop, state=state, id=[f"p{i:02d}" for i in ids])
    rng = np.random.default_rng(6)
    subjects = df["id"].unique()
    df["w"] = df["id"].map(dict(zip(subjects, rng.choice([1.0, 2.0], subjects.size))))
    df["g"] = df["id"].map(dict(zip(subjects, rng.choice(["a", "b"], subjects.size))))
    df["istate"] = np.where(df["id"].duplicated(), "1", "healthy").astype(object)
    ill = df.loc[df["id"].duplicated(), "id"].to_numpy()[::4]     # enter already ill
    first = df["id"].isin(ill) & ~df["id"].duplicated()
    df = df[~first].copy()
    df.loc[df["id"].isin(ill), "istate"] = "1"
    df.index = pd.Index([f"row{i}" for i in range(len(df))][::-1])
    return Case("multistate_options", df, "multistate",
                lambda d: (ci.fit_multistate(d[["x1", "x2"]], d["start"], d["stop"],
                                             d["state"], d["id"], weights=d["w"],
                                             strata=d["g"], istate=d["istate"]), None, {}),
                unit="id", weights="w", robust="reid",
                weighted_unit=lambda d: d.loc[(d["state"] == 0)
                                              & ~d["id"].duplicated(keep=False), "id"].iloc[0])


def _cause_specific():
    df = _competing()
    return Case("cause_specific", df, "cause_specific",
                lambda d: (ci.fit_cause_specific(d[["x1", "x2"]], d["t"], d["status"],
                                                 weights=d["w"], strata=d["stratum"]),
                           None, {}),
                weights="w", robust="reid",
                weighted_unit=lambda d: d.index[np.flatnonzero(d["status"] == 0)[0]])


CASES = {c.__name__[1:]: c for c in (
    _cox_rows, _cox_subjects, _cox_clusters, _cox_ridge, _aft, _lifelines_weibull,
    _lifelines_ancillary, _fine_gray, _statsmodels_phreg, _sksurv_coxph, _sksurv_coxnet,
    _autodiff_glm, _example_family, _multistate, _multistate_shared,
    _multistate_options, _cause_specific)}


#: registered families without a case of their own, and where they are covered
NOT_CASES = {
    "decomposable": "a DecomposableFit passed directly; its seam, DecomposableAudit, is "
                    "the case lifelines_ancillary's (tests/test_engine.py builds one)",
    "scikit-survival fit": "the SksurvCoxFit of an audited scikit-survival estimator passed "
                           "directly; its seams, SksurvCoxAudit and CoxnetAudit, are the "
                           "cases sksurv_coxph's and sksurv_coxnet's "
                           "(tests/test_sksurv_fit_direct.py: its refits equal the "
                           "estimator audit's bit for bit)",
}


def test_every_registered_family_has_a_case():
    """A family the package registers without a case here fails: adding one is one entry
    in CASES."""
    covered = set()
    for make in CASES.values():                 # a case's data only; its model is lazy
        try:
            covered.add(make().family)
        except pytest.skip.Exception:           # an optional library missing
            pass
    package = {f.name for f in families()                # not other test files' toys
               if getattr(f.build, "__module__", "").startswith("coxinfluence")}
    assert {"cox", "aft", "fine_gray", "scikit-survival"} <= package
    missing = package - covered - set(NOT_CASES)
    assert not missing, f"registered families without a conformance case: {missing}"


# ---------------------------------------------------------------------- machinery

def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _full(case):
    """The model fitted on the whole of ``case.df`` (made once per case)."""
    if "full" not in case.extra:
        case.extra["full"] = case.make(case.df)
    return case.extra["full"]


def _seam(case, df=None):
    model, data, options = _full(case) if df is None else case.make(df)
    return _quiet(audit_model, model, data, **options)[0]


def _influence(case, **kw):
    model, data, options = _full(case)
    return _quiet(ci.influence, model, data, **options, **kw)


def _unit_rows(case, label):
    """Positions in ``case.df`` of the unit ``label``'s rows."""
    if case.unit is None:
        return np.flatnonzero(case.df.index == label)
    return np.flatnonzero(case.df[case.unit].to_numpy() == label)


def _without(case, label):
    keep = np.ones(len(case.df), dtype=bool)
    keep[_unit_rows(case, label)] = False
    return case.df[keep]


def _made_without(case, label):
    """``case.make`` on the data without the unit ``label`` (made once per unit)."""
    key = ("without", label)
    if key not in case.extra:
        case.extra[key] = case.make(_without(case, label))
    return case.extra[key]


@dataclass
class Audited:
    case: Case
    seam: object
    codes: np.ndarray          # the units the literal checks take: the largest VIF LD, two more

    @property
    def labels(self):
        return self.seam.unit_labels[self.codes]


@pytest.fixture(scope="module", params=list(CASES))
def audited(request):
    case = CASES[request.param]()
    model = _full(case)[0]
    accepting = next((f.name for f in families() if f.accepts(model)), None)
    assert accepting == case.family, (case.name, accepting)
    seam = _seam(case)
    vif = seam.change("vif")
    ld = np.einsum("ij,jk,ik->i", vif, seam.information, vif)
    U = len(seam.unit_labels)
    codes = np.array(list(dict.fromkeys([int(np.nanargmax(ld)), U // 2, U - 1])))
    return Audited(case, seam, codes)


#: an absolute floor of the literal comparisons, in standard errors: a unit whose deletion
#: changes nothing (a subject censored before the first event) has a literal change of
#: rounding size (3e-13 measured)
_FLOOR = 1e-10


def _se(seam):
    return np.sqrt(np.diag(np.linalg.inv(seam.information)))


def _steps(audited):
    h = 1e-2 * _se(audited.seam)
    if audited.case.step_cap is not None:
        h = np.minimum(h, audited.case.step_cap(np.asarray(audited.seam.coef)))
    return h


def _free(audited):
    """The coordinates with derivatives (Coxnet: its active set)."""
    coef = np.asarray(audited.seam.coef, dtype=np.float64)
    if audited.case.step_cap is None:
        return np.ones(coef.size, dtype=bool)
    return coef != 0


_STENCIL = np.array([-2.0, -1.0, 1.0, 2.0])
_WEIGHTS = np.array([1.0, -8.0, 8.0, -1.0]) / 12.0


def _gradient(f, theta, h):
    """Fourth-order central differences of ``f`` ((m, d) -> (m,)) at ``theta``."""
    d = theta.size
    pts = theta[None, None, :] + _STENCIL[:, None, None] * np.diag(h)[None, :, :]
    vals = np.asarray(f(pts.reshape(-1, d)), dtype=np.float64).reshape(4, d)
    return _WEIGHTS @ vals / h


def _hessian(f, theta, h):
    d = theta.size
    cols = [sum(w * _gradient(f, theta + s * h[k] * np.eye(d)[k], h)
                for s, w in zip(_STENCIL, _WEIGHTS)) / h[k] for k in range(d)]
    H = np.column_stack(cols)
    return (H + H.T) / 2


def _deleted_objective(audited, label):
    case = audited.case
    if case.deleted_objective is not None:
        return case.deleted_objective(audited.seam, label)
    model, data, options = _made_without(case, label)
    return _quiet(audit_model, model, data, **options)[0].objective


def _restricted(f, theta, free):
    """``f`` as a function of the free coordinates (the others held at ``theta``)."""
    def g(points):
        full = np.repeat(theta[None, :], len(points), axis=0)
        full[:, free] = points
        return f(full)
    return g


# ------------------------------------------------------------------- the properties

def test_vif_is_literal_deletion(audited):
    """``change("vif")`` = ``H^{-1} (grad L - grad L_{-g})`` at ``theta_hat``, both
    gradients by differences of the family's own objectives."""
    seam, theta = audited.seam, np.asarray(audited.seam.coef, dtype=np.float64)
    free, h, se = _free(audited), _steps(audited), _se(audited.seam)
    H = np.asarray(seam.information)[np.ix_(free, free)]
    full = _gradient(_restricted(seam.objective, theta, free), theta[free], h[free])
    vif = seam.change("vif")
    for code, label in zip(audited.codes, audited.labels):
        deleted = _restricted(_deleted_objective(audited, label), theta, free)
        expected = np.zeros(theta.size)
        expected[free] = np.linalg.solve(H, full - _gradient(deleted, theta[free], h[free]))
        scale = np.abs(expected).max()
        assert np.abs(vif[code] - expected).max() <= 1e-6 * scale + _FLOOR * se.max(), (
            label, vif[code], expected)


def test_newton_is_its_definition(audited):
    """``change("newton")`` = ``-H_{-g}^{-1} grad L_{-g}(theta_hat)``."""
    seam, theta = audited.seam, np.asarray(audited.seam.coef, dtype=np.float64)
    free, h, se = _free(audited), _steps(audited), _se(audited.seam)
    newton = seam.change("newton")
    for code, label in zip(audited.codes, audited.labels):
        deleted = _restricted(_deleted_objective(audited, label), theta, free)
        g = _gradient(deleted, theta[free], h[free])
        Hd = _hessian(deleted, theta[free], h[free])
        expected = np.zeros(theta.size)
        expected[free] = -np.linalg.solve(Hd, g)
        scale = np.abs(expected).max()
        assert np.abs(newton[code] - expected).max() <= 1e-6 * scale + _FLOOR * se.max(), (
            label, newton[code], expected)


def _oracle_refit(audited, label):
    case = audited.case
    if case.oracle_refit is not None:
        return np.asarray(case.oracle_refit(case, label), dtype=np.float64)
    model, _, _ = _made_without(case, label)
    return np.asarray(case.own_coef(model), dtype=np.float64)


def test_exact_refits_are_the_family_refitter(audited):
    """``refit(codes)`` equals the family's own fitter on the data without the unit, to
    1e-6 standard errors."""
    seam = audited.seam
    coef = np.asarray(seam.coef, dtype=np.float64)
    se = _se(seam)
    refits = _quiet(seam.refit, audited.codes)
    assert list(refits.codes) == list(audited.codes)
    for k, label in enumerate(audited.labels):
        assert refits.status[k] == "ok", (label, refits.status[k])
        expected = _oracle_refit(audited, label)
        assert np.abs((refits.theta[k] - expected) / se).max() <= audited.case.refit_se, (
            label, refits.theta[k] - coef, expected - coef)


def test_auto_top_10_is_the_exact_top_10(audited):
    auto = _influence(audited.case)
    exact = _influence(audited.case, method="exact")
    assert list(auto.top(10).index) == list(exact.top(10).index)
    assert auto.top(10)["verified"].all()
    top = auto.top(10).index            # both refits, to the refits' tolerance
    se = np.sqrt(np.diag(np.linalg.inv(audited.seam.information)))
    diff = (auto.theta_change.loc[top] - exact.theta_change.loc[top]).to_numpy() / se
    assert np.abs(diff).max() <= 1e-7


def test_weight_two_is_the_unit_duplicated(audited):
    """Doubling a unit's case weights equals entering its rows twice (as a second unit):
    the fit, every other unit's change by each method, and (exact) the deletion of the
    doubled unit against the family's fit without both copies."""
    case = audited.case
    if case.weights is None:
        pytest.skip(f"{case.name}: {case.no_weights}")
    label = case.weighted_unit(case.df)
    rows = _unit_rows(case, label)
    weighted = case.df.copy()
    weighted.iloc[rows, weighted.columns.get_loc(case.weights)] *= 2.0
    copy = case.df.iloc[rows].set_axis([f"copy{k}" for k in range(rows.size)], axis=0)
    if case.unit is not None:
        copy[case.unit] = f"{label}_copy"
    dup = pd.concat([case.df, copy])
    sw, sd = _seam(case, weighted), _seam(case, dup)
    np.testing.assert_allclose(sw.coef, sd.coef, rtol=0, atol=1e-9)
    labels = sw.unit_labels
    own = labels.get_loc(label)
    others = np.delete(np.arange(len(labels)), own)
    at = sd.unit_labels.get_indexer(labels[others])
    assert (at >= 0).all()
    for method in ("vif", "reid", "newton"):
        a, b = sw.change(method)[others], sd.change(method)[at]
        assert np.abs(a - b).max() <= 1e-7 * np.abs(b).max(), method
    # deleting the doubled unit = deleting both copies
    both = dup.drop(index=list(case.df.index[rows]) + list(copy.index))
    model, _, _ = case.make(both)
    refit = _quiet(sw.refit, [own])
    assert refit.status[0] == "ok"
    se = _se(sw)
    assert np.abs((refit.theta[0] - case.own_coef(model)) / se).max() <= case.refit_se


def test_robust_covariance_is_D_prime_D(audited):
    seam, case = audited.seam, audited.case
    if case.robust is None:
        with pytest.raises(ValueError):
            seam.covariance(True)
        return
    D = seam.change(case.robust)
    np.testing.assert_allclose(seam.covariance(True), D.T @ D, rtol=1e-9,
                               atol=1e-14 * np.abs(D.T @ D).max())


def _expected_labels(case):
    if case.unit is None:
        return case.df.index
    return pd.Index(sorted(case.df[case.unit].unique()))


def test_results_keep_the_callers_labels(audited):
    res = _influence(audited.case, method="vif")
    expected = _expected_labels(audited.case)
    for table in (res.loo_change, res.theta_change, res.flags, res.dfbetas):
        assert list(table.index) == list(expected)
    assert list(res.likelihood_displacement.index) == list(expected)
    assert list(res.top(len(expected)).index.sort_values()) == sorted(expected)


class _CountingPool(ThreadPoolExecutor):
    """A thread pool that counts the tasks it is given (``executor=`` honoured)."""

    def __init__(self):
        super().__init__(2)
        self.tasks = 0

    def submit(self, fn, /, *args, **kwargs):
        self.tasks += 1
        return super().submit(fn, *args, **kwargs)


def test_executor_gives_the_serial_results(audited):
    """``executor=``: the refits run on it (tasks submitted) and equal the serial ones."""
    serial = _influence(audited.case, method="exact")
    with _CountingPool() as pool:
        threaded = _influence(audited.case, method="exact", executor=pool)
    np.testing.assert_array_equal(serial.loo_change.to_numpy(),
                                  threaded.loo_change.to_numpy())
    assert pool.tasks > 0, "the executor was not used"


def test_progress_bar_is_written(audited, capsys):
    capsys.readouterr()
    _influence(audited.case, method="exact", progress=True)
    U = len(audited.seam.unit_labels)
    err = capsys.readouterr().err
    assert f"{U}/{U}" in err, err[-300:]


def test_callers_data_unchanged(audited):
    """The caller's frame, the data and the options passed to ``ci.influence`` are as
    they were after the audit (``method="auto"``: first-order changes and refits)."""
    case = audited.case
    model, data, options = _full(case)
    before = case.df.copy(deep=True)
    data_before = None if data is None else data.copy(deep=True)
    options_before = {k: (v.copy() if hasattr(v, "copy") else v) for k, v in options.items()}
    _quiet(ci.influence, model, data, **options)
    pd.testing.assert_frame_equal(case.df, before)
    if data is not None:
        pd.testing.assert_frame_equal(data, data_before)
    for k, v in options.items():
        np.testing.assert_array_equal(np.asarray(v), np.asarray(options_before[k]))


# ------------------------------------------- the test-only family, end to end (item 5)

def test_example_family_gets_the_whole_audit(tmp_path):
    """A family registered from the tests alone (``tests/seam_example_family.py``, no
    package file touched) gets ``ci.influence``'s whole audit: the VIF for every unit,
    the flags, ``auto``'s verified top 10, the likelihood displacement (exact where
    refitted: ``2 [L(theta_{-i}) - L(theta_hat)]`` of its own objective), LMAX, and the
    HTML report naming the model."""
    from seam_example_family import FAMILY, LogisticAudit, LogisticFit

    from coxinfluence.influence_functions.registry import families
    from coxinfluence.report import write_report
    assert FAMILY in families()
    df = _binary(15, n=120)
    fit = LogisticFit(df[["x1", "x2"]], df["y"], weights=df["w"])
    res = _quiet(ci.influence, fit, df)
    assert isinstance(res.model, LogisticAudit)
    assert list(res.loo_change.index) == list(df.index)
    assert list(res.loo_change.columns) == ["Intercept", "x1", "x2"]
    assert {"undefined", "unstable", "refit_failed"} <= set(res.flags.columns)
    assert res.verification.rule_met and res.top(10)["verified"].all()
    top = res.top(10).index
    theta = np.asarray(fit.coef) + res.theta_change.loc[top].to_numpy()
    for label, t in zip(top, theta):                 # LD of the refit, from the fitter's loss
        ld = 2 * (fit.loss.loss_grad_hess(t[None, :], hess=False)[0][0]
                  - fit.loss.loss_grad_hess(fit.coef[None, :], hess=False)[0][0])
        assert res.likelihood_displacement.loc[label] == pytest.approx(ld, rel=1e-9)
        np.testing.assert_allclose(t, _logit_oracle(df.drop(index=label)), rtol=0,
                                   atol=1e-8)
    assert np.isfinite(res.lmax).all() and res.lmax.max() > 0
    path = write_report(tmp_path / "audit.html", res)
    text = path.read_text(encoding="utf-8")
    assert "Logistic regression (a test-only family)" in text
    assert str(top[0]) in text

"""The main job on the embedded default data (lifelines' bundled GBSG2, no download):
fit a Cox model and print the five most influential patients, ranked and measured as
``coxinfluence audit --demo`` ranks and measures them, beside the first-order estimates of
VIF and Reid's IF.

    python -m coxinfluence.demo

Influence of patient i is its likelihood displacement (:attr:`InfluenceResult.
likelihood_displacement`, the same number as the audit report's "displacement"):

    LD exact   2 [logL(theta_hat) - logL(theta_hat_{-i})], theta_hat_{-i} refitted without
               the patient (:attr:`InfluenceResult.ld_exact`);
    LD VIF     its quadratic-form estimate ``Delta_i' I Delta_i`` from the VIF change
               ``Delta_i = -VIF_n(i) / n`` (no refit; :attr:`InfluenceResult.ld_approx`);
    LD Reid    the same from Reid's IF (R's dfbeta).

Patients are labelled by their row position in GBSG2, counted from 0.
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

import coxinfluence as ci
from coxinfluence.datasets import load_gbsg2


def gbsg2_design():
    """GBSG2 with treatment/menopause as 0/1, tumour grade as dummies (grade I baseline)."""
    df = load_gbsg2()
    X = pd.DataFrame({
        "horTh": (df["horTh"] == "yes").astype(float),
        "age": df["age"].astype(float),
        "post": (df["menostat"] == "Post").astype(float),
        "tsize": df["tsize"].astype(float),
        "grade2": (df["tgrade"].astype(str) == "II").astype(float),
        "grade3": (df["tgrade"].astype(str) == "III").astype(float),
        "pnodes": df["pnodes"].astype(float),
        "progrec": df["progrec"].astype(float),
        "estrec": df["estrec"].astype(float),
    }, index=pd.RangeIndex(len(df), name="patient"))
    return X, df["time"].astype(float), df["cens"].astype(float)


COLUMNS = {
    "LD exact": "likelihood displacement 2[logL(theta_hat) - logL(theta_hat_-i)], "
                "by refitting without the patient",
    "LD VIF": "its quadratic-form estimate Delta' I Delta from the VIF change (no refit)",
    "LD Reid": "the same estimate from Reid's IF (R's dfbeta)",
}


def influence_results(progress=False):
    """(fit, the audit's result, Reid's result) on GBSG2: the default ``method="auto"``
    of ``ci.influence`` (VIF for every patient, exact refits where the audit is read), on
    the frame ``coxinfluence audit --demo`` passes."""
    X, time, event = gbsg2_design()
    fit = ci.fit_cox(X, time, event)
    frame = X.assign(time=time.to_numpy(), event=event.to_numpy())
    res = ci.influence(fit, frame, progress=progress)
    reid = ci.influence(fit, frame, method="reid")
    return fit, res, reid


def top_table(res, reid, k=5):
    """The ``k`` most influential patients of ``res`` (``res.top(k)``, the audit's
    ranking) with the displacement columns of :data:`COLUMNS`, then age, tsize, pnodes,
    horTh, time and event."""
    top = res.top(k)
    idx = top.index
    exact = res.ld_exact.loc[idx]
    if not res.verified.loc[idx].all():          # never on GBSG2: the top 10 are refitted
        raise RuntimeError("the demo's top patients were not all verified by refits")
    table = pd.DataFrame({"LD exact": exact, "LD VIF": res.ld_approx.loc[idx],
                          "LD Reid": reid.ld_approx.loc[idx]}, index=idx)
    return pd.concat([table, top[["age", "tsize", "pnodes", "horTh", "time", "event"]]],
                     axis=1)


def main(argv=None):
    fit, res, reid = influence_results()
    X, time, event = gbsg2_design()
    n = fit.n
    print(f"Cox model on GBSG2 (lifelines' bundled copy): n = {n}, events = {int(event.sum())}, "
          f"Efron ties, converged in {fit.n_iter} Newton steps")
    print(fit.summary().round(4).to_string())
    show = top_table(res, reid, 5)
    print("\nFive most influential patients, as `coxinfluence audit --demo` ranks them "
          "(patient: GBSG2 row from 0)")
    for name, text in COLUMNS.items():
        print(f"  {name:<9} {text}")
    print(show.round(4).to_string())
    exact = res.exact(progress=False)          # every patient refitted
    corr = np.corrcoef(res.ld_approx, exact.ld_exact)[0, 1]
    print(f"\nCorrelation of LD VIF and LD exact over all {n} patients (each refitted): "
          f"{corr:.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

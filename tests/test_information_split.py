"""The information split per unit (coxinfluence.influence_functions.information_split) and
the screened ``unstable`` rule (stability.unstable_screened): the split of some units
equals the split of every unit (bit for bit once the risk-set sums are formed), the
traces equal the traces of the formed split, and the screen gives the unscreened rule's
answer for every unit."""
import numpy as np
import pytest
from test_flags import CASES, design, fit_of

import coxinfluence as ci
from coxinfluence.data.units import resolve_units
from coxinfluence.influence_functions import stability
from coxinfluence.influence_functions.cox_audit import CoxAudit
from coxinfluence.influence_functions.information_split import (
    InformationSplit,
    information_split,
)


@pytest.mark.parametrize("name,kw,groups", CASES, ids=[c[0] for c in CASES])
def test_the_split_of_some_units_is_the_split_of_all(name, kw, groups):
    fit = fit_of(kw)
    units = resolve_units(fit, groups)
    full = information_split(fit, units)
    rng = np.random.default_rng(0)
    codes = rng.integers(0, units.n_units, 9)          # any order, repeats allowed
    codes[1] = codes[4]
    scale = np.abs(full).max()
    parts = InformationSplit(fit, units)               # few units: each row's own terms
    assert np.abs(parts.of(codes) - full[codes]).max() <= 1e-13 * scale
    assert parts.of([]).shape == (0, fit.data.d, fit.data.d)
    # every unit: the risk-set sums, kept for the next calls, which read them
    assert np.array_equal(parts.of(), full)
    assert np.array_equal(parts.of(codes), full[codes])
    assert np.array_equal(parts.of(np.arange(units.n_units)), full)


@pytest.mark.parametrize("name,kw,groups", CASES, ids=[c[0] for c in CASES])
def test_traces_are_the_traces_of_the_split(name, kw, groups):
    fit = fit_of(kw)
    units = resolve_units(fit, groups)
    C = information_split(fit, units)
    want = np.einsum("ij,uji->u", np.linalg.inv(fit.information), C)
    got = InformationSplit(fit, units).traces()
    assert np.abs(got - want).max() <= 1e-12 * max(1.0, np.abs(want).max())
    assert np.isclose(got.sum(), fit.data.d)          # sum_g C_g = H: traces sum to d


def test_risk_set_sums_at_some_rows_are_those_of_all_rows():
    X, t, e, rng = design(3)
    entry = np.maximum(t - np.round(rng.uniform(0.1, 1.5, len(t)), 1), 0) - 0.05
    for kw in ({}, {"start": entry, "strata": rng.integers(0, 2, len(t))}):
        fit = ci.fit_cox(X, t, e, **kw)
        st = fit.risk_sets.state(fit.coef)
        per_term = rng.normal(size=(2, st.frac.size, 3))
        full = fit.risk_sets.sum_over_risk_sets(per_term, st.frac)
        rows = np.sort(rng.choice(fit.n, 17, replace=False))
        assert np.array_equal(fit.risk_sets.sum_over_risk_sets(per_term, st.frac, rows),
                              full[:, rows])


def heavy(seed, n=40):
    """Few rows, heavy-tailed covariates: many units unstable (the screen must pass
    them on)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_t(2, size=(n, 3))
    t = rng.exponential(np.exp(-X @ [0.4, -0.3, 0.2]))
    e = (rng.uniform(size=n) < 0.8).astype(float)
    return X, t, e


@pytest.mark.parametrize("seed", range(6))
def test_the_screened_rule_is_the_rule(seed):
    X, t, e = heavy(seed)
    fit = ci.fit_cox(X, t, e)
    for groups in (None, np.arange(len(t)) // 2):
        audit = CoxAudit(fit, groups)
        delta = -audit.vif / audit.units.n_units
        C = information_split(fit, audit.units)
        want = stability.unstable_from_split(fit.information, C, audit.third, delta)
        got = audit.unstable(delta)
        assert np.array_equal(got, want)
        assert 0 < want.sum() < want.size             # the case tests both answers


def test_the_screened_rule_on_gbsg2():
    from coxinfluence.demo import gbsg2_design
    fit = ci.fit_cox(*gbsg2_design())
    audit = CoxAudit(fit)
    delta = -audit.vif / fit.n
    want = stability.unstable_from_split(fit.information, information_split(fit),
                                         audit.third, delta)
    assert np.array_equal(audit.unstable(delta), want)
    assert want.any()
    # units below both bounds are never formed: 32 of 686 when this was written
    assert want.sum() <= len(audit._split_kept) < fit.n / 10


def test_the_refits_warm_start_reads_the_split_of_its_units():
    X, t, e = heavy(1, n=60)
    fit = ci.fit_cox(X, t, e)
    audit = CoxAudit(fit)
    audit.unstable(-audit.vif / fit.n)                # the flags made the split
    codes = np.array([5, 2, 40])
    with_split = audit.refit(codes)
    plain = ci.influence(fit, method="exact").theta_change.to_numpy()[codes] + fit.coef
    assert (with_split.status == "ok").all()
    assert np.abs(with_split.theta - plain).max() <= 1e-8


@pytest.mark.parametrize("name,kw,groups", CASES, ids=[c[0] for c in CASES])
def test_m_summed_over_each_rows_terms_equals_the_risk_set_sums(name, kw, groups):
    fit = fit_of(kw)
    parts = InformationSplit(fit, resolve_units(fit, groups))
    rows = np.arange(fit.n)
    direct = parts._m_direct(rows)[:, parts._i, parts._j]
    via_sums = np.concatenate([parts._at(parts._m_totals(c0), rows)
                               for c0 in range(0, parts._i.size, parts._chunk)], axis=1)
    assert np.abs(direct - via_sums).max() <= 1e-13 * np.abs(via_sums).max()

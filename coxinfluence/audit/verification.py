"""The verified audit (``method="auto"``): VIF for every unit, exact refits where it is read.

An audit is read from the top, and the most influential units are where the first-order
VIF is weakest (GBSG2's top patient: likelihood displacement 2.02 by VIF, 5.61 by refit).
So ``auto`` refits, exactly (the engine's refit loop,
:func:`coxinfluence.influence_functions.engine_refits.refit_units`):

(a) the units with the largest VIF likelihood displacement ``LD_g = D_g' I D_g``, then
    more (doubling) until the top ``top`` (10) by exact displacement cannot change. The
    stopping rule: with ``L_top`` the ``top``-th largest exact displacement among the
    refitted units,

        SAFETY * max_{g not refitted} LD_g  <  L_top,

    where ``SAFETY`` bounds ``LD_exact / LD_vif`` over units that are not flagged
    (measured: :data:`SAFETY`'s docstring). The first round takes the units the rule
    would ask for if ``L_top`` were the ``top``-th largest VIF displacement (those with
    ``SAFETY * LD_g`` at least that), with the flagged units (b), at least
    ``min_refits`` (10) in all (a flagged unit's exact displacement counts towards
    ``L_top`` like any other's): where the top's
    exact displacements are at least their VIF ones the rule is met after that round
    (SUPPORT and GBSG2: ``tests/test_verified.py``, ``paper_appendix/bench_audit.py``);
(b) every flagged unit (:mod:`coxinfluence.influence_functions.stability`: deleting it
    leaves the model undefined, or VIF is predicted to be off).

At most ``max(60, 8% of the units)`` refits. When the rule is not met within them, the
audit says so, and the units not refitted whose inflated VIF displacement reaches
``L_top`` get the flag ``unverified_top`` (they may belong in the top ``top``).

With a target other than the coefficients (``"hr"``, ``"tr"``, a survival probability, a
cumulative incidence, a test set's Brier score, AUC or C-index, ...), the reader ranks the
units by the target's change, which need not follow the displacement, and by any one of
its columns (``top(k, by=column)``). :func:`verify_target` then goes on (c), so that the
top ``top`` of **every ranking** is the exact one: each column's ``|change_j| / se_j``
and, for a target of several columns, the largest of them (``target_influence``):

- **every unit refitted** (each top is then exact by construction) when there are at most
  :data:`EXHAUSTIVE` units, or :data:`EXHAUSTIVE_STEP` for a target that is a step
  function of the coefficients (``Target.smooth`` False: the AUC and the C-index, whose
  linearised change was measured up to hundreds of times off: bench_certificates). At
  these sizes refitting every unit costs a few passes of the data (a Cox fit of 1,092
  patients: 0.5 s with the C-index rescored; a Fine-Gray fit of 1,338 subjects: 1.3 s);
- beyond, a **bound**: each unit's change is estimated by rescoring the target exactly at
  its one-step Newton coefficients (``theta_hat - H_{-g}^{-1} grad L_{-g}``, the data
  effect included: ``Target.refit_values``), far closer to the exact change than the
  linearised VIF (:data:`TARGET_SAFETY`'s docstring), and units are refitted until, in
  every ranking,

      TARGET_SAFETY * max_{g not refitted} T_g(estimate)  <  T_top,

  ``T_top`` the ``top``-th largest exact value among the refitted units. Each round
  refits the units not yet refitted that could still reach a top (``TARGET_SAFETY *
  T_g`` at least the ``top``-th largest current value: exact where refitted, estimated
  elsewhere), largest first; at most ``max(60, 8% of the units)`` more, beyond which the
  units that may belong in a top get ``unverified_top``. For a step function no bound
  holds: the same refits are made, the rule is reported not met, the text says why and
  the units whose inflated estimate reaches a top are flagged ``unverified_top``.

The units not refitted show the estimate the rule used, so that sorting the shown changes
by any column gives the certified top. The coefficients' own audit stops after (a) and
(b): its refits and numbers are unchanged.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from coxinfluence.influence_functions.engine_refits import Refits

SAFETY = 1.5
"""Safety factor of the stopping rule: an upper bound on ``LD_exact / LD_vif`` for units
that are not flagged (measured over real data sets by ``paper_appendix/bench_flags.py``)."""

TOP = 10
MIN_REFITS = TOP

TARGET_SAFETY = 2.0
"""Safety factor of the target's stopping rule (module docstring, :func:`verify_target`):
an upper bound on ``T_exact / T_estimate`` (the estimate: the target rescored at the
one-step Newton coefficients) for units that are not flagged. Measured (issue 44) among
the units whose exact value is at least half the ``top``-th largest, each column of
Brier scores, integrated Brier scores, survival probabilities and cumulative incidences
at two times: at most 1.32 on lifelines' GBSG2, rossi and kidney transplant data, WHAS
and simulated Fine-Gray fits (``paper_appendix/bench_certificates.py``, where the
linearised VIF change is off by up to 18x), 1.49 on mgus2's cumulative incidence
(``tests/test_verify_by_target.py``). One exception, the survival probabilities of a
139-patient fit: 3.7, a size at which every unit is refitted (:data:`EXHAUSTIVE`)."""

EXHAUSTIVE = 5000
"""With a target other than the coefficients, ``auto`` refits every unit when there are at
most this many (module docstring): its top by every column is then exact."""

EXHAUSTIVE_STEP = 10000
"""The same for a target that is a step function of the coefficients (``Target.smooth``
False: the AUC and the C-index), for which no first-order bound holds."""


def refit_cap(n_units):
    """The most refits ``auto`` spends: ``max(60, ceil(8% of the units))``, at most all."""
    return min(n_units, max(60, math.ceil(0.08 * n_units)))


@dataclass
class Verification:
    """What ``auto`` refitted and whether its stopping rule was met."""

    refits: Refits               # the refitted units (codes), their coefficients and status
    ld_exact: np.ndarray         # (U,) exact displacement; NaN where not refitted or undefined
    rule_met: bool
    threshold: float             # L_top: the top-th exact displacement (NaN if too few)
    bound: float                 # SAFETY * largest VIF displacement not refitted (0 if none)
    unverified_top: np.ndarray   # (U,) bool: not refitted and may belong in the top
    cap: int
    objective_at_fit: float      # J(theta_hat), the displacements' reference
    target: "TargetVerification" = None   # (c): the top by the target (None: coefficients)

    @property
    def verified(self):
        """(U,) bool: units whose numbers are exact refits (status "ok")."""
        out = np.zeros(self.ld_exact.shape[0], dtype=bool)
        out[self.refits.codes[self.refits.ok]] = True
        return out

    def describe(self, unit_name="units"):
        """One sentence for the report and the CLI."""
        k = self.refits.codes.size
        if self.target is not None:
            k -= self.target.n_refits
        if self.rule_met:
            text = (f"{k} {unit_name} refitted exactly; the top {TOP} by exact displacement "
                    f"cannot change (largest VIF displacement not refitted x {SAFETY:g} = "
                    f"{self.bound:.3g} < {self.threshold:.3g}, the {TOP}th exact one)")
        else:
            text = (f"{k} {unit_name} refitted exactly (the limit, {self.cap}); the top "
                    f"{TOP} is not certain: {int(self.unverified_top.sum())} {unit_name} "
                    f"not refitted may belong in it (flag unverified_top)")
        if self.target is not None:
            text += "; " + self.target.describe(unit_name)
        return text


@dataclass
class TargetVerification:
    """What :func:`verify_target` added for the tops by the target (module docstring).

    ``K`` rankings: each column of the target, and the largest standardised change
    (``target_influence``) when there are several."""

    n_refits: int                # units refitted for the target beyond (a) and (b)
    change_exact: np.ndarray     # (U, m) exact target changes of every refitted unit; NaN
    score_exact: np.ndarray      # (U, K) exact rankings where refitted to a maximum; NaN
    rule_met: bool
    threshold: np.ndarray        # (K,) T_top per ranking: the top-th exact value (NaN: too few)
    bound: np.ndarray            # (K,) TARGET_SAFETY * largest estimate not refitted (0: none)
    unverified_top: np.ndarray   # (U,) bool: not refitted and may belong in a top
    cap: int                     # the most refits it could add
    how: str = "bound"           # "every unit" | "bound" | "step" (no bound holds)
    safety: float = TARGET_SAFETY

    def describe(self, unit_name="units"):
        """One sentence for the report and the CLI."""
        k = self.threshold.size
        tops = f"its top {TOP}" if k == 1 else f"its top {TOP} by each of its {k} rankings"
        if self.how == "every unit":
            return (f"{self.n_refits} more refitted for the target: every one of the "
                    f"{self.unverified_top.size} {unit_name} is refitted, so {tops} is "
                    "exact")
        flagged = int(self.unverified_top.sum())
        if self.how == "step":
            return (f"{self.n_refits} more refitted for the target; {tops} is not "
                    "certain: the target is a step function of the coefficients, so no "
                    f"bound ties the changes of the {unit_name} not refitted to their "
                    f"estimates (one-step Newton, rescored); {flagged} {unit_name} whose "
                    f"estimate x {self.safety:g} reaches a top may belong in it (flag "
                    "unverified_top)")
        if self.rule_met:
            margin = int(np.argmax(self.bound / self.threshold))
            return (f"{self.n_refits} more refitted for the target: {tops} by exact "
                    f"change cannot change either (largest estimate not refitted, one-step "
                    f"Newton rescored, x {self.safety:g} = {self.bound[margin]:.3g} < "
                    f"{self.threshold[margin]:.3g}, the {TOP}th exact one"
                    + ("" if k == 1 else ", in the closest ranking") + ")")
        return (f"{self.n_refits} more refitted for the target (the limit, {self.cap}); "
                f"{tops} is not certain: {flagged} {unit_name} not refitted may belong in "
                "it (flag unverified_top)")


def verify(model, ld_approx, must_refit, *, refit=None, top=TOP, min_refits=MIN_REFITS,
           safety=SAFETY, max_refits=None, progress=None, executor=None) -> Verification:
    """Exact refits for ``auto`` (module docstring).

    ``ld_approx`` (U,): VIF likelihood displacements; ``must_refit`` (U,) bool: flagged
    units, refitted first (by decreasing ``ld_approx``, within the cap). ``refit(codes)``
    returns a :class:`~coxinfluence.influence_functions.engine_refits.Refits` (default: the
    model's refits, ``model.refit``); the displacement of a refit is
    ``2 [J(theta_{-g}) - J(theta_hat)]`` (``model.objective``). ``model``: the seam
    (:mod:`coxinfluence.influence_functions.seam`).
    """
    U = len(model.unit_labels)
    cap = refit_cap(U) if max_refits is None else min(U, int(max_refits))
    if refit is None:
        def refit(codes):
            return model.refit(codes, progress=progress, executor=executor)
    score = np.where(np.isfinite(ld_approx), ld_approx, np.inf)   # unknown: refit early
    order = np.argsort(-score, kind="stable")
    flagged_first = np.concatenate([order[must_refit[order]], order[~must_refit[order]]])
    refitted = np.zeros(U, dtype=bool)
    parts = []
    ld_exact = np.full(U, np.nan)
    full = None                  # J(theta_hat): evaluated with the first round's refits
    n_flagged = int(must_refit.sum())
    first = _predicted(score, must_refit, top, safety)
    if model.refit_every_flagged:
        # e.g. the elastic net's selection changes: every flagged unit, beyond the usual
        # cap, and room for the first round's other units twice over
        cap = max(cap, min(U, n_flagged + 2 * max(min_refits, first)))
    # the flagged units' exact displacements count towards L_top like the others'
    want = min(cap, max(min_refits, n_flagged + first))
    while True:
        new = [c for c in flagged_first[:want] if not refitted[c]]
        if new:
            res = refit(np.asarray(new, dtype=int))
            parts.append(res)
            refitted[res.codes] = True
            ok = res.codes[res.ok]
            if full is None:     # one kernel call, and both terms of LD by the same kernel
                values = model.objective(np.vstack([model.coef[None, :], res.theta[res.ok]]))
                full, values = values[0], values[1:]
            else:
                values = model.objective(res.theta[res.ok])
            ld_exact[ok] = 2.0 * (values - full)
        met, threshold, bound = _rule(ld_exact, score, refitted, top, safety)
        if met:
            break
        if refitted.sum() >= cap:
            met = False
            break
        want = min(cap, 2 * want)
    if full is None:
        full = model.objective(model.coef[None, :])[0]
    refits = _concat(parts, model.coef.size)
    contender = _contenders(met, threshold, score, refitted, safety)
    return Verification(refits, ld_exact, met, float(threshold), bound, contender, cap,
                        float(full))


def verify_target(model, ver, score_approx, exact_change, magnitude, *, refit,
                  top=TOP, safety=TARGET_SAFETY, max_refits=None, exhaustive=False,
                  bounded=True) -> Verification:
    """(c) of the module docstring: ``ver`` (:func:`verify`'s) with the refits that make
    the tops by the target certain, and its :class:`TargetVerification`.

    ``score_approx`` (U, K): each ranking's estimate per unit (non-finite: refitted
    first); ``exact_change(refits)`` -> (k, m) the exact target changes of the units a
    :class:`~coxinfluence.influence_functions.engine_refits.Refits` holds (NaN where
    undefined); ``magnitude(changes (k, m))`` -> (k, K) their rankings' values;
    ``refit(codes)`` as in :func:`verify`. ``exhaustive``: refit every unit. Otherwise at
    most ``max_refits`` (default :func:`refit_cap`) refits more, by the rule; with
    ``bounded=False`` (a step function) the rule is never reported met while a unit is
    not refitted."""
    U = ver.ld_exact.shape[0]
    approx = np.asarray(score_approx, dtype=np.float64).reshape(U, -1)
    approx = np.where(np.isfinite(approx), approx, np.inf)
    cap = U if exhaustive else (refit_cap(U) if max_refits is None
                                else min(U, int(max_refits)))
    refitted = np.zeros(U, dtype=bool)
    refitted[ver.refits.codes] = True
    ld_exact = ver.ld_exact.copy()
    change = None
    score_exact = np.full(approx.shape, np.nan)
    parts, added = [ver.refits], 0
    res = ver.refits
    while True:
        if res.codes.size:
            values = np.asarray(exact_change(res), dtype=np.float64)
            if change is None:
                change = np.full((U, values.shape[1]), np.nan)
            change[res.codes] = values
            ok = res.codes[res.ok]
            score_exact[ok] = np.asarray(magnitude(change[ok])).reshape(ok.size, -1)
        met, threshold, bound = _rule(score_exact, approx, refitted, top, safety)
        if refitted.all() or (met and not exhaustive) or added >= cap:
            break
        if exhaustive:
            new = np.flatnonzero(~refitted)
        else:
            new = _candidates(score_exact, approx, refitted, top, safety)[:cap - added]
        if new.size == 0:        # cannot happen while the rule fails; never loop
            break
        res = refit(np.asarray(new, dtype=int))
        parts.append(res)
        refitted[res.codes] = True
        added += res.codes.size
        ok = res.codes[res.ok]
        if ok.size:
            ld_exact[ok] = 2.0 * (model.objective(res.theta[res.ok]) - ver.objective_at_fit)
    if change is None:
        change = np.zeros((U, 0))
    how = "every unit" if refitted.all() else ("bound" if bounded else "step")
    met = bool(met and (bounded or refitted.all()))
    contender = _contenders(met, threshold, approx, refitted, safety)
    tv = TargetVerification(added, change, score_exact, met, threshold, bound, contender,
                            cap, how, safety)
    refits = _concat([p for p in parts if p.codes.size], ver.refits.theta.shape[1])
    return dataclasses.replace(ver, refits=refits, ld_exact=ld_exact,
                               unverified_top=ver.unverified_top | contender, target=tv)


def _candidates(exact, approx, refitted, top, safety):
    """The units not refitted that could still reach a top, largest first: in some
    ranking, ``safety * approx`` at least the ``top``-th largest current value (exact
    where refitted, estimated elsewhere)."""
    U = refitted.shape[0]
    current = np.where(refitted[:, None], np.where(np.isfinite(exact), exact, -np.inf),
                       approx)
    level = (np.partition(current, U - top, axis=0)[U - top] if U > top
             else np.full(current.shape[1], -np.inf))
    reach = ~refitted & (safety * approx >= level).any(axis=1)
    new = np.flatnonzero(reach)
    return new[np.argsort(-(approx[new] / np.maximum(level, 1e-300)).max(axis=1),
                          kind="stable")]


def _rule(exact, approx, refitted, top, safety):
    """``(met, threshold, bound)`` of the stopping rule, per ranking (a column of
    ``exact`` and ``approx``; a vector is one ranking): ``threshold`` the ``top``-th
    largest finite ``exact`` (NaN if fewer), ``bound`` ``safety`` times the largest
    ``approx`` not ``refitted`` (0 if none); met when every unit is refitted or, in every
    ranking, ``bound < threshold``. A vector in, scalars out."""
    one = np.ndim(exact) == 1
    exact = np.asarray(exact, dtype=np.float64).reshape(exact.shape[0], -1)
    approx = np.asarray(approx, dtype=np.float64).reshape(exact.shape)
    K = exact.shape[1]
    threshold, bound = np.full(K, np.nan), np.zeros(K)
    rest = ~refitted
    for j in range(K):
        finite = np.sort(exact[np.isfinite(exact[:, j]), j])[::-1]
        if finite.size >= top:
            threshold[j] = finite[top - 1]
        if rest.any():
            bound[j] = safety * float(approx[rest, j].max())
    met = bool(not rest.any() or (np.isfinite(threshold).all() and (bound < threshold).all()))
    if one:
        return met, float(threshold[0]), float(bound[0])
    return met, threshold, bound


def _contenders(met, threshold, approx, refitted, safety):
    """(U,) bool: where the rule is not met, the units not refitted whose ``safety *
    approx`` reaches the threshold (0 where there is none) in some ranking: they may
    belong in a top."""
    if met:
        return np.zeros(refitted.shape[0], dtype=bool)
    level = np.where(np.isfinite(threshold), threshold, 0.0)
    approx = np.asarray(approx).reshape(refitted.shape[0], -1)
    return ~refitted & (safety * approx >= level).any(axis=1)


def _predicted(score, must_refit, top, safety):
    """The units not flagged that the stopping rule would still ask for if the exact
    displacements of the top equalled their VIF ones: those with ``safety * LD_g`` at
    least the ``top``-th largest ``LD_g``. The first round refits them (and the flagged):
    on most data the rule is then met at once, with no second round (SUPPORT: 23 refits
    where 20 and then 40 were needed; GBSG2: 7 besides its 15 flagged, 22 in all)."""
    if score.size <= top:
        return score.size
    level = np.partition(score, score.size - top)[score.size - top]
    return int(np.count_nonzero((safety * score >= level) & ~must_refit))


def _concat(parts, d):
    if not parts:
        return Refits(np.zeros(0, dtype=int), np.zeros((0, d)), np.zeros(0, dtype=str))
    return Refits(np.concatenate([p.codes for p in parts]),
                  np.concatenate([p.theta for p in parts]),
                  np.concatenate([p.status for p in parts]))

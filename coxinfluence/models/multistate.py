"""Markov multi-state Cox models, as survival 3.x fits them (issue 47, item 3).

Data in R's counting-process form: one row per interval ``(start, stop]`` of a subject
(``id``), ``state`` the state entered at ``stop`` (0: none, the interval ends censored or
at a change of covariates). Each subject starts in ``initial_state`` (R's ``"(s0)"`` when
not given), or in the ``istate`` of its first row, and is, on each later row, in the state
its previous row entered (R's ``survcheck``). The states are those only started in, then
the states entered (sorted, or a categorical's order), numbered 1, 2, ... as R numbers
them; a transition ``a:b`` is a pair (from, to) seen at least once, in R's order (by
``b``, then ``a``).

Transition ``a:b`` is a Cox model of its own (:func:`~coxinfluence.fit_cox`): the rows at
risk in state ``a`` (delayed entry through ``start``), the event "enters ``b``", Efron's
ties, the subjects as units. The log partial likelihood of the model is the sum of the
transitions' (R's ``coxph(Surv(tstart, tstop, state) ~ x, id = id)`` with ``state`` a
factor whose first level is censoring: its coefficients ``x_a:b``, ``fit$loglik``); the
transitions share no coefficient, so the information is block diagonal. R's default
variance with ``id`` is the robust one, ``fit$var = D'D`` with ``D`` each subject's
dfbeta over every transition (a subject's rows in several transitions correlate); the
model-based one is R's ``fit$naive.var``.

State probabilities of a new patient (``survfit(fit, newdata)$pstate``, its default
``stype = 2``): ``p(t) = p(0) prod_{s <= t} exp(dA(s))``, the matrix exponential of each
event time's hazard matrix, ``dA_ab(s) = exp(x'beta_ab) dLambda_ab(s)`` and ``dA_aa =
-sum_b dA_ab``; every patient starts in the initial state. The baseline jumps are R's
``multihaz``: ``d / S0`` with Breslow's ties and, with Efron's (``ctype = 2``), ``d / (S0 -
(d - 1) / (2 d) * Se / d)`` (``Se`` the events' summed risk: R subtracts the mean event
risk, not the sum Efron's ``survfit.coxph`` hazard uses; measured against R).
``tests/test_multistate_r.py`` checks coefficients,
both variances, ``loglik`` and ``pstate`` against R (``tests/r/multistate_reference.R``:
survival's ``mgus2`` and a simulated illness-death set; ties, delayed entry).

Case weights (``weights=``, R's ``weights``), strata (``strata=``, R's ``+ strata(g)``)
and initial states (``istate=``, R's ``istate``) are R's too: a weight multiplies its row's
terms in each transition's partial likelihood and score residuals (the robust variance),
in the baseline jumps (``dw / (S0 - (d - 1) / (2 d) Se / d)``, ``dw`` the events' summed
weights, ``d`` their count, ``S0`` and ``Se`` weighted: R's ``coxsurv2``) and in ``p0``;
strata give every transition a baseline per stratum (a new patient reads its stratum's);
a subject's first row's ``istate`` is the state it starts in, and a new patient starts from
``p0``, R's ``survfit`` default: the weighted share of the rows at risk at the stratum's
first transition time in each state (the initial state when every subject starts there).
``tests/test_multistate_options_r.py`` checks them against R
(``tests/r/multistate_options_reference.R``).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from coxinfluence.data.followup import followup_notes, warn_beyond_follow_up
from coxinfluence.data.inputs import CoxInputError, encode_strata
from coxinfluence.data.new_patients import strata_from_frame, stratum_codes
from coxinfluence.data.units import resolve_units
from coxinfluence.likelihood.score_residuals import score_residuals_sorted
from coxinfluence.models.base import FitInterface, standard_errors
from coxinfluence.models.cox import fit_cox
from coxinfluence.numerics.rows import block_diagonal, sums_by_label

__all__ = ["MultiStateFit", "fit_multistate", "state_probabilities", "simulate_illness_death"]

#: R's name of the initial state when none is given (``survcheck``'s ``"(s0)"``)
INITIAL = "(s0)"


def _origins(start, stop, state, ids, entered, first=None):
    """(n,) the state each row is in (its position in the states; ``state`` -1 for a
    censored row): a subject's first row is in ``first`` (default 0, the initial state), each
    later row in the state its previous row entered, or its previous row's state after a
    censored row (rows ordered by ``stop`` then ``start`` within subject: R's
    ``survcheck``)."""
    order = np.lexsort((start, stop, ids))
    origin = np.zeros(len(state), dtype=int)
    current, last = 0, None
    for r in order:
        if ids[r] != last:
            current, last = (0 if first is None else int(first[r])), ids[r]
        origin[r] = current
        if state[r] >= 0:
            current = entered[r]
    return origin


def transitions_of(state_codes, origin):
    """The transitions ``(a, b)`` (0-based state codes; ``state_codes`` -1 censored) with
    at least one row, in R's order: by target state, then origin (the columns of
    ``survcheck``'s from x to table)."""
    seen = {(int(a), int(b)) for a, b in zip(origin, state_codes) if b >= 0}
    return sorted(seen, key=lambda ab: (ab[1], ab[0]))


class MultiStateFit(FitInterface):
    """A fitted Markov multi-state Cox model, made by :func:`~coxinfluence.fit_multistate`.

    One Cox model per transition (``fits``, each a :class:`~coxinfluence.CoxFit` of the
    rows at risk in its origin state), the interface every fit shares: ``params`` named
    ``"x_a:b"`` (R's), ``se`` (robust by default, as R), ``cov_params``, ``conf_int``,
    ``summary``, ``loglik``, ``aic``, ``nobs``; :meth:`predict_state_probabilities`.

    Parameters
    ----------
    fits : list of CoxFit
        The transitions' Cox models, in the order of ``transitions``.
    transitions : list of tuple
        ``(a, b)``: the 0-based codes of the origin and target states.
    states : list of str
        The states' names, the initial one first.
    frame : pandas.DataFrame
        The covariates (caller's rows and index).
    ids : numpy.ndarray
        The subject of each row (caller's order).
    state_codes : numpy.ndarray
        The state each row enters (0-based code in ``states``; -1: censored).
    rows : list of numpy.ndarray, optional
        Each transition's rows (positions in ``frame``).
    cmap : array_like of int, shape (K, d), optional
        Each transition's coefficient positions in ``coef`` (R's ``cmap``; default one
        coefficient per transition and covariate).
    weights : numpy.ndarray, optional
        Each row's case weight (default 1).
    strata : numpy.ndarray, optional
        Each row's stratum code (0..C-1; default one stratum).
    strata_labels : tuple, optional
        The strata's labels in code order (None: not stratified).
    strata_names : tuple of str, optional
        The stratum columns' names (read from new patients' frames).
    origin : numpy.ndarray, optional
        The state each row is in (0-based code; R's ``survcheck`` istate).

    Examples
    --------
    >>> from coxinfluence.models.multistate import simulate_illness_death
    >>> fit = ci.fit_multistate(*simulate_illness_death())
    >>> fit.transition_names
    ['1:2', '1:3', '2:3']
    """

    model_name = "Markov multi-state Cox"
    _model_variance = "model-based (inverse information; R's naive.var)"
    has_subjects = True

    def __init__(self, fits, transitions, states, frame, ids, state_codes, rows=None,
                 cmap=None, weights=None, strata=None, strata_labels=None,
                 strata_names=None, origin=None):
        self.rows = rows
        self.weights = np.ones(len(frame)) if weights is None else np.asarray(weights, float)
        self.strata = (np.zeros(len(frame), dtype=np.intp) if strata is None
                       else np.asarray(strata, dtype=np.intp))
        self.strata_labels = None if strata_labels is None else tuple(strata_labels)
        self.strata_names = tuple(strata_names or ())
        self.origin = origin
        self.fits, self.transitions, self.states = list(fits), list(transitions), list(states)
        self.frame, self.ids, self.state_codes = frame, np.asarray(ids), state_codes
        self._covariates = [str(c) for c in frame.columns]
        self.index = frame.index
        self.n = len(frame)
        d = len(self._covariates)
        self.cmap = (np.arange(len(self.transitions) * d).reshape(-1, d) if cmap is None
                     else np.asarray(cmap, dtype=int))
        self.coef = np.concatenate([f.coef for f in self.fits])
        names = {}
        for name, positions in zip(self.transition_names, self.cmap):
            for c, position in zip(self._covariates, positions):
                names.setdefault(int(position), f"{c}_{name}")
        self.columns = [names[k] for k in range(len(self.coef))]
        self.information = block_diagonal([f.information for f in self.fits])
        self.converged = all(f.converged for f in self.fits)

    @property
    def ties(self):
        """The ties of the partial likelihoods ("efron" or "breslow").

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> ci.fit_multistate(*simulate_illness_death()).ties
        'efron'
        """
        return self.fits[0].ties

    @cached_property
    def transition_rows(self):
        """Per transition ``(start, stop, event, X, subject, weight, stratum)``: its rows
        (caller's order), the subject as a position in :attr:`unit_labels`, the stratum
        as a code (0 without strata).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> len(fit.transition_rows) == len(fit.transitions)
        True
        """
        X = self.frame.to_numpy(dtype=np.float64)
        subject = self.unit_labels.get_indexer(self.ids)
        out = []
        for (_, b), rows in zip(self.transitions, self.rows):
            out.append((self.starts[rows], self.stops[rows],
                        (self.state_codes[rows] == b).astype(np.float64), X[rows],
                        subject[rows], self.weights[rows], self.strata[rows]))
        return out

    @property
    def n_strata(self):
        """The number of strata (1 without strata).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> ci.fit_multistate(*simulate_illness_death()).n_strata
        1
        """
        return 1 if self.strata_labels is None else len(self.strata_labels)

    def initial_distribution(self, drop=None):
        """The state distribution every new patient starts from (R's ``survfit``
        ``p0``), per stratum.

        R's default: at the stratum's first transition time ``t0``, the case-weighted
        share of the rows at risk (``start < t0 <= stop``) in each state. With every
        subject starting in the initial state it is that state.

        Parameters
        ----------
        drop : array_like of int, shape (B,), optional
            Per problem a subject code (position in :attr:`unit_labels`) whose rows are
            left out (-1: none).

        Returns
        -------
        numpy.ndarray, shape (B, C, S)
            ``B = 1`` without ``drop``; ``C`` strata, ``S`` states.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> ci.fit_multistate(*simulate_illness_death()).initial_distribution()
        array([[[1., 0., 0.]]])
        """
        S, C = len(self.states), self.n_strata
        drop = np.array([-1]) if drop is None else np.asarray(drop, dtype=np.intp)
        subject = self.unit_labels.get_indexer(self.ids)
        present = subject[None, :] != drop[:, None]                          # (B, n)
        origin = np.zeros(self.n, dtype=int) if self.origin is None else self.origin
        out = np.zeros((drop.size, C, S))
        for c in range(C):
            mine = present & (self.strata == c)[None, :]
            events = mine & (self.state_codes >= 0)[None, :]
            t0 = np.where(events.any(axis=1),
                          np.where(events, self.stops[None, :], np.inf).min(axis=1),
                          np.where(mine, self.stops[None, :], -np.inf).max(axis=1))
            at_zero = (mine & (self.starts[None, :] < t0[:, None])
                       & (self.stops[None, :] >= t0[:, None]))
            w = at_zero * self.weights[None, :]                                # (B, n)
            out[:, c, :] = w @ np.eye(S)[origin]
        total = out.sum(axis=2, keepdims=True)
        return np.divide(out, total, out=np.zeros_like(out), where=total > 0)

    @property
    def covariates(self):
        """The covariates read from ``X`` (each transition has a coefficient of each).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> ci.fit_multistate(*simulate_illness_death()).covariates
        ['x1', 'x2']
        """
        return list(self._covariates)

    @property
    def transition_names(self):
        """R's names of the transitions, ``"a:b"`` with the states numbered from 1.

        Returns
        -------
        list of str
            One per transition, in the order of the coefficients.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> fit.states
        ['(s0)', '1', '2']
        >>> fit.transition_names
        ['1:2', '1:3', '2:3']
        """
        return [f"{a + 1}:{b + 1}" for a, b in self.transitions]

    @property
    def slices(self):
        """The positions of each Cox fit's coefficients in ``coef``: one fit per
        transition, or one stratified fit of all when coefficients are shared.

        Returns
        -------
        list of slice
            One per fit of ``fits``.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> fit.slices[1]
        slice(2, 4, None)
        """
        ends = np.cumsum([len(f.coef) for f in self.fits])
        return [slice(int(e - len(f.coef)), int(e)) for f, e in zip(self.fits, ends)]

    @property
    def ratio_positions(self):
        """Every coefficient is a covariate's, for its transition (``target="hr"``).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> fit.ratio_positions
        [0, 1, 2, 3, 4, 5]
        """
        return list(range(len(self.coef)))

    @cached_property
    def unit_labels(self):
        """The subjects, sorted (the units of deletion).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> len(fit.unit_labels) == fit.n_units
        True
        """
        return pd.Index(np.unique(self.ids))

    @property
    def n_units(self):
        """The number of subjects.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> ci.fit_multistate(*simulate_illness_death()).n_units
        150
        """
        return len(self.unit_labels)

    @property
    def n_events(self):
        """The number of transitions observed (rows entering a state; R's ``nevent``).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> ci.fit_multistate(*simulate_illness_death()).n_events
        132
        """
        return int(np.count_nonzero(self.state_codes >= 0))

    @property
    def loglik(self):
        """The log partial likelihood, the transitions' summed (R's ``fit$loglik[2]``).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> round(ci.fit_multistate(*simulate_illness_death()).loglik, 4)
        -498.6431
        """
        return float(sum(f.loglik for f in self.fits))

    @property
    def var(self):
        """The model-based covariance, the inverse information (R's ``fit$naive.var``).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> ci.fit_multistate(*simulate_illness_death()).var.shape
        (6, 6)
        """
        return block_diagonal([f.var for f in self.fits])

    @property
    def naive_se(self):
        """The model-based standard errors (R's ``se(coef)``).

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> ci.fit_multistate(*simulate_illness_death()).naive_se.shape
        (6,)
        """
        return standard_errors(np.diag(self.var))

    @property
    def se(self):
        """The standard errors of the default (robust) variance, R's ``robust se``.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> bool((fit.se > 0).all())
        True
        """
        return self._se(None)

    @property
    def robust_default(self):
        """True: R's multi-state ``coxph`` with ``id`` reports the robust variance.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> ci.fit_multistate(*simulate_illness_death()).robust_default
        True
        """
        return True

    def _robust_reason(self):
        return "by subject, as R's multi-state coxph with id"

    def dfbeta(self):
        """Each subject's dfbeta over every transition, ``D`` of the robust variance.

        ``D[g] = I^{-1} U_g``, ``U_g`` subject g's score residuals summed over its rows
        (zero in a transition it never is at risk for): about ``theta_hat -
        theta_hat_{-g}`` (R's ``resid(fit, "dfbeta", collapse = id)`` of each transition).

        Returns
        -------
        pandas.DataFrame
            One row per subject (sorted), one column per coefficient.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> D = fit.dfbeta().to_numpy()
        >>> bool(np.allclose(D.T @ D, fit.cov_params(robust=True)))
        True
        """
        D = np.zeros((self.n_units, len(self.coef)))
        for fit, sl in zip(self.fits, self.slices):
            units = resolve_units(fit)
            scores = fit.data.weights[:, None] * score_residuals_sorted(fit.risk_sets, fit.coef)
            rows = self.unit_labels.get_indexer(units.labels)
            D[rows, sl] = units.collapse(scores) @ fit.var
        return pd.DataFrame(D, index=self.unit_labels, columns=self.columns)

    def robust_covariance(self, groups=None):
        """The robust covariance ``D'D`` by subject (R's ``fit$var``).

        Parameters
        ----------
        groups : None
            Must be None: the units are the subjects.

        Returns
        -------
        numpy.ndarray, shape (d, d)

        Raises
        ------
        ValueError
            If ``groups`` is given.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> fit.robust_covariance().shape
        (6, 6)
        """
        if groups is not None:
            raise ValueError("a multi-state fit's units are its subjects: groups= is not "
                             "supported")
        D = self.dfbeta().to_numpy()
        return D.T @ D

    def objective(self, thetas):
        """The negative log partial likelihood at each row of ``thetas`` (m, d).

        Parameters
        ----------
        thetas : array_like, shape (m, d)

        Returns
        -------
        numpy.ndarray, shape (m,)

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> bool(np.isclose(fit.objective(fit.coef[None, :])[0], -fit.loglik))
        True
        """
        thetas = np.atleast_2d(np.asarray(thetas, dtype=np.float64))
        return sum(f.objective(thetas[:, sl]) for f, sl in zip(self.fits, self.slices))

    def _summary_head(self, se, robust):
        head = {"coef": self.coef, "exp(coef)": np.exp(self.coef),
                "se(coef)": self.naive_se if robust else se}
        if robust:
            head["robust se"] = se
        return head

    def _html_head(self):
        import html
        states = ", ".join(f"{k + 1} = {s}" for k, s in enumerate(self.states))
        return (f"<p><b>Markov multi-state Cox model</b>: n = {self.n}, subjects = "
                f"{self.n_units}, events = {self.n_events}, states {html.escape(states)}, "
                f"log-likelihood = {self.loglik:.6g}</p>")

    def new_patients(self, X_new):
        """``(X, labels)``: the new patients' covariates in the fit's order.

        Parameters
        ----------
        X_new : pandas.DataFrame or array_like
            A DataFrame with the covariate columns, or an array in their order.

        Returns
        -------
        tuple
            ``(X (P, d) float64, labels (P,) pandas.Index)``.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> fit.new_patients([[0.0, 1.0]])[0]
        array([[0., 1.]])
        """
        if isinstance(X_new, pd.DataFrame):
            return X_new[self.covariates].to_numpy(dtype=np.float64), X_new.index
        X = np.atleast_2d(np.asarray(X_new, dtype=np.float64))
        if X.shape[1] != len(self.covariates):
            raise CoxInputError(f"X_new needs {len(self.covariates)} columns "
                                f"({self.covariates}); got {X.shape[1]}")
        return X, pd.RangeIndex(len(X))

    def new_strata(self, X_new, strata=None):
        """The new patients' stratum codes: ``strata`` (one label for all, or one per
        patient), else read from ``X_new``'s stratum column(s); zeros without strata.

        Parameters
        ----------
        X_new : pandas.DataFrame or array_like
            The new patients.
        strata : optional
            Their stratum labels (as in the training data).

        Returns
        -------
        numpy.ndarray, shape (P,)

        Raises
        ------
        coxinfluence.InputError
            A stratified fit without the patients' strata, or an unknown label.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> X, start, stop, state, id = simulate_illness_death()
        >>> g = pd.Series(np.where(id % 2 == 0, "even", "odd"), name="g")
        >>> fit = ci.fit_multistate(X, start, stop, state, id, strata=g)
        >>> fit.strata_labels
        ('even', 'odd')
        >>> fit.new_strata(pd.DataFrame({"x1": [0.0, 1.0], "x2": [1.0, 0.0],
        ...                              "g": ["odd", "even"]}))
        array([1, 0])
        """
        m = len(self.new_patients(X_new)[1])
        given = strata_from_frame(X_new, strata, self.strata_names)
        return stratum_codes(self.strata_labels, given, m)

    def predict_state_probabilities(self, X_new, times, strata=None):
        """The probability of being in each state at ``times`` (Aalen-Johansen).

        R's ``survfit(fit, newdata)$pstate`` read at ``times`` (``summary(..., times,
        extend = TRUE)``): the patient starts from the data's initial distribution in its
        stratum (R's ``p0``; the initial state when every subject starts there), the
        transitions' hazards are their Cox models' (module docstring), with the patient's
        stratum's baselines.

        Parameters
        ----------
        X_new : pandas.DataFrame or array_like
            The new patients (covariate columns by name, or an array in their order).
        times : float or array_like
            Times (non-negative).
        strata : optional
            A stratified fit: the patients' strata (one label for all, or one per
            patient); default read from ``X_new``'s stratum column(s). R's ``survfit``
            gives every stratum's curve for each patient: pick one here.

        Returns
        -------
        pandas.DataFrame
            Rows ``(patient, time)``, columns the states; each row sums to 1.

        Warns
        -----
        coxinfluence.TargetBeyondFollowUpWarning
            A time past the data's last transition (of the patient's stratum): the
            probabilities are flat after it.

        Examples
        --------
        >>> from coxinfluence.models.multistate import simulate_illness_death
        >>> fit = ci.fit_multistate(*simulate_illness_death())
        >>> p = fit.predict_state_probabilities([[0.0, 1.0]], [5, 10])
        >>> p.round(3)
                       (s0)      1      2
        patient time
        0       5.0   0.533  0.150  0.316
                10.0  0.341  0.218  0.441
        """
        X, labels = self.new_patients(X_new)
        codes = self.new_strata(X_new, strata)
        times = np.atleast_1d(np.asarray(times, dtype=np.float64))
        if not (np.isfinite(times).all() and (times >= 0).all()):
            raise ValueError("times must be finite and non-negative")
        warn_beyond_follow_up(state_probability_notes(self, times, labels, codes))
        p = state_probabilities(self, self.coef[None, :], X, times, codes=codes)[0]
        index = pd.MultiIndex.from_product([labels, times], names=["patient", "time"])
        return pd.DataFrame(p.reshape(-1, len(self.states)), index=index,
                            columns=list(self.states))

    def __repr__(self):
        return (f"MultiStateFit(states={self.states}, transitions={self.transition_names}, "
                f"n={self.n}, subjects={self.n_units})")


def state_probability_notes(fit, times, patients, codes=None):
    """The follow-up rule (:class:`~coxinfluence.TargetBeyondFollowUpWarning`) for the
    state probabilities: past the last transition of the data (of the patient's stratum)
    no hazard jumps, so ``p(t|x)`` is the last value carried forward. One sentence per
    stratum, or none."""
    last = np.full(fit.n_strata, -np.inf)
    for rows in fit.transition_rows:
        ev = rows[2] > 0
        np.maximum.at(last, rows[6][ev], rows[1][ev])
    codes = np.zeros(len(patients), dtype=np.intp) if codes is None else codes
    return followup_notes(times, last, np.asarray(codes, dtype=np.intp),
                          [str(p) for p in patients], quantity="P(state,t|x)",
                          events="transition",
                          stratum_labels=None if fit.strata_labels is None
                          else list(fit.strata_labels),
                          consequence="no hazard jumps after it, so the value there is "
                                      "the last one carried forward, not an estimate "
                                      "from transitions")


def event_grid(fit, horizon):
    """The distinct event times of every transition up to ``horizon``."""
    times = [rows[1][rows[2] > 0] for rows in fit.transition_rows]
    grid = np.unique(np.concatenate(times))
    return grid[grid <= horizon]


def hazard_jumps(fit, k, theta, grid, drop=None):
    """(B, C, J) transition ``k``'s baseline hazard jumps at ``grid`` in each stratum (at
    coefficients ``theta`` (B, d_k), on the scale shifted by ``shift`` (B,)), and
    ``shift``; ``drop`` (B,) a subject code to leave out per problem (-1: none).

    R's ``survfit.coxphms`` (its ``multihaz`` with ``coxsurv2``'s counts): ``dw / (S0 -
    (d - 1) / (2 d) Se / d)`` with Efron's ties (``ctype = 2``), ``dw / S0`` with
    Breslow's; ``d`` the number of events at the time, ``dw`` their summed case weights,
    ``S0`` the weighted risk of the rows at risk, ``Se / d`` (``Se`` the events'
    weighted risk, divided by the count) as R's ``meanwt``.
    """
    start, stop, event, X, subject, weight, stratum = fit.transition_rows[k]
    lp = np.atleast_2d(theta) @ X.T                                      # (B, n_k)
    shift = lp.max(axis=1)
    r = np.exp(lp - shift[:, None])
    presence = np.ones_like(r)
    if drop is not None:
        presence = (subject[None, :] != np.asarray(drop)[:, None]).astype(np.float64)
    wr = r * presence * weight[None, :]
    # row i is at risk at grid[j] for first <= j < last (start < grid[j] <= stop), and an
    # event row has its event at grid[at] (stop == grid[at])
    first = np.searchsorted(grid, start, side="right")
    last = np.searchsorted(grid, stop, side="right")
    at = np.searchsorted(grid, stop, side="left")
    is_event = (event > 0) & (at < grid.size)
    is_event[is_event] = grid[at[is_event]] == stop[is_event]
    out = np.zeros((wr.shape[0], fit.n_strata, grid.size))
    for c in range(fit.n_strata):
        mine = stratum == c
        S0 = _at_risk_sums(wr[:, mine], first[mine], last[mine], grid.size)
        ev = np.flatnonzero(mine & is_event)
        Se = _event_sums(wr[:, ev], at[ev], grid.size)
        d = _event_sums(presence[:, ev], at[ev], grid.size)
        dw = _event_sums(presence[:, ev] * weight[ev][None, :], at[ev], grid.size)
        den = S0 - (d - 1.0) / (2.0 * np.maximum(d, 1.0) ** 2) * Se \
            if fit.ties == "efron" else S0
        out[:, c] = np.where(d > 0, dw / np.where(d > 0, den, 1.0), 0.0)
    return out, shift


def _at_risk_sums(values, first, last, J):
    """(B, J): ``sum_i values[:, i]`` over the rows at risk at each grid point j (``first_i
    <= j < last_i``), by suffix sums (rows whose interval ends after j, less those that
    start after it): O((n + J) B), no (rows x grid) indicator; suffix sums keep the small
    late risk sets free of the early ones' rounding."""
    out = np.zeros((values.shape[0], J))
    for bound, sign in ((last, 1.0), (first, -1.0)):
        order = np.argsort(bound, kind="stable")
        suffix = np.cumsum(values[:, order[::-1]], axis=1)[:, ::-1]        # rows k.. of order
        suffix = np.concatenate([suffix, np.zeros((values.shape[0], 1))], axis=1)
        after = np.searchsorted(bound[order], np.arange(J), side="right")   # bound > j from
        out += sign * suffix[:, after]
    return out


def _event_sums(values, at, J):
    """(B, J): ``sum_i values[:, i]`` over the event rows at each grid point (``at_i =
    j``), each group summed on its own."""
    out = np.zeros((values.shape[0], J))
    points, sums = sums_by_label(values, at)
    out[:, points] = sums
    return out


def expm_batch(H):
    """The matrix exponentials of a stack of small matrices (..., S, S), vectorised:
    scaling by ``2^-s`` to a norm below 1/4, Taylor's series to degree 18 (remainder below
    ``4^-19 / 19!``), ``s`` squarings (scipy's ``expm`` loops over a stack in Python)."""
    norm = np.abs(H).sum(axis=-1).max() if H.size else 0.0
    s = int(max(0, np.ceil(np.log2(norm / 0.25)))) if norm > 0 else 0
    A = H / 2.0 ** s
    eye = np.broadcast_to(np.eye(H.shape[-1]), H.shape)
    out, term = eye.copy(), eye.copy()
    for k in range(1, 19):
        term = term @ A / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def state_probabilities(fit, theta, X, times, drop=None, codes=None):
    """(B, P, T, S) state probabilities at coefficients ``theta`` (B, d).

    R's ``survfit.coxphms`` (``stype = 2``): ``p(t) = p0 prod_{s <= t} exp(dA(s))``, the
    matrix exponential of each event time's hazard matrix (the patient's stratum's
    baselines), ``p0`` the data's initial distribution in the stratum
    (:meth:`MultiStateFit.initial_distribution`: the initial state when every subject
    starts there). ``drop`` (B,): per problem a subject code (position in
    ``fit.unit_labels``) whose rows are left out of every baseline and of ``p0`` (-1:
    none); ``codes`` (P,) the patients' strata (default 0).
    """
    theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    times = np.asarray(times, dtype=np.float64)
    B, P, S = theta.shape[0], X.shape[0], len(fit.states)
    codes = np.zeros(P, dtype=np.intp) if codes is None else np.asarray(codes, np.intp)
    grid = event_grid(fit, times.max() if times.size else 0.0)
    rates = []
    for k, positions in enumerate(fit.cmap):
        inc, shift = hazard_jumps(fit, k, theta[:, positions], grid, drop)    # (B, C, J)
        risk = np.exp(theta[:, positions] @ X.T - shift[:, None])            # (B, P)
        rates.append(risk[:, :, None] * inc[:, codes, :])                    # (B, P, J)
    p0 = fit.initial_distribution(drop)                                      # (B', C, S)
    p = np.broadcast_to(p0[:, codes, :], (B, P, S)).copy()
    after = np.searchsorted(grid, times, side="right") - 1
    out = np.empty((B, P, times.size, S))
    for t in np.flatnonzero(after < 0):
        out[:, :, t] = p
    for j in range(grid.size):
        H = np.zeros((B, P, S, S))
        for (a, b), rate in zip(fit.transitions, rates):
            H[:, :, a, b] += rate[:, :, j]
            H[:, :, a, a] -= rate[:, :, j]
        p = np.einsum("bps,bpst->bpt", p, expm_batch(H))
        for t in np.flatnonzero(after == j):
            out[:, :, t] = p
    return out


def fit_multistate(X, start, stop, state, id, initial_state=None, ties="efron",
                   tol=1e-10, max_iter=50, shared=None, weights=None, strata=None,
                   istate=None) -> MultiStateFit:
    """Fit a Markov multi-state Cox model, one Cox model per transition (R's survival).

    R's ``coxph(Surv(start, stop, state) ~ X, id = id)`` with ``state`` a factor whose
    first level is censoring (the module ``coxinfluence.models.multistate`` has the
    model): the transitions are inferred as R's ``survcheck`` shows them, and each is
    :func:`~coxinfluence.fit_cox` on the rows at risk in its origin state, the event
    "enters the target state", delayed entry through ``start``.

    Parameters
    ----------
    X : pandas.DataFrame or array_like, shape (n, d)
        Numeric covariates (the same for every transition); a DataFrame's columns name
        them, its index the rows.
    start, stop : array_like, shape (n,)
        Each row's interval ``(start, stop]``.
    state : array_like or pandas.Categorical, shape (n,)
        The state entered at ``stop``: 0 for none (censored), other values the states'
        labels, numbered in sorted order; or, as R's factor, a categorical whose first
        category is censoring and whose other categories number the states in order.
    id : array_like, shape (n,)
        The subject of each row (its rows are deleted together by the audit).
    initial_state : str, optional
        The name of the state every subject starts in (default R's ``"(s0)"``); not with
        ``istate``.
    ties : {"efron", "breslow"}, default "efron"
        Ties of each transition's partial likelihood.
    tol : float, default 1e-10
        Newton-Raphson's gradient tolerance (each transition).
    max_iter : int, default 50
        Newton-Raphson's iteration limit (each transition).
    shared : dict, optional
        Coefficients shared across transitions: ``{covariate: ["1:2", "1:3"]}`` (R's
        ``coxph(list(Surv(...) ~ x, 1:2 + 1:3 ~ x / common))``); the model is then one
        :func:`~coxinfluence.fit_cox` of every transition's rows, stratified by transition
        (R's expansion), a shared coefficient named after its first transition.
    weights : array_like, shape (n,), optional
        Positive case weights (R's ``weights=``), per row; usually one per subject, but
        R also takes weights that vary over a subject's rows, and so do we. They weight
        each transition's partial likelihood, the robust variance's score residuals (as
        R's), the baseline hazards and the initial distribution of the state
        probabilities (R's ``survfit``). A weight that is not positive is refused (R:
        "Invalid weights, must be >0"); to remove a subject, drop its rows.
    strata : array_like or pandas.DataFrame, shape (n,), optional
        Stratum labels (R's ``+ strata(g)`` in the multi-state formula): every
        transition's baseline hazard and risk sets by stratum, the coefficients common to
        the strata. A named Series' name (a DataFrame's columns) is the column new
        patients' strata are read from (``predict_state_probabilities``).
    istate : array_like, shape (n,), optional
        Each row's state at its start (R's ``istate=``): a subject's first row sets the
        state it starts in (subjects may start in different states); a later row must
        name the state its previous row entered (R's ``survcheck`` flags others as
        "teleport"/"jump", where coxph and survfit read them differently: refused).
        States named only here come first, sorted (a categorical's order), then the
        entered states (R's ``fit$states``). A new patient then starts from the data's
        state distribution at the first transition time (R's ``survfit`` ``p0``).

    Returns
    -------
    MultiStateFit

    Raises
    ------
    coxinfluence.InputError
        If the rows' lengths differ, no transition is observed, a weight is not positive,
        both ``istate`` and ``initial_state`` are given, or a later row's ``istate`` is
        not the state its subject's previous row entered.

    See Also
    --------
    coxinfluence.fit_cox : Each transition's model.

    Examples
    --------
    A simulated illness-death set (healthy -> ill -> dead, healthy -> dead):

    >>> from coxinfluence.models.multistate import simulate_illness_death
    >>> X, start, stop, state, id = simulate_illness_death()
    >>> fit = ci.fit_multistate(X, start, stop, state, id)
    >>> fit.params.round(4)
    covariate
    x1_1:2    0.7318
    x2_1:2    0.0408
    x1_1:3   -0.0577
    x2_1:3    0.8990
    x1_2:3    0.3531
    x2_2:3   -0.2135
    Name: coef, dtype: float64
    >>> fit.summary()[["coef", "robust se"]].round(4).head(2)
              coef  robust se
    x1_1:2  0.7318     0.1231
    x2_1:2  0.0408     0.2630

    ``x1``'s coefficient shared by the transitions out of the initial state (R's ``1:2 +
    1:3 ~ x1 / common``):

    >>> shared = ci.fit_multistate(X, start, stop, state, id, shared={"x1": ["1:2", "1:3"]})
    >>> shared.columns
    ['x1_1:2', 'x2_1:2', 'x2_1:3', 'x1_2:3', 'x2_2:3']
    """
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(
        np.asarray(X, dtype=np.float64)).rename(columns=lambda c: f"x{c + 1}")
    n = len(frame)
    start = np.asarray(start, dtype=np.float64)
    stop = np.asarray(stop, dtype=np.float64)
    ids = np.asarray(id)
    raw = np.asarray(state)
    if not all(len(a) == n for a in (start, stop, raw, ids)):
        raise CoxInputError("X, start, stop, state and id must have one entry per row")
    w = _case_weights(weights, n, frame.index)
    strata_codes, strata_labels, strata_names = encode_strata(strata, n, frame.index)
    if (isinstance(state, (pd.Series, pd.Categorical))                   # R's factor
            and isinstance(state.dtype, pd.CategoricalDtype)):
        cat = pd.Categorical(state)
        censored = np.asarray(cat.codes) <= 0
        labels = [c for c in cat.categories[1:] if c in set(raw[~censored].tolist())]
    else:
        censored = np.array([v == 0 or (isinstance(v, str) and v == "0") for v in raw])
        labels = sorted(set(raw[~censored].tolist()))
    names = [str(v) for v in labels]
    if istate is None:
        initial = INITIAL if initial_state is None else str(initial_state)
        states = [initial] + [s for s in names if s != initial]
    else:
        if initial_state is not None:
            raise CoxInputError("give istate= (each row's state) or initial_state= (one "
                                "initial state for every subject), not both")
        given = _istate_labels(istate, n)
        states = [s for s in _istate_levels(istate, given) if s not in names] + names
    code = {lab: states.index(str(lab)) for lab in labels}
    state_codes = np.array([-1 if c else code[v] for v, c in zip(raw.tolist(), censored)])
    first = None if istate is None else np.array([states.index(g) for g in given])
    origin = _origins(start, stop, state_codes, ids, state_codes, first)
    if first is not None and (first != origin).any():
        bad = np.flatnonzero(first != origin)
        raise CoxInputError(
            f"istate disagrees with the state the subject's previous row entered in "
            f"{bad.size} row(s) (first: row {frame.index[bad[0]]!r} of subject "
            f"{ids[bad[0]]!r}, istate {given[bad[0]]!r}, previous row entered "
            f"{states[origin[bad[0]]]!r}): only a subject's first row sets its state "
            f"(R's survcheck flags such rows as 'teleport' or 'jump'; coxph reads the "
            f"previous row's state, survfit's p0 the istate)")
    transitions = transitions_of(state_codes, origin)
    if not transitions:
        raise CoxInputError("no transition is observed (every state is 0)")
    all_rows = [np.flatnonzero(origin == a) for a, _ in transitions]
    names = [f"{a + 1}:{b + 1}" for a, b in transitions]
    cmap = _coefficient_map([str(c) for c in frame.columns], names, shared)
    events = [(state_codes[rows] == b).astype(np.float64)
              for (_, b), rows in zip(transitions, all_rows)]
    stratified = strata is not None
    if shared:
        fits = [_stacked_fit(frame, start, stop, ids, all_rows, events, cmap, ties, tol,
                             max_iter, None if weights is None else w,
                             strata_codes if stratified else None)]
    else:
        fits = [fit_cox(frame.iloc[rows], stop[rows], event, start=start[rows],
                        id=ids[rows], ties=ties, tol=tol, max_iter=max_iter,
                        weights=None if weights is None else w[rows],
                        strata=strata_codes[rows] if stratified else None)
                for rows, event in zip(all_rows, events)]
    out = MultiStateFit(fits, transitions, states, frame, ids, state_codes, all_rows, cmap,
                        weights=w, strata=strata_codes,
                        strata_labels=strata_labels if stratified else None,
                        strata_names=strata_names if stratified else None, origin=origin)
    out.starts, out.stops = start, stop
    return out


def _case_weights(weights, n, index):
    """(n,) positive finite case weights (ones when None); R's coxph refuses the others."""
    if weights is None:
        return np.ones(n)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.size != n:
        raise CoxInputError(f"weights has {w.size} entries for {n} rows")
    bad = ~np.isfinite(w) | (w <= 0)
    if bad.any():
        raise CoxInputError(f"weights must be positive and finite (R's coxph: 'Invalid "
                            f"weights, must be >0'); not in {int(bad.sum())} row(s), first "
                            f"{index[np.flatnonzero(bad)[0]]!r}. To remove a subject, drop "
                            f"its rows")
    return w


def _istate_labels(istate, n):
    """Each row's ``istate`` as a state name (str)."""
    values = np.asarray(istate, dtype=object).reshape(-1)
    if values.size != n:
        raise CoxInputError(f"istate has {values.size} entries for {n} rows")
    if pd.isna(pd.Series(values)).any():
        raise CoxInputError("istate has missing values")
    return [str(v) for v in values.tolist()]


def _istate_levels(istate, given):
    """The states ``istate`` names in R's order: a categorical's categories that occur
    (``istate[, drop = TRUE]``), else the sorted names (``as.factor``)."""
    if (isinstance(istate, (pd.Series, pd.Categorical, pd.Index))
            and isinstance(istate.dtype, pd.CategoricalDtype)):
        seen = set(given)
        return [str(c) for c in pd.Categorical(istate).categories if str(c) in seen]
    return sorted(set(given))


def _coefficient_map(covariates, names, shared):
    """(K, d) each transition's coefficient positions, as R's ``cmap``: new positions in
    the order of the transitions, then the covariates; a shared one takes its first
    transition's."""
    shared = {} if shared is None else dict(shared)
    unknown = [c for c in shared if c not in covariates]
    unknown += [t for group in shared.values() for t in group if t not in names]
    if unknown:
        raise CoxInputError(f"shared= names unknown covariates or transitions: {unknown} "
                            f"(covariates {covariates}, transitions {names})")
    cmap = np.full((len(names), len(covariates)), -1)
    taken = {}
    for k, name in enumerate(names):
        for j, c in enumerate(covariates):
            key = (c, "shared") if name in shared.get(c, ()) else (c, name)
            cmap[k, j] = taken.setdefault(key, len(taken))
    return cmap


def _stacked_fit(frame, start, stop, ids, all_rows, events, cmap, ties, tol, max_iter,
                 weights, strata=None):
    """One Cox fit of every transition's rows, stratified by transition (and by
    ``strata`` within it), each row's covariates in its transition's columns (R's
    expansion of a multi-state model)."""
    X = frame.to_numpy(dtype=np.float64)
    rows = np.concatenate(all_rows)
    D = np.zeros((rows.size, int(cmap.max()) + 1))
    at = 0
    for r, positions in zip(all_rows, cmap):
        D[at:at + r.size, positions] = X[r]
        at += r.size
    layer = np.repeat(np.arange(len(all_rows)), [r.size for r in all_rows])
    if strata is not None:
        layer = layer * (int(strata.max()) + 1) + strata[rows]
    return fit_cox(pd.DataFrame(D), stop[rows], np.concatenate(events), start=start[rows],
                   id=ids[rows], strata=layer, ties=ties, tol=tol, max_iter=max_iter,
                   weights=None if weights is None else weights[rows])


def simulate_illness_death(n_subjects=150, seed=1):
    """A simulated illness-death data set in counting-process form.

    Healthy (the initial state) -> ill (state 1) -> dead (state 2), and healthy -> dead;
    subjects enter at integer times 0..4 (delayed entry), times are integers (ties),
    covariates ``x1`` (normal) and ``x2`` (binary); hazards ``0.06 exp(0.5 x1)`` (1:2),
    ``0.03 exp(0.4 x2)`` (1:3), ``0.08 exp(0.3 x1 - 0.5 x2)`` (2:3); censoring 5..30
    after entry.

    Parameters
    ----------
    n_subjects : int, default 150
        The number of subjects.
    seed : int, default 1
        The seed of ``numpy.random.default_rng``.

    Returns
    -------
    tuple
        ``(X, start, stop, state, id)``, the arguments of :func:`fit_multistate`: ``X`` a
        DataFrame (columns ``x1``, ``x2``), ``state`` 0 (censored), 1 (ill) or 2 (dead).

    Examples
    --------
    >>> from coxinfluence.models.multistate import simulate_illness_death
    >>> X, start, stop, state, id = simulate_illness_death(n_subjects=5)
    >>> len(X) == len(state) == len(id)
    True
    """
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_subjects):
        x1, x2 = round(float(rng.normal()), 3), float(rng.uniform() < 0.4)
        entry = int(rng.integers(0, 5))
        t12 = entry + np.ceil(rng.exponential(1 / (0.06 * np.exp(0.5 * x1))))
        t13 = entry + np.ceil(rng.exponential(1 / (0.03 * np.exp(0.4 * x2))))
        cens = entry + int(rng.integers(5, 31))
        if t12 <= t13 and t12 < cens:
            t23 = t12 + np.ceil(rng.exponential(1 / (0.08 * np.exp(0.3 * x1 - 0.5 * x2))))
            rows.append((i, entry, t12, 1, x1, x2))
            rows.append((i, t12, min(t23, cens), 2 if t23 <= cens else 0, x1, x2))
        elif t13 < cens:
            rows.append((i, entry, t13, 2, x1, x2))
        else:
            rows.append((i, entry, cens, 0, x1, x2))
    df = pd.DataFrame(rows, columns=["id", "start", "stop", "state", "x1", "x2"])
    return (df[["x1", "x2"]], df["start"].to_numpy(float), df["stop"].to_numpy(float),
            df["state"].to_numpy(int), df["id"].to_numpy())

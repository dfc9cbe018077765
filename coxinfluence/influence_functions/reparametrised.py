"""A model behind the seam in another parametrisation: ``theta = A phi`` with ``A`` an
invertible ``d x d`` matrix (a signed permutation for lifelines' AFT fitters: the
parameters of R's ``survreg`` renamed, reordered, and ``log(sigma)`` negated where
lifelines' ancillary parameter is ``-log(sigma)``; ``integrations/lifelines_aft.py``).

The audit's quantities are those of the wrapped seam (parameters ``phi``, loss ``L``) read
in ``theta``. With ``B = A^{-1}``, the loss in ``theta`` is ``L~(theta) = L(B theta)``, so
(rows of ``(m, d)`` arrays are parameter vectors, hence the transposes):

    coef           theta_hat = A phi_hat
    change, refit  theta_{-g} - theta_hat = A (phi_{-g} - phi_hat)   (rows: D @ A')
    objective      L~(theta) = L(B theta)                             (rows: thetas @ B')
    information    H~ = B' H B                                        (chain rule, twice)
    covariance     A V A'                                             (model-based or robust)
    unit_scores    I~ IF~ / n = B' (I IF / n)                         (rows: S @ B; a score is
                                                                       a gradient: covector)
    unstable       the wrapped rule at the change in phi, B delta     (rows: delta @ B')

Invariant, hence delegated: the units, ``undefined``, ``unit_frame``, the flags (and
their descriptions), the ratio's name, the report's notes, the
likelihood displacement (``D' I D`` and the objective at the refits), LMAX (``S I^{-1}
S'`` is unchanged) and the report's words about the model (``report_header``, with a note
on the parametrisation). The coefficient table is the Wald table of ``theta``
(:func:`coxinfluence.influence_functions.seam.model_summary`'s default): coef, se(coef),
z, p, as lifelines' summary.

Targets: ``coef`` is taken of ``theta`` itself; the wrapped seam's other targets
(:attr:`Reparametrised.target_names`) are defined on its fit in ``phi`` and are read in
``theta`` by :class:`TargetIn` (``g~(theta) = g(B theta)``, ``J~ = J B``); targets named in
``own_targets`` are defined on the wrapper's fit (:class:`ReparametrisedFit`) directly.
``influence()`` applies :meth:`Reparametrised.adapt_target` (an optional seam member).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from coxinfluence.influence_functions.engine_refits import Refits
from coxinfluence.influence_functions.seam import FitSeam
from coxinfluence.models.base import FitProtocol

__all__ = ["Reparametrised", "ReparametrisedFit", "TargetIn", "signed_permutation",
           "map_rows"]

#: members of the wrapped seam that do not depend on the parametrisation, read through
#: (the base class's defaults would hide the wrapped seam's)
_INVARIANT = ("groups", "units", "unit_name", "extra_flags", "refit_every_flagged",
              "n_units", "unit_of", "flag_descriptions", "ratio_name", "report_notes",
              "unit_labels", "units_are_rows", "undefined", "unit_frame")


def signed_permutation(source, signs) -> np.ndarray:
    """``A`` (d, d) with ``theta_k = signs[k] * phi[source[k]]``: row ``k`` has
    ``signs[k]`` (+1 or -1) in column ``source[k]``; ``source`` must be a permutation."""
    source = np.asarray(source, dtype=int)
    signs = np.asarray(signs, dtype=np.float64)
    d = source.size
    if sorted(source.tolist()) != list(range(d)) or signs.shape != (d,) \
            or not np.all(np.abs(signs) == 1):
        raise ValueError(f"not a signed permutation: source {source.tolist()}, signs "
                         f"{signs.tolist()}")
    A = np.zeros((d, d))
    A[np.arange(d), source] = signs
    return A


def map_rows(rows, M) -> np.ndarray:
    """``rows @ M'`` (each row a parameter vector mapped by ``M``), with NaN only in the
    entries that depend on a NaN (or infinite) entry (``0 * NaN`` would spread a refit's
    one missing coefficient over its whole row): exact for a signed permutation (products
    by 0 and +-1, sums with exact zeros)."""
    rows = np.asarray(rows, dtype=np.float64)
    missing = ~np.isfinite(rows)
    out = np.where(missing, 0.0, rows) @ M.T
    if missing.any():
        out[(missing.astype(np.float64) @ (M.T != 0)) > 0] = np.nan
    return out


class ReparametrisedFit(FitProtocol):
    """What the audit reads of a fit in ``theta = A phi`` (``InfluenceResult.fit``;
    targets named in ``own_targets``): ``coef``, ``columns``, ``information``, ``var``,
    ``se``, ``n``, ``index``, ``model_name``, ``converged``; ``base`` the wrapped fit (in
    ``phi``), ``A`` and ``B = A^{-1}``; ``source_model`` the library's fitted model whose
    parameters ``theta`` are (a lifelines fitter; None when there is none)."""

    def __init__(self, base, A, columns, *, source_model=None):
        A = np.asarray(A, dtype=np.float64)
        d = np.asarray(base.coef).size
        if A.shape != (d, d):
            raise ValueError(f"A must be {d} x {d} (the fit's parameters); got {A.shape}")
        if len(columns) != d:
            raise ValueError(f"{len(columns)} names for {d} parameters")
        self.base, self.A = base, A
        self.B = _inverse(A)
        self.columns = columns
        self.coef = map_rows(np.asarray(base.coef, dtype=np.float64)[None, :], A)[0]
        self.source_model = source_model

    # the wrapped fit's, whatever the parametrisation
    n = property(lambda self: self.base.n)
    index = property(lambda self: self.base.index)
    model_name = property(lambda self: self.base.model_name)
    converged = property(lambda self: bool(self.base.converged))

    @property
    def information(self):
        """``B' H B``: the Hessian of ``L(B theta)``."""
        return self.B.T @ np.asarray(self.base.information, dtype=np.float64) @ self.B

    @property
    def var(self):
        """``A V A'`` (``V`` the wrapped fit's ``var``)."""
        return self.A @ np.asarray(self.base.var, dtype=np.float64) @ self.A.T

    @property
    def se(self):
        return np.sqrt(np.diag(self.var))

    @property
    def params(self) -> pd.Series:
        return pd.Series(self.coef, index=self.columns)


def _inverse(A):
    """``A^{-1}``: ``A'`` for a signed permutation (exactly), else by LU."""
    if np.all(np.isin(A, (-1.0, 0.0, 1.0))) and np.array_equal(A @ A.T, np.eye(A.shape[0])):
        return A.T.copy()
    return np.linalg.inv(A)


class TargetIn:
    """A target ``g`` of the wrapped fit (parameters ``phi``) read in ``theta = A phi``:
    ``g~(theta) = g(B theta)``, ``J~ = J_g B``; its columns, data effect and baseline
    variance are ``g``'s (module docstring). Other attributes (``name``, ``times``,
    ``X_new``, ...) are ``g``'s."""

    def __init__(self, target, base, B):
        self.target, self.base, self.B = target, base, B

    def __getattr__(self, name):
        if name in ("target", "base", "B"):
            raise AttributeError(name)
        return getattr(self.target, name)

    def columns(self, fit):
        return self.target.columns(self.base)

    def value(self, fit, theta):
        return self.target.value(self.base, map_rows(np.atleast_2d(theta), self.B))

    def jacobian(self, fit):
        return np.asarray(self.target.jacobian(self.base), dtype=np.float64) @ self.B

    def data_effect(self, fit, units=None):
        return self.target.data_effect(self.base, units)

    def refit_values(self, fit, theta_loo, units=None):
        return self.target.refit_values(self.base, map_rows(np.atleast_2d(theta_loo),
                                                            self.B), units)

    def baseline_variance(self, fit):
        return self.target.baseline_variance(self.base)

    def followup_notes(self, fit):
        return self.target.followup_notes(self.base)


class Reparametrised(FitSeam):
    """The seam ``inner`` (parameters ``phi``) in ``theta = A phi``, the parameters named
    ``columns`` (module docstring). ``own_targets``: names of targets defined on
    :attr:`fit` (in ``theta``) beside ``coef``; ``source_model``: the library's model
    (:class:`ReparametrisedFit`); ``note``: appended to the report's statement of the
    model (e.g. how the parameters map). ``model_name``, ``coef``, ``information`` and
    ``converged`` are :attr:`fit`'s (:class:`~coxinfluence.influence_functions.seam.
    FitSeam`)."""

    def __init__(self, inner, A, columns, *, own_targets=(), source_model=None, note=None):
        self.inner = inner
        self.fit = ReparametrisedFit(inner.fit, A, columns, source_model=source_model)
        self.A, self.B = self.fit.A, self.fit.B
        self.own_targets = tuple(own_targets)
        self.note = note

    @property
    def columns(self):
        """The names as given (a ``pd.MultiIndex`` keeps its levels' names)."""
        return self.fit.columns

    # ---------------------------------------------------------------- mapped
    def objective(self, thetas):
        """``L(B theta)`` at each row of ``thetas``."""
        return self.inner.objective(map_rows(np.atleast_2d(thetas), self.B))

    def change(self, method):
        """``A (phi_{-g} - phi_hat)`` of the wrapped seam's ``change(method)``."""
        return map_rows(self.inner.change(method), self.A)

    def refit(self, codes=None, *, progress=None, executor=None, **options):
        """The wrapped seam's refits (``options``: the engine's, e.g. ``batch_size``),
        their parameters mapped by ``A`` (NaN kept only where the refit's own parameter is
        NaN: :func:`map_rows`)."""
        res = self.inner.refit(codes, progress=progress, executor=executor, **options)
        return Refits(res.codes, map_rows(res.theta, self.A), res.status)

    def unstable(self, delta_vif):
        """The wrapped rule at the change in ``phi``, ``B delta``."""
        return self.inner.unstable(map_rows(delta_vif, self.B))

    def unit_scores(self):
        """``B' s_g`` (rows: ``S @ B``): a score is a gradient, mapped as a covector."""
        return np.asarray(self.inner.unit_scores(), dtype=np.float64) @ self.B

    def covariance(self, robust):
        """``A V A'`` of the wrapped seam's covariance (model-based or robust)."""
        return self.A @ np.asarray(self.inner.covariance(robust), dtype=np.float64) @ self.A.T

    # --------------------------------------------------------------- targets
    @property
    def target_names(self):
        inner = tuple(self.inner.target_names)
        return ("coef",) + tuple(n for n in inner + self.own_targets if n != "coef")

    def adapt_target(self, target):
        """``target`` as ``influence()`` evaluates it on :attr:`fit`: ``coef`` and the
        ``own_targets`` as they are (defined in ``theta``), the wrapped seam's targets
        through :class:`TargetIn`."""
        if target.name == "coef" or target.name in self.own_targets \
                or isinstance(target, TargetIn):
            return target
        return TargetIn(target, self.inner.fit, self.B)

    # ------------------------------------------------------------ the report
    def report_header(self):
        """The wrapped seam's header (:func:`~coxinfluence.influence_functions.seam.
        model_header`), its statement followed by :attr:`note`."""
        header = self.inner.report_header()
        if not self.note:
            return header
        return dataclasses.replace(header, statement=f"{header.statement}; {self.note}")


for _name in _INVARIANT:
    setattr(Reparametrised, _name, property(lambda self, _n=_name: getattr(self.inner, _n)))

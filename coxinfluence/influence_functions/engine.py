"""The one influence engine: every algorithm of the audit's seam derived, once, from a
model family's derivatives (issue 34).

A family subclasses :class:`Engine` (itself an
:class:`~coxinfluence.influence_functions.seam.AuditModel`) and supplies, at
``theta_hat = coef`` of its loss ``L`` (a sum over its terms, ``information`` its
Hessian ``H``):

- the seam's members (``fit``, ``coef``, ``columns``, ``information``, ``converged``,
  ``unit_labels``, ``units_are_rows``, ``objective(thetas)``);
- ``gradient_differences`` (U, d): ``grad L - grad L_{-g}`` per unit (the VIF's
  numerator; for a row-decomposable loss ``s_g = sum_{i in g} w_i grad l_i``) and
  ``full_gradient`` (d,): ``grad L``;
- ``deleted_hessians(codes)`` (m, d, d) ``H_{-g}``, or ``split_of(codes)`` (m, d, d)
  ``C_g = H - H_{-g}`` (each defaults to the other; supply at least one); ``third``
  (d, d, d) or None (no Halley correction, no third-derivative term in ``unstable``);
- optionally ``reid_change()`` (U, d), Reid's ``-IF_n(g)/U`` (default the VIF change,
  exact for a decomposable loss: Section 3.5 of the paper);
- the refit kernel ``deletion_kernel()``
  (:class:`~coxinfluence.influence_functions.engine_refits.DeletionKernel`; a loss that
  takes presence masks: :class:`~coxinfluence.influence_functions.engine_refits.MaskKernel`),
  ``refit_tolerance``, ``max_iter``, ``refit_batch_size``;
- ``undefined()`` (deletions without a maximum by construction), and optionally
  ``no_maximum()``, ``rank_broken()`` with ``refit_reduced(code)``.

The engine derives (signs as ``docs/conventions.md``: a change is ``theta_hat_{-g} -
theta_hat``):

- ``change("vif") = H^{-1} (grad L - grad L_{-g})`` (``= -VIF_n(g)/U``),
  ``change("newton") = -H_{-g}^{-1} grad L_{-g}(theta_hat)``, ``change("reid") =
  reid_change()``;
- ``refit``: the one batched loop of
  :mod:`~coxinfluence.influence_functions.engine_refits` (Halley start, quasi-Newton with
  Broyden updates, Newton-Raphson, runaway and flat-likelihood detection, ``progress=``,
  ``executor=`` and dask);
- ``unstable``: ``unstable_from_split``;
- ``unit_scores``: ``I IF_n(g)/U = -H reid_change()`` (``-(grad L - grad L_{-g})`` where
  Reid's change is the VIF's);
- ``covariance``: ``H^{-1}``, or the grouped sandwich ``D'D``, ``D`` the Reid changes.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from coxinfluence.influence_functions.engine_refits import (
    RUNAWAY_SE,
    DeletionKernel,
    MaskKernel,
    Refits,
    halley_start,
    plain_refit,
    refit_units,
)
from coxinfluence.influence_functions.seam import AuditModel
from coxinfluence.influence_functions.stability import (
    unstable_from_split,
    unstable_screened,
)
from coxinfluence.numerics.newton import solve_any

__all__ = ["Engine", "DeletionKernel", "MaskKernel", "Refits", "RUNAWAY_SE",
           "halley_start"]


class Engine(AuditModel):
    """A model family behind the seam from its derivatives (module docstring): the
    algorithms ``change``, ``refit``, ``unstable``, ``unit_scores`` and ``covariance``
    written once.

    Examples
    --------
    A least-squares family needs its derivatives and a kernel only; here its rows are
    the units:

    >>> from coxinfluence.influence_functions.engine import Engine, DeletionKernel
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(20, 2)), rng.normal(size=20)
    >>> class Kernel(DeletionKernel):
    ...     def objective(self, codes):
    ...         def evaluate(idx, theta, hess=True):
    ...             keep = [np.arange(20) != c for c in codes[idx]]
    ...             r = [y[k] - X[k] @ t for k, t in zip(keep, theta)]
    ...             return (np.array([0.5 * e @ e for e in r]),
    ...                     np.array([-X[k].T @ e for k, e in zip(keep, r)]),
    ...                     np.array([X[k].T @ X[k] for k in keep]))
    ...         return evaluate
    >>> class LeastSquares(Engine):
    ...     coef = np.linalg.lstsq(X, y, rcond=None)[0]
    ...     columns, unit_labels, units_are_rows, converged = ["a", "b"], range(20), True, True
    ...     information = X.T @ X
    ...     full_gradient = -X.T @ (y - X @ coef)
    ...     gradient_differences = -X * (y - X @ coef)[:, None]
    ...     def split_of(self, codes):
    ...         return np.einsum("bi,bj->bij", X[codes], X[codes])
    ...     def deletion_kernel(self):
    ...         return Kernel()
    >>> model = LeastSquares()
    >>> exact = np.linalg.lstsq(X[1:], y[1:], rcond=None)[0] - model.coef
    >>> bool(np.allclose(model.refit([0]).theta[0] - model.coef, exact))
    True
    >>> bool(np.allclose(model.change("newton")[0], exact))
    True
    """

    #: the gradient tolerance of the refits
    refit_tolerance = 1e-10
    #: Newton-Raphson iterations of a refit
    max_iter = 50
    #: refits evaluated together as one batch of array operations
    refit_batch_size = 64
    #: quasi-Newton steps before Newton-Raphson takes over. A refit still above tol after
    #: 6 steps contracts slowly (GBSG2's top patient, 2 SEs from theta_hat: 1.5e-4 after
    #: 6); two more gradients of the batch cost less than the Hessian evaluations
    #: Newton-Raphson would spend (auto on GBSG2: Newton's 2 evaluations -> 1; the exact
    #: refits of every unit of GBSG2, METABRIC, SUPPORT: as many Newton rows or fewer)
    chord_steps = 8
    #: what the progress bar counts
    progress_unit = "row"
    #: (d, d, d) the loss's third derivative at ``coef``, or None (none known)
    third = None

    # ------------------------------------------------------------ the derivatives
    @property
    def n_units(self):
        """The number of units of deletion."""
        return len(self.unit_labels)

    def deleted_gradients(self, codes):
        """(m, d) ``grad L_{-g}(theta_hat)`` of the units ``codes``: ``full_gradient -
        gradient_differences[codes]``."""
        codes = np.asarray(codes, dtype=int)
        return (np.asarray(self.full_gradient, dtype=np.float64)[None, :]
                - np.asarray(self.gradient_differences, dtype=np.float64)[codes])

    def deleted_hessians(self, codes):
        """(m, d, d) ``H_{-g}(theta_hat)`` of the units ``codes``: ``H - split_of(codes)``."""
        if type(self).split_of is Engine.split_of:
            raise NotImplementedError(f"{type(self).__name__} supplies neither "
                                      "deleted_hessians nor split_of")
        return np.asarray(self.information)[None] - self.split_of(codes)

    def split_of(self, codes):
        """(m, d, d) ``C_g = H - H_{-g}`` of the units ``codes``."""
        if type(self).deleted_hessians is Engine.deleted_hessians:
            raise NotImplementedError(f"{type(self).__name__} supplies neither "
                                      "deleted_hessians nor split_of")
        return np.asarray(self.information)[None] - self.deleted_hessians(codes)

    @property
    def vif(self):
        """(U, d) ``VIF_n(g) = -U H^{-1} (grad L - grad L_{-g})`` (the paper's scale)."""
        return -self.n_units * self.change("vif")

    def reid_change(self):
        """(U, d) Reid's change ``-IF_n(g)/U`` (default: the VIF change, exact for a
        decomposable loss)."""
        return self._vif_change.copy()

    @cached_property
    def _vif_change(self):
        gd = np.asarray(self.gradient_differences, dtype=np.float64)
        return np.linalg.solve(np.asarray(self.information), gd.T).T

    # ------------------------------------------------------------ the estimates
    def change(self, method):
        """(U, d) first-order estimates of ``theta_hat_{-g} - theta_hat``: "vif" ``H^{-1}
        (grad L - grad L_{-g})``, "reid" :meth:`reid_change`, "newton" ``-H_{-g}^{-1} grad
        L_{-g}(theta_hat)`` (NaN where ``H_{-g}`` is singular; computed once)."""
        if method == "vif":
            return self._vif_change.copy()
        if method == "reid":
            return np.asarray(self.reid_change(), dtype=np.float64)
        if method == "newton":
            return self._newton_change.copy()
        raise ValueError(f"unknown method {method!r}")

    @cached_property
    def _newton_change(self):
        codes = np.arange(self.n_units)
        return -solve_any(self.deleted_hessians(codes), self.deleted_gradients(codes))

    # ------------------------------------------------------------------ refits
    def deletion_kernel(self) -> DeletionKernel:
        """The refit kernel (:class:`DeletionKernel`) of the problems without each unit."""
        raise NotImplementedError

    def no_maximum(self):
        """(U,) bool: the deletion leaves no maximum at all (default: :meth:`undefined`
        but not :meth:`rank_broken`)."""
        return np.asarray(self.undefined(), dtype=bool) & ~self.rank_broken()

    def rank_broken(self):
        """(U,) bool: the deletion leaves columns unidentifiable (refitted without them by
        :meth:`refit_reduced`; default none)."""
        return np.zeros(self.n_units, dtype=bool)

    def refit_reduced(self, code):
        """(d,) the refit without unit ``code`` by plain Newton-Raphson from ``coef``,
        without the columns it leaves unidentifiable (NaN there; default: all columns);
        NaN where it does not converge."""
        return plain_refit(self.deletion_kernel(), self.coef, code, self.refit_tolerance,
                           self.max_iter)

    def check_refit(self):
        """Raise where exact refits have no maximum to compare with (default: a fit that
        did not converge)."""
        if not self.converged:
            raise ValueError(f"the {self.model_name} fit is not at a minimum: no exact refits")

    def refit(self, codes=None, *, progress=None, executor=None, batch_size=None,
              n_chunks=None, tol=None, max_iter=None):
        """Exact refits without each unit of ``codes`` (default all): a
        ``Refits`` (``refit_units``:
        ``progress``, ``executor``, ``batch_size``, ``n_chunks``, ``tol``, ``max_iter``
        there)."""
        self.check_refit()
        codes = (np.arange(self.n_units) if codes is None
                 else np.asarray(codes, dtype=int).reshape(-1))
        return refit_units(self, codes, progress=progress, executor=executor,
                           batch_size=batch_size, n_chunks=n_chunks, tol=tol,
                           max_iter=max_iter)

    # ------------------------------------------------------------------- trust
    def split_traces(self):
        """(U,) ``tr(H^{-1} C_g)`` where the family has them without ``C_g`` (then
        ``unstable`` forms ``C_g`` only for the units they do not clear), else None."""
        return None

    def unstable(self, delta_vif):
        """``unstable_from_split`` with
        the units' ``C_g`` and ``T`` (zero where unknown); screened
        (``unstable_screened``) where the
        family gives :meth:`split_traces`."""
        d = len(self.coef)
        T = np.zeros((d, d, d)) if self.third is None else self.third
        traces = self.split_traces()
        if traces is not None:
            return unstable_screened(self.information, traces, T, delta_vif, self.split_of)
        return unstable_from_split(self.information, self.split_of(np.arange(self.n_units)),
                                   T, delta_vif)

    def unit_scores(self):
        """(U, d) ``I IF_n(g) / U``: ``-(grad L - grad L_{-g})`` where Reid's change is the
        VIF's, else ``-H reid_change()``."""
        if type(self).reid_change is Engine.reid_change:
            return -np.asarray(self.gradient_differences, dtype=np.float64)
        return -np.asarray(self.reid_change()) @ np.asarray(self.information)

    def covariance(self, robust):
        """``H^{-1}``, or the grouped sandwich ``D' D`` with ``D`` the Reid changes."""
        if not robust:
            return np.linalg.inv(self.information)
        D = np.asarray(self.reid_change(), dtype=np.float64)
        return D.T @ D

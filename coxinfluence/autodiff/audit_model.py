"""Any autodiff loss behind the audit's seam: ``ci.influence(AutodiffModel(loss))``.

:class:`AutodiffModel` implements :class:`coxinfluence.influence_functions.seam.AuditModel`
for a loss ``L(theta, presence)`` of :mod:`coxinfluence.autodiff.losses` (or any loss
object with ``n_objects``, ``loss(theta, presence)`` and ``loo(theta_hat, objects)``), so
that the audit of a Cox model (``method="auto"`` with its verified top, flags, likelihood
displacement, LMAX, dfbetas, the top table) is the same code for a GLM, the neural Cox
model or any other loss. The unit of deletion is the loss's object (presence 0).

- ``change("vif")``: ``-VIF(i)/n``, Eq. (VIF) by autodiff
  (:func:`coxinfluence.autodiff.vif`);
- ``change("reid")``: ``-IF(i)/n``, the case-weight IF
  (:func:`~coxinfluence.autodiff.weight_influence`);
- ``change("newton")``: ``-H_{-i}^{-1} grad L(theta_hat, 1_{-i})``, both by autodiff;
- ``refit``: the loss's own exact refits (``loss.loo``, Newton to ``max|grad| <= tol``),
  each checked: a refit whose gradient is not below ``tol`` is ``"refit_failed"``;
- ``unstable``: the measured rule of :mod:`coxinfluence.influence_functions.stability`
  with ``C_g = H - H_{-g}`` (the deleted Hessians by autodiff; for a decomposable loss this is
  the exact information split) and the third derivative by forward-over-reverse autodiff;
- ``undefined``: none known in advance for a generic loss (a deletion without maximum
  shows as a failed refit, flagged ``refit_failed``).

Costs: the Hessians are d x d per object, so this suits models with few parameters (the
GLM, the linear Cox loss); the objective is the loss, summed.
"""
from __future__ import annotations

from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from coxinfluence.data.deletion import Deletion
from coxinfluence.influence_functions.refits import Refits
from coxinfluence.influence_functions.seam import AuditModel
from coxinfluence.influence_functions.stability import unstable_from_split

from .core import vif, weight_influence

__all__ = ["AutodiffModel"]

_BATCH = 64


class AutodiffModel(AuditModel):
    """A loss fitted at ``theta_hat``, as the audit sees it: ``ci.influence(AutodiffModel(loss))``.

    Implements the audit's seam
    (:class:`coxinfluence.influence_functions.seam.AuditModel`) for a loss of
    :mod:`coxinfluence.autodiff.losses` (module docstring): the unit of deletion is the
    loss's object (presence 0). The gradient and the Hessian (``information``) at
    ``theta_hat`` are computed on construction.

    Parameters
    ----------
    loss : Loss
        A loss object with ``n_objects``, ``loss(theta, presence)`` (a sum, to be
        minimized), ``fit()`` and ``loo(theta_hat, objects)``.
    theta_hat : array-like, optional
        The fitted parameters (default ``loss.fit()``).
    columns : list of str, optional
        Parameter names (default ``theta[j]``).
    labels : array-like, optional
        One label per object (default ``0..n-1``).
    tol : float, default 1e-8
        The gradient tolerance of a converged fit and of each refit.
    name : str, optional
        What the report calls the model (default ``"<loss class> (autodiff)"``).

    Attributes
    ----------
    coef : numpy.ndarray
        ``(d,)`` the fitted parameters.
    gradient : numpy.ndarray
        ``(d,)`` the gradient of the loss at ``coef``.
    information : numpy.ndarray
        ``(d, d)`` the Hessian of the loss at ``coef``.
    converged : bool
        ``max |gradient| <= tol`` and the Hessian positive definite.
    unit_labels : pandas.Index
        The objects' labels.

    Raises
    ------
    ValueError
        ``columns`` or ``labels`` of the wrong length.

    See Also
    --------
    coxinfluence.influence : the audit.
    coxinfluence.autodiff.vif : the VIF of any loss, without the audit.

    Notes
    -----
    Costs: the Hessians are d x d per object, so this suits models with few parameters
    (the GLM, the linear Cox loss); the objective is the loss, summed. No example runs here:
    the construction compiles for several seconds.
    """

    #: the targets (``Target.name``) this model's changes can be taken of
    target_names = ("coef", "hazard_ratio")

    def __init__(self, loss, theta_hat=None, *, columns=None, labels=None, tol=1e-8,
                 name=None):
        self.loss = loss
        self.n = int(loss.n_objects)
        theta = loss.fit() if theta_hat is None else theta_hat
        self.coef = np.asarray(theta, dtype=np.float64).reshape(-1)
        d = self.coef.size
        self.columns = (list(columns) if columns is not None
                        else [f"theta[{j}]" for j in range(d)])
        if len(self.columns) != d:
            raise ValueError(f"columns has {len(self.columns)} names for {d} parameters")
        self.unit_labels = (pd.RangeIndex(self.n) if labels is None
                            else pd.Index(labels))
        if len(self.unit_labels) != self.n:
            raise ValueError(f"labels has {len(self.unit_labels)} entries for {self.n} objects")
        self.tol = float(tol)
        self.model_name = name or f"{type(loss).__name__} (autodiff)"
        self._ones = jnp.ones(self.n)
        theta_j = jnp.asarray(self.coef)
        self.gradient = np.asarray(jax.grad(loss)(theta_j, self._ones))
        self.information = np.asarray(jax.hessian(loss)(theta_j, self._ones))
        pd_ok = bool(np.all(np.linalg.eigvalsh(self.information) > 0))
        self.converged = bool(np.abs(self.gradient).max() <= self.tol) and pd_ok

    # the audit reads the fitted object as ``fit`` (targets: coef and hr)
    @property
    def fit(self):
        """The model itself: the audit reads the fitted object as ``fit`` (targets: coef and hr).

        """
        return self

    units_are_rows = True
    unit_name = "objects"

    def objective(self, thetas):
        """The full-data loss at each row of ``thetas``.

        The likelihood displacement is ``2 [objective(theta_{-g}) - objective(theta_hat)]``.

        Parameters
        ----------
        thetas : array-like
            ``(m, d)`` parameter vectors (one vector: ``(d,)``).

        Returns
        -------
        numpy.ndarray
            ``(m,)`` the loss with every object present.
        """
        thetas = jnp.asarray(np.atleast_2d(thetas), dtype=jnp.float64)
        return np.asarray(jax.vmap(lambda t: self.loss(t, self._ones))(thetas))

    # ---------------------------------------------------------------- estimates
    def change(self, method):
        """First-order estimates of ``theta_hat_{-i} - theta_hat`` for every object.

        Parameters
        ----------
        method : {"vif", "reid", "newton"}
            ``"vif"``: ``-VIF(i)/n`` (:func:`~coxinfluence.autodiff.vif`); ``"reid"``:
            ``-IF(i)/n``, the case-weight IF (:func:`~coxinfluence.autodiff.weight_influence`);
            ``"newton"``: ``-H_{-i}^{-1} grad L(theta_hat, 1_{-i})``, both by autodiff.

        Returns
        -------
        numpy.ndarray
            ``(n, d)`` the estimated changes.

        Raises
        ------
        ValueError
            An unknown method.
        """
        if method == "vif":
            return -np.asarray(vif(self.loss, self.coef, self.n)) / self.n
        if method == "reid":
            return -self._weight_if / self.n
        if method == "newton":
            step = np.linalg.solve(self._deleted_hessians, self._deleted_gradients[..., None])
            return -step[..., 0]
        raise ValueError(f"unknown method {method!r}")

    @cached_property
    def _weight_if(self):
        return np.asarray(weight_influence(self.loss, self.coef, self.n))

    def _over_deletions(self, fn, shape):
        out = np.empty((self.n,) + shape)
        batched = jax.jit(jax.vmap(fn, in_axes=(None, 0)))
        theta = jnp.asarray(self.coef)
        for s in range(0, self.n, _BATCH):
            objs = np.arange(s, min(s + _BATCH, self.n))
            P = jnp.asarray(Deletion.of_rows(self.n, objs).presence)
            out[objs] = np.asarray(batched(theta, P))
        return out

    @cached_property
    def _deleted_hessians(self):
        """(n, d, d) ``H_{-i}(theta_hat)``, the Hessian without object i."""
        d = self.coef.size
        return self._over_deletions(jax.hessian(self.loss), (d, d))

    @cached_property
    def _deleted_gradients(self):
        return self._over_deletions(jax.grad(self.loss), (self.coef.size,))

    def refit(self, codes=None, *, progress=None, executor=None):
        """Exact refits without each object: the loss's own ``loss.loo``.

        Newton to ``max |grad| <= tol``; each refit is checked, and one whose gradient is not
        below ``tol`` (or not finite) is ``"refit_failed"`` with NaN coefficients.

        Parameters
        ----------
        codes : array-like of int, optional
            Positions of the objects to refit (default every object).
        progress : bool, optional
            Accepted for the seam's signature; not used.
        executor : concurrent.futures.Executor, optional
            Accepted for the seam's signature; not used.

        Returns
        -------
        coxinfluence.influence_functions.refits.Refits
            ``theta`` (m, d) and a status per object: ``"ok"`` or ``"refit_failed"``.

        Raises
        ------
        ValueError
            The fit is not at a minimum (gradient above ``tol`` or the Hessian not positive
            definite): no exact refits.
        """
        if not self.converged:
            raise ValueError(f"the {self.model_name} fit is not at a minimum (max |grad| "
                             f"{np.abs(self.gradient).max():.3g} > {self.tol:g} or the "
                             "Hessian is not positive definite): no exact refits")
        codes = np.arange(self.n) if codes is None else np.asarray(codes, dtype=int)
        if codes.size == 0:
            return Refits(codes, np.zeros((0, self.coef.size)), np.zeros(0, dtype=str))
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # judged below, per refit
            theta = np.asarray(self.loss.loo(self.coef, objects=codes), dtype=np.float64)
        P = jnp.asarray(Deletion.of_rows(self.n, codes).presence)
        grads = np.asarray(jax.vmap(jax.grad(self.loss))(jnp.asarray(theta), P))
        ok = np.isfinite(theta).all(axis=1) & (np.abs(grads).max(axis=1) <= self.tol)
        theta[~ok] = np.nan
        return Refits(codes, theta, np.where(ok, "ok", "refit_failed"))

    # -------------------------------------------------------------------- trust
    def undefined(self):
        """Which deletions leave a model without a maximum by construction: none for a generic loss.

        A deletion without maximum shows as a failed refit, flagged ``refit_failed``.

        Returns
        -------
        numpy.ndarray
            ``(n,)`` bool, all False.
        """
        return np.zeros(self.n, dtype=bool)

    def unstable(self, delta_vif):
        """Whether each first-order change is predicted to be off.

        The measured rule of
        :func:`coxinfluence.influence_functions.stability.unstable_from_split` with
        ``C_g = H - H_{-g}`` (the deleted Hessians by autodiff) and the third derivative by
        forward-over-reverse autodiff.

        Parameters
        ----------
        delta_vif : numpy.ndarray
            ``(n, d)`` the VIF's estimated changes.

        Returns
        -------
        numpy.ndarray
            ``(n,)`` bool.
        """
        C = self.information[None] - self._deleted_hessians
        return unstable_from_split(self.information, C, self._third, delta_vif)

    @cached_property
    def _third(self):
        """(d, d, d) third derivative of the loss at ``theta_hat``."""
        hess = jax.hessian(lambda t: self.loss(t, self._ones))
        return np.asarray(jax.jacfwd(hess)(jnp.asarray(self.coef)))

    def unit_scores(self):
        """Each object's score contribution ``I IF_n(i) / n`` (LMAX's ``U``).

        Returns
        -------
        numpy.ndarray
            ``(n, d)``, from the case-weight IF.
        """
        return self._weight_if @ self.information / self.n

    def covariance(self, robust):
        """The model-based covariance ``I^{-1}``.

        Parameters
        ----------
        robust : bool
            Must be False: a robust covariance is for Cox models.

        Returns
        -------
        numpy.ndarray
            ``(d, d)`` the inverse of ``information``.

        Raises
        ------
        ValueError
            ``robust`` is true.
        """
        if robust:
            raise ValueError("robust covariance is for Cox models")
        return np.linalg.inv(self.information)

    def unit_frame(self, frame):
        """What ``top(k)`` shows beside each object: the training frame as it is.

        Parameters
        ----------
        frame : pandas.DataFrame or None
            The training frame, one row per object.

        Returns
        -------
        pandas.DataFrame or None
            ``frame``.
        """
        return frame

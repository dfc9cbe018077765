"""Any autodiff loss behind the audit's seam: ``ci.influence(AutodiffModel(loss))``.

:class:`AutodiffModel` puts a loss ``L(theta, presence)`` of
:mod:`coxinfluence.autodiff.losses` (or any loss object with ``n_objects`` and
``loss(theta, presence)``) on the influence engine
(``coxinfluence.influence_functions.engine.Engine``), so that the audit of a Cox
model (``method="auto"`` with its verified top, flags, likelihood displacement, LMAX,
dfbetas, the top table) is the same code for a GLM, the neural Cox model or any other
loss. The unit of deletion is the loss's object (presence 0). The model supplies the
derivatives, by JAX, and the engine derives the algorithms:

- the deleted gradients and Hessians ``grad L(theta_hat, 1_{-i})``, ``H_{-i}``, the third
  derivative (forward-over-reverse), Reid's case-weight IF
  (:func:`~coxinfluence.autodiff.weight_influence`);
- the refit kernel: the loss's JAX-compiled batches (value, gradient and Hessian vmapped
  over presence masks, one compiled shape per batch), for the engine's refit loop;
- ``undefined``: none known in advance for a generic loss (a refit that runs off is
  "undefined", one that does not converge ``"refit_failed"``).

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
from coxinfluence.influence_functions.engine import Engine, MaskKernel
from coxinfluence.models.base import FitProtocol

from .core import weight_influence
from .losses._common import _value_grad_hessian
from .solvers import _cached

__all__ = ["AutodiffModel"]

#: problems per compiled call (every call padded to it: one compiled shape)
_BATCH = 64


def _compiled(loss):
    """(value and gradient, value, gradient and Hessian) of ``loss(theta, presence)``,
    vmapped over problems and jit-compiled once per loss."""
    def build():
        vg = jax.vmap(jax.value_and_grad(loss))
        vgh = jax.vmap(lambda t, p: _value_grad_hessian(lambda s: loss(s, p), t))
        return jax.jit(vg), jax.jit(vgh)
    return _cached(loss, "engine_kernel", build)


class _Batches:
    """The refit kernel's source (:class:`~coxinfluence.influence_functions.engine.
    MaskKernel`): ``objective(deletion)`` evaluates the loss at the rows of ``theta``
    (k, d) with the deletion's presence masks by the compiled batches of :data:`_BATCH`
    problems (the last padded by repeating its last row); a loss that is not finite is
    ``inf``, as :func:`coxinfluence.numerics.newton.newton` reads it."""

    def __init__(self, loss):
        self.loss = loss

    def objective(self, deletion):
        presence = deletion.presence

        def evaluate(idx, theta, hess=True):
            theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
            P, (k, d) = presence[idx], theta.shape
            fn = _compiled(self.loss)[1 if hess else 0]
            out = (np.empty(k), np.empty((k, d)), np.empty((k, d, d)) if hess else None)
            for s in range(0, k, _BATCH):
                part = np.arange(s, min(s + _BATCH, k))
                fill = np.concatenate([part, np.full(_BATCH - part.size, part[-1])])
                got = fn(jnp.asarray(theta[fill]), jnp.asarray(P[fill]))
                for a, b in zip(out, got):
                    a[part] = np.asarray(b)[:part.size]
            out[0][~np.isfinite(out[0])] = np.inf
            return out
        return evaluate


class AutodiffModel(Engine, FitProtocol):
    """A loss fitted at ``theta_hat``, as the audit sees it: ``ci.influence(AutodiffModel(loss))``.

    The loss on the influence engine
    (``coxinfluence.influence_functions.engine.Engine``), its derivatives by JAX
    (module docstring): the unit of deletion is the loss's object (presence 0). The
    gradient and the Hessian (``information``) at ``theta_hat`` are computed on
    construction.

    Parameters
    ----------
    loss : Loss
        A loss object with ``n_objects``, ``loss(theta, presence)`` (a sum, to be
        minimized) and ``fit()`` (used when ``theta_hat`` is not given).
    theta_hat : array-like, optional
        The fitted parameters (default ``loss.fit()``).
    columns : list of str, optional
        Parameter names (default ``theta[j]``).
    labels : array-like, optional
        One label per object (default ``0..n-1``).
    tol : float, default 1e-8
        The gradient tolerance of a converged fit; each refit iterates to
        ``min(tol, 1e-10)`` (the losses' own ``loo`` tolerance).
    name : str, optional
        What the report calls the model (default ``"<loss class> (autodiff)"``).

    Attributes
    ----------
    coef : numpy.ndarray
        ``(d,)`` the fitted parameters.
    gradient : numpy.ndarray
        ``(d,)`` the gradient of the loss at ``coef`` (also the engine's
        ``full_gradient``).
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
    Costs: the module docstring. No example runs here: the construction compiles for
    several seconds.
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
        self.refit_tolerance = min(self.tol, 1e-10)
        self.model_name = name or f"{type(loss).__name__} (autodiff)"
        self._ones = jnp.ones(self.n)
        theta_j = jnp.asarray(self.coef)
        self.gradient = self.full_gradient = np.asarray(jax.grad(loss)(theta_j, self._ones))
        self.information = np.asarray(jax.hessian(loss)(theta_j, self._ones))
        pd_ok = bool(np.all(np.linalg.eigvalsh(self.information) > 0))
        self.converged = bool(np.abs(self.gradient).max() <= self.tol) and pd_ok

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

    # ------------------------------------------------------ the derivatives (JAX)
    def deletion_kernel(self):
        """The refit kernel: the loss's JAX-compiled batches over presence masks.

        Returns
        -------
        coxinfluence.influence_functions.engine.MaskKernel
            The problems without each object.
        """
        return MaskKernel(_Batches(self.loss), np.arange(self.n))

    def _at_hat(self, codes, hess):
        """Value, gradient and Hessian at ``coef`` without each object of ``codes``."""
        evaluate = _Batches(self.loss).objective(Deletion.of_rows(self.n, codes))
        return evaluate(np.arange(len(codes)), np.repeat(self.coef[None], len(codes), 0), hess)

    @cached_property
    def gradient_differences(self):
        """``(n, d)`` ``grad L(theta_hat) - grad L(theta_hat, 1_{-i})`` by autodiff."""
        return self.gradient[None, :] - self._at_hat(np.arange(self.n), False)[1]

    @cached_property
    def _all_hessians(self):
        return self._at_hat(np.arange(self.n), True)[2]

    def deleted_hessians(self, codes):
        """The Hessians without each object, by autodiff (every object's computed once
        when all are asked).

        Parameters
        ----------
        codes : array-like of int
            The objects.

        Returns
        -------
        numpy.ndarray
            ``(m, d, d)`` ``H_{-i}(theta_hat)``.
        """
        codes = np.asarray(codes, dtype=int)
        if "_all_hessians" in self.__dict__ or codes.size == self.n:
            return self._all_hessians[codes]
        return self._at_hat(codes, True)[2]

    @cached_property
    def third(self):
        """``(d, d, d)`` the third derivative of the loss at ``theta_hat`` (forward over
        reverse)."""
        hess = jax.hessian(lambda t: self.loss(t, self._ones))
        return np.asarray(jax.jacfwd(hess)(jnp.asarray(self.coef)))

    @cached_property
    def _weight_if(self):
        return np.asarray(weight_influence(self.loss, self.coef, self.n))

    def reid_change(self):
        """Reid's change, the case-weight IF.

        Returns
        -------
        numpy.ndarray
            ``(n, d)`` ``-IF(i)/n`` (:func:`~coxinfluence.autodiff.weight_influence`).
        """
        return -self._weight_if / self.n

    def check_refit(self):
        """Refuse exact refits of a fit that is not at a minimum.

        Raises
        ------
        ValueError
            The gradient is above ``tol`` or the Hessian is not positive definite.
        """
        if not self.converged:
            raise ValueError(f"the {self.model_name} fit is not at a minimum (max |grad| "
                             f"{np.abs(self.gradient).max():.3g} > {self.tol:g} or the "
                             "Hessian is not positive definite): no exact refits")

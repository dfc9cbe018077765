"""Generic Versatile Influence Function (VIF) by automatic differentiation (JAX).

This subpackage generalizes the closed-form Cox VIF of ``coxinfluence.influence_functions.vif``
to any
*non-decomposable loss* ``L(theta, b)`` (paper, Definition "Non-Decomposable Loss"),
where ``b`` is a presence vector over the ``n`` objects (1 present, 0 removed)::

    VIF(i) = -(H/n)^{-1} grad_theta [ L(theta_hat, 1) - L(theta_hat, 1_{-i}) ],
    H = grad^2_theta L(theta_hat, 1)                     (paper, Eq. VIF)

Only this subpackage imports JAX; ``import coxinfluence`` never does.  Importing it
switches JAX to 64-bit floats (``jax_enable_x64``) for the whole process, because
influence values are differences of nearly equal gradients and need float64.

The public API:

- :func:`vif`, :func:`weight_influence` (``core``);
- the explicit, CG and LiSSA solvers (``solvers``: :class:`ExplicitSolver`,
  :class:`CGSolver`, :class:`LiSSASolver`, :func:`make_solver`, :func:`hessian_matrix`,
  :func:`hessian_extreme_eigenvalues`, :class:`HessianMemoryError`,
  :class:`NotPositiveDefiniteError`);
- :class:`AutodiffModel` (``audit_model``): any loss behind ``ci.influence``;
- the losses of :mod:`coxinfluence.autodiff.losses`: ``losses.cox``, ``losses.glm``,
  ``losses.cox_mlp``, ``losses.contrastive``, ``losses.listmle``.
"""
import jax as _jax

_jax.config.update("jax_enable_x64", True)

from . import losses  # noqa: E402
from .audit_model import AutodiffModel  # noqa: E402
from .core import vif, weight_influence  # noqa: E402
from .solvers import (  # noqa: E402
    CGSolver,
    ExplicitSolver,
    HessianMemoryError,
    LiSSASolver,
    NotPositiveDefiniteError,
    hessian_extreme_eigenvalues,
    hessian_matrix,
    make_solver,
)

__all__ = [
    "AutodiffModel",
    "vif",
    "weight_influence",
    "make_solver",
    "ExplicitSolver",
    "CGSolver",
    "LiSSASolver",
    "HessianMemoryError",
    "NotPositiveDefiniteError",
    "hessian_matrix",
    "hessian_extreme_eigenvalues",
    "losses",
]

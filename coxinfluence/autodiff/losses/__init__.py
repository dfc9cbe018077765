"""Non-decomposable loss families ``L(theta, presence)`` with brute-force LOO retrainers.

Each factory returns a :class:`Loss` object (paper Definition "Non-Decomposable Loss"):
callable as ``loss(theta, presence)`` (JAX-traceable, a *sum* over terms as in the
paper), with

* ``n_objects``, ``n_params``, ``init_params(seed)``,
* ``fit(presence=None, theta0=None, ...)``: minimize ``L(., presence)``,
* ``loo(theta_hat, objects=None, ...)``: brute-force leave-one-out retraining, the
  oracle for the VIF (returns ``theta_{-i}`` per object),
* optionally ``weighted(theta, w)`` (case weights, for ``weight_influence``),
  ``n_terms`` and ``sampled_loss(theta, presence, idx)`` (for LiSSA),
  ``per_object_bytes`` (memory hint for the VIF batches).

Families, one module each (paper Section "Non-Decomposable Loss" and appendices):

1. :func:`cox` (``cox_loss``) - negative log partial likelihood, Breslow or Efron ties,
   R's weighted Efron formula, strata (Example 1, Eq. partial-likelihood).
2. :func:`glm` (``glm_loss``) - logistic / Poisson GLM, an M-estimator (Eq.
   weighted-loss, Lemma "IF for M-Estimators").
3. :func:`cox_mlp` (``mlp_cox``) - Cox model with a one-hidden-layer ReLU MLP
   log-risk (Appendix "Efficient Inverse Hessian Approximation").
4. :func:`contrastive` (``contrastive_loss``) - DeepWalk skip-gram with a full softmax on
   a graph, object = node (Example 2, Eq. contrastive-loss).
5. :func:`listmle` (``listmle_loss``) - ListMLE with a linear scorer, object = item or
   query (Example 3, Eq. listmle).

What they share (``_common``): input checks, the :class:`Loss` base with its
deletion batches (``coxinfluence.data.deletion.Deletion``), the Newton solver with step
halving (``newton_solve``, one problem or vmapped) and ``adam``.
"""
from __future__ import annotations

# ``x as x``: re-exported for ``losses.<name>`` (tests, paper_appendix) beyond __all__
from ._common import Loss
from ._common import NewtonState as NewtonState
from ._common import adam as adam
from ._common import newton_solve as newton_solve
from ._common import newton_step as newton_step
from .contrastive_loss import ContrastiveLoss as ContrastiveLoss
from .contrastive_loss import _graph_arrays as _graph_arrays
from .contrastive_loss import contrastive, deepwalk_counts, expected_deepwalk_counts
from .cox_loss import CoxLoss as CoxLoss
from .cox_loss import cox
from .glm_loss import GLMLoss as GLMLoss
from .glm_loss import glm
from .listmle_loss import ListMLELoss as ListMLELoss
from .listmle_loss import _listmle_query_terms as _listmle_query_terms
from .listmle_loss import listmle
from .mlp_cox import CoxMLPLoss as CoxMLPLoss
from .mlp_cox import cox_mlp

__all__ = ["Loss", "cox", "glm", "cox_mlp", "contrastive", "listmle",
           "deepwalk_counts", "expected_deepwalk_counts"]

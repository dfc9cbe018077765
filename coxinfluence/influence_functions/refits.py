"""The names the leave-one-out code shared before every family went through the seam
(issue 34), kept where other modules import them: the refits' result
(:class:`~coxinfluence.influence_functions.engine_refits.Refits`), the warning naming the
units whose result is undefined (:class:`~coxinfluence.influence_functions.any_fit.
LeaveOneOutWarning`, :func:`~coxinfluence.influence_functions.any_fit.warn_undefined`,
:class:`~coxinfluence.influence_functions.any_fit.SeamUnits`) and, for
:mod:`coxinfluence.asymptotics.simulation` until it imports it from there, ``exact_loo``
(:func:`coxinfluence.influence_functions.any_fit.exact_loo`).
"""
from coxinfluence.influence_functions.any_fit import (  # noqa: F401 (re-exported)
    LeaveOneOutWarning,
    SeamUnits,
    exact_loo,
    warn_undefined,
)
from coxinfluence.influence_functions.engine_refits import Refits  # noqa: F401 (re-exported)

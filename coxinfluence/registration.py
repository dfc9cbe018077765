"""A model family and all its parts in one registration (issue 45, item 1).

A family's parts live in five tables, each in the layer that reads it (the seam's family
in ``influence_functions/registry.py``, its targets in ``audit/target_base.py``, its
residuals in ``diagnostics/registry.py``, its report curves in ``families/curves.py``, its
command-line entry in ``cli/family_registry.py``), and all five dispatch by the one rule of
``coxinfluence.data.dispatch``. :func:`register` declares them together and forwards each
part to its table; this module sits above every layer (it is in none of the import-linter
layers), so no layer imports another's table to do so.
"""
from __future__ import annotations

from coxinfluence.influence_functions.registry import Family, register_family

__all__ = ["register"]


def register(family, *, targets=(), residuals=None, cli=None, curves=None):
    """Register a model family with every part it has, in one call.

    Parameters
    ----------
    family : Family
        The family (:class:`coxinfluence.influence_functions.registry.Family`): the seam
        of its models, registered with ``register_family``.
    targets : sequence of type, default ()
        Its implementations of the quantities of ``ci.targets`` (``Target`` subclasses
        with ``name``, ``quantity`` and ``fit_type``), each registered with
        ``ci.targets.register_target``: what ``ci.evaluate`` scores (``"survival"``,
        ``"linear_predictor"``) and what ``ci.influence(..., target=)`` resolves to.
    residuals : tuple, optional
        ``(kinds, function)``, registered with ``register_residuals`` for the family's
        ``fit_class`` (its fits are its models), or ``(fit_class, kinds, function)``;
        a ``"deviance"`` kind turns the report's Model checks on.
    cli : CliFamily, optional
        Its entry of ``coxinfluence audit`` (``register_cli_family``).
    curves : callable, optional
        Its report curves part, ``curves(result, theta_loo, codes) -> Curves``
        (:mod:`coxinfluence.families.curves`), registered with ``register_curves`` for the
        family's ``fit_class``: the report draws a reference patient's prediction curves
        from the full fit and refitted without the top units.

    Returns
    -------
    Family
        ``family``, registered.

    Raises
    ------
    TypeError
        ``family`` is not a ``Family``.
    ValueError
        ``residuals`` as ``(kinds, function)``, or ``curves``, for a family registered by a
        predicate (no ``fit_class`` to key them by).

    Notes
    -----
    The test-only family (``tests/seam_example_family.py``) registers this way::

        FAMILY = register(Family("logistic (tests)", LogisticFit, _build, ...),
                          targets=(LogisticLinearPredictor, LogisticSurvival),
                          residuals=(("response", "pearson", "deviance"), _residuals))

    Examples
    --------
    Residuals are keyed by the family's class; a family recognised by a predicate names
    the class of its fits (nothing is registered when a part is refused):

    >>> from coxinfluence.influence_functions.registry import Family, families
    >>> from coxinfluence.registration import register
    >>> family = Family("by name", lambda m: type(m).__name__ == "Mine", None)
    >>> register(family, residuals=(["zero"], None))
    Traceback (most recent call last):
    ...
    ValueError: the family 'by name' is registered by a predicate: give residuals as ...
    >>> family in families()
    False
    """
    if not isinstance(family, Family):
        raise TypeError(f"expected a Family; got {type(family).__name__}")
    if residuals is not None:
        if len(residuals) == 2:
            if family.fit_class is None:
                raise ValueError(f"the family {family.name!r} is registered by a predicate: "
                                 "give residuals as (fit_class, kinds, function)")
            residuals = (family.fit_class, *residuals)
        fit_class, kinds, function = residuals
    if curves is not None and family.fit_class is None:
        raise ValueError(f"the family {family.name!r} is registered by a predicate: its "
                         "curves need a fit class (register_curves(fit_class, function))")
    register_family(family)
    if targets:
        from coxinfluence.audit.target_base import register_target
        for target in targets:
            register_target(target)
    if residuals is not None:
        from coxinfluence.diagnostics import register_residuals
        register_residuals(fit_class, kinds, function, model=family.name)
    if curves is not None:
        from coxinfluence.families.curves import register_curves
        register_curves(family.fit_class, curves)
    if cli is not None:
        from coxinfluence.cli.family_registry import register_cli_family
        register_cli_family(cli)
    return family

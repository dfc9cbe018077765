"""The one dispatch rule of every registry of the package (issue 45).

Model families (:func:`coxinfluence.influence_functions.registry.register_family`),
target implementations (:func:`coxinfluence.audit.target_base.register_target`),
residual kinds (:func:`coxinfluence.diagnostics.register_residuals`) and the command
line's families (:func:`coxinfluence.cli.family_registry.register_cli_family`) all choose
an entry for an object by :func:`choose`:

1. **The most specific registered class wins.** An entry registered for a class accepts
   the instances of that class (and of its subclasses), ranked by the class's position in
   the object's MRO: an entry for a subclass of ``CoxFit`` beats the one for ``CoxFit``.
2. **Predicates come after classes.** An entry registered by a predicate only (lifelines
   models recognised by their module name, without importing lifelines) ranks after
   every class entry that accepts the object. An entry may have both: its class ranks it
   and its predicate narrows it.
3. **The latest registration wins a tie**, and **a re-registration replaces** (under the
   same key: a family's name, a target's name, a fit class): the earlier entry is removed
   and the new one is the latest.

Each registry keeps its entries in registration order (:func:`replace` re-registers) and
asks :func:`choose`; none has a rule of its own.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

__all__ = ["choose", "rank", "replace"]


def rank(obj, cls: Optional[type], accepts: Optional[Callable] = None) -> Optional[int]:
    """How specifically an entry accepts ``obj``: smaller is more specific, None: not at all.

    Parameters
    ----------
    obj : object
        The object dispatched on (a user's model, a fit).
    cls : type or None
        The class the entry is registered for; None for an entry registered by a
        predicate only.
    accepts : callable, optional
        ``accepts(obj) -> bool``: the entry's predicate (None: its class alone decides).

    Returns
    -------
    int or None
        The position of ``cls`` in ``type(obj).__mro__`` (0: ``obj``'s own class); for a
        predicate-only entry one past the end of the MRO (after every class); None when
        the entry does not accept ``obj``.

    Examples
    --------
    >>> from coxinfluence.data.dispatch import rank
    >>> class Base: ...
    >>> class Child(Base): ...
    >>> rank(Child(), Child), rank(Child(), Base), rank(Base(), Child)
    (0, 1, None)
    >>> rank(Child(), None, lambda obj: True)      # a predicate ranks after every class
    3
    """
    mro = type(obj).__mro__
    if cls is None:
        if accepts is None:
            return None
        position = len(mro)
    elif cls in mro:
        position = mro.index(cls)
    else:
        return None
    if accepts is not None and not accepts(obj):
        return None
    return position


def choose(obj, entries: Iterable[tuple]):
    """The entry that dispatches ``obj``: the one rule of every registry (module docstring).

    Parameters
    ----------
    obj : object
        The object dispatched on.
    entries : iterable of tuple
        ``(value, cls, accepts)`` in registration order: ``cls`` the class the entry is
        registered for (or None), ``accepts`` its predicate (or None; at least one of the
        two is given).

    Returns
    -------
    object or None
        The ``value`` of the most specific entry that accepts ``obj`` (:func:`rank`), the
        latest registered among equally specific ones; None when none accepts it.

    Examples
    --------
    >>> from coxinfluence.data.dispatch import choose
    >>> class Base: ...
    >>> class Child(Base): ...
    >>> entries = [("for Child", Child, None), ("for Base", Base, None),
    ...            ("any object", None, lambda obj: True)]
    >>> choose(Child(), entries), choose(Base(), entries), choose(1.0, entries)
    ('for Child', 'for Base', 'any object')
    >>> choose(Base(), entries + [("for Base, again", Base, None)])   # latest wins a tie
    'for Base, again'
    >>> print(choose(1.0, entries[:2]))
    None
    """
    best, best_rank = None, None
    for value, cls, accepts in entries:
        r = rank(obj, cls, accepts)
        if r is not None and (best_rank is None or r <= best_rank):
            best, best_rank = value, r
    return best


def replace(table: dict, key, value):
    """Register ``value`` under ``key`` in ``table``, replacing an earlier registration.

    The earlier entry under ``key`` is removed and ``value`` becomes the latest entry
    (it wins ties: :func:`choose`).

    Parameters
    ----------
    table : dict
        A registry's entries in registration order (modified in place).
    key : hashable
        The registration's key (a name, a class).
    value : object
        The entry.

    Returns
    -------
    object
        ``value``.

    Examples
    --------
    >>> from coxinfluence.data.dispatch import replace
    >>> table = {"a": 1, "b": 2}
    >>> replace(table, "a", 3)
    3
    >>> table
    {'b': 2, 'a': 3}
    """
    table.pop(key, None)
    table[key] = value
    return value

"""The old names of targets, kept as deprecated aliases for one release: each is its
family's implementation (same arguments, same values) and warns, when constructed, with a
``DeprecationWarning`` naming the target of ``ci.targets`` that replaces it.

- ``ci.AFTSurvival`` -> ``ci.targets.Survival`` (on an AFT model);
- ``ci.LifelinesSurvival`` -> ``ci.targets.Survival`` (on a lifelines parametric model);
- ``ci.SurvivalQuantile`` -> ``ci.targets.Quantile``;
- ``ci.RiskScore`` -> ``ci.targets.LinearPredictor`` (on a scikit-survival model).
"""
from __future__ import annotations

import textwrap
import warnings

from coxinfluence.families.aft_targets import AFTSurvival as _AFTSurvival
from coxinfluence.families.aft_targets import SurvivalQuantile as _SurvivalQuantile
from coxinfluence.families.lifelines_targets import LifelinesSurvival as _LifelinesSurvival
from coxinfluence.families.sksurv_targets import RiskScore as _RiskScore

__all__ = ["AFTSurvival", "LifelinesSurvival", "SurvivalQuantile", "RiskScore"]


def _deprecated(impl, old, new, summary, arguments, examples):
    """A subclass of ``impl`` named ``old`` that warns, when constructed, to use ``new``.

    Parameters
    ----------
    impl : type
        The family's implementation the alias stands for.
    old : str
        The alias's name (``ci.<old>``).
    new : str
        What replaces it, as a user writes it (``ci.targets.<Name>(...)``).
    summary : str
        The alias's first line, without "(deprecated)".
    arguments : str
        ``impl``'s arguments, as the docstring lists them.
    examples : str
        The docstring's Examples section (its doctests, indented by four spaces).

    Returns
    -------
    type
        The alias: a subclass of ``impl`` whose ``__init__`` warns with a
        ``DeprecationWarning`` and then is ``impl``'s.
    """

    def __init__(self, *args, **kwargs):
        warnings.warn(f"ci.{old} is deprecated and will be removed in the next release: use "
                      f"{new} (the same target, dispatched on the model)",
                      DeprecationWarning, stacklevel=2)
        impl.__init__(self, *args, **kwargs)

    target = new.split("(")[0].replace("ci.", "coxinfluence.", 1)
    path = f"{impl.__module__}.{impl.__qualname__}"
    note = textwrap.fill(f"Use ``{new}``, the same target dispatched on the model; "
                         f"``ci.{old}`` will be removed in the next release. It is the "
                         f"family's implementation of that target (``{path}``): the "
                         "same arguments and values.", 88, initial_indent=" " * 7,
                         subsequent_indent=" " * 7)
    params = textwrap.fill(f"The arguments of ``{path}``: {arguments}.", 88,
                           initial_indent=" " * 8, subsequent_indent=" " * 8)
    doc = f"""{summary} (deprecated).

    .. deprecated:: 0.1.0
{note}

    Parameters
    ----------
    *args, **kwargs
{params}

    Warns
    -----
    DeprecationWarning
        When constructed, naming the target of ``ci.targets`` that replaces it.

    See Also
    --------
    {target} : The target to use.

    Examples
    --------
{examples}    """
    return type(old, (impl,), {"__init__": __init__, "__module__": __name__, "__doc__": doc})


AFTSurvival = _deprecated(
    _AFTSurvival, "AFTSurvival", "ci.targets.Survival(X_new, times)",
    "An AFT model's survival probability of new patients",
    "``X_new``, ``times`` and ``strata=None``", """\
    >>> import warnings
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> aft = ci.fit_aft(X, rossi["week"], rossi["arrest"])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = ci.AFTSurvival(X.iloc[:2], [20, 40])
    >>> caught[0].category.__name__
    'DeprecationWarning'
    >>> np.round(old.value(aft, aft.coef[None, :]), 4)
    array([[0.9286, 0.8223, 0.8021, 0.5587]])
    >>> new = ci.targets.Survival(X.iloc[:2], [20, 40])
    >>> np.array_equal(old.value(aft, aft.coef[None, :]), new.value(aft, aft.coef[None, :]))
    True
""")
LifelinesSurvival = _deprecated(
    _LifelinesSurvival, "LifelinesSurvival", "ci.targets.Survival(df_new, times)",
    "A lifelines parametric regression's survival function",
    "``df_new`` (new patients as lifelines takes them) and ``times``", """\
    >>> import warnings
    >>> from lifelines import WeibullAFTFitter
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> model = WeibullAFTFitter().fit(rossi, "week", "arrest")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = ci.LifelinesSurvival(rossi.iloc[:2], [20, 40])
    >>> caught[0].category.__name__
    'DeprecationWarning'
    >>> res = ci.influence(model, rossi, target=old, method="vif")
    >>> res.loo_change.columns.tolist()
    ['S(20|0)', 'S(40|0)', 'S(20|1)', 'S(40|1)']
    >>> new = ci.influence(model, rossi, method="vif",
    ...                    target=ci.targets.Survival(rossi.iloc[:2], [20, 40]))
    >>> np.allclose(res.loo_change, new.loo_change)
    True
""")
SurvivalQuantile = _deprecated(
    _SurvivalQuantile, "SurvivalQuantile", "ci.targets.Quantile(X_new, p)",
    "The quantiles of new patients' survival times, AFT",
    "``X_new``, ``p=0.5`` and ``strata=None``", """\
    >>> import warnings
    >>> from lifelines.datasets import load_rossi
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> aft = ci.fit_aft(X, rossi["week"], rossi["arrest"])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = ci.SurvivalQuantile(X.iloc[:2])
    >>> caught[0].category.__name__
    'DeprecationWarning'
    >>> old.columns(aft)
    ['Q(0.5|0)', 'Q(0.5|1)']
    >>> np.round(old.value(aft, aft.coef[None, :]), 2)
    array([[98.73, 45.31]])
""")
RiskScore = _deprecated(
    _RiskScore, "RiskScore", "ci.targets.LinearPredictor(X_new)",
    "scikit-survival's risk score ``predict(X_new)``", "``X_new``", """\
    >>> import warnings
    >>> from lifelines.datasets import load_rossi
    >>> from sksurv.linear_model import CoxPHSurvivalAnalysis
    >>> from sksurv.util import Surv
    >>> rossi = load_rossi()
    >>> X = rossi[["fin", "age", "prio"]]
    >>> y = Surv.from_arrays(rossi["arrest"].astype(bool), rossi["week"])
    >>> est = CoxPHSurvivalAnalysis().fit(X, y)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = ci.RiskScore(X.iloc[:2])
    >>> caught[0].category.__name__
    'DeprecationWarning'
    >>> res = ci.influence(est, X, y=y, target=old, method="vif")
    >>> res.loo_change.head(3).round(4)
       risk[0]  risk[1]
    0  -0.0466  -0.0290
    1   0.0318   0.0064
    2   0.0060  -0.0167
""")

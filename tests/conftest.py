import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

sys.path.insert(0, str(Path(__file__).parent))

# Tests never download (a fresh clone without the paper's data and without network must
# pass, skipping the data tests): coxinfluence.datasets honours this, and subprocesses
# (paper_appendix scripts, notebooks) inherit it. The one test of the download path
# replaces the fetch function and removes the variable itself.
os.environ["COXINFLUENCE_NO_DOWNLOAD"] = "1"


def deepsurv_dir(names=("metabric", "support")):
    """The folder holding the paper's DeepSurv CSVs ``names``: only ``$COXINFLUENCE_DATA``
    when it is set (the CSVs in it or in its ``deepsurv/`` sub-folder), as for the
    paper_appendix scripts; else where ``coxinfluence.datasets`` looks (its cache, then
    ../shared/data/deepsurv beside the checkout). Never downloads; FileNotFoundError naming
    the places looked at."""
    env = os.environ.get("COXINFLUENCE_DATA") or None
    folders = {ci.datasets.find_deepsurv_file(name, path=env).parent for name in names}
    if len(folders) != 1:
        raise FileNotFoundError(f"DeepSurv CSVs {list(names)} found in different folders "
                                f"{sorted(map(str, folders))}")
    return folders.pop()


def tied_data(seed, n=80, d=3, n_times=12, strata=True, weights=True):
    """Simulated Cox data with many ties (integer times), strata and non-integer weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, -1] = rng.integers(0, 2, size=n)
    t = np.ceil(n_times * rng.exponential(size=n) * np.exp(-0.4 * X[:, 0]) / 2)
    e = (rng.uniform(size=n) < 0.7).astype(float)
    e[0] = 1.0
    w = rng.uniform(0.5, 2.0, size=n) if weights else None
    s = rng.integers(0, 3, size=n) if strata else None
    return X, t, e, w, s


def vif_by_definition(fit, X, t, e, w, s, ties):
    """-(H/n)^{-1} (grad L(all) - grad L(row i deleted)), literally deleting each row."""
    n = len(t)
    g_all = ci.cox_gradient(fit.coef, X, t, e, weights=w, strata=s, ties=ties)
    diffs = []
    for i in range(n):
        keep = np.arange(n) != i
        g_i = ci.cox_gradient(fit.coef, X[keep], t[keep], e[keep],
                              weights=None if w is None else w[keep],
                              strata=None if s is None else s[keep], ties=ties)
        diffs.append(g_all - g_i)
    return -n * np.linalg.solve(fit.information, np.array(diffs).T).T


@pytest.fixture(scope="session")
def shared_data_dir():
    """The DeepSurv METABRIC and SUPPORT CSVs' folder (:func:`deepsurv_dir`), or skip with
    the reason (see the README's test paragraph for how to get the data)."""
    try:
        return deepsurv_dir()
    except FileNotFoundError as exc:
        pytest.skip(f"the paper's DeepSurv data is not available (set COXINFLUENCE_DATA): {exc}")


# R reference numbers for the integration and target tests (tests/r/integration_reference.R)
INTEGRATION_FIXTURES = Path(__file__).parent / "fixtures" / "integration"


@pytest.fixture(scope="session")
def gbsg():
    return pd.read_csv(INTEGRATION_FIXTURES / "gbsg2_subset.csv", index_col="pid")


@pytest.fixture(scope="session")
def ref():
    return pd.read_csv(INTEGRATION_FIXTURES / "reference.csv")


def r_matrix(ref, config, quantity):
    r = ref[(ref.config == config) & (ref.quantity == quantity)]
    return r.pivot(index="row", columns="col", values="value").to_numpy()


def pytest_report_header(config):
    """The versions this environment resolved (issue 44: CI builds a new one each run, and
    a reference value must not depend on them): printed at the top of every run."""
    from importlib.metadata import PackageNotFoundError, version

    def of(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "absent"
    names = ("numpy", "scipy", "pandas", "lifelines", "statsmodels", "scikit-survival", "jax")
    return "resolved: " + ", ".join(f"{n} {of(n)}" for n in names)


def pytest_collection_modifyitems(config, items):
    """A live comparison with R (``needs_r``) is also ``slow``: the README's command
    (``-m "not slow"`` in pyproject's addopts) leaves them out, ``.ci/run`` runs them with
    ``python -m pytest -q -m slow``."""
    for item in items:
        if item.get_closest_marker("needs_r") is not None:
            item.add_marker(pytest.mark.slow)

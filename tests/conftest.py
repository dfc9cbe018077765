import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coxinfluence as ci

sys.path.insert(0, str(Path(__file__).parent))

SHARED_DATA = Path(os.environ.get("COXINFLUENCE_DATA",
                                  Path(__file__).resolve().parents[1].parent / "shared" / "data"))


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
    path = SHARED_DATA / "deepsurv"
    if not (path / "metabric.csv").is_file():
        pytest.skip(f"shared DeepSurv data not found at {path} (set COXINFLUENCE_DATA)")
    return path


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

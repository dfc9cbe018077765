import os
import sys
from pathlib import Path

import numpy as np
import pytest

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


@pytest.fixture(scope="session")
def shared_data_dir():
    path = SHARED_DATA / "deepsurv"
    if not (path / "metabric.csv").is_file():
        pytest.skip(f"shared DeepSurv data not found at {path} (set COXINFLUENCE_DATA)")
    return path

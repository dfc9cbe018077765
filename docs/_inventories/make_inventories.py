"""Write the intersphinx inventories of docs/conf.py (``objects.inv`` format, version 2).

The build runs offline, so the inventories of numpy, scipy, pandas, lifelines and
scikit-learn are stored here. None of the installed packages ships its ``objects.inv``
(their sites do; Debian's ``python-*-doc`` packages do for some, not numpy or lifelines),
so these are minimal inventories, written by this script, of the names the site links to
and those a page on survival data is likely to: each entry's address follows its
project's published layout. Add a name here and rerun
(``python docs/_inventories/make_inventories.py``) when a page links to a new one.
"""
from __future__ import annotations

import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

# project: (version, [(name, role, uri)]); "$" in a uri stands for the name (Sphinx's rule)
PROJECTS = {
    "numpy": ("2", [
        ("numpy.ndarray", "py:class", "reference/generated/numpy.ndarray.html#$"),
        ("numpy.dtype", "py:class", "reference/generated/numpy.dtype.html#$"),
        ("numpy.float64", "py:attribute", "reference/arrays.scalars.html#$"),
        ("numpy.random.Generator", "py:class", "reference/random/generator.html#$"),
        ("numpy.random.default_rng", "py:function", "reference/random/generator.html#$"),
        ("numpy.random.SeedSequence", "py:class",
         "reference/random/bit_generators/generated/numpy.random.SeedSequence.html#$"),
        ("numpy.asarray", "py:function", "reference/generated/numpy.asarray.html#$"),
        ("numpy.linalg.solve", "py:function", "reference/generated/numpy.linalg.solve.html#$"),
        ("numpy.linalg.LinAlgError", "py:exception",
         "reference/generated/numpy.linalg.LinAlgError.html#$"),
    ]),
    "scipy": ("1", [
        ("scipy.optimize.minimize", "py:function",
         "reference/generated/scipy.optimize.minimize.html#$"),
        ("scipy.optimize.OptimizeResult", "py:class",
         "reference/generated/scipy.optimize.OptimizeResult.html#$"),
        ("scipy.stats.chi2", "py:data", "reference/generated/scipy.stats.chi2.html#$"),
        ("scipy.stats.norm", "py:data", "reference/generated/scipy.stats.norm.html#$"),
        ("scipy.sparse.csr_matrix", "py:class",
         "reference/generated/scipy.sparse.csr_matrix.html#$"),
        ("scipy.linalg.cho_factor", "py:function",
         "reference/generated/scipy.linalg.cho_factor.html#$"),
        ("scipy.linalg.cho_solve", "py:function",
         "reference/generated/scipy.linalg.cho_solve.html#$"),
    ]),
    "pandas": ("2", [
        ("pandas.DataFrame", "py:class", "reference/api/pandas.DataFrame.html#$"),
        ("pandas.Series", "py:class", "reference/api/pandas.Series.html#$"),
        ("pandas.Index", "py:class", "reference/api/pandas.Index.html#$"),
        ("pandas.DataFrame.groupby", "py:method",
         "reference/api/pandas.DataFrame.groupby.html#$"),
        ("pandas.read_csv", "py:function", "reference/api/pandas.read_csv.html#$"),
    ]),
    "lifelines": ("0.30", [
        ("lifelines.CoxPHFitter", "py:class", "fitters/regression/CoxPHFitter.html#$"),
        ("lifelines.WeibullAFTFitter", "py:class",
         "fitters/regression/WeibullAFTFitter.html#$"),
        ("lifelines.LogNormalAFTFitter", "py:class",
         "fitters/regression/LogNormalAFTFitter.html#$"),
        ("lifelines.LogLogisticAFTFitter", "py:class",
         "fitters/regression/LogLogisticAFTFitter.html#$"),
        ("lifelines.KaplanMeierFitter", "py:class",
         "fitters/univariate/KaplanMeierFitter.html#$"),
    ]),
    "sklearn": ("1", [
        ("sklearn.base.BaseEstimator", "py:class",
         "modules/generated/sklearn.base.BaseEstimator.html#$"),
        ("sklearn.pipeline.Pipeline", "py:class",
         "modules/generated/sklearn.pipeline.Pipeline.html#$"),
        ("sklearn.model_selection.train_test_split", "py:function",
         "modules/generated/sklearn.model_selection.train_test_split.html#$"),
        ("sklearn.preprocessing.StandardScaler", "py:class",
         "modules/generated/sklearn.preprocessing.StandardScaler.html#$"),
    ]),
}


def write(project: str, version: str, entries) -> Path:
    head = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: {version}\n"
            "# The remainder of this file is compressed using zlib.\n")
    body = "".join(f"{name} {role} 1 {uri} -\n" for name, role, uri in entries)
    path = HERE / f"{project}.inv"
    path.write_bytes(head.encode() + zlib.compress(body.encode()))
    return path


if __name__ == "__main__":
    for project, (version, entries) in PROJECTS.items():
        print(write(project, version, entries))

"""The documentation site (``docs/``, issue 36) stays complete and its links true, without
building it (the build, ``sphinx-build -W``, runs in ``.ci/run``: about two minutes).

- Every name of ``coxinfluence.__all__`` is listed in an autosummary table of
  ``docs/api.rst`` (so the build generates its API page), and every listed name exists;
  where Sphinx is installed, ``sphinx-autogen`` with the site's templates writes a page
  for each, and the page of each public class documents each of its public methods.
- README.md is one page: at most 150 lines, ``ci.influence(`` in its first 80.
- No page links to a file that does not exist: Markdown links, ``{doc}`` roles, toctree
  entries, the README's links; every ``tests/...py::test_name`` and repository path that
  a page names exists (the validation page names the test of each oracle).
"""
from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import coxinfluence as ci

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = DOCS / "api.rst"
SOURCE_SUFFIXES = (".md", ".rst", ".ipynb")
# files the build writes into the site's root (docs/conf.py: the report of the main job)
BUILD_EXTRAS = {"demo_report.html"}


def pages():
    """The site's source pages (the R recipes in docs/r are not pages)."""
    return sorted(p for p in DOCS.rglob("*") if p.suffix in (".md", ".rst")
                  and "_build" not in p.parts and "generated" not in p.parts
                  and "_generated" not in p.parts and "_templates" not in p.parts
                  and p.parent.name != "r")


def api_entries():
    """{name: currentmodule} of every entry of docs/api.rst's autosummary tables."""
    entries, module, lines = {}, None, API.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\.\. currentmodule:: (\S+)", line)
        if m:
            module = m.group(1)
        if line.startswith(".. autosummary::"):
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("   ")):
                item = lines[i].strip()
                if item and not item.startswith(":"):
                    entries[item] = module
                i += 1
            continue
        i += 1
    return entries


def test_every_public_name_has_an_api_page_source():
    entries = api_entries()
    listed = {name for name, module in entries.items() if module == "coxinfluence"}
    missing = sorted(set(ci.__all__) - listed)
    assert not missing, f"docs/api.rst lists no API page for {missing}"
    for name in entries:
        obj = ci
        for part in name.split("."):
            if inspect.ismodule(obj) and not hasattr(obj, part):
                __import__(f"{obj.__name__}.{part}")
            obj = getattr(obj, part)
        assert obj is not None, name


def _public_methods(cls):
    """The public methods of a class of ours (not inherited from builtins)."""
    out = []
    for attr in dir(cls):
        if attr.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, attr)
        if isinstance(raw, (staticmethod, classmethod)):
            raw = raw.__func__
        if inspect.isfunction(raw) and (raw.__module__ or "").startswith("coxinfluence"):
            out.append(attr)
    return out


def test_autosummary_writes_a_page_per_name_and_lists_each_method(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra (pip install -e '.[docs]') has Sphinx")
    # autosummary's own generation with the site's configuration (docs/conf.py: templates,
    # a module page lists its __all__), in a fresh process: conf.py sets environment
    # variables for the notebooks that the test session must not inherit
    script = (
        "import sys\n"
        "from sphinx.application import Sphinx\n"
        "from sphinx.ext.autosummary.generate import generate_autosummary_docs\n"
        "docs, out = sys.argv[1], sys.argv[2]\n"
        "app = Sphinx(docs, docs, out + '/html', out + '/doctrees', 'dummy', status=None,\n"
        "             confoverrides={'autosummary_generate': False})\n"
        "generate_autosummary_docs([docs + '/api.rst'], output_dir=out + '/gen', app=app)\n")
    run = subprocess.run([sys.executable, "-c", script, str(DOCS), str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    tmp_path = tmp_path / "gen"
    written = {p.stem for p in tmp_path.glob("*.rst")}
    for name in ci.__all__:
        assert f"coxinfluence.{name}" in written, f"no API page for {name}"
    for name in ci.__all__:
        obj = getattr(ci, name)
        if not inspect.isclass(obj) or issubclass(obj, BaseException):
            continue
        text = (tmp_path / f"coxinfluence.{name}.rst").read_text()
        if ".. py:class::" in text:       # an alias page: its methods are on the targets' page
            text = (tmp_path / f"coxinfluence.targets.{name}.rst").read_text()
        for method in _public_methods(obj):
            assert re.search(rf"\.\. automethod:: {method}\b", text), (name, method)


def test_readme_is_one_page_with_influence_early():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines"
    assert any("ci.influence(" in line for line in lines[:80])


def _exists(base: Path, target: str) -> bool:
    """A link target relative to ``base`` (a page's folder): a file, or a page whose
    source has one of the site's suffixes (the gallery's pages are copies of notebooks/)."""
    target = target.split("#")[0]
    if not target:
        return True
    path = (DOCS / target.lstrip("/")) if target.startswith("/") else (base / target)
    path = path.resolve()
    if path.exists() or path.name in BUILD_EXTRAS:
        return True
    if any(path.with_suffix(s).exists() or Path(str(path) + s).exists()
           for s in SOURCE_SUFFIXES):
        return True
    if path.parent.name == "_generated" and path.parent.parent.name == "gallery":
        return (ROOT / "notebooks" / (path.stem + ".ipynb")).exists()
    return False


def _links(text):
    """Targets of Markdown links, {doc} roles, toctree entries and raw hrefs."""
    text = re.sub(r"```(?!\{toctree\}).*?```", "", text, flags=re.S)    # code blocks
    out = re.findall(r"\]\(([^)\s]+)\)", text)
    out += [m.split("<")[-1].rstrip(">") for m in re.findall(r"\{doc\}`([^`]+)`", text)]
    out += re.findall(r'href="([^"]+)"', text)
    for block in re.findall(r"```\{toctree\}\n(.*?)```", text, re.S):
        out += [ln.strip() for ln in block.splitlines()
                if ln.strip() and not ln.strip().startswith(":")]
    for block in re.findall(r"\.\. toctree::\n((?:\s+.*\n)*)", text):
        out += [ln.strip() for ln in block.splitlines()
                if ln.strip() and not ln.strip().startswith(":")]
    return [t for t in out if not re.match(r"^[a-z]+:", t) and not t.startswith("#")]


def test_no_page_links_to_a_missing_file():
    broken = []
    for page in pages() + [ROOT / "README.md"]:
        for target in _links(page.read_text()):
            if not _exists(page.parent, target):
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, "links to missing files:\n" + "\n".join(broken)


def _test_names(path: Path):
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_named_tests_and_repository_paths_exist():
    """``tests/test_x.py::test_y`` and paths such as ``paper_appendix/bench_scale.py`` that a
    page names in code spans exist (the validation page names the test of each oracle)."""
    missing = []
    for page in pages():
        text = page.read_text()
        for path, name in re.findall(r"(tests/[\w/]+\.py)::(\w+)", text):
            if not (ROOT / path).exists() or name not in _test_names(ROOT / path):
                missing.append(f"{page.name}: {path}::{name}")
        for path in re.findall(r"`((?:coxinfluence|tests|paper_appendix|notebooks|docs)/"
                               r"[\w/.-]+\.(?:py|md|R|ipynb|rst))(?:::\w+)?`", text):
            if not (ROOT / path).exists():
                missing.append(f"{page.name}: {path}")
    assert not missing, "pages name what does not exist:\n" + "\n".join(missing)


def test_validation_page_names_a_test_for_every_oracle():
    text = (DOCS / "validation.md").read_text()
    for oracle in ("R's `survival`", "R's `survreg`", "R's `cmprsk`", "scikit-survival",
                   "lifelines", "Exact refits"):
        section = text.split(f"## {oracle}")
        assert len(section) == 2, f"no section for {oracle}"
        assert re.search(r"tests/test_\w+\.py", section[1].split("\n## ")[0]), oracle


# -- issue 45: typeset mathematics served offline, checked references, the new pages -----

def _conf_text():
    return (DOCS / "conf.py").read_text()


def test_mathjax_is_served_from_the_site():
    """MathJax is loaded from the built site (``_static/mathjax``), never from a CDN, and
    the files conf.py copies into the build exist where ``.ci/run`` installs them."""
    conf = _conf_text()
    assert '"sphinx.ext.mathjax"' in conf
    path = re.search(r'^mathjax_path = "([^"]+)"', conf, re.M).group(1)
    assert not re.match(r"^[a-z]+://", path), path
    assert path.split("?")[0] == "mathjax/MathJax.js"
    assert "html_static_path: list[str] = [str(_mathjax_static())]" in conf
    assert "libjs-mathjax" in (ROOT / ".ci" / "run").read_text()
    source = Path(re.search(r'"COXINFLUENCE_MATHJAX", "([^"]+)"', conf).group(1))
    if not (source / "MathJax.js").exists():
        pytest.skip("Debian's libjs-mathjax is not installed here (.ci/run installs it)")
    for part in ("MathJax.js", "config/TeX-AMS_CHTML.js", "jax/output/CommonHTML/jax.js",
                 "jax/input/TeX/config.js", "fonts/HTML-CSS/TeX/woff/MathJax_Main-Regular.woff"):
        assert (source / part).exists(), part
    built = DOCS / "_build" / "html" / "_static" / "mathjax" / "MathJax.js"
    if built.exists():
        assert built.read_bytes() == (source / "MathJax.js").read_bytes()


def test_references_are_checked_and_inventories_stored():
    conf = _conf_text()
    assert re.search(r"^nitpicky = True", conf, re.M)
    run = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"sphinx-build -W -n --keep-going", run)
    for project in ("numpy", "scipy", "pandas", "lifelines", "sklearn"):
        inv = DOCS / "_inventories" / f"{project}.inv"
        assert inv.read_bytes().startswith(b"# Sphinx inventory version 2"), project
        assert f'"{project}": (' in conf, project


def test_formulas_are_math_not_code():
    """The most read formulas are typeset: ``ci.influence``'s Notes (no literal block), the
    VIF's and Reid's IF's docstrings, the conventions page and the audit guide."""
    notes = ci.influence.__doc__.split("Notes\n")[1].split("Examples\n")[0]
    assert ":math:`" in notes and "::\n" not in notes.replace(".. math::\n", "")
    assert ".. math::" in ci.vif.__doc__ and "\\mathrm{VIF}_n(g)" in ci.vif.__doc__
    assert ":math:`\\mathrm{IF}_n(g)`" in ci.reid_influence.__doc__
    for page in ("conventions.md", "user_guide/audit.md", "choosing_a_method.md"):
        text = (DOCS / page).read_text()
        assert "\\hat\\theta" in text, page
        assert "`theta_hat_{-g} - theta_hat`" not in text, page


def test_new_pages_are_in_the_toctree_and_the_losses_have_a_page():
    index = (DOCS / "index.md").read_text()
    toctree = re.search(r"```\{toctree\}\n(.*?)```", index, re.S).group(1).split()
    for page in ("install", "choosing_a_method"):
        assert page in toctree and (DOCS / f"{page}.md").exists(), page
    assert api_entries().get("autodiff.losses") == "coxinfluence"
    assert "TopNotVerifiedWarning" in ci.__all__
    assert api_entries().get("TopNotVerifiedWarning") == "coxinfluence"


def test_choosing_a_method_quotes_results_md():
    """Every measured number of the page is in paper_appendix/RESULTS.md, under the
    sections it names."""
    text = (DOCS / "choosing_a_method.md").read_text()
    results = (ROOT / "paper_appendix" / "RESULTS.md").read_text()
    for section in re.findall(r'section "([^"]+)"', text):
        section = " ".join(section.split())
        assert f"## {section}" in results or f"### {section}" in results, section
    for number in ("0.999844", "0.999735", "0.999974", "median 3.1x", "median 7x",
                   "median 24, max 60", "1.2% on the 15 data sets", "| 0.1451 |",
                   "| 1.5230 |", "| 0.0080 |", "| 0.0204 |", "| 0.0008 |", "| 0.0120 |",
                   "0.146", "0.468", "0.0135", "0.343", "0.794", "| -1.003 |",
                   "in order on 39/41", "in order on 8/41", "| 186 |"):
        assert number in results, number

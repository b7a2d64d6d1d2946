"""The documentation site builds with MkDocs in strict mode, as ``scripts/docs.sh`` builds it.

A broken link or anchor, a page left out of the navigation, or a docstring griffe cannot parse
is a warning, and strict mode turns every warning into a failed build. The API reference must
show the public names (``__all__``) of the modules it documents, and no private name.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI, ROOT

__all__: list[str] = []

MKDOCS = Path(sys.executable).with_name("mkdocs")

#: Pages of the API reference and, for each, names its HTML must carry as anchors: the whole
#: ``__all__`` where a page renders a package (gx, report), the entry points elsewhere.
API_ANCHORS: dict[str, tuple[str, ...]] = {
    "engine": (
        "reident_airflow.engine.assessment.assess",
        "reident_airflow.engine.assessment.Assessment",
        "reident_airflow.engine.options.AssessmentOptions",
        "reident_airflow.engine.options.Thresholds",
        "reident_airflow.engine.errors.ReidentError",
        "reident_airflow.engine.presets.PRESETS",
        "reident_airflow.engine.advice.breach_advice",
    ),
    "sources": (
        "reident_airflow.sources.files.histogram_from_file",
        "reident_airflow.sources.sql.histogram_from_sql",
        "reident_airflow.sources.tables.read_compared_frame",
        "reident_airflow.sources.spark.assess_spark_frame",
    ),
    "operators": (
        "reident_airflow.operators.risk.ReidentificationRiskOperator",
        "reident_airflow.operators.direct_match.DirectMatchProtectionOperator",
        "reident_airflow.operators.datafly.DataflyOperator",
        "reident_airflow.outcomes.ReidentificationBreach",
        "reident_airflow.operators.report_link.ReidentReportLink",
        "reident_airflow.operators.lineage.operator_lineage",
    ),
    "notifiers": ("reident_airflow.notifiers.breach.ReidentBreachNotifier",),
}


def _mkdocs_available() -> bool:
    return MKDOCS.exists() and importlib.util.find_spec("mkdocstrings_handlers") is not None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _mkdocs_available():
        if IN_CI:
            pytest.fail("mkdocs and mkdocstrings[python] must be installed under CI")
        pytest.skip("mkdocs / mkdocstrings[python] not installed")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "docs.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"strict MkDocs build failed:\n{done.stderr[-4000:]}"
    return out


def _anchors(page: Path) -> set[str]:
    return set(re.findall(r'id="(reident_airflow[^"]*)"', page.read_text(encoding="utf-8")))


def test_strict_build_writes_every_page(site: Path) -> None:
    for page in (
        "index.html",
        "install/index.html",
        "guides/scheduled-release/index.html",
        "guides/existing-dag/index.html",
        "guides/alerts/index.html",
        "metrics/index.html",
        "contract/index.html",
        "reading/index.html",
        "architecture/index.html",
        "spark/index.html",
    ):
        assert (site / page).is_file(), page


@pytest.mark.parametrize("page", sorted(API_ANCHORS))
def test_api_page_documents_its_entry_points(site: Path, page: str) -> None:
    anchors = _anchors(site / "api" / page / "index.html")
    missing = [name for name in API_ANCHORS[page] if name not in anchors]
    assert not missing, f"api/{page}: not documented: {missing}"


@pytest.mark.parametrize("package", ["gx", "report"])
def test_api_page_shows_exactly_the_public_names(site: Path, package: str) -> None:
    import griffe

    # read statically, as mkdocstrings does: importing reident_airflow.gx would load GE
    module = griffe.load(f"reident_airflow.{package}", search_paths=[str(ROOT)])
    public = set(module.exports or ())
    callables = {name for name in public if module[name].kind.value in ("class", "function")}
    prefix = f"reident_airflow.{package}."
    names = {a[len(prefix) :] for a in _anchors(site / "api" / package / "index.html")}
    top = {name for name in names if a_name(name)}
    assert top <= public, f"not in __all__: {sorted(top - public)}"
    assert callables <= top, f"not documented: {sorted(callables - top)}"


def a_name(anchor: str) -> bool:
    """A module-level name (``Foo``), not a member (``Foo.bar``)."""
    return bool(anchor) and "." not in anchor


def test_no_private_name_in_the_api_reference(site: Path) -> None:
    for page in (site / "api").glob("*/index.html"):
        private = [a for a in _anchors(page) if any(p.startswith("_") for p in a.split("."))]
        assert not private, f"{page.parent.name}: {sorted(private)}"


def test_sphinx_markup_is_rendered(site: Path) -> None:
    """docs/api/griffe_sphinx_markup.py turns the docstrings' Sphinx markup into Markdown."""
    pages = {
        p.parent.name: p.read_text(encoding="utf-8") for p in (site / "api").glob("*/index.html")
    }
    for name, text in pages.items():
        raw = re.findall(r":(?:class|func|meth|mod|data|attr|exc|pep):`", text)
        assert not raw, f"api/{name}: Sphinx roles left as text: {raw[:3]}"
        assert "code-block::" not in text and "<autoref" not in text, name
    # a role naming a documented object is a link to its entry (the operator's docstring
    # names ReidentificationBreach, documented on the same page)
    assert 'href="#reident_airflow.outcomes.ReidentificationBreach"' in pages["operators"]
    # a docstring's "docs/metrics.md §6" is a link to that section of the site
    assert 'href="../../metrics/#6-individual-risk-and-special-uniques"' in pages["operators"]
    # a `#:` comment above a constant is its docstring, so the constant is documented
    assert 'id="reident_airflow.gx.MEASURES"' in pages["gx"]


@pytest.fixture(scope="module")
def package() -> Any:
    """The package as griffe reads it (statically: no import of Airflow or GE)."""
    import griffe

    return griffe.load("reident_airflow", search_paths=[str(ROOT)])


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S)


@pytest.mark.parametrize(
    "page", sorted((ROOT / "docs" / "guides").glob("*.md")), ids=lambda p: p.name
)
def test_guide_snippets_compile_and_name_real_objects(page: Path, package: Any) -> None:
    """Every Python block of a guide is valid Python, and what it imports from this package
    exists (the guides' DAGs themselves were run when written; this keeps them in step)."""
    blocks = _python_blocks(page)
    assert blocks, f"{page.name}: no Python example"
    for block in blocks:
        tree = ast.parse(block, filename=page.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reident_"):
                module = package.modules_collection[node.module]
                for alias in node.names:
                    assert alias.name in module.members, f"{page.name}: {node.module}.{alias.name}"

"""docs/install.md states what pyproject.toml declares and what CI tests (constraints.txt),
and the provider's documentation link is the one the package declares, never a dead page."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest

from reident_airflow.get_provider_info import documentation_url, get_provider_info
from tests.conftest import ROOT

INSTALL = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PINS = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M))


def _table_rows(heading: str) -> list[list[str]]:
    """The body rows of the first table under ``## heading``, as lists of cell texts."""
    section = INSTALL.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _pin(name: str) -> str:
    canonical = {re.sub(r"[-_.]+", "-", k).lower(): v for k, v in PINS.items()}
    return canonical[re.sub(r"[-_.]+", "-", name).lower()]


def test_the_extras_table_is_pyprojects() -> None:
    declared = PYPROJECT["project"]["optional-dependencies"]
    documented = {
        row[0].strip("`"): re.findall(r"`([^`]+)`", row[1]) for row in _table_rows("Extras")
    }
    assert list(documented) == list(declared)
    for extra, requirements in declared.items():
        assert documented[extra] == requirements, extra


#: The rows of "Supported versions": the requirement each declared range is read from.
RANGES = {
    "Apache Airflow": ("airflow", "apache-airflow"),
    "Great Expectations": ("gx", "great-expectations"),
    "DuckDB": (None, "duckdb"),
    "pandas": (None, "pandas"),
    "SQLAlchemy": (None, "sqlalchemy"),
}


def _declared(extra: str | None, name: str) -> str:
    project = PYPROJECT["project"]
    requirements = project["optional-dependencies"][extra] if extra else project["dependencies"]
    [spec] = [r[len(name) :] for r in requirements if re.match(rf"{re.escape(name)}[<>=!~]", r)]
    return spec


def test_the_supported_versions_are_declared_and_pinned() -> None:
    rows = {row[0]: (row[1].strip("`"), row[2]) for row in _table_rows("Supported versions")}
    assert rows["Python"][0] == PYPROJECT["project"]["requires-python"]
    assert rows["Python"][1] == "3.11"  # CI's interpreter (scripts/setup.sh, .venv)
    for label, (extra, name) in RANGES.items():
        declared, tested = rows[label]
        assert declared == _declared(extra, name), label
        assert tested == _pin(name), label
    assert set(rows) == {"Python", *RANGES}


def test_no_page_claims_a_single_airflow_minor() -> None:
    # the operators are declared for Airflow >=3.0,<3.4, not "for Airflow 3.3"
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    claims = [
        p.relative_to(ROOT).as_posix()
        for p in pages
        if re.search(r"for Airflow 3\.\d\b", p.read_text(encoding="utf-8"))
    ]
    assert not claims


def test_the_provider_links_the_declared_documentation(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata as md

    class Meta:
        def __init__(self, urls: list[str]) -> None:
            self.urls = urls

        def get_all(self, key: str) -> list[str] | None:
            return self.urls if key == "Project-URL" else None

    urls = ["Source, https://code.example.org/reident", "Documentation, https://d.example.org/"]
    monkeypatch.setattr(md, "metadata", lambda name: Meta(urls))
    [integration] = get_provider_info()["integrations"]
    assert integration["external-doc-url"] == "https://d.example.org/"

    # no Documentation URL declared: no link at all, rather than a page that does not exist
    monkeypatch.setattr(md, "metadata", lambda name: Meta(urls[:1]))
    assert documentation_url() is None
    [integration] = get_provider_info()["integrations"]
    assert "external-doc-url" not in integration


def test_the_provider_info_passes_airflows_schema() -> None:
    pytest.importorskip("airflow")
    import json
    from importlib.resources import files

    import jsonschema

    schema = json.loads(files("airflow").joinpath("provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)


#: The rows of "Oldest supported versions" and the requirement each floor is read from.
FLOORS = {
    "Apache Airflow": RANGES["Apache Airflow"],
    "Great Expectations": RANGES["Great Expectations"],
}


def test_the_documented_floors_are_pyprojects_lower_bounds() -> None:
    rows = {row[0]: (row[1], row[2]) for row in _table_rows("Oldest supported versions")}
    assert set(rows) == set(FLOORS)
    for label, (extra, name) in FLOORS.items():
        floor, why = rows[label]
        [lower] = re.findall(r">=([0-9.]+)", _declared(extra, name))
        assert floor == lower, label
        assert why, label  # a floor without its reason is not documented
    # by hand (issue 29): apache-airflow-core 3.0.6 requires sqlalchemy<2.0, 3.1.0 does not
    assert rows["Apache Airflow"][0] == "3.1"


def test_the_documentation_url_is_the_docs_sites_and_the_providers() -> None:
    # one URL in three places: [project.urls] Documentation, mkdocs.yml's site_url (the site
    # built from docs/) and the installed metadata the provider links (get_provider_info);
    # none declared (no host is known yet) means no link at all, never a page that is missing
    declared = PYPROJECT["project"].get("urls", {}).get("Documentation")
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    site = re.search(r"^site_url:\s*(\S+)\s*$", mkdocs, re.M)
    assert declared == (site.group(1) if site else None)
    assert documentation_url() == declared
    [integration] = get_provider_info()["integrations"]
    assert integration.get("external-doc-url") == declared
    if declared is not None:
        assert declared.startswith("https://") and declared.endswith("/")
        assert (ROOT / "docs" / "index.md").is_file()  # the page the site's root serves


def _getting_started() -> str:
    return INSTALL.split("\n## Getting started for pip users\n", 1)[1].split("\n## ", 1)[0]


def test_getting_started_says_where_the_files_beyond_the_wheel_come_from() -> None:
    # issue 42 item 6: the steps used constraints.txt and dags/release_gate.py, which the
    # wheel does not ship, without saying where they come from
    section = _getting_started()
    steps = section.split("```bash", 1)[1].split("```", 1)[0]
    for path in ("constraints.txt", "dags/release_gate.py"):
        assert f"show v<version>:{path}" in steps, path
        assert (ROOT / path).is_file(), path
    # the release attaches them, as the page says
    releasing = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "`constraints.txt` and `dags/release_gate.py`" in releasing


def test_getting_started_names_the_postgres_provider_for_common_sql() -> None:
    section = " ".join(_getting_started().split())
    assert "common.sql" in section
    assert "pip install apache-airflow-providers-postgres" in section


def test_the_gx_range_is_the_versions_tested() -> None:
    # issue 42 item 6: GX was pinned to 1.24.x; the range now reaches down to the oldest GX
    # the suite passed on (by hand, named in the floor's row) and no further
    rows = {row[0]: row[2] for row in _table_rows("Oldest supported versions")}
    why = rows["Great Expectations"]
    passed = re.findall(r"(1\.\d+\.\d+) passed", why)
    failed = re.findall(r"(1\.\d+\.\d+) failed", why)
    assert passed and failed, why
    [lower] = re.findall(r">=([0-9.]+)", _declared("gx", "great-expectations"))
    oldest = min(passed, key=lambda v: tuple(map(int, v.split("."))))
    assert oldest.rsplit(".", 1)[0] == lower
    for version in failed:
        assert tuple(map(int, version.split("."))) < tuple(map(int, lower.split("."))), version
    assert _pin("great-expectations").startswith("1.24.")  # the newest on PyPI, tested in CI

"""Any suite holding a reident expectation fails closed, however it was built (issue 29).

The scenario of the issue: a suite built in code with ``suite.add_expectation`` (three core
expectations, four reident ones), saved to a file context with a checkpoint over a table in
which every record is unique (k = 1), then run by a fresh interpreter that never imported
``reident_airflow.gx``. GE 1.24 drops the four reident expectations it does not know, so the
checkpoint evaluated 3 of 7 and reported success. Every way of building the suite is tried:
``add_expectation`` on a saved suite and on a suite saved afterwards, ``ExpectationSuite(
expectations=[...])`` with expectation objects, a suite JSON written by hand without the
guard, and ``add_expectation_configuration``. The contexts are saved by this process (which
imports the package); a fresh interpreter runs each checkpoint, first without the package,
then with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import great_expectations as gx
import great_expectations.expectations as gxe
import pytest
from great_expectations.core.expectation_suite import ExpectationSuite
from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

from reident_airflow.gx import (
    ExpectTableReidentificationRiskToBeBelow,
    ExpectTableToBeKAnonymous,
    ExpectTableToBeLDiverse,
    ExpectTableToHoldNoDirectIdentifiers,
    is_guard,
)
from tests.conftest import ROOT

QIS = ["sex", "age", "race"]
#: every record unique on sex, age, race (k = 1); each diagnosis once (distinct l = 1)
UNIQUE = (
    "sex,age,race,diagnosis\n"
    "Male,30,White,flu\n"
    "Female,40,Black,asthma\n"
    "Male,50,Asian-Pac-Islander,gout\n"
)


def core() -> list[Any]:
    return [
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnToExist(column="sex"),
        gxe.ExpectColumnValuesToNotBeNull(column="age"),
    ]


def reident() -> list[Any]:
    return [
        ExpectTableToBeKAnonymous(quasi_identifiers=QIS, k=5),
        ExpectTableReidentificationRiskToBeBelow(
            quasi_identifiers=QIS, measure="prosecutor.highest_risk", max_value=0.2
        ),
        ExpectTableToBeLDiverse(quasi_identifiers=QIS, sensitive=["diagnosis"], min_l=2),
        ExpectTableToHoldNoDirectIdentifiers(quasi_identifiers=QIS, allow_columns=["diagnosis"]),
    ]


def _added_to_saved(context: Any) -> ExpectationSuite:
    """The issue's way: a suite saved empty, then ``suite.add_expectation`` one by one."""
    suite = context.suites.add(ExpectationSuite(name="release"))
    for expectation in [*core(), *reident()]:
        suite.add_expectation(expectation)
    return suite


def _added_then_saved(context: Any) -> ExpectationSuite:
    suite = ExpectationSuite(name="release")
    for expectation in [*core(), *reident()]:
        suite.add_expectation(expectation)
    return context.suites.add(suite)


def _constructed(context: Any) -> ExpectationSuite:
    return context.suites.add(ExpectationSuite(name="release", expectations=[*core(), *reident()]))


def _from_json(context: Any) -> ExpectationSuite:
    """A suite JSON written by hand, without the guard, read with the package imported."""
    entries = [e.configuration.to_json_dict() for e in [*core(), *reident()]]
    data = json.loads(json.dumps({"name": "release", "expectations": entries}))
    return context.suites.add(ExpectationSuite(**data))


def _configurations(context: Any) -> ExpectationSuite:
    suite = ExpectationSuite(name="release")
    suite.add_expectation_configurations(
        [ExpectationConfiguration(**e.configuration.to_json_dict()) for e in [*core(), *reident()]]
    )
    return context.suites.add(suite)


BUILDERS: dict[str, Callable[[Any], ExpectationSuite]] = {
    "added_to_saved": _added_to_saved,
    "added_then_saved": _added_then_saved,
    "constructed": _constructed,
    "from_json": _from_json,
    "configurations": _configurations,
}

SCRIPT = """
import json, sys
import great_expectations as gx


def run(root):
    context = gx.get_context(mode="file", project_root_dir=root)
    out = {"loaded": len(context.suites.get("release").expectations)}
    try:
        result = context.checkpoints.get("release_gate").run()
    except Exception as exc:
        out.update(success=None, error=type(exc).__name__)
    else:
        [validation] = result.run_results.values()
        out.update(success=result.success, evaluated=len(validation.results))
    out["reident_imported"] = "reident_airflow.gx" in sys.modules
    return out


roots = json.loads(sys.argv[1])
out = {"without": {name: run(root) for name, root in roots["without"].items()}}
import reident_airflow.gx
out["with"] = {name: run(root) for name, root in roots["with"].items()}
print(json.dumps(out))
"""


def save_context(root: Path, build: Callable[[Any], ExpectationSuite]) -> None:
    """A file context at ``root``: the suite ``build`` makes and a checkpoint on a k = 1 CSV."""
    root.mkdir(parents=True)
    (root / "release.csv").write_text(UNIQUE, encoding="utf-8")
    context = gx.get_context(mode="file", project_root_dir=str(root))
    suite = build(context)
    source = context.data_sources.add_pandas_filesystem("files", base_directory=root)
    batch = source.add_csv_asset("release").add_batch_definition_path("one", path="release.csv")
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name="release", data=batch, suite=suite)
    )
    context.checkpoints.add(gx.Checkpoint(name="release_gate", validation_definitions=[definition]))


@pytest.fixture(scope="module")
def fresh_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("any_suite")
    roots: dict[str, dict[str, str]] = {"without": {}, "with": {}}
    for phase in roots:
        for name, build in BUILDERS.items():
            root = folder / phase / name
            save_context(root, build)
            roots[phase][name] = str(root)
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", SCRIPT, json.dumps(roots)],
        capture_output=True,
        text=True,
        env={**os.environ, "GX_ANALYTICS_ENABLED": "false"},
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["folder"] = str(folder)
    return out


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_without_the_package_the_saved_suite_does_not_succeed(
    fresh_runs: dict[str, Any], name: str
) -> None:
    """The issue's scenario: without the fix GE evaluated the 3 core expectations, success."""
    out = fresh_runs["without"][name]
    assert out["reident_imported"] is False
    assert out["success"] is not True, out
    assert out == {
        "loaded": 4,  # the 3 core expectations and the guard; GE dropped the 4 reident ones
        "success": None,
        "error": "SuiteParameterError",
        "reident_imported": False,
    }


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_with_the_package_every_expectation_runs_and_fails(
    fresh_runs: dict[str, Any], name: str
) -> None:
    out = fresh_runs["with"][name]
    # 3 core + 4 reident + the guard; k = 1, l = 1 and the highest risk 1: the suite fails
    assert out == {"loaded": 8, "success": False, "evaluated": 8, "reident_imported": True}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_saved_suite_holds_the_guard_once(fresh_runs: dict[str, Any], name: str) -> None:
    saved = Path(fresh_runs["folder"], "without", name, "gx", "expectations", "release.json")
    entries = json.loads(saved.read_text(encoding="utf-8"))["expectations"]
    assert [is_guard(e) for e in entries].count(True) == 1
    assert len(entries) == 8


def test_a_core_suite_gets_no_guard() -> None:
    suite = ExpectationSuite(name="core", expectations=core())
    suite.add_expectation(gxe.ExpectColumnToExist(column="race"))
    assert not any(is_guard(e) for e in suite.expectations)

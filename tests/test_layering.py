"""The engine imports neither Airflow nor Great Expectations (style.md), and __all__ holds."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ENGINE_MODULES = [
    "reident_airflow.engine.errors",
    "reident_airflow.engine.classes",
    "reident_airflow.engine.sample",
    "reident_airflow.engine.attributes",
    "reident_airflow.engine.population",
    "reident_airflow.engine.register",
    "reident_airflow.engine.assessment",
]


def test_engine_pulls_in_neither_airflow_nor_gx() -> None:
    code = (
        "import sys, importlib\n"
        f"for m in {ENGINE_MODULES!r}: importlib.import_module(m)\n"
        "import reident_airflow.sources.files, reident_airflow.cli\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'airflow', 'great_expectations'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


WORKFLOW_MODULES = ["reident_airflow.workflows.assessment", "reident_airflow.workflows.advice"]


def test_workflows_pull_in_neither_airflow_nor_argparse() -> None:
    """The workflows serve the CLI, the operators, GX and the API alike (issue 39): importing
    them loads no Airflow, no Great Expectations, no argparse (and no pandas: a passing
    assessment reads no rows)."""
    code = (
        "import sys, importlib\n"
        f"for m in {WORKFLOW_MODULES!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'airflow', 'great_expectations', 'argparse', 'pandas'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("name", [*ENGINE_MODULES, *WORKFLOW_MODULES])
def test_exported_members_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        pytest.fail(f"{name} has no __all__")
    for member in exported:
        assert hasattr(module, member), f"{name}.__all__ names missing {member}"


_HEAVY = "{'pandas', 'scipy', 'pyarrow', 'pyspark', 'py4j'}"


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        (["--help"], set()),
        # the verdict without a population model: DuckDB counts, numpy computes, nothing else
        (["assess", "{csv}", "--qi", "a,b", "--no-ranking", "--json", "-"], set()),
        # Pitman, Zayatz and SNB need scipy's special functions, still not pandas
        (
            ["assess", "{csv}", "--qi", "a,b", "--no-ranking", "--region", "usa", "--json", "-"],
            {"scipy"},
        ),
    ],
    ids=["help", "verdict", "verdict-with-population"],
)
def test_the_command_line_loads_only_what_the_run_needs(
    tmp_path: Path, argv: list[str], allowed: set[str]
) -> None:
    csv = f"{tmp_path}/t.csv"
    with open(csv, "w", encoding="utf-8") as fh:
        fh.write("a,b\n1,2\n1,2\n3,4\n")
    args = [a.replace("{csv}", csv) for a in argv]
    code = (
        "import sys, io, contextlib\n"
        "from reident_airflow.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({args!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(','.join(sorted({{m.split('.')[0] for m in sys.modules}} & {_HEAVY})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {m for m in out.stdout.strip().split(",") if m}
    assert loaded <= allowed, f"{argv[0]} loaded {sorted(loaded - allowed)}"

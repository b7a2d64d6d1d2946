"""The engine imports neither Airflow nor Great Expectations (style.md), and __all__ holds."""

from __future__ import annotations

import importlib
import subprocess
import sys

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


@pytest.mark.parametrize("name", ENGINE_MODULES)
def test_exported_members_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        pytest.fail(f"{name} has no __all__")
    for member in exported:
        assert hasattr(module, member), f"{name}.__all__ names missing {member}"

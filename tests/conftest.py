"""Shared fixtures: where the reference data lives.

Reference numbers come from ``../shared/oracle`` (ARX 3.9.2, sdcMicro 5.8.0). The suite reads
them from there when the folder exists, and otherwise from the copies in ``tests/data``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"
SHARED_ORACLE = ROOT.parent / "shared" / "oracle"


def oracle_data(name: str) -> Path:
    """Path of a data file of ``../shared/oracle/data`` (or its copy in tests/data)."""
    shared = SHARED_ORACLE / "data" / name
    if shared.exists():
        return shared
    if name.startswith("adult_hierarchy_"):
        return TEST_DATA / "hierarchies" / name
    return TEST_DATA / name


def reference_files() -> list[Path]:
    """Every ARX reference file (``../shared/oracle/reference/arx_*.json`` or the copies)."""
    shared = sorted((SHARED_ORACLE / "reference").glob("arx_*.json"))
    return shared if shared else sorted((TEST_DATA / "arx").glob("arx_*.json"))


def load_reference(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


@pytest.fixture(scope="session")
def adult_csv() -> Path:
    return oracle_data("adult.csv")

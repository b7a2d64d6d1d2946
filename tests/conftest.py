"""Shared fixtures: where the reference data lives.

Reference numbers come from ``../shared/oracle`` (ARX 3.9.2, sdcMicro 5.8.0). The suite reads
them from there when the folder exists, and otherwise from the copies in ``tests/data``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"
SHARED_ORACLE = ROOT.parent / "shared" / "oracle"
IN_CI = os.environ.get("CI", "").lower() == "true"

# Airflow reads its configuration when first imported: give the whole test session its own
# AIRFLOW_HOME (SQLite metadata database), before any test module imports Airflow.
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="reident-airflow-home-"))
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")
_MIGRATED: list[bool] = []


def ensure_airflow_db() -> Path:
    """Create Airflow's metadata database once per session (``airflow db migrate``)."""
    if not _MIGRATED:
        airflow = Path(sys.executable).with_name("airflow")
        done = subprocess.run(
            [str(airflow), "db", "migrate"], capture_output=True, text=True, env=os.environ.copy()
        )
        if done.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed:\n{done.stderr[-2000:]}")
        _MIGRATED.append(True)
    return _AIRFLOW_HOME


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    return ensure_airflow_db()


def database_url(kind: str) -> str:
    return {
        "postgresql": "postgresql+psycopg2://postgres@127.0.0.1:5432/test",
        "mariadb": "mysql+pymysql://root@127.0.0.1:3306/test",
    }[kind]


@pytest.fixture(params=["postgresql", "mariadb"])
def server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A reachable database server; under CI=true an unreachable one fails the test."""
    yield require_server(request.param)


def require_server(kind: str) -> str:
    import sqlalchemy as sa

    url = database_url(kind)
    try:
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        engine.dispose()
    except Exception as exc:
        message = f"{kind} at {url.split('@')[1]} is not reachable ({type(exc).__name__})"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return url


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

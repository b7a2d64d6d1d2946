"""Shared fixtures: where the reference data lives, Airflow's home, the database servers.

Reference data and numbers (UCI Adult as shipped with ARX, ARX 3.9.2's results, sdcMicro
5.8.0's results) are files of ``tests/data``; ``tests/data/README.md`` says where each came
from. The suite reads nothing outside the repository.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"
IN_CI = os.environ.get("CI", "").lower() == "true"

# Airflow reads its configuration when first imported: give the whole test session its own
# AIRFLOW_HOME (SQLite metadata database), before any test module imports Airflow.
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="reident-airflow-home-"))
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")
_MIGRATED: list[bool] = []

# py4j logs "Closing down clientserver connection" from a destructor at interpreter exit, when
# pytest has already closed the stream it would write to ("--- Logging error ---")
logging.getLogger("py4j").setLevel(logging.WARNING)


#: The processes the collected modules' ``start_early()`` started.
_EARLY: list[subprocess.Popen[bytes]] = []
#: The Spark servers of tests/spark/sessions.py, by the fixture that waits for each.
_SPARK_SERVERS = ("connect_server", "thrift_server")


#: Fixtures that start or use Spark (tests/spark/sessions.py and its users).
_SPARK_FIXTURES = frozenset(
    {
        "spark",
        "classic_spark",
        "spark_connect",
        "connect_server",
        "thrift_server",
        "spark_conn",
        "connect_conn",
        "local_spark",
    }
)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by mark
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``spark`` every test that runs Spark: under tests/spark, in a module named after
    Spark, using a Spark fixture, in a module that starts a Spark process early, or named
    after Spark (parametrized over the Spark sessions)."""
    for item in items:
        module = getattr(item, "module", None)
        if (
            "spark" in Path(str(item.path)).parent.name
            or "spark" in Path(str(item.path)).stem
            or _SPARK_FIXTURES.intersection(getattr(item, "fixturenames", ()))
            or callable(getattr(module, "start_early", None))
            or "spark" in item.name.lower()
        ):
            item.add_marker(pytest.mark.spark)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start what the collected tests will wait for, so that it runs beside the tests before
    them: the Spark servers they use (their JVMs boot in 10-60 s; the fixtures wait for them)
    and the whole-process runs of modules that define ``start_early()``."""
    if session.config.option.collectonly:
        return
    modules = {id(item.module): item.module for item in session.items if hasattr(item, "module")}
    for module in modules.values():
        start = getattr(module, "start_early", None)
        if callable(start):
            _EARLY.append(start())
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    if not needed.intersection(_SPARK_SERVERS):
        return
    from tests.spark import sessions

    if "connect_server" in needed:
        sessions.connect()
    if "thrift_server" in needed:
        sessions.thrift()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop what was started early and is still running (an interrupted run, or a test that
    never waited for it): the Spark servers live in their own process groups and would
    outlive the tests."""
    for process in _EARLY:
        if process.poll() is None:
            process.kill()
            process.wait()
    spark = sys.modules.get("tests.spark.sessions")
    if spark is None:
        return
    for started in (spark.connect, spark.thrift):
        if started.cache_info().currsize:
            started().stop()


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
    """Path of a reference data file in ``tests/data`` (hierarchies in its ``hierarchies/``).

    ``name`` is a file name as the ARX reference files give it in ``dataset`` (``adult.csv``),
    or one of ARX's hierarchies for Adult (``adult_hierarchy_<column>.csv``).
    """
    if name.startswith("adult_hierarchy_"):
        return TEST_DATA / "hierarchies" / name
    return TEST_DATA / name


def reference_files() -> list[Path]:
    """Every ARX 3.9.2 reference file, ``tests/data/arx/arx_*.json``, in name order."""
    return sorted((TEST_DATA / "arx").glob("arx_*.json"))


def load_reference(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


@pytest.fixture(scope="session")
def adult_csv() -> Path:
    return oracle_data("adult.csv")


def free_port() -> int:
    """A TCP port of 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture
def closed_port() -> int:
    """:func:`free_port` as a fixture: a port to connect to and be refused."""
    return free_port()

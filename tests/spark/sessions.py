"""Spark for the tests: one local[2] SparkSession and one Spark Connect server per session.

The fixtures are defined here and imported by ``tests/spark/conftest.py`` and by the test
modules elsewhere that use Spark (``tests/sources/test_differential.py``); the server and the
sessions are process-wide singletons, so that importing the fixtures twice starts nothing
twice.

The Connect server and the Thrift server are started from the pyspark package
(``spark-submit --class ... spark-internal``) on free ports. ``tests/conftest.py`` starts
the ones the collected tests need as soon as collection ends, so that their JVMs boot while
the tests before them run; their fixtures wait for them and stop them when the session ends.
Shuffles use 2 partitions: the tables are small. A session that cannot start fails the tests
(never a skip).

Fixtures: ``spark`` (classic), ``classic_spark`` (the same, without starting the Connect
server), ``spark_connect`` (a Connect client session) and ``session``
(each of the two in turn).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port

SHUFFLE_PARTITIONS = "2"
#: The JVMs of the tests run small jobs briefly: the quick JIT tier and the serial collector
#: start them sooner (the gain was measured on tests/spark: about 10 %).
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_CONF = {
    "spark.sql.shuffle.partitions": SHUFFLE_PARTITIONS,
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.driver.extraJavaOptions": JVM_OPTIONS,
}
CONNECT_START_SECONDS = 240
THRIFT_START_SECONDS = 300


def _pyspark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _environment(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["SPARK_HOME"] = str(home)
    env["PYSPARK_PYTHON"] = sys.executable
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


class SparkServer:
    """A server process of the pyspark package (``spark-submit --class MAIN ... spark-internal``
    on ``local[2]``), on a free port of 127.0.0.1, logging to its own work folder."""

    main_class = ""
    what = "the Spark server"
    start_seconds = CONNECT_START_SECONDS

    def __init__(self) -> None:
        home = _pyspark_home()
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="reident-spark-server-"))
        argv = [
            str(home / "bin" / "spark-submit"),
            "--class",
            self.main_class,
            "--master",
            "local[2]",
            *self.arguments(),
            "spark-internal",
        ]
        self.log = (self.workdir / "server.log").open("wb")
        self.process = subprocess.Popen(
            argv,
            env=_environment(home),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            start_new_session=True,
        )

    def arguments(self) -> list[str]:
        """The server's own ``spark-submit`` options."""
        return []

    def ready(self) -> bool:
        """Whether the server answers (here: its port accepts a connection)."""
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def wait(self) -> None:
        """Until :meth:`ready` (fail when the process exits or the time is up)."""
        deadline = time.monotonic() + self.start_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = (self.workdir / "server.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"{self.what} exited ({self.process.returncode}): {tail}")
            if self.ready():
                return
            time.sleep(0.5)
        pytest.fail(f"{self.what} did not answer within {self.start_seconds} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


class ConnectServer(SparkServer):
    """A Spark Connect server process started from the pyspark package."""

    main_class = "org.apache.spark.sql.connect.service.SparkConnectServer"
    what = "the Spark Connect server"

    def arguments(self) -> list[str]:
        conf = {**_CONF, "spark.connect.grpc.binding.port": str(self.port)}
        return [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


class ThriftServer(SparkServer):
    """A Spark Thrift Server process started from the pyspark package."""

    main_class = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
    what = "the Spark Thrift Server"
    start_seconds = THRIFT_START_SECONDS

    def arguments(self) -> list[str]:
        metastore = f"jdbc:derby:;databaseName={self.workdir / 'metastore_db'};create=true"
        conf = {
            "spark.sql.shuffle.partitions": SHUFFLE_PARTITIONS,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "1g",
            "spark.sql.warehouse.dir": str(self.workdir / "warehouse"),
            "spark.driver.extraJavaOptions": f"{JVM_OPTIONS} -Dderby.system.home={self.workdir}",
        }
        hive = {
            "hive.server2.thrift.port": str(self.port),
            "hive.server2.thrift.bind.host": "127.0.0.1",
            "javax.jdo.option.ConnectionURL": metastore,
        }
        return [
            *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}")),
            *(a for k, v in hive.items() for a in ("--hiveconf", f"{k}={v}")),
        ]

    @property
    def url(self) -> str:
        return f"hive://127.0.0.1:{self.port}/default"

    def ready(self) -> bool:
        """Whether a statement runs (the port opens before the session manager is ready)."""
        import sqlalchemy as sa

        if not super().ready():
            return False
        engine = sa.create_engine(self.url)
        try:
            with engine.connect() as conn:
                conn.execute(sa.text("SELECT 1")).all()
            return True
        except sa.exc.DBAPIError:
            return False
        finally:
            engine.dispose()


@cache
def thrift() -> ThriftServer:
    """The Thrift server of this test session (started on the first call, never waited for
    here: its fixture waits)."""
    return ThriftServer()


@cache
def connect() -> ConnectServer:
    """The Connect server of this test session (started on the first call)."""
    return ConnectServer()


@cache
def _classic() -> Any:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("reident-tests")
    for key, value in _CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@cache
def _remote() -> Any:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    server = connect()
    server.wait()
    return ConnectSession.builder.remote(server.url).create()


def _stop_all() -> None:
    """Stop what was started (once; a second call finds nothing to stop)."""
    if _remote.cache_info().currsize:
        _remote().stop()
    if _classic.cache_info().currsize:
        _classic().stop()
    if connect.cache_info().currsize:
        connect().stop()
    for started in (_remote, _classic, connect):
        started.cache_clear()


@pytest.fixture(scope="session")
def connect_server() -> Iterator[ConnectServer]:
    """The Connect server (started first, so that it boots while the classic JVM does)."""
    try:
        yield connect()
    finally:
        _stop_all()


@pytest.fixture(scope="session")
def spark(connect_server: ConnectServer) -> Any:
    """The classic local[2] session (the Connect server starts meanwhile)."""
    return _classic()


@pytest.fixture(scope="session")
def classic_spark() -> Any:
    """The classic local[2] session alone, for tests that need no Connect server (the same
    session as ``spark``; stopped with the others when the Connect server's fixture ends)."""
    return _classic()


@pytest.fixture(scope="session")
def spark_connect(connect_server: ConnectServer) -> Any:
    """A Spark Connect client session on the server the tests started."""
    return _remote()


@pytest.fixture(params=["classic", "connect"])
def session(request: pytest.FixtureRequest) -> Any:
    """Each of the two sessions in turn."""
    return request.getfixturevalue("spark" if request.param == "classic" else "spark_connect")

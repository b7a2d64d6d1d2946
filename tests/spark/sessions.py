"""Spark for the tests: one local[2] SparkSession and one Spark Connect server per session.

The fixtures are defined here and imported by ``tests/spark/conftest.py`` and by the test
modules elsewhere that use Spark (``tests/sources/test_differential.py``); the server and the
sessions are process-wide singletons, so that importing the fixtures twice starts nothing
twice.

The Connect server is started from the pyspark package (``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer ... spark-internal``) on a free port
when the session starts, beside the classic session's JVM (they start in parallel), and is
stopped when the session ends. Shuffles use 4 partitions: the tables are small. A session
that cannot start fails the tests (never a skip).

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

SHUFFLE_PARTITIONS = "4"
_CONF = {
    "spark.sql.shuffle.partitions": SHUFFLE_PARTITIONS,
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
}
CONNECT_START_SECONDS = 240


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


@cache
def _server() -> ConnectServer:
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

    server = _server()
    server.wait()
    return ConnectSession.builder.remote(server.url).create()


def _stop_all() -> None:
    """Stop what was started (once; a second call finds nothing to stop)."""
    if _remote.cache_info().currsize:
        _remote().stop()
    if _classic.cache_info().currsize:
        _classic().stop()
    if _server.cache_info().currsize:
        _server().stop()
    for started in (_remote, _classic, _server):
        started.cache_clear()


@pytest.fixture(scope="session")
def connect_server() -> Iterator[ConnectServer]:
    """The Connect server (started first, so that it boots while the classic JVM does)."""
    try:
        yield _server()
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

"""Fixtures for the Great Expectations tests: GE imported once, data sources on demand.

GE 1.24 imports the stdlib modules ``sre_constants`` and ``sre_parse``, deprecated since
Python 3.11, and (its ``compatibility.pyspark``) PySpark Connect, which warns that it does not
fully support pandas 3 when the ``spark`` extra is installed; pytest turns warnings into errors
(pyproject), so exactly those import-time warnings are ignored here, while GE is imported for
the first time. Nothing else is silenced.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

with warnings.catch_warnings():
    for _module in ("sre_constants", "sre_parse"):
        warnings.filterwarnings(
            "ignore", message=f"module '{_module}' is deprecated", category=DeprecationWarning
        )
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )
    import great_expectations as gx

    import reident_airflow.gx  # noqa: F401 - registers the expectations

from great_expectations.data_context.types.base import ProgressBarsConfig

from tests.conftest import oracle_data, require_server

QIS = ["sex", "age", "race"]


def read_adult() -> pd.DataFrame:
    """Adult as the CLI reads it: every value text, nothing turned into NaN."""
    return pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """The same records as a database holds them: age an integer column."""
    return frame.assign(age=frame["age"].astype("int64"))


#: a password the server does not check (trust authentication on the test server) but that
#: must never show up: it holds every character a URL or GX's ``${VAR}`` substitution treats
#: specially
PASSWORD = "pw-SECRET$x{y}@:/%7"


def postgres_conn(url: str, **extra: Any) -> str:
    """An Airflow connection (JSON form of ``AIRFLOW_CONN_...``) to the server at ``url``."""
    import sqlalchemy as sa

    u = sa.make_url(url)
    conn = {
        "conn_type": "postgres",
        "host": u.host,
        "port": u.port,
        "login": u.username,
        "password": PASSWORD,
        "schema": u.database,
    }
    return json.dumps({**conn, "extra": extra} if extra else conn)


@pytest.fixture(scope="session")
def adult() -> pd.DataFrame:
    return read_adult()


def new_context() -> Any:
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


@pytest.fixture
def context() -> Any:
    return new_context()


@pytest.fixture
def pandas_batch(context: Any) -> Callable[[pd.DataFrame], Any]:
    """``pandas_batch(frame)``: a GE batch of a DataFrame."""

    def make(frame: pd.DataFrame) -> Any:
        name = f"pandas_{uuid.uuid4().hex[:8]}"
        source = context.data_sources.add_pandas(name)
        definition = source.add_dataframe_asset("frame").add_batch_definition_whole_dataframe(
            "whole"
        )
        return definition.get_batch(batch_parameters={"dataframe": frame})

    return make


def sql_batch(context: Any, url: str, table: str) -> Any:
    name = f"sql_{uuid.uuid4().hex[:8]}"
    if url.startswith("sqlite"):
        source = context.data_sources.add_sqlite(name, connection_string=url)
    else:
        source = context.data_sources.add_postgres(name, connection_string=url)
    asset = source.add_table_asset("table", table_name=table)
    return asset.add_batch_definition_whole_table("whole").get_batch()


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory, adult: pd.DataFrame) -> str:
    """A SQLite file holding ``adult`` (age INTEGER) and an empty table."""
    path: Path = tmp_path_factory.mktemp("gx-sqlite") / "release.db"
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url)
    typed(adult).to_sql("adult", engine, index=False)
    typed(adult).head(0).to_sql("empty", engine, index=False)
    engine.dispose()
    return url


@pytest.fixture(scope="session")
def postgres_adult() -> Iterator[tuple[str, str]]:
    """``(url, table)``: Adult in a uniquely named PostgreSQL table, dropped afterwards.

    Skips when the server is unreachable, except under ``CI=true``, where that fails.
    """
    url = require_server("postgresql")
    table = f"reident_gx_adult_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(url)
    try:
        typed(read_adult()).to_sql(table, engine, index=False)
        yield url, table
    finally:
        with engine.begin() as conn:
            sa.Table(table, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


@pytest.fixture(scope="session")
def fresh_process(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What one fresh interpreter saw before and after ``import reident_airflow.gx``.

    See :mod:`tests.gx._fresh`: saved contexts run without and with the package, the suite
    file read by plain GE, GE's registries, ``check_context``.
    """
    from tests.gx._fresh import run_fresh

    return run_fresh(tmp_path_factory.mktemp("fresh-process"))

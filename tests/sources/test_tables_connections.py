"""Whole-table reads, the database Direct Match and a table copy connect through the
project's ``connect()`` and ``database_errors()`` (issue 19): an outage names the host,
port and database and never the password; a failed read quotes no value of the data; an
unknown column of a database table gets a did-you-mean.

The "down" server is a port of 127.0.0.1 nothing listens on; the others are the real
PostgreSQL and MariaDB servers (``db`` marker).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.db_errors import (
    DriverConnectionError,
    DriverErrorWithheld,
    failure_message,
    located_error,
)
from reident_airflow.sources.direct_match_sql import direct_match_in_database, read_table_frame
from reident_airflow.sources.publish import copy_table_atomic
from reident_airflow.sources.sql import class_table_from_sql
from reident_airflow.sources.tables import read_file_frame, read_sql_frame
from tests.conftest import require_server

PASSWORD = "S3cr3t-pw"
VALUE = "do-not-show-7731"


READERS: dict[str, Callable[[str], Any]] = {
    "read_sql_frame": lambda url: read_sql_frame(url, table="t"),
    "read_table_frame": lambda url: read_table_frame(url, "t"),
    "direct_match_in_database": lambda url: direct_match_in_database(url, "o", "a", key="id"),
    "copy_table_atomic": lambda url: copy_table_atomic(sa.create_engine(url), "s", "t"),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_outage_names_where_and_not_the_password(closed_port: int, reader: str) -> None:
    url = f"postgresql+psycopg2://etl:{PASSWORD}@127.0.0.1:{closed_port}/warehouse"
    with pytest.raises(sa.exc.OperationalError) as info:
        READERS[reader](url)
    assert isinstance(info.value.orig, DriverConnectionError)  # made by connect()
    assert "Connection refused" in str(info.value)
    # located as the CLI and the operators locate it (once: connect() may have done it)
    message = failure_message(located_error(info.value, url))
    assert message is not None and message.startswith(
        f"could not connect to the postgresql database 'warehouse' on 127.0.0.1:{closed_port} "
        "as user 'etl': "
    ), message
    for text in (message, str(info.value)):
        assert PASSWORD not in text and "[SQL:" not in text


@pytest.fixture(params=[pytest.param("postgresql", marks=pytest.mark.db)])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[sa.Engine, str]]:
    """A real server and a fresh table of it: ``v`` text holding :data:`VALUE`, ``age``."""
    engine = sa.create_engine(require_server(request.param))
    name = f"conn_{uuid.uuid4().hex[:10]}"
    table = sa.Table(name, sa.MetaData(), sa.Column("v", sa.Text), sa.Column("age", sa.Integer))
    with engine.begin() as conn:
        table.create(conn)
        conn.execute(sa.insert(table), [{"v": VALUE, "age": 30}, {"v": "x", "age": 41}])
    try:
        yield engine, name
    finally:
        with engine.begin() as conn:
            table.drop(conn, checkfirst=True)
        engine.dispose()


def test_a_failed_read_quotes_no_value(server: tuple[sa.Engine, str]) -> None:
    engine, name = server
    # PostgreSQL's own message would quote the value: invalid input syntax for type integer
    sql = f'SELECT CAST(v AS integer) AS n FROM "{name}"'
    with pytest.raises((InvalidInputError, sa.exc.DBAPIError)) as info:
        read_sql_frame(engine, sql=sql)
    assert VALUE not in str(info.value) and "[SQL:" not in str(info.value)
    if isinstance(info.value, sa.exc.DBAPIError):
        assert isinstance(info.value.orig, DriverErrorWithheld)
    frame, _ = read_sql_frame(engine, table=name)  # the table itself reads as before
    assert sorted(frame["age"].tolist()) == [30, 41]


def test_a_typo_in_a_database_column_gets_a_did_you_mean(server: tuple[sa.Engine, str]) -> None:
    engine, name = server
    with pytest.raises(InvalidInputError) as info:
        class_table_from_sql(engine, ["agee"], table=name)
    assert str(info.value) == (
        "unknown quasi-identifier 'agee' (did you mean 'age'?); available columns: 'v', 'age'"
    )


def test_only_the_columns_asked_for_are_read(server: tuple[sa.Engine, str], tmp_path: Path) -> None:
    engine, name = server
    frame, types = read_sql_frame(engine, table=name, columns=["age"])
    assert list(frame.columns) == ["age"] and list(types) == ["age"]
    assert sorted(frame["age"].tolist()) == [30, 41]
    with pytest.raises(InvalidInputError, match=r"'agee' \(did you mean 'age'\?\)"):
        read_sql_frame(engine, table=name, columns=["agee"])
    csv = tmp_path / "t.csv"
    csv.write_text("v,age\nx,30\ny,41\n", encoding="utf-8")
    read = read_file_frame(csv, categorical=["age"], columns=["age"])
    assert list(read.columns) == ["age"] and read["age"].tolist() == ["30", "41"]

"""A database that cannot be reached (issue 19): the error names the backend, host, port,
database and user and the driver's reason -- never the password, a statement or its
parameters -- and keeps its SQLAlchemy class (Airflow retries connection errors).

The servers are "down" by construction: a port on 127.0.0.1 that nothing listens on."""

from __future__ import annotations

import pickle

import pytest
import sqlalchemy as sa

from reident_airflow.sources import sql as sql_source
from reident_airflow.sources.db_errors import (
    DriverConnectionError,
    DriverErrorWithheld,
    connection_error,
    describe_database,
    failure_message,
    located_error,
)

PASSWORD = "S3cr3t-pw"


@pytest.mark.parametrize(
    ("scheme", "backend", "reason"),
    [
        # psycopg2: 'connection to server at "127.0.0.1", port N failed: Connection refused'
        ("postgresql", "postgresql", "Connection refused"),
        # PyMySQL: (2003, "Can't connect to MySQL server on '127.0.0.1' ([Errno 111] ...)")
        ("mysql", "mysql", "Can't connect to MySQL server"),
    ],
)
def test_a_closed_port_names_where_and_why(
    closed_port: int, scheme: str, backend: str, reason: str
) -> None:
    url = f"{scheme}://etl:{PASSWORD}@127.0.0.1:{closed_port}/test"
    with pytest.raises(sa.exc.OperationalError) as info:
        sql_source.histogram_from_sql(url, ["a"], table="t")
    located = located_error(info.value, url)
    assert isinstance(located, sa.exc.OperationalError)  # still a connection error
    assert isinstance(located.orig, DriverConnectionError)
    message = failure_message(located)
    assert message is not None
    assert message.startswith(
        f"could not connect to the {backend} database 'test' on 127.0.0.1:{closed_port} "
        "as user 'etl': "
    ), message
    assert reason in message and "\n" not in message
    for text in (message, str(located)):
        assert PASSWORD not in text and "[SQL:" not in text and "[parameters:" not in text
    assert located_error(located, "postgresql://other/db") is located  # located once


def test_the_url_given_when_the_error_is_made(closed_port: int) -> None:
    url = f"postgresql+psycopg2://etl:{PASSWORD}@127.0.0.1:{closed_port}/warehouse"
    with pytest.raises(sa.exc.OperationalError) as info:
        sa.create_engine(url).connect()
    shown = connection_error(info.value, url)
    assert f"the postgresql database 'warehouse' on 127.0.0.1:{closed_port}" in str(shown)
    assert PASSWORD not in str(shown)
    copy = pickle.loads(pickle.dumps(shown.orig))  # a task's error crosses processes
    assert isinstance(copy, DriverConnectionError) and str(copy) == str(shown.orig)
    # a reader that connected by itself: the raw error, located afterwards
    located = located_error(info.value, url)
    assert isinstance(located, sa.exc.OperationalError)
    assert failure_message(located) == failure_message(shown)
    # a raw error of a statement (which may quote values) is not shown as a connection's
    read = sa.exc.OperationalError("SELECT 1", {}, RuntimeError("value 'x'"))
    assert located_error(read, url) is read and failure_message(read) is None


def test_a_driver_echoing_its_password_is_masked() -> None:
    orig = RuntimeError(f"login failed for dsn 'user=etl password={PASSWORD}'\n\thint: check it")
    error = sa.exc.OperationalError(None, None, orig)
    url = f"postgresql://etl:{PASSWORD}@db.internal/test"
    for shown in (connection_error(error, url), located_error(connection_error(error), url)):
        message = failure_message(shown) or ""
        assert PASSWORD not in message and "password=***" in message
        assert message.endswith("check it (builtins.RuntimeError)") and "\n" not in message


@pytest.mark.parametrize(
    ("url", "described"),
    [
        ("postgresql://db.internal/test", "the postgresql database 'test' on db.internal:5432"),
        (
            f"mysql+pymysql://etl:{PASSWORD}@10.0.0.7/crm?charset=utf8mb4",
            "the mysql database 'crm' on 10.0.0.7:3306 as user 'etl'",
        ),
        ("mariadb+pymysql://h:3307/x", "the mariadb database 'x' on h:3307"),
        ("sqlite:///data/release.db", "the sqlite database 'data/release.db'"),
        ("not a url", "the database"),
    ],
)
def test_describe_database(url: str, described: str) -> None:
    assert describe_database(url) == described


def test_a_failure_during_a_read_keeps_the_driver_message_withheld() -> None:
    withheld = sa.exc.OperationalError(
        None, None, DriverErrorWithheld("psycopg2.OperationalError, SQLSTATE 57P01: not shown")
    )
    assert failure_message(withheld) == (
        "the database failed during the read: psycopg2.OperationalError, SQLSTATE 57P01: not shown"
    )
    assert failure_message(sa.exc.OperationalError(None, None, RuntimeError("x"))) is None
    assert failure_message(ValueError("x")) is None

"""Values whose equality depends on the column's type are grouped exactly (issue 25, items 1-4).

A database compares values under its type's own equality: ``citext`` ignores case, a domain
carries its base type's collation, a nondeterministic ICU collation merges ``a`` and ``A``,
``interval`` says ``1 day`` = ``24 hours``, and MariaDB prints a 4-byte ``FLOAT`` with six
digits. Each test builds a small table whose true classes are counted by hand in a comment and
reads it through the table path, the query path (``sql=``, as ``where=`` builds it) and the CLI.
Before the fix, each of these tables passed ``min_k=2`` although its true k is 1.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.engine.classes import ClassSizes, ClassTable
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.sql import (
    aggregates_from_sql,
    class_table_from_sql,
    histogram_from_sql,
)
from tests.cli._cli import run
from tests.conftest import database_url, ensure_airflow_db
from tests.operators._fakes import PushedTI

pytestmark = pytest.mark.db


def histogram(result: ClassTable | ClassSizes) -> list[list[int]]:
    """``[[size, number of classes of that size], ...]``, sizes ascending."""
    sizes, counts = result.histogram()
    return [[int(s), int(c)] for s, c in zip(sizes, counts, strict=True)]


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@contextmanager
def made_table(engine: sa.Engine, prefix: str, columns: str, rows: str) -> Iterator[str]:
    """``CREATE TABLE <unique name> (columns)`` holding ``INSERT ... VALUES rows``; dropped
    afterwards."""
    name = unique(prefix)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {name} ({columns})")
        conn.exec_driver_sql(f"INSERT INTO {name} VALUES {rows}")
    try:
        yield name
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE {name}")


def every_path(engine: sa.Engine, qi: str, table: str, sql: str) -> list[list[list[int]]]:
    """The histogram of ``qi`` read every way a database is read: class table, histogram and
    aggregates of the table, and the class table and histogram of a query."""
    return [
        histogram(class_table_from_sql(engine, [qi], table=table)),
        histogram(histogram_from_sql(engine, [qi], table=table)),
        histogram(aggregates_from_sql(engine, [qi], table=table).table),
        histogram(class_table_from_sql(engine, [qi], sql=sql)),
        histogram(histogram_from_sql(engine, [qi], sql=sql)),
    ]


def operator_gate(engine: sa.Engine, **source: str) -> None:
    """The risk operator with ``min_k=2`` on ``source``: it must stop the release."""
    ensure_airflow_db()
    from reident_airflow.operators.risk import ReidentificationRiskOperator
    from reident_airflow.outcomes import ReidentificationBreach

    op = ReidentificationRiskOperator(task_id=unique("gate"), conn_id="x", min_k=2, **source)
    op.get_engine = lambda conn_id: engine  # type: ignore[method-assign]  # the test seam
    context: Any = {"ti": PushedTI()}
    with pytest.raises(ReidentificationBreach):
        op.execute(context)


def cli_gate(kind: str, table: str, qi: str, *extra: str) -> tuple[int, str]:
    """``reident assess URL --table T --qi Q --min-k 2``: exit code and stdout."""
    code, out, err = run(
        "assess", database_url(kind), "--table", table, "--qi", qi, "--min-k", "2", *extra
    )
    assert code in (0, 1), err
    return code, out


# ------------------------------------------------------------------------- MariaDB FLOAT (1)
def test_mariadb_float_is_grouped_as_the_database_stores_it(mariadb: sa.Engine) -> None:
    # FLOAT w: 70.0, 70.00001, 81.5, 81.5. As 4-byte floats 70.0 and 70.00001 differ
    # (70.00001 is stored as 70.00000762939453), so MariaDB groups 3 classes: sizes 1, 1, 2,
    # k = 1, histogram [[1, 2], [2, 1]]. Its text protocol prints both as "70" (6 digits), and
    # the client used to merge them: 2 classes of 2, k = 2, and `--min-k 2` passed.
    rows = "(70.0, 'd'), (70.00001, 'd'), (81.5, 'd'), (81.5, 'd')"
    with made_table(mariadb, "reident_float", "w FLOAT, day VARCHAR(3)", rows) as name:
        sql = f"SELECT w FROM {name} WHERE day = 'd'"
        assert every_path(mariadb, "w", name, sql) == [[[1, 2], [2, 1]]] * 5
        for extra in ((), ("--no-ranking",)):
            code, out = cli_gate("mariadb", name, "w", *extra)
            assert code == 1, out
            # the advice counts the same classes as the verdict
            assert "2 of 3 classes, holding 2 of 4 records" in out
        operator_gate(mariadb, table=name, quasi_identifiers="w")
        operator_gate(mariadb, table=name, where="day = 'd'", quasi_identifiers="w")


def test_mariadb_double_decimal_bit_and_set_keep_their_values(mariadb: sa.Engine) -> None:
    # DOUBLE d: 0.1+0.2 (0.30000000000000004), 0.3, 0.3 -> 2 classes, [[1, 1], [2, 1]];
    # DECIMAL(6,3) m: 1.5, 1.500, 1.501 -> 1.5 = 1.500 (one value), [[1, 1], [2, 1]];
    # BIT(3) b: 1, 2, 2 -> [[1, 1], [2, 1]]; SET s: 'a', 'a,b', 'a,b' -> [[1, 1], [2, 1]].
    columns = "d DOUBLE, m DECIMAL(6,3), b BIT(3), s SET('a','b')"
    rows = "(0.1e0 + 0.2e0, 1.5, 1, 'a'), (0.3e0, 1.500, 2, 'a,b'), (0.3e0, 1.501, 2, 'b,a')"
    with made_table(mariadb, "reident_mtypes", columns, rows) as name:
        for qi in ("d", "m", "b", "s"):
            sql = f"SELECT {qi} FROM {name}"
            assert every_path(mariadb, qi, name, sql) == [[[1, 1], [2, 1]]] * 5, qi


# ------------------------------------------------------- PostgreSQL citext and domains (2-4)
@pytest.fixture
def pg_typed(postgresql: sa.Engine) -> Iterator[str]:
    """A table of typed columns whose own equality merges values that differ (see below)."""
    suffix = uuid.uuid4().hex[:10]
    email, ci, coll = f"reident_email_{suffix}", f"reident_ci_{suffix}", f"reident_coll_{suffix}"
    name = f"reident_typed_{suffix}"
    with postgresql.begin() as conn:
        conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS citext")
        conn.exec_driver_sql(
            f"CREATE COLLATION {coll} (provider = icu, locale = 'und-u-ks-level2', "
            "deterministic = false)"
        )
        conn.exec_driver_sql(f"CREATE DOMAIN {email} AS citext")
        conn.exec_driver_sql(f"CREATE DOMAIN {ci} AS text COLLATE {coll}")
        conn.exec_driver_sql(
            f"CREATE TABLE {name} (c citext, e {email}, d {ci}, a text[] COLLATE {coll}, "
            "i interval, day text)"
        )
        conn.exec_driver_sql(
            f"INSERT INTO {name} VALUES "
            "('Ann@x.org', 'Ann@x.org', 'a', '{a}', '1 day', 'd'), "
            "('ann@x.org', 'ann@x.org', 'A', '{A}', '24 hours', 'd'), "
            "('bob', 'bob', 'b', '{b}', '2 days', 'd'), "
            "('bob', 'bob', 'b', '{b}', '2 days', 'd')"
        )
    try:
        yield name
    finally:
        with postgresql.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE {name}")
            conn.exec_driver_sql(f"DROP DOMAIN {email}")
            conn.exec_driver_sql(f"DROP DOMAIN {ci}")
            conn.exec_driver_sql(f"DROP COLLATION {coll}")


@pytest.mark.parametrize(
    "qi",
    [
        "c",  # citext: 'Ann@x.org' and 'ann@x.org' are one value to citext's equality
        "e",  # a DOMAIN over citext: reflected as DOMAIN, grouped under citext's equality
        "d",  # a DOMAIN over text with a nondeterministic ICU collation: 'a' = 'A'
        "a",  # text[] under that collation: '{a}' = '{A}'
        "i",  # interval: '1 day' = '24 hours'
    ],
)
def test_postgresql_type_equality_never_merges_spellings(
    postgresql: sa.Engine, pg_typed: str, qi: str
) -> None:
    # Each column: two spellings once each and one value twice -> 3 classes, sizes 1, 1, 2,
    # k = 1, histogram [[1, 2], [2, 1]]. Under the type's own equality the two spellings were
    # one class: 2 classes of 2, k = 2, and `--min-k 2` passed.
    sql = f"SELECT {qi} FROM {pg_typed} WHERE day = 'd'"  # the query path (item 4)
    assert every_path(postgresql, qi, pg_typed, sql) == [[[1, 2], [2, 1]]] * 5
    code, out = cli_gate("postgresql", pg_typed, qi)
    assert code == 1, out
    assert "2 of 3 classes, holding 2 of 4 records" in out
    # the README's partition example: `where` turns the table into a query
    operator_gate(postgresql, table=pg_typed, where="day = 'd'", quasi_identifiers=qi)


def test_postgresql_json_qi_is_refused_with_the_fix(postgresql: sa.Engine) -> None:
    # json has no equality operator: GROUP BY failed with SQLSTATE 42883 and a message that
    # named neither the column nor the fix. The refusal names both, on every path.
    with made_table(postgresql, "reident_json", "j json", """('{"a":1}')""") as name:
        wanted = r"column 'j' is of type json, which has no equality.*cast it to jsonb"
        for source in ({"table": name}, {"sql": f"SELECT j FROM {name}"}):
            with pytest.raises(InvalidInputError, match=wanted):
                class_table_from_sql(postgresql, ["j"], **source)
            with pytest.raises(InvalidInputError, match=wanted):
                histogram_from_sql(postgresql, ["j"], **source)
        code, _out, err = run(
            "assess", database_url("postgresql"), "--table", name, "--qi", "j", "--min-k", "2"
        )
        assert code == 2 and "column 'j' is of type json" in err, err


def test_postgresql_floats_print_in_full_whatever_the_session(postgresql: sa.Engine) -> None:
    # float8 f: 0.1+0.2, 0.3, 0.3 -> 2 classes, [[1, 1], [2, 1]]. With extra_float_digits = 0
    # (as older clients set it) both print as 0.3: the read sets it for its own transaction,
    # so the two classes stay two (before the fix the client read them back as one value).
    rows = "(0.1::float8 + 0.2::float8), (0.3), (0.3)"
    lossy = sa.create_engine(
        database_url("postgresql"), connect_args={"options": "-c extra_float_digits=0"}
    )
    try:
        with made_table(postgresql, "reident_f8", "f float8", rows) as name:
            with lossy.connect() as conn:
                assert conn.exec_driver_sql("SHOW extra_float_digits").scalar_one() == "0"
            sql = f"SELECT f FROM {name}"
            assert every_path(lossy, "f", name, sql) == [[[1, 1], [2, 1]]] * 5
    finally:
        lossy.dispose()

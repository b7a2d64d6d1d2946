"""Reading database tables under the reading contract (docs/reading.md), on real databases.

Each test builds a small table whose classes are counted by hand in a comment, reads it through
``reident_airflow.sources.sql`` and compares. Server tests (PostgreSQL, MariaDB) are marked
``db``; SQLite runs everywhere. Tables get unique names and are dropped afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from reident_airflow.engine.aggregates import aggregate_grouped
from reident_airflow.engine.assessment import assess
from reident_airflow.engine.classes import ClassSizes, ClassTable, class_table_from_grouped
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources import sql_fetch
from reident_airflow.sources.sql import (
    COPY_BLOCK_BYTES,
    COUNT_LABEL,
    aggregates_from_sql,
    class_table_from_sql,
    grouped_counts,
    grouped_value_counts,
    histogram_from_sql,
    reflect_table,
)
from tests.conftest import require_server

SERVERS = [
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]
BACKENDS = [pytest.param("sqlite"), *SERVERS]


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    """An engine for the backend named by the test's (indirect) parameter."""
    backend: str = request.param
    local = f"sqlite:///{tmp_path / 'reading.db'}"
    made = sa.create_engine(local if backend == "sqlite" else require_server(backend))
    yield made
    made.dispose()


@contextmanager
def created(
    engine: sa.Engine, columns: list[sa.Column[Any]], rows: list[dict[str, Any]]
) -> Iterator[str]:
    """A table with a unique name holding ``rows``; dropped afterwards."""
    name = f"reident_read_{uuid.uuid4().hex[:12]}"
    table = sa.Table(name, sa.MetaData(), *columns)
    with engine.begin() as conn:
        table.create(conn)
        if rows:
            conn.execute(table.insert(), rows)
    try:
        yield name
    finally:
        with engine.begin() as conn:
            table.drop(conn)


def histogram(result: ClassTable | ClassSizes) -> list[list[int]]:
    """``[[size, number of classes of that size], ...]``, sizes ascending."""
    sizes, counts = result.histogram()
    return [[int(s), int(c)] for s, c in zip(sizes, counts, strict=True)]


def query_of(engine: sa.Engine, name: str, *columns: str) -> str:
    """``SELECT columns FROM name`` compiled by SQLAlchemy (identifiers quoted by it)."""
    table = sa.table(name, *(sa.column(c) for c in columns))
    return str(sa.select(*table.c).compile(engine))


def l_distinct(url: str | sa.Engine, qis: list[str], table: str, sensitive: str) -> int:
    """The smallest number of distinct sensitive values in a class (distinct l-diversity)."""
    agg = aggregates_from_sql(url, qis, table=table, sensitive=[sensitive])
    result = assess(agg.table, attributes=False, sensitive=agg.sensitive)
    assert result.l_diversity is not None
    return int(result.l_diversity[0].distinct)


def value_by_size(table: ClassTable, qi: int = 0) -> dict[int, Any]:
    """The value of QI ``qi`` of each class, keyed by the class's size (sizes must be unique)."""
    assert table.dictionaries is not None
    dictionary = table.dictionaries[qi]
    out: dict[int, Any] = {}
    for size, code in zip(table.sizes, table.codes[:, qi], strict=True):
        value = (
            dictionary[int(code)].as_py()
            if isinstance(dictionary, pa.Array)
            else dictionary[int(code)]
        )
        assert int(size) not in out, "sizes must identify the classes"
        out[int(size)] = value
    return out


# ----------------------------------------------------------------------------- bytes stay bytes
LATIN1_NAMES = ["José", "Josè", "Josê", "Jose", "Jose", "Zoë", "Zoé"]


@pytest.mark.db
def test_mariadb_latin1_qi_keeps_every_spelling(mariadb: sa.Engine) -> None:
    # José, Josè, Josê, Jose, Jose, Zoë, Zoé: 6 distinct byte strings in latin1 (é e9, è e8,
    # ê ea, ë eb), Jose twice -> classes 6, k 1, histogram [[1, 5], [2, 1]]. Decoded as UTF-8
    # with replacement, José/Josè/Josê became one value and Zoë/Zoé another: 3 classes, k 2.
    columns = [sa.Column("name", mysql.VARCHAR(20, charset="latin1"))]
    with created(mariadb, columns, [{"name": v} for v in LATIN1_NAMES]) as name:
        with mariadb.connect() as conn:  # the database itself tells 6 byte strings apart
            src = reflect_table(conn, name)
            distinct = sa.select(sa.func.count(sa.distinct(sa.cast(src.c.name, sa.LargeBinary))))
            assert conn.execute(distinct).scalar_one() == 6
        for table in (
            class_table_from_sql(mariadb, ["name"], table=name),
            class_table_from_sql(mariadb, ["name"], sql=query_of(mariadb, name, "name")),
            aggregates_from_sql(mariadb, ["name"], table=name).table,
        ):
            assert (table.classes, table.k, table.records) == (6, 1, 7)
            assert histogram(table) == [[1, 5], [2, 1]]
            assert table.excluded_records == 0
        assert histogram(histogram_from_sql(mariadb, ["name"], table=name)) == [[1, 5], [2, 1]]


@pytest.mark.db
def test_mariadb_latin1_sensitive_column_counts_three_values(mariadb: sa.Engine) -> None:
    # one class (g = "x", 3 records) whose latin1 names are José, Josè, Josê: 3 distinct byte
    # strings -> distinct l = 3 (decoded with replacement all three were "Jos\ufffd": l = 1)
    columns = [
        sa.Column("g", mysql.VARCHAR(5, charset="utf8mb4")),
        sa.Column("name", mysql.VARCHAR(20, charset="latin1")),
    ]
    rows = [{"g": "x", "name": v} for v in ("José", "Josè", "Josê")]
    with created(mariadb, columns, rows) as name:
        assert l_distinct(mariadb, ["g"], name, "name") == 3


@pytest.mark.db
def test_mariadb_varbinary_and_binary_qis_group_by_bytes(mariadb: sa.Engine) -> None:
    # VARBINARY v: \xff, \xfe, \xef\xbf\xbd (U+FFFD in UTF-8), \xff, "a": 4 distinct byte
    # strings, \xff twice -> classes 4, histogram [[1, 3], [2, 1]]. Decoded with replacement,
    # the first three were all U+FFFD: 2 classes, [[1, 1], [4, 1]].
    # BINARY(2) b (padded with \x00): \xff\x00, \xfe\x00, \x80\x00, \xff\x00, "ab": same shape
    # -> [[1, 3], [2, 1]].
    v = [b"\xff", b"\xfe", b"\xef\xbf\xbd", b"\xff", b"a"]
    b = [b"\xff\x00", b"\xfe\x00", b"\x80\x00", b"\xff\x00", b"ab"]
    columns = [sa.Column("v", mysql.VARBINARY(4)), sa.Column("b", mysql.BINARY(2))]
    rows = [{"v": x, "b": y} for x, y in zip(v, b, strict=True)]
    with created(mariadb, columns, rows) as name:
        for qi in ("v", "b"):
            table = class_table_from_sql(mariadb, [qi], table=name)
            assert (table.classes, table.k) == (4, 1)
            assert histogram(table) == [[1, 3], [2, 1]]
            assert histogram(histogram_from_sql(mariadb, [qi], table=name)) == [[1, 3], [2, 1]]
            queried = class_table_from_sql(mariadb, [qi], sql=query_of(mariadb, name, qi))
            assert histogram(queried) == [[1, 3], [2, 1]]
        # both together: the tuples (v, b) are the 5 rows, rows 1 and 4 equal -> same histogram
        both = aggregates_from_sql(mariadb, ["v", "b"], table=name).table
        assert histogram(both) == [[1, 3], [2, 1]]


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_sqlite_blob_qi_groups_by_bytes(engine: sa.Engine) -> None:
    # BLOB: \xff, \xfe, \xef\xbf\xbd, \xff, \x80abc, NULL, "" (empty blob): 6 distinct values
    # (NULL is one value, the empty blob another), \xff twice -> classes 6, k 1,
    # histogram [[1, 5], [2, 1]]; a sensitive BLOB s in one class g = "x" holding \xff, \xfe
    # and U+FFFD's bytes -> distinct l = 3 (replacement decoding made them one: l = 1).
    values = [b"\xff", b"\xfe", b"\xef\xbf\xbd", b"\xff", b"\x80abc", None, b""]
    sensitive = [b"\xff", b"\xfe", b"\xef\xbf\xbd", b"\xff", b"\xfe", b"\xff", b"\xfe"]
    columns = [
        sa.Column("q", sa.LargeBinary),
        sa.Column("g", sa.Text),
        sa.Column("s", sa.LargeBinary),
    ]
    rows = [{"q": q, "g": "x", "s": s} for q, s in zip(values, sensitive, strict=True)]
    with created(engine, columns, rows) as name:
        table = class_table_from_sql(engine, ["q"], table=name)
        assert (table.classes, table.k, table.records) == (6, 1, 7)
        assert histogram(table) == [[1, 5], [2, 1]]
        assert histogram(histogram_from_sql(engine, ["q"], table=name)) == [[1, 5], [2, 1]]
        assert histogram(aggregates_from_sql(engine, ["q"], table=name).table) == [[1, 5], [2, 1]]
        assert l_distinct(engine, ["g"], name, "s") == 3


@pytest.mark.db
def test_mariadb_case_and_trailing_space_are_distinct(mariadb: sa.Engine) -> None:
    # Male, male, "Male ", Male under the default case-insensitive, PAD SPACE collation:
    # the contract compares characters -> Male (2), male (1), "Male " (1): classes 3, k 1,
    # histogram [[1, 2], [2, 1]] (the collation would give one class of 4). Through a query
    # (sql=) the column types are unknown to SQLAlchemy: the same must hold.
    columns = [sa.Column("sex", mysql.VARCHAR(10, charset="utf8mb4"))]
    rows = [{"sex": v} for v in ("Male", "male", "Male ", "Male")]
    with created(mariadb, columns, rows) as name:
        query = query_of(mariadb, name, "sex")
        for table in (
            class_table_from_sql(mariadb, ["sex"], table=name),
            class_table_from_sql(mariadb, ["sex"], sql=query),
            aggregates_from_sql(mariadb, ["sex"], sql=query).table,
        ):
            assert (table.classes, table.k) == (3, 1)
            assert histogram(table) == [[1, 2], [2, 1]]
        for sizes in (
            histogram_from_sql(mariadb, ["sex"], table=name),
            histogram_from_sql(mariadb, ["sex"], sql=query),
        ):
            assert histogram(sizes) == [[1, 2], [2, 1]]


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_sqlite_nocase_column_is_compared_exactly(engine: sa.Engine) -> None:
    # a column declared COLLATE NOCASE: Male, male, MALE, Male -> 3 classes (Male twice):
    # histogram [[1, 2], [2, 1]] (NOCASE would make one class of 4)
    columns = [sa.Column("sex", sa.Text(collation="NOCASE"))]
    with created(engine, columns, [{"sex": v} for v in ("Male", "male", "MALE", "Male")]) as name:
        assert histogram(class_table_from_sql(engine, ["sex"], table=name)) == [[1, 2], [2, 1]]
        assert histogram(histogram_from_sql(engine, ["sex"], table=name)) == [[1, 2], [2, 1]]


@pytest.mark.db
def test_postgresql_nondeterministic_collation_is_bypassed(postgresql: sa.Engine) -> None:
    # an ICU collation that ignores case (deterministic = false): Male, male, MALE, Male ->
    # 3 classes (Male twice), histogram [[1, 2], [2, 1]]; under the collation: 1 class of 4
    collation = f"reident_ci_{uuid.uuid4().hex[:8]}"
    quoted = postgresql.dialect.identifier_preparer.quote(collation)
    with postgresql.begin() as conn:
        conn.execute(
            sa.DDL(
                f"CREATE COLLATION {quoted} "
                "(provider = icu, locale = 'und-u-ks-level2', deterministic = false)"
            )
        )
    try:
        columns = [sa.Column("sex", sa.Text(collation=collation))]
        rows = [{"sex": v} for v in ("Male", "male", "MALE", "Male")]
        with created(postgresql, columns, rows) as name:
            with postgresql.connect() as conn:  # the collation does merge them
                src = reflect_table(conn, name)
                assert conn.execute(sa.select(sa.func.count(sa.distinct(src.c.sex)))).scalar() == 1
            table = class_table_from_sql(postgresql, ["sex"], table=name)
            assert histogram(table) == [[1, 2], [2, 1]]
            assert histogram(histogram_from_sql(postgresql, ["sex"], table=name)) == [
                [1, 2],
                [2, 1],
            ]
    finally:
        with postgresql.begin() as conn:
            conn.execute(sa.DDL(f"DROP COLLATION {quoted}"))


@pytest.mark.parametrize("engine", BACKENDS, indirect=True)
def test_big_integers_with_null_are_not_rounded(engine: sa.Engine) -> None:
    # BIGINT 2**53, 2**53 + 1, NULL, 2**53 + 1, 2**63 - 1: 4 values (2**53 + 1 twice) ->
    # classes 4, histogram [[1, 3], [2, 1]]; through float64 (a column with NULL) 2**53 + 1
    # becomes 2**53: 3 classes, [[1, 2], [3, 1]]
    values = [2**53, 2**53 + 1, None, 2**53 + 1, 2**63 - 1]
    with created(engine, [sa.Column("n", sa.BigInteger)], [{"n": v} for v in values]) as name:
        assert histogram(class_table_from_sql(engine, ["n"], table=name)) == [[1, 3], [2, 1]]
        agg = aggregates_from_sql(engine, ["n"], table=name)
        assert histogram(agg.table) == [[1, 3], [2, 1]]


@pytest.mark.db
def test_mariadb_double_keeps_full_precision(mariadb: sa.Engine) -> None:
    # DOUBLE 1.0, 1.0000000000000002, 5e-324, 0.0, 1.0: 4 values (1.0 twice) -> classes 4,
    # histogram [[1, 3], [2, 1]]. SQLAlchemy's MySQL DOUBLE returns Decimals rounded to 10
    # places: 1.0 = 1.0000000000000002 and 5e-324 = 0 -> 2 classes, [[2, 1], [3, 1]].
    values = [1.0, 1.0000000000000002, 5e-324, 0.0, 1.0]
    rows = [{"f": v, "s": s} for v, s in zip(values, "abcde", strict=True)]
    columns = [sa.Column("f", mysql.DOUBLE), sa.Column("s", mysql.VARCHAR(5))]
    with created(mariadb, columns, rows) as name:
        assert histogram(class_table_from_sql(mariadb, ["f"], table=name)) == [[1, 3], [2, 1]]
        # as a sensitive column of one class: 4 distinct values -> l = 4
        g_rows = [{"g": "x", "f": v} for v in values]
        g_columns = [sa.Column("g", mysql.VARCHAR(5)), sa.Column("f", mysql.DOUBLE)]
        with created(mariadb, g_columns, g_rows) as g_name:
            assert l_distinct(mariadb, ["g"], g_name, "f") == 4


# ----------------------------------------------------------------------------- COPY
# (value, how many records hold it): every multiplicity is its own class size, so the size
# tells which class holds which value
COPY_SPECIALS: list[tuple[str | None, int]] = [
    ("x\ny", 1),
    ("x\r\ny", 3),
    ("x\r", 4),
    ('"', 5),
    ('a"b', 6),
    ("a,b", 7),
    ("", 8),  # empty text: COPY writes ""
    (None, 9),  # NULL: COPY writes an unquoted empty field
    ("\r\n", 10),
    ('""', 11),
    (" a ", 12),
    ("\\.", 13),  # COPY's end-of-data marker, written quoted
]
FILLER_CLASSES = 200_000
FILLER_WIDTH = 100


@pytest.mark.db
def test_postgresql_copy_reads_line_breaks_quotes_and_empty_vs_null(
    postgresql: sa.Engine,
) -> None:
    # FILLER_CLASSES filler values "v" * 100 + LF + k + CRLF + ',"' (k = 0 .. 199,999), each
    # held by 2 records, and the specials above with 1, 3, 4, ..., 13 records:
    # records 2 * 200,000 + (1 + 3 + 4 + 5 + ... + 13) = 400,000 + (1 + 88) = 400,089;
    # classes 200,000 + 12; histogram [[1, 1], [2, 200,000], [3, 1], ..., [13, 1]].
    # The COPY output is over 16 MiB, so Arrow parses it in several blocks: a block boundary
    # inside a quoted line break was "unexpected ArrowInvalid".
    assert postgresql.dialect.driver == "psycopg2"  # the COPY path
    columns = [sa.Column("q", sa.Text), sa.Column("s", sa.Text)]
    rows = [{"q": v, "s": "a"} for v, times in COPY_SPECIALS for _ in range(times)]
    with created(postgresql, columns, rows) as name:
        target = sa.Table(name, sa.MetaData(), autoload_with=postgresql)
        g = sa.func.generate_series(1, 2 * FILLER_CLASSES).table_valued("g").render_derived()
        filler = sa.func.concat(
            sa.func.repeat("v", FILLER_WIDTH), "\n", g.c.g % FILLER_CLASSES, '\r\n,"'
        )
        with postgresql.begin() as conn:
            rows_of = sa.select(filler, sa.literal("a"))
            conn.execute(target.insert().from_select(["q", "s"], rows_of))
            # the class rows' values alone are more than one block of COPY output
            distinct = sa.select(target.c.q).distinct().subquery()
            width = sa.select(sa.func.sum(sa.func.octet_length(distinct.c.q)))
            assert conn.execute(width).scalar_one() > COPY_BLOCK_BYTES
        expected = [[1, 1], [2, FILLER_CLASSES], *([t, 1] for _, t in COPY_SPECIALS if t > 1)]
        table = class_table_from_sql(postgresql, ["q"], table=name)
        assert (table.records, table.classes) == (400_089, FILLER_CLASSES + 12)
        assert histogram(table) == expected
        # every special value came back exactly: quotes, separators, CR/LF, "" apart from NULL
        by_size = value_by_size(
            class_table_from_grouped(
                # the special classes only (size != 2), to keep the size -> value map unique
                _specials_only(table),
                ["q"],
                COUNT_LABEL,
            )
        )
        assert by_size == {times: value for value, times in COPY_SPECIALS}
        # the value counts (a second COPY) meet the class rows: one value "a" per class -> l 1
        agg = aggregates_from_sql(postgresql, ["q"], table=name, sensitive=["s"])
        assert histogram(agg.table) == expected
        assert histogram(histogram_from_sql(postgresql, ["q"], table=name)) == expected


def _specials_only(table: ClassTable) -> pa.Table:
    """The classes of ``table`` whose size is not 2, as a grouped Arrow table (value, size)."""
    assert table.dictionaries is not None
    dictionary = table.dictionaries[0]
    keep = table.sizes != 2
    codes = pa.array(table.codes[keep, 0])
    values = dictionary.take(codes) if isinstance(dictionary, pa.Array) else None
    assert values is not None, "the COPY path hands over an Arrow dictionary"
    return pa.table({"q": values, COUNT_LABEL: pa.array(table.sizes[keep])})


# ----------------------------------------------------------------------------- floats
@pytest.mark.db
@pytest.mark.parametrize("path", ["copy", "cursor"])
def test_postgresql_zero_signs_and_nan_and_null(
    postgresql: sa.Engine, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # double precision f with sensitive s: (0.0, a), (-0.0, b), (NaN, a), (NaN, b),
    # (NULL, a), (NULL, b), (NULL, b). -0.0 = 0.0 and NaN = NaN, NaN is not NULL:
    # classes zero (2, {a, b}), NaN (2, {a, b}), NULL (3, {a, b}) -> classes 3,
    # histogram [[2, 2], [3, 1]], distinct l 2. NaN taken for missing: one class of 5
    # ([[2, 1], [5, 1]]); -0.0 apart from 0.0: [[1, 2], [2, 1], [3, 1]] and l 1.
    if path == "cursor":  # the rows fetched by the driver (what other PostgreSQL drivers do)
        monkeypatch.setattr(sql_fetch, "copy_out", lambda *args, **kwargs: None)
    # written as text and cast by PostgreSQL: a float -0.0 sent by the driver arrives as the
    # literal -0.0, a numeric that casts to +0
    values = ["0", "-0", "NaN", "NaN", None, None, None]
    columns = [sa.Column("f", sa.Double), sa.Column("s", sa.Text)]
    with created(postgresql, columns, []) as name:
        target = sa.Table(name, sa.MetaData(), autoload_with=postgresql)
        rows = [
            {"f": sa.null() if v is None else sa.cast(sa.literal(v), sa.Double), "s": s}
            for v, s in zip(values, "abababb", strict=True)
        ]
        with postgresql.begin() as conn:
            conn.execute(target.insert().values(rows))
            signs = sa.select(sa.func.count()).where(sa.cast(target.c.f, sa.Text) == "-0")
            assert conn.execute(signs).scalar_one() == 1  # a negative zero is stored
        table = class_table_from_sql(postgresql, ["f"], table=name)
        assert (table.classes, table.records) == (3, 7)
        assert histogram(table) == [[2, 2], [3, 1]]
        assert histogram(histogram_from_sql(postgresql, ["f"], table=name)) == [[2, 2], [3, 1]]
        assert l_distinct(postgresql, ["f"], name, "s") == 2
        query = query_of(postgresql, name, "f", "s")
        agg = aggregates_from_sql(postgresql, ["f"], sql=query, sensitive=["s"])
        assert histogram(agg.table) == [[2, 2], [3, 1]]


# ----------------------------------------------------------------------------- histogram
# a, b text, n integer (always 1). Rows ("*", "*") x3 are suppressed; ("*", "x"), ("x", "*")
# and ("* ", "*") are not ("* " is not "*"); then (x, y) x2, (y, y) x2, (z, y) x3.
SUPPRESSION_ROWS = [
    *[("*", "*")] * 3,
    ("*", "x"),
    ("x", "*"),
    ("* ", "*"),
    *[("x", "y")] * 2,
    *[("y", "y")] * 2,
    *[("z", "y")] * 3,
]


def _suppression_table(engine: sa.Engine) -> Any:
    columns = [
        sa.Column("a", sa.String(5)),
        sa.Column("b", sa.String(5)),
        sa.Column("n", sa.Integer),
    ]
    return created(engine, columns, [{"a": a, "b": b, "n": 1} for a, b in SUPPRESSION_ROWS])


@pytest.mark.parametrize("engine", BACKENDS, indirect=True)
def test_histogram_equals_class_table_histogram(engine: sa.Engine) -> None:
    # QIs a, b: 3 records excluded; classes (*,x) 1, (x,*) 1, ("* ",*) 1, (x,y) 2, (y,y) 2,
    # (z,y) 3 -> records 10, classes 6, histogram [[1, 3], [2, 2], [3, 1]].
    # QIs a, n: n is an integer, never the text "*": nothing excluded; a = * (4 records),
    # x (3), "* " (1), y (2), z (3) -> histogram [[1, 1], [2, 1], [3, 2], [4, 1]].
    with _suppression_table(engine) as name:
        query = query_of(engine, name, "a", "b", "n")
        for source in ({"table": name}, {"sql": query}):
            sizes = histogram_from_sql(engine, ["a", "b"], **source)
            table = class_table_from_sql(engine, ["a", "b"], **source)
            agg = aggregates_from_sql(engine, ["a", "b"], **source)
            for result in (sizes, table, agg.table):
                assert histogram(result) == [[1, 3], [2, 2], [3, 1]]
                assert (result.records, result.classes, result.excluded_records) == (10, 6, 3)
            assert histogram(sizes) == histogram(table)
            with_int = histogram_from_sql(engine, ["a", "n"], **source)
            assert histogram(with_int) == [[1, 1], [2, 1], [3, 2], [4, 1]]
            assert with_int.excluded_records == 0
            assert histogram(with_int) == histogram(
                class_table_from_sql(engine, ["a", "n"], **source)
            )


@pytest.mark.parametrize("engine", BACKENDS, indirect=True)
def test_grouped_rows_mark_the_suppressed_class(engine: sa.Engine) -> None:
    # the functions Great Expectations calls (grouped_counts, grouped_value_counts) hand the
    # suppressed class over with "*" in every QI, whatever the QI values look like on the
    # client (MariaDB text comes back as bytes): the engine excludes its 3 records. Same
    # classes as above; sensitive n is 1 everywhere -> one value per class.
    with _suppression_table(engine) as name, engine.connect() as conn:
        src = reflect_table(conn, name)
        counts = grouped_counts(conn, src, ["a", "b"])
        values = grouped_value_counts(conn, src, ["a", "b"], "n")
        table = class_table_from_grouped(counts, ["a", "b"], COUNT_LABEL)
        agg = aggregate_grouped(counts, ["a", "b"], COUNT_LABEL, value_counts={"n": values})
    for result in (table, agg.table):
        assert histogram(result) == [[1, 3], [2, 2], [3, 1]]
        assert result.excluded_records == 3


@pytest.mark.parametrize("engine", BACKENDS, indirect=True)
def test_empty_and_all_suppressed_tables(engine: sa.Engine) -> None:
    # no records -> EmptyDatasetError; 3 records all ("*", "*") -> EmptyDatasetError with
    # the count 3
    columns = [sa.Column("a", sa.String(5)), sa.Column("b", sa.String(5))]
    with created(engine, columns, []) as name:
        for read in (histogram_from_sql, class_table_from_sql, aggregates_from_sql):
            with pytest.raises(EmptyDatasetError, match="has no records"):
                read(engine, ["a", "b"], table=name)
    columns = [sa.Column("a", sa.String(5)), sa.Column("b", sa.String(5))]
    with created(engine, columns, [{"a": "*", "b": "*"}] * 3) as name:
        for read in (histogram_from_sql, class_table_from_sql, aggregates_from_sql):
            with pytest.raises(EmptyDatasetError, match=r"every record \(3\) is fully suppressed"):
                read(engine, ["a", "b"], table=name)


@pytest.mark.parametrize("engine", BACKENDS, indirect=True)
def test_histogram_fetches_one_row_per_distinct_size(engine: sa.Engine) -> None:
    # 3,000 classes: k = 0 .. 2,999 with k % 3 + 1 records (1,000 classes each of sizes 1, 2
    # and 3: 6,000 records), plus ("*", "*") twice. The histogram statement returns one row
    # per (size, suppressed) pair: (1, 0), (2, 0), (3, 0), (2, 1) -> 4 rows, not 3,001.
    rows = [{"a": f"v{k}", "b": "w"} for k in range(3_000) for _ in range(k % 3 + 1)] + [
        {"a": "*", "b": "*"}
    ] * 2
    columns = [sa.Column("a", sa.String(8)), sa.Column("b", sa.String(8))]
    with created(engine, columns, rows) as name:
        statements: list[tuple[str, Any]] = []

        def seen(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
            statements.append((statement, parameters))

        sa.event.listen(engine, "before_cursor_execute", seen)
        try:
            sizes = histogram_from_sql(engine, ["a", "b"], table=name)
        finally:
            sa.event.remove(engine, "before_cursor_execute", seen)
        assert histogram(sizes) == [[1, 1_000], [2, 1_000], [3, 1_000]]
        assert sizes.excluded_records == 2
        grouped = [(s, p) for s, p in statements if "reident_class_size" in s]
        assert len(grouped) == 1, "one statement counts the classes"
        statement, parameters = grouped[0]
        assert not parameters, "constants are written into the statement, no parameter"
        with engine.connect() as conn:  # what that statement returns
            returned = conn.exec_driver_sql(statement).all()
        assert len(returned) == 4
        assert sorted((int(s), int(f), int(c)) for s, f, c in returned) == [
            (1, 0, 1_000),
            (2, 0, 1_000),
            (2, 1, 1),
            (3, 0, 1_000),
        ]


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("engine", BACKENDS, indirect=True)
def test_unknown_names_in_a_query_are_input_errors(engine: sa.Engine) -> None:
    columns = [sa.Column("a", sa.String(5))]
    with created(engine, columns, [{"a": "x"}]) as name:
        for sql, problem in (
            (query_of(engine, name, "nope"), "an unknown column"),
            (query_of(engine, f"{name}_missing", "a"), "an unknown table"),
        ):
            for read in (histogram_from_sql, class_table_from_sql, aggregates_from_sql):
                with pytest.raises(InvalidInputError, match=problem):
                    read(engine, ["a"], sql=sql)


@pytest.mark.db
def test_postgresql_value_in_a_driver_error_is_not_shown(postgresql: sa.Engine) -> None:
    # CAST('Secret-José-42' AS integer) fails with 22P02, whose driver message quotes the
    # value: the InvalidInputError names the error class and code, never the value
    columns = [sa.Column("name", sa.Text)]
    with created(postgresql, columns, [{"name": "Secret-José-42"}]) as name:
        table = sa.table(name, sa.column("name"))
        query = str(sa.select(sa.cast(table.c.name, sa.Integer).label("n")).compile(postgresql))
        for read in (histogram_from_sql, class_table_from_sql, aggregates_from_sql):
            with pytest.raises(InvalidInputError) as caught:
                read(postgresql, ["n"], sql=query)
            message = str(caught.value)
            assert "Secret" not in message
            assert "SQLSTATE 22P02" in message
            assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_sqlite_undecodable_text_is_an_input_error_without_the_value(engine: sa.Engine) -> None:
    # a TEXT value that is not UTF-8 (b"Secret\xe9"): sqlite3 cannot decode it and its
    # message quotes the text; ours says what is wrong and no more
    columns = [sa.Column("name", sa.Text)]
    with created(engine, columns, []) as name:
        target = sa.Table(name, sa.MetaData(), autoload_with=engine)
        with engine.begin() as conn:
            conn.execute(target.insert().values(name=sa.cast(sa.literal(b"Secret\xe9"), sa.Text)))
        with pytest.raises(InvalidInputError, match="not valid UTF-8") as caught:
            class_table_from_sql(engine, ["name"], table=name)
        assert "Secret" not in str(caught.value)


@pytest.mark.db
def test_postgresql_lost_connection_keeps_its_class_not_its_message(
    postgresql: sa.Engine,
) -> None:
    # the query ends its own session: the error stays an OperationalError (not the input's
    # fault), and its text names only the driver's exception class
    query = "SELECT pg_terminate_backend(pg_backend_pid()) AS k"
    for read in (class_table_from_sql, histogram_from_sql):
        with pytest.raises(sa.exc.OperationalError) as caught:
            read(postgresql, ["k"], sql=query)
        message = str(caught.value)
        assert "DriverErrorWithheld" in message
        assert "terminat" not in message and "SELECT" not in message
        assert caught.value.__suppress_context__
    assert np.array_equal(  # the pool is usable again
        histogram(class_table_from_sql(postgresql, ["k"], sql="SELECT 1 AS k")), [[1, 1]]
    )

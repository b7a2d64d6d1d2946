"""Column profiles for the identifier scan (issue 27), counted where the data is.

The tables are ``tests/data/identifiers/planted.csv`` and ``clean.csv``, made by
``tests/data/identifiers/make_tables.py``; the expected counts below are derived by hand from
that script's construction (its docstring gives the reasoning per column), not from any
source's output. Every backend -- CSV and Parquet through DuckDB, a pandas frame, SQLite,
PostgreSQL, MariaDB, Spark -- must count them alike, with the columns typed as each backend
holds them (an integer ``age`` in the databases, an integer ``age`` and ``zip`` in Parquet: the
counts do not change). A second test checks that every content pattern matches the same values
on every backend as Python's ``re.search`` on a list of hostile values.
"""

from __future__ import annotations

import csv
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.identifiers import (
    CONTENT_PATTERNS,
    VERIFIED_KINDS,
    ColumnPlan,
    ColumnProfile,
)
from reident_airflow.sources.files import FileSource
from tests.conftest import require_server
from tests.spark.sessions import classic_spark

DATA = Path(__file__).resolve().parents[1] / "data" / "identifiers"
SPARK_FIXTURES = (classic_spark,)  # the Spark session, used by name

# (records, nulls, distinct, singletons, {pattern: records matching, non-zero only},
#  over_89 for age, zip3 for zip) -- from make_tables.py's construction:
PLANTED: dict[str, tuple[int, int, int, int, dict[str, int]]] = {
    "ref": (200, 0, 200, 200, {}),  # R + five digits, unique
    "mrn": (200, 0, 200, 200, {}),  # MRN- + six digits, unique
    "sex": (200, 0, 2, 0, {}),  # F/M, 100 each
    # 20 + i % 60 for i < 199 (residues 0..18 four times, 19..59 three times) and one 97
    "age": (200, 0, 61, 1, {}),
    # 03601 x2, 03609 x1, 69201 x2, five other codes x39
    "zip": (200, 0, 8, 1, {}),
    # four formats, each number once; UK and French forms have four or more parts (text);
    # the dotted US form is 3-3-4 digits, an NHS number's layout (national_id)
    "phone": (200, 0, 200, 200, {"phone": 200, "text": 100, "national_id": 50}),
    "ethnicity": (200, 0, 4, 0, {}),  # four labels x50
    # 10 missing, 4 e-mail notes, 1 card note (also a phone candidate), 8 phrases x23 or x24
    "note": (200, 10, 13, 5, {"email": 4, "card": 1, "phone": 1, "text": 190}),
}
PLANTED_OVER_89 = 1  # the one 97
PLANTED_ZIP3 = 5  # 03601 x2, 03609, 69201 x2
CARD_NOTE = "paid the fee with card 4111 1111 1111 1111 at desk"

# 100 records each written twice: nothing unique, no pattern, no age over 89, no ZIP3
CLEAN: dict[str, tuple[int, int, int, int, dict[str, int]]] = {
    "sex": (200, 0, 2, 0, {}),
    "age": (200, 0, 50, 0, {}),  # 20 + j % 50
    "zip": (200, 0, 5, 0, {}),
    "ethnicity": (200, 0, 4, 0, {}),
    "ward": (200, 0, 10, 0, {}),
    "note": (200, 0, 6, 0, {}),  # six notes of at most three words
}

SAMPLE = 5
#: the columns stored as integers where a backend has types (Parquet: both; databases: age)
PARQUET_INTEGERS = ("age", "zip")
SQL_INTEGERS = ("age",)


def _rows(name: str) -> list[dict[str, str | None]]:
    with (DATA / f"{name}.csv").open(encoding="utf-8", newline="") as fh:
        return [{k: (v if v != "" else None) for k, v in r.items()} for r in csv.DictReader(fh)]


def plans_for(kinds: dict[str, str]) -> list[ColumnPlan]:
    """Every pattern on every string column (the verified ones sampled), over 89 on ``age``,
    ZIP3 on ``zip``."""
    return [
        ColumnPlan(
            column,
            kind,
            patterns=tuple(CONTENT_PATTERNS) if kind == "string" else (),
            sample=tuple(k for k in CONTENT_PATTERNS if k in VERIFIED_KINDS)
            if kind == "string"
            else (),
            sample_size=SAMPLE,
            over_89=column == "age",
            zip3=column == "zip",
        )
        for column, kind in kinds.items()
    ]


# ------------------------------------------------------------------------------ backends
BACKENDS = [
    "csv",
    "parquet",
    "frame",
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
    pytest.param("spark", marks=pytest.mark.spark),
]


def _parquet(name: str, tmp_path: Path, integers: tuple[str, ...]) -> Path:
    import duckdb

    out = tmp_path / f"{name}.parquet"
    names = list(_rows(name)[0])
    select = ", ".join(
        f'CAST("{n}" AS BIGINT) AS "{n}"' if n in integers else f'"{n}"' for n in names
    )
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT {select} FROM read_csv($p, header = true, all_varchar = true)) "
        f"TO '{out}' (FORMAT parquet)",
        {"p": str(DATA / f"{name}.csv")},
    )
    con.close()
    return out


@pytest.fixture
def sql_table(tmp_path: Path) -> Iterator[Any]:
    """``make(backend, rows, integers)``: a table of ``rows`` on that backend (text columns,
    ``integers`` as INTEGER), as ``(engine, table name)``; every table is dropped after."""
    made: list[tuple[sa.Engine, sa.Table]] = []

    def make(
        backend: str, rows: list[dict[str, Any]], integers: tuple[str, ...]
    ) -> tuple[sa.Engine, str]:
        url = (
            f"sqlite:///{tmp_path / 'profile.db'}"
            if backend == "sqlite"
            else require_server(backend)
        )
        engine = sa.create_engine(url)
        name = f"i27_{uuid.uuid4().hex[:10]}"
        columns = [sa.Column(c, sa.Integer() if c in integers else sa.String(255)) for c in rows[0]]
        table = sa.Table(name, sa.MetaData(), *columns)
        table.create(engine)
        made.append((engine, table))
        typed = [
            {k: (int(v) if k in integers and v is not None else v) for k, v in r.items()}
            for r in rows
        ]
        with engine.begin() as conn:
            conn.execute(table.insert(), typed)
        return engine, name

    yield make
    for engine, table in made:
        table.drop(engine)
        engine.dispose()


def source_for(
    backend: str, name: str, tmp_path: Path, request: pytest.FixtureRequest, sql_table: Any
) -> Any:
    """The source of ``tests/data/identifiers/<name>.csv`` on ``backend``."""
    path = DATA / f"{name}.csv"
    if backend == "csv":
        return FileSource(path)
    if backend == "parquet":
        return FileSource(_parquet(name, tmp_path, PARQUET_INTEGERS))
    if backend == "frame":
        import pandas as pd

        from reident_airflow.sources.frames import FrameSource

        return FrameSource(pd.read_csv(path, dtype=str, keep_default_na=False).replace("", None))
    if backend == "spark":
        from pyspark.sql import functions as F

        from reident_airflow.sources.spark import SparkSource

        session = request.getfixturevalue("classic_spark")
        rows = _rows(name)
        frame = session.createDataFrame(
            [tuple(r.values()) for r in rows], schema=", ".join(f"{c} string" for c in rows[0])
        )
        return SparkSource(frame.withColumn("age", F.col("age").cast("int")))
    from reident_airflow.sources.sql import SqlSource

    engine, table = sql_table(backend, _rows(name), SQL_INTEGERS)
    return SqlSource(engine, table=table)


def check(
    profiles: tuple[ColumnProfile, ...],
    expected: dict[str, tuple[int, int, int, int, dict[str, int]]],
    over_89: int,
    zip3: int,
) -> None:
    assert [p.column for p in profiles] == list(expected)
    for p in profiles:
        records, nulls, distinct, singletons, matches = expected[p.column]
        got = (
            p.records,
            p.nulls,
            p.distinct,
            p.singletons,
            {k: v for k, v in p.matches.items() if v},
        )
        assert got == (records, nulls, distinct, singletons, matches), p.column
        assert not p.approximate
        assert p.over_89 == (over_89 if p.column == "age" else None)
        assert p.zip3 == (zip3 if p.column == "zip" else None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_planted_table(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, sql_table: Any
) -> None:
    """Every planted identifier is counted, the same on every backend."""
    with source_for(backend, "planted", tmp_path, request, sql_table) as source:
        kinds = source.column_kinds()
        assert list(kinds) == list(PLANTED)
        assert {k for c, k in kinds.items() if c not in ("age", "zip")} == {"string"}
        profiles = source.profile(plans_for(kinds))
    check(profiles, PLANTED, PLANTED_OVER_89, PLANTED_ZIP3)
    by = {p.column: p for p in profiles}
    # the card note is the one card candidate and one of the phone candidates: both complete
    assert by["note"].samples["card"] == ((CARD_NOTE, 1),)
    assert by["note"].samples["phone"] == ((CARD_NOTE, 1),)
    assert by["note"].complete["card"] and by["note"].complete["phone"]
    assert by["note"].samples["date"] == () and by["note"].complete["date"]
    # 200 phone numbers, each held by one record: a sample of 5, not complete, the first
    # in byte order ("+1 (" sorts before "+44", "01" and "202."; NN = i // 4 from 00)
    assert by["phone"].samples["phone"] == tuple(
        (f"+1 (202) 555-01{nn:02d}", 1) for nn in range(SAMPLE)
    )
    assert by["phone"].complete["phone"] is False
    # the sampled values never show in a profile's text
    assert "4111" not in repr(profiles) and "@" not in repr(profiles)


@pytest.mark.parametrize("backend", BACKENDS)
def test_clean_table(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, sql_table: Any
) -> None:
    """The clean table: nothing unique, no pattern, no age over 89, no restricted ZIP3."""
    with source_for(backend, "clean", tmp_path, request, sql_table) as source:
        profiles = source.profile(plans_for(source.column_kinds()))
    check(profiles, CLEAN, 0, 0)
    assert all(not any(s for s in p.samples.values()) for p in profiles)


# ------------------------------------------------------------------------------ patterns
#: Values made to sit on the edges of the patterns: each pattern must match exactly the
#: values Python's re.search matches, on every backend.
HOSTILE = [
    "Ann@x.org",
    "ann@X.ORG",
    "a@b.c",
    "user@@example.com",
    "@example.com",
    "user@localhost",
    "a%b+c@sub.example.co.uk",
    "mail me: jo.smith@example.org.",
    "café@exämple.org",
    "https://example.org/x?y=1",
    "ftp://host",
    "http:/broken",
    "www.example.com",
    "WWW.EXAMPLE.COM",
    "www.x",
    "192.168.0.1",
    "256.1.1.1",
    "1.2.3",
    "1.2.3.4.5",
    "a10.0.0.1b",
    "ip=10.0.0.255;",
    "fe80::1",
    "2001:db8::ff00:42:8329",
    "12:34:56",
    "a:b:c",
    "::",
    "+1 (202) 555-0100",
    "12345",
    "06 12 34 56 78",
    "0044 20 7946 0018",
    "4111 1111 1111 1111",
    "4111-1111-1111-1111",
    "4111111111111111",
    "41111111111111111111111111",
    "DE89 3704 0044 0532 0130 00",
    "GB82WEST12345698765432",
    "de89370400440532013000",
    "123-45-6789",
    "123-45-67890",
    "2026-12-06",
    "06/12/2026",
    "2026.1.5",
    "1.5.2026x",
    "20261206",
    "the quick brown fox",
    "one  two   three four",
    "three words only",
    "tab\tseparated\tvalues\there",
    "line one\nline two and more",
    "",
    " ",
    "١٢٣٤٥٦٧٨٩٠١",
    "１２３-４５-６７８９",
    # issue 38: SSNs, phones, cards, national ids and addresses as hospitals write them
    "123 45 6789",
    "123456789",
    "SSN123456789",
    "030/32687484",
    "3782 822463 10005",
    "3782-822463-10005",
    "943 476 5919",
    "2 55 08 14 168 025 38",
    "2 53 07 2A 073 004 70",
    "253072b07300470",
    "1EG4-TE5-MK73",
    "1eg4te5mk73",
    "x1EG4TE5MK73",
    "1112.22.333",
    "36 574 261 809",
    "046-454-286",
    "0002-3227-30",
    "4006381333931",
    "978-3-16-148410-0",
    "1234567890123456789",
    "12 Main Street",
    "12 bis, rue de la Paix",
    "Hauptstraße 5",
    "Hauptstr. 5",
    "Kerkstraat 12a",
    "Calle Mayor, 5",
    "C/ Mayor 5",
    "Via Roma 10",
    "pain during 2 weeks",
    "taken via iv line 2",
    "5 mmol/l",
    # issue 42: date elements Safe Harbor removes (months, ISO weeks, quarters), accented
    # month names, and near misses
    "2025-05",
    "05/2025",
    "5-2025",
    "1999.5",
    "2025-123",
    "May 2025",
    "admitted may 5, 2025 at night",
    "MAYO DE 2025",
    "février 2025",
    "fevrier 2025",
    "März 2025",
    "maerz 2025",
    "août 2025",
    "Dezember2025",
    "Omar 2025",
    "may 20251",
    "2025-W19",
    "2025w19-3",
    "2025-W5",
    "2025-Q2",
    "2025Q2",
    "Q2 2025",
    "q4/2024",
    "fiscal_q3",
    "Q5 2025",
]


def _hostile_source(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, sql_table: Any
) -> Any:
    rows: list[dict[str, Any]] = [{"v": v} for v in HOSTILE]
    if backend in ("csv", "parquet", "frame"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"v": pa.array(HOSTILE, type=pa.string())})
        if backend == "frame":
            from reident_airflow.sources.frames import FrameSource

            return FrameSource(table)
        path = tmp_path / "hostile.parquet"
        pq.write_table(table, path)
        if backend == "parquet":
            return FileSource(path)
        out = tmp_path / "hostile.csv"
        with out.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n")
            writer.writerow(["v"])
            writer.writerows([v] for v in HOSTILE)
        return FileSource(out)
    if backend == "spark":
        from reident_airflow.sources.spark import SparkSource

        session = request.getfixturevalue("classic_spark")
        return SparkSource(session.createDataFrame([(v,) for v in HOSTILE], schema="v string"))
    from reident_airflow.sources.sql import SqlSource

    engine, table = sql_table(backend, rows, ())
    return SqlSource(engine, table=table)


@pytest.mark.parametrize("backend", BACKENDS)
def test_patterns_match_like_python(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, sql_table: Any
) -> None:
    """Each content pattern matches, on each backend, exactly the values ``re.search``
    matches (the matched values come back as a complete sample)."""
    plan = ColumnPlan(
        "v",
        "string",
        patterns=tuple(CONTENT_PATTERNS),
        sample=tuple(CONTENT_PATTERNS),
        sample_size=len(HOSTILE),
    )
    with _hostile_source(backend, tmp_path, request, sql_table) as source:
        (profile,) = source.profile([plan])
    assert profile.records == len(HOSTILE) and profile.distinct == len(set(HOSTILE))
    for kind, pattern in CONTENT_PATTERNS.items():
        want = {v for v in HOSTILE if re.search(pattern, v)}
        got = {v for v, _ in profile.samples[kind]}
        assert profile.complete[kind]
        assert got == want, (kind, sorted(got ^ want))
        assert profile.matches[kind] == len(want), kind


# -------------------------------------------------------------------------------- refusals
def test_file_kinds_and_refusals(tmp_path: Path) -> None:
    """A CSV's columns are all text; Parquet's from its schema; a repeated header name, an
    unknown pattern, a column planned twice and approximate counts are refused."""
    assert set(FileSource(DATA / "planted.csv").column_kinds().values()) == {"string"}
    parquet = FileSource(_parquet("planted", tmp_path, PARQUET_INTEGERS)).column_kinds()
    assert parquet["age"] == parquet["zip"] == "integer" and parquet["note"] == "string"
    twice = tmp_path / "twice.csv"
    twice.write_text("a,b,a\n1,2,3\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="appears twice"):
        FileSource(twice).column_kinds()
    source = FileSource(DATA / "planted.csv")
    with pytest.raises(InvalidInputError, match="approximate"):
        source.profile([ColumnPlan("ref", "string")], approximate=True)
    with pytest.raises(InvalidInputError, match="unknown content pattern"):
        source.profile([ColumnPlan("ref", "string", patterns=("nope",))])
    with pytest.raises(InvalidInputError, match="planned twice"):
        source.profile([ColumnPlan("ref", "string"), ColumnPlan("ref", "string")])
    with pytest.raises(InvalidInputError, match="not counted"):
        source.profile([ColumnPlan("ref", "string", sample=("card",), sample_size=1)])


def test_sql_refuses_approximate(tmp_path: Path) -> None:
    from reident_airflow.sources.sql import SqlSource

    source = SqlSource(f"sqlite:///{tmp_path / 'x.db'}", table="t")
    with source, pytest.raises(InvalidInputError, match="approximate"):
        source.profile([ColumnPlan("a", "string")], approximate=True)


def test_spark_approximate(classic_spark: Any) -> None:
    """Spark on request: an estimated distinct count, no singletons, labelled approximate;
    the other counts stay exact."""
    from reident_airflow.sources.spark import SparkSource

    rows = _rows("planted")
    frame = classic_spark.createDataFrame(
        [tuple(r.values()) for r in rows], schema=", ".join(f"{c} string" for c in rows[0])
    )
    source = SparkSource(frame)
    profiles = source.profile(plans_for(source.column_kinds()), approximate=True)
    for p in profiles:
        records, nulls, distinct, _, matches = PLANTED[p.column]
        assert p.approximate and p.singletons is None
        assert (p.records, p.nulls) == (records, nulls)
        assert {k: v for k, v in p.matches.items() if v} == matches
        assert p.distinct is not None and abs(p.distinct - distinct) <= 0.1 * distinct
    assert {p.column: p for p in profiles}["note"].samples["card"] == ((CARD_NOTE, 1),)


SQL_BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]


@pytest.mark.parametrize("backend", SQL_BACKENDS)
def test_sql_query_and_where(backend: str, sql_table: Any) -> None:
    """A query's columns get their kinds from the result (an integer ``age`` on PostgreSQL
    and MariaDB; SQLite types values, not a query's columns: ``other``), and a ``where``
    narrows what is counted. The records with ``sex = 'F'`` are the even ``i`` of
    make_tables.py: notes -- 5 missing (i = 0, 2, 4, 6, 8), 2 e-mails (10, 12), the card
    (14), 4 phrases (odd indexes) x23; ages -- 30 even residues, each 3 or 4 times."""
    from reident_airflow.sources.sql import SqlSource

    engine, table = sql_table(backend, _rows("planted"), SQL_INTEGERS)
    with SqlSource(engine, sql=f"SELECT * FROM {table}") as query:
        kinds = query.column_kinds()
    assert kinds["age"] == ("other" if backend == "sqlite" else "integer")
    assert kinds["note"] == ("other" if backend == "sqlite" else "string")
    plans = [
        ColumnPlan("note", "string", tuple(CONTENT_PATTERNS), ("card",), 2),
        ColumnPlan("age", kinds["age"], over_89=True),
    ]
    with SqlSource(engine, table=table, where="sex = 'F'") as narrowed:
        note, age = narrowed.profile(plans)
    assert (note.records, note.nulls, note.distinct, note.singletons) == (100, 5, 7, 3)
    assert {k: v for k, v in note.matches.items() if v} == {
        "email": 2,
        "card": 1,
        "phone": 1,
        "text": 95,
    }
    assert note.samples["card"] == ((CARD_NOTE, 1),) and note.complete["card"]
    assert (age.records, age.distinct, age.singletons, age.over_89) == (100, 30, 0, 0)


@pytest.mark.db
def test_mariadb_bit_column_is_profiled_without_a_warning() -> None:
    # MariaDB's BIT type has no SQLAlchemy operator classes: an IS NULL on it warned (an
    # error under the test suite's warning filter). Hand-made: 3 records, b = 1, 0, NULL.
    from reident_airflow.sources.sql import SqlSource

    engine = sa.create_engine(require_server("mariadb"))
    name = f"i27_bit_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {name} (b BIT(1))")
        conn.exec_driver_sql(f"INSERT INTO {name} VALUES (b'1'), (b'0'), (NULL)")
    try:
        with SqlSource(engine.url.render_as_string(hide_password=False), table=name) as source:
            kinds = source.column_kinds()
            (profile,) = source.profile([ColumnPlan("b", kinds["b"])])
        assert (profile.records, profile.nulls, profile.distinct, profile.singletons) == (
            3,
            1,
            2,
            2,
        )
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE {name}")
        engine.dispose()


def _forms_source(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, sql_table: Any
) -> Any:
    """``forms.csv`` (issue 38) on ``backend``, every column text."""
    rows = _rows("forms")
    if backend == "csv":
        return FileSource(DATA / "forms.csv")
    if backend in ("parquet", "frame"):
        import pyarrow as pa

        table = pa.table({c: pa.array([r[c] for r in rows], type=pa.string()) for c in rows[0]})
        if backend == "frame":
            from reident_airflow.sources.frames import FrameSource

            return FrameSource(table)
        import pyarrow.parquet as pq

        pq.write_table(table, tmp_path / "forms.parquet")
        return FileSource(tmp_path / "forms.parquet")
    if backend == "spark":
        from reident_airflow.sources.spark import SparkSource

        session = request.getfixturevalue("classic_spark")
        schema = ", ".join(f"`{c}` string" for c in rows[0])
        return SparkSource(session.createDataFrame([tuple(r.values()) for r in rows], schema))
    from reident_airflow.sources.sql import SqlSource

    engine, table = sql_table(backend, rows, ())
    return SqlSource(engine, table=table)


@pytest.mark.parametrize("backend", BACKENDS)
def test_forms_get_the_same_verdicts_everywhere(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, sql_table: Any
) -> None:
    """Issue 38's forms and traps: every backend gives the verdicts and verified counts of
    the CSV read through DuckDB (what each must be: tests/engine/test_identifier_forms.py)."""
    from reident_airflow.engine.identifiers import ScanOptions, scan_columns

    def read(source: Any) -> dict[str, Any]:
        with source:
            found = scan_columns(source, ScanOptions())
        return {c.column: (c.verdict, c.reasons, c.content) for c in found.columns}

    want = read(FileSource(DATA / "forms.csv"))
    got = read(_forms_source(backend, tmp_path, request, sql_table))
    assert got == want

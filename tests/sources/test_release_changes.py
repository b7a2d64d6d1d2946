"""Arrivals and departures between two releases, counted where the data is (issue 28).

Each case is a pair of small releases written out below. :func:`reference` counts the
arrivals and departures in plain Python, apart from every backend: ``collections.Counter``
multiset differences over the columns both releases hold, a count per QI class (the class
whose every QI is ``*`` left out, as an assessment leaves it out), then a count per size. Every
backend -- CSV, Parquet, a DataFrame (DuckDB), SQLite, PostgreSQL, MariaDB, Spark -- must
count the same from the same releases written in its own types. Values that a collation or a
type's own equality would merge (case, trailing spaces, NFC and NFD, ``citext``) must stay
apart, and floats compare as docs/reading.md says (``-0.0 = 0.0``, NaN one value, missing
another).
"""

from __future__ import annotations

import csv
import logging
import math
import sqlite3
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from reident_airflow.engine.differencing import ReleaseChanges, differencing
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources import Source
from reident_airflow.sources.files import FileSource
from reident_airflow.sources.frames import FrameSource
from reident_airflow.sources.sql import SqlSource
from tests.conftest import require_server
from tests.spark.sessions import classic_spark, connect_server, session, spark, spark_connect

__all__ = ["classic_spark", "connect_server", "session", "spark", "spark_connect"]

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Release:
    """A release as written: its columns (in its order), its rows, and each column's type
    (``text`` or ``float``)."""

    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    types: tuple[str, ...] = ()

    def kinds(self) -> tuple[str, ...]:
        return self.types or ("text",) * len(self.columns)

    def reordered(self, columns: Sequence[str]) -> Release:
        at = [self.columns.index(c) for c in columns]
        kinds = self.kinds()
        return Release(
            tuple(columns),
            tuple(tuple(r[i] for i in at) for r in self.rows),
            tuple(kinds[i] for i in at),
        )


def _key(value: Any) -> Any:
    """A value as the reading contract compares it: every NaN one value (apart from missing),
    ``-0.0`` equal to ``0.0``; anything else as it is."""
    if isinstance(value, float):
        return ("NaN",) if math.isnan(value) else value + 0.0
    return value


def reference(previous: Release, candidate: Release, qis: Sequence[str]) -> tuple[Any, ...]:
    """``(previous records, records, arrivals histogram, departures histogram)`` in plain
    Python over the columns both releases hold; a histogram is ``((size, classes), ...)``
    or ``None`` with nothing moving."""
    shared = [c for c in candidate.columns if c in previous.columns]

    def rows(release: Release) -> Counter[Row]:
        at = [release.columns.index(c) for c in shared]
        return Counter(tuple(_key(r[i]) for i in at) for r in release.rows)

    n, p = rows(candidate), rows(previous)
    at = [shared.index(q) for q in qis]

    def side(moved: Counter[Row]) -> tuple[tuple[int, int], ...] | None:
        per_class = Counter(tuple(row[i] for i in at) for row in moved.elements())
        per_class.pop(("*",) * len(at), None)  # the suppressed class: not findable by QIs
        sizes = Counter(per_class.values())
        return tuple(sorted(sizes.items())) or None

    return (len(previous.rows), len(candidate.rows), side(n - p), side(p - n))


def summary(changes: ReleaseChanges) -> tuple[Any, ...]:
    def hist(sizes: Any) -> tuple[tuple[int, int], ...] | None:
        if sizes is None:
            return None
        return tuple((int(s), int(c)) for s, c in zip(sizes.sizes, sizes.counts, strict=True))

    return (
        changes.previous_records,
        changes.records,
        hist(changes.arrivals),
        hist(changes.departures),
    )


# ------------------------------------------------------------------------------- the cases
COLUMNS = ("sex", "zip", "diagnosis")
QIS = ("sex", "zip")
PREVIOUS = Release(
    COLUMNS,
    (
        ("F", "100", "flu"),
        ("F", "100", "flu"),
        ("F", "100", "cold"),
        ("M", "200", "flu"),
        ("M", "200", "flu"),
    ),
)
# r3 updated (cold -> asthma), (M, 200, flu) held once more, two records new in (M, 300)
MIXED = Release(
    COLUMNS,
    (
        ("F", "100", "flu"),
        ("F", "100", "flu"),
        ("F", "100", "asthma"),
        ("M", "200", "flu"),
        ("M", "200", "flu"),
        ("M", "200", "flu"),
        ("M", "300", "flu"),
        ("M", "300", "cold"),
    ),
)


def _coarse(release: Release) -> Release:
    return Release(release.columns, tuple((s, z[0] + "**", d) for s, z, d in release.rows))


CASES: dict[str, tuple[Release, Release, tuple[str, ...]]] = {
    # two new records, one in a new class: arrivals (M,300): 1, (F,100): 1
    "arrivals only": (
        PREVIOUS,
        Release(COLUMNS, (*PREVIOUS.rows, ("M", "300", "flu"), ("F", "100", "asthma"))),
        QIS,
    ),
    # both (M, 200, flu) left: departures (M,200): 2
    "departures only": (PREVIOUS, Release(COLUMNS, PREVIOUS.rows[:3]), QIS),
    # r3 cold -> asthma: one departure and one arrival in (F, 100)
    "updates": (
        PREVIOUS,
        Release(COLUMNS, (*PREVIOUS.rows[:2], ("F", "100", "asthma"), *PREVIOUS.rows[3:])),
        QIS,
    ),
    # multisets: (M,200,flu) 2 -> 3 is one arrival, (F,100,flu) 2 -> 1 one departure
    "duplicates": (
        PREVIOUS,
        Release(COLUMNS, (PREVIOUS.rows[0], *PREVIOUS.rows[2:], ("M", "200", "flu"))),
        QIS,
    ),
    "mixed": (PREVIOUS, MIXED, QIS),
    # as published, zip generalized to its first digit
    "generalized": (_coarse(PREVIOUS), _coarse(MIXED), QIS),
    "generalized on sex": (_coarse(PREVIOUS), _coarse(MIXED), ("sex",)),
    # order is not content
    "empty difference": (PREVIOUS, Release(COLUMNS, tuple(reversed(PREVIOUS.rows))), QIS),
    # the candidate's columns in another order than the previous release's
    "column order": (PREVIOUS, MIXED.reordered(("diagnosis", "zip", "sex")), QIS),
    # arrivals into the suppressed class (every QI '*') are not counted, a departure is
    "suppressed": (
        Release(COLUMNS, (*PREVIOUS.rows, ("*", "*", "flu"))),
        Release(COLUMNS, (*PREVIOUS.rows[1:], ("*", "*", "cold"), ("*", "*", "flu"))),
        QIS,
    ),
}


def test_the_reference_counts_the_hand_worked_cases() -> None:
    # the reference itself against numbers worked out by hand
    assert reference(*CASES["mixed"]) == (5, 8, ((1, 2), (2, 1)), ((1, 1),))
    assert reference(*CASES["departures only"]) == (5, 3, None, ((2, 1),))
    assert reference(*CASES["duplicates"]) == (5, 5, ((1, 1),), ((1, 1),))
    assert reference(*CASES["generalized on sex"]) == (5, 8, ((1, 1), (3, 1)), ((1, 1),))
    assert reference(*CASES["empty difference"]) == (5, 5, None, None)
    # (F,100,flu) left; the ('*','*','cold') arrival is not findable by its QIs
    assert reference(*CASES["suppressed"]) == (6, 6, None, ((1, 1),))


# ------------------------------------------------------------------------------ backends
Made = Callable[[Release, str], Source]


def _csv(release: Release, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(release.columns)
        writer.writerows(release.rows)


def _arrow(release: Release) -> pa.Table:
    types = {"text": pa.string(), "float": pa.float64()}
    return pa.table(
        {
            name: pa.array([r[i] for r in release.rows], type=types[kind])
            for i, (name, kind) in enumerate(zip(release.columns, release.kinds(), strict=True))
        }
    )


def _sql_type(dialect: str, kind: str, hostile: bool) -> Any:
    if kind == "float":
        return sa.Double()
    if hostile and dialect == "postgresql":
        return pg.CITEXT()
    if hostile and dialect == "sqlite":
        return sa.String(collation="NOCASE")
    return sa.String(64)  # MariaDB: the database's default, case-insensitive collation


@pytest.fixture
def made(tmp_path: Path) -> Iterator[Callable[..., Made]]:
    """``made(backend)(release, name)``: the release written to that backend, as a source.
    Database tables are named ``i28_<unique>`` and dropped afterwards."""
    engines: dict[str, sa.Engine] = {}
    tables: list[tuple[sa.Engine, sa.Table]] = []

    def engine(backend: str) -> sa.Engine:
        if backend not in engines:
            if backend == "sqlite":
                engines[backend] = sa.create_engine(f"sqlite:///{tmp_path / 'releases.db'}")
            else:
                engines[backend] = sa.create_engine(require_server(backend))
                if backend == "postgresql":
                    with engines[backend].begin() as conn:
                        conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS citext")
        return engines[backend]

    def for_backend(backend: str, hostile: bool = False) -> Made:
        def make(release: Release, name: str) -> Source:
            if backend == "csv":
                path = tmp_path / f"{name}.csv"
                _csv(release, path)
                return FileSource(path)
            if backend == "parquet":
                path = tmp_path / f"{name}.parquet"
                pq.write_table(_arrow(release), path)
                return FileSource(path)
            if backend == "frame":
                if "float" in release.kinds():  # Arrow keeps NaN apart from missing
                    return FrameSource(_arrow(release))
                return FrameSource(pd.DataFrame(list(release.rows), columns=list(release.columns)))
            bound = engine(backend)
            dialect = bound.dialect.name
            options: dict[str, Any] = (
                {"mysql_charset": "utf8mb4"} if dialect in ("mysql", "mariadb") else {}
            )
            table = sa.Table(
                f"i28_{uuid.uuid4().hex[:12]}",
                sa.MetaData(),
                *(
                    sa.Column(c, _sql_type(dialect, k, hostile))
                    for c, k in zip(release.columns, release.kinds(), strict=True)
                ),
                **options,
            )
            table.create(bound)
            tables.append((bound, table))
            with bound.begin() as conn:
                conn.execute(
                    table.insert(),
                    [dict(zip(release.columns, r, strict=True)) for r in release.rows],
                )
            return SqlSource(bound, table=table.name)

        return make

    yield for_backend
    for bound, table in tables:
        table.drop(bound)
    for bound in engines.values():
        bound.dispose()


BACKENDS = [
    "csv",
    "parquet",
    "frame",
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]


def _changes(make: Made, previous: Release, candidate: Release, qis: Sequence[str]) -> Any:
    with make(candidate, "candidate") as new, make(previous, "previous") as old:
        return summary(new.release_changes(old, qis))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_counts_what_the_reference_counts(
    made: Callable[[str], Made], backend: str, case: str
) -> None:
    previous, candidate, qis = CASES[case]
    assert _changes(made(backend), previous, candidate, qis) == reference(previous, candidate, qis)


# ----------------------------------------------------------------------- hostile values
# text that differs only in case, trailing spaces or Unicode normal form: 'a', 'A', 'a ',
# 'é' (NFC) and 'é' (NFD) are five values. The candidate drops 'a' and the NFC 'é' and brings
# 'A', 'a ' and the NFD 'é': 3 arrivals and 2 departures, in class 'q' (or, grouped on the
# text too, five classes of one).
HOSTILE = ("g", "t")
HOSTILE_PREVIOUS = Release(HOSTILE, (("q", "a"), ("q", "\u00e9"), ("r", "b")))
HOSTILE_CANDIDATE = Release(HOSTILE, (("q", "A"), ("q", "a "), ("q", "e\u0301"), ("r", "b")))


@pytest.mark.parametrize("qis", [("g",), ("g", "t")])
@pytest.mark.parametrize("backend", BACKENDS)
def test_case_spaces_and_normal_forms_stay_apart(
    made: Callable[..., Made], backend: str, qis: tuple[str, ...]
) -> None:
    # PostgreSQL's t is citext, SQLite's declared COLLATE NOCASE, MariaDB's under the
    # database's default (case-insensitive, PAD SPACE) collation
    expected = reference(HOSTILE_PREVIOUS, HOSTILE_CANDIDATE, qis)
    assert expected[2:] == ((((3, 1),), ((2, 1),)) if qis == ("g",) else (((1, 3),), ((1, 2),)))
    got = _changes(made(backend, hostile=True), HOSTILE_PREVIOUS, HOSTILE_CANDIDATE, qis)
    assert got == expected


# a missing value and the empty text are two values: the candidate's '' replaced a missing t
MISSING_PREVIOUS = Release(HOSTILE, (("q", None), ("q", "x"), (None, "x")))
MISSING_CANDIDATE = Release(HOSTILE, (("q", ""), ("q", "x"), (None, "x")))


@pytest.mark.parametrize("qis", [("g",), ("g", "t")])
@pytest.mark.parametrize("backend", BACKENDS[1:])  # CSV: an empty field is missing or ''
def test_missing_and_empty_text_stay_apart(
    made: Callable[[str], Made], backend: str, qis: tuple[str, ...]
) -> None:
    expected = reference(MISSING_PREVIOUS, MISSING_CANDIDATE, qis)
    assert expected == (3, 3, ((1, 1),), ((1, 1),))
    assert _changes(made(backend), MISSING_PREVIOUS, MISSING_CANDIDATE, qis) == expected


FLOATS = ("g", "x")
NAN = float("nan")
# -0.0 and 0.0 are one value, two NaNs one value, NaN and missing two: in class a nothing
# moves; in class b a missing x became NaN: one arrival and one departure
FLOAT_PREVIOUS = Release(
    FLOATS, (("a", 0.0), ("a", NAN), ("b", None), ("b", 1.5)), ("text", "float")
)
FLOAT_CANDIDATE = Release(
    FLOATS, (("a", -0.0), ("a", float("nan")), ("b", NAN), ("b", 1.5)), ("text", "float")
)


def _without_nan(release: Release, *, as_missing: bool) -> Release:
    """What a backend without NaN holds: SQLite stores NaN as NULL; MariaDB refuses it (the
    rows holding one are left out)."""
    rows = []
    for row in release.rows:
        has_nan = any(isinstance(v, float) and math.isnan(v) for v in row)
        if has_nan and not as_missing:
            continue
        rows.append(tuple(None if has_nan and isinstance(v, float) else v for v in row))
    return Release(release.columns, tuple(rows), release.types)


@pytest.mark.parametrize(
    "backend",
    ["parquet", "frame", "sqlite", *BACKENDS[4:]],
)
def test_floats_compare_by_value_nan_apart_from_missing(
    made: Callable[[str], Made], backend: str
) -> None:
    previous, candidate = FLOAT_PREVIOUS, FLOAT_CANDIDATE
    if backend in ("sqlite", "mariadb"):
        previous = _without_nan(previous, as_missing=backend == "sqlite")
        candidate = _without_nan(candidate, as_missing=backend == "sqlite")
    expected = reference(previous, candidate, ("g",))
    if backend not in ("sqlite", "mariadb"):
        assert expected == (4, 4, ((1, 1),), ((1, 1),))
    assert _changes(made(backend), previous, candidate, ("g",)) == expected


# --------------------------------------------------------------------------- the columns
def test_columns_only_one_release_holds_are_left_out_and_named(
    made: Callable[[str], Made], caplog: pytest.LogCaptureFixture
) -> None:
    # the candidate adds a column: compared on the three both hold, as the reference does
    wider = Release((*COLUMNS, "note"), tuple((*r, f"n{i}") for i, r in enumerate(MIXED.rows)))
    with caplog.at_level(logging.WARNING, logger="reident_airflow.sources.release_changes"):
        got = _changes(made("parquet"), PREVIOUS, wider, QIS)
    assert got == reference(PREVIOUS, wider, QIS) == reference(PREVIOUS, MIXED, QIS)
    assert "'note'" in caplog.text
    assert "n0" not in caplog.text  # names only, never a value


def test_chosen_columns(made: Callable[[str], Made]) -> None:
    make = made("sqlite")
    with make(MIXED, "candidate") as new, make(PREVIOUS, "previous") as old:
        # on the QIs alone the releases differ by (M,200) +1 and (M,300) +2
        got = summary(new.release_changes(old, QIS, columns=["zip", "sex"]))
        assert got == (5, 8, ((1, 1), (2, 1)), None)
        with pytest.raises(InvalidInputError, match="'sex' is not among the compared"):
            new.release_changes(old, QIS, columns=["zip", "diagnosis"])
        with pytest.raises(InvalidInputError, match="unknown compared column"):
            new.release_changes(old, QIS, columns=["zip", "sex", "age"])


def test_a_column_of_two_kinds_is_refused(tmp_path: Path) -> None:
    new, old = tmp_path / "n.parquet", tmp_path / "p.parquet"
    pq.write_table(pa.table({"zip": ["100"], "sex": ["F"]}), new)
    pq.write_table(pa.table({"zip": [100], "sex": ["F"]}), old)
    with pytest.raises(InvalidInputError, match="column 'zip' holds string values"):
        FileSource(new).release_changes(FileSource(old), ["sex"])


def test_a_nested_column_is_refused_unless_left_out(tmp_path: Path) -> None:
    table = pa.table({"sex": ["F", "M"], "tags": [[1], [2]]})
    with pytest.raises(InvalidInputError, match="'tags' is a nested column"):
        FrameSource(table).release_changes(FrameSource(table), ["sex"])
    same = FrameSource(table).release_changes(FrameSource(table), ["sex"], columns=["sex"])
    assert summary(same) == (2, 2, None, None)


def test_a_header_repeating_a_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "twice.csv"
    path.write_text("sex,sex\nF,F\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="'sex' appears twice"):
        FileSource(path).release_changes(FileSource(path), ["sex"])


# ------------------------------------------------------------------------ other backends
def test_other_backends_and_other_databases_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    _csv(PREVIOUS, path)
    for name in ("a", "b"):
        with sqlite3.connect(tmp_path / f"{name}.db") as conn:
            conn.execute("CREATE TABLE r (sex TEXT, zip TEXT, diagnosis TEXT)")
    a = SqlSource(f"sqlite:///{tmp_path / 'a.db'}", table="r")
    b = SqlSource(f"sqlite:///{tmp_path / 'b.db'}", table="r")
    with pytest.raises(InvalidInputError, match="same backend"):
        FileSource(path).release_changes(a, QIS)
    with pytest.raises(InvalidInputError, match="same backend"):
        a.release_changes(FileSource(path), QIS)
    with pytest.raises(InvalidInputError, match="another database"):
        a.release_changes(b, QIS)
    # a query and a table of one database: compared there
    query = SqlSource(f"sqlite:///{tmp_path / 'a.db'}", sql="SELECT * FROM r")
    assert summary(query.release_changes(a, QIS)) == (0, 0, None, None)


def test_the_engine_reads_the_counted_changes(made: Callable[[str], Made]) -> None:
    # the source's counts go straight into the differencing measures (docs/metrics.md §12)
    make = made("csv")
    with make(MIXED, "candidate") as new, make(PREVIOUS, "previous") as old:
        result = differencing(new.release_changes(old, QIS))
    assert (result.arrivals.records, result.arrivals.k, result.departures.records) == (4, 1, 1)


# --------------------------------------------------------------------------------- Spark
def _spark_frame(spark_session: Any, release: Release) -> Any:
    types = {"text": "string", "float": "double"}
    schema = ", ".join(
        f"{c} {types[k]}" for c, k in zip(release.columns, release.kinds(), strict=True)
    )
    return spark_session.createDataFrame(list(release.rows), schema=schema)


def test_spark_counts_what_the_reference_counts(session: Any) -> None:
    from reident_airflow.sources.spark import SparkSource

    cases = [
        *CASES.values(),
        (HOSTILE_PREVIOUS, HOSTILE_CANDIDATE, ("g",)),
        (HOSTILE_PREVIOUS, HOSTILE_CANDIDATE, ("g", "t")),
        (MISSING_PREVIOUS, MISSING_CANDIDATE, ("g", "t")),
        (FLOAT_PREVIOUS, FLOAT_CANDIDATE, ("g",)),
    ]
    for previous, candidate, qis in cases:
        new = SparkSource(_spark_frame(session, candidate))
        old = SparkSource(_spark_frame(session, previous))
        assert summary(new.release_changes(old, qis)) == reference(previous, candidate, qis)
    with pytest.raises(InvalidInputError, match="same backend"):
        new.release_changes(FrameSource(pd.DataFrame({"g": ["a"]})), ["g"])


# --------------------------------------------------------------------------- file errors
def test_a_file_error_names_the_release_that_causes_it(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("sex,zip\nF,1\n", encoding="utf-8")
    bad.write_text("sex,zip\nF,1\nM,2,3\n", encoding="utf-8")
    for new, old in ((good, bad), (bad, good)):
        with pytest.raises(InvalidInputError, match=f"{bad}: ragged CSV at line 3"):
            FileSource(new).release_changes(FileSource(old), ["sex"])


def test_a_record_longer_than_the_first_line_limit_is_read(tmp_path: Path) -> None:
    # a 3,000,000-character field, longer than the 2,000,000 bytes the reading starts with:
    # the comparison runs again with room for it. The long row replaces (F,100,cold), so one
    # arrival and one departure in (F, 100)
    long_row = ("F", "100", "x" * 3_000_000)
    candidate = Release(COLUMNS, (*PREVIOUS.rows[:2], long_row, *PREVIOUS.rows[3:]))
    new, old = tmp_path / "n.csv", tmp_path / "p.csv"
    _csv(candidate, new)
    _csv(PREVIOUS, old)
    got = summary(FileSource(new).release_changes(FileSource(old), QIS))
    assert got == reference(PREVIOUS, candidate, QIS) == (5, 5, ((1, 1),), ((1, 1),))


@pytest.mark.parametrize(
    "backend",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.db), *BACKENDS[5:]],
)
def test_two_queries_of_one_database(made: Callable[[str], Made], backend: str) -> None:
    # each release read through sql=, the candidate narrowed to the records of (M, *) and
    # (F, 100, asthma): the reference of the same rows
    make = made(backend)
    with make(MIXED, "candidate") as table_new, make(PREVIOUS, "previous") as table_old:
        assert isinstance(table_new, SqlSource) and isinstance(table_old, SqlSource)
        new = SqlSource(
            table_new.url,
            sql=f"SELECT * FROM {table_new.table} WHERE sex = 'M' OR diagnosis = 'asthma'",
        )
        old = SqlSource(table_old.url, sql=f"SELECT * FROM {table_old.table}")
        narrowed = Release(COLUMNS, tuple(r for r in MIXED.rows if r[0] == "M" or r[2] == "asthma"))
        assert summary(new.release_changes(old, QIS)) == reference(PREVIOUS, narrowed, QIS)

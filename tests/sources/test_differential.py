"""The reading contract (docs/reading.md), executable: every backend counts like plain Python.

Hypothesis generates small tables (1-40 rows, 1-3 QI columns and one sensitive column) of
hostile values -- missing, empty text, NaNs of several bit patterns, +0.0/-0.0, case and
space variants, ``01``/``1``, NFC/NFD, emoji, quotes, separators, line breaks inside values,
the suppression marker ``*``, non-UTF-8 bytes -- and each backend must report the same
records, excluded records, classes, class-size histogram and distinct-l as
:func:`~tests.sources._differential.truth`, a dictionary count under the contract:

==========  ==============================================================  ======
backend     read by                                                          tables
==========  ==============================================================  ======
CSV         ``sources.files.aggregates_from_file`` (all-text tables)           200
Parquet     ``sources.files.aggregates_from_file`` (every kind)                200
pandas      ``sources.frames.aggregates_from_frame`` (the GE path)             200
SQLite      ``sources.sql.aggregates_from_sql`` and ``histogram_from_sql``     200
PostgreSQL  ``sources.sql.aggregates_from_sql`` and ``histogram_from_sql``     100
MariaDB     ``sources.sql.aggregates_from_sql`` and ``histogram_from_sql``     100
Spark       ``sources.spark.aggregates_from_spark`` (classic session)           25
==========  ==============================================================  ======

1,025 generated tables per run (``REIDENT_DIFFERENTIAL_SCALE=10`` runs ten times as many).
The time goes to the readers, one call per table and reader (a DuckDB connection per call,
a ``CREATE``/``DROP`` per table on the servers): a database table is written once and read
by both SQL readers.

Spark runs one job per table (a second or more on a shared machine), so it takes fewer
generated tables; every hand-computed example of ``EXAMPLES`` runs on a classic session and
over Spark Connect (the sessions of ``tests/spark/conftest.py``).

What a backend cannot hold is stated in ``_differential.LIMITS`` and checked for real by
``test_known_limits``: SQLite stores NaN as NULL (its truth counts NaN as missing), MariaDB's
DOUBLE has no NaN or infinity and PostgreSQL's text no NUL (those values are not generated
for them), CSV holds only text (CSV tables are all text). No comparison is loosened.

A backend whose reader does not exist yet fails with the ImportError/AttributeError of the
missing function: missing code shows as a failure, never as a skip. The runs are
derandomized (the same tables every run) and keep no example database.
"""

from __future__ import annotations

import csv
import io
import math
import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from tests.conftest import require_server
from tests.sources._differential import (
    LIMITS,
    NAN_PAYLOAD,
    NEG_NAN,
    POOLS,
    Counts,
    CsvLayout,
    ParquetLayout,
    Table,
    arrow_table,
    counts_of,
    csv_field,
    csv_layouts,
    csv_text,
    families_for,
    frame,
    frame_check,
    frame_flavours,
    holds,
    parquet_layouts,
    reader,
    sql_table,
    sql_type,
    table,
    tables,
    truth,
    write_csv,
    write_parquet,
)
from tests.spark.sessions import connect_server, spark, spark_connect

FILES = "reident_airflow.sources.files"
SPARK = "reident_airflow.sources.spark"
FRAMES = "reident_airflow.sources.frames"
SQL = "reident_airflow.sources.sql"

_COMMON: dict[str, Any] = {
    "derandomize": True,  # the same tables on every run
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
SCALE = float(os.environ.get("REIDENT_DIFFERENTIAL_SCALE", "1"))


def examples(n: int) -> settings:
    return settings(max_examples=max(1, round(n * SCALE)), **_COMMON)


#: generated tables per backend (see the module's docstring)
TABLES = {
    "csv": 200,
    "parquet": 200,
    "pandas": 200,
    "sqlite": 200,
    "postgresql": 100,
    "mariadb": 100,
    "spark": 25,
}
SELF = settings(max_examples=100, **_COMMON)  # the helpers' own checks
SPARK_FIXTURES = (connect_server, spark, spark_connect)  # the Spark sessions, used by name

DATABASES = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]


def check(observe: Callable[[], Counts], expected: Counts) -> None:
    """The backend's counts equal the truth; a table of only suppressed records is empty."""
    if expected.records == 0:
        # every record has '*' in every QI: nothing is left to assess (EmptyDatasetError)
        with pytest.raises(EmptyDatasetError):
            observe()
        return
    got = observe()
    assert got == expected, f"the backend counted {got}, the contract {expected}"


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("differential")


def _file(workdir: Path, suffix: str) -> Path:
    return workdir / f"t_{uuid.uuid4().hex[:16]}{suffix}"


@pytest.fixture(scope="module")
def sqlite_engine(workdir: Path) -> Iterator[sa.Engine]:
    engine = sa.create_engine(f"sqlite:///{workdir / 'differential.db'}")

    @sa.event.listens_for(engine, "connect")
    def no_sync(dbapi_connection: Any, _record: Any) -> None:
        # speed only (no fsync per CREATE/INSERT/DROP): what is stored and read is the same
        dbapi_connection.execute("PRAGMA synchronous = OFF")
        dbapi_connection.execute("PRAGMA journal_mode = MEMORY")

    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def postgresql_engine() -> Iterator[sa.Engine]:
    engine = sa.create_engine(require_server("postgresql"))
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def mariadb_engine() -> Iterator[sa.Engine]:
    engine = sa.create_engine(require_server("mariadb"))
    yield engine
    engine.dispose()


def _engine(request: pytest.FixtureRequest, backend: str) -> sa.Engine:
    engine: sa.Engine = request.getfixturevalue(f"{backend}_engine")
    return engine


# ----------------------------------------------------------------------------- backends
# Each takes the reader (looked up before any table is generated, so that a reader that
# does not exist yet fails at once with its ImportError / AttributeError) and one table.
Reader = Callable[..., Any]


def csv_counts(read: Reader, workdir: Path, t: Table, layout: CsvLayout) -> Counts:
    path = write_csv(t, _file(workdir, ".csv"), layout)
    try:
        return counts_of(read(path, t.qi_names, sep=layout.sep, sensitive=["s"]), "s")
    finally:
        path.unlink()


def parquet_counts(read: Reader, workdir: Path, t: Table, layout: ParquetLayout) -> Counts:
    path = write_parquet(t, _file(workdir, ".parquet"), layout)
    try:
        return counts_of(read(path, t.qi_names, sensitive=["s"]), "s")
    finally:
        path.unlink()


def pandas_counts(read: Reader, t: Table, flavours: tuple[int, ...] = ()) -> Counts:
    df = frame(t, flavours)
    frame_check(t, df)
    return counts_of(read(df, t.qi_names, sensitive=["s"]), "s")


def sql_reader(histogram: bool) -> Reader:
    return reader(SQL, "histogram_from_sql" if histogram else "aggregates_from_sql")


def sql_counts(read: Reader, engine: sa.Engine, t: Table, *, histogram: bool) -> Counts:
    with sql_table(engine, t) as name:
        if histogram:  # a ClassSizes: the class-size histogram only, no l
            return counts_of(read(engine, t.qi_names, table=name), None)
        return counts_of(read(engine, t.qi_names, table=name, sensitive=["s"]), "s")


def sql_truth(backend: str, t: Table, *, histogram: bool) -> Counts:
    # SQLite stores NaN as NULL (LIMITS): there a NaN is a missing value
    expected = truth(t, nan_is_missing=backend == "sqlite")
    return expected.without_l() if histogram else expected


def spark_counts(read: Reader, session: Any, t: Table) -> Counts:
    """The counts of Spark's aggregates: histogram, and l and the per-class (size, distinct
    values) pairs from the sensitive column's value-count profiles."""
    from reident_airflow.engine.distributions import l_diversity_of

    counted = read(session.createDataFrame(arrow_table(t)), t.qi_names, sensitive=["s"])
    sizes = counted.histogram
    profiles = counted.profiles["s"]
    lengths = np.diff(np.r_[profiles.starts, profiles.counts.shape[0]])
    per_class: Counter[tuple[int, int]] = Counter()
    for size, distinct, classes in zip(profiles.sizes, lengths, profiles.classes, strict=True):
        per_class[(int(size), int(distinct))] += int(classes)
    return Counts(
        records=sizes.records,
        excluded=sizes.excluded_records,
        classes=sizes.classes,
        histogram=tuple((int(s), int(c)) for s, c in zip(sizes.sizes, sizes.counts, strict=True)),
        l=int(l_diversity_of(profiles, c=2.0).distinct),
        diversity=tuple(sorted(per_class.items())),
    )


# ----------------------------------------------------------------------------- differential
def test_csv(workdir: Path) -> None:
    """CSV holds only text: all-text tables, in every layout the contract allows."""
    read = reader(FILES, "aggregates_from_file")

    @examples(TABLES["csv"])
    @given(t=tables(families_for("csv"), kinds=("text",)), layout=csv_layouts())
    def csv_tables(t: Table, layout: CsvLayout) -> None:
        check(lambda: csv_counts(read, workdir, t, layout), truth(t))

    csv_tables()


def test_parquet(workdir: Path) -> None:
    read = reader(FILES, "aggregates_from_file")

    @examples(TABLES["parquet"])
    @given(t=tables(families_for("parquet")), layout=parquet_layouts())
    def parquet_tables(t: Table, layout: ParquetLayout) -> None:
        check(lambda: parquet_counts(read, workdir, t, layout), truth(t))

    parquet_tables()


def test_pandas() -> None:
    """The Great Expectations path; float/int columns with missing values are never numpy."""
    read = reader(FRAMES, "aggregates_from_frame")

    @examples(TABLES["pandas"])
    @given(t=tables(families_for("pandas")), flavours=frame_flavours())
    def pandas_tables(t: Table, flavours: tuple[int, ...]) -> None:
        check(lambda: pandas_counts(read, t, flavours), truth(t))

    pandas_tables()


@pytest.mark.parametrize("backend", DATABASES)
def test_sql(request: pytest.FixtureRequest, backend: str) -> None:
    """One table per example, read by both SQL readers (a failure names the reader)."""
    engine = _engine(request, backend)
    aggregates = sql_reader(histogram=False)
    histogram = sql_reader(histogram=True)

    @examples(TABLES[backend])
    @given(t=tables(families_for(backend)))
    def sql_tables(t: Table) -> None:
        expected = sql_truth(backend, t, histogram=False)
        with sql_table(engine, t) as name:
            if expected.records == 0:  # every record fully suppressed: nothing to assess
                with pytest.raises(EmptyDatasetError):
                    aggregates(engine, t.qi_names, table=name, sensitive=["s"])
                with pytest.raises(EmptyDatasetError):
                    histogram(engine, t.qi_names, table=name)
                return
            agg = counts_of(aggregates(engine, t.qi_names, table=name, sensitive=["s"]), "s")
            assert agg == expected, f"aggregates_from_sql counted {agg}, the contract {expected}"
            sizes = counts_of(histogram(engine, t.qi_names, table=name), None)
            want = expected.without_l()
            assert sizes == want, f"histogram_from_sql counted {sizes}, the contract {want}"

    sql_tables()


def test_spark(spark: Any) -> None:
    """A classic local session; the Connect path is the same queries (EXAMPLES run on both)."""
    read = reader(SPARK, "aggregates_from_spark")

    @examples(TABLES["spark"])
    @given(t=tables(families_for("spark")))
    def spark_tables(t: Table) -> None:
        check(lambda: spark_counts(read, spark, t), truth(t))

    spark_tables()


# ----------------------------------------------------------------------------- examples
# The nastiest cases, computed by hand. Each: the table, its counts (records, excluded,
# classes, histogram as (size, count) pairs, l), and what differs on a backend that cannot
# hold a value -- its own counts, or the reason it cannot hold the table at all.
EXAMPLES: dict[str, tuple[Table, Counts, dict[str, Counts | str]]] = {
    # 7 spellings, 7 values: NFD é, NFC é, E, e, "e ", missing, empty text -> 7 classes of 1
    "nfc-nfd-case-space-missing-empty": (
        table([("text", ["e\u0301", "\u00e9", "E", "e", "e ", None, ""])], ("text", ["x"] * 7)),
        Counts(records=7, excluded=0, classes=7, histogram=((1, 7),), l=1),
        {},
    ),
    # numbers, NaN and NULL as text are text: 11 different values -> 11 classes of 1
    "numbers-as-text": (
        table(
            [("text", ["01", "1", "1.0", "-0", "0", "NaN", "nan", "NULL", "\\N", None, ""])],
            ("text", ["x"] * 11),
        ),
        Counts(records=11, excluded=0, classes=11, histogram=((1, 11),), l=1),
        {},
    ),
    # separators, quotes, line breaks, BOM, no-break space, emoji: all different; "a,b"
    # twice -> 12 classes: 11 of size 1, one of size 2; its s values x, y -> l = 1
    "csv-specials": (
        table(
            [
                (
                    "text",
                    [
                        "a,b",
                        "a,b",
                        "a;b",
                        "x\ny",
                        "x\r\ny",
                        "x\r",
                        '"',
                        '""',
                        'a"b',
                        "\ufeffa",
                        "a",
                        "a\u00a0",
                        "\U0001f600",
                    ],
                )
            ],
            ("text", ["x", "y", *["x"] * 11]),
        ),
        Counts(records=13, excluded=0, classes=12, histogram=((1, 11), (2, 1)), l=1),
        {},
    ),
    # (*,*) three times is excluded; (*,a), (a,*), (*,missing), (" *",*), (*,"") stay:
    # 5 classes of 1, 3 excluded
    "suppressed": (
        table(
            [
                ("text", ["*", "*", "*", "*", "a", "*", " *", "*"]),
                ("text", ["*", "*", "*", "a", "*", None, "*", ""]),
            ],
            ("text", ["x", "y", "z", "x", "x", "x", "x", "x"]),
        ),
        Counts(records=5, excluded=3, classes=5, histogram=((1, 5),), l=1),
        {},
    ),
    # every record is suppressed: nothing to assess (EmptyDatasetError on every backend)
    "all-suppressed": (
        table([("text", ["*", "*"])], ("text", ["x", "y"])),
        Counts(records=0, excluded=2, classes=0, histogram=(), l=0),
        {},
    ),
    # 0.0 = -0.0 (s a, b); three NaNs of different bits are one value; missing; inf; -inf;
    # 1.0; 0.1+0.2 != 0.3 -> 0:2, NaN:3, then 6 classes of 1: 8 classes, l = 1.
    # SQLite holds the NaNs as NULL: NULL:4 (3 NaN + missing), 0:2, 5 of 1 -> 7 classes.
    "floats": (
        table(
            [
                (
                    "float",
                    [
                        0.0,
                        -0.0,
                        math.nan,
                        NAN_PAYLOAD,
                        NEG_NAN,
                        None,
                        math.inf,
                        -math.inf,
                        1.0,
                        0.1 + 0.2,
                        0.3,
                    ],
                )
            ],
            ("text", ["a", "b", *["a"] * 9]),
        ),
        Counts(records=11, excluded=0, classes=8, histogram=((1, 6), (2, 1), (3, 1)), l=1),
        {
            "sqlite": Counts(
                records=11, excluded=0, classes=7, histogram=((1, 5), (2, 1), (4, 1)), l=1
            ),
            "mariadb": LIMITS["mariadb"],
        },
    ),
    # finite floats every backend holds: 0.0 = -0.0, then 7 different values -> 8 classes
    "finite-floats": (
        table(
            [
                (
                    "float",
                    [0.0, -0.0, None, 5e-324, 1e308, 0.1 + 0.2, 0.3, 1.0, 1.0000000000000002],
                )
            ],
            ("text", ["x"] * 9),
        ),
        Counts(records=9, excluded=0, classes=8, histogram=((1, 7), (2, 1)), l=1),
        {},
    ),
    # 2**53 and 2**53+1 differ (not as doubles), extremes of int64, missing, 1 twice, 0
    # -> 7 classes: 6 of 1, one of 2
    "ints": (
        table(
            [("int", [2**53, 2**53 + 1, 2**63 - 1, -(2**63), None, 1, 1, 0])],
            ("text", ["x"] * 8),
        ),
        Counts(records=8, excluded=0, classes=7, histogram=((1, 6), (2, 1)), l=1),
        {},
    ),
    # 12 different byte strings (\xff, \xfe and U+FFFD's UTF-8 never merge; NUL, NUL NUL and
    # empty differ; NFC and NFD é's UTF-8 differ) -> 12 classes of 1
    "bytes": (
        table(
            [
                (
                    "bytes",
                    [
                        b"\xff",
                        b"\xfe",
                        b"\xef\xbf\xbd",
                        b"",
                        None,
                        b"\x00",
                        b"\x00\x00",
                        b"a",
                        b"a ",
                        b"A",
                        b"\xc3\xa9",
                        b"e\xcc\x81",
                    ],
                )
            ],
            ("text", ["x"] * 12),
        ),
        Counts(records=12, excluded=0, classes=12, histogram=((1, 12),), l=1),
        {},
    ),
    # one class of 8; s: missing (twice), "", x, X, "x ", NFD é, NFC é -> l = 7
    "sensitive-text": (
        table(
            [("text", ["a"] * 8)],
            ("text", [None, "", "x", "X", "x ", "e\u0301", "\u00e9", None]),
        ),
        Counts(records=8, excluded=0, classes=1, histogram=((8, 1),), l=7),
        {},
    ),
    # one class of 6; s: three NaNs (one value), 0.0 = -0.0, missing -> l = 3.
    # SQLite: the NaNs are NULL, one value with the missing one -> l = 2.
    "sensitive-float": (
        table(
            [("text", ["a"] * 6)],
            ("float", [math.nan, NAN_PAYLOAD, NEG_NAN, 0.0, -0.0, None]),
        ),
        Counts(records=6, excluded=0, classes=1, histogram=((6, 1),), l=3),
        {
            "sqlite": Counts(records=6, excluded=0, classes=1, histogram=((6, 1),), l=2),
            "mariadb": LIMITS["mariadb"],
        },
    ),
    # one class of 5; s: \xff, \xfe, U+FFFD's UTF-8, missing, empty -> l = 5
    "sensitive-bytes": (
        table(
            [("text", ["a"] * 5)],
            ("bytes", [b"\xff", b"\xfe", b"\xef\xbf\xbd", None, b""]),
        ),
        Counts(records=5, excluded=0, classes=1, histogram=((5, 1),), l=5),
        {},
    ),
    # three QIs of three kinds: (a,1,x) twice, (A,1,x), (missing, missing, missing),
    # (a, missing, x) -> 4 classes: 3 of 1, one of 2; the pair's s: p, q -> but (A,1,x) has
    # one value -> l = 1
    "mixed-kinds": (
        table(
            [
                ("text", ["a", "a", "A", None, "a"]),
                ("int", [1, 1, 1, None, None]),
                ("bytes", [b"x", b"x", b"x", None, b"x"]),
            ],
            ("text", ["p", "q", "p", "p", "p"]),
        ),
        Counts(records=5, excluded=0, classes=4, histogram=((1, 3), (2, 1)), l=1),
        {},
    ),
}

EXAMPLE_BACKENDS = [
    "csv",
    "parquet",
    "pandas",
    "sqlite",
    "sqlite-histogram",
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("postgresql-histogram", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
    pytest.param("mariadb-histogram", marks=pytest.mark.db),
    "spark",
    "spark-connect",
]
CSV_EXAMPLE_LAYOUTS = [
    CsvLayout(),
    CsvLayout(
        sep=";", newline="\n", final_newline=False, bom=True, quote_all=True, blank_lines=(1, 3)
    ),
]
PARQUET_EXAMPLE_LAYOUTS = [ParquetLayout(), ParquetLayout(row_group_size=1, use_dictionary=False)]


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_example_truth(name: str) -> None:
    """The plain-Python count agrees with the hand computation (the truth is checked too)."""
    t, expected, overrides = EXAMPLES[name]
    assert truth(t).without_diversity() == expected
    sqlite = overrides.get("sqlite", expected)
    assert truth(t, nan_is_missing=True).without_diversity() == sqlite


@pytest.mark.parametrize("name", list(EXAMPLES))
@pytest.mark.parametrize("backend", EXAMPLE_BACKENDS)
def test_example(request: pytest.FixtureRequest, workdir: Path, backend: str, name: str) -> None:
    """Each backend against the truth, which test_example_truth checks against the hand
    computation in EXAMPLES (per class diversity included)."""
    t, _, overrides = EXAMPLES[name]
    base, _, histogram = backend.partition("-")
    reason = overrides.get(base)
    if isinstance(reason, str):
        pytest.skip(f"{base} cannot hold this table: {reason}")
    if base == "csv" and any(c.kind != "text" for c in t.columns):
        pytest.skip(f"csv cannot hold this table: {LIMITS['csv']}")
    held = all(holds(base, c.kind, v) for c in t.columns for v in c.values)
    assert held, f"{base} cannot hold a value of {name}: say so in the example"
    want = truth(t, nan_is_missing=base == "sqlite")
    if base == "csv":
        read = reader(FILES, "aggregates_from_file")
        for layout in CSV_EXAMPLE_LAYOUTS:
            check(lambda layout=layout: csv_counts(read, workdir, t, layout), want)
    elif base == "parquet":
        read = reader(FILES, "aggregates_from_file")
        for playout in PARQUET_EXAMPLE_LAYOUTS:
            check(lambda playout=playout: parquet_counts(read, workdir, t, playout), want)
    elif base == "spark":
        read = reader(SPARK, "aggregates_from_spark")
        session = request.getfixturevalue("spark_connect" if histogram else "spark")
        check(lambda: spark_counts(read, session, t), want)
    elif base == "pandas":
        read = reader(FRAMES, "aggregates_from_frame")
        for choice in range(3):  # object/numpy, then str/masked, then Arrow-backed columns
            flavours = (choice,) * len(t.columns)
            check(lambda flavours=flavours: pandas_counts(read, t, flavours), want)
    else:
        engine = _engine(request, base)
        read = sql_reader(bool(histogram))
        check(
            lambda: sql_counts(read, engine, t, histogram=bool(histogram)),
            want.without_l() if histogram else want,
        )


def test_csv_by_hand(workdir: Path) -> None:
    """A CSV file written by hand: BOM, CRLF line ends, quoted separators and line breaks,
    ``""`` against an empty field, a blank line, a last record without a line end."""
    text = (
        "\ufeffq0,q1,s\r\n"
        '"a,b",x,1\r\n'
        '"a,b",x,2\r\n'
        '"a\r\nb",x,1\r\n'
        '"a\nb",x,1\r\n'  # a lone LF inside quotes is part of the value
        "\r\n"  # a line with nothing on it: not a record (3 columns)
        '"",,1\r\n'  # q0 empty text, q1 missing
        ',"",1\r\n'  # q0 missing, q1 empty text
        ",,1\r\n"  # both missing
        '"""",x,1'  # q0 is one quote; no line end
    )
    # classes: (a,b | x) 2 records with s 1, 2; (a CRLF b | x); (a LF b | x); ("" | missing);
    # (missing | ""); (missing | missing); (" | x) -> 8 records, 7 classes, l = 1; six
    # classes of size 1 with 1 sensitive value, one of size 2 with 2
    path = workdir / "by_hand.csv"
    path.write_bytes(text.encode("utf-8"))
    read = reader(FILES, "aggregates_from_file")
    got = counts_of(read(path, ["q0", "q1"], sensitive=["s"]), "s")
    assert got == Counts(
        records=8,
        excluded=0,
        classes=7,
        histogram=((1, 6), (2, 1)),
        l=1,
        diversity=(((1, 1), 6), ((2, 2), 1)),
    )


def test_csv_mixed_line_ends(workdir: Path) -> None:
    """ "A file uses one line end throughout": one that mixes LF and CRLF is refused."""
    path = workdir / "mixed_line_ends.csv"
    path.write_bytes(b"q0,s\r\na,x\nb,x\r\nc,x\nd,x")
    read = reader(FILES, "aggregates_from_file")
    with pytest.raises(InvalidInputError, match="LF and CRLF"):
        read(path, ["q0"], sensitive=["s"])


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_csv_one_column_blank_line_is_missing(workdir: Path, newline: str) -> None:
    """In a one-column file a blank line is a record whose value is missing."""
    # records: a, missing, "" (empty text), missing -> 4 records; classes a, missing (2), ""
    lines = ["q0", "a", "", '""', ""]
    path = workdir / f"one_column_{len(newline)}.csv"
    path.write_bytes((newline.join(lines) + newline).encode("utf-8"))
    read = reader(FILES, "aggregates_from_file")
    got = counts_of(read(path, ["q0"]), None)
    assert got == Counts(records=4, excluded=0, classes=3, histogram=((1, 2), (2, 1)), l=None)


# ----------------------------------------------------------------------------- limits
@pytest.mark.parametrize("backend", DATABASES)
def test_known_limits(request: pytest.FixtureRequest, backend: str) -> None:
    """What LIMITS says a database cannot hold, it cannot hold (else widen its values)."""
    engine = _engine(request, backend)
    meta = sa.MetaData()
    name = f"reident_limit_{uuid.uuid4().hex[:12]}"
    target = sa.Table(
        name, meta, sa.Column("f", sql_type("float")), sa.Column("t", sql_type("text"))
    )
    with engine.begin() as conn:
        target.create(conn)
    try:
        if backend == "sqlite":
            with engine.begin() as conn:
                conn.execute(target.insert(), [{"f": math.nan, "t": "a\x00b"}])
                assert conn.execute(sa.select(target.c.f, target.c.t)).one() == (None, "a\x00b")
        elif backend == "postgresql":
            for bad in ("\x00", "a\x00b"):
                with pytest.raises((ValueError, sa.exc.DataError)), engine.begin() as conn:
                    conn.execute(target.insert(), [{"f": 1.0, "t": bad}])
            with engine.begin() as conn:  # NaN and infinity it holds
                conn.execute(target.insert(), [{"f": v, "t": "x"} for v in (math.nan, math.inf)])
        else:
            for bad in (math.nan, math.inf, -math.inf):
                with pytest.raises(sa.exc.DBAPIError), engine.begin() as conn:
                    conn.execute(target.insert(), [{"f": bad, "t": "x"}])
            with engine.begin() as conn:  # NUL and emoji in utf8mb4 text it holds
                conn.execute(target.insert(), [{"f": -0.0, "t": "a\x00\U0001f600"}])
                assert conn.execute(sa.select(target.c.t)).scalar_one() == "a\x00\U0001f600"
    finally:
        with engine.begin() as conn:
            target.drop(conn)


# ----------------------------------------------------------------------------- the helpers
_CSV_TEXT = st.sampled_from([v for v in POOLS["text"] if v])  # neither missing nor empty


@SELF
@given(row=st.lists(_CSV_TEXT, min_size=1, max_size=4), sep=st.sampled_from([",", ";"]))
def test_csv_field_is_csv_module(row: list[str], sep: str) -> None:
    """Apart from missing/empty (which csv.writer writes alike), fields are QUOTE_MINIMAL's.

    The csv module quotes a bare CR only when CR is in its line terminator (a value "x\r"
    written with lineterminator="\n" comes out unquoted and reads back as another line end):
    csv_field always quotes CR and LF, as the csv module does with lineterminator="\r\n".
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=sep, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(row)
    assert sep.join(csv_field(v, sep) for v in row) + "\r\n" == buffer.getvalue()


@SELF
@given(t=tables(families_for("csv"), kinds=("text",)), layout=csv_layouts())
def test_csv_text_reads_back(t: Table, layout: CsvLayout) -> None:
    """Python's csv module reads the records back (it reads missing and "" both as "")."""
    text = csv_text(t, layout)
    assert text.startswith("\ufeff") == layout.bom
    parsed = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), delimiter=layout.sep)
    rows = [r for r in parsed if r]  # a blank line (2+ columns) is not a record
    assert rows[0] == [c.name for c in t.columns]
    assert rows[1:] == [["" if v is None else v for v in r] for r in t.records()]
    for record, line_fields in zip(t.records(), rows[1:], strict=True):
        assert len(line_fields) == len(record)
    # missing is an empty unquoted field, empty text is "": the only difference from csv
    assert csv_field(None, layout.sep) == "" and csv_field("", layout.sep) == '""'


@SELF
@given(t=tables(families_for("pandas")), flavours=frame_flavours())
def test_frame_holds_the_values(t: Table, flavours: tuple[int, ...]) -> None:
    frame_check(t, frame(t, flavours))


@SELF
@given(t=tables())
def test_tables_are_hostile(t: Table) -> None:
    """Generated tables are what the test promises: sizes, kinds, marker only in text."""
    assert 1 <= t.rows <= 40 and 1 <= len(t.qis) <= 3
    for c in t.columns:
        assert len(c.values) == t.rows
        assert all(any(v is p or v == p for p in POOLS[c.kind]) for v in c.values)
    if any(c.kind != "text" for c in t.qis):
        assert truth(t).excluded == 0

"""Helpers of ``test_differential.py``: hostile tables, their truth under docs/reading.md, and
how each backend is handed one.

A :class:`Table` is a few columns of one *kind* each (text, float, int, bytes), the first ones
quasi-identifiers (QIs), the last one sensitive. :func:`truth` counts its equivalence classes
in plain Python under the reading contract; the writers put the same values in a CSV file, a
Parquet file, a pandas DataFrame or a database table, so that a backend can be compared with
the truth.

What a backend cannot hold is said here, in :data:`LIMITS`, and handled in the open: either
the value is not generated for that backend (:func:`families_for`), or the truth is computed
with the value the backend stores instead (``nan_is_missing`` for SQLite).
"""

from __future__ import annotations

import math
import struct
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa
from hypothesis import strategies as st
from sqlalchemy.dialects import mysql

KINDS = ("text", "float", "int", "bytes")
MARKER = "*"

#: NaNs that are not the default one: a payload bit set, and the sign bit set. Every NaN is
#: one value under the contract, whatever its bits.
NAN_PAYLOAD = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]

# The hostile values of each kind, in small families of values that a reader could wrongly
# take for one another. A column draws its values from one to three families, so confusable
# values (a/A, NFC/NFD, NaN/missing, 0.0/-0.0, \xff/\xfe ...) meet in one column often. The
# first value of the first family is the plain one the shrinker tends to, so a minimal
# failing example keeps only the values that matter.
TEXT_FAMILIES: tuple[tuple[str | None, ...], ...] = (
    ("a", "A"),
    ("a", "a "),  # trailing space (PAD SPACE collations)
    ("a", " a"),
    ("a", "a\u00a0", "a\t"),  # no-break space, tab
    ("\u00e9", "e\u0301"),  # é NFC, é NFD
    ("e", "E", "\u00e9", "\u00c9"),  # accent- and case-insensitive collations
    (None, ""),  # missing, empty text
    ("", " "),
    (None, "NULL", "null", "\\N", "NA"),  # null spellings are text
    ("1", "01"),
    ("1", "1.0", "1e0", " 1"),
    ("0", "-0"),
    ("NaN", "nan", None),
    ("inf", "-inf", "Infinity"),
    ('"', '""'),  # quotes
    ('a"b', "'", '"a"'),
    (",", ";"),  # separators
    ("a,b", "a;b"),
    ("x\ny", "x\r\ny"),  # line breaks inside values
    ("x\r", "\n", "\r\n", "x y"),
    ("*", " *", "* ", "**"),  # the suppression marker and near misses
    ("*", None, ""),
    ("\U0001f600", "\ufeffa", "#a"),  # emoji (4 UTF-8 bytes), BOM inside a value, comment
    ("a\x00b", "a", "\x00"),  # NUL
)
FLOAT_FAMILIES: tuple[tuple[float | None, ...], ...] = (
    (0.0, -0.0),
    (0.0, 5e-324, -0.0),  # a subnormal
    (math.nan, None),  # NaN is a value, not missing
    (math.nan, NAN_PAYLOAD, NEG_NAN),  # one NaN, whatever its bits
    (0.3, 0.1 + 0.2),  # one ulp apart
    (1.0, 1.0000000000000002),
    (math.inf, -math.inf, 1e308),
    (None, 0.0),
    (2.0**53, 2.0**53 + 2, 2.0**53 - 1),
    (1.0, -1.0, None),
)
INT_FAMILIES: tuple[tuple[int | None, ...], ...] = (
    (1, None),
    (0, -1, 10),
    (2**53, 2**53 + 1),  # 2**53 + 1 is 2**53 once converted to a double
    (2**53 - 1, 2**53),
    (2**63 - 1, 2**63 - 2),  # the ends of int64
    (-(2**63), 2**63 - 1),
)
BYTES_FAMILIES: tuple[tuple[bytes | None, ...], ...] = (
    (b"a", b"A"),
    (b"a", b"a "),
    (b"a", b"a\x00"),
    (b"\xff", b"\xfe"),  # not UTF-8: decoding with "replace" merges them
    (b"\xff", b"\xef\xbf\xbd"),  # ... with U+FFFD's UTF-8
    (b"\x80abc", b"?abc"),
    (b"", None),
    (b"", b"\x00", b"\x00\x00"),  # NUL bytes (BINARY(n) pads with them)
    (b" ", b""),
    (b"\xc3\xa9", b"e\xcc\x81"),  # é NFC and NFD in UTF-8
    (b"\r\n", b"NULL", b"\\N"),
)
# b"*" is left out on purpose: the contract excludes a record whose every QI is "the text *",
# and whether the bytes b"*" are that text is not said (bytes are "never decoded").
FAMILIES: dict[str, tuple[tuple[Any, ...], ...]] = {
    "text": TEXT_FAMILIES,
    "float": FLOAT_FAMILIES,
    "int": INT_FAMILIES,
    "bytes": BYTES_FAMILIES,
}


def _key(value: Any) -> Any:
    """A value's identity: floats by their bits (-0.0 is not 0.0, NaNs differ by payload)."""
    if isinstance(value, float):
        return (float, struct.pack("<d", value))
    return (type(value), value)


def _flat(families: tuple[tuple[Any, ...], ...]) -> tuple[Any, ...]:
    """The values of some families, each once, in order."""
    return tuple({_key(v): v for family in families for v in family}.values())


#: Every hostile value of each kind.
POOLS: dict[str, tuple[Any, ...]] = {kind: _flat(f) for kind, f in FAMILIES.items()}

#: What a backend cannot hold, and how the test deals with it (never by loosening a check).
LIMITS: dict[str, str] = {
    "csv": "holds only text: only all-text tables are written to CSV",
    "parquet": "holds every kind",
    "pandas": (
        "a numpy float64 column cannot hold a missing value apart from NaN: a float column "
        "with missing values is built as Float64 (masked) or Arrow-backed, never as numpy "
        "float64; likewise ints with missing values are Int64 or Arrow-backed"
    ),
    "sqlite": "stores NaN as NULL: its truth is computed with every NaN missing",
    "postgresql": "text cannot hold NUL (U+0000): text with NUL is not generated for it",
    "mariadb": "DOUBLE holds no NaN and no infinity: they are not generated for it",
}


def holds(backend: str, kind: str, value: Any) -> bool:
    """Whether ``backend`` can hold ``value`` in a column of ``kind`` (see :data:`LIMITS`)."""
    if value is None:
        return True
    if backend == "csv":
        return kind == "text"
    if backend == "postgresql" and kind == "text":
        return "\x00" not in value
    if backend == "mariadb" and kind == "float":
        return math.isfinite(value)
    return True


def families_for(backend: str) -> dict[str, tuple[tuple[Any, ...], ...]]:
    """The families of hostile values of each kind, less what ``backend`` cannot hold."""
    out: dict[str, tuple[tuple[Any, ...], ...]] = {}
    for kind, families in FAMILIES.items():
        held = (tuple(v for v in f if holds(backend, kind, v)) for f in families)
        out[kind] = tuple(f for f in held if f)
    return out


# ------------------------------------------------------------------------------- tables
def show(value: Any) -> str:
    """A value as a failure report shows it (NaN bits visible: every NaN reads 'nan')."""
    if isinstance(value, float) and math.isnan(value):
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return f"nan(0x{bits:016x})"
    return repr(value)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    values: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"{self.name}:{self.kind}[{', '.join(show(v) for v in self.values)}]"

    @property
    def has_missing(self) -> bool:
        return any(v is None for v in self.values)


@dataclass(frozen=True)
class Table:
    """QI columns and one sensitive column, all of the same length (>= 1)."""

    qis: tuple[Column, ...]
    sensitive: Column

    def __repr__(self) -> str:
        return f"Table(qis={list(self.qis)!r}, sensitive={self.sensitive!r})"

    @property
    def columns(self) -> tuple[Column, ...]:
        return (*self.qis, self.sensitive)

    @property
    def qi_names(self) -> list[str]:
        return [c.name for c in self.qis]

    @property
    def rows(self) -> int:
        return len(self.sensitive.values)

    def records(self) -> Iterator[tuple[Any, ...]]:
        return zip(*(c.values for c in self.columns), strict=True)


def table(qis: Sequence[tuple[str, Sequence[Any]]], sensitive: tuple[str, Sequence[Any]]) -> Table:
    """A table from ``(kind, values)`` pairs: the QIs are named q0, q1, ..., the sensitive s."""
    return Table(
        qis=tuple(Column(f"q{i}", kind, tuple(values)) for i, (kind, values) in enumerate(qis)),
        sensitive=Column("s", sensitive[0], tuple(sensitive[1])),
    )


@st.composite
def tables(
    draw: st.DrawFn,
    families: dict[str, tuple[tuple[Any, ...], ...]] = FAMILIES,
    kinds: Sequence[str] = KINDS,
    max_rows: int = 40,
) -> Table:
    """1-40 rows, 1-3 QIs and one sensitive column of hostile values.

    Each column draws its values from one to three families of confusable values (so that
    classes of several records form, and confusable values meet in one column). When every
    QI is text, up to 3 rows are made fully suppressed (``*`` in every QI), and about one
    table in 20 has every row suppressed (nothing left to assess).
    """
    n = draw(st.integers(1, max_rows))
    width = draw(st.sampled_from([1, 1, 2, 3]))  # one QI often: one merge shows in the counts
    columns: list[tuple[str, list[Any]]] = []
    for _ in range(width + 1):
        kind = draw(st.sampled_from(kinds))
        chosen = draw(st.lists(st.sampled_from(families[kind]), min_size=1, max_size=3))
        pool = _flat(tuple(chosen))
        # one draw of n bytes picks the rows' values (far cheaper than n integer draws);
        # shrinking moves the bytes to 0, every row to the pool's first value
        picks = draw(st.binary(min_size=n, max_size=n))
        columns.append((kind, [pool[p % len(pool)] for p in picks]))
    if all(kind == "text" for kind, _ in columns[:width]):
        starred = draw(st.sets(st.integers(0, n - 1), max_size=3))
        if draw(st.integers(0, 19)) == 19:
            starred = set(range(n))
        for row in starred:
            for _, values in columns[:width]:
                values[row] = MARKER
    return table(columns[:width], columns[width])


# ------------------------------------------------------------------------------- truth
class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


class _NaN:
    def __repr__(self) -> str:
        return "NAN"


MISSING = _Missing()
NAN = _NaN()


def normalized(kind: str, value: Any, *, nan_is_missing: bool = False) -> Any:
    """A value as the contract compares it: equal values, equal results.

    Missing is one value of its own; every NaN is one value (not missing); ``-0.0`` is
    ``0.0``; text, bytes and integers compare exactly as Python compares them (no case
    folding, no Unicode normalization, no trimming). ``nan_is_missing`` stands for a backend
    that stores NaN as NULL (SQLite).
    """
    if value is None:
        return MISSING
    if kind == "float":
        if math.isnan(value):
            return MISSING if nan_is_missing else NAN
        return value + 0.0  # -0.0 + 0.0 is 0.0
    return value


def normalized_records(
    columns: Sequence[Column], records: Iterable[Sequence[Any]], *, nan_is_missing: bool = False
) -> Counter[tuple[Any, ...]]:
    """The records as a multiset of normalized tuples (bytes-like values read as bytes)."""
    out: Counter[tuple[Any, ...]] = Counter()
    for record in records:
        out[
            tuple(
                normalized(
                    c.kind,
                    bytes(v) if isinstance(v, bytearray | memoryview) else v,
                    nan_is_missing=nan_is_missing,
                )
                for c, v in zip(columns, record, strict=True)
            )
        ] += 1
    return out


@dataclass(frozen=True)
class Counts:
    """What the test compares.

    ``l`` (distinct-l: the fewest distinct sensitive values in a class) and ``diversity``
    (how many classes have each (size, distinct sensitive values) pair, sorted: l for every
    class, not only the smallest) are None where the backend reports no sensitive counts.
    """

    records: int
    excluded: int
    classes: int
    histogram: tuple[tuple[int, int], ...]
    l: int | None  # noqa: E741 - the measure's name
    diversity: tuple[tuple[tuple[int, int], int], ...] | None = None

    def without_l(self) -> Counts:
        return replace(self, l=None, diversity=None)

    def without_diversity(self) -> Counts:
        return replace(self, diversity=None)


def truth(t: Table, *, nan_is_missing: bool = False) -> Counts:
    """The contract's counts of ``t``, by plain dictionaries.

    A record whose every QI is the text ``*`` is excluded; the others are grouped by their
    tuple of normalized QI values. ``l`` is the smallest number of distinct sensitive values
    in a class (missing counts as one value).
    """
    sizes: Counter[tuple[Any, ...]] = Counter()
    values: dict[tuple[Any, ...], set[Any]] = {}
    excluded = 0
    width = len(t.qis)
    for record in t.records():
        qi = record[:width]
        if all(c.kind == "text" and v == MARKER for c, v in zip(t.qis, qi, strict=True)):
            excluded += 1
            continue
        key = tuple(
            normalized(c.kind, v, nan_is_missing=nan_is_missing)
            for c, v in zip(t.qis, qi, strict=True)
        )
        sizes[key] += 1
        values.setdefault(key, set()).add(
            normalized(t.sensitive.kind, record[width], nan_is_missing=nan_is_missing)
        )
    return Counts(
        records=sum(sizes.values()),
        excluded=excluded,
        classes=len(sizes),
        histogram=tuple(sorted(Counter(sizes.values()).items())),
        l=min((len(v) for v in values.values()), default=0),
        diversity=tuple(sorted(Counter((sizes[k], len(v)) for k, v in values.items()).items())),
    )


def counts_of(result: Any, sensitive: str | None) -> Counts:
    """The counts a backend reported: a ClassAggregates (with l) or a ClassSizes/ClassTable.

    l is what :func:`~reident_airflow.engine.assessment.assess` reports; the per-class
    distinct counts are read from the aggregates' value counts of the sensitive column.
    """
    from reident_airflow.engine.assessment import assess

    table_ = getattr(result, "table", result)
    sizes, counts = table_.histogram()
    l_value = diversity = None
    if sensitive is not None:
        assessed = assess(table_, attributes=False, sensitive=result.sensitive)
        assert assessed.l_diversity is not None
        l_value = int(assessed.l_diversity[0].distinct)
        pairs = result.sensitive[sensitive]
        present = np.asarray(pairs.counts) > 0
        distinct = np.bincount(np.asarray(pairs.classes)[present], minlength=table_.classes)
        per_class = zip(np.asarray(table_.sizes).tolist(), distinct.tolist(), strict=True)
        diversity = tuple(sorted(Counter(per_class).items()))
    return Counts(
        records=int(table_.records),
        excluded=int(table_.excluded_records),
        classes=int(table_.classes),
        histogram=tuple((int(s), int(c)) for s, c in zip(sizes, counts, strict=True)),
        l=l_value,
        diversity=diversity,
    )


# ------------------------------------------------------------------------------- CSV
@dataclass(frozen=True)
class CsvLayout:
    """How a CSV file is laid out; every layout holds the same records under the contract."""

    sep: str = ","
    newline: str = "\r\n"
    final_newline: bool = True
    bom: bool = False
    quote_all: bool = False  # quote every non-missing field, not only those that need it
    blank_lines: tuple[int, ...] = ()  # empty lines before these records (not records)


def csv_layouts(max_rows: int = 40) -> st.SearchStrategy[CsvLayout]:
    return st.builds(
        CsvLayout,
        sep=st.sampled_from([",", ";"]),
        newline=st.sampled_from(["\r\n", "\n"]),
        final_newline=st.booleans(),
        bom=st.booleans(),
        quote_all=st.booleans(),
        blank_lines=st.lists(st.integers(1, max_rows + 1), max_size=2).map(tuple),
    )


def csv_field(value: str | None, sep: str, *, quote_all: bool = False) -> str:
    """One field as ``csv.writer(quoting=QUOTE_MINIMAL)`` writes it, but missing != empty.

    Missing is an empty unquoted field, empty text is ``""``; a value holding the separator,
    a quote or a line break is quoted with its quotes doubled (``test_csv_field_is_csv_module``
    checks this against the csv module).
    """
    if value is None:
        return ""
    if value == "" or quote_all or any(ch in value for ch in (sep, '"', "\r", "\n")):
        return '"' + value.replace('"', '""') + '"'
    return value


def csv_text(t: Table, layout: CsvLayout = CsvLayout()) -> str:
    assert all(c.kind == "text" for c in t.columns), "CSV holds only text"
    assert len(t.columns) >= 2, "a blank line is a record in a one-column file"
    lines = [layout.sep.join(c.name for c in t.columns)]
    for i, record in enumerate(t.records(), start=1):
        lines.extend("" for b in layout.blank_lines if b == i)
        fields = (csv_field(v, layout.sep, quote_all=layout.quote_all) for v in record)
        lines.append(layout.sep.join(fields))
    lines.extend("" for b in layout.blank_lines if b > t.rows)
    text = layout.newline.join(lines) + (layout.newline if layout.final_newline else "")
    return ("\ufeff" if layout.bom else "") + text


def write_csv(t: Table, path: Path, layout: CsvLayout = CsvLayout()) -> Path:
    path.write_bytes(csv_text(t, layout).encode("utf-8"))  # bytes: no newline translation
    return path


# ------------------------------------------------------------------------------- Parquet
ARROW_TYPES = {
    "text": pa.string(),
    "float": pa.float64(),
    "int": pa.int64(),
    "bytes": pa.binary(),
}


def arrow_table(t: Table) -> pa.Table:
    # from_pandas=False (the default): a NaN stays a NaN value, None becomes null
    return pa.table({c.name: pa.array(c.values, type=ARROW_TYPES[c.kind]) for c in t.columns})


@dataclass(frozen=True)
class ParquetLayout:
    row_group_size: int | None = None  # several row groups: one dictionary per row group
    use_dictionary: bool = True


def parquet_layouts() -> st.SearchStrategy[ParquetLayout]:
    return st.builds(
        ParquetLayout,
        row_group_size=st.sampled_from([None, 1, 3, 7]),
        use_dictionary=st.booleans(),
    )


def write_parquet(t: Table, path: Path, layout: ParquetLayout = ParquetLayout()) -> Path:
    pq.write_table(
        arrow_table(t),
        path,
        row_group_size=layout.row_group_size,
        use_dictionary=layout.use_dictionary,
    )
    back = pq.read_table(path)  # the writer's own check: typed columns, the same records
    assert [back.schema.field(c.name).type for c in t.columns] == [
        ARROW_TYPES[c.kind] for c in t.columns
    ]
    stored = zip(*(back.column(c.name).to_pylist() for c in t.columns), strict=True)
    assert normalized_records(t.columns, stored) == normalized_records(t.columns, t.records())
    return path


# ------------------------------------------------------------------------------- pandas
#: The pandas dtypes each kind is built with; the first is the one the brief names (object
#: text, numpy float64/int64, object bytes), the others what pandas users also hold: pandas
#: 3's default ``str``, masked ``Float64``/``Int64``, Arrow-backed columns.
FRAME_FLAVOURS = {
    "text": ("object", "str", "arrow"),
    "float": ("numpy", "masked", "arrow"),
    "int": ("numpy", "masked", "arrow"),
    "bytes": ("object", "arrow"),
}


def frame_flavours(width: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    """One choice per column, taken modulo the number of flavours of the column's kind."""
    return st.lists(st.integers(0, 2), min_size=width, max_size=width).map(tuple)


def frame_column(c: Column, choice: int = 0) -> pd.Series:
    """A pandas column holding exactly the values of ``c`` (NaN and missing kept apart).

    A numpy float64 (or int64) column cannot hold a missing value apart from NaN: a column
    with missing values is never built that way (the choice moves to the masked dtype).
    """
    flavours = FRAME_FLAVOURS[c.kind]
    flavour = flavours[choice % len(flavours)]
    if c.kind in ("float", "int") and flavour == "numpy" and c.has_missing:
        flavour = "masked"
    if flavour == "arrow":
        array = pa.array(c.values, type=ARROW_TYPES[c.kind])  # NaN stays NaN, None is null
        return pd.Series(pd.arrays.ArrowExtensionArray(array), name=c.name)
    if c.kind == "text" and flavour == "str":
        return pd.Series(list(c.values), dtype="str", name=c.name)  # None -> NaN: missing
    if c.kind in ("text", "bytes"):
        return pd.Series(list(c.values), dtype=object, name=c.name)
    mask = np.array([v is None for v in c.values])
    if c.kind == "float":
        data = np.array([0.0 if v is None else v for v in c.values], dtype=np.float64)
        if flavour == "numpy":
            return pd.Series(data, name=c.name)
        # built from data and mask: pd.array([nan], dtype="Float64") would turn NaN into NA
        return pd.Series(pd.arrays.FloatingArray(data, mask), name=c.name)
    data_i = np.array([0 if v is None else v for v in c.values], dtype=np.int64)
    if flavour == "numpy":
        return pd.Series(data_i, name=c.name)
    return pd.Series(pd.arrays.IntegerArray(data_i, mask), name=c.name)


def frame(t: Table, flavours: Sequence[int] = ()) -> pd.DataFrame:
    choices = list(flavours) + [0] * (len(t.columns) - len(flavours))
    return pd.DataFrame(
        {c.name: frame_column(c, k) for c, k in zip(t.columns, choices, strict=False)}
    )


def frame_check(t: Table, df: pd.DataFrame) -> None:
    """The DataFrame holds the table's values: missing where None, NaN where NaN."""
    for c in t.columns:
        col = df[c.name]
        assert len(col) == t.rows
        for i, v in enumerate(c.values):
            got = col.iloc[i]
            if v is None:
                assert got is None or got is pd.NA or (isinstance(got, float) and math.isnan(got))
                assert bool(col.isna().iloc[i]), (c, i)
            elif isinstance(v, float) and math.isnan(v):
                assert math.isnan(got), (c, i)
                # pandas' isna() calls NaN missing in a numpy float64 column; the contract
                # does not (a NaN value): only masked and Arrow columns are checked here
                if col.dtype != np.float64:
                    assert not bool(col.isna().iloc[i]), (c, i)
            else:
                assert not bool(col.isna().iloc[i]), (c, i)
                assert got == v, (c, i)


# ------------------------------------------------------------------------------- SQL
def sql_type(kind: str) -> Any:
    """Text as TEXT / VARCHAR utf8mb4, floats as REAL / double precision / DOUBLE, ints as
    BIGINT, bytes as BLOB / bytea / VARBINARY.

    MariaDB's text takes the server's default utf8mb4 collation (utf8mb4_general_ci on 10.11:
    case- and accent-insensitive, trailing spaces ignored): the contract says it is bypassed.
    """
    if kind == "text":
        return sa.Text().with_variant(mysql.VARCHAR(255, charset="utf8mb4"), "mysql", "mariadb")
    if kind == "float":
        return sa.Double().with_variant(sa.REAL(), "sqlite")
    if kind == "int":
        return sa.BigInteger()
    return sa.LargeBinary().with_variant(mysql.VARBINARY(255), "mysql", "mariadb")


@contextmanager
def sql_table(engine: sa.Engine, t: Table) -> Iterator[str]:
    """Create a uniquely named table holding ``t`` (SQLAlchemy Core parameters), drop it after."""
    name = f"reident_diff_{uuid.uuid4().hex[:16]}"
    meta = sa.MetaData()
    target = sa.Table(name, meta, *(sa.Column(c.name, sql_type(c.kind)) for c in t.columns))
    names = [c.name for c in t.columns]
    with engine.begin() as conn:
        target.create(conn)
        conn.execute(target.insert(), [dict(zip(names, r, strict=True)) for r in t.records()])
    try:
        # the writer's own check: the table holds the records (up to what LIMITS says)
        with engine.connect() as conn:
            stored = conn.execute(sa.select(*target.columns)).all()
        nan_is_missing = engine.dialect.name == "sqlite"
        assert normalized_records(t.columns, stored, nan_is_missing=nan_is_missing) == (
            normalized_records(t.columns, t.records(), nan_is_missing=nan_is_missing)
        ), f"the {engine.dialect.name} table does not hold the records written"
        yield name
    finally:
        with engine.begin() as conn:
            target.drop(conn)


# ------------------------------------------------------------------------------- backends
def reader(module: str, name: str) -> Callable[..., Any]:
    """The backend function ``module.name``: a missing module or function raises (no skip)."""
    import importlib

    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]

"""The conformance corpus: one table of hostile columns, defined once, and its truth.

Every backend holds the same raw values, each in the native types of that backend
(:data:`PLACEMENTS`), and every entry point (the CLI, the operators, Great Expectations) must
report the class-size histogram :func:`histogram` computes here, in plain Python, from the raw
values and what the backend stores of them (its *storage rule*). Nothing here imports
reident_airflow: the truth is independent of the code it checks.

The shape makes every merge visible. The 36 rows form 8 groups of 1, 2, ..., 8 rows; a column
gives each group one of its distinct values (group ``j`` the value ``values[j]``; when the
column has fewer values than groups, its last value takes the remaining groups). So the
distinct values of a column come with distinct multiplicities, and merging ANY two of them --
as a case-insensitive, accent-insensitive, trailing-space, 6-digit-float or collation equality
would -- changes the class-size histogram. Across the columns the groups are the classes
(several columns have 8 values, all distinct under the rules), so the whole set of columns at
once has the histogram 1, 2, ..., 8 unless a backend or a reader merges two groups.

The value rules are docs/reading.md's ("Values"): text by its exact characters, bytes by their
bytes (never equal to text), numbers, booleans, dates and timestamps by value (``-0.0`` is
``0.0``; every NaN is one value, not missing), ``NULL`` a value of its own distinct from
``''``; arrays element by element under the same rules.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

#: the group sizes: group j holds j + 1 rows
GROUPS = 8
ROWS = GROUPS * (GROUPS + 1) // 2  # 36

#: A NaN with a payload bit set and a NaN with the sign bit set: every NaN is one value.
NAN_PAYLOAD = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]

UTC = dt.UTC
PLUS1 = dt.timezone(dt.timedelta(hours=1))
PLUS5 = dt.timezone(dt.timedelta(hours=5))


@dataclass(frozen=True)
class Column:
    """A logical column: its kind and its distinct raw values (at most :data:`GROUPS`)."""

    name: str
    kind: str
    values: tuple[Any, ...]

    def cells(self) -> list[Any]:
        """The column's 36 raw values, row by row (group j: ``values[min(j, len - 1)]``)."""
        out: list[Any] = []
        for group in range(GROUPS):
            out.extend([self.values[min(group, len(self.values) - 1)]] * (group + 1))
        return out


def _columns(*columns: Column) -> dict[str, Column]:
    for c in columns:
        assert 2 <= len(c.values) <= GROUPS, c.name
    return {c.name: c for c in columns}


#: The hostile columns, by name. Each comment says which wrong equality would merge what.
CORPUS: dict[str, Column] = _columns(
    # case (citext, *_ci collations, NOCASE, UTF8_LCASE, ICU level 2), PAD SPACE ('a' = 'a '),
    # NULL against ''
    Column(
        "case",
        "text",
        ("Ann@x.org", "ann@x.org", "ANN@X.ORG", "a", "A", "a ", None, ""),
    ),
    # accents (general_ci, latin1_swedish_ci, ICU level 1), NFC against NFD (canonical
    # equivalence of ICU collations), trailing space
    Column(
        "accent",
        "text",
        ("\u00e9", "e\u0301", "e", "E", "\u00c9", "Jos\u00e9", "Jose", "e "),
    ),
    # spaces: trailing (PAD SPACE, RTRIM), leading, tab, no-break space, empty, missing
    Column(
        "space",
        "text",
        ("a", "a ", "a  ", " a", "a\t", "a\u00a0", "", None),
    ),
    # text a legacy single-byte character set (latin1) holds: accents and case
    Column(
        "latin1",
        "text",
        ("Jos\u00e9", "Jose", "JOSE", "jose", "Jos\u00e9 ", "\u00e9", "e", "\u00c4"),
    ),
    # CHAR(n) values: what a padded or trimmed CHAR makes of them is the storage rule
    Column("fixed", "text", ("ab", "ab ", "AB", "a", "A", "", None, "b")),
    # float edge values: -0.0 = 0.0, three NaNs are one value (not missing), infinities
    Column(
        "float_edge",
        "float",
        (0.0, -0.0, math.nan, NAN_PAYLOAD, NEG_NAN, math.inf, -math.inf, None),
    ),
    # floats a 6-significant-digit text protocol or a float32 merges: 70.0 / 70.00001,
    # 0.3 / 0.1 + 0.2 and 1.0 / 1.0 + 1 ulp (a float32 merges the last two pairs)
    Column(
        "float_close",
        "float",
        (70.0, 70.00001, 0.3, 0.1 + 0.2, 1.0, 1.0000000000000002, 81.5, -0.0),
    ),
    # floats that print alike with 6 significant digits (123457, 1.23457e+06) but differ
    # as doubles and as float32; -0.0 = 0.0; missing
    Column(
        "float_digits",
        "float",
        (123456.7, 123456.8, 1234567.0, 1234567.1, 0.0, -0.0, None),
    ),
    # integers a double merges (2**53 + 1), the ends of int64
    Column(
        "int",
        "int",
        (0, -1, 2**53, 2**53 + 1, 2**63 - 1, -(2**63), 1, None),
    ),
    # decimals equal by value (1.0 = 1.00, -0 = 0), two that a double merges
    Column(
        "decimal",
        "decimal",
        (
            Decimal("1.0"),
            Decimal("1.00"),
            Decimal("0.1"),
            Decimal("-0"),
            Decimal("0"),
            Decimal("12345678901234567890.123456789"),
            Decimal("12345678901234567890.123456788"),
            None,
        ),
    ),
    Column("bool", "bool", (True, False, None)),
    # instants: 12:00Z and 13:00+01:00 are one instant; a microsecond apart; another zone
    Column(
        "instant",
        "timestamp",
        (
            dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC),
            dt.datetime(2024, 1, 1, 13, 0, tzinfo=PLUS1),
            dt.datetime(2024, 1, 1, 12, 0, 0, 1, tzinfo=UTC),
            dt.datetime(2024, 1, 1, 12, 0, tzinfo=PLUS5),
            dt.datetime(1970, 1, 1, 0, 0, tzinfo=UTC),
            dt.datetime(2024, 3, 31, 1, 30, tzinfo=UTC),
            None,
        ),
    ),
    # bytes: case, trailing space, not UTF-8 (a decode with 'replace' merges \xff and \xfe),
    # empty against NUL against missing
    Column(
        "bytes",
        "bytes",
        (b"a", b"A", b"a ", b"\xff", b"\xfe", b"", None, b"\x00"),
    ),
    # a column holding several types (SQLite): bytes never equal text, text never a number
    Column(
        "mixed",
        "mixed",
        (b"a", "a", 1, "1", b"1", None, "", b""),
    ),
    # enum labels differing in case only
    Column("label", "text", ("low", "Low", "LOW", "high", "mid", None)),
    # SET values: one set written in two orders
    Column("members", "text", ("a,b", "b,a", "a", "b", "", None, "c")),
    # bit strings, as integers
    Column("bits", "int", (0, 1, 255, 256, 2**63, None)),
    # arrays: case, trailing space, order, empty, missing, an array holding a missing value
    Column(
        "array",
        "array",
        (["a", "b"], ["A", "b"], ["a", "b "], ["b", "a"], [], None, [None], ["a"]),
    ),
    # JSON documents: key order and spaces (jsonb normalizes them), JSON null against NULL
    Column(
        "document",
        "json",
        ('{"a": 1, "b": 2}', '{"b":2,"a":1}', '{"a": 1}', '{"A": 1}', "null", None, "[]", "{}"),
    ),
)


# ------------------------------------------------------------------------ storage rules
class Refused:
    """The column's type has no equality a gate can trust: every entry point must refuse it
    (an input error naming the column), never assess it."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"Refused({self.why!r})"


Storage = Callable[[Any], Any]


def _none_safe(f: Storage) -> Storage:
    def rule(value: Any) -> Any:
        return None if value is None else f(value)

    rule.__name__ = f.__name__
    return rule


def same(value: Any) -> Any:
    """The backend stores the value as given."""
    return value


@_none_safe
def float32(value: float) -> float:
    """A 4-byte float (MariaDB ``FLOAT``, PostgreSQL ``real``, Parquet/Arrow ``float``,
    numpy/Spark ``float32``): the value rounded to the nearest IEEE 754 single, which is what
    struct's ``f`` format does (MariaDB: "FLOAT ... a single-precision floating-point
    number"; PostgreSQL: "real ... 4 bytes ... 6 decimal digits precision")."""
    rounded: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return rounded


def nan_is_null(value: Any) -> Any:
    """SQLite stores a NaN as NULL (sqlite.org/floatingpoint.html: "NaN ... converted into
    NULL"); docs/reading.md "Values a backend cannot hold" says the same."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def padded(width: int) -> Storage:
    """PostgreSQL ``character(n)``: "values ... are padded with spaces to the specified
    width n", and trailing spaces given beyond the value are insignificant (PostgreSQL docs,
    8.3 Character Types): ``'ab '`` and ``'ab'`` are both stored ``'ab  '``."""

    @_none_safe
    def pad(value: str) -> str:
        return value.rstrip(" ").ljust(width, " ")

    return pad


@_none_safe
def trailing_spaces_removed(value: str) -> str:
    """MariaDB ``CHAR(n)``: "trailing spaces are removed" when the value is retrieved (MariaDB
    docs, CHAR; without the PAD_CHAR_TO_FULL_LENGTH SQL mode): ``'ab '`` reads ``'ab'``."""
    return value.rstrip(" ")


def zero_padded(width: int) -> Storage:
    """MariaDB ``BINARY(n)``: the value is right-padded with ``0x00`` bytes to n (MariaDB
    docs, BINARY): ``b''`` and ``b'\\x00'`` are both stored as n NUL bytes."""

    @_none_safe
    def pad(value: bytes) -> bytes:
        return value.ljust(width, b"\x00")

    return pad


def set_of(members: Sequence[str]) -> Storage:
    """MariaDB ``SET``: a value is stored as the set of its members, read back "in the order
    they were listed in the column definition", each once (MariaDB docs, SET Data Type):
    ``'b,a'`` reads ``'a,b'``."""

    @_none_safe
    def normal(value: str) -> str:
        given = {m for m in value.split(",") if m}
        return ",".join(m for m in members if m in given)

    return normal


def enum_of(members: Sequence[str]) -> Storage:
    """MariaDB ``ENUM``: a value is stored as the index of the member it equals under the
    column's collation, and read back as that member spelled as declared (MariaDB docs, ENUM
    Data Type; the default collation is case-insensitive): ``'LOW'`` reads ``'low'``."""

    @_none_safe
    def member(value: str) -> str:
        (found,) = (m for m in members if m.casefold() == value.casefold())
        return found

    return member


@_none_safe
def utc_instant(value: dt.datetime) -> dt.datetime:
    """PostgreSQL ``timestamptz`` ("stored internally in UTC"), Parquet/Arrow
    ``timestamp[us, tz=UTC]``, Spark ``TIMESTAMP`` (an instant) and the MariaDB ``DATETIME``
    the loader fills with UTC: the instant, whatever zone the value was written in."""
    return value.astimezone(UTC)


@_none_safe
def iso_text(value: dt.datetime) -> str:
    """SQLite has no date type ("Date And Time Datatype": stored as TEXT): the loader writes
    the ISO 8601 text, so ``12:00+00:00`` and ``13:00+01:00`` are different text."""
    return value.isoformat()


@_none_safe
def jsonb(value: str) -> str:
    """PostgreSQL ``jsonb``: stored decomposed, so "white space is not preserved, the order
    of object keys is not preserved" (PostgreSQL docs, 8.14 JSON Types); compared by value."""
    return json.dumps(json.loads(value), sort_keys=True, separators=(",", ":"))


@_none_safe
def as_int(value: bool) -> int:
    """SQLite has no boolean storage class: True and False are stored as the integers 1 and
    0 (sqlite.org/datatype3.html, "Boolean Datatype"); MariaDB ``BOOLEAN`` is ``TINYINT(1)``."""
    return int(value)


@_none_safe
def csv_text(value: Any) -> str:
    """CSV holds only text: the loader writes ``str`` of the value (``repr`` for a float,
    so every NaN reads ``nan``), and CSV compares that text (docs/reading.md)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return str(value)


# --------------------------------------------------------------------------- the truth
def _key(value: Any) -> Any:
    """A stored value as docs/reading.md compares it: equal values, equal keys.

    Text by its characters, bytes by their bytes (tagged apart from text), numbers by value
    (Python's ``==``: ``-0.0 == 0.0``, ``Decimal('1.0') == Decimal('1.00')``), every NaN one
    value distinct from missing, timestamps by instant (aware ``datetime`` compares so),
    missing one value distinct from ``''``, arrays element by element.
    """
    if value is None:
        return ("missing",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, int | float | Decimal):
        return ("number", value)
    if isinstance(value, str):
        return ("text", value)
    if isinstance(value, bytes):
        return ("bytes", value)
    if isinstance(value, dt.datetime):
        return ("instant", value)
    if isinstance(value, list):
        return ("array", tuple(_key(v) for v in value))
    raise TypeError(f"no rule for {type(value).__name__}")


Histogram = list[list[int]]


def _histogram(keys: Sequence[Any]) -> Histogram:
    sizes = Counter(Counter(keys).values())
    return [[size, count] for size, count in sorted(sizes.items())]


def histogram(columns: Sequence[tuple[str, Storage]]) -> Histogram:
    """The class-size histogram (``[[size, classes], ...]``, by size) of the corpus on the
    given columns, each stored by its rule, as the CLI's JSON prints it."""
    stored = [[rule(v) for v in CORPUS[name].cells()] for name, rule in columns]
    return _histogram([tuple(_key(v) for v in row) for row in zip(*stored, strict=True)])


# -------------------------------------------------------------------------- placements
@dataclass(frozen=True)
class Placement:
    """One physical column of a backend: the corpus column it holds, its native type (the
    backend's DDL, or a tag its loader understands) and what the backend stores."""

    name: str
    column: str
    native: str
    storage: Storage | Refused = same


def _p(name: str, column: str, native: str, storage: Storage | Refused = same) -> Placement:
    return Placement(name, column, native, storage)


# Names of the database objects a PostgreSQL placement uses; the loader substitutes them
# with unique names ({ci} a case-insensitive ICU collation, {ai} an accent- and
# case-insensitive one, {email} a DOMAIN over citext, {ci_text} a DOMAIN over text COLLATE
# {ci}, {mood} an enum, {amount} a DOMAIN over numeric).
MOOD = ("low", "Low", "LOW", "high", "mid")
#: MariaDB ENUM and SET members (an ENUM cannot list 'low' and 'Low' under a _ci collation)
ENUM_MEMBERS = ("low", "high", "mid")
MEMBERS = ("a", "b", "c")


def _listed(members: Sequence[str]) -> str:
    return ", ".join(f"'{m}'" for m in members)


PLACEMENTS: dict[str, tuple[Placement, ...]] = {
    # CSV holds text only (every value written as its text, csv_text)
    "csv": (
        _p("case", "case", "text", csv_text),
        _p("accent", "accent", "text", csv_text),
        _p("space", "space", "text", csv_text),
        _p("fixed", "fixed", "text", csv_text),
        _p("float_edge", "float_edge", "text", csv_text),
        _p("float_close", "float_close", "text", csv_text),
        _p("int", "int", "text", csv_text),
        _p("decimal", "decimal", "text", csv_text),
        _p("instant", "instant", "text", csv_text),
        _p("label", "label", "text", csv_text),
    ),
    "parquet": (
        _p("case", "case", "string"),
        _p("case_dict", "case", "dictionary<string>"),
        _p("accent", "accent", "string"),
        _p("space", "space", "string"),
        _p("fixed", "fixed", "string"),
        _p("float_edge", "float_edge", "double"),
        _p("float_edge32", "float_edge", "float", float32),
        _p("float_close", "float_close", "double"),
        _p("float_close32", "float_close", "float", float32),
        _p("float_digits", "float_digits", "double"),
        _p("float_digits32", "float_digits", "float", float32),
        _p("int", "int", "int64"),
        _p("decimal", "decimal", "decimal128(38,9)"),
        _p("bool", "bool", "bool"),
        _p("instant", "instant", "timestamp[us,UTC]", utc_instant),
        _p("instant_paris", "instant", "timestamp[us,Europe/Paris]", utc_instant),
        _p("bytes", "bytes", "binary"),
        _p("label", "label", "string"),
    ),
    # pandas for Great Expectations
    "pandas": (
        _p("case", "case", "object"),
        _p("case_str", "case", "str"),
        _p("case_arrow", "case", "string[pyarrow]"),
        _p("accent", "accent", "object"),
        _p("space", "space", "object"),
        _p("fixed", "fixed", "object"),
        _p("float_edge", "float_edge", "Float64"),
        _p("float_edge_arrow", "float_edge", "double[pyarrow]"),
        _p("float_close", "float_close", "float64"),
        _p("float_close32", "float_close", "float32", float32),
        _p("float_digits", "float_digits", "Float64"),
        _p("int", "int", "Int64"),
        _p("bool", "bool", "boolean"),
        _p("instant", "instant", "datetime64[us, UTC]", utc_instant),
        _p("bytes", "bytes", "object"),
        _p("label", "label", "category"),
    ),
    "sqlite": (
        _p("case", "case", "TEXT"),
        _p("case_nocase", "case", "TEXT COLLATE NOCASE"),
        _p("accent", "accent", "TEXT"),
        _p("space", "space", "TEXT"),
        _p("space_rtrim", "space", "TEXT COLLATE RTRIM"),
        # CHAR(n) is TEXT affinity in SQLite: no padding, no length ("Type Affinity")
        _p("fixed", "fixed", "CHAR(4)"),
        _p("float_edge", "float_edge", "REAL", nan_is_null),
        _p("float_close", "float_close", "REAL"),
        _p("float_digits", "float_digits", "REAL"),
        _p("int", "int", "INTEGER"),
        _p("bool", "bool", "BOOLEAN", as_int),
        _p("instant", "instant", "TEXT", iso_text),
        _p("bytes", "bytes", "BLOB"),
        # no declared type: BLOB affinity, every value stored as given ("Type Affinity")
        _p("mixed", "mixed", ""),
        _p("label", "label", "TEXT COLLATE NOCASE"),
    ),
    "postgresql": (
        _p("case", "case", "text"),
        _p("case_citext", "case", "citext"),
        _p("case_email", "case", "{email}"),
        _p("case_ci", "case", "{ci_text}"),
        _p("case_collate", "case", 'text COLLATE "{ci}"'),
        _p("case_varchar", "case", "varchar(16)"),
        _p("accent", "accent", "text"),
        _p("accent_ai", "accent", 'text COLLATE "{ai}"'),
        _p("space", "space", "text"),
        _p("space_ci", "space", "{ci_text}"),
        _p("fixed", "fixed", "char(4)", padded(4)),
        _p("float_edge", "float_edge", "double precision"),
        _p("float_edge4", "float_edge", "real", float32),
        _p("float_close", "float_close", "double precision"),
        _p("float_close4", "float_close", "real", float32),
        _p("float_digits", "float_digits", "double precision"),
        _p("float_digits4", "float_digits", "real", float32),
        _p("int", "int", "bigint"),
        _p("decimal", "decimal", "numeric"),
        _p("decimal_domain", "decimal", "{amount}"),
        _p("bool", "bool", "boolean"),
        _p("instant", "instant", "timestamptz", utc_instant),
        _p("bytes", "bytes", "bytea"),
        _p("label", "label", "{mood}"),
        _p("array", "array", "text[]"),
        _p("array_ci", "array", 'text[] COLLATE "{ci}"'),
        _p("array_citext", "array", "citext[]"),
        _p("document_jsonb", "document", "jsonb", jsonb),
        _p("document_json", "document", "json", Refused("json has no equality operator")),
    ),
    "mariadb": (
        # the server's default collation (utf8mb4_general_ci on 10.11): case- and
        # accent-insensitive, PAD SPACE
        _p("case", "case", "VARCHAR(16)"),
        _p("case_bin", "case", "VARCHAR(16) COLLATE utf8mb4_bin"),
        _p("accent", "accent", "VARCHAR(16)"),
        _p("space", "space", "VARCHAR(16)"),
        _p("latin1", "latin1", "VARCHAR(16) CHARACTER SET latin1"),
        _p("fixed", "fixed", "CHAR(4)", trailing_spaces_removed),
        _p("float_close", "float_close", "FLOAT", float32),
        _p("float_close_double", "float_close", "DOUBLE"),
        _p("float_digits", "float_digits", "FLOAT", float32),
        _p("float_digits_double", "float_digits", "DOUBLE"),
        _p("int", "int", "BIGINT"),
        _p("decimal", "decimal", "DECIMAL(30,9)"),
        _p("bool", "bool", "BOOLEAN", as_int),
        _p("instant", "instant", "DATETIME(6)", utc_instant),
        _p("bytes", "bytes", "VARBINARY(8)"),
        _p("bytes_fixed", "bytes", "BINARY(4)", zero_padded(4)),
        _p("members", "members", f"SET({_listed(MEMBERS)})", set_of(MEMBERS)),
        _p("bits", "bits", "BIT(64)"),
        _p("label", "label", f"ENUM({_listed(ENUM_MEMBERS)})", enum_of(ENUM_MEMBERS)),
    ),
    # Spark classic: the Arrow types of the loader become Spark types; case_lcase is a
    # string under Spark 4's UTF8_LCASE collation, which docs/reading.md says is refused
    "spark": (
        _p("case", "case", "string"),
        _p("case_lcase", "case", "string collate UTF8_LCASE", Refused("UTF8_LCASE collation")),
        _p("accent", "accent", "string"),
        _p("space", "space", "string"),
        _p("float_edge", "float_edge", "double"),
        _p("float_close", "float_close", "double"),
        _p("float_close32", "float_close", "float", float32),
        _p("float_digits", "float_digits", "double"),
        _p("float_digits32", "float_digits", "float", float32),
        _p("int", "int", "bigint"),
        _p("decimal", "decimal", "decimal(38,9)"),
        _p("bool", "bool", "boolean"),
        _p("instant", "instant", "timestamp", utc_instant),
        _p("bytes", "bytes", "binary"),
        _p("label", "label", "string"),
    ),
}


def placement(backend: str, name: str) -> Placement:
    for p in PLACEMENTS[backend]:
        if p.name == name:
            return p
    raise KeyError(f"{backend} has no column {name}")


def assessed(backend: str) -> list[Placement]:
    """The backend's placements an entry point must assess (not those it must refuse)."""
    return [p for p in PLACEMENTS[backend] if not isinstance(p.storage, Refused)]


def expected(backend: str, names: Sequence[str]) -> Histogram:
    """The truth: the histogram of ``backend``'s columns ``names`` as it stores them."""
    columns: list[tuple[str, Storage]] = []
    for name in names:
        p = placement(backend, name)
        assert not isinstance(p.storage, Refused), p
        columns.append((p.column, p.storage))
    return histogram(columns)

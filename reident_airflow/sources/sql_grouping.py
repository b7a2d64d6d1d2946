"""The grouping statements of a database read: ``GROUP BY`` the QIs, exactly.

Values are grouped as docs/reading.md says, by the database itself:

- each column's kind is asked of the database for the table and for a query alike (a
  ``where`` or ``sql`` read groups as the table does), never taken from reflected types;
- text by its exact characters, whatever the column's collation: MySQL/MariaDB text by its
  bytes (``CAST(... AS BINARY)``), SQLite under ``BINARY``; PostgreSQL every type whose
  equality is not identity (text, ``citext``, domains, enums, arrays, ...) by its text form
  under the ``"C"`` collation;
- MySQL/MariaDB 4-byte ``FLOAT`` as ``DOUBLE`` (printed in full);
- bytes (and MySQL/MariaDB text, grouped by its bytes) come back as :class:`bytes` and stay
  bytes: nothing is decoded, so two byte strings the database tells apart never merge;
- PostgreSQL floats as ``x + 0`` (``-0`` prints as ``0``; every NaN prints ``NaN``) and
  numerics without trailing zeros, so that one class prints the same in every query;
- Spark SQL (the ``hive://`` dialect of PyHive, through the Spark Thrift Server) text under
  the ``UTF8_BINARY`` collation where a column has another one (Spark 4: ``COLLATE
  UTF8_LCASE`` would merge spellings); the column kinds come from ``typeof``, since PyHive
  reflects a ``BINARY`` column as text and drops collations.

A class whose every QI is the text ``*`` (suppressed records) is flagged by the database in
the same statement (:data:`SUPPRESSED_LABEL`). Constants are written into the statement
(:func:`constant`), so that no bound parameter can be quoted by an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from reident_airflow.engine.encoding import SUPPRESSION_MARKER, validate_quasi_identifiers
from reident_airflow.engine.errors import InvalidInputError

__all__ = [
    "CLASSES_LABEL",
    "COUNT_LABEL",
    "NONPOSITIVE_LABEL",
    "PRESENT_LABEL",
    "RESERVED_LABELS",
    "SUM_LABEL",
    "SUPPRESSED_LABEL",
    "Grouping",
    "SqlTable",
    "changes_statement",
    "class_rows",
    "compared_kinds",
    "constant",
    "grouped_by",
    "grouping_kinds",
    "histogram_statement",
    "is_marker",
    "plan_grouping",
    "result_types",
]

#: A table, or a user's query as a subquery.
SqlTable: TypeAlias = sa.Table | sa.Subquery

COUNT_LABEL = "reident_class_size"
SUM_LABEL = "reident_weight_sum"
#: 1 on the row of the class whose every QI is the text ``*``, else 0.
SUPPRESSED_LABEL = "reident_suppressed"
CLASSES_LABEL = "reident_classes"
PRESENT_LABEL = "reident_weight_present"
NONPOSITIVE_LABEL = "reident_weight_nonpositive"
#: Names the statements give their own columns: no source column may carry one.
RESERVED_LABELS = frozenset(
    {
        COUNT_LABEL,
        SUM_LABEL,
        SUPPRESSED_LABEL,
        CLASSES_LABEL,
        PRESENT_LABEL,
        NONPOSITIVE_LABEL,
    }
)


# What a column holds, as far as grouping it exactly and telling the text '*' go.
_TEXT = "text"
_BINARY = "binary"
_FLOAT = "float"
#: MySQL/MariaDB ``FLOAT`` (4 bytes): its text form keeps 6 digits, so it is grouped and
#: fetched as a ``DOUBLE`` (exact: every 4-byte float is a double, printed in full).
_FLOAT32 = "float32"
_NUMERIC = "numeric"
_OTHER = "other"
_MYSQL = frozenset({"mysql", "mariadb"})
#: SQLAlchemy's name of PyHive's dialect (Spark Thrift Server, HiveServer2).
_HIVE = "hive"
# PostgreSQL type OIDs (pg_type) as a result reports them (a domain as its base type). Types
# whose equality is identity are grouped by value: bool, "char", int8, int2, int4, oid, date,
# time, timestamp, timestamptz, uuid; bytea by its bytes; real and double precision as
# ``x + 0``; numeric without trailing zeros. Every other type (text, varchar, char(n), name,
# citext, enums, arrays, jsonb, interval, ranges, composites, any extension's type) is
# grouped by its text form under the "C" collation: its own equality may merge values that
# differ (citext, a nondeterministic collation, interval's '1 day' = '24 hours').
_PG_KINDS = {
    17: _BINARY,
    700: _FLOAT,
    701: _FLOAT,
    1700: _NUMERIC,
    **dict.fromkeys((16, 18, 20, 21, 23, 26, 1082, 1083, 1114, 1184, 2950), _OTHER),
}
#: PostgreSQL types without an equality: a column of one is refused, with the fix.
_PG_NO_EQUALITY = {
    114: (
        "json",
        "cast it to jsonb (values equal by meaning) or to text (equal as written) in a sql query",
    ),
}
# MySQL/MariaDB protocol type codes (a result's ``description``) of 4-byte FLOAT; a column
# whose CHARSET() is not ``binary`` is text whatever its code.
_MYSQL_FLOAT = 4
# Spark SQL types as ``typeof`` names them (a prefix: ``decimal(10,2)``, ``varchar(5)``);
# any other is "other". A string under a collation other than UTF8_BINARY is "collated".
_HIVE_KINDS = (
    ("string", _TEXT),
    ("varchar", _TEXT),
    ("char", _TEXT),
    ("binary", _BINARY),
    ("float", _FLOAT),
    ("double", _FLOAT),
    ("decimal", _NUMERIC),
)
_COLLATED = "collated"


def constant(value: Any) -> sa.BindParameter[Any]:
    """A constant written into the statement (no bound parameter to show in an error)."""
    return sa.literal(value, literal_execute=True)


def _marker() -> sa.BindParameter[Any]:
    return sa.literal(SUPPRESSION_MARKER, sa.String(), literal_execute=True)


def _type_kind(type_: sa.types.TypeEngine[Any]) -> str:
    if isinstance(type_, sa.String):  # includes Enum, MySQL SET
        return _TEXT
    if isinstance(type_, sa.LargeBinary | sa.BINARY | sa.VARBINARY):
        return _BINARY
    if isinstance(type_, sa.Float):
        return _FLOAT
    if isinstance(type_, sa.Numeric):
        return _NUMERIC
    return _OTHER


def result_types(conn: Connection, source: SqlTable, names: Sequence[str]) -> list[Any]:
    """The type codes the driver gives the columns of ``SELECT names FROM source LIMIT 0``."""
    result = conn.execute(sa.select(*(source.c[n] for n in names)).limit(0))
    description = result.cursor.description
    result.close()
    return [column[1] for column in description]


def _mysql_kinds(conn: Connection, source: SqlTable, names: Sequence[str]) -> list[str]:
    """MySQL/MariaDB: text where ``CHARSET()`` is not ``binary``; else 4-byte ``FLOAT`` by the
    result's type code; everything else by value."""
    # one row, and the query not run: (SELECT 1) LEFT JOIN (query LIMIT 0) ON false
    one = sa.select(constant(1).label("reident_one")).subquery("reident_one")
    empty = sa.select(*(source.c[n] for n in names)).limit(0).subquery("reident_empty")
    probe = sa.select(*(sa.func.charset(empty.c[n]) for n in names)).select_from(
        one.outerjoin(empty, sa.false())
    )
    charsets = conn.execute(probe).one()
    codes = result_types(conn, source, names)
    return [
        _TEXT
        if c is not None and str(c) != "binary"
        else (_FLOAT32 if int(code) == _MYSQL_FLOAT else _OTHER)
        for c, code in zip(charsets, codes, strict=True)
    ]


def _hive_kind(type_name: str) -> str:
    name = type_name.strip().lower()
    if " collate " in name and not name.endswith(" collate utf8_binary"):
        return _COLLATED
    return next((kind for prefix, kind in _HIVE_KINDS if name.startswith(prefix)), _OTHER)


def _hive_kinds(conn: Connection, source: SqlTable, names: Sequence[str]) -> list[str]:
    """Spark SQL: ``typeof`` of each column (collation included) on one row of NULLs:
    ``(SELECT 1) LEFT JOIN (SELECT ... LIMIT 0) ON false``, the query not run."""
    one = sa.select(constant(1).label("reident_one")).subquery("reident_one")
    empty = sa.select(*(source.c[n] for n in names)).limit(0).subquery("reident_empty")
    probe = sa.select(*(sa.func.typeof(empty.c[n]) for n in names)).select_from(
        one.outerjoin(empty, sa.false())
    )
    return [_hive_kind(str(t)) for t in conn.execute(probe).one()]


def grouping_kinds(conn: Connection, source: SqlTable, names: Sequence[str]) -> dict[str, str]:
    """Each column's kind, as the database reports it for ``source`` (a table or a query
    alike, so that a ``where`` or ``sql`` read groups as the table does): PostgreSQL by the
    result's type OIDs (a domain reports its base type); MySQL/MariaDB by ``CHARSET()``
    (``binary`` for everything but text) and the result's type codes; Spark SQL by
    ``typeof`` (PyHive reflects ``BINARY`` as text, and no collation). SQLite types values,
    not columns: every column there is grouped the same way (:func:`grouped_by`); other
    dialects by the SQLAlchemy type."""
    if not names:
        return {}
    dialect = conn.dialect.name
    if dialect == _HIVE:
        return dict(zip(names, _hive_kinds(conn, source, names), strict=True))
    if dialect == "postgresql":
        codes = [int(c) for c in result_types(conn, source, names)]
        for name, code in zip(names, codes, strict=True):
            if code in _PG_NO_EQUALITY:
                type_name, fix = _PG_NO_EQUALITY[code]
                raise InvalidInputError(
                    f"column {name!r} is of type {type_name}, which has no equality to group "
                    f"records by: {fix}"
                )
        return {n: _PG_KINDS.get(c, _TEXT) for n, c in zip(names, codes, strict=True)}
    if dialect in _MYSQL:
        return dict(zip(names, _mysql_kinds(conn, source, names), strict=True))
    return {n: _type_kind(source.c[n].type) for n in names}


# The kinds two releases are compared by (:func:`compared_kinds`): a compared column must
# be of one kind in both releases (``float32`` is compared as the ``float`` it widens to).
_PG_COMPARED = {
    16: "boolean",
    17: _BINARY,
    18: "char",
    20: "integer",
    21: "integer",
    23: "integer",
    26: "oid",
    700: _FLOAT32,
    701: _FLOAT,
    1700: "decimal",
    1082: "date",
    1083: "time",
    1114: "timestamp",
    1184: "timestamptz",
    2950: "uuid",
}
# MySQL/MariaDB protocol type codes (pymysql.constants.FIELD_TYPE) of the columns whose
# CHARSET() is ``binary`` (text is "text" whatever its code).
_MYSQL_COMPARED = {
    **dict.fromkeys((1, 2, 3, 8, 9), "integer"),
    **dict.fromkeys((0, 246), "decimal"),
    4: _FLOAT32,
    5: _FLOAT,
    **dict.fromkeys((7, 12), "datetime"),
    **dict.fromkeys((10, 14), "date"),
    11: "time",
    13: "year",
    16: "bit",
    **dict.fromkeys((15, 249, 250, 251, 252, 253, 254), _BINARY),
    255: "geometry",
}
#: SQLite's storage classes as the release comparison tells them apart: an integer and a
#: real of one value are one value there (SQLite compares them exactly, by value).
_SQLITE_CLASSES = (("blob", "blob"), ("integer", "number"), ("real", "number"), ("text", "text"))


def _sqlite_value_kinds(conn: Connection, source: SqlTable, names: Sequence[str]) -> list[str]:
    """SQLite types values, not columns: each column's kind is the storage classes its
    values hold (``"number+text"``; ``""`` for a column of ``NULL`` only), read in one scan."""
    families = sorted({family for _, family in _SQLITE_CLASSES})
    probes = []
    for name in names:
        kind = sa.func.typeof(source.c[name])
        for family in families:
            classes = [c for c, f in _SQLITE_CLASSES if f == family]
            probes.append(sa.func.max(sa.case((kind.in_(classes), constant(1)), else_=constant(0))))
    row = conn.execute(sa.select(*probes).select_from(source)).one()
    out = []
    for i in range(len(names)):
        held = row[i * len(families) : (i + 1) * len(families)]
        out.append("+".join(f for f, h in zip(families, held, strict=True) if h))
    return out


def compared_kinds(conn: Connection, source: SqlTable, names: Sequence[str]) -> list[str]:
    """Each column's kind for comparing two releases: two columns are compared only when
    their kinds are alike (:func:`~reident_airflow.sources.release_changes.check_kinds`),
    as ``UNION`` would otherwise convert one to the other (an integer to a double merges
    ``2**53`` and ``2**53 + 1``; a date to text). PostgreSQL by the result's type OIDs (every
    type grouped by its text form is "text"), MySQL/MariaDB by ``CHARSET()`` and the
    result's type codes, SQLite by the storage classes of the values
    (:func:`_sqlite_value_kinds`), other dialects by :func:`grouping_kinds`."""
    if not names:
        return []
    dialect = conn.dialect.name
    if dialect == "postgresql":
        grouping_kinds(conn, source, names)  # json refused
        codes = [int(c) for c in result_types(conn, source, names)]
        return [_PG_COMPARED.get(c, _TEXT) for c in codes]
    if dialect in _MYSQL:
        text = [k == _TEXT for k in _mysql_kinds(conn, source, names)]
        codes = [int(c) for c in result_types(conn, source, names)]
        return [
            _TEXT if t else _MYSQL_COMPARED.get(c, f"type {c}")
            for t, c in zip(text, codes, strict=True)
        ]
    if dialect == "sqlite":
        return _sqlite_value_kinds(conn, source, names)
    kinds = grouping_kinds(conn, source, names)
    return [kinds[n] for n in names]


def _exact(conn: Connection, column: sa.ColumnElement[Any], kind: str) -> sa.ColumnElement[Any]:
    """The expression a column is grouped by, so that equal means equal under docs/reading.md.

    MySQL and MariaDB compare text under the column's collation, usually case-insensitive and
    blind to trailing spaces (``Male`` = ``male`` = ``Male ``): there text is grouped by its
    bytes, and comes back as bytes; a 4-byte ``FLOAT`` as a ``DOUBLE`` (its own text form
    keeps 6 digits: ``70`` and ``70.00001`` would read back alike). PostgreSQL groups every
    type but a few whose equality is identity (:data:`_PG_KINDS`) by its text form under the
    ``"C"`` collation: ``citext``, a domain, an enum, an array, a nondeterministic ICU
    collation would otherwise merge spellings. SQLite text is grouped under ``BINARY`` (a
    column may be declared ``COLLATE NOCASE``).

    PostgreSQL floats are grouped as ``x + 0`` (printed in full: ``extra_float_digits`` is set
    for the transaction) and numerics as ``trim_scale(x)``: the same classes (``-0 = 0``,
    ``1.0 = 1.00``), but each class prints one way, so that the class rows of two queries
    (sizes, sensitive value counts) meet on the client.

    The values come back as the driver returns them, through no SQLAlchemy result processor
    (MySQL's ``DOUBLE`` type would round every value to a ``Decimal`` of 10 places, merging
    ``1.0`` and ``1.0000000000000002``; SQLite's ``Numeric`` likewise).
    """
    return sa.type_coerce(grouped_by(conn, column, kind), sa.types.NullType()).label(
        str(column.key)
    )


def grouped_by(conn: Connection, column: sa.ColumnElement[Any], kind: str) -> Any:
    dialect = conn.dialect.name
    if dialect in _MYSQL and kind == _TEXT:
        return sa.cast(column, sa.LargeBinary)
    if dialect in _MYSQL and kind == _FLOAT32:
        return sa.cast(column, sa.Double())
    if dialect == "postgresql":
        if kind == _TEXT:
            return sa.cast(column, sa.Text).collate("C")
        if kind == _FLOAT:
            return column + constant(0)
        if kind == _NUMERIC and (conn.dialect.server_version_info or (0,)) >= (13,):
            return sa.func.trim_scale(column)
    if dialect == "sqlite":
        # any column may hold text (types belong to values); COLLATE leaves other values
        # alone. likely(x) is x without the column's affinity: through a UNION ALL subquery
        # (the release comparison) SQLite would otherwise convert the values of one arm to
        # the other's column affinity (a REAL column's makes 2**53 + 1 the real 2**53)
        return sa.type_coerce(sa.func.likely(column), sa.String()).collate("BINARY")
    if dialect == _HIVE and kind == _COLLATED:
        return column.collate("UTF8_BINARY")
    return column


def is_marker(dialect: str, column: sa.ColumnElement[Any], kind: str) -> Any:
    """Whether a grouped value is the text ``*``; None where it never can be.

    SQLite types values, not columns: any column may hold the text ``*`` (a BLOB never equals
    text). PostgreSQL: a value whose text is ``*`` (text, varchar, char, enum, domain ...).
    MySQL/MariaDB: text, whose bytes (in an ASCII-compatible character set) are ``*``.
    """
    if dialect == "sqlite":
        return column == _marker()
    if dialect == "postgresql":
        if kind in (_BINARY, _FLOAT, _NUMERIC):
            return None
        return sa.cast(column, sa.Text) == _marker()
    if kind != _TEXT:
        return None
    return column == _marker()


@dataclass(frozen=True)
class Grouping:
    """The QIs of one read: their names, kinds and grouping expressions, and those of the
    sensitive columns whose values are counted per class."""

    dialect: str
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    exprs: tuple[sa.ColumnElement[Any], ...]
    values: Mapping[str, sa.ColumnElement[Any]]

    def suppressed(self, classes: sa.Subquery) -> Any:
        """1 for the class (a row of ``classes``) whose every QI is the text ``*``, else 0;
        None when no class can be (a QI that cannot hold text)."""
        cells = []
        for name, kind in zip(self.names, self.kinds, strict=True):
            cell = is_marker(self.dialect, classes.c[name], kind)
            if cell is None:
                return None
            cells.append(cell)
        return sa.case((sa.and_(*cells), constant(1)), else_=constant(0))


def plan_grouping(
    conn: Connection, source: SqlTable, qis: Sequence[str], values: Sequence[str] = ()
) -> Grouping:
    """The grouping of ``source`` on ``qis`` (checked against its columns), and of the
    ``values`` columns counted per class; no column may carry a name of
    :data:`RESERVED_LABELS`."""
    names = validate_quasi_identifiers(qis, [c.name for c in source.columns])
    for name in (*names, *values):
        if name in RESERVED_LABELS:
            raise InvalidInputError(f"a column used here may not be named {name!r}")
    if conn.dialect.name == "postgresql":
        # floats print in full (shortest exact form) whatever the server's default
        conn.execute(sa.text("SET LOCAL extra_float_digits = 3"))
    kinds = grouping_kinds(conn, source, [*names, *values])
    exact = {n: _exact(conn, source.c[n], kinds[n]) for n in (*names, *values)}
    return Grouping(
        dialect=conn.dialect.name,
        names=names,
        kinds=tuple(_TEXT if kinds[n] == _COLLATED else kinds[n] for n in names),
        exprs=tuple(exact[n] for n in names),
        values={v: exact[v] for v in values},
    )


def class_rows(
    grouping: Grouping,
    source: SqlTable,
    *,
    value: str | None = None,
    aggregates: Sequence[sa.ColumnElement[Any]] = (),
) -> sa.Select[Any]:
    """``SELECT qis..., [value], count(*), aggregates..., suppressed FROM (GROUP BY qis[,
    value])``: one row per class (per class and value), flagged when suppressed."""
    keys = [*grouping.exprs, *([grouping.values[value]] if value is not None else [])]
    inner = (
        sa.select(*keys, sa.func.count().label(COUNT_LABEL), *aggregates)
        .select_from(source)
        .group_by(*keys)
        .subquery("reident_classes")
    )
    flag = grouping.suppressed(inner)
    return sa.select(*inner.c, (constant(0) if flag is None else flag).label(SUPPRESSED_LABEL))


def histogram_statement(grouping: Grouping, source: SqlTable) -> sa.Select[Any]:
    """``SELECT size, suppressed, count(*) FROM (SELECT count(*) AS size, <every QI is '*'>
    AS suppressed FROM source GROUP BY qis) GROUP BY size, suppressed``: one row per distinct
    class size (and one more for the suppressed class)."""
    keyed = (
        sa.select(*grouping.exprs, sa.func.count().label(COUNT_LABEL))
        .select_from(source)
        .group_by(*grouping.exprs)
        .subquery("reident_classes")
    )
    flag = grouping.suppressed(keyed)
    if flag is None:  # no class can be suppressed: the QI values need not be selected
        sizes = (
            sa.select(sa.func.count().label(COUNT_LABEL))
            .select_from(source)
            .group_by(*grouping.exprs)
            .subquery("reident_classes")
        )
        size = sizes.c[COUNT_LABEL]
        return sa.select(
            size, constant(0).label(SUPPRESSED_LABEL), sa.func.count().label(CLASSES_LABEL)
        ).group_by(size)
    per_class = sa.select(keyed.c[COUNT_LABEL], flag.label(SUPPRESSED_LABEL)).subquery(
        "reident_sizes"
    )
    size, suppressed = per_class.c[COUNT_LABEL], per_class.c[SUPPRESSED_LABEL]
    return sa.select(size, suppressed, sa.func.count().label(CLASSES_LABEL)).group_by(
        size, suppressed
    )


#: The columns of :func:`changes_statement`'s rows, after ``a``, ``d`` and the suppressed flag.
ARRIVALS_LABEL = "reident_arrivals"
DEPARTURES_LABEL = "reident_departures"
NEW_LABEL = "reident_new"
OLD_LABEL = "reident_old"
_SIDE = "reident_side"


def changes_statement(
    new: Grouping,
    new_source: SqlTable,
    old: Grouping,
    old_source: SqlTable,
    qis: Sequence[int],
) -> sa.Select[Any]:
    """The release comparison (:mod:`~reident_airflow.sources.release_changes`) of the
    candidate ``new_source`` and the previous release ``old_source``, grouped on every
    compared column by their exact grouping expressions (``new`` and ``old``, pairwise the
    same columns) and then on the ``qis`` (positions in them): rows ``(a, d, suppressed,
    classes, n, p)``, one per distinct ``(a(c), d(c), suppressed)``. The database groups the
    rows, so two rows are one exactly when ``GROUP BY`` says so: ``NULL`` is one value, and a
    collation or a type's own equality never merges values (:func:`grouped_by`)."""
    keys = [f"reident_k{j}" for j in range(len(new.exprs))]

    def side(grouping: Grouping, source: SqlTable, tag: int) -> Any:
        exprs = [sa.type_coerce(e.element, sa.types.NullType()) for e in grouping.exprs]
        return sa.select(
            *(e.label(k) for e, k in zip(exprs, keys, strict=True)),
            constant(tag).label(_SIDE),
        ).select_from(source)

    both = sa.union_all(side(new, new_source, 1), side(old, old_source, 0)).subquery("reident_both")
    tag = both.c[_SIDE]
    one, zero = constant(1), constant(0)
    per_row = (
        sa.select(
            *(both.c[k] for k in keys),
            sa.func.sum(sa.case((tag == one, one), else_=zero)).label(NEW_LABEL),
            sa.func.sum(sa.case((tag == zero, one), else_=zero)).label(OLD_LABEL),
        )
        .group_by(*(both.c[k] for k in keys))
        .subquery("reident_rows")
    )
    n, p = per_row.c[NEW_LABEL], per_row.c[OLD_LABEL]
    qi_keys = [per_row.c[keys[q]] for q in qis]
    per_class = (
        sa.select(
            *qi_keys,
            sa.func.sum(sa.case((n > p, n - p), else_=zero)).label(ARRIVALS_LABEL),
            sa.func.sum(sa.case((p > n, p - n), else_=zero)).label(DEPARTURES_LABEL),
            sa.func.sum(n).label(NEW_LABEL),
            sa.func.sum(p).label(OLD_LABEL),
        )
        .group_by(*qi_keys)
        .subquery("reident_changes")
    )
    cells = [is_marker(new.dialect, per_class.c[keys[q]], new.kinds[q]) for q in qis]
    a, d = per_class.c[ARRIVALS_LABEL], per_class.c[DEPARTURES_LABEL]
    counts = (
        sa.func.count().label(CLASSES_LABEL),
        sa.func.sum(per_class.c[NEW_LABEL]).label(NEW_LABEL),
        sa.func.sum(per_class.c[OLD_LABEL]).label(OLD_LABEL),
    )
    if any(c is None for c in cells):
        # no class can be suppressed (a QI that cannot hold text): the flag is the constant
        # 0, selected but never grouped by -- PostgreSQL and MariaDB read ``GROUP BY 0`` as
        # a column position
        return sa.select(a, d, zero.label(SUPPRESSED_LABEL), *counts).group_by(a, d)
    flag = sa.case((sa.and_(*cells), one), else_=zero)
    return sa.select(a, d, flag.label(SUPPRESSED_LABEL), *counts).group_by(a, d, flag)

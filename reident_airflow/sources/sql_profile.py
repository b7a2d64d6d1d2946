"""Column profiles counted in the database, for the identifier scan (issue 27).

:meth:`~reident_airflow.sources.sql.SqlSource.profile` reads here. Each planned column is
grouped by the database on the exact expression its QIs are grouped by
(:mod:`~reident_airflow.sources.sql_grouping`: MariaDB text by its bytes, PostgreSQL text
under ``"C"``, SQLite under ``BINARY``), so "distinct" and "held by one record" mean what a
class of one means. Each distinct value is matched once against the planned patterns
(SQLAlchemy's ``regexp_match``: PostgreSQL ``~``, MariaDB/MySQL ``REGEXP`` (PCRE2), SQLite a
Python ``re.search`` SQLAlchemy registers), and the matches are counted weighted by the
value's records.

The counts come in one statement: on PostgreSQL one ``GROUPING SETS`` pass over every column;
elsewhere (no ``GROUPING SETS``) a ``UNION ALL`` of one ``GROUP BY`` per column. Either way
one row per column reaches the client: records, nulls, distinct values, singletons, records
per pattern, distinct matched values per sampled kind, values over 89, restricted ZIP3
codes. The sampled values (the first in the order of their bytes -- ``"C"``, ``BINARY``, the
bytes of MariaDB text -- at most the plan's ``sample_size``) are read
by a second statement, only for the kinds that matched: they are kept in memory for
verification and never logged.

Patterns run on a column's text form: its own text for a ``string`` column, a cast to text
otherwise (the engine plans patterns on string columns only, unless it says otherwise). A
MariaDB text column is matched on its own text (the smallest of its group, all of whose
values have the same bytes), not on the bytes it is grouped by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from reident_airflow.engine.identifiers import CONTENT_PATTERNS, ColumnPlan, ColumnProfile
from reident_airflow.sources.column_profile import (
    OVER_89_TEXT,
    RESTRICTED_ZIP3_SORTED,
    check_plans,
    profile_from_counts,
    zip3_ranges,
)
from reident_airflow.sources.sql_grouping import (
    SqlTable,
    constant,
    grouped_by,
    grouping_kinds,
    result_types,
)

__all__ = ["column_kinds", "profile_columns"]

_MYSQL = frozenset({"mysql", "mariadb"})
_G = "reident_column"
_NULL = "reident_null"
_N = "reident_records"
_V = "reident_value"


def _reflected_kind(type_: sa.types.TypeEngine[Any]) -> str | None:
    """A reflected SQLAlchemy type as a column kind; ``None`` when not known (a query's
    columns)."""
    if isinstance(type_, sa.types.NullType):
        return None
    checks: tuple[tuple[Any, str], ...] = (
        (sa.Boolean, "boolean"),
        (sa.Integer, "integer"),
        (sa.Float, "float"),
        (sa.Numeric, "decimal"),
        (sa.String, "string"),  # Text, Enum, MySQL SET ...
        (sa.DateTime, "timestamp"),
        (sa.Date, "date"),
        (sa.LargeBinary | sa.BINARY | sa.VARBINARY, "binary"),
    )
    return next((kind for cls, kind in checks if isinstance(type_, cls)), "other")


#: The grouping kinds of :mod:`~reident_airflow.sources.sql_grouping` as column kinds, for a
#: query's columns, whose reflected types are not known.
_GROUPING_KINDS = {
    "text": "string",
    "collated": "string",
    "binary": "binary",
    "float": "float",
    "float32": "float",
    "numeric": "decimal",
}


#: A query's column kinds by the type codes a result reports: PostgreSQL type OIDs (a domain
#: as its base type) and MySQL/MariaDB protocol codes; other codes fall back to the kinds of
#: grouping (:data:`_GROUPING_KINDS`).
_PG_CODES = {
    16: "boolean",
    **dict.fromkeys((20, 21, 23), "integer"),
    1082: "date",
    **dict.fromkeys((1114, 1184), "timestamp"),
}
_MYSQL_CODES = {
    **dict.fromkeys((1, 2, 3, 8, 9), "integer"),
    **dict.fromkeys((10, 14), "date"),
    **dict.fromkeys((7, 12), "timestamp"),
}


def column_kinds(conn: Connection, source: SqlTable) -> dict[str, str]:
    """Each column's kind, from SQLAlchemy's reflected types (a table), else (a query's
    columns) from the type codes of its result (PostgreSQL, MySQL/MariaDB) and what the
    database reports of them for grouping: text, bytes, floats, decimals, or ``other`` (all
    of a SQLite query's columns: SQLite types values, not columns). A name given to two
    columns is refused."""
    from reident_airflow.engine.errors import InvalidInputError

    names = [c.name for c in source.columns]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InvalidInputError(f"column {twice!r} appears twice: rename the columns")
    kinds = {c.name: _reflected_kind(c.type) for c in source.columns}
    unknown = [n for n, k in kinds.items() if k is None]
    if unknown:
        grouping = grouping_kinds(conn, source, unknown)
        kinds.update({n: _GROUPING_KINDS.get(grouping[n], "other") for n in unknown})
        codes = {"postgresql": _PG_CODES, "mysql": _MYSQL_CODES, "mariadb": _MYSQL_CODES}
        known = codes.get(conn.dialect.name)
        if known is not None:
            typed = result_types(conn, source, unknown)
            for name, code in zip(unknown, typed, strict=True):
                if kinds[name] == "other" and int(code) in known:
                    kinds[name] = known[int(code)]
    return {n: str(kinds[n]) for n in names}


@dataclass(frozen=True)
class _Slots:
    """The layout of the per-column rows: each plan's pattern flags (and sampled ones),
    over 89 and ZIP3 take numbered flag columns ``f0, f1, ...``."""

    flags: tuple[tuple[tuple[str, int], ...], ...]  # per plan: (name, slot)
    width: int

    @classmethod
    def of(cls, plans: Sequence[ColumnPlan]) -> _Slots:
        per: list[tuple[tuple[str, int], ...]] = []
        width = 0
        for plan in plans:
            names = [*plan.patterns, *(["over_89"] if plan.over_89 else [])]
            names += ["zip3"] if plan.zip3 else []
            per.append(tuple((name, i) for i, name in enumerate(names)))
            width = max(width, len(names))
        return cls(tuple(per), width)


def _text(conn: Connection, key: Any, column: Any, plan: ColumnPlan, grouping: str) -> Any:
    """A grouped value's text form, for patterns and samples."""
    dialect = conn.dialect.name
    if dialect in _MYSQL:
        if grouping == "text":  # grouped by its bytes: its own text, alike in the group
            return sa.func.min(column)
        return sa.cast(key, sa.CHAR())
    if dialect == "postgresql" and grouping in ("text", "collated"):
        return key
    return sa.cast(key, sa.Text())


def _flag(condition: Any) -> Any:
    return sa.case((condition, constant(1)), else_=constant(0))


def _condition(conn: Connection, name: str, key: Any, text: Any, plan: ColumnPlan) -> Any:
    if name == "over_89":
        if plan.kind in ("integer", "decimal"):
            return key > constant(89)
        if plan.kind == "float":  # NaN and infinities are no age
            return sa.and_(key > constant(89), key < constant(1e308))
        return text.regexp_match(constant(OVER_89_TEXT))
    if name == "zip3":
        if plan.kind == "integer":
            return sa.or_(*(key.between(constant(lo), constant(hi)) for lo, hi in zip3_ranges()))
        codes = [constant(z) for z in RESTRICTED_ZIP3_SORTED]
        return sa.func.substr(text, constant(1), constant(3)).in_(codes)
    return text.regexp_match(constant(CONTENT_PATTERNS[name]))


def _flags(
    conn: Connection, j: int, plan: ColumnPlan, grouping: str, key: Any, text: Any, slots: _Slots
) -> list[Any]:
    """The flag columns of a grouped value of plan ``j`` (0 in the slots it does not use)."""
    flags: list[Any] = [constant(0)] * slots.width
    for name, slot in slots.flags[j]:
        flags[slot] = _flag(_condition(conn, name, key, text, plan))
    return flags


def _branch(
    conn: Connection,
    source: SqlTable,
    j: int,
    plan: ColumnPlan,
    grouping: str,
    slots: _Slots,
) -> sa.Select[Any]:
    """``GROUP BY`` one column: one row per distinct value (NULL included) with its records
    and its flags."""
    column = source.c[plan.column]
    key = grouped_by(conn, column, grouping)
    text = _text(conn, key, column, plan, grouping)
    flags = _flags(conn, j, plan, grouping, key, text, slots)
    return (
        sa.select(
            constant(j).label(_G),
            # untyped: a dialect type without operator classes (MariaDB's BIT) warns on IS
            _flag(sa.type_coerce(key, sa.types.NullType()).is_(None)).label(_NULL),
            sa.func.count().label(_N),
            *(f.label(f"f{i}") for i, f in enumerate(flags)),
        )
        .select_from(source)
        .group_by(key)
    )


def _grouping_sets(
    conn: Connection,
    source: SqlTable,
    plans: Sequence[ColumnPlan],
    kinds: Mapping[str, str],
    slots: _Slots,
) -> sa.Subquery:
    """PostgreSQL: the rows of :func:`_branch` for every column from one ``GROUPING SETS``
    pass, each row's column told by ``GROUPING()`` and its flags chosen by ``CASE``."""
    keys = [grouped_by(conn, source.c[p.column], kinds[p.column]) for p in plans]
    inner = (
        sa.select(
            *(k.label(f"k{j}") for j, k in enumerate(keys)),
            *(sa.func.grouping(k).label(f"g{j}") for j, k in enumerate(keys)),
            sa.func.count().label(_N),
        )
        .select_from(source)
        .group_by(sa.func.grouping_sets(*(sa.tuple_(k) for k in keys)))
        .subquery("reident_sets")
    )
    own = [inner.c[f"g{j}"] == constant(0) for j in range(len(plans))]
    per: list[tuple[Any, list[Any]]] = []
    for j, plan in enumerate(plans):
        key = inner.c[f"k{j}"]
        text = _text(conn, key, source.c[plan.column], plan, kinds[plan.column])
        per.append(
            (_flag(key.is_(None)), _flags(conn, j, plan, kinds[plan.column], key, text, slots))
        )

    def chosen(cells: Sequence[Any]) -> Any:
        return sa.case(*((own[j], cell) for j, cell in enumerate(cells)), else_=constant(0))

    return sa.select(
        chosen([constant(j) for j in range(len(plans))]).label(_G),
        chosen([null for null, _ in per]).label(_NULL),
        inner.c[_N],
        *(chosen([flags[i] for _, flags in per]).label(f"f{i}") for i in range(slots.width)),
    ).subquery("reident_v")


def _counts_statement(
    conn: Connection, source: SqlTable, plans: Sequence[ColumnPlan], kinds: Mapping[str, str]
) -> sa.Select[Any]:
    """One row per column: ``(column number, records, nulls, distinct, singletons, then per
    flag slot the records and the distinct values flagged)``."""
    slots = _Slots.of(plans)
    if conn.dialect.name == "postgresql":
        rows = _grouping_sets(conn, source, plans, kinds, slots)
    else:  # no GROUPING SETS: one GROUP BY per column
        branches = [
            _branch(conn, source, j, plan, kinds[plan.column], slots)
            for j, plan in enumerate(plans)
        ]
        union = branches[0] if len(branches) == 1 else sa.union_all(*branches)
        rows = union.subquery("reident_v")
    n, null = rows.c[_N], rows.c[_NULL]
    one = constant(1)
    sums = []
    for i in range(slots.width):
        f = rows.c[f"f{i}"]
        sums += [sa.func.sum(n * f), sa.func.sum(f)]
    return sa.select(
        rows.c[_G],
        sa.func.sum(n),
        sa.func.sum(n * null),
        sa.func.sum(one - null),
        sa.func.sum(sa.case((sa.and_(null == constant(0), n == one), one), else_=constant(0))),
        *sums,
    ).group_by(rows.c[_G])


def _samples_statement(
    conn: Connection,
    source: SqlTable,
    plans: Sequence[ColumnPlan],
    kinds: Mapping[str, str],
    wanted: Sequence[tuple[int, str]],
) -> sa.Select[Any]:
    """The sampled values: per ``(plan, kind)`` its distinct matched values, the first by
    their bytes, at most the plan's sample size (a ``UNION ALL`` of limited ``GROUP BY``s)."""
    parts = []
    for number, (j, name) in enumerate(wanted):
        plan = plans[j]
        grouping = kinds[plan.column]
        column = source.c[plan.column]
        key = grouped_by(conn, column, grouping)
        text = _text(conn, key, column, plan, grouping)
        condition = _condition(conn, name, key, text, plan)
        count = sa.func.count()
        if conn.dialect.name in _MYSQL and grouping == "text":  # MIN(column): an aggregate
            inner = sa.select(text.label(_V), count.label(_N)).select_from(source).group_by(key)
            inner = inner.having(condition)
        else:
            inner = (
                sa.select(text.label(_V), count.label(_N))
                .select_from(source)
                .where(condition)
                .group_by(key)
            )
        limited = inner.order_by(key).limit(plan.sample_size).subquery(f"reident_s{number}")
        parts.append(
            sa.select(
                constant(number).label(_G),
                sa.type_coerce(limited.c[_V], sa.types.NullType()).label(_V),
                limited.c[_N],
            )
        )
    return parts[0] if len(parts) == 1 else sa.union_all(*parts)  # type: ignore[return-value]


def profile_columns(
    conn: Connection, source: SqlTable, plans: Sequence[ColumnPlan], *, label: str
) -> tuple[ColumnProfile, ...]:
    """Count ``plans`` in the database (the module's docstring) on an open read-only
    connection."""
    from reident_airflow.engine.encoding import validate_quasi_identifiers

    plans = check_plans(plans, exact_only=None)
    if not plans:
        return ()
    names = validate_quasi_identifiers([p.column for p in plans], [c.name for c in source.columns])
    plans = tuple(
        ColumnPlan(
            name,
            p.kind,
            p.patterns,
            p.sample,
            p.sample_size,
            p.over_89,
            p.zip3,
        )
        for name, p in zip(names, plans, strict=True)
    )
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SET LOCAL extra_float_digits = 3"))
    kinds = grouping_kinds(conn, source, list(names))
    slots = _Slots.of(plans)
    got = {int(r[0]): r[1:] for r in conn.execute(_counts_statement(conn, source, plans, kinds))}
    counted: list[dict[str, Any]] = []
    wanted: list[tuple[int, str]] = []
    for j, plan in enumerate(plans):
        row = got.get(j)
        cells = [0] * (4 + 2 * slots.width) if row is None else [int(c or 0) for c in row]
        by_name = {name: (cells[4 + 2 * s], cells[5 + 2 * s]) for name, s in slots.flags[j]}
        counted.append({"cells": cells, "by_name": by_name})
        wanted += [(j, k) for k in plan.sample if by_name[k][1] > 0 and plan.sample_size > 0]
    sampled: dict[tuple[int, str], list[tuple[str, int]]] = {}
    if wanted:
        for number, value, records in conn.execute(
            _samples_statement(conn, source, plans, kinds, wanted)
        ):
            sampled.setdefault(wanted[int(number)], []).append((_as_text(value), int(records)))
    out = []
    for j, plan in enumerate(plans):
        cells, by_name = counted[j]["cells"], counted[j]["by_name"]
        samples = {k: sorted(sampled.get((j, k), []), key=lambda p: p[0]) for k in plan.sample}
        out.append(
            profile_from_counts(
                plan,
                records=cells[0],
                nulls=cells[1],
                distinct=cells[2],
                singletons=cells[3],
                matches={k: by_name[k][0] for k in plan.patterns},
                samples=samples,
                matched_distinct={k: by_name[k][1] for k in plan.sample},
                over_89=by_name["over_89"][0] if plan.over_89 else None,
                zip3=by_name["zip3"][0] if plan.zip3 else None,
            )
        )
    return tuple(out)


def _as_text(value: Any) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "surrogateescape")
    return str(value)

"""The release ledger in a database (:mod:`~reident_airflow.sources.release_ledger`): the
digests computed by the database, the ledger table written beside a published table, and
the release comparison of a candidate against it.

Each value is digested from its grouping expression (:func:`~reident_airflow.sources.
sql_grouping.plan_grouping`), so two values digest alike exactly when the database groups them
as one:

- PostgreSQL: the text form of the grouping expression (``x + 0`` for floats, printed in full;
  ``trim_scale`` for numerics; text under ``"C"``), with ``TimeZone``, ``DateStyle`` and
  ``IntervalStyle`` set for the transaction, so that a value prints one way whatever the
  session; ``bytea`` in hexadecimal; ``sha256``.
- MariaDB / MySQL: text, binary strings and ``BIT`` by their bytes (in hexadecimal: never
  converted to text, which a strict server refuses for bytes that are not UTF-8 and a lax
  one turns into ``?``); floats as ``x + 0`` (a 4-byte
  ``FLOAT`` as the ``DOUBLE`` it converts to); everything else by its text form with
  trailing fractional zeros removed (``DECIMAL(10,2)`` ``1.50`` groups with ``1.5``), with
  ``time_zone`` set to UTC for the statement; ``SHA2(..., 256)``.
- SQLite: the values as SQLite holds them, digested by a function of this process
  (:func:`~reident_airflow.sources.release_ledger.sqlite_digest`); SQLite has no hash.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from reident_airflow.engine.differencing import ReleaseChanges
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.release_ledger import (
    COLUMNS,
    LedgerAbout,
    check_about,
    header_digest,
    sqlite_digest,
)
from reident_airflow.sources.sql_grouping import (
    Grouping,
    SqlTable,
    compared_kinds,
    constant,
    is_marker,
    plan_grouping,
)

__all__ = ["ledger_changes", "ledger_columns", "write_ledger_rows"]

_MYSQL = frozenset({"mysql", "mariadb"})
_SQLITE_DIGEST = "reident_ledger_digest"


def ledger_columns() -> list[sa.Column[Any]]:
    """The ledger table's columns (:data:`~reident_airflow.sources.release_ledger.COLUMNS`)."""
    kind, row, cls, star, about = COLUMNS
    return [
        sa.Column(kind, sa.SmallInteger(), nullable=False),
        sa.Column(row, sa.String(64)),
        sa.Column(cls, sa.String(64)),
        sa.Column(star, sa.SmallInteger()),
        sa.Column(about, sa.Text()),
    ]


@contextlib.contextmanager
def _digesting(conn: Connection) -> Iterator[None]:
    """Settings under which every value prints one way (module docstring); SQLite: the
    digest function registered on the connection."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        for setting in (
            "SET LOCAL TimeZone = 'UTC'",
            "SET LOCAL DateStyle = 'ISO, YMD'",
            "SET LOCAL IntervalStyle = 'postgres'",
            "SET LOCAL extra_float_digits = 3",
        ):
            conn.execute(sa.text(setting))
        yield
    elif dialect in _MYSQL:
        zone = conn.execute(sa.text("SELECT @@session.time_zone")).scalar_one()
        conn.execute(sa.text("SET time_zone = '+00:00'"))
        try:
            yield
        finally:
            conn.execute(sa.text("SET time_zone = :zone"), {"zone": zone})
    elif dialect == "sqlite":
        raw = conn.connection.driver_connection
        if raw is None:  # pragma: no cover - an open connection has one
            raise InvalidInputError("the SQLite connection is closed")
        raw.create_function(_SQLITE_DIGEST, -1, sqlite_digest, deterministic=True)
        yield
    else:
        raise InvalidInputError(
            f"a release ledger is kept on PostgreSQL, MariaDB, MySQL and SQLite; not on {dialect}"
        )


#: MySQL/MariaDB kinds (:func:`~reident_airflow.sources.sql_grouping.compared_kinds`) whose
#: values are bytes: digested in hexadecimal, never converted to text (a strict server
#: refuses bytes that are not UTF-8, a lax one replaces them with ``?``).
_MYSQL_BYTES = frozenset({"text", "binary", "bit", "geometry"})


def _text(dialect: str, expr: Any, kind: str, compared: str) -> Any:
    """The canonical text of one (non-null) grouped value (``kind`` its grouping kind,
    ``compared`` its kind of :func:`~reident_airflow.sources.sql_grouping.compared_kinds`)."""
    if dialect == "postgresql":
        if kind == "binary":
            return sa.func.encode(expr, constant("hex"))
        return sa.cast(expr, sa.Text())
    if kind in ("text", "binary") or compared in _MYSQL_BYTES:
        return sa.func.hex(expr)
    if kind in ("float", "float32"):
        return sa.cast(expr + constant(0.0), sa.CHAR())
    # a decimal, a time or a timestamp with fractional digits: trailing zeros removed, as
    # DECIMAL(10,2) 1.50 and DECIMAL(10,3) 1.500 are one value (never an exponent: 1.5e20)
    text = sa.cast(expr, sa.CHAR())
    trimmed = sa.func.regexp_replace(text, constant("[.]?0+$"), constant(""))
    plain = text.op("REGEXP")(constant("^[-0-9: ]+[.][0-9]+$"))
    return sa.case((plain, trimmed), else_=text)


def _encoded(dialect: str, expr: Any, kind: str, compared: str) -> Any:
    """``N`` for a missing value, else ``V<length>:<text>``."""
    text = _text(dialect, expr, kind, compared)
    length = sa.cast(sa.func.length(text), sa.CHAR() if dialect in _MYSQL else sa.Text())
    value = sa.func.concat(constant("V"), length, constant(":"), text)
    return sa.case((expr.is_(None), constant("N")), else_=value)


def _digest(
    dialect: str, grouping: Grouping, kinds: Sequence[str], positions: Sequence[int]
) -> Any:
    exprs = [sa.type_coerce(grouping.exprs[i], sa.types.NullType()) for i in positions]
    if dialect == "sqlite":
        return getattr(sa.func, _SQLITE_DIGEST)(*exprs)
    parts = [
        _encoded(dialect, e, grouping.kinds[i], kinds[i])
        for e, i in zip(exprs, positions, strict=True)
    ]
    if dialect == "postgresql":
        joined = sa.func.concat(*parts)
        return sa.func.encode(sa.func.sha256(sa.func.convert_to(joined, "UTF8")), "hex")
    return sa.func.sha2(sa.func.concat(*parts), 256)


def _digests(
    conn: Connection, source: SqlTable, names: Sequence[str], qis: Sequence[int]
) -> tuple[sa.Select[Any], list[str]]:
    """``(row_digest, class_digest, star)`` per row of ``source``: the row over ``names``
    (in that order), the class over the positions ``qis`` among them; and each column's
    kind (:func:`~reident_airflow.sources.sql_grouping.compared_kinds`)."""
    grouping = plan_grouping(conn, source, names)
    kinds = compared_kinds(conn, source, names)
    dialect = conn.dialect.name
    cells = [
        is_marker(
            dialect, sa.type_coerce(grouping.exprs[q], sa.types.NullType()), grouping.kinds[q]
        )
        for q in qis
    ]
    one, zero = constant(1), constant(0)
    star: Any = (
        zero if any(c is None for c in cells) else sa.case((sa.and_(*cells), one), else_=zero)
    )
    select = sa.select(
        _digest(dialect, grouping, kinds, range(len(names))).label(COLUMNS[1]),
        _digest(dialect, grouping, kinds, qis).label(COLUMNS[2]),
        star.label(COLUMNS[3]),
    ).select_from(source)
    return select, kinds


def write_ledger_rows(
    conn: Connection, released: SqlTable, ledger: sa.Table, qis: Sequence[str]
) -> None:
    """Fill the (empty) ledger table ``ledger`` from the released table ``released``: the
    header, then one row of digests per released row, computed by the database
    (``INSERT ... SELECT``)."""
    names = [c.name for c in released.columns]
    missing = [q for q in qis if q not in names]
    if missing or not qis:
        raise InvalidInputError(
            "the release ledger's quasi-identifiers are not columns of the release: "
            + ", ".join(repr(q) for q in missing)
        )
    positions = [names.index(q) for q in qis]
    with _digesting(conn):
        select, kinds = _digests(conn, released, names, positions)
        header = LedgerAbout(tuple(names), tuple(kinds), tuple(qis)).to_json()
        kind, row, cls, star, about_col = COLUMNS
        conn.execute(
            sa.insert(ledger).values({kind: 0, row: header_digest(header), about_col: header})
        )
        rows = select.subquery("reident_digests")
        conn.execute(
            sa.insert(ledger).from_select(
                [kind, row, cls, star],
                sa.select(constant(1), rows.c[row], rows.c[cls], rows.c[star]),
            )
        )


def ledger_changes(
    conn: Connection,
    candidate: SqlTable,
    ledger: SqlTable,
    qis: Sequence[str],
    columns: Sequence[str] | None,
    labels: tuple[str, str],
) -> ReleaseChanges:
    """The release comparison of ``candidate`` against the ledger table ``ledger``: the
    candidate digested as the ledger was, then counted as
    :func:`~reident_airflow.sources.sql_grouping.changes_statement` counts two releases."""
    from reident_airflow.sources.release_changes import changes_from_counts, compared_columns

    kind, row, cls, star, about_col = COLUMNS
    header = conn.execute(
        sa.select(ledger.c[about_col], ledger.c[row]).where(ledger.c[kind] == 0)
    ).all()
    if len(header) != 1:
        raise InvalidInputError(f"{labels[1]}: a release ledger has one header row")
    about = LedgerAbout.from_header(header[0][0], header[0][1], labels[1])
    new = sa.select(*candidate.c).subquery("reident_candidate")
    compared = compared_columns(
        [c.name for c in new.columns], about.columns, qis, columns, labels=labels
    )
    order = [compared.candidate[compared.previous.index(j)] for j in range(len(about.columns))]
    names = [new.columns[i].name for i in order]
    qi_pos = [order.index(compared.candidate[q]) for q in compared.qis]
    with _digesting(conn):
        select, found = _digests(conn, new, names, qi_pos)
        kinds = dict(zip(order, found, strict=True))
        check_about(about, compared, [kinds.get(i, "") for i in range(len(new.columns))], labels[1])
        digests = select.subquery("reident_new")
        side = "reident_side"
        both = sa.union_all(
            sa.select(digests.c[row], digests.c[cls], digests.c[star], constant(1).label(side)),
            sa.select(ledger.c[row], ledger.c[cls], ledger.c[star], constant(0).label(side)).where(
                ledger.c[kind] == 1
            ),
        ).subquery("reident_both")
        tag = both.c[side]
        one, zero = constant(1), constant(0)
        per_row = (
            sa.select(
                both.c[cls],
                both.c[star],
                sa.func.sum(sa.case((tag == one, one), else_=zero)).label("n"),
                sa.func.sum(sa.case((tag == zero, one), else_=zero)).label("p"),
            )
            .group_by(both.c[row], both.c[cls], both.c[star])
            .subquery("reident_rows")
        )
        n, p = per_row.c.n, per_row.c.p
        per_class = (
            sa.select(
                per_row.c[star],
                sa.func.sum(sa.case((n > p, n - p), else_=zero)).label("a"),
                sa.func.sum(sa.case((p > n, p - n), else_=zero)).label("d"),
                sa.func.sum(n).label("n"),
                sa.func.sum(p).label("p"),
            )
            .group_by(per_row.c[cls], per_row.c[star])
            .subquery("reident_changes")
        )
        a, d, flag = per_class.c.a, per_class.c.d, per_class.c[star]
        statement = sa.select(
            a, d, flag, sa.func.count(), sa.func.sum(per_class.c.n), sa.func.sum(per_class.c.p)
        ).group_by(a, d, flag)
        rows = conn.execute(statement).all()
    return changes_from_counts(compared.qi_names, rows, compared)

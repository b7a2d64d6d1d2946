"""Class tables computed in the database: a ``GROUP BY`` over the QIs, rows never travel.

:class:`SqlSource` is the :class:`~reident_airflow.sources.Source` of databases: a table or a
query, counted by the database (the ``*_from_sql`` functions are its readings, one call each),
and fingerprinted (:func:`fingerprint_sql`: what :mod:`~reident_airflow.sources.fingerprint`
says a database's fingerprint proves). At most one row per equivalence class (the QI values
and a count) is fetched; a histogram fetches one row per distinct class size. The work is
shared out:

- :mod:`~reident_airflow.sources.connect`: the engine, the connection, the table or query;
- :mod:`~reident_airflow.sources.sql_grouping`: the statements, grouping values exactly as
  docs/reading.md says;
- :mod:`~reident_airflow.sources.sql_fetch`: fetching the class rows as the database sent them;
- :mod:`~reident_airflow.sources.db_errors`: what a database error may say.

A class whose every QI is the text ``*`` (suppressed records) is flagged by the database in
the same statement; its records are excluded and counted in ``excluded_records``. A database
error never reaches the caller with its text (which may quote values): an error caused by the
input (an unknown table or column, a bad query) is an :class:`InvalidInputError` naming its
kind and code; any other keeps its SQLAlchemy class but its message only names the driver's
exception class and code. A failure to connect shows the driver's message: nothing has been
read then.

:func:`copy_table_atomic` (the example DAGs' publish step) lives in
:mod:`~reident_airflow.sources.publish` and is importable from here.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Self, Unpack

import numpy as np
import pandas as pd
import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from reident_airflow.engine.aggregates import (
    ClassAggregates,
    aggregate_grouped,
    check_extra_columns,
    check_weight_counts,
)
from reident_airflow.engine.classes import (
    ClassSizes,
    ClassTable,
    class_table_from_grouped,
)
from reident_airflow.engine.encoding import validate_quasi_identifiers
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources import ClassCounting, Source
from reident_airflow.sources.cancel import statements_of
from reident_airflow.sources.connect import (
    SqlWhere,
    connect,
    make_engine,
    open_source,
    query_source,
    read_only,
    reading,
    reflect_table,
    source_label,
)
from reident_airflow.sources.db_errors import DriverErrorWithheld, database_errors
from reident_airflow.sources.fingerprint import InputFingerprint, now_utc
from reident_airflow.sources.publish import copy_table_atomic
from reident_airflow.sources.sql_fetch import (
    COPY_BLOCK_BYTES,
    COUNTS,
    ClassRows,
    as_frame,
    fetch_grouped,
    marked,
    row_count,
    split_suppressed,
)
from reident_airflow.sources.sql_grouping import (
    COUNT_LABEL,
    NONPOSITIVE_LABEL,
    PRESENT_LABEL,
    RESERVED_LABELS,
    SUM_LABEL,
    SUPPRESSED_LABEL,
    Grouping,
    SqlTable,
    changes_statement,
    class_rows,
    compared_kinds,
    constant,
    histogram_statement,
    plan_grouping,
)
from reident_airflow.sources.sql_profile import column_kinds, profile_columns

if TYPE_CHECKING:
    from reident_airflow.engine.differencing import ReleaseChanges
    from reident_airflow.engine.identifiers import ColumnPlan, ColumnProfile

__all__ = [
    "COPY_BLOCK_BYTES",
    "COUNT_LABEL",
    "DriverErrorWithheld",
    "SqlSource",
    "SqlWhere",
    "aggregates_from_sql",
    "class_table_from_sql",
    "copy_table_atomic",
    "fingerprint_sql",
    "grouped_counts",
    "grouped_histogram",
    "grouped_sums",
    "grouped_value_counts",
    "histogram_from_sql",
    "make_engine",
    "query_source",
    "reflect_table",
    "release_changes_sql",
    "safe_location",
]


#: The statements :meth:`SqlSource.statements` lists: queries (and PostgreSQL's ``COPY`` of
#: one), not session settings.
_QUERY = re.compile(r"\s*\(*\s*(SELECT|WITH|COPY)\b", re.IGNORECASE)
#: Catalog lookups (reflection, has_table): not the gate's queries.
_CATALOG = re.compile(
    r"\b(pg_catalog|information_schema|sqlite_master|sqlite_schema|sqlite_temp_master)\b",
    re.IGNORECASE,
)


def _with_excluded(table: ClassTable, excluded: int) -> ClassTable:
    if not excluded:
        return table
    return replace(table, excluded_records=table.excluded_records + excluded)


def _check_records(what: str, classes: int, excluded: int) -> None:
    """An empty source, or one whose every record is suppressed, has nothing to assess."""
    if classes:
        return
    if excluded:
        raise EmptyDatasetError(
            f"every record ({excluded}) is fully suppressed ('*' in every quasi-identifier): "
            "there is nothing to assess"
        )
    raise EmptyDatasetError(f"{what} has no records: there is nothing to assess")


# ------------------------------------------------------------------------------ reads
def _counts(conn: Connection, grouping: Grouping, source: SqlTable) -> ClassRows:
    return fetch_grouped(
        conn,
        class_rows(grouping, source),
        [*grouping.names, COUNT_LABEL, SUPPRESSED_LABEL],
        list(grouping.names),
        COUNTS,
    )


def _sums(conn: Connection, grouping: Grouping, source: SqlTable, column: str) -> pd.DataFrame:
    """Class sizes and weight sums, the weights checked in the same query (aggregates only):
    a missing, zero or negative weight, or a text column, is an input error naming the
    column and the number of records."""
    if column not in [c.name for c in source.columns]:
        raise InvalidInputError(f"unknown weight column {column!r}")
    if column in RESERVED_LABELS:
        raise InvalidInputError(f"a column used here may not be named {column!r}")
    weight = source.c[column]
    if isinstance(weight.type, sa.String):
        raise InvalidInputError(f"weight column {column!r} is not numeric (a text column)")
    aggregates = [
        sa.func.sum(weight).label(SUM_LABEL),
        sa.func.count(weight).label(PRESENT_LABEL),
        sa.func.sum(sa.case((weight <= constant(0), constant(1)), else_=constant(0))).label(
            NONPOSITIVE_LABEL
        ),
    ]
    keys = [
        *grouping.names,
        COUNT_LABEL,
        SUM_LABEL,
        PRESENT_LABEL,
        NONPOSITIVE_LABEL,
        SUPPRESSED_LABEL,
    ]
    numbers = {
        **COUNTS,
        SUM_LABEL: pa.float64(),
        PRESENT_LABEL: pa.int64(),
        NONPOSITIVE_LABEL: pa.int64(),
    }
    stmt = class_rows(grouping, source, aggregates=aggregates)
    frame = as_frame(fetch_grouped(conn, stmt, keys, list(grouping.names), numbers))
    if not frame.empty:
        total = int(pd.to_numeric(frame[COUNT_LABEL]).sum())
        check_weight_counts(
            column,
            missing=total - int(pd.to_numeric(frame[PRESENT_LABEL]).sum()),
            nonpositive=int(pd.to_numeric(frame[NONPOSITIVE_LABEL]).sum()),
        )
        frame[SUM_LABEL] = pd.to_numeric(frame[SUM_LABEL]).astype("float64")
    return frame.drop(columns=[PRESENT_LABEL, NONPOSITIVE_LABEL])


def _value_counts(conn: Connection, grouping: Grouping, source: SqlTable, column: str) -> ClassRows:
    stmt = class_rows(grouping, source, value=column)
    keys = [*grouping.names, column, COUNT_LABEL, SUPPRESSED_LABEL]
    return fetch_grouped(conn, stmt, keys, [*grouping.names, column], COUNTS)


def _sensitive_grouping(
    conn: Connection, source: SqlTable, qis: Sequence[str], column: str
) -> Grouping:
    names = validate_quasi_identifiers(qis, [c.name for c in source.columns])
    if column not in [c.name for c in source.columns]:
        raise InvalidInputError(f"unknown sensitive column {column!r}")
    if column in names:
        raise InvalidInputError(f"sensitive column {column!r} is also a quasi-identifier")
    return plan_grouping(conn, source, names, values=[column])


def grouped_counts(conn: Connection, source: SqlTable, qis: Sequence[str]) -> pd.DataFrame:
    """``SELECT qis..., count(*) FROM source GROUP BY qis``: one row per class.

    The class whose every QI is the text ``*`` holds ``*`` (text) in every QI, whatever the
    QI columns' types, so that :func:`class_table_from_grouped` excludes it.
    """
    with database_errors("the source"):
        grouping = plan_grouping(conn, source, qis)
        rows = _counts(conn, grouping, source)
    return marked(rows, grouping.names)


def grouped_sums(
    conn: Connection, source: SqlTable, qis: Sequence[str], column: str
) -> pd.DataFrame:
    """``SELECT qis..., count(*), sum(column) ... GROUP BY qis``: class sizes and weight sums.

    The weights are checked in the same query (aggregates only): a missing, zero or negative
    weight, or a text column, is an input error naming the column and the number of records.
    The suppressed class is marked as in :func:`grouped_counts`.
    """
    with database_errors("the source"):
        grouping = plan_grouping(conn, source, qis)
        frame = _sums(conn, grouping, source, column)
    return marked(frame, grouping.names)


def grouped_value_counts(
    conn: Connection, source: SqlTable, qis: Sequence[str], column: str
) -> pd.DataFrame:
    """``SELECT qis..., column, count(*) ... GROUP BY qis, column``: values per class.

    Only their counts are used afterwards (l-diversity); the values are grouped exactly as QI
    values are (by their bytes on MySQL/MariaDB). The suppressed class is marked as in
    :func:`grouped_counts`.
    """
    with database_errors("the source"):
        grouping = _sensitive_grouping(conn, source, qis, column)
        rows = _value_counts(conn, grouping, source, column)
    return marked(rows, grouping.names)


# ------------------------------------------------------------------------------ the source
class SqlSource(ClassCounting):
    """A database table (``table=``, in ``schema=``) or a ``SELECT`` (``sql=``), grouped by
    the database: the :class:`~reident_airflow.sources.Source` of databases.

    ``url`` is a SQLAlchemy URL or an engine. The engine of a URL is made at the first
    reading and disposed of by :meth:`close` (also on leaving a ``with`` block); an engine
    given is the caller's and stays open. Each reading runs on its own read-only connection
    (:func:`~reident_airflow.sources.connect.reading`), and its errors quote nothing of the
    data.

    ``where`` (with ``table`` only) narrows the table to some rows, one partition, without a
    whole ``SELECT``: the table is then read as the query ``SELECT * FROM <schema>.<table>
    WHERE (<where>)`` (:meth:`located`), as ``sql`` is, in a read-only transaction.
    """

    def __init__(
        self,
        url: str | Engine,
        *,
        table: str | None = None,
        schema: str | None = None,
        sql: str | None = None,
        where: str | None = None,
    ) -> None:
        self.url = url
        self.table = table
        self.schema = schema
        self.sql = sql
        self.where = where
        self._engine: Engine | None = None
        self._ran: dict[str, None] = {}  # the statements run on the engine, once each
        self._listening: Engine | None = None
        self._note = self._ran_statement  # one object, to remove the listener by
        if isinstance(url, Engine):
            statements_of(url)  # its connections seen from the first: cancel() stops them

    @property
    def label(self) -> str:
        """How messages name the source: ``table 'x'`` or ``the query`` (also a table
        narrowed by ``where``, read as a query)."""
        if self.where:
            return "the query"
        return source_label(self.table, self.sql)

    def located(self) -> SqlWhere:
        """``table``, ``sql`` and ``schema`` as the readings take them: with ``where``, the
        SQL ``SELECT * FROM <schema>.<table> WHERE (<where>)``, the table quoted by the
        engine's dialect and the condition checked to be one condition that only filters the
        table's rows (:func:`~reident_airflow.sources.sql_text.filter_condition`)."""
        if not self.where:
            return {"table": self.table, "sql": self.sql, "schema": self.schema}
        if not self.table or self.sql is not None:
            raise InvalidInputError("where narrows a table: give table (not sql) with it")
        from reident_airflow.sources.sql_text import filter_condition

        dialect = self._bound().dialect
        condition = filter_condition(str(self.where), dialect.name)
        source = sa.table(str(self.table), schema=self.schema or None)
        query = sa.select(sa.text("*")).select_from(source).where(sa.text(condition))
        return {"table": None, "sql": str(query.compile(dialect=dialect)), "schema": None}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Dispose of the engine made here for a URL (its pooled connections); stop noting
        the statements run on it (:meth:`statements` still lists those noted)."""
        if self._listening is not None:
            sa.event.remove(self._listening, "before_cursor_execute", self._note)
            self._listening = None
        if self._engine is not None and self._engine is not self.url:
            self._engine.dispose()
        self._engine = None

    def _bound(self) -> Engine:
        if self._engine is None:
            self._engine = make_engine(self.url)
            statements_of(self._engine)
        if self._listening is None:
            sa.event.listen(self._engine, "before_cursor_execute", self._note)
            self._listening = self._engine
        return self._engine

    def _ran_statement(self, conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        self._ran.setdefault(statement, None)

    def statements(self) -> tuple[str, ...]:
        """The queries this source ran on its database (reading the table, the counts, the
        previous release, the fingerprint), once each in the order first run, as lineage may
        show them: every literal replaced by ``?`` (bound parameters stay placeholders) and
        comments dropped (:func:`~reident_airflow.sources.sql_text.elide_literals`), so no
        value of the data or of a rendered template is in them. Session settings (``SET``,
        ``SHOW``) and the catalog lookups of reflection are left out; so is a statement that
        cannot be read to its end."""
        from reident_airflow.sources.sql_text import elide_literals

        dialect = self._listening.dialect.name if self._listening is not None else ""
        out: list[str] = []
        for statement in self._ran:
            if not _QUERY.match(statement) or _CATALOG.search(statement):
                continue
            elided = elide_literals(statement, dialect)
            if elided is None:
                continue
            text = " ".join(elided.split())
            if text not in out:
                out.append(text)
        return tuple(out)

    def cancel(self) -> None:
        """Stop the statement each connection of the source's engine runs now, from any
        thread (:meth:`~reident_airflow.sources.cancel.EngineStatements.cancel`: PostgreSQL's
        cancel request, MariaDB's ``KILL QUERY`` from a second connection, SQLite's
        interrupt); the reading raises
        :class:`~reident_airflow.engine.errors.OperationCancelledError`, as does every
        reading through that engine begun later (a new source reads again; an engine
        given is refused from then on)."""
        engine = self._engine if self._engine is not None else self.url
        if isinstance(engine, Engine):
            statements_of(engine).cancel()

    def _reading(self) -> AbstractContextManager[tuple[Connection, SqlTable, str]]:
        where = self.located()
        source_label(where.get("table"), where.get("sql"))  # refused before connecting
        return reading(self._bound(), **where)

    # ------------------------------------------------------------------------ counting
    def class_table(self, qis: Sequence[str]) -> ClassTable:
        """The class table of the table (or of the query), computed by the database."""
        with self._reading() as (conn, source, what):
            grouping = plan_grouping(conn, source, qis)
            rows = _counts(conn, grouping, source)
        kept, excluded = split_suppressed(rows)
        _check_records(what, row_count(kept), excluded)
        table = class_table_from_grouped(kept, grouping.names, COUNT_LABEL)
        return _with_excluded(table, excluded)

    def histogram(self, qis: Sequence[str]) -> ClassSizes:
        """The class-size histogram, counted by the database in one statement
        (:func:`grouped_histogram`)."""
        with self._reading() as (conn, source, what):
            return grouped_histogram(conn, source, qis, what=what)

    def aggregates(
        self, qis: Sequence[str], *, weight: str | None = None, sensitive: Sequence[str] = ()
    ) -> ClassAggregates:
        """Class table, weight sums and sensitive value counts, all computed by the database.

        One ``GROUP BY qis`` (with ``sum(weight)`` when a weight column is named) and one
        ``GROUP BY qis, column`` per sensitive column; one row per class (or per class and
        value) is fetched, never a record.
        """
        with self._reading() as (conn, source, what):
            available = [c.name for c in source.columns]
            names = validate_quasi_identifiers(qis, available)
            weight, extra = check_extra_columns(
                names, available, weight=weight, sensitive=sensitive
            )
            grouping = plan_grouping(conn, source, names, values=extra)
            if weight is None:
                counted = _counts(conn, grouping, source)
            else:
                counted = _sums(conn, grouping, source, weight)
            per_value = {s: _value_counts(conn, grouping, source, s) for s in extra}
        counts, excluded = split_suppressed(counted)
        _check_records(what, row_count(counts), excluded)
        value_counts = {s: as_frame(split_suppressed(v)[0]) for s, v in per_value.items()}
        aggregates = aggregate_grouped(
            as_frame(counts),
            names,
            COUNT_LABEL,
            weight=weight,
            weight_sum_column=SUM_LABEL,
            value_counts=value_counts,
        )
        if not excluded:
            return aggregates
        return replace(aggregates, table=_with_excluded(aggregates.table, excluded))

    # --------------------------------------------------------------------- identifier scan
    def column_kinds(self) -> dict[str, str]:
        """Each column's kind (:data:`~reident_airflow.engine.identifiers.COLUMN_KINDS`):
        a table's from SQLAlchemy's reflected types, a query's from what the database
        reports (:func:`~reident_airflow.sources.sql_profile.column_kinds`)."""
        with self._reading() as (conn, source, _):
            return column_kinds(conn, source)

    def profile(
        self, plans: Sequence[ColumnPlan], *, approximate: bool = False
    ) -> tuple[ColumnProfile, ...]:
        """What each plan asks of its column, counted by the database in one statement (and
        one more for the sampled values of the kinds that matched):
        :func:`~reident_airflow.sources.sql_profile.profile_columns`. Counts are exact:
        ``approximate`` is refused."""
        from reident_airflow.sources.column_profile import check_plans

        check_plans(plans, approximate=approximate, exact_only=self.label)
        with self._reading() as (conn, source, what):
            return profile_columns(conn, source, plans, label=what)

    # ----------------------------------------------------------------------------- rows
    def rows(
        self, columns: Sequence[str] | None = None, *, categorical: Sequence[str] = ()
    ) -> pd.DataFrame:
        """Every column of the table (or the query), or only ``columns``, streamed
        (:meth:`typed_rows`); ``categorical`` is a file's option: a database's values come
        typed."""
        del categorical
        return self.typed_rows(columns)[0]

    def typed_rows(
        self, columns: Sequence[str] | None = None
    ) -> tuple[pd.DataFrame, dict[str, sa.types.TypeEngine[Any]]]:
        """:meth:`rows`, and the portable types of a table's columns (empty for a query),
        for a release written back with them
        (:func:`~reident_airflow.sources.tables.read_sql_frame`)."""
        from reident_airflow.sources.tables import read_sql_frame

        return read_sql_frame(self._bound(), **self.located(), columns=columns)

    def release_rows(
        self, qis: Sequence[str], columns: Sequence[str] | None = None
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The rows Datafly generalizes and the portable types of the table's columns
        (:meth:`typed_rows`): a release written back to this database keeps them.
        ``qis`` are not read apart: a database's values come typed."""
        del qis
        return self.typed_rows(columns)

    def comparison_rows(self) -> pd.DataFrame:
        """One side of direct match: the whole table, every column Arrow-backed and typed
        from its reflected column types
        (:func:`~reident_airflow.sources.direct_match_sql.read_table_frame`). A query (or a
        table narrowed by ``where``) has no reflected types: refused."""
        from reident_airflow.sources.direct_match_sql import read_table_frame

        if self.sql is not None or self.where or not self.table:
            raise InvalidInputError(
                "direct match compares whole tables: give a table, not a query or where"
            )
        return read_table_frame(self._bound(), self.table, self.schema or None)

    def column_types(self) -> list[tuple[str, str]]:
        """``(name, type)`` of each column of ``table``, in order, the type as the database
        names it: PostgreSQL's ``udt_name`` (``int8``, ``text``) and MySQL / MariaDB's
        ``data_type`` (``bigint``, ``varchar``) from ``information_schema.columns`` (what
        Airflow's common.sql reports), any other database's as SQLAlchemy reflects it
        (SQLite: the declared type). Empty when the table is not found."""
        if not self.table:
            raise InvalidInputError("column types are those of a table: give table")
        with database_errors(self.label):
            return database_column_types(self._bound(), self.table, self.schema or None)

    def sibling(self, name: str) -> SqlSource | None:
        """The table ``name`` of this database (in ``schema``), read through the same engine
        (closing it leaves the engine open); ``None`` when the database holds no such table
        (:class:`~reident_airflow.sources.HasSiblings`)."""
        engine = self._bound()
        with database_errors(self.label):
            if not sa.inspect(engine).has_table(name, schema=self.schema):
                return None
        return SqlSource(engine, table=name, schema=self.schema)

    # ---------------------------------------------------------------------- fingerprint
    def fingerprint(self, rows: int | None = None) -> InputFingerprint:
        """The table's or the query's row count, the server's clock and, where the server has
        one, its snapshot, read in one read-only transaction (:func:`fingerprint_sql`);
        ``rows`` is not needed: the database counts them."""
        del rows
        return fingerprint_sql(self._bound(), **self.located())

    # ----------------------------------------------------------------- release comparison
    def release_changes(
        self, previous: Source, qis: Sequence[str], columns: Sequence[str] | None = None
    ) -> ReleaseChanges:
        """The arrivals and departures of this release (the candidate) against ``previous``,
        a table or query of the same database, grouped on ``qis`` and counted by the
        database in one statement over both, on one read-only connection
        (:func:`~reident_airflow.sources.sql_grouping.changes_statement`): every compared
        column grouped by the exact expressions of the reading contract, so ``citext``, a
        collation or MariaDB's case-insensitive text never merge values. Compared on
        ``columns``, by default every column both hold. The previous release is read
        through this source's connection (its account). A previous release of another
        backend, or of another database, is refused. ``previous`` may be a release ledger
        table (``<target>__ledger``, :mod:`~reident_airflow.sources.sql_ledger`) instead:
        the same counts, from the digests."""
        from reident_airflow.sources.release_changes import other_backend

        if not isinstance(previous, SqlSource):
            raise other_backend(self.label, previous, "a database")
        _same_database(self._bound(), previous._bound())
        old_where = previous.located()
        source_label(old_where.get("table"), old_where.get("sql"))
        with self._reading() as (conn, source, what):
            old_source = open_source(
                conn, old_where.get("table"), old_where.get("sql"), old_where.get("schema")
            )
            return release_changes_sql(
                conn, source, old_source, qis, columns, labels=(what, previous.label)
            )


#: The column of ``information_schema.columns`` that names a column's type as each database
#: does (the type's own name, not the SQL standard's spelling).
_TYPE_NAMES = {"postgresql": "udt_name", "mysql": "data_type", "mariadb": "data_type"}


def database_column_types(
    engine: Engine, table: str, schema: str | None = None
) -> list[tuple[str, str]]:
    """``(name, type)`` of each column of ``table`` (in ``schema``, else the connection's
    current one), the type as the database names it (:meth:`SqlSource.column_types`)."""
    type_column = _TYPE_NAMES.get(engine.dialect.name)
    if type_column is None:
        columns = sa.inspect(engine).get_columns(table, schema=schema)
        return [(str(c["name"]), str(c["type"].compile(dialect=engine.dialect))) for c in columns]
    current = (
        sa.func.current_schema() if engine.dialect.name == "postgresql" else sa.func.database()
    )
    info = sa.table(
        "columns",
        sa.column("table_schema"),
        sa.column("table_name"),
        sa.column("column_name"),
        sa.column("ordinal_position"),
        sa.column(type_column),
        schema="information_schema",
    )
    query = (
        sa.select(info.c.column_name, info.c[type_column])
        .where(
            info.c.table_name == table,
            info.c.table_schema == (schema if schema is not None else current),
        )
        .order_by(info.c.ordinal_position)
    )
    with connect(engine) as conn:
        return [(str(name), str(kind)) for name, kind in conn.execute(query)]


def release_changes_sql(
    conn: Connection,
    candidate: SqlTable,
    previous: SqlTable,
    qis: Sequence[str],
    columns: Sequence[str] | None = None,
    *,
    labels: tuple[str, str] = ("the candidate", "the previous release"),
) -> ReleaseChanges:
    """The arrivals and departures of ``candidate`` against ``previous``, two tables or
    subqueries of the database of ``conn``, counted there in one statement
    (:meth:`SqlSource.release_changes`; ``labels`` name them in messages). ``previous``
    may be a release ledger table (:mod:`~reident_airflow.sources.sql_ledger`)."""
    from reident_airflow.sources.release_changes import (
        changes_from_counts,
        check_kinds,
        compared_columns,
    )
    from reident_airflow.sources.release_ledger import is_ledger
    from reident_airflow.sources.sql_ledger import ledger_changes

    if is_ledger([c.name for c in previous.columns]):
        return ledger_changes(conn, candidate, previous, qis, columns, labels)
    new = sa.select(*candidate.c).subquery("reident_candidate")
    old = sa.select(*previous.c).subquery("reident_previous")
    compared = compared_columns(
        [c.name for c in new.columns],
        [c.name for c in old.columns],
        qis,
        columns,
        labels=labels,
    )
    old_names = [old.columns[j].name for j in compared.previous]
    new_grouping = plan_grouping(conn, new, compared.names)
    old_grouping = plan_grouping(conn, old, old_names)
    check_kinds(
        compared,
        dict(zip(compared.candidate, compared_kinds(conn, new, compared.names), strict=True)),
        dict(zip(compared.previous, compared_kinds(conn, old, old_names), strict=True)),
        labels=labels,
    )
    statement = changes_statement(new_grouping, new, old_grouping, old, compared.qis)
    rows = conn.execute(statement).all()
    return changes_from_counts(compared.qi_names, rows, compared)


def _same_database(new: Engine, old: Engine) -> None:
    """Both engines reach one database (one engine, or URLs naming the same server and
    database): the comparison runs there, in one statement. An in-memory SQLite database
    is its engine's own."""
    if new is old:
        return
    a, b = new.url, old.url
    memory = a.get_backend_name() == "sqlite" and a.database in (None, "", ":memory:")
    same = not memory and (a.get_backend_name(), a.host, a.port, a.database) == (
        b.get_backend_name(),
        b.host,
        b.port,
        b.database,
    )
    if not same:
        raise InvalidInputError(
            "the previous release is in another database than the candidate: releases are "
            "compared where the data is, in one database (give tables or queries of the same "
            "database, or the same engine)"
        )


def grouped_histogram(
    conn: Connection, source: SqlTable, qis: Sequence[str], *, what: str = "the table"
) -> ClassSizes:
    """The class-size histogram of ``source`` (a table or a subquery) on an open connection.

    One statement: the database groups the records into classes and the classes by size, so
    one row per distinct class size is fetched, none per class. Records whose every QI is the
    text ``*`` are excluded and counted in ``excluded_records``.
    """
    grouping = plan_grouping(conn, source, qis)
    rows = conn.execute(histogram_statement(grouping, source)).all()
    tally: dict[int, int] = {}
    excluded = 0
    for size, suppressed, classes in rows:
        if int(suppressed) == 1:
            excluded += int(size) * int(classes)
        else:
            tally[int(size)] = tally.get(int(size), 0) + int(classes)
    _check_records(what, len(tally), excluded)
    sizes = np.array(sorted(tally), dtype=np.int64)
    return ClassSizes(
        quasi_identifiers=grouping.names,
        sizes=sizes,
        counts=np.array([tally[int(s)] for s in sizes], dtype=np.int64),
        excluded_records=excluded,
    )


# ------------------------------------------------------------------------------ functions
def class_table_from_sql(
    url: str | Engine, qis: Sequence[str], **where: Unpack[SqlWhere]
) -> ClassTable:
    """The class table of a database table (or of a ``SELECT``), computed by the database.

    ``where`` names the source: ``table=`` (with ``schema=``) or ``sql=``
    (:class:`~reident_airflow.sources.connect.SqlWhere`)."""
    with SqlSource(url, **where) as source:
        return source.class_table(qis)


def histogram_from_sql(
    url: str | Engine, qis: Sequence[str], **where: Unpack[SqlWhere]
) -> ClassSizes:
    """The class-size histogram of a database table (or of a ``SELECT``), counted by the
    database in one statement (:func:`grouped_histogram`)."""
    with SqlSource(url, **where) as source:
        return source.histogram(qis)


def aggregates_from_sql(
    url: str | Engine,
    qis: Sequence[str],
    *,
    weight: str | None = None,
    sensitive: Sequence[str] = (),
    **where: Unpack[SqlWhere],
) -> ClassAggregates:
    """Class table, weight sums and sensitive value counts, all computed by the database
    (:meth:`SqlSource.aggregates`)."""
    with SqlSource(url, **where) as source:
        return source.aggregates(qis, weight=weight, sensitive=sensitive)


# ------------------------------------------------------------------------- the fingerprint
def safe_location(url: sa.URL) -> str:
    """``url`` as text without its password and its query options (which may hold
    credentials or tokens): ``dialect+driver://user@host:port/database``."""
    bare = sa.URL.create(
        url.drivername, username=url.username, host=url.host, port=url.port, database=url.database
    )
    return bare.render_as_string(hide_password=True)


def _snapshot(conn: Connection) -> tuple[str | None, str | None]:
    """What identifies the snapshot and the server's clock, for the dialects that have them."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        row = conn.execute(sa.text("SELECT pg_current_snapshot()::text, now()::text")).one()
        return str(row[0]), str(row[1])
    if dialect in {"mysql", "mariadb"}:
        if getattr(conn.dialect, "is_mariadb", False):
            row = conn.execute(sa.text("SELECT @@gtid_current_pos, NOW(6)")).one()
            return (str(row[0]) or None), str(row[1])
        return None, str(conn.execute(sa.text("SELECT NOW(6)")).scalar_one())
    if dialect == "sqlite":
        return None, str(conn.execute(sa.text("SELECT datetime('now')")).scalar_one()) + " UTC"
    return None, str(conn.execute(sa.select(sa.func.current_timestamp())).scalar_one())


def _fingerprint_read(
    conn: Connection, table: str | None, sql: str | None, schema: str | None
) -> tuple[int, str | None, str | None]:
    """The row count, the snapshot and the server time, read in one transaction."""
    source = open_source(conn, table, sql, schema)
    snapshot, server_time = _snapshot(conn)
    rows = conn.execute(sa.select(sa.func.count()).select_from(source)).scalar_one()
    return int(rows), snapshot, server_time


def _consistent(conn: Connection) -> Connection:
    """A PostgreSQL or MariaDB connection set to ``REPEATABLE READ`` (the snapshot and the
    count see the same data); other connections as they are."""
    if conn.dialect.name in {"postgresql", "mysql", "mariadb"} and not conn.in_transaction():
        return conn.execution_options(isolation_level="REPEATABLE READ")
    return conn


def fingerprint_sql(
    source: str | Engine | Connection,
    table: str | None = None,
    *,
    sql: str | None = None,
    schema: str | None = None,
) -> InputFingerprint:
    """The fingerprint of a database ``table`` (in ``schema``) or of a ``sql`` query
    (what it proves: :mod:`~reident_airflow.sources.fingerprint`).

    ``source`` is a SQLAlchemy URL, an engine or an open connection (used as it is, inside
    the caller's transaction if one is open). The table is reflected and quoted by
    SQLAlchemy; the query's text is only hashed. The row count, the server's clock and, where
    the server has one, its snapshot are read in one read-only transaction.
    """
    what = source_label(table, sql)
    query_sha = None if sql is None else hashlib.sha256(sql.strip().encode()).hexdigest()
    engine = source.engine if isinstance(source, Connection) else make_engine(source)
    try:
        with database_errors(what):
            if isinstance(source, Connection) and sql is None:
                rows, snapshot, server_time = _fingerprint_read(source, table, sql, schema)
            elif isinstance(source, Connection):  # the caller's: its query read read-only
                with read_only(source):
                    rows, snapshot, server_time = _fingerprint_read(source, table, sql, schema)
            else:
                with connect(engine) as opened, read_only(_consistent(opened)) as conn:
                    rows, snapshot, server_time = _fingerprint_read(conn, table, sql, schema)
    finally:
        if isinstance(source, str):
            engine.dispose()  # the engine made here for a URL
    return InputFingerprint(
        kind="database",
        location=safe_location(engine.url),
        taken_at=now_utc(),
        table=None if table is None else (f"{schema}.{table}" if schema else table),
        query_sha256=query_sha,
        rows=rows,
        dialect="mariadb" if getattr(engine.dialect, "is_mariadb", False) else engine.dialect.name,
        snapshot=snapshot,
        server_time=server_time,
    )

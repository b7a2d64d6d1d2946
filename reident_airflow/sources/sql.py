"""Class tables computed in the database: a ``GROUP BY`` over the QIs, rows never travel.

At most one row per equivalence class (the QI values and a count) is fetched;
:func:`histogram_from_sql` fetches one row per distinct class size. The work is shared out:

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

from collections.abc import Sequence
from dataclasses import replace
from typing import Unpack

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
from reident_airflow.sources.connect import (
    SqlWhere,
    make_engine,
    query_source,
    reading,
    reflect_table,
)
from reident_airflow.sources.db_errors import DriverErrorWithheld, database_errors
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
    SqlSource,
    class_rows,
    constant,
    histogram_statement,
    plan_grouping,
)

__all__ = [
    "COPY_BLOCK_BYTES",
    "COUNT_LABEL",
    "DriverErrorWithheld",
    "SqlWhere",
    "aggregates_from_sql",
    "class_table_from_sql",
    "copy_table_atomic",
    "grouped_counts",
    "grouped_histogram",
    "grouped_sums",
    "grouped_value_counts",
    "histogram_from_sql",
    "make_engine",
    "query_source",
    "reflect_table",
]


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
def _counts(conn: Connection, grouping: Grouping, source: SqlSource) -> ClassRows:
    return fetch_grouped(
        conn,
        class_rows(grouping, source),
        [*grouping.names, COUNT_LABEL, SUPPRESSED_LABEL],
        list(grouping.names),
        COUNTS,
    )


def _sums(conn: Connection, grouping: Grouping, source: SqlSource, column: str) -> pd.DataFrame:
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


def _value_counts(
    conn: Connection, grouping: Grouping, source: SqlSource, column: str
) -> ClassRows:
    stmt = class_rows(grouping, source, value=column)
    keys = [*grouping.names, column, COUNT_LABEL, SUPPRESSED_LABEL]
    return fetch_grouped(conn, stmt, keys, [*grouping.names, column], COUNTS)


def _sensitive_grouping(
    conn: Connection, source: SqlSource, qis: Sequence[str], column: str
) -> Grouping:
    names = validate_quasi_identifiers(qis, [c.name for c in source.columns])
    if column not in [c.name for c in source.columns]:
        raise InvalidInputError(f"unknown sensitive column {column!r}")
    if column in names:
        raise InvalidInputError(f"sensitive column {column!r} is also a quasi-identifier")
    return plan_grouping(conn, source, names, values=[column])


def grouped_counts(conn: Connection, source: SqlSource, qis: Sequence[str]) -> pd.DataFrame:
    """``SELECT qis..., count(*) FROM source GROUP BY qis``: one row per class.

    The class whose every QI is the text ``*`` holds ``*`` (text) in every QI, whatever the
    QI columns' types, so that :func:`class_table_from_grouped` excludes it.
    """
    with database_errors("the source"):
        grouping = plan_grouping(conn, source, qis)
        rows = _counts(conn, grouping, source)
    return marked(rows, grouping.names)


def grouped_sums(
    conn: Connection, source: SqlSource, qis: Sequence[str], column: str
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
    conn: Connection, source: SqlSource, qis: Sequence[str], column: str
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


def class_table_from_sql(
    url: str | Engine, qis: Sequence[str], **where: Unpack[SqlWhere]
) -> ClassTable:
    """The class table of a database table (or of a ``SELECT``), computed by the database.

    ``where`` names the source: ``table=`` (with ``schema=``) or ``sql=``
    (:class:`~reident_airflow.sources.connect.SqlWhere`)."""
    with reading(url, **where) as (conn, source, what):
        grouping = plan_grouping(conn, source, qis)
        rows = _counts(conn, grouping, source)
    kept, excluded = split_suppressed(rows)
    _check_records(what, row_count(kept), excluded)
    return _with_excluded(class_table_from_grouped(kept, grouping.names, COUNT_LABEL), excluded)


def grouped_histogram(
    conn: Connection, source: SqlSource, qis: Sequence[str], *, what: str = "the table"
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


def histogram_from_sql(
    url: str | Engine, qis: Sequence[str], **where: Unpack[SqlWhere]
) -> ClassSizes:
    """The class-size histogram of a database table (or of a ``SELECT``), counted by the
    database in one statement (:func:`grouped_histogram`)."""
    with reading(url, **where) as (conn, source, what):
        return grouped_histogram(conn, source, qis, what=what)


def aggregates_from_sql(
    url: str | Engine,
    qis: Sequence[str],
    *,
    weight: str | None = None,
    sensitive: Sequence[str] = (),
    **where: Unpack[SqlWhere],
) -> ClassAggregates:
    """Class table, weight sums and sensitive value counts, all computed by the database.

    One ``GROUP BY qis`` (with ``sum(weight)`` when a weight column is named) and one
    ``GROUP BY qis, column`` per sensitive column; one row per class (or per class and
    value) is fetched, never a record.
    """
    with reading(url, **where) as (conn, source, what):
        available = [c.name for c in source.columns]
        names = validate_quasi_identifiers(qis, available)
        weight, extra = check_extra_columns(names, available, weight=weight, sensitive=sensitive)
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

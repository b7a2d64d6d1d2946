"""Fetching the class rows of a grouping statement, as the database sent them.

At most one row per equivalence class (the QI values, a count and the aggregates) is fetched:
by ``COPY ... TO STDOUT`` parsed by Arrow on PostgreSQL with psycopg2 (:func:`copy_out`),
otherwise through a streaming cursor (Spark SQL: the driver's cursor, in large batches).
Values are kept as the database sent them: bytes as bytes, integers as integers. The rows of
the suppressed class (flagged by the statement, see :mod:`reident_airflow.sources.sql_grouping`)
are split off (:func:`split_suppressed`) or marked (:func:`marked`) here.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from reident_airflow.engine.encoding import SUPPRESSION_MARKER
from reident_airflow.sources.db_errors import wrapped_driver_error
from reident_airflow.sources.sql_grouping import COUNT_LABEL, SUPPRESSED_LABEL

__all__ = [
    "COPY_BLOCK_BYTES",
    "COUNTS",
    "FETCH_ROWS",
    "ClassRows",
    "as_frame",
    "copy_out",
    "fetch_grouped",
    "marked",
    "row_count",
    "split_suppressed",
]

FETCH_ROWS = 100_000
#: Bytes of COPY output that Arrow parses as one block (blocks are parsed on several threads).
COPY_BLOCK_BYTES = 1 << 24
#: The Arrow types of the counts every class-row statement returns.
COUNTS: dict[str, pa.DataType] = {COUNT_LABEL: pa.int64(), SUPPRESSED_LABEL: pa.int64()}

#: Class rows as fetched: an Arrow table from COPY, a DataFrame from a cursor.
ClassRows: TypeAlias = pd.DataFrame | pa.Table


def fetch_grouped(
    conn: Connection,
    stmt: sa.Select[Any],
    keys: list[str],
    value_keys: list[str],
    numbers: Mapping[str, pa.DataType],
) -> ClassRows:
    """Run a grouped ``SELECT`` and fetch its rows: ``keys`` name the result's columns.

    ``value_keys`` are the grouped value columns, ``numbers`` the aggregates and their Arrow
    types. Values are kept as the database sent them: bytes as bytes, integers as integers
    (never through float64, where ``2**53 + 1`` would become ``2**53``).
    """
    grouped = set(value_keys)
    copied = copy_out(conn, stmt, {k: numbers.get(k, pa.binary()) for k in keys})
    if copied is not None:
        return copied
    if conn.dialect.name == "postgresql":
        # A server-side cursor is planned for fast first rows (cursor_tuple_fraction 0.1),
        # which turns the hash aggregate into a slower sort. All rows are wanted, so plan
        # for the total time; SET LOCAL ends with this transaction.
        conn.execute(sa.text("SET LOCAL cursor_tuple_fraction = 1.0"))
    columns = _fetch_columns(conn, stmt, len(keys))
    return pd.DataFrame(
        {
            k: _value_series(column) if k in grouped else _number_series(column)
            for k, column in zip(keys, columns, strict=True)
        }
    )


def _fetch_columns(conn: Connection, stmt: sa.Select[Any], width: int) -> list[list[Any]]:
    """The rows of ``stmt`` as ``width`` columns of values, fetched :data:`FETCH_ROWS` at a time.

    Spark SQL through PyHive: from the driver's cursor, with ``arraysize`` raised so that one
    Thrift request brings :data:`FETCH_ROWS` rows (PyHive asks for 1,000 at a time), and no
    SQLAlchemy row built per class.
    """
    hive = conn.dialect.name == "hive"
    # (streaming makes SQLAlchemy buffer rows ahead, which reading the cursor would skip)
    result = conn.execute(stmt, execution_options={"stream_results": not hive})
    fetch = result.fetchmany
    cursor: Any = result.cursor
    if hive:
        cursor.arraysize = FETCH_ROWS
        fetch = cursor.fetchmany
    columns: list[list[Any]] = [[] for _ in range(width)]
    driver_error = conn.dialect.loaded_dbapi.Error
    try:
        while True:
            chunk = fetch(FETCH_ROWS)
            if not chunk:
                break
            for column, values in zip(columns, zip(*chunk, strict=True), strict=True):
                column.extend(values)
    except driver_error as exc:  # only the raw cursor raises unwrapped
        raise wrapped_driver_error(conn, exc, conn.connection.dbapi_connection, cursor) from exc
    finally:
        result.close()
    return columns


def _number_series(values: list[Any]) -> pd.Series:
    return pd.Series(values, dtype=np.int64 if not values else None)


def _value_series(values: list[Any]) -> pd.Series:
    """A grouped value column as the driver returned it, in an object column.

    No type inference (an integer column with NULL would become float64); bytes-like values
    (``memoryview``, ``bytearray``) become :class:`bytes`, never text. A float column holding
    both NaN and NULL is a masked ``Float64`` column (NULL masked, NaN a value; pandas' hashing
    makes every NaN one value and ``-0.0`` equal to ``0.0``): in an object column pandas takes
    NaN for a missing value, and NaN is not missing.
    """
    kinds = {type(v) for v in values if v is not None}
    if kinds & {memoryview, bytearray}:
        values = [bytes(v) if isinstance(v, memoryview | bytearray) else v for v in values]
    if (
        kinds == {float}
        and any(v is None for v in values)
        and any(v != v for v in values if v is not None)
    ):
        missing = np.array([v is None for v in values], dtype=np.bool_)
        floats = np.array([0.0 if v is None else v for v in values], dtype=np.float64)
        return pd.Series(pd.arrays.FloatingArray(floats, missing))
    return pd.Series(values, dtype=object)


def copy_out(
    conn: Connection, stmt: sa.Select[Any], types: Mapping[str, pa.DataType]
) -> pa.Table | None:
    """PostgreSQL with psycopg2: fetch the class rows with ``COPY (SELECT ...) TO STDOUT``.

    ``types`` names the result's columns in order, with their Arrow types: the grouped values
    as ``binary``, the aggregates as numbers. COPY streams the result as CSV text, which Arrow
    parses (on several threads) faster than the driver builds one Python tuple per row. The
    statement is compiled by SQLAlchemy (identifiers quoted by its dialect; it has no
    parameters).

    COPY's CSV quotes a value holding the separator, a quote or a line break (LF, CR) and
    doubles its quotes; it writes NULL as an unquoted empty field and the empty text as
    ``""``. Arrow reads it back with line breaks allowed inside values and only the unquoted
    empty field as null. The values are read as bytes, and a column becomes text only if all
    its values are valid UTF-8 (a ``SQL_ASCII`` database may hold any bytes). Returns None
    where COPY is not available, and the caller fetches rows the ordinary way.
    """
    if conn.dialect.name != "postgresql" or conn.dialect.driver != "psycopg2":
        return None
    dbapi_conn = conn.connection.dbapi_connection
    if dbapi_conn is None:  # pragma: no cover - a closed connection
        return None
    sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    buffer = io.BytesIO()
    cursor: Any = dbapi_conn.cursor()
    driver_error = conn.dialect.loaded_dbapi.Error
    copy = f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)"
    # the raw cursor bypasses SQLAlchemy: announce the statement to its listeners (a
    # source noting what it ran) as an execution through it would
    conn.dispatch.before_cursor_execute(conn, cursor, copy, {}, None, False)
    try:
        cursor.copy_expert(copy, buffer)
    except driver_error as exc:
        with suppress(driver_error):
            cursor.close()
        raise wrapped_driver_error(conn, exc, dbapi_conn, cursor) from exc
    cursor.close()
    if buffer.tell() == 0:
        return pa.table({k: pa.array([], type=t) for k, t in types.items()})
    buffer.seek(0)
    return _parse_copy(buffer, types)


def _parse_copy(buffer: io.BytesIO, types: Mapping[str, pa.DataType]) -> pa.Table:
    """The CSV that COPY wrote, as an Arrow table (see :func:`copy_out`)."""
    keys = list(types)
    try:
        table = pcsv.read_csv(
            buffer,
            read_options=pcsv.ReadOptions(column_names=keys, block_size=COPY_BLOCK_BYTES),
            parse_options=pcsv.ParseOptions(
                delimiter=",",
                quote_char='"',
                double_quote=True,
                escape_char=False,
                newlines_in_values=True,  # a quoted value may hold LF, CR, CRLF
                ignore_empty_lines=False,
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=dict(types),
                strings_can_be_null=True,  # COPY writes NULL as an unquoted empty field
                quoted_strings_can_be_null=False,  # ... and an empty text as ""
                null_values=[""],
            ),
        )
    except pa.ArrowException as exc:  # its message may quote a row: not passed on
        raise RuntimeError(
            f"the COPY output of the class rows could not be parsed ({type(exc).__name__})"
        ) from None
    for k, t in types.items():
        if t == pa.binary():
            table = table.set_column(table.schema.get_field_index(k), k, _text_if_utf8(table[k]))
    return table


def _text_if_utf8(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A binary column as text when every value is valid UTF-8 (checked, never replaced)."""
    try:
        return column.cast(pa.string())
    except pa.ArrowInvalid:
        return column


def split_suppressed(rows: ClassRows) -> tuple[ClassRows, int]:
    """The class rows without the suppressed class, and the records that class holds."""
    if isinstance(rows, pa.Table):
        flag = pc.equal(rows[SUPPRESSED_LABEL], 1)
        excluded = pc.sum(pc.filter(rows[COUNT_LABEL], flag)).as_py() or 0
        kept = rows.filter(pc.invert(flag)).drop_columns([SUPPRESSED_LABEL])
        return kept, int(excluded)
    mask = pd.to_numeric(rows[SUPPRESSED_LABEL]).to_numpy() == 1
    excluded = int(pd.to_numeric(rows.loc[mask, COUNT_LABEL]).sum()) if mask.any() else 0
    frame = rows.drop(columns=[SUPPRESSED_LABEL])
    if mask.any():
        frame = frame.loc[~mask].reset_index(drop=True)
    return frame, excluded


def marked(rows: ClassRows, names: Sequence[str]) -> pd.DataFrame:
    """The class rows as a DataFrame, the suppressed class holding the text ``*`` in every QI.

    For callers that build the class table themselves
    (:func:`~reident_airflow.engine.classes.class_table_from_grouped`,
    :func:`~reident_airflow.engine.aggregates.aggregate_grouped`), which exclude the class
    whose QIs are all ``*``: the database decided which class that is, whatever the QI values
    look like on the client (MySQL text comes back as bytes).
    """
    frame = rows.to_pandas() if isinstance(rows, pa.Table) else rows
    mask = pd.to_numeric(frame[SUPPRESSED_LABEL]).to_numpy() == 1
    frame = frame.drop(columns=[SUPPRESSED_LABEL])
    if mask.any():
        for q in names:
            if not pd.api.types.is_string_dtype(frame[q].dtype):
                frame[q] = frame[q].astype(object)
            frame.loc[mask, q] = SUPPRESSION_MARKER
    return frame


def as_frame(rows: ClassRows) -> pd.DataFrame:
    return rows.to_pandas() if isinstance(rows, pa.Table) else rows


def row_count(rows: ClassRows) -> int:
    return int(rows.num_rows) if isinstance(rows, pa.Table) else len(rows)

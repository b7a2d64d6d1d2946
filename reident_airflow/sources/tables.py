"""Whole tables in, every column, for the steps that rewrite or compare a table.

An anonymized release keeps the non-QI columns, so these readers load every column: CSV values
as text (``01`` stays ``01``), Parquet and SQL with their types. Messages name files, tables
and counts, never a value. A file's rows are read by its source
(:meth:`~reident_airflow.sources.files.FileSource.rows`; :func:`read_file_frame` is one call
of it), a database's here (:func:`read_sql_frame`, which
:meth:`~reident_airflow.sources.sql.SqlSource.rows` calls). Class tables and histograms are
read elsewhere (:mod:`~reident_airflow.sources.files`, :mod:`~reident_airflow.sources.sql`):
only the classes travel there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from reident_airflow.engine.encoding import refuse_unknown
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources.connect import (
    connect,
    make_engine,
    open_source,
    read_only,
    source_label,
)
from reident_airflow.sources.db_errors import database_errors
from reident_airflow.sources.files import FileSource

__all__ = ["portable_types", "read_compared_frame", "read_file_frame", "read_sql_frame"]


def read_compared_frame(path: str | Path, *, sep: str = ",") -> pd.DataFrame:
    """A file as Column Direct Match Protection compares it: every column Arrow-backed, and a
    file without records an empty frame (the engine names the empty side)."""
    return read_file_frame(path, sep=sep, dtype_backend="pyarrow", allow_empty=True)


def read_file_frame(
    path: str | Path,
    *,
    sep: str = ",",
    categorical: Sequence[str] = (),
    dtype_backend: Literal["numpy", "pyarrow"] = "numpy",
    allow_empty: bool = False,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Every column of a CSV (as text) or Parquet file, read under ``docs/reading.md``, or
    only ``columns`` (:meth:`~reident_airflow.sources.files.FileSource.rows`, which says what
    ``categorical``, ``dtype_backend`` and ``allow_empty`` do)."""
    return FileSource(path, sep=sep).rows(
        columns, categorical=categorical, dtype_backend=dtype_backend, allow_empty=allow_empty
    )


def portable_types(
    columns: Sequence[sa.ColumnElement[Any]] | sa.ColumnCollection[str, Any],
    exclude: Sequence[str] = (),
) -> dict[str, sa.types.TypeEngine[Any]]:
    """Column types of a reflected table that can be created again elsewhere.

    Each type is made generic (``VARCHAR(40)`` -> ``String(40)``); enums and types without a
    generic form are left out (the writer then picks one from the data).
    """
    out: dict[str, sa.types.TypeEngine[Any]] = {}
    skip = set(exclude)
    for column in columns:
        name = str(column.name)
        if name in skip:
            continue
        try:
            generic = column.type.as_generic()
        except NotImplementedError:
            continue
        if isinstance(generic, sa.Enum | sa.types.NullType):
            continue
        out[name] = generic
    return out


def _fetch_frames(
    conn: Connection,
    source: sa.Table | sa.Subquery,
    fetch_rows: int,
    columns: Sequence[str] | None,
) -> tuple[list[pd.DataFrame], dict[str, sa.types.TypeEngine[Any]]]:
    """The rows of ``source`` (of its ``columns`` only, when given) in frames of
    ``fetch_rows`` (streamed), and a table's portable column types."""
    keys = [str(c.name) for c in source.columns]
    if len(set(keys)) != len(keys):
        raise InvalidInputError("the source has duplicate column names; they must be unique")
    selected = list(source.columns)
    if columns is not None:
        refuse_unknown("column", list(columns), keys)
        selected = [source.columns[name] for name in columns]
        keys = [str(name) for name in columns]
    types = portable_types(selected) if isinstance(source, sa.Table) else {}
    result = conn.execution_options(stream_results=True).execute(sa.select(*selected))
    frames: list[pd.DataFrame] = []
    while chunk := result.fetchmany(fetch_rows):
        frames.append(pd.DataFrame.from_records(chunk, columns=keys))
    return frames, types


def read_sql_frame(
    url: str | Engine,
    *,
    table: str | None = None,
    sql: str | None = None,
    schema: str | None = None,
    fetch_rows: int = 100_000,
    columns: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, sa.types.TypeEngine[Any]]]:
    """Every column of a table (or a ``SELECT``), or only ``columns`` (reflected and quoted
    by SQLAlchemy; an unknown one is an input error), and the portable types of a table's
    columns.

    Rows are streamed in batches of ``fetch_rows``. The types are those of
    :func:`portable_types` for a table, empty for a query. A database that cannot be reached
    raises :func:`~reident_airflow.sources.db_errors.connection_error`'s error (it names the
    host, port and database); a failed read quotes nothing of the data
    (:func:`~reident_airflow.sources.db_errors.database_errors`).
    """
    what = source_label(table, sql)
    engine = make_engine(url)
    try:
        with database_errors(what), connect(engine) as conn, read_only(conn):
            source = open_source(conn, table, sql, schema)
            frames, types = _fetch_frames(conn, source, fetch_rows, columns)
    finally:
        if engine is not url:  # made here for a URL: its pooled connections closed here
            engine.dispose()
    if not frames:
        raise EmptyDatasetError(f"{what} has no records")
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return frame, types

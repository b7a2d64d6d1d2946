"""Class tables computed in the database: a ``GROUP BY`` over the QIs, rows never travel.

Identifiers (table, schema, columns) are reflected and quoted by SQLAlchemy, never formatted
into SQL text. Only one row per equivalence class (the QI values and a count) is fetched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, NoSuchTableError

from reident_airflow.engine.classes import (
    ClassTable,
    class_table_from_grouped,
    validate_quasi_identifiers,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

__all__ = ["class_table_from_sql", "grouped_counts", "make_engine", "reflect_table"]

COUNT_LABEL = "reident_class_size"
FETCH_ROWS = 100_000


def make_engine(url: str | Engine) -> Engine:
    """An engine for a SQLAlchemy URL (``postgresql://...``, ``sqlite:///file.db``, ...)."""
    if isinstance(url, Engine):
        return url
    try:
        return sa.create_engine(url)
    except (ArgumentError, ValueError) as exc:
        raise InvalidInputError(f"not a usable database URL ({type(exc).__name__})") from None
    except ModuleNotFoundError as exc:
        raise InvalidInputError(
            f"the database driver is not installed ({exc.name}); install it to read this URL"
        ) from None


def reflect_table(conn: Connection, table: str, schema: str | None = None) -> sa.Table:
    """Reflect an existing table; a missing one is an input error naming the table."""
    if not table or not isinstance(table, str):
        raise InvalidInputError("no table name given")
    try:
        return sa.Table(table, sa.MetaData(), schema=schema, autoload_with=conn)
    except NoSuchTableError:
        where = f" in schema {schema!r}" if schema else ""
        raise InvalidInputError(f"table {table!r} does not exist{where}") from None


def grouped_counts(
    conn: Connection, source: sa.Table | sa.Subquery, qis: Sequence[str]
) -> pd.DataFrame:
    """Run ``SELECT qis..., count(*) FROM source GROUP BY qis`` and fetch the class rows."""
    names = validate_quasi_identifiers(qis, [c.name for c in source.columns])
    if COUNT_LABEL in names:  # pragma: no cover - would collide with our count label
        raise InvalidInputError(f"a quasi-identifier may not be named {COUNT_LABEL!r}")
    cols = [source.c[q] for q in names]
    stmt = sa.select(*cols, sa.func.count().label(COUNT_LABEL)).group_by(*cols)
    result = conn.execution_options(stream_results=True).execute(stmt)
    frames: list[pd.DataFrame] = []
    keys = [*names, COUNT_LABEL]
    while True:
        chunk = result.fetchmany(FETCH_ROWS)
        if not chunk:
            break
        frames.append(pd.DataFrame.from_records(chunk, columns=keys))
    if not frames:
        return pd.DataFrame({k: [] for k in keys})
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def class_table_from_sql(
    url: str | Engine,
    qis: Sequence[str],
    *,
    table: str,
    schema: str | None = None,
    **_: Any,
) -> ClassTable:
    """The class table of a database table, computed by the database."""
    engine = make_engine(url)
    with engine.connect() as conn:
        source = reflect_table(conn, table, schema)
        grouped = grouped_counts(conn, source, qis)
    if grouped.empty:
        raise EmptyDatasetError(f"table {table!r} has no records: there is nothing to assess")
    return class_table_from_grouped(grouped, qis, COUNT_LABEL)

"""Whole tables in and out, for the steps that rewrite a table (Datafly).

Writers publish atomically: a reader sees the previous table (or file) or the new one, never a
part, and a write that fails midway leaves the previous one as it was.

- :func:`write_file_atomic`: DataFrame -> CSV or Parquet (by extension). The rows go to a
  temporary file in the target's directory, in chunks; it is flushed, ``fsync``-ed and renamed
  over the target with :func:`os.replace` (atomic on POSIX and Windows within a file system).
- :func:`write_table_atomic`: DataFrame -> SQL table. The rows go, in chunks (one transaction
  each), to a fresh ``<target>__reident_new`` table; the swap then happens in one step:

  * PostgreSQL, SQLite (transactional DDL): ``DROP TABLE target`` and
    ``ALTER TABLE <target>__reident_new RENAME TO target`` in one transaction. On SQLite the
    transaction is opened with a no-op ``DELETE`` first, since the ``sqlite3`` driver would
    otherwise run the DDL in autocommit mode.
  * MariaDB / MySQL (DDL commits implicitly): ``RENAME TABLE target TO <target>__reident_old,
    <target>__reident_new TO target`` -- one atomic multi-table rename -- then
    ``DROP TABLE <target>__reident_old``.

  A failure before the swap drops the staging table and leaves ``target`` untouched; a
  process killed outright may leave ``<target>__reident_new`` (or ``__reident_old``) behind,
  which the next write drops first. What the swap does not carry over: indexes, grants and
  views of the old ``target`` (a view on it makes PostgreSQL refuse the ``DROP``: the write
  then fails and the old table stays). One writer per target at a time (in Airflow:
  ``max_active_runs=1`` or distinct targets).

Readers (:func:`read_file_frame`, :func:`read_sql_frame`) load every column of a table, since
an anonymized release keeps the non-QI columns: CSV values as text (``01`` stays ``01``),
Parquet and SQL with their types.

Identifiers are quoted by SQLAlchemy, never formatted into SQL text unquoted. Messages name
files, tables and counts, never a value.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError, ReidentError
from reident_airflow.sources.files import file_columns, read_columns
from reident_airflow.sources.sql import make_engine, query_source, reflect_table

__all__ = [
    "NEW_SUFFIX",
    "OLD_SUFFIX",
    "Checkpoint",
    "TableWriteError",
    "database_error_code",
    "file_format",
    "portable_types",
    "read_file_frame",
    "read_sql_frame",
    "same_file",
    "write_file_atomic",
    "write_table_atomic",
]

#: Suffix of the table the new rows are written to before the swap.
NEW_SUFFIX = "__reident_new"
#: Suffix the previous table carries for the instant of a MariaDB/MySQL swap.
OLD_SUFFIX = "__reident_old"

#: Called at every point where a crash could leave a half-done write: ``("chunk", rows written
#: so far)`` after each chunk, ``("swap", 0)`` inside the swap (SQL) or just before the rename
#: (files). Tests raise from it to prove that the previous release survives.
Checkpoint = Callable[[str, int], None]

FILE_CHUNK_ROWS = 262_144
SQL_CHUNK_ROWS = 10_000

_PARQUET_SUFFIXES = {".parquet", ".pq"}
_CSV_SUFFIXES = {".csv", ".txt", ".tsv"}


# ------------------------------------------------------------------------------------- files
def file_format(path: str | Path) -> str:
    """``"parquet"`` or ``"csv"``, from the file name's extension."""
    suffix = Path(path).suffix.lower()
    if suffix in _PARQUET_SUFFIXES:
        return "parquet"
    if suffix in _CSV_SUFFIXES:
        return "csv"
    raise InvalidInputError(
        f"{path}: cannot tell the output format from the extension {suffix or '(none)'!r}; "
        "name the file *.csv or *.parquet"
    )


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same file (following links; also for a file not yet made)."""
    from reident_airflow._atomic import same_path

    return same_path(a, b)


def _arrow_table(frame: pd.DataFrame) -> pa.Table:
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        raise InvalidInputError("the table has duplicate column names; they must be unique")
    if names != list(frame.columns):
        frame = frame.set_axis(names, axis=1)
    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise InvalidInputError(
            f"a column cannot be written to a file ({type(exc).__name__}); "
            "convert mixed-type columns to text first"
        ) from None


def _plain(table: pa.Table) -> pa.Table:
    """Dictionary columns decoded (the CSV writer wants plain values)."""
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(f.type.value_type))
    return table


def _needs_quoting(table: pa.Table, sep: str) -> bool:
    """Whether any header or text value holds the separator, a quote or a line break."""
    specials = (sep, '"', "\n", "\r")
    if any(s in name for name in table.column_names for s in specials):
        return True
    for column in table.columns:
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        for s in specials:
            if pc.any(pc.match_substring(column, s)).as_py():
                return True
    return False


def _csv_header_line(names: Sequence[str], sep: str, quote: bool) -> str:
    if quote:
        names = ['"' + n.replace('"', '""') + '"' for n in names]
    return sep.join(names) + "\n"


def write_file_atomic(
    frame: pd.DataFrame,
    path: str | Path,
    *,
    sep: str = ",",
    chunk_rows: int = FILE_CHUNK_ROWS,
    checkpoint: Checkpoint | None = None,
) -> int:
    """Write ``frame`` (without its index) to ``path`` atomically; returns the rows written.

    The format follows the extension (``.csv``/``.tsv``/``.txt`` with ``sep``, or
    ``.parquet``/``.pq``). CSV values are quoted only when some value needs it (it holds the
    separator, a quote or a line break); missing values are written as empty fields. The
    previous file, if any, stays in place until the new one is complete and on disk.
    """
    target = Path(path)
    kind = file_format(target)
    directory = target.parent
    if not directory.is_dir():
        raise InvalidInputError(f"{target}: directory {directory} does not exist")
    if target.is_dir():
        raise InvalidInputError(f"{target}: is a directory, not a file")
    if len(sep) != 1:
        raise InvalidInputError(f"the CSV separator must be a single character, got {sep!r}")
    if chunk_rows < 1:
        raise InvalidInputError("chunk_rows must be at least 1")
    table = _arrow_table(frame)
    if kind == "csv":
        table = _plain(table)
    from reident_airflow._atomic import atomic_file

    with atomic_file(target) as fh:
        written = 0
        if kind == "csv":
            quote = _needs_quoting(table, sep)
            # Arrow quotes the header always: write it ourselves, quoted only if needed.
            fh.write(_csv_header_line(table.column_names, sep, quote).encode("utf-8"))
            options = pcsv.WriteOptions(
                delimiter=sep,
                include_header=False,
                quoting_style="needed" if quote else "none",
            )
            with pcsv.CSVWriter(fh, table.schema, write_options=options) as writer:
                for start in range(0, max(table.num_rows, 1), chunk_rows):
                    part = table.slice(start, chunk_rows)
                    writer.write_table(part)
                    written += part.num_rows
                    if checkpoint is not None and part.num_rows:
                        checkpoint("chunk", written)
        else:
            with pq.ParquetWriter(fh, table.schema) as writer:
                for start in range(0, max(table.num_rows, 1), chunk_rows):
                    part = table.slice(start, chunk_rows)
                    writer.write_table(part, row_group_size=chunk_rows)
                    written += part.num_rows
                    if checkpoint is not None and part.num_rows:
                        checkpoint("chunk", written)
        fh.flush()
        if checkpoint is not None:
            checkpoint("swap", 0)
    return written


def _categorical(column: pa.ChunkedArray) -> pd.Categorical | None:
    """A text column as a pandas Categorical with plain-object categories (``None`` if it is
    not text). Grouping then works on its integer codes: no Python string per row is made."""
    value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        return None
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_dictionary(array.type):
        array = pc.dictionary_encode(array)
    categories = pd.Index(np.asarray(array.dictionary.to_pylist(), dtype=object), dtype=object)
    if not categories.is_unique:  # pragma: no cover - a writer that repeats dictionary values
        return None
    codes = array.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    return pd.Categorical.from_codes(codes, categories=categories)


def read_file_frame(
    path: str | Path, *, sep: str = ",", categorical: Sequence[str] = ()
) -> pd.DataFrame:
    """Every column of a CSV (as text) or Parquet file, read under ``docs/reading.md``.

    Text columns named in ``categorical`` come as pandas Categoricals (dictionary-encoded by
    Arrow): the same values, grouped on integer codes; Datafly passes its QIs here.
    """
    p = Path(path)
    table = read_columns(p, file_columns(p, sep=sep), sep=sep)
    if table.num_rows == 0:
        raise EmptyDatasetError(f"{p}: the table has no records")
    encoded: dict[str, pd.Categorical] = {}
    for name in dict.fromkeys(categorical):
        if name in table.column_names:
            values = _categorical(table.column(name))
            if values is not None:
                encoded[name] = values
    frame: pd.DataFrame = (
        table.drop_columns(list(encoded)).to_pandas() if encoded else (table.to_pandas())
    )
    if encoded:
        frame = pd.DataFrame(
            {
                name: encoded[name] if name in encoded else frame[name]
                for name in table.column_names
            },
            index=frame.index,
        )
    return frame


# --------------------------------------------------------------------------------------- SQL
def _sql_type(series: pd.Series) -> sa.types.TypeEngine[Any]:
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return sa.Boolean()
    if pd.api.types.is_integer_dtype(dtype):
        return sa.BigInteger()
    if pd.api.types.is_float_dtype(dtype):
        return sa.Float(precision=53)
    if isinstance(dtype, pd.DatetimeTZDtype):
        return sa.DateTime(timezone=True)
    if pd.api.types.is_datetime64_dtype(dtype):
        return sa.DateTime()
    return sa.Text()


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


def _column_values(series: pd.Series) -> list[Any]:
    """Python values of a column, missing values as ``None``."""
    kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else ""
    if kind and kind in "iub":
        return series.tolist()  # numpy ints / bools cannot be missing
    values = series.astype(object)
    return values.where(series.notna(), None).tolist()


def _qualified(engine: Engine | Connection, name: str, schema: str | None) -> str:
    prep = engine.dialect.identifier_preparer
    return f"{prep.quote_schema(schema)}.{prep.quote(name)}" if schema else prep.quote(name)


def _drop_quietly(engine: Engine, table: sa.Table) -> None:
    with contextlib.suppress(Exception), engine.begin() as conn:
        table.drop(conn, checkfirst=True)


def write_table_atomic(
    engine: Engine,
    frame: pd.DataFrame,
    target: str,
    *,
    schema: str | None = None,
    column_types: Mapping[str, sa.types.TypeEngine[Any]] | None = None,
    chunk_rows: int = SQL_CHUNK_ROWS,
    checkpoint: Checkpoint | None = None,
) -> int:
    """Publish ``frame`` (without its index) as table ``target``; returns the rows written.

    Columns get ``column_types[name]`` when given, else a type from the dtype (integers
    ``BIGINT``, floats double precision, booleans, timestamps, anything else ``TEXT``). See the
    module docstring for how the swap stays atomic on each database.
    """
    if not target or not isinstance(target, str):
        raise InvalidInputError("no target table name given")
    if chunk_rows < 1:
        raise InvalidInputError("chunk_rows must be at least 1")
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        raise InvalidInputError("the table has duplicate column names; they must be unique")
    types = dict(column_types or {})
    staging_name = f"{target}{NEW_SUFFIX}"
    staging = sa.Table(
        staging_name,
        sa.MetaData(schema=schema),
        *(
            sa.Column(name, types.get(name) or _sql_type(frame.iloc[:, i]))
            for i, name in enumerate(names)
        ),
    )
    n = len(frame)
    written = 0
    from reident_airflow._atomic import interrupt_guard

    # SIGTERM/SIGINT during the write raise here, so the staging table is dropped first
    with interrupt_guard():
        try:

            def create() -> None:
                with engine.begin() as conn:
                    staging.drop(conn, checkfirst=True)  # a leftover of a run that was killed
                    staging.create(conn)

            _guarded(create, "creating the staging table", target, 0, n)
            for start in range(0, n, chunk_rows):
                part = frame.iloc[start : start + chunk_rows]

                def insert(part: pd.DataFrame = part) -> int:
                    columns = [_column_values(part.iloc[:, i]) for i in range(len(names))]
                    rows = [
                        dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)
                    ]
                    with engine.begin() as conn:
                        conn.execute(sa.insert(staging), rows)
                    return len(rows)

                written += _guarded(
                    insert,
                    f"inserting records {start + 1:,}-{start + len(part):,}",
                    target,
                    written,
                    n,
                )
                if checkpoint is not None:
                    checkpoint("chunk", written)
            _swap(engine, staging, target, schema, checkpoint, written, n)
        except BaseException:
            _drop_quietly(engine, staging)
            raise
    return written


class TableWriteError(ReidentError):
    """A database refused a write. The message (and the attributes) say which step, which
    table, the counts and the database's error code -- never a statement parameter or a value.

    ``deterministic`` is true for data and SQL errors (a value too long, a wrong type, a
    constraint, a syntax error: a retry fails the same way), false for connection, timeout and
    other operational errors.
    """

    def __init__(
        self,
        message: str,
        *,
        table: str | None = None,
        error_class: str | None = None,
        code: str | None = None,
        rows_written: int | None = None,
        rows_total: int | None = None,
        deterministic: bool = False,
    ) -> None:
        super().__init__(message)
        self.table = table
        self.error_class = error_class
        self.code = code
        self.rows_written = rows_written
        self.rows_total = rows_total
        self.deterministic = deterministic

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_write_error, (str(self), dict(self.__dict__)))


def _rebuild_write_error(message: str, state: dict[str, Any]) -> TableWriteError:
    error = TableWriteError(message)
    error.__dict__.update(state)
    return error


#: MySQL/MariaDB error numbers of data and SQL errors (a retry fails the same way).
_MYSQL_DETERMINISTIC = {
    1048,  # column cannot be null
    1054,  # unknown column
    1062,  # duplicate entry
    1064,  # syntax error
    1146,  # no such table
    1264,  # out of range
    1265,  # data truncated
    1292,  # truncated incorrect value
    1366,  # incorrect value for the column
    1406,  # data too long
    1451,  # foreign key (parent)
    1452,  # foreign key (child)
    3819,  # check constraint
    4025,  # check constraint (MariaDB)
}


def database_error_code(exc: BaseException) -> str | None:
    """The database's own code of a driver error: PostgreSQL's SQLSTATE, MySQL's errno,
    SQLite's error name; ``None`` if there is none."""
    orig = getattr(exc, "orig", None) or exc
    args = getattr(orig, "args", ())
    module = type(orig).__module__ or ""
    if ("mysql" in module.lower() or "mariadb" in module) and args and isinstance(args[0], int):
        return f"MySQL error {args[0]}"
    pgcode = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
    if isinstance(pgcode, str) and pgcode:
        return f"SQLSTATE {pgcode}"
    name = getattr(orig, "sqlite_errorname", None)
    if isinstance(name, str) and name:
        return name
    return None


def _deterministic(exc: BaseException, code: str | None) -> bool:
    if isinstance(exc, sa.exc.DataError | sa.exc.IntegrityError | sa.exc.ProgrammingError):
        return True
    if code and code.startswith("SQLSTATE "):
        return code[9:11] in {"22", "23", "42"}
    if code and code.startswith("MySQL error "):
        return int(code[12:]) in _MYSQL_DETERMINISTIC
    return isinstance(exc, TypeError | ValueError)


def _write_error(
    exc: BaseException, step: str, target: str, written: int, total: int
) -> TableWriteError:
    code = database_error_code(exc)
    orig = getattr(exc, "orig", None)
    kind = type(exc).__name__
    if orig is not None and type(orig).__name__ != kind:
        kind = f"{kind} ({type(orig).__module__.split('.')[0]}.{type(orig).__name__})"
    message = (
        f"writing table {target!r} failed while {step}: {kind}"
        f"{f', {code}' if code else ''}; {written:,} of {total:,} records had been written "
        "to the staging table, which is dropped; the previous table is unchanged"
    )
    return TableWriteError(
        message,
        table=target,
        error_class=type(orig or exc).__name__,
        code=code,
        rows_written=written,
        rows_total=total,
        deterministic=_deterministic(exc, code),
    )


def _guarded(fn: Callable[[], Any], step: str, target: str, written: int, total: int) -> Any:
    """``fn()``; an error it raises comes back as a :class:`TableWriteError` without the
    statement, its parameters or the original exception chained (they hold record values)."""
    error: TableWriteError | None = None
    try:
        return fn()
    except Exception as exc:  # a driver's own error may quote a value as well
        error = _write_error(exc, step, target, written, total)
        del exc
    raise error from None


def _swap(
    engine: Engine,
    staging: sa.Table,
    target: str,
    schema: str | None,
    checkpoint: Checkpoint | None,
    written: int = 0,
    total: int = 0,
) -> None:
    """Replace ``target`` by ``staging`` in one step readers cannot see halfway (a database
    error comes back as a :class:`TableWriteError`)."""
    error: TableWriteError | None = None
    try:
        _swap_tables(engine, staging, target, schema, checkpoint)
        return
    except sa.exc.SQLAlchemyError as exc:
        error = _write_error(exc, "swapping the tables", target, written, total)
        del exc
    raise error from None


def _swap_tables(
    engine: Engine,
    staging: sa.Table,
    target: str,
    schema: str | None,
    checkpoint: Checkpoint | None,
) -> None:
    new = _qualified(engine, staging.name, schema)
    if engine.dialect.name in {"mysql", "mariadb"}:
        old_name = f"{target}{OLD_SUFFIX}"
        old_table = sa.Table(old_name, sa.MetaData(schema=schema))
        with engine.begin() as conn:
            old_table.drop(conn, checkfirst=True)
            exists = sa.inspect(conn).has_table(target, schema=schema)
            if checkpoint is not None:
                checkpoint("swap", 0)
            if exists:
                conn.exec_driver_sql(
                    f"RENAME TABLE {_qualified(conn, target, schema)} TO "
                    f"{_qualified(conn, old_name, schema)}, {new} TO "
                    f"{_qualified(conn, target, schema)}"
                )
                old_table.drop(conn)
            else:
                conn.exec_driver_sql(f"RENAME TABLE {new} TO {_qualified(conn, target, schema)}")
        return
    prep = engine.dialect.identifier_preparer
    with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            # pysqlite opens a transaction only before DML: without this no-op DELETE the DROP
            # and the RENAME below would each commit on their own.
            conn.execute(sa.delete(staging).where(sa.false()))
        sa.Table(target, sa.MetaData(schema=schema)).drop(conn, checkfirst=True)
        if checkpoint is not None:
            checkpoint("swap", 0)
        conn.exec_driver_sql(f"ALTER TABLE {new} RENAME TO {prep.quote(target)}")


def read_sql_frame(
    url: str | Engine,
    *,
    table: str | None = None,
    sql: str | None = None,
    schema: str | None = None,
    fetch_rows: int = 100_000,
) -> tuple[pd.DataFrame, dict[str, sa.types.TypeEngine[Any]]]:
    """Every column of a table (or a ``SELECT``), and the portable types of a table's columns.

    Rows are streamed in batches of ``fetch_rows``. The types are those of
    :func:`portable_types` for a table, empty for a query.
    """
    if (table is None) == (sql is None):
        raise InvalidInputError("give either a table name or a sql query, not both or neither")
    engine = make_engine(url)
    with engine.connect() as conn:
        if table is not None:
            source: sa.Table | sa.Subquery = reflect_table(conn, table, schema)
            types = portable_types(source.columns)
        else:
            source = query_source(conn, sql or "")
            types = {}
        keys = [str(c.name) for c in source.columns]
        if len(set(keys)) != len(keys):
            raise InvalidInputError("the source has duplicate column names; they must be unique")
        result = conn.execution_options(stream_results=True).execute(sa.select(*source.columns))
        frames: list[pd.DataFrame] = []
        while True:
            chunk = result.fetchmany(fetch_rows)
            if not chunk:
                break
            frames.append(pd.DataFrame.from_records(chunk, columns=keys))
    if not frames:
        what = f"table {table!r}" if table is not None else "the query"
        raise EmptyDatasetError(f"{what} has no records")
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return frame, types

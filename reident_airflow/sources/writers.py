"""Whole tables out, for the steps that rewrite a table (Datafly); readers re-exported.

Writers publish atomically through :mod:`~reident_airflow.sources.publish`: a reader sees the
previous table (or file) or the new one, never a part, and a write that fails midway leaves the
previous one as it was.

- :func:`write_file_atomic`: DataFrame -> CSV or Parquet (by extension). The rows go, in
  chunks, to the temporary file :func:`~reident_airflow._atomic.atomic_file` renames over the
  target once it is complete and on disk, while the run holds ``<target>.reident-lock``
  (:func:`~reident_airflow._atomic.target_lock`).
- :func:`write_table_atomic`: DataFrame -> SQL table. The run takes the target's lock, then the
  rows go, in chunks (one transaction each), to a staging table of its own,
  ``<target>__reident_<8 hex>``, which is then swapped in as
  :mod:`~reident_airflow.sources.publish` describes for each database. A database error is a
  :class:`TableWriteError` naming the step, the table, the counts and the database's code.

Both publish one target one run at a time: a second run waits for the first (at most
``lock_timeout`` seconds, then :class:`~reident_airflow.engine.errors.TargetBusyError`, which a
retry may clear) and then writes its own rows in full; rows of two runs never mix.

The readers (:func:`read_file_frame`, :func:`read_sql_frame`, :func:`portable_types`) live in
:mod:`~reident_airflow.sources.tables` and are importable from here. Identifiers are quoted by
SQLAlchemy, never formatted into SQL text unquoted. Messages name files, tables and counts,
never a value.
"""

from __future__ import annotations

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
from sqlalchemy.engine import Engine

from reident_airflow._atomic import (
    DEFAULT_LOCK_TIMEOUT,
    InterruptGuard,
    check_lock_timeout,
    interrupt_guard,
    same_path,
    target_lock,
)
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.db_errors import TableWriteError, database_error_code, guarded
from reident_airflow.sources.file_source import PARQUET_SUFFIXES
from reident_airflow.sources.publish import (
    STAGING_MARK,
    Checkpoint,
    atomic_file,
    check_target_name,
    create_staging,
    drop_quietly,
    drop_stale_staging,
    publishing,
    staging_name,
    staging_table,
    swap_in,
)
from reident_airflow.sources.tables import portable_types, read_file_frame, read_sql_frame

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "STAGING_MARK",
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

FILE_CHUNK_ROWS = 262_144
SQL_CHUNK_ROWS = 10_000

_CSV_SUFFIXES = {".csv", ".txt", ".tsv"}


# ------------------------------------------------------------------------------------- files
def file_format(path: str | Path) -> str:
    """``"parquet"`` or ``"csv"``, from the file name's extension."""
    suffix = Path(path).suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    if suffix in _CSV_SUFFIXES:
        return "csv"
    raise InvalidInputError(
        f"{path}: cannot tell the output format from the extension {suffix or '(none)'!r}; "
        "name the file *.csv or *.parquet"
    )


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same file (following links; also for a file not yet made)."""
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
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ledger: Sequence[str] | None = None,
) -> int:
    """Write ``frame`` (without its index) to ``path`` atomically; returns the rows written.

    The format follows the extension (``.csv``/``.tsv``/``.txt`` with ``sep``, or
    ``.parquet``/``.pq``). CSV values are quoted only when some value needs it (it holds the
    separator, a quote or a line break); missing values are written as empty fields. The
    previous file, if any, stays in place until the new one is complete and on disk. The
    write holds ``<path>.reident-lock`` (beside it, for the write): another run writing ``path``
    waits for it, at most ``lock_timeout`` seconds
    (:class:`~reident_airflow.engine.errors.TargetBusyError` then).

    ``ledger``, the QIs of a release ledger to keep (docs/metrics.md §12): once the file is
    in place, and under the same lock, its rows are digested by DuckDB into
    ``<path>.ledger.parquet`` (:func:`~reident_airflow.sources.files.write_file_ledger`),
    written to a temporary file and renamed over the last one.
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
    lock_timeout = check_lock_timeout(lock_timeout)
    if ledger is not None:
        _check_ledger_qis(ledger, [str(c) for c in frame.columns])
    table = _arrow_table(frame)
    with target_lock(target, lock_timeout):
        if ledger is None:
            return _write_file(target, kind, table, sep, chunk_rows, checkpoint)
        return _write_file_with_ledger(
            target, kind, table, sep, chunk_rows, checkpoint, list(ledger)
        )


def _check_ledger_qis(qis: Sequence[str], names: Sequence[str]) -> None:
    """The ledger's QIs are columns of the release (checked before anything is written)."""
    if isinstance(qis, str) or not list(qis):
        raise InvalidInputError("the release ledger needs the quasi-identifiers: name one")
    missing = [q for q in qis if q not in names]
    if missing:
        raise InvalidInputError(
            "the release ledger's quasi-identifiers are not columns of the release: "
            + ", ".join(repr(q) for q in missing)
        )


def _write_file(
    target: Path,
    kind: str,
    table: pa.Table,
    sep: str,
    chunk_rows: int,
    checkpoint: Checkpoint | None,
) -> int:
    with atomic_file(target) as fh:
        if kind == "csv":
            written = _write_csv(fh, _plain(table), sep, chunk_rows, checkpoint)
        else:
            with pq.ParquetWriter(fh, table.schema) as writer:

                def write_part(part: pa.Table) -> None:
                    writer.write_table(part, row_group_size=chunk_rows)

                written = _write_chunks(write_part, table, chunk_rows, checkpoint)
        fh.flush()
        if checkpoint is not None:
            checkpoint("swap", 0)
    return written


def _write_file_with_ledger(
    target: Path,
    kind: str,
    table: pa.Table,
    sep: str,
    chunk_rows: int,
    checkpoint: Checkpoint | None,
    qis: list[str],
) -> int:
    """:func:`_write_file` and the release ledger of what it wrote, under the target's lock
    (held by the caller). The last ledger is moved aside first: if the write fails, it is put
    back (it still describes the file in place); once the file is replaced, it is removed, so
    that a ledger never describes another release than the file beside it (a run killed
    between the two renames leaves no ledger, not a wrong one)."""
    import os

    from reident_airflow._atomic import temp_name
    from reident_airflow.sources.files import write_file_ledger
    from reident_airflow.sources.release_ledger import ledger_path

    ledger = Path(ledger_path(str(target)))
    aside = temp_name(ledger)
    kept = ledger.is_file()
    if kept:
        os.replace(ledger, aside)
    try:
        written = _write_file(target, kind, table, sep, chunk_rows, checkpoint)
    except BaseException:
        if kept:
            os.replace(aside, ledger)
        raise
    if kept:
        aside.unlink(missing_ok=True)
    write_file_ledger(target, ledger, qis, sep=sep)
    return written


def _write_chunks(
    write: Callable[[pa.Table], None],
    table: pa.Table,
    chunk_rows: int,
    checkpoint: Checkpoint | None,
) -> int:
    """Hand ``table`` to ``write`` in slices of ``chunk_rows`` (one empty slice for an empty
    table, so that the format still gets its header); returns the rows written."""
    written = 0
    for start in range(0, max(table.num_rows, 1), chunk_rows):
        part = table.slice(start, chunk_rows)
        write(part)
        written += part.num_rows
        if checkpoint is not None and part.num_rows:
            checkpoint("chunk", written)
    return written


def _write_csv(
    fh: Any, table: pa.Table, sep: str, chunk_rows: int, checkpoint: Checkpoint | None
) -> int:
    """The CSV file: values quoted only when some value (or name) needs it."""
    quote = _needs_quoting(table, sep)
    # Arrow quotes the header always: write it ourselves, quoted only if needed.
    fh.write(_csv_header_line(table.column_names, sep, quote).encode("utf-8"))
    options = pcsv.WriteOptions(
        delimiter=sep,
        include_header=False,
        quoting_style="needed" if quote else "none",
    )
    with pcsv.CSVWriter(fh, table.schema, write_options=options) as writer:
        return _write_chunks(writer.write_table, table, chunk_rows, checkpoint)


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


def _column_values(series: pd.Series) -> list[Any]:
    """Python values of a column, missing values as ``None``."""
    kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else ""
    if kind and kind in "iub":
        return series.tolist()  # numpy ints / bools cannot be missing
    values = series.astype(object)
    return values.where(series.notna(), None).tolist()


def write_table_atomic(
    engine: Engine,
    frame: pd.DataFrame,
    target: str,
    *,
    schema: str | None = None,
    column_types: Mapping[str, sa.types.TypeEngine[Any]] | None = None,
    chunk_rows: int = SQL_CHUNK_ROWS,
    checkpoint: Checkpoint | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ledger: Sequence[str] | None = None,
) -> int:
    """Publish ``frame`` (without its index) as table ``target``; returns the rows written.

    Columns get ``column_types[name]`` when given, else a type from the dtype (integers
    ``BIGINT``, floats double precision, booleans, timestamps, anything else ``TEXT``). See the
    module docstring of :mod:`~reident_airflow.sources.publish` for how the swap stays atomic
    on each database and how the target's lock keeps other runs out: one publishing ``target``
    already is waited for at most ``lock_timeout`` seconds
    (:class:`~reident_airflow.engine.errors.TargetBusyError` then).

    ``ledger``, the QIs of a release ledger to keep (docs/metrics.md §12): the database
    digests the staged rows into a staging table of the ledger ``<target>__ledger``, and the
    swap replaces both tables in the same step (one transaction; one ``RENAME TABLE`` on
    MariaDB and MySQL), under the target's lock: the ledger beside a table always describes
    it.
    """
    check_target_name(engine, target)
    if chunk_rows < 1:
        raise InvalidInputError("chunk_rows must be at least 1")
    lock_timeout = check_lock_timeout(lock_timeout)
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        raise InvalidInputError("the table has duplicate column names; they must be unique")
    ledger_name = None
    if ledger is not None:
        from reident_airflow.sources.release_ledger import ledger_table

        _check_ledger_qis(ledger, names)
        ledger_name = ledger_table(target)
        check_target_name(engine, ledger_name)
    types = dict(column_types or {})
    columns = [
        sa.Column(name, types.get(name) or _sql_type(frame.iloc[:, i]))
        for i, name in enumerate(names)
    ]
    n = len(frame)
    # SIGTERM/SIGINT during the write raise here (between two statements, never inside one),
    # so the staging table is dropped first
    with (
        interrupt_guard() as guard,
        publishing(engine, target, schema, timeout=lock_timeout, guard=guard) as (lock, name),
    ):
        staging = staging_table(target, columns, schema, name=name)
        also: list[tuple[sa.Table, str]] = []
        try:
            with guard.critical():
                guarded(
                    lambda: create_staging(engine, staging),
                    "creating the staging table",
                    target,
                    0,
                    n,
                )
            written = _insert_chunks(engine, staging, frame, target, chunk_rows, checkpoint, guard)
            if ledger is not None and ledger_name is not None:
                with guard.critical():
                    also.append(
                        _stage_ledger(engine, staging, ledger_name, list(ledger), schema, lock)
                    )
            with guard.critical():
                guarded(
                    lambda: swap_in(engine, staging, target, schema, checkpoint, lock, also),
                    "swapping the tables",
                    target,
                    written,
                    n,
                    catch=sa.exc.SQLAlchemyError,
                )
        except BaseException:
            drop_quietly(engine, staging)
            for table, _ in also:
                drop_quietly(engine, table)
            raise
    return written


def _stage_ledger(
    engine: Engine,
    staging: sa.Table,
    ledger: str,
    qis: list[str],
    schema: str | None,
    lock: Any,
) -> tuple[sa.Table, str]:
    """The release ledger of the staged rows, in a staging table of its own (dropped with
    the release's if anything fails): the pair :func:`swap_in` replaces with the release."""
    from reident_airflow.sources.connect import reflect_table
    from reident_airflow.sources.db_errors import database_errors
    from reident_airflow.sources.sql_ledger import ledger_columns, write_ledger_rows

    if lock.held:
        drop_stale_staging(engine, ledger, schema)
    table = staging_table(ledger, ledger_columns(), schema, name=staging_name(engine, ledger))
    try:
        create_staging(engine, table)
        # the digests are computed by one statement over the release: an error of the
        # database quotes neither it nor a value (database_errors)
        with database_errors(f"release ledger {ledger!r}"), engine.begin() as conn:
            released = reflect_table(conn, staging.name, schema)
            write_ledger_rows(conn, released, table, qis)
    except BaseException:
        drop_quietly(engine, table)
        raise
    return table, ledger


def _insert_chunks(
    engine: Engine,
    staging: sa.Table,
    frame: pd.DataFrame,
    target: str,
    chunk_rows: int,
    checkpoint: Checkpoint | None,
    guard: InterruptGuard,
) -> int:
    """Insert the rows of ``frame`` into ``staging``, one transaction per ``chunk_rows``, each
    a critical section of ``guard``; returns the rows inserted."""
    names = [c.name for c in staging.columns]
    n = len(frame)
    written = 0
    for start in range(0, n, chunk_rows):
        part = frame.iloc[start : start + chunk_rows]

        def insert(part: pd.DataFrame = part) -> int:
            columns = [_column_values(part.iloc[:, i]) for i in range(len(names))]
            rows = [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]
            with guard.critical(), engine.begin() as conn:
                conn.execute(sa.insert(staging), rows)
            return len(rows)

        step = f"inserting records {start + 1:,}-{start + len(part):,}"
        written += guarded(insert, step, target, written, n)
        if checkpoint is not None:
            checkpoint("chunk", written)
    return written


# ---------------------------------------------------------------------------- release ledger
def ledger_of_file(
    path: str | Path,
    qis: Sequence[str],
    *,
    sep: str = ",",
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> Path:
    """Keep the release ledger of the published file ``path`` (a release published before
    its ledger was kept, or by another writer): ``<path>.ledger.parquet``, written under
    the file's lock (docs/metrics.md §12). Returns the ledger's path."""
    from reident_airflow.sources.files import write_file_ledger
    from reident_airflow.sources.release_ledger import ledger_path

    target = Path(path)
    if not target.is_file():
        raise InvalidInputError(f"{target}: no such file")
    ledger = Path(ledger_path(str(target)))
    with target_lock(target, check_lock_timeout(lock_timeout)):
        write_file_ledger(target, ledger, list(qis), sep=sep)
    return ledger


def ledger_of_table(
    engine: Engine,
    target: str,
    qis: Sequence[str],
    *,
    schema: str | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> str:
    """Keep the release ledger of the published table ``target`` (a release published
    before its ledger was kept, or by another writer, :func:`copy_table_atomic` included):
    the table ``<target>__ledger``, digested by the database and swapped in under the
    target's lock (docs/metrics.md §12). Returns the ledger's name."""
    from reident_airflow.sources.connect import reflect_table
    from reident_airflow.sources.release_ledger import ledger_table

    ledger = ledger_table(target)
    check_target_name(engine, ledger)
    with engine.connect() as conn:
        _check_ledger_qis(qis, [c.name for c in reflect_table(conn, target, schema).columns])
    with (
        interrupt_guard() as guard,
        publishing(
            engine, target, schema, timeout=check_lock_timeout(lock_timeout), guard=guard
        ) as (lock, _),
    ):
        released = sa.Table(target, sa.MetaData(schema=schema))
        with guard.critical():
            table, _ = _stage_ledger(engine, released, ledger, list(qis), schema, lock)
            try:
                swap_in(engine, table, ledger, schema, lock=lock)
            except BaseException:
                drop_quietly(engine, table)
                raise
    return ledger

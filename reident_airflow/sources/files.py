"""Files grouped where they are: the embedded analytical engine (DuckDB).

A CSV file (plain or compressed: gzip, zstd, bzip2), a Parquet file, a directory or glob of
Parquet files (or a frame in memory, :mod:`~reident_airflow.sources.frames`) is handed to an
in-process DuckDB, which
reads it under the reading contract of ``docs/reading.md`` and groups the records itself. Only
aggregates come back to Python: the class-size histogram (for the verdict), or one row per class
with its size, weight sum and per-class sensitive value counts (for the ranking, SUDA2,
registers, individual risk and l-diversity). :class:`FileSource` is the
:class:`~reident_airflow.sources.Source` of files (frames in memory:
:mod:`~reident_airflow.sources.frames`); the ``*_from_file`` functions are its readings, one
call each.

Column names never enter SQL text: every source is exposed to DuckDB with positional column
names (``c0``, ``c1``, ...), and paths and options are bound as statement parameters. Error
messages name the file, the line or the column and counts, never a value: DuckDB's own
messages quote the offending line, so they are never passed on. What DuckDB reads of a source
(its format, its columns: a :class:`FileTable`) is decided before, in
:mod:`~reident_airflow.sources.file_source`, whose names are importable from here.
"""

from __future__ import annotations

import dataclasses
import errno
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

import numpy as np

from reident_airflow.engine.classes import ClassSizes, ClassTable
from reident_airflow.engine.errors import (
    MEMORY_ADVICE,
    EmptyDatasetError,
    InvalidInputError,
    OperationCancelledError,
    ResourceExhaustedError,
    resource_error,
)
from reident_airflow.sources import ClassCounting, Source, scratch
from reident_airflow.sources.cancel import DuckdbQueries
from reident_airflow.sources.file_source import (
    FileTable,
    column_kind,
    file_columns,
    is_parquet,
    open_file,
    resolve_columns,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from reident_airflow.engine.aggregates import ClassAggregates
    from reident_airflow.engine.differencing import ReleaseChanges
    from reident_airflow.engine.identifiers import ColumnPlan, ColumnProfile
    from reident_airflow.sources.fingerprint import FileHashing, InputFingerprint
    from reident_airflow.sources.release_changes import ComparedColumns

__all__ = [
    "FileSource",
    "FileTable",
    "aggregates_from_file",
    "class_table_from_file",
    "file_columns",
    "histogram_from_file",
    "is_parquet",
    "open_file",
    "read_columns",
    "resolve_columns",
]

_MEMORY = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)\s*$", re.IGNORECASE)
_SUPPRESSION_MARKER = "*"


# ------------------------------------------------------------------------------- DuckDB
def _memory_limit(value: str | None) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if not _MEMORY.match(text):
        raise InvalidInputError(f"memory limit must be a size such as 1GB or 512MB, got {value!r}")
    return text


_CONNECTIONS: dict[str | None, tuple[Any, str]] = {}
_CONNECTIONS_LOCK = threading.Lock()


@contextmanager
def _duckdb(memory_limit: str | None = None, queries: DuckdbQueries | None = None) -> Iterator[Any]:
    """A cursor on this process's in-memory DuckDB for that memory limit.

    One database per process and memory limit, opened on first use rather than per reading
    (opening one costs more than grouping a small file), each spilling to a private folder
    (:mod:`~reident_airflow.sources.scratch`: mode 0700, removed at exit and on SIGTERM or
    SIGINT, which also interrupt the query); every reading gets its own cursor, so threads do
    not share one. ``queries``: the source's, whose ``cancel()`` interrupts the cursor (the
    reading then raises :class:`~reident_airflow.engine.errors.OperationCancelledError`).
    """
    import duckdb

    limit = _memory_limit(memory_limit)
    if queries is not None and queries.cancelled:
        raise OperationCancelledError(
            "the reading was cancelled before it began (the source was cancelled: the task's "
            "on_kill)"
        )
    scratch.guard_signals()
    with _CONNECTIONS_LOCK:
        con, spill = _CONNECTIONS.get(limit, (None, ""))
        if con is None or not Path(spill).is_dir():  # a signal removed the folder: a new one
            spill = scratch.private_folder("spill")
            config: dict[str, Any] = {"temp_directory": spill, "preserve_insertion_order": False}
            if limit is not None:
                config["memory_limit"] = limit
            con = duckdb.connect(":memory:", config=config)
            _CONNECTIONS[limit] = (con, spill)
        cursor = con.cursor()
    _READING.spill = spill
    scratch.raised_by_signal()  # forget a signal handled before this reading
    running = queries.running(cursor) if queries is not None else nullcontext()
    try:
        with scratch.active_query(cursor), running:
            yield cursor
    except Exception:
        raised = scratch.raised_by_signal()
        if raised is not None:  # DuckDB's "interrupted" for what the signal's handler raised
            raise raised from None
        if queries is not None and queries.cancelled:
            raise OperationCancelledError(
                "the reading was cancelled while DuckDB ran it (the task's on_kill)"
            ) from None
        raise
    finally:
        cursor.close()


#: The longest CSV record read at first (DuckDB's default): its read buffer is 16 times that,
#: small enough for DuckDB to read a file on all its threads. A longer record makes the
#: reading start again with room for it (:func:`_run`).
_FIRST_LINE_LIMIT = 2_000_000
#: The longest record DuckDB can read (2 GiB - 1).
_LAST_LINE_LIMIT = 2_147_483_647
_LINE_SIZE = re.compile(r"Maximum line size of (\d+) bytes exceeded\. Actual Size:\s*(\d+)")
#: What DuckDB's parallel reader says of a record longer than its buffer.
_FULL_READ = "does not support a full read"


def _relation(source: FileTable, con: Any) -> tuple[str, dict[str, Any]]:
    """SQL for the source with positional column names, and its parameters."""
    cols = ", ".join(f"c{i}" for i in range(len(source.names)))
    if source.kind == "csv":
        sql = (
            "read_csv($path, auto_detect = false, columns = $columns, header = true, "
            "delim = $sep, quote = '\"', escape = '\"', strict_mode = true, "
            "null_padding = false, allow_quoted_nulls = false, "
            "max_line_size = $max_line_size, buffer_size = $buffer_size, "
            "compression = $compression, encoding = 'utf-8')"
        )
        columns = {f"c{i}": "VARCHAR" for i in range(len(source.names))}
        return sql, {
            "path": source.target,
            "columns": columns,
            "sep": source.sep,
            "compression": source.compression,
            **_line_limits(_FIRST_LINE_LIMIT),
        }
    if source.kind == "parquet":
        return f"read_parquet($path) AS src({cols})", {"path": source.target}
    name = f"reident_source_{uuid.uuid4().hex}"
    con.register(name, source.target)
    return name, {}


def _line_limits(longest: int) -> dict[str, int]:
    # DuckDB's own buffer is 16 times the line limit; a buffer smaller than a record makes
    # its parallel reader give up, so the buffer keeps room for several records
    factor = 16 if longest <= _FIRST_LINE_LIMIT else 4
    return {"max_line_size": longest, "buffer_size": factor * longest}


@contextmanager
def _readable(source: FileTable) -> Iterator[FileTable]:
    """The source as DuckDB can read it: a bzip2 CSV decompressed to a private folder
    (:mod:`~reident_airflow.sources.scratch`), removed after the reading."""
    if source.kind != "csv" or source.compression != "bzip2":
        yield source
        return
    import bz2

    folder = scratch.private_folder("copy")
    try:
        copy = Path(folder) / "records.csv"
        try:
            with bz2.open(source.target, "rb") as src, copy.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (OSError, EOFError) as exc:
            raise _os_error(source, exc, folder) from None
        yield dataclasses.replace(source, target=str(copy), compression="none")
    finally:
        scratch.remove_folder(folder)


def _os_error(source: FileTable, exc: BaseException, folder: str) -> Exception:
    """A failure to write the decompressed copy, or to read the compressed file."""
    full = resource_error(exc, folder=folder, doing=f"decompressing {source.label}")
    if full is not None:
        return full
    return InvalidInputError(
        f"{source.label}: cannot be decompressed as bzip2 ({type(exc).__name__}: a damaged "
        "or truncated file?)"
    )


_LINE = re.compile(r"CSV Error on Line: (\d+)")
_COLUMNS = re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)")


def _translate(source: FileTable, exc: Exception) -> Exception:
    """A DuckDB error as an input error naming the file and line, never a value."""
    import duckdb

    text = str(exc)
    if isinstance(exc, duckdb.OutOfMemoryException) and _SPILL_FULL in text:
        return ResourceExhaustedError(
            f"{source.label}: {_DISK_REASONS[errno.ENOSPC]} while the grouping spilled to disk "
            f"in {_spill_folder(text)}: free space there, set TMPDIR to a folder with room, "
            "or raise --memory-limit so that less is spilled"
        )
    if isinstance(exc, (duckdb.OutOfMemoryException, MemoryError)):
        return ResourceExhaustedError(
            f"{source.label}: the grouping ran out of memory: {MEMORY_ADVICE}"
        )
    if not isinstance(exc, duckdb.Error):
        return exc
    disk = _disk_reason(text)
    if disk is not None:
        fix = (
            "raise the file-size limit (ulimit -f), or --memory-limit so that less is spilled"
            if disk == _DISK_REASONS[errno.EFBIG]
            else "free space there, set TMPDIR to a folder with room, or raise --memory-limit "
            "so that less is spilled"
        )
        return ResourceExhaustedError(
            f"{source.label}: {disk} while the grouping spilled to disk in "
            f"{_spill_folder(text)}: {fix}"
        )
    line = _LINE.search(text)
    where = f"line {line.group(1)}" if line else "a record"
    if source.kind == "csv":
        if _LINE_SIZE.search(text):
            return InvalidInputError(
                f"{source.label}: CSV error at {where}: a record longer than 2 GiB, more than "
                "can be read (split the file's longest field)"
            )
        if "unterminated quote" in text:
            return InvalidInputError(
                f"{source.label}: CSV error at {where}: a quote that is never closed, or text "
                "after a closing quote (no record was read; fix the quoting)"
            )
        cols = _COLUMNS.search(text)
        if cols:
            return InvalidInputError(
                f"{source.label}: ragged CSV at {where}: {cols.group(2)} fields where the "
                f"header has {cols.group(1)} (check --sep and quoting)"
            )
        if "state machine reached an invalid state" in text:
            return InvalidInputError(
                f"{source.label}: not RFC 4180 CSV: the parser stopped without a line number "
                "(line ends that mix LF and CRLF in one file are the usual cause; convert them "
                "to one kind)"
            )
        if "unicode" in text.lower() or "utf-8" in text.lower() or "utf8" in text.lower():
            return InvalidInputError(
                f"{source.label}: not UTF-8 text at {where}: convert the file to UTF-8"
            )
        if line:
            return InvalidInputError(f"{source.label}: cannot be read as CSV at {where}")
    if isinstance(exc, duckdb.IOException):
        return InvalidInputError(f"{source.label}: cannot be read ({type(exc).__name__})")
    if isinstance(exc, duckdb.InvalidInputException) and source.kind == "parquet":
        return InvalidInputError(
            f"{source.label}: not a readable Parquet file (or its files do not share their columns)"
        )
    return InvalidInputError(f"{source.label}: cannot be read ({type(exc).__name__})")


#: What the operating system says when a write cannot go on, and how we say it.
_DISK_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EFBIG: "a file reached the file-size limit (ulimit -f)",
}
_DISK_TEXTS = (
    ("no space left on device", _DISK_REASONS[errno.ENOSPC]),
    ("disk quota exceeded", _DISK_REASONS[errno.EDQUOT]),
    ("file too large", _DISK_REASONS[errno.EFBIG]),
)


def _disk_reason(text: str) -> str | None:
    low = text.lower()
    return next((reason for needle, reason in _DISK_TEXTS if needle in low), None)


#: What DuckDB says when the spill folder's disk has no room left (its temp directory is
#: limited to the free space of that disk).
_SPILL_FULL = "failed to offload data block"
_READING = threading.local()


def _spill_folder(text: str) -> str:
    """The spill folder a DuckDB write error is about (the folder's path is no value)."""
    folders = [spill for _, spill in list(_CONNECTIONS.values()) if spill and spill in text]
    if not folders:
        folders = [getattr(_READING, "spill", "")]
    return folders[0] or "the temporary folder (TMPDIR)"


def _run(
    source: FileTable, con: Any, sql: str, params: Mapping[str, Any], *, rows: bool = False
) -> Any:
    """Run a query: an Arrow table, or with ``rows`` a few rows as Python tuples (no Arrow).

    A CSV record longer than the reading's line limit makes the query run again with room
    for it (see :data:`_FIRST_LINE_LIMIT`): no record is too long, up to DuckDB's 2 GiB.
    """
    params = dict(params)
    while True:
        try:
            result = con.sql(sql, params=params)
            return result.fetchall() if rows else result.to_arrow_table()
        except Exception as exc:
            longer = _longer_lines(source, exc, params)
            if longer is None:
                raise _translate(source, exc) from None
            params.update(longer)


def _longer_lines(source: FileTable, exc: Exception, params: Mapping[str, Any]) -> Any:
    """The line limits to read ``source`` again with after DuckDB's "maximum line size"
    error, or ``None`` (not that error, or already at the largest limit)."""
    import duckdb

    if source.kind != "csv" or not isinstance(exc, duckdb.Error):
        return None
    text = str(exc)
    m = _LINE_SIZE.search(text)
    current = int(params.get("max_line_size", _LAST_LINE_LIMIT))
    if current >= _LAST_LINE_LIMIT or (m is None and _FULL_READ not in text):
        return None
    met = 2 * int(m.group(2)) if m else 0
    # room for the record met and for longer ones further on: fewer readings
    return _line_limits(min(_LAST_LINE_LIMIT, max(met, 8 * current)))


def _star(source: FileTable, qis: Sequence[int]) -> str:
    """SQL for "every QI of this class is the suppression marker" (False for non-text QIs)."""
    if not all(source.kinds[i] == "text" for i in qis):
        return "false"
    return "coalesce(" + " and ".join(f"c{i} = '{_SUPPRESSION_MARKER}'" for i in qis) + ", false)"


# ------------------------------------------------------------------------- class tables
def _weight_exprs(wpos: int | None) -> list[tuple[str, str]]:
    """``(alias, aggregate)`` of the weight column: its sum and the counts that check it."""
    if wpos is None:
        return []
    w = f"c{wpos}"
    num = f"TRY_CAST({w} AS DOUBLE)"
    return [
        ("wsum", f"sum({num})"),
        ("wmissing", f"count(*) FILTER (WHERE {w} IS NULL)"),
        ("wtext", f"count(*) FILTER (WHERE {w} IS NOT NULL AND {num} IS NULL)"),
        ("wnonpositive", f"count(*) FILTER (WHERE {num} <= 0)"),
        ("winfinite", f"count(*) FILTER (WHERE NOT isfinite({num}))"),
    ]


def _aggregates_sql(
    rel: str, keys: list[str], svals: list[str], weight_exprs: list[tuple[str, str]]
) -> str:
    """One row per class: its size, the weight aggregates and, per sensitive column ``j``,
    the list ``v{j}`` of its values' counts (one ``GROUPING SETS`` pass over the source)."""
    key_sql = ", ".join(keys)
    if not svals:
        weight_aggs = "".join(f", {expr} AS {alias}" for alias, expr in weight_exprs)
        return f"SELECT {key_sql}, count(*) AS size{weight_aggs} FROM {rel} GROUP BY {key_sql}"
    sets = ", ".join(f"({key_sql}, {s})" for s in svals)
    grouping = f"GROUPING({', '.join(svals)})" if len(svals) > 1 else "0"
    # the grouping set of sensitive column j leaves every other one ungrouped
    g = [
        sum(1 << (len(svals) - 1 - k) for k in range(len(svals)) if k != j)
        for j in range(len(svals))
    ]
    pair_aggs = "".join(f", {expr} AS p_{alias}" for alias, expr in weight_exprs)
    inner = (
        f"SELECT {key_sql}, {grouping} AS g, count(*) AS n{pair_aggs} "
        f"FROM {rel} GROUP BY GROUPING SETS ({sets})"
    )
    outer_w = "".join(f", sum(p_{a}) FILTER (WHERE g = {g[0]}) AS {a}" for a, _ in weight_exprs)
    lists = ", ".join(f"list(n) FILTER (WHERE g = {g[j]}) AS v{j}" for j in range(len(svals)))
    return (
        f"SELECT {key_sql}, sum(n) FILTER (WHERE g = {g[0]}) AS size{outer_w}, {lists} "
        f"FROM ({inner}) GROUP BY {key_sql}"
    )


def _check_weights(table: Any, column: str) -> None:
    from reident_airflow.engine.aggregates import check_weight_counts

    def total(name: str) -> int:
        return int(np.asarray(table.column(name).to_numpy(zero_copy_only=False)).sum())

    check_weight_counts(
        column,
        not_numeric=total("wtext"),
        missing=total("wmissing"),
        not_finite=total("winfinite"),
        nonpositive=total("wnonpositive"),
    )


# --------------------------------------------------------------------------- column profiles
def _literal(text: str) -> str:
    """A constant of ours (a pattern, a ZIP3) as a SQL string literal; never a value."""
    return "'" + text.replace("'", "''") + "'"


def _unique_names(source: FileTable) -> None:
    """Refuse a source whose header repeats a name: its columns cannot all be told apart."""
    seen: dict[str, int] = {}
    for i, name in enumerate(source.names):
        if name in seen:
            raise InvalidInputError(
                f"{source.label}: column {name!r} appears twice (positions {seen[name] + 1} "
                f"and {i + 1}): rename the columns so that each name is one column"
            )
        seen[name] = i


def _text_of(col: str, kind: str) -> str:
    return col if kind == "string" else f"CAST({col} AS VARCHAR)"


def _over_89(col: str, kind: str) -> str:
    from reident_airflow.sources.column_profile import OVER_89_TEXT

    if kind in ("integer", "decimal"):
        return f"{col} > 89"
    if kind == "float":
        return f"({col} > 89 AND isfinite({col}))"
    return f"regexp_matches({_text_of(col, kind)}, {_literal(OVER_89_TEXT)})"


def _zip3(col: str, kind: str) -> str:
    from reident_airflow.sources.column_profile import RESTRICTED_ZIP3_SORTED, zip3_ranges

    if kind == "integer":
        return "(" + " OR ".join(f"{col} BETWEEN {lo} AND {hi}" for lo, hi in zip3_ranges()) + ")"
    codes = ", ".join(_literal(z) for z in RESTRICTED_ZIP3_SORTED)
    return f"substr({_text_of(col, kind)}, 1, 3) IN ({codes})"


#: A cheap condition every value a content pattern matches meets, tested before the
#: regular expression, which then runs only where it holds: the counts stay the pattern's
#: own while most values skip the expression. ``{t}`` is the text; ``strlen`` counts bytes,
#: at least the characters a pattern needs (measured: ``LIKE``, ``contains`` and ``strlen``
#: cost less than a regular expression; counting digits with ``translate`` costs more).
_PREFILTERS = {
    "email": "contains({t}, '@')",
    "url": "(contains({t}, '://') OR {t} ILIKE '%www.%')",
    "ipv4": "{t} LIKE '%.%.%.%'",
    "ipv6": "{t} LIKE '%:%:%'",
    "phone": "strlen({t}) >= 7",
    "card": "strlen({t}) >= 13",
    "iban": "strlen({t}) >= 12",
    "us_ssn": "{t} LIKE '%-%-%'",
    "national_id": "strlen({t}) >= 9",
    # the shortest date element is a month and its year: 5/2025
    "date": "strlen({t}) >= 6",
    "text": "{t} LIKE '% % % %'",
    "address": "contains({t}, ' ')",
}


@dataclasses.dataclass(frozen=True)
class _ProfileLayout:
    """The columns of :func:`_profile_sql`'s rows after the column number and its four
    counts: per pattern any plan counts, its records and distinct values; per kind any plan
    samples, the sample: its values and their records, two lists in the same order; then the
    records over 89 and in restricted ZIP3 areas."""

    patterns: tuple[str, ...]
    sampled: tuple[str, ...]
    sample_size: int

    @classmethod
    def of(cls, plans: Sequence[ColumnPlan]) -> _ProfileLayout:
        from reident_airflow.engine.identifiers import CONTENT_PATTERNS

        used = {k for p in plans for k in p.patterns}
        sampled = {k for p in plans for k in p.sample}
        return cls(
            tuple(k for k in CONTENT_PATTERNS if k in used),
            tuple(k for k in CONTENT_PATTERNS if k in sampled),
            max([1, *(p.sample_size for p in plans)]),
        )


def _profile_sql(
    rel: str, plans: Sequence[ColumnPlan], pos: Sequence[int], *, one_read: bool = False
) -> str:
    """One statement counting every plan, one row per column back.

    Each column is grouped on its own: one row per distinct value (NULL included) and its
    records, with its value's text ``t`` (for the patterns) and the over-89 and ZIP3
    conditions of its column; each pattern the column counts is matched once per distinct
    value (after a cheap necessary condition, :data:`_PREFILTERS`); then the column's records,
    nulls, distinct values, singletons, records and distinct values per pattern, the sampled
    values (the first in the order of their bytes, as on every backend: no full sort), values
    over 89 and restricted ZIP3 codes are counted (:func:`_profile_aggregates`).

    The columns are a ``UNION ALL`` of one such aggregate per column, each reading its own
    column (Parquet and frames read a column alone) and counting only what its plan asks;
    with ``one_read`` (a CSV file, which every reading parses whole) ``GROUPING SETS`` over
    one reading give the rows of every column, each told its column ``j`` by ``GROUPING()``,
    and one ``GROUP BY j`` counts them all. Measured (``bench/README.md``, "bench_scan.py"):
    on a 10M-row Parquet file of 9 columns, 0.74 s of CPU per column against 0.94 s in
    grouping sets; on its CSV form, 3.4 s in grouping sets against 11.7 s per column."""
    layout = _ProfileLayout.of(plans)
    cols = [f"c{p}" for p in pos]
    texts = [_text_of(c, p.kind) if p.patterns else None for c, p in zip(cols, plans, strict=True)]
    over = [_over_89(c, p.kind) if p.over_89 else None for c, p in zip(cols, plans, strict=True)]
    zips = [_zip3(c, p.kind) if p.zip3 else None for c, p in zip(cols, plans, strict=True)]

    if one_read:
        flags = ", ".join(f"GROUPING({c}) AS g{j}" for j, c in enumerate(cols))
        sets = ", ".join(f"({c})" for c in cols)
        inner = (
            f"SELECT {flags}, {', '.join(cols)}, count(*) AS n FROM {rel} "
            f"GROUP BY GROUPING SETS ({sets})"
        )

        def per_column(cells: Sequence[str | None], otherwise: str) -> str:
            branches = [f"WHEN g{j} = 0 THEN {cell}" for j, cell in enumerate(cells) if cell]
            return f"CASE {' '.join(branches)} ELSE {otherwise} END" if branches else otherwise

        told = (
            f"SELECT {per_column([str(j) for j in range(len(cols))], '-1')} AS j, n, "
            f"{per_column([f'{c} IS NULL' for c in cols], 'false')} AS is_null, "
            f"{per_column(texts, 'NULL')} AS t, "
            f"{per_column(over, 'false')} AS o, {per_column(zips, 'false')} AS z FROM ({inner})"
        )
        middle = _with_matches(told, {k: _among(plans, k) for k in layout.patterns})
        return f"SELECT {', '.join(_profile_aggregates(layout, plans))} FROM ({middle}) GROUP BY j"
    branches = []
    for j, (c, plan) in enumerate(zip(cols, plans, strict=True)):
        t = texts[j] or "NULL::VARCHAR"
        told = (
            f"SELECT n, {c} IS NULL AS is_null, {t} AS t, "
            f"{over[j] or 'false'} AS o, {zips[j] or 'false'} AS z "
            f"FROM (SELECT {c}, count(*) AS n FROM {rel} GROUP BY {c})"
        )
        aggs = ", ".join(_profile_aggregates(layout, [plan], j))
        counted = {k: "true" if k in plan.patterns else "false" for k in layout.patterns}
        branches.append(f"SELECT {aggs} FROM ({_with_matches(told, counted)})")
    return " UNION ALL ".join(branches)


def _profile_aggregates(
    layout: _ProfileLayout, plans: Sequence[ColumnPlan], j: int | None = None
) -> list[str]:
    """The aggregates of :func:`_profile_sql`'s rows (:class:`_ProfileLayout`): over the rows
    of every column grouped by ``j``, or over one column's (``j`` its number), where what
    its plan does not count is a constant."""
    plan = plans[0] if j is not None else None
    aggs = [
        "j" if j is None else str(j),
        "sum(n)",
        "coalesce(sum(n) FILTER (WHERE is_null), 0)",
        "count(*) FILTER (WHERE NOT is_null)",
        "count(*) FILTER (WHERE NOT is_null AND n = 1)",
    ]
    for k in layout.patterns:
        if plan is None or k in plan.patterns:
            aggs += [f"coalesce(sum(n) FILTER (WHERE m_{k}), 0)", f"count(*) FILTER (WHERE m_{k})"]
        else:
            aggs += ["0", "0"]
    # the sample as two lists in the same order, the values and their records (measured:
    # half the time of one list of structs, 0.13 s against 0.29 s for 10M values)
    for k in layout.sampled:
        if plan is None or k in plan.sample:
            where = f"m_{k}" if plan is not None else f"m_{k} AND {_among(plans, k, sampled=True)}"
            aggs += [
                f"min(t, {layout.sample_size}) FILTER (WHERE {where})",
                f"min_by(n, t, {layout.sample_size}) FILTER (WHERE {where})",
            ]
        else:
            aggs += ["NULL::VARCHAR[]", "NULL::BIGINT[]"]
    aggs += [
        "coalesce(sum(n) FILTER (WHERE o), 0)" if plan is None or plan.over_89 else "0",
        "coalesce(sum(n) FILTER (WHERE z), 0)" if plan is None or plan.zip3 else "0",
    ]
    return aggs


#: Patterns rarely matched by the same value, tried together first (:func:`_with_matches`).
_GATED = ("ipv4", "ipv6", "card", "iban", "us_ssn", "national_id", "address")


def _with_matches(rows: str, counted: Mapping[str, str]) -> str:
    """``rows`` (with their text ``t``) and a flag ``m_<kind>`` per pattern of ``counted``
    (kind -> the condition on the row under which it is counted: ``"true"``, ``"false"`` or
    one on ``j``): whether ``t`` matches the pattern's regular expression, which is evaluated
    only where its cheap necessary condition (:data:`_PREFILTERS`) holds.

    A call of a regular expression costs about the same whatever the expression (measured in
    DuckDB: 0.80 s for 10M e-mail addresses, an expression that never matches as much as
    five of ours in one alternation). So where two or more of the :data:`_GATED` patterns
    pass their conditions, their alternation is evaluated first (a value matches it if and
    only if it matches one of them), and each of them only where it matched: a value that
    matches none of them costs one call instead of several."""
    from reident_airflow.engine.identifiers import CONTENT_PATTERNS

    def pre(k: str) -> str:
        cond = _PREFILTERS[k].format(t="t")
        return cond if counted[k] == "true" else f"({counted[k]} AND {cond})"

    live = [k for k, c in counted.items() if c != "false"]
    gated = [k for k in live if k in _GATED]
    flags = []
    if len(gated) >= 2:
        rows = f"SELECT *, {', '.join(f'{pre(k)} AS p_{k}' for k in gated)} FROM ({rows})"
        several = " + ".join(f"p_{k}::INTEGER" for k in gated)
        either = _literal("|".join(f"(?:{CONTENT_PATTERNS[k]})" for k in gated))
        rows = (
            f"SELECT *, CASE WHEN {several} >= 2 THEN regexp_matches(t, {either}) "
            f"ELSE true END AS g FROM ({rows})"
        )
    else:
        gated = []
    for k in counted:
        if k in gated:
            cond = f"p_{k} AND g"
        elif k in live:
            cond = pre(k)
        else:
            flags.append(f"false AS m_{k}")
            continue
        flags.append(
            f"CASE WHEN {cond} THEN regexp_matches(t, {_literal(CONTENT_PATTERNS[k])}) "
            f"ELSE false END AS m_{k}"
        )
    return f"SELECT *{''.join(', ' + f for f in flags)} FROM ({rows})"


def _among(plans: Sequence[ColumnPlan], kind: str, sampled: bool = False) -> str:
    """The condition on ``j`` of the columns that count (or sample) ``kind``."""
    js = [j for j, p in enumerate(plans) if kind in (p.sample if sampled else p.patterns)]
    return "true" if len(js) == len(plans) else f"j IN ({', '.join(map(str, js))})"


def _profiles_of(
    rows: Sequence[Sequence[Any]], plans: Sequence[ColumnPlan]
) -> tuple[ColumnProfile, ...]:
    """The profiles read off the rows of :func:`_profile_sql` (one per column; none for a
    table without records)."""
    from reident_airflow.sources.column_profile import profile_from_counts

    layout = _ProfileLayout.of(plans)
    width = 4 + 2 * len(layout.patterns) + 2 * len(layout.sampled) + 2
    by_column = {int(row[0]): list(row[1:]) for row in rows}
    out = []
    for j, plan in enumerate(plans):
        cells = by_column.get(j, [0] * 4 + [0, 0] * len(layout.patterns) + [None] * (width - 4))
        records, nulls, distinct, singletons = (int(c or 0) for c in cells[:4])
        counted = {
            k: (int(cells[4 + 2 * i] or 0), int(cells[5 + 2 * i] or 0))
            for i, k in enumerate(layout.patterns)
        }
        base = 4 + 2 * len(layout.patterns)
        lists = {
            k: zip(cells[base + 2 * i] or (), cells[base + 2 * i + 1] or (), strict=True)
            for i, k in enumerate(layout.sampled)
        }
        out.append(
            profile_from_counts(
                plan,
                records=records,
                nulls=nulls,
                distinct=distinct,
                singletons=singletons,
                matches={k: counted[k][0] for k in plan.patterns},
                samples={k: [(str(v), int(n)) for v, n in lists[k]] for k in plan.sample},
                matched_distinct={k: counted[k][1] for k in plan.sample},
                over_89=int(cells[width - 2] or 0),
                zip3=int(cells[width - 1] or 0),
            )
        )
    return tuple(out)


# ------------------------------------------------------------------------------- the source
class FileSource(ClassCounting):
    """A file -- CSV (also compressed), Parquet, a directory or glob of Parquet files -- read
    and grouped by the embedded DuckDB: the :class:`~reident_airflow.sources.Source` of files
    (and, through :class:`~reident_airflow.sources.frames.FrameSource`, of frames in memory).

    Each reading describes the file again (:func:`open_file`: its header or Parquet schema)
    and runs on a cursor of this process's DuckDB for ``memory_limit``; nothing is held
    between readings but the hash :meth:`hash_ahead` started, which :meth:`close` stops.
    """

    def __init__(
        self,
        path: str | Path | None,
        *,
        sep: str = ",",
        memory_limit: str | None = None,
        label: str | None = None,
    ) -> None:
        self.path = path
        self.sep = sep
        self.memory_limit = memory_limit
        self.label = str(path) if label is None else label
        self._hashing: FileHashing | None = None
        self._queries = DuckdbQueries()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the hash :meth:`hash_ahead` started and :meth:`fingerprint` did not take;
        each reading opened and closed its own cursor."""
        if self._hashing is not None:
            self._hashing.cancel()
            self._hashing = None

    def cancel(self) -> None:
        """Interrupt the DuckDB queries the source's readings run now, from any thread; the
        reading raises :class:`~reident_airflow.engine.errors.OperationCancelledError`, as
        does every later reading of this source."""
        self._queries.cancel()

    def _opened(self) -> FileTable:
        return open_file(self._file(), sep=self.sep)

    # ------------------------------------------------------------------------ counting
    def histogram(self, qis: Sequence[str]) -> ClassSizes:
        """The class-size histogram, counted by DuckDB: one row per distinct size."""
        source = self._opened()
        pos = source.grouped(qis)
        keys = ", ".join(f"c{i}" for i in pos)
        with _duckdb(self.memory_limit, self._queries) as con, _readable(source) as readable:
            rel, params = _relation(readable, con)
            sql = (
                f"SELECT size, star, count(*) AS classes FROM (SELECT count(*) AS size, "
                f"{_star(source, pos)} AS star FROM {rel} GROUP BY {keys}) GROUP BY size, star "
                "ORDER BY size"
            )
            rows = _run(source, con, sql, params, rows=True)
        size = np.array([r[0] for r in rows], dtype=np.int64)
        star = np.array([bool(r[1]) for r in rows], dtype=bool)
        count = np.array([r[2] for r in rows], dtype=np.int64)
        names = tuple(source.names[i] for i in pos)
        excluded = int((size[star] * count[star]).sum())
        if size.shape[0] == 0:
            raise EmptyDatasetError(f"{source.label}: the table has no records: nothing to assess")
        if star.all():
            raise EmptyDatasetError(
                f"{source.label}: every record ({excluded}) is fully suppressed ('*' in every "
                "quasi-identifier): there is nothing to assess"
            )
        return ClassSizes(names, size[~star], count[~star], excluded_records=excluded)

    def class_table(self, qis: Sequence[str]) -> ClassTable:
        """The class table on the given QIs."""
        table: ClassTable = self.aggregates(qis).table
        return table

    def aggregates(
        self, qis: Sequence[str], *, weight: str | None = None, sensitive: Sequence[str] = ()
    ) -> ClassAggregates:
        """The class table with per-class weight sums and sensitive value counts.

        DuckDB groups the records; one row per class comes back, with its size, the sum of its
        weights and, per sensitive column, the counts of its distinct values (class sizes,
        weight checks and sums, and per-class value counts, in one DuckDB query).
        """
        from reident_airflow.engine.aggregates import check_extra_columns

        source = self._opened()
        pos = source.grouped(qis)
        names = tuple(source.names[i] for i in pos)
        if isinstance(sensitive, str):
            sensitive = [sensitive]
        spos = [source.grouped([s], kind="sensitive column")[0] for s in sensitive]
        weight, extra = (
            check_extra_columns(
                names, source.names, weight=weight, sensitive=[source.names[i] for i in spos]
            )
            if (weight is not None or sensitive)
            else (None, ())
        )
        wpos = None if weight is None else source.positions([weight], kind="weight column")[0]
        if wpos is not None and source.kinds[wpos] not in ("text", "number"):
            raise InvalidInputError(
                f"weight column {weight!r} is not numeric (neither numbers nor text holding them)"
            )
        keys = [f"c{i}" for i in pos]
        with _duckdb(self.memory_limit, self._queries) as con, _readable(source) as readable:
            rel, params = _relation(readable, con)
            sql = _aggregates_sql(rel, keys, [f"c{i}" for i in spos], _weight_exprs(wpos))
            table = _run(source, con, sql, params)
        if table.num_rows == 0:
            raise EmptyDatasetError(f"{source.label}: the table has no records: nothing to assess")
        if wpos is not None:
            _check_weights(table, source.names[wpos])
        from reident_airflow.engine.aggregates import aggregate_arrow

        return aggregate_arrow(table, keys, names, weight=weight, extra=list(extra))

    # --------------------------------------------------------------------- identifier scan
    def column_kinds(self) -> dict[str, str]:
        """Each column's kind (:data:`~reident_airflow.engine.identifiers.COLUMN_KINDS`), in
        the source's order: every CSV column is ``string`` (CSV holds text, read as text);
        a Parquet file's or a frame's from the schema DuckDB reads (a ``LIMIT 0`` query). A
        header that repeats a name is refused."""
        source = self._opened()
        _unique_names(source)
        if source.kind == "csv":
            return dict.fromkeys(source.names, "string")
        with _duckdb(self.memory_limit, self._queries) as con, _readable(source) as readable:
            rel, params = _relation(readable, con)
            table = _run(source, con, f"SELECT * FROM {rel} LIMIT 0", params)
        return {
            name: column_kind(t) for name, t in zip(source.names, table.schema.types, strict=True)
        }

    def profile(
        self, plans: Sequence[ColumnPlan], *, approximate: bool = False
    ) -> tuple[ColumnProfile, ...]:
        """What each plan asks of its column, counted by DuckDB in one statement
        (:func:`_profile_sql`): one row of aggregates comes back, and the sampled values
        (in memory only). Counts are exact: ``approximate`` is refused."""
        from reident_airflow.sources.column_profile import check_plans

        plans = check_plans(plans, approximate=approximate, exact_only=self.label)
        if not plans:
            return ()
        source = self._opened()
        pos = source.grouped([p.column for p in plans], kind="column")
        with _duckdb(self.memory_limit, self._queries) as con, _readable(source) as readable:
            rel, params = _relation(readable, con)
            sql = _profile_sql(rel, plans, pos, one_read=source.kind == "csv")
            rows = _run(source, con, sql, params, rows=True)
        return _profiles_of(rows, plans)

    # ----------------------------------------------------------------------------- rows
    def rows(
        self,
        columns: Sequence[str] | None = None,
        *,
        categorical: Sequence[str] = (),
        dtype_backend: Literal["numpy", "pyarrow"] = "numpy",
        allow_empty: bool = False,
    ) -> pd.DataFrame:
        """Every column of a CSV (as text) or Parquet file (or of a frame, as
        :mod:`~reident_airflow.sources.frames` turns it over), read under ``docs/reading.md``, or
        only ``columns`` (the advice on a k breach reads the QIs alone): the rows Datafly
        generalizes and direct match compares.

        - ``categorical``: text columns that come as pandas Categoricals (dictionary-encoded by
          Arrow): the same values, grouped on integer codes; Datafly passes its QIs here.
        - ``dtype_backend="pyarrow"``: every column Arrow-backed (``pd.ArrowDtype``), as the
          direct-match engine compares them, with no conversion to numpy or Python objects
          (``categorical`` is then not used).
        - ``allow_empty``: a file without records is returned as an empty frame (the direct-match
          engine names the empty side itself); otherwise it is an :class:`EmptyDatasetError`.
        """
        import pandas as pd

        source = self._opened()
        names = list(source.names) if columns is None else list(columns)
        table = _read_columns(source, names, self._queries)
        if table.num_rows == 0 and not allow_empty:
            where = self.label if self.path is None else Path(self.path)
            raise EmptyDatasetError(f"{where}: the table has no records")
        if dtype_backend == "pyarrow":
            arrow_frame: pd.DataFrame = table.to_pandas(types_mapper=pd.ArrowDtype)
            return arrow_frame
        encoded: dict[str, pd.Categorical] = {}
        for name in dict.fromkeys(categorical):
            if name in table.column_names:
                values = _categorical(table.column(name))
                if values is not None:
                    encoded[name] = values
        frame: pd.DataFrame = table.drop_columns(list(encoded)).to_pandas()
        if encoded:
            frame = pd.DataFrame(
                {
                    name: encoded[name] if name in encoded else frame[name]
                    for name in table.column_names
                },
                index=frame.index,
            )
        return frame

    def release_rows(
        self, qis: Sequence[str], columns: Sequence[str] | None = None
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The rows Datafly generalizes (:meth:`rows`, the QIs as Categoricals), and no
        column types: a file's release is written with the types of its values."""
        return self.rows(columns, categorical=qis), {}

    def comparison_rows(self) -> pd.DataFrame:
        """One side of direct match: every column Arrow-backed, a file without records an
        empty frame (:meth:`rows`)."""
        return self.rows(dtype_backend="pyarrow", allow_empty=True)

    def sibling(self, name: str) -> FileSource | None:
        """The file (or Parquet folder, or glob) ``name``, read as this source is (``sep``,
        ``memory_limit``), wherever it is; ``None`` when no such file or folder exists (a
        glob is read as given: what it matches shows at reading)
        (:class:`~reident_airflow.sources.HasSiblings`)."""
        if not Path(name).exists() and not _is_glob(name):
            return None
        return FileSource(name, sep=self.sep, memory_limit=self.memory_limit)

    def _file(self) -> Path:
        if self.path is None:
            raise TypeError(f"{self.label} is a frame: it has no file")
        return Path(self.path)

    # ---------------------------------------------------------------------- fingerprint
    def fingerprint(self, rows: int | None = None) -> InputFingerprint | None:
        """The file's (or the directory's) hash with ``rows``, the records read (a CSV's
        count needs a full parse: the reader's); ``None`` for a glob of Parquet files, which
        names no one file or directory, and for a frame."""
        if self.path is None or _is_glob(str(self.path)):
            return None
        if self._hashing is not None:
            hashing, self._hashing = self._hashing, None
            return hashing.fingerprint(rows)
        from reident_airflow.sources.fingerprint import fingerprint_file

        return fingerprint_file(self.path, rows=rows)

    def hash_ahead(self) -> None:
        """Start hashing the file (or the directory) for :meth:`fingerprint` now, on a
        thread, so that it is read beside the readings that follow rather than after them
        (:class:`~reident_airflow.sources.fingerprint.FileHashing`); the fingerprint is the
        same. Nothing for a glob or a frame, or when a hash is already under way."""
        if self.path is None or _is_glob(str(self.path)) or self._hashing is not None:
            return
        from reident_airflow.sources.fingerprint import FileHashing

        self._hashing = FileHashing(self.path)

    # ----------------------------------------------------------------- release comparison
    def release_changes(
        self, previous: Source, qis: Sequence[str], columns: Sequence[str] | None = None
    ) -> ReleaseChanges:
        """The arrivals and departures of this release (the candidate) against ``previous``,
        a file or a frame too, grouped on ``qis`` and counted by DuckDB in one statement over
        both (:func:`_changes_sql`; the shape:
        :mod:`~reident_airflow.sources.release_changes`). Compared on ``columns``, by default
        every column both hold. Only one row per distinct ``(a(c), d(c))`` pair comes back.
        A previous release of another backend is refused. ``previous`` may be a release
        ledger (:func:`write_file_ledger`) instead: the same counts, from the digests."""
        from reident_airflow.sources.release_changes import (
            changes_from_counts,
            check_kinds,
            compared_columns,
            other_backend,
        )
        from reident_airflow.sources.release_ledger import is_ledger

        if not isinstance(previous, FileSource):
            raise other_backend(self.label, previous, "files and frames, read by DuckDB")
        new, old = self._opened(), previous._opened()
        if old.kind == "parquet" and is_ledger(old.names):
            return _ledger_changes(new, old, qis, columns, self.memory_limit)
        labels = (new.label, old.label)
        compared = compared_columns(new.names, old.names, qis, columns, labels=labels)
        for side, pos in ((new, compared.candidate), (old, compared.previous)):
            _refuse_nested(side, pos)
        with (
            _duckdb(self.memory_limit, self._queries) as con,
            _readable(new) as new_readable,
            _readable(old) as old_readable,
        ):
            relations = [_relation(t, con) for t in (new_readable, old_readable)]
            kinds = [
                _kinds_of(t, con, rel, params)
                for t, (rel, params) in zip((new, old), relations, strict=True)
            ]
            check_kinds(compared, kinds[0], kinds[1], labels=labels)
            text_qis = all(kinds[0][compared.candidate[q]] == "string" for q in compared.qis)
            rows = _run_pair(
                (new, old),
                con,
                relations,
                lambda rels: _changes_sql(rels[0], rels[1], compared, text_qis=text_qis),
            )
        return changes_from_counts(compared.qi_names, rows, compared)


def _categorical(column: pa.ChunkedArray) -> pd.Categorical | None:
    """A text column as a pandas Categorical with plain-object categories (``None`` if it is
    not text). Grouping then works on its integer codes: no Python string per row is made."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

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


def _is_glob(spec: str) -> bool:
    """Whether a path is a glob (``data/*.parquet``) rather than a path that exists."""
    return not Path(spec).exists() and any(ch in spec for ch in "*?[")


# ------------------------------------------------------------------------------ functions
def histogram_from_file(
    path: str | Path, qis: Sequence[str], *, sep: str = ",", memory_limit: str | None = None
) -> ClassSizes:
    """The class-size histogram of a file, counted by DuckDB: one row per distinct size."""
    return FileSource(path, sep=sep, memory_limit=memory_limit).histogram(qis)


def aggregates_from_file(
    path: str | Path,
    qis: Sequence[str],
    *,
    sep: str = ",",
    weight: str | None = None,
    sensitive: Sequence[str] = (),
    memory_limit: str | None = None,
) -> ClassAggregates:
    """The class table of a file with per-class weight sums and sensitive value counts.

    DuckDB groups the records; one row per class comes back, with its size, the sum of its
    weights and, per sensitive column, the counts of its distinct values. Returns a
    :class:`~reident_airflow.engine.aggregates.ClassAggregates`.
    """
    source = FileSource(path, sep=sep, memory_limit=memory_limit)
    return source.aggregates(qis, weight=weight, sensitive=sensitive)


def class_table_from_file(
    path: str | Path, qis: Sequence[str], *, sep: str = ",", memory_limit: str | None = None
) -> ClassTable:
    """The class table of a CSV or Parquet file on the given QIs."""
    return FileSource(path, sep=sep, memory_limit=memory_limit).class_table(qis)


# ------------------------------------------------------------------------------ records
def read_columns(
    path: str | Path,
    columns: Sequence[str],
    *,
    sep: str = ",",
    dictionary: bool = True,
) -> Any:
    """Read the named columns of a CSV or Parquet file into an Arrow table (names as given).

    The records are read by DuckDB under the reading contract (CSV values as text, an empty
    unquoted field missing). ``dictionary`` is accepted for compatibility and ignored.
    """
    del dictionary
    return _read_columns(open_file(path, sep=sep), columns)


def _read_columns(
    source: FileTable, columns: Sequence[str], queries: DuckdbQueries | None = None
) -> Any:
    """The named columns of a described file or frame as an Arrow table (names as given)."""
    pos = source.positions(columns, kind="column")
    select = ", ".join(f"c{i}" for i in pos)
    with _duckdb(None, queries) as con, _readable(source) as readable:
        rel, params = _relation(readable, con)
        table = _run(source, con, f"SELECT {select} FROM {rel}", params)
    return table.rename_columns([source.names[i] for i in pos])


# ------------------------------------------------------------------- release comparison
def _refuse_nested(source: FileTable, pos: Sequence[int]) -> None:
    """A nested compared column (a struct, list, map or union) is refused, as a QI is."""
    for i in pos:
        if source.kinds[i] == "nested":
            raise InvalidInputError(
                f"{source.label}: compared column {source.names[i]!r} is a nested column "
                f"({source.types[i]}), whose values are not grouped: flatten it, cast it to "
                "text, or leave it out with columns="
            )


def _kinds_of(source: FileTable, con: Any, rel: str, params: Mapping[str, Any]) -> list[str]:
    """Each column's kind (``string`` for every CSV column), from a ``LIMIT 0`` query."""
    if source.kind == "csv":
        return ["string"] * len(source.names)
    table = _run(source, con, f"SELECT * FROM {rel} LIMIT 0", params)
    return [column_kind(t) for t in table.schema.types]


_PARAMETER = re.compile(r"\$(\w+)")


def _prefixed(rel: str, params: Mapping[str, Any], prefix: str) -> tuple[str, dict[str, Any]]:
    """A relation's SQL and parameters with every parameter renamed ``$<prefix>_<name>``, so
    that two relations meet in one statement (the SQL is ours: paths are parameters)."""
    return (
        _PARAMETER.sub(lambda m: f"${prefix}_{m.group(1)}", rel),
        {f"{prefix}_{k}": v for k, v in params.items()},
    )


def _changes_sql(new: str, old: str, compared: ComparedColumns, *, text_qis: bool) -> str:
    """The release comparison over the candidate's relation ``new`` and the previous
    release's ``old`` (:mod:`~reident_airflow.sources.release_changes`): rows
    ``(a, d, suppressed, classes, n, p)``, one per distinct ``(a(c), d(c), suppressed)``."""
    keys = [f"k{j}" for j in range(len(compared.names))]
    key_list = ", ".join(keys)
    qi_list = ", ".join(keys[q] for q in compared.qis)
    new_cols = ", ".join(f"c{i} AS k{j}" for j, i in enumerate(compared.candidate))
    old_cols = ", ".join(f"c{i} AS k{j}" for j, i in enumerate(compared.previous))
    star = (
        "coalesce("
        + " AND ".join(f"{keys[q]} = '{_SUPPRESSION_MARKER}'" for q in compared.qis)
        + ", false)"
        if text_qis
        else "false"
    )
    return (
        f"SELECT a, d, {star} AS star, count(*) AS classes, sum(n) AS n, sum(p) AS p FROM ("
        f"SELECT {qi_list}, sum(CASE WHEN n > p THEN n - p ELSE 0 END) AS a, "
        "sum(CASE WHEN p > n THEN p - n ELSE 0 END) AS d, sum(n) AS n, sum(p) AS p FROM ("
        f"SELECT {key_list}, count(*) FILTER (WHERE s) AS n, count(*) FILTER (WHERE NOT s) AS p "
        f"FROM (SELECT {new_cols}, true AS s FROM {new} "
        f"UNION ALL SELECT {old_cols}, false AS s FROM {old}) GROUP BY {key_list}"
        f") GROUP BY {qi_list}) GROUP BY 1, 2, 3"
    )


def _run_pair(
    sources: tuple[FileTable, FileTable],
    con: Any,
    relations: Sequence[tuple[str, dict[str, Any]]],
    statement: Callable[[list[str]], str],
) -> list[tuple[Any, ...]]:
    """Run a statement over two relations (``statement(rels)`` makes its SQL): its rows.

    A CSV record longer than the line limit makes the statement run again with room for it
    on both sides (:func:`_longer_lines`). Any other error is said of the release that
    causes it: each side is read alone (a count) to find it; the candidate's label names an
    error neither side causes alone."""
    params = [dict(p) for _, p in relations]
    while True:
        named = [
            _prefixed(rel, p, prefix)
            for (rel, _), p, prefix in zip(relations, params, ("new", "old"), strict=True)
        ]
        try:
            sql = statement([r for r, _ in named])
            result = con.sql(sql, params={**named[0][1], **named[1][1]})
            rows: list[tuple[Any, ...]] = result.fetchall()
            return rows
        except Exception as exc:
            longer = [_longer_lines(s, exc, p) for s, p in zip(sources, params, strict=True)]
            if any(x is not None for x in longer):
                for p, more in zip(params, longer, strict=True):
                    if more is not None:
                        p.update(more)
                continue
            translated = _translate(sources[0], exc)
            if isinstance(translated, ResourceExhaustedError):
                raise translated from None
            for source, (rel, _), p in zip(sources, relations, params, strict=True):
                _run(source, con, f"SELECT count(*) FROM {rel}", p, rows=True)
            raise translated from None


# ---------------------------------------------------------------------- release ledger
def _types_of(source: FileTable, con: Any, rel: str, params: Mapping[str, Any]) -> list[str]:
    """Each column's type as Arrow names it (``string`` for every CSV column)."""
    if source.kind == "csv":
        return ["string"] * len(source.names)
    table = _run(source, con, f"SELECT * FROM {rel} LIMIT 0", params)
    return [str(t) for t in table.schema.types]


def _encoded(col: str, kind: str) -> str:
    """One value's encoding for the ledger's digests
    (:mod:`~reident_airflow.sources.release_ledger`): equal exactly when DuckDB groups the
    values as one. Floats as ``x + 0`` (``-0.0`` is ``0.0``), every NaN one text; bytes in
    hexadecimal; timestamps as nanoseconds since the epoch, whatever the time zone."""
    if kind == "float":
        text = f"CAST({col} + 0.0 AS VARCHAR)"
        value = f"CASE WHEN isnan({col}) THEN 'nan' ELSE {text} END"
    elif kind == "binary":
        value = f"hex({col})"
    elif kind == "timestamp":
        value = f"CAST(epoch_ns({col}) AS VARCHAR)"
    else:
        value = f"CAST({col} AS VARCHAR)"
    return f"CASE WHEN {col} IS NULL THEN 'N' ELSE 'V' || length({value}) || ':' || {value} END"


def _digests_sql(
    rel: str, pos: Sequence[int], qis: Sequence[int], kinds: Sequence[str], *, text_qis: bool
) -> str:
    """Per row of ``rel``: ``row_digest`` over the columns at ``pos`` (in that order),
    ``class_digest`` over those at ``qis`` (positions in ``rel`` too), ``star``."""

    def digest(columns: Sequence[int]) -> str:
        return "sha256(" + " || ".join(_encoded(f"c{i}", kinds[i]) for i in columns) + ")"

    star = _star_of(qis) if text_qis else "false"
    return (
        f"SELECT {digest(pos)} AS row_digest, {digest(qis)} AS class_digest, "
        f"{star} AS star FROM {rel}"
    )


def _star_of(qis: Sequence[int]) -> str:
    return "coalesce(" + " AND ".join(f"c{i} = '{_SUPPRESSION_MARKER}'" for i in qis) + ", false)"


def write_file_ledger(
    path: str | Path, ledger: str | Path, qis: Sequence[str], *, sep: str = ","
) -> int:
    """Write the release ledger of the released file ``path`` to ``ledger``, a Parquet file
    (:mod:`~reident_airflow.sources.release_ledger`): DuckDB digests every row of the file as
    written and writes the ledger next to it, in a temporary file renamed over ``ledger``.
    The caller holds the target's lock. Returns the rows digested."""
    import os

    from reident_airflow._atomic import remove_stale_temporaries, temp_name
    from reident_airflow.sources.release_ledger import COLUMNS, LedgerAbout, header_digest

    target = Path(ledger)
    # the temporary file of a write killed outright (kill -9: no handler runs) goes now
    remove_stale_temporaries(target)
    with FileSource(path, sep=sep) as released:
        table = released._opened()
        _refuse_nested(table, range(len(table.names)))
        qi_pos = table.positions(qis)
        with _duckdb(released.memory_limit) as con, _readable(table) as readable:
            rel, params = _relation(readable, con)
            kinds = _kinds_of(table, con, rel, params)
            types = _types_of(table, con, rel, params)
            about = LedgerAbout(
                table.names, tuple(types), tuple(table.names[i] for i in qi_pos)
            ).to_json()
            text_qis = all(kinds[i] == "string" for i in qi_pos)
            rows = _digests_sql(rel, range(len(table.names)), qi_pos, kinds, text_qis=text_qis)
            kind, row, cls, star, about_col = COLUMNS
            sql = (
                f"SELECT CAST(0 AS TINYINT) AS {kind}, CAST($header AS VARCHAR) AS {row}, "
                f"CAST(NULL AS VARCHAR) AS {cls}, CAST(NULL AS TINYINT) AS {star}, "
                f"CAST($about AS VARCHAR) AS {about_col} UNION ALL "
                f"SELECT CAST(1 AS TINYINT), row_digest, class_digest, CAST(star AS TINYINT), "
                f"CAST(NULL AS VARCHAR) FROM ({rows})"
            )
            tmp = temp_name(target)
            try:
                _run(
                    table,
                    con,
                    f"COPY ({sql}) TO {_literal(str(tmp))} (FORMAT parquet)",
                    {**params, "about": about, "header": header_digest(about)},
                    rows=True,
                )
                with open(tmp, "rb") as fh:
                    os.fsync(fh.fileno())
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
            count = _run(table, con, f"SELECT count(*) FROM {rel}", params, rows=True)
    return int(count[0][0])


def _ledger_header(con: Any, ledger: FileTable) -> tuple[Any, Any]:
    """The ledger's header ``(about, digest)``, once every row of the ledger has been read
    and checked (a digest of 64 hexadecimal digits, ``star`` 0 or 1): a ledger that cannot
    be read whole (a damaged page) or holds rows no ledger has is refused here, naming the
    ledger, before the candidate is read."""
    import duckdb

    try:
        found = con.sql(
            "SELECT count(*) FILTER (WHERE kind = 0), any_value(about) FILTER (WHERE kind = 0), "
            "any_value(row_digest) FILTER (WHERE kind = 0), count(*) FILTER (WHERE kind = 1 "
            "AND (NOT regexp_full_match(row_digest, '[0-9a-f]{64}') "
            "OR NOT regexp_full_match(class_digest, '[0-9a-f]{64}') OR star NOT IN (0, 1) "
            "OR star IS NULL OR row_digest IS NULL OR class_digest IS NULL)), "
            "count(*) FILTER (WHERE kind IS NULL OR kind NOT IN (0, 1)) "
            "FROM read_parquet($ledger)",
            params={"ledger": ledger.target},
        ).fetchall()
    except duckdb.Error as exc:
        raise InvalidInputError(
            f"{ledger.label}: the release ledger cannot be read ({type(exc).__name__}): the "
            "file is damaged; write it again from the release, or compare with the release "
            "itself"
        ) from None
    headers, about, digest, bad_rows, bad_kinds = found[0]
    if headers != 1:
        raise InvalidInputError(f"{ledger.label}: a release ledger has one header row")
    if bad_rows or bad_kinds:
        raise InvalidInputError(
            f"{ledger.label}: {int(bad_rows) + int(bad_kinds)} row(s) of the release ledger "
            "are not rows a ledger holds (a digest of 64 hexadecimal digits, a flag 0 or 1): "
            "the ledger was changed or damaged after it was written"
        )
    return about, digest


def _ledger_changes(
    new: FileTable,
    ledger: FileTable,
    qis: Sequence[str],
    columns: Sequence[str] | None,
    memory_limit: str | None,
) -> ReleaseChanges:
    """The release comparison of the candidate ``new`` against a release ledger
    (:mod:`~reident_airflow.sources.release_ledger`): the candidate digested as the ledger
    was, then counted as :func:`_changes_sql` counts two releases."""
    from reident_airflow.sources.release_changes import changes_from_counts, compared_columns
    from reident_airflow.sources.release_ledger import LedgerAbout, check_about

    with _duckdb(memory_limit) as con, _readable(new) as new_readable:
        rel, params = _relation(new_readable, con)
        header = _ledger_header(con, ledger)
        about = LedgerAbout.from_header(header[0], header[1], ledger.label)
        compared = compared_columns(
            new.names, about.columns, qis, columns, labels=(new.label, ledger.label)
        )
        _refuse_nested(new, compared.candidate)
        kinds = _kinds_of(new, con, rel, params)
        check_about(about, compared, _types_of(new, con, rel, params), ledger.label)
        # the candidate's columns in the ledger's order: the order its digests were made in
        order = [compared.candidate[compared.previous.index(j)] for j in range(len(about.columns))]
        qi_pos = [compared.candidate[q] for q in compared.qis]
        text_qis = all(kinds[i] == "string" for i in qi_pos)
        digests = _digests_sql(rel, order, qi_pos, kinds, text_qis=text_qis)
        sql = (
            "SELECT a, d, star, count(*) AS classes, sum(n) AS n, sum(p) AS p FROM ("
            "SELECT class_digest, star, sum(CASE WHEN n > p THEN n - p ELSE 0 END) AS a, "
            "sum(CASE WHEN p > n THEN p - n ELSE 0 END) AS d, sum(n) AS n, sum(p) AS p FROM ("
            "SELECT row_digest, class_digest, star, count(*) FILTER (WHERE s) AS n, "
            "count(*) FILTER (WHERE NOT s) AS p FROM ("
            f"SELECT row_digest, class_digest, star, true AS s FROM ({digests}) "
            "UNION ALL SELECT row_digest, class_digest, star = 1, false FROM "
            "read_parquet($ledger) WHERE kind = 1"
            ") GROUP BY row_digest, class_digest, star"
            ") GROUP BY class_digest, star) GROUP BY 1, 2, 3"
        )
        rows = _run(new, con, sql, {**params, "ledger": ledger.target}, rows=True)
    return changes_from_counts(compared.qi_names, rows, compared)

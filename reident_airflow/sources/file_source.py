"""What a file source is, before anything is read: its format and its columns.

A CSV file (plain or compressed: gzip, zstd, bzip2), a Parquet file, a directory or glob of
Parquet files (or, from :mod:`~reident_airflow.sources.frames`, a frame in memory) is
described as a :class:`FileTable`: the columns exactly as the source spells them, and what
DuckDB is handed
(:mod:`~reident_airflow.sources.files` reads it). Column names are resolved here
(:func:`resolve_columns`): exactly first, then without surrounding spaces; an unknown name lists
the columns and the closest match, or, when the header came back as one column
(``sex;age;race``), the ``--sep`` to try. Only the header (or the Parquet schema) is read;
messages name the file and the columns, never a value."""

from __future__ import annotations

import bz2
import csv
import difflib
import errno
import glob
import gzip
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reident_airflow.engine.encoding import normal_form_note
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

__all__ = [
    "CSV_COMPRESSIONS",
    "PARQUET_SUFFIXES",
    "FileTable",
    "arrow_kinds",
    "column_hint",
    "column_kind",
    "csv_compression",
    "file_columns",
    "header_separator",
    "is_parquet",
    "open_file",
    "resolve_columns",
    "unknown_column",
]

_PARQUET_MAGIC = b"PAR1"
#: File name endings read (and written) as Parquet.
PARQUET_SUFFIXES = frozenset({".parquet", ".pq"})
#: Compressed CSV by file name ending: (the compression's name, the magic bytes its files start
#: with). The name decides; a file whose first bytes do not match is refused.
CSV_COMPRESSIONS: dict[str, tuple[str, bytes]] = {
    ".gz": ("gzip", b"\x1f\x8b"),
    ".zst": ("zstd", b"\x28\xb5\x2f\xfd"),
    ".bz2": ("bzip2", b"BZh"),
}


# ------------------------------------------------------------------------------- names
def resolve_columns(
    requested: Sequence[str], available: Sequence[str], *, kind: str = "quasi-identifier"
) -> tuple[int, ...]:
    """Positions of the requested columns in ``available`` (a header, a table's columns).

    A name is looked up exactly as given first; only when no column has that name are names
    compared with their surrounding spaces removed (on both sides). A name that several
    columns share, an unknown name (the error lists the columns and the closest match) and an
    empty name are errors; so is a name requested twice.
    """
    avail = [str(a) for a in available]
    positions: list[int] = []
    seen: set[int] = set()
    for raw in requested:
        name = str(raw)
        if not name.strip():
            raise InvalidInputError(f"an empty {kind} name was given")
        hits = [i for i, a in enumerate(avail) if a == name]
        if not hits:  # then without surrounding spaces, on both sides
            hits = [i for i, a in enumerate(avail) if a.strip() == name.strip()]
        if not hits:
            raise InvalidInputError(unknown_column(name, avail, kind))
        if len(hits) > 1:
            where = ", ".join(str(i + 1) for i in hits)
            raise InvalidInputError(
                f"{kind} {name!r} names {len(hits)} columns (positions {where}): the header "
                "repeats it, so it cannot be told which one is meant; rename the columns"
            )
        if hits[0] in seen:
            raise InvalidInputError(f"{kind} {name!r} is listed twice")
        seen.add(hits[0])
        positions.append(hits[0])
    if not positions:
        raise InvalidInputError(f"no {kind} given: name at least one column")
    return tuple(positions)


#: Separators a header read as one column is checked for, most common first.
_SEPARATORS = (",", ";", "\t", "|")


def header_separator(available: Sequence[str]) -> str | None:
    """The separator a header read as one column holds (``sex;age;race`` -> ``;``), as
    ``--sep`` spells it (``\\t`` for a tab), or ``None``: the header has several columns, or
    its one name holds none of ``, ; tab |``. Of several, the most frequent is chosen."""
    if len(available) != 1:
        return None
    name = str(available[0])
    counts = [(name.count(sep), -i, sep) for i, sep in enumerate(_SEPARATORS) if sep in name]
    if not counts:
        return None
    sep = max(counts)[2]
    return "\\t" if sep == "\t" else sep


def column_hint(name: str, available: Sequence[str]) -> str:
    """What to add to a message about ``name``, which is not among ``available``: the
    ``--sep`` to try when the header came back as one column
    (``; the header reads as one column, 'sex;age;race': did you mean --sep ';'?``), else the
    closest column (`` (did you mean 'age'?)``), else nothing."""
    avail = [str(a) for a in available]
    note = normal_form_note(name, avail)
    if note:
        return note
    sep = header_separator(avail)
    if sep is not None:
        header = avail[0] if len(avail[0]) <= 60 else f"{avail[0][:57]}..."
        return f"; the header reads as one column, {header!r}: did you mean --sep '{sep}'?"
    close = difflib.get_close_matches(name.strip(), avail, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_column(name: str, available: Sequence[str], kind: str = "column") -> str:
    """The message for ``name``, of the given ``kind``, that is not among ``available``, with
    :func:`column_hint` and, unless the header came back as one column, the columns (names
    only, up to 50)."""
    avail = [str(a) for a in available]
    text = f"unknown {kind} {name!r}{column_hint(name, avail)}"
    if header_separator(avail) is not None:
        return text
    shown = ", ".join(repr(a) for a in avail[:50])
    more = f" and {len(avail) - 50} more" if len(avail) > 50 else ""
    return f"{text}; available columns: {shown}{more}"


# ------------------------------------------------------------------------------- sources
def is_parquet(path: Path) -> bool:
    """A file is read as Parquet if it is named ``*.parquet``/``*.pq`` or starts with PAR1."""
    if path.suffix.lower() in PARQUET_SUFFIXES:
        return True
    try:
        with path.open("rb") as fh:
            return fh.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


def _check_readable(path: Path) -> None:
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidInputError(
                f"{path}: a symbolic-link loop (the link leads back to itself): point it at "
                "the file"
            ) from None
        if exc.errno == errno.ENOENT and path.is_symlink():
            raise InvalidInputError(
                f"{path}: a symbolic link whose target does not exist: point it at the file"
            ) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise InvalidInputError(
                f"{path}: permission denied (a folder on the way cannot be entered)"
            ) from None
        raise InvalidInputError(f"{path}: no such file") from None
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory, not a file")
    try:
        with path.open("rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


#: Suffixes of files that are not CSV, and what they are (a one-line error names them).
_OTHER_SUFFIXES = {
    ".xlsx": "an Excel workbook (.xlsx)",
    ".xlsm": "an Excel workbook (.xlsm)",
    ".xls": "an Excel 97-2003 workbook (.xls)",
    ".ods": "an OpenDocument spreadsheet (.ods)",
    ".json": "JSON",
    ".jsonl": "JSON Lines",
    ".ndjson": "JSON Lines",
}
#: First bytes of spreadsheets: a ZIP container (.xlsx, .ods) and an OLE2 one (.xls).
_OTHER_MAGIC = (
    (b"PK\x03\x04", "an Excel workbook (a ZIP container, as .xlsx is)"),
    (b"\xd0\xcf\x11\xe0", "an Excel 97-2003 workbook (.xls)"),
)


def _refuse_other_formats(path: Path) -> None:
    """Refuse a spreadsheet or a JSON file named or handed over as CSV: read as CSV it gives
    a header of garbage or of JSON fragments, and a wrong verdict. Told by the name, then by
    the first bytes (a compressed file by its name only)."""
    what = _OTHER_SUFFIXES.get(path.suffix.lower())
    if what is None and path.suffix.lower() not in CSV_COMPRESSIONS:
        try:
            with path.open("rb") as fh:
                head = fh.read(64)
        except OSError:
            return  # the header's reading says why
        what = next((name for magic, name in _OTHER_MAGIC if head.startswith(magic)), None)
        text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
        # an object, or an array of objects / arrays / strings (a CSV header may start "[")
        json_array = text[:1] == b"[" and text[1:].lstrip()[:1] in (b"{", b"[", b'"')
        if what is None and (text[:1] == b"{" or json_array):
            what = "JSON"
    if what is not None:
        raise InvalidInputError(
            f"{path}: {what}, not CSV: export it as CSV (or Parquet) and assess that file"
        )


def csv_compression(path: str | Path) -> str:
    """How a CSV file is compressed, by its name: ``gzip`` (``.gz``), ``zstd`` (``.zst``),
    ``bzip2`` (``.bz2``) or ``none``. A file so named whose first bytes are not that
    compression's is refused (it would be read as garbage)."""
    p = Path(path)
    entry = CSV_COMPRESSIONS.get(p.suffix.lower())
    if entry is None:
        return "none"
    name, magic = entry
    try:
        with p.open("rb") as fh:
            head = fh.read(len(magic))
    except OSError:
        return name  # unreadable: the caller's check says why
    if head != magic:
        raise InvalidInputError(
            f"{p}: named {p.suffix} but not {name}-compressed: decompress it yourself, or "
            f"rename it without {p.suffix}"
        )
    return name


def _zstd_open(path: Path, mode: str, **kwargs: Any) -> Any:
    try:
        import zstandard
    except ImportError:  # pragma: no cover - a dependency of the package
        raise InvalidInputError(
            f"{path}: reading zstd-compressed CSV needs the zstandard package "
            "(pip install zstandard)"
        ) from None
    return zstandard.open(path, mode, **kwargs)


#: How Python opens each compression (the header only; DuckDB or a copy reads the records).
_OPENERS: dict[str, Any] = {"none": open, "gzip": gzip.open, "zstd": _zstd_open, "bzip2": bz2.open}


def _csv_header(path: Path, sep: str) -> list[str]:
    """The header of a CSV file: its first record, read by Python's csv module (RFC 4180).

    DuckDB trims the spaces around header names and renames repeated ones, so the names are
    read here, exactly as written; DuckDB then reads the records by position.
    """
    opener: Any = _OPENERS[csv_compression(path)]
    limit = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)
    try:
        # undecodable bytes after the header are DuckDB's to report, with their line
        with opener(path, "rt", encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
            reader = csv.reader(fh, delimiter=sep, quotechar='"', doublequote=True, strict=True)
            header = next(reader, None)
    except csv.Error:
        raise InvalidInputError(
            f"{path}: the header (line 1) is not valid CSV (a quote that is never closed, or "
            "text after a closing quote)"
        ) from None
    except Exception as exc:
        if not isinstance(exc, (OSError, EOFError)) and type(exc).__name__ != "ZstdError":
            raise
        raise InvalidInputError(
            f"{path}: cannot be read ({type(exc).__name__}: a damaged or truncated file?)"
        ) from None
    finally:
        csv.field_size_limit(limit)
    if not header:
        raise EmptyDatasetError(f"{path}: the file is empty (no header, no records)")
    for name in header:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(
                f"{path}: the header (line 1) is not UTF-8 text: convert the file to UTF-8"
            ) from None
    return header


def _parquet_paths(spec: str) -> tuple[str, list[str]]:
    """A Parquet file, a directory of Parquet files or a glob: (what DuckDB reads, files)."""
    p = Path(spec)
    if p.is_dir():
        pattern = str(p / "**" / "*.parquet")
        files = sorted(glob.glob(pattern, recursive=True))
        if not files:
            raise InvalidInputError(f"{p}: a directory without Parquet files (*.parquet)")
        return pattern, files
    if any(ch in spec for ch in "*?["):
        files = sorted(glob.glob(spec, recursive=True))
        if not files:
            raise InvalidInputError(f"{spec}: no file matches this pattern")
        return spec, files
    _check_readable(p)
    return spec, [spec]


@dataclass(frozen=True)
class FileTable:
    """A table DuckDB can read: a file (or files) on disk, or an in-memory Arrow table.

    ``names`` are the columns exactly as the source spells them (repeats included);
    DuckDB sees them as ``c0 .. c{n-1}``.
    """

    label: str
    kind: str  # "csv" | "parquet" | "arrow"
    names: tuple[str, ...]
    target: Any  # the path / glob DuckDB reads, or the Arrow table
    sep: str = ","
    kinds: tuple[str, ...] = ()  # "text", "number", "nested" or "other" per column
    compression: str = "none"  # a CSV file's: "none", "gzip", "zstd" or "bzip2"
    types: tuple[str, ...] = ()  # each column's type as Arrow names it (for messages)

    def positions(
        self, requested: Sequence[str], *, kind: str = "quasi-identifier"
    ) -> tuple[int, ...]:
        return resolve_columns(requested, self.names, kind=kind)

    def grouped(
        self, requested: Sequence[str], *, kind: str = "quasi-identifier"
    ) -> tuple[int, ...]:
        """:meth:`positions` of columns whose values are grouped: a nested column (a struct,
        list, map or union) is refused, naming the column, its type and the fix."""
        pos = self.positions(requested, kind=kind)
        for i in pos:
            if self.kinds[i] == "nested":
                raise InvalidInputError(
                    f"{self.label}: {kind} {self.names[i]!r} is a nested column "
                    f"({self.types[i]}), whose values are not grouped: flatten it into "
                    "columns of plain values (or cast it to text) and name those"
                )
        return pos


def open_file(path: str | Path, *, sep: str = ",") -> FileTable:
    """Describe a CSV or Parquet file (or a directory / glob of Parquet files) for reading."""
    if len(sep) != 1 or sep in {'"', "\n", "\r"}:
        raise InvalidInputError(f"--sep must be a single character other than a quote, got {sep!r}")
    spec = str(path)
    p = Path(spec)
    if p.is_dir() or any(ch in spec for ch in "*?[") or (p.exists() and is_parquet(p)):
        target, files = _parquet_paths(spec)
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(files[0])
        except (pa.ArrowInvalid, OSError) as exc:
            raise InvalidInputError(
                f"{files[0]}: not a readable Parquet file ({type(exc).__name__})"
            ) from None
        return FileTable(
            spec,
            "parquet",
            tuple(schema.names),
            target,
            sep,
            arrow_kinds(schema.types),
            types=tuple(str(t) for t in schema.types),
        )
    _check_readable(p)
    _refuse_other_formats(p)
    names = tuple(_csv_header(p, sep))
    kinds = tuple("text" for _ in names)
    return FileTable(spec, "csv", names, spec, sep, kinds, csv_compression(p))


def file_columns(path: str | Path, *, sep: str = ",") -> list[str]:
    """Column names of a CSV or Parquet file, exactly as written."""
    return list(open_file(path, sep=sep).names)


def arrow_kinds(types: Sequence[Any]) -> tuple[str, ...]:
    """``"text"``, ``"number"``, ``"nested"`` or ``"other"`` for each Arrow column type."""
    import pyarrow as pa

    def kind(t: Any) -> str:
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return "text"
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            return "number"
        if pa.types.is_nested(t):  # struct, list (all kinds), map, union
            return "nested"
        return "other"

    return tuple(kind(t) for t in types)


def column_kind(arrow_type: Any) -> str:
    """The kind of :data:`~reident_airflow.engine.identifiers.COLUMN_KINDS` of an Arrow type
    (a dictionary by its values' type)."""
    import pyarrow as pa

    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    checks = (
        (pa.types.is_boolean, "boolean"),
        (pa.types.is_integer, "integer"),
        (pa.types.is_decimal, "decimal"),
        (pa.types.is_floating, "float"),
        (pa.types.is_string, "string"),
        (pa.types.is_large_string, "string"),
        (pa.types.is_string_view, "string"),
        (pa.types.is_date, "date"),
        (pa.types.is_timestamp, "timestamp"),
        (pa.types.is_binary, "binary"),
        (pa.types.is_large_binary, "binary"),
        (pa.types.is_fixed_size_binary, "binary"),
        (pa.types.is_binary_view, "binary"),
    )
    return next((kind for check, kind in checks if check(t)), "other")

"""Read CSV and Parquet files into Arrow tables, with errors a person can act on.

Only the columns asked for are materialised. Every error message names the file and the
problem (missing column, ragged row, encoding) with counts and column names only: never the
content of a row.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from reident_airflow.engine.aggregates import (
    ClassAggregates,
    aggregate_arrow,
    check_extra_columns,
)
from reident_airflow.engine.classes import (
    ClassTable,
    class_table_from_codes,
    encode_arrow,
    validate_quasi_identifiers,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

__all__ = [
    "aggregates_from_file",
    "class_table_from_file",
    "file_columns",
    "is_parquet",
    "read_columns",
]

_PARQUET_MAGIC = b"PAR1"
_RAGGED = re.compile(r"Expected (\d+) columns, got (\d+)")


def is_parquet(path: Path) -> bool:
    """A file is read as Parquet if it is named ``*.parquet``/``*.pq`` or starts with PAR1."""
    if path.suffix.lower() in {".parquet", ".pq"}:
        return True
    try:
        with path.open("rb") as fh:
            return fh.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise InvalidInputError(f"{path}: no such file")
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory, not a file")
    try:
        with path.open("rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _csv_header(path: Path, sep: str) -> list[str]:
    try:
        reader = pcsv.open_csv(
            path,
            read_options=pcsv.ReadOptions(block_size=1 << 16),
            parse_options=pcsv.ParseOptions(delimiter=sep),
            convert_options=pcsv.ConvertOptions(include_columns=[]),
        )
    except pa.ArrowInvalid as exc:
        raise _csv_error(path, exc) from None
    return list(reader.schema.names) if reader.schema else []


def _csv_error(path: Path, exc: Exception) -> InvalidInputError:
    text = str(exc)
    if "Empty CSV file" in text:
        return EmptyDatasetError(f"{path}: the file is empty (no header, no records)")
    m = _RAGGED.search(text)
    if m:
        return InvalidInputError(
            f"{path}: ragged CSV: a row has {m.group(2)} fields where the header has "
            f"{m.group(1)} (check --sep and quoting)"
        )
    if "UTF8" in text or "UTF-8" in text or "utf8" in text:
        return InvalidInputError(f"{path}: not valid UTF-8 text (convert the file to UTF-8)")
    # Arrow's own wording may quote row content: keep only its first clause.
    head = text.split(":")[0][:120]
    return InvalidInputError(f"{path}: cannot be parsed as CSV ({head})")


def file_columns(path: str | Path, *, sep: str = ",") -> list[str]:
    """Column names of a CSV or Parquet file."""
    p = Path(path)
    _check_readable(p)
    if is_parquet(p):
        try:
            return list(pq.read_schema(p).names)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InvalidInputError(f"{p}: not a readable Parquet file ({exc})") from None
    return _csv_header(p, sep)


def read_columns(
    path: str | Path,
    columns: Sequence[str],
    *,
    sep: str = ",",
    dictionary: bool = True,
) -> pa.Table:
    """Read the named columns of a CSV or Parquet file into an Arrow table.

    CSV values are read as text (``1`` and ``01`` stay different, as in ARX); an empty field is
    a missing value. The whole file is still parsed, so a ragged row anywhere is an error.
    Parquet string columns are read as dictionaries (``dictionary=True``), which is what makes
    grouping fast.
    """
    p = Path(path)
    _check_readable(p)
    if len(sep) != 1:
        raise InvalidInputError(f"--sep must be a single character, got {sep!r}")
    names = validate_quasi_identifiers(columns, file_columns(p, sep=sep))
    if is_parquet(p):
        try:
            return pq.read_table(
                p, columns=list(names), read_dictionary=list(names) if dictionary else None
            )
        except (pa.ArrowInvalid, OSError) as exc:
            raise InvalidInputError(f"{p}: not a readable Parquet file ({exc})") from None
    header = _csv_header(p, sep)
    try:
        return pcsv.read_csv(
            p,
            parse_options=pcsv.ParseOptions(delimiter=sep),
            convert_options=pcsv.ConvertOptions(
                include_columns=list(names),
                column_types={c: pa.string() for c in header},
                strings_can_be_null=True,
                null_values=[""],
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        raise _csv_error(p, exc) from None


def class_table_from_file(path: str | Path, qis: Sequence[str], *, sep: str = ",") -> ClassTable:
    """The class table of a CSV or Parquet file on the given QIs."""
    table = read_columns(path, qis, sep=sep)
    if table.num_rows == 0:
        raise EmptyDatasetError(f"{path}: the table has no records: there is nothing to assess")
    return class_table_from_codes(encode_arrow(table, qis))


def aggregates_from_file(
    path: str | Path,
    qis: Sequence[str],
    *,
    sep: str = ",",
    weight: str | None = None,
    sensitive: Sequence[str] = (),
) -> ClassAggregates:
    """The class table of a file with per-class weight sums and sensitive value counts.

    Only the QI, weight and sensitive columns are read; they are grouped in one pass
    (:func:`~reident_airflow.engine.aggregates.aggregate_arrow`). A weight column read from
    CSV text is parsed as numbers.
    """
    p = Path(path)
    header = file_columns(p, sep=sep)
    names = validate_quasi_identifiers(qis, header)
    weight, extra = check_extra_columns(names, header, weight=weight, sensitive=sensitive)
    columns = [*names, *([] if weight is None else [weight]), *extra]
    table = read_columns(p, columns, sep=sep)
    if table.num_rows == 0:
        raise EmptyDatasetError(f"{path}: the table has no records: there is nothing to assess")
    return aggregate_arrow(table, names, weight=weight, sensitive=extra)

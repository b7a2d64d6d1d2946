"""Value codes: each quasi-identifier column's values as dense integer codes.

Every grouping works on codes, never on values (docs/metrics.md §1). A small-range integer column
is coded by offset (``value - min``); anything else by hashing (Arrow dictionary encoding or
:func:`pandas.factorize`). All missing values of a column share one code (a missing value is
a value of its own, as in ARX), and the code of the suppression marker ``*`` is noted, so
that :func:`~reident_airflow.engine.classes.class_table_of` can exclude fully suppressed
records. :class:`EncodedColumns` bundles the codes of several columns with their
dictionaries (kept for joins, never written to any output).
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from reident_airflow.engine._arrays import IntArray
from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:  # pandas and Arrow are loaded by the functions that use them
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "SUPPRESSION_MARKER",
    "EncodedColumns",
    "distinct_names",
    "encode_arrow",
    "encode_arrow_column",
    "encode_frame",
    "encode_series",
    "encoded_columns",
    "normal_form_note",
    "refuse_unknown",
    "validate_quasi_identifiers",
]


#: The value ARX writes for a suppressed cell; a record with it in every QI is excluded.
SUPPRESSION_MARKER = "*"


@dataclass(frozen=True, eq=False)
class EncodedColumns:
    """Integer codes of some columns: one array per column, one code per row.

    ``dictionaries[i][code]`` is the value a code stands for (missing values included); it is
    kept for joins (population tables, generalization) and never written to any output.
    ``marker_codes[i]`` is the code of the suppression marker ``*`` in column i, if present.
    """

    names: tuple[str, ...]
    codes: tuple[IntArray, ...]
    cardinalities: tuple[int, ...]
    dictionaries: tuple[Any, ...]
    marker_codes: tuple[int | None, ...]

    @property
    def records(self) -> int:
        return int(self.codes[0].shape[0]) if self.codes else 0


def validate_quasi_identifiers(qis: Sequence[str], available: Sequence[str]) -> tuple[str, ...]:
    """Check the QI list: non-empty, no duplicates, every name a column.

    The error for an unknown name lists the available columns (names only).
    """
    names = tuple(qis)
    if not names or any(not str(q).strip() for q in names):
        raise InvalidInputError("no quasi-identifiers given: name at least one column")
    names = tuple(distinct_names("quasi-identifier", names))
    refuse_unknown("quasi-identifier", names, available)
    return names


def distinct_names(label: str, names: Iterable[str]) -> Iterator[str]:
    """Yield ``names`` in order, refusing the first that is listed a second time.

    A generator, so that a caller checking each name for more (e.g. a sensitive column that
    is also a quasi-identifier) reports the first problem in list order, whichever it is.
    """
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidInputError(f"{label} {name!r} is listed twice")
        seen.add(name)
        yield name


def refuse_unknown(label: str, names: Sequence[str], available: Sequence[str]) -> None:
    """Refuse names that are not columns of the table; the message gives each unknown name
    its closest column, if one is close (:func:`difflib.get_close_matches`), and lists the
    available columns (names only), e.g. ``unknown quasi-identifier 'agee' (did you mean
    'age'?); available columns: 'sex', 'age'``."""
    avail = [str(a) for a in available]
    missing = [q for q in names if q not in avail]
    if missing:
        named = ", ".join(f"{m!r}{_closest(m, avail)}" for m in missing)
        raise InvalidInputError(
            f"unknown {label}{'s' if len(missing) > 1 else ''} {named}; available columns: "
            f"{', '.join(repr(a) for a in avail)}"
        )


def _closest(name: str, available: Sequence[str]) -> str:
    """:func:`normal_form_note`, or `` (did you mean 'x'?)`` for the column closest to
    ``name``, or nothing."""
    note = normal_form_note(name, available)
    if note:
        return note
    close = difflib.get_close_matches(str(name).strip(), available, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _normal_form(text: str) -> str:
    nfc = unicodedata.is_normalized("NFC", text)
    nfd = unicodedata.is_normalized("NFD", text)
    if nfc != nfd:
        return "NFC" if nfc else "NFD"
    return "neither NFC nor NFD" if not nfc else "NFC"


def normal_form_note(name: str, available: Sequence[str]) -> str:
    """For a ``name`` that no column has, the columns that spell it in another Unicode normal
    form (NFC ``é`` is one code point, NFD ``é`` two: they print alike and differ):
    `` (column 2, 'é', is this name in NFC, 1 code point; the name given is NFD, 2 code
    points: write it as the header does)``, or nothing. Column names are no record values."""
    target = unicodedata.normalize("NFC", str(name).strip())
    same = [
        (i, a)
        for i, a in enumerate(str(a) for a in available)
        if a != name and unicodedata.normalize("NFC", a.strip()) == target
    ]
    if not same:
        return ""

    def points(text: str) -> str:
        return f"{len(text)} code point{'s' if len(text) != 1 else ''}"

    columns = "; ".join(
        f"column {i + 1}, {a!r}, is this name in {_normal_form(a)}, {points(a)}" for i, a in same
    )
    return (
        f" ({columns}; the name given is {_normal_form(str(name))}, {points(str(name))}: the "
        "names differ in Unicode normal form; write it as the header does)"
    )


def _marker_code(dictionary: Any) -> int | None:
    """Code of the suppression marker ``*`` in a dictionary of values, if present."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(dictionary, pa.Array):
        if not (pa.types.is_string(dictionary.type) or pa.types.is_large_string(dictionary.type)):
            return None
        pos = pc.index(dictionary, SUPPRESSION_MARKER).as_py()
        return int(pos) if pos is not None and pos >= 0 else None
    try:
        hits = np.flatnonzero(np.asarray(dictionary, dtype=object) == SUPPRESSION_MARKER)
    except (TypeError, ValueError):  # pragma: no cover - exotic dictionaries
        return None
    return int(hits[0]) if hits.size else None


def encode_series(values: pd.Series | NDArray[Any]) -> tuple[IntArray, int, Any]:
    """Dense codes for one column: ``(codes, cardinality, dictionary)``.

    Integer columns with a small range are coded by offset (no hashing); everything else by
    :func:`pandas.factorize`, where all missing values share one code.
    """
    import pandas as pd

    if isinstance(values, pd.Series) and not pd.api.types.is_integer_dtype(values.dtype):
        # not integers: hash; no NumPy copy (an Arrow string column would become objects)
        return _factorized(values)
    arr = values.to_numpy() if isinstance(values, pd.Series) else np.asarray(values)
    n = arr.shape[0]
    if arr.dtype.kind in "iu" and n:
        lo = int(arr.min())
        hi = int(arr.max())
        # unsigned values from 2**63 do not fit the int64 offsets: hashed
        if hi < 1 << 63 and hi - lo + 1 <= max(2 * n, 1 << 16):
            return _offset_codes(arr.astype(np.int64, copy=False) - lo, lo, hi)
    return _factorized(arr)


def _offset_codes(offsets: IntArray, lo: int, hi: int) -> tuple[IntArray, int, Any]:
    """``(codes, cardinality, dictionary)`` of an integer column from its values' offsets
    ``value - lo`` (all in ``0..hi-lo``): the offsets themselves when every value of
    ``lo..hi`` occurs, else renumbered densely so that cardinalities stay tight."""
    present = np.bincount(offsets, minlength=hi - lo + 1) > 0
    if present.all():
        return offsets, hi - lo + 1, np.arange(lo, hi + 1)
    remap = np.cumsum(present, dtype=np.int64) - 1
    return remap[offsets], int(present.sum()), np.flatnonzero(present) + lo


def _factorized(values: pd.Series | NDArray[Any]) -> tuple[IntArray, int, Any]:
    """Codes by hashing; every missing value (None, NaN, NA) shares one code."""
    import pandas as pd

    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), len(uniques), uniques


def encode_frame(frame: pd.DataFrame, qis: Sequence[str]) -> EncodedColumns:
    """Integer codes of the QI columns of a DataFrame (names validated first)."""
    names = validate_quasi_identifiers(qis, [str(c) for c in frame.columns])
    return encoded_columns(names, [encode_series(frame[name]) for name in names])


def encoded_columns(
    names: tuple[str, ...], parts: Sequence[tuple[IntArray, int, Any]]
) -> EncodedColumns:
    """Bundle per-column ``(codes, cardinality, dictionary)`` into :class:`EncodedColumns`."""
    dicts = tuple(d for _, _, d in parts)
    return EncodedColumns(
        names=names,
        codes=tuple(c for c, _, _ in parts),
        cardinalities=tuple(card for _, card, _ in parts),
        dictionaries=dicts,
        marker_codes=tuple(_marker_code(d) for d in dicts),
    )


def encode_arrow_column(column: pa.ChunkedArray) -> tuple[IntArray, int, Any]:
    """Dense codes for one Arrow column: ``(codes, cardinality, dictionary)``.

    Dictionary columns (Parquet ``read_dictionary``) reuse their dictionary; integer columns
    without nulls are coded by offset; anything else is dictionary-encoded by hashing. Nulls
    share one code.

    Codes are written chunk by chunk into one preallocated array: no concatenated copy of the
    column is made first.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    n = len(column)
    if pa.types.is_integer(column.type) and column.null_count == 0:
        if n == 0:
            return encode_series(column.to_numpy())
        bounds = pc.min_max(column)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        if hi < 1 << 63 and hi - lo + 1 <= max(2 * n, 1 << 16):
            return _offset_codes(_arrow_offsets(column, lo), lo, hi)
        if hi < 1 << 63:
            return encode_series(column.to_numpy())  # wide range: hashing
        # values beyond int64 (uint64 from 2**63): hashed by Arrow below
    return _arrow_dictionary_codes(column)


def _arrow_offsets(column: pa.ChunkedArray, lo: int) -> IntArray:
    """``value - lo`` of an integer column without nulls, chunk by chunk into one array."""
    codes = np.empty(len(column), dtype=np.int64)
    pos = 0
    for chunk in column.chunks:
        k = len(chunk)
        if k:
            # computed in int64: an int8 column spanning -128..127 must not wrap
            out = codes[pos : pos + k]
            np.subtract(chunk.to_numpy(), lo, out=out, dtype=np.int64, casting="unsafe")
        pos += k
    return codes


def _arrow_dictionary_codes(column: pa.ChunkedArray) -> tuple[IntArray, int, Any]:
    """``(codes, cardinality, dictionary)`` of a column by its (unified) Arrow dictionary,
    dictionary-encoded by hashing first if it has none; nulls share one code, the last."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type) and any(
        chunk.dictionary.null_count for chunk in column.chunks
    ):
        # a null inside a dictionary: Arrow cannot unify those; decode and encode again
        column = column.cast(column.type.value_type)
    if not pa.types.is_dictionary(column.type):
        # nulls stay null indices (Arrow cannot unify dictionaries that contain a null); they
        # all get one code below
        column = pc.dictionary_encode(column)
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if column.num_chunks == 0:
        return np.zeros(0, dtype=np.int64), 1, pa.array([], type=column.type.value_type)
    column = column.unify_dictionaries()
    dictionary = column.chunk(0).dictionary
    card = len(dictionary)
    codes = _dictionary_indices(column)
    if column.null_count:
        dictionary = pa.concat_arrays([dictionary, pa.nulls(1, type=dictionary.type)])
        card += 1
    return codes, card, dictionary


def _dictionary_indices(column: pa.ChunkedArray) -> IntArray:
    """The indices of a dictionary column with unified dictionaries, as one int64 array.

    Copied chunk by chunk into one preallocated array; a null index becomes the dictionary's
    length (one more code).
    """
    card = len(column.chunk(0).dictionary) if column.num_chunks else 0
    out = np.empty(len(column), dtype=np.int64)
    pos = 0
    for chunk in column.chunks:
        idx = chunk.indices
        k = len(idx)
        if idx.null_count:
            idx = idx.fill_null(card)
        if k:
            np.copyto(out[pos : pos + k], idx.to_numpy(zero_copy_only=False), casting="unsafe")
        pos += k
    return out


def encode_arrow(table: pa.Table, qis: Sequence[str]) -> EncodedColumns:
    """Integer codes of the QI columns of an Arrow table (names validated first)."""
    names = validate_quasi_identifiers(qis, table.column_names)
    return encoded_columns(names, [encode_arrow_column(table.column(name)) for name in names])

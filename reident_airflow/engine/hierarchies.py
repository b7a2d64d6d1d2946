"""Generalization hierarchies for Datafly (docs/metrics.md §9).

A hierarchy maps every original value of a column to its generalization at each level:
level 0 is the value itself, the top level is usually ``*`` (everything in one group).
The file format is ARX's: one CSV row per original value, ``value;level1;level2;...``
(``;`` separated, UTF-8, CRLF or LF line ends), e.g. for age::

    39;35-39;30-39;20-39;*

Builders cover the common cases: :func:`interval_hierarchy` (numeric intervals of growing
width), :func:`masking_hierarchy` (masking trailing characters, e.g. postcodes) and
:func:`date_hierarchy` (day -> month -> year -> ``*``).

Values are compared as text (:func:`value_text`): a CSV age ``"39"`` and an integer ``39``
from a DataFrame both match the hierarchy row ``39``. Error messages name files, columns,
line numbers and counts, never a value: a hierarchy is built from the data it generalizes.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from reident_airflow.engine.errors import HierarchyError, InvalidInputError

__all__ = [
    "Hierarchy",
    "date_hierarchy",
    "interval_hierarchy",
    "load_hierarchy",
    "masking_hierarchy",
    "value_text",
]

#: Label of the top level written by the builders (ARX's convention).
TOP = "*"


def value_text(value: Any) -> str:
    """The text under which a value is looked up in a hierarchy.

    - strings are used as they are (no stripping: ``" Private"`` is not ``"Private"``);
    - integers (Python or numpy) as their decimal digits: ``39`` -> ``"39"``;
    - floats with an integral value as that integer (``39.0`` -> ``"39"``, the shape a numeric
      column takes in pandas once it has a missing value); other floats as :func:`repr`;
    - dates as ISO ``YYYY-MM-DD``; timestamps at midnight without time zone as their date,
      other timestamps as ISO 8601;
    - a missing value (``None``, ``NaN``, ``NaT``, ``pd.NA``) as the empty string ``""``, which
      is also what ``pandas.read_csv(..., keep_default_na=False)`` gives for an empty cell: a
      hierarchy covers missing values with a row whose first field is empty;
    - anything else with :class:`str`.
    """
    if isinstance(value, str):
        return value
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f):
            return ""
        if f.is_integer():
            return str(int(f))
        return repr(f)
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            return ""
        value = pd.Timestamp(value)
    if isinstance(value, dt.datetime):
        if (
            value.tzinfo is None
            and value.time() == dt.time(0)
            and getattr(value, "nanosecond", 0) == 0
        ):
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


@dataclass(frozen=True)
class Hierarchy:
    """A generalization hierarchy of one column.

    ``levels`` is the number of levels including level 0 (the original value); the top level
    is ``levels - 1``. ``mapping[value]`` is the tuple of the value's generalizations, one per
    level, ``mapping[value][0] == value``. Keys and labels are text (see :func:`value_text`).
    ``column`` is the column the hierarchy was made for, if known (used in messages only).
    """

    levels: int
    mapping: Mapping[str, tuple[str, ...]]
    column: str | None = None

    def __post_init__(self) -> None:
        if self.levels < 1:
            raise HierarchyError(f"{self._what()}: a hierarchy needs at least one level")
        if not self.mapping:
            raise HierarchyError(f"{self._what()}: the hierarchy has no rows")
        for i, (key, labels) in enumerate(self.mapping.items(), start=1):
            if len(labels) != self.levels or labels[0] != key:
                raise HierarchyError(
                    f"{self._what()}: row {i} has {len(labels)} levels, expected {self.levels} "
                    "starting with the original value"
                )

    def _what(self) -> str:
        return f"hierarchy of column {self.column!r}" if self.column else "hierarchy"

    @property
    def top(self) -> int:
        """The top level (``levels - 1``)."""
        return self.levels - 1

    @property
    def values(self) -> tuple[str, ...]:
        """The original values (level 0), in the order of the rows."""
        return tuple(self.mapping)

    def __len__(self) -> int:
        return len(self.mapping)

    def __contains__(self, value: object) -> bool:
        return value_text(value) in self.mapping

    def generalize(self, value: Any, level: int) -> str:
        """The generalization of one value at ``level`` (raises HierarchyError if uncovered)."""
        if not 0 <= level < self.levels:
            raise InvalidInputError(f"level {level} is outside 0..{self.top} of the {self._what()}")
        labels = self.mapping.get(value_text(value))
        if labels is None:
            raise HierarchyError(f"{self._what()} does not cover the value asked for")
        return labels[level]

    def labels(self, level: int) -> tuple[str, ...]:
        """The distinct labels of ``level``, in order of first appearance in the rows."""
        if not 0 <= level < self.levels:
            raise InvalidInputError(f"level {level} is outside 0..{self.top} of the {self._what()}")
        return tuple(dict.fromkeys(row[level] for row in self.mapping.values()))

    @cached_property
    def _index(self) -> pd.Index:
        index: pd.Index = pd.Index(list(self.mapping), dtype=object)
        return index

    def positions(self, texts: Sequence[str] | NDArray[Any]) -> NDArray[np.int64]:
        """The row number of each text in the hierarchy, ``-1`` where it is not covered.

        Vectorized (one hash lookup per text); ``texts`` must already be text
        (:func:`value_text`).
        """
        found = self._index.get_indexer(pd.Index(np.asarray(texts, dtype=object), dtype=object))
        return np.asarray(found, dtype=np.int64)

    def level_column(self, level: int) -> NDArray[Any]:
        """The label at ``level`` of every row, in row order (an object array, cached)."""
        if not 0 <= level < self.levels:
            raise InvalidInputError(f"level {level} is outside 0..{self.top} of the {self._what()}")
        return self._columns[level]

    @cached_property
    def _columns(self) -> tuple[NDArray[Any], ...]:
        rows = list(self.mapping.values())
        return tuple(
            np.array([row[level] for row in rows], dtype=object) for level in range(self.levels)
        )

    def rows(self) -> list[tuple[str, ...]]:
        """The rows of the hierarchy, as in the ARX file."""
        return list(self.mapping.values())

    def check_covers(self, values: Iterable[Any], column: str | None = None) -> None:
        """Raise :class:`HierarchyError` unless every value is covered by the hierarchy.

        The message names the column and counts the distinct values and the records (entries
        of ``values``) not covered; it never shows the values themselves.
        """
        series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
        counts = series.value_counts(dropna=False, sort=False)
        texts = [value_text(v) for v in counts.index]
        distinct_texts: set[str] = set()
        records = 0
        for text, count in zip(texts, counts.to_numpy(), strict=True):
            if text not in self.mapping:
                distinct_texts.add(text)
                records += int(count)
        if distinct_texts:
            raise uncovered_error(column or self.column, len(distinct_texts), records)

    def save(self, path: str | Path, sep: str = ";") -> None:
        """Write the hierarchy in ARX's CSV format (UTF-8, LF line ends)."""
        with Path(path).open("w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, delimiter=sep, lineterminator="\n")
            writer.writerows(self.mapping.values())

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[Sequence[Any]],
        column: str | None = None,
        *,
        source: str | None = None,
        line_numbers: Sequence[int] | None = None,
    ) -> Hierarchy:
        """Build a hierarchy from rows ``(value, level1, level2, ...)``.

        Every row must have the same number of fields, the original values must be distinct
        and there must be at least one row. ``source`` (a file name) and ``line_numbers`` only
        make error messages point at the right place. Fields are converted with
        :func:`value_text`.
        """
        what = (
            f"hierarchy file {source}"
            if source
            else (f"hierarchy of column {column!r}" if column else "hierarchy")
        )
        unit = "line" if source else "row"
        mapping: dict[str, tuple[str, ...]] = {}
        first_line: dict[str, int] = {}
        expected: int | None = None
        expected_line = 0
        for i, row in enumerate(rows):
            line = line_numbers[i] if line_numbers is not None else i + 1
            fields = tuple(value_text(f) for f in row)
            if not fields:
                raise HierarchyError(f"{what}: {unit} {line} is empty")
            if expected is None:
                expected, expected_line = len(fields), line
            elif len(fields) != expected:
                raise HierarchyError(
                    f"{what}: {unit} {line} has {len(fields)} field"
                    f"{'s' if len(fields) != 1 else ''}, expected {expected} "
                    f"(as on {unit} {expected_line}); every row needs one field per level"
                )
            key = fields[0]
            if key in mapping:
                raise HierarchyError(
                    f"{what}: {unit} {line} repeats the original value of {unit} "
                    f"{first_line[key]}; each value may have one row only"
                )
            mapping[key] = fields
            first_line[key] = line
        if expected is None:
            raise HierarchyError(f"{what}: the hierarchy has no rows")
        return cls(levels=expected, mapping=mapping, column=column)


def uncovered_error(column: str | None, distinct: int, records: int) -> HierarchyError:
    """The error for values a hierarchy does not cover: counts only, never the values."""
    name = f"column {column!r}" if column else "the column"
    return HierarchyError(
        f"the hierarchy of {name} does not cover {distinct} distinct value"
        f"{'s' if distinct != 1 else ''} ({records} record{'s' if records != 1 else ''}); "
        "add a row for every value of the column (values are compared as text)"
    )


def load_hierarchy(path: str | Path, sep: str = ";", column: str | None = None) -> Hierarchy:
    """Load a hierarchy in ARX's CSV format (``value;level1;...``, UTF-8, CRLF allowed).

    Blank lines are skipped; fields may be quoted with ``"``. Errors name the file and the
    line, never a value.
    """
    p = Path(path)
    try:
        with p.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=sep, quotechar='"')
            rows: list[list[str]] = []
            lines: list[int] = []
            for row in reader:
                if not row or (len(row) == 1 and row[0] == ""):
                    continue
                rows.append(row)
                lines.append(reader.line_num)
    except FileNotFoundError:
        raise HierarchyError(f"hierarchy file {p} does not exist") from None
    except PermissionError:
        raise HierarchyError(
            f"hierarchy file {p}: permission denied: make it readable by this user "
            "(or a folder on its path enterable)"
        ) from None
    except IsADirectoryError:
        raise HierarchyError(f"hierarchy file {p} is a directory, not a file") from None
    except UnicodeDecodeError:
        raise HierarchyError(f"hierarchy file {p} is not UTF-8 text") from None
    except csv.Error as exc:
        raise HierarchyError(f"hierarchy file {p} is not valid CSV: {exc}") from None
    except OSError as exc:
        raise HierarchyError(
            f"hierarchy file {p} cannot be read ({exc.strerror or type(exc).__name__})"
        ) from None
    if not rows:
        raise HierarchyError(f"hierarchy file {p} has no rows")
    other = _other_separator(rows, sep)
    if other is not None:
        shown = "tab" if other == "\t" else other
        raise HierarchyError(
            f"hierarchy file {p}: every line is one field holding '{shown}': it is written "
            f"with '{shown}' between the levels, not '{sep}'; give --hierarchy-sep '{shown}' "
            f"(hierarchy_sep='{other}' in an operator)"
        )
    return Hierarchy.from_rows(rows, column=column, source=str(p), line_numbers=lines)


def _other_separator(rows: Sequence[Sequence[str]], sep: str) -> str | None:
    """The separator a hierarchy read as one field per line holds in every line (``30,3*``
    read with ``;``), as ``--hierarchy-sep`` spells it, or ``None``."""
    if any(len(row) != 1 for row in rows):
        return None
    for candidate in (",", ";", "\t", "|"):
        if candidate != sep and all(candidate in row[0] for row in rows):
            return "\\t" if candidate == "\t" else candidate
    return None


def _distinct_texts(values: Iterable[Any]) -> list[tuple[str, Any]]:
    """Distinct ``(text, value)`` pairs in order of first appearance, missing values dropped."""
    seen: dict[str, Any] = {}
    for v in values:
        text = value_text(v)
        if text != "" and text not in seen:
            seen[text] = v
    return list(seen.items())


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        return int(f) if f.is_integer() else None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def interval_hierarchy(
    values: Iterable[Any],
    widths: Sequence[int] = (5, 10, 20),
    top: str | None = TOP,
    column: str | None = None,
) -> Hierarchy:
    """Numeric intervals of growing width, e.g. 37 -> ``35-39`` -> ``30-39`` -> ``20-39`` -> ``*``.

    Level ``i`` (1-based) groups a value ``v`` into ``lo-hi`` with ``lo = floor(v / w_i) * w_i``
    and ``hi = lo + w_i - 1``. Each width must be a multiple of the previous one, so that the
    intervals nest (a proper hierarchy). ``top=None`` leaves out the ``*`` level. Values must
    be integers (or integral text such as ``"39"``); missing values are left out (add a row
    for them yourself if the column has any).
    """
    ws = [int(w) for w in widths]
    if any(w < 1 for w in ws):
        raise InvalidInputError("interval_hierarchy: every width must be a positive integer")
    for a, b in pairwise(ws):
        if b <= a or b % a:
            raise InvalidInputError(
                "interval_hierarchy: widths must grow, each a multiple of the previous one "
                f"(got {tuple(ws)})"
            )
    pairs = _distinct_texts(values)
    bad = 0
    rows: list[list[str]] = []
    for text, v in pairs:
        number = _as_int(v)
        if number is None:
            bad += 1
            continue
        row = [text]
        for w in ws:
            lo = (number // w) * w
            row.append(f"{lo}-{lo + w - 1}")
        if top is not None:
            row.append(top)
        rows.append(row)
    if bad:
        raise InvalidInputError(
            f"interval_hierarchy: {bad} distinct value{'s are' if bad != 1 else ' is'} "
            "not an integer"
        )
    if not rows:
        raise HierarchyError("interval_hierarchy: no values to build a hierarchy from")
    return Hierarchy.from_rows(rows, column=column)


def masking_hierarchy(
    values: Iterable[Any],
    mask_char: str = "*",
    steps: Sequence[int] | None = None,
    column: str | None = None,
) -> Hierarchy:
    """Mask trailing characters: ``81667`` -> ``8166*`` -> ``816**`` -> ... -> ``*****``.

    Level ``i`` masks ``steps[i-1]`` trailing characters (default ``1, 2, ..., L-1`` for the
    longest value's length ``L``); a value shorter than that is masked entirely. The top
    level is ``mask_char * L`` for every value, so it is a single group even when lengths
    differ. Masked labels keep the value's length, so the levels nest.
    """
    if len(mask_char) != 1:
        raise InvalidInputError("masking_hierarchy: mask_char must be one character")
    pairs = _distinct_texts(values)
    if not pairs:
        raise HierarchyError("masking_hierarchy: no values to build a hierarchy from")
    longest = max(len(text) for text, _ in pairs)
    if steps is None:
        counts = list(range(1, longest))
    else:
        counts = [int(s) for s in steps]
        if any(c < 1 for c in counts) or any(b <= a for a, b in pairwise(counts)):
            raise InvalidInputError(
                "masking_hierarchy: steps must be positive and strictly increasing"
            )
        counts = [c for c in counts if c < longest]
    top = mask_char * longest
    rows: list[list[str]] = []
    for text, _ in pairs:
        row = [text]
        for c in counts:
            keep = max(len(text) - c, 0)
            row.append(text[:keep] + mask_char * (len(text) - keep))
        row.append(top)
        rows.append(row)
    return Hierarchy.from_rows(rows, column=column)


def date_hierarchy(values: Iterable[Any], top: str = TOP, column: str | None = None) -> Hierarchy:
    """Dates: day (the value) -> month ``YYYY-MM`` -> year ``YYYY`` -> ``*``.

    Values may be ``datetime.date``/``datetime``/``pandas.Timestamp``/``numpy.datetime64`` or
    ISO text (``YYYY-MM-DD``); the row key is the value's text (:func:`value_text`). Missing
    values are left out.
    """
    pairs = _distinct_texts(values)
    rows: list[list[str]] = []
    bad = 0
    for text, v in pairs:
        try:
            day = v if isinstance(v, dt.date) else pd.Timestamp(v)
            if pd.isna(day):
                raise ValueError
        except (ValueError, TypeError):
            bad += 1
            continue
        rows.append([text, f"{day.year:04d}-{day.month:02d}", f"{day.year:04d}", top])
    if bad:
        raise InvalidInputError(
            f"date_hierarchy: {bad} distinct value{'s are' if bad != 1 else ' is'} not a date"
        )
    if not rows:
        raise HierarchyError("date_hierarchy: no values to build a hierarchy from")
    return Hierarchy.from_rows(rows, column=column)

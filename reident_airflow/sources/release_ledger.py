"""The release ledger: what the gate keeps of a published release, to compare the next one
with it when the release itself can no longer be read (docs/metrics.md §12).

A ledger is a table (next to a published table, ``<target>__ledger``) or a Parquet file (next
to a published file, ``<target>.ledger.parquet``) with the columns of :data:`COLUMNS`:

- one header row (``kind`` 0) whose ``about`` holds, as JSON, what the ledger was made for
  (:class:`LedgerAbout`: the released columns in order, their types, the QIs), and whose
  ``row_digest`` holds the SHA-256 of that JSON text (:func:`header_digest`): a header
  edited after it was written no longer matches it and the ledger is refused, instead of
  being compared on columns or QIs it was not made for;
- one row (``kind`` 1) per released row: ``row_digest``, the SHA-256 of the row's columns,
  ``class_digest``, the SHA-256 of its QIs, and ``star``, 1 when every QI is the text ``*``
  (the suppressed class).

The digests are computed where the data is (DuckDB, the database) over an encoding of each
value that is equal exactly when the values are equal under the grouping equality of the
release comparison (docs/reading.md, "Two releases compared"): a missing value is ``N``, any
other value ``V<length>:<text>`` of a canonical text (floats ``x + 0``, so ``-0.0`` is ``0.0``,
every NaN one text; bytes and MariaDB text in hexadecimal; time zones and date styles fixed
by the statement). The lengths make the concatenation of a row's values unambiguous. So the
candidate, digested the same way, groups against the ledger exactly as it would against the
release: the counts of :mod:`~reident_airflow.sources.release_changes` come out the same.

This module holds what does not depend on the backend: the header, the checks that a
candidate can be compared with a ledger (:func:`check_about`), and the digest SQLite computes
through a function of this process (SQLite has no hash function of its own). It imports no
backend.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.release_changes import ComparedColumns

__all__ = [
    "COLUMNS",
    "LEDGER_VERSION",
    "LedgerAbout",
    "check_about",
    "header_digest",
    "is_ledger",
    "ledger_path",
    "ledger_table",
    "sqlite_digest",
]

#: The ledger's columns, in order.
COLUMNS = ("kind", "row_digest", "class_digest", "star", "about")
#: Version 2 added the header's digest; a version 1 ledger (written by no released version)
#: is refused, naming the version.
LEDGER_VERSION = 2
#: The suffix of a table's ledger, and of a file's.
TABLE_SUFFIX = "__ledger"
FILE_SUFFIX = ".ledger.parquet"


def ledger_table(target: str) -> str:
    """The name of the ledger of table ``target``."""
    return f"{target}{TABLE_SUFFIX}"


def ledger_path(target: str) -> str:
    """The path of the ledger of the file ``target``."""
    return f"{target}{FILE_SUFFIX}"


def is_ledger(names: Sequence[str]) -> bool:
    """Whether a table or file with these columns is a ledger."""
    return tuple(names) == COLUMNS


@dataclass(frozen=True)
class LedgerAbout:
    """What a ledger was made for: the released ``columns`` (in the order their values are
    digested), each one's ``types`` (as the backend names it), and the ``qis`` (names, in the
    order digested into the class digest)."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    qis: tuple[str, ...]
    version: int = LEDGER_VERSION

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": self.version,
                "columns": list(self.columns),
                "types": list(self.types),
                "qis": list(self.qis),
            },
            sort_keys=True,
        )

    @classmethod
    def from_header(cls, text: object, digest: object, label: str) -> LedgerAbout:
        """The header row's ``about`` (``text``), checked against its ``digest`` (the
        header row's ``row_digest``): a header that does not match it was edited (or
        damaged) after the ledger was written, and is refused."""
        about = cls.from_json(text, label)
        if not isinstance(text, str) or digest != header_digest(text):
            raise InvalidInputError(
                f"{label}: the release ledger's header does not match the digest written with "
                "it: it was changed after the ledger was written; the ledger cannot be trusted "
                "(write it again from the release, or compare with the release itself)"
            )
        return about

    @classmethod
    def from_json(cls, text: object, label: str) -> LedgerAbout:
        try:
            data = json.loads(str(text))
            about = cls(
                tuple(str(c) for c in data["columns"]),
                tuple(str(t) for t in data["types"]),
                tuple(str(q) for q in data["qis"]),
                int(data["version"]),
            )
        except (ValueError, KeyError, TypeError):
            raise InvalidInputError(
                f"{label}: the release ledger's header cannot be read: not a ledger of this "
                "version of reident"
            ) from None
        if about.version != LEDGER_VERSION:
            raise InvalidInputError(
                f"{label}: release ledger version {about.version}, this reident reads "
                f"version {LEDGER_VERSION} (which keeps a digest of its header): write the "
                "ledger again from the release"
            )
        return about


def header_digest(text: str) -> str:
    """The SHA-256 (hex) of a ledger header's JSON text, as its ``row_digest`` keeps it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_about(
    about: LedgerAbout,
    compared: ComparedColumns,
    candidate_types: Sequence[str],
    label: str,
) -> None:
    """A candidate can be compared with the ledger when the compared columns are the ledger's
    columns in full, with the same types, and the QIs are the ledger's: a digest cannot be
    split into columns, nor regrouped on other QIs. Anything else is refused, naming the
    columns (never a value): a wrong count is never given instead.

    ``compared`` matches the candidate's columns with ``about.columns`` (the previous side);
    ``candidate_types`` is the type of each candidate column by position."""
    if sorted(compared.previous) != list(range(len(about.columns))):
        missing = [c for j, c in enumerate(about.columns) if j not in compared.previous]
        raise InvalidInputError(
            f"{label}: the release ledger was made for the columns "
            f"{', '.join(repr(c) for c in about.columns)}; the candidate (or columns=) leaves "
            f"out {', '.join(repr(c) for c in missing)}: a ledger compares the columns it was "
            "made for, all of them"
        )
    if compared.qi_names != about.qis:
        raise InvalidInputError(
            f"{label}: the release ledger was made for the quasi-identifiers "
            f"{', '.join(repr(q) for q in about.qis)}, not "
            f"{', '.join(repr(q) for q in compared.qi_names)}: its class digests cannot be "
            "regrouped; compare on its QIs, in its order"
        )
    for name, i, j in zip(compared.names, compared.candidate, compared.previous, strict=True):
        # an empty type: a SQLite column holding only NULL (its values have no class)
        if candidate_types[i] != about.types[j] and candidate_types[i] and about.types[j]:
            raise InvalidInputError(
                f"{label}: column {name!r} is of type {candidate_types[i]} in the candidate "
                f"and was {about.types[j]} in the release the ledger was made for: release "
                "both with one type to compare them through the ledger"
            )


def _sqlite_value(value: Any) -> str:
    """One value's encoding as SQLite groups it: ``NULL`` one value; an integer and a real
    of the same value one value (``1 = 1.0``), ``-0.0`` as ``0.0``; text and bytes apart."""
    if value is None:
        return "N"
    if isinstance(value, bool):  # pragma: no cover - sqlite3 hands ints
        value = int(value)
    if isinstance(value, float):
        if math.isnan(value):  # SQLite stores NaN as NULL; kept apart all the same
            text = "fnan"
        elif value.is_integer() and abs(value) < 2.0**63:
            text = f"n{int(value)}"
        else:
            text = f"f{value + 0.0!r}"
    elif isinstance(value, int):
        text = f"n{value}"
    elif isinstance(value, bytes):
        text = f"b{value.hex()}"
    else:
        text = f"t{value}"
    return f"V{len(text)}:{text}"


def sqlite_digest(*values: Any) -> str:
    """The SHA-256 (hex) of a row's (or a class's) values as SQLite groups them: the
    function the SQLite connection is given for the ledger's statements."""
    encoded = "".join(_sqlite_value(v) for v in values)
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()

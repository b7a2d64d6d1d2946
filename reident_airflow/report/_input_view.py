"""The typed view of a result's optional ``"input"`` object: the fingerprint of what was
assessed (see :mod:`.view`, which exports it; written by
:func:`reident_airflow.sources.fingerprint.fingerprint_file` / ``fingerprint_sql``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from reident_airflow.report._read import Checked, Number

__all__ = ["InputView"]


@dataclass(frozen=True)
class InputView(Checked):
    """What identifies the input of a result: where it was (``kind``: ``"file"`` or
    ``"database"``; ``location`` without a password; ``table``, or ``query_sha256`` of a
    query), how much was read (``rows``, a file's ``size_bytes``), and what proves which
    version was read (a file's ``sha256``; a database's ``snapshot`` and ``server_time``);
    ``taken_at`` is when. Every field is ``None`` when the object does not hold it."""

    kind: str | None
    location: str | None
    table: str | None
    query_sha256: str | None
    rows: Number | None
    size_bytes: Number | None
    sha256: str | None
    dialect: str | None
    snapshot: str | None
    server_time: str | None
    taken_at: str | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(data)

    @property
    def identified(self) -> bool:
        """Whether it says which version was read: a content hash or a database snapshot
        (a row count and a time alone do not)."""
        return self.sha256 is not None or self.snapshot is not None

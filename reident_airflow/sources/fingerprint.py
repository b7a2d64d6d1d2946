"""What was assessed: a fingerprint of the input, for the report and the assessment JSON.

A reviewer signing a release off needs to know that the numbers describe *this* file or
*this* table, not another version of it. Two entry points (:func:`fingerprint_file` here, and
:func:`~reident_airflow.sources.sql.fingerprint_sql` beside the database readings), one value
(:class:`InputFingerprint`, whose :meth:`~InputFingerprint.to_dict` is the assessment JSON's
optional ``"input"`` object, ``docs/contract.md``)::

    from reident_airflow.sources.fingerprint import fingerprint_file
    from reident_airflow.sources.sql import fingerprint_sql

    fingerprint_file("data/patients.csv", rows=30162).to_dict()
    fingerprint_sql("postgresql://reader@db/clinic", table="patients", schema="staging")
    fingerprint_sql(engine, sql="SELECT sex, age FROM patients WHERE day = '2026-12-01'")

What each proves:

- **A file**: the SHA-256 of its bytes as stored (read in 1 MiB chunks, never whole), and
  its size. The same hash later proves the same bytes were assessed; a different hash that
  they were not. A directory of Parquet files gets one digest over its files' digests, in
  path order. The row count is read from a Parquet file's footer; a CSV's count needs a full
  parse with its separator and quoting, which the reader that assessed it has done: pass it
  as ``rows`` (e.g. the assessment's ``records + excluded_records``).
- **A database table or query**: the row count, the server's clock, and where the server
  offers one, what identifies the snapshot the count saw -- PostgreSQL's
  ``pg_current_snapshot()`` (``xmin:xmax:xip``, read in one ``REPEATABLE READ`` transaction
  with the count, so both saw the same data), MariaDB's ``@@gtid_current_pos`` (the
  replication position; empty when the server writes no binary log). A query is identified
  by the SHA-256 of its text, never by the text itself (it may hold literal values). None of
  these is a hash of the content: they prove *when* and *how much* was read, and let an
  auditor match the run against the database's own logs or a backup taken at that point;
  they cannot prove that a later read returns the same rows. SQLite offers no snapshot
  identifier (``snapshot`` is ``None``); hash its database file with
  :func:`fingerprint_file` when the file itself is the release.

The location never holds a password or URL query options (which may hold credentials):
``postgresql://reader@db:5432/clinic``. Nothing of the data's values is read or kept.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.file_source import PARQUET_SUFFIXES

__all__ = [
    "CHUNK_BYTES",
    "FileHashing",
    "InputFingerprint",
    "fingerprint_file",
    "now_utc",
]

#: How much of a file is read at a time while hashing it.
CHUNK_BYTES = 1 << 20


@dataclass(frozen=True, kw_only=True)
class InputFingerprint:
    """What identifies the input of an assessment (see the module's docstring); a field is
    ``None`` when it is not available for this kind of input."""

    kind: str
    """``"file"`` or ``"database"``."""
    location: str
    """The path, or the database URL without its password and query options."""
    taken_at: str
    """This machine's UTC clock when the fingerprint was taken (ISO 8601)."""
    table: str | None = None
    """The table as named (``schema.table``); ``None`` for a file or a query."""
    query_sha256: str | None = None
    """The SHA-256 of a query's text (the text itself is not kept)."""
    rows: int | None = None
    """How many rows were read (a Parquet footer's count, a database's ``COUNT(*)``, or the
    count the caller passed)."""
    size_bytes: int | None = None
    """A file's size (a directory's: the sum of its files')."""
    sha256: str | None = None
    """A file's content hash (a directory's: one digest over its files' digests)."""
    dialect: str | None = None
    """The database's SQLAlchemy dialect (``postgresql``, ``mariadb``, ``mysql``, ``sqlite``)."""
    snapshot: str | None = None
    """What identifies the snapshot the count saw (PostgreSQL ``pg_current_snapshot()``,
    MariaDB ``@@gtid_current_pos``)."""
    server_time: str | None = None
    """The database's clock when it was read."""

    def to_dict(self) -> dict[str, Any]:
        """The assessment JSON's ``"input"`` object (every key present; ``null`` when not
        available)."""
        return asdict(self)


def now_utc() -> str:
    """This machine's UTC clock, to the second, in ISO 8601."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------------ files
def _sha256_of(path: Path, stop: threading.Event | None = None) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while (stop is None or not stop.is_set()) and (chunk := fh.read(CHUNK_BYTES)):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _directory_digest(root: Path, stop: threading.Event | None = None) -> tuple[str, int]:
    """One digest over every file below ``root``: ``<relative path>\\0<sha256>\\n`` per file,
    in path order, hashed; the size is the sum of the files' sizes."""
    digest = hashlib.sha256()
    total = 0
    files = sorted(p for p in root.rglob("*") if p.is_file())
    if not files:
        raise InvalidInputError(f"{str(root)!r} holds no file to fingerprint")
    for path in files:
        sha, size = _sha256_of(path, stop)
        digest.update(f"{path.relative_to(root).as_posix()}\0{sha}\n".encode())
        total += size
    return digest.hexdigest(), total


def _digest(p: Path, stop: threading.Event | None = None) -> tuple[str, int]:
    """The SHA-256 and size of a file or a directory; an input error when it cannot be read."""
    try:
        return _directory_digest(p, stop) if p.is_dir() else _sha256_of(p, stop)
    except FileNotFoundError:
        raise InvalidInputError(f"{str(p)!r} does not exist") from None
    except OSError as exc:
        raise InvalidInputError(f"{str(p)!r} cannot be read ({exc.strerror})") from None


def _parquet_rows(path: Path) -> int | None:
    """The row count a Parquet file's footer declares (no data page is read)."""
    import pyarrow.parquet as pq

    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (OSError, ValueError):
        return None


def _checked_rows(rows: int | None) -> int | None:
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
        raise InvalidInputError(f"rows must be a whole number >= 0, got {rows!r}")
    return rows


def _file_fingerprint(
    p: Path, digest: tuple[str, int], rows: int | None, taken_at: str
) -> InputFingerprint:
    if rows is None and p.is_file() and p.suffix.lower() in PARQUET_SUFFIXES:
        rows = _parquet_rows(p)
    sha, size = digest
    return InputFingerprint(
        kind="file", location=str(p), taken_at=taken_at, rows=rows, size_bytes=size, sha256=sha
    )


def fingerprint_file(path: str | Path, *, rows: int | None = None) -> InputFingerprint:
    """The fingerprint of a local file (or a directory of Parquet files): its SHA-256 and
    size, and its row count -- ``rows`` when given, else a Parquet footer's count.

    Raises :class:`InvalidInputError` for a path that does not exist or cannot be read.
    """
    p = Path(path)
    rows = _checked_rows(rows)
    digest = _digest(p)
    return _file_fingerprint(p, digest, rows, now_utc())


class FileHashing:
    """The hash of :func:`fingerprint_file`, taken on a thread started at once: the file is
    read while the scans of the same file run, rather than after them (``hashlib`` releases
    the GIL on each chunk). :meth:`fingerprint` waits for the hash and gives what
    :func:`fingerprint_file` gives, ``taken_at`` being when the hash was done; :meth:`cancel`
    stops the thread at its next chunk (the source is closed without a fingerprint)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._stop = threading.Event()
        self._digest: tuple[str, int] | None = None
        self._taken_at = ""
        self._error: Exception | None = None
        self._thread = threading.Thread(target=self._hash, name="reident-hash", daemon=True)
        self._thread.start()

    def _hash(self) -> None:
        try:
            self._digest = _digest(self.path, self._stop)
            self._taken_at = now_utc()
        except Exception as exc:  # raised where the fingerprint is asked for
            self._error = exc

    def fingerprint(self, rows: int | None = None) -> InputFingerprint:
        """The file's fingerprint with ``rows`` (as :func:`fingerprint_file`); hashed again
        here if the thread was cancelled."""
        rows = _checked_rows(rows)
        self._thread.join()
        if self._error is not None:
            raise self._error
        if self._digest is None or self._stop.is_set():
            return fingerprint_file(self.path, rows=rows)
        return _file_fingerprint(self.path, self._digest, rows, self._taken_at)

    def cancel(self) -> None:
        """Stop hashing at the next chunk (a cancelled hash is never used)."""
        self._stop.set()

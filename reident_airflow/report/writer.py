"""Write a report where the run says: a local path (atomically) or an object-storage URL."""

from __future__ import annotations

import os
from pathlib import Path

from reident_airflow.engine.errors import InvalidInputError

__all__ = ["read_report", "write_report"]


def write_report(path_or_url: str | os.PathLike[str], html: str) -> str:
    """Write ``html`` to a local path or an object-storage URL and return where it went.

    A local path is written atomically: a temporary file in the same directory, flushed to
    disk, then renamed over the target, so a reader (a mail job, a file share) never sees half
    a report. Missing parent directories are created. A URL (``s3://``, ``gs://``,
    ``file://``, ... anything with ``://``) goes through Airflow's ``ObjectStoragePath`` and is
    uploaded in one piece (object stores replace an object whole); it needs Airflow and the
    provider of that scheme.
    """
    if not isinstance(html, str):
        raise InvalidInputError(f"a report is HTML text, got {type(html).__name__}")
    target = os.fspath(path_or_url)
    if not isinstance(target, str) or not target.strip():
        raise InvalidInputError("the report path is empty")
    data = html.encode("utf-8")
    if "://" in target:
        return _write_url(target, data)
    return str(_write_local(Path(target), data))


def _write_local(path: Path, data: bytes) -> Path:
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory; give the report's file name")
    directory = path.parent if str(path.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InvalidInputError(f"{path}: {directory} exists and is not a directory") from None
    from reident_airflow._atomic import atomic_file

    # the mode of a new file under the umask, or the replaced file's; no temporary file is
    # left on SIGTERM/SIGINT
    with atomic_file(path) as fh:
        fh.write(data)
    return path


def _write_url(url: str, data: bytes) -> str:
    try:
        from reident_airflow._compat import ObjectStoragePath
    except ImportError:
        raise InvalidInputError(
            f"writing the report to a URL ({url.split('://', 1)[0]}://...) needs Apache "
            "Airflow's object storage: pip install 'reident-airflow[airflow]', or give a "
            "local path"
        ) from None
    remote = ObjectStoragePath(url)
    with remote.open("wb") as fh:  # type: ignore[no-untyped-call]
        fh.write(data)
    return url


def read_report(path_or_url: str | os.PathLike[str]) -> str:
    """The HTML of a report :func:`write_report` wrote: a local path or an object-storage URL
    (through Airflow's ``ObjectStoragePath``). Storage errors are raised as they are."""
    source = os.fspath(path_or_url)
    if not isinstance(source, str) or not source.strip():
        raise InvalidInputError("the report path is empty")
    if "://" not in source:
        return Path(source).read_text(encoding="utf-8")
    try:
        from reident_airflow._compat import ObjectStoragePath
    except ImportError:
        raise InvalidInputError(
            f"reading a report from a URL ({source.split('://', 1)[0]}://...) needs Apache "
            "Airflow's object storage: pip install 'reident-airflow[airflow]'"
        ) from None
    with ObjectStoragePath(source).open("rb") as fh:  # type: ignore[no-untyped-call]
        data: bytes = fh.read()
    return data.decode("utf-8")

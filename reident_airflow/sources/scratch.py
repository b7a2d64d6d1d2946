"""Private scratch folders: where DuckDB spills, and where a bzip2 CSV is decompressed.

Both hold records' values, so each folder is

- created private: mode 0700 (:func:`tempfile.mkdtemp`), under the temporary directory
  (``TMPDIR``), named ``reident-<kind>-<pid>-<random>``;
- removed when it is no longer needed (:func:`remove_folder`), when the process exits
  (``atexit``), and on SIGTERM or SIGINT: a handler interrupts the DuckDB queries under way,
  removes every folder, then hands the signal on to the handler that was there before it
  (Airflow's own, Python's ``KeyboardInterrupt``, or the default action, which ends the
  process). The handler is installed, in the main thread only, by :func:`guard_signals`,
  which every reading calls; a handler installed later by someone else is chained to in turn.
  What the previous handler raises is what the reading raises (:func:`raised_by_signal`);
- if its process was killed outright (``kill -9``), removed by the next reident process of the
  same user that creates a folder, once the process that made it is gone.

Standard library only.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import Any

from reident_airflow._atomic import process_alive

__all__ = [
    "FOLDER_PREFIX",
    "active_query",
    "guard_signals",
    "private_folder",
    "raised_by_signal",
    "remove_all",
    "remove_folder",
]

#: Every scratch folder's name starts with this: ``reident-<kind>-<pid>-<random>``.
FOLDER_PREFIX = "reident-"
_NAME = re.compile(r"^reident-(?:spill|copy)-(?P<pid>\d+)-")
_SIGNALS = tuple(
    s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGINT", None)) if s
)

_LOCK = threading.RLock()  # the signal handler may take it in the thread that holds it
_FOLDERS: set[str] = set()
_QUERIES: weakref.WeakSet[Any] = weakref.WeakSet()
_PREVIOUS: dict[int, Any] = {}
_RAISED: list[BaseException] = []
_SIGNALED: list[int] = []
_swept = False


def _sweep_stale(parent: str) -> None:
    """Remove the scratch folders of this user's reident processes that are gone."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in entries:
        m = _NAME.match(entry.name)
        if m is None or process_alive(int(m.group("pid"))):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False) and (
                uid is None or entry.stat(follow_symlinks=False).st_uid == uid
            ):
                shutil.rmtree(entry.path, ignore_errors=True)


def private_folder(kind: str) -> str:
    """A new folder only this user can enter (0700), removed at exit and on SIGTERM/SIGINT."""
    global _swept
    parent = tempfile.gettempdir()
    if not _swept:
        _swept = True
        _sweep_stale(parent)
    path = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{kind}-{os.getpid()}-", dir=parent)
    os.chmod(path, 0o700)  # mkdtemp's mode already; said here so that it is never lost
    with _LOCK:
        if not _FOLDERS:
            atexit.register(remove_all)
        _FOLDERS.add(path)
    return path


def remove_folder(path: str) -> None:
    """Remove one scratch folder and what it holds."""
    with _LOCK:
        _FOLDERS.discard(path)
    shutil.rmtree(path, ignore_errors=True)


def remove_all() -> None:
    """Remove every scratch folder of this process (at exit, on SIGTERM/SIGINT)."""
    with _LOCK:
        folders = list(_FOLDERS)
        _FOLDERS.clear()
    for path in folders:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def active_query(cursor: Any) -> Iterator[Any]:
    """Inside, ``cursor`` (a DuckDB connection or cursor) is interrupted on SIGTERM/SIGINT."""
    _QUERIES.add(cursor)
    try:
        yield cursor
    finally:
        _QUERIES.discard(cursor)


def raised_by_signal() -> BaseException | None:
    """What a reading interrupted by a signal raises instead of DuckDB's own error (``Query
    interrupted``), once: the exception the previous handler raised (``KeyboardInterrupt``),
    or, when it returned (Airflow's task runner calls ``on_kill`` and returns), an
    :class:`InterruptedError` naming the signal; ``None`` when no signal came."""
    with _LOCK:
        raised = _RAISED[-1] if _RAISED else None
        signals = list(_SIGNALED)
        _RAISED.clear()
        _SIGNALED.clear()
    if raised is None and signals:
        name = signal.Signals(signals[-1]).name
        raised = InterruptedError(
            f"the reading was interrupted by {name}; its scratch folders were removed"
        )
    return raised


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _SIGNALED.append(signum)
    for cursor in list(_QUERIES):
        with contextlib.suppress(Exception):
            cursor.interrupt()
    remove_all()
    previous = _PREVIOUS.get(signum)
    if callable(previous):
        try:
            previous(signum, frame)
        except BaseException as exc:  # KeyboardInterrupt, Airflow's task termination
            _RAISED.append(exc)  # DuckDB turns it into its own error: raised_by_signal
            raise
        return
    # the default action (or a handler not installed from Python): deliver the signal to it
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)


def guard_signals() -> None:
    """Install the SIGTERM/SIGINT handler that removes the scratch folders (main thread only).

    Called at each reading: a handler that replaced it since is kept and chained to (it runs
    after the folders are removed). An ignored signal stays ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for s in _SIGNALS:
        try:
            current = signal.getsignal(s)
            if current is _on_signal or current is signal.SIG_IGN:
                continue
            _PREVIOUS[s] = current
            signal.signal(s, _on_signal)
        except ValueError:  # pragma: no cover - not the main interpreter
            return

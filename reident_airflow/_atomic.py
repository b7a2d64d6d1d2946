"""Atomic file writes and the checks every writing command makes before it starts.

- :func:`atomic_file`: a temporary file next to the target, named
  ``.<target name>.reident-<pid>-<random>.tmp``, created with the mode a new file gets under
  the umask (or the existing target's mode), flushed, ``fsync``-ed and renamed over the target.
  SIGTERM and SIGINT during the write remove the temporary file first (the handlers are
  installed for the duration of the write, then the previous ones are restored and the signal
  is delivered to them). A temporary file left by a process killed outright (``kill -9``) is
  recognised by its name and removed by the next write of the same target, once its process
  is gone.
- :func:`target_lock`: one writer per file target. A run that publishes ``<target>`` holds an
  exclusive ``flock`` on ``<target>.reident-lock`` (an empty file beside it, removed when the
  run is done: :func:`file_lock` says why that is safe) for the whole write and rename; a
  second run waits for it, up to a timeout
  (:func:`wait_for_lock`: :class:`~reident_airflow.engine.errors.TargetBusyError` after it).
  The kernel releases the lock when its process ends, ``kill -9`` included. Without ``fcntl``
  (Windows) there is no lock: the rename alone still keeps every reader to one whole file.
- :func:`check_outputs`: every path a run writes against every path it reads and against the
  others, and every output directory writable, before anything is computed or written.

Standard library only: the command line loads it before pandas or pyarrow.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, Any

from reident_airflow.engine.errors import InvalidInputError, TargetBusyError, resource_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "LOCK_SUFFIX",
    "TEMP_MARK",
    "InterruptGuard",
    "atomic_file",
    "check_lock_timeout",
    "check_outputs",
    "file_lock",
    "interrupt_guard",
    "lock_file_path",
    "new_file_mode",
    "process_alive",
    "remove_stale_temporaries",
    "same_path",
    "target_lock",
    "temp_name",
    "wait_for_lock",
]

_log = logging.getLogger(__name__)

#: Seconds a publish waits for another run publishing the same target before it gives up.
DEFAULT_LOCK_TIMEOUT = 600.0
#: Suffix of the lock file beside a file target (:func:`target_lock`).
LOCK_SUFFIX = ".reident-lock"

#: Marks a temporary file of a reident write: ``.<name>.reident-<pid>-<hex>.tmp``.
TEMP_MARK = "reident"
_TEMP_RE = re.compile(r"^\.(?P<name>.+)\.reident-(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")

_SIGNALS = tuple(
    s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGINT", None)) if s
)


class _Interrupted(BaseException):
    """Raised by the write's signal handler, so that the cleanup in ``finally`` runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


class InterruptGuard:
    """The state of one :func:`interrupt_guard`: the signals received, and the critical
    sections (:meth:`critical`) during which the first one waits."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self._depth = 0
        self._deferred: int | None = None

    @contextlib.contextmanager
    def critical(self) -> Iterator[None]:
        """A section that a signal does not cut in two: a database driver's or SQLAlchemy's
        own bookkeeping (a transaction's commit, a connection's return to its pool) interrupted
        halfway can leave a connection holding a lock that the cleanup then waits for. A signal
        that arrives here is raised when the outermost section ends."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if self._depth == 0 and self._deferred is not None:
            signum, self._deferred = self._deferred, None
            raise _Interrupted(signum)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        if len(self.received) == 1:
            if self._depth:
                self._deferred = signum
            else:
                raise _Interrupted(signum)


@contextlib.contextmanager
def interrupt_guard() -> Iterator[InterruptGuard]:
    """Turn SIGTERM and SIGINT into an exception for the duration of the block.

    The block's own cleanup (``except``/``finally``) then runs; a second signal during that
    cleanup is held back, and a signal during a :meth:`InterruptGuard.critical` section is
    raised when the section ends. On leaving, the previous handlers are restored and a signal
    that arrived is delivered to them (the default SIGTERM action still ends the process;
    Python's SIGINT handler still raises ``KeyboardInterrupt``). Outside the main thread,
    where handlers cannot be installed, the block runs unguarded.
    """
    guard = InterruptGuard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    previous: dict[int, Any] = {}
    try:
        for s in _SIGNALS:
            if signal.getsignal(s) is not signal.SIG_IGN:  # an ignored signal stays ignored
                previous[s] = signal.signal(s, guard._handle)
    except ValueError:  # pragma: no cover - not the main interpreter
        for s, h in previous.items():
            signal.signal(s, h)
        yield guard
        return
    try:
        yield guard
    except _Interrupted:
        pass
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
    if guard.received:
        signum = guard.received[0]
        signal.raise_signal(signum)
        # a previous handler that returned: the block did not complete
        raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)


def temp_name(target: Path) -> Path:
    """A fresh temporary path next to ``target`` (recognisable by :data:`_TEMP_RE`)."""
    return target.with_name(f".{target.name}.{TEMP_MARK}-{os.getpid()}-{secrets.token_hex(4)}.tmp")


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (this one, or any user's)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, someone else's
        return True
    return True


def remove_stale_temporaries(target: Path) -> int:
    """Remove the temporary files of earlier writes of ``target`` whose process is gone."""
    directory = target.parent if str(target.parent) else Path(".")
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        m = _TEMP_RE.match(entry.name)
        if m is None or m.group("name") != target.name or process_alive(int(m.group("pid"))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed += 1
    return removed


def new_file_mode(target: Path) -> int:
    """The mode a new file gets: the existing target's, else 0o666 minus the umask."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _fsync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """Open a binary temporary file for ``path``; on success it replaces ``path`` atomically.

    On any failure, and on SIGTERM or SIGINT, the temporary file is removed and ``path`` is
    left as it was. A ``path`` that exists and is not a regular file (``/dev/null``, a named
    pipe, a terminal) is written to directly: replacing it would put a regular file where a
    device or pipe was.
    """
    target = Path(path)
    if target.exists() and not target.is_file() and not target.is_dir():
        try:
            with target.open("wb") as special:
                yield special
        except OSError as exc:
            exhausted = resource_error(exc, folder=str(target.parent), doing=f"writing {target}")
            if exhausted is not None:
                raise exhausted from None
            raise
        return
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InvalidInputError(f"{target}: directory {directory} does not exist")
    if target.is_dir():
        raise InvalidInputError(f"{target}: is a directory, not a file")
    remove_stale_temporaries(target)
    mode = new_file_mode(target)
    existed = target.exists()
    with interrupt_guard():
        tmp = temp_name(target)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            with os.fdopen(fd, "wb") as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            if existed:
                os.chmod(tmp, mode)  # a new file already has the umask's mode
            os.replace(tmp, target)
        except BaseException as exc:
            tmp.unlink(missing_ok=True)
            exhausted = resource_error(exc, folder=str(directory), doing=f"writing {target}")
            if exhausted is not None:
                raise exhausted from None
            raise
    _fsync_directory(directory)


# --------------------------------------------------------------------- one writer per target
def check_lock_timeout(timeout: float) -> float:
    """``timeout`` (seconds a publish waits for the target's lock) as a float, checked."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
        raise InvalidInputError(f"lock_timeout must be a number of seconds >= 0, got {timeout!r}")
    return float(timeout)


def wait_for_lock(
    attempt: Callable[[], bool],
    what: str,
    timeout: float,
    guard: InterruptGuard | None = None,
) -> None:
    """Call ``attempt`` (one try to take the lock of the target ``what``, never blocking)
    until it succeeds, for at most ``timeout`` seconds; then raise
    :class:`~reident_airflow.engine.errors.TargetBusyError`. Each attempt is a critical
    section of ``guard``; a signal during the pauses between them ends the wait at once."""
    timeout = check_lock_timeout(timeout)
    deadline = time.monotonic() + timeout
    pause = 0.05
    waiting = False
    while True:
        with guard.critical() if guard is not None else contextlib.nullcontext():
            if attempt():
                if waiting:
                    _log.info("the other run is done: publishing %s", what)
                return
        left = deadline - time.monotonic()
        if left <= 0:
            raise TargetBusyError(
                f"another run is publishing {what}; gave up after waiting {timeout:g} s: "
                "retry once it is done, and let one run publish a target at a time "
                "(max_active_runs=1, or a longer lock_timeout)"
            )
        if not waiting:
            _log.info("another run is publishing %s: waiting up to %g s for it", what, timeout)
            waiting = True
        time.sleep(min(pause, left))
        pause = min(pause * 2, 1.0)


def lock_file_path(target: Path) -> Path:
    """The lock file of a file target: ``<target>.reident-lock`` beside it."""
    return target.with_name(target.name + LOCK_SUFFIX)


@contextlib.contextmanager
def file_lock(
    lock_path: Path, what: str, timeout: float, guard: InterruptGuard | None = None
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` for the block, waiting up to ``timeout``
    seconds for another holder (:func:`wait_for_lock`). ``flock`` locks belong to an open
    file, so two threads of one process exclude each other too.

    The file is created for the block and removed at its end, while still locked. A waiter
    that then gets the lock of the removed file sees that ``lock_path`` is no longer (or no
    longer that) file, and starts again on the path's current file: two holders never meet.
    """
    if fcntl is None:  # pragma: no cover - Windows: no lock (module docstring)
        yield
        return
    fds: list[int] = []

    def attempt() -> bool:
        if not fds:
            fds.append(os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666))
        try:
            fcntl.flock(fds[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        mine = os.fstat(fds[0])
        try:
            current = os.stat(lock_path)
        except FileNotFoundError:
            current = None
        if current is None or (current.st_dev, current.st_ino) != (mine.st_dev, mine.st_ino):
            os.close(fds.pop())  # the previous holder removed it: lock the path's file anew
            return attempt()
        return True

    held = False
    try:
        wait_for_lock(attempt, what, timeout, guard)
        held = True
        yield
    finally:
        if held:
            with contextlib.suppress(OSError):
                os.unlink(lock_path)  # still locked: nobody can hold the file being removed
        if fds:
            os.close(fds[0])  # closing the file releases its lock


@contextlib.contextmanager
def target_lock(
    path: str | os.PathLike[str],
    timeout: float = DEFAULT_LOCK_TIMEOUT,
    guard: InterruptGuard | None = None,
) -> Iterator[None]:
    """One writer at a time for the file (or folder) target ``path``: an exclusive lock on
    ``<path>.reident-lock`` for the block (module docstring). A ``path`` that is neither a
    regular file nor a folder (``/dev/null``, a pipe) is written to directly: no lock."""
    target = Path(path)
    if target.exists() and not target.is_file() and not target.is_dir():
        yield
        return
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InvalidInputError(f"{target}: directory {directory} does not exist")
    with file_lock(lock_file_path(target), str(target), timeout, guard):
        yield


# ------------------------------------------------------------------------- preflight checks
def same_path(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name the same file: ``os.path.samefile`` when both exist (links,
    hard links), else the resolved paths."""
    pa, pb = Path(a), Path(b)
    try:
        if pa.exists() and pb.exists():
            return os.path.samefile(pa, pb)
    except OSError:  # pragma: no cover - unreadable: fall back to the names
        pass
    return pa.resolve() == pb.resolve()


def _writable_location(flag: str, path: Path, *, create_dirs: bool) -> None:
    if path.is_dir():
        raise InvalidInputError(f"{flag} {path}: is a directory, not a file")
    directory = path.parent if str(path.parent) else Path(".")
    if create_dirs:  # the nearest existing ancestor must be a writable directory
        while not directory.exists() and directory != directory.parent:
            directory = directory.parent
    if not directory.is_dir():
        raise InvalidInputError(f"{flag} {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{flag} {path}: directory {directory} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise InvalidInputError(f"{flag} {path}: the file is not writable")


def check_outputs(
    outputs: Iterable[tuple[str, str | None]],
    inputs: Iterable[tuple[str, str | None]],
    *,
    create_dirs: Iterable[str] = (),
) -> None:
    """Refuse a run whose outputs name one of its inputs or each other, or cannot be written.

    ``outputs`` are ``(flag, path)`` pairs, ``inputs`` ``(description, path)`` pairs;
    ``None``, ``"-"`` (stdout) and URLs (``://``) are skipped. Outputs whose flag is in
    ``create_dirs`` may name a directory that does not exist yet (it is created), under a
    writable one. Raises
    :class:`InvalidInputError` (exit 2) before anything is written.
    """
    dirs = set(create_dirs)

    def local(pairs: Iterable[tuple[str, str | None]]) -> list[tuple[str, str]]:
        return [
            (flag, str(p))
            for flag, p in pairs
            if p is not None and str(p).strip() not in {"", "-"} and "://" not in str(p)
        ]

    outs, ins = local(outputs), local(inputs)
    for i, (flag, path) in enumerate(outs):
        for in_flag, in_path in ins:
            if same_path(path, in_path):
                raise InvalidInputError(
                    f"{flag} {path} is {in_flag}: a run never overwrites what it reads; "
                    "choose another path"
                )
        for other_flag, other in outs[:i]:
            if same_path(path, other):
                raise InvalidInputError(f"{other_flag} and {flag} name the same file: {path}")
    for flag, path in outs:
        _writable_location(flag, Path(path), create_dirs=flag in dirs)

"""Stopping what a source runs now: a database's statement, DuckDB's query, Spark's jobs.

An operator's ``on_kill`` (Airflow calls it from the task's SIGTERM handler, in the thread
that runs ``execute``, or from another thread) calls ``cancel()`` on what it opened
(:meth:`~reident_airflow.sources.Source.cancel`): a client that merely goes away does not
stop a statement on every server (MariaDB, and PostgreSQL without
``client_connection_check_interval``, run it to its end). Each backend stops its own work:

- databases (:func:`statements_of`, one per SQLAlchemy engine): every connection checked out
  of the engine's pool is running, or about to run, the work of the source. PostgreSQL: the
  driver's ``cancel()`` (a cancel request on a connection of its own); MariaDB / MySQL:
  ``KILL QUERY <connection id>`` from a second connection (the server does not notice a
  client that left); SQLite: ``interrupt()``. Other dialects (Spark's Thrift server): nothing.
- DuckDB (:class:`DuckdbQueries`): ``interrupt()`` of the cursors a source's readings run on;
- Spark (:class:`SparkJobs`): the jobs started under the tag the source (or the operator)
  added to its thread, cancelled with ``cancelJobsWithTag`` (classic) or ``interruptTag``
  (Spark Connect).

Standard library only at import (SQLAlchemy is imported by :func:`statements_of`).

``cancel()`` may be called from any thread, also from a signal handler that interrupted the
thread doing the work: it never waits on a lock that thread may hold for longer than a
bound (a second connection is opened on a thread of its own, joined for at most
:data:`CANCEL_WAIT` seconds), never raises, and is idempotent (a statement already
cancelled is not cancelled again). What it logs are counts and the dialect: never a
statement or a value.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import uuid
import weakref
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = [
    "CANCEL_WAIT",
    "Cancellable",
    "DuckdbQueries",
    "Running",
    "SparkJobs",
    "statements_of",
    "watch_signals",
]

log = logging.getLogger(__name__)

#: The longest ``cancel()`` waits for the second connection that stops a MariaDB / MySQL
#: statement (seconds); the kill goes on in the background after that.
CANCEL_WAIT = 10.0


class Cancellable(Protocol):
    """Something whose running work can be stopped from another thread."""

    def cancel(self) -> None: ...


class Running:
    """What an operator's ``execute`` has open now (sources, engines, Spark sessions), to be
    cancelled together by its ``on_kill``. Thread-safe; re-entrant for a signal handler that
    interrupted the thread holding the lock."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._open: list[Cancellable] = []

    @contextlib.contextmanager
    def holding(self, item: Cancellable) -> Iterator[None]:
        """``item`` is cancelled by :meth:`cancel` while the block runs."""
        with self._lock:
            self._open.append(item)
        try:
            yield
        finally:
            with self._lock, contextlib.suppress(ValueError):
                self._open.remove(item)

    def cancel(self) -> int:
        """Cancel everything held now; how many were cancelled."""
        with self._lock:
            items = list(self._open)
        for item in items:
            _quietly(item.cancel, type(item).__name__)
        return len(items)

    def __deepcopy__(self, memo: dict[int, Any]) -> Running:
        return Running()  # a copied operator runs its own work


def _quietly(call: Callable[[], Any], what: str) -> None:
    try:
        call()
    except Exception as exc:  # a cancel never fails the caller; its message may quote SQL
        log.warning("could not cancel the work of %s (%s)", what, type(exc).__name__)


# ------------------------------------------------------------------------------ databases
class EngineStatements:
    """The connections of one engine checked out of its pool (each running, or about to run,
    a statement) and how to stop them (the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self._engine_ref = weakref.ref(engine)
        self.dialect = engine.dialect.name
        self._lock = threading.RLock()
        self._out: dict[int, Any] = {}  # id of the pool record -> the DB-API connection
        self._cancelled: set[int] = set()
        #: set by :meth:`cancel`: a read begun after it is refused (the work was cancelled
        #: between two statements); a new engine reads again
        self.stopped = False
        from sqlalchemy import event

        event.listen(engine, "checkout", self._checkout)
        event.listen(engine, "checkin", self._checkin)

    def _checkout(self, dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        with self._lock:
            self._out[id(record)] = dbapi_conn
            self._cancelled.discard(id(record))

    def _checkin(self, _dbapi_conn: Any, record: Any) -> None:
        with self._lock:
            self._out.pop(id(record), None)
            self._cancelled.discard(id(record))

    @property
    def running(self) -> int:
        """How many connections are checked out now."""
        with self._lock:
            return len(self._out)

    def cancel(self, only: Collection[Any] | None = None) -> None:
        """Stop the statement each checked-out connection runs (not one already stopped);
        ``only``: of these DB-API connections alone (and the reads begun later are not
        refused)."""
        with self._lock:
            if only is None:
                self.stopped = True
            todo = [
                (k, c)
                for k, c in self._out.items()
                if k not in self._cancelled and (only is None or any(c is o for o in only))
            ]
            self._cancelled.update(k for k, _ in todo)
            # checked out before this engine was watched: stopped all the same
            unseen = [o for o in only or () if not any(o is c for c in self._out.values())]
        self._stop([c for _, c in todo] + unseen)

    def _stop(self, connections: list[Any]) -> None:
        if not connections:
            return
        if self.dialect in {"mysql", "mariadb"}:
            self._kill_queries(connections)
        elif self.dialect in {"postgresql", "sqlite"}:
            stop = "cancel" if self.dialect == "postgresql" else "interrupt"
            for conn in connections:
                _quietly(getattr(conn, stop), self.dialect)
        else:
            log.info("cancel: %s cannot stop a statement from here", self.dialect)
            return
        log.info("cancelled the statements of %d %s connection(s)", len(connections), self.dialect)

    def _kill_queries(self, connections: list[Any]) -> None:
        """``KILL QUERY`` of each connection's server thread, from a connection of the same
        engine opened on a thread of its own (the pool's lock may be held by the thread a
        signal handler interrupted)."""
        ids = [int(c.thread_id()) for c in connections]
        engine = self._engine_ref()
        if engine is None:
            return

        def kill() -> None:
            raw = engine.raw_connection()
            try:
                cursor = raw.cursor()
                for thread_id in ids:
                    cursor.execute(f"KILL QUERY {thread_id:d}")
                cursor.close()
            finally:
                raw.close()

        worker = threading.Thread(
            target=_quietly, args=(kill, self.dialect), name="reident-cancel", daemon=True
        )
        worker.start()
        worker.join(CANCEL_WAIT)


_STATEMENTS: weakref.WeakKeyDictionary[Engine, EngineStatements] = weakref.WeakKeyDictionary()
_STATEMENTS_LOCK = threading.Lock()


def statements_of(engine: Engine) -> EngineStatements:
    """The :class:`EngineStatements` of ``engine`` (one per engine, made on first use: only
    the connections checked out after it are seen, so a source asks for it before its first
    connection)."""
    with _STATEMENTS_LOCK:
        found = _STATEMENTS.get(engine)
        if found is None:
            found = _STATEMENTS[engine] = EngineStatements(engine)
        return found


# ------------------------------------------------------------------------------ signals
_WATCHED = frozenset(int(s) for s in (signal.SIGTERM, signal.SIGINT))
_ON_SIGNAL: list[Callable[[], Any]] = []
_WATCH_LOCK = threading.Lock()
_watch_tried = False


def watch_signals(on_signal: Callable[[], Any]) -> None:
    """Call ``on_signal`` on a thread of its own as soon as SIGTERM or SIGINT arrives.

    A Python signal handler (Airflow's, which calls ``on_kill``) runs only when the main
    thread is back in the interpreter: one waiting in a C driver (psycopg2 waiting in libpq,
    sqlite3 in a step) does not come back until its statement ends. The interpreter writes
    each signal's number to its wakeup fd (:func:`signal.set_wakeup_fd`) the moment it
    arrives, whatever the main thread is doing: a daemon thread reading that fd runs
    ``on_signal`` then, which stops the statement, so the driver returns and the handler
    runs. Installed once, from the main thread, when no wakeup fd is set (an event loop's
    is left alone); a no-op elsewhere. Only signals with a Python handler are written.
    """
    global _watch_tried
    with _WATCH_LOCK:
        if on_signal not in _ON_SIGNAL:
            _ON_SIGNAL.append(on_signal)
        if _watch_tried or threading.current_thread() is not threading.main_thread():
            return
        _watch_tried = True
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        try:
            previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        except ValueError:  # pragma: no cover - not the main interpreter
            reader.close()
            writer.close()
            return
        if previous != -1:  # someone else's (an event loop): theirs stays
            signal.set_wakeup_fd(previous)
            reader.close()
            writer.close()
            return
    threading.Thread(
        target=_watch, args=(reader, writer), name="reident-signals", daemon=True
    ).start()


def _watch(reader: socket.socket, writer: socket.socket) -> None:
    """The watching thread (``writer`` kept open with it)."""
    while True:
        try:
            data = reader.recv(64)
        except OSError:  # pragma: no cover - closed at interpreter exit
            return
        if not data:  # pragma: no cover
            return
        if _WATCHED.intersection(data):
            with _WATCH_LOCK:
                calls = list(_ON_SIGNAL)
            for call in calls:
                _quietly(call, "a signal")


# ------------------------------------------------------------------------------ DuckDB
class DuckdbQueries:
    """The DuckDB cursors a source's readings run on now; :meth:`cancel` interrupts them."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._cursors: list[Any] = []
        self.cancelled = False

    @contextlib.contextmanager
    def running(self, cursor: Any) -> Iterator[None]:
        with self._lock:
            self._cursors.append(cursor)
        try:
            yield
        finally:
            with self._lock, contextlib.suppress(ValueError):
                self._cursors.remove(cursor)

    def cancel(self) -> None:
        with self._lock:
            cursors = list(self._cursors)
            self.cancelled = True
        for cursor in cursors:
            _quietly(cursor.interrupt, "duckdb")
        if cursors:
            log.info("interrupted %d DuckDB quer(ies)", len(cursors))


# ------------------------------------------------------------------------------ Spark
class SparkJobs:
    """The Spark jobs started by one thread under a tag of their own, for a ``with`` block
    (the tag added on entering, removed on leaving, in that thread); :meth:`cancel`
    interrupts them from any thread. A classic session tags its SparkContext's jobs
    (``addJobTag`` / ``cancelJobsWithTag``, PySpark >= 3.5); a Spark Connect session its
    operations (``addTag`` / ``interruptTag``)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.tag = f"reident-{uuid.uuid4().hex}"
        self._context = _spark_context(session)
        self._tagged = False

    def __enter__(self) -> SparkJobs:
        if self._context is not None:
            self._context.addJobTag(self.tag)
        else:
            self.session.addTag(self.tag)
        self._tagged = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._tagged:
            return
        self._tagged = False
        with contextlib.suppress(Exception):  # a stopped session
            if self._context is not None:
                self._context.removeJobTag(self.tag)
            else:
                self.session.removeTag(self.tag)

    def cancel(self) -> None:
        if not self._tagged:
            return
        if self._context is not None:
            self._context.cancelJobsWithTag(self.tag)
            log.info("cancelled the Spark jobs of one source")
        else:
            interrupted = self.session.interruptTag(self.tag)
            log.info("interrupted %d Spark Connect operation(s)", len(interrupted or ()))


def _spark_context(session: Any) -> Any:
    """A classic session's SparkContext; ``None`` for a Spark Connect session (which has
    none: asking raises)."""
    try:
        return session.sparkContext
    except Exception:
        return None

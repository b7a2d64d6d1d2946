"""Database errors as reident shows them: the kind and the code, never a value.

A driver's message may quote a statement's parameters or a value of the table (``invalid input
syntax for type integer: "..."``, a text that cannot be decoded, a duplicate key). So:

- reads (:func:`database_errors`): an error caused by the input (an unknown table or column, a
  bad query, a value the query cannot convert) becomes an :class:`InvalidInputError` naming its
  kind and code; any other (connection lost, server shut down, disk full) keeps its SQLAlchemy
  class, its message naming only the driver's exception class and code
  (:class:`DriverErrorWithheld`);
- connecting (:func:`connection_error`): no statement has run and no record has been read, so
  the driver's own message is shown (``server does not support SSL``, ``access denied``), on
  one line, with any ``[SQL: ...]`` or ``[parameters: ...]`` part cut off and the URL's
  password masked; given the URL, the message also names the backend, host, port, database and
  user (:func:`describe_database`; :func:`located_error` adds them later). The SQLAlchemy class
  is kept, so Airflow still retries it as a connection error;
- writes (:func:`write_error`): a :class:`TableWriteError` naming the step, the table, the counts
  and the database's code, and whether a retry can help (``deterministic``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from reident_airflow.engine.errors import InvalidInputError, OperationCancelledError, ReidentError

__all__ = [
    "DriverConnectionError",
    "DriverErrorWithheld",
    "TableWriteError",
    "connection_error",
    "database_error_code",
    "database_errors",
    "describe_database",
    "driver_error",
    "failure_message",
    "guarded",
    "located_error",
    "wrapped_driver_error",
    "write_error",
]

_T = TypeVar("_T")

#: What a statement that tries to write says, on every database: reads are read-only.
_WRITE_REFUSED = "a change of data (reads run in a read-only transaction)"
# PostgreSQL SQLSTATEs (and classes of them) that mean the input is at fault, and what to say.
_SQLSTATE_PROBLEMS = {
    "42P01": "an unknown table",
    "42703": "an unknown column",
    "42702": "an ambiguous column name",
    "42601": "a syntax error",
    "42883": "an unknown function or operator",
    "42501": "no permission to read it",
    "25006": _WRITE_REFUSED,
}
_SQLSTATE_CLASS_PROBLEMS = {
    "42": "an invalid query",
    "22": "a value it could not process",
    "0A": "a feature it does not support",
    "21": "a subquery that returns more than one row",
}
# MySQL/MariaDB error numbers that mean the input is at fault.
_MYSQL_PROBLEMS = {
    1051: "an unknown table",
    1109: "an unknown table",
    1146: "an unknown table",
    1054: "an unknown column",
    1052: "an ambiguous column name",
    1060: "a duplicate column name",
    1064: "a syntax error",
    1149: "a syntax error",
    1142: "no permission to read it",
    1143: "no permission to read it",
    1305: "an unknown function",
    1630: "an unknown function",
    1356: "a view that refers to something that does not exist",
    1222: "queries with different numbers of columns",
    1241: "a subquery with the wrong number of columns",
    1242: "a subquery that returns more than one row",
    1248: "a derived table without an alias",
    1235: "a feature it does not support",
    1267: "an illegal mix of collations",
    1270: "an illegal mix of collations",
    1271: "an illegal mix of collations",
    1264: "a value out of range",
    1690: "a value out of range",
    1292: "a value it could not convert",
    1366: "a value it could not convert",
    1411: "a value it could not convert",
    1365: "a division by zero",
    3140: "invalid JSON",
    4038: "invalid JSON",
    1792: _WRITE_REFUSED,
}
# SQLite's generic SQL error (SQLITE_ERROR): what its message starts with -> what to say.
_SQLITE_PROBLEMS = (
    ("no such table", "an unknown table"),
    ("no such column", "an unknown column"),
    ("no such function", "an unknown function"),
    ("ambiguous column name", "an ambiguous column name"),
)
#: MySQL/MariaDB error numbers of data and SQL errors (a retry fails the same way).
_MYSQL_DETERMINISTIC = {
    1048,  # column cannot be null
    1054,  # unknown column
    1062,  # duplicate entry
    1064,  # syntax error
    1146,  # no such table
    1264,  # out of range
    1265,  # data truncated
    1292,  # truncated incorrect value
    1366,  # incorrect value for the column
    1406,  # data too long
    1451,  # foreign key (parent)
    1452,  # foreign key (child)
    3819,  # check constraint
    4025,  # check constraint (MariaDB)
}
# What SQLAlchemy appends to a driver's message: the statement, its parameters, a link.
_SQLALCHEMY_PARTS = re.compile(
    r"\s*(\[(SQL|parameters): .*?\]|\(Background on this error .*?\))", re.S
)


class DriverErrorWithheld(Exception):
    """Stands in for a database driver's exception whose message is not passed on.

    A driver's message may quote the statement's parameters or a value of the table (``invalid
    input syntax for type integer: "..."``, a text that cannot be decoded); only the driver's
    exception class and error code are kept.
    """


class DriverConnectionError(Exception):
    """Stands in for a driver's exception raised while connecting: its message is shown.

    Connecting runs no statement of ours and reads no record, so the message (a refused TLS
    handshake, a wrong password, an unknown host) holds nothing of the data and is what the
    user needs to act on. ``reason`` is that message, ``driver`` the driver's class and code,
    ``location`` where the connection was going (:func:`describe_database`; ``None``: not
    known where the error was made).
    """

    def __init__(self, reason: str, driver: str, location: str | None = None) -> None:
        self.reason = reason
        self.driver = driver
        self.location = location
        where = f" to {location}" if location else ""
        super().__init__(f"{driver}: could not connect{where}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.driver, self.location))


class TableWriteError(ReidentError):
    """A database refused a write. The message (and the attributes) say which step, which
    table, the counts and the database's error code -- never a statement parameter or a value.

    ``deterministic`` is true for data and SQL errors (a value too long, a wrong type, a
    constraint, a syntax error: a retry fails the same way), false for connection, timeout and
    other operational errors.
    """

    def __init__(
        self,
        message: str,
        *,
        deterministic: bool = False,
        table: str | None = None,
        error_class: str | None = None,
        code: str | None = None,
        rows_written: int | None = None,
        rows_total: int | None = None,
    ) -> None:
        super().__init__(message)
        self.table = table
        self.error_class = error_class
        self.code = code
        self.rows_written = rows_written
        self.rows_total = rows_total
        self.deterministic = deterministic

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_write_error, (str(self), dict(self.__dict__)))


def _rebuild_write_error(message: str, state: dict[str, Any]) -> TableWriteError:
    error = TableWriteError(message)
    error.__dict__.update(state)
    return error


# ------------------------------------------------------------------------------ error codes
def _sqlstate(orig: BaseException | None) -> str | None:
    state = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
    return str(state) if state else None


def _mysql_errno(orig: BaseException | None) -> int | None:
    module = type(orig).__module__ or ""
    if not (module.startswith("pymysql") or module.startswith("MySQLdb")):
        return None
    args = getattr(orig, "args", ())
    return int(args[0]) if args and isinstance(args[0], int) else None


def database_error_code(exc: BaseException) -> str | None:
    """The database's own code of a driver error: PostgreSQL's SQLSTATE, MySQL's errno,
    SQLite's error name; ``None`` if there is none."""
    orig = getattr(exc, "orig", None) or exc
    args = getattr(orig, "args", ())
    module = type(orig).__module__ or ""
    if ("mysql" in module.lower() or "mariadb" in module) and args and isinstance(args[0], int):
        return f"MySQL error {args[0]}"
    state = _sqlstate(orig)
    if state:
        return f"SQLSTATE {state}"
    name = getattr(orig, "sqlite_errorname", None)
    if isinstance(name, str) and name:
        return name
    return None


def driver_error(orig: BaseException | None) -> str:
    """The driver's exception class and error code: never its message."""
    name = f"{type(orig).__module__}.{type(orig).__name__}"
    state = _sqlstate(orig)
    errno = _mysql_errno(orig)
    sqlite_name = getattr(orig, "sqlite_errorname", None)
    if errno is not None:
        return f"{name}, error {errno}"
    if state:
        return f"{name}, SQLSTATE {state}"
    if sqlite_name:
        return f"{name}, {sqlite_name}"
    return name


# ------------------------------------------------------------------------------ reads
def _sqlite_problem(orig: BaseException | None) -> str | None:
    text = str(orig)  # read to classify the error, never shown
    if getattr(orig, "sqlite_errorname", None) == "SQLITE_ERROR":
        for start, problem in _SQLITE_PROBLEMS:
            if text.startswith(start):
                return problem
        return "a syntax error" if "syntax error" in text else "an invalid query"
    if getattr(orig, "sqlite_errorname", None) == "SQLITE_READONLY":
        return _WRITE_REFUSED
    if text.startswith("Could not decode to UTF-8"):
        return "a text value that is not valid UTF-8"
    return None


def _cancelled(orig: BaseException | None) -> bool:
    """The driver says its statement was stopped while it ran: PostgreSQL's
    ``query_canceled`` (57014), MariaDB / MySQL's ``ER_QUERY_INTERRUPTED`` (1317), SQLite's
    ``SQLITE_INTERRUPT``."""
    return (
        _sqlstate(orig) == "57014"
        or _mysql_errno(orig) == 1317
        or getattr(orig, "sqlite_errorname", None) == "SQLITE_INTERRUPT"
    )


def _input_problem(exc: DBAPIError) -> str | None:
    """What the input did wrong (a phrase naming no value), or None if the failure is not the
    input's (a lost connection, a full disk, a timeout)."""
    orig = exc.orig
    errno = _mysql_errno(orig)
    state = _sqlstate(orig)
    if errno is not None:
        if errno in _MYSQL_PROBLEMS:
            return _MYSQL_PROBLEMS[errno]
        if errno >= 2000:  # the client's own errors: connection lost, server gone away
            return None
    elif state:
        return _SQLSTATE_PROBLEMS.get(state) or _SQLSTATE_CLASS_PROBLEMS.get(state[:2])
    elif type(orig).__module__ == "sqlite3":
        return _sqlite_problem(orig)
    if isinstance(exc, sa.exc.ProgrammingError):
        return "an invalid query"
    if isinstance(exc, sa.exc.DataError):
        return "a value it could not process"
    if isinstance(exc, sa.exc.NotSupportedError):
        return "a feature it does not support"
    return None


def _standing_in(exc: DBAPIError, stand_in: Exception) -> DBAPIError:
    """The same SQLAlchemy error class around ``stand_in``, with no statement or parameters."""
    return type(exc)(
        None,
        None,
        stand_in,
        hide_parameters=True,
        connection_invalidated=exc.connection_invalidated,
        code=exc.code,
    )


def _withheld(exc: DBAPIError) -> DBAPIError:
    """The same SQLAlchemy error class, carrying no statement, parameters or driver message."""
    return _standing_in(
        exc,
        DriverErrorWithheld(
            f"{driver_error(exc.orig)}: the database's message is not shown (it may quote values)"
        ),
    )


# Default ports of the backends, for a URL that names none.
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306, "mssql": 1433, "oracle": 1521}


def describe_database(url: str | sa.URL) -> str:
    """Where a URL points, for messages: ``the postgresql database 'test' on 127.0.0.1:5432
    as user 'etl'`` (the port the driver uses when the URL names none); never the password or
    the query string. A URL SQLAlchemy cannot parse is ``the database``."""
    try:
        parsed = sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError):
        return "the database"
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return f"the sqlite database {parsed.database or ':memory:'!r}"
    text = f"the {backend} database"
    if parsed.database:
        text += f" {parsed.database!r}"
    port = parsed.port or _DEFAULT_PORTS.get(backend)
    if parsed.host:
        text += f" on {parsed.host}{f':{port}' if port else ''}"
    if parsed.username:
        text += f" as user {parsed.username!r}"
    return text


def _reason(orig: BaseException | None, password: str | None) -> str:
    """A driver's connection message on one line, without SQLAlchemy's additions and with the
    password masked (a driver may echo its connection string)."""
    args: tuple[Any, ...] = getattr(orig, "args", ())
    if len(args) == 2 and isinstance(args[0], int) and isinstance(args[1], str):
        text = args[1]  # PyMySQL/mysqlclient: (errno, message)
    else:
        text = str(orig)
    text = _SQLALCHEMY_PARTS.sub("", text)
    if password:
        text = text.replace(password, "***")
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "; ".join(line for line in lines if line) or "no message"


def connection_error(exc: DBAPIError, url: str | sa.URL | None = None) -> DBAPIError:
    """An error raised while connecting, as the same SQLAlchemy class with the driver's own
    message (and its class and code), cut before any ``[SQL: ...]``/``[parameters: ...]``;
    with ``url``, naming where the connection was going (:func:`describe_database`)."""
    password = _password(url)
    location = describe_database(url) if url is not None else None
    return _standing_in(
        exc, DriverConnectionError(_reason(exc.orig, password), driver_error(exc.orig), location)
    )


def _password(url: str | sa.URL | None) -> str | None:
    if url is None:
        return None
    try:
        password = sa.make_url(url).password
    except (sa.exc.ArgumentError, ValueError):
        return None
    return str(password) if password else None


def located_error(exc: BaseException, url: str | sa.URL) -> BaseException:
    """``exc`` naming the database of ``url`` when it is a failure to connect: one made by
    :func:`connection_error` without a location, or a raw SQLAlchemy ``OperationalError``
    raised before any statement ran (``statement`` is ``None``: a reader that called
    ``engine.connect()`` itself), then shown as :func:`connection_error` shows it. The same
    SQLAlchemy class; any other exception is returned as it is."""
    if not isinstance(exc, DBAPIError):
        return exc
    orig = exc.orig
    if isinstance(orig, DriverConnectionError):
        if orig.location is not None:
            return exc
        reason = orig.reason
        password = _password(url)
        if password:
            reason = reason.replace(password, "***")
        return _standing_in(exc, DriverConnectionError(reason, orig.driver, describe_database(url)))
    raw = not isinstance(orig, DriverErrorWithheld)
    if raw and isinstance(exc, sa.exc.OperationalError) and exc.statement is None:
        return connection_error(exc, url)
    return exc


def failure_message(exc: BaseException) -> str | None:
    """What to tell a user about a database failure made by this module: the connection
    failure (where and why), or a failure during a read (the driver's class and code only);
    ``None`` for any other exception."""
    orig = getattr(exc, "orig", None)
    if not isinstance(exc, DBAPIError):
        return None
    if isinstance(orig, DriverConnectionError):
        where = f" to {orig.location}" if orig.location else ""
        return f"could not connect{where}: {orig.reason} ({orig.driver})"
    if isinstance(orig, DriverErrorWithheld):
        return f"the database failed during the read: {orig}"
    return None


@contextmanager
def database_errors(what: str) -> Iterator[None]:
    """Turn a database error into one that quotes nothing of the data (see the module
    docstring); an error already made by :func:`connection_error` passes as it is."""
    try:
        yield
    except DBAPIError as exc:
        if isinstance(exc.orig, DriverConnectionError):
            raise
        if _cancelled(exc.orig):
            raise OperationCancelledError(
                f"{what}: the database stopped the read while it ran (cancelled by the task's "
                f"on_kill, a statement timeout or an administrator; {driver_error(exc.orig)})"
            ) from None
        problem = _input_problem(exc)
        if problem is not None:
            raise InvalidInputError(
                f"{what}: the database rejected the read: {problem} ({driver_error(exc.orig)})"
            ) from None
        raise _withheld(exc) from None
    except UnicodeDecodeError:  # a driver decoding text (its message quotes the bytes)
        raise InvalidInputError(f"{what}: a text value is not valid in its character set") from None


def wrapped_driver_error(
    conn: Connection, exc: Exception, dbapi_conn: Any, cursor: Any
) -> BaseException:
    """A driver exception raised outside SQLAlchemy (``copy_expert``) wrapped as SQLAlchemy
    would have wrapped it; a lost connection is invalidated so that the pool drops it."""
    dialect = conn.dialect
    error: Any = exc
    lost = bool(dialect.is_disconnect(error, dbapi_conn, cursor))
    if lost:
        conn.invalidate()
    return DBAPIError.instance(
        None,
        None,
        exc,
        dialect.loaded_dbapi.Error,
        hide_parameters=True,
        connection_invalidated=lost,
        dialect=dialect,
    )


# ------------------------------------------------------------------------------ writes
def _deterministic(exc: BaseException, code: str | None) -> bool:
    if isinstance(exc, sa.exc.DataError | sa.exc.IntegrityError | sa.exc.ProgrammingError):
        return True
    if code and code.startswith("SQLSTATE "):
        return code[9:11] in {"22", "23", "42"}
    if code and code.startswith("MySQL error "):
        return int(code[12:]) in _MYSQL_DETERMINISTIC
    return isinstance(exc, TypeError | ValueError)


def write_error(
    exc: BaseException, step: str, target: str, written: int, total: int
) -> TableWriteError:
    """The :class:`TableWriteError` for ``exc`` raised while writing ``target`` at ``step``,
    ``written`` of ``total`` records having reached the staging table."""
    code = database_error_code(exc)
    orig = getattr(exc, "orig", None)
    kind = type(exc).__name__
    if orig is not None and type(orig).__name__ != kind:
        kind = f"{kind} ({type(orig).__module__.split('.')[0]}.{type(orig).__name__})"
    message = (
        f"writing table {target!r} failed while {step}: {kind}"
        f"{f', {code}' if code else ''}; {written:,} of {total:,} records had been written "
        "to the staging table, which is dropped; the previous table is unchanged"
    )
    return TableWriteError(
        message,
        table=target,
        error_class=type(orig or exc).__name__,
        code=code,
        rows_written=written,
        rows_total=total,
        deterministic=_deterministic(exc, code),
    )


def guarded(
    fn: Callable[[], _T],
    step: str,
    target: str,
    written: int,
    total: int,
    catch: type[BaseException] | tuple[type[BaseException], ...] = Exception,
) -> _T:
    """``fn()``; an error of class ``catch`` it raises comes back as a :class:`TableWriteError`
    without the statement, its parameters or the original exception chained (they hold record
    values)."""
    error: TableWriteError | None = None
    try:
        return fn()
    except catch as exc:  # a driver's own error may quote a value as well
        error = write_error(exc, step, target, written, total)
        del exc
    raise error from None

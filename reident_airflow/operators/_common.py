"""What every reident operator shares: reading a staged table (connection or file), deciding
retryable vs fail-now, and acting on a breach (fail / skip / warn)."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from reident_airflow._compat import AirflowSkipException, BaseHook, Context
from reident_airflow.engine.errors import ReidentError
from reident_airflow.operators.errors import (
    REPORT_XCOM_KEY,
    ReidentConfigurationError,
    ReidentificationBreach,
)

log = logging.getLogger(__name__)

ON_BREACH_CHOICES = ("fail", "skip", "warn")

# Airflow connection types -> SQLAlchemy drivers installed with this package.
_DRIVERS = {
    "postgres": "postgresql+psycopg2",
    "postgresql": "postgresql+psycopg2",
    "mysql": "mysql+pymysql",
    "mariadb": "mysql+pymysql",
    "sqlite": "sqlite",
}


def parse_columns(value: str | Sequence[str] | None, field: str) -> list[str]:
    """A rendered column list: a list, or a comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, Sequence):
        items = [str(v).strip() for v in value]
    else:
        raise ReidentConfigurationError(f"{field} must be a list of column names")
    if not items or any(not i for i in items):
        raise ReidentConfigurationError(f"{field} needs one or more column names")
    return items


def parse_number(value: Any, field: str, *, integer: bool = False) -> float | int | None:
    """A rendered numeric parameter (templating turns numbers into strings)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in {"", "none"}):
        return None
    if isinstance(value, bool):
        raise ReidentConfigurationError(f"{field} must be a number, got a boolean")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ReidentConfigurationError(f"{field} must be a number, got {value!r}") from None
    if integer:
        if not number.is_integer():
            raise ReidentConfigurationError(f"{field} must be a whole number, got {value!r}")
        return int(number)
    return number


def check_choice(value: str, field: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ReidentConfigurationError(
            f"{field} must be one of {', '.join(map(repr, choices))}, got {value!r}"
        )
    return value


def sqlalchemy_engine(conn_id: str) -> Engine:
    """An engine for an Airflow connection.

    The connection's ``extra`` may give ``sqlalchemy_url`` outright; otherwise the URL is
    built from its fields for postgres / mysql / mariadb / sqlite; any other type is asked for
    its hook's ``get_sqlalchemy_engine()`` (common-sql providers).
    """
    conn = BaseHook.get_connection(conn_id)
    extra = conn.extra_dejson or {}
    if extra.get("sqlalchemy_url"):
        return sa.create_engine(str(extra["sqlalchemy_url"]))
    conn_type = (conn.conn_type or "").lower()
    driver = _DRIVERS.get(conn_type)
    if driver == "sqlite":
        database = conn.host or conn.schema
        if not database:
            raise ReidentConfigurationError(f"sqlite connection {conn_id!r} names no file (host)")
        return sa.create_engine(sa.URL.create("sqlite", database=database))
    if driver is not None:
        url = sa.URL.create(
            driver,
            username=conn.login or None,
            password=conn.password or None,
            host=conn.host or None,
            port=conn.port or None,
            database=conn.schema or None,
        )
        return sa.create_engine(url)
    hook = conn.get_hook()  # type: ignore[no-untyped-call]
    get_engine = getattr(hook, "get_sqlalchemy_engine", None)
    if get_engine is None:
        raise ReidentConfigurationError(
            f"connection {conn_id!r} (type {conn_type!r}) has no SQLAlchemy dialect: give "
            "extra.sqlalchemy_url"
        )
    engine: Engine = get_engine()
    return engine


@contextmanager
def local_file(path: str) -> Iterator[Path]:
    """A local path for ``path``; object-storage URLs are streamed to a temporary file."""
    if "://" not in path:
        yield Path(path)
        return
    from reident_airflow._compat import ObjectStoragePath

    remote = ObjectStoragePath(path)
    suffix = "".join(Path(remote.name).suffixes)
    with tempfile.TemporaryDirectory(prefix="reident-") as tmp:
        target = Path(tmp) / f"staged{suffix}"
        with remote.open("rb") as src, target.open("wb") as dst:  # type: ignore[no-untyped-call]
            shutil.copyfileobj(src, dst, length=1 << 20)
        yield target


def push_report(context: Context, report: dict[str, Any]) -> None:
    ti = context.get("ti")
    if ti is not None:
        ti.xcom_push(key=REPORT_XCOM_KEY, value=report)


def act_on_breach(
    *,
    on_breach: str,
    check: str,
    message: str,
    breaches: Sequence[dict[str, Any]],
    report: dict[str, Any],
    quasi_identifiers: Sequence[str] = (),
    k: int | None = None,
    logger: Any = log,
) -> None:
    """Fail (no retries), skip (downstream does not run) or warn (task succeeds)."""
    if on_breach == "warn":
        logger.warning("%s (on_breach='warn': the task succeeds)", message)
        return
    if on_breach == "skip":
        logger.warning("%s (on_breach='skip': downstream tasks are skipped)", message)
        raise AirflowSkipException(message)
    raise ReidentificationBreach(
        message,
        breaches=breaches,
        report=report,
        check=check,
        quasi_identifiers=quasi_identifiers,
        k=k,
    )


def as_configuration_error(exc: ReidentError) -> ReidentConfigurationError:
    """Input errors (bad column, empty table, bad threshold) fail now: a retry cannot help."""
    return ReidentConfigurationError(str(exc))

"""An Airflow connection as a SQLAlchemy engine, honouring every setting of the connection:
the provider's hook when it is installed, else the documented extras mapped to the driver
(:func:`sqlalchemy_engine`, what the operators read through); and as the URL of that engine
for a reader that takes a URL, Great Expectations' SQL data sources (:func:`connection_url`)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from reident_airflow._compat import BaseHook
from reident_airflow.outcomes import ReidentConfigurationError

__all__ = ["connection_url", "sqlalchemy_engine"]

# Airflow connection types -> SQLAlchemy drivers installed with this package (the ``db`` extra).
_DRIVERS = {
    "postgres": "postgresql+psycopg2",
    "postgresql": "postgresql+psycopg2",
    "mysql": "mysql+pymysql",
    "mariadb": "mysql+pymysql",
    "sqlite": "sqlite",
}

# Connection extras honoured without a provider, by driver: libpq takes these as they are.
_PG_EXTRAS = frozenset(
    {
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "sslcrl",
        "options",
        "connect_timeout",
        "application_name",
        "target_session_attrs",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
    }
)
# ... and PyMySQL takes these (``ssl`` as a dict or its JSON text, like the MySQL provider).
_MYSQL_EXTRAS = frozenset(
    {"charset", "connect_timeout", "ssl", "ssl_ca", "ssl_cert", "ssl_key", "ssl_disabled"}
)
_MYSQL_TLS_EXTRAS = frozenset({"ssl", "ssl_ca", "ssl_cert", "ssl_key"})
# Extras reident itself reads: never passed to a driver.
_OWN_EXTRAS = frozenset({"sqlalchemy_url"})


def sqlalchemy_engine(
    conn_id: str, *, database: str | None = None, hook_params: dict[str, Any] | None = None
) -> Engine:
    """An engine for an Airflow connection, honouring every setting of the connection.

    ``database`` replaces the connection's database (its ``schema`` field) and
    ``hook_params`` are handed to the provider's hook, as Airflow's SQL operators do; without
    a provider hook, ``hook_params`` cannot be honoured and fail.

    - ``extra.sqlalchemy_url`` gives the URL outright (no other extra may be set beside it).
    - When the connection type's provider is installed, its hook builds the engine as
      Airflow's own SQL operators do (``DbApiHook.get_sqlalchemy_engine()``). The postgres
      provider's URL carries no extras (only its ``get_conn()`` applies them), so for it the
      engine's connections come from ``hook.get_conn()``.
    - Without a provider, postgres / mysql / mariadb / sqlite connections are built from their
      fields and the documented extras are handed to the driver; an extra that cannot be
      honoured fails (:class:`ReidentConfigurationError`) instead of being dropped.
    """
    conn = BaseHook.get_connection(conn_id)
    extra = _extras(conn_id, conn)
    conn_type = (conn.conn_type or "").lower()
    if hook_params is not None and not isinstance(hook_params, dict):
        raise ReidentConfigurationError("hook_params must be a dict (or its JSON text)")
    if extra.get("sqlalchemy_url"):
        _refuse(conn_id, conn_type, set(extra) - _OWN_EXTRAS)
        _no_hook_params(conn_id, hook_params)
        url = sa.make_url(str(extra["sqlalchemy_url"]))
        return _create(conn_id, url.set(database=database) if database else url)
    hook = _provider_hook(conn, hook_params)
    if hook is not None:
        if database:  # as common.sql's operators set it
            if hasattr(hook, "database"):
                hook.database = database
            else:
                hook.schema = database
        return _engine_from_hook(conn_id, conn_type, hook)
    _no_hook_params(conn_id, hook_params)
    if database:
        conn.schema = database
    return _engine_from_fields(conn_id, conn_type, conn, extra)


def _engine_from_fields(conn_id: str, conn_type: str, conn: Any, extra: dict[str, Any]) -> Engine:
    """The engine of a connection without a provider hook, from its fields and extras."""
    driver = _DRIVERS.get(conn_type)
    if driver is None:
        raise ReidentConfigurationError(
            f"connection {conn_id!r} (type {conn_type!r}) has no SQLAlchemy dialect: install "
            "its Airflow provider or give extra.sqlalchemy_url"
        )
    if driver == "sqlite":
        _refuse(conn_id, conn_type, set(extra))
        database = conn.host or conn.schema
        if not database:
            raise ReidentConfigurationError(f"sqlite connection {conn_id!r} names no file (host)")
        return _create(conn_id, sa.URL.create("sqlite", database=database))
    url = sa.URL.create(
        driver,
        username=conn.login or None,
        password=conn.password or None,
        host=conn.host or None,
        port=conn.port or None,
        database=conn.schema or None,
    )
    if driver.startswith("postgresql"):
        _refuse(conn_id, conn_type, set(extra) - _PG_EXTRAS)
        return _create(
            conn_id, url, connect_args={k: _scalar(conn_id, k, v) for k, v in extra.items()}
        )
    _refuse(conn_id, conn_type, set(extra) - _MYSQL_EXTRAS)
    return _mysql_engine(conn_id, url, extra)


def _extras(conn_id: str, conn: Any) -> dict[str, Any]:
    try:
        extra = conn.extra_dejson
    except Exception:  # a malformed extra: its text may hold secrets, so it is not quoted
        raise ReidentConfigurationError(
            f"connection {conn_id!r}: extra is not valid JSON"
        ) from None
    if not isinstance(extra, dict):
        raise ReidentConfigurationError(f"connection {conn_id!r}: extra is not a JSON object")
    return dict(extra)


def _refuse(conn_id: str, conn_type: str, unsupported: set[str]) -> None:
    """Fail on extras this path cannot honour (names only: values may be secrets)."""
    if unsupported:
        raise ReidentConfigurationError(
            f"connection {conn_id!r} (type {conn_type!r}): extra {', '.join(sorted(unsupported))} "
            "cannot be honoured without the connection type's Airflow provider; install the "
            "provider or remove the setting"
        )


def _scalar(conn_id: str, key: str, value: Any) -> str | int | float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ReidentConfigurationError(
            f"connection {conn_id!r}: extra {key} must be a string or a number"
        )
    return value


def _create(conn_id: str, url: str | sa.URL, **kwargs: Any) -> Engine:
    from reident_airflow.engine.errors import InvalidInputError
    from reident_airflow.sources.sql import make_engine

    if kwargs:
        try:
            return sa.create_engine(url, **kwargs)
        except (sa.exc.ArgumentError, ValueError, ModuleNotFoundError) as exc:
            raise ReidentConfigurationError(
                f"connection {conn_id!r}: no usable engine ({type(exc).__name__})"
            ) from None
    try:
        return make_engine(str(url) if isinstance(url, str) else url.render_as_string(False))
    except InvalidInputError as exc:
        raise ReidentConfigurationError(f"connection {conn_id!r}: {exc}") from None


def _no_hook_params(conn_id: str, hook_params: dict[str, Any] | None) -> None:
    if hook_params:
        raise ReidentConfigurationError(
            f"connection {conn_id!r}: hook_params ({', '.join(sorted(hook_params))}) need the "
            "connection type's Airflow provider hook; install the provider or remove them"
        )


def _provider_hook(conn: Any, hook_params: dict[str, Any] | None = None) -> Any | None:
    """The provider's DB-API hook for the connection, or None when no provider handles it."""
    try:
        hook = conn.get_hook(hook_params=hook_params) if hook_params else conn.get_hook()
    except Exception:  # Airflow: 'Unknown hook type' when the provider is not installed
        return None
    if not callable(getattr(hook, "get_sqlalchemy_engine", None)):
        return None
    return hook


def _engine_from_hook(conn_id: str, conn_type: str, hook: Any) -> Engine:
    engine_kwargs: dict[str, Any] = {}
    if conn_type in {"postgres", "postgresql"} and callable(getattr(hook, "get_conn", None)):
        # PostgresHook.sqlalchemy_url keeps only ``sqlalchemy_query``; its get_conn() passes
        # every other extra (sslmode, options, ...) to the driver, as its operators connect.
        engine_kwargs["creator"] = hook.get_conn
    try:
        engine: Engine = hook.get_sqlalchemy_engine(engine_kwargs=engine_kwargs)
    except ImportError as exc:  # the provider's URL names a driver that is not installed
        raise ReidentConfigurationError(
            f"connection {conn_id!r} (type {conn_type!r}): its provider's database driver is "
            f"not installed ({exc.name or type(exc).__name__})"
        ) from None
    return engine


def _mysql_engine(conn_id: str, url: sa.URL, extra: dict[str, Any]) -> Engine:
    """PyMySQL with the connection's extras; TLS settings are checked to be in effect."""
    import json
    import ssl as ssl_module

    args: dict[str, Any] = {}
    for key, value in extra.items():
        if key == "ssl":
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    value = None
            if not isinstance(value, dict):
                raise ReidentConfigurationError(
                    f"connection {conn_id!r}: extra ssl must be a JSON object"
                )
            args["ssl"] = value
        elif key == "ssl_disabled":
            args[key] = str(value).lower() in {"1", "true", "yes"}
        else:
            args[key] = _scalar(conn_id, key, value)
    engine = _create(conn_id, url, connect_args=args)
    if _MYSQL_TLS_EXTRAS & set(extra) and not args.get("ssl_disabled"):
        # PyMySQL goes on in clear text when the server offers no TLS: refuse that connection.
        @sa.event.listens_for(engine, "connect")
        def _require_tls(dbapi_conn: Any, _record: Any) -> None:
            if not isinstance(getattr(dbapi_conn, "_sock", None), ssl_module.SSLSocket):
                dbapi_conn.close()
                raise ReidentConfigurationError(
                    f"connection {conn_id!r} asks for TLS but the server did not use it"
                )

    return engine


def connection_url(conn_id: str) -> str:
    """The SQLAlchemy URL of an Airflow connection, password included, for GX's data source.

    The URL is the one the operators' engine uses (:func:`sqlalchemy_engine`:
    ``extra.sqlalchemy_url``,
    the provider's hook, or the connection's fields). GX's SQL data sources take a URL, not an
    engine, so settings the operators pass at connect time must fit in it: a PostgreSQL
    connection's libpq extras (``sslmode``, ``options``...) go in its query; any other extra
    is refused (:class:`~reident_airflow.outcomes.ReidentConfigurationError`, naming the
    extras, never their values) rather than dropped. Never log the URL: it holds the password.
    """
    engine = sqlalchemy_engine(conn_id)  # checks the connection as the operators do
    try:
        url = engine.url
    finally:
        engine.dispose()
    given = dict(BaseHook.get_connection(conn_id).extra_dejson)
    # beside sqlalchemy_url, sqlalchemy_engine refused any other extra
    extra = {} if given.get("sqlalchemy_url") else given
    if extra and url.get_backend_name() == "postgresql" and set(extra) <= _PG_EXTRAS:
        url = url.update_query_dict({k: str(v) for k, v in extra.items()})
    elif extra:
        raise ReidentConfigurationError(
            f"connection {conn_id!r}: extra {', '.join(sorted(extra))} cannot be carried to "
            "Great Expectations' data source (it takes a URL); give extra.sqlalchemy_url "
            "or url= instead"
        )
    return url.render_as_string(hide_password=False)

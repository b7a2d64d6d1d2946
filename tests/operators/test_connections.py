"""Connection settings reach the driver: extras are honoured or the task fails, never dropped."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.cli import main
from reident_airflow.connections import sqlalchemy_engine
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError
from tests.conftest import IN_CI, require_server
from tests.operators._fakes import PushedTI, make_operator

PASSWORD = "s3cret-pw-" + uuid.uuid4().hex[:6]


def _set_conn(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: Any) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


def _pg_conn(monkeypatch: pytest.MonkeyPatch, conn_id: str, port: int = 5432, **extra: Any) -> None:
    _set_conn(
        monkeypatch,
        conn_id,
        conn_type="postgres",
        host="127.0.0.1",
        port=port,
        login="postgres",
        password=PASSWORD,
        schema="postgres" if port != 5432 else "test",
        extra=extra,
    )


def _ssl_in_use(engine: sa.Engine) -> bool:
    with engine.connect() as conn:
        return bool(
            conn.exec_driver_sql(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
            ).scalar_one()
        )


@pytest.fixture(scope="module")
def pg_table() -> Iterator[str]:
    url = require_server("postgresql")
    engine = sa.create_engine(url)
    name = f"conn_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {name} (sex text, age int)")
        conn.exec_driver_sql(
            f"INSERT INTO {name} VALUES ('m', 30), ('m', 30), ('f', 40), ('f', 40), ('f', 40)"
        )
    try:
        yield name
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
        engine.dispose()


def _risk_op(conn_id: str, table: str) -> ReidentificationRiskOperator:
    return make_operator(
        ReidentificationRiskOperator,
        conn_id=conn_id,
        table=table,
        quasi_identifiers=["sex", "age"],
        min_k=2,
    )


# ------------------------------------------------------------- machine's PostgreSQL (ssl = off)
def test_plain_connection_still_works(monkeypatch: pytest.MonkeyPatch, pg_table: str) -> None:
    _pg_conn(monkeypatch, "reident_pg_plain", connect_timeout=5, application_name="reident")
    result = _risk_op("reident_pg_plain", pg_table).execute({"ti": PushedTI()})  # type: ignore[arg-type]
    assert result["passed"] is True
    assert _ssl_in_use(sqlalchemy_engine("reident_pg_plain")) is False


def test_sslmode_require_fails_against_server_without_tls(
    monkeypatch: pytest.MonkeyPatch, pg_table: str
) -> None:
    """Before: the extra was dropped and the task connected in clear text."""
    _pg_conn(monkeypatch, "reident_pg_require", sslmode="require")
    with pytest.raises(Exception) as info:
        _risk_op("reident_pg_require", pg_table).execute({"ti": PushedTI()})  # type: ignore[arg-type]
    assert isinstance(info.value, ReidentConfigurationError | sa.exc.OperationalError)
    text = "".join(str(e) for e in (info.value, info.value.__cause__, info.value.__context__))
    assert PASSWORD not in text


def test_options_extra_reaches_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    require_server("postgresql")
    _pg_conn(monkeypatch, "reident_pg_options", options="-c search_path=reident_marker")
    engine = sqlalchemy_engine("reident_pg_options")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW search_path").scalar_one() == "reident_marker"
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "extra",
    [{"no_such_setting": "1"}, {"sslmode": "require", "cursor": "dictcursor"}],
)
def test_unknown_extra_fails_instead_of_being_ignored(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any]
) -> None:
    _pg_conn(monkeypatch, "reident_pg_unknown", **extra)
    with pytest.raises(ReidentConfigurationError, match="cannot be honoured") as info:
        _risk_op("reident_pg_unknown", "t").execute({"ti": PushedTI()})  # type: ignore[arg-type]
    assert PASSWORD not in str(info.value)


def test_unknown_extra_on_mysql_and_sqlite_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _set_conn(monkeypatch, "reident_my_unknown", conn_type="mysql", host="h", extra={"x": 1})
    _set_conn(
        monkeypatch,
        "reident_lite_unknown",
        conn_type="sqlite",
        host=str(tmp_path / "d.db"),
        extra={"sslmode": "require"},
    )
    for conn_id in ("reident_my_unknown", "reident_lite_unknown"):
        with pytest.raises(ReidentConfigurationError, match="cannot be honoured"):
            sqlalchemy_engine(conn_id)


def test_mysql_extras_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    require_server("mariadb")
    _set_conn(
        monkeypatch,
        "reident_my_charset",
        conn_type="mysql",
        host="127.0.0.1",
        port=3306,
        login="root",
        schema="test",
        extra={"charset": "latin1", "connect_timeout": 5},
    )
    engine = sqlalchemy_engine("reident_my_charset")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT @@character_set_client").scalar_one() == "latin1"
    finally:
        engine.dispose()


def test_mysql_tls_extra_is_not_dropped_when_the_server_has_no_tls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = require_server("mariadb")
    with sa.create_engine(url).connect() as conn:
        have_ssl = conn.exec_driver_sql("SELECT @@have_ssl").scalar_one()
    if have_ssl == "YES":
        pytest.skip("this MariaDB offers TLS: the clear-text refusal cannot be shown")
    _set_conn(
        monkeypatch,
        "reident_my_tls",
        conn_type="mysql",
        host="127.0.0.1",
        port=3306,
        login="root",
        schema="test",
        extra={"ssl": {"check_hostname": False}},
    )
    engine = sqlalchemy_engine("reident_my_tls")
    try:  # PyMySQL >= 1.2 refuses itself; older ones are stopped by reident's own check
        refused = (ReidentConfigurationError, sa.exc.OperationalError)
        with pytest.raises(refused, match=r"SSL|TLS"), engine.connect():
            pass
    finally:
        engine.dispose()


# ----------------------------------------------------------------- the CLI with bare schemes
def test_cli_assess_postgresql_url(pg_table: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code = main(
        [
            "assess",
            "postgresql://postgres@127.0.0.1:5432/test",
            "--table",
            pg_table,
            "--qi",
            "sex,age",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    assert json.loads(out.read_text())


def test_cli_assess_mysql_url(tmp_path: Path) -> None:
    url = require_server("mariadb")
    engine = sa.create_engine(url)
    name = f"conn_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {name} (sex varchar(4), age int)")
        conn.exec_driver_sql(f"INSERT INTO {name} VALUES ('m', 30), ('m', 30), ('f', 40)")
    try:
        out = tmp_path / "r.json"
        code = main(
            [
                "assess",
                "mysql://root@127.0.0.1:3306/test",
                "--table",
                name,
                "--qi",
                "sex,age",
                "--json",
                str(out),
            ]
        )
        assert code == 0
        assert json.loads(out.read_text())
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
        engine.dispose()


# ------------------------------------------------------- a throwaway cluster with ssl = on
def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"TLS cluster: {reason}")
    pytest.skip(f"TLS cluster: {reason}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _self_signed(directory: Path, name: str, cn: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    done = subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "1",
            "-subj", f"/CN={cn}", "-addext", f"subjectAltName=IP:{cn}",
            "-keyout", str(key), "-out", str(cert),
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    if done.returncode != 0:
        _unavailable(f"openssl failed: {done.stderr[-300:]}")
    return cert, key


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[tuple[int, Path, Path]]:
    """(port, the server's certificate, an unrelated certificate) of a cluster with ssl = on."""
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if not bins:
        _unavailable("no initdb/pg_ctl under /usr/lib/postgresql/*/bin")
    if shutil.which("openssl") is None:
        _unavailable("openssl is not installed")
    bindir = bins[-1].parent
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root
        if shutil.which("runuser") is None:
            _unavailable("running as root and runuser is not available")
        as_user = ["runuser", "-u", "postgres", "--"]
    tmp = Path(tempfile.mkdtemp(prefix="reident-tls-"))
    tmp.chmod(0o777)
    data = tmp / "data"
    port = _free_port()

    if not stat.S_ISCHR(os.stat("/dev/null").st_mode):
        # initdb and pg_ctl redirect to /dev/null; where it is not the null device, give them
        # one in a private mount namespace (the machine's /dev/null is left as it is).
        if os.geteuid() != 0 or shutil.which("unshare") is None:
            _unavailable("/dev/null is not the null device and no private one can be made")
        null = tmp / "null"
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        null.chmod(0o666)
        as_user = [
            "unshare", "-m", "sh", "-c",
            f"mount --bind {null} /dev/null && exec \"$@\"",
            "sh", *as_user,
        ]  # fmt: skip

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*as_user, *args],
            stdin=subprocess.DEVNULL if stat.S_ISCHR(os.stat("/dev/null").st_mode) else None,
            capture_output=True,
            text=True,
            timeout=60,
        )

    try:
        done = run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-N")
        if done.returncode != 0:
            _unavailable(f"initdb failed: {done.stderr[-300:]}")
        cert, key = _self_signed(tmp, "server", "127.0.0.1")
        wrong, _ = _self_signed(tmp, "wrong", "127.0.0.1")
        shutil.copy(cert, data / "server.crt")
        shutil.copy(key, data / "server.key")
        if as_user:
            shutil.chown(data / "server.crt", "postgres")
            shutil.chown(data / "server.key", "postgres")
        (data / "server.key").chmod(0o600)
        for f in (cert, wrong):
            f.chmod(0o644)
        with (data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nport = {port}\nlisten_addresses = '127.0.0.1'\nssl = on\n"
                f"unix_socket_directories = '{tmp}'\nfsync = off\n"
            )
        done = run(
            str(bindir / "pg_ctl"), "-D", str(data), "-l", str(tmp / "log"), "-w", "-t", "20",
            "start",
        )  # fmt: skip
        if done.returncode != 0:
            log = (tmp / "log").read_text() if (tmp / "log").exists() else done.stderr
            _unavailable(f"pg_ctl start failed: {log[-300:]}")
        try:
            yield port, cert, wrong
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        time.sleep(0.1)
        shutil.rmtree(tmp, ignore_errors=True)


def test_tls_cluster_honours_sslmode(
    monkeypatch: pytest.MonkeyPatch, tls_cluster: tuple[int, Path, Path]
) -> None:
    port, cert, wrong = tls_cluster
    _pg_conn(monkeypatch, "reident_tls_require", port=port, sslmode="require")
    engine = sqlalchemy_engine("reident_tls_require")
    try:
        assert _ssl_in_use(engine) is True
    finally:
        engine.dispose()

    _pg_conn(
        monkeypatch, "reident_tls_verify", port=port, sslmode="verify-full", sslrootcert=str(cert)
    )
    engine = sqlalchemy_engine("reident_tls_verify")
    try:
        assert _ssl_in_use(engine) is True
    finally:
        engine.dispose()

    _pg_conn(
        monkeypatch, "reident_tls_wrong", port=port, sslmode="verify-full", sslrootcert=str(wrong)
    )
    engine = sqlalchemy_engine("reident_tls_wrong")
    try:
        with pytest.raises(sa.exc.OperationalError) as info:
            _ssl_in_use(engine)
        assert PASSWORD not in str(info.value)
    finally:
        engine.dispose()

    # A table read by the operator itself goes over TLS too.
    _pg_conn(monkeypatch, "reident_tls_op", port=port, sslmode="require")
    admin = sa.create_engine(f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres")
    with admin.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (sex text, age int)")
        conn.exec_driver_sql("INSERT INTO t VALUES ('m', 30), ('m', 30)")
    admin.dispose()
    result = _risk_op("reident_tls_op", "t").execute({"ti": PushedTI()})  # type: ignore[arg-type]
    assert result["passed"] is True


def test_provider_hook_builds_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the provider installed its hook builds the engine; for postgres, connections come
    from ``get_conn()`` (the only place the provider applies extras)."""
    from reident_airflow import connections

    url = require_server("postgresql")
    calls: list[dict[str, Any]] = []

    class _Hook:
        def get_conn(self) -> Any:
            import psycopg2

            return psycopg2.connect(
                host="127.0.0.1", port=5432, user="postgres", dbname="test", sslmode="require"
            )

        def get_sqlalchemy_engine(self, engine_kwargs: dict[str, Any] | None = None) -> Any:
            calls.append(dict(engine_kwargs or {}))
            return sa.create_engine(url, **(engine_kwargs or {}))

    monkeypatch.setattr(connections, "_provider_hook", lambda conn, hook_params=None: _Hook())
    _pg_conn(monkeypatch, "reident_pg_provider", sslmode="require", cursor="dictcursor")
    engine = sqlalchemy_engine("reident_pg_provider")
    assert calls and "creator" in calls[0]
    # the hook's sslmode=require reached libpq
    with pytest.raises(sa.exc.OperationalError), engine.connect():
        pass
    engine.dispose()


def test_provider_hook_without_its_driver_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reident_airflow import connections

    class _Hook:
        def get_sqlalchemy_engine(self, engine_kwargs: dict[str, Any] | None = None) -> Any:
            raise ModuleNotFoundError("No module named 'MySQLdb'", name="MySQLdb")

    monkeypatch.setattr(connections, "_provider_hook", lambda conn, hook_params=None: _Hook())
    _set_conn(monkeypatch, "reident_my_provider", conn_type="mysql", host="h", password=PASSWORD)
    with pytest.raises(ReidentConfigurationError, match="MySQLdb") as info:
        sqlalchemy_engine("reident_my_provider")
    assert PASSWORD not in str(info.value)


def test_database_and_hook_params_reach_the_provider_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As common.sql's operators do: ``hook_params`` build the hook, ``database`` is set on it
    (the engine then comes from the hook, which the real PostgreSQL answers)."""
    from reident_airflow import connections

    url = sa.make_url(require_server("postgresql"))
    given: list[Any] = []

    class _Hook:
        database: str | None = None

        def get_sqlalchemy_engine(self, engine_kwargs: dict[str, Any] | None = None) -> Any:
            return sa.create_engine(url.set(database=self.database))

    def provider_hook(conn: Any, hook_params: Any = None) -> Any:
        given.append(hook_params)
        return hook

    hook = _Hook()
    monkeypatch.setattr(connections, "_provider_hook", provider_hook)
    _set_conn(monkeypatch, "reident_hook_params", conn_type="mysql", host="h", schema="other")
    engine = sqlalchemy_engine(
        "reident_hook_params", database=url.database, hook_params={"log_sql": False}
    )
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT current_database()")).scalar() == url.database
    finally:
        engine.dispose()
    assert given == [{"log_sql": False}] and hook.database == url.database


def test_make_engine_bare_schemes_use_installed_drivers() -> None:
    import importlib.util

    from reident_airflow.sources.sql import make_engine

    if importlib.util.find_spec("psycopg") is None:
        assert make_engine("postgresql://u@h/d").dialect.driver == "psycopg2"
    if importlib.util.find_spec("MySQLdb") is None:
        assert make_engine("mysql://u@h/d").dialect.driver == "pymysql"
        assert make_engine("mariadb://u@h/d").dialect.driver == "pymysql"
    assert make_engine("postgresql+psycopg2://u@h/d").dialect.driver == "psycopg2"

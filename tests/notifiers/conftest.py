"""Fixtures of the notifier tests: a local webhook receiver, a local SMTP server, and a
throw-away Airflow home for the ``dag.test()`` run.

Two Airflow setups, kept apart on purpose:

* In this pytest process, Airflow is only imported (notifier unit tests, connections from
  ``AIRFLOW_CONN_*``). ``AIRFLOW_HOME`` is set to a temporary directory unless someone (the
  suite's root ``conftest.py``) already set it, which is then reused as it is.
* The real DAG run happens in a subprocess with its own ``AIRFLOW_HOME`` (migrated once per
  session with ``airflow db migrate``) and its own dags folder: Airflow 3's ``dag.test()``
  only runs a DAG that a bundle holds, and Airflow's configuration is read once per process,
  so the run cannot share the in-process home and its dags folder without clashing.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from tests._schemas import schema_errors

# Airflow reads its configuration when first imported: this must run before any test module
# imports it (importing ``airflow.sdk`` with no AIRFLOW_HOME creates ``~/airflow``).
if not os.environ.get("AIRFLOW_HOME"):
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="reident-notifier-airflow-home-")
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

HERE = Path(__file__).resolve().parent
DAG_FILE = HERE / "breach_alert_dag.py"
_MIGRATED_MARK = ".reident-db-migrated"


# --------------------------------------------------------------------------------------------
# Webhook receiver
# --------------------------------------------------------------------------------------------


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class WebhookReceiver:
    """An HTTP server on 127.0.0.1 that records every POST and answers ``status``."""

    port: int
    requests: list[ReceivedRequest] = field(default_factory=list)
    status: int = 200
    location: str | None = None
    #: What the package's JSON Schema found wrong in each alert received (issue 29): every
    #: alert posted in these tests is checked; the fixture fails a test that received one.
    schema_errors: list[str] = field(default_factory=list)

    @property
    def host(self) -> str:
        return "127.0.0.1"


def _webhook_handler(receiver: WebhookReceiver) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            receiver.schema_errors += schema_errors(json.loads(body))
            receiver.requests.append(
                ReceivedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            self.send_response(receiver.status)
            if receiver.location:
                self.send_header("Location", receiver.location)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def webhook_server() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver(port=0)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _webhook_handler(receiver))
    server.daemon_threads = True
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert receiver.schema_errors == [], receiver.schema_errors


# --------------------------------------------------------------------------------------------
# SMTP server (smtpd is deprecated and aiosmtpd is not a dependency: a minimal one)
# --------------------------------------------------------------------------------------------


@dataclass
class ReceivedMail:
    mail_from: str
    rcpt_to: list[str]
    data: bytes
    auth: str | None

    def message(self) -> EmailMessage:
        msg = message_from_bytes(self.data, policy=policy.default)
        assert isinstance(msg, EmailMessage)
        return msg


@dataclass
class SmtpReceiver:
    """A plain SMTP server on 127.0.0.1 (no TLS); AUTH PLAIN offered if ``credentials``."""

    port: int
    mails: list[ReceivedMail] = field(default_factory=list)
    credentials: tuple[str, str] | None = None
    errors: list[BaseException | None] = field(default_factory=list)

    @property
    def host(self) -> str:
        return "127.0.0.1"


class _SmtpHandler(socketserver.StreamRequestHandler):
    server: _SmtpServer

    def reply(self, *lines: str) -> None:
        self.wfile.write("".join(f"{line}\r\n" for line in lines).encode("ascii"))
        self.wfile.flush()

    def read_line(self) -> str | None:
        raw = self.rfile.readline()
        return raw.decode("utf-8", "replace").rstrip("\r\n") if raw else None

    def handle(self) -> None:
        receiver = self.server.receiver
        mail_from, rcpt_to, auth = "", [], None
        self.reply("220 localhost reident test SMTP")
        while (line := self.read_line()) is not None:
            verb, _, arg = line.partition(" ")
            verb = verb.upper()
            if verb == "EHLO":
                auth_line = ["250-AUTH PLAIN"] if receiver.credentials else []
                self.reply("250-localhost", "250-8BITMIME", *auth_line, "250 HELP")
            elif verb == "HELO":
                self.reply("250 localhost")
            elif verb == "AUTH":
                mech, _, initial = arg.partition(" ")
                if mech.upper() != "PLAIN" or not receiver.credentials:
                    self.reply("504 unsupported")
                    continue
                if not initial:
                    self.reply("334 ")
                    initial = self.read_line() or ""
                _, user, password = base64.b64decode(initial).decode().split("\0")
                if (user, password) == receiver.credentials:
                    auth = user
                    self.reply("235 authenticated")
                else:
                    self.reply("535 bad credentials")
            elif verb == "MAIL":
                mail_from, rcpt_to = arg.partition(":")[2].split()[0].strip("<>"), []
                self.reply("250 OK")
            elif verb == "RCPT":
                rcpt_to.append(arg.partition(":")[2].split()[0].strip("<>"))
                self.reply("250 OK")
            elif verb == "DATA":
                self.reply("354 end with <CRLF>.<CRLF>")
                chunks: list[bytes] = []
                while (raw := self.rfile.readline()) not in (b".\r\n", b""):
                    chunks.append(raw[1:] if raw.startswith(b"..") else raw)
                receiver.mails.append(ReceivedMail(mail_from, rcpt_to, b"".join(chunks), auth))
                self.reply("250 OK queued")
            elif verb in ("RSET", "NOOP"):
                self.reply("250 OK")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("502 not implemented")


class _SmtpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    receiver: SmtpReceiver

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that hangs up mid-dialogue (a TLS hello to this plain server): recorded
        self.receiver.errors.append(sys.exc_info()[1])


@pytest.fixture
def smtp_server() -> Iterator[SmtpReceiver]:
    server = _SmtpServer(("127.0.0.1", 0), _SmtpHandler)
    server.receiver = SmtpReceiver(port=server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# --------------------------------------------------------------------------------------------
# Airflow home of the dag.test() subprocess
# --------------------------------------------------------------------------------------------


def subprocess_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment minus its Airflow settings, pointed at ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(home / "dags"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    env.update(extra)
    return env


class _Migration:
    """``airflow db migrate`` of the subprocess's home, started as soon as collection shows
    that the ``dag.test()`` test will run, so that it overlaps the unit tests (~3 s)."""

    home: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    done = False

    @classmethod
    def start(cls) -> Path:
        if cls.home is None:
            given = os.environ.get("REIDENT_NOTIFIER_AIRFLOW_HOME")
            cls.home = Path(given or tempfile.mkdtemp(prefix="reident-notifier-dag-run-"))
            (cls.home / "dags").mkdir(parents=True, exist_ok=True)
            shutil.copy(DAG_FILE, cls.home / "dags" / DAG_FILE.name)
            if (cls.home / _MIGRATED_MARK).exists():
                cls.done = True
                return cls.home
            airflow = Path(sys.executable).with_name("airflow")
            command = [str(airflow)] if airflow.exists() else [sys.executable, "-m", "airflow"]
            with (cls.home / "migrate.log").open("wb") as log:
                cls.process = subprocess.Popen(
                    [*command, "db", "migrate"],
                    env=subprocess_env(cls.home),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        return cls.home

    @classmethod
    def wait(cls) -> Path:
        home = cls.start()
        if not cls.done and cls.process is not None:
            returncode = cls.process.wait(timeout=300)
            if returncode != 0:
                log = (home / "migrate.log").read_text(errors="replace")
                raise RuntimeError(f"airflow db migrate failed:\n{log[-3000:]}")
            (home / _MIGRATED_MARK).write_text("migrated\n")
            cls.done = True
        return home

    @classmethod
    def finish(cls) -> None:
        if cls.process is not None and cls.process.poll() is None:
            cls.process.terminate()
            cls.process.wait(timeout=30)
        if cls.home is not None and not os.environ.get("REIDENT_NOTIFIER_AIRFLOW_HOME"):
            shutil.rmtree(cls.home, ignore_errors=True)


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if any("dag_run_home" in getattr(item, "fixturenames", ()) for item in items):
        _Migration.start()


def pytest_sessionfinish() -> None:
    _Migration.finish()


@pytest.fixture(scope="session")
def dag_run_home() -> Path:
    """A migrated ``AIRFLOW_HOME`` whose dags folder holds ``breach_alert_dag.py``.

    Idempotent: ``REIDENT_NOTIFIER_AIRFLOW_HOME`` may name a home prepared earlier (kept, and
    migrated only if this fixture has not migrated it before).
    """
    return _Migration.wait()

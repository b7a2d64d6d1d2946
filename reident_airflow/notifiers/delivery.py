"""Where an alert goes: the URL and headers of an HTTP connection, e-mail recipients, TLS."""

from __future__ import annotations

import base64
import json
import re
import ssl
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "NoRedirect",
    "connection_extra",
    "flag",
    "http_notifier_class",
    "parse_recipients",
    "slack_webhook_notifier_class",
    "smtp_notifier_class",
    "ssl_context",
    "webhook_headers",
    "webhook_url",
]


def flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def connection_extra(conn: Any) -> dict[str, Any]:
    extra = conn.extra_dejson
    return extra if isinstance(extra, dict) else {}


def webhook_url(conn: Any) -> str:
    """The URL an HTTP connection points at (the rules of Airflow's ``HttpHook``).

    ``host`` may be a full URL (``https://hooks.example.org/services``); otherwise the URL is
    ``<schema or conn_type or "http">://host[:port]``. ``extra["endpoint"]`` is appended as the
    path. A port is added to a full-URL host only if that URL names none.
    """
    host = (conn.host or "").strip()
    if not host:
        raise ValueError(f"connection {conn.conn_id!r} has no host")
    if "://" in host:
        parts = urllib.parse.urlsplit(host)
        if conn.port and parts.port is None:
            parts = parts._replace(netloc=f"{parts.netloc}:{conn.port}")
        base = urllib.parse.urlunsplit(parts)
    else:
        schema = (conn.schema or "").strip().lower()
        conn_type = (conn.conn_type or "").strip().lower()
        if schema in ("http", "https"):
            scheme = schema
        else:
            scheme = "https" if conn_type == "https" else "http"
        base = f"{scheme}://{host}:{conn.port}" if conn.port else f"{scheme}://{host}"
    endpoint = str(connection_extra(conn).get("endpoint") or "").strip()
    if endpoint:
        base = f"{base.rstrip('/')}/{endpoint.lstrip('/')}"
    return base


def webhook_headers(conn: Any) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "User-Agent": "reident-airflow"}
    extra_headers = connection_extra(conn).get("headers") or {}
    if isinstance(extra_headers, str):
        extra_headers = json.loads(extra_headers)
    if not isinstance(extra_headers, Mapping):
        raise ValueError("extra['headers'] must be a JSON object")
    headers.update({str(k): str(v) for k, v in extra_headers.items()})
    if conn.login and not any(k.lower() == "authorization" for k in headers):
        token = base64.b64encode(f"{conn.login}:{conn.password or ''}".encode()).decode("ascii")
        headers["Authorization"] = f"Basic {token}"
    return headers


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirected POST would be re-sent as a body-less GET: report the 3xx instead."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def parse_recipients(to: str | Sequence[str] | None) -> list[str]:
    if to is None:
        return []
    items = [to] if isinstance(to, str) else list(to)
    out: list[str] = []
    for item in items:
        out += [a for a in (p.strip() for p in re.split(r"[,;]", str(item))) if a]
    return out


def ssl_context(extra: Mapping[str, Any]) -> ssl.SSLContext:
    """``extra["ssl_context"]``: ``"default"`` (verify, the default) or ``"none"``."""
    mode = extra.get("ssl_context") or "default"
    if mode not in ("default", "none"):
        raise ValueError(f"extra['ssl_context'] must be 'default' or 'none', not {mode!r}")
    context = ssl.create_default_context()
    if mode == "none":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def smtp_notifier_class() -> Any:
    """The smtp provider's ``SmtpNotifier`` (``apache-airflow-providers-smtp``); ``None``
    when the provider is not installed (the notifier then sends with ``smtplib``)."""
    try:
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier
    except ImportError:
        return None
    return SmtpNotifier


def http_notifier_class() -> Any:
    """The http provider's ``HttpNotifier`` (``apache-airflow-providers-http``, the ``http``
    extra); ``None`` when the provider is not installed (the notifier then posts with
    ``urllib``)."""
    try:
        from airflow.providers.http.notifications.http import HttpNotifier
    except ImportError:
        return None
    return HttpNotifier


def slack_webhook_notifier_class() -> Any:
    """The slack provider's ``SlackWebhookNotifier`` (``apache-airflow-providers-slack``, the
    ``slack`` extra); ``None`` when the provider is not installed."""
    try:
        from airflow.providers.slack.notifications.slack_webhook import SlackWebhookNotifier
    except ImportError:
        return None
    return SlackWebhookNotifier

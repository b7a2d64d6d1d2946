"""Alerting on a breached release gate: a notifier for ``on_failure_callback``.

:class:`ReidentBreachNotifier` sends one alert per failed task to a webhook (JSON ``POST`` to
the URL of an Airflow HTTP connection) and/or by e-mail (through an Airflow SMTP connection).
The content is built by two plain functions, :func:`breach_payload` and :func:`breach_email`.
A breach acted on with ``on_breach="skip"`` or ``"warn"`` fails nothing: the operator calls the
notifiers of its ``on_failure_callback`` itself, so every outcome alerts (``outcomes`` opts out).

What an alert carries (docs/contract.md §5, "Privacy of the outputs themselves"): the DAG, task and
run ids, the check, each breached metric with its observed value and limit, the QI column
names, ``k``, the number of records and a link to the task log. These fields are *copied one
by one* from the :class:`~reident_airflow.outcomes.ReidentificationBreach` (or the
report the operator pushed to XCom); the report is never forwarded wholesale, and the
exception's message is never sent, so an alert cannot carry a record's values even if a
report or a message one day does.

A failure that is not a breach (a database that is down, a bad parameter) gets a short
"task failed (not a re-identification breach): <exception class>" alert by default — an alert
on an infrastructure failure of a release gate is useful — with the class name only, never
the message, which may quote data (an SQL statement, a value). ``alert_on_other_failures=False``
turns these off.
"""

from __future__ import annotations

import json
import math
import smtplib
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from jinja2 import TemplateSyntaxError

from reident_airflow._compat import BaseHook, BaseNotifier, Context
from reident_airflow.notifiers.delivery import (
    NoRedirect,
    connection_extra,
    flag,
    http_notifier_class,
    parse_recipients,
    slack_webhook_notifier_class,
    smtp_notifier_class,
    ssl_context,
    webhook_headers,
    webhook_url,
)
from reident_airflow.notifiers.message import SUBJECT_TEMPLATES, breach_email, slack_text
from reident_airflow.notifiers.payload import (
    ALERT_SCHEMA,
    BREACH_EVENT,
    ERROR_EVENT,
    EVENTS,
    OUTCOMES,
    SKIPPED_EVENT,
    WARNING_EVENT,
    alert_kind,
    breach_payload,
    is_gate_alert,
)
from reident_airflow.outcomes import REPORT_PATH_XCOM_KEY, REPORT_URL_XCOM_KEY, REPORT_XCOM_KEY

__all__ = [
    "ALERT_SCHEMA",
    "BREACH_EVENT",
    "ERROR_EVENT",
    "EVENTS",
    "OUTCOMES",
    "SKIPPED_EVENT",
    "WARNING_EVENT",
    "ReidentBreachNotifier",
    "breach_email",
    "breach_payload",
    "webhook_url",
]

_DEFAULT_SMTP_CONN_ID = "smtp_default"


#: Where an exception remembers the destinations already alerted about it.
_ALERTED_ATTR = "_reident_alerted"


def _first_alert(exc: Any, destination: tuple[Any, ...]) -> bool:
    """Record that ``exc`` was alerted to ``destination``; False when it was already.

    Airflow hands the same exception to every failure callback of the task (its own and the
    DAG's ``default_args``), and the operator hands one breach to each notifier on a skip or
    a warn, so a notifier wired twice alerts once per destination.
    """
    if not isinstance(exc, BaseException):
        return True
    sent = getattr(exc, _ALERTED_ATTR, None)
    if not isinstance(sent, set):
        sent = set()
        try:
            setattr(exc, _ALERTED_ATTR, sent)
        except AttributeError:  # pragma: no cover - an exception without attributes
            return True
    if destination in sent:
        return False
    sent.add(destination)
    return True


class ReidentBreachNotifier(BaseNotifier):
    """Alert on a failed release gate, by webhook and/or e-mail; use as ``on_failure_callback``.

    .. code-block:: python

        ReidentificationRiskOperator(
            task_id="assess",
            ...,
            on_failure_callback=ReidentBreachNotifier(
                webhook_conn_id="privacy_webhook", to="privacy-office@example.org"
            ),
        )

    :param webhook_conn_id: HTTP connection (``conn_type`` ``http``/``https``) to ``POST`` the
        :func:`breach_payload` JSON to: ``host`` (or a full URL in ``host``), ``port``,
        ``schema`` (``http``/``https``), ``extra["endpoint"]`` (path), ``extra["headers"]``
        (object), ``login``/``password`` (HTTP basic auth). Redirects are not followed.
    :param http_conn_id: an HTTP connection as Airflow's http provider reads it
        (``apache-airflow-providers-http``, the ``http`` extra): the same JSON is posted
        through its ``HttpNotifier`` (its hook: the connection's ``host``, ``schema``,
        ``port``, auth, and its ``extra`` as headers, with ``timeout`` and redirects not
        followed unless the connection's ``extra`` says otherwise). Without the provider,
        this package's own client posts it, reading the connection as for
        ``webhook_conn_id``.
    :param slack_webhook_conn_id: a Slack Incoming Webhook connection (``conn_type``
        ``slackwebhook``: the webhook token, or its whole URL, in ``password``), through the
        slack provider's ``SlackWebhookNotifier`` (``apache-airflow-providers-slack``, the
        ``slack`` extra, needed): the subject and the same JSON in a code block
        (:func:`~reident_airflow.notifiers.message.slack_text`).
    :param smtp_conn_id: SMTP connection (``conn_type`` ``smtp``). When the smtp provider
        (``apache-airflow-providers-smtp``) is installed, the e-mail goes through its
        ``SmtpNotifier``, which reads the connection as for any Airflow e-mail (its TLS,
        ``extra["timeout"]``, ``extra["retry_limit"]``, OAuth2) and sends the HTML part.
        Without it, Python's ``smtplib`` reads the same fields: ``host``, ``port``, optional
        ``login``/``password``, ``extra["disable_ssl"]`` (plain SMTP rather than SMTP over
        SSL), ``extra["disable_tls"]`` (no STARTTLS), ``extra["ssl_context"]``
        (``"default"``/``"none"``), ``extra["from_email"]`` (STARTTLS is not attempted on an
        SSL connection; a plain text and an HTML part). A plain local server needs both
        ``disable_*`` set. Defaults to ``"smtp_default"`` when ``to`` is given.
    :param to: recipients (list, or a string separated by ``,`` or ``;``; templated).
    :param from_email: sender; defaults to the connection's ``extra["from_email"]``.
    :param subject_template: Jinja template of the subject over the alert's fields (see
        :func:`breach_email`).
    :param timeout: seconds, for the webhook request and the fallback's SMTP session each
        (the smtp provider takes the connection's ``extra["timeout"]``).
    :param alert_on_other_failures: also alert (class name only) when the task failed for
        another reason than a breach (default ``True``).
    :param outcomes: the breach outcomes that alert (the operators' ``on_breach``): ``"fail"``,
        ``"skip"``, ``"warn"`` (default: all three). A skip or a warn does not fail the task,
        so no failure callback runs: the operator calls the notifiers of its
        ``on_failure_callback`` itself. Wire the notifier as ``on_failure_callback`` only.

    A delivery failure (unreachable host, non-2xx answer, SMTP error, missing connection) is
    logged as an error and never raised: the task has failed already, and one channel failing
    does not stop the other.
    """

    template_fields: Sequence[str] = (
        "webhook_conn_id",
        "http_conn_id",
        "slack_webhook_conn_id",
        "smtp_conn_id",
        "to",
        "from_email",
    )

    def __init__(
        self,
        *,
        webhook_conn_id: str | None = None,
        smtp_conn_id: str | None = None,
        from_email: str | None = None,
        to: str | list[str] | None = None,
        subject_template: str | None = None,
        timeout: float = 10,
        alert_on_other_failures: bool = True,
        outcomes: Sequence[str] = OUTCOMES,
        http_conn_id: str | None = None,
        slack_webhook_conn_id: str | None = None,
    ) -> None:
        super().__init__()
        if smtp_conn_id and not to:
            raise ValueError("ReidentBreachNotifier: smtp_conn_id is given but no recipient (to)")
        if not (webhook_conn_id or http_conn_id or slack_webhook_conn_id or to):
            raise ValueError(
                "ReidentBreachNotifier needs webhook_conn_id, http_conn_id, "
                "slack_webhook_conn_id and/or to (e-mail)"
            )
        if slack_webhook_conn_id and slack_webhook_notifier_class() is None:
            raise ValueError(
                "ReidentBreachNotifier: slack_webhook_conn_id needs the slack provider "
                "(pip install 'reident-airflow[slack]')"
            )
        if isinstance(outcomes, str) or not set(outcomes) <= set(OUTCOMES):
            raise ValueError(
                f"ReidentBreachNotifier: outcomes must be a list of {', '.join(OUTCOMES)}, "
                f"not {outcomes!r}"
            )
        if not timeout or timeout <= 0:
            raise ValueError(f"ReidentBreachNotifier: timeout must be > 0, not {timeout!r}")
        if subject_template is not None:
            try:
                SUBJECT_TEMPLATES.parse(subject_template)
            except TemplateSyntaxError as exc:
                raise ValueError(f"ReidentBreachNotifier: bad subject_template: {exc}") from exc
        self.webhook_conn_id = webhook_conn_id
        self.http_conn_id = http_conn_id
        self.slack_webhook_conn_id = slack_webhook_conn_id
        self.smtp_conn_id = smtp_conn_id or (_DEFAULT_SMTP_CONN_ID if to else None)
        self.to = to
        self.from_email = from_email
        self.subject_template = subject_template
        self.timeout = float(timeout)
        self.alert_on_other_failures = alert_on_other_failures
        self.outcomes = tuple(outcomes)

    #: The templated fields are strings (conn ids, addresses): never render native objects.
    render_template_as_native_obj = False

    def render_template_fields(self, context: Context, jinja_env: Any = None) -> None:
        # ``dag.test()`` gives DAG-level callbacks the serialized DAG, which has no Jinja
        # environment (Airflow 3.3): fall back to Airflow's plain sandboxed one.
        if jinja_env is None and not hasattr(context.get("dag"), "get_template_env"):
            jinja_env = self.get_template_env()
        super().render_template_fields(context, jinja_env)

    # Seam for tests (like common-sql's get_db_hook): where connections come from.
    def get_connection(self, conn_id: str) -> Any:
        return BaseHook.get_connection(conn_id)

    def notify(self, context: Context) -> None:
        """Build the alert and send it; logs, never raises, on a delivery failure."""
        exc = context.get("exception")
        report = None if isinstance(exc, BaseException) else self._pull_report(context)
        payload = breach_payload(context, report=report)
        if not is_gate_alert(payload) and not self.alert_on_other_failures:
            self.log.info(
                "Task failed (not a re-identification breach: %s); no alert "
                "(alert_on_other_failures=False)",
                payload["exception_class"],
            )
            return
        if is_gate_alert(payload) and payload["outcome"] not in self.outcomes:
            self.log.info(
                "%s (outcome %r); no alert (outcomes=%r)",
                payload["event"],
                payload["outcome"],
                self.outcomes,
            )
            return
        destination: tuple[Any, ...] = (
            self.webhook_conn_id,
            self.smtp_conn_id,
            tuple(parse_recipients(self.to)),
        )
        if self.http_conn_id or self.slack_webhook_conn_id:
            destination += (self.http_conn_id, self.slack_webhook_conn_id)
        if not _first_alert(context.get("exception"), destination):
            self.log.info(
                "Alert already sent to the same destination for this failure; not sent "
                "twice (is the notifier wired twice?)"
            )
            return
        if self.webhook_conn_id:
            self.send_webhook(payload)
        if self.http_conn_id:
            self.send_http(payload)
        if self.slack_webhook_conn_id:
            self.send_slack(payload)
        if self.smtp_conn_id:
            if parse_recipients(self.to):
                self.send_email(payload)
            else:
                self.log.error(
                    "%s alert NOT e-mailed: `to` rendered to no recipient", alert_kind(payload)
                )

    def _pull_report(self, context: Context) -> Any:
        """The report the operator pushed to XCom (for callbacks without the exception)."""
        ti = context.get("ti")
        if ti is None:
            return None
        try:
            report = ti.xcom_pull(task_ids=ti.task_id, key=REPORT_XCOM_KEY)
            if not isinstance(report, Mapping):
                return report
            report = dict(report)
            for key, field in (
                (REPORT_PATH_XCOM_KEY, "report_location"),
                (REPORT_URL_XCOM_KEY, "report_url"),
            ):
                value = ti.xcom_pull(task_ids=ti.task_id, key=key)
                if isinstance(value, str) and value:
                    report.setdefault(field, value)
            return report
        except Exception as exc:
            self.log.warning("Could not read the %s XCom: %s", REPORT_XCOM_KEY, type(exc).__name__)
            return None

    def send_http(self, payload: Mapping[str, Any]) -> bool:
        """POST ``payload`` as JSON to ``http_conn_id`` through the http provider's
        ``HttpNotifier`` (else, without the provider, as :meth:`send_webhook` does); True on
        a 2xx answer. Errors are logged, not raised; the log names the connection and host."""
        provider = http_notifier_class()
        if provider is None:
            return self.send_webhook(payload, conn_id=self.http_conn_id)
        conn_id = str(self.http_conn_id)
        kind = alert_kind(payload)
        host = "?"
        try:
            notifier = provider(
                http_conn_id=conn_id,
                data=json.dumps(payload, allow_nan=False),
                headers={"Content-Type": "application/json", "User-Agent": "reident-airflow"},
                extra_options={"timeout": self.timeout, "allow_redirects": False},
            )
            # the notifier's own request, through its hook: notify() drops the response, and
            # a 3xx (redirects are not followed) would pass for delivered; nothing is rendered
            # as a template (a column name in the alert is never read as Jinja)
            response = notifier.hook.run(
                endpoint=notifier.endpoint,
                data=notifier.data,
                headers=notifier.headers,
                extra_options=notifier.extra_options,
            )
            host = urllib.parse.urlsplit(notifier.hook.base_url).netloc.rpartition("@")[2]
            status = int(response.status_code)
        except Exception as exc:
            self.log.error(
                "%s alert NOT delivered: HTTP connection %r (the http provider's HttpNotifier) "
                "failed: %s: %s",
                kind,
                conn_id,
                type(exc).__name__,
                exc,
            )
            return False
        if not 200 <= status < 300:
            self.log.error(
                "%s alert NOT delivered: HTTP connection %r (%s) answered HTTP %s",
                kind,
                conn_id,
                host,
                status,
            )
            return False
        self.log.info(
            "%s alert posted via the http provider's HttpNotifier to %r (%s): HTTP %s",
            kind,
            conn_id,
            host,
            status,
        )
        return True

    def send_slack(self, payload: Mapping[str, Any]) -> bool:
        """Send ``payload`` to ``slack_webhook_conn_id`` through the slack provider's
        ``SlackWebhookNotifier`` (:func:`~reident_airflow.notifiers.message.slack_text`);
        True when Slack answered 200. Errors are logged, not raised."""
        conn_id = str(self.slack_webhook_conn_id)
        kind = alert_kind(payload)
        try:
            provider = slack_webhook_notifier_class()
            if provider is None:
                raise ImportError("apache-airflow-providers-slack is not installed")
            text = slack_text(payload, subject_template=self.subject_template)
            # notify(), not the notifier's __call__: the text is never rendered as a template
            provider(
                slack_webhook_conn_id=conn_id, text=text, timeout=math.ceil(self.timeout)
            ).notify({})
        except Exception as exc:
            self.log.error(
                "%s alert NOT delivered: Slack webhook connection %r failed: %s: %s",
                kind,
                conn_id,
                type(exc).__name__,
                exc,
            )
            return False
        self.log.info(
            "%s alert posted via the slack provider's SlackWebhookNotifier to %r", kind, conn_id
        )
        return True

    def send_webhook(self, payload: Mapping[str, Any], *, conn_id: str | None = None) -> bool:
        """POST ``payload`` as JSON; True on a 2xx answer. Errors are logged, not raised.

        ``conn_id`` defaults to ``webhook_conn_id``. The log names the connection and host,
        never the full URL: webhook URLs often carry their secret in the path.
        """
        conn_id = conn_id or self.webhook_conn_id
        kind = alert_kind(payload)
        host = "?"
        try:
            conn = self.get_connection(str(conn_id))
            url = webhook_url(conn)
            host = urllib.parse.urlsplit(url).netloc.rpartition("@")[2]
            body = json.dumps(payload, allow_nan=False).encode("utf-8")
            request = urllib.request.Request(
                url, data=body, headers=webhook_headers(conn), method="POST"
            )
            opener = urllib.request.build_opener(NoRedirect)
            with opener.open(request, timeout=self.timeout) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.close()
        except Exception as exc:
            self.log.error(
                "%s alert NOT delivered: webhook connection %r (%s) failed: %s: %s",
                kind,
                conn_id,
                host,
                type(exc).__name__,
                getattr(exc, "reason", exc),
            )
            return False
        if not 200 <= status < 300:
            self.log.error(
                "%s alert NOT delivered: webhook connection %r (%s) answered HTTP %s",
                kind,
                conn_id,
                host,
                status,
            )
            return False
        self.log.info("%s alert posted to webhook %r (%s): HTTP %s", kind, conn_id, host, status)
        return True

    def send_email(self, payload: Mapping[str, Any]) -> bool:
        """Send the e-mail of ``payload``; True when the server accepted it. Logs errors.

        Through the smtp provider's ``SmtpNotifier`` when it is installed and the connection's
        type is ``smtp`` (the HTML part only, the provider's TLS, timeout and retries); else
        through Python's ``smtplib`` (a plain-text and an HTML part). The log names the path.
        """
        conn_id = self.smtp_conn_id
        kind = alert_kind(payload)
        recipients = parse_recipients(self.to)
        via = "the built-in SMTP client"
        try:
            conn = self.get_connection(str(conn_id))
            extra = connection_extra(conn)
            sender = self.from_email or extra.get("from_email")
            if not sender:
                raise ValueError("no sender: give from_email or extra['from_email']")
            if not conn.host:
                raise ValueError(f"connection {conn_id!r} has no host")
            subject, text_body, html_body = breach_email(
                payload, subject_template=self.subject_template
            )
            provider = smtp_notifier_class() if conn.conn_type == "smtp" else None
            if provider is not None:
                via = "the smtp provider's SmtpNotifier"
                # every field given: the provider renders none of them as a template (a
                # column name in the alert is never read as Jinja over the task's context)
                provider(
                    to=recipients,
                    from_email=str(sender),
                    subject=subject,
                    html_content=html_body,
                    smtp_conn_id=str(conn_id),
                ).notify({})
            else:
                self._send_with_smtplib(
                    conn, extra, str(sender), recipients, subject, text_body, html_body
                )
        except Exception as exc:
            self.log.error(
                "%s alert NOT delivered: e-mail via SMTP connection %r (%s) failed: %s: %s",
                kind,
                conn_id,
                via,
                type(exc).__name__,
                exc,
            )
            return False
        self.log.info(
            "%s alert e-mailed via SMTP connection %r (%s) to %d recipient(s)",
            kind,
            conn_id,
            via,
            len(recipients),
        )
        return True

    def _send_with_smtplib(
        self,
        conn: Any,
        extra: Mapping[str, Any],
        sender: str,
        recipients: list[str],
        subject: str,
        text_body: str,
        html_body: str,
    ) -> None:
        """The fallback without the smtp provider: one multipart/alternative message."""
        message = EmailMessage()
        message["Subject"] = subject
        message["From"] = sender
        message["To"] = ", ".join(recipients)
        message["Date"] = formatdate(localtime=True)
        message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
        message.set_content(text_body)
        message.add_alternative(html_body, subtype="html")

        use_ssl = not flag(extra.get("disable_ssl"))
        starttls = not use_ssl and not flag(extra.get("disable_tls"))
        client: smtplib.SMTP
        if use_ssl:
            client = smtplib.SMTP_SSL(
                conn.host, conn.port or 0, timeout=self.timeout, context=ssl_context(extra)
            )
        else:
            client = smtplib.SMTP(conn.host, conn.port or 0, timeout=self.timeout)
        with client:
            if starttls:
                client.starttls(context=ssl_context(extra))
                client.ehlo()
            if conn.login and conn.password:
                client.login(conn.login, conn.password)
            client.send_message(message, from_addr=sender, to_addrs=recipients)

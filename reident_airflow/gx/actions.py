"""A checkpoint action that raises an alert when a release gate fails.

:class:`ReidentAlertAction` (``type: "reident_alert"``) builds one alert document from the
checkpoint result (aggregates only: suites, expectation types, the measure, its value and the
limit, exception messages; never a record's values) and delivers it to any of:

- ``alert_file``: one JSON line appended per alert (what a test or a file watcher reads);
- ``webhook_url``: an HTTP POST of the JSON document;
- ``callback``: a ``"package.module:function"`` import path, called with the document.

Delivery problems are logged and reported in the action's result, never raised: a failed
alert must not hide the validation result it is about.

Two levels come from GX's own ``severity`` of each expectation (``critical``, the default,
``warning`` or ``info``): the document's ``outcome`` is ``"fail"`` when a critical expectation
failed, ``"warn"`` when only warning or info ones did, ``"pass"`` otherwise; each failed entry
names its ``severity``. An expectation that could not be evaluated (an ``error``) counts as
critical whatever its severity: the gate fails closed. A suite holding the same measure at
``warning`` 0.05 and ``critical`` 0.09 warns at 0.05 and fails at 0.09.

The document's ``event`` names the outcome as the breach notifier's alerts do
(:data:`EVENTS`): ``reidentification_breach`` (a critical expectation failed),
``reidentification_error`` (the release stops only because expectations could not be
evaluated), ``reidentification_warning``, ``reidentification_passed``. Its JSON Schema is
``reident_airflow/schemas/reident.gx_alert.v1.schema.json``.
"""

from __future__ import annotations

import importlib
import json
import logging
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from great_expectations.checkpoint.actions import (
    ActionContext,
    NotifyOn,
    ValidationAction,
    should_notify,
)
from great_expectations.checkpoint.checkpoint import CheckpointResult
from great_expectations.compatibility import pydantic

from reident_airflow.engine import InvalidInputError

__all__ = [
    "ALERT_SCHEMA",
    "EVENTS",
    "OUTCOMES",
    "ReidentAlertAction",
    "alert_document",
    "blocks_release",
    "event_of",
    "outcome_of",
]

logger = logging.getLogger(__name__)

ALERT_SCHEMA = "reident.gx_alert/v1"

_MESSAGE_LIMIT = 500

#: The outcomes of a release check, from best to worst.
OUTCOMES = ("pass", "warn", "fail")

#: The document's ``event``, named as the breach notifier's (``reident.alert/v2``) where the
#: two mean the same: a release stopped by a failed critical expectation, one that went ahead
#: with warnings, one stopped because an expectation could not be evaluated, one that passed
#: (alerted only with ``notify_on="all"`` or ``"success"``).
EVENTS = (
    "reidentification_breach",
    "reidentification_warning",
    "reidentification_error",
    "reidentification_passed",
)


def _short(text: Any) -> str:
    line = str(text or "").strip().splitlines()
    first = line[0] if line else ""
    return first if len(first) <= _MESSAGE_LIMIT else first[: _MESSAGE_LIMIT - 3] + "..."


def _expectation_entry(evr: Any) -> dict[str, Any]:
    config = evr.expectation_config
    body: dict[str, Any] = dict(evr.result or {})
    found = body.get("details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    severity = getattr(config, "severity", None)
    entry: dict[str, Any] = {
        "expectation": getattr(config, "type", None),
        "success": bool(evr.success),
        "severity": str(getattr(severity, "value", severity or "critical")),
    }
    if "measure" in details:  # an evaluated reident expectation: its scalar is the value
        entry["measure"] = details["measure"]
        entry["value"] = body.get("observed_value")
    for key in ("limit", "summary"):
        if key in details:
            entry[key] = details[key]
    info = evr.exception_info or {}
    messages = []
    if info.get("raised_exception"):
        messages.append(_short(info.get("exception_message")))
    else:  # metric errors are reported per metric
        for value in info.values():
            if isinstance(value, dict) and value.get("raised_exception"):
                messages.append(_short(value.get("exception_message")))
    if messages:
        entry["error"] = "; ".join(dict.fromkeys(messages))
    return entry


def blocks_release(entry: Mapping[str, Any]) -> bool:
    """A failed entry stops the release: a critical expectation, or one not evaluated."""
    return entry.get("severity", "critical") == "critical" or "error" in entry


def outcome_of(failed: Sequence[Mapping[str, Any]]) -> str:
    """``"fail"`` if a failed entry blocks the release, ``"warn"`` if any failed, else
    ``"pass"`` (see the module)."""
    if any(blocks_release(entry) for entry in failed):
        return "fail"
    return "warn" if failed else "pass"


def event_of(failed: Sequence[Mapping[str, Any]]) -> str:
    """The ``event`` of the failed entries: ``"reidentification_breach"`` when a critical
    expectation failed on its data, ``"reidentification_error"`` when the release stops only
    because expectations could not be evaluated, ``"reidentification_warning"`` for warning
    or info failures alone, ``"reidentification_passed"`` for none."""
    outcome = outcome_of(failed)
    if outcome == "fail":
        evaluated = (e for e in failed if "error" not in e)
        if any(e.get("severity", "critical") == "critical" for e in evaluated):
            return "reidentification_breach"
        return "reidentification_error"
    return "reidentification_warning" if outcome == "warn" else "reidentification_passed"


def alert_document(checkpoint_result: CheckpointResult) -> dict[str, Any]:
    """The alert for a checkpoint result: which gates failed, by how much (aggregates only),
    the ``outcome`` their severities give and its ``event`` (:func:`event_of`)."""
    validations: list[dict[str, Any]] = []
    every_failed: list[dict[str, Any]] = []
    for identifier, suite_result in checkpoint_result.run_results.items():
        failed = [_expectation_entry(r) for r in suite_result.results if not r.success]
        every_failed.extend(failed)
        validations.append(
            {
                "suite": suite_result.suite_name,
                "asset": getattr(identifier, "batch_identifier", None),
                "success": bool(suite_result.success),
                "evaluated": len(suite_result.results),
                "failed": failed,
            }
        )
    run_id = checkpoint_result.run_id
    return {
        "schema": ALERT_SCHEMA,
        "event": event_of(every_failed),
        "checkpoint": checkpoint_result.name,
        "run_name": run_id.run_name,
        "run_time": run_id.run_time.isoformat() if run_id.run_time else None,
        "success": bool(checkpoint_result.success),
        "outcome": outcome_of(every_failed),
        "validations": validations,
    }


def _load_callback(path: str) -> Callable[[dict[str, Any]], Any]:
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise InvalidInputError(f"callback must be 'package.module:function', got {path!r}")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise InvalidInputError(f"callback {path!r} is not callable")
    return target  # type: ignore[no-any-return]


class ReidentAlertAction(ValidationAction):
    """Alert when the checkpoint fails (``notify_on``: ``failure`` by default, a failure of
    any severity: the document's ``outcome`` says ``warn`` or ``fail``).

    ``notify_on`` may also be a severity (``critical``, ``warning``, ``info``): GX's rule,
    alert when the most severe failure has that severity. Configure at least one of
    ``alert_file``, ``webhook_url``, ``callback``. The action's result is
    ``{"alerted": bool, "outcome": "pass" | "warn" | "fail", "delivered": [...],
    "errors": [...]}``.
    """

    type: Literal["reident_alert"] = "reident_alert"
    name: str = "reident_alert"
    notify_on: NotifyOn = "failure"
    alert_file: str | None = None
    webhook_url: str | None = None
    callback: str | None = None
    timeout: float = 10.0

    @pydantic.root_validator(skip_on_failure=True)
    def _validate_targets(cls, values: dict[str, Any]) -> dict[str, Any]:
        if not any(values.get(k) for k in ("alert_file", "webhook_url", "callback")):
            raise ValueError("give at least one of alert_file, webhook_url, callback")
        url = values.get("webhook_url")
        if url and not str(url).startswith(("http://", "https://")):
            raise ValueError(f"webhook_url must be an http(s) URL, got {url!r}")
        return values

    def run(
        self, checkpoint_result: CheckpointResult, action_context: ActionContext | None = None
    ) -> dict[str, Any]:
        success = bool(checkpoint_result.success)
        severity = self._get_max_severity_failure_from_checkpoint_result(checkpoint_result)
        document = alert_document(checkpoint_result)
        quiet = {"alerted": False, "outcome": document["outcome"], "delivered": [], "errors": []}
        if not should_notify(success=success, notify_on=self.notify_on, max_severity=severity):
            return quiet
        delivered: list[str] = []
        errors: list[str] = []
        for target, deliver in (
            ("alert_file", self._to_file),
            ("webhook_url", self._to_webhook),
            ("callback", self._to_callback),
        ):
            if not getattr(self, target):
                continue
            try:
                deliver(document)
            except Exception as exc:  # an alert failure must never hide the result
                message = f"{target}: {type(exc).__name__}: {_short(exc)}"
                logger.warning("reident %s alert not delivered to %s", document["event"], message)
                errors.append(message)
            else:
                logger.info("reident %s alert delivered to %s", document["event"], target)
                delivered.append(target)
        return {**quiet, "alerted": bool(delivered), "delivered": delivered, "errors": errors}

    def _to_file(self, document: dict[str, Any]) -> None:
        path = Path(str(self.alert_file))
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(document, allow_nan=False, default=str) + "\n")

    def _to_webhook(self, document: dict[str, Any]) -> None:
        data = json.dumps(document, allow_nan=False, default=str).encode("utf-8")
        request = urllib.request.Request(
            str(self.webhook_url),
            data=data,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            response.read()

    def _to_callback(self, document: dict[str, Any]) -> None:
        _load_callback(str(self.callback))(document)

"""Run a release gate checkpoint: a suite of re-identification expectations plus alert actions.

:func:`run_release_checkpoint` is the one call an Airflow task needs: it builds an ephemeral
Great Expectations context, one data source for the data given (a DataFrame, a CSV file or a
database table), the suite and the checkpoint from their JSON files (``expectations/`` holds
the example release's), runs it, and raises :class:`~reident_airflow.engine.errors.
ThresholdBreached` when a validation fails (``raise_on_failure=True``), after the checkpoint's
actions (e.g. :class:`~reident_airflow.gx.actions.ReidentAlertAction`) have run.

The suite file is GE 1.x's suite JSON (``ExpectationSuite.to_json_dict()``); the checkpoint
file is GE 1.x's checkpoint JSON without ``validation_definitions`` (they are built here for
the data given): ``{"name", "actions": [...], "result_format"}``.

Fail closed (:mod:`reident_airflow.gx.guard`): :func:`load_suite` puts the guard expectation
first in every suite holding a reident expectation, and :func:`run_release_checkpoint` refuses
a result that did not evaluate every expectation of the suite JSON.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import great_expectations as gx
import pandas as pd
from great_expectations.checkpoint.actions import ValidationAction
from great_expectations.checkpoint.checkpoint import Checkpoint, CheckpointResult
from great_expectations.compatibility import pydantic
from great_expectations.core.expectation_suite import ExpectationSuite
from great_expectations.core.validation_definition import ValidationDefinition
from great_expectations.data_context.types.base import ProgressBarsConfig
from great_expectations.exceptions.exceptions import GreatExpectationsError

from reident_airflow.connections import connection_url
from reident_airflow.engine import InvalidInputError, ThresholdBreached
from reident_airflow.gx.actions import ReidentAlertAction, alert_document, blocks_release
from reident_airflow.gx.expectations import EXPECTATION_TYPES
from reident_airflow.gx.guard import (
    SuiteIncompleteError,
    check_result,
    guard_expectation,
    is_guard,
)

logger = logging.getLogger(__name__)

__all__ = [
    "ReleaseCheckpointResult",
    "check_context",
    "load_checkpoint_config",
    "load_suite",
    "run_release_checkpoint",
]


@dataclass(frozen=True)
class ReleaseCheckpointResult:
    """The outcome of :func:`run_release_checkpoint`: the GE result and its aggregates.

    ``outcome`` is ``"pass"``, ``"warn"`` (only ``warning`` or ``info`` expectations failed:
    the release goes on) or ``"fail"`` (a ``critical`` one failed, or one was not evaluated);
    ``success`` is true unless the outcome is ``"fail"``: the release may proceed. GE's own
    verdict (false on any failure) is ``checkpoint_result.success``.
    """

    success: bool
    checkpoint_result: CheckpointResult
    alert: dict[str, Any]
    outcome: str = "pass"

    def failed_expectations(self) -> list[dict[str, Any]]:
        """The failed expectations that stop the release (critical, or not evaluated)."""
        return [f for f in self._failed() if blocks_release(f)]

    def warned_expectations(self) -> list[dict[str, Any]]:
        """The failed ``warning`` and ``info`` expectations: alerted, the release goes on."""
        return [f for f in self._failed() if not blocks_release(f)]

    def _failed(self) -> list[dict[str, Any]]:
        return [f for v in self.alert["validations"] for f in v["failed"]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (aggregates only): fit for an XCom value or a log line."""
        return self.alert


def _read_json(source: str | Path | Mapping[str, Any], what: str) -> dict[str, Any]:
    if isinstance(source, Mapping):
        return dict(source)
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"{what} {path}: cannot be read ({exc.strerror})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{what} {path}: not JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise InvalidInputError(f"{what} {path}: expected a JSON object")
    return data


def _config_error(exc: Exception) -> str:
    if isinstance(exc, pydantic.ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in err['loc'] if p != '__root__') or 'parameters'}: "
            f"{err['msg']}"
            for err in exc.errors()
        )
    return str(exc)


def load_suite(source: str | Path | Mapping[str, Any]) -> ExpectationSuite:
    """An expectation suite from its JSON (a path or the parsed object).

    A bad expectation is an :class:`InvalidInputError` naming it and the parameter at fault.
    """
    import reident_airflow.gx  # noqa: F401 - the expectations must be registered

    data = _read_json(source, "suite")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInputError("suite: 'name' must be a non-empty string")
    expectations = data.get("expectations") or []
    if not isinstance(expectations, list):
        raise InvalidInputError("suite: 'expectations' must be a list")
    built = []
    for i, item in enumerate(expectations, start=1):
        kind = item.get("type") if isinstance(item, dict) else None
        try:
            built.append(_expectation(item))
        except (pydantic.ValidationError, GreatExpectationsError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"suite {name!r}, expectation {i} ({kind}): {_config_error(exc)}"
            ) from exc
    # a suite of reident expectations carries the guard first, so that saved to a file
    # context it fails in a process that does not know them (module docstring)
    reident = any(isinstance(e, dict) and e.get("type") in EXPECTATION_TYPES for e in expectations)
    if reident and not any(is_guard(e) for e in expectations):
        built.insert(0, _expectation(guard_expectation()))
    # Expectations are passed whole: add_expectation_configuration would keep only the last
    # of several expectations of one type on one table (it matches on type and domain).
    suite = ExpectationSuite(
        name=name, expectations=built, meta=data.get("meta"), notes=data.get("notes")
    )
    if len(suite.expectations) != len(built):
        raise SuiteIncompleteError(
            f"suite {name!r}: {len(built)} expectations built, "
            f"{len(suite.expectations)} kept by Great Expectations"
        )
    return suite


def _expectation(item: Any) -> Any:
    """The expectation of one suite entry; its parameters are checked here (readable errors)."""
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    if not isinstance(item, dict):
        raise InvalidInputError("an expectation must be a JSON object")
    fields = {k: v for k, v in item.items() if k in {"type", "kwargs", "meta", "notes", "severity"}}
    return ExpectationConfiguration(**fields).to_domain_obj()


def load_checkpoint_config(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoint JSON (name, actions, result_format) as a dict, actions checked."""
    import reident_airflow.gx  # noqa: F401 - the action type must be registered

    data = _read_json(source, "checkpoint")
    if data.get("validation_definitions"):
        raise InvalidInputError(
            "checkpoint: leave out 'validation_definitions'; they are built for the data given"
        )
    unknown = set(data) - {"name", "actions", "result_format", "id"}
    if unknown:
        raise InvalidInputError(f"checkpoint: unknown keys {sorted(unknown)}")
    return data


def check_context(context: Any) -> dict[str, int]:
    """Check the saved suites of a GE context before its checkpoints run; their sizes by name.

    For a context saved to files and run by your own code: each suite's saved JSON is compared
    with the suite GE loads from it (every expectation must load), and a suite holding reident
    expectations must carry the guard (:func:`~reident_airflow.gx.guard.guard_expectation`). Raises
    :class:`SuiteIncompleteError` naming every suite at fault.
    """
    store = context.expectations_store
    counts: dict[str, int] = {}
    problems: list[str] = []
    for key in store.list_keys():
        saved = store.get(key)
        name = str(saved.get("name"))
        entries = [
            dict(e) if isinstance(e, Mapping) else e.to_json_dict()  # configurations, as saved
            for e in saved.get("expectations") or []
        ]
        # a suite saved without the guard gets it when loaded (attach_guard): count the others
        loaded = sum(not is_guard(e) for e in context.suites.get(name).expectations)
        wanted = sum(not is_guard(e) for e in entries)
        if loaded != wanted:
            kinds = sorted({str(e.get("type")) for e in entries})
            problems.append(
                f"suite {name!r}: {loaded} of {wanted} expectations load ({', '.join(kinds)})"
            )
        if any(e.get("type") in EXPECTATION_TYPES for e in entries) and not any(
            is_guard(e) for e in entries
        ):
            problems.append(
                f"suite {name!r}: reident expectations without the guard "
                "(add reident_airflow.gx.guard_expectation() and save the suite)"
            )
        counts[name] = len(entries)
    if problems:
        raise SuiteIncompleteError("; ".join(problems))
    return counts


def _data_source(
    context: Any,
    *,
    dataframe: pd.DataFrame | None,
    csv: str | Path | None,
    sep: str,
    url: str | None,
    table: str | None,
    schema: str | None,
) -> tuple[Any, dict[str, Any]]:
    """A batch definition for the data given, and the batch parameters that load it."""
    given = [n for n, v in (("dataframe", dataframe), ("csv", csv), ("url", url)) if v is not None]
    if len(given) != 1:
        raise InvalidInputError("give exactly one of dataframe, csv, url or conn_id (with table)")
    if url is None and table is not None:
        raise InvalidInputError("table applies only to a database url (or conn_id)")
    if csv is not None:
        path = Path(csv)
        if not path.is_file():
            raise InvalidInputError(f"{path}: no such file")
        dataframe = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False)
    if dataframe is not None:
        source = context.data_sources.add_pandas("reident_release")
        asset = source.add_dataframe_asset("release")
        return asset.add_batch_definition_whole_dataframe("whole"), {"dataframe": dataframe}
    if not table:
        raise InvalidInputError("a database url needs table=NAME (so does conn_id)")
    assert url is not None
    if url.startswith("sqlite"):
        source = context.data_sources.add_sqlite("reident_release", connection_string=url)
    elif url.startswith("postgresql"):
        source = context.data_sources.add_postgres("reident_release", connection_string=url)
    else:
        source = context.data_sources.add_sql("reident_release", connection_string=url)
    # GE 1.24 deprecates schema_name (the schema belongs in the connection): pass it only if given
    extra = {"schema_name": schema} if schema else {}
    asset = source.add_table_asset("release", table_name=table, **extra)
    return asset.add_batch_definition_whole_table("whole"), {}


def _with_targets(action: Any, given: Mapping[str, Any]) -> Any:
    """``action`` with the alert targets ``given``, if it is a ``reident_alert`` action."""
    if isinstance(action, dict) and action.get("type") == "reident_alert":
        return {**action, **given}
    if isinstance(action, ReidentAlertAction):
        return action.copy(update=dict(given))
    return action


def _override_alerts(actions: list[Any], overrides: Mapping[str, Any]) -> list[Any]:
    """The checkpoint's actions, each ``reident_alert`` sent to the targets given instead."""
    given = {k: (str(v) if isinstance(v, Path) else v) for k, v in overrides.items() if v}
    return [_with_targets(action, given) for action in actions] if given else actions


def _stored_suite(context: Any, suite: ExpectationSuite) -> ExpectationSuite:
    """``suite`` as added to ``context``, refused if GE dropped any of its expectations."""
    stored: ExpectationSuite = context.suites.add(suite)
    if len(stored.expectations) != len(suite.expectations):
        raise SuiteIncompleteError(
            f"suite {suite.name!r}: {len(suite.expectations)} expectations, "
            f"{len(stored.expectations)} in the context"
        )
    return stored


def _run(checkpoint: Checkpoint, batch_parameters: Any, parameters: Any) -> CheckpointResult:
    """Run ``checkpoint``; a suite parameter resolved to a bad value is an input error."""
    try:
        return checkpoint.run(
            batch_parameters=batch_parameters, expectation_parameters=dict(parameters or {})
        )
    except pydantic.ValidationError as exc:
        [definition] = checkpoint.validation_definitions
        raise InvalidInputError(f"suite {definition.suite.name!r}: {_config_error(exc)}") from exc


def _checkpoint(
    context: Any,
    suite: ExpectationSuite,
    batch_definition: Any,
    config: Mapping[str, Any],
    actions: list[Any],
) -> Checkpoint:
    """The checkpoint of the configuration, validating ``suite`` on the batch, in ``context``."""
    name = str(config.get("name") or f"{suite.name}_checkpoint")
    definition = context.validation_definitions.add(
        ValidationDefinition(
            name=f"{name}_{uuid.uuid4().hex[:8]}", data=batch_definition, suite=suite
        )
    )
    try:
        checkpoint = Checkpoint(
            name=name,
            validation_definitions=[definition],
            actions=actions,
            result_format=config.get("result_format", "SUMMARY"),
        )
    except pydantic.ValidationError as exc:
        raise InvalidInputError(f"checkpoint {name!r}: {_config_error(exc)}") from exc
    added: Checkpoint = context.checkpoints.add(checkpoint)
    return added


def _summary(name: str, failed: Sequence[Mapping[str, Any]], outcome: str) -> str:
    """One line naming each failed expectation's summary (aggregates only)."""
    lines = [f.get("summary") or f.get("error") or str(f.get("expectation")) for f in failed]
    verb = "failed" if outcome == "fail" else "warns"
    return (
        f"release checkpoint {name!r} {verb}: {len(failed)} expectation(s) not met: "
        + "; ".join(str(line) for line in lines)
    )


def _outcome(name: str, result: CheckpointResult) -> ReleaseCheckpointResult:
    """The release's outcome by the failed expectations' severities; a warning is logged."""
    alert = alert_document(result)
    outcome = ReleaseCheckpointResult(
        success=alert["outcome"] != "fail",
        checkpoint_result=result,
        alert=alert,
        outcome=alert["outcome"],
    )
    if outcome.outcome == "warn":
        logger.warning("%s", _summary(name, outcome.warned_expectations(), "warn"))
    return outcome


def _breach(name: str, outcome: ReleaseCheckpointResult) -> ThresholdBreached:
    """The error of a failed release: each critical failure's summary, the alert as report."""
    failed = outcome.failed_expectations()
    return ThresholdBreached(
        _summary(name, failed, "fail"), breaches=failed, report=outcome.to_dict()
    )


def run_release_checkpoint(
    *,
    suite: str | Path | Mapping[str, Any],
    checkpoint: str | Path | Mapping[str, Any] | None = None,
    dataframe: pd.DataFrame | None = None,
    csv: str | Path | None = None,
    sep: str = ",",
    url: str | None = None,
    conn_id: str | None = None,
    table: str | None = None,
    schema: str | None = None,
    actions: Sequence[ValidationAction] = (),
    expectation_parameters: Mapping[str, Any] | None = None,
    alert_file: str | Path | None = None,
    webhook_url: str | None = None,
    callback: str | None = None,
    raise_on_failure: bool = True,
) -> ReleaseCheckpointResult:
    """Validate one table against a release suite and run the checkpoint's actions.

    Data: exactly one of ``dataframe``, ``csv`` (read as text, ``sep``), ``url`` or
    ``conn_id`` (an Airflow connection, read as the operators read it: see
    :func:`connection_url`) with ``table`` (and ``schema``): a database table is grouped in
    the database. The password of a ``conn_id`` stays out of logs, results and errors.
    ``suite`` and ``checkpoint`` are JSON files (or parsed objects); ``actions`` are added to
    the checkpoint's; ``expectation_parameters`` resolve the suite's ``{"$PARAMETER": ...}``
    values; ``alert_file``, ``webhook_url`` and ``callback`` override those of every
    ``reident_alert`` action (handy for a per-run alert file).

    Returns a :class:`ReleaseCheckpointResult`. When a ``critical`` expectation (GX's default
    severity) fails and ``raise_on_failure`` is true (the default), raises
    :class:`ThresholdBreached` instead, after the actions ran; failed ``warning`` or ``info``
    expectations only log a warning and make the outcome ``"warn"``. The error's ``report`` is
    the alert document and ``breaches`` the critical failures, so an Airflow task fails with
    a message a person can act on.
    Raises :class:`InvalidInputError` for unusable inputs (files, parameters), and
    :class:`SuiteIncompleteError` when a validation did not evaluate every expectation of the
    suite (never a success with expectations dropped).
    """
    expectation_suite = load_suite(suite)  # every expectation of the JSON, or an error
    config = load_checkpoint_config(checkpoint) if checkpoint is not None else {}
    overrides = {"alert_file": alert_file, "webhook_url": webhook_url, "callback": callback}
    configured = _override_alerts(list(config.get("actions") or []), overrides)
    if conn_id is not None:
        if url is not None:
            raise InvalidInputError("give url or conn_id, not both")
        url = connection_url(conn_id)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition, batch_parameters = _data_source(
        context, dataframe=dataframe, csv=csv, sep=sep, url=url, table=table, schema=schema
    )
    stored = _stored_suite(context, expectation_suite)
    gx_checkpoint = _checkpoint(context, stored, batch_definition, config, [*configured, *actions])
    result = _run(gx_checkpoint, batch_parameters, expectation_parameters)
    check_result(result, len(expectation_suite.expectations))
    outcome = _outcome(gx_checkpoint.name, result)
    if raise_on_failure and not outcome.success:
        raise _breach(gx_checkpoint.name, outcome)
    return outcome

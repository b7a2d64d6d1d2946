"""Fail closed: a suite of reident expectations never succeeds without them.

GE 1.24 drops, with a logged traceback, every expectation whose type is not registered when
it loads a suite, and validates the rest: a saved suite of reident expectations loaded without
``import reident_airflow.gx`` validates nothing and succeeds. GE has no hook that imports a
package for a suite (no entry points; ``plugins_directory`` is only put on ``sys.path``), so
two guards stand in:

- :func:`guard_expectation`, a core expectation that
  :func:`~reident_airflow.gx.checkpoint.load_suite` puts first in every suite holding a
  reident expectation (and that ``expectations/`` carries): its ``min_value`` is the suite
  parameter ``reident_expectations_loaded()``, a function only ``import reident_airflow.gx``
  defines (:func:`install_guard`). Without it GE raises ``SuiteParameterError`` while
  validating, so the checkpoint cannot report success.
- :func:`check_result` refuses a result that did not evaluate every expectation of the suite
  JSON, and :func:`check_context` a saved context whose suites lose expectations or lack the
  guard (:class:`SuiteIncompleteError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from great_expectations.checkpoint.checkpoint import CheckpointResult

from reident_airflow.engine import ReidentError
from reident_airflow.gx.expectations import EXPECTATION_TYPES

__all__ = [
    "GUARD_FUNCTION",
    "SuiteIncompleteError",
    "check_context",
    "check_result",
    "guard_expectation",
    "install_guard",
    "is_guard",
]

GUARD_FUNCTION = "reident_expectations_loaded"
_GUARD_TYPE = "expect_table_row_count_to_be_between"
_GUARD_PARAMETER = {"$PARAMETER": f"{GUARD_FUNCTION}()"}


class SuiteIncompleteError(ReidentError):
    """A suite did not load or evaluate every expectation its JSON holds (fail closed)."""


def guard_expectation() -> dict[str, Any]:
    """The guard: a core expectation that cannot be evaluated unless reident is registered.

    ``expect_table_row_count_to_be_between`` with ``min_value`` the suite parameter
    ``reident_expectations_loaded()``: with ``reident_airflow.gx`` imported that function is 0
    (every table passes); without it GE raises ``SuiteParameterError`` in the validation.
    """
    return {
        "type": _GUARD_TYPE,
        "kwargs": {"min_value": dict(_GUARD_PARAMETER)},
        "meta": {
            "reident_guard": "fails unless reident_airflow.gx is imported: "
            "without it GE drops the reident expectations and would validate nothing"
        },
    }


def is_guard(item: Any) -> bool:
    """Whether a suite entry (JSON dict, configuration or expectation) is the guard."""
    if isinstance(item, Mapping):
        kind, kwargs = item.get("type"), item.get("kwargs") or {}
    else:
        config = item.configuration if hasattr(item, "configuration") else item
        kind, kwargs = getattr(config, "type", None), getattr(config, "kwargs", {}) or {}
    return bool(kind == _GUARD_TYPE and kwargs.get("min_value") == _GUARD_PARAMETER)


def _guard_value() -> int:
    """The guard's ``min_value``: 0 once every reident expectation is registered."""
    from great_expectations.expectations import registry

    missing = [t for t in EXPECTATION_TYPES if t not in registry._registered_expectations]
    if missing:
        raise RuntimeError(f"reident expectations not registered: {', '.join(missing)}")
    return 0


def install_guard() -> None:
    """Define the guard's suite-parameter function in GE's parameter parser (idempotent).

    GE 1.24's parser looks functions up in ``SuiteParameterParser.fn`` (a class-level dict
    shared by every parser); an unknown name is a ``SuiteParameterError``.
    """
    from great_expectations.core.suite_parameters import EXPR, SuiteParameterParser

    SuiteParameterParser.fn[GUARD_FUNCTION] = _guard_value
    if EXPR.fn.get(GUARD_FUNCTION) is not _guard_value:
        raise RuntimeError("Great Expectations' suite parameter parser changed: no guard")


def check_context(context: Any) -> dict[str, int]:
    """Check the saved suites of a GE context before its checkpoints run; their sizes by name.

    For a context saved to files and run by your own code: each suite's saved JSON is compared
    with the suite GE loads from it (every expectation must load), and a suite holding reident
    expectations must carry the guard (:func:`guard_expectation`). Raises
    :class:`SuiteIncompleteError` naming every suite at fault.
    """
    import reident_airflow.gx  # noqa: F401 - the expectations must be registered

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
        loaded = len(context.suites.get(name).expectations)
        if loaded != len(entries):
            kinds = sorted({str(e.get("type")) for e in entries})
            problems.append(
                f"suite {name!r}: {loaded} of {len(entries)} expectations load ({', '.join(kinds)})"
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


def check_result(result: CheckpointResult, expected: int) -> None:
    """Raise :class:`SuiteIncompleteError` unless every validation evaluated ``expected``.

    GE drops the expectations it does not know and validates the rest: a result with fewer
    expectation results than the suite JSON holds must not count as success.
    """
    for identifier, suite_result in result.run_results.items():
        got = len(suite_result.results)
        if got != expected:
            raise SuiteIncompleteError(
                f"suite {suite_result.suite_name!r}: {got} of {expected} expectations "
                f"evaluated ({identifier}); is reident_airflow.gx imported?"
            )
    if not result.run_results:
        raise SuiteIncompleteError("the checkpoint validated nothing")

"""Fail closed: a suite of reident expectations never succeeds without them.

GE 1.24 drops, with a logged traceback, every expectation whose type is not registered when
it loads a suite, and validates the rest: a saved suite of reident expectations loaded without
``import reident_airflow.gx`` validates only its core expectations and succeeds. GE has no
hook that imports a package for a suite (no entry points; ``plugins_directory`` is only put on
``sys.path``), so the saved suite itself must fail in such a process:

- :func:`guard_expectation`, a core expectation whose ``min_value`` is the suite parameter
  ``reident_expectations_loaded()``, a function only ``import reident_airflow.gx`` defines
  (:func:`install_guard`). Without it GE raises ``SuiteParameterError`` while validating, so
  the checkpoint cannot report success.
- :func:`attach_guard` puts the guard first in every suite a reident expectation joins,
  however the suite is built: each reident expectation calls it when GE binds it to a suite
  (``suite.add_expectation``, ``ExpectationSuite(expectations=...)``, configurations, JSON,
  a suite loaded from a store), so whatever is saved carries the guard.
- :func:`check_result` refuses a result that did not evaluate every expectation of the suite
  JSON, and :func:`~reident_airflow.gx.checkpoint.check_context` a saved context whose suites
  lose expectations or lack the guard (:class:`SuiteIncompleteError`).

What no guard can cover (``docs/guides/gx-provider.md``): a suite file that never passed
through a process with the package (written by hand without the guard) and is run without
it; a suite loaded *before* ``import reident_airflow.gx`` in the same process (GE dropped the
expectations, then the guard finds the package); a reident expectation appended to
``suite.expectations`` as a plain list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from great_expectations.checkpoint.checkpoint import CheckpointResult

from reident_airflow.engine import ReidentError

if TYPE_CHECKING:
    from great_expectations.core.expectation_suite import ExpectationSuite
    from great_expectations.expectations.expectation import Expectation

__all__ = [
    "GUARD_FUNCTION",
    "SuiteIncompleteError",
    "attach_guard",
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


def attach_guard(
    suite: ExpectationSuite,
    expectation: Expectation,
    save_callback: Callable[[Expectation], Expectation],
) -> None:
    """Put the guard first in ``suite``, which the reident ``expectation`` joins (idempotent).

    Called by every reident expectation when GE binds it to a suite
    (:meth:`~reident_airflow.gx.expectations.base.ReidentExpectation.register_save_callback`):
    ``suite.add_expectation``, ``ExpectationSuite(expectations=[...])`` with objects,
    configurations or JSON dicts, ``add_expectation_configuration`` and a suite loaded from a
    store. The guard joins the suite in memory, bound to the suite's ``save_callback`` as GE
    binds its expectations; when ``suite.add_expectation`` has just stored ``expectation`` in
    a saved suite, the suite is saved again so that the store holds the guard too.
    """
    if any(is_guard(e) for e in suite.expectations):
        return
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    guard = ExpectationConfiguration(**guard_expectation()).to_domain_obj()
    guard.register_save_callback(save_callback)
    suite.expectations.insert(0, guard)
    if suite.id is not None and any(e is expectation for e in suite.expectations):
        suite.save()


def _guard_value(expectation_types: tuple[str, ...]) -> int:
    """The guard's ``min_value``: 0 once every reident expectation is registered."""
    from great_expectations.expectations import registry

    registered = set(registry.list_registered_expectation_implementations())
    missing = [t for t in expectation_types if t not in registered]
    if missing:
        raise RuntimeError(f"reident expectations not registered: {', '.join(missing)}")
    return 0


def install_guard(expectation_types: Sequence[str]) -> None:
    """Define the guard's suite-parameter function in GE's parameter parser (idempotent).

    ``expectation_types`` are the types that must be registered for the guard to pass. GE
    1.x has no public API to add a suite-parameter function: its parser looks functions up in
    ``SuiteParameterParser.fn`` (in GE 1.24, a class-level dict shared by every parser); an
    unknown name is a ``SuiteParameterError``. Should GE change that, this raises
    at import instead of leaving suites unguarded (``tests/gx/test_guard_internals.py``).

    The public alternative, a plain suite parameter (``{"$PARAMETER": "name"}``) whose value
    each run passes as ``expectation_parameters``, is not the same guard: it fails every run
    that does not pass the value, with or without the package (a plain ``checkpoint.run()``
    for one), and passes any run that passes it, with or without the package. Only a
    function evaluated in the validating process answers "are the reident expectations
    registered here", and GE offers no public way to add one.
    """
    from great_expectations.core.suite_parameters import EXPR, SuiteParameterParser

    value = partial(_guard_value, tuple(expectation_types))
    SuiteParameterParser.fn[GUARD_FUNCTION] = value
    if EXPR.fn.get(GUARD_FUNCTION) is not value:
        raise RuntimeError("Great Expectations' suite parameter parser changed: no guard")


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

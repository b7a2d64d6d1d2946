"""The one GE internal the fail-closed guard rests on, pinned down so a GE upgrade breaks here.

GX 1.x has no public way to add a suite-parameter function (``reident_airflow.gx.guard``,
``install_guard``, says why a plain parameter passed at run time is not the same guard). The
guard writes its function into ``SuiteParameterParser.fn``; these tests fail loudly, naming
the internal, if GE stops sharing that table between parsers, stops looking functions up in
it, or stops raising ``SuiteParameterError`` for an unknown function.
"""

from __future__ import annotations

import pytest
from great_expectations.core.suite_parameters import (
    EXPR,
    SuiteParameterParser,
    parse_suite_parameter,
)
from great_expectations.exceptions import SuiteParameterError

import reident_airflow.gx as reident_gx
from reident_airflow.gx.guard import GUARD_FUNCTION, install_guard

CALL = f"{GUARD_FUNCTION}()"


def test_the_function_table_is_a_class_level_dict_shared_with_gx_parser() -> None:
    assert isinstance(SuiteParameterParser.__dict__.get("fn"), dict), (
        "GE moved SuiteParameterParser.fn: the reident guard cannot be installed"
    )
    assert EXPR.fn is SuiteParameterParser.fn, "GE's parser no longer shares the class table"
    assert GUARD_FUNCTION in SuiteParameterParser.fn


def test_gx_evaluates_the_guard_to_zero_once_the_package_is_imported() -> None:
    # 0: the guard's min_value; every table has at least 0 rows (guard.guard_expectation)
    assert parse_suite_parameter(CALL) == 0


def test_an_unregistered_reident_expectation_makes_the_guard_raise() -> None:
    # the function GE calls checks GE's public registry listing for each of our types
    install_guard(("expect_reident_type_that_does_not_exist",))
    try:
        with pytest.raises(SuiteParameterError, match="not registered"):
            parse_suite_parameter(CALL)
    finally:
        install_guard(reident_gx.EXPECTATION_TYPES)
    assert parse_suite_parameter(CALL) == 0


def test_without_the_function_gx_raises_rather_than_passing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(SuiteParameterParser.fn, GUARD_FUNCTION)
    with pytest.raises(SuiteParameterError):
        parse_suite_parameter(CALL)


def test_install_guard_refuses_a_parser_that_does_not_read_the_class_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # what a GE whose parser keeps its own table would look like: the guard must not pass
    monkeypatch.setattr(EXPR, "fn", {}, raising=False)
    with pytest.raises(RuntimeError, match="suite parameter parser changed"):
        install_guard(reident_gx.EXPECTATION_TYPES)

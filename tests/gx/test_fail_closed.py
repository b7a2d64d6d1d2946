"""A saved suite of reident expectations cannot succeed in a process that does not know them.

GE 1.24 drops every expectation whose type is not registered when it loads a suite (it logs a
traceback and goes on) and validates what is left, so a file context saved with the reident
suite, loaded by a process that never imported ``reident_airflow.gx``, validated a k = 1
table as ``success=True`` (issue 16). The contexts are saved by this process, which imports
the package; they are loaded and run by a fresh interpreter, first without the package, then
with it (``fresh_process``, :mod:`tests.gx._fresh`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import great_expectations as gx
import pandas as pd
import pytest
from great_expectations.core.expectation_suite import ExpectationSuite

from reident_airflow.gx import (
    GUARD_FUNCTION,
    SuiteIncompleteError,
    check_result,
    guard_expectation,
    is_guard,
    load_suite,
    run_release_checkpoint,
)
from tests.gx._fresh import SUITE
from tests.gx.conftest import new_context


def test_without_the_package_a_guarded_suite_does_not_succeed(
    fresh_process: dict[str, Any],
) -> None:
    """The fix: the saved suite carries the guard; without the package GE raises."""
    out = fresh_process["without"]["guarded"]
    assert out["reident_imported"] is False
    assert out["loaded"] == 1  # GE kept the guard only: the reident expectations are gone
    assert out["success"] is None
    assert out["error"] == "SuiteParameterError"
    assert "reident_expectations_loaded" in out["message"]


def test_with_the_package_the_guarded_suite_evaluates_everything(
    fresh_process: dict[str, Any],
) -> None:
    out = fresh_process["with"]["guarded"]
    assert out == {"loaded": 5, "success": False, "evaluated": 5, "reident_imported": True}


def test_without_the_guard_ge_still_fails_open(fresh_process: dict[str, Any]) -> None:
    """What remains (README): a suite saved without the guard still succeeds without the package.

    This is issue 16 as reported, and what every suite saved before the guard does: GE drops
    the four reident expectations and the checkpoint validates nothing, successfully. If GE
    ever refuses this, the test fails and the README can say so.
    """
    assert fresh_process["without"]["bare"] == {
        "loaded": 0,
        "success": True,
        "evaluated": 0,
        "reident_imported": False,
    }
    # with the package, the loaded suite gets the guard back (attach_guard) and runs it
    out = fresh_process["with"]["bare"]
    assert out == {"loaded": 5, "success": False, "evaluated": 5, "reident_imported": True}


def test_check_context_accepts_a_guarded_suite_and_names_a_bare_one(
    fresh_process: dict[str, Any],
) -> None:
    assert fresh_process["check"]["guarded"] == {"counts": {"adult_release": 5}}
    assert fresh_process["check"]["bare"] == {
        "error": "suite 'adult_release': reident expectations without the guard "
        "(add reident_airflow.gx.guard_expectation() and save the suite)"
    }


def test_the_example_suite_starts_with_the_guard() -> None:
    data = json.loads(SUITE.read_text(encoding="utf-8"))
    assert data["expectations"][0] == guard_expectation()
    assert [is_guard(e) for e in data["expectations"]] == [True, False, False, False, False]
    assert guard_expectation()["kwargs"]["min_value"] == {"$PARAMETER": f"{GUARD_FUNCTION}()"}


def test_load_suite_adds_the_guard_once() -> None:
    data = json.loads(SUITE.read_text(encoding="utf-8"))
    bare = {**data, "expectations": data["expectations"][1:]}
    for source in (data, bare):
        suite = load_suite(source)
        assert [is_guard(e) for e in suite.expectations] == [True, False, False, False, False]
    core = {"name": "core", "expectations": [{"type": "expect_table_row_count_to_be_between"}]}
    core["expectations"][0]["kwargs"] = {"min_value": 1}
    assert not any(is_guard(e) for e in load_suite(core).expectations)


def test_check_result_refuses_a_result_missing_expectations(adult: pd.DataFrame) -> None:
    context = new_context()
    source = context.data_sources.add_pandas("frame")
    batch = source.add_dataframe_asset("frame").add_batch_definition_whole_dataframe("whole")
    suite = context.suites.add(load_suite(SUITE))
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name="v", data=batch, suite=suite)
    )
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(name="c", validation_definitions=[definition])
    )
    result = checkpoint.run(batch_parameters={"dataframe": adult.head(20)})
    check_result(result, 5)
    with pytest.raises(SuiteIncompleteError, match="5 of 6 expectations evaluated"):
        check_result(result, 6)


def test_run_release_checkpoint_refuses_dropped_expectations(
    adult: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An expectation GE drops after the suite JSON was read is refused, not skipped.

    The registry entry of k-anonymity disappears between ``load_suite`` and the run (a
    registry cleared by someone else): GE drops the expectation when the context stores the
    suite and would validate the other four; the release check refuses instead.
    """
    from great_expectations.expectations import registry

    import reident_airflow.gx.checkpoint as module

    real = module.load_suite

    def then_unregister(source: Any) -> ExpectationSuite:
        suite = real(source)
        monkeypatch.delitem(registry._registered_expectations, "expect_table_to_be_k_anonymous")
        return suite

    monkeypatch.setattr(module, "load_suite", then_unregister)
    with pytest.raises(SuiteIncompleteError, match="5 expectations, 4 in the context"):
        run_release_checkpoint(suite=SUITE, dataframe=adult, raise_on_failure=False)


def test_the_gx_dag_fails_an_incomplete_suite_without_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gx_release_check``: a suite that lost an expectation fails ``validate``, no publish."""
    from great_expectations.expectations import registry

    import reident_airflow.gx.checkpoint as module
    from tests.operators._dags import load_dag, sqlite_conn, states

    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_STAGING", sqlite_conn(tmp_path / "staging.db"))
    real = module.load_suite

    def then_unregister(source: Any) -> ExpectationSuite:
        suite = real(source)
        monkeypatch.delitem(registry._registered_expectations, "expect_table_to_be_k_anonymous")
        return suite

    monkeypatch.setattr(module, "load_suite", then_unregister)
    run = load_dag("gx_release_check").test(run_conf={"alert_file": str(tmp_path / "a.jsonl")})
    got = states(run)
    assert run.state == "failed", got
    assert got["validate"] == ("failed", 1), got  # deterministic: not retried
    assert got["publish"][0] == "upstream_failed"


def test_the_suite_file_read_by_plain_ge_does_not_succeed(fresh_process: dict[str, Any]) -> None:
    """``ExpectationSuite(**json)`` and ``batch.validate`` without the package: GE raises."""
    assert fresh_process["without"]["plain"] == {
        "loaded": 1,
        "error": "SuiteParameterError",
        "reident_imported": False,
    }

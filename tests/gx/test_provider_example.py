"""The worked example of ``docs/guides/gx-provider.md`` runs as the GX provider runs it.

The provider (``airflow-provider-great-expectations``) is not installed here: its three
operator modules are stood in for by classes that keep their arguments, the example's code
block is executed as the DAG file it is, and its callables are then called the way the
provider's 1.0 operators call them: ``GXValidateDataFrameOperator`` validates the suite on a
pandas batch of ``configure_dataframe()``, ``GXValidateBatchOperator`` on the batch definition
``configure_batch_definition(context)`` returns, ``GXValidateCheckpointOperator`` runs
``configure_checkpoint(context)``. On Adult (k = 1) each one fails, as the page says.
"""

from __future__ import annotations

import io
import json
import re
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import great_expectations as gx
import pandas as pd
import pytest

from reident_airflow.gx import is_guard
from tests.conftest import ROOT
from tests.gx._fresh import UNIQUE
from tests.gx.conftest import new_context, postgres_conn

PAGE = ROOT / "docs" / "guides" / "gx-provider.md"
OPERATORS = {
    "validate_dataframe": "GXValidateDataFrameOperator",
    "validate_batch": "GXValidateBatchOperator",
    "validate_checkpoint": "GXValidateCheckpointOperator",
}


def example_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    [code] = [b for b in blocks if b.startswith("# dags/gx_provider_release.py")]
    return code


class Operator:
    """Stands in for a provider operator: keeps what the DAG passes it."""

    made: ClassVar[list[Operator]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        Operator.made.append(self)


@pytest.fixture
def example(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, postgres_adult: tuple[str, str]
) -> dict[str, Any]:
    """The example DAG file executed, with the provider stood in for and local paths."""
    url, table = postgres_adult
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_STAGING", postgres_conn(url))
    for module, name in OPERATORS.items():
        stub = types.ModuleType(f"great_expectations_provider.operators.{module}")
        setattr(stub, name, type(name, (Operator,), {}))
        monkeypatch.setitem(sys.modules, stub.__name__, stub)
    for package in ("great_expectations_provider", "great_expectations_provider.operators"):
        monkeypatch.setitem(sys.modules, package, types.ModuleType(package))
    adult = ROOT / "reident_airflow" / "data" / "adult.csv"
    code = (
        example_code()
        .replace("/data/release/adult.csv", str(adult))
        .replace('table_name="adult"', f'table_name="{table}"')
        .replace("/data/alerts.jsonl", str(tmp_path / "alerts.jsonl"))
    )
    namespace: dict[str, Any] = {"__name__": "gx_provider_release"}
    Operator.made = []
    exec(compile(code, str(PAGE), "exec"), namespace)
    namespace["operators"] = {type(o).__name__: o.kwargs for o in Operator.made}
    namespace["alerts"] = tmp_path / "alerts.jsonl"
    return namespace


def validate(context: Any, batch_definition: Any, suite: Any, parameters: Any) -> Any:
    """What the provider does with ``expect``: one validation definition, run."""
    definition = context.validation_definitions.add_or_update(
        validation=gx.ValidationDefinition(name="gate", suite=suite, data=batch_definition)
    )
    return definition.run(batch_parameters=parameters)


def test_the_dag_passes_each_operator_a_guarded_suite(example: dict[str, Any]) -> None:
    operators = example["operators"]
    assert sorted(operators) == sorted(OPERATORS.values())
    for name in ("GXValidateDataFrameOperator", "GXValidateBatchOperator"):
        suite = operators[name]["expect"]
        assert is_guard(suite.expectations[0]) and len(suite.expectations) == 4


def test_the_dataframe_gate_fails_on_adult(example: dict[str, Any]) -> None:
    kwargs = example["operators"]["GXValidateDataFrameOperator"]
    frame = kwargs["configure_dataframe"]()
    context = new_context()
    batch = context.data_sources.add_pandas("gate").add_dataframe_asset("gate")
    definition = batch.add_batch_definition_whole_dataframe("gate")
    result = validate(context, definition, kwargs["expect"], {"dataframe": frame})
    assert not result.success
    # the guard passes; Adult on sex, age, race has k = 1 (ARX, tests/data)
    assert [r.success for r in result.results][:2] == [True, False]
    assert result.results[1].result["observed_value"] == 1


def test_the_table_gate_fails_on_adult_in_postgresql(example: dict[str, Any]) -> None:
    kwargs = example["operators"]["GXValidateBatchOperator"]
    context = new_context()
    definition = kwargs["configure_batch_definition"](context)
    result = validate(context, definition, kwargs["expect"], {})
    assert not result.success
    assert result.results[1].result["observed_value"] == 1


def test_the_checkpoint_gate_fails_and_alerts(example: dict[str, Any]) -> None:
    kwargs = example["operators"]["GXValidateCheckpointOperator"]
    result = kwargs["configure_checkpoint"](new_context()).run(batch_parameters={})
    assert not result.success
    [alert] = [json.loads(line) for line in example["alerts"].read_text().splitlines()]
    assert alert["outcome"] == "fail"


def test_the_unique_table_fails_every_reident_expectation(example: dict[str, Any]) -> None:
    """The suite of the page on the fail-closed tests' k = 1 table (three records)."""
    frame = pd.read_csv(io.StringIO(UNIQUE), dtype=str, keep_default_na=False)
    frame = frame.assign(**{"salary-class": ["<=50K", ">50K", "<=50K"]})
    context = new_context()
    batch = context.data_sources.add_pandas("u").add_dataframe_asset("u")
    definition = batch.add_batch_definition_whole_dataframe("u")
    suite = example["release_suite"]()
    result = validate(context, definition, suite, {"dataframe": frame})
    # three unique records: k = 1 < 5, average risk 1 > 0.05, one value per class l = 1 < 2
    assert [r.success for r in result.results] == [True, False, False, False]

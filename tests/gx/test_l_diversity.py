"""``expect_table_to_be_l_diverse``: hand-made cases, every engine equal to the CLI, bad input.

Hand computation on SMALL: classes on (sex, zip) are (M, 1): diagnoses a, b, c (distinct 3),
(M, 2): a, b, c (3), (F, 1): a, b, c, a (3 distinct; counts 2, 1, 1: entropy
exp(-(1/2 ln 1/2 + 2 * 1/4 ln 1/4)) = 2^1.5 = 2.828..., recursive c=2: 2 < 2*(1+1) -> l=2,
2 < 2*1 no -> 2). With ``flag``: (M, *) all 'x', (F, 1) all 'y' -> distinct 1 everywhere.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from great_expectations.compatibility import pydantic

from reident_airflow import cli
from reident_airflow.gx import ExpectTableToBeLDiverse
from tests._sdcmicro import sdcmicro_data, sdcmicro_summary
from tests.gx.conftest import sql_batch, typed

SMALL = pd.DataFrame(
    {
        "sex": ["M"] * 6 + ["F"] * 4,
        "zip": ["1", "1", "1", "2", "2", "2", "1", "1", "1", "1"],
        "diagnosis": list("abcabcabca"),
        "flag": ["x"] * 6 + ["y"] * 4,
    }
)
QIS = ["sex", "zip"]


def expectation(**kwargs: Any) -> ExpectTableToBeLDiverse:
    kwargs.setdefault("sensitive", ["diagnosis"])
    return ExpectTableToBeLDiverse(quasi_identifiers=QIS, **kwargs)


@pytest.mark.parametrize(
    ("measure", "l_value", "success"),
    [
        ("distinct", 3, True),
        ("distinct", 4, False),
        ("entropy", 2.8, True),
        ("entropy", 2.9, False),
        ("recursive", 2, True),
        ("recursive", 3, False),
    ],
)
def test_measures(pandas_batch: Any, measure: str, l_value: float, success: bool) -> None:
    result = pandas_batch(SMALL).validate(expectation(min_l=l_value, measure=measure))
    assert result.success is success, result.result["details"]
    details = result.result["details"]
    expected = {"distinct": 3, "entropy": 2**1.5, "recursive": 2}[measure]
    assert result.result["observed_value"] == pytest.approx(expected)
    assert details["values"] == {"diagnosis": pytest.approx(expected)}
    assert details["below_limit"] == ([] if success else ["diagnosis"])
    document = details["assessment"]
    assert document["schema"] == "reident.assessment/v1"
    assert document["l_diversity"]["diagnosis"][measure] == pytest.approx(expected)


def test_a_homogeneous_column_fails_and_is_named(pandas_batch: Any) -> None:
    result = pandas_batch(SMALL).validate(expectation(sensitive=["diagnosis", "flag"], min_l=2))
    assert not result.success
    details = result.result["details"]
    assert details["below_limit"] == ["flag"]
    assert details["summary"] == "distinct l = 1 for 'flag' (required: at least 2 in every column)"
    assert result.result["observed_value"] == 1  # the lowest column's: 'flag'
    document = details["assessment"]
    assert document["breaches"] == [
        {"metric": "l_diversity.flag.distinct", "observed": 1.0, "limit": 2.0}
    ]
    assert document["l_diversity"]["flag"]["homogeneous_records"] == 1.0


def test_unknown_column_is_a_failed_result_not_a_crash(pandas_batch: Any) -> None:
    result = pandas_batch(SMALL).validate(expectation(sensitive=["nope"], min_l=2))
    assert not result.success
    assert "unknown sensitive column 'nope'" in result.exception_info["exception_message"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_l": 0}, "min_l must be >= 1"),
        ({"min_l": 2.5}, "must be a whole number"),
        ({"min_l": 2, "measure": "max"}, "unknown measure 'max'"),
        ({"min_l": 2, "recursive_c": 0}, "recursive c"),
        ({"min_l": 2, "sensitive": ["sex"]}, "'sex' is also a quasi-identifier"),
        ({"min_l": 2, "sensitive": []}, "list of column names"),
    ],
)
def test_bad_parameters_fail_when_built(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        expectation(**kwargs)


def test_entropy_accepts_a_fractional_l() -> None:
    assert expectation(min_l=1.5, measure="entropy").min_l == 1.5


def test_sentence() -> None:
    exp = expectation(min_l=2, measure="recursive", recursive_c=3)
    template, params = type(exp)._rendered_sentence(exp.configuration.kwargs)
    text = template
    for key, value in sorted(params.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(f"${key}", str(value))
    assert text == (
        "Every group of records sharing quasi-identifiers sex, zip must be recursive "
        "(3, 2)-diverse in each of diagnosis."
    )


def test_pandas_sqlite_and_cli_agree(pandas_batch: Any, context: Any, tmp_path: Path) -> None:
    """sdcMicro's testdata: hhcivil has a single value in classes holding 2466 records."""
    frame = pd.read_csv(sdcmicro_data("testdata_data.csv"))
    keys = list(sdcmicro_summary()["testdata"]["keyVars"])
    url = f"sqlite:///{tmp_path / 'survey.db'}"
    engine = sa.create_engine(url)
    frame.to_sql("survey", engine, index=False)
    engine.dispose()
    exp = ExpectTableToBeLDiverse(quasi_identifiers=keys, sensitive=["hhcivil", "age"], min_l=2)
    out = tmp_path / "cli.json"
    code = cli.main(
        [
            "assess",
            str(sdcmicro_data("testdata_data.csv")),
            "--qi",
            ",".join(keys),
            "--sensitive",
            "hhcivil,age",
            "--min-l",
            "2",
            "--json",
            str(out),
        ]
    )
    assert code == 1
    expected = json.loads(out.read_text(encoding="utf-8"))
    for key in ("input", "advice"):  # about the command line's run (test_engines.cli_document)
        expected.pop(key, None)
    for batch in (pandas_batch(frame), sql_batch(context, url, "survey")):
        result = batch.validate(exp)
        assert not result.success
        assert result.result["details"]["assessment"] == expected
        assert math.isclose(
            expected["l_diversity"]["hhcivil"]["homogeneous_records"] * len(frame), 2466
        )


def test_postgresql_equals_pandas(
    pandas_batch: Any, context: Any, adult: pd.DataFrame, postgres_adult: tuple[str, str]
) -> None:
    url, table = postgres_adult
    exp = ExpectTableToBeLDiverse(
        quasi_identifiers=["sex", "age", "race"],
        sensitive=["salary-class", "occupation"],
        min_l=2,
        measure="recursive",
    )

    on_pandas = pandas_batch(typed(adult)).validate(exp)
    on_postgres = sql_batch(context, url, table).validate(exp)
    assert on_postgres.result["observed_value"] == on_pandas.result["observed_value"]
    assert on_postgres.result["details"] == on_pandas.result["details"]
    assert on_postgres.success is on_pandas.success is False


def test_argument_names_are_the_operators() -> None:
    """Issue 29: ``sensitive``, ``min_l``, ``recursive_c``, as ReidentificationRiskOperator."""
    import inspect

    from reident_airflow.operators.risk import ReidentificationRiskOperator

    fields = ExpectTableToBeLDiverse.__fields__
    own = [name for name in ExpectTableToBeLDiverse.__annotations__ if name in fields]
    own.remove("measure")  # the operator reports every measure; the expectation gates one
    assert own == ["sensitive", "min_l", "recursive_c"]
    operator = inspect.signature(ReidentificationRiskOperator.__init__).parameters
    assert all(name in operator for name in own)


def test_former_names_still_load_with_a_deprecation_warning(pandas_batch: Any) -> None:
    """A suite saved with ``sensitive_columns``, ``l``, ``c`` loads, and re-saves renamed."""
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    kwargs = {"quasi_identifiers": QIS, "sensitive_columns": ["diagnosis"], "l": 2, "c": 3}
    config = ExpectationConfiguration(type="expect_table_to_be_l_diverse", kwargs=kwargs)
    with pytest.warns(DeprecationWarning) as caught:
        exp = config.to_domain_obj()
    assert sorted(str(w.message).split("'")[1] for w in caught) == ["c", "l", "sensitive_columns"]
    assert exp.configuration.kwargs == {
        "quasi_identifiers": QIS,
        "sensitive": ["diagnosis"],
        "min_l": 2.0,
        "recursive_c": 3.0,
    }
    renamed = expectation(min_l=2, recursive_c=3)
    assert pandas_batch(SMALL).validate(exp).result == pandas_batch(SMALL).validate(renamed).result


def test_a_name_and_its_former_name_together_are_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match="give min_l only: l is its former name"):
        expectation(min_l=2, l=2)

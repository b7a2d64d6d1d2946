"""Passing and failing cases of each risk expectation, bad parameters, suite parameters.

Hand-made table (hand computation): classes on (sex, zip) are (M, 1): 3, (M, 2): 3,
(F, 1): 4, so n = 10, u = 3, k = 3, highest risk 1/3, average risk 1/(10/3) = 0.3, marketer
u/n = 0.3, no sample unique.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from great_expectations.compatibility import pydantic

from reident_airflow.engine.assessment import assess
from reident_airflow.gx import (
    MEASURES,
    ExpectTableReidentificationRiskToBeBelow,
    ExpectTableToBeKAnonymous,
    is_guard,
)
from reident_airflow.sources.frames import class_table_from_frame
from tests.gx.conftest import sql_batch

SMALL = pd.DataFrame(
    {
        "sex": ["M"] * 6 + ["F"] * 4,
        "zip": ["1", "1", "1", "2", "2", "2", "1", "1", "1", "1"],
        "diagnosis": list("abcabcabca"),
    }
)
SMALL_QIS = ["sex", "zip"]


def risk(measure: str, max_value: float, **kwargs: Any) -> ExpectTableReidentificationRiskToBeBelow:
    return ExpectTableReidentificationRiskToBeBelow(
        quasi_identifiers=SMALL_QIS, measure=measure, max_value=max_value, **kwargs
    )


# ----------------------------------------------------------------------------- k-anonymity
@pytest.mark.parametrize(("k", "success"), [(1, True), (3, True), (4, False), (10, False)])
def test_k_anonymous_passes_up_to_the_smallest_class(
    pandas_batch: Any, k: int, success: bool
) -> None:
    result = pandas_batch(SMALL).validate(
        ExpectTableToBeKAnonymous(quasi_identifiers=SMALL_QIS, k=k)
    )
    assert result.success is success
    assert result.result["observed_value"] == 3  # classes of 3, 3 and 4 records
    details = result.result["details"]
    assert (details["measure"], details["limit"]) == ("k", k)
    document = details["assessment"]
    assert document["schema"] == "reident.assessment/v1"
    assert document["k"] == 3
    assert document["thresholds"] == {"min_k": k}
    assert document["passed"] is success
    assert details["summary"] == f"k = 3 (required: at least {k})"


# ------------------------------------------------------------------------------ risk below
@pytest.mark.parametrize(
    ("measure", "max_value", "success"),
    [
        ("prosecutor.highest_risk", 0.34, True),
        ("prosecutor.highest_risk", 1 / 3, True),  # at most: the limit itself passes
        ("prosecutor.highest_risk", 0.33, False),
        ("prosecutor.average_risk", 0.3, True),
        ("prosecutor.average_risk", 0.29, False),
        ("prosecutor.records_at_risk", 1.0, True),  # every record has risk > 0.2
        ("prosecutor.records_at_risk", 0.99, False),
        ("journalist.highest_risk", 0.34, True),  # no register: equals the prosecutor's
        ("journalist.highest_risk", 0.33, False),
        ("marketer.risk", 0.3, True),
        ("marketer.risk", 0.29, False),
        ("uniqueness.sample_uniques", 0.0, True),
    ],
)
def test_risk_below(pandas_batch: Any, measure: str, max_value: float, success: bool) -> None:
    result = pandas_batch(SMALL).validate(risk(measure, max_value))
    assert result.success is success, result.result["details"]
    details = result.result["details"]
    assert details["measure"] == measure
    assert details["limit"] == max_value
    node: Any = details["assessment"]
    for part in MEASURES[measure].path:
        node = node[part]
    assert isinstance(result.result["observed_value"], float)  # the scalar, not the document
    assert result.result["observed_value"] == node


def test_records_at_risk_uses_the_record_threshold(pandas_batch: Any) -> None:
    # at threshold 0.3 only classes of size 3 (risk 1/3) are at risk: 6 of 10 records
    result = pandas_batch(SMALL).validate(
        risk("prosecutor.records_at_risk", 0.6, record_threshold=0.3)
    )
    assert result.success
    assert result.result["observed_value"] == 0.6
    assert result.result["details"]["assessment"]["prosecutor"]["record_threshold"] == 0.3


def test_gated_measures_echo_the_cli_gate_and_others_do_not(pandas_batch: Any) -> None:
    batch = pandas_batch(SMALL)
    gated = batch.validate(risk("prosecutor.average_risk", 0.25)).result["details"]["assessment"]
    assert gated["thresholds"] == {"max_average_risk": 0.25}
    assert gated["breaches"] == [
        {"metric": "prosecutor.average_risk", "observed": 0.3, "limit": 0.25}
    ]
    plain = batch.validate(risk("marketer.risk", 0.25)).result["details"]["assessment"]
    assert plain["thresholds"] == {} and plain["breaches"] == []


def test_population_uniques_use_the_engine(pandas_batch: Any, adult: pd.DataFrame) -> None:
    qis = ["sex", "age", "race"]
    expected = assess(class_table_from_frame(adult, qis), sampling_fraction=0.5).to_dict()
    fraction = expected["uniqueness"]["population"]["dankar"]["fraction"]
    batch = pandas_batch(adult)
    for limit, success in ((fraction, True), (fraction * 0.999, False)):
        result = batch.validate(
            ExpectTableReidentificationRiskToBeBelow(
                quasi_identifiers=qis,
                measure="uniqueness.population.dankar.fraction",
                max_value=limit,
                sampling_fraction=0.5,
            )
        )
        assert result.success is success
        assert result.result["observed_value"] == fraction
        assert result.result["details"]["assessment"] == expected


# --------------------------------------------------------------------- data-dependent errors
def test_unknown_column_is_a_failed_result_with_the_engine_message(
    pandas_batch: Any, context: Any, sqlite_url: str
) -> None:
    expectation = ExpectTableToBeKAnonymous(quasi_identifiers=["sex", "agee"], k=2)
    for batch in (pandas_batch(SMALL), sql_batch(context, sqlite_url, "adult")):
        result = batch.validate(expectation)
        assert result.success is False
        info = result.exception_info
        assert info["raised_exception"] is True
        assert info["exception_message"].startswith("unknown quasi-identifier 'agee'")
        assert "available columns: 'sex'" in info["exception_message"]
        assert "Traceback" not in info["exception_traceback"]
        assert result.result["observed_value"] is None


def test_empty_table_is_a_failed_result(pandas_batch: Any, context: Any, sqlite_url: str) -> None:
    expectation = ExpectTableReidentificationRiskToBeBelow(quasi_identifiers=["sex"], max_value=0.5)
    for batch in (pandas_batch(SMALL.head(0)), sql_batch(context, sqlite_url, "empty")):
        result = batch.validate(expectation)
        assert result.success is False
        assert "no records" in result.exception_info["exception_message"]


# -------------------------------------------------------------------------- bad parameters
@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ExpectTableToBeKAnonymous(quasi_identifiers=SMALL_QIS, k=0), "k must be >= 1"),
        (
            lambda: ExpectTableToBeKAnonymous(quasi_identifiers=SMALL_QIS, k=2.5),
            "k must be a whole number",
        ),
        (
            lambda: ExpectTableToBeKAnonymous(quasi_identifiers=SMALL_QIS, k=True),
            "k must be a whole number",
        ),
        (
            lambda: ExpectTableToBeKAnonymous(quasi_identifiers=[], k=2),
            "no quasi-identifiers given",
        ),
        (
            lambda: ExpectTableToBeKAnonymous(quasi_identifiers=["sex", "sex"], k=2),
            "listed twice",
        ),
        (
            lambda: ExpectTableToBeKAnonymous(quasi_identifiers="sex,zip", k=2),
            "must be a list of column names",
        ),
        (
            lambda: risk("prosecutor.highest_risc", 0.1),
            "unknown measure 'prosecutor.highest_risc' (did you mean 'prosecutor.highest_risk'?)",
        ),
        (lambda: risk("prosecutor.highest_risk", 1.5), "max_value must be in [0, 1]"),
        (lambda: risk("prosecutor.highest_risk", 0.0), "must be in (0, 1]"),
        (lambda: risk("marketer.risk", "low"), "max_value must be a number"),
        (
            lambda: risk("prosecutor.records_at_risk", 0.1, record_threshold=0),
            "record_threshold must be in (0, 1]",
        ),
        (
            lambda: risk("uniqueness.population.pitman.fraction", 0.1),
            "give population_size, sampling_fraction or region",
        ),
        (
            lambda: risk("marketer.risk", 0.1, population_size=100, region="usa"),
            "at most one of population_size, sampling_fraction, region",
        ),
        (lambda: risk("marketer.risk", 0.1, region="mars"), "unknown region 'mars'"),
        (
            lambda: ExpectTableReidentificationRiskToBeBelow(quasi_identifiers=SMALL_QIS),
            "max_value is required",
        ),
        (
            lambda: ExpectTableToBeKAnonymous(
                quasi_identifiers=SMALL_QIS, k=2, rank_attributes=False, max_subset_size=2
            ),
            "max_subset_size sizes the QI ranking, which rank_attributes=False skips",
        ),
        (
            lambda: risk("marketer.risk", 0.1, rank_attributes="no"),
            "rank_attributes must be true or false, got 'no'",
        ),
    ],
)
def test_bad_parameters_fail_when_the_expectation_is_built(build: Any, message: str) -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        build()
    assert message in str(caught.value)


# ------------------------------------------------------------------------ suite parameters
def test_suite_parameters_are_resolved_at_validation(context: Any) -> None:
    import great_expectations as gx

    source = context.data_sources.add_pandas("params")
    definition = source.add_dataframe_asset("small").add_batch_definition_whole_dataframe("all")
    suite = context.suites.add(
        gx.ExpectationSuite(
            name="params",
            expectations=[
                ExpectTableToBeKAnonymous(quasi_identifiers=SMALL_QIS, k={"$PARAMETER": "k"}),
                risk("prosecutor.highest_risk", {"$PARAMETER": "highest"}),  # type: ignore[arg-type]
            ],
        )
    )
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name="params", data=definition, suite=suite)
    )
    passing = validation.run(
        batch_parameters={"dataframe": SMALL}, expectation_parameters={"k": 3, "highest": 0.5}
    )
    assert passing.success
    failing = validation.run(
        batch_parameters={"dataframe": SMALL}, expectation_parameters={"k": 4, "highest": 0.1}
    )
    # the suite got the guard first (attach_guard): it passes, the two given fail
    assert is_guard(suite.expectations[0])
    assert [r.success for r in failing.results] == [True, False, False]
    assert failing.results[1].result["observed_value"] == 3
    assert failing.results[1].result["details"]["assessment"]["thresholds"] == {"min_k": 4}

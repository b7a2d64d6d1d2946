"""Data Docs: each expectation reads as a sentence, the observed value as its measured number.

SMALL (hand computation): classes on (sex, zip) are (M, 1): 3, (M, 2): 3, (F, 1): 4, so k = 3;
every record's risk (1/3 or 1/4) exceeds 0.1, so the share of records at risk is 1; with a
population of 1000 no class is a population unique under Dankar's model (0).
"""

from __future__ import annotations

import re
from string import Template
from typing import Any

import great_expectations as gx
import pandas as pd
from great_expectations.core import ExpectationValidationResult
from great_expectations.render.renderer import (
    ExpectationSuitePageRenderer,
    ValidationResultsPageRenderer,
)
from great_expectations.render.view import DefaultJinjaPageView

from reident_airflow.gx import (
    ExpectTableDirectMatchProtectionToBeAbove,
    ExpectTableReidentificationRiskToBeBelow,
    ExpectTableToBeKAnonymous,
    ExpectTableToBeLDiverse,
    ExpectTableToHoldNoDirectIdentifiers,
    is_guard,
)

QIS = ["sex", "zip"]
SMALL = pd.DataFrame({"sex": ["M"] * 6 + ["F"] * 4, "zip": list("1112221111")})

K = ExpectTableToBeKAnonymous(quasi_identifiers=QIS, k=5)
RISK = ExpectTableReidentificationRiskToBeBelow(
    quasi_identifiers=QIS,
    measure="prosecutor.records_at_risk",
    max_value=0.05,
    record_threshold=0.1,
)
POPULATION = ExpectTableReidentificationRiskToBeBelow(
    quasi_identifiers=QIS,
    measure="uniqueness.population.dankar.fraction",
    max_value=1e-6,
    population_size=1000,
)
DIRECT = ExpectTableDirectMatchProtectionToBeAbove(original_table="patients", key="id", target=90)
UNKNOWN = ExpectTableToBeKAnonymous(quasi_identifiers=["sex", "postcode"], k=2)


def sentence(expectation: Any) -> str:
    [block] = type(expectation)._prescriptive_renderer(configuration=expectation.configuration)
    template = block.string_template
    return Template(template["template"]).substitute(
        {k: str(v) for k, v in template["params"].items()}
    )


def test_prescriptive_sentences_read_naturally() -> None:
    assert sentence(K) == (
        "Must be k-anonymous for k = 5 on quasi-identifiers sex, zip: every combination of "
        "their values must be shared by at least 5 records."
    )
    assert sentence(RISK) == (
        "Share of records at risk (prosecutor) on quasi-identifiers sex, zip must be at most "
        "0.05 (a record is at risk when its risk exceeds 0.1)."
    )
    assert sentence(POPULATION) == (
        "Estimated share of population uniques (dankar model) on quasi-identifiers sex, zip "
        "must be at most 1e-06, assuming a population of 1000."
    )
    assert sentence(DIRECT) == (
        "Column direct match protection against patients must be at least 90 for every "
        "column (records matched on id)."
    )


def test_atomic_renderer_matches_the_legacy_one() -> None:
    for expectation in (K, RISK, POPULATION, DIRECT):
        expectation.render()
        [summary] = [
            c for c in expectation.rendered_content or [] if c.name.endswith("prescriptive.summary")
        ]
        params = {k: str(v["value"]) for k, v in summary.value.params.items()}
        assert Template(summary.value.template).substitute(params) == sentence(expectation)


def observed(expectation: Any, result: Any) -> tuple[str, str]:
    """The observed value as the atomic renderer and as the HTML (legacy) renderer give it."""
    cls = type(expectation)
    atomic = cls._atomic_diagnostic_observed_value(
        configuration=expectation.configuration, result=result
    )
    params = {k: str(v["value"]) for k, v in atomic.value.params.items()}
    legacy = cls._diagnostic_observed_value_renderer(
        configuration=expectation.configuration, result=result
    )
    return Template(atomic.value.template).substitute(params), legacy


def test_the_observed_value_is_the_measured_number(pandas_batch: Any) -> None:
    batch = pandas_batch(SMALL)
    assert observed(K, batch.validate(K)) == ("k = 3",) * 2
    assert observed(RISK, batch.validate(RISK)) == ("prosecutor.records_at_risk = 1",) * 2
    atomic, legacy = observed(UNKNOWN, batch.validate(UNKNOWN))
    assert atomic == legacy
    assert legacy.startswith("not evaluated: unknown quasi-identifier 'postcode'")
    # a measure the engine reports unavailable (a Pitman fit that does not converge)
    unavailable = ExpectationValidationResult(
        success=False,
        result={"observed_value": None, "details": {"measure": "pitman", "limit": 0.1}},
    )
    assert observed(POPULATION, unavailable) == ("pitman = unavailable",) * 2
    assert observed(POPULATION, None) == ("--",) * 2


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_data_docs_pages_render(context: Any) -> None:
    definition = (
        context.data_sources.add_pandas("docs")
        .add_dataframe_asset("small")
        .add_batch_definition_whole_dataframe("all")
    )
    suite = context.suites.add(
        gx.ExpectationSuite(name="docs", expectations=[K, RISK, POPULATION, UNKNOWN])
    )
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name="docs", data=definition, suite=suite)
    )
    result = validation.run(batch_parameters={"dataframe": SMALL})
    # the suite got the guard first (attach_guard); it passes, the others are the ones given
    assert is_guard(suite.expectations[0]) and result.results[0].success
    reident = result.results[1:]
    assert [r.success for r in reident] == [False, False, True, False]

    assert [r.result["observed_value"] for r in reident] == [3, 1.0, 0.0, None]
    page = text_of(DefaultJinjaPageView().render(ValidationResultsPageRenderer().render(result)))
    assert "every combination of their values must be shared by at least 5 records" in page
    assert "k = 3 " in page
    assert "prosecutor.records_at_risk = 1 " in page
    assert "uniqueness.population.dankar.fraction = 0 " in page
    assert "not evaluated: unknown quasi-identifier 'postcode'" in page
    assert "reident.assessment/v1" not in page  # the document stays in the result's details

    suite_page = text_of(
        DefaultJinjaPageView().render(ExpectationSuitePageRenderer().render(suite))
    )
    assert "Share of records at risk (prosecutor) on quasi-identifiers" in suite_page


def test_data_docs_rows_name_the_failing_columns(context: Any) -> None:
    # issue 42 item 6: a failing row said "failing_columns = 1" or "l_diversity.distinct = 1"
    # without naming the column. (M, 1) holds only "flu" (distinct l = 1 < 2) and "mrn" is a
    # unique record number the scan fails; "note" passes both.
    frame = SMALL.assign(
        mrn=[f"MRN{400071 + 13 * i}" for i in range(10)],
        diagnosis=["flu", "flu", "flu", "cold", "flu", "cold", "flu", "cold", "flu", "cold"],
    )
    suite = context.suites.add(
        gx.ExpectationSuite(
            name="failing-columns",
            expectations=[
                ExpectTableToBeLDiverse(quasi_identifiers=QIS, sensitive=["diagnosis"], min_l=2),
                ExpectTableToHoldNoDirectIdentifiers(
                    quasi_identifiers=QIS, allow_columns=["diagnosis"]
                ),
            ],
        )
    )
    definition = (
        context.data_sources.add_pandas("failing")
        .add_dataframe_asset("small")
        .add_batch_definition_whole_dataframe("all")
    )
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name="failing-columns", data=definition, suite=suite)
    )
    result = validation.run(batch_parameters={"dataframe": frame})
    diverse, scan = result.results[1:]
    assert (diverse.success, scan.success) == (False, False)
    assert scan.result["details"]["failing"] == ["mrn"]
    page = text_of(DefaultJinjaPageView().render(ValidationResultsPageRenderer().render(result)))
    assert "l_diversity.distinct = 1 (failing columns: diagnosis)" in page
    assert "failing_columns = 1 (failing columns: mrn)" in page
    assert "MRN400071" not in page  # names only, never a value
    # the atomic renderer says the same
    assert observed(ExpectTableToHoldNoDirectIdentifiers(), scan)[0] == (
        "failing_columns = 1 (failing columns: mrn)"
    )

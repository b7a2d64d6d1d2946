"""AssessmentOptions: checked when built, its rules written once, loose inputs converted."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from reident_airflow.engine.assessment import assess
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.defaults import DEFAULT_RECORD_THRESHOLD, DEFAULT_RECURSIVE_C
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.options import AssessmentOptions, OptionError, Thresholds

QIS = ("age", "zip")


def test_defaults_come_from_one_place() -> None:
    options = AssessmentOptions(QIS)
    assert options.record_threshold == DEFAULT_RECORD_THRESHOLD
    assert options.recursive_c == DEFAULT_RECURSIVE_C
    assert options.thresholds == Thresholds()
    assert options.rank_attributes and not options.suda
    assert options.needs_class_table
    assert not dataclasses.replace(options, rank_attributes=False).needs_class_table


def test_frozen_and_normalised() -> None:
    options = AssessmentOptions(["age", "zip"], sensitive=["dx"])  # type: ignore[arg-type]
    assert options.quasi_identifiers == QIS and options.sensitive == ("dx",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.weight = "w"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"thresholds": Thresholds(max_global_risk=0.1)}, "a maximum global risk gates the "
         "individual risk: give the weight column"),
        ({"thresholds": Thresholds(min_l=2)}, "a minimum l gates l-diversity: give sensitive"),
        ({"rank_attributes": False, "max_subset_size": 2}, "max_subset_size sizes the QI "
         "ranking, which rank_attributes=False skips"),
        ({"suda_max_msu_size": 2}, "suda_max_msu_size applies to suda"),
        ({"population_size": 10, "region": "usa"}, "give at most one of population_size, "
         "sampling_fraction, region; got population_size and region"),
    ],
)  # fmt: skip
def test_rules_between_fields(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        AssessmentOptions(QIS, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"record_threshold": 0}, "record_threshold must be in"),
        ({"sampling_fraction": 1.5}, "sampling_fraction must be in"),
        ({"population_size": 0}, "population_size must be >= 1"),
        ({"region": "mars"}, "unknown region 'mars'; known regions: usa"),
        ({"recursive_c": -1}, "recursive c"),
        ({"max_subset_size": 1.5}, "max_subset_size must be a whole number"),
        ({"suda": "yes"}, "suda must be true or false"),
        ({"weight": ""}, "weight must be a name"),
        ({"sensitive": ("s", "")}, "sensitive needs one or more column names"),
    ],
)
def test_each_field_is_checked_and_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        AssessmentOptions(QIS, **kwargs)


def test_quasi_identifiers_are_required() -> None:
    with pytest.raises(InvalidInputError, match="quasi_identifiers needs one or more"):
        AssessmentOptions(())


def test_from_mapping_converts_rendered_strings() -> None:
    options = AssessmentOptions.from_mapping(
        {
            "quasi_identifiers": "age, zip",
            "record_threshold": "0.25",
            "population_size": "1_000",
            "sampling_fraction": "none",
            "region": "",
            "max_highest_risk": "0.5",
            "min_k": "5.0",
            "weight": " w ",
            "sensitive": ["dx"],
            "max_global_risk": "0.1",
            "min_l": "2",
            "rank_attributes": "False",
            "suda": "true",
            "suda_max_msu_size": None,
        }
    )
    assert options == AssessmentOptions(
        QIS,
        thresholds=Thresholds(max_highest_risk=0.5, min_k=5, max_global_risk=0.1, min_l=2),
        record_threshold=0.25,
        population_size=1000,
        weight="w",
        sensitive=("dx",),
        rank_attributes=False,
        suda=True,
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_global_risk": "0.1"}, "max_global_risk gates the individual risk: give weight"),
        ({"min_l": "2"}, "min_l gates l-diversity: give sensitive columns"),
        ({"min_l": "1.5"}, "min_l must be a whole number"),
        ({"max_global_risk": "2", "weight": "w"}, "max_global_risk must be in"),
        ({"max_average_risk": "abc"}, "max_average_risk must be a number, got 'abc'"),
        ({"suda": "maybe"}, "suda must be true or false"),
        ({"conn_id": "x"}, "unknown assessment option 'conn_id'"),
    ],
)
def test_from_mapping_names_the_parameter(values: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        AssessmentOptions.from_mapping({"quasi_identifiers": "q", **values})


def test_an_adapter_spells_the_fields_its_own_way() -> None:
    flags = {"max_global_risk": "--max-global-risk", "weight": "--weight COL"}
    with pytest.raises(OptionError) as info:
        AssessmentOptions.from_mapping(
            {"quasi_identifiers": "q", "max_global_risk": 0.1}, names=flags
        )
    assert str(info.value) == "--max-global-risk gates the individual risk: give --weight COL"


def _histogram() -> ClassSizes:
    return ClassSizes(QIS, np.array([1, 2], dtype=np.int64), np.array([2, 3], dtype=np.int64))


def test_assess_takes_the_options_or_keywords_alike() -> None:
    table = _histogram()
    options = AssessmentOptions(
        QIS, thresholds=Thresholds(min_k=2), rank_attributes=False, region="usa"
    )
    by_options = assess(table, options).to_dict()
    by_keywords = assess(
        table, thresholds=Thresholds(min_k=2), attributes=False, region="usa"
    ).to_dict()
    assert by_options == by_keywords
    assert by_options["breaches"] == [{"metric": "k", "observed": 1.0, "limit": 2.0}]
    with pytest.raises(TypeError, match="options or keywords"):
        assess(table, options, attributes=False)


def test_assess_refuses_inputs_the_options_do_not_name() -> None:
    with pytest.raises(InvalidInputError, match="weight column 'w' but no weight sums"):
        assess(_histogram(), AssessmentOptions(QIS, weight="w", rank_attributes=False))
    with pytest.raises(InvalidInputError, match=r"sensitive columns \['s'\] but no value"):
        assess(_histogram(), AssessmentOptions(QIS, sensitive=("s",), rank_attributes=False))

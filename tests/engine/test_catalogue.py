"""The one catalogue of thresholds and risk measures, and the gate that reads it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from reident_airflow.engine.assessment import assess
from reident_airflow.engine.catalogue import MEASURES, THRESHOLDS, threshold_of
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.options import AssessmentOptions, Breach, Thresholds


def test_the_thresholds_are_the_fields_of_the_gate_in_their_order() -> None:
    assert list(THRESHOLDS) == [f.name for f in dataclasses.fields(Thresholds)]
    for name, threshold in THRESHOLDS.items():
        assert threshold.name == name
        assert threshold.minimum == name.startswith("min_")
        assert threshold.share != threshold.whole
        assert ".".join(threshold.path) == threshold.metric


def test_a_threshold_points_one_way() -> None:
    k, risk = THRESHOLDS["min_k"], THRESHOLDS["max_highest_risk"]
    assert k.crossed(2, 5) and not k.crossed(5, 5) and not k.crossed(6, 5)
    assert risk.crossed(0.5, 0.2) and not risk.crossed(0.2, 0.2) and not risk.crossed(0.1, 0.2)


def test_every_metric_a_breach_carries_has_its_threshold() -> None:
    assert threshold_of("l_diversity.salary.distinct") is THRESHOLDS["min_l"]
    assert threshold_of("individual_risk.global_risk_share") is THRESHOLDS["max_global_risk"]
    assert threshold_of("l_diversity.salary.entropy") is None
    assert threshold_of("journalist.highest_risk") is None
    assert (
        Breach("k", 1.0, 5.0).is_minimum and not Breach("prosecutor.average_risk", 1, 0).is_minimum
    )


def test_a_measure_knows_the_threshold_that_gates_it() -> None:
    assert MEASURES["prosecutor.records_at_risk"].gate == "max_records_at_risk"
    assert MEASURES["marketer.risk"].gate is None
    assert MEASURES["uniqueness.population.snb.fraction"].path == (
        "uniqueness",
        "population",
        "snb",
        "fraction",
    )
    assert [m.name for m in MEASURES.values() if m.needs_population] == [
        f"uniqueness.population.{model}.fraction" for model in ("dankar", "pitman", "zayatz", "snb")
    ]


def test_the_measures_are_where_the_catalogue_says() -> None:
    sizes = ClassSizes(("a",), np.array([1, 2, 5]), np.array([2, 1, 1]))
    document = assess(sizes, AssessmentOptions(("a",), rank_attributes=False)).to_dict()
    for measure in MEASURES.values():
        if measure.needs_population:
            continue
        value = document
        for key in measure.path:
            value = value[key]
        assert isinstance(value, float), measure.name
    for threshold in THRESHOLDS.values():
        # need sensitive / weight columns, or a previous release (tests/engine/test_release_gate.py)
        if threshold.name in {"min_l", "max_global_risk"} or threshold.compared:
            continue
        value = document
        for key in threshold.path:
            value = value[key]
        assert isinstance(value, int | float), threshold.name


def test_the_gate_converts_each_limit_as_the_catalogue_says() -> None:
    options = AssessmentOptions.from_mapping(
        {"quasi_identifiers": "a", "min_k": "2.0", "max_highest_risk": "0.5"}
    )
    assert options.thresholds.min_k == 2 and isinstance(options.thresholds.min_k, int)
    with pytest.raises(InvalidInputError, match="min_k"):
        AssessmentOptions.from_mapping({"quasi_identifiers": "a", "min_k": "1.5"})


def test_breaches_come_in_the_order_of_the_catalogue() -> None:
    sizes = ClassSizes(("a",), np.array([1, 2, 5]), np.array([2, 1, 1]))
    gate = Thresholds(max_highest_risk=0.2, max_records_at_risk=0.1, min_k=2)
    result = assess(sizes, AssessmentOptions(("a",), thresholds=gate, rank_attributes=False))
    assert [b.metric for b in result.breaches] == [
        "prosecutor.highest_risk",
        "prosecutor.records_at_risk",
        "k",
    ]
    assert result.breaches[-1] == Breach("k", 1.0, 2.0)
    assert [type(b.observed) for b in result.breaches] == [float, float, float]


def test_only_the_limits_the_catalogue_allows_at_zero_may_be_zero() -> None:
    """A share of records at risk may be 0 (no record at risk); no table has a highest or
    average risk of 0, so those limits are in (0, 1]."""
    zero = [t.name for t in THRESHOLDS.values() if t.zero_allowed]
    assert zero == ["max_records_at_risk"]
    assert Thresholds(max_records_at_risk=0).max_records_at_risk == 0.0
    with pytest.raises(InvalidInputError, match=r"max_records_at_risk must be in \[0, 1\]"):
        Thresholds(max_records_at_risk=1.5)
    with pytest.raises(InvalidInputError, match="max_records_at_risk must be a share"):
        Thresholds(max_records_at_risk="many")  # type: ignore[arg-type]
    for name in ("max_highest_risk", "max_average_risk", "max_global_risk"):
        with pytest.raises(InvalidInputError, match=name):
            Thresholds(**{name: 0})

"""The typed view of the results: read once, typed or None, frozen, one threshold catalogue."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from reident_airflow.engine.assessment import Breach, Thresholds
from reident_airflow.engine.catalogue import THRESHOLDS, threshold_of
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.report._read import real_or_none
from reident_airflow.report.view import (
    MAX_NAME,
    AssessmentView,
    BreachView,
    DataflyView,
    DirectMatchView,
    RiskMeasures,
    VerdictView,
    name_or_none,
    whole_or_none,
)
from reident_airflow.summary import assessment_summary


def test_an_engine_assessment_reads_whole(breaching_assessment: dict[str, Any]) -> None:
    a = breaching_assessment
    view = AssessmentView.from_dict(a)
    assert view.complete and view.passed is False
    assert view.quasi_identifiers == ("sex", "age", "race")
    assert view.records == a["records"] and view.k == a["k"] == 1
    assert view.prosecutor is not None
    assert view.prosecutor.highest_risk == a["prosecutor"]["highest_risk"]
    assert view.population is not None and view.population.dankar is not None
    assert view.population.dankar.model_name == "Pitman"
    assert [b.upper for b in view.risk_bands] == [b["upper"] for b in a["risk_distribution"]]
    assert view.risk_bands[0].lower == 0.0
    assert view.risk_bands[1].lower == view.risk_bands[0].upper
    assert view.class_size_histogram == tuple(sorted(map(tuple, a["class_size_histogram"])))
    assert view.attributes is not None and len(view.attributes) == view.ranked_attribute_sets
    assert {b.metric for b in view.breaches} == {b["metric"] for b in a["breaches"]}
    assert view.observed("k") == 1
    assert view.observed("prosecutor.records_at_risk") == a["prosecutor"]["records_at_risk"]
    assert view.observed("individual_risk.global_risk_share") is None  # no weights
    assert view.limit("min_k") == 5 and view.limit("min_l") is None


def test_missing_or_mistyped_values_are_none_never_a_placeholder(
    breaching_assessment: dict[str, Any],
) -> None:
    a = copy.deepcopy(breaching_assessment)
    a.update(records=True, k="1", prosecutor=["x"], marketer=3, uniqueness="?", breaches="x")
    a["attributes"] = [{"columns": "ab"}, 3, {"columns": ["a"], "distinction": "x"}]
    a["class_size_histogram"] = [[1, 2], [3], "x", [2, 5]]
    view = AssessmentView.from_dict(a)
    assert view.records is None and view.k is None and not view.complete
    assert view.prosecutor is None and view.marketer is None
    assert view.sample_uniques is None and view.population is None
    assert view.breaches == ()
    assert view.attributes is not None and len(view.attributes) == 1
    assert view.attributes[0].columns == ("a",) and view.attributes[0].distinction is None
    assert view.class_size_histogram == ((1, 2), (2, 5))
    empty = AssessmentView.from_dict({})
    assert empty.thresholds is None and empty.attributes is None and empty.passed is None
    with pytest.raises(InvalidInputError, match="got list"):
        AssessmentView.from_dict([])  # type: ignore[arg-type]


def test_views_check_themselves_and_are_frozen() -> None:
    with pytest.raises(InvalidInputError, match="highest_risk must be Number"):
        RiskMeasures("high", None, None, None, None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="may not be None"):
        BreachView(None, 1.0, 2.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="metric must be str"):
        BreachView.read({"observed": True, "limit": 1}, metric=1)  # wrong type for metric
    measures = RiskMeasures.missing()
    with pytest.raises(dataclasses.FrozenInstanceError):
        measures.highest_risk = 0.5  # type: ignore[misc]


def test_the_threshold_catalogue_matches_the_engine() -> None:
    gate_fields = [f.name for f in dataclasses.fields(Thresholds)]
    assert list(THRESHOLDS) == gate_fields
    for metric in ("k", "l_diversity.salary.distinct", "prosecutor.highest_risk"):
        spec = threshold_of(metric)
        assert spec is not None
        assert spec.minimum == Breach(metric, 0.0, 0.0).is_minimum
        assert BreachView(metric, 0.0, 0.0).is_minimum == spec.minimum
    assert threshold_of("something.else") is None
    assert THRESHOLDS["max_global_risk"].share and not THRESHOLDS["min_k"].share


def test_direct_match_and_datafly_views(
    direct_match_result: dict[str, Any], datafly_result: dict[str, Any]
) -> None:
    dm = DirectMatchView.from_dict(direct_match_result)
    assert dm.below_target == ("record_no", "postcode") and dm.passed is False
    assert dm.columns is not None and len(dm.columns) == len(direct_match_result["columns"])
    assert DirectMatchView.from_dict({"columns": []}).columns is None
    df = DataflyView.from_dict(datafly_result)
    assert df.reached is True and df.levels is not None and df.steps is not None
    engine_dict = {k: v for k, v in datafly_result.items() if k != "passed"}
    assert DataflyView.from_dict(engine_dict).reached is (df.achieved_k >= df.k)  # type: ignore[operator]
    assert DataflyView.from_dict({}).reached is None


def test_the_summary_reads_a_view_or_a_dict(breaching_assessment: dict[str, Any]) -> None:
    view = AssessmentView.from_dict(breaching_assessment)
    text = assessment_summary(view)
    assert text == assessment_summary(breaching_assessment)
    assert "BREACH k: 1 < minimum 5" in text
    assert "BREACH prosecutor.highest_risk: 1 > limit 0.5" in text
    assert "records           : n/a" in assessment_summary({})


# --------------------------------------------------------------- the verdict an alert reads
def test_the_verdict_of_an_engine_assessment_with_its_advice(
    breaching_assessment: dict[str, Any], adult_advice: dict[str, Any]
) -> None:
    a = dict(breaching_assessment, advice=adult_advice, outcome="skip", report_url="https://r/x")
    verdict = VerdictView.from_dict(a)
    assert verdict.breached and verdict.schema == "reident.assessment/v1"
    assert verdict.quasi_identifiers == ("sex", "age", "race")
    assert (verdict.records, verdict.classes, verdict.k) == (a["records"], a["classes"], 1)
    assert [(b.metric, b.observed, b.limit) for b in verdict.breaches] == [
        (b["metric"], b["observed"], b["limit"]) for b in a["breaches"]
    ]
    assert (verdict.outcome, verdict.report_url, verdict.report_location) == (
        "skip",
        "https://r/x",
        None,
    )
    assert verdict.advice is not None and verdict.advice.to_dict() == adult_advice
    assert not VerdictView.from_dict(breaching_assessment).advice
    assert not VerdictView.from_dict(dict(a, passed=True)).breached
    assert not VerdictView.from_dict("not a result").breached  # type: ignore[arg-type]


def test_the_verdict_reads_names_as_strings_and_numbers_of_any_type() -> None:
    result = {
        "schema": 3,
        "passed": False,
        "records": np.int64(40),  # a result still in memory: numpy's count is a count
        "classes": 10.0,  # not a whole type: no count
        "k": True,
        "quasi_identifiers": ["age", 7, "", "x" * 300],
        "breaches": [{"metric": 42, "observed": np.float64(0.5), "limit": math.nan}, "nope"],
        "below_target": "zip",  # a string is no list of names
        "outcome": ["fail"],
    }
    verdict = VerdictView.from_dict(result)
    assert verdict.schema is None and verdict.outcome is None
    assert verdict.records == 40 and type(verdict.records) is int
    assert verdict.classes is None and verdict.k is None
    assert verdict.quasi_identifiers == ("age", "x" * MAX_NAME)
    assert verdict.breaches == (BreachView("unknown", 0.5, None),)
    assert type(verdict.breaches[0].observed) is float
    assert verdict.below_target == () and verdict.breached


def test_the_verdict_reads_the_first_hundred_items_only() -> None:
    result = {
        "breaches": [{"metric": f"m{i}", "observed": i, "limit": 0} for i in range(150)],
        # the bound is on the items read, not on the names found among them
        "quasi_identifiers": [7] * 100 + ["late"],
        "report_location": "/" + "y" * 3000,
    }
    verdict = VerdictView.from_dict(result)
    assert len(verdict.breaches) == 100 and verdict.breaches[-1].metric == "m99"
    assert verdict.quasi_identifiers == ()
    assert verdict.report_location is not None and len(verdict.report_location) == 2000


def test_the_verdict_reads_an_advice_only_when_every_count_is_given() -> None:
    # the engine's hand-checked small case (tests/engine/test_advice.py): classes of sizes
    # 1, 1, 2, 5 and k = 3 -> 3 of 4 classes, holding 4 of 9 records, are below k
    advice = {"k": 3, "records": 9, "classes": 4, "classes_below_k": 3, "records_below_k": 4}
    found = VerdictView.from_dict({"advice": advice}).advice
    assert found is not None and (found.driver, found.datafly) == (None, None)
    assert "3 of 4 classes, holding 4 of 9 records, are smaller than k=3" in found.describe()
    for key in advice:
        assert VerdictView.from_dict({"advice": dict(advice, **{key: None})}).advice is None
    assert VerdictView.from_dict({"advice": dict(advice, k=3.0)}).advice is None
    odd = dict(
        advice,
        driver={"column": "age", "distinction": "high", "distinction_without": 0.1},
        datafly={"k": 3, "feasible": "yes", "levels": {"age": 2, "sex": "x", "": 1}},
    )
    found = VerdictView.from_dict({"advice": odd}).advice
    assert found is not None and found.driver is None and found.datafly is not None
    assert found.datafly.levels == {"age": 2} and found.datafly.feasible is False


def test_the_strict_readers() -> None:
    assert real_or_none(np.int64(3)) == 3 and type(real_or_none(np.int64(3))) is int
    assert real_or_none(math.inf) is None and real_or_none(True) is None
    assert whole_or_none(5.0) is None and whole_or_none(np.int32(5)) == 5
    assert name_or_none("", 5) is None and name_or_none(7, 5) is None
    assert name_or_none("abcdef", 3) == "abc"

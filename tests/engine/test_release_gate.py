"""The gate on the difference from the previous release (docs/metrics.md §12, issue 28).

The releases are written out below; the arrivals and departures are counted in plain Python
(``collections.Counter`` multiset differences, then a count per QI class, as in
tests/engine/test_differencing.py) and every expected number is worked out by hand in the
comment beside it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from reident_airflow.engine.assessment import assess, with_release_difference
from reident_airflow.engine.catalogue import COMPARED_THRESHOLDS, THRESHOLDS, threshold_of
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.differencing import (
    ReleaseChanges,
    ReleaseDifference,
    differencing,
    hold_back_advice,
)
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.options import AssessmentOptions, Breach, OptionError, Thresholds

Row = tuple[str, ...]
QIS = ("sex", "zip")


def _side(rows: Counter[Row]) -> ClassSizes | None:
    per_class = Counter(row[:2] for row in rows.elements())
    if not per_class:
        return None
    histogram = Counter(per_class.values())
    sizes = sorted(histogram)
    return ClassSizes(QIS, sizes, [histogram[s] for s in sizes])


def _difference(previous: Sequence[Row], candidate: Sequence[Row]) -> ReleaseDifference:
    p, n = Counter(previous), Counter(candidate)
    changes = ReleaseChanges(QIS, len(previous), len(candidate), _side(n - p), _side(p - n))
    return differencing(changes)


def _table(candidate: Sequence[Row]) -> ClassSizes:
    per_class = Counter(row[:2] for row in candidate)
    histogram = Counter(per_class.values())
    sizes = sorted(histogram)
    return ClassSizes(QIS, sizes, [histogram[s] for s in sizes])


# the 40-record example of docs/guides/scheduled-release.md: one class of 40 in the previous
# release, one patient admitted since: 41 in the candidate
FORTY: list[Row] = [("F", "100", f"d{i % 7}") for i in range(40)]
FORTY_ONE: list[Row] = [*FORTY, ("F", "100", "d3")]

# departures only: of the 6 (M, 200) records, two left; of the 5 (F, 100), none
STAYED: list[Row] = [("F", "100", f"x{i}") for i in range(5)] + [
    ("M", "200", f"y{i}") for i in range(6)
]
LEFT: list[Row] = STAYED[:9]


def _gated(candidate: Sequence[Row], previous: Sequence[Row] | None, **limits: object):
    values = {"quasi_identifiers": list(QIS), "rank_attributes": False, **limits}
    values.setdefault("previous_release", "last.csv")
    options = AssessmentOptions.from_mapping(values)
    base = assess(_table(candidate), options)
    difference = None if previous is None else _difference(previous, candidate)
    return base, with_release_difference(base, difference)


def test_forty_record_class_passes_alone_and_breaches_arrival_k() -> None:
    base, result = _gated(FORTY_ONE, FORTY, min_k=5, min_arrival_k=2)
    assert base.passed and base.k == 41  # the table alone: one class of 41 >= 5
    # one arrival alone in its class: a(c) = 1 < 2
    assert result.breaches == (Breach("since_last_release.arrivals.k", 1.0, 2.0),)
    assert not result.passed
    assert result.breaches[0].describe() == (
        "since_last_release.arrivals.k = 1 (limit: at least 2)"
    )
    doc = result.to_dict()
    assert doc["since_last_release"]["arrivals"]["k"] == 1
    assert doc["thresholds"] == {"min_k": 5, "min_arrival_k": 2}
    assert doc["passed"] is False


def test_arrival_risk_is_one_over_the_arrivals_of_the_class() -> None:
    _, result = _gated(FORTY_ONE, FORTY, max_arrival_risk=0.5)
    # highest risk 1 / a(c) = 1 / 1 > 0.5
    assert result.breaches == (Breach("since_last_release.arrivals.highest_risk", 1.0, 0.5),)


def test_departure_limits_and_their_warning_levels() -> None:
    _, result = _gated(
        LEFT, STAYED, min_departure_k=2, warn_min_departure_k=3, max_departure_risk=0.4
    )
    # two departures, both of (M, 200): d(c) = 2 passes 2, warns at 3; risk 1/2 > 0.4
    assert result.breaches == (Breach("since_last_release.departures.highest_risk", 0.5, 0.4),)
    assert result.warnings == (Breach("since_last_release.departures.k", 2.0, 3.0),)


def test_a_side_where_nothing_moved_breaches_nothing() -> None:
    # nothing arrived: no arriving record to find, whatever the limit
    _, result = _gated(LEFT, STAYED, min_arrival_k=5, max_arrival_risk=0.01)
    assert result.passed and result.warnings == ()
    assert result.to_dict()["since_last_release"]["arrivals"]["records"] == 0


def test_a_warning_is_not_repeated_for_a_metric_that_breached() -> None:
    _, result = _gated(FORTY_ONE, FORTY, min_arrival_k=2, warn_min_arrival_k=3)
    assert [b.metric for b in result.breaches] == ["since_last_release.arrivals.k"]
    assert result.warnings == ()


def test_first_run_has_nothing_to_compare() -> None:
    base, result = _gated(FORTY_ONE, None, min_k=5, min_arrival_k=2)
    assert result.passed and result.breaches == base.breaches
    doc = result.to_dict()
    assert doc["since_last_release"] is None
    assert list(doc)[-1] == "since_last_release"
    assert {k: v for k, v in doc.items() if k != "since_last_release"} == base.to_dict()


def test_without_a_comparison_the_document_has_no_key() -> None:
    plain = AssessmentOptions(QIS, rank_attributes=False)
    with_previous = AssessmentOptions(QIS, rank_attributes=False, previous_release="old.csv")
    doc = assess(_table(FORTY_ONE), with_previous).to_dict()
    assert "since_last_release" not in doc
    assert doc == assess(_table(FORTY_ONE), plain).to_dict()


@pytest.mark.parametrize("name", COMPARED_THRESHOLDS)
@pytest.mark.parametrize("prefix", ["", "warn_"])
def test_a_limit_on_the_difference_needs_a_previous_release(name: str, prefix: str) -> None:
    value = 2 if THRESHOLDS[name].whole else 0.5
    with pytest.raises(OptionError) as caught:
        AssessmentOptions.from_mapping({"quasi_identifiers": "sex", prefix + name: value})
    assert str(caught.value) == (
        f"{prefix}{name} gates the difference from the previous release: give previous_release"
    )


def test_the_limits_are_checked_like_the_others() -> None:
    with pytest.raises(InvalidInputError, match="min_arrival_k must be >= 1"):
        Thresholds(min_arrival_k=0)
    with pytest.raises(InvalidInputError, match="max_departure_risk"):
        Thresholds(max_departure_risk=1.5)
    with pytest.raises(OptionError, match="laxer"):
        AssessmentOptions(
            QIS,
            thresholds=Thresholds(min_arrival_k=3),
            warn_thresholds=Thresholds(min_arrival_k=2),
            previous_release="old.csv",
        )
    assert Thresholds(min_arrival_k=2.0).min_arrival_k == 2  # type: ignore[arg-type]


def test_the_catalogue_reads_the_difference() -> None:
    assert COMPARED_THRESHOLDS == (
        "min_arrival_k",
        "max_arrival_risk",
        "min_departure_k",
        "max_departure_risk",
    )
    assert threshold_of("since_last_release.arrivals.k") is THRESHOLDS["min_arrival_k"]
    assert Breach("since_last_release.departures.k", 1, 2).is_minimum
    assert not Breach("since_last_release.arrivals.highest_risk", 1, 0.5).is_minimum
    _, result = _gated(CANDIDATE, PREVIOUS)
    for name in COMPARED_THRESHOLDS:
        value = result.to_dict()
        for key in THRESHOLDS[name].path:
            value = value[key]
        assert isinstance(value, int | float), name


# arrivals: (F,100,asthma) alone, (M,200,flu) alone, two in (M,300): histogram 1x2, 2x1
PREVIOUS: list[Row] = [("F", "100", "flu"), ("F", "100", "cold"), ("M", "200", "flu")]
CANDIDATE: list[Row] = [
    ("F", "100", "flu"),
    ("F", "100", "asthma"),
    ("M", "200", "flu"),
    ("M", "200", "flu"),
    ("M", "300", "flu"),
    ("M", "300", "cold"),
]


def test_the_advice_holds_back_the_arrivals_of_small_classes() -> None:
    difference = _difference(PREVIOUS, CANDIDATE)
    assert difference.arrivals.histogram == ((1, 2), (2, 1))
    # k 2: the two classes with one arrival each, 2 records
    assert hold_back_advice(difference, 2, None) == (
        "hold back 2 of the 4 arrivals (2 of 3 classes) until their class has 2 arrivals, "
        "or release arrivals in batches"
    )
    # risk 0.4: ceil(1 / 0.4) = 3 arrivals needed, so every class: 4 records
    assert hold_back_advice(difference, None, 0.4) == (
        "hold back 4 of the 4 arrivals (3 of 3 classes) until their class has 3 arrivals, "
        "or release arrivals in batches"
    )
    # risk 0.5 asks for 2 arrivals (1 / 0.5 exactly), as k 2 does
    assert hold_back_advice(difference, None, 0.5) == hold_back_advice(difference, 2, None)
    assert hold_back_advice(difference, 1, 1.0) is None
    assert hold_back_advice(difference, None, None) is None

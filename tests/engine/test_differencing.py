"""The differencing risk between two releases (docs/metrics.md §12), on hand-made releases.

Each case is a pair of small releases written out below; the arrivals and departures are
counted by :func:`_changes`, a plain-Python reference (``collections.Counter`` multiset
differences, then a count per QI class), and every expected number is worked out by hand in
the comment beside it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.differencing import (
    DIFFERENCING_SCHEMA,
    ReleaseChanges,
    differencing,
)
from reident_airflow.engine.errors import InvalidInputError

Row = tuple[str, ...]
COLUMNS = ("sex", "zip", "diagnosis")
QIS = ("sex", "zip")


def _side(rows: Counter[Row], qis: Sequence[str]) -> ClassSizes | None:
    at = [COLUMNS.index(q) for q in qis]
    per_class = Counter(tuple(row[i] for i in at) for row in rows.elements())
    if not per_class:
        return None
    histogram = Counter(per_class.values())
    sizes = sorted(histogram)
    return ClassSizes(tuple(qis), sizes, [histogram[s] for s in sizes])


def _changes(previous: list[Row], candidate: list[Row], qis: Sequence[str] = QIS) -> ReleaseChanges:
    p, n = Counter(previous), Counter(candidate)
    return ReleaseChanges(
        quasi_identifiers=tuple(qis),
        previous_records=len(previous),
        records=len(candidate),
        arrivals=_side(n - p, qis),
        departures=_side(p - n, qis),
    )


PREVIOUS: list[Row] = [
    ("F", "100", "flu"),
    ("F", "100", "flu"),
    ("F", "100", "cold"),
    ("M", "200", "flu"),
    ("M", "200", "flu"),
]
# r3 updated (cold -> asthma), (M, 200, flu) held once more, two records new in (M, 300)
CANDIDATE: list[Row] = [
    ("F", "100", "flu"),
    ("F", "100", "flu"),
    ("F", "100", "asthma"),
    ("M", "200", "flu"),
    ("M", "200", "flu"),
    ("M", "200", "flu"),
    ("M", "300", "flu"),
    ("M", "300", "cold"),
]


def test_updates_duplicates_and_new_classes() -> None:
    result = differencing(_changes(PREVIOUS, CANDIDATE))
    # arrivals: (F,100,asthma), one more (M,200,flu), (M,300,flu), (M,300,cold): 4 records;
    # a(F,100) = 1, a(M,200) = 1, a(M,300) = 2: histogram {1: 2, 2: 1}
    a = result.arrivals
    assert (a.records, a.classes, a.k) == (4, 3, 1)
    assert a.histogram == ((1, 2), (2, 1))
    assert a.highest_risk == 1.0
    assert a.average_risk == 1.0 / (4 / 3)  # 3 classes over 4 records, as §2 rounds it
    assert a.records_at_risk == 1.0  # every a(c) <= 4: risk > 0.2 for all
    # departures: the old (F,100,cold) alone
    d = result.departures
    assert (d.records, d.classes, d.k, d.highest_risk, d.average_risk) == (1, 1, 1, 1.0, 1.0)
    assert not result.unchanged


def test_record_threshold_counts_strictly_above() -> None:
    result = differencing(_changes(PREVIOUS, CANDIDATE), record_threshold=0.5)
    # risk 1/1 > 0.5 for the two arrivals alone in their class; 1/2 is not > 0.5
    assert result.arrivals.records_at_risk == 2 / 4
    assert result.arrivals.record_threshold == 0.5


def test_forty_record_class_and_one_arrival() -> None:
    # docs/guides/scheduled-releases.md: a class of 40 passes min_k=5 in both releases, one
    # new patient arrives in it; the arrival is the only new row of its class
    previous = [("F", "100", f"d{i % 7}") for i in range(40)]
    candidate = [*previous, ("F", "100", "d3")]
    result = differencing(_changes(previous, candidate))
    assert (result.arrivals.records, result.arrivals.k, result.arrivals.highest_risk) == (1, 1, 1.0)
    assert result.departures.records == 0 and result.departures.k is None


def test_departures_only() -> None:
    candidate = PREVIOUS[:3]  # both (M, 200, flu) left
    result = differencing(_changes(PREVIOUS, candidate))
    assert result.arrivals.records == 0
    assert result.arrivals.highest_risk is None and result.arrivals.histogram == ()
    d = result.departures
    assert (d.records, d.classes, d.k, d.highest_risk, d.average_risk) == (2, 1, 2, 0.5, 0.5)
    assert d.records_at_risk == 1.0  # 1/2 > 0.2


def test_generalized_releases_group_on_the_released_values() -> None:
    # the releases as published, zip generalized to its first digit: the two (M, 3**)
    # arrivals and the (M, 2**) one stay apart, and the update sits in (F, 1**)
    coarse = [tuple([s, z[0] + "**", d]) for s, z, d in CANDIDATE]
    coarse_previous = [tuple([s, z[0] + "**", d]) for s, z, d in PREVIOUS]
    result = differencing(_changes(coarse_previous, coarse))
    assert result.arrivals.histogram == ((1, 2), (2, 1))
    # on sex alone, the arrivals fall into two classes: F (1) and M (3)
    on_sex = differencing(_changes(coarse_previous, coarse, qis=("sex",)))
    assert on_sex.arrivals.histogram == ((1, 1), (3, 1))
    assert on_sex.arrivals.k == 1


def test_an_empty_difference() -> None:
    result = differencing(_changes(PREVIOUS, list(reversed(PREVIOUS))))  # order is not content
    assert result.unchanged
    assert result.arrivals.records == 0 and result.departures.records == 0
    doc = result.to_dict()
    assert doc["schema"] == DIFFERENCING_SCHEMA
    assert doc["arrivals"] == {
        "records": 0,
        "classes": 0,
        "k": None,
        "highest_risk": None,
        "average_risk": None,
        "records_at_risk": None,
        "record_threshold": 0.2,
        "histogram": [],
    }
    assert (doc["previous_records"], doc["records"]) == (5, 5)


def test_json_holds_counts_only() -> None:
    doc = differencing(_changes(PREVIOUS, CANDIDATE)).to_dict()
    assert doc["arrivals"]["histogram"] == [[1, 2], [2, 1]]
    assert doc["quasi_identifiers"] == ["sex", "zip"]
    text = repr(doc)
    for value in ("flu", "cold", "asthma", "100", "200", "300"):
        assert value not in text


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"quasi_identifiers": ()}, "at least one quasi-identifier"),
        ({"records": -1}, "records must be a whole number"),
        ({"previous_records": 1.5}, "previous_records must be a whole number"),
        ({"records": 1}, "3 arrivals cannot come from a release of 1 records"),
        ({"arrivals": ClassSizes(("zip",), [3], [1])}, "grouped on ['zip']"),
    ],
)
def test_inconsistent_counts_are_refused(kwargs: dict[str, object], says: str) -> None:
    base: dict[str, object] = {
        "quasi_identifiers": QIS,
        "previous_records": 5,
        "records": 8,
        "arrivals": ClassSizes(QIS, [3], [1]),
    }
    with pytest.raises(InvalidInputError) as info:
        ReleaseChanges(**{**base, **kwargs})  # type: ignore[arg-type]
    assert says in str(info.value)


def test_record_threshold_is_checked() -> None:
    with pytest.raises(InvalidInputError):
        differencing(_changes(PREVIOUS, CANDIDATE), record_threshold=0.0)

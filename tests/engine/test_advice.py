"""Breach advice (metrics.md §10): counts below k, the driving QI, Datafly's outlook.

The expected values are counted here with the standard library's ``csv`` and
``collections.Counter`` straight from the Adult file, independently of the engine's grouping.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reident_airflow.engine.advice import (
    BreachAdvice,
    DataflyOutlook,
    breach_advice,
    datafly_outlook,
)
from reident_airflow.engine.attributes import attribute_risks
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.datafly import datafly
from reident_airflow.engine.errors import AnonymizationInfeasibleError, InvalidInputError
from reident_airflow.engine.hierarchies import Hierarchy, load_hierarchy
from reident_airflow.sources.frames import class_table_from_frame
from tests.conftest import oracle_data

QIS = ("sex", "age", "race")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter=";"))


@pytest.fixture(scope="module")
def adult_rows() -> list[dict[str, str]]:
    return _rows(oracle_data("adult.csv"))


@pytest.fixture(scope="module")
def adult_table():  # type: ignore[no-untyped-def]
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    return class_table_from_frame(frame, list(QIS))


def test_small_histogram_by_hand() -> None:
    # classes of sizes 1, 1, 2, 5: below k=3 are the three classes of 1, 1 and 2 → 4 records
    sizes = ClassSizes(("a",), np.array([1, 2, 5]), np.array([2, 1, 1]))
    advice = breach_advice(sizes, 3)
    assert (advice.classes, advice.records) == (4, 9)
    assert (advice.classes_below_k, advice.records_below_k) == (3, 4)
    assert advice.driver is None and advice.datafly is None
    assert "3 of 4 classes, holding 4 of 9 records, are smaller than k=3" in advice.describe()


def test_adult_counts_below_5_match_a_hand_count(adult_rows, adult_table) -> None:  # type: ignore[no-untyped-def]
    combos = Counter(tuple(r[q] for q in QIS) for r in adult_rows)
    small = [n for n in combos.values() if n < 5]
    advice = breach_advice(adult_table, 5)
    assert advice.records == len(adult_rows) == 30162
    assert advice.classes == len(combos) == 528
    assert advice.classes_below_k == len(small) == 191
    assert advice.records_below_k == sum(small) == 425


def test_driver_is_the_qi_whose_omission_lowers_distinction_most(adult_rows, adult_table) -> None:  # type: ignore[no-untyped-def]
    n = len(adult_rows)
    without = {
        q: len(Counter(tuple(r[o] for o in QIS if o != q) for r in adult_rows)) / n for q in QIS
    }
    expected = min(QIS, key=lambda q: (without[q], QIS.index(q)))
    advice = breach_advice(adult_table, 5, ranking=attribute_risks(adult_table))
    assert advice.driver is not None
    assert advice.driver.column == expected == "age"
    assert advice.driver.distinction == pytest.approx(528 / n)
    assert advice.driver.distinction_without == pytest.approx(without[expected])
    assert "'age' drives the risk" in advice.describe()


def test_no_driver_without_the_subsets_of_m_minus_one(adult_table) -> None:  # type: ignore[no-untyped-def]
    # subsets of one column plus the full set: the two-column subsets are missing
    ranking = attribute_risks(adult_table, max_size=1)
    assert breach_advice(adult_table, 5, ranking=ranking).driver is None


def test_datafly_outlook_on_adult(adult_table) -> None:  # type: ignore[no-untyped-def]
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    hierarchies = {
        q: load_hierarchy(oracle_data(f"adult_hierarchy_{q}.csv"), column=q) for q in QIS
    }
    result = datafly(frame, list(QIS), hierarchies, 5)
    outlook = datafly_outlook(5, result)
    assert outlook.feasible and outlook.levels == result.levels
    assert outlook.suppressed_records == result.suppressed_records <= 5
    advice = breach_advice(adult_table, 5, datafly=outlook)
    assert advice.to_dict()["datafly"]["suppressed_records"] == result.suppressed_records
    assert f"suppress {result.suppressed_records} record(s)" in advice.describe()


def test_datafly_outlook_when_infeasible() -> None:
    # a single-level hierarchy cannot generalize: "a" stays a class of 1 < k=2, and no record
    # may be suppressed (limit 0), so Datafly stops at level 0 with 1 record below k
    frame = pd.DataFrame({"g": ["a", "b", "b"]})
    with pytest.raises(AnonymizationInfeasibleError) as info:
        datafly(frame, ["g"], {"g": Hierarchy.from_rows([["a"], ["b"]])}, 2, 0)
    outlook = datafly_outlook(2, info.value)
    assert not outlook.feasible and outlook.suppressed_records is None
    assert (outlook.levels, outlook.below_k, outlook.suppression_limit) == ({"g": 0}, 1, 0)
    assert "cannot reach k=2 within its suppression limit of 0 record(s)" in outlook.describe()


def test_bad_k_is_refused(adult_table) -> None:  # type: ignore[no-untyped-def]
    for k in (0, -1, True, 2.5):
        with pytest.raises(InvalidInputError):
            breach_advice(adult_table, k)  # type: ignore[arg-type]


def test_advice_is_aggregates_only(adult_table) -> None:  # type: ignore[no-untyped-def]
    advice: BreachAdvice = breach_advice(
        adult_table,
        5,
        ranking=attribute_risks(adult_table),
        datafly=DataflyOutlook(5, True, {"age": 1}, 0, 0, 5),
    )
    text = advice.describe() + repr(advice.to_dict())
    # no Adult value (a race, a sex or an age) appears; only QI names and counts
    for value in ("White", "Black", "Male", "Female", "'39'", "'90'"):
        assert value not in text

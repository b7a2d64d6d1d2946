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
    TRADEOFF_ROWS,
    BreachAdvice,
    DataflyOutlook,
    TradeoffRow,
    breach_advice,
    datafly_outlook,
    level_label,
)
from reident_airflow.engine.attributes import attribute_risks
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.datafly import datafly
from reident_airflow.engine.errors import AnonymizationInfeasibleError, InvalidInputError
from reident_airflow.engine.hierarchies import (
    Hierarchy,
    date_hierarchy,
    load_hierarchy,
    masking_hierarchy,
)
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


# ----------------------------------------------------------------- level labels, trade-off
# The hand-worked table of tests/engine/test_datafly.py: six (age, zip) rows, all distinct.
AGE = Hierarchy.from_rows(
    [
        ["21", "20-24", "20-29", "*"],
        ["23", "20-24", "20-29", "*"],
        ["25", "25-29", "20-29", "*"],
        ["31", "30-34", "30-39", "*"],
        ["36", "35-39", "30-39", "*"],
        ["38", "35-39", "30-39", "*"],
    ],
    column="age",
)
# 13053 -> 1305* -> 130** -> 13*** -> 1**** -> *****: levels 0..5
ZIP = masking_hierarchy(["13053", "13068", "14850", "14853"], column="zip")
SMALL = pd.DataFrame(
    {
        "age": ["21", "23", "25", "31", "36", "38"],
        "zip": ["13053", "13068", "13053", "14850", "14853", "14853"],
    }
)


def test_level_labels_read_from_the_hierarchy() -> None:
    # intervals 20-24 (width 5), 20-29 (width 10); the top level is one group
    assert [level_label(AGE, lv) for lv in range(4)] == [
        "as is",
        "intervals of width 5",
        "intervals of width 10",
        "all in one group",
    ]
    # level 1 masks the last digit of each five-digit value, level 2 two; level 4 keeps the
    # first digit, which all four share (1****): one group; level 5 is *****
    assert [level_label(ZIP, lv) for lv in range(6)] == [
        "as is",
        "last digit masked",
        "last 2 digits masked",
        "last 3 digits masked",
        "all in one group",
        "all in one group",
    ]
    dates = date_hierarchy(["2020-01-05", "2021-03-04"])
    assert [level_label(dates, lv) for lv in range(4)] == [
        "as is",
        "dates to the month",
        "dates to the year",
        "all in one group",
    ]
    # three values in two named groups: no rule but the count of groups fits
    kinds = Hierarchy.from_rows([["cat", "pet", "*"], ["dog", "pet", "*"], ["cow", "farm", "*"]])
    assert level_label(kinds, 1) == "2 groups"
    # widths 5 and 10 at one level; text masked with '#' (not digits)
    mixed = Hierarchy.from_rows([["1", "0-4"], ["7", "5-14"]])
    assert level_label(mixed, 1) == "intervals of width 5 to 10"
    codes = Hierarchy.from_rows([["ab1", "a##"], ["cd2", "c##"]])
    assert level_label(codes, 1) == "last 2 characters masked"
    # a label that is not the value's prefix is no masking: two groups
    moved = Hierarchy.from_rows([["ab1", "x##"], ["cd2", "c##"]])
    assert level_label(moved, 1) == "2 groups"


def test_the_arx_adult_hierarchies_are_labelled() -> None:
    # tests/data/hierarchies: age 1;0-4;0-9;0-19;* (widths 5, 10, 20); education's level 1
    # has 5 distinct labels (counted in the file), level 2 three
    age = load_hierarchy(oracle_data("adult_hierarchy_age.csv"), column="age")
    assert [level_label(age, lv) for lv in (2, 3)] == [
        "intervals of width 10",
        "intervals of width 20",
    ]
    education = load_hierarchy(oracle_data("adult_hierarchy_education.csv"))
    assert [level_label(education, lv) for lv in (1, 2)] == ["5 groups", "3 groups"]


def test_outlook_labels_and_trade_off_by_hand() -> None:
    # test_datafly.py's hand-worked runs: 6 records below k=2 as they are; age L1 -> 4;
    # age L2 -> 2, within the default limit of k = 2 records: Datafly stops there.
    result = datafly(SMALL, ["age", "zip"], {"age": AGE, "zip": ZIP}, 2)
    outlook = datafly_outlook(2, result, hierarchies={"age": AGE, "zip": ZIP}, below_at_start=6)
    assert outlook.level_labels == {"age": "intervals of width 10", "zip": "as is"}
    as_is = {"zip": "as is"}
    assert outlook.tradeoff == (
        TradeoffRow({"age": 0, "zip": 0}, 6, {"age": "as is", **as_is}),
        TradeoffRow({"age": 1, "zip": 0}, 4, {"age": "intervals of width 5", **as_is}),
        TradeoffRow({"age": 2, "zip": 0}, 2, {"age": "intervals of width 10", **as_is}),
    )
    assert (
        "Datafly at k=2 would generalize age → intervals of width 10 (level 2), zip → as is "
        "(level 0) and suppress 2 record(s)"
    ) in outlook.describe()
    # the JSON keeps its keys and adds level_labels and tradeoff after them
    doc = outlook.to_dict()
    assert list(doc) == [
        "k",
        "feasible",
        "levels",
        "suppressed_records",
        "below_k",
        "suppression_limit",
        "level_labels",
        "tradeoff",
    ]
    assert doc["tradeoff"][1] == {
        "levels": {"age": 1, "zip": 0},
        "suppressed": 4,
        "labels": {"age": "intervals of width 5", "zip": "as is"},
    }
    # limit 0: on past age L2 -- zip L1 (1 below), zip L2 (0 below): zip's last 2 digits
    strict = datafly(SMALL, ["age", "zip"], {"age": AGE, "zip": ZIP}, 2, 0)
    outlook = datafly_outlook(2, strict, hierarchies={"age": AGE, "zip": ZIP})
    assert [(dict(r.levels), r.suppressed) for r in outlook.tradeoff or ()] == [
        ({"age": 1, "zip": 0}, 4),  # no below_at_start: the table starts after step 1
        ({"age": 2, "zip": 0}, 2),
        ({"age": 2, "zip": 1}, 1),
        ({"age": 2, "zip": 2}, 0),
    ]
    assert "zip → last 2 digits masked (level 2)" in outlook.describe()


def test_infeasible_outlook_has_its_trade_off() -> None:
    # g: a, b, b, c with a two-level hierarchy a, c -> x and b -> y
    frame = pd.DataFrame({"g": ["a", "b", "b", "c"]})
    hierarchy = Hierarchy.from_rows([["a", "x"], ["b", "y"], ["c", "x"]])
    # level 0: a 1, b 2, c 1 -> 2 below; level 1 (top): x = {a, c} 2, y 2 -> 0 below: feasible
    result = datafly(frame, ["g"], {"g": hierarchy}, 2, 0)
    assert datafly_outlook(2, result, below_at_start=2).tradeoff == (
        TradeoffRow({"g": 0}, 2),
        TradeoffRow({"g": 1}, 0),
    )
    # k = 3: level 1 still has x 2, y 2 -> 4 below; the best attempt is the last state
    with pytest.raises(AnonymizationInfeasibleError) as info:
        datafly(frame, ["g"], {"g": hierarchy}, 3, 0)
    outlook = datafly_outlook(3, info.value, hierarchies={"g": hierarchy}, below_at_start=4)
    assert not outlook.feasible and outlook.level_labels == {"g": "2 groups"}
    assert outlook.tradeoff == (
        TradeoffRow({"g": 0}, 4, {"g": "as is"}),
        TradeoffRow({"g": 1}, 4, {"g": "2 groups"}),
    )


def _below_by_hand(rows, hierarchies, levels, k):  # type: ignore[no-untyped-def]
    combos = Counter(tuple(hierarchies[q][r[q]][levels[q]] for q in levels) for r in rows)
    return sum(n for n in combos.values() if n < k)


def test_adult_trade_off_matches_a_hand_count(adult_rows) -> None:  # type: ignore[no-untyped-def]
    # The eight QIs of test_datafly.py's test_adult_all_qis_k5 (14 steps, the first age L1
    # with 14,603 records below 5): the table holds the first TRADEOFF_ROWS states, each
    # one's records below k recounted here from the ARX files with csv and Counter.
    qis = (
        "sex",
        "age",
        "race",
        "marital-status",
        "education",
        "native-country",
        "workclass",
        "occupation",
    )
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    files = {q: load_hierarchy(oracle_data(f"adult_hierarchy_{q}.csv"), column=q) for q in qis}
    by_hand = {q: {r[0]: r for r in _rows_of(oracle_data(f"adult_hierarchy_{q}.csv"))} for q in qis}
    result = datafly(frame, qis, files, 5)
    start = _below_by_hand(adult_rows, by_hand, dict.fromkeys(qis, 0), 5)
    outlook = datafly_outlook(5, result, hierarchies=files, below_at_start=start)
    rows = outlook.tradeoff or ()
    assert len(rows) == TRADEOFF_ROWS == 8 and len(result.steps) == 14
    assert (rows[1].levels, rows[1].suppressed) == ({**dict.fromkeys(qis, 0), "age": 1}, 14603)
    # age 1;0-4;0-9;... in the ARX file: its level 1 is intervals of width 5
    assert rows[1].labels is not None and rows[1].labels["age"] == "intervals of width 5"
    for row in rows:
        assert row.suppressed == _below_by_hand(adult_rows, by_hand, row.levels, 5)
    assert outlook.level_labels is not None
    assert outlook.level_labels["age"] == "all in one group"  # level 4 of 4


def _rows_of(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh, delimiter=";"))

"""Advice on a k breach from a file source, with the bundled hierarchies (metrics.md §10).

Issue 19's case: Adult on ``sex, age, race`` with ``min_k = 5``. The counts below 5 are
made here with ``csv`` and ``Counter`` from the file, independently of the engine; the
Datafly outlook is checked against a Datafly run with the test copies of ARX's hierarchies.
"""

from __future__ import annotations

import csv
from collections import Counter

import pandas as pd
import pytest

from reident_airflow.engine.assessment import assess
from reident_airflow.engine.datafly import datafly
from reident_airflow.engine.hierarchies import Hierarchy, load_hierarchy
from reident_airflow.engine.options import AssessmentOptions, Thresholds
from reident_airflow.sources.advice import hierarchies_for
from reident_airflow.sources.files import class_table_from_file, histogram_from_file
from reident_airflow.sources.frames import class_table_from_frame
from reident_airflow.sources.tables import read_file_frame
from reident_airflow.workflows.advice import AdviceInputs, advise_on_breach
from tests.conftest import oracle_data

QIS = ("sex", "age", "race")


def _hand_counts() -> tuple[int, int]:
    with oracle_data("adult.csv").open(newline="", encoding="utf-8") as fh:
        combos = Counter(tuple(r[q] for q in QIS) for r in csv.DictReader(fh, delimiter=";"))
    small = [n for n in combos.values() if n < 5]
    return len(small), sum(small)


def test_adult_min_k_5_from_the_histogram_alone() -> None:
    path = oracle_data("adult.csv")
    sizes = histogram_from_file(path, QIS, sep=";")
    options = AssessmentOptions(QIS, thresholds=Thresholds(min_k=5), rank_attributes=False)
    result = assess(sizes, options)
    assert not result.passed
    loads: list[str] = []

    def table():  # type: ignore[no-untyped-def]
        loads.append("classes")
        return class_table_from_file(path, QIS, sep=";")

    def rows() -> pd.DataFrame:
        loads.append("rows")
        return read_file_frame(path, sep=";", categorical=QIS)

    found = advise_on_breach(result, sizes, AdviceInputs(class_table=table, rows=rows))
    assert found is not None
    advice, missing = found
    assert missing == () and sorted(loads) == ["classes", "rows"]
    assert (advice.classes_below_k, advice.records_below_k) == _hand_counts() == (191, 425)
    assert advice.driver is not None and advice.driver.column == "age"

    frame = pd.read_csv(path, sep=";", dtype=str, keep_default_na=False)
    arx = {q: load_hierarchy(oracle_data(f"adult_hierarchy_{q}.csv"), column=q) for q in QIS}
    expected = datafly(frame, list(QIS), arx, 5)
    assert advice.datafly is not None and advice.datafly.feasible
    assert advice.datafly.levels == expected.levels
    assert advice.datafly.suppressed_records == expected.suppressed_records
    text = advice.describe()
    assert "191 of 528 classes, holding 425 of 30162 records, are smaller than k=5" in text
    assert f"suppress {expected.suppressed_records} record(s)" in text


def test_no_advice_when_k_holds_and_no_outlook_without_hierarchies() -> None:
    path = oracle_data("adult.csv")
    sizes = histogram_from_file(path, ("sex",), sep=";")
    passing = assess(
        sizes, AssessmentOptions(("sex",), thresholds=Thresholds(min_k=5), rank_attributes=False)
    )
    assert advise_on_breach(passing, sizes, AdviceInputs()) is None
    # a QI named like no bundled hierarchy has none
    assert hierarchies_for(["zip", "sex"])[1] == ("zip",)
    # the ranking is the assessment's own; without a rows loader there is no outlook
    table = class_table_from_file(path, ("sex", "age"), sep=";")
    failing = assess(table, AssessmentOptions(("sex", "age"), thresholds=Thresholds(min_k=50)))
    found = advise_on_breach(failing, table, AdviceInputs())
    assert found is not None
    assert found[0].driver is not None and found[0].datafly is None


@pytest.mark.parametrize("name", ["../adult", "a/b", "zip"])
def test_bundled_hierarchy_names_only_a_bundled_file(name: str) -> None:
    assert hierarchies_for([name])[0] == {}


def _adult_breach():  # type: ignore[no-untyped-def]
    path = oracle_data("adult.csv")
    table = class_table_from_file(path, QIS, sep=";")
    result = assess(table, AssessmentOptions(QIS, thresholds=Thresholds(min_k=5)))
    return result, table, lambda: read_file_frame(path, sep=";", categorical=QIS)


def test_adult_labels_and_trade_off() -> None:
    # the trade-off opens with the 425 records below 5 counted by hand, then follows
    # Datafly's steps with the test copies of ARX's hierarchies (age L1..L4: the records
    # below k after each step, as Datafly reports them)
    result, table, rows = _adult_breach()
    found = advise_on_breach(result, table, AdviceInputs(rows=rows))
    assert found is not None and found[1] == ()
    outlook = found[0].datafly
    assert outlook is not None and outlook.tradeoff is not None
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    arx = {q: load_hierarchy(oracle_data(f"adult_hierarchy_{q}.csv"), column=q) for q in QIS}
    expected = datafly(frame, list(QIS), arx, 5)
    assert outlook.tradeoff[0].suppressed == _hand_counts()[1] == 425
    assert [r.suppressed for r in outlook.tradeoff[1:]] == [s.below_k for s in expected.steps]
    assert [r.levels["age"] for r in outlook.tradeoff] == [0, 1, 2, 3, 4]
    # the file's age: 1;0-4;0-9;0-19;* -- level 4 is '*' for every value
    assert outlook.level_labels == {"sex": "as is", "age": "all in one group", "race": "as is"}
    assert "age → all in one group (level 4)" in found[0].describe()


def test_the_outlook_runs_at_the_caller_s_suppression_limit() -> None:
    # 1 % of 30,162 records = 301: Datafly stops at age L1, 37 records below k (<= 301), as
    # a DataflyOperator with suppression_limit=0.01 would; the default k = 5 goes to age L4
    result, table, rows = _adult_breach()
    found = advise_on_breach(result, table, AdviceInputs(rows=rows, suppression_limit=0.01))
    assert found is not None
    outlook = found[0].datafly
    assert outlook is not None and outlook.feasible
    assert (outlook.suppression_limit, outlook.suppressed_records) == (301, 37)
    assert dict(outlook.levels) == {"sex": 0, "age": 1, "race": 0}
    assert "age → intervals of width 5 (level 1)" in found[0].describe()
    assert [r.suppressed for r in outlook.tradeoff or ()] == [425, 37]


def test_every_qi_without_a_fitting_hierarchy_is_named_at_once() -> None:
    # sex: given, but without a row for F; age: bundled (ARX's 1..100), but 150 is not in it;
    # ward, zip: no hierarchy at all. Every class is a single record: a breach of min_k = 2.
    frame = pd.DataFrame(
        {
            "zip": ["1", "2", "3"],
            "sex": ["M", "F", "M"],
            "age": ["30", "150", "40"],
            "ward": ["a", "b", "c"],
        }
    )
    qis = ("zip", "sex", "age", "ward")
    table = class_table_from_frame(frame, list(qis))
    result = assess(table, AssessmentOptions(qis, thresholds=Thresholds(min_k=2)))
    inputs = AdviceInputs(
        rows=lambda: frame, hierarchies={"sex": Hierarchy.from_rows([["M", "*"]])}
    )
    found = advise_on_breach(result, table, inputs)
    assert found is not None
    assert found[0].datafly is None and found[1] == qis  # in the QIs' order
    # with a fitting hierarchy for each, nobody is named
    ones = {q: Hierarchy.from_rows([[v, "*"] for v in frame[q].unique()]) for q in qis}
    found = advise_on_breach(result, table, AdviceInputs(rows=lambda: frame, hierarchies=ones))
    assert found is not None and found[1] == () and found[0].datafly is not None

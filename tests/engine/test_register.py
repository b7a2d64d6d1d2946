"""Journalist and marketer risk against a population register: a case computed by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from reident_airflow.engine.assessment import assess
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.frames import class_table_from_frame


def test_hand_computed_register() -> None:
    # sample: A x2, B x1          (n = 3, u = 2)
    # register: A x4, B x2, C x4  (F_A = 4, F_B = 2; C is not in the sample)
    sample = class_table_from_frame(pd.DataFrame({"q": ["A", "A", "B"]}), ["q"])
    register = class_table_from_frame(pd.DataFrame({"q": ["A"] * 4 + ["B"] * 2 + ["C"] * 4}), ["q"])
    a = assess(sample, population_table=register, record_threshold=0.3)
    j = a.to_dict()["journalist"]
    assert j["basis"] == "population_table"
    assert j["highest_risk"] == 0.5  # 1 / min(F) = 1 / 2
    assert j["lowest_risk"] == 0.25  # 1 / max(F) = 1 / 4
    # mean over the 3 records of 1/F: (1/4 + 1/4 + 1/2) / 3 = 1/3
    assert j["average_risk"] == pytest.approx(1 / 3)
    # 1/F > 0.3 only for B (1/2): 1 record of 3
    assert j["records_at_risk"] == pytest.approx(1 / 3)
    assert j["records_affected_by_highest_risk"] == pytest.approx(1 / 3)
    # ARX's success rate: max(u / sum F = 2 / 6, 1/3) = 1/3
    assert j["success_rate"] == pytest.approx(1 / 3)
    # marketer: (1/n) * sum f/F = (2/4 + 1/2) / 3 = 1/3
    assert a.marketer_risk == pytest.approx(1 / 3)
    # the register's size (10) is N for the population models
    assert a.population is not None and a.population.population_size == 10
    # prosecutor stays on the sample: highest 1 (B is unique in the sample)
    assert a.prosecutor.highest_risk == 1.0


def test_register_must_cover_and_contain_the_sample() -> None:
    sample = class_table_from_frame(pd.DataFrame({"q": ["A", "A", "B"]}), ["q"])
    only_a = class_table_from_frame(pd.DataFrame({"q": ["A"] * 5}), ["q"])
    with pytest.raises(InvalidInputError, match="does not cover the sample: 1 sample class"):
        assess(sample, population_table=only_a)
    too_small = class_table_from_frame(pd.DataFrame({"q": ["A", "B", "B", "B"]}), ["q"])
    with pytest.raises(InvalidInputError, match="smaller than the sample for 1 class"):
        assess(sample, population_table=too_small)


def test_register_matches_text_values_across_types() -> None:
    # a register from a database (integers) matches a sample read from CSV (text)
    sample = class_table_from_frame(pd.DataFrame({"age": ["30", "40"]}), ["age"])
    register = class_table_from_frame(pd.DataFrame({"age": [30, 30, 40, 40]}), ["age"])
    a = assess(sample, population_table=register)
    assert a.to_dict()["journalist"]["highest_risk"] == 0.5

"""Datafly (metrics.md §9): hand-worked tables, ARX's Adult with ARX's hierarchies, bad input."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from reident_airflow.engine.datafly import (
    SCHEMA,
    DataflyResult,
    datafly,
    resolve_suppression_limit,
)
from reident_airflow.engine.datafly_search import DataflyAttempt, DataflyStep
from reident_airflow.engine.errors import (
    AnonymizationInfeasibleError,
    EmptyDatasetError,
    HierarchyError,
    InvalidInputError,
)
from reident_airflow.engine.hierarchies import Hierarchy, load_hierarchy, masking_hierarchy
from tests.conftest import oracle_data

# --- a hand-worked table ------------------------------------------------------------------------

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
)  # top = 3
ZIP = masking_hierarchy(["13053", "13068", "14850", "14853"], column="zip")  # top = 5


def small() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [10, 11, 12, 13, 14, 15],
            "age": [21, 23, 25, 31, 36, 38],
            "zip": ["13053", "13068", "13053", "14850", "14853", "14853"],
            "disease": ["flu", "cold", "flu", "hiv", "flu", "cold"],
        },
        index=[100, 101, 102, 103, 104, 105],
    )


def test_hand_worked_no_suppression_allowed() -> None:
    # k = 2, limit 0 records.
    # step 0: six distinct (age, zip) tuples -> below = 6 > 0. Distinct: age 6, zip 4 -> age.
    # step 1 (age L1): (20-24,13053) (20-24,13068) (25-29,13053) (30-34,14850) (35-39,14853)x2
    #         below = 4. Distinct: age 4, zip 4: a tie, age is given first -> age.
    # step 2 (age L2): (20-29,13053)x2 (20-29,13068) (30-39,14850) (30-39,14853)x2
    #         below = 2. Distinct: age 2, zip 4 -> zip.
    # step 3 (zip L1): (20-29,1305*)x2 (20-29,1306*) (30-39,1485*)x3 -> below = 1.
    #         Distinct: age 2, zip 3 -> zip.
    # step 4 (zip L2): (20-29,130**)x3 (30-39,148**)x3 -> below = 0 <= 0: stop, nothing removed.
    messages: list[str] = []
    result = datafly(small(), ["age", "zip"], {"age": AGE, "zip": ZIP}, 2, 0, messages.append)
    assert result.levels == {"age": 2, "zip": 2}
    assert result.steps == (
        DataflyStep("age", 1, 4),
        DataflyStep("age", 2, 2),
        DataflyStep("zip", 1, 1),
        DataflyStep("zip", 2, 0),
    )
    assert result.suppressed_records == 0
    assert result.achieved_k == 3
    assert result.suppression_limit == 0
    # precision = 1 - (2/3 + 2/5) / 2; discernibility = 3^2 + 3^2
    assert result.information_loss.precision == pytest.approx(1 - (2 / 3 + 2 / 5) / 2, rel=1e-15)
    assert result.information_loss.discernibility == 18
    table = result.table
    assert list(table.index) == [100, 101, 102, 103, 104, 105]
    assert list(table["age"]) == ["20-29"] * 3 + ["30-39"] * 3
    assert list(table["zip"]) == ["130**"] * 3 + ["148**"] * 3
    assert list(table["id"]) == [10, 11, 12, 13, 14, 15]
    assert list(table["disease"]) == list(small()["disease"])
    assert messages[0].startswith("step 0: 6 records in 6 classes; 6 records in classes below")
    assert messages[1:] == [
        "step 1: generalized age to level 1; 4 records in classes below k",
        "step 2: generalized age to level 2; 2 records in classes below k",
        "step 3: generalized zip to level 1; 1 records in classes below k",
        "step 4: generalized zip to level 2; 0 records in classes below k",
    ]


def test_hand_worked_default_limit_is_k_records() -> None:
    # k = 2, limit defaults to k = 2 records.
    # step 0: below 6 > 2; step 1 (age L1): below 4 > 2;
    # step 2 (age L2): below 2 <= 2 -> stop and suppress the two singletons
    #   (23, 13068) at index 101 and (31, 14850) at index 103.
    # Output: (20-29, 13053) x 2 and (30-39, 14853) x 2 -> achieved k = 2.
    result = datafly(small(), ["age", "zip"], {"age": AGE, "zip": ZIP}, 2)
    assert result.suppression_limit == 2
    assert result.levels == {"age": 2, "zip": 0}
    assert result.steps == (DataflyStep("age", 1, 4), DataflyStep("age", 2, 2))
    assert result.suppressed_records == 2
    assert result.achieved_k == 2
    assert list(result.table.index) == [100, 102, 104, 105]
    assert list(result.table["age"]) == ["20-29", "20-29", "30-39", "30-39"]
    assert list(result.table["zip"]) == ["13053", "13053", "14853", "14853"]
    assert list(result.table["id"]) == [10, 12, 14, 15]
    # precision = 1 - (2/3 + 0/5) / 2; discernibility = 2^2 + 2^2 + 2 suppressed * 6 records
    assert result.information_loss.precision == pytest.approx(2 / 3, rel=1e-15)
    assert result.information_loss.discernibility == 20
    assert result.released_records == 4


def test_qi_order_breaks_ties() -> None:
    # Same table, QIs given as (zip, age): step 0 distinct age 6 > zip 4 -> age L1 (4 below);
    # then age 4 == zip 4: the tie now goes to zip (given first).
    # step 2 (zip L1): (20-24,1305*) (20-24,1306*) (25-29,1305*) (30-34,1485*)
    #                  (35-39,1485*)x2 -> below 4. Distinct: zip 3 < age 4 -> age L2.
    # step 3 (age L2): (20-29,1305*)x2 (20-29,1306*) (30-39,1485*)x3 -> below 1 <= 2: stop,
    #   suppress (23, 13068) at index 101.
    result = datafly(small(), ["zip", "age"], {"age": AGE, "zip": ZIP}, 2)
    assert result.steps == (
        DataflyStep("age", 1, 4),
        DataflyStep("zip", 1, 4),
        DataflyStep("age", 2, 1),
    )
    assert result.levels == {"zip": 1, "age": 2}
    assert result.suppressed_records == 1
    assert list(result.table.index) == [100, 102, 103, 104, 105]
    assert result.achieved_k == 2


def test_already_k_anonymous_table_is_returned_unchanged() -> None:
    frame = pd.DataFrame({"g": ["a", "a", "b", "b"], "v": [1, 2, 3, 4]})
    h = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    result = datafly(frame, ["g"], {"g": h}, 2)
    assert result.steps == ()
    assert result.levels == {"g": 0}
    assert result.information_loss.precision == 1.0
    assert result.information_loss.discernibility == 8
    pd.testing.assert_frame_equal(result.table, frame.astype({"g": "str"}))


def test_integer_and_text_columns_give_the_same_result() -> None:
    as_text = small().astype({"age": str})
    a = datafly(small(), ["age", "zip"], {"age": AGE, "zip": ZIP}, 2, 0)
    b = datafly(as_text, ["age", "zip"], {"age": AGE, "zip": ZIP}, 2, 0)
    assert a.to_dict() == b.to_dict()
    pd.testing.assert_frame_equal(a.table, b.table)


def test_mixed_spellings_of_one_value_are_one_value() -> None:
    # 39 and "39" in an object column are the same value for the hierarchy, hence one class
    frame = pd.DataFrame({"age": pd.Series([39, "39", 40, "40"], dtype=object)})
    h = Hierarchy.from_rows([["39", "*"], ["40", "*"]])
    result = datafly(frame, ["age"], {"age": h}, 2, 0)
    assert result.steps == () and result.achieved_k == 2
    assert list(result.table["age"]) == ["39", "39", "40", "40"]


def test_missing_values_match_an_empty_hierarchy_row() -> None:
    frame = pd.DataFrame({"age": [30.0, np.nan, 30.0, np.nan]})
    h = Hierarchy.from_rows([["30", "*"], ["", "*"]])
    result = datafly(frame, ["age"], {"age": h}, 2, 0)
    assert list(result.table["age"]) == ["30", "", "30", ""]


def test_input_frame_is_not_modified() -> None:
    frame = small()
    before = frame.copy()
    datafly(frame, ["age", "zip"], {"age": AGE, "zip": ZIP}, 2, 0)
    datafly(frame, ["age", "zip"], {"age": AGE, "zip": ZIP}, 2)
    pd.testing.assert_frame_equal(frame, before)


def test_everything_suppressed_when_the_limit_allows_it() -> None:
    # k = n = 3, default limit k = 3 records: step 0 has 3 records below k, 3 <= 3 -> all go.
    frame = pd.DataFrame({"g": ["a", "b", "c"]})
    h = Hierarchy.from_rows([["a", "*"], ["b", "*"], ["c", "*"]])
    result = datafly(frame, ["g"], {"g": h}, 3)
    assert result.suppressed_records == 3
    assert result.achieved_k is None
    assert result.table.empty and list(result.table.columns) == ["g"]
    assert result.information_loss.discernibility == 9
    assert result.to_dict()["achieved_k"] is None


# --- infeasible ---------------------------------------------------------------------------------


def test_infeasible_carries_the_best_attempt_and_no_values() -> None:
    # Zebra and Yak generalize to Mammal, Eagle to Bird (top = 1); k = 2, limit 0.
    # step 0: below 3 > 0 -> kind L1: (Mammal)x2 (Bird)x1 -> below 1 > 0, nothing left to
    # generalize -> infeasible; the best attempt is level 1 with 1 record below k.
    frame = pd.DataFrame({"kind": ["Zebra", "Yak", "Eagle"]})
    h = Hierarchy.from_rows([["Zebra", "Mammal"], ["Yak", "Mammal"], ["Eagle", "Bird"]])
    with pytest.raises(AnonymizationInfeasibleError) as err:
        datafly(frame, ["kind"], {"kind": h}, 2, 0)
    attempt = err.value.best_attempt
    assert isinstance(attempt, DataflyAttempt)
    assert attempt.levels == {"kind": 1}
    assert attempt.below_k == 1
    assert attempt.suppression_limit == 0
    assert attempt.steps == (DataflyStep("kind", 1, 1),)
    assert attempt.to_dict()["below_k"] == 1
    msg = str(err.value)
    assert "cannot reach k=2 within the suppression limit of 0 records" in msg
    for value in ("Zebra", "Yak", "Eagle", "Mammal", "Bird"):
        assert value not in msg
    # one more record of suppression is enough
    result = datafly(frame, ["kind"], {"kind": h}, 2, 1)
    assert result.suppressed_records == 1 and list(result.table.index) == [0, 1]


def test_single_level_hierarchy_cannot_be_generalized() -> None:
    frame = pd.DataFrame({"g": ["a", "b", "b"]})
    with pytest.raises(AnonymizationInfeasibleError) as err:
        datafly(frame, ["g"], {"g": Hierarchy.from_rows([["a"], ["b"]])}, 2, 0)
    assert err.value.best_attempt.levels == {"g": 0}
    assert err.value.best_attempt.steps == ()
    result = datafly(frame, ["g"], {"g": Hierarchy.from_rows([["a"], ["b"]])}, 2, 1)
    assert result.information_loss.precision == 1.0  # a single-level QI contributes 0


def test_non_tree_hierarchy_is_handled_exactly() -> None:
    # Level 1 joins a+b and c+d, level 2 joins a+c and b+d: not a tree (level-1 label "ab" has
    # two level-2 parents). k = 2, limit 0:
    # step 0: a, b, c, d, e singletons -> below 5; only g can be generalized.
    # step 1 (L1): ab x2, cd x2, e -> below 1.
    # step 2 (L2): ac x2, bd x2, e -> below 1; top reached -> infeasible,
    # best attempt = the later of the two states with 1 below (level 2).
    frame = pd.DataFrame({"g": ["a", "b", "c", "d", "e"]})
    h = Hierarchy.from_rows(
        [
            ["a", "ab", "ac"],
            ["b", "ab", "bd"],
            ["c", "cd", "ac"],
            ["d", "cd", "bd"],
            ["e", "e1", "e2"],
        ]
    )
    with pytest.raises(AnonymizationInfeasibleError) as err:
        datafly(frame, ["g"], {"g": h}, 2, 0)
    assert err.value.best_attempt.levels == {"g": 2}
    result = datafly(frame, ["g"], {"g": h}, 2, 1)
    assert result.levels == {"g": 1}
    assert list(result.table["g"]) == ["ab", "ab", "cd", "cd"]


# --- contract -----------------------------------------------------------------------------------


def test_to_dict_is_the_contract() -> None:
    result = datafly(small(), ["age", "zip"], {"age": AGE, "zip": ZIP}, 2)
    data = result.to_dict()
    assert data == {
        "schema": SCHEMA,
        "records": 6,
        "k": 2,
        "achieved_k": 2,
        "suppression_limit": 2,
        "suppressed_records": 2,
        "levels": {"age": 2, "zip": 0},
        "steps": [
            {"generalized": "age", "level": 1, "below_k": 4},
            {"generalized": "age", "level": 2, "below_k": 2},
        ],
        "information_loss": {"precision": pytest.approx(2 / 3), "discernibility": 20},
        # before: six distinct (age, zip) tuples -> 6 classes of 1: risk 1, marketer 6/6,
        # every record above 0.2, C_DM = 6 x 1^2
        "before": {
            "records": 6,
            "classes": 6,
            "smallest_class": 1,
            "prosecutor_risk": 1.0,
            "journalist_risk": 1.0,
            "marketer_risk": 1.0,
            "records_at_risk": 1.0,
            "suppressed_records": 0,
            "precision": 1.0,
            "discernibility": 6,
        },
        # after: (20-29, 13053) x2 and (30-39, 14853) x2 kept, 2 singletons suppressed:
        # risk 1/2, marketer 2/4, both classes' 1/2 > 0.2, loss as information_loss
        "after": {
            "records": 4,
            "classes": 2,
            "smallest_class": 2,
            "prosecutor_risk": 0.5,
            "journalist_risk": 0.5,
            "marketer_risk": 0.5,
            "records_at_risk": 1.0,
            "suppressed_records": 2,
            "precision": pytest.approx(2 / 3),
            "discernibility": 20,
        },
    }
    assert SCHEMA == "reident.datafly/v1"
    text = json.dumps(data)  # aggregates only: no value of the table
    for value in ("13053", "14853", "20-29", "flu"):
        assert value not in text


@pytest.mark.parametrize(
    ("limit", "records"),
    [(None, 5), (0, 0), (7, 7), (np.int64(3), 3), (0.0, 0), (0.29, 29), (0.5, 50), (0.999, 99)],
)
def test_suppression_limit(limit: float | None, records: int) -> None:
    assert resolve_suppression_limit(limit, 5, 100) == records


@pytest.mark.parametrize("limit", [-1, 1.0, 1.5, -0.1, True, "5"])
def test_bad_suppression_limit(limit: object) -> None:
    with pytest.raises(InvalidInputError):
        datafly(small(), ["age"], {"age": AGE}, 2, limit)  # type: ignore[arg-type]


# --- bad input ----------------------------------------------------------------------------------


def test_uncovered_values_name_column_and_counts_never_values() -> None:
    frame = small()
    frame.loc[100, "zip"] = "99991"
    frame.loc[101, "zip"] = "99992"
    frame.loc[102, "zip"] = "99992"
    with pytest.raises(HierarchyError) as err:
        datafly(frame, ["age", "zip"], {"age": AGE, "zip": ZIP}, 2)
    msg = str(err.value)
    assert "'zip'" in msg
    assert "2 distinct values (3 records)" in msg
    for value in ("99991", "99992"):
        assert value not in msg


@pytest.mark.parametrize("k", [0, -1, 7, 2.0, True])
def test_bad_k(k: object) -> None:
    with pytest.raises(InvalidInputError, match="k"):
        datafly(small(), ["age"], {"age": AGE}, k)  # type: ignore[arg-type]


def test_unknown_qi_and_missing_hierarchy() -> None:
    with pytest.raises(InvalidInputError, match="unknown quasi-identifier 'agee'"):
        datafly(small(), ["agee"], {"agee": AGE}, 2)
    with pytest.raises(HierarchyError, match="no hierarchy given for quasi-identifier 'zip'"):
        datafly(small(), ["age", "zip"], {"age": AGE}, 2)
    with pytest.raises(InvalidInputError, match="no quasi-identifiers"):
        datafly(small(), [], {}, 2)


def test_empty_table() -> None:
    with pytest.raises(EmptyDatasetError):
        datafly(small().iloc[:0], ["age"], {"age": AGE}, 1)


# --- ARX's Adult with ARX's hierarchies ---------------------------------------------------------


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def adult_hierarchies() -> dict[str, Hierarchy]:
    columns = (
        "age",
        "education",
        "marital-status",
        "native-country",
        "occupation",
        "race",
        "salary-class",
        "sex",
        "workclass",
    )
    return {c: load_hierarchy(oracle_data(f"adult_hierarchy_{c}.csv"), column=c) for c in columns}


def check_invariants(frame: pd.DataFrame, qis: Sequence[str], result: DataflyResult) -> None:
    """Every output class >= k, suppression within the limit, non-QI columns and order kept."""
    table = result.table
    assert result.records == len(frame)
    assert result.suppressed_records <= result.suppression_limit
    assert len(table) == len(frame) - result.suppressed_records
    if len(table):
        sizes = table.groupby(list(qis), sort=False).size()
        assert int(sizes.min()) >= result.k
        assert int(sizes.min()) == result.achieved_k
    # the rows kept, in order, with their non-QI values untouched
    kept = frame.loc[table.index]
    assert table.index.is_unique and list(table.index) == sorted(table.index)
    others = [c for c in frame.columns if c not in qis]
    pd.testing.assert_frame_equal(table[others], kept[others])
    assert list(table.columns) == list(frame.columns)


ADULT_CASES = [
    (("sex", "age", "race"), 5, None),
    (("age", "education", "marital-status", "native-country"), 2, 0.01),
    (("age", "education", "occupation"), 10, 100),
    (
        (
            "sex",
            "age",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "occupation",
        ),
        5,
        None,
    ),
    (("age", "native-country", "education", "occupation", "workclass"), 50, 0.02),
]


@pytest.mark.parametrize(("qis", "k", "limit"), ADULT_CASES)
def test_adult_invariants(
    adult: pd.DataFrame,
    adult_hierarchies: dict[str, Hierarchy],
    qis: tuple[str, ...],
    k: int,
    limit: float | None,
) -> None:
    messages: list[str] = []
    result = datafly(adult, qis, adult_hierarchies, k, limit, messages.append)
    check_invariants(adult, qis, result)
    assert len(messages) == len(result.steps) + 1
    # each QI column holds its hierarchy's label at the chosen level for the original value
    kept = adult.loc[result.table.index]
    for q in qis:
        h = adult_hierarchies[q]
        level = result.levels[q]
        expected = [h.mapping[v][level] for v in kept[q]]
        assert list(result.table[q]) == expected
    # the steps go one level at a time and end at the reported levels
    reached = dict.fromkeys(qis, 0)
    for step in result.steps:
        reached[step.generalized] += 1
        assert step.level == reached[step.generalized]
    assert reached == result.levels
    below = [s.below_k for s in result.steps]
    assert below == sorted(below, reverse=True)  # ARX's hierarchies are trees: never worse
    assert all(b > result.suppression_limit for b in below[:-1])


def test_adult_all_qis_k5(adult: pd.DataFrame, adult_hierarchies: dict[str, Hierarchy]) -> None:
    # Regression values of this engine (Datafly is deterministic): all eight QIs, k = 5,
    # Sweeney's default limit of 5 records. Checked by hand against the progress trace: age has
    # the most distinct values (72) and is generalized first; the last step brings 9 records
    # below k to 0.
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
    result = datafly(adult, qis, adult_hierarchies, 5)
    assert result.steps[0] == DataflyStep("age", 1, 14603)
    assert result.levels == {
        "sex": 0,
        "age": 4,
        "race": 1,
        "marital-status": 1,
        "education": 3,
        "native-country": 2,
        "workclass": 2,
        "occupation": 1,
    }
    assert result.suppressed_records == 0
    assert len(result.steps) == 14


def test_adult_is_deterministic(
    adult: pd.DataFrame, adult_hierarchies: dict[str, Hierarchy]
) -> None:
    qis = ("age", "education", "occupation", "native-country")
    a = datafly(adult, qis, adult_hierarchies, 20, 0.01)
    b = datafly(adult.copy(), list(qis), dict(adult_hierarchies), 20, 0.01)
    assert a.to_dict() == b.to_dict()
    pd.testing.assert_frame_equal(a.table, b.table)

"""Column Direct Match Protection (metrics.md §8, seed 000).

Every expected value is a hand computation of ``P_c = 100 * (1 - m_c * u_c / n^2)``, with
``m_c`` (matches) and ``u_c`` (distinct avatar values, missing counted once) counted by hand
in the comment next to it.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from reident_airflow.engine.direct_match import (
    DEFAULT_TARGET,
    SCHEMA,
    ColumnProtection,
    DirectMatchResult,
    column_protection,
    direct_match_from_counts,
    direct_match_protection,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

# Record values used in error tests: none of them may appear in a message.
SECRETS = ("alice@example.com", "bob@example.com", "carol@example.com", "SSN-123-45-6789")


def assert_no_values(message: str, *extra: object) -> None:
    for value in (*SECRETS, *extra):
        assert str(value) not in message, f"message leaks a record value: {message!r}"


def by_column(result: DirectMatchResult) -> dict[str, ColumnProtection]:
    return {c.column: c for c in result.columns}


# --- the formula -------------------------------------------------------------------------------


def test_formula_leaked_identifier_is_exactly_zero() -> None:
    # n distinct values, all released unchanged: m = u = n -> 100 * (1 - n*n/n^2) = 0.
    for n in (1, 7, 1000, 10_000_000):
        assert column_protection(n, n, n) == 0.0


def test_formula_constant_column() -> None:
    # m = n, u = 1 -> 100 * (1 - n/n^2) = 100 * (1 - 1/n): 100 * (1 - 1/4) = 75.
    assert column_protection(4, 1, 4) == 75.0
    assert column_protection(1000, 1, 1000) == pytest.approx(99.9)


def test_formula_half_matching_distinct_column() -> None:
    # u = n = 10, m = 5 -> 100 * (1 - 50/100) = 50.
    assert column_protection(5, 10, 10) == 50.0


def test_formula_rejects_impossible_counts() -> None:
    with pytest.raises(EmptyDatasetError):
        column_protection(0, 1, 0)
    with pytest.raises(InvalidInputError, match="matches"):
        column_protection(11, 1, 10)
    with pytest.raises(InvalidInputError, match="distinct_avatar_values"):
        column_protection(1, 0, 10)
    with pytest.raises(InvalidInputError, match="distinct_avatar_values"):
        column_protection(1, 11, 10)
    with pytest.raises(InvalidInputError, match="integer"):
        column_protection(1.5, 1, 10)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="boolean"):
        column_protection(True, 1, 10)


def test_formula_accepts_numpy_integers() -> None:
    # m = 2, u = 4, n = 4 -> 100 * (1 - 8/16) = 50.
    assert column_protection(np.int64(2), np.int32(4), np.int64(4)) == 50.0  # type: ignore[arg-type]


def test_default_target_is_fifty() -> None:
    # P_c < 50 needs m_c > n/2 and u_c > n/2 at once (module docstring): a kept identifier.
    assert DEFAULT_TARGET == 50.0
    assert column_protection(10, 5, 10) == 50.0  # u = n/2, all kept: on the target
    assert column_protection(5, 10, 10) == 50.0  # m = n/2, all distinct: on the target
    assert column_protection(6, 9, 10) < 50.0  # both above half: below it (46)


# --- the three reference shapes through the DataFrame path -------------------------------------


def test_leaked_identifier_column_gives_zero() -> None:
    # id: 8 distinct values, all equal -> m = 8, u = 8 -> 100 * (1 - 64/64) = 0.
    # sex: avatar ["F", "M"] alternating vs original all "F": m = 4, u = 2
    #      -> 100 * (1 - 8/64) = 87.5.
    original = pd.DataFrame({"id": range(100, 108), "sex": ["F"] * 8})
    avatar = pd.DataFrame({"id": range(100, 108), "sex": ["F", "M"] * 4})
    result = direct_match_protection(original, avatar)
    assert result.protection == 0.0
    assert [c.column for c in result.columns] == ["id", "sex"]
    assert result.columns[0] == ColumnProtection("id", 0.0, 8, 8)
    assert result.columns[1] == ColumnProtection("sex", 87.5, 4, 2)
    assert result.below_target == ("id",)
    assert result.passed is False


def test_constant_column_gives_almost_100() -> None:
    # n = 5, m = 5, u = 1 -> 100 * (1 - 5/25) = 80; n = 1000 -> 100 * (1 - 1/1000) = 99.9.
    result = direct_match_protection(pd.DataFrame({"c": ["x"] * 5}), pd.DataFrame({"c": ["x"] * 5}))
    assert result.protection == pytest.approx(80.0)
    assert result.columns[0].matches == 5
    assert result.columns[0].distinct_avatar_values == 1
    big = pd.DataFrame({"c": np.full(1000, 3)})
    assert direct_match_protection(big, big).protection == pytest.approx(99.9)


def test_half_matching_distinct_column_gives_fifty() -> None:
    # x = 0..9, y = x for the first 5 rows and x + 100 after: u = 10 distinct, m = 5
    # -> 100 * (1 - 5*10/100) = 50; 50 is not below the default target 50.
    x = np.arange(10)
    y = np.where(x < 5, x, x + 100)
    result = direct_match_protection(pd.DataFrame({"v": x}), pd.DataFrame({"v": y}))
    assert result.protection == 50.0
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (5, 10)
    assert result.below_target == ()
    assert result.passed is True


# --- a mixed table computed by hand ------------------------------------------------------------

MIXED_ORIGINAL = pd.DataFrame(
    {
        "id": [1, 2, 3, 4, 5, 6],
        "zip": ["A", "A", "B", "B", "C", "C"],
        "age": [30, 40, 50, 60, 70, 80],
        "sex": ["F", "M", "F", "M", "F", "M"],
        "income": [1.5, 2.5, 3.5, 4.5, 5.5, 6.5],
    }
)
MIXED_AVATAR = pd.DataFrame(
    {
        "id": [1, 2, 3, 4, 5, 6],
        "zip": ["A", "B", "B", "C", "C", "A"],
        "age": [30, 41, 50, 61, 72, 80],
        "sex": ["F", "M", "F", "M", "F", "M"],
        "income": [9.0, 8.0, 7.0, 6.0, 5.0, 4.0],
    }
)
# n = 6, n^2 = 36:
#   id:     m = 6 (all),            u = 6 -> 100 * (1 - 36/36) = 0
#   zip:    m = 3 (rows 0, 2, 4),   u = 3 -> 100 * (1 -  9/36) = 75
#   age:    m = 3 (30, 50, 80),     u = 6 -> 100 * (1 - 18/36) = 50
#   sex:    m = 6 (all),            u = 2 -> 100 * (1 - 12/36) = 66.67
#   income: m = 0,                  u = 6 -> 100 * (1 -  0/36) = 100
MIXED_EXPECTED = {
    "id": (0.0, 6, 6),
    "zip": (75.0, 3, 3),
    "age": (50.0, 3, 6),
    "sex": (100 * (1 - 12 / 36), 6, 2),
    "income": (100.0, 0, 6),
}


def test_mixed_table_counts_ranking_and_below_target() -> None:
    result = direct_match_protection(MIXED_ORIGINAL, MIXED_AVATAR, target=70)
    assert result.records == 6
    for column, (protection, matches, distinct) in MIXED_EXPECTED.items():
        got = by_column(result)[column]
        assert got.protection == pytest.approx(protection)
        assert (got.matches, got.distinct_avatar_values) == (matches, distinct)
    assert [c.column for c in result.columns] == ["id", "age", "sex", "zip", "income"]
    assert result.protection == 0.0
    assert result.below_target == ("id", "age", "sex")  # 0, 50, 66.67 < 70; zip 75 is not
    assert result.passed is False
    assert result.target == 70.0


def test_mixed_table_default_target() -> None:
    # Only id (0) is below 50; age sits exactly on 50 and is not below it.
    result = direct_match_protection(MIXED_ORIGINAL, MIXED_AVATAR)
    assert result.target == DEFAULT_TARGET
    assert result.below_target == ("id",)


def test_passes_when_every_column_reaches_the_target() -> None:
    # Without id: the lowest is age at 50 -> passes target 50, fails target 50.01.
    original, avatar = MIXED_ORIGINAL.drop(columns="id"), MIXED_AVATAR.drop(columns="id")
    result = direct_match_protection(original, avatar, target=50)
    assert (result.protection, result.passed, result.below_target) == (50.0, True, ())
    result = direct_match_protection(original, avatar, target=50.01)
    assert (result.passed, result.below_target) == (False, ("age",))


def test_ties_keep_the_column_order() -> None:
    # b and a both: m = 2, u = 4, n = 4 -> 100 * (1 - 8/16) = 50; b comes first in the table.
    original = pd.DataFrame({"b": [1, 2, 3, 4], "a": [1, 2, 3, 4]})
    avatar = pd.DataFrame({"b": [1, 2, 7, 8], "a": [5, 6, 3, 4]})
    result = direct_match_protection(original, avatar)
    assert [c.column for c in result.columns] == ["b", "a"]
    assert [c.protection for c in result.columns] == [50.0, 50.0]


def test_columns_selects_what_is_scored() -> None:
    result = direct_match_protection(MIXED_ORIGINAL, MIXED_AVATAR, columns=["zip", "income"])
    assert [c.column for c in result.columns] == ["zip", "income"]
    assert result.protection == 75.0


def test_columns_in_one_table_only_are_reported() -> None:
    original = MIXED_ORIGINAL.assign(name=[*SECRETS, "x", "y"])
    avatar = MIXED_AVATAR.drop(columns="income").assign(noise=0)
    result = direct_match_protection(original, avatar)
    assert result.only_in_original == ("income", "name")
    assert result.only_in_avatar == ("noise",)
    assert {c.column for c in result.columns} == {"id", "zip", "age", "sex"}


# --- equality by value -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "avatar_values",
    [
        [1.0, 2.0, 4.0],  # float column (e.g. Parquet)
        ["1", "2.0", "4"],  # text from a CSV read as strings
        [" 1", "2 ", "4"],  # text with padding
        np.array([1, 2, 4], dtype=object),  # Python ints from a database driver
        pd.array([1, 2, 4], dtype="Int64"),  # nullable integers
    ],
)
def test_one_one_point_zero_and_text_one_are_equal(avatar_values: Any) -> None:
    # original ints 1, 2, 3; avatar 1, 2, 4 in another type: m = 2, u = 3
    # -> 100 * (1 - 6/9) = 33.33.
    original = pd.DataFrame({"v": [1, 2, 3]})
    avatar = pd.DataFrame({"v": avatar_values})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (2, 3)
    assert result.protection == pytest.approx(100 * (1 - 6 / 9))


def test_numeric_text_on_both_sides_compares_numerically() -> None:
    # "1" = "1.0" = "1e0" numerically; "2" vs "2.50" differ; "3" = "3.000": m = 2... row by
    # row: 1 = 1.0 yes, 2 vs 2.5 no, 3 = 3.0 yes, 10 = 1e1 yes -> m = 3;
    # avatar values 1.0, 2.5, 3.0, 10.0 -> u = 4 -> 100 * (1 - 12/16) = 25.
    original = pd.DataFrame({"v": pd.Series(["1", "2", "3", "10"], dtype="str")})
    avatar = pd.DataFrame({"v": pd.Series(["1.0", "2.50", "3.000", "1e1"], dtype="str")})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (3, 4)
    assert result.protection == 25.0


def test_non_numeric_text_compares_as_is() -> None:
    # Avatar "a" does not parse, so the column is text: "1" vs "1.0" differ, "a" = "a",
    # "b" vs "c" differ -> m = 1, u = 3 ("1.0", "a", "c") -> 100 * (1 - 3/9) = 66.67.
    original = pd.DataFrame({"v": ["1", "a", "b"]})
    avatar = pd.DataFrame({"v": ["1.0", "a", "c"]})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (1, 3)


def test_numbers_against_partly_numeric_text_compare_value_by_value() -> None:
    # original ints 1, 2, 3, 4; avatar text "1", "2.0", "x", missing (dtypes differ):
    # 1 = "1" yes, 2 = "2.0" yes, 3 vs "x" no, 4 vs missing no -> m = 2;
    # u = 4 ("1", "2.0", "x", missing) -> 100 * (1 - 8/16) = 50.
    original = pd.DataFrame({"v": [1, 2, 3, 4]})
    avatar = pd.DataFrame({"v": ["1", "2.0", "x", None]})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (2, 4)
    assert result.protection == 50.0


def test_large_integer_text_keeps_its_precision() -> None:
    # 2^53 + 1 and 2^53 are distinct integers that a float64 would merge:
    # m = 2, u = 2, n = 2 -> 0.
    values = ["9007199254740993", "9007199254740992"]
    result = direct_match_protection(pd.DataFrame({"id": values}), pd.DataFrame({"id": values}))
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (2, 2)
    assert result.protection == 0.0


def test_missing_equals_missing_across_nan_none_and_na() -> None:
    # Numbers: original NaN, 1, NaN, 2 vs avatar None, 1, pd.NA, 3 (object from a driver):
    # rows 0, 1, 2 match, row 3 does not -> m = 3; u = {missing, 1, 3} = 3
    # -> 100 * (1 - 9/16) = 43.75.
    original = pd.DataFrame({"v": [np.nan, 1.0, np.nan, 2.0]})
    avatar = pd.DataFrame({"v": np.array([None, 1, pd.NA, 3], dtype=object)})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (3, 3)
    assert result.protection == 43.75
    # Text: "a", NaN, "b", NaN vs "a", None, "c", pd.NA -> same counts.
    original = pd.DataFrame({"v": pd.Series(["a", np.nan, "b", np.nan], dtype="str")})
    avatar = pd.DataFrame({"v": np.array(["a", None, "c", pd.NA], dtype=object)})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (3, 3)


def test_distinct_avatar_values_count_missing_once() -> None:
    # Avatar "a", None, NaN, NA: u = {"a", missing} = 2; m = 4 (a = a, missing = missing x3)
    # -> 100 * (1 - 8/16) = 50.
    avatar = pd.DataFrame({"v": np.array(["a", None, np.nan, pd.NA], dtype=object)})
    original = pd.DataFrame({"v": np.array(["a", pd.NA, None, np.nan], dtype=object)})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (4, 2)
    # Numbers: NaN, NaN, 1 -> u = 2.
    result = direct_match_protection(
        pd.DataFrame({"v": [np.nan, 0.0, 1.0]}), pd.DataFrame({"v": [np.nan, np.nan, 1.0]})
    )
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (2, 2)


def test_categorical_and_datetime_columns() -> None:
    # Categorical with different categories on each side: m = 2 (a, b), u = 3 -> 100*(1-6/9).
    original = pd.DataFrame({"c": pd.Categorical(["a", "b", "c"])})
    avatar = pd.DataFrame({"c": pd.Categorical(["a", "b", "d"])})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (2, 3)
    # Dates compare as dates; NaT = NaT: m = 2, u = 2 ({2020-01-01, NaT}) -> 100*(1-4/9).
    original = pd.DataFrame({"d": pd.to_datetime(["2020-01-01", "NaT", "2020-01-03"])})
    avatar = pd.DataFrame({"d": pd.to_datetime(["2020-01-01", "NaT", "NaT"])})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (2, 2)


def test_mixed_object_columns_compare_value_by_value() -> None:
    # Object columns mixing numbers and text: 1 = "1", "a" = "a", 2.5 vs "2" no -> m = 2,
    # u = 3 -> 100 * (1 - 6/9).
    original = pd.DataFrame({"v": np.array([1, "a", 2.5], dtype=object)})
    avatar = pd.DataFrame({"v": np.array(["1", "a", 2], dtype=object)})
    result = direct_match_protection(original, avatar)
    assert (result.columns[0].matches, result.columns[0].distinct_avatar_values) == (2, 3)


# --- key alignment -----------------------------------------------------------------------------


def test_key_alignment_on_shuffled_avatar_equals_positional_path() -> None:
    rng = np.random.default_rng(7)
    n = 200
    original = pd.DataFrame(
        {
            "key": np.arange(n) * 3,
            "age": rng.integers(18, 90, n),
            "city": rng.choice(["Lyon", "Nantes", "Paris", "Lille"], n),
            "score": rng.normal(size=n).round(1),
        }
    )
    avatar = original.copy()
    avatar["age"] = np.where(rng.random(n) < 0.5, avatar["age"], rng.integers(18, 90, n))
    avatar["city"] = np.where(rng.random(n) < 0.3, avatar["city"], "Paris")
    positional = direct_match_protection(original, avatar, columns=["age", "city", "score"])
    shuffled = avatar.sample(frac=1, random_state=3)
    keyed = direct_match_protection(original, shuffled, key="key")
    assert keyed.columns == positional.columns
    assert keyed.protection == positional.protection
    assert keyed.key == "key"
    assert "key" not in {c.column for c in keyed.columns}  # the key itself is not scored
    # Sanity: positionally, the shuffled avatar does not match like the aligned one.
    assert direct_match_protection(original, shuffled, columns=["score"]).columns != tuple(
        c for c in positional.columns if c.column == "score"
    )


def test_key_compares_by_value_across_types() -> None:
    # Keys 1, 2, 3 as ints in the original and as CSV text in reverse order in the avatar;
    # v then matches on every row: m = 3, u = 3 -> 0.
    original = pd.DataFrame({"k": [1, 2, 3], "v": ["x", "y", "z"]})
    avatar = pd.DataFrame({"k": ["3", "2.0", "1"], "v": ["z", "y", "x"]})
    result = direct_match_protection(original, avatar, key="k")
    assert result.columns == (ColumnProtection("v", 0.0, 3, 3),)


# --- input errors ------------------------------------------------------------------------------


def secret_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    original = pd.DataFrame({"email": list(SECRETS), "age": [30, 40, 50, 60]})
    return original, original.copy()


def test_error_different_row_counts() -> None:
    original, avatar = secret_tables()
    with pytest.raises(InvalidInputError) as info:
        direct_match_protection(original, avatar.iloc[:3])
    message = str(info.value)
    assert "4" in message and "3" in message and "original" in message and "avatar" in message
    assert_no_values(message)


@pytest.mark.parametrize("side", ["original", "avatar"])
def test_error_key_missing(side: str) -> None:
    original, avatar = secret_tables()
    original["id"] = [1, 2, 3, 4]
    avatar["id"] = [1, 2, 3, 4]
    tables = {"original": original, "avatar": avatar}
    tables[side] = tables[side].drop(columns="id")
    with pytest.raises(InvalidInputError, match=rf"key column 'id' is missing from the {side}"):
        direct_match_protection(tables["original"], tables["avatar"], key="id")


@pytest.mark.parametrize("side", ["original", "avatar"])
def test_error_key_not_unique(side: str) -> None:
    original, avatar = secret_tables()
    # email: 4 values; duplicate two of them -> 2 key values repeated, on 4 records... here
    # rows 0 and 1 both become SECRETS[0], rows 2 and 3 both SECRETS[2]: 2 keys, 4 records.
    dup = [SECRETS[0], SECRETS[0], SECRETS[2], SECRETS[2]]
    tables = {"original": original, "avatar": avatar}
    tables[side] = tables[side].assign(email=dup)
    with pytest.raises(InvalidInputError) as info:
        direct_match_protection(tables["original"], tables["avatar"], key="email")
    message = str(info.value)
    assert f"not unique in the {side} table" in message
    assert "2 key values" in message and "4 records" in message
    assert_no_values(message)


def test_error_keys_do_not_match() -> None:
    original, avatar = secret_tables()
    avatar = avatar.assign(email=[SECRETS[0], SECRETS[1], "dave@example.com", "eve@example.com"])
    with pytest.raises(InvalidInputError) as info:
        direct_match_protection(original, avatar, key="email")
    message = str(info.value)
    assert "2 key values of the original table" in message
    assert "2 key values of the avatar table" in message
    assert_no_values(message, "dave@example.com", "eve@example.com")


def test_error_key_with_missing_values() -> None:
    original, avatar = secret_tables()
    original = original.assign(email=pd.Series([SECRETS[0], None, SECRETS[2], SECRETS[3]]))
    with pytest.raises(InvalidInputError, match="1 missing values in the original") as info:
        direct_match_protection(original, avatar, key="email")
    assert_no_values(str(info.value))


def test_error_no_common_columns() -> None:
    original, _ = secret_tables()
    avatar = pd.DataFrame({"other": [1, 2, 3, 4]})
    with pytest.raises(InvalidInputError, match="no column in common") as info:
        direct_match_protection(original, avatar)
    assert_no_values(str(info.value))
    # Only the key in common is not enough either.
    with pytest.raises(InvalidInputError, match="besides the key 'email'"):
        direct_match_protection(original, original[["email"]], key="email")


@pytest.mark.parametrize("side", ["original", "avatar"])
def test_error_empty_table(side: str) -> None:
    original, avatar = secret_tables()
    tables = {"original": original, "avatar": avatar}
    tables[side] = tables[side].iloc[:0]
    with pytest.raises(EmptyDatasetError, match=f"the {side} table has no records"):
        direct_match_protection(tables["original"], tables["avatar"])


@pytest.mark.parametrize("target", [-1, 100.5, float("nan"), float("inf"), True, "50"])
def test_error_bad_target(target: Any) -> None:
    original, avatar = secret_tables()
    with pytest.raises(InvalidInputError, match="target"):
        direct_match_protection(original, avatar, target=target)


def test_error_bad_columns() -> None:
    original, avatar = secret_tables()
    with pytest.raises(InvalidInputError, match=r"missing from the avatar table: \['zip'\]"):
        direct_match_protection(original.assign(zip=1), avatar, columns=["zip"])
    with pytest.raises(InvalidInputError, match="missing from the original table"):
        direct_match_protection(original, avatar, columns=["nope"])
    with pytest.raises(InvalidInputError, match="cannot also be scored"):
        direct_match_protection(original, avatar, key="email", columns=["email", "age"])
    with pytest.raises(InvalidInputError, match="not one string"):
        direct_match_protection(original, avatar, columns="age")
    with pytest.raises(InvalidInputError, match="no column to compare"):
        direct_match_protection(original, avatar, columns=[])


def test_error_not_a_dataframe_and_duplicated_columns() -> None:
    original, avatar = secret_tables()
    with pytest.raises(InvalidInputError, match="DataFrame"):
        direct_match_protection(original.to_dict(), avatar)  # type: ignore[arg-type]
    twice = pd.concat([original, original[["age"]]], axis=1)
    with pytest.raises(InvalidInputError, match=r"duplicated column names: \['age'\]"):
        direct_match_protection(original, twice)


def test_errors_are_value_errors() -> None:
    # InvalidInputError is also a ValueError (errors.py), so callers may catch either.
    original, avatar = secret_tables()
    with pytest.raises(ValueError):
        direct_match_protection(original, avatar.iloc[:2])


# --- counts path -------------------------------------------------------------------------------


def test_from_counts_matches_the_dataframe_path() -> None:
    counts = {c: (m, u) for c, (_, m, u) in MIXED_EXPECTED.items()}
    from_counts = direct_match_from_counts(6, counts, target=70)
    from_frames = direct_match_protection(MIXED_ORIGINAL, MIXED_AVATAR, target=70)
    assert from_counts == from_frames


def test_from_counts_ties_keep_mapping_order_and_echo_extras() -> None:
    # Both: m = 1, u = 2, n = 2 -> 100 * (1 - 2/4) = 50.
    result = direct_match_from_counts(
        2, {"z": (1, 2), "a": (1, 2)}, key="k", only_in_original=["o"], only_in_avatar=["p"]
    )
    assert [c.column for c in result.columns] == ["z", "a"]
    assert (result.key, result.only_in_original, result.only_in_avatar) == ("k", ("o",), ("p",))


def test_from_counts_errors() -> None:
    with pytest.raises(EmptyDatasetError):
        direct_match_from_counts(0, {"a": (0, 1)})
    with pytest.raises(InvalidInputError, match="counts is empty"):
        direct_match_from_counts(3, {})
    with pytest.raises(InvalidInputError, match="pair"):
        direct_match_from_counts(3, {"a": (1,)})  # type: ignore[dict-item]
    with pytest.raises(InvalidInputError, match="matches"):
        direct_match_from_counts(3, {"a": (4, 1)})


# --- JSON --------------------------------------------------------------------------------------


def test_to_dict_follows_the_contract() -> None:
    result = direct_match_protection(MIXED_ORIGINAL, MIXED_AVATAR, target=70)
    doc = result.to_dict()
    contract = {"schema", "records", "protection", "target", "columns", "below_target", "passed"}
    assert set(doc) == contract | {"key", "only_in_original", "only_in_avatar"}
    assert doc["schema"] == SCHEMA == "reident.direct_match/v1"
    assert [set(c) for c in doc["columns"]] == [
        {"column", "protection", "matches", "distinct_avatar_values"}
    ] * 5
    assert [c["column"] for c in doc["columns"]] == ["id", "age", "sex", "zip", "income"]
    assert doc["below_target"] == ["id", "age", "sex"]
    assert doc["passed"] is False
    assert doc["key"] is None
    # Plain Python types: json round-trips it unchanged.
    assert json.loads(json.dumps(doc)) == doc
    assert type(doc["records"]) is int and type(doc["protection"]) is float
    assert type(doc["target"]) is float
    for column in doc["columns"]:
        assert type(column["protection"]) is float
        assert type(column["matches"]) is int
        assert type(column["distinct_avatar_values"]) is int


def test_to_dict_from_numpy_counts_is_plain() -> None:
    counts: Any = {"a": (np.int64(2), np.int64(4))}
    result = direct_match_from_counts(np.int64(4), counts)  # type: ignore[arg-type]
    doc = result.to_dict()
    assert json.dumps(doc)
    assert type(doc["records"]) is int and type(doc["columns"][0]["matches"]) is int

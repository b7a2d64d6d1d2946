"""An unknown column name gets the closest column as a suggestion (issue 19: "a typo gets no
did-you-mean"), wherever the engine checks the names: database sources, operators, GX."""

from __future__ import annotations

import pytest

from reident_airflow.engine.encoding import refuse_unknown, validate_quasi_identifiers
from reident_airflow.engine.errors import InvalidInputError


def test_a_typo_names_the_closest_column() -> None:
    with pytest.raises(InvalidInputError) as info:
        validate_quasi_identifiers(["sex", "agee"], ["sex", "age", "race"])
    assert str(info.value) == (
        "unknown quasi-identifier 'agee' (did you mean 'age'?); "
        "available columns: 'sex', 'age', 'race'"
    )


def test_each_unknown_name_gets_its_own_suggestion_or_none() -> None:
    # 'rac' is close to 'race'; 'zip' is close to no column (difflib's ratio below 0.6)
    with pytest.raises(InvalidInputError) as info:
        refuse_unknown("sensitive column", ["rac", "zip"], ["sex", "age", "race"])
    assert str(info.value) == (
        "unknown sensitive columns 'rac' (did you mean 'race'?), 'zip'; "
        "available columns: 'sex', 'age', 'race'"
    )


def test_a_name_with_spaces_around_is_compared_without_them() -> None:
    with pytest.raises(InvalidInputError, match=r"' Age ' \(did you mean 'age'\?\)"):
        refuse_unknown("weight column", [" Age "], ["age", "sex"])
    refuse_unknown("weight column", ["age"], ["age", "sex"])  # a known name passes

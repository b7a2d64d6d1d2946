"""The parameter checks are declared per field: every declaration names a real field."""

from __future__ import annotations

import pytest

from reident_airflow.gx.expectations import EXPECTATIONS
from reident_airflow.gx.expectations.base import ReidentExpectation


@pytest.mark.parametrize("cls", EXPECTATIONS, ids=lambda cls: cls.__name__)
def test_field_checks_name_fields_of_the_expectation(cls: type[ReidentExpectation]) -> None:
    """A misspelt key would leave its field unchecked without a word; this catches it."""
    fields = set(cls.__fields__)
    assert set(cls.field_checks) <= fields
    assert set(cls.success_keys) <= fields
    assert set(cls.args_keys) <= set(cls.success_keys)


@pytest.mark.parametrize("cls", EXPECTATIONS, ids=lambda cls: cls.__name__)
def test_every_own_field_is_a_success_key(cls: type[ReidentExpectation]) -> None:
    """GE passes only success keys to the metric and the verdict: none may be left out."""
    own = set(cls.__fields__) - set(ReidentExpectation.__fields__)
    assert own == set(cls.success_keys)

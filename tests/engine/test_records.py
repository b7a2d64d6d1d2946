"""Result records whose JSON object is their fields (:mod:`reident_airflow.engine.records`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from reident_airflow.engine.records import FieldRecord, json_value


@dataclass(frozen=True)
class _Inner(FieldRecord):
    a: int


@dataclass(frozen=True)
class _Outer(FieldRecord):
    inner: _Inner | None
    levels: Mapping[str, int]
    n: int


def test_fields_in_order_nested_records_and_mappings_as_json() -> None:
    record = _Outer(_Inner(1), MappingProxyType({"x": 2}), 3)
    data = record.to_dict()
    assert data == {"inner": {"a": 1}, "levels": {"x": 2}, "n": 3}
    assert list(data) == ["inner", "levels", "n"]
    assert type(data["levels"]) is dict  # a read-only mapping would not serialize
    assert json.loads(json.dumps(data)) == data


def test_a_missing_nested_record_stays_none() -> None:
    assert _Outer(None, {}, 0).to_dict() == {"inner": None, "levels": {}, "n": 0}
    assert json_value(None) is None and json_value("text") == "text"

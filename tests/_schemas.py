"""Validate a document against the package's JSON Schema of its ``"schema"`` id.

Stricter than JSON Schema on one point: an ``integer`` is a JSON integer (``5``), not a
number with no fraction (``5.0``, which draft 2020-12 counts as an integer). The alerts send
counts as integers (issue 29), and a document read with ``json.loads`` keeps ``5.0`` a float,
so this check sees what a consumer receives.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from reident_airflow.schemas import SCHEMA_IDS, json_schema

_STRICT = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)
    ),
)


def schema_errors(document: Any) -> list[str]:
    """What is wrong with ``document`` by the JSON Schema its ``"schema"`` names (each error
    with the path to it); none when it validates."""
    schema_id = document.get("schema") if isinstance(document, dict) else None
    if schema_id not in SCHEMA_IDS:
        return [f"the package has no JSON Schema of {schema_id!r}"]
    validator = _STRICT(json_schema(schema_id))
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(document)'}: {error.message}"
        for error in validator.iter_errors(document)
    ]


def assert_valid(document: Any) -> None:
    errors = schema_errors(document)
    assert errors == [], errors

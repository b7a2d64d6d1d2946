"""JSON Schemas (draft 2020-12) of the documents the package writes, shipped as package data.

One file per schema id, ``<id with "/" as ".">.schema.json``: the assessment, direct-match and
Datafly documents (``docs/contract.md`` §2 to §4), the breach notifier's alert (§7) and the
Great Expectations action's alert (§5). They describe the keys and types every reader may rely
on; a document may hold keys they do not name (keys are added without a new version)::

    import jsonschema
    from reident_airflow.schemas import json_schema

    jsonschema.validate(document, json_schema(document["schema"]))

Validating is left to the reader (``jsonschema`` is not a dependency of the package).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from reident_airflow.engine.errors import InvalidInputError

__all__ = ["SCHEMA_IDS", "json_schema"]

#: The schema ids with a JSON Schema in this package.
SCHEMA_IDS = (
    "reident.assessment/v1",
    "reident.direct_match/v1",
    "reident.datafly/v1",
    "reident.alert/v2",
    "reident.gx_alert/v1",
)


def json_schema(schema_id: str) -> dict[str, Any]:
    """The JSON Schema of the documents whose ``"schema"`` is ``schema_id`` (a fresh dict);
    :class:`InvalidInputError` for an id this package has no schema of."""
    if schema_id not in SCHEMA_IDS:
        raise InvalidInputError(f"no JSON Schema for {schema_id!r}; known: {', '.join(SCHEMA_IDS)}")
    name = schema_id.replace("/", ".") + ".schema.json"
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema

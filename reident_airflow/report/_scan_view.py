"""The identifier scan as a reader of a result sees it (see :mod:`.view`, which exports it).

An assessment holds the optional ``"identifier_scan"`` object (schema
``reident.identifier_scan/v1``, :meth:`~reident_airflow.engine.identifiers.IdentifierScan.to_dict`)
when a scan ran. It is read here once, as every other part of a result is: each field of the
type it declares or ``None``; a column that is not an object, or has no name, is left out.
Counts, shares, column names and the engine's reasons: the scan holds no value of the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from reident_airflow.report._read import (
    Checked,
    Number,
    bool_or_none,
    mapping_or_none,
    names,
    string_or_none,
)

__all__ = [
    "FAILING_VERDICTS",
    "ContentShareView",
    "IdentifierScanView",
    "SafeHarborCategoryView",
    "ScanColumnView",
]

#: The verdicts that fail a release under the ``"fail"`` policy (the engine's
#: :data:`~reident_airflow.engine.identifiers.FAILING_VERDICTS`, written as the JSON holds
#: them so a reader needs no engine import).
FAILING_VERDICTS = frozenset({"identifier", "quasi-identifier not declared"})
_CLEAR = "clear"


def _items(value: Any) -> list[Mapping[str, Any]]:
    """The objects of a list; anything else gives none."""
    if not isinstance(value, list | tuple):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def _strings(value: Any) -> tuple[str, ...]:
    """The strings of a list (the reasons); anything else in it is left out."""
    if not isinstance(value, list | tuple):
        return ()
    return tuple(v for v in value if isinstance(v, str))


@dataclass(frozen=True)
class ContentShareView(Checked):
    """One content kind counted in a column: the backend's ``matches``, the verified
    ``count`` (``None`` when not verified), its ``share`` of the non-null values, and whether
    the count was ``estimated`` from a sample."""

    kind: str
    matches: Number | None
    count: Number | None
    share: Number | None
    estimated: bool | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(data, kind=str(data.get("kind")))


@dataclass(frozen=True)
class ScanColumnView(Checked):
    """The scan's verdict on one column, with its evidence (counts and shares)."""

    column: str
    kind: str | None
    verdict: str | None
    reasons: tuple[str, ...]
    treated_as: str | None
    name_rule: str | None
    records: Number | None
    nulls: Number | None
    distinct: Number | None
    singletons: Number | None
    approximate: bool | None
    unique_share: Number | None
    unique_estimated: bool | None
    content: tuple[ContentShareView, ...]
    over_89: Number | None
    zip3: Number | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(
            data,
            column=str(data.get("column")),
            reasons=_strings(data.get("reasons")),
            content=tuple(ContentShareView.from_dict(c) for c in _items(data.get("content"))),
        )

    @property
    def flagged(self) -> bool:
        """Whether the verdict is anything but ``clear`` (a missing verdict is not clear)."""
        return self.verdict != _CLEAR

    @property
    def failing(self) -> bool:
        """Whether the verdict fails a release under the ``"fail"`` policy."""
        return self.verdict in FAILING_VERDICTS


@dataclass(frozen=True)
class SafeHarborCategoryView(Checked):
    """What the scan looked at of one Safe Harbor identifier category: its ``paragraph`` of
    45 CFR 164.514(b)(2)(i), its ``category``, its ``status`` (``checked``, ``partly
    checked``, ``not checked``), what ``checked_by`` it and what it does not see
    (``unseen``)."""

    paragraph: str | None
    category: str | None
    status: str | None
    checked_by: tuple[str, ...]
    unseen: str | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(data, checked_by=_strings(data.get("checked_by")))


@dataclass(frozen=True)
class IdentifierScanView(Checked):
    """An assessment's ``identifier_scan``: its options (``policy``, ``safe_harbor``, the
    ``allow_columns`` and declared ``quasi_identifiers``), ``passed``, the ``flagged`` and
    ``failing`` columns as the result lists them, a verdict per column, and under Safe
    Harbor what the scan looked at of each identifier category (``safe_harbor_categories``,
    empty when the result has none)."""

    schema: str | None
    policy: str | None
    safe_harbor: bool | None
    allow_columns: tuple[str, ...]
    quasi_identifiers: tuple[str, ...]
    passed: bool | None
    flagged: tuple[str, ...]
    failing: tuple[str, ...]
    columns: tuple[ScanColumnView, ...]
    safe_harbor_categories: tuple[SafeHarborCategoryView, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        options = mapping_or_none(data.get("options")) or {}
        columns = tuple(
            ScanColumnView.from_dict(c)
            for c in _items(data.get("columns"))
            if isinstance(c.get("column"), str)
        )
        return cls(
            schema=string_or_none(data.get("schema")),
            policy=string_or_none(options.get("policy")),
            safe_harbor=bool_or_none(options.get("safe_harbor")),
            allow_columns=names(options.get("allow_columns")),
            quasi_identifiers=names(options.get("quasi_identifiers")),
            passed=bool_or_none(data.get("passed")),
            flagged=names(data.get("flagged")),
            failing=names(data.get("failing")),
            columns=columns,
            safe_harbor_categories=tuple(
                SafeHarborCategoryView.from_dict(c)
                for c in _items(data.get("safe_harbor_categories"))
            ),
        )

    @property
    def flagged_columns(self) -> tuple[ScanColumnView, ...]:
        """The columns whose verdict is not ``clear``, in the scan's order."""
        return tuple(c for c in self.columns if c.flagged)

    @property
    def clear_columns(self) -> tuple[ScanColumnView, ...]:
        """The columns whose verdict is ``clear``."""
        return tuple(c for c in self.columns if not c.flagged)

"""Typed views of the direct-match and Datafly results (see :mod:`.view`, which exports them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from reident_airflow.report._format import is_number
from reident_airflow.report._input_view import InputView
from reident_airflow.report._read import (
    Checked,
    Number,
    mapping_or_none,
    names,
    number_or_none,
    optional_view,
    require_mapping,
    text_or_none,
)

__all__ = [
    "ColumnProtection",
    "DataflyOutput",
    "DataflySide",
    "DataflyStepView",
    "DataflyView",
    "DirectMatchView",
]


# ------------------------------------------------------------------------- direct match
@dataclass(frozen=True)
class ColumnProtection(Checked):
    """One column's direct match protection ``P`` (0-100) and what it was computed from."""

    column: str
    protection: Number
    matches: Number | None
    distinct_avatar_values: Number | None


#: The direct-match result's lists of column names.
_NAME_LISTS = ("below_target", "only_in_original", "only_in_avatar")


@dataclass(frozen=True)
class DirectMatchView(Checked):
    """A ``reident.direct_match/v1`` result. ``columns`` is ``None`` when the result lists
    none; columns without a name or a protection value are left out."""

    schema: str | None
    records: Number | None
    protection: Number | None
    target: Number | None
    passed: bool | None
    columns: tuple[ColumnProtection, ...] | None
    below_target: tuple[str, ...]
    key: str | None
    only_in_original: tuple[str, ...]
    only_in_avatar: tuple[str, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The view of a direct-match dict (:class:`InvalidInputError` if not a dict)."""
        d = require_mapping(data, "a direct-match result")
        raw = d.get("columns")
        columns = None
        if isinstance(raw, list) and raw:
            columns = tuple(
                ColumnProtection.read(c, column=str(c["column"]))
                for c in raw
                if isinstance(c, Mapping)
                and c.get("column") is not None
                and is_number(c.get("protection"))
            )
        return cls.read(
            d,
            columns=columns,
            key=str(d["key"]) if d.get("key") else None,
            **{side: names(d.get(side)) for side in _NAME_LISTS},
        )


# ------------------------------------------------------------------------------ Datafly
@dataclass(frozen=True)
class DataflyStepView(Checked):
    """One Datafly step: the column generalized, its new level, the records then below k."""

    generalized: str
    level: Number | None
    below_k: Number | None


@dataclass(frozen=True)
class DataflyOutput(Checked):
    """Where the anonymized table was written."""

    path: str | None
    format: str | None
    records: Number | None


@dataclass(frozen=True)
class DataflySide(Checked):
    """One side of the before/after view (``before``: the input as staged; ``after``: the
    release); a field is ``None`` when the result does not hold it."""

    records: Number | None
    classes: Number | None
    smallest_class: Number | None
    prosecutor_risk: Number | None
    journalist_risk: Number | None
    marketer_risk: Number | None
    records_at_risk: Number | None
    suppressed_records: Number | None
    precision: Number | None
    discernibility: Number | None


@dataclass(frozen=True)
class DataflyView(Checked):
    """A ``reident.datafly/v1`` result (or the engine's own dict, which has no ``passed``).

    ``levels`` and ``steps`` are ``None`` when the result holds none; ``reached`` is whether
    k was reached within the suppression limit. ``before`` and ``after`` are the input as
    staged and the release; ``fingerprint`` and ``output_fingerprint`` the fingerprints of
    the input (``"input"``) and of the written release.
    """

    schema: str | None
    records: Number | None
    k: Number | None
    achieved_k: Number | None
    suppressed_records: Number | None
    suppression_limit: Number | None
    passed: bool | None
    levels: tuple[tuple[str, Number | None], ...] | None
    top_levels: tuple[tuple[str, Number | None], ...]
    precision: Number | None
    discernibility: Number | None
    steps: tuple[DataflyStepView, ...] | None
    message: str | None
    output: DataflyOutput | None
    before: DataflySide | None
    after: DataflySide | None
    fingerprint: InputView | None
    output_fingerprint: InputView | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The view of a Datafly dict (:class:`InvalidInputError` if not a dict)."""
        d = require_mapping(data, "a Datafly result")
        levels, tops = mapping_or_none(d.get("levels")), mapping_or_none(d.get("top_levels")) or {}
        loss = mapping_or_none(d.get("information_loss")) or {}
        raw_steps = d.get("steps")
        steps = None
        if isinstance(raw_steps, list):
            steps = tuple(
                DataflyStepView.read(s, generalized=str(s.get("generalized")))
                for s in raw_steps
                if isinstance(s, Mapping)
            )
        return cls.read(
            d,
            levels=None if levels is None else _levels(levels),
            top_levels=_levels(tops),
            precision=number_or_none(loss.get("precision")),
            discernibility=number_or_none(loss.get("discernibility")),
            steps=steps,
            output=optional_view(_output, d.get("output")),
            before=optional_view(DataflySide.read, d.get("before")),
            after=optional_view(DataflySide.read, d.get("after")),
            fingerprint=optional_view(InputView.from_dict, d.get("input")),
            output_fingerprint=optional_view(InputView.from_dict, d.get("output_fingerprint")),
        )

    @property
    def reached(self) -> bool | None:
        """Whether k was reached: the result's ``passed``, else, for the engine's dict (levels
        but no ``passed``), whether the smallest class is at least k; ``None`` if unknown."""
        if self.passed is not None:
            return self.passed
        if self.k is not None and self.levels is not None:
            return self.achieved_k is not None and self.achieved_k >= self.k
        return None


def _levels(levels: Mapping[str, Any]) -> tuple[tuple[str, Number | None], ...]:
    return tuple((str(q), number_or_none(v)) for q, v in levels.items())


def _output(output: Mapping[str, Any]) -> DataflyOutput:
    return DataflyOutput.read(
        output,
        path=text_or_none(output.get("path")),
        format=text_or_none(output.get("format")),
    )

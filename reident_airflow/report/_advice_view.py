"""The typed view of a result's optional ``"advice"`` object: what to do about a breach of
``min_k`` (docs/contract.md §2, docs/metrics.md §10; see :mod:`.view`, which exports it).

The producer is :func:`reident_airflow.engine.advice.breach_advice`; this view reads its JSON
object back, tolerant of what a hand-edited file or an older producer leaves out, and words
the same facts as its ``describe()`` for a log or a summary (a missing number reads ``n/a``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from reident_airflow.report._format import NA, count, number, percent
from reident_airflow.report._read import (
    Checked,
    Number,
    mapping_or_none,
    number_or_none,
    optional_view,
)

__all__ = ["AdviceView", "DataflyOutlookView", "DriverView", "TradeoffRowView"]


@dataclass(frozen=True)
class DriverView(Checked):
    """The QI whose omission lowers the distinction the most: the full QI set's distinction
    (distinct combinations / records) and the distinction of the other QIs alone."""

    column: str | None
    distinction: Number | None
    distinction_without: Number | None

    def describe(self) -> str:
        return (
            f"'{self.column or NA}' drives the risk: without it the distinction falls from "
            f"{number(self.distinction)} to {number(self.distinction_without)}"
        )


def _levels(value: Any) -> tuple[tuple[str, Number | None], ...]:
    levels = mapping_or_none(value) or {}
    return tuple((str(name), number_or_none(v)) for name, v in levels.items())


def _labels(value: Any) -> tuple[tuple[str, str], ...]:
    labels = mapping_or_none(value) or {}
    return tuple((str(name), v) for name, v in labels.items() if isinstance(v, str))


@dataclass(frozen=True)
class TradeoffRowView(Checked):
    """A state on Datafly's path: each QI's level, the records then below ``k`` and the
    levels' labels (empty in a document without them)."""

    levels: tuple[tuple[str, Number | None], ...]
    suppressed: Number | None
    labels: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(
            data, levels=_levels(data.get("levels")), labels=_labels(data.get("labels"))
        )


@dataclass(frozen=True)
class DataflyOutlookView(Checked):
    """What Datafly at the breached ``k`` would do: when ``feasible``, the level it chooses
    for each QI (``levels``, in the QIs' order) and the records it suppresses; otherwise its
    most generalized attempt's levels and the records still below ``k`` there. ``labels``
    words the levels (``{qi: label}``; empty in a document that predates them) and
    ``tradeoff`` is the states on Datafly's path (empty likewise)."""

    k: Number | None
    feasible: bool | None
    levels: tuple[tuple[str, Number | None], ...]
    suppressed_records: Number | None
    below_k: Number | None
    suppression_limit: Number | None
    labels: tuple[tuple[str, str], ...] = ()
    tradeoff: tuple[TradeoffRowView, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        rows = data.get("tradeoff")
        return cls.read(
            data,
            levels=_levels(data.get("levels")),
            labels=_labels(data.get("level_labels")),
            tradeoff=tuple(
                TradeoffRowView.from_dict(r)
                for r in (rows if isinstance(rows, list) else [])
                if mapping_or_none(r) is not None
            ),
        )

    def label(self, name: str) -> str | None:
        """The label of ``name``'s level, if the document has one."""
        return dict(self.labels).get(name)

    def level_text(self, name: str, level: Number | None) -> str:
        """``age → intervals of width 10 (level 2)``; ``age→2`` without a label."""
        label = self.label(name)
        if label is None:
            return f"{name}→{count(level)}"
        return f"{name} → {label} (level {count(level)})"

    def describe(self) -> str:
        levels = ", ".join(self.level_text(name, level) for name, level in self.levels) or NA
        k = count(self.k)
        if self.feasible is True:
            return (
                f"Datafly at k={k} would generalize {levels} and suppress "
                f"{count(self.suppressed_records)} record(s)"
            )
        if self.feasible is False:
            return (
                f"Datafly cannot reach k={k} within its suppression limit of "
                f"{count(self.suppression_limit)} record(s): at {levels}, "
                f"{count(self.below_k)} record(s) are still below k"
            )
        return f"the result does not say whether Datafly can reach k={k}"


@dataclass(frozen=True)
class AdviceView(Checked):
    """The aggregates behind a breach of ``min_k = k``: the classes and records below ``k``,
    the driving QI (``None`` when the ranking did not cover it) and the Datafly outlook
    (``None`` without a hierarchy for every QI)."""

    k: Number | None
    records: Number | None
    classes: Number | None
    classes_below_k: Number | None
    records_below_k: Number | None
    driver: DriverView | None
    datafly: DataflyOutlookView | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(
            data,
            driver=optional_view(DriverView.read, data.get("driver")),
            datafly=optional_view(DataflyOutlookView.from_dict, data.get("datafly")),
        )

    @property
    def share_below_k(self) -> float | None:
        """The share of the records that are in classes smaller than ``k``."""
        if self.records_below_k is None or not self.records:
            return None
        return self.records_below_k / self.records

    def describe(self) -> str:
        """One paragraph for a summary or a log line: the facts of the engine's
        ``BreachAdvice.describe()``, with the share of records below ``k``."""
        share = self.share_below_k
        parts = [
            f"{count(self.classes_below_k)} of {count(self.classes)} classes, holding "
            f"{count(self.records_below_k)} of {count(self.records)} records"
            + (f" ({percent(share)})" if share is not None else "")
            + f", are smaller than k={count(self.k)}"
        ]
        parts += [x.describe() for x in (self.driver, self.datafly) if x is not None]
        return "; ".join(parts) + "."

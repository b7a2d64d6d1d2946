"""The verdict of any check's result as an alert may carry it (see :mod:`.view`, which exports
it): a typed, bounded view of the fields every gated result shares.

An alert leaves the platform (a webhook, an e-mail) and may be built from a result still in
memory (the exception of a failed gate, an XCom), so it reads the result more strictly than
the report does: a name is a non-empty string, never a number taken for one; a number is any
finite real (numpy's too), made a plain ``int`` or ``float``; a count a whole number (``5.0``
is not one); the advice only when every count behind it is there. And it reads no more than
an alert needs: the first :data:`MAX_ITEMS` items of a list, names cut to :data:`MAX_NAME`
characters and a report's location to :data:`MAX_LOCATION`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from reident_airflow.report._read import (
    Checked,
    bool_or_none,
    name_or_none,
    real_or_none,
    string_or_none,
    whole_or_none,
)
from reident_airflow.report._thresholds import BreachView

if TYPE_CHECKING:
    from reident_airflow.engine.advice import (
        BreachAdvice,
        DataflyOutlook,
        RiskDriver,
        TradeoffRow,
    )

__all__ = [
    "MAX_ITEMS",
    "MAX_LOCATION",
    "MAX_NAME",
    "ScanVerdict",
    "VerdictView",
    "bounded_breaches",
    "bounded_names",
]

#: The longest name (a column, a metric, a check, a schema) an alert carries.
MAX_NAME = 200
#: The most items of one list (breaches, names, Datafly's levels) an alert carries.
MAX_ITEMS = 100
#: The longest location or URL of a report an alert carries.
MAX_LOCATION = 2000


def _first_items(values: Any) -> list[Any]:
    """The first :data:`MAX_ITEMS` items of a list or tuple (not a string); else none."""
    if isinstance(values, str) or not isinstance(values, Sequence):
        return []
    return list(values)[:MAX_ITEMS]


def bounded_names(values: Any) -> tuple[str, ...]:
    """The names among the first items of ``values`` (columns, QIs), each cut to size."""
    found = (name_or_none(v, MAX_NAME) for v in _first_items(values))
    return tuple(n for n in found if n is not None)


def bounded_breaches(values: Any) -> tuple[BreachView, ...]:
    """The breaches (or warnings) among the first items of ``values`` that are objects; a
    metric that is no name reads ``"unknown"``, a value that is no number ``None``."""
    return tuple(
        BreachView(
            metric=name_or_none(item.get("metric"), MAX_NAME) or "unknown",
            observed=real_or_none(item.get("observed")),
            limit=real_or_none(item.get("limit")),
        )
        for item in _first_items(values)
        if isinstance(item, Mapping)
    )


def _location(value: Any) -> str | None:
    return value[:MAX_LOCATION] if isinstance(value, str) else None


def _driver(value: Any) -> RiskDriver | None:
    """The driving QI, when the result names it and gives both distinctions."""
    from reident_airflow.engine.advice import RiskDriver

    if not isinstance(value, Mapping):
        return None
    column = name_or_none(value.get("column"), MAX_NAME)
    full = real_or_none(value.get("distinction"))
    without = real_or_none(value.get("distinction_without"))
    if column is None or full is None or without is None:
        return None
    return RiskDriver(column=column, distinction=float(full), distinction_without=float(without))


def _outlook(value: Any) -> DataflyOutlook | None:
    """Datafly's outlook, when the result gives its ``k``; levels that are not a named count
    are left out."""
    from reident_airflow.engine.advice import DataflyOutlook

    k = whole_or_none(value.get("k")) if isinstance(value, Mapping) else None
    if k is None:
        return None
    raw = value.get("levels")
    items = list(raw.items())[:MAX_ITEMS] if isinstance(raw, Mapping) else []
    levels = {
        name: level
        for name, level in ((name_or_none(n, MAX_NAME), whole_or_none(v)) for n, v in items)
        if name and level is not None
    }
    return DataflyOutlook(
        k=k,
        feasible=value.get("feasible") is True,
        levels=levels,
        suppressed_records=whole_or_none(value.get("suppressed_records")),
        below_k=whole_or_none(value.get("below_k")),
        suppression_limit=whole_or_none(value.get("suppression_limit")),
        level_labels=_labels(value.get("level_labels"), levels),
        tradeoff=_tradeoff(value.get("tradeoff"), levels),
    )


def _labels(raw: Any, levels: Mapping[str, int]) -> dict[str, str] | None:
    """The level labels of the QIs in ``levels`` (``None`` when the result has none)."""
    if not isinstance(raw, Mapping):
        return None
    labels = {name: name_or_none(raw.get(name), MAX_NAME) for name in levels}
    return {name: label for name, label in labels.items() if label is not None}


def _tradeoff(raw: Any, levels: Mapping[str, int]) -> tuple[TradeoffRow, ...] | None:
    """The trade-off rows whose levels cover the QIs in ``levels`` and whose suppressed
    records are a count (``None`` when the result has none)."""
    from reident_airflow.engine.advice import TradeoffRow

    if not isinstance(raw, list):
        return None
    rows = []
    for row in raw[:MAX_ITEMS]:
        found = row.get("levels") if isinstance(row, Mapping) else None
        suppressed = whole_or_none(row.get("suppressed")) if isinstance(row, Mapping) else None
        if not isinstance(found, Mapping) or suppressed is None:
            continue
        state = {name: whole_or_none(found.get(name)) for name in levels}
        if all(v is not None for v in state.values()):
            rows.append(
                TradeoffRow(
                    levels={n: int(v or 0) for n, v in state.items()},
                    suppressed=suppressed,
                    labels=_labels(row.get("labels"), levels),
                )
            )
    return tuple(rows)


def _complete_advice(value: Any) -> BreachAdvice | None:
    """The advice on a ``min_k`` breach, as the engine's :class:`BreachAdvice` (which words
    it), when the result gives all its counts; else ``None``. The engine's types are imported
    only when there is an advice to read."""
    if not isinstance(value, Mapping):
        return None
    k, records, classes, classes_below, records_below = (
        whole_or_none(value.get(key))
        for key in ("k", "records", "classes", "classes_below_k", "records_below_k")
    )
    if k is None or records is None or classes is None:
        return None
    if classes_below is None or records_below is None:
        return None
    from reident_airflow.engine.advice import BreachAdvice

    return BreachAdvice(
        k=k,
        records=records,
        classes=classes,
        classes_below_k=classes_below,
        records_below_k=records_below,
        driver=_driver(value.get("driver")),
        datafly=_outlook(value.get("datafly")),
    )


@dataclass(frozen=True)
class ScanVerdict(Checked):
    """What an alert carries of an assessment's ``identifier_scan``: the ``policy`` and the
    names of the ``failing`` and ``flagged`` columns (bounded as every list of an alert is);
    never the evidence behind them."""

    policy: str | None
    failing: tuple[str, ...]
    flagged: tuple[str, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        options = data.get("options")
        policy = options.get("policy") if isinstance(options, Mapping) else None
        return cls(
            policy=name_or_none(policy, MAX_NAME),
            failing=bounded_names(data.get("failing")),
            flagged=bounded_names(data.get("flagged")),
        )

    def to_dict(self) -> dict[str, Any]:
        """The alert's ``identifier_scan`` field."""
        return {
            "policy": self.policy,
            "failing": list(self.failing),
            "flagged": list(self.flagged),
        }


@dataclass(frozen=True)
class VerdictView(Checked):
    """The verdict of a check's result (``reident.assessment/v1``, ``reident.direct_match/v1``,
    ``reident.datafly/v1``, or an older or partial one), read as the module's docstring says.

    ``records``, ``classes`` and ``k`` are counts; ``quasi_identifiers`` (an assessment) and
    ``below_target`` (a direct match) hold whichever the result has. ``advice`` (on a breach
    of ``min_k``) is the engine's :class:`~reident_airflow.engine.advice.BreachAdvice`, which
    words it, and ``None`` unless every count of it is given. ``outcome``, ``report_location``
    and ``report_url`` are what the operator adds to the result it acted on (its
    ``on_breach``, where it wrote the HTML report, its URL); ``None`` in a result as the
    engine wrote it. ``identifier_scan`` is the scan's policy and column names (``None``
    when no scan ran).
    """

    schema: str | None
    passed: bool | None
    breaches: tuple[BreachView, ...]
    warnings: tuple[BreachView, ...]
    records: int | None
    classes: int | None
    k: int | None
    quasi_identifiers: tuple[str, ...]
    below_target: tuple[str, ...]
    advice: BreachAdvice | None
    outcome: str | None
    report_location: str | None
    report_url: str | None
    identifier_scan: ScanVerdict | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The verdict of a result dict; any other value reads as an empty result."""
        d: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
        return cls(
            schema=name_or_none(d.get("schema"), MAX_NAME),
            passed=bool_or_none(d.get("passed")),
            breaches=bounded_breaches(d.get("breaches")),
            warnings=bounded_breaches(d.get("warnings")),
            records=whole_or_none(d.get("records")),
            classes=whole_or_none(d.get("classes")),
            k=whole_or_none(d.get("k")),
            quasi_identifiers=bounded_names(d.get("quasi_identifiers")),
            below_target=bounded_names(d.get("below_target")),
            advice=_complete_advice(d.get("advice")),
            outcome=string_or_none(d.get("outcome")),
            report_location=_location(d.get("report_location")),
            report_url=_location(d.get("report_url")),
            identifier_scan=(
                ScanVerdict.from_dict(scan)
                if isinstance(scan := d.get("identifier_scan"), Mapping)
                else None
            ),
        )

    @property
    def breached(self) -> bool:
        """Whether the result says it failed (``passed`` is false) and lists a breach."""
        return self.passed is False and bool(self.breaches)

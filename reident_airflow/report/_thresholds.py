"""One breached threshold as a reader of a result sees it (see :mod:`.view`, which exports it).

Which threshold gates a metric, and which way its limit points, is the engine's catalogue
(:data:`~reident_airflow.engine.catalogue.THRESHOLDS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from reident_airflow.engine.catalogue import threshold_of
from reident_airflow.report._read import Checked, Number

__all__ = ["BreachView"]


@dataclass(frozen=True)
class BreachView(Checked):
    """One breached threshold: the metric, its observed value and the limit it crossed."""

    metric: str
    observed: Number | None
    limit: Number | None

    @property
    def is_minimum(self) -> bool:
        """Whether the limit is a lower bound (``k``, l-diversity) rather than an upper one."""
        threshold = threshold_of(self.metric)
        return threshold is not None and threshold.minimum

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(data, metric=str(data.get("metric")))

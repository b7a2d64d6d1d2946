"""The gate's thresholds as every reader of a result names them, and one breached threshold
(see :mod:`.view`, which exports them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from reident_airflow.report._read import Checked, Number

__all__ = ["THRESHOLDS", "BreachView", "ThresholdSpec", "threshold_of"]


# ---------------------------------------------------------------------------- thresholds
@dataclass(frozen=True)
class ThresholdSpec:
    """What one threshold of the gate checks (``Thresholds`` in the engine).

    ``metric`` is the dotted name breaches carry (``l_diversity.<column>.distinct`` for
    ``min_l``: one metric per sensitive column); ``label`` what the report calls the check.
    """

    name: str
    metric: str
    label: str

    @property
    def minimum(self) -> bool:
        """Whether the observed value must be at least the limit (``min_k``, ``min_l``)
        rather than at most (the ``max_`` risks)."""
        return self.name.startswith("min_")

    @property
    def share(self) -> bool:
        """Whether the limit is a share of records (the risks) rather than a count."""
        return not self.minimum


def _catalogue(**specs: tuple[str, str]) -> Mapping[str, ThresholdSpec]:
    return {name: ThresholdSpec(name, metric, label) for name, (metric, label) in specs.items()}


_GLOBAL_RISK = "Expected re-identifications (sampling weights), share of records"

#: The gate's thresholds in the order the report lists them (``docs/contract.md``).
THRESHOLDS = _catalogue(
    max_highest_risk=("prosecutor.highest_risk", "Highest re-identification risk (prosecutor)"),
    max_average_risk=("prosecutor.average_risk", "Average re-identification risk (prosecutor)"),
    max_records_at_risk=("prosecutor.records_at_risk", "Records at risk"),
    min_k=("k", "Smallest class size k"),
    max_global_risk=("individual_risk.global_risk_share", _GLOBAL_RISK),
    min_l=("l_diversity", "Distinct l-diversity"),
)


def threshold_of(metric: str) -> ThresholdSpec | None:
    """The threshold that gates ``metric`` (a breach's metric name), or ``None``."""
    if metric.startswith("l_diversity.") and metric.endswith(".distinct"):
        return THRESHOLDS["min_l"]
    return next((s for s in THRESHOLDS.values() if s.metric == metric), None)


@dataclass(frozen=True)
class BreachView(Checked):
    """One breached threshold: the metric, its observed value and the limit it crossed."""

    metric: str
    observed: Number | None
    limit: Number | None

    @property
    def is_minimum(self) -> bool:
        """Whether the limit is a lower bound (``k``, l-diversity) rather than an upper one."""
        spec = threshold_of(self.metric)
        return spec is not None and spec.minimum

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(data, metric=str(data.get("metric")))

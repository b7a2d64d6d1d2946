"""Sample-based re-identification risk (docs/metrics.md §2-§3), from the class-size histogram.

Prosecutor model (El Emam & Dankar 2008; ARX's ``RiskModelSampleRisks``): a record in a class
of size ``f`` is re-identified with probability ``1/f``. Every measure here is a function of
the histogram ``s -> c_s`` (number of classes of size ``s``); shares are computed as integer
counts divided by ``n`` so that they agree bit for bit with ARX 3.9.2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reident_airflow.engine._arrays import IntArray
from reident_airflow.engine.defaults import DEFAULT_RECORD_THRESHOLD
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.engine.records import field_dict

__all__ = [
    "DEFAULT_RECORD_THRESHOLD",
    "RISK_BANDS",
    "RISK_MEASURE_KEYS",
    "RiskBand",
    "RiskMeasures",
    "SampleRisk",
    "records_at_risk",
    "risk_distribution",
    "risk_measures_dict",
    "sample_risk",
    "validate_threshold",
]


#: Upper edges of ARX's risk bands; band i is ``(RISK_BANDS[i-1], RISK_BANDS[i]]``.
RISK_BANDS: tuple[float, ...] = (
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 0.001, 0.01,
    0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1,
    0.125, 0.143, 0.167, 0.2, 0.25, 0.334, 0.5, 1.0,
)  # fmt: skip


def validate_threshold(value: float, name: str = "record threshold") -> float:
    """A risk threshold must be a number in ``(0, 1]``."""
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be a number in (0, 1], got {value!r}") from None
    if not (0.0 < t <= 1.0):  # also rejects NaN
        raise InvalidInputError(f"{name} must be in (0, 1], got {t!r}")
    return t


@dataclass(frozen=True)
class RiskBand:
    """Share of records whose risk lies in ``(lower, upper]``."""

    lower: float
    upper: float
    records: float

    def to_dict(self) -> dict[str, Any]:
        return {"upper": self.upper, "records": self.records}


@dataclass(frozen=True, kw_only=True)
class RiskMeasures:
    """The six measures every attacker model reports (its keys are :data:`RISK_MEASURE_KEYS`).

    The prosecutor on the sample and the journalist (on a register, or estimated from the
    sampling weights) answer the same questions over different risks per record, so they
    share these fields and their JSON.
    """

    record_threshold: float
    highest_risk: float
    lowest_risk: float
    average_risk: float
    records_at_risk: float
    records_affected_by_highest_risk: float

    def to_dict(self) -> dict[str, Any]:
        """The measures as the assessment JSON holds them, in contract order."""
        return risk_measures_dict(self)


@dataclass(frozen=True, kw_only=True)
class SampleRisk(RiskMeasures):
    """Prosecutor-model measures of one table (all shares of ``records``)."""

    records: int
    classes: int
    sample_uniques: float


#: The keys of one attacker model's measures in the assessment JSON (docs/contract.md).
RISK_MEASURE_KEYS = (
    "highest_risk",
    "lowest_risk",
    "average_risk",
    "records_at_risk",
    "record_threshold",
    "records_affected_by_highest_risk",
)


def risk_measures_dict(measures: Any) -> dict[str, Any]:
    """The JSON of an attacker model's measures (prosecutor, or journalist on a register)."""
    return field_dict(measures, RISK_MEASURE_KEYS)


def _check_histogram(sizes: IntArray, counts: IntArray) -> tuple[int, int]:
    if sizes.shape != counts.shape or sizes.ndim != 1:
        raise InvalidInputError("class-size histogram: sizes and counts must be 1-D and aligned")
    if sizes.shape[0] == 0:
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    if (sizes <= 0).any() or (counts <= 0).any() or (np.diff(sizes) <= 0).any():
        raise InvalidInputError("class-size histogram must have positive, ascending sizes")
    n = int((sizes * counts).sum())
    u = int(counts.sum())
    return n, u


def records_at_risk(sizes: IntArray, counts: IntArray, threshold: float) -> float:
    """Share of records whose risk ``1/f`` is strictly greater than ``threshold``."""
    n, _ = _check_histogram(sizes, counts)
    t = validate_threshold(threshold)
    at_risk = (1.0 / sizes.astype(np.float64)) > t
    return int((sizes[at_risk] * counts[at_risk]).sum()) / n


def sample_risk(
    sizes: IntArray, counts: IntArray, record_threshold: float = DEFAULT_RECORD_THRESHOLD
) -> SampleRisk:
    """Prosecutor measures from the histogram (``sizes`` ascending, ``counts`` = ``c_s``)."""
    n, u = _check_histogram(sizes, counts)
    t = validate_threshold(record_threshold)
    smallest = int(sizes[0])
    uniques = int(counts[0]) if smallest == 1 else 0
    return SampleRisk(
        records=n,
        classes=u,
        record_threshold=t,
        highest_risk=1.0 / smallest,
        lowest_risk=1.0 / int(sizes[-1]),
        # ARX: one over the average class size (bit-for-bit: not u / n, which rounds differently)
        average_risk=1.0 / (n / u),
        records_at_risk=records_at_risk(sizes, counts, t),
        records_affected_by_highest_risk=smallest * int(counts[0]) / n,
        sample_uniques=uniques / n,
    )


def risk_distribution(
    sizes: IntArray, counts: IntArray, bands: Sequence[float] = RISK_BANDS
) -> tuple[RiskBand, ...]:
    """Share of records in each of ARX's risk bands ``(previous edge, edge]``."""
    n, _ = _check_histogram(sizes, counts)
    edges = np.asarray(bands, dtype=np.float64)
    risk = 1.0 / sizes.astype(np.float64)
    # band index: first edge >= risk
    idx = np.searchsorted(edges, risk, side="left")
    per_band = np.bincount(idx, weights=(sizes * counts).astype(np.float64), minlength=len(edges))
    out = []
    lower = 0.0
    for i, upper in enumerate(edges):
        out.append(RiskBand(lower=lower, upper=float(upper), records=float(per_band[i]) / n))
        lower = float(upper)
    return tuple(out)

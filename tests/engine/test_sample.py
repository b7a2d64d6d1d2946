"""Sample (prosecutor) risk from the histogram: hand-computed cases and ARX 3.9.2 numbers."""

from __future__ import annotations

import numpy as np
import pytest

from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.engine.sample import (
    RISK_BANDS,
    records_at_risk,
    risk_distribution,
    sample_risk,
)

I64 = np.int64


def h(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([s for s, _ in pairs], dtype=I64), np.array([c for _, c in pairs], dtype=I64)


def test_hand_computed_measures() -> None:
    # classes of sizes 1, 2, 2, 5 -> n = 10, u = 4
    sizes, counts = h([(1, 1), (2, 2), (5, 1)])
    r = sample_risk(sizes, counts, 0.2)
    assert r.records == 10 and r.classes == 4
    assert r.highest_risk == 1.0 and r.lowest_risk == 0.2
    assert r.average_risk == pytest.approx(0.4)  # 1 / (10 / 4)
    assert r.records_affected_by_highest_risk == 0.1  # 1 record of 10 in the size-1 class
    assert r.sample_uniques == 0.1
    # risk > 0.2: sizes 1 and 2 (1/5 = 0.2 is not strictly greater) -> 5 records of 10
    assert r.records_at_risk == 0.5


def test_threshold_is_strict() -> None:
    sizes, counts = h([(4, 1), (5, 1)])
    # at t = 0.2 classes of size 1..4 count (metrics.md §2): the 4 records of size 4
    assert records_at_risk(sizes, counts, 0.2) == 4 / 9
    assert records_at_risk(sizes, counts, 0.25) == 0.0


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan"), "abc"])
def test_threshold_outside_unit_interval(bad: object) -> None:
    sizes, counts = h([(1, 1)])
    with pytest.raises(InvalidInputError):
        sample_risk(sizes, counts, bad)  # type: ignore[arg-type]


def test_empty_histogram() -> None:
    with pytest.raises(EmptyDatasetError):
        sample_risk(np.array([], dtype=I64), np.array([], dtype=I64))


def test_risk_distribution_bands() -> None:
    # sizes 1 (risk 1 -> band (0.5,1]), 3 (0.333.. -> (0.25,0.334]), 100 (0.01 -> (0.009..,0.01])
    sizes, counts = h([(1, 1), (3, 1), (100, 1)])
    bands = risk_distribution(sizes, counts)
    assert len(bands) == len(RISK_BANDS)
    by_upper = {b.upper: b.records for b in bands}
    assert by_upper[1.0] == 1 / 104
    assert by_upper[0.334] == 3 / 104
    assert by_upper[0.01] == 100 / 104
    assert sum(b.records for b in bands) == pytest.approx(1.0)
    assert bands[0].lower == 0.0 and bands[1].lower == 1e-8

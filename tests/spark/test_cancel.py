"""Issue 38, item 6: ``SparkSource.cancel()`` (an operator's ``on_kill``) interrupts the
Spark jobs the source started, from another thread, on a classic session."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from reident_airflow.engine.options import AssessmentOptions
from reident_airflow.sources.spark import SparkSource

pytestmark = pytest.mark.spark


def test_cancel_interrupts_the_sources_jobs(classic_spark: Any) -> None:
    # ten billion generated rows grouped into a million classes: far longer than the test
    frame = classic_spark.range(0, 10_000_000_000).selectExpr("CAST(id % 1000003 AS STRING) AS zip")
    raised: list[BaseException] = []
    ended: list[float] = []
    started = threading.Event()

    def count() -> None:
        with SparkSource(frame) as source:
            holder.append(source)
            started.set()
            try:
                source.count(AssessmentOptions(quasi_identifiers=("zip",)))
            except BaseException as exc:
                raised.append(exc)
            ended.append(time.monotonic())

    holder: list[SparkSource] = []
    worker = threading.Thread(target=count, daemon=True)
    worker.start()
    assert started.wait(30)
    tracker = classic_spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 60
    while not tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tracker.getActiveJobsIds(), "no Spark job started"
    holder[0].cancel()
    cancelled = time.monotonic()
    worker.join(30)
    assert ended and ended[0] - cancelled < 30
    assert raised, "the count was not interrupted"
    deadline = time.monotonic() + 10
    while tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not tracker.getActiveJobsIds()

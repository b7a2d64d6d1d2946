"""One Spark session builder, one lifecycle (``sources.spark_session``): a classic session is
got (the process's own, shared) and never stopped; a Spark Connect session is created for
the block and stopped after it."""

from __future__ import annotations

from typing import Any

import pytest

from reident_airflow.sources.spark_session import spark_session


def test_a_classic_session_is_the_process_own_and_stays_open(classic_spark: Any) -> None:
    with spark_session(master="local[2]", conf={"spark.sql.shuffle.partitions": "2"}) as got:
        assert got is classic_spark  # got, not created: other code of the process shares it
        assert got.range(3).count() == 3
    assert classic_spark.range(2).count() == 2  # not stopped


def test_a_connect_session_is_stopped_when_its_block_ends(connect_server: Any) -> None:
    with spark_session(remote=connect_server.url) as got:
        assert got.range(4).count() == 4
    with pytest.raises(Exception):  # noqa: B017 - pyspark's own error for a stopped session
        got.range(1).count()


def test_exactly_one_of_master_and_remote() -> None:
    with pytest.raises(ValueError, match="exactly one"), spark_session():
        pass
    both = spark_session(master="local[1]", remote="sc://localhost:15002")
    with pytest.raises(ValueError, match="exactly one"), both:
        pass

"""``reident assess --engine spark NEW --previous OLD`` (issue 28): the releases of
tests/cli/test_previous_release.py as Parquet, compared by a local Spark session in a
subprocess, give the numbers worked out by hand there."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_previous_release import CANDIDATE, GATE, PREVIOUS, _check
from tests.cli.test_spark_cli import SPARK_CONF, _reident


def test_parquet_paths_on_local_spark(tmp_path: Path) -> None:
    PREVIOUS.to_parquet(tmp_path / "old.parquet", index=False)
    CANDIDATE.to_parquet(tmp_path / "new.parquet", index=False)
    code, doc, err = _reident(
        "--engine",
        "spark",
        str(tmp_path / "new.parquet"),
        *GATE,
        "--previous",
        str(tmp_path / "old.parquet"),
        "--no-ranking",
        "--no-advice",
        "--no-fingerprint",
        "--spark-master",
        "local[2]",
        *SPARK_CONF,
    )
    assert code == 1, err[-2000:]
    assert doc.pop("advice") is None and doc.pop("input") is None
    _check(doc)

"""Datafly on Spark (docs/metrics.md §9): the search on histograms Spark counts, the release
written by Spark.

The rows never reach the driver. What does:

- each QI's distinct values with their record counts (one ``groupBy`` per QI): they are looked
  up in the QI's hierarchy exactly as the pandas path looks them up
  (:func:`~reident_airflow.engine.hierarchies.value_text`), which gives each value its code at
  every level and the distinct labels per level; a value the hierarchy does not cover is the
  engine's error (counts only);
- per step of the search, the class-size histogram at the levels the search asks for (one
  ``groupBy`` of the level codes, then one of the class sizes): one row per distinct size.

The codes reach the rows by a broadcast join of each QI's small mapping table (value -> code
per level, null-safe); the coded rows are cached for the search. The search is the engine's
own (:func:`~reident_airflow.engine.datafly_search.datafly_search`), so levels, steps and the
suppressed count equal the pandas :func:`~reident_airflow.engine.datafly.datafly` on the same
data. The release (:attr:`SparkDataflyResult.table`) is a lazy DataFrame: the original
columns, each QI holding its label at the chosen level (text), the rows of classes below k
removed; :func:`write_release_table` and :func:`write_release_path` write it once under a new
name and swap it in.

One writer per target, on Spark: the new table or folder has a name unique to the run
(``<name>_reident_new_<12 hex>``), so two runs never write into one, and each swap puts one
run's whole release in place: rows of two runs never mix. A local path (no scheme, or
``file://``) is also locked as a file target is (``<path>.reident-lock`` beside it, an
``flock`` the driver holds for the write and the renames): a second run waits for the first,
at most ``lock_timeout`` seconds. A catalog table and an ``hdfs://`` path have no lock: two
runs that swap at the same instant can leave the release of either (the later rename wins),
or fail one of them on a name the other just took, with its release left in place, whole.
Which run wins is then left to the schedule: give the DAG ``max_active_runs=1``.

Spark is imported only when a function here runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from reident_airflow._atomic import DEFAULT_LOCK_TIMEOUT, target_lock
from reident_airflow.engine.datafly import DataflySummary, datafly_inputs, datafly_summary
from reident_airflow.engine.datafly_search import (
    Histogram,
    SearchSpace,
    datafly_search,
)
from reident_airflow.engine.encoding import validate_quasi_identifiers
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.hierarchies import Hierarchy, uncovered_error, value_text
from reident_airflow.sources.spark_grouping import column_of, functions, window

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "SparkDataflyResult",
    "datafly_spark",
    "write_frame_path",
    "write_release_path",
    "write_release_table",
]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class SparkDataflyResult(DataflySummary):
    """The outcome of :func:`datafly_spark`: the fields of
    :class:`~reident_airflow.engine.datafly.DataflyResult`, ``table`` a Spark DataFrame;
    ``to_dict()`` the same ``reident.datafly/v1`` JSON (aggregates only)."""

    table: Any


@dataclass(frozen=True)
class _Coded:
    """One QI's mapping: its distinct values, their code and label at every level."""

    name: str
    values: list[Any]
    codes: list[list[int]]  # codes[level][i] of values[i]
    labels: list[list[str]]  # labels[level][i] of values[i]
    cards: tuple[int, ...]


def _encode(frame: DataFrame, name: str, hierarchy: Hierarchy) -> _Coded:
    """The QI's distinct values (with counts) from Spark, looked up in the hierarchy."""
    rows = frame.groupBy(column_of(frame, name).alias("v")).count().collect()
    values = [r["v"] for r in rows]
    counts = np.array([int(r["count"]) for r in rows], dtype=np.int64)
    texts = np.array([value_text(v) for v in values], dtype=object)
    positions = hierarchy.positions(texts)
    uncovered = positions < 0
    if uncovered.any():
        distinct = len(set(texts[uncovered].tolist()))
        raise uncovered_error(name, distinct, int(counts[uncovered].sum()))
    codes, labels, cards = [], [], []
    for level in range(hierarchy.levels):
        column = hierarchy.level_column(level)[positions]
        level_codes, uniques = pd.factorize(column)
        codes.append([int(c) for c in level_codes])
        labels.append([str(x) for x in column])
        cards.append(len(uniques))
    return _Coded(name, values, codes, labels, tuple(cards))


def _code_column(i: int, level: int) -> str:
    return f"reident_q{i}_l{level}"


def _mapping(frame: DataFrame, i: int, coded: _Coded) -> DataFrame:
    """The QI's small table: value (its Spark type), code and label at every level."""
    from pyspark.sql import types as T

    fields = [T.StructField("reident_value", frame.schema[coded.name].dataType, True)]
    levels = range(len(coded.cards))
    fields += [T.StructField(_code_column(i, lv), T.IntegerType(), False) for lv in levels]
    fields += [T.StructField(f"reident_q{i}_label{lv}", T.StringType(), False) for lv in levels]
    rows = [
        (v, *(coded.codes[lv][j] for lv in levels), *(coded.labels[lv][j] for lv in levels))
        for j, v in enumerate(coded.values)
    ]
    return frame.sparkSession.createDataFrame(rows, schema=T.StructType(fields))


def _joined(frame: DataFrame, coded: list[_Coded]) -> DataFrame:
    """The rows with every QI's codes and labels, by broadcast joins on the values."""
    F = functions(frame)
    out = frame
    for i, c in enumerate(coded):
        mapping = _mapping(frame, i, c)
        condition = column_of(frame, c.name).eqNullSafe(mapping["reident_value"])
        out = out.join(F.broadcast(mapping), condition).drop("reident_value")
    return out


def _histogram_at(coded_rows: DataFrame, levels: Sequence[int]) -> Histogram:
    F = functions(coded_rows)
    keys = [_code_column(i, lv) for i, lv in enumerate(levels)]
    sizes = coded_rows.groupBy(*keys).agg(F.count(F.lit(1)).alias("reident_size"))
    rows = sizes.groupBy("reident_size").agg(F.count(F.lit(1)).alias("n")).collect()
    rows.sort(key=lambda r: int(r["reident_size"]))
    return (
        np.array([int(r["reident_size"]) for r in rows], dtype=np.int64),
        np.array([int(r["n"]) for r in rows], dtype=np.int64),
    )


def datafly_spark(
    frame: DataFrame,
    qis: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    k: int,
    suppression_limit: int | float | None = None,
    progress: Callable[[str], None] = _LOG.info,
) -> SparkDataflyResult:
    """k-anonymize a Spark DataFrame with Datafly, as
    :func:`~reident_airflow.engine.datafly.datafly` does a pandas one (same arguments, same
    errors); the search runs on histograms Spark counts (module docstring). Each step can take
    a Spark job or more, so ``progress`` reports them by default, to this module's logger at
    INFO (column names and counts only)."""
    validate_quasi_identifiers(qis, [str(c) for c in frame.columns])  # before counting rows
    n = int(frame.count())
    names, k, limit = datafly_inputs(frame.columns, qis, hierarchies, n, k, suppression_limit)
    coded = [_encode(frame, q, hierarchies[q]) for q in names]
    rows = _joined(frame, coded)
    keys = [_code_column(i, lv) for i, c in enumerate(coded) for lv in range(len(c.cards))]
    search_rows = rows.select(*keys).cache()
    space = SearchSpace(names=names, cards=tuple(c.cards for c in coded))
    try:
        counted: list[Histogram] = []  # the first is the input's, as staged

        def histogram_at(lv: Sequence[int]) -> Histogram:
            counted.append(_histogram_at(search_rows, lv))
            return counted[-1]

        levels, steps = datafly_search(space, histogram_at, k=k, limit=limit, progress=progress)
        final = _histogram_at(search_rows, levels)
    finally:
        search_rows.unpersist()
    summary = datafly_summary(space, levels, steps, final, k=k, limit=limit, initial=counted[0])
    return SparkDataflyResult(
        **summary.summary_fields(), table=_table(frame, rows, coded, levels, k)
    )


def _table(
    frame: DataFrame, rows: DataFrame, coded: list[_Coded], levels: list[int], k: int
) -> DataFrame:
    """The release, lazily: the original columns, each QI its label at its final level, the
    rows of classes below ``k`` removed."""
    F = functions(frame)
    label = {c.name: F.col(f"reident_q{i}_label{levels[i]}") for i, c in enumerate(coded)}
    by_class = window(frame).partitionBy(*label.values())
    sized = rows.withColumn("reident_size", F.count(F.lit(1)).over(by_class))
    return sized.where(F.col("reident_size") >= k).select(
        *(label[c].alias(c) if c in label else column_of(frame, c) for c in frame.columns)
    )


def write_release_table(result: SparkDataflyResult, table: str) -> None:
    """Write the release once as a new table, then swap it in under ``table``: readers never
    see a half-written table, and a failed write leaves ``table`` as it was. The swap is two
    catalog renames (the old table aside, the new one into place), so between them, for the
    time of one metastore call, the name is absent: a catalog without transactions offers no
    single-step replace (Delta's would). ``table`` is a name as Spark SQL takes it
    (``db.name``); its parts are quoted. No lock: see the module docstring for what two runs
    writing one table at once can and cannot do."""
    session = result.table.sparkSession
    parts = table.split(".")
    suffix = uuid.uuid4().hex[:12]
    staged = [*parts[:-1], f"{parts[-1]}_reident_new_{suffix}"]
    retired = [*parts[:-1], f"{parts[-1]}_reident_old_{suffix}"]
    result.table.write.saveAsTable(".".join(staged))
    exists = session.catalog.tableExists(table)
    if exists:
        session.sql(f"ALTER TABLE {_quoted(parts)} RENAME TO {_quoted(retired)}")
    session.sql(f"ALTER TABLE {_quoted(staged)} RENAME TO {_quoted(parts)}")
    if exists:
        session.sql(f"DROP TABLE {_quoted(retired)}")


def _quoted(parts: Sequence[str]) -> str:
    return ".".join("`" + part.replace("`", "``") + "`" for part in parts)


def write_release_path(
    result: SparkDataflyResult,
    path: str,
    *,
    file_format: str = "parquet",
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Write the release to ``path`` atomically (:func:`write_frame_path`)."""
    write_frame_path(result.table, path, file_format=file_format, lock_timeout=lock_timeout)


def _local_path(path: str) -> str | None:
    """The driver's file of ``path`` when it is local (no scheme, or ``file:``), else None."""
    if "://" not in path and not path.startswith("file:"):
        return path
    if path.startswith("file://"):
        return path[len("file://") :]
    if path.startswith("file:"):
        return path[len("file:") :]
    return None


def write_frame_path(
    frame: DataFrame,
    path: str,
    *,
    file_format: str = "parquet",
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Write ``frame`` once to a sibling of ``path``, then swap it in: the old folder is
    renamed aside, the new one renamed to ``path``, the old one deleted. A failed write leaves
    ``path`` as it was. Renames go through Hadoop's file system (any scheme Spark reads) on a
    classic session; a Spark Connect session has no access to it, and is refused. A local
    ``path`` is held locked for the write and the renames (``<path>.reident-lock``; another
    run waits at most ``lock_timeout`` seconds, module docstring)."""
    local = _local_path(path)
    if local:  # Spark would make the folders; the lock file goes beside the target
        os.makedirs(os.path.dirname(os.path.abspath(local)), exist_ok=True)
    lock = target_lock(local, lock_timeout) if local else contextlib.nullcontext()
    with lock:
        _write_frame_path(frame, path, file_format)


def _write_frame_path(frame: DataFrame, path: str, file_format: str) -> None:
    session = frame.sparkSession
    jvm = getattr(session, "_jvm", None)
    if jvm is None:
        raise InvalidInputError(
            "writing a release to a path needs a classic Spark session (its file system); "
            "over Spark Connect write it as a table (write_release_table)"
        )
    suffix = uuid.uuid4().hex[:12]
    staged, retired = f"{path}.reident-new-{suffix}", f"{path}.reident-old-{suffix}"
    frame.write.format(file_format).save(staged)
    hadoop = jvm.org.apache.hadoop.fs.Path
    target = hadoop(path)
    fs = target.getFileSystem(session._jsc.hadoopConfiguration())
    exists = bool(fs.exists(target))
    if exists and not fs.rename(target, hadoop(retired)):
        fs.delete(hadoop(staged), True)
        raise OSError(f"could not move the previous release aside (path {path!r})")
    if not fs.rename(hadoop(staged), target):
        if exists:
            fs.rename(hadoop(retired), target)
        raise OSError(f"could not move the new release into place (path {path!r})")
    if exists:
        fs.delete(hadoop(retired), True)

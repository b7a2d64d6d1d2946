"""Issue 18 acceptance: the assessment of a Spark DataFrame against Spark's bare aggregation.

From the repository root::

    .venv/bin/python bench/bench_spark.py                  # shapes A and B, 10M rows
    .venv/bin/python bench/bench_spark.py --shapes A --repeat 3 --no-ranking

What it does:

1. generates the Parquet files of shapes A and B of ``bench/bench_grouping.py`` if absent
   (its own seeded generators: the same files);
2. starts one local[2] SparkSession (``--driver-memory``, default 4g; shuffle partitions
   ``--partitions``, default 8) and warms it with one bare aggregation per shape;
3. per shape, reads the file with ``spark.read.parquet`` and runs, ``--repeat`` rounds with the
   order rotated by one each round, the contenders:

   - ``bare``: Spark's own ``df.groupBy(qis).count().count()``;
   - ``verdict``: ``assess_spark_frame`` without the QI ranking (the class-size histogram);
   - ``ranking``: ``assess_spark_frame`` with the default ranking (each single QI, each
     subset with one QI left out, the full set), unless ``--no-ranking``;
   - ``lattice``: the same with every QI subset (``max_subset_size`` = the QI count), with
     ``--lattice``;

   keeping each contender's best wall time, and, for the assessments, how that time divides
   between the Spark jobs (planning, executors, the collect of the aggregates or of the
   ranking's class table) and the driver's Python (the engine's arithmetic on what was
   collected), and how many rows were collected;
4. prints a markdown table per shape with the ratio to ``bare`` (target: verdict <= 1.2x)
   and the load average before and after, and writes the raw figures to
   ``bench/data/spark_results_<UTC time>.json``.

Exit code: 0 when the verdict's ratio is at most 1.2 on every shape, 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

from bench_grouping import SHAPES  # noqa: E402 - the bench folder is not a package

TARGET = 1.2


class JobClock:
    """Wraps ``spark_grouping.collect_rows`` and the ranking's ``class_table_arrow`` to time
    the Spark jobs and count the rows they collect."""

    def __init__(self) -> None:
        import reident_airflow.sources.spark as spark_source
        import reident_airflow.sources.spark_grouping as grouping

        self.original = grouping.collect_rows
        self.original_table = spark_source.class_table_arrow
        self.seconds = 0.0
        self.rows = 0
        grouping.collect_rows = self._timed
        spark_source.class_table_arrow = self._timed_table

    def _timed(self, frame: Any) -> list[tuple[Any, ...]]:
        start = time.perf_counter()
        rows = self.original(frame)
        self.seconds += time.perf_counter() - start
        self.rows += len(rows)
        return rows

    def _timed_table(self, source: Any, pos: Any, limit: int) -> Any:
        start = time.perf_counter()
        table = self.original_table(source, pos, limit)
        self.seconds += time.perf_counter() - start
        self.rows += 0 if table is None else table.num_rows
        return table

    def reset(self) -> None:
        self.seconds, self.rows = 0.0, 0


def _session(driver_memory: str, partitions: int) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("reident-bench-spark")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _contenders(
    df: Any, qis: tuple[str, ...], ranking: bool, lattice: bool
) -> dict[str, Callable[[], Any]]:
    from reident_airflow.engine.options import AssessmentOptions
    from reident_airflow.sources.spark import assess_spark_frame

    out: dict[str, Callable[[], Any]] = {
        "bare": lambda: df.groupBy(*qis).count().count(),
        "verdict": lambda: assess_spark_frame(
            df, AssessmentOptions(quasi_identifiers=qis, rank_attributes=False, region="usa")
        ),
    }
    if ranking:
        out["ranking"] = lambda: assess_spark_frame(
            df, AssessmentOptions(quasi_identifiers=qis, region="usa")
        )
    if lattice:
        out["lattice"] = lambda: assess_spark_frame(
            df, AssessmentOptions(quasi_identifiers=qis, region="usa", max_subset_size=len(qis))
        )
    return out


def run_shape(spark: Any, name: str, args: argparse.Namespace, clock: JobClock) -> dict[str, Any]:
    shape = SHAPES[name]
    repeat = args.repeat
    if not shape.path.exists():
        print(f"generating {shape.path.name} ...", flush=True)
        shape.generate()
    qis = shape.qis[: args.qi_count] if args.qi_count else shape.qis
    df = spark.read.parquet(str(shape.path)).select(*qis)
    contenders = _contenders(df, qis, not args.no_ranking, args.lattice)
    contenders["bare"]()  # warm: the file's pages and the session's code paths
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in contenders}
    order = list(contenders)
    for round_ in range(repeat):
        for c in order[round_ % len(order) :] + order[: round_ % len(order)]:
            clock.reset()
            start = time.perf_counter()
            result = contenders[c]()
            wall = time.perf_counter() - start
            runs[c].append({"wall": wall, "spark": clock.seconds, "rows": clock.rows})
            if c == "verdict":
                classes = result.classes
            print(f"  {name} {c:8s} {wall:7.2f} s", flush=True)
    best = {c: min(r, key=lambda x: x["wall"]) for c, r in runs.items()}
    return {
        "shape": name,
        "qis": list(qis),
        "rows": shape.rows,
        "classes": classes,
        "runs": runs,
        "best": best,
    }


def _table(result: dict[str, Any]) -> str:
    best = result["best"]
    bare = best["bare"]["wall"]
    lines = [
        f"### shape {result['shape']}: {result['rows']:,} rows, {len(result['qis'])} QIs, "
        f"{result['classes']:,} classes",
        "",
        "| contender | best wall (s) | x bare | Spark jobs (s) | driver Python (s) "
        "| rows collected |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for c, r in best.items():
        spark_s = "" if c == "bare" else f"{r['spark']:.2f}"
        driver = "" if c == "bare" else f"{r['wall'] - r['spark']:.3f}"
        rows = "" if c == "bare" else f"{int(r['rows'])}"
        ratio = r["wall"] / bare
        lines.append(f"| {c} | {r['wall']:.2f} | {ratio:.2f} | {spark_s} | {driver} | {rows} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--shapes", default="A,B")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--no-ranking", action="store_true")
    parser.add_argument("--lattice", action="store_true", help="also rank every QI subset")
    parser.add_argument("--qi-count", type=int, help="only the shape's first N QIs")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    spark = _session(args.driver_memory, args.partitions)
    session_start = time.perf_counter() - started
    clock = JobClock()
    results = [run_shape(spark, s, args, clock) for s in args.shapes.split(",")]
    load_after = os.getloadavg()
    print(f"\nsession start {session_start:.1f} s; load average before {load_before}, ")
    print(f"after {load_after} ({os.cpu_count()} CPUs)\n")
    for r in results:
        print(_table(r) + "\n")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = HERE / "data" / f"spark_results_{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = {"load_before": load_before, "load_after": load_after, "results": results}
    out.write_text(json.dumps(raw, indent=1, default=str), encoding="utf-8")
    print(f"raw figures: {out.relative_to(ROOT)}")
    spark.stop()
    ok = all(r["best"]["verdict"]["wall"] <= TARGET * r["best"]["bare"]["wall"] for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

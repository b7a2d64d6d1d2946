"""The SQL route through the Spark Thrift Server (issue 18): verdict and class table, timed.

Shape A of bench/bench_grouping.py (10M rows, 5 QIs, ~3.2M classes, Parquet) is declared to a
Spark Thrift Server as a table, and these are timed (best of ``--repeat``):

- ``before``: what the SQL path did before issue 18 over ``hive://``: the class-rows
  statement fetched through SQLAlchemy with PyHive's defaults (1,000 rows per Thrift request,
  pure-Python Thrift decoding), then the verdict from the class table;
- ``class table``: :func:`~reident_airflow.sources.sql.class_table_from_sql` now (rows
  100,000 per request, Thrift's C decoder), then the verdict;
- ``verdict``: :func:`~reident_airflow.sources.sql.histogram_from_sql` + ``assess`` (what
  ``reident assess URL --table T --qi ... --no-ranking`` runs): one row per class size;
- ``bare Spark``: the same histogram statement run on a raw PyHive cursor: Spark's own time.

Every route's assessment must equal the others' and the one DuckDB computes on the Parquet
file (the numbers are printed and compared; a difference fails the run).

Usage::

    .venv/bin/python bench/bench_spark_sql.py                 # starts a Thrift Server
    .venv/bin/python bench/bench_spark_sql.py --url hive://127.0.0.1:10000/default
    .venv/bin/python bench/bench_spark_sql.py --repeat 3 --before-repeat 1

The server is started from the pyspark package (local[2], 4 GB driver) and stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bench_grouping  # noqa: E402  (bench/ on the path above)

TABLE = "reident_bench_a"
START_SECONDS = 600


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_server(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A Spark Thrift Server from the pyspark package; returns the process and its URL."""
    import pyspark
    import sqlalchemy as sa
    from thrift.transport.TTransport import TTransportException

    home = Path(pyspark.__file__).resolve().parent
    port = _free_port()
    argv = [
        str(home / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
        "--master",
        "local[2]",
        "--driver-memory",
        "4g",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        f"spark.sql.warehouse.dir={workdir / 'warehouse'}",
        "--conf",
        f"spark.driver.extraJavaOptions=-Dderby.system.home={workdir}",
        "--hiveconf",
        f"hive.server2.thrift.port={port}",
        "--hiveconf",
        "hive.server2.thrift.bind.host=127.0.0.1",
        "--hiveconf",
        f"javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={workdir / 'metastore_db'};"
        "create=true",
        "spark-internal",
    ]
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    log = (workdir / "server.log").open("wb")
    process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    url = f"hive://127.0.0.1:{port}/default"
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the Thrift Server exited; see {workdir / 'server.log'}")
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                conn.execute(sa.text("SELECT 1")).all()
            return process, url
        except (sa.exc.DBAPIError, TTransportException):  # not listening yet
            time.sleep(2)
        finally:
            engine.dispose()
    raise SystemExit(f"the Thrift Server did not answer within {START_SECONDS} s")


def declare(url: str, parquet: Path, workdir: Path) -> None:
    import sqlalchemy as sa

    folder = workdir / "table"
    folder.mkdir(exist_ok=True)
    link = folder / "part-0.parquet"
    if not link.exists():
        link.symlink_to(parquet)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {TABLE}"))
        conn.execute(sa.text(f"CREATE TABLE {TABLE} USING parquet LOCATION '{folder}'"))
    engine.dispose()


def verdict(table: Any) -> dict[str, Any]:
    """The assessment's numbers (no ranking: the verdict a histogram gives)."""
    from reident_airflow.engine.assessment import assess
    from reident_airflow.engine.options import AssessmentOptions

    options = AssessmentOptions(
        quasi_identifiers=tuple(table.quasi_identifiers), rank_attributes=False
    )
    payload: dict[str, Any] = assess(table, options).to_dict()
    return payload


def route_before(url: str, qis: list[str]) -> dict[str, Any]:
    """The class rows as the SQL path fetched them over hive:// before issue 18."""
    import sqlalchemy as sa

    from reident_airflow.engine.classes import class_table_from_grouped
    from reident_airflow.sources.sql_fetch import marked
    from reident_airflow.sources.sql_grouping import COUNT_LABEL, class_rows, plan_grouping

    engine = sa.create_engine(url)  # PyHive's defaults: no accelerated Thrift
    with engine.connect() as conn:
        source = sa.Table(TABLE, sa.MetaData(), autoload_with=conn)
        grouping = plan_grouping(conn, source, qis)
        result = conn.execute(class_rows(grouping, source))
        keys = list(result.keys())
        rows = result.fetchall()  # PyHive: 1,000 rows per request, one Python row each
    engine.dispose()
    import pandas as pd

    frame = marked(pd.DataFrame.from_records(rows, columns=keys), grouping.names)
    return verdict(class_table_from_grouped(frame, grouping.names, COUNT_LABEL))


def route_class_table(url: str, qis: list[str]) -> dict[str, Any]:
    from reident_airflow.sources.sql import class_table_from_sql

    return verdict(class_table_from_sql(url, qis, table=TABLE))


def route_verdict(url: str, qis: list[str]) -> dict[str, Any]:
    from reident_airflow.sources.sql import histogram_from_sql

    return verdict(histogram_from_sql(url, qis, table=TABLE))


def route_bare(url: str, qis: list[str]) -> dict[str, Any]:
    """Spark's own time: the histogram statement on a raw PyHive cursor, nothing assessed."""
    from pyhive import hive

    columns = ", ".join(f"`{q}`" for q in qis)
    statement = (
        f"SELECT c, count(*) FROM (SELECT count(*) AS c FROM {TABLE} GROUP BY {columns}) GROUP BY c"
    )
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.split(":")
    conn = hive.connect(host=host, port=int(port))
    cursor = conn.cursor()
    cursor.execute(statement)
    rows = cursor.fetchall()
    conn.close()
    return {"class size rows": len(rows)}


def best_of(
    name: str, run: Callable[[], dict[str, Any]], repeat: int
) -> tuple[float, list[float], dict[str, Any]]:
    times: list[float] = []
    payload: dict[str, Any] = {}
    for _ in range(repeat):
        start = time.perf_counter()
        payload = run()
        times.append(time.perf_counter() - start)
        print(f"  {name}: {times[-1]:.2f} s", flush=True)
    return min(times), times, payload


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--url", help="a running Thrift Server (hive://host:port/db)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before-repeat", type=int, default=3, help="runs of 'before'")
    args = parser.parse_args()

    shape = bench_grouping.SHAPES["A"]
    if not shape.path.exists():
        print(f"generating {shape.path} ...", flush=True)
        shape.generate()
    qis = list(shape.qis)
    workdir = Path(tempfile.mkdtemp(prefix="reident-bench-thrift-"))
    process = None
    try:
        url = args.url
        if url is None:
            process, url = start_server(workdir)
        declare(url, shape.path, workdir)
        from reident_airflow.sources.files import histogram_from_file

        reference = verdict(histogram_from_file(shape.path, qis))
        routes: list[tuple[str, Callable[[], dict[str, Any]], int]] = [
            ("bare Spark", lambda: route_bare(url, qis), args.repeat),
            ("verdict", lambda: route_verdict(url, qis), args.repeat),
            ("class table", lambda: route_class_table(url, qis), args.repeat),
            ("before", lambda: route_before(url, qis), args.before_repeat),
        ]
        results = {}
        for name, run, repeat in routes:
            results[name] = best_of(name, run, repeat)
            payload = results[name][2]
            if name != "bare Spark" and payload != reference:
                raise SystemExit(f"{name}: the assessment differs from DuckDB's on the file")
        print(
            f"\nshape A: {reference['records']:,} rows, {reference['classes']:,} classes; "
            "every route's assessment equals DuckDB's on the Parquet file\n"
        )
        print("| route | best s | runs s |\n|---|---|---|")
        for name, (best, times, _) in results.items():
            print(f"| {name} | {best:.2f} | {', '.join(f'{t:.2f}' for t in times)} |")
        before = results["before"][0]
        for name in ("verdict", "class table"):
            print(f"\n{name}: {before / results[name][0]:.1f}x faster than before")
        print(f"load average at the end: {os.getloadavg()}")
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=60)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The Spark example DAG (``dags/spark_release_gate.py``, issue 18) with ``dag.test()``: a
candidate that passes is published (every record), one that breaches k fails the gate on
try 1 and publishes nothing.

Both runs happen in one subprocess, one after the other: ``@task.pyspark`` stops the session
it gets when the task ends, and in this process that would be the session the Spark tests
share (``tests.spark.sessions``). The connection ``spark_default`` is a classic ``local[2]``
session (``AIRFLOW_CONN_SPARK_DEFAULT``, its extras Spark configuration). The Airflow home
is a copy of this session's (``tests.conftest``, migrated first), so that the subprocess can
start when collection ends and run beside the other tests: it shares no database lock with
them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, ensure_airflow_db
from tests.spark.sessions import JVM_OPTIONS, SHUFFLE_PARTITIONS

DAG = ROOT / "dags" / "spark_release_gate.py"
_SCRIPT = """
import importlib.util, json, sys
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session

spec = importlib.util.spec_from_file_location("reident_example_spark", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

def xcom(ti):
    with create_session() as session:
        rows = session.execute(
            XComModel.get_many(run_id=ti.run_id, dag_ids=ti.dag_id, task_ids=ti.task_id)
            .with_only_columns(XComModel.key, XComModel.value)
        ).all()
    return {key: value for key, value in rows}

out = {}
for name, conf in json.loads(sys.argv[2]).items():
    run = module.dag.test(run_conf=conf)
    out[name] = {
        "state": str(run.state),
        "tasks": {
            ti.task_id: [str(ti.state), ti.try_number, xcom(ti)]
            for ti in run.get_task_instances()
        },
    }
print("RESULT " + json.dumps(out, default=str), flush=True)
"""

#: Staged with 10-year age bands and classes below 5 dropped, every class on sex, age, race
#: holds at least 5 records: k >= 5 passes. Raw ages, nothing dropped: Adult holds unique
#: (sex, age, race) records (k = 1), which breaches min_k = 5.
RUNS = {
    "pass": {"age_band": 10, "suppress_below_k": 5},
    "breach": {"age_band": 0, "suppress_below_k": 0},
}


def _value(raw: Any) -> Any:
    """An XCom value as stored (JSON text, or already decoded)."""
    return json.loads(raw) if isinstance(raw, str) else raw


@cache
def _started() -> tuple[subprocess.Popen[bytes], Path, Path]:
    """The subprocess of the two DAG runs, started once: early, by ``start_early`` (called by
    tests/conftest.py when collection ends), so that it runs beside the tests before this
    module. It gets its own Airflow home, a copy of the migrated one: its metadata database is
    locked by no test of this process."""
    home = Path(tempfile.mkdtemp(prefix="reident-spark-dag-home-"))
    shutil.copy2(ensure_airflow_db() / "airflow.db", home / "airflow.db")
    work = Path(tempfile.mkdtemp(prefix="reident-spark-dag-"))
    conf = {
        name: {
            **params,
            "candidate_path": str(work / name / "candidate.parquet"),
            "published_path": str(work / name / "published.parquet"),
        }
        for name, params in RUNS.items()
    }
    extra = {
        "spark.sql.shuffle.partitions": SHUFFLE_PARTITIONS,
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": JVM_OPTIONS,
    }
    env = dict(
        os.environ,
        AIRFLOW_HOME=str(home),
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps(
            {"conn_type": "spark", "host": "local[2]", "extra": extra}
        ),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
    )
    argv = [sys.executable, "-c", _SCRIPT, str(DAG), json.dumps(conf)]
    with (home / "stdout").open("wb") as out, (home / "stderr").open("wb") as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
    return process, home, work


def start_early() -> subprocess.Popen[bytes]:
    """Start the DAG runs now (tests/conftest.py calls this when collection ends)."""
    return _started()[0]


@pytest.fixture(scope="module")
def runs() -> Iterator[tuple[dict[str, Any], Path]]:
    process, home, work = _started()
    try:
        code = process.wait(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    stdout = (home / "stdout").read_text(errors="replace")
    stderr = (home / "stderr").read_text(errors="replace")
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert code == 0 and lines, stderr[-4000:]
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    yield result, work
    for folder in (home, work):
        shutil.rmtree(folder, ignore_errors=True)


def test_a_passing_candidate_is_published_with_every_record(
    runs: tuple[dict[str, Any], Path],
) -> None:
    import pyarrow.parquet as pq

    result, work = runs
    run = result["pass"]
    assert run["state"] == "success", run
    staged = pq.read_table(work / "pass" / "candidate.parquet")
    published = pq.read_table(work / "pass" / "published.parquet")
    assert published.num_rows == staged.num_rows > 0
    assert sorted(published.column_names) == sorted(staged.column_names)
    report = _value(run["tasks"]["gate"][2]["return_value"])
    assert report["passed"] is True and report["k"] >= 5
    assert report["records"] == staged.num_rows
    leftovers = [p.name for p in (work / "pass").iterdir() if ".reident-" in p.name]
    assert leftovers == []  # the staged folder was renamed into place


def test_a_breaching_candidate_fails_on_try_1_and_publishes_nothing(
    runs: tuple[dict[str, Any], Path],
) -> None:
    result, work = runs
    run = result["breach"]
    assert run["state"] == "failed", run
    state, try_number, xcoms = run["tasks"]["gate"]
    assert (state, try_number) == ("failed", 1)  # a breach is not retried
    assert run["tasks"]["stage"][0] == "success"
    assert not (work / "breach" / "published.parquet").exists()
    report = _value(xcoms["return_value"])  # pushed before the task failed
    assert report["passed"] is False and report["k"] == 1
    assert "k" in {b["metric"] for b in report["breaches"]}
    assert report["records"] == 30162  # Adult as ARX distributes it, nothing dropped

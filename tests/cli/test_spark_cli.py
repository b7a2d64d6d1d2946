"""``reident assess --engine spark`` (issue 18): Adult counted by Spark gives the CSV's JSON.

Adult is written as Parquet in the test from ``tests/data/adult.csv`` (read under the reading
contract: every field text). Two runs as a user makes them, in a subprocess: a classic
``local[2]`` session on the Parquet file, and a Spark Connect client (the server of
``tests.spark.sessions``) on a table of the server's catalog. Each JSON must equal the one
``reident assess`` computes from the CSV, minus the run keys (``tests.cli._cli.RUN_KEYS``);
the advice is compared to the CSV's advice, the Parquet file's fingerprint to the one the
DuckDB path takes of the same file. The local run starts when collection ends
(``start_early``), beside the tests before this module. The flag checks run in process and
start no Spark.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.cli._cli import RUN_KEYS, assess_json, one_line_error, run
from tests.conftest import oracle_data
from tests.spark.sessions import (
    JVM_OPTIONS,
    SHUFFLE_PARTITIONS,
    ConnectServer,
    connect_server,
    spark_connect,
)

__all__ = ["connect_server", "spark_connect"]

ADULT = oracle_data("adult.csv")  # separated by ';'
QIS = "sex,age,race,marital-status"
#: A gate Adult breaches on k, with a warning level and a population model (scipy's path).
GATE = ("--min-k", "5", "--warn-max-average-risk", "0.01", "--region", "usa")
#: Small local sessions: 4 shuffle partitions, no UI.
SPARK_CONF = (
    "--spark-conf",
    f"spark.sql.shuffle.partitions={SHUFFLE_PARTITIONS}",
    "--spark-conf",
    "spark.ui.enabled=false",
    "--spark-conf",
    f"spark.driver.extraJavaOptions={JVM_OPTIONS}",
)


@cache
def _adult_parquet() -> Path:
    """Adult's QI columns as Parquet, in a folder of its own (removed with the module)."""
    import pyarrow.parquet as pq

    from reident_airflow.sources.files import read_columns

    path = Path(tempfile.mkdtemp(prefix="reident-spark-cli-")) / "adult.parquet"
    pq.write_table(read_columns(ADULT, QIS.split(","), sep=";"), path)
    return path


@pytest.fixture(scope="module")
def adult_parquet() -> Iterator[Path]:
    path = _adult_parquet()
    yield path
    shutil.rmtree(path.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def csv_run() -> tuple[int, dict[str, Any], dict[str, Any]]:
    """The CSV's exit code, JSON without the run keys, and its advice."""
    code, want = assess_json(str(ADULT), "--sep", ";", "--qi", QIS, *GATE)
    _, out, err = run("assess", str(ADULT), "--sep", ";", "--qi", QIS, *GATE, "--json", "-")
    advice: dict[str, Any] = json.loads(out)["advice"]
    assert advice is not None, err
    return code, want, advice


def _start(*argv: str) -> tuple[subprocess.Popen[bytes], Path]:
    """``reident assess ARGV... --json -`` started in a subprocess, its output to files."""
    folder = Path(tempfile.mkdtemp(prefix="reident-spark-cli-run-"))
    command = [sys.executable, "-m", "reident_airflow.cli", "assess", *argv, "--json", "-"]
    with (folder / "stdout").open("wb") as out, (folder / "stderr").open("wb") as err:
        return subprocess.Popen(command, stdout=out, stderr=err), folder


def _finish(started: tuple[subprocess.Popen[bytes], Path]) -> tuple[int, dict[str, Any], str]:
    """The exit code, the JSON and the stderr of a run :func:`_start` started."""
    process, folder = started
    try:
        code = process.wait(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    stdout, stderr = ((folder / name).read_text(errors="replace") for name in ("stdout", "stderr"))
    shutil.rmtree(folder, ignore_errors=True)
    assert code in (0, 1), stderr[-3000:]
    doc: dict[str, Any] = json.loads(stdout)
    return code, doc, stderr


def _reident(*argv: str) -> tuple[int, dict[str, Any], str]:
    """``reident assess ARGV... --json -`` in a subprocess: exit code, JSON, stderr."""
    return _finish(_start(*argv))


@cache
def _local_run() -> tuple[subprocess.Popen[bytes], Path]:
    """The run on a classic local session: its JVM starts in 10-20 s, so it is started early
    (``start_early``, called by tests/conftest.py when collection ends) and runs beside the
    tests before this module."""
    return _start(
        "--engine",
        "spark",
        str(_adult_parquet()),
        "--qi",
        QIS,
        *GATE,
        "--spark-master",
        "local[2]",
        *SPARK_CONF,
    )


def start_early() -> subprocess.Popen[bytes]:
    """Start the local run now (tests/conftest.py calls this when collection ends)."""
    return _local_run()[0]


def test_a_parquet_file_on_local_spark_gives_the_csv_json(
    adult_parquet: Path, csv_run: tuple[int, dict[str, Any], dict[str, Any]]
) -> None:
    want_code, want, want_advice = csv_run
    code, got, err = _finish(_local_run())
    assert code == want_code == 1
    fingerprint, advice = got.pop("input"), got.pop("advice")
    assert set(RUN_KEYS) == {"input", "advice"}
    assert got == want
    assert advice == want_advice  # from Spark's histograms and Datafly on Spark
    assert "reident: warning: prosecutor.average_risk = " in err and "reident: advice:" in err
    _, out, _ = run("assess", str(adult_parquet), "--qi", QIS, "--no-advice", "--json", "-")
    local = json.loads(out)["input"]
    for doc in (fingerprint, local):
        del doc["taken_at"]
    assert fingerprint == local  # the DuckDB path's fingerprint of the same file


def test_a_table_over_spark_connect_gives_the_csv_json(
    adult_parquet: Path,
    spark_connect: Any,
    connect_server: ConnectServer,
    csv_run: tuple[int, dict[str, Any], dict[str, Any]],
) -> None:
    want_code, want, _ = csv_run
    spark_connect.read.parquet(str(adult_parquet)).write.mode("overwrite").saveAsTable(
        "reident_cli_adult"
    )
    try:
        code, got, _ = _reident(
            "--engine",
            "spark",
            "--table",
            "reident_cli_adult",
            "--qi",
            QIS,
            *GATE,
            "--no-advice",
            "--spark-remote",
            connect_server.url,
        )
    finally:
        spark_connect.sql("DROP TABLE IF EXISTS reident_cli_adult")
    assert code == want_code
    assert got.pop("input") is None  # a table has no file to hash
    assert got.pop("advice") is None  # --no-advice
    assert got == want


# ------------------------------------------------------------------------- flags, no Spark
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["x.parquet", "--qi", "a", "--spark-master", "local[2]"], "--spark-master applies only"),
        (["x.parquet", "--qi", "a", "--spark-conf", "a=b"], "--spark-conf applies only"),
        (["--qi", "a"], "INPUT is required"),
        (["--engine", "spark", "--qi", "a"], "needs INPUT (a Parquet path) or --table NAME"),
        (["--engine", "spark", "x.parquet", "--table", "t", "--qi", "a"], "not both"),
        (["--engine", "spark", "x.parquet", "--qi", "a", "--sep", ";"], "--sep does not apply"),
        (["--engine", "spark", "x.parquet", "--qi", "a", "--suda"], "--suda with --engine spark"),
        (
            ["--engine", "spark", "x.parquet", "--qi", "a", "--population-table", "p.csv"],
            "--population-table with --engine spark",
        ),
        (["x.parquet", "--qi", "a", "--engine", "sprak"], "(did you mean 'spark'?)"),
        (["x.parquet", "--qi", "a", "--spark-mastr", "local"], "(did you mean --spark-master?)"),
        (["x.parquet", "--qi", "a", "--spark-conf", "novalue"], "must be KEY=VALUE"),
        (
            ["--engine", "spark", "x.parquet", "--qi", "a", "--spark-remote", "http://h:1"],
            "--spark-remote must be sc://HOST[:PORT]",
        ),
        (  # nothing listens on port 1: refused at once, not after PySpark's minutes of retries
            ["--engine", "spark", "x.parquet", "--qi", "a", "--spark-remote", "sc://127.0.0.1:1"],
            "cannot reach the Spark Connect server at 127.0.0.1:1",
        ),
    ],
)
def test_spark_flags_are_checked_before_anything_starts(argv: list[str], expected: str) -> None:
    code, _, err = run("assess", *argv)
    assert expected in one_line_error(code, err)


def test_help_loads_no_spark() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from reident_airflow.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        main(['assess', '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert '--spark-remote' in out.getvalue() and '--engine' in out.getvalue()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'pyspark', 'py4j'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_the_spark_outlook_is_at_the_suppression_limit_given(tmp_path: Path) -> None:
    """Issue 29, item 7 on Spark: the small table of tests/cli/test_assess_advice.py, where by
    hand Datafly at k = 2 takes age to its decades at the default limit (2 records) and stops
    before its first step, suppressing 4 records, at ``--suppression-limit 4``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.cli.test_assess_advice import SMALL_HIERARCHIES

    source = tmp_path / "small.parquet"
    ages = ["21", "21", "22", "23", "34", "34", "35", "36"]
    zips = ["13011", "13011", "13012", "13012", "13013", "13013", "13014", "13014"]
    pq.write_table(pa.table({"age": ages, "zip": zips}), source)
    given: list[str] = []
    for q, text in SMALL_HIERARCHIES.items():
        (tmp_path / f"{q}.csv").write_text(text, encoding="utf-8")
        given += ["--hierarchy", f"{q}={tmp_path / f'{q}.csv'}"]
    code, doc, err = _reident(
        "--engine", "spark", str(source), "--qi", "age,zip", "--min-k", "2", *given,
        "--suppression-limit", "4", "--spark-master", "local[2]", *SPARK_CONF,
    )  # fmt: skip
    assert code == 1, err[-3000:]
    outlook = doc["advice"]["datafly"]
    assert (outlook["levels"], outlook["suppressed_records"]) == ({"age": 0, "zip": 0}, 4)
    assert outlook["suppression_limit"] == 4

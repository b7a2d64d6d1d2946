"""``reident assess --engine spark``: the same gate, counted by Apache Spark (issue 18).

::

    reident assess --engine spark PATH.parquet --qi COL[,COL...] [--spark-master local[2]]
    reident assess --engine spark --table db.name --qi ... --spark-remote sc://host:15002

INPUT is a Parquet file, folder or glob (any URI Spark reads: ``s3a://``, ``abfss://``...),
or with ``--table NAME`` (and no INPUT) a table of the session's catalog. The session is a
Spark Connect client (``--spark-remote sc://...``: only ``pyspark-client`` on this machine,
no Java) or a classic one (``--spark-master``, default ``local[*]``); ``--spark-conf K=V``
sets more of its configuration. PySpark is imported only here, when ``--engine spark`` is
given.

Spark groups the records; only aggregates reach this process
(:func:`~reident_airflow.sources.spark.assess_spark_frame`), so the options, the JSON, the
gate and the exit codes are those of ``assess`` on a file, and the JSON is the same as on
the same records in a CSV. SUDA2 and ``--population-table`` need one row per class and are
refused (exit 2), as is ``--memory-limit`` (DuckDB's).

- **Advice** on a ``--min-k`` breach: from aggregates only, never rows on the driver: the
  classes and records below k from the class-size histogram, the QI driving the risk from
  the ranking (none with ``--no-ranking``), and Datafly's outlook at k from Datafly run on
  histograms Spark counts (:func:`~reident_airflow.sources.spark_release_datafly.
  datafly_spark`; nothing is written).
- **Fingerprint** (``"input"``): a local Parquet file or folder is hashed as ``assess`` does;
  a table, a glob or a remote URI gets ``null`` (a table has no file to hash; Spark's
  catalog offers no snapshot id for every format), said on the progress lines.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO, cast

from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    from reident_airflow.commands.assess_outcome import AdviceFound
    from reident_airflow.commands.common import Progress
    from reident_airflow.engine.assessment import Assessment
    from reident_airflow.engine.hierarchies import Hierarchy

__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_CONNECT_PORT",
    "DEFAULT_MASTER",
    "ENGINES",
    "add_spark_arguments",
    "check_engine_arguments",
    "run_spark",
    "spark_session",
]

#: ``--engine``'s choices: ``local`` (DuckDB for a file, the database for a URL), ``spark``.
ENGINES = ("local", "spark")
#: The classic session's master when neither ``--spark-master`` nor ``--spark-remote`` is given.
DEFAULT_MASTER = "local[*]"
#: Spark Connect's port when ``--spark-remote`` names none.
DEFAULT_CONNECT_PORT = 15002
#: Seconds to wait for the Spark Connect server to accept a connection.
CONNECT_TIMEOUT = 10.0
#: Set on every session unless ``--spark-conf`` says otherwise: no progress bars on stderr.
_QUIET_CONF = {"spark.ui.showConsoleProgress": "false"}


def _conf_pair(text: str) -> tuple[str, str]:
    """An argument type: ``KEY=VALUE`` of ``--spark-conf``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"must be KEY=VALUE, got {text!r}")
    return key.strip(), value


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    """``--engine``, ``--spark-remote``, ``--spark-master`` and ``--spark-conf``."""
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="who counts INPUT: local (default; the embedded DuckDB for a file, the database "
        "for a URL) or spark (a Parquet path or, with --table NAME and no INPUT, a table of "
        "the Spark catalog; only aggregates reach this machine)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--spark-remote",
        metavar="sc://HOST:PORT",
        help="--engine spark: a Spark Connect server (Databricks, EMR, a cluster's "
        "start-connect-server.sh); needs only pyspark-client here, no Java",
    )
    where.add_argument(
        "--spark-master",
        metavar="MASTER",
        help=f"--engine spark: the master of a classic session (default {DEFAULT_MASTER}, "
        "Spark inside this process; yarn, spark://HOST:PORT, k8s://...)",
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        type=_conf_pair,
        default=[],
        metavar="KEY=VALUE",
        help="--engine spark: a configuration of the session (repeatable), e.g. "
        "spark.driver.memory=4g",
    )


def check_engine_arguments(args: argparse.Namespace) -> None:
    """Refuse a Spark flag without ``--engine spark``, and INPUT missing where it is needed
    (before anything is read)."""
    if args.engine != "spark":
        given = [f for f in ("spark_remote", "spark_master") if getattr(args, f)]
        if given or args.spark_conf:
            flag = "--" + (given[0] if given else "spark_conf").replace("_", "-")
            raise InvalidInputError(f"{flag} applies only with --engine spark")
        if args.input is None:
            raise InvalidInputError("INPUT is required: a CSV or Parquet path, or a database URL")
        return
    if args.input is None and not args.table:
        raise InvalidInputError("--engine spark needs INPUT (a Parquet path) or --table NAME")
    if args.input is not None and args.table:
        raise InvalidInputError(
            "--engine spark takes INPUT (a Parquet path) or --table NAME, not both"
        )
    for flag, value in (("--memory-limit", args.memory_limit), ("--schema", args.schema)):
        if value:
            raise InvalidInputError(
                f"{flag} does not apply with --engine spark"
                + (" (name the table as db.name)" if flag == "--schema" else "")
            )
    if args.sep != ",":
        raise InvalidInputError("--sep does not apply with --engine spark (it reads Parquet)")


# ------------------------------------------------------------------------------- the session
def _check_reachable(url: str) -> None:
    """Refuse a Spark Connect URL whose server does not accept a connection within
    :data:`CONNECT_TIMEOUT` seconds (PySpark itself retries for minutes before failing)."""
    import socket
    from urllib.parse import urlsplit

    host, port = None, DEFAULT_CONNECT_PORT
    try:
        parts = urlsplit(url.split(";", 1)[0])
        if parts.scheme == "sc":
            host, port = parts.hostname, parts.port or DEFAULT_CONNECT_PORT
    except ValueError:  # a port that is not a number
        host = None
    if not host:
        raise InvalidInputError(f"--spark-remote must be sc://HOST[:PORT], got {url!r}")
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as exc:
        raise InvalidInputError(
            f"cannot reach the Spark Connect server at {host}:{port} ({type(exc).__name__})"
        ) from None


def spark_session(args: argparse.Namespace) -> Any:
    """The Spark session ``--spark-remote`` / ``--spark-master`` / ``--spark-conf`` describe
    (an existing one of this process is reused, as ``getOrCreate`` does)."""
    import warnings

    if args.spark_remote:
        _check_reachable(args.spark_remote)
    # PySpark 4.2 warns on import that it does not fully support pandas >= 3 (unused here)
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if args.spark_remote:
        builder = builder.remote(args.spark_remote)
    else:
        builder = builder.master(args.spark_master or DEFAULT_MASTER).appName("reident")
    conf = {**_QUIET_CONF, **dict(args.spark_conf)}
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if not args.spark_remote:
        session.sparkContext.setLogLevel("ERROR")
    return session


def _label(args: argparse.Namespace) -> str:
    return f"table {args.table!r}" if args.table else str(args.input)


def _frame(session: Any, args: argparse.Namespace) -> Any:
    """INPUT as a DataFrame (lazy: nothing is read yet but the schema)."""
    if args.table:
        return session.table(args.table)
    return session.read.parquet(args.input)


# ------------------------------------------------------------------------ advice, fingerprint
def _outlook(
    frame: Any, result: Assessment, hierarchies: Mapping[str, Hierarchy]
) -> tuple[Any, tuple[str, ...]]:
    """Datafly's outlook at k, run on histograms Spark counts, and the QIs lacking a
    hierarchy (then no outlook)."""
    from reident_airflow.engine.advice import datafly_outlook
    from reident_airflow.engine.errors import AnonymizationInfeasibleError, HierarchyError
    from reident_airflow.sources.advice import hierarchies_for
    from reident_airflow.sources.spark_release_datafly import datafly_spark

    k = cast(int, result.thresholds.min_k)
    found, missing = hierarchies_for(result.quasi_identifiers, hierarchies)
    if missing:
        return None, missing
    try:
        outcome: Any = datafly_spark(frame, result.quasi_identifiers, found, k)
    except AnonymizationInfeasibleError as exc:
        outcome = exc
    except HierarchyError:
        return None, tuple(q for q in result.quasi_identifiers if q not in hierarchies)
    # SparkDataflyResult carries the fields of DataflyResult the outlook reads
    return datafly_outlook(k, outcome), ()


def _advice(
    args: argparse.Namespace,
    progress: Progress,
    frame: Any,
    result: Assessment,
    hierarchies: Mapping[str, Hierarchy],
) -> AdviceFound:
    """The advice on a ``--min-k`` breach, from Spark's aggregates only (module docstring)."""
    limit = result.thresholds.min_k
    if args.no_advice or limit is None or result.k >= limit:
        return None
    import numpy as np

    from reident_airflow.engine.advice import breach_advice
    from reident_airflow.engine.classes import ClassSizes
    from reident_airflow.sources.spark_grouping import spark_errors

    pairs = result.class_size_histogram  # the histogram Spark counted for the assessment
    table = ClassSizes(
        result.quasi_identifiers,
        np.array([size for size, _ in pairs], dtype=np.int64),
        np.array([count for _, count in pairs], dtype=np.int64),
        excluded_records=result.excluded_records,
    )
    progress(f"k = {result.k} < {limit}: counting the advice in Spark (Datafly on histograms)")
    with spark_errors(_label(args)):
        outlook, missing = _outlook(frame, result, hierarchies)
    ranking = result.attributes or None
    return breach_advice(table, limit, ranking=ranking, datafly=outlook), missing


def _fingerprint(args: argparse.Namespace, result: Assessment) -> dict[str, Any] | None:
    """A local Parquet file or folder's fingerprint; ``None`` for a table, a glob, a URI."""
    from pathlib import Path

    if args.no_fingerprint or args.table or "://" in args.input:
        return None
    if not Path(args.input).exists():  # a glob: no one file or folder to hash
        return None
    from reident_airflow.sources.fingerprint import fingerprint_file

    return fingerprint_file(args.input, rows=result.records + result.excluded_records).to_dict()


# ------------------------------------------------------------------------------------ the run
def _no_fingerprint_reason(args: argparse.Namespace) -> str:
    if args.table:
        return "a table has no file to hash: 'input' is null"
    return "not a local file or folder: 'input' is null"


def run_spark(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``assess`` with ``--engine spark``: the handler's work once the options are known."""
    from reident_airflow.commands.assess import assessment_options
    from reident_airflow.commands.assess_outcome import finish_assessment, result_lines
    from reident_airflow.commands.common import Progress, given_hierarchies
    from reident_airflow.engine.assessment import refuse_per_class
    from reident_airflow.sources.spark import assess_spark_frame
    from reident_airflow.sources.spark_grouping import spark_errors

    options = assessment_options(args)
    try:
        refuse_per_class(options)
    except InvalidInputError as exc:
        flag = "--suda" if options.suda else "--population-table"
        why = str(exc).split(": ", 1)[-1]
        raise InvalidInputError(f"{flag} with --engine spark: {why}") from None
    hierarchies = given_hierarchies(args)
    with Progress.of("assess", args, err) as progress:
        where = args.spark_remote or args.spark_master or DEFAULT_MASTER
        progress(f"starting the Spark session ({where})")
        with spark_errors(_label(args)):
            session = spark_session(args)
            frame = _frame(session, args)
        progress(f"grouping {_label(args)} on {len(options.quasi_identifiers)} QIs in Spark")
        result = assess_spark_frame(frame, options)
        found = _advice(args, progress, frame, result, hierarchies)
        fingerprint = _fingerprint(args, result)
        if fingerprint is None and not args.no_fingerprint:
            progress(_no_fingerprint_reason(args))
        code = finish_assessment(
            args, result, found, fingerprint, progress=progress, streams=(out, err)
        )
    for line in result_lines(result, found):
        err.write(f"{line}\n")
    return code

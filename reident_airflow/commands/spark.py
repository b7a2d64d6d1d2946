"""``reident assess --engine spark``: its flags and its Spark session (issue 18).

::

    reident assess --engine spark PATH.parquet --qi COL[,COL...] [--spark-master local[2]]
    reident assess --engine spark --table db.name --qi ... --spark-remote sc://host:15002

INPUT is a Parquet file, folder or glob (any URI Spark reads: ``s3a://``, ``abfss://``...),
or with ``--table NAME`` (and no INPUT) a table of the session's catalog. The session is a
Spark Connect client (``--spark-remote sc://...``: only ``pyspark-client`` on this machine,
no Java) or a classic one (``--spark-master``, default ``local[*]``); ``--spark-conf K=V``
sets more of its configuration. PySpark is imported only here, when ``--engine spark`` is
given.

``assess`` chooses the Spark source at its door
(:class:`~reident_airflow.sources.spark.SparkSource` over the session built here): Spark
groups the records and only aggregates reach this process, so the options, the JSON, the
gate and the exit codes are those of ``assess`` on a file, and the JSON is the same as on
the same records in a CSV. SUDA2 and ``--population-table`` need one row per class and are
refused (exit 2), as is ``--memory-limit`` (DuckDB's).

- **Advice** on a ``--min-k`` breach: from aggregates only, never rows on the driver: the
  classes and records below k from the class-size histogram, the QI driving the risk from
  the ranking (none with ``--no-ranking``), and Datafly's outlook at k from Datafly run on
  histograms Spark counts (:meth:`~reident_airflow.sources.spark.SparkSource.advise`;
  nothing is written).
- **Fingerprint** (``"input"``): a local Parquet file or folder is hashed as ``assess`` does;
  a table, a glob or a remote URI gets ``null`` (a table has no file to hash; Spark's
  catalog offers no snapshot id for every format), said on the progress lines.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    from reident_airflow.sources.spark import SparkSource

__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_CONNECT_PORT",
    "DEFAULT_MASTER",
    "ENGINES",
    "add_spark_arguments",
    "check_engine_arguments",
    "session_of",
    "spark_source",
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


def session_of(args: argparse.Namespace) -> AbstractContextManager[Any]:
    """The session block ``--spark-remote`` / ``--spark-master`` / ``--spark-conf`` describe
    (:func:`~reident_airflow.sources.spark_session.spark_session`: a classic session is got
    or created and left to the process; a Spark Connect one is stopped when the block ends).
    """
    from reident_airflow.sources.spark_session import spark_session

    conf = {**_QUIET_CONF, **dict(args.spark_conf)}
    if args.spark_remote:
        _check_reachable(args.spark_remote)
        return spark_session(remote=args.spark_remote, conf=conf)
    master = args.spark_master or DEFAULT_MASTER
    return spark_session(master=master, conf=conf, app_name="reident", quiet=True)


def spark_source(args: argparse.Namespace, progress: Callable[[str], None]) -> SparkSource:
    """INPUT (a Parquet path) or ``--table`` of the Spark catalog, as a lazy DataFrame of the
    session the Spark flags describe (nothing is read yet but the schema)."""
    from reident_airflow.sources.spark import SparkSource
    from reident_airflow.sources.spark_grouping import spark_errors

    label = f"table {args.table!r}" if args.table else str(args.input)
    where = args.spark_remote or args.spark_master or DEFAULT_MASTER
    progress(f"starting the Spark session ({where})")
    with spark_errors(label):
        block = session_of(args)
        session = block.__enter__()
        try:
            if args.table:
                frame = session.table(args.table)
                return SparkSource(frame, label=label, session=block, tables=True)
            frame = session.read.parquet(args.input)
        except BaseException:
            block.__exit__(None, None, None)
            raise
        return SparkSource(frame, label=label, path=args.input, session=block, tables=False)

"""The one way to a Spark session, with one lifecycle, for every adapter.

- **Classic** (a master: ``local[*]``, ``spark://host:7077``, ``yarn``...): got or created,
  and never stopped here -- other code of the process (a notebook, Airflow's Spark hooks)
  may share it.
- **Spark Connect** (``sc://host:port``): created for the ``with`` block and stopped after
  it. A Connect client's ``getOrCreate`` would hand back whatever session is active,
  whichever server it talks to, and a session left open makes the process wait for its
  server at exit.

The command line (``--spark-master`` / ``--spark-remote`` / ``--spark-conf``) and the
operators (an Airflow connection of the apache-spark provider) describe the session; this
module builds it. PySpark is imported only when a session is asked for.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

__all__ = ["spark_session"]


@contextmanager
def spark_session(
    *,
    master: str | None = None,
    remote: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str | None = None,
    quiet: bool = False,
) -> Iterator[Any]:
    """The Spark session of ``master`` (classic) or ``remote`` (a Spark Connect URL), with
    ``conf`` set, for the ``with`` block (the lifecycle of the module docstring).

    ``app_name`` names a classic session's application; ``quiet`` sets a classic session's
    log level to ``ERROR`` (a command line prints its own lines on stderr).
    """
    if (master is None) == (remote is None):
        raise ValueError("spark_session: give exactly one of master and remote")
    # PySpark 4.2 warns on import that it does not fully support pandas >= 3 (unused here)
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )
    settings = dict(conf or {})
    if remote is not None:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        connect = ConnectSession.builder.remote(remote)
        for key, value in settings.items():
            connect = connect.config(key, value)
        session = connect.create()
        try:
            yield session
        finally:
            session.stop()
        return
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(cast(str, master))
    if app_name:
        builder = builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    classic = builder.getOrCreate()
    if quiet:
        classic.sparkContext.setLogLevel("ERROR")
    yield classic

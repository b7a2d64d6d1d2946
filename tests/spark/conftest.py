"""The Spark fixtures of :mod:`tests.spark.sessions` for the tests of this folder."""

from tests.spark.sessions import classic_spark, connect_server, session, spark, spark_connect

__all__ = ["classic_spark", "connect_server", "session", "spark", "spark_connect"]

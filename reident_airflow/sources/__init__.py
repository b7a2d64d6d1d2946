"""Where the data is: rows grouped into class aggregates, whole tables in, releases out.

The engine (:mod:`reident_airflow.engine`) computes on class aggregates; the modules here count
the rows where they are and hand the engine only those aggregates, under the reading contract
of ``docs/reading.md``:

- files and DataFrames, grouped by an embedded DuckDB: :mod:`~reident_airflow.sources.files`
  (what a file source is: :mod:`~reident_airflow.sources.file_source`);
- databases, grouped by the database's own ``GROUP BY``: :mod:`~reident_airflow.sources.sql`
  (with :mod:`~reident_airflow.sources.connect`, :mod:`~reident_airflow.sources.sql_grouping`,
  :mod:`~reident_airflow.sources.sql_fetch`, :mod:`~reident_airflow.sources.db_errors`), and
  direct-match counts in the database: :mod:`~reident_airflow.sources.direct_match_sql`;
- Spark DataFrames, grouped by Spark (classic sessions and Spark Connect):
  :mod:`~reident_airflow.sources.spark` (with :mod:`~reident_airflow.sources.spark_grouping`;
  direct match and Datafly in :mod:`~reident_airflow.sources.spark_release`);
- whole tables for Datafly and direct match: :mod:`~reident_airflow.sources.tables`;
- releases published atomically: :mod:`~reident_airflow.sources.writers` over
  :mod:`~reident_airflow.sources.publish`.

The package itself exports nothing: each module is imported where it is needed, so that
reading a CSV file never loads SQLAlchemy, and reading a histogram never loads pandas.
"""

from __future__ import annotations

__all__: list[str] = []

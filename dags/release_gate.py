"""Release gate: stage -> assess re-identification risk -> publish, failing on a breach;
optionally anonymizing the table with Datafly when the gate fails.

The embedded default runs on SQLite: the connection ``reident_staging`` points at a SQLite
file (``scripts/demo.sh`` sets ``AIRFLOW_CONN_REIDENT_STAGING``), and the ``stage`` task seeds
the staged table from the bundled sample (UCI Adult, with a ``record_id`` column). In a real
deployment ``stage`` is your own load step and ``reident_staging`` your warehouse (PostgreSQL,
MariaDB, ...): the risk is computed there with a ``GROUP BY``, rows never leave the database.

Shape::

    stage >> assess >> choose >> approve >> publish   (passed, or not anonymizing)
                              >> anonymize >> reassess >> released_original
                                 >> direct_match >> publish_anonymized    (breached)

(every task of the second path also depends on ``choose`` directly: the branch skips them, or
a failed ``assess`` fails them, in one scheduling pass).

Parameters (``airflow dags test release_gate -c '{"generalize_age": false}'``):
- ``staged_table`` / ``published_table``: where the release is staged and published;
- ``quasi_identifiers``: comma-separated QI columns;
- ``generalize_age``: the staging step's own anonymization (ages in 10-year bands);
- ``max_records_at_risk`` / ``max_average_risk``: the gate; ``preset``: a named gate from
  published guidance (``ema-0070``, ``el-emam-public``, ``k5``, ...: its limits fill those left
  unset); ``warn_max_records_at_risk`` / ``warn_max_average_risk`` / ``warn_min_k``: warning
  levels (logged and alerted, the release goes ahead); ``on_breach``: fail / skip / warn;
- ``anonymize_on_breach`` (default false): instead of failing, a breach sends the staged table
  through Datafly (``anonymize``: ``k``, ``suppression_limit``, ARX's Adult hierarchies bundled
  in ``reident_airflow/data/hierarchies``, ``hierarchy_overrides`` to replace some, e.g.
  ``{"age": {"type": "interval", "widths": [5, 10, 20]}}``) into ``anonymized_table``; that
  table is assessed again with the same gate (``reassess``, failing on a breach), compared
  column by column with the staged records it released (``released_original``: the staged
  rows whose ``record_id`` survived suppression; ``direct_match``: Column Direct Match
  Protection, at least ``direct_match_target`` percent, failing below) and published
  (``publish_anonymized``). ``on_breach`` does not apply to the first assessment then.
- ``report_path``: where ``assess`` writes its HTML report (none when empty);
- ``require_approval`` (default false): hold ``publish`` until someone approves it in Airflow
  (``approve``, the provider's ``ReleaseSignOffOperator``: human-in-the-loop, Airflow 3.1+
  and its standard provider). The request shows the verdict, the advice and the report's
  link; a "Reject", or no answer within ``APPROVAL_TIMEOUT`` (the default answer is
  "Reject"), skips ``publish``. The answer (who, what, when) is written into the report's
  sign-off block first. Without it, ``approve`` passes at once (the demo runs unattended).

A breach fails ``assess`` without retries (``retries=2`` applies to infrastructure errors only)
and ``publish`` does not run (on a breach of ``min_k``, the log, the error and the alert say
what to do: classes and records below k, the driving column, what Datafly would do); so
does a table Datafly cannot bring to ``k`` within the suppression limit (``anonymize``
fails), that still breaches the gate afterwards
(``reassess`` fails) or that releases columns too close to the originals (``direct_match``
fails). Every publish is atomic (readers never see a half-written table). If the
connection ``reident_alerts`` (an HTTP webhook) exists, a breach, or a warning level
crossed, is posted to it;
``REIDENT_ALERT_EMAIL`` adds an e-mail through ``smtp_default``.
"""

from __future__ import annotations

import datetime
import json
import os
from importlib.resources import files
from typing import Any

import pendulum

from reident_airflow._compat import AIRFLOW_V3
from reident_airflow.connections import sqlalchemy_engine
from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.operators.direct_match import DirectMatchProtectionOperator
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.operators.sign_off import ReleaseSignOffOperator

if AIRFLOW_V3:
    from airflow.sdk import DAG, chain, task
else:  # pragma: no cover
    from airflow import DAG
    from airflow.decorators import task  # type: ignore[attr-defined,no-redef]
    from airflow.models.baseoperator import chain  # type: ignore[no-redef]

STAGING_CONN = "reident_staging"
#: The row key ``stage`` adds; Datafly passes it through, the direct-match check aligns on it.
KEY = "record_id"
#: Suffix of the table of released originals the direct-match check compares with.
ORIGINAL_SUFFIX = "__original"
#: The tasks `choose` follows when a breach is to be anonymized, in order.
ANONYMIZE_PATH = (
    "anonymize",
    "reassess",
    "released_original",
    "direct_match",
    "publish_anonymized",
)

_HIERARCHY_DIR = files("reident_airflow").joinpath("data/hierarchies")
#: ARX's hierarchies of the Adult columns (reident_airflow/data/hierarchies).
ADULT_HIERARCHIES = {
    column: str(_HIERARCHY_DIR.joinpath(f"adult_hierarchy_{column}.csv"))
    for column in (
        "sex",
        "age",
        "race",
        "marital-status",
        "education",
        "native-country",
        "workclass",
        "occupation",
        "salary-class",
    )
}
#: ARX's age hierarchy from its 10-year level up, for ages staged as bands (generalize_age).
AGE_DECADES_HIERARCHY = str(_HIERARCHY_DIR.joinpath("adult_hierarchy_age_decades.csv"))


#: How long ``approve`` waits for an answer; then it takes its default, "Reject".
APPROVAL_TIMEOUT = datetime.timedelta(hours=24)


#: The gate of ``assess`` and ``reassess``: the run's limits, preset and warning levels.
GATE = {
    name: f"{{{{ params.{name} }}}}"
    for name in (
        "max_records_at_risk",
        "max_average_risk",
        "preset",
        "warn_max_records_at_risk",
        "warn_max_average_risk",
        "warn_min_k",
    )
}


def release_hierarchies(params: dict[str, Any]) -> str:
    """The hierarchies of the ``anonymize`` task (JSON): ARX's Adult hierarchies, the age one
    matching the staged ages, then the run's ``hierarchy_overrides``."""
    chosen: dict[str, Any] = dict(ADULT_HIERARCHIES)
    if params.get("generalize_age", True):
        chosen["age"] = AGE_DECADES_HIERARCHY
    chosen.update(params.get("hierarchy_overrides") or {})
    return json.dumps(chosen)


def _failure_callbacks() -> list[Any]:
    callbacks: list[Any] = []
    try:
        from reident_airflow.notifiers import ReidentBreachNotifier
    except ImportError:  # pragma: no cover - notifier not installed
        return callbacks
    webhook = os.environ.get("REIDENT_ALERT_WEBHOOK_CONN", "reident_alerts")
    email = os.environ.get("REIDENT_ALERT_EMAIL")
    if os.environ.get(f"AIRFLOW_CONN_{webhook.upper()}") or email:
        callbacks.append(
            ReidentBreachNotifier(
                webhook_conn_id=webhook
                if os.environ.get(f"AIRFLOW_CONN_{webhook.upper()}")
                else None,
                to=email or None,
            )
        )
    return callbacks


with DAG(
    dag_id="release_gate",
    description="Stage a table, gate it on re-identification risk, publish it",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one run publishes the target at a time
    tags=["reident", "release"],
    default_args={"retries": 2, "retry_delay": datetime.timedelta(seconds=5)},
    user_defined_macros={"release_hierarchies": release_hierarchies},
    params={
        "staged_table": "staged_release",
        "published_table": "published_release",
        "quasi_identifiers": "sex,age,race",
        "generalize_age": True,
        "max_records_at_risk": 0.01,
        "max_average_risk": 0.05,
        "preset": None,
        "warn_max_records_at_risk": None,
        "warn_max_average_risk": None,
        "warn_min_k": None,
        "on_breach": "fail",
        "anonymize_on_breach": False,
        "anonymized_table": "anonymized_release",
        "k": 5,
        "suppression_limit": 0.01,
        "hierarchy_overrides": {},
        "direct_match_target": 50,
        "report_path": "",
        "require_approval": False,
    },
) as dag:

    @task
    def stage(params: dict[str, Any] | None = None) -> int:
        """Seed the staged table from the bundled sample (the embedded default's load step)."""
        import pandas as pd

        p = params or {}
        sample = files("reident_airflow").joinpath("data/adult.csv")
        with sample.open("r", encoding="utf-8") as fh:
            frame = pd.read_csv(fh, sep=";", dtype=str, keep_default_na=False)
        if p.get("generalize_age", True):
            age = frame["age"].astype(int) // 10 * 10
            frame["age"] = age.astype(str) + "-" + (age + 9).astype(str)
        # a row key that survives anonymization (non-QI columns are untouched)
        frame.insert(0, KEY, range(1, len(frame) + 1))
        engine = sqlalchemy_engine(STAGING_CONN)
        try:
            frame.to_sql(
                p.get("staged_table", "staged_release"),
                engine,
                if_exists="replace",
                index=False,
                chunksize=5000,
            )
        finally:
            engine.dispose()
        return len(frame)

    assess = ReidentificationRiskOperator(
        task_id="assess",
        conn_id=STAGING_CONN,
        table="{{ params.staged_table }}",
        quasi_identifiers="{{ params.quasi_identifiers }}",
        **GATE,
        # the identifier scan (a warning by default) judges the columns of the source; the
        # row key this DAG adds is a row number of the staged copy, linked to nothing else
        scan_allow_columns=KEY,
        report_path="{{ params.report_path or '' }}",
        # when anonymizing, a breach is handled downstream: assess only reports it
        on_breach="{{ 'warn' if params.anonymize_on_breach else params.on_breach }}",
        on_failure_callback=_failure_callbacks(),
    )

    @task.branch
    def choose(params: dict[str, Any] | None = None, ti: Any = None) -> list[str]:
        """Publish as staged, or anonymize first (breach with ``anonymize_on_breach``)."""
        p = params or {}
        report = ti.xcom_pull(task_ids="assess") if ti is not None else None
        if p.get("anonymize_on_breach") and report is not None and not report["passed"]:
            return list(ANONYMIZE_PATH)
        return ["approve"]

    anonymize = DataflyOperator(
        task_id="anonymize",
        conn_id=STAGING_CONN,
        table="{{ params.staged_table }}",
        quasi_identifiers="{{ params.quasi_identifiers }}",
        k="{{ params.k }}",
        suppression_limit="{{ params.suppression_limit }}",
        hierarchies="{{ release_hierarchies(params) }}",
        target_table="{{ params.anonymized_table }}",
        on_failure_callback=_failure_callbacks(),
    )

    reassess = ReidentificationRiskOperator(
        task_id="reassess",
        conn_id=STAGING_CONN,
        table="{{ params.anonymized_table }}",
        quasi_identifiers="{{ params.quasi_identifiers }}",
        **GATE,
        scan_allow_columns=KEY,
        on_breach="fail",
        on_failure_callback=_failure_callbacks(),
    )

    # asks with assess's verdict, advice and report link; writes the answer (or the timeout's
    # "Reject") into that report's sign-off block; a "Reject" skips publish
    approve = ReleaseSignOffOperator(
        task_id="approve",
        report_task_id="assess",
        subject="Publish {{ params.staged_table }} to {{ params.published_table }}?",
        response_timeout=APPROVAL_TIMEOUT,
        required="{{ params.require_approval }}",
    )

    @task
    def publish(params: dict[str, Any] | None = None) -> int:
        """Publish the staged table atomically (readers never see a half-written table)."""
        from reident_airflow.sources.sql import copy_table_atomic

        p = params or {}
        engine = sqlalchemy_engine(STAGING_CONN)
        try:
            return copy_table_atomic(engine, p["staged_table"], p["published_table"])
        finally:
            engine.dispose()

    @task
    def released_original(params: dict[str, Any] | None = None) -> int:
        """The staged records Datafly released (suppressed ones left out), row for row with the
        anonymized table: what the direct-match check compares it with."""
        import sqlalchemy as sa

        p = params or {}
        engine = sqlalchemy_engine(STAGING_CONN)
        try:
            with engine.begin() as conn:
                staged = sa.Table(p["staged_table"], sa.MetaData(), autoload_with=conn)
                anonymized = sa.Table(p["anonymized_table"], sa.MetaData(), autoload_with=conn)
                target = sa.Table(
                    f"{p['anonymized_table']}{ORIGINAL_SUFFIX}",
                    sa.MetaData(),
                    *(sa.Column(c.name, c.type) for c in staged.columns),
                )
                target.drop(conn, checkfirst=True)
                target.create(conn)
                released = sa.select(anonymized.c[KEY])
                conn.execute(
                    sa.insert(target).from_select(
                        [c.name for c in staged.columns],
                        sa.select(*staged.columns).where(staged.c[KEY].in_(released)),
                    )
                )
                count = conn.execute(sa.select(sa.func.count()).select_from(target))
                return int(count.scalar_one())
        finally:
            engine.dispose()

    direct_match = DirectMatchProtectionOperator(
        task_id="direct_match",
        conn_id=STAGING_CONN,
        original_table="{{ params.anonymized_table }}" + ORIGINAL_SUFFIX,
        avatar_table="{{ params.anonymized_table }}",
        key=KEY,
        target="{{ params.direct_match_target }}",
        on_breach="fail",
        on_failure_callback=_failure_callbacks(),
    )

    @task
    def publish_anonymized(params: dict[str, Any] | None = None) -> int:
        """Publish the anonymized table atomically, once it passed the gate."""
        from reident_airflow.sources.sql import copy_table_atomic

        p = params or {}
        engine = sqlalchemy_engine(STAGING_CONN)
        try:
            return copy_table_atomic(engine, p["anonymized_table"], p["published_table"])
        finally:
            engine.dispose()

    branch = choose()
    stage() >> assess >> branch
    chain(branch, approve, publish())
    path = [anonymize, reassess, released_original(), direct_match, publish_anonymized()]
    chain(*path)
    # Every task of the path also hangs on `choose` itself, so that the branch's skip, or a
    # failed `assess`, reaches all of them at once instead of one scheduling pass per task.
    branch >> path

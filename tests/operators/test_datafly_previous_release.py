"""DataflyOperator compares its release with the one it replaces before publishing (issue 28).

The releases of tests/cli/test_previous_release.py, by hand: run 1 stages 40 records of (F,
100) and 6 of (M, 200); run 2 drops two (M, 200) records and admits one (F, 100) patient.
Datafly at k = 2 generalizes nothing (classes of 40 and 6, then 41 and 4), so each release is
its staged table. Against run 1's release, run 2 has one arrival alone in (F, 100): a(c) = 1
breaches ``min_arrival_k = 2`` (nothing is published), and two departures in (M, 200):
d(c) = 2. Run 1 has nothing to compare: it publishes, ``since_last_release`` null.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests.cli.test_previous_release import CANDIDATE, PREVIOUS
from tests.conftest import require_server
from tests.operators._fakes import PushedTI, make_operator

HIERARCHIES = {"sex": {"type": "masking", "steps": [1]}, "zip": {"type": "masking", "steps": [1]}}


def _operator(engine: sa.Engine | None = None, **kwargs: Any) -> DataflyOperator:
    options: dict[str, Any] = {
        "quasi_identifiers": "sex,zip",
        "k": 2,
        "suppression_limit": 0,
        "hierarchies": HIERARCHIES,
        "min_arrival_k": "2",
    }
    options.update(kwargs)
    return make_operator(DataflyOperator, engine, **options)


def _run(op: DataflyOperator) -> tuple[dict[str, Any] | None, PushedTI]:
    ti = PushedTI()
    return op.execute({"ti": ti}), ti  # type: ignore[arg-type]


def test_file_target_across_two_runs(tmp_path: Path) -> None:
    PREVIOUS.to_csv(tmp_path / "day1.csv", index=False)
    CANDIDATE.to_csv(tmp_path / "day2.csv", index=False)
    target = tmp_path / "release.csv"
    first, _ = _run(_operator(path=str(tmp_path / "day1.csv"), target_path=str(target)))
    assert first is not None and first["since_last_release"] is None  # nothing to compare
    published = target.read_bytes()
    assert len(pd.read_csv(target)) == 46

    op = _operator(path=str(tmp_path / "day2.csv"), target_path=str(target))
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach) as caught:
        op.execute({"ti": ti})  # type: ignore[arg-type]
    assert target.read_bytes() == published  # not published
    assert caught.value.breaches == [
        {"metric": "since_last_release.arrivals.k", "observed": 1.0, "limit": 2.0}
    ]
    assert "hold back 1 of the 1 arrivals" in str(caught.value)
    since = ti.pushed["return_value"]["since_last_release"]
    assert (since["arrivals"]["k"], since["departures"]["k"]) == (1, 2)
    assert ti.pushed["return_value"]["passed"] is False


def test_without_a_limit_the_report_is_unchanged(tmp_path: Path) -> None:
    PREVIOUS.to_csv(tmp_path / "day1.csv", index=False)
    op = _operator(
        path=str(tmp_path / "day1.csv"), target_path=str(tmp_path / "r.csv"), min_arrival_k=None
    )
    report, _ = _run(op)
    assert report is not None and "since_last_release" not in report


def test_a_departure_limit_that_passes_publishes(tmp_path: Path) -> None:
    PREVIOUS.to_parquet(tmp_path / "old.parquet", index=False)
    CANDIDATE.to_csv(tmp_path / "day2.csv", index=False)
    target = tmp_path / "release.parquet"
    op = _operator(
        path=str(tmp_path / "day2.csv"),
        target_path=str(target),
        previous_release=str(tmp_path / "old.parquet"),
        min_arrival_k=None,
        min_departure_k="2",
    )
    report, _ = _run(op)
    # d(c) = 2 passes 2; compared with the named previous release, not the (absent) target
    assert report is not None and report["since_last_release"]["departures"]["k"] == 2
    assert len(pd.read_parquet(target)) == 45


def test_a_bad_limit_fails_before_reading(tmp_path: Path) -> None:
    op = _operator(path=str(tmp_path / "x.csv"), target_path=str(tmp_path / "r.csv"))
    op.min_arrival_k = "0"
    with pytest.raises(ReidentConfigurationError, match="min_arrival_k must be >= 1"):
        _run(op)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[sa.Engine, str]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    else:
        url = require_server(request.param)
    engine = sa.create_engine(url)
    prefix = f"i28gate_{uuid.uuid4().hex[:8]}"
    PREVIOUS.to_sql(f"{prefix}_day1", engine, index=False)
    CANDIDATE.to_sql(f"{prefix}_day2", engine, index=False)
    try:
        yield engine, prefix
    finally:
        with engine.begin() as conn:
            for table in sa.inspect(conn).get_table_names():
                if table.startswith(prefix) or table.startswith("reident_compare_"):
                    sa.Table(table, sa.MetaData()).drop(conn)
        engine.dispose()


def test_table_target_across_two_runs(database: tuple[sa.Engine, str]) -> None:
    engine, prefix = database
    target = f"{prefix}_release"
    first, _ = _run(_operator(engine, conn_id="db", table=f"{prefix}_day1", target_table=target))
    assert first is not None and first["since_last_release"] is None
    op = _operator(engine, conn_id="db", table=f"{prefix}_day2", target_table=target)
    with pytest.raises(ReidentificationBreach):
        _run(op)
    with engine.connect() as conn:
        assert conn.execute(sa.text(f'SELECT COUNT(*) FROM "{target}"')).scalar() == 46
        names = sa.inspect(conn).get_table_names()
    assert not [n for n in names if n.startswith("reident_compare_")]  # the scratch is gone


# -- warning levels: the risk operator's warn_ names, semantics and outcome ----------------
ARRIVAL_K = "since_last_release.arrivals.k"
DEPARTURE_K = "since_last_release.departures.k"


@pytest.fixture
def alerted(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The breaches a skip or a warn hands to the task's notifiers."""
    from reident_airflow.operators import breach_action

    seen: list[Any] = []
    monkeypatch.setattr(breach_action, "_alert_from_task", lambda ctx, b, log: seen.append(b))
    return seen


def _two_runs(tmp_path: Path, **kwargs: Any) -> tuple[Path, DataflyOperator]:
    """Run 1 published to ``release.csv``; the operator of run 2 (not run yet)."""
    PREVIOUS.to_csv(tmp_path / "day1.csv", index=False)
    CANDIDATE.to_csv(tmp_path / "day2.csv", index=False)
    target = tmp_path / "release.csv"
    _run(_operator(path=str(tmp_path / "day1.csv"), target_path=str(target), **kwargs))
    return target, _operator(path=str(tmp_path / "day2.csv"), target_path=str(target), **kwargs)


def test_a_warning_level_alerts_and_publishes(tmp_path: Path, alerted: list[Any]) -> None:
    # arrival k = 1 (module docstring) crosses warn_min_arrival_k = 2; no failing level
    target, op = _two_runs(tmp_path, min_arrival_k=None, warn_min_arrival_k="2")
    assert alerted == []  # run 1: nothing to compare, nothing crossed
    report, ti = _run(op)
    warning = {"metric": ARRIVAL_K, "observed": 1.0, "limit": 2.0}
    assert report is not None and report["passed"] is True
    assert report["warnings"] == [warning]
    assert ti.pushed["return_value"] == report
    assert len(pd.read_csv(target)) == 45  # published
    [breach] = alerted
    assert breach.breaches == [] and breach.report["outcome"] == "warn"
    assert breach.report["warnings"] == [warning]
    assert "warning levels" in str(breach) and f"{ARRIVAL_K} = 1 (limit: at least 2)" in str(breach)


def test_a_failing_level_met_and_its_warning_level_crossed(
    tmp_path: Path, alerted: list[Any]
) -> None:
    # departure k = 2: meets min_departure_k = 2, crosses warn_min_departure_k = 3
    target, op = _two_runs(tmp_path, min_arrival_k=None, min_departure_k=2, warn_min_departure_k=3)
    report, _ = _run(op)
    assert report is not None and report["passed"] is True
    assert report["warnings"] == [{"metric": DEPARTURE_K, "observed": 2.0, "limit": 3.0}]
    assert len(pd.read_csv(target)) == 45
    assert [b.report["outcome"] for b in alerted] == ["warn"]


def test_a_breach_is_not_a_warning_too(tmp_path: Path, alerted: list[Any]) -> None:
    # arrival k = 1 breaches min_arrival_k = 2; its warning level 3 adds no warning
    target, op = _two_runs(tmp_path, warn_min_arrival_k=3)
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach) as caught:
        op.execute({"ti": ti})  # type: ignore[arg-type]
    assert caught.value.breaches == [{"metric": ARRIVAL_K, "observed": 1.0, "limit": 2.0}]
    assert ti.pushed["return_value"]["warnings"] == []
    assert alerted == []  # a fail is alerted by the failure callback, once
    assert len(pd.read_csv(target)) == 46  # run 1's release stays


def test_a_warning_level_within_its_limits_is_silent(tmp_path: Path, alerted: list[Any]) -> None:
    # departure k = 2 meets warn_min_departure_k = 2
    _, op = _two_runs(tmp_path, min_arrival_k=None, warn_min_departure_k=2)
    report, _ = _run(op)
    assert report is not None and report["warnings"] == [] and alerted == []


def test_without_a_warning_level_the_report_has_no_warnings(tmp_path: Path) -> None:
    _, op = _two_runs(tmp_path, min_arrival_k=None, min_departure_k=2)
    report, _ = _run(op)
    assert report is not None and "warnings" not in report  # as before warning levels


def test_a_warning_level_laxer_than_its_limit_is_refused(tmp_path: Path) -> None:
    op = _operator(
        path=str(tmp_path / "x.csv"), target_path=str(tmp_path / "r.csv"), warn_min_arrival_k=1
    )
    with pytest.raises(ReidentConfigurationError, match="warn_min_arrival_k"):
        _run(op)


# ------------------------------------------------------------------------- release ledger
def test_file_target_with_a_ledger_when_the_release_is_gone(tmp_path: Path) -> None:
    # run 1 keeps a ledger; its release is then shipped away (deleted here): run 2 is compared
    # with the ledger and breaches exactly as it does against the release (a(c) = 1, d(c) = 2)
    PREVIOUS.to_csv(tmp_path / "day1.csv", index=False)
    CANDIDATE.to_csv(tmp_path / "day2.csv", index=False)
    target = tmp_path / "release.csv"
    ledger = tmp_path / "release.csv.ledger.parquet"
    _run(_operator(path=str(tmp_path / "day1.csv"), target_path=str(target), release_ledger=True))
    assert ledger.is_file()
    target.unlink()
    op = _operator(path=str(tmp_path / "day2.csv"), target_path=str(target), release_ledger=True)
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach) as caught:
        op.execute({"ti": ti})  # type: ignore[arg-type]
    assert caught.value.breaches == [
        {"metric": "since_last_release.arrivals.k", "observed": 1.0, "limit": 2.0}
    ]
    since = ti.pushed["return_value"]["since_last_release"]
    assert (since["arrivals"]["k"], since["departures"]["k"]) == (1, 2)
    assert not target.exists()  # nothing published


def test_without_release_ledger_no_ledger_is_kept(tmp_path: Path) -> None:
    PREVIOUS.to_csv(tmp_path / "day1.csv", index=False)
    _run(_operator(path=str(tmp_path / "day1.csv"), target_path=str(tmp_path / "r.csv")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day1.csv", "r.csv"]


def test_table_target_with_a_ledger_named_as_previous_release(
    database: tuple[sa.Engine, str],
) -> None:
    engine, prefix = database
    target = f"{prefix}_release"
    first, _ = _run(
        _operator(
            engine, conn_id="db", table=f"{prefix}_day1", target_table=target, release_ledger=True
        )
    )
    assert first is not None
    with engine.begin() as conn:  # the release is gone; its ledger stays
        sa.Table(target, sa.MetaData()).drop(conn)
    op = _operator(
        engine,
        conn_id="db",
        table=f"{prefix}_day2",
        target_table=target,
        previous_release=f"{target}__ledger",
    )
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach):
        op.execute({"ti": ti})  # type: ignore[arg-type]
    since = ti.pushed["return_value"]["since_last_release"]
    assert (since["arrivals"]["k"], since["departures"]["k"]) == (1, 2)


def test_table_target_falls_back_to_its_ledger(database: tuple[sa.Engine, str]) -> None:
    # release_ledger=True and no previous_release: the target is gone, its ledger answers
    engine, prefix = database
    target = f"{prefix}_release"
    _run(
        _operator(
            engine, conn_id="db", table=f"{prefix}_day1", target_table=target, release_ledger=True
        )
    )
    with engine.begin() as conn:
        sa.Table(target, sa.MetaData()).drop(conn)
    op = _operator(
        engine, conn_id="db", table=f"{prefix}_day2", target_table=target, release_ledger=True
    )
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach):
        op.execute({"ti": ti})  # type: ignore[arg-type]
    since = ti.pushed["return_value"]["since_last_release"]
    assert (since["arrivals"]["k"], since["departures"]["k"]) == (1, 2)
    with engine.connect() as conn:
        assert not sa.inspect(conn).has_table(target)  # nothing published

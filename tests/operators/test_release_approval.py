"""The release DAG's approval step (Airflow's human-in-the-loop): its timeout and default,
and the unattended run without ``require_approval``, with ``dag.test()``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.operators._dags import load_dag, sqlite_conn, states
from tests.operators.test_release_gate import _cleanup, _conf, _table_names

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    # Airflow's REST routes declare a Field alias pydantic warns about on import
    pytest.mark.filterwarnings("ignore::pydantic.warnings.UnsupportedFieldAttributeWarning"),
]

#: How long the responder waits for the request to appear (the staging and the assessment of
#: 30,162 rows come first).
_WAIT = 240.0


@pytest.fixture
def sqlite_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    db = tmp_path / "staging.db"
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_STAGING", sqlite_conn(db))
    return f"sqlite:///{db}"


def test_the_request_times_out_to_reject() -> None:
    """A request nobody answers takes its default, "Reject", after the timeout: no publish."""
    import datetime

    task = load_dag("release_gate").get_task("approve")
    assert task.response_timeout == datetime.timedelta(hours=24)
    assert task.defaults == ["Reject"]
    assert task.downstream_task_ids == {"sign_off"}


def test_without_require_approval_the_run_is_unattended(sqlite_staging: str) -> None:
    conf = _conf()
    try:
        run = load_dag("release_gate").test(run_conf=conf)
        got = states(run)
        assert run.state == "success", got
        assert got["approve"][0] == "success" and got["sign_off"][0] == "success", got
        assert conf["published_table"] in _table_names(sqlite_staging)
    finally:
        _cleanup(sqlite_staging, conf)

"""Load the example DAGs from dags/ and run them with ``dag.test()``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, ensure_airflow_db


def load_dag(name: str) -> Any:
    ensure_airflow_db()
    path = ROOT / "dags" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"reident_example_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def sqlite_conn(path: Path) -> str:
    return json.dumps({"conn_type": "sqlite", "host": str(path)})


def server_conn(url: str) -> str:
    import sqlalchemy as sa

    u = sa.make_url(url)
    conn_type = "postgres" if u.get_backend_name() == "postgresql" else "mysql"
    return json.dumps(
        {
            "conn_type": conn_type,
            "host": u.host,
            "port": u.port,
            "login": u.username,
            "schema": u.database,
        }
    )


def states(run: Any) -> dict[str, tuple[str | None, int]]:
    return {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}

"""Docker cannot run on the development machines: check what can be checked without it."""

from __future__ import annotations

import re

import yaml

from tests.conftest import ROOT


def test_dockerfile_uses_the_pinned_airflow_and_constraints() -> None:
    text = (ROOT / "docker" / "Dockerfile").read_text(encoding="utf-8")
    pinned = re.search(r"^apache-airflow==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M)
    assert pinned is not None
    assert f"ARG AIRFLOW_VERSION={pinned.group(1)}" in text
    assert "FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}" in text
    assert "-c /opt/reident/constraints.txt" in text
    # every path the Dockerfile copies exists in the build context (the repository root)
    for src in re.findall(r"^COPY (?:--chown=\S+ )?(.+) \S+$", text, re.M):
        for part in src.split():
            assert (ROOT / part).exists(), part


def test_compose_wires_staging_database_and_dags() -> None:
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert services["airflow"]["build"]["dockerfile"] == "docker/Dockerfile"
    env = services["airflow"]["environment"]
    assert "AIRFLOW_CONN_REIDENT_STAGING" in env
    import json

    conn = json.loads(env["AIRFLOW_CONN_REIDENT_STAGING"])
    db = services["staging-db"]["environment"]
    assert conn["host"] == "staging-db" and conn["schema"] == db["POSTGRES_DB"]
    assert conn["login"] == db["POSTGRES_USER"] and conn["password"] == db["POSTGRES_PASSWORD"]
    # the DAG reads the connection id that compose defines
    dag_text = (ROOT / "dags" / "release_gate.py").read_text(encoding="utf-8")
    assert 'STAGING_CONN = "reident_staging"' in dag_text

"""The run-dependent templates the docs and docstrings show (``where``, ``sign_off``,
``report_path``) render on every kind of Airflow 3 run (issue 29, item 4): a scheduled run,
a manual run without a logical date and an asset-triggered run, which has none either.

Airflow 3's task runner (``RuntimeTaskInstance.get_template_context``) puts ``logical_date``,
``ds``, ``ts`` and ``data_interval_*`` in the context only when the run has a logical date;
``run_id`` and ``dag_run`` (with ``run_after``) are always there. Templates render with
``StrictUndefined``, so a name left out fails the task.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import ROOT

#: A Jinja expression as the docs write one: ``{{ `` ... `` }}``.
_EXPRESSION = re.compile(r"\{\{ [^{}]+ \}\}")
#: Names whose value is the same on every kind of run (the DAG's own params, XComs, ...).
_RUN_INDEPENDENT = re.compile(r"\b(params|ti|var|conn|macros)\.")
#: The notifier's message template has its own placeholders (not Airflow's context).
_OWN_PLACEHOLDERS = {ROOT / "reident_airflow" / "notifiers" / "message.py"}


def _docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree, *ast.walk(tree)]
    return [
        doc
        for node in nodes
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and (doc := ast.get_docstring(node))
    ]


def documented() -> list[str]:
    """Every run-dependent ``{{ ... }}`` of the docs, the README and the package's docstrings."""
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md"))]
    texts.append((ROOT / "README.md").read_text(encoding="utf-8"))
    for path in sorted((ROOT / "reident_airflow").rglob("*.py")):
        if path not in _OWN_PLACEHOLDERS:
            texts += _docstrings(path)
    found = {m for text in texts for m in _EXPRESSION.findall(text)}
    return sorted(e for e in found if not _RUN_INDEPENDENT.search(e))


RUN_AFTER = datetime(2026, 12, 6, 4, 0, tzinfo=UTC)


def _context(run_type: str) -> dict[str, Any]:
    """The parts of Airflow 3's task context a date or run template reads, per run type."""
    run_id = f"{run_type}__{RUN_AFTER.isoformat()}"
    logical = RUN_AFTER if run_type == "scheduled" else None
    ctx: dict[str, Any] = {
        "run_id": run_id,
        "dag": SimpleNamespace(dag_id="release"),
        "task": SimpleNamespace(task_id="gate"),
        "dag_run": SimpleNamespace(run_id=run_id, run_after=RUN_AFTER, logical_date=logical),
    }
    if logical is not None:  # as the task runner: these only with a logical date
        ctx.update(
            logical_date=logical,
            ds=logical.strftime("%Y-%m-%d"),
            ts=logical.isoformat(),
            data_interval_start=logical,
            data_interval_end=logical,
        )
    return ctx


def test_the_docs_show_date_templates() -> None:
    # the test below would pass vacuously if the docs showed none
    assert any("run_after" in e for e in documented())
    assert any("run_id" in e for e in documented())


@pytest.mark.parametrize("run_type", ["scheduled", "manual", "asset_triggered"])
def test_every_documented_template_renders_on_every_kind_of_run(run_type: str) -> None:
    from airflow.sdk import DAG

    env = DAG("reident_docs_templates", schedule=None).get_template_env()
    ctx = _context(run_type)
    for expression in documented():
        rendered = env.from_string(expression).render(**ctx)  # StrictUndefined: raises
        assert rendered.strip(), expression
    day = env.from_string("{{ (logical_date | default(dag_run.run_after)) | ds }}").render(**ctx)
    assert day == "2026-12-06"


_DAG_FILE = """
import json, sys
from airflow.sdk import DAG, task

TEMPLATES = json.loads(sys.argv[1]) if __name__ == "__main__" else {}

with DAG("reident_docs_templates", schedule=None) as dag:

    @task(templates_dict=TEMPLATES)
    def show(templates_dict=None):
        print("RENDERED " + json.dumps(templates_dict))

    show()

if __name__ == "__main__":
    from datetime import datetime, timezone

    given = {"manual": None, "scheduled": datetime(2026, 12, 6, tzinfo=timezone.utc)}
    run = dag.test(logical_date=given[sys.argv[2]])
    print("STATE " + str(run.state))
"""


@pytest.mark.parametrize("run_type", ["manual", "scheduled"])
def test_the_documented_templates_render_in_dag_test(tmp_path: Path, run_type: str) -> None:
    """A real Airflow 3 run: ``dag.test(logical_date=None)`` is a manual run without a
    logical date (as an asset-triggered run has none), ``dag.test(logical_date=...)`` one
    with it."""
    (tmp_path / "dags").mkdir()
    dag_file = tmp_path / "dags" / "docs_templates_dag.py"
    dag_file.write_text(_DAG_FILE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(tmp_path),
        AIRFLOW__CORE__DAGS_FOLDER=str(tmp_path / "dags"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
    )
    airflow = Path(sys.executable).with_name("airflow")
    migrate = subprocess.run([str(airflow), "db", "migrate"], env=env, capture_output=True)
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    templates = {str(i): e for i, e in enumerate(documented())}
    done = subprocess.run(
        [sys.executable, str(dag_file), json.dumps(templates), run_type],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert "STATE success" in output, output[-4000:]
    line = next(x for x in output.splitlines() if "RENDERED " in x)
    rendered = json.loads(line.split("RENDERED ", 1)[1])
    assert set(rendered) == set(templates) and all(v.strip() for v in rendered.values())

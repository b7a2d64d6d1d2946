"""``table="public.t"``: a dot is part of a quoted table name, so the table is not found; the
message says how to name table ``t`` of schema ``public`` (``schema=`` / ``--schema``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError
from reident_airflow.sources.sql import histogram_from_sql
from tests.cli._cli import one_line_error, run
from tests.conftest import require_server
from tests.operators._fakes import PushedTI

# the default schema of each backend, as a user would prefix it
SCHEMAS = [
    pytest.param(("sqlite", "main"), id="sqlite"),
    pytest.param(("postgresql", "public"), id="postgresql", marks=pytest.mark.db),
    pytest.param(("mariadb", "test"), id="mariadb", marks=pytest.mark.db),
]


@pytest.fixture
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """(url, schema, table): a table ``t_<uuid>`` in the backend's default schema."""
    kind, schema = request.param
    url = f"sqlite:///{tmp_path / 'names.db'}" if kind == "sqlite" else require_server(kind)
    engine = sa.create_engine(url)
    name = f"t_{uuid.uuid4().hex[:8]}"
    table = sa.Table(name, sa.MetaData(), sa.Column("zip", sa.String(8)))
    table.create(engine)
    try:
        yield url, schema, name
    finally:
        table.drop(engine, checkfirst=True)
        engine.dispose()


@pytest.mark.parametrize("backend", SCHEMAS, indirect=True)
def test_a_dotted_table_name_hints_at_schema(backend: tuple[str, str, str]) -> None:
    url, schema, name = backend
    dotted = f"{schema}.{name}"
    hint = f"give schema={schema!r}, table={name!r}"
    with pytest.raises(InvalidInputError, match="does not exist") as info:
        histogram_from_sql(url, ["zip"], table=dotted)
    assert hint in str(info.value) and "\n" not in str(info.value)

    op = ReidentificationRiskOperator(
        task_id="t", conn_id="x", table=dotted, quasi_identifiers="zip"
    )
    engine = sa.create_engine(url)
    op.get_engine = lambda conn_id: engine  # type: ignore[method-assign]  # the test seam
    with pytest.raises(ReidentConfigurationError, match="does not exist") as failed:
        op.execute({"ti": PushedTI()})
    assert hint in str(failed.value)

    code, _, err = run("assess", url, "--table", dotted, "--qi", "zip")
    line = one_line_error(code, err)
    assert f"--schema {schema} --table {name}" in line


def test_no_hint_when_a_schema_is_given(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'names.db'}"
    sa.create_engine(url).dispose()
    with pytest.raises(InvalidInputError) as info:
        histogram_from_sql(url, ["zip"], table="a.b", schema="main")
    assert "schema=" not in str(info.value)

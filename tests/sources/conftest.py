"""Engines of the database servers, for the source tests (see tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.conftest import require_server


@pytest.fixture
def postgresql() -> Iterator[sa.Engine]:
    """An engine of the PostgreSQL server (under CI=true, failing when it is unreachable)."""
    made = sa.create_engine(require_server("postgresql"))
    yield made
    made.dispose()


@pytest.fixture
def mariadb() -> Iterator[sa.Engine]:
    """An engine of the MariaDB server (under CI=true, failing when it is unreachable)."""
    made = sa.create_engine(require_server("mariadb"))
    yield made
    made.dispose()

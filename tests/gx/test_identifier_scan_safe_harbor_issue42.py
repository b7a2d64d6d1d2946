"""Issue 42 item 2 in Great Expectations: ``admit_month`` (``2025-05``) fails
``ExpectTableToHoldNoDirectIdentifiers(safe_harbor=True)`` on a pandas frame and in SQLite, as
an exact date does (Safe Harbor removes every element of a date but its year)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.gx import ExpectTableToHoldNoDirectIdentifiers
from tests.gx.conftest import sql_batch

FRAME = pd.DataFrame(
    {
        "sex": ["FM"[i % 2] for i in range(48)],
        "admit_month": [f"2025-{1 + i % 12:02d}" for i in range(48)],
    }
)


@pytest.mark.parametrize("engine", ["pandas", "sqlite"])
@pytest.mark.parametrize("safe_harbor", [True, False])
def test_admit_month_under_safe_harbor(
    engine: str,
    safe_harbor: bool,
    pandas_batch: Callable[..., Any],
    context: Any,
    tmp_path: Path,
) -> None:
    if engine == "pandas":
        batch = pandas_batch(FRAME)
    else:
        url = f"sqlite:///{tmp_path / 'months.db'}"
        FRAME.to_sql("months", sa.create_engine(url), index=False)
        batch = sql_batch(context, url, "months")
    expectation = ExpectTableToHoldNoDirectIdentifiers(
        quasi_identifiers=["sex"], safe_harbor=safe_harbor
    )
    result = batch.validate(expectation)
    assert result.success is (not safe_harbor)
    details = result.result["details"]
    assert details["failing"] == (["admit_month"] if safe_harbor else [])
    # what the scan looked at of the 18 Safe Harbor categories travels with the result
    categories = details["assessment"]["safe_harbor_categories"]
    assert (categories is not None and len(categories) == 18) is safe_harbor

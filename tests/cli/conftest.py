"""The command-line tests run ``reident`` in process: its delayed progress lines
(``commands.common.PROGRESS_DELAY``) would appear on stderr whenever a busy machine makes a
run last longer than the delay, so they are held back here; the progress tests set the delay
themselves."""

from __future__ import annotations

import pytest

from reident_airflow.commands import common


@pytest.fixture(autouse=True)
def _no_delayed_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "PROGRESS_DELAY", 3600.0)

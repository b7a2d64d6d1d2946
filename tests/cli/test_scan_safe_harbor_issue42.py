"""Issue 42 item 2 on the command line: ``admit_month`` (``2025-05``) fails ``reident scan
--safe-harbor --policy fail`` as an exact date does; without ``--safe-harbor`` it passes. The
expected verdict is Safe Harbor's rule (every element of a date but its year), not a run's."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli._cli import run


def _table(tmp_path: Path) -> Path:
    path = tmp_path / "admissions.csv"
    rows = ["sex,admit_month"] + [f"{'FM'[i % 2]},2025-{1 + i % 12:02d}" for i in range(40)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_admit_month_fails_the_scan_under_safe_harbor(tmp_path: Path) -> None:
    path = _table(tmp_path)
    code, out, err = run(
        "scan", str(path), "--qi", "sex", "--policy", "fail", "--safe-harbor", "--json", "-"
    )
    doc = json.loads(out)
    assert code == 1, err
    assert doc["failing"] == ["admit_month"]
    verdicts = {c["column"]: c["verdict"] for c in doc["columns"]}
    assert verdicts["admit_month"] == "quasi-identifier not declared"
    assert "2025-" not in err  # the reasons hold counts, never a value


def test_admit_month_passes_without_safe_harbor(tmp_path: Path) -> None:
    code, out, _ = run("scan", str(_table(tmp_path)), "--qi", "sex", "--policy", "fail")
    assert code == 0, out

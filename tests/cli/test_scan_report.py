"""``reident scan --report PATH.html`` (issue 42 item 6: the scan had no report).

On ``planted.csv`` (tests/data/identifiers; its verdicts are derived column by column in
``make_tables.py``) under ``--policy fail``: five failing columns, ``note`` a possible
identifier; on ``clean.csv`` every column is clear. The report names every column with its
verdict, gives the scan's verdict, and holds no value of the table.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests._identifiers import DATA, PLANTED_FAILING, PLANTED_VERDICTS, assert_no_value
from tests.cli._cli import run


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_failing_scan_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "scan.html"
    code, stdout, err = run(
        "scan",
        str(DATA / "planted.csv"),
        "--qi",
        "sex,ethnicity",
        "--safe-harbor",
        "--policy",
        "fail",
        "--report",
        str(out),
        "--quiet",
    )
    assert code == 1, err
    html = out.read_text(encoding="utf-8")
    text = _text(html)
    assert "Identifier scan report" in text
    assert "BREACHED" in text
    assert f"{len(PLANTED_FAILING)} of {len(PLANTED_VERDICTS)} columns failed the scan" in text
    for column, verdict in PLANTED_VERDICTS.items():
        if verdict != "clear":
            assert re.search(rf"\b{column}\b.*?{verdict}", text), column
    assert_no_value(html, stdout, err)


def test_a_clean_scan_passes_in_its_report(tmp_path: Path) -> None:
    out = tmp_path / "clean.html"
    code, _, err = run(
        "scan",
        str(DATA / "clean.csv"),
        "--qi",
        "sex,age,zip",
        "--safe-harbor",
        "--report",
        str(out),
    )
    assert code == 0, err
    assert f"report written to {out}" in err
    text = _text(out.read_text(encoding="utf-8"))
    assert "PASSED" in text
    assert "no column of" in text and "flagged" in text


def test_the_report_and_the_json_may_not_be_one_file(tmp_path: Path) -> None:
    same = tmp_path / "x.html"
    code, _, err = run("scan", str(DATA / "clean.csv"), "--json", str(same), "--report", str(same))
    assert code == 2, err
    assert "name the same file" in err

"""The Datafly report's before/after view and the fingerprints of its input and output
(issue 29, item 3): the JSON pushed to XCom and the HTML report, against hand-computed values
on a 9-record table with one quasi-identifier.

The table (``zip``): 10001 x2, 10002 x1, 10003 x3, 20001 x3. Its hierarchy: 1000x -> "1000*",
20001 -> "2000*", then "*" (top level 2).

- Before (level 0): classes of sizes 2, 1, 3, 3 -> 4 classes, k = 1, prosecutor (= journalist,
  no register) risk 1/1 = 1, marketer 4/9, every record's risk 1/|E| >= 1/3 > 0.2 -> 100 %
  at risk, discernibility 2^2 + 1^2 + 3^2 + 3^2 = 23, precision 1, nothing suppressed.
- k = 2, suppression limit 0: 1 record (10002) below k > 0 -> zip to level 1: classes
  "1000*" (6) and "2000*" (3), none below k. After: 9 records, 2 classes, k = 3, prosecutor
  1/3, marketer 2/9, records at risk 3/9 (the class of 3; 1/6 <= 0.2), precision
  1 - 1/2 = 0.5, discernibility 6^2 + 3^2 = 45, nothing suppressed.
- k = 2, default limit (k = 2 records): 1 record below k <= 2 -> suppressed, no
  generalization. After: 8 records, classes 2, 3, 3 -> 3 classes, k = 2, prosecutor 1/2,
  marketer 3/8, records at risk 8/8, precision 1, discernibility 4 + 9 + 9 + 1 x 9 = 31,
  1 record suppressed.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from reident_airflow.operators.datafly import DataflyOperator
from tests._schemas import assert_valid, schema_errors
from tests.cli._cli import run
from tests.operators._fakes import PushedTI

ROWS = "zip,n\n10001,1\n10001,2\n10002,3\n10003,4\n10003,5\n10003,6\n20001,7\n20001,8\n20001,9\n"
HIERARCHY = "10001;1000*;*\n10002;1000*;*\n10003;1000*;*\n20001;2000*;*\n"

BEFORE = {
    "records": 9,
    "classes": 4,
    "smallest_class": 1,
    "prosecutor_risk": 1.0,
    "journalist_risk": 1.0,
    "marketer_risk": 4 / 9,
    "records_at_risk": 1.0,
    "suppressed_records": 0,
    "precision": 1.0,
    "discernibility": 23,
}
AFTER_GENERALIZED = {
    "records": 9,
    "classes": 2,
    "smallest_class": 3,
    "prosecutor_risk": 1 / 3,
    "journalist_risk": 1 / 3,
    "marketer_risk": 2 / 9,
    "records_at_risk": 3 / 9,
    "suppressed_records": 0,
    "precision": 0.5,
    "discernibility": 45,
}
AFTER_SUPPRESSED = {
    "records": 8,
    "classes": 3,
    "smallest_class": 2,
    "prosecutor_risk": 0.5,
    "journalist_risk": 0.5,
    "marketer_risk": 3 / 8,
    "records_at_risk": 1.0,
    "suppressed_records": 1,
    "precision": 1.0,
    "discernibility": 31,
}


def _run(tmp_path: Path, **kwargs: Any) -> tuple[dict[str, Any], Path, Path, Path]:
    data, zips = tmp_path / "staged.csv", tmp_path / "zip.csv"
    data.write_text(ROWS)
    zips.write_text(HIERARCHY)
    target, report = tmp_path / "released.csv", tmp_path / "report.html"
    op = DataflyOperator(
        task_id="datafly",
        path=str(data),
        quasi_identifiers=["zip"],
        k=2,
        hierarchies={"zip": str(zips)},
        target_path=str(target),
        report_path=str(report),
        **kwargs,
    )
    result = op.execute({"ti": PushedTI()})
    return result, data, target, report


def _close(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12), key


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _before_after_rows(page: str) -> dict[str, tuple[str, str]]:
    """The before/after table of the report: measure -> (before, after), as text."""
    section = page.split('id="datafly-before-after"', 1)[1].split("</table>", 1)[0]
    rows = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", section, flags=re.S):
        cells = [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        ]
        if len(cells) == 3:
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def test_generalized_release_before_and_after(tmp_path: Path) -> None:
    result, data, target, report = _run(tmp_path, suppression_limit=0)
    assert result["levels"] == {"zip": 1}
    assert_valid(result)  # reident.datafly.v1.schema.json, with before/after
    broken = {**result, "after": {**result["after"], "prosecutor_risk": 3.0}}
    assert schema_errors(broken)
    _close(result["before"], BEFORE)
    _close(result["after"], AFTER_GENERALIZED)
    # the after side's loss is the run's own information loss
    assert result["after"]["precision"] == result["information_loss"]["precision"]
    assert result["after"]["discernibility"] == result["information_loss"]["discernibility"]

    fp_in, fp_out = result["input"], result["output_fingerprint"]
    assert (fp_in["kind"], fp_in["location"], fp_in["rows"]) == ("file", str(data), 9)
    assert fp_in["sha256"] == _sha256(data)
    assert (fp_out["kind"], fp_out["location"], fp_out["rows"]) == ("file", str(target), 9)
    assert fp_out["sha256"] == _sha256(target)
    assert fp_out["size_bytes"] == target.stat().st_size

    page = report.read_text()
    rows = _before_after_rows(page)
    # count() and number() (4 significant digits) and percent() of report/_format.py
    assert rows["records"] == ("9", "9")
    assert rows["equivalence classes"] == ("4", "2")
    assert rows["k (smallest class)"] == ("1", "3")
    assert rows["prosecutor risk (highest, 1 / k)"] == ("1", "0.3333")
    assert rows["marketer risk (classes / records)"] == ("0.4444", "0.2222")
    assert rows["records at risk (risk above 0.2)"] == ("100 %", "33.3 %")
    assert rows["records suppressed"] == ("0", "0")
    assert rows["precision (1 = unchanged)"] == ("1", "0.5")
    assert rows["discernibility"] == ("23", "45")
    assert _sha256(data) in page
    assert _sha256(target) in page


def test_suppressed_release_before_and_after(tmp_path: Path) -> None:
    result, _, target, report = _run(tmp_path)
    assert result["levels"] == {"zip": 0}
    _close(result["before"], BEFORE)
    _close(result["after"], AFTER_SUPPRESSED)
    assert result["output_fingerprint"]["rows"] == 8
    assert result["output_fingerprint"]["sha256"] == _sha256(target)
    rows = _before_after_rows(report.read_text())
    assert rows["records"] == ("9", "8")
    assert rows["k (smallest class)"] == ("1", "2")
    assert rows["records suppressed"] == ("0", "1")
    assert rows["marketer risk (classes / records)"] == ("0.4444", "0.375")
    assert rows["discernibility"] == ("23", "31")


def test_cli_json_and_report_have_before_after_and_fingerprints(tmp_path: Path) -> None:
    # `reident datafly`: the same table and figures as the operator's generalized release
    data, zips = tmp_path / "staged.csv", tmp_path / "zip.csv"
    data.write_text(ROWS)
    zips.write_text(HIERARCHY)
    target, out_json, report = (tmp_path / n for n in ("out.csv", "r.json", "r.html"))
    code, _, err = run(
        "datafly", str(data), "--qi", "zip", "--k", "2", "--suppression-limit", "0",
        "--hierarchy", f"zip={zips}", "--output", str(target),
        "--json", str(out_json), "--report", str(report), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out_json.read_text())
    assert_valid(result)
    _close(result["before"], BEFORE)
    _close(result["after"], AFTER_GENERALIZED)
    assert (result["input"]["rows"], result["input"]["sha256"]) == (9, _sha256(data))
    assert (result["output_fingerprint"]["rows"], result["output_fingerprint"]["sha256"]) == (
        9,
        _sha256(target),
    )
    rows = _before_after_rows(report.read_text())
    assert rows["k (smallest class)"] == ("1", "3")
    assert rows["discernibility"] == ("23", "45")

"""Assessment documents holding an identifier scan, for the readers of the scan (issue 27).

The scan is the engine's own, run on ``tests/data/identifiers/planted.csv`` read as CSV
(what is planted where, and the verdicts it gets, are derived in ``make_tables.py`` and
pinned by ``tests/engine/test_scan_columns.py``); it is set into the nine-record assessment
of :mod:`tests.report.documents` as ``docs/contract.md`` says an assessment carries it: the
``identifier_scan`` object, and under the ``"fail"`` policy a breach
``identifier_scan.failing_columns`` (``"passed": false``), under ``"warn"`` a warning
``identifier_scan.flagged_columns``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from reident_airflow.engine.identifiers import ScanOptions, scan_columns
from reident_airflow.sources.files import FileSource
from tests._identifiers import DATA, planted_values
from tests.report.documents import small_breach

__all__ = ["PLANTED", "assessment_with_scan", "planted_scan", "planted_values"]

PLANTED = DATA / "planted.csv"

#: make_tables.py: ref is allowed here, sex and ethnicity declared; mrn and phone are
#: identifiers, age (97) and zip (restricted ZIP3) undeclared quasi-identifiers under Safe
#: Harbor, note (e-mails in free text) a possible identifier.
FAILING = ["mrn", "age", "zip", "phone"]
FLAGGED = ["mrn", "age", "zip", "phone", "note"]


@cache
def _scan(policy: str) -> dict[str, Any]:
    options = ScanOptions(
        policy=policy,
        safe_harbor=True,
        quasi_identifiers=("sex", "ethnicity"),
        allow_columns=("ref",),
    )
    with FileSource(str(PLANTED)) as source:
        return scan_columns(source, options).to_dict()


def planted_scan(policy: str = "fail") -> dict[str, Any]:
    """The scan of ``planted.csv`` as its JSON (a fresh copy)."""
    import copy

    return copy.deepcopy(_scan(policy))


def assessment_with_scan(policy: str = "fail", **changes: Any) -> dict[str, Any]:
    """The nine-record assessment with the planted scan, gated by it as the contract says
    (no other breach: the assessment's own ``min_k`` is met here)."""
    scan = planted_scan(policy)
    doc = small_breach(
        thresholds={"max_average_risk": 0.5},
        breaches=[],
        warnings=[],
        warn_thresholds={},
        passed=True,
        identifier_scan=scan,
    )
    doc.pop("advice")
    if policy == "fail" and scan["failing"]:
        failing = len(scan["failing"])
        doc["breaches"] = [
            {"metric": "identifier_scan.failing_columns", "observed": failing, "limit": 0}
        ]
        doc["passed"] = False
    elif policy == "warn" and scan["flagged"]:
        flagged = len(scan["flagged"])
        doc["warnings"] = [
            {"metric": "identifier_scan.flagged_columns", "observed": flagged, "limit": 0}
        ]
    doc.update(changes)
    return doc

"""The identifier scan attached to an assessment and gated by its policy
(``engine.assessment.with_identifier_scan``, docs/identifier-scan.md §9).

The assessment is of a hand-made histogram (two classes of 10 records on ``sex``: k = 10,
passing ``min_k=5``); the scan is of hand-made profiles whose verdicts follow from the name
rules alone (every column has two values, 10 records each: nothing unique, no content):

- ``mrn``: record number by name -> ``identifier`` (a failing verdict);
- ``mobile``: a weak phone name -> ``possible identifier`` (flagged, not failing);
- ``ward``: nothing -> ``clear``; ``sex``: declared quasi-identifier -> ``clear``.
"""

from __future__ import annotations

import numpy as np
import pytest

from reident_airflow.engine.assessment import (
    SCAN_FAILING,
    SCAN_FLAGGED,
    Assessment,
    assess,
    with_identifier_scan,
)
from reident_airflow.engine.catalogue import SCAN_GATES, threshold_of
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.identifiers import (
    CONTENT_PATTERNS,
    ColumnProfile,
    IdentifierScan,
    ScanOptions,
    scan,
)
from reident_airflow.engine.options import AssessmentOptions, Breach, Thresholds

NO_MATCHES = {kind: 0 for kind in CONTENT_PATTERNS if kind != "date"}


def _assessment() -> Assessment:
    sizes = ClassSizes(("sex",), np.array([10]), np.array([2]))
    options = AssessmentOptions(("sex",), thresholds=Thresholds(min_k=5), rank_attributes=False)
    return assess(sizes, options)


ALL = ("mrn", "mobile", "ward", "sex")


def _scan(policy: str, columns: tuple[str, ...] = ALL) -> IdentifierScan:
    profiles = [ColumnProfile(c, "string", 20, 0, 2, 0, matches=dict(NO_MATCHES)) for c in columns]
    return scan(profiles, ScanOptions(policy=policy, quasi_identifiers=("sex",)))


def test_the_scan_verdicts_this_file_rests_on() -> None:
    verdicts = {c.column: c.verdict for c in _scan("warn").columns}
    assert verdicts == {
        "mrn": "identifier",
        "mobile": "possible identifier",
        "ward": "clear",
        "sex": "clear",
    }


def test_under_fail_a_failing_column_breaches_the_gate() -> None:
    base = _assessment()
    assert base.passed and not base.warnings
    gated = with_identifier_scan(base, _scan("fail"))
    # one failing column (mrn); two flagged (mrn, mobile), one of them not failing
    assert gated.breaches == (Breach(SCAN_FAILING, 1.0, 0.0),)
    assert gated.warnings == (Breach(SCAN_FLAGGED, 2.0, 0.0),)
    assert not gated.passed
    document = gated.to_dict()
    assert document["passed"] is False
    assert list(document)[-1] == "identifier_scan"
    assert document["identifier_scan"]["failing"] == ["mrn"]
    assert document["identifier_scan"]["flagged"] == ["mrn", "mobile"]
    assert document["breaches"] == [
        {"metric": "identifier_scan.failing_columns", "observed": 1.0, "limit": 0.0}
    ]


def test_under_fail_possible_identifiers_only_warn() -> None:
    gated = with_identifier_scan(_assessment(), _scan("fail", ("mobile", "ward", "sex")))
    assert gated.passed and gated.breaches == ()
    assert gated.warnings == (Breach(SCAN_FLAGGED, 1.0, 0.0),)


def test_under_warn_flagged_columns_warn_and_the_release_passes() -> None:
    gated = with_identifier_scan(_assessment(), _scan("warn"))
    assert gated.passed and gated.breaches == ()
    assert gated.warnings == (Breach(SCAN_FLAGGED, 2.0, 0.0),)
    assert gated.to_dict()["identifier_scan"]["passed"] is True


def test_a_clear_scan_is_attached_without_a_warning() -> None:
    gated = with_identifier_scan(_assessment(), _scan("fail", ("ward", "sex")))
    assert gated.passed and gated.breaches == () and gated.warnings == ()
    assert gated.to_dict()["identifier_scan"]["flagged"] == []


def test_without_a_scan_the_json_is_unchanged() -> None:
    base = _assessment()
    off = with_identifier_scan(base, _scan("off"))
    assert off is base
    document = base.to_dict()
    assert "identifier_scan" not in document
    gated = with_identifier_scan(base, _scan("warn")).to_dict()
    # the scan adds its object and its warning, nothing else
    assert {k: v for k, v in gated.items() if k not in {"identifier_scan", "warnings"}} == {
        k: v for k, v in document.items() if k != "warnings"
    }


@pytest.mark.parametrize("metric", [SCAN_FAILING, SCAN_FLAGGED])
def test_the_scan_metrics_are_in_the_catalogue(metric: str) -> None:
    spec = threshold_of(metric)
    assert spec is SCAN_GATES[metric] and spec.whole and not spec.minimum
    assert spec.label.startswith("Columns")
    assert Breach(metric, 2.0, 0.0).describe() == f"{metric} = 2 (limit: at most 0)"

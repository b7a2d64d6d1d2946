"""The plain-text assessment summary (terminals, task logs): the verdict line, lowest risk
beside highest and average, the preset and its source, the warnings and what to do on a
breach of ``min_k``. The documents are hand-made: ``tests/report/documents.py`` shows every
number's computation."""

from __future__ import annotations

import pytest

from reident_airflow.engine.presets import PRESETS
from reident_airflow.report.view import AssessmentView
from reident_airflow.summary import assessment_summary
from tests.report.documents import INFEASIBLE_DATAFLY, SMALL_BREACH, small_breach, without


def _lines(doc: object) -> list[str]:
    return assessment_summary(doc).splitlines()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "verdict"),
    [
        ({}, "BREACHED"),
        ({"passed": True, "breaches": []}, "PASSED WITH WARNINGS"),
        ({"passed": True, "breaches": [], "warnings": []}, "PASSED"),
        ({"passed": None}, "INCOMPLETE (the result holds no verdict)"),
    ],
    ids=["breached", "warned", "passed", "no-verdict"],
)
def test_verdict_line(changes: dict[str, object], verdict: str) -> None:
    assert _lines(small_breach(**changes))[0] == f"Re-identification risk: {verdict}"


def test_lowest_risk_beside_highest_and_average() -> None:
    # highest 1, average 4/9 = 0.444444, lowest 1/5 = 0.2
    lines = _lines(SMALL_BREACH)
    at = lines.index("  highest risk      : 1")
    assert lines[at + 1 : at + 3] == ["  average risk      : 0.444444", "  lowest risk       : 0.2"]


def test_lowest_risk_of_an_older_result_comes_from_the_histogram() -> None:
    doc = small_breach()
    del doc["prosecutor"]["lowest_risk"]  # 1 / largest class (5) = 0.2, as ARX defines it
    assert "  lowest risk       : 0.2" in _lines(doc)


def test_gate_names_the_preset_and_its_source() -> None:
    lines = _lines(SMALL_BREACH)
    at = lines.index("Gate")
    assert lines[at + 1] == f"  preset k5: {PRESETS['k5'].context}"
    assert lines[at + 2] == (
        "    source: the minimum class size of 5 used by many statistical agencies' output checks"
    )
    assert lines[at + 3] == "    min_k=3 given beside it replaces the preset's 5"
    assert lines[at + 4] == "  BREACH k: 1 < minimum 3"


def test_an_unknown_preset_is_named_as_given() -> None:
    assert "  preset house-rule-7 (not a preset this version knows)" in _lines(
        small_breach(preset="house-rule-7")
    )


def test_warnings_section() -> None:
    lines = _lines(SMALL_BREACH)
    at = lines.index("WARNINGS")
    # observed 4/9 = 0.444444 above the warning level 0.4
    assert lines[at + 1] == "  WARNING prosecutor.average_risk: 0.444444 > warning level 0.4"


def test_a_warning_on_a_minimum() -> None:
    doc = small_breach(
        passed=True,
        breaches=[],
        thresholds={"min_k": 1},
        warn_thresholds={"min_k": 3},
        warnings=[{"metric": "k", "observed": 1, "limit": 3}],
        advice=None,
    )
    text = assessment_summary(doc)
    assert text.startswith("Re-identification risk: PASSED WITH WARNINGS\n")
    assert "  WARNING k: 1 < warning level 3\n" in text
    assert "  all thresholds met (min_k=1)\n" in text
    assert "What to do" not in text


def test_what_to_do_paragraph() -> None:
    text = assessment_summary(SMALL_BREACH)
    paragraph = " ".join(text[text.index("What to do: ") :].split())
    assert paragraph == (
        "What to do: 3 of 4 classes, holding 4 of 9 records (44.4 %), are smaller than k=3; "
        "'a' drives the risk: without it the distinction falls from 0.4444 to 0.2222; "
        "Datafly at k=3 would generalize a→1, b→0 and suppress 2 record(s)."
    )
    assert all(len(line) <= 96 for line in text.splitlines() if "drives" in line)


def test_what_to_do_when_datafly_cannot_reach_k() -> None:
    doc = small_breach(advice={**SMALL_BREACH["advice"], "driver": None})
    doc["advice"]["datafly"] = INFEASIBLE_DATAFLY
    text = " ".join(assessment_summary(doc).split())
    assert (
        "are smaller than k=3; Datafly cannot reach k=3 within its suppression limit of 0 "
        "record(s): at a→1, b→0, 2 record(s) are still below k." in text
    )
    assert "drives" not in text


def test_the_summary_reads_the_view_the_same() -> None:
    view = AssessmentView.from_dict(SMALL_BREACH)
    assert assessment_summary(view) == assessment_summary(SMALL_BREACH)


@pytest.mark.parametrize(
    "keys", [("advice",), ("preset",), ("advice", "preset", "warn_thresholds", "warnings")]
)
def test_older_documents_without_the_new_keys(keys: tuple[str, ...]) -> None:
    text = assessment_summary(without(*keys))
    assert text.startswith("Re-identification risk: BREACHED\n")
    assert "  BREACH k: 1 < minimum 3\n" in text
    assert ("What to do" in text) is ("advice" not in keys)
    assert ("  preset " in text) is ("preset" not in keys)
    assert ("WARNINGS" in text) is ("warnings" not in keys)


def test_an_empty_document() -> None:
    text = assessment_summary({})
    assert text.startswith("Re-identification risk: INCOMPLETE")
    assert "  lowest risk" not in text and "Journalist model    : based on n/a" in text


def _passed_with(thresholds: dict[str, object], **more: object) -> str:
    doc = small_breach(
        passed=True, breaches=[], warnings=[], advice=None, thresholds=thresholds, **more
    )
    return assessment_summary(doc)


def test_a_limit_on_arrivals_is_not_said_met_on_a_first_release() -> None:
    # issue 42 item 6: "all thresholds met (..., min_arrival_k=2)" for a limit not checked:
    # the first release has no previous one (since_last_release null), so no arrival to count
    text = _passed_with({"min_k": 1, "min_arrival_k": 2}, since_last_release=None)
    assert "  all thresholds met (min_k=1)\n" in text
    assert "min_arrival_k=2" not in text
    assert "  not checked (nothing to measure): min_arrival_k" in text


def test_a_limit_on_arrivals_is_not_said_met_when_nothing_arrived() -> None:
    nothing = {"records": 0, "classes": 0, "k": None, "highest_risk": None, "histogram": []}
    since = {
        "schema": "reident.differencing/v1",
        "quasi_identifiers": ["a", "b"],
        "previous_records": 9,
        "records": 9,
        "arrivals": nothing,
        "departures": nothing,
    }
    text = _passed_with({"min_k": 1, "min_arrival_k": 2}, since_last_release=since)
    assert "  all thresholds met (min_k=1)\n" in text
    assert "  not checked (nothing to measure): min_arrival_k" in text
    # arrivals counted (k = 3): the limit was checked, and met
    arrived = {**nothing, "records": 3, "classes": 1, "k": 3, "highest_risk": 1 / 3}
    text = _passed_with(
        {"min_k": 1, "min_arrival_k": 2}, since_last_release={**since, "arrivals": arrived}
    )
    assert "  all thresholds met (min_k=1, min_arrival_k=2)\n" in text
    assert "not checked" not in text

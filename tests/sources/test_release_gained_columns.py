"""A release that gained (or dropped) a column: part of the verdict, a breach for a QI.

Issue 42 item 6: two releases were compared "on the columns both hold" with only a log line
to say a column was left out. The columns only one release holds are now named in the
``reident.differencing/v1`` JSON, the text summary and the report; a quasi-identifier the
previous release did not hold breaches the gate (every record's value of it is new
information to whoever keeps both releases), and the rows are compared on the QIs both hold.
The expected counts come from :func:`tests.sources.test_release_changes.reference`, the
plain-Python multiset difference, on the columns both releases hold.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reident_airflow.engine.assessment import assess, with_release_difference
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.differencing import differencing
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.options import AssessmentOptions, Thresholds
from reident_airflow.report.render import render_report
from reident_airflow.summary import assessment_summary
from tests._schemas import assert_valid
from tests.cli._cli import run
from tests.sources.test_release_changes import (
    BACKENDS,
    COLUMNS,
    MIXED,
    PREVIOUS,
    QIS,
    Made,
    Release,
    made,
    reference,
    summary,
)

__all__ = ["made"]

# the candidate adds a free-text note (not a QI) and an age band (a QI when declared so), and
# no longer holds the diagnosis
WIDER = Release(
    ("sex", "zip", "note", "age"),
    tuple((s, z, f"n{i}", ("20-29", "30-39")[i % 2]) for i, (s, z, _) in enumerate(MIXED.rows)),
)


def _changes(make: Made, qis: tuple[str, ...]) -> Any:
    with make(WIDER, "candidate") as new, make(PREVIOUS, "previous") as old:
        return new.release_changes(old, qis)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_columns_only_one_release_holds_are_named(
    made: Callable[[str], Made], backend: str
) -> None:
    changes = _changes(made(backend), QIS)
    assert changes.gained_columns == ("note", "age")
    assert changes.dropped_columns == ("diagnosis",)
    assert changes.gained_quasi_identifiers == ()
    assert summary(changes) == reference(PREVIOUS, WIDER, QIS)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gained_quasi_identifier_is_named_and_the_shared_ones_compared(
    made: Callable[[str], Made], backend: str
) -> None:
    changes = _changes(made(backend), ("sex", "age", "zip"))
    assert changes.gained_quasi_identifiers == ("age",)
    assert changes.quasi_identifiers == ("sex", "zip")
    # counted as the reference counts on the QIs both releases hold
    assert summary(changes) == reference(PREVIOUS, WIDER, QIS)


def test_a_previous_release_holding_none_of_the_qis_is_refused(
    made: Callable[[str], Made],
) -> None:
    with pytest.raises(InvalidInputError, match="holds none of the quasi-identifiers"):
        _changes(made("csv"), ("age",))


def _assessed(qis: tuple[str, ...], make: Made, **limits: Any) -> Any:
    # the assessment of the candidate on all its QIs; the difference from the previous release
    sizes = ClassSizes(qis, np.array([len(WIDER.rows)]), np.array([1]))
    options = AssessmentOptions(
        quasi_identifiers=qis,
        thresholds=Thresholds(**limits),
        rank_attributes=False,
        previous_release="previous.csv",
    )
    result = assess(sizes, options)
    return with_release_difference(result, differencing(_changes(make, qis)))


def test_a_gained_qi_breaches_the_gate_with_no_limit_set(made: Callable[[str], Made]) -> None:
    result = _assessed(("sex", "zip", "age"), made("parquet"))
    assert not result.passed
    [breach] = result.breaches
    assert (breach.metric, breach.observed, breach.limit) == (
        "since_last_release.gained_quasi_identifiers",
        1.0,
        0.0,
    )
    document = result.to_dict()
    assert_valid(document)
    since = document["since_last_release"]
    assert since["gained_quasi_identifiers"] == ["age"]
    assert since["gained_columns"] == ["note", "age"]
    assert since["dropped_columns"] == ["diagnosis"]
    text = assessment_summary(document)
    assert "BREACHED" in text
    assert "gained the quasi-identifier(s) age" in text
    assert "columns gained    : note, age" in text
    html = render_report(document)
    assert "gained the quasi-identifier(s) age" in html
    assert "n0" not in text + html  # names only, never a value


def test_a_gained_non_qi_column_is_part_of_the_verdict_not_a_breach(
    made: Callable[[str], Made],
) -> None:
    result = _assessed(QIS, made("csv"), min_arrival_k=1)
    assert result.passed
    document = result.to_dict()
    assert_valid(document)
    assert document["since_last_release"]["gained_columns"] == ["note", "age"]
    assert document["since_last_release"]["gained_quasi_identifiers"] == []
    text = assessment_summary(document)
    assert "columns gained    : note, age" in text
    assert "columns dropped   : diagnosis" in text
    assert "quasi-identifier(s)" not in text
    html = render_report(document)
    assert "columns gained (not compared)" in html


def test_the_same_columns_leave_the_lists_empty(made: Callable[[str], Made]) -> None:
    make = made("frame")
    with make(MIXED, "candidate") as new, make(PREVIOUS, "previous") as old:
        changes = new.release_changes(old, QIS)
    assert (changes.gained_columns, changes.dropped_columns) == ((), ())
    assert MIXED.columns == COLUMNS


def test_the_command_line_breaches_on_a_gained_qi(tmp_path: Path) -> None:
    # end to end: `reident assess --previous`, exit 1 (breached) with no limit on arrivals
    for release, name in ((WIDER, "candidate"), (PREVIOUS, "previous")):
        with (tmp_path / f"{name}.csv").open("w", encoding="utf-8") as fh:
            fh.write(",".join(release.columns) + "\n")
            fh.writelines(",".join(row) + "\n" for row in release.rows)
    code, out, err = run(
        "assess",
        str(tmp_path / "candidate.csv"),
        "--qi",
        "sex,zip,age",
        "--previous",
        str(tmp_path / "previous.csv"),
        "--json",
        "-",
        "--no-advice",
    )
    assert code == 1, err
    document = json.loads(out)
    assert document["breaches"] == [
        {"metric": "since_last_release.gained_quasi_identifiers", "observed": 1, "limit": 0}
    ]
    assert document["since_last_release"]["gained_quasi_identifiers"] == ["age"]
    assert "n0" not in out + err

"""The JSON Schemas shipped in ``reident_airflow/schemas`` (issue 29): every document the
command line writes on the test inputs validates, with each optional part present (advice
with Datafly's outlook, the input's fingerprint of a file and of a database, a population,
sampling weights, sensitive columns, SUDA, a preset, warnings, an identifier scan); so do the
alerts the notifier builds; hand-made wrong documents do not.

The alerts that reach the local webhook receiver of ``tests/notifiers`` are validated there
too (every one those tests post), and the GX alert documents in ``tests/gx``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.engine import InvalidInputError
from reident_airflow.notifiers import breach_payload
from reident_airflow.outcomes import ReidentificationBreach
from reident_airflow.schemas import SCHEMA_IDS, json_schema
from tests._schemas import assert_valid, schema_errors
from tests._sdcmicro import sdcmicro_data, sdcmicro_summary
from tests.cli._cli import run
from tests.conftest import oracle_data
from tests.notifiers.test_breach_notifier import assessment_report, breach_exception, context_of
from tests.report.scan_documents import assessment_with_scan, planted_scan

ADULT = str(oracle_data("adult.csv"))
SCHEMAS = Path(__file__).resolve().parents[2] / "reident_airflow" / "schemas"


def hierarchies(*qis: str) -> list[str]:
    args: list[str] = []
    for qi in qis:
        args += ["--hierarchy", f"{qi}={oracle_data(f'adult_hierarchy_{qi}.csv')}"]
    return args


def written(tmp_path: Path, command: str, *argv: str) -> dict[str, Any]:
    """The JSON ``reident COMMAND`` writes with ``--json`` (exit 0 or 1)."""
    path = tmp_path / f"{command}.json"
    code, _, err = run(command, *argv, "--json", str(path), "--quiet")
    assert code in (0, 1), err
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


# ------------------------------------------------------------------------ the schemas


def test_every_shipped_schema_is_a_draft_2020_12_schema_of_its_id() -> None:
    files = sorted(p.name for p in SCHEMAS.glob("*.schema.json"))
    assert files == sorted(i.replace("/", ".") + ".schema.json" for i in SCHEMA_IDS)
    for schema_id in SCHEMA_IDS:
        schema = json_schema(schema_id)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["title"] == schema_id
        assert schema["properties"]["schema"] == {"const": schema_id}
    with pytest.raises(InvalidInputError, match=r"no JSON Schema for 'reident\.alert/v1'"):
        json_schema("reident.alert/v1")


# ------------------------------------------------------------------------ the CLI's documents

ASSESSMENTS: dict[str, Callable[[Path], list[str]]] = {
    # a breach of min_k with the advice (driver and Datafly's outlook over ARX's hierarchies),
    # a population size, a sensitive column, a warning level crossed, a file's fingerprint
    "advice_population_sensitive_warning": lambda _: [
        ADULT, "--sep", ";", "--qi", "sex,age,race", "--min-k", "5",
        "--max-highest-risk", "0.2", "--warn-max-average-risk", "0.01",
        *hierarchies("sex", "age", "race"), "--sensitive", "salary-class",
        "--population-size", "100000",
    ],
    # sdcMicro's testdata: sampling weights, two sensitive columns, SUDA2
    "weights_sensitive_suda": lambda _: [
        str(sdcmicro_data("testdata_data.csv")),
        "--qi", ",".join(sdcmicro_summary()["testdata"]["keyVars"]),
        "--weight", "sampling_weight", "--sensitive", "hhcivil,age", "--suda",
    ],
    # a register of the population: the journalist's success rate
    "population_table": lambda _: [
        str(oracle_data("adult_subset.csv")), "--sep", ";", "--qi", "sex,race",
        "--population-table", ADULT,
    ],
    "region_and_preset": lambda _: [
        ADULT, "--sep", ";", "--qi", "sex,race", "--region", "usa", "--preset", "k5",
    ],
    "no_advice_no_fingerprint_no_ranking": lambda _: [
        ADULT, "--sep", ";", "--qi", "sex,age", "--min-k", "5", "--no-advice",
        "--no-fingerprint", "--no-ranking",
    ],
    # a database table: the database's fingerprint (rows, server time)
    "database": lambda tmp: [
        _sqlite_adult(tmp), "--table", "adult", "--qi", "sex,race", "--max-average-risk", "0.5",
    ],
}  # fmt: skip


def _sqlite_adult(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'adult.sqlite'}"
    frame = pd.read_csv(ADULT, sep=";", dtype=str, usecols=["sex", "race"]).head(500)
    engine = sa.create_engine(url)
    try:
        frame.to_sql("adult", engine, index=False)
    finally:
        engine.dispose()
    return url


@pytest.mark.parametrize("case", list(ASSESSMENTS))
def test_the_assessments_the_cli_writes_validate(case: str, tmp_path: Path) -> None:
    document = written(tmp_path, "assess", *ASSESSMENTS[case](tmp_path))
    assert_valid(document)
    if case.startswith("advice"):  # the optional parts really are there
        assert document["advice"]["datafly"] is not None
        assert document["input"]["kind"] == "file" and document["warnings"]
        assert document["uniqueness"]["population"] is not None
    if case == "weights_sensitive_suda":
        assert document["individual_risk"] and document["suda"] and document["l_diversity"]
    if case == "database":
        assert document["input"]["kind"] == "database"


def test_an_assessment_with_an_identifier_scan_validates(tmp_path: Path) -> None:
    """The engine's scan of planted.csv, set into a written assessment as docs/contract.md
    says the gate carries it (the scan's own document and its breach)."""
    document = written(tmp_path, "assess", *ASSESSMENTS["region_and_preset"](tmp_path))
    scan = planted_scan("fail")
    document["identifier_scan"] = scan
    failing = len(scan["failing"])
    document["breaches"] = [
        {"metric": "identifier_scan.failing_columns", "observed": failing, "limit": 0}
    ]
    document["passed"] = False
    assert_valid(document)


def test_direct_match_and_datafly_documents_validate(tmp_path: Path) -> None:
    output = tmp_path / "released.csv"
    qis = ("sex", "age", "race")
    datafly = written(
        tmp_path, "datafly", ADULT, "--sep", ";", "--qi", ",".join(qis), "--k", "5",
        *hierarchies(*qis), "--output", str(output),
    )  # fmt: skip
    assert datafly["passed"] is True
    assert_valid(datafly)
    # the released table against the original: above a low target, below a high one
    for target, passed in (("50", True), ("99.99", False)):
        match = written(tmp_path, "direct-match", ADULT, str(output), "--sep", ";",
                        "--target", target)  # fmt: skip
        assert match["passed"] is passed
        assert_valid(match)
    # k out of reach (tests/cli/test_datafly_cli.py): the best attempt, nothing written
    flat_age = tmp_path / "age.csv"
    ages = pd.read_csv(ADULT, sep=";", dtype=str)["age"].unique()
    flat_age.write_text("".join(f"{a}\n" for a in ages), encoding="utf-8")
    infeasible = written(
        tmp_path, "datafly", ADULT, "--sep", ";", "--qi", "sex,age,race",
        "--hierarchy", f"sex={oracle_data('adult_hierarchy_sex.csv')}",
        "--hierarchy", f"age={flat_age}",
        "--hierarchy", f"race={oracle_data('adult_hierarchy_race.csv')}",
        "--k", "5", "--suppression-limit", "0", "--output", str(tmp_path / "none.csv"),
    )  # fmt: skip
    assert infeasible["passed"] is False
    assert_valid(infeasible)


# ------------------------------------------------------------------------ alerts


def _direct_match_breach() -> ReidentificationBreach:
    report = {
        "schema": "reident.direct_match/v1",
        "records": 500,
        "protection": 40.0,
        "target": 90.0,
        "below_target": ["zip"],
        "passed": False,
    }
    return ReidentificationBreach(
        "direct match",
        breaches=[{"metric": "direct_match.protection", "observed": 40.0, "limit": 90.0}],
        report=report,
        check="direct_match",
    )


def _outcome(outcome: str) -> ReidentificationBreach:
    return breach_exception(dict(assessment_report(), outcome=outcome))


ALERTS: dict[str, Callable[[], dict[str, Any]]] = {
    "breach": lambda: breach_payload(context_of(breach_exception())),
    "skipped": lambda: breach_payload(context_of(_outcome("skip"))),
    "warning": lambda: breach_payload(context_of(_outcome("warn"))),
    "error": lambda: breach_payload(context_of(ConnectionError("down"))),
    "error_without_exception": lambda: breach_payload(context_of(None)),
    "from_xcom": lambda: breach_payload(context_of(None), report=assessment_report()),
    "direct_match": lambda: breach_payload(context_of(_direct_match_breach())),
    "identifier_scan": lambda: breach_payload(
        context_of(None), report=assessment_with_scan("fail")
    ),
}


@pytest.mark.parametrize("case", list(ALERTS))
def test_the_alerts_validate(case: str) -> None:
    payload = ALERTS[case]()
    assert payload["schema"] == "reident.alert/v2"
    assert_valid(json.loads(json.dumps(payload)))  # as a webhook receives it


def test_the_event_of_each_outcome() -> None:
    assert [ALERTS[c]()["event"] for c in ("breach", "skipped", "warning", "error")] == [
        "reidentification_breach",
        "reidentification_skipped",
        "reidentification_warning",
        "reidentification_error",
    ]


# ------------------------------------------------------------------------ wrong documents


def _alert() -> dict[str, Any]:
    return json.loads(json.dumps(ALERTS["breach"]()))


def _assessment(tmp_path: Path) -> dict[str, Any]:
    return written(tmp_path, "assess", *ASSESSMENTS["region_and_preset"](tmp_path))


def _with(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``document`` with the dotted ``path`` set to ``value`` (or removed for
    ``...``)."""
    changed = copy.deepcopy(document)
    *parents, last = path.split(".")
    target = changed
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is ...:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return changed


WRONG_ALERTS = {
    "a v1 event": ("event", "task_failed"),
    "k as a float": ("k", 1.0),
    "a count metric's limit as a float": ("breaches.2.limit", 5.0),
    "records as text": ("records", "1200"),
    "a direct match's key on a risk alert": ("columns_below_target", []),
    "a breach that went ahead": ("outcome", "warn"),
    "no summary": ("text", ...),
    "the old schema id": ("schema", "reident.alert/v1"),
}


@pytest.mark.parametrize("case", list(WRONG_ALERTS))
def test_wrong_alerts_fail(case: str) -> None:
    path, value = WRONG_ALERTS[case]
    assert schema_errors(_alert()) == []
    assert schema_errors(_with(_alert(), path, value)) != []


def test_an_error_alert_with_a_gates_keys_fails() -> None:
    error = json.loads(json.dumps(ALERTS["error"]()))
    assert schema_errors(error) == []
    assert schema_errors(dict(error, breaches=[])) != []  # v1 sent empty keys
    assert schema_errors(dict(error, check=None, k=None)) != []


WRONG_ASSESSMENTS = {
    "k as a fraction": ("k", 1.5),
    "k as a float": ("k", 87.0),
    "a share above 1": ("prosecutor.highest_risk", 1.2),
    "no verdict": ("passed", ...),
    "a breach without a limit": ("breaches", [{"metric": "k", "observed": 1}]),
    "an unknown journalist basis": ("journalist.basis", "guess"),
    "a bad fingerprint hash": ("input.sha256", "not-a-hash"),
}


@pytest.mark.parametrize("case", list(WRONG_ASSESSMENTS))
def test_wrong_assessments_fail(case: str, tmp_path: Path) -> None:
    path, value = WRONG_ASSESSMENTS[case]
    document = _assessment(tmp_path)
    assert schema_errors(document) == []
    assert schema_errors(_with(document, path, value)) != []


def test_a_gx_alert_whose_event_contradicts_its_outcome_fails() -> None:
    document = {
        "schema": "reident.gx_alert/v1",
        "event": "reidentification_passed",
        "checkpoint": "gate",
        "run_name": None,
        "run_time": None,
        "success": True,
        "outcome": "pass",
        "validations": [],
    }
    assert schema_errors(document) == []
    assert schema_errors(dict(document, outcome="fail")) != []
    assert schema_errors(dict(document, event="reidentification_breach")) != []


def test_the_alert_shown_in_the_guide_validates() -> None:
    """The webhook body printed in docs/guides/alerts.md is a valid alert."""
    guide = (SCHEMAS.parents[1] / "docs" / "guides" / "alerts.md").read_text(encoding="utf-8")
    block = guide.split("```json\n", 1)[1].split("```", 1)[0]
    example = json.loads(block)
    assert example["schema"] == "reident.alert/v2"
    assert_valid(example)

"""What the command line tells a user who asks or mistypes (issue 19): help on every flag,
the exit codes in every ``--help``, a suggestion for a mistyped command, flag, choice or
column, and the ``--sep`` to try when a CSV header comes back as one column."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from reident_airflow.cli import build_parser
from tests.cli._cli import one_line_error, run
from tests.conftest import oracle_data

ADULT = str(oracle_data("adult.csv"))  # separated by ';'
HIERARCHIES = Path(ADULT).parent / "hierarchies"
COMMANDS = ("assess", "direct-match", "datafly")
#: docs/contract.md §1, "Exit codes".
EXIT_CODES = ("0", "1", "2", "130")


def _command_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    commands: dict[str, argparse.ArgumentParser] = parser.commands  # type: ignore[attr-defined]
    return commands


# ---------------------------------------------------------------------------------- --help
def test_top_level_help_lists_the_exit_codes() -> None:
    """The one subprocess run of this file: ``reident --help`` as a user sees it."""
    done = subprocess.run(
        [sys.executable, "-m", "reident_airflow.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    codes = done.stdout.split("exit codes:", 1)[1]
    for code in EXIT_CODES:
        assert f"\n  {code} " in codes, codes
    assert "a threshold was breached" in codes and "interrupted (Ctrl-C)" in codes
    for name in COMMANDS:
        assert name in done.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_every_flag_has_help_and_the_exit_codes_close_the_help(name: str) -> None:
    parser = _command_parsers()[name]
    missing = [
        action.option_strings or action.dest
        for action in parser._actions
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert missing == []
    text = parser.format_help()
    tail = text.split("exit codes:", 1)[1]
    for code in EXIT_CODES:
        assert f"\n  {code} " in tail, tail


def test_the_gate_flags_explain_their_limit() -> None:
    text = _command_parsers()["assess"].format_help()
    for flag in ("--max-highest-risk", "--max-average-risk", "--max-records-at-risk", "--min-k"):
        after = " ".join(text.split(f"  {flag} ", 1)[1].split()[:6])
        assert "gate:" in after, (flag, after)
        assert f"--warn-{flag[2:]}" in text


# ----------------------------------------------------------------------------- did you mean
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["asess", "x"], "invalid choice: 'asess' (did you mean 'assess'?)"),
        (["direct_match", "a", "b"], "(did you mean 'direct-match'?)"),
        (
            ["assess", "x", "--qi", "a", "--max-higest-risk", "0.1"],
            "unrecognized arguments: --max-higest-risk (did you mean --max-highest-risk?) 0.1",
        ),
        (
            ["assess", "x", "--qi", "a", "--min-kk=5"],
            "unrecognized arguments: --min-kk=5 (did you mean --min-k?)",
        ),
        (["assess", "x", "--qi", "a", "--region", "usaa"], "(did you mean 'usa'?)"),
        (["datafly", "x", "--qi", "a", "--k", "2", "--output", "o.csv", "--quite"], "--quiet?"),
    ],
)
def test_a_typo_gets_a_suggestion(argv: list[str], expected: str) -> None:
    line = one_line_error(*run(*argv)[::2])
    assert expected in line, line


def test_no_suggestion_for_something_unlike_any_flag() -> None:
    line = one_line_error(*run("assess", "x", "--qi", "a", "--zzzzzz")[::2])
    assert line.endswith("unrecognized arguments: --zzzzzz"), line


def test_a_mistyped_column_gets_a_suggestion(tmp_path: Path) -> None:
    assess = one_line_error(*run("assess", ADULT, "--sep", ";", "--qi", "sex,agee")[::2])
    assert "unknown quasi-identifier 'agee' (did you mean 'age'?)" in assess
    datafly = one_line_error(
        *run(
            "datafly", ADULT, "--sep", ";", "--qi", "sex,agee", "--k", "2",
            "--output", str(tmp_path / "o.csv"), "--quiet",
            "--hierarchy", f"sex={HIERARCHIES / 'adult_hierarchy_sex.csv'}",
            "--hierarchy", f"agee={HIERARCHIES / 'adult_hierarchy_age.csv'}",
        )[::2]
    )  # fmt: skip
    assert "unknown quasi-identifier 'agee' (did you mean 'age'?)" in datafly
    assert not (tmp_path / "o.csv").exists()
    matched = one_line_error(
        *run("direct-match", ADULT, ADULT, "--sep", ";", "--columns", "sex,rase")[::2]
    )
    assert "columns missing from the original table: ['rase'] (did you mean 'race'?)" in matched


# ------------------------------------------------------------------------------------ --sep
@pytest.mark.parametrize(
    ("header", "sep", "shown"),
    [("sex;age;race", ",", ";"), ("sex\tage\trace", ",", "\\t"), ("sex|age|race", ";", "|")],
)
def test_a_header_read_as_one_column_suggests_the_separator(
    tmp_path: Path, header: str, sep: str, shown: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(header + "\n" + header.replace("sex", "M").replace("age", "1") + "\n")
    line = one_line_error(*run("assess", str(path), "--sep", sep, "--qi", "sex,age")[::2])
    assert f"did you mean --sep '{shown}'?" in line, line
    assert "the header reads as one column" in line


def test_the_separator_hint_in_datafly_and_direct_match(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id;sex;age\n1;M;30\n2;F;40\n", encoding="utf-8")
    datafly = one_line_error(
        *run(
            "datafly", str(path), "--qi", "sex", "--k", "2", "--quiet",
            "--output", str(tmp_path / "o.csv"),
            "--hierarchy", f"sex={HIERARCHIES / 'adult_hierarchy_sex.csv'}",
        )[::2]
    )  # fmt: skip
    assert "did you mean --sep ';'?" in datafly
    matched = one_line_error(*run("direct-match", str(path), str(path), "--key", "id")[::2])
    assert "key column 'id' is missing from the original table" in matched
    assert "did you mean --sep ';'?" in matched

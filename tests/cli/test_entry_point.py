"""cli.py is only the entry point: commands import from commands.common, never from cli.py;
the assess command names every option as the flag a user typed."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import reident_airflow.commands as commands
from reident_airflow.cli import build_parser
from reident_airflow.commands.assess import FLAG_NAMES
from reident_airflow.engine.options import AssessmentOptions, Thresholds

COMMANDS_DIR = Path(commands.__file__).parent


def test_no_command_imports_the_entry_point() -> None:
    for path in sorted(COMMANDS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "reident_airflow.cli", path.name
                if node.module == "reident_airflow":
                    assert all(alias.name != "cli" for alias in node.names), path.name


def test_every_command_module_is_registered_in_help_order() -> None:
    # a command module is one that defines run() and add_arguments(); the others (common,
    # spark) are helpers of the commands
    names = sorted(
        p.stem
        for p in COMMANDS_DIR.glob("*.py")
        if {"run", "add_arguments"}
        <= {
            node.name
            for node in ast.parse(p.read_text(encoding="utf-8")).body
            if isinstance(node, ast.FunctionDef)
        }
    )
    assert "spark" not in names and "assess" in names
    assert sorted(m.rsplit(".", 1)[1] for m in commands.COMMAND_MODULES) == names
    help_text = build_parser().format_help()
    positions = [help_text.index(name) for name in ("assess", "direct-match", "datafly")]
    assert positions == sorted(positions)


def test_every_option_has_a_flag_of_the_assess_parser(capsys: pytest.CaptureFixture[str]) -> None:
    fields = {f.name for f in dataclasses.fields(AssessmentOptions)}
    fields -= {"thresholds", "warn_thresholds"}
    limits = {f.name for f in dataclasses.fields(Thresholds)}
    fields |= limits | {f"warn_{name}" for name in limits}
    assert set(FLAG_NAMES) == fields
    with pytest.raises(SystemExit):
        build_parser().parse_args(["assess", "--help"])
    usage = capsys.readouterr().out
    for flag in FLAG_NAMES.values():
        assert flag.split()[0] in usage, flag

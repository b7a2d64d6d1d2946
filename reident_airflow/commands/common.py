"""What the ``reident`` commands share: exit codes, argument types and their outputs.

Every command module imports these public names; :mod:`reident_airflow.cli` (the entry point)
imports the commands, never the reverse. The module loads nothing heavy: ``reident --help``
builds every command's parser from it.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "EXIT_BREACHED",
    "EXIT_PASSED",
    "EXIT_USAGE",
    "add_table_arguments",
    "check_run_paths",
    "column_names",
    "columns_as_written",
    "emit_outputs",
    "memory_size",
    "positive_int",
    "positive_number",
    "separator",
    "share",
    "write_atomic",
]

#: The run passed (or nothing was gated).
EXIT_PASSED = 0
#: A threshold was breached (or the anonymization could not reach its target).
EXIT_BREACHED = 1
#: A usage or input error: one line on stderr.
EXIT_USAGE = 2


# ---------------------------------------------------------------------------- argument types
def share(flag: str, *, allow_zero: bool = False) -> Callable[[str], float]:
    """An argument type: a share in ``(0, 1]`` (``[0, 1]`` with ``allow_zero``) for ``flag``."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        low_ok = v >= 0.0 if allow_zero else v > 0.0
        if not (low_ok and v <= 1.0):
            span = "[0, 1]" if allow_zero else "(0, 1]"
            raise argparse.ArgumentTypeError(f"must be in {span}, got {text}")
        return v

    parse.__name__ = flag
    return parse


def positive_int(text: str) -> int:
    """An argument type: a whole number >= 1 (``1_000`` allowed)."""
    try:
        v = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def positive_number(text: str) -> float:
    """An argument type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return v


def column_names(text: str) -> list[str]:
    """An argument type: column names separated by commas, each without surrounding spaces."""
    names = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise argparse.ArgumentTypeError("needs one or more column names separated by commas")
    return names


def columns_as_written(text: str) -> list[str]:
    """An argument type: column names separated by commas, kept as written: the reader looks
    each name up exactly first and only then without its surrounding spaces (docs/reading.md)."""
    names = text.split(",")
    if not text.strip() or any(not n.strip() for n in names):
        raise argparse.ArgumentTypeError("needs one or more column names separated by commas")
    return names


def memory_size(text: str) -> str:
    """An argument type: a memory size such as ``1GB`` or ``512MiB``."""
    import re

    if not re.fullmatch(r"\s*\d+(\.\d+)?\s*([KMGT]i?B|B)\s*", text, flags=re.IGNORECASE):
        raise argparse.ArgumentTypeError(f"must be a size such as 1GB or 512MB, got {text!r}")
    return text.strip()


def separator(text: str) -> str:
    """An argument type: a one-character CSV separator (``\\t``, ``tab`` for a tab)."""
    if text in {"\\t", "tab", "TAB"}:
        return "\t"
    if len(text) != 1:
        raise argparse.ArgumentTypeError(f"must be a single character, got {text!r}")
    return text


def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """``--sep``, ``--table`` and ``--schema``: how a command reads its INPUT, a CSV or Parquet
    file or a table of the database a SQLAlchemy URL names."""
    parser.add_argument("--sep", type=separator, default=",", help="CSV separator (default ',')")
    parser.add_argument("--table", help="table name when INPUT is a database URL")
    parser.add_argument("--schema", help="schema of --table (database input)")


# ----------------------------------------------------------------------------------- outputs
def emit_outputs(
    args: argparse.Namespace,
    payload: dict[str, Any],
    *,
    kind: str,
    out: TextIO,
    summary: Callable[[], str] | None = None,
) -> None:
    """What every command leaves behind: ``--json``, ``--report``, then the text summary
    (unless the JSON went to stdout)."""
    _emit_json(payload, args.json, out)
    if getattr(args, "report", None):
        from reident_airflow.report.runs import cli_report

        cli_report(args, payload, kind=kind)
    if summary is not None and args.json != "-":
        out.write(summary())


def _emit_json(payload: dict[str, Any], dest: str | None, out: TextIO) -> None:
    if dest is None:
        return
    text = json.dumps(payload, indent=2, allow_nan=False) + "\n"
    if dest == "-":
        out.write(text)
        return
    write_atomic(Path(dest), text)


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that readers see either the old content or the new, never a part.

    The file gets the mode a new file gets under the umask, or keeps the mode of the file it
    replaces; SIGTERM/SIGINT during the write leave no temporary file (:mod:`.._atomic`)."""
    from reident_airflow._atomic import atomic_file

    with atomic_file(path) as fh:
        fh.write(text.encode("utf-8"))


def check_run_paths(args: argparse.Namespace) -> None:
    """Before anything is read, computed or written: every output (``--json``, ``--report``,
    ``--output``) names none of the inputs (INPUT, ``--population-table``, hierarchy files,
    ORIGINAL/AVATAR) nor another output, and can be written (exit 2 otherwise)."""
    from reident_airflow._atomic import check_outputs

    outputs = [(f"--{name}", getattr(args, name, None)) for name in ("report", "output", "json")]
    inputs: list[tuple[str, str | None]] = []
    for name, label in (
        ("input", "the input file"),
        ("original", "the ORIGINAL file"),
        ("avatar", "the AVATAR file"),
    ):
        inputs.append((label, getattr(args, name, None)))
    population = getattr(args, "population_table", None)
    if population and "://" not in str(getattr(args, "input", "") or ""):
        inputs.append(("the --population-table file", population))
    for column, path in getattr(args, "hierarchy", None) or []:
        inputs.append((f"the hierarchy file of {column}", path))
    check_outputs(outputs, inputs, create_dirs=["--report"])

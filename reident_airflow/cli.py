"""The ``reident`` command line: the entry point (docs/contract.md).

Each sub-command lives in a module of :mod:`reident_airflow.commands` (listed in
``COMMAND_MODULES``) that registers its parser and handler; this module builds the top-level
parser from them, runs the handler and turns errors into exit codes.

Exit codes: 0 passed (or no thresholds given), 1 a threshold was breached (scan: a column
failed under ``--policy fail``), 2 usage or input error (one line on stderr; the traceback
only with ``--debug``), 130 interrupted. A mistyped command, flag or choice gets a suggestion
(``did you mean --max-highest-risk?``).
"""

from __future__ import annotations

import argparse
import difflib
import sys
import traceback
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any, NoReturn, TextIO

from reident_airflow.commands import COMMAND_MODULES, assess, datafly, direct_match, scan
from reident_airflow.commands.common import (
    EXIT_INTERRUPTED,
    EXIT_PASSED,
    EXIT_USAGE,
    add_command,
    check_run_paths,
    exit_codes_text,
)
from reident_airflow.engine.errors import ReidentError

__all__ = ["PROG", "build_parser", "closest", "main"]

PROG = "reident"

#: The command modules by name (each one's parser and handler: :mod:`reident_airflow.commands`).
_COMMANDS: dict[str, ModuleType] = {m.__name__: m for m in (assess, datafly, direct_match, scan)}


class _UsageError(Exception):
    """Raised by the argument parser instead of printing its usage block."""


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word`` (a typo of it), or ``None``."""
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    return close[0] if close else None


class _Parser(argparse.ArgumentParser):
    """Errors raise :class:`_UsageError`; an invalid choice gets a suggestion."""

    #: The sub-commands' parsers by name (top-level parser only).
    commands: dict[str, argparse.ArgumentParser]

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: error: {message}")

    # argparse's hook for choices (the one Python 3.14's suggest_on_error extends)
    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices:
            return
        listed = ", ".join(repr(c) for c in choices)
        close = closest(str(value), map(str, choices))
        hint = f" (did you mean {close!r}?)" if close else ""
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r}{hint} (choose from {listed})"
        )


# ------------------------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    """The ``reident`` parser: ``--debug`` and ``--version``, then every sub-command."""
    return _build()


def _build() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show the traceback of an error")

    parser = _Parser(
        prog=PROG,
        description="Re-identification risk gates for data releases (ARX-compatible).",
        epilog=exit_codes_text(
            "passed, or no threshold was given (datafly: the table was anonymized and written)",
            "a threshold was breached (scan: a column failed under --policy fail; datafly: k "
            "cannot be reached within the suppression limit; nothing is written)",
        )
        + "\n\nRun 'reident COMMAND --help' for a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    for name in COMMAND_MODULES:
        add_command(sub, [common], _COMMANDS[name])
    parser.commands = dict(sub.choices)
    return parser


def _unrecognized(parser: _Parser, args: argparse.Namespace, extras: list[str]) -> str:
    """The error for arguments no parser took: each unknown flag with the closest flag of the
    command (``--max-higest-risk`` -> ``--max-highest-risk``)."""
    target: argparse.ArgumentParser = parser.commands.get(args.command or "", parser)
    # argparse lists a parser's arguments only in ``_actions`` (no public accessor)
    flags = [f for action in target._actions for f in action.option_strings]
    parts = []
    for word in extras:
        flag = word.split("=", 1)[0]
        close = closest(flag, flags) if flag.startswith("-") else None
        parts.append(f"{word} (did you mean {close}?)" if close else word)
    return f"{target.prog}: error: unrecognized arguments: {' '.join(parts)}"


# ------------------------------------------------------------------------------------- main
def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run ``reident ARGV...``; the exit code (see the module docstring)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    parser = _build()
    try:
        args, extras = parser.parse_known_args(args_list)
        if extras:
            raise _UsageError(_unrecognized(parser, args, extras))
        if args.version:
            from reident_airflow import __version__

            out.write(f"reident {__version__}\n")
            return EXIT_PASSED
        if args.command is None:
            out.write(parser.format_help())
            return EXIT_USAGE
        check_run_paths(args)
        code: int = args.handler(args, out, err)
        return code
    except _UsageError as exc:
        err.write(f"{exc}\n")
        return EXIT_USAGE
    except ReidentError as exc:
        if debug:
            traceback.print_exc(file=err)
        err.write(f"{PROG}: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as exc:  # an unexpected failure: say what kind, never the data
        if debug:
            traceback.print_exc(file=err)
        err.write(f"{PROG}: error: {_failure(exc)}\n")
        return EXIT_USAGE


def _failure(exc: Exception) -> str:
    """One line for an exception no command turned into an input error: a database failure
    says where and why (:func:`~reident_airflow.sources.db_errors.failure_message`), anything
    else only its kind."""
    if "sqlalchemy" in sys.modules:  # a database was used: its failures say more
        from reident_airflow.sources.db_errors import failure_message

        message = failure_message(exc)
        if message is not None:
            return message
    from reident_airflow.engine.errors import resource_error

    exhausted = resource_error(exc)
    if exhausted is not None:
        return str(exhausted)
    return f"unexpected {type(exc).__name__} (run again with --debug for details)"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

"""The ``reident`` command line: the entry point (docs/contract.md).

Each sub-command lives in a module of :mod:`reident_airflow.commands` (listed in
``COMMAND_MODULES``) that registers its parser and handler; this module builds the top-level
parser from them, runs the handler and turns errors into exit codes.

Exit codes: 0 passed (or no thresholds given), 1 a threshold was breached, 2 usage or input
error (one line on stderr; the traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from importlib import import_module
from typing import NoReturn, TextIO

from reident_airflow.commands import COMMAND_MODULES
from reident_airflow.commands.common import EXIT_PASSED, EXIT_USAGE, check_run_paths
from reident_airflow.engine.errors import ReidentError

__all__ = ["PROG", "build_parser", "main"]

PROG = "reident"


class _UsageError(Exception):
    """Raised by the argument parser instead of printing its usage block."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: error: {message}")


# ------------------------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    """The ``reident`` parser: ``--debug`` and ``--version``, then every sub-command."""
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks on errors")

    parser = _Parser(
        prog=PROG,
        description="Re-identification risk gates for data releases (ARX-compatible).",
        parents=[common],
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    for name in COMMAND_MODULES:
        import_module(name).register(sub, [common])
    return parser


# ------------------------------------------------------------------------------------- main
def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run ``reident ARGV...``; the exit code (see the module docstring)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
        if args.version:
            from reident_airflow import __version__

            out.write(f"reident {__version__}\n")
            return EXIT_PASSED
        if args.command is None:
            out.write(parser.format_help())
            return EXIT_USAGE
        check_run_paths(args)
        code: int = args.handler(args, out)
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
        return 130
    except Exception as exc:  # an unexpected failure: say what kind, never the data
        if debug:
            traceback.print_exc(file=err)
        err.write(
            f"{PROG}: error: unexpected {type(exc).__name__} (run again with --debug for details)\n"
        )
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

"""What the ``reident`` commands share: exit codes, argument types, the parser of a command,
progress lines and the outputs.

Every command module imports these public names; :mod:`reident_airflow.cli` (the entry point)
imports the commands, never the reverse. The module loads nothing heavy: ``reident --help``
builds every command's parser from it.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO, TypeGuard

if TYPE_CHECKING:
    from reident_airflow.sources import Source
    from reident_airflow.sources.files import FileSource
    from reident_airflow.sources.sql import SqlSource

__all__ = [
    "EXIT_BREACHED",
    "EXIT_INTERRUPTED",
    "EXIT_PASSED",
    "EXIT_USAGE",
    "PROGRESS_DELAY",
    "SUPPRESSION_LIMIT_HELP",
    "Progress",
    "add_command",
    "add_hierarchy_arguments",
    "add_input_arguments",
    "add_output_arguments",
    "add_table_arguments",
    "check_run_paths",
    "column_names",
    "columns_as_written",
    "database_located",
    "emit_outputs",
    "exit_codes_text",
    "finish",
    "given_hierarchies",
    "hierarchy_arg",
    "html_path",
    "is_database",
    "memory_size",
    "open_source",
    "open_table",
    "positive_int",
    "positive_number",
    "separator",
    "share",
    "suppression_limit",
    "table_source",
    "write_atomic",
]

#: The run passed (or nothing was gated).
EXIT_PASSED = 0
#: A threshold was breached (or the anonymization could not reach its target).
EXIT_BREACHED = 1
#: A usage or input error: one line on stderr.
EXIT_USAGE = 2
#: Interrupted (Ctrl-C).
EXIT_INTERRUPTED = 130


def exit_codes_text(passed: str, breached: str) -> str:
    """The ``exit codes:`` block of a ``--help`` (docs/contract.md §1), with the meaning of
    0 and 1 for one command."""
    rows = (
        (EXIT_PASSED, passed),
        (EXIT_BREACHED, breached),
        (EXIT_USAGE, "usage or input error: one line on stderr (the traceback with --debug)"),
        (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
    )
    lines = ["exit codes:"]
    for code, meaning in rows:
        wrapped = textwrap.wrap(meaning, width=78)
        lines.append(f"  {code:<5}{wrapped[0]}")
        lines.extend(f"       {more}" for more in wrapped[1:])
    return "\n".join(lines)


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


def suppression_limit(text: str) -> int | float:
    """The argument type of ``--suppression-limit``: a count of records, a fraction or a
    percentage (:func:`~reident_airflow.engine.numbers.parse_suppression_limit`)."""
    from reident_airflow.engine.errors import InvalidInputError
    from reident_airflow.engine.numbers import parse_suppression_limit

    try:
        return parse_suppression_limit(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


SUPPRESSION_LIMIT_HELP = (
    "a count (5), a fraction (0.01) or a percentage (1%%); default k records (Sweeney)"
)


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


def hierarchy_arg(text: str) -> tuple[str, str]:
    """An argument type: ``COL=PATH.csv``, a QI and the file of its hierarchy."""
    column, sep, path = text.partition("=")
    if not sep or not column.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"must be COL=PATH.csv, got {text!r}")
    return column.strip(), path.strip()


def html_path(text: str) -> str:
    """An argument type: where ``--report`` goes, a name ending in ``.html`` or ``.htm``
    (a local path or an object-storage URL): the report is HTML whatever the name says."""
    name = text.strip().rstrip("/")
    if not name.lower().endswith((".html", ".htm")):
        raise argparse.ArgumentTypeError(
            f"the report is an HTML page: the name must end in .html or .htm, got {text!r}"
        )
    return text


# ------------------------------------------------------------------------------- the parsers
def add_command(
    subparsers: Any, parents: list[argparse.ArgumentParser], module: ModuleType
) -> argparse.ArgumentParser:
    """Add the sub-command a command module defines (see :mod:`reident_airflow.commands`).

    Its name is the module's (``direct_match`` is ``direct-match``); the first line of the
    docstring of its ``run(args, out, err)`` is its summary in ``reident --help``, the rest its
    ``--help`` description; ``EXIT_CODES`` says what exit codes 0 and 1 mean (at the end of its
    ``--help``); ``add_arguments(parser)`` adds its options; ``run`` runs it."""
    summary, _, description = (inspect.getdoc(module.run) or "").partition("\n")
    parser: argparse.ArgumentParser = subparsers.add_parser(
        module.__name__.rpartition(".")[2].replace("_", "-"),
        parents=parents,
        help=summary,
        description=textwrap.fill(" ".join(description.split()), width=78),
        epilog=exit_codes_text(*module.EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    module.add_arguments(parser)
    parser.set_defaults(handler=module.run)
    return parser


def add_input_arguments(
    parser: argparse.ArgumentParser,
    *,
    qi_type: Callable[[str], list[str]],
    qi_help: str = "quasi-identifier columns, exactly as in the header",
    input_help: str = "CSV or Parquet path, or a SQLAlchemy URL",
    input_optional: bool = False,
) -> None:
    """``INPUT`` and ``--qi``: the table a command reads and its quasi-identifiers
    (``input_optional``: INPUT may be left out, the handler says when it is needed)."""
    nargs = "?" if input_optional else None
    parser.add_argument("input", metavar="INPUT", nargs=nargs, help=input_help)
    parser.add_argument("--qi", required=True, type=qi_type, metavar="COL[,COL...]", help=qi_help)


def add_output_arguments(
    parser: argparse.ArgumentParser, *, json_help: str, report_help: str
) -> None:
    """``--json``, ``--report`` and ``--quiet``: what every command leaves behind, and its
    progress lines."""
    parser.add_argument("--json", metavar="PATH", help=f"{json_help} ('-' = stdout)")
    parser.add_argument("--report", type=html_path, metavar="PATH.html", help=report_help)
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines and no report location on stderr (errors are still shown)",
    )


def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """``--sep``, ``--table`` and ``--schema``: how a command reads its INPUT, a CSV or Parquet
    file or a table of the database a SQLAlchemy URL names."""
    parser.add_argument(
        "--sep",
        type=separator,
        default=",",
        metavar="CHAR",
        help="CSV separator (default ','; 'tab' for a tab)",
    )
    parser.add_argument("--table", metavar="NAME", help="table name when INPUT is a database URL")
    parser.add_argument("--schema", metavar="NAME", help="schema of --table (database input)")


def add_hierarchy_arguments(parser: argparse.ArgumentParser, *, help_text: str) -> None:
    """``--hierarchy COL=PATH.csv`` (repeatable) and ``--hierarchy-sep``: generalization
    hierarchies in ARX's CSV format (:func:`given_hierarchies` loads them)."""
    parser.add_argument(
        "--hierarchy",
        action="append",
        type=hierarchy_arg,
        default=[],
        metavar="COL=PATH.csv",
        help=help_text,
    )
    parser.add_argument(
        "--hierarchy-sep",
        type=separator,
        default=";",
        metavar="CHAR",
        help="separator of the hierarchy files (default ';', as ARX writes them)",
    )


def given_hierarchies(args: argparse.Namespace) -> dict[str, Any]:
    """The hierarchies of ``--hierarchy``, by QI; a column given twice, or not among the
    QIs of ``--qi``, is an input error (before anything is read)."""
    if not args.hierarchy:
        return {}  # the hierarchies' module (pandas) is not loaded for nothing
    from reident_airflow.engine.errors import InvalidInputError
    from reident_airflow.engine.hierarchies import load_hierarchy

    hierarchies: dict[str, Any] = {}
    for column, path in args.hierarchy:
        if column in hierarchies:
            raise InvalidInputError(f"--hierarchy given twice for column {column!r}")
        if column not in args.qi:
            raise InvalidInputError(
                f"--hierarchy given for column {column!r}, which is not among the "
                "quasi-identifiers of --qi"
            )
        hierarchies[column] = load_hierarchy(path, sep=args.hierarchy_sep, column=column)
    return hierarchies


# ---------------------------------------------------------------------------------- progress
#: Seconds a command may work in silence before ``assess`` and ``direct-match`` show their
#: progress: a quick run prints nothing on stderr, a long one says what it is doing.
PROGRESS_DELAY = 1.0


class Progress:
    """Progress lines on stderr: ``reident COMMAND [  12.34s] what it is doing``.

    Call it with each step's message. With ``delay`` 0 every step is shown as it starts
    (``datafly``). Otherwise nothing is shown until the run has lasted ``delay`` seconds; then
    the step under way is shown (a timer thread wakes up for it, since one step -- reading and
    grouping 20M rows -- can take most of the run), and every later step as it starts; the
    run then ends with a ``done`` line. ``quiet`` shows nothing. Messages name files, tables,
    columns and counts, never a value.
    """

    def __init__(self, command: str, err: TextIO, *, quiet: bool, delay: float = 0.0) -> None:
        self._prefix = f"reident {command}"
        self._err = err
        self._quiet = quiet
        self._start = time.perf_counter()
        self._lock = threading.Lock()
        self._shown = delay <= 0
        self._step: str | None = None
        self._timer: threading.Timer | None = None
        if not quiet and delay > 0:
            self._timer = threading.Timer(delay, self._wake)
            self._timer.daemon = True
            self._timer.start()

    def __call__(self, message: str) -> None:
        with self._lock:
            self._step = message
            if self._shown:
                self._write(message)

    def _wake(self) -> None:
        with self._lock:
            if not self._shown and self._step is not None:
                self._write(f"{self._step} ...")
            self._shown = True

    def _write(self, message: str) -> None:
        if self._quiet:
            return
        elapsed = time.perf_counter() - self._start
        self._err.write(f"{self._prefix} [{elapsed:7.2f}s] {message}\n")
        self._err.flush()

    def close(self, last: str | None = "done") -> None:
        """Stop the timer; a run whose progress was shown ends with ``last``."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()
        with self._lock:
            if self._step is not None and self._timer is not None and self._shown and last:
                self._write(last)
            self._step = None

    @classmethod
    @contextmanager
    def of(cls, command: str, args: argparse.Namespace, err: TextIO) -> Iterator[Progress]:
        """The delayed progress of a run (:data:`PROGRESS_DELAY`; ``--quiet`` shows nothing),
        closed on leaving: ``done`` after a run that went well, nothing more after an error
        (the error line follows)."""
        quiet = bool(getattr(args, "quiet", False))
        progress = cls(command, err, quiet=quiet, delay=PROGRESS_DELAY)
        try:
            yield progress
        except BaseException:
            progress.close(last=None)
            raise
        progress.close()


def is_database(location: str | None) -> TypeGuard[str]:
    """Whether a command's input (INPUT, ORIGINAL, AVATAR) names a database -- a SQLAlchemy
    URL (``postgresql://...``, ``sqlite:///file.db``) -- rather than a file: the one test
    by which the commands choose a backend (:func:`table_source`)."""
    return bool(location) and "://" in str(location)


def table_source(
    location: str,
    *,
    table: str | None,
    schema: str | None = None,
    sep: str = ",",
    memory_limit: str | None = None,
) -> FileSource | SqlSource:
    """A table as a source, its backend chosen once (:func:`is_database`): a database's
    ``table`` (in ``schema``) for a SQLAlchemy URL, else the file's (``sep``,
    ``memory_limit``)."""
    if is_database(location):
        from reident_airflow.sources.sql import SqlSource

        return SqlSource(location, table=table, schema=schema)
    from reident_airflow.sources.files import FileSource

    return FileSource(location, sep=sep, memory_limit=memory_limit)


def open_table(args: argparse.Namespace) -> FileSource | SqlSource:
    """INPUT as a source, chosen once (:func:`table_source`): a database's for a SQLAlchemy
    URL (``--table``, in ``--schema``), else a file's (``--sep``, ``--memory-limit`` where
    the command has it). Its ``label`` names the file or the table, never the URL (it may
    hold a password)."""
    from reident_airflow.engine.errors import InvalidInputError

    if is_database(args.input) and not args.table:
        raise InvalidInputError("a database URL needs --table NAME")
    if not is_database(args.input) and args.table:
        raise InvalidInputError("--table applies only to a database URL")
    return table_source(
        args.input,
        table=args.table,
        schema=args.schema,
        sep=args.sep,
        memory_limit=getattr(args, "memory_limit", None),
    )


def open_source(args: argparse.Namespace, progress: Callable[[str], None]) -> Source:
    """The source INPUT names, chosen once: Spark's with ``--engine spark`` (its session
    started here: :func:`~reident_airflow.commands.spark.spark_source`), a database's for a
    SQLAlchemy URL (with ``--table``), else a file's (:func:`open_table`). The door of
    ``assess`` and ``scan``."""
    if args.engine == "spark":
        from reident_airflow.commands.spark import spark_source

        return spark_source(args, progress)
    return open_table(args)


@contextmanager
def database_located(source: str | None) -> Iterator[None]:
    """Inside, a failure to reach the database of ``source`` (a SQLAlchemy URL) names its
    host, port and database (:func:`~reident_airflow.sources.db_errors.located_error`);
    a file ``source`` changes nothing."""
    try:
        yield
    except Exception as exc:
        if not is_database(source):
            raise
        from reident_airflow.sources.db_errors import located_error

        located = located_error(exc, source)
        if located is exc:
            raise
        raise located from None


# ----------------------------------------------------------------------------------- outputs
def emit_outputs(
    args: argparse.Namespace,
    payload: dict[str, Any],
    *,
    kind: str,
    out: TextIO,
    err: TextIO,
    summary: Callable[[], str] | None = None,
) -> None:
    """What every command leaves behind: ``--json``, ``--report`` (its location then goes to
    ``err``, one line, unless ``--quiet``), then the text summary (unless the JSON went to
    stdout)."""
    _emit_json(payload, args.json, out)
    report = getattr(args, "report", None)
    if report:
        from reident_airflow.report.runs import cli_report

        cli_report(args, payload, kind=kind)
        if not getattr(args, "quiet", False):
            where = report if "://" in report else os.path.abspath(report)
            err.write(f"reident: report written to {where}\n")
    if summary is not None and args.json != "-":
        out.write(summary())


def finish(
    args: argparse.Namespace,
    payload: dict[str, Any],
    *,
    kind: str,
    streams: tuple[TextIO, TextIO],
    summary: Callable[[], str] | None = None,
) -> int:
    """Leave the outputs of a run (:func:`emit_outputs`; ``streams`` are stdout and stderr)
    and return its exit code: 0 when ``payload["passed"]``, else 1."""
    out, err = streams
    emit_outputs(args, payload, kind=kind, out=out, err=err, summary=summary)
    return EXIT_PASSED if payload["passed"] else EXIT_BREACHED


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
    if population and not is_database(getattr(args, "input", None)):
        inputs.append(("the --population-table file", population))
    for column, path in getattr(args, "hierarchy", None) or []:
        inputs.append((f"the hierarchy file of {column}", path))
    check_outputs(outputs, inputs, create_dirs=["--report"])

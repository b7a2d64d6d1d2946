"""The ``reident`` command line (contract.md).

Exit codes: 0 passed (or no thresholds given), 1 a threshold was breached, 2 usage or input
error (one line on stderr; the traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from reident_airflow.engine.defaults import DEFAULT_RECORD_THRESHOLD, DEFAULT_RECURSIVE_C
from reident_airflow.engine.errors import InvalidInputError, ReidentError

EXIT_PASSED = 0
EXIT_BREACHED = 1
EXIT_USAGE = 2

PROG = "reident"


class _UsageError(Exception):
    """Raised by the argument parser instead of printing its usage block."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: error: {message}")


# ---------------------------------------------------------------------------------- arg types
def _share(flag: str, *, allow_zero: bool = False) -> Callable[[str], float]:
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


def _positive_int(text: str) -> int:
    try:
        v = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def _qi_list(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise argparse.ArgumentTypeError("needs one or more column names separated by commas")
    return names


def _column_list(text: str) -> list[str]:
    """Column names separated by commas, kept as written: the reader looks each name up
    exactly first and only then without its surrounding spaces (docs/reading.md)."""
    names = text.split(",")
    if not text.strip() or any(not n.strip() for n in names):
        raise argparse.ArgumentTypeError("needs one or more column names separated by commas")
    return names


def _memory_size(text: str) -> str:
    import re

    if not re.fullmatch(r"\s*\d+(\.\d+)?\s*([KMGT]i?B|B)\s*", text, flags=re.IGNORECASE):
        raise argparse.ArgumentTypeError(f"must be a size such as 1GB or 512MB, got {text!r}")
    return text.strip()


def _positive_number(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return v


def _separator(text: str) -> str:
    if text in {"\\t", "tab", "TAB"}:
        return "\t"
    if len(text) != 1:
        raise argparse.ArgumentTypeError(f"must be a single character, got {text!r}")
    return text


# ------------------------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks on errors")

    parser = _Parser(
        prog=PROG,
        description="Re-identification risk gates for data releases (ARX-compatible).",
        parents=[common],
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    a = sub.add_parser(
        "assess",
        parents=[common],
        help="assess re-identification risk of a table",
        description="Assess re-identification risk of a CSV/Parquet file or a database table.",
    )
    a.add_argument("input", metavar="INPUT", help="CSV or Parquet path, or a SQLAlchemy URL")
    a.add_argument(
        "--qi",
        required=True,
        type=_column_list,
        metavar="COL[,COL...]",
        help="quasi-identifier columns, exactly as in the header",
    )
    a.add_argument("--sep", type=_separator, default=",", help="CSV separator (default ',')")
    a.add_argument("--table", help="table name when INPUT is a database URL")
    a.add_argument("--schema", help="schema of --table (database input)")
    a.add_argument(
        "--record-threshold",
        type=_share("--record-threshold"),
        default=DEFAULT_RECORD_THRESHOLD,
        metavar="T",
        help=f"record risk above which a record is 'at risk' ({DEFAULT_RECORD_THRESHOLD:g})",
    )
    pop = a.add_mutually_exclusive_group()
    pop.add_argument(
        "--population-size",
        type=_positive_int,
        metavar="N",
        help="size of the population the table was drawn from",
    )
    pop.add_argument(
        "--sampling-fraction",
        type=_share("--sampling-fraction"),
        metavar="F",
        help="n / N, the share of the population in the table",
    )
    pop.add_argument("--region", choices=["usa"], help="population preset (usa: 317,238,626)")
    a.add_argument(
        "--population-table",
        metavar="PATH_OR_TABLE",
        help="register of the population on the same QIs (file, or a table of the "
        "same database): journalist and marketer are measured against it",
    )
    a.add_argument("--max-highest-risk", type=_share("--max-highest-risk"), metavar="X")
    a.add_argument("--max-average-risk", type=_share("--max-average-risk"), metavar="X")
    a.add_argument(
        "--max-records-at-risk", type=_share("--max-records-at-risk", allow_zero=True), metavar="X"
    )
    a.add_argument("--min-k", type=_positive_int, metavar="K")
    a.add_argument(
        "--max-global-risk",
        type=_share("--max-global-risk"),
        metavar="X",
        help="gate: expected share of re-identifications from --weight (individual risk)",
    )
    a.add_argument(
        "--min-l",
        type=_positive_int,
        metavar="L",
        help="gate: smallest distinct l-diversity of every --sensitive column",
    )
    a.add_argument(
        "--weight",
        metavar="COL",
        help="sampling-weight column: individual risk (sdcMicro's Benedetti-Franconi "
        "approximation) and the journalist's risk estimated from it",
    )
    a.add_argument(
        "--sensitive",
        type=_column_list,
        metavar="COL[,COL...]",
        help="sensitive columns: distinct, entropy and recursive (c,l) l-diversity",
    )
    a.add_argument(
        "--recursive-c",
        type=_positive_number,
        default=DEFAULT_RECURSIVE_C,
        metavar="C",
        help="c of recursive (c,l)-diversity (default 2, as sdcMicro)",
    )
    a.add_argument(
        "--suda",
        action="store_true",
        help="special uniques: SUDA2 scores and per-column contributions (sdcMicro's suda2)",
    )
    a.add_argument(
        "--suda-max-size",
        type=_positive_int,
        metavar="K",
        help="largest minimal sample unique searched by --suda (default: all QIs, up to 16)",
    )
    a.add_argument(
        "--max-subset-size",
        type=_positive_int,
        metavar="S",
        help="rank QI subsets up to S columns (default: every subset when there are at most 8 "
        "QIs; otherwise subsets of 1 and 2 columns and the full set)",
    )
    a.add_argument(
        "--no-ranking",
        action="store_true",
        help="skip the QI ranking (which columns re-identify): the verdict then needs only "
        "the class-size histogram, counted where the data is",
    )
    a.add_argument(
        "--memory-limit",
        type=_memory_size,
        metavar="SIZE",
        help="most memory the embedded engine may use for a file (e.g. 1GB); beyond it, it "
        "spills to a temporary folder",
    )
    a.add_argument("--json", metavar="PATH", help="write the assessment JSON here ('-' = stdout)")
    a.add_argument(
        "--report",
        metavar="PATH.html",
        help="write a self-contained HTML risk report here (needs the 'report' extra)",
    )
    a.set_defaults(handler=_cmd_assess)
    from importlib import import_module

    from reident_airflow.commands import COMMAND_MODULES

    for name in COMMAND_MODULES:
        import_module(name).register(sub, [common])
    return parser


# ---------------------------------------------------------------------------------- commands
def _load(
    args: argparse.Namespace,
    what: str,
    *,
    table: str | None = None,
    path: str | None = None,
    **options: Any,
) -> Any:
    """``what`` (``class_table``, ``histogram`` or ``aggregates``) of INPUT, computed where the
    data is: ``sources.sql.<what>_from_sql`` for a database URL (``--table``, or ``table``),
    ``sources.files.<what>_from_file`` for a file (INPUT, or ``path``)."""
    from importlib import import_module

    source: str = args.input
    if "://" in source:
        name = table or args.table
        if not name:
            raise InvalidInputError("a database URL needs --table NAME")
        from_sql = getattr(import_module("reident_airflow.sources.sql"), f"{what}_from_sql")
        return from_sql(source, args.qi, table=name, schema=args.schema, **options)
    if args.table:
        raise InvalidInputError("--table applies only to a database URL")
    from_file = getattr(import_module("reident_airflow.sources.files"), f"{what}_from_file")
    return from_file(
        path or source, args.qi, sep=args.sep, memory_limit=args.memory_limit, **options
    )


def _cmd_assess(args: argparse.Namespace, out: TextIO) -> int:
    from reident_airflow.engine.assessment import Thresholds, assess

    if args.max_global_risk is not None and not args.weight:
        raise InvalidInputError("--max-global-risk gates the individual risk: give --weight COL")
    if args.min_l is not None and not args.sensitive:
        raise InvalidInputError("--min-l gates l-diversity: give --sensitive COL[,COL...]")
    if args.no_ranking and args.max_subset_size is not None:
        raise InvalidInputError("--max-subset-size sizes the QI ranking, which --no-ranking skips")
    if args.suda_max_size is not None and not args.suda:
        raise InvalidInputError("--suda-max-size applies to --suda")
    thresholds = Thresholds(
        max_highest_risk=args.max_highest_risk,
        max_average_risk=args.max_average_risk,
        max_records_at_risk=args.max_records_at_risk,
        min_k=args.min_k,
        max_global_risk=args.max_global_risk,
        min_l=args.min_l,
    )
    weights = sensitive = None
    ranking = not args.no_ranking
    if args.weight or args.sensitive:
        aggregates = _load(args, "aggregates", weight=args.weight, sensitive=args.sensitive or ())
        table, weights = aggregates.table, aggregates.weights
        sensitive = aggregates.sensitive if args.sensitive else None
    elif ranking or args.suda or args.population_table:
        table = _load(args, "class_table")
    else:
        table = _load(args, "histogram")
    register = None
    if args.population_table:
        if "://" in args.input:
            register = _load(args, "class_table", table=args.population_table)
        else:
            register = _load(args, "class_table", path=args.population_table)
    result = assess(
        table,
        record_threshold=args.record_threshold,
        population_size=args.population_size,
        sampling_fraction=args.sampling_fraction,
        region=args.region,
        thresholds=thresholds,
        attributes=ranking,
        max_subset_size=args.max_subset_size,
        population_table=register,
        weights=weights,
        sensitive=sensitive,
        recursive_c=args.recursive_c,
        suda=args.suda,
        suda_max_msu_size=args.suda_max_size,
    )
    payload = result.to_dict()
    from reident_airflow.summary import assessment_summary

    emit_outputs(
        args, payload, kind="assessment", out=out, summary=lambda: assessment_summary(payload)
    )
    return EXIT_PASSED if result.passed else EXIT_BREACHED


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
    replaces; SIGTERM/SIGINT during the write leave no temporary file (:mod:`._atomic`)."""
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


# ------------------------------------------------------------------------------------- main
def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
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

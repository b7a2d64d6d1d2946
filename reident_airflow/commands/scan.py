"""``reident scan``: the identifier scan of every column of a table (docs/identifier-scan.md).

::

    reident scan INPUT [--qi COL[,COL...]] [--allow COL[,COL...]] [--safe-harbor]
                 [--policy fail|warn] [--extra-names TERM[,TERM...]]
                 [--phone-regions CC[,CC...]] [--sample-size N] [--approximate]
                 [--sep CHAR] [--table NAME [--schema S]] [--memory-limit SIZE]
                 [--engine local|spark [--spark-remote sc://HOST:PORT | --spark-master M]
                 [--spark-conf KEY=VALUE ...]] [--json PATH] [--report PATH.html] [--quiet]

INPUT is read as ``reident assess`` reads it, through the source chosen once at the door
(:func:`~reident_airflow.commands.common.open_source`: a file through DuckDB, a table of a
database URL, Spark); the source counts each column's profile where the data is and
:func:`~reident_airflow.engine.identifiers.scan_columns` gives the verdicts. ``--json``
writes the ``reident.identifier_scan/v1`` object, ``--report`` its HTML report (the section an
assessment's report shows, with the verdict); one stderr line per flagged column names it,
its verdict and the reasons (:func:`scan_lines`), never a value.

The scan flags are shared with ``reident assess --scan`` (:func:`add_scan_arguments`,
:func:`scan_options`), which attaches the same scan to its assessment.

Exit codes: 0 the scan passed (always under ``--policy warn``), 1 a column failed under
``--policy fail``, 2 usage or input error.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from reident_airflow.commands.common import (
    EXIT_BREACHED,
    EXIT_PASSED,
    Progress,
    add_table_arguments,
    column_names,
    database_located,
    emit_outputs,
    html_path,
    memory_size,
    open_source,
    positive_int,
)
from reident_airflow.commands.spark import add_spark_arguments, check_engine_arguments
from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    from reident_airflow.engine.identifiers import IdentifierScan, ScanOptions
    from reident_airflow.sources import Source

__all__ = [
    "EXIT_CODES",
    "SCAN_FLAGS",
    "add_arguments",
    "add_scan_arguments",
    "run",
    "safe_harbor_lines",
    "scan_lines",
    "scan_options",
    "scan_source",
    "scan_summary",
]

#: What exit codes 0 and 1 of ``reident scan`` mean.
EXIT_CODES = (
    "the scan passed (always under --policy warn)",
    "a column was found an identifier or an undeclared quasi-identifier under --policy fail",
)

#: How the scan's option names read on the command line (errors name the flag).
SCAN_FLAGS = {
    "allow_columns": "--allow",
    "quasi_identifiers": "--qi",
    "extra_names": "--extra-names",
    "phone_regions": "--phone-regions",
    "sample_size": "--sample-size",
    "safe_harbor": "--safe-harbor",
    "approximate": "--approximate",
}


def add_scan_arguments(parser: argparse.ArgumentParser) -> None:
    """The scan's options but its policy and QIs: ``--allow``, ``--safe-harbor``,
    ``--extra-names``, ``--phone-regions``, ``--sample-size``, ``--approximate``."""
    parser.add_argument(
        "--allow",
        type=column_names,
        metavar="COL[,COL...]",
        help="identifier scan: columns allowed as they are, never flagged",
    )
    parser.add_argument(
        "--safe-harbor",
        action="store_true",
        default=None,
        help="identifier scan: add the HIPAA Safe Harbor checks (dates and their elements, "
        "ages over 89, restricted ZIP3 areas, geography below a state, free text)",
    )
    parser.add_argument(
        "--extra-names",
        type=column_names,
        metavar="TERM[,TERM...]",
        help="identifier scan: more identifier column names (e.g. matricule)",
    )
    parser.add_argument(
        "--phone-regions",
        type=column_names,
        metavar="CC[,CC...]",
        help="identifier scan: regions whose national phone formats count (ISO 3166 codes; "
        "default US,GB,FR,DE,JP)",
    )
    parser.add_argument(
        "--sample-size",
        type=positive_int,
        metavar="N",
        help="identifier scan: distinct matched values checked per column and kind (default 1000)",
    )
    parser.add_argument(
        "--approximate",
        action="store_true",
        help="identifier scan, --engine spark only: estimate distinct counts (uniqueness is "
        "then a bound)",
    )


def add_arguments(a: argparse.ArgumentParser) -> None:
    a.add_argument(
        "input",
        metavar="INPUT",
        nargs="?",
        help="CSV or Parquet path, or a SQLAlchemy URL; with --engine spark a Parquet path, "
        "or none with --table NAME",
    )
    a.add_argument(
        "--qi",
        type=column_names,
        metavar="COL[,COL...]",
        help="declared quasi-identifiers (the assessment's): never flagged",
    )
    a.add_argument(
        "--policy",
        choices=("fail", "warn"),
        default="warn",
        help="fail: a column found an identifier or an undeclared quasi-identifier fails the "
        "run (exit 1); warn (default): reported only",
    )
    add_scan_arguments(a)
    add_table_arguments(a)
    add_spark_arguments(a)
    a.add_argument(
        "--memory-limit",
        type=memory_size,
        metavar="SIZE",
        help="most memory the embedded engine may use for a file (e.g. 1GB)",
    )
    a.add_argument("--json", metavar="PATH", help="write the scan JSON here ('-' = stdout)")
    a.add_argument(
        "--report",
        type=html_path,
        metavar="PATH.html",
        help="write a self-contained HTML report of the scan here (column names, verdicts "
        "and counts, never a value)",
    )
    a.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (the flagged columns and errors are still shown)",
    )


def scan_options(
    args: argparse.Namespace,
    *,
    policy: str | None,
    quasi_identifiers: Sequence[str],
    preset: str | None = None,
) -> ScanOptions:
    """The scan's options from the parsed flags (:func:`add_scan_arguments`), the
    ``policy`` and the declared ``quasi_identifiers``; ``preset``'s policy and Safe Harbor
    choice where none is given. ``--approximate`` needs ``--engine spark``. A bad value is
    an input error naming its flag."""
    from reident_airflow.engine.identifiers import ScanOptions

    if args.approximate and args.engine != "spark":
        raise InvalidInputError("--approximate applies only with --engine spark")
    values: dict[str, Any] = {
        "policy": policy,
        "safe_harbor": args.safe_harbor,
        "allow_columns": args.allow,
        "quasi_identifiers": list(quasi_identifiers),
        "extra_names": args.extra_names,
        "phone_regions": args.phone_regions,
        "sample_size": args.sample_size,
        "approximate": args.approximate or None,
    }
    try:
        return ScanOptions.from_mapping(values, preset=preset)
    except InvalidInputError as exc:
        raise InvalidInputError(_spelled(str(exc))) from None


def _spelled(message: str) -> str:
    """An option's error with the option named by its flag (``allow_columns`` -> ``--allow``)."""
    for name, flag in SCAN_FLAGS.items():
        if message.startswith(name):
            return flag + message[len(name) :]
    return message


def scan_source(
    source: Source, options: ScanOptions, progress: Callable[[str], None]
) -> IdentifierScan:
    """The scan of every column of ``source``, its step shown (the one engine call every
    adapter makes: :func:`~reident_airflow.engine.identifiers.scan_columns`)."""
    from reident_airflow.engine.identifiers import scan_columns

    progress(f"scanning every column of {source.label} for identifiers")
    try:
        return scan_columns(source, options)
    except InvalidInputError as exc:
        raise InvalidInputError(_spelled(str(exc))) from None


def scan_lines(result: IdentifierScan) -> list[str]:
    """One stderr line per flagged column: ``reident: scan: mrn: identifier (name: record
    number; unique: 200 of 200 values)``. Column names, verdicts and counts, never a value."""
    return [
        f"reident: scan: {c.column}: {c.verdict} ({'; '.join(c.reasons)})"
        for c in result.columns
        if c.flagged
    ]


def scan_summary(result: IdentifierScan, label: str) -> str:
    """The text summary on stdout: the verdict, then every column's."""
    verdict = "PASSED" if result.passed else "FAILED"
    lines = [
        f"Identifier scan of {label}: {len(result.columns)} columns, "
        f"{len(result.flagged)} flagged, {len(result.failing)} failing "
        f"(policy {result.options.policy}): {verdict}"
    ]
    width = max((len(c.column) for c in result.columns), default=0)
    lines += [f"  {c.column.ljust(width)}  {c.verdict}" for c in result.columns]
    lines += safe_harbor_lines(result)
    return "\n".join(lines) + "\n"


def safe_harbor_lines(result: IdentifierScan) -> list[str]:
    """Under Safe Harbor, what the scan looked at of the 18 identifier categories: the
    counts, then the categories not fully checked (a verdict on the columns is none on them)."""
    if not result.options.safe_harbor:
        return []
    from reident_airflow.engine.safe_harbor import (
        CHECKED,
        NOT_CHECKED,
        PARTLY_CHECKED,
        SAFE_HARBOR_CATEGORIES,
    )

    def listed(status: str) -> list[str]:
        return [f"({c.paragraph}) {c.name}" for c in SAFE_HARBOR_CATEGORIES if c.status == status]

    n = len(SAFE_HARBOR_CATEGORIES)
    lines = [
        f"Safe Harbor identifier categories: {len(listed(CHECKED))} of {n} checked, "
        f"{len(listed(PARTLY_CHECKED))} partly checked, {len(listed(NOT_CHECKED))} not checked "
        "(review these before a Safe Harbor release):"
    ]
    lines += [f"  partly checked: {c}" for c in listed(PARTLY_CHECKED)]
    lines += [f"  not checked: {c}" for c in listed(NOT_CHECKED)]
    return lines


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """scan every column of a table for identifiers

    Scan every column of a CSV/Parquet file or a database table, declared or not, for what
    identifies a person on its own: unique keys, identifier-like names, e-mail addresses,
    phone, card and account numbers in the values, and with --safe-harbor the HIPAA Safe
    Harbor checks. A verdict per column, with counts only, never a value.
    """
    check_engine_arguments(args)
    options = scan_options(args, policy=args.policy, quasi_identifiers=args.qi or ())
    with Progress.of("scan", args, err) as progress, database_located(args.input):
        with open_source(args, progress) as source:
            result = scan_source(source, options, progress)
            label = source.label
        progress("writing the outputs")
        emit_outputs(
            args,
            result.to_dict(),
            kind="identifier_scan",
            out=out,
            err=err,
            summary=lambda: scan_summary(result, label),
        )
    for line in scan_lines(result):
        err.write(f"{line}\n")
    return EXIT_PASSED if result.passed else EXIT_BREACHED

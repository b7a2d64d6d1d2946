"""``reident datafly``: k-anonymize a table with Datafly and write the result (docs/metrics.md §9).

::

    reident datafly INPUT --qi COL[,COL...] --k K [--suppression-limit N|FRACTION]
                    --hierarchy COL=PATH.csv ... --output PATH [--sep CHAR] [--json PATH]
                    [--hierarchy-sep CHAR] [--table NAME [--schema S]] [--quiet]

``INPUT`` is a CSV file (every column read as text), a Parquet file, or a SQLAlchemy URL with
``--table``. ``--output`` is written atomically (a temporary file in the same directory, then
renamed): ``*.csv`` (with ``--sep``) or ``*.parquet``. The input is never modified: before
anything is read or computed, ``--output``, ``--json`` and ``--report`` are checked against
INPUT, every hierarchy file and each other (the same file, also through a link) and for a
writable directory -- exit 2 then means nothing changed on disk. The written files get the mode
a new file gets under the umask, or keep the mode of the file they replace. SIGTERM or SIGINT
during the write removes the temporary file (``.NAME.reident-PID-HEX.tmp``, next to the
target); one left by ``kill -9`` is removed by the next run writing the same target.

Exit codes: ``0`` k reached (the output is written); ``1`` k cannot be reached within the
suppression limit -- a data-policy failure like a breached threshold: nothing is written, the
best attempt is summarized on stderr and in the JSON (``"passed": false``); ``2`` usage or
input error (unknown QI, k < 1 or larger than the records, a bad suppression limit, a
hierarchy that is ragged or does not cover a value -- the message names the column and counts,
never a value).

Progress goes to stderr, one line per step (``--quiet`` silences it).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from reident_airflow.commands.common import (
    SUPPRESSION_LIMIT_HELP,
    Progress,
    add_hierarchy_arguments,
    add_input_arguments,
    add_output_arguments,
    add_table_arguments,
    column_names,
    database_located,
    finish,
    given_hierarchies,
    is_database,
    open_table,
    suppression_limit,
)
from reident_airflow.engine.errors import InvalidInputError

__all__ = ["EXIT_CODES", "add_arguments", "run"]

#: What exit codes 0 and 1 of ``reident datafly`` mean.
EXIT_CODES = (
    "k reached: the anonymized table is written",
    "k cannot be reached within the suppression limit, or every record would be suppressed: "
    "nothing is written",
)


def _whole_number(text: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input_arguments(
        p,
        qi_type=column_names,
        qi_help="quasi-identifier columns, exactly as in the header (ties go to the first)",
    )
    p.add_argument("--k", required=True, type=_whole_number, metavar="K", help="the k to reach")
    p.add_argument(
        "--suppression-limit",
        type=suppression_limit,
        metavar="N|FRACTION",
        help=f"most records that may be removed: {SUPPRESSION_LIMIT_HELP}",
    )
    add_hierarchy_arguments(
        p, help_text="generalization hierarchy of a QI in ARX's CSV format (one per QI)"
    )
    p.add_argument(
        "--output",
        required=True,
        metavar="PATH",
        help="where to write the anonymized table: *.csv or *.parquet (atomically)",
    )
    p.add_argument(
        "--release-ledger",
        action="store_true",
        help="keep a release ledger beside --output, OUTPUT.ledger.parquet: digests of the "
        "published rows, to compare the next release with (--previous) once this one is gone",
    )
    add_table_arguments(p)
    add_output_arguments(
        p,
        json_help="write the Datafly JSON here",
        report_help="write a self-contained HTML report here, also when k cannot be reached",
    )


def _load_hierarchies(args: argparse.Namespace) -> dict[str, Any]:
    from reident_airflow.engine.errors import HierarchyError

    hierarchies = given_hierarchies(args)
    missing = [q for q in args.qi if q not in hierarchies]
    if missing:  # checked before the table is read
        raise HierarchyError(
            f"no hierarchy given for quasi-identifier{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(repr, missing))}: Datafly needs one for every QI (--hierarchy)"
        )
    return hierarchies


def _read_input(args: argparse.Namespace) -> Any:
    """INPUT as a frame; every QI a column of it (an unknown one gets a suggestion)."""
    from reident_airflow.sources.file_source import unknown_column

    with database_located(args.input), open_table(args) as source:
        frame = source.release_rows(args.qi)[0]
    names = [str(c) for c in frame.columns]
    for qi in args.qi:
        if qi not in names:
            raise InvalidInputError(unknown_column(qi, names, "quasi-identifier"))
    return frame


def _check_output(args: argparse.Namespace) -> Path:
    from reident_airflow.sources.writers import file_format, same_file

    output = Path(args.output)
    file_format(output)
    if not is_database(args.input) and same_file(args.input, output):
        raise InvalidInputError(
            f"--output {output} is the input file: Datafly never overwrites its input; "
            "choose another path"
        )
    if args.json not in (None, "-") and same_file(args.json, output):
        raise InvalidInputError("--output and --json name the same file")
    if not output.parent.is_dir():
        raise InvalidInputError(f"{output}: directory {output.parent} does not exist")
    return output


def _summary(report: dict[str, Any], output: Path) -> str:
    levels = ", ".join(f"{q}={lv}" for q, lv in report["levels"].items())
    loss = report["information_loss"]
    return (
        f"Datafly: k={report['k']} reached (smallest class {report['achieved_k']}) on "
        f"{report['records']:,} records in {len(report['steps'])} steps\n"
        f"  levels: {levels}\n"
        f"  suppressed: {report['suppressed_records']:,} records "
        f"(limit {report['suppression_limit']:,})\n"
        f"  information loss: precision {loss['precision']:.4f}, "
        f"discernibility {loss['discernibility']:,}\n"
        f"  wrote {report['output']['records']:,} records to {output}\n"
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """k-anonymize a table with Datafly (generalize, then suppress)

    Generalize the quasi-identifiers one level at a time (the one with the most distinct values
    first) until every record shares its values with at least k-1 others, except at most
    --suppression-limit records, which are removed.
    """
    from reident_airflow.engine.datafly import datafly, empty_release_error, infeasible_report
    from reident_airflow.engine.errors import AnonymizationInfeasibleError
    from reident_airflow.sources.writers import file_format, write_file_atomic

    progress = Progress("datafly", err, quiet=args.quiet)
    output = _check_output(args)
    hierarchies = _load_hierarchies(args)
    frame = _read_input(args)
    progress(f"read {len(frame):,} records, {frame.shape[1]} columns")
    try:
        result = datafly(frame, args.qi, hierarchies, args.k, args.suppression_limit, progress)
        empty = empty_release_error(result)
        if empty is not None:
            raise empty
    except AnonymizationInfeasibleError as exc:
        report = infeasible_report(exc, len(frame), args.k)
        code = finish(args, report, kind="datafly", streams=(out, err))
        err.write(f"reident: datafly: {exc}; nothing was written to {output}\n")
        return code
    progress(
        f"suppressing {result.suppressed_records:,} records; writing "
        f"{result.released_records:,} records to {output}"
    )
    ledger = list(args.qi) if args.release_ledger else None
    written = write_file_atomic(result.table, output, sep=args.sep, ledger=ledger)
    progress(f"wrote {written:,} records")
    report = result.to_dict()
    report["passed"] = True
    report["output"] = {"path": str(output), "format": file_format(output), "records": written}
    summary = lambda: _summary(report, output)  # noqa: E731
    return finish(args, report, kind="datafly", streams=(out, err), summary=summary)

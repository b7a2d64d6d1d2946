"""``reident assess``: the re-identification risk of a table, gated (docs/contract.md).

::

    reident assess INPUT --qi COL[,COL...] [--sep CHAR] [--table NAME [--schema S]]
                   [--record-threshold T] [--population-size N | --sampling-fraction F |
                   --region R] [--population-table PATH_OR_TABLE]
                   [--max-highest-risk X] [--max-average-risk X] [--max-records-at-risk X]
                   [--min-k K] [--max-global-risk X] [--min-l L]
                   [--weight COL] [--sensitive COL[,COL...]] [--recursive-c C]
                   [--suda [--suda-max-size K]] [--max-subset-size S | --no-ranking]
                   [--memory-limit SIZE] [--json PATH] [--report PATH.html]

The parsed arguments are converted into one
:class:`~reident_airflow.engine.options.AssessmentOptions` (whose rules name the flags at
fault, :data:`FLAG_NAMES`); the source then counts what those options need where the data is
-- only the class-size histogram when no measure needs more -- and
:func:`~reident_airflow.engine.assessment.assess` computes the result.

Exit codes: 0 passed (or no thresholds given), 1 a threshold was breached, 2 usage or input
error (one line on stderr).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from reident_airflow.commands.common import (
    EXIT_BREACHED,
    EXIT_PASSED,
    add_table_arguments,
    columns_as_written,
    emit_outputs,
    memory_size,
    positive_int,
    positive_number,
    share,
)
from reident_airflow.engine.defaults import DEFAULT_RECORD_THRESHOLD, DEFAULT_RECURSIVE_C, REGIONS
from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    from reident_airflow.engine.options import AssessmentOptions

__all__ = ["FLAG_NAMES", "assessment_options", "register"]

#: How the options' rules name each field on the command line.
FLAG_NAMES: Mapping[str, str] = {
    "quasi_identifiers": "--qi",
    "record_threshold": "--record-threshold",
    "population_size": "--population-size",
    "sampling_fraction": "--sampling-fraction",
    "region": "--region",
    "population_table": "--population-table",
    "max_highest_risk": "--max-highest-risk",
    "max_average_risk": "--max-average-risk",
    "max_records_at_risk": "--max-records-at-risk",
    "min_k": "--min-k",
    "max_global_risk": "--max-global-risk",
    "min_l": "--min-l",
    "weight": "--weight COL",
    "sensitive": "--sensitive COL[,COL...]",
    "recursive_c": "--recursive-c",
    "rank_attributes": "--no-ranking",
    "max_subset_size": "--max-subset-size",
    "suda": "--suda",
    "suda_max_msu_size": "--suda-max-size",
}


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``assess`` to the ``reident`` sub-commands."""
    a = subparsers.add_parser(
        "assess",
        parents=parents,
        help="assess re-identification risk of a table",
        description="Assess re-identification risk of a CSV/Parquet file or a database table.",
    )
    a.add_argument("input", metavar="INPUT", help="CSV or Parquet path, or a SQLAlchemy URL")
    a.add_argument(
        "--qi",
        required=True,
        type=columns_as_written,
        metavar="COL[,COL...]",
        help="quasi-identifier columns, exactly as in the header",
    )
    add_table_arguments(a)
    _population_arguments(a)
    _gate_arguments(a)
    _measure_arguments(a)
    a.add_argument(
        "--memory-limit",
        type=memory_size,
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
    a.set_defaults(handler=_run)


def _population_arguments(a: argparse.ArgumentParser) -> None:
    """``--record-threshold`` and the population the table was drawn from."""
    a.add_argument(
        "--record-threshold",
        type=share("--record-threshold"),
        default=DEFAULT_RECORD_THRESHOLD,
        metavar="T",
        help=f"record risk above which a record is 'at risk' ({DEFAULT_RECORD_THRESHOLD:g})",
    )
    pop = a.add_mutually_exclusive_group()
    pop.add_argument(
        "--population-size",
        type=positive_int,
        metavar="N",
        help="size of the population the table was drawn from",
    )
    pop.add_argument(
        "--sampling-fraction",
        type=share("--sampling-fraction"),
        metavar="F",
        help="n / N, the share of the population in the table",
    )
    presets = ", ".join(f"{name}: {size:,}" for name, size in REGIONS.items())
    pop.add_argument("--region", choices=sorted(REGIONS), help=f"population preset ({presets})")
    a.add_argument(
        "--population-table",
        metavar="PATH_OR_TABLE",
        help="register of the population on the same QIs (file, or a table of the "
        "same database): journalist and marketer are measured against it",
    )


def _gate_arguments(a: argparse.ArgumentParser) -> None:
    """The release gate's limits."""
    a.add_argument("--max-highest-risk", type=share("--max-highest-risk"), metavar="X")
    a.add_argument("--max-average-risk", type=share("--max-average-risk"), metavar="X")
    a.add_argument(
        "--max-records-at-risk", type=share("--max-records-at-risk", allow_zero=True), metavar="X"
    )
    a.add_argument("--min-k", type=positive_int, metavar="K")
    a.add_argument(
        "--max-global-risk",
        type=share("--max-global-risk"),
        metavar="X",
        help="gate: expected share of re-identifications from --weight (individual risk)",
    )
    a.add_argument(
        "--min-l",
        type=positive_int,
        metavar="L",
        help="gate: smallest distinct l-diversity of every --sensitive column",
    )


def _measure_arguments(a: argparse.ArgumentParser) -> None:
    """The optional measures: weights, sensitive columns, SUDA2 and the QI ranking."""
    a.add_argument(
        "--weight",
        metavar="COL",
        help="sampling-weight column: individual risk (sdcMicro's Benedetti-Franconi "
        "approximation) and the journalist's risk estimated from it",
    )
    a.add_argument(
        "--sensitive",
        type=columns_as_written,
        metavar="COL[,COL...]",
        help="sensitive columns: distinct, entropy and recursive (c,l) l-diversity",
    )
    a.add_argument(
        "--recursive-c",
        type=positive_number,
        default=DEFAULT_RECURSIVE_C,
        metavar="C",
        help=f"c of recursive (c,l)-diversity (default {DEFAULT_RECURSIVE_C:g}, as sdcMicro)",
    )
    a.add_argument(
        "--suda",
        action="store_true",
        help="special uniques: SUDA2 scores and per-column contributions (sdcMicro's suda2)",
    )
    a.add_argument(
        "--suda-max-size",
        type=positive_int,
        metavar="K",
        help="largest minimal sample unique searched by --suda (default: all QIs, up to 16)",
    )
    a.add_argument(
        "--max-subset-size",
        type=positive_int,
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


# --------------------------------------------------------------------------------- the run
def assessment_options(args: argparse.Namespace) -> AssessmentOptions:
    """The options the parsed arguments describe; a broken rule names the flags at fault."""
    from reident_airflow.engine.options import AssessmentOptions, OptionError, Thresholds

    try:
        return AssessmentOptions(
            quasi_identifiers=tuple(args.qi),
            thresholds=Thresholds(
                max_highest_risk=args.max_highest_risk,
                max_average_risk=args.max_average_risk,
                max_records_at_risk=args.max_records_at_risk,
                min_k=args.min_k,
                max_global_risk=args.max_global_risk,
                min_l=args.min_l,
            ),
            record_threshold=args.record_threshold,
            population_size=args.population_size,
            sampling_fraction=args.sampling_fraction,
            region=args.region,
            population_table=args.population_table or None,
            weight=args.weight or None,
            sensitive=tuple(args.sensitive or ()),
            recursive_c=args.recursive_c,
            rank_attributes=not args.no_ranking,
            max_subset_size=args.max_subset_size,
            suda=args.suda,
            suda_max_msu_size=args.suda_max_size,
        )
    except OptionError as exc:
        exc.spelled(FLAG_NAMES)
        raise


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


def _run(args: argparse.Namespace, out: TextIO) -> int:
    from reident_airflow.engine.assessment import assess

    options = assessment_options(args)
    weights = sensitive = None
    if options.weight or options.sensitive:
        aggregates = _load(
            args, "aggregates", weight=options.weight, sensitive=args.sensitive or ()
        )
        table, weights = aggregates.table, aggregates.weights
        sensitive = aggregates.sensitive if options.sensitive else None
    elif options.needs_class_table:
        table = _load(args, "class_table")
    else:
        table = _load(args, "histogram")
    register = None
    if options.population_table:
        if "://" in args.input:
            register = _load(args, "class_table", table=options.population_table)
        else:
            register = _load(args, "class_table", path=options.population_table)
    result = assess(table, options, population_table=register, weights=weights, sensitive=sensitive)
    payload = result.to_dict()
    from reident_airflow.summary import assessment_summary

    emit_outputs(
        args, payload, kind="assessment", out=out, summary=lambda: assessment_summary(payload)
    )
    return EXIT_PASSED if result.passed else EXIT_BREACHED

"""``reident direct-match``: Column Direct Match Protection of a release (docs/metrics.md §8).

::

    reident direct-match ORIGINAL AVATAR [--sep CHAR] [--key COL] [--target P] [--json PATH]
                         [--columns COL[,COL...]]
                         [--original-table NAME] [--avatar-table NAME]
                         [--schema NAME] [--avatar-schema NAME]

ORIGINAL and AVATAR are each a CSV path (``--sep``, default ``,``), a Parquet path, or a
SQLAlchemy URL with ``--original-table`` / ``--avatar-table`` (``--schema`` applies to both
tables, ``--avatar-schema`` overrides it for the avatar table). Every column of both tables is
read; CSV values are read as text and the engine compares them by value (``1`` equals ``1.0``).
Rows are aligned by position, or by ``--key`` (a column of both tables, unique in each, not
scored).

* Both URLs the same database: the counts are computed there (a join on the key; only
  aggregates are fetched, see :mod:`reident_airflow.sources.direct_match_sql`). A key is
  required: a database table has no row order to align by.
* Otherwise (two files, two databases, a file and a table): both tables are read into pandas
  and compared by the engine; a database table still needs ``--key``.

Exit codes: 0 the protection is at least the target, 1 below it, 2 usage or input error
(one line on stderr). With ``--json -`` the JSON goes to stdout and nothing else does;
otherwise a text summary is printed.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, TextIO

from reident_airflow.commands.common import (
    Progress,
    add_output_arguments,
    column_names,
    database_located,
    finish,
    is_database,
    separator,
    table_source,
)
from reident_airflow.engine.defaults import DEFAULT_TARGET
from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    import pandas as pd

    from reident_airflow.engine.direct_match import DirectMatchResult

__all__ = ["EXIT_CODES", "add_arguments", "compute", "run"]

#: What exit codes 0 and 1 of ``reident direct-match`` mean.
EXIT_CODES = ("the protection is at least --target", "the protection is below --target")


# ----------------------------------------------------------------------------------- inputs
def _same_database(a: str, b: str) -> bool:
    import sqlalchemy as sa
    from sqlalchemy.exc import ArgumentError

    try:
        return bool(sa.make_url(a) == sa.make_url(b))
    except (ArgumentError, ValueError):
        return a == b


def _target(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value) or not 0.0 <= value <= 100.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100, got {text}")
    return value


def _frame(source: str, table: str | None, schema: str | None, sep: str) -> pd.DataFrame:
    """One side as direct match compares it, read through its source
    (:meth:`~reident_airflow.sources.Source.comparison_rows`)."""
    with (
        database_located(source),
        table_source(source, table=table, schema=schema, sep=sep) as side,
    ):
        return side.comparison_rows()


def _check_sides(args: argparse.Namespace) -> None:
    """Each side's table flag matches its source; a database side needs ``--key``."""
    from reident_airflow.sources.direct_match_sql import NO_KEY_MESSAGE

    sides = (
        ("ORIGINAL", "--original-table", args.original, args.original_table),
        ("AVATAR", "--avatar-table", args.avatar, args.avatar_table),
    )
    for name, flag, source, table in sides:
        if is_database(source) and not table:
            raise InvalidInputError(f"{name} is a database URL: give {flag} NAME")
        if not is_database(source) and table:
            raise InvalidInputError(f"{flag} applies only when {name} is a database URL")
    has_db = is_database(args.original) or is_database(args.avatar)
    if not has_db and (args.schema or args.avatar_schema):
        raise InvalidInputError("--schema and --avatar-schema apply only to database URLs")
    if has_db and not args.key:
        raise InvalidInputError(f"{NO_KEY_MESSAGE} (--key COL)")


def _check_names(frame: pd.DataFrame, side: str, args: argparse.Namespace) -> None:
    """``--key`` and ``--columns`` name columns of ``frame``, the ``side`` table: the engine's
    message (the same as for a database table) with a hint -- the closest column, or the
    ``--sep`` to try when the header came back as one column."""
    from reident_airflow.sources.file_source import column_hint

    names = [str(c) for c in frame.columns]
    if args.key and args.key not in names:
        raise InvalidInputError(
            f"key column {args.key!r} is missing from the {side} table"
            f"{column_hint(args.key, names)}"
        )
    missing = [c for c in args.columns or () if c not in names]
    if missing:
        raise InvalidInputError(
            f"columns missing from the {side} table: {missing!r}{column_hint(missing[0], names)}"
        )


def compute(args: argparse.Namespace, progress: Progress | None = None) -> DirectMatchResult:
    """The result for parsed arguments (input errors raise :class:`InvalidInputError`);
    ``progress`` is told each step."""
    step = progress or (lambda message: None)
    _check_sides(args)
    avatar_schema = args.avatar_schema or args.schema
    if (
        is_database(args.original)
        and is_database(args.avatar)
        and _same_database(args.original, args.avatar)
    ):
        from reident_airflow.sources.direct_match_sql import direct_match_in_database

        step("comparing the two tables in the database")
        with database_located(args.original):
            return direct_match_in_database(
                args.original,
                args.original_table,
                args.avatar_table,
                key=args.key,
                target=args.target,
                columns=args.columns,
                schema=args.schema,
                avatar_schema=avatar_schema,
            )
    step("reading ORIGINAL")
    original = _frame(args.original, args.original_table, args.schema, args.sep)
    _check_names(original, "original", args)
    step(f"reading AVATAR ({len(original):,} records in ORIGINAL)")
    avatar = _frame(args.avatar, args.avatar_table, avatar_schema, args.sep)
    _check_names(avatar, "avatar", args)
    step(f"comparing {len(avatar):,} records")
    from reident_airflow.engine.direct_match import direct_match_protection

    return direct_match_protection(
        original, avatar, key=args.key, target=args.target, columns=args.columns
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """column direct match protection of a released table against its original

    Column Direct Match Protection (docs/metrics.md §8): for each column, how many released
    values equal the original ones, weighed by the column's distinct values; the result is the
    lowest column's protection, in percent. ORIGINAL and AVATAR are CSV or Parquet paths, or
    SQLAlchemy URLs with --original-table / --avatar-table (two tables of one database are
    compared in the database; they need --key).
    """
    from reident_airflow.engine.direct_match import direct_match_report
    from reident_airflow.summary import direct_match_summary

    with Progress.of("direct-match", args, err) as progress:
        report = direct_match_report(compute(args, progress))
        progress("writing the outputs")
        summary = lambda: direct_match_summary(report)  # noqa: E731
        return finish(args, report, kind="direct_match", streams=(out, err), summary=summary)


# ----------------------------------------------------------------------------------- parser
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("original", metavar="ORIGINAL", help="original table: file or database URL")
    p.add_argument("avatar", metavar="AVATAR", help="released table: file or database URL")
    p.add_argument(
        "--sep",
        type=separator,
        default=",",
        metavar="CHAR",
        help="CSV separator of both files (default ','; 'tab' for a tab)",
    )
    p.add_argument(
        "--key",
        metavar="COL",
        help="column of both tables identifying each record (rows are aligned on it); "
        "default: aligned by position",
    )
    p.add_argument(
        "--target",
        type=_target,
        default=DEFAULT_TARGET,
        metavar="P",
        help=f"lowest acceptable protection, in percent (default {DEFAULT_TARGET:g}: no column "
        "may expose more individuals than it protects)",
    )
    p.add_argument(
        "--columns",
        type=column_names,
        metavar="COL[,COL...]",
        help="score only these columns (default: every column of both tables but the key)",
    )
    for flag, help_text in (
        ("--original-table", "table of ORIGINAL (database URL)"),
        ("--avatar-table", "table of AVATAR (database URL)"),
        ("--schema", "schema of both tables (database URLs)"),
        ("--avatar-schema", "schema of the avatar table, when it differs from --schema"),
    ):
        p.add_argument(flag, metavar="NAME", help=help_text)
    add_output_arguments(
        p,
        json_help="write the direct-match JSON here",
        report_help="write a self-contained HTML report here",
    )

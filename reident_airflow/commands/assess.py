"""``reident assess``: the re-identification risk of a table, gated (docs/contract.md).

::

    reident assess INPUT --qi COL[,COL...] [--sep CHAR] [--table NAME [--schema S]]
                   [--engine local|spark [--spark-remote sc://HOST:PORT | --spark-master M]
                   [--spark-conf KEY=VALUE ...]]
                   [--record-threshold T] [--population-size N | --sampling-fraction F |
                   --region R] [--population-table PATH_OR_TABLE] [--preset NAME]
                   [--max-highest-risk X] [--max-average-risk X] [--max-records-at-risk X]
                   [--min-k K] [--max-global-risk X] [--min-l L] [--warn-max-highest-risk X]
                   [--warn-max-average-risk X] [--warn-max-records-at-risk X] [--warn-min-k K]
                   [--warn-max-global-risk X] [--warn-min-l L]
                   [--previous PATH_OR_TABLE] [--min-arrival-k K] [--max-arrival-risk X]
                   [--min-departure-k K] [--max-departure-risk X] [--warn-...]
                   [--weight COL] [--sensitive COL[,COL...]] [--recursive-c C]
                   [--suda [--suda-max-size K]] [--max-subset-size S | --no-ranking]
                   [--memory-limit SIZE] [--hierarchy COL=PATH.csv ...] [--hierarchy-sep CHAR]
                   [--suppression-limit N|FRACTION] [--no-advice] [--no-fingerprint]
                   [--json PATH] [--report PATH.html] [--quiet]

The parsed arguments are converted into one
:class:`~reident_airflow.engine.options.AssessmentOptions` (whose rules name the flags at
fault, :data:`FLAG_NAMES`). The source is chosen once, at the door (:func:`open_source`): a
file (:class:`~reident_airflow.sources.files.FileSource`), a database for a SQLAlchemy URL
(:class:`~reident_airflow.sources.sql.SqlSource`), or with ``--engine spark`` a Parquet path
or a table of the Spark catalog (:class:`~reident_airflow.sources.spark.SparkSource`, the
session from :mod:`~reident_airflow.commands.spark`; same options, JSON and exit codes). The
source then counts what those options need where the data is -- only the class-size
histogram when no measure needs more -- and
:func:`~reident_airflow.engine.assessment.assess` computes the result. After the gate, the
advice on a ``--min-k`` breach and the source's fingerprint of INPUT are added to the JSON
(``"advice"``, ``"input"``), and one stderr line is printed per warning level crossed and one
for the advice:

- **Advice** (:func:`~reident_airflow.workflows.advice.advise`): only after a breach of
  ``--min-k``; the class table and the rows are then read again from INPUT's source (a file,
  or the ``--table`` of a database URL; Spark counts it from its aggregates) to name the QI
  that drives the risk and what Datafly at that k would do, with the ``--hierarchy`` files
  given (read before INPUT, so that a bad one fails first), else the bundled ones, at the
  ``--suppression-limit`` of the ``reident datafly`` to be run (default k records, as
  there).
  ``--no-advice`` skips it.
- **Fingerprint** (``"input"``, :meth:`~reident_airflow.sources.Source.fingerprint`): a
  file's SHA-256, size and row count, or a table's row count and snapshot
  (:mod:`reident_airflow.sources.fingerprint`). Hashing costs about 2.5 s per GB on the
  development machine, so ``--no-fingerprint`` skips it.
- **Result lines** (:func:`result_lines`): one ``reident: warning: ...`` line per warning
  level crossed, and one ``reident: advice: ...`` line. They are results, not progress:
  ``--quiet`` does not silence them. Aggregates only: names and counts, never a value.

Exit codes: 0 passed (or no thresholds given; warnings do not fail), 1 a threshold was
breached, 2 usage or input error (one line on stderr). A run that lasts more than a second
shows its steps on stderr (:class:`~reident_airflow.commands.common.Progress`; ``--quiet``
silences them).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TextIO

from reident_airflow.commands.common import (
    Progress,
    add_input_arguments,
    add_output_arguments,
    add_table_arguments,
    columns_as_written,
    database_located,
    given_hierarchies,
    memory_size,
    open_source,
    positive_int,
    positive_number,
    share,
)
from reident_airflow.commands.scan import (
    add_scan_arguments,
    safe_harbor_lines,
    scan_lines,
    scan_options,
    scan_source,
)
from reident_airflow.commands.spark import add_spark_arguments, check_engine_arguments
from reident_airflow.engine.defaults import DEFAULT_RECORD_THRESHOLD, DEFAULT_RECURSIVE_C, REGIONS
from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    from reident_airflow.engine.assessment import Assessment, Breach
    from reident_airflow.engine.identifiers import ScanOptions
    from reident_airflow.engine.options import AssessmentOptions
    from reident_airflow.sources import Source
    from reident_airflow.workflows.advice import AdviceFound
    from reident_airflow.workflows.assessment import Narration

__all__ = [
    "EXIT_CODES",
    "FLAG_NAMES",
    "add_arguments",
    "add_outcome_arguments",
    "assessment_options",
    "finish_assessment",
    "open_source",
    "result_lines",
    "run",
    "warning_line",
]

#: What exit codes 0 and 1 of ``reident assess`` mean.
EXIT_CODES = ("passed, or no limit was given", "a limit was breached")

#: The gate's limits: (flag, argument type, help). Each has a warning level ``--warn-...``.
_GATES: tuple[tuple[str, Callable[[str], Any], str], ...] = (
    (
        "--max-highest-risk",
        share("--max-highest-risk"),
        "the prosecutor's highest record risk (1 / the smallest class) may be at most X, in (0, 1]",
    ),
    (
        "--max-average-risk",
        share("--max-average-risk"),
        "the prosecutor's average record risk (classes / records) may be at most X, in (0, 1]",
    ),
    (
        "--max-records-at-risk",
        share("--max-records-at-risk", allow_zero=True),
        "the share of records whose risk is above --record-threshold may be at most X, in [0, 1]",
    ),
    (
        "--min-k",
        positive_int,
        "every class (records sharing their QI values) must hold at least K records",
    ),
    (
        "--max-global-risk",
        share("--max-global-risk"),
        "the expected share of re-identifications from --weight (individual risk) may be at "
        "most X, in (0, 1]",
    ),
    (
        "--min-l",
        positive_int,
        "every --sensitive column must have at least L distinct values in each class",
    ),
    (
        "--min-arrival-k",
        positive_int,
        "the records new since --previous must be at least K in each class they arrive in "
        "(an attacker who knows someone arrived looks only at the arrivals)",
    ),
    (
        "--max-arrival-risk",
        share("--max-arrival-risk"),
        "the highest risk of a record new since --previous (1 / the fewest arrivals in a "
        "class) may be at most X, in (0, 1]",
    ),
    (
        "--min-departure-k",
        positive_int,
        "the records of --previous no longer released must be at least K in each class they leave",
    ),
    (
        "--max-departure-risk",
        share("--max-departure-risk"),
        "the highest risk of a departed record (1 / the fewest departures in a class) may "
        "be at most X, in (0, 1]",
    ),
)

#: How the options' rules name each field on the command line.
FLAG_NAMES: Mapping[str, str] = {
    "quasi_identifiers": "--qi",
    "preset": "--preset",
    "record_threshold": "--record-threshold",
    "population_size": "--population-size",
    "sampling_fraction": "--sampling-fraction",
    "region": "--region",
    "population_table": "--population-table",
    "previous_release": "--previous",
    **{flag[2:].replace("-", "_"): flag for flag, _, _ in _GATES},
    **{f"warn_{flag[2:].replace('-', '_')}": f"--warn-{flag[2:]}" for flag, _, _ in _GATES},
    "weight": "--weight COL",
    "sensitive": "--sensitive COL[,COL...]",
    "recursive_c": "--recursive-c",
    "rank_attributes": "--no-ranking",
    "max_subset_size": "--max-subset-size",
    "suda": "--suda",
    "suda_max_msu_size": "--suda-max-size",
    "suppression_limit": "--suppression-limit",
}


def add_arguments(a: argparse.ArgumentParser) -> None:
    add_input_arguments(
        a,
        qi_type=columns_as_written,
        input_help="CSV or Parquet path, or a SQLAlchemy URL; with --engine spark a Parquet "
        "path (file, folder, glob, any URI Spark reads), or none with --table NAME",
        input_optional=True,
    )
    add_table_arguments(a)
    add_spark_arguments(a)
    a.add_argument(
        "--record-threshold",
        type=share("--record-threshold"),
        default=DEFAULT_RECORD_THRESHOLD,
        metavar="T",
        help="a record is 'at risk' when its risk is above T, in (0, 1] "
        f"(default {DEFAULT_RECORD_THRESHOLD:g})",
    )
    pop = a.add_mutually_exclusive_group()
    presets = ", ".join(f"{name}: {size:,}" for name, size in REGIONS.items())
    for flag, kind, help_text in (
        ("--population-size", positive_int, "size N of the population the table was drawn from"),
        ("--sampling-fraction", share("--sampling-fraction"), "n / N, its share in the table"),
        ("--region", str, f"a population of known size ({presets})"),
    ):
        choices = sorted(REGIONS) if flag == "--region" else None
        pop.add_argument(
            flag, type=kind, choices=choices, metavar=_METAVARS.get(flag), help=help_text
        )
    _gate_arguments(a)
    for flag, kind, help_text in _OPTIONS:
        aliases = ("--previous-table",) if flag == "--previous" else ()
        a.add_argument(flag, *aliases, type=kind, metavar=_METAVARS.get(flag, "X"), help=help_text)
    a.add_argument(
        "--recursive-c",
        type=positive_number,
        default=DEFAULT_RECURSIVE_C,
        metavar="C",
        help=f"c of recursive (c,l)-diversity (default {DEFAULT_RECURSIVE_C:g}, as sdcMicro)",
    )
    for flag, help_text in _SWITCHES:
        a.add_argument(flag, action="store_true", help=help_text)
    a.add_argument(
        "--scan",
        nargs="?",
        const="",
        type=_policy,
        metavar="warn|fail",
        help="also scan every column for identifiers and attach the scan to the JSON "
        "(identifier_scan); fail: a failing column is a breach. Without a value: the "
        "--preset's policy, else warn. Default: no scan",
    )
    add_scan_arguments(a)
    add_outcome_arguments(a)
    add_output_arguments(
        a,
        json_help="write the assessment JSON here",
        report_help="write a self-contained HTML risk report here (needs the 'report' extra)",
    )


def _policy(text: str) -> str:
    """An argument type: ``--scan``'s policy, ``warn`` or ``fail`` (``""``: ``--scan`` without
    a value, the preset's policy)."""
    if text not in ("warn", "fail", ""):
        raise argparse.ArgumentTypeError(f"must be warn or fail, got {text!r}")
    return text


def _gate_arguments(a: argparse.ArgumentParser) -> None:
    """``--preset``, the gate's limits and their warning levels."""
    from reident_airflow.engine.presets import PRESETS

    names = ", ".join(PRESETS)
    a.add_argument(
        "--preset",
        metavar="NAME",
        help=f"a gate from published guidance ({names}; see docs/metrics.md); "
        "a limit given below wins over the preset's",
    )
    for flag, kind, help_text in _GATES:
        metavar = _METAVARS.get(flag, "X")
        a.add_argument(flag, type=kind, metavar=metavar, help=f"gate: {help_text}")
    for flag, kind, _ in _GATES:
        a.add_argument(
            f"--warn-{flag[2:]}",
            type=kind,
            metavar=_METAVARS.get(flag, "X"),
            help=f"warning level of {flag}: a breach is listed under 'warnings' and the run "
            "still passes; at most as lax as the failing level",
        )


_METAVARS = {
    "--population-size": "N",
    "--sampling-fraction": "F",
    "--population-table": "PATH_OR_TABLE",
    "--weight": "COL",
    "--sensitive": "COL[,COL...]",
    "--suda-max-size": "K",
    "--max-subset-size": "S",
    "--memory-limit": "SIZE",
    "--min-k": "K",
    "--min-l": "L",
    "--min-arrival-k": "K",
    "--min-departure-k": "K",
    "--previous": "PATH_OR_TABLE",
}

#: The flags taking a value, after the population: (flag, argument type, help).
_OPTIONS: tuple[tuple[str, Callable[[str], Any], str], ...] = (
    (
        "--population-table",
        str,
        "register of the population on the same QIs (a file, or a table of the same "
        "database): journalist and marketer are measured against it",
    ),
    (
        "--previous",
        str,
        "the release this one replaces (a file for a file INPUT, a table of the same "
        "database for a database URL, with --engine spark a catalog table with --table, "
        "else a Parquet path; alias --previous-table): the arrivals and departures since "
        "it are measured (since_last_release) and gated by --min-arrival-k ...",
    ),
    (
        "--weight",
        str,
        "sampling-weight column: individual risk (sdcMicro's Benedetti-Franconi "
        "approximation) and the journalist's risk estimated from it",
    ),
    (
        "--sensitive",
        columns_as_written,
        "sensitive columns: distinct, entropy and recursive (c,l) l-diversity",
    ),
    (
        "--suda-max-size",
        positive_int,
        "largest minimal sample unique searched by --suda (default: all QIs, up to 16)",
    ),
    (
        "--max-subset-size",
        positive_int,
        "rank every QI subset of up to S columns and the full set; S >= the number of QIs "
        "ranks the full lattice (default: each single column, each subset with one QI left "
        "out, and the full set)",
    ),
    (
        "--memory-limit",
        memory_size,
        "most memory the embedded engine may use for a file (e.g. 1GB); beyond it, it "
        "spills to a temporary folder",
    ),
)

#: The on/off flags: (flag, help).
_SWITCHES = (
    ("--suda", "special uniques: SUDA2 scores and per-column contributions (sdcMicro's suda2)"),
    (
        "--no-ranking",
        "skip the QI ranking (which columns re-identify): the verdict then needs only the "
        "class-size histogram, counted where the data is",
    ),
)

#: The option fields whose flag sets the opposite (``--no-ranking`` -> ``rank_attributes``).
_NEGATED = frozenset({"rank_attributes"})


# --------------------------------------------------------------------------------- the run
def _dest(flag: str) -> str:
    """The attribute argparse stores ``flag`` under (``--no-ranking`` -> ``no_ranking``)."""
    return flag.split()[0].lstrip("-").replace("-", "_")


def assessment_options(args: argparse.Namespace) -> AssessmentOptions:
    """The options the parsed arguments describe (each field from its flag in
    :data:`FLAG_NAMES`); a broken rule names the flags at fault."""
    from reident_airflow.engine.options import AssessmentOptions, OptionError, Thresholds

    values: dict[str, Any] = {}
    for name, flag in FLAG_NAMES.items():
        value = getattr(args, _dest(flag))
        if name in _NEGATED:
            value = not value
        elif isinstance(value, list):
            value = tuple(value)
        values[name] = None if value == "" else value
    values["sensitive"] = values["sensitive"] or ()
    limits = {f.name: values.pop(f.name) for f in fields(Thresholds)}
    warn = {f.name: values.pop(f"warn_{f.name}") for f in fields(Thresholds)}
    try:
        return AssessmentOptions(
            thresholds=Thresholds(**limits), warn_thresholds=Thresholds(**warn), **values
        )
    except OptionError as exc:
        exc.spelled(FLAG_NAMES)
        raise


def _refused_on_spark(options: AssessmentOptions) -> None:
    """Refuse, naming the flag, the options that need one row per class (SUDA2, a register)
    with ``--engine spark``."""
    from reident_airflow.engine.assessment import refuse_per_class

    try:
        refuse_per_class(options)
    except InvalidInputError as exc:
        flag = "--suda" if options.suda else "--population-table"
        why = str(exc).split(": ", 1)[-1]
        raise InvalidInputError(f"{flag} with --engine spark: {why}") from None


# ------------------------------------------------------------------------------ the door
def _hash_ahead(args: argparse.Namespace, source: Source) -> None:
    """A file's hash for the ``"input"`` object started beside the readings, not after them
    (:class:`~reident_airflow.sources.HashesAhead`)."""
    from reident_airflow.sources import HashesAhead

    if not args.no_fingerprint and isinstance(source, HashesAhead):
        source.hash_ahead()


def _narration(args: argparse.Namespace, progress: Progress) -> Narration:
    """What ``--engine`` tells of the steps: Spark counts each step in one job, and says why
    a table or a remote path has no fingerprint."""
    from reident_airflow.workflows.assessment import Narration

    if args.engine != "spark":
        return Narration(progress)
    return Narration(progress, in_place=True, no_fingerprint=_no_fingerprint_reason(args))


def _no_fingerprint_reason(args: argparse.Namespace) -> str:
    if args.table:
        return "a table has no file to hash: 'input' is null"
    return "not a local file or folder: 'input' is null"


def _previous_missing(name: str) -> None:
    """A ``--previous`` that does not exist is an input error."""
    raise InvalidInputError(f"--previous {name!r}: no such table or path")


def add_outcome_arguments(parser: argparse.ArgumentParser) -> None:
    """``--hierarchy``, ``--hierarchy-sep``, ``--suppression-limit``, ``--no-advice`` and
    ``--no-fingerprint``."""
    from reident_airflow.commands.common import (
        SUPPRESSION_LIMIT_HELP,
        add_hierarchy_arguments,
        suppression_limit,
    )

    add_hierarchy_arguments(
        parser,
        help_text="hierarchy of a QI in ARX's CSV format, for the Datafly outlook of the "
        "advice on a --min-k breach (default: the bundled ones, for Adult's column names)",
    )
    parser.add_argument(
        "--suppression-limit",
        type=suppression_limit,
        metavar="N|FRACTION",
        help="the suppression limit of the Datafly you will run (reident datafly's flag), "
        f"for the advice's outlook on a --min-k breach: {SUPPRESSION_LIMIT_HELP}",
    )
    parser.add_argument(
        "--no-advice",
        action="store_true",
        help="on a --min-k breach, do not read INPUT again for the advice (classes and "
        "records below k, the driving QI, Datafly's outcome)",
    )
    parser.add_argument(
        "--no-fingerprint",
        action="store_true",
        help="do not fingerprint INPUT (a file's SHA-256, about 2.5 s per GB; a table's "
        "row count and snapshot) for the JSON's 'input' and the report",
    )


# ---------------------------------------------------------------------------- result lines
def _number(x: float) -> str:
    """As :meth:`Breach.describe` writes a number: a whole one without decimals."""
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


def warning_line(warning: Breach) -> str:
    """``reident: warning: k = 3 (warning level: at least 5)``."""
    bound = "at least" if warning.is_minimum else "at most"
    return (
        f"reident: warning: {warning.metric} = {_number(warning.observed)} "
        f"(warning level: {bound} {_number(warning.limit)})"
    )


def result_lines(result: Assessment, found: AdviceFound | None) -> list[str]:
    """The lines for stderr: one per warning, then the advice on a k breach."""
    lines = [warning_line(w) for w in result.warnings]
    if found is not None:
        advice, missing = found
        line = f"reident: advice: {advice.describe()}"
        if missing:
            names = ", ".join(repr(m) for m in missing)
            line += (
                f" No Datafly outlook: no hierarchy (or none that covers the data) for "
                f"{names}; give one with --hierarchy COL=PATH.csv."
            )
        lines.append(line)
    from reident_airflow.engine.assessment import arrival_advice

    held = arrival_advice(result)
    if held is not None:
        lines.append(f"reident: advice: {held}")
    return lines


def finish_assessment(
    args: argparse.Namespace,
    result: Assessment,
    found: AdviceFound | None,
    fingerprint: dict[str, Any] | None,
    *,
    progress: Callable[[str], None],
    streams: tuple[Any, Any],
) -> int:
    """Write the outputs of an assessment (its JSON with the ``advice`` and ``input`` of this
    run, the summary, the report) and return the exit code; any engine, any source."""
    from reident_airflow.commands.common import finish
    from reident_airflow.summary import assessment_summary

    payload = result.to_dict()
    payload["advice"] = None if found is None else found[0].to_dict()
    payload["input"] = fingerprint
    progress("writing the outputs")
    return finish(
        args,
        payload,
        kind="assessment",
        streams=streams,
        summary=lambda: assessment_summary(payload),
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """assess re-identification risk of a table

    Assess the re-identification risk of a CSV/Parquet file or a database table: the
    prosecutor, journalist and marketer models, uniqueness, the QI ranking and the optional
    measures; gate a release on the limits given.
    """
    check_engine_arguments(args)
    options = assessment_options(args)
    scanning = _scan_options(args, options)
    if args.engine == "spark":
        _refused_on_spark(options)
    hierarchies = given_hierarchies(args)
    from reident_airflow.workflows.assessment import run_assessment

    with Progress.of("assess", args, err) as progress, database_located(args.input):
        with open_source(args, progress) as source:
            _hash_ahead(args, source)
            assessed = run_assessment(
                source,
                options,
                scan=None if scanning is None else lambda s: scan_source(s, scanning, progress),
                previous_missing=_previous_missing,
                advice=not args.no_advice,
                hierarchies=hierarchies,
                fingerprint=not args.no_fingerprint,
                narration=_narration(args, progress),
            )
        result, found = assessed.result, assessed.advice
        fingerprint = None if assessed.fingerprint is None else assessed.fingerprint.to_dict()
        code = finish_assessment(
            args, result, found, fingerprint, progress=progress, streams=(out, err)
        )
    for line in result_lines(result, found):
        err.write(f"{line}\n")
    if result.identifier_scan is not None:
        for line in scan_lines(result.identifier_scan):
            err.write(f"{line}\n")
        for line in safe_harbor_lines(result.identifier_scan):  # issue 42
            err.write(f"reident: scan: {line}\n")
    return code


def _scan_options(args: argparse.Namespace, options: AssessmentOptions) -> ScanOptions | None:
    """The identifier scan's options with ``--scan`` (its policy, else the preset's, else
    ``warn``; the QIs of ``--qi`` declared), ``None`` without it. A scan flag without
    ``--scan`` is an input error: it would change nothing."""
    if args.scan is None:
        given = [
            flag
            for flag, value in (
                ("--allow", args.allow),
                ("--safe-harbor", args.safe_harbor),
                ("--extra-names", args.extra_names),
                ("--phone-regions", args.phone_regions),
                ("--sample-size", args.sample_size),
                ("--approximate", args.approximate),
            )
            if value
        ]
        if given:
            raise InvalidInputError(f"{given[0]} applies only with --scan")
        return None
    return scan_options(
        args,
        policy=args.scan or None,
        quasi_identifiers=options.quasi_identifiers,
        preset=options.preset,
    )

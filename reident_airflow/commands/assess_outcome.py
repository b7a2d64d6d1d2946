"""What ``reident assess`` adds to an assessment once it is computed (issue 19): the advice on
a k breach, the fingerprint of the input, and the result lines on stderr.

- **Advice** (:func:`breach_advice_of`): only after a breach of ``--min-k``; the class table
  and the rows are then read again from INPUT's source (a file, or the ``--table`` of a
  database URL) to name the QI that drives the risk and what Datafly at that k would do,
  with the ``--hierarchy`` files given (read before INPUT, so that a bad one fails first),
  else the bundled ones (:func:`~reident_airflow.sources.advice.advise_on_breach`).
  ``--no-advice`` skips it.
- **Fingerprint** (``"input"``, :meth:`~reident_airflow.sources.Source.fingerprint`): a
  file's SHA-256, size and row count, or a table's row count and snapshot
  (:mod:`reident_airflow.sources.fingerprint`). Hashing costs about 2.5 s per GB on the
  development machine, so ``--no-fingerprint`` skips it.
- **Result lines** (:func:`result_lines`): one ``reident: warning: ...`` line per warning
  level crossed, and one ``reident: advice: ...`` line. They are results, not progress:
  ``--quiet`` does not silence them. Aggregates only: names and counts, never a value.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reident_airflow.engine.advice import BreachAdvice
    from reident_airflow.engine.assessment import Assessment, Breach
    from reident_airflow.engine.classes import ClassSizes, ClassTable
    from reident_airflow.engine.hierarchies import Hierarchy
    from reident_airflow.sources import Source

__all__ = [
    "AdviceFound",
    "add_outcome_arguments",
    "breach_advice_of",
    "finish_assessment",
    "result_lines",
    "warning_line",
]

#: The advice on a k breach and the QIs no hierarchy was found for (``None``: no k breach,
#: or ``--no-advice``).
AdviceFound = tuple["BreachAdvice", tuple[str, ...]] | None


def add_outcome_arguments(parser: argparse.ArgumentParser) -> None:
    """``--hierarchy``, ``--hierarchy-sep``, ``--no-advice`` and ``--no-fingerprint``."""
    from reident_airflow.commands.common import add_hierarchy_arguments

    add_hierarchy_arguments(
        parser,
        help_text="hierarchy of a QI in ARX's CSV format, for the Datafly outlook of the "
        "advice on a --min-k breach (default: the bundled ones, for Adult's column names)",
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


# ------------------------------------------------------------------------------ the advice
def breach_advice_of(
    args: argparse.Namespace,
    result: Assessment,
    table: ClassSizes | ClassTable,
    source: Source,
    hierarchies: Mapping[str, Hierarchy],
) -> AdviceFound:
    """The advice when ``result`` breached ``--min-k`` (``None`` otherwise, or with
    ``--no-advice``); ``source`` reads INPUT's class table and rows (the QIs only) where the
    data is; ``hierarchies`` are those of ``--hierarchy`` (:func:`given_hierarchies`)."""
    if args.no_advice:
        return None
    limit = result.thresholds.min_k
    if limit is None or result.k >= limit:
        return None
    from reident_airflow.sources.advice import AdviceInputs, advise_on_breach

    qis = result.quasi_identifiers
    inputs = AdviceInputs(
        class_table=lambda: source.class_table(qis),
        rows=lambda: source.release_rows(qis, qis)[0],
        hierarchies=hierarchies,
    )
    return advise_on_breach(result, table, inputs)


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


def result_lines(result: Assessment, found: AdviceFound) -> list[str]:
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
    return lines


def finish_assessment(
    args: argparse.Namespace,
    result: Assessment,
    found: AdviceFound,
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

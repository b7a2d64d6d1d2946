"""What :class:`~reident_airflow.operators.risk.ReidentificationRiskOperator` adds to an
assessment once it is computed (issue 19), as ``reident assess`` does
(:mod:`reident_airflow.commands.assess_outcome`):

- **Warning levels** (:func:`warning_lines`): one log line per ``warn_*`` level crossed.
- **Advice** (:func:`staged_advice`): only after a breach of ``min_k``. The staged table is
  read again -- its class table where the data is, then its QI columns alone for Datafly --
  with the ``hierarchies`` given (specs of :mod:`~reident_airflow.operators.hierarchy_specs`),
  else the bundled ones (:func:`~reident_airflow.sources.advice.advise_on_breach`).
- **Fingerprint** (:func:`staged_fingerprint`): the staged file's SHA-256, size and row count,
  or the table's (or query's) row count and snapshot
  (:mod:`reident_airflow.sources.fingerprint`). A file in object storage is downloaded once
  for the assessment, the advice and the fingerprint
  (:meth:`~reident_airflow.operators.base.StagedTableOperator.staged_once`), hashed as
  downloaded and named by its URL.

Aggregates only: names, counts, levels, hashes -- never a value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    import pandas as pd

    from reident_airflow.engine.advice import BreachAdvice
    from reident_airflow.engine.assessment import Assessment
    from reident_airflow.engine.classes import ClassSizes, ClassTable
    from reident_airflow.operators.risk import ReidentificationRiskOperator

__all__ = ["AdviceFound", "advice_sentence", "staged_advice", "staged_fingerprint", "warning_lines"]

#: The advice on a k breach and the QIs no hierarchy was found for.
AdviceFound = tuple["BreachAdvice", tuple[str, ...]]


def warning_lines(result: Assessment) -> list[str]:
    """One log line per warning level crossed:
    ``warning level crossed: k = 3 (limit: at least 5); the release goes ahead``."""
    return [
        f"warning level crossed: {w.describe()}; the release goes ahead" for w in result.warnings
    ]


def advice_sentence(found: AdviceFound) -> str:
    """The advice as one paragraph; names the QIs that had no hierarchy."""
    advice, missing = found
    text = advice.describe()
    if missing:
        names = ", ".join(repr(m) for m in missing)
        text += (
            f" No Datafly outlook: no hierarchy (or none that covers the data) for {names}; "
            "give one in the operator's hierarchies."
        )
    return text


def _advise(
    op: ReidentificationRiskOperator,
    result: Assessment,
    table: ClassSizes | ClassTable,
    class_table: Callable[[], ClassTable],
    rows: Callable[[], pd.DataFrame],
    specs: Mapping[str, Any],
) -> AdviceFound | None:
    """The advice, the rows read once: first when a hierarchy spec is built from them."""
    from reident_airflow.operators.hierarchy_specs import resolve_hierarchies
    from reident_airflow.sources.advice import AdviceInputs, advise_on_breach

    qis = list(result.quasi_identifiers)
    frame: list[pd.DataFrame] = []

    def once() -> pd.DataFrame:
        if not frame:
            frame.append(rows())
        return frame[0]

    hierarchies = {}
    if specs:
        given = {c: s for c, s in specs.items() if c in qis}
        built = any(isinstance(s, Mapping) and s.get("type") != "arx" for s in given.values())
        import pandas as pd

        source = once() if built else pd.DataFrame(columns=qis)
        hierarchies = resolve_hierarchies(given, source, qis, sep=op.hierarchy_sep)
    inputs = AdviceInputs(class_table=class_table, rows=once, hierarchies=hierarchies)
    return advise_on_breach(result, table, inputs)


def staged_advice(
    op: ReidentificationRiskOperator,
    result: Assessment,
    table: ClassSizes | ClassTable,
    specs: Mapping[str, Any],
) -> AdviceFound | None:
    """The advice when ``result`` breached ``min_k`` (``None`` otherwise): the staged table
    read again where it is, ``specs`` the rendered ``hierarchies``."""
    limit = result.thresholds.min_k
    if limit is None or result.k >= limit:
        return None
    qis = result.quasi_identifiers
    memory = op.memory_limit or None

    def from_file(local: Path) -> AdviceFound | None:
        from reident_airflow.sources.files import class_table_from_file
        from reident_airflow.sources.tables import read_file_frame

        return _advise(
            op,
            result,
            table,
            lambda: class_table_from_file(local, qis, sep=op.sep, memory_limit=memory),
            lambda: read_file_frame(local, sep=op.sep, categorical=qis, columns=qis),
            specs,
        )

    def from_engine(engine: Engine) -> AdviceFound | None:
        from reident_airflow.sources.sql import class_table_from_sql
        from reident_airflow.sources.tables import read_sql_frame

        where = op.staged_query(engine)
        return _advise(
            op,
            result,
            table,
            lambda: class_table_from_sql(engine, qis, **where),
            lambda: read_sql_frame(engine, **where, columns=qis)[0],
            specs,
        )

    return op.read_table(from_file, from_engine)


def staged_fingerprint(op: ReidentificationRiskOperator, result: Assessment) -> dict[str, Any]:
    """The assessment's ``"input"`` object for the staged table (see the module's docstring)."""
    from reident_airflow.sources.fingerprint import fingerprint_file
    from reident_airflow.sources.sql import fingerprint_sql

    def from_file(local: Path) -> dict[str, Any]:
        found = fingerprint_file(local, rows=result.records + result.excluded_records)
        if str(local) != str(op.path):  # a download: named by its URL
            found = dataclasses.replace(found, location=str(op.path))
        return found.to_dict()

    def from_engine(engine: Engine) -> dict[str, Any]:
        return fingerprint_sql(engine, **op.staged_query(engine)).to_dict()

    return op.read_table(from_file, from_engine)

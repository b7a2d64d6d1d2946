"""The grouping queries of a Spark DataFrame: ``GROUP BY`` the QIs in Spark, aggregates out.

A :class:`SparkTable` is a ``pyspark.sql.DataFrame`` (a classic session's or a Spark
Connect session's) with its columns renamed by position (``c0``, ``c1``, ...: no column name
is ever parsed by Spark) and each column's kind. The queries here group the records in
Spark's executors and collect only aggregates on the driver:

- :func:`class_size_rows`: the class-size histogram, with the records of the fully suppressed
  class apart (every QI the text ``*``), and, for the QI ranking, the histogram of the classes
  formed on each asked subset of the QIs (one ``GROUPING SETS`` over the class table);
- :func:`class_table_arrow`: for the QI ranking, the class table itself (one row per class),
  as Arrow, when it has at most a given number of classes;
- :func:`weight_rows`: per distinct ``(class size, weight sum)`` pair, how many classes have
  it, and the counts that check the weight column;
- :func:`profile_rows`: per sensitive column, per distinct ``(class size, sorted value
  counts)`` profile, how many classes have it.

What is collected has one row per distinct class size (per subset), per distinct weight pair
or per distinct value-count profile; only the QI ranking's class table has one row per class,
and only up to the limit its caller sets (:mod:`~reident_airflow.sources.spark`).

Values are grouped as Spark groups them, which is the reading contract (docs/reading.md):
NULL is one value of its own, ``""`` is text, text is compared by its characters (Spark's
default UTF8_BINARY collation; a column with another collation is refused), ``-0.0`` and
``0.0`` are one value and every NaN is one value (Spark normalises floats before grouping).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reident_airflow.engine.encoding import SUPPRESSION_MARKER
from reident_airflow.engine.errors import InvalidInputError, ReidentError

if TYPE_CHECKING:
    from reident_airflow.engine.identifiers import ColumnPlan, ColumnProfile

__all__ = [
    "GROUPED",
    "SUPPRESSED",
    "SparkJobError",
    "SparkTable",
    "change_rows",
    "class_size_rows",
    "class_table_arrow",
    "collect_rows",
    "column_kinds",
    "column_of",
    "column_profiles",
    "functions",
    "is_spark_frame",
    "open_spark_frame",
    "profile_rows",
    "spark_errors",
    "spark_kinds",
    "weight_rows",
    "window",
]

_LOG = logging.getLogger(__name__)

#: The name of the per-class count column of the queries' results.
SIZE = "reident_size"
#: The column counting how many classes (or groups) a result row stands for.
GROUPED = "reident_groups"
#: The column flagging the fully suppressed class (every QI is the text ``*``).
SUPPRESSED = "reident_suppressed"
_GID = "reident_gid"
_EXCLUDED = "reident_excluded"
_WSUM = "reident_wsum"
_PROFILE = "reident_profile"
_CHECKS = ("wmissing", "wtext", "wnonpositive", "winfinite")

_TEXT = "text"
_FLOAT = "float"
_NUMBER = "number"
_OTHER = "other"
#: a string under a non-binary collation: refused wherever it is used (it may merge spellings)
_COLLATED = "collated"


def is_spark_frame(obj: Any) -> bool:
    """Whether ``obj`` is a PySpark DataFrame (classic or Spark Connect), without importing
    PySpark."""
    return any(
        c.__name__ == "DataFrame" and c.__module__.startswith("pyspark.sql")
        for c in type(obj).__mro__
    )


def functions(frame: Any) -> Any:
    """PySpark's column functions for ``frame``: Spark Connect's for a Connect DataFrame
    (a process may hold a classic session and a Connect one), the classic ones otherwise."""
    if type(frame).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect import functions as connect_functions

        return connect_functions
    from pyspark.sql import functions as classic_functions

    return classic_functions


def column_of(frame: Any, name: str, alias: str | None = None) -> Any:
    """The column ``name`` of ``frame`` (backticks doubled, so any name is taken as it is),
    of the DataFrame aliased ``alias`` when given; a column of the frame's kind, classic or
    Connect (:func:`functions`)."""
    quoted = "`" + name.replace("`", "``") + "`"
    return functions(frame).col(quoted if alias is None else f"{alias}.{quoted}")


def window(frame: Any) -> Any:
    """PySpark's ``Window`` for ``frame``: Spark Connect's for a Connect DataFrame, the
    classic one otherwise (as :func:`functions`)."""
    if type(frame).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect.window import Window as ConnectWindow

        return ConnectWindow
    from pyspark.sql import Window as ClassicWindow

    return ClassicWindow


def _collation(data_type: Any) -> str | None:
    """A string type's collation when it is not the binary one (None when it is)."""
    collation = str(getattr(data_type, "collation", "UTF8_BINARY"))
    return None if collation.upper() == "UTF8_BINARY" else collation


def _kind(data_type: Any) -> str:
    from pyspark.sql import types as T

    if isinstance(data_type, T.StringType):  # VarcharType / CharType subclass StringType
        return _TEXT if _collation(data_type) is None else _COLLATED
    if isinstance(data_type, T.FloatType | T.DoubleType):
        return _FLOAT
    if isinstance(data_type, T.NumericType):
        return _NUMBER
    return _OTHER


@dataclass(frozen=True)
class SparkTable:
    """A Spark DataFrame with positional column names (``c0`` ...), its columns' own names
    and kinds (``text``, ``float``, ``number`` or ``other``)."""

    frame: Any
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    label: str = "Spark DataFrame"
    #: the collation of each column of kind ``collated`` (None for the others)
    collations: tuple[str | None, ...] = ()

    def positions(self, columns: Sequence[str], kind: str = "quasi-identifier") -> list[int]:
        """The positions of ``columns``, looked up as a file's header is
        (:func:`~reident_airflow.sources.file_source.resolve_columns`); a text column under
        a non-binary collation is refused (only when it is used)."""
        from reident_airflow.sources.file_source import resolve_columns

        pos = list(resolve_columns(columns, self.names, kind=kind))
        for i in pos:
            if self.kinds[i] == _COLLATED:
                raise InvalidInputError(
                    f"{kind} {self.names[i]!r} has the collation {self.collations[i]}: it may "
                    "merge spellings (docs/reading.md); cast it to a UTF8_BINARY string first"
                )
        return pos

    def qi_positions(self, qis: Sequence[str]) -> tuple[tuple[str, ...], list[int]]:
        """The QIs' column names (as the frame spells them) and positions."""
        if isinstance(qis, str) or not list(qis):
            raise InvalidInputError("no quasi-identifiers given: name at least one column")
        pos = self.positions(qis)
        return tuple(self.names[i] for i in pos), pos


def open_spark_frame(frame: Any, label: str = "Spark DataFrame") -> SparkTable:
    """The :class:`SparkTable` of a PySpark DataFrame (nothing is computed yet)."""
    if not is_spark_frame(frame):
        raise InvalidInputError(f"expected a pyspark.sql.DataFrame, got {type(frame).__name__}")
    fields = list(frame.schema.fields)
    names = tuple(str(f.name) for f in fields)
    kinds = tuple(_kind(f.dataType) for f in fields)
    collations = tuple(
        _collation(f.dataType) if kind == _COLLATED else None
        for f, kind in zip(fields, kinds, strict=True)
    )
    renamed = frame.toDF(*(f"c{i}" for i in range(len(names))))
    return SparkTable(renamed, names, kinds, label, collations)


class SparkJobError(ReidentError):
    """A Spark job failed for a reason a retry may cure (an executor lost, the Spark Connect
    server gone): ``deterministic`` is false. Spark's message is not kept (it may quote a
    value); the exception's class and Spark's error condition are."""

    deterministic = False


def _spark_error(exc: Exception, label: str) -> Exception:
    """A PySpark (or Py4J) error as an error naming its kind and condition, never a value:
    an analysis error (a column that cannot be grouped, a type mismatch) is bad input, any
    other failure of the job a :class:`SparkJobError`."""
    if not type(exc).__module__.startswith(("pyspark", "py4j")):
        return exc
    condition = getattr(exc, "getCondition", lambda: None)()
    kind = type(exc).__name__ + (f" {condition}" if condition else "")
    message = (
        f"{label}: the Spark job failed ({kind}); Spark's message is not shown (it may quote "
        "values)"
    )
    from pyspark.errors import AnalysisException

    if isinstance(exc, AnalysisException):
        return InvalidInputError(message)
    return SparkJobError(message)


@contextmanager
def spark_errors(label: str = "Spark DataFrame") -> Iterator[None]:
    """Translate the PySpark errors raised in the block (:func:`_spark_error`)."""
    try:
        yield
    except ReidentError:
        raise
    except Exception as exc:
        raise _spark_error(exc, label) from None


def collect_rows(frame: Any) -> list[tuple[Any, ...]]:
    """Collect a small aggregate result on the driver, as tuples."""
    return [tuple(row) for row in frame.collect()]


def _star(source: SparkTable, pos: Sequence[int]) -> Any:
    """``every QI of the class is the text '*'`` over a class table's key columns (false
    where a QI is not text)."""
    F = functions(source.frame)

    if not all(source.kinds[i] == _TEXT for i in pos):
        return F.lit(False)
    every = F.lit(True)
    for i in pos:
        every = every & (F.col(f"c{i}") == F.lit(SUPPRESSION_MARKER))
    return F.coalesce(every, F.lit(False))


def _classes(source: SparkTable, pos: Sequence[int], *aggs: Any) -> Any:
    """One row per class: its keys, its size, ``aggs`` and the suppressed flag."""
    F = functions(source.frame)

    keys = [F.col(f"c{i}") for i in pos]
    grouped = source.frame.groupBy(*keys).agg(F.count(F.lit(1)).alias(SIZE), *aggs)
    return grouped.withColumn(SUPPRESSED, _star(source, pos))


def class_size_rows(
    source: SparkTable, pos: Sequence[int], subsets: Sequence[Sequence[int]] = ()
) -> list[tuple[Any, ...]]:
    """The class-size histograms, computed in Spark.

    Without ``subsets``: rows ``(size, suppressed, classes)``. With ``subsets`` (each a list
    of indices into ``pos``, not the full set): rows ``(subset id, size, classes, excluded
    records)``, where subset id 0 is the full set, ``i + 1`` the ``i``-th subset; a subset's
    classes are formed by the records that are not fully suppressed (size 0 rows carry only
    the excluded records of the full set).
    """
    F = functions(source.frame)

    classes = _classes(source, pos)
    if not subsets:
        result = classes.groupBy(SIZE, SUPPRESSED).agg(F.count(F.lit(1)).alias(GROUPED))
        return collect_rows(result)
    m = len(pos)
    keys = [f"c{i}" for i in pos]
    sets = [keys, *([keys[j] for j in s] for s in subsets)]
    kept = F.when(~F.col(SUPPRESSED), F.col(SIZE)).otherwise(F.lit(0))
    dropped = F.when(F.col(SUPPRESSED), F.col(SIZE)).otherwise(F.lit(0))
    merged = classes.groupingSets(sets, *keys).agg(
        F.sum(kept).alias("f"), F.sum(dropped).alias(_EXCLUDED), F.grouping_id().alias(_GID)
    )
    result = merged.groupBy(_GID, "f").agg(
        F.count(F.lit(1)).alias(GROUPED), F.sum(_EXCLUDED).alias(_EXCLUDED)
    )
    # grouping_id: one bit per key column, the first column most significant, set when the
    # column is not grouped
    ids = {0: 0}
    for number, subset in enumerate(subsets, start=1):
        ids[sum(1 << (m - 1 - j) for j in range(m) if j not in subset)] = number
    return [(ids[int(g)], int(f), int(c), int(x)) for g, f, c, x in collect_rows(result)]


def _arrow_exact(data_type: Any) -> bool:
    """Whether Arrow carries a column of this Spark type to the driver value for value, so
    that the engine's codes (:func:`~reident_airflow.engine.aggregates.aggregate_arrow`) tell
    apart exactly the values Spark told apart: text under the binary collation, numbers,
    booleans, dates, timestamps and bytes; not arrays, maps, structs, intervals or variants."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.StringType):
        return _collation(data_type) is None
    exact = (T.NumericType, T.BooleanType, T.DateType, T.TimestampType, T.BinaryType)
    return isinstance(data_type, exact) or type(data_type).__name__ == "TimestampNTZType"


def class_table_arrow(source: SparkTable, pos: Sequence[int], limit: int) -> Any | None:
    """The class table as an Arrow table on the driver: one row per class, its QI values in
    ``c{i}`` and its record count in ``size`` -- or ``None`` when it has more than ``limit``
    classes (at most ``limit + 1`` rows are collected to find out), when a QI's type is not
    one Arrow carries exactly (:func:`_arrow_exact`), or when the collect fails (the driver's
    ``spark.driver.maxResultSize`` or memory; logged with the error's kind, never Spark's
    message): the caller then counts in Spark, whose errors are raised. One Spark job."""
    F = functions(source.frame)

    fields = source.frame.schema.fields
    if not all(_arrow_exact(fields[i].dataType) for i in pos):
        return None
    classes = _classes(source, pos).select(*(f"c{i}" for i in pos), F.col(SIZE).alias("size"))
    try:
        table = classes.limit(limit + 1).toArrow()
    except Exception as exc:
        condition = getattr(exc, "getCondition", lambda: None)()
        _LOG.warning(
            "%s: the QI ranking's class table (up to %d classes) could not be collected to the "
            "driver (%s%s); ranking in Spark instead. A smaller "
            "reident.ranking.driverClasses, or a larger spark.driver.maxResultSize and driver "
            "memory, avoids the second job.",
            source.label,
            limit,
            type(exc).__name__,
            f" {condition}" if condition else "",
        )
        return None
    return None if table.num_rows > limit else table


def weight_rows(
    source: SparkTable, pos: Sequence[int], wpos: int
) -> tuple[list[tuple[Any, ...]], dict[str, int]]:
    """``(size, weight sum, suppressed, classes)`` per distinct pair, and the weight checks'
    totals over every record (``wmissing``, ``wtext``, ``wnonpositive``, ``winfinite``)."""
    F = functions(source.frame)

    raw = F.col(f"c{wpos}")
    num = raw.try_cast("double")
    conditions = {
        "wmissing": raw.isNull(),
        "wtext": raw.isNotNull() & num.isNull(),
        "wnonpositive": num <= F.lit(0.0),
        "winfinite": F.isnan(num) | (F.abs(num) == F.lit(float("inf"))),
    }
    checks = [F.count_if(F.coalesce(c, F.lit(False))).alias(a) for a, c in conditions.items()]
    classes = _classes(source, pos, F.sum(num).alias(_WSUM), *checks)
    result = classes.groupBy(SIZE, _WSUM, SUPPRESSED).agg(
        F.count(F.lit(1)).alias(GROUPED), *(F.sum(a).alias(a) for a in _CHECKS)
    )
    rows = collect_rows(result)
    totals = {a: sum(int(r[4 + i]) for r in rows) for i, a in enumerate(_CHECKS)}
    return [r[:4] for r in rows], totals


def profile_rows(source: SparkTable, pos: Sequence[int], spos: int) -> list[tuple[Any, ...]]:
    """``(size, value counts ascending, suppressed, classes)`` per distinct profile of the
    sensitive column at ``spos`` (a missing value counts as one value)."""
    F = functions(source.frame)

    keys = [F.col(f"c{i}") for i in pos]
    pairs = source.frame.groupBy(*keys, F.col(f"c{spos}")).agg(F.count(F.lit(1)).alias("n"))
    classes = pairs.groupBy(*keys).agg(
        F.sum("n").alias(SIZE), F.sort_array(F.collect_list("n")).alias(_PROFILE)
    )
    classes = classes.withColumn(SUPPRESSED, _star(source, pos))
    result = classes.groupBy(SIZE, _PROFILE, SUPPRESSED).agg(F.count(F.lit(1)).alias(GROUPED))
    return collect_rows(result)


# ------------------------------------------------------------------------- column profiles
def _column_kind(data_type: Any) -> str:
    """A Spark type as a kind of :data:`~reident_airflow.engine.identifiers.COLUMN_KINDS`."""
    from pyspark.sql import types as T

    checks: tuple[tuple[Any, str], ...] = (
        (T.StringType, "string"),
        (T.BooleanType, "boolean"),
        (T.ByteType | T.ShortType | T.IntegerType | T.LongType, "integer"),
        (T.DecimalType, "decimal"),
        (T.FloatType | T.DoubleType, "float"),
        (T.DateType, "date"),
        (T.TimestampType | T.TimestampNTZType, "timestamp"),
        (T.BinaryType, "binary"),
    )
    return next((kind for cls, kind in checks if isinstance(data_type, cls)), "other")


def column_kinds(frame: Any, label: str = "Spark DataFrame") -> dict[str, str]:
    """Each column's kind, from the DataFrame's schema; a name given to two columns is
    refused."""
    fields = list(frame.schema.fields)
    names = [str(f.name) for f in fields]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InvalidInputError(f"{label}: column {twice!r} appears twice: rename the columns")
    return {str(f.name): _column_kind(f.dataType) for f in fields}


def _profile_text(F: Any, col: Any, kind: str) -> Any:
    return col if kind == "string" else col.cast("string")


def _profile_condition(F: Any, name: str, col: Any, plan: ColumnPlan) -> Any:
    from reident_airflow.engine.identifiers import CONTENT_PATTERNS
    from reident_airflow.sources.column_profile import (
        OVER_89_TEXT,
        RESTRICTED_ZIP3_SORTED,
        zip3_ranges,
    )

    text = _profile_text(F, col, plan.kind)
    if name == "over_89":
        if plan.kind in ("integer", "decimal"):
            return col > F.lit(89)
        if plan.kind == "float":  # NaN (the largest value in Spark) and infinities: no age
            return (col > F.lit(89)) & (col < F.lit(float("inf")))
        return text.rlike(OVER_89_TEXT)
    if name == "zip3":
        if plan.kind == "integer":
            ranges = [col.between(lo, hi) for lo, hi in zip3_ranges()]
            out = ranges[0]
            for more in ranges[1:]:
                out = out | more
            return out
        return F.substring(text, 1, 3).isin(*RESTRICTED_ZIP3_SORTED)
    return text.rlike(CONTENT_PATTERNS[name])


def _plan_conditions(plan: ColumnPlan) -> list[str]:
    return [
        *plan.patterns,
        *(["over_89"] if plan.over_89 else []),
        *(["zip3"] if plan.zip3 else []),
    ]


def _exact_profile_row(source: SparkTable, plans: Sequence[ColumnPlan], pos: Sequence[int]) -> Any:
    """One row: ``GROUPING SETS`` over each column (a row per distinct value and its
    records), then conditional aggregates over the grouped values, the patterns matched once
    per distinct value (records and distinct values per pattern)."""
    F = functions(source.frame)
    keys = [f"c{p}" for p in pos]
    grouped = source.frame.groupingSets([[k] for k in keys], *keys).agg(
        F.count(F.lit(1)).alias("n"), *(F.grouping(k).alias(f"g{j}") for j, k in enumerate(keys))
    )
    n = F.col("n")
    zero = F.lit(0)
    aggs: list[Any] = []
    for j, (k, plan) in enumerate(zip(keys, plans, strict=True)):
        own = F.col(f"g{j}") == zero
        col = F.col(k)
        aggs += [
            F.coalesce(F.sum(F.when(own, n)), zero),
            F.coalesce(F.sum(F.when(own & col.isNull(), n)), zero),
            F.count_if(own & col.isNotNull()),
            F.count_if(own & col.isNotNull() & (n == F.lit(1))),
        ]
        for name in _plan_conditions(plan):
            match = own & F.coalesce(_profile_condition(F, name, col, plan), F.lit(False))
            aggs += [F.coalesce(F.sum(F.when(match, n)), zero), F.count_if(match)]
    return collect_rows(grouped.agg(*aggs))[0]


def _approximate_profile_row(
    source: SparkTable, plans: Sequence[ColumnPlan], pos: Sequence[int]
) -> Any:
    """One row of per-record aggregates (``approx_count_distinct``, no grouping, so no
    singletons), the records per pattern."""
    F = functions(source.frame)
    aggs: list[Any] = []
    for p, plan in zip(pos, plans, strict=True):
        col = F.col(f"c{p}")
        aggs += [F.count(F.lit(1)), F.count_if(col.isNull()), F.approx_count_distinct(col)]
        for name in _plan_conditions(plan):
            aggs.append(
                F.count_if(F.coalesce(_profile_condition(F, name, col, plan), F.lit(False)))
            )
    return collect_rows(source.frame.agg(*aggs))[0]


def _samples(source: SparkTable, plan: ColumnPlan, p: int, name: str) -> list[tuple[str, int]]:
    """The first ``sample_size`` + 1 distinct values of column ``p`` matching ``name`` in
    the order of their bytes, as on every backend (Spark's top-n: no value beyond those
    reaches the driver)."""
    F = functions(source.frame)
    col = F.col(f"c{p}")
    text = _profile_text(F, col, plan.kind)
    top = (
        source.frame.where(_profile_condition(F, name, col, plan))
        .groupBy(text.alias("v"))
        .agg(F.count(F.lit(1)).alias("n"))
        .orderBy(F.col("v"))
        .limit(plan.sample_size + 1)
    )
    return [(str(v), int(c)) for v, c in collect_rows(top)]


def column_profiles(
    source: SparkTable, plans: Sequence[ColumnPlan], *, approximate: bool = False
) -> tuple[ColumnProfile, ...]:
    """Each plan counted by Spark: exactly (one job, ``GROUPING SETS``), or with
    ``approximate`` an estimate of the distinct values (``approx_count_distinct``) without
    singletons, in one pass without grouping. One row of aggregates reaches the driver; then
    the sampled values, one small top-n job per sampled kind that matched."""
    from reident_airflow.sources.column_profile import check_plans, profile_from_counts

    plans = check_plans(plans, approximate=approximate)
    if not plans:
        return ()
    pos = source.positions([p.column for p in plans], kind="column")
    with spark_errors(source.label):
        if approximate:
            row = _approximate_profile_row(source, plans, pos)
        else:
            row = _exact_profile_row(source, plans, pos)
        cells = iter(row)
        out = []
        for p, plan in zip(pos, plans, strict=True):
            records, nulls = int(next(cells) or 0), int(next(cells) or 0)
            distinct = int(next(cells) or 0)
            singletons = None if approximate else int(next(cells) or 0)
            counted: dict[str, int] = {}
            matched: dict[str, int | None] = {}
            for name in _plan_conditions(plan):
                counted[name] = int(next(cells) or 0)
                matched[name] = None if approximate else int(next(cells) or 0)
            samples = {
                name: _samples(source, plan, p, name)
                if counted[name] and plan.sample_size > 0
                else []
                for name in plan.sample
            }
            out.append(
                profile_from_counts(
                    plan,
                    records=records,
                    nulls=nulls,
                    distinct=distinct,
                    singletons=singletons,
                    matches=counted,
                    samples=samples,
                    matched_distinct={k: matched[k] for k in plan.sample},
                    over_89=counted.get("over_89"),
                    zip3=counted.get("zip3"),
                    approximate=approximate,
                )
            )
    return tuple(out)


# --------------------------------------------------------------------- release comparison
def spark_kinds(source: SparkTable) -> list[str]:
    """Each column's kind of :data:`~reident_airflow.engine.identifiers.COLUMN_KINDS`, in the
    frame's order, from its schema (nothing is computed)."""
    return [_column_kind(f.dataType) for f in source.frame.schema.fields]


def change_rows(
    new: SparkTable,
    old: SparkTable,
    new_pos: Sequence[int],
    old_pos: Sequence[int],
    qis: Sequence[int],
) -> list[tuple[Any, ...]]:
    """The release comparison (:mod:`~reident_airflow.sources.release_changes`) of the
    candidate ``new`` and the previous release ``old`` on the compared columns at
    ``new_pos`` and ``old_pos`` (pairwise the same columns), grouped on the ``qis``
    (positions among them), in one Spark job: rows ``(a, d, suppressed, classes, n, p)``,
    one per distinct ``(a(c), d(c), suppressed)``. Spark groups the rows: ``NULL`` is one
    value, ``-0.0`` and ``0.0`` one, every NaN one, text by its characters."""
    F = functions(new.frame)
    keys = [f"k{j}" for j in range(len(new_pos))]
    both = new.frame.select(
        *(F.col(f"c{i}").alias(k) for i, k in zip(new_pos, keys, strict=True)),
        F.lit(True).alias("s"),
    ).unionAll(
        old.frame.select(
            *(F.col(f"c{i}").alias(k) for i, k in zip(old_pos, keys, strict=True)),
            F.lit(False).alias("s"),
        )
    )
    per_row = both.groupBy(*keys).agg(
        F.count_if(F.col("s")).alias("n"), F.count_if(~F.col("s")).alias("p")
    )
    n, p, zero = F.col("n"), F.col("p"), F.lit(0)
    qi_keys = [keys[q] for q in qis]
    per_class = per_row.groupBy(*qi_keys).agg(
        F.sum(F.when(n > p, n - p).otherwise(zero)).alias("a"),
        F.sum(F.when(p > n, p - n).otherwise(zero)).alias("d"),
        F.sum(n).alias("n"),
        F.sum(p).alias("p"),
    )
    if all(new.kinds[new_pos[q]] == _TEXT for q in qis):
        every = F.lit(True)
        for k in qi_keys:
            every = every & (F.col(k) == F.lit(SUPPRESSION_MARKER))
        star = F.coalesce(every, F.lit(False))
    else:
        star = F.lit(False)
    result = (
        per_class.withColumn(SUPPRESSED, star)
        .groupBy("a", "d", SUPPRESSED)
        .agg(F.count(F.lit(1)).alias(GROUPED), F.sum("n").alias("n"), F.sum("p").alias("p"))
    )
    return collect_rows(result)

"""``expect_table_differencing_risk_to_be_below``: the table (the candidate release) against
the release it replaces, under the limits on their difference (``docs/metrics.md`` §12)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

from great_expectations.compatibility import pydantic

from reident_airflow.engine import DEFAULT_RECORD_THRESHOLD, Thresholds, validate_threshold
from reident_airflow.engine.catalogue import COMPARED_THRESHOLDS
from reident_airflow.engine.differencing import (
    Movement,
    ReleaseChanges,
    differencing,
    hold_back_advice,
)
from reident_airflow.gx import parameters as p
from reident_airflow.gx.expectations.base import (
    ReidentExpectation,
    format_number,
    qi_template,
    verdict,
)
from reident_airflow.gx.metrics import RELEASE_CHANGES_METRIC

__all__ = ["ExpectTableDifferencingRiskToBeBelow"]


def _whole_limit(name: str) -> p.FieldCheck:
    """A limit on a count of records in a class (``min_arrival_k``): a whole number >= 1."""
    return p.unless_parameter(lambda v: p.check_whole(v, name, 1), optional=True)


def _risk_limit(name: str) -> p.FieldCheck:
    """A limit on a record's risk (``max_arrival_risk``): a share in (0, 1]."""
    return p.unless_parameter(lambda v: validate_threshold(v, name), optional=True)


def _previous_release(value: Any, values: Mapping[str, Any]) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("previous_release must name the previous release (a table or a path)")
    return value


def _columns(value: Any, values: Mapping[str, Any]) -> list[str] | None:
    return None if value is None else p.check_columns(value, "columns", error=ValueError)


def _a_limit(values: dict[str, Any]) -> None:
    """At least one limit: without one the expectation would check nothing."""
    if all(values.get(name) is None for name in COMPARED_THRESHOLDS):
        raise ValueError(f"give at least one limit: {', '.join(COMPARED_THRESHOLDS)}")


#: The sentence's words for each limit, in the order of :data:`COMPARED_THRESHOLDS`.
_WORDS = {
    "min_arrival_k": "at least $min_arrival_k arrivals in every class records arrive in",
    "max_arrival_risk": "an arriving record's risk at most $max_arrival_risk",
    "min_departure_k": "at least $min_departure_k departures in every class records leave",
    "max_departure_risk": "a departing record's risk at most $max_departure_risk",
}


def _side(label: str, movement: Movement) -> str:
    """``arrivals: 1 record in 1 class, k = 1``, or ``no arrivals``."""
    if movement.records == 0:
        return f"no {label}"
    return (
        f"{label}: {movement.records} record(s) in {movement.classes} class(es), "
        f"k = {movement.k}, highest risk {format_number(movement.highest_risk)}"
    )


class ExpectTableDifferencingRiskToBeBelow(ReidentExpectation):
    """Expect the table, a candidate release, to be safe to publish after ``previous_release``.

    Whoever keeps both releases can subtract them (the differencing attack, ``docs/metrics.md``
    §12): the rows of the table the previous release does not hold are the **arrivals**, the
    rows of the previous release the table no longer holds the **departures** (multisets of
    whole rows over the columns both hold, or ``columns``). Grouped on
    ``quasi_identifiers``, ``a(c)`` arrivals in a class give each of them the risk ``1 /
    a(c)``, however large the class. The limits are the operators' (``min_arrival_k``,
    ``max_arrival_risk``, ``min_departure_k``, ``max_departure_risk``); at least one is given,
    and a side where nothing moved breaches none.

    ``previous_release`` is read by the batch's engine and compared where the data is: on
    pandas a CSV (``sep``) or Parquet path, with the DataFrame in one DuckDB; on a database a
    table of the same database (``previous_schema`` optional), in one statement; on Spark a
    table of the session's catalog (``previous_schema`` optional) or a Parquet path (a name
    holding ``/`` or ending in ``.parquet``). A previous release that does not exist fails the
    validation, not evaluated: leave the expectation out of the first release's suite.

    ``result.observed_value`` is the number of limits breached; ``result.details`` lists the
    ``breaches`` (``metric``, ``observed``, ``limit``, as the operators' JSON), the
    ``thresholds``, the ``advice`` on arrivals to hold back (or ``None``) and, under
    ``assessment``, the ``reident.differencing/v1`` JSON: counts and class-size histograms,
    never a value.
    """

    quasi_identifiers: list[str] = pydantic.Field(
        description="The columns an attacker may know (quasi-identifiers), as in the header."
    )
    previous_release: str = pydantic.Field(
        description="The release this table replaces: a table of the same database (Spark: "
        "of the catalog, or a Parquet path), or (pandas) a CSV or Parquet path."
    )
    previous_schema: str | None = pydantic.Field(
        default=None, description="Schema of the previous release's table (databases, Spark)."
    )
    columns: list[str] | None = pydantic.Field(
        default=None, description="Columns compared (default: every column both releases hold)."
    )
    sep: str = pydantic.Field(default=",", description="CSV separator of previous_release.")
    min_arrival_k: int | p.SuiteParameter | None = pydantic.Field(
        default=None, description="Fewest records that may arrive in a class (arrival k)."
    )
    max_arrival_risk: float | p.SuiteParameter | None = pydantic.Field(
        default=None, description="Highest acceptable risk of an arriving record (1 / a(c))."
    )
    min_departure_k: int | p.SuiteParameter | None = pydantic.Field(
        default=None, description="Fewest records that may leave a class (departure k)."
    )
    max_departure_risk: float | p.SuiteParameter | None = pydantic.Field(
        default=None, description="Highest acceptable risk of a departing record (1 / d(c))."
    )
    record_threshold: float | p.SuiteParameter = pydantic.Field(
        default=DEFAULT_RECORD_THRESHOLD,
        description="Record risk above which a moving record counts as at risk (reported).",
    )

    metric_dependencies = (RELEASE_CHANGES_METRIC,)
    args_keys = ("quasi_identifiers", "previous_release")
    field_checks: ClassVar[Mapping[str, p.FieldCheck]] = {
        "quasi_identifiers": p.check_quasi_identifiers,
        "previous_release": _previous_release,
        "columns": _columns,
        "sep": p.check_sep,
        "min_arrival_k": _whole_limit("min_arrival_k"),
        "max_arrival_risk": _risk_limit("max_arrival_risk"),
        "min_departure_k": _whole_limit("min_departure_k"),
        "max_departure_risk": _risk_limit("max_departure_risk"),
        "record_threshold": p.check_record_threshold,
    }
    cross_checks: ClassVar[tuple[p.CrossCheck, ...]] = (_a_limit,)
    title: ClassVar[str] = "Expect table differencing risk to be below"
    short_description: ClassVar[str] = (
        "Expect the arrivals and departures since the previous release to be safe to publish."
    )

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {"previous_release": kwargs.get("previous_release")}
        qis = qi_template(kwargs.get("quasi_identifiers"), params)
        limits = []
        for name in COMPARED_THRESHOLDS:
            if kwargs.get(name) is not None:
                params[name] = kwargs[name]
                limits.append(_WORDS[name])
        return (
            f"Compared with the previous release $previous_release on quasi-identifiers {qis}: "
            f"{'; '.join(limits) or '(no limit given)'}.",
            params,
        )

    def _thresholds(self) -> Thresholds:
        """The limits, their suite parameters resolved and checked."""
        given = {name: getattr(self, name) for name in COMPARED_THRESHOLDS}
        return Thresholds(**{k: v for k, v in given.items() if v is not None})

    def _evaluate(self, changes: ReleaseChanges) -> dict[str, Any]:
        gate = self._thresholds()
        threshold = validate_threshold(cast(float, self.record_threshold))  # resolved by now
        difference = differencing(changes, threshold)
        breaches = gate.check_difference(difference)
        if breaches:
            summary = "; ".join(b.describe() for b in breaches)
        else:
            summary = (
                f"{_side('arrivals', difference.arrivals)}; "
                f"{_side('departures', difference.departures)}: within the limits"
            )
        return verdict(
            not breaches,
            len(breaches),
            difference.to_dict(),
            measure="breached_limits",
            limit=0,
            summary=summary,
            breaches=[b.to_dict() for b in breaches],
            thresholds=gate.to_dict(),
            advice=hold_back_advice(difference, gate.min_arrival_k, gate.max_arrival_risk),
        )

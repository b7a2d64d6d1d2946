"""``expect_table_to_be_l_diverse``: every class holds ``l`` values of each sensitive column."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from great_expectations.compatibility import pydantic

from reident_airflow.engine import DEFAULT_RECURSIVE_C, Distributions, Thresholds
from reident_airflow.gx import parameters as p
from reident_airflow.gx.expectations.base import (
    QuasiIdentifierExpectation,
    format_number,
    template_list,
    verdict,
)
from reident_airflow.gx.metrics import CLASS_DISTRIBUTIONS_METRIC

__all__ = ["ExpectTableToBeLDiverse"]

_REQUIREMENT = {
    "distinct": "must hold at least $l distinct values",
    "entropy": "must have entropy l-diversity of at least $l",
    "recursive": "must be recursive ($c, $l)-diverse",
}


class ExpectTableToBeLDiverse(QuasiIdentifierExpectation):
    """Expect every class to be l-diverse in each sensitive column (``docs/metrics.md`` §7).

    A class whose records all share one diagnosis discloses it to anyone who knows a person is
    in the class, however large the class (Machanavajjhala et al. 2007): k-anonymity does not
    see that. For each of ``sensitive_columns`` and each class of ``quasi_identifiers``,
    ``measure`` is ``"distinct"`` (number of distinct values, a missing value counting as one),
    ``"entropy"`` (``exp`` of the entropy of the values) or ``"recursive"`` (recursive (c,
    l)-diversity with ``c``); the expectation holds when the smallest over classes is at least
    ``l`` for every column. The values are counted where the data is (one ``GROUP BY`` per
    column in a database); only their counts leave it. ``result.observed_value`` is the lowest
    l over the sensitive columns (``result.details.values``: each column's, and
    ``below_limit`` those under ``l``); ``result.details.assessment`` is what ``reident assess
    --sensitive ... --recursive-c C`` prints (with ``--min-l L`` for ``distinct``).
    """

    sensitive_columns: list[str] = pydantic.Field(
        description="The columns whose values a class must not disclose."
    )
    l: float | p.SuiteParameter = pydantic.Field(  # noqa: E741 - the l of l-diversity
        description="The smallest acceptable l (number of well-represented values)."
    )
    measure: str = pydantic.Field(
        default="distinct", description="distinct, entropy or recursive l-diversity."
    )
    c: float | p.SuiteParameter = pydantic.Field(
        default=DEFAULT_RECURSIVE_C, description="c of recursive (c, l)-diversity."
    )

    metric_dependencies = (CLASS_DISTRIBUTIONS_METRIC,)
    args_keys = ("quasi_identifiers", "sensitive_columns", "l")
    field_checks: ClassVar[Mapping[str, p.FieldCheck]] = {
        "sensitive_columns": p.check_sensitive_columns,
        "measure": p.check_l_measure,
        "c": p.check_recursive_c,
    }
    cross_checks: ClassVar[tuple[p.CrossCheck, ...]] = (p.check_l_required,)
    title: ClassVar[str] = "Expect table to be l-diverse"
    short_description: ClassVar[str] = (
        "Expect every group to hold l values of each sensitive column."
    )

    @classmethod
    def _requirement(cls, kwargs: Mapping[str, Any], qis: str, params: dict[str, Any]) -> str:
        params["l"] = kwargs.get("l")
        columns = kwargs.get("sensitive_columns") or []
        sensitive = template_list("sensitive", columns, params) or "(none given)"
        measure = str(kwargs.get("measure", "distinct"))
        if measure == "recursive":
            params["c"] = kwargs.get("c", DEFAULT_RECURSIVE_C)
        what = _REQUIREMENT.get(measure, _REQUIREMENT["distinct"])
        sharing = f"Every group of records sharing quasi-identifiers {qis}"
        return f"{sharing} {what} in each of {sensitive}."

    def _evaluate(self, counted: Distributions) -> dict[str, Any]:
        limit = p.check_l(self.l, self.measure)
        gate = Thresholds(min_l=int(limit)) if self.measure == "distinct" else None
        assessment = self._assess(counted, recursive_c=self.c, thresholds=gate)
        document = assessment.to_dict()
        values = {
            column: document["l_diversity"][column][self.measure]
            for column in self.sensitive_columns
        }
        failing = [column for column, value in values.items() if value < limit]
        lowest = min(values, key=lambda column: values[column])
        summary = (
            f"{self.measure} l = {format_number(values[lowest])} for {lowest!r} "
            f"(required: at least {format_number(limit)} in every column)"
        )
        return verdict(
            not failing,
            values[lowest],
            document,
            measure=f"l_diversity.{self.measure}",
            values=values,
            limit=limit,
            below_limit=failing,
            summary=summary,
        )

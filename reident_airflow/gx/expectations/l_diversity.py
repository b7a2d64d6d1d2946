"""``expect_table_to_be_l_diverse``: every class holds ``min_l`` values of each sensitive column.

Its arguments are named as
:class:`~reident_airflow.operators.risk.ReidentificationRiskOperator` names them:
``sensitive``, ``min_l`` and ``recursive_c``. The names it had before
(``sensitive_columns``, ``l``, ``c``) are still read, with a ``DeprecationWarning``, and a
suite saved with them loads; saved again, it is written with the new names.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

from great_expectations.compatibility import pydantic
from great_expectations.validator.metric_configuration import MetricConfiguration

from reident_airflow.engine import DEFAULT_RECURSIVE_C, Distributions, Thresholds
from reident_airflow.gx import parameters as p
from reident_airflow.gx.expectations.base import (
    QuasiIdentifierExpectation,
    format_number,
    template_list,
    verdict,
)
from reident_airflow.gx.metrics import CLASS_DISTRIBUTIONS_METRIC

__all__ = ["DEPRECATED_NAMES", "ExpectTableToBeLDiverse"]

#: The arguments' former names, and the operator's names that replace them.
DEPRECATED_NAMES: Mapping[str, str] = {
    "sensitive_columns": "sensitive",
    "l": "min_l",
    "c": "recursive_c",
}

_REQUIREMENT = {
    "distinct": "must hold at least $l distinct values",
    "entropy": "must have entropy l-diversity of at least $l",
    "recursive": "must be recursive ($c, $l)-diverse",
}


class ExpectTableToBeLDiverse(QuasiIdentifierExpectation):
    """Expect every class to be l-diverse in each sensitive column (``docs/metrics.md`` §7).

    A class whose records all share one diagnosis discloses it to anyone who knows a person is
    in the class, however large the class (Machanavajjhala et al. 2007): k-anonymity does not
    see that. For each of ``sensitive`` and each class of ``quasi_identifiers``, ``measure`` is
    ``"distinct"`` (number of distinct values, a missing value counting as one), ``"entropy"``
    (``exp`` of the entropy of the values) or ``"recursive"`` (recursive (c, l)-diversity with
    c = ``recursive_c``); the expectation holds when the smallest over classes is at least
    ``min_l`` for every column. The values are counted where the data is (one ``GROUP BY`` per
    column in a database); only their counts leave it. ``result.observed_value`` is the lowest
    l over the sensitive columns (``result.details.values``: each column's, and
    ``below_limit`` those under ``min_l``); ``result.details.assessment`` is what ``reident assess
    --sensitive ... --recursive-c C`` prints (with ``--min-l L`` for ``distinct``).
    """

    sensitive: list[str] = pydantic.Field(
        description="The columns whose values a class must not disclose."
    )
    min_l: float | p.SuiteParameter = pydantic.Field(
        description="The smallest acceptable l (number of well-represented values)."
    )
    measure: str = pydantic.Field(
        default="distinct", description="distinct, entropy or recursive l-diversity."
    )
    recursive_c: float | p.SuiteParameter = pydantic.Field(
        default=DEFAULT_RECURSIVE_C, description="c of recursive (c, l)-diversity."
    )

    metric_dependencies = (CLASS_DISTRIBUTIONS_METRIC,)
    args_keys = ("quasi_identifiers", "sensitive", "min_l")
    field_checks: ClassVar[Mapping[str, p.FieldCheck]] = {
        "sensitive": p.check_sensitive_columns,
        "measure": p.check_l_measure,
        "recursive_c": p.check_recursive_c,
    }
    cross_checks: ClassVar[tuple[p.CrossCheck, ...]] = (p.check_l_required,)
    title: ClassVar[str] = "Expect table to be l-diverse"
    short_description: ClassVar[str] = (
        "Expect every group to hold l values of each sensitive column."
    )

    @pydantic.root_validator(pre=True)
    def _former_names(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Read the former argument names (:data:`DEPRECATED_NAMES`), with a warning."""
        for old, new in DEPRECATED_NAMES.items():
            if old not in values:
                continue
            if new in values:
                raise ValueError(f"give {new} only: {old} is its former name")
            warnings.warn(
                f"expect_table_to_be_l_diverse: {old!r} is deprecated, use {new!r} "
                "(the name ReidentificationRiskOperator uses)",
                DeprecationWarning,
                stacklevel=2,
            )
            values = {**values, new: values[old]}
            del values[old]
        return values

    def get_validation_dependencies(
        self,
        execution_engine: Any = None,
        runtime_configuration: dict[str, Any] | None = None,
    ) -> Any:
        """The class distributions of ``sensitive`` (the metric's ``sensitive_columns``)."""
        dependencies = super().get_validation_dependencies(
            execution_engine=execution_engine, runtime_configuration=runtime_configuration
        )
        metric = dependencies.get_metric_configuration(CLASS_DISTRIBUTIONS_METRIC)
        dependencies.set_metric_configuration(
            metric_name=CLASS_DISTRIBUTIONS_METRIC,
            metric_configuration=MetricConfiguration(
                metric_name=CLASS_DISTRIBUTIONS_METRIC,
                metric_domain_kwargs=dict(metric.metric_domain_kwargs),
                metric_value_kwargs={
                    **dict(metric.metric_value_kwargs),
                    "sensitive_columns": list(self.sensitive),
                },
            ),
        )
        return dependencies

    @classmethod
    def _requirement(cls, kwargs: Mapping[str, Any], qis: str, params: dict[str, Any]) -> str:
        params["l"] = kwargs.get("min_l")
        columns = kwargs.get("sensitive") or []
        sensitive = template_list("sensitive", columns, params) or "(none given)"
        measure = str(kwargs.get("measure", "distinct"))
        if measure == "recursive":
            params["c"] = kwargs.get("recursive_c", DEFAULT_RECURSIVE_C)
        what = _REQUIREMENT.get(measure, _REQUIREMENT["distinct"])
        sharing = f"Every group of records sharing quasi-identifiers {qis}"
        return f"{sharing} {what} in each of {sensitive}."

    def _evaluate(self, counted: Distributions) -> dict[str, Any]:
        limit = p.check_l(self.min_l, self.measure)
        gate = Thresholds(min_l=int(limit)) if self.measure == "distinct" else None
        assessment = self._assess(counted, recursive_c=self.recursive_c, thresholds=gate)
        document = assessment.to_dict()
        values = {
            column: document["l_diversity"][column][self.measure] for column in self.sensitive
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

"""``expect_table_to_be_k_anonymous``: every class of the table has at least ``k`` records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from great_expectations.compatibility import pydantic

from reident_airflow.engine.assessment import Thresholds, assess
from reident_airflow.engine.classes import ClassSizes, ClassTable
from reident_airflow.gx import parameters as p
from reident_airflow.gx.expectations.base import ReidentExpectation, qi_template, verdict
from reident_airflow.gx.metrics import CLASS_TABLE_METRIC, HISTOGRAM_METRIC

__all__ = ["ExpectTableToBeKAnonymous"]


class ExpectTableToBeKAnonymous(ReidentExpectation):
    """Expect the table to be k-anonymous on its quasi-identifiers (``docs/metrics.md`` §1).

    Every combination of ``quasi_identifiers`` values that occurs in the table must be shared by
    at least ``k`` records (Sweeney 2002); equivalently the highest prosecutor risk is at most
    ``1/k``. Missing values form a group of their own; records suppressed in every QI (``*``)
    are left out, as ARX does. ``result.observed_value`` is what ``reident assess --min-k K``
    prints; with ``rank_attributes=False`` (``--no-ranking``) only the class-size histogram is
    counted.
    """

    quasi_identifiers: list[str] = pydantic.Field(
        description="The columns an attacker may know (quasi-identifiers), as in the header."
    )
    k: int | p.SuiteParameter = pydantic.Field(
        description="The smallest acceptable number of records sharing a QI combination."
    )
    max_subset_size: int | None = pydantic.Field(
        default=None, description="Largest QI subset ranked in the 'attributes' section."
    )
    rank_attributes: bool = pydantic.Field(
        default=True,
        description="Rank the QI subsets in the 'attributes' section (which columns re-identify)."
        " With false the verdict needs only the class-size histogram.",
    )

    metric_dependencies = (HISTOGRAM_METRIC, CLASS_TABLE_METRIC)
    success_keys = ("quasi_identifiers", "k", "max_subset_size", "rank_attributes")
    args_keys = ("quasi_identifiers", "k")

    field_checks: ClassVar[Mapping[str, p.FieldCheck]] = {
        "quasi_identifiers": p.check_quasi_identifiers,
        "k": p.check_k,
        "max_subset_size": p.check_max_subset_size,
        "rank_attributes": p.check_rank_attributes,
    }
    cross_checks: ClassVar[tuple[p.CrossCheck, ...]] = (p.check_ranking,)
    short_description: ClassVar[str] = "Expect every quasi-identifier combination to occur k times."

    class Config:
        title = "Expect table to be k-anonymous"

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {"k": kwargs.get("k")}
        qis = qi_template(kwargs.get("quasi_identifiers"), params)
        template = (
            f"Must be k-anonymous for k = $k on quasi-identifiers {qis}: every combination of "
            "their values must be shared by at least $k records."
        )
        return template, params

    def _metric(self) -> str:
        # k is the smallest class size: only the ranking needs the classes themselves
        return CLASS_TABLE_METRIC if self.rank_attributes else HISTOGRAM_METRIC

    def _evaluate(self, counted: ClassTable | ClassSizes) -> dict[str, Any]:
        k = p.check_whole(self.k, "k", 1)
        assessment = assess(
            counted,
            thresholds=Thresholds(min_k=k),
            attributes=self.rank_attributes,
            max_subset_size=self.max_subset_size,
        )
        return verdict(
            assessment.k >= k,
            assessment.to_dict(),
            measure="k",
            value=assessment.k,
            limit=k,
            summary=f"k = {assessment.k} (required: at least {k})",
        )

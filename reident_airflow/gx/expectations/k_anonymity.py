"""``expect_table_to_be_k_anonymous``: every class of the table has at least ``k`` records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from great_expectations.compatibility import pydantic

from reident_airflow.engine import ClassSizes, Distributions, Thresholds
from reident_airflow.gx import parameters as p
from reident_airflow.gx.expectations.base import ClassSizeExpectation, preset_words, verdict
from reident_airflow.gx.presets import apply_k_preset, check_preset

__all__ = ["ExpectTableToBeKAnonymous"]


class ExpectTableToBeKAnonymous(ClassSizeExpectation):
    """Expect the table to be k-anonymous on its quasi-identifiers (``docs/metrics.md`` §1).

    Every combination of ``quasi_identifiers`` values that occurs in the table must be shared by
    at least ``k`` records (Sweeney 2002); equivalently the highest prosecutor risk is at most
    ``1/k``. Missing values form a group of their own; records suppressed in every QI (``*``)
    are left out, as ARX does. ``result.observed_value`` is the table's k (its smallest class)
    and ``result.details.assessment`` what ``reident assess --min-k K`` prints; with
    ``rank_attributes=False`` (``--no-ranking``) only the class-size histogram is counted.
    """

    k: int | p.SuiteParameter | None = pydantic.Field(
        default=None,
        description="The smallest acceptable number of records sharing a QI combination.",
    )
    preset: str | None = pydantic.Field(
        default=None, description="A policy preset setting k (e.g. 'k11'), unless k is given."
    )

    args_keys = ("quasi_identifiers", "k")
    field_checks: ClassVar[Mapping[str, p.FieldCheck]] = {"k": p.check_k, "preset": check_preset}
    cross_checks: ClassVar[tuple[p.CrossCheck, ...]] = (apply_k_preset,)
    title: ClassVar[str] = "Expect table to be k-anonymous"
    short_description: ClassVar[str] = "Expect every quasi-identifier combination to occur k times."

    @classmethod
    def _requirement(cls, kwargs: Mapping[str, Any], qis: str, params: dict[str, Any]) -> str:
        params["k"] = kwargs.get("k")
        return (
            f"Must be k-anonymous for k = $k on quasi-identifiers {qis}: every combination of "
            f"their values must be shared by at least $k records{preset_words(kwargs, params)}."
        )

    def _evaluate(self, counted: ClassSizes | Distributions) -> dict[str, Any]:
        k = p.check_whole(self.k, "k", 1)
        assessment = self._assess(counted, thresholds=Thresholds(min_k=k), preset=self.preset)
        return verdict(
            assessment.k >= k,
            assessment.k,
            assessment.to_dict(),
            measure="k",
            limit=k,
            summary=f"k = {assessment.k} (required: at least {k})",
            preset=self.preset,
        )

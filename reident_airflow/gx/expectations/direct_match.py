"""``expect_table_direct_match_protection_to_be_above``: released values are not the originals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from great_expectations.compatibility import pydantic

from reident_airflow.engine import DEFAULT_TARGET, direct_match_from_counts
from reident_airflow.gx import parameters as p
from reident_airflow.gx.expectations.base import (
    ReidentExpectation,
    format_number,
    template_list,
    verdict,
)
from reident_airflow.gx.metrics import DIRECT_MATCH_METRIC

__all__ = ["ExpectTableDirectMatchProtectionToBeAbove"]


class ExpectTableDirectMatchProtectionToBeAbove(ReidentExpectation):
    """Expect Column Direct Match Protection of the table to be at least ``target``.

    The batch is the released ("avatar") table; ``original_table`` is the table it was made
    from, holding the same individuals (``docs/metrics.md`` §8). For each column the protection
    is ``100 * (1 - m_c * u_c / n^2)`` (``m_c`` values released unchanged, ``u_c`` distinct
    released values); the table's protection is the lowest column's.

    ``original_table`` is, on a database, a table of the same database (``original_schema``
    optional), and rows are aligned on ``key`` (required there: tables have no row order);
    the counting runs in SQL. On pandas it is the path of a CSV (``sep``) or Parquet file, and
    rows are aligned by position unless ``key`` is given. ``result.observed_value`` is the
    table's protection; ``result.details.assessment`` the ``reident.direct_match/v1`` JSON
    (``docs/contract.md`` §3).
    """

    original_table: str = pydantic.Field(
        description="The original table: a table of the same database, or (pandas) a file path."
    )
    original_schema: str | None = pydantic.Field(
        default=None, description="Schema of the original table (databases)."
    )
    key: str | None = pydantic.Field(
        default=None, description="A column of both tables identifying each record."
    )
    columns: list[str] | None = pydantic.Field(
        default=None, description="Columns to score (default: every column of both tables)."
    )
    target: float | p.SuiteParameter = pydantic.Field(
        default=DEFAULT_TARGET,
        description="The lowest acceptable protection, in percent (0-100).",
    )
    sep: str = pydantic.Field(default=",", description="CSV separator of original_table.")

    metric_dependencies = (DIRECT_MATCH_METRIC,)
    args_keys = ("original_table", "target")
    field_checks: ClassVar[Mapping[str, p.FieldCheck]] = {
        "original_table": p.check_original_table,
        "columns": p.check_direct_match_columns,
        "target": p.check_target_field,
        "sep": p.check_sep,
    }
    title: ClassVar[str] = "Expect table direct match protection to be above"
    short_description: ClassVar[str] = (
        "Expect column direct match protection to be at least a target."
    )

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {
            "original_table": kwargs.get("original_table"),
            "target": kwargs.get("target", DEFAULT_TARGET),
        }
        template = (
            "Column direct match protection against $original_table must be at least $target "
            "for every column"
        )
        columns = template_list("column", kwargs.get("columns"), params)
        if columns:
            template += " of " + columns
        if kwargs.get("key"):
            params["key"] = kwargs["key"]
            template += " (records matched on $key)"
        return template + ".", params

    def _evaluate(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        target = p.check_target(self.target)
        result = direct_match_from_counts(
            payload["records"],
            {str(c): (int(m), int(u)) for c, m, u in payload["counts"]},
            target=target,
            key=payload.get("key"),
            only_in_original=payload.get("only_in_original", ()),
            only_in_avatar=payload.get("only_in_avatar", ()),
        )
        lowest = result.columns[0]
        summary = (
            f"protection = {format_number(result.protection)} (lowest column: "
            f"{lowest.column!r}; target: at least {format_number(target)})"
        )
        return verdict(
            result.passed,
            result.protection,
            result.to_dict(),
            measure="protection",
            limit=target,
            below_target=list(result.below_target),
            summary=summary,
        )

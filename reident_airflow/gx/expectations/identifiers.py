"""``expect_table_to_hold_no_direct_identifiers``: no column of the table identifies a person
on its own, declared or not (the identifier scan, ``docs/identifier-scan.md``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from great_expectations.compatibility import pydantic

from reident_airflow.engine.identifiers import IdentifierScan
from reident_airflow.gx import parameters as p
from reident_airflow.gx.expectations.base import ReidentExpectation, template_list, verdict
from reident_airflow.gx.metrics import IDENTIFIER_SCAN_METRIC, scan_options

__all__ = ["ExpectTableToHoldNoDirectIdentifiers"]


def _check_scan_options(values: dict[str, Any]) -> None:
    """The scan's options, checked as :class:`~reident_airflow.engine.identifiers.ScanOptions`
    checks them (a region libphonenumber does not know, a sample size below 1...)."""
    scan_options(values)


def _names_or_none(value: Any, values: Mapping[str, Any]) -> list[str] | None:
    """A list of names (columns, terms), or ``None`` for none."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValueError(f"a list of names is expected, got {value!r}")
    return [str(v) for v in value]


def _flag(value: Any, values: Mapping[str, Any]) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


class ExpectTableToHoldNoDirectIdentifiers(ReidentExpectation):
    """Expect no column of the table to identify a person on its own.

    Every column of the batch, declared or not, is scanned where the data is (pandas through
    the embedded DuckDB, SQL by the database, Spark by Spark): a unique key, an
    identifier-like name, values shaped as e-mail addresses, phone numbers, card or account
    numbers, network addresses, and under ``safe_harbor`` the HIPAA Safe Harbor checks (dates
    and their elements, ages over 89, restricted ZIP3 areas, free text). The expectation fails
    when a column is found an ``identifier`` or a ``quasi-identifier not declared``; a ``possible
    identifier`` is reported, not failed. Columns in ``quasi_identifiers`` or
    ``allow_columns`` are never flagged. GX's own ``severity`` (``"warning"``) makes a failure
    a warning, as ``identifier_scan="warn"`` does for the operator.

    ``result.observed_value`` is the number of failing columns; ``result.details`` names the
    ``failing`` and ``flagged`` columns and holds, under ``assessment``, the scan's JSON
    (``reident.identifier_scan/v1``): counts, shares and column names, never a value.
    """

    quasi_identifiers: list[str] | None = pydantic.Field(
        default=None, description="Columns declared as quasi-identifiers (never flagged)."
    )
    allow_columns: list[str] | None = pydantic.Field(
        default=None, description="Columns that may be released as they are (never flagged)."
    )
    safe_harbor: bool = pydantic.Field(
        default=False, description="Also apply the HIPAA Safe Harbor checks."
    )
    extra_names: list[str] | None = pydantic.Field(
        default=None, description="Further identifier-like column names (your own vocabulary)."
    )
    phone_regions: list[str] | None = pydantic.Field(
        default=None,
        description="Regions whose national phone formats count (ISO 3166 codes).",
    )
    sample_size: int = pydantic.Field(
        default=1000, description="Distinct matched values checked per column and kind."
    )
    approximate: bool = pydantic.Field(
        default=False, description="Spark only: estimate distinct counts."
    )

    metric_dependencies = (IDENTIFIER_SCAN_METRIC,)
    args_keys = ("quasi_identifiers", "allow_columns")
    field_checks: ClassVar[Mapping[str, p.FieldCheck]] = {
        "quasi_identifiers": _names_or_none,
        "allow_columns": _names_or_none,
        "extra_names": _names_or_none,
        "phone_regions": _names_or_none,
        "safe_harbor": _flag,
        "approximate": _flag,
    }
    cross_checks: ClassVar[tuple[p.CrossCheck, ...]] = (_check_scan_options,)
    title: ClassVar[str] = "Expect table to hold no direct identifiers"
    short_description: ClassVar[str] = (
        "Expect no column to identify a person on its own (the identifier scan)."
    )

    @classmethod
    def _sentence(cls, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {}
        template = (
            "No column may be an identifier or an undeclared quasi-identifier "
            "(a unique key, an identifier-like name or content)"
        )
        if kwargs.get("safe_harbor") is True:
            template += ", under the HIPAA Safe Harbor checks"
        qis = template_list("qi", kwargs.get("quasi_identifiers"), params)
        if qis:
            template += f"; declared quasi-identifiers: {qis}"
        allowed = template_list("allowed", kwargs.get("allow_columns"), params)
        if allowed:
            template += f"; allowed: {allowed}"
        return template + ".", params

    def _evaluate(self, scan: IdentifierScan) -> dict[str, Any]:
        failing, flagged = list(scan.failing), list(scan.flagged)
        if failing:
            summary = f"{len(failing)} failing column(s): {', '.join(failing)}"
        else:
            summary = "no failing column"
        possible = [c for c in flagged if c not in failing]
        if possible:
            summary += f"; possible identifiers: {', '.join(possible)}"
        return verdict(
            not failing,
            len(failing),
            scan.to_dict(),
            measure="failing_columns",
            limit=0,
            summary=summary,
            failing=failing,
            flagged=flagged,
        )

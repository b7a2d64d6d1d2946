"""The sign-off a reviewer gives a release, printed at the end of the report.

::

    from datetime import date
    from reident_airflow.report import SignOff, render_report

    render_report(result)                                   # blank lines, filled in by hand
    render_report(result, sign_off=SignOff(reviewer="A. Jones", role="privacy officer",
                                           decision="approve with conditions",
                                           conditions="release to the research enclave only",
                                           date=date(2026, 12, 1)))

The signature itself is always a blank line: the report records a decision, it does not
sign one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date as Date
from typing import Any, Self

from reident_airflow.engine.errors import InvalidInputError

__all__ = ["DECISIONS", "SignOff"]

#: The decisions a reviewer can record, in the order the block lists them.
DECISIONS = ("approve", "reject", "approve with conditions")
_TEXTS = ("reviewer", "role", "conditions")


@dataclass(frozen=True, kw_only=True)
class SignOff:
    """A reviewer's decision on a release; any field left ``None`` is a blank to fill in."""

    reviewer: str | None = None
    """Who reviewed the release."""
    role: str | None = None
    """Their role (e.g. "privacy officer", "data custodian")."""
    decision: str | None = None
    """One of :data:`DECISIONS`."""
    conditions: str | None = None
    """The conditions of an ``"approve with conditions"`` (with no other decision)."""
    date: Date | None = None
    """The day of the decision."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """A sign-off from plain values (a templated operator argument, a CLI option): the
        keys are the fields; ``date`` may be an ISO date (``"2026-12-01"``)."""
        unknown = set(data) - {*_TEXTS, "decision", "date"}
        if unknown:
            raise InvalidInputError(f"unknown sign-off keys: {', '.join(sorted(unknown))}")
        raw_date = data.get("date")
        if isinstance(raw_date, str):
            try:
                raw_date = Date.fromisoformat(raw_date)
            except ValueError:
                raise InvalidInputError(f"sign-off date is not an ISO date: {raw_date!r}") from None
        return cls(**{**data, "date": raw_date})

    def __post_init__(self) -> None:
        not_text = [n for n in _TEXTS if not isinstance(getattr(self, n), str | None)]
        if not_text:
            value = getattr(self, not_text[0])
            raise InvalidInputError(f"sign-off {not_text[0]} must be text, got {value!r}")
        if self.decision is not None and self.decision not in DECISIONS:
            raise InvalidInputError(
                f"sign-off decision must be one of {', '.join(map(repr, DECISIONS))}, "
                f"got {self.decision!r}"
            )
        if self.conditions and self.decision not in (None, "approve with conditions"):
            raise InvalidInputError(
                f"sign-off conditions go with 'approve with conditions', not {self.decision!r}"
            )
        if self.date is not None and not isinstance(self.date, Date):
            raise InvalidInputError(f"sign-off date must be a date, got {self.date!r}")

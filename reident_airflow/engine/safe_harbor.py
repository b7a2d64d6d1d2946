"""What the identifier scan looks at of the 18 HIPAA Safe Harbor identifier categories.

The Safe Harbor method (45 CFR 164.514(b)(2)(i)(A)-(R)) removes 18 kinds of identifiers. The
scan looks for some of them in full, for some only partly, and for some not at all; a report
must say which, and never call a category "passed" that nobody looked at
(docs/identifier-scan.md, "Safe Harbor"). :data:`SAFE_HARBOR_CATEGORIES` says it once, for
every scan run with ``safe_harbor``: the scan applies the same checks to every column, so what
it covers does not depend on the table.

A category is ``checked`` when the values themselves are tested for its common forms (a
pattern verified in Python, a column type, a count), besides the names; ``partly checked``
when only the column names, or the uniqueness of the values, can show it (a medical record
number has no common form); ``not checked`` when the scan has no means to see it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHECKED",
    "NOT_CHECKED",
    "PARTLY_CHECKED",
    "SAFE_HARBOR_CATEGORIES",
    "SafeHarborCategory",
]

CHECKED = "checked"
PARTLY_CHECKED = "partly checked"
NOT_CHECKED = "not checked"

#: What can check a category: the column name rules, the content patterns (verified), the
#: share of values held by one record, the column's type, counts of values (ages over 89,
#: restricted ZIP3 areas).
_NAMES = "name rules"
_CONTENT = "content patterns"
_UNIQUE = "uniqueness"
_TYPE = "column type"
_COUNTS = "value counts"


@dataclass(frozen=True)
class SafeHarborCategory:
    """One of the 18 categories: its paragraph of 45 CFR 164.514(b)(2)(i) (``"A"`` to
    ``"R"``), its ``name``, its ``status`` (``checked``, ``partly checked``, ``not checked``),
    what ``checked_by`` it (empty when not checked) and what the scan does not see of it
    (``unseen``, ``None`` when nothing)."""

    paragraph: str
    name: str
    status: str
    checked_by: tuple[str, ...]
    unseen: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "paragraph": self.paragraph,
            "category": self.name,
            "status": self.status,
            "checked_by": list(self.checked_by),
            "unseen": self.unseen,
        }


SAFE_HARBOR_CATEGORIES: tuple[SafeHarborCategory, ...] = (
    SafeHarborCategory(
        "A",
        "names",
        PARTLY_CHECKED,
        (_NAMES, _UNIQUE),
        "a name in a column whose name does not say so, unless its values are unique",
    ),
    SafeHarborCategory(
        "B",
        "geographic subdivisions smaller than a state, ZIP codes (first three digits rule)",
        PARTLY_CHECKED,
        (_NAMES, _CONTENT, _COUNTS),
        "a place name or a ZIP code in a column whose name does not say so (street addresses "
        "are matched in the values, restricted ZIP3 areas counted in a column named so)",
    ),
    SafeHarborCategory(
        "C",
        "all elements of dates except the year; ages over 89",
        CHECKED,
        (_NAMES, _CONTENT, _TYPE, _COUNTS),
        "ages over 89 in a column not named as an age; a month without its year in a column "
        "not named as a date element",
    ),
    SafeHarborCategory("D", "telephone numbers", CHECKED, (_NAMES, _CONTENT)),
    SafeHarborCategory(
        "E",
        "fax numbers",
        CHECKED,
        (_NAMES, _CONTENT),
        "a fax number is found as a phone number",
    ),
    SafeHarborCategory("F", "e-mail addresses", CHECKED, (_NAMES, _CONTENT)),
    SafeHarborCategory("G", "social security numbers", CHECKED, (_NAMES, _CONTENT, _UNIQUE)),
    SafeHarborCategory(
        "H",
        "medical record numbers",
        PARTLY_CHECKED,
        (_NAMES, _UNIQUE),
        "no common form to match: a record number in a column whose name does not say so, "
        "repeated across records",
    ),
    SafeHarborCategory(
        "I",
        "health plan beneficiary numbers",
        PARTLY_CHECKED,
        (_NAMES, _CONTENT, _UNIQUE),
        "only the US Medicare MBI has a form matched; others as record numbers",
    ),
    SafeHarborCategory(
        "J",
        "account numbers",
        PARTLY_CHECKED,
        (_NAMES, _CONTENT, _UNIQUE),
        "card numbers and IBANs are matched; other account numbers as record numbers",
    ),
    SafeHarborCategory(
        "K",
        "certificate or license numbers",
        PARTLY_CHECKED,
        (_NAMES, _UNIQUE),
        "no common form to match",
    ),
    SafeHarborCategory(
        "L",
        "vehicle identifiers and serial numbers, including license plates",
        PARTLY_CHECKED,
        (_NAMES, _UNIQUE),
        "no common form to match",
    ),
    SafeHarborCategory(
        "M",
        "device identifiers and serial numbers",
        PARTLY_CHECKED,
        (_NAMES, _UNIQUE),
        "no common form to match",
    ),
    SafeHarborCategory("N", "web URLs", CHECKED, (_NAMES, _CONTENT)),
    SafeHarborCategory("O", "IP addresses", CHECKED, (_NAMES, _CONTENT)),
    SafeHarborCategory(
        "P",
        "biometric identifiers, including finger and voice prints",
        NOT_CHECKED,
        (),
        "the values are not examined; a column named as a fingerprint or voiceprint is "
        "flagged by its name only",
    ),
    SafeHarborCategory(
        "Q",
        "full-face photographs and any comparable images",
        NOT_CHECKED,
        (),
        "images are not examined; a column named as a photo is flagged by its name only",
    ),
    SafeHarborCategory(
        "R",
        "any other unique identifying number, characteristic, or code",
        PARTLY_CHECKED,
        (_NAMES, _UNIQUE),
        "a code that is not unique in this table but identifies a person elsewhere",
    ),
)

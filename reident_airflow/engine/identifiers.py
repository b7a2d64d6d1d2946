"""The identifier scan: what every column of a release says about who is in it (issue 27).

The gate checks the quasi-identifiers it is told about; this scan looks at every column of
the candidate, declared or not, for what makes a record findable on its own: a unique key, an
identifier-like name, values that look like e-mail addresses, phone numbers, card or account
numbers, addresses on the network, exact dates, and -- under the HIPAA Safe Harbor policy --
ages over 89 and restricted three-digit ZIP codes.

The work is split as everywhere else in the project: the engine decides what to count
(:class:`ColumnPlan`, from each column's name and type), a source counts it where the data is
(:class:`ColumnProfile`: counts, never a value that leaves the process), and the engine turns
the counts into a verdict per column. The patterns below are written once, in the subset of
regular-expression syntax that DuckDB (RE2), PostgreSQL (ARE), MariaDB (PCRE2), SQLite
(Python's ``re`` through SQLAlchemy) and Spark (Java) read alike, and are used with
"search" semantics (a match anywhere in the value): ``(?i)`` at the start, character classes
with explicit ranges, no ``\\b`` (PostgreSQL spells it ``\\y``), no look-around, no
back-references.

docs/identifier-scan.md describes what is scanned and what is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "COLUMN_KINDS",
    "CONTENT_PATTERNS",
    "RESTRICTED_ZIP3",
    "VERIFIED_KINDS",
    "ColumnPlan",
    "ColumnProfile",
]

#: The type families a source reports for a column (its own types mapped onto these).
COLUMN_KINDS = (
    "integer",
    "decimal",
    "float",
    "string",
    "date",
    "timestamp",
    "boolean",
    "binary",
    "other",
)

_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

#: Content kind -> pattern, counted by the backend over a string column's non-null values
#: (a value counts once however many matches it holds).
CONTENT_PATTERNS: Mapping[str, str] = {
    "email": "(?i)[a-z0-9._%+-]+@[a-z0-9-]+(\\.[a-z0-9-]+)*\\.[a-z]{2,}",
    "url": "(?i)((https?|ftp)://[^ /]+|www\\.[a-z0-9-]+\\.[a-z]{2,})",
    "ipv4": f"(?i)(^|[^0-9.]){_OCTET}(\\.{_OCTET}){{3}}($|[^0-9.])",
    "ipv6": "(?i)(^|[^0-9a-z:])[0-9a-f]{1,4}(:[0-9a-f]{0,4}){2,7}($|[^0-9a-z:])",
    "phone": "(?i)(^|[^0-9a-z])(\\+|00)?[0-9][0-9 ().-]{5,18}[0-9]($|[^0-9a-z])",
    "card": "(?i)(^|[^0-9])[0-9]{4}([ -]?[0-9]{4}){2}[ -]?[0-9]{1,7}($|[^0-9])",
    "iban": "(?i)(^|[^0-9a-z])[a-z]{2}[0-9]{2}( ?[0-9a-z]{4}){2,7}( ?[0-9a-z]{1,3})?($|[^0-9a-z])",
    "us_ssn": "(?i)(^|[^0-9])[0-9]{3}-[0-9]{2}-[0-9]{4}($|[^0-9])",
    "date": (
        "(?i)(^|[^0-9])([0-9]{4}[-/.][0-9]{1,2}[-/.][0-9]{1,2}"
        "|[0-9]{1,2}[-/.][0-9]{1,2}[-/.][0-9]{4})($|[^0-9])"
    ),
    "text": "(?i)[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+",
}

#: Kinds whose regular-expression matches are candidates only: the engine checks a bounded
#: sample of the matched values (check digits, a real calendar date, a possible number).
VERIFIED_KINDS = frozenset({"ipv6", "phone", "card", "iban", "us_ssn", "date"})

#: Three-digit ZIP code prefixes whose areas held 20,000 people or fewer in the 2000 US
#: Census: under HIPAA Safe Harbor (45 CFR 164.514(b)(2)(i)(B)) they must be replaced by
#: ``000`` (the list published by HHS in its de-identification guidance).
RESTRICTED_ZIP3 = frozenset(
    {
        "036",
        "059",
        "063",
        "102",
        "203",
        "556",
        "692",
        "790",
        "821",
        "823",
        "830",
        "831",
        "878",
        "879",
        "884",
        "890",
        "893",
    }
)


@dataclass(frozen=True)
class ColumnPlan:
    """What a source counts for one column: its ``kind`` (of :data:`COLUMN_KINDS`), the
    content ``patterns`` to count (keys of :data:`CONTENT_PATTERNS`), the kinds of those
    whose matched values to sample for verification (``sample``, at most ``sample_size``
    distinct values each), whether to count values over 89 (a number column) and values whose
    first three characters are a restricted ZIP3 (a ZIP-code column)."""

    column: str
    kind: str
    patterns: tuple[str, ...] = ()
    sample: tuple[str, ...] = ()
    sample_size: int = 0
    over_89: bool = False
    zip3: bool = False


@dataclass(frozen=True)
class ColumnProfile:
    """What a source counted for one :class:`ColumnPlan`, where the data is.

    ``records`` is the table's record count, ``nulls`` the column's null values; ``distinct``
    the distinct non-null values and ``singletons`` the non-null values held by exactly one
    record (``None`` for both when not counted; ``approximate`` when ``distinct`` is an
    estimate, Spark on request, and then ``singletons`` is ``None``). Equality is the data's
    own exact, type-independent equality, decided where the data is, as for classes.
    ``matches`` maps each planned pattern to the non-null values matching it; ``samples`` maps
    each sampled kind to ``(value, records)`` pairs of distinct matched values (at most the
    plan's ``sample_size``; ``complete`` says whether that was every distinct matched value):
    they are kept in memory for verification only, never printed (``repr=False``) nor
    serialized. ``over_89`` and ``zip3`` count values as planned (``None`` when not)."""

    column: str
    kind: str
    records: int
    nulls: int
    distinct: int | None
    singletons: int | None
    approximate: bool = False
    matches: Mapping[str, int] = field(default_factory=dict)
    samples: Mapping[str, tuple[tuple[str, int], ...]] = field(default_factory=dict, repr=False)
    complete: Mapping[str, bool] = field(default_factory=dict)
    over_89: int | None = None
    zip3: int | None = None

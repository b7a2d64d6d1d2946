"""Checks that tell a real identifier from a string that only has its shape.

The identifier scan's patterns (:data:`reident_airflow.engine.identifiers.CONTENT_PATTERNS`)
are counted where the data is, in the regular-expression subset every backend reads; some of
them match far more than what they name (the phone pattern matches every ISO date, a card
pattern any long run of digits). For those kinds the scan checks a bounded sample of the
matched values here, in Python, one candidate (the text one pattern match covers, without its
boundary characters) at a time:

- a payment card number: 13 to 19 digits, not all the same digit, with a valid Luhn check
  digit (ISO/IEC 7812-1, annex B);
- an IBAN: a country code, two check digits and up to 30 letters or digits, 15 to 34
  characters in all, whose ISO 7064 MOD 97-10 remainder is 1 (ISO 13616-1);
- a US Social Security number ``AAA-GG-SSSS`` as the SSA assigns them: area not ``000``,
  ``666`` nor ``9xx``, group not ``00``, serial not ``0000``;
- a calendar date ``YYYY-MM-DD`` or ``DD-MM-YYYY`` / ``MM-DD-YYYY`` (``-``, ``/`` or ``.``,
  the same separator twice) that exists in the calendar, years 1850 to 2150;
- an IPv6 address that :mod:`ipaddress` reads;
- a phone number that Google's libphonenumber (the ``phonenumbers`` package) says is valid:
  written internationally (``+`` or ``00``), or in the national format of one of the regions
  given, with the region's trunk prefix where one is always written (``0`` in most of Europe
  and Japan; not for the North American ``1``); never a string shaped as an SSN or holding a
  date (the phone pattern matches ``2024-01-15 10`` in a timestamp written as text, which
  libphonenumber calls a valid US number).

The trunk-prefix rule is there because national validity alone says little: measured on
1,000 random digit strings of each length from 7 to 12, libphonenumber 9.0.43 calls 75 to 81 %
of them valid German numbers, 83 % of 9-digit ones valid French numbers and 71 % valid
Japanese ones; in the United States 35 % of random 10-digit strings are valid. Only a string
that a person would write as a phone number is counted.

Hand-written checks are used for everything but phones, measured against ``python-stdnum``
2.2 (``luhn``, ``iban``, ``us.ssn``): the same answers on the test numbers of
``tests/engine/test_identifier_scan_checks.py`` and the same Luhn share (10.2 %) of 20,000
random 16-digit strings; ``stdnum``'s IBAN check also knows each country's length and layout,
so it accepted none of 20,000 random IBAN-shaped strings where MOD 97 alone accepts 1.0 %, and
its SSN check also rejects two numbers once printed in advertising (``078-05-1120``,
``219-09-9999``). Neither difference moves a verdict on a column's share of values (at most an
IBAN-shaped code in free text may read as a possible identifier), and the checks here are 1.2
to 2.5 times faster: no second dependency.

No function here logs, raises or returns a value it was given; each returns a boolean.
"""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache

__all__ = [
    "CHECKS",
    "calendar_date",
    "card_number",
    "iban",
    "ipv6_address",
    "known_region",
    "luhn_valid",
    "phone_number",
    "us_ssn",
]


def luhn_valid(digits: str) -> bool:
    """Whether a string of ASCII digits ends with its Luhn check digit (ISO/IEC 7812-1)."""
    if not digits.isascii() or not digits.isdigit():
        return False
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = ord(char) - 48
        if position % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _digits(text: str) -> str:
    return "".join(c for c in text if "0" <= c <= "9")


def card_number(candidate: str) -> bool:
    """A payment card number: 13 to 19 digits (spaces and hyphens between groups ignored),
    not a single repeated digit, Luhn-valid."""
    digits = _digits(candidate)
    return 13 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn_valid(digits)


_IBAN = re.compile(r"[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}")


def iban(candidate: str) -> bool:
    """An IBAN: country letters, check digits, then 11 to 30 letters or digits (spaces
    ignored, any case), whose MOD 97-10 remainder (ISO 7064), read with the first four
    characters moved to the end and each letter as 10 to 35, is 1."""
    text = candidate.replace(" ", "").upper()
    if not _IBAN.fullmatch(text):
        return False
    moved = text[4:] + text[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


_SSN = re.compile(r"([0-9]{3})-([0-9]{2})-([0-9]{4})")


def us_ssn(candidate: str) -> bool:
    """A US Social Security number as SSA assigns them: ``AAA-GG-SSSS`` with area not
    ``000``, ``666`` nor ``900``-``999``, group not ``00`` and serial not ``0000``."""
    found = _SSN.fullmatch(candidate)
    if found is None:
        return False
    area, group, serial = found.groups()
    return area not in {"000", "666"} and area[0] != "9" and group != "00" and serial != "0000"


_YEAR_FIRST = re.compile(r"([0-9]{4})([-/.])([0-9]{1,2})\2([0-9]{1,2})")
_YEAR_LAST = re.compile(r"([0-9]{1,2})([-/.])([0-9]{1,2})\2([0-9]{4})")
_YEARS = range(1850, 2151)


def _exists(year: int, month: int, day: int) -> bool:
    if year not in _YEARS:
        return False
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


def calendar_date(candidate: str) -> bool:
    """A date that exists: ``YYYY-MM-DD``, or ``DD-MM-YYYY`` read day first or month first
    (``-``, ``/`` or ``.``, the same one twice), in the years 1850 to 2150."""
    found = _YEAR_FIRST.fullmatch(candidate)
    if found is not None:
        return _exists(int(found[1]), int(found[3]), int(found[4]))
    found = _YEAR_LAST.fullmatch(candidate)
    if found is None:
        return False
    first, second, year = int(found[1]), int(found[3]), int(found[4])
    return _exists(year, second, first) or _exists(year, first, second)


def ipv6_address(candidate: str) -> bool:
    """An IPv6 address as :class:`ipaddress.IPv6Address` reads it (eight groups, or fewer
    with ``::``): a clock time ``12:30:45`` or a MAC address is not one."""
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return True


@cache
def known_region(region: str) -> bool:
    """Whether libphonenumber knows ``region`` (an ISO 3166-1 alpha-2 code, upper case)."""
    import phonenumbers

    return region in phonenumbers.SUPPORTED_REGIONS


@cache
def _trunk_prefix(region: str) -> str | None:
    """The national (trunk) prefix always written before a national number of ``region``;
    ``None`` where there is none or it is optional (the North American ``1``)."""
    import phonenumbers

    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    if metadata is None or metadata.country_code == 1:
        return None
    return metadata.national_prefix or None


def _valid_phone(text: str, region: str | None) -> bool:
    import phonenumbers

    try:
        parsed = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return False
    return bool(phonenumbers.is_valid_number(parsed))


def phone_number(candidate: str, regions: Iterable[str]) -> bool:
    """A phone number libphonenumber calls valid: international (``+`` or ``00`` then the
    country code), or national in one of ``regions``, its trunk prefix written where the
    region always writes one. A candidate shaped as ``ddd-dd-dddd`` or holding a calendar
    date is never a phone number."""
    text = candidate.strip()
    # the phone pattern takes "2024-01-15 10" out of a timestamp written as text
    if any(calendar_date(part) for part in text.split()) or _SSN.fullmatch(text):
        return False
    if text.startswith("+"):
        return _valid_phone(text, None)
    if text.startswith("00"):
        return _valid_phone("+" + text[2:], None)
    digits = _digits(text)
    for region in regions:
        prefix = _trunk_prefix(region)
        if prefix is not None and not digits.startswith(prefix):
            continue
        if _valid_phone(text, region):
            return True
    return False


#: The check of each kind that needs no option (phones need regions: :func:`phone_number`).
CHECKS: Mapping[str, Callable[[str], bool]] = {
    "card": card_number,
    "iban": iban,
    "us_ssn": us_ssn,
    "date": calendar_date,
    "ipv6": ipv6_address,
}

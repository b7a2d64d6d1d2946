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
- a payment card number of 13 digits is a Visa (a leading 4) and never an EAN-13 barcode
  (a right GS1 check digit): one EAN in ten is Luhn-valid by chance;
- a US Social Security number ``AAA-GG-SSSS`` as the SSA assigns them (with spaces it is
  read among the national identifiers; nine bare digits shaped as one are only weak
  evidence, :func:`ssn_digits`): area not ``000``, ``666`` nor ``9xx``, group not ``00``,
  serial not ``0000``;
- a national identifier in one of the layouts it is written in, by its official check: the
  UK NHS number (Modulus 11), the French NIR (key ``97 - n mod 97``, Corsica ``2A``/``2B``),
  the Dutch BSN (11-proof), the German Steuer-ID (ISO/IEC 7064 MOD 11,10 and its rule on
  repeated digits), the Canadian SIN (Luhn, first digit), the US Medicare MBI (CMS's
  characters per position; it has no check digit) and the US SSN with spaces;
- a calendar date ``YYYY-MM-DD`` or ``DD-MM-YYYY`` / ``MM-DD-YYYY`` (``-``, ``/`` or ``.``,
  the same separator twice) that exists in the calendar, years 1850 to 2150; or an element of
  a date with its year as Safe Harbor removes them: a month, an ISO week that exists, a
  quarter (:func:`date_element`);
- an IPv6 address that :mod:`ipaddress` reads;
- a phone number that Google's libphonenumber (the ``phonenumbers`` package) says is valid:
  written internationally (``+`` or ``00``), or in the national format of one of the regions
  given, with the region's trunk prefix where one is always written (``0`` in most of Europe
  and Japan; not for the North American ``1``); never a string shaped as an SSN or a US
  National Drug Code (57 % of random NDCs pass as German or US numbers) or holding a
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
to 2.5 times faster: no second dependency. For the national identifiers (issue 38)
``python-stdnum`` 2.2 is the tests' oracle (the ``dev`` extra): the same answers on random
numbers but where a rule of ours it lacks applies (a NIR's first digit, a Steuer-ID's digit
three times in a row), and 2.8 to 11 times slower per million values
(``bench/bench_id_checks.py``).

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
    "canadian_sin",
    "card_number",
    "date_element",
    "dutch_bsn",
    "french_nir",
    "german_tax_id",
    "gtin_valid",
    "iban",
    "ipv6_address",
    "known_region",
    "luhn_valid",
    "medicare_mbi",
    "national_id",
    "nhs_number",
    "phone_number",
    "ssn_digits",
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


def gtin_valid(digits: str) -> bool:
    """Whether a string of ASCII digits ends with its GS1 check digit (EAN-13, UPC, GTIN:
    weights 3 and 1 alternating from the right, the total a multiple of 10)."""
    if not digits.isascii() or not digits.isdigit() or len(digits) < 2:
        return False
    body, check = digits[:-1], ord(digits[-1]) - 48
    total = sum((ord(c) - 48) * (3 if i % 2 == 0 else 1) for i, c in enumerate(reversed(body)))
    return (10 - total % 10) % 10 == check


def card_number(candidate: str) -> bool:
    """A payment card number: 13 to 19 digits (spaces and hyphens between groups ignored),
    not a single repeated digit, Luhn-valid; 13 digits only as a Visa number (a leading
    ``4``, the only 13-digit cards issued) and not an EAN-13 barcode (one whose GS1 check
    digit is right: about one in ten of them is Luhn-valid too)."""
    digits = _digits(candidate)
    if len(digits) == 13 and (digits[0] != "4" or gtin_valid(digits)):
        return False
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


# the three layouts SSA numbers are written in: with hyphens, with spaces, or bare
_SSN = re.compile(r"([0-9]{3})([- ]?)([0-9]{2})\2([0-9]{4})")


def us_ssn(candidate: str) -> bool:
    """A US Social Security number as SSA assigns them, written ``AAA-GG-SSSS``,
    ``AAA GG SSSS`` or ``AAAGGSSSS``: area not ``000``, ``666`` nor ``900``-``999``, group
    not ``00`` and serial not ``0000``."""
    found = _SSN.fullmatch(candidate)
    if found is None:
        return False
    area, _, group, serial = found.groups()
    return area not in {"000", "666"} and area[0] != "9" and group != "00" and serial != "0000"


def ssn_digits(candidate: str) -> bool:
    """Nine bare digits shaped as a US SSN (:func:`us_ssn`'s rules). An SSN has no check
    digit: 89 % of random 9-digit numbers pass (area 001-899 but 666, group and
    serial not zero), so a ZIP+4 code or a 9-digit product code does too. Only weak evidence,
    never a national identifier on its own."""
    return len(candidate) == 9 and candidate.isascii() and candidate.isdigit() and us_ssn(candidate)


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


_YEAR_MONTH = re.compile(r"([0-9]{4})[-/]([0-9]{2})|([0-9]{1,2})[-/]([0-9]{4})")
_ISO_WEEK = re.compile(r"([0-9]{4})-?w([0-9]{2})(?:-?([1-7]))?", re.IGNORECASE)
_QUARTER = re.compile(r"([0-9]{4})[- ]?q[1-4]|q[1-4][- /]?([0-9]{4})", re.IGNORECASE)
_NAMED_MONTH = re.compile(
    r"[^\W\d_]{3,}[.]?,? ?(?:([0-9]{1,2})(?:st|nd|rd|th)?,? )?(?:de )?([0-9]{4})", re.IGNORECASE
)


def date_element(candidate: str) -> bool:
    """A date, or an element of one with its year, as HIPAA Safe Harbor removes them: a
    :func:`calendar_date`; a month and its year (``2025-05``, ``05/2025``, ``May 2025``,
    ``May 5, 2025``: a named month's day at most 31); an ISO 8601 week that exists
    (``2025-W19``, ``2025W19-3``: week 53 only in a year that has one); a quarter and its
    year (``2025-Q2``, ``Q2 2025``). Years 1850 to 2150. The candidate is what the ``date``
    content pattern matched, so a month name is already one."""
    if calendar_date(candidate):
        return True
    found = _YEAR_MONTH.fullmatch(candidate)
    if found is not None:
        year, month = (found[1], found[2]) if found[1] else (found[4], found[3])
        return int(year) in _YEARS and 1 <= int(month) <= 12
    found = _ISO_WEEK.fullmatch(candidate)
    if found is not None:
        if int(found[1]) not in _YEARS:
            return False
        try:
            datetime.date.fromisocalendar(int(found[1]), int(found[2]), int(found[3] or 1))
        except ValueError:
            return False
        return True
    found = _QUARTER.fullmatch(candidate)
    if found is not None:
        return int(found[1] or found[2]) in _YEARS
    found = _NAMED_MONTH.fullmatch(candidate)
    if found is not None:
        return int(found[2]) in _YEARS and (found[1] is None or 1 <= int(found[1]) <= 31)
    return False


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


#: Shapes that are never phone numbers: an SSN ``ddd-dd-dddd``, and the US National Drug
#: Code in its three labeler-product-package layouts 4-4-2, 5-3-2 and 5-4-1 (10 digits) and
#: the 5-4-2 of its 11-digit billing form (FDA, 21 CFR 207.35); 57 % of random 10-digit NDCs
#: pass as a German or US phone number.
_NOT_PHONE = re.compile(
    r"[0-9]{3}-[0-9]{2}-[0-9]{4}"
    r"|[0-9]{4}-[0-9]{4}-[0-9]{2}|[0-9]{5}-[0-9]{3}-[0-9]{2}|[0-9]{5}-[0-9]{4}-[0-9]{1,2}"
)


def phone_number(candidate: str, regions: Iterable[str]) -> bool:
    """A phone number libphonenumber calls valid: international (``+`` or ``00`` then the
    country code), or national in one of ``regions``, its trunk prefix written where the
    region always writes one. A candidate shaped as ``ddd-dd-dddd``, as a National Drug
    Code or holding a calendar date is never a phone number."""
    text = candidate.strip()
    # the phone pattern takes "2024-01-15 10" out of a timestamp written as text
    if any(calendar_date(part) for part in text.split()) or _NOT_PHONE.fullmatch(text):
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


# ---------------------------------------------------------------- national identifiers
def nhs_number(digits: str) -> bool:
    """A UK NHS number: 10 digits whose last is the Modulus 11 check digit of the NHS Data
    Dictionary ("NHS NUMBER"): the first nine weighted 10 down to 2, the check digit
    ``11 - total % 11`` (11 is written 0; 10 means the number is never issued)."""
    if len(digits) != 10 or not digits.isascii() or not digits.isdigit():
        return False
    total = sum((10 - i) * (ord(c) - 48) for i, c in enumerate(digits[:9]))
    check = 11 - total % 11
    if check == 11:
        check = 0
    return check != 10 and check == ord(digits[9]) - 48


def french_nir(text: str) -> bool:
    """A French NIR (numero de securite sociale): 13 characters and a 2-digit key that is
    ``97 - (n mod 97)`` of the 13 as a number (INSEE); a sex digit 1, 2, 3, 4, 7 or 8; a
    Corsican department ``2A`` or ``2B`` in positions 6-7 is read as 19 or 18 for the key."""
    text = text.upper()
    if len(text) != 15 or not text.isascii() or text[0] not in "123478":
        return False
    body, key = text[:13], text[13:]
    department = body[5:7]
    if department in ("2A", "2B"):
        body = body[:5] + ("19" if department == "2A" else "18") + body[7:]
    if not body.isdigit() or not key.isdigit():
        return False
    return 97 - int(body) % 97 == int(key)


def dutch_bsn(digits: str) -> bool:
    """A Dutch burgerservicenummer: 9 digits passing the 11-proof (elfproef) of the Wet
    algemene bepalingen burgerservicenummer: the first eight weighted 9 down to 2, the last
    weighted -1, the total a multiple of 11; not all zeros."""
    if len(digits) != 9 or not digits.isascii() or not digits.isdigit():
        return False
    total = sum((9 - i) * (ord(c) - 48) for i, c in enumerate(digits[:8])) - (ord(digits[8]) - 48)
    return total % 11 == 0 and digits != "000000000"


def german_tax_id(digits: str) -> bool:
    """A German Steuerliche Identifikationsnummer: 11 digits, the first not 0; among the
    first ten exactly one digit written twice or three times (never three in a row), the
    others once at most; the eleventh the ISO/IEC 7064 MOD 11,10 check digit of the ten
    (the rules of Paragraph 139b AO as the Bundeszentralamt fur Steuern publishes them)."""
    if len(digits) != 11 or not digits.isascii() or not digits.isdigit() or digits[0] == "0":
        return False
    head = digits[:10]
    counts = sorted((head.count(d) for d in set(head)), reverse=True)
    if counts[0] not in (2, 3) or (len(counts) > 1 and counts[1] > 1):
        return False
    if any(head[i] == head[i + 1] == head[i + 2] for i in range(8)):
        return False
    product = 10
    for c in head:
        total = (ord(c) - 48 + product) % 10 or 10
        product = total * 2 % 11
    check = (11 - product) % 10
    return check == ord(digits[10]) - 48


def canadian_sin(digits: str) -> bool:
    """A Canadian Social Insurance Number: 9 digits, Luhn-valid, the first digit one that
    is issued to persons (1 to 7 by province, 9 for temporary residents; 0 is never issued
    and 8 is used for business numbers)."""
    return len(digits) == 9 and digits[0] not in "08" and luhn_valid(digits)


# the letters of a Medicare Beneficiary Identifier: A-Z without S, L, O, I, B and Z
_MBI_ALPHA = "[AC-HJKMNP-RT-Y]"
_MBI = re.compile(
    "[1-9]{a}[0-9{b}][0-9]{a}[0-9{b}][0-9]{a}{a}[0-9][0-9]".format(a=_MBI_ALPHA, b=_MBI_ALPHA[1:-1])
)


def medicare_mbi(text: str) -> bool:
    """A US Medicare Beneficiary Identifier as CMS specifies its 11 characters (no check
    digit): 1 a digit 1-9; 2, 5, 8, 9 letters; 3 and 6 a letter or digit; 4, 7, 10, 11
    digits; letters (any case) without S, L, O, I, B, Z."""
    return _MBI.fullmatch(text.upper()) is not None


_GROUPS = re.compile(r"[0-9A-Za-z]+")
#: Each national identifier, its check and the layouts (lengths of its groups, between
#: one separator used throughout: a space, a hyphen or a dot) it is written in.
_NATIONAL: tuple[tuple[Callable[[str], bool], frozenset[tuple[int, ...]]], ...] = (
    (nhs_number, frozenset({(10,), (3, 3, 4)})),
    (french_nir, frozenset({(15,), (13, 2), (1, 2, 2, 2, 3, 3, 2)})),
    (dutch_bsn, frozenset({(9,), (4, 2, 3)})),
    (german_tax_id, frozenset({(11,), (2, 3, 3, 3)})),
    (canadian_sin, frozenset({(9,), (3, 3, 3)})),
    (medicare_mbi, frozenset({(11,), (4, 3, 4)})),
    # bare, nine digits are no evidence of an SSN (no check digit): ssn_digits reads them
    (us_ssn, frozenset({(3, 2, 4)})),
)


def national_id(candidate: str) -> bool:
    """A national identifier written in one of its layouts, with a valid check (or, for
    the MBI, format): a UK NHS number, a French NIR, a Dutch BSN, a German Steuer-ID, a
    Canadian SIN, a US Medicare MBI (:func:`nhs_number` ... :func:`medicare_mbi`) or a US
    SSN written with spaces (:func:`us_ssn`; with hyphens it is the ``us_ssn`` kind's, bare
    the ``ssn_digits`` kind's: :func:`ssn_digits`)."""
    separators = {c for c in candidate if not (c.isascii() and c.isalnum())}
    if len(separators) > 1 or not separators <= {" ", "-", "."}:
        return False
    groups = _GROUPS.findall(candidate)
    layout = tuple(len(g) for g in groups)
    text = "".join(groups)
    if layout == (3, 2, 4) and separators != {" "}:
        return False  # ddd-dd-dddd is the us_ssn kind; ddd.dd.dddd no identifier's layout
    return any(layout in layouts and check(text) for check, layouts in _NATIONAL)


#: The check of each kind that needs no option (phones need regions: :func:`phone_number`).
CHECKS: Mapping[str, Callable[[str], bool]] = {
    "card": card_number,
    "iban": iban,
    "us_ssn": us_ssn,
    "national_id": national_id,
    "ssn_digits": ssn_digits,
    "date": date_element,
    "ipv6": ipv6_address,
}

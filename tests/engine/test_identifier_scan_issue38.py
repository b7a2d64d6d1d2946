"""Issue 38, items 7 and 8, one layout at a time: what hospitals write is found (item 7)
and its look-alikes are not (item 8), through the scan's own pattern and check
(:func:`~reident_airflow.engine.identifiers.verified_count`, as every backend's sample is
checked). Every number is published (source in the comment) or made by hand to show one
layout; the national identifiers' checks are in ``test_identifier_scan_checks.py``, the
table of forms in ``test_identifier_forms.py``.
"""

from __future__ import annotations

import re

import pytest

from reident_airflow.engine.identifier_checks import (
    card_number,
    luhn_valid,
    phone_number,
    us_ssn,
)
from reident_airflow.engine.identifiers import CONTENT_PATTERNS, ColumnProfile, verified_count

REGIONS = ("US", "GB", "FR", "DE", "JP")


# ------------------------------------------------------------------------ issue 38, item 7
def test_ssns_with_spaces_or_without_separators() -> None:
    # the SSA's rules on the three ways a form holds the same number; mixed separators are
    # no layout anyone writes
    assert us_ssn("123 45 6789") and us_ssn("123456789")
    assert not us_ssn("123-45 6789")
    assert not us_ssn("900 12 3456") and not us_ssn("666123456") and not us_ssn("123000001")


def _found(kind: str, value: str) -> bool:
    """Whether the scan counts ``value`` as a verified ``kind``: the backend's pattern, then
    the check of each candidate (as verified_count does)."""
    profile = ColumnProfile(
        "v",
        "string",
        records=1,
        nulls=0,
        distinct=1,
        singletons=1,
        matches={kind: 1 if re.search(CONTENT_PATTERNS[kind], value) else 0},
        samples={kind: ((value, 1),)},
        complete={kind: True},
    )
    count, _ = verified_count(kind, profile, REGIONS)
    return count == 1


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        # an SSN with spaces or bare is read among the national identifiers
        ("national_id", "123 45 6789"),
        ("national_id", "SSN 123456789 on file"),
        ("us_ssn", "SSN 123-45-6789 on file"),
        # the German layout: area code, a slash, the subscriber number
        ("phone", "030/32687484"),
        # Stripe's documented Amex test number 378282246310005, as an Amex card prints it
        ("card", "3782 822463 10005"),
        ("card", "3782-822463-10005"),
    ],
)
def test_item_7_layouts_are_found(kind: str, value: str) -> None:
    assert _found(kind, value)


# ------------------------------------------------------------------------ issue 38, item 8
@pytest.mark.parametrize(
    "text",
    [
        # National Drug Codes (FDA, 21 CFR 207.35): the 0002-3227-30, and the other
        # layouts made by hand; libphonenumber alone calls the last three valid numbers
        "0002-3227-30",
        "0378-1800-01",
        "50242-040-62",
        "12345-6789-1",
    ],
)
def test_ndc_codes_are_no_phone_numbers(text: str) -> None:
    assert not phone_number(text, REGIONS)
    assert not _found("phone", text)


def test_ean13_barcodes_are_no_cards() -> None:
    # the EAN-13 of Wikipedia's "International Article Number" figure: a right GS1 check
    # digit, and Luhn-valid by chance
    assert luhn_valid("5901234123457")
    assert not card_number("5901234123457")
    assert not _found("card", "barcode 5901234123457")
    # a 13-digit card is a Visa: a leading 4, not an EAN (the Luhn-valid 4222222222222 is the
    # old 13-digit Visa test number, e.g. in PayPal's and Authorize.net's sandbox docs)
    assert card_number("4222222222222")

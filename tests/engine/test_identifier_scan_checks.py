"""The identifier scan's checks of sampled values (``engine/identifier_checks.py``).

Every number below is either published as an example or a test number (source in the
comment) or made by hand to break exactly one rule of the check.
"""

from __future__ import annotations

import pytest

from reident_airflow.engine.identifier_checks import (
    CHECKS,
    calendar_date,
    canadian_sin,
    card_number,
    dutch_bsn,
    french_nir,
    german_tax_id,
    gtin_valid,
    iban,
    ipv6_address,
    known_region,
    luhn_valid,
    medicare_mbi,
    national_id,
    nhs_number,
    phone_number,
    us_ssn,
)
from tests.engine.test_identifier_scan_issue38 import _found

REGIONS = ("US", "GB", "FR", "DE", "JP")


def test_luhn_of_the_textbook_example() -> None:
    # Wikipedia, "Luhn algorithm": 7992739871 has check digit 3
    assert luhn_valid("79927398713")
    assert not luhn_valid("79927398710")
    assert not luhn_valid("7992739871x")
    assert not luhn_valid("")


@pytest.mark.parametrize(
    "number",
    [
        # Stripe's documented test cards (docs.stripe.com/testing): Visa, Mastercard, Amex,
        # Discover; PayPal's sandbox Visa 4111 1111 1111 1111
        "4242424242424242",
        "5555 5555 5555 4444",
        "378282246310005",
        "6011-1111-1111-1117",
        "4111 1111 1111 1111",
    ],
)
def test_published_test_cards_pass(number: str) -> None:
    assert card_number(number)


@pytest.mark.parametrize(
    "number",
    [
        "4242424242424241",  # the Stripe Visa with its last digit changed: Luhn fails
        "0000 0000 0000 0000",  # Luhn-valid, but one repeated digit is no card
        "424242424242",  # 12 digits: too short for ISO/IEC 7812
        "79927398713",  # Luhn-valid, 11 digits
    ],
)
def test_card_lookalikes_fail(number: str) -> None:
    assert not card_number(number)


@pytest.mark.parametrize(
    "number",
    [
        # the examples of the SWIFT IBAN registry (and of ISO 13616's Wikipedia page)
        "GB82 WEST 1234 5698 7654 32",
        "DE89 3704 0044 0532 0130 00",
        "FR14 2004 1010 0505 0001 3M02 606",
        "gb82west12345698765432",  # case and spaces do not matter
    ],
)
def test_registry_ibans_pass(number: str) -> None:
    assert iban(number)


@pytest.mark.parametrize(
    "number",
    [
        "GB82 WEST 1234 5698 7654 33",  # one digit changed: MOD 97-10 catches every one
        "GB28 WEST 1234 5698 7654 32",  # check digits swapped
        "GB82 WEST 1234",  # too short
        "8282 WEST 1234 5698 7654 32",  # no country letters
    ],
)
def test_iban_lookalikes_fail(number: str) -> None:
    assert not iban(number)


def test_ssn_rules_of_the_ssa() -> None:
    # SSA, "Social Security Number Randomization" (2011): areas 000, 666 and 900-999 are never
    # assigned; nor group 00 nor serial 0000. Hand-made numbers break one rule each.
    assert us_ssn("123-45-6789")
    assert us_ssn("078-05-1120")  # the 1938 wallet-insert number: well formed
    for bad in ("000-12-3456", "666-12-3456", "900-12-3456", "999-12-3456"):
        assert not us_ssn(bad), bad
    assert not us_ssn("123-00-4567")
    assert not us_ssn("123-45-0000")
    assert not us_ssn("123-45-67890")


def test_calendar_dates() -> None:
    assert calendar_date("2024-02-29")  # a leap day
    assert not calendar_date("2023-02-29")
    assert calendar_date("31/12/1999")  # day first
    assert calendar_date("12/31/1999")  # month first
    assert calendar_date("1.2.2024")
    assert not calendar_date("13/13/2000")
    assert not calendar_date("2024-13-01")
    assert not calendar_date("2024-01/15")  # two different separators
    assert not calendar_date("1700-01-01")  # outside 1850-2150
    assert not calendar_date("2024-01-15x")


def test_ipv6_addresses() -> None:
    # RFC 3849 reserves 2001:db8::/32 for documentation
    assert ipv6_address("2001:db8::1")
    assert ipv6_address("2001:0db8:0000:0000:0000:ff00:0042:8329")
    assert ipv6_address("fe80::1")
    assert not ipv6_address("12:30:45")  # a clock time
    assert not ipv6_address("00:1a:2b:3c:4d:5e")  # a MAC address
    assert not ipv6_address("2001:db8")


@pytest.mark.parametrize(
    "number",
    [
        # 201-555-0123: libphonenumber's example US number, in NANPA's 555-0100..0199 range
        # reserved for fiction
        "+1 201-555-0123",
        "(201) 555-0123",
        "201.555.0123",
        "2015550123",
        # Ofcom's drama range 020 7946 0000-0999 (London)
        "+44 20 7946 0018",
        "0044 20 7946 0018",
        "020 7946 0018",
        # ARCEP's range 01 99 00 xx xx, reserved for fiction
        "01 99 00 12 34",
        "+33 1 99 00 12 34",
    ],
)
def test_fictional_phone_numbers_pass(number: str) -> None:
    assert phone_number(number, REGIONS)


@pytest.mark.parametrize(
    "text",
    [
        "2024-01-15",  # an ISO date: libphonenumber alone calls it a valid German number
        "2024-01-15 10",  # what the phone pattern matches in "2024-01-15 10:30:00": alone, a
        # valid US number (202 401 1510)
        "123-45-6789",  # SSN-shaped: alone, a valid French and Japanese number
        "20240115",  # German without the trunk prefix 0: not how a German number is written
        "12345678",
        "555-0123",  # seven digits: no region's full number
        "1234 5678 9012",
    ],
)
def test_phone_lookalikes_fail(text: str) -> None:
    assert not phone_number(text, REGIONS)


def test_phone_regions_decide_national_numbers() -> None:
    assert phone_number("020 7946 0018", ("GB",))
    assert not phone_number("020 7946 0018", ("US",))
    # an international number needs no region
    assert phone_number("+44 20 7946 0018", ())


def test_regions_and_the_table_of_checks() -> None:
    assert known_region("US")
    assert not known_region("XX")
    assert set(CHECKS) == {"card", "iban", "us_ssn", "national_id", "ssn_digits", "date", "ipv6"}


# ------------------------------------------------------------ issue 38: national identifiers
@pytest.mark.parametrize(
    "number",
    [
        # NHS number: the common example 943 476 5919, worked by hand with the NHS Data
        # Dictionary's Modulus 11 (9*10 + 4*9 + 3*8 + 4*7 + 7*6 + 6*5 + 5*4 + 9*3 + 1*2 = 299,
        # 11 - 299 mod 11 = 9), and python-stdnum's documented example (gb.nhs)
        "943 476 5919",
        "943-476-5870",
        "9434765870",
        # NIR: fr.wikipedia "Numero de securite sociale en France" example, its key by hand
        # (2550814168025 mod 97 = 59, 97 - 59 = 38); python-stdnum's documented examples for
        # Corsica (2A, 2B) and a foreign-born 99 department
        "2 55 08 14 168 025 38",
        "2 95 10 99 126 111 93",
        "253072B07300470",
        "253072A07300443",
        # BSN: python-stdnum's documented example (nl.bsn), and 123456782 worked by hand:
        # 9*1 + 8*2 + 7*3 + 6*4 + 5*5 + 4*6 + 3*7 + 2*8 - 2 = 154 = 14 * 11
        "111222333",
        "1112.22.333",
        "123456782",
        # Steuer-ID: python-stdnum's documented example (de.idnr)
        "36 574 261 809",
        "36574261809",
        # SIN: the example of canada.ca's SIN page and python-stdnum (ca.sin)
        "123-456-782",
        "123 456 782",
        # MBI: the example of CMS's "Understanding the Medicare Beneficiary Identifier"
        "1EG4-TE5-MK73",
        "1EG4TE5MK73",
    ],
)
def test_national_ids_of_the_published_examples(number: str) -> None:
    assert national_id(number)
    assert _found("national_id", f"id: {number}.")


@pytest.mark.parametrize(
    "text",
    [
        "943 476 5918",  # NHS: the last digit changed
        "943 476 591 9",  # NHS: not a layout it is written in
        "2 55 08 14 168 025 39",  # NIR: the key changed
        "253072C07300443",  # NIR: 2C is no department (python-stdnum's counter-example)
        "1112.52.333",  # BSN: fails the 11-proof (python-stdnum's counter-example)
        "36574261890",  # Steuer-ID: wrong check digit (python-stdnum)
        "36554266806",  # Steuer-ID: two digits repeated (python-stdnum)
        "823 456 785",  # SIN: Luhn-valid, but 8 is a business number (python-stdnum)
        # the sample card of canada.ca's SIN page: Luhn-valid, but 0 is never issued
        "046 454 286",
        "1SG4-TE5-MK73",  # MBI: S is never used
        "0EG4-TE5-MK73",  # MBI: the first character is 1-9
        "1EG4-TE5-MK7A",  # MBI: the last two are digits
        "0002-3227-30",  # an NDC
        "978-3-16-148410-0",  # an ISBN-13 (the ISBN agency's example)
        "5901234123457",  # an EAN-13
    ],
)
def test_national_id_lookalikes_fail(text: str) -> None:
    assert not national_id(text)
    assert not _found("national_id", text)


def test_the_parts_of_the_national_checks() -> None:
    # each check on its own, its number without separators
    assert nhs_number("9434765919") and not nhs_number("943476591")
    assert french_nir("255081416802538") and not french_nir("755081416802538")
    assert dutch_bsn("123456782") and not dutch_bsn("000000000")
    assert german_tax_id("36574261809") and not german_tax_id("06574261809")
    # three times the same digit in a row never (Paragraph 139b AO as applied since 2016)
    assert not german_tax_id("11145678902")
    assert canadian_sin("123456782") and luhn_valid("046454286")
    assert not canadian_sin("046454286")
    assert medicare_mbi("1EG4TE5MK73") and medicare_mbi("1eg4te5mk73")
    # the EAN-13 of Wikipedia's "International Article Number" figure, then one digit off
    assert gtin_valid("5901234123457") and not gtin_valid("5901234123458")

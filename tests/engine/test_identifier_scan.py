"""The identifier scan over counts: options, plan and verdicts (``engine/identifiers.py``).

The profiles are made by hand, as a source would count them; each expected verdict and
reason is worked out in the comment beside it from SCAN_THRESHOLDS (unique share 0.9 with at least
10 unique values, content share 0.5, possible share 0.05, free text 0.5).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import pytest

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.identifiers import (
    CONTENT_PATTERNS,
    SCAN_THRESHOLDS,
    SCHEMA,
    ColumnPlan,
    ColumnProfile,
    IdentifierScan,
    ScanOptions,
    scan,
    scan_plan,
    verified_count,
)

NO_MATCHES = {kind: 0 for kind in CONTENT_PATTERNS if kind != "date"}


def _string(
    column: str,
    records: int,
    *,
    nulls: int,
    distinct: int | None,
    singletons: int | None,
    matches: Mapping[str, int] | None = None,
    samples: Mapping[str, tuple[tuple[str, int], ...]] | None = None,
    complete: Mapping[str, bool] | None = None,
    zip3: int | None = None,
) -> ColumnProfile:
    """A string column's profile, with no match unless ``matches`` says so."""
    return ColumnProfile(
        column,
        "string",
        records,
        nulls,
        distinct,
        singletons,
        matches={**NO_MATCHES, **(matches or {})},
        samples=samples or {},
        complete=complete or {},
        zip3=zip3,
    )


# ------------------------------------------------------------------------------ options
def test_options_defaults() -> None:
    options = ScanOptions()
    assert options.policy == "warn"
    assert options.safe_harbor is False
    assert options.sample_size == 1000
    assert options.approximate is False
    assert options.phone_regions == ("US", "GB", "FR", "DE", "JP")
    assert options.allow_columns == options.quasi_identifiers == options.extra_names == ()


def test_options_from_loose_values() -> None:
    options = ScanOptions.from_mapping(
        {
            "policy": " FAIL ",
            "safe_harbor": "yes",
            "allow_columns": "notes, comment",
            "quasi_identifiers": ["sex", "age"],
            "extra_names": "matricule",
            "sample_size": "500",
            "approximate": "none",  # unset: the default
            "phone_regions": "us,gb",
        }
    )
    assert options == ScanOptions(
        policy="fail",
        safe_harbor=True,
        allow_columns=("notes", "comment"),
        quasi_identifiers=("sex", "age"),
        extra_names=("matricule",),
        sample_size=500,
        phone_regions=("US", "GB"),
    )
    assert options.to_dict() == {
        "policy": "fail",
        "safe_harbor": True,
        "allow_columns": ["notes", "comment"],
        "quasi_identifiers": ["sex", "age"],
        "extra_names": ["matricule"],
        "sample_size": 500,
        "approximate": False,
        "phone_regions": ["US", "GB"],
    }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"policy": "block"}, "policy must be one of fail, warn, off"),
        ({"policy": 1}, "policy must be one of"),
        ({"safe_harbor": "maybe"}, "safe_harbor must be true or false"),
        ({"sample_size": "0"}, "sample_size must be >= 1"),
        ({"sample_size": "1.5"}, "sample_size must be a whole number"),
        ({"phone_regions": "US,XX"}, "phone_regions holds 'XX'"),
        ({"allow_columns": 3}, "allow_columns must be a list of names"),
        ({"extra_names": ["--"]}, "extra_names holds '--', which has no letters"),
        ({"identifier_scan": "fail"}, "unknown identifier scan option 'identifier_scan'"),
    ],
)
def test_bad_options_are_named(values: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        ScanOptions.from_mapping(values)


def test_options_built_directly_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="sample_size"):
        ScanOptions(sample_size=True)
    with pytest.raises(InvalidInputError, match="approximate must be true or false"):
        ScanOptions(approximate="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="allow_columns must be a list"):
        ScanOptions(allow_columns="notes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="blank"):
        ScanOptions(quasi_identifiers=("sex", " "))


# --------------------------------------------------------------------------------- plan
KINDS = {
    "note": "string",
    "dob": "string",
    "zip": "string",
    "age": "integer",
    "weight": "float",
    "visit_date": "date",
    "smoker": "boolean",
    "mrn": "integer",
    "sex": "string",
}
UNDATED = (
    "email",
    "url",
    "ipv4",
    "ipv6",
    "phone",
    "card",
    "iban",
    "us_ssn",
    "national_id",
    "text",
    "address",
)
DATED = (
    "email",
    "url",
    "ipv4",
    "ipv6",
    "phone",
    "card",
    "iban",
    "us_ssn",
    "national_id",
    "date",
    "text",
    "address",
)
SAMPLED = ("ipv6", "phone", "card", "iban", "us_ssn", "national_id")


def test_plan_without_safe_harbor() -> None:
    plans = scan_plan(KINDS, ScanOptions(allow_columns=("mrn",), quasi_identifiers=("sex",)))
    assert plans == (
        ColumnPlan("note", "string", UNDATED, SAMPLED, 1000),
        # a column named as a birth date: its exact dates are counted
        ColumnPlan("dob", "string", DATED, (*SAMPLED, "date"), 1000),
        ColumnPlan("zip", "string", UNDATED, SAMPLED, 1000),
        ColumnPlan("age", "integer"),
        ColumnPlan("weight", "float"),
        ColumnPlan("visit_date", "date"),
        ColumnPlan("smoker", "boolean"),
        ColumnPlan("mrn", "integer"),  # allowed: nothing counted
        ColumnPlan("sex", "string"),  # declared: nothing counted
    )


def test_plan_under_safe_harbor() -> None:
    plans = {p.column: p for p in scan_plan(KINDS, ScanOptions(safe_harbor=True, sample_size=50))}
    assert plans["note"] == ColumnPlan("note", "string", DATED, (*SAMPLED, "date"), 50)
    assert plans["zip"] == ColumnPlan("zip", "string", DATED, (*SAMPLED, "date"), 50, zip3=True)
    assert plans["age"] == ColumnPlan("age", "integer", over_89=True)
    assert plans["weight"] == ColumnPlan("weight", "float")
    assert plans["visit_date"] == ColumnPlan("visit_date", "date")


def test_plan_rejects_unknown_kinds_and_columns() -> None:
    with pytest.raises(InvalidInputError, match="column 'x' has kind 'text'"):
        scan_plan({"x": "text"}, ScanOptions())
    with pytest.raises(InvalidInputError, match="allow_columns names 'notes', which the table"):
        scan_plan({"note": "string"}, ScanOptions(allow_columns=("notes",)))
    with pytest.raises(InvalidInputError, match="quasi_identifiers names 'Sex'"):
        scan_plan({"sex": "string"}, ScanOptions(quasi_identifiers=("Sex",)))


# ----------------------------------------------------------------------- verified counts
def test_a_complete_sample_counts_exactly() -> None:
    profile = _string(
        "contact",
        100,
        nulls=0,
        distinct=4,
        singletons=0,
        matches={"phone": 95},
        samples={
            "phone": (
                ("+1 201-555-0123", 40),  # valid (international)
                ("(201) 555-0123", 30),  # valid (US)
                ("020 7946 0018", 20),  # valid (GB, trunk prefix written)
                ("2024-01-15", 5),  # a date: never a phone
            )
        },
        complete={"phone": True},
    )
    # 40 + 30 + 20 = 90 records verified
    assert verified_count("phone", profile, ("US", "GB")) == (90, False)
    # without GB, its national number does not count: 70
    assert verified_count("phone", profile, ("US",)) == (70, False)


def test_a_partial_sample_scales_the_matches() -> None:
    profile = _string(
        "code",
        1000,
        nulls=0,
        distinct=10,
        singletons=0,
        matches={"phone": 1000},
        samples={
            "phone": (
                ("2015550123", 10),  # valid US
                ("2015550199", 10),  # valid US
                ("1234567890", 10),  # no US area code starts with 1
                ("1111111111", 10),
            )
        },
        complete={"phone": False},
    )
    # 20 of the 40 sampled records verified: 1000 * 20 / 40 = 500
    assert verified_count("phone", profile, ("US",)) == (500, True)


@pytest.mark.parametrize(
    ("kind", "inside", "outside"),
    [
        # each sampled value is searched for the kind's pattern and the match checked without
        # the boundary characters the pattern needs; the numbers are those of
        # test_identifier_scan_checks.py (Stripe's test Visa, the registry's GB IBAN, ...)
        ("card", "paid with 4242 4242 4242 4242 today", "order 4242 4242 4242 4241 shipped"),
        ("iban", "to GB82 WEST 1234 5698 7654 32, ref 7", "to GB82 WEST 1234 5698 7654 33"),
        ("us_ssn", "ssn 123-45-6789 on file", "form 666-12-3456 void"),
        ("date", "seen on 29/02/2024 again", "seen on 30/02/2024 again"),
        ("ipv6", "from 2001:db8::1 at noon", "at 12:30:45 sharp"),
        ("phone", "call (201) 555-0123.", "code 1234 5678 9012"),
    ],
)
def test_candidates_are_found_inside_values(kind: str, inside: str, outside: str) -> None:
    assert re.search(CONTENT_PATTERNS[kind], inside) and re.search(CONTENT_PATTERNS[kind], outside)
    profile = _string(
        "note",
        10,
        nulls=0,
        distinct=2,
        singletons=0,
        matches={kind: 10},
        samples={kind: ((inside, 3), (outside, 7))},
        complete={kind: True},
    )
    assert verified_count(kind, profile, ("US",)) == (3, False)


def test_counts_without_a_sample_are_not_available() -> None:
    profile = _string("x", 10, nulls=0, distinct=1, singletons=0, matches={"card": 3})
    assert verified_count("card", profile, ()) == (None, False)
    # kinds that are not verified count their matches
    profile = _string("x", 10, nulls=0, distinct=1, singletons=0, matches={"email": 3})
    assert verified_count("email", profile, ()) == (3, False)


# -------------------------------------------------------------------------------- verdicts
def _by_column(result: IdentifierScan) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {c.column: (c.verdict, c.reasons) for c in result.columns}


def test_a_clean_table_is_clear() -> None:
    profiles = [
        _string("sex", 1000, nulls=0, distinct=2, singletons=0),
        _string("ethnicity", 1000, nulls=12, distinct=5, singletons=0),
        _string("diagnosis", 1000, nulls=0, distinct=40, singletons=5),
        # a short label of three words in most records is not free text
        _string("occupation", 1000, nulls=0, distinct=30, singletons=2),
        ColumnProfile("age", "integer", 1000, 0, 70, 3),
        # a measurement is unique in most records: not an identifier by that
        ColumnProfile("income", "float", 1000, 0, 1000, 1000),
        ColumnProfile("visit_date", "date", 1000, 0, 365, 40),
        ColumnProfile("smoker", "boolean", 1000, 0, 2, 0),
        # an e-mail opt-in flag named "email": a boolean says nothing of whom
        ColumnProfile("email", "boolean", 1000, 0, 2, 0),
        ColumnProfile("country_id", "integer", 1000, 0, 3, 0),
        # timestamps written as text: the phone pattern matches "2024-01-15 10" in each, and
        # none is a phone number
        _string(
            "created",
            1000,
            nulls=0,
            distinct=2,
            singletons=0,
            matches={"phone": 1000},
            samples={"phone": (("2024-01-15 10:30:00", 600), ("2024-02-01 08:15:00", 400))},
            complete={"phone": True},
        ),
    ]
    result = scan(profiles, ScanOptions(policy="fail"))
    assert [c.verdict for c in result.columns] == ["clear"] * len(profiles)
    assert all(c.reasons == () for c in result.columns)
    assert result.flagged == result.failing == ()
    assert result.passed


PLANTED = [
    # a record number named as one, not unique (a patient has several rows)
    ColumnProfile("mrn", "integer", 1000, 0, 400, 0),
    # a renamed id: 1000 unique of 1000 values >= 0.9
    _string("rid", 1000, nulls=0, distinct=1000, singletons=1000),
    # a free-text note (700 of 800 values hold four words: 0.875 >= 0.5) holding 24 e-mail
    # addresses and one phone number; it is unique (780 / 800) as notes are
    _string(
        "note",
        1000,
        nulls=200,
        distinct=790,
        singletons=780,
        matches={"email": 24, "phone": 3, "text": 700},
        samples={
            "phone": (
                ("call 201-555-0123 after 5pm", 1),  # verified
                ("seen on 2024-01-15 at the clinic", 2),  # a date
            )
        },
        complete={"phone": True},
    ),
    # a phone column of mixed formats: 90 of 100 values verified (>= 0.5)
    _string(
        "contact",
        100,
        nulls=0,
        distinct=4,
        singletons=0,
        matches={"phone": 95},
        samples={
            "phone": (
                ("+1 201-555-0123", 40),
                ("(201) 555-0123", 30),
                ("020 7946 0018", 20),
                ("2024-01-15", 5),
            )
        },
        complete={"phone": True},
    ),
    # a unique key counted approximately (Spark): singletons >= 2 * 980 - 1000 = 960
    ColumnProfile("key", "integer", 1000, 0, 980, None, approximate=True),
    # a column of nothing: nothing released
    _string("email", 1000, nulls=1000, distinct=0, singletons=0),
    ColumnProfile("income", "float", 1000, 0, 1000, 1000),
]


def test_the_planted_identifiers_are_found() -> None:
    result = scan(PLANTED, ScanOptions(policy="fail"))
    assert _by_column(result) == {
        "mrn": ("identifier", ("name: record number",)),
        "rid": ("identifier", ("unique: 1000 of 1000 values",)),
        "note": (
            "possible identifier",
            (
                "content: e-mail addresses in 24 of 800 values in free text",
                "content: phone numbers in 1 of 800 values in free text",
            ),
        ),
        "contact": ("identifier", ("content: phone numbers in 90 of 100 values",)),
        "key": ("identifier", ("unique: at least 960 of 1000 values (distinct count)",)),
        "email": ("clear", ("no values",)),
        "income": ("clear", ()),
    }
    assert result.flagged == ("mrn", "rid", "note", "contact", "key")
    assert result.failing == ("mrn", "rid", "contact", "key")
    assert not result.passed
    # under "warn" the same findings let the release pass
    assert scan(PLANTED, ScanOptions(policy="warn")).passed


def test_the_evidence_is_counts_and_shares() -> None:
    columns = {c.column: c for c in scan(PLANTED, ScanOptions()).columns}
    note = columns["note"]
    assert note.unique_share == 780 / 800
    assert not note.unique_estimated
    shares = {c.kind: c for c in note.content}
    assert (shares["email"].count, shares["email"].share) == (24, 24 / 800)
    assert (shares["phone"].matches, shares["phone"].count) == (3, 1)
    assert shares["text"].share == 700 / 800
    key = columns["key"]
    assert (key.unique_share, key.unique_estimated, key.approximate) == (0.96, True, True)
    assert columns["email"].unique_share is None


def test_allowed_and_declared_columns_are_not_flagged() -> None:
    options = ScanOptions(policy="fail", allow_columns=("mrn", "rid"), quasi_identifiers=("key",))
    columns = {c.column: c for c in scan(PLANTED, options).columns}
    assert (columns["mrn"].verdict, columns["mrn"].treated_as) == ("clear", "allowed")
    assert columns["mrn"].reasons == ("allowed",)
    assert (columns["key"].verdict, columns["key"].treated_as) == ("clear", "quasi-identifier")
    assert columns["key"].reasons == ("declared quasi-identifier",)
    assert columns["contact"].treated_as is None


def test_a_tiny_table_is_not_unique_by_chance() -> None:
    # 5 of 5 values unique: share 1.0, but fewer than 10 unique values
    profiles = [_string("code", 5, nulls=0, distinct=5, singletons=5)]
    assert scan(profiles, ScanOptions()).columns[0].verdict == "clear"
    # 10 of 11 values unique: share 0.909 >= 0.9 and 10 unique values
    profiles = [_string("code", 11, nulls=0, distinct=10, singletons=10)]
    assert scan(profiles, ScanOptions()).columns[0].verdict == "identifier"
    # 17 of 19: share 0.895 < 0.9
    profiles = [_string("code", 19, nulls=0, distinct=17, singletons=17)]
    assert scan(profiles, ScanOptions()).columns[0].verdict == "clear"


def test_a_small_share_outside_free_text() -> None:
    def contact(kind: str, found: int) -> ColumnProfile:
        return _string("contact", 100, nulls=0, distinct=3, singletons=0, matches={kind: found})

    # IPv4: 4 of 100 < 0.05: not flagged; 5 of 100 = 0.05: possible; 50 of 100: identifier
    assert scan([contact("ipv4", 4)], ScanOptions()).columns[0].verdict == "clear"
    assert scan([contact("ipv4", 5)], ScanOptions()).columns[0].verdict == "possible identifier"
    assert scan([contact("ipv4", 50)], ScanOptions()).columns[0].verdict == "identifier"
    # an e-mail address is never anything else: one is enough for a possible identifier
    assert scan([contact("email", 1)], ScanOptions()).columns[0].verdict == "possible identifier"
    assert scan([contact("email", 50)], ScanOptions()).columns[0].verdict == "identifier"
    # kinds add up: 30 e-mail addresses and 20 IPv4 addresses are 0.5 together
    mixed = _string(
        "contact", 100, nulls=0, distinct=3, singletons=0, matches={"email": 30, "ipv4": 20}
    )
    assert scan([mixed], ScanOptions()).columns[0].verdict == "identifier"


def test_urls_are_possible_identifiers() -> None:
    links = _string("link", 100, nulls=0, distinct=3, singletons=0, matches={"url": 80})
    column = scan([links], ScanOptions()).columns[0]
    assert (column.verdict, column.reasons) == (
        "possible identifier",
        ("content: URLs in 80 of 100 values",),
    )


def test_spaced_phone_numbers_are_not_free_text() -> None:
    # 60 of 100 values read as four words, but 40 of them are phone numbers (+44 20 7946 0018
    # has four groups): 0.6 - 0.4 = 0.2 < 0.5, so the column is not free text
    sample = (("+44 20 7946 0018", 40), ("555-0123", 1))  # seven digits: no number
    profile = _string(
        "contact",
        100,
        nulls=0,
        distinct=41,
        singletons=40,
        matches={"phone": 41, "text": 60},
        samples={"phone": sample},
        complete={"phone": True},
    )
    column = scan([profile], ScanOptions()).columns[0]
    # 40 verified phones: 0.4 < 0.5 but >= 0.05: possible; 40 unique of 100 < 0.9
    assert (column.verdict, column.reasons) == (
        "possible identifier",
        ("content: phone numbers in 40 of 100 values",),
    )


SAFE_HARBOR = [
    # ages: 3 over 89
    ColumnProfile("age", "integer", 1000, 0, 80, 2, over_89=3),
    # a postcode is an undeclared quasi-identifier by its name; 4 values in restricted areas
    _string("zip", 1000, nulls=0, distinct=50, singletons=1, matches={"date": 0}, zip3=4),
    ColumnProfile("visit_date", "date", 1000, 0, 365, 40),
    # free text with 6 exact dates (the sampled 2023-02-29 is no date)
    _string(
        "remarks",
        1000,
        nulls=0,
        distinct=990,
        singletons=985,
        matches={"date": 10, "text": 900},
        samples={"date": (("seen on 2024-01-15", 6), ("follow-up 2023-02-29 booked", 4))},
        complete={"date": True},
    ),
    # a string column of exact dates: 700 of 1000 verified (>= 0.5)
    _string(
        "admitted",
        1000,
        nulls=0,
        distinct=300,
        singletons=0,
        matches={"date": 1000},
        samples={"date": (("2024-03-01", 700), ("2024-02-30", 300))},
        complete={"date": True},
    ),
    _string("city", 1000, nulls=0, distinct=20, singletons=0, matches={"date": 0}),
    _string("sex", 1000, nulls=0, distinct=2, singletons=0, matches={"date": 0}),
]


def test_safe_harbor_checks() -> None:
    options = ScanOptions(policy="fail", safe_harbor=True, quasi_identifiers=("sex",))
    result = scan(SAFE_HARBOR, options)
    assert _by_column(result) == {
        "age": ("quasi-identifier not declared", ("ages over 89: 3 values (safe harbor)",)),
        "zip": (
            "quasi-identifier not declared",
            ("name: postcode", "restricted ZIP3 areas: 4 values (safe harbor)"),
        ),
        "visit_date": ("quasi-identifier not declared", ("exact dates (safe harbor)",)),
        "remarks": (
            "possible identifier",
            (
                "content: dates or date elements in 6 of 1000 values in free text (safe harbor)",
                "free text (safe harbor)",
            ),
        ),
        "admitted": (
            "quasi-identifier not declared",
            ("content: dates or date elements in 700 of 1000 values (safe harbor)",),
        ),
        "city": ("quasi-identifier not declared", ("name: geography below state",)),
        "sex": ("clear", ("declared quasi-identifier",)),
    }
    assert result.failing == ("age", "zip", "visit_date", "admitted", "city")
    assert not result.passed


def test_long_category_labels_are_not_free_text() -> None:
    # 600 of 1000 values hold four words ("American Indian or Alaska Native"), but 5 distinct
    # values are fewer than 0.2 * 1000: a category, not free text, so Safe Harbor leaves it
    def ethnicity(distinct: int) -> ColumnProfile:
        return _string(
            "ethnicity",
            1000,
            nulls=0,
            distinct=distinct,
            singletons=0,
            matches={"date": 0, "text": 600},
        )

    options = ScanOptions(safe_harbor=True)
    assert scan([ethnicity(5)], options).columns[0].verdict == "clear"
    # 200 distinct values = 0.2 * 1000: read as free text
    column = scan([ethnicity(200)], options).columns[0]
    assert (column.verdict, column.reasons) == ("possible identifier", ("free text (safe harbor)",))


def test_without_safe_harbor_only_the_postcode_name_counts() -> None:
    result = scan(SAFE_HARBOR, ScanOptions(quasi_identifiers=("sex",)))
    assert result.flagged == ("zip",)
    assert _by_column(result)["zip"] == ("quasi-identifier not declared", ("name: postcode",))


def test_scan_rejects_columns_it_did_not_profile() -> None:
    with pytest.raises(InvalidInputError, match="allow_columns names 'nope'"):
        scan(PLANTED, ScanOptions(allow_columns=("nope",)))
    with pytest.raises(InvalidInputError, match="names a column twice"):
        scan([PLANTED[0], PLANTED[0]], ScanOptions())


def test_json_holds_counts_never_a_value() -> None:
    everything = [*PLANTED, *SAFE_HARBOR[:-1]]
    result = scan(everything, ScanOptions(safe_harbor=True))
    document = result.to_dict()
    assert document["schema"] == SCHEMA == "reident.identifier_scan/v1"
    assert document["options"] == result.options.to_dict()
    assert document["thresholds"] == dict(SCAN_THRESHOLDS)
    assert document["passed"] is True
    assert document["flagged"] == list(result.flagged)
    assert [c["column"] for c in document["columns"]] == [p.column for p in everything]
    assert set(document["columns"][0]) == {
        "column",
        "kind",
        "verdict",
        "reasons",
        "treated_as",
        "name_rule",
        "records",
        "nulls",
        "distinct",
        "singletons",
        "approximate",
        "unique_share",
        "unique_estimated",
        "content",
        "over_89",
        "zip3",
    }
    text = json.dumps(document) + repr(result) + repr(everything)
    sampled = {
        value for profile in everything for pairs in profile.samples.values() for value, _ in pairs
    }
    assert sampled
    for value in sampled:
        assert value not in text
        for word in value.split():
            if any(c.isdigit() for c in word):
                assert word not in text, word

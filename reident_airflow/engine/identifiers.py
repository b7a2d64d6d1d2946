"""The identifier scan: what every column of a release says about who is in it (issue 27).

The gate checks the quasi-identifiers it is told about; this scan looks at every column of
the candidate, declared or not, for what makes a record findable on its own: a unique key, an
identifier-like name, values that look like e-mail addresses, phone numbers, card or account
numbers, national identification numbers, street addresses, addresses on the network, exact
dates, and -- under the HIPAA Safe Harbor policy --
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

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.identifier_checks import CHECKS, known_region, phone_number
from reident_airflow.engine.numbers import as_whole_number, is_unset
from reident_airflow.engine.options import parse_flag
from reident_airflow.engine.presets import find_preset
from reident_airflow.engine.safe_harbor import SAFE_HARBOR_CATEGORIES

__all__ = [
    "AGE_RULE",
    "COLUMN_KINDS",
    "CONTENT_PATTERNS",
    "DERIVED_KINDS",
    "FAILING_VERDICTS",
    "GENERIC_QUALIFIERS",
    "ID_PREFIXES",
    "ID_SUFFIXES",
    "NAME_RULES",
    "POLICIES",
    "RESTRICTED_ZIP3",
    "SCAN_THRESHOLDS",
    "SCHEMA",
    "VERDICTS",
    "VERIFIED_KINDS",
    "ColumnCounter",
    "ColumnPlan",
    "ColumnProfile",
    "ColumnVerdict",
    "ContentShare",
    "IdentifierScan",
    "NameRule",
    "ScanOptions",
    "as_spelled",
    "match_name",
    "name_tokens",
    "scan",
    "scan_columns",
    "scan_plan",
    "verified_count",
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

#: The month names a date element is written with (``May 2025``): English, German, French,
#: Spanish and Dutch names and their usual abbreviations, Italian and Portuguese names; an
#: accented letter is any one or two characters but a space or a digit (``f..vrier`` reads
#: ``février`` as one character or two bytes alike, ``m..rz`` also ``Maerz``), so that every
#: backend matches what Python matches whatever its encoding.
_MONTHS_BY_LANGUAGE = {
    "en": "january february march april may june july august september october november "
    "december jan feb mar apr jun jul aug sep sept oct nov dec",
    "de": "januar februar m..rz april mai juni juli august september oktober november dezember "
    "okt dez",
    "fr": "janvier f..vrier mars avril mai juin juillet ao..t septembre octobre novembre "
    "d..cembre janv f..vr avr juil",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre "
    "noviembre diciembre ene abr dic",
    "nl": "januari februari maart april mei juni juli augustus september oktober november "
    "december mrt",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre "
    "dicembre",
    "pt": "janeiro fevereiro mar..o abril maio junho julho agosto setembro outubro novembro "
    "dezembro",
}
_MONTH_NAMES = "|".join(
    dict.fromkeys(
        word.replace("..", "[^ 0-9]{1,2}")
        for names in _MONTHS_BY_LANGUAGE.values()
        for word in names.split()
    )
)

#: Content kind -> pattern, counted by the backend over a string column's non-null values
#: (a value counts once however many matches it holds).
CONTENT_PATTERNS: Mapping[str, str] = {
    "email": "(?i)[a-z0-9._%+-]+@[a-z0-9-]+(\\.[a-z0-9-]+)*\\.[a-z]{2,}",
    "url": "(?i)((https?|ftp)://[^ /]+|www\\.[a-z0-9-]+\\.[a-z]{2,})",
    "ipv4": f"(?i)(^|[^0-9.]){_OCTET}(\\.{_OCTET}){{3}}($|[^0-9.])",
    "ipv6": "(?i)(^|[^0-9a-z:])[0-9a-f]{1,4}(:[0-9a-f]{0,4}){2,7}($|[^0-9a-z:])",
    "phone": "(?i)(^|[^0-9a-z])(\\+|00)?[0-9][0-9 ()./-]{5,18}[0-9]($|[^0-9a-z])",
    # 4-4-4-1..7 (Visa, Mastercard, ...) or 4-6-4/5 (Amex, Diners) in print
    "card": (
        "(?i)(^|[^0-9])([0-9]{4}([ -]?[0-9]{4}){2}[ -]?[0-9]{1,7}"
        "|[0-9]{4}[ -]?[0-9]{6}[ -]?[0-9]{4,5})($|[^0-9])"
    ),
    "iban": "(?i)(^|[^0-9a-z])[a-z]{2}[0-9]{2}( ?[0-9a-z]{4}){2,7}( ?[0-9a-z]{1,3})?($|[^0-9a-z])",
    "us_ssn": "(?i)(^|[^0-9])[0-9]{3}-[0-9]{2}-[0-9]{4}($|[^0-9])",
    # the layouts of the national identifiers: 9 to 11 digits (BSN, SIN, NHS number,
    # Steuer-ID; and nine read as ssn_digits), 3-3-3 (SIN), 3-3-4 (NHS number), 3 2 4 (US SSN
    # with spaces), 4-2-3 (BSN),
    # 2-3-3-3 (Steuer-ID), the NIR's groups (Corsica 2A/2B), the MBI
    "national_id": (
        "(?i)(^|[^0-9a-z])([0-9]{9,11}"
        "|[0-9]{3}[ .-][0-9]{3}[ .-][0-9]{3}[0-9]?"
        "|[0-9]{3} [0-9]{2} [0-9]{4}"
        "|[0-9]{4}[ .-][0-9]{2}[ .-][0-9]{3}"
        "|[0-9]{2}[ .-][0-9]{3}[ .-][0-9]{3}[ .-][0-9]{3}"
        "|[1-478][ .-]?[0-9]{2}[ .-]?[0-9]{2}[ .-]?([0-9]{2}|2[ab])[ .-]?[0-9]{3}[ .-]?[0-9]{3}"
        "[ .-]?[0-9]{2}"
        "|[1-9][a-z0-9]{2}[0-9]-?[a-z][a-z0-9][0-9]-?[a-z]{2}[0-9]{2})($|[^0-9a-z])"
    ),
    # a calendar date (year first, or last), and under Safe Harbor each element of a date
    # but its year (docs/identifier-scan.md): a month with its year (2025-05, 05/2025,
    # May 2025 in the languages of _MONTH_NAMES), an ISO week (2025-W19), a quarter with its
    # year (2025-Q2, Q2 2025)
    "date": (
        "(?i)(^|[^0-9])([0-9]{4}[-/.][0-9]{1,2}[-/.][0-9]{1,2}"
        "|[0-9]{1,2}[-/.][0-9]{1,2}[-/.][0-9]{4}"
        "|[0-9]{4}[-/][0-9]{2}|[0-9]{1,2}[-/][0-9]{4}"
        "|[0-9]{4}-?w[0-9]{2}(-?[1-7])?"
        "|[0-9]{4}[- ]?q[1-4]|q[1-4][- /]?[0-9]{4}"
        f"|({_MONTH_NAMES})[.]?,? ?([0-9]{{1,2}}(st|nd|rd|th)?,? )?(de )?[0-9]{{4}}"
        ")($|[^0-9])"
    ),
    "text": "(?i)[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+",
    # a house number and a street word: "12 Main Street", "12 bis rue ...", "Hauptstr. 5",
    # "Kerkstraat 12", "Calle Mayor, 5", "Via Roma 10"
    "address": (
        "(?i)(^|[^0-9a-z])[0-9]{1,5}[a-z]? +([a-z.-]+ +){1,3}(street|st|road|rd|avenue|ave"
        "|boulevard|blvd|lane|ln|drive|dr|court|ct|place|pl|terrace|way|close|crescent"
        "|square|highway|hwy|parkway|pkwy)($|[^a-z])"
        "|(^|[^0-9a-z])[0-9]{1,5}( ?(bis|ter|[a-z]))?,? +(rue|avenue|av|boulevard|bd|chemin"
        "|allee|impasse|place|quai|route|cours|calle|avenida|plaza|paseo|via|viale|piazza"
        "|rua)($|[^a-z])"
        "|(strasse|stra\u00dfe|str[.]|weg|gasse|platz|allee|damm|ufer|straat|laan|gracht"
        "|plein|dijk|singel),? +[0-9]{1,4}[a-z]?($|[^0-9a-z])"
        "|(^|, *)(calle|c/|avenida|av[.]|plaza|paseo|via|viale|piazza|corso|largo|rua"
        "|travessa|rue|avenue|boulevard)( +[^ 0-9,]+){1,5},? +[0-9]{1,5}($|[^0-9])"
    ),
}

#: Kinds whose regular-expression matches are candidates only: the engine checks a bounded
#: sample of the matched values (check digits, a real calendar date, a possible number).
VERIFIED_KINDS = frozenset({"ipv6", "phone", "card", "iban", "us_ssn", "national_id", "date"})

#: Kinds with no pattern of their own, read from another kind's matches and sample (no second
#: pass over the data): ``ssn_digits``, nine bare digits shaped as a US SSN in a value holding
#: no national identifier, from the ``national_id`` candidates. Weak evidence: an SSN has no
#: check digit, and 89 % of random 9-digit numbers (a ZIP+4 code, a product code) pass.
DERIVED_KINDS: Mapping[str, str] = {"ssn_digits": "national_id"}

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


# ------------------------------------------------------------------------------ verdicts
IDENTIFIER: Final = "identifier"
POSSIBLE: Final = "possible identifier"
UNDECLARED: Final = "quasi-identifier not declared"
CLEAR: Final = "clear"

#: The verdicts, most severe first.
VERDICTS = (IDENTIFIER, UNDECLARED, POSSIBLE, CLEAR)

#: The verdicts that fail a release under the ``"fail"`` policy (the others warn).
FAILING_VERDICTS = frozenset({IDENTIFIER, UNDECLARED})

#: What the scan does with its verdicts: fail the release on a failing verdict, only warn,
#: or not scan at all.
POLICIES = ("fail", "warn", "off")

#: The JSON schema of :meth:`IdentifierScan.to_dict`.
SCHEMA: Final = "reident.identifier_scan/v1"

#: The limits the verdicts read (docs/identifier-scan.md explains each):
#:
#: - ``unique_share``: a string or integer column whose values are held by one record each
#:   for at least this share of its non-null values is an identifier ...
#: - ``min_unique_values``: ... when at least this many values are unique (a table of a few
#:   records makes every column unique);
#: - ``content_share``: a string column whose values are verified e-mail addresses, phone
#:   numbers, card numbers, IBANs, US SSNs, national identification numbers or IP addresses
#:   (or street addresses) for at least this share of its non-null values is an identifier
#:   (phones, cards and national ids by the largest of their shares, not their sum)
#:   (URLs: a possible identifier); dates or date elements for that share, under Safe
#:   Harbor, make an undeclared quasi-identifier;
#: - ``possible_share``: below ``content_share``, from this share on, a possible identifier
#:   (a single e-mail address or IBAN is enough: nothing else reads as one); nine bare
#:   digits shaped as SSNs (``ssn_digits``) are never more than a possible identifier, from
#:   ``content_share`` on or in free text, and are not added to the other kinds' share;
#: - ``free_text_share``: a string column is free text when this share of its values hold four
#:   words or more (not counting phone numbers nor street addresses) ...
#: - ``free_text_distinct``: ... and its distinct values are at least this share of its values
#:   (a label of four words, repeated, is a category); then a single verified match makes it
#:   a possible identifier.
SCAN_THRESHOLDS: Mapping[str, float] = {
    "unique_share": 0.9,
    "min_unique_values": 10,
    "content_share": 0.5,
    "possible_share": 0.05,
    "free_text_share": 0.5,
    "free_text_distinct": 0.2,
}

_SEVERITY = {verdict: len(VERDICTS) - i for i, verdict in enumerate(VERDICTS)}

#: The kinds whose values identify a person on their own, and how a reason names them.
_DIRECT = {
    "email": "e-mail addresses",
    "phone": "phone numbers",
    "card": "card numbers",
    "iban": "IBANs",
    "us_ssn": "US SSNs",
    "national_id": "national identification numbers",
    "ipv4": "IPv4 addresses",
    "ipv6": "IPv6 addresses",
}
#: The direct kinds read in bare runs of digits, where one run can pass several of their checks
#: by chance (a 9-digit ZIP+4 code starting with 0 is a valid German phone number for 70 % of
#: random ones, and one in five passes a BSN's or SIN's check): their shares are not added to
#: one another, the largest counts. The other kinds (an SSN written ddd-dd-dddd, which is
#: never a phone number, e-mail, IBAN, IP) add to it.
_DIGIT_RUNS = frozenset({"phone", "card", "national_id"})
#: The kinds that only hint at an identifier (most values of their shape are something
#: else): at most a possible identifier, alone, and never added to the direct kinds' share.
_WEAK = {"ssn_digits": "9-digit numbers shaped as US SSNs"}
_LABELS = {
    **_DIRECT,
    **_WEAK,
    "url": "URLs",
    "date": "dates or date elements",
    "text": "free text",
    "address": "street addresses",
}
#: The direct kinds no other kind of value is mistaken for (an e-mail address, an IBAN that
#: passes MOD 97): a single one makes a column a possible identifier, whatever its share.
_UNMISTAKABLE = frozenset({"email", "iban"})

_UNIQUE_KINDS = frozenset({"integer", "string"})
_NUMBER_KINDS = frozenset({"integer", "decimal", "float"})
_DATE_KINDS = frozenset({"date", "timestamp"})


# ---------------------------------------------------------------------------- name rules
def _terms(text: str) -> tuple[str, ...]:
    """Terms written as one comma-separated text (a long list stays readable)."""
    return tuple(term.strip() for term in text.split(",") if term.strip())


_CAMEL = re.compile(
    r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])"
)
_WORD = re.compile(r"[^\W_]+")


def name_tokens(name: str) -> tuple[str, ...]:
    """A column name as the words it is made of, as the name rules read it: compatibility
    forms and accents dropped (``Prénom`` is ``prenom``, ``ＩＤ`` is ``id``), split at
    anything that is not a letter or a digit, at camelCase humps and between letters and
    digits, case-folded (``Straße`` is ``strasse``). Japanese and Chinese words, written
    without spaces, stay whole."""
    decomposed = unicodedata.normalize("NFKD", name)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return tuple(
        part.casefold() for word in _WORD.findall(bare) for part in _CAMEL.split(word) if part
    )


def _compact(term: str) -> str:
    return "".join(name_tokens(term))


def _unspaced(term: str) -> bool:
    """A term in a script written without spaces (kana, kanji), matched inside a word."""
    return any(ord(c) >= 0x2E80 for c in term)


#: Words that, following a term, still name the same thing: ``patient`` + ``id``,
#: ``telefon`` + ``nummer``, ``e-mail`` + ``adresse``.
ID_SUFFIXES = _terms(
    "id, ident, identifier, identification, no, nr, num, number, nummer, numero, key, ref, "
    "reference, bangou, 番号"
)

_SUFFIXES = tuple(_compact(suffix) for suffix in ID_SUFFIXES)

#: Words that, before a term, name the same thing in the languages that put the number
#: first: ``numero_securite_sociale``, ``numero de historia clinica``, ``nro_paciente``.
ID_PREFIXES = _terms("numero, nro, num, nr")

# ... with an optional preposition between (``numero de``, ``numero di``, ``numero da``)
_PREFIXES = tuple(
    _compact(prefix) + link
    for prefix in ID_PREFIXES
    for link in ("", "de", "del", "di", "da", "do", "du", "des", "d", "della", "dell")
)

#: Words that, anywhere in a name, say the column describes an identifier without holding
#: one (``email_count``, ``phone_type``, ``has_address``, ``email_domain``).
GENERIC_QUALIFIERS = _terms(
    "count, counts, cnt, n, nb, number of, num of, no of, total, sum, avg, mean, median, min, "
    "max, has, is, flag, indicator, type, types, kind, category, status, valid, validated, "
    "verified, format, length, len, domain, country, consent, opt in, opt out, optin, optout, "
    "preference, missing"
)


@dataclass(frozen=True)
class NameRule:
    """One family of identifier-like column names.

    A name matches when it holds one of ``terms`` as whole words (``first name`` matches
    ``first_name``, ``FirstName`` and ``firstname``), a term followed by one of
    :data:`ID_SUFFIXES` (``telefonnummer``) or preceded by one of :data:`ID_PREFIXES`
    (``numero_securite_sociale``); with ``suffixed``, only so (``patient`` alone is
    no identifier, ``patient_id`` is); one of ``tails`` at the end of a longer word
    (``patientname``, ``Kundenname``); or is one of ``whole`` entirely (``ip``). Terms in
    Japanese are matched inside the name. One of ``qualifiers`` or of
    :data:`GENERIC_QUALIFIERS` anywhere in the name cancels the match (``company_name``,
    ``name_count``). A match gives ``verdict``; a rule with ``safe_harbor`` applies only
    under the HIPAA Safe Harbor policy. Terms are written naturally and normalized as
    :func:`name_tokens` reads names."""

    category: str
    verdict: str
    terms: tuple[str, ...]
    qualifiers: tuple[str, ...] = ()
    tails: tuple[str, ...] = ()
    whole: tuple[str, ...] = ()
    suffixed: bool = False
    safe_harbor: bool = False
    # the words above as names are read, computed once (a name is checked against them all)
    _read: tuple[_Words, _Words, frozenset[str], frozenset[str]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise InvalidInputError(f"a name rule's verdict must be one of {VERDICTS}")
        words = (*self.terms, *self.qualifiers, *self.tails, *self.whole)
        if (not self.terms and not self.whole) or any(not _compact(w) for w in words):
            raise InvalidInputError(f"name rule {self.category!r} has a blank term")
        terms = {_compact(t) for t in self.terms}
        qualifiers = _Words.of(_compact(q) for q in (*GENERIC_QUALIFIERS, *self.qualifiers))
        bare = set() if self.suffixed else terms
        suffixed = {t + s for t in terms for s in _SUFFIXES}
        suffixed |= {p + t for t in terms for p in _PREFIXES}
        whole = frozenset(_compact(w) for w in self.whole)
        tails = frozenset(_compact(t) for t in self.tails)
        read = (qualifiers, _Words.of(bare | suffixed), whole, tails)
        object.__setattr__(self, "_read", read)

    def matches(self, name: str) -> bool:
        """Whether the column ``name`` matches this rule (see the class docstring)."""
        return self._matches(_Name.of(name))

    def _matches(self, name: _Name) -> bool:
        qualifiers, terms, whole, tails = self._read
        if qualifiers.found_in(name):
            return False
        if name.compact in whole or terms.found_in(name):
            return True
        for tail in tails:
            for token in name.tokens:
                head = token[: -len(tail)]
                if token.endswith(tail) and head and head not in qualifiers.spaced:
                    return True
        return False


@dataclass(frozen=True)
class _Words:
    """Normalized words, split by how a name holds them: as a run of its words (``spaced``)
    or inside it (``unspaced``: kana and kanji)."""

    spaced: frozenset[str]
    unspaced: tuple[str, ...]

    @classmethod
    def of(cls, words: Iterable[str]) -> _Words:
        distinct = set(words)
        inside = tuple(sorted(w for w in distinct if _unspaced(w)))
        return cls(frozenset(distinct.difference(inside)), inside)

    def found_in(self, name: _Name) -> bool:
        return not self.spaced.isdisjoint(name.runs) or any(
            w in name.compact for w in self.unspaced
        )


@dataclass(frozen=True)
class _Name:
    """A column name as rules read it: its words, every run of consecutive words joined,
    and the whole name joined."""

    tokens: tuple[str, ...]
    runs: frozenset[str]
    compact: str

    @classmethod
    def of(cls, name: str) -> _Name:
        tokens = name_tokens(name)
        runs = frozenset(
            "".join(tokens[i:j]) for i in range(len(tokens)) for j in range(i + 1, len(tokens) + 1)
        )
        return cls(tokens, runs, "".join(tokens))


# Words of other families that make a "name" column something else than a person's name
# (also read as the start of a compound: ``filename``, ``Produktname``, ``bedrijfsnaam``).
_NOT_PERSON = _terms(
    "file, host, server, company, companies, business, organisation, organization, org, "
    "institution, firm, product, item, article, brand, drug, medication, medicine, substance, "
    "device, model, column, col, field, table, schema, database, db, dataset, bucket, queue, "
    "job, task, dag, process, app, application, service, program, programme, course, project, "
    "event, test, plan, payer, insurer, facility, hospital, clinic, practice, site, location, "
    "place, street, city, town, village, state, region, province, county, district, "
    "department, dept, unit, ward, team, group, class, role, species, breed, language, "
    "variable, var, feature, metric, parameter, param, tag, label, sheet, report, campaign, "
    "channel, store, shop, vendor, supplier, merchant, manufacturer, bank, school, university, "
    "diagnosis, procedure, disease, condition, gene, protein, organism, specialty, speciality, "
    "code, path, dir, directory, folder, key, font, color, colour, commercial, "
    "entreprise, societe, produit, fichier, ville, pays, etablissement, "
    "firma, firmen, unternehmen, produkt, datei, stadt, ort, orts, land, strassen, "
    "krankenhaus, klinik, abteilung, marke, "
    "empresa, producto, archivo, ciudad, pais, centro, marca, calle, nombre de, "
    "azienda, prodotto, citta, paese, ospedale, reparto, "
    "bedrijf, bedrijfs, bestand, stad, ziekenhuis, afdeling, straat, "
    "produto, arquivo, ficheiro, cidade, "
    "medicamento, medicamentos, medikament, medikamente, medikamenten, medicament, "
    "medicaments, arzneimittel, wirkstoff, praeparat, farmaco, farmaci, geneesmiddel, "
    "remedio, principio activo"
)

_DEVICE_WORDS = _terms("model, os, manufacturer, vendor, version, firmware")

#: The built-in name rules, in English, French, German, Spanish, Italian, Dutch, Portuguese
#: and Japanese (extend them with :attr:`ScanOptions.extra_names`). A name matching rules of
#: different verdicts gets the most severe.
NAME_RULES: tuple[NameRule, ...] = (
    NameRule(
        "national id",
        IDENTIFIER,
        terms=_terms(
            "ssn, social security, social insurance, sin number, nin, national insurance, "
            "national id, national identification, national identity, identity card, "
            "identity number, id card, passport, tax id, itin, "
            "nir, numero insee, carte d identite, carte vitale, numero fiscal, "
            "steuer id, steueridentifikationsnummer, steuernummer, sozialversicherungsnummer, "
            "rentenversicherungsnummer, svnr, personalausweis, ausweis, reisepass, "
            "dni, nie, nif, nuss, curp, seguridad social, documento de identidad, pasaporte, "
            "cedula, codice fiscale, codicefiscale, tessera sanitaria, carta d identita, "
            "passaporto, bsn, burgerservicenummer, sofinummer, sofi, paspoort, "
            "cpf, niss, cartao de cidadao, passaporte, my number, mynumber, kojin bangou, "
            "マイナンバー, 個人番号, 旅券, パスポート, "
            "基礎年金番号, mbi, hicn, medicare beneficiary identifier"
        ),
    ),
    NameRule(
        "record number",
        IDENTIFIER,
        # who or what the number is of; only followed by one of ID_SUFFIXES
        terms=_terms(
            "patient, pat, person, personal, member, customer, cust, client, user, login, "
            "account, acct, employee, staff, subscriber, beneficiary, insured, policyholder, "
            "citizen, student, resident, applicant, donor, participant, subject, case, "
            "encounter, admission, claim, policy, record, medical record, health record, chart, "
            "contact, household, voter, taxpayer, passenger, guest, ehr, emr, nhs, chi, insee, "
            "insurance, health insurance, health plan, "
            "personne, utilisateur, adherent, assure, salarie, dossier, eleve, etudiant, sejour, "
            "securite sociale, "
            "patienten, kunde, kunden, mitglied, mitglieds, nutzer, benutzer, mitarbeiter, "
            "versicherten, versicherter, krankenversicherten, fall, akte, "
            "versicherung, versicherungs, krankenversicherungs, aufnahme, "
            "medicare, medicaid, "
            "paciente, persona, cliente, usuario, socio, afiliado, asegurado, empleado, "
            "expediente, historia clinica, "
            "paziente, utente, assistito, dipendente, cartella, cartella clinica, "
            "persoon, klant, gebruiker, lid, medewerker, verzekerde, "
            "pessoa, funcionario, prontuario, beneficiario, segurado, "
            "kanja, kaiin, kokyaku, shain, 患者, 会員, 顧客, 利用者, 社員, "
            "従業員, 被保険者, 保険証, カルテ"
        ),
        suffixed=True,
    ),
    NameRule("record number", IDENTIFIER, terms=("mrn", "kvnr")),
    NameRule(
        "name",
        IDENTIFIER,
        terms=_terms(
            "name, names, full name, first name, given name, middle name, last name, surname, "
            "family name, maiden name, forename, display name, "
            "nom, prenom, nom de famille, nom de naissance, "
            "vorname, nachname, familienname, geburtsname, rufname, "
            "nombre, apellido, apellidos, nome, cognome, "
            "naam, voornaam, achternaam, sobrenome, namae, shimei, "
            "氏名, 名前, 姓名, 苗字, 名字, フリガナ, "
            "患者名, 顧客名, 会員名, 利用者名"
        ),
        tails=("name", "naam"),
        qualifiers=_NOT_PERSON,
    ),
    NameRule(
        "e-mail",
        IDENTIFIER,
        terms=_terms(
            "email, mail, courriel, adresse electronique, correo, correo electronico, "
            "posta elettronica, emailadres, mailadres, correio eletronico, meeru, "
            "メール, 電子メール"
        ),
        qualifiers=_terms(
            "date, time, sent, opened, clicked, campaign, template, subject, frequency, bounce, "
            "bounced, unsubscribed, server, order"
        ),
    ),
    NameRule(
        "phone",
        IDENTIFIER,
        terms=_terms(
            "phone, telephone, tel, fax, msisdn, telefon, rufnummer, telefono, telefoon, "
            "telefone, denwa, 電話, 携帯, ファックス"
        ),
        qualifiers=_terms("model, os, brand, manufacturer, plan, carrier, operator"),
    ),
    NameRule(
        "phone",
        POSSIBLE,
        terms=_terms("mobile, cell, portable, handy, movil, celular, cellulare, mobiel"),
        qualifiers=_terms(
            "app, os, device, platform, browser, network, carrier, operator, plan, model, brand, "
            "line, culture, size, volume, viability, density, cycle"
        ),
    ),
    NameRule(
        "address",
        IDENTIFIER,
        terms=_terms(
            "address, addr, street, street address, home address, address line, "
            "adresse, rue, anschrift, strasse, hausnummer, direccion, domicilio, calle, "
            "indirizzo, adres, straat, huisnummer, woonadres, endereco, morada, rua, "
            "domicile, wohnsitz, residencia, "
            "jusho, juusho, 住所"
        ),
        qualifiers=_terms(
            "email, mail, e mail, electronique, ip, mac, web, url, memory, wallet, state, city"
        ),
    ),
    NameRule(
        "postcode",
        UNDECLARED,
        terms=_terms(
            "zip, zipcode, zip code, postcode, postal code, post code, plz, postleitzahl, "
            "code postal, codigo postal, codice postale, cep, yubin bangou, 郵便番号"
        ),
        qualifiers=("file", "archive", "compressed"),
    ),
    NameRule(
        "birth date",
        UNDECLARED,
        terms=_terms(
            "dob, date of birth, birth date, birthdate, birthday, born, "
            "date de naissance, date naissance, naissance, geburtsdatum, geburtstag, geb datum, "
            "fecha de nacimiento, fecha nacimiento, nacimiento, data di nascita, data nascita, "
            "geboortedatum, data de nascimento, nascimento, seinengappi, tanjoubi, "
            "生年月日, 誕生日"
        ),
        qualifiers=_terms(
            "year, yr, jahr, annee, ano, anno, jaar, weight, gewicht, poids, peso, order, rank, "
            "place, lieu, ort, lugar, luogo, plaats, local, city, rate"
        ),
    ),
    NameRule(
        "network address",
        IDENTIFIER,
        terms=_terms(
            "ip address, ip addr, ipaddress, ipv4, ipv6, client ip, source ip, src ip, dest ip, "
            "dst ip, remote ip, remote addr, user ip, adresse ip, ip adresse, ip adres, "
            "indirizzo ip, direccion ip, endereco ip, mac address, mac addr"
        ),
        whole=("ip", "mac"),
        qualifiers=("city", "region", "version"),
    ),
    NameRule("network address", POSSIBLE, terms=("hostname", "host name")),
    NameRule(
        "device",
        IDENTIFIER,
        terms=_terms(
            "device, serial, advertising, android, vin, plate, license plate, licence plate, "
            "number plate, kennzeichen, immatriculation, kenteken"
        ),
        suffixed=True,
        qualifiers=_DEVICE_WORDS,
    ),
    NameRule(
        "device",
        IDENTIFIER,
        terms=_terms("serial number, imei, imsi, udid, idfa, license plate, licence plate"),
        whole=("vin",),
        qualifiers=_DEVICE_WORDS,
    ),
    NameRule("device", POSSIBLE, terms=("cookie", "session"), suffixed=True),
    NameRule(
        "account",
        IDENTIFIER,
        terms=_terms(
            "bank account, iban, card number, credit card, debit card, card no, ccnum, "
            "cc number, username, user name, login name, screen name, "
            "nombre de usuario, nom d utilisateur, benutzername, nome utente, gebruikersnaam, "
            "nome de usuario, kontonummer, numero de compte, numero de cuenta, numero di conto, "
            "rekeningnummer, numero da conta, kouza bangou, 口座番号, カード番号, "
            "ユーザー名"
        ),
        qualifiers=_terms("attempt, attempts, time, date, failed, failures, method"),
    ),
    NameRule("account", POSSIBLE, terms=(), whole=_terms("account, konto, cuenta, handle, alias")),
    NameRule(
        "licence",
        IDENTIFIER,
        # only followed by one of ID_SUFFIXES: a licence number, not a software licence
        terms=_terms(
            "licence, license, permis, fuhrerschein, licencia, patente, certificate, "
            "zertifikat, certificat, menkyoshou, 免許証"
        ),
        suffixed=True,
    ),
    NameRule(
        "licence",
        IDENTIFIER,
        terms=_terms(
            "driver license, drivers license, driving licence, driver licence, "
            "permis de conduire, fuhrerschein, carnet de conducir, rijbewijs, carta de conducao, "
            "carteira de motorista, cnh"
        ),
    ),
    NameRule(
        "web address",
        POSSIBLE,
        terms=_terms(
            "url, uri, website, web site, web address, homepage, home page, site web, webseite, "
            "sitio web, sito web, pagina web, linkedin, twitter, instagram, facebook"
        ),
    ),
    NameRule(
        "photo or biometric",
        IDENTIFIER,
        terms=_terms(
            "photo, photograph, foto, face image, facial image, portrait, fingerprint, "
            "finger print, biometric, biometrics, retina scan, iris scan, voiceprint, "
            "voice print, 写真, 顔写真, 指紋"
        ),
    ),
    NameRule(
        "photo or biometric",
        POSSIBLE,
        terms=_terms("signature, unterschrift, handtekening, assinatura, 署名"),
        qualifiers=("hash", "algorithm", "key", "method"),
    ),
    NameRule(
        "relative or contact",
        POSSIBLE,
        terms=_terms("next of kin, emergency contact, initials"),
    ),
    NameRule(
        "geography below state",
        UNDECLARED,
        terms=_terms(
            "city, town, county, municipality, precinct, ville, commune, stadt, gemeinde, "
            "wohnort, ciudad, municipio, citta, comune, gemeente, woonplaats, cidade, concelho, "
            "市区町村"
        ),
        safe_harbor=True,
    ),
    # an element of a date but its year (Safe Harbor removes them all, 45 CFR
    # 164.514(b)(2)(i)(C)): the month, week or day of the year of an event; a duration counted
    # in months or weeks is written in the plural (months_since_dx) or qualified (age, gestational);
    # a quarter alone (fiscal_quarter) is no date element without its year, which the values
    # then show (2025-Q2, found by the content)
    NameRule(
        "date element",
        UNDECLARED,
        terms=_terms(
            "month, week, day of year, doy, week of year, month of year, year month, yearmonth, "
            "year week, yearweek, mois, monat, mes, mese, maand, semaine, woche, kalenderwoche, "
            "semana, settimana"
        ),
        tails=("month", "week"),
        qualifiers=_terms(
            "age, gestational, gestation, pregnancy, fiscal, fy, per, duration, length, since, "
            "until, ago, elapsed"
        ),
        safe_harbor=True,
    ),
)

#: The names of a column of ages in years: under Safe Harbor its values over 89 are counted
#: (its verdict is not the name's but the count's).
AGE_RULE = NameRule(
    "age",
    CLEAR,
    terms=_terms("age, age years, alter, edad, leeftijd, idade, nenrei, 年齢"),
    qualifiers=_terms(
        "group, band, range, bracket, category, class, cat, grp, month, months, mo, week, weeks, "
        "day, days, hour, hours, gestational"
    ),
)


def match_name(
    name: str, rules: Iterable[NameRule] = NAME_RULES, *, safe_harbor: bool = False
) -> NameRule | None:
    """The rule the column ``name`` matches, the most severe if several do (the first of
    equal severity), or ``None``. Rules that apply only under Safe Harbor are skipped unless
    ``safe_harbor``."""
    read = _Name.of(name)
    best: NameRule | None = None
    for rule in rules:
        if rule.safe_harbor and not safe_harbor:
            continue
        if (best is None or _SEVERITY[rule.verdict] > _SEVERITY[best.verdict]) and rule._matches(
            read
        ):
            best = rule
    return best


# ----------------------------------------------------------------------------- options
_DEFAULT_REGIONS = ("US", "GB", "FR", "DE", "JP")


@dataclass(frozen=True)
class ScanOptions:
    """What the identifier scan is asked to do; checked when built, frozen.

    - ``policy``: ``"fail"`` (a column found an identifier or an undeclared quasi-identifier
      fails the release), ``"warn"`` (default: found columns are reported, the release
      passes) or ``"off"`` (no scan).
    - ``safe_harbor``: also apply the HIPAA Safe Harbor checks (dates and their elements,
      ages over 89, restricted ZIP3 areas, geographic units below a state, free text).
    - ``allow_columns``: columns the user says may be released as they are; never flagged.
    - ``quasi_identifiers``: the columns declared as quasi-identifiers (the assessment covers
      them); never flagged.
    - ``extra_names``: further identifier names (each a term as :class:`NameRule` reads it),
      for the user's own vocabulary (``matricule``, ``kdnr``).
    - ``sample_size``: at most this many distinct matched values of each verified kind are
      checked in Python per column (default 1000).
    - ``approximate``: let Spark estimate distinct counts (then uniqueness is a bound).
    - ``phone_regions``: the regions whose national phone formats count (ISO 3166 codes;
      numbers written with ``+`` or ``00`` count from any region).
    """

    policy: str = "warn"
    safe_harbor: bool = False
    allow_columns: tuple[str, ...] = ()
    quasi_identifiers: tuple[str, ...] = ()
    extra_names: tuple[str, ...] = ()
    sample_size: int = 1000
    approximate: bool = False
    phone_regions: tuple[str, ...] = _DEFAULT_REGIONS

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        if not isinstance(self.policy, str) or self.policy.strip().lower() not in POLICIES:
            raise InvalidInputError(
                f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}"
            )
        setattr_(self, "policy", self.policy.strip().lower())
        for name in ("safe_harbor", "approximate"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInputError(
                    f"{name} must be true or false, got {getattr(self, name)!r}"
                )
        for name in ("allow_columns", "quasi_identifiers", "extra_names", "phone_regions"):
            setattr_(self, name, _words(getattr(self, name), name))
        for term in self.extra_names:
            if not _compact(term):
                raise InvalidInputError(f"extra_names holds {term!r}, which has no letters")
        regions = tuple(r.strip().upper() for r in self.phone_regions)
        unknown = [r for r in regions if not known_region(r)]
        if unknown:
            raise InvalidInputError(
                f"phone_regions holds {unknown[0]!r}, which is no region libphonenumber knows "
                "(use ISO 3166-1 alpha-2 codes such as US, GB, FR)"
            )
        setattr_(self, "phone_regions", regions)
        size = self.sample_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidInputError(f"sample_size must be a whole number >= 1, got {size!r}")

    @property
    def name_rules(self) -> tuple[NameRule, ...]:
        """:data:`NAME_RULES`, and a rule of :attr:`extra_names` if any."""
        if not self.extra_names:
            return NAME_RULES
        return (*NAME_RULES, NameRule("extra_names", IDENTIFIER, terms=self.extra_names))

    def to_dict(self) -> dict[str, Any]:
        """The options as a JSON object (lists for the tuples)."""
        return {
            "policy": self.policy,
            "safe_harbor": self.safe_harbor,
            "allow_columns": list(self.allow_columns),
            "quasi_identifiers": list(self.quasi_identifiers),
            "extra_names": list(self.extra_names),
            "sample_size": self.sample_size,
            "approximate": self.approximate,
            "phone_regions": list(self.phone_regions),
        }

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], *, preset: Any = None) -> ScanOptions:
        """The options from loosely typed values, as templating or a configuration gives them
        (as :meth:`~reident_airflow.engine.options.AssessmentOptions.from_mapping` reads
        them): ``None``, ``""`` and ``"none"`` leave a field to its default; lists may be
        comma-separated strings; flags ``"true"``/``"false"``/...; ``sample_size`` a whole
        number or its text. Raises :class:`InvalidInputError` naming the key at fault.

        ``preset`` (a name of :data:`~reident_airflow.engine.presets.PRESETS`, or unset):
        its scan policy and Safe Harbor choice fill ``policy`` and ``safe_harbor`` when those
        are unset (docs/metrics.md §11); a value given wins."""
        unknown = sorted(set(values) - set(_CONVERTERS))
        if unknown:
            known = ", ".join(sorted(_CONVERTERS))
            raise InvalidInputError(
                f"unknown identifier scan option {unknown[0]!r}; known: {known}"
            )
        converted = {
            key: _CONVERTERS[key](value, key)
            for key, value in values.items()
            if not is_unset(value)
        }
        if not is_unset(preset):
            chosen = find_preset(preset)
            converted.setdefault("policy", chosen.scan_policy)
            converted.setdefault("safe_harbor", chosen.safe_harbor)
        return cls(**converted)


def _words(value: Any, name: str) -> tuple[str, ...]:
    """A list of names (columns, terms, regions): none blank; may be empty."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{name} must be a list of names, got {value!r}")
    items = tuple(value)
    if any(not isinstance(i, str) or not i.strip() for i in items):
        raise InvalidInputError(f"{name} holds a blank or non-text name")
    return items


def _listed(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, Sequence):
        return tuple(str(part).strip() for part in value)
    raise InvalidInputError(f"{key} must be a list of names, got {value!r}")


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{key} must be one of {', '.join(POLICIES)}, got {value!r}")
    return value


def _sample_size(value: Any, key: str) -> int:
    size = as_whole_number(value, key)
    if size < 1:
        raise InvalidInputError(f"{key} must be >= 1, got {size}")
    return size


_CONVERTERS: dict[str, Callable[[Any, str], Any]] = {
    "policy": _text,
    "safe_harbor": parse_flag,
    "allow_columns": _listed,
    "quasi_identifiers": _listed,
    "extra_names": _listed,
    "sample_size": _sample_size,
    "approximate": parse_flag,
    "phone_regions": _listed,
}


def _check_columns(options: ScanOptions, columns: Sequence[str]) -> None:
    """Each allowed or declared column is one of ``columns`` (a typo allows nothing)."""
    if len(set(columns)) != len(columns):
        raise InvalidInputError("the scanned table names a column twice")
    present = set(columns)
    for name in ("allow_columns", "quasi_identifiers"):
        for column in getattr(options, name):
            if column not in present:
                raise InvalidInputError(f"{name} names {column!r}, which the table lacks")


# -------------------------------------------------------------------------------- plan
def scan_plan(kinds: Mapping[str, str], options: ScanOptions) -> tuple[ColumnPlan, ...]:
    """What to count in each column of ``kinds`` (column -> one of :data:`COLUMN_KINDS`),
    in that order.

    - A string column: every content pattern but ``date`` (counted only under Safe Harbor
      or in a column named as a birth date), the verified kinds among them sampled; its
      values in restricted ZIP3 areas under Safe Harbor when named as a postcode, and its
      values that are numbers over 89 when named as an age (a CSV file's ages are text).
    - A number column (integer, decimal, float): its values over 89 under Safe Harbor when
      named as an age in years. Numbers are not matched against patterns: an identifier
      stored as a number is found by its name or its uniqueness.
    - Dates, timestamps, booleans, binary and other columns: nothing beyond the counts every
      profile has (a date column's values are exact dates by their type).
    - A column allowed or declared as a quasi-identifier: nothing either.
    """
    _check_columns(options, list(kinds))
    exempt = {*options.allow_columns, *options.quasi_identifiers}
    plans: list[ColumnPlan] = []
    for column, kind in kinds.items():
        if kind not in COLUMN_KINDS:
            raise InvalidInputError(
                f"column {column!r} has kind {kind!r}; known: {', '.join(COLUMN_KINDS)}"
            )
        if column in exempt:
            plans.append(ColumnPlan(column, kind))
            continue
        rule = match_name(column, options.name_rules, safe_harbor=options.safe_harbor)
        category = rule.category if rule is not None else None
        if kind == "string":
            dated = options.safe_harbor or category == "birth date"
            patterns = tuple(k for k in CONTENT_PATTERNS if dated or k != "date")
            plans.append(
                ColumnPlan(
                    column,
                    kind,
                    patterns=patterns,
                    sample=tuple(k for k in patterns if k in VERIFIED_KINDS),
                    sample_size=options.sample_size,
                    # an age read as text (every CSV column): its values that are numbers
                    over_89=options.safe_harbor and AGE_RULE.matches(column),
                    zip3=options.safe_harbor and category == "postcode",
                )
            )
        elif kind in _NUMBER_KINDS:
            aged = options.safe_harbor and AGE_RULE.matches(column)
            plans.append(ColumnPlan(column, kind, over_89=aged))
        else:
            plans.append(ColumnPlan(column, kind))
    return tuple(plans)


# ------------------------------------------------------------------------------ result
@dataclass(frozen=True)
class ContentShare:
    """How many non-null values of a column hold one content kind.

    ``matches`` is what the backend's pattern counted; ``count`` the values that hold a
    verified one (the matches themselves for the kinds not verified; estimated from the
    sample when the sample was not every matched value: ``estimated``; ``None`` when
    matches were not sampled); ``share`` is ``count`` over the column's non-null values."""

    kind: str
    matches: int
    count: int | None
    share: float | None
    estimated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "matches": self.matches,
            "count": self.count,
            "share": self.share,
            "estimated": self.estimated,
        }


@dataclass(frozen=True)
class ColumnVerdict:
    """The scan's verdict on one column, with its evidence as counts and shares only.

    ``verdict`` is one of :data:`VERDICTS`; ``reasons`` says why, in short phrases that hold
    no value; ``treated_as`` is ``"allowed"`` or ``"quasi-identifier"`` for a column the
    user allowed or declared (then the verdict is ``clear``), else ``None``. ``name_rule``
    is the category of the name rule the column matched. ``unique_share`` is the share of
    the non-null values held by one record each (a lower bound ``2 * distinct - values``
    when singletons were not counted: ``unique_estimated``). The other fields echo the
    profile: ``records``, ``nulls``, ``distinct``, ``singletons``, ``approximate``,
    ``over_89``, ``zip3``; ``content`` the counted patterns."""

    column: str
    kind: str
    verdict: str
    reasons: tuple[str, ...]
    treated_as: str | None
    name_rule: str | None
    records: int
    nulls: int
    distinct: int | None
    singletons: int | None
    approximate: bool
    unique_share: float | None
    unique_estimated: bool
    content: tuple[ContentShare, ...]
    over_89: int | None
    zip3: int | None

    @property
    def flagged(self) -> bool:
        """Whether the verdict is anything but ``clear``."""
        return self.verdict != CLEAR

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "kind": self.kind,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "treated_as": self.treated_as,
            "name_rule": self.name_rule,
            "records": self.records,
            "nulls": self.nulls,
            "distinct": self.distinct,
            "singletons": self.singletons,
            "approximate": self.approximate,
            "unique_share": self.unique_share,
            "unique_estimated": self.unique_estimated,
            "content": [share.to_dict() for share in self.content],
            "over_89": self.over_89,
            "zip3": self.zip3,
        }


@dataclass(frozen=True)
class IdentifierScan:
    """The identifier scan of a table: its options and a verdict per column, in the order
    the columns were profiled. Aggregates only: no value of the table."""

    options: ScanOptions
    columns: tuple[ColumnVerdict, ...]

    @property
    def flagged(self) -> tuple[str, ...]:
        """The columns whose verdict is not ``clear``."""
        return tuple(c.column for c in self.columns if c.flagged)

    @property
    def failing(self) -> tuple[str, ...]:
        """The columns whose verdict is one of :data:`FAILING_VERDICTS`."""
        return tuple(c.column for c in self.columns if c.verdict in FAILING_VERDICTS)

    @property
    def passed(self) -> bool:
        """False only under the ``"fail"`` policy with a failing column."""
        return self.options.policy != "fail" or not self.failing

    def to_dict(self) -> dict[str, Any]:
        """The scan as the JSON object of schema :data:`SCHEMA`; under Safe Harbor
        ``safe_harbor_categories`` says what the scan looked at of each of the 18 categories
        (:data:`~reident_airflow.engine.safe_harbor.SAFE_HARBOR_CATEGORIES`), else ``None``."""
        return {
            "schema": SCHEMA,
            "options": self.options.to_dict(),
            "thresholds": dict(SCAN_THRESHOLDS),
            "passed": self.passed,
            "flagged": list(self.flagged),
            "failing": list(self.failing),
            "columns": [c.to_dict() for c in self.columns],
            "safe_harbor_categories": (
                [c.to_dict() for c in SAFE_HARBOR_CATEGORIES] if self.options.safe_harbor else None
            ),
        }


# -------------------------------------------------------------------------------- scan
def verified_count(
    kind: str, profile: ColumnProfile, regions: Sequence[str]
) -> tuple[int | None, bool]:
    """How many of ``profile``'s values hold a verified ``kind``, and whether that is an
    estimate: every sampled value is searched for the kind's pattern and each candidate
    checked (:mod:`~reident_airflow.engine.identifier_checks`); a value counts with its
    records when one candidate passes. A complete sample gives the count; a partial one
    scales the backend's matches by the verified share of the sampled records. ``None``
    when there were matches but no sample. Kinds that are not verified count their
    matches. A kind of :data:`DERIVED_KINDS` is read from its source kind's matches and
    sample: ``ssn_digits`` counts the values where a candidate is nine bare digits shaped as
    an SSN and none is a national identifier."""
    source = DERIVED_KINDS.get(kind, kind)
    matches = profile.matches.get(source, 0)
    if source not in VERIFIED_KINDS:
        return matches, False
    if matches == 0:
        return 0, False
    sample = profile.samples.get(source, ())
    sampled = sum(records for _, records in sample)
    if sampled == 0:
        return None, False
    pattern = re.compile(CONTENT_PATTERNS[source])

    def holds(value: str) -> bool:
        if source != kind and _holds(source, value, pattern, regions):
            return False
        return _holds(kind, value, pattern, regions)

    verified = sum(records for value, records in sample if holds(value))
    if profile.complete.get(source, False):
        return verified, False
    return round(matches * verified / sampled), True


def _holds(kind: str, value: str, pattern: re.Pattern[str], regions: Sequence[str]) -> bool:
    for found in pattern.finditer(value):
        # each verified pattern opens with a boundary group and closes with one
        start, end = found.end(1), found.start(pattern.groups)
        candidate = value[start:end]
        if kind == "phone":
            if found.group(1) == "(":
                candidate = "(" + candidate
            if phone_number(candidate, regions):
                return True
        elif CHECKS[kind](candidate):
            return True
    return False


def scan(profiles: Iterable[ColumnProfile], options: ScanOptions) -> IdentifierScan:
    """The verdict on each profiled column (docs/identifier-scan.md: what each one means).

    Per column, every finding gives a verdict and a reason; the column gets the most
    severe (:data:`VERDICTS`), with all the reasons:

    - a column allowed or declared a quasi-identifier is ``clear``, treated as such;
      a column without a value (or a boolean one) is ``clear``;
    - its name matches a rule of :attr:`ScanOptions.name_rules`: that rule's verdict;
    - a string or integer column unique on at least ``unique_share`` of its values (with at
      least ``min_unique_values`` unique values), unless free text (street addresses are
      not): ``identifier``;
    - street addresses in at least ``content_share`` of a string column's values:
      ``identifier``;
    - verified e-mail, phone, card, IBAN, SSN, national-id or IP values, together at least
      ``content_share`` of a string column's values (phones, cards and national ids, read in
      the same runs of digits, count by the largest of their shares): ``identifier``; at least
      ``possible_share``, any in free text, or any e-mail address or IBAN at all:
      ``possible identifier``; URLs or nine bare digits shaped as SSNs (not added to the
      others) at ``content_share``, or any in free text: ``possible identifier``;
    - under Safe Harbor: a date or timestamp column, a name of a date element, or dates or
      date elements (a month, an ISO week, a quarter with its year) in ``content_share`` of a
      string column's values: ``quasi-identifier not declared`` (``possible identifier`` for
      any in free text); values over 89 in an age column or in a restricted ZIP3 area:
      ``quasi-identifier not declared``; free text: ``possible identifier``.

    The thresholds are :data:`SCAN_THRESHOLDS`. Raises :class:`InvalidInputError` when a column
    is profiled twice or an allowed or declared column was not profiled.
    """
    profiles = tuple(profiles)
    _check_columns(options, [p.column for p in profiles])
    rules = options.name_rules
    return IdentifierScan(options, tuple(_verdict(p, options, rules) for p in profiles))


class ColumnCounter(Protocol):
    """What the scan asks of where the data is: every source (files, frames, databases,
    Spark) is one. ``column_kinds`` names each column's kind (of :data:`COLUMN_KINDS`);
    ``profile`` counts what each plan asks, where the data is."""

    def column_kinds(self) -> dict[str, str]: ...
    def profile(
        self, plans: Sequence[ColumnPlan], *, approximate: bool = False
    ) -> tuple[ColumnProfile, ...]: ...


def scan_columns(counter: ColumnCounter, options: ScanOptions) -> IdentifierScan:
    """The scan of every column of ``counter`` (a source): its kinds, the plan they give
    (:func:`scan_plan`), their profiles counted where the data is, the verdicts
    (:func:`scan`). The one line every adapter runs; ``options.policy`` ``"off"`` is the
    adapter's to honour (it then does not call this)."""
    kinds = counter.column_kinds()
    options = as_spelled(options, list(kinds))
    plans = scan_plan(kinds, options)
    return scan(counter.profile(plans, approximate=options.approximate), options)


def as_spelled(options: ScanOptions, columns: Sequence[str]) -> ScanOptions:
    """``options`` with each allowed or declared column as the table spells it, read as the
    assessment reads QIs (docs/reading.md): as given first; only when no column has that
    name, the one column equal to it without surrounding spaces (``--qi "age, sex"``). A name
    matching none, or several, is left as given (:func:`scan_plan` names it)."""

    def spelled(name: str) -> str:
        if name in columns:
            return name
        loose = [c for c in columns if c.strip() == name.strip()]
        return loose[0] if len(loose) == 1 else name

    allow = tuple(spelled(c) for c in options.allow_columns)
    declared = tuple(spelled(c) for c in options.quasi_identifiers)
    if allow == options.allow_columns and declared == options.quasi_identifiers:
        return options
    return replace(options, allow_columns=allow, quasi_identifiers=declared)


def _verdict(
    profile: ColumnProfile, options: ScanOptions, rules: tuple[NameRule, ...]
) -> ColumnVerdict:
    values = max(profile.records - profile.nulls, 0)
    kinds = [*profile.matches, *(k for k, s in DERIVED_KINDS.items() if s in profile.matches)]
    content = tuple(_content(kind, profile, values, options) for kind in kinds)
    unique, unique_estimated = _unique(profile, values)
    findings: list[tuple[str, str]] = []
    treated_as: str | None = None
    rule: NameRule | None = None
    if profile.column in options.allow_columns:
        treated_as = "allowed"
        findings.append((CLEAR, "allowed"))
    elif profile.column in options.quasi_identifiers:
        treated_as = "quasi-identifier"
        findings.append((CLEAR, "declared quasi-identifier"))
    elif values == 0:
        findings.append((CLEAR, "no values"))
    elif profile.kind != "boolean":
        rule = match_name(profile.column, rules, safe_harbor=options.safe_harbor)
        if rule is not None:
            findings.append((rule.verdict, f"name: {rule.category}"))
        findings.extend(_unique_findings(profile, values, unique, unique_estimated))
        findings.extend(_content_findings(profile, content, values, options))
        findings.extend(_safe_harbor_findings(profile, options))
    verdict = max((v for v, _ in findings), key=_SEVERITY.__getitem__, default=CLEAR)
    return ColumnVerdict(
        column=profile.column,
        kind=profile.kind,
        verdict=verdict,
        reasons=tuple(reason for _, reason in findings),
        treated_as=treated_as,
        name_rule=rule.category if rule is not None else None,
        records=profile.records,
        nulls=profile.nulls,
        distinct=profile.distinct,
        singletons=profile.singletons,
        approximate=profile.approximate,
        unique_share=unique / values if unique is not None else None,
        unique_estimated=unique_estimated,
        content=content,
        over_89=profile.over_89,
        zip3=profile.zip3,
    )


def _content(kind: str, profile: ColumnProfile, values: int, options: ScanOptions) -> ContentShare:
    count, estimated = verified_count(kind, profile, options.phone_regions)
    if count is not None:
        count = min(count, values)
    share = count / values if count is not None and values else None
    matches = profile.matches[DERIVED_KINDS.get(kind, kind)]
    return ContentShare(kind, matches, count, share, estimated)


def _unique(profile: ColumnProfile, values: int) -> tuple[int | None, bool]:
    """The values held by one record each, and whether that is a lower bound from the
    distinct count (when singletons were not counted)."""
    if values == 0:
        return None, False
    if profile.singletons is not None:
        return profile.singletons, False
    if profile.distinct is None:
        return None, False
    # each value not unique is held by two records or more: singletons >= 2 d - n
    distinct = min(profile.distinct, values)
    return max(2 * distinct - values, 0), True


def _free_text(profile: ColumnProfile, content: tuple[ContentShare, ...], values: int) -> bool:
    shares = {c.kind: c for c in content}
    text = shares.get("text")
    if text is None or text.share is None:
        return False
    if profile.distinct is not None and profile.distinct < (
        SCAN_THRESHOLDS["free_text_distinct"] * values
    ):
        return False
    # a phone number written in four groups reads as four words, and so does an address
    phones, addresses = (
        s.share if (s := shares.get(k)) is not None and s.share is not None else 0.0
        for k in ("phone", "address")
    )
    return text.share - phones - addresses >= SCAN_THRESHOLDS["free_text_share"]


def _unique_findings(
    profile: ColumnProfile, values: int, unique: int | None, estimated: bool
) -> list[tuple[str, str]]:
    if unique is None or profile.kind not in _UNIQUE_KINDS:
        return []
    if (
        unique < SCAN_THRESHOLDS["unique_share"] * values
        or unique < SCAN_THRESHOLDS["min_unique_values"]
    ):
        return []
    # free text is unique too: a note says nothing by being unique; an address is no note
    text = profile.matches.get("text", 0) - profile.matches.get("address", 0)
    if profile.kind == "string" and text >= SCAN_THRESHOLDS["free_text_share"] * values:
        return []
    if estimated:
        return [(IDENTIFIER, f"unique: at least {unique} of {values} values (distinct count)")]
    return [(IDENTIFIER, f"unique: {unique} of {values} values")]


def _content_findings(
    profile: ColumnProfile, content: tuple[ContentShare, ...], values: int, options: ScanOptions
) -> list[tuple[str, str]]:
    if profile.kind != "string":
        return []
    free_text = _free_text(profile, content, values)
    where = " in free text" if free_text else ""

    def reason(share: ContentShare) -> str:
        sampled = " (estimated from a sample)" if share.estimated else ""
        return f"content: {_LABELS[share.kind]} in {share.count} of {values} values{where}{sampled}"

    found: list[tuple[str, str]] = []
    direct = [c for c in content if c.kind in _DIRECT and c.share]
    runs = max((c.share or 0.0 for c in direct if c.kind in _DIGIT_RUNS), default=0.0)
    total = runs + sum(c.share or 0.0 for c in direct if c.kind not in _DIGIT_RUNS)
    for share in direct:
        if total >= SCAN_THRESHOLDS["content_share"]:
            found.append((IDENTIFIER, reason(share)))
        elif free_text or share.kind in _UNMISTAKABLE or total >= SCAN_THRESHOLDS["possible_share"]:
            found.append((POSSIBLE, reason(share)))
    for share in content:
        if not share.share:
            continue
        crossed = share.share >= SCAN_THRESHOLDS["content_share"]
        if share.kind in ("url", *_WEAK) and (crossed or free_text):
            found.append((POSSIBLE, reason(share)))
        if share.kind == "address" and crossed:
            found.append((IDENTIFIER, reason(share)))
        if share.kind == "date" and options.safe_harbor and (crossed or free_text):
            found.append((UNDECLARED if crossed else POSSIBLE, reason(share) + " (safe harbor)"))
    if free_text and options.safe_harbor:
        found.append((POSSIBLE, "free text (safe harbor)"))
    return found


def _safe_harbor_findings(profile: ColumnProfile, options: ScanOptions) -> list[tuple[str, str]]:
    if not options.safe_harbor:
        return []
    found: list[tuple[str, str]] = []
    if profile.kind in _DATE_KINDS:
        found.append((UNDECLARED, "exact dates (safe harbor)"))
    if profile.over_89:
        found.append((UNDECLARED, f"ages over 89: {profile.over_89} values (safe harbor)"))
    if profile.zip3:
        found.append((UNDECLARED, f"restricted ZIP3 areas: {profile.zip3} values (safe harbor)"))
    return found

"""Make ``forms.csv`` (issue 38): identifiers as hospitals write them, and their look-alikes.

Run from the repository root: ``python tests/data/identifiers/make_forms.py``. The output is
deterministic (each column draws from its own ``random.Random`` seeded with its name) and is
committed beside this script; ``count_forms.py`` scans it at two revisions and prints the
table of ``README.md``.

``forms.csv`` has 50 records. Each column is one **form** (an identifier written one way,
which the scan must find) or one **trap** (a look-alike it must not flag), listed in
:data:`FORMS` with its country. The content columns are named ``f01``, ``f02``, ... so that
no name rule sees them; their 25 distinct values are each written twice (records ``i`` and
``i + 25``), so that no column is unique and a verdict says what the content says. Two
columns are different on purpose:

- ``f30`` (addresses) holds 50 different street addresses: a unique address column, which
  must not pass as free text;
- ``f31`` (clinical notes) holds 50 different notes of four words or more: unique free text,
  which must stay ``clear``.

The **name** forms are columns named as hospitals name them (``numero_securite_sociale``,
``Aufnahmenummer``, ...), and the name traps drug-name columns (``nombre_medicamento``,
``medikament_name``); their values are five labels written ten times each, which no pattern
and no uniqueness flags: their verdict is their name's.

How each form's values are made (every check digit computed here, forwards, from the
published algorithm; ``tests/engine/test_identifier_forms.py`` checks them all against
python-stdnum where it has the identifier):

- US SSN: area 001-899 but not 666, group 01-99, serial 0001-9999 (SSA), written with
  hyphens, spaces or nothing.
- Amex: ``34`` or ``37`` and 12 digits, then the Luhn check digit; printed 4-6-5.
- MBI: the CMS character classes per position, with or without hyphens after the 4th and
  7th characters.
- German phones: ``030/``, ``040/`` or ``089/`` and 7 or 8 digits, the first 2-9.
- NHS number: 9 digits (the first 4-7) and the Modulus 11 check digit (10 is skipped),
  written 3-3-4 with spaces.
- NIR: sex, year, month, department (``2A``/``2B`` for every fifth), commune, order and the
  key ``97 - n mod 97`` (2A read 19, 2B 18), written in its seven groups.
- BSN: 8 digits (the first 1-9) and the ninth making the 11-proof hold (skipped when it
  would be 10), written bare for even ``i`` and ``dddd.dd.ddd`` for odd.
- Steuer-ID: ten digits -- nine different ones with one of them twice, the first not 0 --
  and the ISO 7064 MOD 11,10 check digit, written ``dd ddd ddd ddd``.
- SIN: a first digit 1-7 or 9, 7 digits, the Luhn check digit, written ``ddd ddd ddd``.

The traps: NDC drug codes in their 4-4-2, 5-3-2 and 5-4-1 layouts; EAN-13 barcodes (GS1
prefixes 300-379 and 400-440, a right GS1 check digit); ISBN-13 with hyphens; lab values;
ISO dates; random numbers shaped as NHS numbers, NIRs, dotted BSNs, Steuer-IDs and SINs whose
check digit is wrong (the right one plus one, modulo 10; for the NIR key plus one, 97 -> 1);
two columns of nine bare digits no check tells from an SSN: US ZIP+4 codes written without
the hyphen (ZIP3 prefixes of Boston, New York, Chicago, Atlanta, San Francisco, then two and
four random digits) and 9-digit lab order codes (the first digit 1-9). Nine random digits pass
a BSN's 11-proof or a SIN's Luhn check about one time in five, so these two may read as a
possible identifier, never more.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
DISTINCT = 25
RECORDS = 2 * DISTINCT
_MBI_LETTERS = "ACDEFGHJKMNPQRTUVWXY"  # A-Z without S, L, O, I, B, Z (CMS)


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def _luhn_digit(body: str) -> str:
    """The digit that makes ``body`` + it Luhn-valid (doubling every second from the right
    of the full number, i.e. the first from the right of ``body``)."""
    total = 0
    for i, c in enumerate(reversed(body)):
        d = int(c) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return str((10 - total % 10) % 10)


def _wrong(digit: str) -> str:
    return str((int(digit) + 1) % 10)


# ---------------------------------------------------------------------------- forms
def ssn(layout: str) -> Callable[[random.Random, int], str]:
    def make(rng: random.Random, i: int) -> str:
        area = rng.choice([a for a in range(1, 900) if a != 666])
        sep = {"hyphen": "-", "space": " ", "bare": ""}[layout]
        return f"{area:03d}{sep}{rng.randint(1, 99):02d}{sep}{rng.randint(1, 9999):04d}"

    return make


def amex(rng: random.Random, i: int) -> str:
    body = rng.choice(("34", "37")) + _digits(rng, 12)
    number = body + _luhn_digit(body)
    return f"{number[:4]} {number[4:10]} {number[10:]}"


def mbi(rng: random.Random, i: int) -> str:
    a, n = _MBI_LETTERS, "0123456789"
    classes = ("123456789", a, a + n, n, a, a + n, n, a, a, n, n)
    text = "".join(rng.choice(c) for c in classes)
    return f"{text[:4]}-{text[4:7]}-{text[7:]}" if i % 2 else text


def german_phone(rng: random.Random, i: int) -> str:
    area = rng.choice(("030", "040", "089"))
    return f"{area}/{rng.randint(2, 9)}{_digits(rng, rng.choice((6, 7)))}"


def _nhs(rng: random.Random, wrong: bool) -> str:
    while True:
        body = str(rng.randint(4, 7)) + _digits(rng, 8)
        check = 11 - sum((10 - k) * int(c) for k, c in enumerate(body)) % 11
        if check == 10:
            continue
        digit = str(0 if check == 11 else check)
        number = body + (_wrong(digit) if wrong else digit)
        return f"{number[:3]} {number[3:6]} {number[6:]}"


def nhs(rng: random.Random, i: int) -> str:
    return _nhs(rng, False)


def nhs_trap(rng: random.Random, i: int) -> str:
    return _nhs(rng, True)


def _nir(rng: random.Random, i: int, wrong: bool) -> str:
    department = (
        ("2A", "2B")[i % 2]
        if i % 5 == 0
        else f"{rng.choice([d for d in range(1, 96) if d != 20]):02d}"
    )
    parts = [
        str(rng.randint(1, 2)),
        f"{rng.randint(0, 99):02d}",
        f"{rng.randint(1, 12):02d}",
        department,
        f"{rng.randint(1, 999):03d}",
        f"{rng.randint(1, 999):03d}",
    ]
    number = int("".join(parts).replace("2A", "19").replace("2B", "18"))
    key = 97 - number % 97
    if wrong:
        key = 1 if key == 97 else key + 1
    return " ".join([*parts, f"{key:02d}"])


def nir(rng: random.Random, i: int) -> str:
    return _nir(rng, i, False)


def nir_trap(rng: random.Random, i: int) -> str:
    return _nir(rng, i, True)


def _bsn(rng: random.Random, wrong: bool) -> str:
    while True:
        body = str(rng.randint(1, 9)) + _digits(rng, 7)
        last = sum((9 - k) * int(c) for k, c in enumerate(body)) % 11
        if last == 10:
            continue
        return body + (_wrong(str(last)) if wrong else str(last))


def bsn(rng: random.Random, i: int) -> str:
    number = _bsn(rng, False)
    return number if i % 2 == 0 else f"{number[:4]}.{number[4:6]}.{number[6:]}"


def bsn_trap(rng: random.Random, i: int) -> str:
    number = _bsn(rng, True)
    return f"{number[:4]}.{number[4:6]}.{number[6:]}"


def _tax_id(rng: random.Random, wrong: bool) -> str:
    while True:
        chosen = rng.sample("0123456789", 9)
        head = [*chosen, rng.choice(chosen)]
        rng.shuffle(head)
        if head[0] != "0":
            break
    product = 10
    for c in head:
        total = (int(c) + product) % 10 or 10
        product = total * 2 % 11
    check = str((11 - product) % 10)
    number = "".join(head) + (_wrong(check) if wrong else check)
    return f"{number[:2]} {number[2:5]} {number[5:8]} {number[8:]}"


def tax_id(rng: random.Random, i: int) -> str:
    return _tax_id(rng, False)


def tax_id_trap(rng: random.Random, i: int) -> str:
    return _tax_id(rng, True)


def _sin(rng: random.Random, wrong: bool) -> str:
    body = rng.choice("12345679") + _digits(rng, 7)
    check = _luhn_digit(body)
    number = body + (_wrong(check) if wrong else check)
    return f"{number[:3]} {number[3:6]} {number[6:]}"


def sin(rng: random.Random, i: int) -> str:
    return _sin(rng, False)


def sin_trap(rng: random.Random, i: int) -> str:
    return _sin(rng, True)


# ---------------------------------------------------------------------------- traps
def ndc(rng: random.Random, i: int) -> str:
    layout = ((4, 4, 2), (5, 3, 2), (5, 4, 1))[i % 3]
    return "-".join(_digits(rng, n) for n in layout)


def _gs1_digit(body: str) -> str:
    total = sum(int(c) * (3 if k % 2 == 0 else 1) for k, c in enumerate(reversed(body)))
    return str((10 - total % 10) % 10)


def ean13(rng: random.Random, i: int) -> str:
    prefix = str(rng.choice([*range(300, 380), *range(400, 441)]))
    body = prefix + _digits(rng, 9)
    return body + _gs1_digit(body)


def isbn13(rng: random.Random, i: int) -> str:
    group, publisher = rng.choice((("3", 2), ("2", 3), ("84", 2), ("1", 4), ("0", 3)))
    title = 9 - len(group) - publisher
    registrant = _digits(rng, publisher)
    item = _digits(rng, title)
    body = "978" + group + registrant + item
    return f"978-{group}-{registrant}-{item}-{_gs1_digit(body)}"


LABS = ("Na", "K", "Cl", "glucose", "creatinine", "HbA1c", "CRP", "Hb")


def lab_value(rng: random.Random, i: int) -> str:
    unit = ("mmol/L", "mg/dL", "%")[i % 3]
    return f"{LABS[i % len(LABS)]} {rng.randint(1, 400)}.{rng.randint(0, 9)} {unit}"


def zip9(rng: random.Random, i: int) -> str:
    prefix = rng.choice(("021", "100", "606", "303", "941"))
    return f"{prefix}{rng.randint(0, 99):02d}{rng.randint(1, 9999):04d}"


def lab_code(rng: random.Random, i: int) -> str:
    return str(rng.randint(100_000_000, 999_999_999))


def iso_date(rng: random.Random, i: int) -> str:
    return f"{rng.randint(1990, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


STREETS_EN = ("Main", "Oak", "Maple", "Cedar", "Elm", "Park", "Lake", "Hill")
SUFFIX_EN = ("Street", "St", "Avenue", "Road", "Lane", "Drive")
STREETS_FR = ("de la Paix", "Victor Hugo", "des Lilas", "du Moulin", "Pasteur")
STREETS_DE = ("Haupt", "Bahnhof", "Garten", "Schiller", "Goethe", "Linden")
STREETS_ES = ("Mayor", "Real", "Nueva", "del Sol", "de Alcala")
STREETS_IT = ("Roma", "Garibaldi", "Mazzini", "Dante", "Verdi")
STREETS_NL = ("Kerk", "Dorps", "School", "Molen", "Nieuwe")


def address(rng: random.Random, i: int) -> str:
    """A full address as a registration desk types it: street and number, postcode, town."""
    n = rng.randint(1, 250)
    code = rng.randint(1000, 99999)
    form = i % 6
    if form == 0:
        street = f"{n} {rng.choice(STREETS_EN)} {rng.choice(SUFFIX_EN)}"
        return f"{street}, Springfield, IL {code:05d}"
    if form == 1:
        street = f"{n} {rng.choice(('rue', 'avenue', 'boulevard'))} {rng.choice(STREETS_FR)}"
        return f"{street}, {code:05d} Paris"
    if form == 2:
        street = f"{rng.choice(STREETS_DE)}{rng.choice(('straße', 'strasse', 'weg', 'str.'))} {n}"
        return f"{street}, {code:05d} Berlin"
    if form == 3:
        return f"Calle {rng.choice(STREETS_ES)}, {n}, {code:05d} Madrid"
    if form == 4:
        return f"Via {rng.choice(STREETS_IT)} {n}, {code:05d} Roma"
    return f"{rng.choice(STREETS_NL)}straat {n}, {code % 9000 + 1000} AB Utrecht"


NOTE_START = ("patient reports", "seen today for", "follow up on", "complains of", "review of")
NOTE_WHAT = ("mild pain", "a dry cough", "poor sleep", "knee swelling", "low mood")
NOTE_END = ("for {n} days", "since {n} weeks", "after {n} doses", "twice a day", "at night")


def note(rng: random.Random, i: int) -> str:
    end = NOTE_END[i % 5].format(n=rng.randint(2, 9))
    return f"{NOTE_START[i // 10 % 5]} {NOTE_WHAT[i % 5]} {end} ({i})"


# ------------------------------------------------------------------------------ table
#: column -> (country, form, "form" or "trap", maker); the maker gets the column's own
#: random generator and the distinct value's index.
FORMS: dict[str, tuple[str, str, str, Callable[[random.Random, int], str]]] = {
    "f01": ("US", "SSN with hyphens 123-45-6789", "form", ssn("hyphen")),
    "f02": ("US", "SSN with spaces 123 45 6789", "form", ssn("space")),
    "f03": ("US", "SSN without separators 123456789", "form", ssn("bare")),
    "f04": ("US", "Amex card printed 4-6-5", "form", amex),
    "f05": ("US", "Medicare MBI 1EG4-TE5-MK73 / bare", "form", mbi),
    "f06": ("DE", "phone 030/32687484", "form", german_phone),
    "f07": ("DE", "Steuer-ID 86 095 742 719", "form", tax_id),
    "f08": ("GB", "NHS number 943 476 5919", "form", nhs),
    "f09": ("FR", "NIR 2 55 08 14 168 025 38 (incl. 2A/2B)", "form", nir),
    "f10": ("NL", "BSN 123456782 / 1234.56.782", "form", bsn),
    "f11": ("CA", "SIN 123 456 782", "form", sin),
    "f20": ("US", "NDC drug code 0002-3227-30", "trap", ndc),
    "f21": ("any", "EAN-13 barcode", "trap", ean13),
    "f22": ("any", "ISBN-13 978-3-16-148410-0", "trap", isbn13),
    "f23": ("any", "lab value (Na 139.0 mmol/L)", "trap", lab_value),
    "f24": ("any", "ISO date", "trap", iso_date),
    "f25": ("GB", "NHS-shaped, wrong check digit", "trap", nhs_trap),
    "f26": ("FR", "NIR-shaped, wrong key", "trap", nir_trap),
    "f27": ("NL", "BSN-shaped 1234.56.789, fails 11-proof", "trap", bsn_trap),
    "f28": ("DE", "Steuer-ID-shaped, wrong check digit", "trap", tax_id_trap),
    "f29": ("CA", "SIN-shaped, fails Luhn", "trap", sin_trap),
    "f30": ("any", "unique street-address column (6 languages)", "form", address),
    "f31": ("any", "unique clinical notes (free text)", "trap", note),
    "f32": ("US", "ZIP+4 without hyphen 021150001", "trap", zip9),
    "f33": ("any", "9-digit lab order code", "trap", lab_code),
}
#: The columns whose values are all different (50 each) rather than 25 written twice.
UNIQUE = frozenset({"f30", "f31"})

#: column name -> (country, "form" or "trap"): found, or not, by the name alone.
NAMES: dict[str, tuple[str, str]] = {
    "numero_securite_sociale": ("FR", "form"),
    "numero_historia_clinica": ("ES", "form"),
    "Versicherungsnummer": ("DE", "form"),
    "Aufnahmenummer": ("DE", "form"),
    "medicare_number": ("US", "form"),
    "medicaid_id": ("US", "form"),
    "nombre_medicamento": ("ES", "trap"),
    "medikament_name": ("DE", "trap"),
}
LABELS = ("alpha", "beta", "gamma", "delta", "epsilon")


def forms() -> list[dict[str, str]]:
    columns: dict[str, list[str]] = {}
    for column, (_, _, _, make) in FORMS.items():
        rng = random.Random(f"issue-38-{column}")
        if column in UNIQUE:
            columns[column] = [make(rng, i) for i in range(RECORDS)]
        else:
            distinct = [make(rng, i) for i in range(DISTINCT)]
            assert len(set(distinct)) == DISTINCT, column
            columns[column] = distinct + distinct
        assert len(set(columns[column])) == len(columns[column]) or column not in UNIQUE
    for name in NAMES:
        columns[name] = [LABELS[i % len(LABELS)] for i in range(RECORDS)]
    return [{c: values[i] for c, values in columns.items()} for i in range(RECORDS)]


def write(path: Path, rows: list[dict[str, str]]) -> None:
    """RFC 4180 CSV with LF line ends (as ``make_tables.py`` writes)."""
    names = list(rows[0])
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(names) + "\n")
        for row in rows:
            cells = []
            for name in names:
                value = row[name]
                if any(ch in value for ch in ',"\n\r') or value == "":
                    cells.append('"' + value.replace('"', '""') + '"')
                else:
                    cells.append(value)
            fh.write(",".join(cells) + "\n")


if __name__ == "__main__":
    write(HERE / "forms.csv", forms())

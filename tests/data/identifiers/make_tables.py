"""Make the identifier-scan test tables (issue 27): ``planted.csv`` and ``clean.csv``.

Run from the repository root: ``python tests/data/identifiers/make_tables.py``. The output is
deterministic (the row order comes from ``random.Random(27)``; every count below follows from
the construction, not from the shuffle) and committed beside this script. Every value is made
up: the e-mail domains are ``example.org``/``example.com`` (RFC 2606), the card number is the
published Visa test number ``4111 1111 1111 1111``, the phone numbers are in ranges reserved
for fiction (US 202-555-01xx, UK 020 7946 0xxx, France 01 99 00 xx xx).

``planted.csv`` -- 200 records, ``i`` = 0..199 before shuffling:

- ``ref``: a renamed record number, ``R`` + five digits, unique (200 distinct, 200 singletons).
- ``mrn``: ``MRN-`` + six digits, unique (200 distinct, 200 singletons).
- ``sex``: ``F`` for even ``i``, ``M`` for odd (2 distinct, no singleton).
- ``age``: ``97`` for ``i`` = 199, else ``20 + i % 60``: residues 0..18 four times, 19..59
  three times, so 61 distinct values, 1 singleton (97), 1 value over 89.
- ``zip``: ``03601`` twice, ``03609`` once, ``69201`` twice (5 records in restricted ZIP3
  areas 036 and 692), the other 195 records cycle through five unrestricted codes (39 each):
  8 distinct, 1 singleton (``03609``).
- ``phone``: four formats by ``i % 4`` -- ``+1 (202) 555-01NN``, ``202.555.01NN``,
  ``+44 20 7946 0NNN``, ``01 99 00 NN MM`` -- with ``NN`` from ``i // 4``: 200 distinct, 200
  singletons; every value matches ``phone``; the UK and French forms (100 records) have four
  or more space-separated parts, so they match ``text`` too; the dotted US form (50
  records) is 3-3-4 digits, an NHS number's layout, so it matches ``national_id`` (issue 38;
  the Modulus 11 check decides); no other pattern matches.
- ``ethnicity``: four labels, 50 records each (4 distinct, no singleton).
- ``note``: missing (an empty unquoted field) in 10 records; 4 records hold an e-mail address
  (4 different notes); 1 holds the card number (that note also matches ``phone``: 16 digits
  in groups); the other 185 cycle through 8 phrases without digits or ``@`` (each phrase 23
  or 24 times). So 190 non-null values, 13 distinct, 5 singletons; ``email`` 4, ``card`` 1,
  ``phone`` 1, ``text`` 190 (every note has four or more words), nothing else.

``clean.csv`` -- 100 different records, each written twice (200 records), so no value of any
column is held by one record; no value matches any pattern (notes have at most three words),
no age is over 89 and no ZIP code is in a restricted area. For ``j`` = 0..99:

- ``sex``: ``F``/``M`` by ``j % 2`` (2 distinct); ``age``: ``20 + j % 50`` (50 distinct);
- ``zip``: five unrestricted codes by ``j % 5`` (5 distinct);
- ``ethnicity``: four labels by ``j % 4`` (4 distinct); ``ward``: ``ward`` + a letter A..J by
  ``j % 10`` (10 distinct);
- ``note``: six short notes by ``j % 6`` (6 distinct).
"""

from __future__ import annotations

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent

PHRASES = (
    "patient seen for routine follow up",
    "no acute distress noted today",
    "referred to physiotherapy for knee pain",
    "discussed diet and exercise plan",
    "returned for review of medication",
    "blood pressure stable on current dose",
    "advised rest and plenty of fluids",
    "wound healing well without infection",
)
EMAIL_NOTES = (
    "contact jane.doe@example.org about results",
    "daughter asked for copy at mark_p@example.com please",
    "sent letter to j.smith+clinic@example.org today",
    "wife email is anna.k@mail.example.com if needed",
)
CARD_NOTE = "paid the fee with card 4111 1111 1111 1111 at desk"
ZIPS = ("10001", "20002", "30303", "60601", "94105")
ETHNICITY = ("group a", "group b", "group c", "group d")
SHORT_NOTES = ("routine visit", "follow up", "no complaints", "seen today", "stable", "discharged")


def _phone(i: int) -> str:
    n = i // 4
    form = i % 4
    if form == 0:
        return f"+1 (202) 555-01{n:02d}"
    if form == 1:
        return f"202.555.01{n:02d}"
    if form == 2:
        return f"+44 20 7946 0{n:03d}"
    return f"01 99 00 {n:02d} {(n * 7) % 100:02d}"


def _zip(i: int) -> str:
    special = {0: "03601", 1: "03601", 2: "03609", 3: "69201", 4: "69201"}
    return special.get(i, ZIPS[i % 5])


def _note(i: int) -> str | None:
    if i < 10:
        return None
    if i < 14:
        return EMAIL_NOTES[i - 10]
    if i == 14:
        return CARD_NOTE
    return PHRASES[(i - 15) % len(PHRASES)]


def planted() -> list[dict[str, str | None]]:
    rows = [
        {
            "ref": f"R{10007 + 13 * i:05d}",
            "mrn": f"MRN-{400000 + 97 * i}",
            "sex": "F" if i % 2 == 0 else "M",
            "age": "97" if i == 199 else str(20 + i % 60),
            "zip": _zip(i),
            "phone": _phone(i),
            "ethnicity": ETHNICITY[i % 4],
            "note": _note(i),
        }
        for i in range(200)
    ]
    random.Random(27).shuffle(rows)
    return rows


def clean() -> list[dict[str, str | None]]:
    distinct = [
        {
            "sex": "F" if j % 2 == 0 else "M",
            "age": str(20 + j % 50),
            "zip": ZIPS[j % 5],
            "ethnicity": ETHNICITY[j % 4],
            "ward": "ward " + "ABCDEFGHIJ"[j % 10],
            "note": SHORT_NOTES[j % 6],
        }
        for j in range(100)
    ]
    rows = distinct + [dict(r) for r in distinct]
    random.Random(27).shuffle(rows)
    return rows


def write(path: Path, rows: list[dict[str, str | None]]) -> None:
    """RFC 4180 CSV with LF line ends; a missing value is an empty unquoted field."""
    names = list(rows[0])
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(names) + "\n")
        for row in rows:
            cells = []
            for name in names:
                value = row[name]
                if value is None:
                    cells.append("")
                elif any(ch in value for ch in ',"\n\r') or value == "":
                    cells.append('"' + value.replace('"', '""') + '"')
                else:
                    cells.append(value)
            fh.write(",".join(cells) + "\n")


if __name__ == "__main__":
    write(HERE / "planted.csv", planted())
    write(HERE / "clean.csv", clean())

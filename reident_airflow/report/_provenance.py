"""The report's provenance: what was assessed (the input's fingerprint, per part) and the
sign-off block a reviewer fills in or finds pre-filled.

Both are plain text in the page: the fingerprint's values are locations, counts, hashes and
times -- never a record's values -- and the sign-off holds what the caller passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from reident_airflow.report._format import NA, count, esc
from reident_airflow.report._html import note
from reident_airflow.report._input_view import InputView
from reident_airflow.report._page import Part
from reident_airflow.report.signoff import DECISIONS, SignOff

__all__ = ["fingerprint_rows", "input_section", "sign_off_section"]

_KINDS = {"file": "file", "database": "database"}


def fingerprint_rows(fp: InputView) -> list[tuple[str, str, bool]]:
    """``(name, value, as code)`` of the fingerprint's fields that the result holds."""
    source = fp.location or NA
    if fp.dialect is not None and fp.kind == "database":
        source = f"{source} ({fp.dialect})"
    rows = [(_KINDS.get(fp.kind or "", "source"), source, True)]
    if fp.table is not None:
        rows.append(("table", fp.table, True))
    if fp.query_sha256 is not None:
        rows.append(("query (SHA-256 of its text)", fp.query_sha256, True))
    rows.append(("rows read", count(fp.rows) if fp.rows is not None else "not recorded", False))
    if fp.size_bytes is not None:
        rows.append(("size", f"{count(fp.size_bytes)} bytes", False))
    optional = (
        ("content SHA-256", fp.sha256, True),
        ("database snapshot", fp.snapshot, True),
        ("database clock", fp.server_time, False),
        ("fingerprint taken", fp.taken_at, False),
    )
    rows += [(name, value, code) for name, value, code in optional if value is not None]
    return rows


def _fingerprint(fp: InputView) -> str:
    cells = "".join(
        f"<dt>{esc(name)}</dt><dd>" + (f"<code>{esc(v)}</code>" if code else esc(v)) + "</dd>"
        for name, v, code in fingerprint_rows(fp)
    )
    out = f'<dl class="inputs">{cells}</dl>\n'
    if fp.sha256 is not None:
        return out + note(
            "The same SHA-256 computed on a file later proves it holds the bytes assessed here."
        )
    if fp.snapshot is not None:
        return out + note(
            "The snapshot and the clock say which committed data the database showed, to "
            "match against its logs or a backup; they do not prove a later read is the same."
        )
    return out + note(
        "A row count and a time identify the read only loosely: the source offers no "
        "content hash or snapshot identifier."
    )


def input_section(parts: Sequence[Part], titles: dict[str, str]) -> str:
    """The "What was assessed" card: each part's fingerprint, or a note that it has none."""
    shown = [p for p in parts if p.fingerprint is not None]
    if not parts:
        return ""
    if not shown:
        inner = note(
            "The result does not identify its input (no source fingerprint: hash, snapshot or "
            "row count): confirm which data was assessed before signing off."
        )
    else:
        inner = "".join(
            (f"<h3>{esc(titles[p.kind])}</h3>\n" if len(parts) > 1 else "")
            + _fingerprint(p.fingerprint)
            for p in shown
            if p.fingerprint is not None
        )
        missing = [titles[p.kind] for p in parts if p.fingerprint is None]
        if missing:
            inner += note(f"No fingerprint of the input of: {', '.join(missing)}.")
    return f'<section class="card" id="input"><h2>What was assessed</h2>\n{inner}</section>\n'


def _field(label: str, value: str | None, wide: bool = False) -> str:
    cls = "field wide" if wide else "field"
    return (
        f'<div class="{cls}"><span class="label">{esc(label)}</span>'
        f'<span class="line">{esc(value or "")}</span></div>'
    )


def sign_off_section(sign_off: SignOff | None, *, lead: str | None = None) -> str:
    """The sign-off block: reviewer, role, decision, conditions, date and a signature line;
    blank where ``sign_off`` (or a field of it) is ``None``. ``lead`` replaces the sentence
    above the fields (e.g. where and when the decision was recorded)."""
    s = sign_off or SignOff()
    boxes = "".join(
        f'<span class="choice"><span class="tick" aria-hidden="true">'
        f"{'☒' if s.decision == d else '☐'}</span> {esc(d)}"
        + (' <span class="sr">(chosen)</span>' if s.decision == d else "")
        + "</span>"
        for d in DECISIONS
    )
    fields = (
        _field("Reviewer", s.reviewer)
        + _field("Role", s.role)
        + f'<div class="field wide decision"><span class="label">Decision</span>'
        f'<span class="choices">{boxes}</span></div>'
        + _field("Conditions", s.conditions, wide=True)
        + _field("Date", None if s.date is None else s.date.isoformat())
        + _field("Signature", None)
    )
    if lead is None:
        lead = (
            "Filled in from the caller's values; the signature is given by hand."
            if sign_off is not None
            else "To be filled in by hand by the reviewer who signs the release off."
        )
    return (
        '<section class="card sign-off" id="sign-off"><h2>Sign-off</h2>\n'
        + note(lead)
        + f'<div class="fields">{fields}</div>\n</section>\n'
    )

"""The assessment's "Identifier scan" section: every column of the table, declared or not,
with the scan's verdict on it (docs/identifier-scan.md).

Read from :class:`~reident_airflow.report.view.IdentifierScanView`: the policy, whether the
HIPAA Safe Harbor checks ran, each flagged column's verdict with its reasons and its counts
and shares, and the clear columns by name, the allowed and declared ones marked. The scan
holds no value of the table, so neither does the section.
"""

from __future__ import annotations

from reident_airflow.report._format import NA, count, percent
from reident_airflow.report._html import dl, note, table
from reident_airflow.report._page import plural
from reident_airflow.report.view import IdentifierScanView, ScanColumnView

__all__ = ["identifier_scan_section"]

#: What each policy does with the verdicts, in the report's words.
_POLICIES = {
    "fail": "fail: an identifier or an undeclared quasi-identifier fails the release",
    "warn": "warn: flagged columns are reported, the release is not stopped by them",
    "off": "off: no scan",
}
#: How a clear column the user named is marked.
_TREATED = {"allowed": "allowed", "quasi-identifier": "declared quasi-identifier"}
#: The content kinds as the report names them.
_KINDS = {
    "email": "e-mail addresses",
    "url": "URLs",
    "ipv4": "IPv4 addresses",
    "ipv6": "IPv6 addresses",
    "phone": "phone numbers",
    "card": "card numbers",
    "iban": "IBANs",
    "us_ssn": "US SSNs",
    "national_id": "national identification numbers",
    "ssn_digits": "9-digit numbers shaped as US SSNs",
    "date": "dates or date elements",
    "text": "free text (4+ words)",
    "address": "street addresses",
}


def _values(column: ScanColumnView) -> int | float | None:
    """The column's non-null values, when the scan gives both counts."""
    if column.records is None or column.nulls is None:
        return None
    return max(column.records - column.nulls, 0)


def _uniqueness(column: ScanColumnView) -> str:
    if column.unique_share is None:
        return NA
    bound = "at least " if column.unique_estimated else ""
    return f"{bound}{percent(column.unique_share)} unique"


def _content(column: ScanColumnView) -> str:
    """The verified counts of the kinds found, with their shares of the non-null values."""
    found = []
    for share in column.content:
        if not share.count:
            continue
        label = _KINDS.get(share.kind, share.kind)
        estimated = ", estimated" if share.estimated else ""
        found.append(f"{label}: {count(share.count)} ({percent(share.share)}{estimated})")
    return "; ".join(found) or "none"


def _flagged_table(scan: IdentifierScanView) -> str:
    flagged = scan.flagged_columns
    rows = [
        [
            c.column,
            c.verdict or NA,
            "; ".join(c.reasons) or NA,
            count(_values(c)),
            count(c.distinct) + (" (approximate)" if c.approximate else ""),
            _uniqueness(c),
            _content(c),
        ]
        for c in flagged
    ]
    failing = "breach" if scan.policy == "fail" else "warned"
    classes = [failing if c.failing else "warned" for c in flagged]
    return table(
        ["column", "verdict", "why", "values", "distinct", "uniqueness", "content found"],
        rows,
        numeric=(3, 4),
        row_classes=classes,
    )


def _clear(scan: IdentifierScanView) -> str:
    clear = scan.clear_columns
    if not clear:
        return "none"
    listed = [
        f"{c.column} ({_TREATED[c.treated_as]})" if c.treated_as in _TREATED else c.column
        for c in clear
    ]
    return f"{len(clear)}: " + ", ".join(listed)


def identifier_scan_section(scan: IdentifierScanView) -> str:
    """The section's HTML (every text escaped by the helpers it is written with)."""
    flagged, failing = scan.flagged_columns, [c for c in scan.columns if c.failing]
    n = len(scan.columns)
    if flagged:
        found = (
            f"{len(flagged)} of {n} {plural(n, 'column')} flagged, "
            f"{len(failing)} with a failing verdict"
        )
    else:
        found = f"all {n} {plural(n, 'column')} clear"
    safe_harbor = {True: "yes", False: "no", None: NA}[scan.safe_harbor]
    if scan.safe_harbor and scan.safe_harbor_categories:
        safe_harbor = "yes: " + _coverage(scan)
    items = [
        ("policy", _POLICIES.get(scan.policy or "", scan.policy or NA)),
        ("HIPAA Safe Harbor checks", safe_harbor),
        ("result", found),
        ("clear columns", _clear(scan)),
    ]
    if scan.allow_columns:
        items.append(("allowed columns", ", ".join(scan.allow_columns)))
    out = note(
        "Every column of the table was checked, declared or not, for what identifies a "
        "person on its own: a unique key, an identifier-like name, values shaped as e-mail "
        "addresses, phone numbers, card or account numbers, network addresses or exact "
        "dates. The evidence is counts and shares only."
    ) + dl(items)
    if flagged:
        out += _table_intro(scan) + _flagged_table(scan)
    if scan.safe_harbor and scan.safe_harbor_categories:
        out += _categories(scan)
    return out


def _coverage(scan: IdentifierScanView) -> str:
    """How many of the Safe Harbor categories the scan checked, partly checked, did not
    check: ``7 of 18 categories checked, 9 partly checked, 2 not checked``."""
    statuses = [c.status for c in scan.safe_harbor_categories]
    n = len(statuses)
    parts = [f"{statuses.count(s)} {s}" for s in _STATUSES if statuses.count(s)]
    parts[0] = parts[0].replace(" ", f" of {n} {'category' if n == 1 else 'categories'} ", 1)
    return ", ".join(parts)


#: The statuses of a Safe Harbor category, as the engine writes them.
_STATUSES = ("checked", "partly checked", "not checked")


def _categories(scan: IdentifierScanView) -> str:
    """The 18 Safe Harbor identifier categories: what the scan looked at of each. A verdict
    on the columns is no verdict on a category the scan did not look at, so none is called
    passed."""
    rows = [
        [
            f"({c.paragraph})" if c.paragraph else NA,
            c.category or NA,
            c.status or NA,
            ", ".join(c.checked_by) or "nothing",
            c.unseen or "",
        ]
        for c in scan.safe_harbor_categories
    ]
    classes = ["warned" if c.status != "checked" else "" for c in scan.safe_harbor_categories]
    return note(
        "The HIPAA Safe Harbor identifier categories (45 CFR 164.514(b)(2)(i)): what the scan "
        "looked at of each. A clear column says nothing of a category marked partly checked "
        "or not checked: those need a person's review before a Safe Harbor release."
    ) + table(
        ["§", "category", "status", "checked by", "not seen by the scan"],
        rows,
        row_classes=classes,
    )


def _table_intro(scan: IdentifierScanView) -> str:
    """The line above the flagged columns: what their verdicts do under the policy."""
    if scan.policy == "fail":
        return note(
            "Under the fail policy an identifier or an undeclared quasi-identifier stops the "
            "release; a possible identifier is reported. Drop or transform the column, "
            "declare it as a quasi-identifier, or allow it (allow_columns) if it is safe."
        )
    return note(
        "Flagged columns are reported; under the fail policy an identifier or an undeclared "
        "quasi-identifier would stop the release. Drop or transform the column, declare it as "
        "a quasi-identifier, or allow it (allow_columns) if it is safe."
    )

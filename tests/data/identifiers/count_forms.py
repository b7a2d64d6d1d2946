"""Scan ``forms.csv`` at two revisions and print the recall and false-positive table (issue 38).

Run from the repository root, with the project's venv::

    python tests/data/identifiers/count_forms.py --before df9565c
    python tests/data/identifiers/count_forms.py --before df9565c --after HEAD

Each revision's ``reident_airflow`` is taken from ``git archive`` into a temporary directory
(``--after`` defaults to the working tree as it is) and runs, in its own process, the scan a
user gets by default on this very file: ``scan_columns(FileSource("forms.csv"),
ScanOptions())``. Per column the script keeps the verdict and, per content kind that names
a person (every kind but URLs, dates and free text), the verified count of records; a
column's "detected" records are the largest of those counts (a lower bound on the records
holding any of them; in these columns each value is written one way, so one kind finds
them all), or the national identifiers and the 9-digit SSN-shaped numbers added (disjoint:
``ssn_digits`` counts only the values that hold no national identifier). For a form that
is its recall; for a trap, its false positives. The name rows read the verdict only: their
values are five labels that nothing flags.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))

from make_forms import FORMS, NAMES, RECORDS  # noqa: E402

#: Run inside the revision's tree: the scan's JSON, reduced to what the table needs.
_PROBE = """
import json, sys
from reident_airflow.engine.identifiers import ScanOptions, scan_columns
from reident_airflow.sources.files import FileSource
with FileSource(sys.argv[1]) as source:
    result = scan_columns(source, ScanOptions()).to_dict()
out = {}
for c in result["columns"]:
    found = [s["count"] or 0 for s in c["content"] if s["kind"] not in ("url", "date", "text")]
    # nine bare digits: the values with no national identifier (ssn_digits), and those with one
    counts = {s["kind"]: s["count"] or 0 for s in c["content"]}
    found.append(counts.get("national_id", 0) + counts.get("ssn_digits", 0))
    out[c["column"]] = {"verdict": c["verdict"], "detected": max(found, default=0)}
print(json.dumps(out))
"""


def scan_at(revision: str | None) -> dict[str, Any]:
    """The reduced scan of forms.csv by the code of ``revision`` (``None``: the working
    tree)."""
    forms = str(HERE / "forms.csv")
    if revision is None:
        return _probe(ROOT, forms)
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision, "reident_airflow"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        return _probe(Path(tmp), forms)


def _probe(tree: Path, forms: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, forms],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def table(before: dict[str, Any], after: dict[str, Any], labels: tuple[str, str]) -> str:
    b, a = labels
    lines = [
        f"| country | form | planted | detected {b} | detected {a} | verdict {b} | verdict {a} |",
        "| --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    traps = [
        f"| country | trap | planted | false positives {b} | false positives {a} "
        f"| verdict {b} | verdict {a} |",
        "| --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for column, (country, form, role, _) in FORMS.items():
        x, y = before[column], after[column]
        row = (
            f"| {country} | {form} (`{column}`) | {RECORDS} | {x['detected']} | "
            f"{y['detected']} | {x['verdict']} | {y['verdict']} |"
        )
        (lines if role == "form" else traps).append(row)
    names = [
        f"| country | column name | should be | verdict {b} | verdict {a} |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, (country, role) in NAMES.items():
        should = "an identifier" if role == "form" else "clear"
        x, y = before[name], after[name]
        names.append(f"| {country} | `{name}` | {should} | {x['verdict']} | {y['verdict']} |")
    return "\n".join([*lines, "", *traps, "", *names])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a git revision (e.g. df9565c)")
    parser.add_argument("--after", default=None, help="a git revision (default: working tree)")
    args = parser.parse_args(argv)
    before = scan_at(args.before)
    after = scan_at(args.after)
    print(table(before, after, (f"before ({args.before})", f"after ({args.after or 'now'})")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

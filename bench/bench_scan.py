"""Issue 27's cost acceptance: what the identifier scan adds to ``reident assess --no-ranking``.

From the repository root, with the project venv set up (every contender runs in it: our
code and DuckDB's bare SQL use the same DuckDB)::

    .venv/bin/python bench/bench_scan.py                    # shapes S1, S2, S3, Parquet and CSV
    .venv/bin/python bench/bench_scan.py --shapes S1P,S2P   # a subset

What it does (the shapes, the contenders and the target: ``bench/README.md``,
"bench_scan.py"):

1. generates the data files it needs if absent (seeded, batch by batch, into
   ``bench/data/scan_<family>_<rows>_v<g>.<ext>``);
2. for each shape: reads the file once (page cache warm for every contender alike), then
   runs every contender as a **whole process**, ``--repeat`` rounds, each round every
   contender once, the order rotated by one each round; keeps each contender's best wall
   time (and the CPU time of that run);
3. prints a markdown table: what the scan adds to the assessment alone (the target: at most
   +30 % on the 10M-row shapes), and the floors' times.

Contenders:

- ``assess``: ``reident assess FILE --qi <5 QIs> --no-ranking --json /dev/null``;
- ``assess+scan``: ``reident assess ... --scan warn`` when the CLI has the flag, else a
  driver (``SCAN_DRIVER``) doing what it does: the same assessment through the CLI's own
  ``main``, then ``scan_columns(FileSource(FILE), ScanOptions(quasi_identifiers=QIs))``.
  It prints the flagged columns and a digest of the scan's JSON (compare across revisions);
- ``floor``: DuckDB's own SQL for the same exact counts, as a ``python -c``: per column its
  non-null distinct values and singletons, and per content pattern the scan counts on a
  string column that is not a QI, the values matching it (records and distinct values);
  one statement per column (a CSV file is parsed once into a temporary table first). No
  samples and no verification: the least the scan's counts can cost in DuckDB.
- ``floor-counts``: the same without the regular expressions.

Exit code: 0 when the scan adds at most 30 % on every 10M-row shape, 1 when not, 2 when a
contender could not run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_grouping import (  # noqa: E402
    Outcome,
    _ages,
    _free_texts,
    _rng,
    _sex,
    _strings,
    _write_csv,
    _write_parquet,
    _years,
    _zipf,
    run_once,
    warm_page_cache,
)

ROOT = HERE.parent
DATA = HERE / "data"
PYTHON = ROOT / ".venv" / "bin" / "python"
if not PYTHON.exists():  # a worktree shares its repository's venv
    PYTHON = Path(sys.executable)
REIDENT = PYTHON.parent / "reident"
# this checkout's code, also where the venv's ``reident`` was installed from another one
os.environ["PYTHONPATH"] = str(ROOT)

REPEAT = 3
TIMEOUT = 900.0
BATCH_ROWS = 1_000_000
MAX_SCAN_SHARE = 0.30  # the scan adds at most 30 % to the assessment (10M-row shapes)

VERSION = 1
SEED = 27_0001
QIS = ("age", "sex", "region", "year", "chapter")


# ------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------
@functools.cache
def _codes() -> list[str]:
    """300 procedure codes (``K35.8``)."""
    return [f"{chr(65 + i % 26)}{10 + i // 26:02d}.{i % 10}" for i in range(300)]


COMMENTS = (
    "no complications",
    "follow-up in 6 weeks",
    "transferred to ward",
    "discharged home",
    "readmitted",
    "seen by specialist",
    "awaiting results",
    "referred to physiotherapy",
    "medication adjusted",
    "patient declined treatment",
    "wound healing well",
    "pain controlled",
)


def _clean_batch(batch: int, start: int, n: int) -> Any:
    """S1: 5 QIs as bench_grouping's shape A, then what a clean release holds besides: an
    admission date, an amount, a procedure code (300 values), a short comment (12 values,
    10 % missing)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = _rng(SEED, batch)
    age = _ages(rng, n)
    regions = [f"R{i:02d}" for i in np.random.default_rng(SEED).permutation(96) + 1]
    base = 1.0 / np.arange(1, 23) ** 1.1
    band = np.minimum(age // 20, 4)
    chapter = np.empty(n, dtype=np.int64)
    for b in range(5):
        rows = np.flatnonzero(band == b)
        p = np.roll(base, 4 * b)
        chapter[rows] = rng.choice(22, size=rows.size, p=p / p.sum())
    days = rng.integers(0, 10 * 365, size=n)
    comment_idx = _zipf(rng, len(COMMENTS), n, 1.0)
    comment = _strings(list(COMMENTS), comment_idx)
    comment = pc.if_else(pa.array(rng.random(n) < 0.1), pa.scalar(None, pa.string()), comment)
    return pa.table(
        {
            "age": age,
            "sex": _sex(rng, n),
            "region": _strings(regions, _zipf(rng, 96, n, 0.8)),
            "year": _years(rng, n),
            "chapter": _strings([f"CH{i:02d}" for i in range(1, 23)], chapter),
            "admitted": pa.array(np.datetime64("2015-01-01") + days.astype("timedelta64[D]")),
            "amount": np.round(rng.lognormal(5.0, 1.0, size=n), 2),
            "code": _strings(_codes(), _zipf(rng, 300, n, 0.9)),
            "comment": comment,
        }
    )


def _leaky_batch(batch: int, start: int, n: int) -> Any:
    """S2: S1 and what a careless extract leaves in: a forgotten record number (unique), an
    e-mail address (unique), a phone number (mixed formats, ~90 % distinct) and a note (free
    text from bench_grouping's 500,000 complaints, 2 % with a phone number appended)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = _clean_batch(batch, start, n)
    rng = _rng(SEED + 1, batch)
    ids = start + rng.permutation(n)
    ref = pc.binary_join_element_wise("MRN", pa.array(ids + 10_000_000).cast(pa.string()), "")
    firsts = ["anna", "ben", "carla", "dmitri", "eva", "farid", "gita", "hugo", "ines", "jon"]
    first = _strings(firsts, rng.integers(0, len(firsts), size=n))
    email = pc.binary_join_element_wise(
        first, ".", pa.array(ids).cast(pa.string()), "@example.org", ""
    )
    local = rng.integers(0, 10_000_000, size=n)
    fmt = rng.integers(0, 3, size=n)
    digits = pa.array(local).cast(pa.string())
    padded = pc.utf8_lpad(digits, 7, "0")
    area = pa.array(rng.integers(200, 990, size=n)).cast(pa.string())
    us = pc.binary_join_element_wise(
        "(",
        area,
        ") ",
        pc.utf8_slice_codeunits(padded, 0, 3),
        "-",
        pc.utf8_slice_codeunits(padded, 3, 7),
        "",
    )
    uk = pc.binary_join_element_wise(
        "+44 20 ",
        pc.utf8_slice_codeunits(padded, 0, 3),
        " ",
        pc.utf8_slice_codeunits(padded, 3, 7),
        "",
    )
    fr = pc.binary_join_element_wise("01", padded, "")
    phone = pc.if_else(pa.array(fmt == 0), us, pc.if_else(pa.array(fmt == 1), uk, fr))
    texts = _free_texts()
    note = _strings(texts, _zipf(rng, len(texts), n, 1.0))
    with_phone = pc.binary_join_element_wise(note, "; call back on ", uk, "")
    note = pc.if_else(pa.array(rng.random(n) < 0.02), with_phone, note)
    for name, column in (("ref", ref), ("email", email), ("phone", phone), ("note", note)):
        table = table.append_column(name, column)
    return table


@dataclass(frozen=True)
class Shape:
    name: str
    family: str  # S1 (clean) or S2 (leaky)
    rows: int
    fmt: str  # parquet or csv

    @property
    def path(self) -> Path:
        return DATA / f"scan_{self.family}_{self.rows}_v{VERSION}.{self.fmt}"

    @property
    def about(self) -> str:
        kind = "5 QIs + 4 clean columns" if self.family == "S1" else "S1 + ref, email, phone, note"
        return f"{self.rows / 1e6:g}M rows, {kind}, {self.fmt}"

    def generate(self) -> None:
        DATA.mkdir(parents=True, exist_ok=True)
        make = _clean_batch if self.family == "S1" else _leaky_batch
        batches = (
            make(b, s, min(BATCH_ROWS, self.rows - s))
            for b, s in enumerate(range(0, self.rows, BATCH_ROWS))
        )
        if self.fmt == "parquet":
            _write_parquet(self.path, batches)
        else:  # a missing value is an empty unquoted field (docs/reading.md)
            _write_csv(self.path, (_empty_for_null(t) for t in batches))


def _empty_for_null(table: Any) -> Any:
    import pyarrow as pa

    for i, column in enumerate(table.columns):
        if column.null_count:
            text = column.cast(pa.string()).fill_null("")
            table = table.set_column(i, table.field(i).name, text)
    return table


SHAPES = {
    s.name: s
    for s in (
        Shape("S1P", "S1", 10_000_000, "parquet"),
        Shape("S2P", "S2", 10_000_000, "parquet"),
        Shape("S3P", "S2", 1_000_000, "parquet"),
        Shape("S1C", "S1", 10_000_000, "csv"),
        Shape("S2C", "S2", 10_000_000, "csv"),
        Shape("S3C", "S2", 1_000_000, "csv"),
    )
}


# ------------------------------------------------------------------------------------------
# Contenders
# ------------------------------------------------------------------------------------------
SCAN_DRIVER = """\
import hashlib, json, sys
from reident_airflow.cli import main
path, qis = sys.argv[1], sys.argv[2]
code = main(["assess", path, "--qi", qis, "--no-ranking", "--json", "/dev/null"])
from reident_airflow.engine.identifiers import ScanOptions, scan_columns
from reident_airflow.sources.files import FileSource
found = scan_columns(FileSource(path), ScanOptions(quasi_identifiers=tuple(qis.split(","))))
digest = hashlib.sha256(json.dumps(found.to_dict(), sort_keys=True).encode()).hexdigest()
print("flagged:", ",".join(found.flagged) or "-", "digest:", digest[:12])
sys.exit(code)
"""

FLOOR = """\
import sys
import duckdb
from reident_airflow.engine.identifiers import CONTENT_PATTERNS
path, qis, mode = sys.argv[1], set(sys.argv[2].split(",")), sys.argv[3]
con = duckdb.connect()
if path.endswith(".csv"):
    con.execute("CREATE TEMP TABLE t AS SELECT * FROM read_csv(?, all_varchar = true)", [path])
    rel = "t"
else:
    rel = "read_parquet('" + path.replace("'", "''") + "')"
schema = con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
patterns = [p for k, p in CONTENT_PATTERNS.items() if k != "date"] if mode == "full" else []
total = 0
for name, kind, *_ in schema:
    col = '"' + name.replace('"', '""') + '"'
    aggs = ["count(*) FILTER (WHERE v IS NOT NULL)",
            "count(*) FILTER (WHERE v IS NOT NULL AND n = 1)"]
    if kind == "VARCHAR" and name not in qis:
        for p in patterns:
            lit = "'" + p.replace("'", "''") + "'"
            aggs += [f"sum(n) FILTER (WHERE regexp_matches(v, {lit}))",
                     f"count(*) FILTER (WHERE regexp_matches(v, {lit}))"]
    sql = f"SELECT {', '.join(aggs)} FROM (SELECT {col} AS v, count(*) AS n FROM {rel} GROUP BY 1)"
    total += sum(int(x or 0) for x in con.execute(sql).fetchone())
print("checksum:", total)
"""


def _cli_has_scan() -> bool:
    try:
        out = subprocess.run(
            [str(REIDENT), "assess", "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--scan" in out


def contenders(shape: Shape, cli_scan: bool) -> list[tuple[str, list[str]]]:
    path, qis = str(shape.path), ",".join(QIS)
    py = str(PYTHON)
    assess = [str(REIDENT), "assess", path, "--qi", qis, "--no-ranking", "--json", "/dev/null"]
    scan = [*assess, "--scan", "warn"] if cli_scan else [py, "-c", SCAN_DRIVER, path, qis]
    return [
        ("assess", assess),
        ("assess+scan", scan),
        ("floor", [py, "-c", FLOOR, path, qis, "full"]),
        ("floor-counts", [py, "-c", FLOOR, path, qis, "counts"]),
    ]


@dataclass
class _Contender:  # what bench_grouping's Outcome reads
    name: str
    argv: list[str]
    label: str = ""
    unavailable: str | None = None
    peer: bool = False


def run_shape(shape: Shape, cli_scan: bool, repeat: int) -> dict[str, Outcome]:
    outcomes = [Outcome(_Contender(name, argv)) for name, argv in contenders(shape, cli_scan)]  # type: ignore[arg-type]
    for r in range(repeat):
        k = r % len(outcomes)
        for o in outcomes[k:] + outcomes[:k]:
            run = run_once(o.contender.argv, TIMEOUT)  # type: ignore[arg-type]
            o.runs.append(run)
            state = "ok" if run.ok else f"FAILED ({run.rc}: {run.stderr_tail})"
            print(
                f"  round {r + 1}: {o.contender.name:<12} {run.wall:8.3f} s "
                f"(cpu {run.cpu:7.3f} s)  load {run.load:4.1f}  {state}  {run.stdout_tail[-60:]}",
                flush=True,
            )
    return {o.contender.name: o for o in outcomes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repeat", type=int, default=REPEAT)
    args = parser.parse_args(argv)
    shapes = [SHAPES[s.strip()] for s in args.shapes.split(",")]
    cli_scan = _cli_has_scan()
    print(
        f"# bench_scan.py, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; scan through "
        f"{'reident assess --scan' if cli_scan else 'the driver script'}",
        flush=True,
    )
    for shape in shapes:
        if not shape.path.exists():
            print(f"generating {shape.path.name} ...", flush=True)
            shape.generate()
    rows = []
    code = 0
    for shape in shapes:
        print(
            f"\n## {shape.name}: {shape.about} (page cache warmed in "
            f"{warm_page_cache(shape.path):.2f} s)",
            flush=True,
        )
        by = run_shape(shape, cli_scan, args.repeat)
        if any(o.failed for o in by.values()):
            code = 2
            rows.append(f"| {shape.name} | {shape.about} | a contender failed | | | |")
            continue
        base, scan = by["assess"].best, by["assess+scan"].best
        floor, counts = by["floor"].best, by["floor-counts"].best
        assert base and scan and floor and counts
        share = (scan - base) / base
        if shape.rows >= 10_000_000 and share > MAX_SCAN_SHARE:
            code = max(code, 1)
        rows.append(
            f"| {shape.name} | {shape.about} | {base:.2f} ({by['assess'].best_cpu:.2f}) | "
            f"{scan:.2f} ({by['assess+scan'].best_cpu:.2f}) | {share:+.0%} | "
            f"{floor:.2f} ({by['floor'].best_cpu:.2f}) | {counts:.2f} |"
        )
    print(
        "\n| shape | data | assess s (cpu) | assess+scan s (cpu) | scan adds | floor s (cpu) "
        "| floor counts only s |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}; exit code {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())

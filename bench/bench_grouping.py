"""Issue 15 acceptance ("Speed", "Memory"): ``reident assess`` against bare class tables.

Run ``bash bench/setup.sh`` once (DuckDB, polars, pandas into ``bench/.venv``), then, from
the repository root::

    .venv/bin/python bench/bench_grouping.py                 # shapes A1M, A, B, C, D, F
    .venv/bin/python bench/bench_grouping.py --shapes A1M,D  # a subset; E (50M rows) only
                                                             # when named

What it does (the shapes, the ratios and the targets: ``bench/README.md``, "bench_grouping.py"):

1. generates the data files it needs if absent (seeded numpy generators, written batch by
   batch with pyarrow into ``bench/data/grouping_<shape>_<rows>_v<g>.<ext>``, so that the
   generator's memory stays at one batch whatever the size; ``--skip-generate`` never
   writes, and a missing file then counts as a contender that could not run);
2. times ``reident --help``;
3. for each shape: reads the file once (page cache warm for every contender alike), then
   runs every contender as a **whole process** (interpreter start and imports included, as
   a user runs it), ``--repeat`` rounds, each round every contender once, the order rotated
   by one each round; keeps each contender's best wall time and its peak RSS (the highest
   ``ru_maxrss`` that ``os.wait4`` reports for the process over the rounds);
4. checks that the three peers counted the same classes and records;
5. prints a markdown table per shape and one of the targets, and writes every run's raw
   figures to ``bench/data/grouping_results_<UTC time>.json``.

Contenders: DuckDB (``SELECT qis, count(*) ... GROUP BY ALL`` fetched to Arrow), polars
(``scan_*(file).group_by(qis).len().collect()``) and pandas (read the QIs, then
``groupby(qis, dropna=False).size()``), each a ``python -c`` in ``bench/.venv``; ``reident
assess FILE --qi ... --region usa --json /dev/null`` with ``--no-ranking`` (the verdict)
and without (the default ranking), and, on shape E, ``--memory-limit 1GB --no-ranking``.
A flag that ``reident assess --help`` does not list is reported as "flag not available".

Exit code: 0 when every target holds, 1 when one is missed, 2 when a contender could not
run (a non-zero exit, a timeout, a missing flag or file, peers that disagree), always after
printing everything.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
PEER_PYTHON = HERE / ".venv" / "bin" / "python"
REIDENT = ROOT / ".venv" / "bin" / "reident"

REPEAT = 3
TIMEOUT = 900.0  # seconds per contender run
BATCH_ROWS = 1_000_000  # rows generated (and written as one row group) at a time

# Targets of issue 15.
MAX_VERDICT_RATIO = 1.0  # verdict time / min(DuckDB, polars)
MAX_RANKING_RATIO = 1.5  # default-ranking time / min(DuckDB, polars)
MAX_RSS_OVER_DUCKDB = 200e6  # bytes: reident's peak RSS <= DuckDB's + 200 MB
MAX_LIMITED_RSS = 1.3e9  # bytes: shape E with --memory-limit 1GB
MAX_HELP_SECONDS = 0.3

MB = 1e6  # figures in decimal MB/GB, as the targets are written

# ------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------

# Bump a version whenever its generator changes: the file name changes with it.
VERSION_A = 1
VERSION_B = 1
VERSION_C = 1
VERSION_D = 1

SEED_A = 15_0001
SEED_B = 15_0002
SEED_C = 15_0003
SEED_D = 15_0004

# 12 QIs of shape C: (name, cardinality, text?)
C_COLUMNS: tuple[tuple[str, int, bool], ...] = (
    ("q01", 2, True),
    ("q02", 3, False),
    ("q03", 4, True),
    ("q04", 6, False),
    ("q05", 9, True),
    ("q06", 14, False),
    ("q07", 22, True),
    ("q08", 35, False),
    ("q09", 55, True),
    ("q10", 90, False),
    ("q11", 140, True),
    ("q12", 200, False),
)

# Non-QI text of shapes B and F: some names hold commas and quotes, so that the CSV of
# shape F quotes where needed (and only there).
FACILITY_KINDS = ("Clinic", "Hospital", 'Centre "Sainte-Anne"', "Practice, group", "Unit")


def _rng(seed: int, batch: int) -> Any:
    """One independent generator per batch: a file's batch i is the same at any file size."""
    import numpy as np

    return np.random.default_rng([seed, batch])


def _zipf(rng: Any, k: int, n: int, exponent: float) -> Any:
    """``n`` indices in ``range(k)`` with P(i) proportional to 1 / (i + 1) ** exponent."""
    import numpy as np

    p = 1.0 / np.arange(1, k + 1) ** exponent
    return rng.choice(k, size=n, p=p / p.sum())


def _ages(rng: Any, n: int) -> Any:
    """Ages 0-99 from a population pyramid (flat to 60, then falling)."""
    import numpy as np

    ages = np.arange(100)
    p = np.where(ages < 60, 1.0, np.exp(-(ages - 60) / 12.0)) + 0.02
    return rng.choice(100, size=n, p=p / p.sum()).astype(np.int64)


def _years(rng: Any, n: int) -> Any:
    """Years 2005-2024 (20 values), volumes doubling over the period."""
    import numpy as np

    volume = np.linspace(1.0, 2.0, 20)
    return (2005 + rng.choice(20, size=n, p=volume / volume.sum())).astype(np.int32)


def _sex(rng: Any, n: int) -> Any:
    """F / M, and X for 0.3 %."""
    return _strings(["F", "M", "X"], rng.choice(3, size=n, p=[0.507, 0.490, 0.003]))


def _strings(values: Any, idx: Any) -> Any:
    """A plain (not dictionary) Arrow string column, as most writers produce them."""
    import pyarrow as pa

    return pa.array(values, type=pa.string()).take(pa.array(idx))


def _batch_a(batch: int, start: int, n: int) -> Any:
    """Shape A: age, sex, region (96, skewed), year (20), chapter (22, by age band)."""
    import numpy as np
    import pyarrow as pa

    rng = _rng(SEED_A, batch)
    age = _ages(rng, n)
    sex = _sex(rng, n)
    # region codes shuffled once (same for every batch), sizes 1/rank^0.8
    regions = [f"R{i:02d}" for i in np.random.default_rng(SEED_A).permutation(96) + 1]
    region = _strings(regions, _zipf(rng, 96, n, 0.8))
    year = _years(rng, n)
    # 22 chapters, Zipf-like, the ranking shifted by 20-year age band
    base = 1.0 / np.arange(1, 23) ** 1.1
    band = np.minimum(age // 20, 4)
    chapter = np.empty(n, dtype=np.int64)
    for b in range(5):
        rows = np.flatnonzero(band == b)
        p = np.roll(base, 4 * b)
        chapter[rows] = rng.choice(22, size=rows.size, p=p / p.sum())
    return pa.table(
        {
            "record_id": np.arange(start, start + n, dtype=np.int64),
            "age": age,
            "sex": sex,
            "region": region,
            "year": year,
            "chapter": _strings([f"CH{i:02d}" for i in range(1, 23)], chapter),
            "amount": np.round(rng.lognormal(5.0, 1.0, size=n), 2),
        }
    )


def _zip_codes() -> tuple[list[str], list[str]]:
    """1,000 three-digit zip prefixes and 30,000 five-digit codes, 30 under each prefix."""
    import numpy as np

    rng = np.random.default_rng(SEED_B)
    zip3 = [f"{z:03d}" for z in rng.permutation(1000)]
    zip5 = [f"{z3}{s:02d}" for z3 in zip3 for s in rng.choice(100, size=30, replace=False)]
    return zip3, zip5


def _batch_b(batch: int, start: int, n: int) -> Any:
    """Shape B: age, sex, year, zip3 (1,000, skewed) and zip5 (30 per zip3, skewed)."""
    import numpy as np
    import pyarrow as pa

    rng = _rng(SEED_B, batch)
    zip3_values, zip5_values = _zip_codes()
    z3 = _zipf(rng, 1000, n, 0.9)
    z5 = z3 * 30 + _zipf(rng, 30, n, 1.0)  # zip5 consistent with its zip3
    facilities = [f"{kind} {i}" for i in range(40) for kind in FACILITY_KINDS]
    return pa.table(
        {
            "record_id": np.arange(start, start + n, dtype=np.int64),
            "age": _ages(rng, n),
            "sex": _sex(rng, n),
            "year": _years(rng, n),
            "zip3": _strings(zip3_values, z3),
            "zip5": _strings(zip5_values, z5),
            "facility": _strings(facilities, _zipf(rng, len(facilities), n, 1.0)),
            "amount": np.round(rng.lognormal(5.0, 1.0, size=n), 2),
        }
    )


def _batch_c(batch: int, start: int, n: int) -> Any:
    """Shape C: 12 QIs of cardinality 2..200 (ints and short texts), mildly skewed."""
    import numpy as np
    import pyarrow as pa

    rng = _rng(SEED_C, batch)
    columns: dict[str, Any] = {"record_id": np.arange(start, start + n, dtype=np.int64)}
    for name, card, text in C_COLUMNS:
        idx = _zipf(rng, card, n, 0.5)
        if text:
            columns[name] = _strings([f"{name[1:]}-{v:03d}" for v in range(card)], idx)
        else:
            columns[name] = (idx * 7 + 100).astype(np.int32 if card < 100 else np.int64)
    return pa.table(columns)


D_TEXTS = 500_000


def _free_texts() -> list[str]:
    """500,000 distinct short free texts (15-60 characters, some with commas)."""
    import itertools

    import numpy as np

    adjectives = [
        "sharp", "dull", "recurring", "sudden", "mild", "severe", "chronic", "acute",
        "intermittent", "persistent", "burning", "throbbing", "stabbing", "aching", "diffuse",
        "local", "radiating", "nocturnal", "morning", "evening",
    ]  # fmt: skip
    nouns = [
        "pain", "cough", "rash", "fever", "headache", "dizziness", "nausea", "swelling",
        "fatigue", "numbness", "itching", "weakness", "stiffness", "cramps", "bleeding",
        "bruising", "tremor", "palpitations", "wheezing", "insomnia", "anxiety", "vomiting",
        "diarrhoea", "constipation", "hoarseness",
    ]  # fmt: skip
    places = [
        "in the left knee", "in the right knee", "in the lower back", "in the chest",
        "behind the eyes", "in both hands", "after meals", "when climbing stairs",
        "at night", "on waking", "after exercise, resolving with rest", "in the neck",
        "in the left shoulder", "in the right shoulder", "around the ankle", "in the abdomen",
        "after a fall", "since the last visit", "during work", "while driving",
    ]  # fmt: skip
    texts = [
        f"{a} {nn} {p}, {d} days" if d % 3 else f"{a} {nn} {p} for {d} days"
        for a, nn, p, d in itertools.product(adjectives, nouns, places, range(1, 51))
    ]
    assert len(texts) == D_TEXTS == len(set(texts))
    order = np.random.default_rng(SEED_D).permutation(len(texts))
    return [texts[i] for i in order]


def _batch_d(batch: int, start: int, n: int) -> Any:
    """Shape D (one batch): sex, age and a free text with exactly 500,000 distinct values."""
    import numpy as np
    import pyarrow as pa

    rng = _rng(SEED_D, batch)
    if n < D_TEXTS:
        raise ValueError(f"shape D needs at least {D_TEXTS:,} rows")
    # every text once, the rest Zipf-like (a few common complaints, a long tail); shuffled
    idx = np.concatenate([np.arange(D_TEXTS), _zipf(rng, D_TEXTS, n - D_TEXTS, 1.0)])
    rng.shuffle(idx)
    return pa.table(
        {
            "record_id": np.arange(start, start + n, dtype=np.int64),
            "sex": _sex(rng, n),
            "age": _ages(rng, n),
            "complaint": _strings(_free_texts(), idx),
        }
    )


def _batches(make: Callable[[int, int, int], Any], rows: int, size: int) -> Iterator[Any]:
    for batch, start in enumerate(range(0, rows, size)):
        yield make(batch, start, min(size, rows - start))


def _write_parquet(path: Path, batches: Iterator[Any]) -> None:
    """One row group per batch (pyarrow's other defaults: snappy, dictionary pages)."""
    import pyarrow.parquet as pq

    tmp = path.with_name(path.name + ".tmp")
    writer: Any = None
    try:
        for table in batches:
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    tmp.replace(path)


def _csv_text(column: Any) -> Any:
    """A column rendered as CSV fields: quoted (quotes doubled) only where needed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_string(column.type):
        return pc.cast(column, pa.string())
    needs = pc.match_substring_regex(column, r'[",\r\n]')
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(column, '"', '""'), '"', "")
    return pc.if_else(needs, quoted, column)


def _write_csv(path: Path, batches: Iterator[Any]) -> None:
    """Comma separated, a header, fields quoted where needed (as pandas or Excel write)."""
    import pyarrow.compute as pc

    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8", newline="") as fh:
        header = False
        for table in batches:
            if not header:
                fh.write(",".join(table.column_names) + "\n")
                header = True
            fields = [_csv_text(table.column(i).combine_chunks()) for i in range(table.num_columns)]
            lines = pc.binary_join_element_wise(*fields, ",")
            fh.write("\n".join(lines.to_pylist()))
            fh.write("\n")
    tmp.replace(path)


@dataclass(frozen=True)
class Shape:
    name: str
    rows: int
    qis: tuple[str, ...]
    fmt: str  # "parquet" or "csv"
    family: str  # generator family: A, B, C or D (F is B as CSV)
    version: int
    make: Callable[[int, int, int], Any]
    about: str
    batch_rows: int = BATCH_ROWS

    @property
    def path(self) -> Path:
        ext = "parquet" if self.fmt == "parquet" else "csv"
        return DATA / f"grouping_{self.family}_{self.rows}_v{self.version}.{ext}"

    def generate(self) -> None:
        DATA.mkdir(parents=True, exist_ok=True)
        batches = _batches(self.make, self.rows, self.batch_rows)
        if self.fmt == "parquet":
            _write_parquet(self.path, batches)
        else:
            _write_csv(self.path, batches)


QIS_A = ("age", "sex", "region", "year", "chapter")
QIS_B = ("age", "sex", "year", "zip3", "zip5")

SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape("A1M", 1_000_000, QIS_A, "parquet", "A", VERSION_A, _batch_a, "shape A at 1M rows"),
        Shape("A", 10_000_000, QIS_A, "parquet", "A", VERSION_A, _batch_a, "5 QIs, ~3M classes"),
        Shape("B", 10_000_000, QIS_B, "parquet", "B", VERSION_B, _batch_b, "zip3/zip5, ~6M"),
        Shape(
            "C",
            10_000_000,
            tuple(c[0] for c in C_COLUMNS),
            "parquet",
            "C",
            VERSION_C,
            _batch_c,
            "12 QIs, almost all unique",
        ),
        Shape(
            "D",
            2_000_000,
            ("sex", "age", "complaint"),
            "parquet",
            "D",
            VERSION_D,
            _batch_d,
            "500,000-value free text",
            batch_rows=2_000_000,
        ),
        Shape("E", 50_000_000, QIS_A, "parquet", "A", VERSION_A, _batch_a, "shape A at 50M"),
        Shape("F", 10_000_000, QIS_B, "csv", "B", VERSION_B, _batch_b, "shape B as CSV"),
    )
}
DEFAULT_SHAPES = ("A1M", "A", "B", "C", "D", "F")  # E (50M rows) only when asked for


def warm_page_cache(path: Path) -> float:
    """Read the whole file once, so every contender reads it from memory alike."""
    start = time.perf_counter()
    with path.open("rb") as fh:
        while fh.read(1 << 24):
            pass
    return time.perf_counter() - start


# ------------------------------------------------------------------------------------------
# Contenders
# ------------------------------------------------------------------------------------------

# Each peer prints "<classes> <records>" on its last line; arguments: file, QIs (a,b,c).
DUCKDB_SCRIPT = """\
import sys
import duckdb
import pyarrow.compute as pc
path, qis = sys.argv[1], sys.argv[2].split(",")
reader = "read_csv" if path.endswith(".csv") else "read_parquet"
cols = ", ".join('"' + q + '"' for q in qis)
escaped = path.replace("'", "''")
sql = f"SELECT {cols}, count(*) AS n FROM {reader}('{escaped}') GROUP BY ALL"
result = duckdb.sql(sql).arrow()
table = result.read_all() if hasattr(result, "read_all") else result
print(table.num_rows, pc.sum(table["n"]).as_py())
"""

POLARS_SCRIPT = """\
import sys
import polars as pl
path, qis = sys.argv[1], sys.argv[2].split(",")
if path.endswith(".csv"):
    frame = pl.scan_csv(path, infer_schema=False)
else:
    frame = pl.scan_parquet(path)
counts = frame.group_by(qis).len().collect()
print(counts.height, counts["len"].sum())
"""

PANDAS_SCRIPT = """\
import sys
import pandas as pd
path, qis = sys.argv[1], sys.argv[2].split(",")
if path.endswith(".csv"):
    frame = pd.read_csv(path, usecols=qis, dtype=str, keep_default_na=False)
else:
    frame = pd.read_parquet(path, columns=qis)
sizes = frame.groupby(qis, dropna=False).size()
print(len(sizes), int(sizes.sum()))
"""

PEERS = ("duckdb", "polars", "pandas")


@dataclass
class Contender:
    name: str
    label: str
    argv: list[str] | None  # None: cannot run (reason in ``unavailable``)
    unavailable: str | None = None
    peer: bool = False


@dataclass
class Run:
    wall: float
    rss: int  # bytes, ru_maxrss of the process
    cpu: float  # user + system seconds
    rc: int
    stderr_tail: str
    stdout_tail: str
    load: float  # 1-minute load average when the run started
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out


@dataclass
class Outcome:
    contender: Contender
    runs: list[Run] = field(default_factory=list)

    @property
    def good(self) -> list[Run]:
        return [r for r in self.runs if r.ok]

    @property
    def failed(self) -> bool:
        return self.contender.argv is None or any(not r.ok for r in self.runs) or not self.runs

    @property
    def best(self) -> float | None:
        good = self.good
        return min(r.wall for r in good) if good else None

    @property
    def best_cpu(self) -> float:
        """CPU time (user + system, all threads) of the run with the best wall time."""
        good = self.good
        return min(good, key=lambda r: r.wall).cpu if good else float("nan")

    @property
    def rss(self) -> int | None:
        good = self.good
        return max(r.rss for r in good) if good else None

    @property
    def answer(self) -> tuple[int, int] | None:
        """(classes, records) a peer printed (the last two words of its stdout), if any.

        The last two words: DuckDB draws its progress bar on the same line (``\r``) when a
        query takes over 2 s, as it does for a user running the same script.
        """
        for r in self.good:
            parts = r.stdout_tail.split()[-2:]
            if len(parts) == 2 and all(p.isdigit() for p in parts):
                return int(parts[0]), int(parts[1])
        return None

    def problem(self) -> str | None:
        if self.contender.argv is None:
            return self.contender.unavailable
        for r in self.runs:
            if r.timed_out:
                return f"timed out after {r.wall:.0f} s"
            if r.rc != 0:
                return f"exit code {r.rc}: {r.stderr_tail or '(no stderr)'}"
        return None if self.runs else "not run"


def _last_line(path: Path) -> str:
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:300] if lines else ""


def run_once(argv: list[str], timeout: float) -> Run:
    """Run one whole process; wall clock from spawn to reaping, rusage from ``os.wait4``."""
    with tempfile.TemporaryDirectory(prefix="bench_grouping_") as tmp:
        out_path = Path(tmp) / "stdout"
        err_path = Path(tmp) / "stderr"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            load = os.getloadavg()[0]
            start = time.perf_counter()
            proc = subprocess.Popen(
                argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=ROOT
            )
            timed_out = threading.Event()

            def kill() -> None:
                timed_out.set()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            wall = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        return Run(
            wall=wall,
            rss=int(usage.ru_maxrss) * 1024,  # KiB on Linux
            cpu=usage.ru_utime + usage.ru_stime,
            rc=proc.returncode,
            stderr_tail=_last_line(err_path),
            stdout_tail=_last_line(out_path),
            load=load,
            timed_out=timed_out.is_set(),
        )


def assess_flags(reident: Path) -> tuple[set[str], str | None]:
    """The long options ``reident assess --help`` lists (or why it could not tell)."""
    if not reident.exists():
        return set(), f"{reident} missing (project venv not set up)"
    try:
        proc = subprocess.run(
            [str(reident), "assess", "--help"], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return set(), f"reident assess --help: {exc}"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return set(), f"reident assess --help: exit code {proc.returncode}: {tail}"
    flags = {w.strip("[],") for w in proc.stdout.split() if w.strip("[],").startswith("--")}
    return flags, None


def contenders_for(
    shape: Shape, reident: Path, flags: set[str], flags_error: str | None
) -> list[Contender]:
    path = str(shape.path)
    qis = ",".join(shape.qis)
    out: list[Contender] = []
    peer_ok = PEER_PYTHON.exists()
    scripts = {"duckdb": DUCKDB_SCRIPT, "polars": POLARS_SCRIPT, "pandas": PANDAS_SCRIPT}
    reader = "read_csv" if shape.fmt == "csv" else "read_parquet"
    labels = {
        "duckdb": f"DuckDB: {reader} ... GROUP BY ALL -> Arrow",
        "polars": f"polars: scan_{shape.fmt}().group_by().len()",
        "pandas": f"pandas: {reader}() + groupby().size()",
    }
    for name in PEERS:
        argv = [str(PEER_PYTHON), "-c", scripts[name], path, qis] if peer_ok else None
        why = None if peer_ok else "bench/.venv missing: run bash bench/setup.sh"
        out.append(Contender(name, labels[name], argv, why, peer=True))
    base = [str(reident), "assess", path, "--qi", qis, "--region", "usa", "--json", "/dev/null"]
    variants: list[tuple[str, str, list[str]]] = [
        ("verdict", "reident assess --no-ranking", ["--no-ranking"]),
        ("ranking", "reident assess (default ranking)", []),
    ]
    if shape.name == "E":
        variants.append(
            (
                "limited",
                "reident assess --memory-limit 1GB --no-ranking",
                ["--memory-limit", "1GB", "--no-ranking"],
            )
        )
    for name, label, extra in variants:
        missing = [f for f in extra if f.startswith("--") and f not in flags]
        if flags_error is not None:
            out.append(Contender(name, label, None, flags_error))
        elif missing:
            out.append(Contender(name, label, None, f"flag not available: {', '.join(missing)}"))
        else:
            out.append(Contender(name, label, base + extra))
    return out


def run_rounds(contenders: list[Contender], repeat: int, timeout: float) -> list[Outcome]:
    """``repeat`` rounds of every runnable contender, the order rotated by one each round."""
    outcomes = [Outcome(c) for c in contenders]
    runnable = [o for o in outcomes if o.contender.argv is not None]
    for r in range(repeat):
        k = r % len(runnable) if runnable else 0
        for o in runnable[k:] + runnable[:k]:
            assert o.contender.argv is not None
            run = run_once(o.contender.argv, timeout)
            o.runs.append(run)
            state = "ok" if run.ok else f"FAILED ({run.rc}: {run.stderr_tail})"
            print(
                f"  round {r + 1}: {o.contender.name:<8} {run.wall:8.3f} s "
                f"(cpu {run.cpu:7.3f} s) {run.rss / MB:7.0f} MB  load {run.load:4.1f}  {state}",
                flush=True,
            )
    return outcomes


# ------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------


@dataclass
class Check:
    shape: str
    label: str
    value: str
    ok: bool | None  # None: not measurable (a contender could not run)


def _fmt_s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _fmt_mb(x: float | None) -> str:
    return "n/a" if x is None else f"{x / MB:,.0f}"


def shape_report(shape: Shape, outcomes: list[Outcome]) -> tuple[list[Check], list[str]]:
    """Print the shape's table; return its target checks and its failures."""
    by = {o.contender.name: o for o in outcomes}
    peers = [by[p] for p in PEERS if p in by]
    answers = {o.contender.name: o.answer for o in peers if o.answer is not None}
    print()
    print(f"| {shape.name}: contender | best wall s | peak RSS MB | CPU s (best run) | note |")
    print("| --- | ---: | ---: | ---: | --- |")
    for o in outcomes:
        cpu = o.best_cpu if o.good else None
        note = o.problem() or ""
        if o.contender.name in answers:
            classes, records = answers[o.contender.name]
            note = (note + "; " if note else "") + f"{classes:,} classes, {records:,} records"
        print(
            f"| {o.contender.label} | {_fmt_s(o.best)} | {_fmt_mb(o.rss)} | "
            f"{_fmt_s(cpu)} | {note} |"
        )
    failures = [f"{shape.name} {o.contender.name}: {o.problem()}" for o in outcomes if o.failed]
    if len(set(answers.values())) > 1:
        failures.append(f"{shape.name}: the peers disagree on (classes, records): {answers}")
    if any(a[1] != shape.rows for a in answers.values()):
        failures.append(f"{shape.name}: a peer counted records other than {shape.rows:,}")

    checks: list[Check] = []
    fastest = [t for t in (by["duckdb"].best, by["polars"].best) if t is not None]
    floor = min(fastest) if len(fastest) == 2 else None
    for name, target, label in (
        ("verdict", MAX_VERDICT_RATIO, "verdict / min(DuckDB, polars)"),
        ("ranking", MAX_RANKING_RATIO, "ranking / min(DuckDB, polars)"),
    ):
        t = by[name].best
        if t is None or floor is None:
            checks.append(Check(shape.name, label, "n/a", None))
        else:
            r = t / floor
            # beside it, the same ratio of the CPU times of those best runs (all threads):
            # not judged, but steadier than wall times when the machine is loaded
            cpu = by[name].best_cpu / min(by["duckdb"].best_cpu, by["polars"].best_cpu)
            text = f"{r:.2f} (target <= {target}; by CPU time {cpu:.2f})"
            checks.append(Check(shape.name, label, text, r <= target))
    duck_rss = by["duckdb"].rss
    for name in ("verdict", "ranking"):
        label = f"{name} peak RSS - DuckDB's"
        rss = by[name].rss
        if rss is None or duck_rss is None:
            checks.append(Check(shape.name, label, "n/a", None))
        else:
            over = rss - duck_rss
            text = f"{over / MB:+,.0f} MB ({_fmt_mb(rss)} vs {_fmt_mb(duck_rss)}; target <= +200)"
            checks.append(Check(shape.name, label, text, over <= MAX_RSS_OVER_DUCKDB))
    if "limited" in by:
        rss = by["limited"].rss
        label = "--memory-limit 1GB peak RSS"
        if rss is None:
            checks.append(Check(shape.name, label, "n/a", None))
        else:
            text = f"{rss / 1e9:.2f} GB (target < 1.3)"
            checks.append(Check(shape.name, label, text, rss < MAX_LIMITED_RSS))
    return checks, failures


def summary_table(results: list[tuple[Shape, list[Outcome]]]) -> None:
    """One line per shape: every contender's best time and peak RSS, and the two ratios."""
    print()
    print(
        "| shape | classes | DuckDB s | polars s | pandas s | verdict s | ranking s "
        "| verdict / min | ranking / min | RSS MB: DuckDB / polars / pandas / verdict / ranking |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for shape, outcomes in results:
        by = {o.contender.name: o for o in outcomes}
        answer = next((by[p].answer for p in PEERS if by[p].answer is not None), None)
        fastest = [t for t in (by["duckdb"].best, by["polars"].best) if t is not None]
        floor = min(fastest) if len(fastest) == 2 else None

        def ratio(name: str, floor: float | None = floor, by: dict[str, Outcome] = by) -> str:
            t = by[name].best
            return "n/a" if t is None or floor is None else f"{t / floor:.2f}"

        def cell(name: str, by: dict[str, Outcome] = by) -> str:
            o = by[name]
            if o.contender.argv is None:
                return "flag n/a" if "flag not available" in (o.problem() or "") else "n/a"
            return _fmt_s(o.best) if o.best is not None else f"failed ({o.runs[-1].rc})"

        rss = " / ".join(_fmt_mb(by[n].rss) for n in (*PEERS, "verdict", "ranking"))
        classes = f"{answer[0]:,}" if answer else "n/a"
        print(
            f"| {shape.name} ({shape.rows / 1e6:g}M rows) | {classes} | {cell('duckdb')} "
            f"| {cell('polars')} | {cell('pandas')} | {cell('verdict')} | {cell('ranking')} "
            f"| {ratio('verdict')} | {ratio('ranking')} | {rss} |"
        )


def _git_commit() -> str:
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
    except OSError:
        return "unknown"
    commit = proc.stdout.strip() or "unknown"
    return commit + (" (+ uncommitted changes)" if dirty.stdout.strip() else "")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _versions() -> dict[str, str]:
    if not PEER_PYTHON.exists():
        return {}
    code = (
        "import duckdb, polars, pandas, pyarrow, json; print(json.dumps({m.__name__: "
        "m.__version__ for m in (duckdb, polars, pandas, pyarrow)}))"
    )
    proc = subprocess.run([str(PEER_PYTHON), "-c", code], capture_output=True, text=True)
    try:
        versions: dict[str, str] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return versions


def _run_json(run: Run) -> dict[str, Any]:
    return {
        "wall": run.wall,
        "rss": run.rss,
        "cpu": run.cpu,
        "rc": run.rc,
        "timed_out": run.timed_out,
        "stderr_tail": run.stderr_tail,
        "stdout_tail": run.stdout_tail,
        "load": run.load,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--shapes",
        default=",".join(DEFAULT_SHAPES),
        help=f"comma-separated, of {', '.join(SHAPES)} (default {','.join(DEFAULT_SHAPES)})",
    )
    parser.add_argument("--repeat", type=int, default=REPEAT, help="rounds (best kept)")
    parser.add_argument(
        "--skip-generate", action="store_true", help="never write data (missing file: exit 2)"
    )
    parser.add_argument("--reident", type=Path, default=REIDENT, help="the CLI to time")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per run")
    parser.add_argument("--generate", help=argparse.SUPPRESS)  # child: write one shape's file
    args = parser.parse_args(argv)
    if args.generate:
        SHAPES[args.generate].generate()
        return 0
    names = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in names if s not in SHAPES]
    if unknown or not names or args.repeat < 1:
        parser.error(f"unknown shape(s) {unknown}; choose from {', '.join(SHAPES)}")
    shapes = [SHAPES[s] for s in names]

    started = dt.datetime.now(dt.UTC)
    commit = _git_commit()
    print("# reident-airflow bench: issue 15, grouping speed and memory")
    print(
        f"{started:%Y-%m-%d %H:%M} UTC, commit {commit}, {_cpu_model()}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}"
    )
    versions = _versions()
    print(f"peers (bench/.venv): {versions or 'missing: run bash bench/setup.sh'}")

    failures: list[str] = []
    # 1. data: generated once, reused
    for shape in shapes:
        path = shape.path
        if path.exists():
            continue
        rel = path.relative_to(ROOT)
        if args.skip_generate:
            failures.append(f"{shape.name}: {rel} missing (--skip-generate)")
            continue
        print(f"generating {rel} ...", flush=True)
        start = time.perf_counter()
        # In a child process: the driver must stay small, because a child it forks starts
        # with the driver's peak RSS as its own ru_maxrss (the kernel keeps the larger).
        gen = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--generate", shape.name]
        )
        if gen.returncode != 0 or not path.exists():
            failures.append(f"{shape.name}: generating {rel} failed (exit code {gen.returncode})")
            continue
        print(f"  done in {time.perf_counter() - start:.1f} s ({path.stat().st_size / MB:,.0f} MB)")
    driver_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        f"driver's peak RSS {driver_rss / MB:.0f} MB (the floor of every child's figure: a child "
        "starts from its parent's peak)"
    )

    # 2. reident --help, and which assess flags exist now
    flags, flags_error = assess_flags(args.reident)
    print(
        "reident assess flags: "
        + (
            flags_error
            or ", ".join(
                f"{f} {'yes' if f in flags else 'NOT AVAILABLE'}"
                for f in ("--no-ranking", "--memory-limit")
            )
        )
    )
    help_outcome = Outcome(Contender("help", "reident --help", [str(args.reident), "--help"]))
    if args.reident.exists():
        for _ in range(args.repeat):
            help_outcome.runs.append(run_once([str(args.reident), "--help"], args.timeout))
    else:
        help_outcome.contender.argv = None
        help_outcome.contender.unavailable = f"{args.reident} missing"
    checks: list[Check] = []
    if help_outcome.best is None:
        failures.append(f"reident --help: {help_outcome.problem()}")
        checks.append(Check("-", "reident --help", "n/a", None))
    else:
        t = help_outcome.best
        text = f"{t:.3f} s (target < {MAX_HELP_SECONDS})"
        checks.append(Check("-", "reident --help", text, t < MAX_HELP_SECONDS))
        if help_outcome.failed:
            failures.append(f"reident --help: {help_outcome.problem()}")

    # 3. the shapes
    results: list[tuple[Shape, list[Outcome]]] = []
    for shape in shapes:
        if not shape.path.exists():
            continue
        print()
        print(f"## shape {shape.name}: {shape.about} ({shape.rows:,} rows, QIs {shape.qis})")
        print(
            f"file {shape.path.relative_to(ROOT)} ({shape.path.stat().st_size / MB:,.0f} MB); "
            f"page cache warmed in {warm_page_cache(shape.path):.2f} s",
            flush=True,
        )
        contenders = contenders_for(shape, args.reident, flags, flags_error)
        outcomes = run_rounds(contenders, args.repeat, args.timeout)
        shape_checks, shape_failures = shape_report(shape, outcomes)
        checks += shape_checks
        failures += shape_failures
        results.append((shape, outcomes))

    # 4. summary, targets, raw figures
    print()
    print(f"## Summary (best of {args.repeat} whole processes; peak RSS = highest of the runs)")
    summary_table(results)
    print()
    print(f"reident --help: best of {args.repeat} {_fmt_s(help_outcome.best)} s")
    print()
    print("| shape | target | value | verdict |")
    print("| --- | --- | --- | --- |")
    for c in checks:
        word = "PASS" if c.ok else ("n/a" if c.ok is None else "MISS")
        print(f"| {c.shape} | {c.label} | {c.value} | {word} |")
    if failures:
        print()
        print("could not run / disagree:")
        for f in failures:
            print(f"  - {f}")

    raw = {
        "started_utc": started.isoformat(timespec="seconds"),
        "commit": commit,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "peers": versions,
        "repeat": args.repeat,
        "reident": str(args.reident),
        "assess_flags": {f: f in flags for f in ("--no-ranking", "--memory-limit")},
        "help": [_run_json(r) for r in help_outcome.runs],
        "shapes": {
            shape.name: {
                "file": str(shape.path.relative_to(ROOT)),
                "rows": shape.rows,
                "qis": list(shape.qis),
                "contenders": {
                    o.contender.name: {
                        "label": o.contender.label,
                        "argv": o.contender.argv,
                        "unavailable": o.contender.unavailable,
                        "runs": [_run_json(r) for r in o.runs],
                        "best_wall": o.best,
                        "peak_rss": o.rss,
                    }
                    for o in outcomes
                },
            }
            for shape, outcomes in results
        },
        "checks": [c.__dict__ for c in checks],
        "failures": failures,
    }
    # the CLI is worked on while this runs: say so if HEAD moved during the run
    commit_end = _git_commit()
    if commit_end.split()[0] != commit.split()[0]:
        print()
        print(f"!! HEAD moved during the run: {commit} at the start, {commit_end} at the end")
    raw["commit_end"] = commit_end
    DATA.mkdir(parents=True, exist_ok=True)
    out = DATA / f"grouping_results_{started:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(raw, indent=1) + "\n")
    print()
    print(f"raw figures: {out.relative_to(ROOT)}")
    if failures:
        return 2
    return 1 if any(c.ok is False for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())

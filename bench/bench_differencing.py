"""Issue 28's cost acceptance: the release comparison against DuckDB's own ``EXCEPT ALL``.

From the repository root, with the project venv and ``bench/.venv`` set up::

    .venv/bin/python bench/bench_differencing.py               # shapes W and U (10M rows)
    .venv/bin/python bench/bench_differencing.py --shapes Q    # the 1M-row quick run

What it does (the shapes, the contenders and the target: ``bench/README.md``,
"bench_differencing.py"):

1. generates the pairs of releases it needs if absent (seeded, batch by batch, into
   ``bench/data/diff_<old|new>_<rows>_v<g>.parquet``): the previous release ``OLD`` and the
   candidate ``NEW``, which differs from it by about 1 % of its rows (departures, updates,
   arrivals);
2. for each shape: reads both files once (page cache warm for every contender alike), then
   runs every contender as a **whole process**, ``--repeat`` rounds, each round every
   contender once, the order rotated by one each round; keeps each contender's best wall
   time (and the CPU time of that run, and the load average when it started);
3. checks that every contender found the same arrivals and departures (records, classes,
   smallest class), and fails loudly (exit 2) if not;
4. prints a markdown table: the comparison against DuckDB's own ``EXCEPT ALL`` both ways +
   ``GROUP BY`` (the target: at most 1.5x on the 10M-row shapes).

Contenders (``NEW``, ``OLD``, the 5 QIs of the shape):

- ``compare``: the release comparison alone, as a ``python -c`` in the project venv:
  ``FileSource(NEW).release_changes(FileSource(OLD), QIs)``, what ``reident assess
  --previous`` runs besides the assessment (the smallest process measuring it);
- ``assess+previous``: ``reident assess NEW --previous OLD --qi QIs --no-ranking
  --no-fingerprint --json FILE`` (the JSON's ``since_last_release`` is read back);
- ``assess``: the same without ``--previous``: the assessment alone, so that the
  comparison's share of the command line is visible;
- ``duckdb``: DuckDB's own SQL, in ``bench/.venv``: ``NEW EXCEPT ALL OLD`` (arrivals) and
  ``OLD EXCEPT ALL NEW`` (departures) on ``SELECT *`` of the Parquet files, each grouped on
  the QIs (``count(*)`` per class), then per side the histogram of those counts, in one
  statement (``UNION ALL`` of the two sides);
- ``duckdb-arrivals``: the same, one direction only (the arrivals): not the same answer,
  a floor.

Exit code: 0 when ``compare`` takes at most 1.5x ``duckdb`` on every 10M-row shape run, 1
when not, 2 when a contender failed or the contenders disagree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_grouping import Outcome, _rng, _strings, run_once, warm_page_cache  # noqa: E402
from bench_scan import _clean_batch  # noqa: E402

ROOT = HERE.parent
DATA = HERE / "data"
PYTHON = ROOT / ".venv" / "bin" / "python"
if not PYTHON.exists():  # a worktree shares its repository's venv
    PYTHON = Path(sys.executable)
REIDENT = PYTHON.parent / "reident"
PEER_PYTHON = HERE / ".venv" / "bin" / "python"
# this checkout's code, also where the venv's ``reident`` was installed from another one
os.environ["PYTHONPATH"] = str(ROOT)

REPEAT = 3
TIMEOUT = 900.0
BATCH_ROWS = 1_000_000
MAX_RATIO = 1.5  # the comparison takes at most 1.5x DuckDB's own (10M-row shapes)

VERSION = 1
SEED = 28_0001
DEPARTED = 0.003  # share of OLD's rows missing from NEW
UPDATED = 0.004  # share of OLD's rows changed in NEW (one departure and one arrival each)
ARRIVED = 0.003  # rows new in NEW, as a share of OLD's


# ------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------
def _with_band(table: Any) -> Any:
    """``age_band``, the age generalized to 5-year bands (``40-44``), after ``age``."""
    import numpy as np
    import pyarrow as pa

    labels = [f"{5 * b}-{5 * b + 4}" for b in range(20)]
    band = _strings(labels, np.asarray(table["age"]) // 5)
    return table.add_column(1, pa.field("age_band", pa.string()), band)


def _release_pair(batch: int, n: int) -> tuple[Any, Any]:
    """Batch ``batch`` of OLD (bench_scan's clean S1 rows, ``age_band`` added) and of NEW:
    OLD without 0.3 % of its rows, 0.4 % updated (a new amount; a quarter of them a year
    older, which moves them to another class of the exact age), and 0.3 % new rows."""
    import numpy as np
    import pyarrow as pa

    old = _with_band(_clean_batch(batch, 0, n))
    rng = _rng(SEED, batch)
    u = rng.random(n)
    departed = u < DEPARTED
    updated = (u >= DEPARTED) & (u < DEPARTED + UPDATED)
    older = updated & (rng.random(n) < 0.25)
    amount = np.asarray(old["amount"])
    amount = np.where(updated, np.round(rng.lognormal(5.0, 1.0, size=n), 2), amount)
    age = np.asarray(old["age"])
    age = np.where(older, np.minimum(age + 1, 99), age)
    new = old.drop_columns(["age_band", "age", "amount"])
    new = new.add_column(0, "age", pa.array(age))
    new = _with_band(new).append_column("amount", pa.array(amount))
    new = new.select(old.column_names).filter(pa.array(~departed))
    # arrivals: fresh rows of the same generator (an independent batch stream)
    arrivals = _with_band(_clean_batch(1_000_000 + batch, 0, max(1, round(ARRIVED * n))))
    return old, pa.concat_tables([new, arrivals])


def _generate(rows: int, old_path: Path, new_path: Path) -> None:
    import pyarrow.parquet as pq

    DATA.mkdir(parents=True, exist_ok=True)
    tmp = [p.with_name(p.name + ".tmp") for p in (old_path, new_path)]
    writers: list[Any] = []
    try:
        for b, s in enumerate(range(0, rows, BATCH_ROWS)):
            pair = _release_pair(b, min(BATCH_ROWS, rows - s))
            if not writers:
                writers = [pq.ParquetWriter(t, pair[0].schema) for t in tmp]
            for w, table in zip(writers, pair, strict=True):
                w.write_table(table)
    finally:
        for w in writers:
            w.close()
    for t, p in zip(tmp, (old_path, new_path), strict=True):
        t.replace(p)


@dataclass(frozen=True)
class Shape:
    name: str
    rows: int
    qis: tuple[str, ...]
    about: str

    @property
    def old(self) -> Path:
        return DATA / f"diff_old_{self.rows}_v{VERSION}.parquet"

    @property
    def new(self) -> Path:
        return DATA / f"diff_new_{self.rows}_v{VERSION}.parquet"

    def generate(self) -> None:
        _generate(self.rows, self.old, self.new)


QIS_BANDED = ("age_band", "sex", "region", "year", "chapter")
QIS_MANY = ("age", "sex", "region", "year", "code")
SHAPES = {
    s.name: s
    for s in (
        Shape("W", 10_000_000, QIS_BANDED, "10M rows, 5 QIs (age in 5-year bands)"),
        Shape("U", 10_000_000, QIS_MANY, "10M rows, 5 QIs of many classes (exact age, code)"),
        Shape("Q", 1_000_000, QIS_BANDED, "1M rows, as W"),
    )
}
DEFAULT_SHAPES = ("W", "U")


# ------------------------------------------------------------------------------------------
# Contenders: each prints (or writes) the arrivals' and departures' records, classes and
# smallest class: "arrivals R C K departures R C K"
# ------------------------------------------------------------------------------------------
COMPARE = """\
import sys
from reident_airflow.sources.files import FileSource
new, old, qis = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
changes = FileSource(new).release_changes(FileSource(old), qis)
out = []
for side, sizes in (("arrivals", changes.arrivals), ("departures", changes.departures)):
    counts = ("0", "0", "-") if sizes is None else (sizes.records, sizes.classes, sizes.k)
    out += [side, *map(str, counts)]
print(" ".join(out))
"""

PEER = """\
import sys
import duckdb
new, old, qis, mode = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
def rel(path):
    return "read_parquet('" + path.replace("'", "''") + "')"
cols = ", ".join('"' + q + '"' for q in qis)
sides = [("arrivals", new, old), ("departures", old, new)]
if mode == "arrivals":
    sides = sides[:1]
parts = [
    f"SELECT '{side}' AS side, m, count(*) AS classes FROM ("
    f"SELECT {cols}, count(*) AS m FROM ("
    f"SELECT * FROM {rel(a)} EXCEPT ALL SELECT * FROM {rel(b)}) GROUP BY {cols}) GROUP BY m"
    for side, a, b in sides
]
rows = duckdb.sql(" UNION ALL ".join(parts)).fetchall()
out = []
for side, *_ in sides:
    mine = [(m, c) for s, m, c in rows if s == side]
    k = min((m for m, _ in mine), default="-")
    out += [side, str(sum(m * c for m, c in mine)), str(sum(c for _, c in mine)), str(k)]
print(" ".join(out))
"""


@dataclass
class _Contender:  # what bench_grouping's Outcome reads
    name: str
    argv: list[str] | None
    label: str = ""
    unavailable: str | None = None
    peer: bool = False
    json_out: Path | None = None


def contenders(shape: Shape) -> list[_Contender]:
    new, old, qis = str(shape.new), str(shape.old), ",".join(shape.qis)
    py, peer = str(PYTHON), str(PEER_PYTHON)
    assess = [str(REIDENT), "assess", new, "--qi", qis, "--no-ranking", "--no-fingerprint"]
    out = DATA / f"diff_{shape.name}_assess_previous.json"
    missing = None if PEER_PYTHON.exists() else f"{PEER_PYTHON} missing: bash bench/setup.sh"
    return [
        _Contender("compare", [py, "-c", COMPARE, new, old, qis]),
        _Contender(
            "assess+previous", [*assess, "--previous", old, "--json", str(out)], json_out=out
        ),
        _Contender("assess", [*assess, "--json", "/dev/null"]),
        _Contender(
            "duckdb",
            None if missing else [peer, "-c", PEER, new, old, qis, "both"],
            unavailable=missing,
            peer=True,
        ),
        _Contender(
            "duckdb-arrivals",
            None if missing else [peer, "-c", PEER, new, old, qis, "arrivals"],
            unavailable=missing,
            peer=True,
        ),
    ]


def _answer_of_json(path: Path) -> str:
    doc = json.loads(path.read_text())["since_last_release"]
    out = []
    for side in ("arrivals", "departures"):
        m = doc[side]
        out += [side, str(m["records"]), str(m["classes"]), str(m["k"] or "-")]
    return " ".join(out)


def run_shape(shape: Shape, repeat: int) -> tuple[dict[str, Outcome], dict[str, str]]:
    cons = contenders(shape)
    outcomes = [Outcome(c) for c in cons]  # type: ignore[arg-type]
    answers: dict[str, str] = {}
    runnable = [o for o in outcomes if o.contender.argv is not None]
    for r in range(repeat):
        k = r % len(runnable)
        for o in runnable[k:] + runnable[:k]:
            c: Any = o.contender
            run = run_once(c.argv, TIMEOUT)
            o.runs.append(run)
            state = "ok" if run.ok else f"FAILED ({run.rc}: {run.stderr_tail})"
            answer = run.stdout_tail
            if run.ok and c.json_out is not None:
                answer = _answer_of_json(c.json_out)
            # every run is checked: one that differs from its contender's first is listed
            if run.ok and c.name != "assess" and answers.setdefault(c.name, answer) != answer:
                answers[f"{c.name} (round {r + 1})"] = answer
            print(
                f"  round {r + 1}: {c.name:<16} {run.wall:8.3f} s (cpu {run.cpu:7.3f} s)  "
                f"load {run.load:4.1f}  {state}  {answer[-90:] if c.name != 'assess' else ''}",
                flush=True,
            )
    return {o.contender.name: o for o in outcomes}, answers


def _disagreement(answers: dict[str, str]) -> str | None:
    """None when every run of every contender reports the same arrivals and departures (the
    one-way peer: the same arrivals); a run that differs from its contender's first is
    listed as ``<name> (round <r>)``."""
    full = {n: a for n, a in answers.items() if not n.startswith("duckdb-arrivals")}
    if len(set(full.values())) > 1:
        return "; ".join(f"{n}: {a}" for n, a in full.items())
    one_way = {n: a for n, a in answers.items() if n.startswith("duckdb-arrivals")}
    if one_way and full:
        reference = next(iter(full.values())).split()[:4]
        for name, answer in one_way.items():
            if answer.split()[:4] != reference:
                return f"{name}: {answer}; the others: {' '.join(reference)}"
    return None


def _cell(o: Outcome) -> str:
    """Best wall time (its CPU time; the load average when it started)."""
    load = min(o.good, key=lambda r: r.wall).load
    return f"{o.best:.2f} ({o.best_cpu:.2f}; {load:.1f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default=",".join(DEFAULT_SHAPES))
    parser.add_argument("--repeat", type=int, default=REPEAT)
    args = parser.parse_args(argv)
    shapes = [SHAPES[s.strip()] for s in args.shapes.split(",")]
    print(
        f"# bench_differencing.py, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.node()}, {os.cpu_count()} cores, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    for shape in shapes:
        if not (shape.old.exists() and shape.new.exists()):
            print(f"generating {shape.old.name}, {shape.new.name} ...", flush=True)
            shape.generate()
    rows = []
    code = 0
    for shape in shapes:
        warm = warm_page_cache(shape.old) + warm_page_cache(shape.new)
        print(
            f"\n## {shape.name}: {shape.about}, QIs {','.join(shape.qis)} (page cache warmed "
            f"in {warm:.2f} s)",
            flush=True,
        )
        by, answers = run_shape(shape, args.repeat)
        failed = [n for n, o in by.items() if o.failed]
        if failed:
            code = 2
            print(f"FAILED: {', '.join(f'{n}: {by[n].problem()}' for n in failed)}")
            rows.append(f"| {shape.name} | {shape.about} | failed: {', '.join(failed)} |")
            continue
        problem = _disagreement(answers)
        if problem is not None:
            code = 2
            print(f"THE CONTENDERS DISAGREE on {shape.name}: {problem}", flush=True)
            rows.append(f"| {shape.name} | {shape.about} | the contenders disagree |")
            continue
        best = {n: o.best for n, o in by.items()}
        assert all(v is not None for v in best.values())
        ratio = best["compare"] / best["duckdb"]  # type: ignore[operator]
        cli_ratio = best["assess+previous"] / best["duckdb"]  # type: ignore[operator]
        added = best["assess+previous"] - best["assess"]  # type: ignore[operator]
        if shape.rows >= 10_000_000 and ratio > MAX_RATIO:
            code = max(code, 1)

        cells = {n: _cell(o) for n, o in by.items()}
        rows.append(
            f"| {shape.name} | {answers['compare']} | {cells['compare']} | "
            f"{cells['assess+previous']} | {cells['assess']} | {cells['duckdb']} | "
            f"{cells['duckdb-arrivals']} | **{ratio:.2f}x** | {cli_ratio:.2f}x | {added:+.2f} |"
        )
    print(
        "\nwall s (cpu s; load average when the run started), best of "
        f"{args.repeat}\n\n| shape | answer | compare | assess+previous | assess | duckdb "
        "(both ways) | duckdb arrivals only | compare / duckdb | assess+previous / duckdb "
        "| --previous adds s |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    print(
        f"\nload average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"exit code {code}"
    )
    return code


if __name__ == "__main__":
    sys.exit(main())

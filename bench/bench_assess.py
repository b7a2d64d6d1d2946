"""Performance acceptance of issue 2: file -> class table -> assessment, against peers.

Run ``bench/setup.sh`` once (DuckDB into ``bench/.venv``), then, from the repository root::

    .venv/bin/python bench/bench_assess.py

What it does (details and the meaning of each ratio: ``bench/README.md``):

1. generates its two test files (seeded: always the same files) if absent:
   ``bench/data/regional_<rows>_v<g>.parquet`` (QIs age, region, sex, year, chapter: the
   product of their cardinalities is small enough for a direct count, the kind of file the
   issue's targets describe; 2.2 million classes) and ``bench/data/qis_<rows>_v<g>.parquet``
   (age, 2,000 postcodes, sex, year, 40 diagnosis groups: a stress case where most classes
   are unique, 5.3 million of them). Then, for each file (``--data`` picks one):
2. reads the whole file once, so that every contender starts from the same page cache;
3. starts one worker process per contender: ours and pandas in the project venv (this
   interpreter), DuckDB in ``bench/.venv``. Each worker runs its task once as a warm-up, then
   the driver runs 3 rounds, each round every contender once in turn (interleaved, so a burst
   of load on the machine hits all of them alike), and keeps each contender's best wall time;
4. checks that every contender found the same classes (count, records, class-size histogram);
5. measures, untimed, the memory the assessment adds and the Adult attribute ranking;
6. prints every number and the ratios. The exit code is judged on the regional file (the
   stress file's figures are printed against the same targets, marked as not gating): 1 if
   a target is missed there, 2 if a contender could not run at all or the contenders
   disagree on either file, always after printing everything.

The same file is the worker: ``--worker NAME`` serves one contender on stdin/stdout (JSON
lines). Worker code imports only what its contender needs, so the DuckDB worker runs in a venv
without pandas or our package.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
PEER_PYTHON = HERE / ".venv" / "bin" / "python"
ADULT = ROOT / "tests" / "data" / "adult.csv"

QIS = ("age", "zip", "sex", "year", "diagnosis")
GENERATOR_VERSION = 2
REGIONAL_QIS = ("age", "region", "sex", "year", "chapter")
REGIONAL_VERSION = 1
SAMPLING_FRACTION = 0.01
REPEAT = 3

# Targets of issue 2.
MIN_SPEEDUP_VS_PANDAS = 3.0
MIN_SPEEDUP_VS_DUCKDB = 1.0  # strictly faster
MAX_ASSESS_OVERHEAD = 0.20
MAX_ASSESS_MEMORY_FACTOR = 2.0
MAX_ADULT_RANKING_SECONDS = 1.0


# ------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------


def data_path(rows: int) -> Path:
    return DATA / f"qis_{rows}_v{GENERATOR_VERSION}.parquet"


def regional_path(rows: int) -> Path:
    return DATA / f"regional_{rows}_v{REGIONAL_VERSION}.parquet"


def _pyramid_ages(rng: Any, n: int) -> Any:
    """Ages 0-99 from a population pyramid (flat to 60, then falling)."""
    import numpy as np

    ages = np.arange(100)
    pyramid = np.where(ages < 60, 1.0, np.exp(-(ages - 60) / 12.0)) + 0.02
    return rng.choice(ages, size=n, p=pyramid / pyramid.sum()).astype(np.int64)


def _by_age_band(rng: Any, age: Any, groups: int, exponent: float, shift: int) -> Any:
    """Zipf-like group indices whose ranking shifts by 20-year age band."""
    import numpy as np

    base = 1.0 / np.arange(1, groups + 1) ** exponent
    band = np.minimum(age // 20, 4)
    idx = np.empty(age.shape[0], dtype=np.int64)
    for b in range(5):
        rows_b = np.flatnonzero(band == b)
        p = np.roll(base, shift * b)
        idx[rows_b] = rng.choice(groups, size=rows_b.size, p=p / p.sum())
    return idx


def _strings(values: Any, idx: Any) -> Any:
    """Plain (not dictionary) string column, as most writers produce them."""
    import pyarrow as pa

    return pa.array(values).take(pa.array(idx))


def _write(table: Any, path: Path) -> None:
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp)  # pyarrow defaults: snappy, dictionary pages, 1 Mi-row groups
    tmp.replace(path)


def generate_regional(path: Path, rows: int) -> None:
    """A hospital-discharge-like extract whose QIs have a small product of cardinalities.

    ``age`` int64 0-99 (population pyramid), ``region`` string of 96 regions (sizes
    ``1/rank^0.8``: capitals bigger, no village tail), ``sex`` string F/M and a rare X,
    ``year`` int32 2015-2024 (volumes growing), ``chapter`` string of 22 diagnosis chapters
    (Zipf-like, shifted by age band). 100 x 96 x 3 x 10 x 22 = 6.3 million code
    combinations, of which about 2.2 million occur: the product is small enough for a direct
    count (``bincount``), the case the issue's own measurement describes. Plus a record id
    and an amount (not read). No missing values (pandas' groupby would drop them).
    """
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(20241129)
    n = rows
    age = _pyramid_ages(rng, n)
    n_reg = 96
    reg_size = 1.0 / np.arange(1, n_reg + 1) ** 0.8
    reg_idx = rng.choice(n_reg, size=n, p=reg_size / reg_size.sum())
    regions = np.array([f"R{i:02d}" for i in rng.permutation(np.arange(1, n_reg + 1))])
    sex_idx = rng.choice(3, size=n, p=[0.507, 0.490, 0.003])
    years = np.arange(2015, 2025)
    volume = np.linspace(1.0, 1.6, years.size)
    year = rng.choice(years, size=n, p=volume / volume.sum()).astype(np.int32)
    ch_idx = _by_age_band(rng, age, 22, 1.1, 4)
    chapters = np.array([f"CH{i:02d}" for i in range(1, 23)])
    table = pa.table(
        {
            "record_id": np.arange(n, dtype=np.int64),
            "age": age,
            "region": _strings(regions, reg_idx),
            "sex": _strings(np.array(["F", "M", "X"]), sex_idx),
            "year": year,
            "chapter": _strings(chapters, ch_idx),
            "amount": np.round(rng.lognormal(5.0, 1.0, size=n), 2),
        }
    )
    _write(table, path)


def generate(path: Path, rows: int) -> None:
    """Write a realistic, skewed table of ``rows`` records (seeded: always the same file).

    QIs: ``age`` int64 0-99 (a population pyramid), ``zip`` string of 2,000 postcodes whose
    sizes follow the rank-size rule (Zipf's law of town sizes: a few cities, many villages),
    ``sex`` string F/M plus a rare X,
    ``year`` int32 2015-2024 (volumes growing), ``diagnosis`` string of 40 groups (Zipf-like,
    and shifted by age band: children and the old have their own common groups). Two non-QI
    columns (a record id and an amount) make the file wider than the QIs, as real files are.
    No missing values, so that pandas' ``groupby`` (which drops missing keys by default)
    counts the same classes as the other contenders.
    """
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(20240602)
    n = rows
    age = _pyramid_ages(rng, n)

    n_zip = 2000
    zips = np.array(
        [f"{z:05d}" for z in rng.choice(np.arange(1000, 99999), size=n_zip, replace=False)]
    )
    zip_size = 1.0 / np.arange(1, n_zip + 1)  # rank-size rule (Zipf's law of town sizes)
    zip_idx = rng.choice(n_zip, size=n, p=zip_size / zip_size.sum())

    sex_idx = rng.choice(3, size=n, p=[0.507, 0.490, 0.003])

    years = np.arange(2015, 2025)
    volume = np.linspace(1.0, 1.6, years.size)
    year = rng.choice(years, size=n, p=volume / volume.sum()).astype(np.int32)

    # 40 groups, 5 age bands, each with its own ranking of the groups
    dx_idx = _by_age_band(rng, age, 40, 1.1, 7)
    diagnoses = np.array([f"DX-{i:02d}" for i in range(40)])

    table = pa.table(
        {
            "record_id": np.arange(n, dtype=np.int64),
            "age": age,
            "zip": _strings(zips, zip_idx),
            "sex": _strings(np.array(["F", "M", "X"]), sex_idx),
            "year": year,
            "diagnosis": _strings(diagnoses, dx_idx),
            "amount": np.round(rng.lognormal(5.0, 1.0, size=n), 2),
        }
    )
    _write(table, path)


def warm_page_cache(path: Path) -> float:
    """Read the whole file once (for all contenders alike); returns the seconds it took."""
    start = time.perf_counter()
    with path.open("rb") as fh:
        while fh.read(1 << 24):
            pass
    return time.perf_counter() - start


# ------------------------------------------------------------------------------------------
# Workers (one process per contender; only the contender's own imports)
# ------------------------------------------------------------------------------------------


def _digest(sizes: Any) -> dict[str, Any]:
    """Classes, records and a hash of the class-size histogram: equal results, equal digest."""
    import numpy as np

    sizes = np.asarray(sizes, dtype=np.int64)
    values, counts = np.unique(sizes, return_counts=True)
    h = hashlib.sha256(values.tobytes() + counts.tobytes()).hexdigest()[:16]
    return {"classes": int(sizes.shape[0]), "records": int(sizes.sum()), "histogram": h}


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    gc.collect()
    cpu = time.process_time()
    wall = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    return result, wall, cpu


def _rss_status() -> dict[str, int]:
    """VmRSS / VmHWM of this process in bytes (Linux); empty elsewhere."""
    out: dict[str, int] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def _reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class OursWorker:
    """reident_airflow: file -> class table (``class_table_from_file``), nothing else."""

    def __init__(self, path: str, qis: list[str]) -> None:
        self.path = path
        self.qis = qis

    def run(self) -> dict[str, Any]:
        from reident_airflow.sources.files import class_table_from_file

        table, wall, cpu = _timed(lambda: class_table_from_file(self.path, self.qis))
        return {"digest": _digest(table.sizes), "times": {"class_table": [wall, cpu]}}


class OursAssessWorker:
    """reident_airflow: file -> class table, then the whole assessment on it (timed apart).

    A process of its own, so that the assessment's allocations do not disturb the
    class-table timings of :class:`OursWorker` (which, like the peers, does one thing only).
    The overhead ratio divides this worker's assessment time by the better of the two
    workers' class-table times.
    """

    def __init__(self, path: str, qis: list[str]) -> None:
        self.path = path
        self.qis = qis

    def run(self) -> dict[str, Any]:
        from reident_airflow.engine.assessment import assess
        from reident_airflow.sources.files import class_table_from_file

        table, ct_wall, ct_cpu = _timed(lambda: class_table_from_file(self.path, self.qis))
        _, as_wall, as_cpu = _timed(lambda: assess(table, sampling_fraction=SAMPLING_FRACTION))
        # breakdown only (not a target): everything but the attribute ranking
        _, nr_wall, nr_cpu = _timed(
            lambda: assess(table, sampling_fraction=SAMPLING_FRACTION, attributes=False)
        )
        return {
            "digest": _digest(table.sizes),
            "times": {
                "class_table": [ct_wall, ct_cpu],
                "assess": [as_wall, as_cpu],
                "assess_no_ranking": [nr_wall, nr_cpu],
            },
        }

    def memory(self) -> dict[str, Any]:
        """What the assessment adds at peak, on top of the class table (untimed run).

        tracemalloc sees every numpy and pandas allocation (both report to it); the Arrow
        pool's counter is read too (the assessment should allocate nothing there); VmHWM is
        the kernel's view (reset just before, read just after).
        """
        import tracemalloc

        import pyarrow as pa
        import pyarrow.parquet as pq

        from reident_airflow.engine.assessment import assess
        from reident_airflow.sources.files import class_table_from_file, read_columns

        qi_table = read_columns(self.path, self.qis)
        qi_bytes = int(qi_table.nbytes)
        qi_types = {f.name: str(f.type) for f in qi_table.schema}
        del qi_table
        plain = pq.read_table(self.path, columns=self.qis)  # strings materialised
        qi_plain_bytes = int(plain.nbytes)
        del plain
        table = class_table_from_file(self.path, self.qis)
        class_table_bytes = int(table.sizes.nbytes + table.codes.nbytes)
        gc.collect()
        arrow_before = pa.total_allocated_bytes()
        rss_reset = _reset_peak_rss()
        rss_before = _rss_status()
        tracemalloc.start()
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        assess(table, sampling_fraction=SAMPLING_FRACTION)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss_after = _rss_status()
        arrow_after = pa.total_allocated_bytes()
        hwm_delta = None
        if rss_reset and rss_before and rss_after:
            hwm_delta = rss_after["VmHWM"] - rss_before["VmRSS"]
        return {
            "qi_bytes": qi_bytes,
            "qi_types": qi_types,
            "qi_plain_bytes": qi_plain_bytes,
            "class_table_bytes": class_table_bytes,
            "tracemalloc_peak_added": int(peak - base),
            "arrow_added": int(arrow_after - arrow_before),
            "rss_hwm_added": hwm_delta,
        }

    def adult(self) -> dict[str, Any]:
        """Attribute ranking of all 511 subsets of Adult's 9 QIs, from its class table."""
        from reident_airflow.engine.attributes import attribute_risks
        from reident_airflow.sources.files import class_table_from_file, file_columns

        cols = file_columns(ADULT, sep=";")
        table, read_wall, _ = _timed(lambda: class_table_from_file(ADULT, cols, sep=";"))
        attribute_risks(table)  # warm-up
        best = None
        subsets = 0
        for _ in range(REPEAT):
            ranking, wall, cpu = _timed(lambda: attribute_risks(table))
            subsets = len(ranking)
            if best is None or wall < best[0]:
                best = (wall, cpu)
        assert best is not None
        return {
            "columns": len(cols),
            "records": table.records,
            "classes": table.classes,
            "subsets": subsets,
            "class_table_wall": read_wall,
            "ranking": list(best),
        }


class PandasWorker:
    """pandas.read_parquet + groupby(qis).size() (the project venv's pandas and pyarrow)."""

    def __init__(self, path: str, qis: list[str]) -> None:
        self.path = path
        self.qis = qis

    def run(self) -> dict[str, Any]:
        import pandas as pd

        def job() -> Any:
            return pd.read_parquet(self.path, columns=self.qis).groupby(self.qis).size()

        sizes, wall, cpu = _timed(job)
        return {"digest": _digest(sizes.to_numpy()), "times": {"class_table": [wall, cpu]}}


class DuckDBWorker:
    """DuckDB's own ``SELECT count(*) ... GROUP BY`` over the file, counts fetched to numpy."""

    def __init__(self, path: str, qis: list[str]) -> None:
        import duckdb

        self.con = duckdb.connect()  # in memory; threads = cores (DuckDB's default)
        cols = ", ".join(f'"{q}"' for q in qis)
        escaped = path.replace("'", "''")
        self.sql = f"SELECT count(*) AS n FROM read_parquet('{escaped}') GROUP BY {cols}"

    def run(self) -> dict[str, Any]:
        result, wall, cpu = _timed(lambda: self.con.execute(self.sql).fetchnumpy())
        return {"digest": _digest(result["n"]), "times": {"class_table": [wall, cpu]}}

    def about(self) -> dict[str, Any]:
        import duckdb

        threads = self.con.execute("SELECT current_setting('threads')").fetchone()
        return {"version": duckdb.__version__, "threads": threads[0] if threads else None}


WORKERS: dict[str, type] = {
    "ours": OursWorker,
    "ours_assess": OursAssessWorker,
    "pandas": PandasWorker,
    "duckdb": DuckDBWorker,
}


def serve(name: str, path: str, qis: list[str]) -> None:
    """Worker loop: one command per stdin line, one JSON line per answer on stdout."""
    out = sys.stdout
    sys.stdout = sys.stderr  # anything a library prints must not break the protocol
    try:
        worker = WORKERS[name](path, qis)
        out.write(json.dumps({"ok": True, "ready": name}) + "\n")
    except Exception as exc:  # reported, not raised: the driver prints it and goes on
        out.write(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        out.flush()
        return
    out.flush()
    for line in sys.stdin:
        command = line.strip()
        if command == "quit":
            break
        try:
            answer = {"ok": True, "result": getattr(worker, command)()}
        except Exception as exc:
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


# ------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------


class Worker:
    """A contender's worker process, driven line by line."""

    def __init__(self, name: str, python: Path, path: Path, qis: list[str]) -> None:
        self.name = name
        self.error: str | None = None
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [str(python), str(Path(__file__).resolve()), "--worker", name, "--file", str(path)]
        cmd += ["--qis", ",".join(qis)]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )
        hello = self._read()
        if not hello.get("ok"):
            self.error = hello.get("error", "did not start")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            return {"ok": False, "error": f"worker exited (code {self.proc.wait()})"}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, command: str) -> dict[str, Any] | None:
        if self.error is not None:
            return None
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.error = "worker exited"
            return None
        answer = self._read()
        if not answer.get("ok"):
            self.error = f"{command}: {answer.get('error')}"
            return None
        result: dict[str, Any] = answer["result"]
        return result

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _mib(b: float | None) -> str:
    return "n/a" if b is None else f"{b / 2**20:,.1f} MiB"


def _s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f} s"


DATASETS = {
    # name: (path for a row count, generator, QIs, gating the exit code)
    "regional": (regional_path, generate_regional, REGIONAL_QIS, True),
    "postcode": (data_path, generate, QIS, False),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the test file")
    parser.add_argument("--repeat", type=int, default=REPEAT, help="timed rounds (best kept)")
    parser.add_argument(
        "--data", choices=[*DATASETS, "both"], default="both", help="which test file(s)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--qis", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        serve(args.worker, args.file, args.qis.split(","))
        return 0

    print(f"# reident-airflow bench: issue 2 performance acceptance ({args.rows:,} rows)")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    names = list(DATASETS) if args.data == "both" else [args.data]
    summary: list[tuple[str, bool, list[tuple[str, str, bool | None]]]] = []
    failed = False
    adult_done = False
    for name in names:
        make_path, make, qis, gating = DATASETS[name]
        path = make_path(args.rows)
        print()
        print(f"## {name} file" + ("" if gating else " (stress case: reported, not gating)"))
        if not path.exists():
            print(f"generating {path.relative_to(ROOT)} ...", flush=True)
            start = time.perf_counter()
            make(path, args.rows)
            print(f"  done in {time.perf_counter() - start:.1f} s")
        print(f"file: {path.relative_to(ROOT)} ({path.stat().st_size / 2**20:,.1f} MiB)")
        checks, failures = run_file(path, list(qis), args.repeat, adult=not adult_done)
        adult_done = True
        summary.append((name, gating, checks))
        for f in failures:
            print(f"  [FAIL] {f}")
        failed = failed or bool(failures)

    print()
    print("targets (issue 2):")
    missed = False
    for name, gating, checks in summary:
        note = "" if gating else " (stress case, not gating)"
        print(f"  {name} file{note}:")
        for label, value, ok in checks:
            verdict = "PASS" if ok else ("n/a " if ok is None else "MISS")
            missed = missed or (gating and not ok)
            print(f"    [{verdict}] {label}: {value}")
    if failed:
        return 2
    return 1 if missed else 0


def run_file(
    path: Path, qis: list[str], repeat: int, *, adult: bool
) -> tuple[list[tuple[str, str, bool | None]], list[str]]:
    """Time every contender on one file; print the figures; return the target checks."""
    cache_read = warm_page_cache(path)
    print(f"page cache: whole file read once before any contender ({cache_read:.2f} s)")

    contenders: list[Worker] = [
        Worker("ours", Path(sys.executable), path, qis),
        Worker("pandas", Path(sys.executable), path, qis),
    ]
    if PEER_PYTHON.exists():
        contenders.append(Worker("duckdb", PEER_PYTHON, path, qis))
    else:
        print(f"!! {PEER_PYTHON.relative_to(ROOT)} missing: run bench/setup.sh for DuckDB")
    ours_assess = Worker("ours_assess", Path(sys.executable), path, qis)
    contenders.append(ours_assess)
    failures: list[str] = []
    runs: dict[str, list[dict[str, Any]]] = {w.name: [] for w in contenders}
    try:
        # warm-up: every contender once (imports, first read), not timed
        for w in contenders:
            w.call("run")
        for _ in range(repeat):
            for w in contenders:
                result = w.call("run")
                if result is not None:
                    runs[w.name].append(result)
        about_duckdb = None
        duck = next((w for w in contenders if w.name == "duckdb"), None)
        if duck is not None:
            about_duckdb = duck.call("about")
        memory = ours_assess.call("memory")
        adult_result = ours_assess.call("adult") if adult else None
    finally:
        for w in contenders:
            w.close()
    for w in contenders:
        if w.error:
            failures.append(f"{w.name}: {w.error}")

    def best(name: str, key: str) -> tuple[float, float, float] | None:
        """(best wall, median wall, cpu of the best run) over the timed rounds."""
        times = [r["times"][key] for r in runs.get(name, [])]
        if not times:
            return None
        walls = sorted(t[0] for t in times)
        wall, cpu = min(times, key=lambda t: t[0])
        return wall, walls[len(walls) // 2], cpu

    print()
    print(f"timings: best of {repeat} interleaved rounds after one warm-up (wall clock;")
    print("cpu = process CPU time of that best run, all threads)")
    header = f"{'contender':<44} {'best':>9} {'median':>9} {'cpu':>9}"
    print(header)
    print("-" * len(header))
    labels = {
        ("ours", "class_table"): "ours: file -> class table",
        ("pandas", "class_table"): "pandas: read_parquet + groupby(qis).size()",
        ("duckdb", "class_table"): "duckdb: SELECT count(*) ... GROUP BY qis",
        ("ours_assess", "class_table"): "ours (2nd process): file -> class table",
        ("ours_assess", "assess"): f"  then assess(sampling_fraction={SAMPLING_FRACTION})",
        ("ours_assess", "assess_no_ranking"): "  (the same without the attribute ranking)",
    }
    stats: dict[tuple[str, str], tuple[float, float, float] | None] = {}
    for (name, key), label in labels.items():
        stats[name, key] = best(name, key)
        b = stats[name, key]
        if b is None:
            print(f"{label:<44} {'n/a':>9} {'n/a':>9} {'n/a':>9}")
        else:
            print(f"{label:<44} {b[0]:>8.3f}s {b[1]:>8.3f}s {b[2]:>8.3f}s")
    if about_duckdb:
        print(f"(duckdb {about_duckdb['version']}, threads={about_duckdb['threads']})")

    # every contender must have counted the same classes
    digests = {name: rs[0]["digest"] for name, rs in runs.items() if rs}
    print()
    for name, d in digests.items():
        print(
            f"{name:<8} classes {d['classes']:>12,}  records {d['records']:>12,}  "
            f"size histogram {d['histogram']}"
        )
    if len({json.dumps(d, sort_keys=True) for d in digests.values()}) > 1:
        failures.append("contenders disagree on the classes (see above)")

    checks: list[tuple[str, str, bool | None]] = []
    ours_ct = stats["ours", "class_table"]
    pandas_ct = stats["pandas", "class_table"]
    duck_ct = stats["duckdb", "class_table"]
    ours_as = stats["ours_assess", "assess"]
    ours_as_ct = stats["ours_assess", "class_table"]

    # Against the peers: our first process only (3 timed runs, like each peer). The
    # assessment's overhead is divided by the better of our two processes' class-table times
    # (same code), the stricter choice: the second process's class tables run amid the
    # assessment's allocations and often come out slower.
    ours_best = min((t for t in (ours_ct, ours_as_ct) if t is not None), default=None)

    def ratio(
        a: tuple[float, float, float] | None, b: tuple[float, float, float] | None, cpu: bool
    ) -> float | None:
        if a is None or b is None:
            return None
        return a[2] / b[2] if cpu else a[0] / b[0]

    def check(
        label: str,
        a: tuple[float, float, float] | None,
        b: tuple[float, float, float] | None,
        target: str,
        passes: Callable[[float], bool],
        percent: bool = False,
    ) -> None:
        r = ratio(a, b, cpu=False)
        c = ratio(a, b, cpu=True)
        if r is None or c is None:
            checks.append((label, "n/a", None))
            return
        spec = ".1%" if percent else ".2f"
        unit = "" if percent else "x"
        text = f"{r:{spec}}{unit} (target {target}; by CPU time: {c:{spec}}{unit})"
        checks.append((label, text, passes(r)))

    check(
        "pandas time / our class-table time",
        pandas_ct,
        ours_ct,
        f">= {MIN_SPEEDUP_VS_PANDAS:.0f}x",
        lambda r: r >= MIN_SPEEDUP_VS_PANDAS,
    )
    check(
        "DuckDB time / our class-table time",
        duck_ct,
        ours_ct,
        f"> {MIN_SPEEDUP_VS_DUCKDB:.0f}x",
        lambda r: r > MIN_SPEEDUP_VS_DUCKDB,
    )
    check(
        "assessment time / class-table time",
        ours_as,
        ours_best,
        f"< {MAX_ASSESS_OVERHEAD:.0%}",
        lambda r: r < MAX_ASSESS_OVERHEAD,
        percent=True,
    )
    if memory:
        added = memory["tracemalloc_peak_added"] + max(memory["arrow_added"], 0)
        factor = added / memory["qi_bytes"]
        checks.append(
            (
                "assessment peak memory / QI columns",
                f"{factor:.2f}x (target < {MAX_ASSESS_MEMORY_FACTOR:.0f}x)",
                factor < MAX_ASSESS_MEMORY_FACTOR,
            )
        )
    else:
        checks.append(("assessment peak memory / QI columns", "n/a", None))
    if adult_result:
        wall = adult_result["ranking"][0]
        checks.append(
            (
                f"Adult ranking, {adult_result['subsets']} subsets",
                f"{wall:.3f} s (target < {MAX_ADULT_RANKING_SECONDS:.0f} s)",
                wall < MAX_ADULT_RANKING_SECONDS,
            )
        )
    elif adult:
        checks.append(("Adult ranking", "n/a", None))

    if memory:
        print()
        print("memory the assessment adds at peak (untimed run, on top of the class table):")
        print(
            f"  QI columns in memory, as our reader holds them: {_mix(memory)}\n"
            f"  (the same columns with strings materialised: {_mib(memory['qi_plain_bytes'])};"
            " the target is judged against the smaller size above)\n"
            f"  class table (sizes + codes): {_mib(memory['class_table_bytes'])}\n"
            f"  tracemalloc peak added (numpy, pandas, Python): "
            f"{_mib(memory['tracemalloc_peak_added'])}\n"
            f"  Arrow memory pool added: {_mib(memory['arrow_added'])}\n"
            f"  kernel peak RSS (VmHWM) above RSS before: {_mib(memory['rss_hwm_added'])}"
        )
    if adult_result:
        print()
        print(
            f"Adult ({ADULT.relative_to(ROOT)}): {adult_result['records']:,} records, "
            f"{adult_result['columns']} QIs, {adult_result['classes']:,} classes; class table "
            f"{_s(adult_result['class_table_wall'])}, ranking best of {REPEAT} "
            f"{_s(adult_result['ranking'][0])}"
        )

    return checks, failures


def _mix(memory: dict[str, Any]) -> str:
    types = ", ".join(f"{k} {v}" for k, v in memory["qi_types"].items())
    return f"{_mib(memory['qi_bytes'])} ({types})"


if __name__ == "__main__":
    sys.exit(main())

"""Issue 38: the identifier scan's national-identifier checks against python-stdnum's.

From the repository root, with python-stdnum installed (the ``dev`` extra)::

    .venv/bin/python bench/bench_id_checks.py              # 1,000,000 values per check
    .venv/bin/python bench/bench_id_checks.py --count 100000

For each identifier both implementations judge the same seeded list of digit strings of its
length (random, so mostly invalid, as most candidates the scan's pattern brings are); the
script prints the best of three wall times per million values, the ratio, and whether the
two agreed on every value (a NIR's first digit outside INSEE's 1, 2, 3, 4, 7, 8, and a
Steuer-ID with a digit three times in a row, are refused by ours and read by stdnum: those
values are left out of the comparison, not of the timing).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reident_airflow.engine.identifier_checks import (
    canadian_sin,
    dutch_bsn,
    french_nir,
    german_tax_id,
    nhs_number,
)


def _comparable(value: str) -> bool:
    """Whether both implementations apply the same rules to ``value``: not a NIR (15 digits)
    whose first digit INSEE never gives, nor a Steuer-ID (11 digits) with a digit three
    times in a row among the first ten (refused by ours, read by stdnum 2.2)."""
    if len(value) == 15:
        return value[0] in "123478"
    if len(value) == 11:
        return not any(value[k] == value[k + 1] == value[k + 2] for k in range(8))
    return True


def _best(check: Callable[[str], object], values: list[str]) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        for v in values:
            check(v)
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    from stdnum.ca import sin
    from stdnum.de import idnr
    from stdnum.fr import nir
    from stdnum.gb import nhs
    from stdnum.nl import bsn

    cases = [
        ("NHS number", nhs_number, nhs.is_valid, 10),
        ("NIR", french_nir, nir.is_valid, 15),
        ("BSN", dutch_bsn, bsn.is_valid, 9),
        ("Steuer-ID", german_tax_id, idnr.is_valid, 11),
        ("SIN", canadian_sin, sin.is_valid, 9),
    ]
    rng = random.Random(38)
    scale = 1_000_000 / args.count
    print("| check | ours (s per 1M) | python-stdnum 2.2 (s per 1M) | stdnum / ours | agree |")
    print("| --- | ---: | ---: | ---: | --- |")
    for label, ours, theirs, length in cases:
        values = ["".join(rng.choices("0123456789", k=length)) for _ in range(args.count)]
        mine, other = _best(ours, values) * scale, _best(theirs, values) * scale
        compared = [v for v in values if _comparable(v)]
        agree = all(bool(ours(v)) == bool(theirs(v)) for v in compared)
        print(f"| {label} | {mine:.2f} | {other:.2f} | {other / mine:.1f} | {agree} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

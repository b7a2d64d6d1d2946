"""sdcMicro 5.8.0 reference outputs: ``../shared/oracle/sdcmicro`` or the copies in tests/data.

``summary.json`` names the sdcMicro calls that produced each file (``freqCalc``,
``measure_risk``, ``suda2``, ``ldiversity``); the data files are the inputs they were run on.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "oracle" / "sdcmicro"
COPIES = Path(__file__).resolve().parent / "data" / "sdcmicro"


def sdcmicro_data(name: str) -> Path:
    """Path of a reference file: the shared oracle when present, else the copy."""
    shared = SHARED / name
    return shared if shared.exists() else COPIES / name


@cache
def sdcmicro_summary() -> dict[str, Any]:
    """``summary.json``'s ``datasets`` (keyed ``testdata``, ``francdat``)."""
    with sdcmicro_data("summary.json").open(encoding="utf-8") as fh:
        datasets: dict[str, Any] = json.load(fh)["datasets"]
    return datasets

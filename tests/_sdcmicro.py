"""sdcMicro 5.8.0 reference outputs, the files of ``tests/data/sdcmicro``.

``summary.json`` names the sdcMicro calls that produced each file (``freqCalc``,
``measure_risk``, ``suda2``, ``ldiversity``); the data files are the inputs they were run on.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SDCMICRO_DATA = Path(__file__).resolve().parent / "data" / "sdcmicro"


def sdcmicro_data(name: str) -> Path:
    """Path of the reference file ``name``: an input data set or one of sdcMicro's outputs."""
    return SDCMICRO_DATA / name


@cache
def sdcmicro_summary() -> dict[str, Any]:
    """``summary.json``'s ``datasets`` (keyed ``testdata``, ``francdat``)."""
    with sdcmicro_data("summary.json").open(encoding="utf-8") as fh:
        datasets: dict[str, Any] = json.load(fh)["datasets"]
    return datasets

"""Policy presets in the expectations: a named gate of published guidance as the limit.

``preset="ema-0070"`` on ``expect_table_reidentification_risk_to_be_below`` gates
``prosecutor.average_risk`` at 0.09; ``preset="k11"`` on ``expect_table_to_be_k_anonymous``
requires k = 11 (:data:`~reident_airflow.engine.presets.PRESETS`, ``docs/metrics.md`` §11).
The preset fills what is not given: the measure and ``max_value`` of the risk expectation, ``k``
of the k-anonymity one. A limit given beside it wins, as on the command line
(``--preset ema-0070 --max-average-risk 0.05``). A preset whose limits this expectation does not
check (``k5`` on the risk expectation) is a configuration error that names the expectation to
use. These are cross checks (:mod:`reident_airflow.gx.parameters`): they run when the
expectation is built, so the resolved measure and limit are in its configuration and Data Docs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reident_airflow.engine import InvalidInputError
from reident_airflow.engine.presets import Preset, find_preset
from reident_airflow.gx.parameters import MEASURES

__all__ = ["DEFAULT_MEASURE", "apply_k_preset", "apply_risk_preset", "check_preset"]

#: The risk expectation's measure when neither it nor a preset is given.
DEFAULT_MEASURE = "prosecutor.highest_risk"

_RISK = "expect_table_reidentification_risk_to_be_below"
_K = "expect_table_to_be_k_anonymous"


def check_preset(value: Any, values: Mapping[str, Any]) -> str | None:
    """A preset's name as :data:`~reident_airflow.engine.presets.PRESETS` spells it
    (any case given); an unknown name is refused with the closest known one."""
    if value is None:
        return None
    try:
        return find_preset(value).name
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from exc


def _gated_measures(preset: Preset) -> dict[str, str]:
    """The measures of :data:`MEASURES` the preset limits, by name, each with its gate."""
    return {
        name: str(measure.gate)
        for name, measure in MEASURES.items()
        if measure.gate is not None and measure.gate in preset.limits
    }


def _limits(preset: Preset) -> str:
    return ", ".join(f"{name} {limit:g}" for name, limit in preset.limits.items())


def apply_risk_preset(values: dict[str, Any]) -> None:
    """Resolve ``measure`` and ``max_value`` of the risk expectation from its ``preset``.

    Without a preset the measure defaults to :data:`DEFAULT_MEASURE`. With one, a measure
    given must be one the preset limits; ``max_value`` given wins over the preset's limit.
    """
    name = values.get("preset")
    if name is None:
        if values.get("measure") is None:
            values["measure"] = DEFAULT_MEASURE
        return
    preset = find_preset(name)
    gated = _gated_measures(preset)
    if not gated:
        raise ValueError(
            f"preset {preset.name!r} ({_limits(preset)}) sets no risk limit {_RISK} checks: "
            f"use {_K} with preset={preset.name!r}"
        )
    measure = values.get("measure")
    if measure is None:
        measure = next(iter(gated))
    elif measure not in gated:
        raise ValueError(
            f"preset {preset.name!r} limits {', '.join(gated)}, not measure {measure!r}: "
            "leave measure out, or give max_value without the preset"
        )
    values["measure"] = measure
    if values.get("max_value") is None:
        values["max_value"] = preset.limits[gated[measure]]


def apply_k_preset(values: dict[str, Any]) -> None:
    """Resolve ``k`` of the k-anonymity expectation from its ``preset`` (``k`` given wins)."""
    name = values.get("preset")
    if name is not None:
        preset = find_preset(name)
        if "min_k" not in preset.limits:
            measures = ", ".join(_gated_measures(preset)) or "none"
            raise ValueError(
                f"preset {preset.name!r} ({_limits(preset)}) sets no k: use {_RISK} with "
                f"preset={preset.name!r} (measure {measures})"
            )
        if values.get("k") is None:
            values["k"] = int(preset.limits["min_k"])
    if values.get("k") is None:
        raise ValueError(
            "k is required: the smallest acceptable class size (or a preset, e.g. 'k11')"
        )

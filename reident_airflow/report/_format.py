"""Escaping, number formatting and tolerant look-ups shared by the report renderers.

Every string that reaches the HTML goes through :func:`esc`; every number through one of the
formatters, which turn ``None`` (the JSON's "not available") into a dash, never into 0.
"""

from __future__ import annotations

import html
import math
from typing import Any, TypeGuard

__all__ = ["NA", "count", "dig", "esc", "is_number", "number", "percent", "share_text"]

#: What the report shows for a value the JSON marks as not available (``null``) or lacks.
NA = "n/a"


def esc(value: Any) -> str:
    """``value`` as text, escaped for HTML element content and quoted attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


def is_number(value: Any) -> TypeGuard[int | float]:
    """A finite int or float (booleans are not numbers here)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def number(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; ``n/a`` when it is not one."""
    if not is_number(value):
        return NA
    if isinstance(value, int):
        return f"{value:,}"
    v = float(value)
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if v != 0 and (abs(v) < 1e-4 or abs(v) >= 1e7):
        return f"{v:.{digits - 1}e}"
    text = f"{v:.{digits}g}"
    if "e" in text:  # e.g. 1.234e+04 from :g -> write it out
        return f"{v:,.0f}"
    return text


def count(value: Any) -> str:
    """A whole number with thousands separators (``n/a`` when not a number)."""
    if not is_number(value):
        return NA
    v = float(value)
    return f"{int(v):,}" if v.is_integer() else number(v)


def percent(value: Any, digits: int = 3) -> str:
    """A share in [0, 1] as a percentage (``0.0140906`` -> ``1.41 %``)."""
    if not is_number(value):
        return NA
    p = 100.0 * float(value)
    if p == 0:
        return "0 %"
    if abs(p) < 1e-3:
        return f"{p:.{digits - 1}e} %"
    text = f"{p:.{digits}g}"
    if "e" in text:
        text = f"{p:.0f}"
    return f"{text} %"


def share_text(value: Any) -> str:
    """A share with both readings: ``1.41 % (0.01409)``."""
    if not is_number(value):
        return NA
    return f"{percent(value)} ({number(value)})"


def dig(data: Any, *path: str | int) -> Any:
    """``data[path[0]][path[1]]...`` or ``None`` where any step is missing or of the wrong type."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(data, list) or not -len(data) <= step < len(data):
                return None
            data = data[step]
        else:
            if not isinstance(data, dict):
                return None
            data = data.get(step)
    return data

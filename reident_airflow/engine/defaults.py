"""Defaults shared by the engine and every adapter (CLI, operators, expectations).

A module of constants only, with no imports, so that the command line can show them in its
help without loading the engine.
"""

from __future__ import annotations

__all__ = ["DEFAULT_RECORD_THRESHOLD", "DEFAULT_RECURSIVE_C", "DEFAULT_TARGET", "REGIONS"]

#: Record risk above which a record counts as "at risk" (ARX's default, 0.2: classes of 1-4).
DEFAULT_RECORD_THRESHOLD = 0.2

#: ``c`` of recursive (c,l)-diversity (sdcMicro's default).
DEFAULT_RECURSIVE_C = 2.0

#: Population presets by region name, matched in any case: ``N`` of the region's population
#: (ARX's ``ARXPopulationModel.Region``; only USA so far).
REGIONS: dict[str, int] = {"usa": 317_238_626}

DEFAULT_TARGET: float = 50.0
"""Default target for Column Direct Match Protection, in percent.

``P_c < 50`` means ``m_c * u_c / n^2 > 1/2``: by the reading in the module docstring, more
than half of the individuals are expected to be re-identified from that single column, so the
column protects fewer individuals than it exposes. Because ``m_c <= n`` and ``u_c <= n``,
``P_c < 50`` is only possible when *both* ``m_c > n/2`` (most values released unchanged) and
``u_c > n/2`` (most values distinct): that is the signature of an identifier or near-identifier
left in place, which is what this metric exists to catch. At 50 the gate never fails a
low-cardinality column however much of it is kept (``u_c <= n/2`` gives ``P_c >= 50``), nor a
column that was mostly perturbed (``m_c <= n/2`` gives ``P_c >= 50``). Stricter releases can
raise the target (e.g. 90: at most a tenth of the individuals re-identifiable by one column).
"""

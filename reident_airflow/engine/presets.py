"""Named release gates taken from published guidance (docs/metrics.md §11).

"Which threshold?" is the question users of every risk tool ask first. A preset answers it
with the limits a published source recommends for a release context, and says which source:
the assessment JSON and the report name the preset that was applied. Limits given beside a
preset override the preset's own, one by one.

The presets gate the prosecutor model (the strictest of the three attacker models, see
docs/metrics.md §3) or the smallest class size:

========================  =============================================  ==================
name                      limits                                         source
========================  =============================================  ==================
``ema-0070``              average risk <= 0.09                           EMA Policy 0070
``health-canada``         average risk <= 0.09                           Health Canada PRCI
``el-emam-public``        highest risk <= 0.05 (every class >= 20)       El Emam 2013
``el-emam-controlled``    highest risk <= 0.2 (every class >= 5)         El Emam 2013
``el-emam-trusted``       highest risk <= 0.33 (every class >= 3)        El Emam 2013
``k5``                    k >= 5                                         minimum class size
``k11``                   k >= 11                                        CMS cell size rule
========================  =============================================  ==================

Each preset also names the identifier scan's policy (docs/identifier-scan.md §10): the
public-release presets (``ema-0070``, ``health-canada``, ``el-emam-public``) ``fail`` with
the HIPAA Safe Harbor checks -- a release to anyone cannot take back a forgotten identifier,
and Safe Harbor's list is the published catalogue of what must not be in such a release --;
the others ``warn``: their recipients are bound by an agreement, and a date or a ZIP code may
be what they were meant to receive.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from reident_airflow.engine.errors import InvalidInputError

__all__ = ["PRESETS", "Preset", "find_preset"]


@dataclass(frozen=True)
class Preset:
    """A named set of gate limits (field names of the gate, e.g. ``max_average_risk``), the
    release context it is meant for and the published source it comes from; the identifier
    scan's policy (``"fail"`` or ``"warn"``) and whether it applies the Safe Harbor checks."""

    name: str
    limits: Mapping[str, float]
    context: str
    source: str
    scan_policy: str = "warn"
    safe_harbor: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "limits": dict(self.limits),
            "context": self.context,
            "source": self.source,
            "scan_policy": self.scan_policy,
            "safe_harbor": self.safe_harbor,
        }


_EMA = (
    "European Medicines Agency, External guidance on the implementation of the European "
    "Medicines Agency policy on the publication of clinical data for medicinal products for "
    "human use (EMA/90915/2016), section on the risk threshold: 0.09"
)
_HC = (
    "Health Canada, Guidance document on Public Release of Clinical Information (2019), "
    "recommended re-identification risk threshold for public release: 0.09"
)
_EL_EMAM = (
    "K. El Emam, Guide to the De-Identification of Personal Health Information, CRC Press "
    "(2013); K. El Emam and L. Arbuckle, Anonymizing Health Data, O'Reilly (2013)"
)
_CMS = (
    "U.S. Centers for Medicare & Medicaid Services, cell size suppression policy: no cell "
    "(here: class) of fewer than 11 individuals is released"
)


def _preset(
    name: str, limits: Mapping[str, float], context: str, source: str, *, public: bool = False
) -> Preset:
    """A preset; ``public``: a release to anyone, scanned with ``fail`` and Safe Harbor."""
    policy = "fail" if public else "warn"
    return Preset(name, MappingProxyType(dict(limits)), context, source, policy, public)


#: Every preset by name.
PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        p.name: p
        for p in (
            _preset(
                "ema-0070",
                {"max_average_risk": 0.09},
                "public release of clinical study reports",
                _EMA,
                public=True,
            ),
            _preset(
                "health-canada",
                {"max_average_risk": 0.09},
                "public release of clinical information",
                _HC,
                public=True,
            ),
            _preset(
                "el-emam-public",
                {"max_highest_risk": 0.05},
                "public release: no controls on who receives the data",
                _EL_EMAM,
                public=True,
            ),
            _preset(
                "el-emam-controlled",
                {"max_highest_risk": 0.2},
                "release to a known recipient under a data-sharing agreement with some controls",
                _EL_EMAM,
            ),
            _preset(
                "el-emam-trusted",
                {"max_highest_risk": 0.33},
                "release to a trusted recipient with strong security and privacy controls",
                _EL_EMAM,
            ),
            _preset(
                "k5",
                {"min_k": 5},
                "a common minimum class size for research extracts",
                "the minimum class size of 5 used by many statistical agencies' output checks",
            ),
            _preset("k11", {"min_k": 11}, "aggregate or record releases of health data", _CMS),
        )
    }
)


def find_preset(name: Any) -> Preset:
    """The preset called ``name`` (any case); an :class:`InvalidInputError` naming the
    closest known names otherwise."""
    key = name.strip().lower() if isinstance(name, str) else ""
    if key in PRESETS:
        return PRESETS[key]
    close = difflib.get_close_matches(key, list(PRESETS), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    known = ", ".join(PRESETS)
    raise InvalidInputError(f"unknown preset {name!r}{hint}; known presets: {known}")

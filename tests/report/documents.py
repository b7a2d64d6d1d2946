"""Small hand-made assessment documents (docs/contract.md §2) for the report and the summary.

Every number is computed by hand from one nine-record table on the QIs ``a, b``::

    (a, b)      records
    (x, 1)      1
    (y, 1)      1
    (z, 2)      2
    (w, 2)      5          -> 9 records, 4 classes, k = 1

- prosecutor: highest risk 1/1 = 1; average risk = classes / records = 4/9; lowest risk =
  1 / largest class = 1/5 = 0.2; records at risk (record risk > 0.2: classes smaller than 5)
  = (1 + 1 + 2) / 9 = 4/9; records affected by the highest risk = 2/9.
- advice at k = 3: the classes of 1, 1 and 2 are smaller than 3 -> 3 of 4 classes, 4 of 9
  records (44.4 %). Distinction of (a, b) = 4/9; without a, b alone has 2 values -> 2/9;
  without b, a alone has 4 values -> 4/9: leaving a out lowers it most, so a drives the risk.
- Datafly at k = 3 (suppression limit k = 3 records), hierarchies a: value -> *, b: value ->
  *: it first generalizes the QI with the most distinct values, a (4 against 2), to level 1:
  classes (*, 1) of 2 and (*, 2) of 7; the 2 records below 3 are within the limit of 3, so it
  stops at a -> 1, b -> 0 and suppresses 2 records.
- infeasible variant: a suppression limit of 0 and a hierarchy of b with level 0 only: at
  a -> 1, b -> 0 the class (*, 1) of 2 records stays below 3 and nothing may be suppressed.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["INFEASIBLE_DATAFLY", "SMALL_BREACH", "small_breach", "without"]

#: The nine-record table of the module's docstring, gated with min_k = 3 (breached: k = 1),
#: max_average_risk = 0.5 (met: 4/9) and a warning level of 0.4 on the average risk
#: (crossed: 4/9 > 0.4), under the preset "k5" whose min_k = 5 the min_k = 3 given overrides.
SMALL_BREACH: dict[str, Any] = {
    "schema": "reident.assessment/v1",
    "quasi_identifiers": ["a", "b"],
    "records": 9,
    "classes": 4,
    "k": 1,
    "excluded_records": 0,
    "class_size_histogram": [[1, 2], [2, 1], [5, 1]],
    "prosecutor": {
        "highest_risk": 1.0,
        "lowest_risk": 0.2,
        "average_risk": 4 / 9,
        "records_at_risk": 4 / 9,
        "record_threshold": 0.2,
        "records_affected_by_highest_risk": 2 / 9,
    },
    "thresholds": {"min_k": 3, "max_average_risk": 0.5},
    "breaches": [{"metric": "k", "observed": 1, "limit": 3}],
    "passed": False,
    "preset": "k5",
    "warn_thresholds": {"max_average_risk": 0.4},
    "warnings": [{"metric": "prosecutor.average_risk", "observed": 4 / 9, "limit": 0.4}],
    "advice": {
        "k": 3,
        "records": 9,
        "classes": 4,
        "classes_below_k": 3,
        "records_below_k": 4,
        "driver": {"column": "a", "distinction": 4 / 9, "distinction_without": 2 / 9},
        "datafly": {
            "k": 3,
            "feasible": True,
            "levels": {"a": 1, "b": 0},
            "suppressed_records": 2,
            "below_k": 0,
            "suppression_limit": 3,
        },
    },
}

#: The Datafly outlook of the infeasible variant (the module's docstring).
INFEASIBLE_DATAFLY: dict[str, Any] = {
    "k": 3,
    "feasible": False,
    "levels": {"a": 1, "b": 0},
    "suppressed_records": None,
    "below_k": 2,
    "suppression_limit": 0,
}


def small_breach(**changes: Any) -> dict[str, Any]:
    """A deep copy of :data:`SMALL_BREACH` with top-level keys replaced."""
    doc = copy.deepcopy(SMALL_BREACH)
    doc.update(changes)
    return doc


def without(*keys: str) -> dict[str, Any]:
    """:data:`SMALL_BREACH` as an older producer wrote it: without ``keys``."""
    doc = copy.deepcopy(SMALL_BREACH)
    for key in keys:
        del doc[key]
    return doc

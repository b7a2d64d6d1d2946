"""The error hierarchy of reident-airflow.

::

    ReidentError
     +-- InvalidInputError (also ValueError)   bad column or parameter, ragged/unreadable table
     |    +-- EmptyDatasetError                 no records to assess
     |    +-- HierarchyError                    a hierarchy that does not fit its column
     +-- AnonymizationInfeasibleError          k cannot be reached within the suppression limit
     +-- ThresholdBreached                     a release gate's limit was exceeded
     +-- TargetBusyError                       another run is publishing the same target

Messages carry aggregates only (counts, column names, limits): never a record's values.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AnonymizationInfeasibleError",
    "EmptyDatasetError",
    "HierarchyError",
    "InvalidInputError",
    "ReidentError",
    "TargetBusyError",
    "ThresholdBreached",
]


class ReidentError(Exception):
    """Root of every error raised on purpose by reident-airflow."""


class InvalidInputError(ReidentError, ValueError):
    """The input (a table, a column name, a parameter) cannot be used as given."""


class EmptyDatasetError(InvalidInputError):
    """The table holds no record to assess: that is an error, never "risk 0"."""


class HierarchyError(InvalidInputError):
    """A generalization hierarchy does not cover, or does not fit, its column."""


class AnonymizationInfeasibleError(ReidentError):
    """k-anonymity cannot be reached within the suppression limit.

    ``best_attempt`` carries the last (most generalized) state that was tried.
    """

    def __init__(self, message: str, best_attempt: Any = None) -> None:
        super().__init__(message)
        self.best_attempt = best_attempt


class ThresholdBreached(ReidentError):
    """A release gate's threshold was breached.

    ``breaches`` is the list of breached metrics (metric, observed, limit) and
    ``report`` the full result that was gated, both aggregates only.
    """

    def __init__(self, message: str, breaches: Any = None, report: Any = None) -> None:
        super().__init__(message)
        self.breaches = breaches
        self.report = report


class TargetBusyError(ReidentError):
    """Another run held the release target's lock (one writer per target) for longer than
    the publish would wait. Infrastructure, not the data: a retry once that run is done
    succeeds, so ``deterministic`` is false (the operators let Airflow's retries apply)."""

    deterministic = False

"""The error hierarchy of reident-airflow.

::

    ReidentError
     +-- InvalidInputError (also ValueError)   bad column or parameter, ragged/unreadable table
     |    +-- EmptyDatasetError                 no records to assess
     |    +-- HierarchyError                    a hierarchy that does not fit its column
     +-- AnonymizationInfeasibleError          k cannot be reached within the suppression limit
     +-- ThresholdBreached                     a release gate's limit was exceeded
     +-- ResourceExhaustedError                memory, disk space or the file-size limit ran out
     +-- TargetBusyError                       another run is publishing the same target
     +-- OperationCancelledError               the work was stopped (an operator's on_kill)

Messages carry aggregates only (counts, column names, limits): never a record's values.
"""

from __future__ import annotations

import errno
from typing import Any

__all__ = [
    "MEMORY_ADVICE",
    "AnonymizationInfeasibleError",
    "EmptyDatasetError",
    "HierarchyError",
    "InvalidInputError",
    "OperationCancelledError",
    "ReidentError",
    "ResourceExhaustedError",
    "TargetBusyError",
    "ThresholdBreached",
    "resource_error",
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


class ResourceExhaustedError(ReidentError):
    """The machine ran out of memory, of disk space or of the file-size limit (``ulimit -f``).

    Not the input's fault, and a retry with more room may pass: ``deterministic`` is False,
    so an operator lets Airflow retry it.
    """

    deterministic = False


#: The write errors a full disk or a limit gives, and how a message says them.
_WRITE_FAILURES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EFBIG: "a file reached the file-size limit (ulimit -f)",
}

#: What to do when memory runs out.
MEMORY_ADVICE = (
    "set --memory-limit (memory_limit in an operator) to what this process may really use, "
    "so that the grouping spills to disk, or name fewer quasi-identifiers"
)


def resource_error(
    exc: BaseException, *, folder: str | None = None, doing: str = "writing"
) -> ResourceExhaustedError | None:
    """``exc`` (a :class:`MemoryError`, pyarrow's ``ArrowMemoryError`` included, or an
    :class:`OSError` for a full disk, a quota or the file-size limit) as one line saying what
    ran out, where (``folder``, else the file the error names) and what to do; else ``None``."""
    if isinstance(exc, MemoryError):
        return ResourceExhaustedError(f"ran out of memory: {MEMORY_ADVICE}")
    if not isinstance(exc, OSError) or exc.errno not in _WRITE_FAILURES:
        return None
    reason = _WRITE_FAILURES[exc.errno]
    where = folder
    if where is None and exc.filename:
        where = f"the folder of {exc.filename}"
    place = f" in {where}" if where else ""
    if exc.errno == errno.EFBIG:
        fix = "raise the file-size limit (ulimit -f) or write somewhere without one"
    else:
        fix = "free space there, or write to a folder with room (TMPDIR for temporary files)"
    return ResourceExhaustedError(f"{reason} while {doing}{place}: {fix}")


class TargetBusyError(ReidentError):
    """Another run held the release target's lock (one writer per target) for longer than
    the publish would wait. Infrastructure, not the data: a retry once that run is done
    succeeds, so ``deterministic`` is false (the operators let Airflow's retries apply)."""

    deterministic = False


class OperationCancelledError(ReidentError):
    """The statement, query or job a reading ran was stopped while it ran: by the source's
    ``cancel()`` (an operator's ``on_kill``), a statement timeout or an administrator. Not the
    input's fault: ``deterministic`` is false, so an operator raises it as it is and Airflow
    decides what a killed task becomes."""

    deterministic = False

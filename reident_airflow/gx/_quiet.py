"""Quiet Great Expectations' import, before GE is first imported (by this package).

Importing GE logs at INFO: one line per public API function its documentation decorator
skips (~210, "Skipping registering function ...") and two for metrics GE declares twice.
Where a handler shows INFO (Airflow configures one), that is ~200 lines of noise at every
import of :mod:`reident_airflow.gx`: those two loggers are raised to WARNING, unless a level
was set on them already (a user's choice wins). Their warnings and errors, and every other
GE logger, still show.
"""

from __future__ import annotations

import logging

__all__ = ["QUIET_LOGGERS"]

#: The GE loggers whose INFO lines at import are noise.
QUIET_LOGGERS = ("great_expectations._docs_decorators", "great_expectations.expectations.registry")

for _name in QUIET_LOGGERS:
    _logger = logging.getLogger(_name)
    if _logger.level == logging.NOTSET:
        _logger.setLevel(logging.WARNING)

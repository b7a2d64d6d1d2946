"""Sub-commands of ``reident`` besides ``assess`` (which lives in :mod:`reident_airflow.cli`).

Each module listed in :data:`COMMAND_MODULES` defines
``register(subparsers, parents) -> None``: it adds its sub-parser with
``set_defaults(handler=callable(args, out) -> exit code)``. Handlers raise
:class:`~reident_airflow.engine.errors.ReidentError` for input errors (exit 2) and return
0 (passed) or 1 (breached).
"""

from __future__ import annotations

COMMAND_MODULES: tuple[str, ...] = (
    "reident_airflow.commands.direct_match",
    "reident_airflow.commands.datafly",
)

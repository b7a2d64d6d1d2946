"""Sub-commands of ``reident``, one module each; :mod:`reident_airflow.cli` is the entry point.

Each module listed in :data:`COMMAND_MODULES` defines
``register(subparsers, parents) -> None``: it adds its sub-parser
(:func:`~reident_airflow.commands.common.add_command`) with its handler,
``handler(args, out, err) -> exit code`` (stdout, stderr). Handlers raise
:class:`~reident_airflow.engine.errors.ReidentError` for input errors (exit 2) and return
0 (passed) or 1 (breached) (:mod:`reident_airflow.commands.common`). What the commands share
-- exit codes, argument types, progress lines, writing ``--json`` and ``--report`` -- is in
:mod:`~reident_airflow.commands.common`; what ``assess`` adds after the gate (warnings, the
advice on a k breach, the input's fingerprint) in :mod:`~reident_airflow.commands.assess_outcome`.
"""

from __future__ import annotations

__all__ = ["COMMAND_MODULES"]

#: The command modules, in the order ``reident --help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "reident_airflow.commands.assess",
    "reident_airflow.commands.direct_match",
    "reident_airflow.commands.datafly",
)

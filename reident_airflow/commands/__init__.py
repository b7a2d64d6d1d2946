"""Sub-commands of ``reident``, one module each; :mod:`reident_airflow.cli` is the entry point.

Each module listed in :data:`COMMAND_MODULES` is one sub-command, named after the module
(``direct_match`` is ``reident direct-match``), and defines:

- ``run(args, out, err) -> exit code`` (stdout, stderr): the first line of its docstring is
  the command's summary in ``reident --help``, the rest its ``--help`` description;
- ``EXIT_CODES``: what exit codes 0 and 1 mean, shown at the end of its ``--help``;
- ``add_arguments(parser)``: its options.

:func:`~reident_airflow.commands.common.add_command` turns a module into its sub-parser.
``run`` raises :class:`~reident_airflow.engine.errors.ReidentError` for input errors (exit 2)
and returns 0 (passed) or 1 (breached) (:mod:`reident_airflow.commands.common`). What the
commands share -- exit codes, argument types, progress lines, writing ``--json`` and
``--report`` -- is in :mod:`~reident_airflow.commands.common`.
"""

from __future__ import annotations

__all__ = ["COMMAND_MODULES"]

#: The command modules, in the order ``reident --help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "reident_airflow.commands.assess",
    "reident_airflow.commands.scan",
    "reident_airflow.commands.direct_match",
    "reident_airflow.commands.datafly",
)

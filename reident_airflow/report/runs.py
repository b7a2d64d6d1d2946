"""Writing a command's report (``--report``): what the run says about itself, and where the
report goes. The operators' ``report_path`` is written by their base class."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.report.render import render_report
from reident_airflow.report.writer import write_report

__all__ = ["cli_report", "source_text"]


def source_text(value: Any) -> str | None:
    """A data source as the report names it: a path as given; a URL without its password."""
    if value is None:
        return None
    text = str(value)
    if "://" not in text:
        return text
    import sqlalchemy as sa

    try:
        url = sa.make_url(text)
        if url.password is not None:
            return url.render_as_string(hide_password=True)
        return text
    except (sa.exc.ArgumentError, ValueError):  # not a SQLAlchemy URL: hide any user info
        parts = urlsplit(text)
        if "@" in parts.netloc:
            host = parts.netloc.rsplit("@", 1)[1]
            return urlunsplit(parts._replace(netloc=f"***@{host}"))
        return text


def _same_file(a: str, b: str | os.PathLike[str] | None) -> bool:
    if b is None or str(b) in {"", "-"} or "://" in a or "://" in str(b):
        return False
    from reident_airflow._atomic import same_path

    return same_path(a, b)  # links and hard links too


def cli_report(args: argparse.Namespace, payload: Mapping[str, Any], *, kind: str) -> None:
    """Write ``--report PATH`` of a ``reident`` command, if given (input errors: exit 2)."""
    dest = getattr(args, "report", None)
    if not dest:
        return
    for other in ("json", "output", "input"):
        if _same_file(dest, getattr(args, other, None)):
            raise InvalidInputError(f"--report and --{other} name the same file: {dest}")
    context = {
        "source": source_text(getattr(args, "input", None)),
        "table": getattr(args, "table", None),
        "region": getattr(args, "region", None),
        "population_table": source_text(getattr(args, "population_table", None)),
    }
    html = render_report(payload, kind=kind, extra={k: v for k, v in context.items() if v})
    write_report(dest, html)

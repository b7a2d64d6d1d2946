"""Self-contained HTML risk reports: the evidence a privacy officer signs a release off from.

::

    from reident_airflow.report import render_report, write_report

    html = render_report(assessment.to_dict(), extra={"source": "staging.patients"})
    write_report("reports/patients.html", html)        # or "s3://bucket/reports/x.html"

One HTML file per result: inline CSS and inline SVG charts (matplotlib, imported only when a
report is rendered; install the ``report`` extra), no request to any other host. It shows
the verdict and each threshold against its observed value first, then what was assessed (the
result's optional ``"input"`` fingerprint, :mod:`reident_airflow.sources.fingerprint`), what
to do about a breach of ``min_k`` (the optional ``"advice"``: classes and records below k,
the driving column, Datafly's outlook), the charts and tables of the JSON (aggregates only),
a sign-off block (blank, or pre-filled from a :class:`SignOff`), then the inputs -- with the
preset applied, its limits, release context and published source -- and the tool version.
It reads at 400 px: tables stack into one block per row, charts scroll inside their box
rather than shrink their text.
:func:`render_release_report` puts an assessment, a direct-match and a Datafly result in one
report. The report reads each result through its typed view (:mod:`.view`:
:class:`AssessmentView`, :class:`DirectMatchView`, :class:`DataflyView`, each built with
``from_dict``), which other readers of the JSON (summaries, notifiers) use as well.
"""

from __future__ import annotations

from reident_airflow.report.render import (
    KINDS,
    infer_kind,
    render_release_report,
    render_report,
    sign_report,
)
from reident_airflow.report.signoff import DECISIONS, SignOff
from reident_airflow.report.view import AssessmentView, DataflyView, DirectMatchView, InputView
from reident_airflow.report.writer import read_report, write_report

__all__ = [
    "DECISIONS",
    "KINDS",
    "AssessmentView",
    "DataflyView",
    "DirectMatchView",
    "InputView",
    "SignOff",
    "infer_kind",
    "read_report",
    "render_release_report",
    "render_report",
    "sign_report",
    "write_report",
]

"""Sign a release off in Airflow: :class:`ReleaseSignOffOperator` asks a person, through
Airflow's human-in-the-loop API (3.1+), whether the release a reident task checked may go
ahead, and writes the answer into that task's HTML report.

::

    assess = ReidentificationRiskOperator(task_id="assess", ..., report_path="...")
    approve = ReleaseSignOffOperator(task_id="approve", report_task_id="assess")
    assess >> approve >> publish

The request shows the task's verdict, its advice and the link to its report (aggregates
only, as the report). "Approve" lets ``publish`` run; "Reject", or no answer within
``response_timeout`` (24 hours unless given; the request's default answer is "Reject"),
skips it. Either way the report's sign-off block then says who answered (the Airflow user;
"nobody" on a timeout), what, and when; the rest of the report is left as the reviewer saw
it.
"""

from __future__ import annotations

import datetime
import inspect
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from reident_airflow._compat import BaseOperator, Context
from reident_airflow.operators.params import parse_flag
from reident_airflow.outcomes import (
    REPORT_PATH_XCOM_KEY,
    REPORT_URL_XCOM_KEY,
    ReidentConfigurationError,
)

__all__ = [
    "DEFAULT_RESPONSE_TIMEOUT",
    "HITL_UNAVAILABLE",
    "NOBODY",
    "ReleaseSignOffOperator",
    "request_body",
]

#: How long the request waits for an answer unless told; then it takes "Reject".
DEFAULT_RESPONSE_TIMEOUT = datetime.timedelta(hours=24)
#: The reviewer the sign-off block names when nobody answered in time.
NOBODY = "nobody (no answer within the timeout)"

_NEEDS = (
    "ReleaseSignOffOperator asks through Airflow's human-in-the-loop API: it needs Apache "
    "Airflow 3.1 or later and apache-airflow-providers-standard 1.12.2 or later "
    "(ApprovalOperator with response_timeout)"
)

#: Why the human-in-the-loop API cannot be used here; None when it can.
HITL_UNAVAILABLE: str | None = None

if TYPE_CHECKING:
    from airflow.providers.standard.operators.hitl import ApprovalOperator as _Approval
else:
    try:
        from airflow.providers.standard.operators.hitl import ApprovalOperator as _Approval
        from airflow.providers.standard.operators.hitl import HITLOperator as _Hitl
    except Exception as exc:  # ImportError, or the provider's own "needs Airflow 3.1+"
        _Approval = BaseOperator
        HITL_UNAVAILABLE = f"{_NEEDS}; here: {type(exc).__name__}: {exc}"
    else:
        if "response_timeout" not in inspect.signature(_Hitl.__init__).parameters:
            HITL_UNAVAILABLE = f"{_NEEDS}; the installed standard provider is older"


def request_body(result: Mapping[str, Any], report: str | None, note: str | None = None) -> str:
    """The text of the request (Markdown): ``note``, the link to the report (``report``: its
    URL or location) and the summary of ``result`` -- its verdict, gate and advice; counts,
    shares and column names only."""
    from reident_airflow.report import infer_kind

    kind = infer_kind(result)
    lines = [note, ""] if note else []
    lines.append("Report: " + (f"[the report]({report})" if report else "none (no report_path)"))
    if kind == "assessment":
        from reident_airflow.summary import assessment_summary

        summary = assessment_summary(result)  # its advice, when there is one: "What to do"
        if result.get("advice") is None:
            lines.append("Advice: none (no k breach to act on).")
    elif kind == "direct_match":
        from reident_airflow.summary import direct_match_summary

        summary = direct_match_summary(result)
    else:
        summary = _datafly_summary(result)
    lines += ["", "```", summary.rstrip("\n"), "```"]
    return "\n".join(lines)


def _datafly_summary(result: Mapping[str, Any]) -> str:
    from reident_airflow.report import DataflyView

    view = DataflyView.from_dict(result)
    verdict = "INCOMPLETE" if view.passed is None else "k REACHED" if view.passed else "k MISSED"
    return "\n".join(
        [
            f"Datafly: {verdict}",
            f"  k                 : {view.k} (achieved {view.achieved_k})",
            f"  records           : {view.records}",
            f"  suppressed        : {view.suppressed_records} (limit {view.suppression_limit})",
        ]
    )


def _responded_at(value: Any) -> datetime.datetime | None:
    """The answer's time: a datetime in the event, an ISO string once through XCom."""
    if isinstance(value, datetime.datetime):
        return value
    if isinstance(value, str) and value:
        return datetime.datetime.fromisoformat(value)
    return None


class ReleaseSignOffOperator(_Approval):
    """Ask for the approval of the release ``report_task_id`` checked, and sign its report.

    :param report_task_id: the reident task (``ReidentificationRiskOperator``,
        ``DirectMatchProtectionOperator`` or ``DataflyOperator``) whose result is shown and
        whose report (``report_path``) is signed; it must run before this task.
    :param subject: the request's headline (templated).
    :param body: text put above the verdict in the request (templated, Markdown).
    :param role: the reviewer's role written into the sign-off block.
    :param response_timeout: how long to wait for an answer; then the request takes its
        default, "Reject" (24 hours unless given).
    :param required: ask only when true (templated, e.g. ``"{{ params.require_approval }}"``);
        when false the task passes at once, signs nothing and the release goes ahead.

    The other arguments are ``ApprovalOperator``'s (``notifiers``, ``assigned_users``,
    ``fail_on_reject``, ...), except ``options``, ``multiple`` and ``defaults``, which are
    fixed. Returns (XCom) the answer as ``ApprovalOperator`` does, ``None`` when not asked.
    """

    template_fields: Collection[str] = (
        *getattr(_Approval, "template_fields", ()),
        "report_task_id",
        "role",
        "required",
    )

    def __init__(
        self,
        *,
        report_task_id: str,
        subject: str = "Sign off the release checked by {{ task.report_task_id }}?",
        body: str | None = None,
        role: str = "approver in Airflow",
        response_timeout: datetime.timedelta = DEFAULT_RESPONSE_TIMEOUT,
        required: bool | str = True,
        **kwargs: Any,
    ) -> None:
        if HITL_UNAVAILABLE is not None:
            raise ReidentConfigurationError(HITL_UNAVAILABLE)
        if "defaults" in kwargs:
            raise ReidentConfigurationError(
                "ReleaseSignOffOperator: defaults is fixed (no answer in time is a 'Reject')"
            )
        if not isinstance(response_timeout, datetime.timedelta) or response_timeout <= (
            datetime.timedelta(0)
        ):
            raise ReidentConfigurationError(
                f"response_timeout must be a positive timedelta, got {response_timeout!r}"
            )
        super().__init__(
            subject=subject,
            body=body,
            defaults="Reject",
            response_timeout=response_timeout,
            **kwargs,
        )
        self.report_task_id = report_task_id
        self.role = role
        self.required = required

    def execute(self, context: Context) -> Any:
        if not parse_flag(self.required, "required"):
            self.log.info("required is false: the release goes ahead without a sign-off")
            return None
        ti = context["ti"]
        result = ti.xcom_pull(task_ids=self.report_task_id)
        if not isinstance(result, Mapping):
            raise ReidentConfigurationError(
                f"no result of task {self.report_task_id!r} to sign off: it must run before "
                f"{self.task_id!r} (report_task_id)"
            )
        report = ti.xcom_pull(task_ids=self.report_task_id, key=REPORT_URL_XCOM_KEY) or (
            ti.xcom_pull(task_ids=self.report_task_id, key=REPORT_PATH_XCOM_KEY)
        )
        self.body = request_body(result, report, self.body)
        return super().execute(context)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        """Sign the report with the answer, then let ``ApprovalOperator`` act on it (a
        "Reject" skips the tasks downstream, which ends this task)."""
        if "error" not in event:
            self.validate_chosen_options(event["chosen_options"])
            self.sign(context, event)
        return super().execute_complete(context, event)

    def sign(self, context: Context, event: Mapping[str, Any]) -> str | None:
        """Write the answer of ``event`` into the report of ``report_task_id``: who answered
        (the Airflow user's name; nobody on a timeout), the decision, the day, and in the
        block's lead the time (UTC) and this task. Returns the report's location, ``None``
        when the task wrote no report."""
        from reident_airflow.report import SignOff, read_report, sign_report, write_report

        ti = context["ti"]
        location = ti.xcom_pull(task_ids=self.report_task_id, key=REPORT_PATH_XCOM_KEY)
        decision = "approve" if list(event["chosen_options"]) == [self.APPROVE] else "reject"
        user = event.get("responded_by_user") or {}
        reviewer = user.get("name") or user.get("id")
        when = _responded_at(event.get("responded_at"))
        utc = when.astimezone(datetime.UTC) if when is not None else None
        stamp = utc.strftime("%Y-%m-%d %H:%M:%S UTC") if utc is not None else "an unknown time"
        where = f"task {self.task_id} of run {ti.run_id} (DAG {ti.dag_id})"
        if reviewer:
            lead = f"Answered in Airflow by {reviewer} at {stamp}, {where}."
        else:
            lead = f"No answer within {self.response_timeout}: rejected at {stamp}, {where}."
        if not location:
            self.log.info("%s wrote no report: nothing to sign (%s)", self.report_task_id, decision)
            return None
        signed = SignOff(
            reviewer=reviewer or NOBODY,
            role=self.role,
            decision=decision,
            date=utc.date() if utc is not None else None,
        )
        html = sign_report(read_report(location), signed, lead=lead)
        written = write_report(location, html)
        self.log.info(
            "%s: %s by %s, written into %s", self.report_task_id, decision, signed.reviewer, written
        )
        return written

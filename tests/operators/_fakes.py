"""What the operator tests share: a task instance that collects what an operator pushes to
XCom (:class:`PushedTI`, the only part of the task context the operators use; :class:`RunTI`
adds what a notifier and the report's run link read: the run's identity and ``xcom_pull``), and
:func:`make_operator`, an operator with a task id of its own and, optionally, the
SQLAlchemy engine its connections stand for (the operators' test seam, ``get_engine``)."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

import sqlalchemy as sa

from reident_airflow.operators.base import ReidentOperator

__all__ = ["PushedTI", "RunTI", "context", "make_operator"]

OperatorT = TypeVar("OperatorT", bound=ReidentOperator)


class PushedTI:
    """Collects what the operator pushes to XCom (the only context it uses)."""

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


class RunTI(PushedTI):
    """A :class:`PushedTI` with the parts of Airflow 3's RuntimeTaskInstance a notifier
    reads: the run's identity, ``log_url`` and ``xcom_pull``, which returns what was pushed
    under the key, else ``xcom``, or raises ``xcom_error``; each pull's arguments are kept in
    ``pulls``."""

    def __init__(
        self,
        *,
        dag_id: str = "release_gate",
        task_id: str = "assess",
        run_id: str = "manual__2026-12-01",
        try_number: int = 1,
        map_index: int = -1,
        log_url: str = "http://airflow.test/log",
        xcom: Any = None,
        xcom_error: Exception | None = None,
    ) -> None:
        super().__init__()
        self.dag_id, self.task_id, self.run_id = dag_id, task_id, run_id
        self.try_number, self.map_index, self.log_url = try_number, map_index, log_url
        self.xcom, self.xcom_error = xcom, xcom_error
        self.pulls: list[dict[str, Any]] = []

    def xcom_pull(self, **kwargs: Any) -> Any:
        self.pulls.append(kwargs)
        if self.xcom_error is not None:
            raise self.xcom_error
        return self.pushed.get(kwargs.get("key", "return_value"), self.xcom)


def context(ti: PushedTI | None = None) -> Any:
    """The task context the operators use: only ``ti`` (typed loosely for the fake)."""
    return {"ti": ti if ti is not None else PushedTI()}


def make_operator(
    cls: type[OperatorT], engine: sa.Engine | None = None, **kwargs: Any
) -> OperatorT:
    """``cls`` with ``kwargs`` and a fresh ``task_id`` (unless given). With ``engine``, every
    connection the operator asks for is that engine, and ``op.engines_asked`` lists the
    ``conn_id`` of each request."""
    kwargs.setdefault("task_id", f"t_{uuid.uuid4().hex[:6]}")
    op = cls(**kwargs)
    if engine is not None:
        asked: list[str] = []

        def get_engine(conn_id: str) -> sa.Engine:  # the test seam
            asked.append(conn_id)
            return engine

        op.get_engine = get_engine  # type: ignore[method-assign]
        op.engines_asked = asked
    return op

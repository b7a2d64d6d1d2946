"""What the operator tests share: a task instance that collects what an operator pushes to
XCom (:class:`PushedTI`, the only part of the task context the operators use), and
:func:`make_operator`, an operator with a task id of its own and, optionally, the
SQLAlchemy engine its connections stand for (the operators' test seam, ``get_engine``)."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

import sqlalchemy as sa

from reident_airflow.operators.base import ReidentOperator

__all__ = ["PushedTI", "context", "make_operator"]

OperatorT = TypeVar("OperatorT", bound=ReidentOperator)


class PushedTI:
    """Collects what the operator pushes to XCom (the only context it uses)."""

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


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

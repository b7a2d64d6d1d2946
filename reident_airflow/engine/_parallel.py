"""Run an independent numpy computation beside the caller's on large inputs.

numpy releases the GIL in its sorts, ufunc loops, ``reduceat`` and ``bincount``, so a worker
thread runs array computations in parallel with the caller's (the assessment computes the QI
ranking and l-diversity there while it computes the population models). Small inputs run
inline: a thread costs more than it saves there. Results and exceptions come back through
:class:`concurrent.futures.Future` either way, so callers do not care which happened.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["PARALLEL_MIN_WORK", "submitter"]

T = TypeVar("T")

#: Elements (rows, classes or pairs) from which a computation is worth a thread.
PARALLEL_MIN_WORK = 1 << 20

_LOCK = threading.Lock()
_POOL: list[ThreadPoolExecutor] = []


def _pool() -> ThreadPoolExecutor | None:
    workers = min(4, os.cpu_count() or 1)
    if workers < 2:
        return None
    with _LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reident"))
        return _POOL[0]


def _inline(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    done: Future[T] = Future()
    try:
        done.set_result(fn(*args, **kwargs))
    except BaseException as exc:  # handed to the caller by .result(), as a thread would
        done.set_exception(exc)
    return done


def submitter(work: int) -> Callable[..., Future[Any]]:
    """``submit(fn, *args)``: on a worker thread when ``work`` is large, else inline."""
    pool = _pool() if work >= PARALLEL_MIN_WORK else None
    return pool.submit if pool is not None else _inline

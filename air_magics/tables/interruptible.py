"""Spark Connect calls off the main thread, so a Ctrl-C never lands inside gRPC.

A ``KeyboardInterrupt`` is raised wherever the main thread happens to be. Inside grpc's Python
code that can be between a lock's acquire and its release: the lock stays held, and every later
call on that channel waits forever (an interrupted export once hung the next nine queries of the
suite until their timeouts). So a call made on the main thread runs on a worker thread under a
Spark tag of its own while the main thread waits where an interrupt is harmless. On Ctrl-C the
main thread asks the server to interrupt that tag (again every half second, since an operation
made of several queries starts new ones), waits for the worker to return, and raises
``KeyboardInterrupt``. Long client-side loops call :func:`raise_if_cancelled` between queries.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["run_interruptible", "raise_if_cancelled", "CANCEL_GRACE_S"]

T = TypeVar("T")
CANCEL_GRACE_S = 30.0  # how long a Ctrl-C waits for the worker to see its queries interrupted
_POLL_S = 0.25
_current = threading.local()  # the worker's cancellation event


def raise_if_cancelled() -> None:
    """Raise ``KeyboardInterrupt`` in a worker whose caller was interrupted (a no-op elsewhere)."""
    event = getattr(_current, "cancelled", None)
    if event is not None and event.is_set():
        raise KeyboardInterrupt


def _is_connect(spark: Any) -> bool:
    try:
        from pyspark.sql.connect.session import SparkSession
    except ImportError:  # pragma: no cover - classic pyspark only
        return False
    return isinstance(spark, SparkSession)


def run_interruptible(
    spark: Any, fn: Callable[[], T], *, on_stuck: Callable[[], None] = lambda: None, grace: float = CANCEL_GRACE_S
) -> T:
    """``fn()``, run so that a Ctrl-C on the main thread cancels it cleanly (see the module's doc).

    Off the main thread, or for a session that is not Spark Connect, it is a plain call. *fn* runs
    on the worker thread: thread-local state it needs (the active session, tags) is set inside it.
    *on_stuck* is called when the worker has not returned *grace* seconds after a Ctrl-C (or a
    second Ctrl-C cut the wait short): the session's channel is then in an unknown state."""
    if threading.current_thread() is not threading.main_thread() or not _is_connect(spark):
        return fn()
    tag = f"air-op-{uuid.uuid4().hex[:12]}"
    cancelled = threading.Event()
    out: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()

    def work() -> None:
        _current.cancelled = cancelled
        spark.addTag(tag)
        try:
            out.put((True, fn()))
        except BaseException as exc:  # handed to the caller, who raises it
            out.put((False, exc))
        finally:
            spark.removeTag(tag)
            _current.cancelled = None

    threading.Thread(target=work, name="air-spark-call", daemon=True).start()
    try:
        ok, value = _wait(out)
    except KeyboardInterrupt:
        cancelled.set()
        if not _stop(spark, tag, out, grace):
            on_stuck()
        raise
    if ok:
        return value
    raise value


def _wait(out: queue.SimpleQueue[tuple[bool, Any]]) -> tuple[bool, Any]:
    """The worker's result, waited for in short steps so that a signal is seen at once."""
    while True:
        try:
            return out.get(timeout=_POLL_S)
        except queue.Empty:
            continue


def _stop(spark: Any, tag: str, out: queue.SimpleQueue[tuple[bool, Any]], grace: float) -> bool:
    """Interrupt the worker's queries until it returns (True), or *grace* runs out (False)."""
    deadline = time.monotonic() + grace
    try:
        while time.monotonic() < deadline:
            try:
                spark.interruptTag(tag)
            except Exception:  # a server gone: the worker's call fails on its own
                pass
            try:
                out.get(timeout=0.5)
                return True
            except queue.Empty:
                continue
    except KeyboardInterrupt:  # a second Ctrl-C: stop waiting
        return False
    return False

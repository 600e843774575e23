"""``StatusReports``: when a cache's statistics reach its listeners (the ``cache`` status document).

Why a class of its own: a snapshot costs a database query and a status document, so progress is
sampled at most twice a second per process, only while someone listens, and made on the process's
flusher thread (:mod:`air_magics.io.flusher`), never on a stream's fetch or validation threads; a
stream that ends within a second of the last final report defers its own by a second (once,
however many streams end meanwhile), so a loop of short epochs does not pay one per epoch; and a
progress report asked for before a final one never lands after it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from ..events import CacheEvent, Throttle, channel
from ..io.flusher import call_later
from ..io.forksafe import ForkSafeLock, renew_after_fork
from ..snapshots import CacheInfo

__all__ = ["StatusReports", "REPORT_EVERY"]

REPORT_EVERY = 1.0  # seconds: a stream ending sooner after the last final report defers its own


class StatusReports:
    """One process's reports of a cache: ``info(flush)`` makes the snapshot, ``flush()`` writes the
    process's batched hits first (a final report's counts include them)."""

    def __init__(self, info: Callable[[bool], CacheInfo], flush: Callable[[], None]) -> None:
        self._info, self._flush = info, flush
        self._progress = Throttle(0.5)
        self._last = float("-inf")  # monotonic time of the last final report
        self._lock = ForkSafeLock()  # the parent's flusher thread may hold it at fork() while it emits
        self._due = False  # a deferred final report is queued
        renew_after_fork(self)

    def after_fork(self) -> None:
        """A forked child (a DataLoader worker) has no deferred report queued: the parent's is the parent's."""
        self._due = False

    def final(self, *, soon: bool = False) -> None:
        """A ``CacheEvent`` with ``state="done"`` now, or (``soon``, within :data:`REPORT_EVERY` of
        the last one) a second later on the flusher thread."""
        now = time.monotonic()
        if soon and now - self._last < REPORT_EVERY:
            self._flush()  # the counts are in the index when the stream ends; the report waits
            with self._lock:
                if not self._due:
                    self._due = True
                    call_later(REPORT_EVERY, self._deferred)
            return
        self._flush()
        with self._lock:
            self._last = now
            self._emit("done")

    def progress(self, force: bool = False) -> None:
        """A ``state="running"`` report soon, on the flusher thread (sampled; *force*: always)."""
        if force or (channel.listening() and self._progress.ready()):
            call_later(0.0, functools.partial(self._running, time.monotonic()))

    def _deferred(self) -> None:
        with self._lock:
            self._due = False
        self.final()

    def _running(self, asked: float) -> None:
        with self._lock:
            if self._last <= asked:  # a final report made since supersedes it
                self._emit("running")

    def _emit(self, state: str) -> None:
        if channel.listening():
            channel.emit(CacheEvent(state=state, stats=self._info(state != "running")))
